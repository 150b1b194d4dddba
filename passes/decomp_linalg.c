/*
 * decomp_linalg.c — dense linear algebra of small matrices (LU with partial
 * pivoting, triangular solves, Cholesky, and what torch builds from them:
 * det, slogdet, inv, solve, lu_solve, lu, lu_unpack, cholesky_solve,
 * cholesky_inverse) as unrolled elementwise steps (see decompose.h for the
 * builder).
 *
 * Matrices are the last two dims of float32 tensors; every leading dim is a
 * batch dim, broadcast between operands as torch does. The algorithms are
 * LAPACK's unblocked ones in their order of operations, one graph step per
 * column (the matrix size is bounded by the op table's limit,
 * TRNC_LINALG_MAX_N in ir/ops.c), so results agree with eager's LAPACK to
 * float32 rounding:
 *   getf2  step k: p = argmax |A[k:, k]| (first on ties), swap rows k and p,
 *          l = A[k+1:, k] * (1 / A[k, k]) (unscaled when the pivot is 0),
 *          A[k+1:, k+1:] -= l u with u = A[k, k+1:]
 *   trsm   column sweep: x_j = B[j] / T[j, j], B[rest] -= T[rest, j] x_j
 *   potf2  step j: d = sqrt(S[j, j]), c = S[j+1:, j] * (1 / d),
 *          S[j+1:, j+1:] -= c c^T, over the symmetric matrix of the one
 *          triangle LAPACK reads
 * Row swaps and the placement of each step's results are selects (where),
 * so they move values exactly. Pivots are 1-based int32 and info is
 * LAPACK's (the first zero pivot, the first non-positive Cholesky diagonal).
 */
#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* x[..., k:k+1, :] (dim -2) or x[..., :, k:k+1] (dim -1): a view. */
static trnc_ref at(trnc_db *b, trnc_ref x, int dim, int64_t k) {
  return DB(b, SLICE, V(x), I(dim), I(k), I(k + 1), I(1));
}

static trnc_ref tr(trnc_db *b, trnc_ref x) { return DB(b, TRANSPOSE, V(x), I(-2), I(-1)); }

/* 0..n-1 as int64 [n, 1] (a row index) or [n] (a column index). */
static trnc_ref iota(trnc_db *b, int64_t n, bool column) {
  trnc_ref r = DB(b, ARANGE, I(n), trnc_db_dtype(TRNC_I64), NONE, NONE, NONE);
  int64_t shape[2] = {n, 1};
  return column ? trnc_db_view(b, r, 2, shape) : r;
}

/* The broadcast batch of a and c (their dims but the last two) followed by
 * rows x cols, in out; returns its rank. */
static int batch_of(trnc_db *b, trnc_ref a, trnc_ref c, int64_t rows, int64_t cols,
                    int64_t *out) {
  const trnc_type *ta = trnc_db_type(b, a), *tc = c == TRNC_NO_REF ? ta : trnc_db_type(b, c);
  int ra = ta->rank - 2, rc = tc->rank - 2, r = ra > rc ? ra : rc;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - ra), ic = i - (r - rc);
    int64_t da = ia >= 0 ? ta->shape[ia] : 1, dc = ic >= 0 ? tc->shape[ic] : 1;
    out[i] = da == 1 ? dc : da;
  }
  out[r] = rows;
  out[r + 1] = cols;
  return r + 2;
}

static trnc_ref expand_to(trnc_db *b, trnc_ref x, int rank, const int64_t *shape) {
  return DB(b, EXPAND, V(x), trnc_db_ints(b, shape, rank), trnc_db_bool(false));
}

/* Rows k and p of x [..., m, c] swapped; p [..., 1, 1] int64 (0-based) with
 * x's batch; ri the [m, 1] row index. */
