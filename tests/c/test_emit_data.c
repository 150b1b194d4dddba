/*
 * test_emit_data.c — codegen/emit_data.c end to end: graphs built with the
 * fx.proto builder are imported, legality-checked, legalized, compiled to a
 * NeuronCore program and run on the simulator; results are compared with
 * plain C reference loops. Covers embedding (3-D index, > 128 rows, range
 * errors), embedding backward (duplicates, padding_idx), cat (middle dim,
 * non-contiguous inputs), stack, constant_pad_nd (positive and negative
 * pads), gather / index_select / index.Tensor (odd sizes > 128 rows, one and
 * two index tensors, negative wrap, adjacent and split), index_put (with and
 * without accumulate, duplicates), scatter.src / scatter.value /
 * scatter_add.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "trnc/neuroncore.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define I64 TRNC__FX__DTYPE__INT64
#define FWD TRNC__FX__GRAPH_KIND__FORWARD

/* ---- helpers ------------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}
static float rndf(void) { return (float)(rnd() % 2001) / 1000.0f - 1.0f; }
static float *randf(size_t n) {
  float *p = malloc(n * sizeof *p);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) p[i] = rndf();
  return p;
}
static int64_t *randi(size_t n, int64_t lo, int64_t hi) {
  int64_t *p = malloc(n * sizeof *p);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) p[i] = lo + (int64_t)(rnd() % (uint32_t)(hi - lo));
  return p;
}

static Trnc__Fx__TensorMeta *meta(tu_fx *b, Trnc__Fx__DType dt, int rank, const int64_t *shape) {
  return tu_meta(b, dt, (size_t)rank, shape);
}

static void set_strides(Trnc__Fx__TensorMeta *m, const int64_t *st) {
  for (size_t i = 0; i < m->n_stride; i++) m->stride[i]->value = st[i];
}

static Trnc__Fx__Arg *ref(tu_fx *b, uint32_t node) { return tu_a_ref(b, "", node, 0); }

/* Compiles the graph; returns the artifact (caller destroys). expect_lower:
 * false = the compile must fail with TRNC_ERR_UNSUPPORTED. */
