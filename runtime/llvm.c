/*
 * llvm.c — the JIT wrapper of the host backend: one ORC LLJIT per process
 * (created on first use) for the host CPU (LLVMGetHostCPUName/Features),
 * into which each compiled program's module goes with a resource tracker of
 * its own, so destroying the program (trnc_host_destroy, called when its
 * artifact is destroyed) unloads its machine code. The generated code calls
 * the C functions of trnc_host_externs, bound here by address.
 *
 * A program's module is optimized, compiled to a relocatable object file and
 * the object added to the JIT; the object is what an artifact keeps
 * (trnc_host_object, stored in the cache) so that a later process on a host
 * with the same key (LLVM version, target triple, CPU name and features)
 * loads it without LLVM's optimizer or code generator. Kernel symbols are
 * named by a hash of the program, its SBUF/PSUM layout and the key, so the
 * same program compiled or loaded twice in one process shares one copy of
 * its machine code (reference counted). Besides
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
#include <xxhash.h>

#include "codegen/neuroncore/artifact.h"
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
  LLVMTargetMachineRef tm; /* for the optimization pipeline and object files */
  char error[512];         /* why the JIT could not start, "" if it did */
  char *key;               /* the host's code key (trnc_host_code_key) */
  struct trnc_host_code *loaded; /* every program in the JIT, by prefix */
} G = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, NULL, NULL, "", NULL, NULL};

/** Copies and disposes an LLVM error message into buf. */
static void take_error(LLVMErrorRef err, char *buf, size_t n) {
  char *m = LLVMGetErrorMessage(err);
  snprintf(buf, n, "%s", m);
  LLVMDisposeErrorMessage(m);
}

static LLVMTargetMachineRef host_machine(LLVMRelocMode reloc) {
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  if (!G.key) {
    size_t n = strlen(triple) + strlen(cpu) + strlen(features) + 64;
    G.key = malloc(n);
    if (G.key) snprintf(G.key, n, "llvm %s; %s; cpu %s; %s", trnc_llvm_version(), triple, cpu, features);
  }
  char *msg = NULL;
  LLVMTargetRef target = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    snprintf(G.error, sizeof G.error, "no LLVM target for %s: %s", triple, msg ? msg : "");
  } else {
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault, reloc,
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
  /* object files are position-independent: calls and data outside them go
   * through the linker's stubs and GOT wherever the JIT maps them */
  LLVMTargetMachineRef jtm = host_machine(LLVMRelocDefault);
  if (!jtm || !(G.tm = host_machine(LLVMRelocPIC)) || !G.key) {
    if (!G.error[0]) snprintf(G.error, sizeof G.error, "out of memory");
    return;
  }
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
  trnc_host_plan plan;      /* the order of the calls (trnc_host_run) */
  trnc_host_instr_fn *fn;   /* plan.nfns functions */
  int64_t tmp_floats;
  int64_t part_stride[2];
  double compile_s;
  double phase_s[4];  /* translate, optimize, machine code, link */
  char prefix[40];
  uint8_t *obj; /* the object file the JIT linked */
  size_t objlen;
  int refs;     /* owners (G.lock) */
  struct trnc_host_code *next; /* in G.loaded */
};

const char *trnc_host_code_key(void) {
  pthread_once(&G.once, jit_init);
  return G.key ? G.key : "";
}

void trnc_host_destroy(trnc_host_code *h) {
  if (!h) return;
  pthread_mutex_lock(&G.lock);
  if (--h->refs > 0) {
    pthread_mutex_unlock(&G.lock);
    return;
  }
  for (trnc_host_code **q = &G.loaded; *q; q = &(*q)->next)
    if (*q == h) {
      *q = h->next;
      break;
    }
  if (h->rt) {
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(h->rt);
    if (err) LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(h->rt);
  }
  pthread_mutex_unlock(&G.lock);
  trnc_host_plan_free(&h->plan);
  free(h->fn);
  free(h->obj);
  free(h);
}

double trnc_host_compile_seconds(const trnc_host_code *h) { return h ? h->compile_s : 0.0; }