static trnc_ref swap_rows(trnc_db *b, trnc_ref x, trnc_ref ri, int64_t k, trnc_ref p) {
  const trnc_type *t = trnc_db_type(b, x);
  int64_t shape[TRNC_MAX_RANK];
  for (int i = 0; i < t->rank; i++) shape[i] = t->shape[i];
  shape[t->rank - 2] = 1;
  trnc_ref rowp = DB(b, GATHER, V(x), I(-2), V(expand_to(b, p, t->rank, shape)), trnc_db_bool(false));
  trnc_ref isk = DB(b, EQ_SCALAR, V(ri), I(k)), isp = DB(b, EQ, V(ri), V(p));
  return DB(b, WHERE, V(isk), V(rowp), V(DB(b, WHERE, V(isp), V(at(b, x, -2, k)), V(x))));
}

/* argmax of c [..., m, 1] along dim -2, keepdim, as eager's argmax: the
 * first maximum, or the first NaN (amax, then amin of the row index where
 * c equals it or is NaN; ri the [m, 1] row index). */
static trnc_ref first_max(trnc_db *b, trnc_ref c, trnc_ref ri, int64_t m) {
  int64_t d = -2;
  trnc_ref mx = DB(b, AMAX, V(c), trnc_db_ints(b, &d, 1), trnc_db_bool(true));
  trnc_ref hit = DB(b, LOGICAL_OR, V(DB(b, EQ, V(c), V(mx))), V(DB(b, NE, V(c), V(c))));
  return DB(b, AMIN, V(DB(b, WHERE, V(hit), V(ri), I(m))), trnc_db_ints(b, &d, 1), trnc_db_bool(true));
}

typedef struct lu {
  trnc_ref lu;                         /* [..., m, n] */
  trnc_ref piv[TRNC_LINALG_MAX_N];     /* step k's pivot row, [..., 1, 1] int64, 0-based */
  int64_t m, n, k;                     /* k = min(m, n) steps */
} lu;

/* getf2 over a [..., m, n] (float32, any layout). */
static void lu_factor(trnc_db *b, trnc_ref a, lu *f) {
  const trnc_type *t = trnc_db_type(b, a);
  f->m = t->shape[t->rank - 2];
  f->n = t->shape[t->rank - 1];
  f->k = f->m < f->n ? f->m : f->n;
  trnc_ref ri = iota(b, f->m, true), ci = iota(b, f->n, false);
  for (int64_t k = 0; k < f->k; k++) {
    trnc_ref c = DB(b, ABS, V(at(b, a, -1, k)));
    c = DB(b, MASKED_FILL, V(c), V(DB(b, LT_SCALAR, V(ri), I(k))), F(-1.0));
    trnc_ref p = first_max(b, c, ri, f->m);
    f->piv[k] = p;
    a = swap_rows(b, a, ri, k, p);
    trnc_ref d = at(b, at(b, a, -2, k), -1, k);
    trnc_ref r = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(d), F(0.0))), F(1.0), V(DB(b, RECIPROCAL, V(d))));
    trnc_ref l = DB(b, MUL, V(at(b, a, -1, k)), V(r));
    trnc_ref upd = DB(b, SUB, V(a), V(DB(b, MUL, V(l), V(at(b, a, -2, k)))), I(1));
    trnc_ref below = DB(b, GT_SCALAR, V(ri), I(k));
    trnc_ref trail = DB(b, LOGICAL_AND, V(below), V(DB(b, GT_SCALAR, V(ci), I(k))));
    trnc_ref lcol = DB(b, LOGICAL_AND, V(below), V(DB(b, EQ_SCALAR, V(ci), I(k))));
    a = DB(b, WHERE, V(trail), V(upd), V(DB(b, WHERE, V(lcol), V(l), V(a))));
  }
  f->lu = a;
}

/* The step pivots as the 1-based int32 pivots tensor [..., k]. */
static trnc_ref lu_pivots(trnc_db *b, const lu *f) {
  trnc_ref p = f->k == 1 ? f->piv[0] : DB(b, CAT, trnc_db_vals(b, f->piv, (int)f->k), I(-1));
  p = DB(b, SQUEEZE_DIM, V(p), I(-2));
  return trnc_db_cast(b, DB(b, ADD_SCALAR, V(p), I(1), I(1)), TRNC_I32);
}

