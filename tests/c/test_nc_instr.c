/*
 * test_nc_instr.c — every NeuronCore instruction run by the functional
 * simulator against values computed by hand or by a plain reference loop
 * (odd partition counts, strided free dims, dtype rounding). Every program
 * here is also checked to round-trip through assembly and protobuf.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "test_nc_util.h"

#define F32 TRNC_F32
#define BF16 TRNC_BF16

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f * 4.0f - 2.0f;
}

/* x (input, f32 [P,F]) -> SBUF@0 -> `op` -> SBUF@dst_off -> out (f32 [P,F]) */
static int add_io(nct *t, int P, int F, int *in_buf, int *out_buf) {
  *in_buf = trnc_nc_program_add_buffer(t->p, "x", TRNC_NC_BUF_INPUT, F32, S64(P) * F * 4, 0);
  *out_buf = trnc_nc_program_add_buffer(t->p, "out", TRNC_NC_BUF_OUTPUT, F32, S64(P) * F * 4, 0);
  nct_add(t, I_dma(0, SB(0, P, 0, F32, 1, S64(1), S64(F)), HB(*in_buf, 0, F32, F, P, 1, S64(1), S64(F))));
  return 0;
}

static void test_dma_strided_odd(void **state) {
  /* x: [5 rows, 14] f32; load the even columns of rows (as 5 partitions x 7),
   * then store them transposed to HBM with strides: out[c][r] */
  enum { P = 5, C = 14 };
  nct t;
  nct_init(&t, NULL);
  int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, P * C * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, 7 * P * 4, 0);
  nct_add(&t, I_dma(3, SB(0, P, 64, F32, 1, S64(1), S64(7)), HB(x, 0, F32, C, P, 1, S64(2), S64(7))));
  nct_add(&t, I_dma(7, HB(o, 0, F32, 1, P, 1, S64(P), S64(7)), SB(0, P, 64, F32, 1, S64(1), S64(7))));
  float in[P * C], out[7 * P];
  for (int i = 0; i < P * C; i++) in[i] = (float)i * 0.5f;
  const void *ins[] = {in};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int r = 0; r < P; r++)
    for (int c = 0; c < 7; c++) assert_true(out[c * P + r] == in[r * C + 2 * c]);
  trnc_nc_program_destroy(t.p);
}

static void test_dma_cast_and_flatten(void **state) {
  /* HBM f32 [1 row, 24] -> SBUF bf16 [4, 6] (flattened order, rounding) ->
   * HBM f32 [24] */
  nct t;
  nct_init(&t, NULL);
  int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, 24 * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, 24 * 4, 0);
  nct_add(&t, I_dma(0, SB(0, 4, 2, BF16, 1, S64(1), S64(6)), HB(x, 0, F32, 0, 1, 1, S64(1), S64(24))));
  nct_add(&t, I_dma(1, HB(o, 0, F32, 6, 4, 1, S64(1), S64(6)), SB(0, 4, 2, BF16, 1, S64(1), S64(6))));
  float in[24], out[24];
  uint32_t ties[4] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7fffffu};
  for (int i = 0; i < 24; i++) in[i] = (float)i / 3.0f;
  for (int i = 0; i < 4; i++) memcpy(&in[i * 5], &ties[i], 4);
  const void *ins[] = {in};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int i = 0; i < 24; i++) assert_true(out[i] == trnc_nc_round(BF16, in[i]));
  assert_true(out[0] == 1.0f);
  assert_true(isinf(out[15]));
  trnc_nc_program_destroy(t.p);
}

static void test_dma_transpose(void **state) {
  enum { P = 3, F = 5 };
  nct t;
  nct_init(&t, NULL);
  int x, o;
  x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, P * F * 4, 0);
  o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
  /* bf16 in SBUF: a DMA transpose moves 2-byte elements only */
  nct_add(&t, I_dma(0, SB(0, P, 0, BF16, 1, S64(1), S64(F)), HB(x, 0, F32, F, P, 1, S64(1), S64(F))));
  trnc_nc_instr tr = I_dma(1, SB(0, F, 128, BF16, 1, S64(1), S64(P)), SB(0, P, 0, BF16, 1, S64(1), S64(F)));
  tr.mode = TRNC_NC_DMA_TRANSPOSE;
  nct_add(&t, tr);
  nct_add(&t, I_dma(2, HB(o, 0, F32, P, F, 1, S64(1), S64(P)), SB(0, F, 128, BF16, 1, S64(1), S64(P))));
  float in[P * F], out[P * F];
  for (int i = 0; i < P * F; i++) in[i] = (float)i;
  const void *ins[] = {in};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int p = 0; p < P; p++)
    for (int f = 0; f < F; f++) assert_true(out[f * P + p] == in[p * F + f]);
  trnc_nc_program_destroy(t.p);
}

static trnc_nc_program *gather_scatter_prog(void) {
  /* table [10 rows, 4] f32; idx [3] i32; gather rows idx -> SBUF [3,4];
   * scatter them into out [10, 4] at rows idx (out pre-zeroed by a memset
   * tile DMA'd over it). */
  nct t;
  nct_init(&t, NULL);
  int tb = trnc_nc_program_add_buffer(t.p, "table", TRNC_NC_BUF_INPUT, F32, 40 * 4, 0);
  int ix = trnc_nc_program_add_buffer(t.p, "idx", TRNC_NC_BUF_INPUT, TRNC_I32, 3 * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, 40 * 4, 0);
  trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
  ms.dst = SB(0, 10, 256, F32, 1, S64(1), S64(4));
  nct_add(&t, ms);
  nct_add(&t, I_dma(4, HB(o, 0, F32, 4, 10, 1, S64(1), S64(4)), SB(0, 10, 256, F32, 1, S64(1), S64(4))));
  nct_add(&t, I_dma(0, SB(0, 3, 0, TRNC_I32, 0), HB(ix, 0, TRNC_I32, 1, 3, 0)));
  trnc_nc_instr g = I_dma(1, SB(0, 3, 16, F32, 1, S64(1), S64(4)), HB(tb, 0, F32, 4, 10, 1, S64(1), S64(4)));
  g.mode = TRNC_NC_DMA_GATHER;
  g.src[1] = SB(0, 3, 0, TRNC_I32, 0);
  nct_add(&t, g);
  trnc_nc_instr sc = I_dma(2, HB(o, 0, F32, 4, 10, 1, S64(1), S64(4)), SB(0, 3, 16, F32, 1, S64(1), S64(4)));
  sc.mode = TRNC_NC_DMA_SCATTER;
  sc.src[1] = SB(0, 3, 0, TRNC_I32, 0);
  nct_add(&t, sc);
  return t.p;
}

