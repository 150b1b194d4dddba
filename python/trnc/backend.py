"""The torch.compile backend: ``torch.compile(model, backend="neuron", dynamic=False)``.

Registered by the ``torch_dynamo_backends`` entry points ``neuron`` and
``trnc`` (pyproject.toml), so no ``import trnc`` is needed.

dynamo graph -> aot_autograd (functionalized aten, Core ATen decompositions
minus the ops trnc lowers natively) -> for each of the forward, backward and
inference graphs: serialize -> C import -> legality scan -> legalize -> verify
-> compile to a NeuronCore program (``Graph.compile``) -> a boxed callable
that runs the program on the NeuronCore simulator (``_executable``).

With the caches on, the graph compilers return ``aot_cache.TrncOutputCode``\ s
that torch's AOTAutogradCache stores, so a warm process skips aot_autograd's
trace and partition as well as trnc's compile (aot_cache.py).

Weights and buffers are graph inputs (aot_autograd lifts them), never baked
into the program. Each compile records a report (``last_report()``);
``TRNC_LOG=info`` prints a one-line summary per graph.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import itertools
import os
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from . import aliasing, cache, decomp, effects, errors, fallback, pipeline
from . import megacache  # noqa: F401  (registers torch's "trnc" MegaCache artifact type)
from .serialize import dynamo_inputs, serialize

__all__ = ["neuron", "decompositions", "last_graphs", "last_report", "stats", "reset",
           "fallback_ops", "GraphRecord", "KNOWN_OPTIONS", "TARGETS", "make_aot_backend"]

# NeuronCore targets trnc_compile knows (include/trnc/trnc.h, trnc_compile_options)
TARGETS = ("trn2", "trn3", "trn1")  # the first is the default

# Options accepted in torch.compile(..., options={...}): name -> (type, help)
KNOWN_OPTIONS: dict[str, tuple[type, str]] = {
    "dump_ir": (bool, "print each graph's trnc IR (same as TRNC_DUMP_IR=1)"),
    "warn_float64": (bool, "issue the float64 -> float32 UserWarning (default True)"),
    "name": (str, "prefix of the graph names in messages and records"),
    "target": (str, "NeuronCore target: 'trn2' (default), 'trn3' or 'trn1' (default from TRNC_TARGET)"),
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
    compiled: Any = None              # weakref.ref to the artifact (jit_s), or None


_lock = threading.Lock()
# per thread, during neuron(): the inputs each inference graph compiled or
# loaded for it writes to (aliasing.mutated_in_graph), so that a graph that
# writes to none is not wrapped in the aliasing guard
_mutations = threading.local()
_records: collections.deque[GraphRecord] = collections.deque(maxlen=_MAX_RECORDS)
_stats: collections.Counter[str] = collections.Counter()
_graph_ids = itertools.count()
_last_report: dict[str, Any] | None = None
_last_compiled: Any = None  # weakref.ref to the artifact of _last_report


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
    ``remote_errors`` and ``remote_stores`` (``TRNC_REMOTE_CACHE``), and
    ``jit_compiles`` / ``jit_s``: the programs whose host code the
    simulator's JIT compiled in this process and the seconds that took (a
    float; reset() does not reset them)."""
    from . import _trnc
    with _lock:
        s = {k: _stats.get(k, 0)
             for k in ("forward", "backward", "inference", "errors", "collectives")}
    s["graphs"] = s["forward"] + s["backward"] + s["inference"]
    s.update(cache.counters())
    s["jit_compiles"], s["jit_s"] = _trnc.jit_totals()
    return s


def last_report() -> dict[str, Any] | None:
    """The report of the most recent graph compiled to a NeuronCore program, or
    None. Keys: every ``trnc_compile_report`` field (ir_nodes, kernels,
    instructions, engine_instructions, ops_per_engine, hbm_planned_bytes,
    hbm_unplanned_bytes, sbuf_peak_bytes, psum_peak_bytes, est_time_s,
    tensor_flop_util, dma_bw_util, compile_s, target, collectives,
    est_collective_s) plus ``kind`` and
    ``name`` of the graph, and ``jit_s``: the seconds the simulator's JIT has
    spent compiling that program's host code so far (0.0 while it has run on
    the interpreter only; docs/simulator.md). A copy: changing it changes
    nothing."""
    with _lock:
        r, ref = copy.deepcopy(_last_report), _last_compiled
    if r is not None:
        c = ref() if ref is not None else None
        r["jit_s"] = c.jit_seconds() if c is not None else r.get("jit_s", 0.0)
    return r


def reset() -> None:
    """Forgets records, counts and the last report (does not reset dynamo's caches)."""
    global _last_report, _last_compiled
    with _lock:
        _records.clear()
        _stats.clear()
        _last_report = None
        _last_compiled = None
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


