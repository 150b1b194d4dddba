/*
 * legality.c — the one scan that decides whether trnc can lower a graph.
 *
 * Every node is checked, and every problem becomes its own error diagnostic
 * (target, operand shapes/dtypes, the user's file:line), so a user sees all
 * of them at once. A node is lowerable when its op is in ir/ops.def and every
 * tensor operand and result has a dtype in the op's set, a rank within its
 * limit, a strided (dense, non-nested) layout, and the op's attribute check
 * passes.
 *
 * Integers (docs/dtypes.md). int64 tensors run as int32. Integer
 * add/sub/mul/neg/abs/min/max/clamp/where/masked_fill, floor and trunc
 * division, remainder and fmod, bitwise ops,
 * comparisons and integer casts are computed exactly in int32 on GpSimd
 * (codegen/kir/rules.c, int_exact; int_form() below says which nodes): an
 * int32 result wraps as eager's does, an int8/int16/uint8 result wraps as
 * eager's does. Every other integer computation (division, reductions,
 * scans) goes through fp32, exact up to 2^24 (TRNC_INT_EXACT_BOUND), and is
 * reported when its result may leave +-2^24. An interval analysis bounds
 * every integer (and, where it can, float) value; int64 and int32 graph
 * inputs lie in int32 (the runtime checks every int64 input before running).
 *
 * An int64 result of an int32 op whose bound may leave int32 would wrap
 * where eager does not: it is *tainted* (may differ from eager), and so is
 * everything computed from it. A tainted value is harmless unless it
 * reaches a graph output: where(c, a, b) whose tainted branch is provably in
 * range on the elements that select it — c a comparison of a value x with a
 * constant, the branch's cone recomputed with x restricted accordingly —
 * is clean (T5's relative-position buckets: log(0) = -inf on the small
 * positions, which the where discards). A tainted graph output is reported
 * at the op that first left int32.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct interval {
  double lo, hi;   /* inclusive bounds; +-INFINITY if unknown */
  bool poison;     /* produced by an unlowerable node: don't report again */
} interval;

static const double F32_EXACT = (double)TRNC_INT_EXACT_BOUND;  /* integers exact in fp32 */
static const double I32_LO = (double)INT32_MIN, I32_HI = (double)INT32_MAX;

static interval iv(double lo, double hi) { return (interval){lo, hi, false}; }
static interval iv_unknown(void) { return iv(-INFINITY, INFINITY); }
static interval hull(interval a, interval b) {
  return (interval){fmin(a.lo, b.lo), fmax(a.hi, b.hi), a.poison || b.poison};
}
static bool fits_f32(interval a) { return a.lo >= -F32_EXACT && a.hi <= F32_EXACT; }
static bool fits_i32(interval a) { return a.lo >= I32_LO && a.hi <= I32_HI; }

/* Integer dtypes: the values a tensor of that dtype can hold. */
static bool is_int_dtype(trnc_dtype t) {
  return t == TRNC_I64 || t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}

/* Values of dtype t; int32/int64 graph inputs lie in [-bound, bound] (the
 * runtime checks it), bound 0: anywhere in int32. */
static interval dtype_range(trnc_dtype t, int64_t input_bound) {
  switch (t) {
    case TRNC_I16: return iv(-32768, 32767);
    case TRNC_I8: return iv(-128, 127);
    case TRNC_U8: return iv(0, 255);
    case TRNC_BOOL: return iv(0, 1);
    case TRNC_I32: case TRNC_I64: /* checked by the runtime against the scan's bound */
      return input_bound ? iv(-(double)input_bound, (double)input_bound) : iv(I32_LO, I32_HI);
    default: return iv_unknown(); /* float inputs are not checked: any value */
  }
}

/* True if n's integer result comes out of an engine's fp32 datapath
 * (arithmetic, comparisons, selects, reductions) rather than being moved or
 * converted exactly (views, copies, casts, gathers: DMA and same-dtype copies
 * are bit-exact, and a float -> int32 store converts exactly). */
static bool computes(const trnc_node *n) {
  /* sort and topk compare and sum their values through fp32 (passes/decomp_sort.c) */
  return trnc_op_any(n->op, TRNC_OPF_ELEMENTWISE | TRNC_OPF_COMPARE | TRNC_OPF_REDUCTION |
                                TRNC_OPF_SORT);
}

/* Interval of a graph input or constant of integer dtype. */
static interval input_iv(const trnc_node *n, const trnc_type *t, int64_t bound) {
  if (n->op == TRNC_OP_PLACEHOLDER) return dtype_range(t->dtype, bound);
  size_t es = trnc_dtype_size(t->dtype);
  if (!is_int_dtype(t->dtype) || !n->data || !es) return iv_unknown();
  size_t cnt = n->data_len / es;
  if (cnt == 0) return iv(0, 0);
  interval r = {INFINITY, -INFINITY, false};
  for (size_t i = 0; i < cnt; i++) {
    uint64_t u = 0;
    for (size_t b = es; b-- > 0;) u = u << 8 | n->data[i * es + b];
    int64_t v = t->dtype == TRNC_U8 ? (int64_t)u
                : (int64_t)(u << (64 - 8 * es)) >> (64 - 8 * es); /* sign-extend */
    r.lo = fmin(r.lo, (double)v);
    r.hi = fmax(r.hi, (double)v);
  }
  return r;
}

static double mul_(double a, double b) {
  if (a == 0 || b == 0) return 0;   /* 0 * inf is 0 for bounds */
  return a * b;
}
static interval iv_mul(interval a, interval b) {
  double c[4] = {mul_(a.lo, b.lo), mul_(a.lo, b.hi), mul_(a.hi, b.lo), mul_(a.hi, b.hi)};
  interval r = {c[0], c[0], a.poison || b.poison};
  for (int i = 1; i < 4; i++) {
    r.lo = fmin(r.lo, c[i]);
    r.hi = fmax(r.hi, c[i]);
  }
  return r;
}

/* Interval of a tensor or scalar argument. */
static interval arg_iv(const trnc_graph *g, const interval *vals, const trnc_arg *a) {
  if (!a) return iv_unknown();
  switch (a->kind) {
    case TRNC_ARG_VALUE: {
      const trnc_type *t = trnc_ref_type(g, a->u.ref);
      if (t->dtype == TRNC_BOOL) return iv(0, 1);
      return vals[a->u.ref];
    }
    case TRNC_ARG_INT: return iv((double)a->u.i, (double)a->u.i);
    case TRNC_ARG_BOOL: return iv(a->u.b, a->u.b);
    case TRNC_ARG_FLOAT: return iv(a->u.f, a->u.f);
    default: return iv_unknown();
  }
}