static void test_dma_gather_scatter(void **state) {
  trnc_nc_program *p = gather_scatter_prog();
  float table[40], out[40];
  int32_t idx[3] = {7, 0, 9};
  for (int i = 0; i < 40; i++) table[i] = (float)(i + 1);
  const void *ins[] = {table, idx};
  void *outs[] = {out};
  nc_run(p, ins, outs);
  for (int r = 0; r < 10; r++)
    for (int c = 0; c < 4; c++) {
      float want = (r == 7 || r == 0 || r == 9) ? table[r * 4 + c] : 0.0f;
      assert_true(out[r * 4 + c] == want);
    }
  /* an index outside the table is a runtime error naming the instruction */
  idx[1] = 10;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_nc_simulate(p, ins, outs, d), TRNC_ERR_LIMIT);
  assert_non_null(strstr(trnc_diags_get(d, 0)->message, "main#3 dma1.dma_copy: index 10"));
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

/* reference: psum[m][n] = sum_k a[k][m]*b[k][n] in fp32, k ascending;
 * A is [2K, M], B is [2K, N] (two K blocks, the second accumulated) */
static void matmul_check(trnc_dtype dt, int K, int M, int N, const float *A, const float *B) {
  nct t;
  nct_init(&t, NULL);
  int es = (int)trnc_nc_dtype_size(dt);
  int a = trnc_nc_program_add_buffer(t.p, "a", TRNC_NC_BUF_INPUT, F32, S64(2) * K * M * 4, 0);
  int b = trnc_nc_program_add_buffer(t.p, "b", TRNC_NC_BUF_INPUT, F32, S64(2) * K * N * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, S64(M) * N * 4, 0);
  /* two K blocks: a is [2K, M], b is [2K, N]; cast to dt on the way in */
  for (int blk = 0; blk < 2; blk++) {
    nct_add(&t, I_dma(blk, SB(0, K, blk * 4096, dt, 1, S64(1), S64(M)),
                      HB(a, S64(blk) * K * M * 4, F32, M, K, 1, S64(1), S64(M))));
    nct_add(&t, I_dma(2 + blk, SB(0, K, 16384 + blk * 4096, dt, 1, S64(1), S64(N)),
                      HB(b, S64(blk) * K * N * 4, F32, N, K, 1, S64(1), S64(N))));
  }
  for (int blk = 0; blk < 2; blk++) {
    trnc_nc_instr mm = I(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.dst = PS(0, M, 2048, F32, 1, S64(1), S64(N));
    mm.src[0] = SB(0, K, blk * 4096, dt, 1, S64(1), S64(M));
    mm.src[1] = SB(0, K, 16384 + blk * 4096, dt, 1, S64(1), S64(N));
    mm.mode = blk; /* accumulate the second block */
    nct_add(&t, mm);
  }
  trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  cp.dst = SB(0, M, 32768, F32, 1, S64(1), S64(N));
  cp.src[0] = PS(0, M, 2048, F32, 1, S64(1), S64(N));
  nct_add(&t, cp);
  nct_add(&t, I_dma(5, HB(o, 0, F32, N, M, 1, S64(1), S64(N)), SB(0, M, 32768, F32, 1, S64(1), S64(N))));
  float *out = malloc(sizeof(float) * M * N);
  const void *ins[] = {A, B};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      float acc = 0.0f;
      for (int k = 0; k < 2 * K; k++) acc += trnc_nc_round(dt, A[k * M + m]) * trnc_nc_round(dt, B[k * N + n]);
      uint32_t got, want;
      memcpy(&got, &out[m * N + n], 4);
      memcpy(&want, &acc, 4);
      if (got != want) fail_msg("out[%d][%d] = %a (0x%08x), expected %a (0x%08x)", m, n, out[m * N + n], got, acc, want);
    }
  (void)es;
  free(out);
  trnc_nc_program_destroy(t.p);
}

static void matmul_case(trnc_dtype dt, int K, int M, int N) {
  float *A = malloc(sizeof(float) * 2 * K * M), *B = malloc(sizeof(float) * 2 * K * N);
  unsigned seed = 42;
  for (int i = 0; i < 2 * K * M; i++) A[i] = frand(&seed);
  for (int i = 0; i < 2 * K * N; i++) B[i] = frand(&seed);
  matmul_check(dt, K, M, N, A, B);
  free(A);
  free(B);
}

/* bf16 products that are not exact in fp32, where a fused multiply-add would
 * round differently from the interpreter's product-then-sum (the JIT must
 * not fuse them): out[0][0] = -2^127 + 2^128, whose product overflows
 * (fused: 2^127, interpreter: inf); out[1][1] = 2^-125 + 2^-148 +
 * (1+2^-7)^2 2^-150, whose last product rounds to the subnormal 2^-149 and
 * then ties to even (fused: 2^-125 + 2^-148); out[2][2] an infinity and a
 * NaN; every other element ordinary values. M x N in whole micro-kernel
 * blocks (dst written in place) and not. */
static void matmul_inexact_case(int M, int N) {
  int K = 3;
  float *A = malloc(sizeof(float) * 2 * K * M), *B = malloc(sizeof(float) * 2 * K * N);
  unsigned seed = 7;
  for (int i = 0; i < 2 * K * M; i++) A[i] = frand(&seed);
  for (int i = 0; i < 2 * K * N; i++) B[i] = frand(&seed);
  for (int k = 0; k < 2 * K; k++)
    for (int j = 0; j < 3; j++) A[k * M + j] = B[k * N + j] = 0.0f;
  A[0 * M + 0] = ldexpf(1, 64), B[0 * N + 0] = -ldexpf(1, 63);
  A[1 * M + 0] = ldexpf(1, 64), B[1 * N + 0] = ldexpf(1, 64);
  A[0 * M + 1] = ldexpf(1, -62), B[0 * N + 1] = ldexpf(1, -63);
  A[1 * M + 1] = ldexpf(1, -74), B[1 * N + 1] = ldexpf(1, -74);
  A[2 * M + 1] = B[2 * N + 1] = ldexpf(1.0f + ldexpf(1, -7), -75);
  A[3 * M + 2] = INFINITY, B[3 * N + 2] = 1.0f;
  A[4 * M + 2] = 1.0f, B[4 * N + 2] = NAN;
  matmul_check(BF16, K, M, N, A, B);
  free(A);
  free(B);
}

static void test_matmul_bf16_inexact_products(void **state) {
  (void)state;
  matmul_inexact_case(8, 32);
  matmul_inexact_case(5, 7);
}

static void test_matmul_bf16_odd(void **state) { matmul_case(BF16, 37, 19, 45); }

/* Edge shapes of one matmul instruction: K (partitions) 1, 127, 128; M and
 * N of one element, one short of and one past a micro-kernel block
 * (runtime/host_gemm.h: 8 x 32), a full stationary tile and a full moving
 * row (128 x 512); the second K block accumulates in PSUM. */
