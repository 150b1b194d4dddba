/*
 * engine.h — runtime/'s two execution engines for a verified NeuronCore
 * program and what they share. Internal to runtime/.
 *
 *  - the interpreter (runtime/nc_sim.c): the reference; runs any program;
 *  - the JIT (runtime/host_llvm.c translates the program into LLVM IR,
 *    runtime/llvm.c compiles it with ORC LLJIT and runs it): native host
 *    code, bit-identical to the interpreter.
 *
 * TRNC_SIM selects the engine for each run of a compiled artifact:
 * "interp", "jit" (a program holding an instruction the JIT does not
 * translate runs on the interpreter) or "check" (both, outputs compared
 * bit for bit; a difference is TRNC_ERR_INTERNAL naming the buffer and the
 * first differing byte). Unset: for an artifact, the interpreter on its
 * first run and the JIT from its second (a program run once never pays for
 * LLVM); for a bare program (trnc_nc_simulate), the interpreter.
 *
 * A program with collective steps always runs on the interpreter, which
 * drives the caller's distributed engine (trnc_nc_simulate_with); whatever
 * TRNC_SIM says, neither the JIT nor check mode sees it.
 */
#ifndef TRNC_RUNTIME_ENGINE_H
#define TRNC_RUNTIME_ENGINE_H

#include "codegen/neuroncore/nc_internal.h"

typedef enum trnc_engine {
  TRNC_ENGINE_INTERP = 0,
  TRNC_ENGINE_JIT = 1,
  TRNC_ENGINE_CHECK = 2,
  TRNC_ENGINE_AUTO = 3 /* an artifact's default: interpreter first, then JIT */
} trnc_engine;

/** The engine TRNC_SIM names (read on every call, so a process may switch
 *  between runs); when unset or empty, AUTO for an artifact's run, else
 *  INTERP. An unknown value is TRNC_ERR_INVALID_ARGUMENT with a diagnostic
 *  listing the valid ones. */
trnc_status trnc_engine_from_env(trnc_engine *out, bool artifact, trnc_diags *diags);

/* ---- device memory of one run (runtime/nc_sim.c) ---------------------------- */

/** SBUF, PSUM, the HBM scratch and the HBM base pointer of every program
 *  buffer (INPUT/OUTPUT: the caller's memory; INTERNAL: inside scratch). */
typedef struct nc_devmem {
  uint8_t *sbuf, *psum, *scratch;
  uint8_t **hbm;
} nc_devmem;

/** Allocates the device memory of p (scratch NaN-filled) and binds
 *  inputs[i] / outputs[j] (as trnc_nc_simulate). Errors:
 *  TRNC_ERR_INVALID_ARGUMENT (a NULL buffer pointer), TRNC_ERR_NOMEM. On
 *  error nothing stays allocated. */
trnc_status nc_devmem_open(const trnc_nc_program *p, const void *const *inputs,
                           void *const *outputs, nc_devmem *m, trnc_diags *diags);
void nc_devmem_close(nc_devmem *m);
/** NaN-fills (0xFF bytes) the SBUF and PSUM bytes of every partition that
 *  kernel k can touch, as every kernel starts. */
void nc_devmem_fill_kernel(const trnc_nc_program *p, size_t k, nc_devmem *m);

/** The interpreter on a verified program (no verification here). Its
 *  collective steps run through `engine` (NULL: a program with collectives
 *  fails with TRNC_ERR_UNSUPPORTED naming the first one). */
trnc_status nc_interpret(const trnc_nc_program *p, const void *const *inputs, void *const *outputs,
                         const trnc_collective_engine *engine, trnc_diags *diags);
/** The diagnostic of a gather/scatter index out of range (both engines):
 *  TRNC_ERR_LIMIT naming instruction i of kernel k. */
trnc_status nc_index_error(const trnc_nc_program *p, size_t k, size_t i, int64_t idx, int64_t partition,
                           int64_t rows, trnc_diags *diags);

/* ---- engine selection (runtime/engine.c) ---------------------------------------- */

struct trnc_compiled;
/** Runs the verified program of artifact c on the engine TRNC_SIM names
 *  (trnc_nc_simulate's contract). The JIT's host code is compiled on the
 *  first JIT run and kept with c (destroyed with it); a program the JIT does
 *  not translate runs on the interpreter (logged once to stderr when
 *  TRNC_DEBUG is set). */
trnc_status trnc_engine_run(const struct trnc_compiled *c, const void *const *inputs,
                            void *const *outputs, trnc_diags *diags);
/** As trnc_engine_run for a bare verified program (trnc_nc_simulate): the
 *  JIT compiles for this one run. */
trnc_status trnc_engine_simulate(const trnc_nc_program *p, const void *const *inputs,
                                 void *const *outputs, trnc_diags *diags);

/* ---- host code (runtime/host_llvm.c, runtime/llvm.c) ------------------------ */

/** Error record a JIT'd kernel fills before it returns nonzero (a gather or
 *  scatter index out of range): the instruction, index, tile partition and
 *  table rows, for the interpreter's diagnostic. */
typedef struct trnc_host_err {
  int64_t instr, index, partition, rows;
} trnc_host_err;

/** One kernel's host code: hbm[b] the base of program buffer b, sbuf/psum
 *  the device memory, tmp a float workspace of trnc_host_code's tmp_floats
 *  elements. Returns 0, or 1 with *err filled. */
typedef int32_t (*trnc_host_kernel_fn)(uint8_t *const *hbm, uint8_t *sbuf, uint8_t *psum,
                                       float *tmp, trnc_host_err *err);

/** A program compiled to host code (runtime/llvm.c owns it). */
typedef struct trnc_host_code trnc_host_code;

/**
 * JIT-compiles a verified program: translation, LLVM's default<O2> for the
 * host CPU, ORC LLJIT with a resource tracker of its own. Errors:
 * TRNC_ERR_UNSUPPORTED (an instruction the JIT does not translate, or a
 * collective step; the diagnostic names it: run the interpreter), TRNC_ERR_INTERNAL (LLVM
 * failed; the message is LLVM's), TRNC_ERR_NOMEM.
 */
trnc_status trnc_host_compile(const trnc_nc_program *p, trnc_host_code **out, trnc_diags *diags);
/** Unloads the machine code and frees h. NULL is a no-op. */
void trnc_host_destroy(trnc_host_code *h);
/** Runs h (compiled from p) on host memory, with trnc_nc_simulate's
 *  contract and diagnostics. */
trnc_status trnc_host_run(const trnc_host_code *h, const trnc_nc_program *p,
                          const void *const *inputs, void *const *outputs, trnc_diags *diags);
/** Seconds trnc_host_compile spent on h (translation, optimization and
 *  machine code). */
double trnc_host_compile_seconds(const trnc_host_code *h);

#endif
