"""`make demo`: compile a small GPT-style model's forward and backward with
backend="neuron" and print each graph's IR summary.

    python -m trnc.demo [--ir]
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trnc.demo")
    p.add_argument("--ir", action="store_true", help="also print the full IR text")
    args = p.parse_args(argv)

    import torch

    import trnc
    from trnc import _trnc, examples

    print(f"trnc {trnc.__version__} (libtrnc {_trnc.version()}, LLVM {_trnc.llvm_version()}), "
          f"torch {torch.__version__}")
    model, (idx, targets) = examples.gpt_example(batch=2, seq=8)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: GPT-style decoder block, {n_params} parameters, "
          f"tokens {tuple(idx.shape)}")
    compiled = torch.compile(model, backend="neuron", dynamic=False)

    t0 = time.perf_counter()
    try:
        loss = compiled(idx, targets)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
    except Exception as e:  # noqa: BLE001
        inner = getattr(e, "inner_exception", e)
        print(f"\ncompile failed: {type(inner).__name__}: {inner}", file=sys.stderr)
        return 1

    print(f"forward: loss {loss.item():.4f}, first call (capture + compile) {t1 - t0:.2f} s; "
          f"backward first call {t2 - t1:.2f} s\n")
    for rec in trnc.last_graphs():
        s = rec.summary
        ops = sorted({line.split("=", 1)[1].strip().split("(")[0].split()[0]
                      for line in rec.text.splitlines() if "=" in line and "(" in line})
        print(f"[{rec.kind}] {rec.name}")
        print(f"  nodes {s['nodes']}, inputs {s['inputs']}, outputs {s['outputs']}, "
              f"constants {s['constants']}, distinct ops {s['distinct_ops']}")
        if ops:
            print(f"  ops: {' '.join(ops)}")
        print(f"  hash {rec.hash}, trnc compile {rec.compile_seconds * 1000:.1f} ms")
        if rec.report:
            r = rec.report
            print(f"  program: {r['kernels']} kernels, {r['instructions']} instructions, "
                  f"HBM planned {r['hbm_planned_bytes']} B, SBUF peak "
                  f"{r['sbuf_peak_bytes']} B/partition, est. {r['est_time_s'] * 1e6:.2f} us "
                  f"on {r['target']}, TensorE util {100 * r['tensor_flop_util']:.1f}%")
        if args.ir:
            print(rec.text)
    st = trnc.stats()
    print(f"\ncompiled graphs: forward {st['forward']}, backward {st['backward']}, "
          f"inference {st['inference']}")
    print("Both graphs ran as NeuronCore programs on trnc's simulator "
          "(TRNC_LOG=info prints a summary per graph).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
