/*
 * gather.c — indirect loads in the kernel IR: embedding and index_select as
 * a kir `gather` op, so the lookup fuses with the elementwise and row ops
 * that read it (token + position embedding, their add and the first layer
 * norm are one kernel).
 *
 * A gather reads row idx(p) of a table: the table is an HBM tensor whose
 * rows are row_stride elements apart (rows of them) and whose access map
 * over the kernel's axes is the row's pattern (the result dims that are not
 * index dims); the index is an i32 value constant along that pattern, one
 * per partition ([P, 1] in SBUF: what the DMA gather mode reads). The DMA's
 * own range check reports an index outside [0, rows) as TRNC_ERR_LIMIT, as
 * eager raises.
 *
 * Schedule (codegen/kir/emit.c): partitions walk an axis the index varies
 * along, the free dims only axes it does not (map kernels: kir_gather_order
 * puts the index dims outermost; row kernels: kir_gather_fits lets a gather
 * join a row group only when the rows fold exactly its pattern, so every
 * space axis is an index axis or a broadcast one).
 */
#include <string.h>

#include "codegen/kir/kir.h"

static trnc_ref vref(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_VALUE) ? a->u.ref : TRNC_NO_REF;
}

static int wrapdim(int64_t d, int rank) {
  int r = rank ? rank : 1;
  return (int)(d < 0 ? d + r : d);
}

int kir_gather(kir_kernel *k, int tensor, int idx, trnc_dtype dt) {
  if (idx < 0 || tensor < 0) return -1;
  int v = kir_value_new(k, dt, k->values[idx].axes);
  if (v < 0) return -1;
  kir_op o;
  memset(&o, 0, sizeof o);
  o.code = KIR_GATHER;
  o.dst = (int16_t)v;
  o.src[0] = (int16_t)idx;
  o.src[1] = o.src[2] = -1;
  o.tensor = (int16_t)tensor;
  return kir_op_add(k, o) ? v : -1;
}

/* The index tensors of index.Tensor / index_put (one or two, i32 or i64):
 * their count, positions in the index list and values; 0 for any other
 * form. */
static int index_list(const trnc_graph *g, const trnc_node *n, int *pos, trnc_ref *ref) {
  const trnc_arg *l = trnc_node_arg(n, 1);
  if (!l || l->kind != TRNC_ARG_LIST) return 0;
  int cnt = 0;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_arg *a = &l->u.list.items[i];
    if (a->kind == TRNC_ARG_NONE) continue;
    if (a->kind != TRNC_ARG_VALUE || cnt == 2) return 0;
    trnc_dtype dt = g->values[a->u.ref].type.dtype;
    if (dt != TRNC_I32 && dt != TRNC_I64) return 0;
    pos[cnt] = (int)i;
    ref[cnt++] = a->u.ref;
  }
  return cnt;
}

/* index.Tensor's broadcast index block: its rank and first result dim
 * (the indexed dim; the front when two index tensors are not adjacent). */
static int index_block(const trnc_graph *g, int cnt, const int *pos, const trnc_ref *ref, int *first) {
  int brank = 0;
  for (int i = 0; i < cnt; i++)
    if (g->values[ref[i]].type.rank > brank) brank = g->values[ref[i]].type.rank;
  *first = cnt == 1 || pos[1] == pos[0] + 1 ? pos[0] : 0;
  return brank;
}

/* x[i0] / x[i0, i1] of table type xt (index.Tensor, index_put) can be a kir
 * gather or scatter: the wrap idx + (idx < 0) * size is exact in VectorE's
 * fp32; with two indices, so are the flat rows i0 * m0 + i1 * m1 of <= 2^21. */
static bool indexes_ok(const trnc_graph *g, const trnc_node *n, const trnc_type *xt) {
  int pos[2];
  trnc_ref ref[2];
  int cnt = index_list(g, n, pos, ref);
  if (!cnt) return false;
  int64_t ext = trnc_type_extent(xt);
  for (int d = 0; d < xt->rank; d++)
    if (ext && xt->stride[d] < 0) return false;
  for (int i = 0; i < cnt; i++)
    if (pos[i] >= xt->rank || xt->shape[pos[i]] > (1 << 24)) return false;
  return cnt == 1 || (ext <= (1 << 21) && trnc_type_numel(xt) <= (1 << 21));
}

/* A row gather or scatter along dim d of index type it: partitions walk
 * dim d, the other dims are looped; worth it while that makes at most about
 * twice the tiles of a flat row space (a shorter dim addresses single
 * elements: element_address). */
static bool tiles_well(const trnc_type *it, int d) {
  int64_t nd = it->shape[d], numel = trnc_type_numel(it), loops = nd ? numel / nd : 0;
  return loops * ((nd + 127) / 128) <= 2 * ((numel + 127) / 128) + 8;
}

/* A gather along a short dim reads single elements of x (element_gather):
 * their addresses are exact int32 while x's elements span <= 2^31 - 1. */
static int64_t element_span(const trnc_type *xt, int64_t *low) {
  int64_t lo = 0, hi = 0;
  if (low) *low = 0;
  for (int d = 0; d < xt->rank; d++) {
    if (xt->shape[d] == 0) return 0;
    int64_t e = (xt->shape[d] - 1) * xt->stride[d];
    if (e < 0) lo += e;
    else hi += e;
  }
  if (low) *low = lo;
  return hi - lo + 1;
}

static bool element_table_ok(const trnc_type *xt) { return element_span(xt, NULL) <= INT32_MAX; }

