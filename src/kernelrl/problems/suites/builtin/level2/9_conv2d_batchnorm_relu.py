import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["conv2d", "batchnorm", "normalization", "relu", "activation", "fused"], "family": "conv_bn_relu", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """3x3 Conv2d (padding 1, no bias), eval-mode BatchNorm2d with randomized running stats and affine, then ReLU."""

    def __init__(self, in_channels: int, out_channels: int, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bn_weight = nn.Parameter(1.0 + 0.3 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.3 * torch.randn(out_channels))
        self.register_buffer("running_mean", 0.3 * torch.randn(out_channels))
        self.register_buffer("running_var", 0.5 + torch.rand(out_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = F.batch_norm(y, self.running_mean, self.running_var, self.bn_weight, self.bn_bias, training=False, eps=self.eps)
        return torch.relu(y)


def get_input_sets():
    return {
        "bench": dict(batch=128, in_channels=128, out_channels=128, height=64, width=64),
        "check": dict(batch=2, in_channels=8, out_channels=8, height=8, width=8),
        "sweep_odd": dict(batch=3, in_channels=5, out_channels=11, height=9, width=14),
    }


def get_inputs(batch=128, in_channels=128, height=64, width=64):
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(in_channels=128, out_channels=128):
    return [in_channels, out_channels]
