# Reference solution (Triton) for level0/2_scale_shift.
# Parameters are created in the same order as the reference's, so seeding gives them the same values.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, scale_ptr, shift_ptr, y_ptr, n_elements, channels, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    c = offsets % channels
    x = tl.load(x_ptr + offsets, mask=mask)
    scale = tl.load(scale_ptr + c, mask=mask)
    shift = tl.load(shift_ptr + c, mask=mask)
    tl.store(y_ptr + offsets, x * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.shift = nn.Parameter(torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 16384
        scale_shift_kernel[(triton.cdiv(n, block),)](x, self.scale, self.shift, y, n, x.shape[-1], BLOCK=block)
        return y
