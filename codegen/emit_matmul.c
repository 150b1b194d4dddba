/*
 * emit_matmul.c — mm, bmm, addmm, baddbmm on TensorE.
 *
 * out[M,N] = A[M,K] . B[K,N] is tiled as 128 (K, on partitions) x 128
 * (stationary free) by up to 512 (moving free: one 2 KiB PSUM bank of fp32)
 * with K accumulated in PSUM. Orientation:
 *  - plain:      stationary = A^T tile [K, M<=128], moving = B tile [K, N<=512],
 *                PSUM [M, N];
 *  - transposed: stationary = B tile [K, N<=128], moving = A^T tile [K, M<=512],
 *                PSUM [N, M] — chosen when addmm/baddbmm has a bias along N,
 *                which then is a per-partition bias that ScalarE adds while it
 *                evacuates PSUM (the epilogue costs no extra instruction).
 * Operand tiles whose wanted free dim is strided but whose partition dim is
 * contiguous (A^T of a row-major A, or B = W^T of a Linear weight) are
 * loaded with a DMA transpose instead of element-wise strided reads.
 * An activation that is the matmul's only consumer (relu, gelu, silu, ...)
 * is fused into the same PSUM evacuation (the epilogue).
 *
 * Schedule (the blocking of the public NKI matmul tutorials: operand reuse
 * across a block of tiles, DMAs of 2-4 KiB per partition or more):
 *  - rows go in blocks of up to 4 tiles of 128 whose stationary tiles for
 *    every K step stay resident in SBUF, double-buffered: the next block's
 *    are loaded (prefetched) while this block computes;
 *  - per 512-wide column block, the 4 PSUM accumulators advance K step by
 *    K step, so each moving tile feeds 4 matmuls; moving tiles of 4 K steps
 *    (bf16; 2 for fp32) come in one DMA, 12 in flight over 12 of the 16
 *    DMA queues (the other 4 carry stationary tiles, bias and stores);
 *  - PSUM holds two blocks of accumulators, so the evacuation of one
 *    column block overlaps the next one's accumulation;
 *  - the block's full output tiles are written by one multi-dimensional
 *    DMA access pattern ([row, tile, column]) in partition quarters;
 *  - the kernel's first moving tiles are split over 4 queues and its last
 *    stores go to the idle moving queues, so TensorE starts and the
 *    program ends within a few microseconds of each other.
 * The moving operand is read rows/512 times, the stationary one once; for
 * 4096x8192 @ 8192x8192 bf16 the cost model (cost.c) estimates 99 % of the
 * TensorE peak on trn2.
 */
#include <string.h>

#include "codegen/lower.h"
#include "ir/shape.h"

typedef struct mm {
  const lw_tv *a, *b, *bias, *out;
  trnc_dtype in_dt;     /* matmul input dtype (tile dtype) */
  int64_t M, N, K, batch;
  double alpha, beta;
  bool transposed;
  int act;              /* fused epilogue activation (TRNC_NC_ACT_IDENTITY: none) */
  int kstep;            /* K steps per moving-tile DMA */
  int64_t chunks;       /* moving-tile loads emitted so far */
  int nq, nmq, next_q[2]; /* DMA queues: [0, nmq) moving tiles, [nmq, nq) the rest */
  lw_pool st_pool, mv_pool, ps_pool, out_pool, f_pool, bias_pool;
  lw_tile *zero;        /* K == 0: an SBUF tile of zeros stands for A.B */
} mm;

/* Row tiles of 128 per block (PSUM: two blocks of accumulators in flight,
 * one bank each, in the 8 banks of a partition). */
#define MM_MAX_BLOCK 4
/* Moving tiles in flight: a [128, 4 x 512] bf16 DMA takes ~23 us on one
 * queue and feeds 4 x 4 matmuls of ~0.2 us, so ~8 queues must stream at
 * once to keep TensorE busy. */
#define MM_MOVING_BUFS 12
/* Bytes per partition of one moving-tile DMA (NKI performance guide: move
 * at least 2-4 KiB per partition per DMA to amortise its fixed cost). */
#define MM_MOVING_BYTES 4096


