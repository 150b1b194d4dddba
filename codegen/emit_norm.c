/*
 * emit_norm.c — layer-norm backward kernels on the NeuronCore for rows of at
 * most TRNC_LAYER_NORM_BW_MAX_ROW elements: dx, dW and dB in one kernel (the
 * column sums accumulate on TensorE in PSUM). Longer rows are decomposed by
 * trnc (passes/decomp_norm.c) into a kernel-IR dx row kernel
 * (codegen/kir/rules.c) and column sums; argmax/argmin, max/min.dim and
 * nll_loss are decompositions (passes/decomp_argmax.c); softmax, layer norm
 * and the reductions are kernel IR.
 *
 * A row kernel reduces a tensor x over a set of dims (the "row": the
 * normalized dims) and then rewrites x elementwise with the per-row results. The emitter splits x's
 * dims into kept dims (rows) and reduced dims (row elements), coalescing
 * each list where every operand is contiguous across neighbours. Rows go on
 * SBUF partitions (128 per tile, the largest kept dim; other kept dims are
 * looped), row elements on the free axis, read through each operand's own
 * strides (views are fine). Per-row statistics live in [P, 1] fp32 columns,
 * which are the per-partition scalars of tensor_scalar and the per-partition
 * bias of activation, so a row rewrite is one instruction per pass.
 *
 * Rows longer than one SBUF tile (max_free elements, ~4-8K fp32 depending on
 * how many row-sized tiles the op needs) are chunked: every pass streams the
 * row's chunks again and folds the per-chunk statistics into the columns.
 * When a row fits one chunk it is loaded once and every pass reuses it.
 * Tiles come from 2-3 deep pools so DMA of the next row tile overlaps
 * compute. Everything is computed in fp32 tiles; only the final instruction
 * of an output writes the output's device dtype (bf16/fp16 round once).
 *
 * Cross-partition sums (grad_weight/grad_bias summed over rows) run on TensorE: a matmul
 * with a ones vector accumulating in PSUM over row tiles. grad_weight uses
 * the data as the stationary operand ([rows, 128 columns]) and the ones
 * column as the moving one, so PSUM holds dW as [128, R/128] — 4 bytes per
 * partition per 128 columns, one matmul per 128 columns (cheaper in the cost
 * model than a ones-stationary [1, R] product, and R up to 4K fits PSUM).
 *
 * Semantics follow eager PyTorch (torch/_decomp/decompositions.py).
 *
 * Not lowered here (handles() returns false): rows longer than LNBW_MAX_ROW
 * elements, which the decomposition splits as above.
 */
#include <math.h>
#include <string.h>

#include "codegen/lower.h"
#include "ir/shape.h"

#define RMAX (TRNC_MAX_RANK + 1)
#define NOPS 10
#define NCOL 32            /* fp32 statistics columns per row tile */
#define BIGF 16777216.0f   /* 2^24: larger than any index we produce */
#define LNBW_MAX_ROW TRNC_LAYER_NORM_BW_MAX_ROW /* layer_norm_backward: row must fit one chunk */
#define MAX_FREE_CAP 8192

enum { K_FULL, K_ROW, K_PARAM };

/** An operand of a row kernel: a tv mapped onto x's dims. */
typedef struct rop {
  const lw_tv *tv;           /* NULL: absent (None or no buffer) */
  int kind;                  /* K_FULL: [rows, R]; K_ROW: one value per row;
                                K_PARAM: [R], the same for every row */
  int64_t st[RMAX];          /* stride per x dim (0: broadcast) */
  int64_t ks[RMAX], rs[RMAX];/* after coalescing: kept / reduced strides */
  int64_t base;
} rop;

/** An SBUF/PSUM region and the tile it belongs to. */
typedef struct V {
  lw_tile *t;
  trnc_nc_ap ap;
} V;

typedef struct chunk {
  int64_t n, lin;            /* elements; linear index of the first in the row */
  int nf;
  int64_t cnt[TRNC_NC_MAX_FREE];
  int64_t roff[NOPS];        /* element offset per operand */
} chunk;

