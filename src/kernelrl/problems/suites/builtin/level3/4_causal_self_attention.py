import torch
import torch.nn as nn

METADATA = {"tags": ["attention", "causal_mask", "softmax", "gemm"], "family": "causal_attention", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """GPT-style causal self-attention: fused qkv Linear, causal masked softmax per head, output projection."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        with torch.no_grad():  # sharper attention than the default init (q and k rows scaled; scores ~3 std)
            self.qkv.weight[: 2 * dim].mul_(3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).reshape(b, s, d)
        return self.proj(y)


def get_input_sets():
    return {
        "bench": dict(batch=8, seq=1024, dim=1024, heads=16),
        "check": dict(batch=2, seq=8, dim=32, heads=4),
        "sweep_odd": dict(batch=3, seq=13, dim=40, heads=4),
    }


def get_inputs(batch=8, seq=1024, dim=1024):
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(dim=1024, heads=16):
    return [dim, heads]
