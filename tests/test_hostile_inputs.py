"""Hostile inputs (issue 28, item 4): sizes checked on what will be allocated, before it is;
memory estimated before anything large is built; optimiser state validated whole before any
of it is applied; a peer that is not a Dask scheduler refused within a bounded time. Each is
one line on the command line (exit code 2, no traceback), a named error in the library."""

import copy
import http.server
import threading
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attnbias._validate import as_tensor
from attnbias.cli import main
from attnbias.engine import memory
from attnbias.npz import load_npz
from attnbias.optim import MirrorDescent, NormalizedGD, SignGD, SpectralDescent, SteepestDescent
from attnbias.real.train import (
    UnsafeCheckpoint,
    checkpoint_bytes,
    load_checkpoint,
)
from tiny_model import Tiny, train_tiny

pytestmark = pytest.mark.usefixtures("one_thread")


def one_error_line(capsys) -> str:
    """The stderr of a failed command: exactly one line, no traceback, no warning."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnbias: error: "), err
    return err


def peak_bytes(call) -> int:
    """The peak of memory traced (numpy's allocations included) while call() runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- sizes counted as what will be allocated ---------------------------------------------------


def test_a_zero_itemsize_structured_x_is_refused_before_any_conversion(tmp_path, capsys):
    # np.dtype([]) takes 0 bytes an entry: the file is tiny, its float64 conversion 77 MB
    empty = np.dtype([])
    path = tmp_path / "zero.npz"
    np.savez(path, X=np.empty((200, 16, 3000), empty), z=np.empty((200, 3000), empty))
    assert path.stat().st_size < 2000
    codes = []
    peak = peak_bytes(lambda: codes.append(main(["svm", str(path)])))
    assert codes == [2]
    assert "holds records" in one_error_line(capsys)
    assert peak < 10 * 10**6  # nothing of the conversion's size was allocated
    with pytest.raises(ValueError, match="'X' holds records"):
        load_npz(path, 10**9, "x")


@pytest.mark.parametrize(
    "dtype, problem",
    [("U2", "<U2 values"), ("M8[D]", "datetime64"), ("S3", "|S3 values")],
)
def test_npz_arrays_that_are_not_numbers_are_refused(tmp_path, dtype, problem):
    np.savez(tmp_path / "a.npz", X=np.zeros(3, dtype))
    with pytest.raises(ValueError, match=rf"'X' holds {problem}"):
        load_npz(tmp_path / "a.npz", 10**6, "x")


def test_a_zero_size_string_dtype_is_refused_from_its_header(tmp_path):
    # <U0 counts 0 bytes; numpy reads it as <U1: 400 GB for this shape
    npz_with_header(
        tmp_path / "u.npz", b"{'descr': '<U0', 'fortran_order': False, 'shape': (100000000000,)}"
    )
    with pytest.raises(ValueError, match="'X' holds <U0 values"):
        load_npz(tmp_path / "u.npz", 10**6, "x")


def test_complex_x_is_refused_not_truncated_and_reported_optimal(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 2)) + 1j * rng.standard_normal((3, 4, 2))
    np.savez(tmp_path / "c.npz", X=X, z=rng.standard_normal((3, 2)), alpha=np.zeros(3, int))
    assert main(["svm", str(tmp_path / "c.npz")]) == 2
    line = one_error_line(capsys)
    assert "'X' is complex" in line and "imaginary" in line
    # the library refuses it too, before converting, naming the argument
    for x in (X, torch.from_numpy(X)):
        with pytest.raises(TypeError, match="X must hold real numbers"):
            as_tensor(x, "X")
    with pytest.raises(TypeError, match="X must be a numeric array, got dtype"):
        as_tensor(np.empty((4, 4), np.dtype([])), "X")


def test_narrow_dtypes_count_as_the_float64_they_become(tmp_path, capsys):
    # int8: 1 MB in the file, 8 MB as float64, which the solver converts it to
    np.savez(tmp_path / "i.npz", X=np.ones((100, 100, 100), np.int8), z=np.ones((100, 100)))
    assert main(["svm", str(tmp_path / "i.npz"), "--max-array-mb", "4"]) == 2
    line = one_error_line(capsys)
    assert "'X' of shape (100, 100, 100) and dtype int8 takes 8.0 MB as float64" in line
    # the store's own loader counts them as they are
    assert load_npz(tmp_path / "i.npz", 4 * 10**6, "x")["X"].dtype == np.int8


def npz_with_header(path: Path, header: bytes) -> None:
    """An .npz whose X.npy has this (version 1.0) header, padded as numpy pads it."""
    padded = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + len(padded).to_bytes(2, "little") + padded + bytes(16)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X.npy", member)


def test_an_npz_header_that_does_not_parse_is_one_short_line(tmp_path, capsys):
    nested = b"(" * 3000 + b")" * 3000
    npz_with_header(tmp_path / "h.npz", b"{'descr': " + nested + b", 'shape': (1,)}")
    assert main(["svm", str(tmp_path / "h.npz")]) == 2
    line = one_error_line(capsys)
    assert "is not a readable .npz file" in line and len(line) < 500


