/*
 * test_exec.c — runtime/exec.c: trnc_compiled_run over a hand-built artifact
 * (struct trnc_compiled around a program parsed from assembly). Covers
 * zero-copy strided inputs and outputs, int64 inputs converted to int32 with
 * the range check, float64 in/out conversion, outputs that are host copies of
 * an input or of an earlier output, None outputs, zero-element tensors,
 * unused inputs, graph constants read in place, binding-contract
 * violations, and concurrent runs.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "codegen/neuroncore/artifact.h"
#include "trnc/cache.h"
#include "test_nc_util.h"
#include "testutil.h"

/*
 * Buffers are declared in an order unlike the graph's input order, and
 * outputs are interleaved with inputs, so the run must map program buffer
 * indices to the simulator's INPUT/OUTPUT slots:
 *   0 y  output  f32[4,8] strides [1,4] (written in place: zero copy)
 *   1 x  input   f32[4,8] strides [1,4] (read in place: zero copy)
 *   2 oi output  i32[6]   (device side of i64[2,3])
 *   3 idx input  i32[6]   (device side of i64[2,3])
 *   4 z  input   f32      (stands in for a zero-element input; never read)
 *   5 od output  f32[5]   (device side of f64[5])
 *   6 d  input   f32[5]   (device side of f64[5])
 *   7 kc input   f32[5]   (a graph constant: {1, 2, 3, 4, 5})
 * y = x + 1, oi = idx * 2, od = d + kc.
 */
static const char *k_asm =
    ".version 1\n"
    ".target trn2\n"
    ".buffer y output f32 128\n"
    ".buffer x input f32 128\n"
    ".buffer oi output i32 24\n"
    ".buffer idx input i32 24\n"
    ".buffer z input f32 4\n"
    ".buffer od output f32 20\n"
    ".buffer d input f32 20\n"
    ".buffer kc input f32 20\n"
    ".kernel main 7\n"
    "dma0 dma_copy dst=sbuf[0:4]@0:f32[[1,8]] src0=hbm:x@0:f32[[1,4],[4,8]] mode=direct signal=s0\n"
    "dma1 dma_copy dst=sbuf[0:2]@64:i32[[1,3]] src0=hbm:idx@0:i32[[3,2],[1,3]] mode=direct signal=s1\n"
    "dma2 dma_copy dst=sbuf[0:1]@128:f32[[1,5]] src0=hbm:d@0:f32[[5,1],[1,5]] mode=direct signal=s2\n"
    "vector tensor_scalar dst=sbuf[0:4]@256:f32[[1,8]] src0=sbuf[0:4]@0:f32[[1,8]] op=add op1=bypass imm0=1 wait=s0>=1 signal=s3\n"
    "vector tensor_scalar dst=sbuf[0:2]@320:i32[[1,3]] src0=sbuf[0:2]@64:i32[[1,3]] op=mul op1=bypass imm0=2 wait=s1>=1 signal=s4\n"
    "dma6 dma_copy dst=sbuf[0:1]@448:f32[[1,5]] src0=hbm:kc@0:f32[[5,1],[1,5]] mode=direct signal=s6\n"
    "vector tensor_tensor dst=sbuf[0:1]@384:f32[[1,5]] src0=sbuf[0:1]@128:f32[[1,5]] src1=sbuf[0:1]@448:f32[[1,5]] op=add wait=s2>=1,s6>=1 signal=s5\n"
    "dma3 dma_copy dst=hbm:y@0:f32[[1,4],[4,8]] src0=sbuf[0:4]@256:f32[[1,8]] mode=direct wait=s3>=1\n"
    "dma4 dma_copy dst=hbm:oi@0:i32[[3,2],[1,3]] src0=sbuf[0:2]@320:i32[[1,3]] mode=direct wait=s4>=1\n"
    "dma5 dma_copy dst=hbm:od@0:f32[[5,1],[1,5]] src0=sbuf[0:1]@384:f32[[1,5]] mode=direct wait=s5>=1\n";

