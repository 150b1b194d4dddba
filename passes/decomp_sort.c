/*
 * decomp_sort.c — sort, topk and histc as comparisons and sums (see
 * decompose.h for the builder).
 *
 * sort(x, dim, descending) with dim moved last and x seen as rows [R, N]:
 * element i's place in its row is its rank, the number of elements that
 * come before it,
 *   rank[r, i] = sum_j before(x[r, j], x[r, i]) or (x[r, j] == x[r, i] and j < i)
 * over an [R, N, N] comparison (before is <, or > when descending; NaN
 * compares equal to NaN and after every number ascending, before every
 * number descending, as eager orders it). Ranks are distinct, so the order
 * is stable and every value and index is exact: output slot p takes, over
 * a one-hot [R, N, P] of rank == p, the sum of where(onehot, x, 0) (one
 * term is x[i], the others are zeros; where keeps an infinity or a NaN
 * from meeting a zero), and the index likewise. topk(k, largest) is the
 * same ranking with slots 0..k-1 (largest: descending); equal values
 * come lowest index first, where eager leaves their order unspecified.
 * Limits: TRNC_SORT_MAX per row, TRNC_SORT_MAX_COMPARISONS in all (the op
 * table's check_sort). A whole sort of longer rows (up to TRNC_SORT_LONG_MAX)
 * counts each element's rank against column chunks of TRNC_SORT_MAX and,
 * the ranks being distinct, scatters value and index to slot rank[i].
 *
 * median, nanmedian, kthvalue and mode select one element per row by the
 * same stable ranks (dim moved last keeping the other dims' order, so a
 * row's result is element r of the reduced output): rank k in each row,
 * its value and index picked by a one-hot sum,
 *   median     k = (N-1)/2, or N - nan_count (the first NaN) if the row has one
 *   nanmedian  k = floor(max(N - nan_count - 1, 0) / 2) (the first NaN if all are)
 *   kthvalue   k = k - 1 (NaN largest, as eager's nth_element orders it)
 *   mode       the lowest-ranked element whose count of equal elements is the
 *              row's largest and that is the last of its equals (eager scans
 *              the sorted row and keeps the first run of the largest length,
 *              reporting the index of its last element; a NaN equals nothing
 *              but itself).
 *
 * histc(x, bins, min, max) follows eager's CPU kernel: an element counts if
 * min <= x <= max (NaN does not), in bin
 *   trunc((x - min) * bins / (max - min)),  the last bin taking x == max,
 * computed in float32 as eager does for float32 input; the counts are the
 * sum over elements of a one-hot [numel, bins] comparison.
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

static trnc_arg dims1(trnc_db *b, int64_t d) { return trnc_db_ints(b, &d, 1); }

static bool is_float(trnc_dtype dt) {
  return dt == TRNC_F32 || dt == TRNC_F64 || dt == TRNC_F16 || dt == TRNC_BF16;
}

/* A row-major view of x with `dim` moved last: [rows, len]. */
typedef struct rows {
  trnc_ref x;                     /* [rows, len], contiguous */
  int64_t rows, len;
  int rank, dim;
  int64_t moved[TRNC_MAX_RANK];   /* x's shape with dim and the last dim swapped */
} rows;

static rows as_rows(trnc_db *b, trnc_ref x, int64_t dim) {
  const trnc_type t = *trnc_db_type(b, x);
  rows r = {.rank = t.rank, .dim = (int)(dim < 0 ? dim + t.rank : dim), .rows = 1};
  int last = t.rank - 1;
  trnc_ref m = r.dim == last ? x : DB(b, TRANSPOSE, V(x), I(r.dim), I(last));
  for (int i = 0; i < t.rank; i++) {
    r.moved[i] = t.shape[i == r.dim ? last : i == last ? r.dim : i];
    if (i != last) r.rows *= r.moved[i];
  }
  r.len = t.shape[r.dim];
  r.x = trnc_db_view(b, DB(b, CLONE, V(m), NONE), 2, (const int64_t[]){r.rows, r.len});
  return r;
}

