/*
 * test_import.c — the fx.proto deserializer (frontend/import.c): every golden
 * graph imports and verifies; malformed inputs are rejected with the right
 * status and a diagnostic that says what is wrong and names the node.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/import.h"
#include "ir/ir.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32

static const int64_t S23[] = {2, 3};

/* x, y: f32[2,3] inputs; add = aten.add.Tensor(x, y, alpha=1); output add.
 * *add_out receives the add node's index. */
static tu_fx *add_graph(uint32_t *add_out) {
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__FORWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, S23));
  uint32_t y = tu_placeholder(b, "y", tu_meta(b, F32, 2, S23));
  uint32_t add = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 2, S23));
  tu_arg(b, add, tu_a_ref(b, "self", x, 0));
  tu_arg(b, add, tu_a_ref(b, "other", y, 0));
  tu_arg(b, add, tu_a_int(b, "alpha", 1));
  tu_set_loc(b, add, "model.py", 12, "return x + y");
  tu_output_ref(b, add, 0);
  if (add_out) *add_out = add;
  return b;
}

/* Imports b (then frees it) and asserts status st, no graph, and a
 * diagnostic containing substr. Returns nothing; dumps diags on mismatch. */
static void expect_reject_lim(tu_fx *b, const trnc_import_limits *lim, trnc_status st,
                              const char *substr) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, lim, &g, d);
  tu_fx_free(b);
  bool have = tu_diags_have(d, substr);
  if (s != st || !have) {
    fprintf(stderr, "expected %s with \"%s\", got %s:\n", trnc_status_name(st), substr,
                    trnc_status_name(s));
    tu_diags_dump(d);
  }
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  assert_int_equal(s, st);
  assert_null(g);
  assert_true(have);
}

static void expect_reject(tu_fx *b, trnc_status st, const char *substr) {
  expect_reject_lim(b, NULL, st, substr);
}

/* Imports raw bytes and asserts status and message substring. */
static void expect_reject_bytes(const void *buf, size_t len, trnc_status st, const char *substr) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = trnc_graph_import(buf, len, NULL, &g, d);
  bool have = tu_diags_have(d, substr);
  if (s != st || !have) tu_diags_dump(d);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  assert_int_equal(s, st);
  assert_true(have);
}

/* ---- accepted graphs ------------------------------------------------------------ */

static void test_accepts_add_graph(void **state) {
  (void)state;
  uint32_t addi;
  tu_fx *b = add_graph(&addi);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  assert_non_null(g);
  assert_int_equal(g->kind, TRNC_GRAPH_FORWARD);
  assert_int_equal(g->nnodes, 3);
  assert_int_equal(g->nvalues, 3);
  assert_int_equal(g->nodes[0].op, TRNC_OP_PLACEHOLDER);
  assert_string_equal(g->nodes[0].role, "input");
  const trnc_node *add = &g->nodes[addi];
  assert_int_equal(add->op, trnc_op_lookup("aten.add.Tensor"));
  assert_true(add->op < TRNC_OP_COUNT);
  assert_int_equal(add->nargs, 3);
  assert_int_equal(add->args[0].kind, TRNC_ARG_VALUE);
  assert_int_equal(add->args[0].u.ref, g->nodes[0].outs[0]);
  assert_int_equal(add->args[1].u.ref, g->nodes[1].outs[0]);
  assert_string_equal(add->args[1].name, "other");
  assert_int_equal(add->args[2].kind, TRNC_ARG_INT);
  assert_string_equal(add->loc.file, "model.py");
  assert_int_equal(add->loc.line, 12);
  assert_string_equal(add->loc.code, "return x + y");
  const trnc_type *t = trnc_ref_type(g, add->outs[0]);
  assert_int_equal(t->dtype, TRNC_F32);
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 3);
  assert_int_equal(t->stride[0], 3);
  assert_int_equal(t->stride[1], 1);
  assert_int_equal(g->values[add->outs[0]].layout, TRNC__FX__LAYOUT__STRIDED);
  assert_false(g->values[add->outs[0]].nested);
  assert_int_equal(g->noutputs, 1);
  assert_int_equal(g->outputs[0], add->outs[0]);
  assert_int_equal(trnc_graph_verify(g, d), TRNC_OK);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

/* Unknown targets import as TRNC_OP_UNKNOWN with their args as given, and a
 * tuple output may hold None slots; refs to non-None slots and None graph
 * outputs are fine. */
