"""`make demo`: a GPT-style language model over bytes, compiled with
``torch.compile(backend="neuron")``, runs inference on real text on the
NeuronCore simulator and is compared with eager PyTorch; then it trains for
50 AdamW steps on the text, its loss curve printed next to eager's.

    python -m trnc.demo [--text FILE] [--ir]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Text files every Debian machine has; the repository's README otherwise.
_TEXTS = ("/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0")


def _text(path: str | None) -> tuple[str, bytes]:
    candidates = [path] if path else list(_TEXTS)
    candidates.append(str(Path(__file__).resolve().parents[2] / "README.md"))
    for c in candidates:
        if c and os.path.isfile(c):
            data = Path(c).read_bytes()
            if len(data) >= 128:
                return c, data
    raise SystemExit(f"no text file found (tried {candidates}); pass --text FILE")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trnc.demo")
    p.add_argument("--text", help="a text file to tokenize by bytes (default: a license text)")
    p.add_argument("--ir", action="store_true", help="also print each graph's IR")
    args = p.parse_args(argv)

    import torch
    import torch.nn.functional as F

    import trnc
    from trnc import _trnc, examples

    print(f"trnc {trnc.__version__} (libtrnc {_trnc.version()}, LLVM {_trnc.llvm_version()}), "
          f"torch {torch.__version__}")
    path, data = _text(args.text)
    batch, seq = 2, 37
    ids = torch.tensor(list(data[: batch * seq + 1]), dtype=torch.long)
    idx = ids[:-1].view(batch, seq)
    targets = ids[1:].view(batch, seq)
    print(f"text: {path} ({len(data)} bytes); tokens = bytes, batch {batch} x seq {seq}: "
          f"{data[:seq].decode('latin-1')!r}")

    model, _ = examples.gpt_decoder_example(batch=batch, seq=seq, d_model=96)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: GPT-style decoder, 2 blocks, width 96, 4 heads, vocab 256, "
          f"tied LM head, {n_params} parameters\n")

    # ---- inference -----------------------------------------------------------
    model.eval()
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    with torch.no_grad():
        want = model(idx)
        t0 = time.perf_counter()
        try:
            got = compiled(idx)
        except Exception as e:  # noqa: BLE001
            inner = getattr(e, "inner_exception", e)
            print(f"compile failed: {type(inner).__name__}: {inner}", file=sys.stderr)
            return 1
        t1 = time.perf_counter()
        got = compiled(idx)
        t2 = time.perf_counter()
    r = trnc.last_report()
    err = (got - want).abs().max().item()
    print("inference (forward graph):")
    print(f"  max |trnc - eager| = {err:.3g} (logits up to {want.abs().max().item():.1f})")
    how = ("loaded from the artifact cache" if r.get("cache") in ("hit", "remote-hit")
           else f"trnc's C compiler took {r['compile_s'] * 1e3:.1f} ms of it")
    print(f"  first call (capture + compile + run) {t1 - t0:.2f} s ({how}); a second call "
          f"{1e3 * (t2 - t1):.1f} ms on the simulator")
    print(f"  program: {r['ir_nodes']} IR ops -> {r['kernels']} kernels, "
          f"{r['instructions']} instructions, HBM planned {r['hbm_planned_bytes']} B "
          f"(without reuse {r['hbm_unplanned_bytes']} B)")
    print(f"  estimated {r['target']} time per forward: {r['est_time_s'] * 1e6:.1f} us "
          f"(TensorE FLOP utilization {100 * r['tensor_flop_util']:.2f}%)")
    nll = F.cross_entropy(got.reshape(-1, 256), targets.reshape(-1)).item()
    print(f"  next-byte loss of the untrained model on the text: {nll:.3f} "
          f"(uniform would be {torch.log(torch.tensor(256.0)).item():.3f})\n")
    if args.ir:
        for rec in trnc.last_graphs():
            print(rec.text)

    # ---- training: 50 AdamW steps, side by side with eager -------------------
    import copy

    steps = 50
    text = torch.tensor(list(data), dtype=torch.long)
    gen = torch.Generator().manual_seed(0)
    starts = torch.randint(0, len(data) - seq - 1, (steps, batch), generator=gen)
    eager_model = copy.deepcopy(model).train()
    trnc_model = copy.deepcopy(model).train()
    opt_e = torch.optim.AdamW(eager_model.parameters(), lr=3e-3)
    opt_t = torch.optim.AdamW(trnc_model.parameters(), lr=3e-3)
    torch._dynamo.reset()
    train_step = torch.compile(trnc_model, backend="neuron", dynamic=False)
    print(f"training: {steps} AdamW steps (lr 3e-3) on windows of the text, "
          "trnc next to eager")
    print(f"  {'step':>4}  {'eager loss':>10}  {'trnc loss':>10}")
    t_first = None
    t_loop = time.perf_counter()
    for step in range(steps):
        win = torch.stack([text[s0:s0 + seq + 1] for s0 in starts[step].tolist()])
        x, y = win[:, :-1], win[:, 1:]
        for m, opt, fn in ((eager_model, opt_e, eager_model), (trnc_model, opt_t, train_step)):
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = F.cross_entropy(fn(x).reshape(-1, 256), y.reshape(-1))
            loss.backward()
            opt.step()
            if m is trnc_model:
                if t_first is None:
                    t_first = time.perf_counter() - t0
                lt = loss.item()
            else:
                le = loss.item()
        if step % 5 == 0 or step == steps - 1:
            print(f"  {step:>4}  {le:>10.4f}  {lt:>10.4f}")
    t_loop = time.perf_counter() - t_loop
    recs = [r for r in trnc.last_graphs() if r.kind in ("forward", "backward")][-2:]
    est = sum((r.report or {}).get("est_time_s", 0) for r in recs)
    flops = sum((r.report or {}).get("tensor_flop_util", 0) * (r.report or {}).get("est_time_s", 0)
                for r in recs)
    for r in recs:
        rr = r.report or {}
        print(f"  [{r.kind}] {r.summary['nodes']} IR ops -> {rr.get('kernels', '?')} kernels, "
              f"compile {1e3 * rr.get('compile_s', 0):.1f} ms in trnc's C compiler, "
              f"est. {rr.get('est_time_s', 0) * 1e6:.1f} us on {rr.get('target', '?')}")
    print(f"  first step (capture + compile both graphs + run) {t_first:.2f} s; "
          f"{steps} steps of both eager and trnc {t_loop:.1f} s")
    print(f"  estimated trn2 time per training step (forward + backward): {est * 1e6:.1f} us, "
          f"TensorE FLOP utilization {100 * flops / est if est else 0:.2f}%")
    st = trnc.stats()
    print(f"\ncompiled graphs: forward {st['forward']}, backward {st['backward']}, "
          f"inference {st['inference']} (TRNC_LOG=info prints a report per graph)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
