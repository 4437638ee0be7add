"""Benchmark metrics, the KernelBench-compatible export and the HTML report of a run directory (a bench or
agent run, or a training run: `kernelrl.report.training`)."""

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
from kernelrl.report.training import (
    TrainingRun,
    is_training_run,
    load_training_run,
    render_training_html,
    training_summary,
    write_training_report,
)

__all__ = [
    "FAST_P",
    "Metrics",
    "ProblemSummary",
    "TrainingRun",
    "compute_metrics",
    "is_training_run",
    "kernelbench_results",
    "load_training_run",
    "metrics_by_level",
    "pass_at_k",
    "problem_summaries",
    "render_html",
    "render_training_html",
    "training_summary",
    "write_best_kernels",
    "write_eval_results",
    "write_report",
    "write_training_report",
]
