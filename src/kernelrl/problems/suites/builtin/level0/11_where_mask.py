import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "select", "mask"], "family": "where", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Elementwise select by a boolean mask: y = where(mask, x, -0.5 * z)."""

    def __init__(self):
        super().__init__()

    def forward(self, mask: torch.Tensor, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.where(mask, x, -0.5 * z)


def get_input_sets():
    return {
        "bench": dict(rows=12288, cols=16384),
        "check": dict(rows=16, cols=200),
        "sweep_odd": dict(rows=43, cols=1117),
    }


def get_inputs(rows=12288, cols=16384):
    mask = torch.rand(rows, cols) < 0.5
    return [mask, torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
