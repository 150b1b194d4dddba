/*
 * emit_data.c — the indexing programs kir does not lower yet: the
 * accumulating ones, embedding backward, index_put(accumulate=True) and
 * scatter_add (cat, stack, constant_pad_nd and the slice scatters are kir
 * copy parts: codegen/kir/data.c; embedding, index_select, index.Tensor,
 * every gather, scatter and index_put without accumulate are kir gathers
 * and scatters: codegen/kir/gather.c; codegen/families.c dispatches them).
 *
 * They are row programs over a *row space* (the index tensor's shape, tiled
 * 128 rows to the partitions):
 *
 *  accumulate  table row t += sum_{r: idx(r)=t} src row r
 *
 * A *table* is an HBM tensor seen as rows: row t starts at element
 * offset + t * row_stride and holds the free pattern (up to 8 dims, tiled to
 * 4 per access pattern and chunked). idx(r) is one i32 per partition ([P,1]
 * in SBUF): either an index tensor's
 * value loaded as is (embedding backward: a DMA gather's range check
 * reports any out-of-range value as TRNC_ERR_LIMIT), or a flat row computed
 * on VectorE from up to two index tensors (wrapped idx < 0 ? idx + size :
 * idx where eager wraps: index_put) plus an affine term in the
 * row position (scatter_add addresses single elements). When
 * several terms are combined, each index is clamped to [-1, size] and an
 * out-of-range one pushes the flat row below zero (flat - 2^24 * bad), so
 * the range check still refuses it; an index
 * that is not wrapped is also range-checked as written first (a one-element
 * DMA gather, check_raw), so the error names the user's value and the dim's
 * size rather than the combined row. All of that
 * arithmetic is exact in fp32 because tables with combined indices are
 * limited to 2^21 rows (the op table's limits: ir/ops.c).
 *
 * Accumulation (embedding_dense_backward, index_put(accumulate=True),
 * scatter_add) cannot use the DMA scatter: it overwrites, so duplicate
 * indices would lose updates. It runs on TensorE as a one-hot matmul:
 * for a block of <= 128 table rows [t0, t0+Tc) and <= 512 columns,
 *   PSUM[Tc, W] += onehot[K, Tc]^T . src[K, W]     (K = 128 source rows),
 * with onehot[k, t] = (idx(k) == t0 + t) built by one VectorE tensor_scalar
 * from an iota row (padding_idx rows get an all-zero one-hot row). Sums are
 * fp32 in PSUM, exact up to summation order. The matmul sums the finite
 * sources only (0 * inf = NaN would reach every row of the block): three
 * more matmuls count the +inf, -inf and NaN sources per element, and the
 * evacuation gives NaN, +inf or -inf where eager's sum does. Cost:
 * 4 * ceil(T/128) * ceil(N/128) * ceil(W/512) matmuls of max(W,64)*4 cycles
 * (fp32) — cheap for moderate T (vocabularies of a few thousand rows),
 * so the op table's limits (ir/ops.c) accept it while that product stays
 * <= 16384 blocks; larger tables stay unlowered (a sort/dedupe read-modify-write
 * path is future work). The indices are range-checked by one small DMA
 * gather per 128 rows (TRNC_ERR_LIMIT, as eager raises).
 *
 * The evacuations' read-modify-writes of the result are ordered through
 * an HBM "token" tile passed to lw_emit (it tracks queues, not memory),
 * which keeps the verifier's race check exact.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/kir.h"
#include "codegen/lower.h"
#include "ir/shape.h"

#define R (TRNC_MAX_RANK + 1)
#define ACC_MAXF TRNC_ACC_BLOCK_COLS    /* accumulate: one PSUM bank of fp32 */
#define MASK_ROWS TRNC_INDEX_TABLE_MAX_ROWS  /* combined-index tables: rows limit (fp32-exact) */
_Static_assert(TRNC_GATHER_MAX_ELEMS == MASK_ROWS / 2, "gather/scatter address half a table");
_Static_assert(TRNC_ACC_BLOCK_ROWS == LW_P, "an accumulation block is one partition tile of rows");

/* ---- small dimension spaces ----------------------------------------------------- */

/** Dims (outer to inner) and, per operand, strides in elements. */
typedef struct dspace {
  int rank, nops;
  int64_t size[R];
  int64_t st[4][R];
} dspace;

/* Drops size-1 dims; merges dim i into i+1 when every operand is
 * contiguous across them. */
static void ds_coalesce(dspace *s) {
  int w = 0;
  for (int i = 0; i < s->rank; i++) {
    if (s->size[i] == 1) continue;
    s->size[w] = s->size[i];
    for (int o = 0; o < s->nops; o++) s->st[o][w] = s->st[o][i];
    w++;
  }
  s->rank = w;
  for (int i = s->rank - 2; i >= 0; i--) {
    bool ok = true;
    for (int o = 0; o < s->nops && ok; o++) ok = s->st[o][i] == s->st[o][i + 1] * s->size[i + 1];
    if (!ok) continue;
    s->size[i] *= s->size[i + 1];
    for (int o = 0; o < s->nops; o++) s->st[o][i] = s->st[o][i + 1];
    for (int j = i + 1; j < s->rank - 1; j++) {
      s->size[j] = s->size[j + 1];
      for (int o = 0; o < s->nops; o++) s->st[o][j] = s->st[o][j + 1];
    }
    s->rank--;
  }
}

static int64_t ds_numel(const dspace *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->size[i];
  return n;
}

/* ---- row jobs ----------------------------------------------------------------------- */

/** One index term: flat += wrap?(idx) * mult, idx in [0, size). */
typedef struct icomp {
  const lw_tv *tv;
  int64_t base;     /* element offset of the tv */
  int64_t size;
  int64_t mult;     /* table rows per index step */
  bool wrap;        /* negative indices count from the end (index.Tensor) */
} icomp;

enum { OP_R = 0, OP_I0 = 1, OP_I1 = 2, OP_AFF = 3 };
enum { PT_R = 0, PT_T = 1 };

