/*
 * test_nc_util.h — helpers shared by the NeuronCore cmocka tests
 * (tests/c/test_nc_*.c): access-pattern constructors, a sequential program
 * builder, and run helpers that also check the asm and protobuf round trips
 * of every program they run.
 */
#ifndef TRNC_TEST_NC_UTIL_H
#define TRNC_TEST_NC_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "trnc/neuroncore.h"
#include "trnc/trnc.h"

static inline trnc_nc_ap nc_ap_v(int mem, int buffer, int start, int parts, int64_t pstride, int64_t off,
                                 trnc_dtype dt, int nfree, va_list va) {
  trnc_nc_ap a;
  memset(&a, 0, sizeof a);
  a.mem = (uint8_t)mem;
  a.buffer = buffer;
  a.start_partition = start;
  a.partitions = parts;
  a.partition_stride = pstride;
  a.offset = off;
  a.dtype = (uint8_t)dt;
  a.nfree = (uint8_t)nfree;
  for (int d = 0; d < nfree; d++) {
    a.free[d].stride = va_arg(va, int64_t);
    a.free[d].count = va_arg(va, int64_t);
  }
  return a;
}

/* SBUF AP: start partition, partitions, byte offset, dtype, nfree, then
 * nfree (int64 stride, int64 count) pairs. */
static inline trnc_nc_ap SB(int start, int parts, int64_t off, trnc_dtype dt, int nfree, ...) {
  va_list va;
  va_start(va, nfree);
  trnc_nc_ap a = nc_ap_v(TRNC_NC_MEM_SBUF, 0, start, parts, 0, off, dt, nfree, va);
  va_end(va);
  return a;
}
static inline trnc_nc_ap PS(int start, int parts, int64_t off, trnc_dtype dt, int nfree, ...) {
  va_list va;
  va_start(va, nfree);
  trnc_nc_ap a = nc_ap_v(TRNC_NC_MEM_PSUM, 0, start, parts, 0, off, dt, nfree, va);
  va_end(va);
  return a;
}
/* HBM AP: buffer, byte offset, dtype, partition stride, rows, nfree, pairs. */
static inline trnc_nc_ap HB(int buf, int64_t off, trnc_dtype dt, int64_t pstride, int rows, int nfree, ...) {
  va_list va;
  va_start(va, nfree);
  trnc_nc_ap a = nc_ap_v(TRNC_NC_MEM_HBM, buf, 0, rows, pstride, off, dt, nfree, va);
  va_end(va);
  return a;
}

#define S64(x) ((int64_t)(x))

/* A one-kernel program whose instructions run strictly one after another:
 * instruction i signals semaphore i and waits for instruction i-1. */
typedef struct nct {
  trnc_nc_program *p;
  int n;
} nct;

static inline void nct_init(nct *t, const trnc_nc_target *target) {
  t->p = trnc_nc_program_create(target);
  assert_non_null(t->p);
  assert_int_equal(trnc_nc_program_add_kernel(t->p, "main", TRNC_NC_MAX_SEMAPHORES), 0);
  t->n = 0;
}

static inline void nct_add(nct *t, trnc_nc_instr in) {
  if (t->n > 0) {
    in.wait[in.nwait].sem = (uint16_t)(t->n - 1);
    in.wait[in.nwait].value = 1;
    in.nwait++;
  }
  in.signal[in.nsignal++] = (uint16_t)t->n;
  assert_int_equal(trnc_nc_kernel_append(t->p, 0, &in), TRNC_OK);
  t->n++;
}

static inline trnc_nc_instr I(int op, int engine) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = (uint8_t)op;
  in.engine = (uint8_t)engine;
  return in;
}

static inline trnc_nc_instr I_dma(int q, trnc_nc_ap dst, trnc_nc_ap src) {
  trnc_nc_instr in = I(TRNC_NC_OP_DMA_COPY, TRNC_NC_DMA0 + q);
  in.dst = dst;
  in.src[0] = src;
  return in;
}

static inline void nc_print_diags(trnc_diags *d) {
  char *s = trnc_diags_format(d);
  if (s && s[0]) fprintf(stderr, "%s", s);
  trnc_free(s);
}

/* Asserts that p survives print -> parse and serialize -> deserialize
 * unchanged, and that printing is deterministic. */
