"""The seed papers' own numbers that experiments compare with, in one place: the experiments'
tables and claim wordings and the claims register all read them from here."""

from __future__ import annotations

import math

# Where the claims register read what a paper says. The seed texts hold the NGD paper whole and
# the MD paper's abstract only; a row citing the MD paper's body, or the SVM paper (not a seed),
# says where it was read, and only quotes verbatim in the seed texts are marked so
# (tests/test_register_quotes.py checks them).
READ_MD = "read in the published MD paper, arXiv:2410.14581; the seed texts hold only its abstract"
READ_SVM = "read in the SVM paper, arXiv:2308.16898, which is not among the seed texts"

# MD paper (Julistiono, Tarzanagh, Azizan 2024), IMDb, 3 blocks and heads.
# Best test accuracy (%) per p: (mean, std).
MD_IMDB_ACCURACY = {1.1: (83.47, 0.09), 2.0: (81.66, 0.09), 3.0: (82.57, 0.10)}
# Min–max normalised last-layer [CLS] attention on the sentence's key word.
MD_IMDB_KEYWORD_ATTENTION = {1.1: 0.4387, 2.0: 0.3122}
# Entries with |w| above MD_IMDB_THRESHOLD in K, Q, V.
MD_IMDB_COUNTS = {
    1.1: {"K": 18206, "Q": 13964, "V": 7643},
    2.0: {"K": 27224, "Q": 14654, "V": 10127},
}
MD_IMDB_THRESHOLD = 0.06
# The paper's stopping rule: train until an epoch's train accuracy reaches this.
MD_IMDB_TARGET_TRAIN_ACCURACY = 0.995
# The RMS entry of the paper's K, Q, V at initialisation: PyTorch's default for its 384-wide
# layers, uniform on ±1/√384, whose RMS is 1/√(3·384) = 0.0295; 0.06 is 2.04 of these.
MD_IMDB_WIDTH = 384
MD_IMDB_INITIAL_RMS = 1.0 / math.sqrt(3 * MD_IMDB_WIDTH)


def accuracy_text(p: float) -> str:
    """ "83.47" for p = 1.1."""
    return f"{MD_IMDB_ACCURACY[p][0]:.2f}"


def counts_text(separator: str = "; ") -> str:
    """ "K 18,206 vs 27,224; Q 13,964 vs 14,654; V 7,643 vs 10,127" (ℓ1.1 vs ℓ2)."""
    lo, mid = MD_IMDB_COUNTS[1.1], MD_IMDB_COUNTS[2.0]
    return separator.join(f"{m} {lo[m]:,} vs {mid[m]:,}" for m in "KQV")


def keyword_text() -> str:
    """ "0.4387 vs 0.3122" (ℓ1.1 vs ℓ2)."""
    return f"{MD_IMDB_KEYWORD_ATTENTION[1.1]:g} vs {MD_IMDB_KEYWORD_ATTENTION[2.0]:g}"
