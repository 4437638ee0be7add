import torch
import torch.nn as nn

METADATA = {"tags": ["rnn", "gru", "gemm", "sigmoid", "tanh", "fused"], "family": "gru_cell", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """One GRU cell step (nn.GRUCell): new hidden state from input x and hidden state h."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.cell(x, h)


def get_input_sets():
    return {
        "bench": dict(batch=16384, input_size=1024, hidden_size=1024),
        "check": dict(batch=2, input_size=16, hidden_size=32),
        "sweep_odd": dict(batch=5, input_size=37, hidden_size=40),
    }


def get_inputs(batch=16384, input_size=1024, hidden_size=1024):
    return [torch.randn(batch, input_size), torch.randn(batch, hidden_size)]


def get_init_inputs(input_size=1024, hidden_size=1024):
    return [input_size, hidden_size]
