"""ngd-fixed: normalized GD and Polyak steps find the global max-margin attention fast
(NGD paper Fig. 2).

example1 data (nearly orthogonal tokens, all non-optimal tokens of a sample scored equally),
self-attention with the fixed head v, W₀ small and random. GD, NGD, NGD-momentum and Polyak
(L* = the loss with all attention on the optimal tokens) are compared on the loss, ‖W_t‖, the
optimal-token softmax score and the alignment of W_t with the Frobenius Att-SVM of the
*globally optimal* tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from ..config import Algorithms, Positive, PositiveInt, Text, algorithm_named, check_named
from ..curves import Curves, loglog_slope, misalignment_curve, run_seed
from ..data import GENERATORS
from ..engine import RunSpec
from ..experiment_configs.sweep import OptimalTokenConfig
from ..figures import save_figure
from ..judging.claims import Claim, identified
from ..judging.verdicts import ngd as rules
from ..judging.verdicts.common import growing_until, over_runs, seeds_of
from ..judging.verdicts.reexamine import PACE_SLOPE
from ..judging.verdicts.tuning import Tuned, chosen_steps
from . import plotting
from .runs import (
    assumption1_by_seed,
    optimal_token_specs,
    random_init,
    sweep_summary,
)
from .tuning_sweep import TuningConfig, confirmed, earlier_looks, tuned_sweep

DESCRIPTION = (
    "GD vs NGD vs NGD-momentum vs Polyak on example1: global convergence, fast (NGD paper Fig. 2)"
)


class Config(OptimalTokenConfig, TuningConfig):
    data: Literal["example1", "antipodal"] = Field(description="data generator")
    steps: PositiveInt = Field(description="steps of every run")
    algorithms: Algorithms = Field(description="the algorithms compared ([[algorithms]] tables)")
    reference: Text = Field(description="name of the normalized GD algorithm the claims are about")
    baseline: Text = Field(description="name of the plain GD algorithm")
    fast: Text = Field(description="name of the Polyak algorithm")
    momentum: Text = Field(
        description="name of the NGD-with-momentum algorithm (if not run: its claim is n/a)"
    )
    target_alignment: Positive = Field(description="alignment the reference algorithm must reach")
    early_fraction: Positive = Field(
        description="'early' = the steps up to this fraction of the run"
    )

    @model_validator(mode="after")
    def _names_are_algorithms(self):
        check_named(self, ("reference", "baseline", "fast"))  # momentum: optional (claim n/a)
        return self


# the metrics each tuned step is chosen for: ngd-beats-gd's (loss, misalignment, score) and
# polyak-faster's (the loss and the score in their scale-safe forms)
TUNING_METRICS = tuple(dict.fromkeys(rules.FIXED_HEAD_METRICS + rules.SCALE_SAFE_METRICS))


def shape_of(config: Config) -> dict:
    return {"n": config.n, "T": config.T, "d": config.d, "opt_score": config.opt_score}


def specs(
    config: OptimalTokenConfig, run_seeds=None, algorithms=None, optimal_excess: bool = False
) -> list[RunSpec]:
    """The config's runs; or those algorithms on those seeds (`optimal_excess`: measuring
    L − L* and the other tokens' mass too, `RunSpec.optimal_excess`)."""
    d, scale = config.d, config.init_scale
    return optimal_token_specs(
        config,
        config.data,
        GENERATORS[config.data],
        shape_of(config),
        lambda seed: {"W": random_init((d, d), scale, seed)},
        run_seeds,
        algorithms,
        optimal_excess,
    )


def run(config: Config, out: Path) -> dict:
    # speed is compared at tuned steps: the algorithms of the speed rows are tuned; NGD and GD
    # also run at every step of their grid (ngd-beats-gd compares their rates at each)
    tuned_names = (config.reference, config.baseline, config.fast, config.momentum)
    every = (config.reference, config.baseline)
    # NGD also runs at momentum's effective step η/(1 − β): momentum-beyond-effective-step
    # compares there
    factor = effective_factor(config)
    also = {config.reference: [factor]} if factor is not None else {}
    # every run records L − L* and the other tokens' mass, which polyak-faster times (a loss
    # near L* and a score near 1 round to their float64 floor)
    # polyak-faster is judged on fresh seeds, NGD and Polyak at the steps chosen on the
    # selection seeds (`confirmed`)
    report, groups, tuned = tuned_sweep(
        config, out, partial(specs, optimal_excess=True), TUNING_METRICS, tuned_names,
        every_factor=every, also_at=also,
        confirm=(config.reference, config.fast, config.momentum),
    )  # fmt: skip
    outside = assumption1_by_seed(GENERATORS[config.data], shape_of(config), config)
    effective = at_effective_step(config, tuned)
    fresh = confirmed(tuned)
    # Polyak's cap binds where ‖W_t‖ leaves the uncapped pace (reexamine-polyak's reading);
    # an infinite cap never binds
    cap = algorithm_named(config, config.fast).lr
    polyak_runs = {} if math.isinf(cap) else fresh.evaluation[config.fast]
    onsets = {f: growing_until(c, PACE_SLOPE) for f, c in polyak_runs.items()}
    summary = {
        "claims": claims(
            groups,
            config,
            tuned,
            report.records,
            outside,
            effective,
            (cap, onsets),
            fresh,
        ),
        "tuned_steps": chosen_steps(tuned, TUNING_METRICS),
        "slopes": slopes(groups),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, config, out))


