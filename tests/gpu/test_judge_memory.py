"""The judge's memory per evaluation: inputs a draw reproduces are drawn
again when needed instead of held, and a timed call's reference is computed
when its output is compared (GPU memory admission charges what it holds)."""

import pytest
import torch

from kernelrl.sandbox.judge import Judge
from kernelrl.sandbox.tensor_files import write_tensor
from kernelrl.sandbox.tensorio import tensor_meta

DOUBLE = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
          "    def forward(self, x):\n        return x * 2\n"
          "def get_inputs():\n    return [{draw}]\ndef get_init_inputs():\n    return []\n")


def _prepare(judge: Judge, tmp_path, name: str, draw: str, timed_mix: bool = False,
             metadata: str = "") -> dict:
    path = tmp_path / f"{name}.py"
    path.write_text(DOUBLE.format(draw=draw) + metadata)
    (tmp_path / f"in_{name}").mkdir()
    return judge.prepare({"eval_id": name, "problem_path": str(path), "problem_sha256": name * 8,
                          "master_seed": 11, "min_trials": 2, "input_sets": [],
                          "in_dir": str(tmp_path / f"in_{name}"), "timing_variants": 3,
                          "timed_mix": timed_mix})


def test_mixed_timed_calls_need_two_variants_and_a_rotation_keeps_its_count(tmp_path):
    """Each timed call's inputs are a fresh mix of two pristine variants: a
    third would only cost device memory for the evaluation's whole life. A
    rotation (timed_mix off, or a problem that opts out) keeps every variant."""
    judge = Judge("cpu")
    timed_only = {}
    for name, mix, metadata in (("mixed", True, ""), ("rotated", False, ""),
                                ("optout", True, "METADATA = {'timed_inputs': 'rotate'}\n")):
        trials = _prepare(judge, tmp_path, name, "torch.randn(4, 3)", mix, metadata)["trials"]
        timed_only[name] = sum(t.get("timed_only", False) for t in trials)
        judge.release({"eval_id": name})
    # two correctness trials of the one set, which is also the timing set: 2 variants already, 3 need one more
    assert timed_only == {"mixed": 0, "rotated": 1, "optout": 1}


def test_reproducible_inputs_are_drawn_again_and_timed_references_computed_when_compared(tmp_path):
    judge = Judge("cpu")
    prepared = _prepare(judge, tmp_path, "seeded", "torch.randn(16, 8)")
    trials = prepared["trials"]
    assert [t.get("timed_only", False) for t in trials] == [False, False, True]
    state = judge.evals["seeded"]
    assert all(callable(kept) for kept in state["originals"])  # no input held
    assert not callable(state["refs"][0]) and not callable(state["refs"][1]) and callable(state["refs"][2])
    for trial in trials:  # drawn again: the same bytes as the sandbox's draw from the trial's seed
        redrawn = state["inputs"](trial["index"])[0]
        torch.manual_seed(trial["draw"]["seed"])
        assert torch.equal(redrawn, torch.randn(16, 8))

    out = tmp_path / "out"
    out.mkdir()
    torch.manual_seed(trials[2]["draw"]["seed"])
    answer = torch.randn(16, 8) * 2
    request = {"eval_id": "seeded", "trial": 2, "out_dir": str(out), "atol": 1e-5, "rtol": 1e-5,
               "prefix": "timed0", "outputs": [tensor_meta(answer)]}
    write_tensor(out / "timed0_out0.bin", answer)
    assert judge.compare(request)["mismatch"] is None
    assert torch.equal(state["refs"][2][0], answer)  # computed for that comparison, then kept
    write_tensor(out / "timed1_out0.bin", answer + 1)
    assert judge.compare({**request, "prefix": "timed1"})["mismatch"] is not None

    # an input the sandbox says it changed is compared with a fresh draw of the original
    torch.manual_seed(trials[0]["draw"]["seed"])
    x = torch.randn(16, 8)
    write_tensor(out / "trial0_out0.bin", x * 2)
    write_tensor(out / "trial0_in0.bin", x + 1)
    check = {"eval_id": "seeded", "trial": 0, "out_dir": str(out), "atol": 1e-5, "rtol": 1e-5,
             "outputs": [tensor_meta(x)]}
    assert judge.compare(check)["mismatch"] is None
    assert judge.compare({**check, "changed_inputs": [0]})["mismatch"] is not None
    judge.release({"eval_id": "seeded"})


def test_inputs_a_draw_does_not_reproduce_are_held_with_their_references(tmp_path):
    judge = Judge("cpu")
    prepared = _prepare(judge, tmp_path, "unseeded", "torch.randn(16, 8) + __import__('random').random()")
    state = judge.evals["unseeded"]
    assert len(prepared["trials"]) == 3
    assert not any(callable(kept) for kept in (*state["originals"], *state["refs"]))
    judge.release({"eval_id": "unseeded"})


def test_the_audit_reports_one_calls_bytes_on_the_timing_set(tmp_path):
    """What the GPU memory admission charges a problem's first evaluations from (`slots.first_need`)."""
    judge = Judge("cpu")
    path = tmp_path / "double.py"
    path.write_text(DOUBLE.format(draw="torch.randn(16, 8)"))
    report = judge.audit({"problem_path": str(path), "problem_sha256": "a" * 64, "timing": False,
                          "tolerances": {}, "input_sets": []})
    assert report["timing_set_bytes"] == 2 * 16 * 8 * 4  # the input and the output, float32


def test_the_first_wave_charge_counts_the_bench_set_only_when_an_evaluation_holds_it(cpu_evaluator, suite,
                                                                                    monkeypatch):
    """Untimed evaluations without the bench set in their correctness trials hold none of its inputs: their
    problem's first evaluations get the default charge, not the bench set's estimate."""
    from kernelrl import VerdictSettings
    from kernelrl.evaluate.slots import GiB, first_need
    from kernelrl.problems.audit import ProblemAudit

    problem = suite.get("level1/1_row_softmax")
    # the problem's audit as the evaluator caches it, keyed by (sha256, tolerances, k): for this test only
    audit = ProblemAudit(problem.id, problem.sha256, timing_set_bytes=2 * GiB)
    monkeypatch.setattr(cpu_evaluator, "_audits",
                        {(problem.sha256, "[]", VerdictSettings().reference_error_k): audit})
    expected = {(False, True): first_need(2 * GiB, 1), (True, False): first_need(2 * GiB, 2),
                (False, False): None}
    for (timing, bench), need in expected.items():
        verdict = VerdictSettings(timing=timing, bench_correctness=bench)
        assert cpu_evaluator._first_need(problem, verdict) == need, (timing, bench)
        # and the judge's float64 recomputation of such a trial, kept back before its first run
        assert cpu_evaluator._first_float64(problem, verdict) == (4 * GiB if need else None)


@pytest.mark.gpu
def test_the_judge_reports_what_a_float64_recomputation_took(tmp_path):
    """A float64 recomputation holds float64 copies of the inputs and outputs on the device: the judge
    measures what it allocated and reports the most so far when an evaluation is released (the GPU memory
    admission keeps that much back)."""
    judge = Judge("cuda")
    prepared = _prepare(judge, tmp_path, "big", "torch.randn(64, 1 << 20)")  # 256 MiB of fp32 a call
    state = judge.evals["big"]
    errors, why = judge._float64.errors(state, 0)
    assert why is None and errors[0] is not None
    released = judge.release({"eval_id": "big"})
    assert released["float64_bytes"] >= 2 * (256 << 20) * 2, (released, prepared["device_bytes"])