static void test_accepts_unknown_target_and_none_slots(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__BACKWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, S23));
  uint32_t u = tu_call(b, "weird", "mylib.weird_op.default", tu_meta(b, F32, 2, S23));
  tu_add_output(b, u, tu_meta_none(b));
  Trnc__Fx__Arg *items[] = {tu_a_int(b, "", 1), tu_a_ints(b, "", 2, S23)};
  tu_arg(b, u, tu_a_ref(b, "self", x, 0));
  tu_arg(b, u, tu_a_list(b, "nested", 2, items));
  tu_arg(b, u, tu_a_str(b, "mode", "fast"));
  tu_arg(b, u, tu_a_dtype(b, "dtype", TRNC__FX__DTYPE__BFLOAT16));
  tu_output_ref(b, u, 0);
  tu_output_none(b);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  assert_int_equal(g->kind, TRNC_GRAPH_BACKWARD);
  const trnc_node *n = &g->nodes[u];
  assert_int_equal(n->op, TRNC_OP_UNKNOWN);
  assert_string_equal(n->target, "mylib.weird_op.default");
  assert_int_equal(n->nouts, 2);
  assert_false(g->values[n->outs[0]].is_none);
  assert_true(g->values[n->outs[1]].is_none);
  assert_int_equal(n->nargs, 4);
  assert_int_equal(n->args[1].kind, TRNC_ARG_LIST);
  assert_int_equal(n->args[1].u.list.n, 2);
  assert_int_equal(n->args[1].u.list.items[1].kind, TRNC_ARG_LIST);
  assert_int_equal(n->args[1].u.list.items[1].u.list.items[1].u.i, 3);
  assert_string_equal(n->args[2].u.s, "fast");
  assert_int_equal(n->args[3].u.dtype, TRNC_BF16);
  assert_int_equal(g->noutputs, 2);
  assert_int_equal(g->outputs[1], TRNC_NO_REF);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

/* A Python number for a wrapped-scalar Tensor argument (add.Tensor's other)
 * is accepted; an int for int[] (amax's dim) becomes a one-element list. */
