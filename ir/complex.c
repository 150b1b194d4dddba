/*
 * complex.c — which ops of complex tensors trnc lowers (passes/complex.c
 * rewrites them into real ones; the legality scan reports the others).
 * Complex values are complex64 (complex128 runs as complex64); before that
 * pass by dtype, after it by the boundary dtype it records (torch_dtype).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static bool cplx_dt(trnc_dtype t) { return t == TRNC_C64 || t == TRNC_C128 || t == TRNC_C32; }

/* True if value r is complex: before the pass by dtype, after it by the
 * boundary dtype the pass records. */
bool trnc_complex_value(const trnc_graph *g, trnc_ref r) {
  if (r == TRNC_NO_REF || r >= g->nvalues || g->values[r].is_none) return false;
  return cplx_dt(g->values[r].type.dtype) || cplx_dt(g->values[r].torch_dtype);
}
/* The rank r has as a complex tensor (its real carrier has one dim more). */
int trnc_complex_rank(const trnc_graph *g, trnc_ref r) {
  const trnc_value *v = &g->values[r];
  return v->type.rank - (cplx_dt(v->torch_dtype) && !cplx_dt(v->type.dtype) ? 1 : 0);
}

typedef struct any_cplx {
  const trnc_graph *g;
  bool any;
} any_cplx;
static void visit_cplx(trnc_ref r, void *p) {
  any_cplx *c = p;
  if (trnc_complex_value(c->g, r)) c->any = true;
}
static bool arg_cplx_dtype(const trnc_arg *a) {
  return a->kind == TRNC_ARG_DTYPE && cplx_dt(a->u.dtype);
}


bool trnc_complex_scalar(const trnc_arg *a, double *re, double *im) {
  if (!a) return false;
  if (a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL) {
    *re = trnc_arg_number(a, 0), *im = 0;
    return true;
  }
  if (a->kind != TRNC_ARG_OTHER || !a->u.s) return false;
  const char *s = a->u.s;
  bool paren = *s == '(';
  if (paren) s++;
  char *e;
  double x = strtod(s, &e);
  if (e == s) return false;
  if (*e == 'j') { /* "1j": imaginary only */
    *re = 0, *im = x;
  } else {
    const char *t = e;
    double y = strtod(t, &e);
    if (e == t || *e != 'j' || (*t != '+' && *t != '-')) return false;
    *re = x, *im = y;
  }
  e++;
  if (paren && *e++ != ')') return false;
  return *e == '\0';
}

trnc_cop trnc_complex_op(const trnc_node *n) {
  static const struct { const char *t; trnc_cop x; } names[] = {
      {"aten._fft_r2c.default", TRNC_COP_R2C},       {"aten._fft_c2c.default", TRNC_COP_C2C},
      {"aten._fft_c2r.default", TRNC_COP_C2R},       {"aten._conj.default", TRNC_COP_CONJ},
      {"aten._conj_physical.default", TRNC_COP_CONJ}, {"aten.conj_physical.default", TRNC_COP_CONJ},
      {"aten.complex.default", TRNC_COP_COMPLEX},    {"aten.polar.default", TRNC_COP_POLAR},
      {"aten.view_as_real.default", TRNC_COP_AS_REAL}, {"aten.view_as_complex.default", TRNC_COP_AS_COMPLEX},
      {"aten.real.default", TRNC_COP_REAL},          {"aten.imag.default", TRNC_COP_IMAG},
  };
  if (n->op != TRNC_OP_UNKNOWN || !n->target) return TRNC_COP_NONE;
  if ((!strcmp(n->target, "aten.mul.Scalar") || !strcmp(n->target, "aten.mul.Tensor")) &&
      n->nargs == 2 && n->args[1].kind == TRNC_ARG_OTHER)
    return TRNC_COP_MUL_CSCALAR;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(n->target, names[i].t)) return names[i].x;
  return TRNC_COP_NONE;
}

bool trnc_complex_touches(const trnc_graph *g, const trnc_node *n) {
  if (n->dead || n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT) return false;
  /* an op trnc has no lowering for at all is reported as such */
  if (n->op == TRNC_OP_UNKNOWN) return trnc_complex_op(n) != TRNC_COP_NONE;
  any_cplx c = {g, false};
  for (uint32_t a = 0; a < n->nargs; a++) {
    trnc_arg_visit_refs(&n->args[a], visit_cplx, &c);
    if (arg_cplx_dtype(&n->args[a])) c.any = true;
    if (n->args[a].kind == TRNC_ARG_LIST)
      for (uint32_t i = 0; i < n->args[a].u.list.n; i++)
        if (arg_cplx_dtype(&n->args[a].u.list.items[i])) c.any = true;
  }
  for (uint32_t k = 0; k < n->nouts; k++) visit_cplx(n->outs[k], &c);
  return c.any;
}

