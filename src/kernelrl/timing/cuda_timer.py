"""CUDA-event timing with an L2 flush, a launch cover and a device-wide sync after each timed region.

`time_cuda` and `time_paired` take torch, the synchronize function, event class and host clock as arguments:
the sandbox stub captures them before the candidate is imported, so a candidate that patches
`torch.cuda.synchronize` or `time.perf_counter` at import does not change what the timer calls.

Each rep: `prepare()`, the L2 flush (a read of twice the L2, so the cache is cold *and clean*: a zero-fill
left it full of dirty lines whose write-back then ran inside the next rep), a spin kernel, start event, the
call, end event, device-wide sync. The launch cover: `prepare()`'s GPU work (the sandbox's input refill), the
flush and the spin together queue `launch_cover_us` of GPU work ahead of the call, so the GPU stays busy while
the host enqueues the start event and the call; the first launch's host latency and its jitter stay out of the
number, while a forward that takes longer than the cover to enqueue still shows its gaps. The warm-up
measures how long `prepare()` and the flush take and how fast the spin runs; the timed reps spin for the rest.

Modes: 'events' times the callable; 'cuda-graph' captures it once into a CUDA graph and times the replays
(no Python or launch overhead in the numbers; the callable's Python runs once, at capture).
Rep count: fixed, from the warm-up estimate and `target_ms`; or adaptive (`rse_target`): batches until the
median's relative standard error (`stats.median_rse`) reaches the target, or `max_reps` / `max_ms`.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelrl.results import TimingStats
from kernelrl.timing.stats import median_rse, validate_times

MODES = ("events", "cuda-graph")
HOST_MODE = "host"  # `time_host`: the host clock around each call (CPU mode: tests and scheduling, not speed)
STOP_REASONS = ("fixed", "rse", "max_reps", "max_ms")
_GRAPH_WARMUP = 3  # untimed replays after capture: the first launch of a graph also uploads it
# the spin's speed until the warm-up has measured it: an H100's boost clock (the spin counts SM cycles)
_NOMINAL_CYCLES_PER_US = 1980.0
_MAX_SPIN_CYCLES = 50_000_000

Inspect = Callable[[int | None, int, Any], None]


@dataclass(frozen=True)
class TimerSettings:
    # lets the clocks leave idle (345 MHz idle, 1980 MHz busy on an H100); 1-3 s warm-ups measured no better.
    # 50 + 100 ms: level-1 rerun spread 0.06% median, 0.27% p90 on an H100 with the sandbox's per-rep input
    # refill (100 + 300: 0.05% / 0.38%; 25 + 50: 0.07% / 0.87%; 3 reruns)
    warmup_ms: float = 50.0  # run at least this long (and 3 calls) before timing
    target_ms: float = 100.0  # fixed count: timed work aimed for; the warm-up estimate turns it into reps
    min_reps: int = 20
    max_reps: int = 1000
    # adaptive: after min_reps, time in batches until the median's relative standard error is at most
    # this (e.g. 0.005); None: a fixed rep count, as target_ms sets it
    rse_target: float | None = None
    max_ms: float = 5000.0  # adaptive: no further batch once the timed reps would exceed this (host clock)
    # GPU work queued ahead of each call: prepare()'s, the flush's and a spin kernel's for the rest; 0: no
    # spin. The host needs 75-250 us from enqueueing the spin to the call's return on level 1, in some reruns
    # 400-800 us at the p90: with 100 us of spin (~240 us of queued work on level 1) those reruns landed up to
    # 7% slow (rerun spread p90 0.88%, worst 7.3%); 300 us of spin (~440 us): p90 0.22%, worst 0.82%; 1 ms:
    # 0.21%, 0.76% (H100). Host work of the call that fits in the cover is not timed.
    launch_cover_us: float = 400.0
    l2_flush: str = "read"  # "read": leaves the L2 clean; "write" (zero-fill, as Triton's do_bench): dirty

    def __post_init__(self) -> None:
        if not 1 <= self.min_reps <= self.max_reps:
            raise ValueError(f"need 1 <= min_reps <= max_reps, got {self.min_reps}, {self.max_reps}")
        if self.rse_target is not None and not self.rse_target > 0:
            raise ValueError(f"rse_target must be positive, got {self.rse_target!r}")
        if not self.max_ms > 0:
            raise ValueError(f"max_ms must be positive, got {self.max_ms!r}")
        if not 0 <= self.launch_cover_us <= 20_000:
            raise ValueError(f"launch_cover_us must be in [0, 20000], got {self.launch_cover_us!r}")
        if self.l2_flush not in ("read", "write"):
            raise ValueError(f"l2_flush must be 'read' or 'write', got {self.l2_flush!r}")


def method_name(mode: str, settings: TimerSettings) -> str:
    """What produced the numbers: the mode and the rep's recipe (part of the baseline cache's key)."""
    cover = f"+cover-{settings.launch_cover_us:g}us" if settings.launch_cover_us else ""
    start = {"events": "cuda-events", "cuda-graph": "cuda-graph-replay"}[mode]
    return f"{start}+l2-{settings.l2_flush}-flush{cover}+sync-after-end"


METHOD = method_name("events", TimerSettings())
GRAPH_METHOD = method_name("cuda-graph", TimerSettings())


@dataclass(frozen=True)
class TimerOps:
    """The torch functions the timer calls, taken when `capture` runs: the sandbox stub captures them before
    the candidate is imported, so a candidate that patches `torch.sum` (no flush: a warm L2) or
    `torch.cuda.Event.elapsed_time` (any time it likes) changes neither the rep nor its reading."""

    reduce_sum: Callable[..., Any]
    spin: Callable[[int], None]
    zeros: Callable[..., Any]
    empty: Callable[..., Any]
    record: Callable[[Any], None]  # Event.record, called with the event
    elapsed: Callable[[Any, Any], float]  # Event.elapsed_time, called with the start and end events

    @classmethod
    def capture(cls, torch: Any) -> TimerOps:
        event = torch.cuda.Event
        return cls(reduce_sum=torch.sum, spin=torch.cuda._sleep, zeros=torch.zeros, empty=torch.empty,
                   record=event.record, elapsed=event.elapsed_time)


def time_cuda(
    fn: Callable[[], Any],
    *,
    torch: Any,
    synchronize: Callable[[], None],
    event_cls: type,
    clock: Callable[[], float],
    settings: TimerSettings = TimerSettings(),
    prepare: Callable[[], None] | None = None,
    inspect: Inspect | None = None,
    mode: str = "events",
    ops: TimerOps | None = None,
) -> dict:
    """Time `fn()` on the current CUDA device; return raw per-rep times (ms) and how they were taken.

    `prepare()` runs before each rep outside the timed region (the sandbox refills the inputs there);
    `inspect(i, reps, result)` gets each rep's return value after the rep: `i` is None during warm-up;
    `reps` is the number of reps planned so far, all of which run (the total with a fixed count; growing
    batch by batch when adaptive). In 'cuda-graph' mode `result` is the graph's static output, which every
    replay rewrites.

    Raw dict: times_ms, wall_ms (host clock around each rep), warmup (untimed calls), method, mode (the
    mode that produced the numbers), stopped ('fixed' | 'rse' | 'max_reps' | 'max_ms'), rse (of the median,
    None below 2 reps), host_ms (where the host clock went: setup, warmup, reps; diagnostics), cover_us
    (the launch cover's parts in the timed reps: prefix = prepare() + flush, as the warm-up measured them,
    and spin; None without a cover), and graph_error when the capture failed and the callable was timed with
    events."""
    (raw,), _ = _time([fn], [inspect], torch=torch, synchronize=synchronize, event_cls=event_cls, clock=clock,
                      settings=settings, prepare=prepare, mode=mode, rng=None, ops=ops)
    return raw


def time_paired(
    fn_a: Callable[[], Any],
    fn_b: Callable[[], Any],
    *,
    torch: Any,
    synchronize: Callable[[], None],
    event_cls: type,
    clock: Callable[[], float],
    rng: random.Random,
    settings: TimerSettings = TimerSettings(),
    prepare: Callable[[], None] | None = None,
    inspect: Inspect | None = None,
    mode: str = "events",
    ops: TimerOps | None = None,
) -> dict:
    """Time `fn_a` and `fn_b` interleaved: rep i runs both back to back, in an order drawn from `rng`, so
    drift (clocks, temperature, other work on the device) reaches both alike; `stats.paired_speedup` turns
    the two series into a speedup of A over B with a confidence interval.

    A is the callable under test, B the baseline: `prepare()` runs before every call of either (they share
    the inputs), `inspect` sees A's results only. With a fixed count, `target_ms` covers a pair; adaptive
    stopping waits for both medians. In 'cuda-graph' mode both are captured, and if either capture fails
    both are timed with events. Returns {"a": raw, "b": raw, "order": ["ab" | "ba", one per pair]}, each
    raw as `time_cuda` returns it."""
    (raw_a, raw_b), order = _time([fn_a, fn_b], [inspect, None], torch=torch, synchronize=synchronize,
                                  event_cls=event_cls, clock=clock, settings=settings, prepare=prepare,
                                  mode=mode, rng=rng, ops=ops)
    return {"a": raw_a, "b": raw_b, "order": order}


def time_host(
    fn: Callable[[], Any],
    *,
    clock: Callable[[], float],
    settings: TimerSettings = TimerSettings(),
    prepare: Callable[[], None] | None = None,
    inspect: Inspect | None = None,
) -> dict:
    """Time `fn()` with the host clock alone (no device: CPU mode, the Triton interpreter). The same warm-up,
    rep count and adaptive stopping (`rse_target`, `max_reps`, `max_ms`) as `time_cuda`, so the stopping rule,
    the timing token and the timed-call checks run for real on a machine without a GPU; the numbers say how
    long the interpreter took, never how fast a kernel is. Returns the raw dict `time_cuda` returns, with
    times_ms = wall_ms and mode 'host'."""
    began = clock()

    def rep(i: int | None, reps: int) -> float:
        if prepare is not None:
            prepare()
        t0 = clock()
        result = fn()
        elapsed = (clock() - t0) * 1e3
        if inspect is not None:
            inspect(i, reps, result)
        return elapsed

    host_ms = {"setup": (clock() - began) * 1e3}
    warm: list[float] = []
    warm_start = clock()
    while len(warm) < 3 or (clock() - warm_start) * 1e3 < settings.warmup_ms:
        warm.append(rep(None, 0))
        if len(warm) >= 1000:
            break
    host_ms["warmup"] = (clock() - warm_start) * 1e3
    planned = min(settings.max_reps,
                  max(settings.min_reps, math.ceil(settings.target_ms / max(statistics.median(warm), 1e-3))))
    times: list[float] = []

    def step(i: int, reps: int) -> None:
        times.append(rep(i, reps))

    reps_start = clock()
    stopped = _run_reps(step, planned, settings, clock, [times])
    host_ms["reps"] = (clock() - reps_start) * 1e3
    rse = median_rse(times)
    return {"times_ms": times, "wall_ms": list(times), "warmup": len(warm), "method": "host-clock",
            "mode": HOST_MODE, "stopped": stopped, "rse": rse if math.isfinite(rse) else None,
            "host_ms": {k: round(v, 3) for k, v in host_ms.items()}, "cover_us": None}


def _capture(torch: Any, fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn()` captured into a CUDA graph on a side stream; returns a replay that returns the static output."""
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    # the outer context restores the current stream even when a failed capture skips the inner one's exit
    with torch.cuda.stream(side), torch.cuda.graph(graph, stream=side):
        out = fn()
    torch.cuda.current_stream().wait_stream(side)

    def replay() -> Any:
        graph.replay()
        return out

    return replay


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _time(fns: list, inspects: list, *, torch: Any, synchronize: Callable[[], None], event_cls: type,
          clock: Callable[[], float], settings: TimerSettings, prepare: Callable[[], None] | None, mode: str,
          rng: random.Random | None, ops: TimerOps | None) -> tuple[list[dict], list[str]]:
    """Time one callable, or several interleaved (rep order shuffled by `rng`); one raw dict per callable."""
    if mode not in MODES:
        raise ValueError(f"unknown timing mode {mode!r}; use one of {MODES}")
    ops = ops or TimerOps.capture(torch)
    began = clock()
    device = torch.cuda.current_device()
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 << 20
    # twice the L2, so reading (or zero-filling) it evicts everything the previous rep left there
    flush_buffer = ops.zeros(2 * l2_bytes // 4, dtype=torch.float32, device="cuda")
    flush_sink = ops.empty((), dtype=torch.float32, device="cuda")

    # the spin's length: at first the whole cover at the nominal clock; after the warm-up, what prepare() and
    # the flush leave of the cover, at the speed the spin ran
    cover = {"cycles": round(settings.launch_cover_us * _NOMINAL_CYCLES_PER_US)}
    probes: list[tuple[float, float]] | None = [] if settings.launch_cover_us else None

    def timed_rep(call: Callable[[], Any], inspect: Inspect | None, i: int | None,
                  reps: int) -> tuple[float, float]:
        # warm-up: how long the cover's parts take
        probe = probes is not None and i is None and not calibrated
        if probe:
            before, flushed = event_cls(enable_timing=True), event_cls(enable_timing=True)
            ops.record(before)
        if prepare is not None:
            prepare()
        if settings.l2_flush == "read":
            ops.reduce_sum(flush_buffer, dim=0, out=flush_sink)
        else:
            flush_buffer.zero_()
        if probe:
            ops.record(flushed)
        if cover["cycles"]:
            ops.spin(cover["cycles"])
        start, end = event_cls(enable_timing=True), event_cls(enable_timing=True)
        t0 = clock()
        ops.record(start)
        result = call()
        # the end event right behind the call on its stream, then the device-wide sync: recording it after the
        # sync put the sync's host round trip into every rep (level-1 rerun spread in cuda-graph mode 1.76% ->
        # 0.75% on an H100); work on other streams is in the wall time and behind the deferred-write check
        ops.record(end)
        synchronize()
        t1 = clock()
        if probe:
            probes.append((ops.elapsed(before, flushed), ops.elapsed(flushed, start)))
        if inspect is not None:
            inspect(i, reps, result)
        del result
        return ops.elapsed(start, end), (t1 - t0) * 1e3

    def warm_rep(calls: list) -> list[float]:
        return [timed_rep(call, inspect, None, 0)[0] for call, inspect in zip(calls, inspects, strict=True)]

    synchronize()
    host_ms = {"setup": (clock() - began) * 1e3}
    warm: list[list[float]] = []  # one row per warm-up round, one column per callable
    warm_start = clock()
    calibrated = False
    while len(warm) < 3 or (clock() - warm_start) * 1e3 < settings.warmup_ms:
        warm.append(warm_rep(fns))
        if len(warm) >= 1000:
            break
    calibrated = True
    cover_us = None
    if probes:
        prefix_us = 1e3 * statistics.median(p for p, _ in probes)
        spun_us = 1e3 * min(s for _, s in probes)  # the fastest: the host was on time, the clock up
        per_us = cover["cycles"] / spun_us if spun_us > 0 else _NOMINAL_CYCLES_PER_US
        spin_us = max(0.0, settings.launch_cover_us - prefix_us)
        cover["cycles"] = min(_MAX_SPIN_CYCLES, round(spin_us * per_us))
        cover_us = {"prefix": round(prefix_us, 1), "spin": round(spin_us, 1)}
    calls, warmup, graph_error = fns, len(warm), None
    if mode == "cuda-graph":
        try:
            replays = [_capture(torch, fn) for fn in fns]
            warm = [warm_rep(replays) for _ in range(_GRAPH_WARMUP)]  # replay times set the rep count
        except Exception as exc:  # noqa: BLE001 - uncapturable (host syncs...) is not a failure
            # a failed capture's exit error ("previous error during capture") follows what broke the capture
            graph_error = " -> ".join(_one_line(e) for e in (exc.__context__, exc) if e is not None)[:300]
            mode = "events"
        else:
            calls, warmup = replays, warmup + _GRAPH_WARMUP
    host_ms["warmup"] = (clock() - warm_start) * 1e3
    estimate = sum(max(statistics.median(column), 1e-3) for column in zip(*warm, strict=True))
    planned = min(settings.max_reps, max(settings.min_reps, math.ceil(settings.target_ms / estimate)))

    times: list[list[float]] = [[] for _ in calls]
    walls: list[list[float]] = [[] for _ in calls]
    order: list[str] = []

    def step(i: int, reps: int) -> None:
        ks = list(range(len(calls)))
        if rng is not None:
            rng.shuffle(ks)
            order.append("".join("ab"[k] for k in ks))
        for k in ks:
            event_ms, wall_ms = timed_rep(calls[k], inspects[k], i, reps)
            times[k].append(event_ms)
            walls[k].append(wall_ms)

    reps_start = clock()
    stopped = _run_reps(step, planned, settings, clock, times)
    host_ms["reps"] = (clock() - reps_start) * 1e3
    method = method_name(mode, settings)
    raws = []
    for series, series_walls in zip(times, walls, strict=True):
        rse = median_rse(series)
        raw = {"times_ms": series, "wall_ms": series_walls, "warmup": warmup, "method": method,
               "mode": mode, "stopped": stopped, "rse": rse if math.isfinite(rse) else None,
               "host_ms": {k: round(v, 3) for k, v in host_ms.items()}, "cover_us": cover_us}
        if graph_error is not None:
            raw["graph_error"] = graph_error
        raws.append(raw)
    return raws, order


def _run_reps(step: Callable[[int, int], None], planned: int, settings: TimerSettings,
              clock: Callable[[], float], series: list[list[float]]) -> str:
    """Call `step(i, reps)` for i = 0, 1, ...: `planned` times, or (adaptive) in batches until every series'
    median reaches `rse_target`. `reps` is the count planned so far; every rep up to it runs. Batches grow
    the count by a quarter, trimmed to what `max_ms` still holds at the pace so far. Returns why it
    stopped."""
    if settings.rse_target is None:
        for i in range(planned):
            step(i, planned)
        return "fixed"
    start, done, planned = clock(), 0, settings.min_reps
    while True:
        for i in range(done, planned):
            step(i, planned)
        done = planned
        if max(median_rse(s) for s in series) <= settings.rse_target:
            return "rse"
        if done >= settings.max_reps:
            return "max_reps"
        elapsed_ms = (clock() - start) * 1e3
        fits = math.floor(done * (settings.max_ms / elapsed_ms - 1)) if elapsed_ms > 0 else done
        grow = min(max(1, done // 4), settings.max_reps - done, fits)
        if grow < 1:
            return "max_ms"
        planned = done + grow


def summarize(raw: dict) -> TimingStats:
    """Turn raw rep times (as returned by `time_cuda`, possibly from an untrusted process) into stats."""
    times = validate_times(raw["times_ms"], "times_ms")
    mode, stopped, rse = raw.get("mode", "events"), raw.get("stopped"), raw.get("rse")
    if not isinstance(mode, str) or mode not in (*MODES, HOST_MODE):
        raise ValueError(f"unknown timing mode {str(mode)[:32]!r}")
    if stopped is not None and (not isinstance(stopped, str) or stopped not in STOP_REASONS):
        raise ValueError(f"unknown stop reason {str(stopped)[:32]!r}")
    if rse is not None:
        rse = validate_times([rse], "rse")[0]
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
        mode=mode,
        stopped=stopped,
        rse=rse,
    )


def events_exceed_wall(raw: dict) -> bool:
    """True when the event times cannot be real: each rep's events lie inside its wall-clock interval, so an
    event time above the wall time (beyond clock noise) means the event functions were tampered with."""
    times = [float(t) for t in raw.get("times_ms") or []]
    walls = [float(t) for t in raw.get("wall_ms") or []]
    if not times or len(walls) != len(times):
        return bool(times)  # a report without wall times is not trusted either
    return statistics.median(times) > 1.05 * statistics.median(walls) + 0.02
