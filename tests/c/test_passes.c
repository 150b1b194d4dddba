/*
 * test_passes.c — the graph passes (passes/): decompose, dce, cse, fold,
 * simplify.
 *
 * Each test builds a graph with the fx.proto builder, imports it, runs the
 * whole pipeline (trnc_graph_legalize, which verifies after every pass) and
 * checks the printed IR (or the graph struct) for where a pass must fire and
 * where it must not. The golden graphs run through import, the legality scan
 * and the pipeline; their node counts before/after are printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ir/ir.h"
#include "passes/decompose.h"
#include "passes/passes.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define BF16 TRNC__FX__DTYPE__BFLOAT16
#define F16 TRNC__FX__DTYPE__FLOAT16
#define I64 TRNC__FX__DTYPE__INT64
#define I32 TRNC__FX__DTYPE__INT32
#define BOOL_ TRNC__FX__DTYPE__BOOL
#define C64 TRNC__FX__DTYPE__COMPLEX64
#define FWD TRNC__FX__GRAPH_KIND__FORWARD

static Trnc__Fx__TensorMeta *m0(tu_fx *b, Trnc__Fx__DType dt) { return tu_meta(b, dt, 0, NULL); }
static Trnc__Fx__TensorMeta *m1(tu_fx *b, Trnc__Fx__DType dt, int64_t a) {
  return tu_meta(b, dt, 1, (int64_t[]){a});
}
static Trnc__Fx__TensorMeta *m2(tu_fx *b, Trnc__Fx__DType dt, int64_t a, int64_t c) {
  return tu_meta(b, dt, 2, (int64_t[]){a, c});
}
static Trnc__Fx__TensorMeta *m3(tu_fx *b, Trnc__Fx__DType dt, int64_t a, int64_t c, int64_t e) {
  return tu_meta(b, dt, 3, (int64_t[]){a, c, e});
}
static Trnc__Fx__TensorMeta *strided(Trnc__Fx__TensorMeta *m, const int64_t *st, int64_t off) {
  for (size_t i = 0; i < m->n_stride; i++) m->stride[i]->value = st[i];
  m->storage_offset->value = off;
  return m;
}

/* ---- node builders ------------------------------------------------------------ */

static uint32_t unary(tu_fx *b, const char *name, const char *target, uint32_t x,
                      Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, target, m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  return n;
}
static uint32_t binary(tu_fx *b, const char *name, const char *target, uint32_t x, uint32_t y,
                       Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, target, m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_ref(b, "other", y, 0));
  return n;
}
static uint32_t add(tu_fx *b, const char *name, uint32_t x, uint32_t y, Trnc__Fx__TensorMeta *m) {
  uint32_t n = binary(b, name, "aten.add.Tensor", x, y, m);
  tu_arg(b, n, tu_a_int(b, "alpha", 1));
  return n;
}
/* op(x, scalar) for the Tensor overloads with a wrapped number (W). */
static uint32_t with_scalar(tu_fx *b, const char *name, const char *target, uint32_t x,
                            Trnc__Fx__Arg *s, bool alpha, Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, target, m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, s);
  if (alpha) tu_arg(b, n, tu_a_int(b, "alpha", 1));
  return n;
}
static uint32_t view(tu_fx *b, const char *name, uint32_t x, size_t k, const int64_t *size,
                     Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, "aten.view.default", m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_ints(b, "size", k, size));
  return n;
}
static uint32_t permute(tu_fx *b, const char *name, uint32_t x, size_t k, const int64_t *dims,
                        Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, "aten.permute.default", m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_ints(b, "dims", k, dims));
  return n;
}
static uint32_t transpose(tu_fx *b, const char *name, uint32_t x, int64_t d0, int64_t d1,
                          Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, "aten.transpose.int", m);
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_int(b, "dim0", d0));
  tu_arg(b, n, tu_a_int(b, "dim1", d1));
  return n;
}
static uint32_t clone(tu_fx *b, const char *name, uint32_t x, Trnc__Fx__TensorMeta *m) {
  uint32_t n = unary(b, name, "aten.clone.default", x, m);
  tu_arg(b, n, tu_a_none(b, "memory_format"));
  return n;
}
static uint32_t dropout(tu_fx *b, const char *name, uint32_t x, Trnc__Fx__TensorMeta *m,
                        Trnc__Fx__TensorMeta *mask) {
  uint32_t n = tu_call(b, name, "aten.native_dropout.default", m);
  tu_add_output(b, n, mask);
  tu_node(b, n)->outputs_tuple = true;
  tu_arg(b, n, tu_a_ref(b, "input", x, 0));
  tu_arg(b, n, tu_a_float(b, "p", 0.5));
  tu_arg(b, n, tu_a_bool(b, "train", true));
  return n;
}
/* creation op with trailing (dtype, layout, device, pin_memory) = None */
static void creation_tail(tu_fx *b, uint32_t n) {
  tu_arg(b, n, tu_a_none(b, "dtype"));
  tu_arg(b, n, tu_a_none(b, "layout"));
  tu_arg(b, n, tu_a_none(b, "device"));
  tu_arg(b, n, tu_a_none(b, "pin_memory"));
}
static uint32_t full(tu_fx *b, const char *name, size_t k, const int64_t *size,
                     Trnc__Fx__Arg *fill, Trnc__Fx__TensorMeta *m) {
  uint32_t n = tu_call(b, name, "aten.full.default", m);
  tu_arg(b, n, tu_a_ints(b, "size", k, size));
  tu_arg(b, n, fill);
  creation_tail(b, n);
  return n;
}
static uint32_t constant_f32(tu_fx *b, const char *name, size_t rank, const int64_t *shape,
                             const float *v, size_t count) {
  return tu_get_attr(b, name, tu_meta(b, F32, rank, shape), v, count * sizeof(float));
}

/* ---- running the pipeline ---------------------------------------------------------- */

typedef struct run {
  trnc_graph *g;
  trnc_diags *d;
  char *text;
} run;

/* Imports, checks lowerability, legalizes (all passes, verified) and
 * prints. Fails the test on any error. */
