/*
 * emit_reduce.c — sum, mean, amax, amin over any set of dims.
 *
 * Layout: kept dims go on partitions (the largest one) and loops; reduced
 * dims go on the free axis, innermost, where VectorE's tensor_reduce folds
 * them in one instruction per tile. Reduced extents larger than a tile are
 * folded chunk by chunk into an fp32 accumulator [P, 1].
 * When nothing is kept (a full reduction), a reduced dim goes on partitions
 * and the per-partition partials are folded across partitions on TensorE:
 * a transpose of the [P, 1] column into a PSUM row [1, P], which VectorE
 * then reduces along the free axis.
 */
#include <math.h>
#include <string.h>

#include "codegen/lower.h"

#define RMAX (TRNC_MAX_RANK + 1)

typedef struct red {
  int nk, nr;                 /* kept / reduced dims (after coalescing) */
  int64_t ksize[RMAX], kx[RMAX], ko[RMAX];   /* size, X stride, O stride */
  int64_t rsize[RMAX], rx[RMAX];
  int alu;
  bool mean;
  double count;
  const lw_tv *x, *o;
  lw_pool in_pool, part_pool, acc_pool, ps_pool, out_pool;
  int64_t max_free;
} red;

static trnc_status instr(lw *L, trnc_nc_instr *in, lw_tile *r0, lw_tile *r1, lw_tile *w) {
  lw_tile *rd[2] = {r0, r1};
  return lw_emit(L, in, rd, r1 ? 2 : (r0 ? 1 : 0), &w, 1);
}

/* Folds src [np, 1] into acc [np, 1] (first: copy). */
static trnc_status fold(lw *L, red *R, lw_tile *acc, lw_tile *src, int np, bool first) {
  int64_t one = 1;
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.engine = TRNC_NC_VECTOR;
  in.dst = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
  in.src[0] = lw_tile_ap(src, np, 0, TRNC_F32, 1, &one);
  if (first) {
    in.op = TRNC_NC_OP_TENSOR_COPY;
    return instr(L, &in, src, NULL, acc);
  }
  in.op = TRNC_NC_OP_TENSOR_TENSOR;
  in.alu0 = (uint8_t)R->alu;
  in.src[1] = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
  return instr(L, &in, src, acc, acc);
}

/* Reduces X over the reduced dims for partition range [p0, p0+np) of dim
 * pdim (a kept dim when kept_on_part, else reduced dim index) with kept
 * loop index base offset xoff; result in acc [np, 1]. */
