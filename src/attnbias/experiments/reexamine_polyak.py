"""reexamine-polyak: is the NGD paper's "Polyak step-size leads to even faster convergence than
NGD across all metrics" (§3, Fig. 2) decided by the cap γ_b? With the cap binding, late Polyak
is GD with the fixed step γ_b (the paper says so itself: "the rates are much faster in the
beginning, but slow down as training progresses").

ngd-fixed's problem (example1 data, fixed head, W₀ ~ N(0, init_scale²), seeds 1..N): its NGD
against Polyak η_t = min{(L − L*)/(c‖∇L‖²), γ_b} (L* the loss with all attention on the optimal
tokens) for every cap γ_b in `caps` and every c in `cs`. Speed is judged by steps to reach a
level (verdicts/reexamine.py `setting_faster`), not by final values at the float64 floor, with
NGD at its tuned step (issue 29): NGD's η is chosen for each metric on selection seeds apart
from the evaluation seeds (tuning_sweep.py, as ngd-fixed's), once, since its score is its own;
each Polyak (γ_b, c) runs as set, its c being the knob the rows vary where it matters, and its
selection runs set the levels beside NGD's.

Claims: one per distinct setting (`polyak-faster-cap-…`: a cap at which c has no effect on the
speed ratios is one setting, judged at the paper's c; `polyak-faster-cap-…-c-…` each c of a cap
where it matters, as for γ_b = ∞), "at some setting" (Holm across the distinct
settings), "at the paper's setting" (ngd-fixed's γ_b, the paper's own value being lost in
extraction, and c = 1), who is ahead when the runs end, per cap (`ngd-ends-ahead-cap-…`:
ngd-fixed's "NGD ends 30× better"; NGD at its η tuned for the misalignment), and whether the cap
decides that (`larger-cap-ends-closer`: the artefact). Those two compare each seed's runs at the
last recorded step at which both still moved (a run float64 froze is compared where it stopped:
inconclusive). The uncapped step γ_b = ∞ is exact: the engine takes η_t∇L from the logs of
‖∇L‖ and of L − L* (`optim.divisors.polyak_log_step`, L − L* a logsumexp of the other tokens'
scores), so no float64 limit ends its pace (a finite stand-in cap, 1e300, bound at logit gaps
~691 before).
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from ..config import AlgorithmTable, Caps, Positive, PositiveInt, numbers, real
from ..curves import Curves
from ..engine import Algorithm
from ..experiment_configs.sweep import OptimalTokenConfig
from ..figures import save_figure
from ..judging.claims import SUPPORTED, Claim, identified
from ..judging.verdicts import ngd as ngd_rules
from ..judging.verdicts import reexamine as rules
from ..judging.verdicts.common import final, over_runs, values
from ..judging.verdicts.tuning import Tuned, chosen_steps, edge_doubts
from . import ngd_fixed, plotting
from .runs import sweep_summary
from .tuning_sweep import TuningConfig, tuned_sweep

DESCRIPTION = "Re-examines ngd-fixed's Polyak verdict: a sweep of the cap γ_b and of c"


class Config(OptimalTokenConfig, TuningConfig):
    data: Literal["example1", "antipodal"] = Field(description="data generator")
    steps: PositiveInt = Field(description="steps of every run")
    reference: AlgorithmTable = Field(description="the normalized GD run Polyak is compared with")
    caps: Caps = Field(description="the caps γ_b swept (inf: uncapped, exact)")
    cs: numbers(float, 0.0, strict=True) = Field(description="the constants c swept")
    paper_cap: Positive = Field(
        description="the cap of the 'paper's setting' reading (one of caps): ngd-fixed's, the "
        "paper's own value being lost in extraction"
    )
    paper_c: Positive = Field(description="the c of the paper's setting (one of cs)")
    rate_start: real(gt=0, lt=1) = Field(
        description="‖W_t‖'s log–log slope, and whether a run stopped, are read over steps ≥ "
        "this · last step"
    )

    @model_validator(mode="after")
    def _settings_are_swept(self):
        if self.reference.optimizer == "polyak":
            raise ValueError("reference must be a non-Polyak algorithm, got optimizer 'polyak'")
        if self.paper_cap not in self.caps:
            raise ValueError(f"paper_cap {self.paper_cap:g} is not one of caps {list(self.caps)}")
        if self.paper_c not in self.cs:
            raise ValueError(f"paper_c {self.paper_c:g} is not one of cs {list(self.cs)}")
        if len(set(self.caps)) < 2:
            raise ValueError(
                f"caps must hold at least two caps for larger-cap-ends-closer, got "
                f"{list(self.caps)}"
            )
        return self

    @property
    def ladder_caps(self) -> list[float]:
        """The caps, increasing (∞ last): those larger-cap-ends-closer compares."""
        return sorted(set(self.caps))

    @property
    def settings(self) -> dict[str, tuple[float, float]]:
        """Polyak's algorithm name → its (γ_b, c), for every pair of the sweep."""
        return {polyak_name(cap, c): (cap, c) for cap in self.caps for c in self.cs}

    @property
    def algorithms(self) -> tuple[Algorithm, ...]:
        """The reference, then one Polyak step per (γ_b, c) (what `optimal_token_specs` runs)."""
        polyak = [
            Algorithm(name, "polyak", cap, c=c, f_star="optimal")
            for name, (cap, c) in self.settings.items()
        ]
        return (self.reference, *polyak)