static interval list_hull(const trnc_graph *g, const interval *vals, const trnc_arg *a) {
  if (a->kind == TRNC_ARG_VALUE) return arg_iv(g, vals, a);
  interval r = {INFINITY, -INFINITY, false};
  if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) r = hull(r, list_hull(g, vals, &a->u.list.items[i]));
  return r;
}

/* Interval of output k of node n, from its inputs. Unknown if the op has no
 * integer semantics trnc can bound. */
static interval node_iv(const trnc_graph *g, const trnc_node *n, uint32_t k,
                        const interval *vals) {
  const trnc_arg *a0 = trnc_node_arg(n, 0), *a1 = trnc_node_arg(n, 1), *a2 = trnc_node_arg(n, 2);
  const trnc_type *out = &g->values[n->outs[k]].type;
  switch (n->op) {
    case TRNC_OP_ARANGE: return iv(0, fmax(0, (double)out->shape[0] - 1));
    case TRNC_OP_ARANGE_START:
    case TRNC_OP_ARANGE_START_STEP: {
      interval s = arg_iv(g, vals, a0), e = arg_iv(g, vals, a1);
      return iv(fmin(s.lo, e.lo), fmax(s.hi, e.hi));
    }
    case TRNC_OP_FULL: return arg_iv(g, vals, a1);
    case TRNC_OP_FULL_LIKE: return arg_iv(g, vals, a1);
    case TRNC_OP_SCALAR_TENSOR: return arg_iv(g, vals, a0);
    case TRNC_OP_ZEROS: case TRNC_OP_EMPTY: case TRNC_OP_NEW_EMPTY_STRIDED: case TRNC_OP_EMPTY_STRIDED:
    case TRNC_OP_EMPTY_PERMUTED:
      return iv(0, 0); /* trnc's empty is zeros */
    case TRNC_OP_BUCKETIZE: case TRNC_OP_SEARCHSORTED: { /* a count of sequence elements */
      const trnc_type *s = trnc_ref_type(g, (n->op == TRNC_OP_BUCKETIZE ? a1 : a0)->u.ref);
      return iv(0, s->rank ? (double)s->shape[s->rank - 1] : 0);
    }
    case TRNC_OP_ONES: return iv(1, 1);
    case TRNC_OP_ADD: case TRNC_OP_ADD_SCALAR: {
      interval b = iv_mul(arg_iv(g, vals, a1), arg_iv(g, vals, a2));
      interval a = arg_iv(g, vals, a0);
      return (interval){a.lo + b.lo, a.hi + b.hi, a.poison || b.poison};
    }
    case TRNC_OP_SUB: case TRNC_OP_SUB_SCALAR: {
      interval b = iv_mul(arg_iv(g, vals, a1), arg_iv(g, vals, a2));
      interval a = arg_iv(g, vals, a0);
      return (interval){a.lo - b.hi, a.hi - b.lo, a.poison || b.poison};
    }
    case TRNC_OP_RSUB_SCALAR: {
      interval b = iv_mul(arg_iv(g, vals, a0), arg_iv(g, vals, a2));
      interval a = arg_iv(g, vals, a1);
      return (interval){a.lo - b.hi, a.hi - b.lo, a.poison || b.poison};
    }
    case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR:
      return iv_mul(arg_iv(g, vals, a0), arg_iv(g, vals, a1));
    case TRNC_OP_NEG: {
      interval a = arg_iv(g, vals, a0);
      return (interval){-a.hi, -a.lo, a.poison};
    }
    case TRNC_OP_SIGN: return iv(-1, 1);
    case TRNC_OP_RELU: {
      interval a = arg_iv(g, vals, a0);
      return (interval){fmax(0, a.lo), fmax(0, a.hi), a.poison};
    }
    case TRNC_OP_BITWISE_AND: case TRNC_OP_BITWISE_OR: case TRNC_OP_BITWISE_XOR:
    case TRNC_OP_BITWISE_AND_SCALAR: case TRNC_OP_BITWISE_OR_SCALAR: case TRNC_OP_BITWISE_XOR_SCALAR: {
      /* bit ops of int32 values (sign-extended in int64) stay in int32; an
       * and with a non-negative operand is within [0, that operand] */
      interval a = arg_iv(g, vals, a0), b = arg_iv(g, vals, a1);
      bool p = a.poison || b.poison;
      if (!fits_i32(a) || !fits_i32(b)) return iv_unknown();
      if ((n->op == TRNC_OP_BITWISE_AND || n->op == TRNC_OP_BITWISE_AND_SCALAR) && (a.lo >= 0 || b.lo >= 0))
        return (interval){0, a.lo >= 0 && b.lo >= 0 ? fmin(a.hi, b.hi) : a.lo >= 0 ? a.hi : b.hi, p};
      return (interval){I32_LO, I32_HI, p};
    }
    case TRNC_OP_BITWISE_RIGHT_SHIFT_SCALAR: { /* floor(x / 2^s), s in [0, 31] */
      interval a = arg_iv(g, vals, a0);
      if (!fits_i32(a)) return iv_unknown();
      double p2 = ldexp(1.0, (int)trnc_arg_int(n, 1, 0));
      return (interval){floor(a.lo / p2), floor(a.hi / p2), a.poison};
    }
    case TRNC_OP_BITWISE_NOT: { /* ~x = -x - 1 */
      interval a = arg_iv(g, vals, a0);
      return (interval){-a.hi - 1, -a.lo - 1, a.poison};
    }
    case TRNC_OP_TRUNC: case TRNC_OP_FLOOR: case TRNC_OP_CEIL: return arg_iv(g, vals, a0);
    case TRNC_OP_ABS: {
      interval a = arg_iv(g, vals, a0);
      double m = fmax(fabs(a.lo), fabs(a.hi));
      return (interval){a.lo >= 0 ? a.lo : 0, m, a.poison};
    }
    case TRNC_OP_DIV_MODE: {
      interval a = arg_iv(g, vals, a0);
      double m = fmax(fabs(a.lo), fabs(a.hi));
      return (interval){-m, m, a.poison};
    }
    case TRNC_OP_REMAINDER: case TRNC_OP_REMAINDER_SCALAR: case TRNC_OP_FMOD:
    case TRNC_OP_FMOD_SCALAR: {
      /* |r| < |b|; remainder takes b's sign, fmod a's (and |r| <= |a|) */
      interval a = arg_iv(g, vals, a0), b = arg_iv(g, vals, a1);
      double m = fmax(0, fmax(fabs(b.lo), fabs(b.hi)) - 1);
      bool p = a.poison || b.poison;
      if (n->op == TRNC_OP_FMOD || n->op == TRNC_OP_FMOD_SCALAR)
        return (interval){a.lo >= 0 ? 0 : fmax(-m, a.lo), a.hi <= 0 ? 0 : fmin(m, a.hi), p};
      return (interval){b.lo >= 0 ? 0 : -m, b.hi <= 0 ? 0 : m, p};
    }
    case TRNC_OP_SUM: case TRNC_OP_SUM_ALL: case TRNC_OP_MEAN_ALL: {
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      double cnt = (double)trnc_type_numel(x) / fmax(1.0, (double)trnc_type_numel(out));
      interval a = arg_iv(g, vals, a0);
      return (interval){fmin(0, a.lo * cnt), fmax(0, a.hi * cnt), a.poison};
    }
    case TRNC_OP_CUMSUM: {
      /* every prefix sum lies within scan length times the input's range */
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = a1 && a1->kind == TRNC_ARG_INT ? a1->u.i : 0;
      if (d < 0) d += x->rank;
      double cnt = x->rank > 0 && d >= 0 && d < x->rank ? (double)x->shape[d] : 1.0;
      interval a = arg_iv(g, vals, a0);
      return (interval){fmin(0, a.lo * cnt), fmax(0, a.hi * cnt), a.poison};
    }
    case TRNC_OP_ARGMAX: {
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      return iv(0, (double)trnc_type_numel(x));
    }
    case TRNC_OP_ARGMIN: {
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      if (a1 && a1->kind == TRNC_ARG_INT && x->rank > 0) {
        int64_t d = a1->u.i < 0 ? a1->u.i + x->rank : a1->u.i;
        if (d >= 0 && d < x->rank) return iv(0, fmax(0, (double)x->shape[d] - 1));
      }
      return iv(0, fmax(0, (double)trnc_type_numel(x) - 1));
    }
    case TRNC_OP_MAX_DIM: case TRNC_OP_MIN_DIM: {
      if (k == 0) return arg_iv(g, vals, a0);
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = a1 && a1->kind == TRNC_ARG_INT ? a1->u.i : 0;
      if (d < 0) d += x->rank;
      return iv(0, x->rank > 0 && d >= 0 && d < x->rank ? fmax(0, (double)x->shape[d] - 1) : 0);
    }
    case TRNC_OP_ANY_DIM: case TRNC_OP_ALL_DIM: return iv(0, 1);
    case TRNC_OP_CUMMAX: case TRNC_OP_CUMMIN: { /* running extrema of x, indices along dim */
      if (k == 0) return arg_iv(g, vals, a0);
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = a1 && a1->kind == TRNC_ARG_INT ? a1->u.i : 0;
      if (d < 0) d += x->rank;
      return iv(0, x->rank > 0 && d >= 0 && d < x->rank ? fmax(0, (double)x->shape[d] - 1) : 0);
    }
    case TRNC_OP_SORT: case TRNC_OP_SORT_STABLE: case TRNC_OP_TOPK: {
      /* values are a selection of the input's, indices lie within the dim */
      if (k == 0) return arg_iv(g, vals, a0);
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = trnc_arg_int(n, n->op == TRNC_OP_SORT ? 1 : 2, -1);
      if (d < 0) d += x->rank;
      return iv(0, x->rank > 0 && d >= 0 && d < x->rank ? fmax(0, (double)x->shape[d] - 1) : 0);
    }
    case TRNC_OP_MEDIAN_ALL: case TRNC_OP_NANMEDIAN_ALL: return arg_iv(g, vals, a0);
    case TRNC_OP_MEDIAN_DIM: case TRNC_OP_NANMEDIAN_DIM: case TRNC_OP_KTHVALUE:
    case TRNC_OP_MODE: { /* an element of the input, its index along dim */
      if (k == 0) return arg_iv(g, vals, a0);
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = trnc_arg_int(n, n->op == TRNC_OP_KTHVALUE ? 2 : 1, -1);
      if (d < 0) d += x->rank;
      return iv(0, x->rank > 0 && d >= 0 && d < x->rank ? fmax(0, (double)x->shape[d] - 1) : 0);
    }
    case TRNC_OP_FREXP: /* the exponent of a float: within [-148, 128] (0 for 0, inf, NaN) */
      if (k == 0) break;
      return iv(-148, 128);
    case TRNC_OP_HISTC: /* counts (a float result, integer-valued) */
      return iv(0, (double)trnc_type_numel(trnc_ref_type(g, a0->u.ref)));
    case TRNC_OP_MAX_POOL2D: {
      if (k == 0) break;
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      return iv(0, (double)(x->shape[x->rank - 1] * x->shape[x->rank - 2]));
    }
    case TRNC_OP_WHERE: return hull(arg_iv(g, vals, a1), arg_iv(g, vals, a2));
    case TRNC_OP_MASKED_FILL: return hull(arg_iv(g, vals, a0), arg_iv(g, vals, a2));
    case TRNC_OP_CLAMP: {
      interval a = arg_iv(g, vals, a0);
      if (a1->kind != TRNC_ARG_NONE) a.lo = fmax(a.lo, arg_iv(g, vals, a1).lo), a.hi = fmax(a.hi, arg_iv(g, vals, a1).lo);
      if (a2->kind != TRNC_ARG_NONE) a.hi = fmin(a.hi, arg_iv(g, vals, a2).hi), a.lo = fmin(a.lo, arg_iv(g, vals, a2).hi);
      return a;
    }
    case TRNC_OP_MAXIMUM: case TRNC_OP_MINIMUM: {
      interval a = arg_iv(g, vals, a0), b = arg_iv(g, vals, a1);
      bool mx = n->op == TRNC_OP_MAXIMUM;
      return (interval){mx ? fmax(a.lo, b.lo) : fmin(a.lo, b.lo), mx ? fmax(a.hi, b.hi) : fmin(a.hi, b.hi),
                        a.poison || b.poison};
    }
    case TRNC_OP_AMAX: case TRNC_OP_AMIN: return arg_iv(g, vals, a0);
    /* collectives: every rank runs this graph, so every rank's operand lies
     * in the interval this rank's has; moves and max/min keep it, a sum
     * over a group of known size scales it, other sums are unbounded */
    case TRNC_OP_ALL_GATHER: case TRNC_OP_ALL_GATHER_COALESCED: case TRNC_OP_ALL_TO_ALL:
    case TRNC_OP_BROADCAST: case TRNC_OP_WAIT_TENSOR: return list_hull(g, vals, a0);
    case TRNC_OP_ALL_REDUCE: case TRNC_OP_ALL_REDUCE_COALESCED: case TRNC_OP_REDUCE_SCATTER:
    case TRNC_OP_REDUCE_SCATTER_COALESCED: {
      const trnc_arg *op = trnc_node_arg(n, 1), *gs = trnc_node_arg(n, 2);
      interval a = list_hull(g, vals, a0);
      if (op && op->kind == TRNC_ARG_STR && (!strcmp(op->u.s, "max") || !strcmp(op->u.s, "min")))
        return a;
      bool scattered = n->op == TRNC_OP_REDUCE_SCATTER || n->op == TRNC_OP_REDUCE_SCATTER_COALESCED;
      if (op && op->kind == TRNC_ARG_STR && !strcmp(op->u.s, "sum") && scattered && gs &&
          gs->kind == TRNC_ARG_INT && gs->u.i > 0)
        return (interval){a.lo * (double)gs->u.i, a.hi * (double)gs->u.i, a.poison};
      return iv_unknown();
    }
    case TRNC_OP_TO_COPY: {
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      if (x->dtype == TRNC_BOOL) return iv(0, 1);
      if (x->dtype == TRNC_I64 || x->dtype == TRNC_I32 || x->dtype == TRNC_I16 ||
          x->dtype == TRNC_I8 || x->dtype == TRNC_U8)
        return arg_iv(g, vals, a0);
      /* float -> int truncates toward zero: bounded by the float's interval
       * (float_iv) or an fp32 constant's values, unbounded otherwise */
      interval f = arg_iv(g, vals, a0);
      if (isfinite(f.lo) && isfinite(f.hi)) return (interval){trunc(f.lo), trunc(f.hi), f.poison};
      const trnc_node *p = &g->nodes[g->values[a0->u.ref].node];
      if (p->op == TRNC_OP_CONSTANT && x->dtype == TRNC_F32 && p->data && p->data_len >= 4) {
        interval r = {INFINITY, -INFINITY, false};
        for (size_t e = 0; e < p->data_len / 4; e++) {
          float f;
          memcpy(&f, p->data + e * 4, 4);
          r.lo = fmin(r.lo, trunc((double)f));
          r.hi = fmax(r.hi, trunc((double)f));
        }
        return r;
      }
      return iv_unknown();
    }
    default: break;
  }
  /* Views, copies and data movement keep values; gathers and scatters
   * produce values from their (data and index) inputs. */
  if (trnc_op_any(n->op, TRNC_OPF_VIEW | TRNC_OPF_COPY | TRNC_OPF_DATA_MOVEMENT | TRNC_OPF_GATHER)) {
    interval r = {INFINITY, -INFINITY, false};
    for (uint32_t a = 0; a < n->nargs; a++) r = hull(r, list_hull(g, vals, &n->args[a]));
    if (r.lo > r.hi) r = iv(0, 0);
    if (n->op == TRNC_OP_CONSTANT_PAD_ND) r = hull(r, arg_iv(g, vals, trnc_node_arg(n, 2)));
    return r;
  }
  return iv_unknown();
}

