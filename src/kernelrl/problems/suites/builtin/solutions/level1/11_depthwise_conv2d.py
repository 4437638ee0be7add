# Reference solution (Triton) for level1/11_depthwise_conv2d: one program per (plane, block of pixels); the
# plane's 9 taps and bias are scalars. Parameters are created like the reference's nn.Conv2d (same seed, same values).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def dwconv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    ch = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < H * W
    oh = offs // W
    ow = offs % W
    base = x_ptr + plane.to(tl.int64) * H * W
    acc = tl.zeros([BLOCK], dtype=tl.float32) + tl.load(b_ptr + ch)
    for dh in range(3):
        ih = oh - 1 + dh
        row_ok = mask & (ih >= 0) & (ih < H)
        for dw in range(3):
            iw = ow - 1 + dw
            ok = row_ok & (iw >= 0) & (iw < W)
            w = tl.load(w_ptr + ch * 9 + dh * 3 + dw)
            acc += tl.load(base + ih * W + iw, mask=ok, other=0.0) * w
    tl.store(y_ptr + plane.to(tl.int64) * H * W + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        w = self.conv.weight.contiguous()
        y = torch.empty_like(x)
        block = min(1024, triton.next_power_of_2(H * W))
        dwconv_kernel[(N * C, triton.cdiv(H * W, block))](x, w, self.conv.bias, y, C, H, W, BLOCK=block, num_warps=4)
        return y
