/*
 * attention_bw.c — scaled-dot-product attention backward as one
 * flash-attention kernel (aten._scaled_dot_product_flash_attention_for_cpu_
 * backward, kept whole by passes/decomp_attention.c for the forms whose
 * forward is the flash kernel of attention.c, 2-byte dtypes: it reads that
 * forward's logsumexp, lse = scale m + log l).
 *
 * Shapes: grad_out, query, out [B,Hq,L,E]; key, value [B,Hk,S,E]; lse
 * [B,Hq,L] fp32; Hq = G Hk. Results dQ [B,Hq,L,E], dK, dV [B,Hk,S,E] in
 * the input dtype. Per key/value head (K^T, V^T [E, S] and K [128, S/128,
 * E] resident in SBUF, double-buffered across heads) and per block of
 * FB_BLOCK keys, it walks every query tile of the head's G query heads
 * (queries on partitions), recomputing the probabilities:
 *   S  = Q K^T              TensorE into PSUM (causal: the diagonal block
 *                           gets the mask by an identity matmul; tiles
 *                           entirely above it are skipped, blocks cut at
 *                           the tile's last row)
 *   P  = exp(scale S - lse) ScalarE, PSUM -> SBUF in the input dtype
 *   dP = dO V^T             TensorE into PSUM
 *   dS = P (dP - delta)     VectorE (dP - delta, PSUM -> SBUF fp32), GpSimd
 *                           (the product, rounded to the input dtype);
 *                           delta = rowsum(dO * O), once per tile
 *   dV += P^T dO, dK += dS^T Q   TensorE, 128-key chunks accumulated in PSUM
 *                           over every query tile of the block
 *   dQ += dS K              dS^T by DMA transpose, TensorE into PSUM, added
 *                           into an fp32 SBUF accumulator per query tile
 * dK (times scale) and dV leave PSUM once per block, dQ (times scale) once
 * per head. Each tile's S, P, dP, dS stage is issued one tile ahead of its
 * dV/dK/dQ matmuls, so TensorE multiplies while ScalarE, VectorE, GpSimd
 * and the DMA queues work (lw_emit adds the semaphores). P and dS are
 * rounded to the input dtype for their matmuls, as flash kernels do;
 * everything else accumulates in fp32.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/attention.h"

#define FB_BLOCK 512 /* keys per block: one PSUM bank of fp32 scores */
#define FB_CH (FB_BLOCK / 128)
/* Tiles between a tile's stage 1 and its stages 2 and 3 (fb_run); the
 * per-tile pools hold FB_DEPTH tiles, those in flight and one more. */
#define FB_LAG2 2
#define FB_LAG3 3
#define FB_DEPTH (FB_LAG3 + 2)
#define FB_MAX_PARTS 64 /* 128-key parts of a head (S <= 8192, the shape rule) */
/* SBUF per partition for the dQ accumulators of a head's query tiles */
#define FB_DQ_BYTES (64 * 1024)

typedef struct fb {
  lw *L;
  const trnc_node *n;
  lw_tv dO, q, k, v, o;
  const lw_tv *lse, *dq, *dk, *dv;
  int64_t B, Hq, Hk, G, Lq, S, E, nq;
  float scale;
  bool causal;
  trnc_dtype dt, mask_dt;
  int64_t esz;
  lw_pool kt, vt, kr;          /* per head: K^T, V^T [E, S]; K [128, S/128, E] */
  lw_pool qt, dot, qr, dor;    /* per tile: Q^T, dO^T [E, rt]; Q, dO [rt, E] */
  lw_pool sp, dpp, kv, dqp;    /* PSUM: S, dP [rt, FB_BLOCK]; dK/dV chunks; dQ [rt, E] */
  lw_pool p, dpm, ds, dst;     /* SBUF: P, dP - delta (fp32), dS, dS^T */
  lw_pool pro, ev;             /* prologue rows; PSUM evacuations [128, E] */
  lw_pool acc, stat;           /* per head: dQ accumulators; delta, -lse columns */
  lw_tile *ident, *mask;
} fb;

/* Element offset of row `row` of head h of a [B, H, T, E] tv. */
static int64_t at(const lw_tv *tv, int64_t b, int64_t h, int64_t row) {
  return tv->t.offset + b * tv->t.stride[0] + h * tv->t.stride[1] + row * tv->t.stride[2];
}