/* r where both bounds are numbers and it is not empty; unknown otherwise. */
static interval bounded(interval r) {
  return r.lo == r.lo && r.hi == r.hi && !(r.lo == INFINITY || r.hi == -INFINITY) ? r : iv_unknown();
}

/* Interval of float output k of n for the ops whose real-number bounds
 * hold in fp32 too (up to rounding, far below the int32 bounds this serves:
 * casts to int of these values); unknown otherwise or when a bound could be
 * NaN. */
static interval float_iv(const trnc_graph *g, const trnc_node *n, uint32_t k, const interval *vals) {
  const trnc_arg *a0 = trnc_node_arg(n, 0), *a1 = trnc_node_arg(n, 1);
  interval a = arg_iv(g, vals, a0), b = arg_iv(g, vals, a1);
  switch (n->op) {
    case TRNC_OP_TO_COPY: case TRNC_OP_CLONE: case TRNC_OP_ALIAS: return a;
    case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR:
      if (!isfinite(a.lo) || !isfinite(a.hi) || !isfinite(b.lo) || !isfinite(b.hi)) {
        if (!(b.lo == b.hi && b.lo > 0)) return iv_unknown(); /* 0 * inf is NaN */
        return (interval){a.lo * b.lo, a.hi * b.lo, a.poison}; /* times a positive constant */
      }
      return iv_mul(a, b);
    case TRNC_OP_DIV: case TRNC_OP_DIV_SCALAR:
      if (!(b.lo == b.hi) || b.lo == 0 || !isfinite(b.lo)) return iv_unknown();
      return b.lo > 0 ? (interval){a.lo / b.lo, a.hi / b.lo, a.poison}
                      : (interval){a.hi / b.lo, a.lo / b.lo, a.poison};
    case TRNC_OP_SIGMOID: case TRNC_OP_SOFTMAX: case TRNC_OP_RAND: case TRNC_OP_HARDSIGMOID:
      return iv(0, 1); /* a NaN input stays NaN, as under every interval here */
    case TRNC_OP_TANH: case TRNC_OP_SIN: case TRNC_OP_COS: case TRNC_OP_ERF: return iv(-1, 1);
    case TRNC_OP_EXP: return (interval){exp(a.lo), exp(a.hi), a.poison};
    case TRNC_OP_LOG:
      if (a.lo < 0 || a.lo != a.lo) return iv_unknown(); /* log of a negative is NaN */
      return (interval){log(a.lo), log(a.hi), a.poison};
    case TRNC_OP_ADD: case TRNC_OP_ADD_SCALAR: case TRNC_OP_SUB: case TRNC_OP_SUB_SCALAR:
    case TRNC_OP_RSUB_SCALAR: case TRNC_OP_NEG: case TRNC_OP_ABS: case TRNC_OP_WHERE:
    case TRNC_OP_MASKED_FILL: case TRNC_OP_MAXIMUM: case TRNC_OP_MINIMUM: case TRNC_OP_CLAMP:
    case TRNC_OP_FULL: case TRNC_OP_FULL_LIKE: case TRNC_OP_SCALAR_TENSOR: case TRNC_OP_ZEROS:
    case TRNC_OP_ONES: case TRNC_OP_TRUNC: case TRNC_OP_FLOOR: case TRNC_OP_CEIL: case TRNC_OP_ARANGE:
    case TRNC_OP_ARANGE_START: case TRNC_OP_ARANGE_START_STEP: {
      return bounded(node_iv(g, n, k, vals));
    }
    default:
      /* views, copies, data movement and gathers keep their inputs' values
       * (interpolation's index math views its float coordinates before the
       * cast to int64) */
      if (trnc_op_any(n->op, TRNC_OPF_VIEW | TRNC_OPF_COPY | TRNC_OPF_DATA_MOVEMENT | TRNC_OPF_GATHER))
        return bounded(node_iv(g, n, k, vals));
      return iv_unknown();
  }
}

