/*
 * build.c — graph nodes to one kernel: a group of elementwise and row nodes
 * (softmax, log_softmax and their backwards) sharing one output shape
 * (codegen/lower.c picks them), optionally followed by a reduction (sum,
 * mean, amax, amin) of the group's last value, which then never goes to
 * HBM: `(x * x).sum()` and `softmax(q @ k * scale + mask)`'s elementwise
 * part are one kernel each.
 *
 * Axes are the dims of the iteration space: the group's output shape, or the
 * reduction's input shape with the reduced dims as reduction axes. Inputs
 * are loaded through access maps right-aligned to that shape (broadcasting
 * by stride 0); every group value that is read later or is a graph output
 * (it has a buffer) is stored; the reduction's result is stored with its
 * kept dims mapped to the space axes.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/kir.h"

static const trnc_node *producer(const trnc_graph *g, trnc_ref r) { return &g->nodes[g->values[r].node]; }

static bool in_group(const trnc_node *const *nodes, int n, const trnc_node *p) {
  for (int i = 0; i < n; i++)
    if (nodes[i] == p) return true;
  return false;
}

/* The shape node n computes over: its result's, or a layer-norm backward's
 * input's when it has no dx (only column sums). */
static const trnc_type *node_space(const trnc_graph *g, const trnc_node *n) {
  if (n->op == TRNC_OP_LAYER_NORM_BACKWARD && g->values[n->outs[0]].is_none) return &g->values[n->args[1].u.ref].type;
  return &g->values[n->outs[0]].type;
}

/* Axis map of a tensor of rank r right-aligned to a space of rank R. */
static void right_aligned(int r, int R, int *axis_of) {
  for (int d = 0; d < r; d++) axis_of[d] = R - r + d;
}

/* The reduction (its row of the reductions table): the prologue x != 0 of
 * any/all, the fold, mean's 1/count; the result is stored. */
static trnc_status add_reduction(kir_env *E, const trnc_node *red, int x, uint32_t rmask, bool keepdim) {
  lw *L = E->L;
  kir_kernel *k = E->k;
  const lw_tv *o = &L->tv[red->outs[0]];
  const kir_reduction *rr = kir_reduction_of(red->op);
  double count = 1;
  for (int a = 0; a < k->naxes; a++)
    if (rmask & (1u << a)) count *= (double)k->extent[a];
  if (rr->nonzero) x = kir_ts(k, TRNC_F32, x, TRNC_NC_ALU_NE, 0, TRNC_NC_ALU_BYPASS, 0);
  int r = kir_reduce(k, rr->alu, x, rmask);
  r = kir_ts(k, o->t.dtype, r, rr->mean ? TRNC_NC_ALU_MUL : TRNC_NC_ALU_BYPASS,
             rr->mean ? (float)(1.0 / count) : 0, TRNC_NC_ALU_BYPASS, 0);
  int axis_of[TRNC_MAX_RANK];
  for (int a = 0, d = 0; a < k->naxes; a++) {
    if (!(rmask & (1u << a))) axis_of[d++] = a;
    else if (keepdim) axis_of[d++] = -1;
  }
  int t = kir_tensor_add(k, o, axis_of);
  if (t < 0 || !kir_store(k, t, r)) return lw_fail(L, red, TRNC_ERR_INTERNAL, "kernel too large");
  return TRNC_OK;
}

/* Empty reductions give the table's value over no elements (sum 0, mean
 * 0/0 = NaN, prod 1, any false, all true); amax/amin of an empty dim raise
 * in eager (no identity) and stay refused. */
static trnc_status empty_reduction(lw *L, const trnc_node *red) {
  const lw_tv *o = &L->tv[red->outs[0]];
  const kir_reduction *rr = kir_reduction_of(red->op);
  if (o->buffer < 0 || trnc_type_numel(&o->t) == 0) return TRNC_OK;
  if (!rr->identity) /* refused by check_extreme */
    return lw_fail(L, red, TRNC_ERR_INTERNAL, "%s over an empty dim has no identity",
                   trnc_op_name(red->op));
  return lw_emit_fill(L, o, rr->empty, trnc_op_name(red->op));
}

#define MM_MAX_K 1024 /* whole rows of the group's values in their tiles (emit.c) */

