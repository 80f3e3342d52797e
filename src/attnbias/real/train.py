"""The one training loop for every real model, and the optimiser factory.

Minibatches come from a per-epoch permutation seeded by (seed, epoch), so the batch at any step
is known without replaying the run: a run resumed from a checkpoint (model, optimiser, RNG
state and history, written atomically every `checkpoint_every` steps) continues exactly as
if it had never stopped.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from ..optim import MirrorDescent, NormalizedGD, PolyakStep

# name → (constructor, allowed hyper-parameters, required ones)
OPTIMIZERS = {
    "sgd": (torch.optim.SGD, {"lr", "momentum", "weight_decay"}, {"lr"}),
    "adam": (torch.optim.Adam, {"lr", "betas", "eps", "weight_decay"}, {"lr"}),
    "sngd": (NormalizedGD, {"lr", "momentum", "norm"}, {"lr"}),
    "sps": (PolyakStep, {"lr_max", "f_star", "c"}, {"lr_max"}),
    "md": (MirrorDescent, {"lr", "p", "normalize"}, {"lr", "p"}),
}


def make_optimizer(params, config: Mapping) -> torch.optim.Optimizer:
    """An optimiser from a config: {"name": "md", "lr": 0.1, "p": 1.1}, {"name": "sgd", ...}."""
    config = dict(config)
    name = config.pop("name", None)
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer.name must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    cls, allowed, required = OPTIMIZERS[name]
    if unknown := set(config) - allowed:
        raise ValueError(
            f"optimizer {name!r} has no field(s) {sorted(unknown)}; allowed {sorted(allowed)}"
        )
    if missing := required - set(config):
        raise ValueError(f"optimizer {name!r} needs field(s) {sorted(missing)}")
    if "betas" in config:
        config["betas"] = tuple(config["betas"])
    return cls(params, **config)


def optimizer_label(config: Mapping) -> str:
    """Short display name: SGD, Adam, SNGD, SPS, ℓ1.1-MD."""
    name = config["name"]
    if name == "md":
        return f"ℓ{config['p']:g}-MD"
    return {"sgd": "SGD", "adam": "Adam", "sngd": "SNGD", "sps": "SPS"}[name]


def seed_everything(seed: int) -> None:
    """Seed the generator a model's initialisation draws from."""
    torch.manual_seed(seed)


@dataclass
class TensorData:
    """Model inputs (keyword tensors sharing their first dimension) and labels."""

    inputs: dict[str, torch.Tensor]
    labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.labels)

    def batch(self, index) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        inputs = {k: v[index] for k, v in self.inputs.items()}
        mask = inputs.get("attention_mask")
        if mask is not None:  # drop columns that are padding in every row: short batches cost less
            width = max(int(mask.sum(1).max()), 1)
            inputs = {k: v[:, :width] if v.dim() == 2 else v for k, v in inputs.items()}
        return inputs, self.labels[index]

    def subset(self, n: int) -> TensorData:
        return TensorData({k: v[:n] for k, v in self.inputs.items()}, self.labels[:n])


@dataclass
class History:
    steps: list[int] = field(default_factory=list)  # step after which train_loss was measured
    train_loss: list[float] = field(default_factory=list)
    step_size: list[float] = field(default_factory=list)  # SPS's η_t (NaN for the others)
    evals: list[dict] = field(default_factory=list)  # {"step": s, metric: value, ...}
    seconds: float = 0.0  # training wall time (evaluation excluded)
    diverged: bool = False
    # Per finished epoch: {"step": s, "train_accuracy": share of that epoch's minibatch examples
    # classified right, in training mode, as they were trained on}.
    epochs: list[dict] = field(default_factory=list)
    epoch_correct: int = 0  # tally of the epoch under way (kept in checkpoints)
    reached_target: bool = False  # stopped because an epoch reached the target train accuracy

    def eval_table(self) -> dict[str, np.ndarray]:
        """Evaluations as columns: {"step": [...], metric: [...]}."""
        keys = self.evals[0].keys() if self.evals else ["step"]
        return {k: np.array([e[k] for e in self.evals], dtype=float) for k in keys}


def batch_indices(n: int, batch_size: int, seed: int, step: int) -> torch.Tensor:
    """Indices of the batch at `step` (0-based): epoch = step // batches_per_epoch, each epoch
    a fresh permutation seeded by (seed, epoch); the incomplete last batch is dropped."""
    per_epoch = n // batch_size
    if per_epoch == 0:
        raise ValueError(f"batch_size {batch_size} exceeds the training set size {n}")
    epoch, j = divmod(step, per_epoch)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100_003 + epoch))
    return perm[j * batch_size : (j + 1) * batch_size]


