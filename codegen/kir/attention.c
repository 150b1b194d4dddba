/*
 * attention.c — kernels with a sequential axis (kir.h): scaled-dot-product
 * attention forward as one flash-attention kernel
 * (aten._scaled_dot_product_flash_attention_for_cpu, kept whole by
 * passes/decomp_attention.c when the shape rule there picks this kernel: no
 * attn_mask, head dim <= 128, keys and values resident in SBUF).
 *
 * The builder (lw_attention_emit -> build_forward) writes the node as kir
 * over axes [b, hk, g, l, s, e] — batch, key/value head, group member
 * (query head hk G + g: grouped-query attention is an access map with
 * stride 0 along g for keys and values), query row, key (the sequential
 * axis), head dim — with loads through access maps, Q K^T and P V as mmv
 * ops, the causal mask as an affsel, the row max and row sum as reduces
 * over s and the exponential as an act with a per-row bias (the form is
 * printed above build_forward; TRNC_DUMP=kir shows it). The schedule
 * (kir_emit_seq) reads the tensors, scale, mask and dtypes back out of the
 * kernel (match) and emits the hand-scheduled program below; a kernel with
 * a sequential axis of another form is refused with the mismatch named.
 *
 * Shapes: query [B,Hq,L,E], key and value [B,Hk,S,E] (any strides whose
 * last one is 1; others are copied first), Hq = G*Hk: query head h reads
 * key/value head h / G. Output [B,Hq,L,E] in the query's dtype, logsumexp
 * [B,Hq,L] float32.
 *
 * Per key/value head the kernel keeps K^T [E, S] and V [128, S/128 tiles, E]
 * resident in SBUF (double-buffered: head i + 2 loads while head i + 1
 * computes, a few DMAs per round: fa_drip; Q^T loads FA_QAHEAD tiles
 * ahead). Per query tile of 128 rows (queries on partitions; Q^T [E, 128]
 * is the stationary operand) it streams blocks of FA_BLOCK keys, twice:
 *   pass 1  S = Q K^T           TensorE, 512-key matmuls into PSUM (fp32)
 *           causal: S += mask   on the block holding the diagonal, one
 *                               identity matmul (bf16 for bf16 inputs, else
 *                               fp32) adds -3e38 above it; blocks entirely
 *                               above the diagonal are skipped
 *           m = max(m, rowmax S)   VectorE reduce reading PSUM; GpSimd max
 *   pass 2  S again (the last block's is still in PSUM: pass 2 runs the
 *           blocks last to first)
 *           P = exp(scale S - scale m), l += rowsum   ScalarE, PSUM -> SBUF,
 *                               the row sum accumulated by the same
 *                               instruction; GpSimd add
 *           P^T per 128 keys    DMA transpose (2-byte dtypes; the NKI ISA
 *                               allows DMA transpose only for those) or
 *                               TensorE transpose + copy (fp32)
 *           O += P V            TensorE, one PSUM accumulation over every
 *                               block (keys on partitions)
 * and at the end out = O / l, logsumexp = scale m + log l. Knowing the
 * exact row max before any exponential costs a second Q K^T but saves the
 * online softmax's per-block rescaling of O and l, which would load VectorE
 * and ScalarE (the engines that bound this kernel with TensorE: the row max
 * reads every score once on VectorE, the exponentials once on ScalarE).
 * fa_run software-pipelines the passes across tiles and heads (pass 1 of
 * tile t + 1 beside pass 2 of tile t, each PV fa.lag rounds after its
 * exponentials), so TensorE multiplies while the other engines work. P is
 * rounded to the matmul dtype (bf16 for bf16 inputs) as flash kernels do;
 * everything else accumulates in fp32.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/attention.h"

/* The kernel's axes: batch, key/value head, group member (query head
 * hk G + g), query row, key (sequential), head dim. */
enum { A_B, A_HK, A_G, A_L, A_S, A_E, A_N };

/* Keys per block: 2 PSUM banks of fp32 scores, three blocks in flight (6 of
 * the 8 banks: a round of fa_run has two blocks' scores live, pass 1's and
 * pass 2's); the 2 banks left hold the PV accumulators and the fp32
 * transposes. */
#define FA_BLOCK 1024
#define FA_SBUFS 3
/* Rounds between a block's exponentials and its PV (fa_run), at most: covers
 * the ~2 us DMA transpose of P; the kernel's lag (fa.lag, 3 to FA_LAG) is as
 * many as the PSUM accumulators it needs (lag + 3) allow. 5 rather than 3:
 * bf16 T = 4096 E = 128 8 heads 1505 -> 1462 us, causal 922 -> 877 us. */
#define FA_LAG 5
#define FA_MIN_LAG 3
/* Query tiles alive at once: pass 1's, pass 2's and those whose PVs are
 * still pending (up to FA_LAG + 1 one-block tiles). */
#define FA_RING (FA_LAG + 4)
/* Query tiles whose Q^T loads ahead of their pass 1 (tile_begin): fewer
 * than FA_RING - 1, the slots pass 1 and pass 2 leave. */
#define FA_QAHEAD 5
/* Output tiles O / l awaiting their store: a VectorE divide into a tile
 * whose previous store (a ~2 us DMA behind the queue's P^T transposes) has
 * not finished holds up VectorE, so more than the two of a double buffer
 * (bf16 T = 4096 E = 128 8 heads causal 779 -> 772 us). */
#define FA_OFIN 8

/* Most parts of one grouped write (keys of a head: S <= 8192 by the shape
 * rule of passes/decomp_attention.c; a block's P^T: FA_BLOCK / 128). */
#define FA_MAX_PARTS 64

typedef struct fa {
  lw *L;
  const trnc_node *n;
  const kir_tensor *q, *k, *v, *out, *lse; /* lse NULL: not stored */
  trnc_dtype out_dt;
  int64_t B, Hq, Hk, Lq, S, E;
  float scale;
  bool causal;
  trnc_dtype dt;    /* matmul dtype: the inputs' */
  int64_t esz;
  bool dma_t;       /* P^T, K^T and Q^T by DMA transpose (2-byte dtypes) */
  int lag;          /* rounds between exponentials and PV (FA_LAG) */
  lw_pool kt, vt, qt, stage, sp, op, tp, p, pt, ofin, stat, small;
  lw_tile *ident, *mask; /* [128, 128] identity and causal mask */
  trnc_dtype mask_dt;    /* theirs: bf16 (holds -3e38, at the bf16 matmul rate) or fp32 */
  struct fa_drip *drip;  /* a key/value head's loads still to issue */
  lw_tile *pend[2];      /* score tiles of pass 1's last blocks not yet reused by pass 2 */
  lw_tile *hot;          /* the score tile pass 2 reused last (in round hot_round) */
  int64_t round, hot_round; /* fa_run's current round */
  int drip_per_round;    /* how many of them each round of fa_run issues */
} fa;

