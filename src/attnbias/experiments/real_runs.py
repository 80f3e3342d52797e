"""What the real-data experiments share: their config fields, one stored run per training
(trained in-process, or as one task on the active Dask cluster), choosing a checkpoint on
validation and a learning rate from a grid that brackets it, the dataset × optimiser × seed
loop of text-finetune and vision, reading stored runs back, and the summary's totals."""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.compute as pc  # not loaded by `import pyarrow`
import torch
import torch.nn.functional as F

from ..engine.cluster import active_cluster, task_name
from ..experiment_configs.real import CompareConfig, RealConfig
from ..npz import load_npz
from ..real.adapters import torch_device
from ..real.records import history_table, layer_norms
from ..real.train import TensorData, checkpoint_directory, seed_everything, to_device, train
from ..store import (
    DIVERGED,
    FINISHED,
    CheckpointDirectory,
    ResultsStore,
    RunRecord,
    config_key,
    diverged_runs,
)


def use_threads(config: RealConfig) -> None:
    """Set torch's thread count if the config asks for one."""
    if config.threads:
        torch.set_num_threads(config.threads)


def status_fields(diverged: bool, steps_run: int) -> dict:
    """The info fields that mark a stored real-data run as finished or diverged (the store's
    one marker, RunRecord.status) and, if it diverged, at which step."""
    if diverged:
        return {"status": DIVERGED, "diverged_at": steps_run}
    return {"status": FINISHED}


def run_once(
    store: ResultsStore,
    run_config: dict,
    train_fn: Callable[..., tuple],
    data=None,
) -> RunRecord:
    """The stored run for run_config, training it first (train_fn(checkpoints) → (metrics,
    arrays, info), or train_fn(checkpoints, data) where a data set is given; checkpoints: the
    run's checkpoint directory in the store,
    ResultsStore.checkpoints) unless an intact finished run with that config is already in the
    store (the checkpoints are reached from the store's handles, never through a path).

    On the active Dask cluster (engine/cluster.py) the training is one task and the record
    returned is a RemoteRun, read from the store when first used: an experiment submits all
    its runs before it reads any. A large data set goes as `data`, sent to the workers once
    (`Cluster.shared`), never in train_fn, which goes with every task. A retried task resumes
    from the run's last checkpoint."""
    key = config_key(run_config)
    if not store.heal([key]):  # neither missing nor damaged (reported, then redone)
        return store.load(key)
    cluster = active_cluster()
    if cluster is None:
        return train_and_store(store.root, run_config, key, train_fn, data)
    # Workers may run elsewhere: an absolute path, no link resolved (the worker's store opens
    # the experiment directory, and the run's checkpoint directory in it, following none).
    root = store.directory.absolute()
    cluster.check_writable(root)
    shared = None if data is None else cluster.shared(data)
    future = cluster.submit(
        train_and_store, root, run_config, key, train_fn, shared, name=task_name("run", [key])
    )
    return RemoteRun(key, run_config, future)


def train_and_store(
    root: Path, run_config: dict, key: str, train_fn: Callable, data=None
) -> RunRecord:
    """Train one run (resuming from its checkpoints) and store it; its record. Also a task."""
    store = ResultsStore(root)
    checkpoints = store.checkpoints(key)
    if not store.has(key):  # a retried task whose earlier try stored it
        args = (checkpoints,) if data is None else (checkpoints, data)
        metrics, arrays, info = train_fn(*args)
        store.save(run_config, metrics, arrays, info, key=key)
    checkpoints.remove()  # the stored run supersedes them
    return store.load(key)


class RemoteRun:
    """A run being trained on the cluster: key and config at once, the rest of its RunRecord
    (metrics, arrays, info, status) once its task has finished."""

    def __init__(self, key: str, config: dict, future):
        self.key, self.config, self._future = key, config, future

    def __getattr__(self, name):
        if name.startswith("_"):  # not a RunRecord field (and no recursion while unpickling)
            raise AttributeError(name)
        record = self._future.result()
        self.__dict__.update(vars(record))  # resolved once; later reads are plain attributes
        return getattr(record, name)


