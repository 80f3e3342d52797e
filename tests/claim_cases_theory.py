"""Constructed inputs for the rules of attnbias.judging.verdicts.theory (the theory's rates
and conditions): for each function, cases that reach each of its verdicts (used by
test_claim_rules.py and, through claim_cases.cases(), by test_claim_mutations.py)."""

from __future__ import annotations

import numpy as np

from attnbias.judging.claims import INCONCLUSIVE, NOT_APPLICABLE, NOT_SUPPORTED, SUPPORTED

RUNS = 8


def around(value: float, spread: float = 0.02, runs: int = RUNS, seed: int = 0) -> np.ndarray:
    """Per-run values scattered by a relative `spread` around `value`."""
    rng = np.random.default_rng(seed)
    return value * (1.0 + spread * rng.standard_normal(runs))


def across(value: float, runs: int = RUNS) -> np.ndarray:
    """Per-run values whose mean is `value`, spread ±60 % (an interval that straddles it)."""
    return value * np.linspace(0.4, 1.6, runs)


def with_nan(values: np.ndarray) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    out[0] = np.nan
    return out


def proportional_data(power: float, runs: int = RUNS, noise: float = 0.01):
    x = np.geomspace(0.1, 10.0, runs)
    return x, x**power * (1.0 + noise * np.random.default_rng(1).standard_normal(runs))


