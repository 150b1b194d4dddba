/*
 * test_pipeline.c — trnc_pipeline_run (codegen/driver.c): stages run in
 * order, a caller may stop between them and go on later, a failure names
 * its stage and keeps the graph, bad arguments are statuses.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ir/dump.h"
#include "testutil.h"

#define F32 TRNC__FX__DTYPE__FLOAT32

/** target(x) for x:[4] f32, packed into *len bytes (free with free()). */
static uint8_t *unary(const char *target, size_t *len) {
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__FORWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 1, (int64_t[]){4}));
  uint32_t r = tu_call(b, "r", target, tu_meta(b, F32, 1, (int64_t[]){4}));
  tu_arg(b, r, tu_a_ref(b, "self", x, 0));
  tu_output_ref(b, r, 0);
  uint8_t *bytes = tu_fx_pack(b, len);
  tu_fx_free(b);
  return bytes;
}

static void test_stop_and_resume(void **state) {
  (void)state;
  trnc_pipeline p = {0};
  p.bytes = unary("aten.relu.default", &p.len);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_pipeline_run(&p, TRNC_STAGE_VERIFY, d), TRNC_OK);
  assert_int_equal(p.next, TRNC_STAGE_COMPILE);
  assert_non_null(p.graph);
  assert_null(p.compiled);
  /* between the stages the IR is there to hash (the cache key), then compile */
  uint8_t h[16];
  trnc_graph_hash(p.graph, h);
  assert_int_equal(trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, d), TRNC_OK);
  assert_int_equal(p.next, TRNC_STAGE_DONE);
  assert_non_null(p.compiled);
  assert_int_equal(trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, d), TRNC_OK); /* nothing left */
  assert_int_equal(trnc_diags_error_count(d), 0);
  assert_string_equal(trnc_stage_name(p.next), "done");
  trnc_compiled_destroy(p.compiled);
  trnc_graph_destroy(p.graph);
  free((void *)p.bytes);
  trnc_diags_destroy(d);
}

static void test_failure_names_its_stage(void **state) {
  (void)state;
  trnc_pipeline p = {0};
  p.bytes = unary("aten.no_such_op.default", &p.len);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, d), TRNC_ERR_UNSUPPORTED);
  assert_int_equal(p.next, TRNC_STAGE_LEGALITY);
  assert_string_equal(trnc_stage_name(p.next), "legality");
  assert_non_null(p.graph);
  assert_null(p.compiled);
  assert_true(tu_diags_have_node(d, TRNC_ERR_UNSUPPORTED, "r"));
  trnc_graph_destroy(p.graph);
  free((void *)p.bytes);
  trnc_diags_destroy(d);

  trnc_pipeline q = {.bytes = "\xff\xff", .len = 2};
  d = trnc_diags_create();
  assert_int_equal(trnc_pipeline_run(&q, TRNC_STAGE_COMPILE, d), TRNC_ERR_MALFORMED);
  assert_int_equal(q.next, TRNC_STAGE_IMPORT);
  assert_null(q.graph);
  trnc_diags_destroy(d);
}

static void test_bad_arguments(void **state) {
  (void)state;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_pipeline_run(NULL, TRNC_STAGE_VERIFY, d), TRNC_ERR_INVALID_ARGUMENT);
  trnc_pipeline p = {.next = TRNC_STAGE_COMPILE}; /* no graph to compile */
  assert_int_equal(trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, d), TRNC_ERR_INVALID_ARGUMENT);
  trnc_pipeline q = {0};
  assert_int_equal(trnc_pipeline_run(&q, TRNC_STAGE_DONE, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_string_equal(trnc_stage_name((trnc_stage)99), "?");
  trnc_diags_destroy(d);
}

/* TRNC_PROFILE: one trace file per graph, named by kind and number before
 * the extension; a dot in a directory or a leading dot is no extension. */
static void test_profile_path_per_graph(void **state) {
  (void)state;
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__BACKWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 1, (int64_t[]){4}));
  tu_output_ref(b, x, 0);
  tu_fx_graph(b)->name = tu_str(b, "my model backward graph 7");
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  assert_int_equal(tu_fx_import(b, NULL, &g, d), TRNC_OK);
  tu_fx_free(b);
  char buf[256];
  static const char *const cases[][2] = {
      {"trace.json", "trace.backward-my-model-backward-graph-7.json"},
      {"out/run.1/trace", "out/run.1/trace.backward-my-model-backward-graph-7"},
      {".trace", ".trace.backward-my-model-backward-graph-7"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("TRNC_PROFILE", cases[i][0], 1);
    assert_string_equal(trnc_profile_path(g, buf, sizeof buf), cases[i][1]);
  }
  assert_null(trnc_profile_path(g, buf, 8)); /* does not fit */
  unsetenv("TRNC_PROFILE");
  assert_null(trnc_profile_path(g, buf, sizeof buf));
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_and_resume),
      cmocka_unit_test(test_failure_names_its_stage),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_profile_path_per_graph),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
