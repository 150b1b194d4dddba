/*
 * lower.c — trnc_compile: a verified, legalized IR graph becomes a
 * NeuronCore program.
 *
 *  1. Boundary: every placeholder binds to an INPUT buffer (the caller's
 *     memory, read with its own strides; int64/float64 inputs go through a
 *     converted contiguous int32/float32 buffer), every graph output to an
 *     OUTPUT buffer with the strides node.meta["val"] declares.
 *  2. Views (view, permute, expand, slice, select, squeeze, unsqueeze,
 *     transpose, split, alias) become tensor views over their base's buffer:
 *     no kernel, no copy. A copy is made only when strides cannot express
 *     the view.
 *  3. Fusion: consecutive elementwise nodes with the same output shape, and
 *     a reduction of their last value, form one kernel, built and scheduled
 *     as kernel IR (codegen/kir/). Matmuls (kir/matmul.c), convolutions
 *     (kir/conv.c) and the other families (codegen/families.c: kir data
 *     movement, scatters and accumulations, emit_conv.c's
 *     pooling) get kernels of their own.
 *  4. HBM planning: intermediates get INTERNAL buffers in one scratch area,
 *     first-fit with reuse once a value (and every view of it) is dead.
 *  5. The program is verified against the target's hardware rules and
 *     costed; the report records what it found.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/kir/kir.h"
#include "codegen/lower.h"
#include "ir/dump.h"
#include "ir/shape.h"

/* ---- HBM scratch allocator (first fit over free segments) ----------------- */

typedef struct seg {
  int64_t off, size;
} seg;

typedef struct hbm_alloc {
  seg *free;
  int nfree, cap;
  int64_t top;         /* high-water mark */
  int64_t total;       /* sum of all allocations (no reuse) */
} hbm_alloc;

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static int64_t hbm_take(hbm_alloc *h, int64_t bytes) {
  bytes = align_up(bytes, 64);
  h->total += bytes;
  for (int i = 0; i < h->nfree; i++) {
    if (h->free[i].size < bytes) continue;
    int64_t off = h->free[i].off;
    h->free[i].off += bytes;
    h->free[i].size -= bytes;
    if (!h->free[i].size) h->free[i] = h->free[--h->nfree];
    return off;
  }
  int64_t off = h->top;
  h->top += bytes;
  return off;
}

static void hbm_give(hbm_alloc *h, int64_t off, int64_t bytes) {
  bytes = align_up(bytes, 64);
  if (h->nfree == h->cap) {
    int cap = h->cap ? h->cap * 2 : 16;
    seg *s = realloc(h->free, (size_t)cap * sizeof *s);
    if (!s) return; /* leak the segment: only costs scratch space */
    h->free = s;
    h->cap = cap;
  }
  h->free[h->nfree++] = (seg){off, bytes};
  /* coalesce neighbours */
  for (int i = 0; i < h->nfree; i++)
    for (int j = 0; j < h->nfree; j++) {
      if (i == j) continue;
      if (h->free[i].off + h->free[i].size == h->free[j].off) {
        h->free[i].size += h->free[j].size;
        h->free[j] = h->free[--h->nfree];
        j = -1;
        if (i >= h->nfree) break;
      }
    }
}

/* ---- compile state beyond lw -------------------------------------------------- */

typedef struct cstate {
  lw L;
  hbm_alloc hbm;
  uint32_t *lastuse;      /* per value: last node index that reads it (or a view of it) */
  uint32_t *nuses;        /* per value: argument slots that read it directly */
  uint32_t *firstuse;     /* per value: first node index that reads it directly */
  trnc_ref *base;         /* per value: the value whose buffer it lives in */
  int64_t *buf_off;       /* per value owning an internal buffer: scratch offset (-1 none) */
  int64_t *buf_bytes;
  trnc_value *shadow;     /* values with tv types, for view rules */
  bool *is_output;        /* value is a graph output */
  uint8_t *virt;          /* per node: VIRT_* (batched matmul views, no kernel) */
  struct wthrough *wt;    /* per bmm node: where it writes through (perm -1: nowhere) */
  int nbuf;               /* buffers created (for names) */
  struct trnc_compiled *c;
} cstate;

/* Views and wait_tensor: the result lives in the operand's buffer, no kernel. */
static bool is_view_op(trnc_op op) { return trnc_op_has(op, TRNC_OPF_ALIASES); }

static int64_t extent_elems(const trnc_type *t) {
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    e += (t->shape[i] - 1) * t->stride[i];
  }
  return e;
}

static int add_buffer(cstate *C, const char *prefix, int kind, trnc_dtype dt, int64_t bytes,
                      int64_t off) {
  char name[64];
  snprintf(name, sizeof name, "%s%d", prefix, C->nbuf++);
  int b = trnc_nc_program_add_buffer(C->L.prog, name, kind, dt, bytes > 0 ? bytes : 1, off);
  if (b < 0) lw_fail(&C->L, NULL, TRNC_ERR_NOMEM, "cannot add HBM buffer %s", name);
  return b;
}

static void set_tv(cstate *C, trnc_ref r, int32_t buffer, const trnc_type *t) {
  C->L.tv[r].buffer = buffer;
  C->L.tv[r].t = *t;
  C->shadow[r].type = *t;
}

trnc_status lw_alloc_internal(lw *L, trnc_ref r, const char *name) {
  cstate *C = (cstate *)L;
  trnc_type t = L->g->values[r].type;
  t.dtype = lw_device_dtype(t.dtype);
  trnc_type_set_contiguous(&t);
  int64_t bytes = trnc_type_numel(&t) * lw_esize(t.dtype);
  if (bytes == 0) {
    set_tv(C, r, -1, &t);
    return TRNC_OK;
  }
  int64_t off = hbm_take(&C->hbm, bytes);
  int b = add_buffer(C, name ? name : "t", TRNC_NC_BUF_INTERNAL, t.dtype, bytes, off);
  if (b < 0) return L->status;
  set_tv(C, r, b, &t);
  C->buf_off[r] = off;
  C->buf_bytes[r] = bytes;
  return TRNC_OK;
}

/* Output values of node n that need a buffer get one (outputs already have
 * theirs). */
static trnc_status alloc_outputs_of(cstate *C, const trnc_node *n) {
  for (uint32_t k = 0; k < n->nouts; k++) {
    trnc_ref r = n->outs[k];
    if (C->L.g->values[r].is_none || C->L.tv[r].buffer >= 0) continue;
    /* the flash attention's logsumexp, read by nothing (inference): not stored */
    if (n->op == TRNC_OP_SDPA_FLASH && k == 1 && !C->nuses[r] && !C->is_output[r]) continue;
    trnc_status st = lw_alloc_internal(&C->L, r, "t");
    if (st) return st;
  }
  return TRNC_OK;
}

/* Frees internal buffers whose last use is node index i. */
static void release_after(cstate *C, uint32_t i) {
  const trnc_graph *g = C->L.g;
  for (uint32_t r = 0; r < g->nvalues; r++) {
    if (C->buf_off[r] < 0 || C->is_output[r]) continue;
    if (C->lastuse[r] != UINT32_MAX && C->lastuse[r] > i) continue;
    if (C->lastuse[r] == UINT32_MAX && g->values[r].node > i) continue;
    hbm_give(&C->hbm, C->buf_off[r], C->buf_bytes[r]);
    C->buf_off[r] = -1;
  }
}

/* ---- views ------------------------------------------------------------------------- */

/* as_strided addresses the input's *storage*: valid on trnc's buffer only if
 * trnc holds the input in the layout torch declared (same strides); the
 * storage offset is taken relative to the input's declared offset. */
static trnc_status lower_as_strided(cstate *C, const trnc_node *n) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  trnc_ref in = n->args[0].u.ref;
  const trnc_type *meta = &g->values[in].type, *have = &L->tv[in].t;
  for (int i = 0; i < meta->rank; i++)
    if (meta->shape[i] > 1 && meta->stride[i] != have->stride[i])
      return lw_fail(L, n, TRNC_ERR_UNSUPPORTED,
                     "as_strided over a tensor trnc laid out differently from torch's strides");
  trnc_type out = g->values[n->outs[0]].type;
  out.dtype = have->dtype;
  out.offset = have->offset + (out.offset - meta->offset);
  if (out.offset < 0)
    return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "as_strided before the start of trnc's buffer");
  set_tv(C, n->outs[0], L->tv[in].buffer, &out);
  return TRNC_OK;
}

static trnc_status lower_view(cstate *C, const trnc_node *n) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  trnc_ref in = n->args[0].u.ref;
  if (L->tv[in].buffer < 0 && trnc_type_numel(&g->values[in].type) != 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "view of a value that has no buffer");
  if (n->op == TRNC_OP_AS_STRIDED) return lower_as_strided(C, n);
  trnc_graph shadow = *g;
  shadow.values = C->shadow;
  trnc_type *out = trnc_arena_array(&L->arena, n->nouts ? n->nouts : 1, sizeof *out);
  if (!out) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
  for (uint32_t k = 0; k < n->nouts; k++) {
    memset(&out[k], 0, sizeof out[k]);
    out[k].offset = -1;
  }
  trnc_diags *scratch = trnc_diags_create();
  trnc_status st = trnc_op_defs[n->op].rule(&shadow, n, out, n->nouts, scratch);
  trnc_diags_destroy(scratch);
  if (st || out[0].offset < 0) {
    /* strides cannot express it (view of a non-viewable layout, or a
     * reshape that must copy): materialize the input contiguously first */
    lw_tv dense;
    st = lw_materialize(L, n, in, &dense);
    if (st) return st;
    trnc_ref keep_b = L->tv[in].buffer;
    trnc_type keep_t = L->tv[in].t;
    set_tv(C, in, dense.buffer, &dense.t);
    for (uint32_t k = 0; k < n->nouts; k++) {
      memset(&out[k], 0, sizeof out[k]);
      out[k].offset = -1;
    }
    trnc_diags *d2 = trnc_diags_create();
    st = trnc_op_defs[n->op].rule(&shadow, n, out, n->nouts, d2);
    trnc_diags_destroy(d2);
    set_tv(C, in, (int32_t)keep_b, &keep_t);
    if (st) return lw_fail(L, n, TRNC_ERR_INTERNAL, "cannot lower view %s", n->target);
    if (out[0].offset < 0) {
      /* reshape that is not a view: contiguous result over the copy */
      for (uint32_t k = 0; k < n->nouts; k++) trnc_type_set_contiguous(&out[k]);
    }
    for (uint32_t k = 0; k < n->nouts; k++) {
      out[k].dtype = dense.t.dtype;
      set_tv(C, n->outs[k], dense.buffer, &out[k]);
    }
    return TRNC_OK;
  }
  for (uint32_t k = 0; k < n->nouts; k++) {
    out[k].dtype = L->tv[in].t.dtype;
    set_tv(C, n->outs[k], L->tv[in].buffer, &out[k]);
  }
  return TRNC_OK;
}

/* ---- copies ------------------------------------------------------------------------- */

typedef struct copy_ctx {
  const lw_tv *dst, *src;
  lw_pool pool;
  int dop, sop;
} copy_ctx;

static trnc_status copy_tile(lw *L, const lw_space *s, const lw_tile_pos *tp, void *ctx) {
  copy_ctx *c = ctx;
  lw_tile *t = lw_pool_next(&c->pool);
  int64_t counts[TRNC_NC_MAX_FREE];
  for (int i = 0; i < tp->nfree; i++) counts[i] = tp->nf[i];
  int np = (int)(tp->pdim >= 0 ? tp->np : 1);
  trnc_nc_ap sb = lw_tile_ap(t, np, 0, c->src->t.dtype, tp->nfree, counts);
  trnc_status st = lw_dma(L, t, sb, lw_hbm_ap(s, c->sop, c->src->buffer, c->src->t.dtype, tp), false);
  if (st) return st;
  trnc_nc_ap sb2 = lw_tile_ap(t, np, 0, c->src->t.dtype, tp->nfree, counts);
  trnc_nc_ap dst = lw_hbm_ap(s, c->dop, c->dst->buffer, c->dst->t.dtype, tp);
  return lw_dma(L, t, sb2, dst, true);
}