/* Strides of a batched 2-D view: the last two dims (rows, cols). */
static void dims2(const lw_tv *t, int64_t *sr, int64_t *sc) {
  int r = t->t.rank;
  *sc = r >= 1 ? t->t.stride[r - 1] : 1;
  *sr = r >= 2 ? t->t.stride[r - 2] : 0;
}

/* Element offset of batch index bi in a [batch dims..., rows, cols] view: bi
 * unravelled row-major over the leading dims, each with its own stride, so
 * attention's [B, H, T, D] heads are read and written in place (lower.c
 * passes such views for bmm's [B*H, T, D] operands and results). */
static int64_t batch_off(const lw_tv *t, int64_t bi) {
  int64_t off = 0;
  for (int d = t->t.rank - 3; d >= 0; d--) {
    int64_t n = t->t.shape[d] > 0 ? t->t.shape[d] : 1;
    if (n > 1) off += (bi % n) * t->t.stride[d];
    bi /= n;
  }
  return off;
}

/* The next DMA queue for moving tiles (role 0) or for stationary tiles,
 * bias and stores (role 1): each role cycles over its own queues, so a
 * stationary prefetch or a store never delays a moving tile behind it on an
 * in-order queue. */
static int mm_queue(mm *m, int role) {
  int lo = role ? m->nmq : 0, n = role ? m->nq - m->nmq : m->nmq;
  if (n <= 0) { /* a single queue does everything */
    lo = 0;
    n = m->nq;
  }
  return TRNC_NC_DMA0 + lo + m->next_q[role]++ % n;
}

/* Loads HBM region [pc rows along pstride] x [fc along fstride] into a tile
 * as [pc partitions, fc free] at byte offset toff. A large load is split by
 * partition ranges over up to `maxparts` DMA queues that run in parallel
 * (one queue moves ~23 GB/s). */
static trnc_status load2d(lw *L, mm *m, int role, lw_tile *t, int64_t toff, trnc_dtype tile_dt, const lw_tv *tv,
                          int64_t off, int64_t pstride, int64_t pc, int64_t fstride, int64_t fc, int maxparts) {
  bool transpose = fstride != 1 && pstride == 1 && fc > 1 && pc > 1 && tile_dt == tv->t.dtype;
  int64_t bytes = pc * fc * lw_esize(tile_dt);
  int parts = bytes >= 32768 ? 4 : bytes >= 8192 ? 2 : 1;
  if (parts > maxparts) parts = maxparts;
  if (parts > pc) parts = (int)pc;
  int64_t per = (pc + parts - 1) / parts;
  trnc_nc_instr ins[4];
  int n = 0;
  for (int64_t p0 = 0; p0 < pc; p0 += per, n++) {
    int64_t np = pc - p0 < per ? pc - p0 : per;
    trnc_nc_instr *in = &ins[n];
    memset(in, 0, sizeof *in);
    in->op = TRNC_NC_OP_DMA_COPY;
    in->engine = (uint8_t)mm_queue(m, role);
    in->dst = lw_tile_ap(t, (int)np, toff, tile_dt, 1, &fc);
    in->dst.start_partition = (int32_t)p0;
    trnc_nc_ap *s = &in->src[0];
    s->mem = TRNC_NC_MEM_HBM;
    s->dtype = (uint8_t)tv->t.dtype;
    s->buffer = tv->buffer;
    s->offset = (off + p0 * pstride) * lw_esize(tv->t.dtype);
    s->nfree = 1;
    if (transpose) {
      /* read contiguous rows of the transpose and flip them on the way */
      in->mode = TRNC_NC_DMA_TRANSPOSE;
      s->partitions = (int32_t)fc;
      s->partition_stride = fstride;
      s->free[0].stride = 1;
      s->free[0].count = np;
    } else {
      in->mode = TRNC_NC_DMA_DIRECT;
      s->partitions = (int32_t)np;
      s->partition_stride = pstride;
      s->free[0].stride = fstride;
      s->free[0].count = fc;
    }
  }
  return lw_emit_split(L, ins, n, NULL, 0, t);
}

