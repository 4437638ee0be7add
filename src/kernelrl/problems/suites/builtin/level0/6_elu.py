import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "elu"], "family": "elu", "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """ELU activation with scale alpha on the negative side, applied to an NCHW feature map."""

    def __init__(self, alpha: float = 1.5):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


def get_input_sets():
    return {
        "bench": dict(batch=64, channels=64, height=256, width=256),
        "check": dict(batch=2, channels=4, height=16, width=32),
        "sweep_odd": dict(batch=3, channels=5, height=37, width=53),
    }


def get_inputs(batch=64, channels=64, height=256, width=256):
    return [torch.randn(batch, channels, height, width) * 2.0]


def get_init_inputs(alpha=1.5):
    return [alpha]
