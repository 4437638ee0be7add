"""The GRPO curriculum: promotion, skipping, draws, resumable state and the TRL-layout sampler."""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections import Counter
from types import SimpleNamespace

import pytest

from kernelrl.train.curriculum import Curriculum, CurriculumConfig, CurriculumSampler

NO_SKIP = {"skip_solved_after": None, "skip_hopeless_after": None}
TIERS = {"a0": 0, "b0": 0, "c1": 1, "d1": 1, "e2": 2}


def tiers_of(ids: list[str]) -> set[int]:
    return {TIERS[pid] for pid in ids}


def test_config_validation() -> None:
    for bad in ({"key": "size"}, {"promote_threshold": 1.5}, {"window": 0}, {"min_attempts": 0},
                {"skip_solved_after": 0}, {"skip_hopeless_after": -1}, {"retry_probability": -0.1},
                {"start_tier": 1.5}, {"frontier_share": 1.5}):
        with pytest.raises(ValueError):
            CurriculumConfig(**bad)
    with pytest.raises(ValueError, match="at least one"):
        Curriculum({})


def test_from_problems_tiers_and_start() -> None:
    problems = [SimpleNamespace(id="x", level=2, difficulty=None, family="relu"),
                SimpleNamespace(id="y", level=None, difficulty=3, family="relu"),
                SimpleNamespace(id="z", level=1, difficulty=1, family="softmax")]
    assert dict(Curriculum.from_problems(problems).tiers) == {"x": 2, "y": 0, "z": 1}
    assert dict(Curriculum.from_problems(problems).families) == {"x": "relu", "y": "relu", "z": "softmax"}
    by_difficulty = Curriculum.from_problems(problems, CurriculumConfig(key="difficulty"))
    assert dict(by_difficulty.tiers) == {"x": 0, "y": 3, "z": 1}
    assert by_difficulty.active_tier == 0 and by_difficulty.eligible() == ["x"]
    # start_tier: every tier at or below it is active
    c = Curriculum(TIERS, CurriculumConfig(start_tier=1))
    assert c.active_tier == 1 and tiers_of(c.eligible()) == {0, 1}


def test_promotion_on_scripted_solve_rate() -> None:
    c = Curriculum(TIERS, CurriculumConfig(window=8, min_attempts=8, promote_threshold=0.75, **NO_SKIP))
    assert c.active_tier == 0 and c.stats()["curriculum/solve_rate"] is None
    for _ in range(4):  # 25% solved: stays on tier 0 however long it trains
        c.record("a0", [True, False, False, False])
        assert c.active_tier == 0
        assert tiers_of(c.eligible()) == {0}
        assert tiers_of(c.draw(10)) == {0}
    assert c.stats()["curriculum/solve_rate"] == 0.25
    c.record("b0", [True, True, True, True])
    assert c.active_tier == 0  # the last 8 attempts: 5 solved, 0.625
    c.record("b0", [True, True, True, True])
    assert c.active_tier == 1
    assert tiers_of(c.eligible()) == {0, 1}  # lower tiers stay active
    assert 1 in tiers_of(c.draw(4)) and 2 not in tiers_of(c.draw(10))
    stats = c.stats()
    assert stats["curriculum/tier"] == 1 and stats["curriculum/promotions"] == 1
    assert stats["curriculum/solve_rate"] is None  # the new tier's count starts afresh
    # only the highest active tier's attempts promote: solving tier 0 again does not unlock tier 2
    for _ in range(4):
        c.record("a0", [True] * 4)
    assert c.active_tier == 1
    c.record("c1", [True] * 8)
    assert c.active_tier == 2 and c.stats()["curriculum/promotions"] == 2
    c.record("e2", [True] * 8)  # no tier above the last
    assert c.active_tier == 2 and c.stats()["curriculum/promotions"] == 2


