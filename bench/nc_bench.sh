#!/usr/bin/env bash
# Builds libtrnc in Release (build/nc-rel) and runs the NeuronCore simulator
# and cost-model benchmark: cost-model estimate of the tiled matmul, host
# simulator GFLOP/s for matmul and elementwise programs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv/bin ] && export PATH="$PWD/.venv/bin:$PATH"
cmake -S . -B build/nc-rel -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/nc-rel --target trnc >/dev/null
${CC:-cc} -std=c11 -O3 -march=native -Iinclude bench/nc_bench.c build/nc-rel/libtrnc.a \
  $(pkg-config --libs libprotobuf-c libxxhash) -lm -o build/nc-rel/nc_bench
B=build/nc-rel/nc_bench
for f in tests/asm/matmul_bf16_512x1024x2048.s tests/asm/matmul_bf16_256x256x1024.s; do $B cost "$f"; done
$B sim tests/asm/matmul_bf16_512x1024x2048.s 3
$B ew 3
