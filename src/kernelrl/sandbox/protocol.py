"""The typed wire between the verdict process, the judge and the sandbox child. Stdlib only (no torch): the
verdict process imports it, and so does the child before it confines itself.

Three conversations, JSON on each:

- the child's request file: `SandboxRequest`, or for a standby (started before its candidate exists)
  `StandbyRequest`, whose candidate part comes later on the control pipe as a `StandbyAssignment`;
- the child's events, one JSON line each on the protocol pipe, `{"event": kind, **fields}` (`parse_event`);
  the runner makes `timing_granted` itself;
- the judge's operations, one JSON line each way (kernelrl.sandbox.judge_wire).

Each message is a frozen dataclass whose `to_dict()` is exactly the dict the other side has always read and
whose `from_dict()` validates: a missing or unknown key, a value of the wrong type (a bool is not an int), an
unknown event kind or op raises `ProtocolError`. Events come from the process where candidate code runs, so
parsing only looks at JSON values (it never imports, calls or evaluates anything) and cuts strings to the
lengths the verdict uses. Semantic checks (a known dtype, the expected device, a trial index in range) stay
with the verdict, which turns them into verdicts (wrong_output, ...) rather than protocol errors.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kernelrl.sandbox.wire import (
    _STR,
    MAX_LINE_BYTES,
    Message,
    ProtocolError,
    _bool,
    _dict,
    _error,
    _field,
    _int,
    _json,
    _list,
    _loads,
    _map,
    _message,
    _message_type,
    _number,
    _optional,
    _str,
    _type,
)

# -- the child's request -------------------------------------------------------------------------------------


@_message_type
class Draw(Message):
    """How the sandbox redraws a trial's inputs itself: the seed, where the factories create (a device type),
    and the judge's probe of its own draw (compared as JSON)."""

    seed: int = _field(_int)
    on: str = _field(_STR)
    probe: list = _field(_list(_json))


@_message_type
class IpcOffer(Message):
    """A judge-owned device buffer for one large correctness output (CUDA IPC handle as hex)."""

    handle: str = _field(_STR)
    dtype: str = _field(_STR)
    shape: list[int] = _field(_list(_int))


def _arg(value: Any, where: str) -> dict:
    """One argument of forward: {"tensor": k} (the trial's k-th tensor) or {"value": a plain JSON scalar}."""
    arg = _dict(value, where)
    if set(arg) == {"tensor"}:
        _int(arg["tensor"], f"{where}.tensor")
    elif set(arg) != {"value"} or not (arg["value"] is None or type(arg["value"]) in (bool, int, float, str)):
        raise _error(where, "expected {'tensor': int} or {'value': a plain value}")
    return arg


@_message_type
class TrialPlan(Message):
    """One trial as the judge planned it (`prepare`): its input set, its inputs' headers (files in `in_dir`
    unless `draw` says how to redraw them), forward's arguments, and for correctness outputs the shared
    buffers."""

    index: int = _field(_int)
    set: str = _field(_STR)
    inputs: list[dict] = _field(_list(_dict))
    args: list[dict] = _field(_list(_arg))
    timed_only: bool = _field(_bool)  # feeds the timed calls only (no correctness run)
    draw: Draw | None = _field(_optional(_message(Draw)), default=None, omit_none=True)
    ipc: list[IpcOffer | None] | None = _field(_optional(_list(_optional(_message(IpcOffer)))), default=None,
                                               omit_none=True)
    share: bool = _field(_bool, default=False)  # fresh inputs for the kernel share's measured calls


@_message_type
class SandboxSettings(Message):
    """The request's part known before the candidate (`SandboxLauncher.sandbox_settings`)."""

    mode: str = _field(_STR)  # "gpu" or "cpu-interpreter"
    isolate_network: bool = _field(_bool)
    max_file_bytes: int = _field(_int)

    @property
    def gpu(self) -> bool:
        return self.mode == "gpu"

    def settings(self) -> SandboxSettings:
        return SandboxSettings(mode=self.mode, isolate_network=self.isolate_network,
                               max_file_bytes=self.max_file_bytes)


