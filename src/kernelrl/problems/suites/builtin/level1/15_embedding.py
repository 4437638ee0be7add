import torch
import torch.nn as nn

METADATA = {"tags": ["gather", "embedding", "indexing"], "family": "embedding", "difficulty": 2,
            "dtype": "float32"}


class Model(nn.Module):
    """Embedding lookup: rows of a (num_embeddings, dim) table gathered by int64 indices of shape (batch, seq)."""

    def __init__(self, num_embeddings: int, dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        return self.embedding(indices)


def get_input_sets():
    return {
        "bench": dict(batch=2048, seq=256, num_embeddings=65536, dim=1024),
        "check": dict(batch=2, seq=8, num_embeddings=100, dim=64),
        "sweep_odd": dict(batch=3, seq=37, num_embeddings=1531, dim=97),
    }


def get_inputs(batch=2048, seq=256, num_embeddings=65536):
    return [torch.randint(0, num_embeddings, (batch, seq), dtype=torch.int64)]


def get_init_inputs(num_embeddings=65536, dim=1024):
    return [num_embeddings, dim]
