"""The fields every real-data experiment's config takes, and those of the optimiser comparisons."""

from __future__ import annotations

from pydantic import Field

from ..config import (
    Device,
    ExperimentConfig,
    NonNegativeInt,
    OptimizerTables,
    PositiveInt,
    SeedIds,
    Text,
    numbers,
    real,
)


class RealConfig(ExperimentConfig):
    """Fields every real-data experiment takes."""

    seeds: SeedIds = Field(
        description="seeds of the runs: a list, or a count n meaning seeds 0 … n−1"
    )
    steps: PositiveInt = Field(description="training steps of every run")
    batch_size: PositiveInt = Field(description="minibatch size")
    eval_every: PositiveInt = Field(description="steps between test evaluations")
    train_size: NonNegativeInt = Field(
        description="training examples: a fixed random subset (0: all)"
    )
    test_size: NonNegativeInt = Field(description="test examples: a fixed random subset (0: all)")
    threads: NonNegativeInt = Field(description="torch threads (0: torch's default)")

    @property
    def seed_list(self) -> list[int]:
        """The seeds: the list given, or 0 … n−1 for a count n."""
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def selection_seed(self) -> int:
        """The seed the learning-rate search trains from (the first). Its evaluated runs share
        that seed's initial weights and data order with the runs that chose the rate, so the
        claims leave it out (`evaluation_seeds`)."""
        return self.seed_list[0]

    @property
    def evaluation_seeds(self) -> list[int]:
        """The seeds the claims compare: every seed but the selection seed."""
        return [seed for seed in self.seed_list if seed != self.selection_seed]


class CompareConfig(RealConfig):
    """The fields of the experiments that compare optimisers on one model (text-finetune,
    vision); each narrows `datasets` to its own."""

    datasets: tuple[Text, ...] = Field(description="data sets")
    optimizers: OptimizerTables = Field(
        description="the optimisers compared ([[optimizers]] tables); each one's rate is the "
        "centre of its search grid"
    )
    rate_grid: numbers(float, 0, strict=True) = Field(
        description="multipliers of each optimiser's rate (lr; SPS: lr_max) tried by the search"
    )
    rate_factor: real(gt=1) = Field(
        description="step past an edge of the grid when the best rate sits on it"
    )
    rate_extensions: NonNegativeInt = Field(
        description="how many times the grid may be extended past an edge"
    )
    search_steps: PositiveInt = Field(description="steps of each search run (from the first seed)")
    device: Device = Field(description="where to train ('auto': CUDA when present)")
