import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["gemm", "bias", "gelu", "activation", "fused"], "family": "linear_gelu", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by exact (erf) GELU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x))


def get_input_sets():
    return {
        "bench": dict(batch=8192, in_features=4096, out_features=4096),
        "check": dict(batch=16, in_features=48, out_features=32),
        "sweep_odd": dict(batch=37, in_features=131, out_features=97),
    }


def get_inputs(batch=8192, in_features=4096):
    return [torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features]
