"""The child runner (kernelrl.sandbox.runner): its protocol, memory watchdog, malformed messages and
timeouts, log buffer."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kernelrl.sandbox.runner import LogBuffer, run_child


def _run(code: str, **kw):
    events = []
    outcome = run_child([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin"}, cwd=str(Path.cwd()),
                        timeouts={"start": 10, "import": 10, "run": 10}, memory_limit_bytes=kw.get("mem", 0),
                        log_limit_bytes=1000, on_event=lambda e: events.append(e) or True)
    return outcome, events


def test_runner_reads_protocol_and_ignores_exit_code():
    code = ("import os, json, time; fd = int(os.environ['KERNELRL_PROTO_FD']); print('hi', flush=True); "
            "time.sleep(0.2); os.write(fd, b'{\"event\": \"ready\"}\\n{\"event\": \"done\"}\\n'); "
            "time.sleep(30); raise SystemExit(7)")
    started = time.monotonic()
    outcome, events = _run(code)
    assert [e["event"] for e in events] == ["ready", "done"] and "hi" in outcome.log
    # "done" ends the run: the child is killed rather than waited for, and its exit code means nothing
    assert time.monotonic() - started < 20 and outcome.returncode != 7


def test_runner_memory_watchdog_kills_a_hog():
    code = ("import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(50 << 20))\n"
            "    time.sleep(0.01)\n")
    outcome, _ = _run(code, mem=300 << 20)
    assert outcome.memory_exceeded_bytes > 300 << 20 and outcome.returncode < 0


@pytest.mark.slow  # waits out its timeouts
def test_runner_flags_malformed_protocol_and_timeouts():
    outcome, _ = _run("import os; os.write(int(os.environ['KERNELRL_PROTO_FD']), b'not json\\n')")
    assert "malformed" in outcome.protocol_error
    outcome, _ = _run("while True: pass")
    assert outcome.timed_out_phase == "start" and outcome.timeout_s == 10


def test_log_buffer_keeps_head_and_tail():
    log = LogBuffer(10)
    for chunk in (b"HEAD-", b"x" * 1000, b"-TAIL"):
        log.add(chunk)
    assert log.text().startswith("HEAD-") and log.text().endswith("-TAIL") and log.dropped == 1000
