"""Experiments reachable as `attnbias reproduce NAME` (docs/ARCHITECTURE.md).

Each built-in experiment is a module with `DESCRIPTION`, `Config` (a frozen
`attnbias.config.ExperimentConfig`) and `run(config, out: Path) -> dict` (the summary), and a
config file `configs/NAME.toml` whose optional `[quick]` table overrides the full-scale values.
Experiments outside the package register through the entry-point group `attnbias.experiments`
or are named as "module:attribute" (`attnbias.experiment_registry.ExperimentProtocol`).
Modules are imported only when used, so synthetic experiments never pay for the real-data
dependencies.
"""

from ..experiment_registry import (
    EXPERIMENTS,
    SYNTHETIC,
    ExperimentProtocol,
    experiment_names,
    find_experiment,
    load_config,
)
from ..judging.claims import Claim
from .base import run_experiment

__all__ = [
    "EXPERIMENTS",
    "SYNTHETIC",
    "Claim",
    "ExperimentProtocol",
    "experiment_names",
    "find_experiment",
    "load_config",
    "run_experiment",
]