typedef struct rk {
  lw *L;
  const trnc_node *n;
  int rank;
  int64_t shape[RMAX];
  bool red[RMAX];
  int nops;
  rop op[NOPS];
  int nk, nr;
  int64_t ksize[RMAX], rsize[RMAX], lin[RMAX];
  int64_t R, rows;
  int pd;                    /* kept dim on partitions (-1: one row) */
  int s;                     /* chunking: dims < s looped, s chunked by kc */
  int64_t kc, nch, maxf;
  int npmax;                 /* partitions of the largest row tile */
  int pchunk;                /* rows per tile (<= 128) */
  bool whole_row;            /* the row must be one chunk: rk_pools single-buffers
                                when double buffers would split it */
  /* current row tile */
  int np;
  int64_t koff[NOPS];
  int64_t tile_index;
  /* pools */
  lw_pool in[3], tmp[3], out, par[2], stats;
  lw_tile *pcache[2];        /* single-chunk param tiles (loaded once) */
  lw_tile *ones, *iota;
} rk;

/* ---- small helpers --------------------------------------------------------- */


static trnc_ref argref(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE ? a->u.ref : TRNC_NO_REF;
}


/* tv of value r if it is materialized, else NULL. */
static const lw_tv *tvof(lw *L, trnc_ref r) {
  if (r == TRNC_NO_REF || L->g->values[r].is_none) return NULL;
  const lw_tv *tv = &L->tv[r];
  return tv->buffer >= 0 ? tv : NULL;
}

static V vbig(lw_tile *t, int np, int64_t n, trnc_dtype dt) {
  V v = {t, lw_tile_ap(t, np, 0, dt, 1, &n)};
  return v;
}

static V vslice(lw_tile *t, int np, int64_t off, int64_t n, trnc_dtype dt) {
  V v = {t, lw_tile_ap(t, np, off * lw_esize(dt), dt, 1, &n)};
  return v;
}

static V vcol(lw_tile *t, int np, int col) {
  int64_t one = 1;
  V v = {t, lw_tile_ap(t, np, (int64_t)col * 4, TRNC_F32, 1, &one)};
  return v;
}

static V vcol_dt(lw_tile *t, int np, int col, trnc_dtype dt) {
  int64_t one = 1;
  V v = {t, lw_tile_ap(t, np, (int64_t)col * 4, dt, 1, &one)};
  return v;
}

/* ---- instructions ------------------------------------------------------------ */

static trnc_status em(lw *L, trnc_nc_instr *in, const V *const *r, int nr, const V *w, const V *w2) {
  lw_tile *rt[4] = {NULL, NULL, NULL, NULL}, *wt[2];
  for (int i = 0; i < nr; i++) rt[i] = r[i]->t;
  wt[0] = w->t;
  int nw = 1;
  if (w2 && w2->t != w->t) wt[nw++] = w2->t;
  return lw_emit(L, in, rt, nr, wt, nw);
}

/** dst = (a op0 s0) op1 s1; s0/s1 per-partition columns when non-NULL. */
static trnc_status i_ts(lw *L, V d, V a, int op0, const V *s0, float i0, int op1, const V *s1,
                        float i1) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  in.alu0 = (uint8_t)op0;
  in.alu1 = (uint8_t)op1;
  in.imm[0] = i0;
  in.imm[1] = i1;
  in.dst = d.ap;
  in.src[0] = a.ap;
  const V *r[3] = {&a};
  int nr = 1;
  if (s0) {
    in.src[1] = s0->ap;
    r[nr++] = s0;
  }
  if (s1) {
    in.src[2] = s1->ap;
    r[nr++] = s1;
  }
  return em(L, &in, r, nr, &d, NULL);
}

static trnc_status i_tt(lw *L, V d, V a, V b, int alu) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
  in.alu0 = (uint8_t)alu;
  in.dst = d.ap;
  in.src[0] = a.ap;
  in.src[1] = b.ap;
  const V *r[2] = {&a, &b};
  return em(L, &in, r, 2, &d, NULL);
}

static trnc_status i_red(lw *L, V d, V a, int alu) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
  in.alu0 = (uint8_t)alu;
  in.mode = 1;
  in.dst = d.ap;
  in.src[0] = a.ap;
  const V *r[1] = {&a};
  return em(L, &in, r, 1, &d, NULL);
}


static trnc_status i_copy(lw *L, V d, V a, int engine) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_COPY, engine);
  in.dst = d.ap;
  in.src[0] = a.ap;
  const V *r[1] = {&a};
  return em(L, &in, r, 1, &d, NULL);
}