static void test_accepts_wrapped_scalar_and_int_for_int_list(void **state) {
  (void)state;
  static const int64_t s2[] = {2};
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__FORWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, S23));
  uint32_t add = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 2, S23));
  tu_arg(b, add, tu_a_ref(b, "self", x, 0));
  tu_arg(b, add, tu_a_float(b, "other", 2.5));
  tu_arg(b, add, tu_a_int(b, "alpha", 1));
  uint32_t amax = tu_call(b, "amax", "aten.amax.default", tu_meta(b, F32, 1, s2));
  tu_arg(b, amax, tu_a_ref(b, "self", add, 0));
  tu_arg(b, amax, tu_a_int(b, "dim", 1));
  tu_arg(b, amax, tu_a_bool(b, "keepdim", false));
  tu_output_ref(b, amax, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  assert_int_equal(g->nodes[add].args[1].kind, TRNC_ARG_FLOAT);
  const trnc_arg *dim = &g->nodes[amax].args[1];
  assert_int_equal(dim->kind, TRNC_ARG_LIST);
  assert_int_equal(dim->u.list.n, 1);
  assert_int_equal(dim->u.list.items[0].kind, TRNC_ARG_INT);
  assert_int_equal(dim->u.list.items[0].u.i, 1);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

/* A constant (get_attr) with matching bytes imports, bytes copied. */
static void test_accepts_constant(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  float w[6] = {1, 2, 3, 4, 5, 6};
  uint32_t c = tu_get_attr(b, "w", tu_meta(b, F32, 2, S23), w, sizeof w);
  tu_output_ref(b, c, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  assert_int_equal(g->nodes[c].op, TRNC_OP_CONSTANT);
  assert_int_equal(g->nodes[c].data_len, sizeof w);
  assert_memory_equal(g->nodes[c].data, w, sizeof w);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

/* Every tests/golden/<name>.pb imports and verifies. No files is a failure. */
static void test_accepts_every_golden_graph(void **state) {
  (void)state;
  char *dir = tu_path_join(tu_source_dir(), "tests/golden");
  size_t n = 0;
  char **files = tu_list_files(dir, ".pb", &n);
  if (n == 0) {
    free(dir);
    fail_msg("no tests/golden/*.pb under %s (set TRNC_SOURCE_DIR; the goldens come from "
             "tests/python)", tu_source_dir());
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    char *buf = tu_read_file(files[i], &len);
    if (!buf) {
      fprintf(stderr, "%s: cannot read\n", files[i]);
      bad++;
      continue;
    }
    trnc_diags *d = trnc_diags_create();
    trnc_graph *g = NULL;
    trnc_status s = trnc_graph_import(buf, len, NULL, &g, d);
    if (s == TRNC_OK) s = trnc_graph_verify(g, d);
    if (s != TRNC_OK) {
      fprintf(stderr, "%s: %s\n", files[i], trnc_status_name(s));
      tu_diags_dump(d);
      bad++;
    }
    trnc_graph_destroy(g);
    trnc_diags_destroy(d);
    free(buf);
  }
  fprintf(stderr, "golden graphs: %zu imported, %zu failed\n", n - bad, bad);
  tu_free_list(files, n);
  free(dir);
  assert_int_equal(bad, 0);
}

/* ---- malformed bytes and limits ---------------------------------------------------- */

static void test_rejects_garbage_bytes(void **state) {
  (void)state;
  static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  expect_reject_bytes(junk, sizeof junk, TRNC_ERR_MALFORMED, "not a trnc.fx.Graph message");
  static const uint8_t group[] = {0x0b, 0x0c}; /* start/end group: not in fx.proto */
  expect_reject_bytes(group, sizeof group, TRNC_ERR_MALFORMED, "not a trnc.fx.Graph message");
}

static void test_rejects_truncated_message(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  size_t len;
  uint8_t *buf = tu_fx_pack(b, &len);
  tu_fx_free(b);
  assert_true(len > 40);
  /* Inside the trailing Output message, and inside the first Node. */
  for (size_t cut = 1; cut <= 3; cut++)
    expect_reject_bytes(buf, len - cut, TRNC_ERR_MALFORMED, "not a trnc.fx.Graph message");
  expect_reject_bytes(buf, 24, TRNC_ERR_MALFORMED, "not a trnc.fx.Graph message");
  free(buf);
}

/* Empty input is a valid (empty) protobuf message: version 0. */
static void test_rejects_empty_bytes_as_wrong_version(void **state) {
  (void)state;
  expect_reject_bytes("", 0, TRNC_ERR_VERSION, "version 0");
}

static void test_rejects_wrong_version(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_fx_graph(b)->version = 2;
  expect_reject(b, TRNC_ERR_VERSION, "fx schema version 2; this trnc reads version 1");
}

static void test_rejects_unknown_graph_kind(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_fx_graph(b)->kind = (Trnc__Fx__GraphKind)7;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "graph kind 7");
}

static void test_rejects_bytes_over_limit(void **state) {
  (void)state;
  trnc_import_limits lim = {.max_bytes = 16};
  expect_reject_lim(add_graph(NULL), &lim, TRNC_ERR_LIMIT, "over the limit of 16 bytes");
}

static void test_rejects_nodes_over_limit(void **state) {
  (void)state;
  trnc_import_limits lim = {.max_nodes = 2};
  expect_reject_lim(add_graph(NULL), &lim, TRNC_ERR_LIMIT,
                "graph has 3 nodes, over the limit of 2");
}

static void test_rejects_allocations_over_limit(void **state) {
  (void)state;
  trnc_import_limits lim = {.max_allocs = 8};
  expect_reject_lim(add_graph(NULL), &lim, TRNC_ERR_LIMIT, "more than 8 allocations");
}

/* 1.5 M empty Node messages: 3 MiB on the wire, ~230 MB once unpacked. The
 * unpack byte cap (64 MiB + 32 x input) stops protobuf-c first. */
static void test_rejects_unpacked_size_over_cap(void **state) {
  (void)state;
  size_t nodes = 1500000, len = 2 * nodes;
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  for (size_t i = 0; i < nodes; i++) {
    buf[2 * i] = 0x22; /* field 4 (nodes), wire type 2 */
    buf[2 * i + 1] = 0;
  }
  trnc_import_limits lim = {.max_nodes = 10 * nodes};
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = trnc_graph_import(buf, len, &lim, &g, d);
  free(buf);
  if (s != TRNC_ERR_LIMIT) tu_diags_dump(d);
  assert_int_equal(s, TRNC_ERR_LIMIT);
  assert_true(tu_diags_have(d, "unpacking the graph needs more than"));
  trnc_diags_destroy(d);
}

static void test_rejects_null_arguments(void **state) {
  (void)state;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_graph_import("x", 1, NULL, NULL, d), TRNC_ERR_INVALID_ARGUMENT);
  trnc_graph *g = (trnc_graph *)d; /* must be reset to NULL */
  assert_int_equal(trnc_graph_import(NULL, 4, NULL, &g, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_null(g);
  trnc_diags_destroy(d);
}

/* Lists nested `depth` deep as argument 0 of an unknown op. */
static tu_fx *nested_graph(int depth) {
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__FORWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, S23));
  Trnc__Fx__Arg *a = tu_a_int(b, "", 1);
  for (int i = 0; i < depth; i++) a = tu_a_list(b, "", 1, &a);
  uint32_t u = tu_call(b, "deep", "mylib.deep.default", tu_meta(b, F32, 2, S23));
  tu_arg(b, u, a);
  tu_arg(b, u, tu_a_ref(b, "", x, 0));
  tu_output_ref(b, u, 0);
  return b;
}

static void test_rejects_deeply_nested_lists(void **state) {
  (void)state;
  expect_reject(nested_graph(TRNC_FX_MAX_ARG_DEPTH + 1), TRNC_ERR_LIMIT,
                "nests lists deeper than 16 levels");
  /* Deep enough that protobuf-c would recurse far: caught before unpacking. */
  expect_reject(nested_graph(1000), TRNC_ERR_LIMIT, "nests messages deeper than");
  /* The deepest accepted nesting imports. */
  tu_fx *b = nested_graph(TRNC_FX_MAX_ARG_DEPTH);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

/* ---- tensor metadata ------------------------------------------------------------------ */

static void test_rejects_unknown_dtype_enum(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 1)->outputs[0]->dtype = (Trnc__Fx__DType)99;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "unknown dtype enum value 99");
}

