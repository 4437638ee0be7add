import torch
import torch.nn as nn

METADATA = {"tags": ["bmm", "gemm", "scale", "softmax", "reduction", "attention", "fused"], "family": "bmm_softmax", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Batched attention-style scores: softmax(bmm(q, k) * scale, dim=-1), q (B, M, K), k (B, K, N)."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.bmm(q, k) * self.scale, dim=-1)


def get_input_sets():
    return {
        "bench": dict(batch=128, m=2048, k=512, n=256),
        "check": dict(batch=2, m=16, k=32, n=32),
        "sweep_odd": dict(batch=3, m=23, k=41, n=57),
    }


def get_inputs(batch=128, m=2048, k=512, n=256):
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs(k=512):
    return [2.0 / k ** 0.5]