/* A copy whose source runs contiguously along another dim than its
 * destination (a transpose made contiguous: attention's k^T) would read one
 * element per DMA run. For float data it instead reads source rows
 * [i block on partitions, j block contiguous], flips each [<=128, <=128]
 * block on TensorE into PSUM (exact on NeuronCore-v3: [isa] nc_transpose),
 * and writes destination rows [j block on partitions, i block contiguous].
 * s is ordered and coalesced (lw_emit_copy); di = its innermost dim (dst
 * stride 1), dj the dim where src has stride 1. */
static trnc_status copy_transposed(lw *L, const lw_space *s, int dop, int sop, const lw_tv *dst,
                                   const lw_tv *src, int dj) {
  int di = s->rank - 1;
  trnc_dtype dt = src->t.dtype;
  int64_t es = lw_esize(dt), P = L->target->partitions;
  lw_pool in, ps, out;
  trnc_status st;
  if ((st = lw_pool_init(L, &in, TRNC_NC_MEM_SBUF, P * es, 3)) ||
      (st = lw_pool_init(L, &ps, TRNC_NC_MEM_PSUM, P * 4, 2)) ||
      (st = lw_pool_init(L, &out, TRNC_NC_MEM_SBUF, P * es, 3)))
    return st;
  int64_t idx[TRNC_MAX_RANK + 1] = {0};
  for (;;) {
    int64_t sb = s->base[sop], db = s->base[dop];
    for (int d = 0; d < s->rank; d++)
      if (d != di && d != dj) {
        sb += idx[d] * s->stride[sop][d];
        db += idx[d] * s->stride[dop][d];
      }
    for (int64_t i0 = 0; i0 < s->size[di]; i0 += P)
      for (int64_t j0 = 0; j0 < s->size[dj]; j0 += P) {
        int64_t ni = s->size[di] - i0 < P ? s->size[di] - i0 : P, nj = s->size[dj] - j0 < P ? s->size[dj] - j0 : P;
        lw_tile *a = lw_pool_next(&in), *t = lw_pool_next(&ps), *b = lw_pool_next(&out);
        trnc_nc_ap h = {0};
        h.mem = TRNC_NC_MEM_HBM;
        h.dtype = (uint8_t)dt;
        h.buffer = src->buffer;
        h.partitions = (int32_t)ni;
        h.partition_stride = s->stride[sop][di];
        h.offset = (sb + i0 * s->stride[sop][di] + j0) * es;
        h.nfree = 1;
        h.free[0] = (trnc_nc_dim){1, nj};
        if ((st = lw_dma(L, a, lw_tile_ap(a, (int)ni, 0, dt, 1, &nj), h, false))) return st;
        trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
        tr.src[0] = lw_tile_ap(a, (int)ni, 0, dt, 1, &nj);
        tr.dst = lw_tile_ap(t, (int)nj, 0, TRNC_F32, 1, &ni);
        if ((st = lw_emit(L, &tr, &a, 1, &t, 1))) return st;
        trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
        cp.src[0] = tr.dst;
        cp.dst = lw_tile_ap(b, (int)nj, 0, dt, 1, &ni);
        if ((st = lw_emit(L, &cp, &t, 1, &b, 1))) return st;
        h.buffer = dst->buffer;
        h.dtype = (uint8_t)dst->t.dtype;
        h.partitions = (int32_t)nj;
        h.partition_stride = s->stride[dop][dj];
        h.offset = (db + j0 * s->stride[dop][dj] + i0) * lw_esize(dst->t.dtype);
        h.free[0] = (trnc_nc_dim){1, ni};
        if ((st = lw_dma(L, b, cp.dst, h, true))) return st;
      }
    int d = s->rank - 1;
    for (; d >= 0; d--) {
      if (d == di || d == dj) continue;
      if (++idx[d] < s->size[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return TRNC_OK;
  }
}

trnc_status lw_emit_copy(lw *L, const lw_tv *dst, const lw_tv *src, const char *name) {
  if (trnc_type_numel(&dst->t) == 0) return TRNC_OK;
  trnc_status st = lw_kernel_begin(L, name);
  if (st) return st;
  copy_ctx c;
  memset(&c, 0, sizeof c);
  c.dst = dst;
  c.src = src;
  lw_space s;
  memset(&s, 0, sizeof s);
  c.dop = lw_space_add(&s, dst, dst->t.rank, dst->t.shape);
  c.sop = lw_space_add(&s, src, dst->t.rank, dst->t.shape);
  if (!lw_space_unique_writes(&s, c.dop))
    return lw_fail(L, NULL, TRNC_ERR_INTERNAL,
                   "%s: a broadcast destination would receive different values", name);
  lw_space_order(&s, c.dop);
  lw_space_coalesce(&s);
  bool flt = src->t.dtype == TRNC_F32 || src->t.dtype == TRNC_BF16 || src->t.dtype == TRNC_F16;
  if (flt && src->t.dtype == dst->t.dtype && s.rank >= 2 && s.stride[c.dop][s.rank - 1] == 1 &&
      s.stride[c.sop][s.rank - 1] != 1)
    for (int j = 0; j < s.rank - 1; j++)
      if (s.stride[c.sop][j] == 1 && s.stride[c.dop][j] != 0)
        return copy_transposed(L, &s, c.dop, c.sop, dst, src, j);
  int64_t max_free = 8192, numel = trnc_type_numel(&dst->t);
  if (numel < max_free) max_free = (numel + 15) & ~(int64_t)15;
  st = lw_pool_init(L, &c.pool, TRNC_NC_MEM_SBUF, max_free * 4, 3);
  if (st) return st;
  return lw_space_tiles(L, &s, -1, max_free, copy_tile, &c);
}

trnc_status lw_materialize(lw *L, const trnc_node *n, trnc_ref r, lw_tv *out) {
  cstate *C = (cstate *)L;
  lw_tv src = L->tv[r];
  trnc_type t = src.t;
  trnc_type_set_contiguous(&t);
  int64_t bytes = trnc_type_numel(&t) * lw_esize(t.dtype);
  out->t = t;
  out->buffer = -1;
  if (!bytes) return TRNC_OK;
  /* the copy lives as long as the value it copies */
  int64_t off = hbm_take(&C->hbm, bytes);
  int b = add_buffer(C, "m", TRNC_NC_BUF_INTERNAL, t.dtype, bytes, off);
  if (b < 0) return L->status;
  out->buffer = b;
  return lw_emit_copy(L, out, &src, "materialize");
}

/* ---- creation ops -------------------------------------------------------------------- */

typedef struct fill_ctx {
  const lw_tv *dst;
  lw_pool pool;
  float value;
  bool iota;          /* arange: value = start + step * linear index */
  double start, step;
  double exact;       /* the fill value before rounding to float */
  bool int32;         /* integer values, exact in int32: an i32 iota */
} fill_ctx;

/* c's values are integers within int32 (every arange value of n elements;
 * the fill value), so an i32 iota writes them exactly where an fp32 tile
 * would round beyond 2^24 (iota computes in 32-bit integers). */
static bool fill_int32(const fill_ctx *c, int64_t n) {
  trnc_dtype dt = c->dst->t.dtype;
  if (dt != TRNC_I32 && dt != TRNC_I16 && dt != TRNC_I8 && dt != TRNC_U8) return false;
  double lo = c->iota ? c->start : c->exact, hi = c->iota ? c->start + c->step * (double)(n - 1) : c->exact;
  if (c->iota && (c->step != floor(c->step) || c->start != floor(c->start))) return false;
  return lo == floor(lo) && fmin(lo, hi) >= INT32_MIN && fmax(lo, hi) <= INT32_MAX;
}

static trnc_status fill_tile(lw *L, const lw_space *s, const lw_tile_pos *tp, void *ctx) {
  fill_ctx *c = ctx;
  lw_tile *t = lw_pool_next(&c->pool);
  int64_t counts[TRNC_NC_MAX_FREE];
  for (int i = 0; i < tp->nfree; i++) counts[i] = tp->nf[i];
  int np = (int)(tp->pdim >= 0 ? tp->np : 1);
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.engine = TRNC_NC_GPSIMD;
  in.dst = lw_tile_ap(t, np, 0, c->int32 ? TRNC_I32 : TRNC_F32, tp->nfree, counts);
  if (c->int32) { /* value = start + step * linear index, or the fill value */
    in.op = TRNC_NC_OP_IOTA;
    int64_t step = c->iota ? (int64_t)c->step : 0;
    int64_t first = (tp->pdim >= 0 ? tp->p0 * s->stride[0][tp->pdim] : 0);
    for (int i = 0; i < tp->nfree; i++) first += tp->f0[i] * s->stride[0][tp->fdim[i]];
    in.aff[0] = (int32_t)((int64_t)(c->iota ? c->start : c->exact) + step * first);
    in.aff[1] = (int32_t)(tp->pdim >= 0 ? step * s->stride[0][tp->pdim] : 0);
    for (int i = 0; i < tp->nfree; i++) in.aff[2 + i] = (int32_t)(step * s->stride[0][tp->fdim[i]]);
    trnc_status st = lw_emit(L, &in, NULL, 0, &t, 1);
    if (st) return st;
    trnc_nc_ap sb = lw_tile_ap(t, np, 0, TRNC_I32, tp->nfree, counts);
    return lw_dma(L, t, sb, lw_hbm_ap(s, 0, c->dst->buffer, c->dst->t.dtype, tp), true);
  }
  if (c->iota) {
    /* arange is 1-D: value = start + step * (p0 + f0 + p*rowlen + i) */
    in.op = TRNC_NC_OP_IOTA;
    int64_t first = (tp->pdim >= 0 ? tp->p0 * s->stride[0][tp->pdim] : 0);
    for (int i = 0; i < tp->nfree; i++) first += tp->f0[i] * s->stride[0][tp->fdim[i]];
    in.aff[0] = (int32_t)first;
    in.aff[1] = (int32_t)(tp->pdim >= 0 ? s->stride[0][tp->pdim] : 0);
    for (int i = 0; i < tp->nfree; i++) in.aff[2 + i] = (int32_t)s->stride[0][tp->fdim[i]];
  } else {
    in.op = TRNC_NC_OP_MEMSET;
    in.imm[0] = c->value;
  }
  trnc_status st = lw_emit(L, &in, NULL, 0, &t, 1);
  if (st) return st;
  if (c->iota && (c->start != 0 || c->step != 1)) {
    trnc_nc_instr ts;
    memset(&ts, 0, sizeof ts);
    ts.op = TRNC_NC_OP_TENSOR_SCALAR;
    ts.engine = TRNC_NC_VECTOR;
    ts.alu0 = TRNC_NC_ALU_MUL;
    ts.imm[0] = (float)c->step;
    ts.alu1 = TRNC_NC_ALU_ADD;
    ts.imm[1] = (float)c->start;
    ts.dst = in.dst;
    ts.src[0] = in.dst;
    if ((st = lw_emit(L, &ts, &t, 1, &t, 1))) return st;
  }
  trnc_nc_ap sb = lw_tile_ap(t, np, 0, TRNC_F32, tp->nfree, counts);
  return lw_dma(L, t, sb, lw_hbm_ap(s, 0, c->dst->buffer, c->dst->t.dtype, tp), true);
}


static trnc_status lower_fill(lw *L, const trnc_node *n) {
  const lw_tv *dst = &L->tv[n->outs[0]];
  if (trnc_type_numel(&dst->t) == 0) return TRNC_OK;
  fill_ctx c;
  memset(&c, 0, sizeof c);
  c.dst = dst;
  c.step = 1;
  switch (n->op) {
    case TRNC_OP_FULL: c.exact = trnc_arg_number(&n->args[1], 0); break;
    case TRNC_OP_FULL_LIKE: c.exact = trnc_arg_number(&n->args[1], 0); break;
    case TRNC_OP_SCALAR_TENSOR: c.exact = trnc_arg_number(&n->args[0], 0); break;
    case TRNC_OP_ONES: c.exact = 1; break;
    case TRNC_OP_ZEROS: case TRNC_OP_EMPTY: case TRNC_OP_NEW_EMPTY_STRIDED: c.exact = 0; break;
    case TRNC_OP_ARANGE: c.iota = true; break;
    case TRNC_OP_ARANGE_START: c.iota = true; c.start = trnc_arg_number(&n->args[0], 0); break;
    case TRNC_OP_ARANGE_START_STEP:
      c.iota = true;
      c.start = trnc_arg_number(&n->args[0], 0);
      c.step = trnc_arg_number(&n->args[2], 0);
      break;
    default: return lw_fail(L, n, TRNC_ERR_INTERNAL, "not a creation op");
  }
  c.value = (float)c.exact;
  c.int32 = fill_int32(&c, trnc_type_numel(&dst->t));
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  lw_space s;
  memset(&s, 0, sizeof s);
  lw_space_add(&s, dst, dst->t.rank, dst->t.shape);
  if (!c.iota) lw_space_coalesce(&s);
  int64_t max_free = 8192, numel = trnc_type_numel(&dst->t);
  if (numel < max_free) max_free = (numel + 15) & ~(int64_t)15;
  if ((st = lw_pool_init(L, &c.pool, TRNC_NC_MEM_SBUF, max_free * 4, 2))) return st;
  L->ops_per_engine[3]++;
  /* a long constant (torch.zeros of a whole tensor: one dim once coalesced)
   * on every partition, not tiles of one partition */
  if (!c.iota && s.rank == 1 && s.size[0] >= 2 * L->target->partitions)
    return lw_space_tiles_rows(L, &s, max_free, fill_tile, &c);
  return lw_space_tiles(L, &s, -1, max_free, fill_tile, &c);
}

trnc_status lw_emit_fill(lw *L, const lw_tv *dst, float value, const char *name) {
  if (dst->buffer < 0 || trnc_type_numel(&dst->t) == 0) return TRNC_OK;
  fill_ctx c;
  memset(&c, 0, sizeof c);
  c.dst = dst;
  c.value = value;
  trnc_status st = lw_kernel_begin(L, name);
  if (st) return st;
  lw_space s;
  memset(&s, 0, sizeof s);
  lw_space_add(&s, dst, dst->t.rank, dst->t.shape);
  lw_space_coalesce(&s);
  int64_t max_free = 8192, numel = trnc_type_numel(&dst->t);
  if (numel < max_free) max_free = (numel + 15) & ~(int64_t)15;
  if ((st = lw_pool_init(L, &c.pool, TRNC_NC_MEM_SBUF, max_free * 4, 2))) return st;
  L->ops_per_engine[3]++;
  return lw_space_tiles(L, &s, -1, max_free, fill_tile, &c);
}

/* ---- dispatch ------------------------------------------------------------------------- */

static bool is_fill(trnc_op op) {
  switch (op) {
    case TRNC_OP_FULL: case TRNC_OP_FULL_LIKE: case TRNC_OP_SCALAR_TENSOR: case TRNC_OP_ONES:
    case TRNC_OP_ZEROS: case TRNC_OP_EMPTY: case TRNC_OP_NEW_EMPTY_STRIDED: case TRNC_OP_ARANGE:
    case TRNC_OP_ARANGE_START:
    case TRNC_OP_ARANGE_START_STEP:
      return true;
    default: return false;
  }
}

static bool is_matmul(trnc_op op) {
  return op == TRNC_OP_MM || op == TRNC_OP_BMM || op == TRNC_OP_ADDMM || op == TRNC_OP_BADDBMM;
}

/* A node that starts or joins an elementwise group (codegen/kir/build.c). */
static bool groups(const trnc_graph *g, const trnc_node *n) {
  return kir_is_eltwise(g, n) || kir_is_row(n->op) || kir_is_gather(g, n);
}

/** True if trnc can emit node n (the emitter covers it). */
static bool can_lower(const trnc_graph *g, const trnc_node *n) {
  if (n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT) return true;
  if (is_view_op(n->op) || is_fill(n->op) || is_matmul(n->op) || kir_is_reduce(n->op)) return true;
  if (groups(g, n)) return true;
  for (int f = 0; f < lw_nfamilies; f++)
    if (lw_families[f].handles(g, n)) return true;
  return false;
}

static const trnc_type *vtype(const trnc_graph *g, trnc_ref r) { return &g->values[r].type; }

static bool same_shape(const trnc_type *a, const trnc_type *b) {
  return a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int64_t) * a->rank);
}

/* Does a broadcast (right-aligned, size-1 or missing dims) to b? */
static bool broadcasts_to(const trnc_type *a, const trnc_type *b) {
  if (a->rank > b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != 1 && a->shape[d] != b->shape[b->rank - a->rank + d]) return false;
  return true;
}

/* Can node n join a group whose iteration space is *space (the shape every
 * group value broadcasts to) and whose row nodes fold the dims in *rows
 * (0: none yet)? Before the first row node the space may grow, or n may be
 * smaller, by broadcasting: a smaller producer (a causal mask's bitwise_not
 * before the masked_fill of the scores, a bias's activation) is computed in
 * the larger space, which is cheap next to a kernel and an HBM round trip
 * (group_prefix keeps it only if nothing outside needs its value). */
/* A group's share of one kernel's KIR_MAX_OPS / KIR_MAX_VALUES: an exact
 * int32 add, sub, multiply, bitwise op or shift is one kir op plus at most
 * one constant (codegen/kir/rules.c int_exact), a comparison or test of
 * floats, a logical op of bools or a where over floats at most two (a max
 * pooling window's taps: five such nodes each), anything else up to eight
 * (a group held at most 24 such nodes). Philox's chains of int32 ops
 * (passes/decomp_random.c) fuse 64 nodes to a kernel this way. */
#define GROUP_WEIGHT (24 * 8)
static bool float_dt(trnc_dtype dt) { return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16; }

static int fusion_weight(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_ADD: case TRNC_OP_SUB: case TRNC_OP_MUL: case TRNC_OP_BITWISE_AND:
    case TRNC_OP_BITWISE_OR: case TRNC_OP_BITWISE_XOR: case TRNC_OP_BITWISE_NOT:
    case TRNC_OP_BITWISE_RIGHT_SHIFT_SCALAR:
      return vtype(g, n->outs[0])->dtype == TRNC_I32 ? 3 : 8;
    /* a comparison of floats, a test or a where over floats is one tt, ts or
     * select (a where's scalar: one const more) */
    case TRNC_OP_EQ: case TRNC_OP_NE: case TRNC_OP_LT: case TRNC_OP_LE: case TRNC_OP_GT: case TRNC_OP_GE:
    case TRNC_OP_EQ_SCALAR: case TRNC_OP_NE_SCALAR: case TRNC_OP_LT_SCALAR: case TRNC_OP_LE_SCALAR:
    case TRNC_OP_GT_SCALAR: case TRNC_OP_GE_SCALAR: case TRNC_OP_ISNAN:
      return n->args[0].kind == TRNC_ARG_VALUE && float_dt(vtype(g, n->args[0].u.ref)->dtype) ? 4 : 8;
    case TRNC_OP_WHERE:
      return float_dt(vtype(g, n->outs[0])->dtype) ? 4 : 8;
    case TRNC_OP_LOGICAL_OR: case TRNC_OP_LOGICAL_AND:
      return vtype(g, n->args[0].u.ref)->dtype == TRNC_BOOL && n->args[1].kind == TRNC_ARG_VALUE &&
                     vtype(g, n->args[1].u.ref)->dtype == TRNC_BOOL ? 4 : 8;
    default: return 8;
  }
}

