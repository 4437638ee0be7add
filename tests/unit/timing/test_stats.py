"""Timing summaries refuse forged numbers (kernelrl.timing)."""

from __future__ import annotations

import pytest

from kernelrl.timing import summarize


def test_timing_summary_rejects_forged_numbers():
    stats = summarize({"times_ms": [1.0, 2.0, 3.0, 4.0], "wall_ms": [1.1, 2.1, 3.1, 4.1], "warmup": 3})
    assert stats.median_ms == 2.5 and stats.reps == 4 and stats.wall_median_ms == pytest.approx(2.6)
    for bad in ([], [float("nan")], [-1.0]):
        with pytest.raises(ValueError):
            summarize({"times_ms": bad})
