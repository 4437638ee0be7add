import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "binary", "fma"], "family": "mul_add", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Elementwise multiply-add of three same-shaped tensors: y = x * w + z."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, w: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * w + z


def get_input_sets():
    return {
        "bench": dict(rows=8192, cols=16384),
        "check": dict(rows=16, cols=224),
        "sweep_odd": dict(rows=47, cols=1409),
    }


def get_inputs(rows=8192, cols=16384):
    return [torch.randn(rows, cols), torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
