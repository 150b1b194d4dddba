/*
 * verify.c — the IR verifier: structure (references, topological order,
 * output slots), argument kinds against the op table, and every op's shape
 * rule against the metadata the graph declares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/shape.h"

#define MAX_OUTS 64 /* outputs checked on the stack; more are allocated */

static bool is_int(const trnc_arg *a) { return a->kind == TRNC_ARG_INT; }
static bool is_num(const trnc_arg *a) {
  return a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL;
}
static bool list_of(const trnc_arg *a, bool (*item)(const trnc_arg *)) {
  if (a->kind != TRNC_ARG_LIST) return false;
  for (uint32_t i = 0; i < a->u.list.n; i++)
    if (!item(&a->u.list.items[i])) return false;
  return true;
}
static bool is_val(const trnc_arg *a) { return a->kind == TRNC_ARG_VALUE; }
static bool is_opt_val(const trnc_arg *a) {
  return a->kind == TRNC_ARG_VALUE || a->kind == TRNC_ARG_NONE;
}
static bool is_bool(const trnc_arg *a) { return a->kind == TRNC_ARG_BOOL; }

bool trnc_arg_kind_ok(char spec, const trnc_arg *a) {
  bool none = a->kind == TRNC_ARG_NONE;
  switch (spec) {
    case 'T': return is_val(a);
    case 'W': return is_val(a) || is_num(a);
    case 't': return is_opt_val(a);
    case 'L': return list_of(a, is_val);
    case 'l': return list_of(a, is_opt_val);
    case 'i': return is_int(a);
    case 'j': return none || is_int(a);
    case 'I': return is_int(a) || list_of(a, is_int);
    case 'J': return none || is_int(a) || list_of(a, is_int);
    case 'n': return is_num(a);
    case 'N': return none || is_num(a);
    case 'f': return a->kind == TRNC_ARG_FLOAT || is_int(a);
    case 'F': return none || a->kind == TRNC_ARG_FLOAT || is_int(a);
    case 'b': return is_bool(a);
    case 'c': return none || is_bool(a);
    case 'B': return list_of(a, is_bool);
    case 's': return a->kind == TRNC_ARG_STR;
    case 'S': return none || a->kind == TRNC_ARG_STR;
    case 'd': return none || a->kind == TRNC_ARG_DTYPE;
    case 'D': return none || a->kind == TRNC_ARG_DEVICE || a->kind == TRNC_ARG_STR;
    case 'y': return none || a->kind == TRNC_ARG_LAYOUT;
    case 'm': return none || a->kind == TRNC_ARG_MEMFMT;
    case 'g': return none;
    default: return false;
  }
}

const char *trnc_arg_spec_name(char spec) {
  switch (spec) {
    case 'T': return "Tensor";
    case 'W': return "Tensor or Scalar";
    case 't': return "Tensor?";
    case 'L': return "Tensor[]";
    case 'l': return "Tensor?[]";
    case 'i': return "int";
    case 'j': return "int?";
    case 'I': return "int[]";
    case 'J': return "int[]?";
    case 'n': return "Scalar";
    case 'N': return "Scalar?";
    case 'f': return "float";
    case 'F': return "float?";
    case 'b': return "bool";
    case 'c': return "bool?";
    case 'B': return "bool[]";
    case 's': return "str";
    case 'S': return "str?";
    case 'd': return "ScalarType?";
    case 'D': return "Device?";
    case 'y': return "Layout?";
    case 'm': return "MemoryFormat?";
    case 'g': return "Generator? (must be None)";
    default: return "?";
  }
}

