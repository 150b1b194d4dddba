/*
 * test_nc_format.c — the NeuronCore program formats: assembly text and
 * protobuf round trips, errors on malformed text and bytes (status plus a
 * diagnostic, never a crash), and random corruption of both formats.
 */
#define _POSIX_C_SOURCE 200809L
#include "codegen/neuroncore/program.pb-c.h"
#include "test_nc_util.h"

static const char *k_prog =
    "# every opcode, with operands of each kind\n"
    ".version 1\n"
    ".target trn3\n"
    ".buffer x input f32 4096\n"
    ".buffer idx input i32 64\n"
    ".buffer y output bf16 2048\n"
    ".buffer tmp internal f8e4m3 512 1024\n"
    ".kernel k0 8\n"
    "dma0 dma_copy dst=sbuf[0:16]@0:f32[[1,64]] src0=hbm:x@0:f32[[64,16],[1,64]] mode=direct signal=s0\n"
    "dma1 dma_copy dst=sbuf[0:16]@512:i32[] src0=hbm:idx@0:i32[[1,16]] mode=direct signal=s1\n"
    "dma2 dma_copy dst=sbuf[0:16]@1024:f32[[1,64]] src0=hbm:x@0:f32[[64,64],[1,64]] src1=sbuf[0:16]@512:i32[] mode=gather wait=s1>=1 signal=s2\n"
    "gpsimd iota dst=sbuf[32:16]@0:i32[[4,4],[1,4]] aff=[1,-2,3,-4,0,0] signal=s3\n"
    "tensor transpose dst=psum[0:64]@0:f32[[1,16]] src0=sbuf[0:16]@0:f32[[1,64]] wait=s0>=1 signal=s4\n"
    "scalar activation dst=sbuf[0:64]@2048:bf16[[1,16]] dst2=sbuf[0:64]@4096:f32[] src0=psum[0:64]@0:f32[[1,16]] func=gelu_tanh imm0=0.5 imm1=-1.25e-07 wait=s4>=1 signal=s5\n"
    "vector tensor_scalar dst=sbuf[0:16]@2048:f32[[1,64]] src0=sbuf[0:16]@1024:f32[[1,64]] op=mul op1=add imm0=3 imm1=-inf wait=s2>=1 signal=s6\n"
    "vector tensor_reduce dst=sbuf[0:16]@8192:f32[[1,8]] src0=sbuf[0:16]@2048:f32[[8,8],[1,8]] op=max axes=1\n"
    "gpsimd affine_select dst=sbuf[0:16]@3072:f32[[1,64]] src0=sbuf[0:16]@1024:f32[[1,64]] op=ge imm0=nan aff=[0,1,-1,0,0,0] wait=s2>=1\n"
    "tensor nop wait=s3>=1,s5>=1\n"
    ".kernel k1 0\n"
    "vector memset dst=sbuf[0:128]@0:f8e5m2[[2,100]] imm0=-0\n"
    "gpsimd select dst=sbuf[0:4]@400:u8[[1,3]] src0=sbuf[0:4]@0:bool[[1,3]] src1=sbuf[0:4]@100:i8[[-1,3]] src2=sbuf[0:4]@200:i16[[0,3]]\n"
    "dma15 dma_copy dst=hbm:tmp@0:f8e4m3[[16,4],[1,16]] src0=sbuf[0:4]@0:f8e5m2[[1,16]] mode=direct\n"
    "dma3 dma_copy dst=sbuf[0:8]@0:bf16[[1,4]] src0=sbuf[0:4]@0:bf16[[1,8]] mode=transpose\n";

static void test_asm_roundtrip(void **state) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  trnc_status st = trnc_nc_program_parse(k_prog, strlen(k_prog), &p, d);
  if (st) nc_print_diags(d);
  assert_int_equal(st, TRNC_OK);
  assert_int_equal(trnc_nc_program_kernel_count(p), 2);
  assert_int_equal(trnc_nc_kernel_instr_count(p, 0), 10);
  assert_string_equal(trnc_nc_program_target(p)->name, "trn3");
  assert_int_equal(trnc_nc_program_scratch_bytes(p), 1536);
  const trnc_nc_instr *in = trnc_nc_kernel_instr(p, 0, 5);
  assert_int_equal(in->op, TRNC_NC_OP_ACTIVATION);
  assert_int_equal(in->act, TRNC_NC_ACT_GELU_TANH);
  assert_true(in->imm[1] == -1.25e-07f);
  assert_int_equal(in->dst2.mem, TRNC_NC_MEM_SBUF);
  in = trnc_nc_kernel_instr(p, 0, 3);
  assert_int_equal(in->aff[3], -4);
  assert_int_equal(in->dst.free[0].stride, 4);
  nc_check_roundtrip(p);
  /* the printed form is the canonical text: printing the parse of the
   * printed text gives the same bytes (checked in nc_check_roundtrip) */
  char *text = trnc_nc_program_print(p);
  assert_non_null(strstr(text, "scalar activation dst=sbuf[0:64]@2048:bf16[[1,16]] dst2=sbuf[0:64]@4096:f32[]"));
  assert_non_null(strstr(text, "imm0=nan"));
  assert_non_null(strstr(text, "hbm:tmp@0:f8e4m3[[16,4],[1,16]]"));
  char *one = trnc_nc_instr_print(p, trnc_nc_kernel_instr(p, 1, 0));
  assert_string_equal(one, "vector memset dst=sbuf[0:128]@0:f8e5m2[[2,100]] imm0=-0");
  trnc_free(one);
  trnc_free(text);
  trnc_nc_program_destroy(p);
  trnc_diags_destroy(d);
}

