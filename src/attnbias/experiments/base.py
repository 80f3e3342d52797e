"""Registry, configs and claim summaries shared by every experiment."""

from __future__ import annotations

import functools
import importlib
import json
import math
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .. import __version__
from ..claims import Claim
from ..config import validate
from ..engine.cluster import using
from ..store import (
    MANIFEST,
    ResultsStore,
    StoreReadOnly,
    config_key,
    json_text,
    manifest_problem,
)

CONFIG_DIR = Path(__file__).parent / "configs"

# name → module; order is the order of `attnbias list` and `reproduce all`.
EXPERIMENTS = {
    "md-local": "attnbias.experiments.md_local",
    "md-joint": "attnbias.experiments.md_joint",
    "ngd-fixed": "attnbias.experiments.ngd_fixed",
    "ngd-joint": "attnbias.experiments.ngd_joint",
    "antipodal": "attnbias.experiments.antipodal",
    "kq-nuclear": "attnbias.experiments.kq_nuclear",
    "atlas": "attnbias.experiments.atlas",
    "text-md": "attnbias.experiments.text_md",
    "text-finetune": "attnbias.experiments.text_finetune",
    "vision": "attnbias.experiments.vision",
}
SYNTHETIC = ("md-local", "md-joint", "ngd-fixed", "ngd-joint", "antipodal", "kq-nuclear", "atlas")


QUICK_NOTE = "quick: a smoke run, not evidence"


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


def load_config(
    name: str, quick: bool = False, overrides: dict | None = None, paper: bool = False
) -> dict:
    """The experiment's default config, with the [quick] table (or the [paper] table: the
    paper's own model size, where the config has one) applied if asked, then overrides."""
    config = read_toml(CONFIG_DIR / f"{name}.toml")
    quick_table, paper_table = config.pop("quick", {}), config.pop("paper", None)
    if paper and paper_table is None:
        raise ValueError(f"--paper: experiment {name} has no paper-size configuration")
    if quick:
        config.update(quick_table)
    if paper:
        config.update(paper_table)
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    config["experiment"] = name
    return validate_config(config)


def validate_config(config: dict) -> dict:
    """Check a resolved config against its experiment's SCHEMA (if the module declares one);
    raises ValueError naming the bad field."""
    name = config.get("experiment")
    schema = getattr(experiment_module(name), "SCHEMA", None)
    return config if schema is None else validate(config, schema, name)


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
ZERO_MEANS_ALL = ("train_size", "test_size")


def is_quick(config: dict) -> bool:
    """Is the config below the experiment's full scale: is any field that its [quick] table
    reduces smaller than at full scale (fewer seeds, fewer steps, ...)?"""
    defaults = read_toml(CONFIG_DIR / f"{config['experiment']}.toml")

    def size(key, value):
        return math.inf if key in ZERO_MEANS_ALL and value == 0 else value

    return any(
        below(size(k, config.get(k)), size(k, defaults.get(k)))
        for k in defaults.pop("quick", {})
        if k in config
    )


def below(value, full) -> bool:
    if isinstance(value, (int, float)) and isinstance(full, (int, float)):
        return value < full
    if isinstance(value, list) and isinstance(full, list) and len(value) == len(full):
        return any(below(v, f) for v, f in zip(value, full))
    return value != full


def run_experiment(
    config: dict, out: str | Path, reuse_from: str | Path | None = None, cluster=None
) -> dict:
    """Run the experiment a resolved config names and publish its outputs under out (see
    store.py for the layout); returns the summary.

    If out already publishes this config, made by this code version from runs that are all
    still stored, that summary is returned without loading a run (out may be read-only).
    Otherwise out is locked (StoreBusy if another process writes it), damaged runs are redone,
    and config, summary, metrics table and figures are written to a staging directory and
    published together. reuse_from: another results directory (it may be read-only) whose
    intact runs are copied in first instead of being trained again. cluster: an
    engine.cluster.Cluster or a distributed.Client: the experiment's sweep chunks, or
    training runs, are sent to its workers, which write into out (a directory they all
    reach); the outputs are the same as in-process (docs/CLUSTER.md)."""
    config = validate_config(config)
    out = Path(out)
    store = ResultsStore(out)
    identity = {"config_hash": config_key(config), "code_version": code_version()}
    current = published_summary(store, identity)
    if current is not None:
        return current
    try:
        with store.lock():
            if reuse_from is not None:
                store.copy_runs_from(ResultsStore(reuse_from))
            with using(cluster):
                return publish_run(store, config, identity)
    except StoreReadOnly as err:
        raise StoreReadOnly(
            f"{err}, and it holds no up-to-date outputs of this config; write elsewhere: "
            f"--out NEW_DIR --from {out} reuses its runs"
        ) from err


def publish_run(store: ResultsStore, config: dict, identity: dict) -> dict:
    """Run the experiment into a staging directory and publish it as outputs/<config hash>."""
    module = experiment_module(config["experiment"])
    stage = store.staging()
    try:
        (stage / "config.json").write_text(json_text(config))
        summary = module.run(config, stage)
        final = store.root / "outputs" / identity["config_hash"]
        summary, run_keys = complete_summary(config, summary, identity, stage, final)
        (stage / "summary.json").write_text(json_text(summary))
        store.publish(stage, identity["config_hash"], runs=run_keys, **identity)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return with_paths(summary, store.root)


def complete_summary(config, summary, identity, stage: Path, final: Path):
    """(summary.json's content, the run keys it was made from): claims as dicts, each with
    the number of diverged runs it leaves out, figure paths relative to the experiment
    directory, the config hash and code version, and the quick-scale note."""
    summary = {"experiment": config["experiment"], **identity, **summary}
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
    made from is still stored (manifests only: nothing is loaded or drawn); else None."""
    published = store.published()
    if published is None:
        return None
    try:
        manifest = json.loads((published / MANIFEST).read_text())
        if any(manifest.get(k) != v for k, v in identity.items()) or manifest.get("runs") is None:
            return None
        if manifest_problem(published, deep=False) is not None:
            return None
        if not all(store.has(key) for key in manifest["runs"]):
            return None
        summary = json.loads((published / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return {**with_paths(summary, store.root), "reused_outputs": True}


def with_paths(summary: dict, root: Path) -> dict:
    """The summary with its figure paths (relative to the experiment directory) made usable
    from the current directory."""
    if "figures" not in summary:
        return summary
    return {**summary, "figures": [str(root / f) for f in summary["figures"]]}
