/*
 * emit_eltwise.c — fused elementwise kernels.
 *
 * A group of elementwise nodes with one output shape S becomes one kernel:
 * the iteration space S is tiled [partitions x free elements]; per tile each
 * external input is loaded once by DMA (broadcast inputs through stride-0
 * access patterns), every node of the group runs on ScalarE (activation
 * functions) or VectorE (arithmetic, comparisons, selects) from SBUF to
 * SBUF, and every value needed outside the group is stored once. Every
 * value's tile has the value's device dtype, so bf16/fp16 results round to
 * nearest even after each op, as eager PyTorch's do. Tiles come from 2-deep
 * pools, so the DMA of tile i+1 overlaps compute on tile i.
 */
#include <math.h>
#include <string.h>

#include "codegen/lower.h"

#define MAX_GROUP 64
#define MAX_SLOTS 96
#define NTEMP 4

typedef struct eslot {
  trnc_ref value;      /* IR value, or TRNC_NO_REF for temporaries */
  trnc_dtype dt;       /* tile dtype */
  lw_pool pool;
  lw_tile *cur;        /* tile for the current iteration */
  int op;              /* operand index in the space (external inputs/outputs), else -1 */
} eslot;

typedef struct egroup {
  const trnc_node *const *nodes;
  int n;
  eslot slots[MAX_SLOTS];
  int nslots;
  int in_slot[MAX_SLOTS];   /* external input slots */
  int nin;
  int out_slot[MAX_SLOTS];  /* slots stored to HBM */
  int nout;
  int temp[NTEMP];
  lw_space space;
  /* per tile */
  int np;
  int64_t nfree;
  trnc_dtype work_dt;
} egroup;

static const trnc_node *producer(const trnc_graph *g, trnc_ref r) {
  return &g->nodes[g->values[r].node];
}

bool lw_is_eltwise(const trnc_graph *g, const trnc_node *n) {
  if (n->op >= TRNC_OP_COUNT || n->nouts != 1) return false;
  const char *cat = trnc_op_defs[n->op].category;
  if (!strcmp(cat, "elementwise") || !strcmp(cat, "compare")) return true;
  return n->op == TRNC_OP_CLONE || n->op == TRNC_OP_TO_COPY;
}

static int slot_of(egroup *G, trnc_ref r) {
  for (int i = 0; i < G->nslots; i++)
    if (G->slots[i].value == r) return i;
  return -1;
}

static int add_slot(lw *L, egroup *G, trnc_ref r, trnc_dtype dt) {
  if (G->nslots >= MAX_SLOTS) {
    lw_fail(L, NULL, TRNC_ERR_INTERNAL, "elementwise group has too many values");
    return -1;
  }
  eslot *s = &G->slots[G->nslots];
  memset(s, 0, sizeof *s);
  s->value = r;
  s->dt = dt;
  s->op = -1;
  return G->nslots++;
}

static bool in_group(egroup *G, const trnc_node *p) {
  for (int i = 0; i < G->n; i++)
    if (G->nodes[i] == p) return true;
  return false;
}

/* ---- instruction helpers on the current tile ------------------------------- */

static trnc_nc_ap tap(egroup *G, int slot) {
  eslot *s = &G->slots[slot];
  int64_t f = G->nfree;
  return lw_tile_ap(s->cur, G->np, 0, s->dt, 1, &f);
}

static trnc_status e_act(lw *L, egroup *G, int dst, int src, int func, float scale, float bias) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_ACTIVATION;
  in.engine = TRNC_NC_SCALAR;
  in.act = (uint8_t)func;
  in.imm[0] = scale;
  in.imm[1] = bias;
  in.dst = tap(G, dst);
  in.src[0] = tap(G, src);
  lw_tile *r = G->slots[src].cur, *w = G->slots[dst].cur;
  L->ops_per_engine[2]++;
  return lw_emit(L, &in, &r, 1, &w, 1);
}

static trnc_status e_tt(lw *L, egroup *G, int dst, int a, int b, int alu) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_TENSOR_TENSOR;
  in.engine = TRNC_NC_VECTOR;
  in.alu0 = (uint8_t)alu;
  in.dst = tap(G, dst);
  in.src[0] = tap(G, a);
  in.src[1] = tap(G, b);
  lw_tile *r[2] = {G->slots[a].cur, G->slots[b].cur}, *w = G->slots[dst].cur;
  L->ops_per_engine[1]++;
  return lw_emit(L, &in, r, 2, &w, 1);
}

