/*
 * nc_bench.c — NeuronCore simulator throughput on the host and cost-model
 * estimates (not a test: prints numbers, asserts nothing about timing).
 *
 *   nc_bench cost FILE.s          cost-model report (TRNC_PROFILE=x.json for a trace)
 *   nc_bench sim  FILE.s [REPS]   simulator GFLOP/s on a tiled matmul program
 *                                 (checks the result against a reference)
 *   nc_bench ew   [REPS]          simulator throughput on elementwise programs
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trnc/neuroncore.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the process: on a shared machine, wall time counts the other
 * jobs' time slices too */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  fclose(f);
  if (b) b[n] = 0;
  *len = (size_t)n;
  return b;
}

static trnc_nc_program *load(const char *path) {
  size_t len;
  char *text = slurp(path, &len);
  if (!text) { fprintf(stderr, "cannot read %s\n", path); return NULL; }
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  if (trnc_nc_program_parse(text, len, &p, d) || trnc_nc_program_verify(p, d)) {
    char *s = trnc_diags_format(d);
    fprintf(stderr, "%s", s);
    trnc_free(s);
    trnc_nc_program_destroy(p);
    p = NULL;
  }
  trnc_diags_destroy(d);
  free(text);
  return p;
}

static int cmd_cost(const char *path) {
  trnc_nc_program *p = load(path);
  if (!p) return 1;
  trnc_nc_cost c;
  trnc_diags *d = trnc_diags_create();
  if (trnc_nc_cost_estimate(p, NULL, &c, d)) {
    /* e.g. TRNC_PROFILE names a path that cannot be written: say which and why */
    char *s = trnc_diags_format(d);
    fprintf(stderr, "%s: cost estimate failed\n%s", path, s && s[0] ? s : "(no diagnostics)\n");
    trnc_free(s);
    trnc_diags_destroy(d);
    trnc_nc_program_destroy(p);
    return 1;
  }
  char *s = trnc_nc_cost_format(p, &c);
  printf("%s: %s", path, s);
  trnc_free(s);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
  return 0;
}

/* the matmul programs of bench/gen_matmul_asm.py: buffers at [K,M], b [K,N], c [M,N] bf16 */
static int cmd_sim(const char *path, int reps) {
  trnc_nc_program *p = load(path);
  if (!p) return 1;
  int64_t M = 0, K = 0, N = 0;
  const trnc_nc_buffer *bat = trnc_nc_program_buffer(p, 0), *bb = trnc_nc_program_buffer(p, 1),
                       *bc = trnc_nc_program_buffer(p, 2);
  /* sizes: at = K*M*2, b = K*N*2, c = M*N*2 -> solve */
  double km = bat->bytes / 2.0, kn = bb->bytes / 2.0, mn = bc->bytes / 2.0;
  K = (int64_t)llround(sqrt(km * kn / mn));
  M = (int64_t)llround(km / K);
  N = (int64_t)llround(kn / K);
  uint16_t *at = malloc(bat->bytes), *b = malloc(bb->bytes), *c = malloc(bc->bytes);
  unsigned s = 1;
  for (int64_t i = 0; i < K * M; i++) { s = s * 1103515245u + 12345u; at[i] = (uint16_t)trnc_nc_encode(TRNC_BF16, ((s >> 9) & 1023) / 512.0f - 1.0f); }
  for (int64_t i = 0; i < K * N; i++) { s = s * 1103515245u + 12345u; b[i] = (uint16_t)trnc_nc_encode(TRNC_BF16, ((s >> 9) & 1023) / 512.0f - 1.0f); }
  const void *ins[] = {at, b};
  void *outs[] = {c};
  trnc_diags *d = trnc_diags_create();
  /* a run plan, as a compiled artifact has: the JIT (TRNC_SIM=jit) compiles
   * on the first run and every later run reuses its host code */
  trnc_nc_sim_plan *plan = NULL;
  if (trnc_nc_sim_plan_create(p, &plan, d)) { fprintf(stderr, "plan failed\n"); return 1; }
  double best = 1e30, best_cpu = 1e30, first = 0;
  for (int r = 0; r <= reps; r++) {
    double t0 = now(), c0 = cpu_now();
    if (trnc_nc_simulate_planned(plan, ins, outs, NULL, d)) { fprintf(stderr, "simulation failed\n"); return 1; }
    double t = now() - t0, c = cpu_now() - c0;
    if (r == 0) first = t;
    else if (t < best) best = t;
    if (r > 0 && c < best_cpu) best_cpu = c;
  }
  double jit_s = trnc_nc_sim_plan_jit_seconds(plan);
  trnc_nc_sim_plan_destroy(plan);
  /* reference: fp32 sum over k ascending, rounded to bf16 */
  float *acc = calloc((size_t)N, sizeof *acc);
  int64_t bad = 0;
  for (int64_t m = 0; m < M; m++) {
    memset(acc, 0, (size_t)N * sizeof *acc);
    for (int64_t k = 0; k < K; k++) {
      float a = trnc_nc_decode(TRNC_BF16, at[k * M + m]);
      for (int64_t n = 0; n < N; n++) acc[n] += a * trnc_nc_decode(TRNC_BF16, b[k * N + n]);
    }
    for (int64_t n = 0; n < N; n++) bad += c[m * N + n] != (uint16_t)trnc_nc_encode(TRNC_BF16, acc[n]);
  }
  double flops = trnc_nc_program_matmul_flops(p);
  printf("sim matmul %lldx%lldx%lld bf16: %.3f s, %.2f GFLOP/s on the host (CPU time %.3f s, %.2f GFLOP/s; "
         "first run %.3f s, JIT compile %.3f s), %lld mismatches vs reference\n",
         (long long)M, (long long)K, (long long)N, best, flops / best * 1e-9, best_cpu, flops / best_cpu * 1e-9,
         first, jit_s, (long long)bad);
  free(acc); free(at); free(b); free(c);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
  return bad != 0;
}

