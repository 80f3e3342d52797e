"""The experiment pipeline: the registry that finds an experiment, its config resolved once
(`load_config`), and `run_experiment`, which runs it into a results store and publishes its
outputs (docs/ARCHITECTURE.md).

An experiment is anything with a `name`, a `description`, a `Config` (an
`attnbias.config.ExperimentConfig` subclass) and `run(config, out) -> summary`
(`ExperimentProtocol`); optionally `defaults`, a TOML file of default values with [quick] /
[paper] tables, and `check_data(config)`, which raises DataMissingError before anything trains.
The built-in ones are the modules of `EXPERIMENTS` (module-level `DESCRIPTION`, `Config`, `run`;
defaults in configs/NAME.toml); others are found by the entry-point group
`attnbias.experiments` (name = "package.module:Experiment") or named as "module:attribute"
(`attnbias run my_module:MyExperiment`, or `experiment = "my_module:MyExperiment"` in a TOML).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import math
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from .. import __version__
from ..config import ExperimentConfig, LooseConfig, read_toml, resolve
from ..engine.cluster import using
from ..judging.claims import STATUSES, Claim, reasons, status_of, verdict_columns, verdict_word
from ..store import (
    MAX_PUBLISHED_FILE_BYTES,
    ResultsStore,
    StoreReadOnly,
    UnsafeStore,
    config_key,
    json_text,
    parse_json,
)

logger = logging.getLogger(__name__)

CONFIG_DIR = Path(__file__).parent / "configs"
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


QUICK_NOTE = "quick: a smoke run, not evidence"


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


def experiment_module(name: str):
    """The module of a built-in experiment (deprecated: use find_experiment)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    return importlib.import_module(EXPERIMENTS[name])


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
    experiment = find_experiment(name)
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
    experiment = find_experiment(config["experiment"])
    return resolve(experiment.Config, experiment.reference, [(None, config)])


