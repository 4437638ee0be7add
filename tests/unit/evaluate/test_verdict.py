"""Out-of-memory verdicts (kernelrl.evaluate.verdict)."""

from __future__ import annotations

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