static run lower(tu_fx *b) {
  run r = {NULL, trnc_diags_create(), NULL};
  trnc_status s = tu_fx_import(b, NULL, &r.g, r.d);
  if (!s) s = trnc_graph_check_lowerable(r.g, r.d);
  if (!s) s = trnc_graph_legalize(r.g, r.d);
  if (s) {
    tu_diags_dump(r.d);
    fail_msg("lowering failed: %s", trnc_status_name(s));
  }
  r.text = trnc_graph_print(r.g);
  return r;
}

static void done(run *r, tu_fx *b) {
  trnc_free(r->text);
  trnc_graph_destroy(r->g);
  trnc_diags_destroy(r->d);
  tu_fx_free(b);
}

#define HAS(r, s)                                                    \
  do {                                                               \
    if (!strstr((r).text, (s))) fail_msg("missing \"%s\" in:\n%s", (s), (r).text); \
  } while (0)
#define HASNT(r, s)                                                  \
  do {                                                               \
    if (strstr((r).text, (s))) fail_msg("unexpected \"%s\" in:\n%s", (s), (r).text); \
  } while (0)

static size_t live_calls(const trnc_graph *g) {
  trnc_graph_summary s;
  trnc_graph_get_summary(g, &s);
  return s.nodes;
}

/* The single constant node producing value r, or fails. */
static const trnc_node *const_node(const run *r, uint32_t value) {
  assert_true(value < r->g->nvalues);
  const trnc_node *n = &r->g->nodes[r->g->values[value].node];
  assert_int_equal(n->op, TRNC_OP_CONSTANT);
  assert_false(n->dead);
  return n;
}

/* ---- decompose ------------------------------------------------------------------- */

/* After a failed emission every builder call returns TRNC_NO_REF, and a
 * decomposition may read the type of what it emitted before it returns the
 * sticky status: that type is an in-bounds 1 x 1 stand-in (reading it
 * through the graph's values segfaulted in decomp_linalg.c's LU). */
static void test_decompose_type_of_a_failed_emission(void **state) {
  (void)state;
  const trnc_type *t = trnc_db_type(NULL, TRNC_NO_REF);
  assert_non_null(t);
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->shape[t->rank - 1], 1);
  assert_int_equal(t->shape[t->rank - 2], 1);
}

