# Reference solution (Triton) for level1/23_softmax_dim1_3d.
# One program per (batch, block of positions along the contiguous last dim); it holds all c channels of
# BLOCK_L positions, so loads are coalesced along the last dimension and the softmax runs down axis 0.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_dim1_kernel(x_ptr, y_ptr, c, length, stride_b, stride_c,
                        BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    pos = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    ch = tl.arange(0, BLOCK_C)
    mask = (ch[:, None] < c) & (pos[None, :] < length)
    offs = b * stride_b + ch[:, None] * stride_c + pos[None, :]
    # finite sentinel: padded lanes get exp(...) = 0 and fully padded columns stay NaN-free
    x = tl.load(x_ptr + offs, mask=mask, other=-1e30)
    x = x - tl.max(x, axis=0)[None, :]
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + offs, num / den[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        b, c, length = x.shape
        y = torch.empty_like(x)
        block_c = triton.next_power_of_2(c)
        block_l = max(1, min(triton.next_power_of_2(length), 4096 // block_c, 128))
        grid = (b, triton.cdiv(length, block_l))
        softmax_dim1_kernel[grid](x, y, c, length, x.stride(0), x.stride(1),
                                  BLOCK_C=block_c, BLOCK_L=block_l, num_warps=4)
        return y
