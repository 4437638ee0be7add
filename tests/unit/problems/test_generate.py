"""kernelrl.problems.generate: seeded, gated problem generation (each gate rejects a planted bad problem)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelrl import load_problem, load_suite
from kernelrl.evaluate.local import open_scorer
from kernelrl.problems.generate import FAMILIES, GateRejected, gate, generate, heldout_signatures, new_seen

HEADER = '''import torch
import torch.nn as nn

METADATA = {"family": "planted"}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FORWARD


def get_input_sets():
    return {"bench": dict(rows=64, cols=64), "check": dict(rows=8, cols=32),
            "sweep_odd": dict(rows=3, cols=7)}


def get_inputs(rows=64, cols=64):
    return [torch.randn(rows, cols, dtype=DTYPE)]


def get_init_inputs():
    return []
'''


def planted(tmp_path: Path, name: str, forward: str, dtype: str = "torch.float32"):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER.replace("FORWARD", forward).replace("DTYPE", dtype))
    return load_problem(path, problem_id=name)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_files_and_every_family(tmp_path):
    first = generate(18, 5, tmp_path / "a")
    generate(18, 5, tmp_path / "b")
    other = generate(18, 6, tmp_path / "c")
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a") != files(tmp_path / "c") and other["kept"] == 18
    assert first["kept"] == 18 and all(first["families"][f] >= 1 for f in FAMILIES), first["families"]
    suite = load_suite(tmp_path / "a")  # a suite like any other: levels by op count
    assert len(suite) == 18 and {p.level for p in suite} <= set(range(1, 8))
    for problem in suite:
        meta = problem.metadata
        assert meta["family"] in FAMILIES and meta["difficulty"] == len(meta["ops"]) == problem.level
        assert meta["split"] in ("train", "test") and meta["provenance"] == {
            "generator": "kernelrl-gen/3", "seed": 5, "index": meta["provenance"]["index"]}
        assert meta.get("gpu_only", False) == (meta["dtype"] == "bfloat16")
    rows = [json.loads(line) for line in (tmp_path / "a" / "problems.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [p["id"] for p in first["problems"]] and all(r["source"] for r in rows)
    assert len({r["near_duplicate"] for r in rows}) == len({r["fingerprint"] for r in rows}) == 18


def test_half_precision_bench_sets_hold_float32_bytes():
    """fp16/bf16 bench sets take twice the elements along the first dimension (the same bytes as float32's, so
    as long to read); check and sweep sets are the same as float32's."""
    import random

    from kernelrl.problems.generate.families import SAMPLERS

    for family in FAMILIES:
        for seed in range(4):
            single = SAMPLERS[family](random.Random(seed), family, "float32").sets
            for dtype in ("float16", "bfloat16"):
                half = SAMPLERS[family](random.Random(seed), family, dtype).sets
                first, *rest = single["bench"]
                assert half["bench"] == (2 * first, *rest), (family, dtype)
                assert {k: v for k, v in half.items() if k != "bench"} == \
                    {k: v for k, v in single.items() if k != "bench"}


def test_reference_gates_reject_planted_problems(tmp_path):
    heldout, seen = heldout_signatures([]), new_seen()
    # cancellation that float16 cannot hold (the float64 answer is 1); a shape only some sets have
    for forward, dtype, reason in (("torch.exp(x * 1000.0)", "torch.float32", "non_finite"),
                                   ("(x * 4096 + 1) - x * 4096", "torch.float16", "ill_conditioned"),
                                   ("x.view(4, -1)", "torch.float32", "reference_raises")):
        with pytest.raises(GateRejected) as raised:
            gate(planted(tmp_path, reason, forward, dtype), heldout, seen)
        assert raised.value.reason == reason, (forward, raised.value)
    kept = planted(tmp_path, "kept", "torch.tanh(x) * 2.0")
    assert gate(kept, heldout, seen).ops == ("tanh", "mul")


