"""The host-memory watchdog on the CPU, without RLIMIT_AS: on a GPU the sandbox cannot use RLIMIT_AS (it
breaks CUDA's start-up), so the watchdog alone stops a candidate that grows; here a real child process grows
past the limit, is killed with its group, and the verdict says why."""

from __future__ import annotations

import os
import sys
import time

from kernelrl.evaluate.trials import Trials
from kernelrl.evaluate.verdict import sandbox_verdict
from kernelrl.results import Stage, Status
from kernelrl.sandbox.protocol import TrialPlan
from kernelrl.sandbox.runner import run_child

GROWER = """
import sys, time
chunks = []
# up to 2 GiB, 32 MiB at a time, every page touched (bytearray zero-fills)
for _ in range(64):
    chunks.append(bytearray(32 << 20))
    time.sleep(0.02)
print("grew to 2 GiB unnoticed", flush=True)
time.sleep(60)
"""

PLAN = TrialPlan(index=0, set="check", inputs=[], args=[], timed_only=False)


def test_a_child_that_outgrows_its_memory_is_killed_by_the_watchdog(tmp_path):
    limit = 256 << 20
    started = time.monotonic()
    outcome = run_child([sys.executable, "-c", GROWER], env=dict(os.environ), cwd=str(tmp_path),
                        timeouts={"start": 60, "import": 60, "run": 60}, memory_limit_bytes=limit,
                        log_limit_bytes=4096, on_event=lambda event: True)
    assert outcome.memory_exceeded_bytes is not None and outcome.memory_exceeded_bytes > limit
    assert "unnoticed" not in outcome.log
    assert time.monotonic() - started < 30  # stopped while growing, not by the 60 s deadline
    trials = Trials(judge=None, eval_id="e", out_dir=str(tmp_path), plan=[PLAN], mode="cpu",
                    tol=None, max_bytes=0, policy={})
    verdict = sandbox_verdict(outcome, trials, {"problem_id": "p"}, memory_limit_gb=limit / (1 << 30))
    assert verdict.status is Status.CRASHED and verdict.stage is Stage.IMPORT
    assert "host memory" in verdict.message and "0.25 GiB limit" in verdict.message
    assert verdict.no_verdict  # it never reported ready: in a sandbox, no candidate code would have run yet


def test_without_a_limit_the_same_child_is_left_alone(tmp_path):
    """The watchdog's off switch (memory_limit_bytes=0): the grower reaches its end and says so."""
    outcome = run_child([sys.executable, "-c", GROWER.replace("time.sleep(60)", "")], env=dict(os.environ),
                        cwd=str(tmp_path), timeouts={"start": 60, "import": 60, "run": 60},
                        memory_limit_bytes=0, log_limit_bytes=4096, on_event=lambda event: True)
    assert outcome.memory_exceeded_bytes is None
    assert "grew to 2 GiB unnoticed" in outcome.log
