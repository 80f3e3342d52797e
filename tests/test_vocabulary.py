"""One vocabulary: the optimiser registry the engine, the real-data loop and the configs share;
norms read once into value objects; one marker and one helper for diverged runs."""

import math

import numpy as np
import pytest
import torch

from attnbias.curves import without_diverged
from attnbias.metrics import Norm
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep
from attnbias.optim.algorithm import Algorithm
from attnbias.optim.registry import RULES, TABLE_NAMES, available
from attnbias.real.train import make_optimizer, optimizer_label
from attnbias.store import DIVERGED, FINISHED, RunRecord, tidy
from attnbias.svm.norms import dual_norm_value, norm_value


def test_every_table_name_is_a_rule_of_the_registry():
    assert {spelling.rule for spelling in TABLE_NAMES.values()} <= set(RULES)
    assert all(available(name) for name in RULES if name != "muon")


@pytest.mark.parametrize(
    ("table", "kind", "label", "group"),
    [
        ({"name": "sgd", "lr": 0.1, "momentum": 0.9}, torch.optim.SGD, "SGD",
         {"lr": 0.1, "momentum": 0.9}),
        ({"name": "sngd", "lr": 0.3}, NormalizedGD, "SNGD", {"lr": 0.3, "normalize": "global"}),
        ({"name": "sps", "lr_max": 1.0, "c": 2.0}, PolyakStep, "SPS",
         {"lr": 1.0, "c": 2.0, "f_star": 0.0}),
        ({"name": "adam", "lr": 1e-3, "betas": [0.9, 0.95]}, torch.optim.Adam, "Adam",
         {"lr": 1e-3, "betas": (0.9, 0.95)}),
        ({"name": "md", "p": 1.1, "lr": 0.05}, MirrorDescent, "ℓ1.1-MD", {"lr": 0.05, "p": 1.1}),
    ],
)  # fmt: skip
def test_a_real_data_table_builds_the_optimiser_it_always_built(table, kind, label, group):
    params = [torch.nn.Parameter(torch.zeros(3))]
    optimizer = make_optimizer(params, table)
    assert type(optimizer) is kind and optimizer_label(table) == label
    assert group.items() <= optimizer.param_groups[0].items()
    algorithm = Algorithm.from_optimizer_table(table)
    assert algorithm.optimizer == TABLE_NAMES[table["name"]].rule and algorithm.name == label
    assert type(make_optimizer(params, algorithm)) is kind  # the value object builds it too


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "lion", "lr": 1}, r"optimizer\.name must be one of"),
        ({"name": "md", "p": 1.1, "lr": 1, "momentum": 0.9}, r"no field.*'momentum'"),
        ({"name": "md", "lr": 1}, r"needs field.*'p'"),
        ({"name": "sps", "lr_max": -1}, r"optimizer 'sps': lr must be > 0"),
        ({"name": "sngd", "lr": 1, "norm": "max"}, r"optimizer 'sngd': normalize must be one of"),
    ],
)
def test_a_bad_optimizer_table_is_refused_naming_the_key(table, message):
    with pytest.raises(ValueError, match=message):
        Algorithm.from_optimizer_table(table)


def test_the_engine_and_a_table_name_the_same_rule_alike():
    """SNGD is NGD on minibatches: the same Algorithm up to its display name."""
    engine = Algorithm.from_dict({"name": "SNGD", "optimizer": "ngd", "lr": 0.3})
    assert engine == Algorithm.from_optimizer_table({"name": "sngd", "lr": 0.3})


@pytest.mark.parametrize(
    ("name", "value", "label", "lp"),
    [("fro", 2.0, "2", True), (1.75, 1.75, "1.75", True), ("max", math.inf, "inf", True),
     (math.inf, math.inf, "inf", True), ("nuc", "nuc", "nuc", False),
     ("spectral", "spectral", "spectral", False)],
)  # fmt: skip
def test_a_norm_is_read_once_into_a_value(name, value, label, lp):
    norm = Norm.parse(name)
    assert (norm.value, norm.label, norm.is_lp) == (value, label, lp)
    assert Norm.parse(norm) is norm
    if lp:
        assert norm.p == value
    else:
        with pytest.raises(ValueError, match="has no exponent"):
            _ = norm.p


def test_diverged_runs_are_dropped_by_one_helper_whatever_wrote_the_marker():
    table = tidy([1], {"loss": [1.0]})
    runs = [
        RunRecord("a", {}, table, {}, {"status": FINISHED}),
        RunRecord("b", {}, table, {}, {"status": DIVERGED, "diverged_at": 3}),  # the engine's
        RunRecord("c", {}, table, {}, {"diverged": True}),  # real-data runs of earlier releases
        RunRecord("d", {}, table, {}, {"diverged": False}),
    ]
    assert [r.key for r in without_diverged(runs)] == ["a", "d"]


@pytest.mark.parametrize(
    "name, dual, meaning",
    [
        ("fro", 2.0, "entrywise ℓ2 = Frobenius"),
        (3.0, 1.5, "entrywise ℓ3"),
        (1.0, math.inf, "entrywise ℓ1"),
        ("inf", 1.0, "entrywise ℓ∞: largest absolute entry"),
        ("nuc", "spectral", "nuclear: sum of singular values"),
        ("spectral", "nuc", "spectral: largest singular value"),
    ],
)
def test_a_norm_carries_its_dual_and_its_meaning(name, dual, meaning):
    """One home for what a norm is: the KKT check reads its dual, `svm` prints its meaning."""
    norm = Norm.parse(name)
    assert norm.dual == Norm(dual) and norm.meaning == meaning
    g = np.random.default_rng(2).standard_normal(16)
    assert dual_norm_value(g, norm.value) == norm_value(g, dual)