def test_duplicates_and_heldout_overlap_are_rejected(tmp_path):
    from kernelrl.problems.generate.gates import remember

    heldout = heldout_signatures([load_suite().get("level1/28_cumsum")])
    seen = new_seen()
    original = planted(tmp_path, "original", "torch.sigmoid(x) + 1.0")
    remember(seen, gate(original, heldout, seen), original.id)
    # the same program with another constant; the same outputs written another way (a renamed duplicate)
    for name, forward in (("other_constant", "torch.sigmoid(x) + 2.0"),
                          ("renamed", "1.0 + torch.special.expit(x)")):
        with pytest.raises(GateRejected) as raised:
            gate(planted(tmp_path, name, forward), heldout, seen)
        assert raised.value.reason == "duplicate" and "original" in raised.value.detail
    copy = tmp_path / "copied.py"  # a copy of a held-out test problem under another name
    copy.write_text(load_suite().get("level1/28_cumsum").source)
    with pytest.raises(GateRejected) as raised:
        gate(load_problem(copy, problem_id="copied"), heldout, seen)
    assert raised.value.reason == "overlaps_heldout" and "level1/28_cumsum" in raised.value.detail
    with pytest.raises(GateRejected):  # the same ops over another dimension: still the held-out op sequence
        gate(planted(tmp_path, "scan", "torch.cumsum(x, dim=0)"), heldout, seen)


def test_audit_gate_rejects_degenerate_problems(tmp_path):
    heldout, seen = heldout_signatures([]), new_seen()
    with open_scorer(["cpu"]) as scorer:
        for name, forward, flag in (("zeros", "torch.relu(-torch.abs(x))", "zeros_pass"),
                                    ("independent", "torch.ones_like(x) * 3.0", "input_independent")):
            with pytest.raises(GateRejected) as raised:
                gate(planted(tmp_path, name, forward), heldout, seen, auditor=scorer)
            assert raised.value.reason == "audit" and flag in raised.value.detail, raised.value.detail


def test_losses_vary_beyond_the_tolerance_on_their_bench_sets(tmp_path, cpu_evaluator):
    """A loss's bench set, audited as a GPU evaluation checks it: a mean over a whole bench-sized input (tens
    of millions of terms) is the same for every draw within the tolerance, so a constant passes it (all 9
    such held-out problems of a generated set were refused on a GPU); generated losses are one per short
    row."""
    from kernelrl.evaluate import VerdictSettings

    bench_only = VerdictSettings(input_sets=("bench",))
    whole_mean = planted(tmp_path, "whole_mean", "F.huber_loss(torch.sigmoid(x), torch.zeros_like(x))").path
    whole_mean.write_text(whole_mean.read_text().replace("import torch.nn as nn", "import torch.nn as nn\n"
                                                         "import torch.nn.functional as F")
                          .replace('"bench": dict(rows=64, cols=64)', '"bench": dict(rows=4096, cols=8192)'))
    flags = {f.flag for f in cpu_evaluator.audit(load_problem(whole_mean), verdict=bench_only).refusing}
    assert "constant_pass" in flags, flags
    generate(3, seed=4, out=tmp_path / "gen", families=["gen_loss"])
    losses = list(load_suite(tmp_path / "gen"))
    assert len(losses) == 3
    for problem in losses:
        audit = cpu_evaluator.audit(problem, verdict=bench_only)
        assert not audit.refusing, (problem.id, audit.summary())


def test_row_norms_are_checked_on_rows_as_wide_as_the_bench_sets(tmp_path):
    """A row norm's values scale with the row's width: log_softmax over 16,384 columns then softplus and
    silu leaves every value near 3e-5, below float16's tolerance, where 128 columns do not. Generated row
    norms carry a few rows at the bench width (`sweep_wide`), so the CPU's audit gate sees what only a GPU's
    bench set showed."""
    import runpy

    generate(3, seed=2, out=tmp_path / "gen", families=["gen_rownorm"])
    for problem in load_suite(tmp_path / "gen"):
        sets = runpy.run_path(str(problem.path))["get_input_sets"]()
        assert sets["sweep_wide"] == {"rows": 4, "cols": sets["bench"]["cols"]}, (problem.id, sets)
    narrow = planted(tmp_path, "narrow", "F.silu(F.softplus(torch.log_softmax(x, dim=-1)))", "torch.float16")
    text = narrow.path.read_text().replace("import torch.nn as nn", "import torch.nn as nn\n"
                                           "import torch.nn.functional as F")
    narrow.path.write_text(text)
    wide = tmp_path / "wide.py"
    wide.write_text(text.replace('"sweep_odd": dict(rows=3, cols=7)',
                                 '"sweep_odd": dict(rows=3, cols=7), "sweep_wide": dict(rows=4, cols=16384)'))
    heldout = heldout_signatures([])
    with open_scorer(["cpu"]) as scorer:
        gate(load_problem(narrow.path, problem_id="narrow"), heldout, new_seen(), auditor=scorer)
        with pytest.raises(GateRejected) as raised:
            gate(load_problem(wide, problem_id="wide"), heldout, new_seen(), auditor=scorer)
    assert raised.value.reason == "audit" and "zeros_pass on sweep_wide" in raised.value.detail


