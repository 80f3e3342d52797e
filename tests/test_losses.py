import math

import pytest
import torch

from attnbias.losses import LOSSES, get_loss, log_exponential_risk, risk

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
