"""ngd-joint: joint training of attention W and head v from a small random start (NGD paper §4,
Fig. 3; the paper: its results extend to small random initialisation).

dm data (T = 2: a larger optimal token carrying the label, a noise token), self-attention,
W₀ and v₀ small and random. From zero, W's first step is already W_mm's direction (with T = 2
both are combinations of the same constraint vectors) and v's is the head SVM's, so "converges
in direction" was never exercised; from a random start it is. GD, NGD (the paper's eq. 13:
loss-normalised steps η/L), Polyak (L* = 0) and joint-NGD (each tensor's gradient normalised by
its own norm) are compared: the loss → 0, v aligns with the head SVM of the optimal tokens and
W with their Att-SVM.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from ..config import (
    Algorithms,
    NonNegative,
    NonNegativeInt,
    Positive,
    PositiveInt,
    Text,
    check_named,
    numbers,
)
from ..curves import curves
from ..data import dm
from ..engine import RunSpec
from ..judging.claims import Claim, identified, not_applicable
from ..judging.verdicts import ngd as rules
from ..judging.verdicts.tuning import Tuned, chosen_factor, chosen_steps, grid_edge, rate_scores
from . import plotting
from .ngd_fixed import figure
from .runs import (
    ZERO_OR_RANDOM_INIT,
    DMConfig,
    optimal_token_specs,
    random_init,
    scaled_step,
    sweep,
    sweep_summary,
)

# the selection seeds are SELECTION_SEED_BASE + 1, …: disjoint from the evaluation seeds 1..seeds
SELECTION_SEED_BASE = 1000
DESCRIPTION = "joint training of W and v: GD vs NGD vs Polyak vs joint-NGD on dm (NGD paper Fig. 3)"


class Config(DMConfig):
    init_scale: NonNegative = ZERO_OR_RANDOM_INIT
    steps: PositiveInt = Field(description="steps of every run")
    algorithms: Algorithms = Field(description="the algorithms compared ([[algorithms]] tables)")
    baseline: Text = Field(description="name of the plain GD algorithm")
    fastest: Text = Field(description="name of the algorithm the paper finds fastest (Polyak)")
    target_alignment: Positive = Field(
        description="alignment of W and v the fast algorithms must reach"
    )
    target_loss: Positive = Field(description="final loss the fast algorithms must reach")
    rate_factors: numbers(float, 0.0, strict=True) = Field(
        description="the grid each algorithm's step is chosen from: factors of its config step"
    )
    rate_extensions: NonNegativeInt = Field(
        description="how many times the grid may grow past an edge its best step sits at"
    )
    selection_seeds: PositiveInt = Field(
        description=f"seeds the steps and levels are chosen on: {SELECTION_SEED_BASE} + 1, …"
    )

    @model_validator(mode="after")
    def _baseline_is_an_algorithm(self):
        check_named(self, ("baseline",))  # fastest: optional (its claim is then n/a)
        return self

    @model_validator(mode="after")
    def _selection_apart_from_evaluation(self):
        if self.seeds > SELECTION_SEED_BASE:  # the selection seeds start above it
            raise ValueError(f"seeds must be <= {SELECTION_SEED_BASE}, got {self.seeds}")
        if len(set(self.rate_factors)) < 2:
            raise ValueError(
                f"rate_factors must hold at least 2 distinct factors, got {list(self.rate_factors)}"
            )
        return self


PANELS = [
    ("loss", "training loss", (True, True)),
    ("score/opt", "attention on the optimal tokens", (True, False)),
    ("1-alignment/2", "misalignment of W with its SVM", (True, True)),
    ("1-alignment_v/2", "misalignment of v with its SVM", (True, True)),
]


def specs(config: Config, run_seeds=None, algorithms=None) -> list[RunSpec]:
    """The config's runs; or those algorithms on those seeds."""
    shape = {"n": config.n, "d": config.d, "opt_norm": config.opt_norm, "noise": config.noise}
    d, scale = config.d, config.init_scale

    def init(seed: int) -> dict:
        return {"W": random_init((d, d), scale, seed, 0), "v": random_init(d, scale, seed, 1)}

    return optimal_token_specs(config, "dm", dm, shape, init, run_seeds, algorithms)


def selection_seeds(config: Config) -> range:
    return range(SELECTION_SEED_BASE + 1, SELECTION_SEED_BASE + config.selection_seeds + 1)


def tagged(config: Config, factors: dict[str, list[float]], role: str) -> list[tuple]:
    """(spec, (role, algorithm, factor)) for each algorithm at each of its step factors, on
    the selection seeds (role "selection") or the evaluation seeds ("evaluation")."""
    run_seeds = selection_seeds(config) if role == "selection" else None
    out = []
    for algorithm in config.algorithms:
        for factor in factors[algorithm.name]:
            made = specs(config, run_seeds, [scaled_step(algorithm, factor)])
            out += [(spec, (role, algorithm.name, factor)) for spec in made]
    return out


def grouped(report, tags: list[tuple]) -> dict:
    """role → algorithm → factor → Curves of the tagged runs."""
    by_key = {record.key: tag for record, (_, tag) in zip(report.records, tags, strict=True)}
    out: dict = {}
    for (role, name, factor), c in curves(report.records, lambda r: by_key[r.key]).items():
        out.setdefault(role, {}).setdefault(name, {})[factor] = c
    return out