static trnc_status reduce_rows(lw *L, red *R, int64_t xoff, int64_t pstride, int np, int skip_r,
                               lw_tile *acc) {
  /* free dims: the innermost reduced dims (up to 3, excluding skip_r), the
   * rest looped */
  int fd[RMAX], nfd = 0, ld[RMAX], nld = 0;
  for (int i = R->nr - 1; i >= 0; i--) {
    if (i == skip_r) continue;
    if (nfd < 3) fd[nfd++] = i;
    else ld[nld++] = i;
  }
  /* reverse fd to outer->inner */
  for (int i = 0; i < nfd / 2; i++) {
    int t = fd[i];
    fd[i] = fd[nfd - 1 - i];
    fd[nfd - 1 - i] = t;
  }
  int64_t inner = 1;
  for (int i = 0; i < nfd - 1; i++) inner *= R->rsize[fd[i]];
  int64_t last = nfd ? R->rsize[fd[nfd - 1]] : 1;
  if (inner > R->max_free) {
    /* loop all but the innermost */
    for (int i = 0; i < nfd - 1; i++) ld[nld++] = fd[i];
    fd[0] = fd[nfd - 1];
    nfd = 1;
    inner = 1;
  }
  int64_t chunk = R->max_free / inner;
  if (chunk > last) chunk = last;
  if (chunk < 1) chunk = 1;
  int64_t idx[RMAX] = {0};
  bool first = true;
  for (;;) {
    int64_t off = xoff;
    for (int i = 0; i < nld; i++) off += idx[i] * R->rx[ld[i]];
    for (int64_t f0 = 0; f0 < last; f0 += chunk) {
      int64_t fc = last - f0 < chunk ? last - f0 : chunk;
      lw_tile *t = lw_pool_next(&R->in_pool);
      trnc_nc_instr ld_;
      memset(&ld_, 0, sizeof ld_);
      ld_.op = TRNC_NC_OP_DMA_COPY;
      ld_.engine = (uint8_t)lw_dma_queue(L);
      int64_t counts[4];
      trnc_nc_ap *s = &ld_.src[0];
      s->mem = TRNC_NC_MEM_HBM;
      s->dtype = (uint8_t)R->x->t.dtype;
      s->buffer = R->x->buffer;
      s->partitions = np;
      s->partition_stride = pstride;
      s->nfree = (uint8_t)(nfd ? nfd : 1);
      int64_t o2 = off;
      if (!nfd) {
        s->free[0].stride = 1;
        s->free[0].count = 1;
        counts[0] = 1;
      }
      for (int i = 0; i < nfd; i++) {
        s->free[i].stride = R->rx[fd[i]];
        s->free[i].count = i == nfd - 1 ? fc : R->rsize[fd[i]];
        counts[i] = s->free[i].count;
      }
      if (nfd) o2 += f0 * R->rx[fd[nfd - 1]];
      s->offset = o2 * lw_esize(R->x->t.dtype);
      ld_.dst = lw_tile_ap(t, np, 0, TRNC_F32, nfd ? nfd : 1, counts);
      trnc_status st = lw_emit(L, &ld_, NULL, 0, &t, 1);
      if (st) return st;
      lw_tile *p = first ? acc : lw_pool_next(&R->part_pool);
      int64_t one = 1;
      trnc_nc_instr rd;
      memset(&rd, 0, sizeof rd);
      rd.op = TRNC_NC_OP_TENSOR_REDUCE;
      rd.engine = TRNC_NC_VECTOR;
      rd.alu0 = (uint8_t)R->alu;
      rd.mode = (uint8_t)(nfd ? nfd : 1);
      rd.src[0] = ld_.dst;
      rd.dst = lw_tile_ap(p, np, 0, TRNC_F32, 1, &one);
      if ((st = instr(L, &rd, t, NULL, p))) return st;
      if (!first && (st = fold(L, R, acc, p, np, false))) return st;
      first = false;
    }
    int i = 0;
    for (; i < nld; i++) {
      if (++idx[i] < R->rsize[ld[i]]) break;
      idx[i] = 0;
    }
    if (i == nld) break;
  }
  return TRNC_OK;
}

static trnc_status store_acc(lw *L, red *R, lw_tile *acc, int np, int64_t ooff, int64_t opstride) {
  int64_t one = 1;
  lw_tile *o = lw_pool_next(&R->out_pool);
  trnc_nc_instr sc;
  memset(&sc, 0, sizeof sc);
  sc.op = TRNC_NC_OP_TENSOR_SCALAR;
  sc.engine = TRNC_NC_VECTOR;
  sc.alu0 = R->mean ? TRNC_NC_ALU_MUL : TRNC_NC_ALU_BYPASS;
  sc.imm[0] = R->mean ? (float)(1.0 / R->count) : 0;
  sc.dst = lw_tile_ap(o, np, 0, R->o->t.dtype, 1, &one);
  sc.src[0] = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
  trnc_status st = instr(L, &sc, acc, NULL, o);
  if (st) return st;
  trnc_nc_instr sd;
  memset(&sd, 0, sizeof sd);
  sd.op = TRNC_NC_OP_DMA_COPY;
  sd.engine = (uint8_t)lw_dma_queue(L);
  sd.src[0] = sc.dst;
  sd.dst.mem = TRNC_NC_MEM_HBM;
  sd.dst.dtype = (uint8_t)R->o->t.dtype;
  sd.dst.buffer = R->o->buffer;
  sd.dst.partitions = np;
  sd.dst.partition_stride = opstride;
  sd.dst.offset = ooff * lw_esize(R->o->t.dtype);
  sd.dst.nfree = 1;
  sd.dst.free[0].stride = 1;
  sd.dst.free[0].count = 1;
  return lw_emit(L, &sd, &o, 1, NULL, 0);
}