/* LAPACK's info of a [..., k] float32 vector v: 1 + the first index where
 * bad(v) holds, 0 if none (int32 [...]). */
static trnc_ref first_bad(trnc_db *b, trnc_ref bad) {
  int64_t k = trnc_db_type(b, bad)->shape[trnc_db_type(b, bad)->rank - 1], last = -1;
  trnc_ref one_based = DB(b, ADD_SCALAR, V(iota(b, k, false)), I(1), I(1));
  trnc_ref first = DB(b, AMIN, V(DB(b, WHERE, V(bad), V(one_based), I(k + 1))),
                      trnc_db_ints(b, &last, 1), trnc_db_bool(false));
  trnc_ref info = DB(b, WHERE, V(DB(b, GT_SCALAR, V(first), I(k))), I(0), V(first));
  return trnc_db_cast(b, info, TRNC_I32);
}

static trnc_ref lu_diag(trnc_db *b, const lu *f) { return DB(b, DIAGONAL, V(f->lu), I(0), I(-2), I(-1)); }

static trnc_ref lu_info(trnc_db *b, const lu *f) {
  return first_bad(b, DB(b, EQ_SCALAR, V(lu_diag(b, f)), F(0.0)));
}

/* The permutation's sign, prod over steps of (p_k == k ? 1 : -1), [...]. */
static trnc_ref perm_sign(trnc_db *b, const lu *f) {
  trnc_ref s = TRNC_NO_REF;
  for (int64_t k = 0; k < f->k; k++) {
    trnc_ref sk = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(f->piv[k]), I(k))), F(1.0), F(-1.0));
    s = k == 0 ? sk : DB(b, MUL, V(s), V(sk));
  }
  return DB(b, SQUEEZE_DIM, V(DB(b, SQUEEZE_DIM, V(s), I(-1))), I(-1));
}

/* Solves T X = B by trsm's column sweep: T [..., n, n] (only its lower or
 * upper triangle is read, and its diagonal unless unit), B [..., n, r]. */
static trnc_ref trsm(trnc_db *b, trnc_ref T, trnc_ref B, bool lower, bool unit) {
  const trnc_type *t = trnc_db_type(b, T);
  int64_t n = t->shape[t->rank - 1];
  trnc_ref ri = iota(b, n, true);
  for (int64_t s = 0; s < n; s++) {
    int64_t j = lower ? s : n - 1 - s;
    trnc_ref x = at(b, B, -2, j);
    if (!unit) x = DB(b, DIV, V(x), V(at(b, at(b, T, -2, j), -1, j)));
    trnc_ref upd = DB(b, SUB, V(B), V(DB(b, MUL, V(at(b, T, -1, j)), V(x))), I(1));
    trnc_ref rest = lower ? DB(b, GT_SCALAR, V(ri), I(j)) : DB(b, LT_SCALAR, V(ri), I(j));
    B = DB(b, WHERE, V(rest), V(upd), V(DB(b, WHERE, V(DB(b, EQ_SCALAR, V(ri), I(j))), V(x), V(B))));
  }
  return B;
}

/* B [..., n, r] with the pivots' row swaps applied, in order (forward) or
 * reversed; piv[k] [..., 1, 1] int64. B is expanded to the common batch. */
static trnc_ref apply_pivots(trnc_db *b, trnc_ref B, const trnc_ref *piv, int64_t k, bool forward) {
  const trnc_type *t = trnc_db_type(b, B);
  int64_t shape[TRNC_MAX_RANK];
  int rank = batch_of(b, B, piv[0], t->shape[t->rank - 2], t->shape[t->rank - 1], shape);
  B = expand_to(b, B, rank, shape);
  trnc_ref ri = iota(b, shape[rank - 2], true);
  for (int64_t s = 0; s < k; s++) {
    int64_t j = forward ? s : k - 1 - s;
    int64_t pshape[TRNC_MAX_RANK];
    for (int i = 0; i < rank - 2; i++) pshape[i] = shape[i];
    pshape[rank - 2] = pshape[rank - 1] = 1;
    B = swap_rows(b, B, ri, j, expand_to(b, piv[j], rank, pshape));
  }
  return B;
}

