import torch
import torch.nn as nn

METADATA = {"tags": ["gemm"], "difficulty": 3, "dtype": "float32"}

N = 4096


class Model(nn.Module):
    """Square fp32 matrix product C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
