"""Capture helpers for tests: aot_autograd graphs without the C library."""

from __future__ import annotations

import torch
from functorch.compile import make_boxed_func
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd


def capture(model, args, *, backward: bool = True, dynamic: bool = False, decomps=None):
    """Runs model under torch.compile with a capturing aot backend.

    Returns {kind: [GraphModule, ...]} for kinds forward/backward/inference."""
    graphs: dict[str, list[torch.fx.GraphModule]] = {"forward": [], "backward": [],
                                                     "inference": []}

    def mk(kind):
        def fn(gm, example_inputs, **kw):
            graphs[kind].append(gm)
            return make_boxed_func(gm.forward)
        return fn

    be = aot_autograd(fw_compiler=mk("forward"), bw_compiler=mk("backward"),
                      inference_compiler=mk("inference"),
                      decompositions=core_aten_decompositions() if decomps is None else decomps)
    out = torch.compile(model, backend=be, dynamic=dynamic)(*args)
    if backward:
        out.sum().backward()
    return graphs


def run(model, args, *, backend="neuron", backward=True, execute=True, **kw):
    """torch.compile with trnc; runs forward (+ backward). Returns the output.

    execute=False sets the internal option {"execute": False}: graphs go
    through the whole front end (import, scan, legalize, verify, records) but
    are not compiled to NeuronCore programs and run with torch instead. Only
    tests of the front end use it, so that they do not depend on which ops the
    code emitter lowers."""
    if not execute:
        kw["options"] = {**(kw.get("options") or {}), "execute": False}
    out = torch.compile(model, backend=backend, dynamic=False, **kw)(*args)
    if backward:
        out.sum().backward()
    return out


def run_ir(model, args, **kw):
    """``run(..., execute=False)``: the front end only (see ``run``)."""
    return run(model, args, execute=False, **kw)


def compile_run(fn, *args):
    """fn compiled fresh by trnc and run under no_grad: (result, trnc.last_report())."""
    import torch

    import trnc

    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    return got, trnc.last_report()


def run_counted(fn, *args):
    """fn compiled fresh by trnc (fullgraph) and run; asserts that trnc
    compiled a forward or inference graph for it (trnc.stats()), so that a
    graph break cannot make a test compare eager with eager."""
    import torch

    import trnc

    torch._dynamo.reset()
    before = trnc.stats()
    out = torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)(*args)
    after = trnc.stats()
    assert after["inference"] + after["forward"] > before["inference"] + before["forward"]
    return out
