"""Shape buckets: pad inputs to a few fixed shapes so that a static-shape
compiler compiles each of them once.

trnc compiles one NeuronCore program per input shape. A model that sees many
sequence lengths is padded up to the next of a few *bucket* lengths instead,
so that it only ever runs (and compiles, or loads precompiled from the cache)
those few programs::

    import torch, trnc.buckets as tb

    lm = MyCausalLM()                                  # forward(idx) -> logits [B, T, V]
    spec = tb.BucketSpec(
        inputs=[tb.Input("idx", ("batch", "seq"), torch.int64)],
        buckets={"batch": [1, 4], "seq": [32, 64, 128]},
        outputs=[("batch", "seq", None)])              # logits: slice dims 0 and 1 back
    model = tb.Bucketed(torch.compile(lm, backend="neuron"), spec)

    logits = model(torch.randint(0, 100, (3, 50)))    # runs the (4, 64) program
    assert logits.shape == (3, 50, 100)

Right-padding the sequence of a causal model does not change the outputs at
the real positions (no real token attends to a later one); padding the batch
adds rows that are computed and thrown away. Models whose outputs mix
positions (bidirectional attention, a loss averaged over all tokens, batch
norm) need a mask: :func:`pad` returns one, and ``pad_value`` can be a
loss's ``ignore_index``.

The same :class:`BucketSpec` drives ``trnc precompile`` (see
:mod:`trnc.precompile`), which compiles every bucket ahead of time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import torch

__all__ = ["Input", "BucketSpec", "Bucketed", "Padded", "bucket_for", "pad",
           "pad_sequences", "unpad", "BucketError"]

class BucketError(ValueError):
    """A size is larger than the largest bucket, or inputs disagree on a
    bucketed axis."""


def bucket_for(size: int, buckets: Iterable[int], *, what: str = "size") -> int:
    """The smallest bucket >= ``size``. Raises :class:`BucketError` if ``size``
    is larger than every bucket."""
    bs = sorted(int(b) for b in buckets)
    if not bs:
        raise BucketError(f"no buckets given for {what}")
    for b in bs:
        if size <= b:
            return b
    raise BucketError(f"{what} is {size}, larger than the largest bucket {bs[-1]} "
                      f"(buckets {bs}); add a larger bucket or truncate the input")


class Padded(NamedTuple):
    """Result of :func:`pad` and :func:`pad_sequences`."""

    tensor: torch.Tensor        # the padded tensor
    sizes: tuple[int, ...]      # the original size of every dim of the input
    mask: torch.Tensor          # bool, padded shape: True at real (unpadded) positions


def pad(x: torch.Tensor, buckets: Mapping[int, Iterable[int]], value: Any = 0) -> Padded:
    """Pads ``x`` at the end of each dim in ``buckets`` (dim -> bucket sizes)
    up to the dim's bucket, with ``value``. Returns the padded tensor, the
    original sizes and a bool mask of the padded shape (True where ``x`` was).

    >>> p = pad(torch.ones(3, 50), {0: [1, 4], 1: [32, 64, 128]})
    >>> p.tensor.shape, p.sizes, int(p.mask.sum())
    (torch.Size([4, 64]), (3, 50), 150)
    """
    sizes = tuple(int(s) for s in x.shape)
    target = list(sizes)
    for d, bs in buckets.items():
        d = d % x.dim() if x.dim() else d
        target[d] = bucket_for(sizes[d], bs, what=f"dim {d}")
    if tuple(target) == sizes:
        return Padded(x, sizes, torch.ones(sizes, dtype=torch.bool))
    out = torch.full(target, value, dtype=x.dtype, device=x.device)
    region = tuple(slice(0, s) for s in sizes)
    out[region] = x
    mask = torch.zeros(target, dtype=torch.bool, device=x.device)
    mask[region] = True
    return Padded(out, sizes, mask)


def pad_sequences(seqs: Sequence[torch.Tensor], buckets: Iterable[int], value: Any = 0,
                  batch_buckets: Iterable[int] | None = None) -> tuple[torch.Tensor,
                                                                       torch.Tensor,
                                                                       torch.Tensor]:
    """Stacks 1-D sequences of different lengths into ``[B, T]``: T is the
    bucket of the longest sequence, B the bucket of ``len(seqs)`` when
    ``batch_buckets`` is given. Returns ``(padded, lengths, mask)``; rows added
    for batch padding have length 0."""
    if not seqs:
        raise BucketError("pad_sequences needs at least one sequence")
    lengths = [int(s.shape[0]) for s in seqs]
    t = bucket_for(max(lengths), buckets, what="the longest sequence")
    b = len(seqs) if batch_buckets is None else bucket_for(len(seqs), batch_buckets,
                                                            what="the batch size")
    first = seqs[0]
    out = torch.full((b, t) + tuple(first.shape[1:]), value, dtype=first.dtype,
                     device=first.device)
    for i, s in enumerate(seqs):
        out[i, :s.shape[0]] = s
    lens = torch.tensor(lengths + [0] * (b - len(seqs)), dtype=torch.int64)
    mask = torch.arange(t).unsqueeze(0) < lens.unsqueeze(1)
    return out, lens, mask


def unpad(y: torch.Tensor, sizes: Mapping[int, int]) -> torch.Tensor:
    """``y`` sliced back to ``sizes`` (dim -> original size) along those dims."""
    idx = [slice(None)] * y.dim()
    for d, n in sizes.items():
        idx[d] = slice(0, n)
    return y[tuple(idx)]


@dataclass(frozen=True)
class Input:
    """One model input: its name (for messages), its dims (an int is a fixed
    size, a str names a bucketed axis of :attr:`BucketSpec.buckets`), dtype,
    the value padding uses, and for ``trnc precompile`` whether it requires
    grad. Example values in precompilation are zeros (values never change the
    compiled program)."""

    name: str
    dims: tuple[Any, ...]
    dtype: torch.dtype = torch.float32
    pad_value: Any = 0
    requires_grad: bool = False

    def shape(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        out = []
        for d in self.dims:
            if isinstance(d, str):
                if d not in sizes:
                    raise BucketError(f"input {self.name!r}: unknown bucket axis {d!r}")
                out.append(int(sizes[d]))
            else:
                out.append(int(d))
        return tuple(out)

    def example(self, sizes: Mapping[str, int]) -> torch.Tensor:
        t = torch.zeros(self.shape(sizes), dtype=self.dtype)
        if self.requires_grad and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t


@dataclass(frozen=True)
class BucketSpec:
    """The inputs of a model (in the order of its ``forward`` arguments), the
    bucket sizes of each named axis, and optionally how to slice its outputs
    back: one dims tuple per output (a str axis is sliced back to the real
    size, an int or None is left alone; a None entry leaves that output whole)."""

    inputs: Sequence[Input]
    buckets: Mapping[str, Sequence[int]]
    outputs: Sequence[Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for inp in self.inputs:
            for d in inp.dims:
                if isinstance(d, str) and d not in self.buckets:
                    raise BucketError(f"input {inp.name!r} uses axis {d!r}, which has no "
                                      f"buckets (axes: {sorted(self.buckets)})")
        for axis, bs in self.buckets.items():
            if not bs or any(int(b) <= 0 for b in bs):
                raise BucketError(f"axis {axis!r}: buckets must be positive sizes, got {bs!r}")

    @staticmethod
    def of(obj: Any) -> "BucketSpec":
        """A BucketSpec, or a dict ``{"inputs": [...], "buckets": {...},
        "outputs": ...}`` whose inputs are Input or dicts of Input's fields."""
        if isinstance(obj, BucketSpec):
            return obj
        if isinstance(obj, Mapping):
            inputs = [i if isinstance(i, Input) else Input(**{**i, "dims": tuple(i["dims"])})
                      for i in obj["inputs"]]
            return BucketSpec(inputs=inputs, buckets=dict(obj["buckets"]),
                              outputs=obj.get("outputs"))
        raise TypeError(f"expected a trnc.buckets.BucketSpec or a dict, not "
                        f"{type(obj).__name__}")

    def axes(self) -> list[str]:
        return list(self.buckets)

    def combinations(self) -> list[dict[str, int]]:
        """Every combination of bucket sizes, smallest first."""
        axes = self.axes()
        values = [sorted(int(b) for b in self.buckets[a]) for a in axes]
        return [dict(zip(axes, combo)) for combo in itertools.product(*values)]

    def example_inputs(self, sizes: Mapping[str, int]) -> list[torch.Tensor]:
        return [i.example(sizes) for i in self.inputs]

    def sizes_of(self, args: Sequence[torch.Tensor]) -> dict[str, int]:
        """The real size of every axis in ``args`` (inputs must agree)."""
        if len(args) != len(self.inputs):
            raise BucketError(f"expected {len(self.inputs)} inputs "
                              f"({', '.join(i.name for i in self.inputs)}), got {len(args)}")
        sizes: dict[str, int] = {}
        for inp, a in zip(self.inputs, args):
            if a.dim() != len(inp.dims):
                raise BucketError(f"input {inp.name!r} has {a.dim()} dims, the spec "
                                  f"{len(inp.dims)} ({inp.dims})")
            for i, d in enumerate(inp.dims):
                n = int(a.shape[i])
                if isinstance(d, str):
                    if sizes.setdefault(d, n) != n:
                        raise BucketError(f"input {inp.name!r} dim {i} (axis {d!r}) is {n}, "
                                          f"another input has {sizes[d]}")
                elif d is not None and int(d) != n:
                    raise BucketError(f"input {inp.name!r} dim {i} is {n}, the spec fixes {d}")
        return sizes

    def bucket(self, sizes: Mapping[str, int]) -> dict[str, int]:
        return {a: bucket_for(n, self.buckets[a], what=f"axis {a!r}")
                for a, n in sizes.items()}

    def describe(self, sizes: Mapping[str, int]) -> str:
        return " ".join(f"{a}={sizes[a]}" for a in self.axes() if a in sizes)


