/*
 * complex.c — complex tensors carried as real ones.
 *
 * NeuronCore engines have no complex arithmetic. trnc carries every complex64
 * value as float32 with a trailing dim of 2 (torch.view_as_real's layout:
 * [..., 2], real part then imaginary part, strides in float32 elements), so a
 * complex tensor at the torch boundary is bound through the same memory. The
 * pass runs first in the pipeline:
 *
 *  1. ops that only move complex elements (slice, select, view, permute, cat,
 *     copy, zero fills, view_as_real / view_as_complex as aliases, add / sub
 *     of two complex tensors, products with a real scalar, sums) are kept,
 *     their dims and sizes rewritten for the trailing dim;
 *  2. every complex value becomes float32 [..., 2];
 *  3. ops that compute with complex numbers are rewritten through the
 *     decompose builder into real ones: conversions from real (re, 0),
 *     complex(re, im) and polar(r, theta) as a stack, conjugation as a
 *     product with (1, -1), complex products, abs, and the FFTs
 *     (_fft_r2c, _fft_c2c, _fft_c2r) as one DFT matmul per transformed dim on
 *     TensorE, whose matrix holds cos / sin(2 pi p / N) of the phase index
 *     p = k n mod N computed exactly in integers (double precision cos / sin,
 *     rounded once to float32).
 *
 * trnc_complex_unsupported says, for the legality scan, which complex forms
 * the pass rewrites; everything else is refused there with a reason.
 * complex128 runs as complex64 with a warning, as float64 runs as float32
 * (the runtime converts the float64 pairs of its boundary tensors);
 * complex32 is not lowered.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "passes/decompose.h"
#include "passes/passes.h"

static bool cplx_dt(trnc_dtype t) { return t == TRNC_C64 || t == TRNC_C128 || t == TRNC_C32; }
static bool cplx(const trnc_graph *g, trnc_ref r) { return trnc_complex_value(g, r); }
static const trnc_arg *arg(const trnc_node *n, uint32_t i) { return trnc_node_arg(n, i); }
static bool is_val(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE;
}
static trnc_ref val(const trnc_node *n, uint32_t i) { return n->args[i].u.ref; }
static bool val_cplx(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  return is_val(n, i) && cplx(g, val(n, i));
}

static const double PI = 3.14159265358979323846;

/* ---- step 1: ops kept, their dims and sizes for the trailing dim -------------- */

static int64_t ndim(int64_t d, int R) { return d < 0 ? d + R : d; }

/* A copy of int list a with `extra` appended (append) or prepended. */
static trnc_arg ints_plus(trnc_graph *g, const trnc_arg *a, const int64_t *extra, int nextra,
                          bool append, int R, bool normalize, bool *ok) {
  trnc_arg r = *a;
  uint32_t n = a->u.list.n;
  trnc_arg *items = trnc_arena_array(&g->arena, n + (uint32_t)nextra, sizeof *items);
  if (!items) {
    *ok = false;
    return r;
  }
  uint32_t o = 0;
  if (!append)
    for (int i = 0; i < nextra; i++) items[o++] = (trnc_arg){.kind = TRNC_ARG_INT, .name = "", .u.i = extra[i]};
  for (uint32_t i = 0; i < n; i++) {
    items[o] = a->u.list.items[i];
    if (normalize) items[o].u.i = ndim(items[o].u.i, R);
    o++;
  }
  if (append)
    for (int i = 0; i < nextra; i++) items[o++] = (trnc_arg){.kind = TRNC_ARG_INT, .name = "", .u.i = extra[i]};
  r.u.list.items = items;
  r.u.list.n = o;
  return r;
}

static void fix_dtype(trnc_arg *a) {
  if (a && a->kind == TRNC_ARG_DTYPE && cplx_dt(a->u.dtype)) a->u.dtype = TRNC_F32;
}