static void expect_parse_error(const char *text, trnc_status code, const char *needle) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = (trnc_nc_program *)1;
  assert_int_equal(trnc_nc_program_parse(text, strlen(text), &p, d), code);
  assert_null(p);
  const trnc_diag *g = trnc_diags_get(d, 0);
  assert_non_null(g);
  if (!strstr(g->message, needle)) {
    fprintf(stderr, "want [%s] got [%s]\n", needle, g->message);
    fail();
  }
  trnc_diags_destroy(d);
}

static void test_asm_errors(void **state) {
  expect_parse_error(".target trn2\n", TRNC_ERR_MALFORMED, "missing '.version 2'");
  expect_parse_error(".version 3\n", TRNC_ERR_VERSION, "program version 3, this build reads 1..2");
  expect_parse_error(".version 1\n.target trn9\n", TRNC_ERR_MALFORMED, "line 2: unknown .target");
  expect_parse_error(".version 1\nvector memset\n", TRNC_ERR_MALFORMED, "line 2: instruction before any .kernel");
  expect_parse_error(".version 1\n.kernel k 1\nvektor memset\n", TRNC_ERR_MALFORMED, "line 3: unknown engine 'vektor'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memsat\n", TRNC_ERR_MALFORMED, "unknown opcode 'memsat'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset dst=sbuf[0:4]@0:f64[[1,4]]\n", TRNC_ERR_MALFORMED,
                     "bad access pattern dst='sbuf[0:4]@0:f64[[1,4]]'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset dst=sbuf[0:4]@0:f32[[1,4],[1,4],[1,4],[1,4],[1,4]]\n",
                     TRNC_ERR_MALFORMED, "bad access pattern");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset dst=hbm:nope@0:f32[[1,4]]\n", TRNC_ERR_MALFORMED,
                     "bad access pattern");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset src1=sbuf[0:4]@0:f32[[1,4]]\n", TRNC_ERR_MALFORMED,
                     "memset takes no operand 'src1'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset func=exp\n", TRNC_ERR_MALFORMED,
                     "memset takes no parameter 'func'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset imm0=1x\n", TRNC_ERR_MALFORMED, "bad number imm0='1x'");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset imm0=1 imm0=2\n", TRNC_ERR_MALFORMED, "'imm0' given twice");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset wait=s1>=2,s2>=1,s3>=1,s4>=1,s5>=1\n",
                     TRNC_ERR_MALFORMED, "more than 4 waits");
  expect_parse_error(".version 1\n.kernel k 1\nvector memset signal=x1\n", TRNC_ERR_MALFORMED, "bad signal='x1'");
  expect_parse_error(".version 1\n.kernel k 300\n", TRNC_ERR_MALFORMED, ".kernel NAME SEMAPHORES (<= 256)");
  expect_parse_error(".version 1\n.buffer a input f32 0\n", TRNC_ERR_MALFORMED, "bad .buffer 'a'");
  expect_parse_error(".version 1\n.buffer a input f32 4\n.buffer a input f32 4\n", TRNC_ERR_MALFORMED,
                     "cannot add buffer 'a'");
  expect_parse_error(".version 1\n.kernel k 1\nvector tensor_reduce axes=999\n", TRNC_ERR_MALFORMED, "bad axes='999'");
  expect_parse_error(".version 1\n.frobnicate\n", TRNC_ERR_MALFORMED, "unknown directive '.frobnicate'");
  const char nul[] = ".version 1\n.kernel k\0 1\n";
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  assert_int_equal(trnc_nc_program_parse(nul, sizeof nul - 1, &p, d), TRNC_ERR_MALFORMED);
  assert_int_equal(trnc_nc_program_parse(NULL, 0, NULL, d), TRNC_ERR_INVALID_ARGUMENT);
  trnc_diags_destroy(d);
}