/* The iteration space of a group node: its result's shape, or for a
 * layer-norm backward without dx (output_mask [False, *, *]: only column
 * sums) its input's, which nothing else joins. */
static const trnc_type *group_space(const trnc_graph *g, const trnc_node *n) {
  if (n->op == TRNC_OP_LAYER_NORM_BACKWARD && g->values[n->outs[0]].is_none) return vtype(g, n->args[1].u.ref);
  return vtype(g, n->outs[0]);
}

static bool fuses(const trnc_graph *g, const trnc_type **space, const trnc_node *n, int weight,
                  uint32_t *rows) {
  if (weight + fusion_weight(g, n) > GROUP_WEIGHT || !groups(g, n)) return false;
  const trnc_type *b = vtype(g, n->outs[0]);
  if (group_space(g, n) != b) return false; /* column sums only: a kernel of its own */
  if (!same_shape(*space, b)) {
    if (*rows || kir_is_row(n->op) || !trnc_type_numel(*space) || !trnc_type_numel(b)) return false;
    if (broadcasts_to(*space, b)) *space = b;
    else if (!broadcasts_to(b, *space)) return false;
  }
  if (!kir_is_row(n->op)) return true;
  bool kd;
  uint32_t m = kir_reduced_dims(n, b->rank, &kd);
  if (*rows && m != *rows) return false;
  *rows = m;
  return true;
}

/* True if node m reads a column sum of a row node in group[0..k) (layer-norm
 * backward's dW, dB): a value over the row dims only, never a group value. */
static bool reads_colsum(const trnc_node *const *group, int k, const trnc_node *m) {
  for (uint32_t a = 0; a < m->nargs; a++) {
    if (m->args[a].kind != TRNC_ARG_VALUE) continue;
    trnc_ref r = m->args[a].u.ref;
    for (int i = 0; i < k; i++)
      for (uint32_t o = 1; kir_is_row(group[i]->op) && o < group[i]->nouts; o++)
        if (group[i]->outs[o] == r && kir_row_colsum(group[i], o)) return true;
  }
  return false;
}

/* ---- batched matmul operands and results in place ---------------------------------- */

/* Attention splits heads as clone(permute(view(x))) + _unsafe_view to
 * [B*H, T, D] for bmm, and merges them back as clone(permute(view(bmm))).
 * bmm reads and writes leading dims through their own strides
 * (codegen/kir/matmul.c: access maps), so these clones need no kernel:
 *  - read side (VIRT_READ): y = clone(x) whose only use is a view u merging
 *    y's leading dims, itself used only as bmm operands: y and u take x's
 *    strides (rank 4 for u's 3-D value; only bmm reads it);
 *  - write side (VIRT_WRITE): y = clone(permute(o)) or
 *    clone(permute(view(o))) of a bmm result o used only there, the view
 *    splitting o's leading dim: the bmm writes o into y's buffer through the
 *    permuted strides (the views in between are VIRT_SKIP).
 * VIRT_FUSED marks a node lowered ahead of its turn as the last node of a
 * matmul's epilogue (hoist_cast): nothing is left to do at its index. */
enum { VIRT_NONE, VIRT_READ, VIRT_SKIP, VIRT_WRITE, VIRT_FUSED };

/* A bmm writing through permutation node `perm` into clone node `clone`'s
 * buffer (-1: no clone) or input `cat_in` of cat node `cat` (-1: none). */
typedef struct wthrough {
  int32_t perm, clone, cat, cat_in;
} wthrough;

static bool is_bmm(trnc_op op) { return op == TRNC_OP_BMM || op == TRNC_OP_BADDBMM; }

/* The node reading value r in its only argument slot, or NULL. */
static const trnc_node *sole_user(const cstate *C, trnc_ref r) {
  return C->nuses[r] == 1 ? &C->L.g->nodes[C->firstuse[r]] : NULL;
}

/* True if every read of r is a bmm operand (not baddbmm's bias). */
static bool only_bmm_operands(const cstate *C, trnc_ref r) {
  const trnc_graph *g = C->L.g;
  uint32_t seen = 0;
  for (uint32_t i = C->firstuse[r]; i < g->nnodes && seen < C->nuses[r]; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t a = 0; a < n->nargs; a++) {
      if (n->args[a].kind != TRNC_ARG_VALUE || n->args[a].u.ref != r) continue;
      uint32_t first = n->op == TRNC_OP_BADDBMM ? 1 : 0;
      if (!is_bmm(n->op) || a < first || a > first + 1) return false;
      seen++;
    }
  }
  return seen == C->nuses[r] && seen > 0;
}