typedef struct job {
  /* row space: ops OP_R (row operand), OP_I0/OP_I1 (index tvs), OP_AFF
   * (table rows added per step: element-level gather/scatter) */
  dspace rows;
  /* row operand: the accumulated source rows */
  const lw_tv *r;
  int64_t rbase;
  /* table: row t at tbase + t * tps, trows rows */
  const lw_tv *t;
  int64_t tbase, tps, trows;
  /* free pattern: ops PT_R, PT_T */
  dspace pat;
  int nc;
  icomp c[2];
  bool has_aff;
  bool has_skip;    /* accumulate: rows with raw index == skip add nothing */
  int64_t skip;
  bool base_is_out; /* accumulate: out = out + sum (else out = sum) */
} job;

static bool job_masked(const job *J) { return J->nc > 1 || J->has_aff; }

/* ---- emission helpers ------------------------------------------------------------------ */

typedef struct kctx {
  lw_pool ix, sm, data, aux, ps, oh, iota, ev;
  lw_pool ind, nps;    /* accumulate: non-finite indicators, their PSUM counts */
  lw_tile *cst[4];     /* accumulate: [P, ACC_MAXF] f32 of 0, +inf, -inf, NaN */
  lw_tile *tok;        /* HBM token for the written table/output */
} kctx;

static lw_tile *token(lw *L) {
  lw_tile *t = trnc_arena_alloc(&L->arena, sizeof *t);
  if (!t) {
    lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  memset(t, 0, sizeof *t);
  t->mem = TRNC_NC_MEM_HBM;
  return t;
}

static trnc_nc_ap col(const lw_tile *t, int np, trnc_dtype dt) {
  int64_t one = 1;
  return lw_tile_ap(t, np, 0, dt, 1, &one);
}

static trnc_nc_ap hbm(const lw_tv *tv, int64_t off, int64_t ps, int np, int nd, const int64_t *cnt,
                      const int64_t *st) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)tv->t.dtype;
  ap.buffer = tv->buffer;
  ap.offset = off * lw_esize(tv->t.dtype);
  ap.partitions = np;
  ap.partition_stride = ps;
  if (nd == 0) {
    ap.nfree = 1;
    ap.free[0].stride = 1;
    ap.free[0].count = 1;
  } else {
    ap.nfree = (uint8_t)nd;
    for (int i = 0; i < nd; i++) {
      ap.free[i].stride = st[i];
      ap.free[i].count = cnt[i];
    }
  }
  return ap;
}

/* tensor_scalar dst = (src op0 s0) op1 s1 on [np,1] columns; s1col (if
 * non-NULL) is a per-partition s1. */
static trnc_status ts_col_after(lw *L, lw_tile *dst, lw_tile *src, trnc_dtype sdt, int np, int op0,
                                float s0, int op1, float s1, lw_tile *s1col, lw_tile *after) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = TRNC_NC_OP_TENSOR_SCALAR;
  in.engine = TRNC_NC_VECTOR;
  in.alu0 = (uint8_t)op0;
  in.alu1 = (uint8_t)op1;
  in.imm[0] = s0;
  in.imm[1] = s1;
  in.dst = col(dst, np, TRNC_F32);
  in.src[0] = col(src, np, sdt);
  /* `after` (optional): a tile only read for ordering */
  lw_tile *rd[3] = {src, s1col ? s1col : after, s1col ? after : NULL};
  if (s1col) in.src[2] = col(s1col, np, TRNC_F32);
  return lw_emit(L, &in, rd, 1 + (s1col != NULL) + (after != NULL), &dst, 1);
}

static trnc_status ts_col(lw *L, lw_tile *dst, lw_tile *src, trnc_dtype sdt, int np, int op0, float s0,
                          int op1, float s1, lw_tile *s1col) {
  return ts_col_after(L, dst, src, sdt, np, op0, s0, op1, s1, s1col, NULL);
}

/* A one-element DMA gather per row from the table (rows of `pstride`
 * elements, `rows` of them) at the indices in tile idx: an index outside
 * [0, rows) makes the run fail with TRNC_ERR_LIMIT, as eager raises. The
 * gathered value is discarded; *done is the scratch tile it wrote (reading
 * it orders later work after the check). */
static trnc_status gather_check(lw *L, kctx *K, const job *J, int64_t pstride, int64_t rows,
                                lw_tile *idx, int np, lw_tile **done) {
  lw_tile *scratch = lw_pool_next(&K->sm);
  trnc_nc_instr ck;
  memset(&ck, 0, sizeof ck);
  ck.op = TRNC_NC_OP_DMA_COPY;
  ck.engine = (uint8_t)lw_dma_queue(L);
  ck.mode = TRNC_NC_DMA_GATHER;
  ck.dst = col(scratch, np, J->t->t.dtype);
  ck.src[0] = hbm(J->t, J->tbase, pstride, (int)rows, 0, NULL, NULL);
  ck.src[1] = col(idx, np, TRNC_I32);
  lw_tile *rd[2] = {idx, K->tok};
  *done = scratch;
  return lw_emit(L, &ck, rd, 2, &scratch, 1);
}

/* Range check of a raw (unwrapped) index column against c's `size` rows: a
 * one-element DMA gather per row from the table along c's dim, so an
 * out-of-range value is reported as the user wrote it (the combined flat
 * row is not). Returns the scratch tile the check writes: later work on
 * the index reads it, which orders the check first. */
static trnc_status check_raw(lw *L, kctx *K, const job *J, const icomp *c, lw_tile *raw, int np,
                             lw_tile **done) {
  return gather_check(L, K, J, c->mult, c->size, raw, np, done);
}

/* One tile of the row space: partition dim pdim (-1: one row), rows
 * [p0, p0+np), and every other dim fixed by idx. */
typedef struct rtile {
  int pdim;
  int64_t p0;
  int np;
  int64_t idx[R];
} rtile;

static int64_t rt_off(const job *J, int op, const rtile *rt) {
  int64_t o = 0;
  for (int i = 0; i < J->rows.rank; i++)
    o += (i == rt->pdim ? rt->p0 : rt->idx[i]) * J->rows.st[op][i];
  return o;
}

static int64_t rt_ps(const job *J, int op, const rtile *rt) {
  return rt->pdim >= 0 ? J->rows.st[op][rt->pdim] : 0;
}

/*
 * Index of every row of tile rt as i32 [np,1] in *iout (the range check's
 * index tile) and, when fout is non-NULL, as f32 [np,1] in *fout; *keep (with a
 * skip value): f32 [np,1] 1 = row counts, 0 = padding row.
 */