/* The graph imports and the legality scan refuses it, saying why; frees b. */
static void refused(tu_fx *b, const char *why) {
  trnc_graph *g = NULL;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(tu_fx_import(b, NULL, &g, d), TRNC_OK);
  assert_int_equal(trnc_graph_check_lowerable(g, d), TRNC_ERR_UNSUPPORTED);
  assert_true(tu_diags_have(d, why));
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

static Trnc__Fx__TensorMeta *m4(tu_fx *b, Trnc__Fx__DType dt, int64_t a, int64_t c, int64_t e,
                                int64_t f) {
  return tu_meta(b, dt, 4, (int64_t[]){a, c, e, f});
}

/* _scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal,
 * attn_mask=mask) over [1,4,5,8] queries and [1,2,7,8] keys (grouped-query
 * heads), with the output in the kernel's [B,L,H,E] layout and logsumexp
 * [B,H,L]; `mask`: an additive [1,1,5,7] attn_mask, else None. */
static uint32_t sdpa_graph(tu_fx *b, double dropout_p, bool mask) {
  uint32_t q = tu_placeholder(b, "q", m4(b, F32, 1, 4, 5, 8));
  uint32_t k = tu_placeholder(b, "k", m4(b, F32, 1, 2, 7, 8));
  uint32_t v = tu_placeholder(b, "v", m4(b, F32, 1, 2, 7, 8));
  uint32_t m = mask ? tu_placeholder(b, "m", m4(b, F32, 1, 1, 5, 7)) : 0;
  uint32_t n = tu_call(b, "attn", "aten._scaled_dot_product_flash_attention_for_cpu.default",
                       strided(m4(b, F32, 1, 4, 5, 8), (const int64_t[]){160, 8, 32, 1}, 0));
  tu_add_output(b, n, strided(m3(b, F32, 1, 4, 5), (const int64_t[]){20, 1, 4}, 0));
  tu_node(b, n)->outputs_tuple = true;
  tu_arg(b, n, tu_a_ref(b, "query", q, 0));
  tu_arg(b, n, tu_a_ref(b, "key", k, 0));
  tu_arg(b, n, tu_a_ref(b, "value", v, 0));
  tu_arg(b, n, tu_a_float(b, "dropout_p", dropout_p));
  tu_arg(b, n, tu_a_bool(b, "is_causal", true));
  tu_arg(b, n, mask ? tu_a_ref(b, "attn_mask", m, 0) : tu_a_none(b, "attn_mask"));
  tu_arg(b, n, tu_a_none(b, "scale"));
  tu_output_ref(b, n, 0);
  tu_output_ref(b, n, 1);
  return n;
}

/* One linear algebra call over x [rows, cols] (batch 2) with string
 * argument `s` (name sname) and bool b (name bname) when given, its
 * outputs of the given ranks and shapes. */
static void linalg_call(tu_fx *b, const char *target, int64_t rows, int64_t cols, const char *sname,
                        const char *s, const char *bname, bool bv, int nout,
                        Trnc__Fx__TensorMeta **outs) {
  uint32_t x = tu_placeholder(b, "x", m3(b, F32, 2, rows, cols));
  uint32_t n = tu_call(b, "la", target, outs[0]);
  for (int i = 1; i < nout; i++) tu_add_output(b, n, outs[i]);
  tu_node(b, n)->outputs_tuple = true;
  tu_arg(b, n, tu_a_ref(b, "A", x, 0));
  if (sname) tu_arg(b, n, tu_a_str(b, sname, s));
  if (bname) tu_arg(b, n, tu_a_bool(b, bname, bv));
  if (!strcmp(target, "aten._linalg_svd.default")) { /* compute_uv, driver */
    tu_arg(b, n, tu_a_bool(b, "compute_uv", true));
    tu_arg(b, n, tu_a_none(b, "driver"));
  }
  for (int i = 0; i < nout; i++) tu_output_ref(b, n, (uint32_t)i);
}

/* QR, eigh and SVD leave the graph as elementwise steps and batched
 * matmuls (passes/decomp_linalg.c's builders, under the sanitizers). */
static void test_qr_eigh_svd_decomposed(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(FWD);
  linalg_call(b, "aten.linalg_qr.default", 6, 4, "mode", "complete", NULL, false, 2,
              (Trnc__Fx__TensorMeta *[]){m3(b, F32, 2, 6, 6), m3(b, F32, 2, 6, 4)});
  run r = lower(b);
  HASNT(r, "linalg_qr");
  done(&r, b);
  b = tu_fx_new(FWD);
  linalg_call(b, "aten._linalg_eigh.default", 5, 5, "UPLO", "U", "compute_v", true, 2,
              (Trnc__Fx__TensorMeta *[]){m2(b, F32, 2, 5), m3(b, F32, 2, 5, 5)});
  r = lower(b);
  HAS(r, "bmm(");
  HASNT(r, "linalg_eigh");
  done(&r, b);
  b = tu_fx_new(FWD);
  linalg_call(b, "aten._linalg_svd.default", 3, 7, NULL, NULL, "full_matrices", false, 3,
              (Trnc__Fx__TensorMeta *[]){m3(b, F32, 2, 3, 3), m2(b, F32, 2, 3), m3(b, F32, 2, 3, 7)});
  r = lower(b);
  HAS(r, "bmm(");
  HASNT(r, "linalg_svd");
  done(&r, b);
}

/* Without an attn_mask the op stays for codegen's flash-attention kernel
 * (passes/decomp_attention.c's shape rule), its outputs in their layouts. */
static void test_sdpa_kept_for_the_flash_kernel(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  sdpa_graph(b, 0.0, false);
  run r = lower(b);
  HAS(r, "sdpa_flash");
  HASNT(r, "bmm(");
  const trnc_type *out = trnc_ref_type(r.g, r.g->outputs[0]);
  assert_int_equal(out->stride[1], 8);
  assert_int_equal(out->stride[2], 32);
  done(&r, b);
}

/* With an attn_mask the attention op leaves the graph: matmuls over
 * [B*Hk, G*L] rows, the causal mask (from two aranges, small enough to fold
 * into a constant), the softmax pieces; the graph outputs keep their
 * declared layouts. */
static void test_decompose_sdpa(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  sdpa_graph(b, 0.0, true);
  run r = lower(b);
  HASNT(r, "sdpa_flash");
  HAS(r, "bmm(");
  HAS(r, "[2, 10, 8]");   /* 4 query heads stacked on 2 key heads: 2 x (2*5) rows */
  HAS(r, "amax(");
  HAS(r, "bool[5,7]");    /* the causal mask (two aranges and ge, folded) */
  HAS(r, "where(");
  HAS(r, "log(");
  const trnc_type *out = trnc_ref_type(r.g, r.g->outputs[0]);
  const trnc_type *lse = trnc_ref_type(r.g, r.g->outputs[1]);
  assert_int_equal(out->stride[1], 8);
  assert_int_equal(out->stride[2], 32);
  assert_int_equal(lse->stride[1], 1);
  assert_int_equal(lse->stride[2], 4);
  done(&r, b);
}

/* dropout_p > 0 is refused by the legality scan, before any rewriting. */
static void test_decompose_sdpa_dropout_refused(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  sdpa_graph(b, 0.1, false);
  refused(b, "dropout_p > 0");
}

/* topk(x [26,4], k=2) of Mixtral's router: ranks counted from a [26,4,4]
 * comparison, values and indices summed over a [26,4,2] one-hot. */
static void test_decompose_topk(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 26, 4));
  uint32_t n = tu_call(b, "topk", "aten.topk.default", m2(b, F32, 26, 2));
  tu_add_output(b, n, m2(b, I64, 26, 2));
  tu_node(b, n)->outputs_tuple = true;
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_int(b, "k", 2));
  tu_arg(b, n, tu_a_int(b, "dim", -1));
  tu_arg(b, n, tu_a_bool(b, "largest", true));
  tu_arg(b, n, tu_a_bool(b, "sorted", true));
  tu_output_ref(b, n, 0);
  tu_output_ref(b, n, 1);
  run r = lower(b);
  HASNT(r, "topk(");
  HAS(r, "bool[26,4,4]");   /* element j before element i */
  HAS(r, "isnan(");         /* NaN ranks as the largest */
  HAS(r, "bool[26,4,2]");   /* rank == slot */
  HAS(r, "sum(");
  assert_int_equal(trnc_ref_type(r.g, r.g->outputs[1])->dtype, TRNC_I64);
  done(&r, b);
}

/* histc(x [numel], bins, lo, hi) as the graph's output. */
static tu_fx *histc_graph(int64_t numel, int64_t bins, double lo, double hi) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, numel));
  uint32_t n = tu_call(b, "histc", "aten.histc.default", m1(b, F32, bins));
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_arg(b, n, tu_a_int(b, "bins", bins));
  tu_arg(b, n, tu_a_float(b, "min", lo));
  tu_arg(b, n, tu_a_float(b, "max", hi));
  tu_output_ref(b, n, 0);
  return b;
}

/* histc of MoE expert ids: the bin arithmetic, a [52,4] one-hot, a sum. */
static void test_decompose_histc(void **state) {
  tu_fx *b = histc_graph(52, 4, 0.0, 3.0);
  run r = lower(b);
  HASNT(r, "histc(");
  HAS(r, "trunc(");
  HAS(r, "bool[52,4]");
  HAS(r, "sum(");
  done(&r, b);
}

