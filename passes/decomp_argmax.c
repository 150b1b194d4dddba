/*
 * decomp_argmax.c — index-yielding reductions and the NLL loss in ops the
 * kernel IR lowers and fuses (see decompose.h).
 *
 * argmax/argmin(x, dim?, keepdim), max.dim/min.dim(x, dim, keepdim), in
 * float32 (exact for every dtype the check admits: floats, 8/16-bit ints,
 * bool), as eager reports them (first index on ties; NaN is the extremum,
 * its first index and NaN returned):
 *   m   = amax(x, dim, keepdim=True)            (NaN propagates: VectorE max)
 *   hit = (x == m) | (x != x)                   (m NaN: only NaNs are hits)
 *   idx = amin(where(hit, iota(dim), 2^24), dim)
 * The iota is an arange along dim (exact in float32 below 2^24: the op
 * table's check keeps reduced lengths below that). Two kernels: the amax
 * and the elementwise hit/select fused with the amin.
 *
 * nll_loss_forward(x [N, C] or [C], target, weight?, reduction, ignore) as
 * torch's decomposition (torch/_decomp/decompositions.py), in float32:
 *   valid = target != ignore;  t = where(valid, target, 0)
 *   w_t   = weight[t] (ones[t] without a weight): an index_select, which
 *           range-checks every target (TRNC_ERR_LIMIT, as eager raises)
 *   loss  = where(valid, -sum_C(where(iota(C) == t, x, 0)) * w_t, 0)
 *   total_weight = sum(where(valid, w_t, 0))
 *   none: loss (2-D: total_weight 0)   sum: sum(loss)   mean: sum(loss) / total_weight
 * The pick is a one-hot reduction: one kernel over [N, C] at any size (a
 * gather is limited to 2^20 elements).
 * nll_loss_backward(g, x, target, weight?, reduction, ignore, total_weight):
 *   dx = where(iota(C) == t, where(valid, -g' * w_t, 0), 0)
 * with g' = g / total_weight for mean: one elementwise kernel over [N, C].
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* float32 arange(len) viewed [len, 1 x ones]: the index along a dim with
 * `ones` dims after it */
static trnc_ref iota_along(trnc_db *b, int64_t len, int ones) {
  int64_t shape[TRNC_MAX_RANK + 1];
  shape[0] = len;
  for (int i = 1; i <= ones; i++) shape[i] = 1;
  trnc_ref a = DB(b, ARANGE, I(len), trnc_db_dtype(TRNC_F32), NONE, NONE, NONE);
  return trnc_db_view(b, a, ones + 1, shape);
}

/* Binds output k to r (float32) in the output's declared dtype and shape. */
static trnc_status bind(trnc_db *b, const trnc_node *n, uint32_t k, trnc_ref r) {
  if (trnc_db_status(b) || trnc_db_graph(b)->values[n->outs[k]].is_none) return trnc_db_status(b);
  const trnc_type *o = trnc_db_type(b, n->outs[k]);
  if (r != TRNC_NO_REF && trnc_db_type(b, r)->dtype != o->dtype) r = trnc_db_cast(b, r, o->dtype);
  return trnc_db_result(b, k, trnc_db_view(b, r, o->rank, o->shape));
}

/* argmax/argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor;
 * max.dim/min.dim(Tensor self, int dim, bool keepdim=False) -> (values, indices) */
trnc_status decomp_argmax(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  bool pair = n->op == TRNC_OP_MAX_DIM || n->op == TRNC_OP_MIN_DIM;
  bool is_max = n->op == TRNC_OP_ARGMAX || n->op == TRNC_OP_MAX_DIM;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  int rank = t.rank;
  int64_t d = 0;
  if (n->args[1].kind != TRNC_ARG_INT || rank == 0) { /* every element (or a 0-d input) */
    int64_t all = trnc_type_numel(&t);
    x = trnc_db_view(b, x, 1, &all);
    rank = 1;
  } else {
    d = n->args[1].u.i < 0 ? n->args[1].u.i + rank : n->args[1].u.i;
  }
  trnc_arg dim = trnc_db_ints(b, &d, 1), keep = trnc_db_bool(true);
  /* the iota first: the compare, select and amin after the amax are
   * consecutive nodes of one shape, which codegen/lower.c fuses into one kernel */
  trnc_ref io = iota_along(b, trnc_db_type(b, x)->shape[d], rank - 1 - (int)d);
  trnc_ref m = is_max ? DB(b, AMAX, V(x), dim, keep) : DB(b, AMIN, V(x), dim, keep);
  trnc_ref hit = DB(b, LOGICAL_OR, V(DB(b, EQ, V(x), V(m))), V(DB(b, NE, V(x), V(x))));
  trnc_ref cand = DB(b, WHERE, V(hit), V(io), F(16777216.0));
  trnc_ref idx = DB(b, AMIN, V(cand), dim, keep);
  if (!pair) return bind(b, n, 0, idx);
  trnc_status st = bind(b, n, 0, m);
  return st ? st : bind(b, n, 1, idx);
}

