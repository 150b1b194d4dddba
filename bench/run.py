#!/usr/bin/env python3
"""trnc benchmarks, side by side with TorchInductor (CPU) and eager: `make bench`.

    .venv/bin/python bench/run.py [--entries mlp,cnn] [--quick] [--out bench]

For every entry of the fixed suite (bench/suite.py) it measures, in one run:

* cold compile of forward + backward, trnc vs TorchInductor, each in a fresh
  process with an empty cache directory (TRNC_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR);
  for trnc also the split between dynamo/aot_autograd, Python serialization,
  the C front end and the C compiler;
* warm start: a fresh process to the first output with the cache a cold run
  populated (trnc's artifact cache; inductor's FX graph and AOTAutograd caches);
* steady-state host time per training step (forward + backward), eager vs
  inductor vs trnc (the NeuronCore simulator), interleaved in one process;
* the cost model's estimate on trn2 (time per step, TensorE and DMA
  utilization) next to the roofline bound of the same step;
* once: per-call overhead of a compiled one-add graph on 8 elements.

Writes bench/results.md (tables), bench/results.json (raw numbers) and
bench/ratios.png. Nothing here asserts a time: the machines are shared and
noisy, so the ratios (same run, same machine) are what to read.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# trn2 NeuronCore-v3 figures (codegen/neuroncore/target.c, with their sources there)
TRN2 = {
    "tensor_bf16_flops": 2.0 * 128 * 128 * 2.4e9,          # 78.6 TFLOP/s
    "tensor_fp32_flops": 2.0 * 128 * 128 * 2.4e9 / 4.0,    # fp32 inputs ~4x slower
    "dma_bytes_per_s": 16 * 23e9,                          # 16 queues x 23 GB/s = 368 GB/s
    "hbm_bytes_per_s_per_core": 2.9e12 / 8,                # 2.9 TB/s per chip, 8 cores
}
TRN2["mem_bytes_per_s"] = min(TRN2["dma_bytes_per_s"], TRN2["hbm_bytes_per_s_per_core"])


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- #
# running workers


THREADS = 1  # set by --threads


def worker(args: list[str], env_extra: dict[str, str], timeout: float) -> dict:
    env = dict(os.environ)
    if THREADS:
        env["OMP_NUM_THREADS"] = str(THREADS)
        env["BENCH_THREADS"] = str(THREADS)
    env.pop("TRNC_LOG", None)
    env.pop("TRNC_PROFILE", None)
    env.update(env_extra)
    if PKG_PATH:
        env["PYTHONPATH"] = PKG_PATH + os.pathsep + HERE + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["BENCH_T0"] = repr(time.time())
    cmd = [sys.executable, os.path.join(HERE, "worker.py"), *args]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"fatal": {"type": "Timeout", "message": f"worker exceeded {timeout:.0f} s",
                          "first_line": f"timed out after {timeout:.0f} s"}}
    wall = time.perf_counter() - t0
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            res = json.loads(line[len("BENCH_JSON "):])
            res["process_wall_s"] = wall
            return res
    tail = (p.stderr or "")[-3000:]
    return {"fatal": {"type": f"exit {p.returncode}", "message": tail,
                      "first_line": tail.strip().splitlines()[-1][:300] if tail.strip() else ""}}


PKG_PATH = ""  # set by main: a private copy of the installed trnc package


def snapshot_package(tmp: str) -> dict:
    """Copies the installed trnc package into tmp and puts it first on the
    workers' PYTHONPATH: other sessions may reinstall trnc while a run is going
    (a reinstall also changes the compiler build id, i.e. every cache key)."""
    global PKG_PATH
    import hashlib
    import importlib.util
    spec = importlib.util.find_spec("trnc")
    src = os.path.dirname(spec.origin)
    PKG_PATH = os.path.join(tmp, "pkg")
    shutil.copytree(src, os.path.join(PKG_PATH, "trnc"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    h = hashlib.sha256()
    for f in sorted(os.listdir(src)):
        if f.endswith(".so"):
            with open(os.path.join(src, f), "rb") as fh:
                h.update(fh.read())
            mtime = os.path.getmtime(os.path.join(src, f))
    return {"package": src, "extension_sha256": h.hexdigest()[:16],
            "built": datetime.datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M")}


def fresh_dirs(tmp: str, tag: str) -> dict[str, str]:
    d = {"TRNC_CACHE_DIR": os.path.join(tmp, tag, "trnc"),
         "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, tag, "inductor")}
    for v in d.values():
        shutil.rmtree(v, ignore_errors=True)
        os.makedirs(v, mode=0o700)
    d["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "1"
    d["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "1"
    return d


def run_entry(name: str, tmp: str, quick: bool, timeout: float, steady_only: bool = False) -> dict:
    import suite
    e = suite.SUITE[name]
    cold_reps = 0 if steady_only else 1 if quick else e.cold_reps
    warm_reps = 0 if steady_only else 1 if quick else e.warm_reps
    out: dict = {"entry": name, "description": e.description, "dtype": e.dtype,
                 "reps": f"{cold_reps} cold, {warm_reps} warm, "
                         f"{max(2, e.steps // 10) if quick else e.steps} steps",
                 "cold": {"trnc": [], "inductor": []}, "warm": {"trnc": [], "inductor": []}}
    warm_env: dict[str, dict[str, str]] = {}
    for r in range(cold_reps):
        for b in ("trnc", "inductor"):
            env = fresh_dirs(tmp, f"{name}-{b}-cold{r}")
            log(f"{name}: cold {b} {r + 1}/{cold_reps}")
            res = worker(["start", "--entry", name, "--backend", b], env, timeout)
            out["cold"][b].append(res)
            if "error" not in res and "fatal" not in res:
                warm_env[b] = env
    # trnc's Python-level profile of one more cold start (where the compile time goes)
    if "trnc" in warm_env and not steady_only:
        env = fresh_dirs(tmp, f"{name}-trnc-prof")
        log(f"{name}: cold trnc under cProfile")
        out["profile"] = worker(["start", "--entry", name, "--backend", "trnc", "--profile"],
                                env, timeout)
    for r in range(warm_reps):
        for b in ("trnc", "inductor"):
            if b not in warm_env:
                continue
            log(f"{name}: warm {b} {r + 1}/{warm_reps}")
            out["warm"][b].append(worker(["start", "--entry", name, "--backend", b],
                                         warm_env[b], timeout))
    env = {**fresh_dirs(tmp, f"{name}-steady"),
           **{k: v for b in warm_env for k, v in warm_env[b].items()
              if (b == "trnc") == k.startswith("TRNC")}}
    log(f"{name}: steady state")
    steps = max(2, e.steps // 10) if quick else e.steps
    out["steady"] = worker(["steady", "--entry", name, "--steps", str(steps),
                            "--budget", str(e.budget_s)], env, timeout)
    return out


# --------------------------------------------------------------------------- #
# statistics and formatting


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def ok(runs: list[dict]) -> list[dict]:
    return [r for r in runs if "error" not in r and "fatal" not in r]


def err_of(runs: list[dict]) -> dict | None:
    for r in runs:
        if "error" in r:
            return r["error"]
        if "fatal" in r:
            return r["fatal"]
    return None


def fmt_s(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} µs"


def fmt_stat(xs: list[float]) -> str:
    if not xs:
        return "–"
    if len(xs) == 1:
        return fmt_s(xs[0])
    return f"{fmt_s(med(xs))} ({fmt_s(min(xs))}–{fmt_s(max(xs))})"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "–"
    r = a / b
    return f"**{r:.3g}×**"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def machine() -> dict:
    import torch
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
    except OSError:
        pass
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except Exception:  # noqa: BLE001
            return "?"
    try:
        import trnc
        trnc_version = trnc.__version__
    except Exception:  # noqa: BLE001
        trnc_version = "?"
    return {"nproc": os.cpu_count(), "loadavg": os.getloadavg()[0], "cpu": cpu, "memory": mem,
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(), "kernel": platform.release(),
            "trnc": trnc_version, "commit": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}


def warm_hit(r: dict) -> bool:
    """A warm start counts only if it really loaded everything from the cache."""
    if r.get("backend") == "trnc":
        st = r.get("stats") or {}
        return st.get("hits", 0) > 0 and st.get("compiles", 1) == 0
    c = (r.get("inductor_counters") or {}).get("inductor", {})
    return c.get("fxgraph_cache_hit", 0) > 0 and c.get("fxgraph_cache_miss", 0) == 0


def summarize(ent: dict) -> dict:
    """The numbers of one entry that the tables and the plot show."""
    s: dict = {"entry": ent["entry"]}
    for phase in ("cold", "warm"):
        for b in ("trnc", "inductor"):
            runs = ok(ent[phase][b])
            if phase == "warm":
                s[f"warm_{b}_notwarm"] = sum(1 for r in runs if not warm_hit(r))
                runs = [r for r in runs if warm_hit(r)]
            key = "compile_s" if phase == "cold" else "proc_to_first_output_s"
            s[f"{phase}_{b}"] = [r[key] for r in runs]
            if phase == "warm":  # CPU time: what a shared machine's load does not inflate
                s[f"warm_cpu_{b}"] = [r["proc_cpu_to_first_output_s"] for r in runs
                                      if "proc_cpu_to_first_output_s" in r]
            s[f"{phase}_{b}_err"] = err_of(ent[phase][b])
    cold_t = ok(ent["cold"]["trnc"])
    if cold_t:
        sp = [r["trnc_split"] for r in cold_t]
        s["split"] = {k: med([x[k] for x in sp]) for k in sp[0]}
        s["split"]["c_compile_s"] = med([r["c_compile_s"] for r in cold_t])
        s["split"]["compile_s"] = med([r["compile_s"] for r in cold_t])
        graphs = cold_t[0]["graphs"]
        est = sum(g["report"]["est_time_s"] for g in graphs)
        s["cost"] = {
            "est_time_s": est,
            "tensor_flop_util": sum(g["report"]["est_time_s"] * g["report"]["tensor_flop_util"]
                                    for g in graphs) / est if est else 0.0,
            "dma_bw_util": sum(g["report"]["est_time_s"] * g["report"]["dma_bw_util"]
                               for g in graphs) / est if est else 0.0,
            "kernels": sum(g["report"]["kernels"] for g in graphs),
            "instructions": sum(g["report"]["instructions"] for g in graphs),
            "graphs": len(graphs)}
    st = ent.get("steady", {})
    s["steady"] = st.get("times", {})
    s["steady_err"] = st.get("errors", {}) if "fatal" not in st else {"all": st["fatal"]}
    s["jit_compile_s"] = st.get("jit_compile_s")
    rl = st.get("roofline")
    if rl:
        peak = TRN2["tensor_bf16_flops"] if ent["dtype"] == "bf16" else TRN2["tensor_fp32_flops"]
        t_c = rl["flops"] / peak
        t_m = rl["min_bytes"] / TRN2["mem_bytes_per_s"]
        s["roofline"] = dict(rl, compute_s=t_c, memory_s=t_m, bound_s=max(t_c, t_m),
                             bound_by="TensorE" if t_c >= t_m else "memory", peak=peak)
    s["profile"] = ent.get("profile", {}).get("profile")
    return s


# --------------------------------------------------------------------------- #
# output


def write_markdown(path: str, m: dict, sums: list[dict], ents: list[dict], overhead: dict,
                   total_s: float, quick: bool) -> None:
    L: list[str] = []
    w = L.append
    w("# trnc benchmarks\n")
    w(f"Generated by `make bench` (`bench/run.py`{' --quick' if quick else ''}) on "
      f"{m['date']} in {total_s / 60:.1f} min; commit {m['commit']}"
      f"{' with uncommitted changes' if m['dirty'] else ''}. Do not edit by hand: "
      "the analysis section at the end comes from `bench/analysis.md`.\n")
    w(f"**Machine:** {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM, Linux {m['kernel']}, "
      f"Python {m['python']}, torch {m['torch']}, trnc {m['trnc']}. Workers ran with "
      f"{m['threads'] or 'torch default'} intra-op/OpenMP thread(s) (`--threads`). "
      f"1-minute load average {m['loadavg']:.1f} at the start, {m['loadavg_end']:.1f} at the "
      "end (the machine is shared: other jobs ran alongside, hence the ratios). TorchInductor runs on the CPU (C++ codegen); trnc runs its "
      "NeuronCore simulator on the CPU (single-threaded); the cost-model columns are "
      "estimates for one trn2 NeuronCore.\n")
    w("Cells: median (min–max) over the repetitions; ratios are of medians. A ratio "
      "above 1× means trnc takes longer.\n")

    w("## Suite\n")
    w("| entry | model | params | FLOPs/step |")
    w("|---|---|---:|---:|")
    for s, e in zip(sums, ents):
        rl = s.get("roofline") or {}
        w(f"| {s['entry']} | {e['description']} | {rl.get('params', '–'):,} | "
          f"{rl.get('flops', 0) / 1e9:.3g} G |" if rl else f"| {s['entry']} | {e['description']} | – | – |")
    w("")
    w("Repetitions per entry (bench/suite.py): fresh-process cold compiles and warm starts "
      "per backend, and timed steady-state steps — " + "; ".join(
          f"{e['entry']}: {e.get('reps', '?')}" for e in ents) + ". The two big entries "
      "take 1.5–3 s per step on the simulator, so they get few steps (and gpt-6l-384 "
      "batch 1 and one cold compile, inductor's taking ~40–90 s); their min–max shows "
      "the spread.\n")

    w("## Compile and start-up (fresh processes)\n")
    w("*Cold compile* = first training step (forward + backward) minus the second step, in a "
      "fresh process with empty caches. *Warm start* = from spawning a fresh process "
      "(interpreter start, `import torch`, building the model) to the first forward output, "
      "with the caches the cold run populated; *warm CPU*: the CPU time of that process up "
      "to its first output (`time.process_time()`; on a loaded machine the wall time also "
      "holds the time it waited for a core).\n")
    w("A warm run counts only when it compiled nothing (trnc: cache hits and no compile; "
      "inductor: FX graph cache hits and no miss); runs that missed are dropped and counted "
      "in the last column.\n")
    w("| entry | trnc cold | inductor cold | trnc/inductor | trnc warm start | "
      "inductor warm start | trnc/inductor | trnc warm CPU | inductor warm CPU | "
      "CPU trnc/inductor | warm runs dropped (trnc, inductor) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sums:
        def cell(k):
            if s[k]:
                return fmt_stat(s[k])
            e = s.get(k + "_err")
            return f"FAILED ({e['type']})" if e else "–"
        w(f"| {s['entry']} | {cell('cold_trnc')} | {cell('cold_inductor')} | "
          f"{fmt_ratio(med(s['cold_trnc']), med(s['cold_inductor']))} | {cell('warm_trnc')} | "
          f"{cell('warm_inductor')} | {fmt_ratio(med(s['warm_trnc']), med(s['warm_inductor']))} | "
          f"{cell('warm_cpu_trnc')} | {cell('warm_cpu_inductor')} | "
          f"{fmt_ratio(med(s.get('warm_cpu_trnc', [])), med(s.get('warm_cpu_inductor', [])))} | "
          f"{s['warm_trnc_notwarm']}, {s['warm_inductor_notwarm']} |")
    w("")
    w("### Where trnc's cold compile goes\n")
    w("Medians over the cold runs. *C front end*: import of the fx.proto bytes, legality scan, "
      "legalization, verifier (`pipeline.lower`). *C compiler*: `trnc_compile` (passes, "
      "emitter, hardware verifier, cost model; the report's `compile_s`). *cache + Python "
      "glue*: key derivation, artifact store, report (`cache.compile_program` minus "
      "`compile_s`). *serialize*: the Python FX → fx.proto walk. *dynamo + aot_autograd + "
      "rest*: everything else in the first step (tracing, functionalization, decompositions, "
      "partitioning, the backend's Python). *C compiler per 1k instr.*: the C compiler's time "
      "per 1,000 emitted NeuronCore instructions (the hardware verifier, schedule and cost "
      "model are O(n log n) per kernel, so this stays flat as programs grow).\n")
    w("| entry | cold compile | dynamo + aot_autograd + rest | serialize (Py) | C front end | "
      "C compiler | instructions | C compiler per 1k instr. | cache + glue | C share |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sums:
        sp = s.get("split")
        if not sp:
            e = s.get("cold_trnc_err")
            w(f"| {s['entry']} | FAILED ({e['type'] if e else '?'}) | | | | | | | | |")
            continue
        glue = sp["compile_program_s"] - sp["c_compile_s"]
        rest = sp["compile_s"] - sp["graph_total_s"]
        c = sp["c_frontend_s"] + sp["c_compile_s"]
        ninstr = s.get("cost", {}).get("instructions", 0)
        per_k = fmt_s(sp["c_compile_s"] * 1000 / ninstr) if ninstr else "–"
        w(f"| {s['entry']} | {fmt_s(sp['compile_s'])} | {fmt_s(rest)} | "
          f"{fmt_s(sp['serialize_s'])} | {fmt_s(sp['c_frontend_s'])} | "
          f"{fmt_s(sp['c_compile_s'])} | {ninstr:,} | {per_k} | {fmt_s(glue)} | "
          f"{100 * c / sp['compile_s']:.1f}% |" if sp["compile_s"] else "")
    w("")
    prof = [(s["entry"], s["profile"]) for s in sums if s.get("profile")]
    if prof:
        w("Self time of one more trnc cold start under cProfile, by component (cProfile "
          "inflates Python-heavy code, so read the shares, not the seconds):\n")
        cats = sorted({c for _, p in prof for c in p["by_component"]},
                      key=lambda c: -max(p["by_component"].get(c, 0) for _, p in prof))
        w("| entry | " + " | ".join(cats) + " |")
        w("|---|" + "---:|" * len(cats))
        for name, p in prof:
            tot = sum(p["by_component"].values()) or 1
            w(f"| {name} | " + " | ".join(
                f"{100 * p['by_component'].get(c, 0) / tot:.0f}%" for c in cats) + " |")
        w("")

    w("## Steady state: host time per training step\n")
    w("Forward + backward, eager vs inductor vs trnc, interleaved round-robin in one process "
      "(warm caches). trnc's time is the NeuronCore simulator executing the program on the "
      "host — what users wait for when no Trainium is attached.\n")
    w("trnc runs each step twice, on the interpreter (`TRNC_SIM=interp`) and on the JIT's "
      "host code (`TRNC_SIM=jit`), the same compiled callable. *JIT compile*: the first JIT "
      "step's extra time over a warm one (host code for every forward and backward program).\n")
    w("| entry | steps | eager | inductor | trnc interp | trnc jit | interp/eager | jit/eager | "
      "jit/inductor | jit/interp | JIT compile | inductor/eager |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sums:
        t = s["steady"]
        errs = s["steady_err"]
        def cell(b):
            if t.get(b):
                return fmt_stat(t[b])
            e = errs.get(b) or errs.get("all")
            return f"FAILED ({e['type']})" if e else "–"
        n = max((len(v) for v in t.values()), default=0)
        mt = {b: med(t.get(b, [])) for b in ("eager", "inductor", "trnc", "trnc-jit")}
        jc = s.get("jit_compile_s")
        w(f"| {s['entry']} | {n} | {cell('eager')} | {cell('inductor')} | {cell('trnc')} | "
          f"{cell('trnc-jit')} | {fmt_ratio(mt['trnc'], mt['eager'])} | "
          f"{fmt_ratio(mt['trnc-jit'], mt['eager'])} | {fmt_ratio(mt['trnc-jit'], mt['inductor'])} | "
          f"{fmt_ratio(mt['trnc-jit'], mt['trnc'])} | {fmt_s(jc) if jc is not None else '–'} | "
          f"{fmt_ratio(mt['inductor'], mt['eager'])} |")
    w("")

    w("## Cost model vs roofline (one trn2 NeuronCore)\n")
    w("*Estimate*: the cost model's critical path (codegen/neuroncore/cost.c), forward + backward "
      "programs summed; TensorE and DMA utilization are time-weighted over both. *Roofline*: "
      "max(FLOPs / TensorE peak, bytes / bandwidth). FLOPs are torch's `FlopCounterMode` "
      "count of the eager step (matmuls, convolutions: what TensorE does). Bytes are the "
      "minimum HBM traffic of the step: parameters read by the forward and again by the "
      "backward and their gradients written (3 × parameter bytes), the inputs read (and "
      "their gradients written when they require grad), and every tensor autograd saves for "
      "the backward written once and read once (2 × saved bytes, deduplicated by storage). "
      f"Peaks: TensorE {TRN2['tensor_bf16_flops'] / 1e12:.1f} TFLOP/s bf16, "
      f"{TRN2['tensor_fp32_flops'] / 1e12:.1f} TFLOP/s fp32 (fp32 inputs are ~4× slower); "
      f"bandwidth min(DMA {TRN2['dma_bytes_per_s'] / 1e9:.0f} GB/s = 16 queues × 23 GB/s, "
      f"HBM {TRN2['hbm_bytes_per_s_per_core'] / 1e9:.0f} GB/s = 2.9 TB/s per chip / 8 cores) = "
      f"{TRN2['mem_bytes_per_s'] / 1e9:.0f} GB/s (numbers from codegen/neuroncore/target.c). "
      "The roofline ignores fixed costs (about 600 ns per DMA, instruction issue), which "
      "dominate the small entries.\n")
    w("| entry | est. time/step | TensorE util | DMA BW util | kernels | instructions | "
      "FLOPs | min bytes | roofline bound | bound by | est./roofline |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for s in sums:
        c, rl = s.get("cost"), s.get("roofline") or {}
        rcell = (f"{fmt_s(rl['bound_s'])} | {rl['bound_by']}" if rl else "– | –")
        rb = (f"{rl['flops'] / 1e9:.3g} G | {rl['min_bytes'] / 1048576:.3g} MiB" if rl
              else "– | –")
        if not c:
            e = s.get("cold_trnc_err")
            w(f"| {s['entry']} | FAILED ({e['type'] if e else '?'}) | – | – | – | – | {rb} | "
              f"{rcell} | – |")
            continue
        w(f"| {s['entry']} | {fmt_s(c['est_time_s'])} | {100 * c['tensor_flop_util']:.2g}% | "
          f"{100 * c['dma_bw_util']:.2g}% | {c['kernels']} | {c['instructions']:,} | {rb} | "
          f"{rcell} | {fmt_ratio(c['est_time_s'], rl.get('bound_s'))} |")
    w("")

    llama_js = os.path.join(HERE, "llama-results.json")
    if os.path.exists(llama_js):
        import llama
        with open(llama_js) as f:
            lr = json.load(f)
        if "error" not in lr:
            ls = llama.summary(lr)
            w("### Llama-style block at realistic size (`make bench-llama`, compile only)\n")
            w(f"From `bench/llama-results.json` ({lr['date']}, commit {lr['commit']}; not rerun "
              "by `make bench`): width 2048, 16 heads, SwiGLU 5632, sequence 2048, bf16 "
              "autocast, forward + backward, compiled but not run (the simulator would take "
              "hours). MFU = model FLOPs / (estimate × bf16 TensorE peak); details in "
              "`bench/llama-results.md`.\n")
            w("| entry | kernels | instructions | C compile (wall) | C compile (thread CPU) | "
              "est. forward | est. backward | est. step | model FLOPs | MFU |")
            w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            w(f"| llama-block-2048 | {ls['kernels']} | {ls['instructions']:,} | "
              f"{fmt_s(ls['compile_s'])} | {fmt_s(lr.get('c_compile_cpu_s'))} | "
              f"{fmt_s(ls.get('forward_est_s'))} | "
              f"{fmt_s(ls.get('backward_est_s'))} | {fmt_s(ls['est_time_s'])} | "
              f"{ls['model_flops'] / 1e9:.3g} G | {100 * ls['mfu']:.1f}% |")
            w("")

    w("## Per-call overhead: one add on 8 elements\n")
    if "fatal" in overhead:
        w(f"FAILED: {overhead['fatal']['first_line']}\n")
    else:
        pc = overhead["per_call_s"]
        w(f"`x + y` on two float32 tensors of 8 elements under `torch.no_grad()`, "
          f"{overhead['calls']} calls per round, {overhead['rounds']} rounds interleaved; "
          "per-call time.\n")
        w("*dynamo floor*: `backend=\"eager\"` (dynamo's guards and frame, the graph run "
          "by torch): what every backend's call pays before its own work; *+ aot_autograd*: "
          "`backend=\"aot_eager\"` (plus aot_autograd's runtime wrappers, which inductor's "
          "call goes through and trnc's plain inference graphs skip). *above floor*: the "
          "backend's time minus the dynamo floor. *trnc interp* / *trnc jit*: the same "
          "compiled callable on the simulator's interpreter and on its JIT's host code "
          "(`TRNC_SIM`, set once per round).\n")
        cols = ("eager", "dynamo", "dynamo+aot", "inductor", "trnc", "trnc-jit")
        w("| time | eager | dynamo floor | + aot_autograd | inductor | trnc interp | trnc jit | "
          "jit/eager | interp/inductor | jit/inductor | inductor above floor | "
          "jit above floor | above floor, jit/inductor |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

        def above(b):
            return mm[b] - floor if mm[b] is not None and floor is not None else None

        for label, pc in (("wall", pc), ("CPU", overhead.get("per_call_cpu_s"))):
            if not pc:
                continue
            mm = {b: med(pc.get(b, [])) for b in cols}
            cells = [fmt_stat(pc[b]) if pc.get(b) else
                     f"FAILED ({overhead['errors'].get(b, {}).get('type', '?')})" for b in cols]
            floor = mm["dynamo"]
            w(f"| {label} | {' | '.join(cells)} | {fmt_ratio(mm['trnc-jit'], mm['eager'])} | "
              f"{fmt_ratio(mm['trnc'], mm['inductor'])} | "
              f"{fmt_ratio(mm['trnc-jit'], mm['inductor'])} | {fmt_s(above('inductor'))} | "
              f"{fmt_s(above('trnc-jit'))} | {fmt_ratio(above('trnc-jit'), above('inductor'))} |")
        w("")
        tc = overhead.get("train_per_call_s")
        if tc:
            terr = overhead.get("train_errors", {})
            w("Training call: the same add on inputs that require grad, forward + "
              "`backward()` of the output, same calls and rounds, interleaved; trnc on the "
              "JIT. *trnc*: trnc's autograd Function (python/trnc/training.py); *trnc, torch "
              "wrappers*: the same programs behind aot_autograd's runtime wrappers "
              "(`TRNC_TRAINING_WRAPPERS=torch`).\n")
            tcols = ("eager", "dynamo", "dynamo+aot", "inductor", "trnc-torch-wrappers", "trnc")
            w("| time | eager | dynamo floor | + aot_autograd | inductor | trnc, torch wrappers | "
              "trnc | trnc/inductor | trnc/eager | inductor above floor | trnc above floor | "
              "above floor, trnc/inductor |")
            w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

            def tabove(b):
                return tm[b] - tfloor if tm[b] is not None and tfloor is not None else None

            for label, tc in (("wall", tc), ("CPU", overhead.get("train_per_call_cpu_s"))):
                if not tc:
                    continue
                tm = {b: med(tc.get(b, [])) for b in tcols}
                tcells = [fmt_stat(tc[b]) if tc.get(b) else
                          f"FAILED ({terr.get(b, {}).get('type', '?')})" for b in tcols]
                tfloor = tm["dynamo"]
                w(f"| {label} | {' | '.join(tcells)} | {fmt_ratio(tm['trnc'], tm['inductor'])} | "
                  f"{fmt_ratio(tm['trnc'], tm['eager'])} | {fmt_s(tabove('inductor'))} | "
                  f"{fmt_s(tabove('trnc'))} | {fmt_ratio(tabove('trnc'), tabove('inductor'))} |")
            w("")

    errs = []
    for s, e in zip(sums, ents):
        seen = set()
        for where, er in [("cold trnc", s.get("cold_trnc_err")),
                          ("cold inductor", s.get("cold_inductor_err")),
                          *[(f"steady {b}", v) for b, v in s["steady_err"].items()]]:
            if er and er["first_line"] not in seen:
                seen.add(er["first_line"])
                msg = er["message"]
                if len(msg) > 1200:
                    msg = msg[:1200] + " …"
                errs.append(f"* **{s['entry']}**, {where}: `{er['type']}`\n\n  ```\n  "
                            + msg.replace("\n", "\n  ") + "\n  ```")
    if errs:
        w("## Failures\n")
        w("Entries that did not compile or run are kept in the tables (FAILED) with the "
          "error here (truncated; `bench/results.json` has more).\n")
        L.extend(errs)
        w("")
    w("![ratios](ratios.png)\n")
    notes = os.path.join(HERE, "analysis.md")
    if os.path.exists(notes):
        with open(notes) as f:
            w(f.read().rstrip() + "\n")
    with open(path, "w") as f:
        f.write("\n".join(L))


def plot(path: str, sums: list[dict], overhead: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s["entry"] for s in sums]
    series = {
        "cold compile trnc/inductor": [ratio(med(s["cold_trnc"]), med(s["cold_inductor"]))
                                       for s in sums],
        "warm start trnc/inductor": [ratio(med(s["warm_trnc"]), med(s["warm_inductor"]))
                                     for s in sums],
        "step trnc/eager": [ratio(med(s["steady"].get("trnc", [])),
                                  med(s["steady"].get("eager", []))) for s in sums],
        "step trnc/inductor": [ratio(med(s["steady"].get("trnc", [])),
                                     med(s["steady"].get("inductor", []))) for s in sums],
    }
    gap = [ratio(s["cost"]["est_time_s"], s["roofline"]["bound_s"])
           if s.get("cost") and s.get("roofline") else None for s in sums]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5),
                                   gridspec_kw={"width_ratios": [3, 1.4]})
    n = len(series)
    width = 0.8 / n
    for i, (label, vals) in enumerate(series.items()):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(names))]
        ax1.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width, label=label)
        for x, v in zip(xs, vals):
            if v is None:
                ax1.text(x, 1, "×", ha="center", va="bottom", color="red", fontsize=9)
    pc = overhead.get("per_call_s", {})
    if pc.get("trnc") and pc.get("eager"):
        ax1.axhline(med(pc["trnc"]) / med(pc["eager"]), color="gray", ls=":", lw=1,
                    label="per-call overhead trnc/eager (8-element add)")
    ax1.axhline(1.0, color="black", lw=0.8)
    ax1.set_yscale("log")
    ax1.set_xticks(range(len(names)))
    ax1.set_xticklabels(names)
    ax1.set_ylabel("ratio (log; >1: trnc slower)")
    ax1.set_title("host ratios (× = failed / not measured)")
    ax1.legend(fontsize=8)
    ax2.bar([j for j, v in enumerate(gap) if v], [v for v in gap if v], color="tab:purple")
    for j, v in enumerate(gap):
        ax2.text(j, v if v else 1, f"{v:.3g}×" if v else "×", ha="center", va="bottom",
                 fontsize=8, color="black" if v else "red")
    ax2.set_yscale("log")
    ax2.set_xticks(range(len(names)))
    ax2.set_xticklabels(names, rotation=30, ha="right")
    ax2.set_title("trn2 cost-model estimate / roofline bound")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    import suite
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entries", default=",".join(suite.SUITE),
                   help=f"comma-separated subset of {', '.join(suite.SUITE)}")
    p.add_argument("--quick", action="store_true", help="one repetition each, few steps")
    p.add_argument("--out", default=HERE, help="directory for results.md/json, ratios.png")
    p.add_argument("--timeout", type=float, default=600.0, help="per worker process, seconds")
    p.add_argument("--keep-tmp", action="store_true")
    p.add_argument("--steady-only", action="store_true",
                   help="skip cold and warm starts: steady-state steps and per-call overhead only "
                        "(the simulator engines side by side)")
    p.add_argument("--render", action="store_true",
                   help="only rewrite results.md and ratios.png from results.json")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op / OpenMP threads in the workers (0: torch's default). "
                        "Default 1: trnc's simulator is single-threaded, and on a shared "
                        "machine OpenMP teams of 2 stall on preemption")
    a = p.parse_args()
    global THREADS
    THREADS = a.threads
    if a.render:
        with open(os.path.join(a.out, "results.json")) as f:
            d = json.load(f)
        sums = [summarize(e) for e in d["entries"]]
        write_markdown(os.path.join(a.out, "results.md"), d["machine"], sums, d["entries"],
                       d["overhead"], d["total_s"], d.get("quick", False))
        plot(os.path.join(a.out, "ratios.png"), sums, d["overhead"])
        return 0
    names = [n for n in a.entries.split(",") if n]
    for n in names:
        if n not in suite.SUITE:
            p.error(f"unknown entry {n!r}")
    t_start = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="trnc-bench-")
    m = machine()
    m.update(snapshot_package(tmp))
    m["threads"] = a.threads
    log(f"{m['nproc']} CPUs, {m['cpu']}, torch {m['torch']}; scratch {tmp}")
    ents = []
    try:
        for n in names:
            ents.append(run_entry(n, tmp, a.quick, a.timeout, a.steady_only))
        log("per-call overhead")
        overhead = worker(["overhead", "--calls", "500" if a.quick else "2000",
                           "--rounds", "3" if a.quick else "7"],
                          fresh_dirs(tmp, "overhead"), a.timeout)
    finally:
        if not a.keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    total = time.perf_counter() - t_start
    m["loadavg_end"] = os.getloadavg()[0]
    sums = [summarize(e) for e in ents]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"machine": m, "trn2": TRN2, "entries": ents, "overhead": overhead,
                   "total_s": total, "quick": a.quick}, f, indent=1, default=str)
    write_markdown(os.path.join(a.out, "results.md"), m, sums, ents, overhead, total, a.quick)
    plot(os.path.join(a.out, "ratios.png"), sums, overhead)
    log(f"done in {total / 60:.1f} min: {os.path.join(a.out, 'results.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
