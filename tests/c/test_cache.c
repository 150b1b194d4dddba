/*
 * test_cache.c — cache/: artifact serialization round trip and hostile
 * artifact bytes; key derivation (every item changes the key, FX node names
 * do not); entry header parsing of hostile bytes (every header bit flipped,
 * payload bit flips, truncation, extension, wrong key); the store (hits
 * from a second instance, corrupt files on disk are misses and are removed,
 * random bytes under a valid name, stats); LRU eviction order; permissions;
 * export/import bundles.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "codegen/neuroncore/artifact.pb-c.h"
#include "cache/internal.h"
#include "codegen/neuroncore/artifact.h"
#include "ir/ir.h"
#include "testutil.h"
#include "trnc/cache.h"
#include "trnc/neuroncore.h"

#define F32 TRNC__FX__DTYPE__FLOAT32
#define BF16 TRNC__FX__DTYPE__BFLOAT16
#define F64 TRNC__FX__DTYPE__FLOAT64
#define FWD TRNC__FX__GRAPH_KIND__FORWARD

/* ---- graphs ---------------------------------------------------------------------- */

/** What the test graph varies: relu(x + y), x:[rows,cols], y:[cols]. */
typedef struct gspec {
  Trnc__Fx__DType dt;
  int64_t rows, cols;
  bool x_transposed;   /* x strides [1, rows] instead of [cols, 1] */
  int64_t x_offset;    /* storage offset of x */
  const char *prefix;  /* FX node name prefix */
} gspec;

static gspec base_spec(void) { return (gspec){F32, 4, 8, false, 0, ""}; }

static const char *nm(tu_fx *b, const gspec *s, const char *n) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s%s", s->prefix, n);
  return tu_str(b, buf);
}

