/*
 * artifact_serialize.c — struct trnc_compiled <-> trnc.cache.Artifact bytes
 * (codegen/neuroncore/artifact.proto): the artifact's owner module
 * (artifact.h) maps it to bytes and back, for the cache and MegaCache.
 *
 * Serialization is deterministic (protobuf-c packs fields in number order;
 * the wall-clock compile_s is left out). Deserialization trusts nothing:
 * protobuf-c unpacks with a capped allocator, then every field is range
 * checked, every extent recomputed from shape and strides, every binding
 * index checked against the program, and the program passes the hardware
 * verifier before the artifact is returned (trnc_compiled_deserialize; a
 * store that took in only verified programs and whose checksum matched
 * skips the verifier: trnc_artifact_deserialize). The load limits (instructions
 * per kernel, scratch bytes) are checked first, and the binding contract of
 * codegen/neuroncore/artifact.h (trnc_compiled_check_bindings) before the
 * verifier, so a loaded artifact that passes never fails it at run time.
 * The artifact is created, allocated and destroyed in artifact.c; this
 * file maps it to and from bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/artifact.pb-c.h"
#include "codegen/neuroncore/artifact.h"
#include "ir/arena.h"
#include "ir/diag.h"
#include "trnc/cache.h"

/* protobuf-c may make at most this many allocations while unpacking */
#define MAX_UNPACK_ALLOCS (16u << 20)

/* ---- load limits ----------------------------------------------------------- */

/** Checks the program against the load limits (trnc/cache.h): instructions
 *  per kernel and scratch bytes. TRNC_ERR_LIMIT with one diagnostic. */
static trnc_status check_limits(const trnc_nc_program *p, trnc_diags *diags) {
  for (size_t k = 0; k < trnc_nc_program_kernel_count(p); k++) {
    size_t n = trnc_nc_kernel_instr_count(p, k);
    if (n > TRNC_ARTIFACT_MAX_KERNEL_INSTRS)
      return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                             "compiled artifact: kernel %zu has %zu instructions, over the limit "
                             "of %d per kernel an artifact may hold",
                             k, n, TRNC_ARTIFACT_MAX_KERNEL_INSTRS);
  }
  int64_t need = 0, scratch = trnc_nc_program_scratch_bytes(p);
  for (size_t b = 0; b < trnc_nc_program_buffer_count(p); b++) {
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, b);
    if (pb->kind != TRNC_NC_BUF_INTERNAL || pb->bytes <= 0) continue;
    if (pb->bytes > TRNC_ARTIFACT_MAX_SCRATCH_BYTES || need > TRNC_ARTIFACT_MAX_SCRATCH_BYTES)
      need = TRNC_ARTIFACT_MAX_SCRATCH_BYTES + 1; /* saturate: no overflow */
    else
      need += (pb->bytes + 63) / 64 * 64;
  }
  if (scratch > TRNC_ARTIFACT_MAX_SCRATCH_BYTES || scratch > need)
    return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                           "compiled artifact: %" PRId64 " bytes of HBM scratch, over the %s (%" PRId64
                           " bytes)",
                           scratch,
                           scratch > TRNC_ARTIFACT_MAX_SCRATCH_BYTES
                               ? "limit an artifact may declare"
                               : "sum of its internal buffers, each rounded up to 64 bytes",
                           scratch > TRNC_ARTIFACT_MAX_SCRATCH_BYTES ? TRNC_ARTIFACT_MAX_SCRATCH_BYTES
                                                                     : need);
  return TRNC_OK;
}

/* ---- serialize ------------------------------------------------------------- */

