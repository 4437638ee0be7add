import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "bias", "gelu", "scale", "broadcast", "fused"], "family": "bias_gelu_scale", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Per-channel bias add, exact GELU, then per-channel scale over the last dimension: gelu(x + b) * s."""

    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(channels))
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + self.bias) * self.scale


def get_input_sets():
    return {
        "bench": dict(rows=65536, channels=4096),
        "check": dict(rows=16, channels=200),
        "sweep_odd": dict(rows=41, channels=1531),
    }


def get_inputs(rows=65536, channels=4096):
    return [torch.randn(rows, channels)]


def get_init_inputs(channels=4096):
    return [channels]
