"""Output comparison (kernelrl.verify.compare): first mismatch, shapes, dtypes, NaNs, mutated inputs,
chunked and sampled."""

from __future__ import annotations

import pytest
import torch

from kernelrl.verify.compare import compare_tensors, inputs_mutated


def test_compare_reports_first_mismatch_with_values():
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    actual = expected.clone()
    actual[1, 2] += 0.5
    actual[2, 3] += 1.0
    m = compare_tensors(expected, actual, 1e-4, 1e-4)
    assert m["reason"] == "values" and m["first_index"] == [1, 2]
    assert m["expected_value"] == 6.0 and m["actual_value"] == 6.5
    assert m["mismatched"] == 2 and m["numel"] == 12 and m["max_abs_error"] == pytest.approx(1.0)
    assert compare_tensors(expected, expected + 1e-5, 1e-4, 1e-4) is None


def test_compare_shape_dtype_nan_and_scalars():
    x = torch.ones(4)
    assert compare_tensors(x, torch.ones(5), 1e-4, 1e-4)["reason"] == "shape"
    assert compare_tensors(x, x.half(), 1e-4, 1e-4)["reason"] == "dtype"
    bad = x.clone()
    bad[3] = float("inf")
    assert compare_tensors(x, bad, 1e-4, 1e-4)["reason"] == "nonfinite"
    nan_ref = torch.tensor([float("nan"), 1.0])
    assert compare_tensors(nan_ref, nan_ref.clone(), 1e-4, 1e-4) is None
    assert compare_tensors(torch.tensor(2.0), torch.tensor(2.0), 0, 0) is None
    assert compare_tensors(torch.tensor(2.0), torch.tensor(3.0), 0, 0)["first_index"] == []


def test_input_mutation_detection():
    originals = [torch.randn(5), torch.arange(3)]
    assert inputs_mutated(originals, [t.clone() for t in originals]) is None
    changed = [originals[0].clone(), originals[1] + 1]
    assert inputs_mutated(originals, changed)["output_index"] == 1


def test_chunked_comparison_reports_like_a_single_pass(monkeypatch):
    import torch

    from kernelrl.verify import compare

    expected = torch.randn(50, 70)
    actual = expected.clone()
    actual[10, 5], actual[40, 3] = 9.0, float("nan")
    whole = compare.compare_tensors(expected, actual, 1e-4, 1e-4)
    monkeypatch.setattr(compare, "_CHUNK", 1000)  # the mismatches fall in the 1st and 3rd of 4 chunks
    assert compare.compare_tensors(expected, actual, 1e-4, 1e-4) == whole
    assert whole["mismatched"] == 2 and whole["first_index"] == [10, 5] and whole["reason"] == "nonfinite"
    assert compare.compare_tensors(expected, expected.clone(), 1e-4, 1e-4) is None


def test_sampled_comparison_finds_a_wrong_output_and_maps_the_index_back():
    import torch

    from kernelrl.verify.compare import SAMPLE_ENDS, SAMPLE_POINTS, compare_sampled, sample_positions

    expected = torch.randn(64, 100)
    positions = sample_positions(6400, 7, "cpu")
    assert positions.numel() == SAMPLE_POINTS + 2 * SAMPLE_ENDS  # both ends (they overlap here) and the draws
    # the judge redraws the sandbox's positions
    assert torch.equal(positions, sample_positions(6400, 7, "cpu"))
    assert not torch.equal(positions, sample_positions(6400, 8, "cpu"))
    assert int(positions.min()) == 0 and int(positions.max()) == 6399
    good = expected.reshape(-1)[positions].clone()
    assert compare_sampled(expected, [64, 100], "float32", 7, good, 1e-4, 1e-4) is None
    bad = good.clone()
    bad[101] += 1.0  # the ends come first: position 101
    found = compare_sampled(expected, [64, 100], "float32", 7, bad, 1e-4, 1e-4)
    assert found["first_index"] == [1, 1] and found["mismatched"] > 0 and "sampled" in found["detail"]
    assert compare_sampled(expected, [64, 99], "float32", 7, good, 1e-4, 1e-4)["reason"] == "shape"
    assert compare_sampled(expected, [64, 100], "float16", 7, good, 1e-4, 1e-4)["reason"] == "dtype"
    # values drawn at other positions (another seed) do not match; a malformed seed or count is refused
    assert compare_sampled(expected, [64, 100], "float32", 8, good, 1e-4, 1e-4)["reason"] == "values"
    for seed in (None, -1, 1 << 63, True, "7"):
        assert "malformed" in compare_sampled(expected, [64, 100], "float32",
                                              seed, good, 1e-4, 1e-4)["detail"]
    assert "malformed" in compare_sampled(expected, [64, 100], "float32", 7, good[:-1], 1e-4, 1e-4)["detail"]
