/*
 * decomp_scan.c — the scans other than cumsum (cumprod, logcumsumexp, cummax,
 * cummin) as a Hillis-Steele scan (see decompose.h for the builder).
 *
 * With the scanned dim moved last and N its size, ceil(log2 N) steps
 *   y <- combine(shift(y, s), y),  s = 1, 2, 4, ...
 * where shift(y, s)[i] = y[i - s] (the op's identity for i < s, a slice
 * padded with constant_pad_nd) leave y[i] the combination of x[0..i]:
 *   cumprod       a * b                  (identity 1)
 *   logcumsumexp  log(exp(a) + exp(b)) = hi + log1p(exp(lo - hi)), hi and lo
 *                 the larger and smaller (NaN propagating); a when lo == hi
 *                 and neither is finite (both -inf, or both +inf: eager's
 *                 special case)                   (identity -inf)
 *   cummax/min    (value, index) pairs: the later one wins where its value
 *                 is NaN, or >= (<=) the earlier one's and that is not NaN
 *                 (a total order, so the scan is exact: eager's loop keeps
 *                 the last index of the running extremum, NaN's included)
 * Products of longer scans combine the same elements as
 * eager's sequential loop in another association (rounding within fp32's);
 * NaN and infinities propagate alike (0 * inf is NaN in either order). Scans
 * of at most SEQUENTIAL_MAX elements run in eager's order, one column at a
 * time, and round as eager's do.
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

enum { SEQUENTIAL_MAX = 16 }; /* cumprod scans this short run in eager's order */

/* log(exp(a) + exp(b)) as eager's logcumsumexp step computes it. */
static trnc_ref log_add_exp(trnc_db *b, trnc_ref a, trnc_ref y) {
  trnc_ref hi = DB(b, MAXIMUM, V(a), V(y)), lo = DB(b, MINIMUM, V(a), V(y));
  trnc_ref r = DB(b, ADD, V(DB(b, LOG1P, V(DB(b, EXP, V(DB(b, SUB, V(lo), V(hi), I(1))))))), V(hi), I(1));
  trnc_ref same_inf = DB(b, LOGICAL_AND, V(DB(b, EQ, V(lo), V(hi))), V(DB(b, ISINF, V(lo))));
  return DB(b, WHERE, V(same_inf), V(a), V(r));
}

/* x[..., i - s] along the last dim (length len), `fill` for i < s. */
static trnc_ref shift(trnc_db *b, trnc_ref x, int64_t s, int64_t len, trnc_arg fill) {
  trnc_ref head = DB(b, SLICE, V(x), I(-1), I(0), I(len - s), I(1));
  int64_t pad[2] = {s, 0};
  return DB(b, CONSTANT_PAD_ND, V(head), trnc_db_ints(b, pad, 2), fill);
}

trnc_status decomp_scan(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  bool pair = n->op == TRNC_OP_CUMMAX || n->op == TRNC_OP_CUMMIN, mx = n->op == TRNC_OP_CUMMAX;
  trnc_dtype vdt = trnc_db_type(b, n->outs[0])->dtype;
  int rank = t.rank ? t.rank : 1;
  int64_t one = 1;
  trnc_ref y = t.rank ? x : trnc_db_view(b, DB(b, CLONE, V(x), NONE), 1, &one);
  if (trnc_db_type(b, y)->dtype != vdt) y = trnc_db_cast(b, y, vdt);
  int64_t d = t.rank ? trnc_arg_int(n, 1, 0) : 0;
  if (d < 0) d += rank;
  int last = rank - 1;
  if (d != last) y = DB(b, TRANSPOSE, V(y), I(d), I(last));
  const trnc_type yt = *trnc_db_type(b, y);
  int64_t len = yt.shape[last];
  trnc_ref idx = TRNC_NO_REF;
  if (pair) {
    trnc_ref ar = DB(b, ARANGE, I(len), trnc_db_dtype(TRNC_I64), NONE, NONE, NONE);
    idx = DB(b, EXPAND, V(ar), trnc_db_ints(b, yt.shape, yt.rank), trnc_db_bool(false));
  }
  double id = n->op == TRNC_OP_CUMPROD ? 1.0 : n->op == TRNC_OP_CUMMIN ? INFINITY : -INFINITY;
  if (n->op == TRNC_OP_CUMPROD && len > 1 && len <= SEQUENTIAL_MAX) { /* eager's order: one column at a time */
    trnc_ref cols[SEQUENTIAL_MAX];
    for (int64_t i = 0; i < len; i++) {
      trnc_ref c = DB(b, SLICE, V(y), I(-1), I(i), I(i + 1), I(1));
      cols[i] = i == 0 ? c : DB(b, MUL, V(cols[i - 1]), V(c));
    }
    y = DB(b, CAT, trnc_db_vals(b, cols, (int)len), I(-1));
  }
  for (int64_t s = 1; s < len && (n->op != TRNC_OP_CUMPROD || len > SEQUENTIAL_MAX); s *= 2) {
    trnc_ref e = shift(b, y, s, len, trnc_db_float(id));
    if (n->op == TRNC_OP_CUMPROD) {
      y = DB(b, MUL, V(e), V(y));
    } else if (n->op == TRNC_OP_LOGCUMSUMEXP) {
      y = log_add_exp(b, e, y);
    } else {
      /* later (y) wins: isnan(y) or (!isnan(e) and y >= e (<= for cummin)) */
      trnc_ref ei = shift(b, idx, s, len, I(0));
      trnc_ref cmp = mx ? DB(b, GE, V(y), V(e)) : DB(b, LE, V(y), V(e));
      trnc_ref later = DB(b, LOGICAL_OR, V(DB(b, NE, V(y), V(y))),
                          V(DB(b, LOGICAL_AND, V(DB(b, EQ, V(e), V(e))), V(cmp))));
      y = DB(b, WHERE, V(later), V(y), V(e));
      idx = DB(b, WHERE, V(later), V(idx), V(ei));
    }
  }
  if (d != last) {
    y = DB(b, TRANSPOSE, V(y), I(d), I(last));
    if (pair) idx = DB(b, TRANSPOSE, V(idx), I(d), I(last));
  }
  if (!t.rank) {
    y = trnc_db_view(b, y, 0, NULL);
    if (pair) idx = trnc_db_view(b, idx, 0, NULL);
  }
  if (len <= 1) y = DB(b, CLONE, V(y), NONE);
  trnc_status st = trnc_db_result(b, 0, y);
  if (st || !pair) return st;
  return trnc_db_result(b, 1, len <= 1 ? DB(b, CLONE, V(idx), NONE) : idx);
}
