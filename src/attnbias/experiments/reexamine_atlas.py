"""Re-examinations of the atlas's two negative results (issue 16, point 6): was torch's Muon
(reexamine-muon) or constant-rate Adam (reexamine-adam) failing to behave like its steepest
method because of an artefact of our setup, or because of the method itself? Each candidate
explanation is a claim of its own (`explains` / `explained_if` in the config).

The runs are the atlas's (`atlas.specs`: gaussian_unit data, seeds 1..N, W₀ ~ N(0,
init_scale²), every norm measured), so an algorithm listed as in atlas.toml is the very run the
atlas made (same key: `--from` an atlas results directory reuses it). Beside them, the
algorithms that remove the suspected artefact. Claims (verdicts: judging/verdicts/):

    own-norm-gap                   the yardstick: each owner reaches its own norm's limit
    NAME-like-OWNER                atlas's behaves_like, for every entry of `like`
    NAME-stalls                    NAME stalls where stalls[NAME] keeps moving (same seeds)
    NAME-closer-than-OTHER         NAME ends closer to its owner's max-margin than OTHER
    NAME-closer-than-each          ... than each of several (a sweep: Holm across them)
    KEY-explains                   every claim of explained_if[KEY] holds: the explanation
                                   explains[KEY] of the atlas's verdict is right
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from ..config import Positive, Text, real
from ..curves import curves
from ..figures import save_figure
from ..judging.claims import (
    NOT_APPLICABLE,
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    as_consistency_check,
    identified,
    not_applicable,
    with_arm_labels,
)
from ..judging.verdicts import atlas as atlas_rules
from ..judging.verdicts import reexamine as rules
from ..judging.verdicts.common import over_runs
from ..judging.verdicts.ngd import norm_slopes
from ..judging.verdicts.tuning import chosen_steps, unless_at_edge
from . import atlas, plotting
from .runs import sweep, sweep_summary
from .tuning_sweep import step_of


class Config(atlas.GapConfig):
    own_norm: dict[str, Text] = Field(
        description="owner (an algorithm that is steepest descent in a norm) → that norm's "
        "label: the yardsticks"
    )
    like: dict[str, Text] = Field(description="algorithm → the owner it should behave like")
    stalls: dict[str, Text] = Field(
        description="algorithm → an algorithm of the same kind that should keep moving where "
        "it stalls (the stall-artefact check)"
    )
    closer: dict[str, tuple[Text, ...]] = Field(
        description="algorithm → those it should end closer than to the max-margin direction "
        "of its `like` owner's norm (paired by seed; several: each of them, e.g. every rate "
        "and variant of a sweep, one claim)"
    )
    closer_at_equal_norm: tuple[Text, ...] = Field(
        (),
        description="algorithms of `closer` compared where the other arm's ‖W_t‖_F reaches "
        "theirs at the end, not at equal steps: for step schedules that travel very different "
        "distances in the same steps (the final gaps are then evidence)",
    )
    threshold: Positive = Field(description="a gap counts as near 0 below this final median")
    rate_start: real(gt=0, lt=1) = Field(
        description="norm growth (the stall test) is fitted over steps ≥ rate_start · last step"
    )
    checks: tuple[Text, ...] = Field(
        (),
        description="ids (after 'NAME/') of claims that check our own code, not the theory (an "
        "arm that is its owner's method computed another way): listed apart as consistency "
        "checks, and a precondition, not evidence, of an explanation that lists them",
    )
    explains: dict[str, Text] = Field(
        description="key → a candidate explanation of the atlas's verdict (an artefact of our "
        "setup, or a property of the method), in words; claim 'KEY-explains' judges it"
    )
    explained_if: dict[str, tuple[Text, ...]] = Field(
        description="key → ids (after 'NAME/') of this experiment's claims that must all be "
        "supported for explains[KEY] to hold"
    )

    def stall_decides_nothing(self) -> dict[str, str]:
        """Algorithm → why its stall is no outcome of a row on it, and what would decide the
        row (`behaves_like`, `closer_than`); none here, reexamine-adam's config names them."""
        return {}

    def run_steps(self, name: str) -> int:
        """The steps algorithm `name` runs (reexamine-muon's config runs some longer)."""
        return self.steps

    def steps_note(self, name: str) -> str:
        """ ", 30,000 steps" where algorithm `name` runs other than `steps` steps, else ""."""
        steps = self.run_steps(name)
        return f", {steps:,} steps" if steps != self.steps else ""

    def judged_at_config_step(self) -> tuple[str, ...]:
        """Ids of claims (of `planned`) judged again with every arm at its config step, as
        'ID-at-config-step'; none here, reexamine-muon's config names them."""
        return ()

    @model_validator(mode="after")
    def _names_and_norms_agree(self):
        """Every name is an algorithm; owners' norms are measured; like / closer name owners."""
        names, labels = [a.name for a in self.algorithms], [n.label for n in self.norms]
        for field in ("own_norm", "like", "stalls", "closer"):
            table = getattr(self, field)
            for name, value in table.items():
                if name not in names:
                    raise ValueError(f"{field}.{name} is not one of the algorithms {names}")
                compared = {"closer": value, "stalls": (value,)}.get(field, ())
                for other in compared:
                    if other not in names:
                        raise ValueError(f"{field}.{name} = {other!r} is not one of {names}")
                if field == "closer" and not value:
                    raise ValueError(f"closer.{name} is empty: name the algorithms to compare")
        for name, label in self.own_norm.items():
            if label not in labels:
                raise ValueError(f"own_norm.{name} = {label!r} is not one of norms {labels}")
        for name, owner in self.like.items():
            if owner not in self.own_norm:
                raise ValueError(f"like.{name} = {owner!r} has no own_norm to compare with")
        for name in self.closer:
            if name not in self.like:
                raise ValueError(f"closer.{name}: {name} has no `like` entry naming its norm")
        for k, name in enumerate(self.closer_at_equal_norm):
            if name not in self.closer:
                raise ValueError(f"closer_at_equal_norm[{k}] = {name!r} is not one of `closer`")
        ids = [slug for slug, *_ in planned(self)]
        for k, slug in enumerate(self.judged_at_config_step()):
            if slug not in ids:
                raise ValueError(f"at_config_step[{k}] = {slug!r} is not one of the claims {ids}")
        ids += [f"{slug}{AT_CONFIG_STEP}" for slug in self.judged_at_config_step()]
        for k, slug in enumerate(self.checks):
            if slug not in ids:
                raise ValueError(f"checks[{k}] = {slug!r} is not one of the claims {ids}")
        if set(self.explains) != set(self.explained_if):
            raise ValueError(
                f"explains {sorted(self.explains)} and explained_if {sorted(self.explained_if)} "
                "must have the same keys"
            )
        for key, slugs in self.explained_if.items():
            if not slugs:
                raise ValueError(f"explained_if.{key} is empty: name the claims it needs")
            for k, slug in enumerate(slugs):
                if slug not in ids:
                    raise ValueError(
                        f"explained_if.{key}[{k}] = {slug!r} is not one of the claims {ids}"
                    )
        return self


