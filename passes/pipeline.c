/*
 * pipeline.c — runs the passes of passes.def in order, verifying the graph
 * after each one and dumping it on request (TRNC_DUMP, TRNC_DUMP_DIR).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dump.h"
#include "passes/passes.h"

typedef struct trnc_pass {
  const char *name;
  trnc_pass_fn fn;
} trnc_pass;

static const trnc_pass passes[] = {
#define PASS(name, fn, doc) {#name, fn},
#include "passes/passes.def"
#undef PASS
};

/* True if `name` is in the comma-separated list `list` (or list is "all"). */
static bool listed(const char *list, const char *name) {
  if (!list || !*list) return false;
  if (!strcmp(list, "all")) return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* TRNC_DUMP=pass,...: the IR after `pass` to stderr; TRNC_DUMP_DIR=dir: to
 * dir/<graph>-<index>-<pass>.ir (ir/dump.h) when `to_dir`. False when the file
 * could not be written (a warning says why). */
static bool dump(const trnc_graph *g, const char *pass, int index, bool to_dir, trnc_diags *d) {
  const char *list = getenv("TRNC_DUMP"), *dir = getenv("TRNC_DUMP_DIR");
  bool to_stderr = listed(list, pass), ok = true;
  to_dir = to_dir && dir && *dir;
  if (!to_stderr && !to_dir) return true;
  char *text = trnc_graph_print(g);
  if (!text) return true;
  if (to_stderr) fprintf(stderr, "// trnc IR after %s\n%s", pass, text);
  if (to_dir) {
    char stage[128];
    snprintf(stage, sizeof stage, "%02d-%s.ir", index, pass);
    ok = trnc_dump_text(g, stage, text, d) == TRNC_OK;
  }
  free(text);
  return ok;
}

trnc_status trnc_graph_legalize(trnc_graph *g, trnc_diags *d) {
  if (!g) return trnc_diag_error(d, TRNC_ERR_INVALID_ARGUMENT, "trnc_graph_legalize: graph is NULL");
  bool to_dir = true; /* one warning per graph when the dump directory fails */
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    trnc_status s = passes[i].fn(g, d);
    if (s) return s;
    s = trnc_graph_verify(g, d);
    if (s)
      return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INTERNAL, NULL, NULL,
                           "internal error: pass '%s' produced an invalid graph (please report "
                           "it with TRNC_DUMP_DIR output)", passes[i].name);
    to_dir = dump(g, passes[i].name, (int)i, to_dir, d) && to_dir;
  }
  return TRNC_OK;
}