/* Rewrites kept node n (before the retyping) for its operands' trailing dim. */
static bool keep_rewrite(trnc_graph *g, trnc_node *n) {
  bool ok = true;
  int R = 0;
  if (is_val(n, 0)) R = trnc_complex_rank(g, val(n, 0));
  int64_t two = 2, zz[2] = {0, 0};
  trnc_arg *a = n->args;
  switch (trnc_complex_op(n)) {
    case TRNC_COP_AS_REAL: case TRNC_COP_AS_COMPLEX:
      n->op = TRNC_OP_ALIAS;
      n->target = trnc_op_defs[TRNC_OP_ALIAS].target;
      n->nargs = 1;
      return true;
    case TRNC_COP_REAL: case TRNC_COP_IMAG: {
      trnc_arg *na = trnc_arena_array(&g->arena, 3, sizeof *na);
      if (!na) return false;
      na[0] = a[0];
      na[1] = (trnc_arg){.kind = TRNC_ARG_INT, .name = "dim", .u.i = R};
      na[2] = (trnc_arg){.kind = TRNC_ARG_INT, .name = "index", .u.i = trnc_complex_op(n) == TRNC_COP_IMAG};
      n->op = TRNC_OP_SELECT;
      n->target = trnc_op_defs[TRNC_OP_SELECT].target;
      n->args = na;
      n->nargs = 3;
      return true;
    }
    default: break;
  }
  switch (n->op) {
    case TRNC_OP_SLICE: case TRNC_OP_SELECT: case TRNC_OP_SQUEEZE_DIM:
      a[1].u.i = ndim(a[1].u.i, R);
      break;
    case TRNC_OP_TRANSPOSE:
      a[1].u.i = ndim(a[1].u.i, R);
      a[2].u.i = ndim(a[2].u.i, R);
      break;
    case TRNC_OP_UNSQUEEZE: a[1].u.i = ndim(a[1].u.i, R + 1); break;
    case TRNC_OP_SLICE_SCATTER: case TRNC_OP_SELECT_SCATTER: a[2].u.i = ndim(a[2].u.i, R); break;
    case TRNC_OP_SQUEEZE_DIMS: a[1] = ints_plus(g, &a[1], NULL, 0, true, R, true, &ok); break;
    case TRNC_OP_SUM:
      if (a[1].kind == TRNC_ARG_LIST && a[1].u.list.n) {
        a[1] = ints_plus(g, &a[1], NULL, 0, true, R, true, &ok);
      } else { /* every dim */
        int64_t all[TRNC_MAX_RANK];
        for (int i = 0; i < R; i++) all[i] = i;
        trnc_arg e = {.kind = TRNC_ARG_LIST, .name = a[1].name};
        a[1] = ints_plus(g, &e, all, R, true, R, false, &ok);
      }
      fix_dtype(&a[3]);
      break;
    case TRNC_OP_VIEW: case TRNC_OP_RESHAPE: case TRNC_OP_UNSAFE_VIEW: case TRNC_OP_EXPAND:
      a[1] = ints_plus(g, &a[1], &two, 1, true, R, false, &ok);
      break;
    case TRNC_OP_PERMUTE: {
      int64_t last = R;
      a[1] = ints_plus(g, &a[1], &last, 1, true, R, true, &ok);
      break;
    }
    case TRNC_OP_CAT: case TRNC_OP_STACK: {
      const trnc_arg *l = &a[0];
      int r = l->u.list.n ? trnc_complex_rank(g, l->u.list.items[0].u.ref) : 0;
      a[1].u.i = ndim(a[1].u.i, n->op == TRNC_OP_STACK ? r + 1 : r);
      break;
    }
    case TRNC_OP_CONSTANT_PAD_ND: a[1] = ints_plus(g, &a[1], zz, 2, false, R, false, &ok); break;
    case TRNC_OP_FULL: case TRNC_OP_ZEROS:
      a[0] = ints_plus(g, &a[0], &two, 1, true, R, false, &ok);
      fix_dtype(&a[n->op == TRNC_OP_FULL ? 2 : 1]);
      break;
    case TRNC_OP_FULL_LIKE: fix_dtype(&a[2]); break;
    case TRNC_OP_TO_COPY: fix_dtype(&a[1]); break;
    default: break;
  }
  return ok;
}

/* True if n is rewritten through the builder (step 3) rather than kept. */
static bool computed(const trnc_graph *g, const trnc_node *n) {
  switch (trnc_complex_op(n)) {
    case TRNC_COP_R2C: case TRNC_COP_C2C: case TRNC_COP_C2R: case TRNC_COP_CONJ:
    case TRNC_COP_COMPLEX: case TRNC_COP_POLAR: case TRNC_COP_MUL_CSCALAR: return true;
    default: break;
  }
  if (n->op == TRNC_OP_TO_COPY) return !val_cplx(g, n, 0);
  if (n->op == TRNC_OP_MUL) return is_val(n, 1);
  if (n->op == TRNC_OP_ABS || n->op == TRNC_OP_DIV || n->op == TRNC_OP_SCALAR_TENSOR ||
      n->op == TRNC_OP_WHERE)
    return true;
  return false;
}

