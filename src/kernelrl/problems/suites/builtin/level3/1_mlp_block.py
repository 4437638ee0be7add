import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "bias", "gelu", "mlp", "fused"], "family": "mlp_block", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Transformer MLP block: Linear(dim, hidden) -> exact GELU -> Linear(hidden, dim) over (batch, seq, dim)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def get_input_sets():
    return {
        "bench": dict(batch=8, seq=1024, dim=1024, hidden=4096),
        "check": dict(batch=2, seq=8, dim=32, hidden=64),
        "sweep_odd": dict(batch=3, seq=13, dim=40, hidden=100),
    }


def get_inputs(batch=8, seq=1024, dim=1024):
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(dim=1024, hidden=4096):
    return [dim, hidden]
