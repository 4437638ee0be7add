"""One evaluation's run, once its slots are granted: the judge prepares the trials and the reference outputs,
the sandbox runs the candidate against them, and the verdict (with its timing when correct) is made from what
came back. The `Evaluator` owns the workers, the caches and the slots; a run owns nothing beyond its own
evaluation and uses the evaluator's parts through `RunContext`.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelrl.evaluate.deadlines import Deadline, deadline_result
from kernelrl.evaluate.measure import Measurer
from kernelrl.evaluate.pace import WARMUP_CALLS, CallPace, call_key
from kernelrl.evaluate.settings import EvaluatorSettings, GiB, VerdictSettings
from kernelrl.evaluate.slots import DeviceMemory, HeldSlot
from kernelrl.evaluate.trials import Trials
from kernelrl.evaluate.verdict import sandbox_verdict, timing_checks, trim
from kernelrl.problems import Problem
from kernelrl.results import CorrectnessReport, Environment, EvalResult, Stage, Status
from kernelrl.sandbox import (
    SHARE_ATTEMPTS,
    ChildOutcome,
    DoneEvent,
    Event,
    JudgeClient,
    JudgeError,
    PrepareReply,
    PrepareRequest,
    ReadyEvent,
    SandboxLauncher,
    SandboxRequest,
    Standby,
    TimingTokenEvent,
)
from kernelrl.timing.cuda_timer import HOST_MODE
from kernelrl.verify.tolerance import Tolerance, tolerance_for, tolerance_model


@dataclass(frozen=True)
class RunContext:
    """What a run uses of its evaluator: the judge and the launcher it started, its own settings, the
    measurer of a call's verdict settings, the GPU memory admission and its clock's Unix-time offset."""

    judge: JudgeClient
    launcher: SandboxLauncher
    settings: EvaluatorSettings
    measurer: Callable[[VerdictSettings], Measurer]
    gpu_admission: Callable[[Environment], DeviceMemory | None]
    epoch_s: Callable[[float], float]


def measures_share(env: Environment, cfg: VerdictSettings) -> bool:
    """Whether the calls behind rt-kernel-gpu-fraction are made: on a GPU, with timing, unless that check can
    neither reject nor warn."""
    return env.mode == "gpu" and cfg.timing and cfg.min_kernel_gpu_fraction > 0 and (
        cfg.runtime_policy or {}).get("rt-kernel-gpu-fraction", "reject") != "off"


@dataclass
class _Sandbox:
    """The sandbox's part of a run: its request and the trials that read its events."""

    request: SandboxRequest
    trials: Trials
    caches: dict[str, str]


def run_evaluation(ctx: RunContext, problem: Problem, code: str, env: Environment, base: dict, workdir: Path,
                   eval_id: str, standby: Standby | None, compile_slot: HeldSlot, started: float,
                   cfg: VerdictSettings, deadline: Deadline | None = None) -> EvalResult:
    """`started`: when the evaluation got its slots (its prepare phase includes taking a standby)."""
    master = cfg.seed if cfg.seed is not None else secrets.randbits(62)
    share = measures_share(env, cfg)
    prepared = _prepare(ctx, problem, env, base, workdir, eval_id, cfg, master, share)
    if isinstance(prepared, EvalResult):
        return prepared
    tol = tolerance_for(prepared.output_dtypes, cfg.tolerances)
    sandbox = _sandbox(ctx, problem, code, env, workdir, eval_id, cfg, prepared, tol, share)
    prepare_s = time.monotonic() - started

    def on_event(event: Event) -> bool:
        if isinstance(event, TimingTokenEvent):  # CPU work done: the next sandbox may start compiling
            compile_slot.give_back()
        return sandbox.trials.on_event(event)

    trials = sandbox.trials
    sandbox_started = time.monotonic()
    outcome, path = ctx.launcher.run(
        workdir=workdir, mode=env.mode, request=sandbox.request, caches=sandbox.caches, on_event=on_event,
        token_allowed=lambda: trials.passed == trials.planned and trials.hack is None, standby=standby,
        stall=trials.pace.limit if trials.pace is not None else None,
        cancelled=deadline.cancel.is_set if deadline is not None else None,
        limits={"compile_timeout_s": cfg.compile_timeout_s, "run_timeout_s": cfg.run_timeout_s,
                "memory_limit_bytes": int(cfg.memory_limit_gb * GiB)})
    sandbox_finished = time.monotonic()
    memory = ctx.gpu_admission(env)
    if memory is not None:  # what this problem's evaluations need: learned for the next ones
        done = outcome.last(DoneEvent)
        memory.observed(problem.sha256, done.gpu_peak_bytes if done is not None else None,
                        prepared.device_bytes)
    phases = {"prepare": round(prepare_s, 4), **trials.phases(sandbox_started, sandbox_finished)}
    timeline = {"prepare": started, **trials.phase_begins(sandbox_started)}
    base = _reported(ctx, base, env, outcome, path, trials, prepared, tol, cfg, phases, timeline)
    if outcome.cancelled and deadline is not None:  # the batch's deadline, not the candidate: no verdict
        reached = [(e, st) for e, st in (("timing_granted", Stage.TIMING),
                                         ("initialized", Stage.CORRECTNESS), ("imported", Stage.INIT))
                   if e in trials.arrived]
        stage = reached[0][1] if reached else Stage.IMPORT
        return deadline_result(base, deadline.seconds, stage)
    verdict = sandbox_verdict(outcome, trials, base, cfg.memory_limit_gb)
    if verdict.status is Status.CORRECT:
        timing_started = time.monotonic()
        verdict.timing = ctx.measurer(cfg).timing(problem, base["environment"], trials, master, prepared)
        verdict.phases_s["baselines"] = round(time.monotonic() - timing_started, 4)
        verdict.timeline["baselines"] = ctx.epoch_s(timing_started)
        verdict = timing_checks(verdict, trials, cfg.min_kernel_gpu_fraction)
    return verdict