/* ---- step 3: the rewrites ---------------------------------------------------------- */

static trnc_ref part(trnc_db *b, trnc_ref x, int which) {
  int R = trnc_db_type(b, x)->rank - 1;
  return DB(b, SELECT, trnc_db_val(x), trnc_db_int(R), trnc_db_int(which));
}
static trnc_ref pair(trnc_db *b, trnc_ref re, trnc_ref im) {
  trnc_ref v[2] = {re, im};
  return DB(b, STACK, trnc_db_vals(b, v, 2), trnc_db_int(-1));
}
static trnc_ref mul(trnc_db *b, trnc_ref x, trnc_ref y) {
  return DB(b, MUL, trnc_db_val(x), trnc_db_val(y));
}
/* x (real) expanded to the shape of the node's complex result. */
static trnc_ref to_shape(trnc_db *b, trnc_ref x, const trnc_type *out) {
  x = trnc_db_f32(b, x);
  if (trnc_db_type(b, x)->rank == out->rank - 1 &&
      !memcmp(trnc_db_type(b, x)->shape, out->shape, sizeof(int64_t) * (out->rank - 1)))
    return x;
  return DB(b, EXPAND, trnc_db_val(x), trnc_db_ints(b, out->shape, out->rank - 1),
            trnc_db_bool(false));
}

/* One DFT along dim d of x (f32; real, or complex as [..., 2] when cin):
 * x moved to [M, N * cin] rows, times the matrix W [N * cin, K * cout], and
 * back. kind: TRNC_COP_R2C (K outputs of the forward transform, complex), TRNC_COP_C2C
 * (forward or inverse), TRNC_COP_C2R (an inverse of a Hermitian input of K = N/2+1
 * entries to N real outputs). Each output is scaled by `scale`. */
static trnc_ref dft(trnc_db *b, trnc_ref x, int d, trnc_cop kind, bool inverse, int64_t N, int64_t K,
                    double scale) {
  const trnc_type *t = trnc_db_type(b, x);
  bool cin = kind != TRNC_COP_R2C, cout = kind != TRNC_COP_C2R;
  int R = t->rank - (cin ? 1 : 0);
  int64_t L = t->shape[d]; /* input length along d: N, or K for c2r */
  int64_t perm[TRNC_MAX_RANK], inv[TRNC_MAX_RANK], shp[TRNC_MAX_RANK];
  int np = 0;
  int64_t M = 1;
  for (int i = 0; i < R; i++)
    if (i != d) {
      shp[np] = t->shape[i];
      M *= t->shape[i];
      perm[np++] = i;
    }
  perm[np++] = d;
  if (cin) perm[np++] = R;
  for (int i = 0; i < np; i++) inv[perm[i]] = i;
  int64_t rows = (cin ? 2 : 1) * L, cols = (cout ? 2 : 1) * (kind == TRNC_COP_C2R ? N : K);
  trnc_ref p = DB(b, PERMUTE, trnc_db_val(x), trnc_db_ints(b, perm, np));
  p = DB(b, CLONE, trnc_db_val(p), trnc_db_none());
  int64_t mk[2] = {M, rows};
  p = trnc_db_view(b, p, 2, mk);
  float *w = malloc(sizeof *w * (size_t)(rows * cols));
  if (!w) {
    trnc_db_fail(b, "out of memory building a DFT matrix");
    return TRNC_NO_REF;
  }
  double sgn = inverse ? 1.0 : -1.0;
  for (int64_t n = 0; n < (kind == TRNC_COP_C2R ? N : L); n++)
    for (int64_t k = 0; k < (kind == TRNC_COP_C2R ? L : K); k++) {
      int64_t ph = n * k % N; /* exact: n, k < N <= TRNC_DFT_DENSE_MAX */
      double th = 2.0 * PI * (double)ph / (double)N;
      double c = cos(th) * scale, s = sgn * sin(th) * scale; /* e^{i s th} */
      if (2 * ph == N) s = 0; /* sin(pi) exactly */
      if (4 * ph == N || 4 * ph == 3 * N) c = 0;
      if (kind == TRNC_COP_R2C) {
        w[n * cols + 2 * k] = (float)c;
        w[n * cols + 2 * k + 1] = (float)s;
      } else if (kind == TRNC_COP_C2C) {
        w[(2 * n) * cols + 2 * k] = (float)c;
        w[(2 * n + 1) * cols + 2 * k] = (float)-s;
        w[(2 * n) * cols + 2 * k + 1] = (float)s;
        w[(2 * n + 1) * cols + 2 * k + 1] = (float)c;
      } else { /* c2r: x_n = sum_k w_k (re_k cos - im_k sin), Hermitian weights */
        double wk = (k == 0 || 2 * k == N) ? 1.0 : 2.0;
        w[(2 * k) * cols + n] = (float)(wk * c);
        w[(2 * k + 1) * cols + n] = (float)(-wk * s);
      }
    }
  int64_t ws[2] = {rows, cols};
  trnc_ref W = trnc_db_const_f32(b, 2, ws, w);
  free(w);
  trnc_ref y = DB(b, MM, trnc_db_val(p), trnc_db_val(W));
  int64_t out[TRNC_MAX_RANK];
  int no = 0;
  for (int i = 0; i < np - 1 - (cin ? 1 : 0); i++) out[no++] = shp[i];
  out[no++] = kind == TRNC_COP_C2R ? N : K;
  if (cout) out[no++] = 2;
  y = trnc_db_view(b, y, no, out);
  /* back to the input's dim order (the trailing dim of a complex result last) */
  int64_t back[TRNC_MAX_RANK];
  for (int i = 0; i < R; i++) back[i] = inv[i];
  if (cout) back[R] = R;
  return DB(b, PERMUTE, trnc_db_val(y), trnc_db_ints(b, back, R + (cout ? 1 : 0)));
}