static void test_rejects_missing_dtype_on_input(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0] = tu_meta_none(b);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "has no dtype (DTYPE_UNSPECIFIED)");
}

/* Rank > 8 is a limit of the model (UNSUPPORTED, named at the input or at the
 * node with the user's line), not of the serialized bytes (LIMIT). */
static void test_rejects_rank_9(void **state) {
  (void)state;
  static const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0] = tu_meta(b, F32, 9, s9);
  expect_reject(b, TRNC_ERR_UNSUPPORTED, "input 'x' has rank 9; trnc supports rank <= 8");
}

static void test_rejects_rank_9_intermediate_with_line(void **state) {
  (void)state;
  static const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
  uint32_t add;
  tu_fx *b = add_graph(&add);
  tu_node(b, add)->outputs[0] = tu_meta(b, F32, 9, s9);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  assert_int_equal(s, TRNC_ERR_UNSUPPORTED);
  assert_null(g);
  assert_true(tu_diags_have(d, "node 'add' output 0 has rank 9; trnc supports rank <= 8"));
  const trnc_diag *e = trnc_diags_get(d, 0);
  assert_string_equal(e->target, "aten.add.Tensor");
  assert_string_equal(e->file, "model.py");
  assert_int_equal(e->line, 12);
  trnc_diags_destroy(d);
}

static void test_rejects_negative_dim(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 1)->outputs[0]->shape[1]->value = -2;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "negative size -2 in dim 1");
}

static void test_rejects_negative_stride(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->stride[0]->value = -3;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "negative stride -3 in dim 0");
}

static void test_rejects_negative_storage_offset(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->storage_offset->value = -1;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "negative storage offset -1");
}

static void test_rejects_overflowing_dims(void **state) {
  (void)state;
  static const int64_t big[3] = {INT64_C(1) << 31, INT64_C(1) << 31, INT64_C(1) << 2};
  tu_fx *b = add_graph(NULL);
  Trnc__Fx__TensorMeta *m = tu_meta(b, F32, 3, big);
  for (int i = 0; i < 3; i++) m->stride[i]->value = 0; /* keep the extent small */
  tu_node(b, 0)->outputs[0] = m;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "the number of elements overflows int64 at dim 2");
}

static void test_rejects_overflowing_byte_size(void **state) {
  (void)state;
  static const int64_t big[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
  tu_fx *b = add_graph(NULL);
  Trnc__Fx__TensorMeta *m = tu_meta(b, F32, 2, big);
  m->stride[0]->value = m->stride[1]->value = 0;
  tu_node(b, 0)->outputs[0] = m;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "byte size overflows int64");
}

static void test_rejects_overflowing_storage_extent(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->shape[0]->value = 3;
  tu_node(b, 0)->outputs[0]->stride[0]->value = INT64_MAX / 2 + 1;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "storage extent (offset + sum((size-1)*stride)) overflows");
}

static void test_rejects_stride_shape_length_mismatch(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->n_stride = 1;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "has 2 dims but 1 strides");
}

static void test_rejects_unknown_layout_enum(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->layout = (Trnc__Fx__Layout)42;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "unknown layout enum value 42");
}

/* Imports b (then frees it), asserts status st and no graph; returns the
 * diagnostics (destroy with trnc_diags_destroy). */
static trnc_diags *import_rejected(tu_fx *b, trnc_status st) {
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  assert_int_equal(s, st);
  assert_null(g);
  return d;
}

