"""A tiny Triton kernel that a standby sandbox launches once while it waits for its candidate, so Triton's
runtime (driver utilities, the launcher build, module loading) starts up off the evaluation's clock. Its
compile cache is the harness's own directory, which candidates cannot write (read-only file system)."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def launch(torch: Any) -> None:
    src = torch.arange(1024, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    _copy_kernel[(1,)](src, dst, src.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    if not torch.equal(src, dst):
        raise RuntimeError("the standby's warm-up kernel computed a wrong copy")
