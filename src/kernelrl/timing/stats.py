"""Statistics over raw rep times: the median's relative standard error (adaptive stopping) and a paired
bootstrap speedup. Stdlib only: the verdict process computes them from numbers an untrusted process sent.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from kernelrl.results import PairedSpeedup

_Z95 = 1.959964  # two-sided 95% normal quantile


def validate_times(values: object, name: str = "times") -> list[float]:
    """`values` as a list of floats; ValueError unless it is a non-empty sequence of finite, non-negative
    real numbers (bools and strings are not numbers here)."""
    if not isinstance(values, list | tuple) or not values:
        raise ValueError(f"{name} must be a non-empty list of numbers")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{name} must hold numbers, got {type(v).__name__}")
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be finite and non-negative, got {v!r}")
        out.append(float(v))
    return out


def _at(ordered: Sequence[float], position: float) -> float:
    """Linear interpolation between order statistics at a 0-based (fractional) position, clamped."""
    position = min(max(position, 0.0), len(ordered) - 1.0)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    if ordered[high] == ordered[low]:  # also keeps inf + (inf - inf) * 0 from becoming nan
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median_rse(times: Sequence[float]) -> float:
    """Relative standard error of the median, distribution-free: the order statistics at ranks
    n/2 ± z·√n/2 bound a ~95% confidence interval of the median (binomial argument, no normality assumed,
    insensitive to the long right tail of GPU times), and SE ≈ its width / 2z. `inf` below 2 samples."""
    n = len(times)
    if n < 2:
        return math.inf
    ordered = sorted(times)
    center, offset = (n - 1) / 2, _Z95 * math.sqrt(n) / 2
    se = (_at(ordered, center + offset) - _at(ordered, center - offset)) / (2 * _Z95)
    median = statistics.median(ordered)
    if median <= 0:
        return 0.0 if se == 0 else math.inf
    return se / median


def speedup_rse(candidate_rse: float | None, baseline_rse: float | None) -> float | None:
    """Relative standard error of median(baseline) / median(candidate) from the two medians' own (independent
    series, delta method): sqrt(a^2 + b^2). None when either is unknown."""
    if candidate_rse is None or baseline_rse is None:
        return None
    return math.hypot(candidate_rse, baseline_rse)


def candidate_rse_target(speedup_target: float, baseline_rse: float | None, *, floor: float = 0.25) -> float:
    """The candidate median's RSE at which the speedup's RSE (`speedup_rse`) reaches
    `speedup_target`, the baseline's being fixed (it comes from the baseline cache). Unknown
    baseline RSE: half the variance each (target / sqrt 2). A baseline already near or above
    the target leaves no room: the candidate then aims for `floor` x the target (its timer's
    max_ms bounds the cost) and the reported speedup RSE says what was reached."""
    if not speedup_target > 0:
        raise ValueError(f"speedup_target must be positive, got {speedup_target!r}")
    if baseline_rse is None or not math.isfinite(baseline_rse):
        return speedup_target / math.sqrt(2)
    room = speedup_target ** 2 - max(baseline_rse, 0.0) ** 2
    return max(math.sqrt(room) if room > 0 else 0.0, floor * speedup_target)


def paired_speedup(
    times_a: Sequence[float],
    times_b: Sequence[float],
    *,
    rng: random.Random,
    confidence: float = 0.95,
    resamples: int = 2000,
) -> PairedSpeedup:
    """How much faster A is than B: median(B) / median(A), with a percentile bootstrap confidence interval
    that resamples whole pairs (rep i of A with rep i of B), so drift both saw (clocks, temperature) stays
    paired. `rng` makes the interval reproducible; inputs may come from an untrusted process."""
    a, b = validate_times(times_a, "times_a"), validate_times(times_b, "times_b")
    if len(a) != len(b):
        raise ValueError(f"paired series differ in length: {len(a)} vs {len(b)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if statistics.median(a) <= 0:
        raise ValueError("median of times_a is zero: no speedup is defined")
    n = len(a)
    ratios = []
    for _ in range(resamples):
        picks = rng.choices(range(n), k=n)
        median_a = statistics.median([a[i] for i in picks])
        # a resample of mostly zero times has no ratio; counted as unbounded so the interval shows it
        ratios.append(statistics.median([b[i] for i in picks]) / median_a if median_a > 0 else math.inf)
    ratios.sort()
    tail = (1 - confidence) / 2
    return PairedSpeedup(
        speedup=statistics.median(b) / statistics.median(a),
        ci_low=_at(ratios, tail * (resamples - 1)),
        ci_high=_at(ratios, (1 - tail) * (resamples - 1)),
        confidence=confidence,
        reps=n,
        method=f"median-ratio+paired-percentile-bootstrap-{resamples}",
    )