bool kir_is_gather(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_GATHER: { /* out[p] = x[p with dim d = idx[p]] */
      trnc_ref x = vref(n, 0), ix = vref(n, 2);
      if (x == TRNC_NO_REF || ix == TRNC_NO_REF) return false;
      const trnc_type *xt = &g->values[x].type, *it = &g->values[ix].type;
      if (xt->rank != it->rank || xt->rank == 0 || (it->dtype != TRNC_I32 && it->dtype != TRNC_I64)) return false;
      int d = wrapdim(trnc_arg_int(n, 1, 0), xt->rank);
      return xt->shape[d] <= INT32_MAX && (tiles_well(it, d) || element_table_ok(xt));
    }
    case TRNC_OP_INDEX: {
      trnc_ref x = vref(n, 0);
      return x != TRNC_NO_REF && indexes_ok(g, n, &g->values[x].type);
    }
    case TRNC_OP_EMBEDDING: {
      trnc_ref w = vref(n, 0), ix = vref(n, 1);
      if (w == TRNC_NO_REF || ix == TRNC_NO_REF || g->values[w].type.rank != 2) return false;
      trnc_dtype dt = g->values[ix].type.dtype;
      return (dt == TRNC_I32 || dt == TRNC_I64) && g->values[w].type.shape[0] <= INT32_MAX;
    }
    case TRNC_OP_INDEX_SELECT: {
      trnc_ref x = vref(n, 0), ix = vref(n, 2);
      if (x == TRNC_NO_REF || ix == TRNC_NO_REF) return false;
      const trnc_type *xt = &g->values[x].type, *it = &g->values[ix].type;
      if ((it->dtype != TRNC_I32 && it->dtype != TRNC_I64) || it->rank > 1) return false;
      return xt->rank == 0 || xt->shape[wrapdim(trnc_arg_int(n, 1, 0), xt->rank)] <= INT32_MAX;
    }
    default: return false;
  }
}

/* Dims of n's result that are index dims (bit d: result dim d). */
static uint32_t index_dims(const trnc_graph *g, const trnc_node *n) {
  if (n->op == TRNC_OP_EMBEDDING) return (1u << g->values[vref(n, 1)].type.rank) - 1;
  if (n->op == TRNC_OP_GATHER) return (1u << g->values[vref(n, 2)].type.rank) - 1;
  if (n->op == TRNC_OP_INDEX) {
    int pos[2], first;
    trnc_ref ref[2];
    int brank = index_block(g, index_list(g, n, pos, ref), pos, ref, &first);
    return ((1u << brank) - 1) << first;
  }
  const trnc_type *xt = &g->values[vref(n, 0)].type;
  return xt->rank ? 1u << wrapdim(trnc_arg_int(n, 1, 0), xt->rank) : 0;
}

uint32_t kir_gather_dims(const trnc_graph *g, const trnc_node *n, int rank) {
  int off = rank - g->values[n->outs[0]].type.rank;
  return off < 0 ? 0 : index_dims(g, n) << off;
}

bool kir_gather_fits(const trnc_graph *g, const trnc_node *const *nodes, int n, int rank, uint32_t rows) {
  const trnc_node *m = nodes[n - 1];
  if (kir_is_gather(g, m))
    for (uint32_t a = 0; a < m->nargs; a++) {
      /* a tensor argument, or the index tensors of index.Tensor's list */
      const trnc_arg *items = m->args[a].kind == TRNC_ARG_LIST ? m->args[a].u.list.items : &m->args[a];
      uint32_t nitems = m->args[a].kind == TRNC_ARG_LIST ? m->args[a].u.list.n : 1;
      for (uint32_t t = 0; t < nitems; t++) {
        if (items[t].kind != TRNC_ARG_VALUE) continue;
        const trnc_node *p = &g->nodes[g->values[items[t].u.ref].node];
        for (int i = 0; i < n - 1; i++)
          if (nodes[i] == p) return false; /* a table or index must be in HBM */
      }
    }
  if (!rows) return true;
  for (int i = 0; i < n; i++) {
    if (!kir_is_gather(g, nodes[i])) continue;
    const trnc_type *ot = &g->values[nodes[i]->outs[0]].type;
    int off = rank - ot->rank;
    if (off < 0) return false;
    uint32_t all = ((1u << ot->rank) - 1) << off, idx = kir_gather_dims(g, nodes[i], rank);
    if ((rows & idx) || ((all & ~idx) & ~rows)) return false;
  }
  return true;
}

/* lw_tv view of t over `rank` dims. */
static lw_tv view(const lw_tv *t, int rank, const int64_t *shape, const int64_t *stride) {
  lw_tv v = *t;
  v.t.rank = (uint8_t)rank;
  for (int d = 0; d < rank; d++) {
    v.t.shape[d] = shape[d];
    v.t.stride[d] = stride[d];
  }
  return v;
}

/* idx + (idx < 0) * size: the add in GpSimd's exact int32. */
static int wrap_index(kir_kernel *k, int v, int64_t size) {
  return kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, v, kir_ts(k, TRNC_I32, v, TRNC_NC_ALU_LT, 0, TRNC_NC_ALU_MUL, (float)size));
}

/* Tensor t, just added (the kernel's last), or an identical earlier one: a
 * table or index that several gathers of one group read (cross's backward
 * reads two index vectors from three tables eight times) is one tensor. */
static int interned(kir_kernel *k, int t) {
  if (t < 0 || t != k->ntensors - 1) return t;
  for (int i = 0; i < t; i++)
    if (!memcmp(&k->tensors[i], &k->tensors[t], sizeof k->tensors[t])) {
      k->ntensors--;
      return i;
    }
  return t;
}

