"""The experiment pipeline: `run_experiment` runs the experiment a resolved config names (found
in `attnbias.experiment_registry`, which also resolves configs: `load_config`) into a results
store and publishes its outputs (docs/ARCHITECTURE.md); `read_summary` reads them back.
"""

from __future__ import annotations

import functools
import logging
import math
import subprocess
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from .. import __version__
from ..config import ExperimentConfig, read_toml
from ..engine.cluster import using
from ..experiment_registry import find_experiment, validate_config
from ..judging.claims import (
    STATUSES,
    Claim,
    decoded_summary,
    reasons,
    status_of,
    verdict_columns,
    verdict_word,
)
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

QUICK_NOTE = "quick: a smoke run, not evidence"


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
        summary = decoded_summary(parse_json(data, shown, MAX_PUBLISHED_FILE_BYTES))
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
