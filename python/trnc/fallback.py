"""Opt-in partial CPU fallback: ``options={"fallback": "cpu"}`` or ``TRNC_FALLBACK=cpu``.

By default a graph with an op trnc cannot lower fails to compile and the
``UnsupportedOperatorError`` names every such op. With the fallback on, the
ops trnc refused (the nodes its legality scan or its code emitter named, no
other list) run eagerly on the CPU and everything else still runs as trnc
programs: torch.fx's ``CapabilityBasedPartitioner`` groups the accepted nodes
into as few subgraphs as the data flow allows, each subgraph is compiled like
any graph (cache, records, ``trnc.stats()``), and the rest of the graph runs
with torch between them. Forward and backward graphs are partitioned
separately (aot_autograd hands over each). A subgraph that trnc refuses in
turn (an op whose operands differ once cut out, an input dtype it does not
lower) moves the refused nodes to the CPU too and is partitioned again.

Each partitioned graph issues one ``UserWarning`` naming every fallback op
and its ``file:line``; ``fallback_ops()`` lists them for the whole process.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Callable, Sequence

import torch
import torch.fx

from . import errors, pipeline

__all__ = ["MODES", "mode_from", "fallback_ops", "reset", "compile_partitioned", "copy_graph"]

MODES = ("cpu",)
ENV = "TRNC_FALLBACK"

_lock = threading.Lock()
_ops: list[dict[str, Any]] = []


def mode_from(option: str | None) -> str | None:
    """The fallback mode from the option (wins) or ``TRNC_FALLBACK``; None when
    off (unset, empty, ``0``/``off``/``none``). Raises ``InvalidOptionError``
    for any other value."""
    if option is not None:
        value, source = option, "option 'fallback'"
    else:
        value, source = os.environ.get(ENV, ""), ENV
    v = value.strip().lower()
    if v in ("", "0", "off", "none", "no", "false"):
        return None
    if v not in MODES:
        raise errors.InvalidOptionError(
            f"trnc backend: {source}={value!r} is not a fallback mode; use 'cpu' (the ops "
            "trnc cannot lower run eagerly on the CPU) or leave it unset (the default: an "
            "UnsupportedOperatorError names every such op)")
    return v


def fallback_ops() -> list[dict[str, Any]]:
    """Every op that ran on the CPU under the fallback in this process, in
    the order found: dicts with ``op`` (aten overload, e.g.
    ``aten.cumsum.default``), ``node`` (FX node name), ``file``, ``line``,
    ``graph`` (the trnc graph name) and ``kind`` (forward/backward/inference).
    A copy; ``trnc.reset()`` clears it."""
    with _lock:
        return [dict(d) for d in _ops]


def reset() -> None:
    with _lock:
        _ops.clear()


class _Refused(torch.fx.passes.operator_support.OperatorSupportBase):
    """Supported = not named by trnc's own refusal."""

    def __init__(self, refused: set[str]) -> None:
        self.refused = refused

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and node.name not in self.refused


