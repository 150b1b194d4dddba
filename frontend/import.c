/*
 * import.c — fx.proto bytes -> trnc IR (trnc_graph_import).
 *
 * The bytes are untrusted: they come from Python, from the on-disk cache, or
 * from a fuzzer. Everything is validated here so that later stages may
 * assume a well-formed graph:
 *
 *   1. size cap, then a schema-aware walk of the wire format that bounds
 *      message nesting (protobuf-c recurses without a limit) and counts nodes;
 *   2. protobuf-c unpack through a counting allocator (allocation and byte
 *      caps);
 *   3. conversion node by node: tensor metadata (dtype, rank, dims, strides,
 *      overflow, symbols), argument kinds against the op table, references
 *      (dangling, forward, None slots, Python scalars), constants' byte sizes;
 *   4. trnc_graph_verify() for the per-op shape rules.
 *
 * Every failure is a status plus a diagnostic naming the node; nothing
 * aborts, and the graph arena and the protobuf message are freed on every
 * path. Statuses say whose problem it is: TRNC_ERR_UNSUPPORTED and
 * TRNC_ERR_DYNAMIC_SHAPE are the model's (rank > 8, data-dependent sizes and
 * scalars; backed symbolic sizes), INVALID_GRAPH/MALFORMED/VERSION/LIMIT the
 * bytes'.
 */
#define _POSIX_C_SOURCE 200809L
#include "frontend/import.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fx.pb-c.h"
#include "ir/ir.h"

#define DYN_ADVICE                                                                 \
  "trnc compiles static shapes: pass dynamic=False to torch.compile, or pad inputs " \
  "to shape buckets (trnc.buckets)"

/* Why a data-dependent (unbacked) size or scalar cannot be compiled. */
#define DATA_DEP_WHY                                                                       \
  "it depends on the values in a tensor, and trnc compiles static-shape graphs that run " \
  "without host round trips"

/* ------------------------------------------------------------------------ */
/* Counting allocator for protobuf-c                                         */

typedef struct count_alloc {
  size_t allocs, max_allocs;  /* cumulative count and its cap */
  size_t live, max_live;      /* bytes currently held and their cap */
  bool exceeded;              /* a cap refused an allocation */
} count_alloc;

/* Each block carries its size in front, so that free can subtract it. */
typedef union alloc_hdr {
  size_t size;
  max_align_t align;
} alloc_hdr;

/* protobuf-c alloc hook: NULL (and `exceeded`) once a cap would be passed. */
static void *ca_alloc(void *data, size_t size) {
  count_alloc *ca = data;
  if (ca->allocs >= ca->max_allocs || size > ca->max_live - ca->live ||
      size > SIZE_MAX - sizeof(alloc_hdr)) {
    ca->exceeded = true;
    return NULL;
  }
  alloc_hdr *h = malloc(sizeof(alloc_hdr) + size);
  if (!h) return NULL;
  h->size = size;
  ca->allocs++;
  ca->live += size;
  return h + 1;
}

/* protobuf-c free hook. */
static void ca_free(void *data, void *p) {
  if (!p) return;
  count_alloc *ca = data;
  alloc_hdr *h = (alloc_hdr *)p - 1;
  ca->live -= h->size;
  free(h);
}

/* ------------------------------------------------------------------------ */
/* Wire pre-scan                                                             */

typedef enum { WIRE_OK, WIRE_MALFORMED, WIRE_TOO_DEEP } wire_result;

/* Reads a base-128 varint at *p (< end); advances *p. False if truncated or
 * longer than 10 bytes. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/*
 * Walks one message of type `desc` in [p, p+len) without allocating:
 * checks tags, wire types and lengths, recurses into message-typed fields up
 * to TRNC_FX_MAX_WIRE_DEPTH. At depth 0 counts occurrences of field
 * `count_field` into *count. protobuf-c does the real parse afterwards; this
 * only makes sure it cannot run out of stack.
 */
static wire_result wire_scan(const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *desc,
                             int depth, unsigned count_field, size_t *count) {
  if (depth > TRNC_FX_MAX_WIRE_DEPTH) return WIRE_TOO_DEEP;
  const uint8_t *end = p + len;
  while (p < end) {
    uint64_t tag, v;
    if (!wire_varint(&p, end, &tag)) return WIRE_MALFORMED;
    uint64_t num = tag >> 3;
    if (num == 0 || num > 536870911u) return WIRE_MALFORMED;
    switch (tag & 7) {
      case 0:
        if (!wire_varint(&p, end, &v)) return WIRE_MALFORMED;
        break;
      case 1:
        if ((size_t)(end - p) < 8) return WIRE_MALFORMED;
        p += 8;
        break;
      case 5:
        if ((size_t)(end - p) < 4) return WIRE_MALFORMED;
        p += 4;
        break;
      case 2: {
        if (!wire_varint(&p, end, &v)) return WIRE_MALFORMED;
        if (v > (uint64_t)(end - p)) return WIRE_MALFORMED;
        const ProtobufCFieldDescriptor *f =
            desc ? protobuf_c_message_descriptor_get_field(desc, (unsigned)num) : NULL;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
          wire_result r = wire_scan(p, (size_t)v, f->descriptor, depth + 1, 0, NULL);
          if (r != WIRE_OK) return r;
        }
        if (count && num == count_field) (*count)++;
        p += v;
        break;
      }
      default: /* groups (3, 4) and reserved wire types */
        return WIRE_MALFORMED;
    }
  }
  return WIRE_OK;
}

/* ------------------------------------------------------------------------ */
/* Import state and diagnostics                                              */

typedef struct imp {
  trnc_graph *g;
  trnc_diags *d;
  const Trnc__Fx__Graph *m;
  uint32_t nvalues; /* values filled so far */
} imp;

/* Adds an error diagnostic about node n (NULL: the graph) and returns st. */
static trnc_status __attribute__((format(printf, 4, 5)))
node_err(imp *im, const trnc_node *n, trnc_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!n) return trnc_diag_add(im->d, TRNC_SEV_ERROR, st, NULL, NULL, "%s", msg);
  trnc_diag_loc l = trnc_node_loc(n); /* name, target, user file:line:code */
  return trnc_diag_add(im->d, TRNC_SEV_ERROR, st, &l, NULL, "%s", msg);
}

