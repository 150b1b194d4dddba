#!/usr/bin/env python3
"""A Llama-style decoder block training step, compiled by trnc at realistic
size and costed on trn2: `make bench-llama`.

    .venv/bin/python bench/llama.py [--size full|small|D,H,F,T] [--out bench] [--top 15]

The block (bench/llama_model.py): width 2048, 16 heads of 128, SwiGLU MLP
5632, RMSNorm, rotary embeddings, causal SDPA, sequence 2048, batch 1, fp32
parameters under ``torch.autocast("cpu", bfloat16)``; the step is forward +
backward of ``out.float().pow(2).mean()`` (gradients of every parameter and
of x). It goes through ``torch.compile(backend="neuron",
options={"compile_only": True})`` in a fresh process with the artifact cache
off: the forward and backward programs are compiled, verified and costed but
not run (the simulator would take hours at this size; tests/python/
test_llama.py checks the values of the same block at a small size against
eager).

Reports, per program (forward, backward) and in total: kernels, NeuronCore
instructions, the C compiler's time (the report's ``compile_s``), the cost
model's trn2 time estimate, its TensorE and DMA utilization, the model FLOPs
(formula in llama_model.model_flops) and the model-FLOP utilization
MFU = model FLOPs / (estimated time x trn2 bf16 TensorE peak). Then the
kernels that dominate the estimate, from the ``TRNC_PROFILE`` Chrome traces
(each event's ``args.kernel``; kernels run one after another in the cost
model, so a kernel's time is the span from the previous kernel's end to its
last instruction's end). Writes OUT/llama-results.md (with the notes of
bench/llama-analysis.md at the end) and OUT/llama-results.json.
Every time in it is a cost-model estimate except the compile times.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# trn2 bf16 TensorE peak: 2 x 128 x 128 x 2.4 GHz (codegen/neuroncore/target.c)
from run import TRN2  # noqa: E402

PEAK = TRN2["tensor_bf16_flops"]


def _config(size: str):
    import llama_model as lm
    if size == "full":
        return lm.FULL
    if size == "small":
        return lm.SMALL
    d, h, f, t = (int(v) for v in size.split(","))
    return lm.LlamaConfig(d_model=d, n_heads=h, d_ff=f, seq=t)


def child(size: str, autocast_bf16: bool) -> dict:
    """In a fresh process: compile (only) one training step; the records."""
    import torch

    import llama_model as lm
    import trnc
    import trnc.cache as tc

    torch.set_num_threads(1)
    cpu = [0.0]
    compile_program = tc.compile_program

    def timed(*a, **kw):  # thread CPU time of the C compile: robust to a shared machine
        t = time.thread_time()
        try:
            return compile_program(*a, **kw)
        finally:
            cpu[0] += time.thread_time() - t
    tc.compile_program = timed
    cfg = _config(size)
    model, x = lm.build(cfg)
    cm = torch.compile(model, backend="neuron", dynamic=False,
                       options={"compile_only": True, "autocast_bf16": autocast_bf16})
    t0 = time.perf_counter()
    lm.train_step(cm, model, x)
    wall = time.perf_counter() - t0
    recs = trnc.last_graphs()
    return {"config": cfg.__dict__, "first_step_s": wall, "c_compile_cpu_s": cpu[0],
            "stats": trnc.stats(),
            "graphs": [{"name": r.name, "kind": r.kind, "report": r.report} for r in recs]}


def kernel_times(trace: str) -> list[dict]:
    """Per kernel of one program, in order: name, estimated time, TensorE busy
    time, instruction events (from a TRNC_PROFILE Chrome trace)."""
    with open(trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"
              and "kernel" in e.get("args", {})]
    out: list[dict] = []
    prev_end = 0.0
    for e in ev:
        name = e["args"]["kernel"]
        if not out or out[-1]["name"] != name:  # kernel names are unique in a program
            if out:
                prev_end = out[-1]["end_us"]
            out.append({"name": name, "start_us": prev_end, "end_us": prev_end,
                        "tensor_us": 0.0, "events": 0, "busy_us": {}})
        k = out[-1]
        k["end_us"] = max(k["end_us"], e["ts"] + e["dur"])
        k["events"] += 1
        if e.get("cat") == "tensor":
            k["tensor_us"] += e["dur"]
        k["busy_us"][e.get("cat", "?")] = k["busy_us"].get(e.get("cat", "?"), 0.0) + e["dur"]
    for k in out:
        k["time_us"] = k["end_us"] - k["start_us"]
        # the busiest engine (the 16 DMA queues as one, by their busiest queue)
        busy: dict[str, float] = {}
        for eng, us in k["busy_us"].items():
            eng = "DMA" if eng.startswith("dma") else eng
            busy[eng] = max(busy.get(eng, 0.0), us)
        k["busiest"] = max(busy, key=busy.get) if busy else "-"
        k["busiest_us"] = busy.get(k["busiest"], 0.0)
    return out


_INDEX = re.compile(r"^k\d+_")


def family(name: str) -> str:
    """A kernel's kind: its name without the leading kernel index
    ("k42_add" -> "add", named by the op that roots the kernel)."""
    return _INDEX.sub("", name)


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def summary(res: dict) -> dict:
    """Totals of one run's programs (forward + backward): kernels, instructions,
    C compile seconds, estimated seconds, TensorE peak-equivalent FLOPs ("pe"),
    time-weighted DMA bandwidth utilization x seconds ("dma"), model FLOPs and
    MFU. bench/run.py shows them beside the suite."""
    import llama_model as lm
    tot = {"kernels": 0, "instructions": 0, "compile_s": 0.0, "est_time_s": 0.0, "pe": 0.0,
           "dma": 0.0}
    for g in res["graphs"]:
        r = g["report"]
        tot["kernels"] += r["kernels"]
        tot["instructions"] += r["instructions"]
        tot["compile_s"] += r["compile_s"]
        tot["est_time_s"] += r["est_time_s"]
        tot["pe"] += r["tensor_flop_util"] * r["est_time_s"] * PEAK
        tot["dma"] += r["dma_bw_util"] * r["est_time_s"]
        tot[f"{g['kind']}_est_s"] = r["est_time_s"]
    tot["model_flops"] = lm.model_flops(lm.LlamaConfig(**res["config"]))["step"]
    t = tot["est_time_s"]
    tot["mfu"] = tot["model_flops"] / (t * PEAK) if t else 0.0
    return tot


def render(res: dict, top: int) -> str:
    import llama_model as lm
    cfg = lm.LlamaConfig(**res["config"])
    fl = lm.model_flops(cfg)
    L: list[str] = []
    w = L.append
    w("# Llama-style decoder block: trnc compile and trn2 cost-model estimate\n")
    w(f"Generated by `make bench-llama` (`bench/llama.py --size {res['size']}"
      f"{' --autocast-bf16' if res.get('autocast_bf16') else ''}`) on {res['date']}, "
      f"commit {res['commit']}; {res['machine']}. Do not edit by hand.\n")
    w(f"**Block** (`bench/llama_model.py`): width {cfg.d_model}, {cfg.n_heads} heads of "
      f"{cfg.head_dim}, SwiGLU MLP {cfg.d_ff}, RMSNorm, rotary embeddings, causal SDPA, "
      f"sequence {cfg.seq}, batch {cfg.batch}; fp32 parameters under "
      "`torch.autocast(\"cpu\", torch.bfloat16)`; training step = forward + backward of "
      "`out.float().pow(2).mean()` (gradients of every parameter and of x). Compiled with "
      "`torch.compile(backend=\"neuron\", options={\"compile_only\": True"
      + (", \"autocast_bf16\": True" if res.get("autocast_bf16") else "") + "})` in a fresh "
      "process, artifact cache off: programs compiled, verified and costed, not run.\n")
    w("**Every time below except the compile times is trnc's cost-model estimate for one "
      "trn2 NeuronCore** (codegen/neuroncore/cost.c), not a measurement. "
      f"MFU = model FLOPs / (estimate × {PEAK / 1e12:.1f} TFLOP/s, trn2's bf16 TensorE peak "
      "2 × 128 × 128 × 2.4 GHz from codegen/neuroncore/target.c).\n")
    w("**Model FLOPs** (PaLM's convention): forward = 2 × N × tokens + 4 × T² × d "
      f"(N = 4d² + 3d·f = {fl['params_matmul'] / 1e6:.2f} M projection weights; attention's "
      "q·kᵀ and p·v over the full T × T, the causal mask's zero half included); backward = "
      f"2 × forward. Forward {fl['forward'] / 1e9:.1f} GFLOP "
      f"({fl['forward_projections'] / 1e9:.1f} projections + "
      f"{fl['forward_attention'] / 1e9:.1f} attention), backward {fl['backward'] / 1e9:.1f}, "
      f"step {fl['step'] / 1e9:.1f} GFLOP: {fmt_ms(fl['step'] / PEAK)} at peak. *TensorE "
      "FLOPs* is what the programs execute on TensorE in peak-equivalent FLOPs "
      "(TensorE utilization × estimate × peak: includes TensorE transposes and the masked "
      "half of causal scores; an fp32 matmul counts 4× its FLOPs).\n")
    if "error" in res:
        w(f"**FAILED** after {res.get('elapsed_s', 0):.0f} s:\n\n```\n{res['error']}\n```\n")
        return "\n".join(L)
    w("| program | kernels | instructions | C compile (wall) | C compile per 1k instr. | "
      "est. time (trn2) | TensorE util | DMA BW util | model FLOPs | MFU | TensorE FLOPs |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot = summary(res)
    for g in res["graphs"]:
        r = g["report"]
        mf = fl["forward"] if g["kind"] == "forward" else fl["backward"]
        pe = r["tensor_flop_util"] * r["est_time_s"] * PEAK
        w(f"| {g['kind']} | {r['kernels']} | {r['instructions']:,} | {r['compile_s']:.2f} s | "
          f"{r['compile_s'] * 1e6 / max(1, r['instructions']):.1f} ms | {fmt_ms(r['est_time_s'])} | "
          f"{100 * r['tensor_flop_util']:.1f}% | {100 * r['dma_bw_util']:.1f}% | "
          f"{mf / 1e9:.1f} G | **{100 * mf / (r['est_time_s'] * PEAK):.1f}%** | {pe / 1e9:.1f} G |")
    t = tot["est_time_s"]
    w(f"| **step** | {tot['kernels']} | {tot['instructions']:,} | {tot['compile_s']:.2f} s | "
      f"{tot['compile_s'] * 1e6 / max(1, tot['instructions']):.1f} ms | {fmt_ms(t)} | "
      f"{100 * tot['pe'] / (t * PEAK):.1f}% | {100 * tot['dma'] / t:.1f}% | "
      f"{fl['step'] / 1e9:.1f} G | **{100 * fl['step'] / (t * PEAK):.1f}%** | "
      f"{tot['pe'] / 1e9:.1f} G |")
    w("")
    w(f"First training step in the process (dynamo, aot_autograd, serialization, C front end "
      f"and compiler, no execution): {res['first_step_s']:.1f} s; trnc's compile calls "
      f"{res['c_compile_cpu_s']:.1f} s of thread CPU time. Issue 13's target: MFU ≥ 50 %.\n")
    for g in res["graphs"]:
        ks = g.get("kernels")
        if not ks:
            continue
        total = sum(k["time_us"] for k in ks) or 1.0
        fam: dict[str, dict] = {}
        for k in ks:
            f = fam.setdefault(family(k["name"]), {"n": 0, "time_us": 0.0, "tensor_us": 0.0})
            f["n"] += 1
            f["time_us"] += k["time_us"]
            f["tensor_us"] += k["tensor_us"]
        w(f"### {g['kind']}: where the estimate goes ({len(ks)} kernels, "
          f"{total / 1e3:.3f} ms in the trace)\n")
        w("*TensorE busy*: TensorE instruction time inside the kernel(s) over their time. "
          "Kernels are named by index and the op that roots them.\n")
        w("*Busiest engine*: the engine (DMA: the busiest of the 16 queues) with the most "
          "instruction time in the kernel, and that time over the kernel's.\n")
        w("| kernel | est. time | share | TensorE busy | busiest engine | instructions traced |")
        w("|---|---:|---:|---:|---|---:|")
        for k in sorted(ks, key=lambda k: -k["time_us"])[:top]:
            tk = max(k["time_us"], 1e-9)
            w(f"| `{k['name']}` | {k['time_us'] / 1e3:.3f} ms | {100 * k['time_us'] / total:.1f}% | "
              f"{100 * k['tensor_us'] / tk:.0f}% | {k['busiest']} "
              f"{100 * k['busiest_us'] / tk:.0f}% | {k['events']:,} |")
        w("")
        w("By kind (root op), all kernels:\n")
        w("| kind | kernels | est. time | share | TensorE busy |")
        w("|---|---:|---:|---:|---:|")
        for name, f in sorted(fam.items(), key=lambda kv: -kv[1]["time_us"]):
            if f["time_us"] < 0.005 * total:
                continue
            w(f"| `{name}` | {f['n']} | {f['time_us'] / 1e3:.3f} ms | "
              f"{100 * f['time_us'] / total:.1f}% | "
              f"{100 * f['tensor_us'] / max(f['time_us'], 1e-9):.0f}% |")
        small = [f for f in fam.values() if f["time_us"] < 0.005 * total]
        if small:
            rt = sum(f["time_us"] for f in small)
            w(f"| {len(small)} kinds under 0.5% each | {sum(f['n'] for f in small)} | "
              f"{rt / 1e3:.3f} ms | {100 * rt / total:.1f}% | |")
        w("")
    notes = os.path.join(HERE, "llama-analysis.md")  # hand-written reading of the tables
    if os.path.exists(notes) and not res.get("autocast_bf16"):
        with open(notes) as f:
            w(f.read().rstrip() + "\n")
    return "\n".join(L)


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return "?"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="full",
                   help="full (default), small (the test's size) or d_model,heads,d_ff,seq")
    p.add_argument("--out", default=HERE, help="directory for llama-results.md/json")
    p.add_argument("--top", type=int, default=15, help="kernel kinds listed per program")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds for the compile")
    p.add_argument("--autocast-bf16", action="store_true",
                   help="also trnc's autocast_bf16 option: the matmuls torch.autocast leaves "
                        "in fp32 (SDPA's, which trnc decomposes in fp32) take bf16 inputs")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--render", action="store_true",
                   help="only rewrite llama-results.md from llama-results.json")
    a = p.parse_args(argv)
    if a.child:
        print("LLAMA_JSON " + json.dumps(child(a.size, a.autocast_bf16)), flush=True)
        return 0
    stem = "llama-results" + ("-autocast-bf16" if a.autocast_bf16 else "")
    md, js = os.path.join(a.out, stem + ".md"), os.path.join(a.out, stem + ".json")
    if a.render:
        with open(js) as f:
            res = json.load(f)
    else:
        tmp = tempfile.mkdtemp(prefix="trnc-llama-")
        env = dict(os.environ, TRNC_CACHE="0", TRNC_PROFILE=os.path.join(tmp, "trace.json"),
                   TRNC_LOG="info", OMP_NUM_THREADS="1")
        cpu = "?"
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
        except (OSError, StopIteration):
            pass
        res = {"size": a.size, "autocast_bf16": a.autocast_bf16,
               "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
               "commit": git_commit(),
               "machine": f"{os.cpu_count()} CPUs ({cpu}), load {os.getloadavg()[0]:.1f}",
               "config": dict(_config(a.size).__dict__)}
        print(f"[llama] compiling ({a.size}); traces in {tmp}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            pr = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                 "--size", a.size] + (["--autocast-bf16"] if a.autocast_bf16
                                                      else []), env=env, capture_output=True, text=True,
                                timeout=a.timeout)
            line = next((ln for ln in pr.stdout.splitlines() if ln.startswith("LLAMA_JSON ")),
                        None)
            if line is None:
                res["error"] = (pr.stderr or f"exit {pr.returncode}")[-4000:]
            else:
                res.update(json.loads(line[len("LLAMA_JSON "):]))
                res["log"] = [ln for ln in pr.stderr.splitlines() if ln.startswith("trnc: ")]
        except subprocess.TimeoutExpired:
            res["error"] = f"the compile did not finish in {a.timeout:.0f} s"
        res["elapsed_s"] = time.perf_counter() - t0
        for g in res.get("graphs", []):
            # one program per kind in this process: trace.forward-<name>.json
            traces = glob.glob(os.path.join(tmp, f"trace.{g['kind']}*.json"))
            if len(traces) == 1:
                g["kernels"] = kernel_times(traces[0])
        os.makedirs(a.out, exist_ok=True)
        with open(js, "w") as f:
            json.dump(res, f, indent=1)
    text = render(res, a.top)
    with open(md, "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if "error" in res else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
