/*
 * test_ir.c — op table, shape rules (via the verifier), printer, canonical
 * hash, legality scan (incl. int64 range analysis) and f64 legalization.
 * Graphs are built with the fx.proto builder in testutil and imported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ir/ir.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define F64 TRNC__FX__DTYPE__FLOAT64
#define I64 TRNC__FX__DTYPE__INT64
#define BOOL_ TRNC__FX__DTYPE__BOOL
#define C64 TRNC__FX__DTYPE__COMPLEX64
#define C32 TRNC__FX__DTYPE__COMPLEX32
#define FWD TRNC__FX__GRAPH_KIND__FORWARD

static Trnc__Fx__TensorMeta *m1(tu_fx *b, Trnc__Fx__DType dt, int64_t a) {
  return tu_meta(b, dt, 1, (int64_t[]){a});
}
static Trnc__Fx__TensorMeta *m2(tu_fx *b, Trnc__Fx__DType dt, int64_t a, int64_t c) {
  return tu_meta(b, dt, 2, (int64_t[]){a, c});
}
static Trnc__Fx__TensorMeta *m3(tu_fx *b, Trnc__Fx__DType dt, int64_t a, int64_t c, int64_t e) {
  return tu_meta(b, dt, 3, (int64_t[]){a, c, e});
}
/* Overrides strides and offset of a meta. */
static void set_strides(Trnc__Fx__TensorMeta *m, const int64_t *st, int64_t off) {
  for (size_t i = 0; i < m->n_stride; i++) m->stride[i]->value = st[i];
  m->storage_offset->value = off;
}

/* Imports; returns status; *g set on success (caller destroys). */
static trnc_status import(tu_fx *b, trnc_graph **g, trnc_diags *d) {
  *g = NULL;
  return tu_fx_import(b, NULL, g, d);
}

static void expect_ok(tu_fx *b) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g;
  trnc_status s = import(b, &g, d);
  if (s) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

static void expect_invalid(tu_fx *b, const char *msg) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g;
  trnc_status s = import(b, &g, d);
  assert_int_equal(s, TRNC_ERR_INVALID_GRAPH);
  assert_null(g);
  if (!tu_diags_have(d, msg)) {
    tu_diags_dump(d);
    fail_msg("no diagnostic containing '%s'", msg);
  }
  trnc_diags_destroy(d);
}

/* x:[2,3] + y:[3] -> declared out */
static tu_fx *add_graph(Trnc__Fx__TensorMeta *(*out)(tu_fx *)) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 2, 3));
  uint32_t y = tu_placeholder(b, "y", m1(b, F32, 3));
  uint32_t a = tu_call(b, "add", "aten.add.Tensor", out(b));
  tu_arg(b, a, tu_a_ref(b, "self", x, 0));
  tu_arg(b, a, tu_a_ref(b, "other", y, 0));
  tu_arg(b, a, tu_a_int(b, "alpha", 1));
  tu_output_ref(b, a, 0);
  return b;
}
static Trnc__Fx__TensorMeta *good_add(tu_fx *b) { return m2(b, F32, 2, 3); }
static Trnc__Fx__TensorMeta *bad_add_shape(tu_fx *b) { return m2(b, F32, 2, 4); }
static Trnc__Fx__TensorMeta *bad_add_dtype(tu_fx *b) { return m2(b, I64, 2, 3); }

static void test_binary_broadcast_rule(void **state) {
  tu_fx *b = add_graph(good_add);
  expect_ok(b);
  tu_fx_free(b);
  b = add_graph(bad_add_shape);
  expect_invalid(b, "declared f32[2,4], but the op's shape rule gives f32[2,3]");
  tu_fx_free(b);
  b = add_graph(bad_add_dtype);
  expect_invalid(b, "declared i64[2,3]");
  tu_fx_free(b);
}

