import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "silu"], "family": "silu", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """SiLU (swish) activation x * sigmoid(x), applied elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_input_sets():
    return {
        "bench": dict(rows=8192, cols=32768),
        "check": dict(rows=24, cols=160),
        "sweep_odd": dict(rows=97, cols=613),
    }


def get_inputs(rows=8192, cols=32768):
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