# Ops outside Core ATen that core_aten_decompositions() leaves whole but
# torch's own decomposition table rewrites into ops trnc lowers (found
# refused by the OpInfo test, tests/python/test_opinfo.py).
# (Not those whose decompositions leave prims ops, copysign, fmax, fmin,
# round.decimals, or in-place copies, diagonal_scatter.)
EXTRA_DECOMPOSITIONS = (
    "addmv", "ldexp", "dist", "view_copy", "permute_copy", "narrow_copy", "as_strided_copy",
    "unfold", "unfold_backward", "unbind_copy", "_batch_norm_with_update_functional", "take",
    "batch_norm_backward",
)


def decompositions() -> dict[Any, Callable[..., Any]]:
    """The decomposition table given to aot_autograd (a fresh dict each call,
    from torch's table as it is now: modules that torch imports while it
    compiles, e.g. for its AOTAutogradCache, register more decompositions):
    Core ATen's plus torch's for EXTRA_DECOMPOSITIONS plus trnc's own
    (decomp.TABLE), minus the ops trnc lowers natively."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    keep = native_targets()
    table = dict(core_aten_decompositions())
    packets = [getattr(torch.ops.aten, name) for name in EXTRA_DECOMPOSITIONS]
    for op, fn in get_decompositions(packets).items():
        table.setdefault(op, fn)
    for op, fn in decomp.TABLE.items():
        table.setdefault(op, fn)
    return {op: fn for op, fn in table.items() if str(op) not in keep}


class _DecompositionsOnUse(dict):  # type: ignore[type-arg]
    """``decompositions()``, built the first time anything reads it.

    aot_autograd needs the table only to trace; a warm start that
    torch's AOTAutogradCache serves never traces, and building the table
    (torch's Core ATen list walks every CompositeImplicitAutograd op of every
    namespace) is most of a second of it. Every read goes through one of
    these methods, so a trace sees the full table."""

    def _fill(self) -> None:
        if not getattr(self, "_filled", False):
            self._filled = True
            dict.update(self, decompositions())

    def _reader(name: str):  # noqa: N805  (builds the methods below)
        def method(self, *args, **kwargs):
            self._fill()
            return getattr(dict, name)(self, *args, **kwargs)
        method.__name__ = name
        return method

    for _name in ("__getitem__", "__contains__", "__iter__", "__len__", "__bool__", "__eq__",
                  "__ne__", "__repr__", "__or__", "__ror__", "__reversed__", "get", "keys",
                  "values", "items", "copy", "pop", "popitem", "setdefault", "update",
                  "__setitem__", "__delitem__", "__ior__", "__reduce__", "__reduce_ex__"):
        if hasattr(dict, _name):
            locals()[_name] = _reader(_name)
    del _name, _reader
    __hash__ = None  # type: ignore[assignment]


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
    # a complex64 (complex128) tensor, described and bound as its view_as_real:
    # float32 (float64) [..., 2] (passes/complex.c carries complex values so)
    complex: bool = False

    @staticmethod
    def of(desc: dict[str, Any], graph: str) -> "_Spec":
        if desc["is_none"]:
            return _Spec(None, (), ())
        dt = _TORCH_DTYPES.get(desc["dtype"])
        if dt is None:  # the C side produced a dtype the boundary cannot carry
            raise errors.CompilerError(errors.compiler_error_message(
                f"boundary tensor of dtype {desc['dtype']!r}", [], graph), [], graph)
        return _Spec(dt, tuple(desc["shape"]), tuple(desc["stride"]), bool(desc.get("complex")))

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


def _fast_layout(spec: _Spec) -> tuple[torch.dtype | None, torch.Size, tuple[int, ...]]:
    """What the per-call check compares with ``==`` (dtype, shape, strides):
    a tensor equal in all three matches exactly; any other tensor goes
    through the full check (``_check_input``: size-1 dims, clear errors)."""
    return spec.dtype, torch.Size(spec.shape), spec.stride


def _complex_layout(spec: _Spec) -> tuple[torch.dtype | None, torch.Size, tuple[int, ...]]:
    """``_fast_layout`` of the complex tensor whose view_as_real ``spec`` describes."""
    dt = torch.complex64 if spec.dtype == torch.float32 else torch.complex128
    return dt, torch.Size(spec.shape[:-1]), tuple(s // 2 for s in spec.stride[:-1])


def _executable(gm: torch.fx.GraphModule, lowered: pipeline.LoweredGraph,
                compiled: Any) -> Callable[..., Any]:
    """The boxed callable aot_autograd runs for one graph.

    It takes the list of inputs (and clears it, per the boxed convention),
    checks each against the compiled descriptors (dtype, shape, strides: static
    shapes), allocates every output with the dtype, shape and strides of the
    output node's ``meta["val"]`` (``torch.empty_strided``), runs the program on
    the NeuronCore simulator with the tensors' addresses and returns the
    outputs (None slots stay None). A graph with random ops gets its seed
    input (``_draw_seed``) appended to the inputs at every call.
    """
    return _boxed_runner(lowered.name, lowered.kind, compiled,
                         [n.name for n in gm.graph.nodes if n.op == "placeholder"],
                         _opaque_outputs(gm))


def _draw_seed() -> torch.Tensor:
    """The seed input of a graph with random ops (``Compiled.inputs()`` marks
    it ``rng_seed``; passes/decomp_random.c generates Philox4x32-10 from it on
    the device): one 64-bit seed from ``torch.default_generator``, so
    ``torch.manual_seed`` reproduces every mask, as int32 [2] (low word, high
    word)."""
    seed = torch.randint(0, 2 ** 63 - 1, (1,), dtype=torch.int64)
    return seed.view(torch.int32) if sys.byteorder == "little" else seed.view(torch.int32).flip(0)


def _with_seed_example(lowered: pipeline.LoweredGraph,
                       example_inputs: Sequence[Any]) -> list[Any]:
    """The example inputs plus a stand-in for the seed input the decompose
    pass adds to a graph with random ops (its own storage: no alias group)."""
    out = list(example_inputs)
    if lowered.summary().get("inputs", -1) == len(out) + 1:
        out.append(torch.zeros(2, dtype=torch.int32))
    return out


def _boxed_runner(name: str, kind: str, compiled: Any, names: Sequence[str],
                  opaque: Sequence[tuple[int, int]] = ()) -> Callable[..., Any]:
    """``_executable`` from what it needs of the graph (its name, kind,
    placeholder names and ``_opaque_outputs``): what a cached entry rebuilds
    it from (aot_cache.py).

    Everything that cannot change between calls is computed here, once: the
    descriptors, which tensors have no elements (address 0), and the exact
    layouts a call compares with; a call does one ``==`` per input on dtype,
    shape and strides (what dynamo's guards check for the forward; the backward
    gets saved tensors and tangents, which no guard covers), and only a
    tensor that differs goes through the full check and its error message.
    Outputs come from torch's CPU ``empty_strided`` fast path (the one
    inductor's generated code calls) and the C code writes them.

    The returned callable is boxed (one list, cleared); its ``direct``
    attribute is the same run called with the inputs as arguments, for a
    graph whose aot_autograd wrappers do nothing (``aliasing.plain_inference``),
    which dynamo then calls without them.
    """
    descs = compiled.inputs()
    ins = [_Spec.of(d, name) for d in descs]
    # the seed input of a graph with random ops comes after the graph's own
    draws = bool(descs) and bool(descs[-1].get("rng_seed"))
    outs = [_Spec.of(d, name) for d in compiled.outputs()]
    fast_ins = [(i, _fast_layout(spec), spec, all(spec.shape))
                for i, spec in enumerate(ins)]
    make_outs = [None if spec.dtype is None else (spec.shape, spec.stride, spec.dtype)
                 for spec in outs]
    out_nonempty = [spec.dtype is not None and (all(spec.shape))
                    for spec in outs]
    n_in = len(ins)
    # complex64 boundary tensors travel as their view_as_real views (same memory)
    cplx_in = [i for i, spec in enumerate(ins) if spec.complex]
    cplx_out = [k for k, spec in enumerate(outs) if spec.complex]
    run_program = compiled.execute
    empty = _empty_strided_cpu()

    def execute(inputs: Sequence[Any]) -> list[torch.Tensor | None]:
        if draws:
            inputs = [*inputs, _draw_seed()]
        if len(inputs) != n_in:
            raise errors.InputMismatchError(
                f"trnc: {name} takes {n_in} inputs, got {len(inputs)}", graph=name)
        if cplx_in:
            inputs = list(inputs)
            for i in cplx_in:
                t = inputs[i]
                if isinstance(t, torch.Tensor) and t.is_complex():
                    inputs[i] = torch.view_as_real(t.resolve_conj())
        in_ptrs = []
        for i, layout, spec, nonempty in fast_ins:
            t = inputs[i]
            try:
                same = (t.dtype, t.shape, t.stride()) == layout and t.is_cpu
            except Exception:  # noqa: BLE001  (not a strided tensor: the full check says why)
                same = False
            # the full check gives the address (0 for an opaque input or no elements)
            in_ptrs.append((t.data_ptr() if nonempty else 0) if same
                           else _check_input(i, t, spec, names, name))
        results: list[torch.Tensor | None] = [
            None if m is None else empty(m[0], m[1], m[2]) for m in make_outs]
        out_ptrs = [r.data_ptr() if ne else 0  # type: ignore[union-attr]
                    for r, ne in zip(results, out_nonempty)]
        failed = run_program(in_ptrs, out_ptrs)
        if failed is not None:  # (status, diags)
            status, diags = failed
            if status == "TRNC_ERR_INTERNAL":  # a bad artifact: never load it again
                cache.discard(compiled)
            raise errors.ExecutionError(
                errors.execution_error_message(status, diags, name, names), diags, name)
        for k, i in opaque:  # the graph returns an opaque input (a DeviceMesh) as is
            results[k] = inputs[i]
        for k in cplx_out:
            results[k] = torch.view_as_complex(results[k])  # type: ignore[arg-type]
        return results  # the inputs stayed alive (and their memory valid) during the run

    def run(args: list[Any]) -> list[torch.Tensor | None]:
        inputs = list(args)
        args.clear()
        return execute(inputs)

    def direct(*args: Any) -> list[torch.Tensor | None]:
        return execute(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    run.__name__ = f"trnc_{kind}_program"
    direct.__name__ = f"trnc_{kind}_program_direct"
    run.direct = direct  # type: ignore[attr-defined]
    # what training.function checks the backward's tangent inputs against
    # (complex64 tensors by their own layout: what the caller passes)
    direct.layouts = [_complex_layout(spec) if spec.complex else layout  # type: ignore[attr-defined]
                      for _, layout, spec, _ in fast_ins]
    direct.n_outputs = len(outs)  # type: ignore[attr-defined]
    return run


def _empty_strided_cpu() -> Callable[[Sequence[int], Sequence[int], torch.dtype], torch.Tensor]:
    """``(shape, stride, dtype) -> tensor`` on the CPU, uninitialized: torch's
    guard-module fast path (``torch._C._dynamo.guards._empty_strided_cpu``,
    what inductor's generated code allocates with; about 2.5x cheaper than
    ``torch.empty_strided`` per call), or ``torch.empty_strided`` where this
    torch has no such function."""
    fast = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    fast = getattr(fast, "_empty_strided_cpu", None)
    if fast is not None:
        return fast
    return lambda shape, stride, dtype: torch.empty_strided(shape, stride, dtype=dtype,
                                                            device="cpu")


def _compile_only(compiled: Any, name: str, kind: str) -> Callable[..., Any]:
    """options={"compile_only": True}, set only by ``trnc precompile``: the
    program is compiled (and cached) but never run; each call returns zero
    tensors with the dtype, shape and strides of the graph's outputs, so that
    a forward's outputs can drive the backward's compile."""
    outs = [_Spec.of(d, name) for d in compiled.outputs()]

    def run(args: list[Any]) -> list[torch.Tensor | None]:
        args.clear()
        return [None if s.dtype is None else
                torch.empty_strided(s.shape, s.stride, dtype=s.dtype, device="cpu").zero_()
                for s in outs]

    run._boxed_call = True  # type: ignore[attr-defined]
    run.__name__ = f"trnc_{kind}_compile_only"
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


def _graph_name(opts: dict[str, Any], kind: str) -> str:
    return f"{opts['name'] + ' ' if opts['name'] else ''}{kind} graph {next(_graph_ids)}{_rank_suffix()}"


def _rank_suffix() -> str:
    """`` (rank N)`` in a torch.distributed process group, else empty: every
    rank numbers its graphs from 0, so the rank keeps their names (in
    messages, TRNC_DUMP_DIR and TRNC_PROFILE files) apart."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return ""
    return f" (rank {dist.get_rank()})"


