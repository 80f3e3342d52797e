"""What the synthetic experiments share: their config fields, seeding, the runs of an
optimal-token sweep and running a sweep into the experiment's store. Reading the stored runs
back as curves, and leaving diverged runs out, is attnbias.curves (data, not a driver)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch
from pydantic import Field

from ..engine.cluster import active_cluster
from ..engine.spec import RunSpec
from ..engine.sweep import SweepReport, run_sweep
from ..experiment_configs.sweep import SweepConfig
from ..optim.algorithm import Algorithm
from ..store import ResultsStore, diverged_runs
from ..theory_measures import assumption1_report

logger = logging.getLogger(__name__)


ZERO_OR_RANDOM_INIT = Field(description="W₀, v₀ entries ~ N(0, init_scale²); 0: zero init")


def seeds(config: SweepConfig) -> range:
    return range(1, config.seeds + 1)


def assumption1_by_seed(make: Callable, shape: dict, config: SweepConfig) -> dict:
    """Assumption 1 (our reading, docs/theory.md: the token Gram matrix strictly diagonally
    dominant, δ < 1; theory_measures.assumption1_report) on the problem `make(**shape,
    seed=s)` of each of the config's seeds: Theorem 1 and its lemmas are proved under it."""
    problems = {s: make(**shape, seed=s) for s in seeds(config)}
    opt = {s: p.opt for s, p in problems.items() if p.opt is not None}
    return assumption1_report({s: p.X for s, p in problems.items()}, opt)


def random_init(shape, scale: float, seed: int, stream: int = 0) -> np.ndarray:
    """scale · N(0, 1) entries drawn from the run's seed (streams keep W, K, Q, v independent
    of each other and of the data, which uses the bare seed)."""
    return scale * np.random.default_rng([seed, 1000 + stream]).standard_normal(shape)


def optimal_token_specs(
    config: SweepConfig,
    generator: str,
    make: Callable,
    shape: dict,
    init: Callable[[int], dict],
    run_seeds=None,
    algorithms=None,
    optimal_excess: bool = False,
    late_increment: bool = False,
) -> list[RunSpec]:
    """One run per algorithm × seed on the seed's problem make(**shape, seed=seed), from the
    initial weights init(seed), with metrics about the optimal tokens (ℓ2 norm; with
    `optimal_excess` also L − L* and the other tokens' mass, `RunSpec.optimal_excess`; with
    `late_increment` the alignment of W_t − W_{t/2}, `RunSpec.late_increment`).
    run_seeds and algorithms default to the config's."""
    run_seeds = seeds(config) if run_seeds is None else run_seeds
    algorithms = config.algorithms if algorithms is None else algorithms
    problems = {s: make(**shape, seed=s) for s in run_seeds}
    return [
        RunSpec(
            {
                "experiment": config.experiment,
                "data": {"generator": generator, **shape, "seed": seed},
                "init": {"scale": config.init_scale, "seed": seed},
            },
            problems[seed],
            algorithm,
            config.steps,
            init(seed),
            loss=config.loss,
            norms=(2.0,),
            alpha="optimal",
            grid_points=config.grid_points,
            optimal_excess=optimal_excess,
            late_increment=late_increment,
        )
        for algorithm in algorithms
        for seed in run_seeds
    ]


def scaled_step(algorithm: Algorithm, factor: float) -> Algorithm:
    """The algorithm with its step multiplied by `factor`: its rate η, or for a rule whose lr
    is a cap (Polyak's γ_b) its step (L − L*)/(c‖∇L‖²) through c, the cap left as it is."""
    if algorithm.rule.lr_is_cap:
        return replace(algorithm, c=algorithm.c / factor)
    return replace(algorithm, lr=algorithm.lr * factor)


def sweep(config: SweepConfig, out: Path, specs: list[RunSpec]) -> SweepReport:
    """Run (or resume) the sweep in `out` (on the active Dask cluster, if any: see
    base.run_experiment), then write every run's metrics as one tidy table out/metrics.parquet
    (run × step × metric, with the run's scalar config fields)."""
    store = ResultsStore(out)
    if config.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{config.experiment}: device 'cuda' asked for, but no GPU is visible")
    report = run_sweep(
        specs,
        store,
        batch_size=config.batch_size or None,
        device=None if config.device == "auto" else config.device,
        desc=config.experiment,
        cluster=active_cluster(),
    )
    table = store.table(records=report.records)
    store.write_file("metrics.parquet", writer=lambda f: pq.write_table(table, f))
    logger.info("%s: computing curves and claims", config.experiment)
    return report


def sweep_summary(report: SweepReport) -> dict:
    """The sweep's counts; "run_keys" (the stored runs the outputs were made from) goes to the
    publication's manifest, "diverged" (runs left out of the claims) is shown with them."""
    return {
        "runs": len(report.records),
        "diverged": diverged_runs(report.records),
        "run_keys": [r.key for r in report.records],
        "trained": report.ran,
        "reused": report.skipped,
        "svms_solved": report.svms,
        "seconds": round(report.seconds, 2),
    }