/* Element offset and strides of operand `which` (0 stationary, 1 moving)
 * for K step k0: the tile is [K partitions along *ps, free along *fs]. */
static int64_t operand_at(const mm *m, int which, int64_t bi, int64_t f0, int64_t k0, int64_t *ps, int64_t *fs) {
  int64_t asr, asc, bsr, bsc;
  dims2(m->a, &asr, &asc);
  dims2(m->b, &bsr, &bsc);
  /* plain: stationary A^T [k, rows = M], moving B [k, cols = N];
   * transposed: stationary B [k, rows = N], moving A^T [k, cols = M] */
  bool a_side = (which == 0) != m->transposed;
  if (a_side) {
    *ps = asc;
    *fs = asr;
    return m->a->t.offset + batch_off(m->a, bi) + f0 * asr + k0 * asc;
  }
  *ps = bsr;
  *fs = bsc;
  return m->b->t.offset + batch_off(m->b, bi) + k0 * bsr + f0 * bsc;
}

/* Loads the moving tiles of K steps [k0, k0 + ks*128) (ks whole steps, or
 * one step of kt rows) and columns [c0, c0 + ct) into mvt as [k, step, ct],
 * all steps with one DMA (a one-step tile may be a DMA transpose). */
static trnc_status load_moving(lw *L, mm *m, lw_tile *mvt, int64_t bi, int64_t k0, int64_t kt, int ks,
                               int64_t c0, int64_t ct) {
  int64_t ps, fs, off = operand_at(m, 1, bi, c0, k0, &ps, &fs);
  const lw_tv *tv = m->transposed ? m->a : m->b;
  /* the first tiles of the kernel in partition quarters over 4 queues, so
   * TensorE starts after a quarter of a full DMA */
  int parts = m->chunks < MM_MOVING_BUFS && kt >= 4 ? 4 : 1;
  m->chunks++;
  if (ks == 1) return load2d(L, m, 0, mvt, 0, m->in_dt, tv, off, ps, kt, fs, ct, parts);
  trnc_nc_instr ins[4];
  int64_t per = kt / parts, counts[2] = {ks, ct};
  for (int q = 0; q < parts; q++) {
    trnc_nc_instr *in = &ins[q];
    int64_t np = q == parts - 1 ? kt - q * per : per;
    *in = lw_instr(TRNC_NC_OP_DMA_COPY, mm_queue(m, 0));
    in->mode = TRNC_NC_DMA_DIRECT;
    in->dst = lw_tile_ap(mvt, (int)np, 0, m->in_dt, 2, counts);
    in->dst.start_partition = (int32_t)(q * per);
    trnc_nc_ap *s = &in->src[0];
    s->mem = TRNC_NC_MEM_HBM;
    s->dtype = (uint8_t)tv->t.dtype;
    s->buffer = tv->buffer;
    s->offset = (off + q * per * ps) * lw_esize(tv->t.dtype);
    s->partitions = (int32_t)np;
    s->partition_stride = ps;
    s->nfree = 2;
    s->free[0].stride = 128 * ps;
    s->free[0].count = ks;
    s->free[1].stride = fs;
    s->free[1].count = ct;
  }
  return lw_emit_split(L, ins, parts, NULL, 0, mvt);
}

/* bt[rt, n] *= beta (on VectorE), unless beta is 1. */
static trnc_status scale_by_beta(lw *L, const mm *m, lw_tile *bt, int64_t rt, int64_t n) {
  if (m->beta == 1.0) return TRNC_OK;
  trnc_nc_instr sc = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  sc.alu0 = TRNC_NC_ALU_MUL;
  sc.imm[0] = (float)m->beta;
  sc.dst = sc.src[0] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &n);
  return lw_emit(L, &sc, &bt, 1, &bt, 1);
}

/* Epilogue of one output tile [rt, ct] at (r0, c0): PSUM -> SBUF with alpha,
 * bias and the fused activation, into o at byte offset ooff. */