/* The DMAs of one key/value head's K^T and V (2-byte dtypes), issued a few
 * per round of fa_run over the previous head's compute rather than all at
 * once: the DMA queues run in order, so a whole head's 2 S / 128 DMAs
 * issued together would hold the P^T transposes queued behind them (bf16
 * T = 4096 E = 128 8 heads: ~10 us of every engine idle per head). Each
 * part waits only for the readers of the buffer's previous head (as
 * lw_emit_split); readers of the buffer wait for every part. */
typedef struct fa_drip {
  trnc_nc_instr in[2 * FA_MAX_PARTS];
  uint8_t which[2 * FA_MAX_PARTS];      /* 0: K^T tile, 1: V tile */
  lw_tile *dst[2];
  lw_tile before[2];          /* the tiles' state before the first part */
  uint32_t writers[2][LW_QUEUES];
  int n, next;
} fa_drip;

#define min64 fa_min

trnc_nc_ap fa_hbm(int32_t buffer, trnc_dtype dt, int64_t off, int64_t rows, int64_t rs, int64_t cols) {
  trnc_nc_ap a;
  memset(&a, 0, sizeof a);
  a.mem = TRNC_NC_MEM_HBM;
  a.dtype = (uint8_t)dt;
  a.buffer = buffer;
  a.offset = off * lw_esize(dt);
  a.partitions = (int32_t)rows;
  a.partition_stride = rs;
  a.nfree = 1;
  a.free[0].stride = 1;
  a.free[0].count = cols;
  return a;
}

/* HBM access pattern of `rows` rows of tensor T from element off. */
static trnc_nc_ap hbm(const kir_tensor *T, int64_t off, int64_t rows, int64_t rs, int64_t cols) {
  return fa_hbm(T->buffer, T->dtype, off, rows, rs, cols);
}

/* Element offset of tensor T at batch b, key/value head hk, group member g
 * and index `row` of axis `ax` (queries A_L or keys A_S). */
static int64_t at(const kir_tensor *T, int64_t b, int64_t hk, int64_t g, int ax, int64_t row) {
  return T->offset + b * T->stride[A_B] + hk * T->stride[A_HK] + g * T->stride[A_G] + row * T->stride[ax];
}

trnc_status fa_emit(lw *L, trnc_nc_instr *in, lw_tile *r0, lw_tile *r1, lw_tile *r2, lw_tile *w0,
                    lw_tile *w1) {
  lw_tile *rd[3], *wr[2];
  int nr = 0, nw = 0;
  if (r0) rd[nr++] = r0;
  if (r1) rd[nr++] = r1;
  if (r2) rd[nr++] = r2;
  if (w0) wr[nw++] = w0;
  if (w1) wr[nw++] = w1;
  return lw_emit(L, in, rd, nr, wr, nw);
}

static trnc_status emit1(fa *f, trnc_nc_instr *in, lw_tile *r0, lw_tile *r1, lw_tile *r2, lw_tile *w0, lw_tile *w1) {
  return fa_emit(f->L, in, r0, r1, r2, w0, w1);
}

trnc_nc_ap fa_col(const lw_tile *t, int64_t np, int64_t off) {
  int64_t one = 1;
  return lw_tile_ap(t, (int)np, off, TRNC_F32, 1, &one);
}

static trnc_nc_ap col(const lw_tile *t, int64_t np) { return fa_col(t, np, 0); }

/* acc = acc alu part over rt rows of [rt, 1] columns (GpSimd). */
static trnc_status fold_col(fa *f, int alu, lw_tile *acc, lw_tile *part, int64_t rt) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
  in.alu0 = (uint8_t)alu;
  in.src[0] = col(acc, rt);
  in.src[1] = col(part, rt);
  in.dst = col(acc, rt);
  return emit1(f, &in, acc, part, NULL, acc, NULL);
}

/* rows x E of tv from element off (row stride rs) into dst as [E, rows] at
 * byte offset doff: a DMA transpose for 2-byte dtypes, else a load and a
 * TensorE transpose through PSUM. */
static trnc_status load_t(fa *f, lw_tile *dst, int64_t doff, const kir_tensor *tv, int64_t off, int64_t rows,
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

/* One pending part of the drip (fa_drip). */
static trnc_status drip_one(fa *f) {
  fa_drip *d = f->drip;
  int i = d->next++, w = d->which[i];
  lw_tile *t = d->dst[w];
  *t = d->before[w];
  d->in[i].engine = (uint8_t)lw_dma_queue(f->L);
  trnc_status st = lw_emit(f->L, &d->in[i], NULL, 0, &t, 1);
  if (st) return st;
  for (int r = 0; r < LW_QUEUES; r++)
    if (t->writer_count[r]) d->writers[w][r] = t->writer_count[r];
  memcpy(t->writer_count, d->writers[w], sizeof d->writers[w]);
  memset(t->reader_count, 0, sizeof t->reader_count);
  return TRNC_OK;
}

/* Issues up to n pending parts of the drip (n < 0: all of them). */
static trnc_status drip(fa *f, int n) {
  trnc_status st = TRNC_OK;
  while (!st && f->drip && f->drip->next < f->drip->n && n-- != 0) st = drip_one(f);
  return st;
}

/* K^T and V of head (b, hk) into kt [E, S] and vt [128, tiles, E]: each
 * 128-key part on its own DMA queue (fp32 K^T: through TensorE). later
 * (2-byte dtypes): into the drip, issued by fa_run a few per round. */
static trnc_status load_kv(fa *f, int64_t b, int64_t hk, lw_tile *kt, lw_tile *vt, bool later) {
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
      kin[n].src[0] = hbm(f->k, at(f->k, b, hk, 0, A_S, k0), kr, f->k->stride[A_S], f->E);
    } else if ((st = load_t(f, kt, k0 * f->esz, f->k, at(f->k, b, hk, 0, A_S, k0), kr, f->k->stride[A_S]))) {
      return st;
    }
    vin[n] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
    vin[n].dst = lw_tile_ap(vt, (int)kr, (k0 / 128) * f->E * f->esz, f->dt, 1, &f->E);
    vin[n].src[0] = hbm(f->v, at(f->v, b, hk, 0, A_S, k0), kr, f->v->stride[A_S], f->E);
  }
  if (later && f->dma_t) {
    fa_drip *d = f->drip;
    if ((st = drip(f, -1))) return st;
    memset(d, 0, sizeof *d);
    d->dst[0] = kt, d->dst[1] = vt, d->before[0] = *kt, d->before[1] = *vt;
    for (int i = 0; i < n; i++) { /* in key order: K^T and V of the first keys first */
      d->in[d->n] = kin[i], d->which[d->n++] = 0;
      d->in[d->n] = vin[i], d->which[d->n++] = 1;
    }
    return TRNC_OK;
  }
  if (f->dma_t && (st = lw_emit_split(f->L, kin, n, NULL, 0, kt))) return st;
  return lw_emit_split(f->L, vin, n, NULL, 0, vt);
}

