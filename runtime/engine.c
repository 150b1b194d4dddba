/*
 * engine.c — picks the engine that runs a verified program (TRNC_SIM, see
 * runtime/engine.h): the interpreter, the JIT, or both with their outputs
 * compared bit for bit (the differential test's mode).
 *
 * An artifact's engine slot (trnc_compiled.host, installed with one
 * compare-and-swap on its first run) counts its runs and holds its host
 * code, compiled by the first run that wants it (one thread compiles; a
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

static bool debug_log(void) {
  const char *d = getenv("TRNC_DEBUG");
  return d && *d && strcmp(d, "0");
}

/** Compiles p's host code; NULL (and a debug log line saying why) when the
 *  program runs on the interpreter instead. */
static trnc_host_code *compile_or_null(const trnc_nc_program *p) {
  trnc_diags *d = trnc_diags_create();
  trnc_host_code *code = NULL;
  trnc_status st = trnc_host_compile(p, &code, d);
  if (st && debug_log()) {
    char *msg = d ? trnc_diags_format(d) : NULL;
    fprintf(stderr, "trnc: TRNC_SIM=jit: program runs on the interpreter (%s): %s", trnc_status_name(st),
            msg ? msg : "out of memory\n");
    trnc_free(msg);
  }
  else if (!st && debug_log())
    fprintf(stderr, "trnc: TRNC_SIM=jit: %zu instructions compiled to host code in %.1f ms\n",
            trnc_nc_program_instr_count(p), 1e3 * trnc_host_compile_seconds(code));
  trnc_diags_destroy(d);
  return st ? NULL : code;
}

typedef struct engine_host {
  trnc_artifact_host base;
  const trnc_nc_program *prog;
  atomic_uint runs;  /* runs so far (the default engine JITs from the second) */
  atomic_int state;  /* 0: no host code yet, 1: being compiled, 2: compiled */
  trnc_host_code *code; /* when state is 2; NULL: the program runs on the interpreter */
} engine_host;

static void engine_host_destroy(trnc_artifact_host *h) {
  engine_host *e = (engine_host *)h;
  trnc_host_destroy(e->code);
  free(e);
}

/** The engine slot of artifact c, created on its first run (NULL: out of
 *  memory; the run interprets). */
static engine_host *slot_of(const trnc_compiled *c) {
  /* the one field of an artifact that runs write: set once, atomically */
  _Atomic(trnc_artifact_host *) *slotp = (_Atomic(trnc_artifact_host *) *)&((trnc_compiled *)c)->host;
  trnc_artifact_host *h = atomic_load(slotp);
  if (h) return (engine_host *)h;
  engine_host *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->base.destroy = engine_host_destroy;
  e->prog = c->prog;
  trnc_artifact_host *expected = NULL;
  if (atomic_compare_exchange_strong(slotp, &expected, &e->base)) return e;
  free(e);
  return (engine_host *)expected;
}

/** The host code of artifact c, compiled on first use; NULL: this run
 *  interprets (the JIT does not handle the program, or another thread is
 *  compiling it right now: the interpreter computes the same bits). */
static const trnc_host_code *host_of(engine_host *e) {
  if (!e) return NULL;
  int st = atomic_load(&e->state);
  if (st == 0 && atomic_compare_exchange_strong(&e->state, &st, 1)) {
    e->code = compile_or_null(e->prog);
    atomic_store(&e->state, 2);
    return e->code;
  }
  return st == 2 ? e->code : NULL;
}

/** The last error message of d, or "". */
static const char *last_error(const trnc_diags *d) {
  for (size_t i = trnc_diags_count(d); i-- > 0;) {
    const trnc_diag *g = trnc_diags_get(d, i);
    if (g->severity == TRNC_SEV_ERROR) return g->message;
  }
  return "";
}

/** TRNC_SIM=check: the JIT on copies of the outputs, the interpreter on the
 *  caller's; any difference in status, diagnostic or output byte is
 *  TRNC_ERR_INTERNAL. */
