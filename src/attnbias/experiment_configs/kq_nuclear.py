"""kq-nuclear: its config, the class its driver (experiments/kq_nuclear.py) runs with
(defaults: experiments/configs/kq-nuclear.toml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..config import Loss, Positive, PositiveInt, integer
from .sweep import SweepConfig


class Config(SweepConfig):
    data: Literal["example1", "gaussian_unit"] = Field(description="data generator")
    alpha: Literal["optimal", "selected"] = Field(
        description="tokens of the SVMs: 'optimal' or 'selected' (by each final W)"
    )
    n: PositiveInt = Field(description="samples")
    T: integer(ge=2) = Field(description="tokens per sample (one leaves the SVM no constraint)")
    d: PositiveInt = Field(description="dimension")
    loss: Loss = Field(description="margin loss")
    init_scale: Positive = Field(description="K₀, Q₀ entries ~ N(0, init_scale²)")
    lr: Positive = Field(description="step size of normalized GD")
    steps: PositiveInt = Field(description="steps of every run")

    @model_validator(mode="after")
    def _example1_fits_the_dimension(self):
        # example1 makes n·T orthogonal tokens (Assumption 2): refused here, not after training
        if self.data == "example1" and self.n * self.T > self.d:
            raise ValueError(f"example1 data needs d >= n*T = {self.n * self.T}, got {self.d}")
        return self
