import torch
import torch.nn as nn

METADATA = {"tags": ["normalization", "layernorm", "reduction"], "family": "layernorm", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """nn.LayerNorm over the last dimension (with randomized elementwise-affine weight and bias)."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(d))
            self.norm.bias.copy_(0.5 * torch.randn(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_input_sets():
    return {
        "bench": dict(batch=32, seq=8192, d=1024),
        "check": dict(batch=2, seq=8, d=96),
        "sweep_odd": dict(batch=3, seq=11, d=1531),
    }


def get_inputs(batch=32, seq=8192, d=1024):
    return [torch.randn(batch, seq, d) * 2.0 + 0.5]


def get_init_inputs(d=1024):
    return [d]
