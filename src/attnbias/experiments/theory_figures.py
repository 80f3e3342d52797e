"""Figures of the fitted rates (docs/theory.md#rates-measured): the data (mean ± 1 std over
runs), the fitted power law over its window with the band of its 95 % interval, and the
theory's line, all anchored at the data's mean at the window's start."""

from __future__ import annotations

import numpy as np

from ..curves import Curves
from ..judging.claims import Effect
from ..theory_measures import in_window
from . import plotting


def anchor(steps: np.ndarray, mean: np.ndarray, window) -> tuple[float, float]:
    """(t₀, value) where the lines start: the first step of the window with a positive mean."""
    at = np.flatnonzero(in_window(steps, window) & (mean > 0) & (steps > 0))
    if at.size == 0:
        return float("nan"), float("nan")
    return float(steps[at[0]]), float(mean[at[0]])


def fit_panel(
    ax,
    c: Curves,
    metric: str,
    window,
    effect: Effect,
    theory: float | None,
    title: str,
    x=np.log,
    label: str = "data",
) -> None:
    """One group's metric on log–log axes with the fitted line (exponent = effect.estimate
    over x(t): log t for a power of t, log log t for a power of log t), its CI band and the
    theory's line (exponent `theory`; None: none drawn)."""
    plotting.band(ax, c, metric, label=label, log=(True, True))
    steps = c.steps.astype(np.float64)
    t0, v0 = anchor(steps, c.mean(metric), window)
    if not np.isfinite(t0) or not np.isfinite(effect.estimate):
        plotting.panel(ax, title)
        return
    t = steps[in_window(steps, window) & (steps >= t0)]
    dx = x(t) - x(t0)
    ax.plot(t, v0 * np.exp(effect.estimate * dx), "k-", lw=1, label=f"fit {effect.estimate:.3g}")
    if np.isfinite(effect.low) and np.isfinite(effect.high):
        ax.fill_between(
            t,
            v0 * np.exp(effect.low * dx),
            v0 * np.exp(effect.high * dx),
            color="k",
            alpha=0.15,
            label="95 % CI of the fit",
        )
    if theory is not None:
        red = plotting.OKABE_ITO["vermillion"]
        ax.plot(t, v0 * np.exp(theory * dx), "--", color=red, lw=1, label=f"theory {theory:.3g}")
    ax.axvspan(window[0], window[1], color="0.9", zorder=-1)
    plotting.panel(ax, title)
    ax.legend(fontsize=6)
