"""Benchmark metrics, the KernelBench-compatible export and the HTML report of a run directory."""

from kernelrl.report.html import render_html, write_best_kernels, write_report
from kernelrl.report.kernelbench import kernelbench_results, write_eval_results
from kernelrl.report.metrics import (
    FAST_P,
    Metrics,
    ProblemSummary,
    compute_metrics,
    metrics_by_level,
    pass_at_k,
    problem_summaries,
)

__all__ = [
    "FAST_P",
    "Metrics",
    "ProblemSummary",
    "compute_metrics",
    "kernelbench_results",
    "metrics_by_level",
    "pass_at_k",
    "problem_summaries",
    "render_html",
    "write_best_kernels",
    "write_eval_results",
    "write_report",
]