/* TRNC_ERR_NOMEM with its diagnostic (an arena allocation failed). */
static trnc_status nomem(imp *im) {
  return trnc_diag_error(im->d, TRNC_ERR_NOMEM, "out of memory while importing the graph");
}

/* Arena copy of a protobuf-c string (NULL -> ""). NULL on OOM. */
static const char *dup(imp *im, const char *s) { return trnc_arena_strdup(&im->g->arena, s); }

/* "input 'x'" for placeholders, "node 'add'" otherwise. */
static const char *node_word(const trnc_node *n) {
  return n->op == TRNC_OP_PLACEHOLDER ? "input" : "node";
}

/*
 * Symbols in a SymInt expression, as torch names them
 * (torch/utils/_sympy/symbol.py): backed sizes s0, s77 (and zf0 floats) come
 * from inputs marked dynamic; unbacked ones, u0 (and zuf0 floats), from data
 * (nonzero, x[mask], .item()). Returns true if `expr` names an unbacked one.
 */
static bool sym_data_dependent(const char *expr) {
  if (!expr) return false;
  for (const char *p = expr; *p;) {
    bool start = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
    if (!start) {
      p++;
      continue;
    }
    const char *id = p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
           (*p >= '0' && *p <= '9'))
      p++;
    size_t plen = id[0] == 'u' ? 1 : (!strncmp(id, "zuf", 3) ? 3 : 0);
    if (!plen || (size_t)(p - id) <= plen) continue;
    bool digits = true;
    for (const char *q = id + plen; q < p; q++) digits = digits && *q >= '0' && *q <= '9';
    if (digits) return true;
  }
  return false;
}

/* True if `expr` contains a symbol at all (a plain number such as "3" does not). */
static bool sym_symbolic(const char *expr) {
  for (const char *p = expr ? expr : ""; *p; p++)
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') return true;
  return false;
}

/* Element size used for overflow checks: OTHER (unknown size) counts as 1. */
static int64_t itemsize(trnc_dtype dt) {
  size_t s = trnc_dtype_size(dt);
  return s ? (int64_t)s : 1;
}

/* ------------------------------------------------------------------------ */
/* Tensor metadata                                                           */

/* "input 'x'" for a placeholder (one output, so `what` is left out), else
 * "node 'add' output 0". */
static const char *value_name(const trnc_node *n, const char *what, char *buf, size_t len) {
  if (n->op == TRNC_OP_PLACEHOLDER) snprintf(buf, len, "input '%s'", n->name);
  else snprintf(buf, len, "%s '%s' %s", node_word(n), n->name, what);
  return buf;
}

/* One symbolic dim/stride/offset `sym` of `what` ("size in dim 0"): an
 * unbacked symbol (data-dependent shape) is TRNC_ERR_UNSUPPORTED, any other
 * TRNC_ERR_DYNAMIC_SHAPE. */
static trnc_status symbol_err(imp *im, const trnc_node *n, const char *who, const char *what,
                              const char *sym) {
  if (sym_data_dependent(sym))
    return node_err(im, n, TRNC_ERR_UNSUPPORTED,
                    "%s has a data-dependent %s (%s): the shape of this op's result depends on "
                    "the values in its input tensors, which a static-shape compiler cannot "
                    "lower; keep shapes fixed by rewriting with a mask (torch.where(mask, x, 0), "
                    "x * mask) instead of selecting elements",
                    who, what, sym);
  return node_err(im, n, TRNC_ERR_DYNAMIC_SHAPE, "%s has a symbolic %s (%s): %s", who, what, sym,
                  DYN_ADVICE);
}

/* Symbolic dims/strides/offset -> TRNC_ERR_DYNAMIC_SHAPE naming the input
 * (TRNC_ERR_UNSUPPORTED for data-dependent ones, see symbol_err): one
 * diagnostic per symbolic size, so the user sees every dim to fix at once;
 * strides and the offset only when no size is symbolic (the strides of a
 * symbolic size are symbolic too, and say nothing new). Returns the first
 * status. */
static trnc_status meta_symbols(imp *im, const trnc_node *n, const char *what,
                                const Trnc__Fx__TensorMeta *tm) {
  char who[300], part[64];
  trnc_status first = TRNC_OK;
  for (size_t i = 0; i < tm->n_shape; i++) {
    const Trnc__Fx__Dim *dm = tm->shape[i];
    if (dm->symbol && dm->symbol[0]) {
      snprintf(part, sizeof part, "size in dim %zu", i);
      trnc_status st = symbol_err(im, n, value_name(n, what, who, sizeof who), part, dm->symbol);
      if (first == TRNC_OK) first = st;
    }
  }
  if (first != TRNC_OK) return first;
  for (size_t i = 0; i < tm->n_stride; i++) {
    const Trnc__Fx__Dim *dm = tm->stride[i];
    if (dm->symbol && dm->symbol[0]) {
      snprintf(part, sizeof part, "stride in dim %zu", i);
      trnc_status st = symbol_err(im, n, value_name(n, what, who, sizeof who), part, dm->symbol);
      if (first == TRNC_OK) first = st;
    }
  }
  if (first != TRNC_OK) return first;
  const Trnc__Fx__Dim *off = tm->storage_offset;
  if (off && off->symbol && off->symbol[0])
    return symbol_err(im, n, value_name(n, what, who, sizeof who), "storage offset",
                      off->symbol);
  return TRNC_OK;
}

/*
 * Converts one TensorMeta (`what` names it in messages: "output 0") into
 * v->type. allow_none: a meta with DTYPE_UNSPECIFIED and no shape/stride is
 * a None slot of a tuple output (v->is_none). Checks: symbols, dtype and
 * layout enums, rank, shape/stride lengths, signs, numel/extent overflow.
 */
