import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "silu", "sigmoid", "add", "fused"], "family": "silu_add", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Elementwise chain x * sigmoid(x) + y."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + y


def get_input_sets():
    return {
        "bench": dict(rows=32768, cols=4096),
        "check": dict(rows=8, cols=300),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=32768, cols=4096):
    return [2.0 * torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
