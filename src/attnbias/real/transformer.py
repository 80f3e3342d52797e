"""A small encoder transformer with a [CLS] classification head: pre-LayerNorm by default, or
post-LayerNorm without biases and with dropout as in the MD paper's IMDb model.

Key, query and value are separate linear maps so their weights can be inspected one by one
(the MD paper's K, Q, V sparsity), and every layer can return its attention probabilities in
the Hugging Face layout (batch, heads, query, key) so one set of analysis tools fits both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ClassifierOutput:
    logits: torch.Tensor
    attentions: tuple[torch.Tensor, ...] | None = None


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, bias: bool = True):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads = heads
        self.query = nn.Linear(dim, dim, bias=bias)
        self.key = nn.Linear(dim, dim, bias=bias)
        self.value = nn.Linear(dim, dim, bias=bias)
        self.out = nn.Linear(dim, dim, bias=bias)

    def forward(self, x, pad_mask=None):
        """x: (B, T, dim); pad_mask: (B, T) bool, True at padding. Returns (output, probs)."""
        B, T, dim = x.shape
        q, k, v = (
            proj(x).view(B, T, self.heads, dim // self.heads).transpose(1, 2)
            for proj in (self.query, self.key, self.value)
        )
        scores = q @ k.transpose(-1, -2) / math.sqrt(dim // self.heads)
        if pad_mask is not None:
            scores = scores.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        probs = scores.softmax(dim=-1)
        mixed = (probs @ v).transpose(1, 2).reshape(B, T, dim)
        return self.out(mixed), probs


class Block(nn.Module):
    """post_norm: x ← LN(x + f(x)) (the original transformer), else x ← x + f(LN(x))."""

    def __init__(
        self,
        dim: int,
        heads: int,
        mlp_ratio: int = 4,
        post_norm: bool = False,
        bias: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.post_norm = post_norm
        self.norm1 = nn.LayerNorm(dim, bias=bias)
        self.attention = SelfAttention(dim, heads, bias)
        self.norm2 = nn.LayerNorm(dim, bias=bias)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim, bias=bias),
            nn.GELU(),
            nn.Linear(mlp_ratio * dim, dim, bias=bias),
        )
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad_mask=None):
        if self.post_norm:
            mixed, probs = self.attention(x, pad_mask)
            x = self.norm1(x + self.drop(mixed))
            return self.norm2(x + self.drop(self.mlp(x))), probs
        mixed, probs = self.attention(self.norm1(x), pad_mask)
        x = x + self.drop(mixed)
        return x + self.drop(self.mlp(self.norm2(x))), probs


class Encoder(nn.Module):
    """A stack of blocks over already-embedded tokens; the classifier reads position 0."""

    def __init__(
        self, dim: int, heads: int, layers: int, num_classes: int, mlp_ratio: int = 4, **block
    ):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio, **block) for _ in range(layers))
        # post-norm blocks end normalised already
        self.norm = nn.Identity() if block.get("post_norm") else nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes, bias=block.get("bias", True))

    def forward(self, x, pad_mask=None, output_attentions=False) -> ClassifierOutput:
        attentions = []
        for block in self.blocks:
            x, probs = block(x, pad_mask)
            attentions.append(probs)
        logits = self.head(self.norm(x[:, 0]))
        return ClassifierOutput(logits, tuple(attentions) if output_attentions else None)


class TextTransformer(nn.Module):
    """Token + learned position embeddings → Encoder; input_ids start with [CLS]. block:
    post_norm, bias, dropout (see Block; dropout also after the embeddings). init: "small"
    (init_weights) or "pytorch" (PyTorch's defaults: embeddings N(0, 1), linear layers uniform
    ±1/√fan_in, as the MD paper's model)."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        max_len: int = 64,
        mlp_ratio: int = 4,
        init: str = "small",
        **block,
    ):
        super().__init__()
        if init not in ("small", "pytorch"):
            raise ValueError(f'init must be "small" or "pytorch", got {init!r}')
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Parameter(torch.zeros(max_len, dim))
        self.drop = nn.Dropout(block.get("dropout", 0.0))
        self.encoder = Encoder(dim, heads, layers, num_classes, mlp_ratio, **block)
        if init == "small":
            self.apply(init_weights)
            nn.init.normal_(self.positions, std=0.02)
        else:  # an nn.Embedding of positions: N(0, 1), like the tokens
            nn.init.normal_(self.positions)

    def forward(self, input_ids, attention_mask=None, output_attentions=False):
        T = input_ids.shape[1]
        if T > self.positions.shape[0]:
            raise ValueError(f"sequence length {T} exceeds max_len {self.positions.shape[0]}")
        x = self.drop(self.tokens(input_ids) + self.positions[:T])
        pad_mask = None if attention_mask is None else attention_mask == 0
        return self.encoder(x, pad_mask, output_attentions)


def init_weights(module: nn.Module) -> None:
    """Small Gaussian weights, zero biases (BERT/GPT style). Nonzero weights matter for ℓp-MD:
    from w = 0 a step moves w by |ηg|^{1/(p−1)}, huge for p > 2 and negligible for p near 1."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def cross_entropy(output: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(output.logits, labels)
