"""Attention analysis for any model that returns attention maps the Hugging Face way
(`model(**inputs, output_attentions=True).attentions`: one (batch, heads, query, key) tensor per
layer) — our own models and, e.g., a BertModel loaded with attn_implementation="eager"."""

from __future__ import annotations

import torch


@torch.no_grad()
def attention_maps(model, inputs: dict) -> tuple[torch.Tensor, ...]:
    """Every layer's attention probabilities, (batch, heads, query, key), in eval mode."""
    was_training = model.training
    model.eval()
    try:
        out = model(**inputs, output_attentions=True)
    finally:
        model.train(was_training)
    attentions = getattr(out, "attentions", None)
    if not attentions or attentions[0] is None:
        raise ValueError(
            "the model returned no attention maps; Hugging Face models need "
            "attn_implementation='eager' (fused SDPA/flash attention never forms them)"
        )
    return tuple(attentions)


def token_mass(attentions, token_mask: torch.Tensor, query: int = 0) -> torch.Tensor:
    """(layers, heads): mean over the batch of the attention that query position `query` (0 =
    [CLS]) puts on the tokens where token_mask (batch, key) is True — the selected-token
    softmax mass."""
    mask = token_mask.to(attentions[0].dtype)
    return torch.stack([(a[:, :, query, :] * mask[:, None, :]).sum(-1).mean(0) for a in attentions])


def attention_sparsity(attentions, attention_mask: torch.Tensor | None = None) -> dict:
    """Per (layer, head), averaged over the batch and the real (non-padding) query rows:
    "entropy": entropy of a row divided by log(number of real keys) — 1 uniform, 0 one-hot;
    "sparsity": 1 − entropy; "max_weight": the largest attention weight in a row."""
    B, _, T, _ = attentions[0].shape
    if attention_mask is None:
        attention_mask = torch.ones(B, T)
    real = attention_mask.to(attentions[0].dtype)  # (B, T)
    n_keys = real.sum(1).clamp(min=2.0)  # log(1) = 0: a one-token row is trivially one-hot
    row_weight = real / real.sum()  # average over real query rows of the whole batch
    entropy, max_weight = [], []
    for a in attentions:
        h = -(a * torch.log(a.clamp(min=1e-30))).sum(-1) / torch.log(n_keys)[:, None, None]
        entropy.append((h * row_weight[:, None, :]).sum((0, 2)))
        max_weight.append((a.amax(-1) * row_weight[:, None, :]).sum((0, 2)))
    entropy = torch.stack(entropy)
    return {"entropy": entropy, "sparsity": 1 - entropy, "max_weight": torch.stack(max_weight)}


def uniform_mass(token_mask: torch.Tensor, attention_mask: torch.Tensor) -> float:
    """The token mass a uniform attention over the real tokens would give (the chance level)."""
    share = token_mask.sum(1).double() / attention_mask.sum(1).double()
    return float(share.mean())


def keyword_attention(attentions, word_mask: torch.Tensor, attention_mask: torch.Tensor) -> dict:
    """The MD paper's key-word attention: in the last layer, the [CLS] query's attention row
    averaged over heads, min–max normalised over the sentence's real tokens ([CLS] and [SEP]
    included); the key word's value (word_mask: one True per row), averaged over sentences.

    Also: "raw", the unnormalised head-mean attention on the word; "chance_raw", 1/(real
    tokens), what uniform attention would give it; "chance_normalised", the mean normalised
    value of all real tokens (what a token picked at random gets); "flat_rows", rows whose
    attention is constant (min–max undefined; left out of the normalised means)."""
    if not bool((word_mask.sum(1) == 1).all()):
        raise ValueError("word_mask must mark exactly one token per row")
    row = attentions[-1][:, :, 0, :].double().mean(1)  # (batch, key)
    real = attention_mask.bool()
    low = torch.where(real, row, torch.inf).amin(1, keepdim=True)
    high = torch.where(real, row, -torch.inf).amax(1, keepdim=True)
    spread = (high - low).squeeze(1)
    varied = spread > 0
    normalised = (row - low) / torch.where(spread > 0, spread, 1.0)[:, None]
    word = word_mask.to(row.dtype)
    n_real = real.sum(1).double()
    mean_normalised = (normalised * real).sum(1) / n_real
    return {
        "normalised": float((normalised * word).sum(1)[varied].mean()),
        "raw": float((row * word).sum(1).mean()),
        "chance_normalised": float(mean_normalised[varied].mean()),
        "chance_raw": float((1.0 / n_real).mean()),
        "sentences": len(row),
        "flat_rows": int((~varied).sum()),
    }