static trnc_compiled *compile(tu_fx *b, bool expect_lower) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status st = tu_fx_import(b, NULL, &g, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  st = trnc_graph_check_lowerable(g, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  st = trnc_graph_legalize(g, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_compiled *c = NULL;
  st = trnc_compile(g, NULL, &c, d);
  if (!expect_lower) {
    assert_int_equal(st, TRNC_ERR_UNSUPPORTED);
    assert_null(c);
  } else {
    if (st) tu_diags_dump(d);
    assert_int_equal(st, TRNC_OK);
  }
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  return c;
}

static trnc_status run(trnc_compiled *c, const void *const *in, void *const *out, const char *expect_msg) {
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_compiled_run(c, in, out, d);
  if (expect_msg) {
    if (!tu_diags_have(d, expect_msg)) {
      tu_diags_dump(d);
      fail_msg("no diagnostic containing '%s'", expect_msg);
    }
  } else if (st) {
    tu_diags_dump(d);
  }
  trnc_diags_destroy(d);
  return st;
}

static void expect_close(const float *got, const float *want, size_t n, float tol) {
  for (size_t i = 0; i < n; i++) {
    float e = got[i] - want[i];
    if (e < 0) e = -e;
    if (!(e <= tol)) fail_msg("element %zu: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
  }
}

static double est_us(const trnc_compiled *c) { return trnc_compiled_report(c)->est_time_s * 1e6; }

/* With TRNC_TEST_VERBOSE set: the program's cost report and assembly. */
static void dump_cost(const trnc_compiled *c) {
  if (!getenv("TRNC_TEST_VERBOSE")) return;
  const trnc_nc_program *p = trnc_compiled_program(c);
  trnc_nc_cost cost;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_nc_cost_estimate(p, NULL, &cost, d), TRNC_OK);
  char *s = trnc_nc_cost_format(p, &cost), *a = trnc_nc_program_print(p);
  printf("%s\n%s\n", s, a);
  trnc_free(s);
  trnc_free(a);
  trnc_diags_destroy(d);
}

/* ---- embedding ------------------------------------------------------------------------ */

/* out[a,b,c,:] = w[idx[a,b,c], :] with idx [2,3,37] (222 rows > 128), V=256, D=96 */
static void test_embedding_3d(void **state) {
  (void)state;
  enum { V = 256, D = 96, A = 2, B = 3, C = 37, N = A * B * C };
  tu_fx *b = tu_fx_new(FWD);
  uint32_t w = tu_placeholder(b, "w", meta(b, F32, 2, (int64_t[]){V, D}));
  uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 3, (int64_t[]){A, B, C}));
  uint32_t e = tu_call(b, "emb", "aten.embedding.default", meta(b, F32, 4, (int64_t[]){A, B, C, D}));
  tu_arg(b, e, ref(b, w));
  tu_arg(b, e, ref(b, ix));
  tu_arg(b, e, tu_a_int(b, "padding_idx", -1));
  tu_arg(b, e, tu_a_bool(b, "scale_grad_by_freq", false));
  tu_arg(b, e, tu_a_bool(b, "sparse", false));
  tu_output_ref(b, e, 0);
  trnc_compiled *c = compile(b, true);
  float *wv = randf(V * D), *out = calloc(N * D, sizeof(float)), *ref_ = malloc(N * D * sizeof(float));
  int64_t *iv = randi(N, 0, V);
  iv[0] = V - 1;
  iv[N - 1] = 0;
  for (int i = 0; i < N; i++) memcpy(ref_ + i * D, wv + iv[i] * D, D * sizeof(float));
  const void *in[] = {wv, iv};
  void *outs[] = {out};
  assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
  assert_memory_equal(out, ref_, N * D * sizeof(float));
  /* out of range (eager: IndexError) and negative (eager does not wrap) */
  iv[5] = V;
  assert_int_equal(run(c, in, outs, "outside the 256 rows"), TRNC_ERR_LIMIT);
  iv[5] = -1;
  assert_int_equal(run(c, in, outs, "index -1"), TRNC_ERR_LIMIT);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
  free(wv);
  free(out);
  free(ref_);
  free(iv);
}

/* embedding [2,37] -> [V=256, D=96] and its backward (duplicates, padding_idx=3) */
static void test_embedding_backward(void **state) {
  (void)state;
  enum { V = 256, D = 96, A = 2, C = 37, N = A * C, PAD = 3 };
  tu_fx *b = tu_fx_new(FWD);
  uint32_t go = tu_placeholder(b, "grad", meta(b, F32, 3, (int64_t[]){A, C, D}));
  uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 2, (int64_t[]){A, C}));
  uint32_t e = tu_call(b, "embbw", "aten.embedding_dense_backward.default", meta(b, F32, 2, (int64_t[]){V, D}));
  tu_arg(b, e, ref(b, go));
  tu_arg(b, e, ref(b, ix));
  tu_arg(b, e, tu_a_int(b, "num_weights", V));
  tu_arg(b, e, tu_a_int(b, "padding_idx", PAD));
  tu_arg(b, e, tu_a_bool(b, "scale_grad_by_freq", false));
  tu_output_ref(b, e, 0);
  trnc_compiled *c = compile(b, true);
  float *gv = randf(N * D), *out = calloc(V * D, sizeof(float)), *want = calloc(V * D, sizeof(float));
  int64_t *iv = randi(N, 0, 40); /* many duplicates */
  iv[0] = iv[1] = iv[2] = 255;
  iv[3] = iv[4] = PAD;
  iv[N - 1] = 128;
  for (int i = 0; i < N; i++)
    if (iv[i] != PAD)
      for (int j = 0; j < D; j++) want[iv[i] * D + j] += gv[i * D + j];
  const void *in[] = {gv, iv};
  void *outs[] = {out};
  assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
  expect_close(out, want, V * D, 1e-5f);
  for (int j = 0; j < D; j++) assert_true(out[PAD * D + j] == 0.0f); /* exactly zero */
  iv[7] = V;
  assert_int_equal(run(c, in, outs, "outside the 256 rows"), TRNC_ERR_LIMIT);
  printf("  [cost] embedding_dense_backward [2,37] -> [256,96]: %.2f us, %zu instructions\n", est_us(c),
         trnc_compiled_report(c)->instructions);
  dump_cost(c);
  trnc_compiled_destroy(c);
  tu_fx_free(b);

  /* the forward of the same shapes, for the cost numbers */
  b = tu_fx_new(FWD);
  uint32_t w = tu_placeholder(b, "w", meta(b, F32, 2, (int64_t[]){V, D}));
  ix = tu_placeholder(b, "idx", meta(b, I64, 2, (int64_t[]){A, C}));
  e = tu_call(b, "emb", "aten.embedding.default", meta(b, F32, 3, (int64_t[]){A, C, D}));
  tu_arg(b, e, ref(b, w));
  tu_arg(b, e, ref(b, ix));
  tu_arg(b, e, tu_a_int(b, "padding_idx", -1));
  tu_arg(b, e, tu_a_bool(b, "scale_grad_by_freq", false));
  tu_arg(b, e, tu_a_bool(b, "sparse", false));
  tu_output_ref(b, e, 0);
  c = compile(b, true);
  printf("  [cost] embedding [2,37] -> [256,96]: %.2f us, %zu instructions\n", est_us(c),
         trnc_compiled_report(c)->instructions);
  dump_cost(c);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
  free(gv);
  free(out);
  free(want);
  free(iv);
}

