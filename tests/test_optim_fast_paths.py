"""The optimisers' fast paths give the straightforward computation's results: powers with a
whole exponent by repeated squaring, scratch buffers, and embedding rows whose gradient is zero
left out of the step (with edits to the weights still honoured)."""

import copy

import mpmath
import pytest
import torch

from attnbias import norms
from attnbias.norms import inverse_mirror_map, lp_norm, power_, whole_exponent
from attnbias.optim import MirrorDescent, NormalizedGD, PolyakStep, sparse_rows

pytestmark = pytest.mark.usefixtures("one_thread")


def relative_errors(got: torch.Tensor, x: torch.Tensor, e: int) -> list:
    """|got − x^e| / x^e for each entry, in 40-digit arithmetic."""
    mpmath.mp.dps = 40
    exact = [mpmath.mpf(float(v)) ** e for v in x]
    return [abs(mpmath.mpf(float(g)) - t) / t for g, t in zip(got, exact)]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("e", [3, 4, 5, 10, 11, 21])
def test_whole_exponents_are_right_to_the_rounding_of_their_multiplications(dtype, e):
    """Binary powering takes at most 2·log2(e) multiplications, and its relative error is at
    most γ = (e − 1)u / (1 − (e − 1)u) (u the unit roundoff); torch.pow's is within 1 ulp
    (2u), so the two agree to γ + 2u."""
    x = torch.rand(2000, generator=torch.Generator().manual_seed(e), dtype=torch.float64)
    x = (x * 1.5 + 0.1).to(dtype)  # results stay normal numbers, where the bound holds
    assert whole_exponent(float(e), dtype) == e
    got = power_(x.clone(), float(e))
    u = torch.finfo(dtype).eps / 2
    gamma = (e - 1) * u / (1 - (e - 1) * u)
    assert max(relative_errors(got, x, e)) <= gamma
    pow_ = x.pow(float(e)).double()
    assert float(((got.double() - pow_).abs() / pow_).max()) <= gamma + 2 * u


def test_the_exponent_is_whole_as_the_dtype_holds_it():
    """p = 1.1 gives q = 10.999999999999991: float32 holds it as 11 (torch.pow does too),
    float64 does not, so float64 keeps torch.pow."""
    q, inverse = 1.1 / (1.1 - 1.0), 1.0 / (1.1 - 1.0)
    assert whole_exponent(q, torch.float32) == 11 and whole_exponent(inverse, torch.float32) == 10
    assert whole_exponent(q, torch.float64) is None
    assert whole_exponent(0.5, torch.float64) is None and whole_exponent(1.0, torch.float32) is None
    x = torch.rand(100, dtype=torch.float32)
    assert torch.equal(x.pow(q), x.pow(11.0))