def theory_cases() -> dict[str, list]:
    fast, slow = around(-2.0), around(-0.5)
    lrs = np.repeat([0.03, 0.1, 0.3, 1.0], 2)
    lr_seeds = np.tile([1, 2], 4)  # two seeds, each run at every η
    x1, y1 = proportional_data(1.0)
    x2, y2 = proportional_data(2.0)
    halves = np.repeat([1, 2], RUNS // 2)  # two seeds, half the problems each
    windows = ([1000, 10000], [10000, 100000])
    holds = np.ones(400, dtype=bool)
    half = np.tile([True, False], 200)
    each = np.arange(400)  # every case its own seed
    ten_seeds, forty_seeds = np.repeat(np.arange(10), 20), np.repeat(np.arange(40), 10)
    one_bad_seed = np.r_[np.ones(180, dtype=bool), np.tile([True, False], 10)]
    text, quantity, source = "claim", "quantity", "source"
    return {
        "theory.exponent_below": [
            (SUPPORTED, (fast, -1.0, text, quantity, source), {}),
            (NOT_SUPPORTED, (slow, -1.0, text, quantity, source), {}),
            (INCONCLUSIVE, (across(-1.0), -1.0, text, quantity, source), {}),
            (INCONCLUSIVE, (with_nan(fast), -1.0, text, quantity, source), {}),
            (INCONCLUSIVE, (fast, -1.0, text, quantity, source), {"unmet": ["stalled"]}),
        ],
        "theory.exponent_matches": [
            (SUPPORTED, (fast, -2.0, 0.1, text, source), {}),
            (NOT_SUPPORTED, (around(-3.0), -2.0, 0.1, text, source), {}),
            (NOT_SUPPORTED, (around(-1.0), -2.0, 0.1, text, source), {}),
            (INCONCLUSIVE, (with_nan(fast), -2.0, 0.1, text, source), {}),
        ],
        "theory.window_stable": [
            (SUPPORTED, (around(-2.0), around(-2.0, seed=1), 0.1, windows), {}),
            (NOT_SUPPORTED, (around(-2.0), around(-1.0, seed=1), 0.1, windows), {}),
            (NOT_SUPPORTED, (around(-1.0), around(-2.0, seed=1), 0.1, windows), {}),
            (INCONCLUSIVE, (around(-2.0), -around(-2.0, seed=1), 0.1, windows), {}),
            (INCONCLUSIVE, (with_nan(around(-2.0)), around(-2.0, seed=1), 0.1, windows), {}),
        ],
        "theory.growth_per_lr": [
            (SUPPORTED, (lrs, lrs * around(0.99, 0.005), 0.1, lr_seeds), {}),
            (NOT_SUPPORTED, (lrs, lrs * around(0.5, 0.005), 0.1, lr_seeds), {}),
            # two seeds far apart: over seeds (n = 2), not runs (n = 8), it cannot decide
            (INCONCLUSIVE, (lrs, lrs * np.tile([0.8, 1.0], 4), 0.1, lr_seeds), {}),
            (INCONCLUSIVE, (lrs, with_nan(0.99 * lrs), 0.1, lr_seeds), {}),
        ],
        "theory.growth_bound": [
            (SUPPORTED, (lrs, lrs * around(0.99, 0.005), lr_seeds), {}),
            (NOT_SUPPORTED, (lrs, lrs * around(1.2, 0.005), lr_seeds), {}),
            (INCONCLUSIVE, (lrs, lrs * np.tile([0.9, 1.1], 4), lr_seeds), {}),
        ],
        "theory.proportional": [
            (SUPPORTED, (x1, y1, 0.1, text, quantity, source, halves), {}),
            (NOT_SUPPORTED, (x2, y2, 0.1, text, quantity, source, halves), {}),
            (NOT_SUPPORTED, (x1, np.sqrt(y1), 0.1, text, quantity, source, halves), {}),
            (INCONCLUSIVE, (x1, with_nan(y1), 0.1, text, quantity, source, halves), {}),
            # one slope per seed, far apart: two seeds cannot decide
            (
                INCONCLUSIVE,
                (x1, x1 ** np.where(halves == 1, 0.7, 1.3), 0.1, text, quantity, source, halves),
                {},
            ),
            (SUPPORTED, (x1, y1, 0.1, text, quantity, source, halves), {"consistency": True}),
        ],
        "theory.ratio_near_one": [
            (SUPPORTED, (around(1.0), 0.2, text, quantity, source, halves), {}),
            (NOT_SUPPORTED, (around(1.5), 0.2, text, quantity, source, halves), {}),
            (NOT_SUPPORTED, (around(0.5), 0.2, text, quantity, source, halves), {}),
            (INCONCLUSIVE, (across(1.2), 0.2, text, quantity, source, np.arange(RUNS)), {}),
            # eight tight cases but two seeds far apart: n = 2 seeds, not 8 cases
            (
                INCONCLUSIVE,
                (np.where(halves == 1, 0.85, 1.15), 0.2, text, quantity, source, halves),
                {},
            ),
        ],
        "theory.slower": [
            (SUPPORTED, (around(-0.2), around(-2.0, seed=1), text, source), {}),
            (NOT_SUPPORTED, (around(-2.0), around(-0.2, seed=1), text, source), {}),
            (INCONCLUSIVE, (around(-2.0, spread=0.5), around(-2.0, seed=1), text, source), {}),
            (
                INCONCLUSIVE,
                (around(-0.2), around(-2.0, seed=1), text, source),
                {"unmet": ["stall"]},
            ),
        ],
        "theory.mean_above": [
            (SUPPORTED, (around(0.99), 0.5, text, quantity, source), {}),
            (NOT_SUPPORTED, (around(0.2), 0.5, text, quantity, source), {}),
            (INCONCLUSIVE, (across(0.5), 0.5, text, quantity, source), {}),
        ],
        "theory.fraction_above": [
            (SUPPORTED, (holds, 0.95, text, quantity, source), {"clusters": each}),
            (NOT_SUPPORTED, (half, 0.95, text, quantity, source), {"clusters": each}),
            (INCONCLUSIVE, (holds[:20], 0.95, text, quantity, source), {"clusters": each[:20]}),
            (NOT_APPLICABLE, (holds[:0], 0.95, text, quantity, source), {"clusters": each[:0]}),
            # 200 cases on 10 seeds, one seed at half: as 200 independent cases the share
            # 0.95 is above 0.9; clustered by seed (n = 10) it is not decided
            (SUPPORTED, (one_bad_seed, 0.9, text, quantity, source), {"clusters": each[:200]}),
            (INCONCLUSIVE, (one_bad_seed, 0.9, text, quantity, source), {"clusters": ten_seeds}),
            # every seed's cases all hold: Clopper–Pearson over the 40 seeds, not the 400 cases
            (SUPPORTED, (holds, 0.9, text, quantity, source), {"clusters": forty_seeds}),
            (INCONCLUSIVE, (holds, 0.95, text, quantity, source), {"clusters": forty_seeds}),
        ],
        "theory.no_violations": [
            (SUPPORTED, (np.array([0.3, 0.0, np.nan, 2.0]), text, quantity, source), {}),
            (NOT_SUPPORTED, (np.array([0.3, -1e-9, 2.0]), text, quantity, source), {}),
            (NOT_APPLICABLE, (np.array([np.nan]), text, quantity, source), {}),
            (NOT_APPLICABLE, (np.array([]), text, quantity, source), {}),
        ],
        # a claim about every start: one failing start refutes it, whatever the share
        "theory.none_fail": [
            (SUPPORTED, (np.ones(40, bool), text, quantity, source), {"clusters": each[:40]}),
            (NOT_SUPPORTED, (np.arange(40) != 3, text, quantity, source), {"clusters": each[:40]}),
            (NOT_APPLICABLE, (np.array([], bool), text, quantity, source), {"clusters": []}),
        ],
        # an existence claim: one start ending elsewhere, in one seed, is enough
        "theory.some_fail": [
            (SUPPORTED, (np.arange(40) != 3, text, quantity, source), {"clusters": each[:40]}),
            (NOT_SUPPORTED, (np.ones(40, bool), text, quantity, source), {"clusters": each[:40]}),
            (NOT_APPLICABLE, (np.array([], bool), text, quantity, source), {"clusters": []}),
        ],
        "theory.fraction_below": [
            (SUPPORTED, (~holds, 0.1, text, quantity, source), {"clusters": each}),
            (NOT_SUPPORTED, (half, 0.1, text, quantity, source), {"clusters": each}),
            (INCONCLUSIVE, (~holds[:20], 0.1, text, quantity, source), {"clusters": each[:20]}),
            (NOT_APPLICABLE, (holds[:0], 0.1, text, quantity, source), {"clusters": each[:0]}),
            (SUPPORTED, (~one_bad_seed, 0.1, text, quantity, source), {"clusters": each[:200]}),
            (INCONCLUSIVE, (~one_bad_seed, 0.1, text, quantity, source), {"clusters": ten_seeds}),
        ],
    }