static trnc_status epilogue(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int64_t c0, int64_t ct, lw_tile *ps,
                            lw_tile *o, int64_t ooff) {
  trnc_dtype odt = m->out->t.dtype;
  trnc_status st;
  trnc_nc_instr ev = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ev.act = TRNC_NC_ACT_IDENTITY;
  ev.imm[0] = (float)m->alpha;
  ev.src[0] = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &ct);
  lw_tile *bt = NULL;
  int64_t bsr_b = 0, bsc_b = 0;
  if (m->bias && m->bias->buffer >= 0) {
    dims2(m->bias, &bsr_b, &bsc_b);
    if (m->bias->t.rank >= 1 && m->bias->t.shape[m->bias->t.rank - 1] == 1) bsc_b = 0;
    if (m->bias->t.rank >= 2 && m->bias->t.shape[m->bias->t.rank - 2] == 1) bsr_b = 0;
    bt = lw_pool_next(&m->bias_pool);
  }
  bool fused_bias = bt && m->transposed;
  lw_tile *rd[2] = {ps, bt};
  if (fused_bias) {
    /* per-partition bias (bias varies along N = rows here), scaled by beta */
    int64_t one = 1;
    st = load2d(L, m, 1, bt, 0, TRNC_F32, m->bias, m->bias->t.offset + batch_off(m->bias, bi) + r0 * bsc_b, bsc_b, rt, 0, 1, 4);
    if (st || (st = scale_by_beta(L, m, bt, rt, one))) return st;
    ev.src[1] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &one);
    ev.act = (uint8_t)m->act;
    ev.dst = lw_tile_ap(o, (int)rt, ooff, odt, 1, &ct);
    return lw_emit(L, &ev, rd, 2, &o, 1);
  }
  if (!bt) {
    ev.act = (uint8_t)m->act;
    ev.dst = lw_tile_ap(o, (int)rt, ooff, odt, 1, &ct);
    return lw_emit(L, &ev, &ps, 1, &o, 1);
  }
  /* bias broadcast over the tile: evacuate to fp32, then add beta*bias */
  lw_tile *f = lw_pool_next(&m->f_pool);
  ev.dst = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
  if ((st = lw_emit(L, &ev, &ps, 1, &f, 1))) return st;
  st = load2d(L, m, 1, bt, 0, TRNC_F32, m->bias, m->bias->t.offset + batch_off(m->bias, bi) + r0 * bsr_b + c0 * bsc_b, bsr_b, rt,
              bsc_b, ct, 4);
  if (st || (st = scale_by_beta(L, m, bt, rt, ct))) return st;
  bool act = m->act != TRNC_NC_ACT_IDENTITY;
  trnc_nc_instr add = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
  add.alu0 = TRNC_NC_ALU_ADD;
  add.dst = act ? lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct) : lw_tile_ap(o, (int)rt, ooff, odt, 1, &ct);
  add.src[0] = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
  add.src[1] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &ct);
  lw_tile *r2[2] = {f, bt};
  if ((st = lw_emit(L, &add, r2, 2, act ? &f : &o, 1))) return st;
  if (!act) return TRNC_OK;
  trnc_nc_instr ac = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ac.act = (uint8_t)m->act;
  ac.imm[0] = 1;
  ac.src[0] = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
  ac.dst = lw_tile_ap(o, (int)rt, ooff, odt, 1, &ct);
  return lw_emit(L, &ac, &f, 1, &o, 1);
}

/* Stores nt output tiles [rt, ct] of rows r0 + t*128 (t < nt, each rt rows;
 * nt > 1 only with rt = 128) from o (tile t at free offset t*ct) with one
 * DMA (or `parts` DMAs of partition ranges, on the queues of `role`): out
 * rows along partitions, [tile, column] along the free axis. */
static trnc_status store_part(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int nt, int64_t c0, int64_t ct,
                              lw_tile *o, int64_t ooff, int64_t sp, int role);

