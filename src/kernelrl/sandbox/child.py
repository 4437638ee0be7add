"""The trusted stub that runs inside the sandboxed candidate process.

Order matters: confine the process while it is single-threaded, import torch, initialize the device,
capture the timer's functions, and only then import the candidate. Everything after that import runs next
to untrusted code, so this process only *reports* (outputs as raw tensor files, raw times, errors); the
verdict is decided elsewhere. Messages go out as JSON lines on the protocol fd, each built from its dataclass in
kernelrl.sandbox.protocol (which also reads the request).

Usage: python -m kernelrl.sandbox.child REQUEST.json
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback

from kernelrl.sandbox import isolation, problem_data
from kernelrl.sandbox.free_blocks import FreeBlockPoison
from kernelrl.sandbox.protocol import (
    BaselineEvent,
    CensusEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ExitEvent,
    ImportedEvent,
    InitializedEvent,
    InputsUnavailableEvent,
    IpcOffer,
    OpReport,
    OutputMeta,
    ReadyEvent,
    SandboxRequest,
    StandbyAssignment,
    StandbyEvent,
    StandbyRequest,
    TerminatedEvent,
    TimedCheck,
    TimingEvent,
    TimingTokenEvent,
    TrialEvent,
    TrialPlan,
    parse_request,
)
from kernelrl.sandbox.share_call import checked_output_metas, measure_on_fresh_calls, share_path
from kernelrl.sandbox.timed_mix import SEED_BITS, Mixer
from kernelrl.verify.runtime_checks import HANDOFF_STAGE

_clock = time.perf_counter  # captured before any candidate code exists
_TIMED_CHECKS = 4  # timed calls whose outputs go to the judge (one more per batch an adaptive timer adds)
_MAX_TIMED_CHECKS = 16  # the verdict process compares at most this many
# larger outputs of timed calls go to the judge as a sample (kernelrl.verify.compare.sample_positions): 4 MiB of
# values instead of 4 GiB of file traffic for four checks of a 1 GiB output
_FULL_TIMED_CHECK_BYTES = 8 << 20


class _Channel:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, event: Event) -> None:
        data = (event.to_json() + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


_STUB = ("child", "census", "opcensus")  # the stub's own frames, left out of tracebacks


def _error_event(exc: BaseException, stage: str) -> ErrorEvent:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the stub's own frames: the model only needs its code's part of the story
    text = "".join(line for line in lines if not any(f"kernelrl/sandbox/{stub}.py" in line for stub in _STUB))
    cls = type(exc)
    return ErrorEvent(stage=stage, exc_type=f"{cls.__module__}.{cls.__qualname__}", message=str(exc)[:2000],
                      traceback=text[-6000:])


def read_request(path: str) -> SandboxRequest | StandbyRequest:
    """The evaluator's request, deleted once read: it holds the seeds the inputs are drawn from, and the
    candidate may read files."""
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return parse_request(data)


def _args_for(trial: TrialPlan, tensors: list) -> list:
    """Forward's arguments for a trial: its tensors where it has tensors, its plain values elsewhere."""
    return [tensors[a["tensor"]] if "tensor" in a else a["value"] for a in trial.args]


def _storage_ptr(t) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - tensors without storage (meta, sparse) report none
        return 0


def _output_facts(t, inputs: list, previous: list) -> dict:
    """What the verdict process needs to know about one returned tensor beyond its values."""
    ptr = _storage_ptr(t)
    return {"aliases_input": bool(ptr) and any(ptr == _storage_ptr(x) for x in inputs),
            "reuses_buffer": bool(ptr) and any(ptr == _storage_ptr(x) for x in previous)}


def _copy_to_judge(torch, ipc, offer: IpcOffer | dict, meta: dict, values) -> bool:
    """Copy an output into the judge's shared buffer (same dtype and shape as the reference); False: it goes
    through a file instead (no IPC here, another shape, a failed mapping)."""
    offer = IpcOffer.coerce(offer)
    if ipc is None or meta["dtype"] != offer.dtype or meta["shape"] != offer.shape:
        return False
    try:
        ptr = ipc.open(offer.handle)
    except Exception:  # noqa: BLE001 - the file path below works everywhere
        return False
    from kernelrl.sandbox.cuda_ipc import device_bytes

    try:
        flat = values.detach().contiguous().reshape(-1)
        target = device_bytes(torch, ptr, flat.numel() * flat.element_size())
        target.copy_(flat.view(torch.uint8))
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - not the candidate's failure: the file path below
        return False
    finally:
        ipc.close(ptr)
    return True


