#define _XOPEN_SOURCE 700
#include "testutil.h"

#include <ftw.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- files ------------------------------------------------------------------- */

char *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) break;
    cap *= 2;
    char *nb = realloc(buf, cap + 1);
    if (!nb) free(buf);
    buf = nb;
  }
  bool err = ferror(f);
  fclose(f);
  if (!buf || err) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char *tu_path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  p[la] = '/';
  memcpy(p + la + 1, b, lb + 1);
  return p;
}

char **tu_list_files(const char *dir, const char *suffix, size_t *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char **list = NULL;
  size_t cap = 0, sl = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    if (nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0) continue;
    char *path = tu_path_join(dir, e->d_name);
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nl2 = realloc(list, cap * sizeof *list);
      if (!nl2) {
        free(path);
        break;
      }
      list = nl2;
    }
    list[(*n)++] = path;
  }
  closedir(d);
  if (*n) qsort(list, *n, sizeof *list, cmp_str);
  if (!*n) {
    free(list);
    list = NULL;
  }
  return list;
}

void tu_free_list(char **list, size_t n) {
  for (size_t i = 0; i < n; i++) free(list[i]);
  free(list);
}

const char *tu_source_dir(void) {
  const char *s = getenv("TRNC_SOURCE_DIR");
  return s && s[0] ? s : ".";
}

/* ---- diagnostics --------------------------------------------------------------- */

bool tu_diags_have(const trnc_diags *d, const char *substr) {
  for (size_t i = 0; i < trnc_diags_count(d); i++)
    if (strstr(trnc_diags_get(d, i)->message, substr)) return true;
  return false;
}

bool tu_diags_have_node(const trnc_diags *d, trnc_status st, const char *node) {
  for (size_t i = 0; i < trnc_diags_count(d); i++) {
    const trnc_diag *g = trnc_diags_get(d, i);
    if (g->status == st && strcmp(g->node, node) == 0) return true;
  }
  return false;
}

void tu_diags_dump(const trnc_diags *d) {
  char *s = trnc_diags_format(d);
  if (s) fprintf(stderr, "%s", s);
  trnc_free(s);
}

/* ---- fx.proto builder ------------------------------------------------------------ */

struct tu_fx {
  Trnc__Fx__Graph *g;
  void **owned; /* every allocation, freed by tu_fx_free */
  size_t nowned, capowned;
};

void *tu_alloc(tu_fx *b, size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (!p) abort();
  if (b->nowned == b->capowned) {
    b->capowned = b->capowned ? b->capowned * 2 : 64;
    void **o = realloc(b->owned, b->capowned * sizeof *o);
    if (!o) abort();
    b->owned = o;
  }
  b->owned[b->nowned++] = p;
  return p;
}

char *tu_str(tu_fx *b, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  char *p = tu_alloc(b, n + 1);
  memcpy(p, s, n + 1);
  return p;
}

/* Appends item to a builder-owned pointer array (*arr, *n). */
static void push(tu_fx *b, void ***arr, size_t *n, void *item) {
  void **na = tu_alloc(b, (*n + 1) * sizeof(void *));
  if (*n) memcpy(na, *arr, *n * sizeof(void *));
  na[(*n)++] = item;
  *arr = na;
}
#define PUSH(b, arr, n, item) push((b), (void ***)&(arr), &(n), (item))

tu_fx *tu_fx_new(Trnc__Fx__GraphKind kind) {
  tu_fx *b = calloc(1, sizeof *b);
  if (!b) abort();
  b->g = tu_alloc(b, sizeof *b->g);
  trnc__fx__graph__init(b->g);
  b->g->version = 1;
  b->g->kind = kind;
  b->g->name = tu_str(b, "test_graph");
  return b;
}

void tu_fx_free(tu_fx *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nowned; i++) free(b->owned[i]);
  free(b->owned);
  free(b);
}

Trnc__Fx__Graph *tu_fx_graph(tu_fx *b) { return b->g; }

Trnc__Fx__Dim *tu_dim(tu_fx *b, int64_t value, const char *symbol) {
  Trnc__Fx__Dim *d = tu_alloc(b, sizeof *d);
  trnc__fx__dim__init(d);
  d->value = value;
  d->symbol = tu_str(b, symbol);
  return d;
}

