"""bench/heldout_breakdown.py's comparison of two models' held-out verdicts: the problems gained and lost."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "heldout_breakdown.py"
spec = importlib.util.spec_from_file_location("heldout_breakdown", SCRIPT)
breakdown = importlib.util.module_from_spec(spec)
spec.loader.exec_module(breakdown)


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_gained_and_lost_problems_against_another_models_verdicts(tmp_path):
    # this model: a held-out directory with two samples of each problem (solved if either is correct)
    heldout = tmp_path / "grpo-sampled-step16"
    heldout.mkdir()
    mine = {"a": ["correct", "wrong_output"], "b": ["wrong_output", "runtime_error"],
            "c": ["correct", "correct"]}
    write_lines(heldout / "trajectories.jsonl",
                [{"problem_id": p, "family": "f", "level": 1, "result": {"status": s}}
                 for p, statuses in mine.items() for s in statuses])
    # the other model: a --verdicts file, one line per problem
    other = write_lines(tmp_path / "sft.jsonl", [{"problem_id": "a", "status": "wrong_output"},
                                                 {"problem_id": "b", "status": "correct"},
                                                 {"problem_id": "c", "status": "correct"}])
    assert breakdown.compare(heldout, other) == {"other": str(other), "solved": 2, "other_solved": 2,
                                                 "gained": ["a"], "lost": ["b"]}
    out = tmp_path / "verdicts.jsonl"
    breakdown.write_verdicts(heldout, out)
    assert breakdown.solved_problems(out) == {"a": True, "b": False, "c": True}
    fewer = write_lines(tmp_path / "fewer.jsonl", [{"problem_id": "a", "status": "correct"}])
    with pytest.raises(SystemExit, match="other problems"):
        breakdown.compare(heldout, fewer)
