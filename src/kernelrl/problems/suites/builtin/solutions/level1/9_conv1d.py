# Reference solution (Triton) for level1/9_conv1d: implicit GEMM. A program computes a (BLOCK_CO, BLOCK_L) output
# tile of one sample: rows are output channels, columns positions, the reduction runs over (in_channel, tap) pairs;
# the input tile is gathered with zero padding through masks. Parameters are created like the reference's nn.Conv1d.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, C_out, L, KS, pad,
                  BLOCK_CO: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_R: tl.constexpr):
    pid_co = tl.program_id(0)
    pid_l = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    pos = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    R = C_in * KS
    x_base = x_ptr + n * C_in * L
    acc = tl.zeros([BLOCK_CO, BLOCK_L], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        r_mask = r < R
        w = tl.load(w_ptr + co[:, None] * R + r[None, :], mask=(co[:, None] < C_out) & r_mask[None, :], other=0.0)
        ci = r // KS
        tap = r % KS
        src = pos[None, :] + tap[:, None] - pad
        xm = r_mask[:, None] & (src >= 0) & (src < L)
        xt = tl.load(x_base + ci[:, None] * L + src, mask=xm, other=0.0)
        acc += tl.dot(w, xt, input_precision="ieee")
    acc += tl.load(b_ptr + co, mask=co < C_out, other=0.0)[:, None]
    y = y_ptr + n * C_out * L + co[:, None] * L + pos[None, :]
    tl.store(y, acc, mask=(co[:, None] < C_out) & (pos[None, :] < L))


CONFIG = (128, 64, 32, 4, 3)  # max BLOCK_CO, max BLOCK_L, BLOCK_R, num_warps, num_stages


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C_in, L = x.shape
        w = self.conv.weight.contiguous()
        C_out, _, KS = w.shape
        y = torch.empty((N, C_out, L), device=x.device, dtype=x.dtype)
        max_co, max_l, block_r, warps, stages = CONFIG
        block_co = max(16, min(max_co, triton.next_power_of_2(C_out)))
        block_l = max(16, min(max_l, triton.next_power_of_2(L)))
        grid = (triton.cdiv(C_out, block_co), triton.cdiv(L, block_l), N)
        conv1d_kernel[grid](x, w, self.conv.bias, y, C_in, C_out, L, KS, KS // 2,
                            BLOCK_CO=block_co, BLOCK_L=block_l, BLOCK_R=block_r, num_warps=warps, num_stages=stages)
        return y
