"""Every optimiser steps on a CUDA GPU as on the CPU (skips, saying so, without one)."""

from __future__ import annotations

import pytest
import torch

from attnbias.optim import (
    MirrorDescent,
    NormalizedGD,
    PolyakStep,
    SignGD,
    SpectralDescent,
    SteepestDescent,
)

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine"),
]

OPTIMIZERS = {
    "md-1.1": lambda ps: MirrorDescent(ps, lr=0.1, p=1.1),
    "md-3-normalized": lambda ps: MirrorDescent(ps, lr=0.1, p=3.0, normalize="per_tensor"),
    "ngd": lambda ps: NormalizedGD(ps, lr=0.1),
    "polyak": lambda ps: PolyakStep(ps, lr=1.0),
    "sign": lambda ps: SignGD(ps, lr=0.01),
    "spectral": lambda ps: SpectralDescent(ps, lr=0.01),
    "steepest-3": lambda ps: SteepestDescent(ps, lr=0.01, norm=3.0),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_cuda_step_matches_the_cpu_step(name, dtype):
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(16, 8, generator=g, dtype=dtype)
    x = torch.randn(32, 16, generator=g, dtype=dtype)
    out = {}
    for device in ("cpu", "cuda"):
        w = w0.clone().to(device).requires_grad_()
        opt = OPTIMIZERS[name]([w])
        for _ in range(5):

            def closure(w=w, opt=opt, device=device):
                opt.zero_grad()
                loss = torch.nn.functional.softplus(-(x.to(device) @ w).sum(1)).mean()
                loss.backward()
                return loss

            opt.step(closure)
        out[device] = w.detach().cpu()
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    torch.testing.assert_close(out["cuda"], out["cpu"], rtol=tol, atol=tol)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_foreach_is_chosen_on_cuda_and_matches_the_per_tensor_path(name):
    """foreach=None picks the torch._foreach_* kernels when every parameter is on the GPU
    (torch's rule); their steps are those of the per-tensor path (to rounding: a GPU's fused
    kernels may contract a multiply-add differently), maximize and weight decay included."""
    g = torch.Generator().manual_seed(1)
    starts = [torch.randn(16, 8, generator=g, dtype=torch.float64) for _ in range(3)]
    grads = [
        [torch.randn(16, 8, generator=g, dtype=torch.float64) for _ in starts] for _ in range(4)
    ]
    out = {}
    for foreach in (None, False):
        params = [torch.nn.Parameter(w.clone().cuda()) for w in starts]
        opt = OPTIMIZERS[name](params)
        for group in opt.param_groups:
            group.update(foreach=foreach, maximize=True, weight_decay=0.01)
        for step in grads:
            for w, grad in zip(params, step):
                w.grad = grad.cuda()
            opt.step(lambda: torch.tensor(-3.0, dtype=torch.float64))
        out[foreach] = [w.detach().cpu() for w in params]
    for a, b in zip(out[None], out[False]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