def _finish(rec: GraphRecord, t0: float) -> None:
    """Keeps a compiled (or loaded) graph's record, counts it, logs it."""
    global _last_report, _last_compiled
    rec.compile_seconds = time.perf_counter() - t0
    with _lock:
        _records.append(rec)
        _stats[rec.kind] += 1
        if rec.report is not None:
            _stats["collectives"] += rec.report.get("collectives", 0)
            _last_report = copy.deepcopy(rec.report)
            _last_compiled = rec.compiled
    if rec.report is not None and pipeline.log_at_least("info"):
        print(_log_line(rec), file=sys.stderr, flush=True)


def _dump(opts: dict[str, Any], rec: GraphRecord) -> None:
    if opts["dump_ir"]:
        print(f"# trnc IR: {rec.name} (hash {rec.hash})\n{rec.text}", file=sys.stdout, flush=True)


def _note_mutations(kind: str, mutated: frozenset[int] | None) -> None:
    seen = getattr(_mutations, "seen", None)
    if seen is not None and kind == "inference":
        seen.append(mutated)


def _note_direct(kind: str, fn: Callable[..., Any] | None) -> None:
    """Notes, for neuron(), the direct callable of an inference graph that
    compiled (or loaded) as one program whose aot_autograd wrappers do
    nothing (``aliasing.plain_inference``), or None for any other graph."""
    direct = getattr(_mutations, "direct", None)
    if direct is not None and kind == "inference":
        direct.append(fn)