/* The NLL operands seen as [N, C] rows: x2, the safe target t [N], valid [N],
 * the gathered weight weight[t] (float32; ones[t] without a weight: the
 * index_select range-checks every target either way) and the one-hot
 * iota(C) == t [N, C]. */
typedef struct nll_rows {
  trnc_ref x2, t, valid, wt, hot;
} nll_rows;

static nll_rows nll_prepare(trnc_db *b, trnc_ref xr, trnc_ref tr, const trnc_arg *w, int64_t ignore) {
  const trnc_type *xt = trnc_db_type(b, xr), *tt = trnc_db_type(b, tr);
  int64_t C = xt->shape[xt->rank - 1];
  nll_rows r;
  r.x2 = xt->rank == 1 ? DB(b, UNSQUEEZE, V(xr), I(0)) : xr;
  trnc_ref t = tr;
  if (xt->rank == 1 && tt->rank == 1) t = DB(b, SLICE, V(t), I(0), I(0), I(1), I(1)); /* eager: target[0] */
  if (tt->rank == 0) t = DB(b, UNSQUEEZE, V(t), I(0));
  r.valid = DB(b, NE_SCALAR, V(t), I(ignore));
  r.t = DB(b, WHERE, V(r.valid), V(t), I(0));
  trnc_ref table = w->kind == TRNC_ARG_VALUE
                       ? w->u.ref
                       : DB(b, FULL, trnc_db_ints(b, &C, 1), F(1.0), trnc_db_dtype(TRNC_F32), NONE, NONE, NONE);
  r.wt = trnc_db_f32(b, DB(b, INDEX_SELECT, V(table), I(0), V(r.t)));
  trnc_ref cols = trnc_db_view(b, iota_along(b, C, 0), 2, (const int64_t[]){1, C});
  r.hot = DB(b, EQ, V(cols), V(trnc_db_cast(b, DB(b, UNSQUEEZE, V(r.t), I(1)), TRNC_F32)));
  return r;
}

/* nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index)
 * -> (Tensor output, Tensor total_weight) */
trnc_status decomp_nll_loss(trnc_db *b, const trnc_node *n) {
  bool two = trnc_db_type(b, n->args[0].u.ref)->rank == 2;
  int64_t red = trnc_arg_int(n, 3, 1), ignore = trnc_arg_int(n, 4, -100);
  nll_rows r = nll_prepare(b, n->args[0].u.ref, n->args[1].u.ref, &n->args[2], ignore);
  int64_t one = 1;
  trnc_ref picked = DB(b, SUM, V(DB(b, WHERE, V(r.hot), V(r.x2), F(0.0))), trnc_db_ints(b, &one, 1),
                       trnc_db_bool(false), NONE);
  trnc_ref l = DB(b, MUL, V(DB(b, NEG, V(trnc_db_f32(b, picked)))), V(r.wt));
  l = DB(b, WHERE, V(r.valid), V(l), F(0.0));
  if (red == 0 && two) {
    trnc_status st = bind(b, n, 0, l);
    return st ? st : bind(b, n, 1, trnc_db_zeros(b, TRNC_F32, 0, NULL));
  }
  trnc_ref tw = DB(b, SUM_ALL, V(DB(b, WHERE, V(r.valid), V(r.wt), F(0.0))), NONE);
  trnc_ref out = red == 0 ? l : DB(b, SUM_ALL, V(l), NONE);
  if (red == 1) out = DB(b, DIV, V(out), V(tw));
  trnc_status st = bind(b, n, 0, out);
  return st ? st : bind(b, n, 1, tw);
}

/* nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction,
 * SymInt ignore_index, Tensor total_weight) -> Tensor */
trnc_status decomp_nll_loss_bw(trnc_db *b, const trnc_node *n) {
  bool two = trnc_db_type(b, n->args[1].u.ref)->rank == 2;
  int64_t red = trnc_arg_int(n, 4, 1), ignore = trnc_arg_int(n, 5, -100);
  nll_rows r = nll_prepare(b, n->args[1].u.ref, n->args[2].u.ref, &n->args[3], ignore);
  trnc_ref g = trnc_db_f32(b, n->args[0].u.ref);
  if (red == 1) g = DB(b, DIV, V(g), V(trnc_db_f32(b, n->args[6].u.ref)));
  if (red == 0 && two) g = DB(b, UNSQUEEZE, V(g), I(1)); /* [N, 1]: one per row */
  trnc_ref c = DB(b, MUL, V(DB(b, NEG, V(g))), V(DB(b, UNSQUEEZE, V(r.wt), I(1))));
  c = DB(b, WHERE, V(DB(b, UNSQUEEZE, V(r.valid), I(1))), V(c), F(0.0));
  return bind(b, n, 0, DB(b, WHERE, V(r.hot), V(c), F(0.0)));
}
