"""Mirror descent's flat buffers (`optim.flat_duals`, issue 31 goal 4): θ and the copy of w of
a group kept as one flat buffer each. The step they take is the per-tensor step (the
reference: `flat_duals.ENABLED` off) bit for bit at every step, in float32 and float64, with
every edit between steps that the per-tensor step honours; a state dict round-trips."""

from __future__ import annotations

import io

import pytest
import torch

from attnbias.optim import MirrorDescent, flat_duals

SHAPES = [(30, 7), (7,), (5000,), (3, 4, 5)]


def make_params(dtype, device="cpu", seed=5) -> list[torch.nn.Parameter]:
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.nn.Parameter(torch.randn(shape, generator=generator, dtype=dtype).to(device))
        for shape in SHAPES
    ]


def laid_out(optimizer: MirrorDescent, params) -> bool:
    """Whether every parameter's θ and copy of w are views of the group's flat buffers."""
    (flat,) = optimizer.flat_duals.values()
    states = [optimizer.state[w] for w in params]
    return flat.holds(states, list(params))


def edit(step: int, params, generator) -> None:
    """What a user may do between steps: an edit through .data, .data replaced by a tensor of
    the same shape, then of another shape, a parameter left without a gradient."""
    if step == 2:
        params[0].data[0] = 0.25
    if step == 3:
        params[2].data = params[2].data.clone().mul_(0.5)
    if step == 5:
        params[1].grad = None
    if step == 6:
        kind = dict(dtype=params[3].dtype, device=params[3].device)
        params[3].data = torch.randn(4, 5, generator=generator, dtype=kind["dtype"]).to(**kind)
        params[3].grad = torch.randn(4, 5, generator=generator, dtype=kind["dtype"]).to(**kind)


def trajectory(hyper: dict, dtype, flat: bool, monkeypatch, steps=8, device="cpu"):
    """The weights and dual iterates after each step, and whether each step was laid out."""
    monkeypatch.setattr(flat_duals, "ENABLED", flat)
    generator = torch.Generator().manual_seed(7)
    params = make_params(dtype, device)
    optimizer = MirrorDescent(params, **hyper)
    out, layout = [], []
    for step in range(steps):
        for w in params:
            w.grad = torch.randn(w.shape, generator=generator, dtype=dtype).to(device)
        edit(step, params, generator)
        optimizer.step()
        stepped = [w for w in params if w.grad is not None]
        layout.append(bool(optimizer.flat_duals) and laid_out(optimizer, stepped))
        out.append(
            [w.detach().cpu().clone() for w in params]
            + [optimizer.state[w]["dual"].cpu().clone() for w in params]
        )
    return out, layout