static trnc_nc_ap rows_of(const lw_tv *tv, int64_t b, int64_t h, int64_t row, int64_t n, int64_t cols) {
  return fa_hbm(tv->buffer, tv->t.dtype, at(tv, b, h, row), n, tv->t.stride[2], cols);
}

/* n rows x E of tv (head h, from row r0) into dst at byte offset doff: as
 * [E, n] by DMA transpose, else as [n, E]. */
static trnc_status load(fb *f, lw_tile *dst, int64_t doff, const lw_tv *tv, int64_t b, int64_t h, int64_t r0,
                        int64_t n, bool transpose) {
  trnc_nc_instr d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
  d.src[0] = rows_of(tv, b, h, r0, n, f->E);
  if (transpose) {
    d.mode = TRNC_NC_DMA_TRANSPOSE;
    d.dst = lw_tile_ap(dst, (int)f->E, doff, f->dt, 1, &n);
  } else {
    d.dst = lw_tile_ap(dst, (int)n, doff, f->dt, 1, &f->E);
  }
  return fa_emit(f->L, &d, NULL, NULL, NULL, dst, NULL);
}

/* K^T, V^T and K rows of key/value head (b, hk): one DMA per 128-key part
 * and operand, each group split over the queues. */
static trnc_status load_head(fb *f, int64_t b, int64_t hk, lw_tile *kt, lw_tile *vt, lw_tile *kr) {
  trnc_nc_instr *in = trnc_arena_array(&f->L->arena, 3 * FB_MAX_PARTS, sizeof *in);
  if (!in) return lw_fail(f->L, f->n, TRNC_ERR_NOMEM, "out of memory in flash attention backward");
  int n = 0;
  for (int64_t k0 = 0; k0 < f->S; k0 += 128, n++) {
    int64_t kn = fa_min(128, f->S - k0);
    for (int w = 0; w < 3; w++) {
      trnc_nc_instr *d = &in[w * FB_MAX_PARTS + n];
      *d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
      d->src[0] = rows_of(w == 1 ? &f->v : &f->k, b, hk, k0, kn, f->E);
      if (w < 2) {
        d->mode = TRNC_NC_DMA_TRANSPOSE;
        d->dst = lw_tile_ap(w ? vt : kt, (int)f->E, k0 * f->esz, f->dt, 1, &kn);
      } else {
        d->dst = lw_tile_ap(kr, (int)kn, (k0 / 128) * f->E * f->esz, f->dt, 1, &f->E);
      }
    }
  }
  trnc_status st;
  if ((st = lw_emit_split(f->L, in, n, NULL, 0, kt)) || (st = lw_emit_split(f->L, in + FB_MAX_PARTS, n, NULL, 0, vt)))
    return st;
  return lw_emit_split(f->L, in + 2 * FB_MAX_PARTS, n, NULL, 0, kr);
}

/* Prologue of query tile i (group member g, rows q0..q0+rt) of head (b,
 * hk): delta = rowsum(dO * O) and -lse into columns i of dl and nl. */