static trnc_status i_memset(lw *L, V d, float v) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
  in.imm[0] = v;
  in.dst = d.ap;
  return em(L, &in, NULL, 0, &d, NULL);
}


/** PSUM d[M, N] (+)= st[K, M]^T . mv[K, N]. */
static trnc_status i_mm(lw *L, V d, V st, V mv, bool acc) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
  in.mode = acc;
  in.dst = d.ap;
  in.src[0] = st.ap;
  in.src[1] = mv.ap;
  const V *r[2] = {&st, &mv};
  return em(L, &in, r, 2, &d, NULL);
}

static trnc_status dma_in(lw *L, V d, trnc_nc_ap h) { return lw_dma(L, d.t, d.ap, h, false); }
static trnc_status dma_out(lw *L, trnc_nc_ap h, V s) { return lw_dma(L, s.t, s.ap, h, true); }

/* ---- row space --------------------------------------------------------------- */

/* Stride maps of a tv onto x's dims. */
static void st_full(const lw_tv *tv, int rank, int64_t *st) {
  int off = rank - tv->t.rank;
  for (int i = 0; i < rank; i++) {
    int j = i - off;
    st[i] = (j < 0 || tv->t.shape[j] == 1) ? 0 : tv->t.stride[j];
  }
}

/* One value per row: tv has x's rank (reduced dims of size 1) or only the
 * kept dims (keepdim=False). */
static void st_row(const lw_tv *tv, int rank, const bool *red, int64_t *st) {
  int j = 0;
  for (int i = 0; i < rank; i++) {
    if (tv->t.rank == rank) {
      st[i] = (red[i] || tv->t.shape[i] == 1) ? 0 : tv->t.stride[i];
      continue;
    }
    if (red[i]) {
      st[i] = 0;
      continue;
    }
    st[i] = (j < tv->t.rank && tv->t.shape[j] != 1) ? tv->t.stride[j] : 0;
    j++;
  }
}

/* Same for every row: tv spans the trailing dims [axis, rank) (layer-norm
 * weight). A tv of another shape with the same numel is read as dense. */
