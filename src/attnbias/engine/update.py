"""One batched optimiser step for R runs at once: the maths of `attnbias.optim`, per run.

Every algorithm is the same update with per-run numbers (shape (R,)):

    u = s · g                      s: 1, 1/‖g‖_q (per tensor or global), 1/L, or Polyak's η_t
    m ← β m + u,  u = m            (NGD-mom; β = 0 leaves u unchanged)
    ∇ψ(w⁺) = ∇ψ(w) − lr · u        (ℓp mirror step; p = 2 is w⁺ = w − lr · u)

so runs of different algorithms, step sizes and p advance in one tensor program.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch

from .algorithms import Algorithm

NONE, PER_TENSOR, GLOBAL, LOSS, POLYAK = range(5)
MODES = {None: NONE, "per_tensor": PER_TENSOR, "global": GLOBAL, "loss": LOSS}


@dataclass
class Hyper:
    """Per-run hyper-parameters, each a tensor of shape (R,)."""

    p: torch.Tensor
    lr: torch.Tensor  # 1 for Polyak, whose step is all in s
    cap: torch.Tensor  # Polyak's γ_b
    momentum: torch.Tensor
    mode: torch.Tensor  # one of NONE … POLYAK
    c: torch.Tensor
    f_star: torch.Tensor
    # Python-level facts about the batch that choose fast paths (derived, not stored state).
    modes: frozenset = field(init=False)
    uniform_p: float | None = field(init=False)
    has_momentum: bool = field(init=False)
    needs_loss: bool = field(init=False)

    def __post_init__(self):
        self.modes = frozenset(self.mode.tolist())
        ps = set(self.p.tolist())
        self.uniform_p = ps.pop() if len(ps) == 1 else None
        self.has_momentum = bool((self.momentum > 0).any())
        self.needs_loss = bool(self.modes & {LOSS, POLYAK})

    @classmethod
    def from_algorithms(
        cls, algorithms: list[Algorithm], f_stars: list[float], dtype=torch.float64, device=None
    ) -> Hyper:
        polyak = [a.optimizer == "polyak" for a in algorithms]

        def col(values):
            return torch.tensor(values, dtype=dtype, device=device)

        return cls(
            p=col([a.mirror_p for a in algorithms]),
            lr=col([1.0 if pk else a.lr for a, pk in zip(algorithms, polyak)]),
            cap=col([a.lr if pk else float("inf") for a, pk in zip(algorithms, polyak)]),
            momentum=col([a.momentum for a in algorithms]),
            mode=torch.tensor(
                [POLYAK if pk else MODES[a.normalize] for a, pk in zip(algorithms, polyak)],
                device=device,
            ),
            c=col([a.c for a in algorithms]),
            f_star=col(f_stars),
        )

    def take(self, rows: torch.Tensor) -> Hyper:
        return Hyper(**{f.name: getattr(self, f.name)[rows] for f in fields(self) if f.init})


def per_run(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A (R,) tensor shaped to broadcast against a (R, ...) tensor."""
    return x.view(-1, *([1] * (like.dim() - 1)))


def _sum(t: torch.Tensor) -> torch.Tensor:
    return t.sum(tuple(range(1, t.dim())))


def power(x: torch.Tensor, e: float | torch.Tensor) -> torch.Tensor:
    """x^e for x ≥ 0, e > 0: by products and square roots for the exponents of p = 2 and 3
    (1, 2, 1/2, 3/2), else as exp(e log x); torch's pow is several times slower for most
    exponents, and this is the engine's inner loop."""
    if not isinstance(e, torch.Tensor):
        if e == 1.0:
            return x
        if e == 2.0:
            return x * x
        if e == 0.5:
            return x.sqrt()
        if e == 1.5:
            return x * x.sqrt()
    return torch.exp(torch.log(x) * e)