/* x[i0] or x[i0, i1] (index.Tensor, index_put): the table x without its indexed dims
 * (*tab over tab_axis), its rows and row stride, and the row index value.
 * Two indices address rows of gcd(stride0, stride1) elements, flat =
 * c0 * m0 + c1 * m1 with each wrapped index clamped to c in [-1, size]; an
 * out-of-range one pushes flat below zero (- 2^30 each) so the DMA's range
 * check refuses it instead of reading another element. -1 when full. */
static int advanced_index(lw *L, kir_kernel *k, const trnc_node *n, const lw_tv *x, int off, lw_tv *tab,
                          int *tab_axis, int64_t *rows, int64_t *rstride) {
  int pos[2], first, axis_of[TRNC_MAX_RANK];
  trnc_ref ref[2];
  int cnt = index_list(L->g, n, pos, ref), brank = index_block(L->g, cnt, pos, ref, &first);
  int64_t sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK], m[2] = {1, 1};
  for (int j = 0, r = 0, oi = 0; j < x->t.rank; j++) {
    if (j == pos[0] || (cnt == 2 && j == pos[1])) continue;
    if (oi == first) oi += brank;
    sh[r] = x->t.shape[j];
    st[r] = x->t.stride[j];
    tab_axis[r++] = off + oi++;
  }
  *tab = view(x, x->t.rank - cnt, sh, st);
  *rows = x->t.shape[pos[0]];
  *rstride = x->t.stride[pos[0]];
  if (cnt == 2) {
    int64_t s0 = x->t.shape[pos[0]] > 1 ? x->t.stride[pos[0]] : 0, s1 = x->t.shape[pos[1]] > 1 ? x->t.stride[pos[1]] : 0;
    int64_t a = s0, b = s1;
    while (b) {
      int64_t t = a % b;
      a = b;
      b = t;
    }
    *rstride = a ? a : 1;
    m[0] = s0 / *rstride;
    m[1] = s1 / *rstride;
    *rows = (x->t.shape[pos[0]] - 1) * m[0] + (x->t.shape[pos[1]] - 1) * m[1] + 1;
    if (x->t.shape[pos[0]] == 0 || x->t.shape[pos[1]] == 0) *rows = 0;
  }
  int flat = -1, bad = -1;
  for (int i = 0; i < cnt; i++) {
    const lw_tv *it = &L->tv[ref[i]];
    if (it->buffer < 0 || it->t.dtype != TRNC_I32) {
      lw_fail(L, n, TRNC_ERR_INTERNAL, "index: index tensor not in HBM as i32");
      return -1;
    }
    for (int d = 0; d < it->t.rank; d++) axis_of[d] = off + first + brank - it->t.rank + d;
    int t = interned(k, kir_tensor_add(k, it, axis_of));
    int64_t size = x->t.shape[pos[i]];
    int w = wrap_index(k, t < 0 ? -1 : kir_load(k, t, TRNC_I32), size);
    if (cnt == 1) return w;
    int c = kir_ts(k, TRNC_I32, w, TRNC_NC_ALU_MAX, -1, TRNC_NC_ALU_MIN, (float)size);
    int b = kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, kir_ts(k, TRNC_I32, c, TRNC_NC_ALU_LT, 0, TRNC_NC_ALU_BYPASS, 0),
                   kir_ts(k, TRNC_I32, c, TRNC_NC_ALU_GE, (float)size, TRNC_NC_ALU_BYPASS, 0));
    int term = kir_ts(k, TRNC_I32, c, TRNC_NC_ALU_MUL, (float)m[i], TRNC_NC_ALU_BYPASS, 0);
    flat = flat < 0 ? term : kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, flat, term);
    bad = bad < 0 ? b : kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, bad, b);
  }
  return kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, flat,
                kir_ts(k, TRNC_I32, bad, TRNC_NC_ALU_MUL, -1073741824.0f, TRNC_NC_ALU_BYPASS, 0));
}

/*
 * A gather or scatter along a dim d too short to fill the partitions: every
 * element of the index addresses one element of table x, at the flat address
 *   clamp(idx, 0, size_d - 1) * stride_d + sum_{j != d} pos_j * stride_j
 * (GpSimd int32 arithmetic and an iota over the kernel's axes, the index's
 * dims at axes off...), into x seen as a table of single elements starting
 * at its lowest address (*te; negative strides: a flipped view); partitions
 * then walk any dim of the index. The clamp keeps every address inside x;
 * an index outside [0, size_d) is reported as the user wrote it by a
 * one-element gather of the index itself along dim d of `check` (x, or a
 * tensor of x's shape that the kernel does not write: the DMA's range
 * check, TRNC_ERR_LIMIT). Returns the address value, -1 when full.
 */