@_message_type
class StandbyRequest(SandboxSettings):
    """A standby's request file: the settings and `"standby": true`."""

    _envelope = ("standby", True)


@_message_type
class SandboxRequest(SandboxSettings):
    """Everything the child reads from its request file (or a standby from its assignment)."""

    problem_path: str = _field(_STR)
    candidate_path: str = _field(_STR)
    in_dir: str = _field(_STR)
    out_dir: str = _field(_STR)
    trials: list[TrialPlan] = _field(_list(_message(TrialPlan)))
    timing_set: str = _field(_STR)
    timing: bool = _field(_bool)
    timer: dict = _field(_dict)  # TimerSettings' fields
    timing_mode: str = _field(_STR)
    paired_baseline: bool = _field(_bool)
    kernel_share: bool = _field(_bool)  # measure the candidate's share of the GPU time before timing
    timed_mix: bool = _field(_bool, default=False)  # fresh inputs per timed call (kernelrl.sandbox.timed_mix)
    memory_limit_bytes: int = _field(_int)
    readonly_fs: bool = _field(_bool)
    writable_paths: list[str] = _field(_list(_STR))
    candidate_uid: int | None = _field(_optional(_int), default=None, omit_none=True)  # None: the stub's own

    @classmethod
    def create(cls, settings: SandboxSettings, **fields) -> SandboxRequest:
        """The settings' part from `settings`, the rest from `fields`."""
        return cls(mode=settings.mode, isolate_network=settings.isolate_network,
                   max_file_bytes=settings.max_file_bytes, **fields)


@_message_type
class StandbyAssignment(Message):
    """What a standby reads from its control pipe once its candidate exists: the whole request and the
    environment variables its compile caches need."""

    request: SandboxRequest = _field(_message(SandboxRequest))
    env: dict[str, str] = _field(_map(_STR))


def parse_request(data: Any) -> SandboxRequest | StandbyRequest:
    """A request file's contents (a dict, or its JSON text)."""
    data = _loads(data) if isinstance(data, str | bytes) else data
    if type(data) is dict and data.get("standby") is True:
        return StandbyRequest.from_dict(data)
    return SandboxRequest.from_dict(data)


# -- the child's events --------------------------------------------------------------------------------------

EVENTS: dict[str, type[Event]] = {}  # kind -> its dataclass


@_message_type
class Event(Message):
    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._envelope = ("event", cls.kind)
        EVENTS[cls.kind] = cls

    @classmethod
    def _label(cls) -> str:
        return f"{cls.kind} event"


@_message_type
class OutputMeta(Message):
    """One output tensor as the child reports it: its header, and the facts the runtime checks read."""

    dtype: str = _field(_str(40))
    shape: list[int] = _field(_list(_int))
    device: str = _field(_str(16))
    aliases_input: bool | None = _field(_optional(_bool), default=None, omit_none=True)
    reuses_buffer: bool | None = _field(_optional(_bool), default=None, omit_none=True)
    changed_after_sync: bool | None = _field(_optional(_bool), default=None, omit_none=True)
    ipc: bool | None = _field(_optional(_bool), default=None, omit_none=True)  # in the judge's shared buffer
    # a timed call's sample: its size
    sampled: int | None = _field(_optional(_int), default=None, omit_none=True)
    sample_seed: int | None = _field(_optional(_int), default=None, omit_none=True)


# the kernel share's measured calls (kernelrl.sandbox.share_call), which the judge plans trials for: the
# event-timed share's gates, then the profiler; most forwards enqueue in well under 5 ms, and a gate that
# outlasts the enqueue is idle GPU time on the evaluation's clock
SHARE_GATES_MS = (5.0, 50.0, 500.0)
SHARE_ATTEMPTS = len(SHARE_GATES_MS) + 1  # fresh trials the judge plans for them
SHARE_PREFIX = "share"  # the measured calls' output files: share{n}_out{k}.bin


