import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "tall_skinny"], "family": "gemm_tall_skinny", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """fp32 matrix product C = A @ B for a tall-skinny A (M >> K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_input_sets():
    return {
        "bench": dict(m=524288, k=256, n=256),
        "check": dict(m=64, k=16, n=32),
        "sweep_odd": dict(m=1031, k=37, n=29),
    }


def get_inputs(m=524288, k=256, n=256):
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
