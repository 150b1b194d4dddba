"""Linear algebra of small matrices (passes/decomp_linalg.c: LU with partial
pivoting, triangular solves, Cholesky, and det, slogdet, inv, solve, lu_solve,
lu, lu_unpack, cholesky_solve and cholesky_inverse built from them, and matrix_exp
by scaling and squaring) compiled
with trnc against eager PyTorch's LAPACK, forward and input gradients:
batches that broadcast, vectors on the right, left=False, adjoint, the upper
forms, rectangular LU, singular matrices (exact zero pivots), 1 x 1 and the
32 x 32 limit, and the refusal past it."""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _close(got, want, rtol):
    assert got.shape == want.shape and got.dtype == want.dtype
    if not got.is_floating_point() or not want.numel():
        assert torch.equal(got, want)
        return
    scale = want.abs().max().clamp_min(1e-6)
    assert ((got - want).abs().max() / scale).item() <= rtol, (got, want)


def _check(fn, *args, grad=True, rtol=2e-6):
    torch._dynamo.reset()
    before = trnc.stats()["graphs"]
    a1 = [x.clone().requires_grad_(grad) for x in args]
    a2 = [x.clone().requires_grad_(grad) for x in args]
    got = torch.compile(fn, backend="neuron", dynamic=False)(*a1)
    want = fn(*a2)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert trnc.stats()["graphs"] > before
    for g, w in zip(got, want):
        _close(g, w, rtol)
    if grad:
        loss = [sum((o * (i + 1)).sum() for i, o in enumerate(outs) if o.is_floating_point())
                for outs in (got, want)]
        loss[0].backward()
        loss[1].backward()
        for x, y in zip(a1, a2):
            _close(x.grad, y.grad, 10 * rtol)


def _mat(*shape, seed=0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*shape, generator=g)
    return a + shift * torch.eye(shape[-1]) if shift else a


def _spd(*shape, seed=0):
    a = _mat(*shape, seed=seed)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


@pytest.mark.parametrize("n", [1, 5, 16])
def test_lu_factor_det_slogdet_inv(n):
    a = _mat(3, n, n, seed=n)
    _check(lambda a: torch.linalg.lu_factor_ex(a), a)
    _check(torch.linalg.det, a)
    _check(lambda a: torch.linalg.slogdet(a), a)
    _check(lambda a: torch.linalg.inv_ex(a)[0], a + n * torch.eye(n))


def test_solve_broadcasts_vectors_and_right_sides():
    a = _mat(3, 5, 5, seed=1, shift=2.0)
    _check(lambda a, b: torch.linalg.solve_ex(a, b)[0], a, _mat(2, 1, 5, 4, seed=2))
    _check(lambda a, b: torch.linalg.solve_ex(a, b)[0], a, _mat(3, 5, seed=3))
    _check(lambda a, b: torch.linalg.solve_ex(a, b, left=False)[0], a, _mat(3, 2, 5, seed=4))


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve(left, adjoint):
    a, b = _mat(2, 6, 6, seed=5, shift=1.0), _mat(2, 6, 3, seed=6)
    b = b if left else b.mT.contiguous()
    _check(lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor_ex(a)[:2], b, left=left,
                                              adjoint=adjoint), a, b)


@pytest.mark.parametrize("upper,left,unit", [(True, True, False), (False, False, True),
                                             (False, True, False), (True, False, False)])
def test_solve_triangular(upper, left, unit):
    a, b = _mat(3, 7, 7, seed=7, shift=4.0), _mat(3, 7, 2, seed=8)
    b = b if left else b.mT.contiguous()
    _check(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left,
                                                      unitriangular=unit), a, b)


def test_triangular_solve_returns_the_broadcast_coefficient():
    b, a = _mat(2, 1, 5, 3, seed=9), _mat(4, 5, 5, seed=10, shift=4.0)
    _check(lambda b, a: torch.triangular_solve(b, a.triu(), transpose=True), b, a)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_family(upper):
    p = _spd(3, 6, 6, seed=11)
    _check(lambda p: torch.linalg.cholesky_ex(p, upper=upper), p)
    factor = torch.linalg.cholesky(p, upper=upper)
    _check(lambda b, f: torch.cholesky_solve(b, f, upper=upper), _mat(3, 6, 2, seed=12), factor)
    _check(lambda f: torch.cholesky_inverse(f, upper=upper), factor)


def test_cholesky_reads_one_triangle_and_reports_info():
    p = _spd(2, 4, 4, seed=13)
    p[:, 0, 3] = 100.0  # the upper triangle is not read by upper=False
    _check(lambda p: torch.linalg.cholesky_ex(p), p, grad=False)
    bad = p.clone()
    bad[1, 2, 2] = -50.0  # not positive definite at column 2
    got = torch.compile(lambda p: torch.linalg.cholesky_ex(p)[1], backend="neuron")(bad)
    assert got.tolist() == torch.linalg.cholesky_ex(bad)[1].tolist() == [0, 3]


@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6), (5, 5)])
def test_lu_and_unpack(shape):
    a = _mat(*shape, seed=14)
    _check(lambda a: torch.linalg.lu(a), a)
    _check(lambda a: torch.lu_unpack(*torch.linalg.lu_factor_ex(a)[:2]), a)


