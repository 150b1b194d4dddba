/*
 * artifact.c — the compiled artifact's one owner (codegen/neuroncore/
 * artifact.h): creation and allocation for its builders (trnc_compile, the
 * cache's deserializer), the public accessors, destroy, and the binding
 * contract that trnc_compiled_run and trnc_compiled_deserialize check.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/artifact.h"
#include "ir/diag.h"

/* ---- create and allocate ---------------------------------------------------- */

trnc_compiled *trnc_artifact_create(const char *target_name) {
  trnc_compiled *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  size_t n = target_name ? strlen(target_name) : 0;
  if (n >= sizeof c->target_name) n = sizeof c->target_name - 1;
  if (n) memcpy(c->target_name, target_name, n);
  c->report.target = c->target_name;
  return c;
}

bool trnc_artifact_alloc_inputs(trnc_compiled *c, size_t ninputs, size_t max_consts) {
  c->ninputs = ninputs;
  c->inputs = calloc(ninputs ? ninputs : 1, sizeof *c->inputs);
  c->in_bind = calloc(ninputs ? ninputs : 1, sizeof *c->in_bind);
  c->consts = calloc(max_consts ? max_consts : 1, sizeof *c->consts);
  if (!c->consts) c->nconsts = 0;
  return c->inputs && c->in_bind && c->consts;
}

bool trnc_artifact_alloc_outputs(trnc_compiled *c, size_t noutputs) {
  c->noutputs = noutputs;
  c->outputs = calloc(noutputs ? noutputs : 1, sizeof *c->outputs);
  c->out_bind = calloc(noutputs ? noutputs : 1, sizeof *c->out_bind);
  return c->outputs && c->out_bind;
}

/* ---- accessors and destroy ------------------------------------------------ */

void trnc_host_object_free(trnc_host_object *o) {
  if (!o) return;
  free(o->key);
  free(o->prefix);
  free(o->bytes);
  free(o);
}

/** Frees the program, the descriptor/binding/constant arrays and the
 *  struct (see the ownership contract in artifact.h). NULL is a no-op. */
void trnc_compiled_destroy(trnc_compiled *c) {
  if (!c) return;
  void *rs = atomic_load(&c->run_state);
  if (rs && c->run_state_free) c->run_state_free(rs);
  trnc_host_object_free(atomic_load(&c->host_obj));
  trnc_nc_program_destroy(c->prog);
  for (size_t i = 0; c->consts && i < c->nconsts; i++) free(c->consts[i].data);
  free(c->consts);
  free(c->inputs);
  free(c->outputs);
  free(c->in_bind);
  free(c->out_bind);
  free(c);
}

/** Number of graph inputs (placeholders); 0 for NULL. */
size_t trnc_compiled_input_count(const trnc_compiled *c) { return c ? c->ninputs : 0; }

/** Number of graph outputs (None slots included); 0 for NULL. */
size_t trnc_compiled_output_count(const trnc_compiled *c) { return c ? c->noutputs : 0; }

/** Descriptor of input i, or NULL if c is NULL or i is out of range. */
const trnc_io *trnc_compiled_input(const trnc_compiled *c, size_t i) {
  return (c && c->inputs && i < c->ninputs) ? &c->inputs[i] : NULL;
}

/** Descriptor of output i, or NULL if c is NULL or i is out of range. */
const trnc_io *trnc_compiled_output(const trnc_compiled *c, size_t i) {
  return (c && c->outputs && i < c->noutputs) ? &c->outputs[i] : NULL;
}

/** The compile report stored in the artifact; NULL for NULL. */
const trnc_compile_report *trnc_compiled_report(const trnc_compiled *c) {
  return c ? &c->report : NULL;
}

/** The NeuronCore program (owned by c); NULL for NULL. */
const struct trnc_nc_program *trnc_compiled_program(const trnc_compiled *c) {
  return c ? c->prog : NULL;
}

/* ---- boundary tensors ------------------------------------------------------- */

int64_t trnc_io_numel(const trnc_io *io) {
  int64_t n = 1;
  for (int d = 0; d < io->rank; d++) n *= io->shape[d];
  return n;
}

bool trnc_io_dtype_is_int(trnc_dtype dt) {
  return dt == TRNC_I64 || dt == TRNC_I32 || dt == TRNC_I16 || dt == TRNC_I8 ||
         dt == TRNC_U8 || dt == TRNC_BOOL;
}

/** True for the dtypes the runtime's converter reads and writes. */
static bool dtype_convertible(trnc_dtype dt) {
  return trnc_io_dtype_is_int(dt) || dt == TRNC_F64 || dt == TRNC_F32 || dt == TRNC_F16 ||
         dt == TRNC_BF16 || dt == TRNC_F8E4M3 || dt == TRNC_F8E5M2;
}

/* ---- binding contract ------------------------------------------------------ */

/** Where validation records the bindings, and whether the artifact was
 *  loaded from bytes (then a violation is malformed input, not a bug). */