static bool int_dt(trnc_dtype t) { return is_int_dtype(t) || t == TRNC_BOOL; }

static bool scalar_int(const trnc_arg *a) {
  if (a->kind == TRNC_ARG_BOOL) return true;
  return a->kind == TRNC_ARG_INT && a->u.i >= INT32_MIN && a->u.i <= INT32_MAX;
}

/* True if node n is computed exactly in int32 on GpSimd: the forms of
 * codegen/kir/rules.c's int_exact (integer operands and Python ints that fit
 * int32; an integer result, or a bool one for comparisons). */
static bool int_form(const trnc_graph *g, const trnc_node *n) {
  const trnc_value *out = &g->values[n->outs[0]];
  if (!trnc_op_has(n->op, TRNC_OPF_INT_EXACT)) return false;
  bool cmp = trnc_op_has(n->op, TRNC_OPF_COMPARE);
  if (n->nouts != 1 || out->is_none) return false;
  if (cmp ? out->type.dtype != TRNC_BOOL : !is_int_dtype(out->type.dtype)) return false;
  bool first = true;
  for (uint32_t i = 0; i < n->nargs; i++) {
    const trnc_arg *a = &n->args[i];
    if (a->kind == TRNC_ARG_VALUE) {
      trnc_dtype t = trnc_ref_type(g, a->u.ref)->dtype;
      if (!int_dt(t) || (cmp && first && t == TRNC_BOOL)) return false;
      first = false;
    } else if ((a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_BOOL) && !scalar_int(a)) {
      return false;
    } else if (a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_LIST) {
      return false;
    }
  }
  return !first;
}

