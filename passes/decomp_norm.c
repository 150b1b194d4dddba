/*
 * decomp_norm.c — norms in ops trnc lowers (see decompose.h).
 *
 * linalg_vector_norm(x, ord) over dims, in float32:
 *   ord 2: sqrt(sum(x*x))   ord 1: sum(|x|)   ord +-inf: amax/amin(|x|)
 *   ord 0: the count of non-zeros   else: sum(|x|^ord)^(1/ord)
 * native_group_norm(x [N, C, *], weight, bias, N, C, HxW, G, eps): x seen as
 * [N, G, C/G * HxW], in float32,
 *   mean = mean(x),  d = x - mean,  rstd = 1/sqrt(mean(d*d) + eps),
 *   out = d * rstd * weight[c] + bias[c];  mean and rstd come out [N, G].
 * The variance is two-pass (centred before squaring), as accurate as eager's
 * Welford moments for the values eager handles. PyTorch decomposes the
 * backward itself (native_group_norm_backward is in its Core ATen table).
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,
 * ScalarType? dtype=None) -> Tensor */
trnc_status decomp_vector_norm(trnc_db *b, const trnc_node *n) {
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  double p = trnc_arg_number(&n->args[1], 2.0);
  trnc_arg dim = n->args[2], keep = trnc_db_bool(trnc_arg_bool(n, 3, false));
  trnc_ref r;
  if (p == 2.0) {
    r = DB(b, SQRT, V(DB(b, SUM, V(DB(b, MUL, V(x), V(x))), dim, keep, NONE)));
  } else if (isinf(p)) {
    /* amax/amin take a list of dims: none means every dim */
    trnc_arg dims = dim.kind == TRNC_ARG_NONE ? trnc_db_ints(b, NULL, 0) : dim;
    trnc_ref a = DB(b, ABS, V(x));
    r = p > 0 ? DB(b, AMAX, V(a), dims, keep) : DB(b, AMIN, V(a), dims, keep);
  } else if (p == 0.0) {
    trnc_ref nz = trnc_db_cast(b, DB(b, NE_SCALAR, V(x), F(0.0)), TRNC_F32);
    r = DB(b, SUM, V(nz), dim, keep, NONE);
  } else if (p == 1.0) {
    r = DB(b, SUM, V(DB(b, ABS, V(x))), dim, keep, NONE);
  } else {
    trnc_ref s = DB(b, SUM, V(DB(b, POW_SCALAR, V(DB(b, ABS, V(x))), F(p))), dim, keep, NONE);
    r = DB(b, POW_SCALAR, V(s), F(1.0 / p));
  }
  return trnc_db_result(b, 0, r);
}

/* native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
 * SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor) */
trnc_status decomp_group_norm(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  int64_t N = trnc_arg_int(n, 3, 0), C = trnc_arg_int(n, 4, 0), hw = trnc_arg_int(n, 5, 0);
  int64_t G = trnc_arg_int(n, 6, 1);
  double eps = trnc_arg_number(&n->args[7], 1e-5);
  trnc_ref x = trnc_db_view(b, trnc_db_f32(b, n->args[0].u.ref), 3,
                            (const int64_t[]){N, G, C / G * hw});
  trnc_arg last = trnc_db_ints(b, (const int64_t[]){-1}, 1), keep = trnc_db_bool(true);
  trnc_ref mean = DB(b, MEAN, V(x), last, keep, NONE);
  trnc_ref d = DB(b, SUB, V(x), V(mean), I(1));
  trnc_ref var = DB(b, MEAN, V(DB(b, MUL, V(d), V(d))), last, keep, NONE);
  trnc_ref rstd = DB(b, RSQRT, V(DB(b, ADD_SCALAR, V(var), F(eps), I(1))));
  trnc_ref y = trnc_db_view(b, DB(b, MUL, V(d), V(rstd)), 3, (const int64_t[]){N, C, hw});
  for (uint32_t a = 1; a <= 2; a++) {
    if (n->args[a].kind != TRNC_ARG_VALUE) continue;
    trnc_ref p = trnc_db_view(b, trnc_db_f32(b, n->args[a].u.ref), 2, (const int64_t[]){C, 1});
    y = a == 1 ? DB(b, MUL, V(y), V(p)) : DB(b, ADD, V(y), V(p), I(1));
  }
  trnc_status st = trnc_db_result(b, 0, trnc_db_view(b, y, t.rank, t.shape));
  const int64_t stat[2] = {N, G};
  if (!st) st = trnc_db_result(b, 1, trnc_db_view(b, mean, 2, stat));
  if (!st) st = trnc_db_result(b, 2, trnc_db_view(b, rstd, 2, stat));
  return st;
}

