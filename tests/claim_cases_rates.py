"""Constructed inputs of the theory experiments' own claims() functions (ngd-rates,
joint-rates, trajectory-lemmas), no training: curves and per-case numbers shaped as each
experiment's run() hands them over. tests/test_claims.py pins the verdicts they give;
tests/test_claim_mutations.py flips every comparison in those claims() functions and checks
that some pinned verdict changes."""

from __future__ import annotations

import numpy as np

from attnbias.curves import Curves
from attnbias.experiment_registry import load_config

SEEDS = 3
STEPS = np.concatenate([[0], np.unique(np.geomspace(1, 3000, 80).astype(int))])


def per_seed(scale: float = 0.02, seed: int = 0) -> np.ndarray:
    """A factor per seed near 1 (the runs of a group differ a little)."""
    return np.exp(np.random.default_rng(seed).normal(0.0, scale, SEEDS))[:, None]


def curves(steps=STEPS, **metrics) -> Curves:
    """A group of SEEDS runs (seeds 1..SEEDS); metrics as functions of the step."""
    t = steps.astype(np.float64)
    values = {name.replace("__", "/"): f(t) for name, f in metrics.items()}
    return Curves(steps, values, seeds=np.arange(1, SEEDS + 1))


def ngd_rates_inputs():
    """ngd-rates' quick config with: NGD's misalignment ∝ t^-2 and ‖W_t‖ = κt with κ just
    below η at every η; the uncapped Polyak step's misalignment ∝ t^-3 (fast, early); the
    capped one's ∝ t^-3 up to step 30, then ∝ t^-0.1 (faster than NGD early, then slowing
    down); Lemma 1's rate ∝ the margin across numbers of
    samples (scale 1) and ∝ √margin across token scales (n = 4, scale ≠ 1), so the symmetry
    check fails and the geometry claim holds: which cases each takes decides its verdict."""
    from attnbias.experiments import ngd_rates

    config = load_config("ngd-rates", quick=True)
    groups = {}
    for k, lr in enumerate(config.lrs):
        kappa = lr * (0.99 - 0.001 * np.arange(SEEDS))[:, None]
        groups[ngd_rates.ngd(lr).name] = curves(
            misalignment=lambda t, k=k: 0.5 * per_seed(seed=k) * (1.0 + t) ** -2.0,
            norm__2=lambda t, kappa=kappa: 0.1 + kappa * t,
        )
    # the runs where Assumption 1 holds: as the reference NGD's
    groups[ngd_rates.assumed_name(config)] = curves(
        misalignment=lambda t: 0.5 * per_seed(seed=11) * (1.0 + t) ** -2.0,
        norm__2=lambda t: 0.1 + 0.1 * per_seed(seed=12) * t,
    )
    slow, fast = (ngd_rates.polyak(cap).name for cap in sorted(config.polyak_caps))
    groups[fast] = curves(misalignment=lambda t: 0.5 * per_seed(seed=7) * (1.0 + t) ** -3.0,
                          norm__2=lambda t: 0.1 + per_seed(seed=8) * t)  # fmt: skip
    groups[slow] = curves(misalignment=lambda t: per_seed(seed=9) * fast_then_slow(t),
                          norm__2=lambda t: 0.1 + per_seed(seed=10) * t)  # fmt: skip
    rows = []
    for seed in range(1, SEEDS + 1):
        for n, margin in zip([*config.sizes, config.n], [0.4, 0.7, 1.3, 0.9]):
            rows.append((seed, n, 1.0, margin * seed / 2, margin * seed / 2))
        for scale in config.scales:
            if scale != 1.0:
                margin = 0.9 * scale**2 * seed / 2
                rows.append((seed, config.n, scale, margin, np.sqrt(margin)))
    seed, n, scale, margin, rate = (np.array(column) for column in zip(*rows))
    saturation = {"seed": seed, "n": n, "scale": scale, "margin": margin, "rate": rate}
    return groups, saturation, config


def fast_then_slow(t, early=-3.0, late=-0.1, switch=30.0):
    """0.5 (1 + t)^early up to step `switch`, then continued as ∝ (1 + t)^late."""
    at = (1.0 + switch) ** early
    return 0.5 * np.where(
        t <= switch, (1.0 + t) ** early, at * ((1.0 + t) / (1.0 + switch)) ** late
    )


def joint_rates_inputs():
    """joint-rates' quick config with: the fixed head's misalignment ∝ t^-2; Eq. 13's joint
    runs' ∝ (log t)^-3 with ‖W_t‖ ∝ log t (slower, its growth logarithmic), the loss still
    positive; v's margin at 0.9 and 0.8 of the max margin."""
    config = load_config("joint-rates", quick=True)
    steps = STEPS[STEPS <= config.steps]
    log = lambda t: np.log(np.e + t)  # noqa: E731
    groups = {
        config.fixed: curves(steps, misalignment=lambda t: 0.5 * per_seed() * (1 + t) ** -2.0,
                             norm__2=lambda t: 0.1 + per_seed(seed=1) * t,
                             loss=lambda t: 0.7 * per_seed(seed=2) / (1 + t)),
        config.joint: curves(steps, misalignment=lambda t: per_seed(seed=3) * log(t) ** -3.0,
                             norm__2=lambda t: per_seed(seed=4) * log(t),
                             loss=lambda t: 0.7 * per_seed(seed=5) / (1 + t)),
        config.joint_ngd: curves(steps, misalignment=lambda t: 0.5 * (1 + t) ** -1.0 * per_seed(),
                                 norm__2=lambda t: 0.1 + per_seed(seed=6) * t,
                                 loss=lambda t: 0.7 * per_seed(seed=7) / (1 + t)),
    }  # fmt: skip
    fractions = {config.joint: np.full(SEEDS, 0.9), config.joint_ngd: np.full(SEEDS, 0.8)}
    return groups, fractions, config


def trajectory_inputs():
    """trajectory-lemmas' quick config with: Lemma 5 violated once beyond rounding, Lemma 6
    never (one vanished gradient not checked), Lemma 13 (i) and (ii) never violated."""
    config = load_config("trajectory-lemmas", quick=True)
    ok = [(0.1, (seed, t, 0)) for seed in (1, 2) for t in range(100)]  # (seed, step, sample)
    fixed = {"lemma5": [*ok, (-0.02, (2, 5, 1))], "lemma6": [*ok, (np.nan, (3, 7))]}
    fixed_off = {"lemma5": [(-0.5, (4, 3, 0))], "lemma6": []}
    joint = {"gap": ok, "score": ok, "log_ratio": [], "underflow": []}
    return fixed, fixed_off, joint, config