def test_window_promotion_check() -> None:
    # the rate counts the last `window` attempts only: all
    # attempts (3 of 7) would not pass 0.75, the last 4 do
    c = Curriculum(TIERS, CurriculumConfig(window=4, min_attempts=4, promote_threshold=0.75, **NO_SKIP))
    c.record("a0", [False] * 4)
    c.record("a0", [True] * 3)
    assert c.active_tier == 1


def test_no_promotion_before_min_attempts() -> None:
    c = Curriculum(TIERS, CurriculumConfig(window=4, min_attempts=10, promote_threshold=0.5, **NO_SKIP))
    c.record("a0", [True] * 4)
    c.record("b0", [True] * 4)
    assert c.active_tier == 0 and tiers_of(c.draw(5)) == {0}  # 8 attempts, all solved: not yet
    c.record("a0", [True] * 2)
    assert c.active_tier == 1


def test_record_unknown_problem_raises() -> None:
    c = Curriculum(TIERS)
    with pytest.raises(KeyError, match="'nope' is not one of its"):
        c.record("nope", [True])


def test_skip_solved_window() -> None:
    c = Curriculum(TIERS,
                   CurriculumConfig(skip_solved_after=2, skip_hopeless_after=None, retry_probability=0))
    c.record("a0", [True, True])
    assert "a0" in c.eligible()  # one all-correct group is not enough
    c.record("a0", [True, True])
    assert c.eligible() == ["b0"]
    assert c.stats()["curriculum/skipped_solved"] == 1 and c.stats()["curriculum/eligible"] == 1
    assert set(itertools.chain.from_iterable(c.draw(2) for _ in range(50))) == {"b0"}
    c.record("a0", [True, False])  # solved no longer: back in
    assert c.eligible() == ["a0", "b0"] and c.stats()["curriculum/skipped_solved"] == 0
    never = Curriculum(TIERS, CurriculumConfig(skip_solved_after=None, skip_hopeless_after=None))
    for _ in range(5):
        never.record("a0", [True, True])
    assert "a0" in never.eligible()


def test_set_aside_hopeless_window() -> None:
    c = Curriculum(TIERS,
                   CurriculumConfig(skip_solved_after=None, skip_hopeless_after=3, retry_probability=0))
    for _ in range(2):
        c.record("b0", [False, False])
    assert "b0" in c.eligible()
    c.record("b0", [False, False])
    assert c.eligible() == ["a0"] and c.stats()["curriculum/set_aside_hopeless"] == 1
    c.record("b0", [False, True])  # a retry solved it once: back in
    assert "b0" in c.eligible() and c.stats()["curriculum/set_aside_hopeless"] == 0


def test_eligible_never_empty() -> None:
    c = Curriculum(TIERS, CurriculumConfig(skip_solved_after=1, skip_hopeless_after=1, retry_probability=0))
    c.record("a0", [True, True])
    c.record("b0", [False, False])
    assert c.eligible() == ["a0", "b0"]  # all active ones skipped: train on them anyway
    assert sorted(c.draw(2)) == ["a0", "b0"]


def test_retry_probability_is_seeded() -> None:
    def run(p: float, seed: int = 0) -> list[list[str]]:
        c = Curriculum(TIERS, CurriculumConfig(start_tier=1, skip_solved_after=1, skip_hopeless_after=None,
                                               retry_probability=p), seed=seed)
        c.record("a0", [True])  # a0 skipped; b0, c1, d1 eligible
        return [c.draw(3) for _ in range(1000)]

    def share(draws: list[list[str]]) -> float:
        return sum("a0" in d for d in draws) / len(draws)

    assert share(run(0.0)) == 0
    assert share(run(1.0)) == 1
    assert 0.25 < share(run(0.3)) < 0.35
    assert run(0.3) == run(0.3) and run(0.3) != run(0.3, seed=1)


