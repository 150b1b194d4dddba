"""Effectful error checks in captured graphs.

``torch.linalg.inv``, ``solve``, ``cholesky``, ``lu_factor`` and their kin
check LAPACK's ``info`` result with ``aten._linalg_check_errors``, which
aot_autograd threads through an effect token:
``with_effects(token, aten._linalg_check_errors, info, api_name, is_matrix=...)``.
A NeuronCore program cannot raise, so trnc takes each such check out of the
graph before it compiles: the check's token result becomes the token it
consumed, and ``info`` becomes one more graph output. After every call the
compiled callable runs the very same ``_linalg_check_errors`` on those
outputs (raising eager's ``torch.linalg.LinAlgError`` with eager's message)
and returns the graph's own outputs only.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

Check = tuple[str, bool]  # (api_name, is_matrix) of one _linalg_check_errors


def split_checks(gm: torch.fx.GraphModule) -> tuple[Check, ...]:
    """Rewrites ``gm`` in place as above; returns ``("tokens", positions of
    the token placeholders)`` followed by the (api_name, is_matrix) of each
    ``info`` output it appended, in output order (empty, and ``gm``
    untouched, when the graph has no such check): what ``checked`` takes."""
    hop = getattr(torch.ops.higher_order, "with_effects", None)
    target = torch.ops.aten._linalg_check_errors.default
    nodes = [n for n in gm.graph.nodes
             if n.op == "call_function" and n.target is hop and len(n.args) >= 3
             and n.args[1] is target]
    if not nodes:
        return ()
    out = next(n for n in gm.graph.nodes if n.op == "output")
    # aot_autograd passes None for the token inputs at run time (the program
    # was compiled for their empty example tensors): their positions lead
    ph = [p for p in gm.graph.nodes if p.op == "placeholder"]
    used = {n.args[0] for n in nodes}
    tokens = tuple(i for i, p in enumerate(ph) if p in used)
    extra, checks = [], []
    for n in nodes:
        token, info = n.args[0], n.args[2]
        api = n.args[3] if len(n.args) > 3 else ""
        is_matrix = bool(n.kwargs.get("is_matrix", n.args[4] if len(n.args) > 4 else True))
        for user in list(n.users):  # getitem(with_effects, 0): the new token
            user.replace_all_uses_with(token)
            gm.graph.erase_node(user)
        gm.graph.erase_node(n)
        extra.append(info)
        checks.append((str(api), is_matrix))
    vals = out.args[0]
    vals = tuple(vals) if isinstance(vals, (tuple, list)) else (vals,)
    out.args = (vals + tuple(extra),)
    out.meta.pop("desc", None)  # the outputs are no longer aot_autograd's own
    gm.graph.lint()
    gm.recompile()
    return (("tokens", tokens),) + tuple(checks)  # type: ignore[return-value]


def checked(fn: Callable[..., Any], checks: Sequence[Check]) -> Callable[..., Any]:
    """The boxed callable ``fn`` of a graph rewritten by ``split_checks``:
    runs it, checks the trailing ``info`` outputs as eager does and returns
    the others (``fn`` itself when there is nothing to check)."""
    if not checks:
        return fn
    tokens, checks = checks[0][1], checks[1:]
    k = len(checks)
    check = torch.ops.aten._linalg_check_errors.default
    empty = torch.empty(0)

    def run(args: list[Any]) -> Any:
        for i in tokens:
            if args[i] is None:
                args[i] = empty
        outs = fn(args)
        for info, (api, is_matrix) in zip(outs[len(outs) - k:], checks):
            check(info, api, is_matrix=is_matrix)
        return outs[:len(outs) - k]

    run._boxed_call = True  # type: ignore[attr-defined]
    return run