const char *trnc_arg_kind_name(trnc_arg_kind k) {
  static const char *const names[] = {"None",  "Tensor", "int",    "float",  "bool",
                                      "str",   "list",   "dtype",  "device", "layout",
                                      "memory_format",   "object"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* ---- reference checks ------------------------------------------------------- */

typedef struct ref_ctx {
  const trnc_graph *g;
  const trnc_node *n;
  uint32_t node_index;
  trnc_diags *d;
  trnc_status st;
} ref_ctx;

static void check_ref(trnc_ref r, void *p) {
  ref_ctx *c = p;
  trnc_diag_loc loc = trnc_node_loc(c->n);
  if (r >= c->g->nvalues) {
    c->st = trnc_diag_add(c->d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                          "argument refers to value %u, but the graph has %u values", r,
                          c->g->nvalues);
  } else if (c->g->values[r].node >= c->node_index) {
    c->st = trnc_diag_add(c->d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                          "argument refers to a value produced later in the graph (node %u)",
                          c->g->values[r].node);
  } else if (c->g->values[r].is_none) {
    c->st = trnc_diag_add(c->d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                          "argument refers to a None output of node %u", c->g->values[r].node);
  }
}

static bool dims_match(const trnc_type *want, const trnc_type *got) {
  if (want->rank != got->rank) return false;
  for (int i = 0; i < want->rank; i++)
    if (want->shape[i] != -1 && want->shape[i] != got->shape[i]) return false;
  return true;
}

static bool strides_match(const trnc_type *want, const trnc_type *got) {
  if (want->offset != got->offset) return false;
  for (int i = 0; i < got->rank; i++)
    if (got->shape[i] > 1 && want->stride[i] != got->stride[i]) return false;
  return true;
}

static bool is_float(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_F64 || t == TRNC_F16 || t == TRNC_BF16 || t == TRNC_F8E4M3 ||
         t == TRNC_F8E5M2;
}

typedef struct dtype_ctx {
  const trnc_graph *g;
  uint32_t set;
  bool ok;
} dtype_ctx;

static void check_dtype_in_set(trnc_ref r, void *p) {
  dtype_ctx *c = p;
  if (r < c->g->nvalues && !c->g->values[r].is_none &&
      !(c->set & TRNC_DT(c->g->values[r].type.dtype)))
    c->ok = false;
}

/* True if every tensor operand and result of n has a dtype the op is defined
 * for. Shape rules only describe those dtypes; nodes outside them (complex
 * abs returning a real tensor, say) are left to the legality scan, which
 * reports them as unsupported rather than as an inconsistent graph. */
static bool dtypes_in_table(const trnc_graph *g, const trnc_node *n) {
  dtype_ctx c = {g, trnc_op_defs[n->op].dtypes, true};
  for (uint32_t a = 0; a < n->nargs; a++) trnc_arg_visit_refs(&n->args[a], check_dtype_in_set, &c);
  for (uint32_t k = 0; k < n->nouts; k++) check_dtype_in_set(n->outs[k], &c);
  return c.ok;
}

static trnc_status outputs_against_rule(const trnc_graph *g, const trnc_node *n,
                                        const trnc_op_def *def, trnc_type *want, trnc_diags *d);

static trnc_status verify_outputs_against_rule(const trnc_graph *g, const trnc_node *n,
                                               trnc_diags *d) {
  const trnc_op_def *def = &trnc_op_defs[n->op];
  trnc_type few[MAX_OUTS];
  trnc_type *want = n->nouts <= MAX_OUTS ? few : calloc(n->nouts, sizeof *want);
  if (!want) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory verifying a node's outputs");
  trnc_status s = outputs_against_rule(g, n, def, want, d);
  if (want != few) free(want);
  return s;
}

/* verify_outputs_against_rule with the rule's results in want[n->nouts]. */
static trnc_status outputs_against_rule(const trnc_graph *g, const trnc_node *n,
                                        const trnc_op_def *def, trnc_type *want, trnc_diags *d) {
  trnc_diag_loc loc = trnc_node_loc(n);
  memset(want, 0, sizeof(trnc_type) * (n->nouts ? n->nouts : 1));
  for (uint32_t k = 0; k < n->nouts; k++) want[k].offset = -1;
  trnc_status s = def->rule(g, n, want, n->nouts, d);
  if (s) return s;
  for (uint32_t k = 0; k < n->nouts; k++) {
    const trnc_value *v = &g->values[n->outs[k]];
    const trnc_type *got = &v->type;
    char a[200], b[200];
    if (want[k].rank == 0xFF || v->is_none) {
      if ((want[k].rank == 0xFF) != v->is_none)
        return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                             "output %u is %s, but the op's shape rule says it is %s", k,
                             v->is_none ? "None" : "a tensor",
                             v->is_none ? "a tensor" : "None (masked off)");
      continue;
    }
    bool dt_ok = want[k].dtype == TRNC_DTYPE_INVALID ? is_float(got->dtype)
                                                     : want[k].dtype == got->dtype;
    if (!dt_ok || !dims_match(&want[k], got))
      return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                           "output %u is declared %s, but the op's shape rule gives %s", k,
                           trnc_type_str(got, a, sizeof a), trnc_type_str(&want[k], b, sizeof b));
    if (want[k].offset >= 0 ? !strides_match(&want[k], got) : !trnc_type_is_dense(got)) {
      char ws[200] = "", gs[200] = "";
      size_t wl = 0, gl = 0;
      for (int i = 0; i < got->rank; i++) {
        wl += (size_t)snprintf(ws + wl, sizeof ws - wl, "%s%lld", i ? "," : "",
                               (long long)want[k].stride[i]);
        gl += (size_t)snprintf(gs + gl, sizeof gs - gl, "%s%lld", i ? "," : "",
                               (long long)got->stride[i]);
        if (wl >= sizeof ws - 24 || gl >= sizeof gs - 24) break;
      }
      if (want[k].offset >= 0)
        return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                             "output %u of this view has strides (%s) offset %lld; the view "
                             "rule gives strides (%s) offset %lld",
                             k, gs, (long long)got->offset, ws, (long long)want[k].offset);
      return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                           "output %u has strides (%s), which are not dense and "
                           "non-overlapping for shape %s",
                           k, gs, trnc_type_str(got, a, sizeof a));
    }
  }
  return TRNC_OK;
}