static int element_address(kir_kernel *k, const lw_tv *x, const lw_tv *check, int raw, int d, int off, int *te) {
  int64_t size = x->t.shape[d];
  int64_t aff[KIR_MAX_AXES] = {0}, none[KIR_MAX_AXES] = {0};
  for (int j = 0; j < x->t.rank; j++)
    if (j != d && x->t.shape[j] > 1) aff[off + j] = x->t.stride[j];
  uint32_t all = (uint32_t)((1ull << k->naxes) - 1);
  int tc = kir_tensor_map(k, check->buffer, check->t.dtype, check->t.offset, none);
  if (tc >= 0) {
    k->tensors[tc].rows = size;
    k->tensors[tc].row_stride = check->t.stride[d];
  }
  int checked = kir_gather(k, tc, raw, check->t.dtype);
  int c = kir_tt(k, TRNC_I32, TRNC_NC_ALU_MAX, raw, kir_const_i32(k, all, 0));
  c = kir_tt(k, TRNC_I32, TRNC_NC_ALU_MIN, c, kir_const_i32(k, all, (int32_t)(size - 1)));
  if (x->t.stride[d] != 1 && c >= 0)
    c = kir_tt(k, TRNC_I32, TRNC_NC_ALU_MUL, c, kir_const_i32(k, all, (int32_t)x->t.stride[d]));
  int64_t low = 0;
  int64_t span = element_span(&x->t, &low);
  int ta = kir_tensor_map(k, -1, TRNC_I32, -low, aff);
  int flat = kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, c, kir_iota(k, ta));
  *te = kir_tensor_map(k, x->buffer, x->t.dtype, x->t.offset + low, none);
  if (*te >= 0) {
    k->tensors[*te].rows = span;
    k->tensors[*te].row_stride = 1;
  }
  return checked < 0 || *te < 0 ? -1 : flat;
}

/* gather along a short dim d: one element of x per index element
 * (element_address). */
static trnc_status element_gather(kir_env *E, const trnc_node *n, const lw_tv *x, const lw_tv *i, int d, int off) {
  lw *L = E->L;
  kir_kernel *k = E->k;
  if (x->t.shape[d] == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "gather: index into an empty dim");
  if (x->buffer < 0 || i->buffer < 0 || i->t.dtype != TRNC_I32)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: table or index not in HBM as i32", n->target);
  int ix_axis[TRNC_MAX_RANK];
  for (int j = 0; j < i->t.rank; j++) ix_axis[j] = off + j;
  int ti = kir_tensor_add(k, i, ix_axis), te = -1;
  int raw = ti < 0 ? -1 : kir_load(k, ti, TRNC_I32);
  int flat = element_address(k, x, x, raw, d, off, &te);
  int v = flat < 0 ? -1 : kir_gather(k, te, flat, x->t.dtype);
  if (v < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  E->val[n->outs[0]] = (int16_t)v;
  return TRNC_OK;
}

trnc_status kir_lower_gather(kir_env *E, const trnc_node *n) {
  lw *L = E->L;
  kir_kernel *k = E->k;
  int rank = L->g->values[n->outs[0]].type.rank; /* its tv may have no buffer */
  int off = k->naxes - (rank ? rank : 1);
  int64_t sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int tab_axis[TRNC_MAX_RANK], ix_axis[TRNC_MAX_RANK];
  lw_tv tab, ix;
  memset(&ix, 0, sizeof ix);
  int64_t rows, rstride;
  int vi = -2; /* the index value; -2: the index tensor ix, loaded below */
  const char *what;
  if (n->op == TRNC_OP_EMBEDDING) {
    const lw_tv *w = &L->tv[vref(n, 0)], *i = &L->tv[vref(n, 1)];
    ix = *i;
    for (int d = 0; d < i->t.rank; d++) ix_axis[d] = off + d;
    sh[0] = w->t.shape[1];
    st[0] = w->t.stride[1];
    tab = view(w, 1, sh, st);
    tab_axis[0] = off + i->t.rank;
    rows = w->t.shape[0];
    rstride = w->t.stride[0];
    what = "embedding: index into an empty weight";
  } else if (n->op == TRNC_OP_GATHER) { /* rows along dim d; the other dims walk x's strides */
    const lw_tv *x = &L->tv[vref(n, 0)], *i = &L->tv[vref(n, 2)];
    int d = wrapdim(trnc_arg_int(n, 1, 0), x->t.rank);
    if (!tiles_well(&i->t, d)) return element_gather(E, n, x, i, d, off);
    ix = *i;
    for (int j = 0; j < x->t.rank; j++) {
      ix_axis[j] = tab_axis[j] = off + j;
      sh[j] = x->t.shape[j];
      st[j] = j == d ? 0 : x->t.stride[j];
    }
    tab = view(x, x->t.rank, sh, st);
    rows = x->t.shape[d];
    rstride = x->t.stride[d];
    what = "gather: index into an empty dim";
  } else if (n->op == TRNC_OP_INDEX) {
    vi = advanced_index(L, k, n, &L->tv[vref(n, 0)], off, &tab, tab_axis, &rows, &rstride);
    if (vi < 0) return L->status ? L->status : lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
    what = "index: index into an empty dim";
  } else { /* index_select; a 0-d self is one row along dim 0 */
    const lw_tv *x = &L->tv[vref(n, 0)], *i = &L->tv[vref(n, 2)];
    int xr = x->t.rank, d = wrapdim(trnc_arg_int(n, 1, 0), xr);
    sh[0] = trnc_type_numel(&i->t);
    st[0] = i->t.rank ? i->t.stride[0] : 1;
    ix = view(i, 1, sh, st);
    ix_axis[0] = off + d;
    int r = 0;
    for (int j = 0; j < xr; j++) {
      if (j == d) continue;
      sh[r] = x->t.shape[j];
      st[r] = x->t.stride[j];
      tab_axis[r++] = off + j;
    }
    tab = view(x, r, sh, st);
    rows = xr ? x->t.shape[d] : 1;
    rstride = xr ? x->t.stride[d] : 1;
    what = "index_select: index into an empty dim";
  }
  if (rows == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "%s", what);
  if (tab.buffer < 0 || (vi == -2 && (ix.buffer < 0 || ix.t.dtype != TRNC_I32)))
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: table or index not in HBM as i32", n->target);
  int tt = kir_tensor_add(k, &tab, tab_axis);
  if (tt >= 0) {
    k->tensors[tt].rows = rows;
    k->tensors[tt].row_stride = rstride;
    tt = interned(k, tt);
  }
  if (vi == -2) {
    int ti = interned(k, kir_tensor_add(k, &ix, ix_axis));
    vi = ti < 0 ? -1 : kir_load(k, ti, TRNC_I32);
  }
  int v = kir_gather(k, tt, vi, tab.t.dtype);
  if (v < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  E->val[n->outs[0]] = (int16_t)v;
  return TRNC_OK;
}

/* Tensors that gather indices are loaded from (the loads an index value is
 * computed from). */
static void index_tensors(const kir_kernel *k, int v, bool *is_ix, int depth) {
  if (v < 0 || depth > KIR_MAX_OPS) return;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->dst != v) continue;
    if (o->code == KIR_LOAD || o->code == KIR_IOTA) is_ix[o->tensor] = true;
    else
      for (int s = 0; s < 3; s++) index_tensors(k, o->src[s], is_ix, depth + 1);
    return;
  }
}

