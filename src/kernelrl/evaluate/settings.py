"""Settings of an evaluation, with their defaults and why. Stdlib only.

`EvaluatorSettings` belong to an evaluator (its device, processes, pool, caches, slots and isolation): they
are fixed when it starts. `VerdictSettings` belong to a call (trials, tolerances, timing profile, policies):
any call may bring its own without restarting anything, and they are part of every result-cache key.
`EvalConfig`, the union of both, is kept for a deprecation period.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from kernelrl.timing.cuda_timer import MODES as TIMING_MODES
from kernelrl.timing.cuda_timer import TimerSettings
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS
from kernelrl.verify.tolerance import REFERENCE_ERROR_K

GiB = 1 << 30
# EvaluatorSettings fields that cannot change a verdict's content (device: the result key has the device's
# name); the others (timeouts, memory limits, isolation) join the verdict settings in the result key
NOT_IN_RESULT_KEY = frozenset({"device", "cache_dir", "result_cache", "warm_pool", "max_concurrency",
                               "standby_sandboxes", "compile_slots", "sandbox_memory_gb",
                               "sandbox_gpu_memory_gb", "gpu_memory_budget_gb"})
BASELINE_SOURCES = ("measure", "cache")
RESULT_CACHE_ENV = "KERNELRL_RESULT_CACHE"  # "0" turns the result cache off for a whole process (CI, tests)


class EvaluatorError(RuntimeError):
    """The evaluator itself cannot work (e.g. its judge
    process cannot start); not a verdict on a candidate."""


def _major_minor(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


def interpreter_incompatibility(versions: dict[str, str | None] | None = None) -> str | None:
    """Why Triton's interpreter (CPU mode) would fail honest kernels here, or None. Triton before 3.8 with
    numpy 2.4 or later fails every kernel with a loop (numpy no longer turns a one-element array into a Python
    scalar: `TypeError: only 0-dimensional arrays can be converted to Python scalars`; measured with triton
    3.6 and numpy 2.5 on the H100 host), and such a kernel's `runtime_error` would be a false rejection.
    `versions`: the installed distributions' versions by name (default: read from the environment)."""
    if versions is None:
        versions = {}
        for name in ("triton", "numpy"):
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = None
    triton, numpy = (_major_minor(versions.get(name) or "") for name in ("triton", "numpy"))
    if triton is None or numpy is None or not (triton < (3, 8) and numpy >= (2, 4)):
        return None
    return (f"CPU mode runs Triton's interpreter, which with triton {versions['triton']} and numpy "
            f"{versions['numpy']} fails every kernel with a loop (TypeError: only 0-dimensional arrays can "
            "be converted to Python scalars), i.e. rejects honest kernels: install numpy<2.4 or triton>=3.8")


