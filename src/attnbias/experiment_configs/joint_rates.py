"""joint-rates: its config, the class its driver (experiments/joint_rates.py) runs with
(defaults: experiments/configs/joint-rates.toml)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from ..config import Positive, PositiveInt, Text
from ..theory_measures import Window, check_window
from .sweep import DMConfig


class Config(DMConfig):
    steps: PositiveInt = Field(description="steps of every run")
    lr: Positive = Field(description="step size η of all three rules")
    fit_window: Window = Field(description="[first, last] step of the fitted exponents")
    fixed: Text = Field(description="name of the fixed-head NGD runs")
    joint: Text = Field(description="name of the loss-normalised joint runs (Eq. 13)")
    joint_ngd: Text = Field(description="name of the joint-NGD runs")

    @model_validator(mode="after")
    def _window_fits(self):
        check_window(self.fit_window, self.steps, "fit_window")
        if self.fit_window[0] <= np.e**np.e:  # where log log t / log t starts to decrease
            raise ValueError(f"fit_window must start above step e^e, got {self.fit_window[0]:g}")
        return self
