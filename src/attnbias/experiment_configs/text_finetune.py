"""text-finetune: its config, the class its driver (experiments/text_finetune.py) runs with
(defaults: experiments/configs/text-finetune.toml)."""

from __future__ import annotations

from pydantic import Field

from ..config import Fraction, PositiveInt, choices
from ..data.text import TEXT_DATASETS
from .real import CompareConfig


class Config(CompareConfig):
    datasets: choices(*TEXT_DATASETS) = Field(description="sentiment datasets")
    max_len: PositiveInt = Field(description="tokens per text, incl. [CLS]/[SEP]")
    dropout: Fraction = Field(description="dropout of the pretrained model and the head")