static trnc_status store_tiles(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int nt, int64_t c0, int64_t ct,
                               lw_tile *o, int64_t ooff, int parts, int role) {
  /* parts of at least 8 KiB: below that a part's fixed DMA cost outweighs
   * what it saves (attention's [37, 37] score tiles) */
  int64_t bytes = rt * nt * ct * lw_esize(m->out->t.dtype);
  if (parts > bytes / 8192) parts = (int)(bytes / 8192);
  if (parts < 2 || m->transposed || rt < parts) return store_part(L, m, bi, r0, rt, nt, c0, ct, o, ooff, 0, role);
  /* partition ranges over `parts` queues, so a store ends soon after its
   * evacuation */
  int64_t per = rt / parts;
  for (int q = 0; q < parts; q++) {
    trnc_status st = store_part(L, m, bi, r0, q == parts - 1 ? rt - q * per : per, nt, c0, ct, o, ooff, q * per, role);
    if (st) return st;
  }
  return TRNC_OK;
}

/* One DMA of store_tiles: partitions [sp, sp + rt) of o (rows r0 + sp..). */
static trnc_status store_part(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int nt, int64_t c0, int64_t ct,
                              lw_tile *o, int64_t ooff, int64_t sp, int role) {
  r0 += sp;
  trnc_dtype odt = m->out->t.dtype;
  int64_t osr, osc;
  dims2(m->out, &osr, &osc);
  trnc_nc_instr sd = lw_instr(TRNC_NC_OP_DMA_COPY, mm_queue(m, role));
  int64_t counts[2] = {nt, ct};
  sd.src[0] = lw_tile_ap(o, (int)rt, ooff, odt, nt > 1 ? 2 : 1, nt > 1 ? counts : &ct);
  sd.src[0].start_partition = (int32_t)sp;
  trnc_nc_ap *d = &sd.dst;
  d->mem = TRNC_NC_MEM_HBM;
  d->dtype = (uint8_t)odt;
  d->buffer = m->out->buffer;
  d->nfree = 1;
  d->partitions = (int32_t)rt;
  if (!m->transposed) {
    d->offset = (m->out->t.offset + batch_off(m->out, bi) + r0 * osr + c0 * osc) * lw_esize(odt);
    d->partition_stride = osr;
    if (nt > 1) {
      d->nfree = 2;
      d->free[0].stride = 128 * osr;
      d->free[0].count = nt;
    }
  } else if (osc == 1 && rt > 1 && ct > 1) {
    /* The tile is out^T [n, m]; out rows are contiguous along n, so write
     * them with a DMA transpose: ct rows of rt contiguous elements instead
     * of rt*ct single-element runs. */
    sd.mode = TRNC_NC_DMA_TRANSPOSE;
    d->offset = (m->out->t.offset + batch_off(m->out, bi) + c0 * osr + r0 * osc) * lw_esize(odt);
    d->partitions = (int32_t)ct;
    d->partition_stride = osr;
    d->free[0].stride = 1;
    d->free[0].count = rt;
    return lw_emit(L, &sd, &o, 1, NULL, 0);
  } else {
    d->offset = (m->out->t.offset + batch_off(m->out, bi) + c0 * osr + r0 * osc) * lw_esize(odt);
    d->partition_stride = osc;
    d->free[0].stride = osr;
  }
  d->free[d->nfree - 1].stride = m->transposed ? osr : osc;
  d->free[d->nfree - 1].count = ct;
  return lw_emit(L, &sd, &o, 1, NULL, 0);
}

/* Resident stationary tiles loaded during a column block, each one K step
 * before it is needed, so the loads interleave with the moving tiles on the
 * DMA queues: a row block's own tiles (in its first column block) or the
 * next row block's (prefetched while this one computes). */
typedef struct mm_res_load {
  lw_tile *res; /* NULL: nothing to load */
  int64_t bi, r0, brows;
} mm_res_load;

static trnc_status load_resident(lw *L, mm *m, const mm_res_load *ld, int64_t k) {
  if (!ld->res) return TRNC_OK;
  int64_t kt = m->K - 128 * k < 128 ? m->K - 128 * k : 128, ps, fs;
  int64_t off = operand_at(m, 0, ld->bi, ld->r0, 128 * k, &ps, &fs);
  return load2d(L, m, 1, &ld->res[k], 0, m->in_dt, m->transposed ? m->b : m->a, off, ps, kt, fs, ld->brows, 2);
}

