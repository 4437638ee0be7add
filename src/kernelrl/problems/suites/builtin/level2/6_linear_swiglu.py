import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["gemm", "silu", "gating", "elementwise", "fused"], "family": "linear_swiglu", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """SwiGLU gate: silu(x @ W_gate^T) * (x @ W_up^T), two bias-free projections of the same input."""

    def __init__(self, in_features: int, hidden_features: int):
        super().__init__()
        self.gate = nn.Linear(in_features, hidden_features, bias=False)
        self.up = nn.Linear(in_features, hidden_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.gate(x)) * self.up(x)


def get_input_sets():
    return {
        "bench": dict(batch=4096, in_features=2048, hidden_features=4096),
        "check": dict(batch=16, in_features=32, hidden_features=48),
        "sweep_odd": dict(batch=29, in_features=113, hidden_features=71),
    }


def get_inputs(batch=4096, in_features=2048):
    return [2.0 * torch.randn(batch, in_features)]


def get_init_inputs(in_features=2048, hidden_features=4096):
    return [in_features, hidden_features]
