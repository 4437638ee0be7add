# Reference solution (Triton) for level2/21_row_l2_normalize: one program per row, one read and one write.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_l2_normalize_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(y_ptr + row * stride_y + cols, x / tl.maximum(norm, eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1]).contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        row_l2_normalize_kernel[(rows,)](x, y, x.stride(0), y.stride(0), cols, self.eps, BLOCK=block, num_warps=warps)
        return y.reshape(shape)