@_message_type
class TimedCheck(Message):
    """A timed call whose outputs went to the judge: its rep, the trial whose inputs it had, its outputs."""

    rep: int = _field(_int)
    trial: int = _field(_int)
    outputs: list[OutputMeta] = _field(_list(_message(OutputMeta)))
    # fresh inputs (kernelrl.sandbox.timed_mix): `trial`'s inputs mixed with `mix_trial`'s under mask
    # seed `mix_seed`
    mix_trial: int | None = _field(_optional(_int), default=None, omit_none=True)
    mix_seed: int | None = _field(_optional(_int), default=None, omit_none=True)


_MARKS = _map(_number)  # diagnostics: seconds from a start to each milestone
_THREADS = _list(_str(200))


@_message_type
class StandbyEvent(Event):
    """A standby is set up and waits for its assignment (the runner does not pass it on)."""

    kind = "standby"


@_message_type
class ReadyEvent(Event):
    kind = "ready"
    isolation: list[str] = _field(_list(_str(32)))  # the confinement steps applied
    marks: dict[str, float] = _field(_MARKS)


@_message_type
class BaselineEvent(Event):
    """Sent right before the candidate's import (so its own): the stub's process id and its OS threads, as its
    PID namespace numbers them; the verdict process watches for threads beyond these (`ThreadWatch`)."""

    kind = "baseline"
    pid: int = _field(_int)
    tasks: list[int] = _field(_list(_int, 4096))


@_message_type
class ImportedEvent(Event):
    kind = "imported"
    marks: dict[str, float] = _field(_MARKS)


@_message_type
class InitializedEvent(Event):
    kind = "initialized"


@_message_type
class InputsUnavailableEvent(Event):
    """The inputs could not be drawn, differ from the judge's, or the problem stayed reachable after the stub
    dropped it (before any candidate code ran; `kernelrl.sandbox.problem_data`)."""

    kind = "inputs_unavailable"
    detail: str = _field(_str(500))


@_message_type
class OpReport(Message):
    """What the op census (kernelrl.sandbox.opcensus) saw in one call, or in the timed calls together: ATen
    ops outside its allow-list and host reads, by name with their counts; outputs a candidate kernel did not
    write last; tampering with the census itself; Triton kernels of others launched. Sent only when something
    was found."""

    ops: dict[str, int] = _field(_map(_int), factory=dict)
    host: dict[str, int] = _field(_map(_int), factory=dict)
    provenance: list[str] = _field(_list(_str(200), limit=8), factory=list)
    tampered: list[str] = _field(_list(_str(200), limit=8), factory=list)
    # Triton kernels launched that the candidate does not define (module.name), with their counts
    foreign: dict[str, int] = _field(_map(_int), factory=dict)


@_message_type
class TrialEvent(Event):
    kind = "trial"
    index: int = _field(_int)
    outputs: list[OutputMeta] = _field(_list(_message(OutputMeta)))
    launches: int = _field(_int)  # candidate kernel launches during the call
    threads: list[str] = _field(_THREADS)  # threads the candidate left running
    changed_inputs: list[int] = _field(_list(_int, limit=64))  # inputs forward wrote to (the files say how)
    # OS threads new since the candidate's import that are not Python's (kernelrl.sandbox.native_threads)
    native_threads: list[str] | None = _field(_optional(_THREADS), default=None, omit_none=True)
    census: OpReport | None = _field(_optional(_message(OpReport)), default=None, omit_none=True)
    # seconds from the call to its outputs on the host's side of a device-wide sync: the pace of the next call
    # on these inputs (kernelrl.evaluate.pace; a forged value can only loosen the candidate's own bound)
    call_s: float | None = _field(_optional(_number), default=None, omit_none=True)


