/*
 * legality.c — the one scan that decides whether trnc can lower a graph.
 *
 * Every node is checked, and every problem becomes its own error diagnostic
 * (target, operand shapes/dtypes, the user's file:line), so a user sees all
 * of them at once. A node is lowerable when its op is in ir/ops.def and every
 * tensor operand and result has a dtype in the op's set, a rank within its
 * limit, a strided (dense, non-nested) layout, and the op's attribute check
 * passes. int64 values must also provably fit in int32 (NeuronCore engines
 * compute integers through fp32, exact up to 2^24): an interval analysis
 * bounds every int64 value, taking int64 graph inputs to lie in [-2^23, 2^23]
 * (TRNC_I64_INPUT_BOUND; the runtime checks every int64 input against it
 * before running), and every int64 result must stay within +-2^24
 * (TRNC_INT_EXACT_BOUND). So a counter such as BatchNorm's
 * num_batches_tracked can be incremented, while products or sums of
 * arbitrary int64 inputs are reported here.
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

static const double I32_MIN = -(double)TRNC_INT_EXACT_BOUND, I32_MAX = (double)TRNC_INT_EXACT_BOUND;
static const double I64_INPUT_BOUND = (double)TRNC_I64_INPUT_BOUND;

static interval iv(double lo, double hi) { return (interval){lo, hi, false}; }
static interval iv_unknown(void) { return iv(-INFINITY, INFINITY); }
static interval hull(interval a, interval b) {
  return (interval){fmin(a.lo, b.lo), fmax(a.hi, b.hi), a.poison || b.poison};
}
static bool fits_i32(interval a) { return a.lo >= I32_MIN && a.hi <= I32_MAX; }

/* Integer dtypes: the values a tensor of that dtype can hold. */
static bool is_int_dtype(trnc_dtype t) {
  return t == TRNC_I64 || t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}

static interval dtype_range(trnc_dtype t) {
  switch (t) {
    case TRNC_I16: return iv(-32768, 32767);
    case TRNC_I8: return iv(-128, 127);
    case TRNC_U8: return iv(0, 255);
    case TRNC_BOOL: return iv(0, 1);
    default: return iv(-I64_INPUT_BOUND, I64_INPUT_BOUND); /* i64/i32: runtime-checked */
  }
}

/* True if n's integer result comes out of an engine's fp32 datapath
 * (arithmetic, comparisons, selects, reductions) rather than being moved or
 * converted exactly (views, copies, casts, gathers: DMA and same-dtype copies
 * are bit-exact, and a float -> int32 store converts exactly). */
static bool computes(const trnc_node *n) {
  if (n->op >= TRNC_OP_COUNT) return false;
  const char *cat = trnc_op_defs[n->op].category;
  /* sort and topk compare and sum their values through fp32 (passes/decomp_sort.c) */
  return !strcmp(cat, "elementwise") || !strcmp(cat, "compare") || !strcmp(cat, "reduction") ||
         !strcmp(cat, "sort");
}

