/*
 * rules.c — lowering rules: elementwise graph ops as kernel IR.
 *
 * Simple ops are rows of one table (an activation with scale and bias, or an
 * ALU op with a tensor or a Python scalar); composite ops (floor, gelu
 * backward, elu, ...) are short functions over the kir shorthands. Every
 * intermediate is fp32; a node's result has its value's device dtype, so
 * bf16/fp16 results round once per op, as eager PyTorch's do. Integer
 * results (and comparisons of integers) take the integer rules instead
 * (int_exact): int32 ops on GpSimd in native integer arithmetic, exact at
 * every 32-bit value, with int8/int16/uint8 results wrapped as eager wraps.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/kir.h"

enum { R_NONE, R_ACT, R_ALU };

typedef struct rule {
  uint8_t kind;
  uint8_t fn;      /* TRNC_NC_ACT_* or TRNC_NC_ALU_* */
  float scale, bias;
} rule;

/* Rows for the single-instruction ops. */
static const rule simple[TRNC_OP_COUNT] = {
    [TRNC_OP_ABS] = {R_ACT, TRNC_NC_ACT_ABS, 1, 0},
    [TRNC_OP_NEG] = {R_ACT, TRNC_NC_ACT_IDENTITY, -1, 0},
    [TRNC_OP_EXP] = {R_ACT, TRNC_NC_ACT_EXP, 1, 0},
    [TRNC_OP_LOG] = {R_ACT, TRNC_NC_ACT_LOG, 1, 0},
    [TRNC_OP_LOG1P] = {R_ACT, TRNC_NC_ACT_LOG, 1, 1},
    [TRNC_OP_SQRT] = {R_ACT, TRNC_NC_ACT_SQRT, 1, 0},
    [TRNC_OP_RSQRT] = {R_ACT, TRNC_NC_ACT_RSQRT, 1, 0},
    [TRNC_OP_RECIPROCAL] = {R_ACT, TRNC_NC_ACT_RECIPROCAL, 1, 0},
    [TRNC_OP_TANH] = {R_ACT, TRNC_NC_ACT_TANH, 1, 0},
    [TRNC_OP_SIGMOID] = {R_ACT, TRNC_NC_ACT_SIGMOID, 1, 0},
    [TRNC_OP_SIN] = {R_ACT, TRNC_NC_ACT_SIN, 1, 0},
    [TRNC_OP_COS] = {R_ACT, TRNC_NC_ACT_COS, 1, 0},
    [TRNC_OP_ERF] = {R_ACT, TRNC_NC_ACT_ERF, 1, 0},
    [TRNC_OP_RELU] = {R_ACT, TRNC_NC_ACT_RELU, 1, 0},
    [TRNC_OP_SILU] = {R_ACT, TRNC_NC_ACT_SILU, 1, 0},
    [TRNC_OP_SIGN] = {R_ACT, TRNC_NC_ACT_SIGN, 1, 0},
    [TRNC_OP_EXP2] = {R_ACT, TRNC_NC_ACT_EXP, 0.69314718055994531f, 0},
    [TRNC_OP_POW] = {R_ALU, TRNC_NC_ALU_POW, 0, 0},
    [TRNC_OP_MUL] = {R_ALU, TRNC_NC_ALU_MUL, 0, 0},
    [TRNC_OP_MUL_SCALAR] = {R_ALU, TRNC_NC_ALU_MUL, 0, 0},
    [TRNC_OP_DIV] = {R_ALU, TRNC_NC_ALU_DIV, 0, 0},
    [TRNC_OP_DIV_SCALAR] = {R_ALU, TRNC_NC_ALU_DIV, 0, 0},
    [TRNC_OP_MAXIMUM] = {R_ALU, TRNC_NC_ALU_MAX, 0, 0},
    [TRNC_OP_MINIMUM] = {R_ALU, TRNC_NC_ALU_MIN, 0, 0},
    [TRNC_OP_EQ] = {R_ALU, TRNC_NC_ALU_EQ, 0, 0},
    [TRNC_OP_EQ_SCALAR] = {R_ALU, TRNC_NC_ALU_EQ, 0, 0},
    [TRNC_OP_NE] = {R_ALU, TRNC_NC_ALU_NE, 0, 0},
    [TRNC_OP_NE_SCALAR] = {R_ALU, TRNC_NC_ALU_NE, 0, 0},
    [TRNC_OP_LT] = {R_ALU, TRNC_NC_ALU_LT, 0, 0},
    [TRNC_OP_LT_SCALAR] = {R_ALU, TRNC_NC_ALU_LT, 0, 0},
    [TRNC_OP_LE] = {R_ALU, TRNC_NC_ALU_LE, 0, 0},
    [TRNC_OP_LE_SCALAR] = {R_ALU, TRNC_NC_ALU_LE, 0, 0},
    [TRNC_OP_GT] = {R_ALU, TRNC_NC_ALU_GT, 0, 0},
    [TRNC_OP_GT_SCALAR] = {R_ALU, TRNC_NC_ALU_GT, 0, 0},
    [TRNC_OP_GE] = {R_ALU, TRNC_NC_ALU_GE, 0, 0},
    [TRNC_OP_GE_SCALAR] = {R_ALU, TRNC_NC_ALU_GE, 0, 0},
    [TRNC_OP_LOGICAL_AND] = {R_ALU, TRNC_NC_ALU_AND, 0, 0},
    [TRNC_OP_LOGICAL_OR] = {R_ALU, TRNC_NC_ALU_OR, 0, 0},
    [TRNC_OP_LOGICAL_XOR] = {R_ALU, TRNC_NC_ALU_XOR, 0, 0},
};

bool kir_is_eltwise(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  if (n->op >= TRNC_OP_COUNT || n->nouts != 1) return false;
  return trnc_op_any(n->op, TRNC_OPF_ELEMENTWISE | TRNC_OPF_COMPARE) || n->op == TRNC_OP_CLONE ||
         n->op == TRNC_OP_TO_COPY;
}

/* Reductions, one row each: fold, x != 0 first, times 1/count after, every
 * dim, and eager's value over no elements. */
#define RED(alu, nz, mean, whole, id, empty) {TRNC_NC_ALU_##alu, nz, mean, whole, id, empty}
static const kir_reduction reductions[TRNC_OP_COUNT] = {
    [TRNC_OP_SUM] = RED(ADD, false, false, false, true, 0),
    [TRNC_OP_SUM_ALL] = RED(ADD, false, false, true, true, 0),
    [TRNC_OP_MEAN] = RED(ADD, false, true, false, true, NAN),
    [TRNC_OP_MEAN_ALL] = RED(ADD, false, true, true, true, NAN),
    [TRNC_OP_PROD] = RED(MUL, false, false, false, true, 1),
    [TRNC_OP_PROD_ALL] = RED(MUL, false, false, true, true, 1),
    [TRNC_OP_AMAX] = RED(MAX, false, false, false, false, 0),
    [TRNC_OP_AMIN] = RED(MIN, false, false, false, false, 0),
    [TRNC_OP_MAX_ALL] = RED(MAX, false, false, true, false, 0),
    [TRNC_OP_MIN_ALL] = RED(MIN, false, false, true, false, 0),
    [TRNC_OP_ANY_DIM] = RED(MAX, true, false, false, true, 0),
    [TRNC_OP_ANY_DIMS] = RED(MAX, true, false, false, true, 0),
    [TRNC_OP_ANY_ALL] = RED(MAX, true, false, true, true, 0),
    [TRNC_OP_ALL_DIM] = RED(MIN, true, false, false, true, 1),
    [TRNC_OP_ALL_DIMS] = RED(MIN, true, false, false, true, 1),
    [TRNC_OP_ALL_ALL] = RED(MIN, true, false, true, true, 1),
};
#undef RED

const kir_reduction *kir_reduction_of(trnc_op op) {
  return op < TRNC_OP_COUNT && reductions[op].alu != TRNC_NC_ALU_BYPASS ? &reductions[op] : NULL;
}

bool kir_is_reduce(trnc_op op) { return kir_reduction_of(op) != NULL; }

bool kir_is_row(trnc_op op) {
  return op == TRNC_OP_SOFTMAX || op == TRNC_OP_LOG_SOFTMAX || op == TRNC_OP_SOFTMAX_BACKWARD ||
         op == TRNC_OP_LOG_SOFTMAX_BACKWARD || op == TRNC_OP_LAYER_NORM || op == TRNC_OP_LAYER_NORM_BACKWARD;
}

float kir_row_empty_value(const trnc_node *n, uint32_t k) {
  if (n->op == TRNC_OP_LAYER_NORM && k == 1) return 0.0f;
  if (kir_row_colsum(n, k)) return 0.0f; /* a sum over no rows */
  return NAN;
}