static trnc_status e_ts(lw *L, egroup *G, int dst, int a, int alu0, float s0, int alu1, float s1) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_TENSOR_SCALAR;
  in.engine = TRNC_NC_VECTOR;
  in.alu0 = (uint8_t)alu0;
  in.alu1 = (uint8_t)alu1;
  in.imm[0] = s0;
  in.imm[1] = s1;
  in.dst = tap(G, dst);
  in.src[0] = tap(G, a);
  lw_tile *r = G->slots[a].cur, *w = G->slots[dst].cur;
  L->ops_per_engine[1]++;
  return lw_emit(L, &in, &r, 1, &w, 1);
}

static trnc_status e_copy(lw *L, egroup *G, int dst, int src) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_TENSOR_COPY;
  in.engine = TRNC_NC_VECTOR;
  in.dst = tap(G, dst);
  in.src[0] = tap(G, src);
  lw_tile *r = G->slots[src].cur, *w = G->slots[dst].cur;
  L->ops_per_engine[1]++;
  return lw_emit(L, &in, &r, 1, &w, 1);
}

static trnc_status e_memset(lw *L, egroup *G, int dst, float v) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_MEMSET;
  in.engine = TRNC_NC_VECTOR;
  in.imm[0] = v;
  in.dst = tap(G, dst);
  lw_tile *w = G->slots[dst].cur;
  return lw_emit(L, &in, NULL, 0, &w, 1);
}

static trnc_status e_select(lw *L, egroup *G, int dst, int mask, int a, int b) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_SELECT;
  in.engine = TRNC_NC_VECTOR;
  in.dst = tap(G, dst);
  in.src[0] = tap(G, mask);
  in.src[1] = tap(G, a);
  in.src[2] = tap(G, b);
  lw_tile *r[3] = {G->slots[mask].cur, G->slots[a].cur, G->slots[b].cur}, *w = G->slots[dst].cur;
  L->ops_per_engine[1]++;
  return lw_emit(L, &in, r, 3, &w, 1);
}

/* ---- operands ------------------------------------------------------------------ */


static bool is_scalar(const trnc_arg *a) {
  return a && (a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL);
}

static int arg_slot(egroup *G, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_VALUE) ? slot_of(G, a->u.ref) : -1;
}

/* A temporary slot of f32 (t in [0, NTEMP)). */
static int tmp(egroup *G, int t) { return G->temp[t]; }

/* Slot holding constant v (uses temporary t). */
static trnc_status const_slot(lw *L, egroup *G, int t, float v, int *out) {
  *out = tmp(G, t);
  return e_memset(L, G, *out, v);
}

static trnc_status binary(lw *L, egroup *G, const trnc_node *n, int dst, int alu) {
  int a = arg_slot(G, n, 0);
  const trnc_arg *b = trnc_node_arg(n, 1);
  if (is_scalar(b)) return e_ts(L, G, dst, a, alu, (float)trnc_arg_number(b, 0), TRNC_NC_ALU_BYPASS, 0);
  return e_tt(L, G, dst, a, arg_slot(G, n, 1), alu);
}

/* x + alpha*y / x - alpha*y (add.Tensor, sub.Tensor, add.Scalar, sub.Scalar). */
static trnc_status add_sub(lw *L, egroup *G, const trnc_node *n, int dst, int alu) {
  double alpha = trnc_arg_number(trnc_node_arg(n, 2), 0);
  int a = arg_slot(G, n, 0);
  const trnc_arg *b = trnc_node_arg(n, 1);
  if (is_scalar(b)) return e_ts(L, G, dst, a, alu, (float)(trnc_arg_number(b, 0) * alpha), TRNC_NC_ALU_BYPASS, 0);
  int bs = arg_slot(G, n, 1);
  if (alpha != 1.0) {
    trnc_status st = e_ts(L, G, tmp(G, 0), bs, TRNC_NC_ALU_MUL, (float)alpha, TRNC_NC_ALU_BYPASS, 0);
    if (st) return st;
    bs = tmp(G, 0);
  }
  return e_tt(L, G, dst, a, bs, alu);
}

/* trunc(src) into dst through an int32 temporary (float -> int stores
 * truncate toward zero). */
static trnc_status trunc_to(lw *L, egroup *G, int dst, int src, int itmp) {
  trnc_dtype keep = G->slots[itmp].dt;
  G->slots[itmp].dt = TRNC_I32;
  trnc_status st = e_copy(L, G, itmp, src);
  if (!st) st = e_copy(L, G, dst, itmp);
  G->slots[itmp].dt = keep;
  return st;
}

