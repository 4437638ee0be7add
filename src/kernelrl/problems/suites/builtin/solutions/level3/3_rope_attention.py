# Reference solution (Triton) for level3/3_rope_attention.
# q, k, v projections (tiled GEMM + bias) -> one RoPE kernel that rotates q and k in place (angles pos *
# base^(-2j/dh) and their cos/sin computed in-kernel, with an explicit 2*pi range reduction) -> fused flash
# attention (online softmax, tl.dot in 3xTF32 (fp32-accurate, fp32 accumulation)) reading heads through
# strides -> output projection GEMM.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_kernel(q_ptr, k_ptr, M, S, H, DH, HALF, log2_base, stride_qm, stride_km,
                BLOCK_R: tl.constexpr, BLOCK_J: tl.constexpr):
    # q/k: (tokens, heads*DH), token t sits at position t % S; pairs (j, j + HALF) of each head are rotated.
    pid_r = tl.program_id(0)
    h = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    js = tl.arange(0, BLOCK_J)
    mask = (rows < M)[:, None] & (js < HALF)[None, :]
    pos = (rows % S).to(tl.float32)
    expo = (2 * js).to(tl.float32) / DH
    inv_freq = 1.0 / tl.exp2(expo * log2_base)
    ang = pos[:, None] * inv_freq[None, :]
    # range reduction to [-pi, pi]: 2*pi = 6.28125 + 0.0019353071795864769 (k * 6.28125 is exact)
    kq = tl.floor(ang * 0.15915494309189535 + 0.5)
    r = (ang - kq * 6.28125) - kq * 0.0019353071795864769
    c = tl.cos(r)
    s = tl.sin(r)
    col = h * DH + js[None, :]
    qp = q_ptr + rows[:, None] * stride_qm + col
    q1 = tl.load(qp, mask=mask, other=0.0)
    q2 = tl.load(qp + HALF, mask=mask, other=0.0)
    tl.store(qp, q1 * c - q2 * s, mask=mask)
    tl.store(qp + HALF, q2 * c + q1 * s, mask=mask)
    kp = k_ptr + rows[:, None] * stride_km + col
    k1 = tl.load(kp, mask=mask, other=0.0)
    k2 = tl.load(kp + HALF, mask=mask, other=0.0)
    tl.store(kp, k1 * c - k2 * s, mask=mask)
    tl.store(kp + HALF, k2 * c + k1 * s, mask=mask)


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                  stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + offs_k) < K
        a = tl.load(x_ptrs, mask=mask_m[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, acc,
             mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _attn_block(q, acc, m_i, l_i, k_base, v_base, stride_ks, stride_vs, n0, offs_m, offs_n, offs_d, mask_d, S, scale,
                MODE: tl.constexpr):
    # One key/value block of the online softmax. MODE 0: all columns valid; 1: columns < S; 2: also causal.
    cols = n0 + offs_n
    mask_n = cols < S
    kt = tl.load(k_base + cols[None, :] * stride_ks + offs_d[:, None],
                 mask=mask_d[:, None] & mask_n[None, :], other=0.0)                 # (BLOCK_D, BLOCK_N)
    s = tl.dot(q, kt, input_precision="tf32x3") * scale
    if MODE == 1:
        s = tl.where(mask_n[None, :], s, float("-inf"))
    if MODE == 2:
        s = tl.where(mask_n[None, :] & (cols[None, :] <= offs_m[:, None]), s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, axis=1)
    v = tl.load(v_base + cols[:, None] * stride_vs + offs_d[None, :], mask=mask_n[:, None] & mask_d[None, :], other=0.0)
    acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="tf32x3")
    return acc, m_new, l_i


@triton.jit
def flash_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, H, DH, scale,
                      stride_qb, stride_qs, stride_kb, stride_ks, stride_vb, stride_vs, stride_ob, stride_os,
                      CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # q/k/v/o: (batch, seq, heads*DH) views with unit stride inside a row; head h owns columns [h*DH, (h+1)*DH).
    # Causal: key blocks left of the diagonal block need no mask; the diagonal block is masked; the rest skipped.
    # (BLOCK_N must divide BLOCK_M.)
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < S
    mask_d = offs_d < DH
    q = tl.load(q_ptr + b * stride_qb + offs_m[:, None] * stride_qs + h * DH + offs_d[None, :],
                mask=mask_m[:, None] & mask_d[None, :], other=0.0)
    k_base = k_ptr + b * stride_kb + h * DH
    v_base = v_ptr + b * stride_vb + h * DH
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    if CAUSAL:
        diag = pid_m * BLOCK_M
        for n0 in range(0, diag, BLOCK_N):
            acc, m_i, l_i = _attn_block(q, acc, m_i, l_i, k_base, v_base, stride_ks, stride_vs, n0, offs_m, offs_n,
                                        offs_d, mask_d, S, scale, 0)
        for n0 in range(diag, tl.minimum(S, diag + BLOCK_M), BLOCK_N):
            acc, m_i, l_i = _attn_block(q, acc, m_i, l_i, k_base, v_base, stride_ks, stride_vs, n0, offs_m, offs_n,
                                        offs_d, mask_d, S, scale, 2)
    else:
        for n0 in range(0, S, BLOCK_N):
            acc, m_i, l_i = _attn_block(q, acc, m_i, l_i, k_base, v_base, stride_ks, stride_vs, n0, offs_m, offs_n,
                                        offs_d, mask_d, S, scale, 1)
    out = acc / l_i[:, None]
    tl.store(o_ptr + b * stride_ob + offs_m[:, None] * stride_os + h * DH + offs_d[None, :], out,
             mask=mask_m[:, None] & mask_d[None, :])


def linear(x, w, b):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    bm = max(16, min(128, triton.next_power_of_2(M)))
    bn = max(16, min(128, triton.next_power_of_2(N)))
    bk = max(16, min(32, triton.next_power_of_2(K)))
    linear_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        x, w, b, y, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=8, num_stages=3)
    return y