def test_draw_without_replacement_while_possible() -> None:
    c = Curriculum(TIERS, CurriculumConfig(start_tier=2))
    for _ in range(20):
        assert sorted(c.draw(5)) == sorted(TIERS)
        assert len(set(c.draw(3))) == 3
    counts = Counter(c.draw(12))  # 12 of 5: each problem twice or three times
    assert sorted(counts) == sorted(TIERS) and set(counts.values()) <= {2, 3}


def test_a_frontier_share_of_each_draw_comes_from_the_highest_active_tier() -> None:
    tiers = {**{f"easy{i}": 0 for i in range(40)}, "hard0": 1, "hard1": 1}
    uniform = Curriculum(tiers, CurriculumConfig(start_tier=1, **NO_SKIP), seed=3)
    half = Curriculum(tiers, CurriculumConfig(start_tier=1, frontier_share=0.5, **NO_SKIP), seed=3)
    for _ in range(10):
        drawn = half.draw(8)
        # 4 of 8 from the two frontier problems in whole permutations (each twice), the rest from all 42
        assert len(drawn) == 8 and Counter(drawn)["hard0"] >= 2 and Counter(drawn)["hard1"] >= 2
    assert sum(pid.startswith("hard") for _ in range(10) for pid in uniform.draw(8)) < 20  # 2 of 42 by chance
    only_frontier = Curriculum(tiers, CurriculumConfig(start_tier=1, frontier_share=1.0, **NO_SKIP))
    assert all(pid.startswith("hard") for pid in only_frontier.draw(8))
    lowest = Curriculum(tiers, CurriculumConfig(frontier_share=0.5, **NO_SKIP))  # the frontier is tier 0 here
    assert len(lowest.draw(8)) == 8 and all(pid.startswith("easy") for pid in lowest.draw(8))


def test_family_spread_draws_the_families_whose_groups_had_a_spread() -> None:
    tiers = {f"{family}{i}": 0 for family in ("mixed", "solved") for i in range(20)}
    families = {pid: pid.rstrip("0123456789") for pid in tiers}
    config = CurriculumConfig(family_spread=True, **NO_SKIP)
    with pytest.raises(ValueError, match="family of every problem"):
        Curriculum(tiers, config)
    from kernelrl.train.config import GRPOConfig, TrainConfigError

    with pytest.raises(TrainConfigError, match="needs the curriculum"):
        GRPOConfig(run_dir="r", curriculum=False, family_spread=True)
    c = Curriculum(tiers, config, seed=1, families=families)
    # no record yet: every problem weighs the same, and a draw repeats none
    first = c.draw(40)
    assert sorted(first) == sorted(tiers)
    for i in range(10):
        c.record(f"mixed{i}", [True, False, True, False])  # a spread: advantages to learn from
        c.record(f"solved{i}", [True] * 4)  # one reward for all: nothing
    drawn = Counter(families[pid] for _ in range(20) for pid in c.draw(10))
    # weights (10+1)/(10+2) against 1/12 a problem: about 92% from "mixed"
    assert drawn["mixed"] > 0.8 * 200, drawn
    plain = Curriculum(tiers, CurriculumConfig(**NO_SKIP), seed=1, families=families)
    for i in range(10):
        plain.record(f"mixed{i}", [True, False, True, False])
        plain.record(f"solved{i}", [True] * 4)
    assert Counter(families[pid] for pid in plain.draw(40)) == {"mixed": 20, "solved": 20}
    assert len(set(c.draw(40))) == 40  # weighted, still a permutation: none repeats before all came up
    # the counts are part of the state; a state saved before them counts the groups the histories keep
    resumed = Curriculum(tiers, config, seed=1, families=families)
    resumed.load_state_dict(c.state_dict())
    assert resumed.draw(10) == c.draw(10)
    older = {k: v for k, v in c.state_dict().items() if k != "family_groups"}
    migrated = Curriculum(tiers, config, seed=1, families=families)
    migrated.load_state_dict(older)
    assert migrated.state_dict()["family_groups"] == {"mixed": [10, 10], "solved": [0, 10]}


