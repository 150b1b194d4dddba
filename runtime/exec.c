/*
 * exec.c — runs a compiled artifact (struct trnc_compiled,
 * codegen/neuroncore/artifact.h, which owns it and its binding contract) on
 * the NeuronCore simulator: binds the caller's torch-side tensors to the
 * program's HBM buffers, converts where the device computes in a narrower
 * type, and fills outputs that are host copies.
 *
 * The first run of an artifact checks the binding contract
 * (trnc_artifact_bind_map; a violation is TRNC_ERR_INTERNAL: a trnc bug,
 * never the caller's fault) and builds the simulator's run plan
 * (trnc_nc_sim_plan: schedules, SBUF/PSUM/scratch memory); both are kept in
 * the artifact (run_state) for every later run, since neither can change.
 * The program passed trnc_nc_program_verify when it was compiled or loaded:
 * runs use trnc_nc_simulate_planned.
 *
 * Zero-element tensors need no caller pointer (it may be NULL, as
 * torch's data_ptr() of an empty tensor can be 0): when the program declares
 * a buffer for one, the run gives it a private zeroed block instead.
 *
 * Thread safety: concurrent runs of one artifact are allowed. The run state
 * is built once (the first finished build is installed atomically, a
 * concurrent loser frees its own); the plan's memory serves one run at a
 * time and a concurrent run allocates its own (trnc_nc_simulate_planned).
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/artifact.h"
#include "ir/diag.h"
#include "runtime/engine.h"

/* ---- strided element walks ------------------------------------------------- */

/** Odometer over the logical (row-major) index space of a trnc_io: `off` is
 *  the element offset (sum of idx[d] * stride[d]) of the current element. */
typedef struct walk {
  const trnc_io *io;
  int64_t idx[TRNC_MAX_RANK];
  int64_t off;
} walk;

/** Starts a walk at element 0. */
static void walk_init(walk *w, const trnc_io *io) {
  memset(w, 0, sizeof *w);
  w->io = io;
}

/** Advances to the next element in row-major order (no-op past the end). */
static void walk_next(walk *w) {
  const trnc_io *io = w->io;
  for (int d = io->rank - 1; d >= 0; d--) {
    w->off += io->stride[d];
    if (++w->idx[d] < io->shape[d]) return;
    w->off -= io->stride[d] * io->shape[d];
    w->idx[d] = 0;
  }
}

/** "[1,4,0]": the current index of a walk, into buf. */
static const char *walk_index(const walk *w, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf + len, n - len, "[");
  for (int d = 0; d < w->io->rank && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%" PRId64, d ? "," : "", w->idx[d]);
  if (len < n) snprintf(buf + len, n - len, "]");
  return buf;
}

/* ---- element conversion ---------------------------------------------------- */

/** True for the integer and bool dtypes. */
/** Reads one integer element of dtype dt at p. */
static int64_t load_int(trnc_dtype dt, const uint8_t *p) {
  switch (dt) {
    case TRNC_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case TRNC_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TRNC_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case TRNC_I8: return (int8_t)p[0];
    case TRNC_BOOL: return p[0] != 0;
    default: return p[0]; /* U8 */
  }
}

/** Reads one floating-point element of dtype dt at p, exactly, as double. */
static double load_float(trnc_dtype dt, const uint8_t *p) {
  switch (dt) {
    case TRNC_F64: { double v; memcpy(&v, p, 8); return v; }
    case TRNC_F32: { float v; memcpy(&v, p, 4); return v; }
    default: {
      size_t es = trnc_dtype_size(dt);
      uint32_t bits = 0;
      if (es == 1) bits = p[0];
      else { uint16_t h; memcpy(&h, p, 2); bits = h; }
      return trnc_nc_decode(dt, bits);
    }
  }
}

/** Writes integer v as dtype dt at p (wraps for narrower integers, as a C
 *  cast; floats round to nearest). */
