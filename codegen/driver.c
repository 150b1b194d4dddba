/*
 * driver.c — trnc_pipeline_run: the order of the stages between fx.proto
 * bytes and a NeuronCore program, written once. The Python extension, the
 * C tests (tests/c/testutil.c), the fuzz target and bench (through Python)
 * run graphs through it; a caller may stop between stages (Python derives
 * the cache key from the verified IR before it compiles).
 */
#include "ir/diag.h"
#include "ir/ir.h"

static trnc_status run_import(trnc_pipeline *p, trnc_diags *d) {
  return trnc_graph_import(p->bytes, p->len, p->limits, &p->graph, d);
}
static trnc_status run_legality(trnc_pipeline *p, trnc_diags *d) {
  return trnc_graph_check_bound(p->graph, d);
}
static trnc_status run_legalize(trnc_pipeline *p, trnc_diags *d) {
  return trnc_graph_legalize(p->graph, d);
}
static trnc_status run_verify(trnc_pipeline *p, trnc_diags *d) { return trnc_graph_verify(p->graph, d); }
static trnc_status run_compile(trnc_pipeline *p, trnc_diags *d) {
  return trnc_compile(p->graph, p->options, &p->compiled, d);
}

/* The stages in the order they run, indexed by trnc_stage: the one place
 * the pipeline is written (the graph passes inside legalize are listed in
 * passes/passes.def). */
static const struct {
  const char *name;
  trnc_status (*run)(trnc_pipeline *p, trnc_diags *d);
} stages[] = {
    [TRNC_STAGE_IMPORT] = {"import", run_import},
    [TRNC_STAGE_LEGALITY] = {"legality", run_legality},
    [TRNC_STAGE_LEGALIZE] = {"legalize", run_legalize},
    [TRNC_STAGE_VERIFY] = {"verify", run_verify},
    [TRNC_STAGE_COMPILE] = {"compile", run_compile},
};
_Static_assert(sizeof stages / sizeof stages[0] == TRNC_STAGE_DONE, "one table row per stage");

const char *trnc_stage_name(trnc_stage s) {
  if (s == TRNC_STAGE_DONE) return "done";
  return (unsigned)s < TRNC_STAGE_DONE ? stages[s].name : "?";
}

trnc_status trnc_pipeline_run(trnc_pipeline *p, trnc_stage last, trnc_diags *diags) {
  if (!p || (unsigned)last >= TRNC_STAGE_DONE || (unsigned)p->next > TRNC_STAGE_DONE)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_pipeline_run: NULL pipeline or stage out of range");
  if ((p->next == TRNC_STAGE_IMPORT) != (p->graph == NULL))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_pipeline_run: %s",
                           p->graph ? "a graph before import" : "no graph to run on");
  for (; p->next <= last; p->next++) {
    trnc_status st = stages[p->next].run(p, diags);
    if (st) return st;
  }
  return TRNC_OK;
}
