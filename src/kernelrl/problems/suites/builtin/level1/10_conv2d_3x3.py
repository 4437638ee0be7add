import torch
import torch.nn as nn

METADATA = {"tags": ["conv", "conv2d", "bias"], "family": "conv2d", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """2D convolution with a 3x3 kernel, stride 1, zero padding 1 and bias, input (N, C_in, H, W)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # full fp32: cuDNN would otherwise use TF32 on GPUs, off by ~1e-3 from the exact result
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            return self.conv(x)


def get_input_sets():
    return {
        "bench": dict(batch=16, in_channels=128, out_channels=128, height=128, width=128),
        "check": dict(batch=2, in_channels=3, out_channels=8, height=8, width=8),
        "sweep_odd": dict(batch=3, in_channels=5, out_channels=7, height=13, width=11),
    }


def get_inputs(batch=16, in_channels=128, height=128, width=128):
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(in_channels=128, out_channels=128):
    return [in_channels, out_channels]
