import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "leaky_relu"], "family": "leaky_relu", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Leaky ReLU with a configurable negative slope, applied elementwise."""

    def __init__(self, negative_slope: float = 0.2):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384, negative_slope=0.2),
        "check": dict(rows=16, cols=192, negative_slope=0.2),
        "sweep_odd": dict(rows=41, cols=1531, negative_slope=0.05),
    }


def get_inputs(rows=16384, cols=16384):
    return [torch.randn(rows, cols)]


def get_init_inputs(negative_slope=0.2):
    return [negative_slope]
