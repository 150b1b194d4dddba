"""One measurement in its own process, for bench/run.py (prints one JSON line).

    python bench/worker.py start    --entry E --backend trnc|inductor
    python bench/worker.py steady   --entry E [--steps N]
    python bench/worker.py overhead [--calls N] [--rounds R]

``start``: compile + first training step in a fresh process; run.py points
TRNC_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR at an empty directory (cold) or at
the one a cold run populated (warm). Times: BENCH_T0 (wall clock taken by the
parent just before it spawned this process) to the first forward output and to
the end of the first step; the first step; the second step (the execution
part, subtracted to get the compile part); for trnc the split between Python
(FX serialization), the C front end (import, legality scan, legalize, verify),
the C compiler (trnc_compile: passes, emitter, program verifier, cost model)
and the cache; and the compile reports (cost-model estimates).

``start`` also reads BENCH_LOAD_ARTIFACTS (a file from
torch.compiler.save_cache_artifacts, loaded before compiling; the load is part
of the measured time) and BENCH_SAVE_ARTIFACTS (where to save them after the
first step), for bench/fleet_start.py.

``steady``: eager, inductor and trnc (interpreter and JIT: TRNC_SIM per call) in
one process (caches warm), training
steps interleaved round-robin so that all three see the same machine noise;
also the FLOPs and minimum bytes of one step for the roofline.

``overhead``: per-call host time of a compiled one-add graph on 8 elements,
eager vs inductor vs trnc, next to the floors of dynamo alone (backend
"eager") and of dynamo + aot_autograd's runtime wrappers ("aot_eager"),
under ``torch.no_grad()`` and as a training call (forward + backward).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

T_PROC = time.time()  # before importing torch

import torch  # noqa: E402

if os.environ.get("BENCH_THREADS", "0") != "0":
    torch.set_num_threads(int(os.environ["BENCH_THREADS"]))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402

T_IMPORTED = time.time()


def _emit(obj: dict) -> None:
    print("BENCH_JSON " + json.dumps(obj), flush=True)


def _error(e: BaseException) -> dict:
    inner = getattr(e, "inner_exception", None) or e
    msg = str(inner)
    return {"type": type(inner).__name__, "message": msg[:4000],
            "first_line": msg.strip().splitlines()[0][:300] if msg.strip() else ""}


class _Timers:
    """Wraps the trnc backend's stages to time them (monkeypatching, no change
    to trnc itself)."""

    def __init__(self) -> None:
        import trnc.backend as be
        import trnc.cache as tc
        import trnc.pipeline as pl

        self.t = {"serialize_s": 0.0, "c_frontend_s": 0.0, "compile_program_s": 0.0,
                  "graph_total_s": 0.0}

        def wrap(mod, name, key):
            orig = getattr(mod, name)

            def f(*a, **k):
                t0 = time.perf_counter()
                try:
                    return orig(*a, **k)
                finally:
                    self.t[key] += time.perf_counter() - t0
            setattr(mod, name, f)

        wrap(be, "serialize", "serialize_s")
        wrap(pl, "lower", "c_frontend_s")
        wrap(tc, "compile_program", "compile_program_s")
        wrap(be, "_compile_graph", "graph_total_s")


def cmd_start(a: argparse.Namespace) -> dict:
    e = suite.SUITE[a.entry]
    res: dict = {"entry": a.entry, "backend": a.backend,
                 "import_s": T_IMPORTED - T_PROC}
    t0_parent = float(os.environ.get("BENCH_T0", T_PROC))
    timers = None
    if a.backend == "trnc":
        import trnc
        res["trnc_file"] = trnc.__file__
        timers = _Timers()
        backend = "trnc"
    else:
        backend = "inductor"
    if os.environ.get("BENCH_LOAD_ARTIFACTS"):
        from torch.compiler._cache import CacheArtifactManager

        t_load = time.perf_counter()
        CacheArtifactManager._ensure_cache_artifacts_registered()  # torch's own imports
        res["artifact_registry_import_s"] = time.perf_counter() - t_load
        t_load = time.perf_counter()
        with open(os.environ["BENCH_LOAD_ARTIFACTS"], "rb") as f:
            info = torch.compiler.load_cache_artifacts(f.read())
        res["load_artifacts_s"] = time.perf_counter() - t_load
        res["loaded_artifacts"] = {k: len(v) for k, v in (info.artifacts if info else {}).items()}
    model, args = e.build()
    cm = torch.compile(model, backend=backend, dynamic=False)
    for p in model.parameters():
        p.grad = None
    prof = None
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    try:
        t0 = time.perf_counter()
        out = cm(*args)
        t1 = time.perf_counter()
        t_first_out = time.time()
        cpu_first_out = time.process_time()  # this process's CPU time since it started
        suite.loss_of(out).backward()
        t2 = time.perf_counter()
        t_first_step = time.time()
        if prof:
            prof.disable()
            res["profile"] = _components(prof)
    except Exception as ex:  # noqa: BLE001
        res["error"] = _error(ex)
        res["elapsed_s"] = time.perf_counter() - t0
        if timers:
            res["trnc_split"] = timers.t
        return res
    res.update(first_fwd_s=t1 - t0, first_bwd_s=t2 - t1, first_step_s=t2 - t0,
               proc_to_first_output_s=t_first_out - t0_parent,
               proc_cpu_to_first_output_s=cpu_first_out,
               proc_to_first_step_s=t_first_step - t0_parent)
    t3 = time.perf_counter()
    suite.step(cm, model, args)
    res["second_step_s"] = time.perf_counter() - t3
    res["compile_s"] = max(0.0, res["first_step_s"] - res["second_step_s"])
    if os.environ.get("BENCH_SAVE_ARTIFACTS"):
        saved = torch.compiler.save_cache_artifacts()
        if saved is not None:
            with open(os.environ["BENCH_SAVE_ARTIFACTS"], "wb") as f:
                f.write(saved[0])
    if a.backend == "trnc":
        res["trnc_split"] = timers.t
        recs = trnc.last_graphs()
        res["graphs"] = [{"kind": r.kind, "compile_seconds": r.compile_seconds,
                          "report": r.report} for r in recs]
        res["c_compile_s"] = sum((r.report or {}).get("compile_s", 0.0) for r in recs)
        res["stats"] = trnc.stats()
    else:
        from torch._dynamo.utils import counters
        res["inductor_counters"] = {k: dict(v) for k, v in counters.items()
                                    if k in ("inductor", "aot_autograd")}
    return res


_COMPONENTS = [  # (component, substring of the function's file), first match wins
    ("dynamo", "torch/_dynamo/"),
    ("aot_autograd", "torch/_functorch/"),
    ("decompositions/refs", "torch/_decomp/"), ("decompositions/refs", "torch/_refs/"),
    ("decompositions/refs", "torch/_prims"),
    ("fake tensors/dispatch", "torch/_subclasses/"), ("fake tensors/dispatch", "torch/_ops.py"),
    ("fake tensors/dispatch", "torch/utils/_python_dispatch"),
    ("symbolic shapes/sympy", "torch/fx/experimental/"), ("symbolic shapes/sympy", "sympy/"),
    ("torch.fx", "torch/fx/"),
    ("inductor", "torch/_inductor/"),
    ("trnc Python", "/trnc/"),
    ("torch other", "torch/"),
]


def _components(prof) -> dict:
    """Self time of a cProfile run grouped by component (file path; C
    functions of trnc's extension count as "trnc C")."""
    import pstats
    st = pstats.Stats(prof)
    by: dict[str, float] = {}
    top: list[tuple[float, str]] = []
    for (file, line, fn), (cc, nc, tt, ct, callers) in st.stats.items():
        comp = "other"
        if file == "~":
            if "trnc" in fn:
                comp = "trnc C"
            elif "torch._C" in fn or "torch" in fn:
                comp = "torch C++ (ops)"
            else:
                comp = "builtins"
        else:
            for c, sub in _COMPONENTS:
                if sub in file:
                    comp = c
                    break
        by[comp] = by.get(comp, 0.0) + tt
        top.append((tt, f"{os.path.basename(file)}:{line}({fn})"))
    top.sort(reverse=True)
    return {"by_component": by, "top_self": [[t, n] for t, n in top[:15]]}


def _roofline_inputs(e: suite.Entry) -> dict:
    """FLOPs (torch's FlopCounterMode: matmul/conv/attention) and the minimum
    HBM bytes of one eager training step: parameters read in the forward and
    again in the backward, their gradients written, the inputs read (and their
    gradients written when they require grad), and each tensor autograd saves
    for the backward written once and read once (deduplicated by storage;
    saved parameters and inputs are not counted twice)."""
    from torch.utils.flop_counter import FlopCounterMode

    model, args = e.build()
    params = list(model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    known = {p.untyped_storage().data_ptr() for p in params}
    known |= {a.untyped_storage().data_ptr() for a in args}
    in_bytes = sum(a.numel() * a.element_size() * (2 if a.requires_grad else 1) for a in args)
    saved: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in known:
            saved[st.data_ptr()] = max(saved.get(st.data_ptr(), 0), st.nbytes())
        return t

    fc = FlopCounterMode(display=False)
    with fc:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(*args)
        suite.loss_of(out).backward()
    act = sum(saved.values())
    return {"flops": fc.get_total_flops(), "param_bytes": param_bytes, "input_bytes": in_bytes,
            "saved_bytes": act, "min_bytes": 3 * param_bytes + in_bytes + 2 * act,
            "params": sum(p.numel() for p in params)}


def _engine(fn, engine: str):
    """fn run on NeuronCore engine `engine` (TRNC_SIM, which the C runtime
    reads on every run, so one compiled callable serves both engines)."""
    def g(*args, **kw):
        os.environ["TRNC_SIM"] = engine
        return fn(*args, **kw)
    return g


def _add_jit(fns: dict, res: dict, first_call) -> None:
    """Replaces fns["trnc"] by its interpreter run and adds "trnc-jit";
    res["jit_compile_s"]: the first JIT call's extra time (host code for every
    program it runs) over a warm one."""
    if "trnc" not in fns:
        return
    cm = fns["trnc"]
    fns["trnc"] = _engine(cm, "interp")
    jit = _engine(cm, "jit")
    t0 = time.perf_counter()
    first_call(jit)
    first = time.perf_counter() - t0
    first_call(jit)
    t0 = time.perf_counter()
    first_call(jit)
    res["jit_compile_s"] = max(0.0, first - (time.perf_counter() - t0))
    fns["trnc-jit"] = jit


def cmd_steady(a: argparse.Namespace) -> dict:
    e = suite.SUITE[a.entry]
    steps = a.steps or e.steps
    res: dict = {"entry": a.entry, "steps": steps, "times": {}, "errors": {}}
    res["roofline"] = _roofline_inputs(e)
    model, args = e.build()
    fns = {"eager": model}
    os.environ["TRNC_SIM"] = "interp"  # warm-up on the interpreter: _add_jit times the JIT compile
    for b in ("inductor", "trnc"):
        if b == "trnc":
            import trnc  # noqa: F401
        cm = torch.compile(model, backend=b, dynamic=False)
        try:
            for _ in range(2):     # compile (warm caches) + one warm-up step
                suite.step(cm, model, args)
            fns[b] = cm
        except Exception as ex:  # noqa: BLE001
            res["errors"][b] = _error(ex)
    _add_jit(fns, res, lambda fn: suite.step(fn, model, args))
    suite.step(model, model, args)
    for name in fns:
        res["times"][name] = []
    deadline = time.perf_counter() + a.budget
    for i in range(steps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            suite.step(fn, model, args)
            res["times"][name].append(time.perf_counter() - t0)
        if time.perf_counter() > deadline and i >= 1:
            res["truncated_at"] = i + 1
            break
    return res


def cmd_overhead(a: argparse.Namespace) -> dict:
    import trnc  # noqa: F401

    def f(x, y):
        return x + y

    x, y = torch.randn(8), torch.randn(8)
    fns = {"eager": f}
    os.environ["TRNC_SIM"] = "interp"
    # compiled, warmed up and timed under no_grad: no recompile in the first round
    torch.set_grad_enabled(False)
    errors = {}
    # "dynamo" (backend="eager": guards + frame, the graph run by torch) and
    # "dynamo+aot" (backend="aot_eager": plus aot_autograd's runtime wrappers)
    # are the floors every aot_autograd backend's call pays
    for b in ("inductor", "trnc", "dynamo", "dynamo+aot"):
        torch._dynamo.reset()
        cm = torch.compile(f, backend={"dynamo": "eager", "dynamo+aot": "aot_eager"}.get(b, b),
                           dynamic=False)
        try:
            ref = f(x, y)
            for _ in range(3):
                got = cm(x, y)
            assert torch.allclose(got, ref)
            fns[b] = cm
            if b == "trnc":
                trnc_cm = cm
        except Exception as ex:  # noqa: BLE001
            errors[b] = _error(ex)
    res: dict = {}
    _add_jit(fns, res, lambda fn: fn(x, y))
    # the engine is set once per round, outside the timed calls (_engine sets it per call)
    engines = {"trnc": "interp", "trnc-jit": "jit"}
    if "trnc" in fns:
        fns["trnc-jit"] = fns["trnc"] = trnc_cm
    per_call: dict[str, list[float]] = {k: [] for k in fns}
    per_call_cpu: dict[str, list[float]] = {k: [] for k in fns}
    with torch.no_grad():
        for _ in range(a.rounds):
            for name, fn in fns.items():
                if name in engines:
                    os.environ["TRNC_SIM"] = engines[name]
                t0, c0 = time.perf_counter(), time.thread_time()
                for _ in range(a.calls):
                    fn(x, y)
                per_call_cpu[name].append((time.thread_time() - c0) / a.calls)
                per_call[name].append((time.perf_counter() - t0) / a.calls)
    torch.set_grad_enabled(True)
    train = _overhead_training(f, a)
    return {"calls": a.calls, "rounds": a.rounds, "per_call_s": per_call,
            "per_call_cpu_s": per_call_cpu, "errors": errors, **res, **train}


def _overhead_training(f, a: argparse.Namespace) -> dict:
    """Per-call host time of one training call of the same add (inputs that
    require grad, forward + ``backward`` of the output): eager, the dynamo
    floor (backend "eager"), dynamo + aot_autograd ("aot_eager"), inductor,
    trnc (trnc's autograd Function) and trnc with aot_autograd's runtime
    wrappers (``TRNC_TRAINING_WRAPPERS=torch`` at compile: the path before it),
    interleaved round-robin; trnc on the simulator's JIT."""
    x = torch.randn(8, requires_grad=True)
    y = torch.randn(8, requires_grad=True)
    g = torch.ones(8)
    fns = {"eager": f}
    errors = {}
    os.environ["TRNC_SIM"] = "jit"
    for b in ("inductor", "trnc", "trnc-torch-wrappers", "dynamo", "dynamo+aot"):
        torch._dynamo.reset()
        backend = {"dynamo": "eager", "dynamo+aot": "aot_eager",
                   "trnc-torch-wrappers": "trnc"}.get(b, b)
        if b == "trnc-torch-wrappers":
            os.environ["TRNC_TRAINING_WRAPPERS"] = "torch"
        try:
            cm = torch.compile(f, backend=backend, dynamic=False)
            for _ in range(3):
                x.grad = y.grad = None
                cm(x, y).backward(g)
            assert torch.equal(x.grad, g) and torch.equal(y.grad, g)
            fns[b] = cm
        except Exception as ex:  # noqa: BLE001
            errors[b] = _error(ex)
        finally:
            os.environ.pop("TRNC_TRAINING_WRAPPERS", None)
    per_call: dict[str, list[float]] = {k: [] for k in fns}
    per_call_cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(a.rounds):
        for name, fn in fns.items():
            t0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(a.calls):
                fn(x, y).backward(g)
            per_call_cpu[name].append((time.thread_time() - c0) / a.calls)
            per_call[name].append((time.perf_counter() - t0) / a.calls)
    return {"train_per_call_s": per_call, "train_per_call_cpu_s": per_call_cpu,
            "train_errors": errors}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("start", "steady", "overhead"))
    p.add_argument("--entry")
    p.add_argument("--backend", choices=("trnc", "inductor"))
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--profile", action="store_true", help="start: cProfile the first step")
    p.add_argument("--budget", type=float, default=120.0,
                   help="steady: stop after this many seconds (at least 2 rounds)")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    try:
        res = {"start": cmd_start, "steady": cmd_steady, "overhead": cmd_overhead}[a.mode](a)
    except Exception as ex:  # noqa: BLE001
        res = {"fatal": _error(ex), "traceback": traceback.format_exc()[-4000:]}
    _emit(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
