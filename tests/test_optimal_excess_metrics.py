"""reexamine-polyak's speed metrics in forms float64 does not round to 0 (issue 29, referee
point 4): L − L* over the optimal tokens ("excess/opt") and the other tokens' softmax mass
("rest/opt"), taken from those tokens' own scores (`engine.measure.optimal_token_measures`).
Where the loss minus L* and 1 − the optimal tokens' score are accurate they agree; where those
round to 0 (a logit gap past ~37) these stay positive down to ~1e-308. Only runs that ask for
them (`RunSpec.optimal_excess`) record them and change their store key, so other experiments'
stored runs stay valid."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbias.data import example1
from attnbias.engine import Algorithm, RunSpec
from attnbias.engine.measure import optimal_token_measures
from attnbias.experiment_registry import load_config
from attnbias.experiments import ngd_fixed, tuning_sweep
from attnbias.judging.verdicts import ngd
from attnbias.losses import get_loss
from attnbias.model import attention_scores, predict

# where the naive forms are accurate (values ≥ 1e-5, ~1e-11 relative rounding), they agree
AGREEMENT_RTOL = 1e-8


def problem_tensors():
    problem = example1(4, 4, 16, seed=3)
    X, z, y, v = (torch.as_tensor(a, dtype=torch.float64) for a in
                  (problem.X, problem.z, problem.y, problem.v))  # fmt: skip
    opt = torch.as_tensor(problem.opt)
    return X, z, y, v, opt


def w_mm_direction(X, z, y, v, opt):
    """A W that puts the optimal tokens ahead on every sample: the optimal tokens' outer
    products with z, less the others' (so its logit gaps grow with its scale)."""
    W = torch.zeros(X.shape[-1], X.shape[-1], dtype=torch.float64)
    for i in range(X.shape[0]):
        for t in range(X.shape[1]):
            sign = 1.0 if t == int(opt[i]) else -1.0 / (X.shape[1] - 1)
            W += sign * torch.outer(X[i, t], z[i])
    return W / W.norm()


@pytest.mark.parametrize("scale", [1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3])
def test_excess_and_rest_agree_with_the_naive_forms_and_stay_positive_where_those_round(scale):
    """Up to a logit gap of ~30 (scale 30) both naive forms are accurate and agree; at scale
    100 they keep a few digits; from 300 on 1 − score is 0 (and the loss difference is noise
    of L*'s rounding), while these are ~e^−gap (1e-38 at 300, 1e-123 at 1,000)."""
    X, z, y, v, opt = problem_tensors()
    W = scale * w_mm_direction(X, z, y, v, opt)
    excess, rest = optimal_token_measures(W, v, X, z, y, opt, "logistic")
    loss = get_loss("logistic")
    naive_excess = (loss.value(y * predict(W, v, X, z)).mean()
                    - loss.value(y * (X[torch.arange(4), opt] @ v)).mean())  # fmt: skip
    naive_rest = 1.0 - attention_scores(W, X, z)[torch.arange(4), opt].mean()
    if scale <= 30.0:
        assert float(excess) == pytest.approx(float(naive_excess), rel=AGREEMENT_RTOL)
        assert float(rest) == pytest.approx(float(naive_rest), rel=AGREEMENT_RTOL)
    if scale >= 300.0:
        assert float(naive_rest) == 0.0
        assert 0.0 < float(excess) < float(rest) < 1e-37  # ℓ' ≤ 1 and γ gaps below 1


def spec(optimal_excess) -> RunSpec:
    rng = np.random.default_rng(0)
    init = {"W": 0.1 * rng.standard_normal((16, 16))}
    return RunSpec({}, example1(4, 4, 16, seed=1), Algorithm("NGD", "ngd", 0.1), 10, init,
                   optimal_excess=optimal_excess)  # fmt: skip


def test_only_runs_that_ask_for_the_scale_safe_metrics_change_their_store_key():
    plain, safe = spec(False), spec(True)
    assert "measures" not in plain.record  # other experiments' stored runs keep their keys
    assert safe.record["measures"] == ["excess/opt", "rest/opt"] and safe.key != plain.key
    assert safe.structure != plain.structure  # never measured in one batch
    with pytest.raises(TypeError, match="optimal_excess must be a bool"):
        spec("yes")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="optimal_excess needs a fixed head"):
        RunSpec({}, example1(4, 4, 16, seed=1), Algorithm("NGD", "ngd", 0.1), 10,
                {"W": rng.standard_normal((16, 16)), "v": rng.standard_normal(16)},
                optimal_excess=True)  # fmt: skip


def test_reexamine_polyaks_runs_record_and_are_judged_on_the_scale_safe_metrics(tmp_path):
    config = load_config("reexamine-polyak", quick=True, overrides={
        "seeds": 2, "steps": 12, "selection_seeds": 1, "rate_extensions": 0,
        "confirmation_seeds": 0, "caps": [1e2, 1e4]})  # fmt: skip
    _, groups, tuned = tuning_sweep.tuned_sweep(
        config, tmp_path, lambda *a: ngd_fixed.specs(*a, optimal_excess=True),
        ngd.SCALE_SAFE_METRICS, [a.name for a in config.algorithms],
    )  # fmt: skip
    for c in groups.values():
        assert {"excess/opt", "rest/opt"} <= set(c.values)
        assert (c.values["rest/opt"] > 0).all() and (c.values["excess/opt"] > 0).all()
    assert all(tuned.step_label("NGD", m).startswith("η = ") for m in ngd.SCALE_SAFE_METRICS)