/* X with A X = B (or A^T X = B when adjoint), A = P L U of the factorization
 * lu_m (LU [..., n, n]) and its pivots; left = false solves X A = B (X A^T
 * = B when adjoint) through the transposes. */
static trnc_ref lu_solve(trnc_db *b, trnc_ref LU, const trnc_ref *piv, int64_t n, trnc_ref B,
                         bool left, bool adjoint) {
  if (!left) return tr(b, lu_solve(b, LU, piv, n, tr(b, B), true, !adjoint));
  if (!adjoint) {
    trnc_ref y = trsm(b, LU, apply_pivots(b, B, piv, n, true), true, true);
    return trsm(b, LU, y, false, false);
  }
  trnc_ref y = trsm(b, tr(b, LU), B, true, false);
  return apply_pivots(b, trsm(b, tr(b, LU), y, false, true), piv, n, false);
}

/* The identity [n, n] (float32) broadcast to batch-and-matrix shape. */
static trnc_ref eye(trnc_db *b, int rank, const int64_t *shape) {
  int64_t n = shape[rank - 1];
  trnc_ref e = DB(b, EQ, V(iota(b, n, true)), V(iota(b, n, false)));
  return expand_to(b, trnc_db_cast(b, e, TRNC_F32), rank, shape);
}

static trnc_status results(trnc_db *b, const trnc_ref *r, uint32_t n) {
  for (uint32_t k = 0; k < n; k++) {
    trnc_status st = trnc_db_result(b, k, r[k]);
    if (st) return st;
  }
  return TRNC_OK;
}

/* An op over empty matrices (a dim of 0, in the batch or the matrix): every
 * result is empty but det's and slogdet's over 0 x 0 matrices (1; sign 1,
 * log 0), and info 0. Returns false, emitting nothing, when no tensor
 * operand is empty. */
static bool empty_case(trnc_db *b, const trnc_node *n, trnc_status *st) {
  bool empty = false;
  for (uint32_t i = 0; i < n->nargs; i++)
    if (n->args[i].kind == TRNC_ARG_VALUE && trnc_type_numel(trnc_db_type(b, n->args[i].u.ref)) == 0)
      empty = true;
  if (!empty) return false;
  *st = TRNC_OK;
  for (uint32_t k = 0; k < n->nouts && !*st; k++) {
    const trnc_type t = *trnc_db_type(b, n->outs[k]);
    bool one = k == 0 && (n->op == TRNC_OP_LINALG_DET || n->op == TRNC_OP_LINALG_SLOGDET);
    trnc_ref v = one ? DB(b, FULL, trnc_db_ints(b, t.shape, t.rank), F(1.0), trnc_db_dtype(t.dtype),
                          NONE, NONE, NONE)
                     : trnc_db_zeros(b, t.dtype, t.rank, t.shape);
    *st = trnc_db_result(b, k, v);
  }
  return true;
}

/* linalg_lu_factor_ex, _linalg_det, _linalg_slogdet, linalg_inv_ex,
 * _linalg_solve_ex: one LU factorization and what is computed from it. */
