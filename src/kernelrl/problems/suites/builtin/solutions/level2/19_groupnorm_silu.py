# Reference solution (Triton) for level2/19_groupnorm_silu: one program per (sample, group). A (sample, group)
# slice of a contiguous NCHW tensor is contiguous, so pass 1 accumulates shifted sums / sums of squares over
# it in blocks and pass 2 normalizes, applies the per-channel affine and SiLU.
# Parameters are created in the same order as the reference's, so seeding gives them the same values.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_silu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, group_size, hw, channels_per_group, num_groups, eps,
                          BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    group = pid % num_groups
    base = pid.to(tl.int64) * group_size
    offs = tl.arange(0, BLOCK)
    shift = tl.load(x_ptr + base)  # shifting by one sample of the group keeps sum/sum-of-squares well conditioned
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, group_size, BLOCK):
        idx = start + offs
        mask = idx < group_size
        x = tl.load(x_ptr + base + idx, mask=mask, other=0.0)
        d = tl.where(mask, x - shift, 0.0)
        acc += d
        acc2 += d * d
    mean_d = tl.sum(acc, axis=0) / group_size
    var = tl.maximum(tl.sum(acc2, axis=0) / group_size - mean_d * mean_d, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    mean = shift + mean_d
    c0 = group * channels_per_group
    for start in range(0, group_size, BLOCK):
        idx = start + offs
        mask = idx < group_size
        c = c0 + idx // hw
        x = tl.load(x_ptr + base + idx, mask=mask, other=0.0)
        w = tl.load(w_ptr + c, mask=mask, other=0.0)
        b = tl.load(b_ptr + c, mask=mask, other=0.0)
        z = (x - mean) * rstd * w + b
        tl.store(y_ptr + base + idx, z * tl.sigmoid(z), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, channels: int, eps: float = 1e-5):
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(channels))
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c = x.shape[0], x.shape[1]
        hw = x.numel() // (n * c) if n * c > 0 else 0
        cpg = c // self.num_groups
        group_size = cpg * hw
        y = torch.empty_like(x)
        block = min(4096, triton.next_power_of_2(group_size))
        groupnorm_silu_kernel[(n * self.num_groups,)](x, self.weight, self.bias, y, group_size, hw, cpg,
                                                      self.num_groups, self.eps, BLOCK=block, num_warps=8)
        return y
