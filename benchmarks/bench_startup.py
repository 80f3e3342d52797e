"""The command line's start-up: `attnbias --version`, `attnbias --help`, and each command up to
the point where its own work begins (issue 31: under 1 s and 1.5 s).

    python benchmarks/bench_startup.py [--rounds N] [--against REV] [--importtime]

Each measurement is a fresh interpreter, timed by wall clock, best of --rounds; the bare
interpreter (`python -c pass`) is timed beside it, since on a shared machine it alone varies
between 0.05 and 1 s, and what attnbias adds is the difference. A command's start-up is what
`attnbias.cli.main` does before calling the command: import the CLI, parse the arguments and set
up logging. --against REV times the same at a git revision (its `src` exported to a temporary
directory and put first on PYTHONPATH), interleaved with this tree's rounds.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOALS = {"--version": 1.0, "--help": 1.0}  # seconds; every command's start-up: STARTUP_GOAL
STARTUP_GOAL = 1.5
HEAVY = ("torch", "numpy", "scipy", "cvxpy", "pyarrow", "pydantic", "matplotlib")
COMMANDS = {
    "list": ["list"],
    "reproduce": ["reproduce"],
    "run": ["run", "md-local", "--quick"],
    "config": ["config", "md-local"],
    "claims": ["claims"],
    "export": ["export", "md-local"],
    "svm": ["svm", "p.npz"],
}
# what the console script `attnbias` runs
ENTRY = "import sys; from attnbias.cli import main; sys.exit(main())"
# main() up to the command: import, parse, configure logging; then which heavy modules came in
STARTUP = (
    "import sys; from attnbias import cli; args = cli.parse(sys.argv[1:])\n"
    "with cli.log.configured(0): pass\n"
    f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
)


def timed(code: str, argv: list[str], env: dict) -> tuple[float, str]:
    """Wall seconds of a fresh `python -c code argv...`, and its last line of stdout."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{code!r} {argv} failed:\n{done.stderr}")
    return seconds, (done.stdout.strip().splitlines() or [""])[-1]


def cases() -> dict[str, tuple[str, list[str]]]:
    found = {"python -c pass": ("pass", [])}
    found |= {f"attnbias {flag}": (ENTRY, [flag]) for flag in GOALS}
    found |= {f"{name} start-up": (STARTUP, argv) for name, argv in COMMANDS.items()}
    return found


def export(rev: str, into: Path) -> Path:
    """The src/ of git revision `rev`, extracted under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def goal(label: str) -> float | None:
    if label.endswith("start-up"):
        return STARTUP_GOAL
    return GOALS.get(label.removeprefix("attnbias "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per case (best)")
    parser.add_argument("--against", metavar="REV", help="also time this git revision")
    parser.add_argument(
        "--importtime",
        action="store_true",
        help="also print the slowest imports of `import attnbias.cli` (python -X importtime)",
    )
    args = parser.parse_args()
    trees = {"this tree": dict(os.environ)}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            src = export(args.against, Path(tmp))
            path = os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))
            trees[args.against] = {**os.environ, "PYTHONPATH": path}
        best = {tree: {} for tree in trees}
        heavy = {tree: {} for tree in trees}
        for _ in range(args.rounds):  # interleaved: load changes hit every case alike
            for tree, env in trees.items():
                for label, (code, argv) in cases().items():
                    seconds, last = timed(code, argv, env)
                    best[tree][label] = min(seconds, best[tree].get(label, float("inf")))
                    heavy[tree][label] = last if code == STARTUP else ""
    floor = {tree: times["python -c pass"] for tree, times in best.items()}
    print(f"best of {args.rounds} fresh processes, wall seconds (over the bare interpreter)")
    header = "".join(f"{tree:>20s}" for tree in trees)
    print(f"{'case':22s}{header}   goal  heavy imports (this tree)")
    for label in cases():
        cells = "".join(
            f"{best[tree][label]:10.3f} ({best[tree][label] - floor[tree]:+7.3f})" for tree in trees
        )
        limit = goal(label)
        verdict = (
            "" if limit is None else ("met" if best["this tree"][label] <= limit else "NOT met")
        )
        print(f"{label:22s}{cells}   {verdict:7s} {heavy['this tree'][label] or ''}")
    if args.against:
        for label in cases():
            if label != "python -c pass":
                ratio = best[args.against][label] / best["this tree"][label]
                print(f"{label:22s} {ratio:5.2f}× faster than {args.against}")
    if args.importtime:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import attnbias.cli"],
            capture_output=True,
            text=True,
        )
        rows = [line.split("|") for line in done.stderr.splitlines() if line.count("|") == 2]
        rows = [(int(r[1]), r[2].rstrip()) for r in rows if r[1].strip().isdigit()]
        print("\nslowest imports of `import attnbias.cli` (cumulative µs):")
        for micros, name in sorted(rows, reverse=True)[:12]:
            print(f"{micros:10d} {name}")


if __name__ == "__main__":
    main()
