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
 * number. The CPU picks the variant at run time: AVX-512 (8 rows x 3 zmm
 * accumulators, 8 x 2 and 8 x 1 for the last columns) or portable C (which
 * GCC vectorizes for the baseline ISA).
 */
#include "runtime/host_gemm.h"

#include <string.h>

#include "trnc/trnc.h"

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

/* One block: MB rows x V zmm (16 columns each) of accumulators, V B vectors
 * and one broadcast per k; V = 3 (24 accumulators) where the columns allow,
 * 2 and 1 for the rest (the loops unroll completely, so the arrays live in
 * registers). */
#define GEMM512_BLOCK(name, V, MAC)                                                                               \
  __attribute__((target("avx512f,fma"), always_inline)) static inline void name(                                   \
      const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int64_t K, int32_t acc) {  \
    __m512 x[MB][V];                                                                                                \
    _Pragma("GCC unroll 8") for (int i = 0; i < MB; i++) _Pragma("GCC unroll 3") for (int j = 0; j < V; j++)     \
        x[i][j] = acc ? _mm512_loadu_ps(c + i * ldc + 16 * j) : _mm512_setzero_ps();                             \
    for (int64_t k = 0; k < K; k++) {                                                                               \
      const float *ak = a + k * lda, *bk = b + k * ldb;                                                             \
      __m512 bv[V];                                                                                                 \
      _Pragma("GCC unroll 3") for (int j = 0; j < V; j++) bv[j] = _mm512_loadu_ps(bk + 16 * j);                   \
      _Pragma("GCC unroll 8") for (int i = 0; i < MB; i++) {                                                       \
        __m512 s = _mm512_set1_ps(ak[i]);                                                                           \
        _Pragma("GCC unroll 3") for (int j = 0; j < V; j++) x[i][j] = MAC(s, bv[j], x[i][j]);                     \
      }                                                                                                             \
    }                                                                                                               \
    _Pragma("GCC unroll 8") for (int i = 0; i < MB; i++) _Pragma("GCC unroll 3") for (int j = 0; j < V; j++)     \
        _mm512_storeu_ps(c + i * ldc + 16 * j, x[i][j]);                                                           \
  }

/* columns in chunks of 48 (3 zmm) while at least 48 remain, then 32 or 16
 * (the width is a multiple of NB = 32); each chunk of B (K x 48 floats,
 * at most 24 KiB) stays in L1 while the row blocks pass */
#define GEMM512(name, MAC)                                                                                         \
  GEMM512_BLOCK(name##_v3, 3, MAC)                                                                                 \
  GEMM512_BLOCK(name##_v2, 2, MAC)                                                                                 \
  GEMM512_BLOCK(name##_v1, 1, MAC)                                                                                 \
  __attribute__((target("avx512f,fma"))) static void name(const float *A, int64_t lda, const float *B, int64_t ldb, \
                                                           float *C, int64_t ldc, int64_t K, int64_t nmb,         \
                                                           int64_t nnb, int32_t acc) {                            \
    _Static_assert(NB == 32, "column chunks of 48, 32 and 16 cover multiples of 32");                           \
    for (int64_t n0 = 0, w = nnb * NB; n0 < w;) {                                                                  \
      int64_t v = w - n0 >= 48 ? 3 : (w - n0) / 16;                                                                \
      for (int64_t mb = 0; mb < nmb; mb++) {                                                                       \
        const float *a = A + mb * MB, *b = B + n0;                                                                 \
        float *c = C + mb * MB * ldc + n0;                                                                         \
        if (v == 3) name##_v3(a, lda, b, ldb, c, ldc, K, acc);                                                     \
        else if (v == 2) name##_v2(a, lda, b, ldb, c, ldc, K, acc);                                                \
        else name##_v1(a, lda, b, ldb, c, ldc, K, acc);                                                            \
      }                                                                                                            \
      n0 += 16 * v;                                                                                                \
    }                                                                                                              \
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

int trnc_host_gemm_sig_bits(int dt) {
  switch (dt) {
    case TRNC_BF16: return 8;
    case TRNC_F16: return 11;
    case TRNC_F8E4M3: return 4;
    case TRNC_F8E5M2: return 3;
    default: return 24;
  }
}

/* signed 32-bit max/min of values below 2^8: vectorized for the baseline
 * ISA (compare and select) and, on CPUs that have them, with AVX2's or
 * AVX-512's integer max/min */
#define EBOUNDS(name, attr)                                                                  \
  attr static void name(const float *x, int64_t n, int32_t *emax, int32_t *emin) {          \
    int32_t mx = *emax, mn = *emin;                                                          \
    for (int64_t i = 0; i < n; i++) {                                                        \
      int32_t bits;                                                                          \
      memcpy(&bits, &x[i], 4);                                                               \
      int32_t mag = bits & 0x7fffffff, ex = mag >> 23, exn = mag ? ex : 255;                 \
      mx = ex > mx ? ex : mx;                                                                \
      mn = exn < mn ? exn : mn;                                                              \
    }                                                                                        \
    *emax = mx;                                                                              \
    *emin = mn;                                                                              \
  }

EBOUNDS(ebounds_portable, )
#ifdef GEMM_X86
EBOUNDS(ebounds512, __attribute__((target("avx512f,avx512bw"))))
EBOUNDS(ebounds_avx2, __attribute__((target("avx2"))))
#endif

void trnc_host_gemm_ebounds(const float *x, int64_t n, int32_t *emax, int32_t *emin) {
#ifdef GEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    ebounds512(x, n, emax, emin);
    return;
  }
  if (__builtin_cpu_supports("avx2")) {
    ebounds_avx2(x, n, emax, emin);
    return;
  }
#endif
  ebounds_portable(x, n, emax, emin);
}

int32_t trnc_host_gemm_fusable(int sig_a, int sig_b, int32_t amax, int32_t amin, int32_t bmax, int32_t bmin) {
  return sig_a + sig_b <= 24 && amax <= 254 && bmax <= 254 && amax + bmax <= 380 && amin >= 1 && bmin >= 1 &&
         amin + bmin >= 128;
}
