/*
 * shape.h — shape rules of the ops in ir/ops.def, and the conventions their
 * outputs follow (read by the verifier, ir/verify.c).
 *
 * A rule fills out[0..nout) with the expected type of each output:
 *  - dtype TRNC_DTYPE_INVALID   : any floating dtype is accepted (statistics
 *                                 such as layer_norm's mean/rstd, which torch
 *                                 keeps in fp32 for half inputs on some paths)
 *  - rank  TRNC_RANK_NONE       : the output must be None (masked-off grads)
 *  - shape[i] == -1             : any size accepted in that dim
 *  - offset == -1 (the default) : strides unconstrained beyond "dense and
 *                                 non-overlapping"; views set exact strides
 *                                 and storage offset instead.
 */
#ifndef TRNC_IR_SHAPE_H
#define TRNC_IR_SHAPE_H

#include "ir/ir.h"

#define TRNC_RANK_NONE 0xFF

#define OP(id, target, flags, args, rule, dtypes, rank, check, limits, decomp)            \
  trnc_status rule(const trnc_graph *g, const trnc_node *n, trnc_type *out,  \
                   uint32_t nout, trnc_diags *d);
#include "ir/ops.def"
#undef OP

/** torch's type promotion (result_type) for a node's tensor and scalar
 *  arguments at the given argument positions; see shape.c. */
trnc_dtype trnc_promote_args(const trnc_graph *g, const trnc_node *n, const int *argi, int nargi);

/** Contiguous strides for t's shape, offset 0. */
void trnc_type_set_contiguous(trnc_type *t);
/** True if the strides describe a dense, non-overlapping layout (some
 *  permutation of contiguous strides; size-1 and size-0 dims ignored). */
bool trnc_type_is_dense(const trnc_type *t);

#endif