uint32_t kir_reduced_dims(const trnc_node *n, int rank, bool *keepdim) {
  *keepdim = false;
  if (n->op == TRNC_OP_LAYER_NORM || n->op == TRNC_OP_LAYER_NORM_BACKWARD) {
    /* native_layer_norm(x, normalized_shape, ...), _backward(g, x, normalized_shape, ...) */
    const trnc_arg *ns = trnc_node_arg(n, n->op == TRNC_OP_LAYER_NORM ? 1 : 2);
    uint32_t m = 0, k = ns && ns->kind == TRNC_ARG_LIST ? ns->u.list.n : 0;
    for (int i = rank - (int)k; i < rank; i++)
      if (i >= 0) m |= 1u << i;
    return rank ? m : 1u;
  }
  if (kir_is_row(n->op)) { /* softmax(x, dim, ...), *_backward_data(g, y, dim, ...) */
    int64_t d = trnc_arg_int(n, n->op == TRNC_OP_SOFTMAX || n->op == TRNC_OP_LOG_SOFTMAX ? 1 : 2, 0);
    if (d < 0) d += rank ? rank : 1;
    return d >= 0 && d < (rank ? rank : 1) ? 1u << d : 0;
  }
  /* a reduction: dims in argument 1 (an int or a list; None or [] is every
   * dim), keepdim in argument 2 */
  const kir_reduction *r = kir_reduction_of(n->op);
  bool whole = r && r->whole;
  const trnc_arg *dl = whole ? NULL : trnc_node_arg(n, 1);
  bool all = !dl || dl->kind == TRNC_ARG_NONE || (dl->kind == TRNC_ARG_LIST && dl->u.list.n == 0);
  const trnc_arg *kd = whole ? NULL : trnc_node_arg(n, 2);
  *keepdim = kd && kd->kind == TRNC_ARG_BOOL && kd->u.b;
  uint32_t m = 0;
  for (int i = 0; i < rank; i++)
    if (all) m |= 1u << i;
  uint32_t nd = all ? 0 : dl->kind == TRNC_ARG_LIST ? dl->u.list.n : 1;
  for (uint32_t k = 0; k < nd; k++) {
    int64_t d = dl->kind == TRNC_ARG_LIST ? dl->u.list.items[k].u.i : dl->u.i;
    if (d < 0) d += rank;
    if (d >= 0 && d < rank) m |= 1u << d;
  }
  return m;
}

static bool is_scalar(const trnc_arg *a) {
  return a && (a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL);
}

static bool is_float_dt(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16 || t == TRNC_F8E4M3 || t == TRNC_F8E5M2;
}

static int arg_val(const kir_env *E, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE ? E->val[a->u.ref] : -1;
}

static float num(const trnc_node *n, uint32_t i, double dflt) {
  return (float)trnc_arg_number(trnc_node_arg(n, i), dflt);
}

/* A Python int scalar s combined with a tensor of narrow integer dtype t:
 * eager converts s to t first, wrapping modulo 2^bits (int8 x < 1000
 * compares with -24). Other dtypes keep s. */
static float wrapped_scalar(const trnc_arg *s, trnc_dtype t) {
  double v = trnc_arg_number(s, 0);
  if (s->kind != TRNC_ARG_INT) return (float)v;
  int64_t m = t == TRNC_I8 || t == TRNC_U8 ? 256 : t == TRNC_I16 ? 65536 : 0;
  if (!m) return (float)v;
  int64_t w = ((s->u.i % m) + m) % m;
  if (t != TRNC_U8 && w >= m / 2) w -= m;
  return (float)w;
}

/* x op y or x op scalar. */
static int binary(kir_env *E, const trnc_node *n, trnc_dtype dt, int alu) {
  kir_kernel *k = E->k;
  int a = arg_val(E, n, 0);
  const trnc_arg *b = trnc_node_arg(n, 1);
  if (is_scalar(b))
    return kir_ts(k, dt, a, alu, a >= 0 ? wrapped_scalar(b, k->values[a].dtype) : num(n, 1, 0),
                  TRNC_NC_ALU_BYPASS, 0);
  return kir_tt(k, dt, alu, a, arg_val(E, n, 1));
}

/* x + alpha*y / x - alpha*y (add/sub .Tensor and .Scalar). */
static int add_sub(kir_env *E, const trnc_node *n, trnc_dtype dt, int alu) {
  kir_kernel *k = E->k;
  double alpha = trnc_arg_number(trnc_node_arg(n, 2), 0);
  int a = arg_val(E, n, 0);
  const trnc_arg *b = trnc_node_arg(n, 1);
  if (is_scalar(b)) return kir_ts(k, dt, a, alu, (float)(trnc_arg_number(b, 0) * alpha), TRNC_NC_ALU_BYPASS, 0);
  int bv = arg_val(E, n, 1);
  if (alpha != 1.0) bv = kir_ts(k, TRNC_F32, bv, TRNC_NC_ALU_MUL, (float)alpha, TRNC_NC_ALU_BYPASS, 0);
  return kir_tt(k, dt, alu, a, bv);
}

/* trunc(x): a float -> int32 store truncates toward zero. */
static int trunc_of(kir_kernel *k, trnc_dtype dt, int x) { return kir_copy(k, dt, kir_copy(k, TRNC_I32, x)); }

/* floor: t - (x < t); ceil: t + (x > t), t = trunc(x). */
static int floor_ceil(kir_kernel *k, trnc_dtype dt, int x, bool ceil_) {
  int t = trunc_of(k, TRNC_F32, x);
  int m = kir_tt(k, TRNC_F32, ceil_ ? TRNC_NC_ALU_GT : TRNC_NC_ALU_LT, x, t);
  return kir_tt(k, dt, ceil_ ? TRNC_NC_ALU_ADD : TRNC_NC_ALU_SUB, t, m);
}

static int gelu_bw(kir_env *E, const trnc_node *n, trnc_dtype dt) {
  kir_kernel *k = E->k;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  int g = arg_val(E, n, 0), x = arg_val(E, n, 1);
  const trnc_arg *ap = trnc_node_arg(n, 2);
  if (!(ap && ap->kind == TRNC_ARG_STR && !strcmp(ap->u.s, "tanh"))) {
    /* cdf = 0.5 (1 + erf(x/sqrt2)); pdf = exp(-x^2/2)/sqrt(2 pi); g (cdf + x pdf) */
    int cdf = kir_act(k, F, TRNC_NC_ACT_ERF, x, 0.70710678118654752f, 0);
    cdf = kir_ts(k, F, cdf, MUL, 0.5f, ADD, 0.5f);
    int pdf = kir_act(k, F, TRNC_NC_ACT_EXP, kir_act(k, F, TRNC_NC_ACT_SQUARE, x, 1, 0), -0.5f, 0);
    pdf = kir_ts(k, F, kir_tt(k, F, MUL, pdf, x), MUL, 0.39894228040143268f, B, 0);
    return kir_tt(k, dt, MUL, g, kir_tt(k, F, ADD, cdf, pdf));
  }
  /* torch's tanh formula: th = tanh(b (x + k x^3));
   * d = 0.5 (1 + th) + 0.5 x (1 - th^2) b (1 + 3 k x^2) */
  const float kb = 0.79788456080286536f, kk = 0.044715f;
  int x2 = kir_act(k, F, TRNC_NC_ACT_SQUARE, x, 1, 0);
  int inner = kir_tt(k, F, ADD, kir_ts(k, F, kir_tt(k, F, MUL, x2, x), MUL, kk, B, 0), x);
  int th = kir_act(k, F, TRNC_NC_ACT_TANH, inner, kb, 0);
  int dpoly = kir_ts(k, F, kir_ts(k, F, x2, MUL, 3 * kk, ADD, 1), MUL, kb, B, 0);
  int sech2 = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_SQUARE, th, 1, 0), MUL, -1, ADD, 1);
  int right = kir_ts(k, F, kir_tt(k, F, MUL, kir_tt(k, F, MUL, sech2, dpoly), x), MUL, 0.5f, B, 0);
  int left = kir_ts(k, F, th, MUL, 0.5f, ADD, 0.5f);
  return kir_tt(k, dt, MUL, g, kir_tt(k, F, ADD, left, right));
}

/* atan(x) on x reduced to |r| <= tan(pi/8): |x| > tan(3pi/8): r = -1/|x|,
 * y0 = pi/2; |x| > tan(pi/8): r = (|x|-1)/(|x|+1), y0 = pi/4; both give
 * sign(x) (y0 + p(r)); else r = x and atan = p(x), which keeps -0 and NaN.
 * p(r) = r (1 + z (c0 + z (c1 + z (c2 + z c3)))), z = r^2: the Cephes atanf
 * minimax polynomial, ~2 ulp in fp32; atan(+-inf) = +-pi/2. */
static int atan_of(kir_kernel *k, trnc_dtype dt, int x) {
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  uint32_t axes = k->values[x].axes;
  int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int big = kir_ts(k, F, ax, TRNC_NC_ALU_GT, 2.414213562373095f, B, 0);
  int mid = kir_ts(k, F, ax, TRNC_NC_ALU_GT, 0.4142135623730950f, B, 0);
  int rb = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, ax, 1, 0), MUL, -1, B, 0);
  int rm = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_ts(k, F, ax, ADD, -1, B, 0), kir_ts(k, F, ax, ADD, 1, B, 0));
  int r = kir_select(k, F, big, rb, kir_select(k, F, mid, rm, x));
  int y0 = kir_select(k, F, big, kir_const(k, F, axes, 1.5707963267948966f),
                      kir_const(k, F, axes, 0.78539816339744831f));
  int z = kir_tt(k, F, MUL, r, r);
  int p = kir_ts(k, F, z, MUL, 8.05374449538e-2f, ADD, -1.38776856032e-1f);
  p = kir_ts(k, F, kir_tt(k, F, MUL, p, z), ADD, 1.99777106478e-1f, B, 0);
  p = kir_ts(k, F, kir_tt(k, F, MUL, p, z), ADD, -3.33329491539e-1f, B, 0);
  p = kir_tt(k, F, MUL, kir_ts(k, F, kir_tt(k, F, MUL, p, z), ADD, 1, B, 0), r); /* r(1 + z q): -0 stays */
  int outer = kir_tt(k, F, MUL, kir_tt(k, F, ADD, y0, p), kir_act(k, F, TRNC_NC_ACT_SIGN, x, 1, 0));
  return kir_select(k, dt, mid, outer, p);
}

