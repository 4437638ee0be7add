import torch
import torch.nn as nn

METADATA = {"tags": ["softmax", "reduction"], "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Softmax over the last dimension of a 2D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(512, 1000) * 3.0]


def get_init_inputs():
    return []
