import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "logsumexp", "reduction", "fused"], "family": "linear_logsumexp", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by logsumexp over the output features: (batch, in) -> (batch,)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(self.linear(x), dim=-1)


def get_input_sets():
    return {
        "bench": dict(batch=4096, in_features=4096, out_features=4096),
        "check": dict(batch=16, in_features=32, out_features=64),
        "sweep_odd": dict(batch=39, in_features=77, out_features=109),
    }


def get_inputs(batch=4096, in_features=4096):
    return [3.0 * torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features]