static trnc_status conv_meta(imp *im, const trnc_node *n, const char *what,
                             const Trnc__Fx__TensorMeta *tm, bool allow_none, trnc_value *v) {
  if (!tm)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has no tensor metadata", what);
  trnc_status st = meta_symbols(im, n, what, tm);
  if (st != TRNC_OK) return st;
  if ((int)tm->dtype == TRNC__FX__DTYPE__DTYPE_UNSPECIFIED && tm->n_shape == 0 &&
      tm->n_stride == 0) {
    if (allow_none) {
      v->is_none = true;
      v->type.dtype = TRNC_DTYPE_INVALID;
      return TRNC_OK;
    }
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "%s has no dtype (DTYPE_UNSPECIFIED): a None output is only allowed as an "
                    "element of a call's tuple output",
                    what);
  }
  int dt = (int)tm->dtype;
  if (dt == 0)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has shape but no dtype (DTYPE_UNSPECIFIED)",
                    what);
  if (dt < 0 || dt >= TRNC_DTYPE_COUNT)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has unknown dtype enum value %d", what, dt);
  int layout = (int)tm->layout;
  if (layout < 0 || layout > TRNC__FX__LAYOUT__JAGGED)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has unknown layout enum value %d", what,
                    layout);
  if (tm->n_shape > TRNC_MAX_RANK) {
    /* a limit of the model, not of the bytes: the user sees an unsupported tensor */
    char who[300];
    return node_err(im, n, TRNC_ERR_UNSUPPORTED, "%s has rank %zu; trnc supports rank <= %d",
                    n->op == TRNC_OP_CONSTANT ? what : value_name(n, what, who, sizeof who),
                    tm->n_shape, TRNC_MAX_RANK);
  }
  if (tm->n_stride != tm->n_shape)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "%s has %zu dims but %zu strides (shape and stride must have equal length)",
                    what, tm->n_shape, tm->n_stride);
  trnc_type *t = &v->type;
  t->dtype = (trnc_dtype)dt;
  t->rank = (uint8_t)tm->n_shape;
  t->offset = tm->storage_offset ? tm->storage_offset->value : 0;
  if (t->offset < 0)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has negative storage offset %" PRId64,
                    what, t->offset);
  int64_t numel = 1, extent = t->offset, isz = itemsize(t->dtype), tmp;
  for (size_t i = 0; i < tm->n_shape; i++) {
    int64_t d = tm->shape[i]->value, s = tm->stride[i]->value;
    if (d < 0)
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has negative size %" PRId64 " in dim %zu",
                      what, d, i);
    if (s < 0)
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                      "%s has negative stride %" PRId64 " in dim %zu", what, s, i);
    t->shape[i] = d;
    t->stride[i] = s;
    /* Product of max(d, 1): every partial product of dims fits, too. */
    if (__builtin_mul_overflow(numel, d ? d : 1, &numel))
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                      "%s: the number of elements overflows int64 at dim %zu (size %" PRId64 ")",
                      what, i, d);
    if (d > 0 && (__builtin_mul_overflow(d - 1, s, &tmp) ||
                  __builtin_add_overflow(extent, tmp, &extent)))
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                      "%s: the storage extent (offset + sum((size-1)*stride)) overflows int64 at "
                      "dim %zu",
                      what, i);
  }
  if (__builtin_mul_overflow(numel, isz, &tmp))
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s: the byte size overflows int64", what);
  if (__builtin_add_overflow(extent, 1, &tmp) || __builtin_mul_overflow(tmp, isz, &tmp))
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s: the storage byte extent overflows int64",
                    what);
  v->layout = layout;
  v->nested = tm->is_nested != 0;
  return TRNC_OK;
}

/* ------------------------------------------------------------------------ */
/* References and arguments                                                  */

/* Resolves NodeRef r used by node `user` (index ui) into a value ref.
 * `what` names the use in messages ("argument 1 ('other')"). */
static trnc_status conv_ref(imp *im, const trnc_node *user, uint32_t ui, const char *what,
                            const Trnc__Fx__NodeRef *r, trnc_ref *out) {
  trnc_graph *g = im->g;
  if (!r) return node_err(im, user, TRNC_ERR_INVALID_GRAPH, "%s has an empty reference", what);
  if (r->node >= g->nnodes)
    return node_err(im, user, TRNC_ERR_INVALID_GRAPH,
                    "%s refers to node %" PRIu32 ", but the graph has only %" PRIu32 " nodes",
                    what, r->node, g->nnodes);
  if (r->node == ui)
    return node_err(im, user, TRNC_ERR_INVALID_GRAPH, "%s refers to its own node %" PRIu32, what,
                    r->node);
  if (r->node > ui)
    return node_err(im, user, TRNC_ERR_INVALID_GRAPH,
                    "%s refers to node %" PRIu32 ", which comes later in the graph", what,
                    r->node);
  const trnc_node *src = &g->nodes[r->node];
  const Trnc__Fx__Node *fsrc = im->m->nodes[r->node];
  if (src->nouts == 0 && fsrc->n_scalar_outputs > 0) {
    /* a Python scalar (SymInt, .item()) used as an operand */
    const char *sym = fsrc->scalar_outputs[0] ? fsrc->scalar_outputs[0] : "";
    if (sym_data_dependent(sym))
      return node_err(im, src, TRNC_ERR_UNSUPPORTED,
                      "node '%s' reads a value out of a tensor into a Python scalar (%s, as "
                      ".item(), .tolist() or int(tensor) do) that node '%s' uses: " DATA_DEP_WHY
                      "; keep the value a tensor (e.g. multiply by the 0-d tensor instead of a "
                      "Python number)",
                      src->name, sym, user->name);
    if (sym_symbolic(sym))
      return node_err(im, src, TRNC_ERR_DYNAMIC_SHAPE,
                      "node '%s' is a symbolic size (%s) that node '%s' uses: %s", src->name,
                      sym, user->name, DYN_ADVICE);
    return node_err(im, src, TRNC_ERR_UNSUPPORTED,
                    "node '%s' produces a Python scalar (%s), not a tensor, and node '%s' uses "
                    "it as an operand: trnc lowers tensor operands only",
                    src->name, sym, user->name);
  }
  if (r->output >= src->nouts)
    return node_err(im, user, TRNC_ERR_INVALID_GRAPH,
                    "%s refers to output %" PRIu32 " of node %" PRIu32
                    " ('%s'), which has %" PRIu32 " output%s",
                    what, r->output, r->node, src->name, src->nouts, src->nouts == 1 ? "" : "s");
  trnc_ref v = src->outs[r->output];
  if (g->values[v].is_none)
    return node_err(im, user, TRNC_ERR_INVALID_GRAPH,
                    "%s refers to output %" PRIu32 " of node %" PRIu32 " ('%s'), which is None",
                    what, r->output, r->node, src->name);
  *out = v;
  return TRNC_OK;
}

