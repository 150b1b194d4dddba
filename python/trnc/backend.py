"""The torch.compile backend: ``torch.compile(model, backend="neuron", dynamic=False)``.

Registered by the ``torch_dynamo_backends`` entry points ``neuron`` and
``trnc`` (pyproject.toml), so no ``import trnc`` is needed.

dynamo graph -> aot_autograd (functionalized aten, Core ATen decompositions
minus the ops trnc lowers natively) -> for each of the forward, backward and
inference graphs: serialize -> C import -> legality scan -> legalize -> verify
-> compile to a NeuronCore program (``Graph.compile``) -> a boxed callable
that runs the program on the NeuronCore simulator (``_executable``).

Weights and buffers are graph inputs (aot_autograd lifts them), never baked
into the program. Each compile records a report (``last_report()``);
``TRNC_LOG=info`` prints a one-line summary per graph.
"""

from __future__ import annotations

import collections
import copy
import functools
import itertools
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from . import aliasing, cache, errors, fallback, pipeline
from . import megacache  # noqa: F401  (registers torch's "trnc" MegaCache artifact type)
from . import random as trnc_random
from .serialize import dynamo_inputs, serialize

__all__ = ["neuron", "decompositions", "last_graphs", "last_report", "stats", "reset",
           "fallback_ops", "GraphRecord", "KNOWN_OPTIONS", "TARGETS", "make_aot_backend"]

# NeuronCore targets trnc_compile knows (include/trnc/trnc.h, trnc_compile_options)
TARGETS = ("trn2", "trn3")

