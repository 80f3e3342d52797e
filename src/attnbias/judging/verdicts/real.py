"""Claim rules of the real-data experiments (text-md, text-finetune, vision): paired comparisons
of arms — a p of ℓp mirror descent, an optimiser — whose runs share each seed's initial weights
and data order, so each seed gives one difference (docs/REAL_DATA.md#statistics).

An arm's per-seed values are in one seed order shared by every arm (NaN: a diverged run, left
out of the pairs). A comparison is inconclusive, never supported, when an arm it compares did
not meet the protocol: a run that missed its training target, a diverged run, or a learning
rate chosen at an edge of the rates tried (a better one may lie beyond).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..claims import (
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Rule,
    mean_effect,
    paired_difference,
    ratio_effect,
)

PAPER_SIGN = "the MD paper (IMDb table and §real data): the sign of the paired difference"


@dataclass(frozen=True)
class Arm:
    """One arm of a paired design. values: quantity → per-seed values; reached: per seed,
    whether the run met its training target (None: the protocol sets none); interior: whether
    its chosen learning rate lies strictly inside the rates tried."""

    name: str
    values: Mapping[str, np.ndarray] = field(default_factory=dict)
    reached: np.ndarray | None = None
    interior: bool = True

    def of(self, quantity: str) -> np.ndarray:
        return np.asarray(self.values[quantity], dtype=np.float64)


def protocol_unmet(arm: Arm, quantity: str) -> list[str]:
    """The protocol's preconditions that `arm` missed, each a short reason."""
    unmet = []
    if arm.reached is not None:
        reached = np.asarray(arm.reached, dtype=bool)
        done = int(reached.sum())
        if done < reached.size:
            unmet.append(f"{arm.name}: {done}/{reached.size} runs reached the training target")
    lost = int(np.sum(~np.isfinite(arm.of(quantity))))
    if lost > 0:
        unmet.append(f"{arm.name}: {lost} run(s) diverged")
    if not arm.interior:
        unmet.append(f"{arm.name}: its chosen learning rate is at an edge of the rates tried")
    return unmet


def arm_means(arms: Sequence[Arm], quantity: str) -> dict:
    """Evidence: each arm's mean of `quantity` with its 95 % CI."""
    return {arm.name: mean_effect(arm.of(quantity)).text for arm in arms}


def paired_arms(
    arms: Mapping[str, Arm], a: str, b: str, quantity: str, rule: Rule, text: str = "",
    unmet: Sequence[str] = (),
):  # fmt: skip
    """`quantity` of arm a minus that of arm b, paired by seed, judged by `rule` (a threshold of
    0): the mean difference with its 95 % paired t interval; inconclusive where either arm
    missed the protocol or a precondition in `unmet` failed."""
    first, second = arms[a], arms[b]
    return Claim(
        text,
        rule=rule,
        effect=paired_difference(first.of(quantity), second.of(quantity)),
        unmet=protocol_unmet(first, quantity) + protocol_unmet(second, quantity) + list(unmet),
        evidence={quantity: arm_means([first, second], quantity)},
    )


def difference(label: str, a: str, b: str) -> str:
    return f"{label}: {a} − {b}, paired by seed"


def more_accurate(
    arms: Mapping[str, Arm], better: str, worse: str, mcnemar: dict | None = None
) -> Claim:
    """Test accuracy (%) at each run's validation-chosen checkpoint: better − worse > 0, paired
    by seed. mcnemar: the exact McNemar test on the pooled test predictions
    (mcnemar.mcnemar_test), a second view kept in the evidence."""
    label = difference("test accuracy (%, validation-chosen checkpoint)", better, worse)
    claim = paired_arms(
        arms, better, worse, "test_accuracy", Rule(label, ">", 0.0, PAPER_SIGN),
        f"{better} reaches a higher test accuracy than {worse} (checkpoint chosen on "
        "validation; paired by seed)",
    )  # fmt: skip
    claim.evidence["mcnemar_pooled_test_predictions"] = mcnemar
    return claim


def md_beats_gd(arms: Mapping[str, Arm], reference: str, mcnemar: Mapping | None = None) -> Claim:
    """Every other arm is more accurate than `reference` (paired by seed)."""
    mcnemar = mcnemar or {}
    parts = [more_accurate(arms, name, reference, mcnemar.get(name))
             for name in arms if name != reference]  # fmt: skip
    for part in parts:
        part.claim = ""
    return Claim(
        f"Mirror descent generalises better than {reference}: every other ℓp-MD reaches a "
        f"higher test accuracy than {reference} (validation-chosen checkpoints; paired by seed)",
        parts=parts,
    )