def copy_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A fresh GraphModule over a copy of gm's graph (node names and meta
    kept: the partitioner rewrites the graph it is given)."""
    g = torch.fx.Graph()
    out = g.graph_copy(gm.graph, {})
    g.output(out)
    return torch.fx.GraphModule(gm, g)


def _refused_nodes(err: errors.UnsupportedOperatorError, gm: torch.fx.GraphModule
                   ) -> dict[str, dict[str, Any]]:
    """FX node name -> the diagnostic refusing it, for the call_function
    nodes of gm that trnc named. A refused graph input (a dtype trnc does
    not lower) refuses the nodes that read it."""
    nodes = {n.name: n for n in gm.graph.nodes}
    out: dict[str, dict[str, Any]] = {}
    for d in err.diagnostics:
        if d.get("severity", "error") != "error":
            continue
        n = nodes.get(d.get("node") or "")
        if n is None:
            continue
        if n.op == "call_function":
            out.setdefault(n.name, d)
        elif n.op == "placeholder":
            for u in n.users:
                if u.op == "call_function":
                    out.setdefault(u.name, dict(d, target=str(u.target)))
    return out


def _example(v: Any) -> Any:
    return v.meta.get("val") if isinstance(v, torch.fx.Node) else v


class _Program(torch.nn.Module):
    """A compiled subgraph as the callable the partitioned graph calls."""

    def __init__(self, run: Callable[[list[Any]], list[Any]], single: bool) -> None:
        super().__init__()
        self.run = run
        self.single = single

    def forward(self, *args: Any) -> Any:
        out = self.run(list(args))
        return out[0] if self.single else tuple(out)


GraphCompiler = Callable[[torch.fx.GraphModule, Sequence[Any], str], Callable[..., Any]]


def compile_partitioned(gm: torch.fx.GraphModule, err: errors.UnsupportedOperatorError,
                        compile_part: GraphCompiler, name: str, kind: str,
                        discard: Callable[[], None] | None = None) -> Callable[..., Any]:
    """The boxed callable of graph ``gm`` with the nodes ``err`` (and any
    refusal of a subgraph) names run by torch and every other node in trnc
    programs. ``compile_part(sub_gm, example_inputs, part_name)`` compiles
    one subgraph to a boxed callable (raising ``UnsupportedOperatorError`` if
    trnc refuses it). A refused subgraph partitions the graph again: the
    subgraphs compiled for the partition given up are then dropped,
    ``discard()`` (their records and ``trnc.stats()`` counts) first.
    Re-raises ``err`` if it names no node of gm."""
    from functorch.compile import make_boxed_func
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    refused = _refused_nodes(err, gm)
    if not refused:
        raise err
    while True:
        part_gm = copy_graph(gm)
        partitioner = CapabilityBasedPartitioner(part_gm, _Refused(set(refused)),
                                                 allows_single_node_partition=True)
        fused = partitioner.fuse_partitions(partitioner.propose_partitions())
        more: dict[str, dict[str, Any]] = {}
        for node in list(fused.graph.nodes):
            if node.op != "call_module":
                continue
            sub = fused.get_submodule(node.target)
            examples = [_example(a) for a in node.args]
            try:
                run = compile_part(sub, examples, f"{name} part {node.target.split('_')[-1]}")
            except errors.UnsupportedOperatorError as sub_err:
                new = {k: v for k, v in _refused_nodes(sub_err, sub).items() if k not in refused}
                if not new:
                    raise
                more.update(new)
                continue
            out = next(n for n in sub.graph.nodes if n.op == "output")
            setattr(fused, node.target,
                    _Program(run, single=not isinstance(out.args[0], (tuple, list))))
        if not more:
            break
        if discard is not None:
            discard()
        refused.update(more)
    fused.recompile()
    _report(gm, refused, name, kind)
    return make_boxed_func(fused.forward)


def _where(d: dict[str, Any]) -> str:
    if d.get("file"):
        return f"{d['file']}:{d.get('line') or 0}"
    return "<unknown location>"


def _report(gm: torch.fx.GraphModule, refused: dict[str, dict[str, Any]], name: str,
            kind: str) -> None:
    """One UserWarning for the graph and the records of ``fallback_ops()``,
    in graph order."""
    order = [n for n in gm.graph.nodes if n.name in refused]
    recs = [{"op": str(n.target), "node": n.name, "file": refused[n.name].get("file") or "",
             "line": int(refused[n.name].get("line") or 0), "graph": name, "kind": kind}
            for n in order]
    with _lock:
        _ops.extend(recs)
    lines = [f"  {r['op']} at {_where(refused[r['node']])}" for r in recs]
    warnings.warn(f"trnc ({name}): {len(recs)} op{'s' if len(recs) != 1 else ''} run "
                  "eagerly on the CPU (fallback='cpu'); the rest runs as NeuronCore "
                  "programs:\n" + "\n".join(lines), UserWarning,
                  stacklevel=pipeline.user_stacklevel())
