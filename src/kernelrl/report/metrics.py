"""Benchmark metrics over a run's steps, overall and per level.

Definitions (an *attempt* is one evaluated completion: one sample at one turn; a *sample* is one trajectory of
up to K turns; a problem is *solved* when any attempt is correct):

- format_rate / compile_rate / correct_rate: fractions of attempts with code found (not `format_error`),
  `EvalResult.compiled`, and `correct`.
- pass@k: the unbiased estimator 1 - C(n-c, k) / C(n, k) per problem (n samples, c of them correct at any
  turn), averaged over problems; for k in 1, 5, 10, ... up to the smallest n.
- fast_p (p in 1.0, 1.5, 2.0) vs eager and vs Inductor: fraction of problems whose best correct kernel is
  more than p times faster (KernelBench's fast_p; speedup > p). A correct kernel without a measured speedup
  counts as not fast; when no correct kernel of the run has a measured speedup (CPU runs) fast_p is None.
- geomean_speedup vs eager / Inductor: geometric mean over solved problems of the best measured speedup
  (None when nothing was measured).
- tokens_per_solved: prompt + completion tokens of all attempts / solved problems (a prompt shared by n
  samples of one request counts once per sample). gpu_seconds_per_solved: evaluation wall time of attempts
  evaluated in GPU mode / solved problems (None when nothing ran on a GPU); eval_seconds_per_solved: the same
  for all attempts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelrl.results import Status
from kernelrl.runs import Step

FAST_P = (1.0, 1.5, 2.0)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k)/C(n, k)."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1 (n={n}, c={c}, k={k})")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _geomean(values: Sequence[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclass
class ProblemSummary:
    problem_id: str
    level: int | None
    samples: int
    attempts: int
    correct_samples: int
    solved: bool
    best_status: str  # of the best attempt (correct by reward, else the furthest-reaching last one)
    best_reward: float | None
    best_sample: int | None
    best_turn: int | None
    speedup_vs_eager: float | None  # best measured over correct attempts
    speedup_vs_inductor: float | None
    tokens: int
    eval_seconds: float


@dataclass
class Metrics:
    problems: int
    attempts: int
    solved: int
    solved_rate: float
    format_rate: float
    compile_rate: float
    correct_rate: float
    pass_at_k: dict[str, float]
    fast_p_eager: dict[str, float | None]
    fast_p_inductor: dict[str, float | None]
    geomean_speedup_eager: float | None
    geomean_speedup_inductor: float | None
    timed_correct: int  # correct attempts with a measured speedup
    tokens: int
    tokens_per_solved: float | None
    eval_seconds: float
    eval_seconds_per_solved: float | None
    gpu_seconds: float
    gpu_seconds_per_solved: float | None
    status_counts: dict[str, int] = field(default_factory=dict)
    # problems the evaluator refused (EvalResult.problem_refused: they cannot grade a kernel); counted in
    # `problems` and unsolved, so a claim over the gradable ones divides by problems - refused_problems
    refused_problems: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ORDER = {s: i for i, s in enumerate([Status.FORMAT_ERROR, Status.UNSUPPORTED, Status.COMPILE_ERROR,
                                      Status.TIMEOUT, Status.CRASHED, Status.RUNTIME_ERROR,
                                      Status.HACK_DETECTED, Status.WRONG_OUTPUT, Status.CORRECT])}


def summarize_problem(problem_id: str, steps: Sequence[Step]) -> ProblemSummary:
    samples = sorted({s.sample for s in steps})
    correct_samples = {s.sample for s in steps if s.result.correct}
    correct = [s for s in steps if s.result.correct]
    if correct:
        best = max(correct, key=lambda s: (s.reward, s.speedup_vs_eager or 0.0, -s.turn, -s.sample))
    else:
        best = max(steps, key=lambda s: (_ORDER.get(s.result.status, 0), s.reward, s.turn)) if steps else None
    eager = [s.speedup_vs_eager for s in correct if s.speedup_vs_eager is not None]
    inductor = [s.speedup_vs_inductor for s in correct if s.speedup_vs_inductor is not None]
    return ProblemSummary(
        problem_id=problem_id, level=steps[0].level if steps else None, samples=len(samples),
        attempts=len(steps), correct_samples=len(correct_samples), solved=bool(correct),
        best_status=best.result.status.value if best else "none", best_reward=best.reward if best else None,
        best_sample=best.sample if best else None, best_turn=best.turn if best else None,
        speedup_vs_eager=max(eager) if eager else None,
        speedup_vs_inductor=max(inductor) if inductor else None,
        tokens=sum(s.completion.tokens_in + s.completion.tokens_out for s in steps),
        eval_seconds=sum(s.result.wall_time_s for s in steps))


def compute_metrics(steps: Iterable[Step]) -> Metrics:
    steps = list(steps)
    by_problem: dict[str, list[Step]] = defaultdict(list)
    for s in steps:
        by_problem[s.problem_id].append(s)
    summaries = [summarize_problem(pid, st) for pid, st in sorted(by_problem.items())]
    n_attempts = len(steps)
    n_problems = len(summaries)
    solved = [p for p in summaries if p.solved]

    def rate(count: int, total: int) -> float:
        return count / total if total else 0.0

    min_n = min((p.samples for p in summaries), default=0)
    # the usual k values, plus k = the samples taken (pass@8 of 8 samples, as seed 003 reports)
    ks = sorted({k for k in (1, 5, 10, 20, 50, 100) if k <= min_n} | ({min_n} if min_n else set()))
    pass_k = {f"pass@{k}": rate(sum(pass_at_k(p.samples, p.correct_samples, k) for p in summaries),
                                n_problems)
              for k in ks}
    timed_correct = sum(1 for s in steps if s.result.correct and s.speedup_vs_eager is not None)
    timed_inductor = sum(1 for s in steps if s.result.correct and s.speedup_vs_inductor is not None)

    def fast(p: float, attr: str, timed: int) -> float | None:
        if not timed:
            return None
        return rate(sum(1 for x in summaries if (getattr(x, attr) or 0.0) > p), n_problems)

    gpu = [s.result.wall_time_s for s in steps if s.result.environment and s.result.environment.mode == "gpu"]
    tokens = sum(p.tokens for p in summaries)
    eval_seconds = sum(p.eval_seconds for p in summaries)
    counts: dict[str, int] = defaultdict(int)
    for s in steps:
        counts[s.result.status.value] += 1
    return Metrics(
        problems=n_problems, attempts=n_attempts, solved=len(solved),
        solved_rate=rate(len(solved), n_problems),
        format_rate=rate(sum(1 for s in steps if s.result.status is not Status.FORMAT_ERROR), n_attempts),
        compile_rate=rate(sum(1 for s in steps if s.result.compiled), n_attempts),
        correct_rate=rate(sum(1 for s in steps if s.result.correct), n_attempts), pass_at_k=pass_k,
        fast_p_eager={f"fast_{p:g}": fast(p, "speedup_vs_eager", timed_correct) for p in FAST_P},
        fast_p_inductor={f"fast_{p:g}": fast(p, "speedup_vs_inductor", timed_inductor) for p in FAST_P},
        geomean_speedup_eager=_geomean([p.speedup_vs_eager for p in solved if p.speedup_vs_eager]),
        geomean_speedup_inductor=_geomean([p.speedup_vs_inductor for p in solved if p.speedup_vs_inductor]),
        timed_correct=timed_correct, tokens=tokens,
        tokens_per_solved=tokens / len(solved) if solved else None,
        eval_seconds=round(eval_seconds, 3),
        eval_seconds_per_solved=eval_seconds / len(solved) if solved else None,
        gpu_seconds=round(sum(gpu), 3),
        gpu_seconds_per_solved=(sum(gpu) / len(solved) if solved and gpu else None),
        status_counts=dict(sorted(counts.items())),
        refused_problems=sum(any(s.result.problem_refused for s in st) for st in by_problem.values()))


def metrics_by_level(steps: Iterable[Step]) -> dict[str, Metrics]:
    """{'all': ..., 'level0': ..., 'level1': ...} ('level?' for problems without a level)."""
    steps = list(steps)
    levels: dict[str, list[Step]] = defaultdict(list)
    for s in steps:
        levels["level?" if s.level is None else f"level{s.level}"].append(s)
    out = {"all": compute_metrics(steps)}
    for name in sorted(levels):
        out[name] = compute_metrics(levels[name])
    return out


def problem_summaries(steps: Iterable[Step]) -> list[ProblemSummary]:
    by_problem: dict[str, list[Step]] = defaultdict(list)
    for s in steps:
        by_problem[s.problem_id].append(s)
    return [summarize_problem(pid, st) for pid, st in sorted(
        by_problem.items(),
        key=lambda kv: (kv[1][0].level if kv[1][0].level is not None else -1, _num(kv[0])))]


def _num(problem_id: str) -> tuple[int, str]:
    name = problem_id.rsplit("/", 1)[-1]
    head = name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, name)