static trnc_status prologue(fb *f, int64_t b, int64_t h, int64_t q0, int64_t rt, int64_t i, lw_tile *dl,
                            lw_tile *nl) {
  trnc_status st;
  lw_tile *a = lw_pool_next(&f->pro), *c = lw_pool_next(&f->pro), *m = lw_pool_next(&f->pro);
  trnc_nc_instr d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
  d.src[0] = rows_of(&f->dO, b, h, q0, rt, f->E);
  d.dst = lw_tile_ap(a, (int)rt, 0, f->dt, 1, &f->E);
  if ((st = fa_emit(f->L, &d, NULL, NULL, NULL, a, NULL))) return st;
  trnc_nc_instr e = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
  e.src[0] = rows_of(&f->o, b, h, q0, rt, f->E);
  e.dst = lw_tile_ap(c, (int)rt, 0, f->o.t.dtype, 1, &f->E);
  if ((st = fa_emit(f->L, &e, NULL, NULL, NULL, c, NULL))) return st;
  trnc_nc_instr mu = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
  mu.alu0 = TRNC_NC_ALU_MUL;
  mu.src[0] = d.dst;
  mu.src[1] = e.dst;
  mu.dst = lw_tile_ap(m, (int)rt, 0, TRNC_F32, 1, &f->E);
  if ((st = fa_emit(f->L, &mu, a, c, NULL, m, NULL))) return st;
  trnc_nc_instr rd = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
  rd.alu0 = TRNC_NC_ALU_ADD;
  rd.mode = 1;
  rd.src[0] = mu.dst;
  rd.dst = fa_col(dl, rt, i * 4);
  if ((st = fa_emit(f->L, &rd, m, NULL, NULL, dl, NULL))) return st;
  const lw_tv *lt = f->lse;
  trnc_nc_instr l = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
  l.src[0] = fa_hbm(lt->buffer, TRNC_F32, lt->t.offset + b * lt->t.stride[0] + h * lt->t.stride[1] +
                    q0 * lt->t.stride[2], rt, lt->t.stride[2], 1);
  l.dst = fa_col(nl, rt, i * 4);
  if ((st = fa_emit(f->L, &l, NULL, NULL, NULL, nl, NULL))) return st;
  trnc_nc_instr ng = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
  ng.alu0 = TRNC_NC_ALU_MUL;
  ng.alu1 = TRNC_NC_ALU_BYPASS;
  ng.imm[0] = -1.0f;
  ng.src[0] = l.dst;
  ng.dst = l.dst;
  return fa_emit(f->L, &ng, nl, NULL, NULL, nl, NULL);
}

/* One query tile's work in a key block, between its two stages. */
typedef struct fb_tile {
  int64_t b, h, i, q0, rt, w;   /* w: keys of the block it sees */
  lw_tile *q, *d;               /* Q, dO rows */
  lw_tile *p, *ds, *dst;
} fb_tile;

/* The state of one key block of a head. */
typedef struct fb_blk {
  int64_t k0, w, nch;
  lw_tile *kt, *vt, *kr, *dl, *nl, *acc;
  lw_tile *dk[FB_CH], *dv[FB_CH];
  bool started[FB_CH];
  bool *acc_set;                /* per query tile: its accumulator holds a sum */
} fb_blk;