/** A trnc_io with the given dtype, rank, shape and strides (extent computed). */
static trnc_io mkio(trnc_dtype dt, int rank, const int64_t *shape, const int64_t *stride) {
  trnc_io io;
  memset(&io, 0, sizeof io);
  io.dtype = dt;
  io.rank = rank;
  int64_t last = 0, numel = 1;
  for (int d = 0; d < rank; d++) {
    io.shape[d] = shape[d];
    io.stride[d] = stride[d];
    numel *= shape[d];
    last += (shape[d] - 1) * stride[d];
  }
  io.extent_bytes = numel ? (size_t)(last + 1) * trnc_dtype_size(dt) : 0;
  return io;
}

static trnc_io_binding bind(int buffer, trnc_dtype ddt, bool convert, int64_t bytes) {
  trnc_io_binding b = {buffer, ddt, convert, bytes, -1, -1, false, 0};
  return b;
}

static trnc_io_binding copy_in(int i) {
  trnc_io_binding b = {-1, TRNC_DTYPE_INVALID, false, 0, i, -1, false, 0};
  return b;
}

static trnc_io_binding copy_out(int j) {
  trnc_io_binding b = {-1, TRNC_DTYPE_INVALID, false, 0, -1, j, false, 0};
  return b;
}

enum { NIN = 5, NOUT = 7 };

/*
 * Graph inputs:  0 d f64[5]; 1 idx i64[2,3]; 2 unused f32[3] (buffer -1);
 *                3 x f32[4,8] strides [1,4]; 4 z f32[0,3] (buffer 4).
 * Graph outputs: 0 y f32[4,8] strides [1,4] (zero copy); 1 None;
 *                2 oi i64[2,3] (convert); 3 copy of input 3, contiguous;
 *                4 od f64[5] (convert); 5 copy of output 2 with strides [1,2];
 *                6 f32[0] (zero elements, buffer -1).
 * trnc_compile's allocation contract: each array one calloc, the struct calloc.
 */
