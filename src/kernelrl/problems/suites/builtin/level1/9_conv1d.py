import torch
import torch.nn as nn

METADATA = {"tags": ["conv", "conv1d", "bias"], "family": "conv1d", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """1D convolution with bias, stride 1 and 'same' zero padding (odd kernel size), input (N, C_in, L)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # full fp32: cuDNN would otherwise use TF32 on GPUs, off by ~1e-3 from the exact result
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            return self.conv(x)


def get_input_sets():
    return {
        "bench": dict(batch=16, in_channels=128, out_channels=128, kernel_size=5, length=32768),
        "check": dict(batch=2, in_channels=4, out_channels=8, kernel_size=3, length=32),
        "sweep_odd": dict(batch=3, in_channels=5, out_channels=7, kernel_size=7, length=97),
    }


def get_inputs(batch=16, in_channels=128, length=32768):
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs(in_channels=128, out_channels=128, kernel_size=5):
    return [in_channels, out_channels, kernel_size]