static void store_int(trnc_dtype dt, uint8_t *p, int64_t v) {
  switch (dt) {
    case TRNC_I64: memcpy(p, &v, 8); return;
    case TRNC_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); return; }
    case TRNC_I16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); return; }
    case TRNC_I8: p[0] = (uint8_t)(int8_t)v; return;
    case TRNC_U8: p[0] = (uint8_t)v; return;
    case TRNC_BOOL: p[0] = v != 0; return;
    case TRNC_F64: { double x = (double)v; memcpy(p, &x, 8); return; }
    case TRNC_F32: { float x = (float)v; memcpy(p, &x, 4); return; }
    default: {
      uint32_t bits = trnc_nc_encode(dt, (float)v);
      if (trnc_dtype_size(dt) == 1) p[0] = (uint8_t)bits;
      else { uint16_t h = (uint16_t)bits; memcpy(p, &h, 2); }
    }
  }
}

/** Writes v as dtype dt at p: floats round to nearest even; integers
 *  truncate toward zero and saturate, NaN -> 0 (the simulator's rule). */
static void store_float(trnc_dtype dt, uint8_t *p, double v) {
  switch (dt) {
    case TRNC_F64: memcpy(p, &v, 8); return;
    case TRNC_F32: { float x = (float)v; memcpy(p, &x, 4); return; }
    case TRNC_F16: case TRNC_BF16: case TRNC_F8E4M3: case TRNC_F8E5M2: {
      uint32_t bits = trnc_nc_encode(dt, (float)v);
      if (trnc_dtype_size(dt) == 1) p[0] = (uint8_t)bits;
      else { uint16_t h = (uint16_t)bits; memcpy(p, &h, 2); }
      return;
    }
    default: {
      int64_t x;
      if (v != v) x = 0;
      else if (v >= 9.2233720368547758e18) x = INT64_MAX;
      else if (v <= -9.2233720368547758e18) x = INT64_MIN;
      else x = (int64_t)v;
      if (dt == TRNC_BOOL) { p[0] = v != 0.0 && v == v; return; }
      store_int(dt, p, x);
    }
  }
}

/**
 * Torch layout -> contiguous device buffer (input conversion). Walks the
 * torch strides of `io` from `src` and writes numel elements of `ddt` to dst.
 * int64 values outside the input's range (in_range) are an error naming the
 * input index `which`, the value and its index (TRNC_ERR_LIMIT).
 */
/* The values an int32/int64 input may hold: int64 ones run as int32; the
 * legality scan may have proved the graph exact only for inputs within
 * [-int_bound, int_bound] (trnc_graph_check_bound). */
static void in_range(const trnc_io *io, int64_t *lo, int64_t *hi) {
  *lo = io->int_bound ? -io->int_bound : TRNC_I64_INPUT_MIN;
  *hi = io->int_bound ? io->int_bound : TRNC_I64_INPUT_MAX;
}

static trnc_status range_error(const trnc_io *io, size_t which, int64_t v, const char *ix,
                               trnc_diags *diags) {
  int64_t lo, hi;
  in_range(io, &lo, &hi);
  const char *dn = io->dtype == TRNC_I64 ? "int64" : "int32";
  if (!io->int_bound)
    return trnc_diag_error(
        diags, TRNC_ERR_LIMIT,
        "input %zu: %s value %" PRId64 " at index %s is outside [%" PRId64 ", %" PRId64
        "], the int32 range trnc accepts for int64 graph inputs (NeuronCore engines compute "
        "int64 tensors in int32; see docs/dtypes.md)", which, dn, v, ix, lo, hi);
  return trnc_diag_error(
      diags, TRNC_ERR_LIMIT,
      "input %zu: %s value %" PRId64 " at index %s is outside [%" PRId64 ", %" PRId64
      "], the range this graph was compiled for: trnc proved its integer arithmetic exact for "
      "int32/int64 inputs within it (NeuronCore engines compute int64 tensors in int32; see "
      "docs/dtypes.md)", which, dn, v, ix, lo, hi);
}

/** int32 inputs are read in place; with an input bound they are checked
 *  against it like int64 ones (TRNC_ERR_LIMIT names the value). */
static trnc_status check_int32_in(const trnc_io *io, const void *src, size_t which,
                                  trnc_diags *diags) {
  int64_t n = trnc_io_numel(io), lo, hi;
  in_range(io, &lo, &hi);
  walk w;
  walk_init(&w, io);
  for (int64_t k = 0; k < n; k++, walk_next(&w)) {
    int32_t v;
    memcpy(&v, (const uint8_t *)src + w.off * 4, 4);
    if (v < lo || v > hi) {
      char ix[160];
      return range_error(io, which, v, walk_index(&w, ix, sizeof ix), diags);
    }
  }
  return TRNC_OK;
}

