"""kernelrl.sandbox.gate on the CPU, with real processes: the run slots that mark overlap and keep newcomers
out of an exclusive run, and the device timing token (one timed run at a time; other sandboxes stopped
meanwhile, their deadlines waiting)."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time

import pytest

from kernelrl.sandbox.gate import DeviceGate, RunSlots
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.sandbox.runner import run_child

pytestmark = [pytest.mark.skipif(not pid_namespace_prefix(), reason="needs PID namespaces (unshare)"),
              pytest.mark.slow]


def test_run_slots_mark_overlap_and_an_exclusive_run_waits_then_keeps_newcomers_out():
    slots = RunSlots()
    with slots.shared() as first:
        assert not first.overlapped
        with slots.shared() as second:
            pass
        assert first.overlapped and second.overlapped

    log: list[str] = []
    release_holder, release_exclusive = threading.Event(), threading.Event()

    def holder():
        with slots.shared():
            release_holder.wait(10)

    def exclusive():
        with slots.exclusive():
            log.append("exclusive")
            release_exclusive.wait(10)

    def newcomer():
        with slots.shared():
            log.append("newcomer")

    threads = [threading.Thread(target=holder), threading.Thread(target=exclusive)]
    threads[0].start()
    time.sleep(0.05)
    threads[1].start()
    while not slots._exclusive_waiting:  # the exclusive run is queued behind the holder
        time.sleep(0.01)
    threads.append(threading.Thread(target=newcomer))
    threads[2].start()
    time.sleep(0.1)
    assert log == []  # the holder still runs; the newcomer waits behind the queued exclusive run
    release_holder.set()
    time.sleep(0.1)
    assert log == ["exclusive"]
    release_exclusive.set()
    for thread in threads:
        thread.join(10)
    assert log == ["exclusive", "newcomer"]


# a stand-in child speaking the runner's protocol: asks for the timing token, records when it "timed"
TOKEN_CHILD = textwrap.dedent('''
    import json, os, sys, time
    proto, control = int(os.environ["KERNELRL_PROTO_FD"]), int(os.environ["KERNELRL_CONTROL_FD"])
    os.write(proto, b'{"event": "ready"}\\n{"event": "imported"}\\n{"event": "timing_token"}\\n')
    assert b"go" in os.read(control, 16)
    start = time.monotonic(); time.sleep(0.4); end = time.monotonic()
    os.write(proto, (json.dumps({"event": "timed", "start": start, "end": end}) + "\\n").encode())
    os.write(proto, b'{"event": "done"}\\n')
''')


def _last(outcome, kind: str) -> dict | None:
    """The fake child's last message of a kind (its own kinds: watched without the typed wire)."""
    return next((e for e in reversed(outcome.events) if e["event"] == kind), None)


def _run_fake(code: str, gate, run_timeout: float = 30.0, on_event=lambda e: True):
    return run_child([sys.executable, "-c", code], env={"PATH": os.environ.get("PATH", "")}, cwd="/",
                     timeouts={"start": 30, "import": 30, "run": run_timeout}, memory_limit_bytes=0,
                     log_limit_bytes=4096, on_event=on_event, gate=gate)


def test_timing_token_makes_timed_runs_exclusive():
    gate, windows = DeviceGate(), []

    def one() -> None:
        outcome = _run_fake(TOKEN_CHILD, gate)
        timed = _last(outcome, "timed")
        assert timed is not None, outcome.log
        windows.append((timed["start"], timed["end"]))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    windows.sort()
    assert len(windows) == 3
    for (_, end), (start, _) in zip(windows, windows[1:], strict=False):
        assert start >= end, windows  # no two timed windows overlap


# keeps working (heartbeats) for ~1.5 s of its own time
BUSY_CHILD = textwrap.dedent('''
    import json, os, time
    proto = int(os.environ["KERNELRL_PROTO_FD"])
    os.write(proto, b'{"event": "ready"}\\n{"event": "imported"}\\n')
    for _ in range(75):
        os.write(proto, (json.dumps({"event": "beat", "t": time.monotonic()}) + "\\n").encode())
        time.sleep(0.02)
    os.write(proto, b'{"event": "done"}\\n')
''')