static trnc_ref cdft(trnc_db *b, trnc_ref x, int d, bool inverse, int64_t N, double scale);

/* x (complex, [..., 2]) times the complex constant (re, im) [rows, cols],
 * broadcast over x's leading dims. */
static trnc_ref cmul_const(trnc_db *b, trnc_ref x, int64_t rows, int64_t cols, const float *re,
                           const float *im) {
  int64_t s[2] = {rows, cols};
  trnc_ref cr = trnc_db_const_f32(b, 2, s, re), ci = trnc_db_const_f32(b, 2, s, im);
  trnc_ref a = part(b, x, 0), bi = part(b, x, 1);
  trnc_ref r = DB(b, SUB, trnc_db_val(mul(b, a, cr)), trnc_db_val(mul(b, bi, ci)), trnc_db_int(1));
  trnc_ref i = DB(b, ADD, trnc_db_val(mul(b, a, ci)), trnc_db_val(mul(b, bi, cr)), trnc_db_int(1));
  return pair(b, r, i);
}

/* A complex DFT of N = N1 N2 points along dim d of x by one Cooley-Tukey
 * step: with n = N2 n1 + n2 and k = k1 + N1 k2, X[k] = sum_n2 W_N^(n2 k1)
 * (sum_n1 x[n] W_N1^(n1 k1)) W_N2^(n2 k2): a DFT of N1 points, the
 * twiddles W_N^(n2 k1) (phase n2 k1 mod N, exact in int64) and a DFT of N2
 * points, on x moved to [M, N1, N2, 2]. */
