/*
 * emit_attention.c — scaled-dot-product attention forward as one
 * flash-attention kernel (aten._scaled_dot_product_flash_attention_for_cpu,
 * kept whole by passes/decomp_attention.c when the shape rule there picks
 * this kernel: no attn_mask, head dim <= 128, at least 128 queries and
 * keys, keys and values resident in SBUF).
 *
 * Shapes: query [B,Hq,L,E], key and value [B,Hk,S,E] (any strides whose
 * last one is 1; others are copied first), Hq = G*Hk: query head h reads
 * key/value head h / G (grouped-query attention). Output [B,Hq,L,E] in the
 * query's dtype, logsumexp [B,Hq,L] float32.
 *
 * Per key/value head the kernel keeps K^T [E, S] and V [128, S/128 tiles, E]
 * resident in SBUF (double-buffered across heads). Per query tile of 128
 * rows (queries on partitions; Q^T [E, 128] is the stationary operand) it
 * streams blocks of FA_BLOCK keys:
 *   S   = Q K^T                 TensorE, 512-key matmuls into PSUM (fp32)
 *   causal: S += mask           on the block holding the diagonal, one fp32
 *                               identity matmul adds -3e38 above it; blocks
 *                               entirely above the diagonal are skipped
 *   m'  = max(m, rowmax S)      VectorE reduce reading PSUM; GpSimd max
 *   P   = exp(scale S - scale m'), rowsum   ScalarE, PSUM -> SBUF, with the
 *                               row sum accumulated by the same instruction
 *   a   = exp(scale (m - m'))   ScalarE; l = a l + rowsum (GpSimd)
 *   P^T per 128 keys            DMA transpose (2-byte dtypes; the NKI ISA
 *                               allows DMA transpose only for those) or
 *                               TensorE transpose + copy (fp32)
 *   O   = a O + P V             TensorE into PSUM (keys on partitions),
 *                               O scaled on GpSimd, PSUM added on VectorE
 * and at the end out = O / l, logsumexp = scale m + log l. The loop is
 * software-pipelined in emission order: block j+1's QK^T and softmax are
 * issued before block j's PV, so TensorE multiplies while ScalarE computes
 * the exponentials (the engine queues run in order; lw_emit adds the
 * semaphores). P is rounded to the matmul dtype (bf16 for bf16 inputs) as
 * flash kernels do; everything else accumulates in fp32.
 */
#include <math.h>
#include <string.h>

#include "codegen/lower.h"

/* Keys per block: 3 PSUM banks of fp32 scores, two blocks in flight (6 of
 * the 8 banks), so the row max of one block overlaps the exponentials of
 * the previous one; the 2 banks left hold the PV accumulators and the fp32
 * transposes. */
#define FA_BLOCK 1536
#define FA_MM_N 512     /* moving free size of one matmul (one PSUM bank) */
#define FA_MASK (-3.0e38f) /* added above the causal diagonal: exp() gives 0 */

typedef struct fa {
  lw *L;
  const trnc_node *n;
  lw_tv q, k, v;
  const lw_tv *out, *lse;
  int64_t B, Hq, Hk, Lq, S, E;
  float scale;
  bool causal;
  trnc_dtype dt;    /* matmul dtype: the inputs' */
  int64_t esz;
  bool dma_t;       /* P^T, K^T and Q^T by DMA transpose (2-byte dtypes) */
  lw_pool kt, vt, qt, stage, sp, op, tp, p, pt, oacc, ofin, lsum, small;
  lw_tile *ident, *mask; /* fp32 [128, 128] identity and causal mask */
} fa;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* HBM access pattern: `rows` partitions from element `off` of tv, row
 * stride `rs`, `cols` contiguous elements per row. */
static trnc_nc_ap hbm(const lw_tv *tv, int64_t off, int64_t rows, int64_t rs, int64_t cols) {
  trnc_nc_ap a;
  memset(&a, 0, sizeof a);
  a.mem = TRNC_NC_MEM_HBM;
  a.dtype = (uint8_t)tv->t.dtype;
  a.buffer = tv->buffer;
  a.offset = off * lw_esize(tv->t.dtype);
  a.partitions = (int32_t)rows;
  a.partition_stride = rs;
  a.nfree = 1;
  a.free[0].stride = 1;
  a.free[0].count = cols;
  return a;
}