/* Stage 1 of tile t: S, P, dP, dS and dS^T. */
static trnc_status stage1(fb *f, const fb_blk *k, fb_tile *t) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt, w = t->w, k0 = k->k0;
  lw_tile *qt = lw_pool_next(&f->qt), *dt = lw_pool_next(&f->dot);
  t->q = lw_pool_next(&f->qr), t->d = lw_pool_next(&f->dor);
  if ((st = load(f, qt, 0, &f->q, t->b, t->h, t->q0, rt, true)) ||
      (st = load(f, dt, 0, &f->dO, t->b, t->h, t->q0, rt, true)) ||
      (st = load(f, t->q, 0, &f->q, t->b, t->h, t->q0, rt, false)) ||
      (st = load(f, t->d, 0, &f->dO, t->b, t->h, t->q0, rt, false)))
    return st;
  lw_tile *s = lw_pool_next(&f->sp), *dp = lw_pool_next(&f->dpp);
  for (int x = 0; x < 2; x++) {
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.dst = lw_tile_ap(x ? dp : s, (int)rt, 0, TRNC_F32, 1, &w);
    mm.src[0] = lw_tile_ap(x ? dt : qt, (int)f->E, 0, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(x ? k->vt : k->kt, (int)f->E, k0 * f->esz, f->dt, 1, &w);
    if ((st = fa_emit(L, &mm, x ? dt : qt, x ? k->vt : k->kt, NULL, x ? dp : s, NULL))) return st;
  }
  if (f->causal && t->q0 >= k0 && t->q0 < k0 + w) {
    int64_t dw = fa_min(128, k0 + w - t->q0);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = 1;
    mm.dst = lw_tile_ap(s, (int)rt, (t->q0 - k0) * 4, TRNC_F32, 1, &dw);
    mm.src[0] = lw_tile_ap(f->ident, (int)rt, 0, f->mask_dt, 1, &rt);
    mm.src[1] = lw_tile_ap(f->mask, (int)rt, 0, f->mask_dt, 1, &dw);
    if ((st = fa_emit(L, &mm, f->ident, f->mask, NULL, s, NULL))) return st;
  }
  t->p = lw_pool_next(&f->p), t->ds = lw_pool_next(&f->ds), t->dst = lw_pool_next(&f->dst);
  trnc_nc_instr ex = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ex.act = TRNC_NC_ACT_EXP;
  ex.imm[0] = f->scale;
  ex.src[0] = lw_tile_ap(s, (int)rt, 0, TRNC_F32, 1, &w);
  ex.src[1] = fa_col(k->nl, rt, t->i * 4);
  ex.dst = lw_tile_ap(t->p, (int)rt, 0, f->dt, 1, &w);
  if ((st = fa_emit(L, &ex, s, k->nl, NULL, t->p, NULL))) return st;
  lw_tile *dm = lw_pool_next(&f->dpm);
  trnc_nc_instr sb = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  sb.alu0 = TRNC_NC_ALU_SUB;
  sb.alu1 = TRNC_NC_ALU_BYPASS;
  sb.src[0] = lw_tile_ap(dp, (int)rt, 0, TRNC_F32, 1, &w);
  sb.src[1] = fa_col(k->dl, rt, t->i * 4);
  sb.dst = lw_tile_ap(dm, (int)rt, 0, TRNC_F32, 1, &w);
  if ((st = fa_emit(L, &sb, dp, k->dl, NULL, dm, NULL))) return st;
  trnc_nc_instr mu = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
  mu.alu0 = TRNC_NC_ALU_MUL;
  mu.src[0] = ex.dst;
  mu.src[1] = sb.dst;
  mu.dst = lw_tile_ap(t->ds, (int)rt, 0, f->dt, 1, &w);
  if ((st = fa_emit(L, &mu, t->p, dm, NULL, t->ds, NULL))) return st;
  trnc_nc_instr tr[FB_CH];
  int nt = 0;
  for (int64_t c = 0; c < w; c += 128, nt++) {
    int64_t sw = fa_min(128, w - c);
    tr[nt] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
    tr[nt].mode = TRNC_NC_DMA_TRANSPOSE;
    tr[nt].src[0] = lw_tile_ap(t->ds, (int)rt, c * f->esz, f->dt, 1, &sw);
    tr[nt].dst = lw_tile_ap(t->dst, (int)sw, c / 128 * 128 * f->esz, f->dt, 1, &rt);
  }
  return lw_emit_split(L, tr, nt, &t->ds, 1, t->dst);
}

/* Stage 2 of tile t: dV += P^T dO, dK += dS^T Q per 128-key chunk. */
static trnc_status stage2(fb *f, fb_blk *k, const fb_tile *t) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt;
  for (int64_t c = 0, x = 0; c < t->w; c += 128, x++) {
    int64_t sw = fa_min(128, t->w - c);
    for (int y = 0; y < 2; y++) { /* y 0: dV from P and dO, 1: dK from dS and Q */
      lw_tile *acc = y ? k->dk[x] : k->dv[x], *a = y ? t->ds : t->p, *b = y ? t->q : t->d;
      trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
      mm.mode = k->started[x];
      mm.dst = lw_tile_ap(acc, (int)sw, 0, TRNC_F32, 1, &f->E);
      mm.src[0] = lw_tile_ap(a, (int)rt, c * f->esz, f->dt, 1, &sw);
      mm.src[1] = lw_tile_ap(b, (int)rt, 0, f->dt, 1, &f->E);
      if ((st = fa_emit(L, &mm, a, b, NULL, acc, NULL))) return st;
    }
    k->started[x] = true;
  }
  return TRNC_OK;
}

/* Stage 3 of tile t: dQ = dS K into PSUM (dS^T by DMA transpose in stage
 * 1), added into the tile's accumulator. */