CASES = [
    dict(lr=0.05, p=1.1),
    dict(lr=0.05, p=1.5, normalize=True),
    dict(lr=0.05, p=1.25, weight_decay=0.1, maximize=True),
    dict(lr=0.3, p=1.1, normalize="global", weight_decay=0.01),
    dict(lr=1e-30, p=1.5, normalize=True),  # D/η not a normal number: D and η apart
    # w = |θ|^e by torch.pow (e not whole: float64 p = 1.1 has e = 9.999…), whose vectorised
    # and scalar paths round apart: taken tensor by tensor
    dict(lr=0.05, p=1.75, normalize=True),
    dict(lr=0.05, p=1.3),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("hyper", CASES, ids=str)
def test_the_flat_step_is_the_per_tensor_step_bit_for_bit(hyper, dtype, monkeypatch):
    flat, layout = trajectory(hyper, dtype, True, monkeypatch)
    reference, _ = trajectory(hyper, dtype, False, monkeypatch)
    assert all(layout)
    for k, (a, b) in enumerate(zip(flat, reference)):
        for x, y in zip(a, b):
            assert torch.equal(x, y), f"step {k}"


def test_the_state_holds_views_of_one_buffer_and_the_parameters_their_own_storage():
    params = make_params(torch.float32)
    before = [w.data_ptr() for w in params]
    optimizer = MirrorDescent(params, lr=0.1, p=1.5)
    for w in params:
        w.grad = torch.ones_like(w)
    optimizer.step()
    (flat,) = optimizer.flat_duals.values()
    assert [w.data_ptr() for w in params] == before
    for w, theta, weight in zip(params, flat.theta_views, flat.copy_views):
        assert optimizer.state[w]["dual"] is theta and optimizer.state[w]["weight"] is weight
        assert torch.equal(weight, w.detach())
        assert theta.untyped_storage().data_ptr() == flat.theta.untyped_storage().data_ptr()


def run(optimizer, params, grads) -> None:
    for step in grads:
        for w, g in zip(params, step):
            w.grad = g.clone()
        optimizer.step()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("normalize", [False, True])
def test_a_state_dict_round_trips_through_a_file(normalize, dtype):
    generator = torch.Generator().manual_seed(11)
    grads = [[torch.randn(s, generator=generator, dtype=dtype) for s in SHAPES] for _ in range(6)]
    hyper = dict(lr=0.05, p=1.5, normalize=normalize)
    params = make_params(dtype)
    whole = MirrorDescent(params, **hyper)
    run(whole, params, grads)

    first = make_params(dtype)
    optimizer = MirrorDescent(first, **hyper)
    run(optimizer, first, grads[:3])
    buffer = io.BytesIO()
    torch.save({"optimizer": optimizer.state_dict(), "params": first}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    for w in saved["optimizer"]["state"].values():  # each as large as its parameter
        assert [t.shape for t in (w["dual"], w["weight"])] in [
            [s, s] for s in map(torch.Size, SHAPES)
        ]
    resumed = [torch.nn.Parameter(w.detach().clone()) for w in saved["params"]]
    again = MirrorDescent(resumed, **hyper)
    run(again, resumed, grads[:1])  # its own flat buffers first: the load replaces them
    again.load_state_dict(saved["optimizer"])
    for w, v in zip(resumed, saved["params"]):
        w.data.copy_(v)
    run(again, resumed, grads[3:])
    assert laid_out(again, resumed)
    for a, b in zip(resumed + [again.state[w]["dual"] for w in resumed],
                    params + [whole.state[w]["dual"] for w in params]):  # fmt: skip
        assert torch.equal(a, b)


def test_a_state_dict_loaded_from_another_optimizer_is_not_shared_with_it():
    """torch's load_state_dict keeps tensors that need no cast as they are: the first step
    lays them out in buffers of the loading optimiser's own, leaving the other's state."""
    params = make_params(torch.float64)
    source = MirrorDescent(params, lr=0.1, p=1.5)
    for w in params:
        w.grad = torch.ones_like(w)
    source.step()
    kept = [source.state[w]["dual"].clone() for w in params]
    twins = [torch.nn.Parameter(w.detach().clone()) for w in params]
    twins[0].data[0, 0] = 3.0  # an edit: its θ is refreshed, in the loader's buffer only
    loader = MirrorDescent(twins, lr=0.1, p=1.5)
    loader.load_state_dict(source.state_dict())
    for w in twins:
        w.grad = torch.ones_like(w)
    loader.step()
    assert laid_out(loader, twins)
    for w, theta in zip(params, kept):
        assert torch.equal(source.state[w]["dual"], theta)
    assert laid_out(source, params)


def test_groups_are_laid_out_each_and_the_flat_step_is_left_where_it_does_not_apply():
    """A group of its own buffers; not for "per_tensor", a tensor lr, p > 2, half precision or
    mixed dtypes."""
    params = make_params(torch.float32)
    optimizer = MirrorDescent(
        [{"params": params[:2]}, {"params": params[2:], "lr": 0.01}], lr=0.1, p=1.1
    )
    for w in params:
        w.grad = torch.ones_like(w)
    optimizer.step()
    assert len(optimizer.flat_duals) == 2
    others = [
        (dict(lr=0.1, p=1.1, normalize="per_tensor"), torch.float32),
        (dict(lr=torch.tensor(0.1), p=1.1), torch.float32),
        (dict(lr=0.1, p=3.0), torch.float32),
        (dict(lr=0.1, p=1.5), torch.bfloat16),
    ]
    for hyper, dtype in others:
        params = make_params(dtype)
        optimizer = MirrorDescent(params, **hyper)
        for w in params:
            w.grad = torch.ones_like(w)
        optimizer.step()
        assert not optimizer.flat_duals, hyper
    mixed = make_params(torch.float32)[:2] + make_params(torch.float64)[2:]
    optimizer = MirrorDescent(mixed, lr=0.1, p=1.5)
    for w in mixed:
        w.grad = torch.ones_like(w)
    optimizer.step()
    assert not optimizer.flat_duals


def test_a_nonfinite_gradient_changes_nothing_in_the_flat_step():
    params = make_params(torch.float32)
    optimizer = MirrorDescent(params, lr=0.1, p=1.5, normalize=True)
    for w in params:
        w.grad = torch.ones_like(w)
    optimizer.step()
    before = [w.detach().clone() for w in params]
    duals = [optimizer.state[w]["dual"].clone() for w in params]
    params[2].grad[7] = float("nan")
    with pytest.raises(FloatingPointError, match="parameter 2 of group 0"):
        optimizer.step()
    for w, b, theta in zip(params, before, duals):
        assert torch.equal(w, b) and torch.equal(optimizer.state[w]["dual"], theta)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("hyper", CASES, ids=str)
def test_the_flat_step_on_a_gpu_is_the_per_tensor_step(hyper, dtype, monkeypatch):
    """On a GPU the reference takes torch._foreach_* kernels, which may contract a
    multiply-add where the flat buffer's kernels do not: equal to a few ulps, not bit for bit."""
    flat, layout = trajectory(hyper, dtype, True, monkeypatch, device="cuda")
    reference, _ = trajectory(hyper, dtype, False, monkeypatch, device="cuda")
    assert all(layout)
    tol = 1e-13 if dtype == torch.float64 else 1e-5
    for a, b in zip(flat, reference):
        for x, y in zip(a, b):
            torch.testing.assert_close(x, y, rtol=tol, atol=tol)
