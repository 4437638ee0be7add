# Reference solution (Triton) for level3/5_resnet_basic_block.
# Each 3x3 convolution is an implicit GEMM (output pixels x out-channels, reduced over in-channels*9 taps with
# tl.dot in 3xTF32 (fp32-accurate, fp32 accumulation); zero padding through load masks) with eval-mode
# BatchNorm folded into the epilogue (scale/shift computed in-kernel from the running statistics), then ReLU,
# or residual add + ReLU.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv3x3_bn_kernel(x_ptr, w_ptr, gamma_ptr, beta_ptr, mean_ptr, var_ptr, r_ptr, y_ptr,
                      NB, C_IN, H, W, C_OUT, eps,
                      RESIDUAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x: (NB, C_IN, H, W) contiguous, w: (C_OUT, C_IN, 3, 3) contiguous, y/r: (NB, C_OUT, H, W) contiguous.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    HW = H * W
    M = NB * HW
    K = C_IN * 9
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < C_OUT
    n = offs_m // HW
    hw = offs_m % HW
    oh = hw // W
    ow = hw % W
    x_base = n * (C_IN * HW) + oh * W + ow
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        ci = ks // 9
        tap = ks % 9
        dh = tap // 3 - 1
        dw = tap % 3 - 1
        ih = oh[:, None] + dh[None, :]
        iw = ow[:, None] + dw[None, :]
        amask = (mask_m[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
        a = tl.load(x_ptr + x_base[:, None] + (ci * HW + dh * W + dw)[None, :], mask=amask, other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * K + ks[:, None], mask=k_ok[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    gamma = tl.load(gamma_ptr + offs_n, mask=mask_n, other=1.0)
    beta = tl.load(beta_ptr + offs_n, mask=mask_n, other=0.0)
    mean = tl.load(mean_ptr + offs_n, mask=mask_n, other=0.0)
    var = tl.load(var_ptr + offs_n, mask=mask_n, other=1.0)
    scale = gamma / tl.sqrt(var + eps)
    shift = beta - mean * scale
    z = acc * scale[None, :] + shift[None, :]
    mask = mask_m[:, None] & mask_n[None, :]
    y_off = (n * (C_OUT * HW) + hw)[:, None] + (offs_n * HW)[None, :]
    if RESIDUAL:
        z += tl.load(r_ptr + y_off, mask=mask, other=0.0)
    z = tl.maximum(z, 0.0)
    tl.store(y_ptr + y_off, z, mask=mask)


def conv_bn(x, conv, bn, residual=None):
    NB, C_IN, H, W = x.shape
    C_OUT = conv.weight.shape[0]
    y = torch.empty((NB, C_OUT, H, W), device=x.device, dtype=torch.float32)
    M = NB * H * W
    bm = max(16, min(128, triton.next_power_of_2(M)))
    bn_ = max(16, min(128, triton.next_power_of_2(C_OUT)))
    bk = max(16, min(32, triton.next_power_of_2(C_IN * 9)))
    r = residual if residual is not None else y
    grid = (triton.cdiv(M, bm), triton.cdiv(C_OUT, bn_))
    conv3x3_bn_kernel[grid](x, conv.weight, bn.weight, bn.bias, bn.running_mean, bn.running_var, r, y,
                            NB, C_IN, H, W, C_OUT, bn.eps, RESIDUAL=residual is not None,
                            BLOCK_M=bm, BLOCK_N=bn_, BLOCK_K=bk, num_warps=8, num_stages=2)
    return y


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.copy_(1.0 + 0.3 * torch.randn(channels))
                bn.bias.copy_(0.2 * torch.randn(channels))
                bn.running_mean.copy_(0.2 * torch.randn(channels))
                bn.running_var.copy_(0.5 + torch.rand(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = conv_bn(x, self.conv1, self.bn1)
        return conv_bn(y, self.conv2, self.bn2, residual=x)