trnc_status trnc_graph_verify(const trnc_graph *g, trnc_diags *d) {
  if (!g) return trnc_diag_error(d, TRNC_ERR_INVALID_ARGUMENT, "trnc_graph_verify: graph is NULL");
  trnc_status result = TRNC_OK;
#define FAIL(st_)          \
  do {                     \
    result = (st_);        \
    continue;              \
  } while (0)
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    trnc_diag_loc loc = trnc_node_loc(n);
    if ((unsigned)n->op >= TRNC_OP_KIND_COUNT)
      FAIL(trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL, "invalid op %d",
                         (int)n->op));
    /* Output slots belong to this node, in order. */
    bool bad = false;
    for (uint32_t k = 0; k < n->nouts && !bad; k++) {
      trnc_ref r = n->outs[k];
      if (r >= g->nvalues || g->values[r].node != i || g->values[r].index != k) {
        trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                      "output %u is not a value of this node", k);
        bad = true;
      } else {
        const trnc_type *t = &g->values[r].type;
        if (!g->values[r].is_none && t->rank > TRNC_MAX_RANK) {
          trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                        "output %u has rank %d (> %d)", k, t->rank, TRNC_MAX_RANK);
          bad = true;
        }
        for (int j = 0; !bad && !g->values[r].is_none && j < t->rank; j++)
          if (t->shape[j] < 0 || t->stride[j] < 0) {
            trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                          "output %u has a negative size or stride in dim %d", k, j);
            bad = true;
          }
      }
    }
    if (bad) FAIL(TRNC_ERR_INVALID_GRAPH);
    /* Argument references. */
    ref_ctx rc = {g, n, i, d, TRNC_OK};
    for (uint32_t a = 0; a < n->nargs; a++) trnc_arg_visit_refs(&n->args[a], check_ref, &rc);
    if (rc.st) FAIL(rc.st);

    if (n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT) {
      /* an "opaque" placeholder (a DeviceMesh input) produces no tensor */
      bool opaque = n->op == TRNC_OP_PLACEHOLDER && n->role && !strcmp(n->role, "opaque");
      if (n->nouts != 1 || (g->values[n->outs[0]].is_none && !opaque))
        FAIL(trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                           "%s must produce exactly one tensor",
                           n->op == TRNC_OP_PLACEHOLDER ? "a placeholder" : "a constant"));
      if (n->op == TRNC_OP_CONSTANT) {
        const trnc_type *t = &g->values[n->outs[0]].type;
        size_t want = (size_t)trnc_type_numel(t) * trnc_dtype_size(t->dtype);
        if (n->data_len != want)
          FAIL(trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                             "constant holds %zu bytes; its type needs %zu", n->data_len, want));
      }
      continue;
    }
    if (n->op == TRNC_OP_UNKNOWN) continue;   /* reported by the legality scan */

    const trnc_op_def *def = &trnc_op_defs[n->op];
    size_t want_args = strlen(def->args);
    if (n->nargs != want_args)
      FAIL(trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                         "%s takes %zu arguments (schema order, defaults filled), got %u",
                         def->target, want_args, n->nargs));
    bool kinds_ok = true;
    for (uint32_t a = 0; a < n->nargs && kinds_ok; a++) {
      if (!trnc_arg_kind_ok(def->args[a], &n->args[a])) {
        trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL,
                      "argument %u ('%s') must be %s, got %s", a,
                      n->args[a].name ? n->args[a].name : "", trnc_arg_spec_name(def->args[a]),
                      trnc_arg_kind_name(n->args[a].kind));
        kinds_ok = false;
      }
    }
    if (!kinds_ok) FAIL(TRNC_ERR_INVALID_GRAPH);
    if (!dtypes_in_table(g, n)) continue;
    trnc_status s = verify_outputs_against_rule(g, n, d);
    if (s) FAIL(s);
  }
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref r = g->outputs[k];
    if (r == TRNC_NO_REF) continue;
    if (r >= g->nvalues || g->values[r].is_none) {
      result = trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, NULL, NULL,
                             "graph output %u refers to %s", k,
                             r >= g->nvalues ? "a value that does not exist" : "a None output");
    } else if (g->nodes[g->values[r].node].dead) {
      result = trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, NULL, NULL,
                             "graph output %u refers to a removed node", k);
    }
  }
#undef FAIL
  return result;
}