Trnc__Fx__TensorMeta *tu_meta(tu_fx *b, Trnc__Fx__DType dt, size_t rank, const int64_t *shape) {
  Trnc__Fx__TensorMeta *m = tu_alloc(b, sizeof *m);
  trnc__fx__tensor_meta__init(m);
  m->dtype = dt;
  m->layout = TRNC__FX__LAYOUT__STRIDED;
  m->device = tu_str(b, "cpu");
  m->torch_dtype = tu_str(b, "");
  int64_t stride = 1;
  Trnc__Fx__Dim **sh = tu_alloc(b, (rank ? rank : 1) * sizeof *sh);
  Trnc__Fx__Dim **st = tu_alloc(b, (rank ? rank : 1) * sizeof *st);
  for (size_t i = rank; i-- > 0;) {
    sh[i] = tu_dim(b, shape[i], NULL);
    st[i] = tu_dim(b, stride, NULL);
    /* Saturate: tests build overflowing shapes on purpose. */
    if (__builtin_mul_overflow(stride, shape[i] > 1 ? shape[i] : 1, &stride)) stride = INT64_MAX;
  }
  m->n_shape = m->n_stride = rank;
  m->shape = sh;
  m->stride = st;
  m->storage_offset = tu_dim(b, 0, NULL);
  return m;
}

Trnc__Fx__TensorMeta *tu_meta_none(tu_fx *b) {
  Trnc__Fx__TensorMeta *m = tu_alloc(b, sizeof *m);
  trnc__fx__tensor_meta__init(m);
  return m;
}

static uint32_t add_node(tu_fx *b, Trnc__Fx__NodeOp op, const char *name, const char *target) {
  Trnc__Fx__Node *n = tu_alloc(b, sizeof *n);
  trnc__fx__node__init(n);
  n->op = op;
  n->name = tu_str(b, name);
  n->target = tu_str(b, target);
  PUSH(b, b->g->nodes, b->g->n_nodes, n);
  return (uint32_t)(b->g->n_nodes - 1);
}

Trnc__Fx__Node *tu_node(tu_fx *b, uint32_t i) { return b->g->nodes[i]; }

void tu_add_output(tu_fx *b, uint32_t node, Trnc__Fx__TensorMeta *m) {
  Trnc__Fx__Node *n = tu_node(b, node);
  PUSH(b, n->outputs, n->n_outputs, m);
  n->outputs_tuple = n->n_outputs > 1;
}

void tu_arg(tu_fx *b, uint32_t node, Trnc__Fx__Arg *a) {
  Trnc__Fx__Node *n = tu_node(b, node);
  PUSH(b, n->args, n->n_args, a);
}

uint32_t tu_placeholder(tu_fx *b, const char *name, Trnc__Fx__TensorMeta *m) {
  uint32_t i = add_node(b, TRNC__FX__NODE_OP__PLACEHOLDER, name, name);
  tu_node(b, i)->placeholder_role = tu_str(b, "input");
  if (m) tu_add_output(b, i, m);
  return i;
}

uint32_t tu_call(tu_fx *b, const char *name, const char *target, Trnc__Fx__TensorMeta *out) {
  uint32_t i = add_node(b, TRNC__FX__NODE_OP__CALL_FUNCTION, name, target);
  if (out) tu_add_output(b, i, out);
  return i;
}

uint32_t tu_get_attr(tu_fx *b, const char *name, Trnc__Fx__TensorMeta *m, const void *data,
                     size_t len) {
  Trnc__Fx__Constant *c = tu_alloc(b, sizeof *c);
  trnc__fx__constant__init(c);
  c->name = tu_str(b, name);
  c->meta = m;
  c->data.len = len;
  c->data.data = tu_alloc(b, len);
  if (len) memcpy(c->data.data, data, len);
  PUSH(b, b->g->constants, b->g->n_constants, c);
  uint32_t i = add_node(b, TRNC__FX__NODE_OP__GET_ATTR, name, name);
  tu_node(b, i)->constant = (uint32_t)(b->g->n_constants - 1);
  tu_add_output(b, i, m);
  return i;
}

void tu_set_loc(tu_fx *b, uint32_t node, const char *file, int line, const char *code) {
  Trnc__Fx__SourceLoc *l = tu_alloc(b, sizeof *l);
  trnc__fx__source_loc__init(l);
  l->file = tu_str(b, file);
  l->line = line;
  l->code = tu_str(b, code);
  l->function = tu_str(b, "forward");
  tu_node(b, node)->loc = l;
}

static Trnc__Fx__Arg *new_arg(tu_fx *b, const char *name, Trnc__Fx__Arg__KindCase k) {
  Trnc__Fx__Arg *a = tu_alloc(b, sizeof *a);
  trnc__fx__arg__init(a);
  a->name = tu_str(b, name);
  a->kind_case = k;
  return a;
}

Trnc__Fx__Arg *tu_a_ref(tu_fx *b, const char *name, uint32_t node, uint32_t output) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_REF);
  a->ref = tu_alloc(b, sizeof *a->ref);
  trnc__fx__node_ref__init(a->ref);
  a->ref->node = node;
  a->ref->output = output;
  return a;
}

Trnc__Fx__Arg *tu_a_int(tu_fx *b, const char *name, int64_t v) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_I);
  a->i = v;
  return a;
}