def short(x: float) -> str:
    """A power of ten as 1e6 (not 1e+06), ∞ as ∞, anything else as :g."""
    if x == math.inf:
        return "∞"
    exponent = math.log10(x)
    return f"1e{round(exponent)}" if x >= 1e3 and exponent == round(exponent) else f"{x:g}"


def slug(cap: float) -> str:
    """A cap as the claims' ids spell it: `short`, ∞ as inf."""
    return "inf" if cap == math.inf else short(cap)


def polyak_name(cap: float, c: float) -> str:
    return f"Polyak γ_b={short(cap)} c={c:g}"


def run(config: Config, out: Path) -> dict:
    report, groups, tuned = tuned_sweep(
        config, out, partial(ngd_fixed.specs, optimal_excess=True), ngd_rules.SCALE_SAFE_METRICS,
        [config.reference.name], fixed=list(config.settings),
    )  # fmt: skip
    ends = tuned_reference(tuned, config.reference.name)
    steps = chosen_steps(tuned, ngd_rules.SCALE_SAFE_METRICS)  # Polyak's: its one setting
    summary = {
        "claims": claims(groups, config, tuned),
        "tuned_steps": {config.reference.name: steps[config.reference.name]},
        "tables": {
            "final values, median over seeds": final_values_table(groups | ends, config.rate_start)
        },
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, config, out))


def tuned_reference(tuned: Tuned, reference: str) -> dict[str, Curves]:
    """The reference's evaluation runs at its step tuned for the misalignment, named by that
    step ("NGD at η = 1.6"): who ends ahead is a misalignment at the end."""
    metric = ngd_rules.MISALIGNMENT
    name = f"{reference} at {tuned.step_label(reference, metric)}"
    return {name: tuned.evaluation[reference][tuned.chosen(reference, metric)]}


def claims(groups: dict[str, Curves], config: Config, tuned: Tuned) -> list[Claim]:
    """Speed (per setting, at some, at the paper's) with the reference at its tuned step and
    each Polyak setting as set (`tuned`); who ends ahead with the reference at its step tuned
    for the misalignment (`tuned_reference`); the cap ladder among Polyak's runs (`groups`)."""
    reference = config.reference.name
    speed = speed_rows(config, tuned)
    ends = tuned_reference(tuned, reference)
    (tuned_name,) = ends
    # the reference's step at the edge of its grid: a better one would put it further ahead
    doubts = edge_doubts(tuned, reference, ngd_rules.MISALIGNMENT, "fast")
    (paper,) = [claim for (cap, c), claim in speed.items()
                if cap == config.paper_cap and c in (config.paper_c, None)]  # fmt: skip
    out = [
        *speed.values(),
        Claim(
            f"Polyak (as set) is faster than {reference} (at its tuned step) on every metric "
            f"at one setting at least of the {len(speed)} distinct ones (a cap at which c has "
            "no effect is one setting; γ_b ∈ "
            f"{[short(c) for c in config.caps]}, c ∈ {list(config.cs)}; Holm's correction "
            "across the settings)",
            parts=list(speed.values()),
            any_part=True,
        ),
        Claim(
            f"At the paper's setting (γ_b = {short(config.paper_cap)}, c = "
            f"{config.paper_c:g}) Polyak is faster than {reference} (at its tuned step) on "
            "every metric",
            parts=[paper],
        ),
        *(
            rules.ends_ahead(
                groups | ends,
                tuned_name,
                [polyak_name(cap, c) for c in config.cs],
                f"Polyak at γ_b = {short(cap)} (every c)",
                doubts,
            )
            for cap in config.caps
        ),
        rules.larger_cap_ends_closer(
            groups, [polyak_name(cap, config.paper_c) for cap in config.ladder_caps]
        ),
    ]
    slugs = [
        *(f"polyak-faster-cap-{slug(cap)}" + ("" if c is None else f"-c-{c:g}")
          for cap, c in speed),
        "faster-at-some-setting",
        "faster-at-paper-setting",
        *(f"{reference.lower()}-ends-ahead-cap-{slug(cap)}" for cap in config.caps),
        "larger-cap-ends-closer",
    ]  # fmt: skip
    return identified(config.experiment, out, slugs)


