"""The one training loop for every real model, and the optimiser factory.

Minibatches come from a per-epoch permutation seeded by (seed, epoch), so the batch at any step
is known without replaying the run: a run resumed from a checkpoint (model, optimiser, RNG
state and history, written atomically every `checkpoint_every` steps) continues exactly as
if it had never stopped.

Checkpoints hold only tensors and plain values (the history as a dict of lists), so they are
loaded with torch.load(weights_only=True): a planted checkpoint can fail to load, never run
code. They are read and written through a handle of their directory opened afresh at each use
(store.CheckpointDirectory), never through a symbolic link, and read only up to the bytes a
checkpoint of the run can take (docs/SECURITY.md).
"""

from __future__ import annotations

import dataclasses
import io
import logging
import math
import os
import pickle
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..log import Progress
from ..optim.algorithm import Algorithm
from ..optim.registry import TABLE_NAMES
from ..store import CheckpointDirectory, FileTooLarge, UnsafeCheckpoint

logger = logging.getLogger(__name__)

# The names an optimizer table may give (the one vocabulary: optim.registry.TABLE_NAMES).
OPTIMIZERS = TABLE_NAMES


def make_optimizer(params, config: Mapping | Algorithm) -> torch.optim.Optimizer:
    """An optimiser from a config: {"name": "md", "lr": 0.1, "p": 1.1}, {"name": "sgd", ...}
    (`Algorithm.from_optimizer_table`; ValueError naming a bad field), or an Algorithm."""
    if not isinstance(config, Algorithm):
        config = Algorithm.from_optimizer_table(config)
    return config.torch_optimizer(params)


def optimizer_label(config: Mapping) -> str:
    """Short display name: SGD, Adam, SNGD, SPS, ℓ1.1-MD."""
    return Algorithm.from_optimizer_table(config).name


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

    def shortest_first(self) -> torch.Tensor | None:
        """The example indices by length, shortest first (stable; None without an attention
        mask): batches of similar lengths, which `batch` cuts to their own longest."""
        mask = self.inputs.get("attention_mask")
        return None if mask is None else mask.sum(1).argsort(stable=True)

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

    def to_state(self) -> dict:
        """The history as plain values (dicts, lists, numbers): a checkpoint's "history"."""
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state) -> History:
        """The history a checkpoint's to_state() holds; ValueError if it is not one."""
        fields = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(state, dict) or set(state) != fields:
            raise ValueError(f"a training history has the fields {sorted(fields)}")
        return cls(**state)


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


@torch.inference_mode()
def evaluate(
    model: nn.Module, data: TensorData, batch_size: int = 256, device="cpu"
) -> dict[str, float]:
    """Mean cross-entropy and accuracy, without gradients, in eval mode. Texts go shortest
    first, so each batch is cut to a length near its texts' own (TensorData.batch); an
    example's logits do not depend on its batch-mates (per-example results, if ever kept,
    must be put back in data order)."""
    was_training = model.training
    model.eval()
    loss, correct = 0.0, 0
    order = data.shortest_first()
    for start in range(0, len(data), batch_size):
        index = slice(start, start + batch_size)
        inputs, labels = to_device(data.batch(index if order is None else order[index]), device)
        logits = model(**inputs).logits
        loss += float(F.cross_entropy(logits, labels, reduction="sum"))
        correct += int((logits.argmax(-1) == labels).sum())
    model.train(was_training)
    return {"loss": loss / len(data), "accuracy": correct / len(data)}


LAST_CHECKPOINT = "last.pt"


def checkpoint_directory(directory) -> CheckpointDirectory:
    """A run's checkpoint directory: `directory` if it is a CheckpointDirectory (a results
    store's, ResultsStore.checkpoints), else the directory of your own at that path
    (CheckpointDirectory.at: its last component is never a symbolic link)."""
    if isinstance(directory, CheckpointDirectory):
        return directory
    return CheckpointDirectory.at(directory)


def checkpoint_file(where) -> tuple[CheckpointDirectory, str]:
    """(directory, file name) of a checkpoint given as a checkpoint directory (its
    LAST_CHECKPOINT) or as a file's path."""
    if isinstance(where, CheckpointDirectory):
        return where, LAST_CHECKPOINT
    return CheckpointDirectory.at(Path(where).parent), Path(where).name


def save_checkpoint(where, state: dict) -> None:
    """Write a checkpoint atomically (a kill mid-write leaves the previous one intact) into
    `where` (a checkpoint directory: its LAST_CHECKPOINT, or a file's path), through a fresh
    temporary file made from the directory's handle: never through a link someone put there,
    nor into a directory that replaced it (UnsafeCheckpoint)."""
    directory, name = checkpoint_file(where)
    directory.write(name, writer=lambda f: torch.save(state, f))


# A checkpoint holds the model, the optimiser's state (at most two tensors per parameter
# here: θ and w, or Adam's moments), the RNG state and the history: a multiple of the model's
# size, with room for a long history.
CHECKPOINT_MODEL_COPIES = 4
CHECKPOINT_SLACK_BYTES = 256 * 10**6
MAX_CHECKPOINT_BYTES = 8 * 10**9  # where the caller gives no model to size it by


def checkpoint_bytes(model: nn.Module) -> int:
    """The largest checkpoint a run of `model` writes (what load_checkpoint reads at most)."""
    state = model.state_dict().values()
    size = sum(t.numel() * t.element_size() for t in state if isinstance(t, torch.Tensor))
    return CHECKPOINT_MODEL_COPIES * size + CHECKPOINT_SLACK_BYTES


