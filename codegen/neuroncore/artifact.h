/*
 * artifact.h — the compiled artifact (struct trnc_compiled): a NeuronCore
 * program plus how the torch-side inputs and outputs bind to its HBM
 * buffers. Part of the NeuronCore contract: codegen builds it
 * (codegen/lower.c, trnc_compile), runtime runs it (runtime/exec.c,
 * trnc_compiled_run) and cache stores its bytes (cache/store.c); this module
 * owns its memory and its binding contract (codegen/neuroncore/artifact.c)
 * and its bytes (artifact_serialize.c, artifact.proto).
 *
 * Ownership (trnc_compiled_destroy frees exactly this):
 *  - `prog` is owned by the artifact (trnc_nc_program_destroy).
 *  - `inputs`, `outputs`, `in_bind`, `out_bind` and `consts` are the arrays
 *    trnc_artifact_alloc_inputs / _outputs allocate; so is every
 *    `consts[i].data` for i < nconsts (malloc'd by the builder).
 *  - `report.target` points at `target_name`.
 *  - `run_state`, if set, through `run_state_free`; then `host_obj`, if set
 *    (trnc_host_object_free).
 *
 * Binding contract (trnc_artifact_bind_map checks it; a violation is
 * TRNC_ERR_INTERNAL for a compiled artifact, TRNC_ERR_MALFORMED for one
 * loaded from bytes):
 *  - an input binding with buffer >= 0 and every constant name an INPUT
 *    program buffer, an output binding an OUTPUT buffer; no two bindings
 *    share a buffer; every INPUT/OUTPUT program buffer is bound by exactly
 *    one boundary tensor or constant; a constant holds at least its
 *    buffer's bytes (the program reads consts[i].data in place);
 *  - convert=false: device_dtype equals the torch dtype and the program
 *    buffer is no larger than the tensor's extent_bytes (the program reads
 *    and writes the caller's memory with the torch strides);
 *  - convert=true: the program buffer holds at least numel elements of
 *    device_dtype (contiguous, row-major);
 *  - an output with at least one element that is not None is written by the
 *    program (buffer >= 0) or is a copy (copy_of_input / copy_of_output, which
 *    names a tensor of the same dtype and shape; copy_of_output names an
 *    earlier output; copy_view: a view of an input of the same dtype whose
 *    elements, from copy_offset >= 0 with the output's strides, lie inside
 *    the input's extent).
 * A compiled or loaded artifact's program has passed trnc_nc_program_verify
 * once: in trnc_compile, or in trnc_compiled_deserialize when its bytes
 * came from outside, or before it entered the local cache (a hit there
 * loads it with trnc_artifact_deserialize without verifying again). Runs
 * do not verify.
 */
#ifndef TRNC_CODEGEN_NEURONCORE_ARTIFACT_H
#define TRNC_CODEGEN_NEURONCORE_ARTIFACT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "trnc/neuroncore.h"
#include "trnc/trnc.h"

/** Host machine code of an artifact's program: the relocatable object file
 *  runtime/'s JIT compiled (runtime/llvm.c), kept with the artifact so that
 *  the cache stores it (artifact_serialize.c) and a later process on the same
 *  kind of host loads it without LLVM's optimizer. Opaque here: codegen and
 *  cache never look inside the bytes. All strings and bytes malloc'd. */
typedef struct trnc_host_object {
  char *key;          /* the host it runs on: LLVM version, target triple,
                       * CPU name and features; another key is a miss */
  char *prefix;       /* symbol prefix of its kernel functions */
  uint8_t *bytes;     /* the object file */
  size_t len;
  int64_t tmp_floats; /* float workspace its kernels need */
  int64_t part_stride[2]; /* SBUF, PSUM bytes per partition it was compiled for */
  _Atomic bool fresh; /* compiled by this process, not yet in the cache's file */
} trnc_host_object;

/** Frees o and everything it holds (NULL is a no-op). */
void trnc_host_object_free(trnc_host_object *o);

/** How one boundary tensor binds to the program. */
typedef struct trnc_io_binding {
  int buffer;              /* program buffer index; -1: the program does not touch it */
  trnc_dtype device_dtype; /* element type in the device buffer */
  /* true: the runtime converts between the torch layout (trnc_io) and a
   * contiguous device buffer of device_dtype (int64 <-> int32 with a range
   * check, float64 <-> float32). false: the device buffer *is* the caller's
   * memory (same dtype and strides; views stay zero-copy). */
  bool convert;
  int64_t device_bytes;    /* bytes of the device buffer */
  /* outputs only: >= 0 when this output is exactly input `copy_of_input`
   * (or, with copy_of_output, an earlier output) and is filled by a host
   * copy rather than by the program. */
  int copy_of_input;
  int copy_of_output;
  /* with copy_of_input: the output is a view of that input (a saved
   * transposed weight, a slice of an input): the copy reads the input's
   * memory from element copy_offset with the output's own strides. */
  bool copy_view;
  int64_t copy_offset;
} trnc_io_binding;

