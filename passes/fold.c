/*
 * fold.c — constant folding of small tensors.
 *
 * A node is folded into a CONSTANT (new bytes in the graph arena) when
 *  - its op is in the safe set below, its result has at most
 *    FOLD_MAX_ELEMS elements and a dtype in {f32, bf16, f16, i64, i32, i16,
 *    i8, u8, bool} (so are its tensor operands);
 *  - every tensor operand is a constant or itself folded; creation ops
 *    (full, full_like, zeros, ones, scalar_tensor, arange) and expand have
 *    no constant operands to wait for, so they are folded only when a user
 *    is folded too (otherwise the emitter materializes them more cheaply
 *    than a constant would be stored);
 *  - it is not a graph output (a constant buffer would be shared across
 *    calls, and the caller may mutate its outputs);
 *  - a result whose declared strides are not contiguous has only folded
 *    users (constants are stored contiguously);
 *  - evaluation is exact (below); anything else leaves the node alone.
 *
 * Safe set: add/sub/mul/div (Tensor and Scalar forms), rsub, neg, abs,
 * maximum, minimum, the comparisons, logical and bitwise and/or/xor/not,
 * where, masked_fill, _to_copy, clone, alias, every single-output view, and
 * the creation ops.
 *
 * Exactness — results are bit-identical to eager torch on CPU:
 *  - float arithmetic runs in float (torch's opmath type for f32, bf16 and
 *    f16), one operation per element, then rounds to the result dtype with
 *    round-to-nearest-even (c10::BFloat16 / c10::Half rules). For bf16/f16
 *    results every operand must be exactly representable in the result
 *    dtype (torch reads a scalar operand either before or after rounding it,
 *    depending on the kernel; with exact operands both agree).
 *  - alpha must be 1 for float add/sub/rsub (torch fuses alpha*other+self).
 *  - a NaN operand or result, a division by zero, a float->int cast out of
 *    the target's range, an integer scalar outside the result dtype, and
 *    +-0 ties in maximum/minimum are not folded.
 *  - integer arithmetic wraps in the result dtype like torch's.
 *  - data movement (views, clone, same-dtype copies, where/masked_fill from
 *    a same-dtype source) copies bytes, so NaN payloads survive.
 *  - arange folds only integral start/end/step whose every value is exact
 *    in the result dtype.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "passes/passes.h"
#include "passes/util.h"

#define FOLD_MAX_ELEMS 4096
#define MAX_ARGS 16

/* ---- dtypes and numbers ---------------------------------------------------- */

static bool dt_float(trnc_dtype t) { return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16; }
static bool dt_reduced(trnc_dtype t) { return t == TRNC_BF16 || t == TRNC_F16; }
static bool dt_int(trnc_dtype t) {
  return t == TRNC_I64 || t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}
static bool dt_ok(trnc_dtype t) { return dt_float(t) || dt_int(t) || t == TRNC_BOOL; }

/* A number: a float-representable value in d (f) or an integer in i. */
typedef struct num {
  bool f;
  int64_t i;
  double d;
} num;

static num num_i(int64_t i) { return (num){false, i, 0}; }
static num num_f(double d) { return (num){true, 0, d}; }

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* c10::detail::round_to_nearest_even (callers exclude NaN). */
static uint16_t f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static float bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

