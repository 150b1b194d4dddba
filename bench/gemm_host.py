#!/usr/bin/env python3
"""The NeuronCore simulator's bf16 matmul throughput on the host, side by
side with torch's CPU GEMM on the same core (one intra-op thread).

One forward `x @ W` (bf16, default 1024x2048x2048) compiled once with
torch.compile(backend="neuron") and run on the interpreter
(TRNC_SIM=interp) and on the JIT's host code (TRNC_SIM=jit); against it
torch.mm in bf16 (oneDNN: AMX tiles where the CPU has them), in bf16 with
oneDNN held to AVX-512 (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16, a child
process) and in fp32. The trnc times are the whole compiled call (DMA
in, 128x128x512 matmul tiles into PSUM, PSUM -> bf16, DMA out), the
simulator's own GEMM work and what surrounds it. Times are the minimum of
REPS runs of the calling thread's CPU time (robust to other load on a
shared machine); GFLOP/s = 2*M*K*N / time. Nothing asserts a time; the
trnc results are checked bit for bit between the engines and against an
fp32-accumulated torch reference.

usage: bench/gemm_host.py [MxKxN] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_TORCH_CHILD = r"""
import json, sys, time, torch
torch.set_num_threads(1)
m, k, n, reps = (int(v) for v in sys.argv[1:5])
torch.manual_seed(0)
a, b = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)
torch.mm(a, b)
best = 1e30
for _ in range(reps):
    t = time.thread_time(); torch.mm(a, b); best = min(best, time.thread_time() - t)
print(json.dumps({"s": best}))
"""


def _best(fn, reps: int) -> float:
    fn()
    best = 1e30
    for _ in range(reps):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size", nargs="?", default="1024x2048x2048")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    m, k, n = (int(v) for v in a.size.split("x"))
    import torch

    torch.set_num_threads(1)
    import trnc  # noqa: F401

    torch.manual_seed(0)
    x, w = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)
    flop = 2.0 * m * k * n
    rows: list[tuple[str, float]] = []

    cm = torch.compile(lambda p, q: p @ q, backend="neuron", dynamic=False)
    out = {}
    for engine in ("interp", "jit"):
        os.environ["TRNC_SIM"] = engine
        out[engine] = cm(x, w)  # compile (once) and, for the JIT, its host code
        rows.append((f"trnc simulator, {engine} (whole compiled call)", _best(lambda: cm(x, w), a.reps)))
    ref = (x.float() @ w.float()).bfloat16()
    same = torch.equal(out["interp"].view(torch.int16), out["jit"].view(torch.int16))
    close = (out["jit"].float() - ref.float()).abs().max().item()

    rows.append(("torch.mm bf16 (oneDNN, default ISA)", _best(lambda: torch.mm(x, w), a.reps)))
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_BF16")
    r = subprocess.run([sys.executable, "-c", _TORCH_CHILD, str(m), str(k), str(n), str(a.reps)],
                       env=env, capture_output=True, text=True)
    if r.returncode == 0:
        rows.append(("torch.mm bf16, ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 (no AMX)",
                     json.loads(r.stdout.strip().splitlines()[-1])["s"]))
    xf, wf = x.float(), w.float()
    rows.append(("torch.mm fp32", _best(lambda: torch.mm(xf, wf), a.reps)))

    amx = "amx_bf16" in open("/proc/cpuinfo").read()
    print(f"bf16 matmul {m}x{k}x{n} ({flop / 1e9:.1f} GFLOP), one thread, thread CPU time, best of {a.reps}"
          f" (host {'with' if amx else 'without'} AMX-BF16)")
    print("| what | time | GFLOP/s | vs torch.mm bf16 |")
    print("|---|---:|---:|---:|")
    t_ref = rows[2][1]
    for name, s in rows:
        print(f"| {name} | {s * 1e3:.1f} ms | {flop / s / 1e9:.1f} | {s / t_ref:.2f}x the time |")
    print(f"interpreter == JIT bit for bit: {same}; max |JIT - fp32-accumulated torch| after bf16: {close:g}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
