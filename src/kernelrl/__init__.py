"""kernelrl: evaluate, reward and train LLM-written GPU kernels against PyTorch references."""

from kernelrl._version import __version__
from kernelrl.candidates import Candidate
from kernelrl.evaluate import (
    EvalConfig,
    EvalItem,
    Evaluator,
    EvaluatorError,
    EvaluatorSettings,
    MultiDeviceEvaluator,
    Scorer,
    VerdictSettings,
    evaluate,
    open_scorer,
)
from kernelrl.problems import Problem, ProblemError, Suite, load_problem, load_suite
from kernelrl.results import EvalResult, Stage, Status

__all__ = [
    "Candidate",
    "EvalConfig",
    "EvalItem",
    "EvalResult",
    "Evaluator",
    "EvaluatorError",
    "EvaluatorSettings",
    "MultiDeviceEvaluator",
    "Problem",
    "ProblemError",
    "Scorer",
    "Stage",
    "Status",
    "Suite",
    "VerdictSettings",
    "evaluate",
    "load_problem",
    "load_suite",
    "open_scorer",
    "__version__",
]
