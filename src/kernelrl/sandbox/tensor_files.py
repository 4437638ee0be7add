"""Raw tensor files between processes: bytes plus a header (kernelrl.sandbox.tensorio), never pickle.

Candidate processes write outputs this way; trusted processes read them back with `read_tensor`, which
refuses anything but a regular file of exactly the announced size (no symlinks, FIFOs or devices). torch is
imported with this module: the stub imports it before the candidate's import, so no function here resolves
torch (or anything else) by name once the candidate's code exists.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import torch

from kernelrl.sandbox.tensorio import TensorFileError, nbytes_of, tensor_meta


class HostStage:
    """A pinned host buffer that GPU tensors pass through in chunks on their way to and from files: measured
    on an H100 for 1 GiB, writing 1.3 s -> 0.44 s and reading onto the GPU 1.0 s -> 0.24 s (pageable copies
    run at a few GB/s, pinned ones at ~50). Pinned lazily, once per process that owns it."""

    CHUNK_BYTES = 64 << 20
    MIN_BYTES = 8 << 20  # smaller tensors go the plain way

    def __init__(self) -> None:
        self._buffer = None

    def buffer(self) -> torch.Tensor:
        if self._buffer is None:
            self._buffer = torch.empty(self.CHUNK_BYTES, dtype=torch.uint8, pin_memory=True)
        return self._buffer

    def applies(self, device_type: str, nbytes: int) -> bool:
        return device_type == "cuda" and nbytes >= self.MIN_BYTES


def write_tensor(path: str | Path, t: torch.Tensor, stage: HostStage | None = None) -> dict:
    """Write `t`'s values (copied to host memory; through `stage` when one is given and `t` is a large GPU
    tensor) and return its header."""
    flat = t.detach().contiguous().reshape(-1)
    raw = flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8)
    with open(path, "wb") as f:
        if stage is not None and stage.applies(raw.device.type, raw.numel()):
            buffer = stage.buffer()
            for start in range(0, raw.numel(), buffer.numel()):
                n = min(buffer.numel(), raw.numel() - start)
                buffer[:n].copy_(raw[start:start + n])  # synchronous: the bytes are on the host after it
                f.write(memoryview(buffer[:n].numpy()))
        else:
            f.write(memoryview(raw.cpu().numpy()))
    return tensor_meta(t)


# torch.equal on a GPU is eq(a, b).all(): a bool mask of every element compared. Compared whole, a 1 GiB
# output (as bytes) added 1 GiB to the sandbox's peak, which the GPU memory admission charges; chunks keep the
# mask small
EQUAL_CHUNK_BYTES = 64 << 20


def same_bytes(a: torch.Tensor, b: torch.Tensor, chunk_bytes: int | None = None) -> bool:
    """Bit-for-bit equality (NaN payloads and -0.0 included), same shape, dtype and device; on a GPU compared
    `chunk_bytes` (EQUAL_CHUNK_BYTES) at a time, on the host whole (its equal builds no mask)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    x, y = a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)
    step = chunk_bytes or (EQUAL_CHUNK_BYTES if x.is_cuda else x.numel())
    return all(bool(torch.equal(x[i:i + step], y[i:i + step])) for i in range(0, x.numel(), step))


def _open_checked(path: str | Path, expected: int) -> int:
    """An fd of a regular file (no symlink, FIFO or device) holding exactly `expected` bytes."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TensorFileError(f"cannot open tensor file {Path(path).name}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise TensorFileError(f"{Path(path).name} is not a regular file")
    if st.st_size != expected:
        os.close(fd)
        raise TensorFileError(f"{Path(path).name} holds {st.st_size} bytes, header says {expected}")
    return fd


def _read_into(fd: int, view: memoryview, name: str) -> None:
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise TensorFileError(f"{name} was truncated while reading")
        got += n


def read_tensor(path: str | Path, meta: dict, device: str = "cpu",
                stage: HostStage | None = None) -> torch.Tensor:
    """Read a tensor file written by an untrusted process onto `device` (through `stage`, in chunks, when one
    is given and the tensor is large and bound for a GPU)."""
    expected = nbytes_of(meta)
    dtype = getattr(torch, meta["dtype"])
    fd = _open_checked(path, expected)
    try:
        if stage is not None and stage.applies(torch.device(device).type, expected):
            raw = torch.empty(expected, dtype=torch.uint8, device=device)
            buffer = stage.buffer()
            view = memoryview(buffer.numpy())
            for start in range(0, expected, buffer.numel()):
                n = min(buffer.numel(), expected - start)
                _read_into(fd, view[:n], Path(path).name)
                raw[start:start + n].copy_(buffer[:n])  # synchronous: the buffer is free again after it
            return raw.view(dtype).reshape(meta["shape"])
        buf = bytearray(expected)
        _read_into(fd, memoryview(buf), Path(path).name)
    finally:
        os.close(fd)
    if expected == 0:
        return torch.empty(meta["shape"], dtype=dtype, device=device)
    return torch.frombuffer(buf, dtype=dtype).reshape(meta["shape"]).to(device)
