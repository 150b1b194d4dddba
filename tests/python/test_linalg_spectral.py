"""Householder QR, the symmetric eigendecomposition and the SVD of small
matrices (passes/decomp_linalg.c: LAPACK's geqr2/org2r steps, cyclic and
one-sided Jacobi) and what torch builds from them (pinv, matrix_rank, cond,
the nuclear and spectral norms) compiled with trnc against eager PyTorch's
LAPACK: square sizes 1, 2, 5, 16 and the 32 x 32 limit, rectangular and
batched matrices, input gradients, and the refusal past the limit.

QR's factors carry LAPACK's signs and are compared directly; eigenvectors
and singular vectors are unique only up to sign, so they are compared after
aligning each column's sign (a pair of singular vectors flips together), and
gradients go through functions that do not depend on those signs."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _close(got, want, rtol):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    if not want.numel():
        return
    scale = want.abs().max().clamp_min(1e-6)
    err = ((got - want).abs().max() / scale).item()
    assert err <= rtol, (err, got, want)


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def _signs(got, want):
    """+-1 per column of want [..., m, k] aligning got's columns to it."""
    s = torch.sign((got * want).sum(-2, keepdim=True))
    return torch.where(s == 0, torch.ones_like(s), s)


def _mat(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _spectral(a):
    q, r = torch.linalg.qr(a)
    qc, rc = torch.linalg.qr(a, mode="complete")
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return q, r, qc, rc, torch.linalg.qr(a, mode="r")[1], u, s, vh


def _check_spectral(a, eigh=True, rtol=2e-5):
    before = trnc.stats()["graphs"]
    got = _compile(_spectral)(a)
    assert trnc.stats()["graphs"] > before
    want = _spectral(a)
    for g, w in zip(got[:5], want[:5]):  # QR: eager's signs
        _close(g, w, rtol)
    u, s, vh = got[5:]
    uw, sw, vhw = want[5:]
    _close(s, sw, rtol)
    sg = _signs(u, uw)
    _close(u * sg, uw, 10 * rtol)
    _close(vh * sg.mT, vhw, 10 * rtol)
    if eigh:
        w, v = _compile(lambda a: torch.linalg.eigh(a, UPLO="U"))(a)
        ww, vw = torch.linalg.eigh(a, UPLO="U")
        _close(w, ww, rtol)
        _close(v * _signs(v, vw), vw, 10 * rtol)


# 2 and 16 (and two of the rectangular shapes) run with TRNC_TESTS=long
@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.long), 5,
                               pytest.param(16, marks=pytest.mark.long), 32])
def test_square(n):
    _check_spectral(_mat(n, n, seed=n))


@pytest.mark.parametrize("shape", [(7, 3), pytest.param((3, 7), marks=pytest.mark.long),
                                   pytest.param((2, 6, 4), marks=pytest.mark.long), (3, 4, 6)])
def test_rectangular_and_batched(shape):
    _check_spectral(_mat(*shape, seed=sum(shape)), eigh=False)


def test_batched_eigh_and_repeated_eigenvalues():
    a = _mat(2, 3, 6, 6, seed=30)
    _check_spectral(a)
    # a repeated eigenvalue: its eigenvectors are any basis of its space,
    # the eigenvalues and the projection onto that space are unique
    q = torch.linalg.qr(_mat(5, 5, seed=31))[0]
    sym = q @ torch.diag(torch.tensor([1.0, 2.0, 2.0, 3.0, -1.0])) @ q.mT
    w, v = _compile(torch.linalg.eigh)(sym)
    _close(w, torch.linalg.eigvalsh(sym), 2e-5)
    _close(v @ torch.diag(w) @ v.mT, sym, 2e-5)
    _close(v.mT @ v, torch.eye(5), 2e-5)


def _grads(fn, *args):
    a1 = [x.clone().requires_grad_() for x in args]
    a2 = [x.clone().requires_grad_() for x in args]
    before = trnc.stats()["graphs"]
    _compile(fn)(*a1).backward()
    assert trnc.stats()["graphs"] > before
    fn(*a2).backward()
    for x, y in zip(a1, a2):
        _close(x.grad, y.grad, 1e-4)


