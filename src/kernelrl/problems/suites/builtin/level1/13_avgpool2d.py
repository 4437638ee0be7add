import torch
import torch.nn as nn

METADATA = {"tags": ["pooling", "average"], "family": "avgpool", "difficulty": 2, "dtype": "float32"}


class Model(nn.Module):
    """2D average pooling, 3x3 window, stride 1, padding 1, padded zeros excluded from the divisor."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=3, stride=1, padding=1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_input_sets():
    return {
        "bench": dict(batch=16, channels=64, height=512, width=512),
        "check": dict(batch=2, channels=4, height=16, width=16),
        "sweep_odd": dict(batch=3, channels=5, height=37, width=43),
    }


def get_inputs(batch=16, channels=64, height=512, width=512):
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return []
