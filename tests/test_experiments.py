"""Experiments: configs are typed and checked once, at load time; runs are stored once and
reused; outputs exist; experiments defined outside attnbias run through the same pipeline."""

import importlib
import importlib.metadata
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pydantic
import pytest

from attnbias import experiment_registry
from attnbias.cli import main
from attnbias.config import ExperimentConfig, to_toml
from attnbias.curves import curves, loglog_slope
from attnbias.experiment_configs.real import RealConfig
from attnbias.experiments import EXPERIMENTS, SYNTHETIC, load_config, run_experiment
from attnbias.judging.claims import STATUSES
from attnbias.store import ResultsStore, config_key

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures"

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = {
    "md-local": {"seeds": 2, "steps": [60, 80, 100]},
    "md-joint": {"steps": 60},
    "ngd-fixed": {"seeds": 2, "steps": 60, "selection_seeds": 1, "rate_extensions": 0},
    "ngd-joint": {"seeds": 2, "steps": 60, "selection_seeds": 1, "rate_extensions": 0},
    "antipodal": {"seeds": 2, "steps": 60, "selection_seeds": 1, "rate_extensions": 0},
    "kq-nuclear": {"seeds": 2, "steps": 60},
    "atlas": {"seeds": 2, "steps": 60},
    "ngd-rates": {
        "seeds": 2, "long_steps": 60, "short_steps": 60, "fit_window": [5, 60],
        "polyak_window": [5, 60], "early_window": [4, 30],
        "windows": [[5, 20], [20, 60]], "growth_window": [5, 60], "saturation_window": [5, 60],
    },
    "md-plain": {"seeds": 2, "steps": 60, "fit_window": [16, 60], "windows": [[16, 30], [30, 60]]},
    "joint-rates": {"seeds": 2, "steps": 60, "fit_window": [16, 60]},
    "local-global": {
        "seeds": 1, "example1_steps": 60, "gaussian_steps": 60, "radii": [1.0],
        "assumption_seeds": 3, "direction_steps": 60,
    },
    "trajectory-lemmas": {
        "seeds": 1, "steps": 60, "joint_steps": 60, "grid_points": 8, "ratio_window": [5, 60],
    },
    "reexamine-muon": {"seeds": 2, "steps": 60},
    "reexamine-adam": {"seeds": 2, "steps": 60},
    "reexamine-polyak": {"seeds": 2, "steps": 60},
}  # fmt: skip


def test_synthetic_is_derived_from_the_one_ordered_table_of_experiments():
    """`reproduce all` runs the synthetic experiments in the table's order, the one `attnbias
    list` and the register show; an experiment is real-data exactly when its config is a
    real-data one."""
    assert SYNTHETIC == tuple(experiment_registry.SYNTHETIC_EXPERIMENTS)
    assert list(EXPERIMENTS) == [*SYNTHETIC, *experiment_registry.REAL_DATA_EXPERIMENTS]
    assert experiment_registry.experiment_names()[: len(SYNTHETIC)] == list(SYNTHETIC)
    for name, module in EXPERIMENTS.items():
        config = importlib.import_module(module).Config
        real_data = name in experiment_registry.REAL_DATA_EXPERIMENTS
        assert issubclass(config, RealConfig) == real_data, name


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("quick", [True, False])
def test_shipped_configs_are_valid(name, quick):
    config = load_config(name, quick=quick)
    assert isinstance(config, ExperimentConfig) and config.experiment == name
    json.dumps(config.to_dict())  # resolved configs are stored as JSON
    with pytest.raises(pydantic.ValidationError):
        config.experiment = "other"  # frozen
    assert tomllib.loads(to_toml(config.to_dict())) == config.to_dict()  # `attnbias config`