static trnc_status row_index(lw *L, kctx *K, const job *J, const rtile *rt, lw_tile **iout,
                             lw_tile **fout, lw_tile **keep) {
  int np = rt->np;
  trnc_status st;
  if (fout) *fout = NULL;
  if (keep) *keep = NULL;
  lw_tile *raw[2];
  for (int k = 0; k < J->nc; k++) {
    raw[k] = lw_pool_next(&K->ix);
    trnc_nc_instr ld;
    memset(&ld, 0, sizeof ld);
    ld.op = TRNC_NC_OP_DMA_COPY;
    ld.engine = (uint8_t)lw_dma_queue(L);
    ld.dst = col(raw[k], np, TRNC_I32);
    ld.src[0] = hbm(J->c[k].tv, J->c[k].base + rt_off(J, OP_I0 + k, rt), rt_ps(J, OP_I0 + k, rt), np, 0,
                    NULL, NULL);
    if ((st = lw_emit(L, &ld, NULL, 0, &raw[k], 1))) return st;
  }
  if (J->has_skip && keep) {
    *keep = lw_pool_next(&K->sm);
    if ((st = ts_col(L, *keep, raw[0], TRNC_I32, np, TRNC_NC_ALU_NE, (float)J->skip, TRNC_NC_ALU_BYPASS, 0,
                     NULL)))
      return st;
  }
  bool plain = J->nc == 1 && !J->has_aff && !J->c[0].wrap && J->c[0].mult == 1;
  if (plain) {
    *iout = raw[0];
    if (!fout) return TRNC_OK;
    lw_tile *f = lw_pool_next(&K->sm);
    trnc_nc_instr cp;
    memset(&cp, 0, sizeof cp);
    cp.op = TRNC_NC_OP_TENSOR_COPY;
    cp.engine = TRNC_NC_VECTOR;
    cp.dst = col(f, np, TRNC_F32);
    cp.src[0] = col(raw[0], np, TRNC_I32);
    *fout = f;
    return lw_emit(L, &cp, &raw[0], 1, &f, 1);
  }
  bool masked = job_masked(J);
  lw_tile *acc = NULL, *bad = NULL;
  if (J->has_aff) {
    acc = lw_pool_next(&K->sm);
    trnc_nc_instr io;
    memset(&io, 0, sizeof io);
    io.op = TRNC_NC_OP_IOTA;
    io.engine = TRNC_NC_GPSIMD;
    io.dst = col(acc, np, TRNC_F32);
    io.aff[0] = (int32_t)rt_off(J, OP_AFF, rt);
    io.aff[1] = (int32_t)rt_ps(J, OP_AFF, rt);
    if ((st = lw_emit(L, &io, NULL, 0, &acc, 1))) return st;
  }
  for (int k = 0; k < J->nc; k++) {
    const icomp *c = &J->c[k];
    lw_tile *w = raw[k];
    trnc_dtype wdt = TRNC_I32;
    if (c->wrap) {
      lw_tile *t = lw_pool_next(&K->sm), *w2 = lw_pool_next(&K->sm);
      /* t = (idx < 0) * size; w = t + idx (per-partition idx as s1) */
      if ((st = ts_col(L, t, w, TRNC_I32, np, TRNC_NC_ALU_LT, 0, TRNC_NC_ALU_MUL, (float)c->size, NULL)))
        return st;
      lw_tile *wf = lw_pool_next(&K->sm);
      trnc_nc_instr cp;
      memset(&cp, 0, sizeof cp);
      cp.op = TRNC_NC_OP_TENSOR_COPY;
      cp.engine = TRNC_NC_VECTOR;
      cp.dst = col(wf, np, TRNC_F32);
      cp.src[0] = col(w, np, TRNC_I32);
      if ((st = lw_emit(L, &cp, &w, 1, &wf, 1))) return st;
      if ((st = ts_col(L, w2, t, TRNC_F32, np, TRNC_NC_ALU_BYPASS, 0, TRNC_NC_ALU_ADD, 0, wf))) return st;
      w = w2;
      wdt = TRNC_F32;
    }
    if (masked) {
      /* c = clamp(w, -1, size); bad += |2c - (size-1)| > size-1 */
      lw_tile *cl = lw_pool_next(&K->sm), *y = lw_pool_next(&K->sm), *b = lw_pool_next(&K->sm);
      lw_tile *checked = NULL;
      if (!c->wrap && c->size > 0 && (st = check_raw(L, K, J, c, w, np, &checked))) return st;
      if ((st = ts_col_after(L, cl, w, wdt, np, TRNC_NC_ALU_MAX, -1.0f, TRNC_NC_ALU_MIN, (float)c->size,
                             NULL, checked)))
        return st;
      if ((st = ts_col(L, y, cl, TRNC_F32, np, TRNC_NC_ALU_MUL, 2.0f, TRNC_NC_ALU_ADD,
                       (float)-(c->size - 1), NULL)))
        return st;
      if ((st = ts_col(L, b, y, TRNC_F32, np, TRNC_NC_ALU_ABSMAX, 0.0f, TRNC_NC_ALU_GT, (float)(c->size - 1),
                       NULL)))
        return st;
      if (bad) {
        lw_tile *b2 = lw_pool_next(&K->sm);
        if ((st = ts_col(L, b2, b, TRNC_F32, np, TRNC_NC_ALU_BYPASS, 0, TRNC_NC_ALU_ADD, 0, bad))) return st;
        b = b2;
      }
      bad = b;
      w = cl;
      wdt = TRNC_F32;
    }
    lw_tile *a2 = lw_pool_next(&K->sm);
    if ((st = ts_col(L, a2, w, wdt, np, TRNC_NC_ALU_MUL, (float)c->mult, acc ? TRNC_NC_ALU_ADD : TRNC_NC_ALU_BYPASS,
                     0, acc)))
      return st;
    acc = a2;
  }
  if (masked) {
    lw_tile *a2 = lw_pool_next(&K->sm);
    if ((st = ts_col(L, a2, bad, TRNC_F32, np, TRNC_NC_ALU_MUL, -16777216.0f, TRNC_NC_ALU_ADD, 0, acc)))
      return st;
    acc = a2;
  }
  lw_tile *ii = lw_pool_next(&K->ix);
  trnc_nc_instr cp;
  memset(&cp, 0, sizeof cp);
  cp.op = TRNC_NC_OP_TENSOR_COPY;
  cp.engine = TRNC_NC_VECTOR;
  cp.dst = col(ii, np, TRNC_I32);
  cp.src[0] = col(acc, np, TRNC_F32);
  if ((st = lw_emit(L, &cp, &acc, 1, &ii, 1))) return st;
  *iout = ii;
  if (fout) *fout = acc;
  return TRNC_OK;
}