def test_other_sandboxes_are_stopped_during_a_timed_run_and_their_deadline_waits():
    gate = DeviceGate()
    beats, timed = [], {}

    def busy() -> None:
        outcome = _run_fake(BUSY_CHILD, gate, run_timeout=1.9)  # 1.5 s of work + 0.8 s stopped > 1.9 s
        beats.append(outcome)

    def timer() -> None:
        time.sleep(0.5)
        timed["outcome"] = _run_fake(TOKEN_CHILD.replace("time.sleep(0.4)", "time.sleep(0.8)"), gate)

    threads = [threading.Thread(target=busy), threading.Thread(target=timer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcome = beats[0]
    assert outcome.timed_out_phase is None and _last(outcome, "done") is not None, outcome.events[-3:]
    window = _last(timed["outcome"], "timed")
    stamps = [e["t"] for e in outcome.events if e["event"] == "beat"]
    inside = [t for t in stamps if window["start"] + 0.05 < t < window["end"] - 0.05]
    assert not inside, f"the busy sandbox ran during the timed window: {len(inside)} beats"
    assert gate.stops >= 1
    longest = max(b - a for a, b in zip(stamps, stamps[1:], strict=False))
    print(f"\nlongest pause of the busy sandbox: {longest:.2f} s")


# the token child, reporting its timing and then taking a while to finish (as the stub flushing its output)
TIMING_REPORT_CHILD = TOKEN_CHILD.replace(
    """os.write(proto, b'{"event": "done"}\\n')""",
    "os.write(proto, b'{\"event\": \"timing\"}\\n'); time.sleep(0.3); "
    """os.write(proto, b'{"event": "done"}\\n')""")


def test_other_sandboxes_go_on_once_the_timed_run_reports_while_the_judge_stays_held():
    """The evaluator handles a `timing` report (the judge compares the checked timed calls: ~0.085 s of the
    0.2 s an evaluation held the device on an H100) with the other sandboxes running again; the judge's lock
    and the device stay held until the timed child is done, so no judge work and no other timed run starts
    before."""
    assert '"timing"' in TIMING_REPORT_CHILD
    judge = threading.RLock()
    gate = DeviceGate(hold_also=[judge])
    beats, handled = [], {}

    def judge_taken_elsewhere() -> bool:
        got = []

        def take() -> None:
            got.append(judge.acquire(timeout=0.05))
            if got[0]:
                judge.release()

        t = threading.Thread(target=take)
        t.start()
        t.join()
        return not got[0]

    def on_event(event: dict) -> bool:
        if event["event"] == "timing":
            handled["start"] = time.monotonic()
            handled["judge_held"] = judge_taken_elsewhere()
            time.sleep(0.5)  # the judge comparing the checked timed calls
            handled["end"] = time.monotonic()
        return True

    def busy() -> None:
        beats.append(_run_fake(BUSY_CHILD, gate, run_timeout=3.0))

    def timer() -> None:
        time.sleep(0.3)
        handled["outcome"] = _run_fake(TIMING_REPORT_CHILD, gate, on_event=on_event)

    threads = [threading.Thread(target=busy), threading.Thread(target=timer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _last(beats[0], "done") is not None and _last(handled["outcome"], "done") is not None
    window = _last(handled["outcome"], "timed")
    stamps = [e["t"] for e in beats[0].events if e["event"] == "beat"]
    assert not [t for t in stamps if window["start"] + 0.05 < t < window["end"] - 0.05]  # stopped while timed
    during = [t for t in stamps if handled["start"] + 0.05 < t < handled["end"] - 0.05]
    assert len(during) >= 5, f"the busy sandbox stayed stopped while the timing report was handled: {during}"
    assert handled["judge_held"]  # no other judge work meanwhile
    assert judge.acquire(blocking=False)  # and free again once the timed child was done
    judge.release()
