"""Timing: a CUDA-event timer shared by the candidate's sandbox and the trusted baseline process, and
torch-free statistics over its raw numbers."""

from kernelrl.timing.cuda_timer import GRAPH_METHOD, METHOD, TimerSettings, summarize, time_cuda, time_paired
from kernelrl.timing.stats import median_rse, paired_speedup

__all__ = ["GRAPH_METHOD", "METHOD", "TimerSettings", "median_rse", "paired_speedup", "summarize",
           "time_cuda", "time_paired"]