def _prepare(ctx: RunContext, problem: Problem, env: Environment, base: dict, workdir: Path, eval_id: str,
             cfg: VerdictSettings, master: int, share: bool) -> PrepareReply | EvalResult:
    """The judge's preparation (trials, their inputs in `workdir/in`, the reference outputs; `share`: the
    kernel share's trials too), or the result that ends the run before the candidate does: the reference
    failed, or bf16 without a GPU."""
    try:
        prepared = ctx.judge.call(PrepareRequest(
            eval_id=eval_id, problem_path=str(problem.path), problem_sha256=problem.sha256,
            master_seed=master, min_trials=cfg.trials, input_sets=list(cfg.input_sets or []),
            in_dir=str(workdir / "in"), bench_correctness=cfg.bench_correctness,
            timing_variants=cfg.timing_variants if env.mode == "gpu" and cfg.timing else 0,
            timed_mix=cfg.fresh_timed_inputs, share_trials=SHARE_ATTEMPTS if share else 0))
    except JudgeError as exc:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.REFERENCE,
                          message="the problem's reference failed (a problem error, not the candidate's)",
                          feedback=trim(str(exc)), no_verdict=True, **base)
    if env.mode != "gpu" and "bfloat16" in prepared.output_dtypes + prepared.input_dtypes:
        return EvalResult(status=Status.UNSUPPORTED, stage=Stage.REFERENCE,
                          message="bfloat16 problems need a GPU: the Triton "
                                  "interpreter computes bf16 wrongly", **base)
    return prepared


def _sandbox(ctx: RunContext, problem: Problem, code: str, env: Environment, workdir: Path, eval_id: str,
             cfg: VerdictSettings, prepared: PrepareReply, tol: Tolerance, share: bool) -> _Sandbox:
    """The candidate written to `workdir`, the sandbox's request and the trials that will read its events."""
    own = ctx.settings  # the evaluator's (cfg: this call's verdict settings)
    candidate_path = workdir / "candidate.py"
    candidate_path.write_text(code)
    caches = ctx.launcher.candidate_caches(code)
    # CPU mode times only with cpu_timing: the host clock around the interpreter, on the first correctness
    # set (bench-sized inputs would take minutes there)
    host_timing = env.mode != "gpu" and cfg.cpu_timing and cfg.timing
    timing_set = prepared.sets[0] if host_timing and prepared.sets else prepared.timing_set
    request = SandboxRequest.create(
        ctx.launcher.sandbox_settings(env.mode),
        problem_path=str(problem.path), candidate_path=str(candidate_path),
        in_dir=str(workdir / "in"), out_dir=str(workdir / "out"),
        trials=prepared.trials, timing_set=timing_set,
        timing=cfg.timing and (env.mode == "gpu" or host_timing),
        timer=dataclasses.asdict(ctx.measurer(cfg).candidate_timer(problem, env)),
        timing_mode=HOST_MODE if host_timing else cfg.timing_mode, paired_baseline=cfg.paired_baseline,
        timed_mix=cfg.fresh_timed_inputs and prepared.timed_mix,
        kernel_share=share,
        memory_limit_bytes=int(cfg.memory_limit_gb * GiB), readonly_fs=own.readonly_filesystem,
        # its own compile caches are the only writable places outside workdir
        writable_paths=[str(workdir), *caches.values()],
        candidate_uid=own.candidate_uid,
    )
    # paired timing also runs the problem's own Model, whose calls the trials never timed: no pace there
    timer, paced_timing = request.timer, request.timing and not cfg.paired_baseline
    pace = CallPace([(t.set, call_key(t)) for t in prepared.trials if not t.timed_only],
                    timing_set if paced_timing else None, WARMUP_CALLS + timer["min_reps"],
                    timer["max_ms"] / 1000 if timer.get("rse_target") else 0.0)
    trials = Trials(ctx.judge, eval_id, str(workdir / "out"), prepared.trials, env.mode, tol,
                    int(own.max_output_gb * GiB), dict(cfg.runtime_policy or {}), cfg.reference_error_k, pace)
    return _Sandbox(request, trials, caches)


def _reported(ctx: RunContext, base: dict, env: Environment, outcome: ChildOutcome, path: str, trials: Trials,
              prepared: PrepareReply, tol: Tolerance, cfg: VerdictSettings, phases: dict,
              timeline: dict) -> dict:
    """The result's fields every verdict of a run shares: the environment with the isolation that applied,
    the log, the correctness report, the findings, where the time went and when."""
    ready = outcome.last(ReadyEvent)
    timeline.update(trials.sandbox_marks(ready))
    iso = ready.isolation if ready is not None else []
    env = dataclasses.replace(env, isolation=[*iso, path] if iso else [])
    correctness = CorrectnessReport(
        trials_run=trials.run, trials_passed=trials.passed, trials_planned=trials.planned,
        seeds_sha256=prepared.seeds_sha256, atol=tol.atol, rtol=tol.rtol, dtype=tol.dtype,
        input_sets=prepared.sets, mismatch=trials.mismatch,
        tolerance_model=tolerance_model(prepared.output_dtypes, cfg.reference_error_k),
        trials_within_reference_error=trials.widened,
    )
    return {**base, "environment": env, "log": outcome.log,
            "log_bytes_dropped": outcome.log_bytes_dropped, "correctness": correctness, "phases_s": phases,
            "findings": [*base.get("findings", []), *trials.findings],
            "timeline": {name: ctx.epoch_s(t) for name, t in timeline.items()}}
