/*
 * cse.c — common-subexpression elimination.
 *
 * Two live nodes with the same op, deep-equal arguments (value references
 * compared after earlier merges were applied, floats by bit pattern, schema
 * argument names ignored) and the same output types (dtype, shape, strides,
 * offset, None slots, layout) compute the same values: the later one's uses
 * are rewritten to the earlier one's outputs and it is marked dead.
 * Constants with the same type and bytes merge the same way.
 *
 * Never merged: placeholders (each is a distinct input), ops outside the
 * table, random ops (TRNC_OPF_RANDOM: two dropouts draw different
 * masks) and collectives (TRNC_OPF_COLLECTIVE: each is an exchange every
 * rank issues). A graph output moves to the earlier node only if
 * trnc_pu_output_redirect_ok allows it (no new aliasing between outputs, or
 * with inputs and constants); otherwise the later node stays, computing its
 * own copy for that output.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/util.h"

#define FNV_PRIME 0x100000001b3ull

static uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= FNV_PRIME;
  }
  return h;
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= FNV_PRIME;
  }
  return h;
}

static uint64_t mix_str(uint64_t h, const char *s) {
  return s ? mix_bytes(mix(h, strlen(s)), s, strlen(s)) : mix(h, UINT64_MAX);
}

static uint64_t hash_arg(uint64_t h, const trnc_arg *a) {
  h = mix(h, (uint64_t)a->kind);
  switch (a->kind) {
    case TRNC_ARG_VALUE: return mix(h, a->u.ref);
    case TRNC_ARG_INT:
    case TRNC_ARG_LAYOUT:
    case TRNC_ARG_MEMFMT: return mix(h, (uint64_t)a->u.i);
    case TRNC_ARG_FLOAT: {
      uint64_t bits;
      memcpy(&bits, &a->u.f, 8);
      return mix(h, bits);
    }
    case TRNC_ARG_BOOL: return mix(h, a->u.b);
    case TRNC_ARG_DTYPE: return mix(h, (uint64_t)a->u.dtype);
    case TRNC_ARG_STR:
    case TRNC_ARG_DEVICE:
    case TRNC_ARG_OTHER: return mix_str(h, a->u.s);
    case TRNC_ARG_LIST:
      h = mix(mix(h, a->is_tuple), a->u.list.n);
      for (uint32_t i = 0; i < a->u.list.n; i++) h = hash_arg(h, &a->u.list.items[i]);
      return h;
    case TRNC_ARG_NONE: return h;
  }
  return h;
}

static bool str_eq(const char *a, const char *b) {
  if (!a || !b) return a == b;
  return !strcmp(a, b);
}

static bool arg_eq(const trnc_arg *a, const trnc_arg *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case TRNC_ARG_VALUE: return a->u.ref == b->u.ref;
    case TRNC_ARG_INT:
    case TRNC_ARG_LAYOUT:
    case TRNC_ARG_MEMFMT: return a->u.i == b->u.i;
    case TRNC_ARG_FLOAT: return !memcmp(&a->u.f, &b->u.f, sizeof a->u.f);
    case TRNC_ARG_BOOL: return a->u.b == b->u.b;
    case TRNC_ARG_DTYPE: return a->u.dtype == b->u.dtype;
    case TRNC_ARG_STR:
    case TRNC_ARG_DEVICE:
    case TRNC_ARG_OTHER: return str_eq(a->u.s, b->u.s);
    case TRNC_ARG_LIST:
      if (a->is_tuple != b->is_tuple || a->u.list.n != b->u.list.n) return false;
      for (uint32_t i = 0; i < a->u.list.n; i++)
        if (!arg_eq(&a->u.list.items[i], &b->u.list.items[i])) return false;
      return true;
    case TRNC_ARG_NONE: return true;
  }
  return false;
}

/* Exact type identity (not just equivalence): a merged value must keep
 * every bit of the type its users were verified against. */
static bool value_eq(const trnc_value *a, const trnc_value *b) {
  if (a->is_none != b->is_none) return false;
  if (a->is_none) return true;
  if (a->layout != b->layout || a->nested != b->nested) return false;
  const trnc_type *x = &a->type, *y = &b->type;
  if (x->dtype != y->dtype || x->rank != y->rank || x->offset != y->offset) return false;
  for (int i = 0; i < x->rank; i++)
    if (x->shape[i] != y->shape[i] || x->stride[i] != y->stride[i]) return false;
  return true;
}