/** Fills an Io message from a descriptor (arrays in arena a); false on OOM. */
static bool io_to_pb(trnc_arena *a, const trnc_io *io, Trnc__Cache__Io *m) {
  trnc__cache__io__init(m);
  m->dtype = (uint32_t)io->dtype;
  m->is_none = io->is_none;
  m->extent_bytes = io->extent_bytes;
  m->int_bound = io->int_bound;
  m->rng_seed = io->rng_seed;
  m->complex = io->complex;
  int rank = io->is_none ? 0 : io->rank;
  m->rank = (uint32_t)rank;
  if (rank > 0) {
    m->n_shape = m->n_stride = (size_t)rank;
    m->shape = trnc_arena_array(a, (size_t)rank, sizeof(int64_t));
    m->stride = trnc_arena_array(a, (size_t)rank, sizeof(int64_t));
    if (!m->shape || !m->stride) return false;
    memcpy(m->shape, io->shape, sizeof(int64_t) * (size_t)rank);
    memcpy(m->stride, io->stride, sizeof(int64_t) * (size_t)rank);
  }
  return true;
}

/** Fills a Binding message. */
static void bind_to_pb(const trnc_io_binding *b, Trnc__Cache__Binding *m) {
  trnc__cache__binding__init(m);
  m->buffer = b->buffer;
  m->device_dtype = (uint32_t)b->device_dtype;
  m->convert = b->convert;
  m->device_bytes = b->device_bytes;
  m->copy_of_input = b->copy_of_input;
  m->copy_of_output = b->copy_of_output;
  m->copy_view = b->copy_view;
  m->copy_offset = b->copy_offset;
}

/** n Io + Binding message pointer arrays for one side (inputs or outputs). */
static bool side_to_pb(trnc_arena *a, size_t n, const trnc_io *ios, const trnc_io_binding *binds,
                       Trnc__Cache__Io ***pios, Trnc__Cache__Binding ***pbinds) {
  if (n == 0) return true;
  Trnc__Cache__Io **pi = trnc_arena_array(a, n, sizeof *pi);
  Trnc__Cache__Io *mi = trnc_arena_array(a, n, sizeof *mi);
  Trnc__Cache__Binding **pb = trnc_arena_array(a, n, sizeof *pb);
  Trnc__Cache__Binding *mb = trnc_arena_array(a, n, sizeof *mb);
  if (!pi || !mi || !pb || !mb) return false;
  for (size_t i = 0; i < n; i++) {
    if (!io_to_pb(a, &ios[i], &mi[i])) return false;
    bind_to_pb(&binds[i], &mb[i]);
    pi[i] = &mi[i];
    pb[i] = &mb[i];
  }
  *pios = pi;
  *pbinds = pb;
  return true;
}

