import torch
import torch.nn as nn

METADATA = {"tags": ["pooling", "reduction", "average"], "family": "global_pool", "difficulty": 2,
            "dtype": "float32",
            # a per-channel offset shared by the whole draw: an element-wise mix of two draws breaks it
            "timed_inputs": "rotate"}


class Model(nn.Module):
    """Global average pooling: adaptive average pooling of (N, C, H, W) to (N, C, 1, 1)."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_input_sets():
    return {
        "bench": dict(batch=256, channels=768, height=48, width=48),
        "check": dict(batch=2, channels=8, height=16, width=16),
        "sweep_odd": dict(batch=3, channels=13, height=23, width=29),
    }


def get_inputs(batch=256, channels=768, height=48, width=48):
    # a per-channel offset keeps the means well away from zero
    offset = torch.randn(1, channels, 1, 1)
    return [torch.randn(batch, channels, height, width) + offset]


def get_init_inputs():
    return []
