"""Compare two results roots experiment by experiment: summary.json (but for the fields that
time the run or name the code), config.json and the keys of the stored runs must be identical.

    python benchmarks/compare_summaries.py BEFORE AFTER [--ignore KEY ...] [--rtol R --atol A]

A refactor that claims "no change in results" runs `attnbias reproduce --quick --out BEFORE` on
the old code and `--out AFTER` on the new, then this; exit code 1 if anything differs. A change
that claims results within a bound (another rounding: the engine's compiled step against its
torch step, `ATTNBIAS_ENGINE_BACKEND=torch` for BEFORE) passes --rtol/--atol: two numbers then
agree where |a − b| ≤ atol + rtol·max(|a|, |b|); everything else (verdicts, counts, keys)
must still be identical.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IGNORED = ("code_version", "seconds", "timings")


def without(value, ignored: set[str]):
    """value with every mapping key in `ignored` dropped, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, ignored) for k, v in value.items() if k not in ignored}
    if isinstance(value, list):
        return [without(v, ignored) for v in value]
    return value


def differences(a, b, path: str = "", rtol: float = 0.0, atol: float = 0.0) -> list[str]:
    """Where two JSON values differ (NaN equals NaN: both mean "not measured"); floats within
    atol + rtol·max(|a|, |b|) of each other agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [
            f"{path}/{k}: only in {'before' if k in a else 'after'}" for k in a.keys() ^ b.keys()
        ]
        for k in a.keys() & b.keys():
            out += differences(a[k], b[k], f"{path}/{k}", rtol, atol)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b))
            for d in differences(x, y, f"{path}[{i}]", rtol, atol)
        ]
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return []
        if math.isclose(a, b, rel_tol=rtol, abs_tol=atol):
            return []
    return [] if a == b else [f"{path}: {a!r} → {b!r}"]


def runs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "runs").iterdir()) if (root / "runs").is_dir() else []


def compare(
    before: Path, after: Path, ignored: set[str], rtol: float = 0.0, atol: float = 0.0
) -> dict[str, list[str]]:
    """experiment → its differences (empty: identical)."""
    names = sorted({p.parent.name for root in (before, after) for p in root.glob("*/summary.json")})
    found = {}
    for name in names:
        problems = []
        for file in ("summary.json", "config.json"):
            a, b = before / name / file, after / name / file
            if not (a.is_file() and b.is_file()):
                problems.append(f"{file}: missing in {'after' if a.is_file() else 'before'}")
                continue
            left = without(json.loads(a.read_text()), ignored)
            right = without(json.loads(b.read_text()), ignored)
            problems += [f"{file}{d}" for d in differences(left, right, "", rtol, atol)]
        if runs(before / name) != runs(after / name):
            problems.append("the stored runs' keys differ")
        found[name] = problems
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--ignore", nargs="*", default=[], help="further keys to leave out")
    p.add_argument("--rtol", type=float, default=0.0, help="numbers' relative tolerance")
    p.add_argument("--atol", type=float, default=0.0, help="numbers' absolute tolerance")
    args = p.parse_args(argv)
    if not (args.rtol >= 0 and args.atol >= 0):
        p.error("--rtol and --atol must be >= 0")
    found = compare(args.before, args.after, {*IGNORED, *args.ignore}, args.rtol, args.atol)
    for name, problems in found.items():
        print(f"{name:14s} {'identical' if not problems else f'{len(problems)} difference(s)'}")
        for line in problems[:20]:
            print(f"    {line}")
    if not found:
        print("no summary.json under either root")
    return 0 if found and not any(found.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
