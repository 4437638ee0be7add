"""The judge: a trusted worker process that owns reference models, inputs and reference outputs.

It runs only problem code (trusted), never candidate code. It writes input copies for the candidate's
sandbox, keeps the originals and the reference outputs in its own memory (undumpable, so a same-uid
candidate cannot read them through /proc), compares the raw output files a candidate wrote, and times the
eager and Inductor baselines with the same timer the sandbox uses.

Protocol (kernelrl.sandbox.protocol): one JSON request per line on stdin, one JSON response per line on the
original stdout. The request methods take a request dataclass or its dict and return the reply's fields.
Usage: python -m kernelrl.sandbox.judge DEVICE   (auto | cpu | cuda)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial

from kernelrl.problems.input_sets import (
    call_with,
    correctness_sets,
    draw_inputs,
    input_probe,
    input_sets,
    timing_set,
)
from kernelrl.sandbox import isolation
from kernelrl.sandbox.judge_audit import audit_problem, reference_runner
from kernelrl.sandbox.judge_wire import (
    AuditRequest,
    BandwidthReply,
    BaselinesReply,
    BaselinesRequest,
    CompareReply,
    CompareRequest,
    JudgeFailure,
    JudgeHello,
    PeakFlopsReply,
    PrepareReply,
    PrepareRequest,
    ReleaseReply,
    ReleaseRequest,
    parse_judge_request,
)
from kernelrl.sandbox.protocol import SHARE_ATTEMPTS, Draw, IpcOffer, TrialPlan
from kernelrl.sandbox.reference_models import ReferenceModels
from kernelrl.sandbox.timed_mix import mixed_reference, mixes, timing_variants
from kernelrl.timing.device_limits import copy_bandwidth, peak_matmul_flops, reference_flops

# cached device memory the judge keeps after a release, for the next evaluations: emptying it every time took
# 3.0-3.2 s of the judge's ~15 s busy per 93 evaluations (H100); the admission budget leaves the judge and the
# OS a fifth
CACHE_KEEP_BYTES = 2 * 1024**3

_clock = time.perf_counter


def _trial_inputs(originals: list, index: int) -> list:
    """Trial `index`'s input tensors as drawn: held, or drawn again (see `_prepare_trials`)."""
    kept = originals[index]
    return kept() if callable(kept) else kept


def _trial_refs(refs: list, index: int) -> list:
    """Trial `index`'s reference outputs, computed now if they were left for later (and then kept)."""
    if callable(refs[index]):
        refs[index] = refs[index]()
    return refs[index]


