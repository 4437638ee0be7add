"""Device buffers shared between processes with CUDA IPC (the driver API, through ctypes).

Large correctness outputs go from the sandbox to the judge this way instead of through files: the *judge*
allocates one buffer per large reference output (its own `cuMemAlloc`, so the mapping exposes nothing else of
the judge's memory), fills it with NaN bytes and hands the sandbox an IPC handle; the sandbox's stub copies
the candidate's output in on the device and closes its mapping; the judge compares the buffer in place. A
candidate that reaches a handle can only write into a buffer that holds its own answer; a stub that claims a
copy it never made leaves NaNs, which fail the comparison. Any failure (no IPC on this system, out of memory)
makes that output go through a file as before.
"""

from __future__ import annotations

import ctypes
from typing import Any

MIN_BYTES = 8 << 20  # smaller outputs go through files: a file round trip costs ~ms there
_LAZY_ENABLE_PEER_ACCESS = 1


class CudaIpcError(RuntimeError):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class _DeviceBytes:
    """A raw device range as `torch.as_tensor` takes it (CUDA array interface): no copy, no ownership."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None, "stream": None}


class CudaIpc:
    """The driver calls on the calling thread's current context (the primary one torch made current)."""

    def __init__(self) -> None:
        try:
            self._cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CudaIpcError(f"no CUDA driver library: {exc}") from None
        c = self._cuda
        ptr_out = ctypes.POINTER(ctypes.c_uint64)
        self._alloc = self._fn("cuMemAlloc_v2", [ptr_out, ctypes.c_size_t])
        self._free = self._fn("cuMemFree_v2", [ctypes.c_uint64])
        self._get_handle = self._fn("cuIpcGetMemHandle", [ctypes.POINTER(_Handle), ctypes.c_uint64])
        self._open = (self._fn("cuIpcOpenMemHandle_v2", [ptr_out, _Handle, ctypes.c_uint], required=False)
                      or self._fn("cuIpcOpenMemHandle", [ptr_out, _Handle, ctypes.c_uint]))
        self._close = self._fn("cuIpcCloseMemHandle", [ctypes.c_uint64])
        self._error_name = c.cuGetErrorName
        self._error_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def _fn(self, name: str, argtypes: list, required: bool = True):
        fn = getattr(self._cuda, name, None)
        if fn is None:
            if required:
                raise CudaIpcError(f"the CUDA driver has no {name}")
            return None
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
        return fn

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self._error_name(rc, ctypes.byref(name))
            raise CudaIpcError(f"{what} failed: {(name.value or b'?').decode()} ({rc})")

    # -- the exporting side (the judge) --------------------------------------------------------------------
    def allocate(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self._alloc(ctypes.byref(ptr), nbytes), f"cuMemAlloc of {nbytes} bytes")
        return ptr.value

    def free(self, ptr: int) -> None:
        self._check(self._free(ptr), "cuMemFree")

    def export(self, ptr: int) -> str:
        handle = _Handle()
        self._check(self._get_handle(ctypes.byref(handle), ptr), "cuIpcGetMemHandle")
        return bytes(handle).hex()  # the raw 64 bytes (the c_char field itself would stop at a NUL)

    # -- the importing side (the sandbox) ------------------------------------------------------------------
    def open(self, handle_hex: str) -> int:
        raw = bytes.fromhex(handle_hex)
        if len(raw) != ctypes.sizeof(_Handle):
            raise CudaIpcError(f"an IPC handle has {ctypes.sizeof(_Handle)} bytes, got {len(raw)}")
        handle = _Handle.from_buffer_copy(raw)
        ptr = ctypes.c_uint64()
        self._check(self._open(ctypes.byref(ptr), handle, _LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        return ptr.value

    def close(self, ptr: int) -> None:
        self._check(self._close(ptr), "cuIpcCloseMemHandle")


def device_bytes(torch: Any, ptr: int, nbytes: int):
    """A uint8 tensor viewing `nbytes` of device memory at `ptr` (owned elsewhere)."""
    return torch.as_tensor(_DeviceBytes(ptr, nbytes), device="cuda")
