#!/usr/bin/env bash
# Builds libtrnc in Release (build/nc-rel) and runs the NeuronCore simulator
# and cost-model benchmark: cost-model estimate of the tiled matmul, host
# simulator GFLOP/s for matmul and elementwise programs, and a collective
# overlapped vs serialized.
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
# Collectives: a 2-rank tensor-parallel backward as compiled (the all_reduce
# hidden behind the weight-gradient kernels) and with each cc_wait moved up
# to its start (no overlap), side by side.
TP=tests/asm/tp_mlp_backward_2rank.s
awk 'NR == FNR { if ($1 == ".collective" && $2 == "cc_wait") w[$3] = $0; next }
     $1 == ".collective" && $2 == "cc_wait" { next }
     { print }
     $1 == ".collective" { for (i = 3; i <= NF; i++) if ($i ~ /^handle=/ && ($i in w)) print w[$i] }' \
  "$TP" "$TP" > build/nc-rel/tp_serialized.s
echo "== $TP (overlapped)"; $B cost "$TP"
echo "== the same, each cc_wait right after its start"; $B cost build/nc-rel/tp_serialized.s
