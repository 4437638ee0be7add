import torch
import torch.nn as nn

METADATA = {"tags": ["conv2d", "relu", "activation", "fused"], "family": "conv2d_relu", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """3x3 Conv2d (stride 1, padding 1, with bias) followed by ReLU, NCHW."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_input_sets():
    return {
        "bench": dict(batch=128, in_channels=128, out_channels=128, height=64, width=64),
        "check": dict(batch=2, in_channels=4, out_channels=8, height=8, width=8),
        "sweep_odd": dict(batch=3, in_channels=5, out_channels=7, height=13, width=11),
    }


def get_inputs(batch=128, in_channels=128, height=64, width=64):
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(in_channels=128, out_channels=128):
    return [in_channels, out_channels]
