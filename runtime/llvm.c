/*
 * llvm.c — the JIT wrapper of the host backend: one ORC LLJIT per process
 * (created on first use) for the host CPU (LLVMGetHostCPUName/Features),
 * into which each compiled program's module goes with a resource tracker of
 * its own, so destroying the program (trnc_host_destroy, called when its
 * artifact is destroyed) unloads its machine code. The generated code calls
 * the C functions of trnc_host_externs, bound here by address. Besides
 * runtime/host_llvm.c (the translator) this is the only code that includes
 * LLVM-C (tests/check_layers.py checks it).
 *
 * Thread safety: compiles are serialized by one mutex (they are rare; runs
 * are not locked); a compiled program is read-only while it runs.
 */
#define _POSIX_C_SOURCE 200809L
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/diag.h"
#include "runtime/host_llvm.h"

const char *trnc_llvm_version(void) {
  static char buf[32];
  if (!buf[0]) {
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(buf, sizeof buf, "%u.%u.%u", major, minor, patch);
  }
  return buf;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the process's JIT ------------------------------------------------------------ */

static struct {
  pthread_once_t once;
  pthread_mutex_t lock;
  LLVMOrcLLJITRef jit;
  LLVMTargetMachineRef tm; /* for the optimization pipeline */
  char error[512];         /* why the JIT could not start, "" if it did */
  unsigned long long next; /* module serial number (symbol prefix) */
} G = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, NULL, NULL, "", 0};

/** Copies and disposes an LLVM error message into buf. */
static void take_error(LLVMErrorRef err, char *buf, size_t n) {
  char *m = LLVMGetErrorMessage(err);
  snprintf(buf, n, "%s", m);
  LLVMDisposeErrorMessage(m);
}

static LLVMTargetMachineRef host_machine(void) {
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  char *msg = NULL;
  LLVMTargetRef target = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(G.error, sizeof G.error, "no LLVM target for %s: %s", triple, msg ? msg : "");
  } else {
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                 LLVMCodeModelJITDefault);
    if (!tm) snprintf(G.error, sizeof G.error, "LLVM could not create a target machine for %s", triple);
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return tm;
}

static void jit_init(void) {
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    snprintf(G.error, sizeof G.error, "LLVM has no native target on this host");
    return;
  }
  LLVMTargetMachineRef jtm = host_machine();
  if (!jtm || !(G.tm = host_machine())) return;
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&G.jit, b);
  if (err) {
    take_error(err, G.error, sizeof G.error);
    G.jit = NULL;
    return;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(G.jit);
  size_t n = 0;
  while (trnc_host_externs[n].name) n++;
  LLVMOrcCSymbolMapPair syms[32];
  for (size_t i = 0; i < n && i < 32; i++) {
    syms[i].Name = LLVMOrcLLJITMangleAndIntern(G.jit, trnc_host_externs[i].name);
    syms[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)trnc_host_externs[i].addr;
    syms[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    syms[i].Sym.Flags.TargetFlags = 0;
  }
  err = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(syms, n));
  /* memset/memcpy that LLVM's own lowering may call come from the process */
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if (!err) err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(G.jit), NULL, NULL);
  if (err) {
    take_error(err, G.error, sizeof G.error);
    return;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
}

/* ---- compiled programs ------------------------------------------------------------- */

struct trnc_host_code {
  LLVMOrcResourceTrackerRef rt;
  size_t nkernels;
  trnc_host_kernel_fn *fn;
  int64_t tmp_floats;
  double compile_s;
};


void trnc_host_destroy(trnc_host_code *h) {
  if (!h) return;
  if (h->rt) {
    pthread_mutex_lock(&G.lock);
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(h->rt);
    if (err) LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(h->rt);
    pthread_mutex_unlock(&G.lock);
  }
  free(h->fn);
  free(h);
}

double trnc_host_compile_seconds(const trnc_host_code *h) { return h ? h->compile_s : 0.0; }

/** Optimizes M for the host and adds it to the JIT under tracker h->rt;
 *  looks up the kernels. Called with G.lock held. */
