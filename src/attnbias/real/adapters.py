"""Data adapters of the real-data experiments: fixed random subsets of a data set's splits,
encoded for a model (tokens for the text models, pixels for the ViT), and the device a run
trains on."""

from __future__ import annotations

import numpy as np
import torch

from ..data.text import TEXT_DATASETS
from ..data.vision import IMAGE_DATASETS
from .minilm import encode
from .train import TensorData


def torch_device(name: str) -> torch.device:
    """The device a config's `device` names: "auto" is CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda': no CUDA device here; use --device cpu (or auto)")
    return torch.device(name)


def subset(n: int, size: int) -> np.ndarray:
    """Indices of a fixed random subset of `size` of n examples (all n, shuffled, if size is 0)."""
    order = np.random.default_rng(0).permutation(n)
    return order[:size] if size else order


def load_text(
    name: str, tokenizer, train_size: int, test_size: int, max_len: int, path: str | None = None
):
    """(train, test, classes) of a text dataset: train_size / test_size fixed random examples
    of each split (0: all), encoded to max_len tokens."""
    splits = TEXT_DATASETS[name](path)
    data = []
    for split, size in zip(splits, (train_size, test_size)):
        order = subset(len(split), size)
        texts = [split.texts[i] for i in order]
        data.append(encode(tokenizer, texts, split.labels[order], max_len))
    return data[0], data[1], splits[0].classes


def load_images(name: str, train_size: int, test_size: int):
    """(train, test, image side, number of classes) of an image dataset: train_size /
    test_size fixed random examples of each split (0: all), as pixel tensors."""
    splits = IMAGE_DATASETS[name]()
    data = []
    for split, size in zip(splits, (train_size, test_size)):
        order = subset(len(split), size)
        pixels = torch.from_numpy(split.images[order]).to(torch.get_default_dtype())
        data.append(TensorData({"pixels": pixels}, torch.from_numpy(split.labels[order])))
    return data[0], data[1], splits[0].images.shape[1], len(splits[0].classes)
