"""Per-dtype tolerances; the defaults are KernelBench's (fp32 1e-4, half precision 1e-2)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-4, 1e-4),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    dtype: str


def tolerance_for(dtypes: list[str], overrides: dict[str, tuple[float, float]] | None = None) -> Tolerance:
    """The loosest default among the output dtypes (integers and bools compare exactly)."""
    table = {**DEFAULT_TOLERANCES, **(overrides or {})}
    best = Tolerance(0.0, 0.0, dtypes[0] if dtypes else "none")
    for name in dtypes:
        atol, rtol = table.get(name, (0.0, 0.0))
        if (atol, rtol) > (best.atol, best.rtol):
            best = Tolerance(atol, rtol, name)
    return best