static void test_matmul_bf16_edge_shapes(void **state) {
  (void)state;
  matmul_case(BF16, 1, 1, 1);
  matmul_case(BF16, 1, 9, 33);
  matmul_case(BF16, 127, 127, 129);
  matmul_case(BF16, 128, 128, 512);
  matmul_case(BF16, 2, 7, 31);
}

/* NaN, infinities, signed zeros and subnormal operands (bf16 and their
 * products) scattered through otherwise ordinary blocks: any of them sends
 * the instruction to separate multiplies and adds, which must still be the
 * reference's order; a block whose operands are all ordinary may fuse. */
static void test_matmul_bf16_special_values(void **state) {
  (void)state;
  int K = 127, M = 127, N = 129;
  float *A = malloc(sizeof(float) * 2 * K * M), *B = malloc(sizeof(float) * 2 * K * N);
  unsigned seed = 11;
  for (int i = 0; i < 2 * K * M; i++) A[i] = frand(&seed);
  for (int i = 0; i < 2 * K * N; i++) B[i] = frand(&seed);
  const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, ldexpf(1, -130), -ldexpf(3, -133),
                           ldexpf(1, -126), ldexpf(1, 100), -ldexpf(1, 90)};
  for (int i = 0; i < 40; i++) {
    A[(i * 97 + 13) % (2 * K * M)] = special[i % 10];
    B[(i * 89 + 7) % (2 * K * N)] = special[(i * 3) % 10];
  }
  matmul_check(BF16, K, M, N, A, B);
  /* only subnormal operands (no NaN): subnormal products and sums */
  for (int i = 0; i < 2 * K * M; i++) A[i] = ldexpf(frand(&seed), -120);
  for (int i = 0; i < 2 * K * N; i++) B[i] = ldexpf(frand(&seed), -10);
  A[5] = ldexpf(1, -131);
  matmul_check(BF16, K, M, N, A, B);
  free(A);
  free(B);
}
static void test_matmul_f32(void **state) { matmul_case(F32, 128, 128, 64); }
static void test_matmul_f8(void **state) { matmul_case(TRNC_F8E4M3, 16, 8, 512); }
static void test_matmul_f16(void **state) { matmul_case(TRNC_F16, 5, 3, 7); }

static void test_tensor_transpose(void **state) {
  enum { P = 3, F = 5 };
  nct t;
  nct_init(&t, NULL);
  int x, o;
  add_io(&t, P, F, &x, &o);
  trnc_nc_instr tr = I(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
  tr.dst = PS(0, F, 0, F32, 1, S64(1), S64(P));
  tr.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
  nct_add(&t, tr);
  trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_SCALAR);
  cp.dst = SB(0, F, 512, F32, 1, S64(1), S64(P));
  cp.src[0] = PS(0, F, 0, F32, 1, S64(1), S64(P));
  nct_add(&t, cp);
  nct_add(&t, I_dma(1, HB(o, 0, F32, P, F, 1, S64(1), S64(P)), SB(0, F, 512, F32, 1, S64(1), S64(P))));
  float in[P * F], out[P * F];
  for (int i = 0; i < P * F; i++) in[i] = (float)i - 3.0f;
  const void *ins[] = {in};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int p = 0; p < P; p++)
    for (int f = 0; f < F; f++) assert_true(out[f * P + p] == in[p * F + f]);
  trnc_nc_program_destroy(t.p);
}

/* torch.maximum/minimum: NaN wins, ties give the first operand */
static float ref_max(float a, float b) { return isnan(a) ? a : isnan(b) ? b : a >= b ? a : b; }
static float ref_min(float a, float b) { return isnan(a) ? a : isnan(b) ? b : a <= b ? a : b; }

static float ref_act(int f, float x) {
  switch (f) {
    case TRNC_NC_ACT_IDENTITY: return x;
    case TRNC_NC_ACT_EXP: return expf(x);
    case TRNC_NC_ACT_LOG: return logf(x);
    case TRNC_NC_ACT_TANH: return tanhf(x);
    case TRNC_NC_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case TRNC_NC_ACT_RELU: return ref_max(x, 0.0f);
    case TRNC_NC_ACT_GELU: return 0.5f * x * (1.0f + erff(x / sqrtf(2.0f)));
    case TRNC_NC_ACT_GELU_TANH: return 0.5f * x * (1.0f + tanhf(sqrtf(2.0f / 3.14159265f) * (x + 0.044715f * x * x * x)));
    case TRNC_NC_ACT_SILU: return x / (1.0f + expf(-x));
    case TRNC_NC_ACT_RSQRT: return 1.0f / sqrtf(x);
    case TRNC_NC_ACT_SQRT: return sqrtf(x);
    case TRNC_NC_ACT_SQUARE: return x * x;
    case TRNC_NC_ACT_SIN: return sinf(x);
    case TRNC_NC_ACT_COS: return cosf(x);
    case TRNC_NC_ACT_ERF: return erff(x);
    case TRNC_NC_ACT_RECIPROCAL: return 1.0f / x;
    case TRNC_NC_ACT_ABS: return fabsf(x);
    case TRNC_NC_ACT_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
    case TRNC_NC_ACT_SOFTPLUS: return logf(1.0f + expf(x));
    default: return NAN;
  }
}

static void close_to(float got, float want, float rel) {
  if (isnan(want)) {
    assert_true(isnan(got));
    return;
  }
  if (!(fabsf(got - want) <= rel * fmaxf(1.0f, fabsf(want)))) {
    fprintf(stderr, "got %.9g want %.9g\n", (double)got, (double)want);
    fail();
  }
}

static void test_activation_all(void **state) {
  enum { P = 3, F = 6 };
  for (int f = 0; f < TRNC_NC_ACT_COUNT; f++) {
    nct t;
    nct_init(&t, NULL);
    int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, P * F * 4, 0);
    int bias = trnc_nc_program_add_buffer(t.p, "bias", TRNC_NC_BUF_INPUT, F32, P * 4, 0);
    int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
    int os = trnc_nc_program_add_buffer(t.p, "sum", TRNC_NC_BUF_OUTPUT, F32, P * 4, 0);
    nct_add(&t, I_dma(0, SB(0, P, 0, F32, 1, S64(1), S64(F)), HB(x, 0, F32, F, P, 1, S64(1), S64(F))));
    nct_add(&t, I_dma(1, SB(0, P, 100 * 4, F32, 0), HB(bias, 0, F32, 1, P, 0)));
    trnc_nc_instr a = I(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
    a.act = (uint8_t)f;
    /* strided: read every other element of a [P, 2F] view? keep x contiguous,
     * write the result with stride 2 */
    a.dst = SB(0, P, 1024, F32, 1, S64(2), S64(F));
    a.dst2 = SB(0, P, 2048, F32, 0);
    a.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
    a.src[1] = SB(0, P, 100 * 4, F32, 0);
    a.imm[0] = 0.5f;
    nct_add(&t, a);
    nct_add(&t, I_dma(2, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 1024, F32, 1, S64(2), S64(F))));
    nct_add(&t, I_dma(3, HB(os, 0, F32, 1, P, 0), SB(0, P, 2048, F32, 0)));
    float in[P * F], bs[P] = {0.25f, -0.5f, 1.0f}, out[P * F], sum[P];
    for (int i = 0; i < P * F; i++) in[i] = (float)(i % 7) * 0.4f + 0.1f;
    const void *ins[] = {in, bs};
    void *outs[] = {out, sum};
    nc_run(t.p, ins, outs);
    for (int p = 0; p < P; p++) {
      float s = 0.0f;
      for (int i = 0; i < F; i++) {
        float want = ref_act(f, in[p * F + i] * 0.5f + bs[p]);
        close_to(out[p * F + i], want, 2e-6f);
        s += out[p * F + i];
      }
      close_to(sum[p], s, 1e-6f);
    }
    trnc_nc_program_destroy(t.p);
  }
}