static void test_protobuf_errors(void **state) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  const uint8_t junk[] = {0xff, 0xff, 0xff, 0x01, 0x02};
  assert_int_equal(trnc_nc_program_deserialize(junk, sizeof junk, &p, d), TRNC_ERR_MALFORMED);
  assert_null(p);
  /* version and target checks */
  Trnc__Nc__Program m = TRNC__NC__PROGRAM__INIT;
  m.version = 7;
  m.target = (char *)"trn2";
  uint8_t buf[64];
  size_t n = trnc__nc__program__pack(&m, buf);
  assert_int_equal(trnc_nc_program_deserialize(buf, n, &p, d), TRNC_ERR_VERSION);
  m.version = 1;
  m.target = (char *)"tpu";
  n = trnc__nc__program__pack(&m, buf);
  assert_int_equal(trnc_nc_program_deserialize(buf, n, &p, d), TRNC_ERR_MALFORMED);
  /* an instruction with an out-of-range opcode */
  Trnc__Nc__Kernel k = TRNC__NC__KERNEL__INIT;
  Trnc__Nc__Instruction in = TRNC__NC__INSTRUCTION__INIT;
  Trnc__Nc__Instruction *pin = &in;
  Trnc__Nc__Kernel *pk = &k;
  k.name = (char *)"k";
  k.n_instr = 1;
  k.instr = &pin;
  in.opcode = 99;
  m.target = (char *)"trn2";
  m.n_kernels = 1;
  m.kernels = &pk;
  n = trnc__nc__program__pack(&m, buf);
  assert_int_equal(trnc_nc_program_deserialize(buf, n, &p, d), TRNC_ERR_MALFORMED);
  assert_non_null(strstr(trnc_diags_get(d, trnc_diags_count(d) - 1)->message,
                         "kernel 0 instruction 0: opcode, engine, ALU op, function or mode out of range"));
  in.opcode = 0;
  n = trnc__nc__program__pack(&m, buf);
  assert_int_equal(trnc_nc_program_deserialize(buf, n, &p, d), TRNC_ERR_MALFORMED); /* no src slots */
  /* empty program: valid, no kernels */
  m.n_kernels = 0;
  n = trnc__nc__program__pack(&m, buf);
  assert_int_equal(trnc_nc_program_deserialize(buf, n, &p, d), TRNC_OK);
  assert_int_equal(trnc_nc_program_kernel_count(p), 0);
  trnc_nc_program_destroy(p);
  trnc_diags_destroy(d);
}

/* Random corruption of both formats: every outcome is a status, and a
 * program that parses can be printed and verified (and simulated if it
 * verifies) without crashing. */
static void test_corruption(void **state) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  assert_int_equal(trnc_nc_program_parse(k_prog, strlen(k_prog), &p, d), TRNC_OK);
  uint8_t *bytes;
  size_t len;
  assert_int_equal(trnc_nc_program_serialize(p, &bytes, &len), TRNC_OK);
  size_t tlen = strlen(k_prog);
  char *text = malloc(tlen + 1);
  uint8_t *mut = malloc(len);
  unsigned s = 12345;
  int parsed = 0, decoded = 0;
  static const char alphabet[] = "0123456789-[],:@=sx.#\n ";
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(mut, bytes, len);
    memcpy(text, k_prog, tlen + 1);
    for (int f = 0; f < 1 + iter % 4; f++) {
      s = s * 1103515245u + 12345u;
      mut[(s >> 8) % len] ^= (uint8_t)(1u << ((s >> 4) & 7));
      s = s * 1103515245u + 12345u;
      text[(s >> 8) % tlen] = alphabet[(s >> 3) % (sizeof alphabet - 1)];
    }
    trnc_nc_program *q = NULL;
    trnc_diags *dd = trnc_diags_create();
    if (trnc_nc_program_deserialize(mut, len, &q, dd) == TRNC_OK) {
      decoded++;
      char *t = trnc_nc_program_print(q);
      trnc_free(t);
      trnc_nc_program_verify(q, dd);
      trnc_nc_program_destroy(q);
      q = NULL;
    }
    if (trnc_nc_program_parse(text, tlen, &q, dd) == TRNC_OK) {
      parsed++;
      trnc_nc_program_verify(q, dd);
      trnc_nc_program_destroy(q);
    }
    trnc_diags_destroy(dd);
  }
  assert_true(parsed > 0 && decoded > 0);
  free(text);
  free(mut);
  trnc_free(bytes);
  trnc_nc_program_destroy(p);
  trnc_diags_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_asm_roundtrip),
      cmocka_unit_test(test_asm_errors),
      cmocka_unit_test(test_protobuf_errors),
      cmocka_unit_test(test_corruption),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