def _import_roots() -> list[str]:
    """Where this interpreter imports from and what it compiles against: they must stay readable to the candidate's
    uid (`isolation.expose_to`)."""
    import sysconfig

    return [p for p in (*sys.path, sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                        sysconfig.get_paths().get("include", "")) if p]


def _init_process(channel: _Channel) -> None:
    """PID 1 of the sandbox's PID namespace: fork the real stub and reap. PID 1 ignores signals it has no
    handler for (abort() would not end it), so candidate code must never run as PID 1. When this process
    exits, the kernel kills everything left in the namespace."""
    isolation.make_undumpable()
    child = os.fork()
    if child == 0:
        return
    while True:
        pid, status = os.waitpid(-1, 0)  # also reaps orphans the candidate leaves behind
        if pid == child:
            if os.WIFSIGNALED(status):
                channel.send(TerminatedEvent(signal=os.WTERMSIG(status)))
            else:
                channel.send(TerminatedEvent(exit_code=os.WEXITSTATUS(status)))
            os._exit(0)


def main(argv: list[str]) -> None:
    """Fresh-process entry: `python -m kernelrl.sandbox.child REQUEST.json` (fds named in the environment)."""
    request = read_request(argv[1])
    control = os.environ.pop("KERNELRL_CONTROL_FD", None)
    run(request, int(os.environ.pop("KERNELRL_PROTO_FD")), int(control) if control else None)


def _shared_buffers():
    from kernelrl.sandbox.cuda_ipc import CudaIpc, CudaIpcError

    try:
        return CudaIpc()
    except CudaIpcError:
        return None


def _read_assignment(control_fd: int | None) -> StandbyAssignment:
    """A standby's assignment: one JSON line on the control pipe ({"request": {...}, "env": {...}})."""
    if control_fd is None:
        raise RuntimeError("a standby sandbox needs a control pipe")
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = os.read(control_fd, 1 << 16)
        if not chunk:  # the verdict process discarded this standby
            os._exit(0)
        data += chunk
    return StandbyAssignment.from_json(bytes(data))


def _wait_for_timing_token(channel: _Channel, control_fd: int | None) -> None:
    """Ask the verdict process for this device's timing token and block until it is granted, so only one
    candidate times on a GPU at a time. Without a control fd (old callers) timing starts at once."""
    if control_fd is None:
        return
    channel.send(TimingTokenEvent())
    while True:
        data = os.read(control_fd, 64)
        if not data or b"go" in data:  # EOF: the verdict process is gone or stopped us; the group is killed anyway
            return