def size_problem(data: bytes, max_bytes: int) -> str | None:
    """Why the checkpoint `data` (a file's bytes) is too large to load (its size, and the sizes
    its zip archive declares for its members once unpacked), or None."""
    limit = f"more than the {max_bytes:,} a checkpoint of this run can take"
    if len(data) > max_bytes:
        return f"it takes {len(data):,} bytes, {limit}"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        return f"it is not the zip archive torch.save writes ({err})"
    if unpacked > max_bytes:
        return f"it unpacks to {unpacked:,} bytes, {limit}"
    return None


def load_checkpoint(where, device, max_bytes: int = MAX_CHECKPOINT_BYTES) -> dict | None:
    """The checkpoint save_checkpoint wrote into `where` (a checkpoint directory, or a file's
    path), or None if there is none. Its bytes are read from a regular file opened from the
    directory's handle without following a symbolic link, at most max_bytes of them, and
    loaded with weights_only=True (tensors and plain values only: nothing in it can run code)
    once the sizes its archive declares are found within max_bytes too; UnsafeCheckpoint for
    anything else."""
    directory, name = checkpoint_file(where)
    path = directory.path / name
    try:
        data = directory.read(name, max_bytes)
    except FileTooLarge as err:
        limit = f"more than the {max_bytes:,} a checkpoint of this run can take"
        raise UnsafeCheckpoint(
            f"checkpoint {path} was not loaded: it takes {err.size:,} bytes, {limit}; remove it"
        ) from err
    except OSError as err:
        raise UnsafeCheckpoint(
            f"checkpoint {path} cannot be opened ({err.strerror or err}; a symbolic link is "
            "never followed, only a regular file is read): remove it to train this run from "
            "the start"
        ) from err
    if data is None:
        return None
    problem = size_problem(data, max_bytes)
    if problem is not None:
        raise UnsafeCheckpoint(f"checkpoint {path} was not loaded: {problem}; remove it")
    try:
        state = torch.load(io.BytesIO(data), weights_only=True, map_location=device)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnsafeCheckpoint(
            f"checkpoint {path} is not a checkpoint this version writes and was not loaded "
            f"(it holds more than tensors and plain values: {reason}); remove it to train "
            "this run from the start"
        ) from err
    if not isinstance(state, dict) or not CHECKPOINT_KEYS <= state.keys():
        raise UnsafeCheckpoint(f"checkpoint {path} lacks {sorted(CHECKPOINT_KEYS)}: remove it")
    return state


CHECKPOINT_KEYS = {"model", "optimizer", "step", "rng", "history"}


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
    checkpoint_dir: str | os.PathLike | CheckpointDirectory | None = None,
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
    end, and training resumes from the latest checkpoint there (a path, or a results store's
    ResultsStore.checkpoints(key): see checkpoint_directory). device: where the model and
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
    checkpoints = None
    if checkpoint_dir:
        checkpoints = checkpoint_directory(checkpoint_dir)
        state = load_checkpoint(checkpoints, device, checkpoint_bytes(model))
        if state is not None:
            try:
                model.load_state_dict(state["model"])
                opt.load_state_dict(state["optimizer"])
                torch.set_rng_state(state["rng"])
                history, step = History.from_state(state["history"]), int(state["step"])
            except (KeyError, TypeError, ValueError, RuntimeError) as err:
                raise UnsafeCheckpoint(
                    f"checkpoint {checkpoints.path / LAST_CHECKPOINT} does not fit this run "
                    f"({err}); remove it to train this run from the start"
                ) from err

    def record_eval():
        row = {"step": step}
        if test_data is not None:
            scores = evaluate(model, test_data, eval_batch_size, device)
            row.update({f"test_{k}": v for k, v in scores.items()})
        if extra_metrics is not None:
            row.update(extra_metrics(model))
        history.evals.append(row)

    def save():
        if checkpoints is not None:
            state = dict(model=model.state_dict(), optimizer=opt.state_dict(), step=step)
            state.update(rng=torch.get_rng_state(), history=history.to_state())
            save_checkpoint(checkpoints, state)

    if step == 0:
        record_eval()
    model.train()
    bar = Progress(desc, steps, initial=step, enabled=progress, leave=False, logger=logger)
    while step < steps and not history.diverged and not history.reached_target:
        inputs, labels = to_device(
            train_data.batch(batch_indices(len(train_data), batch_size, seed, step)), device
        )
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(**inputs).logits
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        try:
            opt.step(lambda loss=loss: loss)  # the closure only hands SPS the loss computed
            stepped = True
        except FloatingPointError:  # a non-finite gradient: the optimiser changed nothing
            stepped = False
        history.seconds += time.perf_counter() - start
        step += 1
        history.steps.append(step)
        history.train_loss.append(loss.item())
        history.step_size.append(opt.param_groups[0].get("step_size", math.nan))
        history.diverged = not (stepped and math.isfinite(history.train_loss[-1]))
        history.epoch_correct += int((logits.detach().argmax(-1) == labels).sum())
        if step % per_epoch == 0:
            accuracy = history.epoch_correct / (per_epoch * batch_size)
            history.epochs.append({"step": step, "train_accuracy": accuracy})
            history.epoch_correct = 0
            history.reached_target = (
                target_train_accuracy is not None and accuracy >= target_train_accuracy
            )
        bar.set_postfix(f"loss {history.train_loss[-1]:.3f}")
        bar.update()
        done = step == steps or history.diverged or history.reached_target
        if step % eval_every == 0 or done:
            record_eval()
        if step % checkpoint_every == 0 or done:
            save()
    bar.close()
    return history
