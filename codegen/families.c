/*
 * families.c — the op-family emitters beyond elementwise, matmul, reductions,
 * views and creation (which lower.c dispatches itself). One line per family,
 * above the sentinel.
 */
#include "codegen/kir/kir.h"
#include "codegen/lower.h"

const lw_family lw_families[] = {
    {"kir_data", kir_data_handles, kir_emit_data},       /* codegen/kir/data.c */
    {"kir_scatter", kir_scatter_handles, kir_emit_scatter}, /* codegen/kir/gather.c */
    {"kir_accum", kir_accum_handles, kir_emit_accumulate}, /* codegen/kir/gather.c, accum.c */
    {"convolution", lw_convolution_handles, lw_convolution_emit},
    {"pool", lw_conv_handles, lw_conv_emit},
    {"collective", lw_cc_handles, lw_cc_emit},
    {"attention", lw_attention_handles, lw_attention_emit},
    {NULL, NULL, NULL} /* sentinel: keeps the array non-empty */
};
const int lw_nfamilies = (int)(sizeof lw_families / sizeof lw_families[0]) - 1;
