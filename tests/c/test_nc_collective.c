/*
 * test_nc_collective.c — collective steps of NeuronCore programs: asm and
 * protobuf round trips, the verifier's rules (sizes, handles, hazards on a
 * destination in flight), the simulator with an in-process engine that plays
 * a 2-rank group whose peer holds the same data (on the interpreter
 * whatever TRNC_SIM says; the JIT refuses such programs), and the cost
 * model's overlap of a collective with an independent kernel.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "runtime/engine.h"
#include "test_nc_util.h"

/* all_reduce of x (16 f32) into t, a kernel on y meanwhile, then the wait. */
static const char *k_prog =
    ".version 2\n"
    ".target trn2\n"
    ".buffer x input f32 64\n"
    ".buffer y input f32 512\n"
    ".buffer t output f32 64\n"
    ".buffer g output f32 128\n"
    ".buffer z output f32 512\n"
    ".collective all_reduce handle=7 group=tp.0 size=2 dtype=f32 reduce=sum src=hbm:x@0+64 dst=hbm:t@0+64\n"
    ".collective all_gather handle=8 group=tp.0 size=2 dtype=f32 src=hbm:x@0+64 dst=hbm:g@0+128\n"
    ".kernel k0 2\n"
    "dma0 dma_copy dst=sbuf[0:1]@0:f32[[1,128]] src0=hbm:y@0:f32[[128,1],[1,128]] mode=direct signal=s0\n"
    "vector tensor_scalar dst=sbuf[0:1]@512:f32[[1,128]] src0=sbuf[0:1]@0:f32[[1,128]] op=mul op1=bypass imm0=2 imm1=0 wait=s0>=1 signal=s1\n"
    "dma1 dma_copy dst=hbm:z@0:f32[[128,1],[1,128]] src0=sbuf[0:1]@512:f32[[1,128]] mode=direct wait=s1>=1\n"
    ".collective cc_wait handle=7\n"
    ".collective cc_wait handle=8\n";

static trnc_nc_program *parse_ok(const char *text) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  trnc_status st = trnc_nc_program_parse(text, strlen(text), &p, d);
  if (st) nc_print_diags(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  return p;
}

static void test_roundtrip(void **state) {
  (void)state;
  trnc_nc_program *p = parse_ok(k_prog);
  assert_int_equal(trnc_nc_program_kernel_count(p), 5);
  assert_int_equal(trnc_nc_program_collective_count(p), 2);
  const trnc_nc_collective *cc = trnc_nc_kernel_collective(p, 0);
  assert_non_null(cc);
  assert_int_equal(cc->op, TRNC_NC_CC_ALL_REDUCE);
  assert_string_equal(cc->group, "tp.0");
  assert_int_equal(cc->dst_bytes, 64);
  assert_null(trnc_nc_kernel_collective(p, 2));
  nc_check_roundtrip(p); /* asm and protobuf */
  char *text = trnc_nc_program_print(p);
  assert_non_null(strstr(text, ".collective all_reduce handle=7 group=tp.0 size=2 dtype=f32 reduce=sum "
                               "src=hbm:x@0+64 dst=hbm:t@0+64\n"));
  assert_non_null(strstr(text, ".collective cc_wait handle=8\n"));
  trnc_free(text);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_nc_program_verify(p, d), TRNC_OK);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

/* Replaces the first occurrence of `from` in k_prog by `to`, verifies, and
 * expects an error whose message contains `needle`. */
static void expect_verify_error(const char *from, const char *to, const char *needle) {
  const char *at = strstr(k_prog, from);
  assert_non_null(at);
  char text[4096];
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - k_prog), k_prog, to, at + strlen(from));
  trnc_nc_program *p = parse_ok(text);
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_nc_program_verify(p, d), TRNC_ERR_INVALID_GRAPH);
  bool found = false;
  for (size_t i = 0; i < trnc_diags_count(d); i++)
    found = found || strstr(trnc_diags_get(d, i)->message, needle);
  if (!found) nc_print_diags(d);
  assert_true(found);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