# the id suffix of a claim judged with every arm at its config step (`judged_at_config_step`)
AT_CONFIG_STEP = "-at-config-step"


def run(config: Config, out: Path) -> dict:
    report = sweep(config, out, atlas.specs(config))
    return published(config, out, report, curves(report.records))


def published(
    config: Config, out: Path, report, groups, tuned=None, metric="", at_config=None
) -> dict:
    """The summary and figure of the runs `groups` (algorithm → Curves): the claims, the
    table of final gaps, and with `tuned` (each algorithm's runs at its step chosen for
    `metric`, `tuning_sweep.tuned_sweep`) the chosen steps; `at_config`: every algorithm's runs
    at its config step, for the claims judged there."""
    labels = [n.label for n in config.norms]
    steps = step_labels(config, tuned, metric) if tuned else {}
    summary = {
        "claims": claims(groups, config, tuned, metric, at_config),
        "tables": {
            "median final margin gap by norm, and the log–log slope of ‖W_t‖_F (stalled: "
            "≈ 0)": table(groups, labels, config.rate_start, steps)
        },
        **({"tuned_steps": chosen_steps(tuned, [metric])} if tuned else {}),
        **sweep_summary(report),
    }
    return plotting.with_figures(summary, lambda: figure(groups, labels, config, out))


