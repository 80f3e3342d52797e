"""What the optimiser classes share: checking hyper-parameters and parameters, the step
protocol, the torch.optim keywords (weight_decay, maximize, foreach, differentiable),
gathering gradients, float32 working copies of half-precision parameters, the dual iterates of
mirror descent and the check for non-finite gradients."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from typing import ClassVar

import numpy as np
import torch
from torch.optim import Optimizer

from .._validate import check_scalar
from ..norms import dual_exponent, lp_norm, mirror_map, underflow_floor, unscaled_two_norms
from . import functional as F

NORMALIZE_MODES = ("per_tensor", "global")
# Parameter dtypes the optimisers step; float16/bfloat16 ones are stepped in float32.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
LOW_PRECISION = (torch.float16, torch.bfloat16)
# The torch.optim keywords every class takes (keyword-only, torch's defaults; see `torch_keywords`).
TORCH_DEFAULTS = dict(weight_decay=0.0, maximize=False, foreach=None, differentiable=False)


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
                f"{cls.__name__}: {name!r} is now called {new!r}", DeprecationWarning, stacklevel=3
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
            hyper["lr"], f"{name}: lr{where}", low=0.0, include_low=running, allow_tensor=True
        )  # a positive finite number or a one-element tensor
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


def torch_arguments(arguments: dict) -> dict:
    """The torch.optim keywords among a constructor's arguments (its `locals()`)."""
    return {key: arguments[key] for key in TORCH_DEFAULTS}


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
    """False/None → "none"; True → `F.NORMALIZE_TRUE` ("global", the papers' ‖∇L‖); or a
    mode name ("none" as stored)."""
    if (
        normalize is None
        or normalize is False
        or (isinstance(normalize, str) and normalize == "none")
    ):
        return "none"
    if normalize is True:
        return F.NORMALIZE_TRUE
    if not isinstance(normalize, str) or normalize not in NORMALIZE_MODES:
        error = TypeError if not isinstance(normalize, str) else ValueError
        raise error(
            f"{name} must be False, True or one of {NORMALIZE_MODES}, got "
            f"{type(normalize).__name__} {normalize!r}"
        )
    return normalize


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


def evaluate(closure):
    """The loss from `closure` (with gradients enabled), or None: torch.optim's step protocol."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def working_copies(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor, or a float32 copy of a float16/bfloat16 one: steps compute in float32,
    and `write_back` rounds the result into the parameter."""
    return [t.float() if t.dtype in LOW_PRECISION else t for t in tensors]


def may_overflow(step: float, dtype: torch.dtype) -> bool:
    """Whether adding to finite weights of `dtype` a step of at most `step` in absolute value
    can round past the largest number: only if it reaches half the spacing of the numbers
    there (about 1e292 in float64, 1e31 in float32, 16 in float16). True for NaN."""
    return not step < half_top_spacing(dtype)


@functools.cache
def half_top_spacing(dtype: torch.dtype) -> float:
    info = torch.finfo(dtype)
    return info.max * info.eps / 4


def guarded(params, weights, step: float) -> list[torch.Tensor]:
    """The working copies, with a copy of each parameter whose step (at most `step`) may
    overflow, so that `write_back` can refuse the result before anything is written."""
    return [
        x.clone() if x is w and may_overflow(step, w.dtype) else x for w, x in zip(params, weights)
    ]


def write_back(optimizer: str, index: int, params, weights) -> None:
    """Write the results computed on copies (float32 ones of float16/bfloat16 parameters,
    `guarded` ones) into their parameters, rounded: all of them or, where a result is not
    finite while its parameter was, none (FloatingPointError). The copies then hold the
    values written."""
    pairs = [(k, w, x) for k, (w, x) in enumerate(zip(params, weights)) if x is not w]
    rounded = [x.to(w.dtype) for _, w, x in pairs]
    for (k, w, _), r in zip(pairs, rounded):
        if not bool(torch.isfinite(r).all()) and bool(torch.isfinite(w).all()):
            raise FloatingPointError(
                f"{optimizer}: the step of parameter {k} of group {index} (shape "
                f"{tuple(w.shape)}) leaves {str(w.dtype).removeprefix('torch.')}'s range "
                f"(largest {torch.finfo(w.dtype).max:g}); no parameter was changed. A smaller "
                "lr, or a wider dtype, keeps it in range."
            )
    for (_, w, x), r in zip(pairs, rounded):
        w.copy_(r)
        if r is not x:
            x.copy_(r)