@_message_type
class CensusEvent(Event):
    """The candidate's share of one forward's GPU time; `details` holds the rest of the measurement. The calls
    it was measured on had fresh inputs, and their outputs go to the judge like a timed call's (`checked`)."""

    _rest = "details"
    kind = "census"
    fraction: float | None = _field(_optional(_number))
    details: dict = _field(_dict, factory=dict)
    method: str | None = _field(_optional(_str(32)))  # "events" or "profiler"
    checked: list[TimedCheck] = _field(_list(_message(TimedCheck), limit=8), factory=list)
    census: OpReport | None = _field(_optional(_message(OpReport)), default=None, omit_none=True)


@_message_type
class TimingTokenEvent(Event):
    """The child asks for the device's timing token (after its last trial)."""

    kind = "timing_token"


@_message_type
class TimingGrantedEvent(Event):
    """Made by the runner, never by the child: timing may start."""

    kind = "timing_granted"


@_message_type
class NativeThreadSeenEvent(Event):
    """Made by the runner, never by the child: its watch found a thread, new since the baseline, alive too
    long."""

    kind = "native_thread_seen"
    detail: str = _field(_str(300))


@_message_type
class TimingEvent(Event):
    """The raw times: `timer` is the timer's raw dict (times_ms, wall_ms, method, ...), flat on the wire."""

    _rest = "timer"
    kind = "timing"
    timer: dict = _field(_dict, factory=dict)
    paired_reference: dict | None = _field(_optional(_dict), default=None, omit_none=True)
    checked: list[TimedCheck] = _field(_list(_message(TimedCheck), limit=16))
    calls: int = _field(_int)  # Python calls of the timed callable
    launches: int = _field(_int)
    threads: list[str] = _field(_THREADS)
    marks: dict[str, float] = _field(_MARKS)
    native_threads: list[str] | None = _field(_optional(_THREADS), default=None, omit_none=True)
    census: OpReport | None = _field(_optional(_message(OpReport)), default=None, omit_none=True)

    def raw(self) -> dict:
        """The flat dict the timing summary reads (the wire form)."""
        return self.to_dict()


@_message_type
class ErrorEvent(Event):
    kind = "error"
    stage: str = _field(_str(32))  # import, init, correctness or timing
    exc_type: str = _field(_str(200))
    message: str = _field(_str(2000))
    traceback: str = _field(_str(6000, tail=True))


@_message_type
class ExitEvent(Event):
    """The candidate called sys.exit."""

    kind = "exit"
    stage: str = _field(_str(32))
    code: str = _field(_str(200))


@_message_type
class DoneEvent(Event):
    kind = "done"
    # GPU: the most the stub's caching allocator reserved (torch.cuda.max_memory_reserved), for admission
    gpu_peak_bytes: int | None = _field(_optional(_int), default=None, omit_none=True)


@_message_type
class TerminatedEvent(Event):
    """From the PID namespace's init: how the stub ended (one of the two)."""

    kind = "terminated"
    signal: int | None = _field(_optional(_int), default=None, omit_none=True)
    exit_code: int | None = _field(_optional(_int), default=None, omit_none=True)

    def __post_init__(self) -> None:
        if (self.signal is None) == (self.exit_code is None):
            raise ValueError("expected exactly one of signal and exit_code")


def parse_event(message: str | bytes | dict) -> Event:
    """A child's event (a JSON line or its dict) as its dataclass; ProtocolError when it is not one."""
    if isinstance(message, str | bytes):
        if len(message) > MAX_LINE_BYTES:
            raise ProtocolError(f"event longer than {MAX_LINE_BYTES} bytes")
        message = _loads(message)
    if type(message) is not dict:
        raise ProtocolError(f"an event is an object, got {_type(message)}")
    kind = message.get("event")
    if type(kind) is not str:
        raise ProtocolError("an event needs an 'event' string")
    cls = EVENTS.get(kind) if kind else None
    if cls is None:
        raise ProtocolError(f"unknown event kind {kind[:40]!r}")
    return cls.from_dict(message)