static trnc_ref cdft_split(trnc_db *b, trnc_ref x, int d, bool inverse, int64_t N, double scale) {
  const trnc_type *t = trnc_db_type(b, x);
  int R = t->rank - 1;
  int64_t N1 = trnc_dft_split(N), N2 = N / N1;
  int64_t perm[TRNC_MAX_RANK], inv[TRNC_MAX_RANK], shp[TRNC_MAX_RANK];
  int np = 0;
  int64_t M = 1;
  for (int i = 0; i < R; i++)
    if (i != d) {
      shp[np] = t->shape[i];
      M *= t->shape[i];
      perm[np++] = i;
    }
  perm[np++] = d;
  perm[np++] = R;
  for (int i = 0; i < np; i++) inv[perm[i]] = i;
  trnc_ref p = DB(b, PERMUTE, trnc_db_val(x), trnc_db_ints(b, perm, np));
  p = DB(b, CLONE, trnc_db_val(p), trnc_db_none());
  int64_t s4[4] = {M, N1, N2, 2};
  p = trnc_db_view(b, p, 4, s4);
  p = cdft(b, p, 1, inverse, N1, 1.0);
  float *re = malloc(sizeof *re * (size_t)N), *im = malloc(sizeof *im * (size_t)N);
  if (!re || !im) {
    free(re), free(im);
    trnc_db_fail(b, "out of memory building FFT twiddles");
    return TRNC_NO_REF;
  }
  double sgn = inverse ? 1.0 : -1.0;
  for (int64_t k1 = 0; k1 < N1; k1++)
    for (int64_t n2 = 0; n2 < N2; n2++) {
      int64_t ph = k1 * n2 % N;
      double th = 2.0 * PI * (double)ph / (double)N;
      re[k1 * N2 + n2] = (float)(cos(th) * scale);
      im[k1 * N2 + n2] = (float)(sgn * sin(th) * scale);
    }
  p = cmul_const(b, p, N1, N2, re, im);
  free(re), free(im);
  p = cdft(b, p, 2, inverse, N2, 1.0);
  /* [M, k1, k2, 2] -> k = k1 + N1 k2: [M, k2, k1, 2] */
  int64_t sw[4] = {0, 2, 1, 3};
  p = DB(b, PERMUTE, trnc_db_val(p), trnc_db_ints(b, sw, 4));
  p = DB(b, CLONE, trnc_db_val(p), trnc_db_none());
  int64_t out[TRNC_MAX_RANK];
  int no = 0;
  for (int i = 0; i < np - 2; i++) out[no++] = shp[i];
  out[no++] = N;
  out[no++] = 2;
  p = trnc_db_view(b, p, no, out);
  int64_t back[TRNC_MAX_RANK];
  for (int i = 0; i <= R; i++) back[i] = inv[i];
  return DB(b, PERMUTE, trnc_db_val(p), trnc_db_ints(b, back, R + 1));
}

/* Composite lengths above this split even where one dense matrix would do:
 * a dense DFT's float32 sums grow its error as sqrt(N) (7x pocketfft's RMS
 * error at 2048 points), a split's as sqrt(N1) + sqrt(N2). */
#define DFT_SPLIT_ABOVE 128

/* True if a transform of N points is computed by Cooley-Tukey steps. */
static bool split_dft(int64_t N) {
  return N > TRNC_DFT_DENSE_MAX || (N > DFT_SPLIT_ABOVE && trnc_dft_split(N) > 1);
}

/* A complex DFT of N points along dim d of x ([..., 2]): dense, or split. */
static trnc_ref cdft(trnc_db *b, trnc_ref x, int d, bool inverse, int64_t N, double scale) {
  if (!split_dft(N)) return dft(b, x, d, TRNC_COP_C2C, inverse, N, N, scale);
  return cdft_split(b, x, d, inverse, N, scale);
}

/* A real-to-complex DFT of N points along dim d of real x, K outputs. */
static trnc_ref rdft(trnc_db *b, trnc_ref x, int d, int64_t N, int64_t K, double scale) {
  x = trnc_db_f32(b, x);
  if (!split_dft(N)) return dft(b, x, d, TRNC_COP_R2C, false, N, K, scale);
  const trnc_type *t = trnc_db_type(b, x);
  trnc_ref z = trnc_db_zeros(b, TRNC_F32, t->rank, t->shape);
  trnc_ref c = cdft(b, pair(b, x, z), d, false, N, scale);
  if (K == N) return c;
  return DB(b, SLICE, trnc_db_val(c), trnc_db_int(d), trnc_db_int(0), trnc_db_int(K),
            trnc_db_int(1));
}

/* The inverse of a Hermitian spectrum x (K = N/2 + 1 entries along dim d)
 * to N real points: dense, or the full spectrum (X[N-k] = conj X[k]) by
 * a complex inverse DFT, whose real part it is. */
