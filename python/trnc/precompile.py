"""``trnc precompile``: compile every shape bucket of a model into the artifact
cache before deployment.

    trnc precompile mypkg.models:buckets --train --jobs 4
    trnc cache export buckets.trnc          # ship this file

``mypkg.models:buckets`` (or ``path/to/file.py:buckets``) is a function with
no arguments that returns ``(model, spec)``: the ``torch.nn.Module`` and a
:class:`trnc.buckets.BucketSpec` (or the equivalent dict) naming the model's
inputs, their dtypes and dims, and the bucket sizes of each named axis.

For every combination of bucket sizes, precompile calls
``torch.compile(model, backend="neuron", dynamic=False)`` on zero-filled
inputs of that shape, in inference mode (``model.eval()``, ``torch.no_grad()``:
the inference graph) or with ``--train`` (``model.train()``, forward and
backward graphs). The backend runs in its compile-only mode
(``options={"compile_only": True}``, which nothing else sets): each graph is
compiled to a NeuronCore program and stored in the cache, but the program is
not run on the simulator; the compiled callables return zeros of the right
shapes, dtypes and strides so the backward can be compiled from the forward's
outputs. Cache keys do not depend on that option, so a later process that
calls the model with the same shapes, dtypes, options (``--target``,
``--autocast-bf16``) and trnc version finds every program in the cache and
compiles nothing.

``--jobs N`` compiles buckets in N worker processes (spawned; each imports
the factory once). The cache needs no locks: entries are written to a
temporary file and renamed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

__all__ = ["BucketResult", "load_factory", "compile_bucket", "precompile", "format_table",
           "add_subparser"]


@dataclass
class BucketResult:
    """What precompiling one bucket did."""

    sizes: dict[str, int]
    label: str = ""
    graphs: dict[str, int] = field(default_factory=dict)   # kind -> count
    seconds: float = 0.0            # wall time: dynamo capture + aot_autograd + trnc
    trnc_seconds: float = 0.0       # trnc's share (serialize, lower, compile or cache load)
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    est_time_s: float = 0.0         # sum over the bucket's graphs: one call (fw+bw with --train)
    target: str = ""
    error: str = ""

    @property
    def n_graphs(self) -> int:
        return sum(self.graphs.values())


def load_factory(ref: str) -> Callable[[], Any]:
    """``"pkg.module:function"`` or ``"path/to/file.py:function"`` -> the function."""
    mod_name, sep, fn_name = ref.rpartition(":")
    if not sep or not mod_name or not fn_name:
        raise ValueError(f"expected MODULE:FUNCTION or FILE.py:FUNCTION, got {ref!r}")
    if mod_name.endswith(".py") or os.sep in mod_name:
        path = os.path.abspath(mod_name)
        if not os.path.exists(path):
            raise ValueError(f"{mod_name}: no such file")
        name = "_trnc_precompile_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(mod_name)
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ValueError(f"{mod_name} has no function {fn_name!r}")
    return fn


def _call_factory(factory: Callable[[], Any]) -> tuple[Any, Any]:
    from .buckets import BucketSpec

    res = factory()
    if not (isinstance(res, tuple) and len(res) == 2):
        raise TypeError("the precompile factory must return (model, spec), not "
                        f"{type(res).__name__}")
    model, spec = res
    return model, BucketSpec.of(spec)


def _error_text(e: BaseException) -> str:
    inner = getattr(e, "inner_exception", None) or e
    return f"{type(inner).__name__}: {inner}"


def compile_bucket(model: Any, spec: Any, sizes: dict[str, int], *, train: bool,
                   options: dict[str, Any] | None = None) -> BucketResult:
    """Compiles one bucket in this process (compile-only: nothing runs)."""
    import torch

    from . import backend

    res = BucketResult(sizes=dict(sizes), label=spec.describe(sizes))
    torch._dynamo.reset()
    backend.reset()
    opts = {**(options or {}), "compile_only": True}
    compiled = torch.compile(model, backend="neuron", dynamic=False, options=opts)
    inputs = spec.example_inputs(sizes)
    t0 = time.perf_counter()
    try:
        if train:
            model.train()
            out = compiled(*inputs)
            leaves = [t for t in torch.utils._pytree.tree_leaves(out)
                      if isinstance(t, torch.Tensor) and t.requires_grad]
            if leaves:
                torch.autograd.backward(leaves, [torch.ones_like(t) for t in leaves])
        else:
            model.eval()
            with torch.no_grad():
                compiled(*inputs)
    except Exception as e:  # noqa: BLE001  (reported per bucket)
        res.error = _error_text(e)
    res.seconds = time.perf_counter() - t0
    st = backend.stats()
    res.hits, res.misses, res.compiles = st["hits"], st["misses"], st["compiles"]
    for rec in backend.last_graphs():
        res.graphs[rec.kind] = res.graphs.get(rec.kind, 0) + 1
        res.trnc_seconds += rec.compile_seconds
        if rec.report:
            res.est_time_s += float(rec.report.get("est_time_s", 0.0))
            res.target = str(rec.report.get("target", res.target))
    torch._dynamo.reset()
    return res


# one factory result per worker process
_worker_state: dict[str, Any] = {}


def _worker(ref: str, sizes: dict[str, int], train: bool,
            options: dict[str, Any]) -> BucketResult:
    if _worker_state.get("ref") != ref:
        model, spec = _call_factory(load_factory(ref))
        _worker_state.update(ref=ref, model=model, spec=spec)
    return compile_bucket(_worker_state["model"], _worker_state["spec"], sizes, train=train,
                          options=options)


def precompile(factory: str | Callable[[], Any], *, train: bool = False, jobs: int = 1,
               options: dict[str, Any] | None = None, progress: bool = True,
               file: Any = None) -> list[BucketResult]:
    """Compiles every bucket of ``factory`` (a ``module:function`` reference,
    or with ``jobs=1`` also the function itself) into the artifact cache.
    Returns one :class:`BucketResult` per bucket, in bucket order."""
    from tqdm import tqdm

    fn = load_factory(factory) if isinstance(factory, str) else factory
    model, spec = _call_factory(fn)
    combos = spec.combinations()
    options = dict(options or {})
    results: list[BucketResult | None] = [None] * len(combos)
    bar = tqdm(total=len(combos), desc="trnc precompile", unit="bucket",
               disable=not progress, file=file or sys.stderr, dynamic_ncols=True)
    try:
        if jobs <= 1 or len(combos) <= 1:
            for i, sizes in enumerate(combos):
                bar.set_postfix_str(spec.describe(sizes))
                results[i] = compile_bucket(model, spec, sizes, train=train, options=options)
                bar.update(1)
        else:
            if not isinstance(factory, str):
                raise ValueError("precompile with jobs > 1 needs a 'module:function' reference "
                                 "that worker processes can import")
            import concurrent.futures as cf
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(max_workers=min(jobs, len(combos)),
                                        mp_context=ctx) as pool:
                futs = {pool.submit(_worker, factory, sizes, train, options): i
                        for i, sizes in enumerate(combos)}
                for fut in cf.as_completed(futs):
                    i = futs[fut]
                    try:
                        results[i] = fut.result()
                    except Exception as e:  # noqa: BLE001  (a worker died)
                        results[i] = BucketResult(sizes=combos[i],
                                                  label=spec.describe(combos[i]),
                                                  error=_error_text(e))
                    bar.set_postfix_str(spec.describe(combos[i]))
                    bar.update(1)
    finally:
        bar.close()
    return [r for r in results if r is not None]


def _fmt_time(s: float) -> str:
    if s <= 0:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


def _fmt_graphs(g: dict[str, int]) -> str:
    short = {"forward": "fw", "backward": "bw", "inference": "inf"}
    parts = [f"{g[k]} {short[k]}" for k in ("forward", "backward", "inference") if g.get(k)]
    return " + ".join(parts) if parts else "0"


def format_table(results: Sequence[BucketResult]) -> str:
    """The closing table of ``trnc precompile``."""
    target = next((r.target for r in results if r.target), "trn2")
    head = ("bucket", "graphs", "compile s", "trnc s", "cache", f"est. {target}/call")
    rows = []
    for r in results:
        cache = (f"{r.hits} hit, {r.misses} miss" if r.hits or r.misses else
                 f"off ({r.compiles} compiled)" if r.compiles else "-")
        rows.append((r.label or "-", _fmt_graphs(r.graphs), f"{r.seconds:.2f}",
                     f"{r.trnc_seconds:.2f}", cache,
                     "FAILED" if r.error else _fmt_time(r.est_time_s)))
    tot = (f"total ({len(results)} buckets)", str(sum(r.n_graphs for r in results)),
           f"{sum(r.seconds for r in results):.2f}", f"{sum(r.trnc_seconds for r in results):.2f}",
           f"{sum(r.hits for r in results)} hit, {sum(r.misses for r in results)} miss", "")
    widths = [max(len(x[i]) for x in [head, tot, *rows]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(head), sep, *map(line, rows), sep, line(tot)])


def _cmd(args: argparse.Namespace) -> int:
    from . import cache

    options: dict[str, Any] = {}
    if args.target:
        from .backend import TARGETS

        if args.target not in TARGETS:
            print(f"trnc precompile: unknown target {args.target!r}; use one of "
                  f"{', '.join(TARGETS)}", file=sys.stderr)
            return 2
        options["target"] = args.target
    if args.autocast_bf16:
        options["autocast_bf16"] = True
    if not cache.enabled():
        print("trnc precompile: TRNC_CACHE=0 disables the artifact cache, so nothing "
              "would be kept; unset it", file=sys.stderr)
        return 2
    try:
        results = precompile(args.factory, train=args.train, jobs=args.jobs, options=options,
                             progress=not args.no_progress)
    except (ValueError, TypeError, ImportError) as e:
        print(f"trnc precompile: {e}", file=sys.stderr)
        return 2
    print(format_table(results))
    failed = [r for r in results if r.error]
    for r in failed:
        print(f"\n{r.label}: {r.error}", file=sys.stderr)
    c = cache.get_cache(warn=False)
    where = f" in {c.dir()}" if c is not None else ""
    mode = "training (forward + backward)" if args.train else "inference"
    print(f"\n{len(results) - len(failed)} of {len(results)} buckets compiled for {mode}"
          f"{where}. Ship them with: trnc cache export FILE")
    return 1 if failed else 0


def add_subparser(sub: Any) -> None:
    """Registers ``trnc precompile`` on the CLI's subparsers."""
    p = sub.add_parser(
        "precompile", help="compile every shape bucket of a model into the artifact cache",
        description="Compile every bucket combination of a model into the artifact cache "
        "without running it. FACTORY is MODULE:FUNCTION or FILE.py:FUNCTION; the function "
        "takes no arguments and returns (model, trnc.buckets.BucketSpec).")
    p.add_argument("factory", metavar="FACTORY", help="MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument("--train", action="store_true",
                   help="training mode: compile forward and backward graphs "
                        "(default: inference graphs, under torch.no_grad())")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="worker processes (default 1)")
    p.add_argument("--target", default=None,
                   help="NeuronCore target, trn2, trn3 or trn1 (default: $TRNC_TARGET or trn2); "
                        "deployments must use the same")
    p.add_argument("--autocast-bf16", action="store_true",
                   help="compile with options={'autocast_bf16': True}; deployments must too")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(fn=_cmd)
