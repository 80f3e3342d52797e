"""Synthetic data sets of the seed papers, reproducible from their seed
(docs/theory.md#synthetic-data).

Where a paper gives no constant, our choice is documented in the docstring.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_scalar
from .problem import Problem


def _rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _labels(rng, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=n)


def _check_sizes(**sizes):
    for name, value in sizes.items():
        check_scalar(value, name, int, low=1)


def gaussian_unit(n: int = 6, T: int = 8, d: int = 10, seed: int = 0) -> Problem:
    """MD paper / "Transformers as SVMs": x_{i,t}, z_i ~ N(0, I_d), each row scaled to unit
    norm; v a random unit vector; y_i uniform ±1; cross-attention. Optimal tokens are
    whatever the scores give (no assumption beyond general position)."""
    _check_sizes(n=n, T=T, d=d)
    rng = _rng(seed)
    X = _unit_rows(rng.standard_normal((n, T, d)))
    z = _unit_rows(rng.standard_normal((n, d)))
    v = _unit_rows(rng.standard_normal(d))
    y = _labels(rng, n)
    return Problem(X, z, y, v, "cross", "gaussian_unit", params=dict(n=n, T=T, d=d, seed=seed))


def _orthogonal_score_head(X, opt, y, score):
    """Smallest-norm v with y_i vᵀx_{i,opt_i} = score and vᵀx_{i,t} = 0 otherwise (needs d ≥ nT)."""
    n, T, d = X.shape
    targets = np.zeros((n, T))
    targets[np.arange(n), opt] = y * score
    v, *_ = np.linalg.lstsq(X.reshape(n * T, d), targets.ravel(), rcond=None)
    return v


def _orthogonal_tokens_problem(name, n, T, d, seed, opt_score, antipodal: bool) -> Problem:
    """Gaussian N(0, I_d/d) tokens, optimal token at a random position (or ±μ if antipodal),
    head v scoring it opt_score and every other token 0; self-attention."""
    _check_sizes(n=n, T=T, d=d)
    if d < n * T:
        raise ValueError(f"{name} needs d >= n*T for Assumption 2, got d={d} < {n * T}")
    rng = _rng(seed)
    X = rng.standard_normal((n, T, d)) / np.sqrt(d)
    y = _labels(rng, n)
    opt = rng.integers(0, T, size=n)
    if antipodal:
        mu = rng.standard_normal(d) / np.sqrt(d)
        X[np.arange(n), opt] = y[:, None] * mu
    v = _orthogonal_score_head(X, opt, y, opt_score)
    params = dict(n=n, T=T, d=d, seed=seed, opt_score=opt_score)
    return Problem(X, X[:, 0].copy(), y, v, "self", name, opt=opt, params=params)


def example1(n: int = 4, T: int = 4, d: int = 64, seed: int = 0, opt_score: float = 1.0) -> Problem:
    """NGD paper Example 1 / Fig. 2, self-attention (z_i = x_{i,1}).

    Tokens x_{i,t} ~ N(0, I_d/d) i.i.d., so with d ≫ nT they are nearly orthogonal (Assumption 1).
    The optimal token of sample i sits at a uniformly random position opt_i; v is the
    smallest-norm vector with γ_{i,opt_i} = opt_score and γ_{i,t} = 0 for every other token, so all
    non-optimal tokens of a sample share one score and the optimal token's is larger
    (Assumption 2). Requires d ≥ nT. Defaults (lost in the paper): n=4, T=4, d=64.
    """
    return _orthogonal_tokens_problem("example1", n, T, d, seed, opt_score, antipodal=False)


def antipodal(
    n: int = 4, T: int = 4, d: int = 64, seed: int = 0, opt_score: float = 1.0
) -> Problem:
    """NGD paper Fig. 5: as `example1`, but the optimal tokens of the two classes are antipodal,
    x_{i,opt_i} = y_i μ for one fixed μ ~ N(0, I_d/d). v scores them both opt_score and is
    orthogonal to every other token."""
    return _orthogonal_tokens_problem("antipodal", n, T, d, seed, opt_score, antipodal=True)


def dm(
    n: int = 8, d: int = 64, seed: int = 0, opt_norm: float = 3.0, noise: float = 1.0
) -> Problem:
    """NGD paper §4 data model (Fig. 3), T = 2, self-attention on the first token.

    Token 0 is optimal: x_{i,0} = opt_norm·y_i u* + g_i with g_i ~ N(0, I_d/d) projected
    orthogonal to the fixed unit u*, so it carries the label (y_i = sign(u*ᵀx_{i,0})) and has the
    larger norm; token 1 is pure noise N(0, noise²·I_d/d). The head is trained jointly from zero, so
    v holds the reference u*. Defaults (lost in the paper): n=8, d=64, opt_norm=3, noise=1.
    """
    _check_sizes(n=n, d=d)
    rng = _rng(seed)
    u_star = _unit_rows(rng.standard_normal(d))
    y = _labels(rng, n)
    signal = rng.standard_normal((n, d)) / np.sqrt(d)
    signal -= np.outer(signal @ u_star, u_star)
    x_opt = opt_norm * y[:, None] * u_star + signal
    x_noise = noise * rng.standard_normal((n, d)) / np.sqrt(d)
    X = np.stack([x_opt, x_noise], axis=1)
    params = dict(n=n, d=d, seed=seed, opt_norm=opt_norm, noise=noise)
    return Problem(X, X[:, 0].copy(), y, u_star, "self", "dm", opt=np.zeros(n, int), params=params)


def joint_toy() -> Problem:
    """MD paper's joint-training toy, our own instance: n=2, T=3, d=3, self-attention.

    Each sample's first token is the query; the last token of sample 1 and the second of
    sample 2 carry the label, the others are distractors. Both optimal tokens lie on the
    margin of every ℓp head-SVM, whose directions differ by p (in d = 2 both on the margin
    would fix one head for every p). The head is trained jointly; the stored v (near the ℓ2
    head-SVM) is only the direction used to name the optimal tokens.
    """
    X = np.array(
        [
            [[0.2, 1.0, 0.3], [-0.3, 0.4, -0.5], [1.0, 0.8, 0.2]],
            [[-0.4, 0.8, -0.2], [-0.3, -1.0, 0.4], [-0.5, 0.6, -0.6]],
        ]
    )
    y = np.array([1.0, -1.0])
    v = np.array([0.4, 0.8, -0.2])
    opt = np.array([2, 1])
    return Problem(X, X[:, 0].copy(), y, v, "self", "joint_toy", opt=opt)


def linear_separable(n: int = 20, d: int = 5, seed: int = 0, margin: float = 0.1) -> Problem:
    """Linearly separable classification (seed 003's p-GD sanity check) as a T = 1 problem:
    f_i = vᵀx_i, so training only v is linear classification and `head_svm(X, y, 0, p)` is the
    ℓp max-margin classifier. x_i ~ N(0, I_d); points with |w*ᵀx| < margin (w* random unit)
    are pushed out to ±margin, and y_i = sign(w*ᵀx_i)."""
    _check_sizes(n=n, d=d)
    rng = _rng(seed)
    w_star = _unit_rows(rng.standard_normal(d))
    x = rng.standard_normal((n, d))
    s = x @ w_star
    x += np.outer(np.sign(s) * np.maximum(margin - np.abs(s), 0.0), w_star)
    y = np.sign(x @ w_star)
    X = x[:, None, :]
    params = dict(n=n, d=d, seed=seed, margin=margin)
    return Problem(
        X, x.copy(), y, w_star, "self", "linear_separable", opt=np.zeros(n, int), params=params
    )


GENERATORS = {
    "gaussian_unit": gaussian_unit,
    "example1": example1,
    "antipodal": antipodal,
    "dm": dm,
    "joint_toy": joint_toy,
    "linear_separable": linear_separable,
}
