import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "activation", "fused"], "family": "gemm_epilogue", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by ReLU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_input_sets():
    return {
        "bench": dict(batch=8192, in_features=4096, out_features=4096),
        "check": dict(batch=8, in_features=32, out_features=48),
        "sweep_odd": dict(batch=37, in_features=97, out_features=131),
    }


def get_inputs(batch=8192, in_features=4096):
    return [torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features]