# Options accepted in torch.compile(..., options={...}): name -> (type, help)
KNOWN_OPTIONS: dict[str, tuple[type, str]] = {
    "dump_ir": (bool, "print each graph's trnc IR (same as TRNC_DUMP_IR=1)"),
    "warn_float64": (bool, "issue the float64 -> float32 UserWarning (default True)"),
    "name": (str, "prefix of the graph names in messages and records"),
    "target": (str, "NeuronCore target: 'trn2' (default) or 'trn3' (default from TRNC_TARGET)"),
    "autocast_bf16": (bool, "run matmul inputs in bf16 with fp32 accumulation (default False)"),
    "no_fusion": (bool, "one kernel per op, for debugging and comparisons (default False)"),
    "fallback": (str, "'cpu': run the ops trnc cannot lower eagerly on the CPU and the rest "
                      "as NeuronCore programs (default: off, an UnsupportedOperatorError; "
                      "default from TRNC_FALLBACK)"),
    "execute": (bool, "internal, for trnc's own front-end tests only: False stops after the "
                      "IR and runs the captured graph with torch (default True)"),
    "compile_only": (bool, "internal, set by `trnc precompile` only: compile into the cache "
                           "and return zero outputs of the right shape/dtype/strides without "
                           "running the program (default False)"),
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
    report: dict[str, Any] | None = None  # the compile report (None: IR only)


_lock = threading.Lock()
_records: collections.deque[GraphRecord] = collections.deque(maxlen=_MAX_RECORDS)
_stats: collections.Counter[str] = collections.Counter()
_graph_ids = itertools.count()
_last_report: dict[str, Any] | None = None


def last_graphs(n: int | None = None) -> list[GraphRecord]:
    """Records of the most recently compiled graphs, oldest first (at most 64 kept)."""
    with _lock:
        recs = list(_records)
    return recs if n is None else recs[-n:] if n > 0 else []


def stats() -> dict[str, int]:
    """Counts of compiled graphs by kind, plus ``errors`` (failed graph compiles),
    ``collectives`` (collective operations in the programs of those graphs,
    which run through torch.distributed), and the artifact cache's ``hits``,
    ``misses`` and ``compiles`` (programs actually compiled; a cache hit
    compiles nothing; ``TRNC_CACHE=0`` disables the cache), and the remote
    cache's ``remote_hits``, ``remote_misses``, ``remote_rejected``,
    ``remote_errors`` and ``remote_stores`` (``TRNC_REMOTE_CACHE``)."""
    with _lock:
        s = {k: _stats.get(k, 0)
             for k in ("forward", "backward", "inference", "errors", "collectives")}
    s["graphs"] = s["forward"] + s["backward"] + s["inference"]
    s.update(cache.counters())
    return s


def last_report() -> dict[str, Any] | None:
    """The report of the most recent graph compiled to a NeuronCore program, or
    None. Keys: every ``trnc_compile_report`` field (ir_nodes, kernels,
    instructions, engine_instructions, ops_per_engine, hbm_planned_bytes,
    hbm_unplanned_bytes, sbuf_peak_bytes, psum_peak_bytes, est_time_s,
    tensor_flop_util, dma_bw_util, compile_s, target, collectives,
    est_collective_s) plus ``kind`` and
    ``name`` of the graph. A copy: changing it changes nothing."""
    with _lock:
        return copy.deepcopy(_last_report)


def reset() -> None:
    """Forgets records, counts and the last report (does not reset dynamo's caches)."""
    global _last_report
    with _lock:
        _records.clear()
        _stats.clear()
        _last_report = None
    cache.reset_counters()
    fallback.reset()


def fallback_ops() -> list[dict[str, Any]]:
    """The ops that ran eagerly on the CPU under ``fallback="cpu"`` in this
    process (``trnc.fallback.fallback_ops``): dicts with op, node, file,
    line, graph, kind."""
    return fallback.fallback_ops()


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


def _env_flag(name: str) -> bool:
    """An on/off environment variable: unset, empty, 0, false, no, off -> off."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


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
    opts: dict[str, Any] = {"dump_ir": _env_flag("TRNC_DUMP_IR"),
                            "warn_float64": True, "name": "", "target": None,
                            "autocast_bf16": False, "no_fusion": False, "execute": True,
                            "compile_only": False, "fallback": None}
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
    opts["fallback"] = fallback.mode_from(opts["fallback"])
    if opts["target"] is None:
        env = os.environ.get("TRNC_TARGET", "")
        if env and env not in TARGETS:
            raise errors.InvalidOptionError(
                f"trnc backend: TRNC_TARGET={env!r} is not a known NeuronCore target; "
                f"use one of {', '.join(TARGETS)}")
        opts["target"] = env or TARGETS[0]
    elif opts["target"] not in TARGETS:
        raise errors.InvalidOptionError(
            f"trnc backend: option 'target' must be one of {', '.join(TARGETS)}, "
            f"not {opts['target']!r}")
    return opts


# --------------------------------------------------------------------------- #
# per-graph compilation


_TORCH_DTYPES: dict[str, torch.dtype] = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
    "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2, "i64": torch.int64,
    "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
    "bool": torch.bool,
}


@dataclass(frozen=True)
class _Spec:
    """A graph input or output at the torch boundary (``Compiled.inputs()``)."""

    dtype: torch.dtype | None         # None: a None output slot
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @staticmethod
    def of(desc: dict[str, Any], graph: str) -> "_Spec":
        if desc["is_none"]:
            return _Spec(None, (), ())
        dt = _TORCH_DTYPES.get(desc["dtype"])
        if dt is None:  # the C side produced a dtype the boundary cannot carry
            raise errors.CompilerError(errors.compiler_error_message(
                f"boundary tensor of dtype {desc['dtype']!r}", [], graph), [], graph)
        return _Spec(dt, tuple(desc["shape"]), tuple(desc["stride"]))

    def describe(self) -> str:
        return f"{self.dtype} {list(self.shape)} strides {list(self.stride)}"


def _layout_matches(t: torch.Tensor, spec: _Spec) -> bool:
    """dtype and shape equal, and strides equal wherever they matter (dims of
    size 1 never move the address; an empty tensor has no elements to read)."""
    if t.dtype != spec.dtype or tuple(t.shape) != spec.shape:
        return False
    if t.numel() == 0:
        return True
    return all(n == 1 or a == b for n, a, b in zip(spec.shape, t.stride(), spec.stride))


def _check_input(i: int, t: Any, spec: _Spec, names: Sequence[str], graph: str) -> int:
    """Address of input i after checking it against the compiled descriptor; 0
    for a tensor without elements. Raises ``InputMismatchError``."""
    who = f"input {i}" + (f" ({names[i]})" if i < len(names) else "")
    if spec.dtype is None:  # an opaque input (a DeviceMesh): the program does not read it
        return 0
    if not isinstance(t, torch.Tensor):
        raise errors.InputMismatchError(
            f"trnc: {graph} was compiled for a tensor as {who}, got {type(t).__name__}",
            graph=graph)
    if t.device.type != "cpu":
        raise errors.InputMismatchError(
            f"trnc: {who} of {graph} is on {t.device}; the NeuronCore simulator reads "
            "host (CPU) tensors", graph=graph)
    if t.layout != torch.strided or t.is_sparse or getattr(t, "is_nested", False):
        raise errors.InputMismatchError(
            f"trnc: {who} of {graph} has layout {t.layout}; trnc binds strided tensors only",
            graph=graph)
    if not _layout_matches(t, spec):
        raise errors.InputMismatchError(
            f"trnc: {who} of {graph} is {t.dtype} {list(t.shape)} strides {list(t.stride())}, "
            f"but the program was compiled for {spec.describe()}. trnc compiles static shapes: "
            "call the model with the shapes it was compiled for, or compile one model per "
            "shape bucket.", graph=graph)
    return t.data_ptr() if t.numel() else 0


def _opaque_outputs(gm: torch.fx.GraphModule) -> list[tuple[int, int]]:
    """(output index, input index) of the graph outputs that are opaque inputs
    (DTensor graphs pass their DeviceMesh through): the program has no tensor
    for them, the executable returns the input object itself."""
    from .serialize import is_opaque

    ph = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    out = next((n for n in gm.graph.nodes if n.op == "output"), None)
    vals = out.args[0] if out is not None and out.args else ()
    if not isinstance(vals, (tuple, list)):
        vals = (vals,)
    return [(k, ph[v]) for k, v in enumerate(vals)
            if isinstance(v, torch.fx.Node) and v in ph and is_opaque(v.meta.get("val"))]


def _executable(gm: torch.fx.GraphModule, lowered: pipeline.LoweredGraph,
                compiled: Any, rng: trnc_random.RandomInputs | None = None) -> Callable[..., Any]:
    """The boxed callable aot_autograd runs for one graph.

    It takes the list of inputs (and clears it, per the boxed convention),
    checks each against the compiled descriptors (dtype, shape, strides: static
    shapes), allocates every output with the dtype, shape and strides of the
    output node's ``meta["val"]`` (``torch.empty_strided``), runs the program on
    the NeuronCore simulator with the tensors' addresses and returns the
    outputs (None slots stay None). A graph with random ops (``rng``, see
    random.py) gets its uniforms appended to the inputs, one seed drawn from
    torch's default generator per call.
    """
    name = lowered.name
    ins = [_Spec.of(d, name) for d in compiled.inputs()]
    outs = [_Spec.of(d, name) for d in compiled.outputs()]
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    run_program = compiled.run
    opaque = _opaque_outputs(gm)

    def run(args: list[Any]) -> list[torch.Tensor | None]:
        inputs = list(args)
        args.clear()
        if rng:
            inputs += rng.draw()
        if len(inputs) != len(ins):
            raise errors.InputMismatchError(
                f"trnc: {name} takes {len(ins)} inputs, got {len(inputs)}", graph=name)
        in_ptrs = [_check_input(i, t, spec, names, name)
                   for i, (t, spec) in enumerate(zip(inputs, ins))]
        results: list[torch.Tensor | None] = [
            None if spec.dtype is None else
            torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device="cpu")
            for spec in outs]
        out_ptrs = [0 if r is None or r.numel() == 0 else r.data_ptr() for r in results]
        status, diags = run_program(in_ptrs, out_ptrs)
        if status != pipeline.OK:
            if status == "TRNC_ERR_INTERNAL":  # a bad artifact: never load it again
                cache.discard(compiled)
            raise errors.ExecutionError(
                errors.execution_error_message(status, diags, name, names), diags, name)
        for k, i in opaque:  # the graph returns an opaque input (a DeviceMesh) as is
            results[k] = inputs[i]
        del inputs  # the tensors stayed alive (and their memory valid) during the run
        return results

    run._boxed_call = True  # type: ignore[attr-defined]
    run.__name__ = f"trnc_{lowered.kind}_program"
    return run


def _compile_only(lowered: pipeline.LoweredGraph, compiled: Any) -> Callable[..., Any]:
    """options={"compile_only": True}, set only by ``trnc precompile``: the
    program is compiled (and cached) but never run; each call returns zero
    tensors with the dtype, shape and strides of the graph's outputs, so that
    a forward's outputs can drive the backward's compile."""
    outs = [_Spec.of(d, lowered.name) for d in compiled.outputs()]

    def run(args: list[Any]) -> list[torch.Tensor | None]:
        args.clear()
        return [None if s.dtype is None else
                torch.empty_strided(s.shape, s.stride, dtype=s.dtype, device="cpu").zero_()
                for s in outs]

    run._boxed_call = True  # type: ignore[attr-defined]
    run.__name__ = f"trnc_{lowered.kind}_compile_only"
    return run


def _eager_for_tests(gm: torch.fx.GraphModule) -> Callable[..., Any]:
    """options={"execute": False}: runs the captured aten graph with torch.

    Only trnc's own front-end tests use this (graph checks that must not depend
    on which ops the code emitter lowers yet). It is never a fallback: nothing
    picks it unless the option is set explicitly."""
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


def _log_line(rec: GraphRecord) -> str:
    """The TRNC_LOG=info summary of one compiled graph."""
    r = rec.report or {}
    return (f"trnc: {rec.name} ({rec.kind}): {r.get('ir_nodes', 0)} IR nodes, "
            f"{r.get('kernels', 0)} kernels, {r.get('instructions', 0)} instructions, "
            f"HBM planned {_bytes(r.get('hbm_planned_bytes', 0))}, "
            f"SBUF peak {_bytes(r.get('sbuf_peak_bytes', 0))}/partition, "
            f"est. {_seconds(r.get('est_time_s', 0.0))} on {r.get('target', '?')}, "
            f"TensorE util {100.0 * r.get('tensor_flop_util', 0.0):.3g}%, "
            f"compile {r.get('compile_s', 0.0) * 1e3:.1f} ms"
            + {"hit": " (cache hit)", "miss": " (cache miss)",
               "remote-hit": " (remote cache hit)"}.get(r.get("cache"), ""))


def _bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(v) < 1024 or unit == "GiB":
            return f"{int(v)} B" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"


def _seconds(s: float) -> str:
    """0.0000123 -> '12.3 us'."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} us"