/* Name of an fx.proto Arg kind for messages. */
static const char *fx_kind_name(Trnc__Fx__Arg__KindCase k) {
  switch (k) {
    case TRNC__FX__ARG__KIND_REF: return "a tensor";
    case TRNC__FX__ARG__KIND_I: return "an int";
    case TRNC__FX__ARG__KIND_F: return "a float";
    case TRNC__FX__ARG__KIND_B: return "a bool";
    case TRNC__FX__ARG__KIND_S: return "a str";
    case TRNC__FX__ARG__KIND_NONE: return "None";
    case TRNC__FX__ARG__KIND_LIST: return "a list";
    case TRNC__FX__ARG__KIND_DTYPE: return "a dtype";
    case TRNC__FX__ARG__KIND_DEVICE: return "a device";
    case TRNC__FX__ARG__KIND_LAYOUT: return "a layout";
    case TRNC__FX__ARG__KIND_MEMORY_FORMAT: return "a memory format";
    case TRNC__FX__ARG__KIND_SYM: return "a symbolic value";
    case TRNC__FX__ARG__KIND_OTHER: return "a Python object";
    default: return "nothing";
  }
}

/*
 * Converts argument `a` of node n (index ui) into *out, recursively for lists
 * (depth = list nesting so far). Validates references and enum values;
 * Arg.sym -> TRNC_ERR_DYNAMIC_SHAPE. `what` names the argument in messages.
 */
static trnc_status conv_arg(imp *im, const trnc_node *n, uint32_t ui, const char *what,
                            const Trnc__Fx__Arg *a, int depth, trnc_arg *out) {
  trnc_graph *g = im->g;
  out->name = dup(im, a->name);
  if (!out->name) return nomem(im);
  switch (a->kind_case) {
    case TRNC__FX__ARG__KIND_REF:
      out->kind = TRNC_ARG_VALUE;
      return conv_ref(im, n, ui, what, a->ref, &out->u.ref);
    case TRNC__FX__ARG__KIND_I:
      out->kind = TRNC_ARG_INT;
      out->u.i = a->i;
      return TRNC_OK;
    case TRNC__FX__ARG__KIND_F:
      out->kind = TRNC_ARG_FLOAT;
      out->u.f = a->f;
      return TRNC_OK;
    case TRNC__FX__ARG__KIND_B:
      out->kind = TRNC_ARG_BOOL;
      out->u.b = a->b != 0;
      return TRNC_OK;
    case TRNC__FX__ARG__KIND_S:
    case TRNC__FX__ARG__KIND_DEVICE:
    case TRNC__FX__ARG__KIND_OTHER: {
      const char *s = a->kind_case == TRNC__FX__ARG__KIND_S        ? a->s
                      : a->kind_case == TRNC__FX__ARG__KIND_DEVICE ? a->device
                                                                   : a->other;
      out->kind = a->kind_case == TRNC__FX__ARG__KIND_S        ? TRNC_ARG_STR
                  : a->kind_case == TRNC__FX__ARG__KIND_DEVICE ? TRNC_ARG_DEVICE
                                                               : TRNC_ARG_OTHER;
      out->u.s = dup(im, s);
      return out->u.s ? TRNC_OK : nomem(im);
    }
    case TRNC__FX__ARG__KIND_NONE:
      out->kind = TRNC_ARG_NONE;
      return TRNC_OK;
    case TRNC__FX__ARG__KIND_DTYPE: {
      int dt = (int)a->dtype;
      if (dt <= 0 || dt >= TRNC_DTYPE_COUNT)
        return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has unknown dtype enum value %d", what,
                        dt);
      out->kind = TRNC_ARG_DTYPE;
      out->u.dtype = (trnc_dtype)dt;
      return TRNC_OK;
    }
    case TRNC__FX__ARG__KIND_LAYOUT: {
      int l = (int)a->layout;
      if (l < 0 || l > TRNC__FX__LAYOUT__JAGGED)
        return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has unknown layout enum value %d",
                        what, l);
      out->kind = TRNC_ARG_LAYOUT;
      out->u.i = l;
      return TRNC_OK;
    }
    case TRNC__FX__ARG__KIND_MEMORY_FORMAT: {
      int mf = (int)a->memory_format;
      if (mf < 0 || mf > TRNC__FX__MEMORY_FORMAT__PRESERVE_FORMAT)
        return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                        "%s has unknown memory format enum value %d", what, mf);
      out->kind = TRNC_ARG_MEMFMT;
      out->u.i = mf;
      return TRNC_OK;
    }
    case TRNC__FX__ARG__KIND_SYM:
      if (sym_data_dependent(a->sym))
        return node_err(im, n, TRNC_ERR_UNSUPPORTED,
                        "%s of %s '%s' is a data-dependent value (%s): " DATA_DEP_WHY, what,
                        node_word(n), n->name, a->sym);
      return node_err(im, n, TRNC_ERR_DYNAMIC_SHAPE, "%s of %s '%s' is symbolic (%s): %s", what,
                      node_word(n), n->name, a->sym ? a->sym : "", DYN_ADVICE);
    case TRNC__FX__ARG__KIND_LIST: {
      const Trnc__Fx__ArgList *l = a->list;
      out->kind = TRNC_ARG_LIST;
      if (!l) return TRNC_OK; /* an empty list message */
      if (depth + 1 > TRNC_FX_MAX_ARG_DEPTH)
        return node_err(im, n, TRNC_ERR_LIMIT, "%s nests lists deeper than %d levels", what,
                        TRNC_FX_MAX_ARG_DEPTH);
      if (l->n_items > UINT32_MAX)
        return node_err(im, n, TRNC_ERR_LIMIT, "%s has too many items", what);
      out->is_tuple = l->is_tuple != 0;
      out->u.list.n = (uint32_t)l->n_items;
      if (l->n_items) {
        out->u.list.items = trnc_arena_array(&g->arena, l->n_items, sizeof(trnc_arg));
        if (!out->u.list.items) return nomem(im);
      }
      for (size_t i = 0; i < l->n_items; i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s item %zu", what, i);
        trnc_status st = conv_arg(im, n, ui, sub, l->items[i], depth + 1, &out->u.list.items[i]);
        if (st != TRNC_OK) return st;
      }
      return TRNC_OK;
    }
    default:
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s has no value (Arg.kind not set)", what);
  }
}

