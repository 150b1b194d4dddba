/*
 * matmul.c — matmul kernels (mm, bmm, addmm, baddbmm) as kernel IR, and
 * their schedule on TensorE.
 *
 * Kernel. A matmul node becomes a kernel over axes [batch..., M, N, K] (K
 * the one reduction axis): A [batch..., M, K] and B [batch..., K, N] are
 * loads through access maps (stride 0 along N and M respectively), so
 * views, transposes (W^T of a Linear weight) and the batch strides of
 * lower.c's mark_batch_views (attention's [B, H, T, D] heads read and
 * written in place) cost nothing. Then
 *
 *   %p = matmul %a, %b              fp32 [batch..., M, N]
 *   %s = act identity, %p, alpha    (alpha != 1)
 *   %c = load_first bias            (addmm, baddbmm; beta != 0)
 *   %d = ts mul, %c, beta           (beta != 1)
 *   %e = tt add, %s, %d
 *   %r = act f, %e, 1, 0            (a fused activation)
 *   ...                             (the tail: codegen/lower.c's elementwise
 *                                    nodes after it, their other operands
 *                                    loaded at K index 0 — a residual add,
 *                                    a broadcast scale; %r then rounds to
 *                                    the matmul's dtype first)
 *        store out, %v              (the last value in out's dtype)
 *
 * An empty contraction (K = 0) is a map kernel without the matmul: beta *
 * bias (or 0), the activation, the store.
 *
 * Schedule (kir_schedule_matmul). out[M,N] = A[M,K] . B[K,N] is tiled as
 * 128 (K, on partitions) x 128 (stationary free) by up to 512 (moving free:
 * one 2 KiB PSUM bank of fp32) with K accumulated in PSUM. Orientation:
 *  - plain:      stationary = A^T tile [K, M<=128], moving = B tile [K, N<=512],
 *                PSUM [M, N];
 *  - transposed: stationary = B tile [K, N<=128], moving = A^T tile [K, M<=512],
 *                PSUM [N, M] — chosen when the bias varies along N only,
 *                which then is a per-partition bias that ScalarE adds while
 *                it evacuates PSUM (the epilogue costs no extra instruction).
 * Operand tiles whose wanted free dim is strided but whose partition dim is
 * contiguous (A^T of a row-major A, or B = W^T of a Linear weight) are
 * loaded with a DMA transpose instead of element-wise strided reads when
 * their dtype is 2 bytes (NKI's DMA transpose takes 2-byte dtypes only);
 * fp32 ones are read as rows and transposed on TensorE (through PSUM). An
 * fp32 result keeps the plain orientation (its transposed store would be
 * element-wise).
 * The epilogue (alpha, bias, activation) is applied by the PSUM evacuation;
 * a tail of other elementwise ops (read_kernel) then runs on each output
 * tile in SBUF (kir_emit_tile_op), its loads at the tile's rows and
 * columns, the last op writing the tile that is stored (plain orientation
 * only: a tail's operands are rows). A block's tail loads (a residual) are
 * prefetched during its K loop, a share after each moving tile, on the DMA
 * queues with the fewest bytes so far; the queues of stationary tiles and
 * stores then grow to their share of the kernel's bytes (an fp32 result's
 * stores), so neither waits behind the other on 4 queues.
 *
 * Blocking (the public NKI matmul tutorials: operand reuse across a block
 * of tiles, DMAs of 2-4 KiB per partition or more):
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

#include "codegen/kir/kir.h"
#include "ir/shape.h"

/* ==== the kernel ================================================================== */

/* Leading (batch) dims of view t of size > 1: their count, and per dim its
 * extent and stride, outer to inner. */
static int lead_dims(const lw_tv *t, int64_t *shape, int64_t *stride) {
  int n = 0;
  for (int d = 0; d + 2 < t->t.rank; d++)
    if (t->t.shape[d] > 1) {
      shape[n] = t->t.shape[d];
      stride[n++] = t->t.stride[d];
    }
  return n;
}

/* Batch axes for the views v[0..nv): the common refinement of their leading
 * dims (a contiguous [B*H] batch and a [B, H] view of the heads give axes
 * [B, H]), as extents ext[0..nb) outer to inner, and each view's stride
 * along each axis (stride[v][axis]; 0 for a view with no batch dims).
 * -1 when their batch dims do not nest. */
static int batch_axes(const lw_tv *const *v, int nv, int64_t batch, int64_t *ext,
                      int64_t stride[][KIR_MAX_AXES]) {
  int64_t q[TRNC_MAX_RANK * 4 + 1];
  int nq = 0;
  q[nq++] = 1;
  for (int t = 0; t < nv; t++) {
    int64_t sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK], p = 1;
    int nd = lead_dims(v[t], sh, st);
    for (int d = nd - 1; d >= 0; d--) {
      p *= sh[d];
      bool dup = false;
      for (int i = 0; i < nq && !dup; i++) dup = q[i] == p;
      if (!dup) q[nq++] = p;
    }
    if (p != 1 && p != batch) return -1;
  }
  for (int i = 1; i < nq; i++) /* ascending */
    for (int j = i; j > 0 && q[j - 1] > q[j]; j--) {
      int64_t x = q[j];
      q[j] = q[j - 1];
      q[j - 1] = x;
    }
  int nb = nq - 1;
  if (nb > KIR_MAX_AXES - 3) return -1;
  for (int i = 0; i < nb; i++) {
    if (q[i + 1] % q[i]) return -1;
    ext[nb - 1 - i] = q[i + 1] / q[i];
  }
  for (int t = 0; t < nv; t++) {
    int64_t sh[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
    int nd = lead_dims(v[t], sh, st);
    memset(stride[t], 0, sizeof stride[t]);
    /* axis i (inner index) covers inner products q[i]: in the dim d with
     * lo(d) <= q[i] < lo(d) * sh[d], lo(d) the product of the dims inside d */
    int64_t lo = 1;
    for (int d = nd - 1, i = 0; d >= 0; lo *= sh[d--])
      for (; i < nb && q[i] < lo * sh[d]; i++) stride[t][nb - 1 - i] = st[d] * (q[i] / lo);
  }
  return nb;
}

/* Kernel tensor of view t over the kernel's axes: batch strides bs, and
 * the strides of its last two dims on axes r and c (-1: t has no such dim;
 * a dim of size 1 has stride 0). */
static kir_tensor tensor_of(const lw_tv *t, const int64_t *bs, int nb, int r, int c) {
  kir_tensor k;
  memset(&k, 0, sizeof k);
  k.buffer = t->buffer;
  k.dtype = t->t.dtype;
  k.offset = t->t.offset;
  for (int i = 0; i < nb; i++) k.stride[i] = bs[i];
  int rk = t->t.rank;
  if (c >= 0 && rk >= 1 && t->t.shape[rk - 1] > 1) k.stride[c] = t->t.stride[rk - 1];
  if (r >= 0 && rk >= 2 && t->t.shape[rk - 2] > 1) k.stride[r] = t->t.stride[rk - 2];
  return k;
}