/* Calls fn for every row tile of J (partition dim: the largest row dim). */
typedef trnc_status (*rt_fn)(lw *L, kctx *K, const job *J, const rtile *rt, void *ctx);

static trnc_status for_rows(lw *L, kctx *K, const job *J, rt_fn fn, void *ctx) {
  rtile rt;
  memset(&rt, 0, sizeof rt);
  rt.pdim = -1;
  const dspace *s = &J->rows;
  for (int i = 0; i < s->rank; i++)
    if (rt.pdim < 0 || s->size[i] > s->size[rt.pdim]) rt.pdim = i;
  int64_t psize = rt.pdim >= 0 ? s->size[rt.pdim] : 1;
  for (;;) {
    for (int64_t p0 = 0; p0 < psize; p0 += LW_P) {
      rt.p0 = p0;
      rt.np = (int)(psize - p0 < LW_P ? psize - p0 : LW_P);
      trnc_status st = fn(L, K, J, &rt, ctx);
      if (st) return st;
    }
    int i = s->rank - 1;
    for (; i >= 0; i--) {
      if (i == rt.pdim) continue;
      if (++rt.idx[i] < s->size[i]) break;
      rt.idx[i] = 0;
    }
    if (i < 0) return TRNC_OK;
  }
}

/* Chunks of the free pattern: up to 4 innermost dims in the access pattern,
 * at most maxf elements, the rest looped. */
typedef struct fchunk {
  int64_t off[2];           /* PT_R, PT_T element offsets */
  int nd;
  int64_t cnt[4], st[2][4];
  int64_t elems;
} fchunk;

typedef trnc_status (*fc_fn)(lw *L, kctx *K, const job *J, const fchunk *f, void *ctx);

static trnc_status for_chunks(lw *L, kctx *K, const job *J, int64_t maxf, fc_fn fn, void *ctx) {
  const dspace *p = &J->pat;
  int n = p->rank, k = n < 4 ? n : 4;
  for (;;) {
    int64_t inner = 1;
    for (int i = n - k; i < n - 1; i++) inner *= p->size[i];
    if (k <= 1 || inner <= maxf) break;
    k--;
  }
  int64_t inner = 1;
  for (int i = n - k; i < n - 1; i++) inner *= p->size[i];
  int64_t last = k ? p->size[n - 1] : 1;
  int64_t chunk = maxf / inner;
  if (chunk < 1) chunk = 1;
  if (chunk > last) chunk = last;
  int64_t idx[R] = {0};
  for (;;) {
    for (int64_t f0 = 0; f0 < last; f0 += chunk) {
      fchunk f;
      memset(&f, 0, sizeof f);
      f.nd = k;
      f.elems = 1;
      for (int o = 0; o < 2; o++) {
        for (int i = 0; i < n - k; i++) f.off[o] += idx[i] * p->st[o][i];
        if (k) f.off[o] += f0 * p->st[o][n - 1];
      }
      for (int j = 0; j < k; j++) {
        int d = n - k + j;
        f.cnt[j] = j == k - 1 ? (last - f0 < chunk ? last - f0 : chunk) : p->size[d];
        f.st[0][j] = p->st[0][d];
        f.st[1][j] = p->st[1][d];
        f.elems *= f.cnt[j];
      }
      trnc_status st = fn(L, K, J, &f, ctx);
      if (st) return st;
    }
    int i = n - k - 1;
    for (; i >= 0; i--) {
      if (++idx[i] < p->size[i]) break;
      idx[i] = 0;
    }
    if (i < 0) return TRNC_OK;
  }
}

/* ---- accumulate (one-hot matmul) ------------------------------------------------------------ */

typedef struct actx {
  int64_t t0;
  int tc;
  const fchunk *f;
  lw_tile *iota, *ps;
  lw_tile *cnt[3];     /* PSUM [tc, W]: how many +inf, -inf, NaN sources each element sums */
  trnc_dtype mdt;
  bool first, check;
} actx;

/* One VectorE instruction: dst = op(a, b[, c]) over [np, w] tiles (b, c may
 * be NULL; imm the tensor_scalar operand). */
static trnc_status vec(lw *L, int op, int alu, trnc_nc_ap dst, lw_tile *dt, const trnc_nc_ap *a, lw_tile *at,
                       const trnc_nc_ap *b, lw_tile *bt, const trnc_nc_ap *c, lw_tile *ct, float imm) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = (uint8_t)op;
  in.engine = TRNC_NC_VECTOR;
  in.alu0 = (uint8_t)alu;
  in.alu1 = TRNC_NC_ALU_BYPASS;
  in.imm[0] = imm;
  in.dst = dst;
  in.src[0] = *a;
  lw_tile *rd[3] = {at, bt, ct};
  int nr = 1;
  if (b) {
    in.src[1] = *b;
    nr = 2;
  }
  if (c) {
    in.src[2] = *c;
    nr = 3;
  }
  return lw_emit(L, &in, rd, nr, &dt, 1);
}

/* The one-hot matmul sums only finite sources: 0 * inf or 0 * NaN in the
 * other rows of a one-hot column would turn every element of the block
 * NaN. Non-finite sources are counted apart (+inf, -inf, NaN: three more
 * matmuls of 0/1 indicators) and the evacuation puts back what eager's
 * sequential sum gives: NaN for a NaN or for +inf with -inf, else +-inf. */
