/*
 * overlap.c — schedules collectives for overlap with compute.
 *
 * A functional collective (_c10d_functional.all_reduce, ...) starts where
 * its node is and its result may be used only after its wait_tensor, which
 * the emitter turns into the program's cc_wait step. Graphs place the wait
 * right behind the collective, so the program would stall on every one;
 * this pass moves each wait_tensor down to just before the first node that
 * reads its result (or to the end of the graph if only graph outputs read
 * it), so the kernels of the independent nodes in between run while the
 * collective is in flight. Symmetrically, each collective moves up to just
 * after the last producer of its inputs (never above an earlier collective:
 * every rank issues them in the graph's order). Nodes keep their relative
 * order otherwise; value indices do not change (only each value's producing
 * node index).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "passes/util.h"

typedef struct reads_ctx {
  trnc_ref r;
  bool hit;
} reads_ctx;

static void visit(trnc_ref r, void *ctx) {
  reads_ctx *c = ctx;
  c->hit = c->hit || r == c->r;
}

static bool node_reads(const trnc_node *n, trnc_ref r) {
  reads_ctx c = {r, false};
  for (uint32_t a = 0; a < n->nargs && !c.hit; a++) trnc_arg_visit_refs(&n->args[a], visit, &c);
  return c.hit;
}

/* Moves node `from` to index `to` (> from), shifting the nodes between up by
 * one, and renumbers the producers of their values. */
static void move_down(trnc_graph *g, uint32_t from, uint32_t to) {
  trnc_node moved = g->nodes[from];
  memmove(&g->nodes[from], &g->nodes[from + 1], (size_t)(to - from) * sizeof moved);
  g->nodes[to] = moved;
  for (uint32_t i = from; i <= to; i++)
    for (uint32_t k = 0; k < g->nodes[i].nouts; k++) g->values[g->nodes[i].outs[k]].node = i;
}

/* Moves node `from` to index `to` (< from), shifting the nodes between down
 * by one. */
static void move_up(trnc_graph *g, uint32_t from, uint32_t to) {
  trnc_node moved = g->nodes[from];
  memmove(&g->nodes[to + 1], &g->nodes[to], (size_t)(from - to) * sizeof moved);
  g->nodes[to] = moved;
  for (uint32_t i = to; i <= from; i++)
    for (uint32_t k = 0; k < g->nodes[i].nouts; k++) g->values[g->nodes[i].outs[k]].node = i;
}

typedef struct last_ctx {
  const trnc_graph *g;
  uint32_t last;
} last_ctx;

static void note_producer(trnc_ref r, void *ctx) {
  last_ctx *c = ctx;
  uint32_t p = c->g->values[r].node;
  if (c->last == UINT32_MAX || p > c->last) c->last = p;
}

static bool is_collective_start(trnc_op op) {
  return trnc_op_has(op, TRNC_OPF_COLLECTIVE) && op != TRNC_OP_WAIT_TENSOR;
}

trnc_status trnc_pass_overlap(trnc_graph *g, trnc_diags *d) {
  (void)d;
  /* collectives up, in graph order (so none passes an earlier one) */
  uint32_t floor = 0; /* first index a collective may move to: after the inputs */
  for (uint32_t i = 0; i < g->nnodes; i++)
    if (g->nodes[i].op == TRNC_OP_PLACEHOLDER) floor = i + 1;
  for (uint32_t c = 0; c < g->nnodes; c++) {
    const trnc_node *n = &g->nodes[c];
    if (n->dead || !is_collective_start(n->op)) continue;
    last_ctx lc = {g, UINT32_MAX};
    for (uint32_t a = 0; a < n->nargs; a++) trnc_arg_visit_refs(&n->args[a], note_producer, &lc);
    uint32_t to = lc.last == UINT32_MAX ? 0 : lc.last + 1;
    if (to < floor) to = floor;
    if (to < c) move_up(g, c, to);
    floor = (to < c ? to : c) + 1;
  }
  /* walk backwards so a moved wait is never visited twice */
  for (uint32_t w = g->nnodes; w-- > 0;) {
    const trnc_node *n = &g->nodes[w];
    if (n->dead || n->op != TRNC_OP_WAIT_TENSOR || n->nouts != 1) continue;
    trnc_ref out = n->outs[0];
    uint32_t u = w + 1;
    while (u < g->nnodes && (g->nodes[u].dead || !node_reads(&g->nodes[u], out))) u++;
    if (u - 1 > w) move_down(g, w, u - 1);
  }
  return TRNC_OK;
}