static float ref_alu(int op, float a, float b) {
  switch (op) {
    case TRNC_NC_ALU_BYPASS: return a;
    case TRNC_NC_ALU_ADD: return a + b;
    case TRNC_NC_ALU_SUB: return a - b;
    case TRNC_NC_ALU_RSUB: return b - a;
    case TRNC_NC_ALU_MUL: return a * b;
    case TRNC_NC_ALU_DIV: return a / b;
    case TRNC_NC_ALU_MAX: return ref_max(a, b);
    case TRNC_NC_ALU_MIN: return ref_min(a, b);
    case TRNC_NC_ALU_POW: return powf(a, b);
    case TRNC_NC_ALU_EQ: return a == b;
    case TRNC_NC_ALU_NE: return a != b;
    case TRNC_NC_ALU_LT: return a < b;
    case TRNC_NC_ALU_LE: return a <= b;
    case TRNC_NC_ALU_GT: return a > b;
    case TRNC_NC_ALU_GE: return a >= b;
    case TRNC_NC_ALU_AND: return a != 0 && b != 0;
    case TRNC_NC_ALU_OR: return a != 0 || b != 0;
    case TRNC_NC_ALU_XOR: return (a != 0) != (b != 0);
    case TRNC_NC_ALU_ABSMAX: return ref_max(fabsf(a), fabsf(b));
    default: return NAN;
  }
}

static void test_tensor_tensor_all(void **state) {
  /* 7 partitions; src1 read from PSUM with a stride-2 free dim */
  enum { P = 7, F = 10 };
  for (int op = 0; op < TRNC_NC_ALU_COUNT; op++) {
    if (trnc_nc_alu_is_bitvec(op)) continue; /* integer operands only: test_int32_exact */
    nct t;
    nct_init(&t, NULL);
    int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, P * 2 * F * 4, 0);
    int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
    nct_add(&t, I_dma(0, SB(0, P, 0, F32, 1, S64(1), S64(2 * F)), HB(x, 0, F32, 2 * F, P, 1, S64(1), S64(2 * F))));
    trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    cp.dst = PS(0, P, 0, F32, 1, S64(1), S64(2 * F));
    cp.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(2 * F));
    nct_add(&t, cp);
    trnc_nc_instr tt = I(TRNC_NC_OP_TENSOR_TENSOR, op % 2 ? TRNC_NC_VECTOR : TRNC_NC_GPSIMD);
    tt.alu0 = (uint8_t)op;
    tt.dst = SB(0, P, 4096, F32, 2, S64(5), S64(2), S64(1), S64(5));
    tt.src[0] = SB(0, P, 0, F32, 1, S64(2), S64(F));         /* even elements */
    tt.src[1] = SB(0, P, 4, F32, 1, S64(2), S64(F));         /* odd elements */
    if (tt.engine == TRNC_NC_VECTOR) tt.src[1] = PS(0, P, 4, F32, 1, S64(2), S64(F));
    nct_add(&t, tt);
    nct_add(&t, I_dma(1, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 4096, F32, 1, S64(1), S64(F))));
    float in[P * 2 * F], out[P * F];
    for (int i = 0; i < P * 2 * F; i++) in[i] = (float)((i * 7) % 5) - 1.0f + (i % 3) * 0.25f;
    const void *ins[] = {in};
    void *outs[] = {out};
    nc_run(t.p, ins, outs);
    for (int p = 0; p < P; p++)
      for (int i = 0; i < F; i++) {
        float want = ref_alu(op, in[p * 2 * F + 2 * i], in[p * 2 * F + 2 * i + 1]);
        float got = out[p * F + i];
        assert_true(got == want || (isnan(got) && isnan(want)));
      }
    trnc_nc_program_destroy(t.p);
  }
}

/* Reference of an int32 ALU op: add/sub/mul wrap modulo 2^32. */
static int32_t ref_ialu(int op, int32_t a, int32_t b) {
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  switch (op) {
    case TRNC_NC_ALU_ADD: return (int32_t)(ua + ub);
    case TRNC_NC_ALU_SUB: return (int32_t)(ua - ub);
    case TRNC_NC_ALU_RSUB: return (int32_t)(ub - ua);
    case TRNC_NC_ALU_MUL: return (int32_t)(ua * ub);
    case TRNC_NC_ALU_MAX: return a >= b ? a : b;
    case TRNC_NC_ALU_MIN: return a <= b ? a : b;
    case TRNC_NC_ALU_EQ: return a == b;
    case TRNC_NC_ALU_NE: return a != b;
    case TRNC_NC_ALU_LT: return a < b;
    case TRNC_NC_ALU_LE: return a <= b;
    case TRNC_NC_ALU_GT: return a > b;
    case TRNC_NC_ALU_GE: return a >= b;
    case TRNC_NC_ALU_AND: return a && b;
    case TRNC_NC_ALU_OR: return a || b;
    case TRNC_NC_ALU_XOR: return !a != !b;
    case TRNC_NC_ALU_BIT_AND: return (int32_t)(ua & ub);
    case TRNC_NC_ALU_BIT_OR: return (int32_t)(ua | ub);
    case TRNC_NC_ALU_BIT_XOR: return (int32_t)(ua ^ ub);
    case TRNC_NC_ALU_SHL: return (int32_t)(ua << (ub & 31));
    case TRNC_NC_ALU_SHR: return (int32_t)(a < 0 ? ~(~ua >> (ub & 31)) : ua >> (ub & 31));
    default: return 0;
  }
}

/* nki.isa.tensor_tensor: an int32 tensor_tensor on GpSimd is native integer
 * arithmetic, exact for every 32-bit value (wrapping add/sub/mul); on
 * VectorE the same instruction goes through fp32. Odd partition count and
 * free size (129 = one past a 128 tile). */
