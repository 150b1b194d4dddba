/*
 * test_nc_dtype.c — exact rounding of stores to every NeuronCore dtype,
 * checked against hand-computed bit patterns (fp8 overflow and NaN: the
 * patterns torch 2.13 casts produce).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "test_nc_util.h"

static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_bf16(void **state) {
  assert_int_equal(trnc_nc_encode(TRNC_BF16, 1.0f), 0x3f80);
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x3f808000)), 0x3f80); /* tie -> even (down) */
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x3f818000)), 0x3f82); /* tie -> even (up) */
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x3f808001)), 0x3f81); /* above half */
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x3f807fff)), 0x3f80); /* below half */
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x7f7fffff)), 0x7f80); /* overflow -> inf */
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0xff7fffff)), 0xff80);
  assert_int_equal(trnc_nc_encode(TRNC_BF16, -0.0f), 0x8000);
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x7f800001)), 0x7fc0); /* sNaN -> quiet */
  assert_true(isnan(trnc_nc_decode(TRNC_BF16, 0x7fc0)));
  assert_true(trnc_nc_decode(TRNC_BF16, 0x4049) == 3.140625f);
  assert_int_equal(trnc_nc_encode(TRNC_BF16, u2f(0x00010000)), 0x0001); /* subnormal kept */
}

static void test_f16(void **state) {
  assert_int_equal(trnc_nc_encode(TRNC_F16, 1.0f), 0x3c00);
  assert_int_equal(trnc_nc_encode(TRNC_F16, 65504.0f), 0x7bff);
  assert_int_equal(trnc_nc_encode(TRNC_F16, 65519.0f), 0x7bff);
  assert_int_equal(trnc_nc_encode(TRNC_F16, 65520.0f), 0x7c00); /* tie above max -> inf */
  assert_int_equal(trnc_nc_encode(TRNC_F16, 1.0f + ldexpf(1, -11)), 0x3c00);       /* tie, even */
  assert_int_equal(trnc_nc_encode(TRNC_F16, 1.0f + 3 * ldexpf(1, -11)), 0x3c02);   /* tie, up */
  assert_int_equal(trnc_nc_encode(TRNC_F16, ldexpf(1, -24)), 0x0001);             /* min subnormal */
  assert_int_equal(trnc_nc_encode(TRNC_F16, ldexpf(1, -25)), 0x0000);             /* tie -> 0 */
  assert_int_equal(trnc_nc_encode(TRNC_F16, 1.5f * ldexpf(1, -25)), 0x0001);
  assert_int_equal(trnc_nc_encode(TRNC_F16, 3 * ldexpf(1, -25)), 0x0002);         /* 1.5 ulp tie -> 2 */
  assert_int_equal(trnc_nc_encode(TRNC_F16, 1023.5f * ldexpf(1, -24)), 0x0400);   /* carry to min normal */
  assert_int_equal(trnc_nc_encode(TRNC_F16, -INFINITY), 0xfc00);
  assert_int_equal(trnc_nc_encode(TRNC_F16, NAN), 0x7e00);
  assert_true(trnc_nc_decode(TRNC_F16, 0x0001) == ldexpf(1, -24));
  assert_true(trnc_nc_decode(TRNC_F16, 0xc000) == -2.0f);
  assert_true(isinf(trnc_nc_decode(TRNC_F16, 0x7c00)));
  assert_true(isnan(trnc_nc_decode(TRNC_F16, 0x7c01)));
  /* every finite f16 decodes and re-encodes to itself */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00) continue;
    assert_int_equal(trnc_nc_encode(TRNC_F16, trnc_nc_decode(TRNC_F16, h)), h);
  }
}

static void test_f8e4m3(void **state) {
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 1.0f), 0x38);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 448.0f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 464.0f), 0x7e);   /* tie between 448 and 480 -> even */
  /* overflow saturates to +-448 and NaN keeps its sign: bit patterns from
   * torch 2.13 torch.tensor([...]).to(torch.float8_e4m3fn).view(torch.uint8) */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 449.0f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 463.99f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 465.0f), 0x7e);   /* rounds to 480: saturates */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 500.0f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 1000.0f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -1000.0f), 0xfe);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -465.0f), 0xfe);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 1e6f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -1e6f), 0xfe);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 3e38f), 0x7e);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, INFINITY), 0x7e); /* no inf in e4m3fn: saturates */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -INFINITY), 0xfe);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, NAN), 0x7f);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -NAN), 0xff);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, u2f(0x7f800001)), 0x7f); /* sNaN */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, u2f(0xffbfffff)), 0xff);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 240.0f), 0x77);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 232.0f), 0x76);   /* tie between 224 and 240 -> even */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -0.0f), 0x80);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, u2f(0x00000001)), 0x00); /* fp32 subnormal */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 1.0625f), 0x38);  /* tie -> even */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, 1.1875f), 0x3a);  /* tie -> even (up) */
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, ldexpf(1, -9)), 0x01);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, ldexpf(1, -10)), 0x00);
  assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, -ldexpf(3, -10)), 0x82); /* -1.5 ulp tie -> -2 ulp */
  assert_true(trnc_nc_decode(TRNC_F8E4M3, 0x7e) == 448.0f);
  assert_true(isnan(trnc_nc_decode(TRNC_F8E4M3, 0x7f)));
  assert_true(trnc_nc_decode(TRNC_F8E4M3, 0x78) == 256.0f); /* exp field 15 is finite */
  assert_true(trnc_nc_decode(TRNC_F8E4M3, 0x07) == 7 * ldexpf(1, -9));
  for (uint32_t h = 0; h < 256; h++) {
    if ((h & 0x7f) == 0x7f) continue;
    assert_int_equal(trnc_nc_encode(TRNC_F8E4M3, trnc_nc_decode(TRNC_F8E4M3, h)), h);
  }
}