static trnc_graph *build(const gspec *s) {
  tu_fx *b = tu_fx_new(FWD);
  Trnc__Fx__TensorMeta *xm = tu_meta(b, s->dt, 2, (int64_t[]){s->rows, s->cols});
  if (s->x_transposed) {
    xm->stride[0]->value = 1;
    xm->stride[1]->value = s->rows;
  }
  xm->storage_offset->value = s->x_offset;
  uint32_t x = tu_placeholder(b, nm(b, s, "x"), xm);
  uint32_t y = tu_placeholder(b, nm(b, s, "y"), tu_meta(b, s->dt, 1, (int64_t[]){s->cols}));
  uint32_t a = tu_call(b, nm(b, s, "add"), "aten.add.Tensor",
                       tu_meta(b, s->dt, 2, (int64_t[]){s->rows, s->cols}));
  tu_arg(b, a, tu_a_ref(b, "self", x, 0));
  tu_arg(b, a, tu_a_ref(b, "other", y, 0));
  tu_arg(b, a, tu_a_int(b, "alpha", 1));
  uint32_t r = tu_call(b, nm(b, s, "relu"), "aten.relu.default",
                       tu_meta(b, s->dt, 2, (int64_t[]){s->rows, s->cols}));
  tu_arg(b, r, tu_a_ref(b, "self", a, 0));
  tu_output_ref(b, r, 0);
  trnc_diags *d = trnc_diags_create();
  trnc_graph *g = NULL;
  trnc_status st = tu_fx_import(b, NULL, &g, d);
  if (st == TRNC_OK) st = trnc_graph_legalize(g, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  tu_fx_free(b);
  return g;
}

static trnc_compiled *compile_spec(const gspec *s, const trnc_compile_options *o) {
  trnc_graph *g = build(s);
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  trnc_status st = trnc_compile(g, o, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  trnc_graph_destroy(g);
  return c;
}

static trnc_compiled *compile_base(void) {
  gspec s = base_spec();
  return compile_spec(&s, NULL);
}

/* ---- artifact serialization ---------------------------------------------------------- */

static uint8_t *ser(const trnc_compiled *c, size_t *n) {
  uint8_t *b = NULL;
  assert_int_equal(trnc_compiled_serialize(c, &b, n, NULL), TRNC_OK);
  return b;
}

static trnc_compiled *deser(const uint8_t *b, size_t n) {
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  trnc_status st = trnc_compiled_deserialize(b, n, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  return c;
}

/** Runs relu(x + y) for the base spec and checks the numbers. */
static void run_and_check(const trnc_compiled *c) {
  float x[32], y[8], out[32];
  for (int i = 0; i < 32; i++) x[i] = (float)(i % 7) - 3.0f;
  for (int j = 0; j < 8; j++) y[j] = (float)j * 0.5f - 1.0f;
  const void *in[2] = {x, y};
  void *outs[1] = {out};
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_compiled_run(c, in, outs, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  for (int i = 0; i < 32; i++) {
    float e = x[i] + y[i % 8];
    assert_true(out[i] == (e > 0 ? e : 0));
  }
}

static void test_artifact_round_trip(void **state) {
  trnc_compiled *c = compile_base();
  size_t n1, n2;
  uint8_t *b1 = ser(c, &n1);
  trnc_compiled *r = deser(b1, n1);
  assert_true(trnc_nc_program_equal(c->prog, r->prog));
  assert_int_equal(r->ninputs, c->ninputs);
  assert_int_equal(r->noutputs, c->noutputs);
  assert_int_equal(r->nconsts, c->nconsts);
  assert_memory_equal(r->inputs, c->inputs, sizeof(trnc_io) * c->ninputs);
  assert_memory_equal(r->outputs, c->outputs, sizeof(trnc_io) * c->noutputs);
  for (size_t i = 0; i < c->ninputs; i++) {
    assert_int_equal(r->in_bind[i].buffer, c->in_bind[i].buffer);
    assert_int_equal(r->in_bind[i].convert, c->in_bind[i].convert);
    assert_int_equal(r->in_bind[i].device_bytes, c->in_bind[i].device_bytes);
  }
  assert_int_equal(r->scratch_bytes, c->scratch_bytes);
  assert_int_equal(r->report.instructions, c->report.instructions);
  assert_int_equal(r->report.kernels, c->report.kernels);
  assert_true(r->report.est_time_s == c->report.est_time_s);
  assert_string_equal(r->report.target, "trn2");
  assert_true(r->report.compile_s == 0.0);
  /* deterministic: the loaded artifact serializes to the same bytes */
  uint8_t *b2 = ser(r, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(b1, b2, n1);
  /* and a second compile of the same graph gives the same bytes too */
  trnc_compiled *c2 = compile_base();
  size_t n3;
  uint8_t *b3 = ser(c2, &n3);
  assert_int_equal(n1, n3);
  assert_memory_equal(b1, b3, n1);
  run_and_check(r);
  trnc_free(b1);
  trnc_free(b2);
  trnc_free(b3);
  trnc_compiled_destroy(c);
  trnc_compiled_destroy(c2);
  trnc_compiled_destroy(r);
}

/** Unpacks, lets fn modify the message, repacks; returns the new bytes. */
static uint8_t *tamper(const uint8_t *b, size_t n, void (*fn)(Trnc__Cache__Artifact *), size_t *out_n) {
  Trnc__Cache__Artifact *m = trnc__cache__artifact__unpack(NULL, n, b);
  assert_non_null(m);
  fn(m);
  *out_n = trnc__cache__artifact__get_packed_size(m);
  uint8_t *o = malloc(*out_n + 1);
  trnc__cache__artifact__pack(m, o);
  trnc__cache__artifact__free_unpacked(m, NULL);
  return o;
}

static void t_version(Trnc__Cache__Artifact *m) { m->version = 99; }
static void t_extent(Trnc__Cache__Artifact *m) { m->inputs[0]->extent_bytes += 4; }
static void t_stride(Trnc__Cache__Artifact *m) { m->inputs[0]->stride[0] = 1000; }
static void t_rank(Trnc__Cache__Artifact *m) { m->inputs[0]->rank = 9; }
static void t_dtype(Trnc__Cache__Artifact *m) { m->outputs[0]->dtype = 77; }
static void t_buffer(Trnc__Cache__Artifact *m) { m->in_bind[0]->buffer = 1000; }
static void t_copy(Trnc__Cache__Artifact *m) { m->out_bind[0]->copy_of_output = 0; }
static void t_target(Trnc__Cache__Artifact *m) {
  free(m->target);
  m->target = strdup("trn3");
}
static void t_count(Trnc__Cache__Artifact *m) {
  trnc__cache__binding__free_unpacked(m->in_bind[1], NULL);
  m->n_in_bind = 1;
}
static void t_scratch(Trnc__Cache__Artifact *m) { m->scratch_bytes += 1; }
static void t_report(Trnc__Cache__Artifact *m) { m->report->n_engine_instructions = 2; }
static void t_noreport(Trnc__Cache__Artifact *m) {
  trnc__cache__report__free_unpacked(m->report, NULL);
  m->report = NULL;
}
static void t_program(Trnc__Cache__Artifact *m) { m->program.len /= 2; }
/** Replaces the message's program by fn(program) and its scratch size
 *  (free_unpacked frees program.data: the new bytes are malloc'd too). */
static void swap_program(Trnc__Cache__Artifact *m, void (*fn)(trnc_nc_program *)) {
  trnc_nc_program *p = NULL;
  assert_int_equal(trnc_nc_program_deserialize(m->program.data, m->program.len, &p, NULL), TRNC_OK);
  fn(p);
  uint8_t *bytes;
  size_t len;
  assert_int_equal(trnc_nc_program_serialize(p, &bytes, &len), TRNC_OK);
  free(m->program.data);
  m->program.data = bytes;
  m->program.len = len;
  m->scratch_bytes = trnc_nc_program_scratch_bytes(p);
  trnc_nc_program_destroy(p);
}

/* a program that deserializes but breaks a hardware rule */
static void p_verify(trnc_nc_program *p) {
  trnc_nc_instr *in = trnc_nc_kernel_instr_mut(p, 0, 0);
  assert_non_null(in);
  in->engine = TRNC_NC_TENSOR; /* a DMA copy on TensorE */
  in->op = TRNC_NC_OP_DMA_COPY;
}
static void t_verify(Trnc__Cache__Artifact *m) { swap_program(m, p_verify); }

/* a binding that passes the field checks but breaks the run-time contract */
static void t_binding_contract(Trnc__Cache__Artifact *m) {
  m->in_bind[0]->convert = 0;
  m->in_bind[0]->device_dtype = TRNC_BF16; /* zero-copy, yet another device dtype */
}

static void p_long_kernel(trnc_nc_program *p) {
  trnc_nc_instr nop;
  memset(&nop, 0, sizeof nop);
  nop.op = TRNC_NC_OP_NOP;
  nop.engine = TRNC_NC_VECTOR;
  int k = trnc_nc_program_add_kernel(p, "long", 0);
  assert_true(k >= 0);
  for (int i = 0; i <= TRNC_ARTIFACT_MAX_KERNEL_INSTRS; i++)
    assert_int_equal(trnc_nc_kernel_append(p, (size_t)k, &nop), TRNC_OK);
}
/* 8 GiB of scratch behind one 64-byte internal buffer */
static void p_sparse_scratch(trnc_nc_program *p) {
  assert_true(trnc_nc_program_add_buffer(p, "far", TRNC_NC_BUF_INTERNAL, TRNC_F32, 64, INT64_C(8) << 30) >= 0);
}
/* one internal buffer larger than the HBM of a NeuronCore */
static void p_huge_scratch(trnc_nc_program *p) {
  assert_true(trnc_nc_program_add_buffer(p, "huge", TRNC_NC_BUF_INTERNAL, TRNC_F32,
                                         TRNC_ARTIFACT_MAX_SCRATCH_BYTES + 64, 0) >= 0);
}
static void t_long_kernel(Trnc__Cache__Artifact *m) { swap_program(m, p_long_kernel); }
static void t_sparse_scratch(Trnc__Cache__Artifact *m) { swap_program(m, p_sparse_scratch); }
static void t_huge_scratch(Trnc__Cache__Artifact *m) { swap_program(m, p_huge_scratch); }

static void test_artifact_hostile(void **state) {
  trnc_compiled *c = compile_base();
  size_t n;
  uint8_t *b = ser(c, &n);
  struct {
    void (*fn)(Trnc__Cache__Artifact *);
    trnc_status want;
    const char *msg;
  } cases[] = {
      {t_version, TRNC_ERR_VERSION, "format version 99"},
      {t_extent, TRNC_ERR_MALFORMED, "input 0"},
      {t_stride, TRNC_ERR_MALFORMED, "input 0"},
      {t_rank, TRNC_ERR_MALFORMED, "input 0"},
      {t_dtype, TRNC_ERR_MALFORMED, "output 0"},
      {t_buffer, TRNC_ERR_MALFORMED, "input binding 0"},
      {t_copy, TRNC_ERR_MALFORMED, "output binding 0"},
      {t_target, TRNC_ERR_MALFORMED, "target"},
      {t_count, TRNC_ERR_MALFORMED, "counts differ"},
      {t_scratch, TRNC_ERR_MALFORMED, "scratch"},
      {t_report, TRNC_ERR_MALFORMED, "report"},
      {t_noreport, TRNC_ERR_MALFORMED, "report"},
      {t_program, TRNC_ERR_MALFORMED, ""},
      {t_verify, TRNC_ERR_MALFORMED, "hardware verification"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t tn;
    uint8_t *tb = tamper(b, n, cases[i].fn, &tn);
    trnc_diags *d = trnc_diags_create();
    trnc_compiled *r = (trnc_compiled *)1;
    trnc_status st = trnc_compiled_deserialize(tb, tn, &r, d);
    if (st != cases[i].want || !tu_diags_have(d, cases[i].msg)) {
      tu_diags_dump(d);
      fail_msg("case %zu: status %s", i, trnc_status_name(st));
    }
    assert_null(r);
    trnc_diags_destroy(d);
    free(tb);
  }
  /* every truncation and random bytes: an error, never a crash */
  for (size_t cut = 0; cut < n; cut += 1 + cut / 8) {
    trnc_compiled *r = NULL;
    assert_int_not_equal(trnc_compiled_deserialize(b, cut, &r, NULL), TRNC_OK);
    assert_null(r);
  }
  srand(7);
  uint8_t junk[512];
  for (int k = 0; k < 200; k++) {
    size_t len = (size_t)(rand() % (int)sizeof junk);
    for (size_t i = 0; i < len; i++) junk[i] = (uint8_t)rand();
    trnc_compiled *r = NULL;
    trnc_status st = trnc_compiled_deserialize(junk, len, &r, NULL);
    assert_true(st != TRNC_OK || r != NULL);
    trnc_compiled_destroy(r);
  }
  assert_int_equal(trnc_compiled_deserialize(NULL, 4, (trnc_compiled *[]){NULL}, NULL),
                   TRNC_ERR_INVALID_ARGUMENT);
  trnc_free(b);
  trnc_compiled_destroy(c);
}

/** Tampers the base artifact with fn and expects deserialization to fail
 *  with want and a diagnostic containing msg. */
static void expect_rejected(void (*fn)(Trnc__Cache__Artifact *), trnc_status want, const char *msg) {
  trnc_compiled *c = compile_base();
  size_t n, tn;
  uint8_t *b = ser(c, &n);
  uint8_t *tb = tamper(b, n, fn, &tn);
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *r = NULL;
  trnc_status st = trnc_compiled_deserialize(tb, tn, &r, d);
  if (st != want || !tu_diags_have(d, msg)) {
    tu_diags_dump(d);
    fail_msg("status %s, want %s with '%s'", trnc_status_name(st), trnc_status_name(want), msg);
  }
  assert_null(r);
  trnc_diags_destroy(d);
  free(tb);
  trnc_free(b);
  trnc_compiled_destroy(c);
}

/* A binding that breaks the run-time contract is rejected at load time (it
 * used to load and then fail every run as "a trnc bug"). */
static void test_bindings_checked_at_load(void **state) {
  expect_rejected(t_binding_contract, TRNC_ERR_MALFORMED, "zero-copy but has another device dtype");
}

/* What a loaded artifact may declare is bounded: instructions per kernel
 * (the verifier's cost) and scratch bytes (every run allocates and fills
 * them); serializing such an artifact fails the same way. */
static void test_load_limits(void **state) {
  expect_rejected(t_long_kernel, TRNC_ERR_LIMIT, "instructions, over the limit");
  expect_rejected(t_sparse_scratch, TRNC_ERR_LIMIT, "sum of its internal buffers");
  expect_rejected(t_huge_scratch, TRNC_ERR_LIMIT, "limit an artifact may declare");
  trnc_compiled *c = compile_base();
  p_long_kernel(c->prog);
  uint8_t *b = NULL;
  size_t n = 0;
  assert_int_equal(trnc_compiled_serialize(c, &b, &n, NULL), TRNC_ERR_LIMIT);
  assert_null(b);
  trnc_compiled_destroy(c);
}

/* ---- keys ---------------------------------------------------------------------------------- */

static void key_of(const gspec *s, const trnc_compile_options *o, const int32_t *alias,
                   const trnc_cache_key_versions *v, uint8_t key[16]) {
  trnc_graph *g = build(s);
  trnc_cache_key_versions real = {trnc_version(), trnc_cache_build_id(),
                                  TRNC_ARTIFACT_FORMAT_VERSION, TRNC_NC_PROGRAM_VERSION};
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_cache_key_ex(g, o, alias, alias ? 2 : 0, v ? v : &real, key, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  trnc_graph_destroy(g);
}

static void test_key_fields(void **state) {
  unsetenv("TRNC_TARGET");
  gspec s0 = base_spec();
  trnc_compile_options o0 = {"trn2", false, false};
  enum { N = 16 };
  uint8_t k[N][16];
  const char *what[N];
  int n = 0;
  key_of(&s0, &o0, NULL, NULL, k[n]);
  what[n++] = "base";
  gspec s = s0;
  s.dt = BF16;
  key_of(&s, &o0, NULL, NULL, k[n]);
  what[n++] = "dtype";
  s = s0;
  s.rows = 5;
  key_of(&s, &o0, NULL, NULL, k[n]);
  what[n++] = "dim";
  s = s0;
  s.x_transposed = true;
  key_of(&s, &o0, NULL, NULL, k[n]);
  what[n++] = "strides";
  s = s0;
  s.x_offset = 3;
  key_of(&s, &o0, NULL, NULL, k[n]);
  what[n++] = "storage offset";
  key_of(&s0, &o0, (int32_t[]){0, 0}, NULL, k[n]);
  what[n++] = "aliasing";
  trnc_compile_options o = o0;
  o.target = "trn3";
  key_of(&s0, &o, NULL, NULL, k[n]);
  what[n++] = "target";
  o = o0;
  o.autocast_bf16 = true;
  key_of(&s0, &o, NULL, NULL, k[n]);
  what[n++] = "autocast";
  o = o0;
  o.no_fusion = true;
  key_of(&s0, &o, NULL, NULL, k[n]);
  what[n++] = "no_fusion";
  trnc_cache_key_versions v = {trnc_version(), trnc_cache_build_id(), TRNC_ARTIFACT_FORMAT_VERSION,
                               TRNC_NC_PROGRAM_VERSION};
  trnc_cache_key_versions w = v;
  w.trnc_version = "0.0.0-other";
  key_of(&s0, &o0, NULL, &w, k[n]);
  what[n++] = "trnc version";
  w = v;
  w.build_id = "0000000000000000";
  key_of(&s0, &o0, NULL, &w, k[n]);
  what[n++] = "build id";
  w = v;
  w.artifact_format++;
  key_of(&s0, &o0, NULL, &w, k[n]);
  what[n++] = "artifact format";
  w = v;
  w.program_format++;
  key_of(&s0, &o0, NULL, &w, k[n]);
  what[n++] = "program format";
  s = s0;
  s.dt = F64; /* legalized to f32 inside, but the torch dtype differs */
  key_of(&s, &o0, NULL, NULL, k[n]);
  what[n++] = "float64 input";
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (!memcmp(k[i], k[j], 16)) fail_msg("'%s' and '%s' share a key", what[i], what[j]);

  /* what must not change the key */
  uint8_t same[16];
  s = s0;
  s.prefix = "renamed_module_";
  key_of(&s, &o0, NULL, NULL, same);
  assert_memory_equal(same, k[0], 16);
  key_of(&s0, &o0, (int32_t[]){7, 9}, NULL, same); /* distinct groups == no aliasing */
  assert_memory_equal(same, k[0], 16);
  key_of(&s0, &o0, (int32_t[]){4, 4}, NULL, same); /* group numbering is irrelevant */
  assert_memory_equal(same, k[5], 16);
  key_of(&s0, NULL, NULL, NULL, same); /* NULL options resolve to trn2 */
  assert_memory_equal(same, k[0], 16);
  setenv("TRNC_TARGET", "trn3", 1); /* ... or to $TRNC_TARGET */
  key_of(&s0, NULL, NULL, NULL, same);
  assert_memory_equal(same, k[6], 16);
  unsetenv("TRNC_TARGET");
  /* the public function equals _ex with the real versions */
  trnc_graph *g = build(&s0);
  assert_int_equal(trnc_cache_key(g, &o0, NULL, 0, same, NULL), TRNC_OK);
  assert_memory_equal(same, k[0], 16);
  /* argument errors */
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_cache_key(g, &o0, (int32_t[]){0}, 1, same, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_true(tu_diags_have(d, "1 alias groups for 2 inputs"));
  trnc_compile_options bad = {"trn9", false, false};
  assert_int_equal(trnc_cache_key(g, &bad, NULL, 0, same, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_true(tu_diags_have(d, "unknown target 'trn9'"));
  trnc_diags_destroy(d);
  trnc_graph_destroy(g);
  /* build id: 16 hex digits */
  assert_int_equal(strlen(trnc_cache_build_id()), 16);
}

static void test_key_hex(void **state) {
  uint8_t k[16], r[16];
  for (int i = 0; i < 16; i++) k[i] = (uint8_t)(i * 17 + 3);
  char hex[33];
  trnc_cache_key_hex(k, hex);
  assert_int_equal(strlen(hex), 32);
  assert_true(trnc_cache_key_parse(hex, r));
  assert_memory_equal(k, r, 16);
  assert_true(trnc_cache_key_parse("00112233445566778899AABBCCDDEEFF", r));
  assert_int_equal(r[15], 0xff);
  assert_false(trnc_cache_key_parse("0011", r));
  assert_false(trnc_cache_key_parse("00112233445566778899aabbccddeeff0", r));
  assert_false(trnc_cache_key_parse("0011223344556677889gaabbccddeeff", r));
  assert_false(trnc_cache_key_parse(NULL, r));
}

/* ---- entry headers --------------------------------------------------------------------------- */

/** A whole entry file's bytes for artifact bytes p[0..n) under key. */
static uint8_t *make_entry(const uint8_t key[16], const uint8_t *p, size_t n, size_t *len) {
  uint8_t *e = malloc(TRNC_ENTRY_HEADER_BYTES + n);
  trnc_entry_header(key, p, n, e);
  memcpy(e + TRNC_ENTRY_HEADER_BYTES, p, n);
  *len = TRNC_ENTRY_HEADER_BYTES + n;
  return e;
}

static trnc_status check(const uint8_t *e, size_t len, const uint8_t *key) {
  char why[256];
  const uint8_t *p;
  size_t n;
  return trnc_entry_check(e, len, key, NULL, &p, &n, why, sizeof why);
}

static void test_entry_hostile(void **state) {
  trnc_compiled *c = compile_base();
  size_t n, len;
  uint8_t *b = ser(c, &n);
  uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint8_t *e = make_entry(key, b, n, &len);
  assert_int_equal(check(e, len, key), TRNC_OK);
  char why[256];
  uint8_t got[16];
  trnc_compiled *r = NULL;
  assert_int_equal(trnc_entry_load(e, len, NULL, true, got, &r, why, sizeof why), TRNC_OK);
  assert_memory_equal(got, key, 16);
  run_and_check(r);
  trnc_compiled_destroy(r);
  /* every single bit flip in the header */
  for (size_t bit = 0; bit < TRNC_ENTRY_HEADER_BYTES * 8; bit++) {
    e[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    if (check(e, len, key) == TRNC_OK) fail_msg("header bit %zu flipped was accepted", bit);
    e[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
  /* payload bit flips at many places */
  for (size_t pos = TRNC_ENTRY_HEADER_BYTES; pos < len; pos += 1 + (len - pos) / 64) {
    e[pos] ^= 0x10;
    if (check(e, len, key) == TRNC_OK) fail_msg("payload byte %zu flipped was accepted", pos);
    e[pos] ^= 0x10;
  }
  /* truncation at every offset of the header and several of the payload; extension */
  for (size_t cut = 0; cut < len; cut += cut < 80 ? 1 : 97)
    assert_int_equal(check(e, cut, key), TRNC_ERR_MALFORMED);
  uint8_t *ext = malloc(len + 1);
  memcpy(ext, e, len);
  ext[len] = 0;
  assert_int_equal(check(ext, len + 1, key), TRNC_ERR_MALFORMED);
  free(ext);
  /* wrong key */
  uint8_t other[16] = {0};
  assert_int_equal(check(e, len, other), TRNC_ERR_MALFORMED);
  /* a future version with a valid header checksum is a version error */
  uint8_t *v2 = make_entry(key, b, n, &len);
  v2[8] = TRNC_ARTIFACT_FORMAT_VERSION + 1;
  /* recompute the header checksum as a newer writer would */
  trnc_entry_header(key, b, n, e); /* e: pristine header again */
  {
    uint8_t h[TRNC_ENTRY_HEADER_BYTES];
    memcpy(h, v2, sizeof h);
    XXH64_hash_t x = XXH3_64bits(h, 56);
    for (int i = 0; i < 8; i++) v2[56 + i] = (uint8_t)(x >> (8 * i));
  }
  assert_int_equal(check(v2, len, key), TRNC_ERR_VERSION);
  free(v2);
  /* random headers */
  srand(11);
  uint8_t junk[TRNC_ENTRY_HEADER_BYTES + 32];
  for (int k = 0; k < 2000; k++) {
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
    if (k & 1) memcpy(junk, TRNC_ENTRY_MAGIC, 8);
    assert_int_not_equal(check(junk, sizeof junk, NULL), TRNC_OK);
  }
  /* a valid header around bytes that are not an artifact */
  uint8_t *bogus = make_entry(key, (const uint8_t *)"not an artifact", 15, &len);
  assert_int_equal(check(bogus, len, key), TRNC_OK);
  assert_int_equal(trnc_entry_load(bogus, len, key, true, NULL, NULL, why, sizeof why), TRNC_ERR_MALFORMED);
  free(bogus);
  free(e);
  trnc_free(b);
  trnc_compiled_destroy(c);
}

/* ---- the store ---------------------------------------------------------------------------------- */

static char *tmpdir(void) {
  char *t = tu_tmpdir("trnc_test_cache");
  assert_non_null(t);
  return t;
}
static void rmtree(char *t) { tu_rmtree(t); }

static trnc_cache *open_at(const char *dir, uint64_t max) {
  trnc_cache_config cfg = {dir, max};
  trnc_cache *c = NULL;
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_cache_open(&cfg, &c, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
  return c;
}

static void key_n(uint8_t key[16], int i) {
  memset(key, 0xa5, 16);
  key[0] = (uint8_t)i;
  key[1] = (uint8_t)(i * 7);
}

static void entry_file(trnc_cache *c, const uint8_t key[16], char *out, size_t n) {
  char hex[33];
  trnc_cache_key_hex(key, hex);
  snprintf(out, n, "%s/%.2s/%.2s/%s.trnc", trnc_cache_dir(c), hex, hex + 2, hex);
}

static bool exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

/** get() on a fresh instance (so the disk is read); returns hit. */
static bool disk_get(const char *dir, const uint8_t key[16], const char *want_warning) {
  trnc_cache *c = open_at(dir, 0);
  trnc_diags *d = trnc_diags_create();
  const trnc_compiled *a = NULL;
  assert_int_equal(trnc_cache_get(c, key, &a, d), TRNC_OK);
  if (want_warning && !tu_diags_have(d, want_warning)) {
    tu_diags_dump(d);
    fail_msg("no warning '%s'", want_warning);
  }
  if (a) run_and_check(a);
  trnc_cache_stats s;
  trnc_cache_get_stats(c, false, &s);
  assert_int_equal(s.hits + s.misses, 1);
  assert_int_equal(s.corrupt, want_warning ? 1 : 0);
  trnc_diags_destroy(d);
  trnc_cache_destroy(c);
  return a != NULL;
}

static void write_file(const char *p, const uint8_t *b, size_t n) {
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, b, n), (ssize_t)n);
  close(fd);
}

static void test_store_hit_and_corruption(void **state) {
  char *dir = tmpdir();
  char sub[512];
  snprintf(sub, sizeof sub, "%s/a/b/cache", dir); /* created with parents, 0700 */
  trnc_cache *c = open_at(sub, 0);
  struct stat st;
  assert_int_equal(stat(sub, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  uint8_t key[16];
  key_n(key, 1);
  const trnc_compiled *a = NULL;
  assert_int_equal(trnc_cache_get(c, key, &a, NULL), TRNC_OK);
  assert_null(a);
  trnc_compiled *art = compile_base();
  const trnc_compiled *kept = NULL;
  assert_int_equal(trnc_cache_put(c, key, art, &kept, NULL), TRNC_OK);
  assert_ptr_equal(kept, art);
  assert_int_equal(trnc_cache_get(c, key, &a, NULL), TRNC_OK); /* in-process table */
  assert_ptr_equal(a, art);
  trnc_cache_stats s;
  trnc_cache_get_stats(c, true, &s);
  assert_int_equal(s.hits, 1);
  assert_int_equal(s.memory_hits, 1);
  assert_int_equal(s.misses, 1);
  assert_int_equal(s.stores, 1);
  assert_int_equal(s.entries, 1);
  assert_int_equal(s.temp_files, 0);
  assert_int_equal(s.total_hits, 1);
  char path[1024];
  entry_file(c, key, path, sizeof path);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  trnc_cache_destroy(c);
  assert_true(disk_get(sub, key, NULL));

  size_t len;
  uint8_t *good = (uint8_t *)tu_read_file(path, &len);
  assert_non_null(good);
  /* truncated at several offsets */
  size_t cuts[] = {0, 1, 8, 40, 63, 64, 65, len / 2, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    write_file(path, good, cuts[i]);
    assert_false(disk_get(sub, key, "removed a corrupt entry"));
    assert_false(exists(path));
  }
  /* one bit flipped in the header, one in the payload */
  size_t flips[] = {3, 20, 35, 45, 60, 64, len / 2, len - 1};
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    good[flips[i]] ^= 4;
    write_file(path, good, len);
    good[flips[i]] ^= 4;
    assert_false(disk_get(sub, key, "removed a corrupt entry"));
    assert_false(exists(path));
  }
  /* random bytes under a valid name */
  uint8_t *junk = malloc(len);
  srand(3);
  for (size_t i = 0; i < len; i++) junk[i] = (uint8_t)rand();
  write_file(path, junk, len);
  assert_false(disk_get(sub, key, "removed a corrupt entry"));
  assert_false(exists(path));
  /* another key's valid entry under this name */
  uint8_t other[16];
  key_n(other, 2);
  memcpy(junk, good, len);
  memcpy(junk + 16, other, 16);
  trnc_entry_header(other, good + 64, len - 64, junk);
  write_file(path, junk, len);
  assert_false(disk_get(sub, key, "another key"));
  assert_false(exists(path));
  /* a symlink under an entry name is removed, its target untouched */
  char target[1024];
  snprintf(target, sizeof target, "%s/outside", dir);
  write_file(target, good, len);
  assert_int_equal(symlink(target, path), 0);
  assert_false(disk_get(sub, key, "removed a corrupt entry"));
  assert_false(exists(path));
  assert_true(exists(target));
  /* the pristine bytes still load */
  write_file(path, good, len);
  assert_true(disk_get(sub, key, NULL));
  free(junk);
  free(good);
  rmtree(dir);
}

/** Stores artifact copies under keys 0..n-1 with mtimes base+i seconds. */
static void fill(trnc_cache *c, int n, const uint8_t *ab, size_t an) {
  for (int i = 0; i < n; i++) {
    uint8_t key[16];
    key_n(key, i);
    assert_int_equal(trnc_cache_put(c, key, deser(ab, an), NULL, NULL), TRNC_OK);
    char p[1024];
    entry_file(c, key, p, sizeof p);
    struct timespec ts[2] = {{1000000 + i, 0}, {1000000 + i, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
  }
}

static void test_eviction_order(void **state) {
  char *dir = tmpdir();
  trnc_compiled *art = compile_base();
  size_t an;
  uint8_t *ab = ser(art, &an);
  trnc_compiled_destroy(art);
  trnc_cache *c = open_at(dir, 0);
  fill(c, 6, ab, an);
  trnc_cache_destroy(c);
  /* a hit (fresh instance: from disk) makes key 0 the most recently used */
  uint8_t k0[16];
  key_n(k0, 0);
  assert_true(disk_get(dir, k0, NULL));
  c = open_at(dir, 0);
  trnc_cache_entry *e;
  size_t n;
  assert_int_equal(trnc_cache_list(c, &e, &n, NULL), TRNC_OK);
  assert_int_equal(n, 6);
  uint64_t one = e[0].bytes;
  int order[6] = {1, 2, 3, 4, 5, 0};
  for (int i = 0; i < 6; i++) {
    uint8_t k[16];
    key_n(k, order[i]);
    assert_memory_equal(e[i].key, k, 16);
  }
  trnc_free(e);
  /* prune to 3.5 entries: the 3 least recently used go (1, 2, 3) */
  size_t removed;
  uint64_t freed;
  assert_int_equal(trnc_cache_prune(c, one * 3 + one / 2, &removed, &freed, NULL), TRNC_OK);
  assert_int_equal(removed, 3);
  assert_int_equal(freed, one * 3);
  assert_int_equal(trnc_cache_list(c, &e, &n, NULL), TRNC_OK);
  assert_int_equal(n, 3);
  int left[3] = {4, 5, 0};
  for (int i = 0; i < 3; i++) {
    uint8_t k[16];
    key_n(k, left[i]);
    assert_memory_equal(e[i].key, k, 16);
  }
  trnc_free(e);
  trnc_cache_stats s;
  trnc_cache_get_stats(c, false, &s);
  assert_int_equal(s.evictions, 3);
  trnc_cache_destroy(c);

  /* the size bound applies on store: max = 4 entries; storing 6 trims to
   * 90% of the bound (3 entries), dropping the oldest */
  assert_int_equal(trnc_cache_clear((c = open_at(dir, one * 4)), NULL, NULL), TRNC_OK);
  for (int i = 0; i < 6; i++) {
    uint8_t key[16];
    key_n(key, 10 + i);
    assert_int_equal(trnc_cache_put(c, key, deser(ab, an), NULL, NULL), TRNC_OK);
    char p[1024];
    entry_file(c, key, p, sizeof p);
    struct timespec ts[2] = {{2000000 + i, 0}, {2000000 + i, 0}};
    utimensat(AT_FDCWD, p, ts, 0);
  }
  assert_int_equal(trnc_cache_list(c, &e, &n, NULL), TRNC_OK);
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) total += e[i].bytes;
  assert_true(total <= one * 4);
  uint8_t newest[16];
  key_n(newest, 15);
  assert_memory_equal(e[n - 1].key, newest, 16);
  trnc_free(e);
  trnc_cache_get_stats(c, false, &s);
  assert_true(s.evictions >= 2);
  trnc_cache_destroy(c);
  trnc_free(ab);
  rmtree(dir);
}

static void test_permissions(void **state) {
  char *dir = tmpdir();
  char p[512];
  snprintf(p, sizeof p, "%s/shared", dir);
  assert_int_equal(mkdir(p, 0700), 0);
  assert_int_equal(chmod(p, 0770), 0);
  trnc_cache_config cfg = {p, 0};
  trnc_cache *c = (trnc_cache *)1;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_cache_open(&cfg, &c, d), TRNC_ERR_IO);
  assert_null(c);
  assert_true(tu_diags_have(d, "writable by group or others"));
  assert_int_equal(trnc_diags_get(d, 0)->severity, TRNC_SEV_WARNING);
  assert_int_equal(trnc_diags_error_count(d), 0);
  assert_int_equal(chmod(p, 0702), 0);
  assert_int_equal(trnc_cache_open(&cfg, &c, d), TRNC_ERR_IO);
  /* a file where the directory should be */
  snprintf(p, sizeof p, "%s/file", dir);
  write_file(p, (const uint8_t *)"x", 1);
  cfg.dir = p;
  assert_int_equal(trnc_cache_open(&cfg, &c, d), TRNC_ERR_IO);
  trnc_diags_destroy(d);
  /* env: TRNC_CACHE_DIR and TRNC_CACHE_MAX_BYTES */
  snprintf(p, sizeof p, "%s/env", dir);
  setenv("TRNC_CACHE_DIR", p, 1);
  setenv("TRNC_CACHE_MAX_BYTES", "3M", 1);
  assert_int_equal(trnc_cache_open(NULL, &c, NULL), TRNC_OK);
  assert_int_equal(trnc_cache_max_bytes(c), 3u << 20);
  assert_non_null(strstr(trnc_cache_dir(c), "/env"));
  trnc_cache_destroy(c);
  setenv("TRNC_CACHE_MAX_BYTES", "lots", 1);
  assert_int_equal(trnc_cache_open(NULL, &c, NULL), TRNC_ERR_INVALID_ARGUMENT);
  unsetenv("TRNC_CACHE_MAX_BYTES");
  unsetenv("TRNC_CACHE_DIR");
  c = open_at(p, 0);
  assert_int_equal(trnc_cache_max_bytes(c), TRNC_CACHE_DEFAULT_MAX_BYTES);
  trnc_cache_destroy(c);
  rmtree(dir);
}

static void test_verify_clear_bundle(void **state) {
  char *dir = tmpdir();
  char store[512], bundle[512];
  snprintf(store, sizeof store, "%s/s", dir);
  snprintf(bundle, sizeof bundle, "%s/b.bundle", dir);
  trnc_compiled *art = compile_base();
  size_t an;
  uint8_t *ab = ser(art, &an);
  trnc_compiled_destroy(art);
  trnc_cache *c = open_at(store, 0);
  fill(c, 4, ab, an);
  /* one bad entry, and debris of a killed writer */
  uint8_t k9[16];
  key_n(k9, 9);
  char p[1024], t[1024];
  entry_file(c, k9, p, sizeof p);
  assert_int_equal(trnc_cache_put(c, k9, deser(ab, an), NULL, NULL), TRNC_OK);
  write_file(p, (const uint8_t *)"garbage", 7);
  snprintf(t, sizeof t, "%.*s/.tmp-debris", (int)(strrchr(p, '/') - p), p);
  write_file(t, (const uint8_t *)"half", 4);
  size_t good, bad;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_cache_verify(c, false, &good, &bad, d), TRNC_OK);
  assert_int_equal(good, 4);
  assert_int_equal(bad, 1);
  assert_true(tu_diags_have(d, "bad entry"));
  assert_true(exists(p));
  trnc_cache_stats s;
  trnc_cache_get_stats(c, true, &s);
  assert_int_equal(s.entries, 5);
  assert_int_equal(s.temp_files, 1);
  /* export skips the bad entry */
  size_t count;
  assert_int_equal(trnc_cache_export(c, bundle, &count, d), TRNC_OK);
  assert_int_equal(count, 4);
  assert_int_equal(trnc_cache_verify(c, true, &good, &bad, d), TRNC_OK);
  assert_int_equal(bad, 1);
  assert_false(exists(p));
  size_t removed;
  assert_int_equal(trnc_cache_clear(c, &removed, d), TRNC_OK);
  assert_int_equal(removed, 4);
  assert_false(exists(t));
  trnc_cache_get_stats(c, true, &s);
  assert_int_equal(s.entries, 0);
  /* import restores the 4 entries, each verified */
  size_t imported, rejected;
  assert_int_equal(trnc_cache_import(c, bundle, &imported, &rejected, d), TRNC_OK);
  assert_int_equal(imported, 4);
  assert_int_equal(rejected, 0);
  assert_int_equal(trnc_cache_verify(c, false, &good, &bad, d), TRNC_OK);
  assert_int_equal(good, 4);
  assert_int_equal(bad, 0);
  trnc_cache_destroy(c);
  uint8_t k1[16];
  key_n(k1, 1);
  assert_true(disk_get(store, k1, NULL));
  /* a bundle with one corrupted record: that record is rejected */
  size_t blen;
  uint8_t *bb = (uint8_t *)tu_read_file(bundle, &blen);
  bb[24 + 8 + 64 + 10] ^= 1; /* payload byte of the first record */
  write_file(bundle, bb, blen);
  c = open_at(store, 0);
  assert_int_equal(trnc_cache_clear(c, NULL, d), TRNC_OK);
  assert_int_equal(trnc_cache_import(c, bundle, &imported, &rejected, d), TRNC_OK);
  assert_int_equal(imported, 3);
  assert_int_equal(rejected, 1);
  /* truncated bundle, not a bundle */
  write_file(bundle, bb, blen - 5);
  assert_int_equal(trnc_cache_import(c, bundle, &imported, &rejected, d), TRNC_ERR_MALFORMED);
  write_file(bundle, (const uint8_t *)"hello", 5);
  assert_int_equal(trnc_cache_import(c, bundle, &imported, &rejected, d), TRNC_ERR_MALFORMED);
  trnc_cache_destroy(c);
  trnc_diags_destroy(d);
  free(bb);
  trnc_free(ab);
  rmtree(dir);
}

/* ---- trust, debris, counters ---------------------------------------------------------- */

#define OTHER_UID 12345 /* root (CI) can chown to it; the cache's user is geteuid() */

/** get() on a fresh instance that must miss with a warning containing want
 *  (not counted as corrupt: the entry is left alone). */
static void untrusted_miss(const char *dir, const uint8_t key[16], const char *want) {
  trnc_cache *c = open_at(dir, 0);
  trnc_diags *d = trnc_diags_create();
  const trnc_compiled *a = (const trnc_compiled *)1;
  assert_int_equal(trnc_cache_get(c, key, &a, d), TRNC_OK);
  if (a || !tu_diags_have(d, want)) {
    tu_diags_dump(d);
    fail_msg("%s: %s", a ? "a hit" : "no warning", want);
  }
  assert_int_equal(trnc_diags_count(d), 1);
  trnc_cache_stats s;
  trnc_cache_get_stats(c, false, &s);
  assert_int_equal(s.misses, 1);
  assert_int_equal(s.corrupt, 0);
  trnc_diags_destroy(d);
  trnc_cache_destroy(c);
}

/* Every directory and file on an entry's path is checked (owner, mode, no
 * symlinks), not only the top directory: planted entries with valid
 * checksums are misses with one warning, and are never removed. */
static void test_untrusted_paths(void **state) {
  char *dir = tmpdir();
  char store[512], shard[1024], path[1024], moved[1024];
  snprintf(store, sizeof store, "%s/s", dir);
  trnc_cache *c = open_at(store, 0);
  uint8_t key[16];
  key_n(key, 3);
  assert_int_equal(trnc_cache_put(c, key, compile_base(), NULL, NULL), TRNC_OK);
  entry_file(c, key, path, sizeof path);
  snprintf(shard, sizeof shard, "%.*s", (int)(strrchr(path, '/') - path), path);
  trnc_cache_destroy(c);
  assert_true(disk_get(store, key, NULL));
  bool root = geteuid() == 0;
  /* the entry file: another user's, or writable by others */
  if (root) {
    assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
    untrusted_miss(store, key, "owned by another user");
    assert_true(exists(path));
    assert_int_equal(chown(path, 0, 0), 0);
  }
  assert_int_equal(chmod(path, 0666), 0);
  untrusted_miss(store, key, "writable by group or others");
  assert_true(exists(path));
  assert_int_equal(chmod(path, 0600), 0);
  /* the shard directories: another user's, or writable by others */
  char l1[1024];
  snprintf(l1, sizeof l1, "%.*s", (int)(strrchr(shard, '/') - shard), shard);
  const char *dirs[2] = {l1, shard};
  for (int i = 0; i < 2; i++) {
    if (root) {
      assert_int_equal(chown(dirs[i], OTHER_UID, OTHER_UID), 0);
      untrusted_miss(store, key, "owned by another user");
      assert_int_equal(chown(dirs[i], 0, 0), 0);
    }
    assert_int_equal(chmod(dirs[i], 0777), 0);
    untrusted_miss(store, key, "writable by group or others");
    assert_int_equal(chmod(dirs[i], 0700), 0);
  }
  assert_true(disk_get(store, key, NULL));
  /* a shard directory that is a symlink to a directory elsewhere */
  snprintf(moved, sizeof moved, "%s/elsewhere", dir);
  assert_int_equal(rename(shard, moved), 0);
  assert_int_equal(symlink(moved, shard), 0);
  untrusted_miss(store, key, "symbolic link");
  /* nothing is written, listed, removed or cleared through it */
  c = open_at(store, 0);
  trnc_diags *d = trnc_diags_create();
  uint8_t k2[16];
  memcpy(k2, key, 16);
  k2[15] ^= 1; /* same shard */
  assert_int_equal(trnc_cache_put(c, k2, compile_base(), NULL, d), TRNC_ERR_IO);
  assert_true(tu_diags_have(d, "symbolic link"));
  size_t good, bad;
  assert_int_equal(trnc_cache_verify(c, true, &good, &bad, d), TRNC_OK);
  assert_int_equal(good, 0);
  assert_int_equal(bad, 1);
  assert_int_equal(trnc_cache_clear(c, NULL, d), TRNC_OK);
  assert_int_equal(trnc_cache_remove(c, key, d), TRNC_ERR_IO);
  trnc_diags_destroy(d);
  trnc_cache_destroy(c);
  char inside[2100];
  snprintf(inside, sizeof inside, "%s/%s", moved, strrchr(path, '/') + 1);
  assert_true(exists(inside));
  rmtree(dir);
}

static uint64_t bytes_read_so_far(void) {
  size_t n;
  char *io = tu_read_file("/proc/self/io", &n);
  assert_non_null(io);
  const char *r = strstr(io, "rchar:");
  assert_non_null(r);
  uint64_t v = strtoull(r + 6, NULL, 10);
  free(io);
  return v;
}

/* A large file under an entry name is rejected by its header alone: its
 * payload is never read. */
static void test_header_read_first(void **state) {
  char *dir = tmpdir();
  trnc_cache *c = open_at(dir, 0);
  uint8_t key[16];
  key_n(key, 4);
  assert_int_equal(trnc_cache_put(c, key, compile_base(), NULL, NULL), TRNC_OK);
  char path[1024];
  entry_file(c, key, path, sizeof path);
  trnc_cache_destroy(c);
  write_file(path, (const uint8_t *)"this is no trnc cache entry header", 34);
  assert_int_equal(truncate(path, 64 << 20), 0); /* 64 MiB, sparse */
  uint64_t before = bytes_read_so_far();
  assert_false(disk_get(dir, key, "bad magic"));
  uint64_t read = bytes_read_so_far() - before;
  if (read > (1u << 20)) fail_msg("%" PRIu64 " bytes read to reject a bad header", read);
  assert_false(exists(path));
  rmtree(dir);
}

/** The host part of temporary and stats file names, as the cache makes it. */
static void host_name(char out[64]) {
  if (gethostname(out, 63) != 0 || !out[0]) strcpy(out, "host");
  out[63] = '\0';
  for (char *p = out; *p; p++)
    if (*p == '/' || *p == '.') *p = '_';
}

/* A killed writer's temporary file is removed by the next store into its
 * shard directory (its pid is dead, on this host); a live writer's and
 * another host's stay. */
static void test_dead_writer_temps(void **state) {
  char *dir = tmpdir();
  trnc_cache *c = open_at(dir, 0);
  uint8_t key[16];
  key_n(key, 5);
  assert_int_equal(trnc_cache_put(c, key, compile_base(), NULL, NULL), TRNC_OK);
  char path[1024], host[64], hex[33], dead[1100], live[1100], other[1100];
  entry_file(c, key, path, sizeof path);
  host_name(host);
  trnc_cache_key_hex(key, hex);
  pid_t child = fork();
  if (child == 0) _exit(0);
  assert_true(child > 0);
  assert_int_equal(waitpid(child, NULL, 0), child);
  int plen = (int)(strrchr(path, '/') - path);
  snprintf(dead, sizeof dead, "%.*s/.tmp-%s-%ld-0-0123456789abcdef-%s", plen, path, hex, (long)child, host);
  snprintf(live, sizeof live, "%.*s/.tmp-%s-%ld-0-0123456789abcdef-%s", plen, path, hex, (long)getpid(), host);
  snprintf(other, sizeof other, "%.*s/.tmp-%s-%ld-0-0123456789abcdef-%s-elsewhere", plen, path, hex,
           (long)child, host);
  write_file(dead, (const uint8_t *)"half", 4);
  write_file(live, (const uint8_t *)"half", 4);
  write_file(other, (const uint8_t *)"half", 4);
  uint8_t k2[16];
  memcpy(k2, key, 16);
  k2[15] ^= 1; /* the next store, into the same shard */
  assert_int_equal(trnc_cache_put(c, k2, compile_base(), NULL, NULL), TRNC_OK);
  assert_false(exists(dead));
  assert_true(exists(live));
  assert_true(exists(other));
  trnc_cache_destroy(c);
  rmtree(dir);
}

/* The persisted counters follow the truth within a few events, so a
 * process killed right after its lookups loses at most 3 of them. */
static void test_counters_flushed_often(void **state) {
  char *dir = tmpdir();
  trnc_cache *c = open_at(dir, 0);
  for (int i = 0; i < 10; i++) {
    uint8_t key[16];
    const trnc_compiled *a;
    key_n(key, 100 + i);
    assert_int_equal(trnc_cache_get(c, key, &a, NULL), TRNC_OK);
    assert_null(a);
  }
  trnc_cache *reader = open_at(dir, 0); /* another process's view: c is not flushed */
  trnc_cache_stats s;
  trnc_cache_get_stats(reader, true, &s);
  if (s.total_misses < 10 - 3) fail_msg("%" PRIu64 " of 10 misses persisted", s.total_misses);
  trnc_cache_destroy(reader);
  trnc_cache_destroy(c);
  rmtree(dir);
}

/* An entry whose artifact failed to run can be removed: the file goes, the
 * next lookup misses, the artifact handed out stays valid. */
static void test_remove(void **state) {
  char *dir = tmpdir();
  trnc_cache *c = open_at(dir, 0);
  uint8_t key[16];
  key_n(key, 6);
  const trnc_compiled *kept = NULL, *a = NULL;
  assert_int_equal(trnc_cache_put(c, key, compile_base(), &kept, NULL), TRNC_OK);
  char path[1024];
  entry_file(c, key, path, sizeof path);
  assert_int_equal(trnc_cache_remove(c, key, NULL), TRNC_OK);
  assert_false(exists(path));
  assert_int_equal(trnc_cache_get(c, key, &a, NULL), TRNC_OK);
  assert_null(a);
  run_and_check(kept);
  assert_int_equal(trnc_cache_remove(c, key, NULL), TRNC_OK); /* no entry: fine */
  assert_int_equal(trnc_cache_put(c, key, compile_base(), &a, NULL), TRNC_OK);
  assert_true(exists(path));
  trnc_cache_destroy(c);
  rmtree(dir);
}

/* Entry bytes shipped from one store to another (MegaCache, remote cache):
 * the receiver checks everything and refuses a wrong key. */
static void test_entry_bytes_and_put_entry(void **state) {
  char *dir = tmpdir();
  char da[512], db[512];
  snprintf(da, sizeof da, "%s/a", dir);
  snprintf(db, sizeof db, "%s/b", dir);
  trnc_cache *a = open_at(da, 0), *b = open_at(db, 0);
  uint8_t key[16], other[16], got[16];
  key_n(key, 7);
  key_n(other, 8);
  uint8_t *bytes = (uint8_t *)"x";
  size_t len = 1;
  assert_int_equal(trnc_cache_entry_bytes(a, key, &bytes, &len, NULL), TRNC_OK);
  assert_null(bytes);
  assert_int_equal(len, 0);
  assert_int_equal(trnc_cache_put(a, key, compile_base(), NULL, NULL), TRNC_OK);
  assert_int_equal(trnc_cache_entry_bytes(a, key, &bytes, &len, NULL), TRNC_OK);
  assert_non_null(bytes);
  assert_true(len > TRNC_ENTRY_HEADER_BYTES && len <= TRNC_CACHE_ENTRY_MAX_BYTES);
  assert_memory_equal(bytes, TRNC_ENTRY_MAGIC, 8);

  trnc_diags *d = trnc_diags_create();
  const trnc_compiled *art = NULL;
  assert_int_equal(trnc_cache_put_entry(b, bytes, len, other, got, &art, d), TRNC_ERR_MALFORMED);
  assert_null(art);
  assert_int_equal(trnc_diags_count(d), 1);
  assert_int_equal(trnc_diags_get(d, 0)->severity, TRNC_SEV_WARNING);
  bytes[len - 1] ^= 1;
  assert_int_equal(trnc_cache_put_entry(b, bytes, len, NULL, got, &art, d), TRNC_ERR_MALFORMED);
  bytes[len - 1] ^= 1;
  assert_int_equal(trnc_cache_put_entry(b, bytes, TRNC_ENTRY_HEADER_BYTES - 1, NULL, got, &art,
                                        d), TRNC_ERR_MALFORMED);
  assert_int_equal(trnc_diags_count(d), 3);
  trnc_cache_stats s;
  trnc_cache_get_stats(b, true, &s);
  assert_int_equal(s.entries, 0);

  assert_int_equal(trnc_cache_put_entry(b, bytes, len, key, got, &art, NULL), TRNC_OK);
  assert_memory_equal(got, key, 16);
  assert_non_null(art);
  run_and_check(art);
  const trnc_compiled *again = NULL;
  assert_int_equal(trnc_cache_get(b, key, &again, NULL), TRNC_OK);
  assert_ptr_equal(again, art); /* in the in-process table */
  trnc_cache_get_stats(b, true, &s);
  assert_int_equal(s.entries, 1);
  assert_int_equal(s.stores, 1);
  /* check-and-store only (out NULL), into a third store */
  char dc[512];
  snprintf(dc, sizeof dc, "%s/c", dir);
  trnc_cache *c = open_at(dc, 0);
  assert_int_equal(trnc_cache_put_entry(c, bytes, len, NULL, NULL, NULL, NULL), TRNC_OK);
  trnc_cache_destroy(c);
  assert_true(disk_get(dc, key, NULL));
  assert_int_equal(trnc_cache_put_entry(NULL, bytes, len, NULL, NULL, NULL, NULL),
                   TRNC_ERR_INVALID_ARGUMENT);
  assert_int_equal(trnc_cache_entry_bytes(a, key, NULL, &len, NULL), TRNC_ERR_INVALID_ARGUMENT);
  trnc_free(bytes);
  trnc_diags_destroy(d);
  trnc_cache_destroy(a);
  trnc_cache_destroy(b);
  rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_artifact_round_trip),
      cmocka_unit_test(test_artifact_hostile),
      cmocka_unit_test(test_key_fields),
      cmocka_unit_test(test_key_hex),
      cmocka_unit_test(test_entry_hostile),
      cmocka_unit_test(test_store_hit_and_corruption),
      cmocka_unit_test(test_eviction_order),
      cmocka_unit_test(test_permissions),
      cmocka_unit_test(test_verify_clear_bundle),
      cmocka_unit_test(test_bindings_checked_at_load),
      cmocka_unit_test(test_load_limits),
      cmocka_unit_test(test_untrusted_paths),
      cmocka_unit_test(test_header_read_first),
      cmocka_unit_test(test_dead_writer_temps),
      cmocka_unit_test(test_counters_flushed_often),
      cmocka_unit_test(test_remove),
      cmocka_unit_test(test_entry_bytes_and_put_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
