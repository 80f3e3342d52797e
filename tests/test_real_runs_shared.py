"""A real-data run's data set goes to a Dask cluster once (Cluster.shared), never inside the
function each task carries: vision's tasks were 186 MiB each, and the client kept every one
until its result was read (230 runs: 20 GB, and the kernel killed it)."""

from __future__ import annotations

import functools
import gc
import weakref

import pytest
import torch

from attnbias.engine.cluster import Cluster
from attnbias.experiment_registry import load_config
from attnbias.experiments import real_runs, text_md
from attnbias.experiments.real_runs import Loaded, OptimizerGrid
from attnbias.real.train import TensorData
from attnbias.store import ResultsStore

cloudpickle = pytest.importorskip("cloudpickle")  # what distributed pickles tasks with

BIG = 5_000_000  # entries: 20 MB of float32 pixels, 40 MB of int64 tokens


def submitted_task(monkeypatch, module, make_run) -> tuple:
    """(run_config, train_fn, data) that make_run() hands to run_once."""
    calls = []
    monkeypatch.setattr(module, "run_once", lambda *args: calls.append(args))
    make_run()
    (_, run_config, train_fn, data), *_ = calls
    return run_config, train_fn, data


def test_a_vision_task_carries_no_images(monkeypatch, tmp_path):
    config = load_config("vision", quick=True)
    images = TensorData({"pixels": torch.ones(BIG)}, torch.zeros(1, dtype=torch.int64))
    loaded = Loaded(images, images, functools.partial(torch.nn.Linear, 1, 1))
    grid = OptimizerGrid(config, tmp_path, "mnist", loaded, {}, "test", {"device": "cpu"})
    run_config, train_fn, data = submitted_task(
        monkeypatch, real_runs, lambda: grid.run(0, 0.1, seed=1, steps=3, eval_every=3)
    )
    assert data is loaded
    assert len(cloudpickle.dumps((run_config, train_fn))) < 20_000
    assert len(cloudpickle.dumps(data)) > 4 * BIG  # what each task used to carry


def test_a_text_md_task_carries_no_corpus(monkeypatch, tmp_path):
    config = load_config("text-md", quick=True)
    tokens = TensorData({"input_ids": torch.ones(BIG, dtype=torch.int64)}, torch.zeros(1))
    run_data = text_md.RunData((tokens,) * 3, 10, 2, None)
    counts = {"train_used": 1, "validation_used": 1, "test_used": 1}
    maker = text_md.RunMaker(config, ResultsStore(tmp_path), counts, run_data, "cpu")
    run_config, train_fn, data = submitted_task(
        monkeypatch, text_md, lambda: maker.run(2.0, 0.1, 1, 1)
    )
    assert data is run_data
    assert len(cloudpickle.dumps((run_config, train_fn))) < 50_000


class Future:
    """A stand-in for a distributed Future: the scheduler keeps the data while one lives."""

    def __init__(self, number: int):
        self.number = number


class FakeClient:
    def __init__(self):
        self.scattered = []  # the names of the values' types (not the values: kept alive)

    def scatter(self, values, broadcast, hash):
        assert broadcast and not hash  # every worker; a fresh key whatever the value
        self.scattered.append(type(values[0]).__name__)
        return [Future(len(self.scattered))]


def test_a_value_is_scattered_once_and_released_with_the_callers():
    cluster = Cluster(FakeClient())
    data = Loaded(None, None, None)
    future = cluster.shared(data)
    assert cluster.shared(data) is future and future.number == 1
    other = Loaded(None, None, None)  # equal, but another data set
    assert cluster.shared(other).number == 2
    released = weakref.ref(future)
    del data, other, future
    gc.collect()
    assert released() is None  # the cluster no longer holds the data's future
    kept = (1, 2)  # a tuple takes no weak reference: held while the cluster is
    assert cluster.shared(kept) is cluster.shared(kept)
    assert cluster.client.scattered == ["Loaded", "Loaded", "tuple"]