/* ---- what the pass rewrites -------------------------------------------------- */

static const trnc_arg *arg(const trnc_node *n, uint32_t i) { return trnc_node_arg(n, i); }
static bool is_val(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE;
}
static trnc_ref val(const trnc_node *n, uint32_t i) { return n->args[i].u.ref; }
static bool val_cplx(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  return is_val(n, i) && trnc_complex_value(g, val(n, i));
}
static bool out_cplx(const trnc_graph *g, const trnc_node *n) {
  return n->nouts == 1 && trnc_complex_value(g, n->outs[0]);
}
/* A real (not complex) Scalar argument. */
static bool real_number(const trnc_arg *a) {
  return a && (a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL);
}
static bool is_zero(const trnc_arg *a) { return real_number(a) && trnc_arg_number(a, 1) == 0; }



/* The largest divisor of N at most sqrt(N) (1 for a prime): the first
 * length of a Cooley-Tukey split N = N1 N2. */
int64_t trnc_dft_split(int64_t N) {
  int64_t best = 1;
  for (int64_t f = 2; f * f <= N; f++)
    if (N % f == 0) best = f;
  return best;
}

/* True if a complex transform of N points is lowered: densely, or as a
 * Cooley-Tukey split whose two lengths are. */
static bool dft_ok(int64_t N) {
  if (N <= TRNC_DFT_DENSE_MAX) return true;
  int64_t n1 = trnc_dft_split(N);
  return N <= TRNC_DFT_MAX_N && n1 > 1 && dft_ok(n1) && dft_ok(N / n1);
}

/* NULL if the FFT node n (trnc_cop x) is within what the pass lowers, else why not. */
static const char *fft_limits(const trnc_graph *g, const trnc_node *n, trnc_cop x) {
  if (!is_val(n, 0) || !arg(n, 1) || arg(n, 1)->kind != TRNC_ARG_LIST)
    return "an FFT without a tensor input and a dim list";
  trnc_ref in = val(n, 0);
  if ((x == TRNC_COP_R2C) == trnc_complex_value(g, in)) return "an FFT whose input dtype does not match the op";
  int R = trnc_complex_rank(g, in);
  const trnc_type *t = trnc_ref_type(g, in);
  const trnc_arg *dims = arg(n, 1);
  for (uint32_t i = 0; i < dims->u.list.n; i++) {
    int64_t d = dims->u.list.items[i].u.i;
    if (d < 0) d += R;
    if (d < 0 || d >= R) return "an FFT dim out of range";
    int64_t N = t->shape[d];
    if (x == TRNC_COP_C2R && i + 1 == dims->u.list.n) N = trnc_arg_int(n, 3, 0);
    if (N < 1) return "an FFT of an empty signal";
    if (!dft_ok(N))
      return "an FFT of more than 2048 points along a dim whose length has no split into "
             "factors of at most 2048 points each (trnc computes it as dense DFT matmuls of at "
             "most 2^24 weights, longer lengths by Cooley-Tukey steps: a large prime length is "
             "not lowered)";
  }
  if (x == TRNC_COP_C2R && dims->u.list.n) {
    int64_t d = dims->u.list.items[dims->u.list.n - 1].u.i;
    if (d < 0) d += R;
    if (t->shape[d] != trnc_arg_int(n, 3, 0) / 2 + 1)
      return "a complex-to-real FFT whose input is not last_dim_size / 2 + 1 long";
  }
  return NULL;
}

