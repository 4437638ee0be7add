import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "mean"], "family": "mean", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Mean over the last dimension of a 3D tensor (batch, seq, d), giving (batch, seq)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1)


def get_input_sets():
    return {
        "bench": dict(batch=64, seq=1536, d=4096),
        "check": dict(batch=2, seq=8, d=160),
        "sweep_odd": dict(batch=3, seq=13, d=1531),
    }


def get_inputs(batch=64, seq=1536, d=4096):
    return [torch.randn(batch, seq, d) * 4.0]


def get_init_inputs():
    return []
