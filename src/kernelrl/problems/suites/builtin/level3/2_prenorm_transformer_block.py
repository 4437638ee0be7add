import torch
import torch.nn as nn

METADATA = {
    "tags": ["layernorm", "attention", "softmax", "gemm", "gelu", "residual", "transformer"],
    "family": "transformer_block",
    "difficulty": 5,
    "dtype": "float32",
}


class Model(nn.Module):
    """Pre-norm transformer block: x + MHA(LN1(x)), then + MLP(LN2(x)) with GELU; attention is bidirectional."""

    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.ln1 = nn.LayerNorm(dim)
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        with torch.no_grad():
            for ln in (self.ln1, self.ln2):
                ln.weight.copy_(1.0 + 0.2 * torch.randn(dim))
                ln.bias.copy_(0.1 * torch.randn(dim))
            # sharper attention than the default init (scores ~3 std), so outputs are not a near-uniform average
            self.q_proj.weight.mul_(3.0)
            self.k_proj.weight.mul_(3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.ln1(x)
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * (self.head_dim ** -0.5)
        attn = torch.softmax(scores, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o_proj(y)
        x = x + self.fc2(self.act(self.fc1(self.ln2(x))))
        return x


def get_input_sets():
    return {
        "bench": dict(batch=8, seq=1024, dim=1024, heads=16, hidden=4096),
        "check": dict(batch=2, seq=8, dim=32, heads=4, hidden=64),
        "sweep_odd": dict(batch=3, seq=13, dim=72, heads=6, hidden=136),
    }


def get_inputs(batch=8, seq=1024, dim=1024):
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(dim=1024, heads=16, hidden=4096):
    return [dim, heads, hidden]
