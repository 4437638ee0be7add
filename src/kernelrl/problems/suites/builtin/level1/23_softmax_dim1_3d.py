import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "softmax", "strided"], "family": "softmax_dim1", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Softmax over dimension 1 (channels, not the contiguous last dimension) of a 3D tensor (batch, c, length)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_input_sets():
    return {
        "bench": dict(batch=64, c=128, length=32768),
        "check": dict(batch=2, c=16, length=40),
        "sweep_odd": dict(batch=3, c=37, length=131),
    }


def get_inputs(batch=64, c=128, length=32768):
    return [torch.randn(batch, c, length) * 2.0]


def get_init_inputs():
    return []
