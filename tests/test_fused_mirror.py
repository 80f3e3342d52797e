"""The compiled mirror step of one large CPU tensor (optim.fused_mirror) against torch's: every
entry bit for bit, including NaN, ±inf, ±0, subnormal and overflowing powers; the steps it does
not cover are left to torch untouched; without numba it says so once and torch steps."""

from __future__ import annotations

import logging
import sys

import pytest
import torch

from attnbias import compiled_backend
from attnbias.norms import mirror_map
from attnbias.optim import MirrorDescent, fused_mirror
from attnbias.optim import functional as F

needs_numba = pytest.mark.skipif(
    fused_mirror.mirror_kernels() is None,
    reason="numba is not installed (pip install 'attnbias[compiled]')",
)
needs_kernels = pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() not in fused_mirror.KERNELS,
    reason=f"torch's CPU kernels here are not {fused_mirror.KERNELS}: the compiled step is off",
)
pytestmark = pytest.mark.usefixtures("one_thread")  # the compiled step's condition
BITS = {torch.float32: torch.int32, torch.float64: torch.int64}
SIZES = [fused_mirror.MIN_ENTRIES, fused_mirror.MIN_ENTRIES + 2049]  # whole blocks, and a tail


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(BITS[t.dtype])


def problem(n: int, dtype: torch.dtype, seed: int = 0):
    """w, g with the awkward values: NaN, ±inf, ±0, subnormal and huge entries in both."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, generator=gen, dtype=torch.float64).to(dtype)
    g = (torch.randn(n, generator=gen, dtype=torch.float64) * 1e-2).to(dtype)
    info = torch.finfo(dtype)
    special = torch.tensor(
        [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, info.tiny / 4, -info.tiny / 3,
         info.max / 2, -info.max, 1e-30, 3.0],
        dtype=dtype,
    )  # fmt: skip
    for t, offset in ((w, 0), (g, 17), (g, n - 40)):
        t[offset : offset + len(special)] = special
    w[100 : 100 + len(special)] = special.flip(0)
    g[100 : 100 + len(special)] = special  # NaN in both operands of an entry
    return w, g


def same_bits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Entry by entry: the same bits, or NaN in both (where two operands of an entry were NaN
    the sign and payload of the NaN may differ: the module text)."""
    return (bits(a) == bits(b)) | (a.isnan() & b.isnan())


def stepped(backend: str, monkeypatch, w0, g, p, lr, divisor, with_copy=True):
    """One `functional.step_` from w0 with the given backend: (w, θ, copy)."""
    monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, backend)
    w, theta = w0.clone(), mirror_map(w0, p).clone()
    copy = torch.full_like(w, 7.0) if with_copy else None
    d = None if divisor is None else [torch.tensor([divisor], dtype=w.dtype)]
    F.step_([w], [g], d, lr, p=p, duals=[theta], copies=[copy])
    return w, theta, copy


@needs_numba
@needs_kernels
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [1.1, 1.5, 1.25, 1.2])
@pytest.mark.parametrize("divisor", [None, 3.7, 0.0])
@pytest.mark.parametrize("n", SIZES)
def test_the_compiled_step_is_torchs_bit_for_bit(monkeypatch, dtype, p, divisor, n):
    if fused_mirror.powers(p, dtype) is None:
        pytest.skip(f"torch takes p = {p}'s power by pow in {dtype}: not compiled")
    w0, g = problem(n, dtype)
    lr = 0.013 if divisor is None else 1.0  # a divisor comes with η = 1 (the one pass)
    divisor = None if divisor is None else (divisor or float("inf"))  # D = 0 → no step (∞)
    calls = []
    original = fused_mirror.mirror_kernels().mirror_step
    monkeypatch.setattr(
        fused_mirror.mirror_kernels(), "mirror_step", lambda *a: calls.append(1) or original(*a)
    )
    compiled = stepped("compiled", monkeypatch, w0, g, p, lr, divisor)
    assert calls, "the compiled step was not taken"
    reference = stepped("torch", monkeypatch, w0, g, p, lr, divisor)
    assert len(calls) == 1
    for name, a, b in zip(("w", "θ", "copy"), compiled, reference):
        differ = (~same_bits(a, b)).nonzero().flatten()
        assert not len(differ), (name, differ[:5], a[differ[:5]], b[differ[:5]])
    # the awkward values are there: NaN and infinities in w, and an overflowing power
    assert compiled[0].isnan().any() and compiled[0].isinf().any()


@needs_numba
@needs_kernels
def test_the_copy_may_be_absent_and_the_step_moves(monkeypatch):
    w0, g = problem(SIZES[1], torch.float32)
    w, theta, _ = stepped("compiled", monkeypatch, w0, g, 1.1, 0.013, None, with_copy=False)
    again, theta_again, _ = stepped("torch", monkeypatch, w0, g, 1.1, 0.013, None, False)
    assert same_bits(w, again).all() and same_bits(theta, theta_again).all()
    finite = w0.isfinite() & g.isfinite() & (g != 0) & (w0.abs() > 1e-3) & (w0.abs() < 10)
    assert (w[finite] != w0[finite]).float().mean() > 0.99  # it stepped


