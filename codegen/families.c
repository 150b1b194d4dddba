/*
 * families.c — the op-family emitters beyond elementwise, matmul, reductions,
 * views and creation (which lower.c dispatches itself). One line per family,
 * above the sentinel.
 */
#include "codegen/lower.h"

const lw_family lw_families[] = {
    {NULL, NULL, NULL} /* sentinel: keeps the array non-empty */
};
const int lw_nfamilies = (int)(sizeof lw_families / sizeof lw_families[0]) - 1;
