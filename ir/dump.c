/*
 * dump.c — TRNC_DUMP_DIR and TRNC_PROFILE file names for one graph (dump.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "ir/dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/diag.h"

static const char *kind_name(trnc_graph_kind k) {
  return k == TRNC_GRAPH_FORWARD ? "forward" : k == TRNC_GRAPH_BACKWARD ? "backward" : "inference";
}

/* "forward graph 3" -> "forward-graph-3": letters, digits, '.' and '_' kept,
 * every other run of characters one '-'; prefixed by the kind when the name
 * does not start with it. */
static void graph_slug(const trnc_graph *g, char *buf, size_t n) {
  const char *kind = kind_name(g->kind), *name = g->name ? g->name : "";
  size_t len = 0;
  if (strncmp(name, kind, strlen(kind)) != 0) len = (size_t)snprintf(buf, n, "%s%s", kind, *name ? "-" : "");
  if (len >= n) len = n - 1;
  bool dash = false;
  for (const char *p = name; *p && len + 2 < n; p++) {
    char c = *p;
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
    if (keep) {
      buf[len++] = c;
      dash = false;
    } else if (!dash && len > 0) {
      buf[len++] = '-';
      dash = true;
    }
  }
  while (len > 0 && buf[len - 1] == '-') len--;
  buf[len] = '\0';
}

/* mkdir -p: 0 on success, else errno. */
static int make_dirs(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return ENAMETOOLONG;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char c = path[i];
    path[i] = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return errno;
    path[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

trnc_status trnc_dump_text(const trnc_graph *g, const char *stage, const char *text, trnc_diags *d) {
  const char *dir = getenv("TRNC_DUMP_DIR");
  if (!dir || !*dir || !g || !stage || !text) return TRNC_OK;
  int err = make_dirs(dir);
  if (err)
    return trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_ERR_IO, NULL, NULL,
                         "TRNC_DUMP_DIR: cannot create directory '%s': %s", dir, strerror(err));
  char slug[256], path[4096];
  graph_slug(g, slug, sizeof slug);
  if ((size_t)snprintf(path, sizeof path, "%s/%s-%s", dir, slug, stage) >= sizeof path)
    return trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_ERR_IO, NULL, NULL,
                         "TRNC_DUMP_DIR: path '%s/%s-%s' is too long", dir, slug, stage);
  FILE *f = fopen(path, "w");
  bool ok = f && fputs(text, f) >= 0;
  if (f && fclose(f) != 0) ok = false;
  if (!ok)
    return trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_ERR_IO, NULL, NULL, "TRNC_DUMP_DIR: cannot write '%s': %s",
                         path, strerror(errno));
  return TRNC_OK;
}

const char *trnc_profile_path(const trnc_graph *g, char *buf, size_t n) {
  const char *env = getenv("TRNC_PROFILE");
  if (!env || !*env || !g || n == 0) return NULL;
  char slug[256];
  graph_slug(g, slug, sizeof slug);
  const char *slash = strrchr(env, '/'), *dot = strrchr(env, '.');
  if (dot && (dot == env || (slash && dot < slash + 2))) dot = NULL; /* ".hidden", "dir/.x" */
  size_t stem = dot ? (size_t)(dot - env) : strlen(env);
  int len = snprintf(buf, n, "%.*s.%s%s", (int)stem, env, slug, dot ? dot : "");
  return len > 0 && (size_t)len < n ? buf : NULL;
}