trnc_status decomp_lu(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  lu f;
  trnc_ref a = trnc_db_f32(b, n->args[0].u.ref);
  /* det and slogdet factor A^T as eager does (det A^T = det A): their LU
   * and pivots outputs, which their backwards read, are those of A^T */
  bool det = n->op == TRNC_OP_LINALG_DET || n->op == TRNC_OP_LINALG_SLOGDET;
  lu_factor(b, det ? tr(b, a) : a, &f);
  trnc_ref r[4];
  switch (n->op) {
    case TRNC_OP_LINALG_LU_FACTOR_EX:
      r[0] = f.lu, r[1] = lu_pivots(b, &f), r[2] = lu_info(b, &f);
      return results(b, r, 3);
    case TRNC_OP_LINALG_DET: {
      trnc_ref prod = DB(b, PROD, V(lu_diag(b, &f)), I(-1), trnc_db_bool(false), NONE);
      r[0] = DB(b, MUL, V(prod), V(perm_sign(b, &f))), r[1] = f.lu, r[2] = lu_pivots(b, &f);
      return results(b, r, 3);
    }
    case TRNC_OP_LINALG_SLOGDET: {
      int64_t last = -1;
      trnc_ref d = lu_diag(b, &f);
      trnc_ref sign = DB(b, PROD, V(DB(b, SIGN, V(d))), I(-1), trnc_db_bool(false), NONE);
      r[0] = DB(b, MUL, V(sign), V(perm_sign(b, &f)));
      r[1] = DB(b, SUM, V(DB(b, LOG, V(DB(b, ABS, V(d))))), trnc_db_ints(b, &last, 1),
                trnc_db_bool(false), NONE);
      r[2] = f.lu, r[3] = lu_pivots(b, &f);
      return results(b, r, 4);
    }
    case TRNC_OP_LINALG_INV_EX: {
      const trnc_type *t = trnc_db_type(b, f.lu);
      r[0] = lu_solve(b, f.lu, f.piv, f.n, eye(b, t->rank, t->shape), true, false);
      r[1] = lu_info(b, &f);
      return results(b, r, 2);
    }
    default: { /* _LINALG_SOLVE_EX(A, B, left, check_errors) */
      trnc_ref B = trnc_db_f32(b, n->args[1].u.ref);
      const trnc_type *ta = trnc_db_type(b, f.lu), *tb = trnc_db_type(b, B);
      bool left = trnc_arg_bool(n, 2, true);
      /* torch's linalg_solve_is_vector_rhs: B is [n] or A's batch and [n] */
      bool vec = tb->rank == 1 || (tb->rank == ta->rank - 1 && tb->shape[tb->rank - 1] == f.n);
      for (int i = 0; vec && tb->rank > 1 && i < tb->rank - 1; i++) vec = tb->shape[i] == ta->shape[i];
      if (vec) B = DB(b, UNSQUEEZE, V(B), I(left ? -1 : -2));
      trnc_ref x = lu_solve(b, f.lu, f.piv, f.n, B, left, false);
      r[0] = vec ? DB(b, SQUEEZE_DIM, V(x), I(left ? -1 : -2)) : x;
      r[1] = f.lu, r[2] = lu_pivots(b, &f), r[3] = lu_info(b, &f);
      return results(b, r, 4);
    }
  }
}

/* linalg_lu_solve(LU, pivots, B, left, adjoint). */
trnc_status decomp_lu_solve(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  trnc_ref LU = trnc_db_f32(b, n->args[0].u.ref), pv = n->args[1].u.ref;
  const trnc_type *t = trnc_db_type(b, LU);
  int64_t k = t->shape[t->rank - 1];
  trnc_ref piv[TRNC_LINALG_MAX_N];
  trnc_ref p0 = DB(b, ADD_SCALAR, V(trnc_db_cast(b, pv, TRNC_I64)), I(-1), I(1));
  for (int64_t j = 0; j < k; j++) piv[j] = DB(b, UNSQUEEZE, V(at(b, p0, -1, j)), I(-1));
  trnc_ref x = lu_solve(b, LU, piv, k, trnc_db_f32(b, n->args[2].u.ref), trnc_arg_bool(n, 3, true),
                        trnc_arg_bool(n, 4, false));
  return trnc_db_result(b, 0, x);
}

/* linalg_solve_triangular(A, B, upper, left, unitriangular) and
 * triangular_solve(B, A, upper, transpose, unitriangular). */