def test_gradients():
    a = _mat(2, 5, 4, seed=40)
    w1, w2 = _mat(2, 5, 4, seed=41), _mat(2, 4, 4, seed=42)
    _grads(lambda a: (torch.linalg.qr(a)[0] * w1).sum() + (torch.linalg.qr(a)[1] * w2).sum(), a)
    c = _mat(2, 5, 5, seed=43)
    _grads(lambda a: (torch.linalg.eigh(a)[0] * torch.arange(5.0)).sum()
           + (torch.linalg.eigh(a)[1].pow(2) * c).sum(), _mat(2, 5, 5, seed=44))

    def svd_loss(a):
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        return (s * torch.arange(1.0, 5.0)).sum() + ((u @ vh) * w1).sum()
    _grads(svd_loss, a)
    _grads(lambda a: (torch.linalg.pinv(a) * w1.mT).sum(), a)


def test_what_torch_builds_from_svd_and_eigh():
    a = _mat(3, 6, 5, seed=50)
    a[0, :, 4] = a[0, :, 0] + a[0, :, 1]  # rank 4
    sym = a[:, :5] + a[:, :5].mT
    fns = [lambda a: torch.linalg.pinv(a), lambda a: torch.linalg.matrix_rank(a),
           lambda a: torch.linalg.cond(a[1:, :5, :]), lambda a: torch.linalg.matrix_norm(a, "nuc"),
           lambda a: torch.linalg.matrix_norm(a, 2), lambda a: torch.linalg.svdvals(a),
           lambda a: torch.linalg.pinv(a[..., :5, :] + a[..., :5, :].mT, hermitian=True)]
    for fn in fns:
        got, want = _compile(fn)(a), fn(a)
        if want.is_floating_point():
            _close(got, want, 1e-4)
        else:
            assert torch.equal(got, want)
    assert torch.equal(_compile(lambda s: torch.linalg.eigvalsh(s) > 0)(sym),
                       torch.linalg.eigvalsh(sym) > 0)


@pytest.mark.parametrize("shape", [(4, 4), (2, 7, 3), (3, 6)])
def test_full_matrices(shape):
    """The complement full_matrices adds is any orthonormal basis (eager's
    is LAPACK's choice): U and Vh are orthogonal, their first k vectors
    agree with eager up to sign, and they reproduce A."""
    a = _mat(*shape, seed=60)
    k = min(shape[-2:])
    u, s, vh = _compile(lambda a: torch.linalg.svd(a))(a)
    uw, sw, vhw = torch.linalg.svd(a)
    assert u.shape == uw.shape and vh.shape == vhw.shape
    _close(s, sw, 2e-5)
    for q in (u, vh):
        _close(q.mT @ q, torch.eye(q.shape[-1]).expand(q.shape), 2e-5)
    sg = _signs(u[..., :k], uw[..., :k])
    _close(u[..., :k] * sg, uw[..., :k], 2e-4)
    _close(vh[..., :k, :] * sg.mT, vhw[..., :k, :], 2e-4)
    _close(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, 2e-5)


def test_the_32_limit():
    for fn, x, what in [(torch.linalg.qr, _mat(40, 33, seed=61), "larger than 32 x 32"),
                        (torch.linalg.eigh, _mat(33, 33, seed=62), "larger than 32 x 32"),
                        (torch.linalg.svdvals, _mat(33, 34, seed=63), "larger than 32 x 32")]:
        with pytest.raises(Exception) as info:
            _compile(fn)(x)
        err = getattr(info.value, "inner_exception", info.value)
        assert isinstance(err, trnc.UnsupportedOperatorError), err
        assert what in str(err)
    # a tall QR past 32 rows is within the limit (32 steps)
    _check_spectral(_mat(40, 32, seed=65)[:40, :8], eigh=False)


@pytest.mark.parametrize("offset,dim1,dim2,src", [(0, 1, 2, (3, 4)), (1, 1, 2, (3, 4)),
                                                  (-2, 1, 2, (3, 2)), (2, 2, 0, (4, 1))])
def test_diagonal_scatter(offset, dim1, dim2, src):
    """What QR's, eigh's and SVD's backward formulas write diagonals with."""
    x, s = _mat(3, 4, 5, seed=70), _mat(*src, seed=71)
    fn = lambda x, s: torch.diagonal_scatter(x, s, offset, dim1, dim2)  # noqa: E731
    assert torch.equal(_compile(fn)(x, s), fn(x, s))
