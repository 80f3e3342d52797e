import numpy as np
import pytest
import torch

torch.set_default_dtype(torch.float64)


@pytest.fixture(scope="module")
def one_thread():
    """Synthetic problems are tiny: thread hand-offs cost more than they save."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def random_problem(rng, n=5, T=4, d=3):
    """A small generic problem as float64 tensors (X, z, y, v)."""
    X = torch.as_tensor(rng.standard_normal((n, T, d)))
    z = torch.as_tensor(rng.standard_normal((n, d)))
    y = torch.as_tensor(rng.choice([-1.0, 1.0], size=n))
    v = torch.as_tensor(rng.standard_normal(d))
    return X, z, y, v
