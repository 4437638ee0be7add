"""The training (RL) profile: the settings of `VerdictSettings.training()` and `EvaluatorSettings.training()`,
its adaptive stop on the speedup's relative standard error (the rule as a unit, the host-clock timer with real
samples, and a real evaluation in CPU mode with `cpu_timing`), and baselines only from the baseline cache."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time

import pytest
from conftest import example

from kernelrl import EvaluatorSettings, Status, VerdictSettings
from kernelrl.cache import BaselineCache, BaselineEntry
from kernelrl.evaluate.measure import Measurer, measurement_settings
from kernelrl.evaluate.settings import NOT_IN_RESULT_KEY
from kernelrl.results import Environment, TimingReport, TimingStats
from kernelrl.sandbox.gate import DeviceGate
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.timing.cuda_timer import TimerSettings, time_host
from kernelrl.timing.stats import candidate_rse_target, speedup_rse


def test_training_profile_settings():
    default, training = VerdictSettings(), VerdictSettings.training()
    own_default, own_training = EvaluatorSettings(), EvaluatorSettings.training()
    assert training.speedup_rse_target == 0.01 and training.baseline_source == "cache"
    assert (training.timer.min_reps == 10 and training.timer.max_ms == 200.0
            and training.timer.rse_target is None)
    # cores and memory decide
    assert own_training.max_concurrency is None and own_training.compile_slots is None
    # correctness and every check as by default
    same = ("trials", "input_sets", "tolerances", "timing", "inductor_baseline", "static_checks",
            "rule_policy", "runtime_policy", "timing_variants", "timing_mode", "min_kernel_gpu_fraction",
            "speed_of_light_margin", "flop_floor_margin", "refuse_flagged_problems", "seed")
    assert {k: getattr(training, k) for k in same} == {k: getattr(default, k) for k in same}
    same_own = ("isolate_network", "isolate_processes", "readonly_filesystem", "result_cache")
    assert {k: getattr(own_training, k) for k in same_own} == {k: getattr(own_default, k) for k in same_own}
    # a rep is measured as by default: `kernelrl baselines` (default profile) fills the cache it reads
    assert measurement_settings(training.timer) == measurement_settings(default.timer)
    assert VerdictSettings.training(trials=3).trials == 3  # overrides win
    assert EvaluatorSettings.training(device="cpu", compile_slots=2).compile_slots == 2
    # scheduling settings never change a verdict; the timing rule does (it is in the result key)
    assert {"compile_slots", "sandbox_memory_gb"} <= NOT_IN_RESULT_KEY
    assert not {"speedup_rse_target", "baseline_source", "cpu_timing"} & NOT_IN_RESULT_KEY


@pytest.mark.parametrize("settings, bad", [
    (VerdictSettings, dict(speedup_rse_target=0)), (VerdictSettings, dict(speedup_rse_target=1.5)),
    (VerdictSettings, dict(baseline_source="judge")), (EvaluatorSettings, dict(compile_slots=0)),
    (EvaluatorSettings, dict(sandbox_memory_gb=-1)), (EvaluatorSettings, dict(max_concurrency=0))])
def test_training_profile_settings_are_validated(settings, bad):
    with pytest.raises(ValueError):
        settings.training(**bad)


def test_candidate_rse_target_leaves_the_speedup_at_its_target():
    # unknown baseline: half each
    assert candidate_rse_target(0.01, None) == pytest.approx(0.01 / math.sqrt(2))
    target = candidate_rse_target(0.01, 0.006)
    assert target == pytest.approx(0.008)
    assert speedup_rse(target, 0.006) == pytest.approx(0.01)
    assert candidate_rse_target(0.01, 0.012) == pytest.approx(0.0025)  # no room left: a quarter of the target
    assert candidate_rse_target(0.01, 0.0) == pytest.approx(0.01)
    assert speedup_rse(None, 0.01) is None
    with pytest.raises(ValueError):
        candidate_rse_target(0, 0.01)


def _work() -> float:
    return sum(i * i for i in range(3000))


def test_host_timer_stops_on_rse_with_real_samples():
    settings = TimerSettings(warmup_ms=2, min_reps=5, max_reps=20000, rse_target=0.02, max_ms=5000)
    raw = time_host(_work, clock=time.perf_counter, settings=settings)
    assert raw["stopped"] == "rse" and raw["rse"] <= 0.02, (raw["stopped"], raw["rse"], len(raw["times_ms"]))
    assert raw["mode"] == "host" and raw["times_ms"] == raw["wall_ms"] and len(raw["times_ms"]) >= 5
    # the reported RSE is the samples' own
    from kernelrl.timing.stats import median_rse
    assert raw["rse"] == pytest.approx(median_rse(raw["times_ms"]))
    assert statistics.median(raw["times_ms"]) > 0


def test_host_timer_unreachable_rse_stops_at_max_ms():
    settings = TimerSettings(warmup_ms=2, min_reps=5, max_reps=10**6, rse_target=1e-9, max_ms=60)
    started = time.perf_counter()
    raw = time_host(_work, clock=time.perf_counter, settings=settings)
    assert raw["stopped"] == "max_ms", raw["stopped"]
    assert raw["host_ms"]["reps"] <= 2 * 60 + 50  # batches are trimmed to what max_ms still holds
    assert time.perf_counter() - started < 5
    fixed = time_host(_work, clock=time.perf_counter,
                      settings=TimerSettings(warmup_ms=2, target_ms=10, min_reps=7))
    assert fixed["stopped"] == "fixed" and len(fixed["times_ms"]) >= 7


def _stats(median: float, rse: float | None) -> TimingStats:
    return TimingStats(median_ms=median, mean_ms=median, min_ms=median, max_ms=median, iqr_ms=0.0,
                       rel_spread=0.0, reps=50, warmup=3, method="cuda-events", rse=rse)


def test_baselines_only_from_the_cache(tmp_path, suite):
    problem = suite.get("level0/1_relu")
    env = Environment(mode="gpu", device_name="H100", torch_version="2.11", triton_version="3.6",
                      python_version="3.12", kernelrl_version="x")
    cache = BaselineCache(tmp_path / BaselineCache.FILE)
    verdict = VerdictSettings.training(inductor_baseline=False)
    # no judge: with baseline_source='cache' a miss must not reach for one
    measure = Measurer(verdict, None, DeviceGate(), cache, lambda: env)
    missed = measure.baselines(problem, 0, TimingReport(candidate=_stats(0.5, 0.004)))
    assert missed.eager is None and missed.speedup_vs_eager is None
    assert "kernelrl baselines" in missed.unavailable_reason
    # an entry stored under the default profile's timer serves the training profile (same measurement)
    default_measure = Measurer(VerdictSettings(inductor_baseline=False), None, DeviceGate(), cache,
                               lambda: env)
    cache.put(default_measure.baseline_key(problem), BaselineEntry(eager=_stats(1.0, 0.006), inductor=None))
    hit = measure.baselines(problem, 0, TimingReport(candidate=_stats(0.5, 0.008)))
    assert hit.speedup_vs_eager == pytest.approx(2.0) and hit.speedup_rse == pytest.approx(0.01)
    # the sandbox's timer aims at what the cached baseline leaves of the speedup's target
    timer = measure.candidate_timer(problem, env)
    assert timer.rse_target == pytest.approx(0.008)
    assert dataclasses.replace(timer, rse_target=None) == verdict.timer
    # default: the timer as set
    assert default_measure.candidate_timer(problem, env) == VerdictSettings().timer
    cache.close()


RELU = example("relu_triton.py")


@pytest.mark.skipif(not pid_namespace_prefix(), reason="the warm pool needs PID namespaces (unshare)")
def test_training_profile_times_until_the_rse_target(suite, cpu_evaluator):
    problem = suite.get("level0/1_relu")
    # CPU mode: no baselines, so the candidate aims for the speedup target / sqrt(2) on its own median (the
    # training profile's evaluator side only sizes batches: one evaluation needs the shared evaluator alone)
    verdict = VerdictSettings.training(trials=2, cpu_timing=True, speedup_rse_target=0.05,
                                       timer=TimerSettings(warmup_ms=5, min_reps=5, max_reps=5000,
                                                           max_ms=3000))
    result = cpu_evaluator.evaluate(problem, RELU, verdict=verdict)
    assert result.status is Status.CORRECT, result.message
    stats = result.timing.candidate
    assert stats.mode == "host" and stats.stopped in ("rse", "max_ms"), stats
    if stats.stopped == "rse":
        assert stats.rse <= 0.05 / math.sqrt(2)
    assert result.timing.timed_checks > 0  # the timed calls' outputs were still checked
    assert "cpu_timing" in result.timing.unavailable_reason and result.timing.speedup_vs_eager is None
