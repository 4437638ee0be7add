# Reference solution (Triton) for level0/15_cubic_polynomial.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cubic_kernel(x_ptr, y_ptr, n_elements, c0, c1, c2, c3, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # Horner form of c0 + c1 x + c2 x^2 + c3 x^3
    y = ((c3 * x + c2) * x + c1) * x + c0
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, c0: float = 0.5, c1: float = -1.25, c2: float = 0.75, c3: float = 0.2):
        super().__init__()
        self.c0 = c0
        self.c1 = c1
        self.c2 = c2
        self.c3 = c3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        cubic_kernel[(triton.cdiv(n, block),)](x, y, n, self.c0, self.c1, self.c2, self.c3, BLOCK=block, num_warps=8)
        return y