def test_singular_matrices_match_lapack():
    a = _mat(3, 5, 5, seed=15)
    # rank-deficient with exact elimination: the first column's entries are
    # powers of two, so the second (twice the first) becomes exactly zero
    # (a pivot of rounding noise would make every later step differ)
    a[0, :, 0] = torch.tensor([1.0, -2.0, 0.5, 4.0, -0.25])
    a[0, :, 1] = 2 * a[0, :, 0]
    a[1] = 0.0  # zero pivots from the first step
    _check(lambda a: torch.linalg.lu_factor_ex(a), a, grad=False)
    _check(torch.linalg.det, a, grad=False, rtol=1e-5)
    _check(lambda a: torch.linalg.inv_ex(a)[1], a, grad=False)


def test_the_32_limit_and_past_it():
    a = _mat(32, 32, seed=16, shift=8.0)
    _check(lambda a: torch.linalg.inv_ex(a)[0], a, rtol=1e-5)
    with pytest.raises(Exception) as info:
        torch.compile(lambda a: torch.linalg.det(a), backend="neuron")(_mat(33, 33, seed=17))
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError)
    assert "larger than 32 x 32" in str(err)


@pytest.mark.parametrize("name", ["inv", "solve", "cholesky", "lu_factor"])
def test_checked_forms_match_eager(name):
    """The forms that raise on singular input (aten._linalg_check_errors in a
    with_effects node, taken out of the graph by trnc.effects)."""
    a, b = _mat(3, 4, 4, seed=18, shift=2.0), _mat(3, 4, 2, seed=19)
    fns = {"inv": (torch.linalg.inv, (a,)), "solve": (torch.linalg.solve, (a, b)),
           "cholesky": (torch.linalg.cholesky, (_spd(3, 4, 4, seed=20),)),
           "lu_factor": (lambda a: torch.linalg.lu_factor(a)[0], (a,))}
    fn, args = fns[name]
    _check(fn, *args)


@pytest.mark.parametrize("name", ["inv", "cholesky"])
def test_checked_forms_raise_eagers_error(name):
    fn = {"inv": torch.linalg.inv, "cholesky": torch.linalg.cholesky}[name]
    a = _spd(3, 4, 4, seed=21)
    a[1] = 0.0
    torch._dynamo.reset()
    with pytest.raises(torch.linalg.LinAlgError) as got:
        torch.compile(fn, backend="neuron", dynamic=False)(a)
    with pytest.raises(torch.linalg.LinAlgError) as want:
        fn(a)
    assert str(got.value) == str(want.value)
    assert "Batch element 1" in str(got.value)


def test_empty_matrices():
    """0 x 0 matrices (det 1, slogdet (1, 0)) and empty batches."""
    _check(torch.linalg.det, torch.zeros(3, 0, 0), grad=False)
    _check(lambda a: torch.linalg.slogdet(a), torch.zeros(2, 0, 0), grad=False)
    _check(lambda a, b: torch.linalg.solve_ex(a, b)[0], torch.zeros(0, 3, 3), torch.zeros(0, 3, 2),
           grad=False)
    _check(lambda b, f: torch.cholesky_solve(b, f), torch.zeros(2, 0, 3), torch.zeros(2, 0, 0),
           grad=False)


# ---- matrix_exp: scaling and squaring (decomp_matrix_exp) ----------------------- #

@pytest.mark.parametrize("shape,scale,rtol", [((1, 1), 50.0, 2e-5), ((5, 5), 3.0, 5e-6),
                                              ((3, 2, 4, 4), 1.0, 5e-6), ((64, 64), 0.2, 1e-5),
                                              ((2, 7, 7), 1e-3, 5e-6)])
def test_matrix_exp(shape, scale, rtol):
    """Against float64: s squarings magnify float32's rounding by up to 2^s
    (exp(50) takes 7), for eager's float32 result as for trnc's (64 x 64:
    eager 1e-6, trnc 6e-6 of the largest entry)."""
    a = _mat(*shape, seed=len(shape)) * scale
    torch._dynamo.reset()
    x = a.clone().requires_grad_()
    got = torch.compile(torch.linalg.matrix_exp, backend="neuron", dynamic=False)(x)
    xd = a.double().requires_grad_()
    want = torch.linalg.matrix_exp(xd)
    _close(got.double(), want.detach(), rtol)
    cot = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    (got * cot).sum().backward()
    (want * cot.double()).sum().backward()
    assert trnc.stats()["backward"] >= 1
    _close(x.grad.double(), xd.grad, 10 * rtol)


def test_matrix_exp_exact_cases():
    """Zero (no squaring: I), a nilpotent matrix of huge norm (every squaring
    exact: I + N), a diagonal one and an empty batch."""
    _check(torch.linalg.matrix_exp, torch.zeros(3, 3), grad=False)
    _check(torch.linalg.matrix_exp, torch.tensor([[0.0, 1e10], [0.0, 0.0]]), grad=False)
    _check(torch.linalg.matrix_exp, torch.diag(torch.tensor([-3.0, 0.5, 2.0])), grad=False, rtol=5e-6)
    _check(torch.linalg.matrix_exp, torch.zeros(0, 4, 4), grad=False)


def test_matrix_exp_past_its_limit():
    with pytest.raises(Exception) as info:
        torch.compile(torch.linalg.matrix_exp, backend="neuron")(_mat(129, 129, seed=3))
    err = getattr(info.value, "inner_exception", info.value)
    assert isinstance(err, trnc.UnsupportedOperatorError)
    assert "larger than 128 x 128" in str(err)
