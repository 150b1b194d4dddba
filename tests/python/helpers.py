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


def run(model, args, *, backend="neuron", backward=True, **kw):
    """torch.compile with trnc; runs forward (+ backward). Returns the output."""
    out = torch.compile(model, backend=backend, dynamic=False, **kw)(*args)
    if backward:
        out.sum().backward()
    return out
