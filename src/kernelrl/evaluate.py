"""The pipeline: Problem + candidate code -> EvalResult.

This module is the verdict process. It never imports candidate code (and never imports torch): the
candidate runs in a sandboxed child (`kernelrl.sandbox.child`), the reference runs in the judge
(`kernelrl.sandbox.judge`), and this process only compares what they report and decides.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import json
import os
import random
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl import __version__
from kernelrl.cache import (
    BaselineCache,
    BaselineEntry,
    CacheStats,
    ResultCache,
    baseline_key,
    kernelrl_build,
    result_key,
    timing_set_of,
)
from kernelrl.candidates import analyze, extract_code
from kernelrl.candidates.rules import analyze_rules
from kernelrl.problems import Problem
from kernelrl.problems.audit import ProblemAudit, audit_problem
from kernelrl.results import (
    CorrectnessReport,
    Environment,
    EvalResult,
    Finding,
    Mismatch,
    Stage,
    Status,
    TimingReport,
)
from kernelrl.sandbox.gate import DeviceGate, RunSlots
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.sandbox.judge_client import JudgeClient, JudgeError, python_env
from kernelrl.sandbox.runner import ChildOutcome, SpawnedChild, run_child, spawn_child, watch_child
from kernelrl.sandbox.tensorio import ITEMSIZE, TensorFileError, nbytes_of, validate_meta
from kernelrl.sandbox.zygote_client import ZygoteClient, ZygoteError
from kernelrl.timing.cuda_timer import MODES as TIMING_MODES
from kernelrl.timing.cuda_timer import TimerSettings, events_exceed_wall, method_name, summarize
from kernelrl.timing.stats import paired_speedup
from kernelrl.verify.runtime_checks import RUNTIME_CHECKS
from kernelrl.verify.tolerance import tolerance_for

_ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH",
    "CC", "CXX", "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
)
_COMPILE_ERROR_TYPES = ("CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct")
_GiB = 1 << 30
# EvalConfig fields that cannot change a verdict's content (device: the result key has the device's name)
_NOT_IN_RESULT_KEY = frozenset({"device", "cache_dir", "result_cache", "warm_pool", "max_concurrency",
                                "standby_sandboxes"})
_PAIRED_REFERENCE_TOLERANCE = 1.25  # paired reference median / judge's eager median beyond which it is distrusted
_MAX_SAMPLED = 1 << 24  # output elements a timed-call sample may hold
RESULT_CACHE_ENV = "KERNELRL_RESULT_CACHE"  # "0" turns the result cache off for a whole process (CI, tests)
_POOL_MAX_FAILURES = 3
_POOL_SETUP_FAILED = ("kernelrl zygote launcher failed", "kernelrl sandbox init failed")  # see sandbox/zygote.py


def _new_workdir() -> Path:
    """A fresh evaluation directory (in memory where /dev/shm is writable): in/, out/ and the private home."""
    workdir = Path(tempfile.mkdtemp(prefix="kernelrl-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    for name in ("in", "out", "home"):
        (workdir / name).mkdir()
    return workdir


@dataclass
class _Standby:
    """A sandbox started before its candidate: forked, confined and device-initialized up to the point where it
    reads the candidate's part of the request from its control pipe. `key`: the settings it was started with."""

    child: SpawnedChild
    workdir: Path
    key: str

    def alive(self) -> bool:
        try:  # the leader (the zygote's launcher, which supervises the rest); its group exists after its setsid()
            os.kill(self.child.pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


class EvaluatorError(RuntimeError):
    """The evaluator itself cannot work (e.g. its judge process cannot start); not a verdict on a candidate."""


@dataclass(frozen=True)
class EvalConfig:
    device: str = "auto"  # 'auto', 'cpu', 'cuda' or 'cuda:N'
    trials: int = 5  # at least one per input set
    input_sets: tuple[str, ...] | None = None  # None: check + sweep* (+ bench on a GPU); see docs/problem-format.md
    seed: int | None = None  # None: a fresh secret seed per evaluation
    tolerances: dict[str, tuple[float, float]] | None = None  # dtype name -> (atol, rtol) overrides
    timing: bool = True  # GPU only
    inductor_baseline: bool = True
    timer: TimerSettings = field(default_factory=TimerSettings)
    startup_timeout_s: float = 120.0  # sandbox stub start (torch import, device init)
    compile_timeout_s: float = 300.0  # candidate import: Triton definitions, load_inline builds
    run_timeout_s: float = 120.0  # construction, correctness trials and timing
    judge_timeout_s: float = 900.0  # reference outputs, baselines (includes torch.compile)
    memory_limit_gb: float = 16.0  # host memory of the candidate process
    max_output_gb: float = 8.0  # largest tensor read back from the candidate
    log_limit_bytes: int = 32 * 1024
    static_checks: bool = True  # AST rules against reward hacking (kernelrl rules); off: sandbox layers only
    rule_policy: dict[str, str] | None = None  # rule id -> 'reject' | 'warn' | 'off' (overrides defaults)
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
    result_cache: bool = True  # reuse verdicts of identical candidates (kernelrl.cache; also KERNELRL_RESULT_CACHE=0)
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
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, not {self.device!r}")


def _trim(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


def _runtime_hack_text(hack: Finding) -> dict[str, str]:
    """The verdict's message and feedback for a rejecting runtime finding."""
    return {"message": f"runtime check {hack.rule}: {hack.detail or hack.message}"[:200],
            "feedback": f"[{hack.rule}] {hack.message}" + (f" ({hack.detail})" if hack.detail else "")}


def _ran_out_of_memory(result: EvalResult) -> bool:
    """Whether a verdict came from running out of (GPU) memory: the judge's or the sandbox's allocation, the
    candidate's forward, or the baselines. Inside the sandbox torch cannot reach NVML, so its out-of-memory
    report fails with an internal assert in CUDACachingAllocator instead of an OutOfMemoryError."""
    texts = [result.message, result.feedback]
    if result.status is Status.CORRECT and result.timing is not None:
        texts.append(result.timing.unavailable_reason or "")
    elif result.status is Status.CRASHED:  # e.g. the sandbox's own set-up could not create its CUDA context
        texts.append(result.log[-2000:])
    elif result.status is not Status.RUNTIME_ERROR:
        return False
    text = " ".join(texts).lower()
    return "out of memory" in text or "outofmemoryerror" in text or (
        "cudacachingallocator" in text and "nvml" in text)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Trials:
    """Per-evaluation bookkeeping for the child's streamed reports: compares each trial's outputs (through the
    judge) as it arrives and turns the stub's runtime facts into findings (kernelrl.verify.runtime_checks)."""

    def __init__(self, judge: JudgeClient, eval_id: str, out_dir: str, plan: list[dict], mode: str, tol, max_bytes,
                 policy: dict[str, str]):
        self.judge, self.eval_id, self.out_dir = judge, eval_id, out_dir
        self.plan, self.tol, self.max_bytes = plan, tol, max_bytes
        self.planned = sum(not t.get("timed_only") for t in plan)  # correctness trials; the rest feed timed calls
        self.policy = policy
        self.device = "cuda" if mode == "gpu" else "cpu"
        self.passed = 0
        self.run = 0
        self.mismatch: Mismatch | None = None
        self.findings: list[Finding] = []
        self.problem: str | None = None  # a protocol violation or judge failure
        self.timing_raw: dict | None = None
        self.census: dict | None = None
        self.inputs_unavailable: str | None = None  # the sandbox could not draw the judge's inputs (problem error)
        self.arrived: dict[str, float] = {}  # event kind -> monotonic time its last report was handled

    def phases(self, started: float, finished: float) -> dict[str, float]:
        """Seconds between the sandbox's milestones, for the phases this run reached."""
        marks = [("start", "ready"), ("import", "imported"), ("init", "initialized"), ("correctness", "trial"),
                 ("census", "census"), ("token", "timing_granted"), ("timing", "timing")]
        phases, last = {}, started
        for name, event in marks:
            if event in self.arrived:
                phases[name] = round(self.arrived[event] - last, 4)
                last = self.arrived[event]
        phases["finish"] = round(finished - last, 4)
        return phases

    @property
    def hack(self) -> Finding | None:
        return next((f for f in self.findings if f.policy == "reject"), None)

    def flag(self, check: str, detail: str = "") -> bool:
        """Record a runtime finding; False (stop the candidate) when its policy rejects."""
        policy = self.policy.get(check, "reject")
        if policy == "off":
            return True
        self.findings.append(Finding(rule=check, policy=policy, message=RUNTIME_CHECKS[check].message,
                                     detail=detail[:300]))
        return policy != "reject"

    def on_event(self, event: dict) -> bool:
        # stamped once handled: a trial's phase includes the judge's comparison, and the next report (already
        # waiting in the pipe) is not charged for it
        try:
            return self._handle(event)
        finally:
            self.arrived[event["event"]] = time.monotonic()

    def _handle(self, event: dict) -> bool:
        kind = event["event"]
        if kind == "timing":
            return self._on_timing(event)
        if kind == "census":
            self.census = event
            return True
        if kind == "inputs_unavailable":  # before the candidate was imported: the problem's inputs, not the candidate
            self.inputs_unavailable = str(event.get("detail", ""))[:500]
            return False
        if kind != "trial":
            return True
        if event.get("index") != self.run or self.run >= self.planned:
            self.problem = f"unexpected trial report {str(event.get('index'))[:20]}"
            return False
        self.run += 1
        raw = event.get("outputs")
        if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
            self.problem = "malformed trial report"
            return False
        for k, meta in enumerate(raw):
            if meta.get("dtype") not in ITEMSIZE:
                return self._mismatch(k, "dtype", f"output {k} has unsupported dtype {str(meta.get('dtype'))[:40]}")
            if meta.get("device") != self.device:
                return self._mismatch(k, "device", f"output {k} is on {str(meta.get('device'))[:20]}, "
                                                   f"expected {self.device}")
        # work still running behind forward's back explains a wrong answer: flagged before the comparison
        if not self._background_work(event, raw):
            return False
        found = self._compare(self.run - 1, raw, None, event.get("changed_inputs"))
        if found is False:
            return False
        if found is not None:
            self.mismatch = Mismatch(trial=self.run - 1, input_set=self.plan[self.run - 1]["set"], **found)
            return False
        # right values first (a wrong answer is reported as such), then how they were produced
        if not self._runtime_facts(event, raw):
            return False
        self.passed += 1
        return True

    def _background_work(self, event: dict, raw: list[dict]) -> bool:
        for k, meta in enumerate(raw):
            if meta.get("changed_after_sync") and not self.flag(
                    "rt-deferred-write", f"output {k} of trial {self.run - 1} changed after a device-wide sync"):
                return False
        threads = event.get("threads")
        return not threads or self.flag("rt-thread-left-running", f"{len(threads)} extra thread(s) alive")

    def _runtime_facts(self, event: dict, raw: list[dict]) -> bool:
        for k, meta in enumerate(raw):
            if meta.get("subclass") and not self.flag("rt-tensor-subclass", f"output {k}"):
                return False
            attrs = meta.get("instance_attrs")
            if attrs and not self.flag("rt-tensor-override", f"output {k} has instance attributes {attrs}"):
                return False
            if meta.get("aliases_input") and not self.flag("rt-output-aliases-input", f"output {k}"):
                return False
            if meta.get("reuses_buffer") and not self.flag("rt-output-reuses-buffer", f"output {k}"):
                return False
        if event.get("launches") == 0 and not self.flag(
                "rt-no-kernel-launched", f"trial {self.run - 1} launched no candidate kernel"):
            return False
        return True

    def _compare(self, trial: int, raw: list[dict], prefix: str | None, changed_inputs: object = None
                 ) -> dict | None | bool:
        """The judge's mismatch for one set of output files, None when they match, False on a failure."""
        try:
            metas = [validate_meta(m, self.max_bytes) for m in raw]
        except TensorFileError as exc:
            self.problem = f"unreadable output: {exc}"
            return False
        for meta, given in zip(metas, raw, strict=True):
            if given.get("ipc") is True and prefix is None:  # a correctness output in the judge's shared buffer
                meta["ipc"] = True
            sampled = given.get("sampled")
            if sampled is not None:  # a timed call's large output, sampled by the stub
                if not isinstance(sampled, int) or isinstance(sampled, bool) or not 0 < sampled <= _MAX_SAMPLED:
                    self.problem = "malformed output sample"
                    return False
                meta["sampled"], meta["sample_seed"] = sampled, given.get("sample_seed")  # the judge checks it
        changed = changed_inputs if isinstance(changed_inputs, list) else []
        try:
            return self.judge.request("compare", eval_id=self.eval_id, trial=trial, out_dir=self.out_dir,
                                      outputs=metas, atol=self.tol.atol, rtol=self.tol.rtol, prefix=prefix,
                                      changed_inputs=[k for k in changed[:64] if isinstance(k, int)])["mismatch"]
        except JudgeError as exc:
            self.problem = f"outputs could not be compared: {str(exc)[-500:]}"
            return False

    def _on_timing(self, event: dict) -> bool:
        self.timing_raw = event
        checked = event.get("checked")
        if not isinstance(checked, list) or not checked:
            self.problem = "the timing report names no checked call"
            return False
        for n, check in enumerate(checked[:16]):
            trial = check.get("trial") if isinstance(check, dict) else None
            if not isinstance(trial, int) or not 0 <= trial < len(self.plan) or not isinstance(check.get("outputs"), list):
                self.problem = "malformed timed-call check"
                return False
            found = self._compare(trial, check["outputs"], f"timed{n}")
            if found is False:
                return False
            if found is not None:
                return self.flag("rt-timed-output-mismatch",
                                  f"timed call {check.get('rep')} (inputs of trial {trial}): {found.get('detail', '')}")
        threads = event.get("threads")
        if threads and not self.flag("rt-thread-left-running", f"{len(threads)} extra thread(s) alive during or after timing"):
            return False
        calls, launches = event.get("calls"), event.get("launches")
        if isinstance(calls, int) and isinstance(launches, int) and launches < calls:
            return self.flag("rt-no-kernel-launched", f"{launches} candidate kernel launches in {calls} timed calls")
        return True

    def _mismatch(self, output_index: int, reason: str, detail: str) -> bool:
        self.mismatch = Mismatch(trial=self.run - 1, output_index=output_index, reason=reason, detail=detail,
                                 input_set=self.plan[self.run - 1]["set"])
        return False


class Evaluator:
    """Evaluates candidates against problems. Reuse one object: it keeps its judge process warm.

    `evaluate` may be called from several threads at once (`evaluate_many` does): judge requests are
    serialized by the judge client's lock, the zygote's forks by its client's lock, and GPU timing (the
    candidate's timed run, baselines, the bandwidth probe) by this evaluator's timing lock, one per device.
    """

    def __init__(self, config: EvalConfig | None = None, **overrides) -> None:
        self.config = dataclasses.replace(config or EvalConfig(), **overrides)
        device = self.config.device
        self._cuda_index = device.split(":", 1)[1] if device.startswith("cuda:") else None
        judge_device = "cuda" if self._cuda_index is not None else device
        self._judge = JudgeClient(judge_device, self.config.judge_timeout_s, self._visible_devices())
        cache = self.config.cache_dir or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelrl"
        self._cache_dir = Path(cache)
        self._sandbox_prefix: list[str] | None = None  # probed on first use
        self._audits: dict[str, ProblemAudit] = {}  # problem sha -> audit (correctness flags, no timing)
        self._baseline_cache = BaselineCache(self._cache_dir / BaselineCache.FILE)
        use_results = self.config.result_cache and os.environ.get(RESULT_CACHE_ENV, "1") != "0"
        self._result_cache = ResultCache(self._cache_dir / ResultCache.FILE) if use_results else None
        self._build: str | None = None  # kernelrl_build(), computed on first use
        self._zygote: ZygoteClient | None = None  # the warm pool, started on first use
        # one timed run at a time on this evaluator's device, other sandboxes and judge requests paused meanwhile
        self._gate = DeviceGate(hold_also=[self._judge.lock])
        self._slots = RunSlots()  # evaluations share the device; one that ran out of memory is retried alone
        self._pool_failures = 0  # consecutive zygote failures; at _POOL_MAX_FAILURES the pool is given up
        self._standbys: list[_Standby] = []  # started sandboxes waiting for a candidate
        self._standby_lock = threading.Lock()

    def _visible_devices(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self._cuda_index} if self._cuda_index is not None else {}

    # -- public API ----------------------------------------------------------------------------------------
    def environment(self) -> Environment:
        info = self._judge_info()
        return Environment(
            mode=info["mode"], device_name=info["device_name"], torch_version=info["torch_version"],
            triton_version=info["triton_version"], python_version=info["python_version"],
            kernelrl_version=__version__,
        )

    def evaluate_completion(self, problem: Problem, completion: str) -> EvalResult:
        """Extract the candidate from an LLM completion, then evaluate it."""
        extraction = extract_code(completion)
        if extraction.code is None:
            return EvalResult(status=Status.FORMAT_ERROR, stage=Stage.EXTRACT, problem_id=problem.id,
                              message="no code block defines ModelNew", feedback=extraction.error or "",
                              problem_sha256=problem.sha256, environment=self.environment())
        return self.evaluate(problem, extraction.code)

    def evaluate(self, problem: Problem, code: str) -> EvalResult:
        """Evaluate candidate source code (a module defining `ModelNew`). An identical candidate (same AST
        without docstrings, same problem, device, versions and settings) returns the stored verdict with
        `cached=True` when the result cache is on."""
        started = time.monotonic()
        env = self.environment()
        key = self._result_key(problem, code, env) if self._result_cache is not None else None
        result = self._result_cache.get(key) if self._result_cache is not None and key is not None else None
        if result is not None:
            result.candidate_sha256 = _sha(code)
        else:
            result = self._evaluate(problem, code, env)
            result.wall_time_s = round(time.monotonic() - started, 4)
            if self._result_cache is not None and key is not None:
                self._result_cache.put(key, result)
        result.wall_time_s = round(time.monotonic() - started, 4)
        return result

    def cache_stats(self) -> dict[str, CacheStats]:
        """Hits, misses, stores and errors of this evaluator's caches ('results', 'baselines')."""
        stats = {"baselines": self._baseline_cache.stats}
        if self._result_cache is not None:
            stats["results"] = self._result_cache.stats
        return stats

    def time_baselines(self, problem: Problem, seed: int = 0, fresh: bool = False) -> TimingReport:
        """Eager and Inductor times of the problem's reference (GPU only), from the baseline cache in
        `cache_dir` when it has them (`TimingStats.source == "cache"`); `fresh` re-times and overwrites them."""
        info = self._judge_info()
        if info["mode"] != "gpu":
            return TimingReport(unavailable_reason="baselines are timed on a GPU only")
        return self._baselines(problem, seed, TimingReport(), fresh=fresh)

    def audit(self, problem: Problem, timing: bool = False) -> ProblemAudit:
        """Audit a problem on this evaluator's device (cached per problem unless `timing` is asked for)."""
        self._judge_info()
        if timing:
            return audit_problem(self._judge, problem, timing=True, tolerances=self.config.tolerances)
        if problem.sha256 not in self._audits:
            self._audits[problem.sha256] = audit_problem(self._judge, problem, tolerances=self.config.tolerances)
        return self._audits[problem.sha256]

    def evaluate_many(self, items: Iterable[tuple[Problem, str]], *, max_concurrency: int | None = None,
                      with_index: bool = False) -> Iterator[EvalResult] | Iterator[tuple[int, EvalResult]]:
        """Evaluate (problem, code) pairs concurrently, yielding results as they finish (not in input order;
        `with_index=True` yields (position, result)). Up to `max_concurrency` sandboxes (default
        `config.max_concurrency`) compile and check at once; GPU timing stays one at a time. `items` is read
        lazily, so it may be a generator fed by a policy."""
        workers = max_concurrency or self.config.max_concurrency
        self.warm_up()  # long-lived workers start in this thread (their parent-death signal follows it)
        source = enumerate(items)
        running: dict[Future, int] = {}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kernelrl-eval") as pool:
            try:
                for index, (problem, code) in itertools.islice(source, workers):
                    running[pool.submit(self.evaluate, problem, code)] = index
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        index = running.pop(future)
                        result = future.result()
                        for nxt, (problem, code) in itertools.islice(source, 1):
                            running[pool.submit(self.evaluate, problem, code)] = nxt
                        yield (index, result) if with_index else result
            finally:
                for future in running:
                    future.cancel()

    async def aevaluate(self, problem: Problem, code: str) -> EvalResult:
        """`evaluate` without blocking the event loop (runs in a worker thread)."""
        self.warm_up()
        return await asyncio.to_thread(self.evaluate, problem, code)

    async def aevaluate_many(self, items: Iterable[tuple[Problem, str]], *, max_concurrency: int | None = None,
                             with_index: bool = False) -> AsyncIterator:
        """Async variant of `evaluate_many`: `async for result in ev.aevaluate_many(items): ...`"""
        self.warm_up()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        done = object()
        stop = threading.Event()

        def produce() -> None:
            try:
                for item in self.evaluate_many(items, max_concurrency=max_concurrency, with_index=with_index):
                    loop.call_soon_threadsafe(queue.put_nowait, (item, None))
                    if stop.is_set():
                        break
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                loop.call_soon_threadsafe(queue.put_nowait, (None, exc))
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, (done, None))

        producer = threading.Thread(target=produce, name="kernelrl-aevaluate", daemon=True)
        producer.start()
        try:
            while True:
                item, exc = await queue.get()
                if exc is not None:
                    raise exc
                if item is done:
                    return
                yield item
        finally:
            stop.set()

    def warm_up(self) -> None:
        """Start the judge and (with `warm_pool`) the zygote and the standby sandboxes now rather than on the
        first evaluation."""
        mode = self._device_mode()
        if self._pool_enabled():
            try:
                self._pool().ensure_started()
                if self.config.standby_sandboxes > 0:
                    with self._standby_lock:
                        self._fill_standbys(mode, json.dumps(self._sandbox_settings(mode), sort_keys=True))
            except (ZygoteError, OSError):
                self._pool_failures += 1  # evaluations fall back to fresh processes

    def close(self) -> None:
        with self._standby_lock:
            for standby in self._standbys:
                self._discard_standby(standby)
            self._standbys = []
        self._judge.close()
        self._baseline_cache.close()
        if self._result_cache is not None:
            self._result_cache.close()
        if self._zygote is not None:
            self._zygote.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------------------
    def _judge_info(self) -> dict:
        try:
            return self._judge.ensure_started()
        except JudgeError as exc:
            raise EvaluatorError(str(exc)) from None

    def _result_key(self, problem: Problem, code: str, env: Environment) -> str:
        if self._build is None:
            self._build = kernelrl_build()
        settings = {k: v for k, v in dataclasses.asdict(self.config).items() if k not in _NOT_IN_RESULT_KEY}
        return result_key(problem.sha256, code, env, settings, self._build)

    def _evaluate(self, problem: Problem, code: str, env: Environment) -> EvalResult:
        base = {"problem_id": problem.id, "problem_sha256": problem.sha256, "candidate_sha256": _sha(code),
                "environment": env}
        early = self._before_running(problem, code, env, base)
        if early is not None:
            return early
        started = time.monotonic()
        with self._slots.shared() as slot:
            result = self._attempt(problem, code, env, base)
        if slot.overlapped and _ran_out_of_memory(result):
            # the memory may have been the other evaluations': once more with the device to itself, and that
            # verdict stands (a candidate that needs too much memory runs out alone too)
            first_s = time.monotonic() - started
            with self._slots.exclusive():
                result = self._attempt(problem, code, env, base)
            result.phases_s["oom_retry"] = round(first_s, 4)  # the first attempt's wall time
        return result

    def _attempt(self, problem: Problem, code: str, env: Environment, base: dict) -> EvalResult:
        standby = self._take_standby(env.mode)
        workdir = standby.workdir if standby is not None else _new_workdir()
        eval_id = uuid.uuid4().hex
        try:
            return self._run(problem, code, env, base, workdir, eval_id, standby)
        finally:
            if self._judge.running():  # a judge that died took this evaluation's state with it
                try:
                    self._judge.request("release", eval_id=eval_id, timeout_s=60)
                except JudgeError:
                    pass
            shutil.rmtree(workdir, ignore_errors=True)

    def _before_running(self, problem: Problem, code: str, env: Environment, base: dict) -> EvalResult | None:
        """Verdicts reached without running anything: parse, problem audit, static rules, backend support."""
        static = analyze(code)
        if static.syntax_error:
            return EvalResult(status=Status.COMPILE_ERROR, stage=Stage.STATIC, message="syntax error",
                              feedback=static.syntax_error, **base)
        if not static.defines_modelnew:
            return EvalResult(status=Status.FORMAT_ERROR, stage=Stage.STATIC, message="no class ModelNew",
                              feedback="the module must define class ModelNew(nn.Module) with the same "
                                       "constructor and forward signatures as Model", **base)
        if self.config.refuse_flagged_problems:  # the problem first: no candidate can pass a broken one
            audit = self.audit(problem)
            if audit.refusing:
                flags = ", ".join(sorted({f.flag for f in audit.refusing}))
                return EvalResult(status=Status.UNSUPPORTED, stage=Stage.REFERENCE,
                                  message=f"problem refused by the audit: {flags}",
                                  feedback=f"{audit.summary()}. The problem cannot grade kernels; fix it, waive the "
                                           "flag in its METADATA audit_waivers, or pass refuse_flagged_problems=False.",
                                  **base)
        if self.config.static_checks:
            base["findings"] = analyze_rules(code, self.config.rule_policy)
            rejected = [f for f in base["findings"] if f.policy == "reject"]
            if rejected:
                feedback = "\n".join(f"line {f.line}: [{f.rule}] {f.message}" + (f" ({f.detail})" if f.detail else "")
                                      for f in rejected)
                first = rejected[0]
                return EvalResult(status=Status.HACK_DETECTED, stage=Stage.STATIC,
                                  message=f"static check {first.rule}: {first.detail or first.message}"[:200],
                                  feedback=feedback, **base)
        if static.backend == "cuda-cpp" and env.mode != "gpu":
            return EvalResult(status=Status.UNSUPPORTED, stage=Stage.STATIC,
                              message="CUDA C++ candidates need a CUDA GPU; this evaluator runs on the CPU",
                              feedback="torch.utils.cpp_extension / load_inline builds CUDA code, which needs a "
                                       "CUDA toolkit and GPU; evaluate on a GPU machine or write Triton", **base)
        return None

    def _run(self, problem, code, env, base, workdir: Path, eval_id: str, standby: _Standby | None) -> EvalResult:
        cfg = self.config
        in_dir, out_dir, home = workdir / "in", workdir / "out", workdir / "home"
        master = cfg.seed if cfg.seed is not None else secrets.randbits(62)
        started = time.monotonic()
        try:
            prepared = self._judge.request("prepare", eval_id=eval_id, problem_path=str(problem.path),
                                           problem_sha256=problem.sha256, master_seed=master,
                                           min_trials=cfg.trials, input_sets=list(cfg.input_sets or []), in_dir=str(in_dir),
                                           timing_variants=cfg.timing_variants if env.mode == "gpu" and cfg.timing else 0)
        except JudgeError as exc:
            return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.REFERENCE,
                              message="the problem's reference failed (a problem error, not the candidate's)",
                              feedback=_trim(str(exc)), **base)
        tol = tolerance_for(prepared["output_dtypes"], cfg.tolerances)
        if env.mode != "gpu" and "bfloat16" in prepared["output_dtypes"] + prepared["input_dtypes"]:
            return EvalResult(status=Status.UNSUPPORTED, stage=Stage.REFERENCE,
                              message="bfloat16 problems need a GPU: the Triton interpreter computes bf16 wrongly",
                              **base)
        candidate_path = workdir / "candidate.py"
        candidate_path.write_text(code)
        # this candidate's own compile caches: CUDA-extension builds and Triton kernels
        caches = {"TRITON_CACHE_DIR": str(self._triton_dir(code)), "TORCH_EXTENSIONS_DIR": str(self._extension_dir(code))}
        request = {
            **self._sandbox_settings(env.mode),
            "problem_path": str(problem.path), "candidate_path": str(candidate_path),
            "in_dir": str(in_dir), "out_dir": str(out_dir), "trials": prepared["trials"],
            "timing_set": prepared["timing_set"],
            "timing": cfg.timing, "timer": dataclasses.asdict(cfg.timer), "timing_mode": cfg.timing_mode,
            "paired_baseline": cfg.paired_baseline,
            # the measured forward behind rt-kernel-gpu-fraction, skipped when that check cannot reject or warn
            "kernel_share": cfg.min_kernel_gpu_fraction > 0 and (cfg.runtime_policy or {}).get(
                "rt-kernel-gpu-fraction", "reject") != "off",
            "memory_limit_bytes": int(cfg.memory_limit_gb * _GiB), "readonly_fs": cfg.readonly_filesystem,
            # its own compile caches are the only writable places outside workdir
            "writable_paths": [str(workdir), *caches.values()],
        }
        prepare_s = time.monotonic() - started
        trials = _Trials(self._judge, eval_id, str(out_dir), prepared["trials"], env.mode, tol,
                         int(cfg.max_output_gb * _GiB), dict(cfg.runtime_policy or {}))
        sandbox_started = time.monotonic()
        outcome, path = self._run_sandbox(workdir, home, caches, env.mode, trials, request, standby)
        phases = {"prepare": round(prepare_s, 4), **trials.phases(sandbox_started, time.monotonic())}
        ready = outcome.last("ready") or {}
        iso = ready.get("isolation", [])
        iso = [str(x)[:32] for x in iso] if isinstance(iso, list) else []
        env = dataclasses.replace(env, isolation=[*iso, path] if iso else [])
        correctness = CorrectnessReport(
            trials_run=trials.run, trials_passed=trials.passed, trials_planned=trials.planned,
            seeds_sha256=prepared["seeds_sha256"], atol=tol.atol, rtol=tol.rtol, dtype=tol.dtype,
            input_sets=prepared["sets"], mismatch=trials.mismatch,
        )
        base = {**base, "environment": env, "log": outcome.log, "log_bytes_dropped": outcome.log_bytes_dropped,
                "correctness": correctness, "phases_s": phases, "findings": [*base.get("findings", []), *trials.findings]}
        verdict = self._verdict(outcome, trials, base)
        if verdict.status is Status.CORRECT:
            timing_started = time.monotonic()
            verdict.timing = self._timing(problem, env, trials, master, prepared)
            verdict.phases_s["baselines"] = round(time.monotonic() - timing_started, 4)
            verdict = self._timing_checks(verdict, trials)
        return verdict

    def _sandbox_settings(self, mode: str) -> dict:
        """The request's part a sandbox needs before its candidate is known (a standby's whole request)."""
        cfg = self.config
        return {"mode": mode, "isolate_network": cfg.isolate_network,
                "max_file_bytes": int(cfg.max_output_gb * _GiB) * 2}

    def _take_standby(self, mode: str) -> _Standby | None:
        """A waiting standby for this evaluation (started now if none waits), after starting replacements up to
        `standby_sandboxes`; None without the warm pool."""
        if self.config.standby_sandboxes < 1 or not self._pool_enabled():
            return None
        key = json.dumps(self._sandbox_settings(mode), sort_keys=True)
        with self._standby_lock:
            taken, waiting = None, []
            for standby in self._standbys:
                if standby.key != key or not standby.alive():
                    self._discard_standby(standby)
                elif taken is None:
                    taken = standby
                else:
                    waiting.append(standby)
            self._standbys = waiting
            try:
                if taken is None:
                    taken = self._start_standby(mode, key)
                self._fill_standbys(mode, key)
            except (ZygoteError, OSError):
                self._pool_failures += 1  # the evaluation goes the usual way, which counts and falls back
        return taken

    def _fill_standbys(self, mode: str, key: str) -> None:
        while len(self._standbys) < self.config.standby_sandboxes:
            self._standbys.append(self._start_standby(mode, key))

    def _start_standby(self, mode: str, key: str) -> _Standby:
        workdir = _new_workdir()
        home = workdir / "home"
        # its Triton warm-up compiles into the harness's cache, which no candidate can write (read-only mounts)
        env = {**self._child_env(mode, workdir, home), "TRITON_CACHE_DIR": str(self._harness_triton_dir()),
               "TORCH_EXTENSIONS_DIR": str(workdir / "torch-extensions")}
        request_path = workdir / "request.json"
        request_path.write_text(json.dumps({**self._sandbox_settings(mode), "standby": True}))
        zygote = self._pool()
        message = {"op": "fork", "env": env, "cwd": str(home), "request_path": str(request_path)}
        try:
            child = spawn_child([], env=env, cwd=str(home), spawn=lambda *fds: zygote.spawn(message, list(fds)))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self._gate.register(child.pgid)  # stopped while another sandbox times, like any running sandbox
        return _Standby(child=child, workdir=workdir, key=key)

    def _discard_standby(self, standby: _Standby) -> None:
        self._gate.unregister(standby.child.pgid)
        standby.child.close()
        shutil.rmtree(standby.workdir, ignore_errors=True)

    def _harness_triton_dir(self) -> Path:
        directory = self._cache_dir / "triton" / "kernelrl-harness"
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _pool_enabled(self) -> bool:
        """The zygote path needs the PID namespace (its forked children unshare one themselves)."""
        cfg = self.config
        if not (cfg.warm_pool and cfg.isolate_processes) or self._pool_failures >= _POOL_MAX_FAILURES:
            return False
        if self._sandbox_prefix is None:
            self._sandbox_prefix = pid_namespace_prefix()
        return bool(self._sandbox_prefix)

    def _device_mode(self) -> str:
        return self._judge_info()["mode"]

    def _pool(self) -> ZygoteClient:
        if self._zygote is None:
            env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOWLIST}
            env.update(self._visible_devices())
            neutral = tempfile.gettempdir()  # the zygote never writes; each child gets its own HOME/TMPDIR
            env.update({"PYTHONPATH": python_env()["PYTHONPATH"], "HOME": neutral, "TMPDIR": neutral})
            if self._device_mode() != "gpu":
                env["TRITON_INTERPRET"] = "1"
            self._zygote = ZygoteClient(env, self.config.startup_timeout_s)
        return self._zygote

    def _run_sandbox(self, workdir: Path, home: Path, caches: dict[str, str], mode: str, trials: _Trials, request: dict,
                     standby: _Standby | None) -> tuple[ChildOutcome, str]:
        """Run the candidate's sandbox: a standby (started ahead, its assignment sent on its control pipe), else
        forked from the zygote when the warm pool is on and works, else a fresh process. Returns the outcome and
        which path ran ('zygote-standby', 'zygote' or 'fresh-process'). The request file is written before each
        start: the stub deletes it once read (it holds the input seeds)."""
        cfg = self.config
        child_env = {**self._child_env(mode, workdir, home), **caches}
        watch = dict(
            timeouts={"start": cfg.startup_timeout_s, "import": cfg.compile_timeout_s, "run": cfg.run_timeout_s},
            memory_limit_bytes=int(cfg.memory_limit_gb * _GiB), log_limit_bytes=cfg.log_limit_bytes,
            on_event=trials.on_event, gate=self._gate,
            token_allowed=lambda: trials.passed == trials.planned and trials.hack is None,
        )
        common = dict(env=child_env, cwd=str(home), **watch)
        if standby is not None:
            try:
                standby.child.send((json.dumps({"request": request, "env": caches}) + "\n").encode())
            except OSError:  # it died waiting
                self._gate.unregister(standby.child.pgid)
                standby.child.close()
            else:
                outcome = watch_child(standby.child, **watch)
                if outcome.events or outcome.timed_out_phase:
                    return outcome, "zygote-standby"
                # it died before it was ready (no candidate code ran): start one the usual way
        request_path = workdir / "request.json"
        if self._pool_enabled():
            request_path.write_text(json.dumps(request))
            zygote = self._pool()
            message = {"op": "fork", "env": child_env, "cwd": str(home), "request_path": str(request_path)}
            try:
                outcome = run_child([], spawn=lambda *fds: zygote.spawn(message, list(fds)), **common)
            except ZygoteError:  # cannot start or fork here: the fresh-process path below
                self._pool_failures += 1
            else:
                if outcome.events or not outcome.log.startswith(_POOL_SETUP_FAILED):
                    self._pool_failures = 0
                    return outcome, "zygote"
                # the launcher could not set the sandbox up (no event: no candidate code ran): rerun fresh
                self._pool_failures += 1
        if self._sandbox_prefix is None:
            self._sandbox_prefix = pid_namespace_prefix() if cfg.isolate_processes else []
        prefix = self._sandbox_prefix if cfg.isolate_processes else []
        request_path.write_text(json.dumps(request))
        argv = [*prefix, sys.executable, "-m", "kernelrl.sandbox.child", str(request_path)]
        return run_child(argv, **common), "fresh-process"

    def _triton_dir(self, code: str) -> Path:
        """Triton's compile cache for this exact source: a re-evaluated identical candidate (common in RL)
        compiles warm, and no candidate can poison another's cache (nor gain anything from its own)."""
        directory = self._cache_dir / "triton" / _sha(code)[:24]
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _extension_dir(self, code: str) -> Path:
        directory = self._cache_dir / "torch_extensions" / _sha(code)[:24]
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _child_env(self, mode: str, workdir: Path, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in _ENV_ALLOWLIST}
        env.update(self._visible_devices())
        env.update({
            "PYTHONPATH": python_env()["PYTHONPATH"],
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": str(home),
            "TMPDIR": str(home),
            "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor-cache"),
            # the caller points TORCH_EXTENSIONS_DIR (identical CUDA C++ sources reuse their build: ~0.02 s
            # instead of ~65 s) and TRITON_CACHE_DIR at the candidate's own directories
        })
        if mode != "gpu":
            env["TRITON_INTERPRET"] = "1"
        return env

    def _verdict(self, outcome: ChildOutcome, trials: _Trials, base: dict) -> EvalResult:
        cfg = self.config
        stage_of = {"start": Stage.IMPORT, "import": Stage.IMPORT, "run": Stage.CORRECTNESS}
        reached = Stage.IMPORT
        for event, stage in (("imported", Stage.INIT), ("initialized", Stage.CORRECTNESS), ("timing", Stage.TIMING)):
            if outcome.last(event):
                reached = stage
        if trials.inputs_unavailable is not None:
            return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.REFERENCE,
                              message="the sandbox could not reproduce the problem's inputs (a problem or harness "
                                      "error, not the candidate's)",
                              feedback=f"{trials.inputs_unavailable}. get_inputs() must depend only on torch's seed.",
                              **base)
        if trials.mismatch is not None:
            m = trials.mismatch
            return EvalResult(status=Status.WRONG_OUTPUT, stage=Stage.CORRECTNESS,
                              message=f"wrong output (trial {m.trial} on input set {m.input_set}, output "
                                      f"{m.output_index}: {m.reason})",
                              feedback=m.detail, **base)
        hack = trials.hack
        if hack is not None:
            stage = Stage.TIMING if outcome.last("timing") else Stage.CORRECTNESS
            return EvalResult(status=Status.HACK_DETECTED, stage=stage, **_runtime_hack_text(hack), **base)
        error = outcome.last("error")
        if error is not None:
            exc_type = str(error.get("exc_type", "Exception"))[:200]
            stage = {"import": Stage.IMPORT, "init": Stage.INIT, "timing": Stage.TIMING}.get(
                error.get("stage"), Stage.CORRECTNESS)
            short = exc_type.rsplit(".", 1)[-1]
            compile_failure = stage is Stage.IMPORT or short in _COMPILE_ERROR_TYPES
            if short == "MemoryError" or "out of memory" in str(error.get("message", "")).lower():
                compile_failure = False
            feedback = _trim(str(error.get("traceback") or error.get("message", "")))
            where = {Stage.IMPORT: "importing the candidate", Stage.INIT: "constructing ModelNew",
                     Stage.CORRECTNESS: "running forward", Stage.TIMING: "timing forward"}[stage]
            return EvalResult(status=Status.COMPILE_ERROR if compile_failure else Status.RUNTIME_ERROR, stage=stage,
                              message=f"{short} while {where}: {str(error.get('message', ''))[:200]}",
                              feedback=feedback, **base)
        exited = outcome.last("exit")
        if exited is not None:
            return EvalResult(status=Status.CRASHED, stage=reached,
                              message=f"the candidate called sys.exit({str(exited.get('code'))[:50]})",
                              feedback="the candidate must not exit the process", **base)
        if outcome.memory_exceeded_bytes is not None:
            return EvalResult(status=Status.CRASHED, stage=reached,
                              message=f"killed: host memory {outcome.memory_exceeded_bytes / _GiB:.1f} GiB exceeded "
                                      f"the {cfg.memory_limit_gb:g} GiB limit",
                              feedback="the candidate used too much host memory", **base)
        if outcome.timed_out_phase is not None:
            what = {"start": "sandbox start-up", "import": "import/compilation", "run": "execution"}
            phase = outcome.timed_out_phase
            return EvalResult(status=Status.TIMEOUT, stage=stage_of[phase],
                              message=f"timed out after {outcome.timeout_s:g} s in {what[phase]}",
                              feedback=f"the candidate did not finish {what[phase]} within {outcome.timeout_s:g} s "
                                       "(infinite loop, deadlock or far too slow)", **base)
        if trials.problem or outcome.protocol_error:
            detail = trials.problem or outcome.protocol_error
            return EvalResult(status=Status.CRASHED, stage=reached, message=f"sandbox protocol violated: {detail}",
                              feedback=detail or "", **base)
        if outcome.last("done") is None or trials.passed < trials.planned:
            code = outcome.returncode
            ended = outcome.last("terminated")  # from the namespace's init process, when there is one
            if ended is not None:
                code = -int(ended["signal"]) if "signal" in ended else ended.get("exit_code")
            how = f"exited with code {code}"
            if code is not None and code < 0:
                try:
                    how = f"was killed by {signal.Signals(-code).name}"
                except ValueError:
                    how = f"was killed by signal {-code}"
            return EvalResult(status=Status.CRASHED, stage=reached,
                              message=f"the candidate process {how} before reporting all results",
                              feedback=f"the process {how} during {reached.value}; "
                                       "see the log for what it printed", **base)
        return EvalResult(status=Status.CORRECT, stage=Stage.DONE,
                          message=f"correct ({trials.passed}/{trials.planned} trials)", **base)

    def _timing_checks(self, verdict: EvalResult, trials: _Trials) -> EvalResult:
        """Runtime checks on a correct candidate's timing: timer integrity, speed-of-light floor, share of GPU
        time in the candidate's own kernels. A rejection turns the verdict into hack_detected."""
        timing, cfg = verdict.timing, self.config
        if timing is None or timing.candidate is None:
            return verdict
        checks = []
        if trials.timing_raw is not None and events_exceed_wall(trials.timing_raw):
            checks.append(("rt-timer-inconsistent", f"event median {timing.candidate.median_ms:.4f} ms > wall median "
                                                    f"{timing.candidate.wall_median_ms} ms"))
        if timing.floor_ms is not None and timing.candidate.median_ms < timing.floor_ms:
            checks.append(("rt-below-speed-of-light", f"{timing.candidate.median_ms:.4f} ms < floor "
                                                      f"{timing.floor_ms:.4f} ms"))
        fraction = timing.kernel_gpu_fraction
        if fraction is not None and fraction < cfg.min_kernel_gpu_fraction:
            checks.append(("rt-kernel-gpu-fraction", f"{fraction:.0%} of GPU time in the candidate's kernels, "
                                                     f"minimum {cfg.min_kernel_gpu_fraction:.0%}"))
        before = len(trials.findings)
        for check, detail in checks:
            trials.flag(check, detail)
        verdict.findings = [*verdict.findings, *trials.findings[before:]]
        hack = trials.hack
        if hack is None:
            return verdict
        return dataclasses.replace(verdict, status=Status.HACK_DETECTED, stage=Stage.TIMING, **_runtime_hack_text(hack))

    def _floor_ms(self, prepared: dict) -> float | None:
        """Speed-of-light floor of the timed call: the larger of input bytes over the measured device bandwidth
        and reference FLOPs over the measured peak matmul rate, each with the configured margin."""
        timed = [t for t in prepared["trials"] if t["set"] == prepared["timing_set"]]
        if not timed:
            return None
        try:
            bandwidth = self._judge.request("bandwidth")["bytes_per_s"]
            peak = self._judge.request("peak_flops")["flops_per_s"] if prepared.get("timing_flops") else None
        except JudgeError:
            return None
        return speed_of_light_ms(sum(nbytes_of(m) for m in timed[0]["inputs"]), prepared.get("timing_flops"),
                                 bandwidth, peak, self.config.speed_of_light_margin, self.config.flop_floor_margin)

    def _timing(self, problem: Problem, env: Environment, trials: _Trials, seed: int, prepared: dict) -> TimingReport:
        if env.mode != "gpu":
            return TimingReport(unavailable_reason="cpu-interpreter mode: Triton runs in the interpreter, so times "
                                                   "say nothing about GPU speed")
        if not self.config.timing:
            return TimingReport(unavailable_reason="timing disabled")
        report = TimingReport()
        try:
            report.candidate = summarize(trials.timing_raw or {"times_ms": []})
        except (ValueError, TypeError, KeyError) as exc:
            return TimingReport(unavailable_reason=f"the candidate's timing report is unusable: {exc}")
        report.timed_checks = len(trials.timing_raw.get("checked") or [])
        census = trials.census or {}
        fraction = census.get("fraction")
        report.kernel_gpu_fraction = float(fraction) if isinstance(fraction, int | float) else None
        method = census.get("method")
        report.kernel_gpu_fraction_method = method if method in ("events", "profiler") else None
        with self._gate.exclusive():  # the judge's timed runs: nothing else on this device meanwhile
            report.floor_ms = self._floor_ms(prepared)
            report = self._baselines(problem, seed, report)
        if trials.timing_raw.get("paired_reference") is not None:
            self._paired(report, trials.timing_raw)
        return report

    def _paired(self, report: TimingReport, raw: dict) -> None:
        """The speedup over the reference timed interleaved in the sandbox, with its confidence interval. That
        reference shares the candidate's process, so it is cross-checked with the judge's eager time first."""
        try:
            reference = summarize(raw["paired_reference"])
            if report.eager is None or report.candidate is None:
                raise ValueError("no eager baseline to cross-check the paired reference with")
            if reference.median_ms > _PAIRED_REFERENCE_TOLERANCE * report.eager.median_ms:
                raise ValueError(f"the reference ran at {reference.median_ms:.4f} ms in the sandbox, "
                                 f"{report.eager.median_ms:.4f} ms in the judge")
            times = raw["times_ms"]
            report.paired_vs_eager = paired_speedup(times, raw["paired_reference"]["times_ms"],
                                                    rng=random.Random(len(times)))
        except (ValueError, TypeError, KeyError) as exc:
            note = f"paired timing dropped: {exc}"
            report.unavailable_reason = f"{report.unavailable_reason}; {note}" if report.unavailable_reason else note

    def _baselines(self, problem: Problem, seed: int, report: TimingReport, fresh: bool = False) -> TimingReport:
        """Eager/Inductor times from the baseline cache, else from the judge (then stored); `fresh` re-times
        and overwrites the stored numbers."""
        cfg = self.config
        # baselines are timed as the candidate is: replays of a captured graph in cuda-graph mode
        key = baseline_key(problem.sha256, timing_set_of(problem.source), self.environment(),
                           method_name(cfg.timing_mode, cfg.timer), dataclasses.asdict(cfg.timer))
        entry = None if fresh else self._baseline_cache.get(key, need_inductor=cfg.inductor_baseline)
        if entry is None:
            try:
                raw = self._judge.request("baselines", problem_path=str(problem.path), problem_sha256=problem.sha256,
                                          seed=seed, timer=dataclasses.asdict(cfg.timer), mode=cfg.timing_mode,
                                          inductor=cfg.inductor_baseline, fresh=fresh)
            except JudgeError as exc:
                report.unavailable_reason = f"baselines failed: {str(exc)[-300:]}"
                return report
            if "eager" not in raw:
                report.unavailable_reason = raw.get("unavailable", "no baseline times")
                return report
            entry = BaselineEntry(eager=summarize(raw["eager"]),
                                  inductor=summarize(raw["inductor"]) if "inductor" in raw else None,
                                  inductor_error=str(raw["inductor_error"])[:600] if raw.get("inductor_error") else None)
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
        return report


def speed_of_light_ms(input_bytes: int, flops: int | None, bytes_per_s: float | None, flops_per_s: float | None,
                      margin: float, flop_margin: float) -> float | None:
    """No correct kernel is faster than reading its inputs once at full bandwidth or doing the reference's
    matmul/conv FLOPs at the device's best measured matmul rate; the margins (>1) leave room for measurement
    error and for work an honest kernel may legitimately skip."""
    floors = []
    if bytes_per_s:
        floors.append(input_bytes / (margin * bytes_per_s) * 1e3)
    if flops and flops_per_s:
        floors.append(flops / (flop_margin * flops_per_s) * 1e3)
    return max(floors) if floors else None


def evaluate(problem: Problem, code: str, **config) -> EvalResult:
    """One-shot convenience: evaluate `code` with a throwaway Evaluator (prefer a long-lived Evaluator)."""
    with Evaluator(EvalConfig(**config)) as evaluator:
        return evaluator.evaluate(problem, code)
