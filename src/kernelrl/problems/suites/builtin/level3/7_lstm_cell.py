import torch
import torch.nn as nn

METADATA = {"tags": ["rnn", "lstm", "gemm", "sigmoid", "tanh", "fused"], "family": "lstm_cell", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """One LSTM cell step (nn.LSTMCell): returns (h_new, c_new) from input x and state (h, c)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        h_new, c_new = self.cell(x, (h, c))
        return h_new, c_new


def get_input_sets():
    return {
        "bench": dict(batch=16384, input_size=1024, hidden_size=1024),
        "check": dict(batch=2, input_size=16, hidden_size=32),
        "sweep_odd": dict(batch=5, input_size=37, hidden_size=40),
    }


def get_inputs(batch=16384, input_size=1024, hidden_size=1024):
    return [torch.randn(batch, input_size), torch.randn(batch, hidden_size), torch.randn(batch, hidden_size)]


def get_init_inputs(input_size=1024, hidden_size=1024):
    return [input_size, hidden_size]
