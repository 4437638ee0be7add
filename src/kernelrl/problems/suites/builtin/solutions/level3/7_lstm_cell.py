# Reference solution (Triton) for level3/7_lstm_cell.
# One fused kernel: each program owns a (batch rows x hidden units) tile and accumulates the four gate GEMM
# tiles (i, f, g, o) over x @ W_ih^T and then h @ W_hh^T (tl.dot in 3xTF32 (fp32-accurate, fp32
# accumulation)), then computes c_new and h_new in the epilogue and writes both.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0, t, -t)


@triton.jit
def _gates_accumulate(a_ptr, w_ptr, offs_m, offs_n, mask_m, mask_n, K, H, stride_ab, stride_ak, stride_wn, stride_wk,
                      acc_i, acc_f, acc_g, acc_o, BLOCK_K: tl.constexpr):
    offs_k = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        a = tl.load(a_ptr + offs_m[:, None] * stride_ab + ks[None, :] * stride_ak,
                    mask=mask_m[:, None] & k_ok[None, :], other=0.0)
        wmask = k_ok[:, None] & mask_n[None, :]
        w_off = offs_n[None, :] * stride_wn + ks[:, None] * stride_wk
        acc_i = tl.dot(a, tl.load(w_ptr + w_off, mask=wmask, other=0.0), acc_i, input_precision="tf32x3")
        acc_f = tl.dot(a, tl.load(w_ptr + H * stride_wn + w_off, mask=wmask, other=0.0), acc_f,
                       input_precision="tf32x3")
        acc_g = tl.dot(a, tl.load(w_ptr + 2 * H * stride_wn + w_off, mask=wmask, other=0.0), acc_g,
                       input_precision="tf32x3")
        acc_o = tl.dot(a, tl.load(w_ptr + 3 * H * stride_wn + w_off, mask=wmask, other=0.0), acc_o,
                       input_precision="tf32x3")
    return acc_i, acc_f, acc_g, acc_o


@triton.jit
def lstm_cell_kernel(x_ptr, h_ptr, c_ptr, wih_ptr, whh_ptr, bih_ptr, bhh_ptr, hout_ptr, cout_ptr, B, I, H,
                     stride_xb, stride_xk, stride_hb, stride_hk, stride_cb, stride_ch,
                     stride_wih_n, stride_wih_k, stride_whh_n, stride_whh_k, stride_ob, stride_oh,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < B
    mask_n = offs_n < H
    acc_i = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_f = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_o = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_i, acc_f, acc_g, acc_o = _gates_accumulate(x_ptr, wih_ptr, offs_m, offs_n, mask_m, mask_n, I, H,
                                                   stride_xb, stride_xk, stride_wih_n, stride_wih_k,
                                                   acc_i, acc_f, acc_g, acc_o, BLOCK_K)
    acc_i, acc_f, acc_g, acc_o = _gates_accumulate(h_ptr, whh_ptr, offs_m, offs_n, mask_m, mask_n, H, H,
                                                   stride_hb, stride_hk, stride_whh_n, stride_whh_k,
                                                   acc_i, acc_f, acc_g, acc_o, BLOCK_K)
    bi = tl.load(bih_ptr + offs_n, mask=mask_n, other=0.0) + tl.load(bhh_ptr + offs_n, mask=mask_n, other=0.0)
    bf = tl.load(bih_ptr + H + offs_n, mask=mask_n, other=0.0) + tl.load(bhh_ptr + H + offs_n, mask=mask_n, other=0.0)
    bg = (tl.load(bih_ptr + 2 * H + offs_n, mask=mask_n, other=0.0)
          + tl.load(bhh_ptr + 2 * H + offs_n, mask=mask_n, other=0.0))
    bo = (tl.load(bih_ptr + 3 * H + offs_n, mask=mask_n, other=0.0)
          + tl.load(bhh_ptr + 3 * H + offs_n, mask=mask_n, other=0.0))
    i = _sigmoid(acc_i + bi[None, :])
    f = _sigmoid(acc_f + bf[None, :])
    g = _tanh(acc_g + bg[None, :])
    o = _sigmoid(acc_o + bo[None, :])
    mask = mask_m[:, None] & mask_n[None, :]
    c_old = tl.load(c_ptr + offs_m[:, None] * stride_cb + offs_n[None, :] * stride_ch, mask=mask, other=0.0)
    c_new = f * c_old + i * g
    h_new = o * _tanh(c_new)
    out_off = offs_m[:, None] * stride_ob + offs_n[None, :] * stride_oh
    tl.store(cout_ptr + out_off, c_new, mask=mask)
    tl.store(hout_ptr + out_off, h_new, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        B, I = x.shape
        H = h.shape[1]
        wih, whh = self.cell.weight_ih, self.cell.weight_hh
        h_new = torch.empty((B, H), device=x.device, dtype=torch.float32)
        c_new = torch.empty((B, H), device=x.device, dtype=torch.float32)
        bm = max(16, min(128, triton.next_power_of_2(B)))
        bn = max(16, min(64, triton.next_power_of_2(H)))
        bk = max(16, min(32, triton.next_power_of_2(max(I, H))))
        grid = (triton.cdiv(H, bn), triton.cdiv(B, bm))
        lstm_cell_kernel[grid](x, h, c, wih, whh, self.cell.bias_ih, self.cell.bias_hh, h_new, c_new, B, I, H,
                               x.stride(0), x.stride(1), h.stride(0), h.stride(1), c.stride(0), c.stride(1),
                               wih.stride(0), wih.stride(1), whh.stride(0), whh.stride(1),
                               h_new.stride(0), h_new.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                               num_warps=8, num_stages=2)
        return h_new, c_new
