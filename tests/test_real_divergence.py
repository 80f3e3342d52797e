"""The real-data training loop records a diverged run as diverged (status DIVERGED, stored and
left out of the claims) instead of stopping the experiment when the optimiser refuses a
non-finite gradient."""

from types import SimpleNamespace

import torch

from attnbias.experiments.real_runs import run_status
from attnbias.real.train import TensorData, train
from attnbias.store import DIVERGED, FINISHED


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def forward(self, x):
        return SimpleNamespace(logits=self.layer(x))


def data(n=32):
    """Inputs with an infinite feature: a NaN loss and NaN gradients from the first step."""
    x = torch.randn(n, 4, generator=torch.Generator().manual_seed(0))
    x[:, 1] = torch.inf
    return TensorData({"x": x}, (x[:, 0] > 0).long())


def test_a_run_whose_gradient_becomes_non_finite_is_marked_diverged():
    torch.manual_seed(0)
    model = Linear()
    history = train(
        model, data(), None, {"name": "md", "p": 2.0, "lr": 0.1}, steps=50, batch_size=8,
        seed=0, progress=False,
    )  # fmt: skip
    assert history.diverged and len(history.train_loss) == 1
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())  # nothing stepped
    assert run_status(history.diverged, len(history.train_loss)) == {
        "status": DIVERGED,
        "diverged_at": len(history.train_loss),
    }
    assert run_status(False, 50) == {"status": FINISHED}