static bool st_param(const lw_tv *tv, int rank, const int64_t *shape, int axis, int64_t *st) {
  for (int i = 0; i < rank; i++) st[i] = 0;
  bool same = tv->t.rank == rank - axis;
  for (int i = 0; same && i < tv->t.rank; i++) same = tv->t.shape[i] == shape[axis + i];
  if (same) {
    for (int i = 0; i < tv->t.rank; i++) st[axis + i] = tv->t.shape[i] == 1 ? 0 : tv->t.stride[i];
    return true;
  }
  if (!trnc_type_is_dense(&tv->t)) return false;
  int64_t s = 1;
  for (int i = rank - 1; i >= axis; i--) {
    st[i] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return true;
}

static int rk_add(rk *K, const lw_tv *tv, int kind, const int64_t *st) {
  int o = K->nops++;
  rop *p = &K->op[o];
  memset(p, 0, sizeof *p);
  p->tv = tv;
  p->kind = kind;
  if (tv) {
    p->base = tv->t.offset;
    for (int i = 0; i < K->rank; i++) p->st[i] = st[i];
  }
  return o;
}

static int add_full(rk *K, const lw_tv *tv) {
  int64_t st[RMAX] = {0};
  if (tv) st_full(tv, K->rank, st);
  return rk_add(K, tv, K_FULL, st);
}

static int add_row(rk *K, const lw_tv *tv) {
  int64_t st[RMAX] = {0};
  if (tv) st_row(tv, K->rank, K->red, st);
  return rk_add(K, tv, K_ROW, st);
}

/* Initializes K over x's graph shape with the reduced-dim mask. */
static void rk_init(rk *K, lw *L, const trnc_node *n, const trnc_type *xt, const bool *red) {
  memset(K, 0, sizeof *K);
  K->L = L;
  K->n = n;
  K->rank = xt->rank;
  for (int i = 0; i < xt->rank; i++) {
    K->shape[i] = xt->shape[i];
    K->red[i] = red[i];
  }
  K->pchunk = L->target->partitions;
}

/* Splits dims into kept/reduced, coalesces, picks the partition dim and the
 * chunking for rows of up to maxf elements. */
static void rk_layout(rk *K, int64_t maxf) {
  int nk = 0, nr = 0;
  K->R = 1;
  K->rows = 1;
  for (int i = 0; i < K->rank; i++) {
    int64_t sz = K->shape[i];
    if (K->red[i]) K->R *= sz;
    else K->rows *= sz;
    if (sz == 1) continue;
    bool r = K->red[i];
    int64_t *size = r ? K->rsize : K->ksize;
    int *cnt = r ? &nr : &nk;
    /* merge into the previous dim of the same list when contiguous */
    bool merge = *cnt > 0;
    for (int o = 0; o < K->nops && merge; o++) {
      if (!K->op[o].tv) continue;
      int64_t *prev = r ? K->op[o].rs : K->op[o].ks;
      merge = prev[*cnt - 1] == K->op[o].st[i] * sz;
    }
    if (merge) {
      size[*cnt - 1] *= sz;
      for (int o = 0; o < K->nops; o++) (r ? K->op[o].rs : K->op[o].ks)[*cnt - 1] = K->op[o].st[i];
      continue;
    }
    size[*cnt] = sz;
    for (int o = 0; o < K->nops; o++) (r ? K->op[o].rs : K->op[o].ks)[*cnt] = K->op[o].st[i];
    (*cnt)++;
  }
  if (nr == 0) { /* a row of one element */
    K->rsize[0] = 1;
    for (int o = 0; o < K->nops; o++) K->op[o].rs[0] = 0;
    nr = 1;
  }
  K->nk = nk;
  K->nr = nr;
  K->pd = -1;
  for (int i = 0; i < nk; i++)
    if (K->pd < 0 || K->ksize[i] > K->ksize[K->pd]) K->pd = i;
  int64_t l = 1;
  for (int i = nr - 1; i >= 0; i--) {
    K->lin[i] = l;
    l *= K->rsize[i];
  }
  /* chunking: smallest s with prod(rsize[s+1..]) <= maxf, at most 4 free dims */
  int s = 0;
  while (s < nr - 1 && K->lin[s] > maxf) s++;
  if (nr - s > TRNC_NC_MAX_FREE) s = nr - TRNC_NC_MAX_FREE;
  K->s = s;
  K->kc = maxf / K->lin[s];
  if (K->kc < 1) K->kc = 1;
  if (K->kc > K->rsize[s]) K->kc = K->rsize[s];
  K->nch = (K->rsize[s] + K->kc - 1) / K->kc;
  for (int i = 0; i < s; i++) K->nch *= K->rsize[i];
  K->maxf = maxf;
  int64_t prow = K->pd >= 0 ? K->ksize[K->pd] : 1;
  K->npmax = (int)(prow < K->pchunk ? prow : K->pchunk);
}

static void rk_chunk(const rk *K, int64_t c, chunk *ch) {
  int64_t nper = (K->rsize[K->s] + K->kc - 1) / K->kc;
  int64_t j = c % nper, o = c / nper;
  int64_t idx[RMAX] = {0};
  for (int d = K->s - 1; d >= 0; d--) {
    idx[d] = o % K->rsize[d];
    o /= K->rsize[d];
  }
  int64_t start = j * K->kc;
  ch->lin = start * K->lin[K->s];
  for (int d = 0; d < K->s; d++) ch->lin += idx[d] * K->lin[d];
  for (int op = 0; op < K->nops; op++) {
    int64_t off = start * K->op[op].rs[K->s];
    for (int d = 0; d < K->s; d++) off += idx[d] * K->op[op].rs[d];
    ch->roff[op] = off;
  }
  ch->nf = K->nr - K->s;
  ch->cnt[0] = K->rsize[K->s] - start < K->kc ? K->rsize[K->s] - start : K->kc;
  ch->n = ch->cnt[0];
  for (int i = 1; i < ch->nf; i++) {
    ch->cnt[i] = K->rsize[K->s + i];
    ch->n *= ch->cnt[i];
  }
}

/* HBM access pattern of operand o for the current row tile (and chunk ch
 * for K_FULL / K_PARAM operands). */
static trnc_nc_ap hap(const rk *K, int o, const chunk *ch, int np) {
  const rop *p = &K->op[o];
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)p->tv->t.dtype;
  ap.buffer = p->tv->buffer;
  ap.partitions = np;
  int64_t off = p->base;
  if (p->kind != K_PARAM) {
    off += K->koff[o];
    ap.partition_stride = K->pd >= 0 ? p->ks[K->pd] : 0;
  }
  if (p->kind == K_ROW || !ch) {
    ap.nfree = 1;
    ap.free[0].stride = 1;
    ap.free[0].count = 1;
  } else {
    off += ch->roff[o];
    ap.nfree = (uint8_t)ch->nf;
    for (int i = 0; i < ch->nf; i++) {
      ap.free[i].stride = p->rs[K->s + i];
      ap.free[i].count = ch->cnt[i];
    }
  }
  ap.offset = off * lw_esize(p->tv->t.dtype);
  return ap;
}