/* y = act(x) op x over [128, F] f32 tiles (act = func on ScalarE, op on VectorE:
 * identity/add is x + x, silu/mul is silu(x) * x): DMA in, ScalarE, VectorE, DMA out */
static int cmd_ew_one(int reps, const char *func, const char *op, double flop_per_elem) {
  enum { F = 2048, TILES = 16 };
  char buf[1 << 16];
  int n = 0;
  n += snprintf(buf + n, sizeof buf - n, ".version 1\n.target trn2\n.buffer x input f32 %d\n.buffer y output f32 %d\n.kernel ew 4\n",
                128 * F * 4 * TILES, 128 * F * 4 * TILES);
  /* double-buffered: tile t uses buffer set t % 2 (x, act(x), y) */
  for (int t = 0; t < TILES; t++) {
    int o = t * F * 128 * 4, x = (t % 2) * F * 4, a = 2 * F * 4 + (t % 2) * F * 4, y = 4 * F * 4 + (t % 2) * F * 2;
    char w0[64] = "", w2[64] = "", w3[64] = "";
    if (t >= 2) {
      snprintf(w0, sizeof w0, " wait=s2>=%d", t - 1);
      snprintf(w2, sizeof w2, ",s3>=%d", t - 1);
      snprintf(w3, sizeof w3, ",s2>=%d", t - 1);
    }
    n += snprintf(buf + n, sizeof buf - n,
                  "dma%d dma_copy dst=sbuf[0:128]@%d:f32[[1,%d]] src0=hbm:x@%d:f32[[%d,128],[1,%d]] mode=direct%s signal=s0\n",
                  0, x, F, o, F, F, w0);
    n += snprintf(buf + n, sizeof buf - n,
                  "scalar activation dst=sbuf[0:128]@%d:f32[[1,%d]] src0=sbuf[0:128]@%d:f32[[1,%d]] func=%s imm0=1 imm1=0 wait=s0>=%d%s signal=s1\n",
                  a, F, x, F, func, t + 1, w3);
    n += snprintf(buf + n, sizeof buf - n,
                  "vector tensor_tensor dst=sbuf[0:128]@%d:bf16[[1,%d]] src0=sbuf[0:128]@%d:f32[[1,%d]] src1=sbuf[0:128]@%d:f32[[1,%d]] op=%s wait=s1>=%d%s signal=s2\n",
                  y, F, a, F, x, F, op, t + 1, w2);
    n += snprintf(buf + n, sizeof buf - n,
                  "dma1 dma_copy dst=hbm:y@%d:f32[[%d,128],[1,%d]] src0=sbuf[0:128]@%d:bf16[[1,%d]] mode=direct wait=s2>=%d signal=s3\n",
                  o, F, F, y, F, t + 1);
  }
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  if (trnc_nc_program_parse(buf, (size_t)n, &p, d) || trnc_nc_program_verify(p, d)) {
    char *s = trnc_diags_format(d);
    fprintf(stderr, "%s", s);
    return 1;
  }
  size_t elems = (size_t)128 * F * TILES;
  float *x = malloc(elems * 4), *y = malloc(elems * 4);
  for (size_t i = 0; i < elems; i++) x[i] = (float)(i % 1000) * 0.001f;
  const void *ins[] = {x};
  void *outs[] = {y};
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    trnc_nc_simulate_verified(p, ins, outs, d);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("sim elementwise [128 x %d] x %d tiles (activation %s, tensor_tensor %s, bf16 store, DMA in/out): "
         "%.4f s, %.2f Gelem/s per instruction, %.2f GFLOP/s (%.0f flop/elem)\n",
         F, TILES, func, op, best, 2.0 * elems / best * 1e-9, flop_per_elem * elems / best * 1e-9, flop_per_elem);
  trnc_nc_cost c;
  trnc_nc_cost_estimate(p, NULL, &c, d);
  char *s = trnc_nc_cost_format(p, &c);
  printf("%s", s);
  trnc_free(s);
  free(x); free(y);
  trnc_nc_program_destroy(p);
  trnc_diags_destroy(d);
  return 0;
}

static int cmd_ew(int reps) {
  /* identity: x*scale + bias (2 flop) then add (1); silu: ~4 flop then mul (1) */
  return cmd_ew_one(reps, "identity", "add", 3.0) | cmd_ew_one(reps, "silu", "mul", 5.0);
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "cost")) return cmd_cost(argv[2]);
  if (argc >= 3 && !strcmp(argv[1], "sim")) return cmd_sim(argv[2], argc > 3 ? atoi(argv[3]) : 3);
  if (argc >= 2 && !strcmp(argv[1], "ew")) return cmd_ew(argc > 2 ? atoi(argv[2]) : 3);
  fprintf(stderr, "usage: nc_bench cost FILE.s | sim FILE.s [REPS] | ew [REPS]\n");
  return 2;
}