static void test_mm_rule(void **state) {
  for (int bad = 0; bad < 2; bad++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", m2(b, F32, 21, 128));
    uint32_t w = tu_placeholder(b, "w", m2(b, F32, bad ? 127 : 128, 256));
    uint32_t mm = tu_call(b, "mm", "aten.mm.default", m2(b, F32, 21, 256));
    tu_arg(b, mm, tu_a_ref(b, "self", x, 0));
    tu_arg(b, mm, tu_a_ref(b, "mat2", w, 0));
    tu_output_ref(b, mm, 0);
    if (bad) expect_invalid(b, "mm: inner dims differ (128 vs 127)");
    else expect_ok(b);
    tu_fx_free(b);
  }
}

/* permute of [2,3,4] by (2,0,1): strides (1,12,4); a wrong stride is rejected. */
static void test_view_strides_exact(void **state) {
  for (int bad = 0; bad < 2; bad++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", m3(b, F32, 2, 3, 4));
    Trnc__Fx__TensorMeta *o = m3(b, F32, 4, 2, 3);
    set_strides(o, (int64_t[]){1, 12, bad ? 3 : 4}, 0);
    uint32_t p = tu_call(b, "permute", "aten.permute.default", o);
    tu_arg(b, p, tu_a_ref(b, "self", x, 0));
    tu_arg(b, p, tu_a_ints(b, "dims", 3, (int64_t[]){2, 0, 1}));
    tu_output_ref(b, p, 0);
    if (bad) expect_invalid(b, "the view rule gives strides (1,12,4) offset 0");
    else expect_ok(b);
    tu_fx_free(b);
  }
}

/* slice x[:, 1:7:2] of [4,8]: shape [4,3], strides (8,2), offset 1 */
static void test_slice_offset(void **state) {
  for (int bad = 0; bad < 2; bad++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", m2(b, F32, 4, 8));
    Trnc__Fx__TensorMeta *o = m2(b, F32, 4, 3);
    set_strides(o, (int64_t[]){8, 2}, bad ? 0 : 1);
    uint32_t s = tu_call(b, "slice", "aten.slice.Tensor", o);
    tu_arg(b, s, tu_a_ref(b, "self", x, 0));
    tu_arg(b, s, tu_a_int(b, "dim", 1));
    tu_arg(b, s, tu_a_int(b, "start", 1));
    tu_arg(b, s, tu_a_int(b, "end", 7));
    tu_arg(b, s, tu_a_int(b, "step", 2));
    tu_output_ref(b, s, 0);
    if (bad) expect_invalid(b, "offset 1");
    else expect_ok(b);
    tu_fx_free(b);
  }
}

/* view of a transposed tensor that needs a copy is rejected. */
static void test_view_of_transposed_needs_copy(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  Trnc__Fx__TensorMeta *xt = m2(b, F32, 3, 2);
  set_strides(xt, (int64_t[]){1, 3}, 0);
  uint32_t x = tu_placeholder(b, "xt", xt);
  uint32_t v = tu_call(b, "view", "aten.view.default", m1(b, F32, 6));
  tu_arg(b, v, tu_a_ref(b, "self", x, 0));
  tu_arg(b, v, tu_a_ints(b, "size", 1, (int64_t[]){-1}));
  tu_output_ref(b, v, 0);
  expect_invalid(b, "not compatible with the view");
  tu_fx_free(b);
}

