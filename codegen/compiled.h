/*
 * compiled.h — the compiled artifact: a NeuronCore program plus how the
 * torch-side inputs and outputs bind to its HBM buffers. Produced by
 * codegen/lower.c (trnc_compile), consumed by runtime/exec.c
 * (trnc_compiled_run).
 */
#ifndef TRNC_CODEGEN_COMPILED_H
#define TRNC_CODEGEN_COMPILED_H

#include "trnc/neuroncore.h"
#include "trnc/trnc.h"

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
  size_t nconsts;
  trnc_const_binding *consts;  /* calloc'd array */
  size_t ninputs, noutputs;
  trnc_io *inputs, *outputs;
  trnc_io_binding *in_bind, *out_bind;
  int64_t scratch_bytes;   /* HBM for INTERNAL buffers (trnc_nc_program_scratch_bytes) */
  trnc_compile_report report;
  char target_name[16];
};

/**
 * Checks the binding contract that trnc_compiled_run checks before every
 * run (runtime/exec.c): every input, output and constant binding fits its
 * boundary descriptor and program buffer, and every INPUT/OUTPUT buffer is
 * bound exactly once. trnc_compiled_deserialize calls it, so an artifact
 * loaded from bytes never fails this at run time.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL artifact or program),
 * TRNC_ERR_MALFORMED (one diagnostic names the binding and the rule),
 * TRNC_ERR_NOMEM.
 */
trnc_status trnc_compiled_check_bindings(const trnc_compiled *c, trnc_diags *diags);

#endif
