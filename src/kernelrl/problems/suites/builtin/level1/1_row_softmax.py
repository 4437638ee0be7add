import torch
import torch.nn as nn

METADATA = {"tags": ["softmax", "reduction"], "family": "softmax", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Softmax over the last dimension of a 2D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_input_sets():
    return {
        "bench": dict(rows=262144, cols=1024),
        "check": dict(rows=16, cols=100),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=262144, cols=1024):
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
