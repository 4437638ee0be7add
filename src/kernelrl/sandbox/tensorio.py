"""Raw tensor files between processes: bytes plus a JSON-able header, never pickle.

Candidate processes write outputs this way; trusted processes read them back with `read_tensor`, which
refuses anything but a regular file of exactly the announced size (no symlinks, FIFOs or devices).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# dtype name -> bytes per element; the verdict process validates headers without importing torch
ITEMSIZE: dict[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint8": 1, "bool": 1, "complex64": 8,
}


class TensorFileError(ValueError):
    pass


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_meta(t: torch.Tensor) -> dict:
    return {"dtype": dtype_name(t.dtype), "shape": list(t.shape), "device": t.device.type}


def nbytes_of(meta: dict) -> int:
    numel = 1
    for dim in meta["shape"]:
        numel *= dim
    return numel * ITEMSIZE[meta["dtype"]]


def write_tensor(path: str | Path, t: torch.Tensor) -> dict:
    """Write `t`'s values (copied to host memory) and return its header."""
    import torch

    host = t.detach().contiguous().cpu()
    raw = host.reshape(-1).view(torch.uint8) if host.numel() else torch.empty(0, dtype=torch.uint8)
    with open(path, "wb") as f:
        f.write(memoryview(raw.numpy()))
    return tensor_meta(t)


def validate_meta(meta: object, max_bytes: int) -> dict:
    """Check an untrusted header: known dtype, sane shape, bounded size."""
    if not isinstance(meta, dict) or meta.get("dtype") not in ITEMSIZE or not isinstance(meta.get("shape"), list):
        raise TensorFileError(f"malformed tensor header: {str(meta)[:200]}")
    shape = meta["shape"]
    if len(shape) > 16 or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise TensorFileError(f"invalid tensor shape {str(shape)[:200]}")
    size = nbytes_of(meta)
    if size > max_bytes:
        raise TensorFileError(f"tensor of {size} bytes exceeds the {max_bytes}-byte limit")
    return {"dtype": meta["dtype"], "shape": shape, "device": str(meta.get("device", "cpu"))[:16]}


def read_tensor(path: str | Path, meta: dict) -> torch.Tensor:
    """Read a tensor file written by an untrusted process."""
    expected = nbytes_of(meta)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TensorFileError(f"cannot open tensor file {Path(path).name}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TensorFileError(f"{Path(path).name} is not a regular file")
        if st.st_size != expected:
            raise TensorFileError(f"{Path(path).name} holds {st.st_size} bytes, header says {expected}")
        buf = bytearray(expected)
        view, got = memoryview(buf), 0
        while got < expected:
            n = os.readv(fd, [view[got:]])
            if n == 0:
                raise TensorFileError(f"{Path(path).name} was truncated while reading")
            got += n
    finally:
        os.close(fd)
    import torch

    dtype = getattr(torch, meta["dtype"])
    if expected == 0:
        return torch.empty(meta["shape"], dtype=dtype)
    return torch.frombuffer(buf, dtype=dtype).reshape(meta["shape"])
