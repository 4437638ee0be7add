"""The `kernelrl` command line, run for real in a subprocess (evaluations use the CPU Triton interpreter)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kernelrl

PACKAGE = Path(kernelrl.__file__).parent
BUILTIN = PACKAGE / "problems" / "suites" / "builtin"
RELU = BUILTIN / "level0" / "1_relu.py"
EXAMPLES = PACKAGE / "examples"
BUILTIN_IDS = [
    "level0/1_relu",
    "level0/2_scale_shift",
    "level1/1_row_softmax",
    "level1/2_matmul_square",
    "level2/1_linear_relu",
]


def cli(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "kernelrl.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_problems_lists_builtin_suite():
    table = cli("problems")
    assert table.returncode == 0, table.stderr
    for problem_id in BUILTIN_IDS:
        assert problem_id in table.stdout
    listed = cli("problems", "builtin", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    ids = [row["id"] for row in rows]
    assert set(BUILTIN_IDS) <= set(ids) and ids == [p.id for p in kernelrl.load_suite()]
    assert rows[0]["difficulty"] == 1 and len(rows[0]["sha256"]) == 64


def test_eval_module_json():
    proc = cli("eval", RELU, EXAMPLES / "relu_triton.py", "--json", "--device", "cpu", "--trials", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)  # stdout holds the JSON and nothing else
    assert result["status"] == "correct"
    assert result["problem_id"] == "level0/1_relu"
    assert result["correctness"]["trials_passed"] == 2


def test_eval_completion_json(tmp_path):
    code = (EXAMPLES / "relu_triton.py").read_text()
    completion = tmp_path / "completion.md"
    completion.write_text("Here is a Triton ReLU; one program per block.\n\n```python\n" + code
                          + "```\n\nIt masks the tail, so any size works.\n")
    proc = cli("eval", RELU, completion, "--json", "--device", "cpu", "--trials", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "correct"
    assert result["candidate_sha256"]


def test_eval_batch_writes_jsonl(tmp_path):
    suite = tmp_path / "suite"
    (suite / "level0").mkdir(parents=True)
    shutil.copy(RELU, suite / "level0" / "1_relu.py")
    shutil.copy(BUILTIN / "level0" / "2_scale_shift.py", suite / "level0" / "2_scale_shift.py")  # no solution
    solutions = tmp_path / "solutions"
    (solutions / "level0").mkdir(parents=True)
    shutil.copy(EXAMPLES / "relu_abort.py", solutions / "level0" / "1_relu.py")
    out = tmp_path / "results.jsonl"
    proc = cli("eval", "--suite", suite, "--solutions", solutions, "--out", out, "--device", "cpu", "--trials", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    result = kernelrl.EvalResult.from_json(lines[0])
    assert result.status is kernelrl.Status.CRASHED
    assert result.problem_id == "level0/1_relu"
    assert "crashed" in proc.stdout
    assert "skipped (no solution): 1" in proc.stdout


def test_eval_batch_in_parallel_keeps_every_verdict(tmp_path):
    suite = tmp_path / "suite"
    solutions = tmp_path / "solutions"
    (suite / "level0").mkdir(parents=True)
    (solutions / "level0").mkdir(parents=True)
    for name in ("1_relu", "2_scale_shift", "4_silu"):
        shutil.copy(BUILTIN / "level0" / f"{name}.py", suite / "level0" / f"{name}.py")
    for name in ("1_relu", "2_scale_shift"):
        shutil.copy(BUILTIN / "solutions" / "level0" / f"{name}.py", solutions / "level0" / f"{name}.py")
    (solutions / "level0" / "4_silu.py").write_text("Here is my kernel:\n```python\nprint('no ModelNew')\n```\n")
    out = tmp_path / "results.jsonl"
    proc = cli("eval", "--suite", suite, "--solutions", solutions, "--out", out, "--device", "cpu", "--trials", "2",
               "--jobs", "3", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one format error
    summary = json.loads(proc.stdout)
    assert [r["problem_id"] for r in summary["results"]] == ["level0/1_relu", "level0/2_scale_shift", "level0/4_silu"]
    assert [r["status"] for r in summary["results"]] == ["correct", "correct", "format_error"]
    assert len(out.read_text().splitlines()) == 3


def test_bad_input_exits_2_without_traceback(tmp_path):
    missing = cli("eval", tmp_path / "no_such_problem.py", EXAMPLES / "relu_triton.py", "--device", "cpu")
    assert missing.returncode == 2
    assert "Traceback" not in missing.stdout + missing.stderr
    assert "no_such_problem.py" in missing.stderr
    device = cli("eval", RELU, EXAMPLES / "relu_triton.py", "--device", "tpu")
    assert device.returncode == 2
    assert "Traceback" not in device.stdout + device.stderr
    assert "device" in device.stderr


def test_usage_error_exits_2():
    neither = cli("eval")
    assert neither.returncode == 2
    assert "PROBLEM_FILE" in neither.stderr
    half = cli("eval", "--suite", "builtin")
    assert half.returncode == 2
    assert "Traceback" not in neither.stderr + half.stderr


def test_demo_verdicts_match_on_cpu():
    proc = cli("demo", "--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6/6 verdicts as expected" in proc.stdout
