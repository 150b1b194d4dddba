/*
 * decomp_moe.c — Hugging Face transformers' grouped expert matmul (the
 * `transformers::grouped_mm_fallback` custom op and its backward, which
 * transformers' default "grouped_mm" experts call under torch.compile for
 * float32 weights) as dense matmuls over every expert (see decompose.h for
 * the builder).
 *
 * input x [S, K] holds the rows of all experts sorted by expert; offs [E]
 * (non-decreasing: the cumulative row counts) ends expert e's group at row
 * offs[e], starting at offs[e-1] (0 for e = 0); rows from offs[E-1] on
 * belong to no expert and give 0, as in eager. The groups are data, so the
 * decomposition computes every expert's matmul over all rows and keeps each
 * row's own: with in[s, e] = offs[e-1] <= s < offs[e],
 *   y[s]        = sum_e where(in[s, e], x[s] @ W[e], 0)        one [S, E*N] matmul
 *   grad_x[s]   = sum_e where(in[s, e], g[s] @ W[e]^T, 0)      one [S, E*K] matmul
 *   grad_W[e]   = where(in[:, e], x, 0)^T @ where(in[:, e], g, 0)   an [E] batched matmul
 * Each sum over e adds one product to zeros, so the results are eager's
 * per-group matmuls up to the accumulation order inside a dot product, at E
 * times their FLOPs.
 */
#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* in[s, e] = offs[e-1] <= s < offs[e] as a bool [S, E] (experts_last) or
 * [E, S]. */
static trnc_ref membership(trnc_db *b, trnc_ref offs, int64_t S, bool experts_last) {
  int64_t E = trnc_db_type(b, offs)->shape[0];
  trnc_ref ends = offs;
  trnc_ref starts = E > 1 ? DB(b, CONSTANT_PAD_ND, V(DB(b, SLICE, V(offs), I(0), I(0), I(E - 1), I(1))),
                               trnc_db_ints(b, (const int64_t[]){1, 0}, 2), I(0))
                          : DB(b, MUL_SCALAR, V(offs), I(0));
  const int64_t se[2] = {S, 1}, es[2] = {1, E}, s_row[2] = {1, S}, e_col[2] = {E, 1};
  trnc_ref s = DB(b, ARANGE, I(S), trnc_db_dtype(TRNC_I64), NONE, NONE, NONE);
  s = trnc_db_view(b, s, 2, experts_last ? se : s_row);
  const int64_t *eshape = experts_last ? es : e_col;
  starts = trnc_db_view(b, starts, 2, eshape);
  ends = trnc_db_view(b, DB(b, CLONE, V(ends), NONE), 2, eshape);
  return DB(b, LOGICAL_AND, V(DB(b, GE, V(s), V(starts))), V(DB(b, LT, V(s), V(ends))));
}

/* The experts' matrices side by side as [C, E*O]: W[e] laid out with its
 * axis c (K forward, N backward) as rows, the other axis o as columns. The
 * copy runs along whichever axis has unit stride: a weight stored
 * transposed (Mixtral's [E, N, K] parameter seen as [E, K, N]) with c unit
 * stride is viewed as [E*O, C] and transposed, with no copy at all. */
static trnc_ref side_by_side(trnc_db *b, trnc_ref w, int c) {
  const trnc_type *t = trnc_db_type(b, w);
  int o = 3 - c;
  int64_t rows = t->shape[c], cols = t->shape[0] * t->shape[o];
  if (t->stride[c] == 1 && t->stride[o] != 1) {
    trnc_ref p = DB(b, PERMUTE, V(w), trnc_db_ints(b, (const int64_t[]){0, o, c}, 3));
    trnc_ref v = trnc_db_view(b, DB(b, CLONE, V(p), NONE), 2, (const int64_t[]){cols, rows});
    return DB(b, TRANSPOSE, V(v), I(0), I(1));
  }
  trnc_ref p = DB(b, PERMUTE, V(w), trnc_db_ints(b, (const int64_t[]){c, 0, o}, 3));
  return trnc_db_view(b, DB(b, CLONE, V(p), NONE), 2, (const int64_t[]){rows, cols});
}

/* sum_e where(in[s, e], (a @ wide)[s, e, :], 0) with wide [*, E*C] */
static trnc_ref select_rows(trnc_db *b, trnc_ref a, trnc_ref wide, trnc_ref in, int64_t E,
                            int64_t C) {
  int64_t S = trnc_db_type(b, a)->shape[0];
  trnc_ref y = trnc_db_view(b, DB(b, MM, V(a), V(wide)), 3, (const int64_t[]){S, E, C});
  trnc_ref in3 = trnc_db_view(b, in, 3, (const int64_t[]){S, E, 1});
  trnc_ref z = DB(b, WHERE, V(in3), V(y), F(0.0));
  return DB(b, SUM, V(z), trnc_db_ints(b, (const int64_t[]){1}, 1), trnc_db_bool(false), NONE);
}

/* grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor */
trnc_status decomp_grouped_mm(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, w = n->args[1].u.ref, offs = n->args[2].u.ref;
  const trnc_type wt = *trnc_db_type(b, w);
  int64_t S = trnc_db_type(b, x)->shape[0], E = wt.shape[0], N = wt.shape[2];
  trnc_ref in = membership(b, offs, S, true);
  trnc_ref wide = side_by_side(b, w, 1); /* [K, E*N] */
  return trnc_db_result(b, 0, select_rows(b, DB(b, CLONE, V(x), NONE), wide, in, E, N));
}

/* grouped_mm_fallback_backward(Tensor input, Tensor weight, Tensor offs,
 *                              Tensor grad_output) -> (Tensor, Tensor) */
trnc_status decomp_grouped_mm_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, w = n->args[1].u.ref, offs = n->args[2].u.ref;
  trnc_ref g = DB(b, CLONE, V(n->args[3].u.ref), NONE);
  const trnc_type wt = *trnc_db_type(b, w);
  int64_t S = trnc_db_type(b, x)->shape[0], E = wt.shape[0], K = wt.shape[1], N = wt.shape[2];
  trnc_ref wide = side_by_side(b, w, 2); /* [N, E*K] */
  trnc_status s = trnc_db_result(b, 0, select_rows(b, g, wide, membership(b, offs, S, true), E, K));
  if (s) return s;
  trnc_ref in = trnc_db_view(b, membership(b, offs, S, false), 3, (const int64_t[]){E, S, 1});
  trnc_ref xs = trnc_db_view(b, DB(b, CLONE, V(x), NONE), 3, (const int64_t[]){1, S, K});
  trnc_ref gs = trnc_db_view(b, g, 3, (const int64_t[]){1, S, N});
  trnc_ref xm = DB(b, WHERE, V(in), V(xs), F(0.0)); /* [E, S, K] */
  trnc_ref gm = DB(b, WHERE, V(in), V(gs), F(0.0)); /* [E, S, N] */
  /* grad_W in the layout the graph declares for it (the weight's own:
   * [E, N, K] storage for a weight transposed as Mixtral's) */
  const trnc_type *want = trnc_db_type(b, n->outs[1]);
  if (want->stride[1] == 1 && want->stride[2] != 1) {
    trnc_ref gwt = DB(b, BMM, V(DB(b, TRANSPOSE, V(gm), I(1), I(2))), V(xm)); /* [E, N, K] */
    return trnc_db_result(b, 1, DB(b, TRANSPOSE, V(gwt), I(1), I(2)));
  }
  trnc_ref gw = DB(b, BMM, V(DB(b, TRANSPOSE, V(xm), I(1), I(2))), V(gm));
  return trnc_db_result(b, 1, gw);
}
