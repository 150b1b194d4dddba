/*
 * graph.c — graph allocation and small helpers over types and nodes.
 */
#include <stdarg.h>
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

int64_t trnc_type_extent(const trnc_type *t) {
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    e += (t->shape[i] - 1) * t->stride[i];
  }
  return e;
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

/* Bounded appender: writes stay inside buf[0..cap), always NUL-terminated. */
typedef struct bounded {
  char *buf;
  size_t len, cap;
} bounded;

static void bput(bounded *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(bounded *o, const char *fmt, ...) {
  if (o->len + 1 >= o->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (w < 0) return;
  o->len += (size_t)w < o->cap - o->len ? (size_t)w : o->cap - o->len - 1;
}

static void put_arg(const trnc_graph *g, const trnc_arg *a, bounded *o, int depth) {
  char tmp[160];
  switch (a->kind) {
    case TRNC_ARG_VALUE:
      if (a->u.ref < g->nvalues) bput(o, "%s", trnc_type_str(trnc_ref_type(g, a->u.ref), tmp, sizeof tmp));
      else bput(o, "?");
      break;
    case TRNC_ARG_INT: bput(o, "%lld", (long long)a->u.i); break;
    case TRNC_ARG_FLOAT: bput(o, "%g", a->u.f); break;
    case TRNC_ARG_BOOL: bput(o, "%s", a->u.b ? "True" : "False"); break;
    case TRNC_ARG_STR: bput(o, "'%s'", a->u.s ? a->u.s : ""); break;
    case TRNC_ARG_DEVICE: bput(o, "device('%s')", a->u.s ? a->u.s : ""); break;
    case TRNC_ARG_OTHER: bput(o, "<%s>", a->u.s ? a->u.s : ""); break;
    case TRNC_ARG_DTYPE: bput(o, "%s", trnc_dtype_name(a->u.dtype)); break;
    case TRNC_ARG_LAYOUT: bput(o, "layout(%lld)", (long long)a->u.i); break;
    case TRNC_ARG_MEMFMT: bput(o, "memory_format(%lld)", (long long)a->u.i); break;
    case TRNC_ARG_NONE: bput(o, "None"); break;
    case TRNC_ARG_LIST:
      bput(o, "[");
      if (depth > 8) bput(o, "...");
      for (uint32_t i = 0; depth <= 8 && i < a->u.list.n && o->len + 1 < o->cap; i++) {
        if (i) bput(o, ",");
        put_arg(g, &a->u.list.items[i], o, depth + 1);
      }
      bput(o, "]");
      break;
  }
}

char *trnc_node_operands_str(const trnc_graph *g, const trnc_node *n, char *buf, size_t cap) {
  bounded o = {buf, 0, cap};
  if (cap) buf[0] = '\0';
  bput(&o, "(");
  bool first = true;
  for (uint32_t i = 0; i < n->nargs; i++) {
    const trnc_arg *a = &n->args[i];
    if (a->kind == TRNC_ARG_NONE) continue;   /* omitted optional arguments */
    if (!first) bput(&o, ", ");
    first = false;
    if (a->kind != TRNC_ARG_VALUE && a->kind != TRNC_ARG_LIST && a->name && a->name[0])
      bput(&o, "%s=", a->name);
    put_arg(g, a, &o, 0);
  }
  bput(&o, ")");
  return buf;
}

int64_t trnc_arg_int(const trnc_node *n, uint32_t i, int64_t dflt) {
  const trnc_arg *a = trnc_node_arg(n, i);
  if (!a) return dflt;
  if (a->kind == TRNC_ARG_INT) return a->u.i;
  if (a->kind == TRNC_ARG_BOOL) return a->u.b;
  return dflt;
}

int64_t trnc_arg_spatial(const trnc_node *n, uint32_t i, int j, int64_t dflt) {
  const trnc_arg *a = trnc_node_arg(n, i);
  if (!a || a->kind != TRNC_ARG_LIST || a->u.list.n == 0 || j < 0) return dflt;
  if (a->u.list.n != 1 && (uint32_t)j >= a->u.list.n) return dflt;
  const trnc_arg *e = &a->u.list.items[a->u.list.n == 1 ? 0 : (uint32_t)j];
  return e->kind == TRNC_ARG_INT ? e->u.i : dflt;
}

int64_t trnc_adaptive_window(int64_t in, int64_t out) {
  int64_t widest = 0;
  for (int64_t o = 0; o < out; o++) {
    int64_t w = ((o + 1) * in + out - 1) / out - o * in / out;
    if (w > widest) widest = w;
  }
  return widest;
}

bool trnc_arg_bool(const trnc_node *n, uint32_t i, bool dflt) {
  const trnc_arg *a = trnc_node_arg(n, i);
  if (!a) return dflt;
  if (a->kind == TRNC_ARG_BOOL) return a->u.b;
  if (a->kind == TRNC_ARG_INT) return a->u.i != 0;
  return dflt;
}

double trnc_arg_number(const trnc_arg *a, double dflt) {
  if (!a) return dflt;
  switch (a->kind) {
    case TRNC_ARG_INT: return (double)a->u.i;
    case TRNC_ARG_FLOAT: return a->u.f;
    case TRNC_ARG_BOOL: return a->u.b;
    default: return dflt;
  }
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

int32_t trnc_graph_group_size(const trnc_graph *g, const char *name) {
  for (uint32_t i = 0; g && name && i < g->ngroups; i++)
    if (!strcmp(g->groups[i].name, name)) return g->groups[i].size;
  return 0;
}
