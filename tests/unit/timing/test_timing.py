"""The timer's control flow on CPU: a fake device whose 'kernels' advance a virtual clock, read by both the
fake CUDA events and the fake host clock. No test depends on real time."""

from __future__ import annotations

import contextlib
import math
import random
from types import SimpleNamespace

import pytest

from kernelrl.results import EvalResult, PairedSpeedup, Stage, Status, TimingReport, TimingStats
from kernelrl.timing import (
    GRAPH_METHOD,
    METHOD,
    TimerSettings,
    median_rse,
    paired_speedup,
    summarize,
    time_cuda,
    time_paired,
)
from kernelrl.timing.gpu_power import GpuPower, nvml_index


class FakeGPU:
    """Kernels are named; a kernel's duration (ms) comes from its draw function. During a graph capture,
    launches are recorded instead of run, and a host sync raises as CUDA's does."""

    def __init__(self, **kernels):
        self.now_ms = 0.0
        self.kernels = kernels  # name -> callable returning the next duration
        self.capture: list[str] | None = None
        self.log: list[str] = []  # kernels that ran, in order
        self.flushes: list[str] = []  # L2 flushes, by kind
        self.spins: list[int] = []  # launch-cover spin kernels, in cycles
        self.flush_ms = 0.0  # how long an L2 flush takes
        self.cycles_per_ms: float | None = None  # how fast a spin kernel runs; None: it takes no time

    def advance(self, ms: float) -> None:
        self.now_ms += ms

    def launch(self, name: str) -> None:
        if self.capture is not None:
            self.capture.append(name)
            return
        self.now_ms += self.kernels[name]()
        self.log.append(name)

    def work(self, name: str, host_sync: bool = False):
        """A forward that launches one kernel and returns a new output object (the graph keeps one)."""

        def forward():
            if host_sync and self.capture is not None:
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore text")
            self.launch(name)
            return object()

        return forward

    def timer_args(self) -> dict:
        gpu = self

        class Event:
            def __init__(self, enable_timing: bool = False):
                self.t: float | None = None

            def record(self) -> None:
                self.t = gpu.now_ms

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return end.t - self.t

        class Graph:
            def __init__(self):
                self.kernels: list[str] = []

            def replay(self) -> None:
                for name in self.kernels:
                    gpu.launch(name)

        class Stream:
            def wait_stream(self, other: Stream) -> None:
                pass

        @contextlib.contextmanager
        def graph(g: Graph, stream: Stream | None = None):
            gpu.capture = g.kernels
            try:
                yield
            finally:
                gpu.capture = None

        cuda = SimpleNamespace(
            current_device=lambda: 0,
            get_device_properties=lambda device: SimpleNamespace(L2_cache_size=50 << 20),
            CUDAGraph=Graph, Stream=Stream, current_stream=Stream, graph=graph, Event=Event,
            stream=lambda s: contextlib.nullcontext(),
        )
        def spin(cycles: int) -> None:  # before the start event: not in the time
            self.spins.append(cycles)
            self.advance(cycles / self.cycles_per_ms if self.cycles_per_ms else 0.0)

        def flush_by_reading(src, dim, out) -> None:
            self.flushes.append("read")
            self.advance(self.flush_ms)

        cuda._sleep = spin
        torch = SimpleNamespace(cuda=cuda, float32="float32", sum=flush_by_reading,
                                zeros=lambda *shape, dtype, device: SimpleNamespace(
                                    zero_=lambda: self.flushes.append("write")),
                                empty=lambda *shape, dtype, device: object())
        return {"torch": torch, "synchronize": lambda: None, "event_cls": Event,
                "clock": lambda: gpu.now_ms / 1e3}


def constant(ms: float):
    return lambda: ms


def noisy(ms: float, rel_sigma: float, seed: int):
    rng = random.Random(seed)
    return lambda: ms * rng.lognormvariate(0, rel_sigma)