/* floor (ceil = false) or ceil of src into dst. */
static trnc_status floor_ceil(lw *L, egroup *G, int dst, int src, bool ceil_) {
  int t = tmp(G, 1), m = tmp(G, 2);
  trnc_status st = trunc_to(L, G, t, src, tmp(G, 3));
  /* floor: t - (src < t); ceil: t + (src > t) */
  if (!st) st = e_tt(L, G, m, src, t, ceil_ ? TRNC_NC_ALU_GT : TRNC_NC_ALU_LT);
  if (!st) st = e_tt(L, G, dst, t, m, ceil_ ? TRNC_NC_ALU_ADD : TRNC_NC_ALU_SUB);
  return st;
}

static bool is_float_dt(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16 || t == TRNC_F8E4M3 || t == TRNC_F8E5M2;
}

static trnc_status gelu_bw(lw *L, egroup *G, const trnc_node *n, int dst) {
  int g = arg_slot(G, n, 0), x = arg_slot(G, n, 1);
  const trnc_arg *ap = trnc_node_arg(n, 2);
  bool tanh_ = ap && ap->kind == TRNC_ARG_STR && !strcmp(ap->u.s, "tanh");
  int t0 = tmp(G, 0), t1 = tmp(G, 1), t2 = tmp(G, 2);
  trnc_status st;
  if (!tanh_) {
    /* cdf = 0.5 (1 + erf(x/sqrt2)); pdf = exp(-x^2/2)/sqrt(2 pi); g (cdf + x pdf) */
    st = e_act(L, G, t0, x, TRNC_NC_ACT_ERF, 0.70710678118654752f, 0);
    if (!st) st = e_ts(L, G, t0, t0, TRNC_NC_ALU_MUL, 0.5f, TRNC_NC_ALU_ADD, 0.5f);
    if (!st) st = e_act(L, G, t1, x, TRNC_NC_ACT_SQUARE, 1, 0);
    if (!st) st = e_act(L, G, t1, t1, TRNC_NC_ACT_EXP, -0.5f, 0);
    if (!st) st = e_tt(L, G, t1, t1, x, TRNC_NC_ALU_MUL);
    if (!st) st = e_ts(L, G, t1, t1, TRNC_NC_ALU_MUL, 0.39894228040143268f, TRNC_NC_ALU_BYPASS, 0);
    if (!st) st = e_tt(L, G, t0, t0, t1, TRNC_NC_ALU_ADD);
    if (!st) st = e_tt(L, G, dst, g, t0, TRNC_NC_ALU_MUL);
    return st;
  }
  /* torch's tanh formula: inner = b (x + k x^3); th = tanh(inner);
   * d = 0.5 (1 + th) + 0.5 x (1 - th^2) b (1 + 3 k x^2) */
  const float kb = 0.79788456080286536f, kk = 0.044715f;
  int t3 = tmp(G, 3);
  st = e_act(L, G, t0, x, TRNC_NC_ACT_SQUARE, 1, 0);                          /* x^2 */
  if (!st) st = e_tt(L, G, t1, t0, x, TRNC_NC_ALU_MUL);                        /* x^3 */
  if (!st) st = e_ts(L, G, t1, t1, TRNC_NC_ALU_MUL, kk, TRNC_NC_ALU_BYPASS, 0);
  if (!st) st = e_tt(L, G, t1, t1, x, TRNC_NC_ALU_ADD);                        /* x + k x^3 */
  if (!st) st = e_act(L, G, t1, t1, TRNC_NC_ACT_TANH, kb, 0);                  /* th */
  if (!st) st = e_ts(L, G, t0, t0, TRNC_NC_ALU_MUL, 3 * kk, TRNC_NC_ALU_ADD, 1); /* 1+3k x^2 */
  if (!st) st = e_ts(L, G, t0, t0, TRNC_NC_ALU_MUL, kb, TRNC_NC_ALU_BYPASS, 0);
  if (!st) st = e_act(L, G, t2, t1, TRNC_NC_ACT_SQUARE, 1, 0);                 /* th^2 */
  if (!st) st = e_ts(L, G, t2, t2, TRNC_NC_ALU_MUL, -1, TRNC_NC_ALU_ADD, 1);   /* 1-th^2 */
  if (!st) st = e_tt(L, G, t2, t2, t0, TRNC_NC_ALU_MUL);
  if (!st) st = e_tt(L, G, t2, t2, x, TRNC_NC_ALU_MUL);
  if (!st) st = e_ts(L, G, t2, t2, TRNC_NC_ALU_MUL, 0.5f, TRNC_NC_ALU_BYPASS, 0); /* right */
  if (!st) st = e_ts(L, G, t3, t1, TRNC_NC_ALU_MUL, 0.5f, TRNC_NC_ALU_ADD, 0.5f); /* left */
  if (!st) st = e_tt(L, G, t3, t3, t2, TRNC_NC_ALU_ADD);
  if (!st) st = e_tt(L, G, dst, g, t3, TRNC_NC_ALU_MUL);
  return st;
}

