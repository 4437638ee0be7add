"""Start the sandboxed candidate process and watch it: phase deadlines, memory, output, protocol.

Nothing the child does is taken on trust: its exit code is ignored, its protocol messages are parsed
defensively, its log is bounded, and it is killed with its whole process group on a deadline or when it
outgrows its memory limit. Stdlib only (the verdict process does not need torch).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from kernelrl.sandbox.gate import DeviceGate
from kernelrl.sandbox.isolation import group_rss_bytes
from kernelrl.sandbox.native_threads import WATCH_GRACE_S, ThreadWatch
from kernelrl.sandbox.protocol import Event, NativeThreadSeenEvent

MAX_PROTOCOL_LINE = 1 << 20

# phase entered when an event arrives -> the timeout that governs it
PHASE_AFTER_EVENT = {"ready": "import", "imported": "run"}

# the stub's messages in the order it sends them (one may be missing; only "trial" repeats). Candidate code
# shares the stub's process and can write its pipe: a message out of this order or a second one of a kind is
# not the stub's, and what it claims (a census, timer numbers) must not replace the stub's own report
EVENT_RANK = {"ready": 0, "baseline": 1, "imported": 2, "initialized": 3, "trial": 4, "census": 5,
              "timing_token": 6, "timing": 7, "done": 8}
# the stub's; "terminated" may follow
LAST_MESSAGES = frozenset({"inputs_unavailable", "error", "exit", "done"})


class EventOrder:
    """Checks the order and count of one child's messages (`check` each as it arrives)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.rank = -1

    def check(self, kind: str) -> str | None:
        """None when a message of `kind` may come now; else why it cannot be the stub's."""
        last = self.seen[-1] if self.seen else None
        if last == "terminated" or (last in LAST_MESSAGES and kind != "terminated"):
            return f"{kind[:40]!r} message after {last!r}"
        if kind in EVENT_RANK:
            rank = EVENT_RANK[kind]
            if (rank < self.rank or (rank == self.rank and kind != "trial")
                    or (self.rank < 0 and kind != "ready")):
                return f"{kind!r} message out of order (after {last!r})"
            if kind == "timing" and "timing_token" not in self.seen:
                return "'timing' message without the timing token"
            self.rank = rank
        elif kind == "inputs_unavailable" and self.rank != 0:  # drawn after 'ready', before the import
            return f"'inputs_unavailable' message out of order (after {last!r})"
        elif kind not in LAST_MESSAGES and kind != "terminated":
            return f"{kind[:40]!r} is not a message the stub sends"
        self.seen.append(kind)
        return None


