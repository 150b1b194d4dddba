/*
 * hash.c — canonical 128-bit graph hash (XXH3-128).
 *
 * Input to the hash, in order, each field length-prefixed or fixed-width and
 * little-endian: a format tag; the graph kind; for every live node in order:
 * its op (and, for ops outside the table, the FX target string), placeholder
 * role, every schema argument (kind tag then payload; value references as
 * value indices, which depend on graph order but never on FX node names),
 * every output's None flag, dtype, rank, shape, strides, storage offset,
 * layout and nested flag, and a constant's bytes; then the output list.
 * FX node names, schema argument names and source locations are excluded.
 */
#include <string.h>
#include <xxhash.h>

#include "ir/ir.h"

#define HASH_FORMAT_TAG "trnc-ir-hash-v1"

static void put_u64(XXH3_state_t *s, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  XXH3_128bits_update(s, b, 8);
}

static void put_str(XXH3_state_t *s, const char *str) {
  size_t n = str ? strlen(str) : 0;
  put_u64(s, n);
  if (n) XXH3_128bits_update(s, str, n);
}

static void put_arg(XXH3_state_t *s, const trnc_arg *a) {
  put_u64(s, (uint64_t)a->kind);
  switch (a->kind) {
    case TRNC_ARG_VALUE: put_u64(s, a->u.ref); break;
    case TRNC_ARG_INT:
    case TRNC_ARG_LAYOUT:
    case TRNC_ARG_MEMFMT: put_u64(s, (uint64_t)a->u.i); break;
    case TRNC_ARG_FLOAT: {
      uint64_t bits;
      memcpy(&bits, &a->u.f, 8);
      put_u64(s, bits);
      break;
    }
    case TRNC_ARG_BOOL: put_u64(s, a->u.b); break;
    case TRNC_ARG_DTYPE: put_u64(s, (uint64_t)a->u.dtype); break;
    case TRNC_ARG_STR:
    case TRNC_ARG_DEVICE:
    case TRNC_ARG_OTHER: put_str(s, a->u.s); break;
    case TRNC_ARG_LIST:
      put_u64(s, a->is_tuple);
      put_u64(s, a->u.list.n);
      for (uint32_t i = 0; i < a->u.list.n; i++) put_arg(s, &a->u.list.items[i]);
      break;
    case TRNC_ARG_NONE: break;
  }
}

static void put_value(XXH3_state_t *s, const trnc_value *v) {
  put_u64(s, v->is_none);
  if (v->is_none) return;
  const trnc_type *t = &v->type;
  put_u64(s, (uint64_t)t->dtype);
  put_u64(s, t->rank);
  for (int i = 0; i < t->rank; i++) put_u64(s, (uint64_t)t->shape[i]);
  for (int i = 0; i < t->rank; i++) put_u64(s, (uint64_t)t->stride[i]);
  put_u64(s, (uint64_t)t->offset);
  put_u64(s, (uint64_t)v->layout);
  put_u64(s, v->nested);
}

void trnc_graph_hash(const trnc_graph *g, uint8_t out[16]) {
  memset(out, 0, 16);
  if (!g) return;
  XXH3_state_t *s = XXH3_createState();
  if (!s) return;
  XXH3_128bits_reset(s);
  put_str(s, HASH_FORMAT_TAG);
  put_u64(s, (uint64_t)g->kind);
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    put_u64(s, (uint64_t)n->op);
    if (n->op == TRNC_OP_UNKNOWN) put_str(s, n->target);
    if (n->op == TRNC_OP_PLACEHOLDER) put_str(s, n->role);
    put_u64(s, n->nargs);
    for (uint32_t a = 0; a < n->nargs; a++) put_arg(s, &n->args[a]);
    put_u64(s, n->nouts);
    for (uint32_t k = 0; k < n->nouts; k++) put_value(s, &g->values[n->outs[k]]);
    if (n->op == TRNC_OP_CONSTANT) {
      put_u64(s, n->data_len);
      if (n->data_len) XXH3_128bits_update(s, n->data, n->data_len);
    }
  }
  put_u64(s, g->noutputs);
  for (uint32_t k = 0; k < g->noutputs; k++) put_u64(s, g->outputs[k]);
  put_u64(s, g->ngroups);
  for (uint32_t k = 0; k < g->ngroups; k++) {
    put_str(s, g->groups[k].name);
    put_u64(s, (uint64_t)g->groups[k].size);
  }
  XXH128_hash_t h = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  memcpy(out, c.digest, 16);
}
