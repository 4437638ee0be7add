"""Raw tensor files between processes, their headers: a JSON-able dict (dtype, shape, device), never pickle.
This half needs no torch, so the verdict process validates headers with it; the files themselves are written
and read by kernelrl.sandbox.tensor_files.
"""

from __future__ import annotations

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


def validate_meta(meta: object, max_bytes: int) -> dict:
    """Check an untrusted header: known dtype, sane shape, bounded size."""
    if (not isinstance(meta, dict) or meta.get("dtype") not in ITEMSIZE
            or not isinstance(meta.get("shape"), list)):
        raise TensorFileError(f"malformed tensor header: {str(meta)[:200]}")
    shape = meta["shape"]
    if len(shape) > 16 or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise TensorFileError(f"invalid tensor shape {str(shape)[:200]}")
    size = nbytes_of(meta)
    if size > max_bytes:
        raise TensorFileError(f"tensor of {size} bytes exceeds the {max_bytes}-byte limit")
    return {"dtype": meta["dtype"], "shape": shape, "device": str(meta.get("device", "cpu"))[:16]}
