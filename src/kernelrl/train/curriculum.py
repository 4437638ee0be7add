"""A curriculum for GRPO (the Makora recipe): train on the simplest tier of problems first and promote the
next tier when the running solve rate on the highest active tier passes a threshold. Problems that the model
always solves, or never solves, are skipped: their GRPO groups have all-equal rewards and so teach nothing.
A problem the evaluator refuses (its audit says it cannot grade a kernel) is dropped for good at once. On a
suite of thousands, where a problem rarely comes back, `family_spread` learns the same from each op family
instead: problems of families whose groups had a spread of rewards are drawn more.

`Curriculum` keeps the state (thread-safe: the reward function records outcomes
in one thread while the sampler draws in another); `CurriculumSampler` feeds
TRL's GRPOTrainer indices in the layout of its RepeatSampler.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from torch.utils.data import Sampler

if TYPE_CHECKING:
    from kernelrl.problems.problem import Problem

STATE_VERSION = 1
KEYS = ("level", "difficulty")


@dataclass(frozen=True)
class CurriculumConfig:
    """How problems are tiered, when a tier promotes the next one, and when a problem is skipped."""

    key: str = "level"  # "level" or "difficulty": orders problems into tiers (None -> tier 0)
    start_tier: int | None = None  # first active tier (None: the lowest tier present)
    promote_threshold: float = 0.5  # solve rate on the highest active tier that promotes the next tier
    window: int = 32  # most recent attempts (completions) on the highest active tier counted in that rate
    min_attempts: int = 16  # attempts on the highest active tier before it can promote
    skip_solved_after: int | None = 2  # skip a problem whose last N groups were all correct (None: never)
    # set aside a problem whose last N groups had no correct one (None: never)
    skip_hopeless_after: int | None = 4
    retry_probability: float = 0.1  # chance a skipped/set-aside problem is drawn anyway (it may have changed)
    # share of each draw from the highest active tier (the frontier), the rest from every active tier: where
    # the lower tiers are mostly solved, their groups all have one reward and teach nothing
    frontier_share: float = 0.0
    # weigh each problem by its family's share of recorded groups with both correct and wrong completions (the
    # groups GRPO learns from), a prior of one of each: equal weights until the families have a record
    family_spread: bool = False

    def __post_init__(self) -> None:
        if self.key not in KEYS:
            raise ValueError(f"curriculum key must be one of {', '.join(KEYS)}, not {self.key!r}")
        if self.start_tier is not None and not _is_int(self.start_tier):
            raise ValueError(f"start_tier must be an int or None, not {self.start_tier!r}")
        if not 0 <= self.promote_threshold <= 1:
            raise ValueError(f"promote_threshold must be in [0, 1], not {self.promote_threshold}")
        if not _is_int(self.window) or self.window < 1:
            raise ValueError(f"window must be an int >= 1, not {self.window!r}")
        if not _is_int(self.min_attempts) or self.min_attempts < 1:
            raise ValueError(f"min_attempts must be an int >= 1, not {self.min_attempts!r}")
        for name in ("skip_solved_after", "skip_hopeless_after"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 1):
                raise ValueError(f"{name} must be an int >= 1 or None, not {value!r}")
        if not 0 <= self.retry_probability <= 1:
            raise ValueError(f"retry_probability must be in [0, 1], not {self.retry_probability}")
        if not 0 <= self.frontier_share <= 1:
            raise ValueError(f"frontier_share must be in [0, 1], not {self.frontier_share}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Curriculum:
    """Which problems a GRPO run trains on now. `tiers`: problem id -> tier; tiers at or below the active tier
    are active; `families`: problem id -> op family (needed by `family_spread`). Feed it each step's outcomes
    with `record`, take prompts with `draw`."""

    def __init__(self, tiers: Mapping[str, int], config: CurriculumConfig = CurriculumConfig(),
                 seed: int = 0, families: Mapping[str, str] | None = None) -> None:
        if not tiers:
            raise ValueError("a curriculum needs at least one problem")
        if config.family_spread and (families is None or set(tiers) - set(families)):
            raise ValueError("family_spread needs the family of every problem")
        bad = {pid: t for pid, t in tiers.items() if not _is_int(t)}
        if bad:
            raise ValueError(f"tiers must be ints; got {dict(list(bad.items())[:5])}")
        self.config = config
        self.seed = seed
        self._tiers = dict(tiers)
        self.tiers: Mapping[str, int] = MappingProxyType(self._tiers)
        self._levels = sorted(set(self._tiers.values()))
        # ordered by (tier, id) so draws depend only on the seed, not on dict or set order
        self._ids = sorted(self._tiers, key=lambda pid: (self._tiers[pid], pid))
        # last groups per problem as [correct, total]: enough for both skip rules
        self._keep = max(config.skip_solved_after or 1, config.skip_hopeless_after or 1)
        self._lock = threading.RLock()
        self._rng = random.Random(seed)
        self._active = self._clamp(self._levels[0] if config.start_tier is None else config.start_tier)
        self._history: dict[str, deque[tuple[int, int]]] = {}
        self._recent: deque[bool] = deque(maxlen=config.window)  # attempts on the highest active tier
        self._attempts = 0  # all attempts on the highest active tier (min_attempts counts these)
        self._promotions = 0
        self._refused: set[str] = set()  # problems the evaluator refuses: never drawn again
        self._families = dict(families or {})
        self.families: Mapping[str, str] = MappingProxyType(self._families)
        self._family_groups: dict[str, list[int]] = {}  # family -> [groups with a spread, groups]

    @classmethod
    def from_problems(cls, problems: Sequence[Problem], config: CurriculumConfig = CurriculumConfig(),
                      seed: int = 0) -> Curriculum:
        """Tiers from each problem's `config.key` (level or difficulty; None counts as tier 0), families from
        each problem's `family`."""
        tiers: dict[str, int] = {}
        for p in problems:
            value = getattr(p, config.key)
            tiers[p.id] = 0 if value is None else int(value)
        return cls(tiers, config, seed, families={p.id: p.family for p in problems})

    def _clamp(self, tier: int) -> int:
        # the highest existing tier at or below `tier`; below
        # every tier, the lowest (something must be active)
        below = [t for t in self._levels if t <= tier]
        return below[-1] if below else self._levels[0]

    @property
    def active_tier(self) -> int:
        """The highest active tier (every tier at or below it is active)."""
        with self._lock:
            return self._active

    def record(self, problem_id: str, correct: Sequence[bool]) -> None:
        """One group's outcomes (one bool per completion). An
        empty group carries no information and is ignored."""
        if problem_id not in self._tiers:
            raise KeyError(f"curriculum: {problem_id!r} is not one of its {len(self._tiers)} problems "
                           "(was it left out of the training problems?)")
        outcomes = [bool(c) for c in correct]
        if not outcomes:
            return
        with self._lock:
            history = self._history.setdefault(problem_id, deque(maxlen=self._keep))
            history.append((sum(outcomes), len(outcomes)))
            self._count_family(problem_id, sum(outcomes), len(outcomes))
            # only the highest active tier's attempts decide promotion: lower tiers are already mastered
            if self._tiers[problem_id] == self._active:
                self._recent.extend(outcomes)
                self._attempts += len(outcomes)
                self._maybe_promote()

    def _count_family(self, problem_id: str, correct: int, total: int) -> None:
        if problem_id in self._families:
            counts = self._family_groups.setdefault(self._families[problem_id], [0, 0])
            counts[0] += 0 < correct < total
            counts[1] += 1

    def refuse(self, problem_ids: Iterable[str]) -> None:
        """Problems the evaluator refused (every completion's verdict `unsupported` at the reference stage):
        no completion can be graded on them, so they are never drawn again, not even as a retry."""
        with self._lock:
            self._refused.update(pid for pid in problem_ids if pid in self._tiers)
            # a highest tier left without a problem to grade would never promote: the next one takes over
            higher = [t for t in self._levels if t > self._active]
            while higher and all(pid in self._refused
                                 for pid in self._ids if self._tiers[pid] == self._active):
                self._open(higher.pop(0))

    def _maybe_promote(self) -> None:
        higher = [t for t in self._levels if t > self._active]
        if not higher or self._attempts < self.config.min_attempts:
            return
        if sum(self._recent) / len(self._recent) >= self.config.promote_threshold:
            self._open(higher[0])

    def _open(self, tier: int) -> None:
        """Promote to `tier`: it starts its own count, so its rate must be earned on its own problems."""
        self._active = tier
        self._recent.clear()
        self._attempts = 0
        self._promotions += 1

    def _last(self, problem_id: str, n: int | None) -> list[tuple[int, int]] | None:
        history = self._history.get(problem_id)
        if n is None or history is None or len(history) < n:
            return None
        return list(history)[-n:]

    def _solved(self, problem_id: str) -> bool:
        last = self._last(problem_id, self.config.skip_solved_after)
        return last is not None and all(c == n for c, n in last)

    def _hopeless(self, problem_id: str) -> bool:
        last = self._last(problem_id, self.config.skip_hopeless_after)
        return last is not None and all(c == 0 for c, _ in last)

    def _active_ids(self) -> list[str]:
        return [pid for pid in self._ids if self._tiers[pid] <= self._active]

    def _split(self) -> tuple[list[str], list[str]]:
        """(eligible, skipped) among the active problems; eligible is never empty."""
        active = [pid for pid in self._active_ids() if pid not in self._refused] or self._active_ids()
        skipped = {pid for pid in active if self._solved(pid) or self._hopeless(pid)}
        if len(skipped) == len(active):  # every active problem skipped: training on something beats stopping
            return active, []
        return [pid for pid in active if pid not in skipped], [pid for pid in active if pid in skipped]

    def eligible(self) -> list[str]:
        """Active problems minus the skipped and set-aside ones (all active problems if that leaves none)."""
        with self._lock:
            return self._split()[0]

    def draw(self, n: int) -> list[str]:
        """`n` problem ids for the next generation batch: each skipped problem with `retry_probability`, a
        `frontier_share` of the rest from the eligible problems of the highest active tier, then the remainder
        from all of `eligible()`; each pool without replacement while it lasts (then again from the top)."""
        if n < 0:
            raise ValueError(f"cannot draw {n} problems")
        with self._lock:
            eligible, skipped = self._split()
            rng = self._rng
            retried = [pid for pid in skipped if rng.random() < self.config.retry_probability]
            rng.shuffle(retried)
            out = retried[:n]
            frontier = [pid for pid in eligible if self._tiers[pid] == self._active]
            if frontier:
                out += self._permutations(frontier, min(n - len(out), round(n * self.config.frontier_share)))
            out += self._permutations(eligible, n - len(out))
            rng.shuffle(out)  # retried and frontier problems are not always first
            return out

    def _permutations(self, pool: Sequence[str], k: int) -> list[str]:
        """`k` ids from `pool` in whole permutations, so every one comes up before any repeats (weighted ones
        with `family_spread`)."""
        if self.config.family_spread:
            return self._by_family(pool, k)
        out: list[str] = []
        while len(out) < k:
            perm = list(pool)
            self._rng.shuffle(perm)
            out.extend(perm[: k - len(out)])
        return out

    def _spread_rate(self, family: str) -> float:
        spread, groups = self._family_groups.get(family, (0, 0))
        return (spread + 1) / (groups + 2)

    def _by_family(self, pool: Sequence[str], k: int) -> list[str]:
        """`k` ids from `pool` in weighted permutations: each pass a sample without replacement (Efraimidis-
        Spirakis keys) in which a problem's weight is its family's spread rate; none repeats within a pass."""
        weights = {pid: self._spread_rate(self._families[pid]) for pid in pool}
        out: list[str] = []
        while len(out) < k:
            keys = {pid: self._rng.random() ** (1 / weights[pid]) for pid in pool}
            out.extend(sorted(pool, key=keys.__getitem__, reverse=True)[: k - len(out)])
        return out

    def _choice(self, options: Sequence[int]) -> int:
        # the sampler's row choice uses the curriculum's RNG, so a resumed run repeats it too
        with self._lock:
            return options[0] if len(options) == 1 else self._rng.choice(options)

    def stats(self) -> dict[str, Any]:
        """Metrics to log (solve_rate is None before any attempt on the highest active tier)."""
        with self._lock:
            active = self._active_ids()
            return {
                "curriculum/tier": self._active,
                "curriculum/solve_rate": sum(self._recent) / len(self._recent) if self._recent else None,
                "curriculum/eligible": len(self._split()[0]),
                "curriculum/skipped_solved": sum(self._solved(pid) for pid in active),
                "curriculum/set_aside_hopeless": sum(self._hopeless(pid) for pid in active),
                "curriculum/promotions": self._promotions,
                "curriculum/refused": len(self._refused),
            }

    def state_dict(self) -> dict[str, Any]:
        """JSON-safe state: active tier, recent attempts, per-problem histories, promotions, RNG state."""
        with self._lock:
            version, internal, gauss = self._rng.getstate()
            return {
                "version": STATE_VERSION,
                "active_tier": self._active,
                "recent": [int(c) for c in self._recent],
                "attempts": self._attempts,
                "promotions": self._promotions,
                "history": {pid: [list(g) for g in h] for pid, h in sorted(self._history.items())},
                "refused": sorted(self._refused),
                "family_groups": {f: list(g) for f, g in sorted(self._family_groups.items())},
                "rng": [version, list(internal), gauss],
            }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore `state_dict()`. Problems no longer in `tiers` are dropped; an active tier that no longer
        exists falls back to the highest tier below it."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"curriculum state version {state.get('version')!r} is not {STATE_VERSION}")
        with self._lock:
            self._active = self._clamp(int(state["active_tier"]))
            self._recent = deque((bool(c) for c in state["recent"]), maxlen=self.config.window)
            self._attempts = int(state["attempts"])
            self._promotions = int(state["promotions"])
            self._history = {pid: deque(((int(c), int(n)) for c, n in groups), maxlen=self._keep)
                             for pid, groups in state["history"].items() if pid in self._tiers}
            self._refused = {pid for pid in state.get("refused", ()) if pid in self._tiers}
            if "family_groups" in state:
                self._family_groups = {f: [int(s), int(n)] for f, (s, n) in state["family_groups"].items()}
            else:  # saved before the family counts: counted from the groups each problem's history keeps
                self._family_groups = {}
                for pid, groups in self._history.items():
                    for correct, total in groups:
                        self._count_family(pid, correct, total)
            version, internal, gauss = state["rng"]
            self._rng.setstate((int(version), tuple(int(x) for x in internal), gauss))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state as JSON atomically (a reader or a crash never sees half a file)."""
        path = Path(path)
        text = json.dumps(self.state_dict())
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str], tiers: Mapping[str, int],
             config: CurriculumConfig = CurriculumConfig(), seed: int = 0,
             families: Mapping[str, str] | None = None) -> Curriculum:
        """A curriculum over `tiers` that continues from the state saved at `path`."""
        curriculum = cls(tiers, config, seed, families)
        curriculum.load_state_dict(json.loads(Path(path).read_text()))
        return curriculum


class CurriculumSampler(Sampler[int]):
    """Indices for TRL's GRPOTrainer in the layout its RepeatSampler produces: each drawn prompt index
    repeated `mini_repeat_count` (= num_generations) times consecutively, `batch_size` distinct prompts per
    generation batch, the whole batch repeated `repeat_count` times (num_iterations * steps_per_generation),
    for `num_batches` batches. Prompts come from `curriculum.draw`, one batch at a time, so outcomes recorded
    during training steer the next batches. One process: several would each keep their own curriculum."""

    def __init__(self, curriculum: Curriculum, row_problem_ids: Sequence[str], mini_repeat_count: int,
                 batch_size: int, repeat_count: int = 1, num_batches: int = 10**6) -> None:
        for name, value in (("mini_repeat_count", mini_repeat_count), ("batch_size", batch_size),
                            ("repeat_count", repeat_count)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, not {value}")
        if num_batches < 0:
            raise ValueError(f"num_batches must be >= 0, not {num_batches}")
        rows: dict[str, list[int]] = {}
        for index, pid in enumerate(row_problem_ids):
            rows.setdefault(pid, []).append(index)
        unknown = sorted(set(rows) - set(curriculum.tiers))
        if unknown:
            raise ValueError(f"dataset rows name problems the curriculum does not know: {unknown[:5]}")
        missing = sorted(set(curriculum.tiers) - set(rows))
        if missing:  # the curriculum could draw them and there would be no prompt to give
            raise ValueError(f"curriculum problems without a dataset row: {missing[:5]}")
        self.curriculum = curriculum
        self.rows = rows
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.num_batches = num_batches

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.num_batches):
            # drawn when the trainer asks for the batch, not up front: promotions apply from the next batch
            chunk = [self.curriculum._choice(self.rows[pid]) for pid in self.curriculum.draw(self.batch_size)]
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index

    def __len__(self) -> int:
        return self.num_batches * self.batch_size * self.mini_repeat_count * self.repeat_count
