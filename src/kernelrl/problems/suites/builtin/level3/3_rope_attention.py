import torch
import torch.nn as nn

METADATA = {"tags": ["attention", "rope", "softmax", "gemm", "trig"], "family": "rope_attention", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Multi-head self-attention with rotary position embeddings (rotate-half) on q and k, then output projection."""

    def __init__(self, dim: int, heads: int, base: float = 10000.0):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.base = base
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)
        with torch.no_grad():  # sharper attention than the default init (scores ~3 std)
            self.q_proj.weight.mul_(3.0)
            self.k_proj.weight.mul_(3.0)

    def rope(self, t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = self.head_dim // 2
        rotated = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
        return t * cos + rotated * sin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        positions = torch.arange(s, device=x.device, dtype=torch.float32)
        exponents = torch.arange(0, self.head_dim, 2, device=x.device, dtype=torch.float32) / self.head_dim
        inv_freq = 1.0 / (self.base ** exponents)
        angles = torch.outer(positions, inv_freq)            # (s, head_dim/2)
        angles = torch.cat([angles, angles], dim=-1)          # (s, head_dim)
        cos, sin = angles.cos(), angles.sin()
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        q = self.rope(q, cos, sin)
        k = self.rope(k, cos, sin)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        attn = torch.softmax(scores, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).reshape(b, s, d)
        return self.o_proj(y)


def get_input_sets():
    return {
        "bench": dict(batch=8, seq=1024, dim=1024, heads=16),
        "check": dict(batch=2, seq=8, dim=32, heads=4),
        "sweep_odd": dict(batch=3, seq=13, dim=72, heads=6),
    }


def get_inputs(batch=8, seq=1024, dim=1024):
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(dim=1024, heads=16):
    return [dim, heads]
