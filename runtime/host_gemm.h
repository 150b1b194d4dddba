/*
 * host_gemm.h — the matmul micro-kernel that the JIT's host code calls
 * (runtime/host_gemm.c): plain C, compiled once with libtrnc, so no program
 * spends LLVM time on it and code loaded from the cache calls it too.
 */
#ifndef TRNC_RUNTIME_HOST_GEMM_H
#define TRNC_RUNTIME_HOST_GEMM_H

#include <stdint.h>

/** Rows and columns of one micro-kernel block: callers pad M and N to
 *  multiples of these. */
#define TRNC_GEMM_MB 8
#define TRNC_GEMM_NB 32

/**
 * C[m][n] = (acc ? C[m][n] : 0) + A[0][m] * B[0][n] + A[1][m] * B[1][n] + ...
 * + A[K-1][m] * B[K-1][n], each product rounded to fp32 and added in that
 * order (the interpreter's matmul, runtime/nc_sim.c), for m < nmb *
 * TRNC_GEMM_MB and n < nnb * TRNC_GEMM_NB. A, B, C are row-major fp32 with
 * lda, ldb, ldc floats per row; K, nmb, nnb >= 1; C does not overlap A or B.
 * fused != 0 lets the kernel use fused multiply-adds: the caller passes it
 * only when every product is exact in fp32, where fma(a, b, c) and c + a*b
 * are the same number. Picks AVX-512 or portable code for the CPU it runs
 * on; both give the same bits.
 */
void trnc_host_gemm(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, int64_t K,
                    int64_t nmb, int64_t nnb, int32_t acc, int32_t fused);

/** Significand bits (with the implicit one) of a matmul operand of trnc_dtype
 *  dt: bf16 8, fp16 11, fp8 e4m3 4, e5m2 3, anything else (fp32) 24. */
int trnc_host_gemm_sig_bits(int dt);

/**
 * Folds the exponents of n fp32 values into *emax (largest biased exponent,
 * 0..255) and *emin (smallest biased exponent of a nonzero value; 255 when
 * there is none): start with *emax = 0, *emin = 255. The JIT's decoding
 * loops (runtime/host_llvm.c, ebounds_update) compute the same bounds.
 */
void trnc_host_gemm_ebounds(const float *x, int64_t n, int32_t *emax, int32_t *emin);

/**
 * 1 when every product of an operand with sig_a significand bits and
 * exponent bounds amax/amin (trnc_host_gemm_ebounds) by one with sig_b bits
 * and bmax/bmin is exact in fp32 and normal (or zero): sig_a + sig_b <= 24,
 * no NaN, infinity or subnormal operand, and the biased exponents bound the
 * products within [2^-126, 2^127 * (2 - 2^-23)]. Then fma(a, b, c) ==
 * c + a*b for every accumulator c and trnc_host_gemm may fuse; 0 otherwise.
 * The JIT's emit_matmul (runtime/host_llvm.c) makes the same test.
 */
int32_t trnc_host_gemm_fusable(int sig_a, int sig_b, int32_t amax, int32_t amin, int32_t bmax, int32_t bmin);

#endif