/* conv2d: [2,3,16,16] * [8,3,3,3], stride 2, pad 1 -> [2,8,8,8] */
static void test_conv_rule(void **state) {
  for (int bad = 0; bad < 2; bad++) {
    tu_fx *b = tu_fx_new(FWD);
    uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 4, (int64_t[]){2, 3, 16, 16}));
    uint32_t w = tu_placeholder(b, "w", tu_meta(b, F32, 4, (int64_t[]){8, 3, 3, 3}));
    uint32_t c = tu_call(b, "conv", "aten.convolution.default",
                         tu_meta(b, F32, 4, (int64_t[]){2, 8, bad ? 7 : 8, 8}));
    tu_arg(b, c, tu_a_ref(b, "input", x, 0));
    tu_arg(b, c, tu_a_ref(b, "weight", w, 0));
    tu_arg(b, c, tu_a_none(b, "bias"));
    tu_arg(b, c, tu_a_ints(b, "stride", 2, (int64_t[]){2, 2}));
    tu_arg(b, c, tu_a_ints(b, "padding", 2, (int64_t[]){1, 1}));
    tu_arg(b, c, tu_a_ints(b, "dilation", 2, (int64_t[]){1, 1}));
    tu_arg(b, c, tu_a_bool(b, "transposed", false));
    tu_arg(b, c, tu_a_ints(b, "output_padding", 2, (int64_t[]){0, 0}));
    tu_arg(b, c, tu_a_int(b, "groups", 1));
    tu_output_ref(b, c, 0);
    if (bad) expect_invalid(b, "rule gives f32[2,8,8,8]");
    else expect_ok(b);
    tu_fx_free(b);
  }
}

/* split_with_sizes [6,4] into (2,4) along dim 0: offsets 0 and 8. */
static void test_split_multi_output(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m2(b, F32, 6, 4));
  Trnc__Fx__TensorMeta *o0 = m2(b, F32, 2, 4), *o1 = m2(b, F32, 4, 4);
  set_strides(o1, (int64_t[]){4, 1}, 8);
  uint32_t s = tu_call(b, "split", "aten.split_with_sizes.default", o0);
  tu_add_output(b, s, o1);
  tu_node(b, s)->outputs_tuple = true;
  tu_arg(b, s, tu_a_ref(b, "self", x, 0));
  tu_arg(b, s, tu_a_ints(b, "split_sizes", 2, (int64_t[]){2, 4}));
  tu_arg(b, s, tu_a_int(b, "dim", 0));
  tu_output_ref(b, s, 1);
  tu_output_ref(b, s, 0);
  expect_ok(b);
  tu_fx_free(b);
}

/* Two graphs differing only in FX names hash equal; a dim, a dtype, an
 * attribute, a constant byte each change the hash. */
static tu_fx *hash_graph(const char *prefix, int64_t dim, Trnc__Fx__DType dt, int64_t alpha,
                         uint8_t cbyte) {
  char n1[64], n2[64], n3[64];
  snprintf(n1, sizeof n1, "%s_x", prefix);
  snprintf(n2, sizeof n2, "%s_c", prefix);
  snprintf(n3, sizeof n3, "%s_add", prefix);
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, n1, m1(b, dt, dim));
  uint8_t data[4] = {0, 0, 0, cbyte};
  uint32_t c = tu_get_attr(b, n2, tu_meta(b, F32, 0, NULL), data, 4);
  uint32_t a = tu_call(b, n3, "aten.add.Tensor", m1(b, dt == F64 ? F64 : F32, dim));
  tu_arg(b, a, tu_a_ref(b, "self", x, 0));
  tu_arg(b, a, tu_a_ref(b, "other", c, 0));
  tu_arg(b, a, tu_a_int(b, "alpha", alpha));
  tu_set_loc(b, a, prefix, (int)dim, "x + c");
  tu_output_ref(b, a, 0);
  return b;
}

static void hash_of(tu_fx *b, uint8_t out[16]) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g;
  trnc_status s = import(b, &g, d);
  if (s) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  trnc_graph_hash(g, out);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

static void test_canonical_hash(void **state) {
  uint8_t h0[16], h1[16], h2[16], h3[16], h4[16], h5[16];
  hash_of(hash_graph("model", 8, F32, 1, 0x3f), h0);
  hash_of(hash_graph("renamed_module", 8, F32, 1, 0x3f), h1);
  assert_memory_equal(h0, h1, 16);
  hash_of(hash_graph("model", 9, F32, 1, 0x3f), h2);
  hash_of(hash_graph("model", 8, F64, 1, 0x3f), h3);
  hash_of(hash_graph("model", 8, F32, 2, 0x3f), h4);
  hash_of(hash_graph("model", 8, F32, 1, 0x40), h5);
  assert_memory_not_equal(h0, h2, 16);
  assert_memory_not_equal(h0, h3, 16);
  assert_memory_not_equal(h0, h4, 16);
  assert_memory_not_equal(h0, h5, 16);
}

