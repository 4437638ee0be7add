import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "affine", "broadcast"], "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Per-channel affine map y = x * scale + shift, with learned scale and shift of shape (channels,)."""

    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.shift = nn.Parameter(torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


def get_inputs():
    return [torch.randn(4096, 1024)]


def get_init_inputs():
    return [1024]
