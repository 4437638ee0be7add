# Reference solution (Triton) for level1/19_max_reduce_last_dim: one program per row.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, y_ptr, cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.full((BLOCK,), -float("inf"), dtype=tl.float32)
    base = x_ptr + row * stride_x
    for c0 in range(0, cols, BLOCK):
        c = c0 + offs
        acc = tl.maximum(acc, tl.load(base + c, mask=c < cols, other=-float("inf")))
    tl.store(y_ptr + row, tl.max(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty((rows,), dtype=x.dtype, device=x.device)
        block = min(4096, triton.next_power_of_2(cols))
        row_max_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
