"""fx.proto bytes -> verified trnc IR, through the C library.

import -> check_lowerable (every unlowerable op at once) -> legalize (float64,
int64 policy; warnings become Python ``UserWarning``) -> verify, then
``compile_program`` -> a NeuronCore program (``trnc._trnc.Compiled``). Any
failure raises the matching ``trnc.errors`` exception. No torch import here:
the CLI uses this module too.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import errors

OK = "TRNC_OK"


def _lib():
    from . import _trnc

    return _trnc


def raise_for(status: str, diags: list[dict[str, Any]], graph: str, stage: str) -> None:
    """Raises the trnc exception for a non-OK status from ``stage``."""
    if status == OK:
        return
    if status == "TRNC_ERR_UNSUPPORTED":
        msg, counts = errors.unsupported_message(diags, graph)
        raise errors.UnsupportedOperatorError(msg, diags, graph, counts)
    if status == "TRNC_ERR_DYNAMIC_SHAPE":
        raise errors.DynamicShapeError(errors.dynamic_shape_message(diags, graph), diags, graph)
    if status == "TRNC_ERR_NOMEM":
        raise errors.TrncError(f"trnc ran out of memory during {stage} of {graph}.\n"
                               + errors.format_diagnostics(diags), diags, graph)
    raise errors.GraphImportError(
        errors.import_error_message(f"{status} in {stage}", diags, graph), diags, graph)


@dataclass
class LoweredGraph:
    """A graph that passed import, the legality scan, legalization and the verifier."""

    name: str
    kind: str
    graph: Any                      # trnc._trnc.Graph
    warnings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def text(self) -> str:
        return self.graph.text()

    def hash(self) -> str:
        return self.graph.hash().hex()

    def summary(self) -> dict[str, Any]:
        return self.graph.summary()


def lower(data: bytes, name: str = "graph", kind: str = "", *, warn: bool = True,
          stacklevel: int = 2) -> LoweredGraph:
    """Runs the C pipeline on serialized bytes; raises a ``TrncError`` subclass on
    failure. Legalization warnings are issued as ``UserWarning`` when ``warn``."""
    lib = _lib()
    t0 = time.perf_counter()
    g, status, diags = lib.import_graph(data)
    raise_for(status, diags, name, "import")
    if g is None:  # defensive: OK without a graph is a binding bug
        raise errors.GraphImportError(
            errors.import_error_message("no graph returned", diags, name), diags, name)
    status, diags = g.check_lowerable()
    raise_for(status, diags, name, "the legality scan")
    status, legal_diags = g.legalize()
    raise_for(status, legal_diags, name, "legalization")
    warns = [d for d in legal_diags if d.get("severity") == "warning"]
    if warn:
        for d in warns:
            warnings.warn(f"trnc ({name}): {d.get('message', '')}", UserWarning,
                          stacklevel=stacklevel)
    status, diags = g.verify()
    if status != OK:
        # the graph imported and legalized, so a verifier failure is ours
        raise errors.GraphImportError(
            errors.import_error_message(f"{status} in verification after legalization",
                                        diags, name), diags, name)
    return LoweredGraph(name=name, kind=kind or g.summary().get("kind", ""), graph=g,
                        warnings=warns, seconds=time.perf_counter() - t0)


def compile_program(lowered: LoweredGraph, *, target: str | None = None,
                    autocast_bf16: bool = False, no_fusion: bool = False) -> Any:
    """Lowers a verified graph to a NeuronCore program (``trnc_compile``) and
    returns the ``trnc._trnc.Compiled``.

    Errors: TRNC_ERR_UNSUPPORTED (a node has no NeuronCore lowering for its
    operands) and TRNC_ERR_LIMIT (a node exceeds what the emitter can tile)
    raise ``UnsupportedOperatorError``, formatted like the legality scan's
    (grouped by aten overload with counts, operands, file:line);
    TRNC_ERR_NOMEM a ``TrncError``; anything else (TRNC_ERR_INTERNAL: the
    emitted program failed hardware verification) a ``CompilerError``."""
    name = lowered.name
    compiled, status, diags = lowered.graph.compile(target=target, autocast_bf16=autocast_bf16,
                                                    no_fusion=no_fusion)
    if status in ("TRNC_ERR_UNSUPPORTED", "TRNC_ERR_LIMIT"):
        msg, counts = errors.unsupported_message(diags, name)
        raise errors.UnsupportedOperatorError(msg, diags, name, counts)
    if status == "TRNC_ERR_NOMEM":
        raise errors.TrncError(f"trnc ran out of memory while compiling {name}.\n"
                               + errors.format_diagnostics(diags), diags, name)
    if status != OK or compiled is None:
        raise errors.CompilerError(
            errors.compiler_error_message(status if status != OK else "no program returned",
                                          diags, name), diags, name)
    return compiled