def to_device(batch: tuple[dict, torch.Tensor], device) -> tuple[dict, torch.Tensor]:
    inputs, labels = batch
    return {k: v.to(device) for k, v in inputs.items()}, labels.to(device)


@torch.no_grad()
def evaluate(
    model: nn.Module, data: TensorData, batch_size: int = 256, device="cpu"
) -> dict[str, float]:
    """Mean cross-entropy and accuracy, without gradients, in eval mode."""
    was_training = model.training
    model.eval()
    loss, correct = 0.0, 0
    for start in range(0, len(data), batch_size):
        inputs, labels = to_device(data.batch(slice(start, start + batch_size)), device)
        logits = model(**inputs).logits
        loss += float(F.cross_entropy(logits, labels, reduction="sum"))
        correct += int((logits.argmax(-1) == labels).sum())
    model.train(was_training)
    return {"loss": loss / len(data), "accuracy": correct / len(data)}


def save_checkpoint(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    torch.save(state, partial)
    os.replace(partial, path)  # atomic: a kill mid-write leaves the previous checkpoint intact


def train(
    model: nn.Module,
    train_data: TensorData,
    test_data: TensorData | None,
    optimizer: Mapping,
    *,
    steps: int,
    batch_size: int,
    seed: int,
    eval_every: int | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    extra_metrics: Callable[[nn.Module], Mapping[str, float]] | None = None,
    eval_batch_size: int = 256,
    progress: bool = True,  # a bar on terminals only
    desc: str = "train",
    device: str | torch.device = "cpu",
    target_train_accuracy: float | None = None,
) -> History:
    """Train `model` on cross-entropy for `steps` minibatch steps (a cap, with a target).

    optimizer: a make_optimizer config. Every `eval_every` steps (default: one epoch) and at the
    end, the test loss/accuracy and `extra_metrics(model)` are recorded (step 0 too). With a
    checkpoint_dir, state is saved every `checkpoint_every` steps (default: one epoch) and at the
    end, and training resumes from the latest checkpoint there. device: where the model and
    each batch go (the data stay where they are). target_train_accuracy: stop at the end of the
    first epoch whose minibatches were classified at least this well (history.reached_target);
    `steps` is then only the cap.
    """
    per_epoch = len(train_data) // batch_size
    eval_every = eval_every or per_epoch
    checkpoint_every = checkpoint_every or per_epoch
    model.to(device)
    opt = make_optimizer(model.parameters(), optimizer)
    history, step = History(), 0
    checkpoint = Path(checkpoint_dir) / "last.pt" if checkpoint_dir else None
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        history, step = state["history"], state["step"]

    def record_eval():
        row = {"step": step}
        if test_data is not None:
            scores = evaluate(model, test_data, eval_batch_size, device)
            row.update({f"test_{k}": v for k, v in scores.items()})
        if extra_metrics is not None:
            row.update(extra_metrics(model))
        history.evals.append(row)

    def save():
        if checkpoint is not None:
            state = dict(model=model.state_dict(), optimizer=opt.state_dict(), step=step)
            save_checkpoint(checkpoint, dict(state, rng=torch.get_rng_state(), history=history))

    if step == 0:
        record_eval()
    model.train()
    bar = tqdm(
        total=steps, initial=step, desc=desc, disable=None if progress else True, leave=False
    )
    while step < steps and not history.diverged and not history.reached_target:
        inputs, labels = to_device(
            train_data.batch(batch_indices(len(train_data), batch_size, seed, step)), device
        )
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(**inputs).logits
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        opt.step(lambda loss=loss: loss)  # the closure only hands SPS the loss already computed
        history.seconds += time.perf_counter() - start
        step += 1
        history.steps.append(step)
        history.train_loss.append(loss.item())
        history.step_size.append(opt.param_groups[0].get("step_size", math.nan))
        history.diverged = not math.isfinite(history.train_loss[-1])
        history.epoch_correct += int((logits.detach().argmax(-1) == labels).sum())
        if step % per_epoch == 0:
            accuracy = history.epoch_correct / (per_epoch * batch_size)
            history.epochs.append({"step": step, "train_accuracy": accuracy})
            history.epoch_correct = 0
            history.reached_target = (
                target_train_accuracy is not None and accuracy >= target_train_accuracy
            )
        bar.update()
        bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}")
        done = step == steps or history.diverged or history.reached_target
        if step % eval_every == 0 or done:
            record_eval()
        if step % checkpoint_every == 0 or done:
            save()
    bar.close()
    return history