static void report(const trnc_graph *g, const trnc_node *n, trnc_diags *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static void report(const trnc_graph *g, const trnc_node *n, trnc_diags *d, const char *fmt, ...) {
  char msg[768], ops[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  trnc_node_operands_str(g, n, ops, sizeof ops);
  trnc_diag_loc loc = trnc_node_loc(n);
  trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, ops, "%s", msg);
}

static bool is_complex(trnc_dtype t) { return t == TRNC_C64 || t == TRNC_C128 || t == TRNC_C32; }

/* Checks one tensor value used or produced by n; returns false (after
 * reporting) if trnc cannot lower it. */
static bool value_ok(const trnc_graph *g, const trnc_node *n, const trnc_value *v, uint32_t dtypes,
                     int max_rank, const char *what, trnc_diags *d) {
  if (v->is_none) return true;
  if (v->layout > 1) {
    report(g, n, d, "%s is a sparse/mkldnn tensor; trnc lowers strided tensors only", what);
    return false;
  }
  if (v->nested) {
    report(g, n, d, "%s is a nested tensor; trnc lowers strided tensors only", what);
    return false;
  }
  if ((v->type.dtype == TRNC_C64 || v->type.dtype == TRNC_C128) &&
      (n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT))
    return true; /* carried as float32 [..., 2] (passes/complex.c) */
  if (is_complex(v->type.dtype) || v->type.dtype == TRNC_DTYPE_OTHER) {
    report(g, n, d, "%s has dtype %s, which NeuronCore engines do not compute in", what,
           trnc_dtype_name(v->type.dtype));
    return false;
  }
  if (dtypes && !(dtypes & TRNC_DT(v->type.dtype))) {
    report(g, n, d, "%s has dtype %s; this op is lowered for dtypes in the operator table",
           what, trnc_dtype_name(v->type.dtype));
    return false;
  }
  if (max_rank >= 0 && v->type.rank > max_rank) {
    report(g, n, d, "%s has rank %d; this op is lowered up to rank %d", what, v->type.rank,
           max_rank);
    return false;
  }
  return true;
}

typedef struct operand_ctx {
  const trnc_graph *g;
  const trnc_node *n;
  const trnc_op_def *def;
  trnc_diags *d;
  bool ok;
  bool poisoned;
  const interval *vals;
} operand_ctx;

typedef struct poison_ctx {
  const interval *vals;
  bool *any;
} poison_ctx;
static void poisoned_ref(trnc_ref r, void *p) {
  poison_ctx *c = p;
  if (c->vals[r].poison) *c->any = true;
}

static void check_operand(trnc_ref r, void *p) {
  operand_ctx *c = p;
  if (!c->ok) return;
  if (c->vals[r].poison) {
    c->poisoned = true;
    return;
  }
  c->ok = value_ok(c->g, c->n, &c->g->values[r], c->def->dtypes, c->def->max_rank, "an operand",
                   c->d);
}

/* ---- taint: int64 values that may differ from eager ------------------------- */

typedef struct taint_ctx {
  const trnc_graph *g;
  interval *vals;
  bool *taint;        /* per value: may differ from eager */
  uint32_t *origin;   /* per value: the source node its taint comes from */
  bool *reported;     /* per node: source already reported */
} taint_ctx;

typedef struct any_ctx {
  const bool *flag;
  trnc_ref first;
  bool any;
} any_ctx;

static void any_ref(trnc_ref r, void *p) {
  any_ctx *c = p;
  if (c->flag[r] && !c->any) c->any = true, c->first = r;
}

/* First ref among n's arguments with flag set, or TRNC_NO_REF. */
static trnc_ref flagged_arg(const trnc_node *n, const bool *flag) {
  any_ctx c = {flag, TRNC_NO_REF, false};
  for (uint32_t a = 0; a < n->nargs && !c.any; a++) trnc_arg_visit_refs(&n->args[a], any_ref, &c);
  return c.any ? c.first : TRNC_NO_REF;
}

/* n converts a float tensor to an integer dtype. */
static bool float_to_int(const trnc_graph *g, const trnc_node *n) {
  /* _to_copy(x), or copy(self, src) with a float src (passes/decomp_ops.c decomp_copy) */
  const trnc_arg *f = trnc_node_arg(n, n->op == TRNC_OP_COPY ? 1 : 0);
  return (n->op == TRNC_OP_TO_COPY || n->op == TRNC_OP_COPY) && f && f->kind == TRNC_ARG_VALUE &&
         !is_int_dtype(trnc_ref_type(g, f->u.ref)->dtype) && trnc_ref_type(g, f->u.ref)->dtype != TRNC_BOOL;
}

/* clamp(x, lo, hi) with lo and hi inside int32, x straight from a float ->
 * int64 conversion: the engines' conversion saturates at int32's limits,
 * which the clamp maps where eager's clamp maps the exact value (saturation
 * is monotone). Sets *r to the clamp's interval. */
static bool saturated_clamp(const trnc_graph *g, const trnc_node *n, trnc_ref x, const interval *vals,
                            const bool *taint, interval *r) {
  const trnc_arg *a0 = trnc_node_arg(n, 0), *lo = trnc_node_arg(n, 1), *hi = trnc_node_arg(n, 2);
  if (n->op != TRNC_OP_CLAMP || !a0 || a0->kind != TRNC_ARG_VALUE || a0->u.ref != x || !lo || !hi ||
      lo->kind == TRNC_ARG_NONE || hi->kind == TRNC_ARG_NONE)
    return false;
  const trnc_node *p = &g->nodes[g->values[x].node];
  const trnc_arg *f = trnc_node_arg(p, 0);
  if (p->op != TRNC_OP_TO_COPY || !f || f->kind != TRNC_ARG_VALUE || taint[f->u.ref] ||
      is_int_dtype(trnc_ref_type(g, f->u.ref)->dtype))
    return false;
  interval l = arg_iv(g, vals, lo), h = arg_iv(g, vals, hi);
  if (!fits_i32(l) || !fits_i32(h)) return false;
  *r = hull(l, h);
  return true;
}

static interval any_iv(const trnc_graph *g, const trnc_node *n, uint32_t k, const interval *vals) {
  const trnc_value *v = &g->values[n->outs[k]];
  if (v->is_none) return iv_unknown();
  if (v->type.dtype == TRNC_BOOL) return iv(0, 1);
  return is_int_dtype(v->type.dtype) ? node_iv(g, n, k, vals) : float_iv(g, n, k, vals);
}

/* x's interval where comparison node c (x op K) is `when`. */
static bool restrict_by(const trnc_graph *g, const trnc_node *c, const interval *vals, bool when,
                        trnc_ref *x, interval *r) {
  const trnc_arg *a0 = trnc_node_arg(c, 0), *a1 = trnc_node_arg(c, 1);
  if (!a0 || a0->kind != TRNC_ARG_VALUE || !a1) return false;
  interval k = arg_iv(g, vals, a1);
  if (!(k.lo == k.hi) || !isfinite(k.lo)) return false;
  double K = k.lo;
  *x = a0->u.ref;
  *r = vals[*x];
  bool integral = is_int_dtype(trnc_ref_type(g, *x)->dtype);
  /* x < K holds: x <= ceil(K) - 1 (integers) / x <= K; fails: x >= ceil(K) / K.
   * x <= K holds: x <= floor(K); fails: x >= floor(K) + 1. GE and GT are
   * their negations. */
  bool strict = c->op == TRNC_OP_LT || c->op == TRNC_OP_LT_SCALAR || c->op == TRNC_OP_GE ||
                c->op == TRNC_OP_GE_SCALAR;
  bool below = c->op == TRNC_OP_LT || c->op == TRNC_OP_LT_SCALAR || c->op == TRNC_OP_LE ||
               c->op == TRNC_OP_LE_SCALAR;
  double hi = !integral ? K : strict ? ceil(K) - 1 : floor(K);
  double lo = !integral ? K : strict ? ceil(K) : floor(K) + 1;
  switch (c->op) {
    case TRNC_OP_LT: case TRNC_OP_LT_SCALAR: case TRNC_OP_GE: case TRNC_OP_GE_SCALAR:
    case TRNC_OP_LE: case TRNC_OP_LE_SCALAR: case TRNC_OP_GT: case TRNC_OP_GT_SCALAR:
      if (below == when) r->hi = fmin(r->hi, hi);
      else r->lo = fmax(r->lo, lo);
      break;
    case TRNC_OP_EQ: case TRNC_OP_EQ_SCALAR: case TRNC_OP_NE: case TRNC_OP_NE_SCALAR:
      if (when != (c->op == TRNC_OP_EQ || c->op == TRNC_OP_EQ_SCALAR)) return false;
      r->lo = fmax(r->lo, K), r->hi = fmin(r->hi, K);
      break;
    default: return false;
  }
  return true;
}

/* True if tainted value b, selected by where() where cond is `when`, is
 * exact there: with cond's x restricted, every tainted ancestor of b
 * depends on x and every int64 int32-op result in x's cone fits int32
 * again. *out: b's interval there. */
static bool proven_where(const taint_ctx *T, trnc_ref b, trnc_ref cond, bool when, interval *out) {
  const trnc_graph *g = T->g;
  const trnc_node *c = &g->nodes[g->values[cond].node];
  trnc_ref x;
  interval rx;
  if (T->taint[cond] || !restrict_by(g, c, T->vals, when, &x, &rx)) return false;
  uint32_t nx = g->values[x].node, nb = g->values[b].node;
  bool *anc = calloc(g->nnodes, 1), *dep = calloc(g->nvalues, 1);
  interval *tmp = malloc(g->nvalues * sizeof *tmp);
  bool ok = anc && dep && tmp && nb > nx;
  if (ok) {
    memcpy(tmp, T->vals, g->nvalues * sizeof *tmp);
    anc[nb] = true;
    for (uint32_t i = nb + 1; i-- > 0;) { /* ancestors of b (nodes are in graph order) */
      if (!anc[i]) continue;
      const trnc_node *n = &g->nodes[i];
      for (uint32_t a = 0; a < n->nargs; a++) {
        const trnc_arg *arg = &n->args[a];
        if (arg->kind == TRNC_ARG_VALUE) anc[g->values[arg->u.ref].node] = true;
        else if (arg->kind == TRNC_ARG_LIST)
          for (uint32_t j = 0; j < arg->u.list.n; j++)
            if (arg->u.list.items[j].kind == TRNC_ARG_VALUE)
              anc[g->values[arg->u.list.items[j].u.ref].node] = true;
      }
    }
    dep[x] = true;
    tmp[x] = rx;
    for (uint32_t i = 0; ok && i <= nb; i++) {
      const trnc_node *n = &g->nodes[i];
      if (!anc[i] || n->dead) continue;
      bool d = i > nx && flagged_arg(n, dep) != TRNC_NO_REF;
      for (uint32_t k = 0; k < n->nouts; k++) {
        trnc_ref o = n->outs[k];
        if (d) {
          tmp[o] = any_iv(g, n, k, tmp);
          dep[o] = true;
        }
        if (!T->taint[o]) continue;
        /* a tainted ancestor: its taint must come from x's cone and its
         * source must fit int32 there (a tainted where inside: give up) */
        if (!dep[o] || n->op == TRNC_OP_WHERE || n->op == TRNC_OP_MASKED_FILL) ok = false;
      }
      /* every int64 int32-op result of the cone fits int32 there */
      if (ok && d && n->nouts == 1 && int_form(g, n) &&
          g->values[n->outs[0]].type.dtype == TRNC_I64 && !fits_i32(tmp[n->outs[0]]))
        ok = false;
    }
    if (ok) *out = tmp[b];
  }
  free(anc);
  free(dep);
  free(tmp);
  return ok;
}

static void report_source(const taint_ctx *T, uint32_t src, trnc_diags *d) {
  if (T->reported[src]) return;
  T->reported[src] = true;
  const trnc_node *n = &T->g->nodes[src];
  const char *dn = trnc_dtype_name(T->g->values[n->outs[0]].type.dtype);
  interval r = T->vals[n->outs[0]];
  if (isinf(r.lo) || isinf(r.hi))
    report(T->g, n, d, "%s result cannot be proven to stay within int32, in which NeuronCore "
           "engines compute int64 tensors (exactly, on GpSimd): bound the values before this op",
           dn);
  else
    report(T->g, n, d, "%s result may reach [%.0f, %.0f], outside int32, in which NeuronCore "
           "engines compute int64 tensors (exactly, on GpSimd): reduce the range", dn, r.lo, r.hi);
}

static trnc_status check_lowerable(const trnc_graph *g, int64_t input_bound, trnc_diags *d) {
  size_t nv = g->nvalues ? g->nvalues : 1, nn = g->nnodes ? g->nnodes : 1;
  interval *vals = calloc(nv, sizeof *vals);
  taint_ctx T = {g, vals, calloc(nv, 1), calloc(nv, sizeof(uint32_t)), calloc(nn, 1)};
  if (!vals || !T.taint || !T.origin || !T.reported) {
    free(vals), free(T.taint), free(T.origin), free(T.reported);
    return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in the legality scan");
  }
  size_t before = trnc_diags_error_count(d);
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    bool ok = true, poisoned = false;
    if (n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT) {
      const trnc_value *v = &g->values[n->outs[0]];
      char what[96];
      snprintf(what, sizeof what, "%s '%s'", n->op == TRNC_OP_PLACEHOLDER ? "input" : "constant",
               n->name ? n->name : "");
      ok = value_ok(g, n, v, 0, TRNC_MAX_RANK, what, d);
      vals[n->outs[0]] = input_iv(n, &v->type, input_bound);
      vals[n->outs[0]].poison = !ok;
      continue;
    }
    if (trnc_complex_touches(g, n)) { /* rewritten into real ops by passes/complex.c */
      any_ctx pc = {NULL, TRNC_NO_REF, false};
      for (uint32_t a = 0; a < n->nargs && !pc.any; a++)
        trnc_arg_visit_refs(&n->args[a], poisoned_ref, &(poison_ctx){vals, &pc.any});
      /* an operand already reported is not reported again through its users */
      const char *why = pc.any ? "" : trnc_complex_unsupported(g, n);
      if (why && *why) report(g, n, d, "%s: %s", n->target, why);
      for (uint32_t k = 0; k < n->nouts; k++) {
        vals[n->outs[k]] = iv_unknown();
        vals[n->outs[k]].poison = why != NULL;
      }
      continue;
    }
    if (n->op == TRNC_OP_UNKNOWN) {
      report(g, n, d, "no lowering for %s", n->target);
      for (uint32_t k = 0; k < n->nouts; k++) vals[n->outs[k]].poison = true;
      continue;
    }
    const trnc_op_def *def = &trnc_op_defs[n->op];
    operand_ctx c = {g, n, def, d, true, false, vals};
    for (uint32_t a = 0; a < n->nargs && c.ok; a++) trnc_arg_visit_refs(&n->args[a], check_operand, &c);
    ok = c.ok;
    poisoned = c.poisoned;
    for (uint32_t k = 0; ok && !poisoned && k < n->nouts; k++)
      ok = value_ok(g, n, &g->values[n->outs[k]], def->dtypes, def->max_rank, "the result", d);
    if (ok && !poisoned) {
      const char *why = trnc_op_limits(g, n);
      if (why) {
        report(g, n, d, "%s", why);
        ok = false;
      }
    }
    /* taint in: from a tainted operand, unless a where discards it */
    trnc_ref tin = flagged_arg(n, T.taint);
    interval clean = iv_unknown();
    bool cleaned = false;
    if (tin != TRNC_NO_REF && (n->op == TRNC_OP_WHERE || n->op == TRNC_OP_MASKED_FILL)) {
      /* where(c, a, b); masked_fill(x, mask, value) = where(mask, value, x) */
      bool mf = n->op == TRNC_OP_MASKED_FILL;
      const trnc_arg *ca = trnc_node_arg(n, mf ? 1 : 0), *aa = trnc_node_arg(n, mf ? 2 : 1),
                     *ba = trnc_node_arg(n, mf ? 0 : 2);
      if (ca && ca->kind == TRNC_ARG_VALUE && !T.taint[ca->u.ref]) {
        interval ia = arg_iv(g, vals, aa), ib = arg_iv(g, vals, ba);
        bool oka = !(aa->kind == TRNC_ARG_VALUE && T.taint[aa->u.ref]) ||
                   proven_where(&T, aa->u.ref, ca->u.ref, true, &ia);
        bool okb = oka && (!(ba->kind == TRNC_ARG_VALUE && T.taint[ba->u.ref]) ||
                           proven_where(&T, ba->u.ref, ca->u.ref, false, &ib));
        if (oka && okb) cleaned = true, clean = hull(ia, ib);
      }
    }
    if (tin != TRNC_NO_REF && !cleaned && saturated_clamp(g, n, tin, vals, T.taint, &clean)) cleaned = true;
    bool tainted = tin != TRNC_NO_REF && !cleaned;
    for (uint32_t k = 0; k < n->nouts; k++) {
      const trnc_value *v = &g->values[n->outs[k]];
      trnc_ref o = n->outs[k];
      if (tainted) T.taint[o] = true, T.origin[o] = T.origin[tin];
      if (!ok || poisoned) {
        vals[o].poison = true;
        continue;
      }
      if (v->is_none || !is_int_dtype(v->type.dtype)) {
        /* a float result is bounded where it counts: histc's bins feed the
         * int32 offsets of MoE routing */
        vals[o] = n->op == TRNC_OP_HISTC ? node_iv(g, n, k, vals) : any_iv(g, n, k, vals);
        continue;
      }
      interval r = cleaned ? clean : node_iv(g, n, k, vals);
      vals[o] = r;
      if (r.poison) continue;
      interval range = dtype_range(v->type.dtype, 0);
      bool small = v->type.dtype == TRNC_I16 || v->type.dtype == TRNC_I8 || v->type.dtype == TRNC_U8;
      const char *dn = trnc_dtype_name(v->type.dtype);
      if (int_form(g, n)) {
        /* exact int32: int32 and narrower results wrap as eager's do; an
         * int64 result leaving int32 is a taint source */
        if (v->type.dtype == TRNC_I64 && !fits_i32(r)) {
          T.taint[o] = true;
          if (!tainted) T.origin[o] = i;
        } else if (v->type.dtype != TRNC_I64 && !(r.lo >= range.lo && r.hi <= range.hi)) {
          vals[o] = range; /* wrapped: anywhere in the dtype's range */
        }
        continue;
      }
      if (v->type.dtype == TRNC_I64 && !fits_i32(r) && float_to_int(g, n)) {
        /* a float converted to int64 saturates at int32's limits on the
         * engines, where eager keeps every int64 */
        T.taint[o] = true;
        if (!tainted) T.origin[o] = i;
      }
      if (small && float_to_int(g, n)) {
        /* a float converted to int8/int16/uint8 wraps as eager's does
         * (codegen/kir/rules.c float_to_int) */
        if (!(r.lo >= range.lo && r.hi <= range.hi)) vals[o] = range;
      } else if (small && !(r.lo >= range.lo && r.hi <= range.hi)) {
        if (isinf(r.lo) || isinf(r.hi))
          report(g, n, d, "%s result %u cannot be proven to stay within %s's range, and this op "
                 "does not compute in integers (eager PyTorch would wrap around): compute in a "
                 "wider dtype", dn, k, dn);
        else
          report(g, n, d, "%s result %u may reach [%.0f, %.0f], outside %s's range [%.0f, %.0f], "
                 "and this op does not compute in integers (eager PyTorch would wrap around): "
                 "compute in a wider dtype", dn, k, r.lo, r.hi, dn, range.lo, range.hi);
        vals[o].poison = true;
      } else if (!fits_f32(r) && computes(n)) {
        if (isinf(r.lo) || isinf(r.hi))
          report(g, n, d, "%s result %u cannot be proven to stay within +-2^24, the integers "
                 "NeuronCore engines compute exactly through fp32 (as this op is): bound the "
                 "values before this op", dn, k);
        else
          report(g, n, d, "%s result %u may reach [%.0f, %.0f], outside +-2^24, the integers "
                 "NeuronCore engines compute exactly through fp32 (as this op is): reduce the "
                 "range", dn, k, r.lo, r.hi);
        vals[o].poison = true;
      }
    }
  }
  /* a tainted value that reaches a graph output may differ from eager */
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref r = g->outputs[k];
    if (r != TRNC_NO_REF && T.taint[r] && !vals[r].poison) report_source(&T, T.origin[r], d);
  }
  free(vals), free(T.taint), free(T.origin), free(T.reported);
  return trnc_diags_error_count(d) > before ? TRNC_ERR_UNSUPPORTED : TRNC_OK;
}

