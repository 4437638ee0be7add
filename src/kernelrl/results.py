"""The one typed result every pipeline stage adds to: `EvalResult`, with a lossless JSON round-trip."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    FORMAT_ERROR = "format_error"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    WRONG_OUTPUT = "wrong_output"
    HACK_DETECTED = "hack_detected"
    UNSUPPORTED = "unsupported"
    CORRECT = "correct"


class Stage(StrEnum):
    """How far the evaluation got; the status says how it ended there."""

    EXTRACT = "extract"  # finding the code in a completion
    STATIC = "static"  # parsing and static checks in the verdict process
    REFERENCE = "reference"  # reference outputs in the judge process
    IMPORT = "import"  # importing the candidate module (Triton defs, load_inline builds)
    INIT = "init"  # constructing ModelNew
    CORRECTNESS = "correctness"  # running and comparing trials
    TIMING = "timing"  # timing candidate and baselines
    DONE = "done"


@dataclass
class Mismatch:
    """Why one trial's output differs from the reference (feedback a model can act on)."""

    trial: int
    output_index: int  # which tensor of a tuple output
    reason: str  # 'values', 'shape', 'dtype', 'device', 'nonfinite', 'count', 'type', 'input_mutated'
    detail: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int | None = None
    numel: int | None = None
    first_index: list[int] | None = None
    expected_value: float | None = None
    actual_value: float | None = None
    input_set: str | None = None  # which named input set the trial used
    # the worst finite element's error over what it was allowed (1 is the edge; None: exact comparison). A
    # value mismatch within kernelrl.verify.tolerance.MARGINAL_FACTOR of it is marginal: not kept in the
    # result cache
    tolerance_ratio: float | None = None
    # the largest |float64 answer - reference| over the output when the float64 reference was computed
    reference_error: float | None = None


@dataclass(frozen=True)
class Finding:
    """A static-analysis or runtime finding (see kernelrl.candidates.rules, kernelrl.verify.runtime_checks
    and `kernelrl rules`)."""

    rule: str
    policy: str  # 'reject' or 'warn'
    message: str
    line: int | None = None
    detail: str = ""


@dataclass
class CorrectnessReport:
    trials_run: int
    trials_passed: int
    trials_planned: int
    seeds_sha256: str  # hash of the secret per-trial seeds: reproducible on request, not guessable
    atol: float
    rtol: float
    dtype: str  # the dtype the tolerance was chosen for
    input_sets: list[str] = field(default_factory=list)  # named input sets the trials covered
    mismatch: Mismatch | None = None
    # how outputs were compared (kernelrl.verify.tolerance.tolerance_model): 'allclose', or
    # 'allclose|float64-reference(k=3)' (an element may also be within k x the reference's own error
    # of the float64 answer); and how many correctness trials passed only thanks to that allowance
    tolerance_model: str = "allclose"
    trials_within_reference_error: int = 0