static void test_f8e5m2(void **state) {
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 1.0f), 0x3c);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 57344.0f), 0x7b);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 60000.0f), 0x7b);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 61440.0f), 0x7c);  /* tie above max -> inf */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, -INFINITY), 0xfc);
  /* torch 2.13 .to(torch.float8_e5m2): RNE, overflow -> inf, NaN = S.11111.11 */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 61439.0f), 0x7b);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 65536.0f), 0x7c);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 1e6f), 0x7c);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, -1e6f), 0xfc);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 3e38f), 0x7c);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, INFINITY), 0x7c);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 500.0f), 0x60);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, -1000.0f), 0xe4);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, NAN), 0x7f);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, -NAN), 0xff);
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, u2f(0x7f800001)), 0x7f); /* sNaN */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, ldexpf(1, -17)), 0x00); /* half ulp tie -> even 0 */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 3 * ldexpf(1, -17)), 0x02); /* 1.5 ulp tie -> 2 ulp */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 1.125f), 0x3c);    /* tie -> even */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, 1.375f), 0x3e);    /* tie -> even (up) */
  assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, ldexpf(1, -16)), 0x01);
  assert_true(isinf(trnc_nc_decode(TRNC_F8E5M2, 0x7c)));
  for (uint32_t h = 0; h < 256; h++) {
    if ((h & 0x7c) == 0x7c) continue;
    assert_int_equal(trnc_nc_encode(TRNC_F8E5M2, trnc_nc_decode(TRNC_F8E5M2, h)), h);
  }
}

static void test_ints(void **state) {
  assert_int_equal((int32_t)trnc_nc_encode(TRNC_I32, 3.7f), 3);
  assert_int_equal((int32_t)trnc_nc_encode(TRNC_I32, -3.7f), -3);
  assert_int_equal((int32_t)trnc_nc_encode(TRNC_I32, 1e10f), INT32_MAX);
  assert_int_equal((int32_t)trnc_nc_encode(TRNC_I32, -1e10f), INT32_MIN);
  assert_int_equal(trnc_nc_encode(TRNC_I32, NAN), 0);
  assert_int_equal(trnc_nc_encode(TRNC_I16, 40000.0f), 0x7fff);
  assert_int_equal(trnc_nc_encode(TRNC_I8, -200.0f), 0x80);
  assert_int_equal(trnc_nc_encode(TRNC_U8, -5.0f), 0);
  assert_int_equal(trnc_nc_encode(TRNC_U8, 300.0f), 255);
  assert_int_equal(trnc_nc_encode(TRNC_BOOL, 0.5f), 1);
  assert_int_equal(trnc_nc_encode(TRNC_BOOL, -0.0f), 0);
  assert_true(trnc_nc_decode(TRNC_I8, 0xff) == -1.0f);
  assert_true(trnc_nc_decode(TRNC_I16, 0x8000) == -32768.0f);
  assert_true(trnc_nc_decode(TRNC_U8, 0xff) == 255.0f);
}

static void test_names(void **state) {
  assert_string_equal(trnc_nc_dtype_name(TRNC_F8E4M3), "f8e4m3");
  assert_int_equal(trnc_nc_dtype_size(TRNC_BF16), 2);
  assert_false(trnc_nc_dtype_supported(TRNC_I64));
  assert_string_equal(trnc_nc_engine_name(TRNC_NC_DMA0 + 15), "dma15");
  assert_string_equal(trnc_nc_opcode_name(TRNC_NC_OP_MATMUL), "matmul");
  assert_string_equal(trnc_nc_alu_name(TRNC_NC_ALU_RSUB), "rsub");
  assert_string_equal(trnc_nc_act_name(TRNC_NC_ACT_GELU_TANH), "gelu_tanh");
  assert_string_equal(trnc_nc_opcode_name(99), "?");
}

static void test_targets(void **state) {
  const trnc_nc_target *t2 = trnc_nc_target_trn2(), *t3 = trnc_nc_target_trn3();
  assert_ptr_equal(trnc_nc_target_by_name("trn3"), t3);
  assert_null(trnc_nc_target_by_name("trn9"));
  assert_int_equal(t2->sbuf_bytes_per_partition, 224 * 1024);
  assert_int_equal(t3->sbuf_bytes_per_partition, 256 * 1024);
  assert_int_equal(t2->psum_banks * t2->psum_bank_bytes, t2->psum_bytes_per_partition);
  /* 128 x 128 x 2 x 2.4 GHz */
  assert_true(fabs(trnc_nc_target_peak_flops(t2, TRNC_BF16) - 78.6432e12) < 1e9);
  assert_true(fabs(trnc_nc_target_peak_flops(t2, TRNC_F32) - 78.6432e12 / 4) < 1e9);
  setenv("TRNC_TARGET", "trn3", 1);
  assert_ptr_equal(trnc_nc_target_default(NULL), t3);
  trnc_diags *d = trnc_diags_create();
  setenv("TRNC_TARGET", "bogus", 1);
  assert_null(trnc_nc_target_default(d));
  assert_int_equal(trnc_diags_error_count(d), 1);
  unsetenv("TRNC_TARGET");
  assert_ptr_equal(trnc_nc_target_default(NULL), t2);
  trnc_diags_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16),    cmocka_unit_test(test_f16),   cmocka_unit_test(test_f8e4m3),
      cmocka_unit_test(test_f8e5m2),  cmocka_unit_test(test_ints),  cmocka_unit_test(test_names),
      cmocka_unit_test(test_targets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
