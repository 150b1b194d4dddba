/*
 * host_llvm.h — the host backend's translator (runtime/host_llvm.c) as the
 * JIT wrapper (runtime/llvm.c) calls it. Internal to runtime/; the only
 * header besides LLVM's own that carries LLVM-C types.
 */
#ifndef TRNC_RUNTIME_HOST_LLVM_H
#define TRNC_RUNTIME_HOST_LLVM_H

#include <llvm-c/Core.h>

#include "runtime/engine.h"

/** A C function the generated code calls, bound by address in the JIT
 *  (the same libm functions and dtype codecs the interpreter calls). */
typedef struct trnc_host_extern {
  const char *name; /* symbol in the generated module */
  void *addr;
} trnc_host_extern;

/** The externs, terminated by a NULL name. */
extern const trnc_host_extern trnc_host_externs[];

/** An instruction by kernel and index. */
typedef struct trnc_host_where {
  uint32_t kernel, instr;
} trnc_host_where;

/** One step of a kernel's host code: its instruction and the function that
 *  runs it. */
typedef struct trnc_host_step {
  uint32_t instr, fn;
} trnc_host_step;

/** How host code runs a program: kernel k's instructions in schedule order
 *  (NOPs left out) are step[start[k] .. start[k+1]); function f is
 *  "<prefix>_f<f>", translated from instruction rep[f] (the first to use
 *  it). Needs no LLVM, so code loaded from the cache is driven by the same
 *  plan as code compiled in this process. */
typedef struct trnc_host_plan {
  size_t nkernels, nfns;
  size_t *start;
  trnc_host_step *step;
  trnc_host_where *rep;
} trnc_host_plan;

/** Builds p's plan (p verified). Errors: TRNC_ERR_INVALID_GRAPH (no
 *  schedule), TRNC_ERR_NOMEM. */
trnc_status trnc_host_plan_build(const trnc_nc_program *p, trnc_host_plan *out, trnc_diags *diags);
/** Frees a plan's arrays (a zeroed plan is a no-op). */
void trnc_host_plan_free(trnc_host_plan *pl);

/**
 * Translates verified program p into module *out (created in context C):
 * one function "<prefix>_f<f>" (trnc_host_instr_fn) per function f of its
 * plan, a loop nest over the instruction's access patterns, for SBUF and
 * PSUM laid out part_stride[0] / part_stride[1] bytes per partition (the
 * run plan's layout, trnc_nc_sim_plan); trnc_host_run calls them in the
 * plan's order. *tmp_floats: the float workspace the functions need.
 * Errors: TRNC_ERR_UNSUPPORTED (an instruction this translator does not
 * handle, or a collective step: the diagnostic names it; such programs run
 * on the interpreter), TRNC_ERR_NOMEM.
 */
trnc_status trnc_host_translate(const trnc_nc_program *p, const trnc_host_plan *plan, const int64_t part_stride[2],
                                LLVMContextRef C, const char *prefix, LLVMModuleRef *out, int64_t *tmp_floats,
                                trnc_diags *diags);

#endif