static trnc_status run_check(const trnc_host_code *code, const trnc_nc_program *p, const void *const *inputs,
                             void *const *outputs, trnc_diags *diags) {
  size_t nout = 0;
  for (size_t b = 0; b < p->nbufs; b++) nout += p->bufs[b].kind == TRNC_NC_BUF_OUTPUT;
  void **copy = calloc(nout ? nout : 1, sizeof *copy);
  trnc_diags *jd = trnc_diags_create();
  trnc_status st = TRNC_OK;
  if (!copy || !jd) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "TRNC_SIM=check: out of memory");
    goto out;
  }
  for (size_t b = 0, j = 0; b < p->nbufs; b++) {
    if (p->bufs[b].kind != TRNC_NC_BUF_OUTPUT) continue;
    if (outputs && outputs[j]) {
      if (!(copy[j] = malloc((size_t)p->bufs[b].bytes + 1))) {
        st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "TRNC_SIM=check: out of memory");
        goto out;
      }
      memcpy(copy[j], outputs[j], (size_t)p->bufs[b].bytes);
    }
    j++;
  }
  trnc_status js = trnc_host_run(code, p, inputs, outputs ? copy : NULL, jd);
  st = nc_interpret(p, inputs, outputs, NULL, diags);
  if (js != st) {
    st = trnc_diag_error(diags, TRNC_ERR_INTERNAL,
                         "TRNC_SIM=check: the interpreter returned %s but the JIT %s (%s) (a trnc bug: please "
                         "report it with TRNC_DUMP_DIR output)",
                         trnc_status_name(st), trnc_status_name(js), last_error(jd));
    goto out;
  }
  if (st) {
    if (strcmp(last_error(jd), last_error(diags)))
      st = trnc_diag_error(diags, TRNC_ERR_INTERNAL, "TRNC_SIM=check: the JIT reported '%s'", last_error(jd));
    goto out;
  }
  for (size_t b = 0, j = 0; b < p->nbufs && !st; b++) {
    if (p->bufs[b].kind != TRNC_NC_BUF_OUTPUT) continue;
    const uint8_t *x = outputs[j], *y = copy[j];
    for (int64_t i = 0; i < p->bufs[b].bytes; i++)
      if (x[i] != y[i]) {
        st = trnc_diag_error(diags, TRNC_ERR_INTERNAL,
                             "TRNC_SIM=check: output buffer '%s' differs at byte %lld: interpreter 0x%02x, JIT "
                             "0x%02x (a trnc bug: please report it with TRNC_DUMP_DIR output)",
                             p->bufs[b].name, (long long)i, x[i], y[i]);
        break;
      }
    j++;
  }
out:
  for (size_t j = 0; copy && j < nout; j++) free(copy[j]);
  free(copy);
  trnc_diags_destroy(jd);
  return st;
}

/** Runs p on engine e (not AUTO) with host code `code` (NULL: the
 *  interpreter). */
static trnc_status run_on(trnc_engine e, const trnc_host_code *code, const trnc_nc_program *p,
                          const void *const *inputs, void *const *outputs, trnc_diags *diags) {
  if (!code || e == TRNC_ENGINE_INTERP) return nc_interpret(p, inputs, outputs, NULL, diags);
  if (e == TRNC_ENGINE_JIT) return trnc_host_run(code, p, inputs, outputs, diags);
  return run_check(code, p, inputs, outputs, diags);
}

trnc_status trnc_engine_run(const trnc_compiled *c, const void *const *inputs, void *const *outputs,
                            trnc_diags *diags) {
  trnc_engine e;
  trnc_status st = trnc_engine_from_env(&e, true, diags);
  if (st) return st;
  const trnc_host_code *code = NULL;
  if (trnc_nc_program_collective_count(c->prog)) e = TRNC_ENGINE_INTERP; /* see engine.h */
  if (e != TRNC_ENGINE_INTERP) {
    engine_host *h = slot_of(c);
    if (e == TRNC_ENGINE_AUTO) /* a program run once is not worth compiling */
      e = h && atomic_fetch_add(&h->runs, 1) ? TRNC_ENGINE_JIT : TRNC_ENGINE_INTERP;
    if (e != TRNC_ENGINE_INTERP) code = host_of(h);
  }
  return run_on(e, code, c->prog, inputs, outputs, diags);
}

trnc_status trnc_engine_simulate(const trnc_nc_program *p, const void *const *inputs, void *const *outputs,
                                 trnc_diags *diags) {
  trnc_engine e;
  trnc_status st = trnc_engine_from_env(&e, false, diags);
  if (st) return st;
  if (trnc_nc_program_collective_count(p)) e = TRNC_ENGINE_INTERP; /* see engine.h */
  trnc_host_code *code = e == TRNC_ENGINE_INTERP ? NULL : compile_or_null(p);
  st = run_on(e, code, p, inputs, outputs, diags);
  trnc_host_destroy(code);
  return st;
}
