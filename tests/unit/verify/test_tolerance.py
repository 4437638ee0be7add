"""Tolerances per dtype and their overrides (kernelrl.verify.tolerance)."""

from __future__ import annotations

from kernelrl.verify import tolerance_for


def test_tolerances_per_dtype_and_overrides():
    assert tolerance_for(["float32"]).atol == 1e-4
    assert (tolerance_for(["float16", "float32"]).atol, tolerance_for(["bfloat16"]).rtol) == (1e-2, 1e-2)
    assert tolerance_for(["int64"]).atol == 0.0
    assert tolerance_for(["float32"], {"float32": (1e-3, 2e-3)}).rtol == 2e-3