/* Loads chunk ch of operand o into a tile of pool (fp32). With a single
 * chunk the tile in *cache is reused (the row is loaded once). */
static trnc_status ld(rk *K, int o, const chunk *ch, lw_pool *pool, lw_tile **cache, V *out) {
  int np = K->op[o].kind == K_PARAM ? K->npmax : K->np;
  if (cache && *cache && K->nch == 1) {
    *out = vbig(*cache, K->np, ch->n, TRNC_F32);
    return TRNC_OK;
  }
  lw_tile *t = lw_pool_next(pool);
  V v = vbig(t, np, ch->n, TRNC_F32);
  trnc_status st = dma_in(K->L, v, hap(K, o, ch, np));
  if (st) return st;
  if (cache) *cache = t;
  *out = vbig(t, K->np, ch->n, TRNC_F32);
  return TRNC_OK;
}

/* Loads a per-row operand into column col of the stats tile. */
static trnc_status ldcol(rk *K, int o, lw_tile *stats, int col) {
  V v = vcol(stats, K->np, col);
  return dma_in(K->L, v, hap(K, o, NULL, K->np));
}


static trnc_status stfull(rk *K, int o, const chunk *ch, V v) {
  return dma_out(K->L, hap(K, o, ch, K->np), v);
}

/* Pools: nin input, ntmp scratch and (when out) one output pool of row
 * tiles, npar parameter tiles, the stats pool. The row-tile size max_free
 * comes from the SBUF budget. */
/* Elements per partition of each of `bufs` fp32 buffers in the kernel's SBUF
 * (8 KiB kept for statistics columns), at most cap, a multiple of 128. */
static int64_t rk_buffer_elems(const lw *L, int bufs, int64_t cap) {
  int64_t budget = L->target->sbuf_bytes_per_partition - 8 * 1024;
  int64_t maxf = budget / (bufs ? bufs : 1) / 4;
  if (maxf > cap) maxf = cap;
  maxf &= ~(int64_t)127;
  return maxf < 128 ? 128 : maxf;
}

static trnc_status rk_pools(rk *K, int nin, int ntmp, bool out, int npar, int64_t cap) {
  lw *L = K->L;
  /* inputs triple-, temporaries and outputs double-buffered; one buffer each
   * when a whole row must fit and would not otherwise */
  int din = 3, dtmp = 2;
  int64_t row = 1;
  for (int i = 0; i < K->rank; i++)
    if (K->red[i]) row *= K->shape[i];
  if (K->whole_row && row > rk_buffer_elems(L, nin * 3 + ntmp * 2 + (out ? 2 : 0) + npar * 2, cap))
    din = dtmp = 1;
  int bufs = nin * din + ntmp * dtmp + (out ? dtmp : 0) + npar * dtmp;
  int64_t maxf = rk_buffer_elems(L, bufs, cap);
  rk_layout(K, maxf);
  trnc_status st = TRNC_OK;
  int64_t bytes = (K->nch == 1 ? K->R : maxf) * 4;
  for (int i = 0; i < nin && !st; i++) st = lw_pool_init(L, &K->in[i], TRNC_NC_MEM_SBUF, bytes, din);
  for (int i = 0; i < ntmp && !st; i++) st = lw_pool_init(L, &K->tmp[i], TRNC_NC_MEM_SBUF, bytes, dtmp);
  if (out && !st) st = lw_pool_init(L, &K->out, TRNC_NC_MEM_SBUF, bytes, dtmp);
  for (int i = 0; i < npar && !st; i++)
    st = lw_pool_init(L, &K->par[i], TRNC_NC_MEM_SBUF, bytes, K->nch == 1 ? 1 : dtmp);
  if (!st) st = lw_pool_init(L, &K->stats, TRNC_NC_MEM_SBUF, NCOL * 4, 2);
  return st;
}

