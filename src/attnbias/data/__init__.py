"""Data: synthetic problems of the seed papers (and, in submodules, offline real data)."""

from .problem import Problem
from .synthetic import (
    GENERATORS,
    antipodal,
    dm,
    example1,
    gaussian_unit,
    joint_toy,
    linear_separable,
)

__all__ = [
    "GENERATORS",
    "Problem",
    "antipodal",
    "dm",
    "example1",
    "gaussian_unit",
    "joint_toy",
    "linear_separable",
]