def _training_plan(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any],
                   checks: tuple[effects.Check, ...]) -> Any:
    """The ``training.TrainingPlan`` of a forward graph that trnc's autograd
    Function can run without aot_autograd's wrappers, or None (any other
    graph)."""
    if kind != "forward" or checks or opts["fallback"] or opts["compile_only"] or \
            not opts["execute"]:
        return None
    from . import training

    return training.plan_of(gm, example_inputs)


def _note_training(kind: str, fn: Callable[..., Any] | None, plan: Any) -> None:
    """Notes, for neuron(), a forward's or backward's direct runner (None:
    none) and the forward's ``training.TrainingPlan``."""
    seen = getattr(_mutations, "training", None)
    if seen is not None and kind in ("forward", "backward"):
        seen.append((kind, fn, plan))


def _direct_of(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """The ``direct`` entry of a runner (``_boxed_runner``), also inside the
    ``TrncOutputCode`` that torch's AOTAutogradCache stores."""
    return getattr(getattr(fn, "run", fn), "direct", None)


def _compile_graph(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], *, aot_cached: bool = False,
                   **_: Any) -> Callable[..., Any]:
    """One graph: serialize -> IR (import, scan, legalize, verify) -> NeuronCore
    program -> boxed callable. Records the graph and its compile report.
    aot_cached: return the callable as a ``aot_cache.TrncOutputCode`` (what
    torch's AOTAutogradCache stores; ``aot_cache.enabled`` never asks for it
    with the fallback on). With ``fallback="cpu"``, a graph trnc refuses ops
    of is partitioned (fallback.py): the refused ops run with torch, the rest
    as programs."""
    name = _graph_name(opts, kind)
    original = fallback.copy_graph(gm) if opts["fallback"] else None
    checks = effects.split_checks(gm)
    mutated = aliasing.mutated_in_graph(gm) if kind == "inference" else None
    _note_mutations(kind, mutated)
    plain = kind == "inference" and not checks and aliasing.plain_inference(gm)
    plan = _training_plan(kind, opts, gm, example_inputs, checks)
    try:
        fn = _compile_one(kind, opts, gm, example_inputs, name,
                          aot_cached=aot_cached, mutated=mutated, plain=plain, checks=checks,
                          training=plan)
        _note_direct(kind, _direct_of(fn) if plain else None)
        _note_training(kind, None if checks else _direct_of(fn), plan)
        return fn
    except errors.UnsupportedOperatorError as e:
        if original is None:
            with _lock:
                _stats["errors"] += 1
            raise
        err = e
    _note_direct(kind, None)  # torch runs the refused ops: aot_autograd's wrappers stay
    _note_training(kind, None, None)
    parts: list[GraphRecord] = []  # the subgraphs of the partition being compiled
    try:
        return fallback.compile_partitioned(
            original, err,
            lambda sub, ex, part: _compile_one(kind, opts, sub, ex, part, done=parts),
            name, kind, discard=lambda: _uncount(parts))
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise


