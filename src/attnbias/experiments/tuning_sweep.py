"""The runs behind speed at tuned steps (issue 29; the verdicts: verdicts/tuning.py): each
tuned algorithm's step is chosen per metric from factors of its config step on selection seeds
disjoint from the evaluation seeds, the grid grown past an edge a best step sits at; the
algorithms are then run at their chosen steps on the evaluation seeds."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pydantic import Field, model_validator

from ..config import NonNegativeInt, PositiveInt, integer, numbers
from ..curves import curves
from ..engine import RunSpec
from ..experiment_configs.sweep import SweepConfig
from ..judging.verdicts.tuning import Tuned, chosen_factor, grid_edge, rate_scores
from .runs import scaled_step, sweep

# the selection seeds are SELECTION_SEED_BASE + 1, …: disjoint from the evaluation seeds 1..seeds
SELECTION_SEED_BASE = 1000
# fresh seeds a comparison is confirmed on (`confirmed`) lie above CONFIRMATION_SEED_BASE, apart
# from both
CONFIRMATION_SEED_BASE = 2000

# specs(config, run_seeds, algorithms): the config's runs of those algorithms on those seeds
# (None: the config's)
MakeSpecs = Callable[..., list[RunSpec]]


class TuningConfig(SweepConfig):
    """Fields of an experiment that compares speed at tuned steps."""

    rate_factors: numbers(float, 0.0, strict=True) = Field(
        description="the grid each algorithm's step is chosen from: factors of its config step"
    )
    rate_extensions: NonNegativeInt = Field(
        description="how many times the grid may grow past an edge its best step sits at"
    )
    selection_seeds: PositiveInt = Field(
        description=f"seeds the steps and levels are chosen on: {SELECTION_SEED_BASE} + 1, …"
    )
    confirmation_seeds: NonNegativeInt = Field(
        description="fresh seeds (confirmation_first, …) a comparison is judged on, each method "
        "at the steps and levels chosen on the selection seeds (0: judged on the evaluation "
        "seeds)"
    )
    confirmation_first: integer(gt=CONFIRMATION_SEED_BASE) = Field(
        description=f"the first confirmation seed (above {CONFIRMATION_SEED_BASE}): past the "
        "seeds of an earlier confirmation, whose verdict was seen"
    )
    earlier_confirmations: list[tuple[integer(gt=CONFIRMATION_SEED_BASE), PositiveInt]] = Field(
        default=[],
        description="(first seed, seeds) of each confirmation looked at before this one, oldest "
        "first: run again at the same chosen steps, each judged alone, their verdicts are "
        "evidence beside the confirmation's (a look's numbers are stored, not written by hand)",
    )

    @model_validator(mode="after")
    def _selection_apart_from_evaluation(self):
        if self.seeds > SELECTION_SEED_BASE:  # the selection seeds start above it
            raise ValueError(f"seeds must be <= {SELECTION_SEED_BASE}, got {self.seeds}")
        apart = CONFIRMATION_SEED_BASE - SELECTION_SEED_BASE  # the confirmation seeds above
        if self.selection_seeds > apart:
            raise ValueError(f"selection_seeds must be <= {apart}, got {self.selection_seeds}")
        looks = self.earlier_ranges
        for i, (look, later) in enumerate(zip(looks, [*looks[1:], self.confirmation_range])):
            if look.stop > later.start:
                raise ValueError(
                    f"earlier_confirmations[{i}] (seeds {look.start}–{look.stop - 1}) must end "
                    f"before the next confirmation's first seed {later.start}: oldest first, "
                    "each look on seeds of its own"
                )
        if len(set(self.rate_factors)) < 2:
            raise ValueError(
                f"rate_factors must hold at least 2 distinct factors, got {list(self.rate_factors)}"
            )
        return self

    @property
    def confirmation_range(self) -> range:
        """The confirmation seeds: confirmation_first, …, confirmation_seeds of them."""
        return range(self.confirmation_first, self.confirmation_first + self.confirmation_seeds)

    @property
    def earlier_ranges(self) -> list[range]:
        """The seeds of each earlier confirmation (`earlier_confirmations`), oldest first."""
        return [range(first, first + n) for first, n in self.earlier_confirmations]


def seeds_label(seeds: range) -> str:
    """A range of seeds as the register names it: "2001–2100"."""
    return f"{seeds.start}–{seeds.stop - 1}"


def selection_seeds(config: TuningConfig) -> range:
    return range(SELECTION_SEED_BASE + 1, SELECTION_SEED_BASE + config.selection_seeds + 1)


def tagged(
    config: TuningConfig,
    specs: MakeSpecs,
    factors: dict[str, list[float]],
    role: str,
    run_seeds: range | None = None,
) -> list[tuple]:
    """(spec, (role, algorithm, factor)) for each algorithm named in `factors` at each of its
    step factors, on the selection seeds (role "selection"), `run_seeds` or the evaluation
    seeds."""
    if role == "selection":
        run_seeds = selection_seeds(config)
    out = []
    for algorithm in config.algorithms:
        for factor in factors.get(algorithm.name, ()):
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


def tune(
    config: TuningConfig,
    out: Path,
    specs: MakeSpecs,
    metrics,
    names: Collection[str],
    score: str = "rate",
) -> tuple[list[tuple], dict[str, set[float]]]:
    """Each named algorithm's step factor for each of `metrics`, chosen by `score` on the
    selection seeds from config.rate_factors, the grid grown past an edge a best factor sits
    at (at most rate_extensions times): the selection runs (tagged) and each algorithm's
    chosen factors."""
    factors = {a.name: sorted(config.rate_factors) for a in config.algorithms if a.name in names}
    for extensions in range(config.rate_extensions + 1):
        tags = tagged(config, specs, factors, "selection")
        selection = grouped(sweep(config, out, [s for s, _ in tags]), tags)["selection"]
        chosen = {name: {chosen_factor(rate_scores(by, m, score)) for m in metrics}
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


def tuned_sweep(
    config: TuningConfig,
    out: Path,
    specs: MakeSpecs,
    metrics,
    names: Collection[str] = (),
    score: str = "rate",
    every_factor: Collection[str] = (),
    also_at: dict[str, Collection[float]] | None = None,
    confirm: Collection[str] = (),
    confirm_grid: bool = False,
):
    """The config's runs, and the named algorithms' (all: `names` empty) tuned for `metrics`
    by `score` (`tune`) and run at their chosen steps on the evaluation seeds, those in
    `every_factor` at every factor of the
    grid they were tuned over (a comparison at every step, not only the best) and those in
    `also_at` (name → factors) at those factors too (a reference run at a step a claim
    names): the sweep's report, each algorithm's runs at its config step (name → Curves) and
    the Tuned runs (of the named algorithms). The algorithms in `confirm` also run at their
    chosen steps on the config's fresh confirmation seeds (`confirmation_range`; none when
    there are 0) that no choice and no look has seen, in the same sweep: `confirmed` gives the
    Tuned whose evaluation runs they are; they also run on the seeds of each earlier
    confirmation (`earlier_confirmations`), whose looks `earlier_looks` gives; with
    `confirm_grid`, at every factor they run at on the evaluation seeds (a comparison at every
    step confirmed as it was judged there)."""
    names = list(names or [a.name for a in config.algorithms])
    selection_tags, chosen = tune(config, out, specs, metrics, names, score)
    grid = {name: {f for _, (_, n, f) in selection_tags if n == name} for name in every_factor}
    also_at = also_at or {}
    run_at = {name: found | grid.get(name, set()) | set(also_at.get(name, ()))
              for name, found in chosen.items()}  # fmt: skip
    tuned_factors = {name: sorted(found - {1.0}) for name, found in run_at.items()}
    evaluation_tags = tagged(config, specs, tuned_factors, "evaluation")
    base = [(spec, ("evaluation", spec.algorithm.name, 1.0)) for spec in specs(config)]
    tags = base + evaluation_tags + selection_tags
    if confirm and config.confirmation_seeds:
        at = run_at if confirm_grid else chosen
        factors = {name: sorted(at[name]) for name in confirm if name in at}
        tags += tagged(config, specs, factors, "confirmation", config.confirmation_range)
        for look in config.earlier_ranges:
            tags += tagged(config, specs, factors, seeds_label(look), look)
    report = sweep(config, out, [s for s, _ in tags])
    runs = grouped(report, tags)
    groups = {name: by[1.0] for name, by in runs["evaluation"].items()}
    evaluation = {name: by for name, by in runs["evaluation"].items() if name in names}
    tuned = Tuned(runs["selection"], evaluation,
                  {a.name: step_of(a) for a in config.algorithms if a.name in names},
                  score, runs.get("confirmation"),
                  {seeds_label(r): runs[seeds_label(r)] for r in config.earlier_ranges
                   if confirm and config.confirmation_seeds})  # fmt: skip
    return report, groups, tuned


def confirmed(tuned: Tuned) -> Tuned:
    """`tuned` judged on its confirmation runs (`tuned_sweep`'s `confirm`) in place of the
    evaluation runs; `tuned` itself where none ran."""
    if not tuned.confirmation:
        return tuned
    return Tuned(tuned.selection, tuned.confirmation, tuned.steps, tuned.score)


def earlier_looks(tuned: Tuned) -> dict[str, Tuned]:
    """Each look before the confirmation, as a Tuned judged on its runs: "the evaluation
    seeds" (where a confirmation ran) and each earlier confirmation by its seeds ("2001–2100");
    empty without a confirmation."""
    if not tuned.confirmation:
        return {}
    looks = {"the evaluation seeds": tuned.evaluation, **tuned.earlier}
    return {seeds: Tuned(tuned.selection, runs, tuned.steps, tuned.score)
            for seeds, runs in looks.items()}  # fmt: skip