/* Wraps an INT argument into a one-element int list (int[N] accepts an int). */
static bool int_to_list(imp *im, trnc_arg *a) {
  trnc_arg *item = trnc_arena_alloc(&im->g->arena, sizeof *item);
  if (!item) return false;
  *item = *a;
  item->name = "";
  a->kind = TRNC_ARG_LIST;
  a->is_tuple = false;
  a->u.list.items = item;
  a->u.list.n = 1;
  return true;
}

/*
 * Normalizes argument a for schema kind char c before it is checked: an int
 * passed for a float (f/F) becomes a float; a single int passed for an int
 * list (I/J, ATen's int[N] broadcast) becomes a one-element list; a str for a
 * Device (D) becomes a device. Equal meanings then hash and print the same.
 * False on OOM.
 */
static bool normalize_arg(imp *im, char c, trnc_arg *a) {
  switch (c) {
    case 'f':
    case 'F':
      if (a->kind == TRNC_ARG_INT) {
        a->kind = TRNC_ARG_FLOAT;
        a->u.f = (double)a->u.i;
      }
      return true;
    case 'I':
    case 'J': return a->kind != TRNC_ARG_INT || int_to_list(im, a);
    case 'D':
      if (a->kind == TRNC_ARG_STR) a->kind = TRNC_ARG_DEVICE;
      return true;
    default: return true;
  }
}

/* Checks a table op's converted arguments against trnc_op_defs[op].args with
 * the verifier's own rule (trnc_arg_kind_ok), after normalize_arg. */
static trnc_status check_schema(imp *im, trnc_node *n, const Trnc__Fx__Node *fn) {
  const char *kinds = trnc_op_defs[n->op].args;
  size_t want = strlen(kinds);
  if (n->nargs != want)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "%s takes %zu schema arguments, got %" PRIu32
                    " (the serializer must pass every schema argument in order)",
                    n->target, want, n->nargs);
  for (uint32_t i = 0; i < n->nargs; i++) {
    if (!normalize_arg(im, kinds[i], &n->args[i])) return nomem(im);
    if (!trnc_arg_kind_ok(kinds[i], &n->args[i]))
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                      "argument %" PRIu32 " ('%s') of %s must be %s, got %s", i,
                      n->args[i].name, n->target, trnc_arg_spec_name(kinds[i]),
                      i < fn->n_args ? fx_kind_name(fn->args[i]->kind_case) : "None");
  }
  return TRNC_OK;
}

/* True if n produces a complex tensor from a Python object argument (a
 * complex Scalar such as 1j, which no schema kind holds): the node is then
 * left to the legality scan as an op without a lowering, with a reason
 * (passes/complex.c), instead of failing the import. */
static bool complex_scalar_call(const trnc_graph *g, const trnc_node *n) {
  bool other = false, cplx = false;
  for (uint32_t i = 0; i < n->nargs; i++) other = other || n->args[i].kind == TRNC_ARG_OTHER;
  for (uint32_t k = 0; k < n->nouts; k++) {
    trnc_dtype t = g->values[n->outs[k]].type.dtype;
    cplx = cplx || t == TRNC_C64 || t == TRNC_C128 || t == TRNC_C32;
  }
  return other && cplx;
}

/* ------------------------------------------------------------------------ */
/* Nodes                                                                     */

/* Appends a new value for output `index` of node ni. */
static trnc_ref new_value(imp *im, uint32_t ni, uint32_t index) {
  trnc_ref r = im->nvalues++;
  trnc_value *v = &im->g->values[r];
  v->node = ni;
  v->index = index;
  return r;
}

/* Allocates n->outs for k outputs. */
static trnc_status alloc_outs(imp *im, trnc_node *n, size_t k) {
  n->nouts = (uint32_t)k;
  if (!k) return TRNC_OK;
  n->outs = trnc_arena_array(&im->g->arena, k, sizeof(trnc_ref));
  return n->outs ? TRNC_OK : nomem(im);
}

/* PLACEHOLDER: exactly one tensor output; a scalar-only one is a SymInt input. */
static trnc_status conv_placeholder(imp *im, trnc_node *n, uint32_t ni, const Trnc__Fx__Node *fn) {
  n->op = TRNC_OP_PLACEHOLDER;
  n->role = dup(im, fn->placeholder_role);
  if (!n->role) return nomem(im);
  if (fn->n_outputs == 0 && fn->n_scalar_outputs > 0) {
    const char *sym = fn->scalar_outputs[0] ? fn->scalar_outputs[0] : "";
    if (sym_data_dependent(sym))
      return node_err(im, n, TRNC_ERR_UNSUPPORTED,
                      "input '%s' is a data-dependent scalar (%s): " DATA_DEP_WHY, n->name, sym);
    return node_err(im, n, TRNC_ERR_DYNAMIC_SHAPE, "input '%s' is a symbolic size (%s): %s",
                    n->name, sym, DYN_ADVICE);
  }
  if (fn->n_outputs != 1)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "input '%s' must have exactly one tensor output, has %zu", n->name,
                    fn->n_outputs);
  trnc_status st = alloc_outs(im, n, 1);
  if (st != TRNC_OK) return st;
  n->outs[0] = new_value(im, ni, 0);
  /* an opaque object passed as an input (a DeviceMesh or ProcessGroup of a
   * DTensor graph): no tensor; collectives carry the group's name */
  bool opaque = !strcmp(n->role, "opaque");
  return conv_meta(im, n, "output 0", fn->outputs[0], opaque, &im->g->values[n->outs[0]]);
}

/* True if t's strides are the contiguous ones (dims of size <= 1 ignored). */
static bool is_contiguous(const trnc_type *t) {
  int64_t expect = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] > 1 && t->stride[i] != expect) return false;
    expect *= t->shape[i] ? t->shape[i] : 1;
  }
  return t->offset == 0;
}

