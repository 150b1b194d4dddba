/*
 * test_emit_core.c — the emitter's own kernels end to end (lower.c,
 * codegen/kir/, kir/matmul.c): graphs built with the
 * fx.proto builder are imported, legalized, compiled to a NeuronCore program
 * (verified against the hardware rules) and run on the simulator; results
 * are compared with plain C loops.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ir/ir.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define I64 TRNC__FX__DTYPE__INT64
#define INF TRNC__FX__GRAPH_KIND__INFERENCE
#define SH(...) ((const int64_t[]){__VA_ARGS__})

static trnc_compiled *compile_opt(tu_fx *b, const trnc_compile_options *o) {
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  trnc_status st = tu_fx_compile(b, o, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  return c;
}

static trnc_compiled *compile(tu_fx *b) { return compile_opt(b, NULL); }

static void run(trnc_compiled *c, const void *const *in, void *const *out) {
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_compiled_run(c, in, out, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
}

static void fill(float *x, int64_t n, unsigned seed) {
  uint32_t s = seed * 2654435761u + 1u;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((double)(s >> 8) / 16777216.0 * 4.0 - 2.0);
  }
}

static void close_to(const float *got, const double *want, int64_t n, double tol, const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
      fail_msg("%s[%lld]: got %.9g want %.9g", what, (long long)i, (double)got[i], want[i]);
}

static void add_nones(tu_fx *b, uint32_t n, int k) {
  for (int i = 0; i < k; i++) tu_arg(b, n, tu_a_none(b, ""));
}

/* Regression: arange.default (end only) produced zeros (its step was 0). */
static void test_arange_variants(void **state) {
  for (int variant = 0; variant < 3; variant++) {
    tu_fx *b = tu_fx_new(INF);
    uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 0, NULL));
    int64_t len = variant == 0 ? 37 : variant == 1 ? 32 : 12;
    const char *tgt = variant == 0 ? "aten.arange.default"
                      : variant == 1 ? "aten.arange.start" : "aten.arange.start_step";
    uint32_t a = tu_call(b, "arange", tgt, tu_meta(b, F32, 1, SH(len)));
    if (variant == 0) tu_arg(b, a, tu_a_int(b, "end", 37));
    if (variant == 1) {
      tu_arg(b, a, tu_a_int(b, "start", 5));
      tu_arg(b, a, tu_a_int(b, "end", 37));
    }
    if (variant == 2) {
      tu_arg(b, a, tu_a_int(b, "start", 40));
      tu_arg(b, a, tu_a_int(b, "end", 4));
      tu_arg(b, a, tu_a_int(b, "step", -3));
    }
    tu_arg(b, a, tu_a_dtype(b, "dtype", F32));
    add_nones(b, a, 3);
    uint32_t s = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 1, SH(len)));
    tu_arg(b, s, tu_a_ref(b, "self", a, 0));
    tu_arg(b, s, tu_a_ref(b, "other", x, 0));
    tu_arg(b, s, tu_a_int(b, "alpha", 1));
    tu_output_ref(b, s, 0);
    trnc_compiled *c = compile(b);
    float xv = 0.5f, out[64];
    const void *in[1] = {&xv};
    void *o[1] = {out};
    run(c, in, o);
    for (int64_t i = 0; i < len; i++) {
      double want = (variant == 0 ? (double)i : variant == 1 ? 5.0 + (double)i : 40.0 - 3.0 * (double)i) + 0.5;
      if (out[i] != (float)want) fail_msg("variant %d [%lld]: got %g want %g", variant, (long long)i, out[i], want);
    }
    trnc_compiled_destroy(c);
    tu_fx_free(b);
  }
}

/* relu(x * w + b) with broadcasting over [N, C, H, W] by [1, C, 1, 1]: one
 * fused kernel; also exercises a 1-D split over all partitions. */
