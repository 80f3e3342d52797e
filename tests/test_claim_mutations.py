"""Every comparison in the claim rules matters: flip each one in turn (an AST mutation of the
rule modules: `<` ↔ `>=`, `<=` ↔ `>`, `==` ↔ `!=`, `is` ↔ `is not`, `in` ↔ `not in`, and the
comparison a Rule states, ">" ↔ "<=" …) and some verdict of the constructed cases in
claim_cases.py must change. A mutant that changes nothing is a dead or untested comparison."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
import textwrap
import types
from dataclasses import replace

import numpy as np
import pytest

import attnbias.judging.claims as claims_model
import claim_cases
from attnbias import experiments
from attnbias.curves import Curves
from attnbias.experiment_registry import load_config
from attnbias.experiments import md_plain, ngd_joint
from attnbias.judging import verdicts
from attnbias.judging.claims import Claim
from claim_cases import cases, value_cases

MODULES = tuple(info.name for info in pkgutil.iter_modules(verdicts.__path__))
FLIP = {
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
FLIP_RULE = {"<": ">=", ">=": "<", "<=": ">", ">": "<="}


def rule_comparisons(tree: ast.AST):
    """The string constants that are a Rule's comparison (its second argument)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "Rule"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in FLIP_RULE
        ):
            yield node.args[1]


def mutation_sites(tree: ast.AST):
    """(description, apply, undo) for every comparison operator and Rule comparison."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                flipped = FLIP[type(op)]()

                def apply(node=node, k=k, flipped=flipped):
                    node.ops[k] = flipped

                def undo(node=node, k=k, op=op):
                    node.ops[k] = op

                yield (
                    f"line {node.lineno}: {type(op).__name__} → {type(flipped).__name__}",
                    apply,
                    undo,
                )
    for const in rule_comparisons(tree):

        def apply(const=const, old=const.value):
            const.value = FLIP_RULE[old]

        def undo(const=const, old=const.value):
            const.value = old

        yield f"line {const.lineno}: Rule {const.value!r} → {FLIP_RULE[const.value]!r}", apply, undo


def verdicts_of(all_cases) -> list:
    """Every case's status and its parts' statuses; for a helper that returns numbers or text
    (`value_cases`), its result (an exception is an outcome too)."""
    out = []
    for name, listed in all_cases.items():
        module, attr = name.split(".")
        fn = getattr(importlib.import_module(f"{verdicts.__name__}.{module}"), attr)
        for _, args, kwargs in listed:
            try:
                claim = fn(*args, **kwargs)
                if isinstance(claim, Claim):
                    out.append((claim.status, tuple(p.status for p in claim.parts)))
                else:
                    out.append(("value", repr(claim)))
            except Exception as err:
                out.append(("error", type(err).__name__))
    return out


def load_mutant(module: types.ModuleType, tree: ast.AST) -> dict:
    """The mutated module's namespace (executed as the module itself, so relative imports work)."""
    namespace = {"__name__": module.__name__, "__package__": module.__package__,
                 "__file__": module.__file__}  # fmt: skip
    exec(compile(tree, module.__file__, "exec"), namespace)
    return namespace


@pytest.mark.slow
def test_every_comparison_in_the_claim_rules_changes_a_verdict(monkeypatch):
    # fewer resamples: the cases are clear-cut, and the test's budget is two minutes
    monkeypatch.setattr(claims_model, "BOOTSTRAP_RESAMPLES", 999)
    all_cases = {**cases(), **value_cases()}
    baseline = verdicts_of(all_cases)
    rule_modules = {m: importlib.import_module(f"{verdicts.__name__}.{m}") for m in MODULES}
    survivors, tried = [], 0
    for name, module in rule_modules.items():
        tree = ast.parse(inspect.getsource(module))
        for where, apply, undo in list(mutation_sites(tree)):
            apply()
            try:
                mutant = load_mutant(module, tree)
            finally:
                undo()
            originals = {a: f for a, f in vars(module).items() if inspect.isfunction(f)}
            with monkeypatch.context() as patch:
                # the mutant's functions replace the originals wherever the rules use them
                for target in rule_modules.values():
                    for attr, original in originals.items():
                        if getattr(target, attr, None) is original:
                            patch.setattr(target, attr, mutant[attr])
                changed = verdicts_of(all_cases) != baseline
            tried += 1
            if not changed:
                survivors.append(f"{name}.py {where}")
    assert tried > 40, f"only {tried} comparisons found: the walker is broken"
    assert not survivors, "comparisons whose flip changes no verdict:\n" + "\n".join(survivors)


