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

/* Shifted two-pass moments of x (float32) over dims[0..nd): K = x at index
 * 0 of every reduced dim, xs = x - K (exact for a constant row, and precise
 * when |mean| >> std), ms = mean(xs), d = xs - ms; returns d, and the mean
 * ms + K (kept dims) in *mean. */
static trnc_ref shifted(trnc_db *b, trnc_ref x, const int64_t *dims, int nd, trnc_ref *mean) {
  if (!trnc_type_numel(trnc_db_type(b, x))) { /* no first element: mean(x) is 0 / 0 */
    *mean = DB(b, MEAN, V(x), trnc_db_ints(b, dims, nd), trnc_db_bool(true), NONE);
    return DB(b, SUB, V(x), V(*mean), I(1));
  }
  trnc_ref k = x;
  for (int i = 0; i < nd; i++) k = DB(b, SLICE, V(k), I(dims[i]), I(0), I(1), I(1));
  trnc_ref xs = DB(b, SUB, V(x), V(k), I(1));
  trnc_ref ms = DB(b, MEAN, V(xs), trnc_db_ints(b, dims, nd), trnc_db_bool(true), NONE);
  *mean = DB(b, ADD, V(ms), V(k), I(1));
  return DB(b, SUB, V(xs), V(ms), I(1));
}

/* var.correction / var_mean.correction(Tensor self, int[1]? dim, *, Scalar? correction=None,
 * bool keepdim=False), in float32 with shifted two-pass moments:
 *   var = sum(d^2) / max(0, N - correction)
 * (an empty or too short reduction divides by 0: NaN or inf, as eager). */
trnc_status decomp_var(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  const trnc_type *o = trnc_db_type(b, n->outs[0]);
  double correction = n->args[2].kind == TRNC_ARG_NONE ? 1.0 : trnc_arg_number(&n->args[2], 1.0);
  int64_t on = trnc_type_numel(o), N = on ? trnc_type_numel(&t) / on : 0;
  double denom = (double)N - correction > 0 ? (double)N - correction : 0.0;
  int64_t dims[TRNC_MAX_RANK];
  int nd = 0;
  const trnc_arg *dl = &n->args[1];
  uint32_t m = 0;
  if (dl->kind == TRNC_ARG_LIST && dl->u.list.n)
    for (uint32_t i = 0; i < dl->u.list.n; i++) {
      int64_t d = dl->u.list.items[i].u.i;
      m |= 1u << (d < 0 ? d + t.rank : d);
    }
  else m = (1u << t.rank) - 1;
  for (int i = 0; i < t.rank; i++)
    if (m & (1u << i)) dims[nd++] = i;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref), mean;
  if (!nd) { /* a 0-d input: one element, variance 0 / max(0, 1 - correction) */
    x = trnc_db_view(b, x, 1, (const int64_t[]){1});
    dims[nd++] = 0;
  }
  trnc_ref d = shifted(b, x, dims, nd, &mean);
  trnc_ref m2 = DB(b, SUM, V(DB(b, MUL, V(d), V(d))), trnc_db_ints(b, dims, nd), trnc_db_bool(true), NONE);
  trnc_ref var = trnc_db_view(b, DB(b, DIV_SCALAR, V(m2), F(denom)), o->rank, o->shape);
  trnc_status st = trnc_db_result(b, 0, var);
  if (!st && n->op == TRNC_OP_VAR_MEAN) st = trnc_db_result(b, 1, trnc_db_view(b, mean, o->rank, o->shape));
  return st;
}

/* The batch-norm layout of x [N, C, *]: the dims but C, and [C, 1, ...]
 * right-aligned to x (a per-channel vector's view). */
static int bn_layout(const trnc_type *t, int64_t *dims, int64_t *pshape) {
  int nd = 0;
  for (int i = 0; i < t->rank; i++) {
    if (i != 1) dims[nd++] = i;
    pshape[i] = i == 1 ? t->shape[1] : 1;
  }
  return nd;
}

static trnc_ref per_channel(trnc_db *b, trnc_ref v, const trnc_type *t, const int64_t *pshape) {
  return trnc_db_view(b, trnc_db_f32(b, v), t->rank - 1, pshape + 1);
}

/* Output k of a batch norm: v (float32 [C]) in the dtype the node declares,
 * or an empty [0] tensor where it declares no elements. */