/* histc's range and size limits are refused by the legality scan. */
static void test_histc_refusals(void **state) {
  const struct { double lo, hi; int64_t n, bins; const char *why; } cases[] = {
      {1.0, 1.0, 9, 4, "min >= max"}, {0.0, 1.0, 1 << 22, 8, "2^24 elements x bins"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    refused(histc_graph(cases[c].n, cases[c].bins, cases[c].lo, cases[c].hi), cases[c].why);
  }
}

/* transformers::grouped_mm_fallback(x [13,6], w [4,6,5], offs [4]): one
 * [13,6] x [6,20] matmul over every expert, rows selected by group. */
static void test_decompose_grouped_mm(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 13, 6));
  uint32_t w = tu_placeholder(b, "w", m3(b, F32, 4, 6, 5));
  uint32_t o = tu_placeholder(b, "offs", m1(b, I32, 4));
  uint32_t n = tu_call(b, "gmm", "transformers.grouped_mm_fallback.default", m2(b, F32, 13, 5));
  tu_arg(b, n, tu_a_ref(b, "input", x, 0));
  tu_arg(b, n, tu_a_ref(b, "weight", w, 0));
  tu_arg(b, n, tu_a_ref(b, "offs", o, 0));
  tu_output_ref(b, n, 0);
  run r = lower(b);
  HASNT(r, "grouped_mm");
  HAS(r, "f32[13,20]");     /* x @ [K, E*N] */
  HAS(r, "bool[13,4]");     /* row s in expert e's group */
  HAS(r, "where(");
  done(&r, b);
}

/* Its backward: grad_input by one [13,5] x [5,24] matmul, grad_weight by a
 * [4] batched matmul of the rows masked to each group. */
static void test_decompose_grouped_mm_backward(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 13, 6));
  uint32_t w = tu_placeholder(b, "w", m3(b, F32, 4, 6, 5));
  uint32_t o = tu_placeholder(b, "offs", m1(b, I64, 4));
  uint32_t g = tu_placeholder(b, "grad", m2(b, F32, 13, 5));
  uint32_t n = tu_call(b, "gmm_bw", "transformers.grouped_mm_fallback_backward.default",
                       m2(b, F32, 13, 6));
  tu_add_output(b, n, m3(b, F32, 4, 6, 5));
  tu_node(b, n)->outputs_tuple = true;
  tu_arg(b, n, tu_a_ref(b, "input", x, 0));
  tu_arg(b, n, tu_a_ref(b, "weight", w, 0));
  tu_arg(b, n, tu_a_ref(b, "offs", o, 0));
  tu_arg(b, n, tu_a_ref(b, "grad_output", g, 0));
  tu_output_ref(b, n, 0);
  tu_output_ref(b, n, 1);
  run r = lower(b);
  HASNT(r, "grouped_mm");
  HAS(r, "f32[13,24]");
  HAS(r, "bmm(");
  done(&r, b);
}

/* ---- dce ------------------------------------------------------------------------ */

/* Unused ops (including an unused dropout) vanish; placeholders stay. */
static void test_dce_removes_unused(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 4));
  uint32_t unused_in = tu_placeholder(b, "unused_in", m1(b, F32, 4));
  uint32_t e = unary(b, "exp", "aten.exp.default", x, m1(b, F32, 4));
  unary(b, "dead_neg", "aten.neg.default", e, m1(b, F32, 4));
  dropout(b, "dead_drop", x, m1(b, F32, 4), m1(b, BOOL_, 4));
  uint32_t t = unary(b, "tanh", "aten.tanh.default", e, m1(b, F32, 4));
  tu_output_ref(b, t, 0);
  (void)unused_in;
  run r = lower(b);
  HAS(r, "%1 = placeholder input : f32[4]  # unused_in\n");
  HAS(r, "%2 = exp(%0) : f32[4]  # exp\n");
  HAS(r, "%6 = tanh(%2) : f32[4]  # tanh\n");
  HASNT(r, "dead_neg");
  HASNT(r, "dead_drop");
  assert_int_equal(live_calls(r.g), 2);
  done(&r, b);
}

/* A used dropout is kept (only its mask used is enough): decomposed into
 * Philox on the rng_seed input the pass adds, the mask u < 1 - p. */
static void test_dce_keeps_used_dropout(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 4));
  uint32_t dr = dropout(b, "drop", x, m1(b, F32, 4), m1(b, BOOL_, 4));
  tu_output_ref(b, dr, 1);
  run r = lower(b);
  HAS(r, "%0 = placeholder input : f32[4]  # x\n");
  HAS(r, "%3 = placeholder rng_seed : i32[2]  # rng_seed\n");
  HAS(r, "%2 = lt_scalar(");
  HAS(r, ", 0.5) : bool[4]  # drop\n");
  HAS(r, "output(%2)");
  HASNT(r, "= dropout(");
  done(&r, b);
}

/* ---- complex ------------------------------------------------------------------------ */

/* rfft (_fft_r2c over dim 1, onesided) then view_as_real: one DFT matmul of
 * the [4, 8] rows with an 8 x 10 matrix; no complex value is left, and a
 * complex64 input becomes its float32 [..., 2] view. */
static void test_complex_rfft_is_a_dft_matmul(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 4, 8));
  uint32_t f = tu_call(b, "rfft", "aten._fft_r2c.default", m2(b, C64, 4, 5));
  tu_arg(b, f, tu_a_ref(b, "self", x, 0));
  tu_arg(b, f, tu_a_ints(b, "dim", 1, (int64_t[]){1}));
  tu_arg(b, f, tu_a_int(b, "normalization", 0));
  tu_arg(b, f, tu_a_bool(b, "onesided", true));
  uint32_t v = tu_call(b, "vr", "aten.view_as_real.default", tu_meta(b, F32, 3, (int64_t[]){4, 5, 2}));
  tu_arg(b, v, tu_a_ref(b, "self", f, 0));
  uint32_t z = tu_placeholder(b, "z", m1(b, C64, 3));
  uint32_t ng = unary(b, "neg", "aten.neg.default", z, m1(b, C64, 3));
  tu_output_ref(b, v, 0);
  tu_output_ref(b, ng, 0);
  run r = lower(b);
  HAS(r, "placeholder input : f32[3,2]  # z\n");
  HAS(r, " = mm(");
  HAS(r, ") : f32[4,10]  # rfft\n");
  HAS(r, " = neg(");
  HASNT(r, "c64");
  HASNT(r, "_fft_r2c");
  done(&r, b);
}

/* ---- cse -------------------------------------------------------------------------- */

