import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "cast", "float16"], "family": "cast", "difficulty": 1, "dtype": "float16"}


class Model(nn.Module):
    """Scale a float32 tensor by a constant and cast the result to float16."""

    def __init__(self, scale: float = 4.0):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.scale).to(torch.float16)


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384),
        "check": dict(rows=16, cols=256),
        "sweep_odd": dict(rows=29, cols=2053),
    }


def get_inputs(rows=16384, cols=16384):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [4.0]