# config_key of each resolved default and quick config, computed before configs were typed:
# stored runs and publications are found by these, so they must never change by accident.
CONFIG_KEYS = {
    # referee read 14: the own-SVM rows on runs of every p at the longest steps, seeds 1–20
    "md-local": ("29b1476ba01d004f", "4e2fb0068f8a87f6"),
    # issue 29: d = 3 toy whose head SVMs differ by p; small random start, 10 seeds
    "md-joint": ("12fb87c46075dc4f", "bd641942675b5880"),
    # issue 29: GD vs NGD and NGD vs Polyak at tuned steps (grid, extensions, selection seeds)
    # Polyak uncapped (γ_b = ∞, issue 29); grid grown at most 8 times, 100 seeds, 100 fresh
    # confirmation seeds for polyak-faster (issue 29)
    # issue 29: a second confirmation, 300 fresh seeds from 2101 (confirmation_first); the
    # first's seeds run again (earlier_confirmations: every tuned config's key moved)
    "ngd-fixed": ("442443b6d36da554", "3bb2f482cb5d15f9"),
    # small random start; issue 29: speed at tuned steps (grid, extensions, selection seeds)
    # Polyak uncapped; referee read 13: the speed rows on 100 confirmation seeds (quick: 2)
    "ngd-joint": ("bef0c76c7a0b167d", "981605dc18637b3a"),
    # 30 seeds; grid grown at most 8 times; 100 confirmation seeds (issue 29)
    "antipodal": ("9e0481a610a1cb3f", "44ccd7f2c6a40cfc"),
    "kq-nuclear": ("cbba58face019893", "c864d0512e0f2cf8"),
    # issue 29 (one policy for Adam and Muon): the Adam row judged on an Adam-decay arm, as_run
    "atlas": ("eb696d719cfab88a", "efdf33af03c3feac"),
    # the equal-budget protocol; 12 seeds: at 5 the paired differences' CIs straddled 0, at 9
    # (the rate search's seed left out) best-accuracy's did
    "text-md": ("7a7e5907cf0a8541", "036360f717bb1148"),
    # device field (runs keep keys); 8 seeds: at 3 the SGD-over-SNGD/SPS CIs straddled 1
    "text-finetune": ("fa22c87abe97c39d", "5f760b3a1ece9479"),
    # 20 seeds: at 10, adam-little-mnist and norm-growth-mnist straddled their lines
    "vision": ("f405b819de2065f9", "eceb4f58a047da25"),  # device field
    # the geometry margin sweep; Thm 7 on γ_b = ∞ (exact) over Thm 1's window
    "ngd-rates": ("42781b277dd2cdf9", "34aa648cfc5dbd94"),  # early_window (issue 29)
    # issue 29: 40 seeds (the starts clustered by seed), Assumption 1 on 1,000 problems
    # issue 29: local_radii (64, 256; quick 64) for local-gaussian, whose R₀ lay beyond R = 16
    # issue 29: 120 seeds, as the power estimate from the 40 seeds' spread asked
    # referee read 11: Assumption 1 judged for d large (assumption_sizes, assumption_dims)
    # referee read 12: local-gaussian-direction (direction_seeds, _radii, _steps, _travel)
    "local-global": ("f91e7baeec06b013", "dafdca7aebe2ac8f"),
    "md-plain": ("c73421361197350f", "21ddee3f79ac4452"),  # issue 29: 100 seeds (was 10)
    # 48 seeds: thm3-rate decided; the exponential loss Thm 3 is proved for (issue 29)
    "joint-rates": ("de94800b08bc7993", "d92fa0a4a65c6ef5"),
    "trajectory-lemmas": ("d8129fbb8a31cf6a", "823f90c22dcac812"),  # level gone: violations
    # issue 29 class 5: both momentum orders, Nesterov; every arm's η tuned on selection seeds
    # by its final spectral gap (the fixed-η sweep arms gone); as_run: torch's Muon;
    # Muon-long (10× the steps at Muon's tuned η), at_config_step (the atlas's η = 0.2)
    # issue 29: `checks` (NS-f64's row a consistency check), Muon-long in `stalls`
    # confirmation_seeds = 0 (a field of every tuned experiment); referee read 11: no `checks`,
    # Muon-f64-Nesterov-long (muon-long-stalls at one η and horizon)
    "reexamine-muon": ("80ee5468dc38f109", "2ccca60c9c3f5180"),
    # as_run: constant-rate Adam; 3·10⁵ steps: at 10⁵ Adam-decay's gap straddled 0.05;
    # `stalled`: constant-rate Adam's stall in its ε regime decides no row
    # issue 29: an arm with ε = 0 (Adam-eps0) judges the constant-rate rows; ε = 1e-300 none
    # issue 29: closer_at_equal_norm (the arms travel Σηₜ ≈ 55 and ≈ 15,000 in the same steps)
    "reexamine-adam": ("65c5c2261424880d", "aa2764072dc308e0"),
    # issue 29: `uncapped` (1e300) leaves the float64-stopped step out of the cap ladder;
    # NGD's η tuned on selection seeds (rate_factors, rate_extensions, selection_seeds)
    # issue 29: NGD's grid grown up to 10 times (rate_extensions), its best η bracketed
    # γ_b = ∞ exact (caps [1e2, 1e4, 1e6, inf]; `uncapped`, the 1e300 stand-in, gone)
    # issue 29 (read 9): Polyak's 1/c tuned per cap (cs, paper_c, paper_cap gone), grown 8
    # times as ngd-fixed's, judged on 100 confirmation seeds
    "reexamine-polyak": ("2b6c756b47b4b075", "d94cede49abc5cee"),
}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_resolved_configs_keep_their_keys(name):
    full, quick = CONFIG_KEYS[name]
    assert config_key(load_config(name).to_dict()) == full
    assert config_key(load_config(name, quick=True).to_dict()) == quick
    if name == "text-md":
        # [paper] states protocol = "target" (runs keep keys: protocol_fields); 12 seeds, as full;
        # its rate grids centred on the paper's own rates (0.08, 0.04, 4e-4)
        assert config_key(load_config(name, paper=True).to_dict()) == "9ac35ae352e71551"


