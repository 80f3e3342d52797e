"""The `attnbias` command line: list, reproduce, run, svm."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from .experiments.base import EXPERIMENTS, SYNTHETIC, load_config, read_toml, run_experiment


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "quiet", False):
        os.environ["TQDM_DISABLE"] = "1"  # tqdm reads it at every bar
    try:
        return args.command(args)
    except ValueError as err:  # bad input: say what, not where in the code
        print(f"attnbias: error: {err}", file=sys.stderr)
        return 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="attnbias", description="The implicit bias of attention: experiments and solvers."
    )
    sub = p.add_subparsers(required=True, metavar="COMMAND")

    c = sub.add_parser("list", help="list the experiments")
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
    c.add_argument("--seeds", type=int, help="override the number of seeds")
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
    c.set_defaults(command=reproduce)

    c = sub.add_parser("run", help="run one experiment from a TOML config file")
    c.add_argument("config", help="TOML file: experiment = NAME and the fields to change")
    c.add_argument("--quick", action="store_true", help="start from the quick-scale defaults")
    c.add_argument("--out", help="output directory (default: results/NAME)")
    c.add_argument("--quiet", action="store_true", help="no progress bars")
    add_strict(c)
    c.set_defaults(command=run_config)

    c = sub.add_parser("svm", help="solve the Att-SVM for arrays in a .npz file")
    c.add_argument("file", help=".npz with X (n,T,d), z (n,d) and alpha (n,), or W, or y and v")
    c.add_argument("--norm", default="2", help="2 (= fro), any p ≥ 1, or nuc (default 2)")
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
    for name, module in EXPERIMENTS.items():
        kind = "synthetic" if name in SYNTHETIC else "real data"
        try:
            description = importlib.import_module(module).DESCRIPTION
        except ImportError as err:  # a real-data experiment whose extras are not installed
            description = f"(unavailable: {err})"
        print(f"{name:14s} {kind:10s} {description}")
    return 0


def reproduce(args) -> int:
    names = []
    for name in args.names:
        if name != "all" and name not in EXPERIMENTS:
            raise ValueError(
                f"unknown experiment {name!r}; choose from all, {', '.join(EXPERIMENTS)}"
            )
        names += [n for n in (SYNTHETIC if name == "all" else [name]) if n not in names]
    quick = args.quick or (args.names == ["all"] and not args.full)
    start = time.perf_counter()
    summaries, configs = {}, {}
    for name in names:
        configs[name] = load_config(name, quick=quick, overrides={"seeds": args.seeds})
        source = Path(args.reuse_from) / name if args.reuse_from else None
        summaries[name] = _run(configs[name], Path(args.out) / name, source)
    print(f"\n{len(names)} experiment(s) in {time.perf_counter() - start:.1f} s")
    if args.report:
        from .experiments.report import write_report

        seeds = f" --seeds {args.seeds}" if args.seeds else ""
        scale = "--quick" if quick else "--full"
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
    config = load_config(name, quick=args.quick, overrides=fields)
    summary = _run(config, Path(args.out or Path("results") / name))
    return strict_exit({name: summary}, args.strict)


def _run(config: dict, out: Path, reuse_from: Path | None = None) -> dict:
    name = config["experiment"]
    print(f"== {name} → {out}", flush=True)
    start = time.perf_counter()
    summary = run_experiment(config, out, reuse_from)
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

    path = Path(args.file)
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    for key in ("X", "z"):
        if key not in arrays:
            raise ValueError(f"{path} has no array {key!r} (it has {sorted(arrays)})")
    X, z = arrays["X"], arrays["z"]
    alpha = _tokens(args.alpha, arrays, path, selected_tokens, optimal_tokens)
    norm = args.norm if args.norm in ("fro", "nuc") else float(args.norm)
    result = att_svm(X, z, alpha, norm)
    print(f"norm       {norm}")
    print(f"‖W_mm‖     {result.norm:.10g}")
    print(f"margin     {result.margin:.10g}")
    print(f"status     {result.status}")
    print(f"KKT resid. {result.kkt_residual:.3g}")
    print(f"alpha      {np.asarray(alpha).tolist()}")
    if args.out:
        np.savez(args.out, W=result.W, alpha=alpha, dual=result.dual)
        print(f"saved      {args.out}")
    return 0


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