/* Inverse and hyperbolic functions over exp, log, sqrt and atan (fp32):
 *   asin x  = atan(x / sqrt((1-x)(1+x)))        (+-1 -> +-pi/2, |x| > 1 -> NaN)
 *   acos x  = 2 atan(sqrt((1-x) / (1+x)))       (-1 -> pi, 1 -> 0)
 *   sinh x  = (e^x - e^-x) / 2,  cosh x = (e^x + e^-x) / 2
 *   asinh x = sign(x) log(|x| + sqrt(x^2 + 1))
 *   acosh x = log(x + sqrt((x-1)(x+1)))
 *   atanh x = log((1+x) / (1-x)) / 2 */
static int inverse_hyperbolic(kir_kernel *k, trnc_op op, trnc_dtype dt, int x) {
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  const int DIV = TRNC_NC_ALU_DIV, SQRT = TRNC_NC_ACT_SQRT, LOG = TRNC_NC_ACT_LOG;
  int omx = kir_ts(k, F, x, MUL, -1, ADD, 1), opx = kir_ts(k, F, x, ADD, 1, B, 0);
  switch (op) {
    case TRNC_OP_ASIN:
      return atan_of(k, dt, kir_tt(k, F, DIV, x, kir_act(k, F, SQRT, kir_tt(k, F, MUL, omx, opx), 1, 0)));
    case TRNC_OP_ACOS:
      return kir_ts(k, dt, atan_of(k, F, kir_act(k, F, SQRT, kir_tt(k, F, DIV, omx, opx), 1, 0)),
                    MUL, 2, B, 0);
    case TRNC_OP_SINH:
    case TRNC_OP_COSH: {
      int ep = kir_act(k, F, TRNC_NC_ACT_EXP, x, 1, 0), en = kir_act(k, F, TRNC_NC_ACT_EXP, x, -1, 0);
      int v = kir_tt(k, F, op == TRNC_OP_SINH ? TRNC_NC_ALU_SUB : ADD, ep, en);
      return kir_ts(k, dt, v, MUL, 0.5f, B, 0);
    }
    case TRNC_OP_ASINH: {
      int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
      int r = kir_act(k, F, SQRT, kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_SQUARE, x, 1, 0), ADD, 1, B, 0), 1, 0);
      int l = kir_act(k, F, LOG, kir_tt(k, F, ADD, ax, r), 1, 0);
      return kir_tt(k, dt, MUL, l, kir_act(k, F, TRNC_NC_ACT_SIGN, x, 1, 0));
    }
    case TRNC_OP_ACOSH: {
      int r = kir_act(k, F, SQRT, kir_tt(k, F, MUL, kir_ts(k, F, x, ADD, -1, B, 0), opx), 1, 0);
      return kir_act(k, dt, LOG, kir_tt(k, F, ADD, x, r), 1, 0);
    }
    default: /* TRNC_OP_ATANH */
      return kir_ts(k, dt, kir_act(k, F, LOG, kir_tt(k, F, DIV, opx, omx), 1, 0), MUL, 0.5f, B, 0);
  }
}

int kir_acos(kir_kernel *k, trnc_dtype dt, int x) { return inverse_hyperbolic(k, TRNC_OP_ACOS, dt, x); }

/* atan2(y, x) = atan(y/x), plus pi (y >= 0) or -pi (y < 0) where x < 0;
 * x == 0 gives y/x = +-inf, so +-pi/2; atan2(0, 0) = 0 as in libm. */
static int atan2_of(kir_kernel *k, trnc_dtype dt, int y, int x) {
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS;
  uint32_t axes = k->values[y].axes | k->values[x].axes;
  int r = atan_of(k, F, kir_tt(k, F, TRNC_NC_ALU_DIV, y, x));
  int yneg = kir_ts(k, F, y, TRNC_NC_ALU_LT, 0, B, 0);
  int corr = kir_select(k, F, yneg, kir_const(k, F, axes, -3.14159265358979f),
                        kir_const(k, F, axes, 3.14159265358979f));
  r = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_tt(k, F, TRNC_NC_ALU_ADD, r, corr), r);
  int zero = kir_tt(k, F, TRNC_NC_ALU_AND, kir_ts(k, F, y, TRNC_NC_ALU_EQ, 0, B, 0),
                    kir_ts(k, F, x, TRNC_NC_ALU_EQ, 0, B, 0));
  return kir_select(k, dt, zero, kir_const(k, F, axes, 0), r);
}

/* t(q): trunc(q) where |q| < 2^23 (the int32 store truncates), else q,
 * which is integral, infinite or NaN there in fp32. */
static int trunc_wide(kir_kernel *k, int q) {
  const trnc_dtype F = TRNC_F32;
  int small = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_ABS, q, 1, 0), TRNC_NC_ALU_LT, 8388608.0f,
                     TRNC_NC_ALU_BYPASS, 0);
  return kir_select(k, F, small, trunc_of(k, F, q), q);
}

/* fmod(a, b) = a - t(a/b) b (the sign of a; b == 0 gives NaN as in C);
 * remainder(a, b) = fmod, plus b where that is nonzero and its sign differs
 * from b's (Python's modulo, as ATen computes it). */
static int fmod_remainder(kir_env *E, const trnc_node *n, trnc_dtype dt, bool python_mod) {
  kir_kernel *k = E->k;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL;
  int a = arg_val(E, n, 0), b = arg_val(E, n, 1);
  if (b < 0) b = kir_const(k, F, k->values[a].axes, num(n, 1, 0));
  int q = trunc_wide(k, kir_tt(k, F, TRNC_NC_ALU_DIV, a, b));
  int r = kir_tt(k, F, TRNC_NC_ALU_SUB, a, kir_tt(k, F, MUL, q, b));
  if (!python_mod) return kir_copy(k, dt, r);
  int rneg = kir_ts(k, F, r, TRNC_NC_ALU_LT, 0, B, 0), bneg = kir_ts(k, F, b, TRNC_NC_ALU_LT, 0, B, 0);
  int fix = kir_tt(k, F, TRNC_NC_ALU_AND, kir_ts(k, F, r, TRNC_NC_ALU_NE, 0, B, 0),
                   kir_tt(k, F, TRNC_NC_ALU_XOR, rneg, bneg));
  return kir_select(k, dt, fix, kir_tt(k, F, TRNC_NC_ALU_ADD, r, b), r);
}

/* round half to even: |x| < 2^23: (|x| + 2^23) - 2^23 rounds to an integer
 * in fp32 (its ulp there is 1), with x's sign (-0.3 -> -0); else x, which
 * is integral, infinite or NaN. */
int kir_round(kir_kernel *k, trnc_dtype dt, int x) {
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS;
  int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int r = kir_ts(k, F, kir_ts(k, F, ax, TRNC_NC_ALU_ADD, 8388608.0f, B, 0), TRNC_NC_ALU_ADD, -8388608.0f, B, 0);
  r = kir_tt(k, F, TRNC_NC_ALU_MUL, r, kir_act(k, F, TRNC_NC_ACT_SIGN, x, 1, 0));
  return kir_select(k, dt, kir_ts(k, F, ax, TRNC_NC_ALU_LT, 8388608.0f, B, 0), r, x);
}

/* The value of node n (not in the simple table). */
/* The sign bit of float value v (1 where set: negative numbers, -0 and
 * negative NaNs), read from its bits: v's load reloaded as the integer of
 * its width (the same bytes of the float tensor in HBM, where
 * kir_reads_bits makes the fusion keep it) and compared with 0. -1 for an integer v (its sign is v < 0);
 * -2 if v is no such load or the kernel is full. */
static int sign_bit(kir_kernel *k, int v) {
  if (!is_float_dt(k->values[v].dtype)) return -1;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code != KIR_LOAD || o->dst != v) continue;
    trnc_dtype fdt = k->tensors[o->tensor].dtype; /* the int of the float's width */
    trnc_dtype idt = fdt == TRNC_F32 ? TRNC_I32 : fdt == TRNC_BF16 || fdt == TRNC_F16 ? TRNC_I16 : TRNC_I8;
    if (k->ntensors >= KIR_MAX_TENSORS) return -2;
    k->tensors[k->ntensors] = k->tensors[o->tensor];
    k->tensors[k->ntensors].dtype = idt;
    int bits = kir_load_axes(k, k->ntensors++, idt, k->values[v].axes);
    return bits < 0 ? -2 : kir_ts(k, TRNC_F32, bits, TRNC_NC_ALU_LT, 0, TRNC_NC_ALU_BYPASS, 0);
  }
  return -2;
}

bool kir_reads_bits(const trnc_node *n, uint32_t i) {
  return (n->op == TRNC_OP_COPYSIGN && i == 1) || (n->op == TRNC_OP_SIGNBIT && i == 0);
}

