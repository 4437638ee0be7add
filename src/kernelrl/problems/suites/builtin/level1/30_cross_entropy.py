import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["loss", "cross_entropy", "softmax", "reduction"], "family": "cross_entropy", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """Cross-entropy loss of fp32 logits (n, classes) against int64 class targets (n,), mean reduction (scalar)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_input_sets():
    return {
        "bench": dict(n=8192, classes=32768),
        "check": dict(n=16, classes=100),
        "sweep_odd": dict(n=37, classes=1531),
    }


def get_inputs(n=8192, classes=32768):
    return [torch.randn(n, classes) * 2.0, torch.randint(0, classes, (n,), dtype=torch.int64)]


def get_init_inputs():
    return []