def as_runs(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor as a view with a leading run axis of length 1: the functional core's layout
    (in-place updates of the views write through to the tensors)."""
    return [t.unsqueeze(0) for t in tensors]


def check_finite(optimizer: str, values: list[torch.Tensor], culprit) -> None:
    """Raise FloatingPointError if any of the values (one element each) is NaN or ±inf, with
    one host sync for all of them. `culprit` names the cause: a string, or (group index,
    params, grads) to name the first parameter whose gradient is not finite."""
    if not bool(torch.isfinite(torch.stack([v.reshape(-1)[0] for v in values])).all()):
        raise not_finite(optimizer, culprit)


def not_finite(optimizer: str, culprit) -> FloatingPointError:
    """The error for a NaN or infinite gradient or loss (`culprit` as in check_finite)."""
    if not isinstance(culprit, str):
        index, params, grads = culprit
        bad = [k for k, g in enumerate(grads) if not bool(torch.isfinite(g).all())]
        culprit = f"the gradient norm of group {index}"
        if bad:
            shape = tuple(params[bad[0]].shape)
            culprit = f"the gradient of parameter {bad[0]} of group {index} (shape {shape})"
    return FloatingPointError(
        f"{optimizer}: {culprit} is NaN or infinite; no parameter was changed. A diverging "
        "loss or a step size too large for the problem is the usual cause."
    )


def quick_two_norm_divisors(
    optimizer: str, grads: list[torch.Tensor], normalize: str, eta: float, culprit
) -> tuple[list[torch.Tensor], list[torch.Tensor | None]]:
    """The divisors D that `F.divisors(grads, normalize)` gives for ℓ2 normalisation
    ("per_tensor" or "global"; grads with their run axis), from norms taken without scaling
    (`norms.unscaled_two_norms`: one reduction over each gradient instead of four); and for
    each tensor the factor F = D/η of the one-pass step (`F.step_` with divisors F and η = 1),
    or None where F is not a normal number (that tensor takes D and η).

    A norm the unscaled sum cannot vouch for (below `norms.underflow_floor`, where squares
    flushed to zero could matter, or beyond its dtype's range) is recomputed by the
    scale-safe `lp_norm`, as `F.divisors` computes it, so no gradient is frozen by an
    underflowed norm. One host sync for all tensors; a second (`check_finite`, which raises
    FloatingPointError naming the parameter whose gradient is not finite) only where a norm
    was recomputed. `culprit` as for `check_finite`."""
    norms = unscaled_two_norms(grads)
    dtypes = [g.dtype for g in grads]
    if normalize == "per_tensor":
        kinds, sizes = dtypes, norms
        each = totals = norms.tolist()  # the one host sync
    else:  # one D in the dtype the tensors' norms promote to, as F.divisors's
        kinds = [promoted(tuple(dtypes))]
        sizes, each, totals = global_two_norm(norms)
    # what follows decides on the host, in float64 as the tensors hold it
    floors = [underflow_floor(g.numel(), t) for g, t in zip(grads, dtypes)]
    if normalize == "per_tensor":
        tops = [finfo_max(t) for t in dtypes]
    else:
        floors = [math.hypot(*floors)]
        # each tensor's norm must fit its own dtype too, as the scale-safe ones do
        own = all(n <= finfo_max(t) for n, t in zip(each, dtypes))  # False for NaN
        tops = [finfo_max(kinds[0]) if own else -1.0]
    fits = [floor <= size <= top for size, floor, top in zip(totals, floors, tops)]
    normal = [ok and quotient_is_normal(size, eta, t) for ok, size, t in zip(fits, totals, kinds)]
    if normalize == "global" and not fits[0]:
        divisors = F.divisors(grads, "global")
        check_finite(optimizer, divisors, culprit)
        return divisors, [None] * len(grads)
    divisors, factors = one_per_run(sizes, kinds), one_per_run(sizes / eta, kinds)
    if normalize == "global":
        divisors, factors, normal = (x * len(grads) for x in (divisors, factors, normal))
    redo = [k for k, good in enumerate(fits) if not good]  # (per_tensor only, by now)
    for k in redo:
        divisors[k] = F.gradient_norms([grads[k]], 2.0)[0]
    if redo:
        check_finite(optimizer, [divisors[k] for k in redo], culprit)
    return divisors, [f if good else None for f, good in zip(factors, normal)]


def global_two_norm(norms: torch.Tensor) -> tuple[torch.Tensor, list[float], list[float]]:
    """`lp_norm(norms).reshape(1)`, the scale-safe ℓ2 norm of the tensors' norms (float64,
    ≥ 0 or NaN), and the values of both on the host. On a GPU in one host sync; on the CPU,
    where reading a value costs no synchronisation, the norms are read first and, where
    their largest is a positive finite number, `lp_norm`'s scaling by it is taken with that
    number: the same operations on the same values (five instead of a dozen)."""
    if norms.device.type != "cpu":
        sizes = lp_norm(norms).reshape(1)
        values = torch.cat((norms, sizes)).tolist()
        return sizes, values[:-1], values[-1:]
    each = norms.tolist()
    top = max(each, default=0.0)
    if not (0.0 < top < math.inf) or any(math.isnan(n) for n in each):
        sizes = lp_norm(norms).reshape(1)
        return sizes, each, sizes.tolist()
    scaled = torch.div(norms, top)  # (abs: the norms are ≥ 0 already)
    sizes = scaled.mul_(scaled).sum(0, keepdim=True).sqrt_().mul_(top)
    return sizes, each, sizes.tolist()


@functools.cache
def promoted(dtypes: tuple[torch.dtype, ...]) -> torch.dtype:
    """The dtype that tensors of these dtypes promote to."""
    return functools.reduce(torch.promote_types, dtypes)


@functools.cache
def finfo_max(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).max


# Tensors up to this many entries have their norms taken together: rows padded with zeros
# (which change no norm) in one `lp_norm`, instead of a dozen small operations each.
SMALL_TENSOR = 1 << 12


def gradient_norms(grads: list[torch.Tensor], q: float, workspace) -> list[torch.Tensor]:
    """`F.gradient_norms(grads, q)`: the scale-safe ℓq norm of each gradient (with its run
    axis), (1,) each; the small ones (SMALL_TENSOR entries at most) together, by dtype."""
    out: list = [None] * len(grads)
    small: dict[tuple[torch.dtype, torch.device], list[int]] = {}
    for k, g in enumerate(grads):
        if g.numel() <= SMALL_TENSOR:
            small.setdefault((g.dtype, g.device), []).append(k)
    for part in small.values():
        rows = torch.nn.utils.rnn.pad_sequence([grads[k].reshape(-1) for k in part], True)
        norms = lp_norm(rows, q, dim=(1,)).view(-1, 1)
        for j, k in enumerate(part):
            out[k] = norms[j]
    large = [k for k, x in enumerate(out) if x is None]
    if large:
        g = [grads[k] for k in large]
        for k, norm in zip(large, F.gradient_norms(g, q, workspace.views(g, 2))):
            out[k] = norm
    return out


def dual_norm_divisors(grads, normalize: str, p: float, workspace) -> list[torch.Tensor]:
    """`F.divisors(grads, normalize, p=p)` for "per_tensor" and "global": the gradients' dual
    ℓq norms, q = p/(p − 1), the small tensors' together (`gradient_norms`)."""
    q = dual_exponent(p)
    norms = gradient_norms(grads, q, workspace)
    return norms if normalize == "per_tensor" else [F.global_norm(norms, q)] * len(grads)


def quick_factors(
    optimizer: str, divisors: list[torch.Tensor], eta: float, culprit
) -> list[torch.Tensor | None]:
    """For divisors D (one element each), checked here to be finite (FloatingPointError
    otherwise, as `check_finite` raises), the factors F = D/η of the one-pass step (`F.step_`
    with divisors F and η = 1), or None where F is not a normal number. One host sync for all
    tensors."""
    kinds = [d.dtype for d in divisors]
    sizes = torch.stack([d.reshape(-1)[0] for d in divisors]).double()
    values = sizes.tolist()  # the one host sync
    if not all(math.isfinite(size) for size in values):
        raise not_finite(optimizer, culprit)
    normal = [quotient_is_normal(size, eta, t) for size, t in zip(values, kinds)]
    factors = one_per_run(sizes / eta, kinds)
    return [f if good else None for f, good in zip(factors, normal)]


def quotient_is_normal(size: float, eta: float, dtype: torch.dtype) -> bool:
    """`normal_number` of size/η, as float64 tensors divide (η = 0, a scheduler's warm-up:
    ∞ or NaN, never normal)."""
    return eta != 0.0 and normal_number(size / eta, dtype)


def normal_number(value: float, dtype: torch.dtype) -> bool:
    """Whether `value` (a float64) is a normal number of `dtype`, with a margin of 2 for the
    rounding into it (NaN: False)."""
    tiny, top = normal_range(dtype)
    return tiny <= abs(value) <= top


@functools.cache
def normal_range(dtype: torch.dtype) -> tuple[float, float]:
    """(2·tiny, max/2) of the dtype: `normal_number`'s bounds."""
    info = torch.finfo(dtype)
    return 2 * info.tiny, info.max / 2


def one_per_run(values: torch.Tensor, dtypes: list[torch.dtype]) -> list[torch.Tensor]:
    """Entry k of the (float64) values as a (1,) tensor of dtypes[k]: a divisor of one run,
    as `F.divisors` gives it (views of one converted tensor per dtype)."""
    converted = {t: values.to(t).view(-1, 1) for t in set(dtypes)}
    return [converted[t][k] for k, t in enumerate(dtypes)]


def largest_magnitudes(optimizer: str, tensors: list[torch.Tensor], culprit) -> list[float]:
    """max|x| of each tensor (0 for an empty one), with one host sync for all: where torch
    has them, two multi-tensor calls for all tensors (`largest_entries`); else torch.aminmax
    of each (one pass, no temporary). FloatingPointError (as `check_finite` raises) where a
    tensor is not finite."""
    present = [t for t in tensors if t.numel()]
    if present and hasattr(torch, "_foreach_max"):
        tops = iter(torch.stack(largest_entries(present)).tolist())
    else:
        extremes = [v for t in present for v in torch.aminmax(t)]
        tops = iter(torch.stack(extremes).abs().view(-1, 2).amax(1).tolist() if extremes else ())
    sizes = [next(tops) if t.numel() else 0.0 for t in tensors]
    if not all(math.isfinite(size) for size in sizes):
        raise not_finite(optimizer, culprit)
    return sizes


def largest_entries(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """max|x| of each (non-empty) tensor, 0-d each, NaN where it holds one: two multi-tensor
    calls where torch has torch._foreach_max (on the CPU a quarter of the time of their ℓ∞
    norms, which torch takes slowly there), else one reduction of each."""
    if hasattr(torch, "_foreach_max"):
        return list(torch._foreach_max(torch._foreach_abs(tensors)))
    return [t.abs().amax() for t in tensors]


def split_quick(factors: list, divisors: list | None, lr) -> list[tuple]:
    """The parts of a step as (indices, divisors, η): the tensors with a factor F = D/η (from
    `quick_two_norm_divisors` or `quick_factors`) with those and η = 1, the others with their
    divisors and η; parts without tensors left out."""
    quick = [k for k, f in enumerate(factors) if f is not None]
    rest = [k for k, f in enumerate(factors) if f is None]
    parts = ((quick, factors, 1.0), (rest, divisors, lr))
    return [(part, values, eta) for part, values, eta in parts if part]


def normalized_step_(
    weights, grads, divisors, factors, lr, foreach: bool, workspace, momentum=0.0, buffers=None
) -> None:
    """In place: w ← w − η·g/D for p = 2 (weights, grads and buffers with their run axis),
    `F.step_` (or `F.step_foreach_`): in one pass with the factors D/η and η = 1 where
    `quick_two_norm_divisors` gave one, with D and η elsewhere. With foreach and no
    momentum the factors' part divides by them as numbers (the same roundings as
    `F.step_foreach_`'s addcdiv: g/F in the tensor's dtype, then the subtraction) where all
    tensors and factors share one dtype (a float64 factor of "global" with float32 tensors
    divides in float64 there: kept). On the CPU the factors' part is `F.step_`'s addcdiv of
    each tensor in one multi-tensor call (torch loops over the tensors in C++ there)."""
    for part, values, eta in split_quick(factors, divisors, lr):
        w, g, d, b = pick((weights, grads, values, buffers), part)
        quick = values is factors and momentum == 0.0
        if quick and foreach and one_dtype(d, g):
            # w − g/F with each F a number of the host (one sync for all): two multi-tensor
            # kernels; tensors F would need one kernel per tensor (they broadcast)
            scalars = torch.cat([f.reshape(1).double() for f in d]).tolist()
            torch._foreach_add_(w, torch._foreach_div(g, scalars), alpha=-1.0)
        elif quick and on_cpu(w):
            # F is a normal number (never 0: `F.step_`'s "no step at zero" has nothing to
            # do), and a (1,) tensor broadcasts over a tensor with its run axis
            torch._foreach_addcdiv_(w, g, d, value=-1.0)
        elif foreach:
            F.step_foreach_(w, g, d, eta, momentum=momentum, buffers=b)
        else:
            scratch = [s for (s,) in workspace.views(w, 1)]
            F.step_(w, g, d, eta, momentum=momentum, buffers=b, scratch=scratch)


# Groups of up to this many entries take the torch._foreach_* kernels on the CPU too (where
# they are the same step bit for bit): their temporaries are small, and one call for all the
# tensors saves the per-tensor Python calls that are most of a small model's step.
SMALL_GROUP = 1 << 20


def small_on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors are all on the CPU, SMALL_GROUP entries or fewer in all."""
    return on_cpu(tensors) and sum(t.numel() for t in tensors) <= SMALL_GROUP


def on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Whether every tensor is on the CPU (where torch._foreach_* ops loop over the tensors,
    calling each tensor's own kernel: the same results as a loop of ours, bit for bit)."""
    return all(t.device.type == "cpu" for t in tensors)


def one_dtype(factors: list[torch.Tensor], tensors: list[torch.Tensor]) -> bool:
    """Whether the tensors share one dtype and each factor has it."""
    return len({x.dtype for x in tensors}) == 1 and all(
        f.dtype == x.dtype for f, x in zip(factors, tensors)
    )


def pick(lists, indices: list[int]) -> tuple:
    """The entries `indices` of each list (None stays None)."""
    return tuple(None if x is None else [x[k] for k in indices] for x in lists)


def dual_iterates(
    state, keys: list[torch.Tensor], weights: list[torch.Tensor], p: float, rows: list
) -> tuple[list[torch.Tensor], list[str | None]]:
    """The dual iterates θ = ∇ψ(w) of ℓp mirror descent, kept in `state` (under each
    parameter in `keys`; `weights` are the tensors stepped: the parameters, or their float32
    working copies) so that a step costs one mirror map, not two (and θ keeps what w loses
    when it underflows); and for each "built" (from w just now: no state yet, or w changed
    shape, dtype or device), "refreshed" (some entries recomputed from edited weights) or None.

    θ is trusted only where w is exactly what the last step wrote: `state["weight"]` holds
    that copy (in the parameter's dtype: the values written into it; see `remember_weights`),
    and entries changed since by anything (in place, through `.data` too, which torch's
    version counter does not see; `.data =`; `load_state_dict`; a projection), NaN counting
    as changed, get θ = ∇ψ(w) of their new value, as plain SGD would honour the change; the
    others keep their θ. Where `rows[k]` is given, the step writes only those rows of
    parameter k, so only they are compared: an edit to another row stays as the user left it,
    and is found when a step first touches that row."""
    duals, status, compared = [], [], []
    for j, (key, w, r) in enumerate(zip(keys, weights, rows)):
        s, w, current = state[key], w.detach(), key.detach()
        dual, copy = s.get("dual"), s.get("weight")
        if not (fits(dual, w) and fits(copy, current)):
            s["dual"], s["weight"] = mirror_map(w, p), current.clone()
            status.append("built")
        else:
            if r is not None:
                copy, current = copy.index_select(0, r), current.index_select(0, r)
            compared.append((j, dual, copy, current, w, r))
            status.append(None)
        duals.append(s["dual"])
    same = same_values_each([(old, now) for _, _, old, now, _, _ in compared])
    for (j, dual, old, now, w, r), unchanged in zip(compared, same):
        if unchanged:
            continue
        if r is None:
            refresh_edited_(dual, old != now, w, p)
        else:
            part = refresh_edited_(dual.index_select(0, r), old != now, w.index_select(0, r), p)
            dual.index_copy_(0, r, part)
        status[j] = "refreshed"
    return duals, status


def fits(saved, w: torch.Tensor) -> bool:
    """Whether `saved` (from the state, perhaps a checkpoint's) is a tensor shaped, typed and
    placed as `w`."""
    if not isinstance(saved, torch.Tensor):
        return False
    return (saved.shape, saved.dtype, saved.device) == (w.shape, w.dtype, w.device)


def refresh_edited_(dual: torch.Tensor, edited: torch.Tensor, w: torch.Tensor, p: float):
    """In place: θ ← ∇ψ(w) where `edited`, θ kept elsewhere; returns θ."""
    return dual.copy_(torch.where(edited, mirror_map(w, p), dual))


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal(a, b) for tensors of one shape and dtype (NaN ≠ NaN, 0 = −0); numpy's
    comparison on the CPU, several times faster on large tensors (small ones: torch's, which
    costs less to call)."""
    if (
        a.device.type == "cpu"
        and b.device.type == "cpu"
        and a.dtype in NUMPY_DTYPES
        and a.numel() > SMALL_TENSOR
    ):
        return bool(np.array_equal(a.numpy(), b.numpy()))
    return torch.equal(a, b)


def same_values_each(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[bool]:
    """`same_values` of each pair, with one host synchronisation for all the pairs on a GPU
    (torch.equal would wait for each): there, "no entry differs" (NaN differs from itself)."""
    out: list = [None] * len(pairs)
    on_device = []
    for k, (a, b) in enumerate(pairs):
        if a.device.type == "cpu" and b.device.type == "cpu":
            out[k] = same_values(a, b)
        else:
            on_device.append(k)
    if on_device:
        differs = torch.stack([(pairs[k][0] != pairs[k][1]).any() for k in on_device])
        for k, d in zip(on_device, differs.tolist()):
            out[k] = not d
    return out


NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64)


def remember_weights(state, keys: list[torch.Tensor], rows: list) -> None:
    """After a mirror step: the copies `dual_iterates` compares against, of the values the
    step wrote into the parameters (only the rows it wrote, where it wrote some of them)."""
    for key, r in zip(keys, rows):
        copy, w = state[key]["weight"], key.detach()
        copy.copy_(w) if r is None else copy.index_copy_(0, r, w.index_select(0, r))


# Sparse rows. A word embedding's gradient is zero outside the few hundred rows a batch uses,
# and a zero gradient row neither adds to a norm nor moves its row (θ − η·0 = θ, and w is
# already (∇ψ)⁻¹(θ)), so the step can gather the touched rows, update them and scatter them
# back: the full step's result at a fraction of its memory traffic (except that a row edited
# by the user and not touched keeps the edit exactly, where the full step rewrites it as
# (∇ψ)⁻¹(∇ψ(w)), a few ulps away). Finding the rows needs their indices on the host, so this
# is done on the CPU only.
SPARSE_MIN_ROWS = 256  # smaller tensors are cheap enough as they are
SPARSE_MIN_SIZE = 1 << 20  # elements: the look at a sample costs < 1% of one pass over it
SPARSE_MAX_FRACTION = 0.5  # gather and scatter cost more than a full pass beyond this
SPARSE_SAMPLE = 16  # rows looked at first, so that a dense gradient costs no full scan


def touched_rows(grad: torch.Tensor) -> torch.Tensor | None:
    """Indices of the rows (first dimension) of `grad` with a nonzero or NaN entry (or −0.0:
    stepping a row with a zero gradient changes nothing), when the gradient is on the CPU and
    at most SPARSE_MAX_FRACTION of its rows are touched; else None (the whole tensor is
    stepped)."""
    n = grad.shape[0] if grad.dim() >= 2 else 0
    if grad.device.type != "cpu" or n < SPARSE_MIN_ROWS or grad.numel() < SPARSE_MIN_SIZE:
        return None
    rest = tuple(range(1, grad.dim()))
    sample = grad[:: max(1, n // SPARSE_SAMPLE)]
    if bool((sample != 0).any(rest).float().mean() > SPARSE_MAX_FRACTION):
        return None
    if grad.stride(-1) == 1:  # one reduction over the bytes: a row is touched if any is set
        touched = grad.view(torch.uint8).amax(rest) != 0
    else:  # two reductions and no temporary the size of grad; NaN ≠ 0, so a NaN row counts
        touched = (grad.amax(rest) != 0) | (grad.amin(rest) != 0)
    rows = touched.nonzero().squeeze(1)
    return rows if rows.numel() <= SPARSE_MAX_FRACTION * n else None


def gather_rows(tensors: list[torch.Tensor], rows: list) -> list[torch.Tensor]:
    """Each tensor, or a copy of its rows `rows[k]` when that is not None."""
    return [t if r is None else t.index_select(0, r) for t, r in zip(tensors, rows)]


def scatter_rows_(tensors: list[torch.Tensor], rows: list, parts: list[torch.Tensor]) -> None:
    """In place: write each gathered part back into its rows (parts that are the tensors
    themselves were updated in place already)."""
    for t, r, part in zip(tensors, rows, parts):
        if r is not None:
            t.index_copy_(0, r, part)


class Workspace:
    """Scratch memory for the temporaries of a step: one flat buffer per dtype and device,
    reused by every tensor and every step (allocating tens of MB per step costs more than the
    arithmetic on them: page faults). Not optimiser state: never saved, rebuilt on demand."""

    def __init__(self):
        self.buffers: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        # the views last handed out, by the shapes asked for: building a hundred views costs
        # more than a small tensor's step
        self.handed: dict[tuple, list[list[torch.Tensor]]] = {}

    def views(self, tensors: list[torch.Tensor], count: int) -> list[list[torch.Tensor]]:
        """For each tensor, `count` disjoint buffers shaped like it. The buffers of different
        tensors overlap: use them one tensor at a time."""
        asked = (count, *((t.shape, t.dtype, t.device) for t in tensors))
        if asked in self.handed:
            return self.handed[asked]
        need: dict[tuple[torch.dtype, torch.device], int] = {}
        for t in tensors:
            key = (t.dtype, t.device)
            need[key] = max(need.get(key, 0), count * t.numel())
        for (dtype, device), size in need.items():
            if (dtype, device) not in self.buffers or self.buffers[dtype, device].numel() < size:
                self.buffers[dtype, device] = torch.empty(size, dtype=dtype, device=device)
                self.handed.clear()  # views of the buffer replaced
        out = []
        for t in tensors:
            buffer, n = self.buffers[(t.dtype, t.device)], t.numel()
            out.append([buffer[k * n : (k + 1) * n].view(t.shape) for k in range(count)])
        if len(self.handed) >= 16:  # shapes change (gathered rows): keep a few
            self.handed.clear()
        self.handed[asked] = out
        return out