def test_state_round_trip_continues_identically(tmp_path) -> None:
    config = CurriculumConfig(window=4, min_attempts=4, skip_solved_after=2, skip_hopeless_after=2,
                              retry_probability=0.5)
    c = Curriculum(TIERS, config, seed=7)
    c.record("a0", [True] * 4)  # promotes to tier 1
    c.record("a0", [True] * 2)  # a0 skipped as solved
    c.record("c1", [False] * 2)
    c.record("c1", [False] * 2)  # c1 set aside
    c.draw(3)
    path = tmp_path / "curriculum.json"
    c.save(path)
    assert json.loads(path.read_text()) == c.state_dict()  # JSON-safe as is
    assert [p.name for p in tmp_path.iterdir()] == ["curriculum.json"]  # no temp file left behind
    resumed = Curriculum.load(path, TIERS, config, seed=7)
    assert resumed.stats() == c.stats() and resumed.state_dict() == c.state_dict()
    # same next draws (RNG state restored), and the same reaction to the same outcomes
    for pid in ("d1", "b0", "d1"):
        assert resumed.draw(4) == c.draw(4)
        resumed.record(pid, [True] * 3)
        c.record(pid, [True] * 3)
        assert resumed.stats() == c.stats()
    # without the state a fresh curriculum with the same seed differs
    assert Curriculum(TIERS, config, seed=7).draw(4) != Curriculum.load(path, TIERS, config, seed=7).draw(4)
    # problems that left the run are dropped from the state; a vanished tier falls back below
    smaller = Curriculum({"a0": 0, "b0": 0}, config)
    smaller.load_state_dict(c.state_dict())
    assert smaller.active_tier == 0 and set(smaller.state_dict()["history"]) <= {"a0", "b0"}


def _repeat_layout(chunks: list[list[int]], mini_repeat_count: int, repeat_count: int) -> list[int]:
    """TRL RepeatSampler.__iter__'s loops over already-drawn chunks."""
    return [index for chunk in chunks for _ in range(repeat_count) for index in chunk
            for _ in range(mini_repeat_count)]


def test_repeat_layout_reference_matches_trl_docstring() -> None:
    # RepeatSampler(["a".."g"], mini_repeat_count=2,
    # batch_size=3, repeat_count=4) example from TRL's docstring
    expected = [4, 4, 3, 3, 0, 0] * 4 + [1, 1, 2, 2, 6, 6] * 4
    assert _repeat_layout([[4, 3, 0], [1, 2, 6]], 2, 4) == expected


def test_sampler_layout_matches_repeat_sampler() -> None:
    config = CurriculumConfig(start_tier=2, **NO_SKIP)  # fixed eligible set: all five problems
    rows = sorted(TIERS)
    sampler = CurriculumSampler(Curriculum(TIERS, config, seed=3), rows, mini_repeat_count=2, batch_size=3,
                                repeat_count=4, num_batches=5)
    assert len(sampler) == 5 * 3 * 2 * 4
    out = list(sampler)
    assert len(out) == len(sampler)
    twin = Curriculum(TIERS, config, seed=3)  # same seed: the chunks the sampler must have drawn
    chunks = [[rows.index(pid) for pid in twin.draw(3)] for _ in range(5)]
    assert all(len(set(chunk)) == 3 for chunk in chunks)
    assert out == _repeat_layout(chunks, 2, 4)


def test_sampler_picks_among_rows_of_a_problem() -> None:
    rows = ["a0", "a0", "a0", "b0"]
    sampler = CurriculumSampler(Curriculum({"a0": 0, "b0": 0}), rows, mini_repeat_count=1, batch_size=2,
                                num_batches=60)
    assert set(sampler) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="without a dataset row"):
        CurriculumSampler(Curriculum({"a0": 0, "b0": 0}), ["a0"], mini_repeat_count=2, batch_size=1)
    with pytest.raises(ValueError, match="does not know"):
        CurriculumSampler(Curriculum({"a0": 0}), ["a0", "zz"], mini_repeat_count=2, batch_size=1)