class Bucketed(torch.nn.Module):
    """Wraps a (compiled) model: pads every input up to its bucket along the
    spec's axes (with each input's ``pad_value``), runs the model and slices
    the outputs back along the axes given in ``spec.outputs``. The model only
    ever sees bucket shapes, so it compiles (or loads) one program per bucket."""

    def __init__(self, model: Any, spec: BucketSpec | Mapping[str, Any]) -> None:
        super().__init__()
        self.model = model
        self.spec = BucketSpec.of(spec)

    def pad_inputs(self, *args: torch.Tensor) -> tuple[list[torch.Tensor], dict[str, int]]:
        """The padded inputs and the real size of every axis."""
        spec = self.spec
        real = spec.sizes_of(args)
        target = spec.bucket(real)
        padded = []
        for inp, a in zip(spec.inputs, args):
            shape = inp.shape(target)
            if tuple(a.shape) == shape:
                padded.append(a)
                continue
            out = a.new_full(shape, inp.pad_value)
            out[tuple(slice(0, n) for n in a.shape)] = a
            padded.append(out)
        return padded, real

    def unpad_outputs(self, out: Any, real: Mapping[str, int]) -> Any:
        dims_spec = self.spec.outputs
        if dims_spec is None:
            return out
        single = isinstance(out, torch.Tensor)
        outs = [out] if single else list(out)
        specs = list(dims_spec)
        if single and specs and not isinstance(specs[0], (tuple, list, type(None))):
            specs = [tuple(specs)]          # outputs=("batch", "seq", None)
        if len(specs) != len(outs):
            raise BucketError(f"spec.outputs describes {len(specs)} outputs, the model "
                              f"returned {len(outs)}")
        res = []
        for o, dims in zip(outs, specs):
            if dims is None or not isinstance(o, torch.Tensor):
                res.append(o)
                continue
            res.append(unpad(o, {i: real[d] for i, d in enumerate(dims)
                                 if isinstance(d, str) and d in real}))
        if single:
            return res[0]
        return type(out)(res) if isinstance(out, tuple) else res

    def forward(self, *args: torch.Tensor) -> Any:
        padded, real = self.pad_inputs(*args)
        return self.unpad_outputs(self.model(*padded), real)
