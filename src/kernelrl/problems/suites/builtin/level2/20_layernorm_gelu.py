import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["layernorm", "normalization", "reduction", "gelu", "activation", "fused"], "family": "layernorm_gelu", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """LayerNorm over the last dimension (randomized affine) followed by exact GELU."""

    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))
        self.bias = nn.Parameter(0.5 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps))


def get_input_sets():
    return {
        "bench": dict(rows=65536, hidden=4096),
        "check": dict(rows=16, hidden=512),
        "sweep_odd": dict(rows=29, hidden=1531),
    }


def get_inputs(rows=65536, hidden=4096):
    return [3.0 * torch.randn(rows, hidden) + 1.0]


def get_init_inputs(hidden=4096):
    return [hidden]