# -- time_cuda ------------------------------------------------------------------------------------------
def test_fixed_count_is_the_default():
    gpu = FakeGPU(k=constant(1.0))
    seen = []
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=TimerSettings(warmup_ms=10, target_ms=50),
                    inspect=lambda i, reps, result: seen.append((i, reps)))
    assert raw["warmup"] == 10  # warm-up runs until 10 ms of virtual time have passed
    assert raw["times_ms"] == [1.0] * 50 and raw["wall_ms"] == pytest.approx([1.0] * 50)  # 50 ms / 1 ms a rep
    assert (raw["method"], raw["mode"], raw["stopped"], raw["rse"]) == (METHOD, "events", "fixed", 0.0)
    assert "graph_error" not in raw
    assert seen == [(None, 0)] * 10 + [(i, 50) for i in range(50)]
    # where the clock went
    assert raw["host_ms"] == pytest.approx({"setup": 0.0, "warmup": 10.0, "reps": 50.0})


def test_every_rep_flushes_by_reading_then_spins_before_its_start_event():
    gpu = FakeGPU(k=constant(1.0))
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=TimerSettings(warmup_ms=3, target_ms=5))
    reps = raw["warmup"] + len(raw["times_ms"])
    # the fake's flush and spin take no time: the whole cover is spin, at the nominal 1980 cycles/us
    assert gpu.flushes == ["read"] * reps and gpu.spins == [792_000] * reps
    assert raw["times_ms"] == [1.0] * 20  # min_reps; the cover lies before the start event
    assert raw["cover_us"] == {"prefix": 0.0, "spin": 400.0}

    other = FakeGPU(k=constant(1.0))
    raw = time_cuda(other.work("k"), **other.timer_args(),
                    settings=TimerSettings(warmup_ms=3, target_ms=5, l2_flush="write", launch_cover_us=0))
    assert other.flushes == ["write"] * (raw["warmup"] + 20) and other.spins == [] and raw["cover_us"] is None
    assert raw["method"] == "cuda-events+l2-write-flush+sync-after-end"


@pytest.mark.parametrize("refill_ms, timed_spin, cover", [
    (0.25, 150_000, {"prefix": 300.0, "spin": 100.0}),  # refill + flush leave 100 us; at 1500 cycles/us
    (0.6, None, {"prefix": 650.0, "spin": 0.0}),  # a refill longer than the cover: no spin at all
])
def test_spin_fills_what_the_refill_and_flush_leave_of_the_cover(refill_ms, timed_spin, cover):
    gpu = FakeGPU(k=constant(1.0))
    gpu.flush_ms, gpu.cycles_per_ms = 0.05, 1.5e6  # a power-capped clock: 1500 MHz, not the nominal 1980
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=TimerSettings(warmup_ms=10, target_ms=20),
                    prepare=lambda: gpu.advance(refill_ms))
    warm = raw["warmup"]
    assert gpu.spins[:warm] == [792_000] * warm  # the warm-up spins the whole cover at the nominal clock
    assert gpu.spins[warm:] == ([timed_spin] * 20 if timed_spin else [])
    assert raw["cover_us"] == pytest.approx(cover)
    assert raw["times_ms"] == pytest.approx([1.0] * 20)  # refill, flush and spin lie before the start event


def test_ops_captured_early_survive_a_later_patch():
    from kernelrl.timing.cuda_timer import TimerOps

    gpu = FakeGPU(k=constant(1.0))
    args = gpu.timer_args()
    ops = TimerOps.capture(args["torch"])  # as the sandbox stub does before importing the candidate
    args["torch"].sum = lambda *a, **k: None  # the candidate's patch: no flush, a warm L2
    args["torch"].cuda._sleep = lambda cycles: None
    args["event_cls"].elapsed_time = lambda self, end: 0.001  # every rep a microsecond, every probe too
    args["event_cls"].record = lambda self: None
    raw = time_cuda(gpu.work("k"), **args, settings=TimerSettings(warmup_ms=3, target_ms=5), ops=ops)
    assert gpu.flushes == ["read"] * (raw["warmup"] + 20) and len(gpu.spins) == raw["warmup"] + 20
    # the events read as the timer's own: the kernel's millisecond, and the whole cover spun (a probe of a
    # microsecond would have set the spin to its cap)
    assert raw["times_ms"] == [1.0] * 20 and gpu.spins == [792_000] * len(gpu.spins)


