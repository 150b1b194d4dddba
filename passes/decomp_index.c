/*
 * decomp_index.c — indexed reductions, flat writes and sorted-sequence
 * searches as comparisons, selects and reductions (see decompose.h for the
 * builder).
 *
 * scatter_reduce(self, dim, index, src, 'prod' | 'amax' | 'amin') and
 * index_reduce(self, dim, index, source, reduce): with dim moved last, an
 * output row of No positions and a source row of Ni elements,
 *   hit[..., o, i] = (index[..., i] == o)              a one-hot [..., No, Ni]
 *   red[..., o]    = reduce_i where(hit, src[..., i], identity)
 * (identity 1 for prod, -inf for amax, +inf for amin; mean is a sum over
 * the count of hits), then op(self, red) with include_self, else red where
 * any element hit the position and self elsewhere, as eager. scatter_reduce's
 * index may cover only a leading block of self (and src) in the other dims:
 * the block is computed and written back with slice_scatter. Every product
 * and extremum is over exactly the elements eager reduces, so NaN and
 * infinities propagate as in eager (the order of a product's factors may
 * differ: rounding within fp32's). The one-hot bounds the size
 * (TRNC_ONEHOT_MAX elements, the ops' table checks).
 *
 * gather and the scatters with a 0-d self, index or src: over [1] views.
 *
 * put(self, index, source, accumulate): self seen flat, negative indices
 * wrapped (index + numel where index < 0, exact in int32), a scatter (or
 * scatter_add) along dim 0, viewed back.
 *
 * bucketize(x, boundaries, right) / searchsorted(seq, x, right, side,
 * sorter): the number of boundaries below x (below or equal with right), a
 * sum over a comparison [..., M, B] (exact: counts below 2^24); NaN counts
 * past every boundary, as eager's binary search leaves it. sorter gathers
 * the sequence first.
 */
#include <math.h>
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

static trnc_arg dims1(trnc_db *b, int64_t d) { return trnc_db_ints(b, &d, 1); }

/* x with dims d and last swapped (x itself when d is last). */
static trnc_ref to_last(trnc_db *b, trnc_ref x, int d) {
  int last = trnc_db_type(b, x)->rank - 1;
  return d == last ? x : DB(b, TRANSPOSE, V(x), I(d), I(last));
}

/* A 0-d x as [1] (a contiguous copy viewed). */
static trnc_ref as_1d(trnc_db *b, trnc_ref x) {
  int64_t one = 1;
  return trnc_db_view(b, DB(b, CLONE, V(x), NONE), 1, &one);
}

enum { RED_PROD, RED_AMAX, RED_AMIN, RED_MEAN };

static int reduce_kind(const char *s) {
  return !strcmp(s, "prod") ? RED_PROD : !strcmp(s, "amax") ? RED_AMAX : !strcmp(s, "amin") ? RED_AMIN
                                                                                              : RED_MEAN;
}

/* The indexed reduction of srcm [..., Ni] into selfm [..., No] (both with
 * the reduced dim last) by idx, broadcastable to [..., 1, Ni]. */
static trnc_ref onehot_reduce(trnc_db *b, trnc_ref selfm, trnc_ref idx, trnc_ref srcm, int kind,
                              bool include_self) {
  const trnc_type *st = trnc_db_type(b, selfm);
  int64_t no = st->shape[st->rank - 1];
  trnc_ref pos = DB(b, UNSQUEEZE, V(DB(b, ARANGE, I(no), trnc_db_dtype(TRNC_I64), NONE, NONE, NONE)), I(1));
  trnc_ref hit = DB(b, EQ, V(DB(b, UNSQUEEZE, V(idx), I(-2))), V(pos)); /* [..., No, Ni] */
  trnc_ref s2 = DB(b, UNSQUEEZE, V(srcm), I(-2));
  trnc_arg last = dims1(b, -1);
  trnc_ref cnt = DB(b, SUM, V(hit), last, trnc_db_bool(false), trnc_db_dtype(TRNC_F32));
  trnc_ref any = DB(b, GT_SCALAR, V(cnt), I(0));
  trnc_ref red;
  if (kind == RED_MEAN) {
    trnc_ref zero = DB(b, FULL_LIKE, V(s2), I(0), NONE, NONE, NONE, NONE, NONE);
    trnc_ref sum = DB(b, SUM, V(DB(b, WHERE, V(hit), V(s2), V(zero))), last, trnc_db_bool(false), NONE);
    if (include_self) {
      trnc_ref all = DB(b, ADD, V(selfm), V(sum), I(1));
      return DB(b, DIV, V(all), V(DB(b, ADD_SCALAR, V(cnt), I(1), I(1))));
    }
    return DB(b, WHERE, V(any), V(DB(b, DIV, V(sum), V(cnt))), V(selfm));
  }
  double id = kind == RED_PROD ? 1.0 : kind == RED_AMAX ? -INFINITY : INFINITY;
  trnc_ref fill = DB(b, FULL_LIKE, V(s2), trnc_db_float(id), NONE, NONE, NONE, NONE, NONE);
  trnc_ref vals = DB(b, WHERE, V(hit), V(s2), V(fill));
  if (kind == RED_PROD) red = DB(b, PROD, V(vals), I(-1), trnc_db_bool(false), NONE);
  else if (kind == RED_AMAX) red = DB(b, AMAX, V(vals), last, trnc_db_bool(false));
  else red = DB(b, AMIN, V(vals), last, trnc_db_bool(false));
  if (!include_self) return DB(b, WHERE, V(any), V(red), V(selfm));
  if (kind == RED_PROD) return DB(b, MUL, V(selfm), V(red));
  return kind == RED_AMAX ? DB(b, MAXIMUM, V(selfm), V(red)) : DB(b, MINIMUM, V(selfm), V(red));
}

