"""Fresh inputs for every timed call (kernelrl.sandbox.timed_mix): the judge's rebuild of a checked call's
inputs is the sandbox's mix, a device-side memo that pays under the rotation through pristine variants is
rejected, and reference solutions stay correct when timed on fresh inputs (CPU mode, host clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import corpus
import pytest
import torch

from kernelrl import Status, VerdictSettings, load_suite
from kernelrl.sandbox.timed_mix import BLOCK, Mixer, mixed_reference, mixes

MEMO = corpus.case("exploits_runtime/r07_memo_by_sampled_key.py")
SOLUTIONS = Path(__file__).parents[2] / "src/kernelrl/problems/suites/builtin/solutions"


def _variants(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(33, 17, generator=g), torch.randint(0, 50, (1000,), generator=g),
            torch.rand(7, 9, generator=g) < 0.5, torch.randn(64, generator=g).half(),
            torch.randn((), generator=g)]


def test_the_judges_rebuild_is_the_sandboxs_mix():
    a, b = _variants(1), _variants(2)
    buffers = [t.clone() for t in a]
    Mixer(torch).into(buffers, a, b, seed=12345)  # the sandbox stub, into its buffers
    # the judge, another Mixer
    rebuilt = Mixer(torch).mixed([t.clone() for t in a], [t.clone() for t in b], 12345)
    for k, (buf, again, x, y) in enumerate(zip(buffers, rebuilt, a, b, strict=True)):
        assert buf.dtype == x.dtype and buf.shape == x.shape
        assert torch.equal(buf, again), k
        assert bool(((buf == x) | (buf == y)).all()), k  # every element from one of the two variants
        if buf.numel() > 100 and buf.dtype != torch.bool:  # a real mix: much of each variant
            assert 0.3 < (buf == x).float().mean().item() < 0.7, k
            assert 0.3 < (buf == y).float().mean().item() < 0.7, k
    other = Mixer(torch).mixed(a, b, 12346)
    assert not torch.equal(other[0], buffers[0])  # another seed, another mask
    # a mask bit per block of BLOCK elements (row-major),
    # the tail its own block: the stub and judge agree on it
    flat, from_b = buffers[0].reshape(-1), (buffers[0] == b[0]).reshape(-1)
    for start in range(0, flat.numel(), BLOCK):
        block = from_b[start:start + BLOCK]
        assert bool(block.all()) or not bool(block.any()), start


class _RecordingTorch:
    """torch as the Mixer sees it, with `where` recording the dtype it ran over."""

    def __init__(self) -> None:
        self.where_dtypes: list = []

    def __getattr__(self, name: str):
        return getattr(torch, name)

    def where(self, *args, **kwargs):
        self.where_dtypes.append(args[1].dtype)
        return torch.where(*args, **kwargs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool, torch.int64])
def test_the_mix_runs_over_64_bit_words_where_aligned_and_gives_the_same_bytes_where_not(dtype):
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 50, (40 * BLOCK + 5,), generator=g).to(dtype)
    b = ~a if dtype == torch.bool else a + 50  # every element differs: the blocks taken from b show
    seen = _RecordingTorch()
    words = Mixer(seen).mixed([a], [b], 99)[0]
    assert seen.where_dtypes[0] == torch.int64  # the blocks as words (the ragged tail is its own where)
    # the buffer one element past an 8-byte boundary: no word view there; the elements picked are the same
    storage = torch.empty(a.numel() + 1, dtype=dtype)
    shifted = storage[1:]
    if dtype.itemsize < 8:
        assert shifted.data_ptr() % 8 != 0
    seen.where_dtypes.clear()
    Mixer(seen).into([shifted], [a], [b], 99)
    assert seen.where_dtypes[0] == (torch.int64 if dtype.itemsize == 8 else dtype)
    assert torch.equal(shifted, words)
    assert bool(((words == a) | (words == b)).all())
    from_b = (words != a).reshape(-1)[:40 * BLOCK].view(-1, BLOCK)
    assert 10 < int(from_b.any(dim=1).sum()) < 30  # a real mix of blocks


_BLOCK_MIX_SCRIPT = """
import json, torch
from kernelrl.sandbox.warm_kernel import BlockMix
from kernelrl.sandbox.timed_mix import Mixer, BLOCK
kernel, used = BlockMix(torch, device="cpu"), []
def counting(*args):
    used.append(kernel(*args))
    return used[-1]
