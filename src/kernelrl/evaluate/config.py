"""EvalConfig: every setting of an evaluation, with its default and why. Stdlib only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.timing.cuda_timer import MODES as TIMING_MODES
from kernelrl.timing.cuda_timer import TimerSettings
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS

GiB = 1 << 30
# EvalConfig fields that cannot change a verdict's content (device: the result key has the device's name)
NOT_IN_RESULT_KEY = frozenset({"device", "cache_dir", "result_cache", "warm_pool", "max_concurrency",
                               "standby_sandboxes"})
RESULT_CACHE_ENV = "KERNELRL_RESULT_CACHE"  # "0" turns the result cache off for a whole process (CI, tests)


class EvaluatorError(RuntimeError):
    """The evaluator itself cannot work (e.g. its judge process cannot start); not a verdict on a candidate."""


@dataclass(frozen=True)
class EvalConfig:
    device: str = field(default="auto", metadata={
        "help": "auto, cpu, cuda or cuda:N (cpu: the Triton interpreter)."})
    trials: int = field(default=5, metadata={
        "help": "Correctness trials, fresh random inputs each (at least one per input set)."})
    input_sets: tuple[str, ...] | None = None  # None: check + sweep* (+ bench on a GPU); see docs/problem-format.md
    seed: int | None = field(default=None, metadata={
        "help": "Master seed (default: a fresh secret one per evaluation)."})
    tolerances: dict[str, tuple[float, float]] | None = None  # dtype name -> (atol, rtol) overrides
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
    memory_limit_gb: float = 16.0  # host memory of the candidate process
    max_output_gb: float = 8.0  # largest tensor read back from the candidate
    log_limit_bytes: int = 32 * 1024
    static_checks: bool = True  # AST rules against reward hacking (kernelrl rules); off: sandbox layers only
    rule_policy: dict[str, str] | None = None  # rule id -> 'reject' | 'warn' | 'off' (overrides defaults)
    # more static rules from your own modules: 'package.module:NAME' (a Rule or a sequence of Rules)
    extra_rules: tuple[str, ...] = ()
    runtime_policy: dict[str, str] | None = None  # runtime check id -> 'reject' | 'warn' | 'off' (default reject)
    timing_variants: int = 4  # different inputs the timed calls rotate through (>= 3 defeats parity caches)
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
    max_concurrency: int = 4  # evaluate_many: sandboxes at once (compile+correctness overlap; timing is exclusive)

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
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