/* ---- cat / stack / pad ----------------------------------------------------------------- */

static void test_cat_middle_and_strided(void **state) {
  (void)state;
  /* x0 [2,3,5]; x1 [2,4,5] given as a transposed layout (strides [1,10,2]);
   * x2 [2,1,5] -> cat dim=1 -> [2,8,5] */
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x0 = tu_placeholder(b, "x0", meta(b, F32, 3, (int64_t[]){2, 3, 5}));
  Trnc__Fx__TensorMeta *m1 = meta(b, F32, 3, (int64_t[]){2, 4, 5});
  set_strides(m1, (int64_t[]){1, 10, 2});
  uint32_t x1 = tu_placeholder(b, "x1", m1);
  uint32_t x2 = tu_placeholder(b, "x2", meta(b, F32, 3, (int64_t[]){2, 1, 5}));
  uint32_t k = tu_call(b, "cat", "aten.cat.default", meta(b, F32, 3, (int64_t[]){2, 8, 5}));
  Trnc__Fx__Arg *items[3] = {ref(b, x0), ref(b, x1), ref(b, x2)};
  tu_arg(b, k, tu_a_list(b, "tensors", 3, items));
  tu_arg(b, k, tu_a_int(b, "dim", -2));
  /* stack of x0 with itself*: stack([x0, x0], dim=2) -> [2,3,2,5] */
  uint32_t s = tu_call(b, "stack", "aten.stack.default", meta(b, F32, 4, (int64_t[]){2, 3, 2, 5}));
  Trnc__Fx__Arg *items2[2] = {ref(b, x0), ref(b, x0)};
  tu_arg(b, s, tu_a_list(b, "tensors", 2, items2));
  tu_arg(b, s, tu_a_int(b, "dim", 2));
  tu_output_ref(b, k, 0);
  tu_output_ref(b, s, 0);
  trnc_compiled *c = compile(b, true);
  float *a0 = randf(30), *a1 = randf(40), *a2 = randf(10);
  float out[80], want[80], out2[60], want2[60];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 8; j++)
      for (int l = 0; l < 5; l++) {
        float v = j < 3 ? a0[i * 15 + j * 5 + l] : j < 7 ? a1[i * 1 + (j - 3) * 10 + l * 2] : a2[i * 5 + l];
        want[i * 40 + j * 5 + l] = v;
      }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int q = 0; q < 2; q++)
        for (int l = 0; l < 5; l++) want2[i * 30 + j * 10 + q * 5 + l] = a0[i * 15 + j * 5 + l];
  const void *in[] = {a0, a1, a2};
  void *outs[] = {out, out2};
  assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
  assert_memory_equal(out, want, sizeof want);
  assert_memory_equal(out2, want2, sizeof want2);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
  free(a0);
  free(a1);
  free(a2);
}