def closer_slug(name: str, others: tuple[str, ...]) -> str:
    """NAME-closer-than-OTHER, or NAME-closer-than-each for several."""
    return f"{name}-closer-than-{others[0] if len(others) == 1 else 'each'}".lower()


def planned(config: Config) -> list[tuple]:
    """(id, text, the algorithms it needs, rule, its arguments after `groups`, the verdict a
    better step for each algorithm could overturn: `tuning.unless_at_edge`) of every claim
    after own-norm-gap, in order. A better step lowers an algorithm's own gap: it could
    overturn a refutation of "NAME behaves like" or "NAME ends closer", a support of "ends
    closer than OTHER"; a stall may come or go with the step either way."""
    own, labels = config.own_norm, [n.label for n in config.norms]
    start, threshold = config.rate_start, config.threshold
    algorithms = {a.name: a for a in config.algorithms}
    undecided = config.stall_decides_nothing()
    return [
        (f"{n}-like-{o}".lower(), f"{n} behaves like {o}", (n, o), atlas_rules.behaves_like,
         (n, o, own.get(o), labels, threshold, start, algorithms[n], n in config.as_run,
          undecided.get(n, "")),
         {n: NOT_SUPPORTED})
        for n, o in config.like.items()
    ] + [
        (f"{n}-stalls".lower(), f"{n} stalls where {m} keeps moving", (n, m), rules.stalls_where,
         (n, m, start), {n: "", m: ""})
        for n, m in config.stalls.items()
    ] + [
        (closer_slug(n, o), f"{n} ends closer than {', '.join(o)}", (n, *o, config.like[n]),
         rules.closer_than if len(o) == 1 else rules.closer_than_each,
         (n, o[0] if len(o) == 1 else list(o), own.get(config.like[n]), start, undecided,
          n in config.closer_at_equal_norm),
         {n: NOT_SUPPORTED, **dict.fromkeys(o, SUPPORTED)})
        for n, o in config.closer.items()
    ]  # fmt: skip


def config_step_label(config: Config, algorithm) -> str:
    """An algorithm's config step as a value, with its steps where it runs longer (its step
    was chosen at the shorter runs and fixed): "config η = 0.2", "η = 0.0125 (chosen at 3,000
    steps, fixed), 30,000 steps"."""
    step, value = step_of(algorithm)
    longer = config.steps_note(algorithm.name)
    if longer:
        return f"{step} = {value:.3g} (chosen at {config.steps:,} steps, fixed){longer}"
    return f"config {step} = {value:.3g}"


def step_labels(config: Config, tuned=None, metric: str = "") -> dict[str, str]:
    """Algorithm → the step its runs are judged at: chosen for `metric` where `tuned` tuned it
    ("tuned η = 0.05"), else its config step (`config_step_label`)."""
    return {
        a.name: f"tuned {tuned.step_label(a.name, metric)}"
        if tuned is not None and a.name in tuned.steps
        else config_step_label(config, a)
        for a in config.algorithms
    }


def arms_at(labels: dict[str, str], names) -> str:
    return ", ".join(f"{name} at {labels[name]}" for name in names)