/* Element offset of row `row` of head (b, h) of a [B, H, T, E] view. */
static int64_t at(const lw_tv *tv, int64_t b, int64_t h, int64_t row) {
  return tv->t.offset + b * tv->t.stride[0] + h * tv->t.stride[1] + row * tv->t.stride[2];
}

static trnc_status emit1(fa *f, trnc_nc_instr *in, lw_tile *r0, lw_tile *r1, lw_tile *r2, lw_tile *w0, lw_tile *w1) {
  lw_tile *rd[3], *wr[2];
  int nr = 0, nw = 0;
  if (r0) rd[nr++] = r0;
  if (r1) rd[nr++] = r1;
  if (r2) rd[nr++] = r2;
  if (w0) wr[nw++] = w0;
  if (w1) wr[nw++] = w1;
  return lw_emit(f->L, in, rd, nr, wr, nw);
}

static trnc_nc_ap col(const lw_tile *t, int64_t np) {
  int64_t one = 1;
  return lw_tile_ap(t, (int)np, 0, TRNC_F32, 1, &one);
}

/* rows x E of tv from element off (row stride rs) into dst as [E, rows] at
 * byte offset doff: a DMA transpose for 2-byte dtypes, else a load and a
 * TensorE transpose through PSUM. */
static trnc_status load_t(fa *f, lw_tile *dst, int64_t doff, const lw_tv *tv, int64_t off, int64_t rows,
                          int64_t rs) {
  lw *L = f->L;
  if (f->dma_t) {
    trnc_nc_instr d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
    d.mode = TRNC_NC_DMA_TRANSPOSE;
    d.dst = lw_tile_ap(dst, (int)f->E, doff, f->dt, 1, &rows);
    d.src[0] = hbm(tv, off, rows, rs, f->E);
    return emit1(f, &d, NULL, NULL, NULL, dst, NULL);
  }
  lw_tile *s = lw_pool_next(&f->stage), *t = lw_pool_next(&f->tp);
  trnc_nc_instr d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  d.dst = lw_tile_ap(s, (int)rows, 0, f->dt, 1, &f->E);
  d.src[0] = hbm(tv, off, rows, rs, f->E);
  trnc_status st = emit1(f, &d, NULL, NULL, NULL, s, NULL);
  if (st) return st;
  trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
  tr.src[0] = d.dst;
  tr.dst = lw_tile_ap(t, (int)f->E, 0, TRNC_F32, 1, &rows);
  if ((st = emit1(f, &tr, s, NULL, NULL, t, NULL))) return st;
  trnc_nc_instr c = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  c.src[0] = tr.dst;
  c.dst = lw_tile_ap(dst, (int)f->E, doff, f->dt, 1, &rows);
  return emit1(f, &c, t, NULL, NULL, dst, NULL);
}

/* Most parts of one grouped write (keys of a head: S <= 8192 by the shape
 * rule of passes/decomp_attention.c; a block's P^T: FA_BLOCK / 128). */
#define FA_MAX_PARTS 64

/* K^T and V of head (b, hk) into kt [E, S] and vt [128, tiles, E]: each
 * 128-key part on its own DMA queue (fp32 K^T: through TensorE). */
static trnc_status load_kv(fa *f, int64_t b, int64_t hk, lw_tile *kt, lw_tile *vt) {
  trnc_status st;
  trnc_nc_instr *kin = trnc_arena_array(&f->L->arena, FA_MAX_PARTS, sizeof *kin);
  trnc_nc_instr *vin = trnc_arena_array(&f->L->arena, FA_MAX_PARTS, sizeof *vin);
  if (!kin || !vin) return lw_fail(f->L, f->n, TRNC_ERR_NOMEM, "out of memory in flash attention");
  int n = 0;
  for (int64_t k0 = 0; k0 < f->S; k0 += 128, n++) {
    int64_t kr = min64(128, f->S - k0);
    if (f->dma_t) {
      kin[n] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
      kin[n].mode = TRNC_NC_DMA_TRANSPOSE;
      kin[n].dst = lw_tile_ap(kt, (int)f->E, k0 * f->esz, f->dt, 1, &kr);
      kin[n].src[0] = hbm(&f->k, at(&f->k, b, hk, k0), kr, f->k.t.stride[2], f->E);
    } else if ((st = load_t(f, kt, k0 * f->esz, &f->k, at(&f->k, b, hk, k0), kr, f->k.t.stride[2]))) {
      return st;
    }
    vin[n] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
    vin[n].dst = lw_tile_ap(vt, (int)kr, (k0 / 128) * f->E * f->esz, f->dt, 1, &f->E);
    vin[n].src[0] = hbm(&f->v, at(&f->v, b, hk, k0), kr, f->v.t.stride[2], f->E);
  }
  if (f->dma_t && (st = lw_emit_split(f->L, kin, n, NULL, 0, kt))) return st;
  return lw_emit_split(f->L, vin, n, NULL, 0, vt);
}

