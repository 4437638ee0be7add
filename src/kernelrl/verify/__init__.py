"""Verification: tolerances (here) and output comparison (`kernelrl.verify.compare`, which needs torch and
runs in the trusted judge process, so it is not imported by the verdict process)."""

from kernelrl.verify.tolerance import Tolerance, tolerance_for

__all__ = ["Tolerance", "tolerance_for"]
