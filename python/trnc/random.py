"""trnc's random stream: dropout, ``rand`` and ``bernoulli`` on the NeuronCore.

NeuronCore has no random-number instruction in trnc's ISA model, and its
engines compute through an fp32 datapath (no exact 32x32->64-bit integer
multiply to emulate a counter-based generator with). So the random *bits* are
made on the host and the *decisions* on the device:

* ``functionalize(gm)`` rewrites a forward (or inference) FX graph before it is
  serialized: every random op gets a new graph input, a float32 tensor of
  uniforms in [0, 1) of the op's shape (placeholders ``trnc_rng_<k>``,
  appended after the graph's own inputs), and becomes plain elementwise ops
  on it that the program runs on VectorE:

  - ``native_dropout(x, p, train)`` -> ``keep = u < 1 - p``;
    ``out = where(keep, x * (1 / (1 - p)), 0)``; ``keep`` is the mask output,
    which aot_autograd saves for the backward (``native_dropout_backward(grad,
    mask, scale)`` becomes ``where(mask, grad * scale, 0)``), so backward
    reuses the forward's mask and never draws;
  - ``rand(size)`` -> ``u`` (cast to the requested dtype);
  - ``bernoulli(x)`` -> ``u < x``; ``bernoulli.p(x, p)`` -> ``u < p``.

* At each call of the compiled graph, ``RandomInputs.draw()`` takes **one**
  64-bit seed from ``torch.default_generator`` (``torch.randint`` of one int64
  in [0, 2**63)): ``torch.manual_seed(s)`` therefore reproduces every mask of
  a run, and eager random ops before and after a compiled call see the
  generator advanced by exactly one draw per call that has random ops (calls
  of graphs without random ops draw nothing). The uniforms are
  Philox4x32-10 (Salmon et al., SC'11; the Random123 reference
  algorithm) with key = the seed's two 32-bit halves and counter = (block lo,
  block hi, 0, 0): the random inputs of one call are consecutive ranges of
  that one stream, each starting at the next unused 128-bit block (the
  per-call offset trnc advances), so two dropouts of one graph never share
  bits. Each 32-bit word becomes ``(w >> 8) * 2**-24``, exact in float32.

Why not on the device: a faithful Philox needs a 32x32->64-bit multiply that
the modelled engines do not have; an approximate device generator would be a
different generator on every target. Host uniforms cost one extra input DMA
of 4 bytes per random element, which the cost model charges.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

__all__ = ["philox4x32_10", "uniform", "functionalize", "RandomInputs"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57          # Philox multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85          # Weyl key increments
_MASK = 0xFFFFFFFF


def _philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit values."""
    k0 = np.uint64(k0)
    k1 = np.uint64(k1)
    m0, m1, mask, s32 = np.uint64(_M0), np.uint64(_M1), np.uint64(_MASK), np.uint64(32)
    for r in range(10):
        p0 = c0 * m0
        p1 = c2 * m1
        c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ k0), (p1 & mask), ((p0 >> s32) ^ c3 ^ k1), (p0 & mask)
        if r < 9:
            k0 = (k0 + np.uint64(_W0)) & mask
            k1 = (k1 + np.uint64(_W1)) & mask
    return c0, c1, c2, c3


def philox4x32_10(counter: Sequence[int], key: Sequence[int]) -> list[int]:
    """One Philox4x32-10 block: 4 counter words, 2 key words -> 4 words."""
    c = [np.array([v & _MASK], dtype=np.uint64) for v in counter]
    out = _philox(*c, key[0] & _MASK, key[1] & _MASK)
    return [int(w[0]) for w in out]


def uniform(seed: int, offset_blocks: int, n: int) -> tuple[np.ndarray, int]:
    """n float32 uniforms in [0, 1) from the stream of `seed`, starting at
    128-bit block `offset_blocks`. Returns them and the next unused block."""
    nb = (n + 3) // 4
    blocks = np.arange(offset_blocks, offset_blocks + nb, dtype=np.uint64)
    lo = blocks & np.uint64(_MASK)
    hi = blocks >> np.uint64(32)
    zero = np.zeros(nb, dtype=np.uint64)
    words = _philox(lo, hi, zero, zero.copy(), seed & _MASK, (seed >> 32) & _MASK)
    w = np.stack(words, axis=1).reshape(-1)[:n]
    u = (w >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    return u, offset_blocks + nb


@dataclass(frozen=True)
class RandomInputs:
    """The random inputs a rewritten graph takes after its own inputs."""

    shapes: tuple[tuple[int, ...], ...]

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def draw(self) -> list[torch.Tensor]:
        """One seed from torch.default_generator, then one uniform tensor per
        random input (consecutive ranges of the seed's stream)."""
        seed = int(torch.randint(0, 2 ** 63 - 1, (1,), dtype=torch.int64).item())
        out, off = [], 0
        for shape in self.shapes:
            n = 1
            for d in shape:
                n *= d
            u, off = uniform(seed, off, n)
            out.append(torch.from_numpy(u).reshape(shape))
        return out

    def examples(self) -> list[torch.Tensor]:
        """Stand-ins for compile-time example inputs (never read)."""
        return [torch.zeros(s, dtype=torch.float32) for s in self.shapes]


_DROPOUT = "aten.native_dropout.default"
_RAND = "aten.rand.default"
_BERNOULLI = ("aten.bernoulli.default", "aten.bernoulli.p")
_TARGETS = (_DROPOUT, _RAND) + _BERNOULLI


def _fake_mode(gm: torch.fx.GraphModule):
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor) and hasattr(v, "fake_mode"):
            return v.fake_mode
    from torch._guards import detect_fake_mode

    return detect_fake_mode()