# --- choosing a checkpoint on validation


@torch.no_grad()
def predict_classes(model, data: TensorData, batch_size: int = 256, device="cpu"):
    """(predicted class of each example, in data order; mean cross-entropy) in eval mode,
    without gradients. Texts go shortest first, as in train.evaluate: each batch is cut to
    its own longest, and an example's logits do not depend on its batch-mates."""
    was_training = model.training
    model.eval()
    order = data.shortest_first()
    if order is None:
        order = torch.arange(len(data))
    predicted = torch.empty(len(data), dtype=torch.int64)
    loss = 0.0
    for start in range(0, len(data), batch_size):
        index = order[start : start + batch_size]
        inputs, labels = to_device(data.batch(index), device)
        logits = model(**inputs).logits
        loss += float(F.cross_entropy(logits, labels, reduction="sum"))
        predicted[index] = logits.argmax(-1).cpu()
    model.train(was_training)
    return predicted.numpy(), loss / max(len(data), 1)


def chosen_evaluation(val_accuracy, val_loss) -> int:
    """The index of the evaluation a run reports: the highest validation accuracy, ties broken
    by the lower validation loss, then by the earlier evaluation. Nothing else is looked at
    (test never is)."""
    accuracy = np.nan_to_num(np.asarray(val_accuracy, dtype=np.float64), nan=-np.inf)
    loss = np.nan_to_num(np.asarray(val_loss, dtype=np.float64), nan=np.inf)
    if accuracy.size == 0:
        raise ValueError("no evaluation to choose from")
    return int(np.lexsort((np.arange(accuracy.size), loss, -accuracy))[0])


CHOSEN_FILE = "chosen.npz"


class ValidationChooser:
    """A train(extra_metrics=...) callback (the run is trained with test_data=None): at every
    evaluation it scores the validation and the test set (val_/test_ loss and accuracy) and
    keeps the test predictions of the evaluation chosen so far on validation alone
    (`chosen_evaluation`'s order): the checkpoint the run reports. With a directory (the run's
    checkpoint directory, as train's checkpoint_dir takes it) they are kept in chosen.npz there
    too, so a resumed run still has them."""

    def __init__(self, validation: TensorData, test: TensorData, directory=None,
                 batch_size: int = 256, device="cpu"):  # fmt: skip
        self.validation, self.test = validation, test
        self.directory = None if directory is None else checkpoint_directory(directory)
        self.batch_size, self.device = batch_size, device
        self.chosen = {"val_accuracy": -math.inf, "val_loss": math.inf, "test_predicted": None}
        if self.directory is not None:
            self.chosen = self.read() or self.chosen

    def __call__(self, model) -> dict[str, float]:
        val, val_loss = predict_classes(model, self.validation, self.batch_size, self.device)
        test, test_loss = predict_classes(model, self.test, self.batch_size, self.device)
        row = {
            "val_loss": val_loss,
            "val_accuracy": float(np.mean(val == self.validation.labels.numpy())),
            "test_loss": test_loss,
            "test_accuracy": float(np.mean(test == self.test.labels.numpy())),
        }
        best = self.chosen
        if (row["val_accuracy"], -row["val_loss"]) > (best["val_accuracy"], -best["val_loss"]):
            self.chosen = {"val_accuracy": row["val_accuracy"], "val_loss": val_loss,
                           "test_predicted": test}  # fmt: skip
            if self.directory is not None:
                self.write()
        return row

    def write(self) -> None:
        """chosen.npz in the directory, atomically (CheckpointDirectory.write)."""
        arrays = {k: np.asarray(v) for k, v in self.chosen.items()}
        self.directory.write(CHOSEN_FILE, writer=lambda f: np.savez(f, **arrays))

    def read(self) -> dict | None:
        """The chosen state a resumed run left in the directory (None: none), its bytes read
        from the directory's handle without following a link, at most those of this test
        set's; ValueError if it is not one this class writes for this test set."""
        path = self.directory.path / CHOSEN_FILE
        limit = 64 * len(self.test) + 10**6
        try:
            data = self.directory.read(CHOSEN_FILE, limit)
        except OSError as err:
            raise ValueError(
                f"{path} cannot be read ({err.strerror or err}; a symbolic link is never "
                "followed): remove it"
            ) from err
        if data is None:
            return None
        arrays = load_npz(path, limit, "removing the file", io.BytesIO(data))
        predicted = arrays.get("test_predicted")
        if set(arrays) != {"val_accuracy", "val_loss", "test_predicted"} or (
            predicted.shape != (len(self.test),)
        ):
            raise ValueError(f"{path} is not the chosen checkpoint of this run: remove it")
        return {"val_accuracy": float(arrays["val_accuracy"]),
                "val_loss": float(arrays["val_loss"]), "test_predicted": predicted}  # fmt: skip

    def report(self, history) -> dict:
        """The chosen evaluation of a finished run: its step, validation and test numbers (from
        the run's curves) and the test predictions there. ValueError if the curves and the
        kept predictions disagree (a resumed run whose replay differed)."""
        table = history.eval_table()
        k = chosen_evaluation(table["val_accuracy"], table["val_loss"])
        if (table["val_accuracy"][k], table["val_loss"][k]) != (
            self.chosen["val_accuracy"],
            self.chosen["val_loss"],
        ):
            raise ValueError("the kept test predictions are not those of the chosen checkpoint")
        row = {name: float(values[k]) for name, values in table.items()}
        return {
            "chosen_step": int(row.pop("step")),
            **{f"chosen_{name}": value for name, value in row.items()},
            "best_test_accuracy_unselected": float(np.max(table["test_accuracy"])),
        }, self.chosen["test_predicted"]