trnc_status decomp_solve_triangular(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  bool ts = n->op == TRNC_OP_TRIANGULAR_SOLVE;
  trnc_ref A = trnc_db_f32(b, n->args[ts ? 1 : 0].u.ref), B = trnc_db_f32(b, n->args[ts ? 0 : 1].u.ref);
  bool upper = trnc_arg_bool(n, 2, true), unit = trnc_arg_bool(n, 4, false);
  bool left = ts || trnc_arg_bool(n, 3, true), trans = ts && trnc_arg_bool(n, 3, false);
  trnc_ref x;
  if (!left) /* X A = B: A^T X^T = B^T */
    x = tr(b, trsm(b, tr(b, A), tr(b, B), upper, unit));
  else
    x = trsm(b, trans ? tr(b, A) : A, B, trans ? upper : !upper, unit);
  st = trnc_db_result(b, 0, x);
  if (st || !ts) return st;
  const trnc_type *ta = trnc_db_type(b, A);
  int64_t shape[TRNC_MAX_RANK];
  int rank = batch_of(b, A, B, ta->shape[ta->rank - 2], ta->shape[ta->rank - 1], shape);
  return trnc_db_result(b, 1, DB(b, CLONE, V(expand_to(b, A, rank, shape)), NONE));
}

/* L with L L^T = A from A's lower triangle (upper: U with U^T U = A from
 * its upper triangle, U = L^T of A^T's lower one); *info as LAPACK's. */
static trnc_ref cholesky(trnc_db *b, trnc_ref A, bool upper, trnc_ref *info) {
  if (upper) A = tr(b, A);
  const trnc_type *t = trnc_db_type(b, A);
  int64_t n = t->shape[t->rank - 1];
  trnc_ref ri = iota(b, n, true), ci = iota(b, n, false);
  trnc_ref lower = DB(b, GE, V(ri), V(ci));
  trnc_ref S = DB(b, WHERE, V(lower), V(A), V(tr(b, A)));
  trnc_ref d2[TRNC_LINALG_MAX_N];
  for (int64_t j = 0; j < n; j++) {
    d2[j] = at(b, at(b, S, -2, j), -1, j);
    trnc_ref d = DB(b, SQRT, V(d2[j]));
    trnc_ref c = DB(b, MUL, V(at(b, S, -1, j)), V(DB(b, RECIPROCAL, V(d))));
    trnc_ref upd = DB(b, SUB, V(S), V(DB(b, MUL, V(c), V(tr(b, c)))), I(1));
    trnc_ref below = DB(b, GT_SCALAR, V(ri), I(j)), right = DB(b, GT_SCALAR, V(ci), I(j));
    trnc_ref atcol = DB(b, EQ_SCALAR, V(ci), I(j));
    trnc_ref diag = DB(b, LOGICAL_AND, V(DB(b, EQ_SCALAR, V(ri), I(j))), V(atcol));
    S = DB(b, WHERE, V(DB(b, LOGICAL_AND, V(below), V(right))), V(upd),
           V(DB(b, WHERE, V(DB(b, LOGICAL_AND, V(below), V(atcol))), V(c),
                V(DB(b, WHERE, V(diag), V(d), V(S))))));
  }
  if (info) {
    trnc_ref v = n == 1 ? d2[0] : DB(b, CAT, trnc_db_vals(b, d2, (int)n), I(-1));
    v = DB(b, SQUEEZE_DIM, V(v), I(-2));
    trnc_ref bad = DB(b, LOGICAL_OR, V(DB(b, LE_SCALAR, V(v), F(0.0))), V(DB(b, NE, V(v), V(v))));
    *info = first_bad(b, bad);
  }
  trnc_ref L = DB(b, WHERE, V(lower), V(S), F(0.0));
  return upper ? tr(b, L) : L;
}

/* X with A X = B, A = L L^T (upper: U^T U) from its Cholesky factor. */
static trnc_ref chol_solve(trnc_db *b, trnc_ref L, trnc_ref B, bool upper) {
  if (upper) L = tr(b, L);
  return trsm(b, tr(b, L), trsm(b, L, B, true, false), false, false);
}