/* One query tile: 128 (or fewer) rows of query head h. */
typedef struct qtile {
  int64_t b, hk, g, q0, rt, kend, nblk;
  lw_tile *kt, *vt;          /* its key/value head's resident tiles */
  lw_tile *qt;               /* Q^T [E, rt] */
  lw_tile *m, *nb, *l;       /* row max of the raw scores, -scale m, row sum */
  lw_tile *o;                /* PSUM [rt, E]: P V accumulated over every block */
  lw_tile *s_last;           /* pass 1's scores of the last block, reused by pass 2 */
  int64_t w_last;
  bool last_of_head;         /* the last tile of its key/value head */
} qtile;

/* The next PSUM score tile: the pool's next one that holds no last block
 * waiting for its pass-2 reuse (f->pend) and, when another one is free,
 * not the one whose scores pass 2 began exponentiating in this round or
 * the last (f->hot): that exponential waits for its tile's row max, so a
 * matmul into its tile would wait for the whole chain (scores, row max,
 * exponential) of the tile before. The plain rotation put the last blocks
 * of consecutive two-block tiles in one PSUM tile (bf16 T = 4096 E = 128
 * 8 heads causal 774 -> 772 us). Tiles in f->pend are never handed out:
 * pass 2 reads them after these allocations. */
static lw_tile *score_tile(fa *f) {
  lw_pool *p = &f->sp;
  for (int strict = 1; strict >= 0; strict--)
    for (int i = 0; i < p->n; i++) {
      lw_tile *c = &p->tiles[(p->next + i) % p->n];
      if (c == f->pend[0] || c == f->pend[1] || (strict && c == f->hot && f->round - f->hot_round <= 1)) continue;
      p->next = (p->next + i + 1) % p->n;
      return c;
    }
  return NULL;
}

/* Scores of key block j of t: S [rt, w] = Q K^T (+ the causal mask on the
 * block holding the diagonal) into the next PSUM score tile. */
static lw_tile *scores(fa *f, const qtile *t, int64_t j, int64_t *w, trnc_status *st) {
  int64_t k0 = j * FA_BLOCK, rt = t->rt;
  *w = min64(FA_BLOCK, t->kend - k0);
  lw_tile *s = score_tile(f);
  if (!s) {
    *st = lw_fail(f->L, f->n, TRNC_ERR_INTERNAL, "flash attention: no free PSUM score tile");
    return NULL;
  }
  for (int64_t c = 0; c < *w && !*st; c += FA_MM_N) {
    int64_t cw = min64(FA_MM_N, *w - c);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.dst = lw_tile_ap(s, (int)rt, c * 4, TRNC_F32, 1, &cw);
    mm.src[0] = lw_tile_ap(t->qt, (int)f->E, 0, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(t->kt, (int)f->E, (k0 + c) * f->esz, f->dt, 1, &cw);
    *st = emit1(f, &mm, t->qt, t->kt, NULL, s, NULL);
  }
  if (!*st && f->causal && t->q0 >= k0 && t->q0 < k0 + *w) {
    /* keys q0.. of the diagonal sub-block: S[p, j] += (j > p) ? -3e38 : 0 */
    int64_t dw = min64(128, k0 + *w - t->q0);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = 1;
    mm.dst = lw_tile_ap(s, (int)rt, (t->q0 - k0) * 4, TRNC_F32, 1, &dw);
    mm.src[0] = lw_tile_ap(f->ident, (int)rt, 0, f->mask_dt, 1, &rt);
    mm.src[1] = lw_tile_ap(f->mask, (int)rt, 0, f->mask_dt, 1, &dw);
    *st = emit1(f, &mm, f->ident, f->mask, NULL, s, NULL);
  }
  return s;
}

/* Pass 1, block j: m = max(m, rowmax S) (VectorE reduce reading PSUM,
 * GpSimd max); after the last block nb = -scale m. */
static trnc_status pass_max(fa *f, qtile *t, int64_t j) {
  trnc_status st = TRNC_OK;
  int64_t w, rt = t->rt;
  lw_tile *s = scores(f, t, j, &w, &st);
  if (st) return st;
  lw_tile *mb = j == 0 ? t->m : lw_pool_next(&f->small);
  trnc_nc_instr red = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
  red.alu0 = TRNC_NC_ALU_MAX;
  red.mode = 1;
  red.src[0] = lw_tile_ap(s, (int)rt, 0, TRNC_F32, 1, &w);
  red.dst = col(mb, rt);
  if ((st = emit1(f, &red, s, NULL, NULL, mb, NULL))) return st;
  bool last = j == t->nblk - 1;
  if (j > 0 && !last && (st = fold_col(f, TRNC_NC_ALU_MAX, t->m, mb, rt))) return st;
  if (!last) return TRNC_OK;
  t->s_last = s, t->w_last = w;
  f->pend[f->pend[0] ? 1 : 0] = s;
  trnc_nc_instr neg = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_GPSIMD);
  neg.alu0 = TRNC_NC_ALU_MUL;
  neg.alu1 = TRNC_NC_ALU_BYPASS;
  neg.imm[0] = -f->scale;
  neg.src[0] = col(t->m, rt);
  neg.dst = col(t->nb, rt);
  if (j > 0) { /* the last fold and the negation in one: nb = max(m, mb) * -scale (m itself stays unread) */
    neg.alu0 = TRNC_NC_ALU_MAX;
    neg.src[1] = col(mb, rt);
    neg.alu1 = TRNC_NC_ALU_MUL;
    neg.imm[1] = -f->scale;
  }
  return emit1(f, &neg, t->m, j > 0 ? mb : NULL, NULL, t->nb, NULL);
}

/* A block between pass 2's exponentials and its PV. */
typedef struct fa_pv {
  qtile *t;
  int64_t j, w;
  lw_tile *p, *pt;
  int64_t round;             /* fa_run's round that issued it */
} fa_pv;

/* Pass 2, block j (last to first: the last block's scores are still in
 * PSUM from pass 1, which saves recomputing them; score_tile keeps them
 * until then): P =
 * exp(scale S - scale m) with its row sum (ScalarE, PSUM -> SBUF), l +=
 * rowsum (GpSimd), P^T by DMA transpose (2-byte dtypes: one DMA per 128
 * keys, in parallel; fp32: TensorE in pass_pv). */
