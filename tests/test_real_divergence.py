"""The real-data training loop records a diverged run as diverged (status DIVERGED, stored and
left out of the claims) instead of stopping the experiment when the optimiser refuses a
non-finite gradient."""

import torch

from attnbias.experiments.real_runs import status_fields
from attnbias.real.train import train
from attnbias.store import DIVERGED, FINISHED
from tiny_model import Tiny, tiny_data


def data():
    """Inputs with an infinite feature: a NaN loss and NaN gradients from the first step."""
    inputs = tiny_data(n=32, features=4)
    inputs.inputs["x"][:, 1] = torch.inf
    return inputs


def test_a_run_whose_gradient_becomes_non_finite_is_marked_diverged():
    torch.manual_seed(0)
    model = Tiny(features=4)
    history = train(
        model, data(), None, {"name": "md", "p": 2.0, "lr": 0.1}, steps=50, batch_size=8,
        seed=0, progress=False,
    )  # fmt: skip
    assert history.diverged and len(history.train_loss) == 1
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())  # nothing stepped
    assert status_fields(history.diverged, len(history.train_loss)) == {
        "status": DIVERGED,
        "diverged_at": len(history.train_loss),
    }
    assert status_fields(False, 50) == {"status": FINISHED}
