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

/**
 * Translates verified program p into module *out (created in context C):
 * one function per kernel, named "<prefix>_k<k>" (trnc_host_kernel_fn),
 * straight-line over the kernel's instructions in schedule order, for SBUF
 * and PSUM laid out part_stride[0] / part_stride[1] bytes per partition (the
 * run plan's layout, trnc_nc_sim_plan).
 * *tmp_floats: the float workspace the kernels need.
 * Errors: TRNC_ERR_UNSUPPORTED (an instruction this translator does not
 * handle, or a collective step: the diagnostic names it; such programs run
 * on the interpreter), TRNC_ERR_INVALID_GRAPH (no schedule),
 * TRNC_ERR_NOMEM.
 */
trnc_status trnc_host_translate(const trnc_nc_program *p, const int64_t part_stride[2], LLVMContextRef C,
                                const char *prefix, LLVMModuleRef *out, int64_t *tmp_floats,
                                trnc_diags *diags);

#endif
