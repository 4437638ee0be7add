import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "split_k"], "family": "gemm_split_k", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """fp32 matrix product C = A @ B with a reduction dimension K much larger than M and N."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_input_sets():
    return {
        "bench": dict(m=512, k=131072, n=512),
        "check": dict(m=16, k=512, n=32),
        "sweep_odd": dict(m=29, k=1031, n=37),
    }


def get_inputs(m=512, k=131072, n=512):
    # A is scaled by 1/sqrt(K) so outputs stay O(1) and fp32 summation-order differences stay far below atol.
    return [torch.randn(m, k) * k ** -0.5, torch.randn(k, n)]


def get_init_inputs():
    return []
