"""The sandbox's streamed reports of one evaluation: each trial's outputs compared (through the judge) as they
arrive, the stub's runtime facts turned into findings (kernelrl.verify.runtime_checks). Stdlib only."""

from __future__ import annotations

import time

from kernelrl.evaluate.pace import CallPace
from kernelrl.results import Finding, Mismatch
from kernelrl.sandbox import (
    ITEMSIZE,
    SHARE_PREFIX,
    CensusEvent,
    CompareRequest,
    ErrorEvent,
    Event,
    InputsUnavailableEvent,
    JudgeClient,
    JudgeError,
    NativeThreadSeenEvent,
    OpReport,
    OutputMeta,
    ReadyEvent,
    TensorFileError,
    TimedCheck,
    TimingEvent,
    TrialEvent,
    TrialPlan,
    validate_meta,
)
from kernelrl.verify.precision import describe as describe_precision
from kernelrl.verify.runtime_checks import HANDOFF_STAGE, RUNTIME_CHECKS

MAX_SAMPLED = 1 << 24  # output elements a timed-call sample may hold
WIDENED = object()  # _compare's answer for outputs that matched only within the float64 reference's allowance


class Trials:
    """Per-evaluation bookkeeping for the child's streamed reports: compares each trial's outputs (through the
    judge) as it arrives and turns the stub's runtime facts into findings (kernelrl.verify.runtime_checks)."""

    def __init__(self, judge: JudgeClient, eval_id: str, out_dir: str, plan: list[TrialPlan], mode: str, tol,
                 max_bytes, policy: dict[str, str], ref_error_k: float = 0.0, pace: CallPace | None = None):
        self.judge, self.eval_id, self.out_dir = judge, eval_id, out_dir
        # the tolerance model's k (kernelrl.verify.tolerance); 0: allclose only
        self.ref_error_k = ref_error_k
        self.plan, self.tol, self.max_bytes = plan, tol, max_bytes
        # correctness trials; the rest feed timed calls
        self.planned = sum(not t.timed_only for t in plan)
        self.policy = policy
        self.device = "cuda" if mode == "gpu" else "cpu"
        self.passed = 0
        self.run = 0
        self.widened = 0  # correctness trials that passed only within the float64 reference's allowance
        self.mismatch: Mismatch | None = None
        self.findings: list[Finding] = []
        self.problem: str | None = None  # a protocol violation or judge failure
        self.timing: TimingEvent | None = None  # the timed calls' report
        self.census: CensusEvent | None = None  # the kernel share's
        # the sandbox could not draw the judge's inputs (problem error)
        self.inputs_unavailable: str | None = None
        self.arrived: dict[str, float] = {}  # event kind -> monotonic time its last report was handled
        # the judge's rt-low-precision evidence for the trial just compared
        self.precision: dict | None = None
        # how long the next report may take (kernelrl.evaluate.pace), from when the last one was handled
        self.pace = pace
        self._handled_at = time.monotonic()

    def phases(self, started: float, finished: float) -> dict[str, float]:
        """Seconds between the sandbox's milestones, for the phases this run reached."""
        begins = self.phase_begins(started)
        ends = [*list(begins.values())[1:], finished]
        return {name: round(end - begin, 4) for (name, begin), end in zip(begins.items(), ends, strict=True)}

    def phase_begins(self, started: float) -> dict[str, float]:
        """When each phase this run reached began (monotonic clock), in order, ending with 'finish': start
        (sandbox up), import, init, first_trial (the first forward: Triton compiles its kernels there on a
        GPU), correctness (the other trials), census, token (waiting for the device's timing slot), timing."""
        marks = [("start", "ready"), ("import", "imported"), ("init", "initialized"),
                 ("first_trial", "trial0"), ("correctness", "trial"), ("census", "census"),
                 ("token", "timing_granted"), ("timing", "timing")]
        begins, last = {}, started
        for name, event in marks:
            if event in self.arrived:
                begins[name] = last
                last = self.arrived[event]
        begins["finish"] = last
        return begins

    def sandbox_marks(self, ready: ReadyEvent | None) -> dict[str, float]:
        """The sandbox's own start-up marks (the ready report's: seconds from its stub's start) on this
        process's clock, dated by the report's arrival: `sandbox_device` (its CUDA context up),
        `sandbox_standby` (a standby waiting for its candidate), `sandbox_assigned` (the candidate taken),
        `sandbox_readonly_fs`, `sandbox_capabilities` (confinement steps). Diagnostics: what the start phase
        waited for."""
        arrived = self.arrived.get("ready")
        if ready is None or arrived is None or "ready" not in ready.marks:
            return {}
        return {f"sandbox_{name}": arrived - (ready.marks["ready"] - at) for name, at in ready.marks.items()
                if name != "ready"}

    @property
    def hack(self) -> Finding | None:
        return next((f for f in self.findings if f.policy == "reject"), None)

    def flag(self, check: str, detail: str = "") -> bool:
        """Record a runtime finding; False (stop the candidate) when its policy rejects."""
        policy = self.policy.get(check) or RUNTIME_CHECKS[check].default_policy(self.device)
        if policy == "off":
            return True
        self.findings.append(Finding(rule=check, policy=policy, message=RUNTIME_CHECKS[check].message,
                                     detail=detail[:300]))
        return policy != "reject"

    def on_event(self, event: Event) -> bool:
        # stamped once handled: a trial's phase includes the judge's comparison, and the next report (already
        # waiting in the pipe) is not charged for it
        try:
            return self._handle(event)
        finally:
            self.arrived[event.kind] = now = time.monotonic()
            if isinstance(event, TrialEvent):
                self.arrived.setdefault("trial0", now)
            if self.pace is not None:
                # the stub's own time for a trial's call as well: a call that ran while the judge compared
                # the one before looks instant from here
                waited = now - self._handled_at
                if isinstance(event, TrialEvent) and event.call_s is not None:
                    waited = max(waited, event.call_s)
                self.pace.reported(event.kind, waited)
            self._handled_at = now

    def _handle(self, event: Event) -> bool:
        """The event as the typed wire parsed it (kernelrl.sandbox.protocol: every field of its type); what
        is checked here is what the verdict decides (an index in range, a dtype and device, the facts)."""
        if isinstance(event, TimingEvent):
            return self._on_timing(event)
        if isinstance(event, CensusEvent):
            return self._on_census(event)
        if isinstance(event, NativeThreadSeenEvent):  # the runner's own watch (sandbox.native_threads)
            return self.flag("rt-native-thread", event.detail)
        # before the candidate was imported: the problem's inputs, not the candidate
        if isinstance(event, InputsUnavailableEvent):
            self.inputs_unavailable = event.detail
            return False
        if isinstance(event, ErrorEvent) and event.stage == HANDOFF_STAGE:
            check, _, detail = event.message.partition(": ")
            return check not in RUNTIME_CHECKS or self.flag(check, detail)
        if not isinstance(event, TrialEvent):
            return True
        if event.index != self.run or self.run >= self.planned:
            self.problem = f"unexpected trial report {event.index}"
            return False
        self.run += 1
        for k, meta in enumerate(event.outputs):
            if meta.dtype not in ITEMSIZE:
                return self._mismatch(k, "dtype", f"output {k} has unsupported dtype {meta.dtype}")
            if meta.device != self.device:
                return self._mismatch(k, "device",
                                      f"output {k} is on {meta.device[:20]}, expected {self.device}")
        # work still running behind forward's back explains a wrong answer: flagged before the comparison
        if not self._background_work(event):
            return False
        found = self._compare(self.run - 1, event.outputs, None, event.changed_inputs)
        if found is False:
            return False
        if found is WIDENED:
            self.widened, found = self.widened + 1, None
        if found is not None:
            self.mismatch = Mismatch(trial=self.run - 1, input_set=self.plan[self.run - 1].set, **found)
            return False
        # right values first (a wrong answer is reported as such), then how they were produced
        if not self._runtime_facts(event):
            return False
        if self.precision is not None and not self.flag("rt-low-precision",
                                                        describe_precision(self.precision)):
            return False
        self.passed += 1
        return True

    def _background_work(self, event: TrialEvent) -> bool:
        for k, meta in enumerate(event.outputs):
            if meta.changed_after_sync and not self.flag(
                    "rt-deferred-write",
                    f"output {k} of trial {self.run - 1} changed after a device-wide sync"):
                return False
        if event.threads and not self.flag("rt-thread-left-running",
                                           f"{len(event.threads)} extra thread(s) alive"):
            return False
        return self._native_threads(event.native_threads, f"after trial {self.run - 1}")

    def _native_threads(self, native: list[str] | None, where: str) -> bool:
        if not native:
            return True
        return self.flag("rt-native-thread", f"{where}: " + "; ".join(native[:2]))

    def _runtime_facts(self, event: TrialEvent) -> bool:
        for k, meta in enumerate(event.outputs):
            if meta.aliases_input and not self.flag("rt-output-aliases-input", f"output {k}"):
                return False
            if meta.reuses_buffer and not self.flag("rt-output-reuses-buffer", f"output {k}"):
                return False
        if event.launches == 0 and not self.flag(
                "rt-no-kernel-launched", f"trial {self.run - 1} launched no candidate kernel"):
            return False
        return self._op_census(event.census, f"trial {self.run - 1}")

    def _op_census(self, report: OpReport | None, where: str) -> bool:
        """The op census's findings (kernelrl.sandbox.opcensus): tampering first, then what it names."""
        if report is None:
            return True

        def counted(found: dict[str, int]) -> str:
            return ", ".join(f"{name} x{n}" for name, n in found.items())

        for check, text in (("rt-census-tampered", "; ".join(report.tampered)),
                            ("rt-aten-op", counted(report.ops)), ("rt-host-read", counted(report.host)),
                            ("rt-output-provenance", "; ".join(report.provenance)),
                            ("rt-foreign-kernel", counted(report.foreign))):
            if text and not self.flag(check, f"{where}: {text}"):
                return False
        return True

    def _checks_precision(self, trial: int, prefix: str | None) -> bool:
        """rt-low-precision on every correctness trial (a candidate may round only on the larger sets), unless
        off: the judge runs the reference in float64 on each."""
        check = "rt-low-precision"
        if prefix is not None or any(f.rule == check for f in self.findings):  # one finding an evaluation
            return False
        return (self.policy.get(check) or RUNTIME_CHECKS[check].default_policy(self.device)) != "off"

    def _compare(self, trial: int, outputs: list[OutputMeta], prefix: str | None,
                 changed_inputs: list[int] = (), mix: dict | None = None) -> dict | None | bool:
        """The judge's mismatch for one set of output files, None when they match, False on a failure."""
        try:
            metas = [validate_meta(m.to_dict(), self.max_bytes) for m in outputs]
        except TensorFileError as exc:
            self.problem = f"unreadable output: {exc}"
            return False
        for meta, given in zip(metas, outputs, strict=True):
            # a correctness output in the judge's shared buffer
            if given.ipc is True and prefix is None:
                meta["ipc"] = True
            if given.sampled is not None:  # a timed call's large output, sampled by the stub
                if not 0 < given.sampled <= MAX_SAMPLED:
                    self.problem = "malformed output sample"
                    return False
                # the judge checks it
                meta["sampled"], meta["sample_seed"] = given.sampled, given.sample_seed
        try:
            reply = self.judge.call(CompareRequest(
                eval_id=self.eval_id, trial=trial, out_dir=self.out_dir, outputs=metas, atol=self.tol.atol,
                rtol=self.tol.rtol, prefix=prefix, changed_inputs=list(changed_inputs[:64]),
                ref_error_k=self.ref_error_k or None, **(mix or {}),
                precision_check=self._checks_precision(trial, prefix) or None))
        except JudgeError as exc:
            self.problem = f"outputs could not be compared: {str(exc)[-500:]}"
            return False
        self.precision = reply.precision
        return WIDENED if reply.widened and reply.mismatch is None else reply.mismatch

    def _on_census(self, event: CensusEvent) -> bool:
        """The kernel share, and the outputs of the calls it was measured on (fresh inputs of the judge's
        share trials, kernelrl.sandbox.share_call): checked like timed calls', so no call is measured
        unchecked."""
        self.census = event
        if event.fraction is not None and not event.checked:
            self.problem = "the kernel share names no checked call"
            return False
        # inputs never seen: a share trial of the judge's, or a mix of two timing variants (checked by _mix)
        share_trials = [i for i, t in enumerate(self.plan) if t.share]
        if any((c.trial not in share_trials) == (c.mix_trial is None) for c in event.checked):
            self.problem = "the kernel share was measured on inputs other than its own"
            return False
        if not self._checked_calls(event.checked, SHARE_PREFIX, "the kernel share's measured call"):
            return False
        return self._op_census(event.census, "the kernel share's measured calls")

    def _checked_calls(self, checked: list[TimedCheck], prefix: str, what: str) -> bool:
        """Compare the outputs of checked calls outside the trials (`{prefix}{n}_out{k}.bin`)."""
        for n, check in enumerate(checked[:16]):
            if not 0 <= check.trial < len(self.plan):
                self.problem = "malformed timed-call check"
                return False
            # fresh inputs: trial's mixed with another's (kernelrl.sandbox.timed_mix)
            mix = self._mix(check)
            if mix is False:
                return False
            found = self._compare(check.trial, check.outputs, f"{prefix}{n}", mix=mix)
            if found is False:
                return False
            if found is not None and found is not WIDENED:
                inputs = f"trial {check.trial}" + (f" mixed with trial {mix['mix_trial']}" if mix else "")
                detail = f"{what} {check.rep} (inputs of {inputs}): {found.get('detail', '')}"
                return self.flag("rt-timed-output-mismatch", detail)
        return True

    def _on_timing(self, event: TimingEvent) -> bool:
        self.timing = event
        if not event.checked:
            self.problem = "the timing report names no checked call"
            return False
        if not self._checked_calls(event.checked, "timed", "timed call"):
            return False
        alive = len(event.threads)
        if alive and not self.flag("rt-thread-left-running",
                                   f"{alive} extra thread(s) alive during or after timing"):
            return False
        if not self._native_threads(event.native_threads, "during or after timing"):
            return False
        if event.launches < event.calls:
            return self.flag("rt-no-kernel-launched",
                             f"{event.launches} candidate kernel launches in {event.calls} timed calls")
        return self._op_census(event.census, "timed calls")

    def _mix(self, check: TimedCheck) -> dict | None | bool:
        """A timed check's mix (the other variant's trial, of the same set, and the mask seed), None without
        one."""
        other, seed = check.mix_trial, check.mix_seed
        if other is None and seed is None:
            return None
        if not (other is not None and seed is not None and 0 <= other < len(self.plan) and 0 <= seed < 2**63
                and self.plan[other].set == self.plan[check.trial].set):
            self.problem = "malformed timed-call check"
            return False
        return {"mix_trial": other, "mix_seed": seed}

    def _mismatch(self, output_index: int, reason: str, detail: str) -> bool:
        self.mismatch = Mismatch(trial=self.run - 1, output_index=output_index, reason=reason, detail=detail,
                                 input_set=self.plan[self.run - 1].set)
        return False

