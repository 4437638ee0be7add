# Reference solution (Triton) for level3/2_prenorm_transformer_block.
# LayerNorm kernel (one row per program, fp32 statistics) -> q/k/v GEMMs + bias -> fused flash attention
# (online softmax, tl.dot in 3xTF32 (fp32-accurate, fp32 accumulation), heads read through strides) -> o_proj
# GEMM with bias and the residual add fused -> LayerNorm -> fc1 GEMM with bias + exact GELU fused -> fc2 GEMM
# with bias and residual add fused.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_ym + offs, d * rstd * w + b, mask=mask)


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, r_ptr, y_ptr, M, N, K,
                  stride_xm, stride_xk, stride_wn, stride_wk, stride_rm, stride_ym,
                  GELU: tl.constexpr, RESIDUAL: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # y = act(x @ W^T + b) (+ r); r and y have unit column stride
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
    mask = mask_m[:, None] & mask_n[None, :]
    z = acc + tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    if GELU:
        z = 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))
    if RESIDUAL:
        z += tl.load(r_ptr + offs_m[:, None] * stride_rm + offs_n[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], z, mask=mask)


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


def layernorm(x, ln):
    M, N = x.shape
    y = torch.empty_like(x)
    layernorm_kernel[(M,)](x, ln.weight, ln.bias, y, N, ln.eps, x.stride(0), y.stride(0),
                           BLOCK_N=triton.next_power_of_2(N), num_warps=4)
    return y


def linear(x, lin, residual=None, gelu=False):
    M, K = x.shape
    w = lin.weight
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=torch.float32)
    r = residual if residual is not None else y
    bm = max(16, min(128, triton.next_power_of_2(M)))
    bn = max(16, min(128, triton.next_power_of_2(N)))
    bk = max(16, min(32, triton.next_power_of_2(K)))
    linear_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        x, w, lin.bias, r, y, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), r.stride(0), y.stride(0),
        GELU=gelu, RESIDUAL=residual is not None, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
        num_warps=8, num_stages=3)
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
    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.ln1 = nn.LayerNorm(dim)
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        with torch.no_grad():
            for ln in (self.ln1, self.ln2):
                ln.weight.copy_(1.0 + 0.2 * torch.randn(dim))
                ln.bias.copy_(0.1 * torch.randn(dim))
            self.q_proj.weight.mul_(3.0)
            self.k_proj.weight.mul_(3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, D = x.shape
        M = B * S
        x2 = x.reshape(M, D).contiguous()
        h = layernorm(x2, self.ln1)
        q = linear(h, self.q_proj).view(B, S, D)
        k = linear(h, self.k_proj).view(B, S, D)
        v = linear(h, self.v_proj).view(B, S, D)
        y = attention(q, k, v, self.heads, False)
        x2 = linear(y.view(M, D), self.o_proj, residual=x2)
        f = linear(layernorm(x2, self.ln2), self.fc1, gelu=True)
        return linear(f, self.fc2, residual=x2).view(B, S, D)