static trnc_compiled *make_artifact(void) {
  trnc_diags *d = trnc_diags_create();
  trnc_nc_program *p = NULL;
  trnc_status st = trnc_nc_program_parse(k_asm, strlen(k_asm), &p, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  st = trnc_nc_program_verify(p, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
  trnc_diags_destroy(d);

  trnc_compiled *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->prog = p;
  c->ninputs = NIN;
  c->noutputs = NOUT;
  c->inputs = calloc(NIN, sizeof *c->inputs);
  c->outputs = calloc(NOUT, sizeof *c->outputs);
  c->in_bind = calloc(NIN, sizeof *c->in_bind);
  c->out_bind = calloc(NOUT, sizeof *c->out_bind);
  assert_true(c->inputs && c->outputs && c->in_bind && c->out_bind);

  const int64_t s5[] = {5}, st1[] = {1}, s23[] = {2, 3}, st23[] = {3, 1}, st23t[] = {1, 2};
  const int64_t s3[] = {3}, s48[] = {4, 8}, st48t[] = {1, 4}, st48[] = {8, 1};
  const int64_t s03[] = {0, 3}, st03[] = {3, 1}, s0[] = {0};
  c->inputs[0] = mkio(TRNC_F64, 1, s5, st1);
  c->in_bind[0] = bind(6, TRNC_F32, true, 20);
  c->inputs[1] = mkio(TRNC_I64, 2, s23, st23);
  c->in_bind[1] = bind(3, TRNC_I32, true, 24);
  c->inputs[2] = mkio(TRNC_F32, 1, s3, st1);
  c->in_bind[2] = bind(-1, TRNC_F32, false, 0);
  c->inputs[3] = mkio(TRNC_F32, 2, s48, st48t);
  c->in_bind[3] = bind(1, TRNC_F32, false, 128);
  c->inputs[4] = mkio(TRNC_F32, 2, s03, st03);
  c->in_bind[4] = bind(4, TRNC_F32, false, 4);

  c->outputs[0] = mkio(TRNC_F32, 2, s48, st48t);
  c->out_bind[0] = bind(0, TRNC_F32, false, 128);
  c->outputs[1].is_none = true;
  c->out_bind[1] = bind(-1, TRNC_DTYPE_INVALID, false, 0);
  c->outputs[2] = mkio(TRNC_I64, 2, s23, st23);
  c->out_bind[2] = bind(2, TRNC_I32, true, 24);
  c->outputs[3] = mkio(TRNC_F32, 2, s48, st48);
  c->out_bind[3] = copy_in(3);
  c->outputs[4] = mkio(TRNC_F64, 1, s5, st1);
  c->out_bind[4] = bind(5, TRNC_F32, true, 20);
  c->outputs[5] = mkio(TRNC_I64, 2, s23, st23t);
  c->out_bind[5] = copy_out(2);
  c->outputs[6] = mkio(TRNC_F32, 1, s0, st1);
  c->out_bind[6] = bind(-1, TRNC_F32, false, 0);

  c->nconsts = 1;
  c->consts = calloc(1, sizeof *c->consts);
  assert_non_null(c->consts);
  c->consts[0].buffer = 7;
  c->consts[0].bytes = 20;
  c->consts[0].data = malloc(20);
  assert_non_null(c->consts[0].data);
  const float kv[5] = {1, 2, 3, 4, 5};
  memcpy(c->consts[0].data, kv, sizeof kv);

  c->report.ir_nodes = 3;
  c->report.target = c->target_name;
  snprintf(c->target_name, sizeof c->target_name, "trn2");
  return c;
}

/** Host tensors of one run. */
typedef struct host {
  double d[5];
  int64_t idx[6];
  float base[32]; /* x is base viewed as [4,8] with strides [1,4] (base.t()) */
  float y[32];    /* strides [1,4] as well */
  int64_t oi[6];
  float xcopy[32];
  double od[5];
  int64_t oicopy[6]; /* strides [1,2] */
  const void *in[NIN];
  void *out[NOUT];
} host;

static void host_init(host *h) {
  memset(h, 0, sizeof *h);
  const double dv[5] = {0.1, -2.5, 1e-9, 3.0e38, 1.0 / 3.0};
  memcpy(h->d, dv, sizeof dv);
  const int64_t iv[6] = {0, 1, -5, 7, 1000, -(INT64_C(1) << 23)};
  memcpy(h->idx, iv, sizeof iv);
  for (int i = 0; i < 32; i++) h->base[i] = (float)i * 0.5f - 3.0f;
  for (int i = 0; i < 32; i++) h->y[i] = h->xcopy[i] = -999.0f;
  h->in[0] = h->d;
  h->in[1] = h->idx;
  h->in[2] = NULL; /* unused by the program */
  h->in[3] = h->base;
  h->in[4] = NULL; /* zero elements: no pointer */
  h->out[0] = h->y;
  h->out[1] = NULL; /* None */
  h->out[2] = h->oi;
  h->out[3] = h->xcopy;
  h->out[4] = h->od;
  h->out[5] = h->oicopy;
  h->out[6] = NULL; /* zero elements */
}

/** x[i][j] (shape [4,8], strides [1,4]) = base[i + 4j]. */
static float x_at(const host *h, int i, int j) { return h->base[i + 4 * j]; }

static void check_host(const host *h) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) {
      /* y has the torch strides [1,4]: the program wrote them in place */
      assert_true(h->y[i + 4 * j] == x_at(h, i, j) + 1.0f);
      /* the copy of x is contiguous [8,1] */
      assert_true(h->xcopy[i * 8 + j] == x_at(h, i, j));
    }
  const int64_t want_oi[6] = {0, 2, -10, 14, 2000, -(INT64_C(1) << 24)};
  for (int k = 0; k < 6; k++) assert_int_equal(h->oi[k], want_oi[k]);
  /* the copy of output 2 has strides [1,2]: element [r][c] at r + 2c */
  for (int r = 0; r < 2; r++)
    for (int col = 0; col < 3; col++) assert_int_equal(h->oicopy[r + 2 * col], want_oi[r * 3 + col]);
  for (int k = 0; k < 5; k++) {
    double want = (double)((float)h->d[k] + (float)(k + 1));
    if (h->od[k] != want) fprintf(stderr, "od[%d] = %.17g, want %.17g\n", k, h->od[k], want);
    assert_true(h->od[k] == want);
  }
  /* round to nearest: 0.1 becomes 0.100000001490116..., 1/3 0.333333343 */
  assert_true(h->od[0] == (double)(0.1f + 1.0f));
  assert_true(h->od[4] != 1.0 / 3.0 + 5.0);
}

/* Runs c on fresh host tensors h; the run must succeed. */
static void run_ok(const trnc_compiled *c, host *h, trnc_diags *d) {
  host_init(h);
  trnc_status st = trnc_compiled_run(c, h->in, h->out, d);
  if (st) tu_diags_dump(d);
  assert_int_equal(st, TRNC_OK);
}