def test_a_config_reads_as_the_dict_it_stores():
    config = load_config("atlas", quick=True)
    assert config["seeds"] == 3 and dict(config) == config.to_dict() and "norms" in config
    assert config["norms"] == [2.0, float("inf"), "spectral", 1.75, "nuc"]  # as written
    assert [n.label for n in config.norms] == ["2", "inf", "spectral", "1.75", "nuc"]
    assert [a.optimizer for a in config.algorithms][:2] == ["ngd", "sign"]  # parsed once
    assert config["algorithms"][0] == {"name": "NGD", "optimizer": "ngd", "lr": 0.5}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"seeds": 0}, "seeds must be >= 1"),
        ({"seeds": "many"}, "seeds must be an integer"),
        ({"lr": True}, "lr must be a real number"),
        ({"ps": [1.75, 0.5]}, "ps must be a non-empty list"),
        ({"steps": [10, "x", 10]}, r"steps\[1\] must be an integer"),
        ({"stepz": 3}, "unknown config field 'stepz'"),
        ({"device": "tpu"}, "device must be one of"),
        ({"steps": [10, 20]}, r"steps must have one entry per entry of ps \(3\), got \[10, 20\]"),
    ],
)
def test_bad_config_is_refused_naming_the_field(overrides, message):
    with pytest.raises(ValueError, match=message) as refused:
        load_config("md-local", quick=True, overrides=overrides)
    assert str(refused.value).startswith("md-local: ") and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("atlas", {"own_norm": {"NGD": "3"}}, "own_norm.NGD = '3' is not one of norms"),
        ("atlas", {"like": {"Adam": "Muon"}}, "like.Adam = 'Muon' has no own_norm"),
        ("atlas", {"norms": [2, "frob"]}, r"norms\[1\] must be a norm"),
        ("ngd-fixed", {"reference": "NGD2"}, "reference 'NGD2' is not one of the algorithms"),
        ("ngd-joint", {"baseline": "SGD"}, "baseline 'SGD' is not one of the algorithms"),
        ("text-md", {"lrs": [0.1]}, r"lrs must have one entry per entry of ps \(3\)"),
        ("vision", {"datasets": ["cifar"]}, "datasets must be a non-empty list from"),
        ("vision", {"optimizers": [{"name": "lion", "lr": 1}]}, r"optimizers\[0\] optimizer"),
    ],
)
def test_rules_across_fields_are_checked_when_the_config_is_loaded(name, overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config(name, quick=True, overrides=overrides)


def test_an_error_names_the_file_that_set_the_field():
    with pytest.raises(ValueError) as refused:
        load_config("md-local", layers=[("my.toml", {"lr": -1})])
    assert str(refused.value) == "my.toml: md-local: lr must be > 0, got -1"
    with pytest.raises(ValueError, match=r"^--seeds: md-local: seeds must be >= 1, got 0$"):
        load_config("md-local", layers=[("--seeds", {"seeds": 0})])
    with pytest.raises(ValueError, match=r"^my.toml: md-local: steps must have one entry"):
        load_config(
            "md-local", layers=[("my.toml", {"ps": [2.0]}), ("--device", {"device": "cpu"})]
        )


def test_missing_field_is_named(tmp_path):
    config = dict(load_config("ngd-fixed", quick=True))
    del config["target_alignment"]
    with pytest.raises(ValueError, match="'target_alignment' is missing"):
        run_experiment(config, tmp_path)


def test_bad_algorithm_table_is_refused():
    algorithms = [{"name": "GD", "optimizer": "gd", "lr": 0.1, "momentum": 0.5}]
    with pytest.raises(ValueError, match=r"algorithms\[0\]\.momentum applies only"):
        load_config("ngd-fixed", overrides={"algorithms": algorithms})


@pytest.mark.slow
def test_md_local_outputs_and_resume(tmp_path):
    config = load_config("md-local", quick=True, overrides=TINY["md-local"])
    summary = run_experiment(config, tmp_path)
    # p × seeds (the figure's), the two shorter p again at the longest steps on both seeds (the
    # own-SVM rows'), one zero-initialised run per p
    runs = 3 * 2 + 2 * 2 + 3
    assert summary["runs"] == summary["trained"] == runs
    assert 0 < summary["svms_solved"] <= 3 * runs
    for claim in summary["claims"]:
        assert claim["status"] in STATUSES and claim["evidence"]
        assert claim["evidence"]["diverged_runs_excluded"] == 0
    assert summary["scale"] == "quick: a smoke run, not evidence"
    assert summary["config_hash"] == config_key(config.to_dict()) and summary["code_version"]
    for path in summary["figures"]:
        assert (tmp_path / path.split("/")[-1]).stat().st_size > 1000
    assert json.loads((tmp_path / "summary.json").read_text())["claims"] == summary["claims"]
    assert json.loads((tmp_path / "config.json").read_text()) == config.to_dict()

    store = ResultsStore(tmp_path)
    assert len(store.keys()) == runs
    record = store.load(store.keys()[0])
    assert {"W_mm_1.75", "W_mm_2", "W_mm_3", "alpha", "final_W"} <= set(record.arrays)
    table = pq.read_table(tmp_path / "metrics.parquet")
    metrics = set(table.column("metric").to_pylist())
    assert {"loss", "divergence/1.75", "divergence/3", "alignment/2", "score/selected"} <= metrics
    points = sum(len(r.metrics) for r in map(store.load, store.keys()))
    assert table.num_rows == points  # one row per run × step × metric
    assert {"run", "algorithm.name", "data.seed"} <= set(table.column_names)

    # the diagonal of the 3×3 grid falls already in a few dozen steps (the figure's ℓ2 runs)
    records = [store.load(k) for k in store.keys()]
    grid = curves([r for r in records if r.config["steps"] == 80])
    d = grid["ℓ2-MD"].mean("divergence/2")
    assert d[-1] < d[0]

    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    again = run_experiment(config, tmp_path)  # every run stored, same config: nothing redone
    assert again["reused_outputs"] and again["claims"] == summary["claims"]
    (tmp_path / "latest").unlink()  # no publication: the runs are reloaded and summarised
    again = run_experiment(config, tmp_path)
    assert again["trained"] == 0 and again["reused"] == runs
    assert again["claims"] == summary["claims"]
    assert stamps == {
        p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()
    }


@pytest.mark.slow
def test_changing_the_config_trains_only_new_runs(tmp_path):
    config = load_config("ngd-fixed", quick=True, overrides=TINY["ngd-fixed"])
    first = run_experiment(config, tmp_path)
    more = run_experiment({**config, "seeds": 3}, tmp_path)
    # every run of the first config is reused (its step-tuning runs on the selection seeds
    # included); only the new seed's evaluation runs train
    assert more["reused"] == first["runs"]
    assert more["trained"] == more["runs"] - first["runs"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SYNTHETIC if n != "md-local"])
