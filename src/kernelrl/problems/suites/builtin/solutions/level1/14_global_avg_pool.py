# Reference solution (Triton) for level1/14_global_avg_pool: (N*C) rows of H*W, BLOCK_R rows per program.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def global_avg_kernel(x_ptr, y_ptr, n_rows, hw, inv_hw, BLOCK_R: tl.constexpr, BLOCK_HW: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    base = x_ptr + rows[:, None].to(tl.int64) * hw
    acc = tl.zeros([BLOCK_R, BLOCK_HW], dtype=tl.float32)
    for c0 in range(0, hw, BLOCK_HW):
        cols = c0 + tl.arange(0, BLOCK_HW)
        acc += tl.load(base + cols[None, :], mask=row_mask[:, None] & (cols[None, :] < hw), other=0.0)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1) * inv_hw, mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        n_rows, hw = N * C, H * W
        y = torch.empty((N, C, 1, 1), device=x.device, dtype=x.dtype)
        block_hw = min(512, triton.next_power_of_2(hw))
        block_r = 4
        global_avg_kernel[(triton.cdiv(n_rows, block_r),)](x, y, n_rows, hw, 1.0 / hw,
                                                          BLOCK_R=block_r, BLOCK_HW=block_hw, num_warps=4)
        return y