static void test_run_bindings(void **state) {
  trnc_compiled *c = make_artifact();
  host h;
  trnc_diags *d = trnc_diags_create();
  run_ok(c, &h, d);
  assert_int_equal(trnc_diags_count(d), 0);
  check_host(&h);
  /* the inputs are untouched */
  for (int i = 0; i < 32; i++) assert_true(h.base[i] == (float)i * 0.5f - 3.0f);
  assert_int_equal(h.idx[5], -(INT64_C(1) << 23));

  /* a second run on the same artifact gives the same results */
  host h2;
  host_init(&h2);
  assert_int_equal(trnc_compiled_run(c, h2.in, h2.out, d), TRNC_OK);
  check_host(&h2);
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

static void test_accessors(void **state) {
  trnc_compiled *c = make_artifact();
  assert_int_equal(trnc_compiled_input_count(c), NIN);
  assert_int_equal(trnc_compiled_output_count(c), NOUT);
  assert_int_equal(trnc_compiled_input(c, 1)->dtype, TRNC_I64);
  assert_int_equal(trnc_compiled_input(c, 3)->stride[1], 4);
  assert_int_equal(trnc_compiled_input(c, 3)->extent_bytes, 128);
  assert_null(trnc_compiled_input(c, NIN));
  assert_true(trnc_compiled_output(c, 1)->is_none);
  assert_null(trnc_compiled_output(c, NOUT));
  assert_int_equal(trnc_compiled_report(c)->ir_nodes, 3);
  assert_string_equal(trnc_compiled_report(c)->target, "trn2");
  assert_ptr_equal(trnc_compiled_program(c), c->prog);
  assert_int_equal(trnc_compiled_input_count(NULL), 0);
  assert_null(trnc_compiled_input(NULL, 0));
  assert_null(trnc_compiled_report(NULL));
  assert_null(trnc_compiled_program(NULL));
  trnc_compiled_destroy(NULL);
  trnc_compiled_destroy(c);
}

/* An int64 input value `bad` outside the input's range (int_bound, 0: int32)
 * is TRNC_ERR_LIMIT naming the input, value, index and `range`. */
static void expect_limit(int64_t bound, int64_t bad, int at, const char *index, const char *range) {
  trnc_compiled *c = make_artifact();
  c->inputs[1].int_bound = bound;
  host h;
  host_init(&h);
  h.idx[at] = bad;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_ERR_LIMIT);
  char value[64];
  snprintf(value, sizeof value, "int64 value %lld", (long long)bad);
  bool named = tu_diags_have(d, "input 1:") && tu_diags_have(d, value) && tu_diags_have(d, index) &&
               tu_diags_have(d, range);
  if (!named) tu_diags_dump(d);
  assert_true(named);
  assert_int_equal(trnc_diags_get(d, 0)->status, TRNC_ERR_LIMIT);
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

static void test_int64_range(void **state) {
  expect_limit(0, INT64_C(1) << 31, 5, "[1,2]", "[-2147483648, 2147483647], the int32 range");
  expect_limit(0, -(INT64_C(1) << 31) - 1, 0, "[0,0]", "int32 range");
  expect_limit(0, INT64_MAX, 3, "[1,0]", "int32 range");
  /* a graph proved exact for inputs within +-2^23 (trnc_graph_check_bound) */
  expect_limit(INT64_C(1) << 23, (INT64_C(1) << 23) + 1, 5, "[1,2]",
               "[-8388608, 8388608], the range this graph was compiled for");
  /* the bound itself is in range */
  trnc_compiled *c = make_artifact();
  host h;
  host_init(&h);
  h.idx[4] = INT64_C(1) << 22; /* *2 = 2^23: exact in f32 and i32 */
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_OK);
  assert_int_equal(h.oi[4], INT64_C(1) << 23);
  /* the bound itself is accepted, and doubling it (2^24) is still exact */
  h.idx[4] = INT64_C(1) << 23;
  h.idx[5] = -(INT64_C(1) << 23);
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_OK);
  assert_int_equal(h.oi[4], INT64_C(1) << 24);
  assert_int_equal(h.oi[5], -(INT64_C(1) << 24));
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