/* A symbolic dim names the input, the dim and the symbol, and says what to do. */
static void test_rejects_symbolic_dim_naming_input(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 1)->outputs[0]->shape[0] = tu_dim(b, 2, "s0");
  trnc_diags *d = import_rejected(b, TRNC_ERR_DYNAMIC_SHAPE);
  assert_true(tu_diags_have(d, "input 'y' has a symbolic size in dim 0 (s0)"));
  assert_true(tu_diags_have(d, "dynamic=False"));
  assert_true(tu_diags_have(d, "trnc.buckets"));
  assert_true(tu_diags_have_node(d, TRNC_ERR_DYNAMIC_SHAPE, "y"));
  trnc_diags_destroy(d);
}

/* Every symbolic dim of every input is listed, not only the first; the
 * strides of a symbolic size are not listed again. */
static void test_lists_every_symbolic_dim(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->shape[0] = tu_dim(b, 2, "s0");
  tu_node(b, 0)->outputs[0]->shape[1] = tu_dim(b, 3, "s1");
  tu_node(b, 0)->outputs[0]->stride[0] = tu_dim(b, 3, "s1");
  tu_node(b, 1)->outputs[0]->shape[1] = tu_dim(b, 3, "s2");
  trnc_diags *d = import_rejected(b, TRNC_ERR_DYNAMIC_SHAPE);
  assert_true(tu_diags_have(d, "input 'x' has a symbolic size in dim 0 (s0)"));
  assert_true(tu_diags_have(d, "input 'x' has a symbolic size in dim 1 (s1)"));
  assert_true(tu_diags_have(d, "input 'y' has a symbolic size in dim 1 (s2)"));
  assert_false(tu_diags_have(d, "symbolic stride"));
  assert_int_equal(trnc_diags_error_count(d), 3);
  trnc_diags_destroy(d);
}

static void test_rejects_symbolic_stride(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 0)->outputs[0]->stride[0] = tu_dim(b, 3, "s1");
  expect_reject(b, TRNC_ERR_DYNAMIC_SHAPE, "input 'x' has a symbolic stride in dim 0 (s1)");
}

/* A placeholder whose value is a SymInt (scalar output, no tensor). */
static void test_rejects_symint_input(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  uint32_t s = tu_placeholder(b, "s0", NULL);
  Trnc__Fx__Node *n = tu_node(b, s);
  n->n_scalar_outputs = 1;
  n->scalar_outputs = tu_alloc(b, sizeof(char *));
  n->scalar_outputs[0] = tu_str(b, "s0");
  expect_reject(b, TRNC_ERR_DYNAMIC_SHAPE,
                "input 's0' is a symbolic size (s0): trnc compiles static shapes: pass "
                "dynamic=False to torch.compile");
}

/* x[x > 0], nonzero: a size from the data (unbacked symbol u0) is not a
 * dynamic=False problem: UNSUPPORTED at the op, with the user's line. */
static void test_rejects_data_dependent_size_at_the_op(void **state) {
  (void)state;
  uint32_t add;
  tu_fx *b = add_graph(&add);
  tu_node(b, add)->target = tu_str(b, "aten.index.Tensor");
  tu_node(b, add)->outputs[0]->shape[0] = tu_dim(b, 0, "u0");
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_ERR_UNSUPPORTED) tu_diags_dump(d);
  assert_int_equal(s, TRNC_ERR_UNSUPPORTED);
  assert_null(g);
  assert_true(tu_diags_have(d, "node 'add' output 0 has a data-dependent size in dim 0 (u0)"));
  assert_true(tu_diags_have(d, "torch.where"));
  assert_false(tu_diags_have(d, "dynamic=False"));
  const trnc_diag *e = trnc_diags_get(d, 0);
  assert_string_equal(e->target, "aten.index.Tensor");
  assert_string_equal(e->file, "model.py");
  assert_int_equal(e->line, 12);
  trnc_diags_destroy(d);
}

/* Backed sizes (s0, s77 + 1) stay dynamic-shape errors; u12, zuf0 are
 * unbacked; names that merely start with u (u, up0x) are not. */