def attention(q, k, v, heads, causal):
    B, S, D = q.shape
    dh = D // heads
    o = torch.empty((B, S, D), device=q.device, dtype=torch.float32)
    bm = max(16, min(64, triton.next_power_of_2(S)))
    bd = max(16, triton.next_power_of_2(dh))
    grid = (triton.cdiv(S, bm), B * heads)
    flash_attn_kernel[grid](q, k, v, o, S, heads, dh, dh ** -0.5,
                            q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                            o.stride(0), o.stride(1), CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bm, BLOCK_D=bd,
                            num_warps=4, num_stages=2)
    return o


class ModelNew(nn.Module):
    def __init__(self, dim: int, heads: int, base: float = 10000.0):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.base = base
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)
        with torch.no_grad():
            self.q_proj.weight.mul_(3.0)
            self.k_proj.weight.mul_(3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, D = x.shape
        M = B * S
        x2 = x.reshape(M, D).contiguous()
        q = linear(x2, self.q_proj.weight, self.q_proj.bias)
        k = linear(x2, self.k_proj.weight, self.k_proj.bias)
        v = linear(x2, self.v_proj.weight, self.v_proj.bias)
        half = self.head_dim // 2
        br = max(16, min(64, triton.next_power_of_2(M)))
        rope_kernel[(triton.cdiv(M, br), self.heads)](q, k, M, S, self.heads, self.head_dim, half,
                                                      math.log2(self.base), q.stride(0), k.stride(0),
                                                      BLOCK_R=br, BLOCK_J=triton.next_power_of_2(half), num_warps=4)
        y = attention(q.view(B, S, D), k.view(B, S, D), v.view(B, S, D), self.heads, False)
        return linear(y.view(M, D), self.o_proj.weight, self.o_proj.bias).view(B, S, D)
