"""Between the two parts of confinement: the device started (its context created before anything breaks CUDA
start-up) and, for a standby, Triton warmed and the wait for the candidate it is assigned."""

from __future__ import annotations

import os
from collections.abc import Callable

from kernelrl.sandbox.protocol import Event, SandboxRequest, StandbyAssignment, StandbyEvent, StandbyRequest


def start_device(torch, gpu: bool) -> None:
    """The device's context now, and the judge's numerics (no TF32 for fp32 matmuls and convolutions)."""
    if gpu:
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")  # create the context now, before any confinement that breaks it
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def wait_as_standby(torch, request: StandbyRequest, send: Callable[[Event], None], control_fd: int | None,
                    marks: dict[str, float], clock: Callable[[], float]) -> tuple[SandboxRequest, object]:
    """A standby was started before its candidate existed: everything so far is the same for every candidate;
    the rest of the request (the candidate's paths and cache directories, the trials) comes on the control
    pipe. Returns that request and the timed-input mix's kernel, loaded meanwhile (sandbox.warm_kernel)."""
    block_mix = None
    if request.gpu:
        from kernelrl.sandbox import warm_kernel

        try:
            warm_kernel.launch(torch)  # Triton's runtime starts up now, off the evaluation's clock
            block_mix = warm_kernel.BlockMix(torch)
        except Exception as exc:  # noqa: BLE001 - the candidate then pays Triton's start-up, nothing worse
            print(f"kernelrl standby: Triton warm-up failed: {type(exc).__name__}: {str(exc)[:200]}",
                  flush=True)
    marks["standby"] = clock()  # torch.utils.cpp_extension, which the census wraps, came with the zygote
    send(StandbyEvent())
    assignment = _read_assignment(control_fd)
    marks["assigned"] = clock()
    os.environ.update(assignment.env)  # read when used: Triton's and the extension builder's caches
    return assignment.request, block_mix


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