/* linalg_cholesky_ex, cholesky, cholesky_solve, cholesky_inverse. */
trnc_status decomp_cholesky(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  switch (n->op) {
    case TRNC_OP_LINALG_CHOLESKY_EX: {
      trnc_ref r[2];
      r[0] = cholesky(b, x, trnc_arg_bool(n, 1, false), &r[1]);
      return results(b, r, 2);
    }
    case TRNC_OP_CHOLESKY:
      return trnc_db_result(b, 0, cholesky(b, x, trnc_arg_bool(n, 1, false), NULL));
    case TRNC_OP_CHOLESKY_SOLVE:
      return trnc_db_result(b, 0, chol_solve(b, trnc_db_f32(b, n->args[1].u.ref), x,
                                             trnc_arg_bool(n, 2, false)));
    default: { /* CHOLESKY_INVERSE(L, upper) */
      const trnc_type *t = trnc_db_type(b, x);
      return trnc_db_result(b, 0, chol_solve(b, x, eye(b, t->rank, t->shape), trnc_arg_bool(n, 1, false)));
    }
  }
}

/* P, L, U of A = P L U from an LU factorization [..., m, n] and its step
 * pivots: P [..., m, m] the transposed row swaps of the identity, L
 * [..., m, k] unit lower, U [..., k, n] upper. */
static trnc_status unpack(trnc_db *b, trnc_ref LU, const trnc_ref *piv, int64_t k, bool data,
                          bool pivots) {
  const trnc_type *t = trnc_db_type(b, LU);
  int rank = t->rank;
  int64_t m = t->shape[rank - 2], nn = t->shape[rank - 1], shape[TRNC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = t->shape[i];
  shape[rank - 1] = m;
  trnc_ref P = eye(b, rank, shape);
  P = tr(b, apply_pivots(b, P, piv, k, true));
  trnc_ref ri = iota(b, m, true), ci = iota(b, nn, false);
  trnc_ref Lf = DB(b, WHERE, V(DB(b, GT, V(ri), V(ci))), V(LU),
                   V(DB(b, WHERE, V(DB(b, EQ, V(ri), V(ci))), F(1.0), F(0.0))));
  trnc_ref Uf = DB(b, WHERE, V(DB(b, LE, V(ri), V(ci))), V(LU), F(0.0));
  trnc_ref r[3] = {P, DB(b, SLICE, V(Lf), I(-1), I(0), I(k), I(1)),
                   DB(b, SLICE, V(Uf), I(-2), I(0), I(k), I(1))};
  int64_t none = 0; /* what lu_unpack does not unpack is an empty [0] */
  for (uint32_t i = 0; i < 3; i++)
    r[i] = (i == 0 ? pivots : data) ? DB(b, CLONE, V(r[i]), NONE) : trnc_db_zeros(b, TRNC_F32, 1, &none);
  return results(b, r, 3);
}

/* linalg_lu(A, pivot) and lu_unpack(LU, pivots, unpack_data, unpack_pivots). */
trnc_status decomp_lu_unpack(trnc_db *b, const trnc_node *n) {
  if (n->op == TRNC_OP_LINALG_LU) {
    lu f;
    lu_factor(b, trnc_db_f32(b, n->args[0].u.ref), &f);
    return unpack(b, f.lu, f.piv, f.k, true, true);
  }
  trnc_ref LU = trnc_db_f32(b, n->args[0].u.ref);
  const trnc_type *tp = trnc_db_type(b, n->args[1].u.ref);
  int64_t k = tp->shape[tp->rank - 1];
  trnc_ref piv[TRNC_LINALG_MAX_N];
  trnc_ref p0 = DB(b, ADD_SCALAR, V(trnc_db_cast(b, n->args[1].u.ref, TRNC_I64)), I(-1), I(1));
  for (int64_t j = 0; j < k; j++) piv[j] = DB(b, UNSQUEEZE, V(at(b, p0, -1, j)), I(-1));
  return unpack(b, LU, piv, k, trnc_arg_bool(n, 2, true), trnc_arg_bool(n, 3, true));
}
