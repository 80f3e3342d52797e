"""Registry, configs and claim summaries shared by every experiment."""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ..store import ResultsStore
from .config import validate

CONFIG_DIR = Path(__file__).parent / "configs"

# name → module; order is the order of `attnbias list` and `reproduce all`.
EXPERIMENTS = {
    "md-local": "attnbias.experiments.md_local",
    "md-joint": "attnbias.experiments.md_joint",
    "ngd-fixed": "attnbias.experiments.ngd_fixed",
    "ngd-joint": "attnbias.experiments.ngd_joint",
    "antipodal": "attnbias.experiments.antipodal",
    "kq-nuclear": "attnbias.experiments.kq_nuclear",
    "text-md": "attnbias.experiments.text_md",
    "text-finetune": "attnbias.experiments.text_finetune",
    "vision": "attnbias.experiments.vision",
}
SYNTHETIC = ("md-local", "md-joint", "ngd-fixed", "ngd-joint", "antipodal", "kq-nuclear")


@dataclass
class Claim:
    """One claim of the seed papers and whether this run supports it, with the numbers."""

    claim: str
    supported: bool
    evidence: dict = field(default_factory=dict)


def experiment_module(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    return importlib.import_module(EXPERIMENTS[name])


def read_toml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ValueError(f"config file {path} does not exist")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"config file {path} is not valid TOML: {err}") from err


def load_config(name: str, quick: bool = False, overrides: dict | None = None) -> dict:
    """The experiment's default config, with the [quick] table applied if asked, then overrides."""
    config = read_toml(CONFIG_DIR / f"{name}.toml")
    quick_table = config.pop("quick", {})
    if quick:
        config.update(quick_table)
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    config["experiment"] = name
    return validate_config(config)


def validate_config(config: dict) -> dict:
    """Check a resolved config against its experiment's SCHEMA (if the module declares one);
    raises ValueError naming the bad field."""
    name = config.get("experiment")
    schema = getattr(experiment_module(name), "SCHEMA", None)
    return config if schema is None else validate(config, schema, name)


def run_experiment(config: dict, out: str | Path) -> dict:
    """Run the experiment a resolved config names; writes config and summary.json under out."""
    config = validate_config(config)
    name = config["experiment"]
    module = experiment_module(name)
    store = ResultsStore(out)
    store.write_json("config.json", config)
    summary = module.run(config, Path(out))
    summary = {"experiment": name, **summary}
    if "claims" in summary:
        summary["claims"] = [asdict(c) if isinstance(c, Claim) else c for c in summary["claims"]]
    store.write_json("summary.json", summary)
    return summary