def _uncount(recs: list[GraphRecord]) -> None:
    """Takes the graphs of ``recs`` (compiled, then given up: a fallback
    partition that is partitioned again) out of the records and the
    ``stats()`` graph counts, and empties ``recs``."""
    with _lock:
        kept = [r for r in _records if not any(r is x for x in recs)]
        _records.clear()
        _records.extend(kept)
        for rec in recs:
            _stats[rec.kind] -= 1
            if rec.report is not None:
                _stats["collectives"] -= rec.report.get("collectives", 0)
    recs.clear()


def _compile_one(kind: str, opts: dict[str, Any], gm: torch.fx.GraphModule,
                 example_inputs: Sequence[Any], name: str, *, aot_cached: bool = False,
                 mutated: frozenset[int] | None = None, plain: bool = False,
                 checks: tuple[effects.Check, ...] = (),
                 done: list[GraphRecord] | None = None,
                 training: Any = None) -> Callable[..., Any]:
    """``_compile_graph`` of one graph named ``name``, without the fallback
    (``mutated``: the inference graph's written inputs, ``plain``: its
    ``aliasing.plain_inference``, both for the cached entry; ``checks``: the
    error checks ``effects.split_checks`` took out of ``gm``; ``done``: a list
    the graph's record is appended to; ``training``: the forward's
    ``training.TrainingPlan``, for the cached entry)."""
    t0 = time.perf_counter()
    try:
        data = serialize(gm, kind, name, user_inputs=opts.get("user_inputs"))
        lowered = pipeline.lower(data, name, kind, warn=opts["warn_float64"])
        rec = GraphRecord(name=name, kind=kind, text=lowered.text(), hash=lowered.hash(),
                          summary=lowered.summary(), warnings=lowered.warnings,
                          serialized=data)
        _dump(opts, rec)
        if opts["execute"]:
            compiled, outcome = cache.compile_program(
                lowered, opts, _with_seed_example(lowered, example_inputs))
            rec.report = dict(compiled.report(), kind=kind, name=name, cache=outcome)
            rec.compiled = weakref.ref(compiled)
            names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
            opaque = _opaque_outputs(gm)
            fn = (_compile_only(compiled, name, kind) if opts["compile_only"]
                  else effects.checked(_boxed_runner(name, kind, compiled, names, opaque),
                                       checks))
            if aot_cached:  # compile_only too: the entry then runs the program
                from . import aot_cache

                fn = aot_cache.TrncOutputCode(
                    kind=kind, opts=aot_cache.stored_options(opts),
                    data=data, key=cache.key_of(compiled), names=names, opaque=opaque,
                    mutated=None if mutated is None else tuple(sorted(mutated)), plain=plain,
                    checks=checks, training=training,
                    record={"text": rec.text, "hash": rec.hash, "summary": rec.summary,
                            "warnings": rec.warnings},
                    run=fn)
        else:
            fn = _eager_for_tests(gm)
    except errors.UnsupportedOperatorError:
        raise  # counted by _compile_graph unless the fallback takes the graph
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise
    _finish(rec, t0)
    if done is not None:
        done.append(rec)
    return fn


