"""trnc's own decompositions of aten ops that torch's table leaves whole
(no torch._decomp / torch._refs entry) into ops the C table lowers.

Each is the op's eager semantics written with torch ops, traced by
aot_autograd like torch's own decompositions (backend.decompositions() adds
``TABLE``); a mode it does not cover raises UnsupportedOperatorError naming
the mode rather than computing something else. Shapes are static here, so
Python-level loops and checks over sizes are trace-time only.
"""

from __future__ import annotations

import string
from typing import Any, Callable

import torch

from . import errors

aten = torch.ops.aten

TABLE: dict[Any, Callable[..., Any]] = {}


def _register(*ops):
    def wrap(fn):
        for op in ops:
            TABLE[op] = fn
        return fn
    return wrap


def _refuse(target: str, message: str):
    raise errors.UnsupportedOperatorError(
        f"{target}: {message}",
        [{"severity": "error", "target": target, "message": message}])


# --------------------------------------------------------------------------- #
# _trilinear (nn.functional.bilinear)


@_register(aten._trilinear.default)
def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """aten._trilinear: i1, i2, i3 unsqueezed at their expand dims to one
    rank D, multiplied (broadcast) and summed over sumdim, the summed dims
    dropped; as an einsum (bmm's), so nothing of the full product is formed.
    unroll_dim only orders eager's loop. A kept dim that no input has is
    size 0, as eager makes it."""
    total = i1.dim() + len(expand1)
    if total > len(string.ascii_letters):
        _refuse("aten._trilinear.default", f"more than {len(string.ascii_letters)} dims")
    letters = string.ascii_letters[:total]
    exp = [set(d % total for d in e) for e in (expand1, expand2, expand3)]
    summed = set(d % total for d in sumdim)
    subs = ["".join(letters[d] for d in range(total) if d not in e) for e in exp]
    everywhere = [d for d in range(total) if all(d in e for e in exp)]
    out = "".join(letters[d] for d in range(total) if d not in summed and d not in everywhere)
    res = torch.einsum(f"{subs[0]},{subs[1]},{subs[2]}->{out}", i1, i2, i3)
    kept = [d for d in range(total) if d not in summed]
    if any(d in everywhere for d in kept):
        # eager gives a kept dim that no input has size 0 (and a summed one
        # drops out like any summed dim)
        shape = [0 if d in everywhere else res.shape[out.index(letters[d])] for d in kept]
        return res.new_zeros(shape)
    return res
