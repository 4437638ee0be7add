import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["loss", "mse", "reduction"], "family": "mse", "difficulty": 1, "dtype": "float32",
            # a per-sample offset shared by the target's row: an element-wise mix of two draws breaks it
            "timed_inputs": "rotate"}


class Model(nn.Module):
    """Mean squared error between two tensors of shape (batch, n), mean reduction (scalar)."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(pred, target)


def get_input_sets():
    return {
        "bench": dict(batch=32, n=6291456),
        "check": dict(batch=4, n=1000),
        "sweep_odd": dict(batch=5, n=9973),
    }


def get_inputs(batch=32, n=6291456):
    # a per-sample offset on the target keeps the (large) mean clearly input-dependent
    pred = torch.randn(batch, n)
    target = torch.randn(batch, n) + 2.0 * torch.randn(batch, 1)
    return [pred, target]


def get_init_inputs():
    return []
