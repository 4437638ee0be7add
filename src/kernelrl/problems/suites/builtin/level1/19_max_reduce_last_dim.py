import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "max"], "family": "max_reduce", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Maximum values (not indices) over the last dimension of a 2D tensor, giving (rows,)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=-1).values


def get_input_sets():
    return {
        "bench": dict(rows=98304, cols=4096),
        "check": dict(rows=16, cols=200),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=98304, cols=4096):
    return [torch.randn(rows, cols) * 2.0]


def get_init_inputs():
    return []