static void test_null_pointers(void **state) {
  trnc_compiled *c = make_artifact();
  host h;
  host_init(&h);
  trnc_diags *d = trnc_diags_create();
  h.in[3] = NULL; /* x is read by the program */
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_true(tu_diags_have(d, "input 3 is NULL"));
  host_init(&h);
  h.out[4] = NULL;
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_true(tu_diags_have(d, "output 4 is NULL"));
  assert_int_equal(trnc_compiled_run(c, NULL, h.out, d), TRNC_ERR_INVALID_ARGUMENT);
  assert_int_equal(trnc_compiled_run(NULL, h.in, h.out, d), TRNC_ERR_INVALID_ARGUMENT);
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

/* A zero-element input whose caller pointer is non-NULL is not touched
 * either (a private block stands in for the program's buffer). */
static void test_zero_elements_with_pointer(void **state) {
  trnc_compiled *c = make_artifact();
  host h;
  host_init(&h);
  float sentinel = 42.0f;
  h.in[4] = &sentinel;
  h.out[6] = &sentinel;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_OK);
  assert_true(sentinel == 42.0f);
  check_host(&h);
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

typedef void (*breaker)(trnc_compiled *c);
static void br_kind(trnc_compiled *c) { c->out_bind[2].buffer = 3; } /* an INPUT buffer */
static void br_shared(trnc_compiled *c) { c->out_bind[4].buffer = 2; }
static void br_unbound(trnc_compiled *c) { c->in_bind[0].buffer = -1; }
static void br_dtype(trnc_compiled *c) { c->in_bind[3].device_dtype = TRNC_BF16; }
static void br_small(trnc_compiled *c) { c->inputs[3].extent_bytes = 64; }
static void br_copy_later(trnc_compiled *c) { c->out_bind[5].copy_of_output = 5; }
static void br_copy_shape(trnc_compiled *c) { c->out_bind[3].copy_of_input = 0; }
static void br_unwritten(trnc_compiled *c) { c->out_bind[3].copy_of_input = -1; }
static void br_nobuf(trnc_compiled *c) { c->in_bind[1].buffer = 99; }
static void br_const_kind(trnc_compiled *c) { c->consts[0].buffer = 5; } /* an OUTPUT */
static void br_const_small(trnc_compiled *c) { c->consts[0].bytes = 16; }
static void br_const_shared(trnc_compiled *c) { c->consts[0].buffer = 6; }
/* output 3 as the view x[1:3, 2:7] of input 3 (x: [4,8] strides [1,4]): shape
 * [2,5], strides [1,4], first element 1 + 2*4 = 9 */
static void as_view(trnc_compiled *c, int64_t offset) {
  const int64_t s25[] = {2, 5}, st14[] = {1, 4};
  c->outputs[3] = mkio(TRNC_F32, 2, s25, st14);
  c->out_bind[3].copy_view = true;
  c->out_bind[3].copy_offset = offset;
}
static void br_view_outside(trnc_compiled *c) { as_view(c, 15); } /* last element 15 + 17 = 32 */
static void br_view_self(trnc_compiled *c) {
  as_view(c, 9);
  c->out_bind[3].copy_of_input = -1;
  c->out_bind[3].copy_of_output = 3;
}
static void br_view_both(trnc_compiled *c) {
  as_view(c, 9);
  c->out_bind[3].copy_of_output = 0;
}
static void br_view_before(trnc_compiled *c) { as_view(c, -1); }
static void br_view_dtype(trnc_compiled *c) {
  as_view(c, 9);
  c->outputs[3].dtype = TRNC_I32;
}

/* Violations of the binding contract are TRNC_ERR_INTERNAL, never a crash. */
static void test_bad_artifacts(void **state) {
  const breaker bs[] = {br_kind, br_shared, br_unbound, br_dtype, br_small,
                        br_copy_later, br_copy_shape, br_unwritten, br_nobuf,
                        br_const_kind, br_const_small, br_const_shared, br_view_outside,
                        br_view_before, br_view_dtype, br_view_self, br_view_both};
  for (size_t i = 0; i < sizeof bs / sizeof *bs; i++) {
    trnc_compiled *c = make_artifact();
    bs[i](c);
    host h;
    host_init(&h);
    trnc_diags *d = trnc_diags_create();
    trnc_status st = trnc_compiled_run(c, h.in, h.out, d);
    if (st != TRNC_ERR_INTERNAL) {
      fprintf(stderr, "breaker %zu: %s\n", i, trnc_status_name(st));
      tu_diags_dump(d);
    }
    assert_int_equal(st, TRNC_ERR_INTERNAL);
    assert_true(tu_diags_have(d, "a trnc bug"));
    trnc_diags_destroy(d);
    trnc_compiled_destroy(c);
  }
}

/* An output that is a view of an input is copied from the input's memory
 * with the output's strides, from its first element. */
static void test_view_of_input(void **state) {
  trnc_compiled *c = make_artifact();
  as_view(c, 9);
  host h;
  trnc_diags *d = trnc_diags_create();
  run_ok(c, &h, d);
  for (int r = 0; r < 2; r++)
    for (int col = 0; col < 5; col++) assert_true(h.xcopy[r + 4 * col] == x_at(&h, 1 + r, 2 + col));
  assert_true(h.xcopy[2] == -999.0f); /* outside the view's elements: untouched */
  /* the same view of output 0 (y = x + 1, written by the program) */
  c->out_bind[3].copy_of_input = -1;
  c->out_bind[3].copy_of_output = 0;
  run_ok(c, &h, d);
  for (int r = 0; r < 2; r++)
    for (int col = 0; col < 5; col++) assert_true(h.xcopy[r + 4 * col] == x_at(&h, 1 + r, 2 + col) + 1.0f);
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

typedef struct worker {
  const trnc_compiled *c;
  int ok;
} worker;

static void *run_worker(void *arg) {
  worker *w = arg;
  w->ok = 1;
  for (int r = 0; r < 20; r++) {
    host h;
    host_init(&h);
    for (int i = 0; i < 32; i++) h.base[i] += (float)r;
    trnc_diags *d = trnc_diags_create();
    if (trnc_compiled_run(w->c, h.in, h.out, d) != TRNC_OK) w->ok = 0;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++)
        if (h.y[i + 4 * j] != x_at(&h, i, j) + 1.0f) w->ok = 0;
    trnc_diags_destroy(d);
  }
  return NULL;
}

/* Concurrent runs of one artifact (thread safety: no shared mutable state). */
static void test_concurrent_runs(void **state) {
  trnc_compiled *c = make_artifact();
  pthread_t th[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i].c = c;
    assert_int_equal(pthread_create(&th[i], NULL, run_worker, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_true(w[i].ok);
  }
  trnc_compiled_destroy(c);
}

/* TRNC_SIM picks the engine on every run (interpreter, JIT, both compared);
 * unset, the first run interprets and later ones use the JIT: every way
 * gives the same results; an unknown value is a clear error. */
static void test_engines(void **state) {
  const char *env = getenv("TRNC_SIM");
  char saved[32] = "";
  if (env) snprintf(saved, sizeof saved, "%s", env);
  trnc_compiled *c = make_artifact();
  trnc_diags *d = trnc_diags_create();
  const char *engines[] = {"interp", "jit", "check", "", "", ""};
  for (size_t e = 0; e < sizeof engines / sizeof *engines; e++) {
    if (engines[e][0]) setenv("TRNC_SIM", engines[e], 1);
    else unsetenv("TRNC_SIM");
    host h;
    host_init(&h);
    trnc_status st = trnc_compiled_run(c, h.in, h.out, d);
    if (st) tu_diags_dump(d);
    assert_int_equal(st, TRNC_OK);
    check_host(&h);
  }
  assert_non_null(atomic_load(&c->run_state)); /* the run plan with its engine slot */
  setenv("TRNC_SIM", "fast", 1);
  host h;
  host_init(&h);
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_ERR_INVALID_ARGUMENT);
  const trnc_diag *g = trnc_diags_get(d, trnc_diags_count(d) - 1);
  assert_non_null(strstr(g->message, "TRNC_SIM=fast: expected interp"));
  if (saved[0]) setenv("TRNC_SIM", saved, 1);
  else unsetenv("TRNC_SIM");
  trnc_diags_destroy(d);
  trnc_compiled_destroy(c);
}

/* The JIT's object code travels with the artifact: a run that compiled host
 * code publishes it (fresh, for the cache to store); the serialized artifact
 * carries it; a deserialized copy in a process without that code loaded
 * runs it from its first run without compiling (trnc_jit_totals unchanged);
 * code for another host key, or another program's, is a miss (the run
 * interprets, a later JIT compiles anew), never a crash. */
static void test_host_code_in_artifact(void **state) {
  const char *env = getenv("TRNC_SIM");
  char saved[32] = "";
  if (env) snprintf(saved, sizeof saved, "%s", env);
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = make_artifact();
  setenv("TRNC_SIM", "jit", 1);
  host h;
  host_init(&h);
  assert_int_equal(trnc_compiled_run(c, h.in, h.out, d), TRNC_OK);
  check_host(&h);
  trnc_host_object *o = atomic_load(&c->host_obj);
  assert_non_null(o);
  assert_true(atomic_load(&o->fresh));
  assert_true(o->len > 0);
  assert_non_null(strstr(o->key, "llvm 16."));
  assert_true(trnc_compiled_jit_seconds(c) > 0);
  uint8_t *bytes = NULL;
  size_t len = 0;
  assert_int_equal(trnc_compiled_serialize(c, &bytes, &len, d), TRNC_OK);
  trnc_compiled_destroy(c); /* its machine code unloads: the copy must load its own */
  size_t before = 0, after = 0;
  trnc_jit_totals(&before, NULL);

  unsetenv("TRNC_SIM"); /* AUTO: stored code for this host runs from the first run */
  trnc_compiled *w = NULL;
  assert_int_equal(trnc_compiled_deserialize(bytes, len, &w, d), TRNC_OK);
  trnc_host_object *wo = atomic_load(&w->host_obj);
  assert_non_null(wo);
  assert_false(atomic_load(&wo->fresh));
  host_init(&h);
  assert_int_equal(trnc_compiled_run(w, h.in, h.out, d), TRNC_OK);
  check_host(&h);
  trnc_jit_totals(&after, NULL);
  assert_int_equal(after, before); /* loaded, not compiled */
  assert_true(trnc_compiled_jit_seconds(w) > 0); /* the load's time */
  trnc_compiled_destroy(w);

  /* another CPU's code (another key): a miss; the first AUTO run
   * interprets, TRNC_SIM=jit compiles anew */
  assert_int_equal(trnc_compiled_deserialize(bytes, len, &w, d), TRNC_OK);
  wo = atomic_load(&w->host_obj);
  free(wo->key);
  wo->key = strdup("llvm 16.0.6; x86_64-pc-linux-gnu; cpu other; +avx512f");
  host_init(&h);
  assert_int_equal(trnc_compiled_run(w, h.in, h.out, d), TRNC_OK);
  check_host(&h);
  assert_true(trnc_compiled_jit_seconds(w) == 0); /* interpreted */
  setenv("TRNC_SIM", "jit", 1);
  trnc_jit_totals(&before, NULL);
  host_init(&h);
  assert_int_equal(trnc_compiled_run(w, h.in, h.out, d), TRNC_OK);
  check_host(&h);
  trnc_jit_totals(&after, NULL);
  assert_int_equal(after, before + 1); /* compiled here */
  unsetenv("TRNC_SIM");
  trnc_compiled_destroy(w);
  /* this host's key but not this program's code (another prefix): the load
   * refuses it and the run compiles instead */
  assert_int_equal(trnc_compiled_deserialize(bytes, len, &w, d), TRNC_OK);
  wo = atomic_load(&w->host_obj);
  free(wo->prefix);
  wo->prefix = strdup("trnc_h0");
  trnc_jit_totals(&before, NULL);
  host_init(&h);
  assert_int_equal(trnc_compiled_run(w, h.in, h.out, d), TRNC_OK);
  check_host(&h);
  trnc_jit_totals(&after, NULL);
  assert_int_equal(after, before + 1);
  trnc_compiled_destroy(w);
  trnc_free(bytes);
  if (saved[0]) setenv("TRNC_SIM", saved, 1);
  else unsetenv("TRNC_SIM");
  trnc_diags_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_bindings),       cmocka_unit_test(test_accessors),
      cmocka_unit_test(test_int64_range),        cmocka_unit_test(test_null_pointers),
      cmocka_unit_test(test_zero_elements_with_pointer), cmocka_unit_test(test_bad_artifacts),
      cmocka_unit_test(test_concurrent_runs),    cmocka_unit_test(test_view_of_input),
      cmocka_unit_test(test_engines),           cmocka_unit_test(test_host_code_in_artifact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