bool kir_mm_fuses(const lw *L, const trnc_type *space, const trnc_node *mm, trnc_ref a) {
  const trnc_graph *g = L->g;
  if (mm->op != TRNC_OP_MM && mm->op != TRNC_OP_ADDMM) return false;
  int ai = mm->op == TRNC_OP_ADDMM ? 1 : 0;
  if (mm->args[ai].kind != TRNC_ARG_VALUE || mm->args[ai].u.ref != a ||
      mm->args[ai + 1].kind != TRNC_ARG_VALUE)
    return false;
  const trnc_type *at = &g->values[a].type;
  const lw_tv *w = &L->tv[mm->args[ai + 1].u.ref];
  if (space->rank < 1 || at->rank != 2 || w->buffer < 0 || w->t.rank != 2) return false;
  int64_t K = space->shape[space->rank - 1], N = w->t.shape[1];
  if (K < 2 || K > MM_MAX_K || at->shape[1] != K || at->shape[0] * K != trnc_type_numel(space) ||
      w->t.shape[0] != K || N < 1)
    return false;
  trnc_dtype dt = at->dtype;
  if ((dt != TRNC_F32 && dt != TRNC_BF16 && dt != TRNC_F16) || w->t.dtype != dt) return false;
  if (mm->op == TRNC_OP_ADDMM) {
    if (mm->args[0].kind != TRNC_ARG_VALUE) return false;
    const lw_tv *b = &L->tv[mm->args[0].u.ref];
    bool along_n = b->t.rank >= 1 && b->t.shape[b->t.rank - 1] == N && (b->t.rank < 2 || b->t.shape[0] == 1);
    if (b->buffer < 0 || !along_n || b->t.rank > 2 || trnc_arg_number(trnc_node_arg(mm, 4), 1) == 0) return false;
  }
  return true;
}

/* The mm op ending the kernel: its result [M, N] (and the bias [N]) seen
 * over the kernel's axes, N along the reduction axis (the last one). */