static void test_cse_merges_identical(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 2, 3));
  uint32_t w = tu_placeholder(b, "w", m2(b, F32, 3, 2));
  uint32_t t1 = tu_call(b, "t1", "aten.t.default", strided(m2(b, F32, 2, 3), (int64_t[]){1, 2}, 0));
  tu_arg(b, t1, tu_a_ref(b, "self", w, 0));
  uint32_t t2 = tu_call(b, "t2", "aten.t.default", strided(m2(b, F32, 2, 3), (int64_t[]){1, 2}, 0));
  tu_arg(b, t2, tu_a_ref(b, "self", w, 0));
  uint32_t a1 = add(b, "a1", x, t1, m2(b, F32, 2, 3));
  uint32_t a2 = add(b, "a2", x, t2, m2(b, F32, 2, 3));   /* same as a1 once t2 -> t1 */
  uint32_t m = binary(b, "mul", "aten.mul.Tensor", a1, a2, m2(b, F32, 2, 3));
  tu_output_ref(b, m, 0);
  run r = lower(b);
  HAS(r, "%2 = t(%1) : f32[2,3]{strides=[1,2]}  # t1\n");
  HAS(r, "%4 = add(%0, %2, alpha=1) : f32[2,3]  # a1\n");
  HAS(r, "%6 = mul(%4, %4) : f32[2,3]  # mul\n");
  HASNT(r, "# t2");
  HASNT(r, "# a2");
  done(&r, b);
}

/* Dropouts with identical arguments draw different masks: never merged. */
static void test_cse_skips_random(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 4));
  uint32_t d1 = dropout(b, "drop1", x, m1(b, F32, 4), m1(b, BOOL_, 4));
  uint32_t d2 = dropout(b, "drop2", x, m1(b, F32, 4), m1(b, BOOL_, 4));
  uint32_t a = add(b, "add", d1, d2, m1(b, F32, 4));
  tu_output_ref(b, a, 0);
  run r = lower(b);
  HAS(r, "# drop1\n");
  HAS(r, "# drop2\n");
  HAS(r, "add(%1, %3, alpha=1)");
  done(&r, b);
}

/* Two identical ops that are both graph outputs stay distinct buffers (the
 * caller may mutate one); identical constants merge. */
static void test_cse_outputs_and_constants(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 2));
  float v[2] = {1.5f, -2.0f};
  uint32_t c1 = constant_f32(b, "c1", 1, (int64_t[]){2}, v, 2);
  uint32_t c2 = constant_f32(b, "c2", 1, (int64_t[]){2}, v, 2);
  uint32_t e1 = add(b, "e1", x, c1, m1(b, F32, 2));
  uint32_t e2 = add(b, "e2", x, c2, m1(b, F32, 2));
  tu_output_ref(b, e1, 0);
  tu_output_ref(b, e2, 0);
  run r = lower(b);
  HASNT(r, "# c2\n");
  HAS(r, "%3 = add(%0, %1, alpha=1) : f32[2]  # e1\n");
  HAS(r, "%4 = add(%0, %1, alpha=1) : f32[2]  # e2\n");
  HAS(r, "output(%3, %4)");
  done(&r, b);
}

/* ---- simplify ------------------------------------------------------------------------ */

/* clone / alias / x*1 / x-0 / x/1 / x+(-0.0) are forwarded; t(t(w)) and a
 * view back to the original shape vanish. */
static void test_simplify_identities(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 2, 3));
  uint32_t c = clone(b, "clone", x, m2(b, F32, 2, 3));
  uint32_t al = unary(b, "alias", "aten.alias.default", c, m2(b, F32, 2, 3));
  uint32_t m = with_scalar(b, "mul1", "aten.mul.Tensor", al, tu_a_float(b, "other", 1.0), false,
                           m2(b, F32, 2, 3));
  uint32_t s = with_scalar(b, "sub0", "aten.sub.Tensor", m, tu_a_int(b, "other", 0), true,
                           m2(b, F32, 2, 3));
  uint32_t dv = with_scalar(b, "div1", "aten.div.Tensor", s, tu_a_int(b, "other", 1), false,
                            m2(b, F32, 2, 3));
  uint32_t an = with_scalar(b, "addneg0", "aten.add.Tensor", dv, tu_a_float(b, "other", -0.0),
                            true, m2(b, F32, 2, 3));
  uint32_t t1 = tu_call(b, "t1", "aten.t.default", strided(m2(b, F32, 3, 2), (int64_t[]){1, 3}, 0));
  tu_arg(b, t1, tu_a_ref(b, "self", an, 0));
  uint32_t t2 = tu_call(b, "t2", "aten.t.default", m2(b, F32, 2, 3));
  tu_arg(b, t2, tu_a_ref(b, "self", t1, 0));
  uint32_t v1 = view(b, "v1", t2, 1, (int64_t[]){6}, m1(b, F32, 6));
  uint32_t v2 = view(b, "v2", v1, 2, (int64_t[]){2, -1}, m2(b, F32, 2, 3));
  uint32_t e = unary(b, "exp", "aten.exp.default", v2, m2(b, F32, 2, 3));
  tu_output_ref(b, e, 0);
  run r = lower(b);
  HAS(r, "exp(%0) : f32[2,3]  # exp\n");
  assert_int_equal(live_calls(r.g), 1);
  done(&r, b);
}

/* float x + 0 is not an identity (-0.0 + 0 = +0.0); x - 0 with alpha 2 in
 * ints is; a clone whose result layout differs is kept. */
static void test_simplify_does_not_fire(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 2, 3));
  uint32_t a = with_scalar(b, "add0", "aten.add.Tensor", x, tu_a_int(b, "other", 0), true,
                           m2(b, F32, 2, 3));
  uint32_t s = with_scalar(b, "subneg0", "aten.sub.Tensor", a, tu_a_float(b, "other", -0.0), true,
                           m2(b, F32, 2, 3));
  uint32_t t = tu_call(b, "t", "aten.t.default", strided(m2(b, F32, 3, 2), (int64_t[]){1, 3}, 0));
  tu_arg(b, t, tu_a_ref(b, "self", s, 0));
  uint32_t c = clone(b, "clone", t, m2(b, F32, 3, 2));   /* materializes the transpose */
  uint32_t mb = with_scalar(b, "mul1_promotes", "aten.mul.Tensor", c, tu_a_float(b, "other", 1.0),
                            false, m2(b, F32, 3, 2));
  tu_output_ref(b, mb, 0);
  run r = lower(b);
  HAS(r, "add(%0, other=0, alpha=1) : f32[2,3]  # add0\n");
  HAS(r, "sub(%1, other=-0, alpha=1) : f32[2,3]  # subneg0\n");
  HAS(r, "# clone\n");
  HASNT(r, "# mul1_promotes\n");
  done(&r, b);
}

