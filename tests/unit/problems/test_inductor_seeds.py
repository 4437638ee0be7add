"""Inductor-derived seeds (kernelrl.problems.generate.inductor): Inductor's Triton codegen on the CPU, the
converted ModelNew judged by the evaluator under the Triton interpreter; extern kernels skipped with a
reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelrl import load_problem
from kernelrl.evaluate.local import open_scorer
from kernelrl.problems.generate import generate, verify_solutions
from kernelrl.problems.generate.inductor import InductorSkip, inductor_solution

PROBLEM = '''import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"family": "planted"}


class Model(nn.Module):
    def __init__(INIT_ARGS):
        super().__init__()
INIT_BODY
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FORWARD


def get_input_sets():
    return {"bench": dict(rows=64, cols=96), "check": dict(rows=8, cols=128),
            "sweep_odd": dict(rows=7, cols=131)}


def get_inputs(rows=64, cols=96):
    return [torch.randn(rows, cols)]


def get_init_inputs(rows=64, cols=96):
    return INIT_INPUTS
'''


def planted(tmp_path: Path, name: str, forward: str, linear: bool = False):
    init = ("self, cols", "        self.linear = nn.Linear(cols, 16)\n", "[cols]") if linear else \
        ("self", "", "[]")
    source = (PROBLEM.replace("INIT_ARGS", init[0]).replace("INIT_BODY\n", init[1])
              .replace("INIT_INPUTS", init[2]).replace("FORWARD", forward))
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return load_problem(path, problem_id=name)


@pytest.mark.parametrize("name, forward", [
    ("chain", "torch.clamp(F.silu(torch.tanh(x) * 1.5 + 0.25), -1.0, 1.0)"),
    ("softmax", "torch.softmax(x * 2.0, dim=-1)"),
    ("layer_norm", "torch.sigmoid(F.layer_norm(x, (x.shape[-1],)))"),
])
def test_seed_is_self_contained_and_correct_on_every_input_set(tmp_path, name, forward):
    problem = planted(tmp_path, name, forward)
    source = inductor_solution(problem, "cpu")
    assert "torch._inductor" not in source and "triton_heuristics" not in source
    assert "triton_helpers" not in source and "libdevice" not in source
    assert "@triton.jit" in source and "class ModelNew(nn.Module)" in source
    with open_scorer(["cpu"]) as scorer:  # check and sweep_odd sets: other shapes than the one compiled
        result = scorer.evaluate(problem, source)
    assert result.status.value == "correct" and not result.findings, (result.message, source)


def test_extern_kernel_is_skipped_with_its_reason(tmp_path):
    problem = planted(tmp_path, "linear", "torch.relu(self.linear(x))", linear=True)
    with pytest.raises(InductorSkip) as skipped:
        inductor_solution(problem, "cpu")
    assert skipped.value.reason == "extern kernel: addmm"


def test_generate_writes_verifies_and_reports_both_kinds(tmp_path):
    out = tmp_path / "gen"
    families = ("gen_map", "gen_rownorm", "gen_gemm_epilogue")
    manifest = generate(6, 3, out, families=families, solutions=True, inductor_solutions="cpu")
    skipped = manifest["inductor_skipped"]
    gemm = [p for p in manifest["problems"] if p["family"] == "gen_gemm_epilogue"]
    assert gemm and {s["id"] for s in skipped} == {p["id"] for p in gemm}
    assert all(s["reason"] == "extern kernel: addmm" for s in skipped), skipped
    seeds = sorted((out / "solutions").rglob("*_inductor.py"))
    assert len(seeds) == manifest["kept"] - len(gemm)
    problems = {s: out / s.relative_to(out / "solutions").parent / s.name.replace("_inductor", "")
                for s in seeds}
    cpu = [s for s in seeds if not load_problem(problems[s]).metadata.get("gpu_only")]
    broken = cpu[0]  # a planted wrong seed: its output off by one
    planted_text = broken.read_text().replace("t[0].device)[0]\n", "t[0].device)[0] + 1\n")
    assert planted_text != broken.read_text()
    broken.write_text(planted_text)
    with open_scorer(["cpu"]) as scorer:
        report = verify_solutions(out, scorer, device_is_gpu=False)
    inductor = report["kinds"]["inductor"]
    failed = [(f["kind"], f["status"]) for f in report["failed"]]
    assert failed == [("inductor", "wrong_output")], report["failed"]
    assert not broken.exists() and inductor["verified"] == len(cpu) and inductor["kept"] == len(cpu) - 1
    assert inductor["skipped_per_family"] == {"gen_gemm_epilogue": {"extern kernel: addmm": len(gemm)}}
    assert report["kinds"]["template"]["kept"] == report["kinds"]["template"]["verified"] > 0
    assert json.loads((out / "solutions.json").read_text()) == report


@pytest.mark.slow
def test_generated_sample_bench_smoke_on_cpu(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    # the script's plumbing (the seeds themselves are tested above): template solutions only, three problems
    command = [sys.executable, str(root / "bench" / "generated_sample.py"), "--n", "3", "--seed", "7",
               "--out", str(tmp_path), "--device", "cpu", "--no-inductor"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "sample.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["eager_ms"] is None and set(r["solutions"]) == {"template", "inductor"}
                                  for r in rows)
    assert all(r["solutions"]["inductor"] is None for r in rows)
    assert "timing: null" in done.stdout and "template kept" in done.stdout
    # resumable: a run stopped after one solution was timed goes on with the other only, the set as it was
    timed = tmp_path / "timed.jsonl"
    lines = timed.read_text().splitlines()
    assert len(lines) >= 2 and {json.loads(line)["kind"] for line in lines} == {"template"}
    timed.write_text(lines[0] + "\n")
    generated = (tmp_path / "gen" / "manifest.json").stat().st_mtime_ns
    again = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    now = timed.read_text().splitlines()
    assert now[0] == lines[0] and sorted(now[1:]) == sorted(lines[1:])  # only the others, each once
    assert (tmp_path / "gen" / "manifest.json").stat().st_mtime_ns == generated  # not generated again
    assert [json.loads(line) for line in (tmp_path / "sample.jsonl").read_text().splitlines()] == rows
