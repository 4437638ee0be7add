import torch
import torch.nn as nn

METADATA = {"tags": ["rmsnorm", "normalization", "reduction", "gemm", "fused"], "family": "rmsnorm_linear", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """RMSNorm over features (randomized scale) followed by a bias-free Linear projection."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-6):
        super().__init__()
        self.norm_weight = nn.Parameter(1.0 + 0.5 * torch.randn(in_features))
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.norm_weight
        return self.linear(x)


def get_input_sets():
    return {
        "bench": dict(batch=8192, in_features=4096, out_features=4096),
        "check": dict(batch=16, in_features=64, out_features=32),
        "sweep_odd": dict(batch=43, in_features=127, out_features=89),
    }


def get_inputs(batch=8192, in_features=4096):
    return [3.0 * torch.randn(batch, in_features)]


def get_init_inputs(in_features=4096, out_features=4096):
    return [in_features, out_features]
