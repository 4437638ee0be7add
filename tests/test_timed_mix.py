"""Fresh inputs for every timed call (kernelrl.sandbox.timed_mix): the judge's rebuild of a checked call's inputs
is the sandbox's mix, a device-side memo that pays under the rotation through pristine variants is rejected, and
reference solutions stay correct when timed on fresh inputs (CPU mode, host clock)."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest
import torch

from kernelrl import EvalConfig, Evaluator, Status, load_suite
from kernelrl.sandbox.timed_mix import BLOCK, Mixer, mixed_reference, mixes

MEMO = corpus.case("exploits_runtime/r07_memo_by_sampled_key.py")
SOLUTIONS = Path(__file__).parents[1] / "src/kernelrl/problems/suites/builtin/solutions"


def _variants(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(33, 17, generator=g), torch.randint(0, 50, (1000,), generator=g),
            torch.rand(7, 9, generator=g) < 0.5, torch.randn(64, generator=g).half(), torch.randn((), generator=g)]


def test_the_judges_rebuild_is_the_sandboxs_mix():
    a, b = _variants(1), _variants(2)
    buffers = [t.clone() for t in a]
    Mixer(torch).into(buffers, a, b, seed=12345)  # the sandbox stub, into its buffers
    rebuilt = Mixer(torch).mixed([t.clone() for t in a], [t.clone() for t in b], 12345)  # the judge, another Mixer
    for k, (buf, again, x, y) in enumerate(zip(buffers, rebuilt, a, b, strict=True)):
        assert buf.dtype == x.dtype and buf.shape == x.shape
        assert torch.equal(buf, again), k
        assert bool(((buf == x) | (buf == y)).all()), k  # every element from one of the two variants
        if buf.numel() > 100 and buf.dtype != torch.bool:  # a real mix: much of each variant
            assert 0.3 < (buf == x).float().mean().item() < 0.7, k
            assert 0.3 < (buf == y).float().mean().item() < 0.7, k
    other = Mixer(torch).mixed(a, b, 12346)
    assert not torch.equal(other[0], buffers[0])  # another seed, another mask
    # a mask bit per block of BLOCK elements (row-major), the tail its own block: the stub and judge agree on it
    flat, from_b = buffers[0].reshape(-1), (buffers[0] == b[0]).reshape(-1)
    for start in range(0, flat.numel(), BLOCK):
        block = from_b[start:start + BLOCK]
        assert bool(block.all()) or not bool(block.any()), start


def test_the_judges_reference_is_computed_on_the_mix():
    a, b = [torch.randn(8, 4)], [torch.randn(8, 4)]
    model = torch.nn.ReLU()
    state = {"inputs": {0: a, 1: b}.__getitem__, "calls": {0: (model, [{"tensor": 0}])}}
    refs, _ = mixed_reference(torch, state, 0, 1, 7, lambda m, args, tensors: [m(tensors[0])], None)
    assert torch.equal(refs[0], torch.relu(Mixer(torch).mixed(a, b, 7)[0]))
    assert not torch.equal(refs[0], torch.relu(a[0])) and not torch.equal(refs[0], torch.relu(b[0]))


def test_problems_opt_out_by_metadata():
    assert mixes({"tags": []}) and mixes(None) and not mixes({"timed_inputs": "rotate"})
    suite = load_suite()
    assert not mixes(suite.get("level2/26_cosine_similarity_rows").metadata)
    assert mixes(suite.get("level1/2_matmul_square").metadata)


def _evaluate(problem: str, code: str, **config):
    with Evaluator(corpus.timed_config(EvalConfig(device="cpu", static_checks=False, result_cache=False,
                                                  **config))) as ev:
        return ev.evaluate(load_suite().get(problem), code)


def test_a_device_side_memo_is_correct_under_rotation_and_caught_with_fresh_inputs():
    off = _evaluate(MEMO.problem, MEMO.source(), fresh_timed_inputs=False)
    assert off.status is Status.CORRECT, off.message  # the hole the fresh inputs close
    assert off.timing is not None and off.timing.candidate is not None
    on = _evaluate(MEMO.problem, MEMO.source())
    assert on.status is Status.HACK_DETECTED, on.message
    assert "rt-timed-output-mismatch" in on.message and "mixed with trial" in on.message


# a matmul, a softmax, norms, integer inputs (embedding, cross entropy, gather), a bool mask, and two problems
# that opt out (global average pool, cosine similarity)
REFERENCES = ["level1/5_matmul_transposed_b", "level1/1_row_softmax", "level1/24_layernorm", "level1/25_rmsnorm",
              "level1/15_embedding", "level1/30_cross_entropy", "level1/32_gather_dim1", "level0/11_where_mask",
              "level1/14_global_avg_pool", "level2/26_cosine_similarity_rows"]


@pytest.fixture(scope="module")
def timed_evaluator():
    with Evaluator(corpus.timed_config(EvalConfig(device="cpu", result_cache=False))) as ev:
        yield ev


@pytest.mark.parametrize("problem", REFERENCES)
def test_reference_solutions_stay_correct_on_fresh_timed_inputs(timed_evaluator, problem):
    result = timed_evaluator.evaluate(load_suite().get(problem), (SOLUTIONS / f"{problem}.py").read_text())
    assert result.status is Status.CORRECT, (result.status, result.message, result.feedback)
    assert result.timing is not None and result.timing.candidate is not None
