"""EvalConfig: every setting of an evaluation, with its default and why. Stdlib only."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from kernelrl.timing.cuda_timer import MODES as TIMING_MODES
from kernelrl.timing.cuda_timer import TimerSettings
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS
from kernelrl.verify.tolerance import REFERENCE_ERROR_K

GiB = 1 << 30
# EvalConfig fields that cannot change a verdict's content (device: the result key has the device's name)
NOT_IN_RESULT_KEY = frozenset({"device", "cache_dir", "result_cache", "warm_pool", "max_concurrency",
                               "standby_sandboxes", "compile_slots", "sandbox_memory_gb",
                               "sandbox_gpu_memory_gb", "gpu_memory_budget_gb"})
BASELINE_SOURCES = ("measure", "cache")
RESULT_CACHE_ENV = "KERNELRL_RESULT_CACHE"  # "0" turns the result cache off for a whole process (CI, tests)


class EvaluatorError(RuntimeError):
    """The evaluator itself cannot work (e.g. its judge process cannot start); not a verdict on a candidate."""


def _major_minor(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


def interpreter_incompatibility(versions: dict[str, str | None] | None = None) -> str | None:
    """Why Triton's interpreter (CPU mode) would fail honest kernels here, or None. Triton before 3.8 with numpy
    2.4 or later fails every kernel with a loop (numpy no longer turns a one-element array into a Python scalar:
    `TypeError: only 0-dimensional arrays can be converted to Python scalars`; measured with triton 3.6 and numpy
    2.5 on the H100 host), and such a kernel's `runtime_error` would be a false rejection. `versions`: the
    installed distributions' versions by name (default: read from the environment)."""
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
            f"{versions['numpy']} fails every kernel with a loop (TypeError: only 0-dimensional arrays can be "
            "converted to Python scalars), i.e. rejects honest kernels: install numpy<2.4 or triton>=3.8")


