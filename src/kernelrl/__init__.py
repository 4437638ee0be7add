"""kernelrl: evaluate, reward and train LLM-written GPU kernels against PyTorch references."""

from kernelrl._version import __version__
from kernelrl.candidates import Candidate
from kernelrl.evaluate import EvalConfig, Evaluator, EvaluatorError, MultiDeviceEvaluator, Scorer, evaluate
from kernelrl.problems import Problem, ProblemError, Suite, load_problem, load_suite
from kernelrl.results import EvalResult, Stage, Status

__all__ = [
    "Candidate",
    "EvalConfig",
    "EvalResult",
    "Evaluator",
    "EvaluatorError",
    "MultiDeviceEvaluator",
    "Problem",
    "ProblemError",
    "Scorer",
    "Stage",
    "Status",
    "Suite",
    "evaluate",
    "load_problem",
    "load_suite",
    "__version__",
]
