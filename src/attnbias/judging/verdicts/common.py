"""What the claim rules share: per-seed values of stored curves, pairing runs by seed, and how
fast a run gets somewhere."""

from __future__ import annotations

import warnings

import numpy as np

from ...curves import Curves


def over_runs(reduce, values, axis=None):
    """reduce (np.mean, np.median, ...) of per-run values; NaN where there are none (every run
    of the group diverged), without numpy's empty-slice warning. NaN fails every comparison."""
    values = np.asarray(values, dtype=float)
    if values.size:
        return reduce(values, axis=axis)
    with warnings.catch_warnings():  # numpy's own NaN of the right shape, without its warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return reduce(values, axis=axis)


def seeds_of(c: Curves) -> np.ndarray:
    """The seed of each run of a group (its position when the curves do not say)."""
    return c.seed_ids()


def paired(a: Curves, b: Curves, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-run values x of group a and y of group b, restricted to the seeds both have and put
    in the same seed order (runs that share a seed share data and initialisation)."""
    ia = {int(s): i for i, s in enumerate(seeds_of(a))}
    ib = {int(s): i for i, s in enumerate(seeds_of(b))}
    common = sorted(set(ia) & set(ib))
    return (
        np.asarray(x)[[ia[s] for s in common]],
        np.asarray(y)[[ib[s] for s in common]],
    )


def final(c: Curves, metric: str) -> np.ndarray:
    """Each run's last recorded value of `metric` (1 − m for "1-m")."""
    if metric.startswith("1-"):
        return 1.0 - c.final(metric[2:])
    return c.final(metric)


def values(c: Curves, metric: str) -> np.ndarray:
    """(runs, steps) values of `metric` (1 − m for "1-m")."""
    if metric.startswith("1-"):
        return 1.0 - c.values[metric[2:]]
    return c.values[metric]


def second_column(c: Curves) -> int | None:
    """The column of the second recorded step after 0 (from zero, step 1 is still W = 0)."""
    positive = np.flatnonzero(c.steps > 0)
    if positive.size == 0:
        return None
    return int(positive[np.argsort(c.steps[positive])][min(1, positive.size - 1)])


def steps_to_reach(c: Curves, metric: str, level: float) -> np.ndarray:
    """For each run, the first step at which `metric` is at or below `level`, interpolated
    log-linearly between the recorded steps around the crossing where they are more than one
    step apart (where the grid records consecutive steps the time is that step: a count of
    steps is a whole number, and two runs crossing between the same two steps tie); inf for a
    run that never gets there; at least 1 (a run that starts at the level takes one step).
    Speed judged this way does not depend on how far below the level a run ends (the float64
    floor of a loss says nothing about speed)."""
    v, steps = values(c, metric), c.steps.astype(np.float64)
    out = np.full(v.shape[0], np.inf)
    for k, row in enumerate(v):
        below = np.flatnonzero(row <= level)
        if below.size == 0:
            continue
        j = below[0]
        bracketed = j > 0 and steps[j - 1] > 0 and row[j - 1] > level > 0 and row[j] > 0
        if not bracketed or steps[j] - steps[j - 1] <= 1.0:
            out[k] = steps[j]
            continue
        # log value is linear in log step between the two recording points
        s0, s1 = np.log(steps[j - 1]), np.log(steps[j])
        v0, v1 = np.log(row[j - 1]), np.log(row[j])
        out[k] = float(np.exp(s0 + (np.log(level) - v0) * (s1 - s0) / (v1 - v0)))
    return np.maximum(out, 1.0)


def growing_until(c: Curves, above: float) -> np.ndarray:
    """Per run: the last recorded step up to which ‖W_t‖ still grew at a log–log slope in t
    above `above` between two recorded steps (step 0 left out); NaN for one that never did.
    A step that moves W at the rule's pace (Polyak's uncapped: ‖W_t‖ ∝ t) and then barely at
    all (its stand-in cap binding, its scores underflowing) stopped there, though ‖W_t‖ still
    changes (`moving_until` sees only a frozen ‖W_t‖)."""
    later = c.steps > 0
    steps, norms = c.steps[later], values(c, "norm/2")[:, later]
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.diff(np.log(norms), axis=1) / np.diff(np.log(steps))
    out = np.full(norms.shape[0], np.nan)
    for k, grew in enumerate(slopes > above):
        if grew.any():
            out[k] = steps[int(np.flatnonzero(grew)[-1]) + 1]
    return out


def common_level(groups: list[Curves], metric: str) -> float:
    """The level of `metric` at which speed is compared: halfway, on a log scale, from where
    the runs start (median first recorded value) to the lowest level every run of every group
    reaches (the largest final value). Halfway, not the end: the last stretch of a run is
    where float64 floors and step caps decide, not the method's speed."""
    if any(final(c, metric).size == 0 for c in groups):  # a group whose runs all diverged
        return float("nan")
    floor = max(float(np.max(final(c, metric))) for c in groups)
    start = float(np.median(np.concatenate([values(c, metric)[:, 0] for c in groups])))
    if floor <= 0 or start <= floor:  # nothing to halve: a metric that did not fall
        return floor
    return float(np.sqrt(start * floor))


def described(values_by_group: dict[str, np.ndarray]) -> dict:
    """Raw numbers for the evidence: each group's mean and median per-run value."""
    return {
        name: {"mean": float(np.mean(v)), "median": float(np.median(v)), "runs": int(np.size(v))}
        for name, v in values_by_group.items()
        if np.size(v)
    }