static trnc_status acc_rows(lw *L, kctx *K, const job *J, const rtile *rt, void *ctx) {
  actx *A = ctx;
  int np = rt->np;
  lw_tile *ii, *fi, *keep;
  trnc_status st = row_index(L, K, J, rt, &ii, &fi, &keep);
  if (st) return st;
  if (A->check) {
    /* range check of the indices: a one-element gather per row (eager
     * raises on an out-of-range index; the DMA reports TRNC_ERR_LIMIT) */
    lw_tile *scratch;
    if ((st = gather_check(L, K, J, J->tps, J->trows, ii, np, &scratch))) return st;
  }
  /* one-hot [np, tc] */
  lw_tile *oh = lw_pool_next(&K->oh);
  int64_t tcl = A->tc;
  trnc_nc_instr o;
  memset(&o, 0, sizeof o);
  o.op = TRNC_NC_OP_TENSOR_SCALAR;
  o.engine = TRNC_NC_VECTOR;
  o.alu0 = TRNC_NC_ALU_EQ;
  o.alu1 = keep ? TRNC_NC_ALU_MUL : TRNC_NC_ALU_BYPASS;
  o.dst = lw_tile_ap(oh, np, 0, A->mdt, 1, &tcl);
  o.src[0] = lw_tile_ap(A->iota, np, 0, TRNC_F32, 1, &tcl);
  o.src[1] = col(fi, np, TRNC_F32);
  if (keep) o.src[2] = col(keep, np, TRNC_F32);
  lw_tile *rd[3] = {A->iota, fi, keep};
  if ((st = lw_emit(L, &o, rd, keep ? 3 : 2, &oh, 1))) return st;
  /* source rows [np, W] */
  const fchunk *f = A->f;
  lw_tile *d = lw_pool_next(&K->data);
  trnc_nc_instr ld;
  memset(&ld, 0, sizeof ld);
  ld.op = TRNC_NC_OP_DMA_COPY;
  ld.engine = (uint8_t)lw_dma_queue(L);
  ld.dst = lw_tile_ap(d, np, 0, A->mdt, f->nd ? f->nd : 1, f->nd ? f->cnt : (int64_t[]){1});
  ld.src[0] = hbm(J->r, J->rbase + rt_off(J, OP_R, rt) + f->off[PT_R], rt_ps(J, OP_R, rt), np, f->nd, f->cnt,
                  f->st[PT_R]);
  if ((st = lw_emit(L, &ld, NULL, 0, &d, 1))) return st;
  int64_t w = f->elems;
  trnc_nc_ap da = lw_tile_ap(d, np, 0, A->mdt, 1, &w), z = lw_tile_ap(K->cst[0], np, 0, TRNC_F32, 1, &w);
  lw_tile *nf = lw_pool_next(&K->ind), *cl = lw_pool_next(&K->ind), *ind[3];
  trnc_nc_ap nfa = lw_tile_ap(nf, np, 0, TRNC_F32, 1, &w), cla = lw_tile_ap(cl, np, 0, A->mdt, 1, &w), ia[3];
  /* nf = (d - d) != 0: inf or NaN; the matmul sums select(nf, 0, d) */
  if ((st = vec(L, TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_ALU_SUB, nfa, nf, &da, d, &da, d, NULL, NULL, 0)) ||
      (st = vec(L, TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_ALU_NE, nfa, nf, &nfa, nf, NULL, NULL, NULL, NULL, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, cla, cl, &nfa, nf, &z, K->cst[0], &da, d, 0)))
    return st;
  for (int j = 0; j < 3; j++) {
    ind[j] = lw_pool_next(&K->ind);
    ia[j] = lw_tile_ap(ind[j], np, 0, A->mdt, 1, &w);
    st = j < 2 ? vec(L, TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_ALU_EQ, ia[j], ind[j], &da, d, NULL, NULL, NULL, NULL,
                     j == 0 ? INFINITY : -INFINITY)
               : vec(L, TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_ALU_NE, ia[j], ind[j], &da, d, &da, d, NULL, NULL, 0);
    if (st) return st;
  }
  for (int j = -1; j < 3; j++) {
    trnc_nc_instr mm;
    memset(&mm, 0, sizeof mm);
    mm.op = TRNC_NC_OP_MATMUL;
    mm.engine = TRNC_NC_TENSOR;
    mm.mode = !A->first;
    lw_tile *acc = j < 0 ? A->ps : A->cnt[j], *mv = j < 0 ? cl : ind[j];
    mm.dst = lw_tile_ap(acc, A->tc, 0, TRNC_F32, 1, &w);
    mm.src[0] = o.dst;
    mm.src[1] = j < 0 ? cla : ia[j];
    lw_tile *mr[2] = {oh, mv};
    if ((st = lw_emit(L, &mm, mr, 2, &acc, 1))) return st;
  }
  A->first = false;
  return TRNC_OK;
}

