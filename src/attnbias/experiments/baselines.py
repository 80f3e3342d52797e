"""Reference models for a text classification split: what accuracy the data allows, shown
beside the from-scratch transformers of text-md (docs/REAL_DATA.md#reference-models).

- `majority_class`: always the training split's most frequent class.
- `bag_of_words`: logistic regression on binary unigram counts (scikit-learn), its inverse
  regularisation C chosen on validation from a grid.
- `minilm`: the pretrained all-MiniLM-L6-v2 fine-tuned with Adam on the same training split
  for a small fixed budget, its checkpoint chosen on validation (one stored run).

Each is trained on the training split alone and chooses what it chooses on validation; test
is read for that choice only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..real.minilm import MiniLMClassifier
from ..real.records import history_table
from ..real.train import TensorData, seed_everything, train
from .real_runs import ValidationChooser, run_once, status_fields

MINILM = "all-MiniLM-L6-v2"


def accuracy(predicted, labels) -> float:
    """Share of predictions equal to the labels, in %."""
    return 100.0 * float(np.mean(np.asarray(predicted) == np.asarray(labels)))


def majority_class(train_labels, validation_labels, test_labels) -> dict:
    """The constant predictor of the training split's most frequent class (ties: the lower)."""
    counts = np.bincount(np.asarray(train_labels))
    majority = int(np.argmax(counts))
    return {
        "label": f"majority class ({majority})",
        "class": majority,
        "val_accuracy": accuracy(np.full(len(validation_labels), majority), validation_labels),
        "test_accuracy": accuracy(np.full(len(test_labels), majority), test_labels),
    }


def bag_of_words(texts: dict, cs: Sequence[float]) -> dict:
    """Logistic regression on binary unigram counts fitted on texts["train"] for each C in cs;
    the C with the highest validation accuracy (ties: the smaller C) is read on test. texts:
    split → (texts, labels). Says whether the chosen C lies strictly inside the grid."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    (train_x, train_y), (val_x, val_y), (test_x, test_y) = (
        texts[k] for k in ("train", "validation", "test")
    )
    vectorizer = CountVectorizer(binary=True)
    features = vectorizer.fit_transform(train_x)
    val_features, test_features = vectorizer.transform(val_x), vectorizer.transform(test_x)
    scores = {}
    models = {}
    for c in sorted(cs):
        model = LogisticRegression(C=c, max_iter=5000, solver="liblinear")
        model.fit(features, train_y)
        scores[c] = accuracy(model.predict(val_features), val_y)
        models[c] = model
    chosen = max(sorted(scores), key=lambda c: scores[c])  # ties: the first, smaller C
    return {
        "label": f"bag-of-words logistic regression (C = {chosen:g})",
        "C": chosen,
        "C_grid": sorted(scores),
        "C_interior": min(scores) < chosen < max(scores),
        "val_accuracy_by_C": {f"{c:g}": s for c, s in scores.items()},
        "vocabulary": len(vectorizer.vocabulary_),
        "val_accuracy": scores[chosen],
        "test_accuracy": accuracy(models[chosen].predict(test_features), test_y),
    }


def start_minilm(config, store, encoded: dict, n_classes: int, device):
    """The stored run of the pretrained MiniLM fine-tuned on encoded["train"] (Adam,
    config.minilm_* budget, no dropout), evaluated on validation and test every
    minilm_eval_every steps; the checkpoint with the best validation accuracy is read on test
    (`ValidationChooser`). On a cluster it starts training and is read later (`minilm`)."""
    train_data: TensorData = encoded["train"]
    validation, test = encoded["validation"], encoded["test"]
    seed = config.seed_list[0]
    run_config = {
        "experiment": config.experiment,
        "role": "reference",
        "model": MINILM,
        "dataset": config.dataset,
        "data": {"train_used": len(train_data), "validation_used": len(validation),
                 "test_used": len(test), "validation_share": config.validation_share},
        "max_len": config.max_len,
        "optimizer": {"name": "adam", "lr": config.minilm_lr},
        "steps": config.minilm_steps,
        "batch_size": config.minilm_batch_size,
        "eval_every": config.minilm_eval_every,
        "seed": seed,
    }  # fmt: skip

    def train_fn(checkpoints):
        chooser = ValidationChooser(validation, test, checkpoints, batch_size=64, device=device)
        seed_everything(seed)
        model = MiniLMClassifier(n_classes, dropout=0.0)
        history = train(
            model, train_data, None, run_config["optimizer"], steps=config.minilm_steps,
            batch_size=config.minilm_batch_size, seed=seed, eval_every=config.minilm_eval_every,
            checkpoint_dir=checkpoints, checkpoint_every=config.minilm_eval_every,
            extra_metrics=chooser, desc="text-md reference: MiniLM", device=device,
        )  # fmt: skip
        chosen, predicted = chooser.report(history)
        info = {
            "seconds": history.seconds,
            **status_fields(history.diverged, len(history.train_loss)),
            **chosen,
        }
        return history_table(history), {"test_predicted": predicted.astype(np.int8)}, info

    return run_once(store, run_config, train_fn)


def minilm(config, record) -> dict:
    """The MiniLM reference's numbers from its stored run (`start_minilm`)."""
    info = record.info
    return {
        "label": f"MiniLM fine-tuned ({config.minilm_steps} steps)",
        "run_key": record.key,
        "chosen_step": info.get("chosen_step"),
        "val_accuracy": 100.0 * info.get("chosen_val_accuracy", math.nan),
        "test_accuracy": 100.0 * info.get("chosen_test_accuracy", math.nan),
        "seconds": info.get("seconds"),
    }


def references(config, texts: dict, minilm_run) -> dict:
    """The three reference models on the split text-md trains on: name → its numbers (label,
    val_accuracy, test_accuracy in %), and "run_keys" (the stored MiniLM run, `start_minilm`)."""
    labels = {k: texts[k][1] for k in ("train", "validation", "test")}
    found = {
        "majority": majority_class(labels["train"], labels["validation"], labels["test"]),
        "bag_of_words": bag_of_words(texts, config.bow_cs),
        "minilm": minilm(config, minilm_run),
    }
    found["run_keys"] = [found["minilm"]["run_key"]]
    return found