@needs_numba
@needs_kernels
@pytest.mark.parametrize(
    "case",
    ["small", "strided", "pow exponent", "tensor lr", "lr with divisor", "mixed dtype", "p > 2",
     "half", "aliased", "torch backend", "threads", "default kernels", "lr overflows", "shapes",
     "divisor dims", "requires grad", "overlap", "negative view"],
)  # fmt: skip
def test_what_it_does_not_cover_is_left_untouched(monkeypatch, case):
    n, dtype, p, lr, divisor = SIZES[0], torch.float32, 1.1, 0.013, None
    if case == "small":
        n = fused_mirror.MIN_ENTRIES - 1
    if case == "pow exponent":
        p = 1.75
    if case == "p > 2":
        p = 3.0
    if case == "half":
        dtype = torch.bfloat16
    if case == "tensor lr":
        lr = torch.tensor(0.013)
    if case == "lr with divisor":
        divisor = torch.tensor([2.0])
    if case == "torch backend":
        monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, "torch")
    if case == "threads":  # torch's operators would share the tensor between threads
        monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    if case == "default kernels":  # they round η·g before adding it
        monkeypatch.setattr(fused_mirror, "cpu_kernels", lambda: "DEFAULT")
    if case == "lr overflows":  # torch refuses an η float32 cannot hold
        lr = 1e39
    if case == "divisor dims":  # (1, 1) against a vector: torch refuses the broadcast
        divisor, lr = torch.ones(1, 1), 1.0
    w = torch.randn(2 * n if case == "strided" else n, dtype=dtype)
    w = w[::2] if case == "strided" else w
    g = torch.randn(n, dtype=torch.float64 if case == "mixed dtype" else dtype)
    g = g.reshape(256, -1) if case == "shapes" else g
    g = torch._neg_view(g) if case == "negative view" else g
    theta = w if case == "aliased" else torch.randn(n, dtype=dtype)
    if case == "overlap":  # two storages over one memory, offset by one entry
        memory = torch.randn(n + 1, dtype=dtype).numpy()
        w, theta = torch.from_numpy(memory[:n]), torch.from_numpy(memory[1:])
    w.requires_grad_(case == "requires grad")
    before = [t.detach().clone() for t in (w, g, theta)]
    assert not fused_mirror.fused_step_(w, g, theta, None, divisor, lr, p)
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, (w, g, theta)))


@needs_numba
@needs_kernels
@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_autograd_sees_the_step_change_the_weights(monkeypatch, backend):
    """A graph that saved w before the step cannot be differentiated after it: the compiled
    step advances w's version counter as torch's in-place step does."""
    monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, backend)
    layer = torch.nn.Linear(1024, 1030, bias=False, dtype=torch.float32)  # > 2^20 entries
    optimizer = MirrorDescent(layer.parameters(), lr=0.05, p=1.1)
    x = torch.randn(4, 1024, dtype=torch.float32, requires_grad=True)
    loss = layer(x).square().sum()
    loss.backward(retain_graph=True)
    optimizer.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@needs_numba
@needs_kernels
@pytest.mark.parametrize(
    "normalize, width",
    [(False, 300), (False, 1030), ("per_tensor", 1030), ("global", 1030)],
)
def test_mirror_descent_steps_a_layer_as_torch_does(monkeypatch, normalize, width):
    """The class, three steps of a width×1024 layer and its bias at p = 1.1 in float32: the
    same parameters bit for bit with and without the compiled step, which steps the layer (a
    group of up to 2^20 entries in its flat buffers when it can be stepped as one, beyond that
    tensor by tensor) and leaves the small bias to torch."""
    calls = []
    original = fused_mirror.mirror_kernels().mirror_step
    monkeypatch.setattr(
        fused_mirror.mirror_kernels(), "mirror_step", lambda *a: calls.append(1) or original(*a)
    )
    results = {}
    for backend in ("compiled", "torch"):
        monkeypatch.setenv(compiled_backend.BACKEND_VARIABLE, backend)
        torch.manual_seed(0)
        layer = torch.nn.Linear(1024, width, dtype=torch.float32)
        x = torch.randn(16, 1024, dtype=torch.float32)
        optimizer = MirrorDescent(layer.parameters(), lr=0.05, p=1.1, normalize=normalize)
        for _ in range(3):
            optimizer.zero_grad()
            layer(x).square().mean().backward()
            optimizer.step()
        results[backend] = [t.detach().clone() for t in layer.parameters()]
    assert len(calls) == 3
    for a, b in zip(results["compiled"], results["torch"]):
        assert torch.equal(bits(a), bits(b))
    torch.manual_seed(0)
    start = torch.nn.Linear(1024, width, dtype=torch.float32).weight
    assert (results["torch"][0] != start).float().mean() > 0.9  # it moved


def test_without_numba_it_says_so_once_and_torch_steps(monkeypatch, caplog):
    # on a CPU whose kernels it covers (elsewhere it never asks for numba, and says nothing)
    monkeypatch.setattr(fused_mirror, "cpu_kernels", lambda: fused_mirror.KERNELS[0])
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba: ImportError
    monkeypatch.delitem(sys.modules, "attnbias.optim.kernels_mirror", raising=False)
    fused_mirror.mirror_kernels.cache_clear()
    try:
        w0, g = problem(SIZES[0], torch.float32)
        with caplog.at_level(logging.INFO, logger=fused_mirror.logger.name):
            first = stepped("compiled", monkeypatch, w0, g, 1.1, 0.013, None)
            stepped("compiled", monkeypatch, w0, g, 1.1, 0.013, None)
        notices = [r.getMessage() for r in caplog.records if r.name == fused_mirror.logger.name]
        assert len(notices) == 1 and "attnbias[compiled]" in notices[0], notices
        assert "\n" not in notices[0]
    finally:
        fused_mirror.mirror_kernels.cache_clear()
    reference = stepped("torch", monkeypatch, w0, g, 1.1, 0.013, None)
    assert all(torch.equal(bits(a), bits(b)) for a, b in zip(first, reference))