bool kir_mm_operand_view(const lw *L, const trnc_node *n, const trnc_type *space, trnc_ref x, lw_tv *view) {
  const trnc_type *rt = &L->g->values[n->outs[0]].type;
  const lw_tv *tv = &L->tv[x];
  int R = space->rank, r = tv->t.rank;
  if (tv->buffer < 0 || rt->rank < 2 || R < 1 || r > R || trnc_type_numel(space) != trnc_type_numel(rt) ||
      space->shape[R - 1] != rt->shape[rt->rank - 1])
    return false;
  int64_t sx[TRNC_MAX_RANK];
  for (int d = 0; d < R; d++) {
    int e = d - (R - r);
    if (e < 0 || tv->t.shape[e] == 1) {
      sx[d] = 0;
    } else {
      if (tv->t.shape[e] != space->shape[d]) return false;
      sx[d] = tv->t.stride[e];
    }
  }
  bool same = R == rt->rank && !memcmp(space->shape, rt->shape, sizeof(int64_t) * (size_t)R);
  if (same) { /* the result's own dims (a batch stride of 0 broadcasts over it) */
    if (view) {
      *view = *tv;
      view->t.rank = R;
      memcpy(view->t.shape, rt->shape, sizeof(int64_t) * (size_t)R);
      memcpy(view->t.stride, sx, sizeof(int64_t) * (size_t)R);
    }
    return true;
  }
  /* the outer dims of space flatten into the result's batch * M rows: x must
   * step through them with one stride (the innermost one of size > 1) */
  int64_t srow = 0, inner = 1;
  bool seen = false;
  for (int d = R - 2; d >= 0; inner *= space->shape[d--]) {
    if (space->shape[d] == 1) continue;
    if (!seen) srow = sx[d];
    else if (sx[d] != srow * inner) return false;
    seen = true;
  }
  if (view) {
    int64_t M = rt->shape[rt->rank - 2];
    *view = *tv;
    view->t.rank = rt->rank;
    memcpy(view->t.shape, rt->shape, sizeof(int64_t) * (size_t)rt->rank);
    view->t.stride[rt->rank - 1] = sx[R - 1];
    view->t.stride[rt->rank - 2] = srow;
    if (rt->rank == 3) view->t.stride[0] = srow * M;
  }
  return true;
}

static trnc_status full_kernel(lw *L, const trnc_node *n) {
  return lw_fail(L, n, TRNC_ERR_INTERNAL, "matmul kernel is full");
}

