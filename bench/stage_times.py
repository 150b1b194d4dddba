#!/usr/bin/env python3
"""Where a compile's time goes, for the graphs of `make demo` (the GPT-style
decoder, batch 2, sequence 37, width 96): inference forward, training
forward and backward. Side by side in one run, nothing asserted:

* lower: import, legality scan, graph passes, IR verifier (trnc_pipeline_run
  through its verify stage);
* compile: trnc's C compiler (the compile report's compile_s: emission, one
  hardware verification, the cost model);
* cache hit: a fresh process's load of the stored artifact from the local
  artifact cache (trnc_cache_get: header and payload checksums, then the
  artifact's fields and bindings; the program was verified when it entered
  the store);
* verified load: the same entry taken in from outside the store
  (trnc_cache_put_entry: what a remote-cache or MegaCache entry gets), which
  also runs the hardware verifier;
* full check: `trnc cache verify` of that one entry (trnc_cache_verify).

    .venv/bin/python bench/stage_times.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def median_s(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def demo_graphs() -> list[tuple[str, bytes]]:
    """The fx.proto bytes of the demo's three graphs, compiled once with the
    cache off."""
    os.environ["TRNC_CACHE"] = "0"
    import torch
    import torch.nn.functional as F

    import trnc
    from trnc import examples

    model, (idx,) = examples.gpt_decoder_example(batch=2, seq=37, d_model=96)
    model.eval()
    with torch.no_grad():
        torch.compile(model, backend="neuron", dynamic=False)(idx)
    torch._dynamo.reset()
    model.train()
    out = torch.compile(model, backend="neuron", dynamic=False)(idx)
    F.cross_entropy(out.reshape(-1, 256), idx.reshape(-1)).backward()
    recs = [r for r in trnc.last_graphs() if r.serialized]
    return [(r.kind, r.serialized) for r in recs[-3:]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    from trnc import _trnc, pipeline

    graphs = demo_graphs()
    print(f"{'graph':<10} {'lower ms':>9} {'compile ms':>11} {'cache hit ms':>13} "
          f"{'verified load ms':>17} {'full check ms':>14}")
    totals = [0.0] * 5
    for kind, data in graphs:
        lower_s = median_s(lambda: pipeline.lower(data, kind, warn=False), args.reps)
        lowered = pipeline.lower(data, kind, warn=False)
        compile_s = statistics.median(
            pipeline.compile_program(lowered).report()["compile_s"] for _ in range(args.reps))
        compiled = pipeline.compile_program(lowered)
        with tempfile.TemporaryDirectory() as d:
            cache, _, _ = _trnc.open_cache(dir=os.path.join(d, "store"))
            key, _, _ = _trnc.cache_key(lowered.graph)
            cache.put(key, compiled)
            entry, _ = cache.entry_bytes(key)

            def hit() -> None:  # a fresh in-process table each time: a disk hit
                c2, _, _ = _trnc.open_cache(dir=os.path.join(d, "store"))
                got, _ = c2.get(key)
                assert got is not None

            def taken_in() -> None:
                c3, _, _ = _trnc.open_cache(dir=tempfile.mkdtemp(dir=d))
                got, _, _, _ = c3.put_entry(entry, key=key)
                assert got is not None

            def full_check() -> None:
                c4, _, _ = _trnc.open_cache(dir=os.path.join(d, "store"))
                c4.verify()

            row = [lower_s, compile_s, median_s(hit, args.reps), median_s(taken_in, args.reps),
                   median_s(full_check, args.reps)]
        totals = [a + b for a, b in zip(totals, row)]
        print(f"{kind:<10} " + " ".join(f"{1e3 * v:>{w}.2f}" for v, w in zip(row, (9, 11, 13, 17, 14))))
    print(f"{'total':<10} " + " ".join(f"{1e3 * v:>{w}.2f}" for v, w in zip(totals, (9, 11, 13, 17, 14))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
