import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["groupnorm", "normalization", "reduction", "silu", "activation", "fused"], "family": "groupnorm_silu", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """GroupNorm (randomized per-channel affine) followed by SiLU, NCHW."""

    def __init__(self, num_groups: int, channels: int, eps: float = 1e-5):
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(channels))
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps))


def get_input_sets():
    return {
        "bench": dict(batch=64, channels=256, height=128, width=128, num_groups=32),
        "check": dict(batch=2, channels=16, height=8, width=8, num_groups=4),
        "sweep_odd": dict(batch=3, channels=30, height=13, width=11, num_groups=6),
    }


def get_inputs(batch=64, channels=256, height=128, width=128):
    return [2.0 * torch.randn(batch, channels, height, width) + 0.5]


def get_init_inputs(num_groups=32, channels=256):
    return [num_groups, channels]
