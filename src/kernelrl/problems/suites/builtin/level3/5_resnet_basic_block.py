import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["conv2d", "batchnorm", "relu", "residual", "fused"], "family": "resnet_block", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """ResNet basic block (eval-mode BN): relu(BN2(conv2(relu(BN1(conv1(x))))) + x), 3x3 convs, stride 1."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.weight.copy_(1.0 + 0.3 * torch.randn(channels))
                bn.bias.copy_(0.2 * torch.randn(channels))
                bn.running_mean.copy_(0.2 * torch.randn(channels))
                bn.running_var.copy_(0.5 + torch.rand(channels))

    @staticmethod
    def bn(x: torch.Tensor, bn: nn.BatchNorm2d) -> torch.Tensor:
        return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False, eps=bn.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv1(x), self.bn1))
        y = self.bn(self.conv2(y), self.bn2)
        return torch.relu(y + x)


def get_input_sets():
    return {
        "bench": dict(batch=64, channels=128, height=56, width=56),
        "check": dict(batch=2, channels=8, height=6, width=6),
        "sweep_odd": dict(batch=3, channels=10, height=11, width=13),
    }


def get_inputs(batch=64, channels=128, height=56, width=56):
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs(channels=128):
    return [channels]
