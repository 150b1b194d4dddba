/*
 * test_emit_collective.c — _c10d_functional collectives through the whole
 * pipeline (import, legality, the overlap pass, emission, verification):
 * the program's collective steps, where the overlap pass put the cc_wait, a
 * run through an in-process engine playing a 2-rank group whose peer holds
 * the same data, and the errors: a group the graph does not size, a run
 * without an engine. Also the cost model on a real 2-rank tensor-parallel
 * backward program (tests/asm/tp_mlp_backward_2rank.s): the all_reduce is
 * hidden behind the weight-gradient kernels, and is not once its wait is
 * moved up to its start.
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
#include "trnc/neuroncore.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define INF TRNC__FX__GRAPH_KIND__INFERENCE
#define SH(...) ((const int64_t[]){__VA_ARGS__})

/* y = wait(all_reduce(x)) + sin(x), the sin independent of the collective;
 * `sized`: the graph records the size of group "tp". */
static tu_fx *graph(bool sized) {
  tu_fx *b = tu_fx_new(INF);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, SH(4, 8)));
  uint32_t ar = tu_call(b, "ar", "_c10d_functional.all_reduce.default", tu_meta(b, F32, 2, SH(4, 8)));
  tu_arg(b, ar, tu_a_ref(b, "input", x, 0));
  tu_arg(b, ar, tu_a_str(b, "reduce_op", "sum"));
  tu_arg(b, ar, tu_a_str(b, "group_name", "tp"));
  uint32_t w = tu_call(b, "w", "_c10d_functional.wait_tensor.default", tu_meta(b, F32, 2, SH(4, 8)));
  tu_arg(b, w, tu_a_ref(b, "tensor", ar, 0));
  uint32_t s = tu_call(b, "s", "aten.sin.default", tu_meta(b, F32, 2, SH(4, 8)));
  tu_arg(b, s, tu_a_ref(b, "self", x, 0));
  uint32_t y = tu_call(b, "y", "aten.add.Tensor", tu_meta(b, F32, 2, SH(4, 8)));
  tu_arg(b, y, tu_a_ref(b, "self", w, 0));
  tu_arg(b, y, tu_a_ref(b, "other", s, 0));
  tu_arg(b, y, tu_a_int(b, "alpha", 1));
  tu_output_ref(b, y, 0);
  if (sized) {
    Trnc__Fx__Graph *g = tu_fx_graph(b);
    Trnc__Fx__ProcessGroup *pg = tu_alloc(b, sizeof *pg);
    trnc__fx__process_group__init(pg);
    pg->name = tu_str(b, "tp");
    pg->size = 2;
    g->n_process_groups = 1;
    g->process_groups = tu_alloc(b, sizeof *g->process_groups);
    g->process_groups[0] = pg;
  }
  return b;
}

static trnc_status double_it(void *ctx, const trnc_collective_call *c, void **h, trnc_diags *d) {
  (void)d;
  assert_int_equal(c->op, TRNC_NC_CC_ALL_REDUCE);
  assert_string_equal(c->group, "tp");
  assert_int_equal(c->group_size, 2);
  float *x = c->dst;
  for (int64_t i = 0; i < c->dst_bytes / 4; i++) x[i] *= 2;
  *h = ctx;
  return TRNC_OK;
}

static trnc_status done(void *ctx, void *h, trnc_diags *d) {
  (void)d;
  (*(int *)ctx)++;
  assert_ptr_equal(h, ctx);
  return TRNC_OK;
}

