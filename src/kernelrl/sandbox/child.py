"""The trusted stub that runs inside the sandboxed candidate process.

Order matters: confine the process while it is single-threaded, import torch, initialize the device,
capture the timer's functions, and only then import the candidate. Everything after that import runs next
to untrusted code, so this process only *reports* (outputs as raw tensor files, raw times, errors); the
verdict is decided elsewhere. Messages go out as JSON lines on the protocol fd, each built from its dataclass
in kernelrl.sandbox.protocol (which also reads the request).

Usage: python -m kernelrl.sandbox.child REQUEST.json
"""

from __future__ import annotations

import os
import sys
import time
import traceback

from kernelrl.sandbox.protocol import (
    DoneEvent,
    ErrorEvent,
    Event,
    ExitEvent,
    ReadyEvent,
    SandboxRequest,
    StandbyRequest,
    parse_request,
)
from kernelrl.sandbox.stub.confine import confine_process, lock_down
from kernelrl.sandbox.stub.start import start_device, wait_as_standby
from kernelrl.verify.runtime_checks import HANDOFF_STAGE

_clock = time.perf_counter  # captured before any candidate code exists


class _Channel:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, event: Event) -> None:
        data = (event.to_json() + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


# the stub's own frames, left out of tracebacks
_STUB = ("kernelrl/sandbox/child.py", "kernelrl/sandbox/census.py", "kernelrl/sandbox/opcensus.py",
         "kernelrl/sandbox/stub/")


def _error_event(exc: BaseException, stage: str) -> ErrorEvent:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the stub's own frames: the model only needs its code's part of the story
    text = "".join(line for line in lines if not any(stub in line for stub in _STUB))
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


def main(argv: list[str]) -> None:
    """Fresh-process entry: `python -m kernelrl.sandbox.child REQUEST.json` (fds named in the environment)."""
    request = read_request(argv[1])
    control = os.environ.pop("KERNELRL_CONTROL_FD", None)
    run(request, int(os.environ.pop("KERNELRL_PROTO_FD")), int(control) if control else None)


def run(request: SandboxRequest | StandbyRequest | dict, proto_fd: int, control_fd: int | None = None
        ) -> None:
    """The stub's phases in order (kernelrl.sandbox.stub), from the first confinement step to `done`.
    Entered by `main` (fresh process) or by the zygote's forked child (`kernelrl.sandbox.zygote`), always as
    PID 1 of a new PID namespace when one exists. Never returns (os._exit)."""
    channel = _Channel(proto_fd)
    marks = {"stub": _clock()}
    if isinstance(request, dict):
        request = parse_request(request)
    applied, in_pid_namespace = confine_process(request, channel.send)  # single-threaded, before torch

    import torch

    # the later phases' modules, imported (with torch) before any candidate code exists
    from kernelrl.sandbox.handoff import HandoffRefused
    from kernelrl.sandbox.stub import candidate as candidate_phase
    from kernelrl.sandbox.stub import share as share_phase
    from kernelrl.sandbox.stub import timed as timed_phase
    from kernelrl.sandbox.stub import trials as trials_phase
    from kernelrl.sandbox.stub.trusted import capture

    gpu = request.gpu
    marks["imports"] = _clock()
    start_device(torch, gpu)
    if gpu:
        marks["device"] = _clock()
    block_mix = None  # the timed-input mix's kernel, loaded in a standby (sandbox.warm_kernel)
    if isinstance(request, StandbyRequest):
        request, block_mix = wait_as_standby(torch, request, channel.send, control_fd, marks, _clock)
    # a holder the candidate phase empties before the import: no frame above the candidate holds the source
    problem_source = [lock_down(request, applied, in_pid_namespace, marks, _clock)]
    trusted = capture(torch, gpu, block_mix)
    marks["ready"] = _clock()
    # where start-up time went (diagnostics): seconds from the stub's start to each mark
    since_start = {k: round(v - marks["stub"], 4) for k, v in marks.items()}
    channel.send(ReadyEvent(isolation=applied, marks=since_start))

    stage = "import"
    try:
        candidate = candidate_phase.import_candidate(request, trusted, problem_source, channel.send, _clock)
        stage = "init"
        candidate_phase.build_model(request, candidate, channel.send)
        stage = "correctness"
        trials_phase.run_trials(request, candidate, channel.send)
        if timed_phase.times_here(request, gpu):
            stage = "timing"
            inputs = timed_phase.TimedInputs(request, candidate)
            if request.kernel_share and gpu:  # measured before the token: other sandboxes time meanwhile
                share_phase.measure_share(request, candidate, inputs, channel.send)
            timed_phase.time_calls(request, candidate, inputs, channel.send, control_fd, _clock)
    except SystemExit as exc:
        channel.send(ExitEvent(stage=stage, code=str(exc.code)[:200]))
        os._exit(0)
    except HandoffRefused as exc:  # a result the harness could not read without running the candidate's code
        channel.send(_error_event(exc, HANDOFF_STAGE))
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001
        # everything the candidate raises is reported, nothing escapes
        channel.send(_error_event(exc, stage))
        os._exit(0)
    sys.stdout.flush()  # before "done": the verdict process stops reading once it has that
    sys.stderr.flush()
    peak = trusted.peak_reserved
    channel.send(DoneEvent(gpu_peak_bytes=int(peak()) if peak is not None else None))
    os._exit(0)  # skip atexit hooks and finalizers the candidate may have registered


if __name__ == "__main__":
    main(sys.argv)
