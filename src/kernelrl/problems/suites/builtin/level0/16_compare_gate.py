import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "comparison", "binary"], "family": "compare_gate", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Gate x by an elementwise comparison turned into a float: y = (x > y_ref).float() * x."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y_ref: torch.Tensor) -> torch.Tensor:
        return (x > y_ref).float() * x


def get_input_sets():
    return {
        "bench": dict(rows=12288, cols=16384),
        "check": dict(rows=16, cols=240),
        "sweep_odd": dict(rows=73, cols=977),
    }


def get_inputs(rows=12288, cols=16384):
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
