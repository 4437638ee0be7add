"""The judge's trial plan and shared buffers (kernelrl.sandbox.judge)."""

from __future__ import annotations

import pytest
import torch

from kernelrl.sandbox.tensor_files import write_tensor


def test_judge_lets_the_sandbox_redraw_reproducible_inputs_and_sends_files_otherwise(tmp_path):
    from kernelrl.problems.input_sets import input_probe
    from kernelrl.sandbox.judge import Judge

    judge = Judge("cpu")
    for name, draw, redrawn in (("seeded", "torch.randn(16, 8)", True),
                                ("unseeded", "torch.randn(16, 8) + random.random()", False)):
        path = tmp_path / f"{name}.py"
        path.write_text("import random\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                        "    def forward(self, x):\n        return x * 2\n"
                        f"def get_inputs():\n    return [{draw}]\ndef get_init_inputs():\n    return []\n")
        in_dir = tmp_path / f"in_{name}"
        in_dir.mkdir()
        prepared = judge.prepare({"eval_id": name, "problem_path": str(path), "problem_sha256": name * 4,
                                  "master_seed": 7, "min_trials": 3, "input_sets": [], "in_dir": str(in_dir),
                                  "timing_variants": 0})
        files = sorted(p.name for p in in_dir.iterdir())
        if redrawn:  # no files: each trial carries its seed and a probe of the judge's draw
            assert files == [] and all("draw" in t for t in prepared["trials"])
            trial = prepared["trials"][0]
            torch.manual_seed(trial["draw"]["seed"])
            assert input_probe(torch, [torch.randn(16, 8)]) == trial["draw"]["probe"]
        else:
            assert files == ["trial0_in0.bin", "trial1_in0.bin", "trial2_in0.bin"]
            assert not any("draw" in t for t in prepared["trials"])


def test_judge_refuses_shared_buffer_claims_it_never_offered(tmp_path):
    """A forged report (candidate code can write to the protocol pipe) that says an output sits in a shared
    buffer: none was offered (CPU: no CUDA IPC), and timed calls never use one, so the judge refuses rather
    than comparing a buffer that holds an earlier, honest answer."""
    from kernelrl.sandbox.judge import Judge
    from kernelrl.sandbox.tensorio import tensor_meta

    judge = Judge("cpu")
    path = tmp_path / "double.py"
    path.write_text("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return x * 2\n"
                    "def get_inputs():\n    return [torch.randn(16, 8)]\n"
                    "def get_init_inputs():\n    return []\n")
    (tmp_path / "in").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    prepared = judge.prepare({"eval_id": "e", "problem_path": str(path), "problem_sha256": "d" * 64,
                              "master_seed": 7, "min_trials": 1, "input_sets": [],
                              "in_dir": str(tmp_path / "in"), "timing_variants": 0})
    assert "ipc" not in prepared["trials"][0]  # offers exist on a GPU only
    torch.manual_seed(prepared["trials"][0]["draw"]["seed"])
    answer = torch.randn(16, 8) * 2
    meta = tensor_meta(answer)
    request = {"eval_id": "e", "trial": 0, "out_dir": str(out), "atol": 1e-5, "rtol": 1e-5}
    with pytest.raises(ValueError, match="never offered"):
        judge.compare({**request, "outputs": [{**meta, "ipc": True}]})
    write_tensor(out / "timed0_out0.bin", answer)
    with pytest.raises(ValueError, match="timed call"):
        judge.compare({**request, "prefix": "timed0", "outputs": [{**meta, "ipc": True}]})
    assert judge.compare({**request, "prefix": "timed0", "outputs": [meta]})["mismatch"] is None
    judge.release({"eval_id": "e"})


def test_the_judge_keeps_reference_models_within_a_budget_and_frees_their_float64_copies(tmp_path):
    """A training run meets thousands of problems: the judge keeps the least recently used reference models
    only within its budget (the newest always), an evicted problem's next evaluation gets the same weights
    (seed 42), and a dropped model's float64 copy goes with it (a copy keyed by id() could later be taken for
    a new model's at the same address)."""
    import gc

    from kernelrl.sandbox.judge import Judge
    from kernelrl.sandbox.reference_models import ReferenceModels, model_bytes

    judge = Judge("cpu")
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(32, {n})\n"
              "    def forward(self, x):\n        return self.fc(x)\n"
              "def get_inputs():\n    return [torch.randn(4, 32)]\ndef get_init_inputs():\n    return []\n")
    one = 32 * 32 * 4 + 32 * 4  # the bytes of a 32-output problem's weights
    judge.models = ReferenceModels(budget_bytes=2 * one)
    weights = {}
    for k in range(4):
        path = tmp_path / f"p{k}.py"
        path.write_text(source.format(n=32))
        (tmp_path / f"in{k}").mkdir()
        judge.prepare({"eval_id": f"e{k}", "problem_path": str(path), "problem_sha256": f"{k}" * 64,
                       "master_seed": 7, "min_trials": 1, "input_sets": [],
                       "in_dir": str(tmp_path / f"in{k}"), "timing_variants": 0})
        model = judge.evals[f"e{k}"]["calls"][0][0]
        assert model_bytes(model) == one
        judge._float64.errors(judge.evals[f"e{k}"], 0)  # its float64 copy, as a value mismatch would make
        weights[k] = model.fc.weight.detach().clone()
        judge.release({"eval_id": f"e{k}"})
        del model
        assert len(judge.models) <= 2 and judge.models.held_bytes <= 2 * one
    gc.collect()
    assert judge.models.evicted == 2 and ("0" * 64, "[]") not in judge.models
    assert len(judge._float64._models) == 2  # the evicted models' copies are gone with them
    # the first problem again: built anew, the same weights
    again = judge._model("0" * 64, judge._module(str(tmp_path / "p0.py"), "0" * 64)[0], {})
    assert torch.equal(again.fc.weight, weights[0])
