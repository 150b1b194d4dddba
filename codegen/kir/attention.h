/*
 * attention.h — helpers shared by the flash-attention schedules
 * (codegen/kir/attention.c forward, attention_bw.c backward). Internal to
 * those two files.
 */
#ifndef TRNC_CODEGEN_KIR_ATTENTION_H
#define TRNC_CODEGEN_KIR_ATTENTION_H

#include "codegen/kir/kir.h"

#define FA_MM_N 512        /* moving free size of one matmul (one PSUM bank) */
#define FA_MASK (-3.0e38f) /* added above the causal diagonal: exp() gives 0 */

static inline int64_t fa_min(int64_t a, int64_t b) { return a < b ? a : b; }

/** HBM access pattern: `rows` partitions from element `off` of buffer
 *  (dtype dt), row stride `rs` elements, `cols` contiguous elements per row. */
trnc_nc_ap fa_hbm(int32_t buffer, trnc_dtype dt, int64_t off, int64_t rows, int64_t rs, int64_t cols);
/** lw_emit of one instruction reading r0..r2 and writing w0, w1 (NULL: none). */
trnc_status fa_emit(lw *L, trnc_nc_instr *in, lw_tile *r0, lw_tile *r1, lw_tile *r2, lw_tile *w0,
                    lw_tile *w1);
/** [np, 1] fp32 column at byte offset off of tile t. */
trnc_nc_ap fa_col(const lw_tile *t, int64_t np, int64_t off);
/** The [128, 128] identity and causal mask (p - j >= 0 ? 0 : FA_MASK) in
 *  mask_dt, built on GpSimd; a matmul of the identity with the mask adds
 *  the mask to scores in PSUM. */
trnc_status fa_causal_tiles(lw *L, trnc_dtype mask_dt, lw_tile **ident, lw_tile **mask);
/** Operand `arg` of n as a tv, copied contiguous when its last dim is strided. */
trnc_status fa_dense_rows(lw *L, const trnc_node *n, uint32_t arg, lw_tv *out);

/** True if the SDPA backward node n is lowered by attention_bw.c (the
 *  passes/decomp_attention.c shape rule asks the same questions first). */
bool kir_attention_bw_handles(const trnc_graph *g, const trnc_node *n);
/** Emits the flash-attention backward of node n (attention_bw.c). */
trnc_status kir_attention_bw_emit(lw *L, const trnc_node *n);

#endif