static trnc_status bn_result(trnc_db *b, const trnc_node *n, uint32_t k, trnc_ref v) {
  if (trnc_db_status(b) || trnc_db_graph(b)->values[n->outs[k]].is_none) return trnc_db_status(b);
  const trnc_type *o = trnc_db_type(b, n->outs[k]);
  if (trnc_type_numel(o) == 0) {
    int64_t zero = 0;
    v = DB(b, EMPTY, trnc_db_ints(b, &zero, 1), trnc_db_dtype(o->dtype), NONE, NONE, NONE, NONE);
  }
  return trnc_db_result(b, k, v);
}

/* _native_batch_norm_legit_functional(input, weight, bias, running_mean, running_var, bool training,
 * float momentum, float eps) -> (out, save_mean, save_invstd, new_running_mean, new_running_var)
 * and _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
 * momentum, eps) -> (out, [0], [0]), in float32 as torch's decomposition
 * (torch/_decomp/decompositions.py, native_batch_norm_helper):
 *   training:  mean, var over every dim but C (biased, two-pass); rstd = rsqrt(var + eps);
 *              running_mean' = m * mean + (1 - m) * running_mean,
 *              running_var'  = m * var * n / (n - 1) + (1 - m) * running_var  (n = numel / C)
 *   inference: mean = running_mean, rstd = 1 / sqrt(running_var + eps)
 *   out = (x - mean) * rstd * weight[c] + bias[c]. */
trnc_status decomp_batch_norm(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  bool infer = n->op == TRNC_OP_BATCH_NORM_INFER;
  bool training = !infer && trnc_arg_bool(n, 5, true);
  double momentum = trnc_arg_number(&n->args[infer ? 5 : 6], 0.1), eps = trnc_arg_number(&n->args[infer ? 6 : 7], 1e-5);
  int64_t dims[TRNC_MAX_RANK], pshape[TRNC_MAX_RANK], C = t.shape[1];
  int nd = bn_layout(&t, dims, pshape);
  trnc_arg over = trnc_db_ints(b, dims, nd), keep = trnc_db_bool(true);
  bool has_rm = n->args[3].kind == TRNC_ARG_VALUE, has_rv = n->args[4].kind == TRNC_ARG_VALUE;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref), mean, rstd, d;
  if (training) {
    d = shifted(b, x, dims, nd, &mean);
    trnc_ref var = DB(b, MEAN, V(DB(b, MUL, V(d), V(d))), over, keep, NONE);
    rstd = DB(b, RSQRT, V(DB(b, ADD_SCALAR, V(var), F(eps), I(1))));
    mean = trnc_db_view(b, mean, 1, &C);
    rstd = trnc_db_view(b, rstd, 1, &C);
    var = trnc_db_view(b, var, 1, &C);
    if (!infer && has_rm) {
      trnc_ref rm = trnc_db_f32(b, n->args[3].u.ref);
      trnc_ref nm = DB(b, ADD, V(DB(b, MUL_SCALAR, V(mean), F(momentum))), V(DB(b, MUL_SCALAR, V(rm), F(1 - momentum))), I(1));
      bn_result(b, n, 3, nm);
    }
    if (!infer && has_rv) {
      double cnt = (double)trnc_type_numel(&t) / (double)(C ? C : 1);
      trnc_ref rv = trnc_db_f32(b, n->args[4].u.ref);
      trnc_ref unb = DB(b, MUL_SCALAR, V(var), F(cnt / (cnt - 1)));
      trnc_ref nv = DB(b, ADD, V(DB(b, MUL_SCALAR, V(unb), F(momentum))), V(DB(b, MUL_SCALAR, V(rv), F(1 - momentum))), I(1));
      bn_result(b, n, 4, nv);
    }
  } else {
    if (!has_rm || !has_rv) return trnc_db_fail(b, "batch norm in inference needs running_mean and running_var");
    mean = trnc_db_f32(b, n->args[3].u.ref);
    rstd = DB(b, RECIPROCAL, V(DB(b, SQRT, V(DB(b, ADD_SCALAR, V(trnc_db_f32(b, n->args[4].u.ref)), F(eps), I(1))))));
    d = DB(b, SUB, V(x), V(trnc_db_view(b, mean, t.rank - 1, pshape + 1)), I(1));
    if (!infer) { /* the functional form in eval: the running stats pass through */
      if (has_rm) bn_result(b, n, 3, mean);
      if (has_rv) bn_result(b, n, 4, trnc_db_f32(b, n->args[4].u.ref));
    }
  }
  trnc_ref y = DB(b, MUL, V(d), V(trnc_db_view(b, rstd, t.rank - 1, pshape + 1)));
  if (n->args[1].kind == TRNC_ARG_VALUE) y = DB(b, MUL, V(y), V(per_channel(b, n->args[1].u.ref, &t, pshape)));
  if (n->args[2].kind == TRNC_ARG_VALUE) y = DB(b, ADD, V(y), V(per_channel(b, n->args[2].u.ref, &t, pshape)), I(1));
  trnc_status st = trnc_db_result(b, 0, y);
  if (!st) st = bn_result(b, n, 1, mean);
  if (!st) st = bn_result(b, n, 2, rstd);
  return st;
}