size_t trnc_host_function_count(const trnc_nc_program *p) {
  trnc_host_plan pl;
  trnc_diags *d = trnc_diags_create();
  size_t n = d && !trnc_host_plan_build(p, &pl, d) ? pl.nfns : 0;
  if (n) trnc_host_plan_free(&pl);
  trnc_diags_destroy(d);
  return n;
}

void trnc_host_compile_phases(const trnc_host_code *h, char *buf, size_t n) {
 snprintf(buf, n, "%zu functions; translate %.1f ms, optimize %.1f ms, machine code %.1f ms, link %.1f ms",
           h->plan.nfns, 1e3 * h->phase_s[0], 1e3 * h->phase_s[1], 1e3 * h->phase_s[2], 1e3 * h->phase_s[3]);
}

/** The symbol prefix of p's kernels for this layout and host: "trnc_h" and
 *  a 128-bit hash of the program's bytes, the layout and the key. */
static trnc_status code_prefix(const trnc_nc_program *p, const int64_t part_stride[2], char out[40],
                               trnc_diags *diags) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  trnc_status st = trnc_nc_program_serialize(p, &bytes, &len);
  if (st) return trnc_diag_error(diags, st, "host backend: cannot serialize the program (%s)", trnc_status_name(st));
  XXH3_state_t *x = XXH3_createState();
  if (!x) {
    trnc_free(bytes);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  }
  XXH3_128bits_reset(x);
  XXH3_128bits_update(x, bytes, len);
  XXH3_128bits_update(x, part_stride, 2 * sizeof *part_stride);
  XXH3_128bits_update(x, G.key, strlen(G.key));
  XXH128_hash_t h = XXH3_128bits_digest(x);
  XXH3_freeState(x);
  trnc_free(bytes);
  snprintf(out, 40, "trnc_h%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
  return TRNC_OK;
}

/** The program of this prefix already in the JIT (one more owner), or
 *  NULL. Called with G.lock held. */
static trnc_host_code *find_loaded(const char *prefix) {
  for (trnc_host_code *h = G.loaded; h; h = h->next)
    if (!strcmp(h->prefix, prefix)) {
      h->refs++;
      return h;
    }
  return NULL;
}

/** Adds object file h->obj to the JIT under a tracker of its own, looks up
 *  the kernels and enters h in G.loaded. Called with G.lock held. */
static trnc_status jit_link(trnc_host_code *h, trnc_diags *diags) {
  char msg[512];
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)h->obj, h->objlen, h->prefix);
  h->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(G.jit));
  LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(G.jit, h->rt, buf);
  for (size_t f = 0; !err && f < h->plan.nfns; f++) {
    char name[96];
    LLVMOrcExecutorAddress addr = 0;
    snprintf(name, sizeof name, "%s_f%zu", h->prefix, f);
    err = LLVMOrcLLJITLookup(G.jit, &addr, name);
    h->fn[f] = (trnc_host_instr_fn)(uintptr_t)addr;
  }
  if (err) {
    take_error(err, msg, sizeof msg);
    return trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: LLVM JIT failed: %s", msg);
  }
  h->refs = 1;
  h->next = G.loaded;
  G.loaded = h;
  return TRNC_OK;
}

/** Optimizes M for the host and compiles it into h->obj. Called with G.lock
 *  held; disposes M. */
static trnc_status jit_codegen(trnc_host_code *h, LLVMModuleRef M, trnc_diags *diags) {
  char msg[512];
  char *triple = LLVMGetTargetMachineTriple(G.tm);
  LLVMSetTarget(M, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(G.tm);
  LLVMSetModuleDataLayout(M, dl);
  LLVMDisposeTargetData(dl);
  const char *dump = getenv("TRNC_DUMP");
  bool dumping = dump && (strstr(dump, "host") || !strcmp(dump, "all"));
  if (dumping) fprintf(stderr, "; ---- host IR of %s (before optimization)\n", h->prefix), LLVMDumpModule(M);
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
  if (dumping)
    fprintf(stderr, "; ---- host IR of %s (default<O2>, %.1f ms)\n", h->prefix, 1e3 * (now_s() - t0)),
        LLVMDumpModule(M);
  double t1 = now_s();
  h->phase_s[1] = t1 - t0;
  char *emsg = NULL;
  LLVMMemoryBufferRef buf = NULL;
  LLVMBool fail = LLVMTargetMachineEmitToMemoryBuffer(G.tm, M, LLVMObjectFile, &emsg, &buf);
  LLVMDisposeModule(M);
  h->phase_s[2] = now_s() - t1;
  if (fail) {
    trnc_status st = trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: LLVM code generation failed: %s",
                                     emsg ? emsg : "");
    LLVMDisposeMessage(emsg);
    return st;
  }
  h->objlen = LLVMGetBufferSize(buf);
  h->obj = malloc(h->objlen ? h->objlen : 1);
  if (h->obj) memcpy(h->obj, LLVMGetBufferStart(buf), h->objlen);
  LLVMDisposeMemoryBuffer(buf);
  return h->obj ? TRNC_OK : trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
}

