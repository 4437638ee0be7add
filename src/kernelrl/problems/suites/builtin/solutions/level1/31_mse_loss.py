# Reference solution (Triton) for level1/31_mse_loss.
# Kernel 1: each program sums (a-b)^2 over a contiguous chunk of BLOCK*ITERS elements into one partial;
# kernel 2: one program adds the partials in a fixed order and divides by the element count.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sqdiff_partial_kernel(a_ptr, b_ptr, part_ptr, numel, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * (BLOCK * ITERS)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        idx = start + i * BLOCK + offs
        mask = idx < numel
        a = tl.load(a_ptr + idx, mask=mask, other=0.0)
        b = tl.load(b_ptr + idx, mask=mask, other=0.0)
        diff = a - b
        acc += diff * diff
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def finish_kernel(part_ptr, out_ptr, n_parts, numel, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_parts, BLOCK):
        idx = i + offs
        acc += tl.load(part_ptr + idx, mask=idx < n_parts, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / numel)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred = pred.contiguous()
        target = target.contiguous()
        numel = pred.numel()
        block = min(4096, triton.next_power_of_2(numel))
        iters = 16
        n_parts = triton.cdiv(numel, block * iters)
        parts = torch.empty((n_parts,), dtype=torch.float32, device=pred.device)
        out = torch.empty((), dtype=torch.float32, device=pred.device)
        sqdiff_partial_kernel[(n_parts,)](pred, target, parts, numel, BLOCK=block, ITERS=iters,
                                          num_warps=8 if block >= 2048 else 4)
        finish_kernel[(1,)](parts, out, n_parts, numel, BLOCK=min(4096, triton.next_power_of_2(n_parts)),
                            num_warps=4)
        return out