# --- choosing a learning rate from a grid that brackets it


@dataclass
class RateSearch:
    """A learning rate chosen from the rates tried (rate → score, higher better): `interior`
    when the chosen one has a tried rate on each side, so the grid brackets it."""

    scores: dict[float, tuple] = field(default_factory=dict)
    run_keys: list[str] = field(default_factory=list)  # the stored runs that scored them
    seed: int | None = None  # the seed its runs trained from (None: not recorded)

    @property
    def chosen(self) -> float:
        """The best score; ties go to the smaller rate."""
        return max(sorted(self.scores), key=lambda rate: self.scores[rate])

    @property
    def tried(self) -> list[float]:
        return sorted(self.scores)

    @property
    def interior(self) -> bool:
        return bool(self.scores) and min(self.scores) < self.chosen < max(self.scores)

    def beyond(self, factor: float) -> list[float]:
        """The rates one step of `factor` past the edge the chosen rate sits on (none if it is
        inside)."""
        chosen, tried = self.chosen, self.tried
        out = [tried[0] / factor] if chosen == tried[0] else []
        return out + ([tried[-1] * factor] if chosen == tried[-1] else [])

    def summary(self) -> dict:
        return {"tried": self.tried, "chosen": self.chosen, "interior": self.interior,
                "scores": {f"{r:g}": list(s) for r, s in sorted(self.scores.items())},
                **({"seed": self.seed} if self.seed is not None else {})}  # fmt: skip


def rounded_rate(value: float) -> float:
    """A learning rate rounded to 12 significant digits (0.1 × 3 is 0.3 in a run's key)."""
    return float(f"{value:.12g}")


def search_rates(
    grids: Mapping[Hashable, list[float]],
    score: Callable[[dict[Hashable, list[float]]], dict[Hashable, dict[float, tuple]]],
    factor: float,
    extensions: int,
) -> dict[Hashable, RateSearch]:
    """For each key, a rate chosen from its grid, extended by `factor` past an edge where the
    best rate sits on it, at most `extensions` times. score(pending) trains the pending rates
    of every key together (on a cluster, side by side) and returns their scores (tuples,
    higher better). ValueError if every rate of a key scored -inf (diverged)."""
    searches = {key: RateSearch() for key in grids}
    pending = {key: [rounded_rate(r) for r in grid] for key, grid in grids.items()}
    for round_ in range(extensions + 1):
        for key, scores in score(pending).items():
            searches[key].scores.update(scores)
        if round_ == extensions:
            break
        pending = {key: [rounded_rate(r) for r in s.beyond(factor)] for key, s in searches.items()}
        pending = {key: rates for key, rates in pending.items() if rates}
        if not pending:
            break
    for key, search in searches.items():
        if search.scores[search.chosen][0] == -math.inf:
            raise ValueError(
                f"{key}: every learning rate tried diverged ({search.tried}); lower them"
            )
    return searches


