"""The evaluator's public face: Problem + candidate (code or completion) -> EvalResult, one at a time or in
concurrent batches, sync or async, with the result and baseline caches.

This module is the verdict process. It never imports candidate code (and never imports torch): the candidate
runs in a sandboxed child (`kernelrl.sandbox.child`, started by `kernelrl.sandbox.launcher`), the reference
runs in the judge (`kernelrl.sandbox.judge`), and this process only compares what they report (`trials.py`)
and decides (`verdict.py`, pure); a correct candidate's times become a report in `measure.py`. One
evaluation's run, once its slots are granted, is `run.py`'s; this module holds the workers, caches and slots.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from kernelrl._version import __version__
from kernelrl.cache import BaselineCache, CacheStats, ResultCache, kernelrl_build, result_key
from kernelrl.candidates import Candidate
from kernelrl.evaluate.deadlines import Deadline, deadline_result
from kernelrl.evaluate.environment import KnownEnvironments
from kernelrl.evaluate.measure import Measurer
from kernelrl.evaluate.run import RunContext, run_evaluation
from kernelrl.evaluate.scorer import Indexed, ScorerBase, Work
from kernelrl.evaluate.settings import (
    RESULT_CACHE_ENV,
    EvalConfig,
    EvaluatorError,
    EvaluatorSettings,
    GiB,
    VerdictSettings,
    interpreter_incompatibility,
    split_settings,
)
from kernelrl.evaluate.slots import (
    DeviceMemory,
    FairSlots,
    HeldSlot,
    SlotPlan,
    first_need,
    plan_device_memory,
    plan_slots,
)
from kernelrl.evaluate.verdict import (
    before_running,
    no_code_verdict,
    ran_out_of_memory,
)
from kernelrl.problems import Problem
from kernelrl.problems.audit import TRANSIENT_MARK, ProblemAudit, audit_from_report
from kernelrl.results import Environment, EvalResult, TimingReport
from kernelrl.sandbox import (
    AuditRequest,
    DeviceGate,
    JudgeClient,
    JudgeError,
    LaunchSettings,
    ProcessOwner,
    ReleaseRequest,
    RunSlots,
    SandboxLauncher,
    mixes,
    new_workdir,
    timing_variants,
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _settings_from(settings: EvaluatorSettings | EvalConfig | None, verdict: VerdictSettings | None,
                   overrides: dict) -> tuple[EvaluatorSettings, VerdictSettings]:
    if isinstance(settings, EvalConfig):
        settings, from_config = settings.split()
        verdict = verdict or from_config
    settings, verdict = settings or EvaluatorSettings(), verdict or VerdictSettings()
    for_evaluator, for_verdict = split_settings(overrides)
    return (dataclasses.replace(settings, **for_evaluator) if for_evaluator else settings,
            dataclasses.replace(verdict, **for_verdict) if for_verdict else verdict)


class Evaluator(ScorerBase):
    """Evaluates candidates against problems on one device (a `Scorer`). Reuse one object: it keeps its judge
    and warm sandboxes up, and any call may bring its own `VerdictSettings` without restarting them.

    `Evaluator(EvaluatorSettings(...), VerdictSettings(...))`, or keyword settings of either kind
    (`Evaluator(device="cpu", trials=3)`); the verdict settings are the default of every call. Calls may come
    from several threads at once: judge requests are serialized by the judge client's lock, the zygote's forks
    by its client's lock, and GPU timing (the candidate's timed run, baselines, the bandwidth probe) by this
    evaluator's timing lock. Sandboxes alive at once are bounded by host memory and those before their timing
    token by the host's cores (`slots`, kernelrl.evaluate.slots), granted to callers in turns.
    """

    def __init__(self, settings: EvaluatorSettings | EvalConfig | None = None,
                 verdict: VerdictSettings | None = None, **overrides) -> None:
        self.settings, self.verdict = cfg, _ = _settings_from(settings, verdict, overrides)
        device = cfg.device
        self._interpreter_problem = interpreter_incompatibility()  # raised once the judge says CPU mode
        cuda_index = device.split(":", 1)[1] if device.startswith("cuda:") else None
        device_env = cfg.device_env()  # the judge's and the sandboxes' alike
        self._owner = ProcessOwner(f"kernelrl-owner-{device}")  # the judge and the zygote outlive any caller
        self._judge = JudgeClient("cuda" if cuda_index is not None else device, cfg.judge_timeout_s,
                                  device_env, self._owner.popen)
        cache = cfg.cache_dir or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelrl"
        self._cache_dir = Path(cache)
        self._audits: dict[tuple, ProblemAudit] = {}  # (problem sha, tolerances) -> audit (no timing)
        self._auditing: dict[tuple, threading.Lock] = {}  # one audit of a problem at a time, per key
        self._auditing_lock = threading.Lock()
        self._baseline_cache = BaselineCache(self._cache_dir / BaselineCache.FILE)
        use_results = cfg.result_cache and os.environ.get(RESULT_CACHE_ENV, "1") != "0"
        self._result_cache = ResultCache(self._cache_dir / ResultCache.FILE) if use_results else None
        # what the judge reported on this machine before: cached verdicts and format errors are answered
        # without waiting for this evaluator's judge to start
        self._known = KnownEnvironments(self._cache_dir, device)
        self._build: str | None = None  # kernelrl_build(), computed on first use
        # one timed run at a time on this evaluator's device,
        # other sandboxes and judge requests paused meanwhile
        self._gate = DeviceGate(hold_also=[self._judge.lock])
        self._slots = RunSlots()  # evaluations share the device; one that ran out of memory is retried alone
        self.slots: SlotPlan = plan_slots(compile_slots=cfg.compile_slots,
                                          max_concurrency=cfg.max_concurrency,
                                          sandbox_memory_gb=cfg.sandbox_memory_gb,
                                          standby_sandboxes=cfg.standby_sandboxes if cfg.warm_pool else 0)
        self._sandbox_slots = FairSlots(self.slots.sandbox_slots)  # alive at once: the memory bound
        self._compile_slots = FairSlots(self.slots.compile_slots)  # before the timing token: the cores
        self._device_memory: DeviceMemory | None = None  # GPU memory admission, planned once the judge is up
        self._device_memory_planned = False
        self._device_memory_lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._closing = threading.Event()  # close() is stopping a background warm-up
        self._warming_lock = threading.Lock()
        self._epoch = time.time() - time.monotonic()  # one offset for every timeline of this evaluator
        self.launcher = SandboxLauncher(LaunchSettings(
            cache_dir=self._cache_dir, device_env=device_env, startup_timeout_s=cfg.startup_timeout_s,
            log_limit_bytes=cfg.log_limit_bytes,
            max_file_bytes=int(cfg.max_output_gb * GiB) * 2, isolate_network=cfg.isolate_network,
            isolate_processes=cfg.isolate_processes, warm_pool=cfg.warm_pool,
            standby_sandboxes=cfg.standby_sandboxes), self._gate, self._owner.popen)
        self._run_context = RunContext(self._judge, self.launcher, cfg, self._measurer, self._gpu_admission,
                                       self._epoch_s)

    # -- public API ----------------------------------------------------------------------------------------
    def environment(self) -> Environment:
        info = self._judge_info()
        env = Environment(
            mode=info["mode"], device_name=info["device_name"], torch_version=info["torch_version"],
            triton_version=info["triton_version"], python_version=info["python_version"],
            kernelrl_version=__version__,
        )
        self._known.remember(env)
        return env

    def cache_stats(self) -> dict[str, CacheStats]:
        """Hits, misses, stores and errors of this evaluator's caches ('results', 'baselines')."""
        stats = {"baselines": self._baseline_cache.stats}
        if self._result_cache is not None:
            stats["results"] = self._result_cache.stats
        return stats

    def gpu_memory(self) -> dict | None:
        """The GPU memory admission's state (`DeviceMemory.snapshot`, needs keyed by problem sha256); None in
        CPU mode, when admission is off, or before the first GPU evaluation planned it."""
        return self._device_memory.snapshot() if self._device_memory is not None else None

    def time_baselines(self, problem: Problem, seed: int = 0, fresh: bool = False,
                       verdict: VerdictSettings | None = None) -> TimingReport:
        """Eager and Inductor times of the problem's reference (GPU only), from the baseline cache in
        `cache_dir` when it has them (`TimingStats.source == "cache"`); `fresh` re-times and overwrites
        them."""
        info = self._judge_info()
        if info["mode"] != "gpu":
            return TimingReport(unavailable_reason="baselines are timed on a GPU only")
        return self._measurer(verdict or self.verdict).baselines(problem, seed, TimingReport(), fresh=fresh,
                                                                measure=True)

    def audit(self, problem: Problem, timing: bool = False,
              verdict: VerdictSettings | None = None) -> ProblemAudit:
        """Audit a problem on this evaluator's device with the verdict settings' tolerances, on the input sets
        they check (`input_sets`; default: check, sweeps and on a GPU bench), cached per problem, tolerances
        and sets unless `timing` is asked for."""
        verdict = verdict or self.verdict
        self._judge_info()
        if timing:
            return self._audit(problem, timing=True, verdict=verdict)
        key = (problem.sha256, repr(sorted((verdict.tolerances or {}).items())), verdict.reference_error_k,
               verdict.input_sets)
        if key in self._audits:
            return self._audits[key]
        with self._auditing_lock:
            auditing = self._auditing.setdefault(key, threading.Lock())
        # a group of completions for a problem new to this evaluator arrives at once (RL): the first audits,
        # the others wait for its audit instead of each asking the judge again
        with auditing:
            if key in self._audits:
                return self._audits[key]
            audit = self._audit(problem, timing=False, verdict=verdict)
            if not audit.transient:  # not remembered: the next evaluation audits again
                self._audits[key] = audit
            return audit

    def warm_up(self) -> None:
        """Start the judge and (with `warm_pool`) the zygote and the standby sandboxes now rather than on the
        first evaluation. They belong to this evaluator, not to the calling thread."""
        self.launcher.warm_up(self._device_mode())

    def warm_up_in_background(self) -> None:
        """`warm_up` on a thread of its own (once at a time): calls answer what needs no worker meanwhile."""
        with self._warming_lock:
            if self._warming is not None and self._warming.is_alive():
                return
            self._warming = threading.Thread(target=self._warm_quietly, name="kernelrl-warm-up", daemon=True)
            self._warming.start()

    def _warm_quietly(self) -> None:
        try:
            mode = self._device_mode()
            if not self._closing.is_set():
                self.launcher.warm_up(mode)
        except (EvaluatorError, JudgeError, OSError):
            pass  # the evaluations that need the judge raise it themselves

    def close(self) -> None:
        warming = self._warming
        if warming is not None and warming.is_alive():
            # a warm-up still starting workers (a call answered from the cache, then closed): stop them now
            # rather than wait for their start, and let it end before closing, or it would start them again
            self._closing.set()
            while warming.is_alive():
                self._judge.abort()
                if self.launcher.zygote is not None:
                    self.launcher.zygote.abort()
                warming.join(0.05)
            self._closing.clear()
        self.launcher.close()
        self._judge.close()
        self._owner.close()
        self._baseline_cache.close()
        if self._result_cache is not None:
            self._result_cache.close()

    # -- internals -----------------------------------------------------------------------------------------
    def _measurer(self, verdict: VerdictSettings) -> Measurer:
        # the environment is looked up per call (a stand-in judge in tests replaces the method)
        return Measurer(verdict, self._judge, self._gate, self._baseline_cache, lambda: self.environment())

    def _judge_info(self) -> dict:
        try:
            # a ready judge's hello is read without its lock,
            # which a timed run holds (the dispatcher asks too)
            info = self._judge.info if self._judge.ready() else self._judge.ensure_started()
        except JudgeError as exc:
            raise EvaluatorError(str(exc)) from None
        if info["mode"] != "gpu" and self._interpreter_problem:
            raise EvaluatorError(self._interpreter_problem)
        return info

    def _device_mode(self) -> str:
        return self._judge_info()["mode"]

    def _audit(self, problem: Problem, timing: bool, verdict: VerdictSettings) -> ProblemAudit:
        try:
            reply = self._judge.call(AuditRequest(
                problem_path=str(problem.path), problem_sha256=problem.sha256, timing=timing,
                tolerances=verdict.tolerances or {}, input_sets=list(verdict.input_sets or ()),
                ref_error_k=verdict.reference_error_k or None))
        except JudgeError as exc:
            return audit_from_report(problem, [("reference_raises", None,
                                                f"{TRANSIENT_MARK}{str(exc)[-500:]}")])
        return audit_from_report(problem, [(f.flag, f.input_set, f.detail) for f in reply.flags],
                                 reply.eager_ms, reply.timing_set_bytes)

    def _answer_at_once(self, work: Work, verdict: VerdictSettings) -> EvalResult | None:
        """The result of an item that needs no sandbox, found without waiting for the judge when this
        machine's environment is known: a completion without code (format error) or a verdict in the result
        cache."""
        if work.candidate.code is not None and self._result_cache is None:
            return None
        env = self.environment() if self._judge.ready() else self._known.predicted()
        if env is None:
            return None
        if work.candidate.code is None:
            return no_code_verdict(work.candidate, {
                "problem_id": work.problem.id, "problem_sha256": work.problem.sha256,
                "candidate_sha256": _sha(work.candidate.text), "environment": env})
        return self._cached(work.problem, work.candidate.code, env, verdict)

    def _cached(self, problem: Problem, code: str, env: Environment,
                verdict: VerdictSettings) -> EvalResult | None:
        if self._result_cache is None:
            return None
        result = self._result_cache.get(self._result_key(problem, code, env, verdict))
        if result is not None:  # as stored: its phases_s and timeline are those of the run that made it
            result.candidate_sha256 = _sha(code)
        return result

    def _evaluate_work(self, work: Iterator[Work], verdict: VerdictSettings | None) -> Iterator[Indexed]:
        verdict = verdict or self.verdict
        workers = self.slots.workers
        # the workers start on the owner's thread; answers that need none go first
        self.warm_up_in_background()
        caller = object()  # this call's turn in the slots' round-robin
        deadlines: dict[float, Deadline] = {}
        running: dict[Future, tuple[int, Deadline | None]] = {}

        def deadline_of(item: Work) -> Deadline | None:
            if item.deadline_at is None:
                return None
            return deadlines.setdefault(item.deadline_at, Deadline(item.deadline_at, item.deadline_s))

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kernelrl-eval") as pool:

            def submit_next() -> Iterator[Indexed]:
                """Start the next item that needs a sandbox; yield the ones that do not on the way."""
                for item in work:
                    deadline = deadline_of(item)
                    answer = self._answer_at_once(item, verdict)
                    if answer is not None:
                        answer.wall_time_s = 0.0
                        yield Indexed(item.index, answer)
                        continue
                    if deadline is not None and deadline.passed():
                        base = self._base(item.problem, item.candidate.text)
                        yield Indexed(item.index, deadline_result(base, deadline.seconds))
                        continue
                    running[pool.submit(self._evaluate_candidate, item.problem, item.candidate, caller,
                                        time.monotonic(), verdict, deadline)] = (item.index, deadline)
                    return

            try:
                for _ in range(workers):
                    yield from submit_next()
                while running:
                    pending = [d for _, d in running.values() if d is not None and not d.cancel.is_set()]
                    now = time.monotonic()
                    expired = [d for d in pending if d.at <= now]
                    # stops its waiting and running items; their results come back now
                    for deadline in expired:
                        deadline.cancel.set()
                    if expired:
                        self._sandbox_slots.wake()
                        self._compile_slots.wake()
                        continue
                    left = min((d.at for d in pending), default=None)
                    done, _ = wait(running, timeout=None if left is None else left - now,
                                   return_when=FIRST_COMPLETED)
                    for future in done:
                        index, _ = running.pop(future)
                        result = future.result()
                        yield from submit_next()
                        yield Indexed(index, result)
            finally:
                for future in running:
                    future.cancel()

    def _epoch_s(self, monotonic: float) -> float:
        return round(self._epoch + monotonic, 6)

    def _base(self, problem: Problem, code: str) -> dict:
        env = self.environment() if self._judge.ready() else (self._known.predicted() or self.environment())
        return {"problem_id": problem.id, "problem_sha256": problem.sha256, "candidate_sha256": _sha(code),
                "environment": env}

    def _evaluate_candidate(self, problem: Problem, candidate: Candidate, caller: object, queued: float,
                            cfg: VerdictSettings, deadline: Deadline | None = None) -> EvalResult:
        started = time.monotonic()
        env = self.environment()
        if candidate.code is None:
            return no_code_verdict(candidate, {"problem_id": problem.id, "problem_sha256": problem.sha256,
                                               "candidate_sha256": _sha(candidate.text), "environment": env})
        code = candidate.code
        result = self._cached(problem, code, env, cfg)
        if result is None:
            result = self._evaluate(problem, code, env, caller, cfg, deadline)
            result.wall_time_s = round(time.monotonic() - started, 4)
            result.timeline = {"queued": self._epoch_s(queued), **result.timeline,
                               "end": self._epoch_s(time.monotonic())}
            if self._result_cache is not None and not result.no_verdict:
                self._result_cache.put(self._result_key(problem, code, env, cfg), result)
        result.wall_time_s = round(time.monotonic() - started, 4)
        return result

    def _result_key(self, problem: Problem, code: str, env: Environment, verdict: VerdictSettings) -> str:
        if self._build is None:
            self._build = kernelrl_build()
        settings = {**self.settings.key_fields(), **dataclasses.asdict(verdict)}
        return result_key(problem.sha256, code, env, settings, self._build)

    def _evaluate(self, problem: Problem, code: str, env: Environment, caller: object, cfg: VerdictSettings,
                  deadline: Deadline | None = None) -> EvalResult:
        base = {"problem_id": problem.id, "problem_sha256": problem.sha256, "candidate_sha256": _sha(code),
                "environment": env}
        checking = time.monotonic()
        early = before_running(code, base, mode=env.mode,
                               audit=(lambda: self.audit(problem, verdict=cfg)) if cfg.refuse_flagged_problems
                               else None,
                               static_checks=cfg.static_checks, rule_policy=cfg.rule_policy,
                               extra_rules=cfg.extra_rules)
        if early is not None:
            return early
        started = time.monotonic()
        # before the slot queue: the static checks and the problem's audit (the judge's, on first sight)
        checks_s = round(started - checking, 4)
        result, overlapped = self._attempt(problem, code, env, base, caller, cfg, deadline)
        if overlapped and ran_out_of_memory(result) and not (deadline and deadline.cancel.is_set()):
            # the memory may have been the other evaluations': once more with the device to itself, and that
            # verdict stands (a candidate that needs too much memory runs out alone too); later evaluations of
            # this problem are charged twice the memory
            first_s, first_message = time.monotonic() - started, result.message
            memory = self._gpu_admission(env)
            if memory is not None:
                memory.ran_out(problem.sha256, self._first_need(problem, cfg))
            result, _ = self._attempt(problem, code, env, base, caller, cfg, deadline, alone=True)
            result.phases_s["oom_retry"] = round(first_s, 4)  # the first attempt's wall time
            result.log = f"[kernelrl] first attempt, beside others: {first_message[:300]}\n{result.log}"
        result.phases_s = {"checks": checks_s, **result.phases_s}
        return result

    def _gpu_admission(self, env: Environment) -> DeviceMemory | None:
        """The GPU memory admission (None in CPU mode or when off), planned from the judge's free memory."""
        if env.mode != "gpu":
            return None
        with self._device_memory_lock:
            if not self._device_memory_planned:
                self._device_memory = plan_device_memory(self._judge_info().get("memory_free_bytes"),
                                                         self.settings.sandbox_gpu_memory_gb,
                                                         self.settings.gpu_memory_budget_gb)
                self._device_memory_planned = True
        return self._device_memory

    def _bench_call_bytes(self, problem: Problem, cfg: VerdictSettings) -> int | None:
        """One reference call's inputs and outputs on the timing (bench) set, from the problem's audit, where
        an evaluation holds that set on the device; None otherwise or before the audit."""
        audit = next((a for (sha, *_), a in list(self._audits.items()) if sha == problem.sha256), None)
        if audit is None or not (cfg.timing or cfg.bench_correctness):
            return None
        return audit.timing_set_bytes

    def _first_need(self, problem: Problem, cfg: VerdictSettings) -> int | None:
        """The admission's charge for a problem none of whose evaluations finished yet, from its audit (none:
        the default charge)."""
        mixed = cfg.fresh_timed_inputs and mixes(problem.metadata)  # the judge decides from the module itself
        variants = timing_variants(cfg.timing_variants, mixed) if cfg.timing else 1
        return first_need(self._bench_call_bytes(problem, cfg), variants)

    def _first_float64(self, problem: Problem, cfg: VerdictSettings) -> int | None:
        """A guess at the judge's float64 recomputation of a bench-sized trial: float64 copies of one call's
        inputs and outputs. What a run really took replaces it once known."""
        call_bytes = self._bench_call_bytes(problem, cfg)
        return 2 * call_bytes if call_bytes else None

    def _attempt(self, problem: Problem, code: str, env: Environment, base: dict, caller: object,
                 cfg: VerdictSettings, deadline: Deadline | None = None, alone: bool = False
                 ) -> tuple[EvalResult, bool]:
        """One run of the candidate once its slots are granted: beside the other evaluations holding theirs,
        or `alone` (every running one finished first, none starts meanwhile). Also returns whether another
        evaluation ran at some moment of it. Only evaluations holding their slots count: one still in the
        queue has nothing on the device, so a retry alone waits for the running ones, not for the queue."""
        queued = time.monotonic()
        overlapped = False
        cancel = deadline.cancel if deadline is not None else None
        # a sandbox slot (memory) and its problem's GPU memory for its whole life, a compile slot (a core)
        # until it asks for the timing token or has left the run slots; always taken in this order
        memory = self._gpu_admission(env)
        if memory is not None:  # before the judge's first float64 run of a large problem, not after
            memory.reserve_for_judge(self._first_float64(problem, cfg))
        # the problem's need is read once its sandbox slot is held (it is learned meanwhile)
        with HeldSlot(self._sandbox_slots, caller, cancel) as sandbox_slot, \
                HeldSlot(memory.slots if memory else None, caller, cancel,
                         memory.need(problem.sha256, self._first_need(problem, cfg))
                         if memory else 1) as device_bytes, \
                HeldSlot(self._compile_slots, caller, cancel) as compile_slot:
            granted = time.monotonic()
            if not sandbox_slot.held or not device_bytes.held or not compile_slot.held:
                result = deadline_result(base, deadline.seconds)
            else:
                with self._slots.exclusive() if alone else self._slots.shared() as run_slot:
                    result = self._attempt_in_slots(problem, code, env, base, compile_slot, granted, cfg,
                                                    deadline)
                overlapped = run_slot.overlapped
        result.phases_s = {"queue": round(granted - queued, 4), **result.phases_s}
        result.timeline = {"queue": self._epoch_s(queued), **result.timeline}
        return result, overlapped

    def _attempt_in_slots(self, problem: Problem, code: str, env: Environment, base: dict,
                          compile_slot: HeldSlot, granted: float, cfg: VerdictSettings,
                          deadline: Deadline | None) -> EvalResult:
        standby = self.launcher.take_standby(env.mode)
        workdir = standby.workdir if standby is not None else new_workdir()
        eval_id = uuid.uuid4().hex
        try:
            return run_evaluation(self._run_context, problem, code, env, base, workdir, eval_id, standby,
                                  compile_slot, granted, cfg, deadline)
        finally:
            if self._judge.running():  # a judge that died took this evaluation's state with it
                try:
                    released = self._judge.call(ReleaseRequest(eval_id=eval_id), timeout_s=60)
                except JudgeError:
                    pass
                else:
                    if self._device_memory is not None:
                        self._device_memory.reserve_for_judge(released.float64_bytes)
            shutil.rmtree(workdir, ignore_errors=True)


def evaluate(problem: Problem, code: str, **settings) -> EvalResult:
    """One-shot convenience: evaluate `code` with a throwaway Evaluator (prefer a long-lived one). `settings`:
    fields of EvaluatorSettings or VerdictSettings."""
    with Evaluator(**settings) as evaluator:
        return evaluator.evaluate(problem, code)
