"""Verdicts: pure functions from collected facts (static analysis, the sandbox's outcome, the trials'
findings) to an `EvalResult`. Nothing here runs anything or talks to a process."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Callable

from kernelrl.candidates import Candidate, analyze
from kernelrl.candidates.extract import TRUNCATED
from kernelrl.candidates.rules import analyze_rules
from kernelrl.evaluate.trials import Trials
from kernelrl.problems.audit import ProblemAudit
from kernelrl.results import EvalResult, Finding, Stage, Status
from kernelrl.sandbox import (
    ChildOutcome,
    DoneEvent,
    ErrorEvent,
    ExitEvent,
    ImportedEvent,
    InitializedEvent,
    ReadyEvent,
    TerminatedEvent,
    TimingEvent,
)
from kernelrl.timing.cuda_timer import events_exceed_wall

COMPILE_ERROR_TYPES = ("CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct")
_GiB = 1 << 30


def trim(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


def runtime_hack_text(hack: Finding) -> dict[str, str]:
    """The verdict's message and feedback for a rejecting runtime finding."""
    return {"message": f"runtime check {hack.rule}: {hack.detail or hack.message}"[:200],
            "feedback": f"[{hack.rule}] {hack.message}" + (f" ({hack.detail})" if hack.detail else "")}


def ran_out_of_memory(result: EvalResult) -> bool:
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


def before_running(code: str, base: dict, *, mode: str, audit: Callable[[], ProblemAudit] | None,
                   static_checks: bool, rule_policy: dict[str, str] | None,
                   extra_rules: tuple[str, ...] = ()) -> EvalResult | None:
    """Verdicts reached without running anything: parse, problem audit (`audit`, None when flagged problems
    are not refused), static rules, backend support. Sets `base["findings"]` to the static findings."""
    static = analyze(code)
    if static.syntax_error:
        return EvalResult(status=Status.COMPILE_ERROR, stage=Stage.STATIC, message="syntax error",
                          feedback=static.syntax_error, **base)
    if not static.defines_modelnew:
        return EvalResult(status=Status.FORMAT_ERROR, stage=Stage.STATIC, message="no class ModelNew",
                          feedback="the module must define class ModelNew(nn.Module) with the same "
                                   "constructor and forward signatures as Model", **base)
    if audit is not None:  # the problem first: no candidate can pass a broken one
        problem_audit = audit()
        if problem_audit.refusing:
            flags = ", ".join(sorted({f.flag for f in problem_audit.refusing}))
            # an audit the machine failed (the judge died, out of memory) says nothing about the problem
            # either: no verdict, and the next evaluation audits again
            return EvalResult(status=Status.UNSUPPORTED, stage=Stage.REFERENCE,
                              message=f"problem refused by the audit: {flags}",
                              feedback=f"{problem_audit.summary()}. The problem cannot grade kernels; fix "
                                       "it, waive the flag in its METADATA audit_waivers, or pass "
                                       "refuse_flagged_problems=False.",
                              no_verdict=problem_audit.transient, **base)
    if static_checks:
        base["findings"] = analyze_rules(code, rule_policy, extra_rules)
        rejected = [f for f in base["findings"] if f.policy == "reject"]
        if rejected:
            feedback = "\n".join(f"line {f.line}: [{f.rule}] {f.message}"
                                  + (f" ({f.detail})" if f.detail else "") for f in rejected)
            first = rejected[0]
            return EvalResult(status=Status.HACK_DETECTED, stage=Stage.STATIC,
                              message=f"static check {first.rule}: {first.detail or first.message}"[:200],
                              feedback=feedback, **base)
    if static.backend == "cuda-cpp" and mode != "gpu":
        return EvalResult(status=Status.UNSUPPORTED, stage=Stage.STATIC,
                          message="CUDA C++ candidates need a CUDA GPU; this evaluator runs on the CPU",
                          feedback="torch.utils.cpp_extension / load_inline builds CUDA code, which needs a "
                                   "CUDA toolkit and GPU; evaluate on a GPU machine or write Triton", **base)
    return None