/* An output declared with strides other than its replacement's is not
 * forwarded: clone(x) of a transposed input keeps its contiguous result. A
 * clone of an input that is a graph output is not forwarded either (the
 * output would alias the caller's input). */
static void test_simplify_keeps_output_types_and_buffers(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 2, 3));
  uint32_t c = clone(b, "clone_of_input", x, m2(b, F32, 2, 3));
  uint32_t t = transpose(b, "tr", x, 0, 1, strided(m2(b, F32, 3, 2), (int64_t[]){1, 3}, 0));
  uint32_t t2 = transpose(b, "tr2", t, 0, 1, m2(b, F32, 2, 3));   /* == x: a view of it */
  uint32_t e = unary(b, "exp", "aten.exp.default", x, m2(b, F32, 2, 3));
  uint32_t ce = clone(b, "clone_of_exp", e, m2(b, F32, 2, 3));   /* fresh: forwarded */
  tu_output_ref(b, c, 0);
  tu_output_ref(b, t2, 0);
  tu_output_ref(b, ce, 0);
  run r = lower(b);
  HAS(r, "%1 = clone(%0, memory_format=None) : f32[2,3]  # clone_of_input\n");
  HAS(r, "%4 = exp(%0) : f32[2,3]  # exp\n");
  HASNT(r, "# tr\n");
  HASNT(r, "clone_of_exp");
  HAS(r, "output(%1, %0, %4)");
  done(&r, b);
}

/* permute(permute(x)) composes; transpose of a permute becomes a permute. */
static void test_simplify_permute_chains(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m3(b, F32, 2, 3, 4));
  uint32_t p1 = permute(b, "p1", x, 3, (int64_t[]){2, 0, 1},
                        strided(m3(b, F32, 4, 2, 3), (int64_t[]){1, 12, 4}, 0));
  uint32_t p2 = permute(b, "p2", p1, 3, (int64_t[]){0, 2, 1},
                        strided(m3(b, F32, 4, 3, 2), (int64_t[]){1, 4, 12}, 0));
  uint32_t t = transpose(b, "tr", p2, 0, 2, strided(m3(b, F32, 2, 3, 4), (int64_t[]){12, 4, 1}, 0));
  uint32_t e = unary(b, "exp", "aten.exp.default", p2, m3(b, F32, 4, 3, 2));
  uint32_t f = unary(b, "exp2", "aten.exp.default", t, m3(b, F32, 2, 3, 4));
  tu_output_ref(b, e, 0);
  tu_output_ref(b, f, 0);
  run r = lower(b);
  HAS(r, "%2 = permute(%0, dims=[2, 1, 0]) : f32[4,3,2]{strides=[1,4,12]}  # p2\n");
  HAS(r, "%4 = exp(%2) : f32[4,3,2]  # exp\n");
  HAS(r, "%5 = exp(%0) : f32[2,3,4]  # exp2\n");
  HASNT(r, "# p1\n");
  done(&r, b);
}

/* view(view(slice(x))) collapses to one view when strides allow. */
static void test_simplify_view_chain(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 4, 6));
  uint32_t v1 = view(b, "v1", x, 3, (int64_t[]){4, 2, 3}, m3(b, F32, 4, 2, 3));
  uint32_t v2 = view(b, "v2", v1, 2, (int64_t[]){8, 3}, m2(b, F32, 8, 3));
  uint32_t e = unary(b, "exp", "aten.exp.default", v2, m2(b, F32, 8, 3));
  tu_output_ref(b, e, 0);
  run r = lower(b);
  HAS(r, "%2 = view(%0, size=[8, 3]) : f32[8,3]  # v2\n");
  HASNT(r, "# v1\n");
  done(&r, b);
}

/* squeeze(unsqueeze(x)) and expand to the same shape are x; an output
 * that is a view keeps aliasing what it aliased. */
static void test_simplify_squeeze_expand(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 3, 4));
  uint32_t e = unary(b, "exp", "aten.exp.default", x, m2(b, F32, 3, 4));
  uint32_t u = tu_call(b, "unsq", "aten.unsqueeze.default", m3(b, F32, 3, 1, 4));
  tu_arg(b, u, tu_a_ref(b, "self", e, 0));
  tu_arg(b, u, tu_a_int(b, "dim", 1));
  uint32_t sq = tu_call(b, "sq", "aten.squeeze.dim", m2(b, F32, 3, 4));
  tu_arg(b, sq, tu_a_ref(b, "self", u, 0));
  tu_arg(b, sq, tu_a_int(b, "dim", 1));
  uint32_t ex = tu_call(b, "ex", "aten.expand.default", m2(b, F32, 3, 4));
  tu_arg(b, ex, tu_a_ref(b, "self", sq, 0));
  tu_arg(b, ex, tu_a_ints(b, "size", 2, (int64_t[]){3, -1}));
  tu_arg(b, ex, tu_a_bool(b, "implicit", false));
  uint32_t t = unary(b, "tanh", "aten.tanh.default", ex, m2(b, F32, 3, 4));
  tu_output_ref(b, t, 0);
  tu_output_ref(b, ex, 0);
  run r = lower(b);
  HAS(r, "tanh(%1) : f32[3,4]  # tanh\n");
  HAS(r, ", %1)");
  assert_int_equal(live_calls(r.g), 2);
  done(&r, b);
}

/* ---- fold -------------------------------------------------------------------------------- */

/* c * 0.1 + full(2.5) -> one constant, bit-exact in float. torch 2.13:
 *   (torch.tensor([1.0, 3.0, 16777217.0]) * 0.1 + 2.5).view(torch.int32)
 *   -> [1076258406, 1077097267, 1238158561]                               */
