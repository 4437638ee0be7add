import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["normalization", "batchnorm", "elementwise", "broadcast"], "family": "batchnorm", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """BatchNorm2d in inference mode (running statistics) on an NCHW tensor, with randomized stats and affine."""

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(channels))
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=self.eps)


def get_input_sets():
    return {
        "bench": dict(batch=32, channels=128, height=256, width=256),
        "check": dict(batch=2, channels=8, height=12, width=12),
        "sweep_odd": dict(batch=3, channels=19, height=23, width=29),
    }


def get_inputs(batch=32, channels=128, height=256, width=256):
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs(channels=128):
    return [channels]
