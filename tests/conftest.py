import os

# One BLAS/OpenMP thread unless the caller says otherwise (set before numpy and torch load): the
# tests solve tiny problems, and on a busy two-core machine OpenBLAS's threads made the SDP tests
# up to 8x slower.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnbias.data.fetch import DataMissingError  # noqa: E402
from attnbias.data.vision import check_image_dataset  # noqa: E402

torch.set_default_dtype(torch.float64)

FASHION_MNIST_SKIP = (
    "needs Debian's Fashion-MNIST: sudo apt-get install dataset-fashion-mnist "
    "(or set ATTNBIAS_FASHION_MNIST to a directory holding its IDX files)"
)


def fashion_mnist_missing() -> str | None:
    """Why tests marked `fashion_mnist` skip here, or None when the data set is installed."""
    try:
        check_image_dataset("fashion_mnist")
    except DataMissingError:
        return FASHION_MNIST_SKIP
    return None


def pytest_runtest_setup(item):
    if item.get_closest_marker("fashion_mnist") and (reason := fashion_mnist_missing()):
        pytest.skip(reason)


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


@pytest.fixture
def float32_one_thread():
    """Real models run in float32 (float64 is the default here, for the maths tests), on one
    thread as the experiments do (small models are slower with two on a busy machine)."""
    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)
    yield
    torch.set_default_dtype(dtype)
    torch.set_num_threads(threads)
