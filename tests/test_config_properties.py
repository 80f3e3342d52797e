"""Configs across the typed schema's bounds, generated (issue 28): every synthetic experiment,
through the public path (`load_config` + `run_experiment`, and `attnbias run` for a few), with
extreme rates (1e-300 … 1e300, 0, negative, NaN, ±inf), tiny and huge step counts, degenerate
shapes (n = 1, T = 1, d = 1; a d too large to hold) and seeds 0 or huge.

What holds for each: either a clear one-line error (ValueError or TypeError naming the field;
on the command line exit 2 and one stderr line, no traceback), or a summary whose runs are each
finished with finite numbers, or diverged. A directional metric (margin, gap, alignment) of an
iterate that is exactly 0 is undefined and stored as NaN: that is the one non-finite number a
finished run may hold, and only at such steps.

The fast tests only resolve configs; those that train are marked slow."""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attnbias.config import ConfigError
from attnbias.engine.memory import SweepTooLarge
from attnbias.experiment_registry import SYNTHETIC, load_config
from attnbias.experiments.base import run_experiment
from attnbias.store import DIVERGED, FINISHED, ResultsStore

# Overrides that keep a quick run to a few seconds: one seed, few steps, the fitting windows
# inside them (a rate fit must start above step e^e).
SMALL = {
    "md-local": {"steps": [20, 20, 20]},
    "md-joint": {"steps": 20},
    "ngd-fixed": {"steps": 20},
    "ngd-joint": {"steps": 20, "selection_seeds": 1, "rate_extensions": 0},
    "antipodal": {"steps": 20},
    "kq-nuclear": {"steps": 20},
    "atlas": {"steps": 20},
    "reexamine-muon": {"steps": 20},
    "reexamine-adam": {"steps": 20},
    "reexamine-polyak": {"steps": 20},
    "ngd-rates": {
        "long_steps": 40,
        "short_steps": 20,
        "fit_window": [16, 40],
        "windows": [[16, 25], [25, 40]],
        "polyak_window": [16, 40],
        "early_window": [2, 10],
        "growth_window": [2, 20],
        "saturation_window": [2, 20],
    },
    "local-global": {"example1_steps": 20, "gaussian_steps": 20},
    "md-plain": {"steps": 40, "fit_window": [16, 40], "windows": [[16, 25], [25, 40]]},
    "joint-rates": {"steps": 40, "fit_window": [16, 40]},
    "trajectory-lemmas": {"steps": 20, "joint_steps": 20, "ratio_window": [2, 20]},
}
BASE = {"seeds": 1, "grid_points": 8}

EXTREME_NUMBERS = [
    0,
    -1,
    -1e-300,
    1e-300,
    1e-30,
    0.5,
    1,
    2,
    1e30,
    1e300,
    sys.float_info.max,
    math.nan,
    math.inf,
    -math.inf,
    2**31,
    2**63,
    10**400,
]
ODD_VALUES = [True, "1", [], {}]


def resolved(name: str, overrides: dict):
    return load_config(name, quick=True, overrides={**BASE, **SMALL[name], **overrides})


def scalar_fields(name: str) -> list[str]:
    """The experiment's numeric scalar fields (ints and floats, not flags)."""
    config = resolved(name, {})
    return sorted(
        k
        for k, v in config.to_dict().items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    )


def number_list_fields(name: str) -> list[str]:
    config = resolved(name, {})
    return sorted(
        k
        for k, v in config.to_dict().items()
        if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v)
    )


FIELDS = [(name, field) for name in SYNTHETIC for field in scalar_fields(name)]
LIST_FIELDS = [(name, field) for name in SYNTHETIC for field in number_list_fields(name)]


def assert_one_line_naming(err: Exception, field: str) -> None:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text, text
    assert field in text, f"{field!r} not named in {text!r}"


