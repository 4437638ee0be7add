# Reference solution (Triton) for level3/9_swiglu_ffn.
# Kernel 1: one tiled dual GEMM computing the gate and up projections from the same x tiles (two fp32
# accumulators) with silu(gate) * up fused in the epilogue. Kernel 2: the down projection GEMM.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % group_m
    pid_n = (pid % group_size) // group_m
    return pid_m, pid_n


@triton.jit
def gate_up_kernel(x_ptr, wg_ptr, wu_ptr, y_ptr, M, N, K,
                   stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_off = offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + offs_k) < K
        a = tl.load(x_ptrs, mask=mask_m[:, None] & k_ok[None, :], other=0.0)
        wmask = k_ok[:, None] & mask_n[None, :]
        g = tl.load(wg_ptr + w_off, mask=wmask, other=0.0)
        u = tl.load(wu_ptr + w_off, mask=wmask, other=0.0)
        acc_g = tl.dot(a, g, acc_g, input_precision="tf32x3")
        acc_u = tl.dot(a, u, acc_u, input_precision="tf32x3")
        x_ptrs += BLOCK_K * stride_xk
        w_off += BLOCK_K * stride_wk
    out = acc_g * tl.sigmoid(acc_g) * acc_u
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, out,
             mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def matmul_wt_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
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
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, acc,
             mask=mask_m[:, None] & mask_n[None, :])


def _blocks(M, N, K, cap_n):
    return (max(16, min(128, triton.next_power_of_2(M))), max(16, min(cap_n, triton.next_power_of_2(N))),
            max(16, min(32, triton.next_power_of_2(K))))


class ModelNew(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        M, K = x2.shape
        wg, wu, wd = self.w_gate.weight, self.w_up.weight, self.w_down.weight
        H = wg.shape[0]
        h = torch.empty((M, H), device=x.device, dtype=torch.float32)
        bm, bn, bk = _blocks(M, H, K, 64)
        gate_up_kernel[(triton.cdiv(M, bm) * triton.cdiv(H, bn),)](
            x2, wg, wu, h, M, H, K, x2.stride(0), x2.stride(1), wg.stride(0), wg.stride(1), h.stride(0), h.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=8, num_stages=3)
        D = wd.shape[0]
        y = torch.empty((M, D), device=x.device, dtype=torch.float32)
        bm, bn, bk = _blocks(M, D, H, 128)
        matmul_wt_kernel[(triton.cdiv(M, bm) * triton.cdiv(D, bn),)](
            h, wd, y, M, D, H, h.stride(0), h.stride(1), wd.stride(0), wd.stride(1), y.stride(0), y.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=8, num_stages=3)
        return y.view(*shape[:-1], D)
