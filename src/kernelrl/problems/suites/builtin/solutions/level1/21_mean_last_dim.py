# Reference solution (Triton) for level1/21_mean_last_dim: one program per row, fp32 accumulation.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, y_ptr, cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    base = x_ptr + row * stride_x
    for c0 in range(0, cols, BLOCK):
        c = c0 + offs
        acc += tl.load(base + c, mask=c < cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0) / cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        lead = x.shape[:-1]
        cols = x.shape[-1]
        x2 = x.view(-1, cols)
        rows = x2.shape[0]
        y = torch.empty((rows,), dtype=x.dtype, device=x.device)
        block = min(4096, triton.next_power_of_2(cols))
        row_mean_kernel[(rows,)](x2, y, cols, x2.stride(0), BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y.view(lead)
