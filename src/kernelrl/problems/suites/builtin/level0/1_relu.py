import torch
import torch.nn as nn

METADATA = {"tags": ["elementwise", "activation"], "difficulty": 1, "dtype": "float32"}


class Model(nn.Module):
    """Elementwise ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(2048, 4096)]


def get_init_inputs():
    return []