static trnc_status pass_exp(fa *f, qtile *t, int64_t j, fa_pv *out) {
  trnc_status st = TRNC_OK;
  int64_t w = t->w_last, rt = t->rt;
  bool first = j == t->nblk - 1; /* pass 2 runs the blocks last to first */
  lw_tile *s = first ? t->s_last : scores(f, t, j, &w, &st);
  if (st) return st;
  if (first) {
    for (int i = 0; i < 2; i++)
      if (f->pend[i] == s) f->pend[i] = NULL;
    f->hot = s, f->hot_round = f->round;
  }
  lw_tile *p = lw_pool_next(&f->p), *rs = first ? t->l : lw_pool_next(&f->small);
  trnc_nc_instr ex = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ex.act = TRNC_NC_ACT_EXP;
  ex.imm[0] = f->scale;
  ex.src[0] = lw_tile_ap(s, (int)rt, 0, TRNC_F32, 1, &w);
  ex.src[1] = col(t->nb, rt);
  ex.dst = lw_tile_ap(p, (int)rt, 0, f->dt, 1, &w);
  ex.dst2 = col(rs, rt);
  if ((st = emit1(f, &ex, s, t->nb, NULL, p, rs))) return st;
  if (!first && (st = fold_col(f, TRNC_NC_ALU_ADD, t->l, rs, rt))) return st;
  *out = (fa_pv){t, j, w, p, lw_pool_next(&f->pt), 0};
  if (!f->dma_t) return TRNC_OK;
  trnc_nc_instr ds[FA_BLOCK / 128];
  int nd = 0;
  for (int64_t c = 0; c < w; c += 128, nd++) {
    int64_t sw = min64(128, w - c);
    ds[nd] = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(f->L));
    ds[nd].mode = TRNC_NC_DMA_TRANSPOSE;
    ds[nd].src[0] = lw_tile_ap(p, (int)rt, c * f->esz, f->dt, 1, &sw);
    ds[nd].dst = lw_tile_ap(out->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
  }
  return lw_emit_split(f->L, ds, nd, &p, 1, out->pt);
}

