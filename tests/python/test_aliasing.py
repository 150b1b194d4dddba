"""Inputs that alias each other differently from the compile (aliasing.py),
and as_strided_scatter, the op that aot_autograd's synthetic bases lower to.

Dynamo does not guard on aliasing: a program compiled for separate tensors
would run on overlapping views of one base and read a value before the write
that eager makes first. trnc recompiles for each new aliasing pattern of a
graph that mutates an input; a graph that mutates nothing is not wrapped.
"""

from __future__ import annotations

import pytest
import torch

import trnc

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


def _mul_add(x, y):
    x.mul_(2)
    return x + y


def test_overlapping_views_after_separate_inputs():
    cf = torch.compile(_mul_add, backend="neuron", dynamic=False)
    a, b = torch.arange(4.0), torch.arange(4.0) + 10
    torch.testing.assert_close(cf(a.clone(), b.clone()), _mul_add(a.clone(), b.clone()))
    assert trnc.stats()["compiles"] + trnc.stats()["hits"] == 1

    base, ref = torch.arange(8.0), torch.arange(8.0)
    got = cf(base[:4], base[2:6])
    want = _mul_add(ref[:4], ref[2:6])
    torch.testing.assert_close(want, torch.tensor([4.0, 8.0, 8.0, 11.0]))
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(base, ref, rtol=0, atol=0)     # the write reached the base
    n = trnc.stats()["compiles"] + trnc.stats()["hits"]
    assert n == 2, "the aliased call must run its own program"

    # both patterns are kept: neither call compiles again
    base, ref = torch.arange(8.0), torch.arange(8.0)
    torch.testing.assert_close(cf(base[:4], base[2:6]), _mul_add(ref[:4], ref[2:6]), rtol=0, atol=0)
    torch.testing.assert_close(cf(a.clone(), b.clone()), _mul_add(a.clone(), b.clone()))
    assert trnc.stats()["compiles"] + trnc.stats()["hits"] == n


def test_same_tensor_twice():
    cf = torch.compile(_mul_add, backend="neuron", dynamic=False)
    cf(torch.ones(4), torch.ones(4))
    x, y = torch.arange(4.0), torch.arange(4.0)
    torch.testing.assert_close(cf(x, x), _mul_add(y, y), rtol=0, atol=0)
    torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_graph_without_mutation_is_not_wrapped():
    from trnc import aliasing

    assert aliasing.guard(_mul_add, None, [], frozenset()) is _mul_add
    cf = torch.compile(lambda x, y: x * 2 + y, backend="neuron", dynamic=False)
    cf(torch.ones(4), torch.ones(4))
    base = torch.arange(8.0)
    torch.testing.assert_close(cf(base[:4], base[2:6]), base[:4] * 2 + base[2:6])
    assert trnc.stats()["compiles"] + trnc.stats()["hits"] == 1


@pytest.mark.parametrize("size, stride, offset", [((2, 2), (1, 2), 1), ((3,), (4,), 0), ((2, 3), (6, 1), 3),
                                                   ((0, 3), (1, 1), 0)])
def test_as_strided_scatter(size, stride, offset):
    x = torch.randn(3, 4)
    src = torch.randn(*size)
    f = lambda x, s: torch.as_strided_scatter(x, s, size, stride, offset)  # noqa: E731
    got = torch.compile(f, backend="neuron", dynamic=False)(x, src)
    assert trnc.last_report()["kernels"] >= 1
    torch.testing.assert_close(got, f(x, src), rtol=0, atol=0)


def test_as_strided_scatter_refusal_names_the_limit():
    x = torch.randn(4, 3).t()                    # not contiguous
    f = lambda x, s: torch.as_strided_scatter(x, s, (2,), (1,), 0)  # noqa: E731
    with pytest.raises(Exception) as e:
        torch.compile(f, backend="neuron", dynamic=False)(x, torch.randn(2))
    assert "self must be contiguous" in str(e.value)


def _views(n, a, b):
    t = torch.arange(float(n))
    return t, t[a[0]:a[1]], t[b[0]:b[1]]


@pytest.mark.parametrize("order", [
    [((0, 6), (6, 12), 12), ((0, 6), (3, 9), 12)],                      # separate views, then overlapping
    [((0, 6), (2, 8), 12), ((0, 6), (6, 12), 12), ((0, 6), (4, 10), 12)],  # overlap, then other offsets
    [((0, 6), (2, 8), 8), ((0, 6), (6, 12), 12)],                       # a base of another size
])
def test_views_of_one_base_at_other_offsets(order):
    """aot_autograd bakes the views' offsets and the base's size into the
    program it compiles for aliased inputs: each change is a new program."""
    cf = torch.compile(_mul_add, backend="neuron", dynamic=False)
    for a, b, n in order:
        base, x, y = _views(n, a, b)
        ref, rx, ry = _views(n, a, b)
        torch.testing.assert_close(cf(x, y), _mul_add(rx, ry), rtol=0, atol=0)
        torch.testing.assert_close(base, ref, rtol=0, atol=0)


def test_too_many_aliasing_patterns_is_a_clear_error():
    from trnc import aliasing

    cf = torch.compile(_mul_add, backend="neuron", dynamic=False)
    with pytest.raises(trnc.TrncError, match="aliased each other in more than"):
        for off in range(aliasing.MAX_PATTERNS + 2):
            t = torch.arange(40.0)
            cf(t[0:6], t[off + 1:off + 7])


def test_inference_graph_mutations_from_descriptors():
    """Inference graphs carry no fw_metadata in the tracing context: the inputs
    they write to come from aot_autograd's output descriptors, so one that
    writes to none is not wrapped (no per-call aliasing check) and one that
    does still recompiles for overlapping views under no_grad."""
    from functorch.compile import make_boxed_func
    from trnc import aliasing
    from trnc.backend import make_aot_backend

    seen = []

    def gc(kind, gm, ex, **kw):
        seen.append((kind, aliasing.mutated_in_graph(gm)))
        return make_boxed_func(gm.forward)

    with torch.no_grad():
        torch.compile(_mul_add, backend=make_aot_backend(gc), dynamic=False)(
            torch.arange(4.0), torch.ones(4))
        torch._dynamo.reset()
        torch.compile(lambda x, y: x * y, backend=make_aot_backend(gc), dynamic=False)(
            torch.arange(4.0), torch.ones(4))
    assert seen == [("inference", frozenset({0})), ("inference", frozenset())]
    with torch.no_grad():
        torch._dynamo.reset()
        cf = torch.compile(_mul_add, backend="neuron", dynamic=False)
        a, b = torch.arange(4.0), torch.arange(4.0) + 10
        torch.testing.assert_close(cf(a.clone(), b.clone()), _mul_add(a.clone(), b.clone()))
        base, ref = torch.arange(8.0), torch.arange(8.0)
        torch.testing.assert_close(cf(base[:4], base[2:6]), _mul_add(ref[:4], ref[2:6]))
        torch.testing.assert_close(base, ref)