trnc_status trnc_compiled_serialize(const trnc_compiled *c, uint8_t **bytes, size_t *len,
                                    trnc_diags *diags) {
  if (bytes) *bytes = NULL;
  if (len) *len = 0;
  if (!c || !bytes || !len || !c->prog || (c->ninputs && (!c->inputs || !c->in_bind)) ||
      (c->noutputs && (!c->outputs || !c->out_bind)) || (c->nconsts && !c->consts))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_serialize: NULL argument or incomplete artifact");
  trnc_status st = check_limits(c->prog, diags);
  if (st) return st;
  trnc_arena a;
  trnc_arena_init(&a, 0);
  uint8_t *prog = NULL, *out = NULL;
  size_t plen = 0;
  if ((st = trnc_nc_program_serialize(c->prog, &prog, &plen))) {
    st = trnc_diag_error(diags, st, "trnc_compiled_serialize: cannot serialize the program (%s)",
                         trnc_status_name(st));
    goto done;
  }
  Trnc__Cache__Artifact m;
  trnc__cache__artifact__init(&m);
  m.version = TRNC_ARTIFACT_FORMAT_VERSION;
  m.target = (char *)c->target_name;
  m.program.data = prog;
  m.program.len = plen;
  m.scratch_bytes = c->scratch_bytes;
  m.n_inputs = m.n_in_bind = c->ninputs;
  m.n_outputs = m.n_out_bind = c->noutputs;
  bool ok = side_to_pb(&a, c->ninputs, c->inputs, c->in_bind, &m.inputs, &m.in_bind) &&
            side_to_pb(&a, c->noutputs, c->outputs, c->out_bind, &m.outputs, &m.out_bind);
  if (ok && c->nconsts) {
    m.n_consts = c->nconsts;
    m.consts = trnc_arena_array(&a, c->nconsts, sizeof *m.consts);
    Trnc__Cache__Constant *k = trnc_arena_array(&a, c->nconsts, sizeof *k);
    ok = m.consts && k;
    for (size_t i = 0; ok && i < c->nconsts; i++) {
      trnc__cache__constant__init(&k[i]);
      k[i].buffer = c->consts[i].buffer;
      k[i].data.data = c->consts[i].data;
      k[i].data.len = c->consts[i].bytes > 0 ? (size_t)c->consts[i].bytes : 0;
      m.consts[i] = &k[i];
    }
  }
  Trnc__Cache__Report r;
  trnc__cache__report__init(&r);
  const trnc_compile_report *rp = &c->report;
  uint64_t ei[5], oe[4];
  for (int e = 0; e < 5; e++) ei[e] = rp->engine_instructions[e];
  for (int e = 0; e < 4; e++) oe[e] = rp->ops_per_engine[e];
  r.ir_nodes = rp->ir_nodes;
  r.kernels = rp->kernels;
  r.instructions = rp->instructions;
  r.n_engine_instructions = 5;
  r.engine_instructions = ei;
  r.n_ops_per_engine = 4;
  r.ops_per_engine = oe;
  r.hbm_planned_bytes = rp->hbm_planned_bytes;
  r.hbm_unplanned_bytes = rp->hbm_unplanned_bytes;
  r.sbuf_peak_bytes = rp->sbuf_peak_bytes;
  r.psum_peak_bytes = rp->psum_peak_bytes;
  r.est_time_s = rp->est_time_s;
  r.tensor_flop_util = rp->tensor_flop_util;
  r.dma_bw_util = rp->dma_bw_util;
  r.est_collective_s = rp->est_collective_s;
  m.report = &r;
  Trnc__Cache__HostCode hc;
  const trnc_host_object *ho = atomic_load(&((trnc_compiled *)c)->host_obj);
  if (ho) {
    trnc__cache__host_code__init(&hc);
    hc.key = ho->key;
    hc.prefix = ho->prefix;
    hc.object.data = ho->bytes;
    hc.object.len = ho->len;
    hc.tmp_floats = ho->tmp_floats;
    hc.n_part_stride = 2;
    hc.part_stride = (int64_t *)ho->part_stride;
    m.host = &hc;
  }
  if (!ok) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc_compiled_serialize: out of memory");
    goto done;
  }
  size_t n = trnc__cache__artifact__get_packed_size(&m);
  if (n > TRNC_ARTIFACT_MAX_BYTES) {
    st = trnc_diag_error(diags, TRNC_ERR_LIMIT,
                         "compiled artifact of %zu bytes exceeds the 1 GiB artifact limit", n);
    goto done;
  }
  out = malloc(n ? n : 1);
  if (!out) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc_compiled_serialize: out of memory (%zu bytes)",
                         n);
    goto done;
  }
  trnc__cache__artifact__pack(&m, out);
  *bytes = out;
  *len = n;
  out = NULL;
done:
  free(out);
  trnc_free(prog);
  trnc_arena_release(&a);
  return st;
}

/* ---- deserialize ----------------------------------------------------------- */

typedef struct capped {
  size_t count, limit;
} capped;

static void *cap_alloc(void *ud, size_t n) {
  capped *c = ud;
  if (++c->count > c->limit) return NULL;
  return malloc(n);
}
static void cap_free(void *ud, void *p) { free(p); }

/** Reports a malformed artifact. */
static trnc_status bad(trnc_diags *d, const char *fmt, const char *what, size_t i) {
  char msg[160];
  snprintf(msg, sizeof msg, fmt, what, i);
  return trnc_diag_error(d, TRNC_ERR_MALFORMED, "compiled artifact bytes: %s", msg);
}

