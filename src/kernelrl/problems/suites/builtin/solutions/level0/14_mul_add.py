# Reference solution (Triton) for level0/14_mul_add.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_add_kernel(x_ptr, w_ptr, z_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0)
    z = tl.load(z_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, x * w + z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, w: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = w.contiguous()
        z = z.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        mul_add_kernel[(triton.cdiv(n, block),)](x, w, z, y, n, BLOCK=block, num_warps=8)
        return y
