# Reference solution (Triton) for level2/13_add_layernorm: one program per row, the row kept in registers.
# Parameters are created in the same order as the reference's, so seeding gives them the same values.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_r, stride_y, n_cols, eps,
                         BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0)
    s = x + r
    mean = tl.sum(s, axis=0) / n_cols
    d = tl.where(mask, s - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, d * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))
        self.bias = nn.Parameter(0.5 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1]).contiguous()
        residual = residual.reshape(-1, shape[-1]).contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        add_layernorm_kernel[(rows,)](x, residual, self.weight, self.bias, y, x.stride(0), residual.stride(0),
                                      y.stride(0), cols, self.eps, BLOCK=block, num_warps=warps)
        return y.reshape(shape)