# --- optimiser state: validated whole, applied all or nothing ----------------------------------

OPTIMISERS = {
    "md": lambda ps: MirrorDescent(ps, lr=0.1, p=3.0),
    "ngd-mom": lambda ps: NormalizedGD(ps, lr=0.1, momentum=0.9),
    "steepest": lambda ps: SteepestDescent(ps, lr=0.1, norm=3.0, momentum=0.5),
    "sign": lambda ps: SignGD(ps, lr=0.1, momentum=0.5),
    "spectral": lambda ps: SpectralDescent(ps, lr=0.1, momentum=0.5),
}


def stepped(make, steps: int = 2):
    """An optimiser of one 2×2 float64 parameter after a few steps on ‖w‖²."""
    w = torch.nn.Parameter(torch.tensor([[0.5, -0.3], [0.2, 0.9]], dtype=torch.float64))
    opt = make([w])
    for _ in range(steps):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    return w, opt


def same_state(a, b) -> bool:
    """Nested state dicts equal, tensors bit for bit."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    return a == b


def tampered(opt, edit):
    saved = copy.deepcopy(opt.state_dict())
    saved["param_groups"][0]["lr"] = 0.7  # applied first by torch: must not stay after a failure
    edit(saved)
    return saved


def non_finite(saved):
    value = next(iter(saved["state"][0].values()))
    value[0, 0] = float("inf")


def misshapen(saved):
    key = next(iter(saved["state"][0]))
    saved["state"][0][key] = torch.zeros(3, dtype=torch.float64)


def not_a_dict(saved):
    saved["state"][0] = torch.zeros(2, 2)


def stray_parameter(saved):
    saved["state"][7] = {}


@pytest.mark.parametrize("edit", [non_finite, misshapen, not_a_dict, stray_parameter])
@pytest.mark.parametrize("name", OPTIMISERS)
def test_a_bad_optimiser_state_is_refused_whole_and_changes_nothing(name, edit):
    w, opt = stepped(OPTIMISERS[name])
    before = copy.deepcopy(opt.state_dict())
    with pytest.raises((TypeError, ValueError), match=type(opt).__name__):
        opt.load_state_dict(tampered(opt, edit))
    assert same_state(opt.state_dict(), before)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] == [w]


def test_a_failure_while_a_state_is_applied_puts_the_optimiser_back():
    _, opt = stepped(OPTIMISERS["md"])
    before = copy.deepcopy(opt.state_dict())
    good = tampered(opt, lambda saved: None)
    good["state"][0]["dual"] *= 2

    def fail(optimizer):
        raise RuntimeError("a post-load hook failed")

    handle = opt.register_load_state_dict_post_hook(fail)
    with pytest.raises(RuntimeError, match="post-load hook"):
        opt.load_state_dict(good)
    assert same_state(opt.state_dict(), before)
    handle.remove()
    opt.load_state_dict(good)  # the same state loads once nothing fails
    assert opt.param_groups[0]["lr"] == 0.7


def test_an_infinite_saved_dual_is_refused_not_turned_into_infinite_weights():
    w, opt = stepped(OPTIMISERS["md"])
    saved = copy.deepcopy(opt.state_dict())
    del saved["state"][0]["weight"]  # a checkpoint of the version that kept θ alone
    saved["state"][0]["dual"][0, 0] = float("inf")
    with pytest.raises(ValueError, match="'dual' of parameter 0 of group 0 holds NaN or inf"):
        opt.load_state_dict(saved)
    opt.zero_grad()
    (w**2).sum().backward()
    opt.step()
    assert torch.isfinite(w).all()


def test_a_dual_that_overflowed_beside_its_finite_weight_still_loads():
    # p = 2000: θ = |w|^1999 overflows float64 at w = 3; the step works from w there
    w = torch.nn.Parameter(torch.tensor([3.0, 0.5], dtype=torch.float64))
    opt = MirrorDescent([w], lr=1e-3, p=2000.0)
    opt.zero_grad()
    w.sum().backward()
    opt.step()
    saved = copy.deepcopy(opt.state_dict())
    assert torch.isinf(saved["state"][0]["dual"][0])
    twin = MirrorDescent([torch.nn.Parameter(w.detach().clone())], lr=1e-3, p=2000.0)
    twin.load_state_dict(saved)
    assert same_state(twin.state_dict()["state"], saved["state"])
    saved["state"][0]["dual"][1] = float("inf")  # where w = 0.5 it cannot have overflowed
    with pytest.raises(ValueError, match="holds NaN or inf"):
        twin.load_state_dict(saved)


# --- a peer that is not a Dask scheduler -------------------------------------------------------


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # its log goes to stderr, which the test reads
        pass


@pytest.fixture
def http_server():
    """An ordinary HTTP server on 127.0.0.1: it accepts a connection and waits for a request
    line that Dask's handshake never sends."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_scheduler_address_that_is_an_http_server_is_refused_within_the_timeout(
    tmp_path, http_server, capsys
):
    pytest.importorskip("distributed")
    argv = ["run", "ngd-fixed", "--quick", "--out", str(tmp_path), "--scheduler", http_server]
    codes = []
    # without the bound, Dask's connect waits on it for ever: the command is run on a thread
    command = threading.Thread(
        target=lambda: codes.append(main([*argv, "--connect-timeout", "1"])), daemon=True
    )
    command.start()
    command.join(120)  # importing distributed can take 20 s on a busy machine
    assert codes == [2], "the command hung on a peer that never answers"
    line = one_error_line(capsys)
    assert f"could not reach a Dask scheduler at {http_server} within 1 s: " in line
    assert not (tmp_path / "ngd-fixed").exists()  # refused before anything ran
    for bad in ("0", "nan", "-1"):
        assert main([*argv, "--connect-timeout", bad]) == 2
        assert "--connect-timeout must be a positive number" in one_error_line(capsys)


