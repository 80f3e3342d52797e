"""Optimisers as `torch.optim.Optimizer` subclasses (drop into any training loop), beside the
functional update rules they and the batched engine share (`attnbias.optim.functional`, with
the divisors of `attnbias.optim.divisors`)."""

from . import divisors, functional
from .mirror_descent import MirrorDescent
from .normalized_gd import NormalizedGD
from .polyak import PolyakStep
from .steepest_descent import SignGD, SpectralDescent, SteepestDescent

__all__ = [
    "MirrorDescent",
    "NormalizedGD",
    "PolyakStep",
    "SignGD",
    "SpectralDescent",
    "SteepestDescent",
    "divisors",
    "functional",
]
