/*
 * accum.c — the accumulating scatter of the kernel IR, `accum T, %i, %v`:
 * row %i of table T += %v, duplicate indices summed (embedding backward,
 * index_put(accumulate=True), scatter_add: their kernels are built in
 * codegen/kir/gather.c).
 *
 * The kernel's axes split in two: the *row* axes, along which table T does
 * not vary (stride 0: the index's dims), and the *pattern* axes, T's access
 * map (a row's elements). The index %i is constant along the pattern (one
 * i32 per partition); an index outside [0, T.rows) adds nothing, so range
 * checks are explicit gathers of the index that nothing reads (the DMA
 * gather reports TRNC_ERR_LIMIT, as eager raises; they name the user's
 * value where the index is combined or padded).
 *
 * A DMA scatter overwrites (duplicates would lose updates), so the sum runs
 * on TensorE as a one-hot matmul: for a block of <= 128 table rows
 * [t0, t0 + tc) and <= 512 pattern elements W,
 *   PSUM[tc, W] += onehot[K, tc]^T . src[K, W]   (K <= 128 source rows),
 * onehot[k, t] = (idx(k) == t0 + t) from an iota row and the index column
 * (fp32: exact, as the op table limits tables to 2^21 rows). The matmul
 * sums the finite sources only (0 * inf = NaN would reach every row of the
 * block): three more matmuls count the +inf, -inf and NaN sources per
 * element, and the evacuation gives NaN, +inf or -inf where eager's sum
 * does (for W <= 128 the four operands are one [K, 4W] tile and one matmul
 * into one PSUM bank). Sums are fp32, exact up to summation order. The evacuation adds
 * T's previous contents (`accum`) or overwrites every row of the block
 * (`accum ..., init`: rows no index names become 0).
 *
 * Schedule: blocks of table rows outermost, then pattern chunks (<= 4 dims
 * in an access pattern, the innermost chunked to 512 elements, the rest
 * looped), then the tiles of the row space (the largest row axis on
 * partitions, the others looped), whose ops (loads, index arithmetic, the
 * one-hot and the four matmuls) run once per block and chunk; the range
 * checks run with the first. Cost: ceil(T/128) * ceil(N/128) *
 * ceil(W/512) blocks of 4 matmuls (1 when W <= 128), within the op table's
 * limits (ir/ops.c). The
 * evacuations' read-modify-writes of T and the checks that read T's buffer
 * are ordered through an HBM token tile (lw_emit tracks queues, not
 * memory).
 */
#include <math.h>
#include <string.h>

#include "codegen/kir/kir.h"

#define ACC_COLS TRNC_ACC_BLOCK_COLS /* one PSUM bank of fp32 */
#define RES_BYTES 65536              /* SBUF per partition for resident operands */
_Static_assert(TRNC_ACC_BLOCK_ROWS == LW_P, "an accumulation block is one partition tile of rows");

bool kir_accum(kir_kernel *k, int tensor, int idx, int v, bool init) {
  if (idx < 0 || v < 0 || tensor < 0) return false;
  kir_op o;
  memset(&o, 0, sizeof o);
  o.code = KIR_ACCUM;
  o.fn = init;
  o.dst = -1;
  o.src[0] = (int16_t)idx;
  o.src[1] = (int16_t)v;
  o.src[2] = -1;
  o.tensor = (int16_t)tensor;
  return kir_op_add(k, o);
}