trnc_status kir_emit_matmul(lw *L, const trnc_node *n, const lw_epilogue *ep) {
  const trnc_graph *g = L->g;
  bool has_bias = n->op == TRNC_OP_ADDMM || n->op == TRNC_OP_BADDBMM;
  int ai = has_bias ? 1 : 0;
  const lw_tv *a = &L->tv[n->args[ai].u.ref], *b = &L->tv[n->args[ai + 1].u.ref];
  const lw_tv *bias = has_bias ? &L->tv[n->args[0].u.ref] : NULL;
  double alpha = (has_bias ? trnc_arg_number(trnc_node_arg(n, 4), 1) : 1) * ep->scale;
  double beta = (has_bias ? trnc_arg_number(trnc_node_arg(n, 3), 1) : 1) * ep->scale;
  /* beta = 0 never reaches here: passes/decomp_math.c's decomp_beta0 rewrites
   * addmm / baddbmm with beta = 0 to alpha * mm (the bias unread, its NaN
   * and inf too) */
  if (bias && bias->buffer < 0) bias = NULL;
  const trnc_type *at = &g->values[n->args[ai].u.ref].type, *bt = &g->values[n->args[ai + 1].u.ref].type;
  int64_t M = at->shape[at->rank - 2], K = at->shape[at->rank - 1], N = bt->shape[bt->rank - 1];
  int64_t batch = at->rank == 3 ? at->shape[0] : 1;
  /* the result as [batch,] M x N over the epilogue value's buffer (a fused
   * reshape view keeps the same contiguous bytes) */
  lw_tv outv = L->tv[ep->out];
  const trnc_type *rt0 = &g->values[n->outs[0]].type;
  if (ep->out != n->outs[0] &&
      (outv.t.rank != rt0->rank || memcmp(outv.t.shape, rt0->shape, sizeof(int64_t) * rt0->rank))) {
    int64_t off = outv.t.offset;
    outv.t = *rt0;
    outv.t.dtype = L->tv[ep->out].t.dtype;
    trnc_type_set_contiguous(&outv.t);
    outv.t.offset = off;
  }
  if (outv.buffer < 0 || M == 0 || N == 0 || batch == 0) return TRNC_OK;
  if (K > 0 && (a->buffer < 0 || b->buffer < 0))
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "matmul operand is not materialized");
  if (b->t.dtype != a->t.dtype) return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "matmul operands of different dtypes");
  trnc_dtype in_dt = a->t.dtype;
  if (L->opt.autocast_bf16 && in_dt == TRNC_F32) in_dt = TRNC_BF16;

  /* the epilogue tail's operands from HBM (values made before the matmul;
   * the others are its running result), seen over [batch,] M x N */
  uint32_t ni = (uint32_t)(n - g->nodes);
  lw_tv *xv = NULL;
  trnc_ref xr[KIR_MAX_TENSORS];
  int nx = 0;
  if (ep->ntail) {
    xv = trnc_arena_array(&L->arena, KIR_MAX_TENSORS, sizeof *xv);
    if (!xv) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
    for (int t = 0; t < ep->ntail; t++) {
      const trnc_node *e = ep->tail[t];
      for (uint32_t x = 0; x < e->nargs && kir_is_eltwise(g, e); x++) {
        trnc_ref r = e->args[x].u.ref;
        bool seen = e->args[x].kind != TRNC_ARG_VALUE || g->values[r].node >= ni;
        for (int y = 0; y < nx && !seen; y++) seen = xr[y] == r;
        if (seen) continue;
        if (nx + 4 >= KIR_MAX_TENSORS || !kir_mm_operand_view(L, n, &g->values[e->outs[0]].type, r, &xv[nx]))
          return lw_fail(L, e, TRNC_ERR_INTERNAL, "matmul epilogue operand %%%u is not an access map of the result",
                         (unsigned)r);
        xr[nx++] = r;
      }
    }
  }
  const lw_tv *views[4 + KIR_MAX_TENSORS] = {a, b, &outv};
  int nv = 3;
  if (bias) views[nv++] = bias;
  for (int x = 0; x < nx; x++) views[nv++] = &xv[x];
  int64_t ext[KIR_MAX_AXES], bs[4 + KIR_MAX_TENSORS][KIR_MAX_AXES];
  int nb = batch_axes(views, nv, batch, ext, bs);
  if (nb < 0) return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "matmul operands with batch dims that do not nest");
  int am = nb, an = nb + 1, ak = nb + 2;
  ext[am] = M;
  ext[an] = N;
  ext[ak] = K > 0 ? K : 1;
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!k) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
  kir_init(k, trnc_op_name(n->op), n, K > 0 ? nb + 3 : nb + 2, ext, K > 0 ? 1u << ak : 0);
  k->tensors[k->ntensors++] = tensor_of(&outv, bs[2], nb, am, an);
  int tb = -1;
  if (bias) {
    tb = k->ntensors;
    k->tensors[k->ntensors++] = tensor_of(bias, bs[3], nb, am, an);
  }
  int v;
  if (K > 0) {
    int ta = k->ntensors, tbb = ta + 1;
    k->tensors[k->ntensors++] = tensor_of(a, bs[0], nb, am, ak);
    k->tensors[k->ntensors++] = tensor_of(b, bs[1], nb, ak, an);
    v = kir_matmul2(k, kir_load(k, ta, in_dt), kir_load(k, tbb, in_dt));
    if (alpha != 1) v = kir_act(k, TRNC_F32, TRNC_NC_ACT_IDENTITY, v, (float)alpha, 0);
  } else {
    v = kir_const(k, TRNC_F32, (1u << k->naxes) - 1, 0); /* A.B over no elements */
  }
  if (bias) {
    int c = K > 0 ? kir_load_first(k, tb, TRNC_F32) : kir_load(k, tb, TRNC_F32);
    if (beta != 1) c = kir_ts(k, TRNC_F32, c, TRNC_NC_ALU_MUL, (float)beta, TRNC_NC_ALU_BYPASS, 0);
    v = kir_tt(k, TRNC_F32, TRNC_NC_ALU_ADD, v, c);
  }
  if (ep->act != TRNC_NC_ACT_IDENTITY || (K == 0 && !bias)) v = kir_act(k, TRNC_F32, ep->act, v, 1, 0);
  if (v < 0) return full_kernel(L, n);
  /* the matmul's own result rounds once, into its dtype (out's without a
   * tail) */
  trnc_dtype pdt = ep->ntail ? lw_device_dtype(rt0->dtype) : outv.t.dtype;
  const kir_op *last = &k->ops[k->nops - 1];
  if (K > 0 && last->code == KIR_MATMUL) v = kir_copy(k, pdt, v);
  else k->values[v].dtype = pdt;
  if (ep->ntail && v >= 0) {
    /* the tail: each node as in an elementwise kernel, its operands from
     * HBM loaded over the space axes (at K index 0) */
    int16_t *val = trnc_arena_array(&L->arena, g->nvalues, sizeof *val);
    if (!val) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
    for (uint32_t r = 0; r < g->nvalues; r++) val[r] = -1;
    kir_env E = {k, L, val};
    for (int t = 0; t < ep->ntail; t++) {
      const trnc_node *e = ep->tail[t];
      if (!kir_is_eltwise(g, e)) continue; /* a reshape view of the running result */
      for (uint32_t x = 0; x < e->nargs; x++) {
        trnc_ref r = e->args[x].u.ref;
        if (e->args[x].kind != TRNC_ARG_VALUE || val[r] >= 0) continue;
        if (g->values[r].node >= ni) { /* the running result */
          val[r] = (int16_t)v;
          continue;
        }
        int y = 0;
        while (y < nx && xr[y] != r) y++;
        if (y == nx || k->ntensors >= KIR_MAX_TENSORS) return full_kernel(L, n);
        int tx = k->ntensors;
        k->tensors[k->ntensors++] = tensor_of(&xv[y], bs[nv - nx + y], nb, am, an);
        int lv = K > 0 ? kir_load_first(k, tx, xv[y].t.dtype) : kir_load(k, tx, xv[y].t.dtype);
        if (lv < 0) return full_kernel(L, n);
        val[r] = (int16_t)lv;
      }
      trnc_status st = kir_lower_eltwise(&E, e);
      if (st) return st;
      v = val[e->outs[0]];
    }
  }
  if (v < 0 || !kir_store(k, 0, v)) return full_kernel(L, n);
  const char *why = kir_verify(k);
  if (why) return lw_fail(L, n, TRNC_ERR_INTERNAL, "matmul kernel: %s", why);
  return kir_emit(L, k);
}

/* ==== the schedule ================================================================ */

trnc_status kir_load_pe_transposed(lw *L, lw_tile *t, int64_t toff, int32_t buffer, trnc_dtype dt, int64_t off,
                                   int64_t pc, int64_t fstride, int64_t fc, lw_pool *rows, lw_pool *tp,
                                   int (*queue)(void *), void *ctx) {
  int64_t esz = lw_esize(dt);
  for (int64_t f0 = 0; f0 < fc; f0 += 128) {
    int64_t fcc = fc - f0 < 128 ? fc - f0 : 128;
    lw_tile *r = lw_pool_next(rows), *p = lw_pool_next(tp);
    trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, queue ? queue(ctx) : lw_dma_queue(L));
    in.mode = TRNC_NC_DMA_DIRECT;
    in.dst = lw_tile_ap(r, (int)fcc, 0, dt, 1, &pc);
    trnc_nc_ap *s = &in.src[0];
    s->mem = TRNC_NC_MEM_HBM;
    s->dtype = (uint8_t)dt;
    s->buffer = buffer;
    s->offset = (off + f0 * fstride) * esz;
    s->partitions = (int32_t)fcc;
    s->partition_stride = fstride;
    s->nfree = 1;
    s->free[0] = (trnc_nc_dim){1, pc};
    trnc_status st = lw_emit(L, &in, NULL, 0, &r, 1);
    if (st) return st;
    trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
    tr.src[0] = in.dst;
    tr.dst = lw_tile_ap(p, (int)pc, 0, TRNC_F32, 1, &fcc);
    if ((st = lw_emit(L, &tr, &r, 1, &p, 1))) return st;
    trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    cp.src[0] = tr.dst;
    cp.dst = lw_tile_ap(t, (int)pc, toff + f0 * esz, dt, 1, &fcc);
    if ((st = lw_emit(L, &cp, &p, 1, &t, 1))) return st;
  }
  return TRNC_OK;
}

/* Row tiles of 128 per block (PSUM: two blocks of accumulators in flight,
 * one bank each, in the 8 banks of a partition). */
#define MM_MAX_BLOCK 4

