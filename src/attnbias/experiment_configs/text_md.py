"""text-md: its config, the class its driver (experiments/text_md.py) runs with
(defaults: experiments/configs/text-md.toml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..config import (
    Device,
    Flag,
    Fraction,
    NonNegativeInt,
    PositiveInt,
    Text,
    check_paired,
    numbers,
    real,
)
from ..data.text import TEXT_DATASETS
from .real import RealConfig


class Config(RealConfig):
    dataset: Literal[tuple(TEXT_DATASETS)] = Field(description="sentiment dataset")
    data_path: Text = Field(description="local copy of the dataset file ('': cache / fetch)")
    validation_share: real(gt=0, lt=1) = Field(
        description="share of the training groups (movies) carved out as validation"
    )
    validation_size: NonNegativeInt = Field(
        description="validation examples: a fixed random subset (0: all)"
    )
    ps: numbers(float, 1, strict=True) = Field(
        description="the p of each ℓp mirror descent compared"
    )
    lrs: numbers(float, 0, strict=True) = Field(
        description="per p, the centre of its learning-rate grid (mean loss)"
    )
    lr_search: numbers(float, 0, strict=True) = Field(
        description="multipliers of each p's centre rate: the grid each p's rate is chosen from"
    )
    lr_factor: real(gt=1) = Field(description="step past an edge of the grid")
    lr_extensions: NonNegativeInt = Field(
        description="how many times a grid may be extended past the edge its best rate is on"
    )
    normalize: Literal["per_tensor", "global", "none"] = Field(
        description="how mirror-descent steps are normalized"
    )
    protocol: Literal["budget", "target"] = Field(
        description="'budget': every run trains for `steps`, the claims judged there; "
        "'target': stop at target_train_accuracy (the paper's), a p whose run misses it is "
        "inconclusive"
    )
    target_train_accuracy: real(gt=0, le=1) = Field(
        description="with protocol 'target': stop when an epoch's train accuracy reaches this"
    )
    order_seeds: NonNegativeInt = Field(
        description="runs from the first seed's initial weights with other data orders (the "
        "paper's repeats)"
    )
    probe_size: PositiveInt = Field(description="held-out sentences of the key-word probe")
    max_len: PositiveInt = Field(description="tokens per text, incl. [CLS]/[SEP]")
    dim: PositiveInt = Field(description="model width")
    heads: PositiveInt = Field(description="attention heads per layer")
    layers: PositiveInt = Field(description="transformer blocks")
    mlp_ratio: PositiveInt = Field(description="MLP width / model width")
    post_norm: Flag = Field(
        description="post-LayerNorm blocks (the paper's) instead of pre-LayerNorm"
    )
    bias: Flag = Field(description="biases in the linear and LayerNorm layers")
    dropout: Fraction = Field(description="dropout after the embeddings, attention and MLP")
    init: Literal["pytorch", "small"] = Field(
        description="initial weights: PyTorch's defaults (the paper's) or N(0, 0.02²)"
    )
    device: Device = Field(description="where to train ('auto': CUDA when present)")
    bow_cs: numbers(float, 0, strict=True) = Field(
        description="inverse regularisation strengths C the bag-of-words baseline chooses from"
    )
    minilm_steps: PositiveInt = Field(description="fine-tuning steps of the MiniLM baseline")
    minilm_lr: real(gt=0) = Field(description="Adam learning rate of the MiniLM baseline")
    minilm_batch_size: PositiveInt = Field(description="minibatch size of the MiniLM baseline")
    minilm_eval_every: PositiveInt = Field(
        description="steps between the MiniLM baseline's evaluations"
    )

    @model_validator(mode="after")
    def _one_lr_per_p(self):
        check_paired(self, "lrs", "ps")
        return self
