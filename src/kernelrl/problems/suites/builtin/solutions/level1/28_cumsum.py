# Reference solution (Triton) for level1/28_cumsum: one program per row; tl.cumsum within a block and a
# running carry across blocks.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    carry = tl.zeros((), dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + offs
        mask = c < cols
        x = tl.load(x_ptr + row * stride_x + c, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride_y + c, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        block = min(4096, triton.next_power_of_2(cols))
        cumsum_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block,
                               num_warps=8 if block >= 2048 else 4)
        return y