typedef struct bindcheck {
  trnc_artifact_buf *map;
  bool loaded;
} bindcheck;

/** Reports a violation of the binding contract: a trnc bug in a compiled
 *  artifact (TRNC_ERR_INTERNAL), or TRNC_ERR_MALFORMED for one loaded from
 *  bytes (bc->loaded). */
static trnc_status bad_artifact(trnc_diags *diags, const bindcheck *bc, const char *what, size_t i,
                                const char *why) {
  if (bc->loaded)
    return trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                           "compiled artifact bytes: %s %zu %s", what, i, why);
  return trnc_diag_error(diags, TRNC_ERR_INTERNAL,
                         "compiled artifact: %s %zu %s (a trnc bug: please report it with "
                         "TRNC_DUMP_DIR output)",
                         what, i, why);
}

/** Checks one binding against the program and its boundary descriptor and
 *  records it in map. out: true for an output binding. */
static trnc_status check_binding(const trnc_compiled *c, const trnc_io *io,
                                 const trnc_io_binding *b, bool out, size_t i,
                                 const bindcheck *bc, trnc_diags *diags) {
  const char *what = out ? "output" : "input";
  trnc_artifact_buf *map = bc->map;
  if (io->is_none) {
    /* a None output, or an opaque input (a DeviceMesh) the program never reads */
    if (!out && b->buffer >= 0) return bad_artifact(diags, bc, what, i, "is opaque but bound to a buffer");
    return TRNC_OK;
  }
  if (!dtype_convertible(io->dtype) || trnc_dtype_size(io->dtype) == 0)
    return bad_artifact(diags, bc, what, i, "has a dtype the runtime cannot bind");
  if (io->rank < 0 || io->rank > TRNC_MAX_RANK)
    return bad_artifact(diags, bc, what, i, "has an invalid rank");
  for (int d = 0; d < io->rank; d++)
    if (io->shape[d] < 0) return bad_artifact(diags, bc, what, i, "has a negative dim");
  int64_t n = trnc_io_numel(io);
  if (out && b->copy_view) {
    bool of_in = b->copy_of_input >= 0;
    if (of_in == (b->copy_of_output >= 0))
      return bad_artifact(diags, bc, what, i, "is a view of neither one input nor one output");
    if (of_in ? (size_t)b->copy_of_input >= c->ninputs : (size_t)b->copy_of_output >= c->noutputs)
      return bad_artifact(diags, bc, what, i, "is a view of a tensor that does not exist");
    const trnc_io *s = of_in ? &c->inputs[b->copy_of_input] : &c->outputs[b->copy_of_output];
    /* the base output: one the program writes, or an earlier one */
    if (!of_in) {
      const trnc_io_binding *sb = &c->out_bind[b->copy_of_output];
      if (s->is_none || (size_t)b->copy_of_output == i ||
          ((size_t)b->copy_of_output > i && (sb->buffer < 0 || sb->copy_of_input >= 0 || sb->copy_of_output >= 0)))
        return bad_artifact(diags, bc, what, i, "is a view of an output that is not written before it");
    }
    if (s->dtype != io->dtype) return bad_artifact(diags, bc, what, i, "is a view of a tensor of another dtype");
    int64_t last = b->copy_offset; /* highest element index the view reads */
    for (int d = 0; d < io->rank && n > 0; d++) {
      if (io->stride[d] < 0 || (io->shape[d] > 1 && io->stride[d] > INT64_MAX / io->shape[d]))
        return bad_artifact(diags, bc, what, i, "is a view with invalid strides");
      last += io->stride[d] * (io->shape[d] - 1);
      if (last < 0) return bad_artifact(diags, bc, what, i, "is a view with invalid strides");
    }
    int64_t esz = (int64_t)trnc_dtype_size(io->dtype);
    if (b->copy_offset < 0 || (n > 0 && (uint64_t)(last + 1) > (uint64_t)s->extent_bytes / (uint64_t)esz))
      return bad_artifact(diags, bc, what, i, "is a view reaching outside its base");
    return TRNC_OK;
  }
  if (out && b->copy_of_input >= 0) {
    if ((size_t)b->copy_of_input >= c->ninputs)
      return bad_artifact(diags, bc, what, i, "copies an input that does not exist");
    const trnc_io *s = &c->inputs[b->copy_of_input];
    if (s->dtype != io->dtype || s->rank != io->rank ||
        memcmp(s->shape, io->shape, sizeof(int64_t) * (size_t)io->rank))
      return bad_artifact(diags, bc, what, i, "copies an input of another dtype or shape");
    return TRNC_OK;
  }
  if (out && b->copy_of_output >= 0) {
    if ((size_t)b->copy_of_output >= i)
      return bad_artifact(diags, bc, what, i, "copies an output that is not an earlier one");
    const trnc_io *s = &c->outputs[b->copy_of_output];
    if (s->is_none || s->dtype != io->dtype || s->rank != io->rank ||
        memcmp(s->shape, io->shape, sizeof(int64_t) * (size_t)io->rank))
      return bad_artifact(diags, bc, what, i, "copies an output of another dtype or shape");
    return TRNC_OK;
  }
  if (b->buffer < 0) {
    if (out && n > 0) return bad_artifact(diags, bc, what, i, "is written by nothing");
    return TRNC_OK;
  }
  const trnc_nc_buffer *pb = trnc_nc_program_buffer(c->prog, (size_t)b->buffer);
  if (!pb) return bad_artifact(diags, bc, what, i, "names a program buffer that does not exist");
  if (pb->kind != (out ? TRNC_NC_BUF_OUTPUT : TRNC_NC_BUF_INPUT))
    return bad_artifact(diags, bc, what, i, "is bound to a program buffer of another kind");
  if (map[b->buffer].io >= 0 || map[b->buffer].cnst >= 0)
    return bad_artifact(diags, bc, what, i, "shares its program buffer with another binding");
  map[b->buffer].io = (int)i;
  if (n == 0) return TRNC_OK; /* a private block stands in; nothing to check */
  if (!b->convert) {
    if (b->device_dtype != io->dtype)
      return bad_artifact(diags, bc, what, i, "is zero-copy but has another device dtype");
    if (pb->bytes > (int64_t)io->extent_bytes)
      return bad_artifact(diags, bc, what, i, "has a program buffer larger than the tensor");
  } else {
    if (!dtype_convertible(b->device_dtype) || !trnc_nc_dtype_supported(b->device_dtype))
      return bad_artifact(diags, bc, what, i, "converts to an unsupported device dtype");
    if (pb->bytes < n * (int64_t)trnc_dtype_size(b->device_dtype))
      return bad_artifact(diags, bc, what, i, "has a device buffer too small for its elements");
  }
  return TRNC_OK;
}