/* [rows, p] back to the input's layout with p in dim. */
static trnc_ref from_rows(trnc_db *b, const rows *r, trnc_ref y, int64_t p) {
  int64_t shape[TRNC_MAX_RANK];
  for (int i = 0; i < r->rank; i++) shape[i] = i == r->rank - 1 ? p : r->moved[i];
  y = trnc_db_view(b, y, r->rank, shape);
  return r->dim == r->rank - 1 ? y : DB(b, TRANSPOSE, V(y), I(r->dim), I(r->rank - 1));
}

/* How many of the elements j in [j0, j1) of row r come before element i
 * (int64 [rows, n]). */
static trnc_ref ranks_among(trnc_db *b, const rows *r, bool descending, int64_t j0, int64_t j1) {
  int64_t n = r->len, m = j1 - j0;
  trnc_ref cols = j0 == 0 && j1 == n ? r->x : DB(b, SLICE, V(r->x), I(1), I(j0), I(j1), I(1));
  trnc_ref xi = trnc_db_view(b, r->x, 3, (const int64_t[]){r->rows, n, 1});
  trnc_ref xj = trnc_db_view(b, cols, 3, (const int64_t[]){r->rows, 1, m});
  trnc_ref before = descending ? DB(b, GT, V(xj), V(xi)) : DB(b, LT, V(xj), V(xi));
  trnc_ref eq = DB(b, EQ, V(xj), V(xi));
  if (is_float(trnc_db_type(b, r->x)->dtype)) {
    trnc_ref ni = DB(b, ISNAN, V(xi)), nj = DB(b, ISNAN, V(xj));
    /* ascending: a number before a NaN; descending: a NaN before a number */
    trnc_ref nan_first = descending ? DB(b, LOGICAL_AND, V(nj), V(DB(b, LOGICAL_NOT, V(ni))))
                                    : DB(b, LOGICAL_AND, V(ni), V(DB(b, LOGICAL_NOT, V(nj))));
    before = DB(b, LOGICAL_OR, V(before), V(nan_first));
    eq = DB(b, LOGICAL_OR, V(eq), V(DB(b, LOGICAL_AND, V(ni), V(nj))));
  }
  trnc_arg i64 = trnc_db_dtype(TRNC_I64);
  trnc_ref idx = DB(b, ARANGE, I(n), i64, NONE, NONE, NONE);
  trnc_ref jdx = DB(b, ARANGE_START, I(j0), I(j1), i64, NONE, NONE, NONE);
  trnc_ref earlier = DB(b, LT, V(DB(b, UNSQUEEZE, V(jdx), I(0))), V(DB(b, UNSQUEEZE, V(idx), I(1))));
  before = DB(b, LOGICAL_OR, V(before), V(DB(b, LOGICAL_AND, V(eq), V(earlier))));
  return DB(b, SUM, V(before), dims1(b, -1), trnc_db_bool(false), i64);
}

/* rank[r, i] (int64): how many elements of row r come before element i;
 * rows longer than TRNC_SORT_MAX count against column chunks of that
 * length, summed. */
static trnc_ref ranks(trnc_db *b, const rows *r, bool descending) {
  trnc_ref rank = TRNC_NO_REF;
  for (int64_t j0 = 0; j0 < r->len; j0 += TRNC_SORT_MAX) {
    int64_t j1 = j0 + TRNC_SORT_MAX < r->len ? j0 + TRNC_SORT_MAX : r->len;
    trnc_ref part = ranks_among(b, r, descending, j0, j1);
    rank = rank == TRNC_NO_REF ? part : DB(b, ADD, V(rank), V(part), I(1));
  }
  return rank;
}

/* A whole row sorted (p = n, rows longer than TRNC_SORT_MAX): the ranks are
 * distinct, so element i is scattered to slot rank[i] (values) and its
 * position i likewise (indices). */