trnc_status lw_emit_reduce(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  red R;
  memset(&R, 0, sizeof R);
  R.x = &L->tv[n->args[0].u.ref];
  R.o = &L->tv[n->outs[0]];
  const trnc_type *xt = &g->values[n->args[0].u.ref].type;
  if (R.o->buffer < 0) return TRNC_OK;
  R.alu = n->op == TRNC_OP_AMAX ? TRNC_NC_ALU_MAX : n->op == TRNC_OP_AMIN ? TRNC_NC_ALU_MIN : TRNC_NC_ALU_ADD;
  R.mean = n->op == TRNC_OP_MEAN || n->op == TRNC_OP_MEAN_ALL;
  bool redmask[RMAX] = {false};
  bool whole = n->op == TRNC_OP_SUM_ALL || n->op == TRNC_OP_MEAN_ALL;
  const trnc_arg *dl = whole ? NULL : trnc_node_arg(n, 1);
  bool all = !dl || dl->kind == TRNC_ARG_NONE || (dl->kind == TRNC_ARG_LIST && dl->u.list.n == 0);
  bool keepdim = !whole && trnc_node_arg(n, 2)->kind == TRNC_ARG_BOOL &&
                 trnc_node_arg(n, 2)->u.b;
  for (int i = 0; i < xt->rank; i++) redmask[i] = all;
  if (!all) {
    for (uint32_t k = 0; k < dl->u.list.n; k++) {
      int64_t dd = dl->u.list.items[k].u.i;
      if (dd < 0) dd += xt->rank;
      if (dd >= 0 && dd < xt->rank) redmask[dd] = true;
    }
  }
  /* split dims into kept and reduced, mapping O strides; size-1 dims drop */
  R.count = 1;
  int oi = 0;
  int64_t xk_size[RMAX], xk_x[RMAX], xk_o[RMAX], xr_size[RMAX], xr_x[RMAX];
  int nk = 0, nr = 0;
  for (int i = 0; i < xt->rank; i++) {
    int64_t sz = xt->shape[i];
    if (redmask[i]) {
      R.count *= (double)sz;
      if (keepdim) oi++;
      if (sz == 1) continue;
      xr_size[nr] = sz;
      xr_x[nr] = R.x->t.stride[i];
      nr++;
    } else {
      int64_t ost = R.o->t.stride[oi++];
      if (sz == 1) continue;
      xk_size[nk] = sz;
      xk_x[nk] = R.x->t.stride[i];
      xk_o[nk] = ost;
      nk++;
    }
  }
  if (trnc_type_numel(xt) == 0 || R.x->buffer < 0) {
    /* eager: the sum of no elements is 0, their mean 0/0 = NaN; amax/amin
     * of an empty dim raise (no identity), so they stay refused */
    if (trnc_type_numel(&R.o->t) == 0) return TRNC_OK;
    if (trnc_type_numel(xt) != 0)
      return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "reduction input is not materialized");
    if (R.alu != TRNC_NC_ALU_ADD)
      return lw_fail(L, n, TRNC_ERR_UNSUPPORTED,
                     "%s over an empty dim has no identity (eager raises); reduce a non-empty dim",
                     trnc_op_name(n->op));
    return lw_emit_fill(L, R.o, R.mean ? NAN : 0.0f, trnc_op_name(n->op));
  }
  /* coalesce kept dims (X and O contiguous across) and reduced dims (X) */
  for (int i = 0; i < nk; i++) {
    if (R.nk && R.kx[R.nk - 1] == xk_x[i] * xk_size[i] && R.ko[R.nk - 1] == xk_o[i] * xk_size[i]) {
      R.ksize[R.nk - 1] *= xk_size[i];
      R.kx[R.nk - 1] = xk_x[i];
      R.ko[R.nk - 1] = xk_o[i];
      continue;
    }
    R.ksize[R.nk] = xk_size[i];
    R.kx[R.nk] = xk_x[i];
    R.ko[R.nk] = xk_o[i];
    R.nk++;
  }
  for (int i = 0; i < nr; i++) {
    if (R.nr && R.rx[R.nr - 1] == xr_x[i] * xr_size[i]) {
      R.rsize[R.nr - 1] *= xr_size[i];
      R.rx[R.nr - 1] = xr_x[i];
      continue;
    }
    R.rsize[R.nr] = xr_size[i];
    R.rx[R.nr] = xr_x[i];
    R.nr++;
  }
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  R.max_free = 4096;
  if (trnc_type_numel(xt) < R.max_free) R.max_free = (trnc_type_numel(xt) + 15) & ~(int64_t)15;
  if ((st = lw_pool_init(L, &R.in_pool, TRNC_NC_MEM_SBUF, R.max_free * 4, 3)) ||
      (st = lw_pool_init(L, &R.part_pool, TRNC_NC_MEM_SBUF, 64, 2)) ||
      (st = lw_pool_init(L, &R.acc_pool, TRNC_NC_MEM_SBUF, 64, 2)) ||
      (st = lw_pool_init(L, &R.out_pool, TRNC_NC_MEM_SBUF, 64, 2)) ||
      (st = lw_pool_init(L, &R.ps_pool, TRNC_NC_MEM_PSUM, 512, 2)))
    return st;
  L->ops_per_engine[1]++;
  int64_t P = L->target->partitions;
  if (R.nk > 0) {
    int pd = 0;
    for (int i = 1; i < R.nk; i++)
      if (R.ksize[i] > R.ksize[pd]) pd = i;
    int64_t idx[RMAX] = {0};
    for (;;) {
      int64_t xoff = R.x->t.offset, ooff = R.o->t.offset;
      for (int i = 0; i < R.nk; i++)
        if (i != pd) {
          xoff += idx[i] * R.kx[i];
          ooff += idx[i] * R.ko[i];
        }
      for (int64_t p0 = 0; p0 < R.ksize[pd]; p0 += P) {
        int np = (int)(R.ksize[pd] - p0 < P ? R.ksize[pd] - p0 : P);
        lw_tile *acc = lw_pool_next(&R.acc_pool);
        if ((st = reduce_rows(L, &R, xoff + p0 * R.kx[pd], R.kx[pd], np, -1, acc))) return st;
        if ((st = store_acc(L, &R, acc, np, ooff + p0 * R.ko[pd], R.ko[pd]))) return st;
      }
      int i = 0;
      for (; i < R.nk; i++) {
        if (i == pd) continue;
        if (++idx[i] < R.ksize[i]) break;
        idx[i] = 0;
      }
      if (i >= R.nk) break;
    }
    return TRNC_OK;
  }
  /* full reduction: a reduced dim on partitions, then across partitions */
  if (R.nr == 0) {
    R.nr = 1;
    R.rsize[0] = 1;
    R.rx[0] = 1;
  }
  if (R.nr == 1 && R.rsize[0] >= 2 * P) {
    /* split the single dim into [rows <= 128, cols] + tail handled as rows */
    int64_t n0 = R.rsize[0], cols = (n0 + P - 1) / P;
    if (n0 % cols == 0) {
      R.nr = 2;
      R.rsize[0] = n0 / cols;
      R.rsize[1] = cols;
      R.rx[1] = R.rx[0];
      R.rx[0] = R.rx[1] * cols;
    }
  }
  int pd = 0;
  for (int i = 1; i < R.nr; i++)
    if (R.rsize[i] > R.rsize[pd]) pd = i;
  if (R.nr == 1) pd = -1; /* single dim: keep it on the free axis */
  /* the running total lives across the whole loop: its own tile, never a
   * pool tile (the acc pool rotates under it once psize > 128) */
  lw_tile *total = lw_sbuf(L, 64);
  if (!total) return L->status;
  bool first = true;
  int64_t psize = pd >= 0 ? R.rsize[pd] : 1;
  for (int64_t p0 = 0; p0 < psize; p0 += P) {
    int np = (int)(psize - p0 < P ? psize - p0 : P);
    lw_tile *acc = lw_pool_next(&R.acc_pool);
    int64_t xoff = R.x->t.offset + (pd >= 0 ? p0 * R.rx[pd] : 0);
    if ((st = reduce_rows(L, &R, xoff, pd >= 0 ? R.rx[pd] : 0, np, pd, acc))) return st;
    lw_tile *col = acc;
    if (np > 1) {
      /* [np, 1] -> PSUM [1, np] on TensorE, then reduce along free */
      lw_tile *ps = lw_pool_next(&R.ps_pool);
      int64_t one = 1, npl = np;
      trnc_nc_instr tr;
      memset(&tr, 0, sizeof tr);
      tr.op = TRNC_NC_OP_TRANSPOSE;
      tr.engine = TRNC_NC_TENSOR;
      tr.src[0] = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
      tr.dst = lw_tile_ap(ps, 1, 0, TRNC_F32, 1, &npl);
      if ((st = instr(L, &tr, acc, NULL, ps))) return st;
      col = lw_pool_next(&R.part_pool);
      trnc_nc_instr rd;
      memset(&rd, 0, sizeof rd);
      rd.op = TRNC_NC_OP_TENSOR_REDUCE;
      rd.engine = TRNC_NC_VECTOR;
      rd.alu0 = (uint8_t)R.alu;
      rd.mode = 1;
      rd.src[0] = tr.dst;
      rd.dst = lw_tile_ap(col, 1, 0, TRNC_F32, 1, &one);
      if ((st = instr(L, &rd, ps, NULL, col))) return st;
    }
    if ((st = fold(L, &R, total, col, 1, first))) return st;
    first = false;
  }
  return store_acc(L, &R, total, 1, R.o->t.offset, 0);
}