/* u's 3-D shape merges the leading dims of y's (rank >= 4), the last two
 * kept; `split`: u splits instead (u rank >= 4, y 3-D). */
static bool merges_leading(const trnc_type *y, const trnc_type *u) {
  if (y->rank < 4 || u->rank != 3) return false;
  int64_t lead = 1;
  for (int d = 0; d < y->rank - 2; d++) lead *= y->shape[d];
  return lead == u->shape[0] && y->shape[y->rank - 2] == u->shape[1] && y->shape[y->rank - 1] == u->shape[2];
}

static bool is_reshape(trnc_op op) {
  return op == TRNC_OP_VIEW || op == TRNC_OP_UNSAFE_VIEW || op == TRNC_OP_RESHAPE;
}

/* p = permute(o) or permute(view(o)) of the result o of a bmm, each link
 * used once and no graph output, the view splitting o's leading dim: the
 * bmm (and *v the view, or the bmm itself when there is none); else NULL. */
static const trnc_node *permuted_bmm(const cstate *C, const trnc_node *p, const trnc_node **v) {
  const trnc_graph *g = C->L.g;
  if ((p->op != TRNC_OP_PERMUTE && p->op != TRNC_OP_TRANSPOSE) || p->args[0].kind != TRNC_ARG_VALUE) return NULL;
  trnc_ref o = p->args[0].u.ref;
  const trnc_node *mm = *v = &g->nodes[g->values[o].node];
  if (is_reshape(mm->op)) {
    if (C->nuses[o] != 1 || C->is_output[o] || !merges_leading(vtype(g, o), vtype(g, mm->args[0].u.ref)))
      return NULL;
    o = mm->args[0].u.ref;
    mm = &g->nodes[g->values[o].node];
  }
  if (!is_bmm(mm->op) || C->nuses[o] != 1 || C->is_output[o]) return NULL;
  return mm;
}

/* Reshape node r merges the last two dims of z into its last dim and its
 * result's only use is one input of a cat (no graph output): *cat, *at. */
static bool cat_input(const cstate *C, const trnc_node *r, trnc_ref z, int32_t *cat, int32_t *at) {
  const trnc_graph *g = C->L.g;
  trnc_ref in = r->outs[0];
  const trnc_type *zt = vtype(g, z), *it = vtype(g, in);
  if (C->is_output[in] || C->nuses[z] != 1 || zt->rank != it->rank + 1 || it->rank < 1) return false;
  for (int d = 0; d + 1 < it->rank; d++)
    if (zt->shape[d] != it->shape[d]) return false;
  if (zt->shape[it->rank - 1] * zt->shape[it->rank] != it->shape[it->rank - 1]) return false;
  const trnc_node *c = sole_user(C, in);
  if (!c || c->op != TRNC_OP_CAT || C->is_output[c->outs[0]]) return false;
  const trnc_arg *l = trnc_node_arg(c, 0);
  for (uint32_t k = 0; l && l->kind == TRNC_ARG_LIST && k < l->u.list.n; k++)
    if (l->u.list.items[k].kind == TRNC_ARG_VALUE && l->u.list.items[k].u.ref == in) {
      *cat = (int32_t)(c - g->nodes);
      *at = (int32_t)k;
      return true;
    }
  return false;
}

/* Records the write side of bmm mm through permutation p (view v between,
 * or v == mm), clone node `clone` (-1: none) and cat input (cat, at). */
static void mark_write(cstate *C, const trnc_node *mm, const trnc_node *p, const trnc_node *v, int32_t clone,
                       int32_t cat, int32_t at) {
  const trnc_graph *g = C->L.g;
  if (clone >= 0) C->virt[clone] = VIRT_WRITE;
  C->virt[p - g->nodes] = VIRT_SKIP;
  if (v != mm) C->virt[v - g->nodes] = VIRT_SKIP;
  C->wt[mm - g->nodes] = (wthrough){(int32_t)(p - g->nodes), clone, cat, at};
}

static void mark_batch_views(cstate *C) {
  const trnc_graph *g = C->L.g;
  if (C->L.opt.no_fusion) return;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *c = &g->nodes[i];
    if (c->dead || c->op != TRNC_OP_CLONE || c->args[0].kind != TRNC_ARG_VALUE) continue;
    trnc_ref x = c->args[0].u.ref, y = c->outs[0];
    if (C->is_output[y] || C->is_output[x]) continue;
    /* read side */
    const trnc_node *u = sole_user(C, y);
    if (u && !u->dead && is_reshape(u->op) && !C->is_output[u->outs[0]] &&
        merges_leading(vtype(g, y), vtype(g, u->outs[0])) && only_bmm_operands(C, u->outs[0])) {
      C->virt[i] = C->virt[u - g->nodes] = VIRT_READ;
      continue;
    }
    /* write side: x = permute(o) or permute(view(o)), o a bmm result */
    const trnc_node *p = &g->nodes[g->values[x].node], *v, *mm = permuted_bmm(C, p, &v);
    if (!mm || C->nuses[x] != 1 || vtype(g, y)->rank != vtype(g, x)->rank) continue;
    int32_t cat = -1, at = -1;
    const trnc_node *r = sole_user(C, y);
    if (r && is_reshape(r->op)) cat_input(C, r, y, &cat, &at);
    mark_write(C, mm, p, v, (int32_t)i, cat, at);
  }
  /* a permuted bmm result merged into a cat input without a clone */
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *r = &g->nodes[i], *v, *mm;
    if (r->dead || !is_reshape(r->op) || r->args[0].kind != TRNC_ARG_VALUE) continue;
    trnc_ref z = r->args[0].u.ref;
    const trnc_node *p = &g->nodes[g->values[z].node];
    int32_t cat = -1, at = -1;
    if (C->nuses[z] != 1 || C->is_output[z] || !(mm = permuted_bmm(C, p, &v)) || C->wt[mm - g->nodes].perm >= 0 ||
        !cat_input(C, r, z, &cat, &at))
      continue;
    mark_write(C, mm, p, v, -1, cat, at);
  }
}

/* The cat slice that input `at` of cat node `cat` fills, split as value z
 * (z: the input's last dim as two, H x D). */
static lw_tv cat_slice(cstate *C, const trnc_node *cat, int32_t at, trnc_ref z) {
  const trnc_graph *g = C->L.g;
  const lw_tv *o = &C->L.tv[cat->outs[0]];
  const trnc_arg *l = trnc_node_arg(cat, 0);
  int rank = o->t.rank, d = (int)trnc_arg_int(cat, 1, 0);
  if (d < 0) d += rank;
  lw_tv t = *o;
  for (int32_t i = 0; i < at; i++) t.t.offset += vtype(g, l->u.list.items[i].u.ref)->shape[d] * o->t.stride[d];
  const trnc_type *zt = vtype(g, z);
  t.t.rank = zt->rank;
  for (int k = 0; k < rank - 1; k++) t.t.shape[k] = zt->shape[k];
  t.t.shape[rank - 1] = zt->shape[rank - 1];
  t.t.shape[rank] = zt->shape[rank];
  t.t.stride[rank] = o->t.stride[rank - 1];
  t.t.stride[rank - 1] = o->t.stride[rank - 1] * zt->shape[rank];
  return t;
}

/* Write side at bmm node n: the destination (the clone's buffer, or a cat
 * slice the clone or the permutation's reshape fills), and n's result as
 * its [B, H, M, N] view through the permutation (or transpose) p. */
static trnc_status bind_write_through(cstate *C, const trnc_node *n) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  const wthrough *w = &C->wt[n - g->nodes];
  const trnc_node *p = &g->nodes[w->perm];
  trnc_ref z = w->clone >= 0 ? g->nodes[w->clone].outs[0] : p->outs[0];
  trnc_status st = TRNC_OK;
  lw_tv Y;
  if (w->cat >= 0) {
    const trnc_node *cat = &g->nodes[w->cat];
    if ((st = alloc_outputs_of(C, cat))) return st;
    Y = cat_slice(C, cat, w->cat_in, z);
    set_tv(C, z, Y.buffer, &Y.t);
  } else {
    if ((st = alloc_outputs_of(C, &g->nodes[w->clone]))) return st;
    Y = L->tv[z];
  }
  set_tv(C, p->outs[0], Y.buffer, &Y.t); /* read by the reshape into the cat */
  const trnc_type *o4 = vtype(g, p->args[0].u.ref); /* the permutation's input */
  int perm[TRNC_MAX_RANK], r = o4->rank;
  for (int d = 0; d < r; d++) perm[d] = d;
  if (p->op == TRNC_OP_TRANSPOSE) {
    int d0 = (int)trnc_arg_int(p, 1, 0), d1 = (int)trnc_arg_int(p, 2, 0);
    d0 = d0 < 0 ? d0 + r : d0;
    d1 = d1 < 0 ? d1 + r : d1;
    perm[d0] = d1;
    perm[d1] = d0;
  } else {
    const trnc_arg *dims = trnc_node_arg(p, 1);
    for (int d = 0; d < r && dims && dims->kind == TRNC_ARG_LIST && d < (int)dims->u.list.n; d++) {
      int64_t v = dims->u.list.items[d].u.i;
      perm[d] = (int)(v < 0 ? v + r : v);
    }
  }
  trnc_type t = *o4;
  t.dtype = Y.t.dtype;
  t.offset = Y.t.offset;
  for (int d = 0; d < r; d++) t.stride[perm[d]] = Y.t.stride[d]; /* x dim d is o4 dim perm[d] */
  set_tv(C, n->outs[0], Y.buffer, &t);
  return TRNC_OK;
}

/* Lowers virtual node n (C->virt): aliases, no kernel. */
static void lower_virtual(cstate *C, const trnc_node *n) {
  lw *L = &C->L;
  if (C->virt[n - L->g->nodes] != VIRT_READ) return; /* VIRT_SKIP, VIRT_WRITE: bound at the bmm */
  const lw_tv *in = &L->tv[n->args[0].u.ref];
  set_tv(C, n->outs[0], in->buffer, &in->t);
}

static void note_use(cstate *C, trnc_ref r, uint32_t i) {
  C->lastuse[r] = i;
  if (!C->nuses[r]++) C->firstuse[r] = i;
}

static void compute_lastuse(cstate *C) {
  const trnc_graph *g = C->L.g;
  for (uint32_t r = 0; r < g->nvalues; r++) {
    C->lastuse[r] = UINT32_MAX;
    C->base[r] = r;
  }
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    for (uint32_t a = 0; a < n->nargs; a++) {
      const trnc_arg *arg = &n->args[a];
      if (arg->kind == TRNC_ARG_VALUE) note_use(C, arg->u.ref, i);
      else if (arg->kind == TRNC_ARG_LIST)
        for (uint32_t k = 0; k < arg->u.list.n; k++)
          if (arg->u.list.items[k].kind == TRNC_ARG_VALUE) note_use(C, arg->u.list.items[k].u.ref, i);
    }
  }
  mark_batch_views(C);
  /* a view keeps its base alive: propagate last uses backwards */
  for (uint32_t i = g->nnodes; i-- > 0;) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead || (!is_view_op(n->op) && !C->virt[i])) continue;
    trnc_ref in = n->args[0].u.ref;
    for (uint32_t k = 0; k < n->nouts; k++) {
      uint32_t lu = C->lastuse[n->outs[k]];
      if (lu != UINT32_MAX && (C->lastuse[in] == UINT32_MAX || lu > C->lastuse[in]))
        C->lastuse[in] = lu;
      if (C->is_output[n->outs[k]]) C->is_output[in] = true; /* copied at its node */
    }
  }
}

static void io_from_type(trnc_io *io, const trnc_value *v) {
  memset(io, 0, sizeof *io);
  if (v->is_none) {
    io->is_none = true;
    return;
  }
  io->dtype = v->torch_dtype ? v->torch_dtype : v->type.dtype;
  if (io->dtype == TRNC_C64 || io->dtype == TRNC_C128) {
    /* float32 [..., 2] inside (passes/complex.c); the view_as_real of the
     * torch tensor at the boundary (complex128's float64 pairs converted) */
    io->dtype = io->dtype == TRNC_C64 ? TRNC_F32 : TRNC_F64;
    io->complex = true;
  }
  io->rank = v->type.rank;
  for (int i = 0; i < v->type.rank; i++) {
    io->shape[i] = v->type.shape[i];
    io->stride[i] = v->type.stride[i];
  }
  io->extent_bytes = (size_t)extent_elems(&v->type) * trnc_dtype_size(io->dtype);
}

