/*
 * emit_collective.c — _c10d_functional collectives become collective steps
 * of the NeuronCore program (trnc_nc_collective, include/trnc/neuroncore.h).
 *
 * A collective node becomes one START per result (the coalesced forms: one
 * per tensor, issued back to back), with the result value's index as its
 * handle; its input must be contiguous bytes (a strided view is first copied
 * by a kernel). The node's wait_tensor (a view of the result, lowered by
 * lower.c) becomes the matching cc_wait step where the overlap pass placed
 * it, just before the first use; a result no wait_tensor reads is waited for
 * right after its START; when TRNC_NC_CC_MAX_INFLIGHT are in flight the
 * oldest is waited for before the next START. Gathers and scatters work
 * along dim 0, which in a contiguous row-major buffer is byte concatenation.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/lower.h"
#include "ir/shape.h"

_Static_assert(TRNC_CC_MAX_SPLITS == TRNC_NC_CC_MAX_GROUP && TRNC_CC_GROUP_NAME == TRNC_NC_CC_GROUP_NAME,
               "ir/ir.h's collective limits are the NeuronCore descriptor's");

static bool is_start(trnc_op op) {
  switch (op) {
    case TRNC_OP_ALL_REDUCE: case TRNC_OP_ALL_REDUCE_COALESCED: case TRNC_OP_ALL_GATHER:
    case TRNC_OP_ALL_GATHER_COALESCED: case TRNC_OP_REDUCE_SCATTER:
    case TRNC_OP_REDUCE_SCATTER_COALESCED: case TRNC_OP_ALL_TO_ALL: case TRNC_OP_BROADCAST:
      return true;
    default: return false;
  }
}

bool lw_cc_handles(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  return is_start(n->op);
}

static int cc_op(trnc_op op) {
  switch (op) {
    case TRNC_OP_ALL_REDUCE: case TRNC_OP_ALL_REDUCE_COALESCED: return TRNC_NC_CC_ALL_REDUCE;
    case TRNC_OP_ALL_GATHER: case TRNC_OP_ALL_GATHER_COALESCED: return TRNC_NC_CC_ALL_GATHER;
    case TRNC_OP_REDUCE_SCATTER: case TRNC_OP_REDUCE_SCATTER_COALESCED:
      return TRNC_NC_CC_REDUCE_SCATTER;
    case TRNC_OP_ALL_TO_ALL: return TRNC_NC_CC_ALL_TO_ALL;
    default: return TRNC_NC_CC_BROADCAST;
  }
}

/* True if tv covers its elements contiguously in row-major order. */
static bool contiguous(const lw_tv *tv) {
  trnc_type c = tv->t;
  trnc_type_set_contiguous(&c);
  for (int i = 0; i < tv->t.rank; i++)
    if (tv->t.shape[i] > 1 && tv->t.stride[i] != c.stride[i]) return false;
  return true;
}

/* True if some live wait_tensor reads value r. */
static bool has_wait(const trnc_graph *g, trnc_ref r) {
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *w = &g->nodes[i];
    if (!w->dead && w->op == TRNC_OP_WAIT_TENSOR && w->nargs && w->args[0].kind == TRNC_ARG_VALUE &&
        w->args[0].u.ref == r)
      return true;
  }
  return false;
}

static trnc_status add_wait(lw *L, const trnc_node *n, int32_t handle) {
  trnc_nc_collective w;
  memset(&w, 0, sizeof w);
  w.op = TRNC_NC_CC_WAIT;
  w.handle = handle;
  if (trnc_nc_program_add_collective(L->prog, &w) < 0)
    return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory adding a cc_wait step");
  return TRNC_OK;
}

/* If TRNC_NC_CC_MAX_INFLIGHT collectives are in flight, waits for the oldest
 * (waiting early is always correct; its wait_tensor then finds it waited). */
static trnc_status bound_inflight(lw *L, const trnc_node *n) {
  int32_t fl[TRNC_NC_CC_MAX_INFLIGHT + 1]; /* handles in flight, oldest first */
  int nfl = 0;
  for (size_t k = 0; k < trnc_nc_program_kernel_count(L->prog); k++) {
    const trnc_nc_collective *cc = trnc_nc_kernel_collective(L->prog, k);
    if (!cc) continue;
    if (cc->op != TRNC_NC_CC_WAIT) {
      if (nfl <= TRNC_NC_CC_MAX_INFLIGHT) fl[nfl++] = cc->handle;
      continue;
    }
    for (int f = 0; f < nfl; f++)
      if (fl[f] == cc->handle) {
        memmove(&fl[f], &fl[f + 1], (size_t)(nfl - f - 1) * sizeof fl[0]);
        nfl--;
        break;
      }
  }
  return nfl < TRNC_NC_CC_MAX_INFLIGHT ? TRNC_OK : add_wait(L, n, fl[0]);
}