/* native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd, bool train, float eps, bool[3] output_mask) in float32, as torch's
 * decomposition: over every dim but C,
 *   gsum = sum(g);  dot = sum(g * (x - mean));  n = numel / C
 *   train: dx = (g - (x - mean) * dot / n * rstd^2 - gsum / n) * rstd * w
 *   eval:  dx = g * rstd * w   (mean, rstd from the running stats)
 *   dw = dot * rstd;  db = gsum. */
trnc_status decomp_batch_norm_bw(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[1].u.ref);
  bool train = trnc_arg_bool(n, 7, true);
  double eps = trnc_arg_number(&n->args[8], 1e-5);
  int64_t dims[TRNC_MAX_RANK], pshape[TRNC_MAX_RANK], C = t.shape[1];
  int nd = bn_layout(&t, dims, pshape);
  double cnt = (double)trnc_type_numel(&t) / (double)(C ? C : 1);
  uint32_t mi = train ? 5 : 3, ri = train ? 6 : 4;
  if (n->args[mi].kind != TRNC_ARG_VALUE || n->args[ri].kind != TRNC_ARG_VALUE)
    return trnc_db_fail(b, "batch norm backward needs the saved (or running) statistics");
  trnc_ref mean = trnc_db_f32(b, n->args[mi].u.ref), rstd = trnc_db_f32(b, n->args[ri].u.ref);
  if (!train) rstd = DB(b, RSQRT, V(DB(b, ADD_SCALAR, V(rstd), F(eps), I(1))));
  trnc_ref g = trnc_db_f32(b, n->args[0].u.ref), x = trnc_db_f32(b, n->args[1].u.ref);
  trnc_arg over = trnc_db_ints(b, dims, nd), nokeep = trnc_db_bool(false);
  trnc_ref d = DB(b, SUB, V(x), V(trnc_db_view(b, mean, t.rank - 1, pshape + 1)), I(1));
  trnc_ref gsum = DB(b, SUM, V(g), over, nokeep, NONE);
  trnc_ref dot = DB(b, SUM, V(DB(b, MUL, V(g), V(d))), over, nokeep, NONE);
  trnc_ref scale = n->args[2].kind == TRNC_ARG_VALUE ? DB(b, MUL, V(rstd), V(trnc_db_f32(b, n->args[2].u.ref))) : rstd;
  trnc_ref dx;
  if (train) {
    trnc_ref proj = DB(b, MUL, V(DB(b, MUL_SCALAR, V(dot), F(1.0 / cnt))), V(DB(b, MUL, V(rstd), V(rstd))));
    trnc_ref p = DB(b, MUL, V(d), V(trnc_db_view(b, proj, t.rank - 1, pshape + 1)));
    trnc_ref gm = trnc_db_view(b, DB(b, MUL_SCALAR, V(gsum), F(1.0 / cnt)), t.rank - 1, pshape + 1);
    dx = DB(b, SUB, V(DB(b, SUB, V(g), V(p), I(1))), V(gm), I(1));
    dx = DB(b, MUL, V(dx), V(trnc_db_view(b, scale, t.rank - 1, pshape + 1)));
  } else {
    dx = DB(b, MUL, V(g), V(trnc_db_view(b, scale, t.rank - 1, pshape + 1)));
  }
  const trnc_graph *gr = trnc_db_graph(b);
  trnc_status st = gr->values[n->outs[0]].is_none ? TRNC_OK : trnc_db_result(b, 0, dx);
  if (!st && !gr->values[n->outs[1]].is_none) st = trnc_db_result(b, 1, DB(b, MUL, V(dot), V(rstd)));
  if (!st && !gr->values[n->outs[2]].is_none) st = trnc_db_result(b, 2, gsum);
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

