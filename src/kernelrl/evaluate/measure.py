"""Timing of a correct candidate: its own timed run's statistics, the eager and Inductor baselines (from the
baseline cache, else timed by the judge and stored), the speed-of-light floor and the paired speedup."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

from kernelrl.cache import BaselineCache, BaselineEntry, baseline_key, timing_set_of
from kernelrl.evaluate.settings import VerdictSettings
from kernelrl.evaluate.trials import Trials
from kernelrl.problems import Problem
from kernelrl.results import Environment, TimingReport
from kernelrl.sandbox import (
    BandwidthRequest,
    BaselinesRequest,
    DeviceGate,
    JudgeClient,
    JudgeError,
    PeakFlopsRequest,
    PrepareReply,
    nbytes_of,
)
from kernelrl.timing.cuda_timer import TimerSettings, method_name, summarize
from kernelrl.timing.stats import candidate_rse_target, paired_speedup, speedup_rse

# paired reference median / judge's eager median beyond which it is distrusted
PAIRED_REFERENCE_TOLERANCE = 1.25
# TimerSettings fields that only say when to stop timing (how many reps), not how a rep is measured: left out
# of the baseline cache's key, so baselines timed by the default profile serve the training profile and back
STOPPING_FIELDS = frozenset({"target_ms", "min_reps", "max_reps", "rse_target", "max_ms"})
CPU_TIMING_NOTE = ("cpu-interpreter mode: host-clock times of the Triton interpreter "
                   "(VerdictSettings.cpu_timing), for tests and scheduling; no baselines or speedup, and "
                   "nothing about GPU speed")


def measurement_settings(timer: TimerSettings) -> dict:
    """The timer's fields that change what one rep measures (the baseline cache's key)."""
    return {k: v for k, v in dataclasses.asdict(timer).items() if k not in STOPPING_FIELDS}


class Measurer:
    """Turns a correct candidate's raw times into a `TimingReport`, using the judge for baselines and probes.
    One per call's verdict settings (cheap: it holds references only)."""

    def __init__(self, config: VerdictSettings, judge: JudgeClient, gate: DeviceGate,
                 baseline_cache: BaselineCache, environment: Callable[[], Environment]) -> None:
        self.config = config
        self._judge, self._gate, self._baseline_cache = judge, gate, baseline_cache
        self._environment = environment

    def floor_ms(self, prepared: PrepareReply) -> float | None:
        """Speed-of-light floor of the timed call: the larger of input bytes over the measured device
        bandwidth and reference FLOPs over the measured peak matmul rate, each with the configured margin."""
        timed = [t for t in prepared.trials if t.set == prepared.timing_set]
        if not timed:
            return None
        try:
            bandwidth = self._judge.call(BandwidthRequest()).bytes_per_s
            peak = self._judge.call(PeakFlopsRequest()).flops_per_s if prepared.timing_flops else None
        except JudgeError:
            return None
        return speed_of_light_ms(sum(nbytes_of(m) for m in timed[0].inputs), prepared.timing_flops,
                                 bandwidth, peak, self.config.speed_of_light_margin,
                                 self.config.flop_floor_margin)

    def candidate_timer(self, problem: Problem, env: Environment) -> TimerSettings:
        """The timer the sandbox runs: the configured one, or (`speedup_rse_target`) one that stops once the
        candidate's median RSE leaves the speedup's RSE at the target next to the cached eager baseline's."""
        cfg = self.config
        if cfg.speedup_rse_target is None:
            return cfg.timer
        entry = (self._baseline_cache.get(self.baseline_key(problem), need_inductor=False)
                 if env.mode == "gpu" else None)
        baseline_rse = entry.eager.rse if entry is not None else None
        return dataclasses.replace(cfg.timer,
                                   rse_target=candidate_rse_target(cfg.speedup_rse_target, baseline_rse))

    def baseline_key(self, problem: Problem) -> str:
        cfg = self.config
        # baselines are timed as the candidate is: replays of a captured graph in cuda-graph mode
        return baseline_key(problem.sha256, timing_set_of(problem.source), self._environment(),
                            method_name(cfg.timing_mode, cfg.timer), measurement_settings(cfg.timer))

    def timing(self, problem: Problem, env: Environment, trials: Trials, seed: int,
               prepared: PrepareReply) -> TimingReport:
        if env.mode != "gpu":
            if not (self.config.cpu_timing and self.config.timing and trials.timing is not None):
                return TimingReport(unavailable_reason="cpu-interpreter mode: Triton runs in the "
                                                       "interpreter, so times say nothing about GPU speed")
            try:
                return TimingReport(candidate=summarize(trials.timing.raw()),
                                    unavailable_reason=CPU_TIMING_NOTE,
                                    timed_checks=len(trials.timing.checked))
            except (ValueError, TypeError, KeyError) as exc:
                return TimingReport(unavailable_reason=f"the candidate's timing report is unusable: {exc}")
        if not self.config.timing:
            return TimingReport(unavailable_reason="timing disabled")
        report = TimingReport()
        try:
            report.candidate = summarize(trials.timing.raw() if trials.timing else {"times_ms": []})
        except (ValueError, TypeError, KeyError) as exc:
            return TimingReport(unavailable_reason=f"the candidate's timing report is unusable: {exc}")
        report.timed_checks = len(trials.timing.checked) if trials.timing else 0
        fraction = trials.census.fraction if trials.census else None
        report.kernel_gpu_fraction = float(fraction) if fraction is not None else None
        method = trials.census.method if trials.census else None
        report.kernel_gpu_fraction_method = method if method in ("events", "profiler") else None
        total_us = trials.census.details.get("total_us") if trials.census else None
        if isinstance(total_us, int | float) and total_us > 0:
            report.checked_call_gpu_ms = float(total_us) / 1e3
        with self._gate.exclusive():  # the judge's timed runs: nothing else on this device meanwhile
            report.floor_ms = self.floor_ms(prepared)
            report = self.baselines(problem, seed, report)
        if trials.timing is not None and trials.timing.paired_reference is not None:
            self.paired(report, trials.timing.raw())
        return report

    def paired(self, report: TimingReport, raw: dict) -> None:
        """The speedup over the reference timed interleaved in the sandbox, with its confidence interval. That
        reference shares the candidate's process, so it is cross-checked with the judge's eager time first."""
        try:
            reference = summarize(raw["paired_reference"])
            if report.eager is None or report.candidate is None:
                raise ValueError("no eager baseline to cross-check the paired reference with")
            if reference.median_ms > PAIRED_REFERENCE_TOLERANCE * report.eager.median_ms:
                raise ValueError(f"the reference ran at {reference.median_ms:.4f} ms in the sandbox, "
                                 f"{report.eager.median_ms:.4f} ms in the judge")
            times = raw["times_ms"]
            report.paired_vs_eager = paired_speedup(times, raw["paired_reference"]["times_ms"],
                                                    rng=random.Random(len(times)))
        except (ValueError, TypeError, KeyError) as exc:
            note = f"paired timing dropped: {exc}"
            report.unavailable_reason = (f"{report.unavailable_reason}; "
                                         f"{note}") if report.unavailable_reason else note

    def baselines(self, problem: Problem, seed: int, report: TimingReport, fresh: bool = False,
                  measure: bool | None = None) -> TimingReport:
        """Eager/Inductor times from the baseline cache, else from the judge (then
        stored) unless `measure` is False (default: `baseline_source == 'measure'`);
        `fresh` re-times and overwrites the stored numbers."""
        cfg = self.config
        measure = cfg.baseline_source == "measure" if measure is None else measure
        key = self.baseline_key(problem)
        entry = None if fresh else self._baseline_cache.get(key, need_inductor=cfg.inductor_baseline)
        if entry is None and not measure:
            report.unavailable_reason = ("no cached baseline for this problem, device and "
                                         "timer (baseline_source='cache'): fill the cache "
                                         "with `kernelrl baselines`")
            return report
        if entry is None:
            try:
                times = self._judge.call(BaselinesRequest(
                    problem_path=str(problem.path), problem_sha256=problem.sha256, seed=seed,
                    timer=dataclasses.asdict(cfg.timer), mode=cfg.timing_mode, inductor=cfg.inductor_baseline,
                    fresh=fresh))
            except JudgeError as exc:
                report.unavailable_reason = f"baselines failed: {str(exc)[-300:]}"
                return report
            if times.eager is None:
                report.unavailable_reason = times.unavailable or "no baseline times"
                return report
            entry = BaselineEntry(eager=summarize(times.eager),
                                  inductor=summarize(times.inductor) if times.inductor is not None else None,
                                  inductor_error=times.inductor_error[:600] if times.inductor_error else None)
            self._baseline_cache.put(key, entry)
        report.eager = entry.eager
        if cfg.inductor_baseline and entry.inductor is not None:
            report.inductor = entry.inductor
        elif cfg.inductor_baseline and entry.inductor_error:
            report.unavailable_reason = f"torch.compile failed: {entry.inductor_error}"
        if report.candidate is not None and report.candidate.median_ms > 0:
            report.speedup_vs_eager = report.eager.median_ms / report.candidate.median_ms
            if report.inductor is not None:
                report.speedup_vs_inductor = report.inductor.median_ms / report.candidate.median_ms
            report.speedup_rse = speedup_rse(report.candidate.rse, report.eager.rse)
        return report


def speed_of_light_ms(input_bytes: int, flops: int | None, bytes_per_s: float | None,
                      flops_per_s: float | None, margin: float, flop_margin: float) -> float | None:
    """No correct kernel is faster than reading its inputs once at full bandwidth or doing the reference's
    matmul/conv FLOPs at the device's best measured matmul rate; the margins (>1) leave room for measurement
    error and for work an honest kernel may legitimately skip."""
    floors = []
    if bytes_per_s:
        floors.append(input_bytes / (margin * bytes_per_s) * 1e3)
    if flops and flops_per_s:
        floors.append(flops / (flop_margin * flops_per_s) * 1e3)
    return max(floors) if floors else None
