"""The torch.compile backend: ``torch.compile(model, backend="neuron", dynamic=False)``.

Registered by the ``torch_dynamo_backends`` entry points ``neuron`` and
``trnc`` (pyproject.toml), so no ``import trnc`` is needed.

dynamo graph -> aot_autograd (functionalized aten, Core ATen decompositions
minus the ops trnc lowers natively) -> for each of the forward, backward and
inference graphs: serialize -> C import -> legality scan -> legalize -> verify.

Execution: the NeuronCore code emitter and simulator land in later releases.
Until then the compiled callable runs the captured aten graph with torch; see
``_executable`` — the one place to replace.
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from . import errors, pipeline
from .serialize import serialize

__all__ = ["neuron", "decompositions", "last_graphs", "stats", "reset", "GraphRecord",
           "KNOWN_OPTIONS", "make_aot_backend"]

# Options accepted in torch.compile(..., options={...}): name -> (type, help)
KNOWN_OPTIONS: dict[str, tuple[type, str]] = {
    "dump_ir": (bool, "print each graph's trnc IR (same as TRNC_DUMP_IR=1)"),
    "warn_float64": (bool, "issue the float64 -> float32 UserWarning (default True)"),
    "name": (str, "prefix of the graph names in messages and records"),
}
_IGNORED_MODES = {None, "default", "reduce-overhead", "max-autotune",
                  "max-autotune-no-cudagraphs"}

_MAX_RECORDS = 64


@dataclass
class GraphRecord:
    """What trnc kept of one compiled graph."""

    name: str
    kind: str                         # "forward" | "backward" | "inference"
    text: str                         # IR text (trnc_graph_print)
    hash: str                         # canonical hash, 32 hex digits
    summary: dict[str, Any]
    warnings: list[dict[str, Any]] = field(default_factory=list)
    compile_seconds: float = 0.0
    serialized: bytes = b""           # the fx.proto bytes that were imported


_lock = threading.Lock()
_records: collections.deque[GraphRecord] = collections.deque(maxlen=_MAX_RECORDS)
_stats: collections.Counter[str] = collections.Counter()
_graph_ids = itertools.count()


def last_graphs(n: int | None = None) -> list[GraphRecord]:
    """Records of the most recently compiled graphs, oldest first (at most 64 kept)."""
    with _lock:
        recs = list(_records)
    return recs if n is None else recs[-n:] if n > 0 else []


def stats() -> dict[str, int]:
    """Counts of compiled graphs by kind, plus ``errors`` (failed graph compiles)."""
    with _lock:
        s = {k: _stats.get(k, 0) for k in ("forward", "backward", "inference", "errors")}
    s["graphs"] = s["forward"] + s["backward"] + s["inference"]
    return s


def reset() -> None:
    """Forgets records and counts (does not reset dynamo's caches)."""
    with _lock:
        _records.clear()
        _stats.clear()


# --------------------------------------------------------------------------- #
# decompositions: Core ATen minus the ops the C table lowers natively


@functools.lru_cache(maxsize=1)
def native_targets() -> frozenset[str]:
    """aten OpOverload names ("aten.gelu.default") trnc lowers natively (ir/ops.def)."""
    from . import _trnc

    return frozenset(op["fx_target"] for op in _trnc.ops() if op.get("fx_target"))


@functools.lru_cache(maxsize=1)
def _decomposition_table() -> dict[Any, Callable[..., Any]]:
    from torch._decomp import core_aten_decompositions

    keep = native_targets()
    table = core_aten_decompositions()
    return {op: fn for op, fn in table.items() if str(op) not in keep}


def decompositions() -> dict[Any, Callable[..., Any]]:
    """The decomposition table given to aot_autograd (a fresh dict each call)."""
    return dict(_decomposition_table())


# --------------------------------------------------------------------------- #
# options


def _parse_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    unknown_kwargs = sorted(set(kwargs) - {"options", "mode"})
    if unknown_kwargs:
        raise errors.InvalidOptionError(
            f"trnc backend got unexpected keyword arguments {unknown_kwargs}; "
            "it accepts mode= and options={...}")
    mode = kwargs.get("mode")
    if mode not in _IGNORED_MODES:
        raise errors.InvalidOptionError(
            f"trnc backend: unknown mode {mode!r}; known modes: "
            f"{sorted(m for m in _IGNORED_MODES if m)} (all compile the same way today)")
    options = kwargs.get("options") or {}
    if not isinstance(options, dict):
        raise errors.InvalidOptionError(
            f"trnc backend: options must be a dict, not {type(options).__name__}")
    known = ", ".join(f"{k} ({t.__name__}: {h})" for k, (t, h) in KNOWN_OPTIONS.items())
    opts: dict[str, Any] = {"dump_ir": os.environ.get("TRNC_DUMP_IR", "") not in ("", "0"),
                            "warn_float64": True, "name": ""}
    for key, value in options.items():
        if key not in KNOWN_OPTIONS:
            raise errors.InvalidOptionError(
                f"trnc backend: unknown option {key!r}. Known options: {known}")
        typ = KNOWN_OPTIONS[key][0]
        if not isinstance(value, typ):
            raise errors.InvalidOptionError(
                f"trnc backend: option {key!r} must be {typ.__name__}, "
                f"not {type(value).__name__} ({value!r})")
        opts[key] = value
    return opts


# --------------------------------------------------------------------------- #
# per-graph compilation


def _executable(gm: torch.fx.GraphModule, lowered: pipeline.LoweredGraph) -> Callable[..., Any]:
    """The callable aot_autograd runs for one graph.

    THIS RELEASE: runs the captured aten graph with torch (the IR was only
    validated). When the NeuronCore code emitter and simulator land, build the
    program from ``lowered.graph`` here and return a boxed callable that runs it.
    """
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


def _compile_graph(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], **_: Any) -> Callable[..., Any]:
    gid = next(_graph_ids)
    name = f"{opts['name'] + ' ' if opts['name'] else ''}{kind} graph {gid}"
    t0 = time.perf_counter()
    try:
        data = serialize(gm, kind, name)
        lowered = pipeline.lower(data, name, kind, warn=opts["warn_float64"], stacklevel=3)
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise
    rec = GraphRecord(name=name, kind=kind, text=lowered.text(), hash=lowered.hash(),
                      summary=lowered.summary(), warnings=lowered.warnings,
                      compile_seconds=time.perf_counter() - t0, serialized=data)
    with _lock:
        _records.append(rec)
        _stats[kind] += 1
    if opts["dump_ir"]:
        print(f"# trnc IR: {name} (hash {rec.hash})\n{rec.text}", file=sys.stdout, flush=True)
    return _executable(gm, lowered)


GraphCompiler = Callable[[str, torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]


def make_aot_backend(graph_compiler: GraphCompiler) -> Callable[..., Any]:
    """aot_autograd wired with trnc's decompositions; ``graph_compiler(kind, gm,
    example_inputs)`` is called for the forward, backward and inference graphs."""
    from torch._dynamo.backends.common import aot_autograd

    def compiler(kind: str) -> Callable[..., Any]:
        def fn(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kw: Any):
            return graph_compiler(kind, gm, example_inputs)

        fn.__name__ = f"trnc_{kind}_compiler"
        return fn

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"),
                        decompositions=decompositions())


def neuron(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any):
    """torch.compile backend entry point (names ``neuron`` and ``trnc``)."""
    opts = _parse_options(kwargs)
    backend = make_aot_backend(
        lambda kind, g, ex: _compile_graph(kind, opts, g, ex))
    return backend(gm, example_inputs)
