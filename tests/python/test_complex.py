"""Complex tensors (passes/complex.c): complex64 carried as float32 [..., 2]
(view_as_real's layout), FFTs as DFT matmuls, compiled with trnc against
eager PyTorch (pocketfft). Transform lengths at the tile boundaries 127, 128,
129, and 4096 and 16385 (Cooley-Tukey splits); every norm mode; several dims; non-contiguous real and complex inputs;
complex graph inputs and outputs; gradients; complex128 run as complex64; and
the forms trnc refuses with a reason.

Accuracy is eager's rule of tests/python/opinfo_run.py (TorchInductor's
_as_accurate_as_eager): the compiled result within tolerance of eager's, or
its RMS error against float64 at most twice eager's."""

from __future__ import annotations

import warnings

import pytest
import torch

import trnc

from conftest import has_extension
from helpers import run_counted

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _real(t):
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def _as_accurate(got, want, ref):
    """got (compiled) against want (eager float32 / complex64) and ref
    (float64 / complex128 eager)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w, r = _real(got).double(), _real(want).double(), _real(ref).double()
    scale = max(1.0, r.abs().max().item())
    if torch.allclose(g, w, rtol=1e-4, atol=1e-5 * scale):
        return
    res = (g - r).square().mean().sqrt().item()
    eager = (w - r).square().mean().sqrt().item()
    assert res <= (3.0 if r.numel() < 1000 else 2.0) * eager + 1e-6 * scale, (res, eager)


def _check(fn, *args):
    got = run_counted(fn, *args)
    want = fn(*args)
    ref = fn(*[a.to(torch.complex128 if a.is_complex() else torch.float64) for a in args])
    _as_accurate(got, want, ref)
    return got


@pytest.mark.parametrize("n", [127, 128, 129])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_rfft_lengths(n, norm):
    torch.manual_seed(n)
    x = torch.randn(3, n)
    _check(lambda t: torch.fft.rfft(t, norm=norm), x)


@pytest.mark.parametrize("n", [127, 128, 129])
def test_fft_ifft_irfft_hfft(n):
    torch.manual_seed(n)
    x = torch.randn(4, n)
    _check(lambda t: torch.fft.fft(t), x)
    _check(lambda t: torch.fft.ifft(t, norm="ortho"), x)
    _check(lambda t: torch.fft.irfft(t, n=n), torch.randn(4, n // 2 + 1, dtype=torch.complex64))
    _check(lambda t: torch.fft.hfft(t, n=n), torch.randn(4, n // 2 + 1, dtype=torch.complex64))


@pytest.mark.parametrize("n", [4096, 16385])
def test_long_ffts_split(n):
    """Longer than one dense DFT matrix: Cooley-Tukey steps (16385 = 113 x 145,
    4096 = 64 x 64) of dense DFTs and exact-phase twiddles."""
    torch.manual_seed(n)
    _check(lambda t: torch.fft.rfft(t), torch.randn(2, n))
    _check(lambda t: torch.fft.ifft(t, norm="ortho"), torch.randn(2, n, dtype=torch.complex64))
    _check(lambda t: torch.fft.irfft(t, n=n), torch.randn(2, n // 2 + 1, dtype=torch.complex64))


def test_fft_non_contiguous_inputs():
    torch.manual_seed(1)
    x = torch.randn(129, 6).t()  # [6, 129], strides (1, 6)
    _check(lambda t: torch.fft.rfft(t, dim=-1), x)
    c = torch.randn(5, 258, dtype=torch.complex64)[:, ::2]  # complex input, stride 2
    assert not c.is_contiguous()
    _check(lambda t: torch.fft.fft(t), c)
    _check(lambda t: torch.fft.fft(t, dim=0), torch.randn(128, 3, dtype=torch.complex64).t())


def test_fft_several_dims():
    torch.manual_seed(2)
    x = torch.randn(2, 9, 16, 5)
    _check(lambda t: torch.fft.rfft2(t, dim=(1, 2)), x)
    _check(lambda t: torch.fft.fftn(t, dim=(0, 1, 3), norm="ortho"), x)
    _check(lambda t: torch.fft.irfftn(t, s=(9, 8), dim=(1, 2)),
           torch.randn(2, 9, 5, 3, dtype=torch.complex64))


@pytest.mark.parametrize("n", [127, 129, 16385])
def test_rfft_gradient(n):
    torch.manual_seed(n)
    x0 = torch.randn(3, n)
    g = torch.randn(3, n // 2 + 1, 2)

    def grad(compiled):
        x = x0.clone().requires_grad_()
        f = (lambda t: torch.fft.rfft(t, norm="ortho"))
        y = torch.compile(f, backend="neuron", fullgraph=True)(x) if compiled else f(x)
        (torch.view_as_real(y) * g).sum().backward()
        return x.grad

    torch._dynamo.reset()
    before = trnc.stats()["backward"]
    got = grad(True)
    assert trnc.stats()["backward"] > before
    torch.testing.assert_close(got, grad(False), rtol=1e-4, atol=1e-5)


def test_complex_construction_and_views():
    torch.manual_seed(3)
    a, b = torch.randn(4, 129), torch.randn(4, 129)
    _check(lambda x, y: torch.complex(x, y) * torch.complex(y, x), a, b)
    _check(lambda x, y: torch.polar(x.abs(), y), a, b)
    _check(lambda x: torch.view_as_complex(x.reshape(4, -1, 2)).conj_physical() * 2, torch.randn(4, 128))
    _check(lambda x: x.to(torch.complex64).abs() + x, a)
    _check(lambda x, y: (x.cfloat() + torch.complex(y, y)).sum(dim=1), a, b)


def test_complex_division_where_and_complex_scalars():
    torch.manual_seed(6)
    c, d = torch.randn(3, 129, dtype=torch.complex64), torch.randn(3, 129, dtype=torch.complex64)
    r = torch.rand(3, 129) + 0.5
    _check(lambda x, y: x / y, c, d)
    _check(lambda x, y: x / y, c, r)
    _check(lambda x: x * 1j + x * (2 - 0.5j), c)
    _check(lambda x, m: torch.where(m > 1, x, torch.zeros_like(x)), c, r)


def test_polar_gradient():
    torch.manual_seed(7)
    a0, t0 = torch.rand(129) + 0.1, torch.randn(129)
    a0[3] = 0.0  # polar's backward divides by |z|, selecting 0 there
    g = torch.randn(129, 2)

    def grads(compiled):
        a, t = a0.clone().requires_grad_(), t0.clone().requires_grad_()
        f = torch.compile(torch.polar, backend="neuron", fullgraph=True) if compiled else torch.polar
        (torch.view_as_real(f(a, t)) * g).sum().backward()
        return a.grad, t.grad

    torch._dynamo.reset()
    before = trnc.stats()["backward"]
    got = grads(True)
    assert trnc.stats()["backward"] > before
    for x, y in zip(got, grads(False)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_complex_graph_input_and_output():
    torch.manual_seed(4)
    c = torch.randn(3, 129, dtype=torch.complex64)
    got = _check(lambda t: torch.view_as_real(t * t + t), c)
    assert got.shape == (3, 129, 2)
    _check(lambda t: t[:, 1:100].abs(), c)


def test_complex128_runs_as_complex64():
    torch.manual_seed(5)
    c = torch.randn(4, 33, dtype=torch.complex128)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = run_counted(lambda t: torch.fft.fft(t), c)
    assert got.dtype == torch.complex128
    assert any("complex128 is executed as complex64" in str(x.message) for x in w)
    torch.testing.assert_close(got, torch.fft.fft(c), rtol=1e-4, atol=1e-4)


def test_refused_forms_name_the_reason():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="complex32 is not lowered"):
        torch.compile(lambda t: t.to(torch.complex32), backend="neuron", fullgraph=True)(
            torch.randn(4))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="a large prime length is not lowered"):
        torch.compile(lambda t: torch.fft.rfft(t), backend="neuron", fullgraph=True)(
            torch.randn(2, 65537))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="no complex lowering"):
        torch.compile(lambda x: torch.exp(x), backend="neuron", fullgraph=True)(
            torch.randn(4, dtype=torch.complex64))


def test_complex_artifact_from_the_cache(tmp_path, monkeypatch):
    """A cached program keeps its complex boundary (trnc_io.complex): the
    second compile loads the artifact from disk and binds the same tensors."""
    monkeypatch.setenv("TRNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRNC_CACHE", raising=False)
    torch.manual_seed(8)
    c = torch.randn(3, 129, dtype=torch.complex64)
    f = lambda t: torch.fft.ifft(t) * 2  # noqa: E731
    got = []
    for _ in range(2):
        torch._dynamo.reset()
        with torch.no_grad():
            got.append(torch.compile(f, backend="neuron", fullgraph=True)(c))
    assert trnc.last_report()["cache"] == "hit"
    for g in got:
        _as_accurate(g, f(c), f(c.to(torch.complex128)))