static void scatter_place(trnc_db *b, const rows *r, trnc_ref rank, trnc_ref *vals, trnc_ref *idx) {
  trnc_arg i64 = trnc_db_dtype(TRNC_I64);
  trnc_arg shape = trnc_db_ints(b, (const int64_t[]){r->rows, r->len}, 2);
  trnc_ref pos = DB(b, EXPAND, V(trnc_db_view(b, DB(b, ARANGE, I(r->len), i64, NONE, NONE, NONE), 2,
                                              (const int64_t[]){1, r->len})),
                    shape, trnc_db_bool(false));
  *vals = DB(b, SCATTER_SRC, V(r->x), I(1), V(rank), V(r->x));
  *idx = DB(b, SCATTER_SRC, V(pos), I(1), V(rank), V(pos));
}

/* Slots 0..p-1 of every row: (values [rows, p], int64 indices [rows, p]). */
static void place(trnc_db *b, const rows *r, trnc_ref rank, int64_t p, trnc_ref *vals,
                  trnc_ref *idx) {
  int64_t n = r->len;
  trnc_arg i64 = trnc_db_dtype(TRNC_I64);
  trnc_ref slot = trnc_db_view(b, DB(b, ARANGE, I(p), i64, NONE, NONE, NONE), 3,
                               (const int64_t[]){1, 1, p});
  trnc_ref hot = DB(b, EQ, V(trnc_db_view(b, rank, 3, (const int64_t[]){r->rows, n, 1})),
                    V(slot));
  trnc_ref xi = trnc_db_view(b, r->x, 3, (const int64_t[]){r->rows, n, 1});
  trnc_ref ii = trnc_db_view(b, DB(b, ARANGE, I(n), i64, NONE, NONE, NONE), 3,
                             (const int64_t[]){1, n, 1});
  trnc_dtype dt = trnc_db_type(b, r->x)->dtype;
  trnc_arg zero = is_float(dt) ? F(0.0) : I(0);
  *vals = DB(b, SUM, V(DB(b, WHERE, V(hot), V(xi), zero)), dims1(b, 1), trnc_db_bool(false),
             trnc_db_dtype(dt));
  *idx = DB(b, SUM, V(DB(b, WHERE, V(hot), V(ii), I(0))), dims1(b, 1), trnc_db_bool(false), i64);
}

/* values and indices of the first p ranks of x along dim */
static trnc_status ranked(trnc_db *b, const trnc_node *n, int64_t dim, int64_t p,
                          bool descending) {
  trnc_ref x = n->args[0].u.ref;
  if (trnc_db_type(b, x)->rank == 0) {
    trnc_status s = trnc_db_result(b, 0, DB(b, CLONE, V(x), NONE));
    if (s) return s;
    return trnc_db_result(b, 1, DB(b, ZEROS, trnc_db_ints(b, NULL, 0), trnc_db_dtype(TRNC_I64),
                                   NONE, NONE, NONE));
  }
  rows r = as_rows(b, x, dim);
  trnc_ref vals, idx;
  if (r.len > TRNC_SORT_MAX && p == r.len) scatter_place(b, &r, ranks(b, &r, descending), &vals, &idx);
  else place(b, &r, ranks(b, &r, descending), p, &vals, &idx);
  trnc_status s = trnc_db_result(b, 0, from_rows(b, &r, vals, p));
  return s ? s : trnc_db_result(b, 1, from_rows(b, &r, idx, p));
}

/* sort(Tensor self, int dim=-1, bool descending=False)
 * sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) */
trnc_status decomp_sort(trnc_db *b, const trnc_node *n) {
  uint32_t a = n->op == TRNC_OP_SORT_STABLE ? 2 : 1;
  const trnc_type *t = trnc_db_type(b, n->args[0].u.ref);
  int64_t dim = trnc_arg_int(n, a, -1);
  int64_t len = t->rank ? t->shape[dim < 0 ? dim + t->rank : dim] : 1;
  return ranked(b, n, dim, len, trnc_arg_bool(n, a + 1, false));
}

/* topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) */
trnc_status decomp_topk(trnc_db *b, const trnc_node *n) {
  return ranked(b, n, trnc_arg_int(n, 2, -1), trnc_arg_int(n, 1, 1), trnc_arg_bool(n, 3, true));
}

/* histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) */
trnc_status decomp_histc(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  int64_t bins = trnc_arg_int(n, 1, 100), numel = trnc_type_numel(&t);
  /* the edges as eager's kernel holds them: in the input's float type */
  float lo = (float)trnc_arg_number(&n->args[2], 0), hi = (float)trnc_arg_number(&n->args[3], 0);
  float width = hi - lo;
  trnc_ref xf = trnc_db_view(b, DB(b, CLONE, V(x), NONE), 1, &numel);
  trnc_ref in = DB(b, LOGICAL_AND, V(DB(b, GE_SCALAR, V(xf), F(lo))),
                   V(DB(b, LE_SCALAR, V(xf), F(hi))));
  trnc_ref pos = DB(b, SUB_SCALAR, V(xf), F(lo), I(1));
  pos = DB(b, DIV_SCALAR, V(DB(b, MUL_SCALAR, V(pos), I(bins))), F(width));
  pos = DB(b, CLAMP, V(DB(b, TRUNC, V(pos))), NONE, F((double)(bins - 1)));
  trnc_ref bin = trnc_db_view(b, DB(b, ARANGE, I(bins), trnc_db_dtype(t.dtype), NONE, NONE, NONE),
                              2, (const int64_t[]){1, bins});
  trnc_ref hot = DB(b, EQ, V(trnc_db_view(b, pos, 2, (const int64_t[]){numel, 1})), V(bin));
  hot = DB(b, LOGICAL_AND, V(hot), V(trnc_db_view(b, in, 2, (const int64_t[]){numel, 1})));
  return trnc_db_result(b, 0, DB(b, SUM, V(hot), dims1(b, 0), trnc_db_bool(false),
                                 trnc_db_dtype(t.dtype)));
}

/* x with `dim` moved last and the other dims in order, as contiguous rows
 * [rows, len] (the whole tensor as one row when all). */
static rows as_rows_kept(trnc_db *b, trnc_ref x, int64_t dim, bool all) {
  const trnc_type t = *trnc_db_type(b, x);
  int64_t numel = trnc_type_numel(&t);
  int d = (int)(dim < 0 ? dim + t.rank : dim);
  rows r = {.len = all || t.rank == 0 ? numel : t.shape[d]};
  r.rows = numel / r.len;
  trnc_ref m = x;
  if (!all && t.rank > 1 && d != t.rank - 1) {
    int64_t perm[TRNC_MAX_RANK];
    for (int i = 0, k = 0; i < t.rank; i++)
      if (i != d) perm[k++] = i;
    perm[t.rank - 1] = d;
    m = DB(b, PERMUTE, V(x), trnc_db_ints(b, perm, t.rank));
  }
  r.x = trnc_db_view(b, DB(b, CLONE, V(m), NONE), 2, (const int64_t[]){r.rows, r.len});
  return r;
}

/* [rows, 1] of an int64 [rows, N] tensor's sum over the row. */
static trnc_ref row_sum(trnc_db *b, trnc_ref x) {
  return DB(b, SUM, V(x), dims1(b, -1), trnc_db_bool(true), trnc_db_dtype(TRNC_I64));
}

/* mode's choice: among the elements whose count of equal elements is the
 * row's largest and that are the last of their equals, the lowest ranked. */
static trnc_ref mode_hot(trnc_db *b, const rows *r, trnc_ref rank) {
  int64_t n = r->len;
  trnc_arg i64 = trnc_db_dtype(TRNC_I64);
  trnc_ref xi = trnc_db_view(b, r->x, 3, (const int64_t[]){r->rows, n, 1});
  trnc_ref xj = trnc_db_view(b, r->x, 3, (const int64_t[]){r->rows, 1, n});
  trnc_ref idx = DB(b, ARANGE, I(n), i64, NONE, NONE, NONE);
  trnc_ref ii = DB(b, UNSQUEEZE, V(idx), I(1)), jj = DB(b, UNSQUEEZE, V(idx), I(0));
  trnc_ref eq = DB(b, LOGICAL_OR, V(DB(b, EQ, V(xj), V(xi))), V(DB(b, EQ, V(jj), V(ii))));
  trnc_ref count = DB(b, SUM, V(eq), dims1(b, -1), trnc_db_bool(false), i64);
  trnc_ref later = DB(b, SUM, V(DB(b, LOGICAL_AND, V(eq), V(DB(b, GT, V(jj), V(ii))))),
                      dims1(b, -1), trnc_db_bool(false), i64);
  trnc_ref most = DB(b, AMAX, V(count), dims1(b, -1), trnc_db_bool(true));
  trnc_ref cand = DB(b, LOGICAL_AND, V(DB(b, EQ, V(count), V(most))),
                     V(DB(b, EQ_SCALAR, V(later), I(0))));
  trnc_ref first = DB(b, AMIN, V(DB(b, WHERE, V(cand), V(rank), I(n))), dims1(b, -1),
                      trnc_db_bool(true));
  return DB(b, EQ, V(rank), V(first));
}

