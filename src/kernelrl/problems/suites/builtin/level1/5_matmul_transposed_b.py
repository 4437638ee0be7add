import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "transpose"], "family": "gemm", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """fp32 matrix product with a transposed second operand: C = A @ B.T, A of shape (M, K), B of shape (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.T)


def get_input_sets():
    return {
        "bench": dict(m=4096, k=2048, n=4096),
        "check": dict(m=32, k=16, n=48),
        "sweep_odd": dict(m=97, k=131, n=61),
    }


def get_inputs(m=4096, k=2048, n=4096):
    return [torch.randn(m, k), torch.randn(n, k)]


def get_init_inputs():
    return []
