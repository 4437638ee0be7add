"""The `kernelrl` command line, run for real in a subprocess (evaluations use the CPU Triton interpreter)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def cli(*args: str | Path, timeout: float = 600, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "kernelrl.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


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


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_eval_module_json():
    proc = cli("eval", RELU, EXAMPLES / "relu_triton.py", "--json", "--device", "cpu", "--trials", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)  # stdout holds the JSON and nothing else
    assert result["status"] == "correct"
    assert result["problem_id"] == "level0/1_relu"
    assert result["correctness"]["trials_passed"] == 2


@pytest.mark.slow  # a kernelrl process that starts its own judge
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


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_eval_batch_writes_jsonl(tmp_path):
    suite = tmp_path / "suite"
    (suite / "level0").mkdir(parents=True)
    shutil.copy(RELU, suite / "level0" / "1_relu.py")
    shutil.copy(BUILTIN / "level0" / "2_scale_shift.py", suite / "level0" / "2_scale_shift.py")  # no solution
    solutions = tmp_path / "solutions"
    (solutions / "level0").mkdir(parents=True)
    shutil.copy(EXAMPLES / "relu_abort.py", solutions / "level0" / "1_relu.py")
    out = tmp_path / "results.jsonl"
    proc = cli("eval", "--suite", suite, "--solutions", solutions, "--out", out, "--device", "cpu",
               "--trials", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    result = kernelrl.EvalResult.from_json(lines[0])
    assert result.status is kernelrl.Status.CRASHED
    assert result.problem_id == "level0/1_relu"
    assert "crashed" in proc.stdout
    assert "skipped (no solution): 1" in proc.stdout


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_eval_batch_in_parallel_keeps_every_verdict(tmp_path):
    suite = tmp_path / "suite"
    solutions = tmp_path / "solutions"
    (suite / "level0").mkdir(parents=True)
    (solutions / "level0").mkdir(parents=True)
    for name in ("1_relu", "2_scale_shift", "4_silu"):
        shutil.copy(BUILTIN / "level0" / f"{name}.py", suite / "level0" / f"{name}.py")
    for name in ("1_relu", "2_scale_shift"):
        shutil.copy(BUILTIN / "solutions" / "level0" / f"{name}.py", solutions / "level0" / f"{name}.py")
    (solutions / "level0" / "4_silu.py").write_text("Here is my kernel:\n```python\n"
                                                    "print('no ModelNew')\n```\n")
    out = tmp_path / "results.jsonl"
    proc = cli("eval", "--suite", suite, "--solutions", solutions, "--out", out, "--device", "cpu",
               "--trials", "2", "--jobs", "3", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one format error
    summary = json.loads(proc.stdout)
    assert [r["problem_id"] for r in summary["results"]] == ["level0/1_relu", "level0/2_scale_shift",
                                                             "level0/4_silu"]
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


@pytest.mark.slow  # kernelrl processes
def test_usage_error_exits_2():
    """PROBLEM SOLUTION_FILE, or --solutions DIR: anything else is a usage error that says which it takes."""
    solution = EXAMPLES / "relu_triton.py"
    for args in ([], ["--suite", "builtin"], ["level0/1_relu"],
                 ["level0/1_relu", solution, "--out", "r.jsonl"], ["level0/1_relu", solution, "--jobs", "2"],
                 ["level0/1_relu", solution, "--solutions", EXAMPLES],
                 [RELU, solution, "--suite", "builtin"]):
        proc = cli("eval", *args)
        assert proc.returncode == 2, (args, proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr and "PROBLEM" in proc.stderr


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_demo_verdicts_match_on_cpu():
    proc = cli("demo", "--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6/6 verdicts as expected" in proc.stdout


# -- what a new user hits ------------------------------------------------------------------------------------
NO_GPU_ENV = {"CUDA_VISIBLE_DEVICES": ""}  # no GPU visible, on any machine


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_eval_accepts_a_problem_id(tmp_path):
    proc = cli("eval", "level0/1_relu", EXAMPLES / "relu_triton.py", "--json", "--device", "cpu",
               "--trials", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["problem_id"] == "level0/1_relu"
    suite = tmp_path / "suite"
    (suite / "level0").mkdir(parents=True)
    shutil.copy(RELU, suite / "level0" / "1_relu.py")
    other = cli("eval", "level0/2_scale_shift", EXAMPLES / "relu_triton.py", "--suite", suite,
                "--device", "cpu")
    assert other.returncode == 2  # --suite chooses the suite the id refers to
    assert "level0/2_scale_shift is neither a problem file nor a problem id of suite" in other.stderr


def test_eval_prose_completion_is_a_format_error(tmp_path):
    prose = tmp_path / "answer.md"
    prose.write_text("I would fuse the softmax into one Triton kernel: one program per row, max and sum in\n"
                     "registers. That should beat eager by about 2x.\n")
    proc = cli("eval", RELU, prose, "--json", "--device", "cpu")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "format_error" and result["stage"] == "extract"


def test_agent_and_bench_need_a_policy(tmp_path):
    for args in (["agent", "level0/1_relu"], ["bench", "--split", "all", "--problem", "level0/1_relu"]):
        proc = cli(*args, "--device", "cpu", "--trials", "2", cwd=tmp_path, timeout=120)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Missing option '--policy'" in proc.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # several kernelrl processes, each importing torch to look for a GPU
def test_device_cuda_without_a_gpu_exits_2(tmp_path):
    solutions = tmp_path / "solutions" / "level0"
    solutions.mkdir(parents=True)
    shutil.copy(EXAMPLES / "relu_triton.py", solutions / "1_relu.py")
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"problem_id": "level0/1_relu", "text": "no code"}) + "\n")
    before = _tree(tmp_path)
    for device in ("cuda", "cuda:1"):
        for args in (["eval", "level0/1_relu", EXAMPLES / "relu_triton.py"],
                     ["eval", "--solutions", tmp_path / "solutions", "--out", tmp_path / "r.jsonl"],
                     ["agent", "level0/1_relu", "--policy", f"replay:{script}", "--run-dir", tmp_path / "run",
                      "--kernel-db", tmp_path / "k.sqlite"],
                     ["bench", "--policy", f"replay:{script}", "--problem", "level0/1_relu", "--split", "all",
                      "--run-dir", tmp_path / "run", "--kernel-db", tmp_path / "k.sqlite"],
                     ["demo"], ["audit", "level0/1_relu"]):
            proc = cli(*args, "--device", device, env=NO_GPU_ENV, cwd=tmp_path, timeout=120)
            assert proc.returncode == 2, (args, proc.stdout + proc.stderr)
            assert f"--device {device}: this machine has no usable CUDA GPU" in proc.stderr
    assert _tree(tmp_path) == before


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.slow  # kernelrl processes
def test_rejected_commands_leave_no_files(tmp_path):
    """Usage errors and bad input are found before a run
    directory, kernel database or results file is made."""
    work = tmp_path / "work"
    (work / "solutions").mkdir(parents=True)
    shutil.copy(EXAMPLES / "relu_triton.py", work / "solutions" / "1_relu.py")
    script = work / "script.jsonl"
    script.write_text(json.dumps({"problem_id": "level0/1_relu", "text": "no code"}) + "\n")
    env = {"KERNELRL_KERNEL_DB": str(work / "kernels.sqlite"), "XDG_CACHE_HOME": str(work / "cache"),
           **NO_GPU_ENV}
    before = _tree(work)
    rejected = [
        ["agent", "level0/1_relu", "--policy", "replay:missing.jsonl"],  # the policy cannot start
        ["bench", "--policy", "replay:missing.jsonl", "--problem", "level0/1_relu"],
        ["agent", "level0/1_relu", "--policy", f"replay:{script}", "--judge-verify", "warn"],  # needs --judge
        ["agent", "level0/1_relu", "--policy", f"replay:{script}", "--reward", "nope"],
        ["agent", "level0/1_relu", "--policy", f"replay:{script}", "--device", "cuda"],
        ["bench", "--policy", "solutions", "--problem", "level0/1_relu", "--level", "1"],  # nothing selected
        ["bench", "--policy", f"replay:{script}", "--split", "dev"],
        ["eval", "--solutions", work / "solutions", "--device", "cuda"],
        ["eval", "--solutions", work / "solutions", "--suite", work / "no-suite"],
    ]
    for args in rejected:
        proc = cli(*args, cwd=work, env=env, timeout=120)
        assert proc.returncode == 2, (args, proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr
        assert _tree(work) == before, (args, _tree(work) - before)


@pytest.mark.slow  # a kernelrl process that starts its own judge
def test_audit_selects_problems_by_id_and_prefix():
    proc = cli("audit", "level0/2_scale_shift", "--only", "level0/1_", "--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    audited = [json.loads(line)["problem_id"] for line in proc.stdout.splitlines()]
    assert audited == ["level0/2_scale_shift", "level0/1_relu"]
    nothing = cli("audit", "--only", "level9/", "--device", "cpu")
    assert nothing.returncode == 2 and ("no problem of suite builtin has an id "
                                        "starting with 'level9/'") in nothing.stderr
    for suite in (BUILTIN, "builtin"):  # a suite where a problem goes: the error says how to name it
        directory = cli("audit", suite, "--device", "cpu")
        assert directory.returncode == 2 and f"--suite {suite}" in directory.stderr


def _run_in_process(*args: str, columns: str | None) -> tuple[int, str]:
    """In this process through typer's runner: stdout is a pipe, COLUMNS as given (None: unset)."""
    from typer.testing import CliRunner

    from kernelrl.cli import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": columns})
    return result.exit_code, result.stdout