def extended(factors: list[float], edges: set[str]) -> list[float]:
    """The grid one factor past each of `edges`, at the spacing of its two outermost factors
    there."""
    ordered = sorted(factors)
    low = [ordered[0] ** 2 / ordered[1]] if "smallest" in edges else []
    high = [ordered[-1] ** 2 / ordered[-2]] if "largest" in edges else []
    return [*low, *ordered, *high]


def tune(config: Config, out: Path) -> tuple[list[tuple], dict[str, set[float]]]:
    """Each algorithm's step factor for each metric compared, chosen on the selection seeds
    from config.rate_factors, the grid grown past an edge a best factor sits at (at most
    rate_extensions times): the selection runs (tagged) and each algorithm's chosen factors."""
    factors = {a.name: sorted(config.rate_factors) for a in config.algorithms}
    for extensions in range(config.rate_extensions + 1):
        tags = tagged(config, factors, "selection")
        selection = grouped(sweep(config, out, [s for s, _ in tags]), tags)["selection"]
        chosen = {name: {chosen_factor(rate_scores(by, m)) for m in rules.JOINT_METRICS}
                  for name, by in selection.items()}  # fmt: skip
        edges = {name: {grid_edge(factors[name], f) for f in chosen[name]} - {""}
                 for name in factors}  # fmt: skip
        if not any(edges.values()) or extensions == config.rate_extensions:
            return tags, chosen
        factors = {name: extended(factors[name], edges[name]) for name in factors}


def step_of(algorithm) -> tuple[str, float]:
    """The step a factor scales, named: η, or Polyak's 1/c (its lr is the cap)."""
    if algorithm.rule.lr_is_cap:
        return "1/c", 1.0 / algorithm.c
    return "η", algorithm.lr


def run(config: Config, out: Path) -> dict:
    selection_tags, chosen = tune(config, out)
    tuned_factors = {name: sorted(found - {1.0}) for name, found in chosen.items()}
    evaluation_tags = tagged(config, tuned_factors, "evaluation")
    base = [(spec, ("evaluation", spec.algorithm.name, 1.0)) for spec in specs(config)]
    tags = base + evaluation_tags + selection_tags
    report = sweep(config, out, [s for s, _ in tags])
    runs = grouped(report, tags)
    groups = {name: by[1.0] for name, by in runs["evaluation"].items()}
    tuned = Tuned(runs["selection"], runs["evaluation"],
                  {a.name: step_of(a) for a in config.algorithms})  # fmt: skip
    config = {**config, "data": "dm"}
    summary = {
        "claims": claims(groups, config, tuned),
        "tuned_steps": chosen_steps(tuned, rules.JOINT_METRICS),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, config, out, PANELS))


SLUGS = ("loss-to-zero", "v-aligns", "W-aligns", "all-beat-gd", "polyak-fastest")
# ours: converging, not only near: a misalignment falls by 10× after the first steps
FALL = 10.0
# ours: W's misalignment falls at least like 1/‖W_t‖ as ‖W_t‖ grows (−2: a bounded residual)
DIRECTION_SLOPE = -1.0


def claims(groups, config, tuned: Tuned) -> list[Claim]:
    """The NGD paper's §4 claims (Fig. 3; verdicts: judging/verdicts/ngd.py). Convergence
    holds for GD too (the paper proves it); speed is what sets NGD, Polyak and joint-NGD apart.
    W's direction is judged against ‖W_t‖, not by a level: under joint training ‖W_t‖ grows
    like log t, so from a random start a misalignment level is out of reach of any run."""
    baseline, fastest = config["baseline"], config["fastest"]
    target, target_loss = config["target_alignment"], config["target_loss"]
    if len(groups) < 2:
        why = f"only {', '.join(groups)} was run: nothing to compare"
        speed = [not_applicable(t, why) for t in ("all beat GD", f"{fastest} fastest")]
    else:
        speed = [
            rules.all_beat(tuned, baseline),
            rules.fastest(tuned, fastest)
            if fastest in groups
            else not_applicable(f"{fastest} fastest", f"{fastest} was not run"),
        ]
    out = [
        rules.joint_convergence(groups, "loss", target_loss,
                                f"The loss goes to 0: every algorithm ends below {target_loss:g}",
                                rules.LOSS_RATE),
        rules.joint_convergence(groups, "1-alignment_v/2", 1.0 - target,
                                "The head v converges in direction to the head SVM of the "
                                f"optimal tokens: alignment ≥ {target:g} and a misalignment "
                                f"{FALL:g}× smaller than at the second step, for every "
                                "algorithm", rules.MISALIGNMENT_RATE, fall=FALL),
        rules.direction_converges(groups, "1-alignment/2", DIRECTION_SLOPE,
                                  "W converges in direction to the Att-SVM of the optimal "
                                  "tokens: as ‖W_t‖ grows its misalignment falls at least like "
                                  f"‖W_t‖^{DIRECTION_SLOPE:g} (log–log slope over the second "
                                  "half of the steps where ‖W_t‖ grows), for every algorithm"),
        *speed,
    ]  # fmt: skip
    return identified("ngd-joint", out, SLUGS)
