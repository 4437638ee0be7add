"""The timer's own consistency check (kernelrl.timing.cuda_timer)."""

from __future__ import annotations


def test_event_times_above_wall_times_mean_a_tampered_timer():
    from kernelrl.timing.cuda_timer import events_exceed_wall

    honest = {"times_ms": [1.0, 1.1, 0.9], "wall_ms": [1.2, 1.3, 1.1]}
    launch_bound = {"times_ms": [0.01, 0.01, 0.01], "wall_ms": [0.05, 0.06, 0.05]}
    inflated = {"times_ms": [2.0, 2.1, 2.0], "wall_ms": [1.0, 1.0, 1.0]}
    assert not events_exceed_wall(honest) and not events_exceed_wall(launch_bound)
    assert events_exceed_wall(inflated)
    assert events_exceed_wall({"times_ms": [1.0]})  # no wall times: not trusted