# --- memory estimated before anything large is built; config integers bounded ------------------


@pytest.fixture
def little_memory(monkeypatch):
    """This process has 200 MB left (the estimates compare against it)."""
    monkeypatch.setattr(memory, "available_memory", lambda: 200 * 10**6)


@pytest.mark.parametrize(
    "options, named",
    [
        (["--seeds", "20000"], "seeds = 20,000"),  # 60,000 runs' results
        (["--set-d"], "d = 300"),  # one run's program: 432 MB
    ],
)
def test_a_sweep_that_cannot_fit_is_refused_before_its_problems_are_built(
    tmp_path, little_memory, capsys, options, named
):
    argv = ["reproduce", "md-local", "--quick", "--out", str(tmp_path)]
    if options == ["--set-d"]:
        (tmp_path / "c.toml").write_text('experiment = "md-local"\nd = 300\n')
        argv = ["run", str(tmp_path / "c.toml"), "--quick", "--out", str(tmp_path)]
        options = []
    main(["config", "md-local"])  # the modules imported first: their import is not measured
    capsys.readouterr()
    codes = []
    peak = peak_bytes(lambda: codes.append(main([*argv, *options])))
    assert codes == [2]
    line = one_error_line(capsys)
    assert named in line and "GiB available; lower them" in line
    assert peak < 20 * 10**6  # neither the problems nor the initial weights were made


def test_a_deeply_nested_or_huge_config_file_is_refused_before_parsing(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text('experiment = "ngd-fixed"\nx = ' + "[" * 50_000 + "]" * 50_000 + "\n")
    for argv in (["run", str(deep), "--out", str(tmp_path)], ["config", str(deep)]):
        assert main(argv) == 2
        assert "nests 50000 levels deep (at most 32 are read)" in one_error_line(capsys)
    big = tmp_path / "big.toml"
    big.write_text('experiment = "ngd-fixed"\n' + "# padding\n" * 200_000)
    assert main(["config", str(big)]) == 2
    assert "is larger than 1,000,000 bytes" in one_error_line(capsys)
    # strings and comments are not nesting: a legitimate config with brackets in them reads
    fine = tmp_path / "fine.toml"
    fine.write_text('experiment = "ngd-fixed"  # [[[[\nseeds = 2  # ' + "[" * 100 + "\n")
    assert main(["config", str(fine)]) == 0


@pytest.mark.parametrize(
    "field, value",
    [("seeds", "10**30"), ("grid_points", "2**40"), ("steps", "99999999999")],
)
def test_config_integers_that_feed_sizes_are_bounded(tmp_path, capsys, field, value):
    written = str(eval(value))  # a TOML integer
    (tmp_path / "c.toml").write_text(f'experiment = "ngd-fixed"\n{field} = {written}\n')
    assert main(["config", str(tmp_path / "c.toml")]) == 2
    assert f"{field} must be <= 2147483647, got {written}" in one_error_line(capsys)


# --- checkpoints: sized before torch.load ---------------------------------------------------------


def test_a_checkpoint_that_unpacks_beyond_its_run_is_refused_before_loading(tmp_path):
    # 300 MB of zeros deflated to a fraction of a MB, where a run of 8 parameters writes kB
    with zipfile.ZipFile(tmp_path / "last.pt", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("archive/data/0", "w", force_zip64=True) as member:
            for _ in range(300):
                member.write(bytes(10**6))
    assert (tmp_path / "last.pt").stat().st_size < 10**6
    with pytest.raises(UnsafeCheckpoint, match=r"unpacks to 300,000,000 bytes, more than the"):
        train_tiny(tmp_path, steps=2)
    (tmp_path / "last.pt").unlink()
    train_tiny(tmp_path, steps=2)  # the run's own checkpoint is within its bound, and resumes
    assert load_checkpoint(tmp_path / "last.pt", "cpu", checkpoint_bytes(Tiny()))["step"] == 2
    with pytest.raises(UnsafeCheckpoint, match=r"it takes [\d,]+ bytes, more than the 100 a"):
        load_checkpoint(tmp_path / "last.pt", "cpu", max_bytes=100)