def load_graph(oc: "aot_cache.TrncOutputCode") -> Callable[..., Any]:
    """The boxed callable of a graph that torch's AOTAutogradCache loaded
    (``TrncOutputCode.post_compile``): the artifact from trnc's cache by its
    key, or, if that entry is gone, compiled again from the stored fx.proto
    bytes. Records and counts the graph like a compile (its report's
    ``cache`` is ``"hit"`` when nothing was compiled) and issues its float64
    warning again."""
    opts, kind = oc.opts, oc.kind
    name = _graph_name(opts, kind)
    t0 = time.perf_counter()
    _note_mutations(kind, None if oc.mutated is None else frozenset(oc.mutated))
    r = oc.record
    rec = GraphRecord(name=name, kind=kind, text=r["text"], hash=r["hash"],
                      summary=r["summary"], warnings=r["warnings"], serialized=oc.data)
    if opts["warn_float64"] and rec.warnings:
        level = pipeline.user_stacklevel()
        for d in rec.warnings:
            warnings.warn(f"trnc ({name}): {d.get('message', '')}", UserWarning,
                          stacklevel=level)
    _dump(opts, rec)
    try:
        compiled, outcome = cache.load_program(oc.key) if oc.key is not None else (None, None)
        if compiled is None:  # trnc's cache lost the artifact: compile the stored bytes
            lowered = pipeline.lower(oc.data, name, kind, warn=False)
            compiled, outcome = cache.compile_program(lowered, opts, key=oc.key,
                                                      lookup=oc.key is None)
        elif cache.dumps_requested():  # the program's files, as for any cache hit
            cache.dump_hit(pipeline.lower(oc.data, name, kind, warn=False), compiled)
    except errors.TrncError:
        with _lock:
            _stats["errors"] += 1
        raise
    rec.report = dict(compiled.report(), kind=kind, name=name, cache=outcome)
    rec.compiled = weakref.ref(compiled)
    if getattr(_mutations, "compile_only", False):  # trnc precompile found the entry
        fn = _compile_only(compiled, name, kind)
        _note_direct(kind, None)
        _note_training(kind, None, None)
    else:
        checks = getattr(oc, "checks", ())
        fn = effects.checked(_boxed_runner(name, kind, compiled, oc.names, oc.opaque), checks)
        _note_direct(kind, _direct_of(fn) if getattr(oc, "plain", False) else None)
        _note_training(kind, None if checks else _direct_of(fn), getattr(oc, "training", None))
    _finish(rec, t0)
    return fn


GraphCompiler = Callable[..., Callable[..., Any]]