/** True for a dtype a boundary tensor may have (a known dtype with a size). */
static bool boundary_dtype_ok(uint32_t dt) {
  return dt > TRNC_DTYPE_INVALID && dt < TRNC_DTYPE_COUNT && trnc_dtype_size((trnc_dtype)dt) > 0;
}

/** Descriptor from an Io message, with the extent recomputed from dtype,
 *  shape and strides and compared; false if anything is out of range. */
static bool io_from_pb(const Trnc__Cache__Io *m, trnc_io *io) {
  memset(io, 0, sizeof *io);
  if (m->is_none) {
    io->is_none = true;
    return m->rank == 0 && m->n_shape == 0 && m->n_stride == 0 && m->extent_bytes == 0;
  }
  if (!boundary_dtype_ok(m->dtype) || m->rank > TRNC_MAX_RANK || m->n_shape != m->rank ||
      m->n_stride != m->rank)
    return false;
  if (m->int_bound < 0 || m->int_bound > INT32_MAX) return false;
  io->dtype = (trnc_dtype)m->dtype;
  io->rank = (int)m->rank;
  io->int_bound = m->int_bound;
  io->rng_seed = m->rng_seed;
  io->complex = m->complex;
  if (io->complex && ((io->dtype != TRNC_F32 && io->dtype != TRNC_F64) || io->rank < 1 || m->shape[io->rank - 1] != 2))
    return false;
  if (io->rng_seed && (io->dtype != TRNC_I32 || io->rank != 1 || m->shape[0] != 2)) return false;
  int64_t extent = 1;
  bool empty = false;
  for (uint32_t d = 0; d < m->rank; d++) {
    int64_t n = m->shape[d], s = m->stride[d], t;
    if (n < 0 || s < 0) return false;
    io->shape[d] = n;
    io->stride[d] = s;
    if (n == 0) empty = true;
    else if (__builtin_mul_overflow(n - 1, s, &t) || __builtin_add_overflow(extent, t, &extent))
      return false;
  }
  int64_t bytes;
  if (empty) bytes = 0;
  else if (__builtin_mul_overflow(extent, (int64_t)trnc_dtype_size(io->dtype), &bytes))
    return false;
  io->extent_bytes = (size_t)bytes;
  return m->extent_bytes == (uint64_t)bytes;
}

/** Binding from a Binding message; nbufs program buffers, `self` is the
 *  index of this boundary tensor, out: an output binding. */
static bool bind_from_pb(const Trnc__Cache__Binding *m, size_t nbufs, size_t ninputs, size_t self,
                         bool out, trnc_io_binding *b) {
  if (m->buffer < -1 || (m->buffer >= 0 && (size_t)m->buffer >= nbufs)) return false;
  if (m->device_dtype >= TRNC_DTYPE_COUNT || m->device_bytes < 0) return false;
  if (m->copy_of_input < -1 || (m->copy_of_input >= 0 && (!out || (size_t)m->copy_of_input >= ninputs)))
    return false;
  /* a view may name a later output the program writes (the artifact's
   * binding check bounds it) */
  if (m->copy_of_output < -1 ||
      (m->copy_of_output >= 0 && (!out || (!m->copy_view && (size_t)m->copy_of_output >= self))))
    return false;
  b->buffer = m->buffer;
  b->device_dtype = (trnc_dtype)m->device_dtype;
  b->convert = m->convert;
  b->device_bytes = m->device_bytes;
  b->copy_of_input = m->copy_of_input;
  b->copy_of_output = m->copy_of_output;
  if (m->copy_view && ((m->copy_of_input < 0) == (m->copy_of_output < 0) || m->copy_offset < 0)) return false;
  b->copy_view = m->copy_view;
  b->copy_offset = m->copy_offset;
  return true;
}

trnc_status trnc_compiled_deserialize(const uint8_t *bytes, size_t len, trnc_compiled **out,
                                      trnc_diags *diags) {
  return trnc_artifact_deserialize(bytes, len, true, out, diags);
}

