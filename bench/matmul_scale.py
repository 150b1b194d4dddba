#!/usr/bin/env python3
"""How trnc's C compile time grows with program size: bf16 `a @ b` of
1024x2048x2048, 2048x4096x4096 and 4096x8192x8192 (the public NKI matmul
tutorial's size) through torch.compile(backend="neuron"), compiled only
(not run), each in a fresh process with the artifact cache off. Prints,
per size: NeuronCore instructions, the C compiler's wall time (the
report's compile_s) and the thread CPU time of the compile call (robust
to other load on a shared machine), each also per 1,000 instructions, and
the cost model's trn2 estimate and TensorE utilization. Nothing asserts a
time.

usage: bench/matmul_scale.py [MxKxN ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SIZES = ["1024x2048x2048", "2048x4096x4096", "4096x8192x8192"]

_CHILD = r"""
import json, sys, time, torch, trnc
import trnc.cache as cache
cpu = []
compile_program = cache.compile_program
def timed(*a, **kw):  # thread CPU time: robust to other load on a shared machine
    t = time.thread_time(); r = compile_program(*a, **kw); cpu.append(time.thread_time() - t); return r
cache.compile_program = timed
m, k, n = (int(x) for x in sys.argv[1].split("x"))
a, b = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)
torch.compile(lambda x, y: x @ y, backend="neuron", options={"compile_only": True})(a, b)
r = trnc.last_report()
res = {k: r[k] for k in ("instructions", "compile_s", "est_time_s", "tensor_flop_util")}
print(json.dumps(dict(res, cpu_s=sum(cpu))))
"""


def main(argv: list[str]) -> int:
    sizes = argv or SIZES
    env = dict(os.environ, TRNC_CACHE="0")
    print("| bf16 matmul MxKxN | instructions | C compile (wall) | per 1k instr. | C compile (thread CPU) | "
          "per 1k instr. | trn2 estimate | TensorE util |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        out = subprocess.run([sys.executable, "-c", _CHILD, s], env=env, capture_output=True, text=True)
        if out.returncode:
            print(f"| {s} | FAILED: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode} |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        n = r["instructions"]
        print(f"| {s} | {n:,} | {r['compile_s'] * 1e3:.0f} ms | {r['compile_s'] * 1e6 / n:.1f} ms | "
              f"{r['cpu_s'] * 1e3:.0f} ms | {r['cpu_s'] * 1e6 / n:.1f} ms | "
              f"{r['est_time_s'] * 1e3:.3f} ms | {100 * r['tensor_flop_util']:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