static int composite(kir_env *E, const trnc_node *n, trnc_dtype dt, const char **why) {
  kir_kernel *k = E->k;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  int x = arg_val(E, n, 0);
  uint32_t ax = x >= 0 ? k->values[x].axes : 0;
  switch (n->op) {
    case TRNC_OP_EXPM1:
      return kir_ts(k, dt, kir_act(k, F, TRNC_NC_ACT_EXP, x, 1, 0), ADD, -1, B, 0);
    case TRNC_OP_GELU: {
      const trnc_arg *a = trnc_node_arg(n, 1);
      bool t = a && a->kind == TRNC_ARG_STR && !strcmp(a->u.s, "tanh");
      return kir_act(k, dt, t ? TRNC_NC_ACT_GELU_TANH : TRNC_NC_ACT_GELU, x, 1, 0);
    }
    case TRNC_OP_FLOOR:
    case TRNC_OP_CEIL:
      if (!is_float_dt(k->values[x].dtype)) return kir_copy(k, dt, x);
      return floor_ceil(k, dt, x, n->op == TRNC_OP_CEIL);
    case TRNC_OP_TRUNC:
      return is_float_dt(k->values[x].dtype) ? trunc_of(k, dt, x) : kir_copy(k, dt, x);
    case TRNC_OP_LOGICAL_NOT:
      return kir_ts(k, dt, x, TRNC_NC_ALU_EQ, 0, B, 0);
    case TRNC_OP_BITWISE_NOT:
    case TRNC_OP_BITWISE_AND:
    case TRNC_OP_BITWISE_OR:
    case TRNC_OP_BITWISE_XOR:
    case TRNC_OP_BITWISE_AND_SCALAR:
    case TRNC_OP_BITWISE_OR_SCALAR:
    case TRNC_OP_BITWISE_XOR_SCALAR: {
      static const uint8_t alu[] = {TRNC_NC_ALU_EQ, TRNC_NC_ALU_AND, TRNC_NC_ALU_OR, TRNC_NC_ALU_XOR};
      if (k->values[x].dtype != TRNC_BOOL) {
        *why = "bitwise ops are lowered for bool tensors only";
        return -1;
      }
      int i = n->op == TRNC_OP_BITWISE_NOT ? 0
              : n->op == TRNC_OP_BITWISE_AND || n->op == TRNC_OP_BITWISE_AND_SCALAR ? 1
              : n->op == TRNC_OP_BITWISE_OR || n->op == TRNC_OP_BITWISE_OR_SCALAR ? 2 : 3;
      return i == 0 ? kir_ts(k, dt, x, alu[0], 0, B, 0) : binary(E, n, dt, alu[i]);
    }
    case TRNC_OP_CLONE:
    case TRNC_OP_ALIAS:
    case TRNC_OP_TO_COPY: return kir_copy(k, dt, x);
    case TRNC_OP_CLAMP: {
      const trnc_arg *lo = trnc_node_arg(n, 1), *hi = trnc_node_arg(n, 2);
      bool hl = is_scalar(lo), hh = is_scalar(hi);
      return kir_ts(k, dt, x, hl ? TRNC_NC_ALU_MAX : (hh ? TRNC_NC_ALU_MIN : B),
                    hl ? num(n, 1, 0) : num(n, 2, 0), hl && hh ? TRNC_NC_ALU_MIN : B,
                    hh ? num(n, 2, 0) : 0);
    }
    case TRNC_OP_POW_SCALAR: {
      double e = trnc_arg_number(trnc_node_arg(n, 1), 0);
      if (e == 2) return kir_act(k, dt, TRNC_NC_ACT_SQUARE, x, 1, 0);
      if (e == 1) return kir_copy(k, dt, x);
      if (e == 0.5) return kir_act(k, dt, TRNC_NC_ACT_SQRT, x, 1, 0);
      if (e == -0.5) return kir_act(k, dt, TRNC_NC_ACT_RSQRT, x, 1, 0);
      if (e == -1) return kir_act(k, dt, TRNC_NC_ACT_RECIPROCAL, x, 1, 0);
      return kir_ts(k, dt, x, TRNC_NC_ALU_POW, (float)e, B, 0);
    }
    case TRNC_OP_ADD:
    case TRNC_OP_ADD_SCALAR: return add_sub(E, n, dt, ADD);
    case TRNC_OP_SUB:
    case TRNC_OP_SUB_SCALAR: return add_sub(E, n, dt, TRNC_NC_ALU_SUB);
    case TRNC_OP_RSUB_SCALAR: /* other - alpha * self */
      return kir_ts(k, dt, x, MUL, num(n, 2, 0), TRNC_NC_ALU_RSUB, num(n, 1, 0));
    case TRNC_OP_DIV_MODE:
    case TRNC_OP_DIV_SCALAR_MODE: {
      const trnc_arg *m = trnc_node_arg(n, 2);
      int q = binary(E, n, F, TRNC_NC_ALU_DIV);
      if (m->kind == TRNC_ARG_NONE) return kir_copy(k, dt, q);
      /* eager rounds a bf16/fp16 quotient to its dtype before truncating
       * (bf16 4.995 -> 5 -> 5) */
      if (!strcmp(m->u.s, "trunc")) return trunc_of(k, dt, dt == TRNC_F32 ? q : kir_copy(k, dt, q));
      return floor_ceil(k, dt, q, false);
    }
    case TRNC_OP_WHERE: {
      int a = arg_val(E, n, 1), b = arg_val(E, n, 2);
      if (a < 0) a = kir_const(k, F, ax, num(n, 1, 0));
      if (b < 0) b = kir_const(k, F, ax, num(n, 2, 0));
      return kir_select(k, dt, x, a, b);
    }
    case TRNC_OP_MASKED_FILL:
      return kir_select(k, dt, arg_val(E, n, 1), kir_const(k, F, ax, num(n, 2, 0)), x);
    case TRNC_OP_THRESHOLD_BACKWARD: { /* grad where self > threshold else 0 */
      int self = arg_val(E, n, 1);
      int m = kir_ts(k, F, self, TRNC_NC_ALU_GT, num(n, 2, 0), B, 0);
      return kir_select(k, dt, m, x, kir_const(k, F, ax, 0));
    }
    case TRNC_OP_SIGMOID_BACKWARD: { /* g * y (1 - y) */
      int y = arg_val(E, n, 1);
      int t = kir_tt(k, F, MUL, kir_ts(k, F, y, MUL, -1, ADD, 1), y);
      return kir_tt(k, dt, MUL, x, t);
    }
    case TRNC_OP_TANH_BACKWARD: { /* g (1 - y^2) */
      int y = arg_val(E, n, 1);
      int t = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_SQUARE, y, 1, 0), MUL, -1, ADD, 1);
      return kir_tt(k, dt, MUL, x, t);
    }
    case TRNC_OP_SILU_BACKWARD: { /* g * s * (1 + x (1 - s)), s = sigmoid(x) */
      int xs = arg_val(E, n, 1);
      int s = kir_act(k, F, TRNC_NC_ACT_SIGMOID, xs, 1, 0);
      int t = kir_tt(k, F, MUL, kir_ts(k, F, s, MUL, -1, ADD, 1), xs);
      t = kir_tt(k, F, MUL, kir_ts(k, F, t, ADD, 1, B, 0), s);
      return kir_tt(k, dt, MUL, x, t);
    }
    case TRNC_OP_GELU_BACKWARD: return gelu_bw(E, n, dt);
    case TRNC_OP_LEAKY_RELU: { /* x > 0 ? x : slope x (NaN stays NaN through the multiply) */
      int m = kir_ts(k, F, x, TRNC_NC_ALU_GT, 0, B, 0);
      return kir_select(k, dt, m, x, kir_ts(k, F, x, MUL, num(n, 1, 0.01), B, 0));
    }
    case TRNC_OP_HARDTANH:
      return kir_ts(k, dt, x, TRNC_NC_ALU_MAX, num(n, 1, -1), TRNC_NC_ALU_MIN, num(n, 2, 1));
    case TRNC_OP_ELU: { /* x > 0 ? scale x : scale alpha (exp(input_scale x) - 1) */
      float alpha = num(n, 1, 1), scale = num(n, 2, 1), iscale = num(n, 3, 1);
      int neg = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_EXP, x, iscale, 0), ADD, -1, MUL, scale * alpha);
      int pos = kir_ts(k, F, x, MUL, scale, B, 0);
      return kir_select(k, dt, kir_ts(k, F, x, TRNC_NC_ALU_GT, 0, B, 0), pos, neg);
    }
    case TRNC_OP_HARDSIGMOID:
    case TRNC_OP_HARDSWISH: { /* relu6(x + 3) / 6, times x for hardswish */
      bool hs = n->op == TRNC_OP_HARDSIGMOID;
      int h = kir_ts(k, F, x, ADD, 3, TRNC_NC_ALU_MAX, 0);
      h = kir_ts(k, hs ? dt : F, h, TRNC_NC_ALU_MIN, 6, TRNC_NC_ALU_DIV, 6);
      return hs ? h : kir_tt(k, dt, MUL, x, h);
    }
    case TRNC_OP_LOG2:
      return kir_ts(k, dt, kir_act(k, F, TRNC_NC_ACT_LOG, x, 1, 0), MUL, 1.4426950408889634f, B, 0);
    case TRNC_OP_LOG10:
      return kir_ts(k, dt, kir_act(k, F, TRNC_NC_ACT_LOG, x, 1, 0), MUL, 0.43429448190325182f, B, 0);
    case TRNC_OP_TAN:
      return kir_tt(k, dt, TRNC_NC_ALU_DIV, kir_act(k, F, TRNC_NC_ACT_SIN, x, 1, 0),
                    kir_act(k, F, TRNC_NC_ACT_COS, x, 1, 0));
    case TRNC_OP_ATAN: return atan_of(k, dt, x);
    case TRNC_OP_ASIN:
    case TRNC_OP_ACOS:
    case TRNC_OP_SINH:
    case TRNC_OP_COSH:
    case TRNC_OP_ASINH:
    case TRNC_OP_ACOSH:
    case TRNC_OP_ATANH: return inverse_hyperbolic(k, n->op, dt, x);
    case TRNC_OP_ATAN2: return atan2_of(k, dt, x, arg_val(E, n, 1));
    case TRNC_OP_SIGNBIT: {
      int sb = sign_bit(k, x);
      if (sb == -2) return -1;
      return kir_copy(k, dt, sb >= 0 ? sb : kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0));
    }
    case TRNC_OP_ISINF:
      return kir_ts(k, dt, kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0), TRNC_NC_ALU_EQ, INFINITY, B, 0);
    case TRNC_OP_ROUND:
      return is_float_dt(k->values[x].dtype) ? kir_round(k, dt, x) : kir_copy(k, dt, x);
    case TRNC_OP_FMOD:
    case TRNC_OP_FMOD_SCALAR: return fmod_remainder(E, n, dt, false);
    case TRNC_OP_REMAINDER:
    case TRNC_OP_REMAINDER_SCALAR: return fmod_remainder(E, n, dt, true);
    case TRNC_OP_ROUND_DECIMALS: { /* as ATen: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d */
      int64_t d = trnc_arg_int(n, 1, 0);
      float p = (float)pow(10.0, (double)(d < 0 ? -d : d));
      if (d == 0) return kir_round(k, dt, x);
      int up = d > 0 ? MUL : TRNC_NC_ALU_DIV, down = d > 0 ? TRNC_NC_ALU_DIV : MUL;
      return kir_ts(k, dt, kir_round(k, F, kir_ts(k, F, x, up, p, B, 0)), down, p, B, 0);
    }
    case TRNC_OP_COPYSIGN:
    case TRNC_OP_COPYSIGN_SCALAR: { /* |x| with the sign bit of other */
      int ax2 = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
      int neg = kir_ts(k, F, ax2, MUL, -1, B, 0);
      int o = arg_val(E, n, 1);
      if (o < 0) return kir_copy(k, dt, signbit(trnc_arg_number(trnc_node_arg(n, 1), 0)) ? neg : ax2);
      int sb = sign_bit(k, o);
      if (sb == -2) return -1;
      if (sb < 0) { /* an integer other: negative, or not (no -0, no NaN) */
        sb = kir_ts(k, F, o, TRNC_NC_ALU_LT, 0, B, 0);
      }
      return kir_select(k, dt, sb, neg, ax2);
    }
    case TRNC_OP_FMAX:
    case TRNC_OP_FMIN: { /* max/min ignoring a NaN operand (NaN only if both are) */
      int o = arg_val(E, n, 1);
      if (o < 0) o = kir_const(k, F, ax, num(n, 1, 0));
      int r = kir_tt(k, F, n->op == TRNC_OP_FMAX ? TRNC_NC_ALU_MAX : TRNC_NC_ALU_MIN, x, o);
      r = kir_select(k, F, kir_tt(k, F, TRNC_NC_ALU_NE, x, x), o, r);
      return kir_select(k, dt, kir_tt(k, F, TRNC_NC_ALU_NE, o, o), x, r);
    }
    case TRNC_OP_ANGLE: { /* of a real x: pi where x < 0, else 0; NaN stays NaN */
      int r = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_const(k, F, ax, 3.14159265358979f),
                         kir_const(k, F, ax, 0));
      return kir_select(k, dt, kir_tt(k, F, TRNC_NC_ALU_NE, x, x), x, r);
    }
    case TRNC_OP_FILL_SCALAR: return kir_const(k, dt, ax, num(n, 1, 0));
    case TRNC_OP_POW_SCALAR_BASE: { /* base ** exponent, base a Python number */
      int e = arg_val(E, n, 1);
      return kir_tt(k, dt, TRNC_NC_ALU_POW, kir_const(k, F, k->values[e].axes, num(n, 0, 0)), e);
    }
    case TRNC_OP_CLAMP_TENSOR: { /* min(max(x, lo), hi), either bound optional */
      int lo = arg_val(E, n, 1), hi = arg_val(E, n, 2);
      int v = x;
      if (lo >= 0) v = kir_tt(k, hi >= 0 ? F : dt, TRNC_NC_ALU_MAX, v, lo);
      if (hi >= 0) v = kir_tt(k, dt, TRNC_NC_ALU_MIN, v, hi);
      return v;
    }
    case TRNC_OP_ISNAN: return kir_tt(k, dt, TRNC_NC_ALU_NE, x, x);
    case TRNC_OP_LGAMMA: return kir_lgamma(k, dt, x);
    case TRNC_OP_ERFC: return kir_erfc(k, dt, x, false);
    case TRNC_OP_SPECIAL_ERFCX: return kir_erfc(k, dt, x, true);
    case TRNC_OP_ERFINV: return kir_erfinv(k, dt, x);
    case TRNC_OP_I0: case TRNC_OP_SPECIAL_MODIFIED_BESSEL_I0: return kir_bessel_i(k, dt, x, 0, false);
    case TRNC_OP_SPECIAL_I1: case TRNC_OP_SPECIAL_MODIFIED_BESSEL_I1: return kir_bessel_i(k, dt, x, 1, false);
    case TRNC_OP_SPECIAL_I0E: return kir_bessel_i(k, dt, x, 0, true);
    case TRNC_OP_SPECIAL_I1E: return kir_bessel_i(k, dt, x, 1, true);
    case TRNC_OP_SPECIAL_BESSEL_J0: return kir_bessel_jy(k, dt, x, 0, false);
    case TRNC_OP_SPECIAL_BESSEL_J1: return kir_bessel_jy(k, dt, x, 1, false);
    case TRNC_OP_SPECIAL_BESSEL_Y0: return kir_bessel_jy(k, dt, x, 0, true);
    case TRNC_OP_SPECIAL_BESSEL_Y1: return kir_bessel_jy(k, dt, x, 1, true);
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_K0: return kir_bessel_k(k, dt, x, 0, false);
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_K1: return kir_bessel_k(k, dt, x, 1, false);
    case TRNC_OP_SPECIAL_SCALED_MODIFIED_BESSEL_K0: return kir_bessel_k(k, dt, x, 0, true);
    case TRNC_OP_SPECIAL_SCALED_MODIFIED_BESSEL_K1: return kir_bessel_k(k, dt, x, 1, true);
    case TRNC_OP_SPECIAL_SPHERICAL_BESSEL_J0: return kir_spherical_bessel_j0(k, dt, x);
    case TRNC_OP_SPECIAL_AIRY_AI: return kir_airy_ai(k, dt, x);
    case TRNC_OP_SPECIAL_NDTRI: return kir_ndtri(k, dt, x);
    case TRNC_OP_NEXTAFTER: return kir_nextafter(k, dt, x, arg_val(E, n, 1));
    case TRNC_OP_SPECIAL_ZETA:
    case TRNC_OP_SPECIAL_ZETA_SELF_SCALAR:
    case TRNC_OP_SPECIAL_ZETA_OTHER_SCALAR: { /* zeta(x, q), either one a Python number */
      int q = arg_val(E, n, 1);
      if (x < 0) x = kir_const(k, F, k->values[q].axes, num(n, 0, 0));
      if (q < 0) q = kir_const(k, F, ax, num(n, 1, 0));
      return kir_zeta(k, dt, x, q);
    }
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_W:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_W_N_SCALAR:
    {
      int nv = arg_val(E, n, 1);
      if (nv < 0) nv = kir_const(k, F, ax, num(n, 1, 0));
      return kir_chebyshev(k, dt, n->op, x, nv);
    }
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H_N_SCALAR:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE_N_SCALAR:
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L:
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L_N_SCALAR:
    case TRNC_OP_SPECIAL_LEGENDRE_POLYNOMIAL_P:
    case TRNC_OP_SPECIAL_LEGENDRE_POLYNOMIAL_P_N_SCALAR:
      return kir_poly_recurrence(k, dt, n->op, x, trnc_arg_number(trnc_node_arg(n, 1), 0));
    case TRNC_OP_DIGAMMA: return kir_polygamma(k, dt, x, 0);
    case TRNC_OP_POLYGAMMA: return kir_polygamma(k, dt, arg_val(E, n, 1), (int)trnc_arg_int(n, 0, 0));
    default:
      *why = "no NeuronCore lowering in an elementwise kernel";
      return -1;
  }
}

