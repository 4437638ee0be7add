import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "half"], "family": "gemm", "difficulty": 3, "dtype": "float16"}


class Model(nn.Module):
    """fp16 matrix product C = A @ B (fp16 inputs and output)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_input_sets():
    # K stays small on the CPU sets so that accumulation-order differences stay well inside fp16 tolerance.
    return {
        "bench": dict(m=8192, k=8192, n=8192),
        "check": dict(m=32, k=32, n=48),
        "sweep_odd": dict(m=97, k=61, n=53),
    }


def get_inputs(m=8192, k=8192, n=8192):
    return [torch.randn(m, k).half(), torch.randn(k, n).half()]


def get_init_inputs():
    return []