/* fp16_ieee_from_fp32_value (FP16 library, used by c10::Half): RNE. */
static uint16_t f32_to_f16(float f) {
  const float scale_to_inf = u2f(0x77800000u);   /* 0x1.0p+112f */
  const float scale_to_zero = u2f(0x08800000u);  /* 0x1.0p-110f */
  float base = (fabsf(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = f2u(f), shl1_w = w + w, sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = u2f((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f2u(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u, mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

/* fp16_ieee_to_fp32_value: exact. */
static float f16_to_f32(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16, sign = w & 0x80000000u, two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = u2f(0x07800000u);   /* 0x1.0p-112f */
  const float normalized = u2f((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float denormalized = u2f((two_w >> 17) | magic_mask) - 0.5f;
  const uint32_t cutoff = 1u << 27;
  return u2f(sign | (two_w < cutoff ? f2u(denormalized) : f2u(normalized)));
}

/* Rounds a float to the float dtype dt (RNE); returns the rounded value. */
static float round_to(trnc_dtype dt, float f) {
  if (dt == TRNC_BF16) return bf16_to_f32(f32_to_bf16(f));
  if (dt == TRNC_F16) return f16_to_f32(f32_to_f16(f));
  return f;
}

static int64_t wrap_int(int64_t v, trnc_dtype dt) {
  switch (dt) {
    case TRNC_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case TRNC_I16: return (int16_t)(uint16_t)(uint64_t)v;
    case TRNC_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case TRNC_U8: return (uint8_t)(uint64_t)v;
    default: return v;
  }
}

static bool int_in_range(int64_t v, trnc_dtype dt) {
  switch (dt) {
    case TRNC_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TRNC_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case TRNC_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case TRNC_U8: return v >= 0 && v <= UINT8_MAX;
    default: return true;
  }
}

/* Converts v to dtype `to` like c10's static_cast conversions. `scalar`:
 * v is a Python number (Scalar::to<T> semantics: no silent overflow).
 * False if the conversion is not exact-by-torch or not decidable here. */
static bool cast(num v, trnc_dtype to, bool scalar, num *out) {
  if (v.f && isnan(v.d)) return false;
  if (to == TRNC_BOOL) {
    *out = num_i(v.f ? v.d != 0 : v.i != 0);
    return true;
  }
  if (dt_float(to)) {
    float fv = v.f ? (float)v.d : (float)v.i;
    if (scalar && v.f && isfinite(v.d) && !isfinite(fv)) return false;
    *out = num_f(round_to(to, fv));
    return true;
  }
  if (!v.f) {
    if (scalar && !int_in_range(v.i, to)) return false;
    *out = num_i(wrap_int(v.i, to));
    return true;
  }
  double t = trunc(v.d);
  if (scalar && t != v.d) return false;
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return false;
  int64_t i = (int64_t)t;
  if (to == TRNC_U8) i = wrap_int(i, to);   /* c10 goes through int64 for uint8 */
  else if (!int_in_range(i, to)) return false;
  *out = num_i(i);
  return true;
}

static size_t dsize(trnc_dtype dt) { return trnc_dtype_size(dt); }

/* Element e of logical (row-major) bytes of dtype dt. */
static num load(const uint8_t *p, trnc_dtype dt, int64_t e) {
  size_t o = (size_t)e * dsize(dt);
  switch (dt) {
    case TRNC_F32: {
      float f;
      memcpy(&f, p + o, 4);
      return num_f(f);
    }
    case TRNC_BF16: return num_f(bf16_to_f32((uint16_t)(p[o] | p[o + 1] << 8)));
    case TRNC_F16: return num_f(f16_to_f32((uint16_t)(p[o] | p[o + 1] << 8)));
    case TRNC_I64: {
      int64_t v;
      memcpy(&v, p + o, 8);
      return num_i(v);
    }
    case TRNC_I32: {
      int32_t v;
      memcpy(&v, p + o, 4);
      return num_i(v);
    }
    case TRNC_I16: {
      int16_t v;
      memcpy(&v, p + o, 2);
      return num_i(v);
    }
    case TRNC_I8: return num_i((int8_t)p[o]);
    case TRNC_U8: return num_i(p[o]);
    case TRNC_BOOL: return num_i(p[o] != 0);
    default: return num_i(0);
  }
}

/* Stores v (already of dtype dt) as element e. */
static void store(uint8_t *p, trnc_dtype dt, int64_t e, num v) {
  size_t o = (size_t)e * dsize(dt);
  switch (dt) {
    case TRNC_F32: {
      float f = (float)v.d;
      memcpy(p + o, &f, 4);
      break;
    }
    case TRNC_BF16:
    case TRNC_F16: {
      uint16_t h = dt == TRNC_BF16 ? f32_to_bf16((float)v.d) : f32_to_f16((float)v.d);
      p[o] = (uint8_t)h;
      p[o + 1] = (uint8_t)(h >> 8);
      break;
    }
    case TRNC_I64: memcpy(p + o, &v.i, 8); break;
    case TRNC_I32: {
      int32_t x = (int32_t)v.i;
      memcpy(p + o, &x, 4);
      break;
    }
    case TRNC_I16: {
      int16_t x = (int16_t)v.i;
      memcpy(p + o, &x, 2);
      break;
    }
    case TRNC_I8:
    case TRNC_U8: p[o] = (uint8_t)v.i; break;
    case TRNC_BOOL: p[o] = v.i != 0; break;
    default: break;
  }
}

/* ---- operands ------------------------------------------------------------------ */

/* A tensor operand (logical row-major bytes) or a Python number. */
typedef struct operand {
  bool scalar;
  num s;
  const uint8_t *data;
  const trnc_type *type;
} operand;

/* Linear index into t's row-major data of output element e of `out`, with
 * t broadcast to out's shape. */
static int64_t bcast_index(const trnc_type *out, const trnc_type *t, int64_t e) {
  int64_t idx = 0, mul = 1;
  for (int i = out->rank - 1, j = t->rank - 1; i >= 0; i--, j--) {
    int64_t c = e % out->shape[i];
    e /= out->shape[i];
    if (j < 0) continue;
    if (t->shape[j] != 1) idx += c * mul;
    mul *= t->shape[j];
  }
  return idx;
}

static num operand_at(const operand *o, const trnc_type *out, int64_t e) {
  if (o->scalar) return o->s;
  return load(o->data, o->type->dtype, bcast_index(out, o->type, e));
}

/* ---- fold state ------------------------------------------------------------------ */

typedef struct fold_ctx {
  trnc_graph *g;
  bool *fold;          /* per node: planned */
  bool *cannot;        /* per node: evaluation failed */
  uint8_t **result;    /* per node: evaluated bytes (arena) */
} fold_ctx;

/* Creations fold.c evaluates (full, zeros, arange, ...). */
static bool is_creation(trnc_op op) { return trnc_op_has(op, TRNC_OPF_CREATION | TRNC_OPF_FOLDABLE); }

/* Ops folded only when a user is folded too: creations and expand, which
 * would only grow the constant. */
static bool needs_folded_user(trnc_op op) { return is_creation(op) || op == TRNC_OP_EXPAND; }

static bool in_safe_set(trnc_op op) { return trnc_op_has(op, TRNC_OPF_FOLDABLE); }

typedef struct refs_ctx {
  const trnc_graph *g;
  bool ok;
} refs_ctx;

static void check_operand_dtype(trnc_ref r, void *p) {
  refs_ctx *c = p;
  if (!dt_ok(c->g->values[r].type.dtype)) c->ok = false;
}

/* True if node n could be folded, ignoring where its operands come from. */
static bool candidate(const trnc_graph *g, const trnc_node *n) {
  if (n->dead || (unsigned)n->op >= TRNC_OP_COUNT || n->nouts != 1 || !in_safe_set(n->op))
    return false;
  const trnc_value *v = &g->values[n->outs[0]];
  if (v->is_none || v->layout > 1 || v->nested || !dt_ok(v->type.dtype)) return false;
  if (trnc_type_numel(&v->type) > FOLD_MAX_ELEMS) return false;
  refs_ctx c = {g, true};
  for (uint32_t a = 0; a < n->nargs; a++) trnc_arg_visit_refs(&n->args[a], check_operand_dtype, &c);
  return c.ok;
}

/* True if value r is (or will be) a constant. */
static bool const_value(const fold_ctx *c, trnc_ref r) {
  uint32_t p = c->g->values[r].node;
  return c->g->nodes[p].op == TRNC_OP_CONSTANT || c->fold[p];
}

typedef struct operands_ctx {
  const fold_ctx *c;
  bool ok;
} operands_ctx;

static void check_const_operand(trnc_ref r, void *p) {
  operands_ctx *o = p;
  if (!const_value(o->c, r)) o->ok = false;
}

/* Plans which nodes to fold: starts from every candidate and removes nodes
 * until the rules in the header hold (each round only removes, so this
 * terminates). Errors: TRNC_ERR_NOMEM. */
static trnc_status plan(fold_ctx *c, trnc_diags *d) {
  trnc_graph *g = c->g;
  for (uint32_t i = 0; i < g->nnodes; i++) c->fold[i] = !c->cannot[i] && candidate(g, &g->nodes[i]);
  bool *folded_user = calloc(g->nnodes ? g->nnodes : 1, sizeof(bool));
  bool *other_user = calloc(g->nnodes ? g->nnodes : 1, sizeof(bool));
  if (!folded_user || !other_user) {
    free(folded_user);
    free(other_user);
    return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in fold");
  }
  for (bool changed = true; changed;) {
    changed = false;
    /* Operands must be constants. */
    for (uint32_t i = 0; i < g->nnodes; i++) {
      const trnc_node *n = &g->nodes[i];
      if (!c->fold[i] || is_creation(n->op)) continue;
      operands_ctx o = {c, true};
      for (uint32_t a = 0; a < n->nargs; a++)
        trnc_arg_visit_refs(&n->args[a], check_const_operand, &o);
      if (!o.ok) c->fold[i] = false, changed = true;
    }
    /* Users, in reverse order: every user of node i is decided before i.
     * A graph output counts as a user that is not folded. */
    memset(folded_user, 0, sizeof(bool) * g->nnodes);
    memset(other_user, 0, sizeof(bool) * g->nnodes);
    for (uint32_t k = 0; k < g->noutputs; k++)
      if (g->outputs[k] != TRNC_NO_REF) other_user[g->values[g->outputs[k]].node] = true;
    for (uint32_t i = g->nnodes; i-- > 0;) {
      const trnc_node *n = &g->nodes[i];
      if (n->dead) continue;
      if (c->fold[i]) {
        bool drop = needs_folded_user(n->op) && !folded_user[i];
        if (trnc_pu_is_graph_output(g, n->outs[0])) drop = true;
        if (!trnc_pu_is_contiguous(&g->values[n->outs[0]].type) && other_user[i]) drop = true;
        if (drop) c->fold[i] = false, changed = true;
      }
      for (uint32_t a = 0; a < n->nargs; a++) {
        const trnc_arg *arg = &n->args[a];
        uint32_t cnt = arg->kind == TRNC_ARG_LIST ? arg->u.list.n : 1;
        for (uint32_t j = 0; j < cnt; j++) {
          const trnc_arg *x = arg->kind == TRNC_ARG_LIST ? &arg->u.list.items[j] : arg;
          if (x->kind != TRNC_ARG_VALUE) continue;
          uint32_t p = g->values[x->u.ref].node;
          if (c->fold[i]) folded_user[p] = true;
          else other_user[p] = true;
        }
      }
    }
  }
  free(folded_user);
  free(other_user);
  return TRNC_OK;
}

/* ---- evaluation ---------------------------------------------------------------------- */

/* Logical bytes of value r (a constant or an evaluated folded node). */
static const uint8_t *value_bytes(const fold_ctx *c, trnc_ref r) {
  const trnc_node *p = &c->g->nodes[c->g->values[r].node];
  if (p->op == TRNC_OP_CONSTANT) return p->data ? p->data : (const uint8_t *)"";
  return c->result[c->g->values[r].node];
}

static bool get_operand(const fold_ctx *c, const trnc_node *n, uint32_t i, operand *o) {
  const trnc_arg *a = trnc_node_arg(n, i);
  memset(o, 0, sizeof *o);
  if (!a) return false;
  switch (a->kind) {
    case TRNC_ARG_INT: o->scalar = true, o->s = num_i(a->u.i); return true;
    case TRNC_ARG_BOOL: o->scalar = true, o->s = num_i(a->u.b); return true;
    case TRNC_ARG_FLOAT: o->scalar = true, o->s = num_f(a->u.f); return true;
    case TRNC_ARG_VALUE:
      o->type = trnc_ref_type(c->g, a->u.ref);
      o->data = value_bytes(c, a->u.ref);
      return o->data != NULL;
    default: return false;
  }
}

static bool alpha_one(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && ((a->kind == TRNC_ARG_INT && a->u.i == 1) ||
               (a->kind == TRNC_ARG_FLOAT && a->u.f == 1.0));
}

/* Integer alpha, or false. */
static bool alpha_int(const trnc_node *n, uint32_t i, int64_t *out) {
  const trnc_arg *a = trnc_node_arg(n, i);
  if (a && a->kind == TRNC_ARG_INT) return *out = a->u.i, true;
  if (a && a->kind == TRNC_ARG_BOOL) return *out = a->u.b, true;
  return false;
}

/* Casts operand element x to compute dtype ct; for reduced float ct the
 * cast must be exact (see the header). */
static bool to_compute(const operand *o, num x, trnc_dtype ct, num *out) {
  if (!cast(x, ct, o->scalar, out)) return false;
  if (dt_reduced(ct)) {
    double orig = x.f ? x.d : (double)x.i;
    if (out->d != orig) return false;
  }
  return true;
}

static uint64_t u(int64_t v) { return (uint64_t)v; }

/* Binary arithmetic: add/sub/rsub/mul/div/maximum/minimum (in result dtype). */
static bool eval_arith(const fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  operand a, b;
  bool rsub = n->op == TRNC_OP_RSUB_SCALAR;
  if (!get_operand(c, n, rsub ? 1 : 0, &a) || !get_operand(c, n, rsub ? 0 : 1, &b)) return false;
  trnc_dtype ct = t->dtype;
  if (ct == TRNC_BOOL) return false;
  bool addlike = n->op == TRNC_OP_ADD || n->op == TRNC_OP_ADD_SCALAR || n->op == TRNC_OP_SUB ||
                 n->op == TRNC_OP_SUB_SCALAR || rsub;
  bool sub = n->op == TRNC_OP_SUB || n->op == TRNC_OP_SUB_SCALAR || rsub;
  int64_t alpha = 1;
  if (addlike) {
    if (dt_float(ct) ? !alpha_one(n, 2) : !alpha_int(n, 2, &alpha)) return false;
  }
  int64_t numel = trnc_type_numel(t);
  for (int64_t e = 0; e < numel; e++) {
    num x, y, r;
    if (!to_compute(&a, operand_at(&a, t, e), ct, &x) ||
        !to_compute(&b, operand_at(&b, t, e), ct, &y))
      return false;
    if (dt_float(ct)) {
      float fx = (float)x.d, fy = (float)y.d, fr;
      switch (n->op) {
        case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR: fr = fx * fy; break;
        case TRNC_OP_DIV: case TRNC_OP_DIV_SCALAR:
          if (fy == 0) return false;
          fr = fx / fy;
          break;
        case TRNC_OP_MAXIMUM: case TRNC_OP_MINIMUM:
          if (fx == fy && signbit(fx) != signbit(fy)) return false;
          fr = (n->op == TRNC_OP_MAXIMUM) == (fx > fy) ? fx : fy;
          break;
        default: fr = sub ? fx - fy : fx + fy; break;
      }
      if (isnan(fr)) return false;
      r = num_f(round_to(ct, fr));
    } else {
      int64_t ix = x.i, iy = y.i, ir;
      switch (n->op) {
        case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR: ir = (int64_t)(u(ix) * u(iy)); break;
        case TRNC_OP_MAXIMUM: ir = ix > iy ? ix : iy; break;
        case TRNC_OP_MINIMUM: ir = ix < iy ? ix : iy; break;
        case TRNC_OP_DIV: case TRNC_OP_DIV_SCALAR: return false;
        default: {
          uint64_t s = u(alpha) * u(iy);
          ir = (int64_t)(sub ? u(ix) - s : u(ix) + s);
          break;
        }
      }
      r = num_i(wrap_int(ir, ct));
    }
    store(out, ct, e, r);
  }
  return true;
}

static bool eval_unary(const fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  operand a;
  if (!get_operand(c, n, 0, &a)) return false;
  int64_t numel = trnc_type_numel(t);
  for (int64_t e = 0; e < numel; e++) {
    num x = operand_at(&a, t, e), r;
    if (x.f && isnan(x.d)) return false;
    switch (n->op) {
      case TRNC_OP_NEG:
        if (t->dtype == TRNC_BOOL) return false;
        r = x.f ? num_f(-x.d) : num_i(wrap_int((int64_t)(0 - u(x.i)), t->dtype));
        break;
      case TRNC_OP_ABS:
        if (t->dtype == TRNC_BOOL) return false;
        r = x.f ? num_f(fabs(x.d)) : num_i(wrap_int(x.i < 0 ? (int64_t)(0 - u(x.i)) : x.i, t->dtype));
        break;
      case TRNC_OP_LOGICAL_NOT: r = num_i(x.f ? x.d == 0 : x.i == 0); break;
      case TRNC_OP_BITWISE_NOT:
        if (x.f) return false;
        r = t->dtype == TRNC_BOOL ? num_i(!x.i) : num_i(wrap_int(~x.i, t->dtype));
        break;
      default: return false;
    }
    store(out, t->dtype, e, r);
  }
  return true;
}

static bool is_compare(trnc_op op) {
  return (op >= TRNC_OP_EQ && op <= TRNC_OP_GE_SCALAR);
}

/* Comparisons (in the promoted dtype), logical and bitwise binary ops. */
static bool eval_logic(const fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  operand a, b;
  if (!get_operand(c, n, 0, &a) || !get_operand(c, n, 1, &b)) return false;
  static const int ab[] = {0, 1};
  trnc_dtype ct = is_compare(n->op) ? trnc_promote_args(c->g, n, ab, 2) : t->dtype;
  bool logical = n->op == TRNC_OP_LOGICAL_AND || n->op == TRNC_OP_LOGICAL_OR ||
                 n->op == TRNC_OP_LOGICAL_XOR;
  if (!dt_ok(ct)) return false;
  int64_t numel = trnc_type_numel(t);
  for (int64_t e = 0; e < numel; e++) {
    num x = operand_at(&a, t, e), y = operand_at(&b, t, e), r;
    if ((x.f && isnan(x.d)) || (y.f && isnan(y.d))) return false;
    if (logical) {
      bool bx = x.f ? x.d != 0 : x.i != 0, by = y.f ? y.d != 0 : y.i != 0;
      r = num_i(n->op == TRNC_OP_LOGICAL_AND ? bx && by : n->op == TRNC_OP_LOGICAL_OR ? bx || by
                                                                                       : bx != by);
    } else if (is_compare(n->op)) {
      num cx, cy;
      if (!to_compute(&a, x, ct, &cx) || !to_compute(&b, y, ct, &cy)) return false;
      int cmp;
      if (dt_float(ct)) cmp = cx.d < cy.d ? -1 : cx.d > cy.d ? 1 : 0;
      else cmp = cx.i < cy.i ? -1 : cx.i > cy.i ? 1 : 0;
      bool v;
      switch (n->op) {
        case TRNC_OP_EQ: case TRNC_OP_EQ_SCALAR: v = cmp == 0; break;
        case TRNC_OP_NE: case TRNC_OP_NE_SCALAR: v = cmp != 0; break;
        case TRNC_OP_LT: case TRNC_OP_LT_SCALAR: v = cmp < 0; break;
        case TRNC_OP_LE: case TRNC_OP_LE_SCALAR: v = cmp <= 0; break;
        case TRNC_OP_GT: case TRNC_OP_GT_SCALAR: v = cmp > 0; break;
        default: v = cmp >= 0; break;
      }
      r = num_i(v);
    } else {   /* bitwise and/or on ints or bools */
      num cx, cy;
      if (dt_float(ct) || !cast(x, ct, a.scalar, &cx) || !cast(y, ct, b.scalar, &cy)) return false;
      int64_t v = n->op == TRNC_OP_BITWISE_AND ? (cx.i & cy.i) : (cx.i | cy.i);
      r = num_i(ct == TRNC_BOOL ? v != 0 : wrap_int(v, ct));
    }
    store(out, t->dtype, e, r);
  }
  return true;
}

/* Writes element e of the result from operand o: bytes when o is a tensor
 * of the result dtype, else a conversion. */
static bool put_from(const operand *o, const trnc_type *t, int64_t e, uint8_t *out) {
  size_t sz = dsize(t->dtype);
  if (!o->scalar && o->type->dtype == t->dtype) {
    memcpy(out + (size_t)e * sz, o->data + (size_t)bcast_index(t, o->type, e) * sz, sz);
    return true;
  }
  num v;
  if (!cast(operand_at(o, t, e), t->dtype, o->scalar, &v)) return false;
  store(out, t->dtype, e, v);
  return true;
}

static bool eval_select(const fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  operand cond, x, y;
  bool where = n->op == TRNC_OP_WHERE;
  /* where(cond, self, other); masked_fill(self, mask, value) */
  if (!get_operand(c, n, where ? 0 : 1, &cond) || !get_operand(c, n, where ? 1 : 0, &x) ||
      !get_operand(c, n, 2, &y) || cond.scalar)
    return false;
  int64_t numel = trnc_type_numel(t);
  for (int64_t e = 0; e < numel; e++) {
    num m = operand_at(&cond, t, e);
    bool take_x = where ? m.i != 0 : m.i == 0;
    if (!put_from(take_x ? &x : &y, t, e, out)) return false;
  }
  return true;
}

static bool eval_cast(const fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  operand a;
  if (!get_operand(c, n, 0, &a) || a.scalar) return false;
  int64_t numel = trnc_type_numel(t);
  for (int64_t e = 0; e < numel; e++)
    if (!put_from(&a, t, e, out)) return false;
  return true;
}

/* Views: the node's rule applied to a contiguous stand-in for the input
 * gives, in the input's logical element positions, the strides and offset
 * of every output element. Rules without exact strides (alias, clone,
 * _unsafe_view, reshape that copies) keep row-major order. */
static bool eval_view(fold_ctx *c, const trnc_node *n, const trnc_type *t, uint8_t *out) {
  trnc_graph *g = c->g;
  if (n->nargs < 1 || n->args[0].kind != TRNC_ARG_VALUE) return false;
  trnc_ref r = n->args[0].u.ref;
  const uint8_t *src = value_bytes(c, r);
  if (!src) return false;
  trnc_type saved = g->values[r].type, want[1];
  trnc_type_set_contiguous(&g->values[r].type);
  bool ok = trnc_pu_rule(g, n, want);
  g->values[r].type = saved;
  if (!ok || want[0].dtype != t->dtype) return false;
  int64_t in_numel = trnc_type_numel(&saved), numel = trnc_type_numel(t);
  size_t sz = dsize(t->dtype);
  for (int64_t e = 0; e < numel; e++) {
    int64_t s = e;
    if (want[0].offset >= 0) {
      s = want[0].offset;
      int64_t rem = e;
      for (int i = t->rank - 1; i >= 0; i--) {
        s += (rem % t->shape[i]) * want[0].stride[i];
        rem /= t->shape[i];
      }
    }
    if (s < 0 || s >= in_numel) return false;
    memcpy(out + (size_t)e * sz, src + (size_t)s * sz, sz);
  }
  return true;
}

static bool scalar_arg(const trnc_arg *a, num *out) {
  if (!a) return false;
  switch (a->kind) {
    case TRNC_ARG_INT: *out = num_i(a->u.i); return true;
    case TRNC_ARG_BOOL: *out = num_i(a->u.b); return true;
    case TRNC_ARG_FLOAT: *out = num_f(a->u.f); return true;
    default: return false;
  }
}

static bool eval_creation(const trnc_node *n, const trnc_type *t, uint8_t *out) {
  int64_t numel = trnc_type_numel(t);
  num v;
  switch (n->op) {
    case TRNC_OP_ZEROS: v = num_i(0); break;
    case TRNC_OP_ONES: v = num_i(1); break;
    case TRNC_OP_FULL: case TRNC_OP_FULL_LIKE:
      if (!scalar_arg(trnc_node_arg(n, 1), &v)) return false;
      break;
    case TRNC_OP_SCALAR_TENSOR:
      if (!scalar_arg(trnc_node_arg(n, 0), &v)) return false;
      break;
    default: {   /* arange: integral arguments, exact values */
      int nnum = n->op == TRNC_OP_ARANGE ? 1 : n->op == TRNC_OP_ARANGE_START ? 2 : 3;
      int64_t sv[3] = {0, 0, 1};
      for (int i = 0; i < nnum; i++) {
        num x;
        if (!scalar_arg(trnc_node_arg(n, (uint32_t)i), &x)) return false;
        if (x.f) {
          if (!(x.d == trunc(x.d) && fabs(x.d) < 9.0e15)) return false;
          x = num_i((int64_t)x.d);
        }
        sv[nnum == 1 ? 1 : i] = x.i;
      }
      if (sv[0] < -(INT64_C(1) << 52) || sv[0] > (INT64_C(1) << 52) ||
          sv[2] < -(INT64_C(1) << 40) || sv[2] > (INT64_C(1) << 40))
        return false;
      for (int64_t e = 0; e < numel; e++) {
        num r, x = num_i(sv[0] + sv[2] * e);
        if (!cast(x, t->dtype, true, &r)) return false;
        if (dt_float(t->dtype) && r.d != (double)x.i) return false;
        store(out, t->dtype, e, r);
      }
      return true;
    }
  }
  num r;
  if (!cast(v, t->dtype, true, &r)) return false;
  for (int64_t e = 0; e < numel; e++) store(out, t->dtype, e, r);
  return true;
}

/* Evaluates folded node i into c->result[i]; false if not exact. */
static bool eval_node(fold_ctx *c, uint32_t i) {
  trnc_graph *g = c->g;
  const trnc_node *n = &g->nodes[i];
  const trnc_type *t = &g->values[n->outs[0]].type;
  size_t bytes = (size_t)trnc_type_numel(t) * dsize(t->dtype);
  uint8_t *out = trnc_arena_alloc(&g->arena, bytes ? bytes : 1);
  if (!out) return false;
  bool ok;
  switch (n->op) {
    case TRNC_OP_ADD: case TRNC_OP_SUB: case TRNC_OP_MUL: case TRNC_OP_DIV:
    case TRNC_OP_ADD_SCALAR: case TRNC_OP_SUB_SCALAR: case TRNC_OP_MUL_SCALAR:
    case TRNC_OP_DIV_SCALAR: case TRNC_OP_RSUB_SCALAR: case TRNC_OP_MAXIMUM:
    case TRNC_OP_MINIMUM:
      ok = eval_arith(c, n, t, out);
      break;
    case TRNC_OP_NEG: case TRNC_OP_ABS: case TRNC_OP_LOGICAL_NOT: case TRNC_OP_BITWISE_NOT:
      ok = eval_unary(c, n, t, out);
      break;
    case TRNC_OP_WHERE: case TRNC_OP_MASKED_FILL: ok = eval_select(c, n, t, out); break;
    case TRNC_OP_TO_COPY: case TRNC_OP_CLONE: ok = eval_cast(c, n, t, out); break;
    default:
      if (is_creation(n->op)) ok = eval_creation(n, t, out);
      else if (is_compare(n->op) || n->op == TRNC_OP_LOGICAL_AND || n->op == TRNC_OP_LOGICAL_OR ||
               n->op == TRNC_OP_LOGICAL_XOR || n->op == TRNC_OP_BITWISE_AND ||
               n->op == TRNC_OP_BITWISE_OR)
        ok = eval_logic(c, n, t, out);
      else ok = eval_view(c, n, t, out);
      break;
  }
  c->result[i] = ok ? out : NULL;
  return ok;
}

/* Turns node i into a CONSTANT holding c->result[i]. */
static void commit(fold_ctx *c, uint32_t i) {
  trnc_node *n = &c->g->nodes[i];
  trnc_type *t = &c->g->values[n->outs[0]].type;
  if (!trnc_pu_is_contiguous(t)) trnc_type_set_contiguous(t);   /* only folded users */
  n->op = TRNC_OP_CONSTANT;
  n->target = "";
  n->args = NULL;
  n->nargs = 0;
  n->data = c->result[i];
  n->data_len = (size_t)trnc_type_numel(t) * dsize(t->dtype);
}

/* Plans, evaluates every planned node in graph order (operands first; a
 * node whose operand failed fails too), and re-plans without the nodes that
 * could not be evaluated exactly, until a plan evaluates completely; then
 * commits it. Errors: TRNC_ERR_NOMEM. */
trnc_status trnc_pass_fold(trnc_graph *g, trnc_diags *d) {
  fold_ctx c = {g, NULL, NULL, NULL};
  size_t nn = g->nnodes ? g->nnodes : 1;
  c.fold = calloc(nn, sizeof *c.fold);
  c.cannot = calloc(nn, sizeof *c.cannot);
  c.result = calloc(nn, sizeof *c.result);
  trnc_status s = TRNC_OK;
  if (!c.fold || !c.cannot || !c.result) {
    s = trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in fold");
    goto done;
  }
  for (;;) {
    if ((s = plan(&c, d))) goto done;
    bool failed = false;
    memset(c.result, 0, sizeof *c.result * nn);
    for (uint32_t i = 0; i < g->nnodes; i++)
      if (c.fold[i] && !eval_node(&c, i)) c.cannot[i] = failed = true;
    if (!failed) break;
  }
  for (uint32_t i = 0; i < g->nnodes; i++)
    if (c.fold[i]) commit(&c, i);
done:
  free(c.fold);
  free(c.cannot);
  free(c.result);
  return s;
}