static trnc_status acc_chunk(lw *L, kctx *K, const job *J, const fchunk *f, void *ctx) {
  actx *A = ctx;
  A->f = f;
  A->first = true;
  A->ps = lw_pool_next(&K->ps);
  for (int j = 0; j < 3; j++) A->cnt[j] = lw_pool_next(&K->nps);
  trnc_status st = for_rows(L, K, J, acc_rows, A);
  if (st) return st;
  A->check = false;
  /* evacuate: out block [tc, W] = PSUM (+ out block) */
  int64_t w = f->elems;
  trnc_dtype odt = J->t->t.dtype;
  lw_tile *ev = lw_pool_next(&K->ev);
  trnc_nc_ap oap = hbm(J->t, J->tbase + A->t0 * J->tps + f->off[PT_T], J->tps, A->tc, f->nd, f->cnt,
                       f->st[PT_T]);
  trnc_nc_instr e;
  memset(&e, 0, sizeof e);
  e.engine = TRNC_NC_VECTOR;
  lw_tile *sum = lw_pool_next(&K->ind);
  e.dst = lw_tile_ap(sum, A->tc, 0, TRNC_F32, 1, &w);
  e.src[0] = lw_tile_ap(A->ps, A->tc, 0, TRNC_F32, 1, &w);
  if (J->base_is_out) {
    lw_tile *b = lw_pool_next(&K->aux);
    trnc_nc_instr ld;
    memset(&ld, 0, sizeof ld);
    ld.op = TRNC_NC_OP_DMA_COPY;
    ld.engine = (uint8_t)lw_dma_queue(L);
    ld.dst = lw_tile_ap(b, A->tc, 0, TRNC_F32, f->nd ? f->nd : 1, f->nd ? f->cnt : (int64_t[]){1});
    ld.src[0] = oap;
    lw_tile *rd[1] = {K->tok};
    if ((st = lw_emit(L, &ld, rd, 1, &b, 1))) return st;
    e.op = TRNC_NC_OP_TENSOR_TENSOR;
    e.alu0 = TRNC_NC_ALU_ADD;
    e.src[1] = lw_tile_ap(b, A->tc, 0, TRNC_F32, 1, &w);
    lw_tile *er[2] = {A->ps, b};
    st = lw_emit(L, &e, er, 2, &sum, 1);
  } else {
    e.op = TRNC_NC_OP_TENSOR_COPY;
    st = lw_emit(L, &e, &A->ps, 1, &sum, 1);
  }
  if (st) return st;
  /* the non-finite sources: M ? (P ? NaN : -inf) : (P ? +inf : sum), then Q ? NaN */
  int tc = A->tc;
  trnc_nc_ap P = lw_tile_ap(A->cnt[0], tc, 0, TRNC_F32, 1, &w), M = lw_tile_ap(A->cnt[1], tc, 0, TRNC_F32, 1, &w);
  trnc_nc_ap Q = lw_tile_ap(A->cnt[2], tc, 0, TRNC_F32, 1, &w), sa = e.dst;
  trnc_nc_ap pinf = lw_tile_ap(K->cst[1], tc, 0, TRNC_F32, 1, &w), ninf = lw_tile_ap(K->cst[2], tc, 0, TRNC_F32, 1, &w);
  trnc_nc_ap nan = lw_tile_ap(K->cst[3], tc, 0, TRNC_F32, 1, &w);
  lw_tile *ta = lw_pool_next(&K->ind), *tb = lw_pool_next(&K->ind);
  trnc_nc_ap aa = lw_tile_ap(ta, tc, 0, TRNC_F32, 1, &w), ba = lw_tile_ap(tb, tc, 0, TRNC_F32, 1, &w);
  trnc_nc_ap eva = lw_tile_ap(ev, tc, 0, odt, 1, &w);
  if ((st = vec(L, TRNC_NC_OP_SELECT, 0, aa, ta, &P, A->cnt[0], &nan, K->cst[3], &ninf, K->cst[2], 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, ba, tb, &P, A->cnt[0], &pinf, K->cst[1], &sa, sum, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, ba, tb, &M, A->cnt[1], &aa, ta, &ba, tb, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, eva, ev, &Q, A->cnt[2], &nan, K->cst[3], &ba, tb, 0)))
    return st;
  trnc_nc_instr s;
  memset(&s, 0, sizeof s);
  s.op = TRNC_NC_OP_DMA_COPY;
  s.engine = (uint8_t)lw_dma_queue(L);
  s.src[0] = lw_tile_ap(ev, A->tc, 0, odt, f->nd ? f->nd : 1, f->nd ? f->cnt : (int64_t[]){1});
  s.dst = oap;
  lw_tile *wt[1] = {K->tok};
  return lw_emit(L, &s, &ev, 1, wt, 1);
}

static trnc_dtype mm_dtype(trnc_dtype dt) {
  return (dt == TRNC_BF16 || dt == TRNC_F16) ? dt : TRNC_F32;
}

/* ---- kernels ------------------------------------------------------------------------------ */

static trnc_status kernel(lw *L, kctx *K, const char *name) {
  memset(K, 0, sizeof *K);
  trnc_status st = lw_kernel_begin(L, name);
  if (st) return st;
  K->tok = token(L);
  if (!K->tok) return L->status;
  if ((st = lw_pool_init(L, &K->ix, TRNC_NC_MEM_SBUF, 64, 6)) ||
      (st = lw_pool_init(L, &K->sm, TRNC_NC_MEM_SBUF, 64, 32)))
    return st;
  return TRNC_OK;
}

static trnc_status run_job(lw *L, const trnc_node *n, job *J) {
  ds_coalesce(&J->rows);
  ds_coalesce(&J->pat);
  if (ds_numel(&J->rows) == 0 || J->t->buffer < 0) return TRNC_OK;
  if (J->trows > INT32_MAX) return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "%s: table too large", n->target);
  if (job_masked(J) && J->trows > MASK_ROWS)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: combined-index table exceeds 2^21 rows", n->target);
  kctx K;
  trnc_status st = kernel(L, &K, trnc_op_name(n->op));
  if (st) return st;
  L->ops_per_engine[1]++;
  actx A;
  memset(&A, 0, sizeof A);
  A.mdt = mm_dtype(J->r->t.dtype);
  A.check = true;
  if ((st = lw_pool_init(L, &K.data, TRNC_NC_MEM_SBUF, ACC_MAXF * 4, 3)) ||
      (st = lw_pool_init(L, &K.aux, TRNC_NC_MEM_SBUF, ACC_MAXF * 4, 2)) ||
      (st = lw_pool_init(L, &K.ev, TRNC_NC_MEM_SBUF, ACC_MAXF * 4, 2)) ||
      (st = lw_pool_init(L, &K.oh, TRNC_NC_MEM_SBUF, LW_P * 4, 3)) ||
      (st = lw_pool_init(L, &K.iota, TRNC_NC_MEM_SBUF, LW_P * 4, 2)) ||
      (st = lw_pool_init(L, &K.ps, TRNC_NC_MEM_PSUM, ACC_MAXF * 4, 2)) ||
      (st = lw_pool_init(L, &K.ind, TRNC_NC_MEM_SBUF, ACC_MAXF * 4, 6)) ||
      (st = lw_pool_init(L, &K.nps, TRNC_NC_MEM_PSUM, ACC_MAXF * 4, 3)))
    return st;
  static const float fills[4] = {0.0f, INFINITY, -INFINITY, NAN};
  for (int c = 0; c < 4; c++) {
    int64_t mf = ACC_MAXF;
    if (!(K.cst[c] = lw_sbuf(L, ACC_MAXF * 4))) return L->status;
    trnc_nc_instr ms;
    memset(&ms, 0, sizeof ms);
    ms.op = TRNC_NC_OP_MEMSET;
    ms.engine = TRNC_NC_GPSIMD;
    ms.imm[0] = fills[c];
    ms.dst = lw_tile_ap(K.cst[c], LW_P, 0, TRNC_F32, 1, &mf);
    if ((st = lw_emit(L, &ms, NULL, 0, &K.cst[c], 1))) return st;
  }
  L->ops_per_engine[0]++;
  for (int64_t t0 = 0; t0 < J->trows; t0 += LW_P) {
    A.t0 = t0;
    A.tc = (int)(J->trows - t0 < LW_P ? J->trows - t0 : LW_P);
    A.iota = lw_pool_next(&K.iota);
    int64_t tcl = A.tc;
    trnc_nc_instr io;
    memset(&io, 0, sizeof io);
    io.op = TRNC_NC_OP_IOTA;
    io.engine = TRNC_NC_GPSIMD;
    io.dst = lw_tile_ap(A.iota, LW_P, 0, TRNC_F32, 1, &tcl);
    io.aff[0] = (int32_t)t0;
    io.aff[2] = 1;
    if ((st = lw_emit(L, &io, NULL, 0, &A.iota, 1))) return st;
    if ((st = for_chunks(L, &K, J, ACC_MAXF, acc_chunk, &A))) return st;
  }
  return TRNC_OK;
}

