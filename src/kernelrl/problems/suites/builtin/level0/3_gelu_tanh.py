import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "gelu"], "family": "gelu", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """GELU with the tanh approximation, applied elementwise to a (batch, seq, hidden) activation tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


def get_input_sets():
    return {
        "bench": dict(batch=32, seq=2048, hidden=4096),
        "check": dict(batch=2, seq=8, hidden=256),
        "sweep_odd": dict(batch=3, seq=37, hidden=397),
    }


def get_inputs(batch=32, seq=2048, hidden=4096):
    return [torch.randn(batch, seq, hidden) * 2.0]


def get_init_inputs():
    return []