typedef struct acc {
  lw *L;
  const kir_kernel *k;
  const kir_op *op;               /* the accum op (the kernel's last) */
  int nrow, row[KIR_MAX_AXES];    /* row axes (extent > 1), outer to inner */
  int npat, pat[KIR_MAX_AXES];    /* pattern axes (extent > 1), outer to inner */
  int pax;                        /* row axis on partitions, -1: one row */
  bool narrow[KIR_MAX_VALUES];    /* constant along the pattern: [np, 1] tiles */
  bool check[KIR_MAX_OPS];        /* gathers nothing reads: range checks */
  lw_tile *iot;                   /* the block's iota row t0 + [0, tc) */
  lw_pool pool[KIR_MAX_VALUES];
  lw_tile *cur[KIR_MAX_VALUES];
  lw_pool oh, iota, fi, opnd, ind, ev, aux, ps, nps;
  /* resident (several blocks, operands within RES_BYTES): every row tile's
   * index column and operand tile, prepared once per chunk */
  int64_t res;                    /* row tiles, 0: not resident */
  lw_tile **rfi, **rop;
  int *rnp;
  int64_t slot;
  lw_tile *cst[4];                /* [P, ACC_COLS] f32 of 0, +inf, -inf, NaN */
  lw_tile *tok;                   /* orders T's read-modify-writes and checks */
  trnc_dtype mdt;                 /* TensorE operand dtype */
  /* the current position */
  int64_t idx[KIR_MAX_AXES];      /* every axis: row tile start / pattern chunk start */
  int np;
  int nd;                         /* pattern dims in the access patterns */
  int64_t cnt[TRNC_NC_MAX_FREE];
  int64_t w;                      /* elements per partition of a chunk */
  int64_t t0;
  int tc;
  bool first, checks;
  bool pack;                      /* 4 W <= ACC_COLS: the sum and the three counts
                                     share one operand tile, one matmul, one bank */
  lw_tile *psum, *cnts[3];
} acc;

/* The HBM access pattern of tensor T at the current tile: np partitions
 * along the partition axis, the chunk's pattern dims (narrow: one element). */
static trnc_nc_ap at(const acc *A, const kir_tensor *T, int32_t buffer, trnc_dtype dt, int np, bool narrow) {
  const kir_kernel *k = A->k;
  int64_t off = T->offset;
  for (int a = 0; a < k->naxes; a++) off += A->idx[a] * T->stride[a];
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)dt;
  ap.buffer = buffer;
  ap.offset = off * lw_esize(dt);
  ap.partitions = np;
  ap.partition_stride = A->pax >= 0 ? T->stride[A->pax] : 0;
  if (narrow || A->nd == 0) {
    ap.nfree = 1;
    ap.free[0].stride = 1;
    ap.free[0].count = 1;
  } else {
    ap.nfree = (uint8_t)A->nd;
    for (int j = 0; j < A->nd; j++) {
      ap.free[j].stride = T->stride[A->pat[A->npat - A->nd + j]];
      ap.free[j].count = A->cnt[j];
    }
  }
  return ap;
}

static trnc_nc_ap flat(const lw_tile *t, int np, trnc_dtype dt, int64_t n) { return lw_tile_ap(t, np, 0, dt, 1, &n); }

/* Part j of n elements of a packed tile [np, 4n]. */
static trnc_nc_ap part(const lw_tile *t, int np, trnc_dtype dt, int64_t n, int j) {
  return lw_tile_ap(t, np, j * n * lw_esize(dt), dt, 1, &n);
}

static trnc_nc_ap chunk_ap(const acc *A, const lw_tile *t, int np, trnc_dtype dt) {
  int64_t one = 1;
  return A->nd ? lw_tile_ap(t, np, 0, dt, A->nd, A->cnt) : lw_tile_ap(t, np, 0, dt, 1, &one);
}

/* One VectorE instruction dst = op(a[, b[, c]]) (tensor_scalar: imm). */
static trnc_status vec(lw *L, int op, int alu, trnc_nc_ap dst, lw_tile *dt, const trnc_nc_ap *a, lw_tile *at_,
                       const trnc_nc_ap *b, lw_tile *bt, const trnc_nc_ap *c, lw_tile *ct, float imm) {
  trnc_nc_instr in = lw_instr(op, TRNC_NC_VECTOR);
  in.alu0 = (uint8_t)alu;
  in.alu1 = TRNC_NC_ALU_BYPASS;
  in.imm[0] = imm;
  in.dst = dst;
  in.src[0] = *a;
  lw_tile *rd[3] = {at_, bt, ct};
  int nr = 1;
  if (b) {
    in.src[1] = *b;
    nr = 2;
  }
  if (c) {
    in.src[2] = *c;
    nr = 3;
  }
  L->ops_per_engine[1]++;
  return lw_emit(L, &in, rd, nr, &dt, 1);
}