/* x sliced to shape[0..rank) (leading blocks). */
static trnc_ref leading_block(trnc_db *b, trnc_ref x, const int64_t *shape, int skip) {
  const trnc_type t = *trnc_db_type(b, x);
  for (int k = 0; k < t.rank; k++)
    if (k != skip && shape[k] < t.shape[k])
      x = DB(b, SLICE, V(x), I(k), I(0), I(shape[k]), I(1));
  return x;
}

/* scatter_reduce.two(self, dim, index, src, reduce 'prod'|'amax'|'amin', include_self) */
static trnc_status scatter_onehot(trnc_db *b, const trnc_node *n, int kind) {
  trnc_ref x = n->args[0].u.ref, idx = n->args[2].u.ref, src = n->args[3].u.ref;
  trnc_type it = *trnc_db_type(b, idx);
  if (trnc_type_numel(&it) == 0) return trnc_db_result(b, 0, DB(b, CLONE, V(x), NONE));
  if (trnc_db_type(b, x)->rank == 0) { /* 0-d: as [1] */
    x = as_1d(b, x), idx = as_1d(b, idx), src = as_1d(b, src);
    it = *trnc_db_type(b, idx);
  }
  const trnc_type xt = *trnc_db_type(b, x);
  int d = (int)trnc_arg_int(n, 1, 0);
  if (d < 0) d += xt.rank;
  trnc_ref srcb = leading_block(b, src, it.shape, -1);
  trnc_ref selfb = leading_block(b, x, it.shape, d);
  trnc_ref out = onehot_reduce(b, to_last(b, selfb, d), to_last(b, idx, d), to_last(b, srcb, d), kind,
                               trnc_arg_bool(n, 5, true));
  out = to_last(b, out, d);
  /* write the block back into self, innermost dim first */
  const trnc_type bt = *trnc_db_type(b, selfb);
  for (int k = xt.rank - 1; k >= 0; k--) {
    if (bt.shape[k] == xt.shape[k]) continue;
    int64_t shape[TRNC_MAX_RANK];
    for (int j = 0; j < xt.rank; j++) shape[j] = j < k ? bt.shape[j] : xt.shape[j];
    trnc_ref outer = leading_block(b, x, shape, -1);
    out = DB(b, SLICE_SCATTER, V(outer), V(out), I(k), I(0), I(bt.shape[k]), I(1));
  }
  const trnc_type *ot = trnc_db_type(b, n->outs[0]);
  return trnc_db_result(b, 0, ot->rank ? out : trnc_db_view(b, out, 0, NULL));
}

trnc_status decomp_scatter_reduce_onehot(trnc_db *b, const trnc_node *n) {
  return scatter_onehot(b, n, reduce_kind(n->args[4].u.s));
}

/* index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) */
trnc_status decomp_index_reduce(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, idx = n->args[2].u.ref, src = n->args[3].u.ref;
  if (trnc_type_numel(trnc_db_type(b, idx)) == 0) return trnc_db_result(b, 0, DB(b, CLONE, V(x), NONE));
  bool scalar = trnc_db_type(b, x)->rank == 0;
  if (scalar) x = as_1d(b, x), src = as_1d(b, src); /* 0-d: as [1] */
  int d = (int)trnc_arg_int(n, 1, 0);
  if (d < 0) d += trnc_db_type(b, x)->rank;
  trnc_ref out = onehot_reduce(b, to_last(b, x, d), idx, to_last(b, src, d), reduce_kind(n->args[4].u.s),
                               trnc_arg_bool(n, 5, true));
  out = to_last(b, out, d);
  return trnc_db_result(b, 0, scalar ? trnc_db_view(b, out, 0, NULL) : out);
}

/* gather(self, dim, index) / scatter.value / scatter.src / scatter_add(self,
 * dim, index, src) where self, index or src is 0-d: torch treats a 0-d
 * tensor as [1] along dim 0 (or -1), so the op runs over [1] views of the
 * 0-d operands and its result is viewed back to the node's shape. */