/* _native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias,
 * bool training, float momentum, float eps) -> (out, save_mean, save_invstd) */
trnc_status decomp_bn_no_stats(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  int64_t C = t.shape[1], dims[TRNC_MAX_RANK], pshape[TRNC_MAX_RANK];
  int nd = 0;
  for (int i = 0; i < t.rank; i++) {
    if (i != 1) dims[nd++] = i;
    pshape[i] = i == 1 ? C : 1;
  }
  double eps = trnc_arg_number(&n->args[5], 1e-5);
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  trnc_arg over = trnc_db_ints(b, dims, nd), keep = trnc_db_bool(true);
  trnc_ref mean = DB(b, MEAN, V(x), over, keep, NONE);
  trnc_ref d = DB(b, SUB, V(x), V(mean), I(1));
  trnc_ref var = DB(b, MEAN, V(DB(b, MUL, V(d), V(d))), over, keep, NONE);
  trnc_ref rstd = DB(b, RSQRT, V(DB(b, ADD_SCALAR, V(var), F(eps), I(1))));
  trnc_ref y = DB(b, MUL, V(d), V(rstd));
  for (uint32_t a = 1; a <= 2; a++) {
    if (n->args[a].kind != TRNC_ARG_VALUE) continue;
    trnc_ref p = trnc_db_view(b, trnc_db_f32(b, n->args[a].u.ref), t.rank - 1, pshape + 1);
    y = a == 1 ? DB(b, MUL, V(y), V(p)) : DB(b, ADD, V(y), V(p), I(1));
  }
  trnc_status st = trnc_db_result(b, 0, y);
  if (!st) st = trnc_db_result(b, 1, trnc_db_view(b, mean, 1, &C));
  if (!st) st = trnc_db_result(b, 2, trnc_db_view(b, rstd, 1, &C));
  return st;
}

/* _cdist_forward(x1 [..., P, M], x2 [..., R, M], p, compute_mode) and
 * _cdist_backward(grad [..., P, R], x1, x2, p, cdist): over the differences
 *   diff[..., i, j, m] = x1[..., i, m] - x2[..., j, m],
 * the forward is the p-norm of each row of diff (as vector_norm above; eager's
 * direct path, never its mm path for p = 2), the backward
 *   grad_x1[..., i, m] = sum_j grad[i, j] * t[i, j, m],
 *   t = sign(diff) |diff|^(p-1) / cdist^(p-1), 0 where cdist == 0
 *   (p = 1: sign(diff); p = 2: diff / cdist; inf: sign(diff) where |diff| ==
 *   cdist; 0: 0; p < 1 also 0 where diff == 0), as eager's kernels. */
/* The p-distances of x1's rows from x2's, [..., P, R]. */
static trnc_ref cdist_fw(trnc_db *b, trnc_ref x1, trnc_ref x2, double p) {
  trnc_ref diff = DB(b, SUB, V(DB(b, UNSQUEEZE, V(x1), I(-2))), V(DB(b, UNSQUEEZE, V(x2), I(-3))), I(1));
  int64_t last = -1;
  trnc_arg dl = trnc_db_ints(b, &last, 1), keep = trnc_db_bool(false);
  trnc_ref ad = DB(b, ABS, V(diff));
  if (p == 0) return DB(b, SUM, V(DB(b, NE_SCALAR, V(diff), I(0))), dl, keep, trnc_db_dtype(TRNC_F32));
  if (p == 1) return DB(b, SUM, V(ad), dl, keep, NONE);
  if (p == 2) return DB(b, SQRT, V(DB(b, SUM, V(DB(b, MUL, V(diff), V(diff))), dl, keep, NONE)));
  if (isinf(p)) return DB(b, AMAX, V(ad), dl, keep);
  return DB(b, POW_SCALAR, V(DB(b, SUM, V(DB(b, POW_SCALAR, V(ad), F(p))), dl, keep, NONE)), F(1 / p));
}

