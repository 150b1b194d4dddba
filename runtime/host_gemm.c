/*
 * host_gemm.c — the matmul micro-kernel of the JIT's host code.
 *
 * One block is TRNC_GEMM_MB rows x TRNC_GEMM_NB columns of fp32
 * accumulators held in vector registers while k runs 0..K-1 in order; the
 * column block of B (K x NB floats) stays in L1 while the row blocks pass.
 * Every variant adds the same products in the same order, so they agree
 * bit for bit with each other and with the interpreter (runtime/nc_sim.c):
 * no variant reassociates, and the separate multiply-then-add ones are
 * compiled without FP contraction (ISO C11, as the interpreter). The
 * fused variants run only when the caller has shown every product exact
 * (trnc_host_gemm's contract), where a fused multiply-add gives the same
 * number. The CPU picks the variant at run time: AVX-512 (8 x 2 zmm
 * accumulators) or portable C (which GCC vectorizes for the baseline ISA).
 */
#include "runtime/host_gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_X86 1
#include <immintrin.h>
#endif

enum { MB = TRNC_GEMM_MB, NB = TRNC_GEMM_NB };

static void gemm_portable(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, int64_t K,
                          int64_t nmb, int64_t nnb, int32_t acc) {
  for (int64_t nb = 0; nb < nnb; nb++)
    for (int64_t mb = 0; mb < nmb; mb++) {
      float c[MB][NB];
      float *cb = C + mb * MB * ldc + nb * NB;
      for (int j = 0; j < MB; j++)
        for (int n = 0; n < NB; n++) c[j][n] = acc ? cb[j * ldc + n] : 0.0f;
      for (int64_t k = 0; k < K; k++) {
        const float *a = A + k * lda + mb * MB, *b = B + k * ldb + nb * NB;
        for (int j = 0; j < MB; j++)
          for (int n = 0; n < NB; n++) c[j][n] += a[j] * b[n];
      }
      for (int j = 0; j < MB; j++)
        for (int n = 0; n < NB; n++) cb[j * ldc + n] = c[j][n];
    }
}

#ifdef GEMM_X86

#define FMA512(s, b, x) _mm512_fmadd_ps(s, b, x)
#define MULADD512(s, b, x) _mm512_add_ps(x, _mm512_mul_ps(s, b))