static void test_pad(void **state) {
  (void)state;
  /* x [3,4,5]; pad = (last dim) lo 1 hi 2, (dim 1) lo -1 hi 0, (dim 0) lo 2 hi -1
   * -> [4, 3, 8], value 7.5 */
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", meta(b, F32, 3, (int64_t[]){3, 4, 5}));
  uint32_t p = tu_call(b, "pad", "aten.constant_pad_nd.default", meta(b, F32, 3, (int64_t[]){4, 3, 8}));
  tu_arg(b, p, ref(b, x));
  tu_arg(b, p, tu_a_ints(b, "pad", 6, (int64_t[]){1, 2, -1, 0, 2, -1}));
  tu_arg(b, p, tu_a_float(b, "value", 7.5));
  tu_output_ref(b, p, 0);
  trnc_compiled *c = compile(b, true);
  float *xv = randf(60), out[96], want[96];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      for (int l = 0; l < 8; l++) {
        int si = i - 2, sj = j + 1, sl = l - 1;
        bool in = si >= 0 && si < 3 && sj >= 0 && sj < 4 && sl >= 0 && sl < 5;
        want[i * 24 + j * 8 + l] = in ? xv[si * 20 + sj * 5 + sl] : 7.5f;
      }
  const void *in[] = {xv};
  void *outs[] = {out};
  assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
  assert_memory_equal(out, want, sizeof want);
  trnc_compiled_destroy(c);
  tu_fx_free(b);
  free(xv);
}

/* ---- gather / index_select / index ------------------------------------------------------- */

static void test_gather(void **state) {
  (void)state;
  enum { R0 = 150, C0 = 7, C1 = 5 };
  for (int dim = 0; dim < 2; dim++) {
    /* dim 1: x [150,7], idx [150,5] in [0,7); dim 0: idx [131,5] in [0,150) */
    int64_t ir = dim ? R0 : 131;
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", meta(b, F32, 2, (int64_t[]){R0, C0}));
    uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 2, (int64_t[]){ir, C1}));
    uint32_t g = tu_call(b, "gather", "aten.gather.default", meta(b, F32, 2, (int64_t[]){ir, C1}));
    tu_arg(b, g, ref(b, x));
    tu_arg(b, g, tu_a_int(b, "dim", dim));
    tu_arg(b, g, ref(b, ix));
    tu_arg(b, g, tu_a_bool(b, "sparse_grad", false));
    tu_output_ref(b, g, 0);
    trnc_compiled *c = compile(b, true);
    float *xv = randf(R0 * C0), *out = malloc(ir * C1 * sizeof(float)), *want = malloc(ir * C1 * sizeof(float));
    int64_t *iv = randi((size_t)(ir * C1), 0, dim ? C0 : R0);
    for (int64_t i = 0; i < ir; i++)
      for (int j = 0; j < C1; j++) {
        int64_t k = iv[i * C1 + j];
        want[i * C1 + j] = dim ? xv[i * C0 + k] : xv[k * C0 + j];
      }
    const void *in[] = {xv, iv};
    void *outs[] = {out};
    assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
    assert_memory_equal(out, want, (size_t)(ir * C1) * sizeof(float));
    /* an index just past its dim must not read the neighbouring element;
     * the error names the index as written and the dim's size */
    iv[3] = dim ? C0 + 2 : R0 + 2;
    assert_int_equal(run(c, in, outs, dim ? "index 9 in partition 0 outside the 7 rows"
                                          : "index 152 in partition 0 outside the 150 rows"),
                     TRNC_ERR_LIMIT);
    iv[3] = -1;
    assert_int_equal(run(c, in, outs, dim ? "index -1 in partition 0 outside the 7 rows"
                                          : "index -1 in partition 0 outside the 150 rows"),
                     TRNC_ERR_LIMIT);
    trnc_compiled_destroy(c);
    tu_fx_free(b);
    free(xv);
    free(out);
    free(want);
    free(iv);
  }
}

