"""Verdicts of kernelrl.evaluate.verdict: out of memory, the speed-of-light floor, audit refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelrl import EvalResult, Stage, Status
from kernelrl.results import TimingReport

# texts from an H100 with six 1 GiB evaluations at once
_JUDGE_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
              "capacity of 79.18 GiB of which 353.06 MiB is free.")
_SANDBOX_OOM = ('RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at '
                '"/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135, please report a bug to PyTorch.')


@pytest.mark.parametrize("status, stage, message, feedback, log, timing_reason, expected", [
    (Status.RUNTIME_ERROR, Stage.REFERENCE, "the problem's reference failed", _JUDGE_OOM, "", None, True),
    (Status.RUNTIME_ERROR, Stage.REFERENCE, "the sandbox could not reproduce the problem's inputs",
     f"the inputs could not be drawn: {_SANDBOX_OOM}", "", None, True),
    (Status.RUNTIME_ERROR, Stage.TIMING, f"RuntimeError while timing forward: {_SANDBOX_OOM[14:]}", "", "",
     None, True),
    (Status.CRASHED, Stage.IMPORT, "the candidate process exited with code 71 before reporting all results",
     "", "kernelrl sandbox init failed: RuntimeError('CUDA error: out of memory')", None, True),
    (Status.CORRECT, Stage.DONE, "correct", "", "", f"baselines failed: {_JUDGE_OOM}", True),
    (Status.CORRECT, Stage.DONE, "correct", "", "", "torch.compile failed: no Triton", False),
    (Status.RUNTIME_ERROR, Stage.CORRECTNESS, "IndexError while running forward: index 9 out of range", "",
     "", None, False),
    # not an error
    (Status.WRONG_OUTPUT, Stage.CORRECTNESS, "wrong output", "out of memory", "", None, False),
    (Status.CRASHED, Stage.CORRECTNESS, "killed by SIGSEGV", "", "segmentation fault", None, False),
])
def test_out_of_memory_verdicts_are_recognized(status, stage, message, feedback, log, timing_reason,
                                               expected):
    from kernelrl.evaluate.verdict import ran_out_of_memory

    result = EvalResult(status=status, stage=stage, problem_id="p", message=message, feedback=feedback,
                        log=log,
                        timing=TimingReport(unavailable_reason=timing_reason) if timing_reason else None)
    assert ran_out_of_memory(result) is expected


@pytest.mark.parametrize("median_ms, rejected", [(0.004, True), (0.02, False)])
def test_a_time_under_the_speed_of_light_floor_is_hack_detected(tmp_path, median_ms, rejected):
    """The floor (input bytes over the measured bandwidth) bounds any time claimed. The timer reads only
    functions it took before the candidate's import (rt-timer-patched names a replacement), so no candidate in
    the corpus reaches it: its check is tested on a report as the timer would give it."""
    from kernelrl.evaluate.trials import Trials
    from kernelrl.evaluate.verdict import timing_checks
    from kernelrl.results import TimingStats

    stats = TimingStats(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms, max_ms=median_ms,
                        iqr_ms=0.0, rel_spread=0.0, reps=20, warmup=3, method="cuda-events",
                        wall_median_ms=0.05)
    verdict = EvalResult(status=Status.CORRECT, stage=Stage.DONE, problem_id="level0/1_relu",
                         message="correct",
                         timing=TimingReport(candidate=stats, floor_ms=0.01, kernel_gpu_fraction=0.99))
    trials = Trials(judge=None, eval_id="e", out_dir=str(tmp_path), plan=[], mode="gpu", tol=None,
                    max_bytes=0, policy={})
    result = timing_checks(verdict, trials, min_kernel_gpu_fraction=0.5)
    assert (result.status is Status.HACK_DETECTED) is rejected, result.message
    assert [f.rule for f in result.findings] == (["rt-below-speed-of-light"] if rejected else [])
    if rejected:
        assert result.stage is Stage.TIMING and "0.0040 ms < floor 0.0100 ms" in result.findings[0].detail


@pytest.mark.parametrize("detail, refused", [
    ("an all-zeros answer passes", True),
    ("the judge failed: the judge process exited", False),
    ("torch.OutOfMemoryError: CUDA out of memory", False),
])
def test_an_audit_the_machine_failed_is_no_verdict_and_no_refusal(detail, refused):
    """A problem the audit refuses cannot grade any completion (`problem_refused`: the curriculum drops it);
    an audit the machine failed (the judge died, out of memory) says nothing about the problem: no verdict."""
    from kernelrl.evaluate.verdict import before_running
    from kernelrl.problems.audit import AuditFlag, ProblemAudit

    flag = "zeros_pass" if refused else "reference_raises"
    audit = ProblemAudit("p", "sha", (AuditFlag(flag, "check", detail),))
    code = (Path(__file__).parents[3] / "src/kernelrl/examples/relu_triton.py").read_text()
    result = before_running(code, {"problem_id": "p"}, mode="cpu", audit=lambda: audit, static_checks=False,
                            rule_policy=None)
    assert result.status is Status.UNSUPPORTED and result.stage is Stage.REFERENCE
    assert (result.no_verdict, result.problem_refused) == (not refused, refused)