/* One START: input value `in` -> result value `out`. */
static trnc_status start_one(lw *L, const trnc_node *n, trnc_ref in, trnc_ref out,
                             const char *group, int32_t gsize) {
  const trnc_graph *g = L->g;
  lw_tv src = L->tv[in], dense;
  const lw_tv *dst = &L->tv[out];
  if (trnc_type_numel(&src.t) && src.buffer >= 0 && !contiguous(&src)) {
    trnc_status st = lw_materialize(L, n, in, &dense);
    if (st) return st;
    src = dense;
  }
  if (trnc_type_numel(&dst->t) && (dst->buffer < 0 || !contiguous(dst)))
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED,
                   "%s: the result must be a contiguous tensor trnc holds", n->target);
  int64_t es = lw_esize(dst->t.dtype);
  trnc_nc_collective cc;
  memset(&cc, 0, sizeof cc);
  cc.op = (uint8_t)cc_op(n->op);
  cc.dtype = (uint8_t)dst->t.dtype;
  cc.handle = (int32_t)out;
  cc.group_size = gsize;
  snprintf(cc.group, sizeof cc.group, "%s", group);
  cc.src_buffer = src.buffer < 0 ? 0 : src.buffer;
  cc.dst_buffer = dst->buffer < 0 ? 0 : dst->buffer;
  cc.src_offset = src.t.offset * es;
  cc.dst_offset = dst->t.offset * es;
  cc.src_bytes = trnc_type_numel(&src.t) * es;
  cc.dst_bytes = trnc_type_numel(&dst->t) * es;
  if (cc.op == TRNC_NC_CC_ALL_REDUCE || cc.op == TRNC_NC_CC_REDUCE_SCATTER) {
    const trnc_arg *r = trnc_node_arg(n, 1);
    static const char *const names[] = {"sum", "avg", "product", "min", "max"};
    static const uint8_t reds[] = {TRNC_NC_RED_SUM, TRNC_NC_RED_AVG, TRNC_NC_RED_PRODUCT,
                                   TRNC_NC_RED_MIN, TRNC_NC_RED_MAX};
    for (int i = 0; i < 5; i++)
      if (r && r->kind == TRNC_ARG_STR && !strcmp(r->u.s, names[i])) cc.reduce = reds[i];
  }
  if (cc.op == TRNC_NC_CC_BROADCAST) cc.root = (int32_t)trnc_arg_int(n, 1, 0);
  if (cc.op == TRNC_NC_CC_ALL_TO_ALL) {
    int64_t os[TRNC_NC_CC_MAX_GROUP], is[TRNC_NC_CC_MAX_GROUP];
    const trnc_arg *ao = trnc_node_arg(n, 1), *ai = trnc_node_arg(n, 2);
    int k = ao && ao->kind == TRNC_ARG_LIST ? (int)ao->u.list.n : 0;
    int ki = ai && ai->kind == TRNC_ARG_LIST ? (int)ai->u.list.n : 0;
    if (k != ki || (k && (k != gsize || k > TRNC_NC_CC_MAX_GROUP))) /* refused by check_cc */
      return lw_fail(L, n, TRNC_ERR_INTERNAL,
                     "all_to_all_single: %d/%d splits for a group of %d ranks (at most %d)", k, ki,
                     gsize, TRNC_NC_CC_MAX_GROUP);
    const trnc_type *xt = &g->values[in].type;
    int64_t row = xt->rank ? trnc_type_numel(xt) / (xt->shape[0] ? xt->shape[0] : 1) : 1;
    for (int i = 0; i < k; i++) {
      os[i] = ao->u.list.items[i].u.i;
      is[i] = ai->u.list.items[i].u.i;
      cc.out_split[i] = os[i] * row * es;
      cc.in_split[i] = is[i] * row * es;
    }
    cc.nsplits = k;
  }
  trnc_status st = bound_inflight(L, n);
  if (st) return st;
  if (trnc_nc_program_add_collective(L->prog, &cc) < 0)
    return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory adding a collective step");
  return has_wait(g, out) ? TRNC_OK : add_wait(L, n, cc.handle);
}

trnc_status lw_cc_emit(lw *L, const trnc_node *n) {
  const trnc_arg *gn = n->nargs ? trnc_node_arg(n, n->nargs - 1) : NULL;
  const char *group = gn && gn->kind == TRNC_ARG_STR ? gn->u.s : "";
  int32_t gsize = trnc_graph_group_size(L->g, group);
  if (gsize < 1 || strlen(group) >= TRNC_NC_CC_GROUP_NAME) /* refused by check_cc */
    return lw_fail(L, n, TRNC_ERR_INTERNAL,
                   "%s: process group '%s' has no recorded size or a name of %d bytes or more",
                   n->target, group, TRNC_NC_CC_GROUP_NAME);
  const trnc_arg *a0 = trnc_node_arg(n, 0);
  if (a0 && a0->kind == TRNC_ARG_LIST) {
    for (uint32_t k = 0; k < a0->u.list.n && k < n->nouts; k++) {
      trnc_status st = start_one(L, n, a0->u.list.items[k].u.ref, n->outs[k], group, gsize);
      if (st) return st;
    }
    return TRNC_OK;
  }
  return start_one(L, n, a0->u.ref, n->outs[0], group, gsize);
}

trnc_status lw_cc_wait(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  if (!n->nargs || n->args[0].kind != TRNC_ARG_VALUE) return TRNC_OK;
  trnc_ref r = n->args[0].u.ref;
  if (!is_start(g->nodes[g->values[r].node].op)) return TRNC_OK; /* nothing in flight: a no-op */
  /* a second wait on the same result is a no-op too */
  for (size_t k = trnc_nc_program_kernel_count(L->prog); k-- > 0;) {
    const trnc_nc_collective *cc = trnc_nc_kernel_collective(L->prog, k);
    if (cc && cc->handle == (int32_t)r) {
      if (cc->op == TRNC_NC_CC_WAIT) return TRNC_OK;
      break;
    }
  }
  return add_wait(L, n, (int32_t)r);
}