@functools.cache
def code_version() -> str:
    """The package version, plus `git describe` of its checkout when there is one."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return __version__
    git = described.stdout.strip()
    return f"{__version__}+g{git}" if described.returncode == 0 and git else __version__


# Fields where 0 means "all of them" (the whole data split): larger than any count.
ZERO_MEANS_ALL = ("train_size", "validation_size", "test_size")


def is_quick(config: ExperimentConfig | Mapping) -> bool:
    """Is the config below the experiment's full scale: is any field that its [quick] table
    reduces smaller than at full scale (fewer seeds, fewer steps, ...)?"""
    values = config.to_dict() if isinstance(config, ExperimentConfig) else dict(config)
    experiment = find_experiment(values["experiment"])
    if experiment.defaults is None:
        return False
    defaults = read_toml(experiment.defaults)

    def size(key, value):
        return math.inf if key in ZERO_MEANS_ALL and value == 0 else value

    return any(
        below(size(k, values.get(k)), size(k, defaults.get(k)))
        for k in defaults.pop("quick", {})
        if k in values
    )


def below(value, full) -> bool:
    if isinstance(value, (int, float)) and isinstance(full, (int, float)):
        return value < full
    if isinstance(value, list) and isinstance(full, list) and len(value) == len(full):
        return any(below(v, f) for v, f in zip(value, full))
    return value != full


def run_experiment(
    config: ExperimentConfig | Mapping,
    out: str | Path,
    reuse_from: str | Path | None = None,
    cluster=None,
    figure_formats=None,
) -> dict:
    """Run the experiment a resolved config names and publish its outputs under out (see
    store.py for the layout); returns the summary.

    If out already publishes this config, made by this code version from runs that are all
    still stored, with its figures in each of `figure_formats`, that summary is returned
    without loading a run (out may be read-only).
    Otherwise out is locked (StoreBusy if another process writes it), damaged runs are redone,
    and config, summary, metrics table and figures are written to a staging directory and
    published together. reuse_from: another results directory (it may be read-only) whose
    intact runs are copied in first instead of being trained again. cluster: an
    engine.cluster.Cluster or a distributed.Client: the experiment's sweep chunks, or
    training runs, are sent to its workers, which write into out (a directory they all
    reach); the outputs are the same as in-process (docs/CLUSTER.md). figure_formats: the
    formats figures are drawn in (`figures.checked_formats`; default: `figures.current_formats()`,
    PNG alone unless a `figures.drawing_formats` chose others)."""
    # (imported here: matplotlib is loaded only by commands that draw)
    from ..figures import checked_formats, current_formats, drawing_formats, lacking_formats

    formats = current_formats() if figure_formats is None else checked_formats(figure_formats)
    config = validate_config(config)
    out = Path(out)
    store = ResultsStore(out)
    identity = {"config_hash": config_key(config.to_dict()), "code_version": code_version()}
    current = published_summary(store, identity)
    if current is not None and not lacking_formats(current.get("figures", []), formats):
        return current
    check_memory = getattr(config, "check_memory", None)  # before any problem or run is built
    if check_memory is not None:
        check_memory()
    try:
        with store.lock():
            if reuse_from is not None:
                store.copy_runs_from(ResultsStore(reuse_from))
            with using(cluster), drawing_formats(formats):
                return publish_run(store, config, identity)
    except StoreReadOnly as err:
        raise StoreReadOnly(
            f"{err}, and it holds no up-to-date outputs of this config; write elsewhere: "
            f"--out NEW_DIR --from {out} reuses its runs"
        ) from err


def publish_run(store: ResultsStore, config: ExperimentConfig, identity: dict) -> dict:
    """Run the experiment into a staging directory and publish it as outputs/<config hash>."""
    experiment = find_experiment(config.experiment)
    stage = store.staging()
    staged = ResultsStore(stage)  # its files are written through the store's handles
    try:
        staged.write_file("config.json", json_text(config.to_dict()).encode())
        summary = experiment.run(config, stage)
        final = store.root / "outputs" / identity["config_hash"]
        summary, run_keys = complete_summary(config, summary, identity, stage, final)
        staged.write_file("summary.json", json_text(summary).encode())
        store.publish(stage, identity["config_hash"], runs=run_keys, **identity)
    finally:
        store.discard_stage(stage)
    return with_paths(summary, store.root)


def complete_summary(config, summary, identity, stage: Path, final: Path):
    """(summary.json's content, the run keys it was made from): claims as dicts, each with
    the number of diverged runs it leaves out, figure paths relative to the experiment
    directory, the config hash and code version, and the quick-scale note."""
    summary = {"experiment": config.experiment, **identity, **summary}
    if is_quick(config):
        summary["scale"] = QUICK_NOTE
    run_keys = summary.pop("run_keys", None)
    diverged = summary.get("diverged", [])
    claims = [asdict(c) if isinstance(c, Claim) else c for c in summary.get("claims", [])]
    for claim in claims:
        claim["evidence"] = {**claim["evidence"], "diverged_runs_excluded": len(diverged)}
    summary["claims"] = claims
    if "figures" in summary:
        root = final.parent.parent
        summary["figures"] = [
            str((final / Path(f).name).relative_to(root)) if Path(f).parent == stage else f
            for f in summary["figures"]
        ]
    return summary, run_keys


def published_summary(store: ResultsStore, identity: dict) -> dict | None:
    """The published summary if it is of this config and code version and every run it was
    made from is still stored (manifests only: no run is loaded, nothing is drawn); else None.
    The summary's bytes must match the sha256 in the publication's manifest (an edited summary
    is never served as current) and it must have the shape attnbias writes (read_summary: a
    forged summary and manifest of another shape are said in one line and made again); the
    other files are checked by size."""
    current = store.current_manifest()
    if current is None:
        return None
    name, manifest = current
    if any(manifest.get(k) != v for k, v in identity.items()) or manifest.get("runs") is None:
        return None
    try:
        if not all(store.has(key) for key in manifest["runs"]):
            return None
        path = Path("outputs", name, "summary.json")
        summary = read_summary(store.published_file(path), store.directory / path)
    except (UnsafeStore, ValueError) as err:  # edited, replaced or forged: made again
        logger.warning("%s; the outputs are made again", err)
        return None
    except OSError:
        return None
    return {**with_paths(summary, store.root), "reused_outputs": True}


def stored_work(config, out: str | Path) -> str | None:
    """What out already holds of this config, in words, if a rerun reuses it: its published
    outputs (this code version, every run still stored), or, made by another code version, its
    N runs (a rerun recomputes the outputs from them); None otherwise. Reads manifests only and
    creates nothing."""
    store = ResultsStore(out)
    try:
        current = store.current_manifest()
        if current is None:
            return None
        manifest = current[1]
        runs = manifest.get("runs")
        if manifest.get("config_hash") != config_key(config.to_dict()) or runs is None:
            return None
        if not all(store.has(key) for key in runs):
            return None
    except (UnsafeStore, OSError, ValueError):
        return None
    if manifest.get("code_version") == code_version():
        return "its published outputs of this config"
    return f"its {len(runs)} runs of this config" if runs else None


def read_summary(data: bytes, shown: Path) -> dict:
    """A published summary.json's content; ValueError naming `shown` if it is not a summary
    attnbias writes: a JSON object whose claims, figures, diverged runs and tables have the
    shape that the commands reading it (verdicts, --strict, --report) rely on (its nesting is
    bounded before it is parsed: store.parse_json)."""
    try:
        summary = parse_json(data, shown, MAX_PUBLISHED_FILE_BYTES)
        problem = _summary_problem(summary)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as err:
        problem = f"{type(err).__name__}: {err}"
    if problem is not None:
        raise ValueError(f"{shown} is not a summary attnbias writes ({problem})")
    return summary


def _summary_problem(summary) -> str | None:
    """What in a summary's shape its readers cannot use (None: nothing); their own errors
    (KeyError, ...) propagate, the claims being read as the commands read them."""
    if not isinstance(summary, dict):
        return "not a JSON object"
    if "claims" not in summary:
        return "no claims"
    shapes = {"claims": (list, dict), "figures": (list, str), "diverged": (list, dict)}
    for key, (outer, inner) in shapes.items():
        value = summary.get(key, [])
        if not isinstance(value, outer) or not all(isinstance(v, inner) for v in value):
            return f"its {key} are not a list of {inner.__name__}"
    tables = summary.get("tables", {})
    if not isinstance(tables, dict) or not all(
        isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
        for rows in tables.values()
    ):
        return "its tables are not lists of rows"
    if not isinstance(summary.get("scale", ""), str):
        return "its scale is not text"
    printed = {"algorithm", "seed", "diverged_at"}  # what the verdicts print of a diverged run
    if not all(printed <= run.keys() for run in summary.get("diverged", [])):
        return "a diverged run without its algorithm, seed and step"
    for claim in summary["claims"]:
        if not isinstance(claim.get("claim"), str) or not isinstance(claim.get("evidence"), dict):
            return "a claim without its text and evidence"
        if status_of(claim) not in STATUSES:
            return f"a claim's status is {status_of(claim)!r}"
        for read in (verdict_word, reasons, verdict_columns):
            read(claim)
    return None


def with_paths(summary: dict, root: Path) -> dict:
    """The summary with its figure paths (relative to the experiment directory) made usable
    from the current directory."""
    if "figures" not in summary:
        return summary
    return {**summary, "figures": [str(root / f) for f in summary["figures"]]}