def test_adaptive_stops_on_rse_when_the_noise_is_low():
    gpu = FakeGPU(k=noisy(1.0, 0.001, seed=1))
    settings = TimerSettings(warmup_ms=5, target_ms=500, min_reps=20, max_reps=1000, rse_target=0.005)
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=settings)
    assert raw["stopped"] == "rse" and len(raw["times_ms"]) == 20  # already precise after min_reps
    assert raw["rse"] <= 0.005
    assert summarize(raw).stopped == "rse"


def test_adaptive_stops_at_max_reps_when_noisy_and_reps_grow_in_batches():
    gpu = FakeGPU(k=noisy(1.0, 0.5, seed=2))
    settings = TimerSettings(warmup_ms=5, min_reps=20, max_reps=200, rse_target=0.005, max_ms=1e9)
    seen = []
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=settings,
                    inspect=lambda i, reps, result: seen.append((i, reps)))
    assert raw["stopped"] == "max_reps" and len(raw["times_ms"]) == 200
    assert raw["rse"] > 0.005
    timed = [(i, reps) for i, reps in seen if i is not None]
    assert [i for i, _ in timed] == list(range(200))
    planned = [reps for _, reps in timed]
    assert planned[0] == 20 and planned[-1] == 200 and planned == sorted(planned)
    assert all(i < reps for i, reps in timed)  # every rep lies inside the count announced to inspect
    assert len(set(planned)) > 3  # several batches, not one jump to max_reps


def test_adaptive_stops_on_the_time_budget():
    gpu = FakeGPU(k=noisy(1.0, 0.5, seed=3))
    settings = TimerSettings(warmup_ms=5, min_reps=20, max_reps=10_000, rse_target=0.001, max_ms=100)
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=settings)
    assert raw["stopped"] == "max_ms"
    assert 20 <= len(raw["times_ms"]) < 10_000
    assert sum(raw["wall_ms"]) <= 1.5 * 100  # the last batch is trimmed to the budget left at the pace so far


def test_cuda_graph_mode_times_replays_of_one_capture():
    gpu = FakeGPU(k=constant(0.5))
    outputs = []
    raw = time_cuda(gpu.work("k"), **gpu.timer_args(), settings=TimerSettings(warmup_ms=5, target_ms=20),
                    inspect=lambda i, reps, result: outputs.append((i, result)), mode="cuda-graph")
    assert (raw["mode"], raw["method"]) == ("cuda-graph", GRAPH_METHOD) and "graph_error" not in raw
    assert raw["warmup"] == 10 + 3  # eager warm-up, then untimed replays
    assert len(raw["times_ms"]) == 40  # 20 ms / 0.5 ms per replay
    timed = [result for i, result in outputs if i is not None]
    assert len({id(r) for r in timed}) == 1  # the graph's static output, every rep
    assert len(gpu.log) == 10 + 3 + 40  # the capture itself launched nothing
    assert summarize(raw).mode == "cuda-graph"


def test_cuda_graph_mode_falls_back_to_events_when_capture_raises():
    gpu = FakeGPU(k=constant(0.5))
    raw = time_cuda(gpu.work("k", host_sync=True), **gpu.timer_args(),
                    settings=TimerSettings(warmup_ms=5, target_ms=20), mode="cuda-graph")
    assert (raw["mode"], raw["method"]) == ("events", METHOD)
    assert raw["graph_error"] == "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    assert raw["warmup"] == 10 and len(raw["times_ms"]) == 40


def test_unknown_mode_and_bad_settings_are_rejected():
    gpu = FakeGPU(k=constant(1.0))
    with pytest.raises(ValueError, match="mode"):
        time_cuda(gpu.work("k"), **gpu.timer_args(), mode="graphs")
    for bad in ({"min_reps": 0}, {"min_reps": 30, "max_reps": 20}, {"rse_target": 0.0}, {"max_ms": -1.0},
                {"launch_cover_us": -1}, {"launch_cover_us": 30_000}, {"l2_flush": "zero"}):
        with pytest.raises(ValueError):
            TimerSettings(**bad)


