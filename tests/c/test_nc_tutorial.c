/*
 * test_nc_tutorial.c — the trn1 (NeuronCore-v2) cost model against the
 * public measurements of the NKI matrix-multiplication tutorial, and the
 * trn1 target itself.
 *
 * The tutorial's four kernels for [4096,8192] @ [8192,8192] bf16 are
 * written as trnc programs by bench/gen_nki_matmul_asm.py; the Neuron SDK's
 * tutorial measured them on Trn1.32xlarge (one NeuronCore-v2) at
 * 51.80 / 42.96 / 22.07 / 6.97 ms (docs/cost-model.md has the table and the
 * sources). Each estimate must stay within the error stated there. The
 * full-size programs are costed, not simulated; the same generator's
 * 256x256x1024 programs (tests/asm/nki_matmul_*.s) and the tutorial's
 * single-tile basic kernel are simulated against a reference here.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "test_nc_util.h"

/* ---- the scaled-down programs compute the product -------------------------- */

/* C = A @ B for at = A^T [K,M], b [K,N] bf16; the K blocks of kblock rows
 * each sum in fp32 (PSUM) and, when kblock < K, accumulate into a bf16
 * result (the optimized kernel's SBUF result tiles). */
static void check_product(const char *rel, int M, int K, int N, int kblock) {
  trnc_nc_program *p = nc_load_asm(rel);
  uint16_t *at = malloc(sizeof(uint16_t) * K * M), *b = malloc(sizeof(uint16_t) * K * N);
  uint16_t *c = malloc(sizeof(uint16_t) * M * N);
  unsigned s = 11;
  for (int i = 0; i < K * M; i++) { s = s * 1103515245u + 12345u; at[i] = f2bf(((s >> 9) & 1023) / 256.0f - 2.0f); }
  for (int i = 0; i < K * N; i++) { s = s * 1103515245u + 12345u; b[i] = f2bf(((s >> 9) & 1023) / 256.0f - 2.0f); }
  const void *ins[] = {at, b};
  void *outs[] = {c};
  nc_run(p, ins, outs);
  float *part = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * N);
  for (int m = 0; m < M; m++) {
    for (int n = 0; n < N; n++) out[n] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kblock) {
      for (int n = 0; n < N; n++) part[n] = 0.0f;
      for (int k = k0; k < k0 + kblock; k++) {
        float a = bf2f(at[k * M + m]);
        for (int n = 0; n < N; n++) part[n] += a * bf2f(b[k * N + n]);
      }
      for (int n = 0; n < N; n++) out[n] = kblock < K ? bf2f(f2bf(out[n] + part[n])) : part[n];
    }
    for (int n = 0; n < N; n++) assert_int_equal(c[m * N + n], f2bf(out[n]));
  }
  free(part);
  free(out);
  free(at);
  free(b);
  free(c);
  trnc_nc_program_destroy(p);
}

static void test_tutorial_kernels_compute_the_product(void **state) {
  check_product("tests/asm/nki_matmul_basic_64x128x512.s", 64, 128, 512, 128);
  check_product("tests/asm/nki_matmul_tiled_256x256x1024.s", 256, 256, 1024, 256);
  check_product("tests/asm/nki_matmul_hoist_256x256x1024.s", 256, 256, 1024, 256);
  check_product("tests/asm/nki_matmul_block_free_256x256x1024.s", 256, 256, 1024, 256);
  /* TILES_IN_BLOCK_M,N,K = 1,1,1: two blocks in every dimension */
  check_product("tests/asm/nki_matmul_optimized_256x256x1024.s", 256, 256, 1024, 128);
}

/* ---- full size against the measurements ---------------------------------- */