def speed_rows(config: Config, tuned: Tuned) -> dict[tuple[float, float | None], Claim]:
    """The speed claims, one per distinct setting: (γ_b, None) → a cap's claim where c has no
    effect on it (`knob_effect`: once the cap binds, Polyak's step is γ_b whatever c), judged
    at the paper's c; else (γ_b, c) → each c's. Each part's quantity names the check."""
    reference = config.reference.name
    rows = {}
    for cap in config.caps:
        by_c = {c: rules.setting_faster(tuned, polyak_name(cap, c), reference,
                                        labels=ngd_rules.SCALE_SAFE_LABELS)
                for c in config.cs}  # fmt: skip
        check = rules.knob_effect(by_c, "c")
        if check.status == SUPPORTED:
            rows[(cap, None)] = rules.knob_noted(by_c[config.paper_c], check, "c")
        else:
            rows |= {(cap, c): rules.knob_noted(claim, check, "c") for c, claim in by_c.items()}
    return rows


def final_values_table(groups: dict[str, Curves], start: float) -> list[dict]:
    """Per algorithm: median final misalignment, 1 − optimal-token score, ‖W_t‖ and its slope."""
    return [
        {
            "algorithm": name,
            "misalignment": float(over_runs(np.median, final(c, ngd_rules.MISALIGNMENT))),
            "1 − score": float(over_runs(np.median, final(c, "1-score/opt"))),
            "‖W_t‖": float(over_runs(np.median, final(c, "norm/2"))),
            "‖W_t‖ slope": float(over_runs(np.median, ngd_rules.norm_slopes(c, start))),
            "runs stopped": int(np.sum(stopped(c, start))),
        }
        for name, c in groups.items()
    ]


def stopped(c: Curves, start: float) -> np.ndarray:
    """Per run: did its iterate stop, ‖W_t‖ the very same number at every recorded step from
    `start` × the last on? (A step float64 ended, as Polyak's was once L − L* rounded to 0.) For the
    table: the claims compare where runs still moved (`verdicts.reexamine.moving_until`)."""
    late = c.steps >= start * c.steps[-1]
    return np.array([np.ptp(row[late]) == 0 for row in values(c, "norm/2")], dtype=bool)


def whole_decades(ax) -> None:
    """A log y-axis from the power of ten below its lowest finite line value to the one above
    its highest: at least two labelled ticks (a narrow range showed one, or none)."""
    values = np.concatenate(
        [np.asarray(line.get_ydata(), dtype=float) for line in ax.lines] or [[]]
    )
    values = values[np.isfinite(values) & (values > 0)]
    if values.size:
        low, high = np.log10(values.min()), np.log10(values.max())
        ax.set_ylim(10.0 ** np.floor(low), 10.0 ** max(np.ceil(high), np.floor(low) + 1))


CAP_PANELS = [
    (ngd_rules.MISALIGNMENT, "1 − alignment with W_mm"),
    ("1-score/opt", "1 − optimal-token score"),
    ("norm/2", "‖W_t‖_F"),
]


def figure(groups: dict[str, Curves], config: Config, out: Path) -> list[str]:
    """Rows: misalignment, 1 − score, ‖W_t‖; columns: c; in each panel NGD and every cap,
    each cap in one colour across the panels."""
    reference = config.reference.name
    fig, axes = plotting.subplots(len(CAP_PANELS), len(config.cs))
    colour = {reference: plotting.style(reference, fig)["color"]}
    colour |= {cap: plotting.style(f"Polyak γ_b={short(cap)}", fig)["color"] for cap in config.caps}
    for j, c in enumerate(config.cs):
        shown = {reference: reference, **{polyak_name(cap, c): cap for cap in config.caps}}
        for i, (metric, label) in enumerate(CAP_PANELS):
            ax = axes[i, j]
            for name, key in shown.items():
                g = groups[name]
                if metric.startswith("1-"):
                    g = Curves(g.steps, {metric: 1.0 - g.values[metric[2:]]})
                plotting.band(ax, g, metric, label=name, color=colour[key], log=(True, True))
            whole_decades(ax)
            plotting.panel(ax, f"{label} (c = {c:g})")
        axes[0, j].legend(fontsize=6)
    fig.suptitle(
        f"{config.experiment}: NGD against Polyak for every cap γ_b, on {config.data} data "
        f"({plotting.band_note(plotting.runs_per_curve(groups))})",
        fontsize=10,
    )
    return save_figure(fig, out, config.experiment)
