import torch
import torch.nn as nn

METADATA = {"tags": ["normalization", "rmsnorm", "reduction"], "family": "rmsnorm", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """RMSNorm over the last dimension: x * rsqrt(mean(x^2) + eps) * weight, with a learned weight of shape (d,)."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_input_sets():
    return {
        "bench": dict(batch=16, seq=8192, d=2048),
        "check": dict(batch=2, seq=8, d=128),
        "sweep_odd": dict(batch=3, seq=11, d=1357),
    }


def get_inputs(batch=16, seq=8192, d=2048):
    return [torch.randn(batch, seq, d) * 2.0]


def get_init_inputs(d=2048):
    return [d]