static void test_index_select(void **state) {
  (void)state;
  /* x [200,3,5]: dim 0 with idx [131], and dim 1 with idx [4] */
  for (int dim = 0; dim < 2; dim++) {
    int64_t n = dim ? 4 : 131, os[3] = {200, 3, 5};
    os[dim] = n;
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", meta(b, F32, 3, (int64_t[]){200, 3, 5}));
    uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 1, &n));
    uint32_t s = tu_call(b, "isel", "aten.index_select.default", meta(b, F32, 3, os));
    tu_arg(b, s, ref(b, x));
    tu_arg(b, s, tu_a_int(b, "dim", dim));
    tu_arg(b, s, ref(b, ix));
    tu_output_ref(b, s, 0);
    trnc_compiled *c = compile(b, true);
    float *xv = randf(3000), *out = malloc(4000 * sizeof(float)), *want = malloc(4000 * sizeof(float));
    int64_t *iv = randi((size_t)n, 0, dim ? 3 : 200);
    for (int64_t i = 0; i < os[0]; i++)
      for (int64_t j = 0; j < os[1]; j++)
        for (int l = 0; l < 5; l++)
          want[(i * os[1] + j) * 5 + l] = dim ? xv[(i * 3 + iv[j]) * 5 + l] : xv[(iv[i] * 3 + j) * 5 + l];
    const void *in[] = {xv, iv};
    void *outs[] = {out};
    assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
    assert_memory_equal(out, want, (size_t)(os[0] * os[1] * 5) * sizeof(float));
    trnc_compiled_destroy(c);
    tu_fx_free(b);
    free(xv);
    free(out);
    free(want);
    free(iv);
  }
}

/* x [130,6,4]; cases: x[i0] (i0 [2,70]); x[:, i1] (i1 [131]); x[i0, i1] (both
 * [140], negatives wrap); x[i0, :, i2] (split: result [140, 6]) */
