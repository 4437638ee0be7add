import torch
import torch.nn as nn

METADATA = {"tags": ["conv2d", "depthwise", "pointwise", "separable", "fused"], "family": "depthwise_separable_conv", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Depthwise-separable conv: 3x3 depthwise Conv2d (padding 1, groups=C) then 1x1 pointwise Conv2d, both with bias."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size=3, padding=1, groups=in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


def get_input_sets():
    return {
        "bench": dict(batch=64, in_channels=256, out_channels=256, height=64, width=64),
        "check": dict(batch=2, in_channels=16, out_channels=16, height=8, width=8),
        "sweep_odd": dict(batch=3, in_channels=19, out_channels=23, height=11, width=13),
    }


def get_inputs(batch=64, in_channels=256, height=64, width=64):
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(in_channels=256, out_channels=256):
    return [in_channels, out_channels]