# -- time_paired -----------------------------------------------------------------------------------------
def test_paired_alternates_in_a_random_order_per_pair():
    gpu = FakeGPU(a=constant(1.0), b=constant(2.0))
    prepared, inspected = [], []
    raw = time_paired(gpu.work("a"), gpu.work("b"), **gpu.timer_args(), rng=random.Random(7),
                      settings=TimerSettings(warmup_ms=9, target_ms=300, min_reps=10),
                      prepare=lambda: prepared.append(1), inspect=lambda i, reps, result: inspected.append(i))
    pairs = len(raw["order"])
    assert pairs == 100  # target 300 ms over 1 + 2 ms per pair
    assert raw["a"]["times_ms"] == [1.0] * pairs and raw["b"]["times_ms"] == [2.0] * pairs
    assert raw["a"]["warmup"] == raw["b"]["warmup"] == 3  # 3 rounds of A then B pass the 9 ms
    warm = gpu.log[:6]
    assert warm == ["a", "b"] * 3
    timed = gpu.log[6:]
    assert ["".join(timed[2 * p: 2 * p + 2]) for p in range(pairs)] == raw["order"]
    assert set(raw["order"]) == {"ab", "ba"}
    assert len(prepared) == 2 * (3 + pairs)  # before every call of either
    assert inspected == [None] * 3 + list(range(pairs))  # A's results only
    assert paired_speedup(raw["a"]["times_ms"], raw["b"]["times_ms"], rng=random.Random(0)).speedup == 2.0
    again = FakeGPU(a=constant(1.0), b=constant(2.0))
    rerun = time_paired(again.work("a"), again.work("b"), **again.timer_args(), rng=random.Random(7),
                        settings=TimerSettings(warmup_ms=9, target_ms=300, min_reps=10))
    assert rerun["order"] == raw["order"]  # the rng decides the order


def test_paired_graph_mode_falls_back_for_both_when_one_capture_fails():
    gpu = FakeGPU(a=constant(1.0), b=constant(1.0))
    raw = time_paired(gpu.work("a"), gpu.work("b", host_sync=True), **gpu.timer_args(), rng=random.Random(1),
                      settings=TimerSettings(warmup_ms=5, target_ms=40), mode="cuda-graph")
    for side in ("a", "b"):
        assert raw[side]["mode"] == "events" and raw[side]["graph_error"].startswith("RuntimeError")
        assert len(raw[side]["times_ms"]) == 20


def test_paired_adaptive_waits_for_both_series():
    gpu = FakeGPU(a=noisy(1.0, 0.001, seed=4), b=noisy(1.0, 0.5, seed=5))
    raw = time_paired(gpu.work("a"), gpu.work("b"), **gpu.timer_args(), rng=random.Random(2),
                      settings=TimerSettings(warmup_ms=5, min_reps=20, max_reps=100, rse_target=0.005))
    assert raw["a"]["stopped"] == raw["b"]["stopped"] == "max_reps"
    assert len(raw["a"]["times_ms"]) == len(raw["b"]["times_ms"]) == len(raw["order"]) == 100


# -- statistics ------------------------------------------------------------------------------------------
def test_median_rse_matches_the_normal_theory():
    rng = random.Random(0)
    n, sigma = 400, 0.05
    times = [1.0 + rng.gauss(0, sigma) for _ in range(n)]
    assert median_rse(times) == pytest.approx(1.2533 * sigma / math.sqrt(n), rel=0.25)
    assert median_rse([1.0]) == math.inf
    assert median_rse([2.0] * 10) == 0.0


def _synthetic_pairs(ratio: float, noise: float, n: int, seed: int) -> tuple[list[float], list[float]]:
    """A at 1 ms and B at `ratio` ms, both scaled by a drift that pairs share, plus independent noise."""
    rng = random.Random(seed)
    a, b = [], []
    for i in range(n):
        drift = 1 + 0.05 * math.sin(i / 10)
        a.append(drift * rng.lognormvariate(0, noise))
        b.append(ratio * drift * rng.lognormvariate(0, noise))
    return a, b


def test_paired_bootstrap_interval_covers_the_true_ratio_and_shrinks_with_less_noise():
    widths = []
    for noise in (0.2, 0.02):
        a, b = _synthetic_pairs(1.5, noise, 300, seed=11)
        result = paired_speedup(a, b, rng=random.Random(3), resamples=1000)
        assert result.ci_low <= 1.5 <= result.ci_high
        assert result.ci_low <= result.speedup <= result.ci_high
        assert (result.confidence, result.reps) == (0.95, 300)
        widths.append(result.ci_high - result.ci_low)
    assert widths[1] < widths[0] / 3
    again = paired_speedup(a, b, rng=random.Random(3), resamples=1000)
    assert again == result  # the rng makes it reproducible


