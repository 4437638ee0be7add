import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "activation"], "family": "relu", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Elementwise ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384),
        "check": dict(rows=16, cols=256),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=16384, cols=16384):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