# --- the loop of the experiments that compare optimisers on one model


@dataclass
class Loaded:
    """A data set ready to train on, and how to build the model for it."""

    train: TensorData
    test: TensorData
    make_model: Callable[[], torch.nn.Module]


def train_compared(
    checkpoints: CheckpointDirectory,
    loaded: Loaded,
    run_config: dict,
    desc: str,
    device="cpu",
    **options,
):
    """Train loaded.make_model() (built after seeding with the run's seed, then moved to
    device) on loaded.train, testing on loaded.test, with the run's optimizer, tracking layer
    norms: the (metrics, arrays, info) a stored run holds. options go to train()."""
    seed_everything(run_config["seed"])
    model = loaded.make_model().to(device)  # before layer_norms keeps its starting weights
    history = train(
        model, loaded.train, loaded.test, run_config["optimizer"],
        steps=run_config["steps"], batch_size=run_config["batch_size"],
        seed=run_config["seed"], eval_every=run_config["eval_every"], device=device,
        checkpoint_dir=checkpoints, extra_metrics=layer_norms(model), desc=desc, **options,
    )  # fmt: skip
    info = {"seconds": history.seconds, **status_fields(history.diverged, len(history.train_loss))}
    return history_table(history), {}, info


def rate_field(table: Mapping) -> str:
    """The step-size field of an [[optimizers]] table: "lr", or SPS's cap "lr_max"."""
    return "lr_max" if "lr_max" in table else "lr"


