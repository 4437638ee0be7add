# Reference solution (Triton) for level1/10_conv2d_3x3: implicit GEMM. A program computes a (BLOCK_CO, BLOCK_P)
# output tile of one image: rows are output channels, columns flattened pixels; the reduction runs over
# (in_channel, kh, kw) triples and the input tile is gathered with zero padding through masks.
# Parameters are created like the reference's nn.Conv2d (same seed, same values).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_in, C_out, H, W,
                  BLOCK_CO: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr):
    pid_co = tl.program_id(0)
    pid_p = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    HW = H * W
    oh = p // W
    ow = p % W
    p_mask = p < HW
    R = C_in * 9
    x_base = x_ptr + n * C_in * HW
    acc = tl.zeros([BLOCK_CO, BLOCK_P], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        r_mask = r < R
        w = tl.load(w_ptr + co[:, None] * R + r[None, :], mask=(co[:, None] < C_out) & r_mask[None, :], other=0.0)
        ci = r // 9
        kh = (r % 9) // 3
        kw = r % 3
        ih = oh[None, :] + kh[:, None] - 1
        iw = ow[None, :] + kw[:, None] - 1
        xm = r_mask[:, None] & p_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        xt = tl.load(x_base + ci[:, None] * HW + ih * W + iw, mask=xm, other=0.0)
        acc += tl.dot(w, xt, input_precision="ieee")
    acc += tl.load(b_ptr + co, mask=co < C_out, other=0.0)[:, None]
    y = y_ptr + n * C_out * HW + co[:, None] * HW + p[None, :]
    tl.store(y, acc, mask=(co[:, None] < C_out) & p_mask[None, :])


CONFIG = (128, 64, 32, 4, 3)  # max BLOCK_CO, max BLOCK_P, BLOCK_R, num_warps, num_stages


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C_in, H, W = x.shape
        w = self.conv.weight.contiguous()
        C_out = w.shape[0]
        y = torch.empty((N, C_out, H, W), device=x.device, dtype=x.dtype)
        max_co, max_p, block_r, warps, stages = CONFIG
        block_co = max(16, min(max_co, triton.next_power_of_2(C_out)))
        block_p = max(16, min(max_p, triton.next_power_of_2(H * W)))
        grid = (triton.cdiv(C_out, block_co), triton.cdiv(H * W, block_p), N)
        conv2d_kernel[grid](x, w, self.conv.bias, y, C_in, C_out, H, W,
                            BLOCK_CO=block_co, BLOCK_P=block_p, BLOCK_R=block_r, num_warps=warps, num_stages=stages)
        return y
