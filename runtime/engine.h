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
 * first differing byte). Unset: for a planned run (an artifact's), the
 * interpreter until the interpreter time spent on the program reaches the
 * JIT's expected compile time for it, then the JIT (the ski-rental rule:
 * whatever the number of runs, the total is at most about twice what the
 * better engine in hindsight would have taken; a program run a few times
 * never pays for LLVM); for a bare program (trnc_nc_simulate), the
 * interpreter.
 *
 * A program with collective steps always runs on the interpreter, which
 * drives the caller's distributed engine (trnc_nc_simulate_with); whatever
 * TRNC_SIM says, neither the JIT nor check mode sees it.
 */
#ifndef TRNC_RUNTIME_ENGINE_H
#define TRNC_RUNTIME_ENGINE_H

#include <stdatomic.h>

#include "codegen/neuroncore/nc_internal.h"

typedef enum trnc_engine {
  TRNC_ENGINE_INTERP = 0,
  TRNC_ENGINE_JIT = 1,
  TRNC_ENGINE_CHECK = 2,
  TRNC_ENGINE_AUTO = 3 /* a planned run's default: the interpreter until its
                        * time pays for the JIT's compile, then the JIT */
} trnc_engine;

/** The engine TRNC_SIM names (read on every call, so a process may switch
 *  between runs); when unset or empty, AUTO for an artifact's run, else
 *  INTERP. An unknown value is TRNC_ERR_INVALID_ARGUMENT with a diagnostic
 *  listing the valid ones. */
trnc_status trnc_engine_from_env(trnc_engine *out, bool artifact, trnc_diags *diags);

/** The diagnostic of a gather/scatter index out of range (both engines):
 *  TRNC_ERR_LIMIT naming instruction i of kernel k. */
trnc_status nc_index_error(const trnc_nc_program *p, size_t k, size_t i, int64_t idx, int64_t partition,
                           int64_t rows, trnc_diags *diags);

/* ---- engine selection (runtime/engine.c) ---------------------------------------- */

typedef struct trnc_host_code trnc_host_code;
struct trnc_host_object;

/** The JIT state of one run plan (trnc_nc_sim_plan): its run count and its
 *  host code, compiled by the first run that wants it (one thread compiles;
 *  a concurrent run interprets meanwhile, computing the same bits). Zeroed
 *  memory is an empty slot. */
typedef struct trnc_engine_slot {
  atomic_uint runs;
  atomic_llong interp_ns; /* interpreter time of AUTO runs so far */
  atomic_int state;       /* 0: no host code yet, 1: being compiled, 2: decided */
  atomic_llong budget_ns; /* AUTO's expected compile time (0: not computed yet) */
  trnc_host_code *code;   /* when state is 2; NULL: the program runs on the interpreter */
  /* the artifact's host code slot (NULL for a bare program): stored code
   * there is loaded instead of compiled; code compiled here is published
   * there for the cache to store */
  struct trnc_host_object *_Atomic *host_obj;
} trnc_engine_slot;

/** The engine slot of a run plan (runtime/nc_sim.c). */
trnc_engine_slot *nc_plan_slot(trnc_nc_sim_plan *pl);

/**
 * The engine of one run of a verified program without collective steps:
 * *e is what trnc_engine_from_env said (AUTO for a planned artifact run) and
 * becomes INTERP, JIT or CHECK; the host code is returned for JIT and CHECK
 * (compiled here on first use, for SBUF/PSUM laid out part_stride bytes per
 * partition), NULL for INTERP (also when the JIT does not translate the
 * program, logged once to stderr when TRNC_DEBUG is set).
 */
const trnc_host_code *trnc_engine_pick(trnc_engine_slot *s, const trnc_nc_program *p,
                                       const int64_t part_stride[2], trnc_engine *e);
/** Adds ns nanoseconds of interpreter time to an AUTO run's slot (the
 *  evidence on which AUTO decides to compile, trnc_engine_pick). */
void trnc_engine_note_interp(trnc_engine_slot *s, long long ns);
/** Seconds the slot's host code took to compile; 0 if it has none. */
double trnc_engine_slot_seconds(const trnc_engine_slot *s);
/** Frees the slot's host code (its machine code unloads). */
void trnc_engine_slot_release(trnc_engine_slot *s);

/* ---- host code (runtime/host_llvm.c, runtime/llvm.c) ------------------------ */

