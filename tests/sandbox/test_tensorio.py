"""Tensor files between the processes and byte comparisons (kernelrl.sandbox.tensorio)."""

from __future__ import annotations

import pytest
import torch

from kernelrl.sandbox.tensor_files import read_tensor, write_tensor
from kernelrl.sandbox.tensorio import TensorFileError, validate_meta


def test_tensor_files_round_trip_and_refuse_tricks(tmp_path):
    for t in (torch.randn(3, 4), torch.tensor(1.5), torch.randn(5).bfloat16(), torch.rand(6) > 0.5):
        meta = write_tensor(tmp_path / "t.bin", t)
        assert torch.equal(read_tensor(tmp_path / "t.bin", validate_meta(meta, 1 << 20)), t)
    meta = write_tensor(tmp_path / "t.bin", torch.randn(4))
    with pytest.raises(TensorFileError, match="header says"):
        read_tensor(tmp_path / "t.bin", {"dtype": "float32", "shape": [5]})
    (tmp_path / "link.bin").symlink_to(tmp_path / "t.bin")
    with pytest.raises(TensorFileError):
        read_tensor(tmp_path / "link.bin", meta)
    for bad in ({"dtype": "object", "shape": [1]}, {"dtype": "float32", "shape": [-1]},
                {"dtype": "float32", "shape": [1 << 40]}, "nope"):
        with pytest.raises(TensorFileError):
            validate_meta(bad, 1 << 30)


def test_tensor_files_round_trip_with_and_without_a_host_stage(tmp_path):
    import torch

    from kernelrl.sandbox.tensor_files import HostStage, read_tensor, write_tensor
    from kernelrl.sandbox.tensorio import TensorFileError

    stage = HostStage()
    for t in (torch.randn(3, 5), torch.arange(7, dtype=torch.int16), torch.tensor([True, False]),
              torch.randn(4, 6).t(), torch.empty(0, 3)):
        path = tmp_path / "t.bin"
        meta = write_tensor(path, t, stage)  # host tensors never take the pinned path
        back = read_tensor(path, meta, "cpu", stage)
        assert back.dtype == t.dtype and back.shape == t.shape and torch.equal(back, t)
    assert not stage.applies("cpu", 1 << 30) and stage.applies("cuda", 1 << 30)
    assert not stage.applies("cuda", 1024)
    (tmp_path / "short.bin").write_bytes(b"\0" * 10)
    with pytest.raises(TensorFileError, match="header says 12"):
        read_tensor(tmp_path / "short.bin", {"dtype": "float32", "shape": [3]}, "cpu", stage)
    (tmp_path / "link.bin").symlink_to(tmp_path / "short.bin")
    with pytest.raises(TensorFileError, match="cannot open"):
        read_tensor(tmp_path / "link.bin", {"dtype": "uint8", "shape": [10]})


def test_same_bytes_compares_chunk_by_chunk_as_on_a_gpu():
    """`same_bytes` in chunks (as on a GPU, where torch.equal builds a mask of all it compares): every chunk
    is compared, the ragged last one too, bit for bit (a NaN payload and -0.0 differ)."""
    from kernelrl.sandbox.tensor_files import same_bytes

    a = torch.randn(37, 5)
    for chunk in (7, 64, None):
        assert same_bytes(a, a.clone(), chunk)
        for position in (0, 91, a.numel() - 1):  # the first chunk, one in the middle, the ragged tail
            b = a.clone()
            b.view(-1)[position] += 1.0
            assert not same_bytes(a, b, chunk), (chunk, position)
    zero, nan = torch.zeros(40), torch.full((40,), float("nan"))
    assert not same_bytes(zero, -zero, 8)
    assert not same_bytes(nan, nan.view(torch.int32).add(1).view(torch.float32), 8)
    assert not same_bytes(a, a.t().contiguous(), 7)  # another shape
