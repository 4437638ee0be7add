import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "polynomial", "fused_chain"], "family": "polynomial", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Elementwise cubic polynomial y = c0 + c1*x + c2*x^2 + c3*x^3 with fixed scalar coefficients."""

    def __init__(self, c0: float = 0.5, c1: float = -1.25, c2: float = 0.75, c3: float = 0.2):
        super().__init__()
        self.c0 = c0
        self.c1 = c1
        self.c2 = c2
        self.c3 = c3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c0 + self.c1 * x + self.c2 * x * x + self.c3 * x * x * x


def get_input_sets():
    return {
        "bench": dict(rows=8192, cols=16384),
        "check": dict(rows=16, cols=256),
        "sweep_odd": dict(rows=101, cols=739),
    }


def get_inputs(rows=8192, cols=16384):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [0.5, -1.25, 0.75, 0.2]
