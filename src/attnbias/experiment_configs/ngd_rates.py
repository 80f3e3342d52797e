"""ngd-rates: its config, the class its driver (experiments/ngd_rates.py) runs with
(defaults: experiments/configs/ngd-rates.toml)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..config import Caps, Positive, PositiveInt, numbers
from ..theory_measures import Window, check_window
from .sweep import OptimalTokenConfig


def window_field(description: str):
    return Field(description=f"{description}: [first step, last step] of the fit")


class Config(OptimalTokenConfig):
    long_steps: PositiveInt = Field(description="steps of the reference NGD and Polyak runs")
    short_steps: PositiveInt = Field(description="steps of the η sweep and the margin sweep")
    lr: Positive = Field(description="the reference NGD step size η")
    lrs: numbers(float, 0.0, strict=True) = Field(description="step sizes of the η sweep")
    polyak_caps: Caps = Field(
        description="Polyak's caps γ_b: a practical one and the largest, inf (uncapped, exact)"
    )
    scales: numbers(float, 0.0, strict=True) = Field(
        description="token scales c of the symmetry check (margin ∝ c²; 1 is example1 itself)"
    )
    sizes: numbers(int, 0, strict=True) = Field(
        description="numbers of samples n of the margin sweep: another geometry, another "
        "margin (n itself is always in it)"
    )
    fit_window: Window = window_field("misalignment exponent of the long runs")
    windows: tuple[Window, Window] = Field(
        description="two consecutive windows whose fitted exponents must agree"
    )
    polyak_window: Window = window_field(
        "misalignment exponent of the Polyak runs at the largest cap (Thm 7)"
    )
    early_window: Window = window_field(
        "the early exponents of the capped Polyak runs and NGD (the paper's 'faster in the "
        "beginning')"
    )
    growth_window: Window = window_field("slope of ‖W_t‖ in t (η sweep)")
    saturation_window: Window = window_field("slope of log(1 − s_opt) in ‖W_t‖ (margin sweep)")
    tolerance: Positive = Field(description="relative tolerance of the ratio claims")

    @model_validator(mode="after")
    def _windows_fit_the_runs(self):
        for name, steps in [
            ("fit_window", "long_steps"),
            ("polyak_window", "long_steps"),
            ("early_window", "long_steps"),
            ("growth_window", "short_steps"),
            ("saturation_window", "short_steps"),
        ]:
            check_window(getattr(self, name), getattr(self, steps), name, steps)
        for k, window in enumerate(self.windows):
            check_window(window, self.long_steps, f"windows[{k}]", "long_steps")
        if self.lr not in self.lrs or 1.0 not in self.scales:
            raise ValueError(f"lrs must contain lr ({self.lr:g}) and scales must contain 1")
        for n in self.sizes:  # the reference n: OptimalTokenConfig's rule
            if n * self.T > self.d:
                raise ValueError(f"d must be >= n*T = {n * self.T} (n = {n}), got {self.d}")
        return self
