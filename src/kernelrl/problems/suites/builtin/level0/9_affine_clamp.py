import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "affine", "clamp"], "family": "affine_clamp", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Scalar affine map followed by a clamp: y = clamp(x * alpha + beta, lo, hi)."""

    def __init__(self, alpha: float = 1.5, beta: float = 0.25, lo: float = -2.0, hi: float = 3.0):
        super().__init__()
        self.alpha = alpha
        self.beta = beta
        self.lo = lo
        self.hi = hi

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * self.alpha + self.beta, min=self.lo, max=self.hi)


def get_input_sets():
    return {
        "bench": dict(n=268435456),
        "check": dict(n=4000),
        "sweep_odd": dict(n=65537),
    }


def get_inputs(n=268435456):
    return [torch.randn(n)]


def get_init_inputs():
    return [1.5, 0.25, -2.0, 3.0]
