"""The per-call path (backend._boxed_runner, aliasing.plain_inference).

An inference graph whose aot_autograd runtime wrappers would only pass its
inputs and outputs through is called by dynamo directly: its guards, then
trnc's input check, the output allocation and the program. Every graph the
wrappers do something for (outputs that alias inputs or each other, input
mutations) keeps them, and its results match eager's, views included.
"""

from __future__ import annotations

import sys

import pytest
import torch

from conftest import has_extension

pytestmark = pytest.mark.skipif(not has_extension(), reason="needs the compiled extension")


_DIRECT = "_boxed_runner.<locals>.direct"  # the runner dynamo calls directly


def _called(fn, *args):
    """(result, names of the Python functions that ran during fn(*args))."""
    names: set[str] = set()

    def prof(frame, event, arg):
        if event == "call":
            names.add(frame.f_code.co_qualname)

    sys.setprofile(prof)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
    return out, names


def _compiled(f):
    torch._dynamo.reset()
    return torch.compile(f, backend="neuron", dynamic=False)


@pytest.mark.parametrize("grad", [False, True])
def test_plain_inference_graph_is_called_directly(grad):
    import trnc

    def f(x, y):
        return x + y, x * y

    cf = _compiled(f)
    x, y = torch.randn(8), torch.randn(8)
    trnc.reset()
    with torch.set_grad_enabled(grad):
        cf(x, y)
        (s, p), names = _called(cf, x, y)
    assert trnc.stats()["inference"] == 1
    torch.testing.assert_close(s, x + y)
    torch.testing.assert_close(p, x * y)
    assert _DIRECT in names
    # aot_autograd's wrappers are not on the path
    assert not any(n.endswith("runtime_wrapper") for n in names), names
    assert not s.requires_grad and s.data_ptr() != x.data_ptr()
    # a new pair of tensors of the same layout runs the same program
    x2, y2 = torch.arange(8.0), torch.ones(8)
    torch.testing.assert_close(cf(x2, y2)[0], x2 + y2)


def test_output_view_of_input_keeps_the_wrappers():
    def f(x):
        return x.view(2, 4), x + 1

    cf = _compiled(f)
    x = torch.randn(8)
    cf(x)
    (v, a), names = _called(cf, x)
    assert _DIRECT not in names
    torch.testing.assert_close(a, x + 1)
    assert v.shape == (2, 4) and v.data_ptr() == x.data_ptr()  # a view, as in eager
    v[0, 0] = 100.0
    assert x[0] == 100.0


def test_output_that_is_an_input_keeps_the_wrappers():
    def f(x, y):
        return x, x + y

    cf = _compiled(f)
    x, y = torch.randn(8), torch.randn(8)
    cf(x, y)
    (same, s), names = _called(cf, x, y)
    assert same is x or same.data_ptr() == x.data_ptr()
    torch.testing.assert_close(s, x + y)


def test_input_mutation_keeps_the_wrappers():
    def f(x, y):
        x.add_(1)
        return x * y

    cf = _compiled(f)
    x, y = torch.randn(8), torch.randn(8)
    xe = x.clone()
    cf(x.clone(), y)
    (out,), names = [cf(x, y)], set()
    expect = (xe + 1) * y
    xe.add_(1)
    torch.testing.assert_close(out, expect)
    torch.testing.assert_close(x, xe)
    _, names = _called(cf, x, y)
    assert _DIRECT not in names


def test_plain_inference_detection():
    from torch._functorch.aot_autograd import aot_function
    from functorch.compile import make_boxed_func

    from trnc import aliasing

    seen = []

    def grab(gm, example_inputs):
        seen.append(aliasing.plain_inference(gm))
        return make_boxed_func(gm.forward)

    cases = [
        (lambda x: (x + 1, x.exp()), True),
        (lambda x: (x + 1).view(2, 4), False),       # a view of an intermediate
        (lambda x: (x.t(),), False),                 # a view of an input
        (lambda x: (x, x + 1), False),               # an input as an output
        (lambda x: (x.add_(1),), False),             # an input mutation
    ]
    for fn, want in cases:
        seen.clear()
        with torch.no_grad():
            aot_function(fn, fw_compiler=grab, inference_compiler=grab)(torch.randn(2, 4))
        assert seen == [want], fn
