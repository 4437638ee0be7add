import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "mean", "pooling", "gemm", "bias", "fused"], "family": "meanpool_linear", "difficulty": 2, "dtype": "float32",
            # a per-(batch, feature) offset shared along the length: an element-wise mix of two draws breaks it
            "timed_inputs": "rotate"}


class Model(nn.Module):
    """Mean-pool a (B, L, D) sequence over L, then a Linear layer: (B, L, D) -> (B, out_features)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.mean(dim=1))


def get_input_sets():
    return {
        "bench": dict(batch=1024, length=384, in_features=1024, out_features=1024),
        "check": dict(batch=4, length=16, in_features=64, out_features=32),
        "sweep_odd": dict(batch=7, length=29, in_features=131, out_features=45),
    }


def get_inputs(batch=1024, length=384, in_features=1024):
    return [torch.randn(batch, length, in_features) + 0.5 * torch.randn(batch, 1, in_features)]


def get_init_inputs(in_features=1024, out_features=1024):
    return [in_features, out_features]