/* Class of dim d of s: 0 an index and a table vary along it (looped), 1 an
 * index only (partitions), 2 no index (the rows' pattern: free dims). */
static int dim_class(const lw_space *s, const bool *is_ix, const bool *is_tab, int d) {
  bool ix = false, tab = false;
  for (int o = 0; o < s->nops; o++) {
    bool v = s->stride[o][d] != 0 && s->size[d] > 1;
    ix |= is_ix[o] && v;
    tab |= is_tab[o] && v;
  }
  return !ix ? 2 : tab ? 0 : 1;
}

trnc_status kir_gather_tiles(lw *L, const kir_kernel *k, lw_space *s, int64_t max_free, lw_tile_fn fn,
                             void *ctx) {
  bool is_ix[KIR_MAX_TENSORS] = {false}, is_tab[KIR_MAX_TENSORS] = {false};
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].code == KIR_GATHER || k->ops[i].code == KIR_SCATTER) {
      index_tensors(k, k->ops[i].src[0], is_ix, 0);
      is_tab[k->ops[i].tensor] = true;
    }
  /* stable partition by class: looped, partition, pattern dims */
  lw_space t = *s;
  int w = 0;
  for (int c = 0; c < 3; c++)
    for (int d = 0; d < s->rank; d++) {
      if (dim_class(s, is_ix, is_tab, d) != c) continue;
      t.size[w] = s->size[d];
      for (int o = 0; o < s->nops; o++) t.stride[o][w] = s->stride[o][d];
      w++;
    }
  lw_space_coalesce(&t); /* never merges dims of different classes */
  int nloop = 0, nfirst = 0;
  for (int d = 0; d < t.rank; d++) {
    int c = dim_class(&t, is_ix, is_tab, d);
    if (c == 0) nloop = d + 1;
    if (c < 2) nfirst = d + 1;
  }
  /* the space inside the looped dims */
  lw_space in = t;
  in.rank = t.rank - nloop;
  for (int d = 0; d < in.rank; d++) {
    in.size[d] = t.size[nloop + d];
    for (int o = 0; o < t.nops; o++) in.stride[o][d] = t.stride[o][nloop + d];
  }
  if (nfirst == t.rank) { /* rows of one element: a free dim of 1 */
    in.size[in.rank] = 1;
    for (int o = 0; o < in.nops; o++) in.stride[o][in.rank] = 0;
    in.rank++;
  }
  int64_t idx[TRNC_MAX_RANK + 1] = {0};
  for (;;) {
    for (int o = 0; o < t.nops; o++) {
      in.base[o] = t.base[o];
      for (int d = 0; d < nloop; d++) in.base[o] += idx[d] * t.stride[o][d];
    }
    trnc_status st = lw_space_tiles(L, &in, nfirst - nloop, max_free, fn, ctx);
    if (st) return st;
    int d = nloop - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < t.size[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return TRNC_OK;
  }
}

/* A DMA gather of table T into tile t (access pattern sb) or a scatter of t
 * into T, at the indices in tile idx; a scatter writes the token w. */
static trnc_status indirect_dma(lw *L, const kir_kernel *k, const kir_tensor *T, bool gather, lw_tile *t,
                                trnc_nc_ap sb, trnc_nc_ap table, lw_tile *idx, lw_tile *w) {
  if (table.partitions > 1 && table.partition_stride != 0)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: an indexed table varies along the partition axis");
  table.partitions = (int32_t)T->rows;
  table.partition_stride = T->row_stride;
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  in.mode = gather ? TRNC_NC_DMA_GATHER : TRNC_NC_DMA_SCATTER;
  in.dst = gather ? sb : table;
  in.src[0] = gather ? table : sb;
  int64_t one = 1;
  in.src[1] = lw_tile_ap(idx, sb.partitions, 0, TRNC_I32, 1, &one);
  lw_tile *rd[2] = {idx, t};
  return gather ? lw_emit(L, &in, rd, 1, &t, 1) : lw_emit(L, &in, rd, 2, &w, 1);
}

trnc_status kir_gather_dma(lw *L, const kir_kernel *k, const kir_tensor *T, lw_tile *dst, trnc_nc_ap sb,
                           trnc_nc_ap table, lw_tile *idx) {
  return indirect_dma(L, k, T, true, dst, sb, table, idx, NULL);
}

