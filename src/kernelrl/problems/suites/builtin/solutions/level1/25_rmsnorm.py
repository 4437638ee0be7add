# Reference solution (Triton) for level1/25_rmsnorm: one program per row, the row held in registers.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, d, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < d
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / d + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + offs, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = x.shape[-1]
        x2 = x.view(-1, d)
        y = torch.empty_like(x2)
        block = triton.next_power_of_2(d)
        nw = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        rmsnorm_kernel[(x2.shape[0],)](x2, self.weight, y, d, x2.stride(0), y.stride(0), self.eps,
                                       BLOCK=block, num_warps=nw)
        return y.view(x.shape)