/* The block-independent operands of one row tile: the index as f32
 * [np, 1] into fi, and into op [np, 4W] (parts of W elements) the finite
 * sources (nf = (d - d) != 0: inf or NaN; the matmul sums select(nf, 0, d))
 * and the +inf, -inf, NaN indicators. */
static trnc_status prepare(acc *A, lw_tile *ix, lw_tile *d, trnc_dtype ddt, lw_tile *fi, lw_tile *op) {
  lw *L = A->L;
  int np = A->np;
  int64_t w = A->w;
  trnc_status st;
  trnc_nc_ap fia = flat(fi, np, TRNC_F32, 1), ixa = flat(ix, np, TRNC_I32, 1);
  if ((st = vec(L, TRNC_NC_OP_TENSOR_COPY, 0, fia, fi, &ixa, ix, NULL, NULL, NULL, NULL, 0))) return st;
  trnc_nc_ap da = flat(d, np, ddt, w), z = flat(A->cst[0], np, TRNC_F32, w);
  lw_tile *nf = lw_pool_next(&A->ind);
  trnc_nc_ap nfa = flat(nf, np, TRNC_F32, w), p0 = part(op, np, A->mdt, w, 0);
  trnc_nc_ap p1 = part(op, np, A->mdt, w, 1), p2 = part(op, np, A->mdt, w, 2), p3 = part(op, np, A->mdt, w, 3);
  if ((st = vec(L, TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_ALU_SUB, nfa, nf, &da, d, &da, d, NULL, NULL, 0)) ||
      (st = vec(L, TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_ALU_NE, nfa, nf, &nfa, nf, NULL, NULL, NULL, NULL, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, p0, op, &nfa, nf, &z, A->cst[0], &da, d, 0)) ||
      (st = vec(L, TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_ALU_EQ, p1, op, &da, d, NULL, NULL, NULL, NULL, INFINITY)) ||
      (st = vec(L, TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_ALU_EQ, p2, op, &da, d, NULL, NULL, NULL, NULL, -INFINITY)) ||
      (st = vec(L, TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_ALU_NE, p3, op, &da, d, &da, d, NULL, NULL, 0)))
    return st;
  return TRNC_OK;
}

/* The one-hot [np, tc] of index column fi for the current block and the
 * matmuls of operand op into the block's PSUM sums (one when packed). */
static trnc_status onehot_mm(acc *A, int np, lw_tile *fi, lw_tile *op) {
  lw *L = A->L;
  int64_t w = A->w, tcl = A->tc;
  trnc_status st;
  lw_tile *oh = lw_pool_next(&A->oh);
  trnc_nc_ap oha = flat(oh, np, A->mdt, tcl);
  trnc_nc_instr o = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  o.alu0 = TRNC_NC_ALU_EQ;
  o.alu1 = TRNC_NC_ALU_BYPASS;
  o.dst = oha;
  o.src[0] = flat(A->iot, np, TRNC_F32, tcl);
  o.src[1] = flat(fi, np, TRNC_F32, 1);
  lw_tile *rd[2] = {A->iot, fi};
  L->ops_per_engine[1]++;
  if ((st = lw_emit(L, &o, rd, 2, &oh, 1))) return st;
  for (int j = 0; j < (A->pack ? 1 : 4); j++) {
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = !A->first;
    lw_tile *sum = j == 0 ? A->psum : A->cnts[j - 1];
    mm.dst = flat(sum, A->tc, TRNC_F32, A->pack ? 4 * w : w);
    mm.src[0] = oha;
    mm.src[1] = A->pack ? flat(op, np, A->mdt, 4 * w) : part(op, np, A->mdt, w, j);
    lw_tile *mr[2] = {oh, op};
    L->ops_per_engine[0]++;
    if ((st = lw_emit(L, &mm, mr, 2, &sum, 1))) return st;
  }
  A->first = false;
  return TRNC_OK;
}

/* The DMA gather of table T at the indices of tile ix into dst (a range
 * check when nothing reads dst), after the token's writes. */
