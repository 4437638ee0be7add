import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["attention", "softmax", "gemm", "causal"], "family": "attention", "difficulty": 4,
            "dtype": "float32"}


class Model(nn.Module):
    """Causal scaled dot-product attention (query i attends to keys j <= i) on (batch, heads, seq, head_dim) inputs."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_input_sets():
    return {
        "bench": dict(batch=16, heads=16, seq=2048, head_dim=64),
        "check": dict(batch=1, heads=2, seq=32, head_dim=16),
        "sweep_odd": dict(batch=2, heads=3, seq=53, head_dim=40),
    }


def get_inputs(batch=16, heads=16, seq=2048, head_dim=64):
    shape = (batch, heads, seq, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
