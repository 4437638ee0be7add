"""What a benchmark batch measured (bench/throughput.py, bench/scaling.py): evaluations/min, the phase split,
the timing slot's busy share and the GPU's idle time from the evaluations' timelines, GPU utilization and
memory sampled through NVML, the host's CPU use, and per evaluation its timed GPU seconds."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path

from kernelrl.results import EvalResult


def union_s(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def span(r: EvalResult, begin: str, end: str | None = None) -> tuple[float, float] | None:
    """[begin of phase `begin`, begin of phase `end`, or the end of `begin` itself]."""
    if begin not in r.timeline:
        return None
    start = r.timeline[begin]
    stop = r.timeline.get(end) if end else start + r.phases_s.get(begin, 0.0)
    return (start, stop) if stop is not None else None


# phases in which an evaluation may have work on the device: the judge's draws and references, the sandbox's
# trials (and compilation), census and timing, the judge's baselines
DEVICE_PHASES = ("prepare", "first_trial", "correctness", "census", "timing", "baselines")


class UtilizationSampler:
    """GPU utilization and device memory in use (all processes), sampled through NVML (pynvml, else
    `nvidia-smi -lms`) while a mode runs; idle = share of samples at 0%. The memory peak says how close the
    GPU memory admission let the evaluations come to the device's capacity. Nothing on a machine without
    either."""

    def __init__(self, index: int, period_ms: int = 50) -> None:
        self.index, self.period_ms = index, period_ms
        self.samples: list[int] = []
        self.used_bytes: list[int] = []
        self.total_bytes: int | None = None
        self.source: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            pynvml.nvmlDeviceGetUtilizationRates(handle)
            self.total_bytes = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
        except Exception:  # noqa: BLE001 - no NVML here: try nvidia-smi
            handle = None
        if handle is not None:
            self.source = "nvml"

            def poll() -> None:
                while not self._stop.wait(self.period_ms / 1e3):
                    self.samples.append(int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
                    self.used_bytes.append(int(pynvml.nvmlDeviceGetMemoryInfo(handle).used))

            self._thread = threading.Thread(target=poll, daemon=True)
            self._thread.start()
            return
        tool = shutil.which("nvidia-smi")
        if tool is None:
            return
        self.source = "nvidia-smi"
        query = "--query-gpu=utilization.gpu,memory.used,memory.total"
        self._proc = subprocess.Popen([tool, "-i", str(self.index), query,
                                       "--format=csv,noheader,nounits", f"-lms={self.period_ms}"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def read() -> None:
            for line in self._proc.stdout:
                fields = [f.strip() for f in line.split(",")]
                if len(fields) == 3 and all(f.isdigit() for f in fields):
                    self.samples.append(int(fields[0]))
                    self.used_bytes.append(int(fields[1]) << 20)  # MiB
                    self.total_bytes = int(fields[2]) << 20

        self._thread = threading.Thread(target=read, daemon=True)
        self._thread.start()

    def stop(self) -> dict | None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
        if self._thread is not None:
            self._thread.join(2)
        if not self.samples:
            return None
        return {"source": self.source, "samples": len(self.samples), "period_ms": self.period_ms,
                "idle_share": round(sum(s == 0 for s in self.samples) / len(self.samples), 3),
                "mean_utilization_pct": round(statistics.fmean(self.samples), 1),
                "peak_memory_used_gib": round(max(self.used_bytes) / 2**30, 2) if self.used_bytes else None,
                "memory_total_gib": round(self.total_bytes / 2**30, 2) if self.total_bytes else None}


class HostCpu:
    """The host's CPU time over a mode's run (/proc/stat: every core, every process): how busy the cores were,
    CPU-seconds per evaluation, and how many cores the evaluator's own process used (its threads: the runners,
    the judge client, the slots). None where /proc/stat is not there."""

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])  # busy, total (guest time is inside user already)

    def __init__(self) -> None:
        self._start = self._read()
        self._own = self._own_cpu_s()
        self._wall = time.monotonic()

    @staticmethod
    def _own_cpu_s() -> float:
        times = os.times()
        return times.user + times.system

    def stop(self, evaluations: int) -> dict | None:
        end = self._read()
        if self._start is None or end is None or end[1] <= self._start[1]:
            return None
        busy, total = end[0] - self._start[0], end[1] - self._start[1]
        ticks = os.sysconf("SC_CLK_TCK")
        wall = time.monotonic() - self._wall
        # the evaluator's own process (its threads share one interpreter): near 1.0 it is a serial bottleneck
        own = (self._own_cpu_s() - self._own) / wall if wall > 0 else None
        return {"busy_share": round(busy / total, 3), "cores": os.cpu_count(),
                "cpu_s_per_evaluation": round(busy / ticks / max(evaluations, 1), 2),
                "evaluator_process_cores": round(own, 2) if own is not None else None}


def gpu_seconds(result: EvalResult) -> float:
    stats = result.timing.candidate if result.timing else None
    if stats is None:
        return 0.0
    return (stats.reps + stats.warmup) * stats.median_ms / 1e3


def loop_seconds(result: EvalResult) -> float:
    """The timed loop's length, host clock: calls x the median rep's wall time, which also holds the work the
    timer does around each call on the GPU (input refill, L2 flush, launch cover) and the sync's round
    trip."""
    stats = result.timing.candidate if result.timing else None
    if stats is None or stats.wall_median_ms is None:
        return 0.0
    return (stats.reps + stats.warmup) * stats.wall_median_ms / 1e3


def batch_stats(results: list[EvalResult], total: float, started_epoch: float) -> dict:
    """Evaluations/min, the phase split, the timing slot's busy share and the GPU's idle time (timelines)."""
    ran = [r for r in results if r.timeline and "prepare" in r.timeline]
    phases: dict[str, list[float]] = {}
    for r in ran:
        for phase, seconds in r.phases_s.items():
            phases.setdefault(phase, []).append(seconds)
    sandbox_s = sum(sum(v) for v in phases.values()) or 1.0
    timing = [x for r in ran if (x := span(r, "timing")) is not None]
    device = [x for r in ran for phase in DEVICE_PHASES if (x := span(r, phase)) is not None]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    speed = [r.timing.candidate.reps for r in ran if r.timing and r.timing.candidate]
    rse = [r.timing.speedup_rse for r in ran if r.timing and r.timing.speedup_rse is not None]
    return {
        "evaluations": len(results), "total_s": round(total, 2),
        "evals_per_min": round(60 * len(results) / total, 1),
        "statuses": statuses, "cache_hits": sum(r.cached for r in results),
        "median_wall_s": round(statistics.median(r.wall_time_s for r in results), 3),
        "p90_wall_s": round(sorted(r.wall_time_s for r in results)[int(0.9 * (len(results) - 1))], 3),
        "median_phases_s": {k: round(statistics.median(v), 3) for k, v in phases.items()},
        "mean_phases_s": {k: round(statistics.fmean(v), 3) for k, v in phases.items()},
        # share of all evaluations' summed phase time: where the sandbox-seconds go
        "phase_share": {k: round(sum(v) / sandbox_s, 3) for k, v in phases.items()},
        "timing_slot_busy_share": round(union_s(timing) / total, 3),
        # no evaluation in a phase that may use the device (an upper bound on the GPU's busy time)
        "gpu_idle_s_timeline": round(total - union_s([(max(a, started_epoch), b) for a, b in device]), 2),
        "oom_retries": sum(1 for r in results if "oom_retry" in r.phases_s),
        "median_timed_reps": statistics.median(speed) if speed else None,
        "median_speedup_rse": round(statistics.median(rse), 4) if rse else None,
    }