static void test_index_tensor(void **state) {
  (void)state;
  enum { X0 = 130, X1 = 6, X2 = 4 };
  float *xv = randf(X0 * X1 * X2);
  for (int cs = 0; cs < 4; cs++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", meta(b, F32, 3, (int64_t[]){X0, X1, X2}));
    int64_t ish[2], orank = 0, osh[4];
    int nidx = cs >= 2 ? 2 : 1;
    uint32_t ixn[2];
    int64_t *iv[2] = {NULL, NULL};
    int64_t ni;
    if (cs == 0) {
      ish[0] = 2, ish[1] = 70;
      ixn[0] = tu_placeholder(b, "i0", meta(b, I64, 2, ish));
      ni = 140;
      iv[0] = randi(ni, -X0, X0);
      orank = 4, osh[0] = 2, osh[1] = 70, osh[2] = X1, osh[3] = X2;
    } else if (cs == 1) {
      ish[0] = 131;
      ixn[0] = tu_placeholder(b, "i1", meta(b, I64, 1, ish));
      ni = 131;
      iv[0] = randi(ni, -X1, X1);
      orank = 3, osh[0] = X0, osh[1] = 131, osh[2] = X2;
    } else {
      ish[0] = 140;
      ni = 140;
      ixn[0] = tu_placeholder(b, "i0", meta(b, I64, 1, ish));
      ixn[1] = tu_placeholder(b, "i1", meta(b, I64, 1, ish));
      iv[0] = randi(ni, -X0, X0);
      iv[1] = randi(ni, cs == 2 ? -X1 : -X2, cs == 2 ? X1 : X2);
      if (cs == 2) orank = 2, osh[0] = 140, osh[1] = X2;
      else orank = 2, osh[0] = 140, osh[1] = X1;
    }
    uint32_t k = tu_call(b, "index", "aten.index.Tensor", meta(b, F32, (int)orank, osh));
    tu_arg(b, k, ref(b, x));
    Trnc__Fx__Arg *items[3];
    int nitems = 0;
    if (cs == 0) items[nitems++] = ref(b, ixn[0]);
    if (cs == 1) items[nitems++] = tu_a_none(b, ""), items[nitems++] = ref(b, ixn[0]);
    if (cs == 2) items[nitems++] = ref(b, ixn[0]), items[nitems++] = ref(b, ixn[1]);
    if (cs == 3) items[nitems++] = ref(b, ixn[0]), items[nitems++] = tu_a_none(b, ""), items[nitems++] = ref(b, ixn[1]);
    tu_arg(b, k, tu_a_list(b, "indices", (size_t)nitems, items));
    tu_output_ref(b, k, 0);
    trnc_compiled *c = compile(b, true);
    int64_t on = 1;
    for (int i = 0; i < orank; i++) on *= osh[i];
    float *out = malloc(on * sizeof(float)), *want = malloc(on * sizeof(float));
#define W(v, s) ((v) < 0 ? (v) + (s) : (v))
    for (int64_t r = 0; r < ni; r++) {
      if (cs == 0) {
        int64_t a = W(iv[0][r], X0);
        memcpy(want + r * X1 * X2, xv + a * X1 * X2, X1 * X2 * sizeof(float));
      } else if (cs == 1) {
        int64_t j = W(iv[0][r], X1);
        for (int a = 0; a < X0; a++)
          for (int l = 0; l < X2; l++) want[(a * 131 + r) * X2 + l] = xv[(a * X1 + j) * X2 + l];
      } else if (cs == 2) {
        int64_t a = W(iv[0][r], X0), j = W(iv[1][r], X1);
        for (int l = 0; l < X2; l++) want[r * X2 + l] = xv[(a * X1 + j) * X2 + l];
      } else {
        int64_t a = W(iv[0][r], X0), l = W(iv[1][r], X2);
        for (int j = 0; j < X1; j++) want[r * X1 + j] = xv[(a * X1 + j) * X2 + l];
      }
    }
    const void *in[3] = {xv, iv[0], iv[1]};
    void *outs[] = {out};
    assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
    assert_memory_equal(out, want, on * sizeof(float));
    /* out of range after wrapping: an error, never a neighbouring element */
    int last = nidx - 1;
    int64_t lim = cs == 0 ? X0 : cs == 1 ? X1 : cs == 2 ? X1 : X2;
    iv[last][1] = lim;
    assert_int_equal(run(c, in, outs, "outside"), TRNC_ERR_LIMIT);
    iv[last][1] = -lim - 1;
    assert_int_equal(run(c, in, outs, "outside"), TRNC_ERR_LIMIT);
    trnc_compiled_destroy(c);
    tu_fx_free(b);
    free(out);
    free(want);
    free(iv[0]);
    free(iv[1]);
  }
  free(xv);
}

/* ---- index_put / scatter ------------------------------------------------------------------- */