/* PV of a pass-2 block: (fp32: P^T on TensorE,) O += P^T' V in PSUM. */
static trnc_status pass_pv(fa *f, const fa_pv *b) {
  trnc_status st;
  qtile *t = b->t;
  int64_t rt = t->rt, w = b->w, k0 = b->j * FA_BLOCK;
  if (!f->dma_t)
    for (int64_t c = 0; c < w; c += 128) {
      int64_t sw = min64(128, w - c);
      lw_tile *tp = lw_pool_next(&f->tp);
      trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
      tr.src[0] = lw_tile_ap(b->p, (int)rt, c * f->esz, f->dt, 1, &sw);
      tr.dst = lw_tile_ap(tp, (int)sw, 0, TRNC_F32, 1, &rt);
      if ((st = emit1(f, &tr, b->p, NULL, NULL, tp, NULL))) return st;
      trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
      cp.src[0] = tr.dst;
      cp.dst = lw_tile_ap(b->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
      if ((st = emit1(f, &cp, tp, NULL, NULL, b->pt, NULL))) return st;
    }
  for (int64_t c = 0; c < w; c += 128) {
    int64_t sw = min64(128, w - c);
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = b->j < t->nblk - 1 || c > 0; /* the last block's PV comes first */
    mm.dst = lw_tile_ap(t->o, (int)rt, 0, TRNC_F32, 1, &f->E);
    mm.src[0] = lw_tile_ap(b->pt, (int)sw, c * f->esz, f->dt, 1, &rt);
    mm.src[1] = lw_tile_ap(t->vt, (int)sw, ((k0 + c) / 128) * f->E * f->esz, f->dt, 1, &f->E);
    if ((st = emit1(f, &mm, b->pt, t->vt, NULL, t->o, NULL))) return st;
  }
  return TRNC_OK;
}

/* out = O / l (VectorE, PSUM -> SBUF in the output dtype) and logsumexp =
 * scale m + log l of query tile t. */
static trnc_status finish(fa *f, qtile *t) {
  lw *L = f->L;
  trnc_status st;
  int64_t rt = t->rt;
  lw_tile *of = lw_pool_next(&f->ofin);
  trnc_nc_instr dv = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  dv.alu0 = TRNC_NC_ALU_DIV;
  dv.alu1 = TRNC_NC_ALU_BYPASS;
  dv.src[0] = lw_tile_ap(t->o, (int)rt, 0, TRNC_F32, 1, &f->E);
  dv.src[1] = col(t->l, rt);
  dv.dst = lw_tile_ap(of, (int)rt, 0, f->out_dt, 1, &f->E);
  if ((st = emit1(f, &dv, t->o, t->l, NULL, of, NULL))) return st;
  trnc_nc_instr sd = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  sd.src[0] = dv.dst;
  sd.dst = hbm(f->out, at(f->out, t->b, t->hk, t->g, A_L, t->q0), rt, f->out->stride[A_L], f->E);
  if ((st = emit1(f, &sd, of, NULL, NULL, NULL, NULL))) return st;
  if (!f->lse) return TRNC_OK;
  lw_tile *ll = lw_pool_next(&f->small), *ls = lw_pool_next(&f->small);
  trnc_nc_instr lg = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  lg.act = TRNC_NC_ACT_LOG;
  lg.imm[0] = 1.0f;
  lg.src[0] = col(t->l, rt);
  lg.dst = col(ll, rt);
  if ((st = emit1(f, &lg, t->l, NULL, NULL, ll, NULL))) return st;
  /* log l - nb: nb = m * -scale, so this is scale m + log l to the bit */
  trnc_nc_instr fm = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
  fm.alu0 = TRNC_NC_ALU_SUB;
  fm.src[0] = col(ll, rt);
  fm.src[1] = col(t->nb, rt);
  fm.dst = col(ls, rt);
  if ((st = emit1(f, &fm, ll, t->nb, NULL, ls, NULL))) return st;
  const kir_tensor *lt = f->lse;
  trnc_nc_instr sl = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  sl.src[0] = fm.dst;
  sl.dst = hbm(lt, at(lt, t->b, t->hk, t->g, A_L, t->q0), rt, lt->stride[A_L], 1);
  return emit1(f, &sl, ls, NULL, NULL, NULL, NULL);
}

/* Key blocks of query tile q0 (causal, top-left aligned: row i sees keys
 * 0..i, so blocks past the tile's last row are skipped). */
static int64_t kend_of(const fa *f, int64_t q0) {
  return f->causal ? min64(f->S, q0 + min64(128, f->Lq - q0)) : f->S;
}

/* First query row of query tile number i (over batch, key/value head,
 * group member, rows). Causal: the first and the last query head's tiles
 * run last row first, so the kernel starts with its longest tiles (the
 * pipeline fills at once) and ends on its shortest (one block of 128 keys)
 * rather than its longest, whose passes nothing else would overlap: bf16
 * T = 4096 E = 128 8 heads 765 -> 758 us. */
static int64_t q_row0(const fa *f, int64_t i) {
  int64_t nq = (f->Lq + 127) / 128, q = i % nq, ntiles = f->B * f->Hq * nq;
  if (f->causal && (i < nq || i >= ntiles - nq)) q = nq - 1 - q;
  return q * 128;
}

/* Q^T of query tile number k (over batch, key/value head, group member,
 * rows) into its slot's tile of the qt pool. */
static trnc_status load_q(fa *f, int64_t k) {
  int64_t nq = (f->Lq + 127) / 128, G = f->Hq / f->Hk;
  int64_t hi = k / (nq * G), g = k / nq % G, q0 = q_row0(f, k);
  int64_t b = hi / f->Hk, hk = hi % f->Hk;
  return load_t(f, &f->qt.tiles[k % FA_RING], 0, f->q, at(f->q, b, hk, g, A_L, q0), min64(128, f->Lq - q0),
                f->q->stride[A_L]);
}

/* Slot t for query tile number i; Q^T of tile i + FA_QAHEAD starts
 * loading, so it is there when that tile begins (a ~2 us DMA; causal
 * tiles of one 128-key block take less than that each). */
static trnc_status tile_begin(fa *f, int64_t i, qtile *t, int64_t ntiles) {
  int64_t nq = (f->Lq + 127) / 128, G = f->Hq / f->Hk;
  if (i + FA_QAHEAD < ntiles) {
    trnc_status st = load_q(f, i + FA_QAHEAD);
    if (st) return st;
  }
  int64_t hi = i / (nq * G), g = i / nq % G;
  memset(t, 0, sizeof *t);
  t->b = hi / f->Hk, t->hk = hi % f->Hk, t->g = g;
  t->q0 = q_row0(f, i), t->rt = min64(128, f->Lq - t->q0);
  t->kend = kend_of(f, t->q0);
  t->nblk = (t->kend + FA_BLOCK - 1) / FA_BLOCK;
  t->kt = &f->kt.tiles[hi % 2], t->vt = &f->vt.tiles[hi % 2];
  t->qt = &f->qt.tiles[i % FA_RING];
  t->m = lw_pool_next(&f->stat), t->nb = lw_pool_next(&f->stat), t->l = lw_pool_next(&f->stat);
  t->o = lw_pool_next(&f->op);
  t->last_of_head = (i + 1) % (ntiles / (f->B * f->Hk)) == 0;
  return TRNC_OK;
}

/* The PV of pass-2 block b, and what follows it: the tile's output after
 * its last block; after the last block of head h's last tile, the load of
 * head h + 2 into head h's buffer. */
static trnc_status pv_done(fa *f, const fa_pv *b) {
  trnc_status st = pass_pv(f, b);
  if (st || b->j > 0) return st;
  if ((st = finish(f, b->t))) return st;
  int64_t hi = b->t->b * f->Hk + b->t->hk + 2;
  if (!b->t->last_of_head || hi >= f->B * f->Hk) return TRNC_OK;
  return load_kv(f, hi / f->Hk, hi % f->Hk, &f->kt.tiles[hi % 2], &f->vt.tiles[hi % 2], true);
}

/* Two passes per query tile, software-pipelined over all tiles in rounds:
 * a round issues pass 1 (scores, row max) of one block of the tile after
 * the current one, pass 2 (scores, exponentials, P^T) of one block of the
 * current tile, and the PV of the pass-2 block issued fa.lag rounds
 * earlier, so TensorE multiplies while VectorE takes row maxima, ScalarE
 * computes exponentials and the DMA queues transpose P (each engine queue
 * runs in order; lw_emit adds the semaphores). With the exact row max known
 * before any exponential, the PV products of all blocks accumulate in one
 * PSUM tile: no rescaling. Keys and values of head i + 2 load into the
 * buffer of head i once every PV of head i has been issued (pv_done), one
 * head ahead of their use. */
static trnc_status fa_run(fa *f) {
  int64_t ntiles = f->B * f->Hk * (f->Hq / f->Hk) * ((f->Lq + 127) / 128);
  int64_t per_head = ntiles / (f->B * f->Hk);
  qtile ring[FA_RING];
  fa_pv pq[FA_LAG + 2];
  int qh = 0, nq = 0;
  int64_t tr = 0, jr = 0, te = 0, je = 0, round = 0; /* pass-1 and pass-2 cursors */
  trnc_status st;
  /* the first tile's Q^T ahead of the first heads' keys and values, which
   * arrive in key order: the first block can start before the rest */
  if ((st = load_q(f, 0))) return st;
  /* the second head's keys and values over the first head's rounds */
  for (int64_t hi = 0; hi < 2 && hi < f->B * f->Hk; hi++)
    if ((st = load_kv(f, hi / f->Hk, hi % f->Hk, &f->kt.tiles[hi], &f->vt.tiles[hi], hi > 0))) return st;
  for (int64_t k = 1; k < FA_QAHEAD && k < ntiles; k++)
    if ((st = load_q(f, k))) return st;
  while (te < ntiles || nq) {
    bool did = false;
    /* pass 1 of tile tr (at most one tile ahead of pass 2) */
    if (tr < ntiles && tr <= te + 1) {
      qtile *t = &ring[tr % FA_RING];
      if (jr == 0) {
        /* a new key/value head hi: every PV of head hi - 2 issued (and
         * with it the load of head hi) */
        int64_t hi = tr / per_head;
        while (tr % per_head == 0 && nq && pq[qh].t->b * f->Hk + pq[qh].t->hk <= hi - 2) {
          fa_pv *b = &pq[qh];
          qh = (qh + 1) % (FA_LAG + 2), nq--;
          if ((st = pv_done(f, b))) return st;
        }
        /* the head's keys and values complete before its first read */
        if (tr % per_head == 0 && (st = drip(f, -1))) return st;
        if ((st = tile_begin(f, tr, t, ntiles))) return st;
      }
      if ((st = pass_max(f, t, jr))) return st;
      if (++jr == t->nblk) jr = 0, tr++;
      did = true;
    }
    /* pass 2 of tile te, once its pass 1 is complete */
    if (te < ntiles && tr > te && nq < f->lag + 1) {
      qtile *t = &ring[te % FA_RING];
      fa_pv *b = &pq[(qh + nq++) % (FA_LAG + 2)];
      if ((st = pass_exp(f, t, t->nblk - 1 - je, b))) return st;
      b->round = round;
      if (++je == t->nblk) je = 0, te++;
      did = true;
    }
    /* the PV of the oldest pass-2 block, f->lag rounds later (or now, when
     * nothing else could be issued) */
    if (nq && (!did || round - pq[qh].round >= f->lag || nq > f->lag)) {
      fa_pv *b = &pq[qh];
      qh = (qh + 1) % (FA_LAG + 2), nq--;
      if ((st = pv_done(f, b))) return st;
    }
    if ((st = drip(f, f->drip_per_round))) return st;
    round++;
    f->round = round;
  }
  return drip(f, -1);
}

/* The largest lag (FA_MIN_LAG..FA_LAG) whose lag + 3 PV accumulators
 * [E] fp32 and (fp32 inputs) two transpose tiles fit the PSUM the score
 * blocks leave (each tile within one bank, as lw_psum places them). */
static int fa_lag(const fa *f) {
  const trnc_nc_target *t = f->L->target;
  int64_t bank = t->psum_bank_bytes, left = t->psum_bytes_per_partition - FA_SBUFS * FA_BLOCK * 4;
  int lag = FA_LAG;
  for (; lag > FA_MIN_LAG; lag--) {
    int64_t off = 0;
    for (int i = 0; i < lag + 3 + (f->dma_t ? 0 : 2); i++) {
      int64_t b = i < lag + 3 ? (f->E * 4 + 3) & ~(int64_t)3 : 128 * 4;
      if (off / bank != (off + b - 1) / bank) off = (off / bank + 1) * bank;
      off += b;
    }
    if (off <= left) break;
  }
  return lag;
}

static trnc_status fa_pools(fa *f) {
  lw *L = f->L;
  int64_t nkt = (f->S + 127) / 128, tb = 128 * 4;
  trnc_status st;
  /* PSUM first: the score blocks start on bank boundaries */
  if ((st = lw_pool_init(L, &f->sp, TRNC_NC_MEM_PSUM, FA_BLOCK * 4, FA_SBUFS)) ||
      (st = lw_pool_init(L, &f->op, TRNC_NC_MEM_PSUM, f->E * 4, f->lag + 3)) ||
      (!f->dma_t && (st = lw_pool_init(L, &f->tp, TRNC_NC_MEM_PSUM, tb, 2))) ||
      (st = lw_pool_init(L, &f->kt, TRNC_NC_MEM_SBUF, f->S * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->vt, TRNC_NC_MEM_SBUF, nkt * f->E * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->qt, TRNC_NC_MEM_SBUF, 128 * f->esz, FA_RING)) ||
      (st = lw_pool_init(L, &f->stage, TRNC_NC_MEM_SBUF, f->E * f->esz, 2)) ||
      (st = lw_pool_init(L, &f->p, TRNC_NC_MEM_SBUF, FA_BLOCK * f->esz, FA_LAG + 2)) ||
      (st = lw_pool_init(L, &f->pt, TRNC_NC_MEM_SBUF, FA_BLOCK * f->esz, FA_LAG + 2)) ||
      (st = lw_pool_init(L, &f->ofin, TRNC_NC_MEM_SBUF, f->E * 4, FA_OFIN)) ||
      (st = lw_pool_init(L, &f->stat, TRNC_NC_MEM_SBUF, 4, 3 * FA_RING)) ||
      /* short-lived [rt, 1] values: a block's row max or row sum, log l */
      (st = lw_pool_init(L, &f->small, TRNC_NC_MEM_SBUF, 4, 16)))
    return st;
  return f->causal ? fa_causal_tiles(L, f->mask_dt, &f->ident, &f->mask) : TRNC_OK;
}

trnc_status fa_causal_tiles(lw *L, trnc_dtype mask_dt, lw_tile **ident, lw_tile **mask) {
  trnc_status st;
  int64_t tb = 128 * 4, c = 128;
  lw_tile *ones = lw_sbuf(L, tb), *zeros = lw_sbuf(L, tb);
  if (!ones || !zeros || !(*ident = lw_sbuf(L, tb)) || !(*mask = lw_sbuf(L, tb))) return L->status;
  for (int i = 0; i < 2; i++) {
    lw_tile *src = i ? zeros : ones, *dst = i ? *mask : *ident;
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    ms.imm[0] = i ? 0.0f : 1.0f;
    ms.dst = lw_tile_ap(src, 128, 0, TRNC_F32, 1, &c);
    if ((st = fa_emit(L, &ms, NULL, NULL, NULL, src, NULL))) return st;
    /* identity: p - j == 0 ? 1 : 0; mask: p - j >= 0 ? 0 : -3e38 */
    trnc_nc_instr as = lw_instr(TRNC_NC_OP_AFFINE_SELECT, TRNC_NC_GPSIMD);
    as.alu0 = i ? TRNC_NC_ALU_GE : TRNC_NC_ALU_EQ;
    as.aff[1] = 1;
    as.aff[2] = -1;
    as.imm[0] = i ? FA_MASK : 0.0f;
    as.src[0] = ms.dst;
    as.dst = lw_tile_ap(dst, 128, 0, mask_dt, 1, &c);
    if ((st = fa_emit(L, &as, src, NULL, NULL, dst, NULL))) return st;
  }
  return TRNC_OK;
}

/* ---- the schedule: kir kernel -> fa ------------------------------------------------ */

/* The op defining value v, NULL if none (or v < 0). */
static const kir_op *def_of(const kir_kernel *k, int v) {
  for (int i = 0; v >= 0 && i < k->nops; i++)
    if (k->ops[i].dst == v) return &k->ops[i];
  return NULL;
}

static bool is(const kir_op *o, int code) { return o && o->code == code; }
#define BIT(a) (1u << (a))

/* The tensor of load value v (it must be a load over `axes`), NULL if not. */
static const kir_tensor *loaded(const kir_kernel *k, int v, uint32_t axes) {
  const kir_op *o = def_of(k, v);
  if (!is(o, KIR_LOAD) || k->values[v].axes != axes) return NULL;
  return &k->tensors[o->tensor];
}

/* Reads the flash-attention form out of kernel k into f (see the builder
 * below for the body it expects); NULL or what does not match. */
static const char *match(const kir_kernel *k, fa *f) {
  if (k->naxes != A_N || k->seq != BIT(A_S) || k->raxes != BIT(A_S)) return "axes are not [b, hk, g, l, s, e]";
  const kir_op *st[2] = {NULL, NULL};
  int nst = 0;
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].code == KIR_STORE) {
      if (nst == 2) return "more than two stores";
      st[nst++] = &k->ops[i];
    }
  if (!nst) return "no store";
  /* out = (mmv(copy(p), v, {s})) / bcast(l) */
  const kir_op *dv = def_of(k, st[0]->src[0]);
  if (!is(dv, KIR_TT) || dv->fn != TRNC_NC_ALU_DIV) return "the output is not O / l";
  const kir_op *pv = def_of(k, dv->src[0]), *lb = def_of(k, dv->src[1]);
  if (!is(pv, KIR_MMV) || pv->raxes != BIT(A_S) || !is(lb, KIR_BCAST)) return "the output is not (P V) / l";
  const kir_op *pc = def_of(k, pv->src[0]), *lr = def_of(k, lb->src[0]);
  if (!is(pc, KIR_COPY) || !is(lr, KIR_REDUCE) || lr->fn != TRNC_NC_ALU_ADD || lr->raxes != BIT(A_S))
    return "P V does not read P in the matmul dtype, or l is not its row sum";
  const kir_op *ex = def_of(k, pc->src[0]);
  if (!is(ex, KIR_ACT) || ex->fn != TRNC_NC_ACT_EXP || lr->src[0] != pc->src[0] || ex->src[1] < 0)
    return "P is not exp(scale S + bias) summed into l";
  const kir_op *nb = def_of(k, ex->src[1]);
  if (!is(nb, KIR_TS) || nb->fn != TRNC_NC_ALU_MUL || nb->fn1 != TRNC_NC_ALU_BYPASS || nb->src[1] >= 0 ||
      nb->imm[0] != -ex->imm[0])
    return "the exponential's bias is not -scale m";
  const kir_op *mx = def_of(k, nb->src[0]);
  if (!is(mx, KIR_REDUCE) || mx->fn != TRNC_NC_ALU_MAX || mx->raxes != BIT(A_S) || mx->src[0] != ex->src[0])
    return "m is not the row max of the scores";
  const kir_op *sc = def_of(k, ex->src[0]);
  f->causal = is(sc, KIR_AFFSEL);
  if (f->causal) {
    for (int a = 0; a < A_N; a++)
      if (sc->coef[a] != (a == A_L ? 1 : a == A_S ? -1 : 0)) return "the mask is not the top-left causal one";
    if (sc->ival != 0 || sc->imm[0] != -INFINITY) return "the mask is not the top-left causal one";
    sc = def_of(k, sc->src[0]);
  }
  if (!is(sc, KIR_MMV) || sc->raxes != BIT(A_E)) return "the scores are not Q K^T over the head dim";
  uint32_t bh = BIT(A_B) | BIT(A_HK), qax = bh | BIT(A_G) | BIT(A_L) | BIT(A_E), kvax = bh | BIT(A_S) | BIT(A_E);
  f->q = loaded(k, sc->src[0], qax), f->k = loaded(k, sc->src[1], kvax), f->v = loaded(k, pv->src[1], kvax);
  if (!f->q || !f->k || !f->v) return "Q, K or V is not a load over its axes";
  f->dt = k->values[pc->dst].dtype;
  if (f->q->dtype != f->dt || f->k->dtype != f->dt || f->v->dtype != f->dt ||
      k->values[sc->src[0]].dtype != f->dt || k->values[sc->src[1]].dtype != f->dt ||
      k->values[pv->src[1]].dtype != f->dt)
    return "Q, K, V and P differ in dtype";
  f->out = &k->tensors[st[0]->tensor];
  f->out_dt = k->values[dv->dst].dtype;
  f->scale = ex->imm[0];
  int n = 13 + f->causal;
  f->lse = NULL;
  if (nst == 2) { /* lse = scale m + log l */
    const kir_op *ad = def_of(k, st[1]->src[0]);
    if (!is(ad, KIR_TT) || ad->fn != TRNC_NC_ALU_ADD) return "the logsumexp is not scale m + log l";
    const kir_op *ms = def_of(k, ad->src[0]), *lg = def_of(k, ad->src[1]);
    if (!is(ms, KIR_TS) || ms->src[0] != nb->src[0] || ms->fn != TRNC_NC_ALU_MUL || ms->imm[0] != f->scale ||
        ms->fn1 != TRNC_NC_ALU_BYPASS || ms->src[1] >= 0 || !is(lg, KIR_ACT) || lg->fn != TRNC_NC_ACT_LOG ||
        lg->src[0] != lb->src[0] || lg->imm[0] != 1.0f || lg->imm[1] != 0.0f || lg->src[1] >= 0)
      return "the logsumexp is not scale m + log l";
    f->lse = &k->tensors[st[1]->tensor];
    n += 4;
  }
  if (k->nops != n) return "ops beyond the flash-attention form";
  const kir_tensor *rows[4] = {f->q, f->k, f->v, f->out};
  for (int i = 0; i < 4; i++)
    if (rows[i]->stride[A_E] != 1 && k->extent[A_E] > 1) return "a head-dim row is not contiguous";
  f->B = k->extent[A_B], f->Hk = k->extent[A_HK], f->Hq = f->Hk * k->extent[A_G];
  f->Lq = k->extent[A_L], f->S = k->extent[A_S], f->E = k->extent[A_E];
  if (f->E > 128) return "head dim over 128";
  if (f->dt != TRNC_F32 && f->dt != TRNC_BF16 && f->dt != TRNC_F16) return "a matmul dtype it does not take";
  return NULL;
}

