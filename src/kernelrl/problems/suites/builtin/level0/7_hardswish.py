import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "hardswish"], "family": "hardswish", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Hardswish activation x * relu6(x + 3) / 6, applied elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


def get_input_sets():
    return {
        "bench": dict(rows=32768, cols=8192),
        "check": dict(rows=32, cols=128),
        "sweep_odd": dict(rows=131, cols=389),
    }


def get_inputs(rows=32768, cols=8192):
    # scaled so that all three pieces (0, quadratic, identity) are well populated
    return [torch.randn(rows, cols) * 4.0]


def get_init_inputs():
    return []
