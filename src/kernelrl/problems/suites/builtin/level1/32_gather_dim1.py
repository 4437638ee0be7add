import torch
import torch.nn as nn

METADATA = {"tags": ["gather", "index", "memory"], "family": "gather", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """torch.gather along dimension 1: out[b, j] = x[b, index[b, j]] with an int64 index tensor (batch, k)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


def get_input_sets():
    return {
        "bench": dict(batch=16384, n=4096, k=8192),
        "check": dict(batch=8, n=50, k=64),
        "sweep_odd": dict(batch=13, n=97, k=131),
    }


def get_inputs(batch=16384, n=4096, k=8192):
    return [torch.randn(batch, n), torch.randint(0, n, (batch, k), dtype=torch.int64)]


def get_init_inputs():
    return []