trnc_status kir_emit_seq(lw *L, const kir_kernel *k) {
  fa f;
  memset(&f, 0, sizeof f);
  f.L = L;
  f.n = k->node;
  const char *bad = match(k, &f);
  if (bad)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kernel %s with a sequential axis has no schedule: %s",
                   k->name ? k->name : "?", bad);
  f.esz = lw_esize(f.dt);
  f.dma_t = f.esz == 2;
  f.mask_dt = f.dt == TRNC_BF16 ? TRNC_BF16 : TRNC_F32;
  trnc_status st;
  if ((st = lw_kernel_begin(L, k->name))) return st;
  f.lag = fa_lag(&f);
  if (!(f.drip = trnc_arena_alloc(&L->arena, sizeof *f.drip)))
    return lw_fail(L, k->node, TRNC_ERR_NOMEM, "out of memory in flash attention");
  memset(f.drip, 0, sizeof *f.drip);
  /* a head's 2 S / 128 load parts spread over the first half of the rounds
   * of the head before (one round per key block of each query tile) */
  int64_t rounds = 0, parts = 2 * ((f.S + 127) / 128);
  for (int64_t q0 = 0; q0 < f.Lq; q0 += 128) rounds += (kend_of(&f, q0) + FA_BLOCK - 1) / FA_BLOCK;
  rounds = rounds * (f.Hq / f.Hk) / 2;
  f.drip_per_round = (int)((parts + (rounds > 1 ? rounds : 1) - 1) / (rounds > 1 ? rounds : 1));
  if ((st = fa_pools(&f))) return st;
  return fa_run(&f);
}