def test_every_experiment_runs_at_tiny_scale(name, tmp_path):
    summary = run_experiment(load_config(name, quick=True, overrides=TINY[name]), tmp_path)
    # a tiny run may leave a claim inconclusive (too few steps to fit): any verdict will do
    assert summary["claims"] and all(c["status"] in STATUSES for c in summary["claims"])
    assert all((tmp_path / p.split("/")[-1]).exists() for p in summary["figures"])


def test_loglog_slope():
    steps = np.array([0, 1, 10, 100, 1000])
    assert loglog_slope(steps, 3.0 * steps.astype(float)) == pytest.approx(1.0)
    assert loglog_slope(steps, 1.0 / np.maximum(steps, 1) ** 2) == pytest.approx(-2.0)


def test_reproduce_checks_every_config_before_training_any(tmp_path, monkeypatch, capsys):
    """A rule broken in the last experiment's config stops `reproduce all` before the first
    experiment trains (it was checked in that experiment's run())."""
    configs = tmp_path / "configs"
    shutil.copytree(experiment_registry.CONFIG_DIR, configs)
    atlas = configs / "atlas.toml"
    atlas.write_text(atlas.read_text().replace('NGD = "2"', 'NGD = "3"'))
    monkeypatch.setattr(experiment_registry, "CONFIG_DIR", configs)
    out = tmp_path / "res"
    assert main(["reproduce", "all", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "atlas: own_norm.NGD = '3' is not one of norms" in err
    assert str(atlas) in err
    assert not (out / SYNTHETIC[0]).exists()


@pytest.fixture
def toy(monkeypatch):
    """tests/fixtures on sys.path: the module toy_experiment, defined outside attnbias."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    yield "toy_experiment:ToyExperiment"
    sys.modules.pop("toy_experiment", None)


def test_an_experiment_from_outside_the_package_runs_through_the_cli(toy, tmp_path, capsys):
    out = tmp_path / "toy"  # run --out names the results root; the experiment's name is toy
    assert main(["run", toy, "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    assert "[supported] the mean of 10 draws" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == toy and summary["claims"][0]["id"] == "toy/mean-near-zero"
    assert json.loads((out / "config.json").read_text()) == {
        "experiment": toy,
        "draws": 10,
        "scale": 2.0,
        "tolerance": 1.0,
    }
    assert summary["scale"] == "quick: a smoke run, not evidence"  # its [quick] table

    file = tmp_path / "my.toml"
    file.write_text(f'experiment = "{toy}"\ndraws = 1\n')
    assert main(["run", str(file), "--out", str(tmp_path / "bad"), "--allow-import"]) == 2
    err = capsys.readouterr().err
    assert f"{file}: {toy}: draws must be at least 2" in err and err.count("\n") == 1
    assert main(["config", str(file).replace("draws = 1", ""), "--schema"]) == 2  # still bad
    capsys.readouterr()
    assert main(["config", toy, "--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["draws"]["minimum"] == 1 and "draws" in schema["required"]


def test_an_entry_point_registers_an_experiment(toy, tmp_path, monkeypatch, capsys):
    found = importlib.metadata.EntryPoint("toy", toy, experiment_registry.ENTRY_POINTS)

    def entry_points(group=None, **_):
        return [found] if group == experiment_registry.ENTRY_POINTS else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert main(["list"]) == 0
    assert "toy" in capsys.readouterr().out
    assert main(["reproduce", "toy", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "toy" / "summary.json").read_text())["experiment"] == "toy"
    capsys.readouterr()
    assert main(["config", "toy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["draws"] == 1000


def test_an_object_that_is_no_experiment_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "not_an_experiment.py").write_text("class Thing:\n    name = 'thing'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", "not_an_experiment:Thing"]) == 2
    assert "lacks description, Config, run" in capsys.readouterr().err
