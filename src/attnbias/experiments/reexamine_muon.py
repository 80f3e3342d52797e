"""reexamine-muon: was "Muon behaves like spectral descent: not supported" an artefact of torch's
Muon (bfloat16 Newton–Schulz, ‖g‖_F floored at 1e-7, so it stalls once gradients are small)?
Beside the atlas's SpectralDescent and torch's Muon, on the same data: a float64 Muon-style
method (SpectralDescent by Newton–Schulz with momentum 0.95, Muon's default, no floor), in
both orders (momentum on the gradient, Muon's; on the direction, NGD-mom's), with and without
Nesterov, and the same without momentum, which separates the orthogonalisation from the
momentum. Each arm is judged at its own η, chosen on selection seeds disjoint from the
evaluation seeds by its median final gap in `tuned_in` (experiments/tuning_sweep.py). Two
candidate explanations are judged: torch's implementation (`torch-muon-explains`) and Muon's
momentum (`momentum-explains`) (experiments/reexamine_atlas.py; configs/reexamine-muon.toml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from ..config import Text
from . import atlas, reexamine_atlas
from .tuning_sweep import TuningConfig, tuned_sweep

DESCRIPTION = "Re-examines atlas's Muon verdict: torch's Muon vs a float64 Muon-style method"


class Config(reexamine_atlas.Config, TuningConfig):
    tuned_in: Text = Field(
        description="the norm (a label of `norms`) whose final margin gap chooses each arm's step"
    )

    @model_validator(mode="after")
    def _tuned_in_is_measured(self):
        labels = [n.label for n in self.norms]
        if self.tuned_in not in labels:
            raise ValueError(f"tuned_in = {self.tuned_in!r} is not one of norms {labels}")
        return self


def run(config: Config, out: Path) -> dict:
    """Every runnable arm tuned (`tuned_sweep` by its final gap), the claims judged on the
    evaluation seeds at the chosen steps."""
    metric = f"gap/{config.tuned_in}"
    names = [a.name for a in atlas.runnable(config.algorithms)]
    report, _, tuned = tuned_sweep(config, out, atlas.specs, [metric], names, "final")
    groups = tuned.at_chosen(metric)
    return reexamine_atlas.published(config, out, report, groups, tuned, metric)


__all__ = ["DESCRIPTION", "Config", "run"]
