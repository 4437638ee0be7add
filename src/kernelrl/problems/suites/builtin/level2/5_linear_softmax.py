import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "softmax", "reduction", "fused"], "family": "linear_softmax", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by softmax over the (short) output-feature dimension."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.linear(x), dim=-1)


def get_input_sets():
    return {
        "bench": dict(batch=32768, in_features=4096, out_features=256),
        "check": dict(batch=16, in_features=64, out_features=32),
        "sweep_odd": dict(batch=45, in_features=139, out_features=57),
    }


def get_inputs(batch=32768, in_features=4096):
    return [3.0 * torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=256):
    return [in_features, out_features]
