/*
 * dce.c — dead-code elimination.
 *
 * Marks `dead` every node none of whose outputs is (transitively) used by a
 * graph output. The graph is functional (aot_autograd hands over functionalized
 * graphs), so every table op is pure: random ops (native_dropout) are removed
 * too when unused. Never removed: placeholders (they are the calling
 * convention: the caller passes every input), collectives (TRNC_OPF_COLLECTIVE:
 * every rank of the group must issue them, used or not; their
 * wait_tensor too) and ops outside the table
 * (TRNC_OP_UNKNOWN; the legality scan reports those, and nothing is assumed
 * about them).
 */
#include <stdlib.h>

#include "passes/util.h"

#include "passes/passes.h"

static void mark_arg(const trnc_arg *a, bool *live_val) {
  if (a->kind == TRNC_ARG_VALUE) live_val[a->u.ref] = true;
  else if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) mark_arg(&a->u.list.items[i], live_val);
}

/* Sweeps the nodes backwards (uses follow definitions): a node is live if
 * it must be kept or one of its outputs is used by a live node or a graph
 * output; a live node makes its arguments live. Errors: TRNC_ERR_NOMEM. */
trnc_status trnc_pass_dce(trnc_graph *g, trnc_diags *d) {
  bool *live_val = calloc(g->nvalues ? g->nvalues : 1, sizeof *live_val);
  if (!live_val) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in dce");
  for (uint32_t k = 0; k < g->noutputs; k++)
    if (g->outputs[k] != TRNC_NO_REF) live_val[g->outputs[k]] = true;
  for (uint32_t i = g->nnodes; i-- > 0;) {
    trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    bool live = n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_UNKNOWN ||
                trnc_op_has(n->op, TRNC_OPF_COLLECTIVE);
    for (uint32_t k = 0; k < n->nouts && !live; k++) live = live_val[n->outs[k]];
    if (!live) {
      n->dead = true;
      continue;
    }
    for (uint32_t a = 0; a < n->nargs; a++) mark_arg(&n->args[a], live_val);
  }
  free(live_val);
  return TRNC_OK;
}
