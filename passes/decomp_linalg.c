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
 * matrix_exp is scaling and squaring (Higham's, with a Taylor polynomial):
 *   s = ceil(log2(2 |A|_1)) in [0, TRNC_MATRIX_EXP_SQUARINGS], A halved s
 *   times (exact), T = sum_{k<=12} A^k / k! by Horner's rule (truncation
 *   below 1e-10 relative at |A|_1 <= 1/2), then T squared s times; the
 *   halvings and squarings are fixed steps, each selecting by s.
 * Row swaps and the placement of each step's results are selects (where),
 * so they move values exactly. Pivots are 1-based int32 and info is
 * LAPACK's (the first zero pivot, the first non-positive Cholesky diagonal).
 */
#include "passes/decompose.h"

#include <string.h>

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

/* ---- QR, symmetric eigendecomposition, SVD --------------------------------- */

/* x [..., p, q] times y [..., q, r] of one batch, through bmm over the
 * flattened batch. */
static trnc_ref bmm(trnc_db *b, trnc_ref x, trnc_ref y) {
  const trnc_type *tx = trnc_db_type(b, x), *ty = trnc_db_type(b, y);
  int rank = tx->rank;
  int64_t batch = 1, shape[TRNC_MAX_RANK];
  for (int i = 0; i < rank - 2; i++) batch *= tx->shape[i], shape[i] = tx->shape[i];
  int64_t p = tx->shape[rank - 2], q = tx->shape[rank - 1], r = ty->shape[rank - 1];
  int64_t x3[3] = {batch, p, q}, y3[3] = {batch, q, r};
  trnc_ref o = DB(b, BMM, V(trnc_db_view(b, trnc_db_f32(b, x), 3, x3)),
                  V(trnc_db_view(b, trnc_db_f32(b, y), 3, y3)));
  shape[rank - 2] = p;
  shape[rank - 1] = r;
  return trnc_db_view(b, o, rank, shape);
}

/* sum over dim -2 keeping it: [..., m, c] -> [..., 1, c]. */
static trnc_ref colsum(trnc_db *b, trnc_ref x) {
  int64_t d = -2;
  return DB(b, SUM, V(x), trnc_db_ints(b, &d, 1), trnc_db_bool(true), NONE);
}

/* geqr2 over a [..., m, n]: k = min(m, n) Householder steps, LAPACK's dlarfg
 * for step j (alpha = A[j, j], x = A[j+1:, j]):
 *   beta = -sign(alpha) hypot(alpha, |x|), tau = (beta - alpha) / beta,
 *   v = [1, x / (alpha - beta)], A[j:, j+1:] -= tau v (v^T A[j:, j+1:])
 * (tau = 0, H = I, when x = 0). Returns R (the upper triangle, [..., m, n]);
 * v[j] [..., m, 1] (zero above row j) and tau[j] [..., 1, 1]. */
static trnc_ref geqr2(trnc_db *b, trnc_ref A, int64_t k, trnc_ref *v, trnc_ref *tau) {
  const trnc_type *t = trnc_db_type(b, A);
  int64_t m = t->shape[t->rank - 2], n = t->shape[t->rank - 1];
  trnc_ref ri = iota(b, m, true), ci = iota(b, n, false);
  for (int64_t j = 0; j < k; j++) {
    trnc_ref col = at(b, A, -1, j), alpha = at(b, col, -2, j);
    trnc_ref below = DB(b, GT_SCALAR, V(ri), I(j));
    trnc_ref x = DB(b, WHERE, V(below), V(col), F(0.0));
    trnc_ref xn2 = colsum(b, DB(b, MUL, V(x), V(x)));
    trnc_ref norm = DB(b, SQRT, V(DB(b, ADD, V(DB(b, MUL, V(alpha), V(alpha))), V(xn2), I(1))));
    trnc_ref zero = DB(b, EQ_SCALAR, V(xn2), F(0.0));
    trnc_ref beta = DB(b, WHERE, V(zero), V(alpha),
                       V(DB(b, WHERE, V(DB(b, GE_SCALAR, V(alpha), F(0.0))), V(DB(b, NEG, V(norm))),
                            V(norm))));
    tau[j] = DB(b, WHERE, V(zero), F(0.0), V(DB(b, DIV, V(DB(b, SUB, V(beta), V(alpha), I(1))), V(beta))));
    trnc_ref sc = DB(b, WHERE, V(zero), F(0.0),
                     V(DB(b, RECIPROCAL, V(DB(b, SUB, V(alpha), V(beta), I(1))))));
    v[j] = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(ri), I(j))), F(1.0), V(DB(b, MUL, V(x), V(sc))));
    trnc_ref w = colsum(b, DB(b, MUL, V(v[j]), V(A)));
    trnc_ref upd = DB(b, SUB, V(A), V(DB(b, MUL, V(DB(b, MUL, V(v[j]), V(tau[j]))), V(w))), I(1));
    trnc_ref here = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(ri), I(j))), V(beta),
                       V(DB(b, WHERE, V(below), F(0.0), V(A))));
    A = DB(b, WHERE, V(DB(b, GT_SCALAR, V(ci), I(j))), V(upd),
           V(DB(b, WHERE, V(DB(b, EQ_SCALAR, V(ci), I(j))), V(here), V(A))));
  }
  return A;
}

