import torch
import torch.nn as nn

METADATA = {"tags": ["gemv", "reduction"], "family": "gemv", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """fp32 matrix-vector product y = A @ x, A of shape (M, K), x of shape (K,)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


def get_input_sets():
    return {
        "bench": dict(m=16384, k=24576),
        "check": dict(m=48, k=96),
        "sweep_odd": dict(m=97, k=531),
    }


def get_inputs(m=16384, k=24576):
    return [torch.randn(m, k), torch.randn(k)]


def get_init_inputs():
    return []