def _help(text: str, default=dataclasses.MISSING, default_factory=dataclasses.MISSING):
    """A field with its help text (shown by the CLI options generated from it)."""
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata={"help": text})
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class EvaluatorSettings:
    """What one evaluator is started with: its device, worker processes, caches, concurrency and isolation."""

    device: str = _help("auto, cpu, cuda or cuda:N (cpu: the Triton interpreter).", "auto")
    startup_timeout_s: float = _help("Seconds for a sandbox stub to start (torch import, device init).",
                                     120.0)
    judge_timeout_s: float = _help("Seconds for one judge request (reference outputs, baselines incl. "
                                   "torch.compile).", 900.0)
    max_output_gb: float = _help("Largest tensor read back from the candidate.", 8.0)
    log_limit_bytes: int = _help("The candidate's stdout+stderr kept (head and tail).", 32 * 1024)
    isolate_network: bool = _help("Run candidates in an empty network namespace.", True)
    isolate_processes: bool = _help("Run candidates in their own PID namespace (needs util-linux "
                                    "`unshare` and the permission).", True)
    readonly_filesystem: bool = _help("Every mount read-only for the candidate except its evaluation "
                                      "directory (needs the PID namespace).", True)
    candidate_uid: int | None = _help(
        "Run the candidate as this unprivileged uid (nobody) where the evaluator runs as root and the "
        "read-only file system applies, so root-only files stay closed to it; None: the evaluator's own. On "
        "a GPU the switch comes after CUDA start-up.", 65534)
    cache_dir: Path | None = _help("Extension builds, baselines.sqlite, results.sqlite (default "
                                   "~/.cache/kernelrl).", None)
    result_cache: bool = _help(
        "Reuse the verdict of an identical candidate (result cache; also KERNELRL_RESULT_CACHE=0).", True)
    warm_pool: bool = _help("Fork candidates from a warm zygote (needs the PID namespace); "
                            "off: a fresh process each.", True)
    standby_sandboxes: int = _help(
        "Sandboxes forked and device-initialized ahead of their candidates (warm pool only; 0: none). Each "
        "holds a CUDA context (~0.5 GB of device memory) while it waits.", 3)
    device_work_queues: int | None = _help(
        "CUDA hardware work queues of the judge's and every sandbox's context (CUDA_DEVICE_MAX_CONNECTIONS): "
        "with 1, sandboxes starting at once create their contexts several times faster (context creation "
        "is what bounds a host's sandbox starts per second over several GPUs); work on separate streams then "
        "shares one queue and may lose its overlap. None: CUDA's default (8).", 1)
    max_concurrency: int | None = _help(
        "Evaluations in flight in a batch (compile and correctness overlap; timing is exclusive); None: "
        "twice compile_slots. Sandboxes alive at once never exceed the memory bound (sandbox_memory_gb).", 4)
    compile_slots: int | None = _help(
        "Sandboxes in their CPU-heavy part at once (start, import, correctness, census: everything before "
        "the timing token); None: the host's cores.", None)
    sandbox_memory_gb: float = _help(
        "Host memory one sandbox is expected to hold: sandboxes alive at once <= 0.8 x the memory available "
        "at start / this, less the standbys; 0: no bound.", 2.0)
    sandbox_gpu_memory_gb: float = _help(
        "GPU memory one evaluation is charged before its problem has been seen; after that, what evaluations "
        "of the problem used. 0: no GPU memory admission.", 3.0)
    gpu_memory_budget_gb: float | None = _help(
        "What all evaluations of the device may hold at once; None: 0.8 x the memory free when the judge "
        "started (set it when a trainer shares the GPU).", None)

    def __post_init__(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1 (or None: twice compile_slots)")
        if self.compile_slots is not None and self.compile_slots < 1:
            raise ValueError("compile_slots must be at least 1 (or None: the host's cores)")
        if self.sandbox_memory_gb < 0:
            raise ValueError("sandbox_memory_gb must be at least 0 (0: no memory bound)")
        if self.sandbox_gpu_memory_gb < 0:
            raise ValueError("sandbox_gpu_memory_gb must be at least 0 (0: no GPU memory admission)")
        if self.gpu_memory_budget_gb is not None and not self.gpu_memory_budget_gb > 0:
            raise ValueError("gpu_memory_budget_gb must be positive (or None: from the free memory)")
        if self.candidate_uid is not None and self.candidate_uid < 1:
            raise ValueError("candidate_uid must be an unprivileged uid (1 or more), or "
                             "None: the evaluator's own")
        if self.standby_sandboxes < 0:
            raise ValueError("standby_sandboxes must be at least 0")
        if self.device_work_queues is not None and not 1 <= self.device_work_queues <= 32:
            raise ValueError("device_work_queues must be 1 to 32 (CUDA's range), or None: CUDA's default")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, not {self.device!r}")

    def device_env(self) -> dict[str, str]:
        """The judge's and the sandboxes' CUDA environment: this evaluator's GPU, and the same hardware queues
        for both, so a candidate and its baselines are timed alike (harmless where CUDA is never used)."""
        gpu = self.device.split(":", 1)[1] if self.device.startswith("cuda:") else None
        env = {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {}
        if self.device_work_queues is not None:
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = str(self.device_work_queues)
        return env

    @classmethod
    def training(cls, **overrides) -> EvaluatorSettings:
        """The RL profile's evaluator: as many sandboxes compiling at once as the host has cores, bounded by
        memory (VerdictSettings.training() is the verdict side)."""
        return cls(**{"max_concurrency": None, "compile_slots": None, **overrides})

    def key_fields(self) -> dict:
        """The fields that can change a verdict's content (part of the result-cache key)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in NOT_IN_RESULT_KEY}


@dataclass(frozen=True)
class VerdictSettings:
    """How one call judges its candidates. Passed per call (`evaluate_many(..., verdict=...)`); never restarts
    a worker; part of every result-cache key."""

    trials: int = _help("Correctness trials, fresh random inputs each (at least one per input set).", 5)
    compile_timeout_s: float = _help(
        "Seconds for importing the candidate (Triton definitions, load_inline builds).", 300.0)
    run_timeout_s: float = _help("Seconds for the candidate's construction, correctness trials and timing.",
                                 120.0)
    memory_limit_gb: float = _help("Host memory the candidate may use (CPU: address space on top of what the "
                                   "sandbox maps at start).", 16.0)
    input_sets: tuple[str, ...] | None = _help(
        "Input sets checked; None: check + sweep* (+ bench on a GPU); see docs/problem-format.md.", None)
    bench_correctness: bool = _help(
        "On a GPU, the bench-sized set is among the default correctness sets; off: check and sweeps only (KB "
        "to MB instead of up to GBs an evaluation). Timed calls still run on the bench set, their outputs "
        "checked at secret positions.", True)
    seed: int | None = _help("Master seed (default: a fresh secret one per evaluation).", None)
    tolerances: dict[str, tuple[float, float]] | None = _help("dtype name -> (atol, rtol) overrides.", None)
    reference_error_k: float = _help(
        "The tolerance model's k: an fp32/fp16/bf16 element that fails allclose passes when within atol + "
        "rtol*|exact| + k*|reference - exact| of the reference recomputed in float64; 0: allclose only.",
        REFERENCE_ERROR_K)
    timing: bool = _help("Time correct candidates against eager and torch.compile (GPU only).", True)
    inductor_baseline: bool = _help("Also time the reference under torch.compile (Inductor).", True)
    timer: TimerSettings = _help("The CUDA-event timer's settings (warm-up, reps, L2 flush, stopping rule).",
                                 default_factory=TimerSettings)
    static_checks: bool = _help("AST rules against reward hacking (kernelrl rules); "
                                "off: sandbox layers only.", True)
    rule_policy: dict[str, str] | None = _help("Rule id -> 'reject' | 'warn' | 'off' "
                                               "(overrides the defaults).", None)
    extra_rules: tuple[str, ...] = _help(
        "More static rules from your own modules: 'package.module:NAME' (a Rule or a sequence of Rules).", ())
    runtime_policy: dict[str, str] | None = _help(
        "Runtime check id -> 'reject' | 'warn' | 'off' (default reject).", None)
    timing_variants: int = _help("Inputs the timed calls rotate through (>= 3 defeats parity "
                                 "caches); a mix draws 2.", 4)
    fresh_timed_inputs: bool = _help(
        "Fresh inputs for every timed call: each element from one of two variants by a secret mask; problems "
        "with METADATA['timed_inputs'] == 'rotate' keep the rotation. Off: the rotation for every problem.",
        True)
    timing_mode: str = _help(
        "'events' (each call timed with CUDA events) or 'cuda-graph' (the call captured once, replays timed; "
        "falls back to events when the call cannot be captured).", "events")
    paired_baseline: bool = _help(
        "Also time the reference inside the sandbox, interleaved with the candidate, for a speedup with a "
        "confidence interval (dropped when it runs slower than the judge's eager baseline allows).", False)
    min_kernel_gpu_fraction: float = _help(
        "Of one forward's GPU time, the share the candidate's kernels must take (GPU; 0: off).", 0.5)
    speed_of_light_margin: float = _help(
        "Bandwidth floor = input bytes / (margin x measured copy bandwidth).", 1.5)
    flop_floor_margin: float = _help(
        "FLOP floor = reference matmul/conv FLOPs / (margin x best measured matmul rate); wider, since an "
        "honest kernel may skip work the dense reference does.", 4.0)
    refuse_flagged_problems: bool = _help("Problems the audit flags (zeros pass, ...) end `unsupported`.",
                                          True)
    speedup_rse_target: float | None = _help(
        "Training profile: time a correct candidate until the speedup's relative standard error is at most "
        "this (within timer.max_ms); None: the timer's own stopping rule.", None)
    baseline_source: str = _help(
        "'measure': baselines from the cache, else timed by the judge (and stored); 'cache': from the cache "
        "only (filled with `kernelrl baselines`), a miss leaves the speedup out and says so.", "measure")
    cpu_timing: bool = _help(
        "CPU mode only: time correct candidates with the host clock (the Triton interpreter; no baselines, "
        "no speedup), for tests and benches.", False)

    @classmethod
    def training(cls, **overrides) -> VerdictSettings:
        """The RL profile (docs/evaluation.md, "Training profile"): correctness and every check as by default;
        timing stops once the speedup's relative standard error is 1% (at most 200 ms of reps, at least 10);
        eager and Inductor baselines only from the baseline cache (`kernelrl baselines` fills it; the timer's
        warm-up, flush and cover are the default's, so the same entries serve both profiles)."""
        return cls(**{"timer": TimerSettings(min_reps=10, max_ms=200.0), "speedup_rse_target": 0.01,
                      "baseline_source": "cache", **overrides})

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        if not self.reference_error_k >= 0:
            raise ValueError("reference_error_k must be at least 0 (0: plain allclose)")
        if self.speedup_rse_target is not None and not 0 < self.speedup_rse_target < 1:
            raise ValueError(f"speedup_rse_target must lie in (0, 1), got {self.speedup_rse_target!r}")
        if self.baseline_source not in BASELINE_SOURCES:
            raise ValueError(f"baseline_source must be one of {BASELINE_SOURCES}, not "
                             f"{self.baseline_source!r}")
        if self.timing_mode not in TIMING_MODES:
            raise ValueError(f"timing_mode must be one of {TIMING_MODES}, not {self.timing_mode!r}")
        if self.input_sets is not None and isinstance(self.input_sets, list):
            object.__setattr__(self, "input_sets", tuple(self.input_sets))  # hashable, and one key for both
        for check, policy in (self.runtime_policy or {}).items():
            if check not in RUNTIME_CHECKS:
                raise ValueError(f"unknown runtime check {check!r}; see `kernelrl rules`")
            if policy not in ("reject", "warn", "off"):
                raise ValueError(f"runtime check policy must be reject, warn or off, not {policy!r}")
        if self.extra_rules:
            from kernelrl.candidates.rules import resolve_rules

            resolve_rules(self.extra_rules)  # a spec that does not import is a setting error, raised now


EVALUATOR_FIELDS = frozenset(f.name for f in dataclasses.fields(EvaluatorSettings))
VERDICT_FIELDS = frozenset(f.name for f in dataclasses.fields(VerdictSettings))


def split_settings(values: dict) -> tuple[dict, dict]:
    """Keyword settings sorted into (EvaluatorSettings fields,
    VerdictSettings fields); an unknown name raises."""
    unknown = set(values) - EVALUATOR_FIELDS - VERDICT_FIELDS
    if unknown:
        raise TypeError(f"unknown evaluation setting(s) {sorted(unknown)}: see EvaluatorSettings and "
                        "VerdictSettings")
    return ({k: v for k, v in values.items() if k in EVALUATOR_FIELDS},
            {k: v for k, v in values.items() if k in VERDICT_FIELDS})


def _union_fields() -> list[tuple[str, object, dataclasses.Field]]:
    made = []
    for cls in (EvaluatorSettings, VerdictSettings):
        for f in dataclasses.fields(cls):
            copy = (field(default_factory=f.default_factory, metadata=f.metadata)
                    if f.default_factory is not dataclasses.MISSING
                    else field(default=f.default, metadata=f.metadata))
            made.append((f.name, f.type, copy))
    return made


def _eval_config_post_init(self) -> None:
    warnings.warn("EvalConfig is deprecated: pass EvaluatorSettings to the evaluator and VerdictSettings per "
                  "call (EvalConfig.split() gives both)", DeprecationWarning, stacklevel=3)
    self.split()  # validates both halves


def _eval_config_split(self) -> tuple[EvaluatorSettings, VerdictSettings]:
    """(EvaluatorSettings, VerdictSettings) holding this config's values."""
    evaluator, verdict = split_settings(dataclasses.asdict(self) | {"timer": self.timer})
    return EvaluatorSettings(**evaluator), VerdictSettings(**verdict)


def _eval_config_training(cls, **overrides):
    """Both halves of the RL profile in one (deprecated) config."""
    return cls(**{**dataclasses.asdict(EvaluatorSettings.training()),
                  **dataclasses.asdict(VerdictSettings.training()),
                  "timer": VerdictSettings.training().timer, **overrides})


# Deprecated: every setting in one frozen dataclass (the fields of EvaluatorSettings and VerdictSettings).
EvalConfig = dataclasses.make_dataclass(
    "EvalConfig", _union_fields(), frozen=True,
    namespace={"__post_init__": _eval_config_post_init, "split": _eval_config_split,
               "training": classmethod(_eval_config_training),
               "__doc__": "Deprecated: EvaluatorSettings and VerdictSettings in one config (`split()`)."})
EvalConfig.__module__ = __name__
