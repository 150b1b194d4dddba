"""Inputs that alias each other differently from the compile.

aot_autograd functionalizes a graph for the aliasing its example inputs had:
with ``def f(x, y): x.mul_(2); return x + y`` compiled for two separate
tensors, the program reads ``y`` before the write to ``x``. Dynamo does not
guard on aliasing, so a later call with overlapping views of one base
(``f(b[:4], b[2:6])``) would run that program and return a wrong value
(``[2, 5, 8, 11]`` where eager gives ``[4, 8, 8, 11]``). Aliasing changes a
result only when the graph writes to an input, so the compiled callable of
such a graph compares, on every call, which of its tensor inputs share
storage with a mutated input — with that storage's size and each such
input's offset and strides — against the compile's; on a different pattern
it compiles the graph again through aot_autograd with the call's own tensors
(which then handles the aliasing: synthetic bases) and keeps one program per
pattern, at most MAX_PATTERNS (then a clear error). Graphs that mutate no
input pay nothing.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Sequence

import torch

from . import errors

__all__ = ["mutated_inputs", "mutated_in_graph", "plain_inference", "guard", "MAX_PATTERNS"]

Pattern = tuple[tuple[Any, ...], ...]
MAX_PATTERNS = 16   # programs per compiled function for different input aliasing


def mutated_inputs(n_inputs: int) -> frozenset[int] | None:
    """Indices of the graph inputs that the just-compiled graph writes to (data
    or metadata), from aot_autograd's view-and-mutation metadata in the
    current tracing context. None when that metadata is not available or does
    not describe ``n_inputs`` inputs (the caller then checks every input)."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    info = getattr(meta, "input_info", None)
    if info is None or len(info) != n_inputs:
        return None
    return frozenset(i for i, a in enumerate(info)
                     if a.mutates_data or a.mutates_metadata or a.mutates_storage_metadata)


def mutated_in_graph(gm: torch.fx.GraphModule) -> frozenset[int] | None:
    """Indices of the inputs an aot_autograd inference or forward graph
    writes to, from the descriptors aot_autograd puts on its placeholders and
    output node (an input mutation is an ``InputMutationAOTOutput``); None when
    they do not say (a placeholder that is not a plain input: a parameter
    aot_autograd lifted, a synthetic base, a subclass). For inference graphs,
    whose ``fw_metadata`` the tracing context does not carry."""
    from torch._functorch._aot_autograd.descriptors import InputMutationAOTOutput, PlainAOTInput

    nodes = list(gm.graph.nodes)
    descs = [n.meta.get("desc") for n in nodes if n.op == "placeholder"]
    outs = [n for n in nodes if n.op == "output"]
    if not outs or not all(isinstance(d, PlainAOTInput) for d in descs):
        return None
    if sorted(d.idx for d in descs) != list(range(len(descs))):
        return None
    out_descs = outs[0].meta.get("desc")
    if not isinstance(out_descs, (list, tuple)):
        return None
    mutated = set()
    for d in out_descs:
        if isinstance(d, InputMutationAOTOutput):
            if not isinstance(d.mutated_input, PlainAOTInput):
                return None
            mutated.add(d.mutated_input.idx)
    return frozenset(mutated)


def _returns_alias(node: torch.fx.Node) -> bool:
    """Whether the op of ``node`` may return a view of (or the same tensor as)
    one of its arguments: a schema return with alias info, or any target that
    is not an aten OpOverload (unknown: assumed so). A ``getitem`` asks the op
    whose result it indexes."""
    import operator

    if node.target is operator.getitem and node.args and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None:
        return True
    return any(r.alias_info is not None for r in schema.returns)