def make_aot_backend(graph_compiler: GraphCompiler,
                     opts: dict[str, Any] | None = None) -> Callable[..., Any]:
    """aot_autograd wired with trnc's decompositions; ``graph_compiler(kind, gm,
    example_inputs)`` is called for the forward, backward and inference graphs.

    With ``opts`` (the backend's options), a compile that ``aot_cache.enabled``
    allows goes through torch's AOTAutogradCache (aot_cache.py): then
    ``graph_compiler`` is called with ``aot_cached=True`` and returns
    ``aot_cache.TrncOutputCode``\ s, and a warm process loads the forward and
    backward without tracing."""
    from torch._functorch.aot_autograd import SerializableAOTDispatchCompiler
    from torch._inductor.output_code import OutputCode

    from . import aot_cache

    def compiler(kind: str, cached: bool) -> Callable[..., Any]:
        def fn(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kw: Any):
            if not cached:
                return graph_compiler(kind, gm, example_inputs)
            if kind != "backward":
                return graph_compiler(kind, gm, example_inputs, aot_cached=True)
            # cached, the backward compiles with the forward (aot_cache.config_patches):
            # its error is raised where it was before, at the first .backward()
            try:
                return graph_compiler(kind, gm, example_inputs, aot_cached=True)
            except errors.TrncError as e:
                return aot_cache.FailedBackward(e)

        fn.__name__ = f"trnc_{kind}_compiler"
        return SerializableAOTDispatchCompiler(OutputCode, fn) if cached else fn

    def aot_for(cached: bool) -> Callable[..., Any]:
        return _aot_autograd(fw_compiler=compiler("forward", cached),
                             bw_compiler=compiler("backward", cached),
                             inference_compiler=compiler("inference", cached),
                             decompositions=_DecompositionsOnUse() if cached
                             else decompositions())

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kw: Any):
        cached = opts is not None and aot_cache.enabled(opts, example_inputs)
        with contextlib.ExitStack() as stack:
            # The backward is traced (with the forward, as one joint graph) here.
            # torch's default traces it under the forward's ambient autocast, so the
            # backward of a region with autocast disabled inside an autocast region
            # ran in bf16. Eager's backward ops run in their inputs' dtypes, autocast
            # never applies to them: trace the backward with autocast off, as eager.
            stack.enter_context(torch._functorch.config.patch(backward_pass_autocast="off"))
            # a mode trnc's own decompositions do not cover stays whole for the fallback
            stack.enter_context(decomp.keep_unsupported(bool(opts and opts.get("fallback"))))
            for patch in aot_cache.config_patches(opts) if cached else ():
                stack.enter_context(patch)
            return aot_for(cached)(gm, example_inputs, **kw)

    return backend


def _real_inputs_only(fast: Callable[..., Any], wrapped: Callable[..., Any]) -> Callable[..., Any]:
    """``fast`` (trnc's autograd Function), except for fake tensors:
    DDP's graph splitter runs each compiled submodule on fake inputs to
    propagate shapes, which torch's wrappers (``wrapped``) handle and a
    program run cannot (it reads the data)."""
    from torch._subclasses.fake_tensor import FakeTensor

    def call(*args: Any) -> Any:
        for a in args:
            if isinstance(a, FakeTensor):
                return wrapped(*args)
        return fast(*args)

    call.__name__ = getattr(fast, "__name__", "trnc_training_call")
    return call


