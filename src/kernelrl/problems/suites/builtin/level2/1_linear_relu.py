import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "activation", "fused"], "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by ReLU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(1024, 2048)]


def get_init_inputs():
    return [2048, 4096]
