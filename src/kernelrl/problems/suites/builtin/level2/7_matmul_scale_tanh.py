import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "scale", "tanh", "activation", "fused"], "family": "matmul_scale_tanh", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """tanh(scale * (A @ B)) for a constant scale given at construction."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.matmul(a, b) * self.scale)


def get_input_sets():
    return {
        "bench": dict(m=4096, k=4096, n=4096),
        "check": dict(m=16, k=32, n=48),
        "sweep_odd": dict(m=67, k=89, n=131),
    }


def get_inputs(m=4096, k=4096, n=4096):
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs(k=4096):
    return [1.5 / k ** 0.5]