typedef trnc_status (*row_fn)(rk *K, lw_tile *stats, void *ctx);

/* Calls fn for every row tile (kept dims looped, partition dim chunked). */
static trnc_status rk_run(rk *K, row_fn fn, void *ctx) {
  int64_t idx[RMAX] = {0};
  for (;;) {
    int64_t prow = K->pd >= 0 ? K->ksize[K->pd] : 1;
    for (int64_t p0 = 0; p0 < prow; p0 += K->pchunk) {
      K->np = (int)(prow - p0 < K->pchunk ? prow - p0 : K->pchunk);
      for (int o = 0; o < K->nops; o++) {
        int64_t off = K->pd >= 0 ? p0 * K->op[o].ks[K->pd] : 0;
        for (int d = 0; d < K->nk; d++)
          if (d != K->pd) off += idx[d] * K->op[o].ks[d];
        K->koff[o] = off;
      }
      trnc_status st = fn(K, lw_pool_next(&K->stats), ctx);
      if (st) return st;
      K->tile_index++;
    }
    int d = 0;
    for (; d < K->nk; d++) {
      if (d == K->pd) continue;
      if (++idx[d] < K->ksize[d]) break;
      idx[d] = 0;
    }
    if (d >= K->nk) return TRNC_OK;
  }
}

/* ==== statistics columns ============================================================= */

enum { C_A, C_B, C_C, C_D, C_E, C_F, C_G, C_H, C_I, C_J, C_K, C_P0, C_P1, C_P2 };


typedef struct lnb_ctx {
  int g, x, mean, rstd, w, dx, dw, db;
  trnc_dtype odt;
  lw_tile *psw, *psb;        /* PSUM [128, ncol] accumulators */
  int64_t ncol;
} lnb_ctx;

static trnc_status lnb_colsum(rk *K, lnb_ctx *c, lw_tile *ps, V data) {
  for (int64_t j = 0; j < c->ncol; j++) {
    int64_t m = K->R - j * 128 < 128 ? K->R - j * 128 : 128;
    V st_ = vslice(data.t, K->np, j * 128, m, TRNC_F32);
    V mv = vcol(K->ones, K->np, 0);
    V d = vcol(ps, (int)m, (int)j);
    trnc_status st = i_mm(K->L, d, st_, mv, K->tile_index > 0);
    if (st) return st;
  }
  return TRNC_OK;
}

static trnc_status lnb_row(rk *K, lw_tile *S, void *vctx) {
  lnb_ctx *c = vctx;
  lw *L = K->L;
  int np = K->np;
  chunk ch;
  rk_chunk(K, 0, &ch); /* single chunk (handles() guarantees it) */
  trnc_status st;
  V g, x, w;
  V mean = vcol(S, np, C_A), rstd = vcol(S, np, C_B), sb = vcol(S, np, C_C), sc2 = vcol(S, np, C_D);
  V rn = vcol(S, np, C_E);
  if ((st = ldcol(K, c->mean, S, C_A)) || (st = ldcol(K, c->rstd, S, C_B))) return st;
  if ((st = ld(K, c->g, &ch, &K->in[0], NULL, &g)) || (st = ld(K, c->x, &ch, &K->in[1], NULL, &x)))
    return st;
  V xh = vbig(lw_pool_next(&K->tmp[0]), np, ch.n, TRNC_F32);
  if ((st = i_ts(L, xh, x, TRNC_NC_ALU_SUB, &mean, 0, TRNC_NC_ALU_MUL, &rstd, 0))) return st;
  if (c->dw >= 0 && K->op[c->dw].tv) {
    V t = vbig(lw_pool_next(&K->tmp[1]), np, ch.n, TRNC_F32);
    if ((st = i_tt(L, t, g, xh, TRNC_NC_ALU_MUL)) || (st = lnb_colsum(K, c, c->psw, t))) return st;
  }
  if (c->db >= 0 && K->op[c->db].tv && (st = lnb_colsum(K, c, c->psb, g))) return st;
  if (!K->op[c->dx].tv) return TRNC_OK;
  V gw = g;
  if (K->op[c->w].tv) {
    if ((st = ld(K, c->w, &ch, &K->par[0], &K->pcache[0], &w))) return st;
    gw = vbig(lw_pool_next(&K->tmp[2]), np, ch.n, TRNC_F32);
    if ((st = i_tt(L, gw, g, w, TRNC_NC_ALU_MUL))) return st;
  }
  V t = vbig(lw_pool_next(&K->tmp[1]), np, ch.n, TRNC_F32);
  if ((st = i_red(L, sb, gw, TRNC_NC_ALU_ADD)) || (st = i_tt(L, t, gw, xh, TRNC_NC_ALU_MUL)) ||
      (st = i_red(L, sc2, t, TRNC_NC_ALU_ADD)))
    return st;
  /* inner = (gw * N - b) - xh * c2; dx = (rstd / N) * inner */
  if ((st = i_ts(L, t, gw, TRNC_NC_ALU_MUL, NULL, (float)K->R, TRNC_NC_ALU_SUB, &sb, 0)) ||
      (st = i_ts(L, xh, xh, TRNC_NC_ALU_MUL, &sc2, 0, TRNC_NC_ALU_BYPASS, NULL, 0)) ||
      (st = i_tt(L, t, t, xh, TRNC_NC_ALU_SUB)) ||
      (st = i_ts(L, rn, rstd, TRNC_NC_ALU_DIV, NULL, (float)K->R, TRNC_NC_ALU_BYPASS, NULL, 0)))
    return st;
  V o = vbig(lw_pool_next(&K->out), np, ch.n, c->odt);
  if ((st = i_ts(L, o, t, TRNC_NC_ALU_MUL, &rn, 0, TRNC_NC_ALU_BYPASS, NULL, 0))) return st;
  return stfull(K, c->dx, &ch, o);
}