@dataclass(frozen=True)
class EvalConfig:
    device: str = field(default="auto", metadata={
        "help": "auto, cpu, cuda or cuda:N (cpu: the Triton interpreter)."})
    trials: int = field(default=5, metadata={
        "help": "Correctness trials, fresh random inputs each (at least one per input set)."})
    input_sets: tuple[str, ...] | None = None  # None: check + sweep* (+ bench on a GPU); see docs/problem-format.md
    # on a GPU, the bench-sized set is among the default correctness sets; False: check and sweeps only (KB to
    # MB instead of up to GBs an evaluation: more evaluations fit beside each other). Timed calls still run on
    # the bench set, their outputs checked at secret positions
    bench_correctness: bool = True
    seed: int | None = field(default=None, metadata={
        "help": "Master seed (default: a fresh secret one per evaluation)."})
    tolerances: dict[str, tuple[float, float]] | None = None  # dtype name -> (atol, rtol) overrides
    # the tolerance model's k: an fp32/fp16/bf16 element that fails allclose passes when within atol + rtol*|exact|
    # + k*|reference - exact| of the reference recomputed in float64 (kernelrl.verify.tolerance); 0: allclose only
    reference_error_k: float = REFERENCE_ERROR_K
    timing: bool = field(default=True, metadata={
        "help": "Time correct candidates against eager and torch.compile (GPU only)."})
    inductor_baseline: bool = True
    timer: TimerSettings = field(default_factory=TimerSettings)
    startup_timeout_s: float = 120.0  # sandbox stub start (torch import, device init)
    compile_timeout_s: float = field(default=300.0, metadata={
        "help": "Seconds for importing the candidate (Triton definitions, load_inline builds)."})
    run_timeout_s: float = field(default=120.0, metadata={
        "help": "Seconds for the candidate's construction, correctness trials and timing."})
    judge_timeout_s: float = 900.0  # reference outputs, baselines (includes torch.compile)
    memory_limit_gb: float = 16.0  # host memory the candidate may use (CPU: address space on top of the sandbox's own)
    max_output_gb: float = 8.0  # largest tensor read back from the candidate
    log_limit_bytes: int = 32 * 1024
    static_checks: bool = True  # AST rules against reward hacking (kernelrl rules); off: sandbox layers only
    rule_policy: dict[str, str] | None = None  # rule id -> 'reject' | 'warn' | 'off' (overrides defaults)
    # more static rules from your own modules: 'package.module:NAME' (a Rule or a sequence of Rules)
    extra_rules: tuple[str, ...] = ()
    runtime_policy: dict[str, str] | None = None  # runtime check id -> 'reject' | 'warn' | 'off' (default reject)
    timing_variants: int = 4  # inputs the timed calls rotate through (>= 3 defeats parity caches); a mix draws 2
    # fresh inputs per timed call: each element from one of two variants by a secret mask (kernelrl.sandbox.timed_mix);
    # problems with METADATA["timed_inputs"] == "rotate" keep the rotation. False: the rotation for every problem
    fresh_timed_inputs: bool = True
    # 'events' (each call timed with CUDA events) or 'cuda-graph' (the call captured once, replays timed: no
    # launch overhead; falls back to events when the call cannot be captured). TimingStats.mode says which ran
    timing_mode: str = "events"
    # also time the reference inside the sandbox, interleaved with the candidate, for a speedup with a confidence
    # interval (TimingReport.paired_vs_eager); dropped when that reference runs slower than the judge's eager
    # baseline allows (the candidate shares its process)
    paired_baseline: bool = False
    # of one forward's GPU time in the candidate's kernels (GPU; 0: off, which also skips its measured forward)
    min_kernel_gpu_fraction: float = 0.5
    speed_of_light_margin: float = 1.5  # bandwidth floor = input bytes / (margin x measured copy bandwidth)
    # FLOP floor = reference matmul/conv FLOPs / (margin x best measured matmul rate); wider, since an honest
    # kernel may skip work the dense reference does (causal masks, zeros)
    flop_floor_margin: float = 4.0
    refuse_flagged_problems: bool = True  # problems the audit flags (zeros pass, ...) end `unsupported`
    isolate_network: bool = True
    isolate_processes: bool = True  # own PID namespace (needs util-linux `unshare` and the permission)
    readonly_filesystem: bool = True  # every mount read-only except the evaluation directory (needs the PID namespace)
    # run the candidate as this unprivileged uid (nobody) where the evaluator runs as root and the read-only file
    # system applies: root-only files stay closed to it; None: the evaluator's own. On a GPU the switch comes after
    # CUDA start-up
    candidate_uid: int | None = 65534
    cache_dir: Path | None = None  # extension builds, baselines.sqlite, results.sqlite (default ~/.cache/kernelrl)
    result_cache: bool = field(default=True, metadata={
        "help": "Reuse the verdict of an identical candidate (result cache; also KERNELRL_RESULT_CACHE=0)."})
    # fork candidates from a warm zygote (needs the PID namespace); False: a fresh process each
    warm_pool: bool = True
    # sandboxes forked and device-initialized ahead of their candidates (warm pool only; 0: none). Each holds
    # a CUDA context (~0.5 GB of device memory) while it waits; a standby started while another sandbox times
    # is stopped until that ends, so back-to-back evaluations often found it still starting: median `start`
    # 0.34 s with 2, 0.16 s with 3 (H100, bench/throughput.py, serial)
    standby_sandboxes: int = 3
    # evaluate_many: evaluations in flight (compile+correctness overlap; timing is exclusive); None: twice
    # compile_slots. Sandboxes alive at once never exceed the memory bound (sandbox_memory_gb)
    max_concurrency: int | None = 4
    # sandboxes in their CPU-heavy part at once (start, import/compile, init, correctness, census: everything
    # before the timing token, when a sandbox gives its slot back); None: the host's cores (kernelrl.evaluate.slots)
    compile_slots: int | None = None
    # host memory one sandbox is expected to hold: sandboxes alive at once <= 0.8 x the memory available at start /
    # this, less the standbys; 0: no bound. A CPU-mode sandbox forked from the zygote held 0.18 GB RSS in a
    # level-0 forward (2-core machine, 2026-11-24); a CUDA context and bench-sized inputs staged through the host
    # add to it on a GPU, where this is still to be measured
    sandbox_memory_gb: float = 2.0
    # GPU memory one evaluation is charged before its problem has been seen (its sandbox and the judge's state for
    # it); after that, what evaluations of the problem used (kernelrl.evaluate.slots.DeviceMemory). 0: no GPU
    # memory admission. On an H100, 32 level-1 evaluations at once without it ran out in 73 of 93 (2026-11-25)
    sandbox_gpu_memory_gb: float = 3.0
    # what all evaluations of the device may hold at once; None: 0.8 x the memory free when the judge started.
    # kernelrl's trainer sets it when it shares the GPU (the judge starts before the trainer reaches its cap)
    gpu_memory_budget_gb: float | None = None
    # training profile: time a correct candidate until the speedup's relative standard error (its median's and
    # the cached eager baseline's, stats.speedup_rse) is at most this, within timer.max_ms; None: the timer's
    # own rule (a fixed rep count, or timer.rse_target on the candidate's median alone)
    speedup_rse_target: float | None = None
    # 'measure': baselines from the cache, else timed by the judge (and stored); 'cache': from the cache only
    # (filled ahead with `kernelrl baselines`), a miss leaves the speedup out and says so
    baseline_source: str = "measure"
    # CPU mode only: time correct candidates with the host clock (the Triton interpreter; no baselines, no
    # speedup): the timing token, adaptive stopping and timed-call checks run for real, for tests and benches
    cpu_timing: bool = False

    @classmethod
    def training(cls, **overrides) -> EvalConfig:
        """The RL profile (docs/evaluation.md, "Training profile"): correctness and every check as by default;
        timing stops once the speedup's relative standard error is 1% (at most 200 ms of reps, at least 10);
        eager and Inductor baselines only from the baseline cache (`kernelrl baselines` fills it; the timer's
        warm-up, flush and cover are the default's, so the same entries serve both profiles); as many
        sandboxes compiling at once as the host has cores, bounded by memory."""
        settings: dict = dict(timer=TimerSettings(min_reps=10, max_ms=200.0), speedup_rse_target=0.01,
                              baseline_source="cache", max_concurrency=None, compile_slots=None)
        settings.update(overrides)
        return cls(**settings)

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        if not self.reference_error_k >= 0:
            raise ValueError("reference_error_k must be at least 0 (0: plain allclose)")
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
        if self.speedup_rse_target is not None and not 0 < self.speedup_rse_target < 1:
            raise ValueError(f"speedup_rse_target must lie in (0, 1), got {self.speedup_rse_target!r}")
        if self.baseline_source not in BASELINE_SOURCES:
            raise ValueError(f"baseline_source must be one of {BASELINE_SOURCES}, not {self.baseline_source!r}")
        if self.candidate_uid is not None and self.candidate_uid < 1:
            raise ValueError("candidate_uid must be an unprivileged uid (1 or more), or None: the evaluator's own")
        if self.standby_sandboxes < 0:
            raise ValueError("standby_sandboxes must be at least 0")
        if self.timing_mode not in TIMING_MODES:
            raise ValueError(f"timing_mode must be one of {TIMING_MODES}, not {self.timing_mode!r}")
        for check, policy in (self.runtime_policy or {}).items():
            if check not in RUNTIME_CHECKS:
                raise ValueError(f"unknown runtime check {check!r}; see `kernelrl rules`")
            if policy not in ("reject", "warn", "off"):
                raise ValueError(f"runtime check policy must be reject, warn or off, not {policy!r}")
        if self.extra_rules:
            from kernelrl.candidates.rules import resolve_rules

            resolve_rules(self.extra_rules)  # a spec that does not import is a setting error, raised now
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, not {self.device!r}")