def tail_score(record) -> tuple[float]:
    """A search run's score (higher better): minus its mean train loss over the last quarter
    of its steps; -inf if it diverged."""
    if record.status == DIVERGED:
        return (-math.inf,)
    loss = series(record, "train_loss")[1]
    value = float(np.mean(loss[-max(1, len(loss) // 4) :]))
    return (-value,) if math.isfinite(value) else (-math.inf,)


def train_grid(
    config: CompareConfig,
    out: Path,
    load: Callable[[str], Loaded],
    run_fields: dict,
    desc: str,
    **options,
) -> tuple[dict[tuple[str, str, int], RunRecord], dict[tuple[str, str], RateSearch]]:
    """Every (dataset, optimiser, seed) run of the config, trained or found in out's store:
    (records[(dataset, optimiser label, seed)], searches[(dataset, optimiser label)]).

    Per dataset, each optimiser's rate (its table's lr, or lr_max for SPS) is first chosen by
    `search_rates`: the table's rate × each of `rate_grid`, extended by `rate_factor` past an
    edge, each trained from the first seed (`selection_seed`, which the claims then leave out:
    compare.arms) for `search_steps` steps and scored by its final train loss (`tail_score`:
    the claims are about training speed). load(dataset) gives the data and the model (on a
    cluster, sent to each worker once); run_fields are the experiment's
    own fields of each run's config (its store key; the device is not in it: a run is the
    same run wherever it trained, and its info.json's provenance says where); options go to
    train(), with the config's device."""
    records, searches = {}, {}
    options = {"device": torch_device(config.device), **options}
    for dataset in config.datasets:
        grid = OptimizerGrid(config, out, dataset, load(dataset), run_fields, desc, options)
        found = search_rates(grid.grids(), grid.score, config.rate_factor, config.rate_extensions)
        for k, label in enumerate(grid.labels):
            found[k].run_keys = grid.search_keys[k]
            found[k].seed = config.selection_seed
            searches[(dataset, label)] = found[k]
            for seed in config.seed_list:
                records[(dataset, label, seed)] = grid.run(
                    k, found[k].chosen, seed, config.steps, config.eval_every
                )
    return records, searches


class OptimizerGrid:
    """The runs of one dataset of `train_grid`: optimiser k at a given rate and seed."""

    def __init__(self, config, out, dataset, loaded: Loaded, run_fields, desc, options):
        self.config, self.dataset, self.loaded = config, dataset, loaded
        self.run_fields, self.desc, self.options = run_fields, desc, options
        self.store = ResultsStore(out)
        self.tables = config.as_written("optimizers")  # as written: the runs are keyed by them
        self.labels = [o.name for o in config.optimizers]
        self.search_keys = {k: [] for k in range(len(self.tables))}

    def grids(self) -> dict[int, list[float]]:
        """Optimiser index → the rates its search starts from."""
        return {k: [t[rate_field(t)] * m for m in self.config.rate_grid]
                for k, t in enumerate(self.tables)}  # fmt: skip

    def run(self, k: int, value: float, seed: int, steps: int, eval_every: int, role: str = ""):
        config, loaded = self.config, self.loaded
        table = {**self.tables[k], rate_field(self.tables[k]): value}
        run_config = {
            "experiment": config.experiment,
            "dataset": self.dataset,
            "optimizer": table,
            "seed": seed,
            "train_size": len(loaded.train),
            "test_size": len(loaded.test),
            "steps": steps,
            "batch_size": config.batch_size,
            "eval_every": eval_every,
            **({"role": role} if role else {}),
            **self.run_fields,
        }
        shown = f"{self.desc} {role or 'run'} {self.dataset} {self.labels[k]} seed={seed}"

        # no closure over the data: it goes to a cluster once, as run_once's data
        train_fn = functools.partial(train_compared, run_config=run_config, desc=shown,
                                     **self.options)  # fmt: skip
        return run_once(self.store, run_config, train_fn, self.loaded)

    def score(self, pending: dict[int, list[float]]) -> dict[int, dict[float, tuple]]:
        """Train the pending rates from the first seed for search_steps (all started before any
        is read: on a cluster, side by side) and score them (`tail_score`)."""
        first, steps = self.config.selection_seed, self.config.search_steps
        started = {(k, r): self.run(k, r, first, steps, steps, "search")
                   for k, rates in pending.items() for r in rates}  # fmt: skip
        for (k, _), record in started.items():
            self.search_keys[k].append(record.key)
        return {k: {r: tail_score(started[(k, r)]) for r in rates} for k, rates in pending.items()}


# --- reading stored runs back


def series(record: RunRecord, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of one metric of a stored run."""
    table = record.metrics.filter(pc.equal(record.metrics["metric"], metric))
    return table["step"].to_numpy(), table["value"].to_numpy()


def mean_std(curves: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std over runs, truncated to the shortest (a diverged run stops early)."""
    n = min(len(c) for c in curves)
    stacked = np.stack([np.asarray(c[:n], dtype=float) for c in curves])
    return stacked.mean(0), stacked.std(0)


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average (minibatch losses are noisy)."""
    if window <= 1 or len(values) < window:
        return np.asarray(values, dtype=float)
    c = np.cumsum(np.insert(np.asarray(values, dtype=float), 0, 0.0))
    head = c[1:window] / np.arange(1, window)
    return np.concatenate([head, (c[window:] - c[:-window]) / window])


def run_totals(records: dict) -> dict:
    """Number of runs, their total training time and the diverged ones, for the summary, and
    the keys of the stored runs (for the publication's manifest)."""
    seconds = sum(r.info.get("seconds", 0.0) for r in records.values())
    return {
        "runs": len(records),
        "seconds": round(seconds, 1),
        "diverged": diverged_runs(records.values()),
        "run_keys": [r.key for r in records.values()],
    }


def search_totals(records: dict, searches: dict) -> dict:
    """`run_totals` of the runs, with the search runs' keys listed too (a publication names
    every run it was made from) and counted."""
    keys = [k for search in searches.values() for k in search.run_keys]
    totals = run_totals(records)
    return {**totals, "search_runs": len(keys), "run_keys": totals["run_keys"] + keys}


def fmt(mean: float, std: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {std:.{digits}f}"