def plain_inference(gm: torch.fx.GraphModule) -> bool:
    """Whether aot_autograd's runtime wrappers do nothing for this inference
    graph, so that its compiled program can be called directly: every
    placeholder is plain input i in order (no lifted parameter, synthetic
    base, effect token or subclass part), every output is plain user output
    i (no input mutation, no intermediate base), each output is a distinct
    tensor computed by an op that returns a fresh tensor (not an input, not a
    view: nothing for the wrappers to regenerate as an alias), and no node
    writes to its arguments. Anything else (and any graph aot_autograd's
    descriptors do not describe) is False: the wrappers stay."""
    from torch._functorch._aot_autograd.descriptors import PlainAOTInput, PlainAOTOutput

    nodes = list(gm.graph.nodes)
    descs = [n.meta.get("desc") for n in nodes if n.op == "placeholder"]
    if not all(isinstance(d, PlainAOTInput) and d.idx == i for i, d in enumerate(descs)):
        return False
    outs = [n for n in nodes if n.op == "output"]
    if len(outs) != 1 or not outs[0].args:
        return False
    vals, out_descs = outs[0].args[0], outs[0].meta.get("desc")
    if not isinstance(vals, (list, tuple)) or not isinstance(out_descs, (list, tuple)) or \
            len(vals) != len(out_descs):
        return False
    if not all(isinstance(d, PlainAOTOutput) and d.idx == i for i, d in enumerate(out_descs)):
        return False
    if len({id(v) for v in vals}) != len(vals):
        return False
    for v in vals:
        if not isinstance(v, torch.fx.Node) or v.op != "call_function" or _returns_alias(v):
            return False
        if type(v.meta.get("val")).__name__ != "FakeTensor":
            return False
    return not any(getattr(getattr(n.target, "_schema", None), "is_mutable", False)
                   for n in nodes if n.op == "call_function")


def _storage_id(t: Any) -> int | None:
    """The identity of t's storage (its StorageImpl), or None for anything
    without one (not a tensor, or a tensor without storage)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001  (tensors without storage alias nothing)
        return None


def pattern(args: Sequence[Any], mutated: frozenset[int] | None) -> Pattern:
    """For each mutated input (every input when ``mutated`` is None) that
    shares its storage with other inputs: the size of that storage and, for
    each input in it, its index, storage offset and strides. aot_autograd
    bakes these into the program it compiles for aliased inputs (a synthetic
    base with each view's offset), so any change needs another program;
    inputs that share storage with no other input key as (). One storage
    lookup per input; the key is built only when two inputs share one."""
    ids = [_storage_id(t) for t in args]
    which = range(len(args)) if mutated is None else sorted(mutated)
    present = [i for i in ids if i is not None]
    if len(set(present)) == len(present):  # the common case: no two inputs share a storage
        return ((),) * len(which)
    out = []
    for i in which:
        s = ids[i] if i < len(ids) else None
        group = [j for j, sj in enumerate(ids) if s is not None and sj == s]
        if len(group) < 2:
            out.append(())
            continue
        out.append((args[i].untyped_storage().nbytes(),) + tuple(
            (j, args[j].storage_offset(), tuple(args[j].stride())) for j in group))
    return tuple(out)


def guard(compiled: Callable[..., Any], recompile: Callable[[list[Any]], Callable[..., Any]],
          example_inputs: Sequence[Any], mutated: frozenset[int] | None) -> Callable[..., Any]:
    """``compiled`` wrapped so that a call whose inputs alias a mutated input
    differently from ``example_inputs`` runs ``recompile(args)`` (once per
    pattern) instead. Returned unchanged when the graph mutates no input."""
    if mutated is not None and not mutated:
        return compiled
    programs: dict[Pattern, Callable[..., Any]] = {pattern(example_inputs, mutated): compiled}
    lock = threading.Lock()

    @functools.wraps(compiled)
    def call(*args: Any) -> Any:
        # dynamo calls unboxed (tensors) or, through flatten_graph_inputs,
        # boxed (one list); the call is passed on as it came
        flat = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        key = pattern(flat, mutated)
        fn = programs.get(key)
        if fn is None:
            with lock:
                fn = programs.get(key)
                if fn is None:
                    if len(programs) >= MAX_PATTERNS:
                        raise errors.InputMismatchError(
                            f"trnc: this compiled function writes to an input, and its inputs "
                            f"have aliased each other in more than {MAX_PATTERNS} different ways "
                            "(views of one tensor at changing offsets); each way needs its own "
                            "program. Pass separate tensors (clone the views) to the compiled "
                            "function.")
                    fn = recompile(list(flat))
                    programs[key] = fn
        return fn(*args)

    return call
