"""Constructed inputs for the real-data claim rules (attnbias.judging.verdicts.real): for each
rule, arms whose paired per-seed values reach each of its verdicts, and the protocol's
preconditions (a run short of the target, a diverged run, a rate at an edge of its grid) that
make a comparison inconclusive. Merged into claim_cases.cases()."""

from __future__ import annotations

import numpy as np

from attnbias.judging.claims import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from attnbias.judging.verdicts.real import Arm, SparsityMeasure

SEEDS = 6
LO, MID, HI = "ℓ1.1-MD", "ℓ2-MD", "ℓ3-MD"


# a line of 0 (no margin): a growth below 1 % is growth against it
ZERO_LINE = {"above": 0.0, "source": "a line of 0"}


def jitter(scale: float, seed: int) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal(SEEDS)


def straddle(scale: float) -> np.ndarray:
    """Per-seed differences of mean 0, spread both ways."""
    return scale * np.tile([1.0, -1.0], SEEDS // 2)


def md_arm(name, shift=0.0, keyword=0.0, counts=0.0, small=0.0, seed=0, reached=True,
           interior=True, diverged=False, hoyer=0.0, small_at=None):  # fmt: skip
    """A text-md arm: ℓ2's per-seed values plus the given shifts (each seed's value moves by
    the shift plus a little noise; a shift may be an array, one per seed). Sparser: fewer
    counts, more small entries, a larger Hoyer sparsity. The near-zero share at ½× and 2× the
    cut shifts by `small` too, or by `small_at` (factor → shift) where given."""
    small_at = {0.5: small, 2.0: small} | (small_at or {})
    base = 60.0 + jitter(1.0, 99)  # the seed's accuracy under ℓ2: shared, so it cancels
    values = {
        "test_accuracy": base + shift + jitter(0.05, seed),
        "final_train_accuracy": np.full(SEEDS, 71.0),
        "keyword_normalised": 0.3 + keyword + jitter(0.002, seed + 1),
        "keyword_raw": 0.1 + keyword / 3 + jitter(0.001, seed + 2),
        "keyword_chance_normalised": np.full(SEEDS, 0.22),
        "keyword_chance_raw": np.full(SEEDS, 0.06),
        **{f"above_init_{m}": 5000 + counts + jitter(10.0, seed + 3 + k)
           for k, m in enumerate("KQV")},
        **{f"above_abs_{m}": 9000 + counts + jitter(10.0, seed + 6 + k)
           for k, m in enumerate("KQV")},
        **{f"small_{m}": 0.01 + small + jitter(1e-4, seed + 9 + k) for k, m in enumerate("KQV")},
        **{f"small_{f:g}x_{m}": 0.01 * f + shift_at + jitter(1e-4, seed + 15 + k)
           for f, shift_at in small_at.items() for k, m in enumerate("KQV")},
        **{f"hoyer_{m}": 0.2 + hoyer + jitter(1e-3, seed + 12 + k) for k, m in enumerate("KQV")},
    }  # fmt: skip
    if diverged:
        values = {k: np.where(np.arange(SEEDS) == 0, np.nan, v) for k, v in values.items()}
    done = np.ones(SEEDS, dtype=bool) if reached else np.arange(SEEDS) > 0
    return Arm(name, values, done, interior)


# ℓ3-MD denser than ℓ2-MD by every sparsity measure: the negative control passes
DENSER = {"counts": 500.0, "small": -0.005, "hoyer": -0.02}
SPARSER = {"counts": -500.0, "small": 0.005, "hoyer": 0.02}


def md_arms(lo=None, hi=None, mid=None) -> dict[str, Arm]:
    return {MID: mid or md_arm(MID, seed=20), LO: lo or md_arm(LO, 2.0, 0.1, **SPARSER),
            HI: hi or md_arm(HI, 1.0, seed=40, **DENSER)}  # fmt: skip


def loss_arm(name, loss, growth=0.01, seed=0, interior=True):
    """A text-finetune / vision arm: per-seed final train loss around `loss` (a number or one
    per seed) and the log norm growth of two layers around `growth`."""
    values = {
        "final_train_loss": np.asarray(loss, dtype=float) * np.exp(jitter(0.02, seed)),
        "log_growth/layer0": growth + jitter(abs(growth) / 10 + 1e-9, seed + 1),
        "log_growth/layer1": np.full(SEEDS, 0.02) + jitter(1e-3, seed + 2),
    }
    return Arm(name, values, None, interior)


def optimiser_arms(sgd=1.0, sngd=0.5, sps=0.55, adam=0.52, growth=0.01, sps_interior=True):
    return {
        "SGD": loss_arm("SGD", sgd, growth, seed=1),
        "SNGD": loss_arm("SNGD", sngd, growth, seed=2),
        "SPS": loss_arm("SPS", sps, growth, seed=3, interior=sps_interior),
        "Adam": loss_arm("Adam", adam, growth, seed=4),
    }


SOURCE = "test"


def sparsity_cases(key: str, measure: SparsityMeasure, last: str = "sparser") -> list:
    """real.sparser's verdicts for one measure (its arms shifted by `key`): supported only where
    the negative control (ℓ3 denser than ℓ2) passes too; last: the final argument, the claim's
    text (real.sparser) or a matrix (real.sparsity_part)."""
    step = SPARSER[key]

    def arms(lo=step, hi=-step, **lo_also):
        return md_arms(lo=md_arm(LO, 2.0, 0.1, **{key: lo}, **lo_also),
                       hi=md_arm(HI, 1.0, seed=40, **{key: hi}))  # fmt: skip

    def case(status, made):
        return (status, (made, LO, MID, HI, measure, last), {})

    return [
        case(SUPPORTED, arms()),
        case(NOT_SUPPORTED, arms(lo=-step)),
        case(INCONCLUSIVE, arms(lo=straddle(abs(step)))),
        # ℓ1.1 sparser, but ℓ3 too: the measure fails its negative control
        case(INCONCLUSIVE, arms(hi=step)),
        # ℓ1.1 sparser, ℓ3 not shown denser: the control is not met
        case(INCONCLUSIVE, arms(hi=straddle(abs(step)))),
        case(INCONCLUSIVE, arms(reached=False)),
    ]


def real_cases() -> dict[str, list]:
    return {
        "real.more_accurate": [
            (SUPPORTED, (md_arms(), LO, MID), {}),
            (NOT_SUPPORTED, (md_arms(lo=md_arm(LO, -2.0)), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(lo=md_arm(LO, straddle(1.0))), LO, MID), {}),
            # the same lead, but a protocol precondition missed: never supported
            (INCONCLUSIVE, (md_arms(mid=md_arm(MID, seed=20, reached=False)), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(lo=md_arm(LO, 2.0, interior=False)), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(lo=md_arm(LO, 2.0, diverged=True)), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(lo=md_arm(LO, -2.0, reached=False)), LO, MID), {}),
        ],
        "real.md_beats_gd": [
            (SUPPORTED, (md_arms(), MID), {}),
            (NOT_SUPPORTED, (md_arms(hi=md_arm(HI, -1.0, seed=40)), MID), {}),
            (INCONCLUSIVE, (md_arms(hi=md_arm(HI, 1.0, seed=40, reached=False)), MID), {}),
        ],
        "real.keyword_sharper": [
            (SUPPORTED, (md_arms(), LO, MID), {}),
            (NOT_SUPPORTED, (md_arms(lo=md_arm(LO, keyword=-0.05)), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(lo=md_arm(LO, keyword=straddle(0.05))), LO, MID), {}),
            (INCONCLUSIVE, (md_arms(mid=md_arm(MID, seed=20, interior=False)), LO, MID), {}),
        ],
        "real.sparser": [
            case
            for key, label, sparser in (
                ("counts", "above_init", "<"),
                ("small", "small", ">"),
                ("hoyer", "hoyer", ">"),
            )
            for case in sparsity_cases(key, SparsityMeasure(label, label, sparser, SOURCE))
        ],
        "real.sparsity_part": [
            case
            for key, label, sparser in (("counts", "above_init", "<"), ("hoyer", "hoyer", ">"))
            for case in sparsity_cases(key, SparsityMeasure(label, label, sparser, SOURCE), "Q")
        ],
        "real.lower_loss": [
            (SUPPORTED, (optimiser_arms(), ("SNGD", "SPS"), "SGD", SOURCE), {}),
            # a claim about both needs both: SPS no faster than SGD
            (NOT_SUPPORTED, (optimiser_arms(sps=1.5), ("SNGD", "SPS"), "SGD", SOURCE), {}),
            (
                INCONCLUSIVE,
                (optimiser_arms(sps=np.exp(straddle(0.3))), ("SNGD", "SPS"), "SGD", SOURCE),
                {},
            ),
            (
                INCONCLUSIVE,
                (optimiser_arms(sps_interior=False), ("SNGD", "SPS"), "SGD", SOURCE),
                {},
            ),
        ],
        "real.about_equal": [
            (SUPPORTED, (optimiser_arms(), ("SNGD", "SPS"), "Adam", 1.25, SOURCE), {}),
            # symmetric: far below Adam's loss fails as much as far above it
            (NOT_SUPPORTED, (optimiser_arms(sps=1.0), ("SNGD", "SPS"), "Adam", 1.25, SOURCE), {}),
            (NOT_SUPPORTED, (optimiser_arms(sngd=0.2), ("SNGD", "SPS"), "Adam", 1.25, SOURCE), {}),
            (
                INCONCLUSIVE,
                (
                    optimiser_arms(sps=0.52 * 1.25 * np.exp(straddle(0.1))),
                    ("SNGD", "SPS"),
                    "Adam",
                    1.25,
                    SOURCE,
                ),
                {},
            ),
            (
                INCONCLUSIVE,
                (optimiser_arms(sps_interior=False), ("SPS",), "Adam", 1.25, SOURCE),
                {},
            ),
        ],
        "real.no_gain_over": [
            (SUPPORTED, (optimiser_arms(sgd=0.5), ("Adam",), "SGD", 1.25, SOURCE), {}),
            # one-sided: an Adam far slower than SGD gains nothing (about_equal refutes it)
            (SUPPORTED, (optimiser_arms(sgd=0.2), ("Adam",), "SGD", 1.25, SOURCE), {}),
            (NOT_SUPPORTED, (optimiser_arms(), ("Adam",), "SGD", 1.25, SOURCE), {}),
            (
                INCONCLUSIVE,
                (
                    optimiser_arms(sgd=0.52 * 1.25 * np.exp(straddle(0.1))),
                    ("Adam",),
                    "SGD",
                    1.25,
                    SOURCE,
                ),
                {},
            ),
            (
                INCONCLUSIVE,
                (optimiser_arms(sps=2.0, sps_interior=False), ("SPS",), "SGD", 1.25, SOURCE),
                {},
            ),
        ],
        "real.loss_within": [
            (SUPPORTED, (optimiser_arms(), ("SPS",), "Adam", 1.25, SOURCE, ("<",), "t"), {}),
            # the upper side alone: far below Adam's loss is within it
            (SUPPORTED, (optimiser_arms(sps=0.1), ("SPS",), "Adam", 1.25, SOURCE, ("<",), "t"), {}),
            (
                NOT_SUPPORTED,
                (optimiser_arms(sps=1.0), ("SPS",), "Adam", 1.25, SOURCE, ("<",), "t"),
                {},
            ),
            (
                INCONCLUSIVE,
                (
                    optimiser_arms(sps=0.52 * 1.25 * np.exp(straddle(0.1))),
                    ("SPS",),
                    "Adam",
                    1.25,
                    SOURCE,
                    ("<",),
                    "t",
                ),
                {},
            ),
        ],
        "real.norm_grows": [
            (SUPPORTED, (optimiser_arms(growth=0.05), ["layer0", "layer1"], "grows"), {}),
            # it grows, but by less than the stated 1 %: a sign test would have passed it
            (NOT_SUPPORTED, (optimiser_arms(growth=0.002), ["layer0", "layer1"], "grows"), {}),
            (NOT_SUPPORTED, (optimiser_arms(growth=-0.01), ["layer0", "layer1"], "grows"), {}),
            (
                INCONCLUSIVE,
                (optimiser_arms(growth=0.01 + straddle(0.01)), ["layer0", "layer1"], "grows"),
                {},
            ),
            # a line of 0: a growth below 1 % is growth
            (SUPPORTED, (optimiser_arms(growth=0.002), ["layer0", "layer1"], "grows"), ZERO_LINE),
            (
                NOT_SUPPORTED,
                (optimiser_arms(growth=-0.002), ["layer0", "layer1"], "grows"),
                ZERO_LINE,
            ),
            (
                INCONCLUSIVE,
                (optimiser_arms(growth=straddle(0.01)), ["layer0", "layer1"], "grows"),
                ZERO_LINE,
            ),
        ],
    }


def md_collected(holds: bool) -> dict[float, dict]:
    """text-md's per-p runs as text_md.collect gives them: ℓ1.1 and ℓ3 ahead of ℓ2 in every
    quantity the claims compare (holds), or behind in each (fails), ℓ3 denser than ℓ2 by every
    sparsity measure either way (the negative control); every run at the target, every rate
    inside its grid."""
    from attnbias.experiments.real_runs import RateSearch

    sign = 1.0 if holds else -1.0
    arms = {
        1.1: md_arm(LO, 2.0 * sign, 0.1 * sign, **{k: v * sign for k, v in SPARSER.items()}),
        2.0: md_arm(MID, seed=20),
        3.0: md_arm(HI, 1.0 * sign, seed=40, **DENSER),  # the negative control passes
    }
    rng = np.random.default_rng(7)
    return {
        p: {
            "values": dict(arm.values),
            "reached": arm.reached,
            "correct": [rng.random(200) < 0.6 for _ in range(SEEDS)],
            "search": RateSearch({0.1: (1.0, 0.5), 0.2: (1.0, 0.6), 0.4: (1.0, 0.55)}),
        }
        for p, arm in arms.items()
    }


def loss_rows(dataset: str, growth: float, **loss) -> list[dict]:
    """compare_optimizers's rows: per optimiser, per-seed final train losses around the given
    one and per-layer norm growth ‖θ_T‖/‖θ_0‖ around exp(growth); each rate chosen by a search
    on seed 0, whose runs diverged here: a claim that compared the selection seed's runs
    (compare.evaluated) would be inconclusive."""
    rows = []
    for k, (name, value) in enumerate(loss.items()):
        losses = value * np.exp(jitter(0.02, k))
        losses[0] = np.nan
        layers = {f"layer{j}": np.exp(growth + jitter(abs(growth) / 10, 10 * k + j))
                  for j in range(2)}  # fmt: skip
        by_seed = [{layer: float(v[s]) for layer, v in layers.items()} for s in range(SEEDS)]
        rows.append({
            "dataset": dataset,
            "optimizer": name,
            "final_train_loss": [float(np.mean(losses)), float(np.std(losses))],
            "final_train_loss_by_seed": list(losses),
            "norm_growth": by_seed[0],
            "norm_growth_by_seed": by_seed,
            "seeds": list(range(SEEDS)),
            "rate_search": {"tried": [0.5, 1.0, 2.0], "chosen": 1.0, "interior": True, "seed": 0},
        })  # fmt: skip
    return rows