static void test_int32_exact(void **state) {
  enum { P = 3, F = 129 };
  const int32_t I32 = TRNC_I32;
  int32_t in[P * 2 * F], out[P * F];
  unsigned seed = 7;
  for (int i = 0; i < P * 2 * F; i++) {
    seed = seed * 1103515245u + 12345u;
    in[i] = (int32_t)(seed ^ (seed << 13));
  }
  in[0] = (1 << 24) + 1, in[1] = 0;       /* fp32 would round 2^24 + 1 */
  in[2] = INT32_MAX, in[3] = 1;           /* wraps to INT32_MIN */
  in[4] = 65537, in[5] = 65537;           /* product wraps */
  in[6] = 5, in[7] = 33;                  /* shift count mod 32 */
  for (int op = 0; op < TRNC_NC_ALU_COUNT; op++) {
    if (!trnc_nc_alu_has_int_form(op)) continue;
    for (int vec = 0; vec < 2; vec++) {
      if (vec && !trnc_nc_alu_is_bitvec(op) && op != TRNC_NC_ALU_ADD) continue;
      nct t;
      nct_init(&t, NULL);
      int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, I32, P * 2 * F * 4, 0);
      int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, I32, P * F * 4, 0);
      nct_add(&t, I_dma(0, SB(0, P, 0, I32, 1, S64(1), S64(2 * F)), HB(x, 0, I32, 2 * F, P, 1, S64(1), S64(2 * F))));
      trnc_nc_instr tt = I(TRNC_NC_OP_TENSOR_TENSOR, vec ? TRNC_NC_VECTOR : TRNC_NC_GPSIMD);
      tt.alu0 = (uint8_t)op;
      tt.dst = SB(0, P, 4096, I32, 1, S64(1), S64(F));
      tt.src[0] = SB(0, P, 0, I32, 1, S64(2), S64(F));
      tt.src[1] = SB(0, P, 4, I32, 1, S64(2), S64(F));
      nct_add(&t, tt);
      nct_add(&t, I_dma(1, HB(o, 0, I32, F, P, 1, S64(1), S64(F)), SB(0, P, 4096, I32, 1, S64(1), S64(F))));
      const void *ins[] = {in};
      void *outs[] = {out};
      nc_run(t.p, ins, outs);
      for (int p = 0; p < P; p++)
        for (int i = 0; i < F; i++) {
          int32_t a = in[p * 2 * F + 2 * i], b = in[p * 2 * F + 2 * i + 1];
          if (vec && op == TRNC_NC_ALU_ADD) /* VectorE: through fp32 */
            assert_int_equal(out[p * F + i], (int32_t)trnc_nc_encode(I32, (float)a + (float)b));
          else
            assert_int_equal(out[p * F + i], ref_ialu(op, a, b));
        }
      if (vec && op == TRNC_NC_ALU_ADD) assert_int_equal(out[0], 1 << 24); /* rounded */
      if (!vec && op == TRNC_NC_ALU_ADD) assert_int_equal(out[0], (1 << 24) + 1), assert_int_equal(out[1], INT32_MIN);
      trnc_nc_program_destroy(t.p);
    }
  }
}

/* Bitvec tensor_scalar on VectorE (int8 sign extension by shifts, as the
 * int8 wrap of codegen/kir/rules.c) and an exact int32 iota. */