def accepted_as_given(value, given) -> bool:
    """A number the config took holds what was given, and is finite."""
    if isinstance(value, (list, tuple)):
        return len(value) == len(given) and all(map(accepted_as_given, value, given))
    return math.isfinite(value) and value == given


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FIELDS), st.sampled_from(EXTREME_NUMBERS + ODD_VALUES))
@example(("md-local", "lr"), math.nan)
@example(("md-local", "seeds"), 0)
@example(("md-local", "T"), 10**400)  # was float(10**400): an OverflowError traceback
@example(("md-local", "lr"), 10**400)
@example(("ngd-rates", "short_steps"), 1)  # its windows' error named only "the steps"
def test_a_scalar_field_at_the_bounds_is_taken_as_given_or_refused_naming_it(field, value):
    name, key = field
    try:
        config = resolved(name, {key: value})
    except (ConfigError, TypeError) as err:
        assert_one_line_naming(err, key)
        return
    taken = getattr(config, key)
    if isinstance(taken, (int, float)) and not isinstance(taken, bool):
        assert accepted_as_given(taken, value), (name, key, value, taken)
    else:  # a value object (an algorithm's name, a norm): the field's own parsing took it
        assert value not in (math.nan, math.inf, -math.inf), (name, key, value, taken)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(LIST_FIELDS),
    st.lists(st.sampled_from(EXTREME_NUMBERS), min_size=0, max_size=4),
)
@example(("md-local", "ps"), [1.0])
@example(("md-local", "steps"), [0, 1, 2])
@example(("ngd-rates", "lrs"), [math.inf])
def test_a_list_field_at_the_bounds_is_taken_as_given_or_refused_naming_it(field, values):
    name, key = field
    try:
        config = resolved(name, {key: values})
    except (ConfigError, TypeError) as err:
        assert_one_line_naming(err, key)
        return
    taken = getattr(config, key)
    assert all(math.isfinite(x) for x in np.asarray(taken, dtype=float).ravel()), (
        name,
        key,
        values,
        taken,
    )


# One token per sample leaves an Att-SVM without constraints: it was found only after
# training, as a ValueError of the solver that named no config field.
ONE_TOKEN = {name: {"T": 1} for name in SYNTHETIC if "T" in scalar_fields(name)}
ONE_TOKEN["local-global"] = {"example1_shape": [1, 1, 1], "gaussian_shape": [1, 1, 1]}
ONE_TOKEN["trajectory-lemmas"] = {"example1_shape": [1, 1, 1]}
NOT_YET: dict[str, str] = {}  # h4 fixed kq-nuclear, local-global, trajectory-lemmas


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[n]))
        if n in NOT_YET
        else n
        for n in sorted(ONE_TOKEN)
    ],
)
def test_one_token_per_sample_is_refused_when_the_config_is_read(name):
    field = next(iter(ONE_TOKEN[name]))
    with pytest.raises(ConfigError) as refused:
        resolved(name, ONE_TOKEN[name])
    assert_one_line_naming(refused.value, field)


# gaussian_unit's unit tokens in one dimension are ±1: md-local with n = 1, T = 2, d = 1 tied
# its sample's tokens and was refused only after training, by the measuring code, naming no field
UNIT_TOKENS = ["atlas", "md-local", "md-plain"]


@pytest.mark.parametrize("name", UNIT_TOKENS)
def test_unit_tokens_in_one_dimension_are_refused_when_the_config_is_read(name):
    with pytest.raises(ConfigError) as refused:
        resolved(name, {"n": 1, "T": 2, "d": 1})
    assert_one_line_naming(refused.value, "d")
    assert resolved(name, {"n": 1, "T": 2, "d": 2}).d == 2


# example1's head scores each optimal token and no other: d ≥ n·T, which ngd-fixed with n = 1,
# T = 2, d = 1 met only in the data generator, after the config was taken
@pytest.mark.parametrize("name", ["ngd-fixed", "ngd-rates", "reexamine-polyak"])
def test_too_few_dimensions_for_the_tokens_are_refused_when_the_config_is_read(name):
    with pytest.raises(ConfigError) as refused:
        resolved(name, {"n": 1, "T": 2, "d": 1})
    assert_one_line_naming(refused.value, "d must be >= n*T = 2, got 1")


