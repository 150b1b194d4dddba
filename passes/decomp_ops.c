/*
 * decomp_ops.c — decompositions of data-movement and scan ops into ops trnc
 * lowers (see decompose.h for the builder).
 *
 * cumsum(x, dim): with dim moved last and x seen as rows [M, N],
 *   y = x @ U,  U[j, i] = (j <= i)   (N x N, from two aranges and ge)
 * on TensorE in float32: products with 0/1 are exact and every partial sum
 * is a prefix sum, so integer inputs stay exact while their prefix sums stay
 * within +-2^24, which the legality scan's interval analysis proves for
 * integer results (ir/legality.c). The ones matrix bounds the scan length
 * (TRNC_CUMSUM_MAX, checked by the op's table entry).
 */
#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

/* The N x N float32 matrix U[j, i] = (j <= i). */
static trnc_ref upper_ones(trnc_db *b, int64_t len) {
  trnc_arg i32 = trnc_db_dtype(TRNC_I32);
  trnc_ref idx = DB(b, ARANGE, I(len), i32, NONE, NONE, NONE);
  trnc_ref col = DB(b, UNSQUEEZE, V(idx), I(0)), row = DB(b, UNSQUEEZE, V(idx), I(1));
  return trnc_db_cast(b, DB(b, GE, V(col), V(row)), TRNC_F32);
}

/* cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor */
trnc_status decomp_cumsum(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  trnc_type t = *trnc_db_type(b, x);
  if (t.rank == 0) return trnc_db_result(b, 0, trnc_db_f32(b, x));
  int64_t dim = trnc_arg_int(n, 1, 0);
  if (dim < 0) dim += t.rank;
  int last = t.rank - 1;
  trnc_ref moved = dim == last ? x : DB(b, TRANSPOSE, V(x), I(dim), I(last));
  int64_t shape[TRNC_MAX_RANK], len = t.shape[dim], rows = 1;
  for (int i = 0; i < t.rank; i++) {
    shape[i] = t.shape[i == dim ? last : i == last ? dim : i];
    if (i != last) rows *= shape[i];
  }
  trnc_ref x2 = trnc_db_view(b, trnc_db_f32(b, moved), 2, (const int64_t[]){rows, len});
  trnc_ref y = trnc_db_view(b, DB(b, MM, V(x2), V(upper_ones(b, len))), t.rank, shape);
  if (dim != last) y = DB(b, TRANSPOSE, V(y), I(dim), I(last));
  return trnc_db_result(b, 0, y);
}
