/*
 * test_kir.c — the kernel IR (codegen/kir/kir.h): the printed text of a
 * kernel built by hand (golden), and each verifier rule rejecting a kernel
 * that breaks it.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "codegen/kir/kir.h"

/* x [4, 6] f32 (buffer 0), out [4] bf16 (buffer 1): out = sum(x * x, dim 1) * 0.25 */
static void build(kir_kernel *k) {
  int64_t ext[2] = {4, 6};
  kir_init(k, "mean_sq", NULL, 2, ext, 1u << 1);
  lw_tv x = {0}, o = {0};
  x.buffer = 0;
  x.t.dtype = TRNC_F32;
  x.t.rank = 2;
  x.t.shape[0] = 4;
  x.t.shape[1] = 6;
  x.t.stride[0] = 6;
  x.t.stride[1] = 1;
  o.buffer = 1;
  o.t.dtype = TRNC_BF16;
  o.t.rank = 1;
  o.t.shape[0] = 4;
  o.t.stride[0] = 1;
  int ax[2] = {0, 1}, ox[1] = {0};
  int tx = kir_tensor_add(k, &x, ax), to = kir_tensor_add(k, &o, ox);
  int v = kir_load(k, tx, TRNC_F32);
  int sq = kir_tt(k, TRNC_F32, TRNC_NC_ALU_MUL, v, v);
  int r = kir_reduce(k, TRNC_NC_ALU_ADD, sq, 1u << 1);
  int m = kir_ts(k, TRNC_BF16, r, TRNC_NC_ALU_MUL, 0.25f, TRNC_NC_ALU_BYPASS, 0);
  assert_true(kir_store(k, to, m));
}

static char *printed(const kir_kernel *k) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  kir_print(k, f);
  fclose(f);
  return buf;
}

/* k verifies and prints as `want`. */
static void expect_golden(const kir_kernel *k, const char *want) {
  assert_null(kir_verify(k));
  char *s = printed(k);
  assert_string_equal(s, want);
  free(s);
}

static void test_print_golden(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  assert_null(kir_verify(&k));
  char *s = printed(&k);
  assert_string_equal(s,
                      "kernel mean_sq (a0:4, a1:6 red)\n"
                      "  T0 = buf0 f32 +0 [6,1]\n"
                      "  T1 = buf1 bf16 +0 [1,0]\n"
                      "  %0:f32{a0,a1} = load T0\n"
                      "  %1:f32{a0,a1} = tt mul, %0, %0\n"
                      "  %2:f32{a0} = reduce add, %1, {a1}\n"
                      "  %3:bf16{a0} = ts mul, %2, 0.25\n"
                      "  store T1, %3\n");
  free(s);
}

static void expect_invalid(kir_kernel *k, const char *msg) {
  const char *got = kir_verify(k);
  assert_non_null(got);
  assert_string_equal(got, msg);
}

static void test_rejects_use_before_definition(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  k.ops[1].src[1] = 3;
  expect_invalid(&k, "an operand is read before it is defined");
}

static void test_rejects_mixed_axes(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  k.ops[3].code = KIR_TT; /* %2 {a0} tt %0 {a0,a1} */
  k.ops[3].src[1] = 0;
  expect_invalid(&k, "elementwise operands span different axes");
}

static void test_rejects_reducing_a_space_axis(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  k.ops[2].raxes = 1u << 0;
  expect_invalid(&k, "a reduce folds a non-reduction axis");
}

static void test_rejects_store_along_unspanned_axis(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  k.tensors[1].stride[1] = 1;
  expect_invalid(&k, "a store's tensor varies along an axis its value does not span");
}

static void test_rejects_double_definition(void **state) {
  (void)state;
  kir_kernel k;
  build(&k);
  k.ops[1].dst = 0;
  expect_invalid(&k, "a value is defined twice");
}

/* A kernel with a sequential axis over [l 3, s 5 (seq), e 2]: q [3, 2]
 * (buffer 0), k [5, 2] (buffer 1), out [3] (buffer 2) = row max over the
 * causal scores q k^T. */