def keyword_sharper(arms: Mapping[str, Arm], better: str, worse: str) -> Claim:
    """The paper's key-word attention (min–max normalised last-layer [CLS] attention on the
    probe's key word): better − worse > 0, paired by seed; chance and raw values in the
    evidence."""
    label = difference("normalised [CLS] attention on the key word", better, worse)
    claim = paired_arms(
        arms, better, worse, "keyword_normalised", Rule(label, ">", 0.0, PAPER_SIGN),
        f"{better} puts more normalised last-layer [CLS] attention on the key word than {worse} "
        "(paired by seed)",
    )  # fmt: skip
    pair = [arms[better], arms[worse]]
    claim.evidence.update(
        chance_normalised=arm_means(pair, "keyword_chance_normalised"),
        raw=arm_means(pair, "keyword_raw"),
        chance_raw=arm_means(pair, "keyword_chance_raw"),
        raw_difference=paired_difference(pair[0].of("keyword_raw"),
                                         pair[1].of("keyword_raw")).text,
    )  # fmt: skip
    return claim


@dataclass(frozen=True)
class SparsityMeasure:
    """A sparsity measure of a weight matrix M, stored per run as "KEY_M": `label` names it in a
    rule; `sparser` is the comparison a sparser matrix's value makes with a denser one's ("<":
    fewer large entries, ">": more concentrated); `source` says why that reads as sparsity."""

    key: str
    label: str
    sparser: str
    source: str


def sparsity_part(
    arms: Mapping[str, Arm], better: str, worse: str, densest: str, measure: SparsityMeasure,
    matrix: str,
) -> Claim:  # fmt: skip
    """One matrix's comparison `better` sparser than `worse` by `measure`, paired by seed, with
    its negative control: by the same measure `densest` (ℓ3-MD, which the theory makes the
    densest) must come out denser than `worse`, its paired interval wholly on that side at 95 %.
    A measure that fails the control (or does not pass it) measures something other than
    sparsity here, so the part is inconclusive, never supported, and says so."""
    key, quantity = f"{measure.key}_{matrix}", f"{matrix} {measure.label}"
    control_rule = f"negative control: {worse} − {densest} {measure.sparser} 0"
    source = f"{measure.source}; {control_rule} per matrix at 95 %, else the part is inconclusive"
    control = paired_arms(
        arms,
        worse,
        densest,
        key,
        Rule(difference(quantity, worse, densest), measure.sparser, 0.0, source),
    )
    unmet = []
    if control.status == NOT_SUPPORTED:
        unmet.append(
            f"negative control fails: by this measure {densest} is sparser than {worse}, so it "
            f"does not measure sparsity here; a measure that orders {densest} denser than "
            f"{worse} would decide it"
        )
    elif control.status != SUPPORTED:
        unmet.append(
            f"negative control not met: {densest} is not shown denser than {worse} by this "
            "measure; more seeds would decide it"
        )
    rule = Rule(difference(quantity, better, worse), measure.sparser, 0.0, source)
    part = paired_arms(arms, better, worse, key, rule, unmet=unmet)
    control_word = {SUPPORTED: "passes", NOT_SUPPORTED: "fails"}.get(control.status, "not met")
    part.evidence["effect_note"] = f"{control_rule}: {control.effect.text} → {control_word}"
    return part


def sparser(
    arms: Mapping[str, Arm], better: str, worse: str, densest: str, measure: SparsityMeasure,
    text: str, matrices: str = "KQV",
) -> Claim:  # fmt: skip
    """Per matrix: `better` is sparser than `worse` by `measure` (sparsity_part, each with its
    negative control against `densest`), the matrices one family (Holm)."""
    return Claim(text, parts=[sparsity_part(arms, better, worse, densest, measure, m)
                              for m in matrices])  # fmt: skip


def lower_loss(
    arms: Mapping[str, Arm], faster: Sequence[str], than: str, source: str, text: str = ""
) -> Claim:
    """Each of `faster` ends with a lower train loss than `than`: per seed, than's final train
    loss over the other's, geometric mean > 1. A claim about several needs every one."""
    parts = []
    for name in faster:
        a, b = arms[than], arms[name]
        parts.append(Claim(
            "",
            rule=Rule(f"final train loss: {than} over {name}, paired by seed", ">", 1.0, source,
                      1.0),
            effect=ratio_effect(a.of("final_train_loss"), b.of("final_train_loss")),
            unmet=protocol_unmet(a, "final_train_loss") + protocol_unmet(b, "final_train_loss"),
        ))  # fmt: skip
    return Claim(
        text
        or f"{' and '.join(faster)} reach a lower train loss than {than} in the same steps "
        "(each of them; paired by seed)",
        parts=parts,
        evidence={"final_train_loss": arm_means([arms[n] for n in (*faster, than)],
                                                "final_train_loss")},
    )  # fmt: skip