def _arg(node: torch.fx.Node, i: int, name: str, default: Any) -> Any:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def functionalize(gm: torch.fx.GraphModule) -> RandomInputs:
    """Rewrites gm's random ops in place (see the module docstring); returns
    the random inputs the graph now takes after its own. No random op: gm is
    untouched and the result is falsy."""
    graph = gm.graph
    for node in [n for n in graph.nodes if n.op == "call_function"
                 and str(n.target) == "aten.native_dropout_backward.default"]:
        # grad * mask * scale as eager: where(mask, grad * scale, 0) (the
        # mask is the forward's, saved by aot_autograd)
        with graph.inserting_before(node):
            grad, mask, scale = node.args[0], node.args[1], float(node.args[2])
            mode = _fake_mode(gm)
            masked = graph.call_function(torch.ops.aten.mul.Tensor, (grad, scale))
            res = graph.call_function(torch.ops.aten.where.self, (mask, masked, 0.0))
            with mode:
                masked.meta["val"] = grad.meta["val"] * scale
                res.meta["val"] = torch.where(mask.meta["val"], masked.meta["val"], 0.0)
            for m in (masked, res):
                for k in ("stack_trace", "nn_module_stack"):
                    if k in node.meta:
                        m.meta[k] = node.meta[k]
        node.replace_all_uses_with(res)
        graph.erase_node(node)
        gm.recompile()
    randoms = [n for n in graph.nodes
               if n.op == "call_function" and str(n.target) in _TARGETS]
    if not randoms:
        return RandomInputs(())
    mode = _fake_mode(gm)
    aten = torch.ops.aten
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    last = placeholders[-1] if placeholders else None
    shapes: list[tuple[int, ...]] = []

    def call(target, args, like=None, meta_fn=None):
        node = graph.call_function(target, args)
        fargs = tuple(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args)
        with mode:
            node.meta["val"] = (meta_fn or target)(*fargs)
        if like is not None:
            for k in ("stack_trace", "nn_module_stack", "source_fn_stack"):
                if k in like.meta:
                    node.meta[k] = like.meta[k]
        return node

    for k, node in enumerate(randoms):
        val = node.meta["val"]
        shape = tuple(int(d) for d in (val[0] if isinstance(val, (tuple, list)) else val).shape)
        # the uniforms input, after the graph's own inputs (and earlier ones)
        if last is None:
            ctx = graph.inserting_before(next(iter(graph.nodes)))
        else:
            ctx = graph.inserting_after(last)
        with ctx:
            u = graph.placeholder(f"trnc_rng_{k}")
        with mode:
            u.meta["val"] = torch.empty(shape, dtype=torch.float32)
        last = u
        shapes.append(shape)
        target = str(node.target)
        with graph.inserting_before(node):
            if target == _DROPOUT:
                x = node.args[0]
                p = float(_arg(node, 1, "p", 0.5))
                train = _arg(node, 2, "train", True)
                if train is False or p == 0.0:
                    keep, scale = call(aten.ge.Scalar, (u, 0.0), node), 1.0   # all kept
                elif p >= 1.0:
                    keep, scale = call(aten.lt.Scalar, (u, 0.0), node), 0.0   # all dropped
                else:
                    keep, scale = call(aten.lt.Scalar, (u, 1.0 - p), node), 1.0 / (1.0 - p)
                # eager: x * mask * scale; kept: x * scale, dropped: 0
                scaled = call(aten.mul.Tensor, (x, scale), node)
                out = call(aten.where.self, (keep, scaled, 0.0), node, meta_fn=torch.where)
                for user in list(node.users):
                    if user.op == "call_function" and user.target is operator.getitem:
                        user.replace_all_uses_with(out if user.args[1] == 0 else keep)
                        graph.erase_node(user)
                    else:
                        raise NotImplementedError(f"trnc: unexpected use of {node}: {user}")
            elif target == _RAND:
                dt = node.kwargs.get("dtype") or torch.get_default_dtype()
                res = u if dt == torch.float32 else call(
                    aten._to_copy.default, (u,), node)
                if res is not u:
                    res.kwargs = {"dtype": dt}
                    with mode:
                        res.meta["val"] = u.meta["val"].to(dt)
                node.replace_all_uses_with(res)
            else:  # bernoulli
                x = node.args[0]
                if target == "aten.bernoulli.p":
                    b = call(aten.lt.Scalar, (u, float(_arg(node, 1, "p", 0.5))), node)
                else:
                    b = call(aten.lt.Tensor, (u, x), node)
                res = call(aten._to_copy.default, (b,), node)
                res.kwargs = {"dtype": val.dtype}
                with mode:
                    res.meta["val"] = b.meta["val"].to(val.dtype)
                node.replace_all_uses_with(res)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return RandomInputs(tuple(shapes))