static void test_printer_deterministic(void **state) {
  tu_fx *b = add_graph(good_add);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g1, *g2;
  assert_int_equal(import(b, &g1, d), TRNC_OK);
  assert_int_equal(import(b, &g2, d), TRNC_OK);
  char *t1 = trnc_graph_print(g1), *t2 = trnc_graph_print(g2);
  assert_string_equal(t1, t2);
  assert_non_null(strstr(t1, "graph forward {\n"));
  assert_non_null(strstr(t1, "%0 = placeholder input : f32[2,3]  # x\n"));
  assert_non_null(strstr(t1, "%2 = add(%0, %1, alpha=1) : f32[2,3]  # add\n"));
  assert_non_null(strstr(t1, "  output(%2)\n}\n"));
  trnc_free(t1);
  trnc_free(t2);
  trnc_graph_destroy(g1);
  trnc_graph_destroy(g2);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

/* ---- legality --------------------------------------------------------------- */

static trnc_status check(tu_fx *b, trnc_diags *d) {
  trnc_graph *g;
  trnc_status s = import(b, &g, d);
  if (s) {
    tu_diags_dump(d);
    return s;
  }
  s = trnc_graph_check_lowerable(g, d);
  trnc_graph_destroy(g);
  return s;
}

static void test_unknown_ops_all_reported(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 16));
  uint32_t f = tu_call(b, "rfft", "aten._fft_r2c.default", tu_meta(b, C64, 1, (int64_t[]){9}));
  tu_arg(b, f, tu_a_ref(b, "self", x, 0));
  tu_set_loc(b, f, "model.py", 12, "torch.fft.rfft(x)");
  uint32_t s = tu_call(b, "geqrf", "aten.geqrf.default", m1(b, F32, 16));
  tu_arg(b, s, tu_a_ref(b, "self", x, 0));
  tu_set_loc(b, s, "model.py", 13, "torch.geqrf(x)");
  tu_output_ref(b, f, 0);
  tu_output_ref(b, s, 0);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(check(b, d), TRNC_ERR_UNSUPPORTED);
  assert_int_equal(trnc_diags_error_count(d), 2);
  const trnc_diag *d0 = trnc_diags_get(d, 0), *d1 = trnc_diags_get(d, 1);
  assert_string_equal(d0->target, "aten._fft_r2c.default");
  assert_int_equal(d0->line, 12);
  assert_string_equal(d0->detail, "(f32[16])");
  assert_string_equal(d1->target, "aten.geqrf.default");
  assert_int_equal(d1->line, 13);
  assert_string_equal(d1->file, "model.py");
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

/* complex64 runs as float32 pairs (passes/complex.c); complex32 does not */
static void test_complex_input_unlowerable(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "z", m1(b, C64, 4));
  uint32_t n = tu_call(b, "neg", "aten.neg.default", m1(b, C64, 4));
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_output_ref(b, n, 0);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(check(b, d), TRNC_OK);
  trnc_diags_destroy(d);
  tu_fx_free(b);
  b = tu_fx_new(FWD);
  x = tu_placeholder(b, "z", m1(b, C32, 4));
  n = tu_call(b, "neg", "aten.neg.default", m1(b, C32, 4));
  tu_arg(b, n, tu_a_ref(b, "self", x, 0));
  tu_output_ref(b, n, 0);
  d = trnc_diags_create();
  assert_int_equal(check(b, d), TRNC_ERR_UNSUPPORTED);
  assert_true(tu_diags_have(d, "input 'z' has dtype c32"));
  /* the neg of a poisoned input is not reported a second time */
  assert_int_equal(trnc_diags_error_count(d), 1);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

/* i64 input * i64 input may overflow int32 whatever the input bound:
 * reported. arange - arange and
 * sum of a bool mask are provably small: accepted. */