def run(request: SandboxRequest | StandbyRequest | dict, proto_fd: int, control_fd: int | None = None) -> None:
    """The stub's work, from the first confinement step to `done`. Entered by `main` (fresh process) or by
    the zygote's forked child (`kernelrl.sandbox.zygote`), always as PID 1 of a new PID namespace when one
    exists. Never returns (os._exit)."""
    channel = _Channel(proto_fd)
    marks = {"stub": _clock()}
    if isinstance(request, dict):
        request = parse_request(request)
    isolation.die_with_parent()
    in_pid_namespace = os.getpid() == 1
    if in_pid_namespace:
        _init_process(channel)
        isolation.die_with_parent()
    applied = ["process-group", "private-tmpdir", "env-allowlist"]
    network = isolation.isolate_network() if request.isolate_network else None
    if network:
        applied.append(network)
    import resource

    isolation.set_limit(resource.RLIMIT_CORE, 0)
    if isolation.set_limit(resource.RLIMIT_FSIZE, request.max_file_bytes):
        applied.append("rlimit-fsize")
    if isolation.no_new_privs():
        applied.append("no-new-privs")

    import importlib.util

    import torch

    from kernelrl.sandbox.census import LaunchCensus, untimed_autotune
    from kernelrl.sandbox.frontend import GpuFrontend
    from kernelrl.sandbox.handoff import Handoff, HandoffRefused
    from kernelrl.sandbox.kernel_share import EventShare
    from kernelrl.sandbox.native_threads import NativeThreads, warm_pools
    from kernelrl.sandbox.opcensus import OpCensus
    from kernelrl.sandbox.tensorio import ITEMSIZE, HostStage, same_bytes, tensor_meta, write_tensor
    from kernelrl.timing import cuda_timer
    from kernelrl.timing.cuda_timer import TimerOps, TimerSettings, time_cuda, time_host, time_paired

    gpu = request.gpu
    marks["imports"] = _clock()
    if gpu:
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")  # create the context now, before any confinement that breaks it
        marks["device"] = _clock()
    # the same numerics as the judge's reference (no TF32 for fp32 matmuls and convolutions)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    block_mix = None  # the timed-input mix's kernel, loaded in a standby (sandbox.warm_kernel)
    if isinstance(request, StandbyRequest):
        # started before its candidate existed: everything above is the same for every candidate; the rest of
        # the request (the candidate's paths and cache directories, the trials) comes on the control pipe
        if gpu:
            from kernelrl.sandbox import warm_kernel

            try:
                warm_kernel.launch(torch)  # Triton's runtime starts up now, off the evaluation's clock
                block_mix = warm_kernel.BlockMix(torch)
            except Exception as exc:  # noqa: BLE001 - the candidate then pays Triton's start-up, nothing worse
                print(f"kernelrl standby: Triton warm-up failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        marks["standby"] = _clock()  # torch.utils.cpp_extension, which the census wraps, came with the zygote
        channel.send(StandbyEvent())
        assignment = _read_assignment(control_fd)
        marks["assigned"] = _clock()
        request = assignment.request
        os.environ.update(assignment.env)  # read when used: Triton's and the extension builder's caches
    sync, event_cls = (torch.cuda.synchronize, torch.cuda.Event) if gpu else (None, None)
    if not gpu and request.memory_limit_bytes:
        # address-space caps break CUDA start-up (see docs/design.md); on GPU the parent's RSS watchdog caps memory.
        # The cap is what the candidate may add: a CUDA build of torch maps ~4 GB before any candidate code (H100
        # host), and an absolute 4 GiB cap there left no room to start a thread
        if isolation.set_limit(resource.RLIMIT_AS, isolation.mapped_bytes() + request.memory_limit_bytes):
            applied.append("rlimit-as")
    problem_source = problem_data.read_source(request.problem_path)  # before the file is hidden below
    if in_pid_namespace and request.readonly_fs:
        # after CUDA start-up; the Triton, Inductor and CUDA-extension caches live in the writable paths
        if isolation.readonly_filesystem(request.writable_paths):
            applied.append("readonly-fs")
            # the candidate reads the problem neither at its path nor from a bytecode cache beside it
            if isolation.hide_files([request.problem_path, importlib.util.cache_from_source(request.problem_path)]):
                applied.append("problem-hidden")
    marks["readonly_fs"] = _clock()
    uid = request.candidate_uid
    if uid is not None and "readonly-fs" in applied and isolation.expose_to(uid, _import_roots(), request.writable_paths):
        if isolation.switch_user(uid, request.writable_paths):  # needs capabilities: before they are dropped
            applied.append("separate-uid")
    if isolation.drop_capabilities():  # after CUDA start-up, which may need them
        applied.append("no-capabilities")
    if in_pid_namespace:
        applied.append("pidns")
    if isolation.seccomp_filter():  # last: after CUDA start-up, the read-only remount and the capabilities
        applied.append("seccomp")
    marks["capabilities"] = _clock()
    device = torch.device("cuda" if gpu else "cpu")
    host_stage = HostStage()  # large GPU tensors to and from files through pinned memory
    census = LaunchCensus("kernelrl_candidate")
    census.install()
    if not gpu:
        untimed_autotune()
        census.frontend = GpuFrontend()
        GpuFrontend.scope_device_calls()
    ops = OpCensus(census)  # every forward below runs under it: which ATen ops ran, who wrote the outputs
    ops.install()
    share = EventShare() if gpu else None  # takes its CUDA functions now, before the candidate can patch them
    secret = random.Random(int.from_bytes(os.urandom(16), "little"))  # which timed calls are checked
    current_frames = sys._current_frames
    tensor_copy = torch.Tensor.copy_  # refills the timed calls' inputs; taken before any candidate code runs
    mixer = Mixer(torch, block_mix)  # fresh timed inputs (sandbox.timed_mix): its functions taken now, likewise
    poison = FreeBlockPoison(torch) if gpu else None  # before each trial: likewise
    timer_ops = TimerOps.capture(torch) if gpu else None  # the flush and the launch cover, likewise
    ipc = _shared_buffers() if gpu else None  # large correctness outputs into the judge's buffers
    # the evaluator's GPU memory admission learns from it; taken now, before the candidate can patch it
    peak_reserved = torch.cuda.max_memory_reserved if gpu else None
    marks["ready"] = _clock()
    # where start-up time went (diagnostics): seconds from the stub's start to each mark
    channel.send(ReadyEvent(isolation=applied, marks={k: round(v - marks["stub"], 4) for k, v in marks.items()}))

    def load(path: str, name: str):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    stage = "import"
    try:
        import_marks = {"start": _clock()}
        try:  # every trial's inputs and constructor arguments exist before the candidate does; the problem does not
            drawn = problem_data.take(request, problem_source, device, torch, host_stage)
        except problem_data.Unavailable as exc:  # no candidate code has run: a problem or harness failure
            channel.send(InputsUnavailableEvent(detail=str(exc)[:500]))
            os._exit(0)
        del problem_source
        pristine = drawn.inputs  # forward gets copies
        if gpu:
            sync()
        import_marks["inputs"] = _clock()
        threads_before = set(current_frames())
        warm_pools(torch)  # the thread pools honest work starts lazily, started now: then the baseline
        native = NativeThreads(current_frames)
        native.mark()
        channel.send(BaselineEvent(pid=os.getpid(), tasks=native.baseline()))  # the verdict process's watch
        handoff = Handoff()  # the harness's state the candidate must leave as it is
        candidate = load(request.candidate_path, "kernelrl_candidate")
        model_cls = getattr(candidate, "ModelNew", None)
        if not isinstance(model_cls, type):
            raise TypeError("the candidate module defines no class ModelNew")
        # diagnostics only (the candidate's code runs in this process): seconds from the import stage's start
        channel.send(ImportedEvent(marks={k: round(v - import_marks["start"], 4) for k, v in import_marks.items()}))

        stage = "init"
        models: dict[str, object] = {}

        def model_for(set_name: str):
            # as the judge builds the reference: seed 42, construct (the arguments were drawn after seeding 42)
            if set_name not in models:
                torch.manual_seed(42)
                if gpu:
                    torch.cuda.manual_seed(42)
                models[set_name] = model_cls(*drawn.init_args[set_name]).to(device)
            return models[set_name]

        def stray_threads() -> list[str]:
            return sorted(str(t) for t in set(current_frames()) - threads_before)[:8]

        model_for(request.trials[0].set)
        channel.send(InitializedEvent())

        stage = "correctness"
        out_dir = request.out_dir
        timed_trials = [t for t in request.trials if t.set == request.timing_set and not t.share]
        share_trials = [t for t in request.trials if t.share]  # fresh inputs for the kernel share's calls
        previous: list = []  # earlier calls' outputs, still held as a caller would hold them
        for trial in request.trials:
            if trial.timed_only:  # inputs for the timed calls only (their outputs are checked there)
                continue
            index = trial.index
            model = model_for(trial.set)
            inputs = [t.clone() for t in pristine[index]]
            args = _args_for(trial, inputs)
            if gpu:
                poison()
            launches = census.launches
            with torch.no_grad():
                outputs = handoff.outputs(ops.call(model, *args))
            launched = census.launches - launches
            found = ops.report()
            # copies ordered after the current stream only (on the device: cheap); work left on other streams
            # shows up when they are compared with the outputs after a device-wide sync
            early = [handoff.copy(t) for t in outputs]
            if gpu:
                sync()
            metas = []
            offers = trial.ipc or []
            for k, t in enumerate(outputs):
                meta = tensor_meta(t)
                meta.update(_output_facts(t, inputs, previous))
                if gpu and not same_bytes(early[k], t.detach()):
                    meta["changed_after_sync"] = True
                metas.append(meta)
                if meta["dtype"] in ITEMSIZE:
                    offer = offers[k] if k < len(offers) else None
                    if offer is not None and _copy_to_judge(torch, ipc, offer, meta, early[k]):
                        meta["ipc"] = True  # the judge compares its buffer in place
                    else:
                        write_tensor(os.path.join(out_dir, f"trial{index}_out{k}.bin"), early[k], host_stage)
            changed = [k for k, (t, p) in enumerate(zip(inputs, pristine[index], strict=True))
                       if not same_bytes(t, p)]
            for k in changed:  # the judge says how: it compares them with its originals
                write_tensor(os.path.join(out_dir, f"trial{index}_in{k}.bin"), inputs[k], host_stage)
            del inputs, args
            if all(t.index != index for t in timed_trials):
                del pristine[index]
            previous += outputs
            channel.send(TrialEvent(index=index, outputs=[OutputMeta(**m) for m in metas], launches=launched,
                                    threads=stray_threads(), native_threads=native.stray() or None, changed_inputs=changed,
                                    census=OpReport(**found) if found else None))
            del outputs, early
        # the timed calls need none of the trials' outputs: freed before them, so the device memory an evaluation
        # is charged is its larger phase, not the two together
        previous.clear()

        # CPU mode times only when asked to (timing_mode 'host': the host clock around the interpreter)
        if request.timing and timed_trials and (gpu or request.timing_mode == cuda_timer.HOST_MODE):
            stage = "timing"
            model = model_for(timed_trials[0].set)
            # the timed calls rotate through the timing set's trials (their pristine inputs), refilled into the
            # same buffers before each call, never the same inputs twice in a row; with timed_mix each call gets
            # fresh inputs, every element from variant a or b by a secret mask; a secret subset of calls is
            # checked, large outputs at secret positions
            variants = [pristine[t.index] for t in timed_trials]
            buffers = [t.clone() for t in variants[0]]
            args = _args_for(timed_trials[0], buffers)
            # measured before the token: other sandboxes time meanwhile (a timed run pauses this one)
            if request.kernel_share and gpu:
                def call_for(n: int):
                    # attempt n's call on inputs never seen: a fresh mix of two timing variants into the
                    # timed calls' buffers, or the judge's share trial n where the problem's inputs do not mix
                    if share_trials:
                        if n >= len(share_trials):
                            return None
                        trial = share_trials[n]
                        call_args = _args_for(trial, pristine.pop(trial.index))  # used once: not copied
                        where = {"trial": trial.index}
                    elif request.timed_mix and len(variants) > 1:
                        a, b = secret.sample(range(len(variants)), 2)
                        seed = secret.getrandbits(SEED_BITS)
                        mixer.into(buffers, variants[a], variants[b], seed)
                        call_args = args
                        where = {"trial": timed_trials[a].index, "mix_trial": timed_trials[b].index,
                                 "mix_seed": seed}
                    else:
                        return None
                    poison()

                    def forward():
                        with torch.no_grad():
                            return ops.call(model, *call_args)
                    return forward, where

                def record(result, n: int) -> list[OutputMeta]:
                    outs = handoff.outputs(result)
                    metas = checked_output_metas(torch, outs, share_path(out_dir, n), _FULL_TIMED_CHECK_BYTES,
                                                 lambda: secret.getrandbits(63), write_tensor, host_stage)
                    return [OutputMeta(**m) for m in metas]

                ops.report()  # the measured calls' findings start here
                measured, checks = measure_on_fresh_calls(torch, share, census, call_for, record)
                method = measured.pop("method")
                if method == "profiler":  # CUPTI's threads are the stub's own (the trials were checked before)
                    native.absorb()
                found = ops.report()
                channel.send(CensusEvent(fraction=measured.pop("fraction"), method=method, details=measured,
                                         checked=checks, census=OpReport(**found) if found else None))
            _wait_for_timing_token(channel, control_fd)
            granted = _clock()
            state: dict = {"variant": 0, "checks": set(), "check_s": 0.0, "threads": set(), "native": []}
            checked: list[TimedCheck] = []

            def refill() -> None:
                if len(variants) > 1:
                    state["variant"] = secret.choice([v for v in range(len(variants)) if v != state["variant"]])
                if request.timed_mix and len(variants) > 1:  # outside the timed region, like the copy
                    other = secret.choice([v for v in range(len(variants)) if v != state["variant"]])
                    state["mix"] = (timed_trials[other].index, secret.getrandbits(SEED_BITS))
                    mixer.into(buffers, variants[state["variant"]], variants[other], state["mix"][1])
                    return
                for dst, src in zip(buffers, variants[state["variant"]], strict=True):
                    tensor_copy(dst, src)

            def check(i, reps, result) -> None:
                # after every call, not only once the timing ends: a thread that lives for some of the timed
                # calls could launch work while the launch cover holds the GPU, outside the timed region
                state["threads"].update(stray_threads())
                state["native"] = state["native"] or native.stray()
                # every call's result, checked or not: only exact types, whose reading and dropping run no
                # code of the candidate's (a container's finalizer would work outside the timed region)
                outs = handoff.outputs(result)
                if i is not None and reps > state.get("planned", 0):
                    # which timed calls are checked: secret, drawn once the rep count is known, and again from
                    # each batch an adaptive timer adds (a candidate must not behave for the first batch only)
                    earlier = state.get("planned", 0)
                    count = _TIMED_CHECKS if earlier == 0 else 1
                    state["checks"] |= set(secret.sample(range(earlier, reps), min(count, reps - earlier)))
                    state["planned"] = reps
                if i is None or i not in state["checks"] or len(checked) >= _MAX_TIMED_CHECKS:
                    return
                began = _clock()
                metas = checked_output_metas(torch, outs, os.path.join(out_dir, f"timed{len(checked)}"),
                                             _FULL_TIMED_CHECK_BYTES, lambda: secret.getrandbits(63),
                                             write_tensor, host_stage)
                mix_trial, mix_seed = state.get("mix", (None, None))
                checked.append(TimedCheck(rep=i, trial=timed_trials[state["variant"]].index, mix_trial=mix_trial,
                                          mix_seed=mix_seed, outputs=[OutputMeta(**m) for m in metas]))
                state["check_s"] += _clock() - began

            def call():  # counted: a CUDA graph's replays run no Python, so its calls are the captures
                state["calls"] += 1
                with torch.no_grad():
                    return ops.call(model, *args)

            state["calls"] = 0
            launches = census.launches
            ops.report()  # the timed calls' findings start here
            timer = dict(torch=torch, synchronize=sync, event_cls=event_cls, clock=_clock,
                         settings=TimerSettings(**request.timer), prepare=refill, inspect=check,
                         mode=request.timing_mode, ops=timer_ops)
            paired_reference = None
            if not gpu:
                raw = time_host(call, clock=_clock, settings=TimerSettings(**request.timer), prepare=refill,
                                inspect=check)
            elif request.paired_baseline:  # the problem's own Model, built as the judge builds it: the one mode
                # that keeps the reference in this process (problem_data), cross-checked with the judge's eager time
                torch.manual_seed(42)
                torch.cuda.manual_seed(42)
                reference_cls, reference_args = drawn.reference
                reference = reference_cls(*reference_args).to(device)

                def reference_call():
                    with torch.no_grad():
                        return reference(*args)

                paired = time_paired(call, reference_call, rng=secret, **timer)
                raw, paired_reference = paired["a"], paired["b"]
            else:
                raw = time_cuda(call, **timer)
            timing_marks = {"timed": round(_clock() - granted, 4), "checks": round(state["check_s"], 4)}
            found = ops.report()
            channel.send(TimingEvent(timer=raw, paired_reference=paired_reference, checked=checked,
                                     calls=state["calls"], launches=census.launches - launches,
                                     threads=sorted(state["threads"].union(stray_threads()))[:8],
                                     native_threads=state["native"] or native.stray() or None, marks=timing_marks,
                                     census=OpReport(**found) if found else None))
    except SystemExit as exc:
        channel.send(ExitEvent(stage=stage, code=str(exc.code)[:200]))
        os._exit(0)
    except HandoffRefused as exc:  # a result the harness could not read without running the candidate's code
        channel.send(_error_event(exc, HANDOFF_STAGE))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - everything the candidate raises is reported, nothing escapes
        channel.send(_error_event(exc, stage))
        os._exit(0)
    sys.stdout.flush()  # before "done": the verdict process stops reading once it has that
    sys.stderr.flush()
    channel.send(DoneEvent(gpu_peak_bytes=int(peak_reserved()) if peak_reserved is not None else None))
    os._exit(0)  # skip atexit hooks and finalizers the candidate may have registered


if __name__ == "__main__":
    main(sys.argv)
