/*
 * key.c — cache key derivation (the list of what goes into a key is the doc
 * comment of trnc_cache_key in include/trnc/cache.h; keep both in sync).
 *
 * The encoding is built in a byte buffer first (every item length-prefixed,
 * little-endian) and hashed with XXH3-128 at once, so the bytes that were
 * hashed are easy to inspect in a debugger.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cache/internal.h"
#include "ir/diag.h"
#include "ir/ir.h"
#include "trnc/neuroncore.h"

#define KEY_TAG "trnc-cache-key-v1"

extern const char trnc_cache_build_id_string[];

const char *trnc_cache_build_id(void) { return trnc_cache_build_id_string; }

/** Growable byte buffer; `failed` latches an allocation failure. */
typedef struct kbuf {
  uint8_t *p;
  size_t n, cap;
  bool failed;
} kbuf;

static void kb_raw(kbuf *b, const void *data, size_t n) {
  if (b->failed || n == 0) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->n + n) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) {
      b->failed = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}

static void kb_le64(kbuf *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
  kb_raw(b, x, 8);
}

/** One item: u64 LE length, then the bytes. */
static void kb_item(kbuf *b, const void *data, size_t n) {
  kb_le64(b, n);
  kb_raw(b, data, n);
}

/** An integer item (length 8, two's complement LE). */
static void kb_int(kbuf *b, int64_t v) {
  kb_le64(b, 8);
  kb_le64(b, (uint64_t)v);
}

static void kb_str(kbuf *b, const char *s) { kb_item(b, s ? s : "", s ? strlen(s) : 0); }

/** The dtype a value has at the torch boundary. */
static trnc_dtype boundary_dtype(const trnc_value *v) {
  return v->torch_dtype ? v->torch_dtype : v->type.dtype;
}

trnc_status trnc_cache_key_ex(const trnc_graph *g, const trnc_compile_options *opt,
                              const int32_t *alias_groups, size_t n_alias,
                              const trnc_cache_key_versions *ver, uint8_t key[16],
                              trnc_diags *diags) {
  if (!g || !key || !ver)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_key: NULL argument");
  memset(key, 0, 16);
  trnc_compile_options o = opt ? *opt : (trnc_compile_options){0};
  const trnc_nc_target *t = o.target && o.target[0] ? trnc_nc_target_by_name(o.target)
                                                    : trnc_nc_target_default(diags);
  if (!t)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_cache_key: unknown target '%s' (known: trn2, trn3)",
                           o.target ? o.target : "");
  size_t ninputs = 0;
  for (uint32_t i = 0; i < g->nnodes; i++) ninputs += g->nodes[i].op == TRNC_OP_PLACEHOLDER;
  if (alias_groups && n_alias != ninputs)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_cache_key: %zu alias groups for %zu inputs", n_alias, ninputs);

  kbuf b = {0};
  kb_str(&b, KEY_TAG);
  uint8_t h[16];
  trnc_graph_hash(g, h);
  kb_item(&b, h, 16);

  kb_int(&b, (int64_t)ninputs);
  size_t idx = 0;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->op != TRNC_OP_PLACEHOLDER) continue;
    const trnc_value *v = &g->values[n->outs[0]];
    const trnc_type *ty = &v->type;
    kb_int(&b, (int64_t)boundary_dtype(v));
    kb_int(&b, ty->rank);
    for (int d = 0; d < ty->rank; d++) kb_int(&b, ty->shape[d]);
    for (int d = 0; d < ty->rank; d++) kb_int(&b, ty->stride[d]);
    kb_int(&b, ty->offset);
    /* alias group: index of the first input with the same group id */
    size_t first = idx;
    if (alias_groups)
      for (size_t j = 0; j < idx; j++)
        if (alias_groups[j] == alias_groups[idx]) {
          first = j;
          break;
        }
    kb_int(&b, (int64_t)first);
    idx++;
  }

  kb_int(&b, g->noutputs);
  for (uint32_t k = 0; k < g->noutputs; k++) {
    bool none = g->outputs[k] == TRNC_NO_REF || g->values[g->outputs[k]].is_none;
    kb_int(&b, none);
    kb_int(&b, none ? 0 : (int64_t)boundary_dtype(&g->values[g->outputs[k]]));
  }

  kb_str(&b, t->name);
  kb_int(&b, o.autocast_bf16);
  kb_int(&b, o.no_fusion);

  kb_str(&b, ver->trnc_version);
  kb_str(&b, ver->build_id);
  kb_int(&b, ver->artifact_format);
  kb_int(&b, ver->program_format);

  if (b.failed) {
    free(b.p);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc_cache_key: out of memory");
  }
  XXH128_hash_t x = XXH3_128bits(b.p, b.n);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, x);
  memcpy(key, c.digest, 16);
  free(b.p);
  return TRNC_OK;
}

trnc_status trnc_cache_key(const trnc_graph *g, const trnc_compile_options *opt,
                           const int32_t *alias_groups, size_t n_alias, uint8_t key[16],
                           trnc_diags *diags) {
  trnc_cache_key_versions v = {trnc_version(), trnc_cache_build_id(),
                               TRNC_ARTIFACT_FORMAT_VERSION, TRNC_NC_PROGRAM_VERSION};
  return trnc_cache_key_ex(g, opt, alias_groups, n_alias, &v, key, diags);
}

void trnc_cache_key_hex(const uint8_t key[16], char out[33]) {
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = hx[key[i] >> 4];
    out[2 * i + 1] = hx[key[i] & 15];
  }
  out[32] = '\0';
}

/** Value of a hex digit, -1 if c is not one. */
static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool trnc_cache_key_parse(const char *hex, uint8_t key[16]) {
  if (!hex || !key) return false;
  for (int i = 0; i < 32; i++)
    if (hexval(hex[i]) < 0) return false;
  if (hex[32] != '\0') return false;
  for (int i = 0; i < 16; i++) key[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
  return true;
}
