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

#endif
