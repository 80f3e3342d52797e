"""Optimisers as `torch.optim.Optimizer` subclasses: drop into any training loop."""

from .mirror_descent import MirrorDescent, inverse_mirror_map, mirror_descent_, mirror_map
from .normalized_gd import NormalizedGD
from .polyak import PolyakStep

__all__ = [
    "MirrorDescent",
    "NormalizedGD",
    "PolyakStep",
    "inverse_mirror_map",
    "mirror_descent_",
    "mirror_map",
]