/* GET_ATTR: a constant tensor from Graph.constants, byte size checked. */
static trnc_status conv_constant(imp *im, trnc_node *n, uint32_t ni, const Trnc__Fx__Node *fn) {
  n->op = TRNC_OP_CONSTANT;
  const Trnc__Fx__Graph *m = im->m;
  if (fn->constant >= m->n_constants)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "constant index %" PRIu32 " is out of range (the graph has %zu constants)",
                    fn->constant, m->n_constants);
  const Trnc__Fx__Constant *c = m->constants[fn->constant];
  if (fn->n_outputs != 1)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "constant node must have exactly one tensor output, has %zu", fn->n_outputs);
  trnc_status st = alloc_outs(im, n, 1);
  if (st != TRNC_OK) return st;
  n->outs[0] = new_value(im, ni, 0);
  trnc_value *v = &im->g->values[n->outs[0]];
  trnc_value node_meta = {0};
  st = conv_meta(im, n, "output 0", fn->outputs[0], false, &node_meta);
  if (st != TRNC_OK) return st;
  char what[300];
  snprintf(what, sizeof what, "constant %" PRIu32 " ('%s')", fn->constant, c->name);
  st = conv_meta(im, n, what, c->meta, false, v);
  if (st != TRNC_OK) return st;
  char a[160], b[160];
  if (!trnc_type_same_shape(&v->type, &node_meta.type))
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s is %s but the node's output is %s", what,
                    trnc_type_str(&v->type, a, sizeof a),
                    trnc_type_str(&node_meta.type, b, sizeof b));
  if (!is_contiguous(&v->type))
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "%s metadata is not contiguous (its bytes are stored contiguously)", what);
  size_t isz = trnc_dtype_size(v->type.dtype);
  int64_t numel = trnc_type_numel(&v->type);
  if (isz && (uint64_t)numel * isz != (uint64_t)c->data.len)
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH,
                    "%s has %zu data bytes, but %s needs %" PRIu64 " (numel * itemsize)", what,
                    c->data.len, trnc_type_str(&v->type, a, sizeof a), (uint64_t)numel * isz);
  n->data_len = c->data.len;
  if (c->data.len) {
    uint8_t *p = trnc_arena_alloc(&im->g->arena, c->data.len);
    if (!p) return nomem(im);
    memcpy(p, c->data.data, c->data.len);
    n->data = p;
  }
  return TRNC_OK;
}

/*
 * FX targets imported as a table op with the same meaning. The alias takes
 * the op's first arguments; the op's remaining (optional) arguments are None,
 * named by `none_args` (comma-separated). The node's target becomes the op's.
 */
static const struct {
  const char *fx_target;
  trnc_op op;
  const char *none_args;
} op_aliases[] = {
    /* torch.tensor(data) in a model: a fresh copy of a get_attr constant */
    {"aten.lift_fresh_copy.default", TRNC_OP_CLONE, "memory_format"},
};

/* Index into op_aliases of target, or -1. */
static int alias_lookup(const char *target) {
  for (size_t i = 0; i < sizeof op_aliases / sizeof op_aliases[0]; i++)
    if (!strcmp(op_aliases[i].fx_target, target)) return (int)i;
  return -1;
}

/* Appends op_aliases[ai].none_args to n->args as None arguments. */
static trnc_status alias_args(imp *im, trnc_node *n, int ai) {
  const char *names = op_aliases[ai].none_args;
  uint32_t extra = 1;
  for (const char *p = names; *p; p++) extra += *p == ',';
  trnc_arg *args = trnc_arena_array(&im->g->arena, n->nargs + extra, sizeof(trnc_arg));
  if (!args) return nomem(im);
  if (n->nargs) memcpy(args, n->args, n->nargs * sizeof(trnc_arg));
  for (uint32_t k = 0; k < extra; k++) {
    const char *end = strchr(names, ',');
    size_t len = end ? (size_t)(end - names) : strlen(names);
    char *name = trnc_arena_alloc(&im->g->arena, len + 1);
    if (!name) return nomem(im);
    memcpy(name, names, len);
    name[len] = '\0';
    args[n->nargs + k] = (trnc_arg){.kind = TRNC_ARG_NONE, .name = name};
    names = end ? end + 1 : names + len;
  }
  n->args = args;
  n->nargs += extra;
  n->target = trnc_op_defs[op_aliases[ai].op].target;
  return TRNC_OK;
}

/* A Python number as `self` of a binary op (torch.sub(2, x) is traced as
 * aten.sub.Tensor(2, x)): rewritten to the form with the tensor first, which
 * computes the same value exactly (the number keeps its wrapped-number type
 * promotion): sub(a, x, alpha) -> rsub.Scalar(x, a, alpha); add(a, x, 1) and
 * mul(a, x) -> the operands swapped. Other forms are left to check_schema. */
static void number_self_to_tensor_self(trnc_node *n) {
  if (n->nargs < 2) return;
  trnc_arg *a = &n->args[0], *b = &n->args[1];
  bool num = a->kind == TRNC_ARG_INT || a->kind == TRNC_ARG_FLOAT || a->kind == TRNC_ARG_BOOL;
  if (!num || b->kind != TRNC_ARG_VALUE) return;
  bool alpha1 = n->nargs < 3 || (n->args[2].kind == TRNC_ARG_INT && n->args[2].u.i == 1);
  if (n->op == TRNC_OP_SUB) {
    n->op = TRNC_OP_RSUB_SCALAR;
    n->target = trnc_op_defs[n->op].target;
  } else if (!(n->op == TRNC_OP_MUL || (n->op == TRNC_OP_ADD && alpha1))) {
    return;
  }
  trnc_arg t = *a;
  const char *an = a->name, *bn = b->name;
  *a = *b;
  *b = t;
  a->name = an; /* the schema's names stay in place */
  b->name = bn;
}