def test_sampler_promotion_mid_iteration_changes_later_batches() -> None:
    tiers = {"p0": 0, "q1": 1, "r1": 1, "s1": 1}
    rows = ["p0", "q1", "r1", "s1"]
    c = Curriculum(tiers, CurriculumConfig(window=4, min_attempts=4, **NO_SKIP))
    mini, batch, repeat = 2, 4, 2
    per_batch = mini * batch * repeat
    it = iter(CurriculumSampler(c, rows, mini_repeat_count=mini, batch_size=batch, repeat_count=repeat,
                                num_batches=3))
    first = [next(it) for _ in range(per_batch)]
    assert set(first) == {0}  # only tier 0 exists for now
    c.record("p0", [True] * 4)  # the reward function's thread would do this after the step
    second = [next(it) for _ in range(per_batch)]
    assert set(second) == {0, 1, 2, 3}


def test_thread_safety_smoke() -> None:
    # attempts and the recent window change together under the lock, so any
    # snapshot taken while another thread records sees them consistent
    # (len(recent) == attempts: the window is larger than all attempts made)
    ids = [f"p{i}" for i in range(8)]
    # never promotes (a solve rate of 1 is never reached), and the recorder stops long before the window
    # fills: on a fast machine it once made 10**6 attempts and "hard" became eligible
    c = Curriculum({pid: 0 for pid in ids} | {"hard": 1},
                   CurriculumConfig(window=10**6, min_attempts=10, promote_threshold=1.0, skip_solved_after=1,
                                    skip_hopeless_after=1))
    stop = threading.Event()
    errors: list[BaseException] = []

    def recorder() -> None:
        try:
            for i in range(200_000):  # 600,000 attempts at most: below the window
                if stop.is_set():
                    return
                c.record(ids[i % len(ids)], [i % 3 == 0, i % 2 == 0, True])
        except BaseException as exc:  # noqa: BLE001 - reported in the main thread
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the threads as often as possible
    thread = threading.Thread(target=recorder)
    thread.start()
    try:
        sampler = CurriculumSampler(c, ids + ["hard"], mini_repeat_count=2, batch_size=4, num_batches=300)
        seen = 0
        for n, index in enumerate(sampler):
            seen += 1
            assert 0 <= index < len(ids)
            if n % 8 == 0:
                state = c.state_dict()
                assert len(state["recent"]) == state["attempts"]
                c.stats()
        assert seen == len(sampler)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)
    assert not errors
    state = c.state_dict()
    assert len(state["recent"]) == state["attempts"] > 0


def test_a_refused_problem_is_never_drawn_again_and_an_all_refused_tier_hands_over() -> None:
    c = Curriculum(TIERS, CurriculumConfig(retry_probability=1.0, skip_hopeless_after=1))
    c.refuse(["a0", "unknown"])  # ids it does not know are ignored
    assert c.eligible() == ["b0"] and c.stats()["curriculum/refused"] == 1
    c.record("b0", [False])  # hopeless now, retried at every draw: a0 never is
    assert all("a0" not in c.draw(2) for _ in range(50))
    state = c.state_dict()
    c.refuse(["b0"])  # every problem of the highest active tier refused: tier 1 takes over at once
    assert c.active_tier == 1 and c.eligible() == ["c1", "d1"] and c.stats()["curriculum/promotions"] == 1
    resumed = Curriculum(TIERS, CurriculumConfig(retry_probability=1.0, skip_hopeless_after=1))
    resumed.load_state_dict(json.loads(json.dumps(state)))
    assert resumed.stats()["curriculum/refused"] == 1 and "a0" not in resumed.eligible()