static trnc_ref c2r_dft(trnc_db *b, trnc_ref x, int d, int64_t N, double scale) {
  const trnc_type *t = trnc_db_type(b, x);
  int64_t K = t->shape[d];
  if (!split_dft(N)) return dft(b, x, d, TRNC_COP_C2R, true, N, K, scale);
  int R = t->rank - 1;
  trnc_ref tail = DB(b, SLICE, trnc_db_val(x), trnc_db_int(d), trnc_db_int(1),
                     trnc_db_int(N - K + 1), trnc_db_int(1));
  int64_t dd = d;
  tail = DB(b, FLIP, trnc_db_val(tail), trnc_db_ints(b, &dd, 1));
  static const float pm[2] = {1.0f, -1.0f};
  int64_t two = 2;
  tail = mul(b, tail, trnc_db_const_f32(b, 1, &two, pm));
  trnc_ref both[2] = {x, tail};
  trnc_ref full = DB(b, CAT, trnc_db_vals(b, both, 2), trnc_db_int(d));
  trnc_ref c = cdft(b, full, d, true, N, scale);
  return DB(b, SELECT, trnc_db_val(c), trnc_db_int(R), trnc_db_int(0));
}

static double norm_scale(int64_t mode, int64_t N) {
  return mode == 1 ? 1.0 / sqrt((double)N) : mode == 2 ? 1.0 / (double)N : 1.0;
}

static trnc_status rw_fft(trnc_db *b, const trnc_node *n) {
  trnc_cop x = trnc_complex_op(n);
  const trnc_graph *g = trnc_db_graph(b);
  trnc_ref v = n->args[0].u.ref;
  const trnc_arg *dl = &n->args[1];
  int nd = (int)dl->u.list.n;
  int R = trnc_db_type(b, v)->rank - (x == TRNC_COP_R2C ? 0 : 1);
  int64_t mode = trnc_arg_int(n, 2, 0);
  int64_t dims[TRNC_MAX_RANK];
  for (int i = 0; i < nd; i++) dims[i] = ndim(dl->u.list.items[i].u.i, R);
  (void)g;
  if (nd == 0) return trnc_db_result(b, 0, DB(b, CLONE, trnc_db_val(v), trnc_db_none()));
  if (x == TRNC_COP_R2C) {
    bool onesided = trnc_arg_bool(n, 3, true);
    int d = (int)dims[nd - 1];
    int64_t N = trnc_db_type(b, v)->shape[d];
    v = rdft(b, v, d, N, onesided ? N / 2 + 1 : N, norm_scale(mode, N));
    for (int i = 0; i < nd - 1; i++) {
      int64_t Ni = trnc_db_type(b, v)->shape[dims[i]];
      v = cdft(b, v, (int)dims[i], false, Ni, norm_scale(mode, Ni));
    }
  } else if (x == TRNC_COP_C2C) {
    bool fwd = trnc_arg_bool(n, 3, true);
    for (int i = 0; i < nd; i++) {
      int64_t Ni = trnc_db_type(b, v)->shape[dims[i]];
      v = cdft(b, v, (int)dims[i], !fwd, Ni, norm_scale(mode, Ni));
    }
  } else {
    int64_t N = trnc_arg_int(n, 3, 0);
    for (int i = 0; i < nd - 1; i++) {
      int64_t Ni = trnc_db_type(b, v)->shape[dims[i]];
      v = cdft(b, v, (int)dims[i], true, Ni, norm_scale(mode, Ni));
    }
    v = c2r_dft(b, v, (int)dims[nd - 1], N, norm_scale(mode, N));
  }
  return trnc_db_result(b, 0, v);
}