/* ---- the builder: SDPA node -> kir kernel --------------------------------------------- */

trnc_status fa_dense_rows(lw *L, const trnc_node *n, uint32_t arg, lw_tv *out) {
  *out = L->tv[n->args[arg].u.ref];
  if (out->t.stride[3] == 1 || out->t.shape[3] == 1) return TRNC_OK;
  return lw_materialize(L, n, n->args[arg].u.ref, out);
}

/* [B, H, T(, E)] view tv over the kernel's axes: head h = hk G + g for
 * queries (kv: h = hk), the T dim along axis row_ax. */
static int map_heads(kir_kernel *k, const lw_tv *tv, int64_t G, int row_ax, bool kv) {
  int64_t st[KIR_MAX_AXES] = {0};
  const trnc_type *t = &tv->t;
  st[A_B] = t->stride[0];
  st[A_HK] = kv ? t->stride[1] : G * t->stride[1];
  st[A_G] = kv ? 0 : t->stride[1];
  st[row_ax] = t->stride[2];
  if (t->rank == 4) st[A_E] = t->stride[3];
  return kir_tensor_map(k, tv->buffer, t->dtype, t->offset, st);
}

/* The flash-attention form over axes [b, hk, g, l, s, e] (s sequential):
 *   %q = load Q {b,hk,g,l,e}; %k, %v = load K, V {b,hk,s,e}
 *   %s = mmv %q, %k, {e}            (causal: affsel %s, l - s >= 0, -inf)
 *   %m = reduce max, %s, {s};  %nb = ts mul, %m, -scale
 *   %p = act exp, %s, scale, %nb;  %l = reduce add, %p, {s}
 *   %o = mmv (copy %p to the matmul dtype), %v, {s}
 *   store Out, %o / bcast %l;  store Lse, scale %m + log %l */
