"""The tiny classifier the real-data training tests share (checkpoints, divergence, logging):
one linear layer whose forward returns what `attnbias.real.train.train` reads, `.logits`."""

from pathlib import Path
from types import SimpleNamespace

import torch

from attnbias.real.train import TensorData, train


class Tiny(torch.nn.Module):
    def __init__(self, features: int = 3):
        super().__init__()
        self.linear = torch.nn.Linear(features, 2)

    def forward(self, x):
        return SimpleNamespace(logits=self.linear(x))


def tiny_data(n: int = 8, features: int = 3) -> TensorData:
    """n inputs of torch's default dtype (as Tiny's weights), labelled by the sign of their
    first feature."""
    x = torch.randn(n, features, generator=torch.Generator().manual_seed(0))
    return TensorData({"x": x}, (x[:, 0] > 0).long())


def train_tiny(checkpoints: Path, steps: int):
    """A Tiny trained by SGD on tiny_data, a checkpoint in `checkpoints` every step."""
    torch.manual_seed(0)
    return train(Tiny(), tiny_data(), None, {"name": "sgd", "lr": 0.1}, steps=steps,
                 batch_size=4, seed=0, checkpoint_dir=checkpoints, progress=False)  # fmt: skip