/* The running state of one query tile. */
typedef struct qtile {
  int64_t b, h, q0, rt;
  lw_tile *kt, *vt;          /* its key/value head's resident tiles */
  int64_t hk;                /* its key/value head */
  bool first, last;          /* (a block's copy) the tile's first / last block */
  bool head_last;            /* (a block's copy) the last block of its key/value head */
  struct qtile *owner;       /* (a block's copy) the tile's running state */
  lw_tile *qt, *m, *l, *o;   /* Q^T [E, rt]; row max (raw scores), row sum, O (fp32) */
  /* the block between its softmax (stage A) and its PV (stage B) */
  lw_tile *p, *pt, *alpha;
  int64_t k0, w;
} qtile;

/* Stage A of key block [k0, k0 + w): scores, max, exponentials, P^T. */
static trnc_status stage_a(fa *f, qtile *t, lw_tile *kt, int64_t k0, int64_t w, bool first) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt;
  lw_tile *s = lw_pool_next(&f->sp);
  for (int64_t c = 0; c < w; c += FA_MM_N) {
    int64_t cw = min64(FA_MM_N, w - c);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.dst = lw_tile_ap(s, (int)rt, c * 4, TRNC_F32, 1, &cw);
    mm.src[0] = lw_tile_ap(t->qt, (int)f->E, 0, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(kt, (int)f->E, (k0 + c) * f->esz, f->dt, 1, &cw);
    if ((st = emit1(f, &mm, t->qt, kt, NULL, s, NULL))) return st;
  }
  if (f->causal && t->q0 >= k0 && t->q0 < k0 + w) {
    /* keys q0.. of the diagonal sub-block: S[p, j] += (j > p) ? -3e38 : 0 */
    int64_t dw = min64(128, k0 + w - t->q0);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = 1;
    mm.dst = lw_tile_ap(s, (int)rt, (t->q0 - k0) * 4, TRNC_F32, 1, &dw);
    mm.src[0] = lw_tile_ap(f->ident, (int)rt, 0, TRNC_F32, 1, &rt);
    mm.src[1] = lw_tile_ap(f->mask, (int)rt, 0, TRNC_F32, 1, &dw);
    if ((st = emit1(f, &mm, f->ident, f->mask, NULL, s, NULL))) return st;
  }
  /* m' = max(m, rowmax S) */
  lw_tile *mb = lw_pool_next(&f->small);
  trnc_nc_instr red = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
  red.alu0 = TRNC_NC_ALU_MAX;
  red.mode = 1;
  red.src[0] = lw_tile_ap(s, (int)rt, 0, TRNC_F32, 1, &w);
  red.dst = col(mb, rt);
  if ((st = emit1(f, &red, s, NULL, NULL, mb, NULL))) return st;
  lw_tile *mold = t->m;
  if (!first) {
    lw_tile *mn = lw_pool_next(&f->small);
    trnc_nc_instr mx = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
    mx.alu0 = TRNC_NC_ALU_MAX;
    mx.src[0] = col(mold, rt);
    mx.src[1] = col(mb, rt);
    mx.dst = col(mn, rt);
    if ((st = emit1(f, &mx, mold, mb, NULL, mn, NULL))) return st;
    t->m = mn;
  } else {
    t->m = mb;
  }
  lw_tile *nb = lw_pool_next(&f->small);
  trnc_nc_instr neg = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
  neg.alu0 = TRNC_NC_ALU_MUL;
  neg.alu1 = TRNC_NC_ALU_BYPASS;
  neg.imm[0] = -f->scale;
  neg.src[0] = col(t->m, rt);
  neg.dst = col(nb, rt);
  if ((st = emit1(f, &neg, t->m, NULL, NULL, nb, NULL))) return st;
  /* P = exp(scale S - scale m'), row sums into l (first block) or rs */
  lw_tile *p = lw_pool_next(&f->p), *rs = first ? t->l : lw_pool_next(&f->small);
  trnc_nc_instr ex = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ex.act = TRNC_NC_ACT_EXP;
  ex.imm[0] = f->scale;
  ex.src[0] = red.src[0];
  ex.src[1] = col(nb, rt);
  ex.dst = lw_tile_ap(p, (int)rt, 0, f->dt, 1, &w);
  ex.dst2 = col(rs, rt);
  if ((st = emit1(f, &ex, s, nb, NULL, p, rs))) return st;
  t->alpha = NULL;
  if (!first) {
    lw_tile *a = lw_pool_next(&f->small);
    trnc_nc_instr ea = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
    ea.act = TRNC_NC_ACT_EXP;
    ea.imm[0] = f->scale;
    ea.src[0] = col(mold, rt);
    ea.src[1] = col(nb, rt);
    ea.dst = col(a, rt);
    if ((st = emit1(f, &ea, mold, nb, NULL, a, NULL))) return st;
    trnc_nc_instr lu = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
    lu.alu0 = TRNC_NC_ALU_MUL;
    lu.alu1 = TRNC_NC_ALU_ADD;
    lu.src[0] = col(t->l, rt);
    lu.src[1] = col(a, rt);
    lu.src[2] = col(rs, rt);
    lu.dst = col(t->l, rt);
    if ((st = emit1(f, &lu, t->l, a, rs, t->l, NULL))) return st;
    t->alpha = a;
  }
  t->p = p;
  t->k0 = k0;
  t->w = w;
  t->pt = lw_pool_next(&f->pt);
  if (f->dma_t) { /* one DMA transpose per 128 keys, in parallel */
    trnc_nc_instr ds[FA_BLOCK / 128];
    int nd = 0;
    for (int64_t c = 0; c < w; c += 128, nd++) {
      int64_t sw = min64(128, w - c);
      ds[nd] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
      ds[nd].mode = TRNC_NC_DMA_TRANSPOSE;
      ds[nd].src[0] = lw_tile_ap(p, (int)rt, c * f->esz, f->dt, 1, &sw);
      ds[nd].dst = lw_tile_ap(t->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
    }
    if ((st = lw_emit_split(L, ds, nd, &p, 1, t->pt))) return st;
  }
  return TRNC_OK;
}

/* Stage B of the block stage A left in t: (fp32: P^T on TensorE), PV, O. */
static trnc_status stage_b(fa *f, qtile *t, lw_tile *vt, bool first) {
  trnc_status st;
  int64_t rt = t->rt, w = t->w;
  if (!f->dma_t)
    for (int64_t c = 0; c < w; c += 128) {
      int64_t sw = min64(128, w - c);
      lw_tile *tp = lw_pool_next(&f->tp);
      trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
      tr.src[0] = lw_tile_ap(t->p, (int)rt, c * f->esz, f->dt, 1, &sw);
      tr.dst = lw_tile_ap(tp, (int)sw, 0, TRNC_F32, 1, &rt);
      if ((st = emit1(f, &tr, t->p, NULL, NULL, tp, NULL))) return st;
      trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
      cp.src[0] = tr.dst;
      cp.dst = lw_tile_ap(t->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
      if ((st = emit1(f, &cp, tp, NULL, NULL, t->pt, NULL))) return st;
    }
  lw_tile *ps = lw_pool_next(&f->op);
  for (int64_t c = 0; c < w; c += 128) {
    int64_t sw = min64(128, w - c);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = c > 0;
    mm.dst = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &f->E);
    mm.src[0] = lw_tile_ap(t->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(vt, (int)sw, ((t->k0 + c) / 128) * f->E * f->esz, f->dt, 1, &f->E);
    if ((st = emit1(f, &mm, t->pt, vt, NULL, ps, NULL))) return st;
  }
  trnc_nc_ap o = lw_tile_ap(t->o, (int)rt, 0, TRNC_F32, 1, &f->E);
  if (first) {
    trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    cp.src[0] = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &f->E);
    cp.dst = o;
    return emit1(f, &cp, ps, NULL, NULL, t->o, NULL);
  }
  trnc_nc_instr sc = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
  sc.alu0 = TRNC_NC_ALU_MUL;
  sc.alu1 = TRNC_NC_ALU_BYPASS;
  sc.src[0] = o;
  sc.src[1] = col(t->alpha, rt);
  sc.dst = o;
  if ((st = emit1(f, &sc, t->o, t->alpha, NULL, t->o, NULL))) return st;
  trnc_nc_instr add = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
  add.alu0 = TRNC_NC_ALU_ADD;
  add.src[0] = o;
  add.src[1] = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &f->E);
  add.dst = o;
  return emit1(f, &add, t->o, ps, NULL, t->o, NULL);
}

