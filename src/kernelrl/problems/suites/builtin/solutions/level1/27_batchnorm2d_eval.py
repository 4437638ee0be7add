# Reference solution (Triton) for level1/27_batchnorm2d_eval.
# One program per (n*c plane, block of h*w); the channel's scale/shift are scalars folded from the
# running statistics. Parameters and buffers are created in the reference's order.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_eval_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, var_ptr, channels, hw, eps, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    c = plane % channels
    scale = tl.load(w_ptr + c) / tl.sqrt(tl.load(var_ptr + c) + eps)
    shift = tl.load(b_ptr + c) - tl.load(mean_ptr + c) * scale
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < hw
    x = tl.load(x_ptr + plane * hw + offs, mask=mask, other=0.0)
    tl.store(y_ptr + plane * hw + offs, x * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(channels))
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c = x.shape[0], x.shape[1]
        hw = x.numel() // (n * c)
        y = torch.empty_like(x)
        block = min(4096, triton.next_power_of_2(hw))
        grid = (n * c, triton.cdiv(hw, block))
        bn_eval_kernel[grid](x, y, self.weight, self.bias, self.running_mean, self.running_var, c, hw, self.eps,
                             BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
