import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "broadcast", "bias_add"], "family": "broadcast_add", "difficulty": 2,
            "dtype": "float32"}


class Model(nn.Module):
    """Add a per-column bias of shape (cols,) and a per-row bias of shape (rows, 1) to a 2D matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, col_bias: torch.Tensor, row_bias: torch.Tensor) -> torch.Tensor:
        return x + col_bias + row_bias


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384),
        "check": dict(rows=24, cols=160),
        "sweep_odd": dict(rows=67, cols=1097),
    }


def get_inputs(rows=16384, cols=16384):
    return [torch.randn(rows, cols), torch.randn(cols), torch.randn(rows, 1)]


def get_init_inputs():
    return []