/* out = O / l and logsumexp = scale m + log l of query tile t of head (b, h). */
static trnc_status finish(fa *f, qtile *t, int64_t b, int64_t h) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt;
  lw_tile *of = lw_pool_next(&f->ofin);
  trnc_nc_instr dv = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  dv.alu0 = TRNC_NC_ALU_DIV;
  dv.alu1 = TRNC_NC_ALU_BYPASS;
  dv.src[0] = lw_tile_ap(t->o, (int)rt, 0, TRNC_F32, 1, &f->E);
  dv.src[1] = col(t->l, rt);
  dv.dst = lw_tile_ap(of, (int)rt, 0, f->out->t.dtype, 1, &f->E);
  if ((st = emit1(f, &dv, t->o, t->l, NULL, of, NULL))) return st;
  trnc_nc_instr sd = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  sd.src[0] = dv.dst;
  sd.dst = hbm(f->out, at(f->out, b, h, t->q0), rt, f->out->t.stride[2], f->E);
  if ((st = emit1(f, &sd, of, NULL, NULL, NULL, NULL))) return st;
  if (f->lse->buffer < 0) return TRNC_OK;
  lw_tile *ll = lw_pool_next(&f->small), *ls = lw_pool_next(&f->small);
  trnc_nc_instr lg = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  lg.act = TRNC_NC_ACT_LOG;
  lg.imm[0] = 1.0f;
  lg.src[0] = col(t->l, rt);
  lg.dst = col(ll, rt);
  if ((st = emit1(f, &lg, t->l, NULL, NULL, ll, NULL))) return st;
  trnc_nc_instr fm = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
  fm.alu0 = TRNC_NC_ALU_MUL;
  fm.imm[0] = f->scale;
  fm.alu1 = TRNC_NC_ALU_ADD;
  fm.src[0] = col(t->m, rt);
  fm.src[2] = col(ll, rt);
  fm.dst = col(ls, rt);
  if ((st = emit1(f, &fm, t->m, ll, NULL, ls, NULL))) return st;
  const lw_tv *lt = f->lse;
  trnc_nc_instr sl = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  sl.src[0] = fm.dst;
  sl.dst = hbm(lt, lt->t.offset + b * lt->t.stride[0] + h * lt->t.stride[1] + t->q0 * lt->t.stride[2], rt,
               lt->t.stride[2], 1);
  return emit1(f, &sl, ls, NULL, NULL, NULL, NULL);
}

