# Reference solution (Triton) for level0/13_broadcast_bias_add.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias2d_kernel(x_ptr, cb_ptr, rb_ptr, y_ptr, rows, cols, stride_x, stride_y,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = r < rows
    cmask = c < cols
    mask = rmask[:, None] & cmask[None, :]
    cb = tl.load(cb_ptr + c, mask=cmask, other=0.0)
    rb = tl.load(rb_ptr + r, mask=rmask, other=0.0)
    x = tl.load(x_ptr + r[:, None] * stride_x + c[None, :], mask=mask, other=0.0)
    y = x + cb[None, :] + rb[:, None]
    tl.store(y_ptr + r[:, None] * stride_y + c[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, col_bias: torch.Tensor, row_bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cb = col_bias.contiguous()
        rb = row_bias.contiguous().view(-1)
        rows, cols = x.shape
        y = torch.empty_like(x)
        block_c = min(triton.next_power_of_2(cols), 1024)
        block_r = max(1, 4096 // block_c)
        grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
        bias2d_kernel[grid](x, cb, rb, y, rows, cols, x.stride(0), y.stride(0),
                            BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
        return y