SHAPED = [n for n in SYNTHETIC if {"n", "d"} <= set(scalar_fields(n))]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(SHAPED),
    st.sampled_from([1, 2**31 - 1]),
    st.integers(1, 4096),
    st.sampled_from([10**4, 10**5, 10**6]),
)
@example("md-local", 1, 6, 6000)  # issue 28: built GBs of problems before the check
@example("md-local", 2**31 - 1, 6, 10)  # issue 28: --seeds huge, silent while memory grew
def test_a_sweep_that_cannot_be_held_is_refused_before_anything_is_built(
    monkeypatch, name, seeds, n, d
):
    """No problem is made and no run trained: the refusal comes from the config alone."""
    from attnbias.engine import sweep as engine_sweep

    def built(*args, **kwargs):
        raise AssertionError("a run was built before the memory check")

    monkeypatch.setattr(engine_sweep, "run_sweep", built)
    overrides = {"seeds": seeds, "n": n, "d": d}
    if "T" in scalar_fields(name):
        overrides["T"] = 8
    try:
        config = resolved(name, overrides)
    except ConfigError as err:  # a rule across the shape's fields (d ≥ n·T, ...)
        assert "\n" not in str(err)
        return
    with pytest.raises(SweepTooLarge) as refused:
        config.check_memory()
    assert_one_line_naming(refused.value, "d = ")


# --- training: each run finished with finite numbers, or diverged


RATE_SCALES = [1e-300, 1e-30, 1.0, 1e30, 1e300]


def rate_overrides(name: str, scale: float) -> dict:
    """The experiment's step sizes multiplied by `scale`: its own lr fields and every
    algorithm's lr."""
    config = resolved(name, {})
    written = config.to_dict()
    out = {}
    for key in ("lr", "joint_lr"):
        if key in written:
            out[key] = written[key] * scale
    if "lrs" in written:  # ngd-rates: lrs holds lr
        out["lrs"] = [x * scale for x in written["lrs"]]
    if isinstance(written.get("algorithms"), list):
        # (an uncapped Polyak table keeps lr "inf", JSON's ∞: ∞ × scale is ∞)
        out["algorithms"] = [
            {**a, "lr": a["lr"] if a["lr"] == "inf" else a["lr"] * scale}
            for a in written["algorithms"]
        ]
    return out


def stored_runs_are_finished_and_finite_or_diverged(out) -> None:
    store = ResultsStore(out)
    keys = list(store.keys())
    for record in map(store.load, keys):
        assert record.status in (FINISHED, DIVERGED)
        if record.status == DIVERGED:
            assert isinstance(record.info.get("diverged_at"), int), record.info
            continue
        for key, array in record.arrays.items():
            if isinstance(array, np.ndarray) and array.dtype.kind in "fc":
                assert np.isfinite(array).all(), (record.key, key)
        table = record.metrics.to_pandas()
        values = table["value"].to_numpy(dtype=float)
        assert not np.isinf(values).any(), table[np.isinf(values)]
        # NaN only where the iterate is exactly 0 (its direction is undefined)
        norms = table[table["metric"].str.startswith("norm")]
        at_zero = set(norms.loc[norms["value"] == 0, "step"])
        undefined = table[np.isnan(values)]
        assert set(undefined["step"]) <= at_zero, undefined


def trained(name: str, overrides: dict, out) -> dict | None:
    """The summary of a run of the config, or None where it was refused in one line."""
    try:
        config = resolved(name, overrides)
    except (ConfigError, TypeError) as err:
        assert "\n" not in str(err)
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice", no overflow
        # a figure's layout that cannot fit is cosmetic, not a number (reexamine-muon at 1e-300)
        warnings.filterwarnings("ignore", "constrained_layout not applied", UserWarning)
        try:
            summary = run_experiment(config, out)
        except SweepTooLarge as err:
            assert "\n" not in str(err)
            return None
    written = json.loads((out / "summary.json").read_text())
    assert written["runs"] == summary["runs"] and written["diverged"] == summary["diverged"]
    stored_runs_are_finished_and_finite_or_diverged(out)
    return summary


# Known failures, each pinned by a strict xfail and left out of the sampled properties until
# fixed (they would fail them at random); /tmp/p2/diverged_failures.md has the details.
# ngd-rates at × 1e300 (norms and fitted slopes of weights near float64's largest) is fixed:
# theory_measures.frobenius and slope are scale-safe
ABSURD_RATE_FAILS: dict[str, str] = {}
SAMPLED = [n for n in SYNTHETIC if n not in ABSURD_RATE_FAILS]


@pytest.mark.slow
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(SAMPLED), st.sampled_from(RATE_SCALES))
@example("md-local", 1e300)  # issue 28's all-diverged config
@example("md-local", 1e-300)  # the zero start stays exactly 0: its gaps are undefined
def test_extreme_rates_end_in_finished_finite_or_diverged_runs(tmp_path_factory, name, scale):
    out = tmp_path_factory.mktemp("rates") / name
    summary = trained(name, rate_overrides(name, scale), out)
    assert summary is not None and summary["runs"] > 0