def claims(groups, config, tuned=None, metric: str = "", at_config=None) -> list[Claim]:
    """The claims listed in the module text; one about an algorithm this torch cannot run
    (Muon before torch 2.9) is not applicable. With `tuned`: `groups` are each algorithm's
    runs at its step chosen for `metric` (an algorithm `tuned` did not tune: at its config
    step), each part names the step its arms ran at, and a claim whose verdict a better step
    could overturn, where the grid does not bracket the best one, is inconclusive with that
    reason. `at_config` (default `groups`): every algorithm's runs at its config step, where the
    claims of `judged_at_config_step` are judged again."""
    labels = step_labels(config, tuned, metric)

    def at_tuned_steps(claim: Claim, overturns: dict[str, str]) -> Claim:
        if tuned is None or claim.status == NOT_APPLICABLE:
            return claim
        claim.claim += f" ({arms_at(labels, overturns)})"
        tuned_only = {name: v for name, v in overturns.items() if name in tuned.steps}
        return with_arm_labels(unless_at_edge(claim, tuned, metric, tuned_only), labels)

    own = {name: label for name, label in config.own_norm.items() if name in groups}
    out = {
        "own-norm-gap": at_tuned_steps(
            atlas_rules.own_norm_gap(groups, own, config.threshold, config.rate_start),
            dict.fromkeys(own, NOT_SUPPORTED),
        )
    }
    for slug, text, names, rule, args, overturns in planned(config):
        missing = [n for n in names if n not in groups]
        out[slug] = (not_applicable(text, f"{missing} not run") if missing
                     else at_tuned_steps(rule(groups, *args), overturns))  # fmt: skip
    at_config = groups if at_config is None else at_config
    config_labels = step_labels(config)
    for slug, text, names, rule, args, _ in planned(config):
        if slug not in config.judged_at_config_step():
            continue
        missing = [n for n in names if n not in at_config]
        if missing:
            out[f"{slug}{AT_CONFIG_STEP}"] = not_applicable(text, f"{missing} not run")
            continue
        judged = rule(at_config, *args)
        judged.claim += f" ({arms_at(config_labels, names)})"
        out[f"{slug}{AT_CONFIG_STEP}"] = with_arm_labels(judged, config_labels)
    for slug in config.checks:
        out[slug] = as_consistency_check(out[slug])
    for key, text in config.explains.items():
        evidence = [out[slug] for slug in config.explained_if[key]]
        out[f"{key}-explains"] = rules.explains(text, evidence)
    return identified(config.experiment, list(out.values()), list(out))


def table(groups, labels: list[str], start: float, steps: dict | None = None) -> list[dict]:
    """One row per algorithm: its median final gap in every norm and its median norm slope;
    with `steps` (algorithm → its tuned step), that step."""
    return [
        {
            "algorithm": name,
            **({"tuned step": steps[name]} if steps else {}),
            **{
                f"gap in {lab}": float(over_runs(np.median, c.final(f"gap/{lab}")))
                for lab in labels
            },
            "‖W_t‖ slope": float(over_runs(np.median, norm_slopes(c, start))),
        }
        for name, c in groups.items()
    ]


def figure(groups, labels: list[str], config: Config, out: Path) -> list[str]:
    """‖W_t‖_F and the margin gap in each norm, every algorithm in every panel (log–log)."""
    fig, axes = plotting.subplots(1, 1 + len(labels))
    for ax, metric in zip(axes[0], ["norm/2", *(f"gap/{lab}" for lab in labels)]):
        for name, c in groups.items():
            plotting.band(ax, c, metric, label=name, log=(True, True))
        title = "‖W_t‖_F" if metric == "norm/2" else f"margin gap in {metric[4:]}"
        plotting.panel(ax, title)
    plotting.legend(fig, axes[0, 0])
    fig.suptitle(
        f"{config.experiment}: ‖W_t‖ and margin gaps 1 − γ_N(W_t)/γ*_N "
        f"({plotting.band_note(plotting.runs_per_curve(groups))})",
        fontsize=10,
    )
    return save_figure(fig, out, config.experiment)
