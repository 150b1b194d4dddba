/*
 * print.c — deterministic text form of the IR.
 *
 *   graph forward {
 *     %0 = placeholder primal : f32[4,32]                      # primals_1
 *     %2 = addmm(%1, %0, %3, beta=1, alpha=1) : f32[4,64]      # addmm
 *     %5, %6, %7 = layer_norm(...) : f32[2,37,96], f32[2,37,1], f32[2,37,1]
 *     output(%2, None)
 *   }
 *
 * Values print as %<value index>; non-contiguous strides and storage offsets
 * print after the type ("{strides=[1,4] offset=2}"). FX node names follow
 * '#' for the reader; source locations are not printed, so the text does
 * not depend on where the model's file lives.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/shape.h"

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if ((size_t)w < b->cap - b->len) {
      b->len += (size_t)w;
      return;
    }
    size_t cap = b->cap * 2 + (size_t)w;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
}

static const char *const layout_names[] = {"?", "strided", "sparse_coo", "sparse_csr",
                                           "sparse_csc", "sparse_bsr", "sparse_bsc", "mkldnn",
                                           "jagged"};
static const char *const memfmt_names[] = {"?", "contiguous_format", "channels_last",
                                           "channels_last_3d", "preserve_format"};

static void print_arg(sbuf *b, const trnc_arg *a) {
  switch (a->kind) {
    case TRNC_ARG_NONE: sb_printf(b, "None"); break;
    case TRNC_ARG_VALUE: sb_printf(b, "%%%u", a->u.ref); break;
    case TRNC_ARG_INT: sb_printf(b, "%" PRId64, a->u.i); break;
    case TRNC_ARG_FLOAT:
      if (isinf(a->u.f)) sb_printf(b, "%sinf", a->u.f < 0 ? "-" : "");
      else if (isnan(a->u.f)) sb_printf(b, "nan");
      else sb_printf(b, "%.17g", a->u.f);
      break;
    case TRNC_ARG_BOOL: sb_printf(b, "%s", a->u.b ? "True" : "False"); break;
    case TRNC_ARG_STR: sb_printf(b, "'%s'", a->u.s); break;
    case TRNC_ARG_DTYPE: sb_printf(b, "%s", trnc_dtype_name(a->u.dtype)); break;
    case TRNC_ARG_DEVICE: sb_printf(b, "device('%s')", a->u.s); break;
    case TRNC_ARG_LAYOUT:
      sb_printf(b, "%s", (uint64_t)a->u.i < 9 ? layout_names[a->u.i] : "?");
      break;
    case TRNC_ARG_MEMFMT:
      sb_printf(b, "%s", (uint64_t)a->u.i < 5 ? memfmt_names[a->u.i] : "?");
      break;
    case TRNC_ARG_OTHER: sb_printf(b, "<%s>", a->u.s); break;
    case TRNC_ARG_LIST:
      sb_printf(b, a->is_tuple ? "(" : "[");
      for (uint32_t i = 0; i < a->u.list.n; i++) {
        if (i) sb_printf(b, ", ");
        print_arg(b, &a->u.list.items[i]);
      }
      sb_printf(b, a->is_tuple ? ")" : "]");
      break;
  }
}

static void print_type(sbuf *b, const trnc_value *v) {
  if (v->is_none) {
    sb_printf(b, "None");
    return;
  }
  const trnc_type *t = &v->type;
  sb_printf(b, "%s[", trnc_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) sb_printf(b, "%s%" PRId64, i ? "," : "", t->shape[i]);
  sb_printf(b, "]");
  trnc_type c = *t;
  trnc_type_set_contiguous(&c);
  bool contig = t->offset == 0;
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] > 1 && t->stride[i] != c.stride[i]) contig = false;
  if (!contig) {
    sb_printf(b, "{strides=[");
    for (int i = 0; i < t->rank; i++) sb_printf(b, "%s%" PRId64, i ? "," : "", t->stride[i]);
    sb_printf(b, "]");
    if (t->offset) sb_printf(b, " offset=%" PRId64, t->offset);
    sb_printf(b, "}");
  }
  if (v->layout > 1) sb_printf(b, "{layout=%s}", v->layout < 9 ? layout_names[v->layout] : "?");
  if (v->nested) sb_printf(b, "{nested}");
}

static const char *kind_name(trnc_graph_kind k) {
  switch (k) {
    case TRNC_GRAPH_FORWARD: return "forward";
    case TRNC_GRAPH_BACKWARD: return "backward";
    case TRNC_GRAPH_INFERENCE: return "inference";
    default: return "?";
  }
}

char *trnc_graph_print(const trnc_graph *g) {
  sbuf b = {malloc(4096), 0, 4096, false};
  if (!b.p) return NULL;
  b.p[0] = '\0';
  if (!g) return b.p;
  sb_printf(&b, "graph %s {\n", kind_name(g->kind));
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    sb_printf(&b, "  ");
    for (uint32_t k = 0; k < n->nouts; k++) sb_printf(&b, "%s%%%u", k ? ", " : "", n->outs[k]);
    if (n->nouts) sb_printf(&b, " = ");
    if (n->op == TRNC_OP_PLACEHOLDER) {
      sb_printf(&b, "placeholder %s", n->role && n->role[0] ? n->role : "input");
    } else if (n->op == TRNC_OP_CONSTANT) {
      sb_printf(&b, "constant (%zu bytes)", n->data_len);
    } else {
      if (n->op == TRNC_OP_UNKNOWN) sb_printf(&b, "unknown<%s>(", n->target);
      else sb_printf(&b, "%s(", trnc_op_name(n->op));
      bool first = true;
      for (uint32_t a = 0; a < n->nargs; a++) {
        const trnc_arg *arg = &n->args[a];
        if (!first) sb_printf(&b, ", ");
        first = false;
        if (arg->kind != TRNC_ARG_VALUE && arg->kind != TRNC_ARG_LIST && arg->name &&
            arg->name[0])
          sb_printf(&b, "%s=", arg->name);
        else if (arg->kind == TRNC_ARG_LIST && arg->name && arg->name[0] &&
                 !(arg->u.list.n && arg->u.list.items[0].kind == TRNC_ARG_VALUE))
          sb_printf(&b, "%s=", arg->name);
        print_arg(&b, arg);
      }
      sb_printf(&b, ")");
    }
    sb_printf(&b, " : ");
    for (uint32_t k = 0; k < n->nouts; k++) {
      if (k) sb_printf(&b, ", ");
      print_type(&b, &g->values[n->outs[k]]);
    }
    if (n->name && n->name[0]) sb_printf(&b, "  # %s", n->name);
    sb_printf(&b, "\n");
  }
  sb_printf(&b, "  output(");
  for (uint32_t k = 0; k < g->noutputs; k++) {
    if (k) sb_printf(&b, ", ");
    if (g->outputs[k] == TRNC_NO_REF) sb_printf(&b, "None");
    else sb_printf(&b, "%%%u", g->outputs[k]);
  }
  sb_printf(&b, ")\n}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}