static trnc_status convert_in(const trnc_io *io, const uint8_t *src, trnc_dtype ddt, uint8_t *dst,
                              size_t which, trnc_diags *diags) {
  int64_t n = trnc_io_numel(io), lo, hi;
  in_range(io, &lo, &hi);
  int64_t tes = (int64_t)trnc_dtype_size(io->dtype), des = (int64_t)trnc_dtype_size(ddt);
  walk w;
  walk_init(&w, io);
  if (io->dtype == TRNC_F64 && ddt == TRNC_F32) { /* the common float path */
    for (int64_t k = 0; k < n; k++, walk_next(&w)) {
      double v;
      memcpy(&v, src + w.off * 8, 8);
      float f = (float)v;
      memcpy(dst + k * 4, &f, 4);
    }
    return TRNC_OK;
  }
  for (int64_t k = 0; k < n; k++, walk_next(&w)) {
    const uint8_t *e = src + w.off * tes;
    uint8_t *o = dst + k * des;
    if (trnc_io_dtype_is_int(io->dtype)) {
      int64_t v = load_int(io->dtype, e);
      if (io->dtype == TRNC_I64 && (v < lo || v > hi)) {
        char ix[160];
        return range_error(io, which, v, walk_index(&w, ix, sizeof ix), diags);
      }
      store_int(ddt, o, v);
    } else {
      store_float(ddt, o, load_float(io->dtype, e));
    }
  }
  return TRNC_OK;
}

/** Contiguous device buffer of `ddt` -> torch layout of `io` at dst (output
 *  conversion: int32 -> int64 sign-extends, float32 -> float64 is exact). */
static void convert_out(const trnc_io *io, uint8_t *dst, trnc_dtype ddt, const uint8_t *src) {
  int64_t n = trnc_io_numel(io);
  int64_t tes = (int64_t)trnc_dtype_size(io->dtype), des = (int64_t)trnc_dtype_size(ddt);
  walk w;
  walk_init(&w, io);
  for (int64_t k = 0; k < n; k++, walk_next(&w)) {
    const uint8_t *e = src + k * des;
    uint8_t *o = dst + w.off * tes;
    if (trnc_io_dtype_is_int(ddt)) store_int(io->dtype, o, load_int(ddt, e));
    else store_float(io->dtype, o, load_float(ddt, e));
  }
}

/** Element-by-element copy between two tensors of the same dtype and shape
 *  and possibly different strides. */
static void copy_strided(const trnc_io *dio, uint8_t *dst, const trnc_io *sio, const uint8_t *src) {
  int64_t n = trnc_io_numel(dio);
  size_t es = trnc_dtype_size(dio->dtype);
  walk wd, ws;
  walk_init(&wd, dio);
  walk_init(&ws, sio);
  for (int64_t k = 0; k < n; k++, walk_next(&wd), walk_next(&ws))
    memcpy(dst + wd.off * (int64_t)es, src + ws.off * (int64_t)es, es);
}

/* ---- run state: what every run of one artifact shares ---------------------- */

/** Built by the first run, kept in the artifact (trnc_compiled.run_state). */
typedef struct run_state {
  trnc_artifact_buf *map; /* checked binding map, one entry per program buffer */
  trnc_nc_sim_plan *plan;
} run_state;

/** Frees a run state (the artifact's run_state_free). */
static void run_state_free(void *v) {
  run_state *rs = v;
  if (!rs) return;
  trnc_nc_sim_plan_destroy(rs->plan);
  free(rs->map);
  free(rs);
}