/* CALL_FUNCTION: table op or TRNC_OP_UNKNOWN; args converted, outputs typed. */
static trnc_status conv_call(imp *im, trnc_node *n, uint32_t ni, const Trnc__Fx__Node *fn) {
  int alias = alias_lookup(n->target);
  n->op = alias >= 0 ? op_aliases[alias].op : trnc_op_lookup(n->target);
  if (fn->n_args > UINT32_MAX) return node_err(im, n, TRNC_ERR_LIMIT, "too many arguments");
  trnc_status st = alloc_outs(im, n, fn->n_outputs);
  if (st != TRNC_OK) return st;
  for (size_t i = 0; i < fn->n_outputs; i++) {
    n->outs[i] = new_value(im, ni, (uint32_t)i);
    char what[64];
    snprintf(what, sizeof what, "output %zu", i);
    st = conv_meta(im, n, what, fn->outputs[i], true, &im->g->values[n->outs[i]]);
    if (st != TRNC_OK) return st;
  }
  n->nargs = (uint32_t)fn->n_args;
  if (n->nargs) {
    n->args = trnc_arena_array(&im->g->arena, n->nargs, sizeof(trnc_arg));
    if (!n->args) return nomem(im);
  }
  for (uint32_t i = 0; i < n->nargs; i++) {
    char what[300];
    snprintf(what, sizeof what, "argument %" PRIu32 " ('%s')", i, fn->args[i]->name);
    st = conv_arg(im, n, ni, what, fn->args[i], 0, &n->args[i]);
    if (st != TRNC_OK) return st;
  }
  if (alias >= 0) {
    st = alias_args(im, n, alias);
    if (st != TRNC_OK) return st;
  }
  number_self_to_tensor_self(n);
  if (n->op < TRNC_OP_COUNT && complex_scalar_call(im->g, n)) n->op = TRNC_OP_UNKNOWN;
  if (n->op < TRNC_OP_COUNT) {
    if (fn->n_outputs == 0)
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "%s call has no output metadata", n->target);
    for (uint32_t i = 0; i < n->nouts; i++)
      if (!im->g->values[n->outs[i]].is_none) return check_schema(im, n, fn);
    return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "every output of this %s call is None",
                    n->target);
  }
  return TRNC_OK;
}

/* Converts node ni: common fields first (so diagnostics can name it). */
static trnc_status conv_node(imp *im, uint32_t ni) {
  const Trnc__Fx__Node *fn = im->m->nodes[ni];
  trnc_node *n = &im->g->nodes[ni];
  n->name = dup(im, fn->name);
  n->target = dup(im, fn->target);
  const Trnc__Fx__SourceLoc *loc = fn->loc;
  n->loc.file = dup(im, loc ? loc->file : "");
  n->loc.code = dup(im, loc ? loc->code : "");
  n->loc.function = dup(im, loc ? loc->function : "");
  n->loc.line = loc && loc->line > 0 ? loc->line : 0;
  n->role = "";
  if (!n->name || !n->target || !n->loc.file || !n->loc.code || !n->loc.function)
    return nomem(im);
  switch ((int)fn->op) {
    case TRNC__FX__NODE_OP__PLACEHOLDER: return conv_placeholder(im, n, ni, fn);
    case TRNC__FX__NODE_OP__GET_ATTR: return conv_constant(im, n, ni, fn);
    case TRNC__FX__NODE_OP__CALL_FUNCTION: return conv_call(im, n, ni, fn);
    default:
      n->op = TRNC_OP_UNKNOWN;
      return node_err(im, n, TRNC_ERR_INVALID_GRAPH, "node %" PRIu32 " has unknown node op %d", ni,
                      (int)fn->op);
  }
}

/* Graph.output: refs (validated like arguments) or None. */
static trnc_status conv_output(imp *im) {
  const Trnc__Fx__Output *o = im->m->output;
  trnc_graph *g = im->g;
  if (!o) return node_err(im, NULL, TRNC_ERR_INVALID_GRAPH, "graph has no output node");
  if (o->n_values > UINT32_MAX) return node_err(im, NULL, TRNC_ERR_LIMIT, "too many outputs");
  g->noutputs = (uint32_t)o->n_values;
  if (g->noutputs) {
    g->outputs = trnc_arena_array(&g->arena, g->noutputs, sizeof(trnc_ref));
    if (!g->outputs) return nomem(im);
  }
  trnc_node out_node = {.name = "output", .target = "output", .loc = {"", 0, "", ""}};
  for (uint32_t i = 0; i < g->noutputs; i++) {
    const Trnc__Fx__Arg *a = o->values[i];
    char what[64];
    snprintf(what, sizeof what, "graph output %" PRIu32, i);
    if (a->kind_case == TRNC__FX__ARG__KIND_NONE) {
      g->outputs[i] = TRNC_NO_REF;
    } else if (a->kind_case == TRNC__FX__ARG__KIND_REF) {
      trnc_status st = conv_ref(im, &out_node, g->nnodes, what, a->ref, &g->outputs[i]);
      if (st != TRNC_OK) return st;
    } else if (a->kind_case == TRNC__FX__ARG__KIND_SYM) {
      if (sym_data_dependent(a->sym))
        return node_err(im, &out_node, TRNC_ERR_UNSUPPORTED,
                        "%s is a data-dependent value (%s): " DATA_DEP_WHY, what, a->sym);
      return node_err(im, &out_node, TRNC_ERR_DYNAMIC_SHAPE, "%s is symbolic (%s): %s", what,
                      a->sym ? a->sym : "", DYN_ADVICE);
    } else {
      return node_err(im, &out_node, TRNC_ERR_INVALID_GRAPH,
                      "%s is %s; graph outputs must be tensor references or None", what,
                      fx_kind_name(a->kind_case));
    }
  }
  return TRNC_OK;
}

