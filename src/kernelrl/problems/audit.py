"""The problem audit: find problems whose reference cannot grade a kernel (see verify/degeneracy.py).

Flags: zeros_pass, constant_pass, input_independent, returns_input, weights_ignored, nondeterministic,
reference_raises (correctness: the evaluator refuses such problems by default), and on a GPU with timing
launch_bound (eager under 0.1 ms on the bench set) and too_large (bench inputs over 2 GiB or out of GPU
memory). A problem waives a flag with METADATA {"audit_waivers": {"flag": "why"}}: it is still reported,
marked waived.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelrl.problems.problem import Problem

TRANSIENT_MARK = "the judge failed: "  # starts the detail of a flag the evaluator made when the judge failed

CORRECTNESS_FLAGS = frozenset({
    "zeros_pass", "constant_pass", "input_independent", "returns_input", "weights_ignored",
    "nondeterministic", "reference_raises",
})


@dataclass(frozen=True)
class AuditFlag:
    flag: str
    input_set: str | None
    detail: str
    waived: str | None = None  # the problem's reason for accepting it


@dataclass(frozen=True)
class ProblemAudit:
    problem_id: str
    problem_sha256: str
    flags: tuple[AuditFlag, ...] = ()
    eager_ms: dict[str, float] = field(default_factory=dict)  # per timed input set (GPU audits)
    timing_set_bytes: int | None = None  # one reference call's inputs and outputs on the timing set

    @property
    def unwaived(self) -> tuple[AuditFlag, ...]:
        return tuple(f for f in self.flags if f.waived is None)

    @property
    def refusing(self) -> tuple[AuditFlag, ...]:
        """Flags that make the evaluator refuse the problem (unless told otherwise)."""
        return tuple(f for f in self.unwaived if f.flag in CORRECTNESS_FLAGS)

    @property
    def transient(self) -> bool:
        """A finding that says more about the machine than the problem (the judge died or timed out, the GPU
        was out of memory, e.g. while a trainer shares it)."""
        return any(f.detail.startswith(TRANSIENT_MARK) or "out of memory" in f.detail.lower()
                   or "out of gpu memory" in f.detail.lower() for f in self.flags)

    def summary(self) -> str:
        return "; ".join(f"{f.flag} on {f.input_set or 'load'} ({f.detail})" for f in self.unwaived)


def audit_from_report(problem: Problem, flags: list[tuple[str, str | None, str]],
                      eager_ms: dict[str, float] | None = None,
                      timing_set_bytes: int | None = None) -> ProblemAudit:
    """The audit of `problem` from what the judge's `audit` reply says (its flags as (flag, input set,
    detail), the eager times per set, one timed call's bytes), with the problem's waivers applied. The judge
    call itself lives with the evaluator (`Evaluator.audit`)."""
    waivers = problem.metadata.get("audit_waivers") or {}
    found = tuple(AuditFlag(flag, input_set, detail, waivers.get(flag)) for flag, input_set, detail in flags)
    return ProblemAudit(problem.id, problem.sha256, found, dict(eager_ms or {}), timing_set_bytes)
