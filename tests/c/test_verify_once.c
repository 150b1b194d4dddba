/*
 * test_verify_once.c — the hardware verifier runs exactly once per fresh
 * compile (trnc_compile verifies, then costs the verified program without
 * verifying it again), never on a run, and once more on a load from bytes
 * (trnc_compiled_deserialize: the trust boundary). The artifact cache
 * verifies what it takes in from elsewhere (trnc_cache_put_entry, a
 * bundle's import) and in `trnc cache verify`, but not a hit in its own
 * store whose checksums match: every program there was verified before its
 * entry was written. Counted with trnc_nc_verify_count (per thread).
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

/** Runs c on x = i - 16, y = 1 and checks relu(x + y). */
static void run_add_relu(const trnc_compiled *c) {
  float x[32], y[8], out[32];
  for (int i = 0; i < 32; i++) x[i] = (float)i - 16.0f;
  for (int j = 0; j < 8; j++) y[j] = 1.0f;
  assert_int_equal(trnc_compiled_run(c, (const void *[]){x, y}, (void *[]){out}, NULL), TRNC_OK);
  for (int i = 0; i < 32; i++) assert_true(out[i] == (x[i] + 1.0f > 0 ? x[i] + 1.0f : 0.0f));
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
  before = trnc_nc_verify_count();
  run_add_relu(c);
  assert_int_equal(trnc_nc_verify_count() - before, 0);

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

static trnc_cache *open_cache(const char *dir) {
  trnc_cache *cache = NULL;
  assert_int_equal(trnc_cache_open(&(trnc_cache_config){dir, 0}, &cache, NULL), TRNC_OK);
  return cache;
}

static void test_cache_hit_trusts_its_store(void **state) {
  (void)state;
  tu_fx *b = add_relu();
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  assert_int_equal(tu_fx_compile(b, NULL, &c, d), TRNC_OK);
  char *dir = tu_tmpdir("trnc_test_verify_once"), *other = tu_tmpdir("trnc_test_verify_once");
  assert_non_null(dir);
  assert_non_null(other);
  const uint8_t key[TRNC_CACHE_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

  /* a fresh compile's program was verified: storing it verifies nothing */
  trnc_cache *cache = open_cache(dir);
  size_t before = trnc_nc_verify_count();
  assert_int_equal(trnc_cache_put(cache, key, c, NULL, d), TRNC_OK);
  assert_int_equal(trnc_nc_verify_count() - before, 0);
  uint8_t *entry = NULL;
  size_t len = 0;
  assert_int_equal(trnc_cache_entry_bytes(cache, key, &entry, &len, d), TRNC_OK);
  assert_non_null(entry);
  trnc_cache_destroy(cache);

  /* another process (a new handle: nothing in memory) hits the disk entry
   * and trusts it, checksums matched; the artifact runs as compiled */
  cache = open_cache(dir);
  const trnc_compiled *hit = NULL;
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_cache_get(cache, key, &hit, d), TRNC_OK);
  assert_non_null(hit);
  assert_int_equal(trnc_nc_verify_count() - before, 0);
  run_add_relu(hit);
  assert_int_equal(trnc_compiled_report(hit)->kernels, 1);

  /* `trnc cache verify` checks the program in full */
  size_t good = 0, bad = 0;
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_cache_verify(cache, false, &good, &bad, d), TRNC_OK);
  assert_int_equal(good, 1);
  assert_int_equal(bad, 0);
  assert_int_equal(trnc_nc_verify_count() - before, 1);
  trnc_cache_destroy(cache);

  /* the same bytes from elsewhere (remote cache, MegaCache) are verified
   * before they are stored; that store's hits then trust them */
  cache = open_cache(other);
  const trnc_compiled *taken = NULL;
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_cache_put_entry(cache, entry, len, key, NULL, &taken, d), TRNC_OK);
  assert_non_null(taken);
  assert_int_equal(trnc_nc_verify_count() - before, 1);
  run_add_relu(taken);
  trnc_cache_destroy(cache);
  cache = open_cache(other);
  before = trnc_nc_verify_count();
  assert_int_equal(trnc_cache_get(cache, key, &hit, d), TRNC_OK);
  assert_non_null(hit);
  assert_int_equal(trnc_nc_verify_count() - before, 0);
  trnc_cache_destroy(cache);

  if (trnc_diags_error_count(d)) tu_diags_dump(d);
  assert_int_equal(trnc_diags_count(d), 0);
  trnc_free(entry);
  tu_rmtree(dir);
  tu_rmtree(other);
  trnc_diags_destroy(d);
  tu_fx_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_verifies_once),
      cmocka_unit_test(test_cache_hit_trusts_its_store),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
