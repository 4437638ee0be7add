"""CUDA-event timing with an L2 flush and a device-wide sync inside each timed region.

`time_cuda` takes the synchronize function, event class and host clock as arguments: the sandbox stub
captures them before the candidate is imported, so a candidate that patches `torch.cuda.synchronize` or
`time.perf_counter` at import does not change what the timer calls.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelrl.results import TimingStats

METHOD = "cuda-events+l2-flush+device-sync"


@dataclass(frozen=True)
class TimerSettings:
    # lets the clocks leave idle (345 MHz idle, 1980 MHz busy on an H100); 1-3 s warm-ups measured no better
    warmup_ms: float = 200.0  # run at least this long (and 3 calls) before timing
    target_ms: float = 1000.0  # timed work aimed for; sets the rep count from the warm-up estimate
    min_reps: int = 20
    max_reps: int = 1000


def time_cuda(
    fn: Callable[[], Any],
    *,
    torch: Any,
    synchronize: Callable[[], None],
    event_cls: type,
    clock: Callable[[], float],
    settings: TimerSettings = TimerSettings(),
    prepare: Callable[[], None] | None = None,
    inspect: Callable[[int | None, int, Any], None] | None = None,
) -> dict:
    """Time `fn()` on the current CUDA device; return raw per-rep times (ms) and warm-up count.

    `prepare()` runs before each rep outside the timed region (the sandbox refills the inputs there);
    `inspect(i, reps, result)` gets each rep's return value after the rep (`i` is None during warm-up)."""
    device = torch.cuda.current_device()
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 << 20
    # twice the L2 so a zero-fill evicts everything the previous rep left there
    flush = torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device="cuda")

    def timed_rep(i: int | None, reps: int) -> tuple[float, float]:
        if prepare is not None:
            prepare()
        flush.zero_()
        start, end = event_cls(enable_timing=True), event_cls(enable_timing=True)
        t0 = clock()
        start.record()
        result = fn()
        synchronize()  # device-wide: work on any stream belongs to this rep
        end.record()
        t1 = clock()
        end.synchronize()
        if inspect is not None:
            inspect(i, reps, result)
        del result
        return start.elapsed_time(end), (t1 - t0) * 1e3

    synchronize()
    warm_times: list[float] = []
    warm_start = clock()
    while len(warm_times) < 3 or (clock() - warm_start) * 1e3 < settings.warmup_ms:
        warm_times.append(timed_rep(None, 0)[0])
        if len(warm_times) >= 1000:
            break
    estimate = max(statistics.median(warm_times), 1e-3)
    reps = min(settings.max_reps, max(settings.min_reps, math.ceil(settings.target_ms / estimate)))
    times, walls = [], []
    for i in range(reps):
        event_ms, wall_ms = timed_rep(i, reps)
        times.append(event_ms)
        walls.append(wall_ms)
    return {"times_ms": times, "wall_ms": walls, "warmup": len(warm_times), "method": METHOD}


def summarize(raw: dict) -> TimingStats:
    """Turn raw rep times (as returned by `time_cuda`, possibly from an untrusted process) into stats."""
    times = [float(t) for t in raw["times_ms"]]
    if not times or not all(math.isfinite(t) and t >= 0 for t in times):
        raise ValueError("timing data must be a non-empty list of finite, non-negative numbers")
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    median = statistics.median(times)
    walls = [float(t) for t in raw.get("wall_ms") or []]
    return TimingStats(
        median_ms=median,
        mean_ms=statistics.fmean(times),
        min_ms=min(times),
        max_ms=max(times),
        iqr_ms=quartiles[2] - quartiles[0],
        rel_spread=(quartiles[2] - quartiles[0]) / median if median > 0 else 0.0,
        reps=len(times),
        warmup=int(raw.get("warmup", 0)),
        method=str(raw.get("method", METHOD))[:64],
        wall_median_ms=statistics.median(walls) if walls else None,
    )


def events_exceed_wall(raw: dict) -> bool:
    """True when the event times cannot be real: each rep's events lie inside its wall-clock interval, so an
    event time above the wall time (beyond clock noise) means the event functions were tampered with."""
    times = [float(t) for t in raw.get("times_ms") or []]
    walls = [float(t) for t in raw.get("wall_ms") or []]
    if not times or len(walls) != len(times):
        return bool(times)  # a report without wall times is not trusted either
    return statistics.median(times) > 1.05 * statistics.median(walls) + 0.02