/** Error record a JIT'd kernel fills before it returns nonzero (a gather or
 *  scatter index out of range): the instruction, index, tile partition and
 *  table rows, for the interpreter's diagnostic. */
typedef struct trnc_host_err {
  int64_t instr, index, partition, rows;
} trnc_host_err;

/** One instruction function of host code ("<prefix>_f<n>", shared by the
 *  instructions that differ only in where their operands are): s0..s4 the
 *  addresses of element 0 of partition 0 of the instruction's operand slots
 *  (nc_slot order; NULL for an unused slot), tmp a float workspace of
 *  trnc_host_code's tmp_floats elements, instr the instruction's index in
 *  its kernel (for *err), imm0..imm2 its immediates. Returns 0, or 1 with
 *  *err filled. */
typedef int32_t (*trnc_host_instr_fn)(uint8_t *s0, uint8_t *s1, uint8_t *s2, uint8_t *s3, uint8_t *s4, float *tmp,
                                      trnc_host_err *err, int64_t instr, float imm0, float imm1, float imm2);

/**
 * JIT-compiles a verified program for SBUF/PSUM laid out part_stride[0] /
 * part_stride[1] bytes per partition: translation, LLVM's default<O2> for
 * the host CPU, ORC LLJIT with a resource tracker of its own. Errors:
 * TRNC_ERR_UNSUPPORTED (an instruction the JIT does not translate, or a
 * collective step; the diagnostic names it: run the interpreter),
 * TRNC_ERR_INTERNAL (LLVM failed; the message is LLVM's), TRNC_ERR_NOMEM.
 */
trnc_status trnc_host_compile(const trnc_nc_program *p, const int64_t part_stride[2], trnc_host_code **out,
                              trnc_diags *diags);
/**
 * Loads host code stored with an artifact (trnc_host_object, from
 * trnc_host_object_of in an earlier process) for verified program p and
 * layout part_stride, without LLVM's optimizer or code generator. Errors:
 * TRNC_ERR_UNSUPPORTED (o is for another host key, another program or
 * layout: compile instead), TRNC_ERR_INTERNAL (the JIT is unavailable or
 * rejects the object), TRNC_ERR_NOMEM.
 */
trnc_status trnc_host_load(const trnc_nc_program *p, const int64_t part_stride[2],
                           const struct trnc_host_object *o, trnc_host_code **out, trnc_diags *diags);
/** A copy of h's object file as an artifact keeps it (fresh: not yet
 *  stored); NULL when out of memory. */
struct trnc_host_object *trnc_host_object_of(const trnc_host_code *h);
/** This host's code key: LLVM version, target triple, CPU name and
 *  features ("" if the JIT is unavailable). Stored host code with another
 *  key is never loaded. */
const char *trnc_host_code_key(void);
/** Drops one owner of h (a program compiled or loaded twice shares its
 *  code); the last unloads the machine code and frees h. NULL is a no-op. */
void trnc_host_destroy(trnc_host_code *h);
/** Floats of workspace a run of h needs (its `tmp`). */
int64_t trnc_host_tmp_floats(const trnc_host_code *h);
/** Runs every kernel of h (compiled from p) in order on bound device
 *  memory: hbm[b] the base of program buffer b, sbuf/psum laid out as h was
 *  compiled for, tmp trnc_host_tmp_floats(h) floats. SBUF/PSUM need no NaN
 *  fill: the verifier proved that no kernel reads a byte before writing it.
 *  Errors: TRNC_ERR_LIMIT (a gather/scatter index out of range; the
 *  interpreter's diagnostic). */
trnc_status trnc_host_run(const trnc_host_code *h, const trnc_nc_program *p, uint8_t *const *hbm,
                          uint8_t *sbuf, uint8_t *psum, float *tmp, trnc_diags *diags);
/** The number of functions p's host code has (trnc_host_plan: instructions
 *  that differ only in where their operands are share one), computed
 *  without LLVM; 0 if p has no schedule or memory ran out. */
size_t trnc_host_function_count(const trnc_nc_program *p);
/** Seconds trnc_host_compile spent on h (translation, optimization and
 *  machine code). */
double trnc_host_compile_seconds(const trnc_host_code *h);
/** Where h's compile time went, for TRNC_DEBUG's log line: "F functions;
 *  translate T ms, optimize O ms, machine code C ms, link L ms" (into buf of
 *  n bytes; loaded code reports its link only). */
void trnc_host_compile_phases(const trnc_host_code *h, char *buf, size_t n);

#endif
