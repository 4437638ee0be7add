import torch
import torch.nn as nn
import torch.nn.functional as F

METADATA = {"tags": ["conv2d", "relu", "maxpool", "global_avgpool", "gemm"], "family": "cnn_head", "difficulty": 4, "dtype": "float32"}


class Model(nn.Module):
    """Small CNN: conv3x3-ReLU-maxpool2 -> conv3x3-ReLU -> global average pool -> Linear classifier."""

    def __init__(self, in_channels: int, c1: int, c2: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = nn.Linear(c2, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        x = x.mean(dim=(2, 3))
        return self.fc(x)


def get_input_sets():
    return {
        "bench": dict(batch=256, in_channels=3, height=64, width=64, c1=128, c2=256, num_classes=100),
        "check": dict(batch=2, in_channels=3, height=8, width=8, c1=8, c2=16, num_classes=10),
        "sweep_odd": dict(batch=3, in_channels=5, height=11, width=13, c1=6, c2=12, num_classes=7),
    }


def get_inputs(batch=256, in_channels=3, height=64, width=64):
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(in_channels=3, c1=128, c2=256, num_classes=100):
    return [in_channels, c1, c2, num_classes]