/* Largest input bound (0 = all of int32, then 2^30 ... 2^23) under which g
 * has nothing to report; -1 if none. */
static int64_t find_bound(const trnc_graph *g) {
  for (int b = 31; b >= 23; b--) {
    trnc_diags *quiet = trnc_diags_create();
    if (!quiet) return -1;
    int64_t bound = b == 31 ? 0 : INT64_C(1) << b;
    trnc_status st = check_lowerable(g, bound, quiet);
    trnc_diags_destroy(quiet);
    if (st == TRNC_OK) return bound;
    if (st != TRNC_ERR_UNSUPPORTED) return -1;
  }
  return -1;
}

/* Reports with the smallest bound tried when no bound passes (the errors
 * that remain whatever the inputs). */
static trnc_status check_with_bound(const trnc_graph *g, int64_t *bound, trnc_diags *d) {
  if (!g) return trnc_diag_error(d, TRNC_ERR_INVALID_ARGUMENT, "graph is NULL");
  int64_t b = find_bound(g);
  *bound = b >= 0 ? b : INT64_C(1) << 23;
  return check_lowerable(g, *bound, d);
}

trnc_status trnc_graph_check_lowerable(const trnc_graph *g, trnc_diags *d) {
  int64_t b;
  return check_with_bound(g, &b, d);
}

trnc_status trnc_graph_check_bound(trnc_graph *g, trnc_diags *d) {
  int64_t b = 0;
  trnc_status st = check_with_bound(g, &b, d);
  if (g) g->int_input_bound = b;
  return st;
}