/* ---- scatter ------------------------------------------------------------------ */

bool kir_scatter(kir_kernel *k, int tensor, int idx, int v) {
  if (idx < 0 || v < 0 || tensor < 0) return false;
  kir_op o;
  memset(&o, 0, sizeof o);
  o.code = KIR_SCATTER;
  o.dst = -1;
  o.src[0] = (int16_t)idx;
  o.src[1] = (int16_t)v;
  o.src[2] = -1;
  o.tensor = (int16_t)tensor;
  return kir_op_add(k, o);
}

bool kir_scatter_handles(const trnc_graph *g, const trnc_node *n) {
  trnc_ref x = vref(n, 0), ix;
  if (x == TRNC_NO_REF) return false;
  const trnc_type *xt = &g->values[x].type;
  if (n->op == TRNC_OP_INDEX_PUT) /* the rows are the result's (self copied) */
    return indexes_ok(g, n, &g->values[n->outs[0]].type) && vref(n, 2) != TRNC_NO_REF &&
           !trnc_arg_bool(n, 3, false);
  if (n->op != TRNC_OP_SCATTER_SRC && n->op != TRNC_OP_SCATTER_VALUE) return false;
  ix = vref(n, 2);
  if (ix == TRNC_NO_REF) return false;
  const trnc_type *it = &g->values[ix].type;
  if (xt->rank != it->rank || xt->rank == 0 || (it->dtype != TRNC_I32 && it->dtype != TRNC_I64)) return false;
  if (n->op == TRNC_OP_SCATTER_SRC && (vref(n, 3) == TRNC_NO_REF || g->values[vref(n, 3)].type.rank != it->rank))
    return false;
  int d = wrapdim(trnc_arg_int(n, 1, 0), xt->rank);
  return xt->shape[d] <= INT32_MAX && (tiles_well(it, d) || element_table_ok(&g->values[n->outs[0]].type));
}