static trnc_status add_matmul(kir_env *E, const trnc_type *S, const kir_mm_node *mn, int x) {
  lw *L = E->L;
  kir_kernel *k = E->k;
  const trnc_node *n = mn->mm;
  bool has_bias = n->op == TRNC_OP_ADDMM;
  int ai = has_bias ? 1 : 0, R = S->rank, axis_of[TRNC_MAX_RANK];
  const lw_tv *w = &L->tv[n->args[ai + 1].u.ref], *out = &L->tv[mn->out];
  for (int d = 0; d < R; d++) axis_of[d] = d;
  /* the result: rows walk the row-major [S[0..R-1)] dims with the result's
   * row stride, columns its column stride */
  lw_tv ov = *out;
  ov.t.rank = R;
  int64_t rs = out->t.stride[out->t.rank - 2];
  for (int d = R - 2; d >= 0; d--) {
    ov.t.shape[d] = S->shape[d];
    ov.t.stride[d] = rs;
    rs *= S->shape[d];
  }
  ov.t.shape[R - 1] = w->t.shape[1];
  ov.t.stride[R - 1] = out->t.stride[out->t.rank - 1];
  int t = kir_tensor_add(k, &ov, axis_of);
  k->mm = (kir_mm){w, -1, w->t.shape[1], 1.0f, 1.0f, (uint8_t)mn->act, w->t.dtype};
  if (L->opt.autocast_bf16 && k->mm.in_dt == TRNC_F32) k->mm.in_dt = TRNC_BF16;
  if (has_bias) {
    const lw_tv *b = &L->tv[n->args[0].u.ref];
    lw_tv bv = *b;
    bv.t.rank = R;
    for (int d = 0; d < R; d++) {
      bv.t.shape[d] = d == R - 1 ? w->t.shape[1] : 1;
      bv.t.stride[d] = d == R - 1 ? b->t.stride[b->t.rank - 1] : 0;
    }
    k->mm.bias = (int16_t)kir_tensor_add(k, &bv, axis_of);
    k->mm.beta = (float)trnc_arg_number(trnc_node_arg(n, 3), 1);
    k->mm.alpha = (float)trnc_arg_number(trnc_node_arg(n, 4), 1);
    if (k->mm.bias < 0) t = -1;
  }
  if (t < 0 || !kir_matmul(k, t, x)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  return TRNC_OK;
}

trnc_status kir_emit_group(lw *L, const trnc_node *const *nodes, int n, const trnc_node *red,
                           const kir_mm_node *mm) {
  const trnc_graph *g = L->g;
  /* the iteration space: the group's largest shape, which every group value
   * broadcasts to (codegen/lower.c forms the groups); else the reduction's
   * input */
  const trnc_type *S = n ? node_space(g, nodes[n - 1]) : &g->values[red->args[0].u.ref].type;
  for (int i = 0; i < n; i++)
    if (trnc_type_numel(node_space(g, nodes[i])) > trnc_type_numel(S)) S = node_space(g, nodes[i]);
  if (trnc_type_numel(S) == 0) { /* only statistics of empty rows can have elements */
    for (int i = 0; i < n; i++)
      for (uint32_t o = 1; kir_is_row(nodes[i]->op) && o < nodes[i]->nouts; o++) {
        const lw_tv *tv = &L->tv[nodes[i]->outs[o]];
        trnc_status st = tv->buffer >= 0 && trnc_type_numel(&tv->t) ? lw_emit_fill(L, tv, kir_row_empty_value(nodes[i], o),
                                                        trnc_op_name(nodes[i]->op))
                                         : TRNC_OK;
        if (st) return st;
      }
    return red ? empty_reduction(L, red) : TRNC_OK;
  }
  /* a lone clone is a copy kernel: lw_emit_copy flips a transposing one
   * block by block on TensorE instead of reading element by element */
  if (n == 1 && !red && nodes[0]->op == TRNC_OP_CLONE && nodes[0]->args[0].kind == TRNC_ARG_VALUE) {
    const lw_tv *in = &L->tv[nodes[0]->args[0].u.ref], *out = &L->tv[nodes[0]->outs[0]];
    if (out->buffer < 0) return TRNC_OK;
    if (in->t.dtype == out->t.dtype && in->buffer >= 0) return lw_emit_copy(L, out, in, "clone");
  }
  if (red && !n && L->tv[red->args[0].u.ref].buffer < 0)
    return lw_fail(L, red, TRNC_ERR_UNSUPPORTED, "reduction input is not materialized");
  if (red && L->tv[red->outs[0]].buffer < 0) red = NULL; /* result unused */
  if (!n && !red) return TRNC_OK;
  bool keepdim = false, kd;
  uint32_t rmask = red ? kir_reduced_dims(red, S->rank, &keepdim) : 0;
  for (int i = 0; i < n; i++)
    if (kir_is_row(nodes[i]->op)) rmask = kir_reduced_dims(nodes[i], S->rank, &kd);
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  int16_t *val = trnc_arena_array(&L->arena, g->nvalues ? g->nvalues : 1, sizeof *val);
  if (!k || !val) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  for (uint32_t r = 0; r < g->nvalues; r++) val[r] = -1;
  const trnc_node *first = n ? nodes[0] : red;
  int64_t ext[KIR_MAX_AXES];
  for (int i = 0; i < S->rank; i++) ext[i] = S->shape[i];
  int naxes = S->rank;
  if (naxes == 0) ext[naxes++] = 1; /* a 0-d space is one element on one axis */
  kir_init(k, trnc_op_name(first->op), first, naxes, ext, rmask);
  kir_env E = {k, L, val};
  int axis_of[TRNC_MAX_RANK];
  /* external inputs of the group (or the reduction's input) */
  for (int i = 0; i < (n ? n : 1); i++) {
    const trnc_node *nd = n ? nodes[i] : red;
    if (n && kir_is_gather(g, nd)) continue; /* loads its table and index itself */
    for (uint32_t a = 0; a < nd->nargs; a++) {
      const trnc_arg *arg = &nd->args[a];
      if (arg->kind != TRNC_ARG_VALUE || val[arg->u.ref] >= 0) continue;
      if (n && in_group(nodes, n, producer(g, arg->u.ref))) continue;
      const lw_tv *tv = &L->tv[arg->u.ref];
      right_aligned(tv->t.rank, S->rank, axis_of);
      int t = kir_tensor_add(k, tv, axis_of);
      int v = t < 0 ? -1 : kir_load(k, t, tv->t.dtype);
      if (v < 0) return lw_fail(L, nd, TRNC_ERR_INTERNAL, "too many operands for one kernel");
      val[arg->u.ref] = (int16_t)v;
    }
  }
  for (int i = 0; i < n; i++) {
    trnc_status st = kir_is_row(nodes[i]->op)      ? kir_lower_row(&E, nodes[i])
                     : kir_is_gather(g, nodes[i]) ? kir_lower_gather(&E, nodes[i])
                                                  : kir_lower_eltwise(&E, nodes[i]);
    if (st) return st;
  }
  /* group values with a buffer are read later (or are graph outputs): stored */
  for (int i = 0; i < n; i++)
    for (uint32_t o = 0; o < nodes[i]->nouts; o++) {
      trnc_ref r = nodes[i]->outs[o];
      const lw_tv *tv = &L->tv[r];
      if (g->values[r].is_none || tv->buffer < 0 || trnc_type_numel(&tv->t) == 0) continue;
      right_aligned(tv->t.rank, S->rank, axis_of);
      int t = kir_tensor_add(k, tv, axis_of);
      /* a column sum: tv spans the row dims (right-aligned), summed over the rest */
      bool cs = kir_is_row(nodes[i]->op) && kir_row_colsum(nodes[i], o);
      if (t < 0 || !(cs ? kir_colsum(k, t, val[r]) : kir_store(k, t, val[r])))
        return lw_fail(L, nodes[i], TRNC_ERR_INTERNAL, "too many outputs for one kernel");
    }
  if (red) {
    trnc_status st = add_reduction(&E, red, val[red->args[0].u.ref], rmask, keepdim);
    if (st) return st;
  }
  if (mm) {
    trnc_status st = add_matmul(&E, S, mm, val[nodes[n - 1]->outs[0]]);
    if (st) return st;
  }
  const char *bad = kir_verify(k);
  if (bad) return lw_fail(L, first, TRNC_ERR_INTERNAL, "kernel IR of %s is invalid: %s", k->name, bad);
  return kir_emit(L, k);
}