static uint64_t hash_node(const trnc_graph *g, const trnc_node *n) {
  uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)n->op);
  h = mix(h, n->nargs);
  for (uint32_t a = 0; a < n->nargs; a++) h = hash_arg(h, &n->args[a]);
  h = mix(h, n->nouts);
  for (uint32_t k = 0; k < n->nouts; k++) {
    const trnc_value *v = &g->values[n->outs[k]];
    h = mix(h, v->is_none);
    if (v->is_none) continue;
    h = mix(mix(h, (uint64_t)v->type.dtype), v->type.rank);
    for (int i = 0; i < v->type.rank; i++) h = mix(h, (uint64_t)v->type.shape[i]);
  }
  if (n->op == TRNC_OP_CONSTANT) h = mix_bytes(mix(h, n->data_len), n->data, n->data_len);
  return h;
}

static bool node_eq(const trnc_graph *g, const trnc_node *a, const trnc_node *b) {
  if (a->op != b->op || a->nargs != b->nargs || a->nouts != b->nouts) return false;
  for (uint32_t i = 0; i < a->nargs; i++)
    if (!arg_eq(&a->args[i], &b->args[i])) return false;
  for (uint32_t k = 0; k < a->nouts; k++)
    if (!value_eq(&g->values[a->outs[k]], &g->values[b->outs[k]])) return false;
  if (a->op == TRNC_OP_CONSTANT)
    return a->data_len == b->data_len && (!a->data_len || !memcmp(a->data, b->data, a->data_len));
  return true;
}

static bool cse_candidate(const trnc_node *n) {
  if (n->dead || n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_UNKNOWN) return false;
  if (n->op == TRNC_OP_CONSTANT) return true;
  /* a collective is a message exchange every rank makes */
  return (unsigned)n->op < TRNC_OP_COUNT && !trnc_op_any(n->op, TRNC_OPF_RANDOM | TRNC_OPF_COLLECTIVE);
}

static void canon_arg(trnc_arg *a, const trnc_ref *repl) {
  if (a->kind == TRNC_ARG_VALUE) a->u.ref = repl[a->u.ref];
  else if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) canon_arg(&a->u.list.items[i], repl);
}

/* One sweep in graph order: canonicalize the node's arguments through the
 * replacement map, then look it up in a hash table of earlier nodes; on a
 * hit, map its outputs to the earlier node's. Graph outputs are redirected
 * at the end. Errors: TRNC_ERR_NOMEM. */
trnc_status trnc_pass_cse(trnc_graph *g, trnc_diags *d) {
  size_t cap = 16;
  while (cap < 2 * (size_t)g->nnodes) cap *= 2;
  trnc_ref *repl = malloc(sizeof *repl * (g->nvalues ? g->nvalues : 1));
  uint32_t *table = malloc(sizeof *table * cap);
  bool *merged = calloc(g->nnodes ? g->nnodes : 1, sizeof *merged);
  if (!repl || !table || !merged) {
    free(repl);
    free(table);
    free(merged);
    return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in cse");
  }
  for (uint32_t v = 0; v < g->nvalues; v++) repl[v] = v;
  memset(table, 0xff, sizeof *table * cap);
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t a = 0; a < n->nargs; a++) canon_arg(&n->args[a], repl);
    if (!cse_candidate(n)) continue;
    size_t slot = (size_t)hash_node(g, n) & (cap - 1);
    for (;;) {
      if (table[slot] == UINT32_MAX) {
        table[slot] = i;
        break;
      }
      const trnc_node *m = &g->nodes[table[slot]];
      if (node_eq(g, m, n)) {
        for (uint32_t k = 0; k < n->nouts; k++) repl[n->outs[k]] = m->outs[k];
        merged[i] = true;
        break;
      }
      slot = (slot + 1) & (cap - 1);
    }
  }
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref o = g->outputs[k];
    if (o == TRNC_NO_REF || repl[o] == o) continue;
    if (trnc_pu_output_redirect_ok(g, o, repl[o])) g->outputs[k] = repl[o];
  }
  for (uint32_t i = 0; i < g->nnodes; i++) {
    if (!merged[i]) continue;
    trnc_node *n = &g->nodes[i];
    bool used = false;
    for (uint32_t k = 0; k < n->nouts && !used; k++) used = trnc_pu_is_graph_output(g, n->outs[k]);
    if (!used) n->dead = true;
  }
  free(repl);
  free(table);
  free(merged);
  return TRNC_OK;
}
