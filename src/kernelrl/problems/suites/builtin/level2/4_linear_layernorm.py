import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["gemm", "bias", "layernorm", "normalization", "reduction", "fused"], "family": "linear_layernorm", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Linear layer followed by LayerNorm over the output features (randomized affine weight and bias)."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm_weight = nn.Parameter(1.0 + 0.5 * torch.randn(out_features))
        self.norm_bias = nn.Parameter(0.5 * torch.randn(out_features))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return F.layer_norm(y, (y.shape[-1],), self.norm_weight, self.norm_bias, self.eps)


def get_input_sets():
    return {
        "bench": dict(batch=16384, in_features=4096, out_features=1024),
        "check": dict(batch=16, in_features=32, out_features=64),
        "sweep_odd": dict(batch=41, in_features=83, out_features=117),
    }


def get_inputs(batch=16384, in_features=4096):
    return [torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=1024):
    return [in_features, out_features]
