"""Metrics of finished runs (docs/theory.md#metrics), from their recorded iterates, all runs
and steps at once.

Per run and recorded step: loss; ‖W‖ in each norm; softmax score of the selected (and optimal)
tokens; normalised margin; alignment with the Att-SVM solution of each norm, the margin gap in
that norm (docs/theory.md#atlas) and, for the strictly convex ℓp, the directional Bregman
divergence to it; for a trained head also ‖v‖, the head's probability σ(y f) and the same
comparisons of v with the ℓp head-SVMs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from ..losses import get_loss, optimal_token_excess
from ..metrics import (
    MATRIX,
    Norm,
    alignment,
    directional_bregman,
    gap_of_margin,
    least_margin,
    matrix_norm,
    selected_score,
)
from ..model import attention_logits, attention_pool, attention_scores, token_values
from ..norms import lp_norm
from ..store import DIVERGED, FINISHED, tidy
from .grid import log_grid
from .simulate import Finished
from .spec import RunSpec
from .targets import References, Solution


@dataclass
class Measured:
    """What is stored for one run."""

    metrics: pa.Table
    arrays: dict
    info: dict


def _stack(arrays) -> torch.Tensor:
    return torch.as_tensor(np.stack(arrays), dtype=torch.float64)


def _references(solutions: list[Solution], shape) -> torch.Tensor:
    """Stacked solutions, NaN where an SVM could not be solved (its metrics become NaN)."""
    nan = np.full(shape, np.nan)
    return _stack([nan if s.value is None else s.value for s in solutions]).unsqueeze(1)


def optimal_token_measures(W, v, X, z, y, opt, loss) -> tuple[torch.Tensor, torch.Tensor]:
    """With a fixed head v: L − L* over the optimal tokens `opt` (..., n) and the mean softmax
    mass on the other tokens, (1/n) Σ_i Σ_{t≠opt_i} s_{i,t}, each from the other tokens' own
    scores (`losses.optimal_token_excess`), so that neither rounds to 0 before they underflow
    (~1e-308), where L − L* as a difference of losses, or 1 − the optimal tokens' score, does
    below ~1e-16."""
    s = attention_scores(W, X, z)
    gamma = (y.unsqueeze(-1) * token_values(X, v)).expand_as(s)
    opt = opt.expand(s.shape[:-1])
    others = torch.ones_like(s).scatter_(-1, opt.unsqueeze(-1), 0.0)
    return optimal_token_excess(s, gamma, opt, loss), (s * others).sum(-1).mean(-1)


def half_steps(specs: list[RunSpec], grid: np.ndarray) -> torch.Tensor:
    """(runs, len(grid)): for each run and recorded step t, the index in `grid` of the run's
    own recorded step nearest t/2 (`RunSpec.late_increment`)."""
    out = []
    for spec in specs:
        own = log_grid(spec.steps, spec.grid_points)
        nearest = np.abs(own[None, :] - grid[:, None] / 2.0).argmin(axis=1)
        out.append(np.searchsorted(grid, own[nearest]))
    return torch.as_tensor(np.stack(out))


def measured_as_configured(record) -> bool:
    """Whether a stored run was measured against the Att-SVMs of its own config's norms.
    Before batches were split by norms (`RunSpec.structure`), a batch mixing runs of two
    norms was measured against its first run's (local-global's NGD and ℓ3-MD runs)."""
    norms, svm = record.config.get("norms"), record.info.get("svm")
    if norms is None or svm is None:  # not an engine run, or not measured (diverged)
        return True
    return sorted(svm) == sorted(Norm.parse(n).label for n in norms)


def measure(specs: list[RunSpec], done: Finished, refs: References) -> list[Measured]:
    problems = [s.problem for s in specs]
    X, z, y = (_stack([getattr(p, k) for p in problems]).unsqueeze(1) for k in "Xzy")
    W = done.snapshots["W"]  # (k, G, d, d)
    head = specs[0].train_head
    v = done.snapshots["v"] if head else _stack([p.v for p in problems]).unsqueeze(1)
    selected = attention_logits(W[:, -1], X[:, 0], z[:, 0]).argmax(-1).numpy()  # as svm's
    alphas = [
        s.optimal_tokens() if s.alpha == "optimal" else selected[r] for r, s in enumerate(specs)
    ]
    alpha = torch.as_tensor(np.stack(alphas)).unsqueeze(1)
    # the logits once, for every measure below (predict, token_score, the margins: the same bits)
    logits = attention_logits(W, X, z)
    scores = torch.softmax(logits, dim=-1)  # attention_scores
    f = attention_pool(logits, token_values(X, v))  # predict
    m = {"loss": get_loss(specs[0].loss).value(y * f).mean(-1)}
    m["norm/2"] = lp_norm(W, 2.0, MATRIX)
    m["score/selected"] = selected_score(scores, alpha)
    if not head or all(p.opt is not None for p in problems):
        optimal = np.stack([s.optimal_tokens() for s in specs])  # the generator's, or argmax γ
        m["score/opt"] = selected_score(scores, torch.as_tensor(optimal).unsqueeze(1))
    if specs[0].optimal_excess:  # a batch shares it (RunSpec.structure)
        opt = torch.as_tensor(np.stack([s.optimal_tokens() for s in specs])).unsqueeze(1)
        m["excess/opt"], m["rest/opt"] = optimal_token_measures(W, v, X, z, y, opt, specs[0].loss)
    least = least_margin(logits, alpha)
    m["margin"] = least / m["norm/2"]  # normalized_margin
    if specs[0].late_increment:  # a batch shares it (RunSpec.structure)
        increments = W - W[torch.arange(len(specs)).unsqueeze(1), half_steps(specs, done.grid)]
    info = [{"alpha": s.alpha, "svm": {}, "head_svm": {}} for s in specs]
    arrays = [{"alpha": a} for a in alphas]
    for norm in specs[0].norms:
        parsed = Norm.parse(norm)
        label = parsed.label
        solutions = refs.att(problems, alphas, norm)
        W_mm = _references(solutions, W.shape[-2:])
        m[f"norm/{label}"] = matrix_norm(W, norm)
        m[f"alignment/{label}"] = alignment(W, W_mm)
        if specs[0].late_increment:
            m[f"increment_alignment/{label}"] = alignment(increments, W_mm)
        if parsed.is_lp and not math.isinf(parsed.p):
            m[f"divergence/{label}"] = directional_bregman(W_mm, W, parsed.p)
        optimum = [s.info["norm"] if s.value is not None else math.nan for s in solutions]
        optimum = torch.tensor(optimum, dtype=W.dtype).unsqueeze(1)
        m[f"gap/{label}"] = gap_of_margin(least, m[f"norm/{label}"], optimum)  # margin_gap
        for r, s in enumerate(solutions):
            info[r]["svm"][label] = s.info
            arrays[r][f"W_mm_{label}"] = W_mm[r, 0].numpy()
    if head:
        m["norm_v/2"] = lp_norm(v, 2.0, dim=-1)
        m["prob"] = torch.sigmoid(y * f).mean(-1)
        for norm in [n for n in map(Norm.parse, specs[0].norms) if n.is_lp]:
            label, p = norm.label, norm.p
            solutions = refs.head(problems, alphas, p)
            v_mm = _references(solutions, v.shape[-1:])
            m[f"alignment_v/{label}"] = alignment(v, v_mm, dim=-1)
            m[f"divergence_v/{label}"] = directional_bregman(v_mm, v, p, dim=-1)
            for r, s in enumerate(solutions):
                info[r]["head_svm"][label] = s.info
                arrays[r][f"v_mm_{label}"] = v_mm[r, 0].numpy()
    values = {k: np.broadcast_to(t.numpy(), (len(specs), len(done.grid))) for k, t in m.items()}
    out = []
    for r, spec in enumerate(specs):
        steps = log_grid(spec.steps, spec.grid_points)
        at = np.searchsorted(done.grid, steps)
        arrays[r].update({f"final_{k}": w[r] for k, w in done.final.items()})
        if spec.keep_trajectory:
            arrays[r]["trajectory_steps"] = steps
            arrays[r].update(
                {f"trajectory_{k}": s[r, at].numpy() for k, s in done.snapshots.items()}
            )
        table = tidy(steps, {k: col[r, at] for k, col in values.items()})
        info[r].update(run_status(done, r, values["loss"][r], values["norm/2"][r]))
        out.append(Measured(table, arrays[r], info[r]))
    return out


def run_status(done: Finished, r: int, *recorded: np.ndarray) -> dict:
    """{"status": "finished"} or, if run r's iterate or, at a recorded step, one of the
    `recorded` values (its loss, ‖W‖: an iterate too large to normalise) became non-finite,
    {"status": "diverged", "diverged_at": first recorded step where it was,
    "last_finite_step": the recorded step before (-1: none)}."""
    bracket = done.diverged_between(r)
    bad = np.flatnonzero(~np.isfinite(np.stack(recorded)).all(0))
    if bad.size and (bracket is None or done.grid[bad[0]] < bracket[1]):
        g = int(bad[0])
        bracket = (int(done.grid[g - 1]) if g > 0 else -1, int(done.grid[g]))
    if bracket is None:
        return {"status": FINISHED}
    return {"status": DIVERGED, "diverged_at": bracket[1], "last_finite_step": bracket[0]}