static void test_verify_rules(void **state) {
  (void)state;
  expect_verify_error("dst=hbm:g@0+128", "dst=hbm:g@0+64", "all_gather of 64 bytes over 2 ranks needs 128");
  expect_verify_error("size=2 dtype=f32 reduce", "size=0 dtype=f32 reduce", "group size 0 must be at least 1");
  expect_verify_error("group=tp.0 size=2 dtype=f32 reduce", "group=tp/0 size=2 dtype=f32 reduce", "group name 'tp/0'");
  expect_verify_error(".collective cc_wait handle=7\n", "", "handle 7 is never waited for");
  expect_verify_error(".collective cc_wait handle=8\n", ".collective cc_wait handle=9\n", "cc_wait on handle 9");
  expect_verify_error("handle=8", "handle=7", "handle 7 is still in flight");
  expect_verify_error("src=hbm:x@0+64 dst=hbm:t@0+64", "src=hbm:x@0+64 dst=hbm:t@32+64", "out of bounds");
  /* the kernel writes z; make the all_reduce land in z instead: a hazard */
  expect_verify_error("dst=hbm:t@0+64", "dst=hbm:z@0+64", "touches the destination of all_reduce");
}

/* An engine standing in for a 2-rank group whose peer holds the same data:
 * all_reduce(sum) doubles, all_gather repeats. Records the call order. */
typedef struct fake {
  int starts, waits;
  char log[256];
} fake;

static trnc_status fake_start(void *ctx, const trnc_collective_call *c, void **h, trnc_diags *d) {
  (void)d;
  fake *f = ctx;
  f->starts++;
  strcat(f->log, c->op == TRNC_NC_CC_ALL_REDUCE ? "AR " : "AG ");
  if (c->op == TRNC_NC_CC_ALL_REDUCE) {
    assert_ptr_equal(c->src, c->dst); /* in place */
    float *x = c->dst;
    for (int64_t i = 0; i < c->dst_bytes / 4; i++) x[i] *= 2;
  } else {
    assert_int_equal(c->dst_bytes, 2 * c->src_bytes);
    memcpy(c->dst, c->src, (size_t)c->src_bytes);
    memcpy((char *)c->dst + c->src_bytes, c->src, (size_t)c->src_bytes);
  }
  *h = f;
  return TRNC_OK;
}

static trnc_status fake_wait(void *ctx, void *h, trnc_diags *d) {
  (void)d;
  fake *f = ctx;
  assert_ptr_equal(h, f);
  f->waits++;
  strcat(f->log, "W ");
  return TRNC_OK;
}

