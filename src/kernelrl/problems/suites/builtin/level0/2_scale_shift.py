import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "affine", "broadcast"], "family": "affine", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Per-channel affine map y = x * scale + shift, with learned scale and shift of shape (channels,)."""

    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.shift = nn.Parameter(torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


def get_input_sets():
    return {
        "bench": dict(rows=65536, channels=4096),
        "check": dict(rows=8, channels=96),
        "sweep_odd": dict(rows=33, channels=1531),
    }


def get_inputs(rows=65536, channels=4096):
    return [torch.randn(rows, channels)]


def get_init_inputs(channels=4096):
    return [channels]
