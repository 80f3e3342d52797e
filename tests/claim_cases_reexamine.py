"""Constructed inputs for the re-examination rules (attnbias.judging.verdicts.reexamine): for
each rule, the cases that reach each of its verdicts. Merged into claim_cases.cases()."""

from __future__ import annotations

import numpy as np

from attnbias.curves import Curves
from attnbias.judging.claims import (
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_SUPPORTED,
    SUPPORTED,
    Claim,
    Effect,
    Rule,
    as_consistency_check,
    not_applicable,
)
from attnbias.judging.verdicts.tuning import Tuned

GAP_FACTORS = (0.25, 1.0, 4.0)


def verdict(status: str) -> Claim:
    """A measured claim with the given verdict (a deterministic effect on either side of 1, or
    an interval straddling it)."""
    estimate, low, high = {SUPPORTED: (2.0, 2.0, 2.0), NOT_SUPPORTED: (0.5, 0.5, 0.5),
                           INCONCLUSIVE: (1.0, 0.5, 2.0)}[status]  # fmt: skip
    effect = Effect(estimate, low, high, 5, "constructed")
    return Claim("", rule=Rule("q", ">", 1.0, "s"), effect=effect)


def tuned_gaps(groups: dict[str, Curves], best: dict | None = None) -> Tuned:
    """Steps chosen by where the runs end (score "final"): each group at its best factor (1, or
    best[name]) as given, at the other factors of GAP_FACTORS with every margin gap larger the
    further they lie from it; evaluated at its best factor."""
    best = dict.fromkeys(groups, 1.0) | (best or {})

    def widened(c: Curves, k: float) -> Curves:
        gaps = {m: v * k if m.startswith("gap/") else v for m, v in c.values.items()}
        return Curves(c.steps, gaps, c.diverged, c.seeds)

    selection = {name: {f: widened(c, 1.0 + abs(np.log2(f / best[name]))) for f in GAP_FACTORS}
                 for name, c in groups.items()}  # fmt: skip
    evaluation = {name: {best[name]: c} for name, c in groups.items()}
    return Tuned(selection, evaluation, dict.fromkeys(groups, ("η", 0.2)), "final")


# a doubt on a verdict (what a tuned step at its grid's edge leaves open: tuning.edge_doubt)
DOUBT = "NGD's best step (η = 0.4) is the largest tried: a better step could overturn it"


def equal_norm_groups(slow_gap, fast_reach: float = 1.0, seed: int = 0) -> dict[str, Curves]:
    """Two arms on the same seeds: "Fast" travels far (‖W_t‖_F ∝ t, to 200 × fast_reach) with
    its ℓ∞ gap ‖W_t‖^(−1/2), ending at 0.07; "Slow" travels little (‖W_t‖_F to 10) and ends
    at gap `slow_gap` (per-seed scatter 5 %). Where Fast's ‖W_t‖_F reaches 10 its gap is
    0.316: the comparison at equal norm against `slow_gap`, the final one against 0.07."""
    import claim_cases as base

    t = 1.0 + base.STEPS.astype(np.float64)
    fast = np.tile(0.1 * fast_reach * t, (base.SEEDS, 1))
    slow = np.tile(0.1 * t ** (np.log(100.0) / np.log(t[-1])), (base.SEEDS, 1))
    ends = slow_gap * np.exp(np.random.default_rng(seed).normal(0, 0.05, base.SEEDS))
    slow_gaps = ends[:, None] * (t / t[-1])[None, :] ** -0.2
    return {
        "Fast": Curves(base.STEPS, {"norm/2": fast, "gap/inf": fast**-0.5}),
        "Slow": Curves(base.STEPS, {"norm/2": slow, "gap/inf": slow_gaps}),
    }