/** The artifact's run state, built and installed on first use. */
static trnc_status run_state_get(const trnc_compiled *c, run_state **out, trnc_diags *diags) {
  trnc_compiled *mc = (trnc_compiled *)c; /* run_state is the artifact's mutable cache */
  run_state *rs = atomic_load_explicit(&mc->run_state, memory_order_acquire);
  if (rs) {
    *out = rs;
    return TRNC_OK;
  }
  size_t nbufs = trnc_nc_program_buffer_count(c->prog);
  rs = calloc(1, sizeof *rs);
  if (rs) rs->map = malloc((nbufs ? nbufs : 1) * sizeof *rs->map);
  if (!rs || !rs->map) {
    run_state_free(rs);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc_compiled_run: out of memory");
  }
  trnc_status st = trnc_artifact_bind_map(c, false, rs->map, diags);
  if (!st) st = trnc_nc_sim_plan_create(c->prog, &rs->plan, diags);
  if (st) {
    run_state_free(rs);
    return st;
  }
  nc_plan_slot(rs->plan)->host_obj = &mc->host_obj; /* stored host code in, compiled code out */
  void *expected = NULL;
  mc->run_state_free = run_state_free;
  if (!atomic_compare_exchange_strong_explicit(&mc->run_state, &expected, rs, memory_order_acq_rel,
                                               memory_order_acquire)) {
    run_state_free(rs); /* another thread installed its own first */
    rs = expected;
  }
  *out = rs;
  return TRNC_OK;
}

/* ---- run --------------------------------------------------------------------- */

/** Buffers up to this count need no allocation per run. */
#define RUN_STACK_BUFS 32

/** Per-run memory: the simulator's pointer arrays and the blocks this run
 *  allocated (conversion buffers, stand-ins for zero-element tensors). */
typedef struct runmem {
  const trnc_artifact_buf *map;
  const void **sim_in;
  void **sim_out;
  void **owned; /* one per program buffer, NULL if the caller's memory is used */
  void *stack[3 * RUN_STACK_BUFS];
  void *heap;
} runmem;

/** Frees everything a run allocated. */
static void runmem_free(runmem *m, size_t nbufs) {
  if (m->owned)
    for (size_t b = 0; b < nbufs; b++) free(m->owned[b]);
  free(m->heap);
}

/**
 * Runs the compiled program on the simulator (see trnc.h). Steps: the run
 * state (bindings checked, plan built: first run only); set up each INPUT
 * buffer (caller memory, or a converted copy); set up each OUTPUT buffer
 * (caller memory, or a device block); simulate; convert device outputs back;
 * fill host-copy outputs in order.
 */
trnc_status trnc_compiled_run(const trnc_compiled *c, const void *const *inputs,
                              void *const *outputs, trnc_diags *diags) {
  return trnc_compiled_run_with(c, inputs, outputs, NULL, diags);
}