def _training_call(train: list[tuple[str, Any, Any]], seen: list[Any],
                   gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
    """trnc's autograd Function for one forward and one backward program
    (compiled or loaded together, the forward with a ``TrainingPlan``): the
    callable dynamo calls instead of aot_autograd's wrappers (training.py),
    or None (``TRNC_TRAINING_WRAPPERS=torch`` at compile or load keeps torch's
    wrappers, for comparisons)."""
    if seen or len(train) != 2 or [k for k, _, _ in train] != ["forward", "backward"] or \
            os.environ.get("TRNC_TRAINING_WRAPPERS") == "torch":
        return None
    (_, fw, plan), (_, bw, _) = train
    if fw is None or bw is None or plan is None or not isinstance(gm, torch.fx.GraphModule) or \
            sum(n.op == "placeholder" for n in gm.graph.nodes) != len(example_inputs) or \
            plan.n_inputs != len(example_inputs) or \
            fw.n_outputs != plan.n_outputs + plan.n_saved:
        return None
    from . import training

    layouts = list(getattr(bw, "layouts", ()))
    if len(layouts) != plan.n_saved + len(plan.tangents):
        return None
    return training.function(plan, fw, bw, layouts[plan.n_saved:], bw.n_outputs)


def _aot_autograd(**kwargs: Any) -> Callable[..., Any]:
    """torch's ``torch._dynamo.backends.common.aot_autograd(**kwargs)``, the
    same steps (the ``aot_autograd`` counters, the backward compiler and the
    compiled graph kept out of dynamo's tracing, ``aot_module_simplified``),
    without the import of ``torch._inductor.debug`` that torch's wrapper makes
    on every call for its ``TORCH_COMPILE_DEBUG`` logging: that module pulls
    in inductor's scheduler and IR, about a second of a warm start that
    otherwise never touches inductor. With ``TORCH_COMPILE_DEBUG=1``, or
    graph inputs that are lists (dynamo flattens those first), or a torch
    without these names, it is torch's wrapper itself."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo import disable
    from torch._dynamo.utils import counters
    from torch._functorch.aot_autograd import (SerializableAOTDispatchCompiler,
                                               aot_module_simplified)

    torch_wrapper = aot_autograd(**kwargs)

    def wrap_bw(fn: Callable[..., Any]) -> Callable[..., Any]:
        def bw(*args: Any, **kw: Any) -> Any:
            return disable(disable(fn, reason="do not trace backward compiler function")(
                *args, **kw), reason="do not trace generated backwards pass")

        bw._is_wrapped_bw_compiler = True  # type: ignore[attr-defined]
        return bw

    def call(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             **kw: Any) -> Callable[..., Any]:
        if kw or os.environ.get("TORCH_COMPILE_DEBUG", "0") == "1" or \
                any(isinstance(x, (list, tuple, dict)) for x in example_inputs):
            return torch_wrapper(gm, example_inputs, **kw)
        args = dict(kwargs)
        bw = args["bw_compiler"]
        if isinstance(bw, SerializableAOTDispatchCompiler):
            bw = SerializableAOTDispatchCompiler(bw.output_code_ty, wrap_bw(bw.compiler_fn))
        else:
            bw = wrap_bw(bw)
        args["bw_compiler"] = bw
        counters["aot_autograd"]["total"] += 1
        try:
            cg = aot_module_simplified(gm, example_inputs, **args)
        except Exception as e:
            from torch._dynamo.exc import TensorifyScalarRestartAnalysis

            if not isinstance(e, TensorifyScalarRestartAnalysis):
                counters["aot_autograd"]["not_ok"] += 1
            raise
        counters["aot_autograd"]["ok"] += 1
        return disable(cg, reason="do not trace AOT-compiled graph")

    return call


def neuron(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any):
    """torch.compile backend entry point (names ``neuron`` and ``trnc``)."""
    opts = _parse_options(kwargs)
    # static shapes under dynamic=None and recompile reports: see specialize.py
    from .specialize import note_compile, specialize_automatic_dynamic

    note_compile(gm, example_inputs)
    gm, example_inputs, wrap = specialize_automatic_dynamic(gm, example_inputs)
    opts["user_inputs"] = dynamo_inputs(gm)  # names inputs in error messages
    backend = make_aot_backend(
        lambda kind, g, ex, **kw: _compile_graph(kind, opts, g, ex, **kw), opts)
    outer = (getattr(_mutations, "seen", None), getattr(_mutations, "direct", None),
             getattr(_mutations, "compile_only", False), getattr(_mutations, "training", None))
    _mutations.seen, _mutations.direct, _mutations.training = [], [], []
    # a graph that the AOTAutogradCache loads in `trnc precompile` runs nothing either
    _mutations.compile_only = bool(opts["compile_only"])
    try:
        compiled = backend(gm, example_inputs)
        seen, direct, train = _mutations.seen, _mutations.direct, _mutations.training
    finally:
        (_mutations.seen, _mutations.direct, _mutations.compile_only,
         _mutations.training) = outer
    # one program that aot_autograd's wrappers would only pass through: dynamo
    # calls it directly (the per-call path: guards, input check, run)
    if len(direct) == 1 and direct[0] is not None and len(seen) == 1 and seen[0] == frozenset() \
            and isinstance(gm, torch.fx.GraphModule) and \
            sum(n.op == "placeholder" for n in gm.graph.nodes) == len(example_inputs):
        return wrap(direct[0])
    fast = _training_call(train, seen, gm, example_inputs)
    if fast is not None:
        return wrap(_real_inputs_only(fast, compiled))
    # a graph that writes to an input is recompiled for each new pattern of
    # inputs aliasing it (dynamo does not guard on aliasing): aliasing.py
    mutated = aliasing.mutated_inputs(len(example_inputs))
    if mutated is None and len(seen) == 1 and seen[0] is not None and \
            all(i < len(example_inputs) for i in seen[0]):
        mutated = seen[0]
    compiled = aliasing.guard(compiled, lambda args: backend(gm, args), example_inputs, mutated)
    return wrap(compiled)