typedef struct mm {
  const lw *L;
  const kir_kernel *k;
  const kir_tensor *a, *b, *bias, *out;
  int nb;                 /* batch axes: [0, nb); then M, N, K */
  int64_t asr, asc, bsr, bsc, osr, osc, bias_r, bias_c; /* strides along M/K, K/N, M/N, M/N */
  trnc_dtype in_dt;       /* matmul input dtype (tile dtype) */
  int64_t M, N, K, batch;
  double alpha, beta;
  bool transposed;
  /* an fp32 bias row (alpha = beta = 1) accumulated in PSUM by one more
   * matmul: ones [1, rows] (stationary) . bias [1, cols] (moving), the same
   * fp32 addition VectorE would do, off VectorE */
  bool psum_bias;
  lw_tile *ones;
  lw_pool brow_pool;
  int act;                /* fused epilogue activation (TRNC_NC_ACT_IDENTITY: none) */
  /* the epilogue's tail: ops [tail, nops - 1) of the kernel (tail 0: none),
   * elementwise on each output tile after the evacuation, which leaves value
   * `pre` (fp32 or the matmul's dtype) in a tile; `stored` is the value
   * stored */
  int tail, pre, stored;
  lw_pool tail_pool[KIR_MAX_VALUES]; /* a 2-deep pool per tail value (SBUF) */
  lw_tile *cur[KIR_MAX_VALUES];
  int64_t off[KIR_MAX_VALUES];
  /* the tail's loads that a block prefetches during its K loop (ops pf_op[0,
   * npf), each a pool of 2 blocks of tiles), and this block's tiles */
  int npf, pf_op[KIR_MAX_OPS];
  lw_pool pf_pool[KIR_MAX_VALUES];
  lw_tile *pf[KIR_MAX_VALUES][MM_MAX_BLOCK];
  double qbytes[TRNC_NC_NUM_DMA_QUEUES]; /* bytes queued per DMA queue so far (with each DMA's fixed cost) */
  int kstep;              /* K steps per moving-tile DMA */
  int64_t chunks;         /* moving-tile loads emitted so far */
  int nq, nmq, next_q[2]; /* DMA queues: [0, nmq) moving tiles, [nmq, nq) the rest */
  lw_pool st_pool, mv_pool, ps_pool, out_pool, f_pool, bias_pool, pre_pool;
  lw_pool tr_pool, tp_pool; /* fp32 operand rows and their TensorE transposes (PSUM) */
} mm;

/* Moving tiles in flight: a [128, 4 x 512] bf16 DMA takes ~23 us on one
 * queue and feeds 4 x 4 matmuls of ~0.2 us, so ~8 queues must stream at
 * once to keep TensorE busy. */
#define MM_MOVING_BUFS 12
/* Bytes per partition of one moving-tile DMA (NKI performance guide: move
 * at least 2-4 KiB per partition per DMA to amortise its fixed cost). */
#define MM_MOVING_BYTES 4096

/* Element offset of tensor t at batch index bi (row-major over the batch
 * axes). */
static int64_t batch_off(const mm *m, const kir_tensor *t, int64_t bi) {
  int64_t off = t->offset;
  for (int d = m->nb - 1; d >= 0; d--) {
    int64_t e = m->k->extent[d];
    off += (bi % e) * t->stride[d];
    bi /= e;
  }
  return off;
}

/* True for a dtype NKI's DMA transpose moves (2-byte dtypes only). */
static bool dma_transposable(trnc_dtype dt) { return lw_esize(dt) == 2; }

/* True if the tile [p partitions along ps, free along fs] of tensor tv in
 * dtype tile_dt is the transpose of contiguous HBM rows. */
static bool wants_transpose(const kir_tensor *tv, trnc_dtype tile_dt, int64_t ps, int64_t fs) {
  return fs != 1 && ps == 1 && tile_dt == tv->dtype;
}

/* The next DMA queue for moving tiles (role 0) or for stationary tiles,
 * bias and stores (role 1): each role cycles over its own queues, so a
 * stationary prefetch or a store never delays a moving tile behind it on an
 * in-order queue. Role 2 (loads with nothing to wait for: the epilogue
 * tail's prefetched operands) takes the queue with the fewest bytes queued
 * so far, any role's. */
static int mm_queue(mm *m, int role) {
  if (role == 2) {
    int q = 0;
    for (int i = 1; i < m->nq; i++)
      if (m->qbytes[i] < m->qbytes[q]) q = i;
    return TRNC_NC_DMA0 + q;
  }
  int lo = role ? m->nmq : 0, n = role ? m->nq - m->nmq : m->nmq;
  if (n <= 0) { /* a single queue does everything */
    lo = 0;
    n = m->nq;
  }
  return TRNC_NC_DMA0 + lo + m->next_q[role]++ % n;
}

/* Counts a DMA of `bytes` on queue engine q for role 2's choice. */
static void mm_charge(mm *m, int q, int64_t bytes) {
  const trnc_nc_target *t = m->L->target;
  m->qbytes[q - TRNC_NC_DMA0] += (double)bytes + t->dma_fixed_s * t->dma_bytes_per_s_per_queue;
}

typedef struct mm_role {
  mm *m;
  int role;
} mm_role;

static int mm_role_queue(void *ctx) {
  mm_role *r = ctx;
  return mm_queue(r->m, r->role);
}

/* Loads HBM region [pc rows along pstride] x [fc along fstride] of tensor
 * tv into a tile as [pc partitions, fc free] at byte offset toff. A large
 * load is split by partition ranges over up to `maxparts` DMA queues that
 * run in parallel (one queue moves ~23 GB/s). */
static trnc_status load2d(lw *L, mm *m, int role, lw_tile *t, int64_t toff, trnc_dtype tile_dt, const kir_tensor *tv,
                          int64_t off, int64_t pstride, int64_t pc, int64_t fstride, int64_t fc, int maxparts) {
  bool transpose = fc > 1 && pc > 1 && wants_transpose(tv, tile_dt, pstride, fstride);
  if (transpose && !dma_transposable(tv->dtype)) {
    mm_role r = {m, role};
    return kir_load_pe_transposed(L, t, toff, tv->buffer, tv->dtype, off, pc, fstride, fc, &m->tr_pool, &m->tp_pool,
                                  mm_role_queue, &r);
  }
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
    mm_charge(m, in->engine, np * fc * lw_esize(tile_dt));
    in->dst = lw_tile_ap(t, (int)np, toff, tile_dt, 1, &fc);
    in->dst.start_partition = (int32_t)p0;
    trnc_nc_ap *s = &in->src[0];
    s->mem = TRNC_NC_MEM_HBM;
    s->dtype = (uint8_t)tv->dtype;
    s->buffer = tv->buffer;
    s->offset = (off + p0 * pstride) * lw_esize(tv->dtype);
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
  /* plain: stationary A^T [k, rows = M], moving B [k, cols = N];
   * transposed: stationary B [k, rows = N], moving A^T [k, cols = M] */
  bool a_side = (which == 0) != m->transposed;
  if (a_side) {
    *ps = m->asc;
    *fs = m->asr;
    return batch_off(m, m->a, bi) + f0 * m->asr + k0 * m->asc;
  }
  *ps = m->bsr;
  *fs = m->bsc;
  return batch_off(m, m->b, bi) + k0 * m->bsr + f0 * m->bsc;
}

