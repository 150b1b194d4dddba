/*
 * engine.c — picks the engine that runs a verified program (TRNC_SIM, see
 * runtime/engine.h): the interpreter, the JIT, or both with their outputs
 * compared bit for bit (the differential test's mode).
 *
 * A run plan's engine slot (trnc_engine_slot) counts its runs and holds its
 * host code, compiled by the first run that wants it (one thread compiles; a
 * concurrent run interprets meanwhile, computing the same bits). By default
 * an artifact's first run interprets and later runs use the JIT, so a
 * program run once never pays for LLVM. A program the JIT cannot translate
 * (or that LLVM fails on) keeps a slot without code and runs on the
 * interpreter: never a wrong value.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/artifact.h"
#include "ir/diag.h"
#include "runtime/engine.h"

/* AUTO's expected compile time (jit_budget_ns): LLVM's time goes into the
 * program's distinct instruction functions (trnc_host_function_count); a
 * line through the compile times TRNC_DEBUG=1 logged for the examples'
 * training steps and the tiled matmul (6 to 133 functions, 0.24 to 6.8 s on
 * the shared, loaded 2-core machine; docs/simulator.md). */
#define JIT_FIXED_NS 200000000LL /* 200 ms */
#define JIT_PER_FN_NS 30000000LL /* 30 ms */

trnc_status trnc_engine_from_env(trnc_engine *out, bool artifact, trnc_diags *diags) {
  const char *s = getenv("TRNC_SIM");
  *out = artifact ? TRNC_ENGINE_AUTO : TRNC_ENGINE_INTERP;
  if (!s || !*s) return TRNC_OK;
  if (!strcmp(s, "interp")) *out = TRNC_ENGINE_INTERP;
  else if (!strcmp(s, "jit")) *out = TRNC_ENGINE_JIT;
  else if (!strcmp(s, "check")) *out = TRNC_ENGINE_CHECK;
  else
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "TRNC_SIM=%s: expected interp (the interpreter), jit (host code) or check "
                           "(both, outputs compared bit for bit)",
                           s);
  return TRNC_OK;
}

/* process totals of host code compiled (trnc_jit_totals) */
static atomic_size_t g_jit_programs;
static atomic_llong g_jit_ns;

void trnc_jit_totals(size_t *programs, double *seconds) {
  if (programs) *programs = atomic_load(&g_jit_programs);
  if (seconds) *seconds = 1e-9 * (double)atomic_load(&g_jit_ns);
}

static bool debug_log(void) {
  const char *d = getenv("TRNC_DEBUG");
  return d && *d && strcmp(d, "0");
}

/** Compiles p's host code; NULL (and a debug log line saying why) when the
 *  program runs on the interpreter instead. */
static trnc_host_code *compile_or_null(const trnc_nc_program *p, const int64_t part_stride[2]) {
  trnc_diags *d = trnc_diags_create();
  trnc_host_code *code = NULL;
  trnc_status st = trnc_host_compile(p, part_stride, &code, d);
  if (st && debug_log()) {
    char *msg = d ? trnc_diags_format(d) : NULL;
    fprintf(stderr, "trnc: TRNC_SIM=jit: program runs on the interpreter (%s): %s", trnc_status_name(st),
            msg ? msg : "out of memory\n");
    trnc_free(msg);
  }
  else if (!st && debug_log()) {
    char phases[160];
    trnc_host_compile_phases(code, phases, sizeof phases);
    fprintf(stderr, "trnc: TRNC_SIM=jit: %zu instructions compiled to host code in %.1f ms (%s)\n",
            trnc_nc_program_instr_count(p), 1e3 * trnc_host_compile_seconds(code), phases);
  }
  if (!st) {
    atomic_fetch_add(&g_jit_programs, 1);
    atomic_fetch_add(&g_jit_ns, (long long)(1e9 * trnc_host_compile_seconds(code)));
  }
  trnc_diags_destroy(d);
  return st ? NULL : code;
}

/** The artifact's stored host code when this host may load it, else NULL. */
static const trnc_host_object *stored_code(const trnc_engine_slot *s) {
  const trnc_host_object *o = s->host_obj ? atomic_load(s->host_obj) : NULL;
  return o && !strcmp(o->key, trnc_host_code_key()) ? o : NULL;
}

/** p's host code: loaded from the artifact's stored code, else compiled
 *  (and published to the artifact); NULL: the interpreter runs p. */