/** A new host code record for p with its plan (not yet in the JIT);
 *  errors as trnc_host_plan_build. */
static trnc_status code_new(const trnc_nc_program *p, const int64_t part_stride[2], const char *prefix,
                            trnc_host_code **out, trnc_diags *diags) {
  trnc_host_code *h = *out = calloc(1, sizeof *h);
  if (!h) return trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  trnc_status st = trnc_host_plan_build(p, &h->plan, diags);
  if (!st && !(h->fn = calloc(h->plan.nfns ? h->plan.nfns : 1, sizeof *h->fn)))
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  if (st) {
    trnc_host_plan_free(&h->plan);
    free(h);
    *out = NULL;
    return st;
  }
  h->part_stride[0] = part_stride[0];
  h->part_stride[1] = part_stride[1];
  snprintf(h->prefix, sizeof h->prefix, "%s", prefix);
  return TRNC_OK;
}

/** Frees a record that never entered the JIT's list (its tracker, if any, removed). */
static void code_discard(trnc_host_code *h) {
  if (h->rt) {
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(h->rt);
    if (err) LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(h->rt);
  }
  trnc_host_plan_free(&h->plan);
  free(h->fn);
  free(h->obj);
  free(h);
}

/** Starts the JIT and names p's code; errors as trnc_host_compile. */
static trnc_status jit_begin(const trnc_nc_program *p, const int64_t part_stride[2], char prefix[40],
                             trnc_diags *diags) {
  pthread_once(&G.once, jit_init);
  if (G.error[0] || !G.jit)
    return trnc_diag_error(diags, TRNC_ERR_INTERNAL, "host backend: the LLVM JIT is unavailable: %s", G.error);
  return code_prefix(p, part_stride, prefix, diags);
}

/** p's host code named prefix: shared if already in the JIT; else linked
 *  from stored object o, or (o NULL) translated, optimized and compiled. */
static trnc_status host_code(const trnc_nc_program *p, const int64_t part_stride[2], const char *prefix,
                             const trnc_host_object *o, trnc_host_code **out, trnc_diags *diags) {
  double t0 = now_s();
  pthread_mutex_lock(&G.lock);
  trnc_host_code *h = find_loaded(prefix);
  if (h) {
    pthread_mutex_unlock(&G.lock);
    *out = h;
    return TRNC_OK;
  }
  trnc_status st = code_new(p, part_stride, prefix, &h, diags);
  if (st) {
    pthread_mutex_unlock(&G.lock);
    return st;
  }
  if (o && (h->obj = malloc(o->len ? o->len : 1))) {
    memcpy(h->obj, o->bytes, o->len);
    h->objlen = o->len;
    h->tmp_floats = o->tmp_floats;
  }
  if (o && !h->obj) {
    pthread_mutex_unlock(&G.lock);
    code_discard(h);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  }
  if (!o) {
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef M = NULL;
    double t1 = now_s();
    st = trnc_host_translate(p, &h->plan, part_stride, C, prefix, &M, &h->tmp_floats, diags);
    h->phase_s[0] = now_s() - t1;
    if (!st) st = jit_codegen(h, M, diags);
    LLVMContextDispose(C);
  }
  double t2 = now_s();
  if (!st) st = jit_link(h, diags);
  h->phase_s[3] = now_s() - t2;
  pthread_mutex_unlock(&G.lock);
  if (st) {
    code_discard(h);
    return st;
  }
  h->compile_s = now_s() - t0;
  *out = h;
  return TRNC_OK;
}