/* PSUM [128, ncol] (element r at partition r % 128, column r / 128) -> the
 * [R] output tv (one coalesced dim). */
static trnc_status lnb_store(rk *K, lnb_ctx *c, lw_tile *ps, int o) {
  const lw_tv *tv = K->op[o].tv;
  if (!tv) return TRNC_OK;
  lw *L = K->L;
  if (K->nr != 1)
    return lw_fail(L, K->n, TRNC_ERR_UNSUPPORTED,
                   "layer_norm_backward: weight gradient layout does not coalesce to one dim");
  int64_t rs = K->op[o].rs[0];
  lw_tile *sb = lw_sbuf(L, c->ncol * 4);
  if (!sb) return L->status;
  int64_t nfull = K->R / 128, last = K->R % 128;
  trnc_status st = TRNC_OK;
  if (nfull) {
    V src = vbig(ps, 128, nfull, TRNC_F32), dst = vbig(sb, 128, nfull, tv->t.dtype);
    if ((st = i_copy(L, dst, src, TRNC_NC_VECTOR))) return st;
    trnc_nc_ap h;
    memset(&h, 0, sizeof h);
    h.mem = TRNC_NC_MEM_HBM;
    h.dtype = (uint8_t)tv->t.dtype;
    h.buffer = tv->buffer;
    h.partitions = 128;
    h.partition_stride = rs;
    h.offset = K->op[o].base * lw_esize(tv->t.dtype);
    h.nfree = 1;
    h.free[0].stride = 128 * rs;
    h.free[0].count = nfull;
    if ((st = dma_out(L, h, dst))) return st;
  }
  if (last) {
    V src = vcol(ps, (int)last, (int)nfull), dst = vcol_dt(sb, (int)last, (int)nfull, tv->t.dtype);
    if ((st = i_copy(L, dst, src, TRNC_NC_VECTOR))) return st;
    trnc_nc_ap h;
    memset(&h, 0, sizeof h);
    h.mem = TRNC_NC_MEM_HBM;
    h.dtype = (uint8_t)tv->t.dtype;
    h.buffer = tv->buffer;
    h.partitions = (int32_t)last;
    h.partition_stride = rs;
    h.offset = (K->op[o].base + nfull * 128 * rs) * lw_esize(tv->t.dtype);
    h.nfree = 1;
    h.free[0].stride = 1;
    h.free[0].count = 1;
    st = dma_out(L, h, dst);
  }
  return st;
}