static void test_unbacked_symbol_names(void **state) {
  (void)state;
  static const struct {
    const char *sym;
    trnc_status st;
  } cases[] = {{"u12", TRNC_ERR_UNSUPPORTED},      {"2*u0 + 1", TRNC_ERR_UNSUPPORTED},
               {"zuf0", TRNC_ERR_UNSUPPORTED},     {"s0", TRNC_ERR_DYNAMIC_SHAPE},
               {"s77 + 1", TRNC_ERR_DYNAMIC_SHAPE}, {"Max(1, s3)", TRNC_ERR_DYNAMIC_SHAPE},
               {"up0x", TRNC_ERR_DYNAMIC_SHAPE},    {"u", TRNC_ERR_DYNAMIC_SHAPE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tu_fx *b = add_graph(NULL);
    tu_node(b, 2)->args[2] = tu_a_sym(b, "alpha", cases[i].sym);
    expect_reject(b, cases[i].st, cases[i].sym);
  }
}

/* n = int(x.sum().item()); x * n: the .item() node has only a scalar output
 * (u0). Using it is UNSUPPORTED, named at the .item() node and its line. */
static void test_rejects_use_of_item_scalar(void **state) {
  (void)state;
  static const int64_t s0[] = {0};
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 1, (const int64_t[]){3}));
  uint32_t sum = tu_call(b, "sum", "aten.sum.default", tu_meta(b, F32, 0, s0));
  tu_arg(b, sum, tu_a_ref(b, "self", x, 0));
  tu_arg(b, sum, tu_a_none(b, "dtype"));
  uint32_t item = tu_call(b, "_local_scalar_dense", "aten._local_scalar_dense.default", NULL);
  tu_arg(b, item, tu_a_ref(b, "self", sum, 0));
  Trnc__Fx__Node *n = tu_node(b, item);
  n->n_scalar_outputs = 1;
  n->scalar_outputs = tu_alloc(b, sizeof(char *));
  n->scalar_outputs[0] = tu_str(b, "u0");
  tu_set_loc(b, item, "model.py", 7, "n = int(x.sum().item())");
  uint32_t tr = tu_call(b, "trunc", "math.trunc", NULL);
  tu_arg(b, tr, tu_a_ref(b, "", item, 0));
  tu_output_ref(b, x, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_ERR_UNSUPPORTED) tu_diags_dump(d);
  assert_int_equal(s, TRNC_ERR_UNSUPPORTED);
  assert_null(g);
  assert_true(tu_diags_have(d, "node '_local_scalar_dense' reads a value out of a tensor into a "
                               "Python scalar (u0"));
  assert_true(tu_diags_have(d, "that node 'trunc' uses"));
  assert_true(tu_diags_have(d, "without host round trips"));
  const trnc_diag *e = trnc_diags_get(d, 0);
  assert_string_equal(e->node, "_local_scalar_dense");
  assert_string_equal(e->target, "aten._local_scalar_dense.default");
  assert_int_equal(e->line, 7);
  trnc_diags_destroy(d);
}

static void test_rejects_symbolic_argument(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[2] = tu_a_sym(b, "alpha", "s3 + 1");
  expect_reject(b, TRNC_ERR_DYNAMIC_SHAPE,
                "argument 2 ('alpha') of node 'add' is symbolic (s3 + 1)");
}

/* ---- references ------------------------------------------------------------------------ */

static void test_rejects_dangling_ref(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[1] = tu_a_ref(b, "other", 17, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "argument 1 ('other') refers to node 17, but the graph has only 3 nodes");
}

static void test_rejects_forward_ref(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  uint32_t neg = tu_call(b, "neg", "aten.neg.default", tu_meta(b, F32, 2, S23));
  tu_arg(b, neg, tu_a_ref(b, "self", 0, 0));
  tu_node(b, 2)->args[1] = tu_a_ref(b, "other", neg, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "argument 1 ('other') refers to node 3, which comes later in the graph");
}

static void test_rejects_self_ref(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[0] = tu_a_ref(b, "self", 2, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "argument 0 ('self') refers to its own node 2");
}

static void test_rejects_output_index_out_of_range(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[1] = tu_a_ref(b, "other", 1, 1);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "refers to output 1 of node 1 ('y'), which has 1 output");
}

static void test_rejects_ref_to_none_slot(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  uint32_t u = tu_call(b, "pair", "mylib.pair.default", tu_meta(b, F32, 2, S23));
  tu_add_output(b, u, tu_meta_none(b));
  tu_arg(b, u, tu_a_ref(b, "", 0, 0));
  uint32_t neg = tu_call(b, "neg", "aten.neg.default", tu_meta(b, F32, 2, S23));
  tu_arg(b, neg, tu_a_ref(b, "self", u, 1));
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "refers to output 1 of node 3 ('pair'), which is None");
}

static void test_rejects_missing_output(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_fx_graph(b)->output = NULL;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "graph has no output node");
}

static void test_rejects_graph_output_that_is_not_a_ref(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  Trnc__Fx__Output *o = tu_fx_graph(b)->output;
  o->values[0] = tu_a_int(b, "", 3);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "graph output 0 is an int; graph outputs must be tensor references or None");
}

static void test_rejects_dangling_graph_output(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_output_ref(b, 9, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "graph output 1 refers to node 9");
}

/* ---- argument schemas -------------------------------------------------------------------- */

static void test_rejects_wrong_arg_count_for_table_op(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->n_args = 2;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "aten.add.Tensor takes 3 schema arguments, got 2");
}

static void test_rejects_wrong_arg_kind(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[0] = tu_a_str(b, "self", "x");
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "argument 0 ('self') of aten.add.Tensor must be Tensor, got a str");
}

