import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "mask", "masked_fill"], "family": "masked_fill", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Replace the entries of x where a boolean mask is set with a constant fill value."""

    def __init__(self, value: float = -3.5):
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(mask, self.value)


def get_input_sets():
    return {
        "bench": dict(batch=16, rows=4096, cols=4096),
        "check": dict(batch=2, rows=16, cols=128),
        "sweep_odd": dict(batch=3, rows=59, cols=331),
    }


def get_inputs(batch=16, rows=4096, cols=4096):
    x = torch.randn(batch, rows, cols)
    mask = torch.rand(batch, rows, cols) < 0.3
    return [x, mask]


def get_init_inputs():
    return [-3.5]