/* Interval of a graph input or constant of integer dtype. */
static interval input_iv(const trnc_node *n, const trnc_type *t) {
  if (n->op == TRNC_OP_PLACEHOLDER) return dtype_range(t->dtype);
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
    case TRNC_OP_ZEROS: return iv(0, 0);
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
    case TRNC_OP_SORT: case TRNC_OP_SORT_STABLE: case TRNC_OP_TOPK: {
      /* values are a selection of the input's, indices lie within the dim */
      if (k == 0) return arg_iv(g, vals, a0);
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      int64_t d = trnc_arg_int(n, n->op == TRNC_OP_SORT ? 1 : 2, -1);
      if (d < 0) d += x->rank;
      return iv(0, x->rank > 0 && d >= 0 && d < x->rank ? fmax(0, (double)x->shape[d] - 1) : 0);
    }
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
    case TRNC_OP_MAXIMUM: case TRNC_OP_MINIMUM: case TRNC_OP_AMAX: case TRNC_OP_AMIN:
      return hull(arg_iv(g, vals, a0), a1 && a1->kind == TRNC_ARG_VALUE ? arg_iv(g, vals, a1)
                                                                      : arg_iv(g, vals, a0));
    case TRNC_OP_TO_COPY: {
      const trnc_type *x = trnc_ref_type(g, a0->u.ref);
      if (x->dtype == TRNC_BOOL) return iv(0, 1);
      if (x->dtype == TRNC_I64 || x->dtype == TRNC_I32 || x->dtype == TRNC_I16 ||
          x->dtype == TRNC_I8 || x->dtype == TRNC_U8)
        return arg_iv(g, vals, a0);
      /* float -> int truncates toward zero: bounded when the input is an
       * fp32 constant, unbounded otherwise */
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
  if (n->op < TRNC_OP_COUNT) {
    const char *cat = trnc_op_defs[n->op].category;
    /* Views, copies and data movement keep values; gathers and scatters
     * produce values from their (data and index) inputs. */
    if (!strcmp(cat, "view") || !strcmp(cat, "copy") || !strcmp(cat, "data_movement") ||
        !strcmp(cat, "gather")) {
      interval r = {INFINITY, -INFINITY, false};
      for (uint32_t a = 0; a < n->nargs; a++) r = hull(r, list_hull(g, vals, &n->args[a]));
      if (r.lo > r.hi) r = iv(0, 0);
      if (n->op == TRNC_OP_CONSTANT_PAD_ND) r = hull(r, arg_iv(g, vals, trnc_node_arg(n, 2)));
      return r;
    }
  }
  return iv_unknown();
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

trnc_status trnc_graph_check_lowerable(const trnc_graph *g, trnc_diags *d) {
  if (!g) return trnc_diag_error(d, TRNC_ERR_INVALID_ARGUMENT, "graph is NULL");
  interval *vals = calloc(g->nvalues ? g->nvalues : 1, sizeof *vals);
  if (!vals) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in the legality scan");
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
      vals[n->outs[0]] = input_iv(n, &v->type);
      vals[n->outs[0]].poison = !ok;
      continue;
    }
    if (n->op == TRNC_OP_UNKNOWN) {
      /* Report once per node unless an operand already failed. */
      operand_ctx c = {g, n, NULL, d, true, false, vals};
      for (uint32_t a = 0; a < n->nargs; a++) {
        const trnc_arg *arg = &n->args[a];
        if (arg->kind == TRNC_ARG_VALUE && vals[arg->u.ref].poison) c.poisoned = true;
      }
      report(g, n, d, "no lowering for %s", n->target);
      for (uint32_t k = 0; k < n->nouts; k++) vals[n->outs[k]].poison = true;
      (void)c;
      continue;
    }
    const trnc_op_def *def = &trnc_op_defs[n->op];
    operand_ctx c = {g, n, def, d, true, false, vals};
    for (uint32_t a = 0; a < n->nargs && c.ok; a++) trnc_arg_visit_refs(&n->args[a], check_operand, &c);
    ok = c.ok;
    poisoned = c.poisoned;
    for (uint32_t k = 0; ok && !poisoned && k < n->nouts; k++)
      ok = value_ok(g, n, &g->values[n->outs[k]], def->dtypes, def->max_rank, "the result", d);
    if (ok && !poisoned && def->check) {
      const char *why = def->check(g, n);
      if (why) {
        report(g, n, d, "%s", why);
        ok = false;
      }
    }
    for (uint32_t k = 0; k < n->nouts; k++) {
      const trnc_value *v = &g->values[n->outs[k]];
      if (!ok || poisoned) {
        vals[n->outs[k]].poison = true;
        continue;
      }
      if (v->is_none || !is_int_dtype(v->type.dtype)) {
        /* a float result is bounded only where it counts (histc's bins feed
         * the int32 offsets of MoE routing) */
        vals[n->outs[k]] = v->type.dtype == TRNC_BOOL ? iv(0, 1)
                           : n->op == TRNC_OP_HISTC   ? node_iv(g, n, k, vals)
                                                      : iv_unknown();
        continue;
      }
      interval r = node_iv(g, n, k, vals);
      vals[n->outs[k]] = r;
      if (r.poison) continue;
      interval range = dtype_range(v->type.dtype);
      bool small = v->type.dtype == TRNC_I16 || v->type.dtype == TRNC_I8 || v->type.dtype == TRNC_U8;
      const char *dn = trnc_dtype_name(v->type.dtype);
      if (small && !(r.lo >= range.lo && r.hi <= range.hi)) {
        if (isinf(r.lo) || isinf(r.hi))
          report(g, n, d, "%s result %u cannot be proven to stay within %s's range; eager PyTorch "
                 "would wrap around, which trnc does not emulate: compute in a wider dtype", dn,
                 k, dn);
        else
          report(g, n, d, "%s result %u may reach [%.0f, %.0f], outside %s's range [%.0f, %.0f]; "
                 "eager PyTorch would wrap around, which trnc does not emulate: compute in a wider "
                 "dtype", dn, k, r.lo, r.hi, dn, range.lo, range.hi);
        vals[n->outs[k]].poison = true;
      } else if (!fits_i32(r) && computes(n)) {
        if (isinf(r.lo) || isinf(r.hi))
          report(g, n, d, "%s result %u cannot be proven to stay within +-2^24, the integers "
                 "NeuronCore engines compute exactly (through fp32): bound the values before "
                 "this op", dn, k);
        else
          report(g, n, d, "%s result %u may reach [%.0f, %.0f], outside +-2^24, the integers "
                 "NeuronCore engines compute exactly (through fp32): reduce the range", dn, k,
                 r.lo, r.hi);
        vals[n->outs[k]].poison = true;
      }
    }
  }
  free(vals);
  return trnc_diags_error_count(d) > before ? TRNC_ERR_UNSUPPORTED : TRNC_OK;
}
