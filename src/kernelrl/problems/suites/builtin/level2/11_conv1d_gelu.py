import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["conv1d", "gelu", "activation", "fused"], "family": "conv1d_gelu", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Conv1d (kernel 5, padding 2, with bias) followed by exact GELU, (N, C, L) layout."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=5, padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.conv(x))


def get_input_sets():
    return {
        "bench": dict(batch=128, in_channels=256, out_channels=256, length=2048),
        "check": dict(batch=2, in_channels=8, out_channels=16, length=64),
        "sweep_odd": dict(batch=3, in_channels=13, out_channels=19, length=97),
    }


def get_inputs(batch=128, in_channels=256, length=2048):
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs(in_channels=256, out_channels=256):
    return [in_channels, out_channels]