static bool needs_convert(trnc_dtype torch_dt) { return torch_dt == TRNC_I64 || torch_dt == TRNC_F64; }

static trnc_status bind_inputs(cstate *C) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  struct trnc_compiled *c = C->c;
  size_t ni = 0, nconst = 0;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    ni += g->nodes[i].op == TRNC_OP_PLACEHOLDER;
    nconst += g->nodes[i].op == TRNC_OP_CONSTANT && !g->nodes[i].dead;
  }
  if (!trnc_artifact_alloc_inputs(c, ni, nconst)) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->op == TRNC_OP_CONSTANT && !n->dead) {
      trnc_ref r = n->outs[0];
      const trnc_type *vt = &g->values[r].type;
      trnc_type t = *vt;
      t.dtype = lw_device_dtype(vt->dtype);
      trnc_type_set_contiguous(&t);
      int64_t numel = trnc_type_numel(&t), bytes = numel * lw_esize(t.dtype);
      if (!bytes) {
        set_tv(C, r, -1, &t);
        continue;
      }
      trnc_const_binding *cb = &c->consts[c->nconsts++];
      cb->data = malloc((size_t)bytes);
      if (!cb->data) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
      cb->bytes = bytes;
      if (vt->dtype == TRNC_I64) {
        for (int64_t e = 0; e < numel; e++) {
          int64_t v;
          memcpy(&v, n->data + e * 8, 8);
          if (v < INT32_MIN || v > INT32_MAX)
            return lw_fail(L, n, TRNC_ERR_UNSUPPORTED,
                           "int64 constant value %lld does not fit in 32 bits", (long long)v);
          int32_t w = (int32_t)v;
          memcpy(cb->data + e * 4, &w, 4);
        }
      } else {
        memcpy(cb->data, n->data, (size_t)bytes);
      }
      cb->buffer = add_buffer(C, "const", TRNC_NC_BUF_INPUT, t.dtype, bytes, 0);
      if (cb->buffer < 0) return L->status;
      set_tv(C, r, cb->buffer, &t);
      continue;
    }
    if (n->op != TRNC_OP_PLACEHOLDER) continue;
    trnc_ref r = n->outs[0];
    const trnc_value *v = &g->values[r];
    trnc_io *io = &c->inputs[k];
    trnc_io_binding *b = &c->in_bind[k];
    k++;
    io_from_type(io, v);
    io->rng_seed = n->role && !strcmp(n->role, TRNC_RNG_SEED_ROLE);
    if ((io->dtype == TRNC_I64 || io->dtype == TRNC_I32) && !io->rng_seed) io->int_bound = g->int_input_bound;
    b->buffer = -1;
    b->copy_of_input = b->copy_of_output = -1;
    b->copy_view = false;
    b->copy_offset = 0;
    trnc_type t = v->type;
    t.dtype = lw_device_dtype(v->type.dtype);
    b->device_dtype = t.dtype;
    b->convert = needs_convert(io->dtype);
    if (b->convert) trnc_type_set_contiguous(&t);
    else t.offset = 0; /* the caller passes a pointer to element 0 */
    int64_t bytes = b->convert ? trnc_type_numel(&t) * lw_esize(t.dtype)
                               : extent_elems(&t) * lw_esize(t.dtype);
    b->device_bytes = bytes;
    if (bytes == 0 || (C->lastuse[r] == UINT32_MAX && !C->is_output[r])) {
      set_tv(C, r, -1, &t);
      continue;
    }
    b->buffer = add_buffer(C, "in", TRNC_NC_BUF_INPUT, t.dtype, bytes, 0);
    if (b->buffer < 0) return L->status;
    set_tv(C, r, b->buffer, &t);
  }
  return TRNC_OK;
}

static bool contiguous(const trnc_type *t) {
  int64_t st = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->stride[d] != st) return false;
    st *= t->shape[d];
  }
  return true;
}

/* The first index of r among the graph's outputs, -1 if none (is_output
 * also marks the bases of output views). */
static int output_index(const trnc_graph *g, trnc_ref r) {
  for (uint32_t j = 0; j < g->noutputs; j++)
    if (g->outputs[j] == r) return (int)j;
  return -1;
}

/* The base of graph value r's view chain (view nodes that are views in
 * eager too: a reshape only of a contiguous tensor): the first placeholder
 * or, with at_output, the first other graph output computed by a kernel,
 * with r's first element relative to the base's in *offset. TRNC_NO_REF if
 * the chain ends elsewhere or r reaches outside the base's elements. */
static trnc_ref view_base(const cstate *C, trnc_ref r, bool at_output, int64_t *offset) {
  const trnc_graph *g = C->L.g;
  const trnc_type *t = &g->values[r].type;
  trnc_ref b = r;
  for (;;) {
    const trnc_node *p = &g->nodes[g->values[b].node];
    if (b != r && at_output && output_index(g, b) >= 0) {
      if (is_view_op(p->op) || p->op == TRNC_OP_PLACEHOLDER || p->op == TRNC_OP_CONSTANT) return TRNC_NO_REF;
      break;
    }
    if (p->op == TRNC_OP_PLACEHOLDER) {
      if (at_output) return TRNC_NO_REF;
      break;
    }
    if (!is_view_op(p->op) || p->nargs < 1 || p->args[0].kind != TRNC_ARG_VALUE) return TRNC_NO_REF;
    trnc_ref in = p->args[0].u.ref;
    if ((p->op == TRNC_OP_RESHAPE || p->op == TRNC_OP_UNSAFE_VIEW) && !contiguous(&g->values[in].type))
      return TRNC_NO_REF;
    b = in;
  }
  const trnc_type *base = &g->values[b].type;
  if (b == r || base->dtype != t->dtype) return TRNC_NO_REF;
  *offset = t->offset - base->offset;
  int64_t last = *offset;
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0 || t->stride[d] < 0) return TRNC_NO_REF;
    last += t->stride[d] * (t->shape[d] - 1);
  }
  if (*offset < 0 || last >= extent_elems(base)) return TRNC_NO_REF; /* outside the base's memory */
  return b;
}

/* Graph output r is a reshape or permutation of a computed value (a saved
 * activation viewed for the backward, a matmul result viewed back to
 * [B, T, D], a weight's bf16 cast transposed for the backward's matmul):
 * when the base is contiguous and every view between keeps all of its
 * elements at offset 0, the base and those views take OUTPUT buffer
 * `buffer`, so the producing kernel writes the output in place (the output
 * has the view's strides over the base's memory, as eager's has). False
 * (nothing bound) otherwise. */
static bool write_through_view(cstate *C, trnc_ref r, int32_t buffer) {
  const trnc_graph *g = C->L.g;
  trnc_ref chain[16];
  int n = 0;
  trnc_ref b = r;
  for (;;) {
    const trnc_node *p = &g->nodes[g->values[b].node];
    bool reshape = p->op == TRNC_OP_VIEW || p->op == TRNC_OP_UNSAFE_VIEW || p->op == TRNC_OP_RESHAPE ||
                   p->op == TRNC_OP_UNSQUEEZE || p->op == TRNC_OP_SQUEEZE || p->op == TRNC_OP_SQUEEZE_DIM ||
                   p->op == TRNC_OP_SQUEEZE_DIMS || p->op == TRNC_OP_ALIAS || p->op == TRNC_OP_PERMUTE ||
                   p->op == TRNC_OP_TRANSPOSE || p->op == TRNC_OP_T;
    if (!reshape) break;
    if (n == (int)(sizeof chain / sizeof chain[0]) || p->nargs < 1 || p->args[0].kind != TRNC_ARG_VALUE) return false;
    chain[n++] = b;
    b = p->args[0].u.ref;
  }
  const trnc_node *root = &g->nodes[g->values[b].node];
  if (!n || root->op == TRNC_OP_PLACEHOLDER || root->op == TRNC_OP_CONSTANT || is_view_op(root->op) ||
      output_index(g, b) >= 0 || C->L.tv[b].buffer >= 0)
    return false;
  const trnc_type *bt = &g->values[b].type;
  if (!contiguous(bt) || bt->offset || trnc_type_numel(bt) != trnc_type_numel(&g->values[r].type)) return false;
  for (int i = 0; i < n; i++) {
    const trnc_type *ct = &g->values[chain[i]].type;
    if (ct->offset || extent_elems(ct) != trnc_type_numel(bt) || trnc_type_numel(ct) != trnc_type_numel(bt) ||
        C->L.tv[chain[i]].buffer >= 0 || (i > 0 && output_index(g, chain[i]) >= 0))
      return false;
  }
  trnc_type t = *bt;
  t.dtype = lw_device_dtype(bt->dtype);
  set_tv(C, b, buffer, &t);
  for (int i = 0; i < n; i++) {
    trnc_type vt = g->values[chain[i]].type;
    vt.dtype = t.dtype;
    set_tv(C, chain[i], buffer, &vt);
  }
  return true;
}

/* Graph outputs: computed values write straight into their OUTPUT buffer;
 * placeholders, views of placeholders and repeats are host copies (a view
 * of an input reads the input's memory); other views and constants are
 * copied by a kernel at the end. */
static trnc_status bind_outputs(cstate *C, bool *late_copy) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  struct trnc_compiled *c = C->c;
  if (!trnc_artifact_alloc_outputs(c, g->noutputs)) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref r = g->outputs[k];
    trnc_io *io = &c->outputs[k];
    trnc_io_binding *b = &c->out_bind[k];
    b->buffer = -1;
    b->copy_of_input = b->copy_of_output = -1;
    b->copy_view = false;
    b->copy_offset = 0;
    late_copy[k] = false;
    if (r == TRNC_NO_REF) {
      io->is_none = true;
      continue;
    }
    const trnc_value *v = &g->values[r];
    io_from_type(io, v);
    for (uint32_t j = 0; j < k; j++)
      if (g->outputs[j] == r) {
        b->copy_of_output = (int)j;
        break;
      }
    if (b->copy_of_output >= 0) continue;
    const trnc_node *p = &g->nodes[v->node];
    if (p->op == TRNC_OP_PLACEHOLDER) {
      int idx = 0;
      for (uint32_t i = 0; i < v->node; i++) idx += g->nodes[i].op == TRNC_OP_PLACEHOLDER;
      b->copy_of_input = idx;
      continue;
    }
    /* a view of an input or of another output: a host copy from its memory */
    int64_t voff = 0;
    trnc_ref vb = is_view_op(p->op) ? view_base(C, r, false, &voff) : TRNC_NO_REF;
    if (vb != TRNC_NO_REF) {
      int idx = 0;
      for (uint32_t i = 0; i < g->values[vb].node; i++) idx += g->nodes[i].op == TRNC_OP_PLACEHOLDER;
      b->copy_of_input = idx;
    } else if (is_view_op(p->op) && (vb = view_base(C, r, true, &voff)) != TRNC_NO_REF) {
      b->copy_of_output = output_index(g, vb);
    }
    if (vb != TRNC_NO_REF) {
      b->copy_view = true;
      b->copy_offset = voff;
      continue;
    }
    trnc_type t = v->type;
    t.dtype = lw_device_dtype(v->type.dtype);
    b->device_dtype = t.dtype;
    b->convert = needs_convert(io->dtype);
    if (b->convert) trnc_type_set_contiguous(&t);
    else t.offset = 0;
    int64_t bytes = b->convert ? trnc_type_numel(&t) * lw_esize(t.dtype)
                               : extent_elems(&t) * lw_esize(t.dtype);
    b->device_bytes = bytes;
    if (bytes == 0) continue;
    b->buffer = add_buffer(C, "out", TRNC_NC_BUF_OUTPUT, t.dtype, bytes, 0);
    if (b->buffer < 0) return L->status;
    if (is_view_op(p->op) && !b->convert && write_through_view(C, r, b->buffer)) {
      continue;              /* the view's computed base writes the output buffer */
    } else if (is_view_op(p->op) || p->op == TRNC_OP_CONSTANT) {
      late_copy[k] = true;   /* filled by a copy kernel once the view exists */
    } else {
      set_tv(C, r, b->buffer, &t);  /* the producing kernel writes here */
    }
  }
  return TRNC_OK;
}