@pytest.mark.parametrize(
    "source, sites",
    [("x = a < b", 1), ("x = a <= b < c", 2), ("Rule('q', '>', 1.0, 's')", 1), ("x = 1", 0)],
)
def test_the_walker_finds_every_comparison(source, sites):  # fmt: skip
    assert len(list(mutation_sites(ast.parse(source)))) == sites


# --- the experiments' own claims() functions --------------------------------------------------
# Their comparisons (local_global's Gram-dominance test `v < 1.0`, the `len(...) > 1` guards of
# md_plain, ngd_joint and atlas) decide verdicts too. Each module below is mutated inside its
# claims function and every function of the experiments' modules that it calls (its own
# helpers, theory_measures', compare's: `claims_code`); training and figure code is not a
# verdict. Against the experiment-level constructed cases of tests/test_claims.py.


def md_plain_transient_claims():
    """md-plain's claims on runs flat until the fit window's first step, then falling like
    (log t)^-3: the transient lies outside the fit, so the rate holds and is stable."""
    config = load_config("md-plain", quick=True)
    steps = claim_cases.STEPS
    shape = np.log(np.maximum(steps, config.fit_window[0])) ** -3.0
    groups = {
        name: Curves(c.steps, {m: v[:, -1:] * shape / shape[-1] for m, v in c.values.items()})
        for name, c in claim_cases.md_groups().items()
    }
    return md_plain.claims(groups, claim_cases.md_own(), config)


def test_a_transient_before_the_fit_window_is_left_out_of_the_fit():
    """Pins the case that catches a flip of theory_measures.in_window's lower bound."""
    assert {c.id: c.status for c in md_plain_transient_claims()} == {
        "md-plain/own-p-nearest": "supported",
        "md-plain/polylog-rate": "supported",
        "md-plain/polylog-window-stable": "supported",
    }


def ngd_joint_capped_args() -> tuple:
    """ngd-joint's claims' arguments on constructed runs, with a confirmation of their own."""
    groups = claim_cases.joint(claim_cases.ngd_groups())
    seen = claim_cases.every_step(groups)
    config = {"baseline": "GD", "fastest": "Polyak", "target_alignment": 0.95,
              "target_loss": 1e-3}  # fmt: skip
    return groups, config, replace(seen, confirmation=dict(seen.evaluation))


def ngd_joint_capped_claims():
    """ngd-joint's claims where Polyak's cap γ_b = 1e6 binds from step 0 in every run (its
    `cap_onsets`): every speed part that times Polyak is inconclusive, whatever its interval,
    on the confirmation and on the evaluation seeds' look alike."""

    def onsets(look):
        return {f: np.zeros(len(c.seed_ids())) for f, c in look.evaluation["Polyak"].items()}

    return ngd_joint.claims(*ngd_joint_capped_args(), onsets, 1e6)


def test_a_binding_cap_leaves_polyaks_speed_parts_inconclusive():
    """Pins the case that catches flips of ngd_joint.claims' cap guards."""
    made = {c.id: c for c in ngd_joint_capped_claims()}
    uncapped = {c.id: c for c in ngd_joint.claims(*ngd_joint_capped_args())}
    for slug in ("all-beat-gd", "polyak-fastest"):
        row = made[f"ngd-joint/{slug}"]
        timed = [p for p in row.parts if p.rule.quantity.startswith("steps to reach")
                 and "Polyak" in p.rule.quantity and p.effect is not None]  # fmt: skip
        assert timed and all(p.status == "inconclusive" for p in timed)
        assert any(p.status != "inconclusive" for p in uncapped[f"ngd-joint/{slug}"].parts)