trnc_status kir_emit_scatter(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  const lw_tv *o = &L->tv[n->outs[0]];
  if (o->buffer < 0) return TRNC_OK;
  const char *copy = n->op == TRNC_OP_INDEX_PUT ? "index_put_self" : "scatter_self";
  trnc_status cs = lw_emit_copy(L, o, &L->tv[vref(n, 0)], copy);
  if (cs) return cs;
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  int64_t ext[KIR_MAX_AXES], sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int ix_axis[TRNC_MAX_RANK], tab_axis[TRNC_MAX_RANK], v_axis[TRNC_MAX_RANK];
  int rank = o->t.rank, naxes;
  const lw_tv *ix, *src = NULL;
  lw_tv tab;
  int64_t rows, rstride;
  bool wrap = n->op == TRNC_OP_INDEX_PUT, element = false;
  int d = 0;
  if (wrap) { /* out[i0(, i1)] = values (broadcast to the indexed shape) */
    int pos[2], first;
    trnc_ref ref[2];
    int cnt = index_list(g, n, pos, ref), brank = index_block(g, cnt, pos, ref, &first);
    ix = &L->tv[ref[0]];
    src = &L->tv[vref(n, 2)];
    naxes = rank - cnt + brank;
    for (int a = 0; a < brank; a++) ext[first + a] = 1;
    for (int i = 0; i < cnt; i++)
      for (int d = 0, r = g->values[ref[i]].type.rank; d < r; d++)
        if (g->values[ref[i]].type.shape[d] != 1) ext[first + brank - r + d] = g->values[ref[i]].type.shape[d];
    for (int j = 0, oi = 0; j < rank; j++) {
      if (j == pos[0] || (cnt == 2 && j == pos[1])) continue;
      if (oi == first) oi += brank;
      ext[oi++] = o->t.shape[j];
    }
    rows = 1; /* set with the index (advanced_index) */
    rstride = 1;
  } else { /* out[p with dim d = idx[p]] = src[p] (or value) */
    d = wrapdim(trnc_arg_int(n, 1, 0), rank);
    ix = &L->tv[vref(n, 2)];
    if (n->op == TRNC_OP_SCATTER_SRC) src = &L->tv[vref(n, 3)];
    element = !tiles_well(&ix->t, d); /* a short dim: element addresses */
    naxes = rank;
    for (int j = 0; j < rank; j++) {
      ext[j] = ix->t.shape[j];
      ix_axis[j] = tab_axis[j] = v_axis[j] = j;
      sh[j] = o->t.shape[j];
      st[j] = j == d ? 0 : o->t.stride[j];
    }
    tab = view(o, rank, sh, st);
    rows = o->t.shape[d];
    rstride = o->t.stride[d];
  }
  int64_t numel = 1;
  for (int a = 0; a < naxes; a++) numel *= ext[a];
  if (numel == 0 || o->buffer < 0) return TRNC_OK;
  if (rows == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "%s: index into an empty dim", n->target);
  if (ix->t.dtype != TRNC_I32 || ix->buffer < 0 || (src && src->buffer < 0))
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: index or source not in HBM", n->target);
  if (naxes == 0) ext[naxes++] = 1;
  kir_init(k, trnc_op_name(n->op), n, naxes, ext, 0);
  int v;
  if (src) {
    lw_tv sv = *src;
    if (wrap) { /* values right-aligned to the indexed shape */
      for (int d = 0; d < src->t.rank; d++) v_axis[d] = naxes - src->t.rank + d;
    } else { /* src's leading block of the index's shape */
      for (int d = 0; d < rank; d++) sv.t.shape[d] = ext[d];
    }
    int t = kir_tensor_add(k, &sv, v_axis);
    v = t < 0 ? -1 : kir_load(k, t, src->t.dtype);
  } else {
    v = kir_const(k, o->t.dtype, (naxes >= 32 ? ~0u : (1u << naxes) - 1),
                  (float)trnc_arg_number(trnc_node_arg(n, 3), 0));
  }
  int vi;
  if (wrap) {
    if ((vi = advanced_index(L, k, n, o, 0, &tab, tab_axis, &rows, &rstride)) < 0)
      return L->status ? L->status : lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
    if (rows == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "%s: index into an empty dim", n->target);
  } else {
    int ti = kir_tensor_add(k, ix, ix_axis);
    vi = ti < 0 ? -1 : kir_load(k, ti, TRNC_I32);
  }
  int tt = -1;
  if (element) { /* the range check reads self, which the kernel does not write */
    const lw_tv *x = &L->tv[vref(n, 0)];
    if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: self not in HBM", n->target);
    vi = element_address(k, o, x, vi, d, 0, &tt);
  } else if ((tt = kir_tensor_add(k, &tab, tab_axis)) >= 0) {
    k->tensors[tt].rows = rows;
    k->tensors[tt].row_stride = rstride;
  }
  if (!kir_scatter(k, tt, vi, v)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  const char *bad = kir_verify(k);
  if (bad) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel IR of %s is invalid: %s", k->name, bad);
  return kir_emit(L, k);
}

trnc_status kir_scatter_dma(lw *L, const kir_kernel *k, const kir_tensor *T, lw_tile *src, trnc_nc_ap sb,
                            trnc_nc_ap table, lw_tile *idx, lw_tile **tok) {
  if (!*tok) { /* orders the scatters: they may write the same rows */
    if (!(*tok = trnc_arena_alloc(&L->arena, sizeof **tok))) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
    memset(*tok, 0, sizeof **tok);
    (*tok)->mem = TRNC_NC_MEM_HBM;
  }
  return indirect_dma(L, k, T, false, src, sb, table, idx, *tok);
}

/* ---- accumulate --------------------------------------------------------------- */

bool kir_accum_handles(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_EMBEDDING_DENSE_BACKWARD: { /* dtype, blocks: check_embedding_bw (ir/ops.c) */
      trnc_ref go = vref(n, 0), ix = vref(n, 1);
      if (go == TRNC_NO_REF || ix == TRNC_NO_REF || g->values[n->outs[0]].type.rank != 2) return false;
      trnc_dtype dt = g->values[ix].type.dtype;
      return (dt == TRNC_I32 || dt == TRNC_I64) && g->values[go].type.rank == g->values[ix].type.rank + 1;
    }
    case TRNC_OP_INDEX_PUT: /* dtype, layout, sizes, blocks: check_index */
      return trnc_arg_bool(n, 3, false) && vref(n, 0) != TRNC_NO_REF && vref(n, 2) != TRNC_NO_REF &&
             indexes_ok(g, n, &g->values[n->outs[0]].type);
    case TRNC_OP_SCATTER_ADD: { /* ranks, sizes, dtypes, blocks: check_gather */
      trnc_ref x = vref(n, 0), ix = vref(n, 2), src = vref(n, 3);
      if (x == TRNC_NO_REF || ix == TRNC_NO_REF || src == TRNC_NO_REF) return false;
      const trnc_type *xt = &g->values[x].type, *it = &g->values[ix].type;
      return xt->rank == it->rank && xt->rank > 0 && g->values[src].type.rank == it->rank &&
             (it->dtype == TRNC_I32 || it->dtype == TRNC_I64) && element_table_ok(&g->values[n->outs[0]].type);
    }
    default: return false;
  }
}

/* A range check of index value i against `rows` rows of `row_stride`
 * elements of tv (a gather nothing reads: the DMA refuses an index outside
 * [0, rows)). false when full. */
static bool range_check(kir_kernel *k, const lw_tv *tv, int i, int64_t rows, int64_t row_stride) {
  int64_t none[KIR_MAX_AXES] = {0};
  int t = kir_tensor_map(k, tv->buffer, tv->t.dtype, tv->t.offset, none);
  if (t < 0) return false;
  k->tensors[t].rows = rows;
  k->tensors[t].row_stride = row_stride;
  return kir_gather(k, t, i, tv->t.dtype) >= 0;
}