static void build_seq(kir_kernel *k) {
  int64_t ext[3] = {3, 5, 2};
  kir_init(k, "seq", NULL, 3, ext, 1u << 1);
  k->seq = 1u << 1;
  int tq = kir_tensor_map(k, 0, TRNC_F32, 0, (const int64_t[]){2, 0, 1});
  int tk = kir_tensor_map(k, 1, TRNC_F32, 0, (const int64_t[]){0, 2, 1});
  int to = kir_tensor_map(k, 2, TRNC_F32, 0, (const int64_t[]){1, 0, 0});
  int q = kir_load_axes(k, tq, TRNC_F32, 1u << 0 | 1u << 2), kk = kir_load_axes(k, tk, TRNC_F32, 1u << 1 | 1u << 2);
  int s = kir_mmv(k, q, kk, 1u << 2);
  s = kir_affsel(k, TRNC_F32, s, 0, (const int32_t[]){1, -1, 0}, -INFINITY);
  assert_true(kir_store(k, to, kir_reduce(k, TRNC_NC_ALU_MAX, s, 1u << 1)));
}

static void test_seq_print_golden(void **state) {
  (void)state;
  kir_kernel k;
  build_seq(&k);
  expect_golden(&k,
                "kernel seq (a0:3, a1:5 red, a2:2) seq {a1}\n"
                "  T0 = buf0 f32 +0 [2,0,1]\n"
                "  T1 = buf1 f32 +0 [0,2,1]\n"
                "  T2 = buf2 f32 +0 [1,0,0]\n"
                "  %0:f32{a0,a2} = load T0\n"
                "  %1:f32{a1,a2} = load T1\n"
                "  %2:f32{a0,a1} = mmv %0, %1, {a2}\n"
                "  %3:f32{a0,a1} = affsel %2, 0 +1*a0 -1*a1 >= 0, -inf\n"
                "  %4:f32{a0} = reduce max, %3, {a1}\n"
                "  store T2, %4\n");
}

static void test_seq_rejects(void **state) {
  (void)state;
  kir_kernel k;
  build_seq(&k);
  k.ops[2].raxes = 1u << 0; /* a0: only q spans it */
  expect_invalid(&k, "an mmv contracts axes both operands span");
  build_seq(&k);
  k.seq = 0; /* loads over axis subsets are for kernels with a sequential axis */
  expect_invalid(&k, "a load spans every axis or every space axis");
  build_seq(&k);
  k.ops[3].coef[2] = 1;
  expect_invalid(&k, "an affsel indexes an axis its value does not span");
  build_seq(&k);
  k.tensors[0].stride[1] = 7;
  expect_invalid(&k, "a load's tensor varies along an axis its value does not span");
  build_seq(&k);
  k.seq = 1u << 0;
  expect_invalid(&k, "the sequential axis is not a reduction axis");
}

/* idx [3] i32 (buffer 0) rows of W [5, 4] f32 (buffer 1), scattered into
 * rows idx of O [7, 4] f32 (buffer 2): O[idx[i]] = W[idx[i]] (kir/gather.c) */
static void build_gather(kir_kernel *k) {
  int64_t ext[2] = {3, 4};
  kir_init(k, "rows", NULL, 2, ext, 0);
  lw_tv ix = {0}, w = {0}, o = {0};
  ix.buffer = 0;
  ix.t.dtype = TRNC_I32;
  ix.t.rank = 1;
  ix.t.shape[0] = 3;
  ix.t.stride[0] = 1;
  w.buffer = 1;
  w.t.dtype = TRNC_F32;
  w.t.rank = 1;
  w.t.shape[0] = 4;
  w.t.stride[0] = 1;
  o = w;
  o.buffer = 2;
  int ax0[1] = {0}, ax1[1] = {1};
  int ti = kir_tensor_add(k, &ix, ax0), tw = kir_tensor_add(k, &w, ax1), to = kir_tensor_add(k, &o, ax1);
  k->tensors[tw].rows = 5;
  k->tensors[tw].row_stride = 4;
  k->tensors[to].rows = 7;
  k->tensors[to].row_stride = 4;
  int i = kir_load(k, ti, TRNC_I32);
  int v = kir_gather(k, tw, i, TRNC_F32);
  assert_true(kir_scatter(k, to, i, v));
}

static void test_gather_scatter_golden(void **state) {
  (void)state;
  kir_kernel k;
  build_gather(&k);
  assert_null(kir_verify(&k));
  char *s = printed(&k);
  assert_string_equal(s,
                      "kernel rows (a0:3, a1:4)\n"
                      "  T0 = buf0 i32 +0 [1,0]\n"
                      "  T1 = buf1 f32 +0 [0,1]\n"
                      "  T2 = buf2 f32 +0 [0,1]\n"
                      "  %0:i32{a0,a1} = load T0\n"
                      "  %1:f32{a0,a1} = gather T1, %0 (5 rows of 4)\n"
                      "  scatter T2, %0, %1 (7 rows of 4)\n");
  free(s);
  k.values[0].dtype = TRNC_F32;
  expect_invalid(&k, "a gather's index is an i32 value over its axes");
  build_gather(&k);
  k.tensors[1].rows = 0;
  expect_invalid(&k, "a gather's table has no rows");
}

