"""A small encoder transformer with a [CLS] classification head: pre-LayerNorm by default, or
post-LayerNorm without biases and with dropout as in the MD paper's IMDb model.

Key, query and value are separate linear maps so their weights can be inspected one by one
(the MD paper's K, Q, V sparsity), and every layer can return its attention probabilities in
the Hugging Face layout (batch, heads, query, key) so one set of analysis tools fits both.

The text model computes its logits on the rows that matter only (`Packing`: the real tokens,
and in the last block each sequence's [CLS] alone), with dropout masks drawn as for the whole
padded batch: the padded model's output up to the order of floating-point sums, at a fraction
of its cost (docs/REAL_DATA.md, "Where a text-md step goes"). Asking for the attention maps
runs the padded layout.
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


@dataclass(frozen=True)
class Packing:
    """The rows of a padded (B, T) batch that a classifier reading position 0 needs: every
    real token, and each sequence's position 0 (its [CLS]; kept even if it were padding, since
    the padded model reads it). Padding is masked as a key, so it never enters these rows'
    states: running the per-token layers (projections, MLP, LayerNorm) on them alone gives the
    padded model's output, at the cost of the real tokens instead of B·T.

    rows: flat indices b·T + t of those rows, ascending (N of them); cls: the position in rows
    of each sequence's position 0; pad_mask: (B, T), True at padding (None: no padding)."""

    shape: tuple[int, int]
    rows: torch.Tensor
    cls: torch.Tensor
    pad_mask: torch.Tensor | None

    @classmethod
    def of(cls, pad_mask: torch.Tensor | None, shape: tuple[int, int], device) -> Packing:
        B, T = shape
        if pad_mask is None or not bool(pad_mask.any()):
            rows = torch.arange(B * T, device=device)
            return cls(shape, rows, torch.arange(0, B * T, T, device=device), None)
        computed = ~pad_mask
        computed[:, 0] = True
        per_sequence = computed.sum(1)
        rows = computed.reshape(-1).nonzero().squeeze(1)
        return cls(shape, rows, per_sequence.cumsum(0) - per_sequence, pad_mask)

    @property
    def dense(self) -> bool:
        """Whether every position is a row (no padding): the two layouts then coincide."""
        return self.pad_mask is None

    def padded(self, x: torch.Tensor) -> torch.Tensor:
        """(N, dim) rows → (B·T, dim), zeros at the positions that are not rows."""
        if self.dense:
            return x
        B, T = self.shape
        return x.new_zeros(B * T, x.shape[-1]).index_copy(0, self.rows, x)

    def packed(self, x: torch.Tensor) -> torch.Tensor:
        """(B·T, dim) → the (N, dim) rows."""
        return x if self.dense else x.index_select(0, self.rows)

    def dropout(self, drop: nn.Dropout, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """`drop` as the padded model applies it to a whole (B, T, dim) tensor, read at `rows`
        (flat indices; x holds those rows): the mask is drawn for all B·T positions, so the
        generator advances alike and each row gets the very factor the padded model's gets.

        On the CPU, F.dropout keeps an entry where a uniform double u — one 64-bit draw per
        entry, in order — is below 1 − p (bernoulli_), and multiplies it by 1/(1 − p) computed
        in x's dtype. Drawing the u (torch.rand, the same draws) costs half of bernoulli_, and
        only the rows' are compared. Elsewhere (CUDA's fused dropout draws differently), the
        mask is `drop` itself applied to ones of the padded shape."""
        p = drop.p
        if not drop.training or p == 0 or x.numel() == 0:
            return x
        B, T = self.shape
        shape = (B * T, x.shape[-1])
        whole = rows.numel() == B * T
        if x.device.type == "cpu" and p < 1:
            u = torch.rand(shape, dtype=torch.float64)
            keep = (u if whole else u.index_select(0, rows)) < 1 - p
            scale = torch.ones((), dtype=x.dtype).div_(1 - p)  # as F.dropout's noise.div_
            return x * torch.where(keep, scale, 0)
        scale = drop(x.new_ones(shape))  # 0 or 1/(1 − p): F.dropout's own mask
        return x * (scale if whole else scale.index_select(0, rows))


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
        mixed, probs = attend(q, k, v, key_bias(pad_mask, x.dtype))
        return self.out(mixed.transpose(1, 2).reshape(B, T, dim)), probs

    def forward_rows(self, x, packing: Packing, queries=None):
        """The output at the rows of a packed batch (see Packing): x (N, dim) holds the states
        of packing.rows. queries: None (every row's output, (N, dim)), or indices into x of the
        only rows whose output is wanted (those outputs, in that order; each sequence's row 0
        for packing.cls). Keys and values are every row's; padding never is one."""
        B, T = packing.shape
        dim = x.shape[-1]
        heads, head_dim = self.heads, dim // self.heads

        def by_head(t, length):
            return t.view(B, length, heads, head_dim).transpose(1, 2)

        k, v = (by_head(packing.padded(proj(x)), T) for proj in (self.key, self.value))
        if queries is None:
            q = by_head(packing.padded(self.query(x)), T)
        else:
            q = by_head(self.query(x.index_select(0, queries)), 1)
        mixed, _ = attend(q, k, v, key_bias(packing.pad_mask, x.dtype))
        mixed = mixed.transpose(1, 2).reshape(-1, dim)
        return self.out(mixed if queries is not None else packing.packed(mixed))


def key_bias(pad_mask, dtype) -> torch.Tensor | None:
    """(B, 1, 1, T): −inf at padded keys, 0 elsewhere (None without padding), added to the
    scores: what masking them to −inf does to finite scores."""
    if pad_mask is None:
        return None
    bias = torch.zeros(pad_mask.shape, dtype=dtype, device=pad_mask.device)
    return bias.masked_fill_(pad_mask, float("-inf"))[:, None, None, :]


def attend(q, k, v, bias=None):
    """softmax(q kᵀ/√d + bias) v over (B, heads, ·, d) tensors; returns (mixed, probs). The
    scale and the bias go into the product itself (baddbmm), saving a division and a masked
    fill, each a pass over the scores forward and backward. Scaling by 1/√d equals dividing by
    √d exactly when √d is a power of two (d = 4, 16, 64, …), else to within one ulp."""
    B, heads, Tq, d = q.shape
    T = k.shape[2]
    q3, k3 = q.reshape(B * heads, Tq, d), k.reshape(B * heads, T, d)
    if bias is None:
        scores = torch.bmm(q3, k3.transpose(1, 2)).mul_(1.0 / math.sqrt(d))
    else:
        start = bias.expand(B, heads, 1, T).reshape(B * heads, 1, T)  # broadcast over queries
        scores = torch.baddbmm(start, q3, k3.transpose(1, 2), alpha=1.0 / math.sqrt(d))
    probs = scores.softmax(dim=-1).view(B, heads, Tq, T)
    return probs @ v, probs


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
        return self.residuals(x, lambda h: self.attention(h, pad_mask), lambda t: t, self.drop)

    def forward_rows(self, x, packing: Packing, queries=None):
        """The block on the rows of a packed batch (SelfAttention.forward_rows): (output rows,
        None). Dropout draws the mask of the whole padded batch (Packing.dropout)."""
        rows = packing.rows if queries is None else packing.rows.index_select(0, queries)
        return self.residuals(
            x,
            lambda h: (self.attention.forward_rows(h, packing, queries), None),
            (lambda t: t) if queries is None else (lambda t: t.index_select(0, queries)),
            lambda t: packing.dropout(self.drop, t, rows),
        )

    def residuals(self, x, attention, select, drop):
        """The block's residual structure, written once for both layouts: attention(h) →
        (mixed at the query rows, probs); select(x): x at the query rows; drop: dropout."""
        if self.post_norm:
            mixed, probs = attention(x)
            x = self.norm1(select(x) + drop(mixed))
            return self.norm2(x + drop(self.mlp(x))), probs
        mixed, probs = attention(self.norm1(x))
        x = select(x) + drop(mixed)
        return x + drop(self.mlp(self.norm2(x))), probs


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

    def forward_rows(self, x, packing: Packing) -> torch.Tensor:
        """The logits from the rows of a packed batch, x (N, dim) holding packing.rows' states.
        Only position 0 is read out, so the last block computes its query, mixing and MLP for
        each sequence's row 0 alone (its keys and values still for every row)."""
        *inner, last = self.blocks
        for block in inner:
            x, _ = block.forward_rows(x, packing)
        x, _ = last.forward_rows(x, packing, queries=packing.cls)
        return self.head(self.norm(x))


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
        B, T = input_ids.shape
        if T > self.positions.shape[0]:
            raise ValueError(f"sequence length {T} exceeds max_len {self.positions.shape[0]}")
        pad_mask = None if attention_mask is None else attention_mask == 0
        if output_attentions:  # every position's attention map: the padded layout
            x = self.drop(self.tokens(input_ids) + self.positions[:T])
            return self.encoder(x, pad_mask, output_attentions)
        packing = Packing.of(pad_mask, (B, T), input_ids.device)
        rows = packing.rows
        x = self.tokens(input_ids.reshape(-1).index_select(0, rows))
        x = packing.dropout(self.drop, x + self.positions.index_select(0, rows % T), rows)
        return ClassifierOutput(self.encoder.forward_rows(x, packing))


def init_weights(module: nn.Module) -> None:
    """Small Gaussian weights, zero biases (BERT/GPT style). Nonzero weights matter for ℓp-MD:
    from w = 0 a step moves w by |ηg|^{1/(p−1)}, huge for p > 2 and negligible for p near 1."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def cross_entropy(output: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(output.logits, labels)