static void test_fused_broadcast_chain(void **state) {
  const int64_t N = 2, C = 5, H = 7, W = 9, n = N * C * H * W;
  tu_fx *b = tu_fx_new(INF);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 4, SH(N, C, H, W)));
  uint32_t w = tu_placeholder(b, "w", tu_meta(b, F32, 4, SH(1, C, 1, 1)));
  uint32_t m = tu_call(b, "mul", "aten.mul.Tensor", tu_meta(b, F32, 4, SH(N, C, H, W)));
  tu_arg(b, m, tu_a_ref(b, "self", x, 0));
  tu_arg(b, m, tu_a_ref(b, "other", w, 0));
  uint32_t a = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 4, SH(N, C, H, W)));
  tu_arg(b, a, tu_a_ref(b, "self", m, 0));
  tu_arg(b, a, tu_a_float(b, "other", 0.25));
  tu_arg(b, a, tu_a_int(b, "alpha", 1));
  uint32_t r = tu_call(b, "relu", "aten.relu.default", tu_meta(b, F32, 4, SH(N, C, H, W)));
  tu_arg(b, r, tu_a_ref(b, "self", a, 0));
  tu_output_ref(b, r, 0);
  trnc_compiled *c = compile(b);
  assert_int_equal(trnc_compiled_report(c)->kernels, 1);
  float *xv = malloc(sizeof(float) * n), wv[5], *out = malloc(sizeof(float) * n);
  double *ref = malloc(sizeof(double) * n);
  fill(xv, n, 1);
  fill(wv, C, 2);
  for (int64_t i = 0; i < n; i++) {
    float t = xv[i] * wv[(i / (H * W)) % C];
    t = t + 0.25f;
    ref[i] = t > 0 ? t : 0;
  }
  const void *in[2] = {xv, wv};
  void *o[1] = {out};
  run(c, in, o);
  close_to(out, ref, n, 0, "fused");
  free(xv);
  free(out);
  free(ref);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
}

/* relu(addmm(bias, x, W^T)) over placeholders x [M, K], w [N, K] and
 * bias [N]; returns the relu node. */
static uint32_t linear_relu(tu_fx *b, uint32_t x, uint32_t w, uint32_t bias, int64_t M, int64_t K,
                            int64_t N) {
  Trnc__Fx__TensorMeta *tm = tu_meta(b, F32, 2, SH(K, N));
  tm->stride[0]->value = 1;
  tm->stride[1]->value = K;
  uint32_t t = tu_call(b, "t", "aten.t.default", tm);
  tu_arg(b, t, tu_a_ref(b, "self", w, 0));
  uint32_t mm = tu_call(b, "addmm", "aten.addmm.default", tu_meta(b, F32, 2, SH(M, N)));
  tu_arg(b, mm, tu_a_ref(b, "self", bias, 0));
  tu_arg(b, mm, tu_a_ref(b, "mat1", x, 0));
  tu_arg(b, mm, tu_a_ref(b, "mat2", t, 0));
  tu_arg(b, mm, tu_a_int(b, "beta", 1));
  tu_arg(b, mm, tu_a_int(b, "alpha", 1));
  uint32_t r = tu_call(b, "relu", "aten.relu.default", tu_meta(b, F32, 2, SH(M, N)));
  tu_arg(b, r, tu_a_ref(b, "self", mm, 0));
  return r;
}

/* addmm(bias, x, W^T) then relu: transposed orientation, bias and relu fused
 * into the PSUM evacuation; 130 rows (two partition tiles of N), K = 200. */
static void test_linear_relu_epilogue(void **state) {
  const int64_t M = 21, K = 200, N = 130;
  tu_fx *b = tu_fx_new(INF);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, SH(M, K)));
  uint32_t w = tu_placeholder(b, "w", tu_meta(b, F32, 2, SH(N, K)));
  uint32_t bias = tu_placeholder(b, "bias", tu_meta(b, F32, 1, SH(N)));
  uint32_t r = linear_relu(b, x, w, bias, M, K, N);
  tu_output_ref(b, r, 0);
  trnc_compiled *c = compile(b);
  assert_int_equal(trnc_compiled_report(c)->kernels, 1);
  float *xv = malloc(sizeof(float) * M * K), *wv = malloc(sizeof(float) * N * K), bv[130];
  float *out = malloc(sizeof(float) * M * N);
  double *ref = malloc(sizeof(double) * M * N);
  fill(xv, M * K, 3);
  fill(wv, N * K, 4);
  fill(bv, N, 5);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = bv[j];
      for (int64_t k = 0; k < K; k++) s += (double)xv[i * K + k] * wv[j * K + k];
      ref[i * N + j] = s > 0 ? s : 0;
    }
  const void *in[3] = {xv, wv, bv};
  void *o[1] = {out};
  run(c, in, o);
  close_to(out, ref, M * N, 1e-5, "linear_relu");
  free(xv);
  free(wv);
  free(out);
  free(ref);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
}

/* res + relu(addmm(bias, x, W^T)) * s: the relu in the evacuation, then an
 * epilogue tail on each output tile with a residual of the result's shape
 * (the add's first operand) and a row-broadcast scale; 130 rows (two
 * partition tiles), one kernel. */