static trnc_status emit_layer_norm_bw(lw *L, const trnc_node *n) {
  trnc_ref xr = argref(n, 1);
  const trnc_type *xt = &L->g->values[xr].type;
  const trnc_arg *ns = trnc_node_arg(n, 2);
  int axis = xt->rank - (int)ns->u.list.n;
  if (trnc_type_numel(xt) == 0) { /* no rows: dx is empty, dweight and dbias are zero */
    const lw_tv *zw = tvof(L, n->outs[1]), *zb = tvof(L, n->outs[2]);
    trnc_status st = zw ? lw_emit_fill(L, zw, 0.0f, "layer_norm_backward_zero") : TRNC_OK;
    if (!st && zb) st = lw_emit_fill(L, zb, 0.0f, "layer_norm_backward_zero");
    return st;
  }
  bool red[RMAX] = {false};
  for (int i = axis; i < xt->rank; i++) red[i] = true;
  rk K;
  rk_init(&K, L, n, xt, red);
  lnb_ctx c;
  memset(&c, 0, sizeof c);
  c.g = add_full(&K, tvof(L, argref(n, 0)));
  c.x = add_full(&K, tvof(L, xr));
  c.mean = add_row(&K, tvof(L, argref(n, 3)));
  c.rstd = add_row(&K, tvof(L, argref(n, 4)));
  const lw_tv *w = tvof(L, argref(n, 5)), *dw = tvof(L, n->outs[1]), *db = tvof(L, n->outs[2]);
  int64_t stw[RMAX] = {0}, stdw[RMAX] = {0}, stdb[RMAX] = {0};
  if ((w && !st_param(w, xt->rank, xt->shape, axis, stw)) ||
      (dw && !st_param(dw, xt->rank, xt->shape, axis, stdw)) ||
      (db && !st_param(db, xt->rank, xt->shape, axis, stdb)))
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "layer_norm_backward: weight layout is not dense");
  c.w = rk_add(&K, w, K_PARAM, stw);
  const lw_tv *dx = tvof(L, n->outs[0]);
  c.dx = add_full(&K, dx);
  c.dw = rk_add(&K, dw, K_PARAM, stdw);
  c.db = rk_add(&K, db, K_PARAM, stdb);
  c.odt = dx ? dx->t.dtype : TRNC_F32;
  if (!dx && !dw && !db) return TRNC_OK;
  trnc_status st = lw_kernel_begin(L, "layer_norm_backward");
  K.whole_row = true;
  if (!st) st = rk_pools(&K, 2, 3, true, 1, LNBW_MAX_ROW);
  if (st) return st;
  if (K.nch != 1)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "layer_norm_backward: row of %lld elements does not fit",
                   (long long)K.R);
  c.ncol = (K.R + 127) / 128;
  if (dw || db) {
    K.ones = lw_sbuf(L, 64);
    if (!K.ones) return L->status;
    if ((st = i_memset(L, vcol(K.ones, K.npmax, 0), 1.0f))) return st;
    if (dw && !(c.psw = lw_psum(L, c.ncol * 4))) return L->status;
    if (db && !(c.psb = lw_psum(L, c.ncol * 4))) return L->status;
    L->ops_per_engine[0]++;
  }
  L->ops_per_engine[1]++;
  if ((st = rk_run(&K, lnb_row, &c))) return st;
  if (dw && (st = lnb_store(&K, &c, c.psw, c.dw))) return st;
  if (db && (st = lnb_store(&K, &c, c.psb, c.db))) return st;
  return TRNC_OK;
}

/* ==== argmax, argmin, max.dim, min.dim ================================================= */

/* x: input, o: indices, v: values (max/min.dim; -1 or absent for argmax/argmin);
 * mn: minimum instead of maximum. */
bool lw_norm_handles(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_LAYER_NORM_BACKWARD: {
      const trnc_type *x = trnc_ref_type(g, n->args[1].u.ref);
      const trnc_arg *ns = trnc_node_arg(n, 2);
      if (!ns || ns->kind != TRNC_ARG_LIST) return false;
      int64_t R = 1;
      for (int i = x->rank - (int)ns->u.list.n; i < x->rank; i++) R *= x->shape[i];
      return R <= LNBW_MAX_ROW;
    }
    default:
      return false;
  }
}

trnc_status lw_norm_emit(lw *L, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_LAYER_NORM_BACKWARD: return emit_layer_norm_bw(L, n);
    default: return lw_fail(L, n, TRNC_ERR_INTERNAL, "norm family: unexpected op %s", n->target);
  }
}
