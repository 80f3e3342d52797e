"""atlas: which optimiser picks which max-margin solution (docs/theory.md#atlas).

gaussian_unit data (n=6, T=8, d=10), seeds 1..N, W₀ ~ N(0, init_scale²), logistic loss, a fixed
number of steps. Every algorithm (NGD, SignGD, SpectralDescent, ℓ1.75-MD, torch's Adam and
Muon, as the config lists them) is measured in every norm (ℓ2, ℓ∞, spectral, ℓ1.75, nuclear)
by the margin gap 1 − γ_N(W_t)/γ*_N against the Att-SVM of that norm for the tokens the run
selects at the end. The figure is the grid "norm (rows) × algorithm (columns)", log–log.

Claims: each algorithm that owns a norm (normalized steepest descent in it, or ℓp mirror
descent) ends with a small gap in that norm, the smallest of its row; Adam behaves like SignGD
(its smallest gap is the ℓ∞ one, and small) and Muon like SpectralDescent; each owner's gap
falls as a power of t, whose fitted exponent is reported beside the linear-model rate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..claims import Claim, identified, not_applicable
from ..config import (
    COMMON,
    GAUSSIAN_UNIT,
    Field,
    algorithms,
    parse_algorithms,
    positive,
    positive_int,
)
from ..data import gaussian_unit
from ..engine import RunSpec
from ..engine.algorithms import available
from ..engine.targets import norm_label
from ..figures import save_figure
from ..metrics import parse_norm
from ..svm import optimal_tokens
from . import plotting
from .runs import curves, loglog_slope, random_init, seeds, sweep, sweep_summary

DESCRIPTION = "Which optimiser selects which max-margin solution: margin gaps in five norms"


def _is_norm_list(norms) -> bool:
    try:
        return bool(norms) and all(parse_norm(n) is not None for n in norms)
    except (TypeError, ValueError):
        return False


def _is_name_map(table) -> bool:
    return isinstance(table, dict) and all(isinstance(v, str) for v in table.values())


SCHEMA = {
    **COMMON,
    **GAUSSIAN_UNIT,
    "steps": positive_int("steps of every run"),
    "algorithms": algorithms("the optimisers compared ([[algorithms]] tables)"),
    "norms": Field(
        list,
        "norms the margin gap is measured in (numbers p, inf, 'spectral', 'nuc')",
        check=_is_norm_list,
        rule='a non-empty list of norms (p >= 1, inf, "spectral", "nuc")',
    ),
    "own_norm": Field(
        dict,
        "algorithm name → the label of the norm whose max-margin solution it should select "
        '("2", "inf", "spectral", "1.75", "nuc")',
        check=_is_name_map,
        rule="a table of algorithm names to norm labels",
    ),
    "like": Field(
        dict,
        "algorithm name → the algorithm it should behave like (Adam → SignGD, Muon → spectral)",
        check=_is_name_map,
        rule="a table of algorithm names to algorithm names",
    ),
    "threshold": positive("an own-norm gap counts as near 0 below this final median"),
    "rate_start": Field(
        float,
        "rates are fitted over steps ≥ rate_start · last step",
        check=lambda x: 0 < x < 1,
        rule="in (0, 1)",
    ),
    "max_slope": Field(
        float,
        "an own-norm gap falls as a power of t if its fitted log–log slope is below this",
        check=lambda x: x < 0,
        rule="< 0",
    ),
}

# Rates of the margin gap for normalized steepest descent on linearly separable data with a
# constant normalised step (linear models; Nacson et al. 2019, Ji & Telgarsky 2021 for ℓ2; Fan,
# Schmidt, Thrampoulidis 2025 for any norm): Õ(1/t), i.e. a log–log slope near −1.
LINEAR_MODEL_SLOPE = -1.0


def check(config: dict) -> None:
    """Names in own_norm / like must be algorithms; own norms must be measured."""
    names = [a["name"] for a in config["algorithms"]]
    labels = [norm_label(n) for n in config["norms"]]
    for field in ("own_norm", "like"):
        for name in config[field]:
            if name not in names:
                raise ValueError(f"atlas: {field}.{name} is not one of the algorithms {names}")
    for name, label in config["own_norm"].items():
        if label not in labels:
            raise ValueError(f"atlas: own_norm.{name} = {label!r} is not one of norms {labels}")
    for name, other in config["like"].items():
        if other not in config["own_norm"]:
            raise ValueError(f"atlas: like.{name} = {other!r} has no own_norm to compare with")


def specs(config: dict) -> list[RunSpec]:
    check(config)
    shape = {k: config[k] for k in "nTd"}
    problems = {s: gaussian_unit(**shape, seed=s) for s in seeds(config)}
    d = config["d"]
    return [
        RunSpec(
            {
                "experiment": "atlas",
                "data": {"generator": "gaussian_unit", **shape, "seed": seed},
                "init": {"scale": config["init_scale"], "seed": seed},
            },
            problems[seed],
            algorithm,
            config["steps"],
            {"W": random_init((d, d), config["init_scale"], seed)},
            loss=config["loss"],
            norms=tuple(config["norms"]),
            grid_points=config["grid_points"],
        )
        for algorithm in parse_algorithms(runnable(config["algorithms"]))
        for seed in seeds(config)
    ]


def runnable(tables: list[dict]) -> list[dict]:
    """The algorithms this torch can run: Muon needs torch >= 2.9; without it the Muon runs are
    left out (said once) and its claim is not applicable."""
    kept = [t for t in tables if available(t.get("optimizer", ""))]
    for t in tables:
        if t not in kept:
            print(
                f"  atlas: {t.get('name')} left out: this torch ({torch.__version__}) has no "
                f"torch.optim.{str(t.get('optimizer', '')).capitalize()}",
                flush=True,
            )
    return kept


def run(config: dict, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    groups = curves(report.records)
    labels = [norm_label(n) for n in config["norms"]]
    own = config["own_norm"]
    return {
        "claims": claims(
            groups,
            labels,
            own,
            config["like"],
            config["threshold"],
            config["rate_start"],
            config["max_slope"],
        ),
        "final_gaps": final_gaps(groups, labels),
        "tokens": tokens(report.records),
        "figures": figure(groups, labels, own, out),
        **sweep_summary(report),
    }


def final_gaps(groups, labels) -> dict:
    """The table: norm → algorithm → median final margin gap over seeds."""
    return {
        label: {name: float(np.median(c.final(f"gap/{label}"))) for name, c in groups.items()}
        for label in labels
    }


def tokens(records) -> dict:
    """Per algorithm: the share of seeds whose selected tokens are the problem's optimal ones,
    and the share that select the same tokens as the first algorithm on that seed."""
    by_seed: dict[int, dict[str, np.ndarray]] = {}
    optimal: dict[int, np.ndarray] = {}
    for r in records:
        seed = r.config["data"]["seed"]
        by_seed.setdefault(seed, {})[r.config["algorithm"]["name"]] = r.arrays["alpha"]
        if seed not in optimal:
            p = gaussian_unit(*(r.config["data"][k] for k in "nTd"), seed=seed)
            optimal[seed] = optimal_tokens(p.X, p.y, p.v)
    names = list(next(iter(by_seed.values())))
    return {
        name: {
            "optimal": float(
                np.mean([np.array_equal(a[name], optimal[s]) for s, a in by_seed.items()])
            ),
            f"same_as_{names[0]}": float(
                np.mean([np.array_equal(a[name], a[names[0]]) for a in by_seed.values()])
            ),
        }
        for name in names
    }


def claims(groups, labels, own, like, threshold, rate_start, max_slope) -> list[Claim]:
    """groups: algorithm → Curves with "gap/<label>" for every label; own: algorithm → the
    label of its own norm; like: algorithm → the owner it should behave like."""
    present = {name: label for name, label in own.items() if name in groups}
    median = {
        name: {label: _median_final(c, label) for label in labels} for name, c in groups.items()
    }
    start = {
        name: float(np.median(groups[name].values[f"gap/{lab}"][:, 0]))
        for name, lab in present.items()
    }
    own_final = {name: median[name][label] for name, label in present.items()}
    near_zero = Claim(
        f"Each optimiser's margin gap in its own norm goes to near 0: below {threshold:g} "
        "(final median over seeds) and below where it started",
        bool(present) and all(own_final[a] < min(threshold, start[a]) for a in present),
        {"own_norm": present, "final_median": own_final, "initial_median": start},
    )
    rows = {}
    for name, label in present.items():
        row = {a: median[a][label] for a in groups}
        rows[label] = {
            "owner": name,
            "final_median_gap": row,
            "smallest_is_owner": min(row, key=row.get) == name,
        }
    ROW = "In each owned norm's row the owner has the smallest final gap (median over seeds)"
    smallest = (
        Claim(ROW, all(r["smallest_is_owner"] for r in rows.values()), rows)
        if len(groups) > 1 and rows
        else not_applicable(ROW, "one algorithm or no owned norm: nothing to compare")
    )
    out = [near_zero, smallest]
    for name, other in like.items():
        text = (
            f"{name} behaves like {other}: its smallest final gap is in {other}'s norm, "
            f"below {threshold:g}"
        )
        if name not in groups or other not in present:
            out.append(not_applicable(text, f"{name} or {other} was not run"))
            continue
        target = present[other]
        gaps = median[name]
        out.append(
            Claim(
                text,
                min(gaps, key=gaps.get) == target and gaps[target] < threshold,
                {
                    "norm": target,
                    "final_median_gap": gaps,
                    f"{other}_final_median_gap": median[other],
                },
            )
        )
    slopes = {
        name: loglog_slope(groups[name].steps, groups[name].mean(f"gap/{label}"), rate_start)
        for name, label in present.items()
    }
    out.append(
        Claim(
            "Each owner's gap in its own norm falls as a power of t: fitted log–log slope of "
            f"the mean gap over the last steps below {max_slope:g} (linear models: "
            f"≈ {LINEAR_MODEL_SLOPE:g}, "
            "the Õ(1/t) rate of normalized steepest descent)",
            bool(slopes) and all(s < max_slope for s in slopes.values()),
            {
                "slope": slopes,
                "all_slopes": {
                    name: {
                        label: loglog_slope(c.steps, c.mean(f"gap/{label}"), rate_start)
                        for label in labels
                    }
                    for name, c in groups.items()
                },
                "linear_model_slope": LINEAR_MODEL_SLOPE,
                "fitted_over_steps_from": rate_start,
            },
        )
    )
    slugs = [
        "own-norm-gap",
        "owner-smallest",
        *(f"{n.lower()}-like-{o.lower()}" for n, o in like.items()),
        "own-norm-rate",
    ]
    return identified("atlas", out, slugs)


def _median_final(c, label: str) -> float:
    """Median final gap; NaN (which fails every comparison) if every run diverged."""
    final = c.final(f"gap/{label}")
    return float(np.median(final)) if final.size else float("nan")


def figure(groups, labels, own, out) -> list[str]:
    names = list(groups)
    fig, axes = plotting.subplots(len(labels), len(names))
    for i, label in enumerate(labels):
        for j, name in enumerate(names):
            ax = axes[i, j]
            plotting.band(ax, groups[name], f"gap/{label}", log=(True, True))
            mark = " (own)" if own.get(name) == label else ""
            plotting.panel(ax, f"gap in {label}: {name}{mark}")
    fig.suptitle(
        "atlas: margin gap 1 − γ_N(W_t)/γ*_N, rows = the norm N, columns = the algorithm "
        f"({plotting.band_note(plotting.runs_per_curve(groups))})",
        fontsize=10,
    )
    return save_figure(fig, out, "atlas")
