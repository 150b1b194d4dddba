#!/usr/bin/env python3
"""Dropout's cost-model estimate, side by side in one run: host uniforms vs
Philox4x32-10 on the device (passes/decomp_random.c).

    .venv/bin/python bench/dropout_rng.py [--shape 2,37,384] [--p 0.1] [--target trn2]

* ``host uniforms``: the program trnc built before random numbers moved
  into the C library (python/trnc/random.py, removed): the uniforms are a
  float32 graph input of the dropout's shape, DMA'd in, then
  ``where(u < 1 - p, x / (1 - p), 0)`` and the mask;
* ``device Philox``: ``F.dropout`` as trnc compiles it now: one int32 [2]
  seed input, the generator in exact int32 GpSimd ops, the same compare and
  select.

Prints the compile report's estimate (est_time_s), kernels and instructions
per engine for each. Nothing is asserted (bench/ measures, tests assert).
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import trnc
from trnc import backend


def report(fn, *args, target: str) -> dict:
    torch._dynamo.reset()
    c = torch.compile(fn, backend="neuron", dynamic=False, options={"target": target})
    c(*args)
    r = backend.last_report()
    assert r is not None and trnc.stats()["errors"] == 0
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="2,37,384")
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--target", default="trn2")
    a = ap.parse_args()
    shape = tuple(int(s) for s in a.shape.split(","))
    p = a.p
    x = torch.randn(shape)
    u = torch.rand(shape)

    def host(x, u):          # what random.py rewrote native_dropout into
        keep = u < 1 - p
        return torch.where(keep, x * (1 / (1 - p)), 0.0), keep

    def device(x):
        return torch.ops.aten.native_dropout.default(x, p, True)

    rows = [("host uniforms", report(host, x, u, target=a.target)),
            ("device Philox", report(device, x, target=a.target))]
    print(f"dropout p={p} over {list(shape)} ({x.numel()} elements), target {a.target}")
    print(f"{'':16} {'est. time (us)':>15} {'kernels':>8} {'instructions':>13}  "
          f"TensorE/VectorE/ScalarE/GpSimd/DMA")
    for name, r in rows:
        e = r["engine_instructions"]
        eng = "/".join(str(e[k]) for k in ("tensor", "vector", "scalar", "gpsimd", "dma"))
        print(f"{name:16} {r['est_time_s'] * 1e6:15.2f} {r['kernels']:8d} "
              f"{r['instructions']:13d}  {eng}")
    print(f"ratio device / host: {rows[1][1]['est_time_s'] / rows[0][1]['est_time_s']:.2f}")


if __name__ == "__main__":
    main()