@pytest.mark.slow
def test_md_plain_with_a_short_fit_window_measures_without_warnings(tmp_path):
    trained("md-plain", {}, tmp_path / "md-plain")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ABSURD_RATE_FAILS[n]))
        if n in ABSURD_RATE_FAILS
        else n
        for n in SYNTHETIC
    ],
)
def test_a_rate_of_1e300_ends_in_finished_finite_or_diverged_runs(tmp_path, name):
    """Every experiment, each of its step sizes × 1e300 (issue 28's md-local example, for all)."""
    summary = trained(name, rate_overrides(name, 1e300), tmp_path / name)
    assert summary is not None and summary["runs"] > 0


@pytest.mark.slow
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from([n for n in SHAPED if n in SAMPLED]),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 2]),
)
@example("md-local", 1, 1)  # tied unit tokens: refused by the config (d ≥ 2)
@example("ngd-fixed", 1, 1)  # d < n·T: refused by the config, no longer by the generator
def test_degenerate_shapes_and_one_step_runs_end_in_a_summary_or_one_line(
    tmp_path_factory, name, n, d
):
    out = tmp_path_factory.mktemp("shapes") / name
    fields = scalar_fields(name)
    overrides = {"n": n, "d": d, **({"T": 2} if "T" in fields else {})}
    trained(name, overrides, out)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, overrides",
    [
        # one sample, two tokens: its loss reaches f* = the optimum (the compiled step divided
        # by zero there: d77eab5)
        ("reexamine-polyak", {"n": 1, "T": 2, "d": 2}),
        ("ngd-rates", {}),
    ],
)
def test_polyak_at_its_loss_floor_is_no_traceback(tmp_path, name, overrides):
    trained(name, overrides, tmp_path / name)


# --- the command line


def cli(*args: str, tmp_path, memory_limit: int | None = None) -> subprocess.CompletedProcess:
    """`attnbias ARGS` in a child process (with its address space capped, where asked)."""

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run(
        [sys.executable, "-m", "attnbias.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "ATTNBIAS_PROGRESS_SECONDS": "3600"},
        preexec_fn=cap if memory_limit else None,
    )


def refused_in_one_line(result: subprocess.CompletedProcess, *named: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("attnbias: error")]
    assert len(errors) == 1, result.stderr
    for word in named:
        assert word in errors[0], errors[0]
    return errors[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "override, field",
    [
        ("lr=nan", "lr"),
        ("lr=-inf", "lr"),
        ("lr=0", "lr"),
        ("seeds=0", "seeds"),
        ("steps=[0,1,2]", "steps"),
        ("T=1", "T"),
        ("d=1e300", "d"),
        ("grid_points=-1", "grid_points"),
    ],
)
def test_the_command_line_refuses_a_field_out_of_bounds_in_one_line(tmp_path, override, field):
    result = cli("run", "md-local", override, "--quick", "--out", str(tmp_path), tmp_path=tmp_path)
    refused_in_one_line(result, field)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["md-local", "d=100000", "seeds=1"],
        ["md-local", "seeds=2147483647"],
        ["local-global", "example1_shape=[2,3,100000]", "seeds=1"],
    ],
)
def test_the_command_line_refuses_a_sweep_too_large_before_allocating_it(tmp_path, args):
    """With 3 GB of address space (the import alone takes most of 1 GB), an allocation of the
    sweep would end in MemoryError: the refusal comes first."""
    result = cli(
        "run", *args, "--quick", "--out", str(tmp_path), tmp_path=tmp_path, memory_limit=3 << 30
    )
    refused_in_one_line(result)


@pytest.mark.slow
def test_the_command_line_writes_the_summary_of_the_issues_absurd_step(tmp_path):
    result = cli(
        "run",
        "md-local",
        "lr=1e300",
        "ps=[1.5,2.0]",
        "steps=[20,20]",
        "seeds=2",
        "grid_points=8",
        "--quick",
        "--out",
        str(tmp_path),
        tmp_path=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, result.stderr
    summary = json.loads((tmp_path / "md-local" / "summary.json").read_text())
    assert {d["algorithm"] for d in summary["diverged"]} == {"ℓ1.5-MD"}
    stored_runs_are_finished_and_finite_or_diverged(tmp_path / "md-local")
