"""Normalized ℓ1.75 mirror descent on the MD paper's setting (gaussian_unit n=6, T=8, d=10,
W₀ ~ N(0,1), η = 0.1), with the textbook softmax backward against attnbias's cancellation-free
gradient: directional Bregman divergence to the ℓ1.75-AttSVM of the selected tokens, and the
largest gradient entry (once it is subnormal, autograd's float64 gradient has lost its direction),
and the batched engine, whose closed-form gradient is formed in log scale.

    python benchmarks/gradient_precision.py [--seed 1] [--steps 40000]
"""

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from attnbias.data import gaussian_unit
from attnbias.engine import Algorithm, RunBatch, RunSpec, simulate
from attnbias.metrics import directional_bregman
from attnbias.model import attention_logits, predict, token_values
from attnbias.optim import MirrorDescent
from attnbias.svm import att_svm, selected_tokens


def naive_predict(W, v, X, z):
    return (torch.softmax(attention_logits(W, X, z), -1) * token_values(X, v)).sum(-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40000)
    parser.add_argument("--p", type=float, default=1.75)
    args = parser.parse_args()
    torch.set_num_threads(1)

    P = gaussian_unit(6, 8, 10, seed=args.seed)
    X, z, y, v = P.tensors()
    checkpoints = [
        c for c in (1500, 2000, 5000, 10000, 20000, 40000, args.steps) if c <= args.steps
    ]
    print(
        "step    divergence (textbook softmax backward)   divergence (attnbias)"
        "   largest |∂L/∂W| entry (attnbias)   divergence (engine, log-scale gradient)"
    )
    rows = {}
    for label, f in (("naive", naive_predict), ("stable", predict)):
        W = torch.nn.Parameter(
            torch.randn(
                10, 10, generator=torch.Generator().manual_seed(args.seed), dtype=torch.float64
            )
        )
        opt = MirrorDescent([W], lr=0.1, p=args.p, normalize="per_tensor")
        for step in range(1, args.steps + 1):
            opt.zero_grad()
            F.softplus(-y * f(W, v, X, z)).mean().backward()
            opt.step()
            if step in checkpoints:
                rows.setdefault(step, {})[f"{label} grad"] = W.grad.abs().max().item()
                Wd = W.detach()
                svm = att_svm(P.X, P.z, selected_tokens(Wd, P.X, P.z), norm=args.p)
                rows.setdefault(step, {})[label] = directional_bregman(svm.W, Wd, args.p).item()
    # The batched engine: closed-form gradients formed in log scale (same start, same rule).
    W0 = torch.randn(
        10, 10, generator=torch.Generator().manual_seed(args.seed), dtype=torch.float64
    )
    algorithm = Algorithm("MD", "md", 0.1, p=args.p, normalize="per_tensor")
    spec = RunSpec({}, P, algorithm, args.steps, {"W": W0.numpy()})
    grid = np.array([0, *checkpoints])
    snapshots = {}
    simulate(RunBatch.from_specs([spec]), grid, lambda done: snapshots.update(done.snapshots))
    for step, Wd in zip(grid[1:], snapshots["W"][0, 1:]):
        svm = att_svm(P.X, P.z, selected_tokens(Wd, P.X, P.z), norm=args.p)
        rows[int(step)]["engine"] = directional_bregman(svm.W, Wd, args.p).item()
    for step in sorted(rows):
        r = rows[step]
        print(
            f"{step:>6}  {r['naive']:>12.2e}{'':28}{r['stable']:>10.2e}{r['stable grad']:>22.1e}"
            f"{r['engine']:>22.2e}"
        )
    print("(below ~2.2e-308 the gradient is subnormal: it carries fewer digits, then none)")


if __name__ == "__main__":
    main()