static trnc_status rw_compute(trnc_db *b, const trnc_node *n) {
  const trnc_graph *g = trnc_db_graph(b);
  const trnc_type *ot = &g->values[n->outs[0]].type;
  switch (trnc_complex_op(n)) {
    case TRNC_COP_R2C: case TRNC_COP_C2C: case TRNC_COP_C2R: return rw_fft(b, n);
    case TRNC_COP_CONJ: {
      static const float pm[2] = {1.0f, -1.0f};
      int64_t two = 2;
      trnc_ref s = trnc_db_const_f32(b, 1, &two, pm);
      return trnc_db_result(b, 0, mul(b, n->args[0].u.ref, s));
    }
    case TRNC_COP_COMPLEX: {
      trnc_ref re = to_shape(b, n->args[0].u.ref, ot), im = to_shape(b, n->args[1].u.ref, ot);
      return trnc_db_result(b, 0, pair(b, re, im));
    }
    case TRNC_COP_POLAR: {
      trnc_ref r = to_shape(b, n->args[0].u.ref, ot), th = to_shape(b, n->args[1].u.ref, ot);
      trnc_ref c = DB(b, COS, trnc_db_val(th)), s = DB(b, SIN, trnc_db_val(th));
      return trnc_db_result(b, 0, pair(b, mul(b, r, c), mul(b, r, s)));
    }
    default: break;
  }
  if (n->op == TRNC_OP_TO_COPY) { /* real -> complex: (x, 0) */
    trnc_ref re = to_shape(b, n->args[0].u.ref, ot);
    trnc_ref z = trnc_db_zeros(b, TRNC_F32, ot->rank - 1, ot->shape);
    return trnc_db_result(b, 0, pair(b, re, z));
  }
  if (trnc_complex_op(n) == TRNC_COP_MUL_CSCALAR) { /* (a + bi)(c + di) */
    double c = 0, d = 0;
    trnc_complex_scalar(&n->args[1], &c, &d);
    trnc_ref x = n->args[0].u.ref, a = part(b, x, 0), bi = part(b, x, 1);
    trnc_ref re = DB(b, SUB, trnc_db_val(DB(b, MUL_SCALAR, trnc_db_val(a), trnc_db_float(c))),
                     trnc_db_val(DB(b, MUL_SCALAR, trnc_db_val(bi), trnc_db_float(d))), trnc_db_int(1));
    trnc_ref im = DB(b, ADD, trnc_db_val(DB(b, MUL_SCALAR, trnc_db_val(a), trnc_db_float(d))),
                     trnc_db_val(DB(b, MUL_SCALAR, trnc_db_val(bi), trnc_db_float(c))), trnc_db_int(1));
    return trnc_db_result(b, 0, pair(b, re, im));
  }
  if (n->op == TRNC_OP_SCALAR_TENSOR) { /* (s, 0) */
    trnc_ref s = DB(b, SCALAR_TENSOR, n->args[0], trnc_db_dtype(TRNC_F32), trnc_db_none(),
                    trnc_db_none(), trnc_db_none());
    trnc_ref z = DB(b, SCALAR_TENSOR, trnc_db_float(0), trnc_db_dtype(TRNC_F32), trnc_db_none(),
                    trnc_db_none(), trnc_db_none());
    return trnc_db_result(b, 0, pair(b, s, z));
  }
  if (n->op == TRNC_OP_WHERE) { /* the condition over both parts */
    trnc_ref c = n->args[0].u.ref;
    trnc_ref cu = DB(b, UNSQUEEZE, trnc_db_val(c), trnc_db_int(trnc_db_type(b, c)->rank));
    return trnc_db_result(b, 0, DB(b, WHERE, trnc_db_val(cu), n->args[1], n->args[2]));
  }
  if (n->op == TRNC_OP_DIV) {
    trnc_ref x = n->args[0].u.ref, y = n->args[1].u.ref;
    if (!cplx(g, y)) { /* by a real tensor: both parts */
      trnc_ref r = trnc_db_f32(b, y);
      trnc_ref ru = DB(b, UNSQUEEZE, trnc_db_val(r), trnc_db_int(trnc_db_type(b, r)->rank));
      return trnc_db_result(b, 0, DB(b, DIV, trnc_db_val(x), trnc_db_val(ru)));
    }
    /* (a + bi) / (c + di) = ((ac + bd) + (bc - ad) i) / (c^2 + d^2) */
    trnc_ref a = part(b, x, 0), bi = part(b, x, 1), c = part(b, y, 0), dd = part(b, y, 1);
    trnc_ref den = DB(b, ADD, trnc_db_val(mul(b, c, c)), trnc_db_val(mul(b, dd, dd)), trnc_db_int(1));
    trnc_ref re = DB(b, ADD, trnc_db_val(mul(b, a, c)), trnc_db_val(mul(b, bi, dd)), trnc_db_int(1));
    trnc_ref im = DB(b, SUB, trnc_db_val(mul(b, bi, c)), trnc_db_val(mul(b, a, dd)), trnc_db_int(1));
    re = DB(b, DIV, trnc_db_val(re), trnc_db_val(den));
    im = DB(b, DIV, trnc_db_val(im), trnc_db_val(den));
    return trnc_db_result(b, 0, pair(b, re, im));
  }
  if (n->op == TRNC_OP_ABS) {
    trnc_ref x = n->args[0].u.ref;
    trnc_ref re = part(b, x, 0), im = part(b, x, 1);
    trnc_ref s = DB(b, ADD, trnc_db_val(mul(b, re, re)), trnc_db_val(mul(b, im, im)), trnc_db_int(1));
    return trnc_db_result(b, 0, DB(b, SQRT, trnc_db_val(s)));
  }
  if (n->op == TRNC_OP_MUL) {
    trnc_ref x = n->args[0].u.ref, y = n->args[1].u.ref;
    bool cx = cplx(g, x), cy = cplx(g, y);
    if (!cx || !cy) { /* complex times real: the real factor on both parts */
      trnc_ref c = cx ? x : y, r = trnc_db_f32(b, cx ? y : x);
      int rr = trnc_db_type(b, r)->rank;
      trnc_ref ru = DB(b, UNSQUEEZE, trnc_db_val(r), trnc_db_int(rr));
      return trnc_db_result(b, 0, mul(b, c, ru));
    }
    trnc_ref a = part(b, x, 0), bi = part(b, x, 1), c = part(b, y, 0), dd = part(b, y, 1);
    trnc_ref re = DB(b, SUB, trnc_db_val(mul(b, a, c)), trnc_db_val(mul(b, bi, dd)), trnc_db_int(1));
    trnc_ref im = DB(b, ADD, trnc_db_val(mul(b, a, dd)), trnc_db_val(mul(b, bi, c)), trnc_db_int(1));
    return trnc_db_result(b, 0, pair(b, re, im));
  }
  return trnc_db_fail(b, "complex pass: no rewrite for this op");
}