@dataclass
class TimingStats:
    """Raw-time summary of one timed callable (milliseconds)."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    iqr_ms: float  # interquartile range: the dispersion we report
    rel_spread: float  # iqr / median
    reps: int
    warmup: int
    method: str  # e.g. 'cuda-events+l2-flush+sync-after-end'
    wall_median_ms: float | None = None  # host clock around the same reps, for cross-checking events
    source: str = "measured"  # 'measured' in this evaluation, or 'cache' (kernelrl.cache.BaselineCache)
    mode: str = "events"  # what was timed: 'events' (the callable) or 'cuda-graph' (a replay of its capture)
    stopped: str | None = None  # why timing stopped: 'fixed', 'rse', 'max_reps', 'max_ms'
    rse: float | None = None  # relative standard error of the median when timing stopped


@dataclass
class PairedSpeedup:
    """How much faster A is than B from interleaved reps: median(B) / median(A) and a bootstrap interval."""

    speedup: float
    ci_low: float
    ci_high: float
    confidence: float  # e.g. 0.95
    reps: int  # pairs
    method: str  # the statistic, e.g. 'median-ratio+paired-percentile-bootstrap-2000'


@dataclass
class TimingReport:
    candidate: TimingStats | None = None
    eager: TimingStats | None = None
    inductor: TimingStats | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_inductor: float | None = None
    unavailable_reason: str | None = None  # why some or all numbers are missing
    floor_ms: float | None = None  # speed-of-light floor: input bytes / (margin x measured bandwidth)
    timed_checks: int = 0  # timed calls whose outputs were compared with the reference
    kernel_gpu_fraction: float | None = None  # share of one forward's GPU time in the candidate's kernels
    kernel_gpu_fraction_method: str | None = None  # 'events' (gated CUDA events) or 'profiler' (the fallback)
    # the GPU work of the share's measured call (a checked call on fresh inputs): its forward's time less the
    # neutral layout copies (events), or its kernels' (profiler); measured beside other sandboxes' work. A
    # timed median far below it says the timed calls did other work than the checked ones
    checked_call_gpu_ms: float | None = None
    paired_vs_eager: PairedSpeedup | None = None  # candidate (A) and eager (B) timed interleaved
    # relative standard error of speedup_vs_eager (both medians' RSEs, stats.speedup_rse); what the training
    # profile's adaptive stopping aims at (VerdictSettings.speedup_rse_target)
    speedup_rse: float | None = None


# how far a verdict of each mode can be trusted
# (docs/evaluation.md, "Classes of attack and where each stands")
VERDICT_TRUST = {
    # every runtime check of the classes table runs
    "gpu": "full",
    # the kernels run in the Triton interpreter inside the process the checks watch: classes only the static
    # rules close there, and the GPU-only checks (kernel share, deferred writes, timed calls), leave it
    # weaker: a verdict to train and develop with, not a benchmark number to publish
    "cpu-interpreter": "interpreter",
}


@dataclass
class Environment:
    mode: str  # 'gpu' or 'cpu-interpreter'
    device_name: str
    torch_version: str
    triton_version: str | None
    python_version: str
    kernelrl_version: str
    isolation: list[str] = field(default_factory=list)  # sandbox measures actually applied
    trust: str = ""  # VERDICT_TRUST of the mode ('full', 'interpreter'); set from the mode when not given

    def __post_init__(self) -> None:
        if not self.trust:
            self.trust = VERDICT_TRUST.get(self.mode, "unknown")


@dataclass
class EvalResult:
    status: Status
    stage: Stage
    problem_id: str
    message: str  # one line for humans and tables
    feedback: str = ""  # for a model: trimmed traceback, compiler message or mismatch details
    problem_sha256: str = ""
    candidate_sha256: str = ""
    correctness: CorrectnessReport | None = None
    timing: TimingReport | None = None
    environment: Environment | None = None
    # static and runtime checks (rejections and warnings)
    findings: list[Finding] = field(default_factory=list)
    log: str = ""  # the candidate's stdout+stderr, head and tail kept when long
    log_bytes_dropped: int = 0
    wall_time_s: float = 0.0
    cached: bool = False  # served by the result cache (kernelrl.cache.ResultCache): nothing ran this time
    # the result says nothing about the candidate's code: the call's deadline passed, or the problem's
    # reference failed (e.g. the GPU out of memory because a trainer holds it). A reward treats it as missing,
    # never as 0
    no_verdict: bool = False
    # where the wall time went (seconds, parent's clock): prepare (judge draws inputs and references), start
    # (sandbox up), import (candidate import and compilation), init, correctness, timing (the candidate's
    # timed run), baselines (speed-of-light probes and eager/Inductor, cached after the first)
    phases_s: dict[str, float] = field(default_factory=dict)
    # when each of those phases began, Unix seconds (one process's clock), plus 'queued'
    # (the evaluation was handed in) and 'end': lines evaluations up against each other
    # (overlap, timing exclusivity, idle time); 'sandbox_*': the sandbox's own start-up
    # steps (its CUDA context, a standby taking its candidate, confinement)
    timeline: dict[str, float] = field(default_factory=dict)

    @property
    def compiled(self) -> bool:
        """KernelBench's 'compiled': the candidate imported and ModelNew was built."""
        return self.stage in (Stage.INIT, Stage.CORRECTNESS, Stage.TIMING, Stage.DONE) and (
            self.status is not Status.COMPILE_ERROR
        )

    @property
    def correct(self) -> bool:
        return self.status is Status.CORRECT

    @property
    def problem_refused(self) -> bool:
        """The problem cannot be graded here (its audit refuses it, or its dtype needs a GPU): the verdict
        says nothing about the code. An audit the machine failed is no verdict, not a refusal."""
        return self.status is Status.UNSUPPORTED and self.stage is Stage.REFERENCE and not self.no_verdict

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        data = dict(data)
        data["status"] = Status(data["status"])
        data["stage"] = Stage(data["stage"])
        corr = data.get("correctness")
        if corr is not None:
            corr = dict(corr)
            if corr.get("mismatch") is not None:
                corr["mismatch"] = Mismatch(**corr["mismatch"])
            data["correctness"] = CorrectnessReport(**corr)
        timing = data.get("timing")
        if timing is not None:
            timing = dict(timing)
            for key in ("candidate", "eager", "inductor"):
                if timing.get(key) is not None:
                    timing[key] = TimingStats(**timing[key])
            if timing.get("paired_vs_eager") is not None:
                timing["paired_vs_eager"] = PairedSpeedup(**timing["paired_vs_eager"])
            data["timing"] = TimingReport(**timing)
        if data.get("environment") is not None:
            data["environment"] = Environment(**data["environment"])
        data["findings"] = [Finding(**f) for f in data.get("findings", [])]
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> EvalResult:
        return cls.from_dict(json.loads(text))