/* native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean,
 * Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group,
 * bool[3] output_mask), as torch's decomposition, over [N, G, C/G, HxW]:
 *   ds = sum_hw g x, db = sum_hw g (per channel);
 *   dx = g rstd w + x c2 + c3,  c2 = (sum_c db w mean - sum_c ds w) rstd^3 / (HxW C/G),
 *   c3 = -c2 mean - sum_c db w rstd / (HxW C/G);
 *   dw = sum_n (ds - db mean) rstd,  db_bias = sum_n db. */
trnc_status decomp_group_norm_bw(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[1].u.ref);
  int64_t N = trnc_arg_int(n, 5, 1), C = trnc_arg_int(n, 6, 1), HW = trnc_arg_int(n, 7, 1);
  int64_t G = trnc_arg_int(n, 8, 1), cpg = C / G;
  const int64_t s4[4] = {N, G, cpg, HW}, s3[3] = {N, G, 1}, w3s[3] = {1, G, cpg};
  trnc_ref g = trnc_db_view(b, trnc_db_f32(b, n->args[0].u.ref), 4, s4);
  trnc_ref x = trnc_db_view(b, trnc_db_f32(b, n->args[1].u.ref), 4, s4);
  trnc_ref mean = trnc_db_view(b, trnc_db_f32(b, n->args[2].u.ref), 3, s3);
  trnc_ref rstd = trnc_db_view(b, trnc_db_f32(b, n->args[3].u.ref), 3, s3);
  bool has_w = n->args[4].kind == TRNC_ARG_VALUE;
  trnc_ref w = has_w ? trnc_db_view(b, trnc_db_f32(b, n->args[4].u.ref), 3, w3s) : TRNC_NO_REF;
  int64_t d3 = 3, d2 = 2, d0 = 0;
  trnc_arg hw = trnc_db_ints(b, &d3, 1), ch = trnc_db_ints(b, &d2, 1), bat = trnc_db_ints(b, &d0, 1);
  trnc_arg keep = trnc_db_bool(true), nokeep = trnc_db_bool(false);
  trnc_ref ds = DB(b, SUM, V(DB(b, MUL, V(g), V(x))), hw, nokeep, NONE); /* [N, G, cpg] */
  trnc_ref db = DB(b, SUM, V(g), hw, nokeep, NONE);
  const trnc_graph *gr = trnc_db_graph(b);
  trnc_status st = TRNC_OK;
  if (!gr->values[n->outs[0]].is_none) {
    double s = 1.0 / (double)(HW * cpg);
    trnc_ref dsv = DB(b, SUM, V(has_w ? DB(b, MUL, V(ds), V(w)) : ds), ch, keep, NONE);
    trnc_ref dbv = DB(b, SUM, V(has_w ? DB(b, MUL, V(db), V(w)) : db), ch, keep, NONE);
    trnc_ref c1 = has_w ? DB(b, MUL, V(rstd), V(w)) : rstd;
    trnc_ref r3 = DB(b, MUL, V(rstd), V(DB(b, MUL, V(rstd), V(rstd))));
    trnc_ref c2 = DB(b, SUB, V(DB(b, MUL, V(dbv), V(mean))), V(dsv), I(1));
    c2 = DB(b, MUL_SCALAR, V(DB(b, MUL, V(c2), V(r3))), F(s));
    trnc_ref c3 = DB(b, SUB, V(DB(b, NEG, V(DB(b, MUL, V(c2), V(mean))))),
                     V(DB(b, MUL_SCALAR, V(DB(b, MUL, V(dbv), V(rstd))), F(s))), I(1));
    trnc_ref dx = DB(b, MUL, V(g), V(DB(b, UNSQUEEZE, V(c1), I(-1))));
    dx = DB(b, ADD, V(dx), V(DB(b, MUL, V(x), V(DB(b, UNSQUEEZE, V(c2), I(-1))))), I(1));
    dx = DB(b, ADD, V(dx), V(DB(b, UNSQUEEZE, V(c3), I(-1))), I(1));
    st = trnc_db_result(b, 0, trnc_db_view(b, dx, t.rank, t.shape));
  }
  if (!st && !gr->values[n->outs[1]].is_none) {
    trnc_ref dw = DB(b, MUL, V(DB(b, SUB, V(ds), V(DB(b, MUL, V(db), V(mean))), I(1))), V(rstd));
    st = trnc_db_result(b, 1, trnc_db_view(b, DB(b, SUM, V(dw), bat, nokeep, NONE), 1, &C));
  }
  if (!st && !gr->values[n->outs[2]].is_none)
    st = trnc_db_result(b, 2, trnc_db_view(b, DB(b, SUM, V(db), bat, nokeep, NONE), 1, &C));
  return st;
}