@pytest.mark.parametrize("a, b, kwargs, match", [
    ([1.0, 2.0], [1.0], {}, "length"),
    ([], [], {}, "non-empty"),
    ([1.0, float("nan")], [1.0, 1.0], {}, "finite"),
    ([1.0, float("inf")], [1.0, 1.0], {}, "finite"),
    ([1.0, 1.0], [1.0, -1.0], {}, "non-negative"),
    ([1.0, True], [1.0, 1.0], {}, "numbers"),
    ([1.0, "2"], [1.0, 1.0], {}, "numbers"),
    ("12", "12", {}, "list"),
    ([0.0, 0.0], [1.0, 1.0], {}, "zero"),
    ([1.0, 1.0], [1.0, 1.0], {"confidence": 1.0}, "confidence"),
    ([1.0, 1.0], [1.0, 1.0], {"resamples": 0}, "resamples"),
])
def test_paired_speedup_rejects_bad_input(a, b, kwargs, match):
    with pytest.raises(ValueError, match=match):
        paired_speedup(a, b, rng=random.Random(0), **kwargs)


# -- typed results ---------------------------------------------------------------------------------------
def test_summarize_reads_mode_stop_reason_and_rse():
    base = {"times_ms": [1.0, 2.0, 3.0], "warmup": 2}
    old = summarize(base)  # raw dicts from before the modes existed
    assert (old.mode, old.stopped, old.rse) == ("events", None, None)
    new = summarize({**base, "mode": "cuda-graph", "stopped": "rse", "rse": 0.004, "method": GRAPH_METHOD})
    assert (new.mode, new.stopped, new.rse, new.method) == ("cuda-graph", "rse", 0.004, GRAPH_METHOD)
    for bad in ({"mode": "magic"}, {"mode": ["events"]}, {"stopped": "bored"}, {"stopped": 3},
                {"rse": "0.1"}, {"rse": float("nan")}, {"rse": -0.1}, {"times_ms": ["1.0"]}):
        with pytest.raises(ValueError):
            summarize({**base, **bad})


def test_eval_result_round_trips_the_timing_modes():
    stats = TimingStats(1.0, 1.1, 0.9, 1.5, 0.1, 0.1, 100, 5, GRAPH_METHOD, 1.2, "measured", "cuda-graph",
                        "rse", 0.004)
    paired = PairedSpeedup(1.8, 1.7, 1.9, 0.95, 200, "median-ratio+paired-percentile-bootstrap-2000")
    result = EvalResult(status=Status.CORRECT, stage=Stage.DONE, problem_id="level1/x", message="ok",
                        timing=TimingReport(candidate=stats, eager=stats, paired_vs_eager=paired))
    assert EvalResult.from_json(result.to_json()) == result
    old = result.to_dict()
    for key in ("mode", "stopped", "rse"):
        del old["timing"]["candidate"][key]
    del old["timing"]["paired_vs_eager"]
    loaded = EvalResult.from_dict(old)  # JSON written before these fields existed
    assert loaded.timing.candidate.mode == "events" and loaded.timing.paired_vs_eager is None


@pytest.mark.parametrize("cuda_index, visible, expected", [
    (1, None, 1),  # no CUDA_VISIBLE_DEVICES: the same index
    (0, "3,1", 3), (1, " 3, 1 ", 1),
    (0, "GPU-8a1f", "GPU-8a1f"),  # a UUID prefix, looked up among NVML's devices
    (0, "MIG-4c2e", None),  # a MIG slice shares the GPU's power state with other slices
    (2, "0,1", None), (0, "", None),  # past the visible list
])
def test_nvml_index_follows_cuda_visible_devices(cuda_index, visible, expected):
    assert nvml_index(cuda_index, visible) == expected


def test_gpu_power_is_none_without_an_nvml_driver():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the GPU tests check the counters")
    pytest.importorskip("pynvml")  # with the binding but no driver library, NVML init fails: no counters
    assert GpuPower.open(0) is None
    assert GpuPower.open(0, visible="MIG-4c2e") is None
