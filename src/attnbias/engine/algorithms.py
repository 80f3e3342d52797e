"""The algorithms a sweep can run, as written in a config, and the optimiser each one is.

Every algorithm is one of the `attnbias.optim` optimisers (plus GD with loss-normalised steps
η/L, the NGD paper's eq. 13), so `torch_optimizer` builds the very optimiser whose maths the
batched engine repeats for many runs at once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch

from .._validate import check_scalar
from ..optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)
from ..optim.steepest import METHODS

OPTIMIZERS = ("gd", "md", "ngd", "polyak", "sign", "spectral", "steepest", "adam", "muon")
# How the engine steps each optimiser: the mirror-descent core (`optim.functional`), the
# steepest-descent core (`optim.steepest`), or torch's own optimiser on each run's tensors.
FAMILY = {
    **dict.fromkeys(("gd", "md", "ngd", "polyak"), "mirror"),
    **dict.fromkeys(("sign", "spectral", "steepest"), "steepest"),
    "adam": "torch",
    "muon": "torch",
}
# torch.optim.Muon exists from torch 2.9 on; with an older torch "muon" is refused by name.
TORCH_OPTIMIZERS = {
    name: cls
    for name, cls in (("adam", torch.optim.Adam), ("muon", getattr(torch.optim, "Muon", None)))
    if cls is not None
}


def available(optimizer: str) -> bool:
    """Whether this torch has the optimiser (all but torch's Muon always do)."""
    return optimizer in TORCH_OPTIMIZERS or FAMILY.get(optimizer) != "torch"


# How each optimiser may normalise its gradient (None: plain steps). "loss" divides by L.
NORMALIZE = {
    "gd": (None, "loss"),
    "md": (None, "per_tensor", "global", "loss"),
    "ngd": ("global", "per_tensor"),
    "polyak": (None,),
    **dict.fromkeys(("sign", "spectral", "steepest", "adam", "muon"), (None,)),
}
# Fields that only some optimisers read; giving them to another is a config mistake.
ONLY_FOR = {
    "p": ("md",),
    "momentum": ("ngd", "sign", "spectral", "steepest"),
    "c": ("polyak",),
    "f_star": ("polyak",),
    "norm": ("steepest",),
    "method": ("spectral",),
    "options": ("adam", "muon"),
}


@dataclass(frozen=True)
class Algorithm:
    """One optimiser with its hyper-parameters.

    name: label in figures and tables.  optimizer: "gd", "md" (ℓp mirror descent), "ngd"
    (normalized GD), "polyak" (capped Polyak step), "sign" (SignGD), "spectral"
    (SpectralDescent), "steepest" (ℓp SteepestDescent), or torch's own "adam" and "muon".
    lr: the step size η (for "polyak" the cap γ_b).  p: mirror exponent ("md").  normalize:
    see NORMALIZE.  momentum: β ("ngd" and the steepest-descent ones).  c, f_star: Polyak's
    constant and optimal loss L*, a number or "optimal" (the loss with all attention on the
    optimal tokens under the fixed head).  norm: the ℓp exponent of "steepest", in (1, ∞].
    method: "svd" or "newton-schulz" ("spectral").  options: further keyword arguments of
    torch's Adam or Muon (a table; e.g. eps, betas, momentum, weight_decay), passed as they are.
    """

    name: str
    optimizer: str
    lr: float
    p: float = 2.0
    normalize: str | bool | None = "default"  # default: the optimiser's first NORMALIZE mode
    momentum: float = 0.0
    c: float = 1.0
    f_star: float | str = 0.0
    norm: float = 2.0
    method: str = "svd"
    options: dict | None = None

    def __post_init__(self):
        try:
            self._check()
        except _FieldError as err:
            raise ValueError(f"algorithm {self.name!r}: {err}") from None

    def _check(self):
        """Validate and normalise the fields; errors name the field first."""
        if not isinstance(self.name, str) or not self.name:
            raise _FieldError(f"name must be a non-empty string, got {self.name!r}")
        opt = self.optimizer
        if opt not in OPTIMIZERS:
            raise _FieldError(f"optimizer must be one of {OPTIMIZERS}, got {opt!r}")
        for key, users in ONLY_FOR.items():
            if opt not in users and getattr(self, key) != _DEFAULTS[key]:
                raise _FieldError(f"{key} applies only to optimizer {' or '.join(users)}")
        _number(self, "lr", low=0.0, include_low=False)
        _number(self, "p", low=1.0, include_low=False)
        _number(self, "momentum", low=0.0, high=1.0, include_high=False)
        _number(self, "c", low=0.0, include_low=False)
        if self.f_star != "optimal":
            _number(self, "f_star")
        if self.norm == "inf":  # as to_dict writes ∞ for JSON
            object.__setattr__(self, "norm", math.inf)
        _number(self, "norm", low=1.0, include_low=False, allow_inf=True)
        if self.method not in METHODS:
            raise _FieldError(f"method must be one of {METHODS}, got {self.method!r}")
        if opt in TORCH_OPTIMIZERS:  # (Muon's options cannot be checked without Muon)
            self._check_options()
        # As in MirrorDescent: False is plain, True is per-tensor normalisation.
        normalize = {"default": NORMALIZE[opt][0], False: None}.get(self.normalize, self.normalize)
        normalize = "per_tensor" if normalize is True and opt == "md" else normalize
        if normalize not in NORMALIZE[opt]:
            raise _FieldError(
                f"normalize must be one of {NORMALIZE[opt]} for optimizer {opt!r}, "
                f"got {self.normalize!r}"
            )
        object.__setattr__(self, "normalize", normalize)

    def _check_options(self):
        """options must be keywords of the torch optimiser it builds (tried on a dummy)."""
        options = {} if self.options is None else self.options
        if not isinstance(options, dict):
            raise _FieldError(f"options must be a table, got {type(options).__name__}")
        if "lr" in options:
            raise _FieldError("options.lr: give the step size as the algorithm's lr")
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
        try:
            TORCH_OPTIMIZERS[self.optimizer]([torch.zeros(1, 1)], lr=self.lr, **options)
        except (TypeError, ValueError) as err:
            raise _FieldError(
                f"options are not accepted by torch's {self.optimizer}: {err}"
            ) from None
        object.__setattr__(self, "options", options)

    @classmethod
    def from_dict(cls, spec: dict, where: str = "algorithm") -> Algorithm:
        """Build from a config table; every error names the offending field as where.field."""
        if not isinstance(spec, dict):
            raise ValueError(f"{where} must be a table, got {type(spec).__name__}")
        known = [f.name for f in fields(cls)]
        for key in spec:
            if key not in known:
                raise ValueError(f"{where}.{key} is not a field; known: {', '.join(known)}")
        for key in ("name", "optimizer", "lr"):
            if key not in spec:
                raise ValueError(f"{where}.{key} is missing")
        algorithm = object.__new__(cls)
        for f in fields(cls):
            object.__setattr__(algorithm, f.name, spec.get(f.name, f.default))
        try:
            algorithm._check()
        except _FieldError as err:
            raise ValueError(f"{where}.{err}") from None
        return cls(**{f.name: getattr(algorithm, f.name) for f in fields(cls)})

    def to_dict(self) -> dict:
        """The fields this optimiser reads (the inverse of from_dict)."""
        out = {
            k: v
            for k, v in asdict(self).items()
            if v is not None and self.optimizer in ONLY_FOR.get(k, OPTIMIZERS)
        }
        if "norm" in out and math.isinf(out["norm"]):
            out["norm"] = "inf"  # JSON has no infinity
        return out

    @property
    def family(self) -> str:
        """Which update core steps it in the engine (FAMILY)."""
        return FAMILY[self.optimizer]

    @property
    def rule(self) -> str:
        """The step rule of the update core (`attnbias.optim.functional.RULES`)."""
        return "polyak" if self.optimizer == "polyak" else self.normalize or "none"

    @property
    def mirror_p(self) -> float:
        """Exponent of the mirror potential: 2 (Euclidean) unless this is ℓp mirror descent."""
        return self.p if self.optimizer == "md" else 2.0

    def torch_optimizer(self, params, f_star: float = 0.0):
        """The `attnbias.optim` optimiser this algorithm is, for one model's parameters.

        With normalize="loss" the caller divides lr by the loss before each step (see
        `engine.single_run`). `f_star` is the resolved L* for "polyak"."""
        if self.optimizer == "ngd":
            return NormalizedGD(params, self.lr, self.momentum, self.normalize)
        if self.optimizer == "polyak":
            return PolyakStep(params, self.lr, f_star=f_star, c=self.c)
        if self.optimizer == "sign":
            return SignGD(params, self.lr, self.momentum)
        if self.optimizer == "spectral":
            return SpectralDescent(params, self.lr, self.momentum, self.method)
        if self.optimizer == "steepest":
            return SteepestDescent(params, self.lr, self.norm, self.momentum)
        if not available(self.optimizer):
            raise ValueError(
                f"algorithm {self.name!r}: optimizer {self.optimizer!r} needs torch.optim.Muon "
                f"(torch >= 2.9); this torch is {torch.__version__}: upgrade torch or leave it out"
            )
        if self.optimizer in TORCH_OPTIMIZERS:
            return TORCH_OPTIMIZERS[self.optimizer](params, lr=self.lr, **self.options)
        normalize = False if self.normalize in (None, "loss") else self.normalize
        return MirrorDescent(params, self.lr, self.mirror_p, normalize)


class _FieldError(ValueError):
    """A bad field; the message starts with the field's name."""


_DEFAULTS = {
    "p": 2.0,
    "momentum": 0.0,
    "c": 1.0,
    "f_star": 0.0,
    "norm": 2.0,
    "method": "svd",
    "options": None,
}


def _number(algorithm: Algorithm, name: str, **bounds) -> None:
    """Check a numeric field with the package's one scalar check; a config error either way."""
    try:
        value = check_scalar(getattr(algorithm, name), name, **bounds)
    except TypeError as err:
        raise _FieldError(str(err)) from None
    except ValueError as err:
        raise _FieldError(str(err)) from None
    object.__setattr__(algorithm, name, float(value))