const char *trnc_complex_unsupported(const trnc_graph *g, const trnc_node *n) {
  for (uint32_t k = 0; k < n->nouts; k++)
    if (!n->outs || (!g->values[n->outs[k]].is_none &&
                     g->values[n->outs[k]].type.dtype == TRNC_C32))
      return "complex32 is not lowered (use complex64)";
  for (uint32_t a = 0; a < n->nargs; a++)
    if (is_val(n, a) && trnc_ref_type(g, val(n, a))->dtype == TRNC_C32)
      return "complex32 is not lowered (use complex64)";
  for (uint32_t k = 0; k < n->nouts; k++)
    if (trnc_complex_value(g, n->outs[k]) && g->values[n->outs[k]].type.rank >= TRNC_MAX_RANK)
      return "a complex tensor of rank 8 (trnc carries it as float32 of one more dim)";
  trnc_cop x = trnc_complex_op(n);
  switch (x) {
    case TRNC_COP_R2C: case TRNC_COP_C2C: case TRNC_COP_C2R: return fft_limits(g, n, x);
    case TRNC_COP_CONJ: case TRNC_COP_AS_REAL: case TRNC_COP_REAL: case TRNC_COP_IMAG:
      return val_cplx(g, n, 0) ? NULL : "a complex op of a real tensor";
    case TRNC_COP_AS_COMPLEX:
      return is_val(n, 0) && !trnc_complex_value(g, val(n, 0)) ? NULL : "view_as_complex of a complex tensor";
    case TRNC_COP_COMPLEX: case TRNC_COP_POLAR:
      return is_val(n, 0) && is_val(n, 1) && !val_cplx(g, n, 0) && !val_cplx(g, n, 1) &&
                     out_cplx(g, n)
                 ? NULL
                 : "complex / polar of complex parts";
    case TRNC_COP_MUL_CSCALAR: {
      double re, im;
      return val_cplx(g, n, 0) && trnc_complex_scalar(arg(n, 1), &re, &im)
                 ? NULL
                 : "a product with a Python object that is not a complex number";
    }
    case TRNC_COP_NONE: break;
  }
  bool c0 = val_cplx(g, n, 0), oc = out_cplx(g, n);
  switch (n->op) {
    case TRNC_OP_SLICE: case TRNC_OP_SELECT: case TRNC_OP_CLONE: case TRNC_OP_ALIAS:
    case TRNC_OP_VIEW: case TRNC_OP_RESHAPE: case TRNC_OP_UNSAFE_VIEW: case TRNC_OP_EXPAND:
    case TRNC_OP_PERMUTE: case TRNC_OP_UNSQUEEZE: case TRNC_OP_SQUEEZE_DIM:
    case TRNC_OP_SQUEEZE_DIMS: case TRNC_OP_SQUEEZE: case TRNC_OP_TRANSPOSE: case TRNC_OP_NEG:
      return c0 && oc ? NULL : "a view of a complex tensor as a real one";
    case TRNC_OP_SLICE_SCATTER: case TRNC_OP_SELECT_SCATTER: case TRNC_OP_COPY:
      return c0 && val_cplx(g, n, 1) ? NULL : "a copy between complex and real tensors";
    case TRNC_OP_ADD: case TRNC_OP_SUB:
      return c0 && val_cplx(g, n, 1) && real_number(arg(n, 2)) ? NULL
             : "complex addition with a real tensor or a complex alpha";
    case TRNC_OP_MUL:
      if (c0 && real_number(arg(n, 1))) return NULL; /* both parts times the number */
      return is_val(n, 0) && is_val(n, 1) && oc ? NULL : "a complex product with a complex scalar";
    case TRNC_OP_MUL_SCALAR: case TRNC_OP_DIV_SCALAR:
      return c0 && real_number(arg(n, 1)) ? NULL : "a complex product with a complex scalar";
    case TRNC_OP_ABS: return c0 && !oc ? NULL : "abs with a complex result";
    case TRNC_OP_DIV:
      return c0 && is_val(n, 1) && oc ? NULL : "a complex quotient by a scalar or of a real tensor";
    case TRNC_OP_SCALAR_TENSOR: return oc && real_number(arg(n, 0)) ? NULL : "a complex scalar_tensor";
    case TRNC_OP_WHERE:
      return oc && is_val(n, 0) && !val_cplx(g, n, 0) && val_cplx(g, n, 1) && val_cplx(g, n, 2)
                 ? NULL
                 : "a complex where with a real or Scalar branch";
    case TRNC_OP_SUM: return c0 && oc ? NULL : "a sum of a complex tensor to a real one";
    case TRNC_OP_CAT: case TRNC_OP_STACK: {
      const trnc_arg *l = arg(n, 0);
      for (uint32_t i = 0; l && l->kind == TRNC_ARG_LIST && i < l->u.list.n; i++)
        if (l->u.list.items[i].kind != TRNC_ARG_VALUE || !trnc_complex_value(g, l->u.list.items[i].u.ref))
          return "a cat of complex and real tensors";
      return NULL;
    }
    case TRNC_OP_CONSTANT_PAD_ND:
      return c0 && is_zero(arg(n, 2)) ? NULL : "a complex pad with a value other than 0";
    case TRNC_OP_FULL: return oc && is_zero(arg(n, 1)) ? NULL : "a complex fill other than 0";
    case TRNC_OP_FULL_LIKE: return c0 && oc && is_zero(arg(n, 1)) ? NULL : "a complex fill other than 0";
    case TRNC_OP_ZEROS: return oc ? NULL : "zeros of a complex dtype into a real tensor";
    case TRNC_OP_TO_COPY: return oc ? NULL : "a complex tensor converted to a real dtype";
    default: break;
  }
  for (uint32_t a = 0; a < n->nargs; a++)
    if (n->args[a].kind == TRNC_ARG_OTHER) return "a complex Scalar argument is not lowered";
  return "no complex lowering for this op (trnc carries complex64 as float32 pairs and lowers "
         "FFTs, views, copies, conjugation, products, quotients and sums of them)";
}