def reexamine_cases() -> dict[str, list]:
    import claim_cases as base  # at call time: claim_cases imports this module

    g, moving = base.atlas_groups(muon_norm_rate=0.0), base.atlas_groups()
    # per-seed norm growth rates from 0 to 0.2: their mean sits on the stall slope 0.1
    rates = np.linspace(0.0, 0.2, base.SEEDS)
    straddle = Curves(base.STEPS, {"norm/2": (1.0 + base.STEPS[None, :]) ** rates[:, None]})
    tied = base.atlas_groups(own_gap=0.2, other_gap=0.2 * np.tile([0.9, 1.1], 4), scatter=0.0)
    n = base.ngd_groups()
    tied_ngd = base.ngd_groups(ngd=base.straddling(0.14), gd=0.14)
    # GD's iterate stops for the last 90 % of the run (as Polyak's at the float64 floor)
    norm = n["GD"].values["norm/2"].copy()
    late = base.STEPS >= 0.1 * base.STEPS[-1]
    norm[:, late] = norm[:, late][:, :1]
    halted = {**n, "GD": Curves(base.STEPS, {**n["GD"].values, "norm/2": norm})}
    # Polyak ahead of NGD while it moves, then stopped (L − L* rounded to 0) at a misalignment
    # NGD passes later: its final value would say NGD ends ahead; at the last step both moved
    # Polyak leads. And a group whose iterate never moved: no step to compare at.
    froze = int(np.searchsorted(base.STEPS, 100))
    fast = base.two_phase(0.5, 5, 3e-3, 1e-5)
    fast[:, froze:] = fast[:, [froze]]  # ~2e-4, where NGD ends at 1e-4
    norm = n["NGD"].values["norm/2"].copy()
    norm[:, froze:] = norm[:, [froze]]
    stopped = {**n, "Polyak": Curves(base.STEPS, {**n["Polyak"].values, "norm/2": norm,
                                                  "alignment/2": 1.0 - fast})}  # fmt: skip
    # the same, its last move rounding noise (a huge step to a worse direction): judged at the
    # recorded step before it
    noisy = fast.copy()
    noisy[:, froze:] = 0.5
    noise = {**n, "Polyak-noise": Curves(base.STEPS, {**n["Polyak"].values, "norm/2": norm,
                                                       "alignment/2": 1.0 - noisy})}  # fmt: skip
    # a run that keeps pace (‖W_t‖ ∝ t), then crawls: ‖W_t‖ still changes, however slowly
    # (log–log slope ≪ 0.5), ending behind NGD
    crawl_norm = n["NGD"].values["norm/2"].copy()
    after = np.log(np.maximum(base.STEPS[froze:], 1) / base.STEPS[froze])
    crawl_norm[:, froze:] = crawl_norm[:, [froze]] * (1.0 + 1e-3 * after)
    crawl = {**n, "Polyak-crawl": Curves(base.STEPS, {**n["Polyak"].values,
                                                         "norm/2": crawl_norm,
                                                         "alignment/2": 1.0 - fast})}  # fmt: skip
    still = {**n, "GD": Curves(base.STEPS, {**n["GD"].values,
                                            "norm/2": np.ones_like(norm)})}  # fmt: skip
    one = {"A": g["SpectralDescent"]}
    inside, largest = tuned_gaps(one), tuned_gaps(one, {"A": 4.0})
    smallest, spectral = tuned_gaps(one, {"A": 0.25}), "gap/spectral"
    return {
        "tuning.unless_at_edge": [
            # A's best step is the largest tried: a better one lowers its gap, which could
            # overturn a refutation of "A ends near", not a support
            (SUPPORTED, (verdict(SUPPORTED), largest, spectral, {"A": NOT_SUPPORTED}), {}),
            (INCONCLUSIVE, (verdict(NOT_SUPPORTED), largest, spectral, {"A": NOT_SUPPORTED}), {}),
            (NOT_SUPPORTED, (verdict(NOT_SUPPORTED), largest, spectral, {"A": SUPPORTED}), {}),
            (INCONCLUSIVE, (verdict(SUPPORTED), smallest, spectral, {"A": SUPPORTED}), {}),
            # either verdict, where the step's effect has no sign (a stall)
            (INCONCLUSIVE, (verdict(SUPPORTED), largest, spectral, {"A": ""}), {}),
            # the grid brackets the best step: the verdict stands
            (NOT_SUPPORTED, (verdict(NOT_SUPPORTED), inside, spectral, {"A": NOT_SUPPORTED}), {}),
            (SUPPORTED, (verdict(SUPPORTED), inside, spectral, {"A": ""}), {}),
            (INCONCLUSIVE, (verdict(INCONCLUSIVE), largest, spectral, {"A": ""}), {}),
        ],
        "reexamine.stalls_where": [
            (SUPPORTED, (g, "Muon", "SpectralDescent", 0.1), {}),
            (NOT_SUPPORTED, (moving, "Muon", "SpectralDescent", 0.1), {}),
            (NOT_SUPPORTED, (g, "Muon", "Muon", 0.1), {}),  # the other one stalls too
            (INCONCLUSIVE, ({**moving, "S": straddle}, "S", "SpectralDescent", 0.1), {}),
        ],
        "reexamine.closer_than": [
            (SUPPORTED, (moving, "SignGD", "NGD", "inf", 0.1), {}),
            (NOT_SUPPORTED, (moving, "NGD", "SignGD", "inf", 0.1), {}),
            (INCONCLUSIVE, (tied, "SignGD", "NGD", "inf", 0.1), {}),
            # the settings compared as run (docs/REFEREE.md): a stalled side's final gap is
            # where it stopped, and that is its outcome, either side of the comparison
            (SUPPORTED, (moving, "Muon", "NGD", "spectral", 0.1), {}),
            (SUPPORTED, (g, "Muon", "NGD", "spectral", 0.1), {}),
            (NOT_SUPPORTED, (g, "NGD", "Muon", "spectral", 0.1), {}),
            (SUPPORTED, (g, "SpectralDescent", "Muon", "inf", 0.1), {}),
            (NOT_SUPPORTED, (g, "Muon", "SpectralDescent", "inf", 0.1), {}),
            # ... unless the stalled side's stall is no outcome (reexamine-adam's `stalled`):
            # no comparison with it is evidence, on either side; moving sides are decided
            (INCONCLUSIVE, (g, "Muon", "NGD", "spectral", 0.1, {"Muon": "its ε regime"}), {}),
            (INCONCLUSIVE, (g, "NGD", "Muon", "spectral", 0.1, {"Muon": "its ε regime"}), {}),
            (SUPPORTED, (moving, "SignGD", "NGD", "inf", 0.1, {"NGD": "its ε regime"}), {}),
            (NOT_SUPPORTED, (moving, "NGD", "SignGD", "inf", 0.1, {"NGD": "its ε regime"}), {}),
            # at equal ‖W_t‖_F: Slow (gap 0.1) is closer than Fast where Fast reaches Slow's
            # norm (0.316), though Fast ends closer (0.07); refuted at 1.0; open at 0.316
            (SUPPORTED, (equal_norm_groups(0.1), "Slow", "Fast", "inf", 0.1, None, True), {}),
            (NOT_SUPPORTED, (equal_norm_groups(0.1), "Slow", "Fast", "inf", 0.1), {}),
            (NOT_SUPPORTED, (equal_norm_groups(1.0), "Slow", "Fast", "inf", 0.1, None, True), {}),
            (INCONCLUSIVE, (equal_norm_groups(0.316), "Slow", "Fast", "inf", 0.1, None, True), {}),
            # Fast never reaches Slow's final norm: nothing to compare, said so
            (
                INCONCLUSIVE,
                (equal_norm_groups(0.1, fast_reach=0.01), "Slow", "Fast", "inf", 0.1, None, True),
                {},
            ),
        ],
        "reexamine.closer_than_each": [
            (SUPPORTED, (moving, "SignGD", ["NGD", "SpectralDescent"], "inf", 0.1), {}),
            (NOT_SUPPORTED, (moving, "NGD", ["SpectralDescent", "SignGD"], "inf", 0.1), {}),
            (INCONCLUSIVE, (tied, "SignGD", ["NGD", "SpectralDescent"], "inf", 0.1), {}),
            (SUPPORTED, (g, "SignGD", ["NGD", "Muon"], "inf", 0.1), {}),  # Muon stalled
        ],
        "reexamine.ends_ahead": [
            (SUPPORTED, (n, "NGD", ["GD"], "GD"), {}),
            (NOT_SUPPORTED, (n, "NGD", ["GD", "Polyak"], "GD and Polyak"), {}),
            (INCONCLUSIVE, (tied_ngd, "NGD", ["GD"], "GD"), {}),
            # GD stopped at 10 % of the run, behind NGD there; Polyak stopped ahead of NGD (its
            # last move rounding noise or not): each compared at a float64 stop, an artefact
            (INCONCLUSIVE, (halted, "NGD", ["GD"], "GD"), {}),
            (INCONCLUSIVE, (stopped, "NGD", ["Polyak"], "Polyak"), {}),
            (INCONCLUSIVE, (noise, "NGD", ["Polyak-noise"], "Polyak"), {}),
            # ... and where another setting is refuted at the end, the claim is refuted
            (NOT_SUPPORTED, ({**stopped, "GD": n["NGD-mom"]}, "NGD", ["Polyak", "GD"], "both"), {}),
            (INCONCLUSIVE, (still, "NGD", ["GD"], "GD"), {}),  # GD never moved
            # a doubt on the refutation (NGD's tuned step at its grid's edge) leaves it open;
            # a support stands
            (INCONCLUSIVE, (n, "GD", ["NGD"], "NGD", {"refutes": DOUBT}), {}),
            (SUPPORTED, (n, "NGD", ["GD"], "GD", {"refutes": DOUBT}), {}),
        ],
        "reexamine.ahead_while_moving": [
            (SUPPORTED, (n, "GD", "NGD", "s"), {}),
            (NOT_SUPPORTED, (n, "NGD", "GD", "s"), {}),
            (INCONCLUSIVE, (tied_ngd, "GD", "NGD", "s"), {}),
            # Polyak stopped behind where NGD ends, ahead at the last step both moved: compared
            # at a float64 stop, either way round
            (INCONCLUSIVE, (stopped, "NGD", "Polyak", "s"), {}),
            (INCONCLUSIVE, (stopped, "Polyak", "NGD", "s"), {}),
            (INCONCLUSIVE, (still, "GD", "NGD", "s"), {}),  # GD never moved: no step to compare
            # a doubt holds back only the verdict it names
            (INCONCLUSIVE, (n, "GD", "NGD", "s", {"supports": DOUBT}), {}),
            (SUPPORTED, (n, "GD", "NGD", "s", {"refutes": DOUBT}), {}),
            (INCONCLUSIVE, (n, "NGD", "GD", "s", {"refutes": DOUBT}), {}),
            (NOT_SUPPORTED, (n, "NGD", "GD", "s", {"supports": DOUBT}), {}),
            # a run that crawls (‖W_t‖ growing ever slower) but moves to the end: judged there
            (SUPPORTED, (crawl, "Polyak-crawl", "NGD", "s"), {}),
        ],
        "reexamine.explains": [
            (SUPPORTED, ("t", [verdict(SUPPORTED), verdict(SUPPORTED)]), {}),
            (NOT_SUPPORTED, ("t", [verdict(SUPPORTED), verdict(NOT_SUPPORTED)]), {}),
            (INCONCLUSIVE, ("t", [verdict(SUPPORTED), verdict(INCONCLUSIVE)]), {}),
            # evidence not run is no evidence
            (INCONCLUSIVE, ("t", [verdict(SUPPORTED), not_applicable("x", "not run")]), {}),
            (NOT_APPLICABLE, ("t", [not_applicable("x", "not run")]), {}),
            # a consistency check among the evidence is a precondition, not a part
            (SUPPORTED, ("t", [as_consistency_check(verdict(SUPPORTED)), verdict(SUPPORTED)]), {}),
            (
                INCONCLUSIVE,
                ("t", [as_consistency_check(verdict(NOT_SUPPORTED)), verdict(SUPPORTED)]),
                {},
            ),
            (
                NOT_SUPPORTED,
                ("t", [as_consistency_check(verdict(SUPPORTED)), verdict(NOT_SUPPORTED)]),
                {},
            ),
        ],
        "reexamine.larger_cap_ends_closer": [
            (SUPPORTED, (n, ["GD", "NGD", "NGD-mom"]), {}),  # 0.14, 1e-4, 1e-6
            (NOT_SUPPORTED, (n, ["GD", "NGD-mom", "NGD"]), {}),  # the last step goes back up
            (INCONCLUSIVE, (tied_ngd, ["GD", "NGD"]), {}),
            # GD stopped (behind), Polyak stopped (ahead where both moved): at a float64 stop
            (INCONCLUSIVE, (halted, ["GD", "NGD", "NGD-mom"]), {}),
            (INCONCLUSIVE, (stopped, ["NGD", "Polyak"]), {}),
            (INCONCLUSIVE, (stopped, ["Polyak", "NGD"]), {}),
            (INCONCLUSIVE, (still, ["GD", "NGD"]), {}),
        ],
    }