/* Builds im->g from the unpacked message im->m (version/kind already checked). */
static trnc_status build(imp *im) {
  const Trnc__Fx__Graph *m = im->m;
  trnc_graph *g = im->g;
  g->name = dup(im, m->name);
  if (!g->name) return nomem(im);
  if (m->n_process_groups) {
    if (m->n_process_groups > 4096)
      return node_err(im, NULL, TRNC_ERR_LIMIT, "graph lists %zu process groups (at most 4096)",
                      m->n_process_groups);
    g->groups = trnc_arena_array(&g->arena, m->n_process_groups, sizeof *g->groups);
    if (!g->groups) return nomem(im);
    for (size_t i = 0; i < m->n_process_groups; i++) {
      const Trnc__Fx__ProcessGroup *pg = m->process_groups[i];
      if (pg->size < 1 || !pg->name || !pg->name[0] ||
          (i && strcmp(m->process_groups[i - 1]->name, pg->name) >= 0))
        return node_err(im, NULL, TRNC_ERR_MALFORMED,
                        "process group %zu ('%.64s', size %d): names must be non-empty, sorted "
                        "and unique, sizes at least 1", i, pg->name ? pg->name : "", pg->size);
      g->groups[i].name = dup(im, pg->name);
      if (!g->groups[i].name) return nomem(im);
      g->groups[i].size = pg->size;
    }
    g->ngroups = (uint32_t)m->n_process_groups;
  }
  uint64_t nvalues = 0;
  for (size_t i = 0; i < m->n_nodes; i++) nvalues += m->nodes[i]->n_outputs;
  if (nvalues >= UINT32_MAX)
    return node_err(im, NULL, TRNC_ERR_LIMIT, "graph has %" PRIu64 " values; the IR holds < 2^32",
                    nvalues);
  g->nnodes = (uint32_t)m->n_nodes;
  if (g->nnodes) {
    g->nodes = trnc_arena_array(&g->arena, g->nnodes, sizeof(trnc_node));
    if (!g->nodes) return nomem(im);
  }
  if (nvalues) {
    g->values = trnc_arena_array(&g->arena, (size_t)nvalues, sizeof(trnc_value));
    if (!g->values) return nomem(im);
  }
  g->nvalues = 0;
  /* With dynamic shapes, dynamo passes SymInt inputs (s0, ...) before the
   * tensors whose dims they are. Name the tensor input and its symbolic dim
   * first: that is what the user can act on. Every input, so that the
   * error lists every symbolic dim at once. */
  trnc_status first = TRNC_OK;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const Trnc__Fx__Node *fn = m->nodes[i];
    if (fn->op != TRNC__FX__NODE_OP__PLACEHOLDER || fn->n_outputs != 1 || !fn->outputs[0])
      continue;
    const Trnc__Fx__SourceLoc *fl = fn->loc; /* where the user first uses the input */
    trnc_node tmp = {.op = TRNC_OP_PLACEHOLDER, .name = fn->name ? fn->name : "", .target = "",
                     .loc = {fl && fl->file ? fl->file : "", fl && fl->line > 0 ? fl->line : 0,
                             fl && fl->code ? fl->code : "", ""}};
    trnc_status st = meta_symbols(im, &tmp, "output 0", fn->outputs[0]);
    if (first == TRNC_OK) first = st;
  }
  if (first != TRNC_OK) return first;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_status st = conv_node(im, i);
    g->nvalues = im->nvalues;
    if (st != TRNC_OK) return st;
  }
  return conv_output(im);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */

/* See include/trnc/trnc.h. Order: size cap, wire pre-scan (nesting, node
 * count), counted unpack, version/kind, build, trnc_graph_verify. */
trnc_status trnc_graph_import(const void *bytes, size_t len, const trnc_import_limits *limits,
                              trnc_graph **out, trnc_diags *diags) {
  if (out) *out = NULL;
  if (!out || (!bytes && len))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_graph_import: NULL %s", out ? "bytes" : "out");
  size_t max_bytes = limits && limits->max_bytes ? limits->max_bytes : TRNC_FX_DEFAULT_MAX_BYTES;
  size_t max_nodes = limits && limits->max_nodes ? limits->max_nodes : TRNC_FX_DEFAULT_MAX_NODES;
  size_t max_allocs =
      limits && limits->max_allocs ? limits->max_allocs : TRNC_FX_DEFAULT_MAX_ALLOCS;
  if (len > max_bytes)
    return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                           "serialized graph is %zu bytes, over the limit of %zu bytes", len,
                           max_bytes);

  size_t nnodes = 0;
  switch (wire_scan(bytes, len, &trnc__fx__graph__descriptor, 0, 4, &nnodes)) {
    case WIRE_OK: break;
    case WIRE_TOO_DEEP:
      return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                             "serialized graph nests messages deeper than %d levels "
                             "(argument lists nested more than %d deep?)",
                             TRNC_FX_MAX_WIRE_DEPTH, TRNC_FX_MAX_ARG_DEPTH);
    default:
      return trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                             "not a trnc.fx.Graph message (bad protobuf wire format)");
  }
  if (nnodes > max_nodes)
    return trnc_diag_error(diags, TRNC_ERR_LIMIT, "graph has %zu nodes, over the limit of %zu",
                           nnodes, max_nodes);

  count_alloc ca = {.max_allocs = max_allocs};
  size_t per = TRNC_FX_UNPACK_BYTES_PER_WIRE_BYTE;
  ca.max_live = len > (SIZE_MAX - TRNC_FX_UNPACK_BYTES_FLOOR) / per
                    ? SIZE_MAX
                    : TRNC_FX_UNPACK_BYTES_FLOOR + len * per;
  ProtobufCAllocator pa = {.alloc = ca_alloc, .free = ca_free, .allocator_data = &ca};
  Trnc__Fx__Graph *m = trnc__fx__graph__unpack(&pa, len, bytes);
  if (!m) {
    if (ca.exceeded)
      return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                             "unpacking the graph needs more than %zu allocations or %zu bytes "
                             "(limits.max_allocs)",
                             ca.max_allocs, ca.max_live);
    return trnc_diag_error(diags, TRNC_ERR_MALFORMED, "not a trnc.fx.Graph message");
  }

  trnc_status st = TRNC_OK;
  trnc_graph *g = NULL;
  if (m->version != TRNC_FX_SCHEMA_VERSION) {
    st = trnc_diag_error(diags, TRNC_ERR_VERSION,
                         "graph has fx schema version %" PRIu32
                         "; this trnc reads version %u (serializer and library are from "
                         "different trnc releases: reinstall trnc)",
                         m->version, TRNC_FX_SCHEMA_VERSION);
    goto done;
  }
  if ((int)m->kind < TRNC_GRAPH_FORWARD || (int)m->kind > TRNC_GRAPH_INFERENCE) {
    st = trnc_diag_error(diags, TRNC_ERR_INVALID_GRAPH,
                         "graph kind %d is not FORWARD, BACKWARD or INFERENCE", (int)m->kind);
    goto done;
  }
  g = trnc_graph_new((trnc_graph_kind)m->kind);
  if (!g) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory while importing the graph");
    goto done;
  }
  imp im = {.g = g, .d = diags, .m = m};
  st = build(&im);
  if (st == TRNC_OK && trnc_graph_verify(g, diags) != TRNC_OK) st = TRNC_ERR_INVALID_GRAPH;

done:
  trnc__fx__graph__free_unpacked(m, &pa);
  if (st != TRNC_OK) {
    trnc_graph_destroy(g);
    return st;
  }
  *out = g;
  return TRNC_OK;
}