static bool has_0d_operand(const trnc_graph *g, const trnc_node *n) {
  for (uint32_t a = 0; a < n->nargs; a++)
    if (n->args[a].kind == TRNC_ARG_VALUE && trnc_ref_type(g, n->args[a].u.ref)->rank == 0) return true;
  return false;
}

bool decomp_gather_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  return !has_0d_operand(g, n);
}

trnc_status decomp_gather_0d(trnc_db *b, const trnc_node *n) {
  const trnc_graph *g = trnc_db_graph(b);
  trnc_arg args[4];
  if (n->nargs > 4) return trnc_db_fail(b, "gather/scatter with more than 4 arguments");
  for (uint32_t a = 0; a < n->nargs; a++) {
    args[a] = n->args[a];
    if (args[a].kind == TRNC_ARG_VALUE && trnc_ref_type(g, args[a].u.ref)->rank == 0)
      args[a] = V(as_1d(b, args[a].u.ref));
  }
  args[1] = I(0);
  trnc_ref r = trnc_db_op(b, n->op, args, n->nargs);
  const trnc_type *ot = &g->values[n->outs[0]].type;
  return trnc_db_result(b, 0, trnc_db_view(b, r, ot->rank, ot->shape));
}

/* put(Tensor self, Tensor index, Tensor source, bool accumulate=False) */
trnc_status decomp_put(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type xt = *trnc_db_type(b, x);
  int64_t numel = trnc_type_numel(&xt), k = trnc_type_numel(trnc_db_type(b, n->args[1].u.ref));
  if (k == 0) return trnc_db_result(b, 0, DB(b, CLONE, V(x), NONE));
  trnc_ref flat = trnc_db_view(b, DB(b, CLONE, V(x), NONE), 1, &numel);
  trnc_ref idx = trnc_db_view(b, DB(b, CLONE, n->args[1], NONE), 1, &k);
  idx = DB(b, WHERE, V(DB(b, LT_SCALAR, V(idx), I(0))), V(DB(b, ADD_SCALAR, V(idx), I(numel), I(1))), V(idx));
  trnc_ref src = trnc_db_view(b, DB(b, CLONE, n->args[2], NONE), 1, &k);
  trnc_ref out = trnc_arg_bool(n, 3, false) ? DB(b, SCATTER_ADD, V(flat), I(0), V(idx), V(src))
                                            : DB(b, SCATTER_SRC, V(flat), I(0), V(idx), V(src));
  return trnc_db_result(b, 0, trnc_db_view(b, out, xt.rank, xt.shape));
}

/* The count of seq's elements below x (right: at most x) along seq's last
 * dim, NaN past them all, as dtype dt. seq is 1-D, or [..., B] with x [..., M]. */
static trnc_status count_below(trnc_db *b, trnc_ref seq, trnc_ref x, bool right, trnc_dtype dt) {
  const trnc_type st = *trnc_db_type(b, seq);
  int64_t len = st.shape[st.rank - 1];
  trnc_ref xs = DB(b, UNSQUEEZE, V(x), I(-1));                           /* [..., M, 1] */
  trnc_ref ss = st.rank == 1 ? seq : DB(b, UNSQUEEZE, V(seq), I(-2));   /* [..., 1, B] */
  trnc_ref cmp = right ? DB(b, LE, V(ss), V(xs)) : DB(b, LT, V(ss), V(xs));
  trnc_ref cnt = DB(b, SUM, V(cmp), dims1(b, -1), trnc_db_bool(false), trnc_db_dtype(TRNC_F32));
  trnc_ref full = DB(b, FULL_LIKE, V(cnt), I(len), NONE, NONE, NONE, NONE, NONE);
  cnt = DB(b, WHERE, V(DB(b, NE, V(x), V(x))), V(full), V(cnt));
  return trnc_db_result(b, 0, trnc_db_cast(b, cnt, dt));
}

/* bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) */
trnc_status decomp_bucketize(trnc_db *b, const trnc_node *n) {
  trnc_dtype dt = trnc_db_type(b, n->outs[0])->dtype;
  return count_below(b, n->args[1].u.ref, n->args[0].u.ref, trnc_arg_bool(n, 3, false), dt);
}

/* searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False,
 * bool right=False, str? side=None, Tensor? sorter=None) */
trnc_status decomp_searchsorted(trnc_db *b, const trnc_node *n) {
  trnc_dtype dt = trnc_db_type(b, n->outs[0])->dtype;
  trnc_ref seq = n->args[0].u.ref;
  const trnc_arg *side = &n->args[4], *sorter = &n->args[5];
  bool right = trnc_arg_bool(n, 3, false) || (side->kind == TRNC_ARG_STR && !strcmp(side->u.s, "right"));
  if (sorter->kind == TRNC_ARG_VALUE)
    seq = DB(b, GATHER, V(seq), I(-1), V(sorter->u.ref), trnc_db_bool(false));
  return count_below(b, seq, n->args[1].u.ref, right, dt);
}
