import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "residual", "elementwise", "fused"], "family": "linear_residual", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer (with bias) plus a residual input: y = x @ W^T + b + residual."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + residual


def get_input_sets():
    return {
        "bench": dict(batch=8192, in_features=4096, out_features=4096),
        "check": dict(batch=16, in_features=32, out_features=48),
        "sweep_odd": dict(batch=53, in_features=101, out_features=75),
    }


def get_inputs(batch=8192, in_features=4096, out_features=4096):
    return [torch.randn(batch, in_features), torch.randn(batch, out_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features]