/* The gradient of x1 from grad [..., P, R] of cdist(x1, x2) = c. */
static trnc_ref cdist_bw(trnc_db *b, trnc_arg grad, trnc_ref x1, trnc_ref x2, double p, trnc_arg cd) {
  if (p == 0) return DB(b, FULL_LIKE, V(x1), I(0), NONE, NONE, NONE, NONE, NONE);
  trnc_ref diff = DB(b, SUB, V(DB(b, UNSQUEEZE, V(x1), I(-2))), V(DB(b, UNSQUEEZE, V(x2), I(-3))), I(1));
  trnc_ref c = DB(b, UNSQUEEZE, cd, I(-1)), g = DB(b, UNSQUEEZE, grad, I(-1));
  trnc_ref sg = DB(b, SIGN, V(diff)), t;
  if (p == 1) {
    t = sg;
  } else if (isinf(p)) {
    t = DB(b, MASKED_FILL, V(sg), V(DB(b, NE, V(DB(b, ABS, V(diff))), V(c))), I(0));
  } else {
    trnc_ref num = p == 2 ? diff : DB(b, MUL, V(sg), V(DB(b, POW_SCALAR, V(DB(b, ABS, V(diff))), F(p - 1))));
    t = DB(b, DIV, V(num), V(p == 2 ? c : DB(b, POW_SCALAR, V(c), F(p - 1))));
    trnc_ref zero = DB(b, EQ_SCALAR, V(c), I(0));
    if (p < 1) zero = DB(b, LOGICAL_OR, V(DB(b, EXPAND, V(zero), trnc_db_ints(b, trnc_db_type(b, diff)->shape,
                                                                            trnc_db_type(b, diff)->rank),
                                           trnc_db_bool(false))),
                         V(DB(b, EQ_SCALAR, V(diff), I(0))));
    t = DB(b, MASKED_FILL, V(t), V(zero), I(0));
  }
  int64_t rows = -2;
  return DB(b, SUM, V(DB(b, MUL, V(t), V(g))), trnc_db_ints(b, &rows, 1), trnc_db_bool(false), NONE);
}

trnc_status decomp_cdist(trnc_db *b, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_CDIST_BACKWARD;
  uint32_t a = bw ? 1 : 0;
  trnc_ref x1 = n->args[a].u.ref, x2 = n->args[a + 1].u.ref;
  double p = trnc_arg_number(&n->args[a + 2], 2.0);
  return trnc_db_result(b, 0, bw ? cdist_bw(b, n->args[0], x1, x2, p, n->args[4]) : cdist_fw(b, x1, x2, p));
}

/* The flat indices i N + j of the pairs i < j of N rows, row-major ([N(N-1)/2] int64). */
static trnc_ref pair_index(trnc_db *b, int64_t rows) {
  trnc_ref parts[TRNC_PDIST_MAX];
  int k = 0;
  for (int64_t i = 0; i + 1 < rows; i++)
    parts[k++] = DB(b, ARANGE_START, I(i * rows + i + 1), I((i + 1) * rows), trnc_db_dtype(TRNC_I64), NONE,
                    NONE, NONE);
  return k == 1 ? parts[0] : DB(b, CAT, trnc_db_vals(b, parts, k), I(0));
}

/* _pdist_forward(Tensor self [N, M], float p) -> [N(N-1)/2] and
 * _pdist_backward(Tensor grad, Tensor self, float p, Tensor pdist): cdist(x, x)
 * at the pairs i < j; the gradient of x is cdist's for the pair gradients
 * placed at (i, j) and (j, i) of an N x N matrix (d(i, j) moves with x_i and x_j). */
trnc_status decomp_pdist(trnc_db *b, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_PDIST_BACKWARD;
  trnc_ref x = n->args[bw ? 1 : 0].u.ref;
  const trnc_type xt = *trnc_db_type(b, x);
  double p = trnc_arg_number(&n->args[bw ? 2 : 1], 2.0);
  int64_t rows = xt.shape[0], pairs = rows * (rows - 1) / 2, nn = rows * rows;
  if (pairs == 0) {
    trnc_dtype dt = trnc_db_type(b, n->outs[0])->dtype;
    return trnc_db_result(b, 0, bw ? DB(b, FULL_LIKE, V(x), I(0), NONE, NONE, NONE, NONE, NONE)
                                   : DB(b, ZEROS, trnc_db_ints(b, &pairs, 1), trnc_db_dtype(dt), NONE, NONE, NONE));
  }
  trnc_ref full = cdist_fw(b, x, x, p), idx = pair_index(b, rows);
  if (!bw) return trnc_db_result(b, 0, DB(b, INDEX_SELECT, V(trnc_db_view(b, full, 1, &nn)), I(0), V(idx)));
  trnc_ref zeros = DB(b, ZEROS, trnc_db_ints(b, &nn, 1), trnc_db_dtype(xt.dtype), NONE, NONE, NONE);
  trnc_ref g = trnc_db_view(b, DB(b, SCATTER_SRC, V(zeros), I(0), V(idx), n->args[0]), 2,
                            (const int64_t[]){rows, rows});
  g = DB(b, ADD, V(g), V(DB(b, T, V(g))), I(1));
  return trnc_db_result(b, 0, cdist_bw(b, V(g), x, x, p, V(full)));
}
