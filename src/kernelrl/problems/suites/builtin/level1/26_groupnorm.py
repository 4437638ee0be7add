import torch
import torch.nn as nn

METADATA = {"tags": ["normalization", "groupnorm", "reduction"], "family": "groupnorm", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """nn.GroupNorm on an NCHW tensor (with randomized per-channel affine weight and bias)."""

    def __init__(self, num_groups: int, channels: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(channels))
            self.norm.bias.copy_(0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_input_sets():
    return {
        "bench": dict(batch=32, channels=128, num_groups=16, height=256, width=256),
        "check": dict(batch=2, channels=8, num_groups=4, height=10, width=12),
        "sweep_odd": dict(batch=3, channels=30, num_groups=5, height=11, width=13),
    }


def get_inputs(batch=32, channels=128, height=256, width=256):
    return [torch.randn(batch, channels, height, width) * 2.0 + 1.0]


def get_init_inputs(num_groups=16, channels=128):
    return [num_groups, channels]
