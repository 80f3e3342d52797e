import math

import mpmath
import pytest
import torch

from attnbias.losses import LOSSES, get_loss, log_exponential_risk, log_risk, risk

EXTREME = torch.tensor([-1e6, -50.0, -1.0, 0.0, 1.0, 50.0, 1e6])


def test_logistic_is_stable_and_exact():
    value = LOSSES["logistic"](EXTREME)
    assert value[0] == 1e6 and value[-1] == 0.0
    for u, got in zip(EXTREME[1:-1].tolist(), value[1:-1].tolist()):
        assert got == pytest.approx(math.log1p(math.exp(-u)), rel=1e-14)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_derivatives_are_finite_and_match_autograd(name):
    loss = get_loss(name)
    u = EXTREME.clone().requires_grad_()
    (auto,) = torch.autograd.grad(loss(u[1:-1]).sum(), u)
    torch.testing.assert_close(loss.derivative(EXTREME)[1:-1], auto[1:-1], rtol=1e-13, atol=0)
    d = loss.derivative(EXTREME)
    assert not torch.isnan(d).any()
    if name != "exponential":  # e^{1e6} overflows by nature; its log form is below
        assert torch.isfinite(d).all()


def test_exponential_risk_in_log_space():
    u = torch.tensor([-1e6, -1e6 + 1.0, 3.0])
    expected = 1e6 + math.log((1 + math.exp(-1.0)) / 3)
    assert log_exponential_risk(u).item() == pytest.approx(expected, rel=1e-15)
    small = torch.tensor([0.5, 2.0])
    assert log_exponential_risk(small).item() == pytest.approx(math.log(risk(small, "exponential")))


def test_unknown_loss_is_named():
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("hinge")


@pytest.mark.parametrize("name", ["logistic", "exponential"])
def test_log_risk_is_exact_where_the_risk_underflows(name):
    """log((1/n) Σ ℓ(u_i)) against 60-digit arithmetic, from margins where the risk is
    ordinary to margins far past float64's range (the risk itself rounds to 0 from ~745)."""
    exact_loss = {"logistic": lambda u: mpmath.log1p(mpmath.exp(-u)), "exponential":
                  lambda u: mpmath.exp(-u)}[name]  # fmt: skip
    with mpmath.workdps(60):
        for margins in ([0.5, 2.0, -1.0], [30.0, 40.0, 35.0], [800.0, 900.0, 1e4], [1e5, 1e5]):
            u = torch.tensor(margins, dtype=torch.float64)
            mean = mpmath.fsum(exact_loss(mpmath.mpf(m)) for m in margins) / len(margins)
            assert float(log_risk(u, name)) == pytest.approx(float(mpmath.log(mean)), rel=1e-14)
    assert float(risk(torch.tensor([800.0], dtype=torch.float64), name)) == 0.0  # why


def test_a_loss_of_both_signs_has_no_log_risk():
    with pytest.raises(ValueError, match="correlation loss takes both signs"):
        log_risk(torch.tensor([1.0]), "correlation")
