# Reference solution (Triton) for level2/16_silu_add.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * tl.sigmoid(x) + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 4096
        silu_add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=8)
        return out