/* ScalarE function for an activation node applied to value r, or -1. */
static int epilogue_act(const trnc_node *a, trnc_ref r) {
  if (a->nargs < 1 || a->args[0].kind != TRNC_ARG_VALUE || a->args[0].u.ref != r) return -1;
  switch (a->op) {
    case TRNC_OP_RELU: return TRNC_NC_ACT_RELU;
    case TRNC_OP_SILU: return TRNC_NC_ACT_SILU;
    case TRNC_OP_SIGMOID: return TRNC_NC_ACT_SIGMOID;
    case TRNC_OP_TANH: return TRNC_NC_ACT_TANH;
    case TRNC_OP_GELU: {
      const trnc_arg *ap = trnc_node_arg(a, 1);
      bool t = ap && ap->kind == TRNC_ARG_STR && !strcmp(ap->u.s, "tanh");
      return t ? TRNC_NC_ACT_GELU_TANH : TRNC_NC_ACT_GELU;
    }
    default: return -1;
  }
}

/* mul/div of value (arg 0) by a Python scalar: *scale = the factor. */
static bool epilogue_scale(const trnc_node *m, double *scale) {
  const trnc_arg *b = trnc_node_arg(m, 1);
  if (!b || !(b->kind == TRNC_ARG_INT || b->kind == TRNC_ARG_FLOAT)) return false;
  double v = b->kind == TRNC_ARG_INT ? (double)b->u.i : b->u.f;
  switch (m->op) {
    case TRNC_OP_MUL: case TRNC_OP_MUL_SCALAR: *scale = v; return true;
    case TRNC_OP_DIV: case TRNC_OP_DIV_SCALAR:
      if (v == 0) return false;
      *scale = 1.0 / v;
      return true;
    default: return false;
  }
}

/* A view that only regroups dims of a contiguous tensor (same numel, same
 * innermost dim, contiguous in and out). */
static bool is_reshape_view(const trnc_graph *g, const trnc_node *m) {
  if (m->op != TRNC_OP_VIEW && m->op != TRNC_OP_UNSAFE_VIEW && m->op != TRNC_OP_RESHAPE) return false;
  const trnc_type *a = &g->values[m->args[0].u.ref].type, *b = &g->values[m->outs[0]].type;
  if (!a->rank || !b->rank || a->shape[a->rank - 1] != b->shape[b->rank - 1]) return false;
  trnc_type ca = *a, cb = *b;
  trnc_type_set_contiguous(&ca);
  trnc_type_set_contiguous(&cb);
  for (int k = 0; k < a->rank; k++)
    if (a->shape[k] > 1 && a->stride[k] != ca.stride[k]) return false;
  for (int k = 0; k < b->rank; k++)
    if (b->shape[k] > 1 && b->stride[k] != cb.stride[k]) return false;
  return a->offset == 0 && b->offset == 0;
}

/* Row groups of at most this many nodes may end in a matmul: every value
 * of the kernel then holds whole rows (up to 1024 elements) in its tiles. */
#define MM_GROUP_MAX 4

/* The next live node at or after j (g->nnodes: none). */
static uint32_t next_live(const trnc_graph *g, uint32_t j) {
  while (j < g->nnodes && g->nodes[j].dead) j++;
  return j;
}

/* A matmul that ends a row group's kernel (kir_mm_fuses): the group's last
 * value v, or a reshape view of it used only there, is the left operand of
 * the next node, an mm/addmm, whose result may go through one fused
 * activation. *end: the index after the nodes the kernel then covers;
 * *view: the reshape view's node (UINT32_MAX: none). */
static bool mm_after_group(cstate *C, trnc_ref v, const trnc_type *space, uint32_t j, kir_mm_node *mn,
                           uint32_t *end, uint32_t *view) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  trnc_ref a = v;
  uint32_t m = next_live(g, j);
  *view = UINT32_MAX;
  /* the reshape of v and transposes of values from before the group (W^T
   * of a Linear weight) may come first: a transpose is strides only, so
   * lowering it here, ahead of its turn, changes nothing */
  for (int seen = 0; m < g->nnodes && seen < 4; seen++, m = next_live(g, m + 1)) {
    const trnc_node *x = &g->nodes[m];
    if (a == v && is_reshape_view(g, x) && x->args[0].u.ref == v) {
      a = x->outs[0];
      *view = m;
    } else if ((x->op == TRNC_OP_T || x->op == TRNC_OP_TRANSPOSE || x->op == TRNC_OP_PERMUTE) && !C->virt[m] &&
               x->args[0].kind == TRNC_ARG_VALUE && L->tv[x->args[0].u.ref].buffer >= 0) {
      if (lower_view(C, x)) return false;
    } else {
      break;
    }
  }
  if (m >= g->nnodes) return false;
  const trnc_node *mm = &g->nodes[m];
  if (!kir_mm_fuses(L, space, mm, a)) return false;
  *mn = (kir_mm_node){mm, mm->outs[0], TRNC_NC_ACT_IDENTITY};
  *end = m + 1;
  /* an activation of the result (through a reshape view: GPT's
   * view -> gelu -> view around the MLP) is applied by the evacuation */
  trnc_ref r = mm->outs[0];
  uint32_t f = next_live(g, m + 1);
  if (f < g->nnodes && C->nuses[r] == 1 && C->firstuse[r] == f && !C->is_output[r] && is_reshape_view(g, &g->nodes[f])) {
    r = g->nodes[f].outs[0];
    f = next_live(g, f + 1);
  }
  if (f < g->nnodes && C->nuses[r] == 1 && C->firstuse[r] == f && !C->is_output[r]) {
    trnc_ref o = g->nodes[f].outs[0];
    int act = epilogue_act(&g->nodes[f], r);
    if (act >= 0 && !C->is_output[o] && trnc_type_numel(&g->values[o].type) == trnc_type_numel(&g->values[mm->outs[0]].type)) {
      *mn = (kir_mm_node){mm, o, act};
      *end = f + 1;
    }
  }
  return g->values[mn->out].type.rank >= 2;
}

/* The distinct outside inputs of a group, counted as trnc_arg_visit_refs
 * walks each argument (index tensors sit in index.Tensor's list). */
typedef struct group_inputs {
  const trnc_graph *g;
  const trnc_node *const *group;
  int k, nseen, n;
  trnc_ref seen[KIR_MAX_TENSORS * 4];
} group_inputs;

static void count_input(trnc_ref r, void *ctx) {
  group_inputs *c = ctx;
  uint32_t p = c->g->values[r].node;
  for (int b = 0; b < c->k; b++)
    if (c->group[b] == &c->g->nodes[p]) return;
  for (int s = 0; s < c->nseen; s++)
    if (c->seen[s] == r) return;
  if (c->nseen < (int)(sizeof c->seen / sizeof c->seen[0])) c->seen[c->nseen++] = r;
  c->n++;
}

/* HBM tensors a kernel of group[0..k) ending before node `end` reads and
 * writes: its distinct inputs from outside (also those in list arguments),
 * and its values read at or after `end` or that are graph outputs (stored),
 * plus one for a reduction. */
/* Whether the last node of group[0..k) reads no operand by its bits
 * (kir_reads_bits) from a node inside the group. */
static bool bits_from_hbm(const trnc_graph *g, const trnc_node *const *group, int k) {
  const trnc_node *m = group[k - 1];
  for (uint32_t a = 0; a < m->nargs; a++) {
    if (m->args[a].kind != TRNC_ARG_VALUE || !kir_reads_bits(m, a)) continue;
    const trnc_node *p = &g->nodes[g->values[m->args[a].u.ref].node];
    for (int i = 0; i < k - 1; i++)
      if (group[i] == p) return false;
  }
  return true;
}

static int group_tensors(const cstate *C, const trnc_node *const *group, int k, uint32_t end) {
  group_inputs in = {.g = C->L.g, .group = group, .k = k, .n = 1};
  for (int a = 0; a < k; a++) {
    for (uint32_t x = 0; x < group[a]->nargs; x++) trnc_arg_visit_refs(&group[a]->args[x], count_input, &in);
    for (uint32_t o = 0; o < group[a]->nouts; o++) {
      trnc_ref r = group[a]->outs[o];
      uint32_t lu = C->lastuse[r];
      in.n += C->is_output[r] || (lu != UINT32_MAX && lu >= end);
    }
  }
  return in.n;
}

/* The longest prefix group[0..k') that may be one kernel: every value whose
 * shape is not the prefix's iteration space (*space, the largest shape; set
 * to the prefix's) is read only inside the prefix and is no graph output,
 * since a value computed in a broadcast space is never stored. */
static int group_prefix(const cstate *C, const trnc_node *const *group, int k, const trnc_type **space) {
  const trnc_graph *g = C->L.g;
  for (; k > 1; k--) {
    const trnc_type *sp = vtype(g, group[0]->outs[0]);
    for (int a = 1; a < k; a++)
      if (trnc_type_numel(vtype(g, group[a]->outs[0])) > trnc_type_numel(sp)) sp = vtype(g, group[a]->outs[0]);
    uint32_t end = (uint32_t)(group[k - 1] - g->nodes) + 1;
    bool ok = true;
    for (int a = 0; a < k && ok; a++) {
      trnc_ref r = group[a]->outs[0];
      uint32_t lu = C->lastuse[r];
      ok = same_shape(vtype(g, r), sp) || (!C->is_output[r] && (lu == UINT32_MAX || lu < end));
    }
    if (ok) {
      *space = sp;
      return k;
    }
  }
  *space = group_space(g, group[0]);
  return 1;
}

/* Node j is a view of a value that is in HBM already, read only by the next
 * node, a gather (codegen/kir/gather.c), and made before the group that
 * starts at node `start`: lowering it now lets the gather join the group. */
static bool view_of_gather(const cstate *C, uint32_t start, uint32_t j) {
  const trnc_graph *g = C->L.g;
  const trnc_node *v = &g->nodes[j];
  if (!is_view_op(v->op) || v->op == TRNC_OP_AS_STRIDED || C->virt[j] || v->nargs < 1 ||
      v->args[0].kind != TRNC_ARG_VALUE || C->L.tv[v->args[0].u.ref].buffer < 0 || v->nouts != 1 ||
      g->values[v->args[0].u.ref].node >= start) /* not a value of the group */
    return false;
  uint32_t n = j + 1;
  while (n < g->nnodes && g->nodes[n].dead) n++;
  trnc_ref r = v->outs[0];
  return n < g->nnodes && C->nuses[r] == 1 && C->firstuse[r] == n && !C->is_output[r] &&
         kir_is_gather(g, &g->nodes[n]);
}

/* Nodes and kernel values a matmul epilogue's tail holds at most (kir ops
 * on each output tile, a pool of tiles each). */
#define MM_TAIL_MAX 8
#define MM_TAIL_VALUES 12

/* Node m joins the epilogue tail of matmul n, whose running result r it
 * reads (its only reader): an elementwise node of r's shape whose other
 * operands are values in HBM made before n (graph inputs, earlier kernels'
 * results) that the kernel can load as access maps over the result
 * (kir_mm_operand_view). ops[0..*nops) are the tail's distinct operands so
 * far and *values its kernel values; both grow when m joins. */