static trnc_status gather(acc *A, const kir_op *o) {
  lw *L = A->L;
  const kir_tensor *T = &A->k->tensors[o->tensor];
  lw_tile *dst = A->cur[o->dst] = lw_pool_next(&A->pool[o->dst]), *ix = A->cur[o->src[0]];
  trnc_nc_ap table = at(A, T, T->buffer, T->dtype, 1, true);
  table.partitions = (int32_t)T->rows;
  table.partition_stride = T->row_stride;
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  in.mode = TRNC_NC_DMA_GATHER;
  in.dst = flat(dst, A->np, A->k->values[o->dst].dtype, 1);
  in.src[0] = table;
  in.src[1] = flat(ix, A->np, TRNC_I32, 1);
  lw_tile *rd[2] = {ix, A->tok};
  return lw_emit(L, &in, rd, 2, &dst, 1);
}

/* The ops of one row tile, then its accumulation. */
static trnc_status row_tile(acc *A) {
  lw *L = A->L;
  const kir_kernel *k = A->k;
  int np = A->np;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    trnc_status st;
    if (o->code == KIR_ACCUM) { /* resident: the operands stay for every block */
      bool res = A->res > 0;
      lw_tile *fi = res ? A->rfi[A->slot] : lw_pool_next(&A->fi), *op = res ? A->rop[A->slot] : lw_pool_next(&A->opnd);
      if (res) A->rnp[A->slot++] = np;
      st = prepare(A, A->cur[o->src[0]], A->cur[o->src[1]], k->values[o->src[1]].dtype, fi, op);
      if (!st && !res) st = onehot_mm(A, np, fi, op);
    } else if (o->code == KIR_GATHER) {
      if (A->check[i] && !A->checks) continue;
      st = gather(A, o);
    } else if (o->code == KIR_LOAD) {
      const kir_tensor *T = &k->tensors[o->tensor];
      trnc_dtype dt = k->values[o->dst].dtype;
      lw_tile *t = A->cur[o->dst] = lw_pool_next(&A->pool[o->dst]);
      int64_t one = 1;
      trnc_nc_ap sb = A->narrow[o->dst] ? lw_tile_ap(t, np, 0, dt, 1, &one) : chunk_ap(A, t, np, dt);
      st = lw_dma(L, t, sb, at(A, T, T->buffer, dt, np, A->narrow[o->dst]), false);
    } else if (o->code == KIR_IOTA) { /* narrow: the access map's offsets of the rows */
      const kir_tensor *T = &k->tensors[o->tensor];
      lw_tile *t = A->cur[o->dst] = lw_pool_next(&A->pool[o->dst]);
      trnc_nc_ap h = at(A, T, -1, TRNC_I32, np, true);
      int64_t a0 = h.offset / 4, a1 = np > 1 ? h.partition_stride : 0;
      if (a0 > INT32_MAX || a1 > INT32_MAX || a0 < INT32_MIN || a1 < INT32_MIN)
        return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: an iota beyond int32");
      trnc_nc_instr io = lw_instr(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
      io.dst = flat(t, np, TRNC_I32, 1);
      io.aff[0] = (int32_t)a0;
      io.aff[1] = (int32_t)a1;
      L->ops_per_engine[3]++;
      st = lw_emit(L, &io, NULL, 0, &t, 1);
    } else {
      A->cur[o->dst] = lw_pool_next(&A->pool[o->dst]);
      st = kir_emit_tile_op(L, k, o, A->cur, NULL, np, A->narrow[o->dst] ? 1 : A->w);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Every row tile of the current block and chunk. */
static trnc_status row_tiles(acc *A) {
  int64_t psize = A->pax >= 0 ? A->k->extent[A->pax] : 1;
  for (int r = 0; r < A->nrow; r++) A->idx[A->row[r]] = 0;
  for (;;) {
    for (int64_t p0 = 0; p0 < psize; p0 += LW_P) {
      if (A->pax >= 0) A->idx[A->pax] = p0;
      A->np = (int)(psize - p0 < LW_P ? psize - p0 : LW_P);
      trnc_status st = row_tile(A);
      if (st) return st;
    }
    int r = A->nrow - 1;
    for (; r >= 0; r--) {
      int a = A->row[r];
      if (a == A->pax) continue;
      if (++A->idx[a] < A->k->extent[a]) break;
      A->idx[a] = 0;
    }
    if (r < 0) return TRNC_OK;
  }
}

/* Accumulates the current chunk over every row tile and evacuates the
 * block: T rows [t0, t0 + tc) = sum (+ T's rows), non-finite sources put
 * back as eager's sum gives them. */
static trnc_status evacuate(acc *A);

/* Starts the accumulation of a block in PSUM. */
static void block_begin(acc *A) {
  A->first = true;
  A->psum = lw_pool_next(&A->ps);
  for (int j = 0; j < 3; j++) A->cnts[j] = A->pack ? A->psum : lw_pool_next(&A->nps);
}

/* The iota row t0 + [0, tc) of block t0. */
static trnc_status block_iota(acc *A, int64_t t0) {
  const kir_tensor *T = &A->k->tensors[A->op->tensor];
  A->t0 = t0;
  A->tc = (int)(T->rows - t0 < LW_P ? T->rows - t0 : LW_P);
  lw_tile *io = A->iot = lw_pool_next(&A->iota);
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
  in.dst = flat(io, LW_P, TRNC_F32, A->tc);
  in.aff[0] = (int32_t)t0;
  in.aff[2] = 1;
  A->L->ops_per_engine[3]++;
  return lw_emit(A->L, &in, NULL, 0, &io, 1);
}

/* Accumulates the current chunk over every row tile and evacuates: the
 * current block, or (resident) every block from the prepared operands. */
static trnc_status chunk(acc *A) {
  const kir_tensor *T = &A->k->tensors[A->op->tensor];
  int64_t saved[KIR_MAX_AXES];
  memcpy(saved, A->idx, sizeof saved);
  A->slot = 0;
  if (!A->res) block_begin(A);
  trnc_status st = row_tiles(A);
  if (st) return st;
  A->checks = false;
  memcpy(A->idx, saved, sizeof saved);
  if (!A->res) return evacuate(A);
  for (int64_t t0 = 0; t0 < T->rows; t0 += LW_P) {
    if ((st = block_iota(A, t0))) return st;
    block_begin(A);
    for (int64_t r = 0; r < A->slot; r++)
      if ((st = onehot_mm(A, A->rnp[r], A->rfi[r], A->rop[r]))) return st;
    if ((st = evacuate(A))) return st;
  }
  return TRNC_OK;
}

/* The block's PSUM sums into T rows [t0, t0 + tc) (+ T's rows), the
 * non-finite sources put back as eager's sum gives them. */
static trnc_status evacuate(acc *A) {
  lw *L = A->L;
  const kir_kernel *k = A->k;
  const kir_tensor *T = &k->tensors[A->op->tensor];
  trnc_status st;
  int tc = A->tc;
  int64_t w = A->w;
  trnc_dtype odt = T->dtype;
  /* T's block: tc rows from t0 (the row axes' indices are 0: T's strides) */
  kir_tensor B = *T;
  B.offset += A->t0 * T->row_stride;
  trnc_nc_ap oap = at(A, &B, T->buffer, odt, tc, false);
  oap.partitions = tc;
  oap.partition_stride = T->row_stride;
  lw_tile *sum = lw_pool_next(&A->ind), *ev = lw_pool_next(&A->ev);
  trnc_nc_ap sa = flat(sum, tc, TRNC_F32, w), pa = flat(A->psum, tc, TRNC_F32, w);
  if (!A->op->fn) { /* accumulate onto T's rows */
    lw_tile *b = lw_pool_next(&A->aux);
    trnc_nc_instr ld = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
    ld.dst = chunk_ap(A, b, tc, TRNC_F32);
    ld.src[0] = oap;
    lw_tile *rd[1] = {A->tok};
    if ((st = lw_emit(L, &ld, rd, 1, &b, 1))) return st;
    trnc_nc_ap ba = flat(b, tc, TRNC_F32, w);
    st = vec(L, TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_ALU_ADD, sa, sum, &pa, A->psum, &ba, b, NULL, NULL, 0);
  } else {
    st = vec(L, TRNC_NC_OP_TENSOR_COPY, 0, sa, sum, &pa, A->psum, NULL, NULL, NULL, NULL, 0);
  }
  if (st) return st;
  /* M ? (P ? NaN : -inf) : (P ? +inf : sum), then Q ? NaN */
  int pk = A->pack;
  trnc_nc_ap P = part(A->cnts[0], tc, TRNC_F32, w, pk), M = part(A->cnts[1], tc, TRNC_F32, w, 2 * pk);
  trnc_nc_ap Q = part(A->cnts[2], tc, TRNC_F32, w, 3 * pk);
  trnc_nc_ap pinf = flat(A->cst[1], tc, TRNC_F32, w), ninf = flat(A->cst[2], tc, TRNC_F32, w);
  trnc_nc_ap nan = flat(A->cst[3], tc, TRNC_F32, w);
  lw_tile *ta = lw_pool_next(&A->ind), *tb = lw_pool_next(&A->ind);
  trnc_nc_ap aa = flat(ta, tc, TRNC_F32, w), ba = flat(tb, tc, TRNC_F32, w), eva = flat(ev, tc, odt, w);
  if ((st = vec(L, TRNC_NC_OP_SELECT, 0, aa, ta, &P, A->cnts[0], &nan, A->cst[3], &ninf, A->cst[2], 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, ba, tb, &P, A->cnts[0], &pinf, A->cst[1], &sa, sum, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, ba, tb, &M, A->cnts[1], &aa, ta, &ba, tb, 0)) ||
      (st = vec(L, TRNC_NC_OP_SELECT, 0, eva, ev, &Q, A->cnts[2], &nan, A->cst[3], &ba, tb, 0)))
    return st;
  trnc_nc_instr s = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
  s.src[0] = chunk_ap(A, ev, tc, odt);
  s.dst = oap;
  lw_tile *wt[1] = {A->tok};
  return lw_emit(L, &s, &ev, 1, wt, 1);
}

/* Every pattern chunk of the current block: up to TRNC_NC_MAX_FREE inner
 * pattern axes in the access patterns (fewer while the ones outside the
 * innermost exceed a chunk), the innermost in chunks of ACC_COLS / the
 * others' elements, the outer ones looped. */
static int chunk_plan(const acc *A, int64_t *last, int64_t *step, int64_t *wmax) {
  const kir_kernel *k = A->k;
  int n = A->npat, nd = n < TRNC_NC_MAX_FREE ? n : TRNC_NC_MAX_FREE;
  for (;;) {
    int64_t inner = 1;
    for (int j = n - nd; j < n - 1; j++) inner *= k->extent[A->pat[j]];
    if (nd <= 1 || inner <= ACC_COLS) break;
    nd--;
  }
  int64_t inner = 1;
  for (int j = n - nd; j < n - 1; j++) inner *= k->extent[A->pat[j]];
  *last = nd ? k->extent[A->pat[n - 1]] : 1;
  *step = ACC_COLS / inner;
  if (*step < 1) *step = 1;
  if (*step > *last) *step = *last;
  *wmax = inner * *step;
  return nd;
}

static trnc_status chunks(acc *A) {
  const kir_kernel *k = A->k;
  int n = A->npat;
  int64_t last, step, wmax;
  int nd = chunk_plan(A, &last, &step, &wmax);
  A->nd = nd;
  for (int j = 0; j < n; j++) A->idx[A->pat[j]] = 0;
  for (;;) {
    for (int64_t f0 = 0; f0 < last; f0 += step) {
      if (nd) A->idx[A->pat[n - 1]] = f0;
      A->w = 1;
      for (int j = 0; j < nd; j++) {
        int a = A->pat[n - nd + j];
        A->cnt[j] = j == nd - 1 ? (last - f0 < step ? last - f0 : step) : k->extent[a];
        A->w *= A->cnt[j];
      }
      A->pack = 4 * A->w <= ACC_COLS;
      trnc_status st = chunk(A);
      if (st) return st;
    }
    if (nd) A->idx[A->pat[n - 1]] = 0;
    int j = n - nd - 1;
    for (; j >= 0; j--) {
      if (++A->idx[A->pat[j]] < k->extent[A->pat[j]]) break;
      A->idx[A->pat[j]] = 0;
    }
    if (j < 0) return TRNC_OK;
  }
}

trnc_status kir_emit_accum(lw *L, const kir_kernel *kin) {
  acc *A = trnc_arena_alloc(&L->arena, sizeof *A);
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!A || !k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  *k = *kin;
  memset(A, 0, sizeof *A);
  A->L = L;
  A->k = k;
  A->pax = -1;
  const char *why = NULL;
  for (int i = 0; i < k->nops && !why; i++) {
    int c = k->ops[i].code;
    if (c == KIR_ACCUM) {
      if (A->op) why = "two accum ops";
      A->op = &k->ops[i];
    } else if (c != KIR_LOAD && c != KIR_IOTA && c != KIR_GATHER && c != KIR_TT && c != KIR_TS && c != KIR_COPY &&
               c != KIR_CONST && c != KIR_SELECT) {
      why = "an op other than load, iota, gather and elementwise ones";
    } else if (c == KIR_TS && (k->ops[i].src[1] >= 0 || k->ops[i].src[2] >= 0)) {
      why = "a ts with value scalars";
    }
  }
  if (!why && (!A->op || A->op != &k->ops[k->nops - 1])) why = "no accum op last";
  if (why) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s: %s", k->name, why);
  const kir_tensor *T = &k->tensors[A->op->tensor];
  for (int a = 0; a < k->naxes; a++) {
    if (k->extent[a] <= 1) continue;
    if (T->stride[a] == 0) A->row[A->nrow++] = a;
    else A->pat[A->npat++] = a;
  }
  /* narrow values: every tensor they are computed from is constant along
   * the pattern */
  bool used[KIR_MAX_VALUES] = {false};
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    for (int s = 0; s < 3; s++)
      if (o->src[s] >= 0) used[o->src[s]] = true;
  }
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->dst < 0) continue;
    bool nar = true;
    if (o->code == KIR_LOAD || o->code == KIR_IOTA) {
      for (int j = 0; j < A->npat; j++) nar &= k->tensors[o->tensor].stride[A->pat[j]] == 0;
    } else if (o->code == KIR_GATHER) {
      nar = A->narrow[o->src[0]];
      for (int j = 0; j < A->npat && nar; j++) nar &= k->tensors[o->tensor].stride[A->pat[j]] == 0;
      if (!nar) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s gathers whole rows", k->name);
      A->check[i] = !used[o->dst];
    } else if (o->code != KIR_CONST) {
      bool any = false;
      for (int s = 0; s < 3; s++)
        if (o->src[s] >= 0) {
          nar &= A->narrow[o->src[s]];
          any |= !A->narrow[o->src[s]];
        }
      if (!nar && any) /* a wide value of narrow operands would need a broadcast */
        for (int s = 0; s < 3; s++)
          if (o->src[s] >= 0 && A->narrow[o->src[s]])
            return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s mixes rows and elements", k->name);
    }
    A->narrow[o->dst] = nar;
  }
  int ix = A->op->src[0], v = A->op->src[1];
  if (!A->narrow[ix] || k->values[ix].dtype != TRNC_I32)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s: its index varies along the row", k->name);
  trnc_dtype vdt = k->values[v].dtype;
  if (vdt != TRNC_F32 && vdt != TRNC_BF16 && vdt != TRNC_F16)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s sums a non-float value", k->name);
  if (A->npat && A->narrow[v]) { /* a source constant along the row (broadcast values): loaded whole */
    const kir_op *d = NULL;
    for (int i = 0; i < k->nops; i++)
      if (k->ops[i].dst == v) d = &k->ops[i];
    if (!d || d->code != KIR_LOAD)
      return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s sums a value constant along the row",
                     k->name);
    A->narrow[v] = false;
  }
  A->mdt = vdt;
  if (T->rows < 1 || T->rows > INT32_MAX || T->buffer < 0)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: accum kernel %s: table of %lld rows", k->name,
                   (long long)T->rows);
  for (int r = 0; r < A->nrow; r++)
    if (A->pax < 0 || k->extent[A->row[r]] > k->extent[A->pax]) A->pax = A->row[r];
  /* pools */
  trnc_status st;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->dst < 0) continue;
    int64_t bytes = A->narrow[o->dst] ? 64 : ACC_COLS * 4;
    if ((st = lw_pool_init(L, &A->pool[o->dst], TRNC_NC_MEM_SBUF, bytes, o->code == KIR_LOAD ? 3 : 2))) return st;
  }
  if ((st = lw_pool_init(L, &A->oh, TRNC_NC_MEM_SBUF, LW_P * 4, 3)) ||
      (st = lw_pool_init(L, &A->iota, TRNC_NC_MEM_SBUF, LW_P * 4, 2)) ||
      (st = lw_pool_init(L, &A->fi, TRNC_NC_MEM_SBUF, 64, 4)) ||
      (st = lw_pool_init(L, &A->opnd, TRNC_NC_MEM_SBUF, 4 * ACC_COLS * 4, 2)) ||
      (st = lw_pool_init(L, &A->ind, TRNC_NC_MEM_SBUF, ACC_COLS * 4, 6)) ||
      (st = lw_pool_init(L, &A->ev, TRNC_NC_MEM_SBUF, ACC_COLS * 4, 2)) ||
      (st = lw_pool_init(L, &A->aux, TRNC_NC_MEM_SBUF, ACC_COLS * 4, 2)) ||
      (st = lw_pool_init(L, &A->ps, TRNC_NC_MEM_PSUM, ACC_COLS * 4, 2)) ||
      (st = lw_pool_init(L, &A->nps, TRNC_NC_MEM_PSUM, ACC_COLS * 4, 6)))
    return st;
  if (!(A->tok = trnc_arena_alloc(&L->arena, sizeof *A->tok))) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  memset(A->tok, 0, sizeof *A->tok);
  A->tok->mem = TRNC_NC_MEM_HBM;
  static const float fills[4] = {0.0f, INFINITY, -INFINITY, NAN};
  for (int c = 0; c < 4; c++) {
    if (!(A->cst[c] = lw_sbuf(L, ACC_COLS * 4))) return L->status;
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    ms.imm[0] = fills[c];
    ms.dst = flat(A->cst[c], LW_P, TRNC_F32, ACC_COLS);
    if ((st = lw_emit(L, &ms, NULL, 0, &A->cst[c], 1))) return st;
  }
  /* resident operands: when several blocks would each prepare them again */
  int64_t last, step, wmax, ntiles = A->pax >= 0 ? (k->extent[A->pax] + LW_P - 1) / LW_P : 1;
  chunk_plan(A, &last, &step, &wmax);
  for (int r = 0; r < A->nrow; r++)
    if (A->row[r] != A->pax) ntiles *= k->extent[A->row[r]];
  int64_t per = 64 + 4 * wmax * lw_esize(A->mdt);
  if (T->rows > LW_P && ntiles * per <= RES_BYTES) {
    A->res = ntiles;
    A->rfi = trnc_arena_alloc(&L->arena, sizeof *A->rfi * ntiles);
    A->rop = trnc_arena_alloc(&L->arena, sizeof *A->rop * ntiles);
    A->rnp = trnc_arena_alloc(&L->arena, sizeof *A->rnp * ntiles);
    if (!A->rfi || !A->rop || !A->rnp) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < ntiles; r++)
      if (!(A->rfi[r] = lw_sbuf(L, 64)) || !(A->rop[r] = lw_sbuf(L, per - 64))) return L->status;
  }
  A->checks = true;
  if (A->res) return chunks(A);
  for (int64_t t0 = 0; t0 < T->rows; t0 += LW_P) {
    if ((st = block_iota(A, t0))) return st;
    if ((st = chunks(A))) return st;
  }
  return TRNC_OK;
}
