"""Phase 4: the correctness trials. Each runs forward on a copy of its pristine inputs under the census,
takes the outputs through the hand-off and sends them to the judge (its shared buffer or a file), with the
facts the verdict needs beyond the values: aliasing, reused buffers, inputs changed, work left on other
streams."""

from __future__ import annotations

import os
from collections.abc import Callable
from time import perf_counter as _clock  # bound before the candidate exists

# imported with this module, before the candidate exists: the phase's functions are the harness's own
from kernelrl.sandbox.cuda_ipc import device_bytes
from kernelrl.sandbox.protocol import (
    Event,
    IpcOffer,
    OpReport,
    OutputMeta,
    SandboxRequest,
    TrialEvent,
    TrialPlan,
)
from kernelrl.sandbox.stub.candidate import LoadedCandidate
from kernelrl.sandbox.tensor_files import same_bytes, write_tensor
from kernelrl.sandbox.tensorio import ITEMSIZE, tensor_meta


def args_for(trial: TrialPlan, tensors: list) -> list:
    """Forward's arguments for a trial: its tensors where it has tensors, its plain values elsewhere."""
    return [tensors[a["tensor"]] if "tensor" in a else a["value"] for a in trial.args]


def timed_trials(request: SandboxRequest) -> list[TrialPlan]:
    """The timing set's trials whose inputs the timed calls rotate through (the share's own trials apart)."""
    return [t for t in request.trials if t.set == request.timing_set and not t.share]


def run_trials(request: SandboxRequest, candidate: LoadedCandidate, send: Callable[[Event], None]) -> None:
    """Every trial that is not only for the timed calls, in the plan's order; a trial's pristine inputs are
    dropped once it ran unless the timed calls use them."""
    trusted = candidate.trusted
    torch, census, ops, handoff = trusted.torch, trusted.census, trusted.ops, candidate.handoff
    pristine = candidate.pristine
    timed_indices = {t.index for t in timed_trials(request)}
    previous: list = []  # earlier calls' outputs, still held as a caller would hold them
    for trial in request.trials:
        if trial.timed_only:  # inputs for the timed calls only (their outputs are checked there)
            continue
        index = trial.index
        model = candidate.model_for(trial.set)
        inputs = [t.clone() for t in pristine[index]]
        args = args_for(trial, inputs)
        if trusted.gpu:
            trusted.poison()
        launches = census.launches
        started = _clock()
        with torch.no_grad():
            outputs = handoff.outputs(ops.call(model, *args))
        launched = census.launches - launches
        found = ops.report()
        # copies ordered after the current stream only (on the device: cheap); work left on other streams
        # shows up when they are compared with the outputs after a device-wide sync
        early = [handoff.copy(t) for t in outputs]
        if trusted.gpu:
            trusted.sync()
        call_s = _clock() - started
        metas = []
        offers = trial.ipc or []
        for k, t in enumerate(outputs):
            meta = tensor_meta(t)
            meta.update(_output_facts(t, inputs, previous))
            if trusted.gpu and not same_bytes(early[k], t.detach()):
                meta["changed_after_sync"] = True
            metas.append(meta)
            if meta["dtype"] in ITEMSIZE:
                offer = offers[k] if k < len(offers) else None
                if offer is not None and copy_to_judge(torch, trusted.ipc, offer, meta, early[k]):
                    meta["ipc"] = True  # the judge compares its buffer in place
                else:
                    write_tensor(os.path.join(request.out_dir, f"trial{index}_out{k}.bin"), early[k],
                                 trusted.host_stage)
        changed = [k for k, (t, p) in enumerate(zip(inputs, pristine[index], strict=True))
                   if not same_bytes(t, p)]
        for k in changed:  # the judge says how: it compares them with its originals
            write_tensor(os.path.join(request.out_dir, f"trial{index}_in{k}.bin"), inputs[k],
                         trusted.host_stage)
        del inputs, args
        if index not in timed_indices:
            del pristine[index]
        previous += outputs
        send(TrialEvent(index=index, outputs=[OutputMeta(**m) for m in metas], launches=launched,
                        threads=candidate.stray_threads(), native_threads=candidate.native.stray() or None,
                        changed_inputs=changed, census=OpReport(**found) if found else None,
                        call_s=round(call_s, 6)))
        del outputs, early
    # the timed calls need none of the trials' outputs: freed before them, so the device memory an evaluation
    # is charged is its larger phase, not the two together
    previous.clear()


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


def copy_to_judge(torch, ipc, offer: IpcOffer | dict, meta: dict, values) -> bool:
    """Copy an output into the judge's shared buffer (same dtype and shape as the reference); False: it goes
    through a file instead (no IPC here, another shape, a failed mapping)."""
    offer = IpcOffer.coerce(offer)
    if ipc is None or meta["dtype"] != offer.dtype or meta["shape"] != offer.shape:
        return False
    try:
        ptr = ipc.open(offer.handle)
    except Exception:  # noqa: BLE001 - the file path below works everywhere
        return False
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