static void test_fold_f32_exact(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 3));
  float v[3] = {1.0f, 3.0f, 16777217.0f};
  uint32_t c = constant_f32(b, "c", 1, (int64_t[]){3}, v, 3);
  uint32_t m = with_scalar(b, "mul", "aten.mul.Tensor", c, tu_a_float(b, "other", 0.1), false,
                           m1(b, F32, 3));
  uint32_t f = full(b, "full", 1, (int64_t[]){3}, tu_a_float(b, "fill_value", 2.5), m1(b, F32, 3));
  uint32_t s = add(b, "sum", m, f, m1(b, F32, 3));
  uint32_t y = add(b, "y", x, s, m1(b, F32, 3));
  tu_output_ref(b, y, 0);
  run r = lower(b);
  HAS(r, "%4 = constant (12 bytes) : f32[3]  # sum\n");
  HAS(r, "%5 = add(%0, %4, alpha=1) : f32[3]  # y\n");
  HASNT(r, "# full\n");
  HASNT(r, "# mul\n");
  const trnc_node *k = const_node(&r, 4);
  int32_t want[3] = {1076258406, 1077097267, 1238158561};
  assert_memory_equal(want, k->data, 12);
  done(&r, b);
}

/* bf16 arithmetic rounds through float with round-to-nearest-even; int
 * casts truncate; comparisons give bools. Expected bits from torch 2.13
 * (every sum is a tie, broken to even):
 *   a = torch.tensor([0x3F80, 0x3F81, 0x4040], dtype=torch.int16).view(torch.bfloat16)
 *   c = torch.tensor([0x3B80, 0x3B80, 0x3C00], dtype=torch.int16).view(torch.bfloat16)
 *   (a + c).view(torch.int16) -> [0x3F80, 0x3F82, 0x4040]                  */
static void test_fold_bf16_and_casts(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, BF16, 3));
  uint16_t a[3] = {0x3F80, 0x3F81, 0x4040}, c[3] = {0x3B80, 0x3B80, 0x3C00};
  uint32_t ca = tu_get_attr(b, "a", m1(b, BF16, 3), a, 6);
  uint32_t cc = tu_get_attr(b, "c", m1(b, BF16, 3), c, 6);
  uint32_t s = add(b, "s", ca, cc, m1(b, BF16, 3));
  uint32_t y = add(b, "y", x, s, m1(b, BF16, 3));
  float fv[3] = {-2.75f, 2.75f, 7.0f};
  uint32_t cf = constant_f32(b, "cf", 1, (int64_t[]){3}, fv, 3);
  uint32_t ci = tu_call(b, "to_i32", "aten._to_copy.default", m1(b, I32, 3));
  tu_arg(b, ci, tu_a_ref(b, "self", cf, 0));
  tu_arg(b, ci, tu_a_dtype(b, "dtype", I32));
  for (int k = 0; k < 5; k++) tu_arg(b, ci, k == 3 ? tu_a_bool(b, "non_blocking", false) : tu_a_none(b, ""));
  uint32_t gt = with_scalar(b, "gt", "aten.gt.Scalar", ci, tu_a_int(b, "other", 0), false,
                            m1(b, BOOL_, 3));
  uint32_t xi = tu_placeholder(b, "xi", m1(b, I32, 3));
  uint32_t z = add(b, "z", xi, ci, m1(b, I32, 3));
  uint32_t w = tu_call(b, "w", "aten.where.self", m1(b, I32, 3));
  tu_arg(b, w, tu_a_ref(b, "condition", gt, 0));
  tu_arg(b, w, tu_a_ref(b, "self", z, 0));
  tu_arg(b, w, tu_a_ref(b, "other", xi, 0));
  tu_output_ref(b, y, 0);
  tu_output_ref(b, w, 0);
  run r = lower(b);
  HAS(r, "constant (6 bytes) : bf16[3]  # s\n");
  HAS(r, "constant (12 bytes) : i32[3]  # to_i32\n");
  HAS(r, "constant (3 bytes) : bool[3]  # gt\n");
  for (uint32_t i = 0; i < r.g->nnodes; i++) {
    const trnc_node *n = &r.g->nodes[i];
    if (n->dead || n->op != TRNC_OP_CONSTANT) continue;
    if (!strcmp(n->name, "s")) {
      uint16_t want[3] = {0x3F80, 0x3F82, 0x4040}, got[3];
      memcpy(got, n->data, 6);
      assert_memory_equal(want, got, 6);
    } else if (!strcmp(n->name, "to_i32")) {
      int32_t want[3] = {-2, 2, 7}, got[3];
      memcpy(got, n->data, 12);
      assert_memory_equal(want, got, 12);
    } else if (!strcmp(n->name, "gt")) {
      assert_memory_equal(n->data, ((uint8_t[]){0, 1, 1}), 3);
    }
  }
  done(&r, b);
}

/* Views of constants fold by moving bytes; arange folds into its user. */
static void test_fold_views_and_arange(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, I64, 3, 2));
  uint32_t ar = tu_call(b, "arange", "aten.arange.default", m1(b, I64, 6));
  tu_arg(b, ar, tu_a_int(b, "end", 6));
  creation_tail(b, ar);
  uint32_t v = view(b, "v", ar, 2, (int64_t[]){2, 3}, m2(b, I64, 2, 3));
  uint32_t t = tu_call(b, "t", "aten.t.default", strided(m2(b, I64, 3, 2), (int64_t[]){1, 3}, 0));
  tu_arg(b, t, tu_a_ref(b, "self", v, 0));
  uint32_t m = with_scalar(b, "m", "aten.mul.Tensor", t, tu_a_int(b, "other", 10), false,
                           m2(b, I64, 3, 2));
  uint32_t y = add(b, "y", x, m, m2(b, I64, 3, 2));
  tu_output_ref(b, y, 0);
  run r = lower(b);
  HAS(r, "constant (48 bytes) : i64[3,2]  # m\n");
  HASNT(r, "arange(");
  HASNT(r, "# t\n");
  for (uint32_t i = 0; i < r.g->nnodes; i++) {
    const trnc_node *n = &r.g->nodes[i];
    if (n->dead || n->op != TRNC_OP_CONSTANT) continue;
    int64_t want[6] = {0, 30, 10, 40, 20, 50}, got[6];
    memcpy(got, n->data, 48);
    assert_memory_equal(want, got, 48);
  }
  done(&r, b);
}