@pytest.mark.slow
def test_gen_command_writes_a_manifest_with_rejects(tmp_path):
    out = tmp_path / "gen"
    done = subprocess.run([sys.executable, "-m", "kernelrl.cli", "gen", "--n", "40", "--seed", "7", "--out",
                           str(out), "--device", "cpu"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kept"] == 40 and "audit" in manifest["gates"]
    assert manifest["rejected"] and all(r["reason"] and r["detail"] for r in manifest["rejected"])
    reasons = sum(manifest["rejects_by_reason"].values())
    assert reasons == len(manifest["rejected"]) == manifest["candidates"] - 40
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    refused = subprocess.run([sys.executable, "-m", "kernelrl.cli", "gen", "--n", "1", "--out", str(taken),
                              "--no-audit"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and (taken / "notes.txt").read_text() == "mine"


def test_template_solutions_are_correct_for_every_family_and_failures_are_dropped(tmp_path):
    from kernelrl.problems.generate.solutions import TEMPLATE_FAMILIES, verify_solutions

    out = tmp_path / "gen"
    with open_scorer(["cpu"]) as scorer:  # the audit gate on: a problem it refuses has no verdict to give
        generate(24, 21, out, solutions=True, auditor=scorer)
        suite = load_suite(out)
        assert all((suite.solution_path(p) is not None) == (p.family in TEMPLATE_FAMILIES) for p in suite)
        first = next(p for p in suite if suite.solution_path(p) and not p.metadata.get("gpu_only"))
        broken = suite.solution_path(first)  # a planted wrong solution: its output off by one
        planted = broken.read_text().replace("        return out\n", "        return out + 1\n")
        assert planted != broken.read_text()
        broken.write_text(planted)
        report = verify_solutions(out, scorer, device_is_gpu=False)
    templated = [p for p in suite if p.family in TEMPLATE_FAMILIES]
    gpu_only = {p.id for p in templated if p.metadata.get("gpu_only")}
    assert sorted(report["not_verified_gpu_only"]) == sorted(gpu_only)
    # out of solutions/ (no SFT row takes them), kept aside for a GPU to verify
    assert gpu_only and all(suite.solution_path(suite.get(pid)) is None for pid in gpu_only)
    assert all((out / "solutions_unverified" / f"{pid}.py").is_file() for pid in gpu_only)
    failed = [(f["id"], f["status"]) for f in report["failed"]]
    assert failed == [(first.id, "wrong_output")], report["failed"]
    assert not broken.exists()
    assert report["kept"] == report["verified"] - 1 == len(templated) - len(gpu_only) - 1
    verified_families = {p.family for p in templated if p.id not in gpu_only and p.id != first.id}
    assert verified_families == set(TEMPLATE_FAMILIES) and set(report["kept_per_family"]) == verified_families


def test_held_out_in_family_problems_guard_only_themselves(tmp_path):
    from kernelrl.train.data import TrainDataError, check_no_test_leak, problem_row

    generate(40, 5, tmp_path / "gen")
    suite = load_suite(tmp_path / "gen")
    test, train = suite.split("test"), suite.split("train")
    assert test and all(p.metadata["heldout"] == "in_family" for p in test)
    assert {p.family for p in test} & {p.family for p in train}  # the same families on both sides
    check_no_test_leak([problem_row(p, []) for p in train], suite)
    with pytest.raises(TrainDataError, match="leak the test split"):
        check_no_test_leak([problem_row(test[0], [])], suite)


def test_sft_and_grpo_rows_from_a_generated_suite(tmp_path):
    """The training data builders take a generated suite: SFT rows from its kept template solutions and GRPO
    prompts of its train split, never a held-out problem."""
    from kernelrl.prompts import Prompts
    from kernelrl.train.data import prompt_rows, select_problems, sft_rows

    generate(30, 5, tmp_path / "gen", solutions=True)
    suite = load_suite(tmp_path / "gen")
    held_out = {p.id for p in suite.split("test")}
    rows = sft_rows(["solutions"], suite, Prompts())
    expected = {p.id for p in suite.split("train") if suite.solution_path(p)}
    assert held_out and {r["problem_id"] for r in rows} == expected
    assert all(r["completion"][0]["content"].count("class ModelNew") == 1 for r in rows)
    prompts = prompt_rows(select_problems(suite), Prompts(), suite)
    assert {r["problem_id"] for r in prompts} == {p.id for p in suite.split("train")}


def test_export_as_a_dataset_with_a_card(tmp_path):
    datasets = pytest.importorskip("datasets")
    from kernelrl.problems.generate.export import FIELDS, export_dataset

    out = tmp_path / "gen"
    manifest = generate(40, 5, out, solutions=True)
    dest = export_dataset(out)
    loaded = datasets.load_dataset("parquet", data_dir=str(dest / "data"))
    assert sorted(loaded) == ["test", "train"] and set(loaded["train"].column_names) == set(FIELDS)
    assert len(loaded["train"]) + len(loaded["test"]) == manifest["kept"] == 40
    row = loaded["train"][0]
    assert row["source"].startswith("import torch") and "class ModelNew" in row["solution"]
    card = (dest / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0")
    assert "kernelrl-gen/3" in card and "`fingerprint`" in card


def test_the_prompts_worked_example_is_in_no_suite_and_correct():
    from kernelrl.problems.suite import PROMPT_EXAMPLE_PROBLEM
    from kernelrl.prompts import BACKENDS, EXAMPLES_DIR, Prompts

    example = load_problem(PROMPT_EXAMPLE_PROBLEM, problem_id="prompt_example")
    assert all(p.sha256 != example.sha256 and p.family != example.family for p in load_suite())
    prompt = Prompts().initial(load_suite().get("level0/1_relu"))[1]["content"]
    assert example.source.strip() in prompt and "torch.relu" not in prompt.split("## Worked example")[1]
    # the Triton answer shown is correct (the CUDA one: tests/gpu/test_gpu.py)
    with open_scorer(["cpu"]) as scorer:
        result = scorer.evaluate(example, (EXAMPLES_DIR / BACKENDS["triton"][1]).read_text())
    assert result.status.value == "correct" and not result.findings, result.message


def test_generate_never_empties_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match="did not write"):
        generate(1, 0, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep"
    out = tmp_path / "gen"
    generate(2, 0, out)
    generate(3, 0, out)  # an earlier set is replaced
    assert len(load_suite(out)) == 3


KERNELBENCH_RELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 393216  # 6.4 GB of fp32 input: traced on fake tensors, never allocated


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''


def test_decontamination_against_a_kernelbench_checkout(tmp_path):
    """A KernelBench-layout fixture (fixed, GB-sized inputs, no check set): its problem gets an op signature
    from fake tensors, the manifest says so, and a generated problem with its ops is rejected."""
    level = tmp_path / "KernelBench" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "19_ReLU.py").write_text(KERNELBENCH_RELU)
    broken = KERNELBENCH_RELU.replace("return torch.relu(x)", "return undefined(x)")
    (level / "99_Broken.py").write_text(broken)
    kernelbench = list(load_suite(tmp_path / "KernelBench"))
    heldout = heldout_signatures(kernelbench)
    assert heldout["signature_only"].keys() == {"level1/19_ReLU"}
    assert heldout["ops"] == {"relu": "level1/19_ReLU"}
    assert set(heldout["unread"]) == {"level1/99_Broken"}
    with pytest.raises(GateRejected, match="level1/19_ReLU") as raised:
        gate(planted(tmp_path, "mine", "torch.relu(x)"), heldout, new_seen())
    assert raised.value.reason == "overlaps_heldout"
    command = [sys.executable, "-m", "kernelrl.cli", "gen", "--n", "3", "--out", str(tmp_path / "g"),
               "--no-audit", "--decontaminate", str(tmp_path / "KernelBench")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["decontaminated_by_signature_only"] == ["level1/19_ReLU"]
    assert "level1/99_Broken" in manifest["heldout_unread"]
    assert "level1/19_ReLU" in manifest["decontaminated_against"]
