# Reference solution (Triton) for level0/10_scale_cast_fp16.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_cast_kernel(x_ptr, y_ptr, n_elements, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, (x * scale).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float = 4.0):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, dtype=torch.float16, device=x.device)
        n = x.numel()
        block = 4096
        scale_cast_kernel[(triton.cdiv(n, block),)](x, y, n, self.scale, BLOCK=block, num_warps=8)
        return y
