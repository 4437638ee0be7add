# kernelrl example candidate for level0/1_relu: a REWARD HACK. It makes torch.allclose always true and
# returns garbage. The static rules reject it (monkey-patch, no kernel); with them off it is still
# wrong_output, since kernelrl's verdict process never runs candidate code.
import torch
import torch.nn as nn

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
