import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["gemm", "bias", "hardtanh", "clamp", "activation", "fused"], "family": "linear_hardtanh", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by hardtanh clamping to [min_val, max_val] (bounds wide enough that most outputs pass)."""

    def __init__(self, in_features: int, out_features: int, min_val: float = -1.0, max_val: float = 1.0):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(self.linear(x), self.min_val, self.max_val)


def get_input_sets():
    return {
        "bench": dict(batch=8192, in_features=4096, out_features=4096),
        "check": dict(batch=16, in_features=32, out_features=48),
        "sweep_odd": dict(batch=47, in_features=93, out_features=61),
    }


def get_inputs(batch=8192, in_features=4096):
    return [torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features, -1.0, 1.0]
