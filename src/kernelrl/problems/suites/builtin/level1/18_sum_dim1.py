import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "sum"], "family": "sum", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Sum of a 3D tensor (batch, n, d) over its middle dimension, giving (batch, d)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_input_sets():
    return {
        "bench": dict(batch=128, n=2048, d=1536),
        "check": dict(batch=4, n=24, d=40),
        "sweep_odd": dict(batch=3, n=37, d=131),
    }


def get_inputs(batch=128, n=2048, d=1536):
    return [torch.randn(batch, n, d)]


def get_init_inputs():
    return []