static void test_int64_policy(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "ids", m1(b, I64, 8));
  uint32_t m = tu_call(b, "mul", "aten.mul.Tensor", m1(b, I64, 8));
  tu_arg(b, m, tu_a_ref(b, "self", x, 0));
  tu_arg(b, m, tu_a_ref(b, "other", x, 0));
  tu_set_loc(b, m, "model.py", 40, "ids * ids");
  tu_output_ref(b, m, 0);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(check(b, d), TRNC_ERR_UNSUPPORTED);
  assert_true(tu_diags_have(d, "outside int32"));
  trnc_diags_destroy(d);
  tu_fx_free(b);

  b = tu_fx_new(FWD);
  uint32_t r1 = tu_call(b, "arange", "aten.arange.default", m1(b, I64, 37));
  tu_arg(b, r1, tu_a_int(b, "end", 37));
  for (int k = 0; k < 4; k++) tu_arg(b, r1, tu_a_none(b, ""));
  uint32_t s = tu_call(b, "sub", "aten.sub.Tensor", m1(b, I64, 37));
  tu_arg(b, s, tu_a_ref(b, "self", r1, 0));
  tu_arg(b, s, tu_a_ref(b, "other", r1, 0));
  tu_arg(b, s, tu_a_int(b, "alpha", 1));
  uint32_t ne = tu_call(b, "ne", "aten.ne.Scalar", m1(b, BOOL_, 37));
  tu_arg(b, ne, tu_a_ref(b, "self", s, 0));
  tu_arg(b, ne, tu_a_int(b, "other", -100));
  uint32_t sum = tu_call(b, "sum", "aten.sum.default", tu_meta(b, I64, 0, NULL));
  tu_arg(b, sum, tu_a_ref(b, "self", ne, 0));
  tu_arg(b, sum, tu_a_none(b, "dtype"));
  tu_output_ref(b, sum, 0);
  d = trnc_diags_create();
  trnc_status st = check(b, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

static void test_f64_legalized_with_one_warning(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x64", m1(b, F64, 4));
  uint32_t y = tu_placeholder(b, "y64", m1(b, F64, 4));
  uint32_t a = tu_call(b, "add", "aten.add.Tensor", m1(b, F64, 4));
  tu_arg(b, a, tu_a_ref(b, "self", x, 0));
  tu_arg(b, a, tu_a_ref(b, "other", y, 0));
  tu_arg(b, a, tu_a_int(b, "alpha", 1));
  tu_output_ref(b, a, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g;
  assert_int_equal(import(b, &g, d), TRNC_OK);
  assert_int_equal(trnc_graph_check_lowerable(g, d), TRNC_OK);
  assert_int_equal(trnc_graph_legalize(g, d), TRNC_OK);
  assert_int_equal(trnc_diags_count(d), 1);
  const trnc_diag *w = trnc_diags_get(d, 0);
  assert_int_equal(w->severity, TRNC_SEV_WARNING);
  assert_non_null(strstr(w->message, "2 float64 graph inputs (2 parameters/buffers/user inputs)"));
  assert_null(strstr(w->message, "x64")); /* FX names mean nothing to the user */
  char *text = trnc_graph_print(g);
  assert_null(strstr(text, "f64"));
  assert_non_null(strstr(text, "add(%0, %1, alpha=1) : f32[4]"));
  trnc_free(text);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

/* Regression (found by the fuzzer): an unknown op with layout and memory
 * format arguments crashed the operand summary of the legality report. */
static void test_unknown_op_with_layout_args_is_reported(void **state) {
  tu_fx *b = tu_fx_new(FWD);
  uint32_t x = tu_placeholder(b, "x", m1(b, F32, 4));
  uint32_t u = tu_call(b, "odd", "aten.empty_like.default", m1(b, F32, 4));
  tu_arg(b, u, tu_a_ref(b, "self", x, 0));
  Trnc__Fx__Arg *lay = tu_a_none(b, "layout");
  lay->kind_case = TRNC__FX__ARG__KIND_LAYOUT;
  lay->layout = TRNC__FX__LAYOUT__STRIDED;
  tu_arg(b, u, lay);
  Trnc__Fx__Arg *mf = tu_a_none(b, "memory_format");
  mf->kind_case = TRNC__FX__ARG__KIND_MEMORY_FORMAT;
  mf->memory_format = TRNC__FX__MEMORY_FORMAT__CHANNELS_LAST;
  tu_arg(b, u, mf);
  tu_output_ref(b, u, 0);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(check(b, d), TRNC_ERR_UNSUPPORTED);
  const trnc_diag *e = trnc_diags_get(d, 0);
  assert_string_equal(e->detail, "(f32[4], layout=layout(1), memory_format=memory_format(2))");
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

static void test_op_table(void **state) {
  assert_true(trnc_op_count() >= 100);
  assert_int_equal(trnc_op_lookup("aten.addmm.default"), TRNC_OP_ADDMM);
  assert_int_equal(trnc_op_lookup("aten.nope.default"), TRNC_OP_UNKNOWN);
  trnc_op_info info;
  assert_true(trnc_op_get_info(TRNC_OP_GELU, &info));
  assert_string_equal(info.name, "gelu");
  assert_string_equal(info.fx_target, "aten.gelu.default");
  assert_string_equal(info.dtypes, "f32 f64 f16 bf16");
  assert_false(trnc_op_get_info(trnc_op_count(), &info));
  assert_string_equal(info.category, "elementwise"); /* gelu's, from its group bit */
  /* Every line has exactly one group bit, and TRNC_OPF_DECOMPOSED exactly
   * when its decomp column names a function (convert_ops_def.py sets both). */
  for (int op = 0; op < TRNC_OP_COUNT; op++) {
    uint32_t g = trnc_op_defs[op].flags & TRNC_OPF_GROUPS;
    if (!g || (g & (g - 1))) fail_msg("%s: %u group bits", trnc_op_name((trnc_op)op), g);
    assert_true(trnc_op_group((trnc_op)op)[0]);
    if (trnc_op_decomposed((trnc_op)op) != (strcmp(trnc_op_defs[op].decomp, "NULL") != 0))
      fail_msg("%s: TRNC_OPF_DECOMPOSED differs from its decomp column", trnc_op_name((trnc_op)op));
  }
  assert_true(trnc_op_has(TRNC_OP_VIEW, TRNC_OPF_VIEW | TRNC_OPF_ALIASES));
  assert_false(trnc_op_has(TRNC_OP_PLACEHOLDER, TRNC_OPF_VIEW));
  assert_string_equal(trnc_op_group(TRNC_OP_UNKNOWN), "");
  char *md = trnc_ops_markdown();
  assert_non_null(strstr(md, "| `aten.convolution.default` | convolution |"));
  trnc_free(md);
  assert_string_equal(trnc_status_name(TRNC_ERR_DYNAMIC_SHAPE), "TRNC_ERR_DYNAMIC_SHAPE");
  assert_int_equal(trnc_dtype_size(TRNC_BF16), 2);
  assert_int_equal(strncmp(trnc_llvm_version(), "16.", 3), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary_broadcast_rule),
      cmocka_unit_test(test_mm_rule),
      cmocka_unit_test(test_view_strides_exact),
      cmocka_unit_test(test_slice_offset),
      cmocka_unit_test(test_view_of_transposed_needs_copy),
      cmocka_unit_test(test_conv_rule),
      cmocka_unit_test(test_split_multi_output),
      cmocka_unit_test(test_canonical_hash),
      cmocka_unit_test(test_printer_deterministic),
      cmocka_unit_test(test_unknown_ops_all_reported),
      cmocka_unit_test(test_complex_input_unlowerable),
      cmocka_unit_test(test_int64_policy),
      cmocka_unit_test(test_f64_legalized_with_one_warning),
      cmocka_unit_test(test_unknown_op_with_layout_args_is_reported),
      cmocka_unit_test(test_op_table),
  };
  return cmocka_run_group_tests_name("ir", tests, NULL, NULL);
}