static void test_linear_residual_epilogue(void **state) {
  const int64_t M = 130, K = 200, N = 96;
  tu_fx *b = tu_fx_new(INF);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, SH(M, K)));
  uint32_t w = tu_placeholder(b, "w", tu_meta(b, F32, 2, SH(N, K)));
  uint32_t bias = tu_placeholder(b, "bias", tu_meta(b, F32, 1, SH(N)));
  uint32_t res = tu_placeholder(b, "res", tu_meta(b, F32, 2, SH(M, N)));
  uint32_t sc = tu_placeholder(b, "s", tu_meta(b, F32, 1, SH(N)));
  uint32_t r = linear_relu(b, x, w, bias, M, K, N);
  uint32_t ml = tu_call(b, "mul", "aten.mul.Tensor", tu_meta(b, F32, 2, SH(M, N)));
  tu_arg(b, ml, tu_a_ref(b, "self", r, 0));
  tu_arg(b, ml, tu_a_ref(b, "other", sc, 0));
  uint32_t ad = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 2, SH(M, N)));
  tu_arg(b, ad, tu_a_ref(b, "self", res, 0));
  tu_arg(b, ad, tu_a_ref(b, "other", ml, 0));
  tu_arg(b, ad, tu_a_int(b, "alpha", 1));
  tu_output_ref(b, ad, 0);
  trnc_compiled *c = compile(b);
  assert_int_equal(trnc_compiled_report(c)->kernels, 1);
  float *xv = malloc(sizeof(float) * M * K), *wv = malloc(sizeof(float) * N * K), bv[96], sv[96];
  float *rv = malloc(sizeof(float) * M * N), *out = malloc(sizeof(float) * M * N);
  double *ref = malloc(sizeof(double) * M * N);
  fill(xv, M * K, 3);
  fill(wv, N * K, 4);
  fill(bv, N, 5);
  fill(sv, N, 6);
  fill(rv, M * N, 7);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = bv[j];
      for (int64_t k = 0; k < K; k++) s += (double)xv[i * K + k] * wv[j * K + k];
      ref[i * N + j] = rv[i * N + j] + (s > 0 ? s : 0) * sv[j];
    }
  const void *in[5] = {xv, wv, bv, rv, sv};
  void *o[1] = {out};
  run(c, in, o);
  close_to(out, ref, M * N, 1e-4, "linear_residual"); /* |res - relu(.) s| cancels */
  free(xv);
  free(wv);
  free(rv);
  free(out);
  free(ref);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
}

/* sum over dims (0, 2) with keepdim of [3, 150, 40] and a full mean of it
 * (partials folded across partitions on TensorE). */
static void test_reductions(void **state) {
  const int64_t A = 3, B = 150, Cn = 40, n = A * B * Cn;
  tu_fx *b = tu_fx_new(INF);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 3, SH(A, B, Cn)));
  uint32_t s = tu_call(b, "sum", "aten.sum.dim_IntList", tu_meta(b, F32, 3, SH(1, B, 1)));
  tu_arg(b, s, tu_a_ref(b, "self", x, 0));
  tu_arg(b, s, tu_a_ints(b, "dim", 2, SH(0, 2)));
  tu_arg(b, s, tu_a_bool(b, "keepdim", true));
  tu_arg(b, s, tu_a_none(b, "dtype"));
  uint32_t mn = tu_call(b, "mean", "aten.mean.default", tu_meta(b, F32, 0, NULL));
  tu_arg(b, mn, tu_a_ref(b, "self", x, 0));
  tu_arg(b, mn, tu_a_none(b, "dtype"));
  uint32_t mx = tu_call(b, "amax", "aten.amax.default", tu_meta(b, F32, 1, SH(A)));
  tu_arg(b, mx, tu_a_ref(b, "self", x, 0));
  tu_arg(b, mx, tu_a_ints(b, "dim", 2, SH(1, 2)));
  tu_arg(b, mx, tu_a_bool(b, "keepdim", false));
  tu_output_ref(b, s, 0);
  tu_output_ref(b, mn, 0);
  tu_output_ref(b, mx, 0);
  trnc_compiled *c = compile(b);
  float *xv = malloc(sizeof(float) * n), sv[150], mv, xm[3];
  fill(xv, n, 6);
  double rs[150] = {0}, rm = 0, rx[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = 0; i < A; i++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t k = 0; k < Cn; k++) {
        double v = xv[(i * B + j) * Cn + k];
        rs[j] += v;
        rm += v;
        rx[i] = fmax(rx[i], v);
      }
  rm /= (double)n;
  const void *in[1] = {xv};
  void *o[3] = {sv, &mv, xm};
  run(c, in, o);
  close_to(sv, rs, B, 1e-5, "sum");
  close_to(&mv, &rm, 1, 1e-5, "mean");
  close_to(xm, rx, A, 0, "amax");
  free(xv);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arange_variants),
      cmocka_unit_test(test_fused_broadcast_chain),
      cmocka_unit_test(test_linear_relu_epilogue),
      cmocka_unit_test(test_linear_residual_epilogue),
      cmocka_unit_test(test_reductions),
  };
  return cmocka_run_group_tests_name("emit_core", tests, NULL, NULL);
}