static trnc_status stage3(fb *f, fb_blk *k, const fb_tile *t) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt;
  lw_tile *dq = lw_pool_next(&f->dqp);
  for (int64_t c = 0, x = 0; c < t->w; c += 128, x++) {
    int64_t sw = fa_min(128, t->w - c);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = c > 0;
    mm.dst = lw_tile_ap(dq, (int)rt, 0, TRNC_F32, 1, &f->E);
    mm.src[0] = lw_tile_ap(t->dst, (int)sw, x * 128 * f->esz, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(k->kr, (int)sw, ((k->k0 + c) / 128) * f->E * f->esz, f->dt, 1, &f->E);
    if ((st = fa_emit(L, &mm, t->dst, k->kr, NULL, dq, NULL))) return st;
  }
  bool add = k->acc_set[t->i];
  trnc_nc_instr ad = lw_instr(add ? TRNC_NC_OP_TENSOR_TENSOR : TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  ad.alu0 = TRNC_NC_ALU_ADD;
  ad.src[0] = lw_tile_ap(dq, (int)rt, 0, TRNC_F32, 1, &f->E);
  if (add) ad.src[1] = lw_tile_ap(k->acc, (int)rt, t->i * f->E * 4, TRNC_F32, 1, &f->E);
  ad.dst = lw_tile_ap(k->acc, (int)rt, t->i * f->E * 4, TRNC_F32, 1, &f->E);
  k->acc_set[t->i] = true;
  return fa_emit(L, &ad, dq, add ? k->acc : NULL, NULL, k->acc, NULL);
}

/* rows x E fp32 of src (PSUM or SBUF at byte offset off) times `scale` into
 * the output dtype, stored at element eoff of tv (rows of stride rs); an
 * unwritten accumulator (no query sees these keys) stores zeros. */
static trnc_status store(fb *f, lw_tile *src, int64_t off, bool set, float scale, const lw_tv *tv, int64_t eoff,
                         int64_t rows) {
  trnc_status st;
  if (tv->buffer < 0) return TRNC_OK; /* an unused gradient */
  lw_tile *o = lw_pool_next(&f->ev);
  trnc_nc_instr in = lw_instr(set ? TRNC_NC_OP_ACTIVATION : TRNC_NC_OP_MEMSET, TRNC_NC_SCALAR);
  in.act = TRNC_NC_ACT_IDENTITY;
  in.imm[0] = set ? scale : 0.0f;
  if (set) in.src[0] = lw_tile_ap(src, (int)rows, off, TRNC_F32, 1, &f->E);
  if (!set) in.engine = TRNC_NC_GPSIMD;
  in.dst = lw_tile_ap(o, (int)rows, 0, tv->t.dtype, 1, &f->E);
  if ((st = fa_emit(f->L, &in, set ? src : NULL, NULL, NULL, o, NULL))) return st;
  trnc_nc_instr d = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
  d.src[0] = in.dst;
  d.dst = fa_hbm(tv->buffer, tv->t.dtype, eoff, rows, tv->t.stride[2], f->E);
  return fa_emit(f->L, &d, o, NULL, NULL, NULL, NULL);
}

/* Keys of block k a query tile t0 sees (0: none; causal, top-left). */
static int64_t seen(const fb *f, const fb_blk *k, int64_t q0, int64_t rt) {
  if (!f->causal) return k->w;
  /* whole 128-key chunks: keys past the tile's last row within its last
   * chunk are masked by the diagonal block (P = 0), so every chunk
   * accumulator is written on all its partitions once started */
  int64_t last = q0 + rt - 1;
  return last < k->k0 ? 0 : fa_min(k->w, (last + 1 - k->k0 + 127) / 128 * 128);
}

static trnc_status fb_run(fb *f) {
  trnc_status st;
  int64_t ntq = f->G * f->nq; /* query tiles per key/value head */
  bool *acc_set = trnc_arena_array(&f->L->arena, (size_t)ntq, sizeof *acc_set);
  if (!acc_set) return lw_fail(f->L, f->n, TRNC_ERR_NOMEM, "out of memory in flash attention backward");
  int64_t nh = f->B * f->Hk;
  if ((st = load_head(f, 0, 0, &f->kt.tiles[0], &f->vt.tiles[0], &f->kr.tiles[0]))) return st;
  for (int64_t hi = 0; hi < nh; hi++) {
    int64_t b = hi / f->Hk, hk = hi % f->Hk;
    if (hi + 1 < nh && (st = load_head(f, (hi + 1) / f->Hk, (hi + 1) % f->Hk, &f->kt.tiles[(hi + 1) % 2],
                                       &f->vt.tiles[(hi + 1) % 2], &f->kr.tiles[(hi + 1) % 2])))
      return st;
    fb_blk k;
    memset(&k, 0, sizeof k);
    k.kt = &f->kt.tiles[hi % 2], k.vt = &f->vt.tiles[hi % 2], k.kr = &f->kr.tiles[hi % 2];
    k.dl = lw_pool_next(&f->stat), k.nl = lw_pool_next(&f->stat), k.acc = lw_pool_next(&f->acc);
    k.acc_set = acc_set;
    memset(acc_set, 0, (size_t)ntq * sizeof *acc_set);
    for (int64_t i = 0; i < ntq; i++) {
      int64_t q0 = i % f->nq * 128;
      if ((st = prologue(f, b, hk * f->G + i / f->nq, q0, fa_min(128, f->Lq - q0), i, k.dl, k.nl))) return st;
    }
    for (k.k0 = 0; k.k0 < f->S; k.k0 += FB_BLOCK) {
      k.w = fa_min(FB_BLOCK, f->S - k.k0);
      k.nch = (k.w + 127) / 128;
      for (int x = 0; x < k.nch; x++) {
        k.dk[x] = lw_pool_next(&f->kv), k.dv[x] = lw_pool_next(&f->kv);
        k.started[x] = false;
      }
      /* tile n: stage 1 of n, stage 2 of n - FB_LAG2, stage 3 of n - FB_LAG3
       * (each reads what the engines before it produce: P, then dS, then
       * dS^T, the DMA transpose that comes last) */
      fb_tile pend[FB_DEPTH];
      int64_t np = 0, n2 = 0, n3 = 0;
      for (int64_t i = 0; i <= ntq; i++) {
        if (i < ntq) {
          int64_t q0 = i % f->nq * 128, rt = fa_min(128, f->Lq - q0), w = seen(f, &k, q0, rt);
          if (!w) continue;
          fb_tile *t = &pend[np++ % FB_DEPTH];
          *t = (fb_tile){b, hk * f->G + i / f->nq, i, q0, rt, w, NULL, NULL, NULL, NULL, NULL};
          if ((st = stage1(f, &k, t))) return st;
        }
        bool drain = i == ntq;
        for (; n2 < np && (drain || np - n2 > FB_LAG2); n2++)
          if ((st = stage2(f, &k, &pend[n2 % FB_DEPTH]))) return st;
        for (; n3 < np && (drain || np - n3 > FB_LAG3); n3++)
          if ((st = stage3(f, &k, &pend[n3 % FB_DEPTH]))) return st;
      }
      for (int x = 0; x < k.nch; x++) {
        int64_t k0 = k.k0 + x * 128, kn = fa_min(128, f->S - k0);
        if ((st = store(f, k.dk[x], 0, k.started[x], f->scale, f->dk, at(f->dk, b, hk, k0), kn)) ||
            (st = store(f, k.dv[x], 0, k.started[x], 1.0f, f->dv, at(f->dv, b, hk, k0), kn)))
          return st;
      }
    }
    for (int64_t i = 0; i < ntq; i++) {
      int64_t q0 = i % f->nq * 128, h = hk * f->G + i / f->nq;
      if ((st = store(f, k.acc, i * f->E * 4, acc_set[i], f->scale, f->dq, at(f->dq, b, h, q0),
                      fa_min(128, f->Lq - q0))))
        return st;
    }
  }
  return TRNC_OK;
}

static trnc_status fb_pools(fb *f) {
  lw *L = f->L;
  int64_t nkt = (f->S + 127) / 128, ntq = f->G * f->nq;
  trnc_status st;
  if ((st = lw_pool_init(L, &f->sp, TRNC_NC_MEM_PSUM, FB_BLOCK * 4, 2)) ||
      (st = lw_pool_init(L, &f->dpp, TRNC_NC_MEM_PSUM, FB_BLOCK * 4, 2)) ||
      (st = lw_pool_init(L, &f->kv, TRNC_NC_MEM_PSUM, f->E * 4, 2 * FB_CH)) ||
      (st = lw_pool_init(L, &f->dqp, TRNC_NC_MEM_PSUM, f->E * 4, 2)) ||
      (st = lw_pool_init(L, &f->kt, TRNC_NC_MEM_SBUF, f->S * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->vt, TRNC_NC_MEM_SBUF, f->S * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->kr, TRNC_NC_MEM_SBUF, nkt * f->E * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->qt, TRNC_NC_MEM_SBUF, 128 * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->dot, TRNC_NC_MEM_SBUF, 128 * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->qr, TRNC_NC_MEM_SBUF, f->E * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->dor, TRNC_NC_MEM_SBUF, f->E * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->p, TRNC_NC_MEM_SBUF, FB_BLOCK * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->dpm, TRNC_NC_MEM_SBUF, FB_BLOCK * 4, 2)) ||
      (st = lw_pool_init(L, &f->ds, TRNC_NC_MEM_SBUF, FB_BLOCK * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->dst, TRNC_NC_MEM_SBUF, FB_BLOCK * f->esz, FB_DEPTH)) ||
      (st = lw_pool_init(L, &f->pro, TRNC_NC_MEM_SBUF, f->E * 4, 6)) ||
      (st = lw_pool_init(L, &f->ev, TRNC_NC_MEM_SBUF, f->E * 4, 4)) ||
      (st = lw_pool_init(L, &f->acc, TRNC_NC_MEM_SBUF, ntq * f->E * 4, 2)) ||
      (st = lw_pool_init(L, &f->stat, TRNC_NC_MEM_SBUF, ntq * 4, 4)))
    return st;
  return f->causal ? fa_causal_tiles(L, f->mask_dt, &f->ident, &f->mask) : TRNC_OK;
}

bool kir_attention_bw_handles(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  return n->op == TRNC_OP_SDPA_FLASH_BACKWARD;
}

trnc_status kir_attention_bw_emit(lw *L, const trnc_node *n) {
  const trnc_graph *g = L->g;
  fb f;
  memset(&f, 0, sizeof f);
  f.L = L;
  f.n = n;
  const trnc_type *qt = &g->values[n->args[1].u.ref].type, *kt = &g->values[n->args[2].u.ref].type;
  f.B = qt->shape[0], f.Hq = qt->shape[1], f.Lq = qt->shape[2], f.E = qt->shape[3];
  f.Hk = kt->shape[1], f.S = kt->shape[2];
  f.G = f.Hk ? f.Hq / f.Hk : 1;
  f.nq = (f.Lq + 127) / 128;
  f.scale = (float)trnc_arg_number(&n->args[9], 1.0 / sqrt((double)f.E));
  f.causal = n->args[7].kind == TRNC_ARG_BOOL && n->args[7].u.b;
  f.lse = &L->tv[n->args[5].u.ref];
  f.dq = &L->tv[n->outs[0]], f.dk = &L->tv[n->outs[1]], f.dv = &L->tv[n->outs[2]];
  if (f.B == 0 || f.Hq == 0 || f.Lq == 0 || f.S == 0) return TRNC_OK; /* the shape rule keeps S > 0 */
  f.dt = L->tv[n->args[1].u.ref].t.dtype;
  f.esz = lw_esize(f.dt);
  if (n->args[8].kind == TRNC_ARG_VALUE || f.E > 128 || f.esz != 2 || f.G * f.nq * f.E * 4 > FB_DQ_BYTES ||
      f.S > FB_MAX_PARTS * 128)
    return lw_fail(L, n, TRNC_ERR_INTERNAL,
                   "flash attention backward kept for a form it does not lower (attn_mask, head dim %lld, "
                   "a 4-byte dtype or too many rows): passes/decomp_attention.c should have decomposed it",
                   (long long)f.E);
  trnc_status st;
  if ((st = fa_dense_rows(L, n, 0, &f.dO)) || (st = fa_dense_rows(L, n, 1, &f.q)) ||
      (st = fa_dense_rows(L, n, 2, &f.k)) || (st = fa_dense_rows(L, n, 3, &f.v)) ||
      (st = fa_dense_rows(L, n, 4, &f.o)))
    return st;
  f.mask_dt = f.dt == TRNC_BF16 ? TRNC_BF16 : TRNC_F32;
  if ((st = lw_kernel_begin(L, "flash_attention_backward"))) return st;
  if ((st = fb_pools(&f))) return st;
  return fb_run(&f);
}
