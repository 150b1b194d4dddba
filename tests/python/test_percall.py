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


# --------------------------------------------------------------------------- #
# training: trnc's autograd Function (python/trnc/training.py)

_FAST = "TrncFunctionBackward"  # the grad_fn of an output of the fast path


def _grads(f, *args, seed=None):
    """(outputs, grads of the inputs that require grad) of sum(out * seed_k)."""
    args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    outs = f(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs) if o.requires_grad)
    loss.backward()
    return outs, [a.grad for a in args if a.requires_grad]


def _check_training(f, *args, fast=True):
    cf = _compiled(f)
    got, got_g = _grads(cf, *args)
    want, want_g = _grads(f, *args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.requires_grad == w.requires_grad
    for g, w in zip(got_g, want_g):
        torch.testing.assert_close(g, w)
    names = {type(o.grad_fn).__name__ for o in got if o.grad_fn is not None}
    assert (_FAST in names) == fast, names
    return cf


def test_training_fast_path_values_and_grads():
    import trnc

    def f(x, w):
        return (x * w).tanh(), x + w

    x, w = torch.randn(4, 129), torch.randn(4, 129, requires_grad=True)
    x.requires_grad_(True)
    trnc.reset()
    cf = _check_training(f, x, w)
    assert trnc.stats()["forward"] == 1 and trnc.stats()["backward"] == 1
    # the call is dynamo's guards, then trnc's Function: no aot_autograd wrapper runs
    xa, wa = x.detach().requires_grad_(), w.detach().requires_grad_()
    (a, b), names = _called(cf, xa, wa)
    assert not any("runtime_wrapper" in n or "CompiledFunction" in n for n in names), names
    # None tangent (b unused: zeros), stride-0 tangent (sum's expanded ones)
    a.sum().backward()
    torch.testing.assert_close(xa.grad, w * (1 - (x * w).tanh() ** 2))


def test_training_non_differentiable_outputs_and_inputs_without_grad():
    def f(x, w):
        return x * w, (x * 2).detach(), w.argmax()

    x, w = torch.randn(8), torch.randn(8, requires_grad=True)  # x does not require grad
    cf = _check_training(f, x, w)
    a, b, i = cf(x, w)
    assert a.requires_grad and not b.requires_grad and not i.requires_grad
    assert i.dtype == torch.int64 and i == w.argmax()


def test_training_retain_graph_double_backward_and_no_grad():
    def f(x, w):
        return (x * w).sum()

    x, w = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)
    cf = _compiled(f)
    out = cf(x, w)
    assert type(out.grad_fn).__name__ == _FAST
    out.backward(retain_graph=True)
    out.backward()  # retained: the grads accumulate, as in eager
    torch.testing.assert_close(x.grad, 2 * w)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    out = cf(x, w)
    (gx,) = torch.autograd.grad(out, x, create_graph=True)
    torch.testing.assert_close(gx, w)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        gx.sum().backward()
    with torch.no_grad():  # the inference graph of the same function
        r = cf(x, w)
    assert not r.requires_grad
    torch.testing.assert_close(r, (x * w).sum())


def test_training_saved_input_modified_in_place_raises():
    def f(x, w):
        return (x * w).sum()

    x, w = torch.randn(8), torch.randn(8, requires_grad=True)
    cf = _compiled(f)
    out = cf(x, w)
    assert type(out.grad_fn).__name__ == _FAST
    x.add_(1)  # x is saved for w's gradient: autograd's version check, as in eager
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.parametrize("case", ["input mutation", "output view of input",
                                  "output view of output"])
def test_training_graphs_that_keep_torch_wrappers(case):
    def mutate(x, w, buf):
        buf.add_(1)
        return x * w + buf

    def view(x, w, buf):
        return w.view(2, 4), x * w + buf

    def views(x, w, buf):
        a = x * w + buf
        return a, a.view(2, 4)

    f = {"input mutation": mutate, "output view of input": view,
         "output view of output": views}[case]
    x, w = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)
    buf = torch.randn(8)
    cf = _compiled(f)
    be = buf.clone()
    got = cf(x, w, buf)
    want = f(x, w, be)
    torch.testing.assert_close(buf, be)
    assert not any(type(o.grad_fn).__name__ == _FAST for o in got)
    gg = torch.autograd.grad([o.sum() for o in got], [x, w])
    gw = torch.autograd.grad([o.sum() for o in want], [x, w])
    for a, b in zip(gg, gw):
        torch.testing.assert_close(a, b)


def test_training_fast_path_from_the_aot_autograd_cache(monkeypatch):
    import trnc

    def f(x, w):
        return (x * w).exp()

    x, w = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)
    _check_training(f, x, w)
    trnc.reset()
    cf = _check_training(f, x, w)  # dynamo reset: the pair loads from the cache
    assert trnc.stats()["hits"] == 2 and trnc.stats()["compiles"] == 0
    monkeypatch.setenv("TRNC_TRAINING_WRAPPERS", "torch")  # torch's wrappers, same values
    _check_training(f, x, w, fast=False)
    del cf