/* Where the pipeline stands: key/value head (b, hk), query head g of its
 * group, query tile q0, key block j. */
typedef struct fa_pos {
  int64_t b, hk, g, q0, j;
} fa_pos;

/* Key blocks of query tile q0 (causal, top-left aligned: row i sees keys
 * 0..i, so blocks past the tile's last row are skipped). */
static int64_t kend_of(const fa *f, int64_t q0) {
  return f->causal ? min64(f->S, q0 + min64(128, f->Lq - q0)) : f->S;
}

/* The position after p; false past the last. */
static bool fa_next(const fa *f, fa_pos *p) {
  if (++p->j * FA_BLOCK < kend_of(f, p->q0)) return true;
  p->j = 0;
  if ((p->q0 += 128) < f->Lq) return true;
  p->q0 = 0;
  if (++p->g < f->Hq / f->Hk) return true;
  p->g = 0;
  if (++p->hk < f->Hk) return true;
  p->hk = 0;
  return ++p->b < f->B;
}

/* Every (head, query tile, key block) in order, software-pipelined: stage
 * A (scores, softmax, P^T) of block i+1 is emitted before stage B (PV,
 * rescale) of block i, across query tiles and heads too, so each in-order
 * engine queue always has the next block's work behind the current one.
 * Keys and values of head i + 2 are loaded into head i's buffer once stage
 * B of head i's last block has been issued. */