def sandbox_verdict(outcome: ChildOutcome, trials: Trials, base: dict, memory_limit_gb: float) -> EvalResult:
    """The verdict on a candidate that ran: from the trials' findings and how its sandbox ended."""
    stage_of = {"start": Stage.IMPORT, "import": Stage.IMPORT, "run": Stage.CORRECTNESS}
    reached = Stage.IMPORT
    for event, stage in ((ImportedEvent, Stage.INIT), (InitializedEvent, Stage.CORRECTNESS),
                         (TimingEvent, Stage.TIMING)):
        if outcome.last(event) is not None:
            reached = stage
    if trials.inputs_unavailable is not None:
        return EvalResult(status=Status.RUNTIME_ERROR, stage=Stage.REFERENCE,
                          message="the sandbox could not reproduce the problem's inputs (a problem or "
                                  "harness error, not the candidate's)",
                          # the stub's detail says what the problem must do
                          feedback=trials.inputs_unavailable,
                          no_verdict=True, **base)
    if trials.mismatch is not None:
        m = trials.mismatch
        return EvalResult(status=Status.WRONG_OUTPUT, stage=Stage.CORRECTNESS,
                          message=f"wrong output (trial {m.trial} on input set {m.input_set}, output "
                                  f"{m.output_index}: {m.reason})",
                          feedback=m.detail, **base)
    hack = trials.hack
    if hack is not None:
        stage = Stage.TIMING if outcome.last(TimingEvent) is not None else Stage.CORRECTNESS
        return EvalResult(status=Status.HACK_DETECTED, stage=stage, **runtime_hack_text(hack), **base)
    error = outcome.last(ErrorEvent)
    if outcome.last(ReadyEvent) is None and error is None:
        return _never_started(outcome, base, memory_limit_gb)
    if error is not None:
        stage = {"import": Stage.IMPORT, "init": Stage.INIT, "timing": Stage.TIMING}.get(
            error.stage, Stage.CORRECTNESS)
        short = error.exc_type.rsplit(".", 1)[-1]
        compile_failure = stage is Stage.IMPORT or short in COMPILE_ERROR_TYPES
        if short == "MemoryError" or "out of memory" in error.message.lower():
            compile_failure = False
        feedback = trim(error.traceback or error.message)
        where = {Stage.IMPORT: "importing the candidate", Stage.INIT: "constructing ModelNew",
                 Stage.CORRECTNESS: "running forward", Stage.TIMING: "timing forward"}[stage]
        return EvalResult(status=Status.COMPILE_ERROR if compile_failure else Status.RUNTIME_ERROR,
                          stage=stage, message=f"{short} while {where}: "
                                               f"{error.message[:200]}",
                          feedback=feedback, **base)
    exited = outcome.last(ExitEvent)
    if exited is not None:
        return EvalResult(status=Status.CRASHED, stage=reached,
                          message=f"the candidate called sys.exit({exited.code[:50]})",
                          feedback="the candidate must not exit the process", **base)
    if outcome.memory_exceeded_bytes is not None:
        return EvalResult(status=Status.CRASHED, stage=reached,
                          message=f"killed: host memory {outcome.memory_exceeded_bytes / _GiB:.1f} GiB "
                                  f"exceeded the {memory_limit_gb:g} GiB limit",
                          feedback="the candidate used too much host memory", **base)
    if outcome.stalled is not None:  # kernelrl.evaluate.pace
        return EvalResult(status=Status.TIMEOUT, stage=reached,
                          message=f"timed out: {outcome.stalled} did not return within "
                                  f"{outcome.timeout_s:.1f} s",
                          feedback="a call took far longer than the candidate's earlier calls on the "
                                   "same inputs (a wait that never ends: a kernel spinning on a stream of "
                                   "its own, a thread, a sleep, an infinite loop)", **base)
    if outcome.timed_out_phase is not None:
        what = {"start": "sandbox start-up", "import": "import/compilation", "run": "execution"}
        phase = outcome.timed_out_phase
        return EvalResult(status=Status.TIMEOUT, stage=stage_of[phase],
                          message=f"timed out after {outcome.timeout_s:g} s in {what[phase]}",
                          feedback=f"the candidate did not finish {what[phase]} within {outcome.timeout_s:g} "
                                   "s (infinite loop, deadlock or far too slow)", **base)
    if trials.problem or outcome.protocol_error:
        detail = trials.problem or outcome.protocol_error
        return EvalResult(status=Status.CRASHED, stage=reached,
                          message=f"sandbox protocol violated: {detail}", feedback=detail or "", **base)
    if outcome.last(DoneEvent) is None or trials.passed < trials.planned:
        how = _how_it_ended(outcome)
        return EvalResult(status=Status.CRASHED, stage=reached,
                          message=f"the candidate process {how} before reporting all results",
                          feedback=f"the process {how} during {reached.value}; "
                                   "see the log for what it printed", **base)
    return EvalResult(status=Status.CORRECT, stage=Stage.DONE,
                      message=f"correct ({trials.passed}/{trials.planned} trials)", **base)