@pytest.mark.parametrize(
    ("dtype", "p"),
    [(torch.float32, 1.1), (torch.float32, 1.25), (torch.float64, 1.25), (torch.float64, 1.5)],
)
def test_inverse_mirror_map_with_a_whole_exponent_is_right(dtype, p):
    """1/(p − 1) = 10 (float32, p = 1.1), 4, 2: from θ², then binary powering, so the
    relative error stays below γ = (e − 1)u / (1 − (e − 1)u), as for power_."""
    theta = torch.randn(2000, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    theta = theta.to(dtype)
    e = whole_exponent(1.0 / (p - 1.0), dtype)
    got = inverse_mirror_map(theta, p)
    assert torch.equal(got.sign(), theta.sign())
    u = torch.finfo(dtype).eps / 2
    assert max(relative_errors(got.abs(), theta.abs(), e)) <= (e - 1) * u / (1 - (e - 1) * u)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("p", [1.1, 1.5, 2.0, 3.0, 11.0])
def test_scratch_buffers_change_nothing(dtype, p):
    x = torch.randn(7, 30, dtype=dtype) * 1e-20
    scratch = [torch.full_like(x, float("nan")) for _ in range(2)]
    assert torch.equal(lp_norm(x, p, scratch=scratch), lp_norm(x, p))
    out, powers = torch.empty_like(x), torch.full_like(x, float("nan"))
    inverse_mirror_map(x, p, out=out, scratch=powers)
    assert torch.equal(out, inverse_mirror_map(x, p))


def test_float32_l11_norm_matches_float64():
    x = torch.randn(5000, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 1e-30
    got, want = float(lp_norm(x.float(), 11.0)), float(lp_norm(x, 11.0))
    assert got == pytest.approx(want, rel=1e-6)


ROWS, WIDTH = 600, 8


def sparse_gradient(step: int, touched: list[int]) -> torch.Tensor:
    g = torch.zeros(ROWS, WIDTH)
    generator = torch.Generator().manual_seed(step)
    g[touched] = torch.randn(len(touched), WIDTH, generator=generator)
    return g


OPTIMIZERS = {
    "MD-1.1": lambda ps: MirrorDescent(ps, lr=0.05, p=1.1),
    "MD-1.1-normalized": lambda ps: MirrorDescent(ps, lr=0.05, p=1.1, normalize="per_tensor"),
    "MD-1.5-global": lambda ps: MirrorDescent(ps, lr=0.05, p=1.5, normalize="global"),
    "MD-3": lambda ps: MirrorDescent(ps, lr=0.05, p=3.0),
    "NGD": lambda ps: NormalizedGD(ps, lr=0.05),
    "Polyak": lambda ps: PolyakStep(ps, lr=0.05),
}


def touched_at(step: int) -> list[int]:
    return [3, 50 + step, 400, 599] + ([7] if step == 4 else [])


def run(make, edits: str | None):
    """Six steps on an embedding (ROWS × WIDTH, a few rows touched per step) and a dense
    matrix; with `edits`, rows are edited between steps, one of them untouched by the next
    step and touched by the one after: in place through `.data` ("data": torch's version
    counter does not see it) or under no_grad ("no_grad"). Returns the weights after each
    step."""
    torch.manual_seed(0)
    embedding = torch.nn.Parameter(torch.randn(ROWS, WIDTH))
    dense = torch.nn.Parameter(torch.randn(5, WIDTH))
    opt = make([embedding, dense])
    history = []
    for step in range(6):
        embedding.grad = sparse_gradient(step, touched_at(step))
        dense.grad = torch.randn(5, WIDTH, generator=torch.Generator().manual_seed(100 + step))
        opt.step(lambda: torch.tensor(2.0))
        history.append((embedding.detach().clone(), dense.detach().clone()))
        with torch.no_grad():
            target = embedding.data if edits == "data" else embedding
            if edits and step == 2:
                target[7].mul_(0.5)  # untouched at step 3, touched at step 4
                target[100].clamp_(-0.1, 0.1)  # never touched
            if edits and step == 3:
                target[3] = torch.zeros(WIDTH)  # touched at every step
    return history


@pytest.fixture(autouse=True)
def small_tensors_have_sparse_rows(monkeypatch):
    """The tests' embeddings are small: let them take the sparse-row path all the same."""
    monkeypatch.setattr(sparse_rows, "SPARSE_MIN_SIZE", 0)


@pytest.fixture
def straightforward(monkeypatch):
    """Every parameter stepped whole, as before the sparse-row path."""

    def disable():
        monkeypatch.setattr(sparse_rows, "SPARSE_MIN_ROWS", 10**9)

    return disable


def test_sparse_embedding_gradients_are_found():
    g = sparse_gradient(0, [3, 50, 400, 599])
    assert sparse_rows.touched_rows(g).tolist() == [3, 50, 400, 599]
    g[10, 2] = float("nan")
    assert sparse_rows.touched_rows(g).tolist() == [3, 10, 50, 400, 599]
    assert sparse_rows.touched_rows(torch.randn(ROWS, WIDTH)) is None  # dense: the whole step
    assert sparse_rows.touched_rows(torch.zeros(100, WIDTH)) is None  # few rows: the whole step


@pytest.mark.parametrize("edits", [None, "data", "no_grad"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_sparse_rows_give_the_full_steps_results(name, edits, straightforward):
    """float64: the gathered rows' norm differs from the full norm only in summation order,
    so the results agree to a few units of roundoff, and untouched rows are left as they
    are, edits included (a step after an edit steps every row, as the full path does)."""
    fast = run(OPTIMIZERS[name], edits)
    straightforward()
    full = run(OPTIMIZERS[name], edits)
    for step, (fast_weights, full_weights) in enumerate(zip(fast, full)):
        for a, b in zip(fast_weights, full_weights):
            # normwise: entries near 0 (the zeroed row) carry the step's rounding absolutely
            assert float((a - b).abs().max()) <= 1e-15 * float(b.abs().max()), (name, step)
    if edits:  # edited rows that a step does not touch keep the edit exactly
        assert torch.equal(fast[3][0][7], fast[2][0][7] * 0.5)
        assert torch.equal(fast[-1][0][100], fast[2][0][100].clamp(-0.1, 0.1))


@pytest.mark.parametrize("edits", ["data", "no_grad"])
def test_an_edit_to_an_untouched_row_is_honoured_when_it_is_next_touched(edits):
    """ℓ3-MD by hand on the edited row: θ restarts from the edited weights."""
    history = run(OPTIMIZERS["MD-3"], edits=edits)
    edited = history[2][0][7] * 0.5
    torch.testing.assert_close(history[3][0][7], edited, rtol=1e-15, atol=0)
    theta = edited.sign() * edited.abs() ** 2 - 0.05 * sparse_gradient(4, touched_at(4))[7]
    torch.testing.assert_close(
        history[4][0][7], theta.sign() * theta.abs() ** 0.5, rtol=1e-14, atol=0
    )


def test_a_nan_in_a_sparse_embedding_gradient_is_an_error():
    embedding = torch.nn.Parameter(torch.randn(ROWS, WIDTH))
    opt = MirrorDescent([embedding], lr=0.1, p=1.1, normalize="per_tensor")
    embedding.grad = sparse_gradient(0, [3, 50])
    embedding.grad[50, 1] = float("nan")
    before = copy.deepcopy(embedding.detach())
    with pytest.raises(FloatingPointError, match=r"parameter 0 .*shape \(600, 8\)"):
        opt.step()
    assert torch.equal(embedding.detach(), before)


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1.0, 1e18, 1e30])
def test_large_cpu_two_norms_without_scaling_match_the_scaled_norm(scale, monkeypatch):
    """Above UNSCALED_NORM_MIN_SIZE the ℓ2 norm skips the scaling when provably as good;
    where squares underflow or overflow (float32 at 1e-30 and 1e30) the scaled norm is used.
    4M entries: enough to show a coarse accumulation (torch.linalg.vector_norm is 1e-5 off
    in float32 at 1M)."""
    generator = torch.Generator().manual_seed(1)
    x64 = torch.randn(2, 1 << 21, generator=generator, dtype=torch.float64) * scale
    x32 = x64.float()
    fast64, fast32 = lp_norm(x64, 2.0, dim=(1,)), lp_norm(x32, 2.0, dim=(1,))
    monkeypatch.setattr(norms, "UNSCALED_NORM_MIN_SIZE", 10**12)
    torch.testing.assert_close(fast64, lp_norm(x64, 2.0, dim=(1,)), rtol=1e-15, atol=0)
    want = lp_norm(x32.double(), 2.0, dim=(1,))
    assert bool(torch.isfinite(fast32).all()) and bool((fast32 > 0).all())
    torch.testing.assert_close(fast32.double(), want, rtol=1e-6, atol=0)
    torch.testing.assert_close(lp_norm(x32, 2.0, dim=(1,)).double(), want, rtol=1e-6, atol=0)
