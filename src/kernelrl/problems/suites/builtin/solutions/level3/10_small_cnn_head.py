# Reference solution (Triton) for level3/10_small_cnn_head.
# conv3x3 as implicit GEMM (pixels x out-channels over in-channels*9, tl.dot in 3xTF32 (fp32-accurate, fp32
# accumulation), padding via masks) with bias + ReLU fused -> 2x2 max pool kernel -> second implicit-GEMM conv
# with bias + ReLU -> global average pool (one row of H*W per program) -> classifier GEMM + bias.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv3x3_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, NB, C_IN, H, W, C_OUT,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x: (NB, C_IN, H, W), w: (C_OUT, C_IN, 3, 3), y: (NB, C_OUT, H, W), all contiguous; stride 1, padding 1.
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
    z = tl.maximum(acc + tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :], 0.0)
    y_off = (n * (C_OUT * HW) + hw)[:, None] + (offs_n * HW)[None, :]
    tl.store(y_ptr + y_off, z, mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def maxpool2x2_kernel(x_ptr, y_ptr, total, H, W, OH, OW, BLOCK: tl.constexpr):
    # x: (P, H, W) planes, y: (P, OH, OW) with OH = H // 2, OW = W // 2 (floor)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    p = offs // (OH * OW)
    r = offs % (OH * OW)
    oh = r // OW
    ow = r % OW
    base = x_ptr + p * (H * W) + (2 * oh) * W + 2 * ow
    v = tl.maximum(tl.maximum(tl.load(base, mask=mask, other=0.0), tl.load(base + 1, mask=mask, other=0.0)),
                   tl.maximum(tl.load(base + W, mask=mask, other=0.0), tl.load(base + W + 1, mask=mask, other=0.0)))
    tl.store(y_ptr + offs, v, mask=mask)


@triton.jit
def row_mean_kernel(x_ptr, y_ptr, R, L, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_L)
    mask_r = rows < R
    acc = tl.zeros((BLOCK_R, BLOCK_L), dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        c = l0 + cols
        acc += tl.load(x_ptr + rows[:, None] * L + c[None, :], mask=mask_r[:, None] & (c < L)[None, :], other=0.0)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1) / L, mask=mask_r)


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :], mask=mask_m[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None], mask=k_ok[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    acc += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :])


def conv_relu(x, conv):
    NB, C_IN, H, W = x.shape
    C_OUT = conv.weight.shape[0]
    y = torch.empty((NB, C_OUT, H, W), device=x.device, dtype=torch.float32)
    M = NB * H * W
    bm = max(16, min(128, triton.next_power_of_2(M)))
    bn = max(16, min(128, triton.next_power_of_2(C_OUT)))
    bk = max(16, min(32, triton.next_power_of_2(C_IN * 9)))
    conv3x3_relu_kernel[(triton.cdiv(M, bm), triton.cdiv(C_OUT, bn))](
        x, conv.weight, conv.bias, y, NB, C_IN, H, W, C_OUT, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        num_warps=8, num_stages=2)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, c1: int, c2: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = nn.Linear(c2, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y1 = conv_relu(x, self.conv1)
        NB, C1, H, W = y1.shape
        OH, OW = H // 2, W // 2
        p = torch.empty((NB, C1, OH, OW), device=x.device, dtype=torch.float32)
        total = p.numel()
        blk = max(16, min(1024, triton.next_power_of_2(total)))
        maxpool2x2_kernel[(triton.cdiv(total, blk),)](y1, p, total, H, W, OH, OW, BLOCK=blk, num_warps=4)
        y2 = conv_relu(p, self.conv2)
        C2 = y2.shape[1]
        R, L = NB * C2, OH * OW
        feat = torch.empty((NB, C2), device=x.device, dtype=torch.float32)
        br = max(2, min(16, triton.next_power_of_2(R)))
        bl = max(16, min(256, triton.next_power_of_2(L)))
        row_mean_kernel[(triton.cdiv(R, br),)](y2, feat, R, L, BLOCK_R=br, BLOCK_L=bl, num_warps=4)
        w = self.fc.weight
        N = w.shape[0]
        out = torch.empty((NB, N), device=x.device, dtype=torch.float32)
        bm = max(16, min(64, triton.next_power_of_2(NB)))
        bn = max(16, min(64, triton.next_power_of_2(N)))
        bk = max(16, min(32, triton.next_power_of_2(C2)))
        linear_kernel[(triton.cdiv(NB, bm), triton.cdiv(N, bn))](feat, w, self.fc.bias, out, NB, N, C2,
                                                                 feat.stride(0), w.stride(0), out.stride(0),
                                                                 BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=4)
        return out