Trnc__Fx__Arg *tu_a_float(tu_fx *b, const char *name, double v) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_F);
  a->f = v;
  return a;
}

Trnc__Fx__Arg *tu_a_bool(tu_fx *b, const char *name, bool v) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_B);
  a->b = v;
  return a;
}

Trnc__Fx__Arg *tu_a_str(tu_fx *b, const char *name, const char *s) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_S);
  a->s = tu_str(b, s);
  return a;
}

Trnc__Fx__Arg *tu_a_none(tu_fx *b, const char *name) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_NONE);
  a->none = tu_alloc(b, sizeof *a->none);
  trnc__fx__none_value__init(a->none);
  return a;
}

Trnc__Fx__Arg *tu_a_sym(tu_fx *b, const char *name, const char *expr) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_SYM);
  a->sym = tu_str(b, expr);
  return a;
}

Trnc__Fx__Arg *tu_a_dtype(tu_fx *b, const char *name, Trnc__Fx__DType dt) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_DTYPE);
  a->dtype = dt;
  return a;
}

Trnc__Fx__Arg *tu_a_list(tu_fx *b, const char *name, size_t n, Trnc__Fx__Arg **items) {
  Trnc__Fx__Arg *a = new_arg(b, name, TRNC__FX__ARG__KIND_LIST);
  a->list = tu_alloc(b, sizeof *a->list);
  trnc__fx__arg_list__init(a->list);
  for (size_t i = 0; i < n; i++) PUSH(b, a->list->items, a->list->n_items, items[i]);
  return a;
}

Trnc__Fx__Arg *tu_a_ints(tu_fx *b, const char *name, size_t n, const int64_t *v) {
  Trnc__Fx__Arg *a = tu_a_list(b, name, 0, NULL);
  for (size_t i = 0; i < n; i++) PUSH(b, a->list->items, a->list->n_items, tu_a_int(b, "", v[i]));
  return a;
}

static Trnc__Fx__Output *output_msg(tu_fx *b) {
  if (!b->g->output) {
    b->g->output = tu_alloc(b, sizeof *b->g->output);
    trnc__fx__output__init(b->g->output);
  }
  return b->g->output;
}

void tu_output_ref(tu_fx *b, uint32_t node, uint32_t output) {
  Trnc__Fx__Output *o = output_msg(b);
  PUSH(b, o->values, o->n_values, tu_a_ref(b, "", node, output));
}

void tu_output_none(tu_fx *b) {
  Trnc__Fx__Output *o = output_msg(b);
  PUSH(b, o->values, o->n_values, tu_a_none(b, ""));
}

uint8_t *tu_fx_pack(tu_fx *b, size_t *len) {
  size_t n = trnc__fx__graph__get_packed_size(b->g);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) abort();
  *len = trnc__fx__graph__pack(b->g, buf);
  return buf;
}

/* Packs the message; with env TRNC_TEST_DUMP_FX=dir also keeps the bytes
 * in dir/tu_NNNN.pb (fuzz seeds). */
static uint8_t *pack_and_dump(tu_fx *b, size_t *len) {
  uint8_t *buf = tu_fx_pack(b, len);
  const char *dump = getenv("TRNC_TEST_DUMP_FX");
  if (dump && dump[0]) {
    static unsigned seq;
    char path[4096];
    snprintf(path, sizeof path, "%s/tu_%04u.pb", dump, seq++);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(buf, 1, *len, f);
      fclose(f);
    }
  }
  return buf;
}

trnc_status tu_fx_import(tu_fx *b, const trnc_import_limits *limits, trnc_graph **out,
                         trnc_diags *d) {
  size_t len;
  uint8_t *buf = pack_and_dump(b, &len);
  trnc_status st = trnc_graph_import(buf, len, limits, out, d);
  free(buf);
  return st;
}

trnc_status tu_fx_compile(tu_fx *b, const trnc_compile_options *opts, trnc_compiled **out,
                          trnc_diags *d) {
  trnc_pipeline p = {.options = opts};
  p.bytes = pack_and_dump(b, &p.len);
  trnc_status st = trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, d);
  free((void *)p.bytes);
  trnc_graph_destroy(p.graph);
  *out = p.compiled;
  return st;
}

/* ---- scratch directories ---------------------------------------------------------- */

char *tu_tmpdir(const char *prefix) {
  char *t = malloc(strlen(prefix) + 16);
  if (!t) return NULL;
  sprintf(t, "/tmp/%s_XXXXXX", prefix);
  if (mkdtemp(t)) return t;
  free(t);
  return NULL;
}

static int rm_fn(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  chmod(p, 0700);
  return remove(p);
}

void tu_rmtree(char *t) {
  nftw(t, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
  free(t);
}