static void test_index_put(void **state) {
  (void)state;
  enum { V = 50, D = 8, N = 300 };
  for (int acc = 0; acc < 2; acc++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", meta(b, F32, 2, (int64_t[]){V, D}));
    uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 1, (int64_t[]){acc ? N : 40}));
    uint32_t v = tu_placeholder(b, "v", meta(b, F32, 2, (int64_t[]){acc ? N : 40, D}));
    uint32_t k = tu_call(b, "iput", "aten.index_put.default", meta(b, F32, 2, (int64_t[]){V, D}));
    tu_arg(b, k, ref(b, x));
    Trnc__Fx__Arg *items[1] = {ref(b, ix)};
    tu_arg(b, k, tu_a_list(b, "indices", 1, items));
    tu_arg(b, k, ref(b, v));
    tu_arg(b, k, tu_a_bool(b, "accumulate", acc));
    tu_output_ref(b, k, 0);
    trnc_compiled *c = compile(b, true);
    int n = acc ? N : 40;
    float *xv = randf(V * D), *vv = randf((size_t)n * D), out[V * D], want[V * D];
    int64_t *iv = malloc((size_t)n * sizeof *iv);
    for (int i = 0; i < n; i++) iv[i] = acc ? (int64_t)(rnd() % (2 * V)) - V : (i * 7) % V - (i % 2 ? V : 0);
    memcpy(want, xv, sizeof want);
    for (int i = 0; i < n; i++) {
      int64_t r = iv[i] < 0 ? iv[i] + V : iv[i];
      for (int j = 0; j < D; j++) want[r * D + j] = acc ? want[r * D + j] + vv[i * D + j] : vv[i * D + j];
    }
    const void *in[] = {xv, iv, vv};
    void *outs[] = {out};
    assert_int_equal(run(c, in, outs, NULL), TRNC_OK);
    expect_close(out, want, V * D, acc ? 1e-5f : 0.0f);
    iv[n - 1] = V;
    assert_int_equal(run(c, in, outs, "outside"), TRNC_ERR_LIMIT);
    trnc_compiled_destroy(c);
    tu_fx_free(b);
    free(xv);
    free(vv);
    free(iv);
  }
}

static void test_scatter(void **state) {
  (void)state;
  enum { A = 6, B = 9, J = 20 };
  const char *targets[3] = {"aten.scatter_add.default", "aten.scatter.src", "aten.scatter.value"};
  for (int kind = 0; kind < 3; kind++) {
    int jn = kind == 0 ? J : 5;  /* scatter.src/value: distinct indices per row */
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", meta(b, F32, 2, (int64_t[]){A, B}));
    uint32_t ix = tu_placeholder(b, "idx", meta(b, I64, 2, (int64_t[]){A, jn}));
    uint32_t s = kind < 2 ? tu_placeholder(b, "src", meta(b, F32, 2, (int64_t[]){A, J})) : 0;
    uint32_t k = tu_call(b, "sc", targets[kind], meta(b, F32, 2, (int64_t[]){A, B}));
    tu_arg(b, k, ref(b, x));
    tu_arg(b, k, tu_a_int(b, "dim", 1));
    tu_arg(b, k, ref(b, ix));
    if (kind < 2) tu_arg(b, k, ref(b, s));
    else tu_arg(b, k, tu_a_float(b, "value", -3.25));
    tu_output_ref(b, k, 0);
    trnc_compiled *c = compile(b, true);
    float *xv = randf(A * B), *sv = randf(A * J), out[A * B], want[A * B];
    int64_t *iv = malloc(A * jn * sizeof *iv);
    for (int i = 0; i < A; i++)
      for (int j = 0; j < jn; j++) iv[i * jn + j] = kind == 0 ? (int64_t)(rnd() % B) : (j * 2 + i) % B;
    memcpy(want, xv, sizeof want);
    for (int i = 0; i < A; i++)
      for (int j = 0; j < jn; j++) {
        float *t = &want[i * B + iv[i * jn + j]];
        *t = kind == 0 ? *t + sv[i * J + j] : kind == 1 ? sv[i * J + j] : -3.25f;
      }
    const void *in3[] = {xv, iv, sv};
    const void *in2[] = {xv, iv};
    void *outs[] = {out};
    assert_int_equal(run(c, kind < 2 ? in3 : in2, outs, NULL), TRNC_OK);
    expect_close(out, want, A * B, kind == 0 ? 1e-5f : 0.0f);
    iv[jn + 1] = B;
    assert_int_equal(run(c, kind < 2 ? in3 : in2, outs, "outside"), TRNC_ERR_LIMIT);
    trnc_compiled_destroy(c);
    tu_fx_free(b);
    free(xv);
    free(sv);
    free(iv);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embedding_3d),
      cmocka_unit_test(test_embedding_backward),
      cmocka_unit_test(test_cat_middle_and_strided),
      cmocka_unit_test(test_pad),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_index_select),
      cmocka_unit_test(test_index_tensor),
      cmocka_unit_test(test_index_put),
      cmocka_unit_test(test_scatter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
