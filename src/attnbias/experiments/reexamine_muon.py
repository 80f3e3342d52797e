"""reexamine-muon: was "Muon behaves like spectral descent: not supported" an artefact of torch's
Muon (bfloat16 Newton–Schulz, ‖g‖_F floored at 1e-7, so it stalls once gradients are small)?
Beside the atlas's SpectralDescent and torch's Muon, on the same data: a float64 Muon-style
method (SpectralDescent by Newton–Schulz with momentum 0.95, Muon's default, no floor), in
both orders (momentum on the gradient, Muon's; on the direction, NGD-mom's), with and without
Nesterov, and the same without momentum, which separates the orthogonalisation from the
momentum. Each arm is judged at its own η, chosen on selection seeds disjoint from the
evaluation seeds by its median final gap in `tuned_in` (experiments/tuning_sweep.py); an arm
in `longer` runs that many times the steps at its config η, untuned; the claims listed in
`at_config_step` are judged again with every arm at its config η (the atlas's). Two
candidate explanations are judged: torch's implementation (`torch-muon-explains`) and Muon's
momentum (`momentum-explains`) (experiments/reexamine_atlas.py; configs/reexamine-muon.toml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from ..config import PositiveInt, Text
from ..engine import RunSpec
from . import atlas, reexamine_atlas
from .tuning_sweep import TuningConfig, tuned_sweep

DESCRIPTION = "Re-examines atlas's Muon verdict: torch's Muon vs a float64 Muon-style method"


class Config(reexamine_atlas.Config, TuningConfig):
    tuned_in: Text = Field(
        description="the norm (a label of `norms`) whose final margin gap chooses each arm's step"
    )
    longer: dict[Text, PositiveInt] = Field(
        {},
        description="algorithm → how many times `steps` it runs; such an arm is not tuned: it "
        "runs at its config η (chosen at `steps`, written in the config) on the evaluation seeds",
    )
    at_config_step: tuple[Text, ...] = Field(
        (),
        description="ids (after 'NAME/') of claims judged again with every arm at its config η, "
        "untuned, as claim 'ID-at-config-step'",
    )

    def run_steps(self, name: str) -> int:
        return self.steps * self.longer.get(name, 1)

    def judged_at_config_step(self) -> tuple[str, ...]:
        return tuple(self.at_config_step)

    @model_validator(mode="after")
    def _tuned_in_is_measured(self):
        labels = [n.label for n in self.norms]
        if self.tuned_in not in labels:
            raise ValueError(f"tuned_in = {self.tuned_in!r} is not one of norms {labels}")
        names = [a.name for a in self.algorithms]
        for name in self.longer:
            if name not in names:
                raise ValueError(f"longer.{name} is not one of the algorithms {names}")
        return self


def specs(config: Config, run_seeds=None, algorithms=None) -> list[RunSpec]:
    """atlas.specs, each algorithm over its own number of steps (`Config.run_steps`)."""
    algorithms = config.algorithms if algorithms is None else algorithms
    return [
        spec
        for algorithm in algorithms
        for spec in atlas.specs(
            config.model_copy(update={"steps": config.run_steps(algorithm.name)}),
            run_seeds,
            [algorithm],
        )
    ]


def run(config: Config, out: Path) -> dict:
    """Every runnable arm but the `longer` ones tuned (`tuned_sweep` by its final gap), the
    claims judged on the evaluation seeds at the chosen steps (the `longer` arms at their config
    steps), and those of `at_config_step` again with every arm at its config step."""
    metric = f"gap/{config.tuned_in}"
    names = [a.name for a in atlas.runnable(config.algorithms) if a.name not in config.longer]
    report, at_config, tuned = tuned_sweep(config, out, specs, [metric], names, "final")
    chosen = tuned.at_chosen(metric)
    groups = {name: chosen.get(name, c) for name, c in at_config.items()}
    return reexamine_atlas.published(config, out, report, groups, tuned, metric, at_config)


__all__ = ["DESCRIPTION", "Config", "run", "specs"]
