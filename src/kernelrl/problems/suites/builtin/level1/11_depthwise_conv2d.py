import torch
import torch.nn as nn

METADATA = {"tags": ["conv", "conv2d", "depthwise", "bias"], "family": "depthwise_conv", "difficulty": 3,
            "dtype": "float32"}


class Model(nn.Module):
    """Depthwise 2D convolution (groups = channels), 3x3 kernel, stride 1, zero padding 1, with bias."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_input_sets():
    return {
        "bench": dict(batch=64, channels=256, height=112, width=112),
        "check": dict(batch=2, channels=4, height=16, width=16),
        "sweep_odd": dict(batch=3, channels=7, height=37, width=29),
    }


def get_inputs(batch=64, channels=256, height=112, width=112):
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs(channels=256):
    return [channels]