trnc_status kir_emit_accumulate(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  const lw_tv *o = &L->tv[n->outs[0]];
  if (o->buffer < 0) return TRNC_OK;
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  int64_t ext[KIR_MAX_AXES], sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int ix_axis[TRNC_MAX_RANK], tab_axis[TRNC_MAX_RANK], v_axis[TRNC_MAX_RANK];
  int naxes;
  const lw_tv *ix = NULL, *src;
  int pos[2], first, cnt = 0;
  trnc_ref ref[2];
  bool init = n->op == TRNC_OP_EMBEDDING_DENSE_BACKWARD;
  if (init) { /* out [V, D]: row idx[p] += grad[p, :] */
    ix = &L->tv[vref(n, 1)];
    src = &L->tv[vref(n, 0)];
    naxes = ix->t.rank + 1;
    for (int d = 0; d < ix->t.rank; d++) {
      ext[d] = ix->t.shape[d];
      ix_axis[d] = v_axis[d] = d;
    }
    ext[ix->t.rank] = o->t.shape[1];
    v_axis[ix->t.rank] = ix->t.rank;
    if (trnc_type_numel(&ix->t) == 0) return lw_emit_fill(L, o, 0.0f, "embedding_backward");
  } else {
    const char *copy = n->op == TRNC_OP_INDEX_PUT ? "index_put_self" : "scatter_self";
    trnc_status cs = lw_emit_copy(L, o, &L->tv[vref(n, 0)], copy);
    if (cs) return cs;
    if (n->op == TRNC_OP_INDEX_PUT) { /* out[i0(, i1)] += values (broadcast to the indexed shape) */
      int rank = o->t.rank;
      cnt = index_list(g, n, pos, ref);
      int brank = index_block(g, cnt, pos, ref, &first);
      src = &L->tv[vref(n, 2)];
      naxes = rank - cnt + brank;
      for (int a = 0; a < brank; a++) ext[first + a] = 1;
      for (int i = 0; i < cnt; i++)
        for (int d = 0, r = g->values[ref[i]].type.rank; d < r; d++)
          if (g->values[ref[i]].type.shape[d] != 1) ext[first + brank - r + d] = g->values[ref[i]].type.shape[d];
      for (int j = 0, oi = 0; j < rank; j++) {
        if (j == pos[0] || (cnt == 2 && j == pos[1])) continue;
        if (oi == first) oi += brank;
        ext[oi++] = o->t.shape[j];
      }
      for (int d = 0; d < src->t.rank; d++) v_axis[d] = naxes - src->t.rank + d;
    } else { /* scatter_add: out[p with dim d = idx[p]] += src[p] */
      ix = &L->tv[vref(n, 2)];
      src = &L->tv[vref(n, 3)];
      naxes = ix->t.rank;
      for (int j = 0; j < naxes; j++) {
        ext[j] = ix->t.shape[j];
        ix_axis[j] = v_axis[j] = j;
      }
    }
  }
  int64_t numel = 1;
  for (int a = 0; a < naxes; a++) numel *= ext[a];
  if (numel == 0) return TRNC_OK;
  if ((ix && (ix->t.dtype != TRNC_I32 || ix->buffer < 0)) || src->buffer < 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: index or source not in HBM", n->target);
  if (naxes == 0) ext[naxes++] = 1;
  kir_init(k, trnc_op_name(n->op), n, naxes, ext, 0);
  /* the source, over the indexed shape (scatter_add: src's leading block of the index's shape) */
  lw_tv sv = *src;
  if (n->op == TRNC_OP_SCATTER_ADD)
    for (int d = 0; d < naxes; d++) sv.t.shape[d] = ext[d];
  int vt = kir_tensor_add(k, &sv, v_axis);
  int v = vt < 0 ? -1 : kir_load(k, vt, src->t.dtype);
  int vi = -1, tt = -1;
  if (n->op == TRNC_OP_EMBEDDING_DENSE_BACKWARD) {
    int64_t rows = o->t.shape[0], pad = trnc_arg_int(n, 3, -1);
    if (rows == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "embedding_dense_backward: no weights");
    int ti = kir_tensor_add(k, ix, ix_axis);
    int raw = ti < 0 ? -1 : kir_load(k, ti, TRNC_I32);
    if (raw < 0 || !range_check(k, o, raw, rows, o->t.stride[0]))
      return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
    vi = raw; /* padding_idx: index -1, which adds nothing */
    if (pad >= 0)
      vi = kir_tt(k, TRNC_I32, TRNC_NC_ALU_ADD, raw,
                  kir_ts(k, TRNC_I32, raw, TRNC_NC_ALU_EQ, (float)pad, TRNC_NC_ALU_MUL, (float)-(pad + 1)));
    sh[0] = o->t.shape[1];
    st[0] = o->t.stride[1];
    lw_tv tab = view(o, 1, sh, st);
    tab_axis[0] = naxes - 1;
    if ((tt = kir_tensor_add(k, &tab, tab_axis)) >= 0) {
      k->tensors[tt].rows = rows;
      k->tensors[tt].row_stride = o->t.stride[0];
    }
  } else if (n->op == TRNC_OP_INDEX_PUT) {
    lw_tv tab;
    int64_t rows, rstride;
    if ((vi = advanced_index(L, k, n, o, 0, &tab, tab_axis, &rows, &rstride)) < 0)
      return L->status ? L->status : lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
    if (rows == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "%s: index into an empty dim", n->target);
    if (!range_check(k, o, vi, rows, rstride)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
    if ((tt = kir_tensor_add(k, &tab, tab_axis)) >= 0) {
      k->tensors[tt].rows = rows;
      k->tensors[tt].row_stride = rstride;
    }
  } else { /* single elements at iota-computed addresses, the index checked as written against self */
    const lw_tv *x = &L->tv[vref(n, 0)];
    int d = wrapdim(trnc_arg_int(n, 1, 0), o->t.rank);
    if (o->t.shape[d] == 0) return lw_fail(L, n, TRNC_ERR_LIMIT, "%s: index into an empty dim", n->target);
    if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: self not in HBM", n->target);
    int ti = kir_tensor_add(k, ix, ix_axis);
    int raw = ti < 0 ? -1 : kir_load(k, ti, TRNC_I32);
    vi = raw < 0 ? -1 : element_address(k, o, x, raw, d, 0, &tt);
  }
  if (!kir_accum(k, tt, vi, v, init)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  const char *bad = kir_verify(k);
  if (bad) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel IR of %s is invalid: %s", k->name, bad);
  return kir_emit(L, k);
}
