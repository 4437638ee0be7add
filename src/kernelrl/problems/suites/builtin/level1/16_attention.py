import torch
import torch.nn as nn

METADATA = {"tags": ["attention", "softmax", "gemm"], "family": "attention", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Non-causal scaled dot-product attention softmax(q k^T / sqrt(d)) v on (batch, heads, seq, head_dim) inputs."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_input_sets():
    return {
        "bench": dict(batch=16, heads=16, seq=1024, head_dim=64),
        "check": dict(batch=1, heads=2, seq=32, head_dim=16),
        "sweep_odd": dict(batch=2, heads=3, seq=37, head_dim=24),
    }


def get_inputs(batch=16, heads=16, seq=1024, head_dim=64):
    shape = (batch, heads, seq, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
