"""A new maintainer adds an optimiser from outside the package by docs/ARCHITECTURE.md alone
("Adding an optimiser"): its class and one registered `UpdateRule`
(tests/fixtures/toy_optimizer.py).
Configs then name it, it builds for one model, and the batched engine steps it as that model's
own loop does; the optimiser vocabulary lives in optim/, which config and real/ import, and
neither imports the engine."""

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbias.config import Algorithms, ConfigError, ExperimentConfig, resolve
from attnbias.data import gaussian_unit
from attnbias.engine import RunBatch, RunSpec, simulate, steppers
from attnbias.engine.single_run import run_reference
from attnbias.optim.algorithm import Algorithm
from attnbias.optim.registry import RULES, UpdateRule, register

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import toy_checked_optimizer
import toy_optimizer

SRC = Path(__file__).resolve().parent.parent / "src" / "attnbias"
TOY = {"name": "HB", "optimizer": "clipped-hb", "lr": 0.2, "momentum": 0.5}


class ToyConfig(ExperimentConfig):
    algorithms: Algorithms


@pytest.fixture
def toy():
    rule = register(toy_optimizer.RULE)
    yield rule
    del RULES[rule.name]


def test_a_registered_rule_is_named_by_configs_with_only_the_fields_it_reads(toy):
    algorithm = Algorithm.from_dict(TOY)
    assert algorithm.rule is toy and algorithm.family == "torch"
    assert algorithm.to_dict() == TOY
    with pytest.raises(ValueError, match=r"algorithms\[0\]\.p applies only to optimizer md"):
        Algorithm.from_dict({**TOY, "p": 3.0}, "algorithms[0]")
    config = resolve(ToyConfig, "toy", [("my.toml", {"algorithms": [TOY]})])
    assert config.algorithms == (algorithm,) and config.to_dict()["algorithms"] == [TOY]
    with pytest.raises(ConfigError, match=r"my\.toml: toy: algorithms\[0\]\.p applies only"):
        resolve(ToyConfig, "toy", [("my.toml", {"algorithms": [{**TOY, "p": 3.0}]})])


def test_an_unregistered_rule_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"optimizer must be one of \('gd', 'md'"):
        Algorithm.from_dict(TOY)


def test_the_engine_steps_a_registered_rule_as_its_own_optimiser_steps_one_model(toy):
    algorithm = Algorithm.from_dict(TOY)
    optimizer = algorithm.torch_optimizer([torch.nn.Parameter(torch.zeros(2))])
    assert type(optimizer) is toy_optimizer.ClippedHeavyBall
    assert optimizer.param_groups[0]["momentum"] == 0.5
    rng = np.random.default_rng(3)
    specs = [
        RunSpec({"i": i}, gaussian_unit(4, 5, 6, seed=i), algorithm, 15,
                {"W": rng.standard_normal((6, 6))})
        for i in range(3)
    ]  # fmt: skip
    grid, out = np.arange(16), {}

    def keep(done):
        for j, i in enumerate(done.index):
            out[int(i)] = done.snapshots["W"][j].numpy()

    simulate(RunBatch.from_specs(specs), grid, keep)
    for i, spec in enumerate(specs):
        reference = run_reference(spec, grid)["W"]
        assert np.abs(reference[-1] - reference[0]).max() > 0.01  # it moved
        # the engine's closed-form gradient against autograd's: ulps apart (as test_steepest's)
        np.testing.assert_allclose(out[i], reference, rtol=0, atol=1e-12)


def test_register_refuses_what_is_not_a_new_rule(toy):
    with pytest.raises(TypeError, match="rule must be a UpdateRule"):
        register({"name": "x"})
    with pytest.raises(ValueError, match=r"rule\.name 'clipped-hb' is taken"):
        register(toy)
    with pytest.raises(ValueError, match=r"rule\.reads names no Algorithm field: \['beta'\]"):
        register(replace(toy, name="other", reads=("beta",)))


def test_a_family_the_engine_has_no_stepper_for_is_refused_by_name():
    rule = register(UpdateRule("orphan", "nowhere", "no stepper", toy_optimizer.build))
    try:
        algorithm = Algorithm("O", "orphan", 0.1)
        with pytest.raises(ValueError, match="the engine has no stepper 'nowhere'"):
            steppers.stepper([algorithm], [torch.zeros(1, 2, 2)])
    finally:
        del RULES[rule.name]


def test_every_built_in_family_has_a_stepper_in_the_engine():
    assert {rule.family for rule in RULES.values()} <= set(steppers.STEPPERS)


# A toy on the checked base class (tests/fixtures/toy_checked_optimizer.py): it writes only its
# hyper-parameter check, `prepare` and `update`; the template step gives it the rest.


def test_a_toy_on_the_checked_base_class_takes_the_hand_computed_step():
    w = torch.tensor([0.5, -2.0, 1.0], dtype=torch.float64, requires_grad=True)
    w.grad = torch.tensor([3.0, -0.2, 0.0], dtype=torch.float64)
    toy_checked_optimizer.ClippedSGD([w], lr=0.1).step()
    assert w.detach().tolist() == [0.5 - 0.1, -2.0 + 0.1 * 0.2, 1.0]


def test_a_toy_on_the_checked_base_class_gets_the_template_steps_guarantees():
    ClippedSGD = toy_checked_optimizer.ClippedSGD
    # float16: stepped in float32 and rounded back
    half = torch.tensor([0.1, 3.0], dtype=torch.float16, requires_grad=True)
    half.grad = torch.tensor([0.3, -7.0], dtype=torch.float16)
    want = (half.detach().float() - 0.01 * half.grad.float().clamp(-1, 1)).half()
    ClippedSGD([half], lr=0.01).step()
    assert torch.equal(half.detach(), want)
    # weight decay (decoupled, before the step) and maximize
    w = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    w.grad = torch.tensor([0.5], dtype=torch.float64)
    ClippedSGD([w], lr=0.1, weight_decay=0.5, maximize=True).step()
    assert w.item() == 2.0 * (1 - 0.1 * 0.5) + 0.1 * 0.5
    # a NaN gradient: FloatingPointError naming the parameter, no parameter changed
    a, b = (torch.ones(2, dtype=torch.float32, requires_grad=True) for _ in range(2))
    a.grad = torch.ones(2, dtype=torch.float32)
    b.grad = torch.tensor([1.0, float("nan")], dtype=torch.float32)
    with pytest.raises(FloatingPointError, match=r"parameter 1 of group 0 .* no parameter"):
        ClippedSGD([a, b], lr=0.1).step()
    assert a.tolist() == b.tolist() == [1.0, 1.0]
    # a value a scheduler writes is checked at the step
    optimizer = ClippedSGD([a], lr=0.1)
    optimizer.param_groups[0]["lr"] = -1.0
    with pytest.raises(ValueError, match=r"ClippedSGD: lr of param group 0"):
        optimizer.step()
    # a step that would leave float32's range is refused before anything is written
    big = torch.tensor([3e38], dtype=torch.float32, requires_grad=True)
    big.grad = torch.tensor([-1.0], dtype=torch.float32)
    with pytest.raises(FloatingPointError, match="leaves float32's range"):
        ClippedSGD([big], lr=1e38).step()
    assert big.item() == torch.tensor(3e38, dtype=torch.float32).item()
