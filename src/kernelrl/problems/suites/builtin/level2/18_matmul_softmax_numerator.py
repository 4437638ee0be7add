import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "scale", "reduction", "max", "exp", "softmax", "fused"], "family": "matmul_softmax_numerator", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Unnormalized softmax numerator of scaled scores: S = (A @ B) * scale, out = exp(S - rowmax(S))."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        s = torch.matmul(a, b) * self.scale
        return torch.exp(s - s.amax(dim=-1, keepdim=True))


def get_input_sets():
    return {
        "bench": dict(m=4096, k=4096, n=4096),
        "check": dict(m=16, k=32, n=64),
        "sweep_odd": dict(m=37, k=71, n=123),
    }


def get_inputs(m=4096, k=4096, n=4096):
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs(k=4096):
    return [1.0 / k ** 0.5]
