"""The reward service's wire (version 1), shared by the server and `Client`: verdict settings as JSON, the
content key of an item, and the answer line. Stdlib only, so a trainer's process that only holds a `Client`
imports nothing heavy.

A request is data, never code: verdict settings come in as plain values the server checks against its
allow-list (`REQUEST_VERDICT_FIELDS` by default); `extra_rules` (which would import a module in the verdict
process), the secret trial seed and the resource limits are the operator's alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kernelrl.cache.keys import canonical_code
from kernelrl.candidates import Candidate
from kernelrl.evaluate.settings import VerdictSettings
from kernelrl.results import EvalResult, Stage, Status
from kernelrl.timing.cuda_timer import TimerSettings

WIRE_VERSION = 1

# verdict settings a request may set unless the operator narrows the list (`kernelrl serve --allow-verdict`):
# how candidates are judged. Never from a request: extra_rules (code), seed (the trials' secret), timeouts and
# memory (the server's resources), the floors and static_checks (the checks themselves).
REQUEST_VERDICT_FIELDS: frozenset[str] = frozenset({
    "trials", "input_sets", "bench_correctness", "tolerances", "reference_error_k", "timing",
    "inductor_baseline", "timer", "rule_policy", "runtime_policy", "timing_variants", "fresh_timed_inputs",
    "timing_mode", "paired_baseline", "speedup_rse_target", "baseline_source", "cpu_timing"})
NEVER_FROM_REQUESTS: frozenset[str] = frozenset({"extra_rules", "seed"})
_VERDICT_FIELDS = {f.name for f in dataclasses.fields(VerdictSettings)}


class WireError(ValueError):
    """A request the server cannot take as sent (answered 422 with this message); nothing was evaluated."""


def verdict_to_wire(verdict: VerdictSettings) -> dict[str, Any]:
    """Every field, as JSON values (tuples become lists; the timer a dict)."""
    return json.loads(json.dumps(dataclasses.asdict(verdict)))


def _from_json(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "timer":
        if not isinstance(value, Mapping):
            raise WireError("verdict.timer must be an object of timer settings")
        known = {f.name for f in dataclasses.fields(TimerSettings)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise WireError(f"unknown timer settings {unknown}; known: {sorted(known)}")
        return TimerSettings(**value)
    if name in ("input_sets", "extra_rules"):
        return tuple(value)
    if name == "tolerances":
        return {str(k): tuple(v) for k, v in value.items()}
    return value


def verdict_from_wire(data: Mapping[str, Any] | None, base: VerdictSettings,
                      allowed: Iterable[str] = REQUEST_VERDICT_FIELDS) -> VerdictSettings:
    """`base` with the request's fields. A field equal to `base`'s is accepted whatever the allow-list says (a
    client may send its whole settings); a differing one must be allowed."""
    if not data:
        return base
    if not isinstance(data, Mapping):
        raise WireError("verdict must be an object of verdict settings")
    allowed = set(allowed) - NEVER_FROM_REQUESTS
    unknown = sorted(set(data) - _VERDICT_FIELDS)
    if unknown:
        raise WireError(f"unknown verdict settings {unknown}")
    current = verdict_to_wire(base)
    changed = {k: v for k, v in data.items() if json.loads(json.dumps(v)) != current[k]}
    refused = sorted(set(changed) - allowed)
    if refused:
        raise WireError(f"this server does not take {refused} from requests (it allows {sorted(allowed)})")
    try:
        return dataclasses.replace(base, **{k: _from_json(k, v) for k, v in changed.items()})
    except (TypeError, ValueError) as exc:
        raise WireError(f"invalid verdict settings: {exc}") from None


def digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def item_key(problem_sha256: str, candidate: Candidate, verdict: VerdictSettings, grader: str) -> str:
    """What an item's verdict depends on: the problem, the candidate's canonical code (the text of a
    completion without code), the verdict settings and the grader (kernelrl's verdict code and the server's
    device). Equal keys are one evaluation: a retried request and a GRPO group's duplicate completions are
    judged once."""
    code = canonical_code(candidate.code) if candidate.code is not None else "no-code:" + candidate.text
    return digest({"v": WIRE_VERSION, "problem": problem_sha256, "code": code,
                   "verdict": verdict_to_wire(verdict), "grader": grader})


def infrastructure_result(problem_id: str, problem_sha256: str, message: str, stage: Stage = Stage.STATIC,
                          status: Status = Status.TIMEOUT) -> EvalResult:
    """An answer that says nothing about the code (a full queue, a dead evaluator, an unreachable server):
    `no_verdict`, so a reward leaves it out instead of scoring it 0."""
    return EvalResult(status=status, stage=stage, problem_id=problem_id, problem_sha256=problem_sha256,
                      message=message, feedback="the evaluation did not run to a verdict; this "
                      "says nothing about the code", no_verdict=True)


def answer_line(item_id: Any, index: int, key: str, result: EvalResult, **extra: Any) -> dict[str, Any]:
    """One answered item on the wire (a line of the NDJSON stream, an element of `results`)."""
    return {"id": item_id, "index": index, "item_key": key, "no_verdict": result.no_verdict,
            "result": result.to_dict(), **extra}
