#!/usr/bin/env python3
"""Scaled-dot-product attention forward (or backward) through trnc's flash-attention
kernel (codegen/kir/attention.c): F.scaled_dot_product_attention of
[1, H, T, E] bf16 query, key and value, causal and not, through
torch.compile(backend="neuron"), compiled only (not run), each in a fresh
process with the artifact cache off. Prints, per case: NeuronCore
instructions, the C compiler's wall time, the cost model's trn2 estimate,
the TensorE utilization of the attention's own FLOPs (4 H T^2 E, half of
it when causal: the standard flash-attention count) and the report's
TensorE utilization (every matmul the kernel issues, including the second
pass's recomputed Q K^T and the causal mask's identity matmuls). With
--backward: the backward program (codegen/kir/attention_bw.c) of the same
call, its FLOPs counted as 2.5 times the forward's (five matmuls of T^2 E:
Q K^T recomputed, dO V^T, P^T dO, dS^T Q, dS K). These are cost-model
estimates, not measurements. Nothing asserts a time.

usage: bench/attention_scale.py [--backward] [TxExH ...]   (default 1024x64x8 4096x128x8)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SIZES = ["1024x64x8", "4096x128x8"]

_CHILD = r"""
import json, sys, torch, torch.nn.functional as F, trnc
t, e, h = (int(x) for x in sys.argv[1].split("x"))
causal, backward = sys.argv[2] == "1", sys.argv[3] == "1"
q, k, v = (torch.randn(1, h, t, e, dtype=torch.bfloat16, requires_grad=backward) for _ in range(3))
fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
with torch.set_grad_enabled(backward):
    out = torch.compile(fn, backend="neuron", options={"compile_only": True})(q, k, v)
if backward:
    out.sum().backward()
r = trnc.last_report()
print(json.dumps({k: r[k] for k in ("instructions", "kernels", "compile_s", "est_time_s", "tensor_flop_util",
                                    "target")}))
"""


def main(argv: list[str]) -> int:
    backward = "--backward" in argv
    sizes = [a for a in argv if a != "--backward"] or SIZES
    env = dict(os.environ, TRNC_CACHE="0")
    print(f"| bf16 attention {'backward ' if backward else ''}TxExH | causal | kernels | instructions | C compile | "
          "trn2 estimate | TensorE util (attention FLOPs) | TensorE util (issued matmuls) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        t, e, h = (int(x) for x in s.split("x"))
        for causal in (False, True):
            out = subprocess.run([sys.executable, "-c", _CHILD, s, "1" if causal else "0", "1" if backward else "0"],
                                 env=env, capture_output=True, text=True)
            if out.returncode:
                last = out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode
                print(f"| {s} | {causal} | FAILED: {last} |")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            flops = 4 * h * t * t * e * (0.5 if causal else 1.0) * (2.5 if backward else 1.0)
            util = flops / (128 * 128 * 2 * 2.4e9) / r["est_time_s"]  # trn2: 2.4 GHz TensorE (target.c)
            print(f"| {s} | {causal} | {r['kernels']} | {r['instructions']:,} | {r['compile_s'] * 1e3:.0f} ms | "
                  f"{r['est_time_s'] * 1e6:.0f} us | {100 * util:.1f}% | {100 * r['tensor_flop_util']:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
