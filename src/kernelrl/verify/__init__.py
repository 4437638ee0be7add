"""Verification: tolerances and output comparison (run by the trusted judge process)."""

from kernelrl.verify.compare import compare_outputs, compare_tensors, inputs_mutated
from kernelrl.verify.tolerance import Tolerance, tolerance_for

__all__ = ["Tolerance", "compare_outputs", "compare_tensors", "inputs_mutated", "tolerance_for"]