/* Emits node n of the group for the current tile. */
static trnc_status emit_node(lw *L, egroup *G, const trnc_node *n) {
  int dst = slot_of(G, n->outs[0]);
  int x = arg_slot(G, n, 0);
  trnc_status st = TRNC_OK;
  int c;
  switch (n->op) {
    case TRNC_OP_ABS: return e_act(L, G, dst, x, TRNC_NC_ACT_ABS, 1, 0);
    case TRNC_OP_NEG: return e_act(L, G, dst, x, TRNC_NC_ACT_IDENTITY, -1, 0);
    case TRNC_OP_EXP: return e_act(L, G, dst, x, TRNC_NC_ACT_EXP, 1, 0);
    case TRNC_OP_LOG: return e_act(L, G, dst, x, TRNC_NC_ACT_LOG, 1, 0);
    case TRNC_OP_LOG1P: return e_act(L, G, dst, x, TRNC_NC_ACT_LOG, 1, 1);
    case TRNC_OP_EXPM1:
      st = e_act(L, G, tmp(G, 0), x, TRNC_NC_ACT_EXP, 1, 0);
      return st ? st : e_ts(L, G, dst, tmp(G, 0), TRNC_NC_ALU_ADD, -1, TRNC_NC_ALU_BYPASS, 0);
    case TRNC_OP_SQRT: return e_act(L, G, dst, x, TRNC_NC_ACT_SQRT, 1, 0);
    case TRNC_OP_RSQRT: return e_act(L, G, dst, x, TRNC_NC_ACT_RSQRT, 1, 0);
    case TRNC_OP_RECIPROCAL: return e_act(L, G, dst, x, TRNC_NC_ACT_RECIPROCAL, 1, 0);
    case TRNC_OP_TANH: return e_act(L, G, dst, x, TRNC_NC_ACT_TANH, 1, 0);
    case TRNC_OP_SIGMOID: return e_act(L, G, dst, x, TRNC_NC_ACT_SIGMOID, 1, 0);
    case TRNC_OP_SIN: return e_act(L, G, dst, x, TRNC_NC_ACT_SIN, 1, 0);
    case TRNC_OP_COS: return e_act(L, G, dst, x, TRNC_NC_ACT_COS, 1, 0);
    case TRNC_OP_ERF: return e_act(L, G, dst, x, TRNC_NC_ACT_ERF, 1, 0);
    case TRNC_OP_RELU: return e_act(L, G, dst, x, TRNC_NC_ACT_RELU, 1, 0);
    case TRNC_OP_SILU: return e_act(L, G, dst, x, TRNC_NC_ACT_SILU, 1, 0);
    case TRNC_OP_SIGN: return e_act(L, G, dst, x, TRNC_NC_ACT_SIGN, 1, 0);
    case TRNC_OP_GELU: {
      const trnc_arg *a = trnc_node_arg(n, 1);
      bool t = a && a->kind == TRNC_ARG_STR && !strcmp(a->u.s, "tanh");
      return e_act(L, G, dst, x, t ? TRNC_NC_ACT_GELU_TANH : TRNC_NC_ACT_GELU, 1, 0);
    }
    case TRNC_OP_FLOOR:
    case TRNC_OP_CEIL:
      if (!is_float_dt(G->slots[x].dt)) return e_copy(L, G, dst, x);
      return floor_ceil(L, G, dst, x, n->op == TRNC_OP_CEIL);
    case TRNC_OP_LOGICAL_NOT:
    case TRNC_OP_BITWISE_NOT:
      if (n->op == TRNC_OP_BITWISE_NOT && G->slots[x].dt != TRNC_BOOL)
        return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "bitwise_not is lowered for bool tensors only");
      return e_ts(L, G, dst, x, TRNC_NC_ALU_EQ, 0, TRNC_NC_ALU_BYPASS, 0);
    case TRNC_OP_CLONE:
    case TRNC_OP_ALIAS:
    case TRNC_OP_TO_COPY: return e_copy(L, G, dst, x);
    case TRNC_OP_CLAMP: {
      const trnc_arg *lo = trnc_node_arg(n, 1), *hi = trnc_node_arg(n, 2);
      bool hl = is_scalar(lo), hh = is_scalar(hi);
      return e_ts(L, G, dst, x, hl ? TRNC_NC_ALU_MAX : (hh ? TRNC_NC_ALU_MIN : TRNC_NC_ALU_BYPASS),
                  hl ? (float)trnc_arg_number(lo, 0) : (float)trnc_arg_number(hi, 0), hl && hh ? TRNC_NC_ALU_MIN : TRNC_NC_ALU_BYPASS,
                  hh ? (float)trnc_arg_number(hi, 0) : 0);
    }
    case TRNC_OP_POW_SCALAR: {
      double e = trnc_arg_number(trnc_node_arg(n, 1), 0);
      if (e == 2) return e_act(L, G, dst, x, TRNC_NC_ACT_SQUARE, 1, 0);
      if (e == 1) return e_copy(L, G, dst, x);
      if (e == 0.5) return e_act(L, G, dst, x, TRNC_NC_ACT_SQRT, 1, 0);
      if (e == -0.5) return e_act(L, G, dst, x, TRNC_NC_ACT_RSQRT, 1, 0);
      if (e == -1) return e_act(L, G, dst, x, TRNC_NC_ACT_RECIPROCAL, 1, 0);
      return e_ts(L, G, dst, x, TRNC_NC_ALU_POW, (float)e, TRNC_NC_ALU_BYPASS, 0);
    }
    case TRNC_OP_POW: return binary(L, G, n, dst, TRNC_NC_ALU_POW);
    case TRNC_OP_ADD:
    case TRNC_OP_ADD_SCALAR: return add_sub(L, G, n, dst, TRNC_NC_ALU_ADD);
    case TRNC_OP_SUB:
    case TRNC_OP_SUB_SCALAR: return add_sub(L, G, n, dst, TRNC_NC_ALU_SUB);
    case TRNC_OP_RSUB_SCALAR: {
      /* other - alpha * self */
      double alpha = trnc_arg_number(trnc_node_arg(n, 2), 0), other = trnc_arg_number(trnc_node_arg(n, 1), 0);
      return e_ts(L, G, dst, x, TRNC_NC_ALU_MUL, (float)alpha, TRNC_NC_ALU_RSUB, (float)other);
    }
    case TRNC_OP_MUL:
    case TRNC_OP_MUL_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_MUL);
    case TRNC_OP_DIV:
    case TRNC_OP_DIV_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_DIV);
    case TRNC_OP_DIV_MODE: {
      const trnc_arg *m = trnc_node_arg(n, 2);
      int q = tmp(G, 0);
      G->slots[q].dt = TRNC_F32;
      st = binary(L, G, n, q, TRNC_NC_ALU_DIV);
      if (st) return st;
      if (m->kind == TRNC_ARG_NONE) return e_copy(L, G, dst, q);
      if (!strcmp(m->u.s, "trunc")) return trunc_to(L, G, dst, q, tmp(G, 3));
      return floor_ceil(L, G, dst, q, false);
    }
    case TRNC_OP_MAXIMUM: return binary(L, G, n, dst, TRNC_NC_ALU_MAX);
    case TRNC_OP_MINIMUM: return binary(L, G, n, dst, TRNC_NC_ALU_MIN);
    case TRNC_OP_EQ: case TRNC_OP_EQ_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_EQ);
    case TRNC_OP_NE: case TRNC_OP_NE_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_NE);
    case TRNC_OP_LT: case TRNC_OP_LT_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_LT);
    case TRNC_OP_LE: case TRNC_OP_LE_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_LE);
    case TRNC_OP_GT: case TRNC_OP_GT_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_GT);
    case TRNC_OP_GE: case TRNC_OP_GE_SCALAR: return binary(L, G, n, dst, TRNC_NC_ALU_GE);
    case TRNC_OP_LOGICAL_AND: return binary(L, G, n, dst, TRNC_NC_ALU_AND);
    case TRNC_OP_LOGICAL_OR: return binary(L, G, n, dst, TRNC_NC_ALU_OR);
    case TRNC_OP_LOGICAL_XOR: return binary(L, G, n, dst, TRNC_NC_ALU_XOR);
    case TRNC_OP_BITWISE_AND:
    case TRNC_OP_BITWISE_OR:
      if (G->slots[x].dt != TRNC_BOOL)
        return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "bitwise and/or are lowered for bool tensors only");
      return binary(L, G, n, dst, n->op == TRNC_OP_BITWISE_AND ? TRNC_NC_ALU_AND : TRNC_NC_ALU_OR);
    case TRNC_OP_WHERE: {
      int m = x, a = arg_slot(G, n, 1), b = arg_slot(G, n, 2);
      if (a < 0 && (st = const_slot(L, G, 0, (float)trnc_arg_number(trnc_node_arg(n, 1), 0), &a))) return st;
      if (b < 0 && (st = const_slot(L, G, 1, (float)trnc_arg_number(trnc_node_arg(n, 2), 0), &b))) return st;
      return e_select(L, G, dst, m, a, b);
    }
    case TRNC_OP_MASKED_FILL:
      if ((st = const_slot(L, G, 0, (float)trnc_arg_number(trnc_node_arg(n, 2), 0), &c))) return st;
      return e_select(L, G, dst, arg_slot(G, n, 1), c, x);
    case TRNC_OP_THRESHOLD_BACKWARD: {
      /* grad where self > threshold else 0 */
      int self = arg_slot(G, n, 1), z;
      float th = (float)trnc_arg_number(trnc_node_arg(n, 2), 0);
      st = e_ts(L, G, tmp(G, 2), self, TRNC_NC_ALU_GT, th, TRNC_NC_ALU_BYPASS, 0);
      if (!st) st = const_slot(L, G, 1, 0, &z);
      return st ? st : e_select(L, G, dst, tmp(G, 2), x, z);
    }
    case TRNC_OP_SIGMOID_BACKWARD: {
      int y = arg_slot(G, n, 1);
      st = e_ts(L, G, tmp(G, 0), y, TRNC_NC_ALU_MUL, -1, TRNC_NC_ALU_ADD, 1);
      if (!st) st = e_tt(L, G, tmp(G, 0), tmp(G, 0), y, TRNC_NC_ALU_MUL);
      return st ? st : e_tt(L, G, dst, x, tmp(G, 0), TRNC_NC_ALU_MUL);
    }
    case TRNC_OP_TANH_BACKWARD: {
      int y = arg_slot(G, n, 1);
      st = e_act(L, G, tmp(G, 0), y, TRNC_NC_ACT_SQUARE, 1, 0);
      if (!st) st = e_ts(L, G, tmp(G, 0), tmp(G, 0), TRNC_NC_ALU_MUL, -1, TRNC_NC_ALU_ADD, 1);
      return st ? st : e_tt(L, G, dst, x, tmp(G, 0), TRNC_NC_ALU_MUL);
    }
    case TRNC_OP_SILU_BACKWARD: {
      /* g * s * (1 + x (1 - s)), s = sigmoid(x) */
      int xs = arg_slot(G, n, 1), s = tmp(G, 0), t = tmp(G, 1);
      st = e_act(L, G, s, xs, TRNC_NC_ACT_SIGMOID, 1, 0);
      if (!st) st = e_ts(L, G, t, s, TRNC_NC_ALU_MUL, -1, TRNC_NC_ALU_ADD, 1);
      if (!st) st = e_tt(L, G, t, t, xs, TRNC_NC_ALU_MUL);
      if (!st) st = e_ts(L, G, t, t, TRNC_NC_ALU_ADD, 1, TRNC_NC_ALU_BYPASS, 0);
      if (!st) st = e_tt(L, G, t, t, s, TRNC_NC_ALU_MUL);
      return st ? st : e_tt(L, G, dst, x, t, TRNC_NC_ALU_MUL);
    }
    case TRNC_OP_GELU_BACKWARD: return gelu_bw(L, G, n, dst);
    case TRNC_OP_LEAKY_RELU: {
      /* x > 0 ? x : slope * x (NaN stays NaN through the multiply) */
      float slope = (float)trnc_arg_number(trnc_node_arg(n, 1), 0.01);
      st = e_ts(L, G, tmp(G, 0), x, TRNC_NC_ALU_GT, 0, TRNC_NC_ALU_BYPASS, 0);
      if (!st) st = e_ts(L, G, tmp(G, 1), x, TRNC_NC_ALU_MUL, slope, TRNC_NC_ALU_BYPASS, 0);
      return st ? st : e_select(L, G, dst, tmp(G, 0), x, tmp(G, 1));
    }
    case TRNC_OP_HARDTANH:
      return e_ts(L, G, dst, x, TRNC_NC_ALU_MAX, (float)trnc_arg_number(trnc_node_arg(n, 1), -1),
                  TRNC_NC_ALU_MIN, (float)trnc_arg_number(trnc_node_arg(n, 2), 1));
    case TRNC_OP_ELU: {
      /* x > 0 ? scale x : scale alpha (exp(input_scale x) - 1) */
      float alpha = (float)trnc_arg_number(trnc_node_arg(n, 1), 1);
      float scale = (float)trnc_arg_number(trnc_node_arg(n, 2), 1);
      float iscale = (float)trnc_arg_number(trnc_node_arg(n, 3), 1);
      st = e_act(L, G, tmp(G, 0), x, TRNC_NC_ACT_EXP, iscale, 0);
      if (!st) st = e_ts(L, G, tmp(G, 0), tmp(G, 0), TRNC_NC_ALU_ADD, -1, TRNC_NC_ALU_MUL, scale * alpha);
      if (!st) st = e_ts(L, G, tmp(G, 1), x, TRNC_NC_ALU_MUL, scale, TRNC_NC_ALU_BYPASS, 0);
      if (!st) st = e_ts(L, G, tmp(G, 2), x, TRNC_NC_ALU_GT, 0, TRNC_NC_ALU_BYPASS, 0);
      return st ? st : e_select(L, G, dst, tmp(G, 2), tmp(G, 1), tmp(G, 0));
    }
    case TRNC_OP_HARDSIGMOID:
    case TRNC_OP_HARDSWISH: {
      /* relu6(x + 3) / 6, times x for hardswish */
      int h = n->op == TRNC_OP_HARDSIGMOID ? dst : tmp(G, 0);
      st = e_ts(L, G, h, x, TRNC_NC_ALU_ADD, 3, TRNC_NC_ALU_MAX, 0);
      if (!st) st = e_ts(L, G, h, h, TRNC_NC_ALU_MIN, 6, TRNC_NC_ALU_DIV, 6);
      if (st || n->op == TRNC_OP_HARDSIGMOID) return st;
      return e_tt(L, G, dst, x, h, TRNC_NC_ALU_MUL);
    }
    case TRNC_OP_TRUNC:
      if (!is_float_dt(G->slots[x].dt)) return e_copy(L, G, dst, x);
      return trunc_to(L, G, dst, x, tmp(G, 3));
    case TRNC_OP_EXP2: return e_act(L, G, dst, x, TRNC_NC_ACT_EXP, 0.69314718055994531f, 0);
    case TRNC_OP_LOG2:
      st = e_act(L, G, tmp(G, 0), x, TRNC_NC_ACT_LOG, 1, 0);
      return st ? st : e_ts(L, G, dst, tmp(G, 0), TRNC_NC_ALU_MUL, 1.4426950408889634f, TRNC_NC_ALU_BYPASS, 0);
    case TRNC_OP_ISNAN: return e_tt(L, G, dst, x, x, TRNC_NC_ALU_NE);
    case TRNC_OP_BITWISE_XOR:
      if (G->slots[x].dt != TRNC_BOOL)
        return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "bitwise xor is lowered for bool tensors only");
      return binary(L, G, n, dst, TRNC_NC_ALU_XOR);
    default:
      return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "no NeuronCore lowering for %s in an elementwise kernel",
                     n->target);
  }
}