/* idx [3] i32 (buffer 0) range-checked against O [7, 4] f32 (buffer 2),
 * src [3, 4] f32 (buffer 1) summed into rows idx of O: O[idx[i]] += src[i]
 * (kir/accum.c) */
static void build_accum(kir_kernel *k, bool init) {
  int64_t ext[2] = {3, 4}, none[2] = {0, 0};
  kir_init(k, "acc", NULL, 2, ext, 0);
  lw_tv ix = {0}, src = {0}, o = {0};
  ix.buffer = 0;
  ix.t.dtype = TRNC_I32;
  ix.t.rank = 1;
  ix.t.shape[0] = 3;
  ix.t.stride[0] = 1;
  src.buffer = 1;
  src.t.dtype = TRNC_F32;
  src.t.rank = 2;
  src.t.shape[0] = 3;
  src.t.shape[1] = 4;
  src.t.stride[0] = 4;
  src.t.stride[1] = 1;
  o.buffer = 2;
  o.t.dtype = TRNC_F32;
  o.t.rank = 1;
  o.t.shape[0] = 4;
  o.t.stride[0] = 1;
  int ax0[1] = {0}, ax1[1] = {1}, ax01[2] = {0, 1};
  int ti = kir_tensor_add(k, &ix, ax0), ts = kir_tensor_add(k, &src, ax01), to = kir_tensor_add(k, &o, ax1);
  int tc = kir_tensor_map(k, 2, TRNC_F32, 0, none);
  k->tensors[to].rows = k->tensors[tc].rows = 7;
  k->tensors[to].row_stride = k->tensors[tc].row_stride = 4;
  int i = kir_load(k, ti, TRNC_I32);
  assert_true(kir_gather(k, tc, i, TRNC_F32) >= 0);
  int v = kir_load(k, ts, TRNC_F32);
  assert_true(kir_accum(k, to, i, v, init));
}

static void test_accum_golden(void **state) {
  (void)state;
  kir_kernel k;
  build_accum(&k, true);
  assert_null(kir_verify(&k));
  char *s = printed(&k);
  assert_string_equal(s,
                      "kernel acc (a0:3, a1:4)\n"
                      "  T0 = buf0 i32 +0 [1,0]\n"
                      "  T1 = buf1 f32 +0 [4,1]\n"
                      "  T2 = buf2 f32 +0 [0,1]\n"
                      "  T3 = buf2 f32 +0 [0,0]\n"
                      "  %0:i32{a0,a1} = load T0\n"
                      "  %1:f32{a0,a1} = gather T3, %0 (7 rows of 4)\n"
                      "  %2:f32{a0,a1} = load T1\n"
                      "  accum T2, %0, %2, init (7 rows of 4)\n");
  free(s);
  build_accum(&k, false);
  s = printed(&k);
  assert_non_null(strstr(s, "  accum T2, %0, %2 (7 rows of 4)\n"));
  free(s);
  k.values[0].dtype = TRNC_F32;
  expect_invalid(&k, "a gather's index is an i32 value over its axes");
  build_accum(&k, false);
  k.ops[k.nops - 1].src[0] = 2; /* an f32 index */
  expect_invalid(&k, "an accum's index (i32) and value span every axis");
  build_accum(&k, false);
  k.tensors[2].rows = 0;
  expect_invalid(&k, "an accum's table has no rows, or a reduction");
  build_accum(&k, false);
  kir_op last = k.ops[k.nops - 1];
  k.ops[k.nops - 1] = k.ops[k.nops - 2];
  k.ops[k.nops - 2] = last; /* the accum before the load of its value */
  expect_invalid(&k, "an operand is read before it is defined");
  build_accum(&k, false);
  assert_true(kir_store(&k, 2, 2));
  expect_invalid(&k, "an accum is its kernel's last op");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_print_golden),
      cmocka_unit_test(test_gather_scatter_golden),
      cmocka_unit_test(test_accum_golden),
      cmocka_unit_test(test_rejects_use_before_definition),
      cmocka_unit_test(test_rejects_mixed_axes),
      cmocka_unit_test(test_rejects_reducing_a_space_axis),
      cmocka_unit_test(test_rejects_store_along_unspanned_axis),
      cmocka_unit_test(test_rejects_double_definition),
      cmocka_unit_test(test_seq_print_golden),
      cmocka_unit_test(test_seq_rejects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
