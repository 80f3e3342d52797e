"""An uncapped Polyak step (γ_b = ∞) is keyed with lr "inf" (JSON has no ∞): the tidy metrics
table of a sweep that runs it beside finite-rate algorithms keeps one numeric lr column, ∞ as
a float (it failed to build: double vs string)."""

from __future__ import annotations

import math

import numpy as np

from attnbias.data import example1
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.sweep import run_sweep
from attnbias.store import ResultsStore


def test_a_table_of_finite_and_infinite_caps_has_one_numeric_lr_column(tmp_path):
    problem = example1(4, 4, 16, seed=1)
    init = {"W": 0.1 * np.random.default_rng(0).standard_normal((16, 16))}
    algorithms = [Algorithm("NGD", "ngd", 0.1),
                  Algorithm("Polyak", "polyak", math.inf, f_star="optimal")]  # fmt: skip
    specs = [RunSpec({"name": a.name}, problem, a, 5, init, alpha="optimal") for a in algorithms]
    assert specs[1].record["algorithm"]["lr"] == "inf"
    store = ResultsStore(tmp_path)
    table = store.table(records=run_sweep(specs, store, progress=False).records)
    lrs = set(table.column("algorithm.lr").to_pylist())
    assert lrs == {0.1, math.inf}