class LogBuffer:
    """Keeps the head and the tail of a stream; counts what was dropped in between."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.half:
            excess = len(self.tail) - self.half
            self.dropped += excess
            del self.tail[:excess]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n" if self.dropped else ""
        return (bytes(self.head).decode(errors="replace") + middle
                + bytes(self.tail).decode(errors="replace"))


E = TypeVar("E", bound=Event)


@dataclass
class ChildOutcome:
    # as `validate` returned them: the sandbox's typed events (kernelrl.sandbox.protocol); without it, dicts
    events: list[Event | dict] = field(default_factory=list)
    returncode: int | None = None
    timed_out_phase: str | None = None  # 'start', 'import' or 'run'
    timeout_s: float | None = None
    stalled: str | None = None  # what did not report within the pace its earlier calls set (`stall`)
    memory_exceeded_bytes: int | None = None
    stopped_by_parent: bool = False
    cancelled: bool = False  # stopped because the caller's deadline passed (watch_child's `cancelled`)
    protocol_error: str | None = None
    log: str = ""
    log_bytes_dropped: int = 0
    wall_s: float = 0.0

    def last(self, kind: type[E]) -> E | None:
        """The last event of this type the child sent (the typed wire's)."""
        return next((e for e in reversed(self.events) if isinstance(e, kind)), None)


class StallWatch:
    """The wait for the child's next report against `limit()` (seconds from the last handled report, and
    what is awaited, or None), less the time the child spent stopped by another sandbox's timed run."""

    def __init__(self, limit: Callable[[], tuple[float, str] | None], paused: Callable[[], float]) -> None:
        self._limit, self._paused = limit, paused
        self.mark()

    def mark(self) -> None:
        """A report was just handled."""
        self._since, self._paused_at = time.monotonic(), self._paused()

    def late(self, now: float) -> tuple[float, str] | None:
        bound = self._limit()
        if bound is None or now - self._since - (self._paused() - self._paused_at) <= bound[0]:
            return None
        return bound


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# spawn(log_fd, proto_fd, control_fd, lifeline_fd) -> host PID of a new process-group leader (the zygote path)
Spawner = Callable[[int, int, int, int], int]


@dataclass
class SpawnedChild:
    """A started sandbox: its process-group leader and the verdict process's ends of its pipes."""

    pgid: int
    log_fd: int  # its stdout and stderr
    proto_fd: int  # its protocol messages (JSON lines)
    control_fd: int  # to it: the timing token's "go", a standby's assignment
    lifeline_fd: int | None  # zygote path: closing it kills the sandbox's namespace
    proc: subprocess.Popen | None  # fresh-process path

    def send(self, data: bytes) -> None:
        """Write to the child's control pipe (OSError when it is gone)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.control_fd, view):]

    def close(self, log: LogBuffer | None = None) -> int | None:
        """Kill the sandbox's process group and close the pipes; `log` gets what its output pipe already holds
        (without waiting on grandchildren that still hold it). Returns the fresh process's exit status."""
        if self.lifeline_fd is not None:
            os.close(self.lifeline_fd)  # the zygote's launcher kills the namespace when this closes
            self.lifeline_fd = None
        _kill_group(self.pgid)  # also reaps anything the candidate left running in its group
        os.close(self.control_fd)
        returncode = None
        if self.proc is not None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            returncode = self.proc.wait()
        if log is not None:
            os.set_blocking(self.log_fd, False)
            try:
                while chunk := os.read(self.log_fd, 1 << 16):
                    log.add(chunk)
            except (OSError, TypeError):
                pass
        if self.proc is not None:
            self.proc.stdout.close()
        else:
            os.close(self.log_fd)
        os.close(self.proto_fd)
        return returncode


def spawn_child(argv: list[str], *, env: dict[str, str], cwd: str,
                spawn: Spawner | None = None) -> SpawnedChild:
    """Start the child: `argv` as a fresh process, or through `spawn` (the zygote), which is given the child's
    ends of the pipes and returns the host PID of a new process-group leader."""
    read_fd, write_fd = os.pipe()
    control_r, control_w = os.pipe()
    proc: subprocess.Popen | None = None
    lifeline_w: int | None = None
    if spawn is None:
        env = {**env, "KERNELRL_PROTO_FD": str(write_fd), "KERNELRL_CONTROL_FD": str(control_r)}
        try:
            proc = subprocess.Popen(
                argv, env=env, cwd=cwd,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(write_fd, control_r), start_new_session=True, close_fds=True,
            )
        except BaseException:
            for fd in (read_fd, write_fd, control_r, control_w):
                os.close(fd)
            raise
        pgid, log_fd = proc.pid, proc.stdout.fileno()
    else:
        log_fd, log_w = os.pipe()
        lifeline_r, lifeline_w = os.pipe()
        try:
            pgid = spawn(log_w, write_fd, control_r, lifeline_r)
        except BaseException:
            for fd in (read_fd, write_fd, control_r, control_w, log_fd, log_w, lifeline_r, lifeline_w):
                os.close(fd)
            raise
        os.close(log_w)
        os.close(lifeline_r)
    os.close(write_fd)
    os.close(control_r)
    return SpawnedChild(pgid=pgid, log_fd=log_fd, proto_fd=read_fd, control_fd=control_w,
                        lifeline_fd=lifeline_w, proc=proc)


def run_child(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    spawn: Spawner | None = None,
    **watch,
) -> ChildOutcome:
    """Start the child (`spawn_child`) and watch it to the end (`watch_child`)."""
    started = time.monotonic()
    outcome = watch_child(spawn_child(argv, env=env, cwd=cwd, spawn=spawn), **watch)
    outcome.wall_s = time.monotonic() - started
    return outcome


def watch_child(
    child: SpawnedChild,
    *,
    timeouts: dict[str, float],
    memory_limit_bytes: int,
    log_limit_bytes: int,
    on_event: Callable[[Event | dict], bool],
    gate: DeviceGate | None = None,
    token_allowed: Callable[[], bool] | None = None,
    validate: Callable[[dict], Event] | None = None,
    cancelled: Callable[[], bool] | None = None,
    thread_grace_s: float = WATCH_GRACE_S,
    stall: Callable[[], tuple[float, str] | None] | None = None,
) -> ChildOutcome:
    """Watch a started child to completion. `on_event` sees each protocol message; returning False stops the
    child. Its process group is killed and its pipes closed on return.

    With a `gate` (the device's), the child is registered while it runs: the first `timing_token` event
    waits for the gate (other sandboxes are stopped while this one times and go on once its `timing` report
    arrives; the gate, and the judge with it, is released when this child is finished), then the child is told
    to go on. Time spent waiting or stopped by another sandbox's timed run does not count against the
    deadlines. `token_allowed` says whether the child may time now (an honest stub asks only after its last
    trial); a request before that is a protocol violation. A standby's
    `standby` message (it waits for its assignment) is not an event. `validate` (the sandbox's: the typed
    wire, `kernelrl.sandbox.protocol`) returns the event as its dataclass, which `on_event` and the outcome
    then see (the runner's own messages too), or raises ValueError: a
    malformed or unknown event is then a protocol violation, and so is one out of the stub's order
    (`EventOrder`). `cancelled()` true (a batch's deadline passed):
    the child is stopped and `outcome.cancelled` set. From the stub's `baseline` message on, its OS threads
    are watched (`ThreadWatch`): one new since then and alive `thread_grace_s` is passed to `on_event` as a
    `native_thread_seen` message of the runner's own (False from it stops the child), so a candidate whose
    call never returns is not left to the run timeout. `stall()` (kernelrl.evaluate.pace): the seconds the
    next report may take from the last handled one, and what is awaited, or None; past it (less the time the
    child was stopped) the child is stopped as timed out in its phase, `outcome.stalled` saying what.
    """
    outcome = ChildOutcome()
    log = LogBuffer(log_limit_bytes)
    started = time.monotonic()
    pgid, log_fd, read_fd, control_w, proc = (child.pgid, child.log_fd, child.proto_fd, child.control_fd,
                                              child.proc)
    if gate is not None:
        gate.register(pgid)
    gate_held = False

    def paused() -> float:
        return gate.paused(pgid) if gate is not None else 0.0

    def own(message: dict) -> Event | dict:
        """A message the runner makes itself, in the form the child's take."""
        return validate(message) if validate is not None else message

    sel = selectors.DefaultSelector()
    sel.register(log_fd, selectors.EVENT_READ, "log")
    sel.register(read_fd, selectors.EVENT_READ, "proto")
    pending = bytearray()
    phase, phase_start, phase_paused = "start", time.monotonic(), paused()
    open_streams = 2
    next_memory_check = next_thread_check = 0.0
    threads: ThreadWatch | None = None
    share_measured = False
    token_asked = False
    order = EventOrder()
    finished = False
    pace = StallWatch(stall, paused) if stall is not None else None
    try:
        while open_streams:
            now = time.monotonic()
            deadline = phase_start + timeouts[phase] + (paused() - phase_paused)
            if now >= deadline:
                outcome.timed_out_phase, outcome.timeout_s = phase, timeouts[phase]
                break
            if cancelled is not None and cancelled():
                outcome.cancelled = True
                break
            late = pace.late(now) if pace is not None else None
            if late is not None:
                outcome.timed_out_phase, (outcome.timeout_s, outcome.stalled) = phase, late
                break
            if memory_limit_bytes and now >= next_memory_check:
                next_memory_check = now + 0.05
                rss = group_rss_bytes(pgid)
                if rss > memory_limit_bytes:
                    outcome.memory_exceeded_bytes = rss
                    break
            # paused from the last trial until the census: the stub's profiler fallback starts CUPTI's threads
            # there, taken as the stub's once its census arrives (a long forward profiles for seconds)
            share_window = token_allowed is not None and token_allowed() and not share_measured
            if threads is not None and now >= next_thread_check and not share_window:
                next_thread_check = now + 0.25
                seen = threads.check(now)
                if seen is not None and not on_event(own(NativeThreadSeenEvent(detail=seen).to_dict())):
                    outcome.stopped_by_parent = True
                    break
            ready = sel.select(timeout=min(0.05, deadline - now))
            if not ready and (proc.poll() is not None if proc is not None else not _group_alive(pgid)):
                break  # exited, pipes drained; a grandchild may still hold them open, it gets killed below
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                if key.data == "log":
                    log.add(chunk)
                    continue
                pending += chunk
                if len(pending) > MAX_PROTOCOL_LINE and b"\n" not in pending:
                    outcome.protocol_error = "protocol message too long"
                    break
                while b"\n" in pending and not outcome.protocol_error:
                    line, _, rest = bytes(pending).partition(b"\n")
                    pending = bytearray(rest)
                    try:
                        raw = json.loads(line)
                        if not isinstance(raw, dict) or not isinstance(raw.get("event"), str):
                            raise ValueError
                    except ValueError:
                        outcome.protocol_error = f"malformed protocol message: {line[:200]!r}"
                        break
                    # the runner's own reads below go to `raw`, whose fields `validate` has checked
                    kind, event = raw["event"], raw
                    if validate is not None:
                        try:
                            event = validate(raw)
                        except ValueError as exc:  # ProtocolError: the candidate's process wrote it
                            outcome.protocol_error = f"malformed {kind[:40]!r} message: {str(exc)[:300]}"
                            break
                    if kind == "standby":
                        continue
                    out_of_order = order.check(kind) if validate is not None else None
                    if out_of_order:
                        outcome.protocol_error = out_of_order
                        break
                    outcome.events.append(event)
                    if kind == "baseline":
                        threads = ThreadWatch(pgid, raw["pid"], raw["tasks"], thread_grace_s)
                    elif kind in ("census", "timing_token"):
                        share_measured = True
                        if raw.get("method") == "profiler" and threads:
                            threads.absorb()  # CUPTI's threads: the stub's own, as it takes them itself
                    if kind in PHASE_AFTER_EVENT:
                        phase, phase_start = PHASE_AFTER_EVENT[kind], time.monotonic()
                        phase_paused = paused()
                    if kind == "timing_token":
                        if token_asked or (token_allowed is not None and not token_allowed()):
                            outcome.protocol_error = "timing token requested out of turn"
                            break
                        token_asked = True
                        on_event(event)  # the evaluator hands its compile slot on; nothing to stop here
                        waited = time.monotonic()
                        if gate is not None:
                            gate.acquire(pgid)  # blocks while another run times on this device
                            gate_held = True
                        phase_start += time.monotonic() - waited
                        # from here, not the child: when timing may start
                        on_event(own({"event": "timing_granted"}))
                        if pace is not None:
                            pace.mark()
                        try:
                            os.write(control_w, b"go\n")
                        except OSError:
                            pass
                        continue
                    if kind == "timing" and gate_held:
                        # its timed calls are over: the stopped sandboxes go on while the judge compares the
                        # checked ones (H100: ~0.085 s of the 0.2 s an evaluation held the device)
                        gate.resume_others()
                    if not on_event(event):
                        outcome.stopped_by_parent = True
                        break
                    if pace is not None:
                        pace.mark()
                    if kind == "done":  # nothing after it counts: not waiting for the exit saves
                        finished = True  # the CUDA context's teardown (~50 ms)
                        break
                if outcome.protocol_error or outcome.stopped_by_parent or finished:
                    break
            if outcome.protocol_error or outcome.stopped_by_parent or finished:
                break
    finally:
        if gate is not None:
            gate.unregister(pgid)
        if gate_held:
            gate.release()
        sel.close()
        outcome.returncode = child.close(log)
    outcome.log, outcome.log_bytes_dropped = log.text(), log.dropped
    outcome.wall_s = time.monotonic() - started
    return outcome