static inline void nc_check_roundtrip(const trnc_nc_program *p) {
  trnc_diags *d = trnc_diags_create();
  char *text = trnc_nc_program_print(p);
  assert_non_null(text);
  trnc_nc_program *q = NULL;
  trnc_status st = trnc_nc_program_parse(text, strlen(text), &q, d);
  if (st) {
    nc_print_diags(d);
    fprintf(stderr, "%s", text);
  }
  assert_int_equal(st, TRNC_OK);
  assert_true(trnc_nc_program_equal(p, q));
  char *text2 = trnc_nc_program_print(q);
  assert_string_equal(text, text2);
  uint8_t *bytes = NULL;
  size_t len = 0;
  assert_int_equal(trnc_nc_program_serialize(p, &bytes, &len), TRNC_OK);
  trnc_nc_program *r = NULL;
  assert_int_equal(trnc_nc_program_deserialize(bytes, len, &r, d), TRNC_OK);
  assert_true(trnc_nc_program_equal(p, r));
  trnc_free(bytes);
  trnc_free(text);
  trnc_free(text2);
  trnc_nc_program_destroy(q);
  trnc_nc_program_destroy(r);
  trnc_diags_destroy(d);
}

/* Verifies, round-trips and simulates p; asserts success. */
static inline void nc_run(const trnc_nc_program *p, const void *const *inputs, void *const *outputs) {
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_nc_simulate(p, inputs, outputs, d);
  if (st) nc_print_diags(d);
  assert_int_equal(st, TRNC_OK);
  /* planned runs (no SBUF/PSUM NaN fill, memory reused from run to run) give
   * bit-identical outputs */
  size_t nout = 0, bytes[64];
  uint8_t *want[64];
  for (size_t b = 0; b < trnc_nc_program_buffer_count(p); b++) {
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, b);
    if (pb->kind != TRNC_NC_BUF_OUTPUT || nout == 64) continue;
    bytes[nout] = (size_t)pb->bytes;
    want[nout] = malloc(bytes[nout] ? bytes[nout] : 1);
    assert_non_null(want[nout]);
    memcpy(want[nout], outputs[nout], bytes[nout]);
    nout++;
  }
  trnc_nc_sim_plan *plan;
  assert_int_equal(trnc_nc_sim_plan_create(p, &plan, d), TRNC_OK);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(trnc_nc_simulate_planned(plan, inputs, outputs, NULL, d), TRNC_OK);
    for (size_t j = 0; j < nout; j++) assert_memory_equal(outputs[j], want[j], bytes[j]);
  }
  trnc_nc_sim_plan_destroy(plan);
  for (size_t j = 0; j < nout; j++) free(want[j]);
  trnc_diags_destroy(d);
  nc_check_roundtrip(p);
}

/* Asserts that verification fails and some error diagnostic, as
 * "<node>: <message>" (the node is the instruction, "k#1 scalar.activation"),
 * contains every one of the given substrings (NULL-terminated list). */
static inline void nc_expect_reject(const trnc_nc_program *p, ...) {
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_nc_program_verify(p, d);
  assert_int_equal(st, TRNC_ERR_INVALID_GRAPH);
  assert_true(trnc_diags_error_count(d) >= 1);
  va_list va;
  va_start(va, p);
  const char *needles[8];
  int nn = 0;
  for (const char *s = va_arg(va, const char *); s && nn < 8; s = va_arg(va, const char *)) needles[nn++] = s;
  va_end(va);
  bool found = false;
  for (size_t i = 0; i < trnc_diags_count(d) && !found; i++) {
    const trnc_diag *g = trnc_diags_get(d, i);
    char text[2048];
    snprintf(text, sizeof text, "%s: %s", g->node ? g->node : "", g->message);
    bool all = true;
    for (int k = 0; k < nn; k++)
      if (!strstr(text, needles[k])) all = false;
    found = all;
  }
  if (!found) {
    fprintf(stderr, "expected a diagnostic containing:");
    for (int k = 0; k < nn; k++) fprintf(stderr, " [%s]", needles[k]);
    fprintf(stderr, "\ngot:\n");
    nc_print_diags(d);
  }
  assert_true(found);
  trnc_diags_destroy(d);
}

static inline void nc_expect_ok(const trnc_nc_program *p) {
  trnc_diags *d = trnc_diags_create();
  trnc_status st = trnc_nc_program_verify(p, d);
  if (st) nc_print_diags(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);
}

/* Reads a whole file under $TRNC_SOURCE_DIR (or the cwd) into a malloc'd,
 * NUL-terminated string. */
static inline char *nc_read_source(const char *rel, size_t *len) {
  const char *root = getenv("TRNC_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  if (len) *len = (size_t)n;
  return buf;
}

static inline uint16_t f2bf(float f) { return (uint16_t)trnc_nc_encode(TRNC_BF16, f); }
static inline float bf2f(uint16_t h) { return trnc_nc_decode(TRNC_BF16, h); }

#endif
