import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "argmax", "index"], "family": "argmax", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Argmax (int64 indices) over the middle dimension of a 3D tensor (batch, n, d), giving (batch, d)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=1)


def get_input_sets():
    return {
        "bench": dict(batch=64, n=3072, d=2048),
        "check": dict(batch=4, n=30, d=48),
        "sweep_odd": dict(batch=3, n=97, d=131),
    }


def get_inputs(batch=64, n=3072, d=2048):
    return [torch.randn(batch, n, d)]


def get_init_inputs():
    return []
