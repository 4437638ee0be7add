"""The built-in suite: size and coverage, metadata, split, a clean audit, and every reference solution correct
on the check and sweep input sets in the CPU interpreter (GPU: bench/suite_gpu.py)."""

from __future__ import annotations

from collections import Counter

import pytest
import verdict_table

from kernelrl import Status, load_suite

SUITE = load_suite()
WITH_SOLUTIONS = [p for p in SUITE if SUITE.solution_path(p)]


def test_suite_size_and_levels():
    levels = Counter(p.level for p in SUITE)
    assert len(SUITE) >= 80
    assert levels[0] >= 15 and levels[1] >= 30 and levels[2] >= 25 and levels[3] >= 10


def test_every_problem_has_metadata_and_input_sets():
    for p in SUITE:
        assert p.tags and p.metadata.get("family") and p.metadata.get("dtype"), p.id
        assert p.difficulty in (1, 2, 3, 4, 5), p.id
        assert "def get_input_sets" in p.source, p.id


def test_split_keeps_families_together():
    sides = {}
    for p in SUITE:
        sides.setdefault(p.family, set()).add(p.split)
    assert all(len(s) == 1 for s in sides.values())
    test = SUITE.split("test")
    assert 0.1 <= len(test) / len(SUITE) <= 0.4
    assert len(SUITE.split("train")) + len(test) == len(SUITE)


def test_reference_solution_coverage():
    levels = Counter(p.level for p in WITH_SOLUTIONS)
    assert len(WITH_SOLUTIONS) >= 30
    assert levels[0] == Counter(p.level for p in SUITE)[0]  # all of level 0
    assert levels[1] >= 10 and levels[2] >= 5


@pytest.fixture(scope="module")
def evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(trials=2, run_timeout_s=120)


def test_builtin_suite_audit_is_clean(evaluator):
    flagged = {p.id: evaluator.audit(p).summary() for p in SUITE if evaluator.audit(p).unwaived}
    assert flagged == {}


# levels 2 and 3 (fused blocks, whole layers) take the
# interpreter longest: in the full suite, not the edit loop
@pytest.mark.parametrize("problem", [pytest.param(p, marks=[pytest.mark.slow] if p.level >= 2 else [])
                                     for p in WITH_SOLUTIONS], ids=[p.id for p in WITH_SOLUTIONS])
def test_reference_solution_is_correct_on_cpu(evaluator, problem):
    if problem.metadata.get("dtype") == "bfloat16":
        pytest.skip("bf16 needs a GPU")
    result = evaluator.evaluate(problem, SUITE.solution_path(problem).read_text())
    assert result.status is Status.CORRECT, f"{result.message}\n{result.feedback}"
    # the committed verdict table's row (tests/verdict_table.py) for this solution
    assert verdict_table.verdict_key(result.status.value, result.message) == \
        verdict_table.load()[f"solutions/{problem.id}"]
    assert set(result.correctness.input_sets) >= {"check"} and len(result.correctness.input_sets) >= 2