def experiment_outcomes() -> list:
    """Every experiment-level constructed claim's status and its parts' statuses."""
    from test_claims import CLAIMS, synthetic_claims, text_md_missed_target
    from test_reexamine_claims import reexamine_claims

    made = [c for listed in synthetic_claims().values() for c in listed]
    made += [c for make in CLAIMS.values() for holds in (True, False) for c in make(holds=holds)]
    made += [c for protocol in ("target", "budget") for c in text_md_missed_target(protocol)]
    made += md_plain_transient_claims()
    made += ngd_joint_capped_claims()
    made += reexamine_claims()
    return [(c.id, c.status, tuple(p.status for p in c.parts)) for c in made]


# module → the function whose comparisons decide its verdicts
EXPERIMENT_CLAIMS = {
    "md_local": "claims", "md_joint": "claims", "ngd_fixed": "claims", "ngd_joint": "claims",
    "kq_nuclear": "claims", "atlas": "claims", "md_plain": "claims", "local_global": "claims",
    "ngd_rates": "claims", "joint_rates": "claims", "trajectory_lemmas": "claims",
    "text_md": "text_md_claims",
    "text_finetune": "finetune_claims", "vision": "vision_claims",
    "reexamine_atlas": "claims", "reexamine_polyak": "claims",
}  # fmt: skip
# experiments whose claims() has no experiment-level constructed cases yet: their comparisons
# are not mutated here (a gap, listed so that it cannot grow unnoticed)
NOT_YET: set[str] = set()
# functions of the claims code whose flipped comparisons change no verdict of the constructed
# cases, each with why: listed so that the list cannot grow unnoticed, and each must still have
# a surviving flip (else it leaves the list)
SURVIVING = {
    # evidence and wording only: what the row prints beside a verdict that stands either way
    "md_plain.polylog_reach": "the step an unmet reason names; inconclusive either way",
    "theory_measures.assumption1_report": "evidence: how many seeds satisfy Assumption 1",
    "trajectory_lemmas.failures": "evidence: the first violations listed",
    "text_finetune.chosen_rates": "wording: the rates tried and chosen, named in the claim's "
    "text (a rate at its grid's edge is judged by compare.arms' interior flag)",
    "compare.rates_text": "wording: the rates tried, as chosen_rates names them",
    "mcnemar.pooled_mcnemar": "evidence: McNemar's test beside the paired accuracies",
    "joint_rates.thm3_premises": "the loss premise's reason: Eq. 13's absent time factor, the "
    "other premise, leaves thm3-slower, thm3-rate and thm4-v-margin inconclusive either way",
    "trajectory_lemmas.score_note": "evidence: lemma13-score's unchanged and rounded pairs",
    "joint_rates.thm3_readings": "wording: which reading of Thm 3's lost bound the interval "
    "meets, beside a verdict the absent Eq. 13 factor leaves inconclusive either way",
    "runs.assumption1_by_seed": "evidence: δ without the optimal tokens' pairs (antipodal's "
    "footnote), printed beside verdicts that stand either way",
    "text_md.with_cut_sensitivity": "evidence and wording: the near-zero share's verdict at "
    "½× and 2× its cut, printed beside the part's own verdict, which stands either way",
}


def test_every_experiment_with_claims_is_mutated_or_listed_as_a_gap():
    with_claims = {
        info.name
        for info in pkgutil.iter_modules(experiments.__path__)
        if not info.ispkg
        and "def claims("
        in inspect.getsource(importlib.import_module(f"{experiments.__name__}.{info.name}"))
    }
    assert with_claims <= set(EXPERIMENT_CLAIMS) | NOT_YET, with_claims - set(EXPERIMENT_CLAIMS)


