"""Token choice: the scores γ_{i,t} = y_i vᵀx_{i,t}, the optimal and the selected tokens."""

from __future__ import annotations

import numpy as np

from .._validate import check_sequences, check_tokens

TIE_RTOL = 1e-9  # scores this close (relative) to the best one count as tied


def to_numpy(t) -> np.ndarray:
    """A validated tensor as a float64 array."""
    return t.detach().cpu().numpy().astype(np.float64)


def token_scores(X, y, v) -> np.ndarray:
    """γ_{i,t} = y_i vᵀx_{i,t}, shape (n, T)."""
    X, _, y, v, _ = check_sequences(X, y=y, v=v)
    return to_numpy(y)[:, None] * (to_numpy(X) @ to_numpy(v))


def unique_argmax(scores: np.ndarray, what: str, why: str) -> np.ndarray:
    """Row-wise argmax of `scores` (n, T); a row whose best entry is tied (within TIE_RTOL of the
    row's largest magnitude) raises ValueError naming the sample, the tokens and `why`."""
    top = scores.max(axis=1)
    near = scores >= (top - TIE_RTOL * np.abs(scores).max(axis=1))[:, None]
    tied = np.flatnonzero(near.sum(axis=1) > 1)
    if tied.size:
        i = tied[0]
        t1, t2 = np.flatnonzero(near[i])[:2]
        raise ValueError(
            f"{what} token of sample {i} is tied between tokens {t1} and {t2} "
            f"(score {top[i]:.6g}); {why}"
        )
    return scores.argmax(axis=1).astype(np.int64)


def optimal_tokens(X, y, v) -> np.ndarray:
    """The globally optimal token of each sample, argmax_t γ_{i,t}; a tie raises ValueError."""
    return unique_argmax(
        token_scores(X, y, v), "optimal", "the globally optimal token must be unique"
    )


def selected_tokens(W, X, z) -> np.ndarray:
    """argmax_t of the attention logits x_{i,t}ᵀ W z_i (the token softmax puts most weight on);
    a tie (W = 0 ties every token) raises ValueError: no token is selected there."""
    X, z, _, _, W = check_sequences(X, z=z, W=W)
    if W.dim() != 2:
        raise ValueError(f"W must have shape (d, d), got {tuple(W.shape)}")
    logits = np.einsum("ntj,jk,nk->nt", to_numpy(X), to_numpy(W), to_numpy(z))
    return unique_argmax(
        logits, "selected", "W selects no single token there; give the tokens as alpha"
    )


def token_indices(alpha, n: int, T: int) -> np.ndarray:
    """α as int64 (n,); a single integer means the same token for every sample."""
    if np.ndim(alpha) == 0 and not isinstance(alpha, (str, bytes)):
        alpha = np.full(n, alpha)
    return check_tokens(alpha, n, T).numpy()
