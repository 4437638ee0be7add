# Reference solution (Triton) for level1/6_matvec: each program owns BLOCK_M rows and streams K in chunks.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(a_ptr, x_ptr, y_ptr, M, K, stride_am, stride_ak, stride_x,
                  BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        col_mask = cols < K
        x = tl.load(x_ptr + cols * stride_x, mask=col_mask, other=0.0)
        a = tl.load(a_ptr + rows[:, None] * stride_am + cols[None, :] * stride_ak,
                    mask=row_mask[:, None] & col_mask[None, :], other=0.0)
        acc += a * x[None, :]
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        M, K = a.shape
        y = torch.empty(M, device=a.device, dtype=torch.float32)
        block_m = 8
        block_k = min(512, triton.next_power_of_2(K))
        matvec_kernel[(triton.cdiv(M, block_m),)](a, x, y, M, K, a.stride(0), a.stride(1), x.stride(0),
                                                  BLOCK_M=block_m, BLOCK_K=block_k, num_warps=4)
        return y