def dual_norm(g: torch.Tensor, q: float | torch.Tensor) -> torch.Tensor:
    """Entrywise ℓq norm of each run's tensor, (R,); scaled by the largest entry so that tiny
    late-training gradients do not underflow when raised to the power q."""
    dims = tuple(range(1, g.dim()))
    a = g.abs()
    top = a.amax(dims, keepdim=True)
    a = a / torch.where(top > 0, top, 1.0)
    q_b = per_run(q, a) if isinstance(q, torch.Tensor) else q
    return power(_sum(power(a, q_b)), 1.0 / q) * top.flatten()


def _reciprocal(x: torch.Tensor) -> torch.Tensor:
    """1/x, and 0 where x = 0 (a zero gradient stays zero, as in attnbias.optim) or where x is
    subnormal: a gradient that has underflowed is zero, and 1/x would overflow to inf (NaN)."""
    return torch.where(x >= torch.finfo(x.dtype).tiny, 1.0 / x, 0.0)


def scales(grads: list[torch.Tensor], loss: torch.Tensor | None, hp: Hyper) -> list[torch.Tensor]:
    """The factor s of each run and tensor; only the modes present in the batch are computed
    (`loss` is read only by the "loss" and Polyak rules)."""
    out = [grads[0].new_ones(len(grads[0]))] * len(grads)

    def choose(mode, values):
        nonlocal out
        if hp.modes == {mode}:
            out = values
        else:
            out = [torch.where(hp.mode == mode, v, o) for v, o in zip(values, out)]

    if hp.modes & {PER_TENSOR, GLOBAL}:
        p = hp.uniform_p if hp.uniform_p is not None else hp.p
        q = p / (p - 1.0)
        norms = [dual_norm(g, q) for g in grads]
        if PER_TENSOR in hp.modes:
            choose(PER_TENSOR, [_reciprocal(n) for n in norms])
        if GLOBAL in hp.modes:
            total = sum(n**q for n in norms) ** (1.0 / q) if len(norms) > 1 else norms[0]
            choose(GLOBAL, [_reciprocal(total)] * len(grads))
    if LOSS in hp.modes:
        choose(LOSS, [_reciprocal(loss)] * len(grads))
    if POLYAK in hp.modes:
        sq = sum(_sum(g.square()) for g in grads)
        gap = (loss - hp.f_star).clamp(min=0.0)
        eta = torch.where(sq > 0, torch.minimum(gap / (hp.c * sq), hp.cap), hp.cap)
        choose(POLYAK, [eta] * len(grads))
    return out


def step(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    buffers: list[torch.Tensor],
    loss: torch.Tensor | None,
    hp: Hyper,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One step of every run; returns the new parameters and momentum buffers."""
    new_params, new_buffers = [], []
    for w, g, m, s in zip(params, grads, buffers, scales(grads, loss, hp)):
        if hp.has_momentum:
            m = per_run(hp.momentum, m) * m + g * per_run(s, g)
            delta = m * per_run(hp.lr, m)
        else:  # lr folded into the per-run factor: one full-size product fewer
            delta = g * per_run(s * hp.lr, g)
        new_params.append(mirror_step(w, delta, hp))
        new_buffers.append(m)
    return new_params, new_buffers


def mirror_step(w: torch.Tensor, delta: torch.Tensor, hp: Hyper) -> torch.Tensor:
    """w⁺ = (∇ψ)⁻¹(∇ψ(w) − delta) with ∇ψ(w) = sign(w)|w|^{p−1}: optim's mirror_map and
    inverse_mirror_map, with the faster `power` (and, for p ≥ 2, ∇ψ(w) = w|w|^{p−2})."""
    if hp.uniform_p == 2.0:
        return w - delta
    p = hp.uniform_p if hp.uniform_p is not None else per_run(hp.p, w)
    if hp.uniform_p is not None and p >= 2.0:
        dual = w * power(w.abs(), p - 2.0)
    else:
        dual = torch.sign(w) * power(w.abs(), p - 1.0)
    theta = dual - delta
    return torch.sign(theta) * power(theta.abs(), 1.0 / (p - 1.0))
