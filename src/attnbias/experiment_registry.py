"""The registry of experiments: the one table of the built-in ones, how an experiment is found
by its name, and its config resolved once (`load_config`). It sits below judging and the
drivers (docs/ARCHITECTURE.md): the claims register states each protocol from a config read
here, and `experiments.base` runs what it finds here.

An experiment is anything with a `name`, a `description`, a `Config` (an
`attnbias.config.ExperimentConfig` subclass) and `run(config, out) -> summary`
(`ExperimentProtocol`); optionally `defaults`, a TOML file of default values with [quick] /
[paper] tables, and `check_data(config)`, which raises DataMissingError before anything trains.
The built-in ones are the modules of `EXPERIMENTS` (module-level `DESCRIPTION`, `Config`, `run`;
defaults in experiments/configs/NAME.toml), imported only when found; others are found by the
entry-point group `attnbias.experiments` (name = "package.module:Experiment") or named as
"module:attribute" (`attnbias run my_module:MyExperiment`, or
`experiment = "my_module:MyExperiment"` in a TOML).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .config import ExperimentConfig, LooseConfig, read_toml, resolve

CONFIG_DIR = Path(__file__).parent / "experiments" / "configs"
ENTRY_POINTS = "attnbias.experiments"

# The built-in experiments, name → module, in one order: `attnbias list`'s, and `reproduce
# all`'s (which runs and reports the synthetic ones): the seed papers' synthetic experiments,
# the re-examinations, the rates and lemmas; then the experiments on real data.
SYNTHETIC_EXPERIMENTS = {
    "md-local": "attnbias.experiments.md_local",
    "md-joint": "attnbias.experiments.md_joint",
    "ngd-fixed": "attnbias.experiments.ngd_fixed",
    "ngd-joint": "attnbias.experiments.ngd_joint",
    "antipodal": "attnbias.experiments.antipodal",
    "kq-nuclear": "attnbias.experiments.kq_nuclear",
    "atlas": "attnbias.experiments.atlas",
    "reexamine-muon": "attnbias.experiments.reexamine_muon",
    "reexamine-adam": "attnbias.experiments.reexamine_adam",
    "reexamine-polyak": "attnbias.experiments.reexamine_polyak",
    "ngd-rates": "attnbias.experiments.ngd_rates",
    "local-global": "attnbias.experiments.local_global",
    "md-plain": "attnbias.experiments.md_plain",
    "joint-rates": "attnbias.experiments.joint_rates",
    "trajectory-lemmas": "attnbias.experiments.trajectory_lemmas",
}
REAL_DATA_EXPERIMENTS = {
    "text-md": "attnbias.experiments.text_md",
    "text-finetune": "attnbias.experiments.text_finetune",
    "vision": "attnbias.experiments.vision",
}
EXPERIMENTS = {**SYNTHETIC_EXPERIMENTS, **REAL_DATA_EXPERIMENTS}
SYNTHETIC = tuple(SYNTHETIC_EXPERIMENTS)  # what `reproduce all` runs, in its order
# The built-in experiments whose Config lives apart from the driver, name → module: the claims
# register states their protocols from their configs, and reading one imports no driver.
CONFIG_MODULES = {
    name: f"attnbias.experiment_configs.{name.replace('-', '_')}"
    for name in (
        "ngd-rates",
        "joint-rates",
        "local-global",
        "kq-nuclear",
        "text-md",
        "text-finetune",
        "vision",
    )
}


class ExperimentProtocol(Protocol):
    """What an experiment provides (a class with these attributes, or an instance of one)."""

    name: str
    description: str
    Config: type[ExperimentConfig]

    def run(self, config: ExperimentConfig, out: Path) -> dict:
        """Train into `out` (a staging directory; its runs go to ResultsStore(out)) and return
        the summary: "claims" (attnbias.judging.claims.Claim), and optionally "figures" (paths of
        files written in out), "tables", "run_keys", "diverged" and any JSON-able numbers."""


@dataclass(frozen=True)
class Experiment:
    """An experiment as the pipeline runs it. reference: how its configs name it (their
    "experiment" field: a registered name or "module:attribute"); defaults: its TOML of
    default values (None: the Config's own defaults)."""

    name: str
    description: str
    Config: type[ExperimentConfig]
    run: Callable[[ExperimentConfig, Path], dict]
    reference: str
    defaults: Path | None = None
    check_data: Callable[[ExperimentConfig], None] | None = None


def experiment_names() -> list[str]:
    """The registered experiments: the built-in ones, then those of installed packages."""
    return [*EXPERIMENTS, *(n for n in _entry_points() if n not in EXPERIMENTS)]


def _entry_points() -> dict:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}


