"""The claims register as a picture: a forest plot of every measured claim part, its effect
relative to its rule's threshold with the 95 % interval, coloured by its verdict and grouped by
experiment (docs/CLAIMS.md, docs/RESULTS.md).

Rules compare quantities of every size (a divergence below 0.05, a ratio above 10, a paired
difference above 0), so each part is drawn on one common axis where the threshold is at 0 and
the claim's side is to the right:

- a positive threshold with a positive interval: log10(value / threshold), sign flipped for a
  "<" rule — one decade is one unit;
- otherwise (a threshold of 0, or an interval reaching 0 or below): (value − threshold) divided
  by the largest |value − threshold| of the estimate and the interval's ends, sign flipped for
  "<" — the part then spans at most [−1, 1] and shows only which side of the threshold it is on
  (square markers).

A part is supported when its whole interval is right of 0, not supported when it is wholly left;
the colours are the verdicts the register prints, read from the summaries, not recomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..figures import save_figure
from .claims import INCONCLUSIVE, NOT_APPLICABLE, NOT_SUPPORTED, SUPPORTED

# The axis ends at ±CLIP (decades, for log ratios): a part beyond it is drawn at the edge with
# an arrowhead, so that a ratio of 1e300 does not squash every other interval into a dot.
CLIP = 6.0
COLOURS = {SUPPORTED: "#1a7f37", NOT_SUPPORTED: "#cf222e", INCONCLUSIVE: "#bf8700",
           NOT_APPLICABLE: "#8c959f"}  # fmt: skip
LOWER = ("<", "<=")


@dataclass(frozen=True)
class Point:
    """One claim part on the common axis: where its estimate and interval sit, whether the axis
    is the log ratio to the threshold ("log") or the scaled difference ("scaled")."""

    label: str
    group: str
    status: str
    estimate: float
    low: float
    high: float
    kind: str


def position(rule: dict, effect: dict) -> tuple[float, float, float, str] | None:
    """(estimate, low, high, kind) of one part on the common axis (module docstring), or None
    when its estimate is not finite. An interval end that is not finite is drawn at the
    estimate."""
    threshold, comparison = float(rule["threshold"]), rule["comparison"]
    values = [effect.get(k) for k in ("estimate", "low", "high")]
    values = [math.nan if v is None else float(v) for v in values]
    if not math.isfinite(values[0]):
        return None
    values = [v if math.isfinite(v) else values[0] for v in values]
    sign = -1.0 if comparison in LOWER else 1.0
    if threshold > 0 and min(values) > 0:
        x = [sign * math.log10(v / threshold) for v in values]
        kind = "log"
    else:
        gaps = [v - threshold for v in values]
        scale = max(abs(g) for g in gaps) or 1.0
        x = [sign * g / scale for g in gaps]
        kind = "scaled"
    estimate, low, high = x[0], min(x[1:]), max(x[1:])
    return estimate, low, high, kind


def points(claims_by_experiment: dict[str, list[dict]]) -> list[Point]:
    """Every measured part of every claim (a claim with a rule is its own part), in the order
    given: experiment, claim, part."""
    out = []
    for experiment, claims in claims_by_experiment.items():
        for claim in claims:
            parts = [claim] if claim.get("rule") else claim.get("parts") or []
            for k, part in enumerate(parts):
                if not (part.get("rule") and part.get("effect")):
                    continue
                where = position(part["rule"], part["effect"])
                if where is None:
                    continue
                suffix = f" #{k + 1}" if len(parts) > 1 else ""
                label = f"{claim.get('id') or experiment}{suffix}"
                paper = claim.get("paper")  # the paper its register entry cites, where given
                group = f"{experiment} · {paper}" if paper else experiment
                out.append(Point(label, group, part.get("status", INCONCLUSIVE), *where))
    return out


CAPTION = (
    "Every measured claim part, grouped by experiment and the paper its claim cites: its "
    "estimate and 95 % interval on one axis where the rule's threshold is 0 and the claim's "
    "side is to the right (circles: log10 of value over threshold; squares: the difference "
    "from the threshold scaled to its largest size; triangles at the edge: beyond ±6), "
    "coloured by the part's verdict."
)


def draw(
    claims_by_experiment: dict[str, list[dict]],
    out: Path,
    name: str = "claims_forest",
    formats: tuple[str, ...] | None = None,
    title: str = "Claims register",
):
    """Draw the forest plot, headed `title`, into out/name.<format> (formats: as `save_figure`'s);
    returns the paths written (none when no part was measured)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    drawn = points(claims_by_experiment)
    if not drawn:
        return []
    rows = len(drawn)
    # 8 in at 130 dpi is about a docs page's column, so the page shows it near its own size
    # and 7 pt labels on rows of 0.2 in (26 px) stay legible
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.2 * rows), layout="constrained")
    starts = [y for y, p in enumerate(drawn) if y == 0 or drawn[y - 1].group != p.group]
    for k, (start, end) in enumerate(zip(starts, [*starts[1:], rows])):
        if k % 2:  # alternate groups shaded, so a row is read against its experiment
            ax.axhspan(start - 0.5, end - 0.5, color="#f3f4f6", lw=0, zorder=0)
        # the experiment's name beside its group, outside the axes
        ax.text(1.01, (start + end - 1) / 2, drawn[start].group, transform=ax.get_yaxis_transform(),
                va="center", ha="left", fontsize=8, fontweight="bold")  # fmt: skip
    for y, p in enumerate(drawn):
        colour = COLOURS.get(p.status, COLOURS[INCONCLUSIVE])
        low, high = max(p.low, -CLIP), min(p.high, CLIP)
        ax.plot([low, high], [y, y], color=colour, lw=1.6)
        estimate = min(max(p.estimate, -CLIP), CLIP)
        marker = "o" if p.kind == "log" else "s"
        if abs(p.estimate) > CLIP:
            marker = ">" if p.estimate > 0 else "<"
        ax.plot([estimate], [y], marker, color=colour, ms=4.5)
    ax.axvline(0.0, color="k", lw=1)
    ax.set_xlim(-CLIP * 1.05, CLIP * 1.05)
    ax.set_yticks(range(rows), [p.label for p in drawn], fontsize=7)
    ax.set_ylim(rows - 0.5, -0.5)
    # the scale at the top as well: the plot is taller than a screen
    ax.tick_params(axis="x", top=True, labeltop=True, labelsize=8)
    ax.grid(axis="x", color="#d0d7de", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel(
        "distance from the rule's threshold, the claim's side to the right\n"
        "circles: log10(value / threshold); squares: difference scaled to its largest |value|;"
        f" triangles: beyond ±{CLIP:g}"
    )
    legend = [Line2D([], [], color=c, marker="o", lw=1.6, label=s) for s, c in COLOURS.items()]
    # the key above the plot, where a reader starts
    ax.legend(handles=legend, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=4,
              fontsize=8, frameon=False, borderaxespad=1.6)  # fmt: skip
    ax.set_title(
        f"{title}: {rows} measured claim parts, 95 % intervals\n"
        "right of 0: on the claim's side of its threshold",
        fontsize=10,
        pad=34,
    )
    return save_figure(fig, out, name, formats=formats)