/* ---- per tile --------------------------------------------------------------------- */

static trnc_status do_tile(lw *L, const lw_space *s, const lw_tile_pos *tp, void *ctx) {
  egroup *G = ctx;
  G->np = (int)(tp->pdim >= 0 ? tp->np : 1);
  G->nfree = lw_tile_free_elems(tp);
  int64_t counts[TRNC_NC_MAX_FREE];
  for (int i = 0; i < tp->nfree; i++) counts[i] = tp->nf[i];
  for (int i = 0; i < G->nslots; i++) G->slots[i].cur = lw_pool_next(&G->slots[i].pool);
  for (int k = 0; k < G->nin; k++) {
    eslot *sl = &G->slots[G->in_slot[k]];
    const lw_tv *tv = &L->tv[sl->value];
    trnc_nc_ap hbm = lw_hbm_ap(s, sl->op, tv->buffer, tv->t.dtype, tp);
    trnc_nc_ap sb = lw_tile_ap(sl->cur, G->np, 0, sl->dt, tp->nfree, counts);
    trnc_status st = lw_dma(L, sl->cur, sb, hbm, false);
    if (st) return st;
  }
  for (int i = 0; i < G->n; i++) {
    trnc_status st = emit_node(L, G, G->nodes[i]);
    if (st) return st;
  }
  for (int k = 0; k < G->nout; k++) {
    eslot *sl = &G->slots[G->out_slot[k]];
    const lw_tv *tv = &L->tv[sl->value];
    trnc_nc_ap hbm = lw_hbm_ap(s, sl->op, tv->buffer, tv->t.dtype, tp);
    trnc_nc_ap sb = lw_tile_ap(sl->cur, G->np, 0, sl->dt, tp->nfree, counts);
    trnc_status st = lw_dma(L, sl->cur, sb, hbm, true);
    if (st) return st;
  }
  return TRNC_OK;
}