trnc_status trnc_artifact_deserialize(const uint8_t *bytes, size_t len, bool verify_program,
                                      trnc_compiled **out, trnc_diags *diags) {
  if (out) *out = NULL;
  if (!out || (!bytes && len))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_deserialize: NULL argument");
  if (len > TRNC_ARTIFACT_MAX_BYTES)
    return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                           "compiled artifact of %zu bytes exceeds the 1 GiB artifact limit", len);
  capped cap = {0, MAX_UNPACK_ALLOCS};
  ProtobufCAllocator alloc = {cap_alloc, cap_free, &cap};
  Trnc__Cache__Artifact *m =
      trnc__cache__artifact__unpack(&alloc, len, bytes ? bytes : (const uint8_t *)"");
  if (!m)
    return trnc_diag_error(diags, cap.count > cap.limit ? TRNC_ERR_LIMIT : TRNC_ERR_MALFORMED,
                           "bytes are not a trnc.cache.Artifact message (%s)",
                           cap.count > cap.limit ? "allocation cap reached" : "wire format error");
  trnc_status st = TRNC_OK;
  struct trnc_compiled *c = NULL;
  if (m->version != TRNC_ARTIFACT_FORMAT_VERSION) {
    st = trnc_diag_error(diags, TRNC_ERR_VERSION,
                         "compiled artifact format version %" PRIu32 "; this trnc reads version %d",
                         m->version, TRNC_ARTIFACT_FORMAT_VERSION);
    goto done;
  }
  if (!m->target || !trnc_nc_target_by_name(m->target) || strlen(m->target) >= 16) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "compiled artifact bytes: unknown target '%.32s'",
                         m->target ? m->target : "");
    goto done;
  }
  if (m->n_inputs != m->n_in_bind || m->n_outputs != m->n_out_bind) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                         "compiled artifact bytes: descriptor and binding counts differ");
    goto done;
  }
  c = trnc_artifact_create(m->target);
  if (!c) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
    goto done;
  }
  trnc_nc_program *prog = NULL;
  size_t mark = trnc_diags_count(diags);
  st = trnc_nc_program_deserialize(m->program.data, m->program.len, &prog, diags);
  c->prog = prog;
  if (st) {
    if (st == TRNC_ERR_INVALID_ARGUMENT) st = TRNC_ERR_MALFORMED;
    goto done;
  }
  if ((st = check_limits(prog, diags))) goto done;
  if (strcmp(trnc_nc_program_target(prog)->name, c->target_name) != 0) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                         "compiled artifact bytes: the program's target is not the artifact's");
    goto done;
  }
  size_t nbufs = trnc_nc_program_buffer_count(prog);
  if (!trnc_artifact_alloc_inputs(c, m->n_inputs, m->n_consts) ||
      !trnc_artifact_alloc_outputs(c, m->n_outputs)) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
    goto done;
  }
  c->nconsts = m->n_consts; /* data filled below; destroy frees what is there */
  for (size_t i = 0; i < c->ninputs; i++) {
    if (!io_from_pb(m->inputs[i], &c->inputs[i]) || c->inputs[i].is_none) {
      st = bad(diags, "%s %zu: bad dtype, rank, dims, strides or extent", "input", i);
      goto done;
    }
    if (!bind_from_pb(m->in_bind[i], nbufs, c->ninputs, i, false, &c->in_bind[i])) {
      st = bad(diags, "%s binding %zu: index out of range", "input", i);
      goto done;
    }
  }
  for (size_t j = 0; j < c->noutputs; j++) {
    if (!io_from_pb(m->outputs[j], &c->outputs[j])) {
      st = bad(diags, "%s %zu: bad dtype, rank, dims, strides or extent", "output", j);
      goto done;
    }
    if (!bind_from_pb(m->out_bind[j], nbufs, c->ninputs, j, true, &c->out_bind[j])) {
      st = bad(diags, "%s binding %zu: index out of range", "output", j);
      goto done;
    }
  }
  for (size_t k = 0; k < c->nconsts; k++) {
    const Trnc__Cache__Constant *km = m->consts[k];
    if (km->buffer < 0 || (size_t)km->buffer >= nbufs) {
      st = bad(diags, "%s %zu: buffer index out of range", "constant", k);
      goto done;
    }
    c->consts[k].buffer = km->buffer;
    c->consts[k].bytes = (int64_t)km->data.len;
    c->consts[k].data = malloc(km->data.len ? km->data.len : 1);
    if (!c->consts[k].data) {
      st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory (constant of %zu bytes)",
                           km->data.len);
      goto done;
    }
    if (km->data.len) memcpy(c->consts[k].data, km->data.data, km->data.len);
  }
  c->scratch_bytes = trnc_nc_program_scratch_bytes(prog);
  if (m->scratch_bytes != c->scratch_bytes) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                         "compiled artifact bytes: scratch size disagrees with the program");
    goto done;
  }
  const Trnc__Cache__Report *r = m->report;
  if (!r || r->n_engine_instructions != 5 || r->n_ops_per_engine != 4) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "compiled artifact bytes: bad compile report");
    goto done;
  }
  trnc_compile_report *rp = &c->report;
  rp->ir_nodes = (size_t)r->ir_nodes;
  rp->kernels = (size_t)r->kernels;
  rp->instructions = (size_t)r->instructions;
  for (int e = 0; e < 5; e++) rp->engine_instructions[e] = (size_t)r->engine_instructions[e];
  for (int e = 0; e < 4; e++) rp->ops_per_engine[e] = (size_t)r->ops_per_engine[e];
  rp->hbm_planned_bytes = r->hbm_planned_bytes;
  rp->hbm_unplanned_bytes = r->hbm_unplanned_bytes;
  rp->sbuf_peak_bytes = r->sbuf_peak_bytes;
  rp->psum_peak_bytes = r->psum_peak_bytes;
  rp->est_time_s = r->est_time_s;
  rp->tensor_flop_util = r->tensor_flop_util;
  rp->dma_bw_util = r->dma_bw_util;
  rp->est_collective_s = r->est_collective_s;
  rp->collectives = trnc_nc_program_collective_count(prog);
  rp->compile_s = 0.0;
  /* host code: kept as opaque bytes for runtime/, which loads it only on a
   * host with the same key; a malformed record drops the code, not the
   * artifact (the program still runs, on code compiled anew) */
  const Trnc__Cache__HostCode *h = m->host;
  if (h && h->key && h->key[0] && h->prefix && h->prefix[0] && h->object.len && h->tmp_floats >= 0 &&
      h->n_part_stride == 2 && h->part_stride[0] > 0 && h->part_stride[1] > 0) {
    trnc_host_object *o = calloc(1, sizeof *o);
    if (o) {
      o->key = strdup(h->key);
      o->prefix = strdup(h->prefix);
      o->bytes = malloc(h->object.len);
      if (o->key && o->prefix && o->bytes) {
        memcpy(o->bytes, h->object.data, h->object.len);
        o->len = h->object.len;
        o->tmp_floats = h->tmp_floats;
        o->part_stride[0] = h->part_stride[0];
        o->part_stride[1] = h->part_stride[1];
        atomic_store(&c->host_obj, o);
      } else {
        trnc_host_object_free(o);
      }
    }
  }
  /* the run-time binding contract, so a loaded artifact never fails it */
  if ((st = trnc_compiled_check_bindings(c, diags))) goto done;
  /* last: the hardware verifier (the expensive check), unless the bytes
   * come from a store that only takes in verified programs */
  mark = trnc_diags_count(diags);
  if (verify_program && trnc_nc_program_verify(prog, diags) != TRNC_OK) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                         "compiled artifact bytes: the program fails hardware verification "
                         "(%zu diagnostics above)",
                         trnc_diags_count(diags) - mark);
    goto done;
  }
done:
  trnc__cache__artifact__free_unpacked(m, &alloc);
  if (st) {
    trnc_compiled_destroy(c);
    return st;
  }
  *out = c;
  return TRNC_OK;
}