/** A graph constant (get_attr tensor): an INPUT buffer of the program that
 *  the runtime fills from these bytes (device dtype, contiguous). */
typedef struct trnc_const_binding {
  int buffer;
  uint8_t *data;           /* malloc'd */
  int64_t bytes;
} trnc_const_binding;

struct trnc_compiled {
  trnc_nc_program *prog;
  size_t nconsts;              /* constants filled in (<= the room allocated) */
  trnc_const_binding *consts;
  size_t ninputs, noutputs;
  trnc_io *inputs, *outputs;
  trnc_io_binding *in_bind, *out_bind;
  int64_t scratch_bytes;   /* HBM for INTERNAL buffers (trnc_nc_program_scratch_bytes) */
  trnc_compile_report report;
  char target_name[16];
  /* What runs share (runtime/exec.c: checked bindings, simulator plan and
   * memory), built by the first run; trnc_compiled_destroy frees it with
   * run_state_free. Opaque here: codegen never looks inside. */
  void *_Atomic run_state;
  void (*run_state_free)(void *);
  /* Host code of the program (set at most once: by deserialization, or by
   * runtime/ after its JIT compiled the program). */
  trnc_host_object *_Atomic host_obj;
};

/** New empty artifact for the target named target_name (at most 15
 *  characters; longer names are cut): no program, no boundary tensors,
 *  report.target set. NULL on allocation failure. */
trnc_compiled *trnc_artifact_create(const char *target_name);

/** Allocates ninputs zeroed input descriptors and bindings and room for
 *  max_consts zeroed constants (nconsts stays as it is: the builder counts
 *  what it fills in). Call once. False on allocation failure (the artifact
 *  stays destroyable; the caller reports TRNC_ERR_NOMEM). */
bool trnc_artifact_alloc_inputs(trnc_compiled *c, size_t ninputs, size_t max_consts);
/** Allocates noutputs zeroed output descriptors and bindings. Call once.
 *  False on allocation failure. */
bool trnc_artifact_alloc_outputs(trnc_compiled *c, size_t noutputs);

/** Where a program buffer is bound: the binding input/output and constant
 *  (-1 if none) and its slot among the INPUT (resp. OUTPUT) buffers, the
 *  index trnc_nc_simulate's inputs[] / outputs[] give it. */
typedef struct trnc_artifact_buf {
  int io;
  int cnst;
  int slot;
} trnc_artifact_buf;

/**
 * Checks the binding contract (above) and fills map, one entry per program
 * buffer (trnc_nc_program_buffer_count(c->prog) entries). loaded: the
 * artifact came from bytes, so a violation is TRNC_ERR_MALFORMED, else
 * TRNC_ERR_INTERNAL (a trnc bug). One diagnostic names the binding and the
 * rule.
 */
trnc_status trnc_artifact_bind_map(const trnc_compiled *c, bool loaded, trnc_artifact_buf *map,
                                   trnc_diags *diags);

/**
 * Checks the binding contract that trnc_compiled_run checks before every
 * run: trnc_compiled_deserialize calls it, so an artifact loaded from bytes
 * never fails it at run time.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL artifact or program),
 * TRNC_ERR_MALFORMED (one diagnostic names the binding and the rule),
 * TRNC_ERR_NOMEM.
 */
trnc_status trnc_compiled_check_bindings(const trnc_compiled *c, trnc_diags *diags);

/**
 * trnc_compiled_deserialize (trnc/cache.h: every field, the load limits and
 * the binding contract checked), with the hardware verifier only when
 * verify_program. false is for bytes whose program was verified before
 * they were stored and that are known unchanged since: an entry of the
 * local cache whose payload checksum matched (cache/entry.c). Errors: as
 * trnc_compiled_deserialize.
 */
trnc_status trnc_artifact_deserialize(const uint8_t *bytes, size_t len, bool verify_program,
                                      trnc_compiled **out, trnc_diags *diags);

/** Number of elements of a boundary tensor (1 for rank 0). */
int64_t trnc_io_numel(const trnc_io *io);

/** True for the integer dtypes and bool (the runtime converts them as
 *  integers). */
bool trnc_io_dtype_is_int(trnc_dtype dt);

#endif
