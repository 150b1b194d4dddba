#!/usr/bin/env python3
"""Warm starts across machines: where a fresh process gets its programs.

    .venv/bin/python bench/fleet_start.py [--entries mlp,gpt-small] [--reps 3]

For every entry, each in a fresh process (bench/worker.py start: process
start to the end of the first training step, forward + backward):

* cold: empty local cache, Redis configured (this run fills Redis and saves
  the MegaCache blob);
* warm, local: the local cache directory the cold run filled;
* warm, Redis: an empty local cache directory and TRNC_REMOTE_CACHE (the
  "another machine" case; each rep gets a new empty directory);
* warm, MegaCache: an empty local cache directory and
  torch.compiler.load_cache_artifacts(blob) before compiling.

A warm run counts only when trnc compiled nothing. Two times per run: the
whole start (dominated by imports, dynamo, aot_autograd and the first step
on the simulator, the same in every mode) and the part that differs, the
time trnc spent getting its programs: trnc.cache.compile_program (lookup,
fetch, verification, local store, or the compile), plus
load_cache_artifacts for MegaCache (without the imports torch's loader
does first, of the Inductor, AOTAutograd and dynamo modules that register
their artifact types; that column is shown apart). Starts its own redis-server on 127.0.0.1
(Debian package redis-server). Prints medians and the ratios to the local
warm start; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "fleet-start-bench-signing-key-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(entry: str, env: dict[str, str]) -> dict:
    env = dict(env, BENCH_T0=repr(time.time()))
    p = subprocess.run([sys.executable, os.path.join(HERE, "worker.py"), "start", "--entry", entry,
                        "--backend", "trnc"], env=env, capture_output=True, text=True, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            return json.loads(line[len("BENCH_JSON "):])
    raise RuntimeError(f"worker failed: {p.stderr[-2000:]}")


def program_s(r: dict) -> float:
    return r.get("trnc_split", {}).get("compile_program_s", 0.0) + r.get("load_artifacts_s", 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", default="mlp,gpt-small")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    server = shutil.which("redis-server")
    if server is None:
        print("fleet_start: redis-server is not installed (make deps installs it)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="trnc-fleet-bench-")
    port = free_port()
    redis_proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                                   "--save", "", "--appendonly", "no"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TRNC_", "BENCH_"))}
    base.update(TRNC_CACHE_SIGNING_KEY=KEY, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"))
    rows = []
    n_dir = 0

    def fresh_dir() -> str:
        nonlocal n_dir
        n_dir += 1
        d = os.path.join(tmp, f"local-{n_dir}")
        os.makedirs(d, mode=0o700)
        return d

    try:
        for entry in a.entries.split(","):
            url = f"redis://127.0.0.1:{port}/{len(rows) % 16}"
            blob = os.path.join(tmp, f"{entry}.mega")
            local = fresh_dir()
            cold = worker(entry, dict(base, TRNC_CACHE_DIR=local, TRNC_REMOTE_CACHE=url,
                                      BENCH_SAVE_ARTIFACTS=blob))
            runs: dict[str, list[float]] = {"local": [], "redis": [], "megacache": []}
            progs: dict[str, list[float]] = {"local": [], "redis": [], "megacache": []}
            reg: list[float] = []
            dropped = 0
            for _ in range(a.reps):
                for how, env in (
                        ("local", dict(base, TRNC_CACHE_DIR=local)),
                        ("redis", dict(base, TRNC_CACHE_DIR=fresh_dir(), TRNC_REMOTE_CACHE=url)),
                        ("megacache", dict(base, TRNC_CACHE_DIR=fresh_dir(),
                                           BENCH_LOAD_ARTIFACTS=blob))):
                    r = worker(entry, env)
                    if "error" in r or r.get("stats", {}).get("compiles", 1) != 0:
                        dropped += 1
                        continue
                    runs[how].append(r["proc_to_first_step_s"])
                    progs[how].append(program_s(r))
                    if "artifact_registry_import_s" in r:
                        reg.append(r["artifact_registry_import_s"])
            med = {k: statistics.median(v) if v else float("nan") for k, v in runs.items()}
            pmed = {k: statistics.median(v) if v else float("nan") for k, v in progs.items()}
            rows.append((entry, cold["proc_to_first_step_s"], med, dropped,
                         cold.get("stats", {}).get("compiles", 0), program_s(cold), pmed,
                         statistics.median(reg) if reg else float("nan")))
    finally:
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"trnc getting its programs (ms; median of {a.reps}): compile_program, plus "
          "load_cache_artifacts for MegaCache\n")
    print("| entry | programs | cold (compile) | warm local | warm Redis | warm MegaCache | "
          "Redis/local | MegaCache/local | torch registry imports |")
    print("|---|---|---|---|---|---|---|---|---|")
    for entry, cold, m, dropped, n, pcold, p, reg_s in rows:
        print(f"| {entry} | {n} | {1e3 * pcold:.1f} | {1e3 * p['local']:.1f} | "
              f"{1e3 * p['redis']:.1f} | {1e3 * p['megacache']:.1f} | "
              f"{p['redis'] / p['local']:.2f}x | {p['megacache'] / p['local']:.2f}x | "
              f"{1e3 * reg_s:.0f} |")
    print(f"\nprocess start to end of first training step (s; median of {a.reps})\n")
    print("| entry | cold | warm local | warm Redis | warm MegaCache | Redis/local | "
          "MegaCache/local | warm runs dropped |")
    print("|---|---|---|---|---|---|---|---|")
    for entry, cold, m, dropped, n, pcold, p, reg_s in rows:
        print(f"| {entry} | {cold:.2f} | {m['local']:.2f} | {m['redis']:.2f} | "
              f"{m['megacache']:.2f} | {m['redis'] / m['local']:.2f}x | "
              f"{m['megacache'] / m['local']:.2f}x | {dropped} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