static trnc_status build_forward(lw *L, const trnc_node *n, const lw_tv *tq, const lw_tv *tk, const lw_tv *tv,
                                 kir_kernel *k) {
  const lw_tv *to = &L->tv[n->outs[0]], *tl = &L->tv[n->outs[1]];
  int64_t B = tq->t.shape[0], Hq = tq->t.shape[1], Hk = tk->t.shape[1];
  int64_t ext[A_N] = {B, Hk, Hq / Hk, tq->t.shape[2], tk->t.shape[2], tq->t.shape[3]};
  float scale = (float)trnc_arg_number(&n->args[6], 1.0 / sqrt((double)ext[A_E]));
  bool causal = n->args[4].kind == TRNC_ARG_BOOL && n->args[4].u.b;
  trnc_dtype dt = tq->t.dtype, F = TRNC_F32;
  kir_init(k, "flash_attention", n, A_N, ext, BIT(A_S));
  k->seq = BIT(A_S);
  uint32_t bh = BIT(A_B) | BIT(A_HK), kv = bh | BIT(A_S) | BIT(A_E);
  int Q = map_heads(k, tq, ext[A_G], A_L, false), K = map_heads(k, tk, 1, A_S, true);
  int V = map_heads(k, tv, 1, A_S, true), O = map_heads(k, to, ext[A_G], A_L, false);
  int Lse = tl->buffer >= 0 ? map_heads(k, tl, ext[A_G], A_L, false) : -1;
  int q = kir_load_axes(k, Q, dt, bh | BIT(A_G) | BIT(A_L) | BIT(A_E));
  int s = kir_mmv(k, q, kir_load_axes(k, K, dt, kv), BIT(A_E));
  if (causal) {
    int32_t c[KIR_MAX_AXES] = {0};
    c[A_L] = 1, c[A_S] = -1;
    s = kir_affsel(k, F, s, 0, c, -INFINITY);
  }
  int m = kir_reduce(k, TRNC_NC_ALU_MAX, s, BIT(A_S));
  int p = kir_actv(k, F, TRNC_NC_ACT_EXP, s, scale, kir_ts(k, F, m, TRNC_NC_ALU_MUL, -scale, TRNC_NC_ALU_BYPASS, 0));
  int l = kir_reduce(k, TRNC_NC_ALU_ADD, p, BIT(A_S));
  int o = kir_mmv(k, kir_copy(k, dt, p), kir_load_axes(k, V, dt, kv), BIT(A_S));
  bool ok = o >= 0 && kir_store(k, O, kir_tt(k, to->t.dtype, TRNC_NC_ALU_DIV, o,
                                             kir_bcast_to(k, F, l, k->values[o].axes)));
  if (ok && Lse >= 0) {
    int ms = kir_ts(k, F, m, TRNC_NC_ALU_MUL, scale, TRNC_NC_ALU_BYPASS, 0);
    ok = kir_store(k, Lse, kir_tt(k, F, TRNC_NC_ALU_ADD, ms, kir_act(k, F, TRNC_NC_ACT_LOG, l, 1, 0)));
  }
  const char *bad = ok && Q >= 0 && K >= 0 && V >= 0 && O >= 0 ? kir_verify(k) : "the kernel is full";
  if (bad) return lw_fail(L, n, TRNC_ERR_INTERNAL, "flash attention kernel: %s", bad);
  return TRNC_OK;
}

bool lw_attention_handles(const trnc_graph *g, const trnc_node *n) {
  return n->op == TRNC_OP_SDPA_FLASH || kir_attention_bw_handles(g, n);
}

trnc_status lw_attention_emit(lw *L, const trnc_node *n) {
  if (n->op != TRNC_OP_SDPA_FLASH) return kir_attention_bw_emit(L, n);
  const trnc_graph *g = L->g;
  const trnc_type *qt = &g->values[n->args[0].u.ref].type, *kt = &g->values[n->args[1].u.ref].type;
  if (L->tv[n->outs[0]].buffer < 0 || qt->shape[0] == 0 || qt->shape[1] == 0 || qt->shape[2] == 0) return TRNC_OK;
  if (n->args[5].kind == TRNC_ARG_VALUE || qt->shape[3] > 128 || kt->shape[2] == 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL,
                   "flash attention kept for a form it does not lower (attn_mask, head dim %lld > 128 "
                   "or no keys): passes/decomp_attention.c should have decomposed it",
                   (long long)qt->shape[3]);
  lw_tv q, k, v;
  trnc_status st;
  if ((st = fa_dense_rows(L, n, 0, &q)) || (st = fa_dense_rows(L, n, 1, &k)) || (st = fa_dense_rows(L, n, 2, &v)))
    return st;
  kir_kernel *kk = trnc_arena_alloc(&L->arena, sizeof *kk);
  if (!kk) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
  if ((st = build_forward(L, n, &q, &k, &v, kk))) return st;
  return kir_emit(L, kk);
}
