"""Timing: a CUDA-event timer shared by the candidate's sandbox and the trusted baseline process."""

from kernelrl.timing.cuda_timer import METHOD, TimerSettings, summarize, time_cuda

__all__ = ["METHOD", "TimerSettings", "summarize", "time_cuda"]