def _compile_graph(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], **_: Any) -> Callable[..., Any]:
    """One graph: serialize -> IR (import, scan, legalize, verify) -> NeuronCore
    program -> boxed callable. Records the graph and its compile report. With
    ``fallback="cpu"``, a graph trnc refuses ops of is partitioned
    (fallback.py): the refused ops run with torch, the rest as programs."""
    gid = next(_graph_ids)
    name = f"{opts['name'] + ' ' if opts['name'] else ''}{kind} graph {gid}{_rank_suffix()}"
    original = fallback.copy_graph(gm) if opts["fallback"] else None
    try:
        return _compile_one(kind, opts, gm, example_inputs, name)
    except errors.UnsupportedOperatorError as e:
        if original is None:
            with _lock:
                _stats["errors"] += 1
            raise
        err = e
    try:
        return fallback.compile_partitioned(
            original, err, lambda sub, ex, part: _compile_one(kind, opts, sub, ex, part),
            name, kind)
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise


def _rank_suffix() -> str:
    """`` (rank N)`` in a torch.distributed process group, else empty: every
    rank numbers its graphs from 0, so the rank keeps their names (in
    messages, TRNC_DUMP_DIR and TRNC_PROFILE files) apart."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return ""
    return f" (rank {dist.get_rank()})"


def _compile_one(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                 example_inputs: Sequence[Any], name: str) -> Callable[..., Any]:
    """``_compile_graph`` of one graph named ``name``, without the fallback."""
    global _last_report
    t0 = time.perf_counter()
    try:
        # random ops -> host uniforms as extra inputs (random.py)
        rng = trnc_random.functionalize(gm) if opts["execute"] else None
        data = serialize(gm, kind, name, user_inputs=opts.get("user_inputs"))
        lowered = pipeline.lower(data, name, kind, warn=opts["warn_float64"])
        rec = GraphRecord(name=name, kind=kind, text=lowered.text(), hash=lowered.hash(),
                          summary=lowered.summary(), warnings=lowered.warnings,
                          serialized=data)
        if opts["dump_ir"]:
            print(f"# trnc IR: {name} (hash {rec.hash})\n{rec.text}", file=sys.stdout,
                  flush=True)
        compiled = None
        if opts["execute"]:
            compiled, outcome = cache.compile_program(
                lowered, opts, list(example_inputs) + (rng.examples() if rng else []))
            rec.report = dict(compiled.report(), kind=kind, name=name, cache=outcome)
            fn = (_compile_only(lowered, compiled) if opts["compile_only"]
                  else _executable(gm, lowered, compiled, rng))
        else:
            fn = _eager_for_tests(gm)
    except errors.UnsupportedOperatorError:
        raise  # counted by _compile_graph unless the fallback takes the graph
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise
    rec.compile_seconds = time.perf_counter() - t0
    with _lock:
        _records.append(rec)
        _stats[kind] += 1
        if rec.report is not None:
            _stats["collectives"] += rec.report.get("collectives", 0)
            _last_report = copy.deepcopy(rec.report)
    if rec.report is not None and pipeline.log_at_least("info"):
        print(_log_line(rec), file=sys.stderr, flush=True)
    return fn


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

    aot = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                       inference_compiler=compiler("inference"),
                       decompositions=decompositions())

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kw: Any):
        # The backward is traced (with the forward, as one joint graph) here.
        # torch's default traces it under the forward's ambient autocast, so the
        # backward of a region with autocast disabled inside an autocast region
        # ran in bf16. Eager's backward ops run in their inputs' dtypes, autocast
        # never applies to them: trace the backward with autocast off, as eager.
        with torch._functorch.config.patch(backward_pass_autocast="off"):
            return aot(gm, example_inputs, **kw)

    return backend


def neuron(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any):
    """torch.compile backend entry point (names ``neuron`` and ``trnc``)."""
    opts = _parse_options(kwargs)
    # static shapes under dynamic=None and recompile reports: see specialize.py
    from .specialize import note_compile, specialize_automatic_dynamic

    note_compile(gm, example_inputs)
    gm, example_inputs, wrap = specialize_automatic_dynamic(gm, example_inputs)
    opts["user_inputs"] = dynamo_inputs(gm)  # names inputs in error messages
    backend = make_aot_backend(
        lambda kind, g, ex: _compile_graph(kind, opts, g, ex))
    compiled = backend(gm, example_inputs)
    # a graph that writes to an input is recompiled for each new pattern of
    # inputs aliasing it (dynamo does not guard on aliasing): aliasing.py
    mutated = aliasing.mutated_inputs(len(example_inputs))
    compiled = aliasing.guard(compiled, lambda args: backend(gm, args), example_inputs, mutated)
    return wrap(compiled)