/* Not folded: a result over 4096 elements; a graph output; a NaN result;
 * a lone creation op (left to the emitter). */
static void test_fold_does_not_fire(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 64, 65));
  float one = 1.0f, inf = 1.0f / 0.0f;
  uint32_t c = constant_f32(b, "c", 0, NULL, &one, 1);
  uint32_t big = tu_call(b, "big", "aten.expand.default", strided(m2(b, F32, 64, 65), (int64_t[]){0, 0}, 0));
  tu_arg(b, big, tu_a_ref(b, "self", c, 0));
  tu_arg(b, big, tu_a_ints(b, "size", 2, (int64_t[]){64, 65}));
  tu_arg(b, big, tu_a_bool(b, "implicit", false));
  uint32_t bigneg = unary(b, "bigneg", "aten.neg.default", big, m2(b, F32, 64, 65));
  uint32_t y = add(b, "y", x, bigneg, m2(b, F32, 64, 65));
  uint32_t out_neg = unary(b, "out_neg", "aten.neg.default", c, m0(b, F32));
  uint32_t ci = constant_f32(b, "ci", 0, NULL, &inf, 1);
  uint32_t nan = binary(b, "nan", "aten.sub.Tensor", ci, ci, m0(b, F32));
  tu_arg(b, nan, tu_a_int(b, "alpha", 1));
  uint32_t xs = tu_placeholder(b, "xs", m0(b, F32));
  uint32_t ny = add(b, "ny", xs, nan, m0(b, F32));
  uint32_t f = full(b, "lone_full", 1, (int64_t[]){4}, tu_a_float(b, "fill_value", 0.5), m1(b, F32, 4));
  tu_output_ref(b, y, 0);
  tu_output_ref(b, out_neg, 0);
  tu_output_ref(b, ny, 0);
  tu_output_ref(b, f, 0);
  run r = lower(b);
  HAS(r, "neg(%2) : f32[64,65]  # bigneg\n");
  HAS(r, "neg(%1) : f32[]  # out_neg\n");
  HAS(r, "sub(%6, %6, alpha=1) : f32[]  # nan\n");
  HAS(r, "full(size=[4], fill_value=0.5");
  done(&r, b);
}

/* ---- golden graphs ------------------------------------------------------------------------- */

/* Every golden graph lowers through the pipeline, and the passes after the
 * decomposition (which expands ops into the ops lowered directly) never
 * grow it. */
static void test_goldens_shrink(void **state) {
  size_t n = 0;
  char *dir = tu_path_join(tu_source_dir(), "tests/golden");
  char **files = tu_list_files(dir, ".pb", &n);
  if (!n) fail_msg("no tests/golden/*.pb under %s (set TRNC_SOURCE_DIR)", dir);
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    char *bytes = tu_read_file(files[i], &len);
    assert_non_null(bytes);
    trnc_diags *d = trnc_diags_create();
    trnc_graph *g = NULL;
    trnc_status s = trnc_graph_import(bytes, len, NULL, &g, d);
    if (!s) s = trnc_graph_check_lowerable(g, d);
    if (!s) s = trnc_pass_decompose(g, d);
    trnc_graph_summary before, after;
    if (!s) trnc_graph_get_summary(g, &before);
    if (!s) s = trnc_graph_legalize(g, d);
    if (s) {
      tu_diags_dump(d);
      fail_msg("%s: %s", files[i], trnc_status_name(s));
    }
    trnc_graph_get_summary(g, &after);
    const char *base = strrchr(files[i], '/');
    fprintf(stderr, "golden %-22s nodes %3zu -> %3zu  (constants %zu -> %zu)\n",
            base ? base + 1 : files[i], before.nodes, after.nodes, before.constants,
            after.constants);
    assert_true(after.nodes <= before.nodes);
    assert_true(after.nodes + after.constants <= before.nodes + before.constants);
    trnc_graph_destroy(g);
    trnc_diags_destroy(d);
    free(bytes);
  }
  tu_free_list(files, n);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decompose_sdpa),
      cmocka_unit_test(test_decompose_type_of_a_failed_emission),
      cmocka_unit_test(test_qr_eigh_svd_decomposed),
      cmocka_unit_test(test_sdpa_kept_for_the_flash_kernel),
      cmocka_unit_test(test_decompose_sdpa_dropout_refused),
      cmocka_unit_test(test_decompose_topk),
      cmocka_unit_test(test_decompose_histc),
      cmocka_unit_test(test_histc_refusals),
      cmocka_unit_test(test_decompose_grouped_mm),
      cmocka_unit_test(test_decompose_grouped_mm_backward),
      cmocka_unit_test(test_complex_rfft_is_a_dft_matmul),
      cmocka_unit_test(test_dce_removes_unused),
      cmocka_unit_test(test_dce_keeps_used_dropout),
      cmocka_unit_test(test_cse_merges_identical),
      cmocka_unit_test(test_cse_skips_random),
      cmocka_unit_test(test_cse_outputs_and_constants),
      cmocka_unit_test(test_simplify_identities),
      cmocka_unit_test(test_simplify_does_not_fire),
      cmocka_unit_test(test_simplify_keeps_output_types_and_buffers),
      cmocka_unit_test(test_simplify_permute_chains),
      cmocka_unit_test(test_simplify_view_chain),
      cmocka_unit_test(test_simplify_squeeze_expand),
      cmocka_unit_test(test_fold_f32_exact),
      cmocka_unit_test(test_fold_bf16_and_casts),
      cmocka_unit_test(test_fold_views_and_arange),
      cmocka_unit_test(test_fold_does_not_fire),
      cmocka_unit_test(test_goldens_shrink),
  };
  return cmocka_run_group_tests_name("passes", tests, NULL, NULL);
}
