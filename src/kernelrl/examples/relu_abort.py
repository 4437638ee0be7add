# kernelrl example candidate for level0/1_relu: CRASHES the process (os.abort) in forward.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os.abort()
        return x
