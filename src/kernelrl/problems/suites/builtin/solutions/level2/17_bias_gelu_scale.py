# Reference solution (Triton) for level2/17_bias_gelu_scale.
# Parameters are created in the same order as the reference's, so seeding gives them the same values.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_scale_kernel(x_ptr, b_ptr, s_ptr, out_ptr, n_elements, channels, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    c = offsets % channels
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    s = tl.load(s_ptr + c, mask=mask, other=0.0)
    z = x + b
    g = 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))
    tl.store(out_ptr + offsets, g * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 4096
        bias_gelu_scale_kernel[(triton.cdiv(n, block),)](x, self.bias, self.scale, out, n, x.shape[-1],
                                                         BLOCK=block, num_warps=8)
        return out