def _how_it_ended(outcome: ChildOutcome) -> str:
    """'exited with code N' or 'was killed by SIGNAL', from the namespace's init process when there is one."""
    code = outcome.returncode
    ended = outcome.last(TerminatedEvent)  # from the namespace's init process, when there is one
    if ended is not None:
        code = -ended.signal if ended.signal is not None else ended.exit_code
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _never_started(outcome: ChildOutcome, base: dict, memory_limit_gb: float) -> EvalResult:
    """A sandbox that ended before its stub said it was ready: no candidate code had run (the stub loads the
    candidate only after that event), so whatever stopped it (host load, a start-up limit, a killed process)
    is the harness's and the verdict says nothing about the code."""
    if outcome.timed_out_phase is not None:
        how = f"did not start within {outcome.timeout_s:g} s"
    elif outcome.memory_exceeded_bytes is not None:
        how = (f"was killed: host memory {outcome.memory_exceeded_bytes / _GiB:.1f} GiB exceeded the "
               f"{memory_limit_gb:g} GiB limit")
    else:
        how = _how_it_ended(outcome)
    return EvalResult(status=Status.CRASHED, stage=Stage.IMPORT,
                      message=f"the sandbox {how} before the candidate ran",
                      feedback="this says nothing about the code: no candidate code had run; see the log",
                      no_verdict=True, **base)


def timing_checks(verdict: EvalResult, trials: Trials, min_kernel_gpu_fraction: float) -> EvalResult:
    """Runtime checks on a correct candidate's timing: timer integrity, speed-of-light floor, share of GPU
    time in the candidate's own kernels. A rejection turns the verdict into hack_detected."""
    timing = verdict.timing
    if timing is None or timing.candidate is None:
        return verdict
    checks = []
    if trials.timing is not None and events_exceed_wall(trials.timing.raw()):
        checks.append(("rt-timer-inconsistent", f"event median {timing.candidate.median_ms:.4f} ms > wall "
                                                f"median {timing.candidate.wall_median_ms} ms"))
    if timing.floor_ms is not None and timing.candidate.median_ms < timing.floor_ms:
        checks.append(("rt-below-speed-of-light", f"{timing.candidate.median_ms:.4f} ms < floor "
                                                  f"{timing.floor_ms:.4f} ms"))
    fraction = timing.kernel_gpu_fraction
    if fraction is not None and fraction < min_kernel_gpu_fraction:
        checks.append(("rt-kernel-gpu-fraction", f"{fraction:.0%} of GPU time in the candidate's kernels, "
                                                 f"minimum {min_kernel_gpu_fraction:.0%}"))
    before = len(trials.findings)
    for check, detail in checks:
        trials.flag(check, detail)
    verdict.findings = [*verdict.findings, *trials.findings[before:]]
    hack = trials.hack
    if hack is None:
        return verdict
    return dataclasses.replace(verdict, status=Status.HACK_DETECTED, stage=Stage.TIMING,
                               **runtime_hack_text(hack))


def no_code_verdict(candidate: Candidate, base: dict) -> EvalResult:
    """A completion without a block that defines ModelNew (or whose block was cut off): a format error, and
    nothing to run."""
    cut = (candidate.error or "").startswith(TRUNCATED)
    return EvalResult(status=Status.FORMAT_ERROR, stage=Stage.EXTRACT,
                      message="the completion looks truncated" if cut else "no code block defines ModelNew",
                      feedback=candidate.error or "", **base)
