import torch
import torch.nn as nn

METADATA = {"tags": ["reduction", "norm", "broadcast", "division", "fused"], "family": "row_l2_normalize", "difficulty": 2, "dtype": "float32",
            # a per-row scale shared by the row: an element-wise mix of two draws breaks it
            "timed_inputs": "rotate"}


class Model(nn.Module):
    """Row-wise L2 normalization: x / max(||x||_2, eps) with the norm taken over the last dimension."""

    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.sqrt((x * x).sum(dim=-1, keepdim=True))
        return x / norm.clamp_min(self.eps)


def get_input_sets():
    return {
        "bench": dict(rows=65536, cols=4096),
        "check": dict(rows=16, cols=128),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=65536, cols=4096):
    return [torch.randn(rows, cols) * (1.0 + torch.rand(rows, 1) * 9.0)]


def get_init_inputs():
    return []
