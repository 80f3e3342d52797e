"""A real-data run's checkpoints in a results root shared with a hostile co-user (issue 28;
docs/SECURITY.md): checkpoints/KEY and the files in it (last.pt, the validation chooser's
chosen.npz) are reached from the store's handles at each use, so a link planted before the
run, or swapped in between two checkpoint saves, is refused and nothing is read or written
behind it."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbias.experiments import real_runs
from attnbias.experiments.real_runs import CHOSEN_FILE, ValidationChooser
from attnbias.real.records import history_table
from attnbias.real.train import (
    LAST_CHECKPOINT,
    UnsafeCheckpoint,
    load_checkpoint,
    save_checkpoint,
    train,
)
from attnbias.store import CheckpointDirectory, ResultsStore, config_key
from tiny_model import Tiny, tiny_data

pytestmark = pytest.mark.usefixtures("one_thread")

RUN = {"experiment": "tiny", "seed": 0}
KEY = config_key(RUN)


def trainer(steps: int = 4, while_training=None, chooser: bool = False):
    """A train_fn of run_once: a tiny model, a checkpoint every step; while_training(step) is
    what the co-user does at each evaluation (before that step's checkpoint is saved)."""

    def train_fn(checkpoints):
        torch.manual_seed(0)
        data = tiny_data()
        metrics = {"step": 0}

        def at_evaluation(model):
            if while_training is not None:
                while_training(metrics["step"])
            metrics["step"] += 1
            return {"evaluations": metrics["step"]}

        extra = ValidationChooser(data, data, checkpoints) if chooser else at_evaluation
        history = train(Tiny(), data, None, {"name": "sgd", "lr": 0.1}, steps=steps,
                        batch_size=4, seed=0, eval_every=1, checkpoint_dir=checkpoints,
                        checkpoint_every=1, extra_metrics=extra, progress=False)  # fmt: skip
        return history_table(history), {}, {"seconds": history.seconds}

    return train_fn


def staged(tmp_path: Path) -> tuple[ResultsStore, ResultsStore]:
    """(the experiment's store, the store of its staging directory)."""
    store = ResultsStore(tmp_path / "res" / "tiny")
    return store, ResultsStore(store.staging())


def outside(tmp_path: Path) -> Path:
    place = tmp_path / "elsewhere"
    place.mkdir()
    (place / "mine").write_text("someone's")
    return place


def untouched(place: Path) -> None:
    assert sorted(os.listdir(place)) == ["mine"]
    assert (place / "mine").read_text() == "someone's"


def test_a_run_trains_resumes_and_leaves_no_checkpoints_through_the_store(tmp_path):
    store, stage_store = staged(tmp_path)
    seen = []

    def look(step):
        if step == 2:  # step 1's checkpoint is saved, in the store's own directory
            seen.extend(os.listdir(store.directory / "checkpoints" / KEY))

    record = real_runs.run_once(stage_store, RUN, trainer(while_training=look))
    assert record.status == "finished" and seen == [LAST_CHECKPOINT]
    assert not (store.directory / "checkpoints" / KEY).exists()  # superseded by the run


def test_a_link_planted_at_the_checkpoints_directory_before_the_run_is_not_followed(tmp_path):
    store, stage_store = staged(tmp_path)
    place = outside(tmp_path)
    (place / KEY).mkdir()  # what the link leads the run's checkpoints into
    (store.directory / "checkpoints").rmdir()
    (store.directory / "checkpoints").symlink_to(place)
    with pytest.raises(UnsafeCheckpoint, match="symbolic link"):
        real_runs.run_once(stage_store, RUN, trainer())
    assert os.listdir(place / KEY) == []
    (place / KEY).rmdir()
    untouched(place)


@pytest.mark.parametrize("swapped", ["checkpoints", f"checkpoints/{KEY}"])
def test_a_directory_swapped_for_a_link_between_two_checkpoints_is_not_written_through(
    tmp_path, swapped
):
    store, stage_store = staged(tmp_path)
    place = outside(tmp_path)
    behind = place / KEY if swapped == "checkpoints" else place  # where the link leads them
    behind.mkdir(exist_ok=True)

    def swap(step):
        if step == 2:  # between step 1's checkpoint and step 2's
            path = store.directory / swapped
            path.rename(tmp_path / "moved")
            path.symlink_to(place)

    with pytest.raises(UnsafeCheckpoint, match="symbolic link"):
        real_runs.run_once(stage_store, RUN, trainer(while_training=swap))
    if behind != place:
        assert os.listdir(behind) == []
        behind.rmdir()
    untouched(place)
    moved = tmp_path / "moved" / (KEY if swapped == "checkpoints" else "")
    saved = torch.load(moved / LAST_CHECKPOINT, weights_only=True)
    assert saved["step"] == 1  # the run's own checkpoints stop where the link came


def test_a_checkpoint_directory_replaced_by_another_directory_is_not_written_into(tmp_path):
    store, stage_store = staged(tmp_path)
    checkpoints = store.directory / "checkpoints" / KEY

    def replace(step):
        if step == 2:
            checkpoints.rename(tmp_path / "moved")
            checkpoints.mkdir()  # the co-user's own, inside the root

    with pytest.raises(UnsafeCheckpoint, match="replaced by another while the run trained"):
        real_runs.run_once(stage_store, RUN, trainer(while_training=replace))
    assert os.listdir(checkpoints) == []


def test_the_chooser_reads_no_chosen_file_behind_a_planted_link(tmp_path):
    store, stage_store = staged(tmp_path)
    place = outside(tmp_path)
    # a chosen.npz of another test set: read, it would be refused as not this run's
    np.savez(place / CHOSEN_FILE, val_accuracy=1.0, val_loss=0.0, test_predicted=np.zeros(3))
    (store.directory / "checkpoints" / KEY).symlink_to(place)
    with pytest.raises(UnsafeCheckpoint, match="symbolic link"):
        real_runs.run_once(stage_store, RUN, trainer(chooser=True))
    assert sorted(os.listdir(place)) == [CHOSEN_FILE, "mine"]


def test_the_chooser_writes_no_chosen_file_through_a_link_swapped_in(tmp_path):
    checkpoints = tmp_path / "ck"
    data = tiny_data()
    chooser = ValidationChooser(data, data, checkpoints)
    chooser(Tiny())  # the first evaluation is the best so far: kept in chosen.npz
    assert os.listdir(checkpoints) == [CHOSEN_FILE]
    place = outside(tmp_path)
    checkpoints.rename(tmp_path / "moved")
    checkpoints.symlink_to(place)
    chooser.chosen["val_accuracy"] = -1.0  # the next evaluation is better: written again
    with pytest.raises(UnsafeCheckpoint, match="symbolic link"):
        chooser(Tiny())
    untouched(place)


def test_checkpoint_files_are_read_from_the_directory_handle_within_their_bound(tmp_path):
    directory = CheckpointDirectory.at(tmp_path / "ck")
    assert load_checkpoint(directory, "cpu") is None and not (tmp_path / "ck").exists()
    state = {"model": {}, "optimizer": {}, "step": 3, "rng": torch.zeros(1), "history": {}}
    save_checkpoint(directory, state)
    assert os.listdir(tmp_path / "ck") == [LAST_CHECKPOINT]  # no temporary file left
    assert load_checkpoint(directory, "cpu")["step"] == 3
    size = (tmp_path / "ck" / LAST_CHECKPOINT).stat().st_size
    with pytest.raises(UnsafeCheckpoint, match=f"it takes {size:,} bytes, more than the 100 a"):
        load_checkpoint(directory, "cpu", max_bytes=100)
    os.mkfifo(tmp_path / "ck" / "fifo")  # never opened for reading to block on
    with pytest.raises(UnsafeCheckpoint, match="only a regular file is read"):
        load_checkpoint(tmp_path / "ck" / "fifo", "cpu")

    def fails(f):
        f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        directory.write(LAST_CHECKPOINT, writer=fails)
    assert sorted(os.listdir(tmp_path / "ck")) == sorted([LAST_CHECKPOINT, "fifo"])
    assert load_checkpoint(directory, "cpu")["step"] == 3  # the previous one, intact