/* ---- integers: native int32 arithmetic on GpSimd ------------------------------ */

enum { NOT_INT = -2 }; /* int_exact: n is not in integer form; the fp32 rules apply */

static bool is_int_dt(trnc_dtype t) {
  return t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}

/* Python int s as the integer eager combines with a tensor of dtype t: int8,
 * int16 and uint8 wrap it first; an int32/int64 tensor takes it as is.
 * false if s does not fit int32 (then the fp32 rules decide). */
static bool int_scalar(const trnc_arg *a, trnc_dtype t, int32_t *out) {
  int64_t v = a->kind == TRNC_ARG_BOOL ? a->u.b : a->u.i;
  int bits = t == TRNC_I8 || t == TRNC_U8 ? 8 : t == TRNC_I16 ? 16 : 0;
  if (bits) {
    uint64_t m = (uint64_t)1 << bits, w = (uint64_t)v & (m - 1);
    v = t != TRNC_U8 && w >= m / 2 ? (int64_t)w - (int64_t)m : (int64_t)w;
  }
  if (v < INT32_MIN || v > INT32_MAX) return false;
  *out = (int32_t)v;
  return true;
}

/* Argument i of n as an i32 kernel value over axes: an integer or bool
 * tensor converted exactly, a Python int/bool as an exact constant (wrapped
 * as eager does for a narrow tensor dtype t). NOT_INT for a float operand. */