static bool mm_tail_node(const cstate *C, const trnc_node *n, const trnc_node *m, trnc_ref r, trnc_ref *ops,
                         int *nops, int *values) {
  const lw *L = &C->L;
  const trnc_graph *g = L->g;
  uint32_t ni = (uint32_t)(n - g->nodes);
  if (!kir_is_eltwise(g, m) || m->nouts != 1 || !same_shape(vtype(g, m->outs[0]), vtype(g, r)) ||
      *values + kir_eltwise_values(m) > MM_TAIL_VALUES)
    return false;
  bool reads_r = false;
  int k = *nops;
  for (uint32_t a = 0; a < m->nargs; a++) {
    if (m->args[a].kind != TRNC_ARG_VALUE) continue;
    if (kir_reads_bits(m, a)) return false; /* an epilogue's operands are not kir loads */
    trnc_ref x = m->args[a].u.ref;
    if (x == r) {
      reads_r = true;
      continue;
    }
    bool dup = false;
    for (int b = 0; b < k && !dup; b++) dup = ops[b] == x;
    if (dup) continue;
    uint32_t p = g->values[x].node;
    if (p >= ni || C->virt[p] || k + 4 >= KIR_MAX_TENSORS ||
        !kir_mm_operand_view(L, n, vtype(g, m->outs[0]), x, NULL))
      return false;
    ops[k++] = x;
  }
  if (!reads_r || *values + kir_eltwise_values(m) + (k - *nops) > MM_TAIL_VALUES) return false;
  *values += kir_eltwise_values(m) + (k - *nops);
  *nops = k;
  return true;
}

/* A cast of a kernel's last value r, read later than right after the
 * kernel, that the kernel applies instead, ahead of its turn (a weight
 * gradient's bf16 -> fp32 to_copy comes after the next matmul in a backward
 * graph; the bf16 copy of the normalized activations under autocast comes
 * after the weight's): r's only reader (after index `after`), a to_copy or
 * clone of r alone, whose result is a graph output or is not read by the
 * node right after it (which would fuse with it in a kernel of their own).
 * Lowering it early is safe: it reads r only, and nothing before its index
 * reads its result. Its index, or UINT32_MAX. */
static uint32_t later_cast(const cstate *C, trnc_ref r, uint32_t after) {
  const trnc_graph *g = C->L.g;
  if (C->nuses[r] != 1 || C->is_output[r]) return UINT32_MAX;
  uint32_t f = C->firstuse[r];
  if (f == UINT32_MAX || f <= after || f >= g->nnodes || g->nodes[f].dead || C->virt[f] || C->wt[f].perm >= 0)
    return UINT32_MAX;
  const trnc_node *m = &g->nodes[f];
  if ((m->op != TRNC_OP_TO_COPY && m->op != TRNC_OP_CLONE) || m->nouts != 1 || m->nargs < 1 ||
      m->args[0].kind != TRNC_ARG_VALUE || m->args[0].u.ref != r)
    return UINT32_MAX;
  trnc_ref o = m->outs[0];
  uint32_t next = next_live(g, f + 1);
  if (!C->is_output[o] && next < g->nnodes && C->firstuse[o] == next) return UINT32_MAX;
  return f;
}

/* later_cast of matmul n's epilogue result r, if mm_tail_node takes it. */
static uint32_t hoist_cast(const cstate *C, const trnc_node *n, trnc_ref r, uint32_t after, trnc_ref *ops,
                           int *nops, int *values) {
  uint32_t f = later_cast(C, r, after);
  if (f == UINT32_MAX) return UINT32_MAX;
  return mm_tail_node(C, n, &C->L.g->nodes[f], r, ops, nops, values) ? f : UINT32_MAX;
}

static trnc_status lower_node_group(cstate *C, uint32_t *i) {
  lw *L = &C->L;
  const trnc_graph *g = L->g;
  const trnc_node *n = &g->nodes[*i];
  if (n->op == TRNC_OP_PLACEHOLDER || n->op == TRNC_OP_CONSTANT) return TRNC_OK;
  if (C->virt[*i]) {
    lower_virtual(C, n);
    return TRNC_OK;
  }
  if (C->wt[*i].perm >= 0) { /* a bmm writing through a head merge */
    trnc_status ws = bind_write_through(C, n);
    if (ws) return ws;
    L->ops_per_engine[0]++;
    lw_epilogue ep = {TRNC_NC_ACT_IDENTITY, 1.0, n->outs[0], NULL, 0};
    return kir_emit_matmul(L, n, &ep);
  }
  if (n->op == TRNC_OP_WAIT_TENSOR) { /* a view of the result, once it has arrived */
    trnc_status ws = lower_view(C, n);
    return ws ? ws : lw_cc_wait(L, n);
  }
  if (is_view_op(n->op)) return lower_view(C, n);
  trnc_status st;
  if (groups(g, n)) {
    const trnc_node *group[64];
    int k = 0;
    bool kd;
    const trnc_type *space = group_space(g, n);
    uint32_t rows = kir_is_row(n->op) ? kir_reduced_dims(n, space->rank, &kd) : 0;
    group[k++] = n;
    int weight = fusion_weight(g, n);
    uint32_t j = *i + 1;
    int values = kir_eltwise_values(n); /* a kernel holds KIR_MAX_VALUES */
    bool alone = space != vtype(g, n->outs[0]);
    while (!L->opt.no_fusion && !alone && j < g->nnodes && k < 64) {
      const trnc_node *m = &g->nodes[j];
      if (m->dead) {
        j++;
        continue;
      }
      if (view_of_gather(C, *i, j)) { /* positions[:t] before an embedding: free, lowered now */
        if ((st = lower_view(C, m))) return st;
        j++;
        continue;
      }
      uint32_t keep = rows;
      const trnc_type *keep_space = space;
      if (values + kir_eltwise_values(m) > KIR_MAX_VALUES) break;
      values += kir_eltwise_values(m);
      if (C->virt[j] || !fuses(g, &space, m, weight, &rows) || reads_colsum(group, k, m)) break;
      group[k] = m;
      if (group_tensors(C, group, k + 1, j + 1) > KIR_MAX_TENSORS || /* one kernel's operands */
          !kir_gather_fits(g, group, k + 1, space->rank, rows) || !bits_from_hbm(g, group, k + 1)) {
        rows = keep;
        space = keep_space;
        break;
      }
      weight += fusion_weight(g, m);
      k++;
      j++;
    }
    /* a value computed in a broadcast space has no HBM copy */
    int kp = group_prefix(C, group, k, &space);
    if (kp < k) {
      k = kp;
      j = (uint32_t)(group[k - 1] - g->nodes) + 1;
      rows = 0;
      for (int a = 0; a < k; a++)
        if (kir_is_row(group[a]->op)) rows = kir_reduced_dims(group[a], vtype(g, group[a]->outs[0])->rank, &kd);
    }
    /* a reduction of the group's last value joins the group's kernel */
    const trnc_node *red = NULL;
    uint32_t after = j;
    while (after < g->nnodes && g->nodes[after].dead) after++;
    if (!L->opt.no_fusion && after < g->nnodes && kir_is_reduce(g->nodes[after].op) &&
        g->nodes[after].args[0].kind == TRNC_ARG_VALUE &&
        g->nodes[after].args[0].u.ref == group[k - 1]->outs[0] &&
        same_shape(vtype(g, group[k - 1]->outs[0]), space) &&
        (!rows || kir_reduced_dims(&g->nodes[after], vtype(g, group[k - 1]->outs[0])->rank, &kd) == rows) &&
        kir_gather_fits(g, group, k, space->rank,
                        kir_reduced_dims(&g->nodes[after], vtype(g, group[k - 1]->outs[0])->rank, &kd))) {
      red = &g->nodes[after];
      j = after + 1;
      if ((st = alloc_outputs_of(C, red))) return st;
    }
    /* a matmul reading a short row group's result (layer norm before a
     * projection) ends its kernel: the rows never go to HBM */
    kir_mm_node mmn, *mmp = NULL;
    uint32_t mend, view = UINT32_MAX;
    bool view_later = false;
    if (!L->opt.no_fusion && !red && k <= MM_GROUP_MAX && space->rank >= 1 && rows == 1u << (space->rank - 1) &&
        mm_after_group(C, group[k - 1]->outs[0], space, j, &mmn, &mend, &view)) {
      mmp = &mmn;
      j = mend;
      if ((st = alloc_outputs_of(C, &g->nodes[g->values[mmn.out].node]))) return st;
      /* a view of the rows read after the kernel too (a training forward
       * saves the matmul's input): the rows are stored, the view follows */
      if (view != UINT32_MAX) {
        trnc_ref vo = g->nodes[view].outs[0], last = group[k - 1]->outs[0];
        view_later = C->nuses[vo] > 1 || C->is_output[vo];
        if (view_later && L->tv[last].buffer < 0 && (st = lw_alloc_internal(L, last, "t"))) return st;
      }
    }
    /* a later cast of the group's last value joins the kernel (later_cast) */
    uint32_t hoisted = UINT32_MAX;
    trnc_ref cast_of = TRNC_NO_REF;
    if (!L->opt.no_fusion && !red && !mmp && k < 64 && group[k - 1]->nouts == 1) {
      trnc_ref last = group[k - 1]->outs[0];
      uint32_t f = later_cast(C, last, j - 1);
      if (f != UINT32_MAX) {
        const trnc_node *m = &g->nodes[f];
        const trnc_type *keep_space = space;
        uint32_t keep = rows;
        int vals = 0;
        for (int a = 0; a < k; a++) vals += kir_eltwise_values(group[a]);
        group[k] = m;
        if (vals + kir_eltwise_values(m) <= KIR_MAX_VALUES && fuses(g, &space, m, weight, &rows) &&
            !reads_colsum(group, k, m) && same_shape(vtype(g, m->outs[0]), vtype(g, last)) &&
            group_tensors(C, group, k + 1, j) <= KIR_MAX_TENSORS && kir_gather_fits(g, group, k + 1, space->rank, rows) &&
            bits_from_hbm(g, group, k + 1)) {
          hoisted = f;
          cast_of = last;
          k++;
        } else {
          space = keep_space;
          rows = keep;
        }
      }
    }
    /* a group value needs HBM only if it is read after the kernel or is a
     * graph output (which already has its OUTPUT buffer) */
    for (int a = 0; a < k; a++)
      for (uint32_t o = 0; o < group[a]->nouts; o++) { /* layer_norm_backward: dx, dW, dB */
        trnc_ref r = group[a]->outs[o];
        if (g->values[r].is_none || L->tv[r].buffer >= 0) continue;
        uint32_t lu = C->lastuse[r];
        if ((lu == UINT32_MAX || lu < j || r == cast_of) && !C->is_output[r]) continue;
        if ((st = lw_alloc_internal(L, r, "t"))) return st;
      }
    if (hoisted != UINT32_MAX) C->virt[hoisted] = VIRT_FUSED;
    *i = j - 1;
    if (mmp) L->ops_per_engine[0]++;
    st = kir_emit_group(L, group, k, red, mmp);
    return st || !view_later ? st : lower_view(C, &g->nodes[view]);
  }
  if (is_matmul(n->op) && !L->opt.no_fusion) {
    /* Epilogue fusion: follow the chain of single-use consumers of the
     * matmul's result — reshape-only views, a multiply/divide by a Python
     * scalar and an activation (folded into the PSUM evacuation), then any
     * elementwise nodes whose other operands are in HBM already, of the
     * result's shape or broadcast to it (the residual add after a
     * projection): the tail, applied to each output tile. */
    trnc_ref r = n->outs[0];
    lw_epilogue ep = {TRNC_NC_ACT_IDENTITY, 1.0, TRNC_NO_REF, NULL, 0};
    const trnc_node **tail = trnc_arena_array(&L->arena, MM_TAIL_MAX, sizeof *tail);
    if (!tail) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
    uint32_t last = *i, tail_last = *i;
    bool seen_act = false, seen_scale = false;
    int values = 0, operands = 0;
    trnc_ref ops[KIR_MAX_TENSORS];
    uint32_t hoisted = UINT32_MAX;
    for (;;) {
      uint32_t j = last + 1;
      while (j < g->nnodes && g->nodes[j].dead) j++;
      if (j >= g->nnodes || C->nuses[r] != 1 || C->firstuse[r] != j || C->is_output[r]) {
        if (ep.ntail < MM_TAIL_MAX) hoisted = hoist_cast(C, n, r, last, ops, &operands, &values);
        if (hoisted != UINT32_MAX) tail[ep.ntail++] = &g->nodes[hoisted];
        break;
      }
      const trnc_node *m = &g->nodes[j];
      if (m->nargs < 1 || m->nouts < 1) break;
      bool first = m->args[0].kind == TRNC_ARG_VALUE && m->args[0].u.ref == r;
      int act = seen_act || ep.ntail || !first ? -1 : epilogue_act(m, r);
      double sc = 0;
      if (act >= 0) {
        ep.act = act;
        seen_act = true;
      } else if (!seen_act && !seen_scale && !ep.ntail && first && epilogue_scale(m, &sc)) {
        ep.scale = sc;
        seen_scale = true;
      } else if (first && is_reshape_view(g, m)) {
        if (ep.ntail) {
          if (ep.ntail >= MM_TAIL_MAX) break;
          tail[ep.ntail++] = m;
        }
      } else if (mm_tail_node(C, n, m, r, ops, &operands, &values) && ep.ntail < MM_TAIL_MAX) {
        tail[ep.ntail++] = m;
        tail_last = j;
      } else {
        break;
      }
      r = m->outs[0];
      last = j;
    }
    /* a tail ends at its last elementwise node (later views are their own) */
    while (ep.ntail && !kir_is_eltwise(g, tail[ep.ntail - 1])) ep.ntail--;
    if (hoisted != UINT32_MAX) { /* the kernel covers the nodes up to `last` and the hoisted one */
      r = g->nodes[hoisted].outs[0];
    } else if (ep.ntail) {
      last = tail_last;
      r = g->nodes[last].outs[0];
    }
    ep.tail = tail;
    const trnc_node *t = &g->nodes[g->values[r].node];
    bool fused = last != *i || hoisted != UINT32_MAX;
    if (fused && (st = alloc_outputs_of(C, t))) return st;
    /* the epilogue writes the matmul's [batch,] M x N result through a fused
     * reshape as contiguous bytes: a result that lives elsewhere (a graph
     * output with the strides of a permutation) is written by its own node */
    if (fused && !same_shape(vtype(g, r), vtype(g, n->outs[0])) && !contiguous(&L->tv[r].t)) fused = false;
    if (fused) {
      ep.out = r;
      L->ops_per_engine[0]++;
      if (seen_act) L->ops_per_engine[2]++;
      if (hoisted != UINT32_MAX) C->virt[hoisted] = VIRT_FUSED;
      *i = last;
      return kir_emit_matmul(L, n, &ep);
    }
  }
  if ((st = alloc_outputs_of(C, n))) return st;
  if (is_fill(n->op)) return lower_fill(L, n);
  if (is_matmul(n->op)) {
    L->ops_per_engine[0]++;
    lw_epilogue ep = {TRNC_NC_ACT_IDENTITY, 1.0, n->outs[0], NULL, 0};
    return kir_emit_matmul(L, n, &ep);
  }
  if (kir_is_reduce(n->op)) return kir_emit_group(L, NULL, 0, n, NULL);
  for (int f = 0; f < lw_nfamilies; f++)
    if (lw_families[f].handles(g, n)) return lw_families[f].emit(L, n);
  return lw_fail(L, n, TRNC_ERR_UNSUPPORTED, "no NeuronCore lowering for %s", n->target);
}

