"""Problems (KernelBench format) and suites."""

from kernelrl.problems.problem import Problem, ProblemError, load_problem
from kernelrl.problems.suite import BUILTIN_DIR, Suite, load_suite

__all__ = ["BUILTIN_DIR", "Problem", "ProblemError", "Suite", "load_problem", "load_suite"]