static void test_simulate(void **state) {
  (void)state;
  trnc_nc_program *p = parse_ok(k_prog);
  float x[16], y[128], t[16], g[32], z[128];
  for (int i = 0; i < 16; i++) x[i] = (float)i - 3.5f;
  for (int i = 0; i < 128; i++) y[i] = (float)i;
  const void *in[2] = {x, y};
  void *out[3] = {t, g, z};
  trnc_diags *d = trnc_diags_create();
  /* without an engine: a clear error naming the collective */
  assert_int_equal(trnc_nc_simulate(p, in, out, d), TRNC_ERR_UNSUPPORTED);
  assert_non_null(strstr(trnc_diags_get(d, 0)->message, "no distributed engine"));
  trnc_diags_destroy(d);
  d = trnc_diags_create();
  fake f = {0, 0, ""};
  trnc_collective_engine e = {fake_start, fake_wait, &f};
  assert_int_equal(trnc_nc_simulate_with(p, in, out, &e, d), TRNC_OK);
  assert_int_equal(f.starts, 2);
  assert_int_equal(f.waits, 2);
  assert_string_equal(f.log, "AR AG W W ");
  for (int i = 0; i < 16; i++) {
    assert_true(t[i] == 2 * x[i]);
    assert_true(g[i] == x[i] && g[16 + i] == x[i]);
  }
  for (int i = 0; i < 128; i++) assert_true(z[i] == 2 * y[i]);
  /* a planned run (what trnc_compiled_run_with uses) runs its collectives
   * through the engine too, run after run, with the same results */
  trnc_nc_sim_plan *plan;
  assert_int_equal(trnc_nc_sim_plan_create(p, &plan, d), TRNC_OK);
  assert_int_equal(trnc_nc_simulate_planned(plan, in, out, NULL, d), TRNC_ERR_UNSUPPORTED);
  for (int r = 0; r < 2; r++) {
    memset(t, 0, sizeof t);
    memset(g, 0, sizeof g);
    memset(z, 0, sizeof z);
    f.log[0] = 0;
    assert_int_equal(trnc_nc_simulate_planned(plan, in, out, &e, d), TRNC_OK);
    assert_string_equal(f.log, "AR AG W W ");
    for (int i = 0; i < 16; i++) {
      assert_true(t[i] == 2 * x[i]);
      assert_true(g[i] == x[i] && g[16 + i] == x[i]);
    }
    for (int i = 0; i < 128; i++) assert_true(z[i] == 2 * y[i]);
  }
  assert_int_equal(f.starts, 6);
  assert_int_equal(f.waits, 6);
  trnc_nc_sim_plan_destroy(plan);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

/* Collective steps run on the interpreter, which drives the distributed
 * engine: the JIT's translator refuses the program, and TRNC_SIM=jit or
 * check still runs it through the engine (check compares nothing). */
static void test_collectives_stay_on_the_interpreter(void **state) {
  (void)state;
  trnc_nc_program *p = parse_ok(k_prog);
  trnc_diags *d = trnc_diags_create();
  trnc_host_code *code = NULL;
  const int64_t stride[2] = {64, 64};
  assert_int_equal(trnc_host_compile(p, stride, &code, d), TRNC_ERR_UNSUPPORTED);
  assert_null(code);
  assert_non_null(strstr(trnc_diags_get(d, 0)->message, "step 0 is a collective (all_reduce"));
  trnc_diags_destroy(d);
  const char *env = getenv("TRNC_SIM");
  char saved[32] = "";
  if (env) snprintf(saved, sizeof saved, "%s", env);
  const char *engines[] = {"jit", "check"};
  for (int e = 0; e < 2; e++) {
    setenv("TRNC_SIM", engines[e], 1);
    float x[16], y[128], t[16], g[32], z[128];
    for (int i = 0; i < 16; i++) x[i] = (float)i + 0.5f;
    for (int i = 0; i < 128; i++) y[i] = (float)i - 64;
    const void *in[2] = {x, y};
    void *out[3] = {t, g, z};
    d = trnc_diags_create();
    /* without an engine: the interpreter's error, not a JIT or check one */
    assert_int_equal(trnc_nc_simulate(p, in, out, d), TRNC_ERR_UNSUPPORTED);
    assert_non_null(strstr(trnc_diags_get(d, 0)->message, "no distributed engine"));
    fake f = {0, 0, ""};
    trnc_collective_engine ce = {fake_start, fake_wait, &f};
    trnc_status st = trnc_nc_simulate_with(p, in, out, &ce, d);
    if (st) nc_print_diags(d);
    assert_int_equal(st, TRNC_OK);
    assert_string_equal(f.log, "AR AG W W ");
    for (int i = 0; i < 16; i++) assert_true(t[i] == 2 * x[i] && g[16 + i] == x[i]);
    for (int i = 0; i < 128; i++) assert_true(z[i] == 2 * y[i]);
    trnc_diags_destroy(d);
  }
  if (saved[0]) setenv("TRNC_SIM", saved, 1);
  else unsetenv("TRNC_SIM");
  trnc_nc_program_destroy(p);
}

static void test_cost(void **state) {
  (void)state;
  trnc_nc_program *p = parse_ok(k_prog);
  trnc_diags *d = trnc_diags_create();
  trnc_nc_cost c;
  assert_int_equal(trnc_nc_cost_estimate(p, NULL, &c, d), TRNC_OK);
  assert_int_equal(c.collectives, 2);
  /* trn2: B = 1.28e12 / 8 B/s per core, L = 2 us; G = 2.
   * all_reduce 64 B: 2 L + 2 * 1/2 * 64 / B; all_gather 128 B: L + 1/2 * 128 / B */
  double b = 1.28e12 / 8, ar = 4e-6 + 64 / b, ag = 2e-6 + 64 / b;
  assert_true(fabs(c.collective_s - (ar + ag)) < 1e-12);
  /* the kernel runs while both are in flight: only the rest is exposed */
  assert_true(c.collective_exposed_s < ar + ag);
  assert_true(fabs(c.time_s - (ar + ag)) < 1e-12);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_verify_rules),
      cmocka_unit_test(test_simulate),
      cmocka_unit_test(test_collectives_stay_on_the_interpreter),
      cmocka_unit_test(test_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