static void test_rejects_arg_without_kind(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[2]->kind_case = TRNC__FX__ARG__KIND__NOT_SET;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "argument 2 ('alpha') has no value");
}

static void test_rejects_table_call_without_output_meta(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->n_outputs = 0;
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "aten.add.Tensor call has no output metadata");
}

/* Diagnostics about a node carry its name, target and user source line. */
static void test_diagnostic_names_node_and_source_line(void **state) {
  (void)state;
  tu_fx *b = add_graph(NULL);
  tu_node(b, 2)->args[0] = tu_a_str(b, "self", "x");
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  assert_int_equal(tu_fx_import(b, NULL, &g, d), TRNC_ERR_INVALID_GRAPH);
  tu_fx_free(b);
  assert_int_equal(trnc_diags_count(d), 1);
  const trnc_diag *x = trnc_diags_get(d, 0);
  assert_string_equal(x->node, "add");
  assert_string_equal(x->target, "aten.add.Tensor");
  assert_string_equal(x->file, "model.py");
  assert_int_equal(x->line, 12);
  assert_string_equal(x->source, "return x + y");
  trnc_diags_destroy(d);
}

/* aten.add.Tensor of f32[2,3] and f32[3] declared as f32[2,4]: caught by the
 * op's shape rule in trnc_graph_verify, reported on the node. */
static void test_rejects_output_meta_that_breaks_shape_rule(void **state) {
  (void)state;
  static const int64_t s3[] = {3}, s24[] = {2, 4};
  tu_fx *b = add_graph(NULL);
  tu_node(b, 1)->outputs[0] = tu_meta(b, F32, 1, s3);
  tu_node(b, 2)->outputs[0] = tu_meta(b, F32, 2, s24);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_ERR_INVALID_GRAPH || !tu_diags_have_node(d, TRNC_ERR_INVALID_GRAPH, "add"))
    tu_diags_dump(d);
  assert_int_equal(s, TRNC_ERR_INVALID_GRAPH);
  assert_null(g);
  assert_true(tu_diags_have_node(d, TRNC_ERR_INVALID_GRAPH, "add"));
  trnc_diags_destroy(d);
}

/* ---- constants ------------------------------------------------------------------------------ */

static void test_rejects_constant_byte_size_mismatch(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  float w[5] = {0};
  uint32_t c = tu_get_attr(b, "w", tu_meta(b, F32, 2, S23), w, sizeof w);
  tu_output_ref(b, c, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "constant 0 ('w') has 20 data bytes, but f32[2,3] needs 24");
}

static void test_rejects_constant_index_out_of_range(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  float w[6] = {0};
  uint32_t c = tu_get_attr(b, "w", tu_meta(b, F32, 2, S23), w, sizeof w);
  tu_node(b, c)->constant = 4;
  tu_output_ref(b, c, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "constant index 4 is out of range");
}

/* torch.tensor([...]) in a model: lift_fresh_copy(_tensor_constant0) is
 * imported as clone(self, memory_format=None), a table op. */