def slopes(groups: dict[str, Curves]) -> dict:
    """Fitted log-log slopes over the last 90% of the run (the rates' exponents)."""
    return {
        name: {
            "norm_vs_t": loglog_slope(c.steps, c.mean("norm/2")),
            "misalignment_vs_t": loglog_slope(
                c.steps, over_runs(np.mean, misalignment_curve(c), 0)
            ),
        }
        for name, c in groups.items()
    }


def svm_norms(records, c: Curves) -> np.ndarray:
    """‖W_mm‖_F of each kept run of group `c` (its problem's Att-SVM), in the group's order."""
    by_seed = {run_seed(r): float(np.linalg.norm(r.arrays["W_mm_2"])) for r in records}
    return np.array([by_seed[int(s)] for s in seeds_of(c)])


def effective_factor(config: Config) -> float | None:
    """The factor of the reference's (NGD's) config step at which its η is the momentum
    algorithm's effective step η/(1 − β), to 12 significant digits (1 − β's float noise off);
    None without a momentum algorithm."""
    mom = algorithm_named(config, config.momentum)
    if mom is None or not mom.momentum:
        return None
    reference = algorithm_named(config, config.reference)
    return float(f"{mom.lr / (1.0 - mom.momentum) / reference.lr:.12g}")


def at_effective_step(config: Config, tuned: Tuned) -> dict[str, Curves]:
    """The reference's (NGD's) evaluation runs at momentum's effective step η/(1 − β),
    labelled by that step ("NGD at η = 1" → runs); {} without a momentum algorithm."""
    factor = effective_factor(config)
    if factor is None:
        return {}
    name, step = tuned.steps[config.reference]
    runs = tuned.evaluation[config.reference][factor]
    return {f"{config.reference} at {name} = {step * factor:.3g}": runs}


def claims(
    groups: dict[str, Curves],
    config: Config,
    tuned: Tuned,
    records=(),
    outside: dict | None = None,
    effective: dict[str, Curves] | None = None,
    cap_binds: tuple[float, dict] | None = None,
    fresh: Tuned | None = None,
) -> list[Claim]:
    """The NGD paper's claims on this data (verdicts: judging/verdicts/ngd.py): the speed
    rows compare `tuned` runs, each algorithm at its tuned step; the others the config's steps
    (`groups`). `outside`: Assumption 1 per seed (runs.assumption1_by_seed), put in the
    evidence of the rows citing Theorem 1 or its lemmas, which test beyond the theorem where
    it fails. `effective`: the reference's runs at momentum's effective step η/(1 − β),
    labelled (`at_effective_step`), which momentum-beyond-effective-step compares. `cap_binds`:
    Polyak's cap γ_b and, per step factor, the step from which it binds on each evaluation
    run; polyak-faster's parts timed past it are inconclusive (`rules.unless_cap_binds`).
    `fresh`: `tuned` with NGD and Polyak run again on fresh seeds (`tuning_sweep.confirmed`),
    which polyak-faster is judged on; its profile on the evaluation seeds is its evidence."""
    reference, baseline = config["reference"], config["baseline"]
    start = config["early_fraction"]  # fits leave out the steps before this fraction of the run
    polyak = polyak_faster_row(
        tuned, fresh or tuned, config["fast"], reference, cap_binds or (0.0, {})
    )
    out = [
        rules.global_convergence(groups, reference, config["target_alignment"]),
        rules.ngd_beats_gd(tuned, reference, baseline, start),
        polyak,
        rules.norm_growth(groups, reference, baseline, start),
        rules.norm_growth_bound(groups, reference, start),
        momentum_row(groups, tuned, fresh or tuned, config["momentum"], reference),
        rules.momentum_beyond_step(groups, config["momentum"], effective),
        rules.score_saturation(groups, reference, svm_norms(records, groups[reference]), start),
    ]
    slugs = ("global-convergence", "ngd-beats-gd", "polyak-faster", "norm-growth",
             "norm-growth-bound", "momentum-improves", "momentum-beyond-effective-step",
             "score-saturation")  # fmt: skip
    # evidence only (no verdict reads it): Assumption 1's report on the rows citing Thm 1
    beyond = dict.fromkeys(THEOREM_ROWS, outside or {})
    for claim, slug in zip(out, slugs):
        claim.evidence.update(beyond.get(slug, {}))
    return identified(config.get("experiment", "ngd-fixed"), out, slugs)