static void test_all_reduce_overlaps_sin(void **state) {
  (void)state;
  tu_fx *b = graph(true);
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  trnc_status st = tu_fx_compile(b, NULL, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  const trnc_nc_program *p = trnc_compiled_program(c);
  assert_int_equal(trnc_compiled_report(c)->collectives, 1);
  assert_true(trnc_compiled_report(c)->est_collective_s > 0);
  /* START, then the sin kernel, then the cc_wait, then the add */
  int start = -1, wait = -1, sin_k = -1;
  for (size_t k = 0; k < trnc_nc_program_kernel_count(p); k++) {
    const trnc_nc_collective *cc = trnc_nc_kernel_collective(p, k);
    if (cc && cc->op == TRNC_NC_CC_ALL_REDUCE) start = (int)k;
    else if (cc) wait = (int)k;
    else if (strstr(trnc_nc_kernel_name(p, k), "sin")) sin_k = (int)k;
  }
  assert_true(start >= 0 && sin_k > start && wait > sin_k);
  float x[32], y[32];
  for (int i = 0; i < 32; i++) x[i] = (float)i * 0.25f - 3;
  const void *in[1] = {x};
  void *out[1] = {y};
  /* no engine: the error says what to do */
  assert_int_equal(trnc_compiled_run(c, in, out, d), TRNC_ERR_UNSUPPORTED);
  assert_true(tu_diags_have(d, "no distributed engine"));
  int waits = 0;
  trnc_collective_engine e = {double_it, done, &waits};
  trnc_diags *d2 = trnc_diags_create();
  st = trnc_compiled_run_with(c, in, out, &e, d2);
  if (st) tu_diags_dump(d2);
  assert_int_equal(st, TRNC_OK);
  assert_int_equal(waits, 1);
  for (int i = 0; i < 32; i++)
    if (fabsf(y[i] - (2 * x[i] + sinf(x[i]))) > 1e-5f * (1 + fabsf(y[i])))
      fail_msg("y[%d] = %g, want %g", i, (double)y[i], (double)(2 * x[i] + sinf(x[i])));
  trnc_diags_destroy(d2);
  trnc_compiled_destroy(c);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

static void test_unsized_group_is_reported(void **state) {
  (void)state;
  tu_fx *b = graph(false);
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  assert_int_equal(tu_fx_compile(b, NULL, &c, d), TRNC_ERR_UNSUPPORTED);
  assert_null(c);
  assert_true(tu_diags_have(d, "does not record the size of this process group"));
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

/* The cost of a program text, and of the same program with every cc_wait
 * moved right behind its START (no overlap). */
static void test_tp_backward_hides_its_all_reduce(void **state) {
  (void)state;
  char *path = tu_path_join(tu_source_dir(), "tests/asm/tp_mlp_backward_2rank.s");
  size_t len = 0;
  char *text = tu_read_file(path, &len);
  assert_non_null(text);
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  assert_int_equal(trnc_nc_program_parse(text, len, &p, d), TRNC_OK);
  trnc_nc_cost hidden, serial;
  assert_int_equal(trnc_nc_cost_estimate(p, NULL, &hidden, d), TRNC_OK);
  /* serialize: the wait line moves up to just after its start line */
  char *start = strstr(text, ".collective all_reduce");
  char *wait = strstr(text, ".collective cc_wait");
  assert_true(start && wait && wait > start);
  char *wait_end = strchr(wait, '\n') + 1, *start_end = strchr(start, '\n') + 1;
  size_t wl = (size_t)(wait_end - wait);
  char *moved = malloc(len + 1);
  size_t head = (size_t)(start_end - text), mid = (size_t)(wait - start_end);
  memcpy(moved, text, head);
  memcpy(moved + head, wait, wl);
  memcpy(moved + head + wl, start_end, mid);
  memcpy(moved + head + wl + mid, wait_end, len - (size_t)(wait_end - text));
  trnc_nc_program *q = NULL;
  assert_int_equal(trnc_nc_program_parse(moved, len, &q, d), TRNC_OK);
  assert_int_equal(trnc_nc_cost_estimate(q, NULL, &serial, d), TRNC_OK);
  assert_int_equal(hidden.collectives, 1);
  assert_true(hidden.collective_s > 0 && fabs(hidden.collective_s - serial.collective_s) < 1e-15);
  assert_true(hidden.collective_exposed_s == 0);
  assert_true(fabs(serial.collective_exposed_s - serial.collective_s) < 1e-12);
  assert_true(serial.time_s > hidden.time_s);
  printf("tp backward: %.3f us overlapped, %.3f us serialized (all_reduce %.3f us)\n",
         hidden.time_s * 1e6, serial.time_s * 1e6, hidden.collective_s * 1e6);
  free(moved);
  trnc_nc_program_destroy(p);
  trnc_nc_program_destroy(q);
  trnc_diags_destroy(d);
  free(text);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_reduce_overlaps_sin),
      cmocka_unit_test(test_unsized_group_is_reported),
      cmocka_unit_test(test_tp_backward_hides_its_all_reduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