trnc_status trnc_compiled_run_with(const trnc_compiled *c, const void *const *inputs,
                                   void *const *outputs, const trnc_collective_engine *engine,
                                   trnc_diags *diags) {
  if (!c || !c->prog)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_compiled_run: NULL artifact");
  if ((c->ninputs && !inputs) || (c->noutputs && !outputs))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_run: NULL input or output pointer array");
  const trnc_nc_program *p = c->prog;
  size_t nbufs = trnc_nc_program_buffer_count(p);
  run_state *rs = NULL;
  trnc_status st = run_state_get(c, &rs, diags);
  if (st) return st;
  runmem m;
  m.map = rs->map;
  m.heap = NULL;
  void **arrays = m.stack;
  if (nbufs > RUN_STACK_BUFS) {
    arrays = m.heap = malloc(3 * nbufs * sizeof *arrays);
    if (!arrays) return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc_compiled_run: out of memory");
  }
  size_t nb = nbufs > RUN_STACK_BUFS ? nbufs : RUN_STACK_BUFS;
  memset(arrays, 0, 3 * nb * sizeof *arrays);
  m.sim_in = (const void **)arrays;
  m.sim_out = arrays + nb;
  m.owned = arrays + 2 * nb;

  /* inputs */
  for (size_t i = 0; i < c->ninputs; i++) {
    const trnc_io *io = &c->inputs[i];
    const trnc_io_binding *b = &c->in_bind[i];
    if (b->buffer < 0) continue;
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, (size_t)b->buffer);
    int slot = m.map[b->buffer].slot;
    int64_t n = trnc_io_numel(io);
    if (n == 0 || b->convert) {
      uint8_t *blk = calloc(1, (size_t)pb->bytes);
      if (!blk) {
        st = trnc_diag_error(diags, TRNC_ERR_NOMEM,
                             "trnc_compiled_run: out of memory for input %zu (%" PRId64 " bytes)",
                             i, pb->bytes);
        goto out;
      }
      m.owned[b->buffer] = blk;
      m.sim_in[slot] = blk;
      if (n == 0) continue;
    }
    if (!inputs[i]) {
      st = trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_run: input %zu is NULL but has %" PRId64 " elements",
                           i, n);
      goto out;
    }
    if (io->dtype == TRNC_I32 && io->int_bound && (st = check_int32_in(io, inputs[i], i, diags)))
      goto out;
    if (b->convert) {
      st = convert_in(io, inputs[i], b->device_dtype, m.owned[b->buffer], i, diags);
      if (st) goto out;
    } else {
      m.sim_in[slot] = inputs[i];
    }
  }

  /* constants: read in place */
  for (size_t k = 0; k < c->nconsts; k++)
    m.sim_in[m.map[c->consts[k].buffer].slot] = c->consts[k].data;

  /* outputs */
  for (size_t j = 0; j < c->noutputs; j++) {
    const trnc_io *io = &c->outputs[j];
    const trnc_io_binding *b = &c->out_bind[j];
    if (io->is_none) continue;
    int64_t n = trnc_io_numel(io);
    if (n > 0 && !outputs[j]) {
      st = trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_run: output %zu is NULL but has %" PRId64 " elements",
                           j, n);
      goto out;
    }
    if (b->buffer < 0 || b->copy_of_input >= 0 || b->copy_of_output >= 0) continue;
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, (size_t)b->buffer);
    int slot = m.map[b->buffer].slot;
    if (n == 0 || b->convert) {
      uint8_t *blk = calloc(1, (size_t)pb->bytes);
      if (!blk) {
        st = trnc_diag_error(diags, TRNC_ERR_NOMEM,
                             "trnc_compiled_run: out of memory for output %zu (%" PRId64 " bytes)",
                             j, pb->bytes);
        goto out;
      }
      m.owned[b->buffer] = blk;
      m.sim_out[slot] = blk;
    } else {
      m.sim_out[slot] = outputs[j];
    }
  }

  st = trnc_nc_simulate_planned(rs->plan, m.sim_in, m.sim_out, engine, diags);
  if (st) goto out;

  /* device outputs back into the torch layout */
  for (size_t j = 0; j < c->noutputs; j++) {
    const trnc_io *io = &c->outputs[j];
    const trnc_io_binding *b = &c->out_bind[j];
    if (io->is_none || b->buffer < 0 || b->copy_of_input >= 0 || b->copy_of_output >= 0 ||
        !b->convert || trnc_io_numel(io) == 0)
      continue;
    convert_out(io, outputs[j], b->device_dtype, m.owned[b->buffer]);
  }
  /* host copies, in output order (a copy of an earlier copy sees its data) */
  for (size_t j = 0; j < c->noutputs; j++) {
    const trnc_io *io = &c->outputs[j];
    const trnc_io_binding *b = &c->out_bind[j];
    if (io->is_none || trnc_io_numel(io) == 0) continue;
    if (b->copy_of_input >= 0) {
      if (!inputs[b->copy_of_input]) {
        st = trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                             "trnc_compiled_run: input %d is NULL but output %zu copies it",
                             b->copy_of_input, j);
        goto out;
      }
      if (b->copy_view) /* a view of the input: its memory from copy_offset, the output's strides */
        copy_strided(io, outputs[j], io,
                     (const uint8_t *)inputs[b->copy_of_input] + b->copy_offset * (int64_t)trnc_dtype_size(io->dtype));
      else
        copy_strided(io, outputs[j], &c->inputs[b->copy_of_input], inputs[b->copy_of_input]);
    } else if (b->copy_of_output >= 0 && b->copy_view) {
      copy_strided(io, outputs[j], io,
                   (const uint8_t *)outputs[b->copy_of_output] + b->copy_offset * (int64_t)trnc_dtype_size(io->dtype));
    } else if (b->copy_of_output >= 0) {
      copy_strided(io, outputs[j], &c->outputs[b->copy_of_output], outputs[b->copy_of_output]);
    }
  }
out:
  runmem_free(&m, nbufs);
  return st;
}

double trnc_compiled_jit_seconds(const trnc_compiled *c) {
  const run_state *rs = c ? atomic_load_explicit(&((trnc_compiled *)c)->run_state, memory_order_acquire) : NULL;
  return rs ? trnc_nc_sim_plan_jit_seconds(rs->plan) : 0.0;
}