/* One column block [c0, c0 + ct) of a row block of mt row tiles from r0:
 * the mt PSUM accumulators advance K step by K step, so each moving tile
 * (loaded ks steps per DMA) is used mt times in a row against the resident
 * stationary tiles res[k] ([k, mt*128] each; NULL: a pool tile loaded per
 * step). Then the epilogue of each tile and one store of the full tiles
 * (the kernel's last block: one per tile, over more queues, so the program
 * ends soon after TensorE). */
static trnc_status mm_block(lw *L, mm *m, int64_t bi, int64_t r0, int mt, int64_t c0, int64_t ct, lw_tile *res,
                            const mm_res_load ld[2], bool last) {
  int64_t rows = m->transposed ? m->N : m->M;
  lw_tile *ps[MM_MAX_BLOCK];
  trnc_status st;
  for (int t = 0; t < mt; t++) ps[t] = m->zero ? m->zero : lw_pool_next(&m->ps_pool);
  int64_t nk = (m->K + 127) / 128;
  for (int64_t k = 0; k < nk;) {
    int64_t kt = m->K - 128 * k < 128 ? m->K - 128 * k : 128;
    int ks = 1;
    if (kt == 128)
      while (ks < m->kstep && k + ks < nk && m->K - 128 * (k + ks) >= 128) ks++;
    for (int s = 0; s < ks; s++)
      if ((st = load_resident(L, m, &ld[0], k + s))) return st;
    lw_tile *mvt = lw_pool_next(&m->mv_pool);
    if ((st = load_moving(L, m, mvt, bi, 128 * k, kt, ks, c0, ct))) return st;
    for (int s = 0; s < ks; s++)
      if ((st = load_resident(L, m, &ld[1], k + s))) return st;
    for (int s = 0; s < ks; s++, k++) {
      lw_tile *stt = res ? &res[k] : NULL;
      for (int t = 0; t < mt; t++) {
        int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
        if (!res) {
          int64_t sps, sfs, soff = operand_at(m, 0, bi, r0 + 128 * t, 128 * k, &sps, &sfs);
          stt = lw_pool_next(&m->st_pool);
          if ((st = load2d(L, m, 1, stt, 0, m->in_dt, m->transposed ? m->b : m->a, soff, sps, kt, sfs, rt, 4)))
            return st;
        }
        trnc_nc_instr in = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
        in.mode = k > 0;
        in.dst = lw_tile_ap(ps[t], (int)rt, 0, TRNC_F32, 1, &ct);
        in.src[0] = lw_tile_ap(stt, (int)kt, res ? 128 * t * lw_esize(m->in_dt) : 0, m->in_dt, 1, &rt);
        in.src[1] = lw_tile_ap(mvt, (int)kt, s * ct * lw_esize(m->in_dt), m->in_dt, 1, &ct);
        lw_tile *rd[2] = {stt, mvt};
        if ((st = lw_emit(L, &in, rd, 2, &ps[t], 1))) return st;
      }
    }
  }
  lw_tile *o = lw_pool_next(&m->out_pool);
  int64_t osz = lw_esize(m->out->t.dtype);
  int full = 0;
  for (int t = 0; t < mt; t++) {
    int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
    if ((st = epilogue(L, m, bi, r0 + 128 * t, rt, c0, ct, ps[t], o, t * ct * osz))) return st;
    if (rt == 128 && !m->transposed && !last) full = t + 1;
  }
  /* the full tiles with one store (in partition quarters), the rest one by
   * one; the kernel's last stores go to the moving tiles' queues, idle by
   * then */
  if (full && (st = store_tiles(L, m, bi, r0, 128, full, c0, ct, o, 0, 4, 1))) return st;
  for (int t = full; t < mt; t++) {
    int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
    if ((st = store_tiles(L, m, bi, r0 + 128 * t, rt, 1, c0, ct, o, t * ct * osz, 4, last ? 0 : 1))) return st;
  }
  return TRNC_OK;
}

