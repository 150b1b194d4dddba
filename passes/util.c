/*
 * util.c — helpers shared by the graph passes (see util.h).
 */
#include "passes/util.h"

#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"

#define MAX_OUTS 64

bool trnc_pu_type_equiv(const trnc_type *a, const trnc_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->offset != b->offset) return false;
  for (int i = 0; i < a->rank; i++) {
    if (a->shape[i] != b->shape[i]) return false;
    if (a->shape[i] > 1 && a->stride[i] != b->stride[i]) return false;
  }
  return true;
}

bool trnc_pu_is_contiguous(const trnc_type *t) {
  int64_t expect = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] > 1 && t->stride[i] != expect) return false;
    expect *= t->shape[i] > 1 ? t->shape[i] : 1;
  }
  return t->offset == 0;
}


bool trnc_pu_rule(const trnc_graph *g, const trnc_node *n, trnc_type *out) {
  if ((unsigned)n->op >= TRNC_OP_COUNT || n->nouts > MAX_OUTS || n->nouts == 0) return false;
  memset(out, 0, sizeof(trnc_type) * n->nouts);
  for (uint32_t k = 0; k < n->nouts; k++) out[k].offset = -1;
  return trnc_op_defs[n->op].rule(g, n, out, n->nouts, NULL) == TRNC_OK;
}

bool trnc_pu_rule_accepts(const trnc_type *want, const trnc_type *got) {
  if (want->rank == 0xFF) return false;
  if (want->dtype != got->dtype || want->rank != got->rank) return false;
  for (int i = 0; i < got->rank; i++)
    if (want->shape[i] != -1 && want->shape[i] != got->shape[i]) return false;
  if (want->offset < 0) return trnc_type_is_dense(got);
  if (want->offset != got->offset) return false;
  for (int i = 0; i < got->rank; i++)
    if (got->shape[i] > 1 && want->stride[i] != got->stride[i]) return false;
  return true;
}

bool trnc_pu_is_true_view(const trnc_graph *g, const trnc_node *n) {
  if (n->dead || n->nouts != 1 || !trnc_op_has(n->op, TRNC_OPF_VIEW)) return false;
  if (n->nargs < 1 || n->args[0].kind != TRNC_ARG_VALUE) return false;
  trnc_type t[MAX_OUTS];
  return trnc_pu_rule(g, n, t) && t[0].offset >= 0;
}

trnc_ref trnc_pu_storage_root(const trnc_graph *g, trnc_ref r) {
  for (uint32_t guard = 0; guard < g->nnodes; guard++) {
    const trnc_node *n = &g->nodes[g->values[r].node];
    bool shares = n->op == TRNC_OP_ALIAS ? n->nargs >= 1 && n->args[0].kind == TRNC_ARG_VALUE
                                         : trnc_pu_is_true_view(g, n);
    if (!shares) return r;
    r = n->args[0].u.ref;
  }
  return r;
}

bool trnc_pu_is_graph_output(const trnc_graph *g, trnc_ref r) {
  for (uint32_t k = 0; k < g->noutputs; k++)
    if (g->outputs[k] == r) return true;
  return false;
}

/* The dtype a value has at the Python boundary: its declared torch dtype
 * (float64 of a value legalize_f64 computes in float32), else its own. */
static trnc_dtype boundary_dtype(const trnc_value *v) {
  return v->torch_dtype ? v->torch_dtype : v->type.dtype;
}

bool trnc_pu_output_redirect_ok(const trnc_graph *g, trnc_ref from, trnc_ref to) {
  if (!trnc_pu_type_equiv(&g->values[from].type, &g->values[to].type)) return false;
  /* x.double().exp().float(): the f64 -> f32 copy is an identity after
   * legalize_f64, but the output must stay float32 for the caller */
  if (boundary_dtype(&g->values[from]) != boundary_dtype(&g->values[to])) return false;
  trnc_ref root_to = trnc_pu_storage_root(g, to), root_from = trnc_pu_storage_root(g, from);
  if (root_from == root_to && root_from != from) return true;   /* already a view of it */
  trnc_op rop = g->nodes[g->values[root_to].node].op;
  if (rop == TRNC_OP_PLACEHOLDER || rop == TRNC_OP_CONSTANT) return false;
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref o = g->outputs[k];
    if (o == TRNC_NO_REF || o == from) continue;
    if (trnc_pu_storage_root(g, o) == root_to) return false;
  }
  return true;
}