/* ---- argument helpers ----------------------------------------------------------------------- */




static trnc_ref vref(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_VALUE) ? a->u.ref : TRNC_NO_REF;
}

static const trnc_type *vt(const trnc_graph *g, trnc_ref r) { return &g->values[r].type; }

static int64_t wrapdim(int64_t d, int rank) {
  int r = rank ? rank : 1;
  return d < 0 ? d + r : d;
}



/* ---- advanced indexing layout (index.Tensor, index_put) ------------------------------------- */

typedef struct adv {
  int nidx, pos[2];        /* indexed dims of x */
  trnc_ref ref[2];
  int brank;
  int64_t bshape[R];
  bool adjacent;
  int first;               /* first dim of the broadcast block in the indexed shape */
} adv;

static bool adv_parse(const trnc_graph *g, const trnc_node *n, adv *A) {
  memset(A, 0, sizeof *A);
  const trnc_arg *l = trnc_node_arg(n, 1);
  if (!l || l->kind != TRNC_ARG_LIST) return false;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_arg *a = &l->u.list.items[i];
    if (a->kind != TRNC_ARG_VALUE) continue;
    if (A->nidx == 2) return false;
    const trnc_type *t = vt(g, a->u.ref);
    if (t->dtype != TRNC_I32 && t->dtype != TRNC_I64) return false;
    A->pos[A->nidx] = (int)i;
    A->ref[A->nidx] = a->u.ref;
    A->nidx++;
    if (t->rank > A->brank) {
      int sh = t->rank - A->brank;
      for (int j = A->brank - 1; j >= 0; j--) A->bshape[j + sh] = A->bshape[j];
      for (int j = 0; j < sh; j++) A->bshape[j] = 1;
      A->brank = t->rank;
    }
    for (int j = 0; j < t->rank; j++) {
      int o = A->brank - t->rank + j;
      if (A->bshape[o] == 1) A->bshape[o] = t->shape[j];
    }
  }
  if (!A->nidx) return false;
  A->adjacent = A->nidx == 1 || A->pos[1] == A->pos[0] + 1;
  A->first = A->adjacent ? A->pos[0] : 0;
  return true;
}

/*
 * Fills J for x[indices] (x: the table tv; o: the tv laid out as the
 * indexed shape — the gather destination or the index_put values,
 * broadcast). Row space: the broadcast index shape. Table rows: the indexed
 * dims of x merged (one index: x.stride[pos]; two: gcd of both strides,
 * flat = i0 * m0 + i1 * m1). Free pattern: x's other dims in order.
 */
static void adv_job(const trnc_graph *g, const adv *A, const lw_tv *x, const lw_tv *o, const lw_tv *const *itv,
                    job *J) {
  (void)g;
  const trnc_type *xt = &x->t;
  int orank = xt->rank - A->nidx + A->brank;
  /* o's strides over the indexed shape, right-aligned broadcast */
  int64_t ost[R] = {0};
  for (int i = 0; i < orank; i++) {
    int ti = i - (orank - o->t.rank);
    ost[i] = (ti < 0 || o->t.shape[ti] == 1) ? 0 : o->t.stride[ti];
  }
  J->rows.rank = A->brank;
  J->rows.nops = 4;
  for (int j = 0; j < A->brank; j++) {
    J->rows.size[j] = A->bshape[j];
    J->rows.st[OP_R][j] = ost[A->first + j];
  }
  J->nc = A->nidx;
  for (int k = 0; k < A->nidx; k++) {
    const lw_tv *it = itv[k];
    icomp *c = &J->c[k];
    c->tv = it;
    c->base = it->t.offset;
    c->size = xt->shape[A->pos[k]];
    c->wrap = true;
    for (int j = 0; j < A->brank; j++) {
      int ti = j - (A->brank - it->t.rank);
      J->rows.st[OP_I0 + k][j] = (ti < 0 || it->t.shape[ti] == 1) ? 0 : it->t.stride[ti];
    }
  }
  J->t = x;
  J->tbase = xt->offset;
  if (A->nidx == 1) {
    J->tps = xt->stride[A->pos[0]];
    J->c[0].mult = 1;
    J->trows = J->c[0].size;
  } else {
    int64_t s0 = J->c[0].size > 1 ? xt->stride[A->pos[0]] : 0, s1 = J->c[1].size > 1 ? xt->stride[A->pos[1]] : 0;
    int64_t a = s0 < 0 ? -s0 : s0, b = s1 < 0 ? -s1 : s1;
    while (b) {
      int64_t t = a % b;
      a = b;
      b = t;
    }
    int64_t gg = a ? a : 1;
    J->tps = gg;
    J->c[0].mult = s0 / gg;
    J->c[1].mult = s1 / gg;
    J->trows = (J->c[0].size - 1) * J->c[0].mult + (J->c[1].size - 1) * J->c[1].mult + 1;
  }
  /* free pattern: x's remaining dims, o's matching dims */
  J->pat.nops = 2;
  int oi = 0;
  for (int i = 0; i < xt->rank; i++) {
    bool indexed = (i == A->pos[0]) || (A->nidx == 2 && i == A->pos[1]);
    if (indexed) continue;
    if (oi == A->first) oi += A->brank;
    J->pat.size[J->pat.rank] = xt->shape[i];
    J->pat.st[PT_T][J->pat.rank] = xt->stride[i];
    J->pat.st[PT_R][J->pat.rank] = ost[oi];
    J->pat.rank++;
    oi++;
  }
  J->r = o;
  J->rbase = o->t.offset;
}

