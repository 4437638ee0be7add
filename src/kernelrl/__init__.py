"""kernelrl: evaluate, reward and train LLM-written GPU kernels against PyTorch references."""

__version__ = "0.1.0"

from kernelrl.evaluate import EvalConfig, Evaluator, EvaluatorError, evaluate  # noqa: E402
from kernelrl.problems import Problem, ProblemError, Suite, load_problem, load_suite  # noqa: E402
from kernelrl.results import EvalResult, Stage, Status  # noqa: E402

__all__ = [
    "EvalConfig",
    "EvalResult",
    "Evaluator",
    "EvaluatorError",
    "Problem",
    "ProblemError",
    "Stage",
    "Status",
    "Suite",
    "evaluate",
    "load_problem",
    "load_suite",
]
