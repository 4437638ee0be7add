import torch
import torch.nn as nn

METADATA = {"tags": ["softmax", "reduction", "weighted_sum", "attention", "fused"], "family": "softmax_weighted_sum", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """Attention pooling: softmax of scores (B, L) over L, then the weighted sum of values (B, L, D) -> (B, D)."""

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(scores, dim=-1)
        return (weights.unsqueeze(-1) * values).sum(dim=1)


def get_input_sets():
    return {
        "bench": dict(batch=4096, length=256, dim=384),
        "check": dict(batch=4, length=32, dim=64),
        "sweep_odd": dict(batch=7, length=45, dim=97),
    }


def get_inputs(batch=4096, length=256, dim=384):
    return [2.0 * torch.randn(batch, length), torch.randn(batch, length, dim)]


def get_init_inputs():
    return []
