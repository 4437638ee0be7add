import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "softmax", "log"], "family": "log_softmax", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Log-softmax over the last dimension of a 2D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


def get_input_sets():
    return {
        "bench": dict(rows=131072, cols=2048),
        "check": dict(rows=16, cols=120),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=131072, cols=2048):
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
