"""The exact McNemar test of two classifiers on the same examples: text-md's second view of
two arms' test predictions, kept in the evidence beside the paired accuracies (it decides
nothing)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mcnemar_test(a_only: int, b_only: int) -> dict:
    """The exact McNemar test of two classifiers on the same examples: of the discordant
    examples (a right and b wrong: a_only; the reverse: b_only), is a's share ½? Two-sided
    binomial p-value (scipy.stats.binomtest)."""
    n = a_only + b_only
    p_value = float(stats.binomtest(a_only, n, 0.5).pvalue) if n else math.nan
    return {"a_right_b_wrong": int(a_only), "b_right_a_wrong": int(b_only), "p_value": p_value}


def pooled_mcnemar(a: list, b: list) -> dict | None:
    """McNemar on the test predictions of two arms pooled over the seeds both have (None if no
    seed has both)."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs:
        return None
    a_only = sum(int(np.sum(x & ~y)) for x, y in pairs)
    b_only = sum(int(np.sum(~x & y)) for x, y in pairs)
    return {**mcnemar_test(a_only, b_only), "seeds": len(pairs)}