static trnc_host_code *load_or_compile(trnc_engine_slot *s, const trnc_nc_program *p,
                                       const int64_t part_stride[2]) {
  const trnc_host_object *o = stored_code(s);
  if (o) {
    trnc_diags *d = trnc_diags_create();
    trnc_host_code *code = NULL;
    trnc_status st = trnc_host_load(p, part_stride, o, &code, d);
    if (debug_log()) {
      char *msg = st && d ? trnc_diags_format(d) : NULL;
      if (st) fprintf(stderr, "trnc: stored host code not loaded (%s): %s", trnc_status_name(st), msg ? msg : "\n");
      else fprintf(stderr, "trnc: stored host code loaded in %.1f ms\n", 1e3 * trnc_host_compile_seconds(code));
      trnc_free(msg);
    }
    trnc_diags_destroy(d);
    if (!st) return code;
  }
  trnc_host_code *code = compile_or_null(p, part_stride);
  if (code && s->host_obj) {
    trnc_host_object *mine = trnc_host_object_of(code), *none = NULL;
    if (mine && !atomic_compare_exchange_strong(s->host_obj, &none, mine)) {
      /* stored code another host (or program version) made: ours replaces it
       * only for the cache's next write, never while a run may read it */
      trnc_host_object_free(mine);
    }
  }
  return code;
}

/** The slot's host code, loaded or compiled on first use; NULL: this run
 *  interprets (the JIT does not handle the program, or another thread is
 *  compiling it right now: the interpreter computes the same bits). */
static const trnc_host_code *host_of(trnc_engine_slot *s, const trnc_nc_program *p,
                                     const int64_t part_stride[2]) {
  int st = atomic_load(&s->state);
  if (st == 0 && atomic_compare_exchange_strong(&s->state, &st, 1)) {
    s->code = load_or_compile(s, p, part_stride);
    atomic_store(&s->state, 2);
    return s->code;
  }
  return st == 2 ? s->code : NULL;
}

/** The JIT compile time AUTO expects for p, in ns: a fixed part (module
 *  set-up, LLVM's pipeline and code generation, object linking) plus a part
 *  per instruction function, fitted to the compile times TRNC_DEBUG logs
 *  (docs/simulator.md); computed once per slot. TRNC_JIT_AFTER_MS
 *  overrides it (0: JIT from the second run). */
static long long jit_budget_ns(trnc_engine_slot *s, const trnc_nc_program *p) {
  const char *env = getenv("TRNC_JIT_AFTER_MS");
  if (env && *env) {
    char *end;
    double ms = strtod(env, &end);
    if (end != env && ms >= 0) return (long long)(ms * 1e6);
  }
  long long b = atomic_load(&s->budget_ns);
  if (!b) {
    b = JIT_FIXED_NS + JIT_PER_FN_NS * (long long)trnc_host_function_count(p);
    atomic_store(&s->budget_ns, b);
  }
  return b;
}

const trnc_host_code *trnc_engine_pick(trnc_engine_slot *s, const trnc_nc_program *p,
                                       const int64_t part_stride[2], trnc_engine *e) {
  if (*e == TRNC_ENGINE_AUTO) {
    /* the first run interprets (a program run once never pays for LLVM)
     * unless the artifact holds host code for this host (loading it costs
     * no optimizer); later ones once the interpreter time has paid for a
     * compile */
    unsigned n = atomic_fetch_add(&s->runs, 1);
    bool jit = atomic_load(&s->state) == 2 || (n == 0 && stored_code(s)) ||
               (n > 0 && atomic_load(&s->interp_ns) >= jit_budget_ns(s, p));
    *e = jit ? TRNC_ENGINE_JIT : TRNC_ENGINE_INTERP;
  }
  if (*e == TRNC_ENGINE_INTERP) return NULL;
  const trnc_host_code *code = host_of(s, p, part_stride);
  if (!code) *e = TRNC_ENGINE_INTERP;
  return code;
}

void trnc_engine_note_interp(trnc_engine_slot *s, long long ns) { atomic_fetch_add(&s->interp_ns, ns); }

double trnc_engine_slot_seconds(const trnc_engine_slot *s) {
  return atomic_load(&((trnc_engine_slot *)s)->state) == 2 ? trnc_host_compile_seconds(s->code) : 0.0;
}

void trnc_engine_slot_release(trnc_engine_slot *s) {
  if (atomic_load(&s->state) == 2) trnc_host_destroy(s->code);
  s->code = NULL;
  atomic_store(&s->state, 0);
}
