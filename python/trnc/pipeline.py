"""fx.proto bytes -> verified trnc IR, through the C library.

``lower`` runs the C pipeline (``trnc_pipeline_run``, which holds the order:
import -> legality scan (every unlowerable op at once) -> legalize (float64,
int64 policy; warnings become Python ``UserWarning``) -> verify) and stops
there, so the backend can key the cache on the IR; ``compile_program`` runs
its last stage -> a NeuronCore program (``trnc._trnc.Compiled``). Any
failure raises the matching ``trnc.errors`` exception. No torch import here:
the CLI uses this module too.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import errors

OK = "TRNC_OK"


def _lib():
    from . import _trnc

    return _trnc


# TRNC_LOG levels, quietest first: "warning" (the default) prints nothing
# beyond Python warnings, "info" one line per compiled graph and per
# recompile, "debug" also the dims a specialization dropped
LOG_LEVELS = ("off", "warning", "info", "debug")
_warned_levels: set[str] = set()


def log_level() -> str:
    """``TRNC_LOG`` as one of ``LOG_LEVELS`` ("warning" when unset). An
    unknown value counts as "warning" and is warned about once per value."""
    raw = os.environ.get("TRNC_LOG", "")
    level = raw.strip().lower()
    if not level:
        return "warning"
    if level in LOG_LEVELS:
        return level
    if level not in _warned_levels:
        _warned_levels.add(level)
        warnings.warn(f"trnc: TRNC_LOG={raw!r} is not a log level; use one of "
                      f"{', '.join(LOG_LEVELS)} (info prints one line per compiled graph). "
                      "Logging as 'warning'.", UserWarning, stacklevel=user_stacklevel())
    return "warning"


def log_at_least(level: str) -> bool:
    """True when ``TRNC_LOG`` is ``level`` or more verbose."""
    return LOG_LEVELS.index(log_level()) >= LOG_LEVELS.index(level)


def graph_inputs(data: bytes) -> dict[str, dict[str, Any]]:
    """The placeholders of serialized graph ``data`` for messages: FX name ->
    {index, role, user_name, torch_dtype}. Empty if ``data`` does not parse."""
    try:
        from . import fx_pb2  # noqa: PLC0415

        g = fx_pb2.Graph.FromString(data)
    except Exception:  # noqa: BLE001 (malformed bytes: no names to give)
        return {}
    out: dict[str, dict[str, Any]] = {}
    for n in g.nodes:
        if n.op != fx_pb2.PLACEHOLDER:
            continue
        out[n.name] = {"index": len(out), "role": n.placeholder_role, "user_name": n.user_name,
                       "torch_dtype": n.outputs[0].torch_dtype if n.outputs else ""}
    return out


def raise_for(status: str, diags: list[dict[str, Any]], graph: str, stage: str,
              inputs: dict[str, dict[str, Any]] | None = None) -> None:
    """Raises the trnc exception for a non-OK status from ``stage``. ``inputs``
    (``graph_inputs()``) names the graph's inputs as the user knows them.

    Statuses: TRNC_ERR_UNSUPPORTED (an op, dtype, rank > 8 or data-dependent
    shape or scalar the model uses) -> UnsupportedOperatorError;
    TRNC_ERR_DYNAMIC_SHAPE -> DynamicShapeError; NOMEM -> TrncError; matmul
    operands of different dtypes (a model error eager raises on too) ->
    TrncError; anything else (malformed or inconsistent bytes) ->
    GraphImportError."""
    if status == OK:
        return
    if status == "TRNC_ERR_UNSUPPORTED":
        msg, counts = errors.unsupported_message(diags, graph, inputs)
        raise errors.UnsupportedOperatorError(msg, diags, graph, counts)
    if status == "TRNC_ERR_DYNAMIC_SHAPE":
        raise errors.DynamicShapeError(errors.dynamic_shape_message(diags, graph, inputs),
                                       diags, graph)
    if status == "TRNC_ERR_NOMEM":
        raise errors.TrncError(f"trnc ran out of memory during {stage} of {graph}.\n"
                               + errors.format_diagnostics(diags), diags, graph)
    dtype_msg = errors.operand_dtype_message(diags, graph)
    if dtype_msg is not None:
        # a user error eager raises on too, not a trnc bug
        raise errors.TrncError(dtype_msg, diags, graph)
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


def _library_dirs() -> tuple[str, ...]:
    """Directories whose frames are not the user's: trnc, torch (if imported)
    and the standard library."""
    import sys  # noqa: PLC0415
    import sysconfig  # noqa: PLC0415

    dirs = {os.path.dirname(os.path.abspath(__file__))}
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        dirs.add(os.path.dirname(os.path.abspath(torch.__file__)))
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    return tuple(os.path.join(d, "") for d in dirs)


def user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` called in the function that
    calls this: the innermost frame outside trnc, torch and the standard library
    (the user's line that called the compiled model, or ``.backward()``); 2 if
    there is none."""
    import sys  # noqa: PLC0415

    dirs = _library_dirs()
    frame = sys._getframe(1)  # the caller of user_stacklevel, level 1 for warn
    level = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        internal = filename.startswith("<frozen ") or filename.startswith("<eval_with_key")
        if not internal and not any(filename.startswith(d) for d in dirs):
            return level
        frame = frame.f_back
        level += 1
    return 2


# how error messages name the C pipeline's stages (trnc_stage_name)
_STAGE_LABELS = {"import": "import", "legality": "the legality scan", "legalize": "legalization"}


def lower(data: bytes, name: str = "graph", kind: str = "", *, warn: bool = True,
          stacklevel: int | None = None) -> LoweredGraph:
    """Runs the C pipeline on serialized bytes; raises a ``TrncError`` subclass on
    failure. Legalization warnings (one per graph at most: float64) are issued
    as ``UserWarning`` when ``warn``, attributed to the user's code (the
    innermost frame outside trnc, torch and the standard library) unless
    ``stacklevel`` is given."""
    lib = _lib()
    t0 = time.perf_counter()
    # the stage order lives in C (trnc_pipeline_run): import, legality scan,
    # legalization, IR verifier
    g, status, stage, diags = lib.lower(data)
    if status != OK:
        if stage == "verify":
            # the graph imported and legalized, so a verifier failure is ours
            raise errors.GraphImportError(
                errors.import_error_message(f"{status} in verification after legalization",
                                            diags, name), diags, name)
        raise_for(status, diags, name, _STAGE_LABELS.get(stage, stage), graph_inputs(data))
    if g is None:  # defensive: OK without a graph is a binding bug
        raise errors.GraphImportError(
            errors.import_error_message("no graph returned", diags, name), diags, name)
    warns = [d for d in diags if d.get("severity") == "warning"]
    if warn and warns:
        level = stacklevel if stacklevel is not None else user_stacklevel()
        for d in warns:
            warnings.warn(f"trnc ({name}): {d.get('message', '')}", UserWarning,
                          stacklevel=level)
    return LoweredGraph(name=name, kind=kind or g.summary().get("kind", ""), graph=g,
                        warnings=warns, seconds=time.perf_counter() - t0)


def compile_program(lowered: LoweredGraph, *, target: str | None = None,
                    autocast_bf16: bool = False, no_fusion: bool = False) -> Any:
    """Lowers a verified graph to a NeuronCore program (the pipeline's last
    stage, ``trnc_compile``) and returns the ``trnc._trnc.Compiled``.

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
