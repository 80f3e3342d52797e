"""Experiments reachable as `attnbias reproduce NAME`.

Each experiment is a module with `DESCRIPTION` and `run(config: dict, out: Path) -> dict` (the
summary), and a config file `configs/NAME.toml` whose optional `[quick]` table overrides the
full-scale values. Modules are imported only when run, so synthetic experiments never pay for
the real-data dependencies.
"""

from ..claims import Claim
from .base import EXPERIMENTS, SYNTHETIC, load_config, run_experiment

__all__ = ["EXPERIMENTS", "SYNTHETIC", "Claim", "load_config", "run_experiment"]