static int int_arg(kir_env *E, const trnc_node *n, uint32_t i, uint32_t axes, trnc_dtype t) {
  kir_kernel *k = E->k;
  const trnc_arg *a = trnc_node_arg(n, i);
  if (!a) return NOT_INT;
  if (a->kind == TRNC_ARG_VALUE) {
    int v = E->val[a->u.ref];
    if (v < 0) return -1;
    trnc_dtype d = k->values[v].dtype;
    if (d == TRNC_I32) return v;
    return is_int_dt(d) || d == TRNC_BOOL ? kir_copy(k, TRNC_I32, v) : NOT_INT;
  }
  int32_t c;
  if ((a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_BOOL) && int_scalar(a, t, &c))
    return kir_const_i32(k, axes, c);
  return NOT_INT;
}

/* i32 value v as device dtype dt, wrapping as eager does: uint8 keeps the
 * low 8 bits, int8/int16 sign-extend their low 8/16 (two bitvec shifts). */
static int int_narrow(kir_kernel *k, int v, trnc_dtype dt) {
  const int B = TRNC_NC_ALU_BYPASS;
  if (v < 0 || dt == TRNC_I32) return v;
  if (dt == TRNC_U8) v = kir_ts(k, TRNC_I32, v, TRNC_NC_ALU_BIT_AND, 255, B, 0);
  else if (dt == TRNC_I8 || dt == TRNC_I16) {
    float sh = dt == TRNC_I8 ? 24 : 16;
    v = kir_ts(k, TRNC_I32, v, TRNC_NC_ALU_SHL, sh, TRNC_NC_ALU_SHR, sh);
  } else {
    return NOT_INT;
  }
  return kir_copy(k, dt, v);
}

static int int_tt(kir_kernel *k, int alu, int a, int b) {
  if (a == NOT_INT || b == NOT_INT) return NOT_INT;
  return a < 0 || b < 0 ? -1 : kir_tt(k, TRNC_I32, alu, a, b);
}

/* where(m, a, b) = b + m (a - b) in int32: exact with wrapping, for m 0/1. */
static int int_where(kir_kernel *k, int m, int a, int b) {
  return int_tt(k, TRNC_NC_ALU_ADD, b, int_tt(k, TRNC_NC_ALU_MUL, m, int_tt(k, TRNC_NC_ALU_SUB, a, b)));
}

/* Floor (or trunc) division of i32 a by i32 b, exact: an fp32 estimate
 * q = trunc(a / b) is within |a| 2^-22 + 1 of the quotient; two corrections
 * q += trunc(r / b), r = a - q b (r exact in wrapping int32, |r / b| small
 * enough for fp32), leave q within 1 of it; then q -= 1 where r's sign
 * differs from b's (r != 0) and q += 1 where |r| >= |b|, which gives the
 * floor; trunc adds 1 back where a and b differ in sign and r != 0. */
static int int_div(kir_kernel *k, int a, int b, bool trunc_mode) {
  const trnc_dtype F = TRNC_F32, I = TRNC_I32;
  const int SUB = TRNC_NC_ALU_SUB, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  if (a < 0 || b < 0) return a == NOT_INT || b == NOT_INT ? NOT_INT : -1;
  uint32_t ax = k->values[a].axes;
  int bf = kir_copy(k, F, b);
  int q = kir_copy(k, I, kir_tt(k, F, TRNC_NC_ALU_DIV, kir_copy(k, F, a), bf));
  for (int step = 0; step < 2; step++) {
    int r = int_tt(k, SUB, a, int_tt(k, MUL, q, b));
    q = int_tt(k, ADD, q, kir_copy(k, I, kir_tt(k, F, TRNC_NC_ALU_DIV, kir_copy(k, F, r), bf)));
  }
  int zero = kir_const_i32(k, ax, 0);
  int r = int_tt(k, SUB, a, int_tt(k, MUL, q, b));
  int bneg = int_tt(k, TRNC_NC_ALU_LT, b, zero);
  int mism = int_tt(k, TRNC_NC_ALU_AND, int_tt(k, TRNC_NC_ALU_NE, r, zero),
                    int_tt(k, TRNC_NC_ALU_NE, int_tt(k, TRNC_NC_ALU_LT, r, zero), bneg));
  int over = int_where(k, bneg, int_tt(k, TRNC_NC_ALU_LE, r, b), int_tt(k, TRNC_NC_ALU_GE, r, b));
  q = int_tt(k, ADD, int_tt(k, SUB, q, mism), over);
  if (!trunc_mode) return q;
  r = int_tt(k, SUB, a, int_tt(k, MUL, q, b));
  int sdiff = int_tt(k, TRNC_NC_ALU_NE, int_tt(k, TRNC_NC_ALU_LT, a, zero), bneg);
  return int_tt(k, ADD, q, int_tt(k, TRNC_NC_ALU_AND, sdiff, int_tt(k, TRNC_NC_ALU_NE, r, zero)));
}

static int cmp_alu(trnc_op op) {
  switch (op) {
    case TRNC_OP_EQ: case TRNC_OP_EQ_SCALAR: return TRNC_NC_ALU_EQ;
    case TRNC_OP_NE: case TRNC_OP_NE_SCALAR: return TRNC_NC_ALU_NE;
    case TRNC_OP_LT: case TRNC_OP_LT_SCALAR: return TRNC_NC_ALU_LT;
    case TRNC_OP_LE: case TRNC_OP_LE_SCALAR: return TRNC_NC_ALU_LE;
    case TRNC_OP_GT: case TRNC_OP_GT_SCALAR: return TRNC_NC_ALU_GT;
    case TRNC_OP_GE: case TRNC_OP_GE_SCALAR: return TRNC_NC_ALU_GE;
    default: return -1;
  }
}

/* Device dtype of n's first tensor operand (TRNC_F32 when none). */
static trnc_dtype operand_dt(const kir_env *E, const trnc_node *n) {
  for (uint32_t i = 0; i < n->nargs; i++) {
    const trnc_arg *a = trnc_node_arg(n, i);
    if (a && a->kind == TRNC_ARG_VALUE && E->val[a->u.ref] >= 0) return E->k->values[E->val[a->u.ref]].dtype;
  }
  return TRNC_F32;
}

/* Float x converted to an integer as eager converts it on x86-64
 * (cvttss2si): truncated toward zero, and the lowest value for NaN, +-inf
 * and anything truncating outside the conversion's range. int32 (and
 * int8/int16/uint8, which eager converts through int32 and wraps): -2^31
 * outside int32, where the engines' store saturates (and gives 0 for NaN).
 * int64 (run as int32): eager's INT64_MIN outside int64 becomes -2^31, and
 * values between int32's and int64's limits saturate; both agree with eager
 * after a clamp into int32 (the legality scan's saturated_clamp), and the
 * legality scan refuses an int64 result it cannot bound otherwise. */
static int float_to_int(kir_kernel *k, int x, bool i64) {
  if (x < 0) return x;
  const trnc_dtype F = TRNC_F32;
  float lim = i64 ? 9223372036854775808.0f : 2147483648.0f;
  int ok = kir_ts(k, F, x, TRNC_NC_ALU_ABSMAX, 0, TRNC_NC_ALU_LT, lim); /* |x| < lim: not NaN */
  return kir_copy(k, TRNC_I32, kir_select(k, F, ok, x, kir_const(k, F, k->values[x].axes, -2147483648.0f)));
}

/* Node n with an integer result (or a comparison of integers) as exact int32
 * ops: add/sub/mul/neg/abs/min/max/clamp/where/masked_fill, floor and trunc
 * division, remainder and fmod, bitwise ops and right shifts, comparisons and integer casts; narrow dtypes wrap
 * as eager. NOT_INT when
 * n has another form (a float operand, division, ...): the fp32 rules. */