/* Splits a 1-D space of n elements into [rows, cols] (rows <= 128) plus a
 * remainder, so large contiguous tensors use all partitions. */
static trnc_status run_space(lw *L, egroup *G, int64_t max_free) {
  lw_space *s = &G->space;
  if (s->rank != 1 || s->size[0] < 2 * L->target->partitions)
    return lw_space_tiles(L, s, -1, max_free, do_tile, G);
  int64_t n = s->size[0], P = L->target->partitions;
  int64_t cols = (n + P - 1) / P, rows = n / cols, rem = n - rows * cols;
  lw_space main = *s;
  main.rank = 2;
  main.size[0] = rows;
  main.size[1] = cols;
  for (int o = 0; o < s->nops; o++) {
    main.stride[o][0] = s->stride[o][0] * cols;
    main.stride[o][1] = s->stride[o][0];
  }
  trnc_status st = lw_space_tiles(L, &main, 1, max_free, do_tile, G);
  if (st || rem == 0) return st;
  lw_space tail = *s;
  tail.size[0] = rem;
  for (int o = 0; o < s->nops; o++) tail.base[o] = s->base[o] + rows * cols * s->stride[o][0];
  return lw_space_tiles(L, &tail, -1, max_free, do_tile, G);
}

trnc_status lw_emit_eltwise(lw *L, const trnc_node *const *nodes, int n) {
  const trnc_graph *g = L->g;
  egroup *G = trnc_arena_alloc(&L->arena, sizeof *G);
  if (!G) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  G->nodes = nodes;
  G->n = n;
  const trnc_type *S = &g->values[nodes[n - 1]->outs[0]].type;
  if (trnc_type_numel(S) == 0) return TRNC_OK;
  trnc_status st = lw_kernel_begin(L, trnc_op_name(nodes[0]->op));
  if (st) return st;
  /* external inputs */
  for (int i = 0; i < n; i++) {
    const trnc_node *nd = nodes[i];
    for (uint32_t a = 0; a < nd->nargs; a++) {
      const trnc_arg *arg = &nd->args[a];
      if (arg->kind != TRNC_ARG_VALUE || slot_of(G, arg->u.ref) >= 0) continue;
      if (in_group(G, producer(g, arg->u.ref))) continue;
      const lw_tv *tv = &L->tv[arg->u.ref];
      int sl = add_slot(L, G, arg->u.ref, tv->t.dtype);
      if (sl < 0) return L->status;
      G->slots[sl].op = lw_space_add(&G->space, tv, S->rank, S->shape);
      if (G->space.nops > LW_MAX_OPS) return lw_fail(L, nd, TRNC_ERR_INTERNAL, "too many operands");
      G->in_slot[G->nin++] = sl;
    }
    int sl = add_slot(L, G, nd->outs[0], lw_device_dtype(g->values[nd->outs[0]].type.dtype));
    if (sl < 0) return L->status;
  }
  /* group values stored to HBM: those with a materialized tv */
  for (int i = 0; i < n; i++) {
    trnc_ref r = nodes[i]->outs[0];
    const lw_tv *tv = &L->tv[r];
    if (tv->buffer < 0) continue;
    int sl = slot_of(G, r);
    if (G->space.nops >= LW_MAX_OPS) return lw_fail(L, nodes[i], TRNC_ERR_INTERNAL, "too many outputs");
    G->slots[sl].op = lw_space_add(&G->space, tv, S->rank, S->shape);
    G->out_slot[G->nout++] = sl;
  }
  for (int t = 0; t < NTEMP; t++) {
    G->temp[t] = add_slot(L, G, TRNC_NO_REF, TRNC_F32);
    if (G->temp[t] < 0) return L->status;
  }
  /* iterate in the memory order of the first stored value */
  if (G->nout > 0) lw_space_order(&G->space, G->slots[G->out_slot[0]].op);
  lw_space_coalesce(&G->space);
  /* SBUF budget: 2 buffers per slot, 4 bytes per element */
  int64_t budget = L->target->sbuf_bytes_per_partition * 3 / 4;
  int64_t max_free = budget / (G->nslots * 2 * 4);
  if (max_free > 4096) max_free = 4096;
  max_free &= ~(int64_t)15;
  if (max_free < 16) return lw_fail(L, nodes[0], TRNC_ERR_INTERNAL, "elementwise group too large");
  /* no tile needs more than the whole tensor: small tensors get small tiles
   * (less SBUF to reserve, and to NaN-fill in the simulator) */
  int64_t numel = trnc_type_numel(S);
  if (numel < max_free) max_free = (numel + 15) & ~(int64_t)15;
  for (int i = 0; i < G->nslots; i++) {
    st = lw_pool_init(L, &G->slots[i].pool, TRNC_NC_MEM_SBUF, max_free * 4, 2);
    if (st) return st;
  }
  return run_space(L, G, max_free);
}
