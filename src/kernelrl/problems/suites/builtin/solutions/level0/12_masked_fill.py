# Reference solution (Triton) for level0/12_masked_fill.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def masked_fill_kernel(x_ptr, m_ptr, y_ptr, n_elements, value, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    m = tl.load(m_ptr + offsets, mask=mask, other=0)
    tl.store(y_ptr + offsets, tl.where(m != 0, value, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, value: float = -3.5):
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        # bool is one byte per element: read it as uint8
        m = mask.contiguous().view(torch.uint8)
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        masked_fill_kernel[(triton.cdiv(n, block),)](x, m, y, n, self.value, BLOCK=block, num_warps=8)
        return y