static int int_exact(kir_env *E, const trnc_node *n, trnc_dtype dt) {
  kir_kernel *k = E->k;
  trnc_dtype xt = operand_dt(E, n);
  int cmp = cmp_alu(n->op);
  if (cmp >= 0) {
    if (!is_int_dt(xt) || dt != TRNC_BOOL) return NOT_INT;
  } else if (!is_int_dt(dt)) {
    return NOT_INT;
  }
  int x0 = arg_val(E, n, 0);
  uint32_t ax = x0 >= 0 ? k->values[x0].axes : 0;
  if (n->op == TRNC_OP_WHERE) ax = k->values[arg_val(E, n, 1) >= 0 ? arg_val(E, n, 1) : x0].axes;
  int r;
  switch (n->op) {
    case TRNC_OP_ADD: case TRNC_OP_ADD_SCALAR: case TRNC_OP_SUB: case TRNC_OP_SUB_SCALAR:
    case TRNC_OP_RSUB_SCALAR: {
      bool rs = n->op == TRNC_OP_RSUB_SCALAR; /* other - alpha * self */
      int a = int_arg(E, n, rs ? 1 : 0, ax, xt), b = int_arg(E, n, rs ? 0 : 1, ax, xt);
      const trnc_arg *al = trnc_node_arg(n, 2);
      if (al && al->kind != TRNC_ARG_NONE && !(al->kind == TRNC_ARG_INT && al->u.i == 1))
        b = int_tt(k, TRNC_NC_ALU_MUL, b, int_arg(E, n, 2, ax, xt));
      bool add = n->op == TRNC_OP_ADD || n->op == TRNC_OP_ADD_SCALAR;
      r = int_tt(k, add ? TRNC_NC_ALU_ADD : TRNC_NC_ALU_SUB, a, b);
      break;
    }
    case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR:
      r = int_tt(k, TRNC_NC_ALU_MUL, int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, xt));
      break;
    case TRNC_OP_MAXIMUM: case TRNC_OP_MINIMUM:
      r = int_tt(k, n->op == TRNC_OP_MAXIMUM ? TRNC_NC_ALU_MAX : TRNC_NC_ALU_MIN,
                 int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, xt));
      break;
    case TRNC_OP_NEG: case TRNC_OP_ABS: {
      int x = int_arg(E, n, 0, ax, xt);
      int neg = int_tt(k, TRNC_NC_ALU_SUB, x < 0 ? x : kir_const_i32(k, ax, 0), x);
      r = n->op == TRNC_OP_NEG ? neg : int_tt(k, TRNC_NC_ALU_MAX, x, neg);
      break;
    }
    case TRNC_OP_CLAMP: {
      r = int_arg(E, n, 0, ax, xt);
      const trnc_arg *lo = trnc_node_arg(n, 1), *hi = trnc_node_arg(n, 2);
      if (lo && lo->kind != TRNC_ARG_NONE) r = int_tt(k, TRNC_NC_ALU_MAX, r, int_arg(E, n, 1, ax, xt));
      if (hi && hi->kind != TRNC_ARG_NONE) r = int_tt(k, TRNC_NC_ALU_MIN, r, int_arg(E, n, 2, ax, xt));
      break;
    }
    case TRNC_OP_WHERE:
      r = int_where(k, int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, dt), int_arg(E, n, 2, ax, dt));
      break;
    case TRNC_OP_MASKED_FILL: /* masked_fill(x, mask, value) */
      r = int_where(k, int_arg(E, n, 1, ax, xt), int_arg(E, n, 2, ax, xt), int_arg(E, n, 0, ax, xt));
      break;
    case TRNC_OP_BITWISE_AND: case TRNC_OP_BITWISE_OR: case TRNC_OP_BITWISE_XOR:
    case TRNC_OP_BITWISE_AND_SCALAR: case TRNC_OP_BITWISE_OR_SCALAR: case TRNC_OP_BITWISE_XOR_SCALAR: {
      int alu = n->op == TRNC_OP_BITWISE_AND || n->op == TRNC_OP_BITWISE_AND_SCALAR ? TRNC_NC_ALU_BIT_AND
                : n->op == TRNC_OP_BITWISE_OR || n->op == TRNC_OP_BITWISE_OR_SCALAR ? TRNC_NC_ALU_BIT_OR
                                                                                     : TRNC_NC_ALU_BIT_XOR;
      const trnc_arg *c = trnc_node_arg(n, 1);
      if (c && c->kind == TRNC_ARG_INT && c->u.i >= -(1 << 24) && c->u.i <= (1 << 24)) {
        /* a constant exact in the instruction's fp32 immediate: tensor_scalar */
        int x = int_arg(E, n, 0, ax, xt);
        r = x < 0 ? x : kir_ts(k, TRNC_I32, x, alu, (float)c->u.i, TRNC_NC_ALU_BYPASS, 0);
        break;
      }
      r = int_tt(k, alu, int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, xt));
      break;
    }
    case TRNC_OP_BITWISE_NOT: {
      int x = int_arg(E, n, 0, ax, xt);
      r = x < 0 ? x : kir_ts(k, TRNC_I32, x, TRNC_NC_ALU_BIT_XOR, -1, TRNC_NC_ALU_BYPASS, 0);
      break;
    }
    case TRNC_OP_BITWISE_RIGHT_SHIFT_SCALAR: { /* count in [0, 31] (the table's check) */
      int x = int_arg(E, n, 0, ax, xt);
      float sh = (float)trnc_arg_int(n, 1, 0);
      r = x < 0 ? x : kir_ts(k, TRNC_I32, x, TRNC_NC_ALU_SHR, sh, TRNC_NC_ALU_BYPASS, 0);
      break;
    }
    case TRNC_OP_DIV_MODE: { /* div(a, b, rounding_mode="floor" | "trunc") */
      const trnc_arg *m = trnc_node_arg(n, 2);
      if (!m || m->kind != TRNC_ARG_STR) return NOT_INT;
      r = int_div(k, int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, xt), !strcmp(m->u.s, "trunc"));
      break;
    }
    case TRNC_OP_REMAINDER: case TRNC_OP_REMAINDER_SCALAR: case TRNC_OP_FMOD:
    case TRNC_OP_FMOD_SCALAR: { /* a - div(a, b) b, div floor (remainder) or trunc (fmod) */
      int a = int_arg(E, n, 0, ax, xt), b = int_arg(E, n, 1, ax, xt);
      bool fm = n->op == TRNC_OP_FMOD || n->op == TRNC_OP_FMOD_SCALAR;
      r = int_tt(k, TRNC_NC_ALU_SUB, a, int_tt(k, TRNC_NC_ALU_MUL, int_div(k, a, b, fm), b));
      break;
    }
    case TRNC_OP_TO_COPY: case TRNC_OP_CLONE: case TRNC_OP_ALIAS:
      if (n->op == TRNC_OP_TO_COPY && is_float_dt(xt)) {
        bool i64 = E->L->g->values[n->outs[0]].type.dtype == TRNC_I64;
        r = float_to_int(k, arg_val(E, n, 0), i64);
        break;
      }
      if (!is_int_dt(xt) && xt != TRNC_BOOL) return NOT_INT;
      r = int_arg(E, n, 0, ax, xt);
      if (r >= 0 && r == x0) r = kir_copy(k, TRNC_I32, r); /* a value of its own, as the fp32 rules */
      break;
    default:
      if (cmp < 0) return NOT_INT;
      r = int_tt(k, cmp, int_arg(E, n, 0, ax, xt), int_arg(E, n, 1, ax, xt));
      return r < 0 ? r : kir_copy(k, TRNC_BOOL, r);
  }
  return r < 0 ? r : int_narrow(k, r, dt);
}

int kir_eltwise_values(const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_LGAMMA:
    case TRNC_OP_ERFC:
    case TRNC_OP_SPECIAL_ERFCX:
    case TRNC_OP_ERFINV:
    case TRNC_OP_I0:
    case TRNC_OP_SPECIAL_I0E:
    case TRNC_OP_SPECIAL_I1:
    case TRNC_OP_SPECIAL_I1E:
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_I0:
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_I1:
    case TRNC_OP_SPECIAL_SPHERICAL_BESSEL_J0: return 64;
    case TRNC_OP_SPECIAL_BESSEL_J0:
    case TRNC_OP_SPECIAL_BESSEL_J1: return 112;
    case TRNC_OP_SPECIAL_BESSEL_Y0:
    case TRNC_OP_SPECIAL_BESSEL_Y1:
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_K0:
    case TRNC_OP_SPECIAL_MODIFIED_BESSEL_K1:
    case TRNC_OP_SPECIAL_SCALED_MODIFIED_BESSEL_K0:
    case TRNC_OP_SPECIAL_SCALED_MODIFIED_BESSEL_K1: return 144;
    case TRNC_OP_SPECIAL_AIRY_AI: return KIR_MAX_VALUES; /* a kernel of its own */
    case TRNC_OP_SPECIAL_NDTRI: return 128;
    case TRNC_OP_NEXTAFTER: return 32;
    case TRNC_OP_SPECIAL_ZETA:
    case TRNC_OP_SPECIAL_ZETA_SELF_SCALAR:
    case TRNC_OP_SPECIAL_ZETA_OTHER_SCALAR: return 176;
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W:
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_W:
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_W_N_SCALAR:
      return KIR_CHEBYSHEV_VALUES;
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H_N_SCALAR:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE_N_SCALAR:
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L:
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L_N_SCALAR:
    case TRNC_OP_SPECIAL_LEGENDRE_POLYNOMIAL_P:
    case TRNC_OP_SPECIAL_LEGENDRE_POLYNOMIAL_P_N_SCALAR:
      return kir_poly_values(n->op, trnc_arg_number(trnc_node_arg(n, 1), 0));
    case TRNC_OP_DIGAMMA:
    case TRNC_OP_POLYGAMMA: return 96;
    default: return 2;
  }
}

trnc_status kir_lower_eltwise(kir_env *E, const trnc_node *n) {
  trnc_dtype dt = lw_device_dtype(E->L->g->values[n->outs[0]].type.dtype);
  const rule *r = &simple[n->op];
  const char *why = NULL;
  int v = int_exact(E, n, dt);
  if (v != NOT_INT) {
    /* done: exact int32 */
  } else if (r->kind == R_ACT) v = kir_act(E->k, dt, r->fn, arg_val(E, n, 0), r->scale, r->bias);
  else if (r->kind == R_ALU) v = binary(E, n, dt, r->fn);
  else v = composite(E, n, dt, &why);
  if (why) return lw_fail(E->L, n, TRNC_ERR_UNSUPPORTED, "%s: %s", n->target, why);
  if (v < 0) return lw_fail(E->L, n, TRNC_ERR_INTERNAL, "kernel too large for one elementwise group");
  E->val[n->outs[0]] = (int16_t)v;
  return TRNC_OK;
}

