import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "batched"], "family": "bmm", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Batched fp32 matrix product C[b] = A[b] @ B[b] for 3D tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_input_sets():
    return {
        "bench": dict(batch=128, m=512, k=1024, n=512),
        "check": dict(batch=2, m=16, k=32, n=24),
        "sweep_odd": dict(batch=3, m=37, k=53, n=29),
    }


def get_inputs(batch=128, m=512, k=1024, n=512):
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs():
    return []
