import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["elementwise", "activation", "softplus"], "family": "softplus", "difficulty": 2,
            "dtype": "float32"}


class Model(nn.Module):
    """Softplus log(1 + exp(beta * x)) / beta, reverting to the identity where beta * x > threshold."""

    def __init__(self, beta: float = 2.0, threshold: float = 10.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384, beta=2.0, threshold=10.0),
        "check": dict(rows=16, cols=256, beta=2.0, threshold=10.0),
        "sweep_odd": dict(rows=53, cols=1021, beta=0.5, threshold=4.0),
    }


def get_inputs(rows=16384, cols=16384):
    # wide inputs so the linear (thresholded) branch and the deep negative tail both occur
    return [torch.randn(rows, cols) * 6.0]


def get_init_inputs(beta=2.0, threshold=10.0):
    return [beta, threshold]