/* native_layer_norm_backward in the forms the code generator lowers as one
 * kernel-IR row kernel (codegen/kir/rules.c; the one place that decides):
 * dx alone (output_mask [*, False, False]) at any length, or with dW and dB
 * (column sums over the rows on TensorE in PSUM, codegen/kir/emit.c) for
 * rows of 2 to TRNC_LAYER_NORM_BW_MAX_ROW elements. */
bool decomp_lnbw_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *m = trnc_node_arg(n, 7);
  bool dx_only = m && m->kind == TRNC_ARG_LIST && m->u.list.n == 3 && !m->u.list.items[1].u.b &&
                 !m->u.list.items[2].u.b;
  if (dx_only) return true;
  const trnc_type *x = trnc_ref_type(g, n->args[1].u.ref);
  const trnc_arg *ns = trnc_node_arg(n, 2);
  int64_t R = 1;
  for (int i = x->rank - (int)(ns && ns->kind == TRNC_ARG_LIST ? ns->u.list.n : 0); i < x->rank; i++) R *= x->shape[i];
  return R >= 2 && R <= TRNC_LAYER_NORM_BW_MAX_ROW;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
 * bool[3] output_mask) -> (dx, dW, dB), over the D = len(normalized_shape)
 * last dims (the row) and the batch dims before them:
 *   dx = the row kernel of the dx-only form (decomp_lnbw_lowered_directly)
 *   dW = sum_batch(g * (x - mean) * rstd);  dB = sum_batch(g)
 * (float32 column sums: one kernel each, g's product fused into dW's). */
trnc_status decomp_layer_norm_bw(trnc_db *b, const trnc_node *n) {
  const trnc_graph *gr = trnc_db_graph(b);
  const trnc_type t = *trnc_db_type(b, n->args[1].u.ref);
  const trnc_arg *ns = &n->args[2];
  int D = ns->kind == TRNC_ARG_LIST ? (int)ns->u.list.n : 0, nb = t.rank - D;
  trnc_status st = TRNC_OK;
  if (!gr->values[n->outs[0]].is_none) {
    trnc_arg mask = trnc_db_list(b, (const trnc_arg[]){trnc_db_bool(true), trnc_db_bool(false), trnc_db_bool(false)}, 3);
    trnc_arg a[8] = {n->args[0], n->args[1], *ns, n->args[3], n->args[4], n->args[5], NONE, mask};
    trnc_ref outs[3];
    st = trnc_db_op_outs(b, TRNC_OP_LAYER_NORM_BACKWARD, a, 8, 3, outs);
    if (!st) st = trnc_db_result(b, 0, outs[0]);
  }
  bool want_w = !gr->values[n->outs[1]].is_none, want_b = !gr->values[n->outs[2]].is_none;
  if (st || (!want_w && !want_b)) return st;
  trnc_ref g = trnc_db_f32(b, n->args[0].u.ref), xh = TRNC_NO_REF;
  if (want_w) {
    trnc_ref d = DB(b, SUB, V(trnc_db_f32(b, n->args[1].u.ref)), V(trnc_db_f32(b, n->args[3].u.ref)), I(1));
    xh = DB(b, MUL, V(d), V(trnc_db_f32(b, n->args[4].u.ref)));
  }
  int64_t dims[TRNC_MAX_RANK];
  for (int i = 0; i < nb; i++) dims[i] = i;
  trnc_ref s[3] = {TRNC_NO_REF, want_w ? DB(b, MUL, V(g), V(xh)) : TRNC_NO_REF, want_b ? g : TRNC_NO_REF};
  /* no batch dims: the column sum of one row is the row */
  for (int k = 1; k <= 2 && nb > 0; k++)
    if (s[k] != TRNC_NO_REF) s[k] = DB(b, SUM, V(s[k]), trnc_db_ints(b, dims, nb), trnc_db_bool(false), NONE);
  for (uint32_t k = 1; k <= 2 && !st; k++) {
    if (gr->values[n->outs[k]].is_none) continue;
    const trnc_type *o = trnc_db_type(b, n->outs[k]);
    trnc_ref v = s[k];
    if (o->dtype != TRNC_F32) v = trnc_db_cast(b, v, o->dtype);
    st = trnc_db_result(b, k, trnc_db_view(b, v, o->rank, o->shape));
  }
  return st;
}
