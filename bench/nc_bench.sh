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
  $(pkg-config --libs libprotobuf-c libxxhash) $(llvm-config-16 --ldflags --libs) -lm -o build/nc-rel/nc_bench
B=build/nc-rel/nc_bench
for f in tests/asm/matmul_bf16_512x1024x2048.s tests/asm/matmul_bf16_256x256x1024.s; do $B cost "$f"; done
$B sim tests/asm/matmul_bf16_512x1024x2048.s 3
# The NKI matmul tutorial's kernels on trn1 against its Trn1 measurements
# (docs/cost-model.md): the first of each program's identical kernels is
# costed and the estimate scaled by their number.
echo "== NKI matmul tutorial, [4096,8192] @ [8192,8192] bf16, trn1"
for vm in tiled:51.80 hoist:42.96 block_free:22.07 optimized:6.97; do
  v=${vm%%:*} meas=${vm##*:}
  python3 bench/gen_nki_matmul_asm.py "$v" 4096 8192 8192 --kernels 1 > build/nc-rel/nki_$v.s
  total=$(sed -n 's/^# kernels: 1 of \([0-9]*\).*/\1/p' build/nc-rel/nki_$v.s)
  $B cost build/nc-rel/nki_$v.s | awk -v v="$v" -v n="$total" -v m="$meas" '/estimated/ {
    est = $5 * n / 1000; printf "%-10s estimate %7.3f ms  measured %6.2f ms  error %+5.1f%%\n", v, est, m, (est / m - 1) * 100 }'
done
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
