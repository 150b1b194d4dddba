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
 * Stationary and moving tiles come from 2-deep pools, so loads of the next
 * K step overlap the current matmul.
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
  lw_pool st_pool, mv_pool, ps_pool, out_pool, bias_pool;
  lw_tile *zero;        /* K == 0: an SBUF tile of zeros stands for A.B */
} mm;


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

/* Loads HBM region [pc rows along pstride] x [fc along fstride] into a tile
 * as [pc partitions, fc free]. A large load is split by partition ranges
 * over up to 4 DMA queues that run in parallel (one queue moves ~23 GB/s). */
static trnc_status load2d(lw *L, lw_tile *t, trnc_dtype tile_dt, const lw_tv *tv, int64_t off,
                          int64_t pstride, int64_t pc, int64_t fstride, int64_t fc) {
  bool transpose = fstride != 1 && pstride == 1 && fc > 1 && pc > 1 && tile_dt == tv->t.dtype;
  int64_t bytes = pc * fc * lw_esize(tile_dt);
  int parts = bytes >= 32768 ? 4 : bytes >= 8192 ? 2 : 1;
  if (parts > pc) parts = (int)pc;
  int64_t per = (pc + parts - 1) / parts;
  trnc_nc_instr ins[4];
  int n = 0;
  for (int64_t p0 = 0; p0 < pc; p0 += per, n++) {
    int64_t np = pc - p0 < per ? pc - p0 : per;
    trnc_nc_instr *in = &ins[n];
    memset(in, 0, sizeof *in);
    in->op = TRNC_NC_OP_DMA_COPY;
    in->engine = (uint8_t)lw_dma_queue(L);
    in->dst = lw_tile_ap(t, (int)np, 0, tile_dt, 1, &fc);
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

/* Loads the stationary tile for K step k0 of row block r0 into stt. */
static trnc_status load_stationary(lw *L, mm *m, lw_tile *stt, int64_t bi, int64_t r0, int64_t rt,
                                   int64_t k0, int64_t kt) {
  int64_t asr, asc, bsr, bsc;
  dims2(m->a, &asr, &asc);
  dims2(m->b, &bsr, &bsc);
  if (!m->transposed)
    return load2d(L, stt, m->in_dt, m->a, m->a->t.offset + batch_off(m->a, bi) + r0 * asr + k0 * asc, asc, kt,
                  asr, rt);
  return load2d(L, stt, m->in_dt, m->b, m->b->t.offset + batch_off(m->b, bi) + k0 * bsr + r0 * bsc, bsr, kt,
                bsc, rt);
}

/* One output tile [rt, ct] at (r0, c0). resident: the stationary tiles of
 * this row block for every K step, already loaded (NULL: load them here). */
static trnc_status mm_tile(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int64_t c0, int64_t ct,
                           lw_tile *resident) {
  /* Plain: rows = M (partitions of PSUM), cols = N. Transposed: rows = N. */
  int64_t asr, asc, bsr, bsc;
  dims2(m->a, &asr, &asc);
  dims2(m->b, &bsr, &bsc);
  int64_t abase = m->a->t.offset + batch_off(m->a, bi), bbase = m->b->t.offset + batch_off(m->b, bi);
  lw_tile *ps = m->zero ? m->zero : lw_pool_next(&m->ps_pool);
  trnc_status st;
  for (int64_t k0 = 0; k0 < m->K; k0 += 128) {
    int64_t kt = m->K - k0 < 128 ? m->K - k0 : 128;
    lw_tile *stt = resident ? &resident[k0 / 128] : lw_pool_next(&m->st_pool);
    lw_tile *mvt = lw_pool_next(&m->mv_pool);
    st = resident ? TRNC_OK : load_stationary(L, m, stt, bi, r0, rt, k0, kt);
    if (!m->transposed) {
      /* stationary A^T [k, m]: partition along K (A cols), free along M (A rows) */
      if (!st) st = load2d(L, mvt, m->in_dt, m->b, bbase + k0 * bsr + c0 * bsc, bsr, kt, bsc, ct);
    } else {
      /* stationary B [k, n] (rows = N), moving A^T [k, m] (cols = M) */
      if (!st) st = load2d(L, mvt, m->in_dt, m->a, abase + c0 * asr + k0 * asc, asc, kt, asr, ct);
    }
    if (st) return st;
    trnc_nc_instr in;
    memset(&in, 0, sizeof in);
    in.op = TRNC_NC_OP_MATMUL;
    in.engine = TRNC_NC_TENSOR;
    in.mode = k0 > 0;
    in.dst = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &ct);
    in.src[0] = lw_tile_ap(stt, (int)kt, 0, m->in_dt, 1, &rt);
    in.src[1] = lw_tile_ap(mvt, (int)kt, 0, m->in_dt, 1, &ct);
    lw_tile *rd[2] = {stt, mvt};
    if ((st = lw_emit(L, &in, rd, 2, &ps, 1))) return st;
  }
  /* epilogue: PSUM -> SBUF (alpha, bias), then store */
  lw_tile *o = lw_pool_next(&m->out_pool);
  trnc_dtype odt = m->out->t.dtype;
  trnc_nc_instr ev;
  memset(&ev, 0, sizeof ev);
  ev.op = TRNC_NC_OP_ACTIVATION;
  ev.engine = TRNC_NC_SCALAR;
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
    st = load2d(L, bt, TRNC_F32, m->bias, m->bias->t.offset + batch_off(m->bias, bi) + r0 * bsc_b, bsc_b, rt, 0, 1);
    if (st) return st;
    if (m->beta != 1.0) {
      trnc_nc_instr sc;
      memset(&sc, 0, sizeof sc);
      sc.op = TRNC_NC_OP_TENSOR_SCALAR;
      sc.engine = TRNC_NC_VECTOR;
      sc.alu0 = TRNC_NC_ALU_MUL;
      sc.imm[0] = (float)m->beta;
      sc.dst = sc.src[0] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &one);
      if ((st = lw_emit(L, &sc, &bt, 1, &bt, 1))) return st;
    }
    ev.src[1] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &one);
    ev.act = (uint8_t)m->act;
    ev.dst = lw_tile_ap(o, (int)rt, 0, odt, 1, &ct);
    if ((st = lw_emit(L, &ev, rd, 2, &o, 1))) return st;
  } else if (bt) {
    /* bias broadcast over the tile: evacuate to fp32, then add beta*bias */
    lw_tile *f = lw_pool_next(&m->out_pool);
    ev.dst = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
    if ((st = lw_emit(L, &ev, &ps, 1, &f, 1))) return st;
    st = load2d(L, bt, TRNC_F32, m->bias, m->bias->t.offset + batch_off(m->bias, bi) + r0 * bsr_b + c0 * bsc_b,
                bsr_b, rt, bsc_b, ct);
    if (st) return st;
    trnc_nc_instr add;
    memset(&add, 0, sizeof add);
    add.op = TRNC_NC_OP_TENSOR_TENSOR;
    add.engine = TRNC_NC_VECTOR;
    add.alu0 = TRNC_NC_ALU_ADD;
    if (m->beta != 1.0) {
      trnc_nc_instr sc;
      memset(&sc, 0, sizeof sc);
      sc.op = TRNC_NC_OP_TENSOR_SCALAR;
      sc.engine = TRNC_NC_VECTOR;
      sc.alu0 = TRNC_NC_ALU_MUL;
      sc.imm[0] = (float)m->beta;
      sc.dst = sc.src[0] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &ct);
      if ((st = lw_emit(L, &sc, &bt, 1, &bt, 1))) return st;
    }
    bool act = m->act != TRNC_NC_ACT_IDENTITY;
    add.dst = lw_tile_ap(act ? f : o, (int)rt, 0, act ? TRNC_F32 : odt, 1, &ct);
    add.src[0] = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
    add.src[1] = lw_tile_ap(bt, (int)rt, 0, TRNC_F32, 1, &ct);
    lw_tile *r2[2] = {f, bt};
    if ((st = lw_emit(L, &add, r2, 2, act ? &f : &o, 1))) return st;
    if (act) {
      trnc_nc_instr ac;
      memset(&ac, 0, sizeof ac);
      ac.op = TRNC_NC_OP_ACTIVATION;
      ac.engine = TRNC_NC_SCALAR;
      ac.act = (uint8_t)m->act;
      ac.imm[0] = 1;
      ac.src[0] = lw_tile_ap(f, (int)rt, 0, TRNC_F32, 1, &ct);
      ac.dst = lw_tile_ap(o, (int)rt, 0, odt, 1, &ct);
      if ((st = lw_emit(L, &ac, &f, 1, &o, 1))) return st;
    }
  } else {
    ev.act = (uint8_t)m->act;
    ev.dst = lw_tile_ap(o, (int)rt, 0, odt, 1, &ct);
    if ((st = lw_emit(L, &ev, &ps, 1, &o, 1))) return st;
  }
  /* store */
  int64_t osr, osc;
  dims2(m->out, &osr, &osc);
  trnc_nc_instr sd;
  memset(&sd, 0, sizeof sd);
  sd.op = TRNC_NC_OP_DMA_COPY;
  sd.engine = (uint8_t)lw_dma_queue(L);
  sd.src[0] = lw_tile_ap(o, (int)rt, 0, odt, 1, &ct);
  trnc_nc_ap *d = &sd.dst;
  d->mem = TRNC_NC_MEM_HBM;
  d->dtype = (uint8_t)odt;
  d->buffer = m->out->buffer;
  d->nfree = 1;
  d->partitions = (int32_t)rt;
  if (!m->transposed) {
    d->offset = (m->out->t.offset + batch_off(m->out, bi) + r0 * osr + c0 * osc) * lw_esize(odt);
    d->partition_stride = osr;
    d->free[0].stride = osc;
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
  d->free[0].count = ct;
  return lw_emit(L, &sd, &o, 1, NULL, 0);
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
  if ((st = lw_pool_init(L, &m.st_pool, TRNC_NC_MEM_SBUF, 128 * isz, 2)) ||
      (st = lw_pool_init(L, &m.mv_pool, TRNC_NC_MEM_SBUF, ctile * isz, 3)) ||
      (st = lw_pool_init(L, &m.ps_pool, TRNC_NC_MEM_PSUM, ctile * 4, 2)) ||
      (st = lw_pool_init(L, &m.out_pool, TRNC_NC_MEM_SBUF, ctile * 4, 3)) ||
      (st = lw_pool_init(L, &m.bias_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)))
    return st;
  /* With several column blocks, the stationary tiles of a row block (all K
   * steps) stay resident in SBUF and are loaded once, double-buffered
   * across row blocks. */
  if (m.K == 0) {
    /* empty contraction: A.B is all zeros (eager: zeros, or beta*bias for
     * addmm/baddbmm); the epilogue reads a zero tile instead of PSUM, so
     * bias, scale and a fused activation apply exactly as usual */
    int64_t zp = rows < 128 ? rows : 128;
    if (!(m.zero = lw_sbuf(L, ctile * 4))) return L->status;
    trnc_nc_instr z;
    memset(&z, 0, sizeof z);
    z.op = TRNC_NC_OP_MEMSET;
    z.engine = TRNC_NC_GPSIMD;
    z.dst = lw_tile_ap(m.zero, (int)zp, 0, TRNC_F32, 1, &ctile);
    if ((st = lw_emit(L, &z, NULL, 0, &m.zero, 1))) return st;
  }
  int64_t nk = (m.K + 127) / 128;
  bool reuse = m.K > 0 && cols > ctile && nk * 128 * isz <= 32 * 1024;
  lw_pool res_pool[2];
  if (reuse)
    for (int b = 0; b < 2; b++)
      if ((st = lw_pool_init(L, &res_pool[b], TRNC_NC_MEM_SBUF, 128 * isz, (int)nk))) return st;
  int which = 0;
  for (int64_t bi = 0; bi < m.batch; bi++)
    for (int64_t r0 = 0; r0 < rows; r0 += 128) {
      int64_t rt = rows - r0 < 128 ? rows - r0 : 128;
      lw_tile *resident = NULL;
      if (reuse) {
        resident = res_pool[which].tiles;
        which ^= 1;
        for (int64_t k0 = 0; k0 < m.K; k0 += 128)
          if ((st = load_stationary(L, &m, &resident[k0 / 128], bi, r0, rt, k0,
                                    m.K - k0 < 128 ? m.K - k0 : 128)))
            return st;
      }
      for (int64_t c0 = 0; c0 < cols; c0 += ctile) {
        st = mm_tile(L, &m, bi, r0, rt, c0, cols - c0 < ctile ? cols - c0 : ctile, resident);
        if (st) return st;
      }
    }
  return TRNC_OK;
}