static void test_int_bitvec_scalar_and_iota(void **state) {
  enum { P = 2, F = 5 };
  nct t;
  nct_init(&t, NULL);
  int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, TRNC_I32, P * F * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, TRNC_I8, P * F, 0);
  int q = trnc_nc_program_add_buffer(t.p, "iota", TRNC_NC_BUF_OUTPUT, TRNC_I32, P * F * 4, 0);
  nct_add(&t, I_dma(0, SB(0, P, 0, TRNC_I32, 1, S64(1), S64(F)), HB(x, 0, TRNC_I32, F, P, 1, S64(1), S64(F))));
  trnc_nc_instr ts = I(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  ts.alu0 = TRNC_NC_ALU_SHL, ts.imm[0] = 24;
  ts.alu1 = TRNC_NC_ALU_SHR, ts.imm[1] = 24;
  ts.dst = SB(0, P, 1024, TRNC_I32, 1, S64(1), S64(F));
  ts.src[0] = SB(0, P, 0, TRNC_I32, 1, S64(1), S64(F));
  nct_add(&t, ts);
  trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  cp.dst = SB(0, P, 2048, TRNC_I8, 1, S64(1), S64(F));
  cp.src[0] = SB(0, P, 1024, TRNC_I32, 1, S64(1), S64(F));
  nct_add(&t, cp);
  nct_add(&t, I_dma(1, HB(o, 0, TRNC_I8, F, P, 1, S64(1), S64(F)), SB(0, P, 2048, TRNC_I8, 1, S64(1), S64(F))));
  trnc_nc_instr io = I(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
  io.dst = SB(0, P, 3072, TRNC_I32, 1, S64(1), S64(F));
  io.aff[0] = (1 << 30) + 1, io.aff[1] = 1000, io.aff[2] = 1;
  nct_add(&t, io);
  nct_add(&t, I_dma(2, HB(q, 0, TRNC_I32, F, P, 1, S64(1), S64(F)), SB(0, P, 3072, TRNC_I32, 1, S64(1), S64(F))));
  int32_t in[P * F] = {200, -129, 127, 128, 65535, 300, -1, 0, 255, 1000000};
  int8_t out[P * F];
  int32_t iota[P * F];
  const void *ins[] = {in};
  void *outs[] = {out, iota};
  nc_run(t.p, ins, outs);
  for (int i = 0; i < P * F; i++) {
    assert_int_equal(out[i], (int8_t)(uint8_t)(uint32_t)in[i]); /* eager's wrap */
    assert_int_equal(iota[i], (1 << 30) + 1 + 1000 * (i / F) + i % F);
  }
  trnc_nc_program_destroy(t.p);
}

/* The verifier: bitvec ops need integer operands; GpSimd int32 ops without
 * an integer form (div) are rejected. */
static void test_int_verifier_rules(void **state) {
  for (int c = 0; c < 2; c++) {
    nct t;
    nct_init(&t, NULL);
    trnc_dtype dt = c ? TRNC_I32 : F32;
    trnc_nc_instr tt = I(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
    tt.alu0 = c ? TRNC_NC_ALU_DIV : TRNC_NC_ALU_BIT_AND;
    tt.dst = SB(0, 4, 1024, dt, 1, S64(1), S64(8));
    tt.src[0] = SB(0, 4, 0, dt, 1, S64(1), S64(8));
    tt.src[1] = SB(0, 4, 512, dt, 1, S64(1), S64(8));
    trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    ms.dst = SB(0, 4, 0, dt, 1, S64(1), S64(1024 / 4));
    nct_add(&t, ms);
    nct_add(&t, tt);
    trnc_diags *d = trnc_diags_create();
    assert_int_not_equal(trnc_nc_program_verify(t.p, d), TRNC_OK);
    char *msg = trnc_diags_format(d);
    assert_non_null(strstr(msg, c ? "div has no integer form" : "needs integer operands"));
    trnc_free(msg);
    trnc_diags_destroy(d);
    trnc_nc_program_destroy(t.p);
  }
}

static void test_tensor_scalar(void **state) {
  enum { P = 5, F = 9 };
  nct t;
  nct_init(&t, NULL);
  int x, o;
  add_io(&t, P, F, &x, &o);
  int sc = trnc_nc_program_add_buffer(t.p, "s", TRNC_NC_BUF_INPUT, F32, P * 4, 0);
  nct_add(&t, I_dma(1, SB(0, P, 512, F32, 0), HB(sc, 0, F32, 1, P, 0)));
  trnc_nc_instr ts = I(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  ts.dst = SB(0, P, 1024, BF16, 1, S64(1), S64(F));
  ts.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
  ts.alu0 = TRNC_NC_ALU_SUB; /* x - s[p] */
  ts.src[1] = SB(0, P, 512, F32, 0);
  ts.alu1 = TRNC_NC_ALU_MUL; /* * 3 */
  ts.imm[1] = 3.0f;
  nct_add(&t, ts);
  nct_add(&t, I_dma(2, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 1024, BF16, 1, S64(1), S64(F))));
  float in[P * F], s[P] = {1, 2, 3, 4, 5}, out[P * F];
  for (int i = 0; i < P * F; i++) in[i] = (float)i * 1.1f;
  const void *ins[] = {in, s};
  void *outs[] = {out};
  nc_run(t.p, ins, outs);
  for (int p = 0; p < P; p++)
    for (int i = 0; i < F; i++) assert_true(out[p * F + i] == trnc_nc_round(BF16, (in[p * F + i] - s[p]) * 3.0f));
  trnc_nc_program_destroy(t.p);
}

static void test_tensor_reduce(void **state) {
  /* x [3, 4 x 5]; reduce the inner axis (-> [3,4]) and both (-> [3,1]) */
  enum { P = 3, A = 4, B = 5 };
  int ops[] = {TRNC_NC_ALU_ADD, TRNC_NC_ALU_MAX, TRNC_NC_ALU_MIN, TRNC_NC_ALU_MUL, TRNC_NC_ALU_ABSMAX};
  for (int oi = 0; oi < 5; oi++) {
    nct t;
    nct_init(&t, NULL);
    int x, o;
    add_io(&t, P, A * B, &x, &o);
    int o2 = trnc_nc_program_add_buffer(t.p, "all", TRNC_NC_BUF_OUTPUT, F32, P * 4, 0);
    trnc_nc_instr r = I(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
    r.alu0 = (uint8_t)ops[oi];
    r.mode = 1;
    r.dst = SB(0, P, 1024, F32, 1, S64(1), S64(A));
    r.src[0] = SB(0, P, 0, F32, 2, S64(B), S64(A), S64(1), S64(B));
    nct_add(&t, r);
    r.mode = 2;
    r.engine = TRNC_NC_GPSIMD;
    r.dst = SB(0, P, 2048, F32, 0);
    nct_add(&t, r);
    nct_add(&t, I_dma(1, HB(o, 0, F32, A, P, 1, S64(1), S64(A)), SB(0, P, 1024, F32, 1, S64(1), S64(A))));
    nct_add(&t, I_dma(2, HB(o2, 0, F32, 1, P, 0), SB(0, P, 2048, F32, 0)));
    float in[P * A * B], out[P * A * B], all[P];
    for (int i = 0; i < P * A * B; i++) in[i] = (float)((i * 13) % 11) * 0.5f - 2.0f;
    const void *ins[] = {in};
    void *outs[] = {out, all};
    nc_run(t.p, ins, outs);
    for (int p = 0; p < P; p++) {
      float tot = 0;
      for (int a = 0; a < A; a++) {
        const float *v = &in[p * A * B + a * B];
        float r0 = ops[oi] == TRNC_NC_ALU_ABSMAX ? fabsf(v[0]) : v[0];
        for (int b = 1; b < B; b++) r0 = ref_alu(ops[oi], r0, v[b]);
        assert_true(out[p * A + a] == r0);
      }
      const float *v = &in[p * A * B];
      tot = ops[oi] == TRNC_NC_ALU_ABSMAX ? fabsf(v[0]) : v[0];
      for (int i = 1; i < A * B; i++) tot = ref_alu(ops[oi], tot, v[i]);
      assert_true(all[p] == tot);
    }
    trnc_nc_program_destroy(t.p);
  }
}

static void test_copy_casts(void **state) {
  /* f32 -> each dtype -> f32, through tensor_copy on SBUF */
  trnc_dtype dts[] = {TRNC_BF16, TRNC_F16, TRNC_F8E4M3, TRNC_F8E5M2, TRNC_I32, TRNC_I16, TRNC_I8, TRNC_U8, TRNC_BOOL};
  enum { P = 2, F = 8 };
  float in[P * F] = {1.0f, 1.0625f, 500.0f, -3.7f, 1e6f, 0.0f, 65520.0f, 2.5f,
                     -0.0f, 1e-8f, 448.0f, 464.0f, 300.0f, -200.0f, 0.5f, 1.1875f};
  for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
    nct t;
    nct_init(&t, NULL);
    int x, o;
    add_io(&t, P, F, &x, &o);
    trnc_nc_instr c = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_GPSIMD);
    c.dst = SB(0, P, 1024, dts[di], 1, S64(1), S64(F));
    c.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
    nct_add(&t, c);
    c.dst = SB(0, P, 2048, F32, 1, S64(1), S64(F));
    c.src[0] = SB(0, P, 1024, dts[di], 1, S64(1), S64(F));
    nct_add(&t, c);
    nct_add(&t, I_dma(1, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 2048, F32, 1, S64(1), S64(F))));
    float out[P * F];
    const void *ins[] = {in};
    void *outs[] = {out};
    nc_run(t.p, ins, outs);
    for (int i = 0; i < P * F; i++) {
      float want = trnc_nc_round(dts[di], in[i]);
      assert_true(out[i] == want || (isnan(out[i]) && isnan(want)));
    }
    if (dts[di] == TRNC_F8E4M3) {
      assert_true(out[2] == 448.0f); /* 500 rounds past 448: saturates, as torch */
      assert_true(out[4] == 448.0f);
      assert_true(out[11] == 448.0f);
    }
    if (dts[di] == TRNC_F16) assert_true(isinf(out[6]));
    if (dts[di] == TRNC_U8) assert_true(out[12] == 255.0f && out[13] == 0.0f);
    trnc_nc_program_destroy(t.p);
  }
}