static trnc_status fa_run(fa *f) {
  qtile ring[3], *cur = NULL;
  int nring = 0;
  trnc_status st;
  for (int64_t hi = 0; hi < 2 && hi < f->B * f->Hk; hi++)
    if ((st = load_kv(f, hi / f->Hk, hi % f->Hk, &f->kt.tiles[hi], &f->vt.tiles[hi]))) return st;
  fa_pos p = {0, 0, 0, 0, 0};
  qtile pend, next; /* the block whose stage B is next; the one just issued */
  memset(&pend, 0, sizeof pend);
  memset(&next, 0, sizeof next);
  bool have = false, more = true;
  while (more || have) {

    bool issued = false;
    if (more) {
      int64_t h = p.hk * (f->Hq / f->Hk) + p.g;
      if (p.j == 0) {
        cur = &ring[nring++ % 3];
        memset(cur, 0, sizeof *cur);
        cur->b = p.b, cur->h = h, cur->q0 = p.q0, cur->rt = min64(128, f->Lq - p.q0);
        int64_t hi = p.b * f->Hk + p.hk;
        cur->kt = &f->kt.tiles[hi % 2], cur->vt = &f->vt.tiles[hi % 2];
        cur->qt = lw_pool_next(&f->qt);
        cur->l = lw_pool_next(&f->lsum);
        cur->o = lw_pool_next(&f->oacc);
        if ((st = load_t(f, cur->qt, 0, &f->q, at(&f->q, p.b, h, p.q0), cur->rt, f->q.t.stride[2]))) return st;
      }
      int64_t k0 = p.j * FA_BLOCK, kend = kend_of(f, p.q0);
      if ((st = stage_a(f, cur, cur->kt, k0, min64(FA_BLOCK, kend - k0), p.j == 0))) return st;
      next = *cur;
      next.first = p.j == 0;
      next.hk = p.hk;
      more = fa_next(f, &p);
      next.last = !more || p.j == 0;
      next.head_last = !more || (p.j == 0 && p.g == 0 && p.q0 == 0);
      issued = true;
    }
    if (have) {
      if ((st = stage_b(f, &pend, pend.vt, pend.first))) return st;
      if (pend.last && (st = finish(f, pend.owner, pend.b, pend.h))) return st;
      /* the last block of key/value head i has been issued: head i + 2
       * loads into its buffer */
      int64_t hi = pend.b * f->Hk + pend.hk + 2;
      if (pend.head_last && hi < f->B * f->Hk &&
          (st = load_kv(f, hi / f->Hk, hi % f->Hk, &f->kt.tiles[hi % 2], &f->vt.tiles[hi % 2])))
        return st;
    }
    have = issued;
    if (issued) {
      pend = next;
      pend.owner = cur;
    }
  }
  return TRNC_OK;
}

/* A contiguous copy of operand tv when its last dim is strided. */
static trnc_status dense_rows(lw *L, const trnc_node *n, uint32_t arg, lw_tv *out) {
  *out = L->tv[n->args[arg].u.ref];
  if (out->t.stride[3] == 1 || out->t.shape[3] == 1) return TRNC_OK;
  return lw_materialize(L, n, n->args[arg].u.ref, out);
}

