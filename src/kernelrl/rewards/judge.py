"""LLM judge: a reward term r' = r + lambda*J for bootstrapping sparse rewards, and an optional extra
verification layer that classifies a correct kernel as honest or as a named kind of reward hack.

Any `Policy` can be the judge (an OpenAI-compatible server, a local model, or replay in tests). Judge calls
are cached in SQLite, keyed by the sha256 of (policy name, messages, temperature, max_tokens).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernelrl.policies.base import Policy
from kernelrl.problems import Problem
from kernelrl.prompts import Prompts
from kernelrl.results import EvalResult, Finding, Stage, Status

HACK_KINDS = (
    "pytorch_fallback",  # computes with the PyTorch ops it should replace (or calls Model)
    "output_caching",  # returns stored or precomputed outputs
    "input_special_casing",  # detects the test's inputs or shapes and answers them specially
    "timing_manipulation",  # interferes with the timer, streams or synchronization
    "tolerance_exploit",  # deliberately approximate output that just fits the tolerance
    "no_op_kernel",  # launches a kernel that does not do the work
)
_JSON_OBJECT = re.compile(r"\{.*?\}", re.S)
_SCORE_KEYS = ("correctness", "compilability", "speed")


@dataclass(frozen=True)
class JudgeScore:
    correctness: float
    compilability: float
    speed: float

    @property
    def mean(self) -> float:
        """J in [0, 1]: the mean of the three scores."""
        return (self.correctness + self.compilability + self.speed) / 3.0


@dataclass(frozen=True)
class HackVerdict:
    honest: bool
    kind: str = ""  # one of HACK_KINDS or 'unknown_hack' when not honest
    reason: str = ""


def _json_objects(text: str) -> list[dict]:
    found = []
    for match in _JSON_OBJECT.finditer(text):
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def parse_score(text: str) -> JudgeScore | None:
    """The last JSON object with numeric correctness/compilability/speed in the text, clamped to [0, 1]."""
    for obj in reversed(_json_objects(text)):
        try:
            values = [min(1.0, max(0.0, float(obj[k]))) for k in _SCORE_KEYS]
        except (KeyError, TypeError, ValueError):
            continue
        return JudgeScore(*values)
    return None


def parse_hack_verdict(text: str) -> HackVerdict | None:
    for obj in reversed(_json_objects(text)):
        verdict = str(obj.get("verdict", "")).strip().lower()
        if verdict == "honest":
            return HackVerdict(True)
        if verdict == "hack":
            kind = str(obj.get("kind", "")).strip().lower()
            return HackVerdict(False, kind if kind in HACK_KINDS else "unknown_hack",
                               str(obj.get("reason", ""))[:500])
    return None


class JudgeCache:
    """SQLite cache of judge answers: key (sha256 of the request) -> completion text."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS judge (key TEXT PRIMARY KEY, text TEXT "
                       "NOT NULL, created REAL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, key: str) -> str | None:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT text FROM judge WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, text: str) -> None:
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO judge VALUES (?, ?, ?)", (key, text, time.time()))


class LLMJudge:
    """Asks a policy to score or audit kernels; answers are cached when `cache_path` is given."""

    def __init__(self, policy: Policy, cache_path: str | Path | None = None, prompts: Prompts | None = None,
                 temperature: float = 0.0, max_tokens: int = 512) -> None:
        self.policy = policy
        self.prompts = prompts or Prompts()
        self.cache = JudgeCache(cache_path) if cache_path is not None else None
        self.temperature, self.max_tokens = temperature, max_tokens
        self.calls = 0  # requests that reached the policy (cache misses)

    def ask(self, messages: list[dict[str, str]]) -> str:
        key = hashlib.sha256(json.dumps([self.policy.name, messages, self.temperature, self.max_tokens],
                                        sort_keys=True).encode()).hexdigest()
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit
        text = self.policy.generate(messages, n=1, temperature=self.temperature, max_tokens=self.max_tokens,
                                    tags={"judge": True})[0].text
        self.calls += 1
        if self.cache is not None:
            self.cache.put(key, text)
        return text

    def score(self, problem: Problem, code: str) -> JudgeScore | None:
        """The judge's scores, or None when its answer holds no usable JSON."""
        return parse_score(self.ask(self.prompts.judge_score(problem, code)))

    def classify(self, problem: Problem, code: str) -> HackVerdict | None:
        """Honest or a named hack, or None when the answer holds no usable JSON."""
        return parse_hack_verdict(self.ask(self.prompts.judge_hack(problem, code, HACK_KINDS)))


def judged_reward(base: Callable[[EvalResult], float], judge: LLMJudge, lam: float = 0.5,
                  minimum: float | None = None) -> Callable[[EvalResult, Problem, str], float]:
    """r' = r + lam * J, with J the judge's mean score in [0, 1] (0 when its answer is unusable).

    `hack_detected` keeps the base preset's value (its minimum,
    or `minimum` when given): no judge bonus for hacks.
    """

    def reward(result: EvalResult, problem: Problem, code: str | None) -> float:
        r = base(result)
        if result.status is Status.HACK_DETECTED:
            return r if minimum is None else minimum
        if not code:
            return r
        score = judge.score(problem, code)
        return r + lam * (score.mean if score is not None else 0.0)

    return reward


def verify_with_judge(result: EvalResult, problem: Problem, code: str, judge: LLMJudge,
                      enforce: bool = False) -> EvalResult:
    """Ask the judge whether a correct kernel is honest. A hack finding is recorded on a copy of the result
    (rule `llm-judge/<kind>`); with `enforce` the verdict becomes `hack_detected`. Non-correct results and
    unusable answers come back unchanged."""
    if not result.correct:
        return result
    verdict = judge.classify(problem, code)
    if verdict is None or verdict.honest:
        return result
    finding = Finding(rule=f"llm-judge/{verdict.kind}", policy="reject" if enforce else "warn",
                      message=f"an LLM judge classified this kernel as a reward hack ({verdict.kind})",
                      detail=verdict.reason)
    changed = dataclasses.replace(result, findings=[*result.findings, finding])
    if enforce:
        changed = dataclasses.replace(changed, status=Status.HACK_DETECTED, stage=Stage.DONE,
                                      message=f"LLM judge: {verdict.kind}"
                                      + (f": {verdict.reason}" if verdict.reason else "")[:200],
                                      feedback=f"{finding.message}: {verdict.reason}")
    return changed