static trnc_decomp_fn pick(const trnc_graph *g, const trnc_node *n) {
  return trnc_complex_touches(g, n) && computed(g, n) ? rw_compute : NULL;
}

/* ---- the pass ---------------------------------------------------------------------- */

/* Value r (complex) as float32 [..., 2]. */
static void retype(trnc_value *v) {
  trnc_type *t = &v->type;
  v->torch_dtype = t->dtype;
  for (int i = 0; i < t->rank; i++) t->stride[i] *= 2;
  t->shape[t->rank] = 2;
  t->stride[t->rank] = 1;
  t->rank++;
  t->offset *= 2;
  t->dtype = TRNC_F32;
}

trnc_status trnc_pass_complex(trnc_graph *g, trnc_diags *d) {
  bool any = false;
  for (uint32_t r = 0; r < g->nvalues && !any; r++) any = cplx(g, r);
  if (!any) return TRNC_OK;
  /* step 1, on the graph as imported */
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_node *n = &g->nodes[i];
    if (!trnc_complex_touches(g, n)) continue;
    const char *why = trnc_complex_unsupported(g, n);
    if (why) {
      trnc_diag_loc loc = trnc_node_loc(n);
      return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, NULL, "%s: %s",
                           n->target, why);
    }
    if (!computed(g, n) && !keep_rewrite(g, n))
      return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in the complex pass");
  }
  /* step 2 */
  size_t n128 = 0, in128 = 0;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t k = 0; k < n->nouts; k++) {
      trnc_value *v = &g->values[n->outs[k]];
      if (v->is_none || !cplx_dt(v->type.dtype)) continue;
      if (v->type.dtype == TRNC_C32) {
        trnc_diag_loc loc = trnc_node_loc(n);
        return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, NULL,
                             "complex32 is not lowered (use complex64)");
      }
      if (v->type.dtype == TRNC_C128) {
        n128++;
        if (n->op == TRNC_OP_PLACEHOLDER) in128++;
      }
      if (n->op == TRNC_OP_CONSTANT && v->type.dtype == TRNC_C128 && n->data) {
        size_t cnt = n->data_len / 8;
        float *nd = trnc_arena_array(&g->arena, cnt ? cnt : 1, sizeof *nd);
        if (!nd) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory converting a constant");
        for (size_t e = 0; e < cnt; e++) {
          double x;
          memcpy(&x, n->data + e * 8, 8);
          nd[e] = (float)x;
        }
        n->data = (const uint8_t *)nd;
        n->data_len = cnt * 4;
      }
      retype(v);
    }
  }
  if (n128) {
    g->f64_legalized = true;
    trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_OK, NULL, NULL,
                  "complex128 is executed as complex64 on NeuronCore: %zu complex128 values "
                  "(%zu graph inputs) will be computed in float32 pairs (results carry float32 "
                  "precision)", n128, in128);
  }
  /* step 3 */
  return trnc_db_rewrite(g, d, pick);
}