def momentum_row(
    groups: dict[str, Curves], tuned: Tuned, fresh: Tuned, momentum: str, reference: str
) -> Claim:
    """momentum-improves, each method's η tuned alike (`rules.tuned_momentum_improves`),
    judged on `fresh` (the confirmation seeds: the evaluation seeds had been read for the
    equal-η comparison and for NGD's speed), each earlier look as evidence
    (`with_earlier_looks`), and the paper's comparison at equal nominal η
    (`rules.momentum_improves`) beside it."""
    claim = rules.tuned_momentum_improves(fresh, momentum, reference)
    claim = with_earlier_looks(
        claim, tuned, lambda look: rules.tuned_momentum_improves(look, momentum, reference)
    )
    equal = rules.momentum_improves(groups, momentum, reference)
    claim.evidence["at_equal_nominal_step"] = rules.look_summary(equal)
    return claim


def polyak_faster_row(
    tuned: Tuned,
    fresh: Tuned,
    fast: str,
    reference: str,
    cap_binds=None,
    reading: str = rules.POLYAK_UNCAPPED,
) -> Claim:
    """polyak-faster (`fast`, Polyak, against `reference`, NGD) judged on `fresh`'s runs (the
    confirmation seeds, or the evaluation seeds where none ran), each part inconclusive where
    Polyak's cap binds first where `cap_binds` gives (γ_b, onsets) (`rules.unless_cap_binds`;
    None: the cap is the setting judged); where `fresh` is a confirmation, the same comparison
    on each look before it (the evaluation seeds, earlier confirmations: `earlier_looks`) is
    its evidence. `reading`: the caps, as the threshold's source says them."""
    claim = rules.tuned_polyak_faster(fresh, fast, reference, reading)
    if cap_binds is not None:
        claim = rules.unless_cap_binds(claim, fresh, fast, *cap_binds, rules.PLACED_BY_PACE)
    return with_earlier_looks(
        claim, tuned, lambda look: rules.tuned_polyak_faster(look, fast, reference, reading)
    )


def with_earlier_looks(claim: Claim, tuned: Tuned, judged: Callable[[Tuned], Claim]) -> Claim:
    """`claim` (judged on the confirmation) with the same rule `judged` on each look before it
    (`tuning_sweep.earlier_looks`) as its evidence, each look judged alone (`look_summary`)."""
    looks = earlier_looks(tuned)
    if looks:
        claim.evidence["earlier_looks"] = {
            seeds: rules.look_summary(judged(look)) for seeds, look in looks.items()
        }
    return claim


# the rows citing Theorem 1 (its rate too) or a lemma of its proof (Eq. 12, Lemma 1)
THEOREM_ROWS = ("global-convergence", "ngd-beats-gd", "norm-growth", "score-saturation")

PANELS = [
    ("loss", "training loss", (True, False)),
    ("norm/2", "norm of the iterate", (True, True)),
    ("score/opt", "attention on the optimal tokens", (True, False)),
    ("1-alignment/2", "misalignment with the Att-SVM", (True, True)),
]


def figure(groups: dict[str, Curves], config: dict, out: Path, panels=PANELS) -> list[str]:
    """One panel per (metric, label, log axes); "1-m" plots 1 − metric m. A log-scale loss
    shows the last plotting.LOSS_DECADES decades (the fastest method's loss falls further)."""
    fig, axes = plotting.subplots(1, len(panels))
    for ax, (metric, label, log) in zip(axes[0], panels):
        for name, c in groups.items():
            if metric.startswith("1-"):
                c = Curves(c.steps, {metric: 1.0 - c.values[metric[2:]]})
            plotting.band(ax, c, metric, label=name, log=log)
        if metric == "loss" and log[1]:
            plotting.limit_decades(ax)
        plotting.panel(ax, label)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(
        f"{config['experiment']} on {config['data']} data "
        f"({plotting.band_note(plotting.runs_per_curve(groups))})",
        fontsize=10,
    )
    return save_figure(fig, out, config["experiment"])