/* TRNC_DUMP_DIR=dir: writes the emitted program as assembly to
 * dir/<graph>-program.s (ir/dump.h; before hardware verification, so a
 * program that fails it can be attached to a bug report). */
static void dump_program(const trnc_graph *g, const trnc_nc_program *p, trnc_diags *diags) {
  const char *dir = getenv("TRNC_DUMP_DIR");
  if (!dir || !*dir) return;
  char *text = trnc_nc_program_print(p);
  if (!text) return;
  trnc_dump_text(g, "program.s", text, diags);
  trnc_free(text);
}

trnc_status trnc_compiled_dump(const trnc_graph *g, const trnc_compiled *c, trnc_diags *diags) {
  if (!g || !c || !c->prog)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_compiled_dump: NULL argument");
  dump_program(g, c->prog, diags);
  char trace[4096];
  const char *path = trnc_profile_path(g, trace, sizeof trace);
  if (!path) return TRNC_OK;
  trnc_nc_cost cost; /* c's program was verified when it was compiled or stored */
  return trnc_nc_cost_estimate_verified(c->prog, path, &cost, diags);
}

trnc_status trnc_compile(const trnc_graph *g, const trnc_compile_options *opt,
                         trnc_compiled **out, trnc_diags *diags) {
  if (out) *out = NULL;
  if (!g || !out) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_compile: NULL argument");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  trnc_compile_options o = opt ? *opt : (trnc_compile_options){0};
  const trnc_nc_target *target =
      o.target && o.target[0] ? trnc_nc_target_by_name(o.target) : trnc_nc_target_default(diags);
  if (!target)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "unknown target '%s' (known: trn2, trn3)", o.target ? o.target : "");
  /* every node must be within its op's limits (the table's predicate, as
   * the legality scan applies it: the passes emit table ops too) and have a
   * lowering: report all that don't, at once */
  size_t before = trnc_diags_error_count(diags);
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    const char *why = trnc_op_limits(g, n);
    if (!why && can_lower(g, n)) continue;
    trnc_diag_loc loc = trnc_node_loc(n);
    char ops[512];
    trnc_node_operands_str(g, n, ops, sizeof ops);
    if (why)
      trnc_diag_add(diags, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, ops, "%s", why);
    else
      trnc_diag_add(diags, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, ops,
                    "no NeuronCore lowering for %s yet (see docs/operators.md)", n->target);
  }
  if (trnc_diags_error_count(diags) > before) return TRNC_ERR_UNSUPPORTED;

  cstate *C = calloc(1, sizeof *C);
  struct trnc_compiled *c = trnc_artifact_create(target->name);
  if (!C || !c) {
    free(C);
    trnc_compiled_destroy(c);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
  }
  C->c = c;
  lw *L = &C->L;
  L->g = g;
  L->opt = o;
  L->target = target;
  L->d = diags;
  L->kernel = -1;
  trnc_arena_init(&L->arena, 0);
  L->prog = trnc_nc_program_create(target);
  size_t nv = g->nvalues ? g->nvalues : 1;
  L->tv = trnc_arena_array(&L->arena, nv, sizeof(lw_tv));
  C->lastuse = trnc_arena_array(&L->arena, nv, sizeof(uint32_t));
  C->nuses = trnc_arena_array(&L->arena, nv, sizeof(uint32_t));
  C->firstuse = trnc_arena_array(&L->arena, nv, sizeof(uint32_t));
  C->base = trnc_arena_array(&L->arena, nv, sizeof(trnc_ref));
  C->buf_off = trnc_arena_array(&L->arena, nv, sizeof(int64_t));
  C->buf_bytes = trnc_arena_array(&L->arena, nv, sizeof(int64_t));
  C->shadow = trnc_arena_array(&L->arena, nv, sizeof(trnc_value));
  C->is_output = trnc_arena_array(&L->arena, nv, sizeof(bool));
  C->virt = trnc_arena_array(&L->arena, g->nnodes ? g->nnodes : 1, sizeof(uint8_t));
  C->wt = trnc_arena_array(&L->arena, g->nnodes ? g->nnodes : 1, sizeof(wthrough));
  bool *late = trnc_arena_array(&L->arena, g->noutputs ? g->noutputs : 1, sizeof(bool));
  trnc_status st = TRNC_OK;
  if (!L->prog || !L->tv || !C->lastuse || !C->nuses || !C->firstuse || !C->base || !C->buf_off || !C->buf_bytes ||
      !C->shadow || !C->is_output || !C->virt || !C->wt || !late) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
    goto done;
  }
  memcpy(C->shadow, g->values, sizeof(trnc_value) * g->nvalues);
  for (uint32_t r = 0; r < g->nvalues; r++) {
    L->tv[r].buffer = -1;
    C->buf_off[r] = -1;
  }
  for (uint32_t k = 0; k < g->noutputs; k++)
    if (g->outputs[k] != TRNC_NO_REF) C->is_output[g->outputs[k]] = true;
  for (uint32_t i = 0; i < g->nnodes; i++) C->wt[i].perm = -1;
  compute_lastuse(C);
  if ((st = bind_inputs(C)) || (st = bind_outputs(C, late))) goto done;
  for (uint32_t i = 0; i < g->nnodes && !st; i++) {
    if (g->nodes[i].dead) continue;
    st = lower_node_group(C, &i);
    if (!st) release_after(C, i);
  }
  for (uint32_t k = 0; k < g->noutputs && !st; k++) {
    if (!late[k]) continue;
    lw_tv dst = {c->out_bind[k].buffer, L->tv[g->outputs[k]].t};
    const trnc_type *vt = &g->values[g->outputs[k]].type;
    dst.t = *vt;
    dst.t.dtype = c->out_bind[k].device_dtype;
    if (c->out_bind[k].convert) trnc_type_set_contiguous(&dst.t);
    else dst.t.offset = 0;
    st = lw_emit_copy(L, &dst, &L->tv[g->outputs[k]], "output_copy");
  }
  if (st) goto done;
  if (L->status) {
    st = L->status;
    goto done;
  }
  dump_program(g, L->prog, diags);
  /* hardware verification of what we emitted */
  size_t mark = trnc_diags_count(diags);
  st = trnc_nc_program_verify(L->prog, diags);
  if (st) {
    trnc_diag_add(diags, TRNC_SEV_ERROR, TRNC_ERR_INTERNAL, NULL, NULL,
                  "internal error: the emitted NeuronCore program breaks a hardware rule (%zu "
                  "diagnostics above); please report it with TRNC_DUMP_DIR output",
                  trnc_diags_count(diags) - mark);
    st = TRNC_ERR_INTERNAL;
    goto done;
  }
  trnc_nc_cost cost;
  memset(&cost, 0, sizeof cost);
  char trace[4096]; /* TRNC_PROFILE: one trace file per graph */
  st = trnc_nc_cost_estimate_verified(L->prog, trnc_profile_path(g, trace, sizeof trace), &cost,
                                      diags); /* verified above */
  if (st) goto done;
  trnc_compile_report *rp = &c->report;
  for (uint32_t i = 0; i < g->nnodes; i++)
    rp->ir_nodes += !g->nodes[i].dead && g->nodes[i].op < TRNC_OP_COUNT;
  for (size_t k = 0; k < trnc_nc_program_kernel_count(L->prog); k++)
    rp->kernels += !trnc_nc_kernel_collective(L->prog, k); /* collective steps are not kernels */
  rp->instructions = trnc_nc_program_instr_count(L->prog);
  for (size_t k = 0; k < rp->kernels; k++)
    for (size_t i = 0; i < trnc_nc_kernel_instr_count(L->prog, k); i++) {
      int e = trnc_nc_kernel_instr(L->prog, k, i)->engine;
      rp->engine_instructions[e >= TRNC_NC_DMA0 ? 4 : e]++;
    }
  memcpy(rp->ops_per_engine, L->ops_per_engine, sizeof rp->ops_per_engine);
  rp->hbm_planned_bytes = C->hbm.top;
  rp->hbm_unplanned_bytes = C->hbm.total;
  rp->sbuf_peak_bytes = L->sbuf_peak;
  rp->psum_peak_bytes = L->psum_peak;
  rp->est_time_s = cost.time_s;
  rp->tensor_flop_util = cost.tensor_flop_util;
  rp->dma_bw_util = cost.dma_bw_util;
  rp->target = c->target_name;
  rp->collectives = cost.collectives;
  rp->est_collective_s = cost.collective_s;
  c->scratch_bytes = trnc_nc_program_scratch_bytes(L->prog);
  c->prog = L->prog;
  L->prog = NULL;
done:
  clock_gettime(CLOCK_MONOTONIC, &t1);
  c->report.compile_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (L->prog) trnc_nc_program_destroy(L->prog);
  free(C->hbm.free);
  trnc_arena_release(&L->arena);
  free(C);
  if (st) {
    trnc_compiled_destroy(c);
    return st;
  }
  *out = c;
  return TRNC_OK;
}
