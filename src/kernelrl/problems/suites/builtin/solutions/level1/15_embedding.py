# Reference solution (Triton) for level1/15_embedding: each program copies BLOCK_T gathered rows, BLOCK_D columns.
# The table is created like the reference's nn.Embedding, so seeding gives it the same values.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(idx_ptr, w_ptr, out_ptr, n_tokens, dim, stride_w, stride_out,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    tok_mask = toks < n_tokens
    rows = tl.load(idx_ptr + toks, mask=tok_mask, other=0)
    mask = tok_mask[:, None] & (cols[None, :] < dim)
    vals = tl.load(w_ptr + rows[:, None] * stride_w + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + toks[:, None].to(tl.int64) * stride_out + cols[None, :], vals, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        weight = self.embedding.weight.contiguous()
        idx = indices.contiguous().view(-1)
        n_tokens = idx.numel()
        dim = weight.shape[1]
        out = torch.empty((n_tokens, dim), device=weight.device, dtype=weight.dtype)
        block_d = min(1024, triton.next_power_of_2(dim))
        block_t = max(1, 4096 // block_d)
        grid = (triton.cdiv(n_tokens, block_t), triton.cdiv(dim, block_d))
        embedding_kernel[grid](idx, weight, out, n_tokens, dim, weight.stride(0), out.stride(0),
                               BLOCK_T=block_t, BLOCK_D=block_d, num_warps=4)
        return out.view(*indices.shape, dim)