def find_experiment(reference: str) -> Experiment:
    """The experiment a name (built-in or of an entry point) or a "module:attribute" names;
    ValueError saying what is registered otherwise."""
    if not isinstance(reference, str):
        raise ValueError(f"experiment must be a name or module:attribute, got {reference!r}")
    if reference in EXPERIMENTS:
        return _from_module(reference, EXPERIMENTS[reference])
    entry_points = _entry_points()
    if reference in entry_points:
        return _adapt(entry_points[reference].load(), reference)
    if ":" in reference:
        module, _, attribute = reference.partition(":")
        try:
            found = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as err:
            raise ValueError(f"experiment {reference!r} cannot be imported: {err}") from None
        return _adapt(found, reference)
    raise ValueError(
        f"unknown experiment {reference!r}; choose from {', '.join(experiment_names())} "
        "or give module:attribute"
    )


def _from_module(name: str, path: str) -> Experiment:
    """A built-in experiment: a module with DESCRIPTION, Config and run."""
    module = importlib.import_module(path)
    return Experiment(
        name,
        module.DESCRIPTION,
        getattr(module, "Config", LooseConfig),
        module.run,
        name,
        CONFIG_DIR / f"{name}.toml",
        getattr(module, "check_data", None),
    )


def _adapt(found, reference: str) -> Experiment:
    """An Experiment of an object following ExperimentProtocol (a class is instantiated)."""
    experiment = found() if isinstance(found, type) else found
    missing = [a for a in ("name", "description", "Config", "run") if not hasattr(experiment, a)]
    if missing:
        raise ValueError(
            f"experiment {reference!r} lacks {', '.join(missing)} (an experiment has name, "
            "description, Config and run(config, out); docs/ARCHITECTURE.md)"
        )
    if not (
        isinstance(experiment.Config, type) and issubclass(experiment.Config, ExperimentConfig)
    ):
        raise ValueError(
            f"experiment {reference!r}: Config must be a subclass of "
            "attnbias.config.ExperimentConfig"
        )
    defaults = getattr(experiment, "defaults", None)
    if defaults is not None:
        defaults = Path(defaults)
        if not defaults.is_absolute():  # relative to the module that defines the experiment
            module = importlib.import_module(type(experiment).__module__)
            defaults = Path(module.__file__).parent / defaults
    return Experiment(
        experiment.name,
        experiment.description,
        experiment.Config,
        experiment.run,
        reference,
        defaults,
        getattr(experiment, "check_data", None),
    )


@dataclass(frozen=True)
class ConfigSchema:
    """What reading an experiment's configs needs: the experiment's name, its Config, how its
    configs name it and its TOML of defaults (None: the Config's own defaults)."""

    name: str
    Config: type[ExperimentConfig]
    reference: str
    defaults: Path | None


def config_schema(reference: str) -> ConfigSchema:
    """The ConfigSchema of the experiment a reference names (as find_experiment); for one of
    CONFIG_MODULES without importing its driver."""
    if isinstance(reference, str) and reference in CONFIG_MODULES:
        module = importlib.import_module(CONFIG_MODULES[reference])
        return ConfigSchema(reference, module.Config, reference, CONFIG_DIR / f"{reference}.toml")
    experiment = find_experiment(reference)
    return ConfigSchema(
        experiment.name, experiment.Config, experiment.reference, experiment.defaults
    )


def load_config(
    name: str,
    quick: bool = False,
    overrides: Mapping | None = None,
    paper: bool = False,
    layers: Sequence[tuple[str | None, Mapping]] = (),
) -> ExperimentConfig:
    """The experiment's resolved config: its defaults, with the [quick] table (or the [paper]
    table: the paper's own model size, where the config has one) applied if asked, then
    overrides, then each (origin, fields) of layers (a config file, command-line options;
    origin is named in errors). Every rule is checked here: ConfigError (a ValueError) names
    the origin, the field, the value and the rule."""
    experiment = config_schema(name)
    defaults, source = {}, None
    if experiment.defaults is not None:
        defaults, source = read_toml(experiment.defaults), str(experiment.defaults)
    quick_table, paper_table = defaults.pop("quick", {}), defaults.pop("paper", None)
    if paper and paper_table is None:
        raise ValueError(f"--paper: experiment {experiment.name} has no paper-size configuration")
    stack = [(source, defaults)]
    if quick:
        stack.append((f"{source} [quick]", quick_table))
    if paper:
        stack.append((f"{source} [paper]", paper_table))
    stack += [(None, overrides or {}), *layers]
    return resolve(experiment.Config, experiment.reference, stack)


def validate_config(config: ExperimentConfig | Mapping) -> ExperimentConfig:
    """The typed config of a resolved config (a mapping with its "experiment" is checked
    against that experiment's Config); ConfigError naming the bad field."""
    if isinstance(config, ExperimentConfig):
        return config
    if not isinstance(config, Mapping) or "experiment" not in config:
        raise ValueError("a config must be a mapping that names its experiment")
    experiment = config_schema(config["experiment"])
    return resolve(experiment.Config, experiment.reference, [(None, config)])
