"""The fields every synthetic experiment's config takes, and those of the data families several
share."""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from ..config import (
    Device,
    ExperimentConfig,
    Loss,
    NonNegativeInt,
    Positive,
    PositiveInt,
    Tokens,
    integer,
)
from ..engine import memory


class SweepConfig(ExperimentConfig):
    """Fields every synthetic experiment takes."""

    seeds: PositiveInt = Field(description="number of seeds: runs use seeds 1..seeds")
    grid_points: PositiveInt = Field(description="log-spaced steps at which metrics are recorded")
    batch_size: NonNegativeInt = Field(description="runs per batched program (0: all at once)")
    device: Device = Field(description="where the engine runs ('auto': CUDA when present)")

    def check_memory(self) -> None:
        """memory.SweepTooLarge, before any problem or run is built, when the runs this config
        makes cannot all be held: at least one run per seed and algorithm (or p), each with
        its d×d weights and its results, each seed's n×T×d problem, and the training of one
        run (memory.program_bytes)."""
        per_seed = max([len(getattr(self, k, ())) for k in ("algorithms", "ps")] + [1])
        steps = getattr(self, "steps", self.grid_points)
        steps = min(steps) if isinstance(steps, tuple) else steps
        shape = {
            k: getattr(self, k) for k in ("n", "T", "d") if isinstance(getattr(self, k, None), int)
        }
        d, X = shape.get("d", 0), math.prod(shape.values()) if "d" in shape else 0
        fields = ", ".join(f"{k} = {v:,}" for k, v in {"seeds": self.seeds, **shape}.items())
        one = memory.program_bytes(d * d, d * d, 3 * X, 2 * self.grid_points)
        memory.check_planned(
            self.experiment,
            self.seeds * per_seed,
            memory.least_run_bytes(steps, self.grid_points, d * d),
            self.seeds * memory.FLOAT * X + one,
            fields,
        )


class GaussianUnitConfig(SweepConfig):
    """Fields of the experiments on gaussian_unit data from a random W₀ (md-local, atlas)."""

    n: PositiveInt = Field(description="samples")
    T: Tokens = Field(description="tokens per sample (at least 2)")
    # in one dimension the unit tokens are ±1: a sample's tokens tie, its optimal token too
    d: integer(ge=2) = Field(description="dimension (at least 2)")
    loss: Loss = Field(description="margin loss")
    init_scale: Positive = Field(description="W₀ entries ~ N(0, init_scale²)")


class OptimalTokenConfig(SweepConfig):
    """Fields of the experiments on example1-type data (one optimal token per sample with
    score γ, the others 0) from a random W₀ (ngd-fixed, antipodal, ngd-rates,
    reexamine-polyak)."""

    n: PositiveInt = Field(description="samples")
    T: Tokens = Field(description="tokens per sample (at least 2)")
    d: PositiveInt = Field(description="dimension (≥ n·T)")
    opt_score: Positive = Field(description="score γ of the optimal tokens (others score 0)")
    loss: Loss = Field(description="margin loss")
    init_scale: Positive = Field(description="W₀ entries ~ N(0, init_scale²)")

    @model_validator(mode="after")
    def _tokens_fit_the_dimension(self):
        # the generator's head scores each optimal token and no other: n·T orthogonal constraints
        if self.n * self.T > self.d:
            raise ValueError(f"d must be >= n*T = {self.n * self.T}, got {self.d}")
        return self


class DMConfig(SweepConfig):
    """Fields of the experiments on the NGD paper's dm data (joint training: ngd-joint,
    joint-rates)."""

    n: PositiveInt = Field(description="samples")
    d: PositiveInt = Field(description="dimension")
    opt_norm: Positive = Field(description="norm of the label-carrying optimal token")
    noise: Positive = Field(description="scale of the noise token")
    loss: Loss = Field(description="margin loss")
