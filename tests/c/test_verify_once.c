/*
 * test_verify_once.c — the hardware verifier runs exactly once per fresh
 * compile (trnc_compile verifies, then costs the verified program without
 * verifying it again), never on a run, and once more on a load from bytes
 * (trnc_compiled_deserialize: the cache's trust boundary). Counted with
 * trnc_nc_verify_count (per thread).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "codegen/neuroncore/nc_internal.h"
#include "testutil.h"
#include "trnc/cache.h"

#define F32 TRNC__FX__DTYPE__FLOAT32

/** relu(x + y), x:[4,8], y:[8] as an fx.proto builder. */
static tu_fx *add_relu(void) {
  tu_fx *b = tu_fx_new(TRNC__FX__GRAPH_KIND__FORWARD);
  uint32_t x = tu_placeholder(b, "x", tu_meta(b, F32, 2, (int64_t[]){4, 8}));
  uint32_t y = tu_placeholder(b, "y", tu_meta(b, F32, 1, (int64_t[]){8}));
  uint32_t a = tu_call(b, "add", "aten.add.Tensor", tu_meta(b, F32, 2, (int64_t[]){4, 8}));
  tu_arg(b, a, tu_a_ref(b, "self", x, 0));
  tu_arg(b, a, tu_a_ref(b, "other", y, 0));
  tu_arg(b, a, tu_a_int(b, "alpha", 1));
  uint32_t r = tu_call(b, "relu", "aten.relu.default", tu_meta(b, F32, 2, (int64_t[]){4, 8}));
  tu_arg(b, r, tu_a_ref(b, "self", a, 0));
  tu_output_ref(b, r, 0);
  return b;
}

static void test_compile_verifies_once(void **state) {
  (void)state;
  tu_fx *b = add_relu();
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  size_t before = trnc_nc_verify_count();
  trnc_status st = tu_fx_compile(b, NULL, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  assert_int_equal(trnc_nc_verify_count() - before, 1);

  /* a run trusts the compile's verification */
  float x[32], y[8], out[32];
  for (int i = 0; i < 32; i++) x[i] = (float)i - 16.0f;
  for (int j = 0; j < 8; j++) y[j] = 1.0f;
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_compiled_run(c, (const void *[]){x, y}, (void *[]){out}, d), TRNC_OK);
  assert_int_equal(trnc_nc_verify_count() - before, 0);
  for (int i = 0; i < 32; i++) assert_true(out[i] == (x[i] + 1.0f > 0 ? x[i] + 1.0f : 0.0f));

  /* bytes are a trust boundary: a load verifies (once), a store does not */
  uint8_t *bytes = NULL;
  size_t len = 0;
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_compiled_serialize(c, &bytes, &len, d), TRNC_OK);
  assert_int_equal(trnc_nc_verify_count() - before, 0);
  trnc_compiled *loaded = NULL;
  assert_int_equal(trnc_compiled_deserialize(bytes, len, &loaded, d), TRNC_OK);
  assert_int_equal(trnc_nc_verify_count() - before, 1);

  trnc_free(bytes);
  trnc_compiled_destroy(loaded);
  trnc_compiled_destroy(c);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_verifies_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
