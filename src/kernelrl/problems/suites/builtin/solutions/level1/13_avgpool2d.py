# Reference solution (Triton) for level1/13_avgpool2d: one program per (plane, block of pixels); 3x3 window sum
# (stride 1, padding 1) divided by the number of in-bounds taps (count_include_pad=False).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def avgpool_kernel(x_ptr, y_ptr, H, W, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < H * W
    oh = offs // W
    ow = offs % W
    base = x_ptr + plane * H * W
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for dh in range(3):
        ih = oh - 1 + dh
        row_ok = mask & (ih >= 0) & (ih < H)
        for dw in range(3):
            iw = ow - 1 + dw
            ok = row_ok & (iw >= 0) & (iw < W)
            acc += tl.load(base + ih * W + iw, mask=ok, other=0.0)
    cnt_h = tl.minimum(oh + 1, H - 1) - tl.maximum(oh - 1, 0) + 1
    cnt_w = tl.minimum(ow + 1, W - 1) - tl.maximum(ow - 1, 0) + 1
    tl.store(y_ptr + plane * H * W + offs, acc / tl.maximum(cnt_h * cnt_w, 1).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        y = torch.empty_like(x)
        block = min(1024, triton.next_power_of_2(H * W))
        avgpool_kernel[(N * C, triton.cdiv(H * W, block))](x, y, H, W, BLOCK=block, num_warps=4)
        return y
