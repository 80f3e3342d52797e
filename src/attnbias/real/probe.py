"""A probe set for token selection: short sentences whose sentiment rests on one word.

Each probe fills the slot of a neutral carrier sentence with one sentiment adjective, so the
label is the word's polarity and every other token is uninformative. The adjectives are common
in the Rotten Tomatoes training split (each appears ≥ 17 times there), so a model trained on it
has seen them. A model that selects the sentiment-bearing token puts much of its final [CLS]
attention on that word; uniform attention would put (word tokens / sentence tokens) there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

POSITIVE = (
    "great", "excellent", "wonderful", "brilliant", "delightful",
    "beautiful", "charming", "enjoyable", "terrific", "funny",
)  # fmt: skip
NEGATIVE = (
    "boring", "dull", "bad", "tedious", "stupid",
    "bland", "awful", "mediocre", "lame", "silly",
)  # fmt: skip
TEMPLATES = (
    "the film is {} .",
    "it is a {} movie about a family .",
    "the story and the cast are {} .",
    "a {} picture from the director of last year 's hit .",
    "this was a {} two hours at the theater .",
    "overall , the sequel is {} .",
)


@dataclass
class Probe:
    texts: list[str]
    words: list[str]
    labels: torch.Tensor  # 1 positive, 0 negative
    input_ids: torch.Tensor  # (n, T), [CLS] … [SEP] then padding
    attention_mask: torch.Tensor  # (n, T)
    word_mask: torch.Tensor  # (n, T) bool: the sentiment word's sub-word tokens

    @property
    def inputs(self) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask}


def build_probe(tokenizer, positive_label: int = 1, negative_label: int = 0) -> Probe:
    """Every template × every word, tokenised piecewise so the word's positions are exact."""

    def pieces(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"] if text.strip() else []

    rows, texts, words, labels = [], [], [], []
    for template in TEMPLATES:
        before, after = template.split("{}")
        for word, label in [(w, positive_label) for w in POSITIVE] + [
            (w, negative_label) for w in NEGATIVE
        ]:
            head, middle = [tokenizer.cls_token_id, *pieces(before)], pieces(word)
            ids = head + middle + [*pieces(after), tokenizer.sep_token_id]
            rows.append((ids, range(len(head), len(head) + len(middle))))
            texts.append(template.format(word))
            words.append(word)
            labels.append(label)
    return Probe(texts, words, torch.tensor(labels), *padded(rows, tokenizer.pad_token_id))


def lexicon_probe(
    tokenizer, texts, labels, lexicon, size: int, max_len: int, known=None
) -> tuple[Probe, dict]:
    """(probe, stats): the first `size` of `texts` (held-out sentences, in their given order)
    that contain exactly one word of `lexicon` — that word a single tokenizer token, within
    the first max_len − 2 tokens, and (if `known`, a set of token ids, is given) one of those
    — with the word marked in word_mask. Nothing is hand-picked: the lexicon and the split
    decide. stats counts the texts scanned and kept."""
    rows, kept_texts, words, kept_labels = [], [], [], []
    scanned = 0
    for text, label in zip(texts, labels):
        if len(rows) == size:
            break
        scanned += 1
        pieces = tokenizer.tokenize(text)
        spans = []  # (word, first piece, pieces) of each whole word
        for i, piece in enumerate(pieces):
            if piece.startswith("##") and spans:
                word, first, n = spans[-1]
                spans[-1] = (word + piece[2:], first, n + 1)
            else:
                spans.append((piece, i, 1))
        hits = [(word, first, n) for word, first, n in spans if word in lexicon]
        if len(hits) != 1 or hits[0][2] != 1 or hits[0][1] >= max_len - 2:
            continue
        word, position, _ = hits[0]
        if known is not None and tokenizer.convert_tokens_to_ids(word) not in known:
            continue  # a word never seen in training has no trained embedding
        ids = [tokenizer.cls_token_id, *tokenizer.convert_tokens_to_ids(pieces[: max_len - 2])]
        rows.append(([*ids, tokenizer.sep_token_id], position + 1))
        kept_texts.append(text)
        words.append(word)
        kept_labels.append(int(label))
    if len(rows) < size:
        raise ValueError(
            f"probe_size {size}: only {len(rows)} of {scanned} held-out texts have exactly one "
            "single-token lexicon word; lower probe_size or use a larger test split"
        )
    probe = Probe(
        kept_texts, words, torch.tensor(kept_labels), *padded(rows, tokenizer.pad_token_id)
    )
    return probe, {"sentences": len(rows), "scanned": scanned, "distinct_words": len(set(words))}


def padded(rows, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, word_mask) of token rows (ids, positions of the word: an
    index or a range), right-padded to the longest."""
    T = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    attention_mask = torch.zeros(len(rows), T, dtype=torch.long)
    word_mask = torch.zeros(len(rows), T, dtype=torch.bool)
    for i, (ids, positions) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention_mask[i, : len(ids)] = 1
        word_mask[i, list(positions) if isinstance(positions, range) else positions] = True
    return input_ids, attention_mask, word_mask
