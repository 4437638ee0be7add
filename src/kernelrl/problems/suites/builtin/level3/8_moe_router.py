import torch
import torch.nn as nn

METADATA = {"tags": ["gemm", "softmax", "topk", "moe", "routing"], "family": "moe_router", "difficulty": 3, "dtype": "float32"}


class Model(nn.Module):
    """MoE top-k router: expert logits = Linear(x), softmax, top-k; returns (renormalized top-k weights, int64 expert ids)."""

    def __init__(self, dim: int, experts: int, top_k: int):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(dim, experts)
        # Test-data conditioning, not part of the op: the weights lie on a 1/256 grid and the inputs on a 1/4 grid,
        # so every logit is computed exactly in fp32 in any summation order, and each expert's bias carries a
        # distinct offset below that grid, so no two logits of a token are ever equal: top-k has no ties.
        g = 1 << (experts - 1).bit_length()
        with torch.no_grad():
            self.router.weight.copy_(torch.round(torch.randn(experts, dim) * (2.5 / dim ** 0.5) * 256.0) / 256.0)
            self.router.bias.copy_(torch.randperm(experts).float() / (1024.0 * g))

    def forward(self, x: torch.Tensor):
        probs = torch.softmax(self.router(x), dim=-1)
        weights, indices = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights, indices


def get_input_sets():
    return {
        "bench": dict(batch=64, seq=2048, dim=2048, experts=64, top_k=4),
        "check": dict(batch=2, seq=8, dim=32, experts=8, top_k=2),
        "sweep_odd": dict(batch=3, seq=13, dim=40, experts=12, top_k=3),
    }


def get_inputs(batch=64, seq=2048, dim=2048):
    # values on a 1/4 grid (see Model.__init__)
    return [torch.round(torch.randn(batch, seq, dim) * 4.0) / 4.0]


def get_init_inputs(dim=2048, experts=64, top_k=4):
    return [dim, experts, top_k]
