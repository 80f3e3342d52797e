"""vision: its config, the class its driver (experiments/vision.py) runs with
(defaults: experiments/configs/vision.toml)."""

from __future__ import annotations

from pydantic import Field

from ..config import PositiveInt, choices
from ..data.vision import IMAGE_DATASETS
from .real import CompareConfig


class Config(CompareConfig):
    datasets: choices(*IMAGE_DATASETS) = Field(description="image datasets")
    patch_size: PositiveInt = Field(description="patch side in pixels")
    dim: PositiveInt = Field(description="model width")
    heads: PositiveInt = Field(description="attention heads per layer")
    layers: PositiveInt = Field(description="transformer blocks")
    mlp_ratio: PositiveInt = Field(description="MLP width / model width")