/* Output of `gen_nki_matmul_asm.py ARGS` (malloc'd, NUL-terminated). */
static char *generate(const char *args, size_t *len) {
  const char *py = getenv("TRNC_TEST_PYTHON");
  const char *root = getenv("TRNC_SOURCE_DIR");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s %s/bench/gen_nki_matmul_asm.py %s", py && py[0] ? py : "python3",
           root ? root : ".", args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  assert_non_null(buf);
  for (size_t got; (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n < 2) {
      cap *= 2;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
  }
  int rc = pclose(f);
  if (rc != 0) fprintf(stderr, "'%s' failed (status %d)\n", cmd, rc);
  assert_int_equal(rc, 0);
  buf[n] = '\0';
  *len = n;
  return buf;
}

typedef struct tutorial_variant {
  const char *name;      /* generator variant */
  double measured_s;     /* the tutorial's Trn1 latency */
  double max_rel_err;    /* stated in docs/cost-model.md */
} tutorial_variant;

static const tutorial_variant k_variants[] = {
    {"tiled", 51.80e-3, 0.20},
    {"hoist", 42.96e-3, 0.20},
    {"block_free", 22.07e-3, 0.20},
    {"optimized", 6.97e-3, 0.15},
};

/* Estimate of the full program: its first `kernels` kernels costed, times
 * the number of identical kernels the header names. */
static double estimate_full(const char *variant, int kernels, trnc_nc_cost *first) {
  char args[256];
  snprintf(args, sizeof args, "%s 4096 8192 8192 --kernels %d", variant, kernels);
  size_t len;
  char *text = generate(args, &len);
  int nk = 0, total = 0;
  const char *h = strstr(text, "# kernels: ");
  assert_non_null(h);
  assert_int_equal(sscanf(h, "# kernels: %d of %d", &nk, &total), 2);
  assert_int_equal(nk, kernels);
  trnc_nc_program *p = nc_parse_text(text, len);
  free(text);
  assert_string_equal(trnc_nc_program_target(p)->name, "trn1");
  trnc_nc_cost c = nc_cost(p);
  if (first) *first = c;
  trnc_nc_program_destroy(p);
  return c.time_s * total / nk;
}

static void test_tutorial_estimates_match_trn1_measurements(void **state) {
  const double flops = 2.0 * 4096 * 8192 * 8192;
  const double peak = trnc_nc_target_peak_flops(trnc_nc_target_trn1(), TRNC_BF16);
  double prev = INFINITY;
  for (size_t v = 0; v < sizeof k_variants / sizeof k_variants[0]; v++) {
    const tutorial_variant *tv = &k_variants[v];
    trnc_nc_cost c;
    double est = estimate_full(tv->name, 1, &c);
    double err = est / tv->measured_s - 1.0;
    fprintf(stderr, "%-10s estimate %7.3f ms  measured %6.2f ms  error %+5.1f%%  TensorE %4.1f%%\n", tv->name,
            est * 1e3, tv->measured_s * 1e3, err * 100, flops / peak / est * 100);
    assert_true(fabs(err) <= tv->max_rel_err);
    assert_true(est >= flops / peak); /* never faster than the TensorE peak */
    assert_true(est < prev);          /* each optimization is faster, as measured */
    prev = est;
    if (!strcmp(tv->name, "optimized")) {
      assert_true(c.util[TRNC_NC_TENSOR] > 0.9); /* compute-bound */
    } else {
      assert_true(c.dma_util > 0.9);              /* DMA-bound */
      assert_true(c.util[TRNC_NC_TENSOR] < 0.35);
    }
  }
  /* kernels are identical: two cost twice one */
  double one = estimate_full("tiled", 1, NULL), two = estimate_full("tiled", 2, NULL);
  assert_true(fabs(one - two) <= 1e-9 * one);
}

/* ---- the trn1 target ------------------------------------------------------ */

static void test_trn1_target(void **state) {
  const trnc_nc_target *t = trnc_nc_target_by_name("trn1");
  assert_ptr_equal(t, trnc_nc_target_trn1());
  assert_string_equal(t->core, "NeuronCore-v2");
  assert_int_equal(t->sbuf_bytes_per_partition, 192 * 1024);
  /* 92 TFLOPS bf16, 23 fp32, cFP8 at the bf16 rate (no perf mode on NC-v2) */
  assert_true(fabs(trnc_nc_target_peak_flops(t, TRNC_BF16) - 2.0 * 128 * 128 * 2.8e9) < 1.0);
  assert_true(fabs(trnc_nc_target_peak_flops(t, TRNC_F32) * 4 - trnc_nc_target_peak_flops(t, TRNC_BF16)) < 1.0);
  assert_true(trnc_nc_target_peak_flops(t, TRNC_F8E5M2) == trnc_nc_target_peak_flops(t, TRNC_BF16));
  setenv("TRNC_TARGET", "trn1", 1);
  assert_ptr_equal(trnc_nc_target_default(NULL), t);
  unsetenv("TRNC_TARGET");
  assert_ptr_equal(trnc_nc_target_default(NULL), trnc_nc_target_trn2());
}

/* A program on .target T with a memset at SBUF byte offset off per partition. */
static trnc_nc_program *memset_at(const char *target, int64_t off) {
  char text[512];
  int n = snprintf(text, sizeof text,
                   ".version 1\n.target %s\n.kernel k 4\nvector memset dst=sbuf[0:128]@%lld:f32[[1,1024]] imm0=0\n",
                   target, (long long)off);
  return nc_parse_text(text, (size_t)n);
}

static void test_trn1_sbuf_capacity(void **state) {
  /* 200 KiB per partition fits NeuronCore-v3's 224 KiB, not v2's 192 KiB */
  trnc_nc_program *p = memset_at("trn2", 196 * 1024);
  nc_expect_ok(p);
  trnc_nc_program_destroy(p);
  p = memset_at("trn1", 196 * 1024);
  nc_expect_reject(p, "trn1", NULL);
  trnc_nc_program_destroy(p);
  p = memset_at("trn1", 188 * 1024);
  nc_expect_ok(p);
  trnc_nc_program_destroy(p);
}

/* NC-v2: VectorE and ScalarE take turns on PSUM, VectorE and GpSimd on SBUF.
 * An instruction holds a port from its start to its end; ports are granted
 * in list order. */
static void test_trn1_shared_ram_ports(void **state) {
  static const char body[] =
      ".kernel k 4\n"
      "gpsimd memset dst=sbuf[0:128]@8192:f32[[1,2048]] imm0=0\n"
      "vector memset dst=psum[0:128]@0:f32[[1,512]] imm0=0\n"
      "vector memset dst=psum[0:128]@2048:f32[[1,512]] imm0=0 signal=s0\n"
      "vector tensor_copy dst=sbuf[0:128]@0:f32[[1,512]] src0=psum[0:128]@0:f32[[1,512]]\n"
      "scalar tensor_copy dst=sbuf[0:128]@4096:f32[[1,512]] src0=psum[0:128]@2048:f32[[1,512]] wait=s0>=1\n";
  for (int trn1 = 0; trn1 < 2; trn1++) {
    char text[1024];
    int n = snprintf(text, sizeof text, ".version 1\n.target %s\n%s", trn1 ? "trn1" : "trn2", body);
    trnc_nc_program *p = nc_parse_text(text, (size_t)n);
    const trnc_nc_target *t = trnc_nc_program_target(p);
    double gps = (100 + 2048) / t->gpsimd_hz;        /* GpSimd memset */
    double vec = (100 + 512) / t->vector_hz;         /* each VectorE instruction */
    double act = (64 + 2 * 60 + 512) / t->scalar_hz; /* ScalarE copy, two RAM operands */
    double got = nc_cost(p).time_s;
    /* trn1: the VectorE copy (SBUF) waits for the GpSimd memset, the ScalarE
     * copy (PSUM) for the VectorE copy; trn2: the memsets and copies overlap */
    double want = trn1 ? fmax(gps, 2 * vec) + vec + act : fmax(fmax(3 * vec, 2 * vec + act), gps);
    if (fabs(got - want) > 1e-12) fprintf(stderr, "%s: got %.6g want %.6g\n", t->name, got, want);
    assert_true(fabs(got - want) <= 1e-12);
    trnc_nc_program_destroy(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trn1_target),
      cmocka_unit_test(test_trn1_sbuf_capacity),
      cmocka_unit_test(test_trn1_shared_ram_ports),
      cmocka_unit_test(test_tutorial_kernels_compute_the_product),
      cmocka_unit_test(test_tutorial_estimates_match_trn1_measurements),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