/* median / median.dim / nanmedian / nanmedian.dim (self, [dim, keepdim]),
 * kthvalue(self, k, dim, keepdim), mode(self, dim, keepdim) */
trnc_status decomp_median(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  trnc_dtype dt = trnc_db_type(b, x)->dtype;
  bool all = n->op == TRNC_OP_MEDIAN_ALL || n->op == TRNC_OP_NANMEDIAN_ALL;
  bool nan = n->op == TRNC_OP_NANMEDIAN_ALL || n->op == TRNC_OP_NANMEDIAN_DIM;
  int64_t dim = all ? 0 : trnc_arg_int(n, n->op == TRNC_OP_KTHVALUE ? 2 : 1, -1);
  rows r = as_rows_kept(b, x, dim, all);
  int64_t len = r.len;
  trnc_ref rank = ranks(b, &r, false), hot;
  if (n->op == TRNC_OP_KTHVALUE) {
    hot = DB(b, EQ_SCALAR, V(rank), I(trnc_arg_int(n, 1, 1) - 1));
  } else if (n->op == TRNC_OP_MODE) {
    hot = mode_hot(b, &r, rank);
  } else if (!is_float(dt)) {
    hot = DB(b, EQ_SCALAR, V(rank), I((len - 1) / 2));
  } else {
    trnc_ref nans = row_sum(b, DB(b, ISNAN, V(r.x)));
    if (nan) { /* 2k == m or 2k + 1 == m, m = max(N - nans - 1, 0) */
      trnc_ref m = DB(b, CLAMP, V(DB(b, RSUB_SCALAR, V(nans), I(len - 1), I(1))), I(0), NONE);
      trnc_ref k2 = DB(b, MUL_SCALAR, V(rank), I(2));
      hot = DB(b, LOGICAL_OR, V(DB(b, EQ, V(k2), V(m))),
               V(DB(b, EQ, V(DB(b, ADD_SCALAR, V(k2), I(1), I(1))), V(m))));
    } else {
      trnc_ref k = DB(b, WHERE, V(DB(b, GT_SCALAR, V(nans), I(0))),
                      V(DB(b, RSUB_SCALAR, V(nans), I(len), I(1))), I((len - 1) / 2));
      hot = DB(b, EQ, V(rank), V(k));
    }
  }
  trnc_arg zero = is_float(dt) ? F(0.0) : I(0);
  trnc_ref val = DB(b, SUM, V(DB(b, WHERE, V(hot), V(r.x), zero)), dims1(b, -1),
                    trnc_db_bool(false), trnc_db_dtype(dt));
  const trnc_type *vt = trnc_db_type(b, n->outs[0]);
  trnc_status s = trnc_db_result(b, 0, trnc_db_view(b, val, vt->rank, vt->shape));
  if (s || all) return s;
  trnc_ref ii = trnc_db_view(b, DB(b, ARANGE, I(len), trnc_db_dtype(TRNC_I64), NONE, NONE, NONE),
                             2, (const int64_t[]){1, len});
  trnc_ref idx = DB(b, SUM, V(DB(b, WHERE, V(hot), V(ii), I(0))), dims1(b, -1),
                    trnc_db_bool(false), trnc_db_dtype(TRNC_I64));
  return trnc_db_result(b, 1, trnc_db_view(b, idx, vt->rank, vt->shape));
}