/* Loads the moving tiles of K steps [k0, k0 + ks*128) (ks whole steps, or
 * one step of kt rows) and columns [c0, c0 + ct) into mvt as [k, step, ct],
 * all steps with one DMA (a one-step tile may be a DMA transpose). */
static trnc_status load_moving(lw *L, mm *m, lw_tile *mvt, int64_t bi, int64_t k0, int64_t kt, int ks,
                               int64_t c0, int64_t ct) {
  int64_t ps, fs, off = operand_at(m, 1, bi, c0, k0, &ps, &fs);
  const kir_tensor *tv = m->transposed ? m->a : m->b;
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
    mm_charge(m, in->engine, np * ks * ct * lw_esize(m->in_dt));
    in->mode = TRNC_NC_DMA_DIRECT;
    in->dst = lw_tile_ap(mvt, (int)np, 0, m->in_dt, 2, counts);
    in->dst.start_partition = (int32_t)(q * per);
    trnc_nc_ap *s = &in->src[0];
    s->mem = TRNC_NC_MEM_HBM;
    s->dtype = (uint8_t)tv->dtype;
    s->buffer = tv->buffer;
    s->offset = (off + q * per * ps) * lw_esize(tv->dtype);
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
 * bias and the fused activation, into o at byte offset ooff as dtype odt. */
static trnc_status epilogue(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int64_t c0, int64_t ct, lw_tile *ps,
                            lw_tile *o, int64_t ooff, trnc_dtype odt) {
  trnc_status st;
  trnc_nc_instr ev = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ev.act = TRNC_NC_ACT_IDENTITY;
  ev.imm[0] = (float)m->alpha;
  ev.src[0] = lw_tile_ap(ps, (int)rt, 0, TRNC_F32, 1, &ct);
  lw_tile *bt = m->bias && !m->psum_bias ? lw_pool_next(&m->bias_pool) : NULL;
  int64_t bsr_b = m->bias_r, bsc_b = m->bias_c;
  lw_tile *rd[2] = {ps, bt};
  if (bt && m->transposed) {
    /* per-partition bias (bias varies along N = rows here), scaled by beta */
    int64_t one = 1;
    st = load2d(L, m, 1, bt, 0, TRNC_F32, m->bias, batch_off(m, m->bias, bi) + r0 * bsc_b, bsc_b, rt, 0, 1, 4);
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
  st = load2d(L, m, 1, bt, 0, TRNC_F32, m->bias, batch_off(m, m->bias, bi) + r0 * bsr_b + c0 * bsc_b, bsr_b, rt,
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

/* Loads the tail operand of kernel op i for the output tile [rt, ct] at
 * (r0, c0) into tile t at byte offset toff (DMA queues of `role`). */
static trnc_status tail_load(lw *L, mm *m, int i, int64_t bi, int64_t r0, int64_t rt, int64_t c0, int64_t ct,
                             lw_tile *t, int64_t toff, int role) {
  const kir_kernel *k = m->k;
  const kir_op *op = &k->ops[i];
  const kir_tensor *T = &k->tensors[op->tensor];
  int am = m->nb, an = m->nb + 1;
  return load2d(L, m, role, t, toff, k->values[op->dst].dtype, T,
                batch_off(m, T, bi) + r0 * T->stride[am] + c0 * T->stride[an], T->stride[am], rt, T->stride[an], ct, 4);
}

/* The whole epilogue of output tile tt of a block, [rt, ct] at (r0, c0),
 * into o at byte offset ooff: the evacuation, then the tail's ops on the
 * tile (their loads at the tile's rows and columns, prefetched by mm_block
 * or loaded here; the stored value written into o). */
static trnc_status finish_tile(lw *L, mm *m, int64_t bi, int tt, int64_t r0, int64_t rt, int64_t c0, int64_t ct,
                               lw_tile *ps, lw_tile *o, int64_t ooff) {
  if (!m->tail) return epilogue(L, m, bi, r0, rt, c0, ct, ps, o, ooff, m->out->dtype);
  const kir_kernel *k = m->k;
  lw_tile *pre = lw_pool_next(&m->pre_pool);
  trnc_status st = epilogue(L, m, bi, r0, rt, c0, ct, ps, pre, 0, k->values[m->pre].dtype);
  if (st) return st;
  m->cur[m->pre] = pre;
  m->off[m->pre] = 0;
  bool direct = false;
  for (int i = m->tail; i < k->nops - 1; i++) {
    const kir_op *op = &k->ops[i];
    int v = op->dst;
    bool into_o = v == m->stored;
    if (m->pf_pool[v].n) { /* prefetched */
      m->cur[v] = m->pf[v][tt];
      m->off[v] = 0;
      continue;
    }
    m->cur[v] = into_o ? o : lw_pool_next(&m->tail_pool[v]);
    m->off[v] = into_o ? ooff : 0;
    direct |= into_o;
    if (op->code == KIR_LOAD) {
      st = tail_load(L, m, i, bi, r0, rt, c0, ct, m->cur[v], m->off[v], 1);
    } else {
      st = kir_emit_tile_op(L, k, op, m->cur, m->off, (int)rt, ct);
    }
    if (st) return st;
  }
  if (direct) return TRNC_OK;
  /* the stored value is the evacuated one */
  trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  cp.src[0] = lw_tile_ap(m->cur[m->stored], (int)rt, m->off[m->stored], k->values[m->stored].dtype, 1, &ct);
  cp.dst = lw_tile_ap(o, (int)rt, ooff, m->out->dtype, 1, &ct);
  L->ops_per_engine[1]++;
  return lw_emit(L, &cp, &m->cur[m->stored], 1, &o, 1);
}

/* One DMA of store_tiles: partitions [sp, sp + rt) of o (rows r0 + sp..). */
static trnc_status store_part(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int nt, int64_t c0, int64_t ct,
                              lw_tile *o, int64_t ooff, int64_t sp, int role) {
  r0 += sp;
  trnc_dtype odt = m->out->dtype;
  int64_t osr = m->osr, osc = m->osc, base = batch_off(m, m->out, bi);
  trnc_nc_instr sd = lw_instr(TRNC_NC_OP_DMA_COPY, mm_queue(m, role));
  mm_charge(m, sd.engine, rt * nt * ct * lw_esize(odt));
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
    d->offset = (base + r0 * osr + c0 * osc) * lw_esize(odt);
    d->partition_stride = osr;
    if (nt > 1) {
      d->nfree = 2;
      d->free[0].stride = 128 * osr;
      d->free[0].count = nt;
    }
  } else if (osc == 1 && rt > 1 && ct > 1 && dma_transposable(odt)) {
    /* The tile is out^T [n, m]; out rows are contiguous along n, so write
     * them with a DMA transpose: ct rows of rt contiguous elements instead
     * of rt*ct single-element runs. */
    sd.mode = TRNC_NC_DMA_TRANSPOSE;
    d->offset = (base + c0 * osr + r0 * osc) * lw_esize(odt);
    d->partitions = (int32_t)ct;
    d->partition_stride = osr;
    d->free[0].stride = 1;
    d->free[0].count = rt;
    return lw_emit(L, &sd, &o, 1, NULL, 0);
  } else {
    d->offset = (base + c0 * osr + r0 * osc) * lw_esize(odt);
    d->partition_stride = osc;
    d->free[0].stride = osr;
  }
  d->free[d->nfree - 1].stride = m->transposed ? osr : osc;
  d->free[d->nfree - 1].count = ct;
  return lw_emit(L, &sd, &o, 1, NULL, 0);
}

/* Stores nt output tiles [rt, ct] of rows r0 + t*128 (t < nt, each rt rows;
 * nt > 1 only with rt = 128) from o (tile t at free offset t*ct) with one
 * DMA (or `parts` DMAs of partition ranges, on the queues of `role`): out
 * rows along partitions, [tile, column] along the free axis. */
static trnc_status store_tiles(lw *L, mm *m, int64_t bi, int64_t r0, int64_t rt, int nt, int64_t c0, int64_t ct,
                               lw_tile *o, int64_t ooff, int parts, int role) {
  /* parts of at least 8 KiB: below that a part's fixed DMA cost outweighs
   * what it saves (attention's [37, 37] score tiles) */
  int64_t bytes = rt * nt * ct * lw_esize(m->out->dtype);
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

/* K steps from step k that one moving-tile DMA loads (whole steps of 128
 * rows; a partial last step alone). */
static int k_steps(const mm *m, int64_t k) {
  int64_t nk = (m->K + 127) / 128;
  int ks = 1;
  if (m->K - 128 * k >= 128)
    while (ks < m->kstep && k + ks < nk && m->K - 128 * (k + ks) >= 128) ks++;
  return ks;
}

/* The prefetched tail loads (*done, until) of the block of mt row tiles at
 * r0, columns [c0, c0 + ct): load j is op pf_op[j / mt] for tile j % mt,
 * on the least busy DMA queues. */
static trnc_status prefetch_tail(lw *L, mm *m, int64_t bi, int64_t r0, int mt, int64_t c0, int64_t ct, int *done,
                                 int until) {
  int64_t rows = m->transposed ? m->N : m->M;
  for (; *done < until; (*done)++) {
    int t = *done % mt, i = m->pf_op[*done / mt];
    int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
    trnc_status st = tail_load(L, m, i, bi, r0 + 128 * t, rt, c0, ct, m->pf[m->k->ops[i].dst][t], 0, 2);
    if (st) return st;
  }
  return TRNC_OK;
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
  for (int t = 0; t < mt; t++) ps[t] = lw_pool_next(&m->ps_pool);
  int64_t nk = (m->K + 127) / 128;
  lw_tile *brow = NULL;
  if (m->psum_bias) { /* this column block's bias row */
    brow = lw_pool_next(&m->brow_pool);
    st = load2d(L, m, 1, brow, 0, TRNC_F32, m->bias, batch_off(m, m->bias, bi) + c0 * m->bias_c, 0, 1, m->bias_c, ct, 1);
    if (st) return st;
  }
  /* the tail's operand tiles of this block, loaded a share after each
   * moving tile (on the least busy queues: they wait for nothing, their pool
   * holds two blocks) */
  int npf = m->npf * mt, done = 0, groups = 0;
  for (int p = 0; p < m->npf; p++) {
    int v = m->k->ops[m->pf_op[p]].dst;
    for (int t = 0; t < mt; t++) m->pf[v][t] = lw_pool_next(&m->pf_pool[v]);
  }
  for (int64_t k = 0; k < nk; groups++) k += k_steps(m, k);
  for (int64_t k = 0, g = 0; k < nk; g++) {
    int64_t kt = m->K - 128 * k < 128 ? m->K - 128 * k : 128;
    int ks = k_steps(m, k);
    for (int s = 0; s < ks; s++)
      if ((st = load_resident(L, m, &ld[0], k + s))) return st;
    lw_tile *mvt = lw_pool_next(&m->mv_pool);
    if ((st = load_moving(L, m, mvt, bi, 128 * k, kt, ks, c0, ct))) return st;
    if ((st = prefetch_tail(L, m, bi, r0, mt, c0, ct, &done, (int)(npf * (g + 1) / groups)))) return st;
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
  if ((st = prefetch_tail(L, m, bi, r0, mt, c0, ct, &done, npf))) return st; /* no K steps */
  for (int t = 0; brow && t < mt; t++) {
    int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
    trnc_nc_instr in = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    in.mode = 1;
    in.dst = lw_tile_ap(ps[t], (int)rt, 0, TRNC_F32, 1, &ct);
    in.src[0] = lw_tile_ap(m->ones, 1, 0, TRNC_F32, 1, &rt);
    in.src[1] = lw_tile_ap(brow, 1, 0, TRNC_F32, 1, &ct);
    lw_tile *rd[2] = {m->ones, brow};
    if ((st = lw_emit(L, &in, rd, 2, &ps[t], 1))) return st;
  }
  lw_tile *o = lw_pool_next(&m->out_pool);
  int64_t osz = lw_esize(m->out->dtype);
  int full = 0;
  for (int t = 0; t < mt; t++) {
    int64_t rt = rows - (r0 + 128 * t) < 128 ? rows - (r0 + 128 * t) : 128;
    if ((st = finish_tile(L, m, bi, t, r0 + 128 * t, rt, c0, ct, ps[t], o, t * ct * osz))) return st;
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

/* True if op o is elementwise over the tile of the output (the tail ops
 * kir_emit_tile_op emits, or a load at the space axes). */
static bool tail_op(const kir_kernel *k, const kir_op *o) {
  if (o->dst >= 0 && (k->values[o->dst].axes & k->raxes)) return false;
  switch (o->code) {
    case KIR_LOAD: return o->tensor >= 0;
    case KIR_ACT: case KIR_TS: return o->src[1] < 0 && o->src[2] < 0;
    case KIR_TT: case KIR_COPY: case KIR_CONST: case KIR_SELECT: return true;
    default: return false;
  }
}

/* Reads the kernel's operands and epilogue into m: the loads of A and B,
 * the matmul, then the prefix that the evacuation applies (alpha, a bias
 * tensor times beta added, an activation, in fp32 unless the op is the one
 * stored: it rounds once) and a tail of any elementwise ops over the output
 * tile (a residual add: loads of tensors over the space axes) ending in the
 * store. NULL or what does not fit. */
static const char *read_kernel(mm *m, const kir_kernel *k) {
  int def[KIR_MAX_VALUES];
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].dst >= 0) def[k->ops[i].dst] = i;
  int cur = -1, cval = -1, bias_op = -1;
  m->alpha = m->beta = 1;
  m->act = TRNC_NC_ACT_IDENTITY;
  m->tail = 0;
  const kir_op *st = k->nops ? &k->ops[k->nops - 1] : NULL;
  if (!st || st->code != KIR_STORE) return "no store of the result";
  m->out = &k->tensors[st->tensor];
  m->stored = st->src[0];
  int i = 0;
  for (; i < k->nops - 1; i++) {
    const kir_op *o = &k->ops[i];
    if (cur < 0) { /* the loads of A and B, then the matmul */
      if (o->code == KIR_LOAD) continue;
      if (o->code != KIR_MATMUL) return "an op before the matmul";
      const kir_op *la = &k->ops[def[o->src[0]]], *lb = &k->ops[def[o->src[1]]];
      if (la->code != KIR_LOAD || lb->code != KIR_LOAD) return "a matmul operand is not a load";
      m->a = &k->tensors[la->tensor];
      m->b = &k->tensors[lb->tensor];
      m->in_dt = k->values[o->src[0]].dtype;
      if (k->values[o->src[1]].dtype != m->in_dt) return "matmul operands of different dtypes";
      cur = o->dst;
      continue;
    }
    /* a prefix op keeps fp32, except the stored value (rounded once) */
    bool fp32 = k->values[o->dst].dtype == TRNC_F32 || (o->dst == m->stored && i == k->nops - 2);
    bool on_cur = o->src[0] == cur;
    if (o->code == KIR_LOAD && !m->bias && cval < 0 && fp32) {
      m->bias = &k->tensors[o->tensor];
      cval = o->dst;
      bias_op = i;
    } else if (o->code == KIR_TS && o->src[0] == cval && cval >= 0 && o->fn == TRNC_NC_ALU_MUL &&
               o->fn1 == TRNC_NC_ALU_BYPASS && o->src[1] < 0 && o->src[2] < 0 && fp32) {
      m->beta *= o->imm[0];
      cval = o->dst;
    } else if (o->code == KIR_TT && o->fn == TRNC_NC_ALU_ADD && cval >= 0 && m->act == TRNC_NC_ACT_IDENTITY &&
               ((on_cur && o->src[1] == cval) || (o->src[1] == cur && o->src[0] == cval)) && fp32) {
      cur = o->dst;
      cval = -2; /* the bias is in */
    } else if (o->code == KIR_ACT && on_cur && o->src[1] < 0 && o->src[2] < 0 && o->imm[1] == 0 &&
               m->act == TRNC_NC_ACT_IDENTITY && cval < 0 && fp32 &&
               ((o->fn == TRNC_NC_ACT_IDENTITY && !m->bias) || o->imm[0] == 1)) {
      if (o->fn == TRNC_NC_ACT_IDENTITY && !m->bias) m->alpha *= o->imm[0];
      else m->act = o->fn;
      cur = o->dst;
    } else if (o->code == KIR_COPY && on_cur && cval < 0 && (fp32 || k->values[o->dst].dtype == k->values[cur].dtype)) {
      cur = o->dst;
    } else {
      break; /* the tail */
    }
  }
  if (cur < 0) return "no matmul";
  if (i < k->nops - 1) {
    if (cval >= 0) { /* a load the prefix took for a bias is the tail's */
      m->bias = NULL;
      m->beta = 1;
      i = bias_op;
    }
    if (m->act != TRNC_NC_ACT_IDENTITY && k->values[cur].dtype != TRNC_F32 && cur != m->stored)
      return "a rounded value before the epilogue's tail";
    m->tail = i;
    m->pre = cur;
    for (; i < k->nops - 1; i++)
      if (!tail_op(k, &k->ops[i])) return "an epilogue op the matmul schedule does not fuse";
  } else if (m->stored != cur) {
    return "the stored value is not the epilogue's result";
  }
  if (m->out->dtype != k->values[m->stored].dtype) return "the stored value is not in the result's dtype";
  if (m->bias && cval != -2) return "a bias that is not added";
  return NULL;
}

trnc_status kir_schedule_matmul(lw *L, const kir_kernel *k) {
  mm m;
  memset(&m, 0, sizeof m);
  m.L = L;
  m.k = k;
  const char *why = read_kernel(&m, k);
  if (why) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "matmul kernel: %s", why);
  m.nb = k->naxes - 3;
  int am = m.nb, an = m.nb + 1, ak = m.nb + 2;
  if (m.nb < 0 || k->raxes != 1u << ak)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "matmul kernel: axes are not [batch..., M, N, K]");
  m.M = k->extent[am];
  m.N = k->extent[an];
  m.K = k->extent[ak];
  m.batch = 1;
  for (int d = 0; d < m.nb; d++) m.batch *= k->extent[d];
  m.asr = m.a->stride[am];
  m.asc = m.a->stride[ak];
  m.bsr = m.b->stride[ak];
  m.bsc = m.b->stride[an];
  m.osr = m.out->stride[am];
  m.osc = m.out->stride[an];
  if (m.bias) {
    m.bias_r = m.bias->stride[am];
    m.bias_c = m.bias->stride[an];
    /* bias along N only (one per column) -> transposed orientation */
    bool batched = false;
    for (int d = 0; d < m.nb; d++) batched |= m.bias->stride[d] != 0;
    m.transposed = m.bias_r == 0 && (m.bias_c != 0 || m.N == 1) && !batched && m.batch == 1 &&
                   dma_transposable(m.out->dtype) && !m.tail; /* a tail's operands are rows */
  }
  trnc_dtype dt = m.in_dt;
  trnc_status st;
  if (m.bias && !m.transposed && m.bias_r == 0 && m.in_dt == TRNC_F32 && m.bias->dtype == TRNC_F32 &&
      m.alpha == 1 && m.beta == 1) {
    bool batched = false;
    for (int d = 0; d < m.nb; d++) batched |= m.bias->stride[d] != 0;
    m.psum_bias = !batched;
  }
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
  int ntail = 0;              /* tail values with a pool of their own: 2 x ctile x 4 bytes */
  bool tail_tr = false;       /* a tail load transposed on TensorE (fp32 columns) */
  for (int i = m.tail; m.tail && i < k->nops - 1; i++) {
    const kir_op *o = &k->ops[i];
    bool tr = false;
    if (o->code == KIR_LOAD) {
      const kir_tensor *T = &k->tensors[o->tensor];
      tr = !dma_transposable(T->dtype) && wants_transpose(T, k->values[o->dst].dtype, T->stride[am], T->stride[an]);
      tail_tr |= tr;
    }
    if (o->code == KIR_LOAD && !tr && o->dst != m.stored) {
      m.pf_op[m.npf++] = i; /* prefetched: 2 blocks of tiles */
      other += 2 * MM_MAX_BLOCK * ctile * 4;
    } else {
      ntail += o->dst != m.stored;
    }
  }
  other += (ntail + 1) * 2 * ctile * 4;
  int64_t budget = L->target->sbuf_bytes_per_partition - other;
  int64_t blocks_per = m.batch * rtiles;
  int mt = MM_MAX_BLOCK;
  /* operands read as rows and transposed on TensorE take one PSUM bank:
   * two blocks of 2 accumulators at most then */
  int64_t sps, sfs, mps, mfs;
  operand_at(&m, 0, 0, 0, 0, &sps, &sfs);
  operand_at(&m, 1, 0, 0, 0, &mps, &mfs);
  const kir_tensor *stv = m.transposed ? m.b : m.a, *mtv = m.transposed ? m.a : m.b;
  bool pe_tr = (!dma_transposable(dt) && (wants_transpose(stv, dt, sps, sfs) || wants_transpose(mtv, dt, mps, mfs))) ||
               (m.bias && !m.transposed && wants_transpose(m.bias, TRNC_F32, m.bias_r, m.bias_c)) || tail_tr;
  while (mt > 1 && (mt > rtiles || (pe_tr && mt > 2) || (blocks_per > mt ? 2 : 1) * nk * 128 * mt * isz > budget))
    mt /= 2;
  bool resident = (blocks_per > mt ? 2 : 1) * nk * 128 * mt * isz <= budget;
  m.nq = L->target->dma_queues < TRNC_NC_NUM_DMA_QUEUES ? L->target->dma_queues : TRNC_NC_NUM_DMA_QUEUES;
  m.nmq = m.nq > 1 ? m.nq - (m.nq + 3) / 4 : m.nq; /* 12 of 16 for moving tiles */
  if (m.tail && m.nq > 1) {
    /* the tail's prefetched loads fill whichever queues are least busy, so
     * the stationary tiles and stores (role 1: a tail's fp32 result doubles
     * the stores' bytes) get their share of all the bytes, at least the
     * usual quarter of the queues, at most half */
    double osz = (double)lw_esize(m.out->dtype), pf = 0;
    for (int p = 0; p < m.npf; p++) pf += (double)lw_esize(k->values[k->ops[m.pf_op[p]].dst].dtype);
    double mn = (double)m.batch * m.M * m.N;
    double st_b = (double)m.batch * rows * m.K * isz + mn * osz;
    double mv_b = (double)m.batch * cols * m.K * isz * (double)((rows + 128 * mt - 1) / (128 * mt));
    int n1 = (int)(m.nq * st_b / (st_b + mv_b + mn * pf) + 0.5);
    if (n1 > m.nq - m.nmq && n1 <= m.nq / 2) m.nmq = m.nq - n1;
    else if (n1 > m.nq / 2) m.nmq = m.nq - m.nq / 2;
  }
  bool mv_transpose = wants_transpose(mtv, m.in_dt, mps, mfs);
  /* several K steps per moving DMA, unless each step is a transpose */
  m.kstep = mv_transpose ? 1 : (int)(MM_MOVING_BYTES / (ctile * isz));
  if (m.kstep < 1) m.kstep = 1;
  if ((st = lw_pool_init(L, &m.st_pool, TRNC_NC_MEM_SBUF, 128 * isz, resident ? 1 : 4)) ||
      (st = lw_pool_init(L, &m.mv_pool, TRNC_NC_MEM_SBUF, m.kstep * ctile * isz, MM_MOVING_BUFS)) ||
      (st = lw_pool_init(L, &m.ps_pool, TRNC_NC_MEM_PSUM, ctile * 4, 2 * mt)) ||
      (st = lw_pool_init(L, &m.out_pool, TRNC_NC_MEM_SBUF, mt * ctile * 4, 2)) ||
      (st = lw_pool_init(L, &m.f_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)) ||
      (st = lw_pool_init(L, &m.bias_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)) ||
      (m.tail && (st = lw_pool_init(L, &m.pre_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2))) ||
      (pe_tr && ((st = lw_pool_init(L, &m.tr_pool, TRNC_NC_MEM_SBUF, 128 * 4, 4)) ||
                 (st = lw_pool_init(L, &m.tp_pool, TRNC_NC_MEM_PSUM, 128 * 4, 2)))))
    return st;
  if (m.psum_bias) {
    int64_t P = L->target->partitions;
    if (!(m.ones = lw_sbuf(L, P * 4)) || (st = lw_pool_init(L, &m.brow_pool, TRNC_NC_MEM_SBUF, ctile * 4, 2)))
      return L->status ? L->status : st;
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    ms.dst = lw_tile_ap(m.ones, 1, 0, TRNC_F32, 1, &P);
    ms.imm[0] = 1.0f;
    if ((st = lw_emit(L, &ms, NULL, 0, &m.ones, 1))) return st;
  }
  for (int p = 0; p < m.npf; p++)
    if ((st = lw_pool_init(L, &m.pf_pool[k->ops[m.pf_op[p]].dst], TRNC_NC_MEM_SBUF, ctile * 4, 2 * mt))) return st;
  for (int i = m.tail; m.tail && i < k->nops - 1; i++)
    if (k->ops[i].dst != m.stored && !m.pf_pool[k->ops[i].dst].n &&
        (st = lw_pool_init(L, &m.tail_pool[k->ops[i].dst], TRNC_NC_MEM_SBUF, ctile * 4, 2)))
      return st;
  lw_pool res_pool[2];
  int nres = blocks_per > mt ? 2 : 1;
  if (resident)
    for (int b = 0; b < nres; b++)
      if ((st = lw_pool_init(L, &res_pool[b], TRNC_NC_MEM_SBUF, 128 * mt * isz, (int)nk))) return st;
  /* row blocks in order; block b uses resident set b % nres, loaded by its
   * first column block (block 0) or prefetched by block b - 1 */
  int64_t per_batch = (rows + 128 * mt - 1) / (128 * mt), nblocks = m.batch * per_batch;
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
        ld[1] = (mm_res_load){res_pool[(b + 1) % nres].tiles, nbi, nr0, rows - nr0 < 128 * mt ? rows - nr0 : 128 * mt};
      }
      bool last = b == nblocks - 1 && cb == ncols - 1;
      if ((st = mm_block(L, &m, bi, r0, bt, c0, cols - c0 < ctile ? cols - c0 : ctile, res, ld, last))) return st;
    }
  }
  return TRNC_OK;
}
