/*
 * graph.c — graph allocation and small helpers over types and nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

trnc_graph *trnc_graph_new(trnc_graph_kind kind) {
  trnc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  trnc_arena_init(&g->arena, 0);
  g->kind = kind;
  g->name = "";
  return g;
}

void trnc_graph_destroy(trnc_graph *g) {
  if (!g) return;
  trnc_arena_release(&g->arena);
  free(g);
}

int64_t trnc_type_numel(const trnc_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

bool trnc_type_same_shape(const trnc_type *a, const trnc_type *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         !memcmp(a->shape, b->shape, sizeof(int64_t) * a->rank);
}

char *trnc_type_str(const trnc_type *t, char *buf, size_t n) {
  size_t len = 0;
  int w = snprintf(buf, n, "%s[", trnc_dtype_name(t->dtype));
  if (w < 0) { buf[0] = '\0'; return buf; }
  len = (size_t)w;
  for (int i = 0; i < t->rank && len < n; i++) {
    w = snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (w < 0) break;
    len += (size_t)w;
  }
  if (len < n) snprintf(buf + len, n - len, "]");
  return buf;
}

trnc_diag_loc trnc_node_loc(const trnc_node *n) {
  trnc_diag_loc l = {n->name, n->target, n->loc.file, n->loc.line, n->loc.code};
  return l;
}

static size_t put_arg(const trnc_graph *g, const trnc_arg *a, char *buf, size_t len, size_t cap) {
  char tmp[160];
  int w = 0;
  switch (a->kind) {
    case TRNC_ARG_VALUE:
      if (a->u.ref < g->nvalues) w = snprintf(buf + len, cap - len, "%s",
                                              trnc_type_str(trnc_ref_type(g, a->u.ref), tmp, sizeof tmp));
      break;
    case TRNC_ARG_INT: w = snprintf(buf + len, cap - len, "%lld", (long long)a->u.i); break;
    case TRNC_ARG_FLOAT: w = snprintf(buf + len, cap - len, "%g", a->u.f); break;
    case TRNC_ARG_BOOL: w = snprintf(buf + len, cap - len, "%s", a->u.b ? "True" : "False"); break;
    case TRNC_ARG_STR: w = snprintf(buf + len, cap - len, "'%s'", a->u.s); break;
    case TRNC_ARG_DTYPE: w = snprintf(buf + len, cap - len, "%s", trnc_dtype_name(a->u.dtype)); break;
    case TRNC_ARG_NONE: w = snprintf(buf + len, cap - len, "None"); break;
    case TRNC_ARG_LIST:
      w = snprintf(buf + len, cap - len, "[");
      if (w > 0 && (size_t)w < cap - len) len += (size_t)w;
      for (uint32_t i = 0; i < a->u.list.n && len < cap - 1; i++) {
        if (i && len < cap - 2) buf[len++] = ',', buf[len] = '\0';
        len = put_arg(g, &a->u.list.items[i], buf, len, cap);
      }
      w = snprintf(buf + len, cap - len, "]");
      break;
    default: w = snprintf(buf + len, cap - len, "%s", a->u.s ? a->u.s : "?"); break;
  }
  if (w > 0) len += (size_t)w < cap - len ? (size_t)w : cap - len - 1;
  return len;
}

char *trnc_node_operands_str(const trnc_graph *g, const trnc_node *n, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '(';
  buf[1] = '\0';
  len = 1;
  bool first = true;
  for (uint32_t i = 0; i < n->nargs && len < cap - 8; i++) {
    const trnc_arg *a = &n->args[i];
    /* Tensors and tensor lists always; scalars only if not None. */
    if (a->kind == TRNC_ARG_NONE) continue;
    if (!first) len += (size_t)snprintf(buf + len, cap - len, ", ");
    first = false;
    if (a->kind != TRNC_ARG_VALUE && a->name && a->name[0] && len < cap - 8)
      len += (size_t)snprintf(buf + len, cap - len, "%s=", a->name);
    if (len >= cap - 1) break;
    len = put_arg(g, a, buf, len, cap);
  }
  if (len < cap - 1) snprintf(buf + len, cap - len, ")");
  return buf;
}

void trnc_arg_visit_refs(const trnc_arg *a, trnc_ref_visitor f, void *ctx) {
  if (a->kind == TRNC_ARG_VALUE) f(a->u.ref, ctx);
  else if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) trnc_arg_visit_refs(&a->u.list.items[i], f, ctx);
}

void trnc_graph_get_summary(const trnc_graph *g, trnc_graph_summary *out) {
  memset(out, 0, sizeof *out);
  if (!g) return;
  out->kind = g->kind;
  bool seen[TRNC_OP_KIND_COUNT] = {false};
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    if (n->op == TRNC_OP_PLACEHOLDER) out->inputs++;
    else if (n->op == TRNC_OP_CONSTANT) out->constants++;
    else {
      out->nodes++;
      if (!seen[n->op]) out->distinct_ops++;
      seen[n->op] = true;
    }
  }
  out->outputs = g->noutputs;
  out->values = g->nvalues;
}
