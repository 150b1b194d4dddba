#define _POSIX_C_SOURCE 200809L
#include "ir/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each diagnostic owns one malloc'd block holding all of its strings. */
struct trnc_diags {
  trnc_diag *items;
  char **blocks;
  size_t count, cap;
  size_t dropped;
};

trnc_diags *trnc_diags_create(void) { return calloc(1, sizeof(trnc_diags)); }

void trnc_diags_destroy(trnc_diags *d) {
  if (!d) return;
  for (size_t i = 0; i < d->count; i++) free(d->blocks[i]);
  free(d->items);
  free(d->blocks);
  free(d);
}

size_t trnc_diags_count(const trnc_diags *d) { return d ? d->count : 0; }

const trnc_diag *trnc_diags_get(const trnc_diags *d, size_t i) {
  return (d && i < d->count) ? &d->items[i] : NULL;
}

size_t trnc_diags_error_count(const trnc_diags *d) {
  size_t n = 0;
  for (size_t i = 0; d && i < d->count; i++)
    n += d->items[i].severity == TRNC_SEV_ERROR;
  return n;
}

static trnc_status diag_addv(trnc_diags *d, trnc_severity sev, trnc_status code,
                             const trnc_diag_loc *loc, const char *detail,
                             const char *fmt, va_list ap) {
  if (!d) return code;
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const char *strs[6] = {
      loc && loc->node ? loc->node : "",   loc && loc->target ? loc->target : "",
      loc && loc->file ? loc->file : "",   loc && loc->code ? loc->code : "",
      detail ? detail : "",                msg};
  size_t lens[6], total = 0;
  for (int i = 0; i < 6; i++) {
    lens[i] = strlen(strs[i]);
    total += lens[i] + 1;
  }
  if (d->count == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 16;
    trnc_diag *items = realloc(d->items, cap * sizeof *items);
    if (!items) goto drop;
    d->items = items;
    char **blocks = realloc(d->blocks, cap * sizeof *blocks);
    if (!blocks) goto drop;
    d->blocks = blocks;
    d->cap = cap;
  }
  char *block = malloc(total);
  if (!block) goto drop;
  const char *out[6];
  char *p = block;
  for (int i = 0; i < 6; i++) {
    memcpy(p, strs[i], lens[i] + 1);
    out[i] = p;
    p += lens[i] + 1;
  }
  trnc_diag *g = &d->items[d->count];
  g->severity = sev;
  g->status = code;
  g->node = out[0];
  g->target = out[1];
  g->file = out[2];
  g->line = loc ? loc->line : 0;
  g->source = out[3];
  g->detail = out[4];
  g->message = out[5];
  d->blocks[d->count] = block;
  d->count++;
  return code;
drop:
  d->dropped++;
  return code;
}

trnc_status trnc_diag_add(trnc_diags *d, trnc_severity sev, trnc_status code,
                          const trnc_diag_loc *loc, const char *detail,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  trnc_status s = diag_addv(d, sev, code, loc, detail, fmt, ap);
  va_end(ap);
  return s;
}

trnc_status trnc_diag_error(trnc_diags *d, trnc_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  trnc_status s = diag_addv(d, TRNC_SEV_ERROR, code, NULL, NULL, fmt, ap);
  va_end(ap);
  return s;
}

static const char *sev_name(trnc_severity s) {
  switch (s) {
    case TRNC_SEV_ERROR: return "error";
    case TRNC_SEV_WARNING: return "warning";
    default: return "note";
  }
}

char *trnc_diags_format(const trnc_diags *d) {
  size_t cap = 256, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  buf[0] = '\0';
  for (size_t i = 0; d && i <= d->count; i++) {
    char line[4096];
    int n;
    if (i == d->count) {
      if (!d->dropped) break;
      n = snprintf(line, sizeof line, "note: %zu more diagnostics were dropped (out of memory)\n",
                   d->dropped);
    } else {
      const trnc_diag *g = &d->items[i];
      char where[1200] = "";
      if (g->file[0])
        snprintf(where, sizeof where, "%s:%d: ", g->file, g->line);
      n = snprintf(line, sizeof line, "%s: %s%s%s%s%s%s\n", sev_name(g->severity), where,
                   g->node[0] ? "node " : "", g->node, g->node[0] ? ": " : "", g->message,
                   g->detail[0] ? "" : "");
      if (g->detail[0] && n > 0 && (size_t)n < sizeof line - 1) {
        line[n - 1] = '\0';
        n = snprintf(line + n - 1, sizeof line - (size_t)n + 1, " %s\n", g->detail) + n - 1;
      }
    }
    if (n < 0) continue;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (len + (size_t)n + 1 > cap) {
      while (len + (size_t)n + 1 > cap) cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) { free(buf); return NULL; }
      buf = nb;
    }
    memcpy(buf + len, line, (size_t)n + 1);
    len += (size_t)n;
  }
  return buf;
}

void trnc_free(void *p) { free(p); }

trnc_status trnc_diags_add_error(trnc_diags *d, trnc_status code, const char *message) {
  return trnc_diag_add(d, TRNC_SEV_ERROR, code, NULL, NULL, "%s", message ? message : "");
}
