"""Static shapes under dynamo's default ``dynamic=None``, and recompile reports.

``torch.compile(model)`` with trnc as the default backend
(``torch.compiler.set_default_backend("neuron")``) leaves ``dynamic`` at
``None``. Dynamo then compiles the first call with static shapes, and when a
later call changes a dim it retraces the frame with that dim symbolic
(``torch._dynamo.config.automatic_dynamic_shapes``, decided per input in
``torch/_dynamo/variables/builder.py``, ``_automatic_dynamic``). trnc compiles
static shapes only, and torch 2.13 gives a backend no attribute to opt out of
automatic dynamic shapes (``_TorchCompileWrapper`` in ``torch/__init__.py``
hides the backend function from dynamo's ``backend_ctx_ctor`` lookup in
``torch/_dynamo/eval_frame.py``).

What trnc does instead is what inductor does whenever its code needs a
concrete value: it *guards* on it. Before aot_autograd runs, every symbol of a
graph that dynamo made symbolic on its own is specialized to the value of the
current call with ``torch.fx.experimental.symbolic_shapes.guard_int``. That
records ``s0 == 8`` in the frame's ``ShapeEnv``; dynamo builds the frame's
guards after the backend returns (``torch/_dynamo/convert_frame.py``,
``CheckFunctionManager``), so the new cache entry only accepts that exact
shape, and aot_autograd, which traces with the same ``ShapeEnv``, sees
concrete sizes. Each new shape is therefore one static compile and one dynamo
cache entry, exactly as with ``dynamic=False``; a shape seen before is served
by its cache entry (and, in a new process, by trnc's artifact cache).

What stays an error (``trnc.DynamicShapeError``): ``torch.compile(...,
dynamic=True)`` (dynamo sets ``config.assume_static_by_default = False`` while
it compiles) and dims the user marked with ``torch._dynamo.mark_dynamic``:
there the user asked for one program for many shapes, which trnc cannot give.

Dynamo compiles at most ``torch._dynamo.config.recompile_limit`` (default 8,
or ``torch.compile(..., recompile_limit=N)``) versions of one function; later
new shapes then run eagerly with torch after dynamo's own warning. trnc warns
when it compiles the last version dynamo allows;
``torch._dynamo.config.fail_on_recompile_limit_hit = True`` (torch's switch)
turns the fallback into an error instead.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import warnings
from typing import Any, Callable, Sequence

import torch

from . import pipeline

__all__ = ["specialize_automatic_dynamic", "note_compile"]

_lock = threading.Lock()
# frame_id -> input shapes of its latest compile: {input name: shape}
_frames: "collections.OrderedDict[int, dict[str, tuple[int, ...]]]" = collections.OrderedDict()
_MAX_FRAMES = 256


def _source_name(node: torch.fx.Node) -> str:
    ga = node.meta.get("grapharg")
    src = getattr(ga, "source", None)
    if src is not None:
        name = getattr(src, "name", None)
        try:
            name = name() if callable(name) else name
        except Exception:  # noqa: BLE001
            name = None
        if isinstance(name, str) and name:
            return _pretty(name)
    return node.name


def _pretty(source: str) -> str:
    """dynamo source names to user names: "L['idx']" -> "idx",
    "L['args'][0]" -> "args[0]", "L['self']._modules['fc']._parameters['weight']"
    -> "self.fc.weight"."""
    import re

    s = re.sub(r"^L\['([^']+)'\]", r"\1", source)
    s = re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", s)
    return s


def _example_value(node: torch.fx.Node) -> Any:
    v = node.meta.get("example_value")
    return v if v is not None else node.meta.get("val")


def _symbolic(v: Any) -> bool:
    if isinstance(v, torch.SymInt):
        return True
    if isinstance(v, torch.Tensor):
        try:
            dims = list(v.shape) + list(v.stride()) + [v.storage_offset()]
        except Exception:  # noqa: BLE001
            return False
        return any(isinstance(d, torch.SymInt) for d in dims)
    return False


def _marked_dynamic(t: Any) -> bool:
    return bool(getattr(t, "_dynamo_dynamic_indices", None)
                or getattr(t, "_dynamo_unbacked_indices", None))


def _current_function() -> str:
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        code = tx.f_code
        torch_dir = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
        if os.path.abspath(code.co_filename).startswith(torch_dir):
            # dynamo's wrap_inline frame around a module whose forward is torch's
            fn = getattr(tx, "f_locals", {}).get("fn")
            if isinstance(fn, torch.nn.Module):
                return f"{type(fn).__name__}.forward"
            if fn is not None and hasattr(fn, "__qualname__"):
                return f"'{fn.__qualname__}'"
        return f"'{code.co_name}' ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    except Exception:  # noqa: BLE001
        return "the compiled function"


def _positional_names() -> list[str]:
    """Parameter names of the compiled module's forward (dynamo's sources for
    ``model(x)`` are ``args[0]``...), or []."""
    try:
        import inspect

        from torch._dynamo.symbolic_convert import InstructionTranslator

        fn = getattr(InstructionTranslator.current_tx(), "f_locals", {}).get("fn")
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        return [p.name for p in inspect.signature(target).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except Exception:  # noqa: BLE001
        return []


def _concrete_shapes(gm: torch.fx.GraphModule,
                     example_inputs: Sequence[Any]) -> dict[str, tuple[int, ...]]:
    import re

    shapes: dict[str, tuple[int, ...]] = {}
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    params = _positional_names()

    def user_name(name: str) -> str:
        m = re.match(r"^args\[(\d+)\]", name)
        if m and int(m.group(1)) < len(params):
            return params[int(m.group(1))] + name[m.end():]
        return name

    for node, ex in zip(phs, example_inputs):
        if isinstance(ex, torch.Tensor):
            try:
                shapes[user_name(_source_name(node))] = tuple(int(d) for d in ex.shape)
            except Exception:  # noqa: BLE001
                pass
    return shapes


def specialize_automatic_dynamic(
        gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
) -> tuple[torch.fx.GraphModule, list[Any], Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """Specializes the symbols dynamo introduced by automatic dynamic shapes.

    Returns ``(gm, example_inputs, wrap)``: the graph with its SymInt
    placeholders replaced by their (now guarded) values and removed, the
    matching example inputs, and ``wrap(compiled)`` which adapts the compiled
    callable to dynamo's original argument list. A graph without symbols, one
    compiled with ``dynamic=True`` and one with ``mark_dynamic`` dims is
    returned unchanged (trnc then raises ``DynamicShapeError`` for the latter
    two)."""
    identity: Callable[[Callable[..., Any]], Callable[..., Any]] = lambda fn: fn
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = [_example_value(n) for n in phs]
    if not any(_symbolic(v) for v in values) and not any(
            isinstance(e, torch.SymInt) for e in example_inputs):
        return gm, list(example_inputs), identity
    if not torch._dynamo.config.assume_static_by_default:   # dynamic=True
        return gm, list(example_inputs), identity
    if any(_marked_dynamic(e) for e in example_inputs):      # torch._dynamo.mark_dynamic
        return gm, list(example_inputs), identity
    if len(phs) != len(example_inputs) or any(
            isinstance(e, (list, tuple, dict)) for e in example_inputs):
        return gm, list(example_inputs), identity

    from torch.fx.experimental.symbolic_shapes import guard_int

    # work on a copy: gm.graph is dynamo's own OutputGraph graph, from whose
    # placeholders it generates the call of the compiled function
    # (keeping what aot_autograd reads of a dynamo graph, see "Note [Assumption
    # on Dynamo Metadata]" in torch/_functorch/_aot_autograd/frontend_utils.py)
    graph = torch.fx.Graph()
    val_map: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.output(graph.graph_copy(gm.graph, val_map))
    copied = torch.fx.GraphModule(gm, graph)
    copied.meta = dict(getattr(gm, "meta", {}))
    if hasattr(gm, "_param_name_to_source"):
        copied._param_name_to_source = gm._param_name_to_source  # type: ignore[attr-defined]
    for old, new in val_map.items():
        if hasattr(old, "_dynamo_source"):
            new._dynamo_source = old._dynamo_source  # type: ignore[attr-defined]
    gm = copied
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    changed: list[str] = []
    try:
        for node, v in zip(phs, values):
            if isinstance(v, torch.Tensor) and _symbolic(v):
                dims = [(i, d) for i, d in enumerate(v.shape) if isinstance(d, torch.SymInt)]
                for i, d in dims:
                    changed.append(f"{_source_name(node)} dim {i} = {guard_int(d)}")
                for d in list(v.stride()) + [v.storage_offset()]:
                    if isinstance(d, torch.SymInt):
                        guard_int(d)
        drop: list[int] = []
        for pos, (node, v, ex) in enumerate(zip(phs, values, example_inputs)):
            sym = v if isinstance(v, torch.SymInt) else ex if isinstance(ex, torch.SymInt) else None
            if sym is None:
                continue
            value = guard_int(sym)
            for user in list(node.users):
                user.args = torch.fx.node.map_arg(user.args, lambda a: value if a is node else a)
                user.kwargs = torch.fx.node.map_arg(user.kwargs,
                                                    lambda a: value if a is node else a)
            gm.graph.erase_node(node)
            drop.append(pos)
    except Exception:  # noqa: BLE001  (unbacked or constrained: let trnc report the symbol)
        return gm, list(example_inputs), identity
    gm.recompile()
    if pipeline.log_at_least("debug") and changed:
        print(f"trnc: {_current_function()}: dynamo made {', '.join(changed)} symbolic "
              "(automatic dynamic shapes); trnc compiles this shape as a static program",
              file=sys.stderr, flush=True)
    if not drop:
        return gm, list(example_inputs), identity
    dropped = frozenset(drop)
    kept = [e for i, e in enumerate(example_inputs) if i not in dropped]

    def wrap(compiled: Callable[..., Any]) -> Callable[..., Any]:
        # dynamo calls a backend's callable unboxed, compiled_fn(*args)
        # (torch/_dynamo/backends/common.py and utils.flatten_graph_inputs)
        def run(*args: Any) -> Any:
            return compiled(*[a for i, a in enumerate(args) if i not in dropped])

        return run

    return gm, kept, wrap


def note_compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Called once per dynamo graph: with ``TRNC_LOG=info`` names the inputs and
    dims that changed since the frame's previous compile, and warns when this
    is the last compile dynamo's recompile limit allows for the frame."""
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001
        cid = None
    frame = getattr(cid, "frame_id", None)
    nth = getattr(cid, "frame_compile_id", None)
    if frame is None or nth is None:
        return
    shapes = _concrete_shapes(gm, example_inputs)
    with _lock:
        prev = _frames.get(frame)
        _frames[frame] = shapes
        _frames.move_to_end(frame)
        while len(_frames) > _MAX_FRAMES:
            _frames.popitem(last=False)
    if nth > 0 and pipeline.log_at_least("info"):
        diffs = []
        for name, shape in shapes.items():
            old = (prev or {}).get(name)
            if old is None or old == shape:
                continue
            if len(old) != len(shape):
                diffs.append(f"{name} {list(old)} -> {list(shape)}")
                continue
            diffs += [f"{name} dim {i}: {a} -> {b}"
                      for i, (a, b) in enumerate(zip(old, shape)) if a != b]
        what = "; ".join(diffs) if diffs else "a guard other than input shapes failed"
        print(f"trnc: recompiling {_current_function()} (dynamo compile {nth + 1} of this "
              f"frame): {what}", file=sys.stderr, flush=True)
    limit = _recompile_limit()
    if limit and nth + 1 == limit:
        warnings.warn(
            f"trnc: {_current_function()} is now compiled for {limit} different input "
            f"signatures, torch._dynamo.config.recompile_limit ({limit}): dynamo compiles no "
            "more versions of it, and calls with yet another shape will run eagerly with "
            "torch, not on the NeuronCore (dynamo warns 'hit config.recompile_limit' when that "
            "happens). Pad inputs to a few shape buckets (trnc.buckets), raise the limit "
            "(torch.compile(..., recompile_limit=N)), or set "
            "torch._dynamo.config.fail_on_recompile_limit_hit = True to make it an error.",
            UserWarning, stacklevel=2)


def _recompile_limit() -> int:
    try:
        return int(torch._dynamo.config.recompile_limit)
    except Exception:  # noqa: BLE001
        return 0