def test_tables_fit_80_columns_and_keep_full_ids():
    ids = [p.id for p in kernelrl.load_suite()]
    for columns in ("80", None):  # an 80-column terminal; a pipe without COLUMNS (rich assumes 80)
        code, out = _run_in_process("problems", columns=columns)
        assert code == 0, out
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 80
        listed = [line.strip(" │┃").split()[0] for line in lines
                  if line.strip(" │┃").startswith("level")]
        assert listed == ids  # every id whole, one per row
        assert "…" not in out and "not shown at 80 columns: " in out and "sha256" not in lines[1]
        code, out = _run_in_process("rules", columns=columns)
        assert code == 0 and max(len(line) for line in out.splitlines()) <= 80 and "…" not in out
    code, wide = _run_in_process("problems", columns="200")
    assert code == 0 and "sha256" in wide and "not shown" not in wide


def test_result_tables_keep_long_ids_at_80_columns():
    """An id that fits stays on one line; one too long for the columns that must show folds, whole."""
    from io import StringIO

    from rich.console import Console

    from kernelrl.cli import render
    from kernelrl.report.metrics import ProblemSummary

    fits = "level2/17_conv_bn_relu_pool_with_bias_and_scale"
    too_long = "level3/42_fused_multi_head_attention_with_rotary_embeddings_and_causal_mask"
    results = [kernelrl.EvalResult(status=kernelrl.Status.WRONG_OUTPUT, stage=kernelrl.Stage.CORRECTNESS,
                                   problem_id=pid, message="output 0 differs: " + "max abs err 0.5; " * 8)
               for pid in (fits, too_long)]
    summaries = [ProblemSummary(problem_id=pid, level=3, samples=4, attempts=12, correct_samples=1,
                                solved=True, best_status="correct", best_reward=1.25, best_sample=2,
                                best_turn=3, speedup_vs_eager=1.5, speedup_vs_inductor=0.9, tokens=1000,
                                eval_seconds=10.0)
                 for pid in (fits, too_long)]
    tables = [lambda c, n: render.batch_table(c, "s", results[:n]),
              lambda c, n: render.run_problems_table(c, summaries[:n])]
    for table in tables:
        for n in (1, 2):
            sink = StringIO()
            console = Console(file=sink, width=80)
            console.print(table(console, n))
            text = sink.getvalue()
            lines = text.splitlines()
            assert max(len(line) for line in lines) <= 80 and "…" not in text, text
            header = next(i for i, line in enumerate(lines) if line.strip().startswith("──")) - 1
            start = lines[header].index("problem")
            end = start + len(lines[header][start:].split("  ")[0]) + 1
            end = next(j for j in range(end, len(lines[header])) if lines[header][j] != " ")
            first_column = "".join(line[start:end].strip() for line in lines[header + 2:])
            assert first_column.startswith(fits + (too_long if n == 2 else "")), text
            if n == 1:
                assert any(fits in line for line in lines), text


def test_rules_json_lists_every_static_rule_and_runtime_check():
    from kernelrl.candidates.rules import RULES
    from kernelrl.verify.runtime_checks import RUNTIME_CHECKS

    run = cli("rules", "--json")
    assert run.returncode == 0, run.stderr
    listed = json.loads(run.stdout)
    assert [r["id"] for r in listed if r["kind"] == "static"] == [r.id for r in RULES]
    assert {r["id"] for r in listed if r["kind"] == "runtime"} == set(RUNTIME_CHECKS)
    # a check whose policies differ by device
    precision = next(r for r in listed if r["id"] == "rt-low-precision")
    assert (precision["policy"], precision["gpu_policy"]) == ("warn", "off")