/* Checks every binding against the program and the boundary descriptors,
 * then that every INPUT/OUTPUT buffer is bound exactly once (see
 * artifact.h). */
trnc_status trnc_artifact_bind_map(const trnc_compiled *c, bool loaded, trnc_artifact_buf *map,
                                   trnc_diags *diags) {
  const bindcheck *bc = &(bindcheck){map, loaded};
  const trnc_nc_program *p = c->prog;
  size_t nbufs = trnc_nc_program_buffer_count(p), nin = 0, nout = 0;
  trnc_status st = TRNC_OK;
  for (size_t b = 0; b < nbufs; b++) {
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, b);
    map[b].io = -1;
    map[b].cnst = -1;
    map[b].slot = pb->kind == TRNC_NC_BUF_INPUT ? (int)nin++
                  : pb->kind == TRNC_NC_BUF_OUTPUT ? (int)nout++ : -1;
  }
  for (size_t i = 0; i < c->ninputs && !st; i++)
    st = check_binding(c, &c->inputs[i], &c->in_bind[i], false, i, bc, diags);
  for (size_t j = 0; j < c->noutputs && !st; j++)
    st = check_binding(c, &c->outputs[j], &c->out_bind[j], true, j, bc, diags);
  for (size_t k = 0; k < c->nconsts && !st; k++) {
    const trnc_const_binding *cb = &c->consts[k];
    const trnc_nc_buffer *pb = cb->buffer >= 0 ? trnc_nc_program_buffer(p, (size_t)cb->buffer) : NULL;
    if (!pb || pb->kind != TRNC_NC_BUF_INPUT)
      st = bad_artifact(diags, bc, "constant", k, "is not bound to an INPUT program buffer");
    else if (map[cb->buffer].io >= 0 || map[cb->buffer].cnst >= 0)
      st = bad_artifact(diags, bc, "constant", k, "shares its program buffer with another binding");
    else if (!cb->data || cb->bytes < pb->bytes)
      st = bad_artifact(diags, bc, "constant", k, "holds fewer bytes than its program buffer");
    else
      map[cb->buffer].cnst = (int)k;
  }
  for (size_t b = 0; b < nbufs && !st; b++) {
    const trnc_nc_buffer *pb = trnc_nc_program_buffer(p, b);
    if (pb->kind != TRNC_NC_BUF_INTERNAL && map[b].io < 0 && map[b].cnst < 0)
      st = bad_artifact(diags, bc, "program buffer", b,
                        "is bound by no graph input, output or constant");
  }
  return st;
}

trnc_status trnc_compiled_check_bindings(const trnc_compiled *c, trnc_diags *diags) {
  if (!c || !c->prog)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_compiled_check_bindings: NULL artifact");
  size_t nbufs = trnc_nc_program_buffer_count(c->prog);
  trnc_artifact_buf *map = malloc((nbufs ? nbufs : 1) * sizeof *map);
  if (!map) return trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
  trnc_status st = trnc_artifact_bind_map(c, true, map, diags);
  free(map);
  return st;
}
