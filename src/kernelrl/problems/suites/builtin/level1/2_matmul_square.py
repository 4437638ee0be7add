import torch
import torch.nn as nn

METADATA = {"tags": ["gemm"], "family": "gemm", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """fp32 matrix product C = A @ B (square at bench size)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_input_sets():
    return {
        "bench": dict(m=4096, k=4096, n=4096),
        "check": dict(m=16, k=32, n=24),
        "sweep_odd": dict(m=97, k=131, n=61),
    }


def get_inputs(m=4096, k=4096, n=4096):
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
