import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["gemm", "silu", "gating", "mlp", "fused"], "family": "swiglu_ffn", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """SwiGLU feed-forward (LLaMA style, no biases): w_down(silu(w_gate(x)) * w_up(x))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def get_input_sets():
    return {
        "bench": dict(batch=8, seq=1024, dim=1024, hidden=2816),
        "check": dict(batch=2, seq=8, dim=32, hidden=48),
        "sweep_odd": dict(batch=3, seq=13, dim=40, hidden=88),
    }


def get_inputs(batch=8, seq=1024, dim=1024):
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(dim=1024, hidden=2816):
    return [dim, hidden]