static void test_lift_fresh_copy_imports_as_clone(void **state) {
  (void)state;
  static const int64_t s3[] = {3};
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  float w[3] = {1, 2, 3};
  uint32_t c = tu_get_attr(b, "_tensor_constant0", tu_meta(b, F32, 1, s3), w, sizeof w);
  uint32_t l =
      tu_call(b, "lift_fresh_copy", "aten.lift_fresh_copy.default", tu_meta(b, F32, 1, s3));
  tu_arg(b, l, tu_a_ref(b, "self", c, 0));
  tu_output_ref(b, l, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status s = tu_fx_import(b, NULL, &g, d);
  tu_fx_free(b);
  if (s != TRNC_OK) tu_diags_dump(d);
  assert_int_equal(s, TRNC_OK);
  const trnc_node *n = &g->nodes[l];
  assert_int_equal(n->op, trnc_op_lookup("aten.clone.default"));
  assert_string_equal(n->target, "aten.clone.default");
  assert_int_equal(n->nargs, 2);
  assert_int_equal(n->args[0].kind, TRNC_ARG_VALUE);
  assert_int_equal(n->args[1].kind, TRNC_ARG_NONE);
  assert_string_equal(n->args[1].name, "memory_format");
  assert_int_equal(trnc_graph_check_lowerable(g, d), TRNC_OK);
  trnc_graph_destroy(g);
  /* an alias with an extra argument fails the op's schema, it is not read past */
  b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  c = tu_get_attr(b, "_tensor_constant0", tu_meta(b, F32, 1, s3), w, sizeof w);
  l = tu_call(b, "lift_fresh_copy", "aten.lift_fresh_copy.default", tu_meta(b, F32, 1, s3));
  tu_arg(b, l, tu_a_ref(b, "self", c, 0));
  tu_arg(b, l, tu_a_int(b, "", 1));
  tu_output_ref(b, l, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH, "aten.clone.default takes 2 schema arguments, got 3");
  trnc_diags_destroy(d);
}

static void test_rejects_constant_meta_mismatch(void **state) {
  (void)state;
  static const int64_t s32[] = {3, 2};
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__INFERENCE);
  float w[6] = {0};
  uint32_t c = tu_get_attr(b, "w", tu_meta(b, F32, 2, S23), w, sizeof w);
  tu_node(b, c)->outputs[0] = tu_meta(b, F32, 2, s32);
  tu_output_ref(b, c, 0);
  expect_reject(b, TRNC_ERR_INVALID_GRAPH,
                "constant 0 ('w') is f32[2,3] but the node's output is f32[3,2]");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accepts_add_graph),
      cmocka_unit_test(test_accepts_unknown_target_and_none_slots),
      cmocka_unit_test(test_accepts_wrapped_scalar_and_int_for_int_list),
      cmocka_unit_test(test_accepts_constant),
      cmocka_unit_test(test_accepts_every_golden_graph),
      cmocka_unit_test(test_rejects_garbage_bytes),
      cmocka_unit_test(test_rejects_truncated_message),
      cmocka_unit_test(test_rejects_empty_bytes_as_wrong_version),
      cmocka_unit_test(test_rejects_wrong_version),
      cmocka_unit_test(test_rejects_unknown_graph_kind),
      cmocka_unit_test(test_rejects_bytes_over_limit),
      cmocka_unit_test(test_rejects_nodes_over_limit),
      cmocka_unit_test(test_rejects_allocations_over_limit),
      cmocka_unit_test(test_rejects_unpacked_size_over_cap),
      cmocka_unit_test(test_rejects_null_arguments),
      cmocka_unit_test(test_rejects_deeply_nested_lists),
      cmocka_unit_test(test_rejects_unknown_dtype_enum),
      cmocka_unit_test(test_rejects_missing_dtype_on_input),
      cmocka_unit_test(test_rejects_rank_9),
      cmocka_unit_test(test_rejects_rank_9_intermediate_with_line),
      cmocka_unit_test(test_rejects_negative_dim),
      cmocka_unit_test(test_rejects_negative_stride),
      cmocka_unit_test(test_rejects_negative_storage_offset),
      cmocka_unit_test(test_rejects_overflowing_dims),
      cmocka_unit_test(test_rejects_overflowing_byte_size),
      cmocka_unit_test(test_rejects_overflowing_storage_extent),
      cmocka_unit_test(test_rejects_stride_shape_length_mismatch),
      cmocka_unit_test(test_rejects_unknown_layout_enum),
      cmocka_unit_test(test_rejects_symbolic_dim_naming_input),
      cmocka_unit_test(test_lists_every_symbolic_dim),
      cmocka_unit_test(test_rejects_symbolic_stride),
      cmocka_unit_test(test_rejects_symint_input),
      cmocka_unit_test(test_rejects_data_dependent_size_at_the_op),
      cmocka_unit_test(test_unbacked_symbol_names),
      cmocka_unit_test(test_rejects_use_of_item_scalar),
      cmocka_unit_test(test_rejects_symbolic_argument),
      cmocka_unit_test(test_rejects_dangling_ref),
      cmocka_unit_test(test_rejects_forward_ref),
      cmocka_unit_test(test_rejects_self_ref),
      cmocka_unit_test(test_rejects_output_index_out_of_range),
      cmocka_unit_test(test_rejects_ref_to_none_slot),
      cmocka_unit_test(test_rejects_missing_output),
      cmocka_unit_test(test_rejects_graph_output_that_is_not_a_ref),
      cmocka_unit_test(test_rejects_dangling_graph_output),
      cmocka_unit_test(test_rejects_wrong_arg_count_for_table_op),
      cmocka_unit_test(test_rejects_wrong_arg_kind),
      cmocka_unit_test(test_rejects_arg_without_kind),
      cmocka_unit_test(test_rejects_table_call_without_output_meta),
      cmocka_unit_test(test_diagnostic_names_node_and_source_line),
      cmocka_unit_test(test_rejects_output_meta_that_breaks_shape_rule),
      cmocka_unit_test(test_rejects_constant_byte_size_mismatch),
      cmocka_unit_test(test_rejects_constant_index_out_of_range),
      cmocka_unit_test(test_rejects_constant_meta_mismatch),
      cmocka_unit_test(test_lift_fresh_copy_imports_as_clone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