class Judge:
    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' requested but torch sees no CUDA GPU")
        self.device = torch.device(device)
        self.gpu = self.device.type == "cuda"
        # fp32 problems mean fp32: cuDNN's default TF32 convolutions miss exact fp32 results by ~1e-3,
        # so an exact fp32 kernel would fail against them
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.modules: dict[str, tuple] = {}  # problem sha -> (module, input sets)
        # (problem sha, constructor args) -> reference model, the least recently used beyond a budget dropped
        self.models = ReferenceModels()
        self.evals: dict[str, dict] = {}
        self._baseline_cache: dict[str, BaselinesReply] = {}
        self._bandwidth: float | None = None
        self._peak_flops: float | None = None
        self._flop_counts: dict[tuple, int | None] = {}
        # problem module -> where its get_inputs() draws (device, or cpu if it must)
        self._draw_on: dict[str, str] = {}
        self._reproducible: dict[tuple, bool] = {}  # (problem sha, set) -> same seed gives the same inputs
        from kernelrl.sandbox.tensor_files import HostStage

        self._stage = HostStage()  # large outputs from files onto the GPU through pinned memory
        self._ipc = None  # kernelrl.sandbox.cuda_ipc.CudaIpc once it loaded; False: unavailable here
        from kernelrl.verify.exact import FloatReferences

        self._float64 = FloatReferences()  # float64 reference models and errors for the tolerance model

    # -- helpers ---------------------------------------------------------------------------------------
    def _module(self, path: str, sha: str):
        if sha not in self.modules:
            spec = importlib.util.spec_from_file_location(f"kernelrl_ref_{sha[:16]}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            self.modules[sha] = (module, input_sets(module))
        return self.modules[sha]

    def _model(self, sha: str, module, params: dict):
        """The reference model for a set's constructor parameters, built the KernelBench way (seed 42)."""
        torch = self.torch
        torch.manual_seed(42)
        init_inputs = call_with(module.get_init_inputs, params)

        def build():
            torch.manual_seed(42)
            if self.gpu:
                torch.cuda.manual_seed(42)
            return module.Model(*init_inputs).to(self.device)
        return self.models.get((sha, repr(init_inputs)), build)

    def _inputs(self, module, params: dict, seed: int) -> list:
        """One draw of the problem's inputs, on this judge's device. Factories create on the device directly
        (bench-sized host draws cost seconds); a get_inputs() that fails that way draws on the host."""
        key = module.__name__  # one per problem hash (see _module)
        draw_on = self._draw_on.get(key, self.device.type)
        try:
            return draw_inputs(self.torch, module.get_inputs, params, seed, draw_on, self.device)
        except Exception:
            if draw_on == "cpu":
                raise
        self._draw_on[key] = "cpu"
        return draw_inputs(self.torch, module.get_inputs, params, seed, "cpu", self.device)

    def _reference_outputs(self, model, args: list[dict], tensors: list) -> list:
        """The reference's outputs for one trial's arguments (`reference_runner`: it gets copies, it may write
        inputs)."""
        run = reference_runner(self.torch, model)
        outputs = run([tensors[a["tensor"]] if "tensor" in a else a["value"] for a in args])
        self._sync()
        return outputs

    def _redrawn_reference(self, model, args: list[dict], originals: list, index: int) -> list:
        return self._reference_outputs(model, args, _trial_inputs(originals, index))

    def _redraw_tensors(self, module, params: dict, seed: int) -> list:
        """The tensors of one draw again (the same bytes: the draw was checked to be reproducible)."""
        return [v for v in self._inputs(module, params, seed) if isinstance(v, self.torch.Tensor)]

    def _is_reproducible(self, sha: str, module, set_name: str, params: dict, values: list,
                         seed: int) -> bool:
        """Whether a second draw with the same seed gives the same bytes (no unseeded randomness, no clock),
        checked once per problem and set: then the sandbox draws the inputs itself instead of reading
        files."""
        key = (sha, set_name)
        if key not in self._reproducible:
            from kernelrl.sandbox.tensor_files import same_bytes

            torch = self.torch
            again = self._inputs(module, params, seed)

            def same(a, b) -> bool:
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                    return same_bytes(a, b)
                return type(a) is type(b) and a == b

            self._reproducible[key] = len(again) == len(values) and all(map(same, values, again))
        return self._reproducible[key]

    def _flops(self, sha: str, module, params: dict, args: list[dict],
               inputs: Callable[[], list]) -> int | None:
        """The reference forward's FLOPs (kernelrl.timing.device_limits), per problem and input set (shapes do
        not depend on the seed)."""
        key = (sha, repr(sorted(params.items())))
        if key not in self._flop_counts:
            self._flop_counts[key] = reference_flops(self.torch, module, params, args, inputs)
        return self._flop_counts[key]

    def peak_flops(self, req: object = None) -> dict:
        """The fastest dense matmul rate this device reaches (FLOP/s), fp16 and fp32-with-TF32, best of a few
        8192^3 products: the FLOP floor divides a problem's FLOPs by it, so no honest kernel (whatever tensor
        cores it uses) can be faster."""
        if not self.gpu:
            return PeakFlopsReply(flops_per_s=None).fields()
        if self._peak_flops is None:
            self._peak_flops = peak_matmul_flops(self.torch, self.device)
        return PeakFlopsReply(flops_per_s=self._peak_flops).fields()

    def _ipc_offers(self, outputs: list) -> tuple[list, list]:
        """For each large reference output, a NaN-filled device buffer of its size shared through CUDA IPC:
        (ptr, nbytes) kept here, an IpcOffer for the sandbox; None where the output is small
        or sharing failed (it then comes as a file)."""
        from kernelrl.sandbox.cuda_ipc import MIN_BYTES, CudaIpc, CudaIpcError, device_bytes
        from kernelrl.sandbox.tensorio import dtype_name

        if self._ipc is None:
            try:
                self._ipc = CudaIpc()
            except CudaIpcError:
                self._ipc = False
        kept, offered = [], []
        for ref in outputs:
            nbytes = ref.numel() * ref.element_size()
            entry = offer = None
            if self._ipc and nbytes >= MIN_BYTES:
                try:
                    ptr = self._ipc.allocate(nbytes)
                    try:
                        device_bytes(self.torch, ptr, nbytes).fill_(0xFF)  # NaN (or -1) until the copy lands
                        self._sync()
                        offer = IpcOffer(handle=self._ipc.export(ptr), dtype=dtype_name(ref.dtype),
                                         shape=list(ref.shape))
                    except Exception:
                        self._ipc.free(ptr)
                        raise
                    entry = (ptr, nbytes)
                except CudaIpcError:
                    entry = offer = None
            kept.append(entry)
            offered.append(offer)
        return kept, offered

    def _free_offers(self, offers: dict) -> None:
        for buffers in offers.values():
            for entry in buffers:
                if entry is not None:
                    self._ipc.free(entry[0])
        offers.clear()

    def _shared_output(self, state: dict, index: int, k: int, meta: dict, ref):
        """Output k of trial `index` from its IPC buffer, as the reference's dtype and shape."""
        from kernelrl.sandbox.cuda_ipc import device_bytes
        from kernelrl.sandbox.tensorio import dtype_name

        buffers = state["ipc"].get(index) or []
        entry = buffers[k] if k < len(buffers) else None
        if entry is None:
            raise ValueError(f"output {k} of trial {index} claims a shared buffer the judge never offered")
        if meta.get("dtype") != dtype_name(ref.dtype) or list(meta.get("shape", [])) != list(ref.shape):
            raise ValueError(f"output {k} of trial {index} claims a shared buffer of another dtype or shape")
        return device_bytes(self.torch, *entry).view(ref.dtype).reshape(ref.shape)

    def _sync(self) -> None:
        if self.gpu:
            self.torch.cuda.synchronize()

    # -- requests --------------------------------------------------------------------------------------
    def hello(self, req: object = None) -> dict:
        torch = self.torch
        try:
            import triton

            triton_version = triton.__version__
        except ImportError:
            triton_version = None
        props = torch.cuda.get_device_properties(self.device) if self.gpu else None
        free, total = torch.cuda.mem_get_info(self.device) if self.gpu else (None, None)
        return JudgeHello(
            mode="gpu" if self.gpu else "cpu-interpreter",
            device_name=props.name if props else (platform.processor() or platform.machine() or "cpu"),
            torch_version=torch.__version__,
            triton_version=triton_version,
            python_version=platform.python_version(),
            memory_free_bytes=free,
            memory_total_bytes=total,
        ).fields()

    def prepare(self, req: PrepareRequest | dict) -> dict:
        """Draw every trial's inputs from the secret seed, write copies for the sandbox, keep the originals
        and the reference outputs here."""
        from kernelrl.sandbox.tensorio import dtype_name, tensor_meta

        req = PrepareRequest.coerce(req)
        module, sets = self._module(req.problem_path, req.problem_sha256)
        names = correctness_sets(list(sets), self.gpu, req.input_sets, bench=req.bench_correctness)
        count = max(req.min_trials, len(names))
        plan = [names[i % len(names)] for i in range(count)]
        timed = timing_set(list(sets))
        checked = len(plan)  # trials run for correctness; the rest only feed the timed calls
        mixable = req.timed_mix and mixes(getattr(module, "METADATA", None))
        # the timed calls mix or rotate through these different inputs
        if req.timing_variants and timed in sets:
            plan += [timed] * max(0, timing_variants(req.timing_variants, mixable) - plan.count(timed))
        share_from = len(plan)  # never seen by the candidate before the share's measured calls
        # the stub mixes fresh inputs for them where the timed calls mix (share_call); else fresh trials
        if timed in sets and not (mixable and plan.count(timed) >= 2):
            plan += [timed] * min(max(req.share_trials, 0), SHARE_ATTEMPTS)
        seeds = [int(hashlib.sha256(f"{req.master_seed}:{i}".encode()).hexdigest()[:15], 16)
                 for i in range(len(plan))]
        trials, refs, originals, offers = [], [], [], {}
        self.evals[req.eval_id] = {"refs": refs, "originals": originals,
                                   "inputs": partial(_trial_inputs, originals),
                                   "ipc": offers, "calls": [], "errors": {}}
        try:
            self._prepare_trials(req, module, sets, plan, seeds, (checked, share_from), trials, refs,
                                 originals, offers)
        except BaseException:
            self.release(ReleaseRequest(eval_id=req.eval_id))  # the shared buffers made so far
            raise
        timed_trial = next((i for i, name in enumerate(plan) if name == timed), None)
        return PrepareReply(
            timing_flops=None if timed_trial is None else self._flops(
                req.problem_sha256, module, sets[timed], trials[timed_trial].args,
                partial(_trial_inputs, originals, timed_trial)),
            trials=trials,
            sets=names,
            timing_set=timing_set(list(sets)),
            seeds_sha256=hashlib.sha256(json.dumps(seeds).encode()).hexdigest(),
            output_dtypes=sorted({dtype_name(t.dtype) for ref in refs if not callable(ref) for t in ref}),
            input_dtypes=sorted({m["dtype"] for trial in trials for m in trial.inputs}),
            outputs=[tensor_meta(t) for t in refs[0]],
            device_bytes=self._device_bytes(refs, originals, offers) if self.gpu else None,
            timed_mix=mixes(getattr(module, "METADATA", None)),
        ).fields()

    def _device_bytes(self, refs: list, originals: list, offers: dict) -> int:
        """What this evaluation's state holds on the device: its inputs, references and shared buffers."""
        # a redrawn trial keeps no inputs, a timed one no references until its output is compared
        kept = [group for group in (*refs, *originals) if not callable(group)]
        tensors = [t for group in kept for t in group if t.device.type == "cuda"]
        held = sum(t.numel() * t.element_size() for t in tensors)
        return held + sum(entry[1] for buffers in offers.values() for entry in buffers if entry is not None)

    def _prepare_trials(self, req: PrepareRequest, module, sets: dict, plan: list[str], seeds: list[int],
                        bounds: tuple[int, int], trials: list, refs: list, originals: list,
                        offers: dict) -> None:
        """`bounds`: where the timed-only trials begin, then where the kernel share's begin (after those)."""
        from kernelrl.sandbox.tensor_files import write_tensor
        from kernelrl.sandbox.tensorio import tensor_meta

        torch = self.torch
        checked, share_from = bounds
        for index, (seed, set_name) in enumerate(zip(seeds, plan, strict=True)):
            model = self._model(req.problem_sha256, module, sets[set_name])
            values = self._inputs(module, sets[set_name], seed)
            # the sandbox draws these itself from the seed when that reproduces them; else it reads files
            redraw = self._is_reproducible(req.problem_sha256, module, set_name, sets[set_name], values, seed)
            metas, args, tensors = [], [], []
            for value in values:
                if isinstance(value, torch.Tensor):
                    if redraw:
                        metas.append(tensor_meta(value))
                    else:
                        path = os.path.join(req.in_dir, f"trial{index}_in{len(tensors)}.bin")
                        metas.append(write_tensor(path, value, self._stage))
                    args.append({"tensor": len(tensors)})
                    tensors.append(value)
                elif value is None or isinstance(value, bool | int | float | str):
                    args.append({"value": value})
                else:
                    raise TypeError(f"get_inputs() returned a {type(value).__name__}; only tensors and plain "
                                    "numbers/strings are supported")
            # a timed call's reference is computed when its output is compared:
            # timing runs one evaluation at a time, so the timed references of
            # only one are on the device at once instead of every waiting one's
            lazy = redraw and index >= checked
            outputs = None if lazy else self._reference_outputs(model, args, tensors)
            draw = Draw(seed=seed, on=self._draw_on.get(module.__name__, self.device.type),
                        probe=input_probe(torch, values)) if redraw else None
            ipc = None
            if self.gpu and index < checked:  # correctness outputs: large ones come back in shared buffers
                offers[index], ipc = self._ipc_offers(outputs)
            trials.append(TrialPlan(index=index, set=set_name, inputs=metas, args=args,
                                    timed_only=index >= checked, draw=draw, ipc=ipc,
                                    share=index >= share_from))
            refs.append(partial(self._redrawn_reference, model, args, originals, index) if lazy else outputs)
            # inputs that a draw reproduces are drawn again on the rare paths that need them (an input the
            # sandbox changed, the float64 reference, FLOPs) instead of held: bench-sized inputs of several
            # trials are GBs of device memory for the whole evaluation, which bounds how many run at once
            originals.append(partial(self._redraw_tensors, module, sets[set_name], seed) if redraw
                             else tensors)
            self.evals[req.eval_id]["calls"].append((model, args))  # for a float64 recomputation

    def compare(self, req: CompareRequest | dict) -> dict:
        from kernelrl.sandbox.tensor_files import read_tensor
        from kernelrl.verify.compare import compare_outputs, compare_timed, inputs_mutated, widen
        from kernelrl.verify.precision import low_precision

        req = CompareRequest.coerce(req)
        state = self.evals[req.eval_id]
        index = req.trial
        out_dir = req.out_dir
        prefix = req.prefix or f"trial{index}"  # timed calls' outputs come as timed{n}_out{k}.bin
        # a timed call's fresh inputs: rebuilt from its two variants and mask seed
        if req.mix_trial is not None:
            expected, errors_of = mixed_reference(self.torch, state, index, req.mix_trial, req.mix_seed or 0,
                                                  self._reference_outputs, self._float64.errors)
        else:  # errors_of: the float64 reference, on a value mismatch
            expected, errors_of = (_trial_refs(state["refs"], index),
                                   partial(self._float64.errors, state, index))
        metas = req.outputs
        k_ref = req.ref_error_k or 0.0  # the tolerance model's k (kernelrl.verify.tolerance)
        if any(m.get("sampled") for m in metas):  # a timed call's large outputs, sampled at secret positions
            def read(k: int, meta: dict, ref):
                header = {"dtype": meta["dtype"], "shape": [meta["sampled"]]} if meta.get("sampled") else meta
                return read_tensor(os.path.join(out_dir, f"{prefix}_out{k}.bin"), header, ref.device,
                                   self._stage)

            mismatch, widened = compare_timed(expected, metas, read, req.atol, req.rtol, errors_of, k_ref)
            return CompareReply(mismatch=mismatch, widened=widened).fields()
        if req.prefix and any(m.get("ipc") for m in metas):  # buffers hold correctness outputs only
            raise ValueError("a timed call's output claims a shared buffer")
        actual = [self._shared_output(state, index, k, meta, expected[k])
                  if meta.get("ipc") and k < len(expected)
                  else read_tensor(os.path.join(out_dir, f"{prefix}_out{k}.bin"), meta, self.device,
                                   self._stage)
                  for k, meta in enumerate(metas)]
        mismatch, widened = widen(
            lambda errs, kk: compare_outputs(expected, actual, req.atol, req.rtol, errs, kk),
            errors_of, k_ref)
        # inputs the sandbox saw change (it compares each with a pristine copy) come back as files
        originals = state["inputs"](index) if mismatch is None and req.changed_inputs else []
        changed = [k for k in req.changed_inputs if 0 <= k < len(originals)]
        if changed:
            after = [
                read_tensor(os.path.join(out_dir, f"trial{index}_in{k}.bin"), {
                    "dtype": str(originals[k].dtype).removeprefix("torch."),
                    "shape": list(originals[k].shape)},
                    originals[k].device, self._stage)
                for k in changed
            ]
            mismatch = inputs_mutated([originals[k] for k in changed], after, changed)
        errors, why = errors_of() if mismatch is None and req.precision_check else (None, "not asked")
        precision = low_precision(expected, actual, errors) if why is None else None
        return CompareReply(mismatch=mismatch, widened=None if mismatch else widened,
                            precision=precision).fields()

    def audit(self, req: AuditRequest | dict) -> dict:
        """Flag a degenerate or unusable problem (see kernelrl.verify.degeneracy and
        kernelrl.problems.audit)."""
        return audit_problem(self, AuditRequest.coerce(req))

    def bandwidth(self, req: object = None) -> dict:
        """Device memory bandwidth (bytes/s) of a large device-to-device copy, the best of a few: the
        speed-of-light floor divides bytes by it."""
        if not self.gpu:
            return BandwidthReply(bytes_per_s=None).fields()
        if self._bandwidth is None:
            self._bandwidth = copy_bandwidth(self.torch, self.device)
        return BandwidthReply(bytes_per_s=self._bandwidth).fields()

    def release(self, req: ReleaseRequest | dict) -> dict:
        state = self.evals.pop(ReleaseRequest.coerce(req).eval_id, None)
        if state is not None and state.get("ipc"):
            self._free_offers(state["ipc"])  # the sandbox is gone, and its mappings with it
        if self.gpu:
            cuda = self.torch.cuda
            if cuda.memory_reserved(self.device) - cuda.memory_allocated(self.device) > CACHE_KEEP_BYTES:
                cuda.empty_cache()
        return ReleaseReply(float64_bytes=self._float64.peak_bytes if self.gpu else None).fields()

    def baselines(self, req: BaselinesRequest | dict) -> dict:
        """Eager and torch.compile (default mode) times of the reference, same timer and mode as
        candidates."""
        from kernelrl.timing.cuda_timer import TimerSettings, time_cuda

        torch = self.torch
        req = BaselinesRequest.coerce(req)
        if not self.gpu:
            return BaselinesReply(unavailable="baselines are timed on a GPU only").fields()
        mode = req.mode
        key = json.dumps([req.problem_sha256, req.timer, req.inductor, mode])
        if key in self._baseline_cache and not req.fresh:
            return self._baseline_cache[key].fields()
        module, sets = self._module(req.problem_path, req.problem_sha256)
        params = sets[timing_set(list(sets))]
        model = self._model(req.problem_sha256, module, params)
        args = self._inputs(module, params, req.seed)
        settings = TimerSettings(**req.timer)

        def timer(fn):
            return time_cuda(fn, torch=torch, synchronize=torch.cuda.synchronize, event_cls=torch.cuda.Event,
                             clock=_clock, settings=settings, mode=mode)

        def eager():
            with torch.no_grad():
                model(*args)

        result: dict = {"eager": timer(eager)}
        if req.inductor:
            try:
                compiled = torch.compile(model)
                start = _clock()
                with torch.no_grad():
                    compiled(*args)  # compile outside the timed region
                torch.cuda.synchronize()
                compile_s = _clock() - start

                def inductor():
                    with torch.no_grad():
                        compiled(*args)

                result["inductor"] = timer(inductor)
                result["inductor_compile_s"] = compile_s
            except Exception as exc:  # noqa: BLE001 - a compiler failure leaves eager numbers usable
                result["inductor_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        self._baseline_cache[key] = BaselinesReply(**result)
        return self._baseline_cache[key].fields()


def main(argv: list[str]) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # problem code that prints must not corrupt the protocol
    isolation.die_with_parent()
    isolation.make_undumpable()
    try:
        judge = Judge(argv[1] if len(argv) > 1 else "auto")
    except Exception as exc:  # noqa: BLE001
        protocol.write(JudgeFailure(error=f"{type(exc).__name__}: {exc}").to_json() + "\n")
        return
    protocol.write(JudgeHello(**judge.hello()).to_json() + "\n")
    handlers = {op: getattr(judge, op) for op in ("prepare", "compare", "bandwidth", "peak_flops", "release",
                                                  "baselines", "audit")}
    for line in sys.stdin:
        try:  # an unknown op or a malformed request: ProtocolError, answered like any failure
            req = parse_judge_request(line)
            response = json.dumps({"ok": True, **handlers[req.op](req)})
        except Exception as exc:  # noqa: BLE001 - reported to the parent, the judge keeps serving
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            response = JudgeFailure(error=f"{type(exc).__name__}: {exc}"[:2000],
                                    traceback=text[-4000:]).to_json()
        protocol.write(response + "\n")


if __name__ == "__main__":
    main(sys.argv)
