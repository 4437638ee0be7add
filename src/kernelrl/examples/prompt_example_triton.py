# The prompts' worked example answer (prompt_example_problem.py): a correct Triton kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def half_abs_diff_kernel(x_ptr, z_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    z = tl.load(z_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.abs(x - z) * 0.5, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        z = z.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        half_abs_diff_kernel[(triton.cdiv(n, block),)](x, z, y, n, BLOCK=block)
        return y
