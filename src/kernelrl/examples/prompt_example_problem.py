import torch
import torch.nn as nn

# The prompts' worked example: a problem in no suite and no split, so no training or test problem has its
# answer in the prompt (kernelrl.prompts).
METADATA = {"tags": ["elementwise", "binary"], "family": "prompt_example", "difficulty": 1,
            "dtype": "float32"}


class Model(nn.Module):
    """Half the absolute difference of two same-shaped tensors: y = |x - z| * 0.5."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.abs(x - z) * 0.5


def get_input_sets():
    return {
        "bench": dict(rows=16384, cols=16384),
        "check": dict(rows=16, cols=256),
        "sweep_odd": dict(rows=37, cols=1531),
    }


def get_inputs(rows=16384, cols=16384):
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