trnc_status trnc_host_compile(const trnc_nc_program *p, const int64_t part_stride[2], trnc_host_code **out,
                              trnc_diags *diags) {
  *out = NULL;
  char prefix[40];
  trnc_status st = jit_begin(p, part_stride, prefix, diags);
  return st ? st : host_code(p, part_stride, prefix, NULL, out, diags);
}

trnc_status trnc_host_load(const trnc_nc_program *p, const int64_t part_stride[2], const trnc_host_object *o,
                           trnc_host_code **out, trnc_diags *diags) {
  *out = NULL;
  char prefix[40];
  trnc_status st = jit_begin(p, part_stride, prefix, diags);
  if (st) return st;
  if (strcmp(o->key, G.key))
    return trnc_diag_error(diags, TRNC_ERR_UNSUPPORTED,
                           "host backend: the stored host code is for another host (%.80s...), this "
                           "one is %.80s...",
                           o->key, G.key);
  if (strcmp(o->prefix, prefix) || o->part_stride[0] != part_stride[0] || o->part_stride[1] != part_stride[1])
    return trnc_diag_error(diags, TRNC_ERR_UNSUPPORTED,
                           "host backend: the stored host code is not this program's (%s, expected %s)",
                           o->prefix, prefix);
  return host_code(p, part_stride, prefix, o, out, diags);
}

trnc_host_object *trnc_host_object_of(const trnc_host_code *h) {
  trnc_host_object *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->key = strdup(G.key);
  o->prefix = strdup(h->prefix);
  o->bytes = malloc(h->objlen ? h->objlen : 1);
  if (!o->key || !o->prefix || !o->bytes) {
    trnc_host_object_free(o);
    return NULL;
  }
  memcpy(o->bytes, h->obj, h->objlen);
  o->len = h->objlen;
  o->tmp_floats = h->tmp_floats;
  o->part_stride[0] = h->part_stride[0];
  o->part_stride[1] = h->part_stride[1];
  atomic_store(&o->fresh, true);
  return o;
}

int64_t trnc_host_tmp_floats(const trnc_host_code *h) { return h->tmp_floats; }

/** Address of element 0 of partition (row) 0 of operand slot sl of in. */
static uint8_t *slot_addr(const trnc_host_code *h, const trnc_nc_instr *in, int sl, uint8_t *const *hbm,
                          uint8_t *sbuf, uint8_t *psum) {
  const trnc_nc_ap *ap = nc_slot(in, sl);
  switch (ap->mem) {
    case TRNC_NC_MEM_NONE: return NULL;
    case TRNC_NC_MEM_SBUF: return sbuf + ap->start_partition * h->part_stride[0] + ap->offset;
    case TRNC_NC_MEM_PSUM: return psum + ap->start_partition * h->part_stride[1] + ap->offset;
    default: return hbm[ap->buffer] + ap->offset;
  }
}

trnc_status trnc_host_run(const trnc_host_code *h, const trnc_nc_program *p, uint8_t *const *hbm,
                          uint8_t *sbuf, uint8_t *psum, float *tmp, trnc_diags *diags) {
  const trnc_host_plan *pl = &h->plan;
  for (size_t k = 0; k < pl->nkernels; k++)
    for (size_t s = pl->start[k]; s < pl->start[k + 1]; s++) {
      const trnc_host_step *st = &pl->step[s];
      const trnc_nc_instr *in = &p->kernels[k].instrs[st->instr];
      uint8_t *a[5];
      for (int sl = 0; sl < 5; sl++) a[sl] = slot_addr(h, in, sl, hbm, sbuf, psum);
      trnc_host_err e = {0, 0, 0, 0};
      if (h->fn[st->fn](a[0], a[1], a[2], a[3], a[4], tmp, &e, (int64_t)st->instr, in->imm[0], in->imm[1], in->imm[2]))
        return nc_index_error(p, k, (size_t)e.instr, e.index, e.partition, e.rows, diags);
    }
  return TRNC_OK;
}
