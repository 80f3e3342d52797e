"""The checked base class of the optimisers: hyper-parameters checked wherever they enter,
checkpoints checked whole before they load, the torch.optim keywords (weight_decay, maximize,
foreach, differentiable), and the template step every optimiser shares (`CheckedOptimizer.step`:
gather → guard → decay → update → write back; each optimiser supplies its update)."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch.optim import Optimizer

from .._validate import check_scalar
from ..norms import mirror_map
from .divisors import NORMALIZE_TRUE
from .guards import SUPPORTED_DTYPES, guarded, working_copies, write_back
from .sparse_rows import touched_rows

NORMALIZE_MODES = ("per_tensor", "global")


# The torch.optim keywords every class takes (keyword-only, torch's defaults; see `torch_keywords`).
TORCH_DEFAULTS = dict(weight_decay=0.0, maximize=False, foreach=None, differentiable=False)


def step_function(step):
    """A class's step(): under torch.no_grad, and left out of torch.compile's graphs (one
    clean graph break, not a storm of them): before anything is written a step reads values
    on the host (are the gradients finite, can the result leave the dtype's range), which a
    graph cannot do without breaking at each of them. The exclusion is applied when the first
    optimiser of the class is made (`exclude_from_compile`): torch.compiler.disable imports
    torch._dynamo, 1.5 s that a program which never builds one of our optimisers (most
    commands of the command line) need not pay."""
    wrapped = functools.wraps(step)(torch.no_grad()(step))
    wrapped.excluded_from_compile = False
    return wrapped


def exclude_from_compile(cls: type) -> None:
    """torch.compiler.disable on each `step_function` of the class and its bases, once (before
    torch.optim.Optimizer.__init__ wraps the class's step in its profiling hook)."""
    for klass in cls.__mro__:
        step = klass.__dict__.get("step")
        if getattr(step, "excluded_from_compile", None) is False:
            step.excluded_from_compile = True
            klass.step = torch.compiler.disable(step)


def closure_loss(closure):
    """The loss from `closure` (with gradients enabled), or None: torch.optim's step protocol."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


@dataclass(eq=False, slots=True)
class StepBatch:
    """What the template step gathers for one update: one param group's parameters that have
    a gradient (PolyakStep's: one group's share of a step over all groups)."""

    index: int  # the group's index, for messages
    group: dict
    params: list[torch.Tensor]
    grads: list[torch.Tensor]  # their .grad, as found (culprits in messages)
    followed: list[torch.Tensor]  # the gradients the step follows (`gradients`)
    weights: list[torch.Tensor]  # what the update writes (`working_copies`, `guarded`)
    foreach: bool  # torch._foreach_* kernels (`use_foreach`)
    shrink: float  # decoupled weight decay's factor (`decay_factor`)
    # per tensor, the rows that have a gradient where only they are stepped (`touched_rows`)
    rows: list = field(default_factory=list)
    # what `prepare` hands to `update` (divisors, factors, …)
    parts: dict = field(default_factory=dict)

    @property
    def culprit(self) -> tuple:
        """(group index, params, grads): names the parameter whose gradient is not finite
        (`guards.check_finite`)."""
        return self.index, self.params, self.grads


class CheckedOptimizer(Optimizer):
    """A torch.optim.Optimizer whose hyper-parameters are checked wherever they enter: the
    constructor, every param group (torch's __init__ adds each one through add_param_group),
    add_param_group, load_state_dict, and again at every step, where schedulers and users
    write group["lr"] or group["momentum"] (a few microseconds per group). `checked` is the
    one validator: the step size here, a subclass's `check_hyper` for the rest.
    `check_parameter` refuses tensors the optimiser cannot step."""

    # old names of constructor arguments: {old: new}. The constructor still takes the old name
    # (DeprecationWarning) and a checkpoint's old keys are renamed as it loads; a param group
    # must use the new one.
    RENAMED: ClassVar[dict[str, str]] = {}
    # whether lr may be +∞ (a cap that never binds: Polyak's γ_b)
    LR_MAY_BE_INFINITE: ClassVar[bool] = False
    # the keyword-only constructor arguments, name → default, declared once (a subclass may add
    # its own): they stand in each class's signature in place of its constructor's **keywords,
    # so that inspect.signature and help() list them as torch's classes do
    KEYWORDS: ClassVar[dict] = TORCH_DEFAULTS

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        arguments = list(inspect.signature(cls.__init__).parameters.values())[1:]
        if arguments and arguments[-1].kind is inspect.Parameter.VAR_KEYWORD:
            keywords = [
                inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default)
                for key, default in cls.KEYWORDS.items()
            ]
            cls.__signature__ = inspect.Signature([*arguments[:-1], *keywords])

    @classmethod
    def with_keywords(cls, hyper: dict, given: dict) -> dict:
        """`hyper` with the KEYWORDS (as `given`, the constructor's **keywords, else their
        defaults), and the old names of RENAMED moved to the new ones (`renamed`); TypeError
        for any other keyword."""
        given = dict(given)
        keywords = {key: given.pop(key, default) for key, default in cls.KEYWORDS.items()}
        return cls.renamed({**hyper, **keywords}, given)

    def __init__(self, params, hyper: dict):
        exclude_from_compile(type(self))
        self.hyper_keys = tuple(hyper)  # torch adds keys of its own to the defaults
        self.checked_values: dict[int, list] = {}  # id(group): its values as last checked
        super().__init__(params, self.checked(hyper, ""))

    @classmethod
    def renamed(cls, hyper: dict, old: dict) -> dict:
        """`hyper` with the arguments given under an old name (`old`, the constructor's
        **kwargs) moved to the new one, with a DeprecationWarning; TypeError for an unknown
        keyword, or for a value given under both names."""
        hyper = dict(hyper)
        for name, value in old.items():
            new = cls.RENAMED.get(name)
            if new is None:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
            if hyper[new] is not inspect.signature(cls).parameters[new].default:
                raise TypeError(f"{cls.__name__}: give {new!r} or its old name {name!r}, not both")
            warnings.warn(
                f"{cls.__name__}: {name!r} is now called {new!r}", DeprecationWarning, stacklevel=4
            )
            hyper[new] = value
        return hyper

    @classmethod
    def checked(cls, hyper: dict, where: str, running: bool = False) -> dict:
        """`hyper` (one value per key of the defaults) checked and normalised. `where` is ""
        for the constructor's arguments, " of param group i" for a group's. `running`: the
        values a step or a checkpoint finds, where a scheduler may have set lr to 0 (the
        start of a warm-up, the end of an annealing); where they enter, lr > 0."""
        name = cls.__name__
        lr = check_scalar(
            hyper["lr"],
            f"{name}: lr{where}",
            low=0.0,
            include_low=running,
            allow_tensor=True,
            allow_inf=cls.LR_MAY_BE_INFINITE,
        )  # a positive finite number (∞ where allowed) or a one-element tensor
        torch_keys = check_torch_keywords(hyper, name, where)
        return {**cls.check_hyper(hyper, where), **torch_keys, "lr": lr}

    @classmethod
    def check_hyper(cls, hyper: dict, where: str) -> dict:
        """The hyper-parameters other than lr, checked and normalised."""
        raise NotImplementedError

    def check_parameter(self, w: torch.Tensor, label: str) -> None:
        """Refuse a parameter this optimiser cannot step (TypeError, naming it)."""
        if w.dtype not in SUPPORTED_DTYPES:
            dtype = str(w.dtype).removeprefix("torch.")
            raise TypeError(
                f"{type(self).__name__}: {label} is {dtype}; attnbias optimisers support real "
                "floating tensors (float16, bfloat16, float32, float64)"
            )

    def add_param_group(self, param_group: dict) -> None:
        name, index = type(self).__name__, len(self.param_groups)
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}: param group {index} must be a dict, got {type(param_group)}")
        for argument, key in self.RENAMED.items():
            if argument in param_group:
                raise ValueError(
                    f"{name}: param group {index} gives {argument!r}; a group sets it as {key!r}"
                )
        given = {key: param_group.get(key, self.defaults[key]) for key in self.hyper_keys}
        param_group.update(self.checked(given, f" of param group {index}"))
        super().add_param_group(param_group)
        try:
            for k, w in enumerate(self.param_groups[-1]["params"]):
                self.check_parameter(w, f"parameter {k} of group {index}")
        except (TypeError, ValueError):
            self.param_groups.pop()
            raise

    def check_group(self, group: dict, index: int) -> None:
        """Check a group's hyper-parameters again, as a step finds them (in place,
        normalised). Values that are the very objects checked last time are not checked
        again (numbers and strings cannot change; a tensor lr can, in place, so it is)."""
        values = self.group_values(group, index)
        seen = self.checked_values.get(id(group), ())
        if len(seen) == len(values) and all(
            v is s and not isinstance(v, torch.Tensor) for v, s in zip(values, seen)
        ):
            return
        given = dict(zip(self.hyper_keys, values))
        group.update(self.checked(given, f" of param group {index}", running=True))
        self.checked_values[id(group)] = [group[key] for key in self.hyper_keys]

    def group_values(self, group: dict, index: int) -> list:
        """The group's hyper-parameters, in the order of `hyper_keys` (a torch keyword a
        checkpoint of an older version lacks takes its default)."""
        for key, default in TORCH_DEFAULTS.items():
            group.setdefault(key, default)
        missing = [key for key in self.hyper_keys if key not in group]
        if missing:
            raise ValueError(
                f"{type(self).__name__}: param group {index} has no {missing[0]!r} (a state "
                "dict saved by another optimiser?)"
            )
        return [group[key] for key in self.hyper_keys]

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's load_state_dict, after checking the whole state dict (a checkpoint is
        untrusted input: `check_state`); a bad one changes nothing, and neither does a failure
        while it is applied (the optimiser is put back as it was)."""
        state_dict = check_state(self, state_dict)
        before = self.state, self.param_groups, dict(self.checked_values)
        try:
            super().load_state_dict(state_dict)
            self.loaded(state_dict)
            self.checked_values.clear()
            for index, group in enumerate(self.param_groups):
                self.check_group(group, index)
        except BaseException:
            # torch's load built a new state and new groups: the old ones are untouched
            self.state, self.param_groups = before[:2]
            self.checked_values = before[2]
            raise

    def loaded(self, state_dict: dict) -> None:
        """What a subclass adds to torch's load of a checked state dict (before the groups
        are checked again); raising puts the optimiser back as it was."""

    def upgraded(self, group):
        """A saved param group in this version's spelling: old names renamed, the torch
        keywords added with their defaults (a copy; anything but a dict as it is)."""
        if not isinstance(group, dict):
            return group
        group = {**TORCH_DEFAULTS, **group}
        for old, new in self.RENAMED.items():
            if old in group and new not in group:
                group[new] = group.pop(old)
        return group

    def groups_with_grad(self):
        """(index, group, params, grads) for each group with a gradient, its hyper-parameters
        checked again first."""
        for index, group in enumerate(self.param_groups):
            self.check_group(group, index)
            params, grads = self.params_with_grad(group, index)
            if params:
                yield index, group, params, grads

    def params_with_grad(self, group: dict, index: int):
        """Parameters of a group that have a gradient, and those gradients (others are
        skipped, and so are zero-size ones: nothing to step), each parameter checked."""
        params, grads = [], []
        for k, w in enumerate(group["params"]):
            if w.grad is None:
                continue
            self.check_parameter(w, f"parameter {k} of group {index}")
            if w.grad.is_sparse:
                raise RuntimeError("attnbias optimisers do not support sparse gradients")
            if w.numel() == 0:
                continue
            params.append(w)
            grads.append(w.grad)
        return params, grads

    def momentum_buffers(self, params, weights) -> list[torch.Tensor]:
        """The momentum buffer of each parameter, shaped and typed like its working copy
        (torch's load_state_dict casts a float32 buffer of a float16 parameter to float16)."""
        out = []
        for w, x in zip(params, weights):
            s = self.state[w]
            buffer = s.get("momentum_buffer")
            if buffer is None or buffer.shape != x.shape:
                buffer = torch.zeros_like(x)
            s["momentum_buffer"] = buffer = buffer.to(device=x.device, dtype=x.dtype)
            out.append(buffer)
        return out

    # The template step. `step` is the same for every optimiser: gather the parameters with a
    # gradient (`gather`), let the rule compute what its update needs and bound how far it can
    # move an entry (`prepare`), guard the weights a step could carry out of their dtype's
    # range (`guards.guarded`), apply decoupled weight decay (`decay`), update (`update`, the
    # rule's functional kernel), and write the results back (`guards.write_back`: all of
    # them, or none where one left the range; then `written`). Subclasses supply `prepare`
    # and `update`; `gather`, `decay`, `sparse` and `loss_of` where theirs differ.

    @step_function
    def step(self, closure=None):
        """One step of every parameter with a gradient (the class docstring says which).
        `closure`: optional, recomputes the loss (with gradients enabled) and returns it.
        Returns that loss, or None without a closure, as torch.optim's optimisers do. A NaN or
        infinite gradient raises FloatingPointError naming the parameter, and no parameter is
        changed."""
        loss = self.loss_of(closure)
        name = type(self).__name__
        for batch in self.gather(loss):
            bounds = self.prepare(batch)
            if bounds is not None:
                batch.weights = guarded(batch.params, batch.weights, bounds)
            self.decay(batch)
            self.update(batch)
            write_back(name, batch.index, batch.params, batch.weights)
            self.written(batch)
        return loss

    def loss_of(self, closure):
        """The loss a step returns (and a rule may use): `closure_loss(closure)`."""
        return closure_loss(closure)

    def gather(self, loss):
        """The batches of a step: one per param group with a gradient, its hyper-parameters
        checked again first (`groups_with_grad`)."""
        name = type(self).__name__
        for index, group, params, grads in self.groups_with_grad():
            foreach = use_foreach(group, params)
            shrink = decay_factor(name, index, group)
            followed = gradients(group, grads, foreach)
            sparse = self.sparse(group, shrink)
            rows = [touched_rows(g) for g in followed] if sparse else [None] * len(followed)
            yield StepBatch(
                index, group, params, grads, followed, working_copies(params), foreach, shrink,
                rows,
            )  # fmt: skip

    def sparse(self, group: dict, shrink: float) -> bool:
        """Whether a step may leave the rows with a zero gradient as they are (stepping only
        the touched ones, `sparse_rows`): not where something else moves them (weight decay,
        momentum). Default: no."""
        return False

    def prepare(self, batch: StepBatch):
        """What the update needs (into batch.parts), and how far the step can move an entry:
        a float for all tensors, one per tensor, or None where the update checks its own
        range."""
        raise NotImplementedError

    def decay(self, batch: StepBatch) -> None:
        """Decoupled weight decay: w ← shrink·w before the update (`decay_`)."""
        decay_(batch.weights, batch.shrink, batch.foreach)

    def update(self, batch: StepBatch) -> None:
        """The rule's update of batch.weights, in place."""
        raise NotImplementedError

    def written(self, batch: StepBatch) -> None:
        """What a rule records once the results are in the parameters (default: nothing)."""


def check_state(optimizer: CheckedOptimizer, state_dict) -> dict:
    """A state dict for `optimizer` checked whole before any of it is applied (a checkpoint is
    untrusted input), in this version's spelling: the groups as the optimiser's own (the same
    number of parameters each, hyper-parameters in range by the constructor's checks), and
    the state of listed parameters only, each value a finite number or a finite tensor shaped
    like its parameter (mirror descent's θ may be ±inf only where the saved copy of w says it
    overflowed: |w|^{p−1} beyond the dtype). TypeError or ValueError naming what is wrong."""
    name = type(optimizer).__name__
    if not isinstance(state_dict, dict):
        raise TypeError(f"{name}: a state dict must be a dict, got {type(state_dict).__name__}")
    saved, state = state_dict.get("param_groups"), state_dict.get("state")
    if not isinstance(saved, list) or not isinstance(state, dict):
        raise TypeError(f"{name}: a state dict has a list 'param_groups' and a dict 'state'")
    if len(saved) != len(optimizer.param_groups):
        raise ValueError(
            f"{name}: the state dict has {len(saved)} param groups, the optimiser "
            f"{len(optimizer.param_groups)}"
        )
    saved = [optimizer.upgraded(group) for group in saved]
    params = {}
    for index, (group, own) in enumerate(zip(saved, optimizer.param_groups)):
        if not isinstance(group, dict) or not isinstance(group.get("params"), list):
            raise TypeError(f"{name}: param group {index} of the state dict is not a group")
        if len(group["params"]) != len(own["params"]):
            raise ValueError(
                f"{name}: param group {index} of the state dict has {len(group['params'])} "
                f"parameters, the optimiser's {len(own['params'])}"
            )
        given = dict(zip(optimizer.hyper_keys, optimizer.group_values(group, index)))
        optimizer.checked(given, f" of param group {index}", running=True)
        for k, (i, w) in enumerate(zip(group["params"], own["params"])):
            params[i] = w, group, f"parameter {k} of group {index}"
    for i, values in state.items():
        if i not in params:
            raise ValueError(f"{name}: the state dict has state for {i!r}, which no group lists")
        w, group, label = params[i]
        if not isinstance(values, dict):
            raise TypeError(f"{name}: the state of {label} must be a dict, got {type(values)}")
        for key, value in values.items():
            problem = state_value_problem(key, value, w, values, group)
            if problem is not None:
                raise ValueError(f"{name}: {key!r} of {label} {problem}; nothing was loaded")
    return {**state_dict, "param_groups": saved}


def state_value_problem(key, value, w: torch.Tensor, values: dict, group: dict) -> str | None:
    """What is wrong with one saved state value of parameter w, or None."""
    if isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"is {value}"
    if not isinstance(value, torch.Tensor):
        return f"is a {type(value).__name__}, not a tensor or a number"
    if not (value.is_floating_point() or value.dtype in (torch.int64, torch.int32)):
        return f"is a {value.dtype} tensor"
    if value.layout != torch.strided or value.is_meta:  # no values to check, or none at all
        return f"is a {'meta' if value.is_meta else value.layout} tensor, not a dense one"
    if value.shape != w.shape:  # a scalar too: every state tensor holds one value an entry
        return f"has shape {tuple(value.shape)}, its parameter {tuple(w.shape)}"
    if not value.is_floating_point():
        return None
    finite = torch.isfinite(value)
    if bool(finite.all()):
        return None
    copy = values.get("weight")
    if key == "dual" and isinstance(copy, torch.Tensor) and copy.shape == value.shape:
        # p > 2: θ = |w|^{p−1} overflows for large finite w, and the step works from w there
        if bool(torch.isfinite(copy).all()):
            overflowed = mirror_map(copy.to(value.dtype), float(group["p"]))
            if bool(torch.where(finite, True, value == overflowed).all()):
                return None
    return "holds NaN or inf"


def check_torch_keywords(hyper: dict, name: str, where: str) -> dict:
    """The torch.optim keywords of `hyper`, checked: weight_decay ≥ 0 (decoupled: see
    `decay_`), maximize and differentiable booleans, foreach None or a boolean. differentiable
    must be False: a step checks its values on the host (no parameter is changed when a
    gradient is not finite) and writes in place, which autograd cannot differentiate."""
    out = dict(weight_decay=check_scalar(hyper["weight_decay"], f"{name}: weight_decay{where}"))
    if out["weight_decay"] < 0:
        raise ValueError(f"{name}: weight_decay{where} must be >= 0, got {out['weight_decay']:g}")
    for key in ("maximize", "foreach", "differentiable"):
        value = hyper[key]
        if not isinstance(value, bool) and not (key == "foreach" and value is None):
            kind = "None or a bool" if key == "foreach" else "a bool"
            raise TypeError(f"{name}: {key}{where} must be {kind}, got {value!r}")
        out[key] = value
    if out["differentiable"]:
        raise ValueError(
            f"{name}: differentiable{where} must be False: each step checks its values on the "
            "host (a NaN gradient changes no parameter) and writes in place"
        )
    return out


def use_foreach(group: dict, params: list[torch.Tensor]) -> bool:
    """Whether to step the group with torch._foreach_* kernels: its `foreach`, or where that is
    None, as torch chooses: when every parameter is a CUDA tensor."""
    if group["foreach"] is not None:
        return group["foreach"]
    return bool(params) and all(w.is_cuda for w in params)


def gradients(group: dict, grads: list[torch.Tensor], foreach: bool) -> list[torch.Tensor]:
    """The gradients a step follows: the float32 working copies of `working_copies`, negated
    where the group maximizes (new tensors: .grad is never changed)."""
    grads = working_copies(grads)
    if not group["maximize"]:
        return grads
    return list(torch._foreach_neg(grads)) if foreach else [torch.neg(g) for g in grads]


def decay_factor(optimizer: str, index: int, group: dict) -> float:
    """1 − η·λ, the factor decoupled weight decay multiplies the weights by before a step
    (1 when weight_decay is 0); ValueError unless it is > 0 (η·λ ≥ 1 would flip or zero
    the weights)."""
    if group["weight_decay"] == 0:  # (also for lr = ∞, an uncapped Polyak step)
        return 1.0
    shrink = 1.0 - float(group["lr"]) * group["weight_decay"]
    if not shrink > 0:
        raise ValueError(
            f"{optimizer}: lr × weight_decay of param group {index} must be < 1, got "
            f"{1.0 - shrink:g}"
        )
    return shrink


def decay_(weights: list[torch.Tensor], shrink: float, foreach: bool) -> None:
    """In place: w ← shrink·w (decoupled weight decay, as torch.optim.AdamW)."""
    if shrink == 1.0:
        return
    if foreach:
        torch._foreach_mul_(weights, shrink)
    else:
        for w in weights:
            w.mul_(shrink)


def check_momentum(momentum, name: str = "momentum") -> float:
    return check_scalar(momentum, name, low=0.0, high=1.0, include_high=False)


def check_normalize(normalize, name: str = "normalize") -> str:
    """False/None → "none"; True → `divisors.NORMALIZE_TRUE` ("global", the papers' ‖∇L‖); or a
    mode name ("none" as stored)."""
    if (
        normalize is None
        or normalize is False
        or (isinstance(normalize, str) and normalize == "none")
    ):
        return "none"
    if normalize is True:
        return NORMALIZE_TRUE
    if not isinstance(normalize, str) or normalize not in NORMALIZE_MODES:
        error = TypeError if not isinstance(normalize, str) else ValueError
        raise error(
            f"{name} must be False, True or one of {NORMALIZE_MODES}, got "
            f"{type(normalize).__name__} {normalize!r}"
        )
    return normalize
