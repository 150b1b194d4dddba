"""The per-call path of plain training graphs: one trnc autograd.Function.

aot_autograd wraps a compiled forward/backward pair in runtime wrappers
(``torch/_functorch/_aot_autograd/runtime_wrappers.py``: input mutations,
output aliases, intermediate bases, subclasses, effect tokens, RNG state,
symints saved for the backward, tangent coercion) around its own
``CompiledFunction``. For the 8-element add they are most of a training
call. A graph none of that applies to, a *plain training graph*, is called
through :func:`function` instead: dynamo's guards, then

    forward:  ``TrncFunction.apply`` -> the forward program -> saved tensors
    backward: tangents (coerced to the traced layouts) -> the backward program

and nothing else. What makes a graph plain is read from aot_autograd's own
metadata (``ViewAndMutationMeta``, in the ``TracingContext`` while the
forward compiles) by :func:`plan_of`; every other graph keeps torch's
wrappers. The plan is stored with the forward's AOTAutogradCache entry, so a
warm process that loads the pair takes the same path.

Behaviour kept from aot_autograd's ``CompiledFunction``: outputs that do not
require grad are non-differentiable (``requires_grad=False``, no tangent);
a None tangent of a differentiable output is zeros (autograd materializes
it); saved tensors are saved with ``save_for_backward`` (so a second
backward without ``retain_graph=True`` raises autograd's error, and an
input modified in place before the backward raises autograd's version
error); a backward with ``create_graph=True`` gives gradients whose own
backward raises aot_autograd's double-backward error; a backward under
``torch.use_deterministic_algorithms(True)`` of a forward compiled without
it raises aot_autograd's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

__all__ = ["TrainingPlan", "plan_of", "function"]

DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
DETERMINISTIC = ("This compiled backward function is being run with "
                 "torch.use_deterministic_algorithms(True), but it was previously generated "
                 "during the forward function while torch.use_deterministic_algorithms(False) "
                 "was set.")


@dataclass(frozen=True)
class TrainingPlan:
    """What the trnc Function needs of aot_autograd's metadata for one
    plain forward/backward pair (pickled with the forward's cache entry)."""

    n_inputs: int                     # forward inputs (= dynamo's graph inputs)
    n_outputs: int                    # user outputs (the forward's first outputs)
    n_saved: int                      # tensors the forward saves for the backward
    non_diff: tuple[int, ...]         # user outputs that do not require grad
    tangents: tuple[int, ...]         # user outputs that get a tangent, in order
    saved_inputs: tuple[tuple[int, int], ...]  # (saved slot, input): saved as the input itself
    deterministic: bool | None        # torch.are_deterministic_algorithms_enabled() at compile


def _plain_tensor(x: Any) -> bool:
    """A tensor that is no wrapper subclass (the compiler sees fake tensors)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return isinstance(x, torch.Tensor) and not is_traceable_wrapper_subclass(x)


def plan_of(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> TrainingPlan | None:
    """The plan of the forward graph ``gm`` that aot_autograd is compiling
    (its metadata from the ``TracingContext``), or None when aot_autograd's
    runtime wrappers do something for it: input mutations, outputs that alias
    inputs or each other, intermediate bases, tensor subclasses, effect
    tokens, functionalized RNG, symints or opaque objects saved for the
    backward, backward state, inputs sharing storage, autocast, or metadata
    this torch does not have."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None)
    if meta is None:
        return None
    try:
        from torch._functorch._aot_autograd import schemas
        from torch._functorch._aot_autograd.schemas import OutputType

        if any(i.mutates_data or i.mutates_metadata or i.mutates_storage_metadata
               for i in meta.input_info):
            return None
        if meta.num_mutated_inp_runtime_indices or meta.num_intermediate_bases or \
                meta.num_unsafe_view_outputs or meta.num_outputs_aliased:
            return None
        if meta.is_rng_op_functionalized or meta.num_outputs_rng_offset or \
                getattr(meta, "num_graphsafe_rng_states", 0) or meta.tokens or \
                getattr(meta, "num_backward_tokens", 0):
            return None
        if meta.indices_of_inputs_that_requires_grad_with_mutations_in_bw:
            return None
        plain_meta = (int, getattr(schemas, "PlainTensorMeta", int))
        if not all(isinstance(m, plain_meta) for m in meta.subclass_inp_meta) or \
                not all(isinstance(m, plain_meta) for m in meta.subclass_fw_graph_out_meta):
            return None
        outs = meta.output_info
        if not outs or any(o.output_type != OutputType.non_alias or
                           not issubclass(o.raw_type, torch.Tensor) for o in outs):
            return None
        n_fwd = meta.num_forward_returns
        deterministic = meta.deterministic
    except AttributeError:  # another torch's metadata: its own wrappers
        return None
    if n_fwd != len(outs) or torch.is_autocast_enabled() or \
            torch.is_autocast_enabled("cpu"):
        return None
    if not all(_plain_tensor(x) for x in example_inputs):
        return None
    from . import cache

    groups = cache.alias_groups(example_inputs)
    if groups is None or groups != list(range(len(groups))):
        return None
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return None
    out = next((n for n in gm.graph.nodes if n.op == "output"), None)
    vals = out.args[0] if out is not None and out.args else ()
    if not isinstance(vals, (tuple, list)) or len(vals) < n_fwd:
        return None
    saved = list(vals[n_fwd:])
    # every saved value is a tensor (no symints, no opaque objects)
    if not all(isinstance(v, torch.fx.Node) and isinstance(v.meta.get("val"), torch.Tensor)
               for v in [*vals[:n_fwd], *saved]):
        return None
    index = {n: i for i, n in enumerate(placeholders)}
    return TrainingPlan(
        n_inputs=len(example_inputs), n_outputs=n_fwd, n_saved=len(saved),
        non_diff=tuple(i for i, o in enumerate(outs) if not o.requires_grad),
        tangents=tuple(i for i, o in enumerate(outs)
                       if o.requires_grad and o.requires_grad_for_backward),
        saved_inputs=tuple((s, index[v]) for s, v in enumerate(saved) if v in index),
        deterministic=deterministic)


def _c_apply(cls: type) -> Callable[..., Any] | None:
    """``torch._C._FunctionBase.apply`` bound to ``cls`` (what
    ``Function.apply`` calls when no functorch transform is active), or None
    if this torch has no such method."""
    base = getattr(torch._C, "_FunctionBase", None)
    raw = getattr(base, "__dict__", {}).get("apply")
    return raw.__get__(None, cls) if hasattr(raw, "__get__") else None


class _BackwardOnce(torch.autograd.Function):
    """The backward program run under ``create_graph=True``: its gradients
    are connected to the graph, and differentiating them raises (as
    aot_autograd's ``CompiledFunctionBackward``)."""

    @staticmethod
    def forward(ctx: Any, run: Callable[[], Any], *unused: Any) -> Any:  # noqa: ARG004
        return tuple(run())

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(DOUBLE_BACKWARD)


def function(plan: TrainingPlan, forward: Callable[..., list[Any]],
             backward: Callable[..., list[Any]],
             tangent_layouts: Sequence[tuple[torch.dtype, torch.Size, tuple[int, ...]]],
             n_backward_outputs: int) -> Callable[..., Any] | None:
    """The callable dynamo calls for a plain training graph (``plan``):
    ``forward(*inputs)`` and ``backward(*saved, *tangents)`` are the direct
    runners of the two programs (``backend._boxed_runner``),
    ``tangent_layouts`` the backward program's tangent inputs (dtype, shape,
    strides: a tangent of another layout is copied into one). None when the
    programs do not fit the plan (then torch's wrappers stay)."""
    if len(tangent_layouts) != len(plan.tangents) or n_backward_outputs != plan.n_inputs:
        return None
    n_out, non_diff, tangents = plan.n_outputs, plan.non_diff, plan.tangents
    saved_inputs, check_det = plan.saved_inputs, plan.deterministic is False
    coerce = [(i, (lay, tuple(lay[1]), tuple(lay[2]), lay[0]))
              for i, lay in zip(tangents, tangent_layouts)]
    from .backend import _empty_strided_cpu

    empty = _empty_strided_cpu()

    def tangent(t: Any, want: tuple[Any, tuple[int, ...], tuple[int, ...], torch.dtype]) -> Any:
        layout, shape, stride, dtype = want
        if t is None:
            return empty(shape, stride, dtype).zero_()
        if isinstance(t, torch.Tensor) and type(t) is torch.Tensor and t.is_cpu and \
                (t.dtype, t.shape, t.stride()) == layout:
            return t
        c = empty(shape, stride, dtype)
        c.copy_(t)
        return c

    class TrncFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            outs = forward(*inputs)
            saved = outs[n_out:]
            for s, i in saved_inputs:  # saved as the input itself (version-checked)
                saved[s] = inputs[i]
            ctx.save_for_backward(*saved)
            user = outs[:n_out]
            if non_diff:
                ctx.mark_non_differentiable(*[user[i] for i in non_diff])
            ctx._materialize_non_diff_grads = False
            return tuple(user)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if check_det and torch.are_deterministic_algorithms_enabled():
                raise RuntimeError(DETERMINISTIC)
            args = [*ctx.saved_tensors, *[tangent(grads[i], lay) for i, lay in coerce]]
            if torch.is_grad_enabled():  # create_graph=True
                return _BackwardOnce.apply(lambda: backward(*args),
                                           torch.empty(0, requires_grad=True))
            return tuple(backward(*args))

    TrncFunction.__name__ = TrncFunction.__qualname__ = "TrncFunction"
    apply = TrncFunction.apply
    # torch.autograd.Function.apply minus its Python steps for functorch
    # transforms (vmap, grad: then the full apply) and setup_context
    c_apply = _c_apply(TrncFunction)
    transforms_active = torch._C._are_functorch_transforms_active

    def call(*inputs: Any) -> list[Any]:
        if c_apply is None or transforms_active():
            return list(apply(*inputs))
        return list(c_apply(*inputs))

    call.__name__ = "trnc_training_call"
    return call
