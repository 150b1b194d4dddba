/*
 * driver.c — trnc_pipeline_run: the order of the stages between fx.proto
 * bytes and a NeuronCore program, written once. The Python extension, the
 * C tests (tests/c/testutil.c), the fuzz target and bench (through Python)
 * run graphs through it; a caller may stop between stages (Python derives
 * the cache key from the verified IR before it compiles).
 */
#include "ir/diag.h"
#include "ir/ir.h"

const char *trnc_stage_name(trnc_stage s) {
  static const char *const names[] = {"import", "legality", "legalize", "verify", "compile", "done"};
  return (unsigned)s <= TRNC_STAGE_DONE ? names[s] : "?";
}

/* Runs one stage on p. */
static trnc_status run_stage(trnc_pipeline *p, trnc_stage s, trnc_diags *d) {
  switch (s) {
    case TRNC_STAGE_IMPORT: return trnc_graph_import(p->bytes, p->len, p->limits, &p->graph, d);
    case TRNC_STAGE_LEGALITY: return trnc_graph_check_bound(p->graph, d);
    case TRNC_STAGE_LEGALIZE: return trnc_graph_legalize(p->graph, d);
    case TRNC_STAGE_VERIFY: return trnc_graph_verify(p->graph, d);
    case TRNC_STAGE_COMPILE: return trnc_compile(p->graph, p->options, &p->compiled, d);
    case TRNC_STAGE_DONE: break;
  }
  return TRNC_OK;
}

trnc_status trnc_pipeline_run(trnc_pipeline *p, trnc_stage last, trnc_diags *diags) {
  if (!p || (unsigned)last >= TRNC_STAGE_DONE || (unsigned)p->next > TRNC_STAGE_DONE)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_pipeline_run: NULL pipeline or stage out of range");
  if ((p->next == TRNC_STAGE_IMPORT) != (p->graph == NULL))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_pipeline_run: %s",
                           p->graph ? "a graph before import" : "no graph to run on");
  for (; p->next <= last; p->next++) {
    trnc_status st = run_stage(p, p->next, diags);
    if (st) return st;
  }
  return TRNC_OK;
}
