"""md-local: ℓp mirror descent picks the ℓp Att-SVM (MD paper, the 3×3 figure).

gaussian_unit data (n=6, T=8, d=10), seeds 1..N, W₀ ~ N(0, 1), logistic loss, normalized ℓp-MD
with η = 0.1 for each p. Every run is compared with the Att-SVM of *every* p for the tokens it
selected at the end; the grid "SVM of norm p (rows) × algorithm of norm p' (columns)" shows the
directional Bregman divergence D_ψp(Ŵ_mm, Ŵ_t) (ψp = ‖·‖_p^p/p, hats: ℓp-normalised). One
zero-initialised run per p also shows two entries of Ŵ_t approaching Ŵ_mm.

Whether a run converges to its *own* p's SVM is judged on runs long enough to tell: every p
for the longest p's steps on the first `diagonal_seeds` seeds (and from zero), each run's divergence
from its own SVM against ¼ of that SVM's divergence from the nearest other p's, both from the
run's own solutions (`verdicts.md.own_p_nearer`). At the figure's shorter steps the ℓ1.75 and ℓ2
runs are still falling towards a level that tells neighbouring SVMs apart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from pydantic import Field, model_validator

from ..config import Positive, PositiveInt, check_paired, numbers
from ..curves import algorithm_name, curves, run_seed
from ..data import gaussian_unit
from ..engine import Algorithm, RunSpec
from ..experiment_configs.sweep import GaussianUnitConfig
from ..figures import save_figure
from ..judging.claims import Claim, identified, not_applicable
from ..judging.verdicts import md as rules
from ..metrics import Norm, directional_bregman
from ..norms import lp_norm
from ..store import DIVERGED
from . import plotting
from .runs import random_init, seeds, sweep, sweep_summary

DESCRIPTION = "ℓp mirror descent converges to the ℓp Att-SVM: the 3×3 divergence grid (MD paper)"


class Config(GaussianUnitConfig):
    lr: Positive = Field(description="step size η of normalized ℓp-MD")
    ps: numbers(float, 1.0, strict=True) = Field(description="mirror exponents p")
    steps: numbers(int, 1) = Field(description="steps for each p")
    zero_init_seed: PositiveInt = Field(description="seed of the data of the zero-initialised runs")
    diagonal_seeds: PositiveInt = Field(
        description="the first seeds on which every p also runs the longest p's steps, for the "
        "rows on its own SVM (own-p-diagonal)"
    )

    @model_validator(mode="after")
    def _one_steps_per_p(self):
        check_paired(self, "steps", "ps")
        return self


def algorithm(p: float, lr: float) -> Algorithm:
    return Algorithm(f"ℓ{p:g}-MD", "md", lr, p=p, normalize="per_tensor")


def specs(config: Config) -> list[RunSpec]:
    """The figure's runs (each p its `steps` on every seed), the diagonal's longer runs (each p
    the longest p's steps on the first `diagonal_seeds` seeds) and one run per p from zero on
    `zero_init_seed` (the longest steps too)."""
    shape = {"n": config.n, "T": config.T, "d": config.d}
    problems = {s: gaussian_unit(**shape, seed=s) for s in [*seeds(config), config.zero_init_seed]}
    first, longest = seeds(config)[: config.diagonal_seeds], max(config.steps)
    out = []

    def spec(p: float, seed: int, steps: int, zero: bool = False) -> RunSpec:
        scale, d = 0.0 if zero else config.init_scale, config.d
        return RunSpec(
            {
                "experiment": "md-local",
                "data": {"generator": "gaussian_unit", **shape, "seed": seed},
                "init": {"scale": scale, "seed": seed},
            },
            problems[seed],
            algorithm(p, config.lr),
            steps,
            {"W": random_init((d, d), scale, seed)},
            loss=config.loss,
            norms=tuple(config.ps),
            grid_points=config.grid_points,
            keep_trajectory=zero,
        )

    for p, steps in zip(config.ps, config.steps):
        out += [spec(p, seed, steps) for seed in seeds(config)]
        if steps < longest:  # the longest p's own runs serve
            out += [spec(p, seed, longest) for seed in first]
        out.append(spec(p, config.zero_init_seed, longest, zero=True))
    return out


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, specs(config))
    ps, names = list(config.ps), [algorithm(p, config.lr).name for p in config.ps]
    random = [r for r in report.records if r.config["init"]["scale"] > 0]
    steps_of = dict(zip(names, config.steps))
    figure_runs = [r for r in random if r.config["steps"] == steps_of[algorithm_name(r)]]
    first = set(seeds(config)[: config.diagonal_seeds])
    diagonal = [r for r in random if r.config["steps"] == max(config.steps)
                and r.config["init"]["seed"] in first]  # fmt: skip
    zero = [r for r in report.records if r.config["init"]["scale"] == 0]
    labels = {name: Norm.parse(p).label for name, p in zip(names, ps)}
    grid = curves(figure_runs)
    summary = {
        "claims": claims(
            grid, curves(diagonal), curves(zero), labels,
            svm_separations(diagonal, labels), svm_separations(zero, labels),
        ),
        **sweep_summary(report),
    }  # fmt: skip
    return plotting.with_figures(summary, lambda: figure(grid, zero, ps, names, out))


def claims(figure_runs, diagonal, zero, labels, apart, apart_zero) -> list[Claim]:
    """The MD paper's claims on the 3×3 grid (verdicts: judging/verdicts/md.py): own-p-nearest
    on the figure's runs, own-p-diagonal and zero-init on the longer runs (`specs`); labels:
    algorithm → its p's label; apart, apart_zero: `svm_separations` of those runs."""
    own = {name: f"divergence/{label}" for name, label in labels.items()}
    diagonal_claim = rules.own_p_nearer(
        diagonal, own, apart,
        "Each ℓp-MD run converges in direction to the ℓp-AttSVM of its own p, nearer it than "
        "to any other p's: its final divergence is below ¼ of its SVM's divergence from the "
        "nearest other p's SVM (per seed, mean over seeds)",
    )  # fmt: skip
    diagonal_claim.evidence["initial_mean"] = rules.first_values(diagonal, own)
    zero_init = rules.own_p_nearer(
        zero, own, apart_zero,
        "From zero initialisation too (one deterministic run per p on one problem, as in the "
        "paper's figure), each run ends below ¼ of its ℓp-AttSVM's divergence from the nearest "
        "other p's",
        exact=True,
        unit=ONE_PROBLEM,
    )  # fmt: skip
    nearest = (
        rules.own_p_nearest(figure_runs, own)
        if len(labels) > 1
        else not_applicable(OFF_DIAGONAL, "one p: no other algorithm to compare with")
    )
    return identified("md-local", [diagonal_claim, nearest, zero_init],
                      ("own-p-diagonal", "own-p-nearest", "zero-init"))  # fmt: skip


def svm_separations(
    records, names: dict[str, str], stored: str = "W_mm"
) -> dict[str, dict[int, tuple[str, float]]]:
    """`svm_separation` of every run: algorithm → seed (`run_seed`) → (the nearest other p's
    SVM, D_ψp(mm^p, mm^q)) from the solutions that run stored (each run solves the SVMs of
    the tokens it selected)."""
    found = {}
    for record in records:
        name = record.config["algorithm"]["name"]
        if name not in names:
            continue
        p = names[name]
        solved = {q: record.arrays.get(f"{stored}_{q}") for q in names.values()}
        if solved[p] is None:
            continue
        entries = tuple(range(-np.ndim(solved[p]), 0))  # a matrix's or a vector's, entrywise
        apart = {
            q: float(directional_bregman(torch.as_tensor(solved[p]), torch.as_tensor(other),
                                         float(p), dim=entries))
            for q, other in solved.items() if q != p and other is not None
        }  # fmt: skip
        finite = {q: d for q, d in apart.items() if np.isfinite(d)}
        nearest = min(finite, key=finite.get) if finite else None
        found.setdefault(name, {})[run_seed(record)] = (
            (f"ℓ{nearest}", finite[nearest]) if nearest else ("", float("nan"))
        )
    return found


OFF_DIAGONAL = "Off the diagonal the divergence stays away"
# the unit of n of the zero-initialised runs: one problem, its run from zero deterministic
ONE_PROBLEM = "data set (one zero-initialised run)"


def figure(grid, zero, ps, names, out) -> list[str]:
    k = len(ps)
    fig, axes = plotting.subplots(k + 1, k, sharey="row")  # a row: one divergence, one scale
    for i, p in enumerate(ps):
        for j, name in enumerate(names):
            ax = axes[i, j]
            look = plotting.style(name)["color"]
            metric = f"divergence/{Norm.parse(p).label}"
            plotting.band(ax, grid[name], metric, color=look, log=(True, True))
            plotting.panel(ax, f"ℓ{p:g}-SVM vs {name}")
    for j, record in enumerate(
        sorted(zero, key=lambda r: names.index(r.config["algorithm"]["name"]))
    ):
        p = record.config["algorithm"]["p"]
        ax = axes[k, j]
        if record.status == DIVERGED:  # its iterates are not finite: nothing to normalise
            at = record.info.get("diverged_at")
            plotting.panel(ax, f"zero init, {record.config['algorithm']['name']}")
            ax.text(0.5, 0.5, f"diverged (step {at})", ha="center", transform=ax.transAxes)
            continue
        a = record.arrays
        W_mm = a[f"W_mm_{Norm.parse(p).label}"]
        W_mm = W_mm / float(lp_norm(torch.from_numpy(W_mm), p))
        W_t = a["trajectory_W"]
        norms = lp_norm(torch.from_numpy(W_t), p, dim=(1, 2)).numpy()
        W_t = W_t / np.maximum(norms, 1e-300)[:, None, None]
        steps = a["trajectory_steps"]
        for entry in np.argsort(-np.abs(W_mm).ravel())[:2]:
            jk = tuple(int(i) for i in np.unravel_index(entry, W_mm.shape))
            at = f"[{jk[0]},{jk[1]}]"
            (line,) = ax.plot(steps[1:], W_t[1:, jk[0], jk[1]], label=rf"$\hat W_t{at}$")
            ax.axhline(W_mm[jk], ls="--", color=line.get_color(), label=rf"$\hat W_{{mm}}{at}$")
        ax.set_xscale("log")
        plotting.panel(ax, f"zero init, {record.config['algorithm']['name']}",
                       ylabel=f"entries of $W_t/\\|W_t\\|_{{{p:g}}}$")  # fmt: skip
        ax.legend(fontsize=6)
    fig.suptitle(
        "md-local: rows = the ℓp-SVM compared with, columns = the algorithm "
        f"({plotting.band_note(plotting.runs_per_curve(grid))})\nbottom row: one run from W₀ = 0, "
        "its two largest entries (solid) and the SVM's (dashed)",
        fontsize=10,
    )
    return save_figure(fig, out, "md-local")