/* ---- handles ------------------------------------------------------------------------------ */

static bool handles(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_EMBEDDING_DENSE_BACKWARD: /* dtype, blocks: check_embedding_bw */
      return vref(n, 0) != TRNC_NO_REF && vref(n, 1) != TRNC_NO_REF;
    case TRNC_OP_COPY:
      return vref(n, 0) != TRNC_NO_REF && vref(n, 1) != TRNC_NO_REF;
    case TRNC_OP_SCATTER_ADD: /* ranks, sizes, dtypes: check_gather */
      return vref(n, 0) != TRNC_NO_REF && vref(n, 2) != TRNC_NO_REF && vref(n, 3) != TRNC_NO_REF;
    case TRNC_OP_INDEX_PUT: { /* dtype, layout, sizes, blocks: check_index (ir/ops.c) */
      adv A;
      return trnc_arg_bool(n, 3, false) && vref(n, 0) != TRNC_NO_REF && vref(n, 2) != TRNC_NO_REF && adv_parse(g, n, &A);
    }
    default:
      return false;
  }
}

/* ---- emitters ------------------------------------------------------------------------------ */

/* The job of an embedding lookup (or its scatter-add backward): the rows
 * indexed by ix (any shape) address rows of table t [V, D]; the row tensor
 * r has shape ix.shape + [D]. */
static void embedding_job(job *J, const lw_tv *ix, const lw_tv *t, const lw_tv *r) {
  memset(J, 0, sizeof *J);
  int rk = ix->t.rank;
  J->rows.rank = rk;
  J->rows.nops = 4;
  for (int i = 0; i < rk; i++) {
    J->rows.size[i] = ix->t.shape[i];
    J->rows.st[OP_R][i] = r->t.stride[i];
    J->rows.st[OP_I0][i] = ix->t.stride[i];
  }
  J->nc = 1;
  J->c[0] = (icomp){ix, ix->t.offset, t->t.shape[0], 1, false};
  J->t = t;
  J->tbase = t->t.offset;
  J->tps = t->t.stride[0];
  J->trows = t->t.shape[0];
  J->pat.nops = 2;
  J->pat.rank = 1;
  J->pat.size[0] = t->t.shape[1];
  J->pat.st[PT_T][0] = t->t.stride[1];
  J->pat.st[PT_R][0] = r->t.stride[rk];
  J->r = r;
  J->rbase = r->t.offset;
}

static trnc_status emit_embedding_bw(lw *L, const trnc_node *n) {
  const lw_tv *go = &L->tv[vref(n, 0)], *ix = &L->tv[vref(n, 1)], *o = &L->tv[n->outs[0]];
  if (o->buffer < 0) return TRNC_OK;
  job J;
  embedding_job(&J, ix, o, go);
  int64_t pad = trnc_arg_int(n, 3, -1);
  J.has_skip = pad >= 0;
  J.skip = pad;
  return run_job(L, n, &J);
}

/* Element-level job for gather / scatter*: row space = index shape, one
 * element per row; table = t (element rows, stride 1); row operand r. */
static void elem_job(const lw_tv *t, const lw_tv *r, const lw_tv *ix, int d, job *J) {
  memset(J, 0, sizeof *J);
  int rank = ix->t.rank;
  J->rows.rank = rank;
  J->rows.nops = 4;
  for (int i = 0; i < rank; i++) {
    J->rows.size[i] = ix->t.shape[i];
    J->rows.st[OP_R][i] = r ? r->t.stride[i] : 0;
    J->rows.st[OP_I0][i] = ix->t.stride[i];
    J->rows.st[OP_AFF][i] = i == d ? 0 : t->t.stride[i];
    if (i != d && t->t.shape[i] > 1) J->has_aff = true;
  }
  J->nc = 1;
  J->c[0] = (icomp){ix, ix->t.offset, t->t.shape[d], t->t.stride[d], false};
  J->t = t;
  J->tbase = t->t.offset;
  J->tps = 1;
  J->trows = trnc_type_extent(&t->t);
  J->pat.nops = 2;
  J->r = r;
  J->rbase = r ? r->t.offset : 0;
}

static trnc_status emit_scatter(lw *L, const trnc_node *n) {
  const lw_tv *x = &L->tv[vref(n, 0)], *ix = &L->tv[vref(n, 2)], *o = &L->tv[n->outs[0]];
  if (o->buffer < 0) return TRNC_OK;
  trnc_status st = lw_emit_copy(L, o, x, "scatter_self");
  if (st) return st;
  int d = (int)wrapdim(trnc_arg_int(n, 1, 0), x->t.rank);
  job J;
  elem_job(o, &L->tv[vref(n, 3)], ix, d, &J);
  J.base_is_out = true;
  return run_job(L, n, &J);
}

static trnc_status emit_index_put(lw *L, const trnc_node *n) {
  adv A;
  adv_parse(L->g, n, &A);
  const lw_tv *x = &L->tv[vref(n, 0)], *v = &L->tv[vref(n, 2)], *o = &L->tv[n->outs[0]];
  if (o->buffer < 0) return TRNC_OK;
  trnc_status st = lw_emit_copy(L, o, x, "index_put_self");
  if (st) return st;
  const lw_tv *itv[2] = {&L->tv[A.ref[0]], A.nidx > 1 ? &L->tv[A.ref[1]] : NULL};
  job J;
  memset(&J, 0, sizeof J);
  adv_job(L->g, &A, o, v, itv, &J);
  J.base_is_out = true;
  return run_job(L, n, &J);
}

static trnc_status emit(lw *L, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_EMBEDDING_DENSE_BACKWARD: return emit_embedding_bw(L, n);
    case TRNC_OP_COPY: /* functional copy_: src broadcast (and cast) to self's shape */
      return lw_emit_copy(L, &L->tv[n->outs[0]], &L->tv[vref(n, 1)], "copy");
    case TRNC_OP_SCATTER_ADD: return emit_scatter(L, n);
    case TRNC_OP_INDEX_PUT: return emit_index_put(L, n);
    default: return lw_fail(L, n, TRNC_ERR_INTERNAL, "emit_data: unexpected op %s", n->target);
  }
}

bool lw_data_handles(const trnc_graph *g, const trnc_node *n) { return handles(g, n); }
trnc_status lw_data_emit(lw *L, const trnc_node *n) { return emit(L, n); }