def function_sites(tree: ast.AST, name: str):
    """mutation_sites inside the module-level function `name` (its nested functions too)."""
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return mutation_sites(node)


# the modules outside experiments/ that the experiments measure with: their comparisons decide
# verdicts as much as the drivers' own
MEASURES = ("attnbias.curves", "attnbias.theory_measures")


def is_claims_code(obj) -> bool:
    """A module-level function of an experiment module or of the modules the experiments
    measure with (theory_measures, curves, compare, …); the rule modules have their own test
    above."""
    return (
        inspect.isfunction(obj)
        and (obj.__module__.startswith("attnbias.experiments.") or obj.__module__ in MEASURES)
        and not obj.__module__.startswith(verdicts.__name__)
        and getattr(sys.modules[obj.__module__], obj.__name__, None) is obj
    )


def claims_code(function) -> list:
    """`function` and every function of claims code it calls, directly or through the others
    (by name, or as `module.name`): where a comparison can change a verdict."""
    found, todo = [], [function]
    while todo:
        fn = todo.pop()
        if fn in found:
            continue
        found.append(fn)
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
            obj = None
            if isinstance(node, ast.Name):
                obj = fn.__globals__.get(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                obj = getattr(fn.__globals__.get(node.value.id), node.attr, None)
            if is_claims_code(obj):
                todo.append(obj)
    return found


def experiment_claims_code() -> list:
    """The claims code of every experiment's claims function, each function once."""
    found = []
    for name, function in EXPERIMENT_CLAIMS.items():
        module = importlib.import_module(f"attnbias.experiments.{name}")
        found += [fn for fn in claims_code(getattr(module, function)) if fn not in found]
    return found


def test_the_claims_code_takes_the_helpers_a_claims_function_calls():
    """local_global.claims calls `ended` (its own) and `gram_dominance` (theory_measures'):
    their comparisons decide its verdicts as much as its own do."""
    from attnbias import theory_measures
    from attnbias.experiments import local_global

    code = claims_code(local_global.claims)
    assert code[0] is local_global.claims
    assert local_global.ended in code and theory_measures.gram_dominance in code
    assert not any(fn.__module__.startswith(verdicts.__name__) for fn in code)


@pytest.mark.slow
def test_every_comparison_in_the_experiments_claims_changes_a_verdict(monkeypatch):
    monkeypatch.setattr(claims_model, "BOOTSTRAP_RESAMPLES", 999)
    baseline = experiment_outcomes()
    experiment_modules = [
        importlib.import_module(f"attnbias.experiments.{info.name}")
        for info in pkgutil.iter_modules(experiments.__path__)
        if not info.ispkg
    ] + [importlib.import_module(name) for name in MEASURES]
    survivors, tried = [], 0
    for fn in experiment_claims_code():
        module = sys.modules[fn.__module__]
        tree = ast.parse(inspect.getsource(module))
        for where, apply, undo in list(function_sites(tree, fn.__name__)):
            apply()
            try:
                mutant = load_mutant(module, tree)
            finally:
                undo()
            with monkeypatch.context() as patch:
                # the mutant replaces the function wherever an experiment module names it
                for target in experiment_modules:
                    if getattr(target, fn.__name__, None) is fn:
                        patch.setattr(target, fn.__name__, mutant[fn.__name__])
                try:
                    changed = experiment_outcomes() != baseline
                except Exception:  # a mutant that breaks the claims is caught too
                    changed = True
            tried += 1
            if not changed:
                survivors.append((f"{module.__name__.rsplit('.', 1)[1]}.{fn.__name__}", where))
    assert tried > 10, f"only {tried} comparisons found: the walker is broken"
    unlisted = [f"{name} {where}" for name, where in survivors if name not in SURVIVING]
    assert not unlisted, "comparisons whose flip changes no verdict:\n" + "\n".join(unlisted)
    stale = set(SURVIVING) - {name for name, _ in survivors}
    assert not stale, f"each flip of these changes a verdict now: off SURVIVING with {stale}"