static trnc_status fa_pools(fa *f) {
  lw *L = f->L;
  int64_t nkt = (f->S + 127) / 128, tb = 128 * 4;
  trnc_status st;
  /* PSUM first: the score blocks start on bank boundaries */
  if ((st = lw_pool_init(L, &f->sp, TRNC_NC_MEM_PSUM, FA_BLOCK * 4, 2)) ||
      (st = lw_pool_init(L, &f->op, TRNC_NC_MEM_PSUM, f->E * 4, 2)) ||
      (st = lw_pool_init(L, &f->tp, TRNC_NC_MEM_PSUM, tb, 2)) ||
      (st = lw_pool_init(L, &f->kt, TRNC_NC_MEM_SBUF, f->S * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->vt, TRNC_NC_MEM_SBUF, nkt * f->E * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->qt, TRNC_NC_MEM_SBUF, 128 * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->stage, TRNC_NC_MEM_SBUF, f->E * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->p, TRNC_NC_MEM_SBUF, FA_BLOCK * f->esz, 3)) ||
      (st = lw_pool_init(L, &f->pt, TRNC_NC_MEM_SBUF, FA_BLOCK * f->esz, 3)) ||
      (st = lw_pool_init(L, &f->oacc, TRNC_NC_MEM_SBUF, f->E * 4, 2)) ||
      (st = lw_pool_init(L, &f->ofin, TRNC_NC_MEM_SBUF, f->E * 4, 2)) ||
      (st = lw_pool_init(L, &f->lsum, TRNC_NC_MEM_SBUF, 4, 2)) ||
      (st = lw_pool_init(L, &f->small, TRNC_NC_MEM_SBUF, 4, 24)))
    return st;
  if (!f->causal) return TRNC_OK;
  /* identity and causal mask (fp32, built on GpSimd once per kernel) */
  lw_tile *ones = lw_sbuf(L, tb), *zeros = lw_sbuf(L, tb);
  if (!ones || !zeros || !(f->ident = lw_sbuf(L, tb)) || !(f->mask = lw_sbuf(L, tb))) return L->status;
  int64_t c = 128;
  for (int i = 0; i < 2; i++) {
    lw_tile *src = i ? zeros : ones, *dst = i ? f->mask : f->ident;
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    ms.imm[0] = i ? 0.0f : 1.0f;
    ms.dst = lw_tile_ap(src, 128, 0, TRNC_F32, 1, &c);
    if ((st = emit1(f, &ms, NULL, NULL, NULL, src, NULL))) return st;
    /* identity: p - j == 0 ? 1 : 0; mask: p - j >= 0 ? 0 : -3e38 */
    trnc_nc_instr as = lw_instr(TRNC_NC_OP_AFFINE_SELECT, TRNC_NC_GPSIMD);
    as.alu0 = i ? TRNC_NC_ALU_GE : TRNC_NC_ALU_EQ;
    as.aff[1] = 1;
    as.aff[2] = -1;
    as.imm[0] = i ? FA_MASK : 0.0f;
    as.src[0] = ms.dst;
    as.dst = lw_tile_ap(dst, 128, 0, TRNC_F32, 1, &c);
    if ((st = emit1(f, &as, src, NULL, NULL, dst, NULL))) return st;
  }
  return TRNC_OK;
}

bool lw_attention_handles(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  return n->op == TRNC_OP_SDPA_FLASH;
}

trnc_status lw_attention_emit(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  fa f;
  memset(&f, 0, sizeof f);
  f.L = L;
  f.n = n;
  const trnc_type *qt = &g->values[n->args[0].u.ref].type, *kt = &g->values[n->args[1].u.ref].type;
  f.B = qt->shape[0], f.Hq = qt->shape[1], f.Lq = qt->shape[2], f.E = qt->shape[3];
  f.Hk = kt->shape[1], f.S = kt->shape[2];
  f.scale = (float)trnc_arg_number(&n->args[6], 1.0 / sqrt((double)f.E));
  f.causal = n->args[4].kind == TRNC_ARG_BOOL && n->args[4].u.b;
  f.out = &L->tv[n->outs[0]];
  f.lse = &L->tv[n->outs[1]];
  if (f.out->buffer < 0 || f.B == 0 || f.Hq == 0 || f.Lq == 0) return TRNC_OK;
  if (n->args[5].kind == TRNC_ARG_VALUE || f.E > 128 || f.S == 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL,
                   "flash attention kept for a form it does not lower (attn_mask, head dim %lld > 128 "
                   "or no keys): passes/decomp_attention.c should have decomposed it",
                   (long long)f.E);
  trnc_status st;
  if ((st = dense_rows(L, n, 0, &f.q)) || (st = dense_rows(L, n, 1, &f.k)) || (st = dense_rows(L, n, 2, &f.v)))
    return st;
  f.dt = f.q.t.dtype;
  f.esz = lw_esize(f.dt);
  f.dma_t = f.esz == 2;
  if ((st = lw_kernel_begin(L, "flash_attention"))) return st;
  if ((st = fa_pools(&f))) return st;
  return fa_run(&f);
}