static trnc_status jit_add(trnc_host_code *h, LLVMOrcThreadSafeContextRef tsc, LLVMModuleRef M,
                           const char *prefix, trnc_diags *diags) {
  char msg[512];
  char *triple = LLVMGetTargetMachineTriple(G.tm);
  LLVMSetTarget(M, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(G.tm);
  LLVMSetModuleDataLayout(M, dl);
  LLVMDisposeTargetData(dl);
  const char *dump = getenv("TRNC_DUMP");
  bool dumping = dump && (strstr(dump, "host") || !strcmp(dump, "all"));
  if (dumping) fprintf(stderr, "; ---- host IR of %s (before optimization)\n", prefix), LLVMDumpModule(M);
  double t0 = now_s();
  LLVMPassBuilderOptionsRef opt = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopUnrolling(opt, 0); /* constant trip counts would unroll every nest */
  LLVMErrorRef err = LLVMRunPasses(M, "default<O2>", G.tm, opt);
  LLVMDisposePassBuilderOptions(opt);
  if (err) {
    LLVMDisposeModule(M);
    take_error(err, msg, sizeof msg);
    return trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: LLVM optimization failed: %s", msg);
  }
  if (dumping) fprintf(stderr, "; ---- host IR of %s (default<O2>, %.1f ms)\n", prefix, 1e3 * (now_s() - t0)), LLVMDumpModule(M);
  h->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(G.jit));
  err = LLVMOrcLLJITAddLLVMIRModuleWithRT(G.jit, h->rt, LLVMOrcCreateNewThreadSafeModule(M, tsc));
  for (size_t k = 0; !err && k < h->nkernels; k++) {
    char name[96];
    LLVMOrcExecutorAddress addr = 0;
    snprintf(name, sizeof name, "%s_k%zu", prefix, k);
    err = LLVMOrcLLJITLookup(G.jit, &addr, name);
    h->fn[k] = (trnc_host_kernel_fn)(uintptr_t)addr;
  }
  if (err) {
    take_error(err, msg, sizeof msg);
    return trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: LLVM JIT failed: %s", msg);
  }
  return TRNC_OK;
}

trnc_status trnc_host_compile(const trnc_nc_program *p, const int64_t part_stride[2], trnc_host_code **out,
                              trnc_diags *diags) {
  double t0 = now_s();
  *out = NULL;
  pthread_once(&G.once, jit_init);
  if (G.error[0] || !G.jit)
    return trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: the LLVM JIT is unavailable: %s", G.error);
  trnc_host_code *h = calloc(1, sizeof *h);
  if (h) h->fn = calloc(p->nkernels ? p->nkernels : 1, sizeof *h->fn);
  if (!h || !h->fn) {
    if (h) free(h);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  }
  h->nkernels = p->nkernels;
  pthread_mutex_lock(&G.lock);
  char prefix[48];
  snprintf(prefix, sizeof prefix, "trnc_p%llu", G.next++);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef M = NULL;
  trnc_status st = trnc_host_translate(p, part_stride, LLVMOrcThreadSafeContextGetContext(tsc), prefix, &M,
                                       &h->tmp_floats, diags);
  if (!st) st = jit_add(h, tsc, M, prefix, diags);
  LLVMOrcDisposeThreadSafeContext(tsc);
  pthread_mutex_unlock(&G.lock);
  if (st) {
    trnc_host_destroy(h);
    return st;
  }
  h->compile_s = now_s() - t0;
  *out = h;
  return TRNC_OK;
}

int64_t trnc_host_tmp_floats(const trnc_host_code *h) { return h->tmp_floats; }

trnc_status trnc_host_run(const trnc_host_code *h, const trnc_nc_program *p, uint8_t *const *hbm,
                          uint8_t *sbuf, uint8_t *psum, float *tmp, trnc_diags *diags) {
  for (size_t k = 0; k < h->nkernels; k++) {
    trnc_host_err e = {0, 0, 0, 0};
    if (h->fn[k](hbm, sbuf, psum, tmp, &e))
      return nc_index_error(p, k, (size_t)e.instr, e.index, e.partition, e.rows, diags);
  }
  return TRNC_OK;
}