/* Layer norm with shifted two-pass statistics, K = the row's first element:
 *   ms = mean(x - K)           exact for constant rows, precise when |mean| >> std
 *   mean = ms + K;  rstd = rsqrt(mean((x - mean)^2) + eps)
 *   y = ((x - K) - ms) * rstd * w + b
 * (x - K is one ScalarE identity with the bias -K, so the mean's rounding
 * near a large K never enters y; K of an x computed in the kernel is its
 * expression evaluated at the row's first element, kir_first). */
static trnc_status layer_norm(kir_env *E, const trnc_node *n, int x, trnc_dtype dt) {
  kir_kernel *k = E->k;
  const trnc_graph *g = E->L->g;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, ADD = TRNC_NC_ALU_ADD;
  double R = 1;
  for (int a = 0; a < k->naxes; a++)
    if (k->raxes & (1u << a)) R *= (double)k->extent[a];
  float eps = num(n, 4, 1e-5);
  int nsh = kir_ts(k, F, kir_first(k, x), MUL, -1, B, 0);
  int ms = kir_ts(k, F, kir_reduce(k, ADD, kir_actv(k, F, TRNC_NC_ACT_IDENTITY, x, 1, nsh), k->raxes),
                  TRNC_NC_ALU_DIV, (float)R, B, 0);
  int mean = kir_tt(k, F, TRNC_NC_ALU_SUB, ms, nsh);
  int nmean = kir_ts(k, F, mean, MUL, -1, B, 0);
  int m2 = kir_reduce(k, ADD, kir_actv(k, F, TRNC_NC_ACT_SQUARE, x, 1, nmean), k->raxes);
  int rstd = kir_act(k, F, TRNC_NC_ACT_RSQRT, kir_ts(k, F, m2, TRNC_NC_ALU_DIV, (float)R, ADD, eps), 1, 0);
  int w = arg_val(E, n, 2), b = arg_val(E, n, 3);
  int y = kir_tsv(k, (w >= 0 || b >= 0) ? F : dt, kir_actv(k, F, TRNC_NC_ACT_IDENTITY, x, 1, nsh),
                  TRNC_NC_ALU_SUB, ms, MUL, rstd);
  if (w >= 0) y = kir_tt(k, b >= 0 ? F : dt, MUL, y, w);
  if (b >= 0) y = kir_tt(k, dt, ADD, y, b);
  if (y < 0 || rstd < 0) return lw_fail(E->L, n, TRNC_ERR_INTERNAL, "kernel too large for one row group");
  E->val[n->outs[0]] = (int16_t)y;
  if (n->nouts > 1 && !g->values[n->outs[1]].is_none)
    E->val[n->outs[1]] = (int16_t)kir_copy(k, lw_device_dtype(g->values[n->outs[1]].type.dtype), mean);
  if (n->nouts > 2 && !g->values[n->outs[2]].is_none)
    E->val[n->outs[2]] = (int16_t)kir_copy(k, lw_device_dtype(g->values[n->outs[2]].type.dtype), rstd);
  return TRNC_OK;
}

/* Layer-norm backward, with mean and rstd per row (their first element over
 * R) and N = |R|:
 *   xhat = (x - mean) * rstd;  gw = g * w
 *   dx = rstd * (gw - sum_R(gw) / N - xhat * sum_R(gw * xhat) / N)
 *   dW = sum_rows(g * xhat);  dB = sum_rows(g)
 * as torch's decomposition, in float32 (one rounding into each result's
 * dtype). dW and dB are the values column-summed over the rows
 * (kir_row_colsum: codegen/kir/build.c adds the colsum ops); only the
 * results the graph wants are computed. */
static trnc_status layer_norm_bw(kir_env *E, const trnc_node *n, trnc_dtype dt) {
  kir_kernel *k = E->k;
  const trnc_graph *gr = E->L->g;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, SUB = TRNC_NC_ALU_SUB, ADD = TRNC_NC_ALU_ADD;
  double R = 1;
  for (int a = 0; a < k->naxes; a++)
    if (k->raxes & (1u << a)) R *= (double)k->extent[a];
  bool want[3];
  for (uint32_t o = 0; o < 3; o++) want[o] = o < n->nouts && !gr->values[n->outs[o]].is_none;
  int g = arg_val(E, n, 0), x = arg_val(E, n, 1), w = arg_val(E, n, 5), xhat = -1;
  if (want[0] || want[1]) {
    /* per-partition scalars are fp32 (bf16 statistics widen exactly) */
    int mean = kir_copy(k, F, kir_first(k, arg_val(E, n, 3))), rstd = kir_copy(k, F, kir_first(k, arg_val(E, n, 4)));
    xhat = kir_tsv(k, F, x, SUB, mean, MUL, rstd);
    if (want[0]) {
      int gw = w >= 0 ? kir_tt(k, F, MUL, g, w) : g;
      int a = kir_ts(k, F, kir_reduce(k, ADD, kir_tt(k, F, MUL, gw, xhat), k->raxes), TRNC_NC_ALU_DIV, (float)R, B, 0);
      int b = kir_ts(k, F, kir_reduce(k, ADD, gw, k->raxes), TRNC_NC_ALU_DIV, (float)R, B, 0);
      int q = kir_tt(k, F, SUB, gw, kir_tsv(k, F, xhat, MUL, a, ADD, b)); /* gw - (xhat * a + b) */
      int dx = kir_tsv(k, dt, q, MUL, rstd, B, -1);
      if (dx < 0) return lw_fail(E->L, n, TRNC_ERR_INTERNAL, "kernel too large for one row group");
      E->val[n->outs[0]] = (int16_t)dx;
    }
  }
  if (want[1]) {
    int dw = kir_tt(k, F, MUL, g, xhat);
    if (dw < 0) return lw_fail(E->L, n, TRNC_ERR_INTERNAL, "kernel too large for one row group");
    E->val[n->outs[1]] = (int16_t)dw;
  }
  if (want[2]) E->val[n->outs[2]] = (int16_t)g;
  return TRNC_OK;
}

bool kir_row_colsum(const trnc_node *n, uint32_t o) { return n->op == TRNC_OP_LAYER_NORM_BACKWARD && o >= 1; }

/* Row ops over the kernel's reduction axes R, as eager computes them:
 *   softmax      m = max_R x; e = exp(x - m); y = e / sum_R e
 *   log_softmax  y = (x - m) - log(sum_R exp(x - m))
 *   softmax backward      dx = y * (g - sum_R (g * y))
 *   log_softmax backward  dx = g - exp(y) * sum_R g
 * (exp(x - m) is one ScalarE activation with the bias -m per partition). */
trnc_status kir_lower_row(kir_env *E, const trnc_node *n) {
  kir_kernel *k = E->k;
  const trnc_dtype F = TRNC_F32;
  const int B = TRNC_NC_ALU_BYPASS, MUL = TRNC_NC_ALU_MUL, SUB = TRNC_NC_ALU_SUB;
  trnc_dtype dt = lw_device_dtype(E->L->g->values[n->outs[0]].type.dtype);
  uint32_t R = k->raxes;
  int x = arg_val(E, n, 0), v;
  if (n->op == TRNC_OP_LAYER_NORM) return layer_norm(E, n, x, dt);
  if (n->op == TRNC_OP_LAYER_NORM_BACKWARD) return layer_norm_bw(E, n, dt);
  if (n->op == TRNC_OP_SOFTMAX || n->op == TRNC_OP_LOG_SOFTMAX) {
    int m = kir_reduce(k, TRNC_NC_ALU_MAX, x, R);
    int nm = kir_ts(k, F, m, MUL, -1, B, 0);
    int s = kir_reduce(k, TRNC_NC_ALU_ADD, kir_actv(k, F, TRNC_NC_ACT_EXP, x, 1, nm), R);
    if (n->op == TRNC_OP_SOFTMAX) {
      v = kir_tsv(k, dt, kir_actv(k, F, TRNC_NC_ACT_EXP, x, 1, nm), TRNC_NC_ALU_DIV, s, B, -1);
    } else {
      int lse = kir_act(k, F, TRNC_NC_ACT_LOG, s, 1, 0);
      v = kir_tsv(k, dt, x, SUB, m, SUB, lse);
    }
  } else {
    int y = arg_val(E, n, 1);
    if (n->op == TRNC_OP_SOFTMAX_BACKWARD) {
      int dot = kir_reduce(k, TRNC_NC_ALU_ADD, kir_tt(k, F, MUL, x, y), R);
      v = kir_tt(k, dt, MUL, kir_tsv(k, F, x, SUB, dot, B, -1), y);
    } else {
      int s = kir_reduce(k, TRNC_NC_ALU_ADD, x, R);
      v = kir_tt(k, dt, SUB, x, kir_tsv(k, F, kir_act(k, F, TRNC_NC_ACT_EXP, y, 1, 0), MUL, s, B, -1));
    }
  }
  if (v < 0) return lw_fail(E->L, n, TRNC_ERR_INTERNAL, "kernel too large for one row group");
  E->val[n->outs[0]] = (int16_t)v;
  return TRNC_OK;
}
