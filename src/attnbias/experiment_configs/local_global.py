"""local-global: its config, the class its driver (experiments/local_global.py) runs with
(defaults: experiments/configs/local-global.toml)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..config import Algorithms, Loss, Positive, PositiveInt, numbers
from .sweep import SweepConfig


class Config(SweepConfig):
    example1_shape: numbers(int, 1) = Field(description="example1's n, T, d (d ≥ n·T)")
    gaussian_shape: numbers(int, 1) = Field(description="gaussian_unit's n, T, d")
    loss: Loss = Field(description="margin loss")
    example1_steps: PositiveInt = Field(description="steps of the runs on example1")
    gaussian_steps: PositiveInt = Field(description="steps of the runs on gaussian_unit")
    radii: numbers(float, 0.0, strict=True) = Field(description="start scales R of R·W_mm(α′)")
    local_radii: numbers(float, 0.0, strict=True) = Field(
        description="further scales R at which only gaussian_unit's locally optimal starts run: "
        "local convergence holds for R large enough, and the theorem does not give R₀"
    )
    example1_choices: PositiveInt = Field(
        description="token choices α′ of each kind (locally optimal or not) per seed and "
        "algorithm on example1"
    )
    gaussian_choices: PositiveInt = Field(description="the same on gaussian_unit")
    assumption_seeds: PositiveInt = Field(
        description="Assumption 1 is checked on the problems of seeds 1..assumption_seeds"
    )
    assumption_sizes: list[numbers(int, 1)] = Field(
        description="example1's [n, T] at which Assumption 1 is judged 'for d large' (Lemma 8)"
    )
    assumption_dims: numbers(int, 1) = Field(
        description="the d sweep: Assumption 1's share at each d is evidence; at the largest, "
        "'d large', it is judged"
    )
    direction_seeds: numbers(int, 1) = Field(
        description="[first, last]: local-gaussian-direction's seeds, none of the sweep's"
    )
    direction_radii: list[numbers(float, 0.0, strict=True)] = Field(
        description="per algorithm (in the order of [[algorithms]]), the scales R its locally "
        "optimal starts run at, increasing; at R above the first its step is scaled by "
        "(R / first)^(p−1), so that every run travels as far relative to its start"
    )
    direction_steps: PositiveInt = Field(description="steps of its runs")
    direction_travel: Positive = Field(
        description="how far every run must travel in its mirror map's space, "
        "‖∇ψ(W_T)‖ / ‖∇ψ(W_0)‖ = (‖W_T‖_p / ‖W_0‖_p)^(p−1) (NGD: ‖W_T‖_F / ‖W_0‖_F), so that "
        "the run, not its start, sets its final direction (else the claim is inconclusive)"
    )
    algorithms: Algorithms = Field(description="ngd and md runs ([[algorithms]] tables)")
    level: Positive = Field(description="fraction of starts a convergence claim needs")

    @model_validator(mode="after")
    def _shapes(self):
        for name in ("example1_shape", "gaussian_shape"):
            if len(getattr(self, name)) != 3:
                raise ValueError(f"{name} must be [n, T, d], got {list(getattr(self, name))!r}")
        for name in ("example1_shape", "gaussian_shape"):
            if getattr(self, name)[1] < 2:  # one token leaves the Att-SVM no constraint
                raise ValueError(f"{name} needs T >= 2 tokens, got {list(getattr(self, name))!r}")
        for k, size in enumerate(self.assumption_sizes):
            if len(size) != 2:
                raise ValueError(f"assumption_sizes[{k}] must be [n, T], got {list(size)!r}")
            if size[0] * size[1] > max(self.assumption_dims):
                raise ValueError(
                    f"assumption_sizes[{k}] needs d >= n*T = {size[0] * size[1]} at the largest "
                    f"of assumption_dims, got {max(self.assumption_dims)}"
                )
        first, last = self.direction_seeds if len(self.direction_seeds) == 2 else (0, 0)
        if not 1 <= first <= last or first <= self.seeds:
            raise ValueError(
                f"direction_seeds must be [first, last] with seeds < first <= last (fresh "
                f"seeds), got {list(self.direction_seeds)!r}"
            )
        radii = [list(r) for r in self.direction_radii]
        if len(radii) != len(self.algorithms) or any(r != sorted(set(r)) for r in radii):
            raise ValueError(
                f"direction_radii needs one increasing list of radii per algorithm "
                f"({len(self.algorithms)}), got {radii!r}"
            )
        n, T, d = self.example1_shape
        if n * T > d:
            raise ValueError(f"example1_shape needs d >= n*T = {n * T}, got {d}")
        for a in self.algorithms:
            if a.optimizer not in ("ngd", "md", "gd") or a.momentum:
                raise ValueError(f"algorithm {a.name!r}: only ngd, md and gd without momentum")
        return self
