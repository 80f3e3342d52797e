"""The README's "API in ten lines": ℓ1.75 mirror descent on a synthetic attention problem, and
the ℓ1.75-AttSVM its direction converges to (docs/theory.md). tests/test_examples.py runs it and
checks that its code is the README's.

    python examples/quickstart.py
"""

import torch

# One CPU thread (set_num_threads to change it): a problem this small only loses time handing
# work between threads. Not in the README's block, which leaves threads to the reader.
torch.set_num_threads(1)

# The README's block verbatim (tests/test_examples.py checks it), laid out for the README:
# ruff: noqa: I001, B007, E501, E402
# fmt: off
import torch
from attnbias.data import gaussian_unit
from attnbias.losses import risk
from attnbias.metrics import directional_bregman
from attnbias.model import AttentionClassifier
from attnbias.optim import MirrorDescent
from attnbias.svm import att_svm, selected_tokens

P = gaussian_unit(n=6, T=8, d=10, seed=1)  # float64 Problem: X (n,T,d), z, y, v
X, z, y, v = P.tensors()
model = AttentionClassifier(10, v=v, init_scale=1.0, generator=torch.Generator().manual_seed(1))
opt = MirrorDescent(model.parameters(), lr=0.1, p=1.75, normalize=True)  # ℓ1.75 mirror descent
for step in range(1500):
    opt.zero_grad()
    risk(y * model(X, z), "logistic").backward()
    opt.step()
W = model.W.detach()
svm = att_svm(P.X, P.z, selected_tokens(W, P.X, P.z), norm=1.75)  # ℓ1.75-AttSVM of selected tokens
divergence = directional_bregman(svm.W, W, p=1.75).item()
print(f"‖W_mm‖_1.75 = {svm.norm:.3f}, KKT residual {svm.kkt_residual:.1e}, divergence {divergence:.4f}")