/* org2r: the first qc columns of H_0 ... H_{k-1} (reflectors v, tau of
 * geqr2 over a matrix of type t), applied to the identity's columns from
 * the last reflector to the first. */
static trnc_ref org2r(trnc_db *b, const trnc_type *t, int64_t k, int64_t qc, const trnc_ref *v,
                      const trnc_ref *tau) {
  int rank = t->rank;
  int64_t m = t->shape[rank - 2], shape[TRNC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = t->shape[i];
  shape[rank - 1] = m;
  trnc_ref Q = eye(b, rank, shape);
  if (qc < m) Q = DB(b, SLICE, V(Q), I(-1), I(0), I(qc), I(1));
  for (int64_t j = k - 1; j >= 0; j--) {
    trnc_ref w = colsum(b, DB(b, MUL, V(v[j]), V(Q)));
    Q = DB(b, SUB, V(Q), V(DB(b, MUL, V(DB(b, MUL, V(v[j]), V(tau[j]))), V(w))), I(1));
  }
  return Q;
}

/* linalg_qr(A, mode): R from geqr2, Q = H_0 ... H_{k-1} applied to the
 * identity's first m (complete) or k columns, from the last reflector to
 * the first as org2r. */
trnc_status decomp_qr(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  const trnc_arg *ma = n->nargs > 1 ? &n->args[1] : NULL;
  const char *mode = ma && ma->kind == TRNC_ARG_STR ? ma->u.s : "reduced";
  bool complete = !strcmp(mode, "complete"), only_r = !strcmp(mode, "r");
  const trnc_type *q = trnc_db_type(b, n->outs[0]), *rt = trnc_db_type(b, n->outs[1]);
  if (complete && trnc_type_numel(q) > 0 && trnc_type_numel(rt) == 0) {
    /* m x 0 matrices: Q is the identity */
    trnc_ref r[2] = {eye(b, q->rank, q->shape), trnc_db_zeros(b, TRNC_F32, rt->rank, rt->shape)};
    return results(b, r, 2);
  }
  if (empty_case(b, n, &st)) return st;
  trnc_ref A = trnc_db_f32(b, n->args[0].u.ref);
  const trnc_type *t = trnc_db_type(b, A);
  int rank = t->rank;
  int64_t m = t->shape[rank - 2], c = t->shape[rank - 1], k = m < c ? m : c;
  trnc_ref v[TRNC_LINALG_MAX_N], tau[TRNC_LINALG_MAX_N];
  trnc_ref R = geqr2(b, A, k, v, tau);
  trnc_ref r[2];
  if (!complete) R = DB(b, SLICE, V(R), I(-2), I(0), I(k), I(1));
  if (only_r) {
    int64_t none = 0;
    r[0] = trnc_db_zeros(b, TRNC_F32, 1, &none);
  } else {
    r[0] = org2r(b, t, k, complete ? m : k, v, tau);
  }
  r[1] = R;
  return results(b, r, 2);
}

/* Partner of each of 0..n-1 in round r of the circle method over n rounded
 * up to even (N - 1 rounds pair every two indices once; an index paired
 * with the padding one, past n, is its own partner and sits the round out). */
static void round_partners(int64_t n, int64_t r, int64_t *partner) {
  int64_t N = n + (n & 1), seat[TRNC_LINALG_MAX_N + 1];
  seat[0] = 0;
  for (int64_t p = 1; p < N; p++) seat[p] = 1 + (p - 1 + r) % (N - 1);
  for (int64_t i = 0; i < n; i++) partner[i] = i;
  for (int64_t i = 0; i < N / 2; i++) {
    int64_t x = seat[i], y = seat[N - 1 - i];
    if (x < n && y < n) partner[x] = y, partner[y] = x;
  }
}

/* Fixed Jacobi sweeps enough for float32 convergence (quadratic once the
 * off-diagonal is small; measured on random and clustered spectra, the
 * eigenvalues settle within 5 sweeps at n = 32). */
static int jacobi_sweeps(int64_t n) { return n <= 2 ? 1 : n <= 16 ? 6 : 8; }

/* The rotations of one round over the symmetric a [..., n, n] as one
 * matrix J: for each pair p < q of the round with a_pq != 0, Numerical
 * Recipes' jacobi angle th = (a_qq - a_pp) / (2 a_pq), t = sign(th) /
 * (|th| + sqrt(th^2 + 1)), c = 1 / sqrt(t^2 + 1), s = t c, and J[p, p] =
 * J[q, q] = c, J[p, q] = s, J[q, p] = -s, so (J^T a J)[p, q] = 0. */
static trnc_ref rotations(trnc_db *b, trnc_ref a, const int64_t *partner, int64_t n) {
  trnc_ref P = trnc_db_const_i64(b, 1, &n, partner);
  int64_t col[2] = {n, 1};
  trnc_ref ci = iota(b, n, false), ri = iota(b, n, true);
  trnc_ref Pc = trnc_db_view(b, P, 2, col);
  trnc_ref at_p = DB(b, EQ, V(Pc), V(ci)); /* [i, j]: j == P[i] */
  int64_t last = -1;
  trnc_ref d = DB(b, DIAGONAL, V(a), I(0), I(-2), I(-1));
  trnc_ref apq = DB(b, SUM, V(DB(b, WHERE, V(at_p), V(a), F(0.0))), trnc_db_ints(b, &last, 1),
                    trnc_db_bool(false), NONE);
  trnc_ref dp = DB(b, SUM, V(DB(b, WHERE, V(at_p), V(DB(b, UNSQUEEZE, V(d), I(-2))), F(0.0))),
                   trnc_db_ints(b, &last, 1), trnc_db_bool(false), NONE);
  trnc_ref isp = DB(b, LT, V(ci), V(P));
  trnc_ref app = DB(b, WHERE, V(isp), V(d), V(dp)), aqq = DB(b, WHERE, V(isp), V(dp), V(d));
  trnc_ref th = DB(b, DIV, V(DB(b, SUB, V(aqq), V(app), I(1))), V(DB(b, MUL_SCALAR, V(apq), F(2.0))));
  trnc_ref root = DB(b, SQRT, V(DB(b, ADD_SCALAR, V(DB(b, MUL, V(th), V(th))), F(1.0), I(1))));
  trnc_ref tt = DB(b, DIV, V(DB(b, WHERE, V(DB(b, GE_SCALAR, V(th), F(0.0))), F(1.0), F(-1.0))),
                   V(DB(b, ADD, V(DB(b, ABS, V(th))), V(root), I(1))));
  trnc_ref skip = DB(b, LOGICAL_OR, V(DB(b, EQ_SCALAR, V(apq), F(0.0))), V(DB(b, EQ, V(ci), V(P))));
  trnc_ref c = DB(b, WHERE, V(skip), F(1.0),
                  V(DB(b, RSQRT, V(DB(b, ADD_SCALAR, V(DB(b, MUL, V(tt), V(tt))), F(1.0), I(1))))));
  trnc_ref s = DB(b, WHERE, V(skip), F(0.0), V(DB(b, MUL, V(tt), V(c))));
  trnc_ref off = DB(b, WHERE, V(isp), V(DB(b, NEG, V(s))), V(s));
  trnc_ref below_p = DB(b, EQ, V(ri), V(P)); /* [r, i]: r == P[i] */
  return DB(b, WHERE, V(DB(b, EQ, V(ri), V(ci))), V(DB(b, UNSQUEEZE, V(c), I(-2))),
            V(DB(b, WHERE, V(below_p), V(DB(b, UNSQUEEZE, V(off), I(-2))), F(0.0))));
}

/* The stable sorting permutation of x [..., n] as a float32 one-hot
 * P [..., n, n], P[i, r] = 1 where element i has rank r (ranks counted from
 * the comparison matrix: the elements before it, and the equal ones at
 * lower indices), so that x sorted is x P and a matrix's columns in that
 * order are M P. */
static trnc_ref sort_perm(trnc_db *b, trnc_ref x, bool descending) {
  int64_t n = trnc_db_type(b, x)->shape[trnc_db_type(b, x)->rank - 1], last = -1;
  trnc_ref xi = DB(b, UNSQUEEZE, V(x), I(-1)), xj = DB(b, UNSQUEEZE, V(x), I(-2));
  trnc_ref before = descending ? DB(b, GT, V(xj), V(xi)) : DB(b, LT, V(xj), V(xi));
  trnc_ref tie = DB(b, LOGICAL_AND, V(DB(b, EQ, V(xj), V(xi))),
                    V(DB(b, LT, V(iota(b, n, false)), V(iota(b, n, true)))));
  trnc_ref rank = DB(b, SUM, V(trnc_db_cast(b, DB(b, LOGICAL_OR, V(before), V(tie)), TRNC_F32)),
                     trnc_db_ints(b, &last, 1), trnc_db_bool(false), NONE);
  trnc_ref r = trnc_db_cast(b, iota(b, n, false), TRNC_F32);
  return trnc_db_cast(b, DB(b, EQ, V(DB(b, UNSQUEEZE, V(rank), I(-1))), V(r)), TRNC_F32);
}

/* x [..., n] permuted by P [..., n, n] (x P). */
static trnc_ref permute_vec(trnc_db *b, trnc_ref x, trnc_ref P) {
  return DB(b, SQUEEZE_DIM, V(bmm(b, DB(b, UNSQUEEZE, V(x), I(-2)), P)), I(-2));
}

/* Eigenvalues w [..., n] ascending and (vecs) eigenvectors V [..., n, n]
 * (columns in w's order) of the symmetric a [..., n, n] by cyclic Jacobi
 * in rounds of disjoint rotations: a = J^T a J (symmetrized against
 * rounding), V = V J. */
static void jacobi_eigh(trnc_db *b, trnc_ref S, bool vecs, trnc_ref *w, trnc_ref *vout) {
  const trnc_type *t = trnc_db_type(b, S);
  int rank = t->rank;
  int64_t sz = t->shape[rank - 1], shape[TRNC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = t->shape[i];
  trnc_ref Vm = vecs ? eye(b, rank, shape) : TRNC_NO_REF;
  int64_t N = sz + (sz & 1), partner[TRNC_LINALG_MAX_N];
  for (int sw = 0; sw < jacobi_sweeps(sz) && sz > 1; sw++)
    for (int64_t r = 0; r < N - 1; r++) {
      round_partners(sz, r, partner);
      trnc_ref J = rotations(b, S, partner, sz);
      S = bmm(b, tr(b, J), bmm(b, S, J));
      S = DB(b, MUL_SCALAR, V(DB(b, ADD, V(S), V(tr(b, S)), I(1))), F(0.5));
      if (vecs) Vm = bmm(b, Vm, J);
    }
  trnc_ref d = DB(b, DIAGONAL, V(S), I(0), I(-2), I(-1)), P = sort_perm(b, d, false);
  *w = permute_vec(b, d, P);
  if (vecs) *vout = bmm(b, Vm, P);
}

/* The symmetric matrix of A's lower (upper) triangle. */
static trnc_ref symmetric(trnc_db *b, trnc_ref A, bool upper) {
  const trnc_type *t = trnc_db_type(b, A);
  int64_t sz = t->shape[t->rank - 1];
  trnc_ref ri = iota(b, sz, true), ci = iota(b, sz, false);
  trnc_ref tri = upper ? DB(b, LE, V(ri), V(ci)) : DB(b, GE, V(ri), V(ci));
  return DB(b, WHERE, V(tri), V(A), V(tr(b, A)));
}

/* _linalg_eigh(A, UPLO, compute_v): jacobi_eigh of the UPLO triangle's
 * symmetric matrix. */
trnc_status decomp_eigh(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  const trnc_arg *ua = n->nargs > 1 ? &n->args[1] : NULL;
  bool upper = ua && ua->kind == TRNC_ARG_STR && !strcmp(ua->u.s, "U");
  bool vecs = trnc_arg_bool(n, 2, true);
  trnc_ref r[2] = {TRNC_NO_REF, TRNC_NO_REF};
  jacobi_eigh(b, symmetric(b, trnc_db_f32(b, n->args[0].u.ref), upper), vecs, &r[0], &r[1]);
  int64_t none = 0;
  if (!vecs) r[1] = trnc_db_zeros(b, TRNC_F32, 1, &none);
  return results(b, r, 2);
}

/* A = U diag(s) Vh by one-sided Jacobi (Hestenes) over the columns of X =
 * A, or A^T when A is wide (X [..., M, K], K <= M): each round's rotations
 * are those of jacobi_eigh for the Gram matrix X^T X, applied as X = X J,
 * W = W J; then s = the column norms, sorted descending, X's columns over
 * s (where s > 0) and W's in that order (for a wide A, A = W diag(s) X^T).
 * U [..., m, k], s [..., k], Vh [..., k, n]; U and Vh only with uv; full:
 * U [..., m, m] and Vh [..., n, n]. */
static void jacobi_svd(trnc_db *b, trnc_ref A, bool uv, bool full, trnc_ref *U, trnc_ref *s,
                       trnc_ref *Vh) {
  const trnc_type *t = trnc_db_type(b, A);
  int rank = t->rank;
  bool wide = t->shape[rank - 2] < t->shape[rank - 1];
  trnc_ref X = wide ? trnc_db_f32(b, tr(b, A)) : A;
  t = trnc_db_type(b, X);
  int64_t K = t->shape[rank - 1], shape[TRNC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = t->shape[i];
  shape[rank - 2] = K;
  trnc_ref W = uv ? eye(b, rank, shape) : TRNC_NO_REF;
  int64_t N = K + (K & 1), partner[TRNC_LINALG_MAX_N];
  for (int sw = 0; sw < jacobi_sweeps(K) && K > 1; sw++)
    for (int64_t r = 0; r < N - 1; r++) {
      round_partners(K, r, partner);
      trnc_ref J = rotations(b, bmm(b, tr(b, X), X), partner, K);
      X = bmm(b, X, J);
      if (uv) W = bmm(b, W, J);
    }
  trnc_ref norms = DB(b, SQRT, V(DB(b, SQUEEZE_DIM, V(colsum(b, DB(b, MUL, V(X), V(X)))), I(-2))));
  trnc_ref P = sort_perm(b, norms, true);
  *s = permute_vec(b, norms, P);
  if (!uv) return;
  trnc_ref sdiv = DB(b, WHERE, V(DB(b, GT_SCALAR, V(*s), F(0.0))), V(*s), F(1.0));
  trnc_ref Xs = DB(b, DIV, V(bmm(b, X, P)), V(DB(b, UNSQUEEZE, V(sdiv), I(-2))));
  trnc_ref Ws = bmm(b, W, P);
  int64_t M = t->shape[rank - 2];
  if (full && M > K) {
    /* X's normalized columns completed to an orthonormal basis of M
     * vectors by Householder QR, Xs = Q R: Q's first K columns times the
     * signs of R's diagonal are Xs's columns (and an orthonormal stand-in
     * for the not unit column of a zero singular value); the rest span
     * their complement, where the basis is arbitrary as in eager. */
    trnc_ref v[TRNC_LINALG_MAX_N], tau[TRNC_LINALG_MAX_N];
    trnc_ref R = geqr2(b, Xs, K, v, tau);
    trnc_ref Q = org2r(b, t, K, M, v, tau);
    trnc_ref d = DB(b, DIAGONAL, V(R), I(0), I(-2), I(-1));
    trnc_ref sg = DB(b, WHERE, V(DB(b, LT_SCALAR, V(d), F(0.0))), F(-1.0), F(1.0));
    trnc_ref first = DB(b, MUL, V(DB(b, SLICE, V(Q), I(-1), I(0), I(K), I(1))),
                        V(DB(b, UNSQUEEZE, V(sg), I(-2))));
    Xs = DB(b, CAT, trnc_db_vals(b, (trnc_ref[]){first, DB(b, SLICE, V(Q), I(-1), I(K), I(M), I(1))}, 2),
            I(-1));
  }
  *U = wide ? Ws : Xs;
  *Vh = tr(b, wide ? Xs : Ws);
}

/* _linalg_svd(A, full_matrices, compute_uv): jacobi_svd. */
trnc_status decomp_svd(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  bool uv = trnc_arg_bool(n, 2, true);
  trnc_ref r[3] = {TRNC_NO_REF, TRNC_NO_REF, TRNC_NO_REF};
  jacobi_svd(b, trnc_db_f32(b, n->args[0].u.ref), uv, trnc_arg_bool(n, 1, false), &r[0], &r[1],
             &r[2]);
  int64_t none = 0;
  if (!uv) r[0] = r[2] = trnc_db_zeros(b, TRNC_F32, 1, &none);
  return results(b, r, 3);
}

/* linalg_pinv.atol_rtol_tensor(A, atol, rtol, hermitian) as eager's
 * linalg_pinv: atol 0 and rtol eps(float32) * max(m, n) unless given (0 when
 * only a positive atol is), tol = max(atol, rtol * the largest singular
 * value); A^+ = V diag(1/s where s > tol, else 0) U^T from the SVD, or
 * (hermitian) U diag(1/w where |w| > tol) U^T from eigh of A's lower
 * triangle. */
trnc_status decomp_pinv(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  trnc_ref A = trnc_db_f32(b, n->args[0].u.ref);
  const trnc_type *t = trnc_db_type(b, A);
  int64_t m = t->shape[t->rank - 2], c = t->shape[t->rank - 1];
  bool has_atol = n->args[1].kind == TRNC_ARG_VALUE, has_rtol = n->args[2].kind == TRNC_ARG_VALUE;
  trnc_ref atol = has_atol ? DB(b, UNSQUEEZE, V(trnc_db_f32(b, n->args[1].u.ref)), I(-1)) : TRNC_NO_REF;
  double eps_rtol = 1.1920928955078125e-07 * (double)(m > c ? m : c);
  trnc_ref rtol = has_rtol ? DB(b, UNSQUEEZE, V(trnc_db_f32(b, n->args[2].u.ref)), I(-1))
                  : has_atol ? DB(b, WHERE, V(DB(b, GT_SCALAR, V(atol), F(0.0))), F(0.0), F(eps_rtol))
                             : TRNC_NO_REF;
  bool herm = trnc_arg_bool(n, 3, false);
  trnc_ref U = TRNC_NO_REF, s = TRNC_NO_REF, Vh = TRNC_NO_REF, mag, maxv;
  int64_t last = -1;
  if (herm) {
    jacobi_eigh(b, symmetric(b, A, false), true, &s, &U);
    mag = DB(b, ABS, V(s));
    maxv = DB(b, AMAX, V(mag), trnc_db_ints(b, &last, 1), trnc_db_bool(true));
  } else {
    jacobi_svd(b, A, true, false, &U, &s, &Vh);
    mag = s;
    maxv = DB(b, SLICE, V(s), I(-1), I(0), I(1), I(1));
  }
  trnc_ref tol = rtol == TRNC_NO_REF ? DB(b, MUL_SCALAR, V(maxv), F(eps_rtol)) : DB(b, MUL, V(rtol), V(maxv));
  if (has_atol) tol = DB(b, MAXIMUM, V(atol), V(tol));
  trnc_ref sp = DB(b, WHERE, V(DB(b, GT, V(mag), V(tol))), V(DB(b, RECIPROCAL, V(s))), F(0.0));
  trnc_ref left = DB(b, MUL, V(herm ? U : tr(b, Vh)), V(DB(b, UNSQUEEZE, V(sp), I(-2))));
  return trnc_db_result(b, 0, bmm(b, left, tr(b, U)));
}

/* diagonal_scatter(self, src, offset, dim1, dim2) (the backward formulas of
 * QR, eigh and SVD write diagonals with it): self with dim1 and dim2 moved
 * last, src [..., L] laid along the diagonal (a column [..., L, 1] padded to
 * dim1's size and broadcast over dim2 for offset >= 0, a row for offset <
 * 0), selected where col - row == offset, and the dims moved back. */
trnc_status decomp_diagonal_scatter(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, src = n->args[1].u.ref;
  const trnc_type *t = trnc_db_type(b, x);
  int rank = t->rank;
  int64_t off = trnc_arg_int(n, 2, 0), d1 = trnc_arg_int(n, 3, 0), d2 = trnc_arg_int(n, 4, 1);
  if (d1 < 0) d1 += rank;
  if (d2 < 0) d2 += rank;
  int64_t perm[TRNC_MAX_RANK], inv[TRNC_MAX_RANK], shape[TRNC_MAX_RANK];
  int k = 0;
  for (int i = 0; i < rank; i++)
    if (i != d1 && i != d2) perm[k++] = i;
  perm[k++] = d1;
  perm[k++] = d2;
  for (int i = 0; i < rank; i++) inv[perm[i]] = i, shape[i] = t->shape[perm[i]];
  trnc_ref xp = DB(b, PERMUTE, V(x), trnc_db_ints(b, perm, rank));
  int64_t n1 = shape[rank - 2], n2 = shape[rank - 1];
  const trnc_type *ts = trnc_db_type(b, src);
  int64_t L = ts->shape[ts->rank - 1];
  trnc_ref full;
  if (off >= 0) {
    int64_t pad[4] = {0, 0, 0, n1 - L};
    full = DB(b, CONSTANT_PAD_ND, V(DB(b, UNSQUEEZE, V(src), I(-1))), trnc_db_ints(b, pad, 4), F(0.0));
  } else {
    int64_t pad[2] = {0, n2 - L};
    full = DB(b, CONSTANT_PAD_ND, V(DB(b, UNSQUEEZE, V(src), I(-2))), trnc_db_ints(b, pad, 2), F(0.0));
  }
  full = expand_to(b, full, rank, shape);
  trnc_ref diff = DB(b, SUB, V(iota(b, n2, false)), V(iota(b, n1, true)), I(1));
  trnc_ref on = DB(b, EQ_SCALAR, V(diff), I(off));
  trnc_ref out = DB(b, WHERE, V(on), V(full), V(xp));
  return trnc_db_result(b, 0, DB(b, PERMUTE, V(out), trnc_db_ints(b, inv, rank)));
}

/* linalg_matrix_exp(Tensor self) */
trnc_status decomp_matrix_exp(trnc_db *b, const trnc_node *n) {
  trnc_status st;
  if (empty_case(b, n, &st)) return st;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  const trnc_type t = *trnc_db_type(b, x);
  int64_t m = t.shape[t.rank - 1], batch = trnc_type_numel(&t) / (m * m);
  int64_t shape[3] = {batch, m, m};
  trnc_ref a = trnc_db_view(b, x, 3, shape);
  /* s = ceil(log2(2 |A|_1)): the largest column sum of |A| */
  trnc_ref nrm = DB(b, SUM, V(DB(b, ABS, V(a))), trnc_db_ints(b, (const int64_t[]){-2}, 1),
                    trnc_db_bool(true), NONE);
  nrm = DB(b, AMAX, V(nrm), trnc_db_ints(b, (const int64_t[]){-1}, 1), trnc_db_bool(true));
  trnc_ref s = DB(b, CEIL, V(DB(b, LOG2, V(DB(b, MUL_SCALAR, V(nrm), F(2.0))))));
  s = DB(b, CLAMP, V(s), F(0.0), F(TRNC_MATRIX_EXP_SQUARINGS));
  for (int i = 0; i < TRNC_MATRIX_EXP_SQUARINGS; i++)
    a = DB(b, WHERE, V(DB(b, GT_SCALAR, V(s), F(i))), V(DB(b, MUL_SCALAR, V(a), F(0.5))), V(a));
  /* T = I + A (I + A/2 (I + ... (I + A/12))) */
  trnc_ref e = eye(b, 3, shape);
  trnc_ref p = DB(b, ADD, V(e), V(DB(b, DIV_SCALAR, V(a), F(12.0))), I(1));
  for (int k = 11; k >= 1; k--)
    p = DB(b, ADD, V(e), V(DB(b, DIV_SCALAR, V(DB(b, BMM, V(a), V(p))), F(k))), I(1));
  for (int i = 0; i < TRNC_MATRIX_EXP_SQUARINGS; i++)
    p = DB(b, WHERE, V(DB(b, GT_SCALAR, V(s), F(i))), V(DB(b, BMM, V(p), V(p))), V(p));
  return trnc_db_result(b, 0, trnc_db_view(b, p, t.rank, t.shape));
}