def about_equal(
    arms: Mapping[str, Arm],
    names: Sequence[str],
    reference: str,
    tolerance: float,
    source: str,
    text: str = "",
) -> Claim:
    """Each of `names` ends with a train loss within a factor `tolerance` of `reference`'s,
    either way: the mean per-seed log ratio lies in (−log tolerance, log tolerance) — an
    equivalence, so its whole CI must lie inside. A claim about several needs every one."""
    text = text or (f"{' and '.join(names)} end with a train loss within a factor "
                    f"{tolerance:g} of {reference}'s, either way (each of them; paired by "
                    "seed)")  # fmt: skip
    return loss_within(arms, names, reference, tolerance, source, ("<", ">"), text)


def no_gain_over(
    arms: Mapping[str, Arm],
    names: Sequence[str],
    reference: str,
    tolerance: float,
    source: str,
    text: str = "",
) -> Claim:
    """Each of `names` gains no more than a factor `tolerance` over `reference`: its final
    train loss is not below `reference`'s over `tolerance`, the mean per-seed log ratio
    > −log tolerance (one-sided: ending above `reference` is no gain either)."""
    text = text or (f"{' and '.join(names)} end with a train loss no lower than {reference}'s "
                    f"over {tolerance:g} (each of them; paired by seed)")  # fmt: skip
    return loss_within(arms, names, reference, tolerance, source, (">",), text)


def loss_within(
    arms: Mapping[str, Arm],
    names: Sequence[str],
    reference: str,
    tolerance: float,
    source: str,
    sides: Sequence[str],
    text: str,
) -> Claim:
    """Per name, the mean per-seed log(final train loss over `reference`'s) below log
    `tolerance` (side "<") and above −log `tolerance` (side ">"), each side its own part."""
    if not tolerance > 1:
        raise ValueError(f"tolerance must be > 1 (a factor), got {tolerance!r}")
    bound = math.log(tolerance)
    parts = []
    for name in names:
        a, b = arms[name], arms[reference]
        log_ratio = paired_difference(np.log(a.of("final_train_loss")),
                                      np.log(b.of("final_train_loss")))  # fmt: skip
        unmet = protocol_unmet(a, "final_train_loss") + protocol_unmet(b, "final_train_loss")
        quantity = f"log(final train loss of {name} over {reference}), paired by seed"
        parts += [Claim("", rule=Rule(quantity, side, bound if side == "<" else -bound, source),
                        effect=log_ratio, unmet=unmet) for side in sides]  # fmt: skip
    return Claim(
        text,
        parts=parts,
        evidence={"final_train_loss": arm_means([arms[n] for n in (*names, reference)],
                                                "final_train_loss"),
                  "tolerance_factor": tolerance},
    )  # fmt: skip


# "About as fast" (text-finetune: SNGD and SPS vs Adam; vision: Adam vs SGD): final train losses
# within this factor of each other, either way (ours: the papers read it off curves).
ABOUT_EQUAL = 1.25
# A layer "grows" when its norm ends at least 1 % above where it started: the growth the claim is
# about scales every attention logit, and 1 % is the smallest such change the norm figures show;
# far smaller changes (1e-5, well above float32 round-off) are real but not that growth.
MIN_LOG_GROWTH = math.log(1.01)
SOURCE_MIN_GROWTH = (
    "the NGD paper (App. C; Merrill et al. 2020): the norms grow; ours: by ≥ 1 % of the initial "
    "norm (log 1.01), a growth that scales the attention logits by 1 %, the smallest the norm "
    "figures show; a smaller growth above float32 round-off (~1e-7) is real but not the growth "
    "claimed"
)


def norm_grows(
    arms: Mapping[str, Arm],
    layers: Sequence[str],
    text: str,
    above: float = MIN_LOG_GROWTH,
    source: str = SOURCE_MIN_GROWTH,
) -> Claim:
    """Every layer's parameter norm grows, for every arm, by a stated size: per layer, the mean
    over seeds of log(‖θ_T‖/‖θ_0‖) ("log_growth/LAYER") > `above` (log 1.01, ours), with its
    95 % CI. A statement about each run, not a comparison at a best
    rate: a rate at an edge of its grid is no reason to doubt it."""
    parts = [
        Claim("", rule=Rule(f"log(‖θ_T‖/‖θ_0‖) of {layer}, {arm.name}, mean over seeds", ">",
                            above, source),
              effect=mean_effect(arm.of(f"log_growth/{layer}")),
              unmet=protocol_unmet(replace(arm, interior=True), f"log_growth/{layer}"))
        for arm in arms.values()
        for layer in layers
    ]  # fmt: skip
    return Claim(text, parts=parts)