static void test_memset_iota_select(void **state) {
  /* causal mask on [6, 6]: iota gives j - p; affine_select keeps x where
   * p - j >= 0, else -inf-like fill; select then picks between x and memset */
  enum { P = 6, F = 6 };
  nct t;
  nct_init(&t, NULL);
  int x, o;
  add_io(&t, P, F, &x, &o);
  int oi = trnc_nc_program_add_buffer(t.p, "iota", TRNC_NC_BUF_OUTPUT, TRNC_I32, P * F * 4, 0);
  int os = trnc_nc_program_add_buffer(t.p, "sel", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
  trnc_nc_instr io = I(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
  io.dst = SB(0, P, 1024, TRNC_I32, 1, S64(1), S64(F));
  io.aff[0] = 100;
  io.aff[1] = -1; /* - p */
  io.aff[2] = 1;  /* + j */
  nct_add(&t, io);
  trnc_nc_instr as = I(TRNC_NC_OP_AFFINE_SELECT, TRNC_NC_GPSIMD);
  as.dst = SB(0, P, 2048, F32, 1, S64(1), S64(F));
  as.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
  as.alu0 = TRNC_NC_ALU_GE;
  as.aff[1] = 1;
  as.aff[2] = -1;
  as.imm[0] = -30000.0f;
  nct_add(&t, as);
  trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
  ms.dst = SB(0, P, 3072, BF16, 1, S64(1), S64(F));
  ms.imm[0] = 7.0f;
  nct_add(&t, ms);
  trnc_nc_instr mk = I(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  mk.dst = SB(0, P, 3584, TRNC_BOOL, 1, S64(1), S64(F));
  mk.src[0] = SB(0, P, 1024, TRNC_I32, 1, S64(1), S64(F));
  mk.alu0 = TRNC_NC_ALU_GT;
  mk.imm[0] = 100.0f; /* j > p */
  nct_add(&t, mk);
  trnc_nc_instr se = I(TRNC_NC_OP_SELECT, TRNC_NC_VECTOR);
  se.dst = SB(0, P, 4096, F32, 1, S64(1), S64(F));
  se.src[0] = SB(0, P, 3584, TRNC_BOOL, 1, S64(1), S64(F));
  se.src[1] = SB(0, P, 3072, BF16, 1, S64(1), S64(F));
  se.src[2] = SB(0, P, 2048, F32, 1, S64(1), S64(F));
  nct_add(&t, se);
  nct_add(&t, I_dma(1, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 2048, F32, 1, S64(1), S64(F))));
  nct_add(&t, I_dma(2, HB(oi, 0, TRNC_I32, F, P, 1, S64(1), S64(F)), SB(0, P, 1024, TRNC_I32, 1, S64(1), S64(F))));
  nct_add(&t, I_dma(3, HB(os, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 4096, F32, 1, S64(1), S64(F))));
  float in[P * F], out[P * F], sel[P * F];
  int32_t iota[P * F];
  for (int i = 0; i < P * F; i++) in[i] = (float)i;
  const void *ins[] = {in};
  void *outs[] = {out, iota, sel};
  nc_run(t.p, ins, outs);
  for (int p = 0; p < P; p++)
    for (int j = 0; j < F; j++) {
      assert_int_equal(iota[p * F + j], 100 - p + j);
      float masked = p - j >= 0 ? in[p * F + j] : -30000.0f;
      assert_true(out[p * F + j] == masked);
      assert_true(sel[p * F + j] == (j > p ? 7.0f : masked));
    }
  trnc_nc_program_destroy(t.p);
}

/* got equals want bit for bit up to the NaN payload (signed zeros count) */
static void same_float(float got, float want) {
  if (isnan(want) ? isnan(got) : (got == want && signbit(got) == signbit(want))) return;
  fprintf(stderr, "got %.9g want %.9g\n", (double)got, (double)want);
  fail();
}

static void test_nan_max_min(void **state) {
  /* MAX/MIN/ABSMAX propagate NaN (torch.maximum/minimum, amax/amin, clamp,
   * relu) in tensor_tensor, tensor_scalar, tensor_reduce and ACT RELU */
  enum { P = 8, F = 8 };
  const float V[8] = {NAN, -NAN, INFINITY, -INFINITY, 1.0f, -2.0f, 0.0f, -0.0f};
  int alus[] = {TRNC_NC_ALU_MAX, TRNC_NC_ALU_MIN, TRNC_NC_ALU_ABSMAX};
  for (int ai = 0; ai < 3; ai++) {
    /* every pair: x[p] = [V[p] x F | V[0..F)] ; tensor_tensor(a = V[p], b = V[i]) */
    nct t;
    nct_init(&t, NULL);
    int x = trnc_nc_program_add_buffer(t.p, "x", TRNC_NC_BUF_INPUT, F32, P * 2 * F * 4, 0);
    int s = trnc_nc_program_add_buffer(t.p, "s", TRNC_NC_BUF_INPUT, F32, P * 4, 0);
    int o = trnc_nc_program_add_buffer(t.p, "tt", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
    int o2 = trnc_nc_program_add_buffer(t.p, "ts", TRNC_NC_BUF_OUTPUT, F32, P * F * 4, 0);
    nct_add(&t, I_dma(0, SB(0, P, 0, F32, 1, S64(1), S64(2 * F)), HB(x, 0, F32, 2 * F, P, 1, S64(1), S64(2 * F))));
    nct_add(&t, I_dma(1, SB(0, P, 512, F32, 0), HB(s, 0, F32, 1, P, 0)));
    trnc_nc_instr tt = I(TRNC_NC_OP_TENSOR_TENSOR, ai == 1 ? TRNC_NC_GPSIMD : TRNC_NC_VECTOR);
    tt.alu0 = (uint8_t)alus[ai];
    tt.dst = SB(0, P, 1024, F32, 1, S64(1), S64(F));
    tt.src[0] = SB(0, P, 0, F32, 1, S64(1), S64(F));
    tt.src[1] = SB(0, P, F * 4, F32, 1, S64(1), S64(F));
    nct_add(&t, tt);
    /* tensor_scalar: b = V[i] row op per-partition scalar s[p] = V[p] */
    trnc_nc_instr ts = I(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
    ts.alu0 = (uint8_t)alus[ai];
    ts.dst = SB(0, P, 2048, F32, 1, S64(1), S64(F));
    ts.src[0] = SB(0, P, F * 4, F32, 1, S64(1), S64(F));
    ts.src[1] = SB(0, P, 512, F32, 0);
    nct_add(&t, ts);
    nct_add(&t, I_dma(2, HB(o, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 1024, F32, 1, S64(1), S64(F))));
    nct_add(&t, I_dma(3, HB(o2, 0, F32, F, P, 1, S64(1), S64(F)), SB(0, P, 2048, F32, 1, S64(1), S64(F))));
    float in[P * 2 * F], sc[P], out[P * F], out2[P * F];
    for (int p = 0; p < P; p++) {
      sc[p] = V[p];
      for (int i = 0; i < F; i++) in[p * 2 * F + i] = V[p], in[p * 2 * F + F + i] = V[i];
    }
    const void *ins[] = {in, sc};
    void *outs[] = {out, out2};
    nc_run(t.p, ins, outs);
    for (int p = 0; p < P; p++)
      for (int i = 0; i < F; i++) {
        same_float(out[p * F + i], ref_alu(alus[ai], V[p], V[i]));
        same_float(out2[p * F + i], ref_alu(alus[ai], V[i], V[p]));
      }
    trnc_nc_program_destroy(t.p);
  }
  /* clamp(x, -1, 1) as tensor_scalar max/min, relu activation, reductions */
  {
    nct t;
    nct_init(&t, NULL);
    int x, o;
    add_io(&t, 1, F, &x, &o);
    int o2 = trnc_nc_program_add_buffer(t.p, "relu", TRNC_NC_BUF_OUTPUT, F32, F * 4, 0);
    trnc_nc_instr ts = I(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
    ts.dst = SB(0, 1, 1024, F32, 1, S64(1), S64(F));
    ts.src[0] = SB(0, 1, 0, F32, 1, S64(1), S64(F));
    ts.alu0 = TRNC_NC_ALU_MAX;
    ts.imm[0] = -1.0f;
    ts.alu1 = TRNC_NC_ALU_MIN;
    ts.imm[1] = 1.0f;
    nct_add(&t, ts);
    trnc_nc_instr a = I(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
    a.act = TRNC_NC_ACT_RELU;
    a.dst = SB(0, 1, 2048, F32, 1, S64(1), S64(F));
    a.src[0] = SB(0, 1, 0, F32, 1, S64(1), S64(F));
    a.imm[0] = 1.0f;
    nct_add(&t, a);
    nct_add(&t, I_dma(1, HB(o, 0, F32, F, 1, 1, S64(1), S64(F)), SB(0, 1, 1024, F32, 1, S64(1), S64(F))));
    nct_add(&t, I_dma(2, HB(o2, 0, F32, F, 1, 1, S64(1), S64(F)), SB(0, 1, 2048, F32, 1, S64(1), S64(F))));
    float in[F], out[F], relu[F];
    memcpy(in, V, sizeof in);
    const void *ins[] = {in};
    void *outs[] = {out, relu};
    nc_run(t.p, ins, outs);
    const float want_clamp[F] = {NAN, NAN, 1.0f, -1.0f, 1.0f, -1.0f, 0.0f, -0.0f};
    /* relu(x * 1 + 0): the +0 bias turns -0 into +0 before the max */
    const float want_relu[F] = {NAN, NAN, INFINITY, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < F; i++) {
      same_float(out[i], want_clamp[i]);
      same_float(relu[i], want_relu[i]);
    }
    trnc_nc_program_destroy(t.p);
  }
  for (int ai = 0; ai < 3; ai++) {
    /* rows with a NaN first, last, in the middle beside inf, and none */
    enum { R = 4, C = 6 };
    nct t;
    nct_init(&t, NULL);
    int x, o;
    add_io(&t, R, C, &x, &o);
    trnc_nc_instr r = I(TRNC_NC_OP_TENSOR_REDUCE, ai == 1 ? TRNC_NC_GPSIMD : TRNC_NC_VECTOR);
    r.alu0 = (uint8_t)alus[ai];
    r.mode = 1;
    r.dst = SB(0, R, 1024, F32, 0);
    r.src[0] = SB(0, R, 0, F32, 1, S64(1), S64(C));
    nct_add(&t, r);
    int o1 = trnc_nc_program_add_buffer(t.p, "red", TRNC_NC_BUF_OUTPUT, F32, R * 4, 0);
    nct_add(&t, I_dma(1, HB(o1, 0, F32, 1, R, 0), SB(0, R, 1024, F32, 0)));
    const float in[R * C] = {NAN,  1.0f, -2.0f, INFINITY, 0.0f, -0.0f,      /* */
                             1.0f, -2.0f, INFINITY, -INFINITY, 0.0f, -NAN,  /* */
                             -INFINITY, INFINITY, NAN, 3.0f, -5.0f, 0.0f,   /* */
                             -0.0f, 0.0f, -INFINITY, 3.0f, -5.0f, 0.0f};
    float out[R * C], red[R];
    const void *ins[] = {in};
    void *outs[] = {out, red};
    nc_run(t.p, ins, outs);
    const float want[3][R] = {{NAN, NAN, NAN, 3.0f}, {NAN, NAN, NAN, -INFINITY}, {NAN, NAN, NAN, INFINITY}};
    for (int i = 0; i < R; i++) same_float(red[i], want[ai][i]);
    trnc_nc_program_destroy(t.p);
  }
}

static void test_nan_fill(void **state) {
  /* an internal HBM buffer never written reads back as NaN (0xFF bytes) */
  nct t;
  nct_init(&t, NULL);
  int tmpb = trnc_nc_program_add_buffer(t.p, "tmp", TRNC_NC_BUF_INTERNAL, F32, 64, 128);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, 64, 0);
  assert_int_equal(trnc_nc_program_scratch_bytes(t.p), 192);
  nct_add(&t, I_dma(0, SB(0, 4, 0, F32, 1, S64(1), S64(4)), HB(tmpb, 0, F32, 4, 4, 1, S64(1), S64(4))));
  nct_add(&t, I_dma(1, HB(o, 0, F32, 4, 4, 1, S64(1), S64(4)), SB(0, 4, 0, F32, 1, S64(1), S64(4))));
  float out[16];
  void *outs[] = {out};
  nc_run(t.p, NULL, outs);
  for (int i = 0; i < 16; i++) assert_true(isnan(out[i]));
  trnc_nc_program_destroy(t.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dma_strided_odd),   cmocka_unit_test(test_dma_cast_and_flatten),
      cmocka_unit_test(test_dma_transpose),     cmocka_unit_test(test_dma_gather_scatter),
      cmocka_unit_test(test_matmul_bf16_odd),   cmocka_unit_test(test_matmul_f32),
      cmocka_unit_test(test_matmul_f8),         cmocka_unit_test(test_matmul_f16),
      cmocka_unit_test(test_matmul_bf16_inexact_products),
      cmocka_unit_test(test_matmul_bf16_edge_shapes),
      cmocka_unit_test(test_matmul_bf16_special_values),
      cmocka_unit_test(test_tensor_transpose),  cmocka_unit_test(test_activation_all),
      cmocka_unit_test(test_tensor_tensor_all), cmocka_unit_test(test_tensor_scalar),
      cmocka_unit_test(test_tensor_reduce),     cmocka_unit_test(test_copy_casts),
      cmocka_unit_test(test_memset_iota_select), cmocka_unit_test(test_nan_fill),
      cmocka_unit_test(test_nan_max_min),       cmocka_unit_test(test_int32_exact),
      cmocka_unit_test(test_int_bitvec_scalar_and_iota), cmocka_unit_test(test_int_verifier_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