trnc_status lw_emit_matmul(lw *L, const trnc_node *n, const lw_epilogue *ep) {
  const trnc_graph *g = L->g;
  bool has_bias = n->op == TRNC_OP_ADDMM || n->op == TRNC_OP_BADDBMM;
  int ai = has_bias ? 1 : 0;
  mm m;
  memset(&m, 0, sizeof m);
  m.a = &L->tv[n->args[ai].u.ref];
  m.b = &L->tv[n->args[ai + 1].u.ref];
  m.act = ep->act;
  m.bias = has_bias ? &L->tv[n->args[0].u.ref] : NULL;
  m.alpha = (has_bias ? trnc_arg_number(trnc_node_arg(n, 4), 1) : 1) * ep->scale;
  m.beta = (has_bias ? trnc_arg_number(trnc_node_arg(n, 3), 1) : 1) * ep->scale;
  const trnc_type *at = &g->values[n->args[ai].u.ref].type, *bt = &g->values[n->args[ai + 1].u.ref].type;
  m.M = at->shape[at->rank - 2];
  m.K = at->shape[at->rank - 1];
  m.N = bt->shape[bt->rank - 1];
  m.batch = at->rank == 3 ? at->shape[0] : 1;
  /* the result as [batch,] M x N over the epilogue value's buffer (a fused
   * reshape view keeps the same contiguous bytes) */
  lw_tv outv = L->tv[ep->out];
  const trnc_type *rt0 = &g->values[n->outs[0]].type;
  if (ep->out != n->outs[0] && (outv.t.rank != rt0->rank ||
                                memcmp(outv.t.shape, rt0->shape, sizeof(int64_t) * rt0->rank))) {
    int64_t off = outv.t.offset;
    outv.t = *rt0;
    outv.t.dtype = L->tv[ep->out].t.dtype;
    trnc_type_set_contiguous(&outv.t);
    outv.t.offset = off;
  }
  m.out = &outv;
  if (m.out->buffer < 0 || m.M == 0 || m.N == 0 || m.batch == 0) return TRNC_OK;
  if (m.K > 0 && (m.a->buffer < 0 || m.b->buffer < 0))
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "matmul operand is not materialized");
  trnc_dtype dt = m.a->t.dtype;
  if (L->opt.autocast_bf16 && dt == TRNC_F32) dt = TRNC_BF16;
  m.in_dt = dt;
  if (m.b->t.dtype != m.a->t.dtype)
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "matmul operands of different dtypes");
  /* bias along N only (1-D [N] or [1, N]) -> transposed orientation */
  if (m.bias && m.bias->buffer >= 0) {
    const trnc_type *bt2 = &m.bias->t;
    bool along_n = bt2->rank >= 1 && bt2->shape[bt2->rank - 1] == m.N &&
                   (bt2->rank < 2 || bt2->shape[bt2->rank - 2] == 1);
    m.transposed = along_n && m.batch == 1;
  }
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  int64_t isz = lw_esize(dt);
  int64_t rows = m.transposed ? m.N : m.M, cols = m.transposed ? m.M : m.N;
  int64_t ctile = cols < 512 ? cols : 512;
  int64_t nk = (m.K + 127) / 128, rtiles = (rows + 127) / 128;
  /* Blocking: a row block of mt row tiles keeps its stationary tiles for
   * every K step resident in SBUF (double-buffered across row blocks, so
   * the next block loads while this one computes); every moving tile then
   * feeds mt matmuls, so the moving operand is read rows/(128 mt) times
   * instead of rows/128. The largest mt <= 4 whose resident tiles fit in
   * the SBUF left after the other pools; without room even for mt = 1,
   * stationary tiles stream from a pool per K step. */
  int64_t other = 96 * 1024; /* moving, output, bias and evacuation pools (below) */
  int64_t budget = L->target->sbuf_bytes_per_partition - other;
  int64_t blocks_per = m.batch * rtiles;
  int mt = MM_MAX_BLOCK;
  while (mt > 1 && (mt > rtiles || (blocks_per > mt ? 2 : 1) * nk * 128 * mt * isz > budget)) mt /= 2;
  bool resident = m.K > 0 && (blocks_per > mt ? 2 : 1) * nk * 128 * mt * isz <= budget;
  m.nq = L->target->dma_queues < TRNC_NC_NUM_DMA_QUEUES ? L->target->dma_queues : TRNC_NC_NUM_DMA_QUEUES;
  m.nmq = m.nq > 1 ? m.nq - (m.nq + 3) / 4 : m.nq; /* 12 of 16 for moving tiles */
  int64_t mps, mfs;
  operand_at(&m, 1, 0, 0, 0, &mps, &mfs);
  const lw_tv *mtv = m.transposed ? m.a : m.b;
  bool mv_transpose = mfs != 1 && mps == 1 && mtv->t.dtype == m.in_dt;
  /* several K steps per moving DMA, unless each step is a DMA transpose */
  m.kstep = mv_transpose ? 1 : (int)(MM_MOVING_BYTES / (ctile * isz));
  if (m.kstep < 1) m.kstep = 1;
  if ((st = lw_pool_init(L, &m.st_pool, TRNC_NC_MEM_SBUF, 128 * isz, resident ? 1 : 4)) ||
      (st = lw_pool_init(L, &m.mv_pool, TRNC_NC_MEM_SBUF, m.kstep * ctile * isz, MM_MOVING_BUFS)) ||
      (st = lw_pool_init(L, &m.ps_pool, TRNC_NC_MEM_PSUM, ctile * 4, 2 * mt)) ||
      (st = lw_pool_init(L, &m.out_pool, TRNC_NC_MEM_SBUF, mt * ctile * 4, 2)) ||
      (st = lw_pool_init(L, &m.f_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)) ||
      (st = lw_pool_init(L, &m.bias_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)))
    return st;
  if (m.K == 0) {
    /* empty contraction: A.B is all zeros (eager: zeros, or beta*bias for
     * addmm/baddbmm); the epilogue reads a zero tile instead of PSUM, so
     * bias, scale and a fused activation apply exactly as usual */
    int64_t zp = rows < 128 ? rows : 128;
    if (!(m.zero = lw_sbuf(L, ctile * 4))) return L->status;
    trnc_nc_instr z = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    z.dst = lw_tile_ap(m.zero, (int)zp, 0, TRNC_F32, 1, &ctile);
    if ((st = lw_emit(L, &z, NULL, 0, &m.zero, 1))) return st;
  }
  lw_pool res_pool[2];
  int nres = blocks_per > mt ? 2 : 1;
  if (resident)
    for (int b = 0; b < nres; b++)
      if ((st = lw_pool_init(L, &res_pool[b], TRNC_NC_MEM_SBUF, 128 * mt * isz, (int)nk))) return st;
  /* row blocks in order; block b uses resident set b % nres, loaded by its
   * first column block (block 0) or prefetched by block b - 1 */
  int64_t nblocks = 0, per_batch = (rows + 128 * mt - 1) / (128 * mt);
  nblocks = m.batch * per_batch;
  int64_t ncols = (cols + ctile - 1) / ctile;
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t bi = b / per_batch, r0 = (b % per_batch) * 128 * mt;
    int bt = (int)((rows - r0 + 127) / 128 < mt ? (rows - r0 + 127) / 128 : mt);
    lw_tile *res = resident ? res_pool[b % nres].tiles : NULL;
    for (int64_t cb = 0; cb < ncols; cb++) {
      int64_t c0 = cb * ctile;
      mm_res_load ld[2] = {{NULL, 0, 0, 0}, {NULL, 0, 0, 0}};
      if (resident && b == 0 && cb == 0)
        ld[0] = (mm_res_load){res, bi, r0, rows - r0 < 128 * bt ? rows - r0 : 128 * bt};
      if (resident && b + 1 < nblocks && cb == (ncols > 1 ? 1 : 0)) {
        int64_t nbi = (b + 1) / per_batch, nr0 = ((b + 1) % per_batch) * 128 * mt;
        ld[1] = (mm_res_load){res_pool[(b + 1) % nres].tiles, nbi, nr0,
                              rows - nr0 < 128 * mt ? rows - nr0 : 128 * mt};
      }
      bool last = b == nblocks - 1 && cb == ncols - 1;
      if ((st = mm_block(L, &m, bi, r0, bt, c0, cols - c0 < ctile ? cols - c0 : ctile, res, ld, last))) return st;
    }
  }
  return TRNC_OK;
}
