"""Persistent SQLite caches owned by an `Evaluator` (stdlib only: the verdict process never imports torch).

- `BaselineCache`: eager and Inductor times of a problem's reference (`baselines.sqlite`).
- `ResultCache`: whole verdicts of identical candidates (`results.sqlite`).

Both degrade to "no cache" with a `CacheWarning` when their database cannot be used (corrupted, locked,
read-only); an evaluation never fails because of a cache.
"""

from kernelrl.cache.keys import (
    baseline_key,
    canonical_code,
    kernelrl_build,
    near_duplicate_code,
    result_key,
    timing_set_of,
)
from kernelrl.cache.store import (
    BaselineCache,
    BaselineEntry,
    CacheStats,
    CacheWarning,
    ResultCache,
    result_cacheable,
)

__all__ = [
    "BaselineCache",
    "BaselineEntry",
    "CacheStats",
    "CacheWarning",
    "ResultCache",
    "baseline_key",
    "canonical_code",
    "near_duplicate_code",
    "kernelrl_build",
    "result_cacheable",
    "result_key",
    "timing_set_of",
]