def failing(*args):
    raise RuntimeError("no launch")
rows = []
for name in ("float32", "float16", "bfloat16", "int8"):
    g = torch.Generator().manual_seed(1)
    a, b = (torch.randn(300 * BLOCK + 7, generator=g).mul(100).to(getattr(torch, name)) for _ in range(2))
    expected = Mixer(torch).mixed([a], [b], 5)[0].view(torch.uint8)
    used.clear()
    buf = torch.empty_like(a)
    Mixer(torch, counting).into([buf], [a], [b], 5)
    after_failure = torch.empty_like(a)
    Mixer(torch, failing).into([after_failure], [a], [b], 5)
    rows.append({"dtype": name, "kernel": list(used), "same": torch.equal(buf.view(torch.uint8), expected),
                 "same_after_failure": torch.equal(after_failure.view(torch.uint8), expected)})
w = torch.zeros(8, 4, dtype=torch.int64)
rows.append({"dtype": "strided",
             "kernel": [kernel(w.t().contiguous().t(), w, torch.zeros(8, dtype=torch.bool),
                               torch.empty_like(w))],
             "same": True, "same_after_failure": True})
print(json.dumps(rows))
"""


def test_the_stubs_mix_kernel_writes_the_judges_bytes_and_a_failed_launch_falls_back_to_the_where():
    # the kernel itself, run by Triton's interpreter (on a GPU
    # a standby loads it; tests/gpu/test_gpu.py checks it there)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", _BLOCK_MIX_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {row["dtype"]: row for row in json.loads(done.stdout.splitlines()[-1])}
    for name in ("float32", "float16", "bfloat16"):  # 8 and 4 words a block: the kernel's widths
        assert rows[name]["kernel"] == [True], rows[name]
    assert rows["int8"]["kernel"] == [False]  # 2 words a block: left to the where
    assert rows["strided"]["kernel"] == [False]  # the kernel indexes rows of a contiguous tensor
    for row in rows.values():
        assert row["same"] and row["same_after_failure"], row


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


def _evaluate(evaluator, problem: str, code: str, **verdict):
    return evaluator.evaluate(load_suite().get(problem), code,
                              verdict=corpus.timed_config(VerdictSettings(static_checks=False, **verdict)))


@pytest.mark.slow  # a matmul in the interpreter, timed
def test_a_device_side_memo_is_correct_under_rotation_and_caught_with_fresh_inputs(cpu_evaluator):
    off = _evaluate(cpu_evaluator, MEMO.problem, MEMO.source(), fresh_timed_inputs=False)
    assert off.status is Status.CORRECT, off.message  # the hole the fresh inputs close
    assert off.timing is not None and off.timing.candidate is not None
    on = _evaluate(cpu_evaluator, MEMO.problem, MEMO.source())
    assert on.status is Status.HACK_DETECTED, on.message
    assert "rt-timed-output-mismatch" in on.message and "mixed with trial" in on.message


# a matmul, a softmax, norms, integer inputs (embedding, cross entropy, gather), a bool mask, and two problems
# that opt out (global average pool, cosine similarity)
REFERENCES = ["level1/5_matmul_transposed_b", "level1/1_row_softmax", "level1/24_layernorm",
              "level1/25_rmsnorm", "level1/15_embedding", "level1/30_cross_entropy", "level1/32_gather_dim1",
              "level0/11_where_mask", "level1/14_global_avg_pool", "level2/26_cosine_similarity_rows"]


@pytest.fixture(scope="module")
def timed_evaluator(cpu_evaluator):
    return cpu_evaluator.with_verdict(corpus.timed_config(VerdictSettings()))


@pytest.mark.parametrize("problem", REFERENCES)
def test_reference_solutions_stay_correct_on_fresh_timed_inputs(timed_evaluator, problem):
    result = timed_evaluator.evaluate(load_suite().get(problem), (SOLUTIONS / f"{problem}.py").read_text())
    assert result.status is Status.CORRECT, (result.status, result.message, result.feedback)
    assert result.timing is not None and result.timing.candidate is not None