/* 8 rows x 2 zmm: 16 accumulators, 2 B vectors, 1 broadcast */
#define GEMM512(name, MAC)                                                                                         \
  __attribute__((target("avx512f,fma"))) static void name(const float *A, int64_t lda, const float *B, int64_t ldb, \
                                                           float *C, int64_t ldc, int64_t K, int64_t nmb,         \
                                                           int64_t nnb, int32_t acc) {                            \
    for (int64_t nb = 0; nb < nnb; nb++)                                                                           \
      for (int64_t mb = 0; mb < nmb; mb++) {                                                                       \
        float *c = C + mb * MB * ldc + nb * NB;                                                                    \
        const float *a = A + mb * MB, *b = B + nb * NB;                                                            \
        __m512 z = _mm512_setzero_ps();                                                                            \
        _Static_assert(MB == 8 && NB == 32, "the block is 8 rows x 2 zmm");                                       \
        __m512 x00 = acc ? _mm512_loadu_ps(c + 0 * ldc) : z, x01 = acc ? _mm512_loadu_ps(c + 0 * ldc + 16) : z;   \
        __m512 x10 = acc ? _mm512_loadu_ps(c + 1 * ldc) : z, x11 = acc ? _mm512_loadu_ps(c + 1 * ldc + 16) : z;   \
        __m512 x20 = acc ? _mm512_loadu_ps(c + 2 * ldc) : z, x21 = acc ? _mm512_loadu_ps(c + 2 * ldc + 16) : z;   \
        __m512 x30 = acc ? _mm512_loadu_ps(c + 3 * ldc) : z, x31 = acc ? _mm512_loadu_ps(c + 3 * ldc + 16) : z;   \
        __m512 x40 = acc ? _mm512_loadu_ps(c + 4 * ldc) : z, x41 = acc ? _mm512_loadu_ps(c + 4 * ldc + 16) : z;   \
        __m512 x50 = acc ? _mm512_loadu_ps(c + 5 * ldc) : z, x51 = acc ? _mm512_loadu_ps(c + 5 * ldc + 16) : z;   \
        __m512 x60 = acc ? _mm512_loadu_ps(c + 6 * ldc) : z, x61 = acc ? _mm512_loadu_ps(c + 6 * ldc + 16) : z;   \
        __m512 x70 = acc ? _mm512_loadu_ps(c + 7 * ldc) : z, x71 = acc ? _mm512_loadu_ps(c + 7 * ldc + 16) : z;   \
        for (int64_t k = 0; k < K; k++) {                                                                          \
          const float *ak = a + k * lda;                                                                           \
          __m512 b0 = _mm512_loadu_ps(b + k * ldb), b1 = _mm512_loadu_ps(b + k * ldb + 16), s;                     \
          s = _mm512_set1_ps(ak[0]), x00 = MAC(s, b0, x00), x01 = MAC(s, b1, x01);                                 \
          s = _mm512_set1_ps(ak[1]), x10 = MAC(s, b0, x10), x11 = MAC(s, b1, x11);                                 \
          s = _mm512_set1_ps(ak[2]), x20 = MAC(s, b0, x20), x21 = MAC(s, b1, x21);                                 \
          s = _mm512_set1_ps(ak[3]), x30 = MAC(s, b0, x30), x31 = MAC(s, b1, x31);                                 \
          s = _mm512_set1_ps(ak[4]), x40 = MAC(s, b0, x40), x41 = MAC(s, b1, x41);                                 \
          s = _mm512_set1_ps(ak[5]), x50 = MAC(s, b0, x50), x51 = MAC(s, b1, x51);                                 \
          s = _mm512_set1_ps(ak[6]), x60 = MAC(s, b0, x60), x61 = MAC(s, b1, x61);                                 \
          s = _mm512_set1_ps(ak[7]), x70 = MAC(s, b0, x70), x71 = MAC(s, b1, x71);                                 \
        }                                                                                                          \
        _mm512_storeu_ps(c + 0 * ldc, x00), _mm512_storeu_ps(c + 0 * ldc + 16, x01);                               \
        _mm512_storeu_ps(c + 1 * ldc, x10), _mm512_storeu_ps(c + 1 * ldc + 16, x11);                               \
        _mm512_storeu_ps(c + 2 * ldc, x20), _mm512_storeu_ps(c + 2 * ldc + 16, x21);                               \
        _mm512_storeu_ps(c + 3 * ldc, x30), _mm512_storeu_ps(c + 3 * ldc + 16, x31);                               \
        _mm512_storeu_ps(c + 4 * ldc, x40), _mm512_storeu_ps(c + 4 * ldc + 16, x41);                               \
        _mm512_storeu_ps(c + 5 * ldc, x50), _mm512_storeu_ps(c + 5 * ldc + 16, x51);                               \
        _mm512_storeu_ps(c + 6 * ldc, x60), _mm512_storeu_ps(c + 6 * ldc + 16, x61);                               \
        _mm512_storeu_ps(c + 7 * ldc, x70), _mm512_storeu_ps(c + 7 * ldc + 16, x71);                               \
      }                                                                                                            \
  }

GEMM512(gemm512_fused, FMA512)
GEMM512(gemm512_muladd, MULADD512)

#endif

void trnc_host_gemm(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, int64_t K,
                    int64_t nmb, int64_t nnb, int32_t acc, int32_t fused) {
#ifdef GEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    (fused ? gemm512_fused : gemm512_muladd)(A, lda, B, ldb, C, ldc, K, nmb, nnb, acc);
    return;
  }
#endif
  (void)fused; /* exact products: fused or not, the same numbers */
  gemm_portable(A, lda, B, ldb, C, ldc, K, nmb, nnb, acc);
}
