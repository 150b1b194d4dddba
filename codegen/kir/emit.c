/*
 * emit.c — the schedule of a kernel and its instructions.
 *
 * Schedule. Axes of extent 1 drop out; neighbouring axes of one kind (space
 * or reduction) merge where every tensor walks them contiguously.
 *  - Without reduction axes (a map kernel) the space is tiled in the memory
 *    order of the first stored tensor: the largest outer axis on partitions
 *    (a long 1-D space is split into [<= 128 rows, columns] first), up to
 *    four inner axes on the free dims, chunked to the tile size, the rest
 *    looped (lw_space_tiles).
 *  - With reduction axes, the largest space axis goes on partitions and the
 *    other space axes are looped; the reduction axes are innermost, the
 *    three inner ones on free dims (chunked), the rest looped. Each reduce
 *    folds a tile's free dims on VectorE into a [P, 1] partial and the
 *    partials into an fp32 accumulator. A full reduction (no space axis) puts
 *    a reduction axis on partitions instead and folds the accumulator across
 *    partitions at the end of each partition block: a TensorE transpose into
 *    a PSUM row, reduced on VectorE, folded into the total. The values after
 *    the reductions (the epilogue: mean's scale, the cast, the store) run on
 *    the [P, 1] results.
 *  - A one-pass float sum over outer axes of tensors whose innermost axis is
 *    a space axis (column sums: bias and norm-weight gradients) takes the
 *    column layout instead: reduction rows on partitions, that space axis on
 *    the free dim, the sums accumulated in PSUM by ones-column matmuls on
 *    TensorE (emit_col).
 *  - colsum ops (a column sum beside a row kernel: layer-norm backward's dW
 *    and dB) keep the row layout and sum their value over the rows of each
 *    block on TensorE into PSUM regions held for the whole kernel (cs_*).
 * Span loads (map kernels). A load whose tensor steps by 2..4 elements along
 * the innermost axis (the taps of a strided window, x[..., ::2]) would be a
 * DMA of one element per descriptor; instead its tile is one contiguous HBM
 * span per partition, read by the ops through an on-chip access map (the
 * tensor's strides over the tile's free dims, at an element offset into the
 * span: vap, tile_view). Loads of one buffer with equal strides share the
 * first one's span when it covers them all (one DMA for every tap of a
 * window); a tile whose span does not fit falls back to the strided DMA.
 * Loads stepping by 1 along rows with gaps between them take spans too when
 * another load of the buffer has the same strides (the taps of a stride-1
 * window: one DMA instead of one per tap and row).
 * Such kernels tile whole innermost rows and chunk the axis outside them
 * (span_tiles), so a span stays within its factor of the tile.
 * Tiles: every value has a pool of tiles (loads 3-deep, others 2-deep, so the
 * DMA of the next tile overlaps compute on this one) sized so all pools fit
 * three quarters of SBUF; a value that must outlive its pool's rotation (an
 * accumulator across chunks, the total across partition blocks) has a tile
 * of its own.
 *
 * Instructions: load/store are DMAs on the round-robin queues (map kernels
 * of many tiles: loads and stores on disjoint queues in proportion to their
 * bytes, and a row broadcast loaded once, emit_map / reuse_load); act runs
 * on ScalarE, tt/ts/copy/select/reduce on VectorE, except that a tt over i32
 * values runs on GpSimd in int32 arithmetic and an i32 const is a GpSimd
 * iota (both exact at any magnitude), a map kernel's float tt/ts ops are
 * shared between VectorE and GpSimd (balance_engines), and a float const is
 * a GpSimd memset (it reads nothing: it stays off VectorE's queue); lw_emit
 * adds the semaphores. Compute operands are flat [P, free elements] access patterns
 * over the (contiguous) tiles.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/kir/kir.h"

#define MAX_FREE 4096
/* Span loads (map kernels): a load whose tensor steps by 2..SPAN_MAX_STRIDE
 * elements along the innermost axis has tiles of f times the elements (f
 * <= SPAN_MAX_FACTOR: the largest ratio of an axis' stride to the elements
 * of the axes inside it, plus one for the taps' offsets); a tile whose HBM
 * elements lie within such a span is loaded as that one contiguous span per
 * partition and read on chip with the tensor's strides (a strided SBUF view
 * instead of a DMA of one element per descriptor). */
#define SPAN_MAX_STRIDE 4
#define SPAN_MAX_FACTOR 8

typedef struct sched {
  lw *L;
  const kir_kernel *k;
  lw_pool pool[KIR_MAX_VALUES];
  lw_tile *cur[KIR_MAX_VALUES];
  /* reduce layout */
  int pax;                        /* kernel axis on partitions, -1: one partition */
  bool cross;                     /* pax is a reduction axis: fold across partitions */
  int nloop_k, loop_k[KIR_MAX_AXES];   /* looped space axes */
  int nloop_r, loop_r[KIR_MAX_AXES];   /* looped reduction axes */
  int nfree, fax[3];              /* reduction axes on free dims, outer to inner;
                                     fax[0] is walked in chunks of `chunk` */
  int64_t chunk;                  /* of the innermost free axis */
  int64_t max_free;
  lw_tile *acc[KIR_MAX_VALUES];   /* per reduce value: accumulator of the block */
  lw_tile *total[KIR_MAX_VALUES]; /* per reduce value: across partition blocks */
  lw_pool part, ps;               /* reduce partials, PSUM rows */
  int qax;                        /* looped space axis packed on partitions, -1: none */
  int64_t qm;                     /* indices of qax per partition block */
  bool map;                       /* no reduction axis of extent > 1 */
  lw_pool scratch;                /* map kernels: fp32 tiles for per_element */
  bool scratch_used;
  int npasses;
  bool first_loads;               /* some value is loaded at the rows' first elements */
  bool single;                    /* one chunk per block: later passes reuse its tiles */
  int opass[KIR_MAX_OPS];         /* pass of each op */
  bool on_gpsimd[KIR_MAX_OPS];    /* map kernels: a float tt/ts op GpSimd runs (balance_engines) */
  int vpass[KIR_MAX_VALUES];      /* pass that computes (full) or completes (reduced) it */
  int def[KIR_MAX_VALUES];        /* op defining each value */
  struct mmtail *mm;              /* the kernel's mm op (NULL: none) */
  /* a load whose tensor does not vary along the tile's free dims (a row
   * statistic [rows, 1] read over [rows, n]) moves one element per
   * partition; its readers see it through a stride-0 free dim */
  bool narrow[KIR_MAX_VALUES];
  bool stays_wide[KIR_MAX_VALUES]; /* read by a store or an mm: loaded whole */
  /* a span load (map kernels): the current tile holds a contiguous HBM
   * span and the value is read through the on-chip access map view[v] (the
   * tensor's strides over the tile's free dims) */
  uint8_t spans[KIR_MAX_VALUES];  /* > 0: its pool's tiles are spans[v] times larger */
  bool span[KIR_MAX_VALUES];      /* the current tile is a span */
  uint8_t view_nfree[KIR_MAX_VALUES];
  trnc_nc_dim view[KIR_MAX_VALUES][TRNC_NC_MAX_FREE];
  int64_t view_off[KIR_MAX_VALUES]; /* elements into the tile */
  /* loads of one buffer with equal strides (the taps of a window) share
   * their leader's span when it covers them: lead[v] the leader (-1: none) */
  int16_t lead[KIR_MAX_VALUES];
  bool shared[KIR_MAX_VALUES];    /* the current tile is the leader's span */
  bool gathers;                   /* the kernel has gather or scatter ops */
  lw_tile *tok;                   /* HBM token ordering its scatters */
  kir_parts *parts;               /* one part of a kernel of several (kir_emit_part) */
  bool colsums;                   /* the kernel has colsum ops */
  /* a load the same for every row (stride 0 along the space axes: a
   * layer-norm weight) in a reduce layout of one chunk per block is loaded
   * once, by the first (largest) block, into a tile of its own */
  bool resident[KIR_MAX_VALUES];
  /* map kernels: a load whose HBM access pattern and tile shape equal its
   * previous tile's (a row broadcast over tiles of whole rows: RMSNorm's
   * weight) keeps that tile instead of loading it again (reuse_load) */
  bool loaded[KIR_MAX_VALUES];
  trnc_nc_ap last_hbm[KIR_MAX_VALUES];
  int64_t last_n[KIR_MAX_VALUES];
  int last_np[KIR_MAX_VALUES];
  /* a multi-pass row kernel whose rows fit one chunk only with loads 2-deep
   * and other values 1-deep takes those depths: each pass then reuses the
   * block's tiles instead of loading and computing every chunk again */
  int lean;                       /* 1: those depths; 2: loads 1-deep too */
  struct csums *cs;               /* their PSUM and SBUF sums (reduce layout) */
} sched;

/* A tile position of the reduce layout. */
typedef struct rpos {
  int64_t p0;
  int np;                         /* partitions (all packed blocks) */
  int pack;                       /* packed: qax indices idx[qax].. +pack, ext(pax) rows each; 0 none */
  int64_t idx[KIR_MAX_AXES];      /* looped axes */
  int64_t f0, fc;                 /* outermost free axis: start, count */
} rpos;

/* v spans every axis of extent > 1 (a reduction over extent-1 axes only
 * leaves its value full: a copy). */
static bool full(const kir_kernel *k, int v) {
  for (int a = 0; a < k->naxes; a++)
    if (k->extent[a] > 1 && !(k->values[v].axes & (1u << a))) return false;
  return true;
}

static int engine_of(int code) { return code == KIR_ACT ? TRNC_NC_SCALAR : TRNC_NC_VECTOR; }

/* tt op o over i32 values only: GpSimd computes it in native int32
 * arithmetic (nki.isa.tensor_tensor), exact for every 32-bit value. */
static bool int32_tt(const kir_kernel *k, const kir_op *o) {
  return k->values[o->dst].dtype == TRNC_I32 && k->values[o->src[0]].dtype == TRNC_I32 &&
         k->values[o->src[1]].dtype == TRNC_I32 && trnc_nc_alu_has_int_form(o->fn);
}

/* Flat access pattern [np, n] of value v's current tile (one element per
 * partition, repeated n times, for a narrow load). */
static trnc_nc_ap vap(const sched *S, int v, int np, int64_t n) {
  trnc_nc_ap ap = lw_tile_ap(S->cur[v], np, 0, S->k->values[v].dtype, 1, &n);
  if (S->narrow[v]) ap.free[0].stride = 0;
  if (S->span[v] && n > 1) { /* the on-chip access map of a span */
    ap = lw_tile_ap_strided(S->cur[v], np, S->view_off[v] * lw_esize(S->k->values[v].dtype), S->k->values[v].dtype,
                            1, ap.free);
    ap.nfree = S->view_nfree[v];
    memcpy(ap.free, S->view[v], sizeof ap.free[0] * ap.nfree);
  }
  return ap;
}

/* True if ts/act op o reads a value operand (scalar or bias) that spans the
 * whole tile: in a map kernel, whose reductions are over extent-1 axes. */
static bool tile_scalars(const sched *S, const kir_op *o) {
  if (o->code != KIR_TS && o->code != KIR_ACT) return false;
  for (int s = 1; s < 3; s++)
    if (o->src[s] >= 0 && S->map) return true;
  return false;
}

/* ts/act op o with whole-tile operands, elementwise through an fp32 scratch
 * tile: (a op0 s0) op1 s1 as two tensor_tensor ops, f(a * scale + b) as
 * a * scale, + b, then f — each step rounds to fp32 as the fused
 * instruction does. */
static trnc_status per_element(sched *S, const kir_op *o, int np, int64_t n) {
  lw *L = S->L;
  lw_tile *t = lw_pool_next(&S->scratch), *a = S->cur[o->src[0]], *d = S->cur[o->dst];
  trnc_nc_ap ta = lw_tile_ap(t, np, 0, TRNC_F32, 1, &n), da = vap(S, o->dst, np, n);
  trnc_nc_ap aa = vap(S, o->src[0], np, n);
  trnc_status st;
  if (o->code == KIR_TS) {
    bool two = o->fn1 != TRNC_NC_ALU_BYPASS;
    lw_tile *w1 = two ? t : d;
    trnc_nc_instr i1 = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
    i1.alu0 = o->fn;
    i1.src[0] = aa;
    i1.src[1] = vap(S, o->src[1], np, n);
    i1.dst = two ? ta : da;
    lw_tile *r1[2] = {a, S->cur[o->src[1]]};
    L->ops_per_engine[1]++;
    if ((st = lw_emit(L, &i1, r1, 2, &w1, 1)) || !two) return st;
    trnc_nc_instr i2 = lw_instr(o->src[2] >= 0 ? TRNC_NC_OP_TENSOR_TENSOR : TRNC_NC_OP_TENSOR_SCALAR,
                             TRNC_NC_VECTOR);
    i2.alu0 = o->fn1;
    i2.alu1 = TRNC_NC_ALU_BYPASS;
    i2.src[0] = ta;
    i2.imm[0] = o->imm[1];
    lw_tile *r2[2] = {t, NULL};
    int nr = 1;
    if (o->src[2] >= 0) {
      i2.src[1] = vap(S, o->src[2], np, n);
      r2[nr++] = S->cur[o->src[2]];
    }
    i2.dst = da;
    L->ops_per_engine[1]++;
    return lw_emit(L, &i2, r2, nr, &d, 1);
  }
  trnc_nc_instr sc = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
  sc.alu0 = TRNC_NC_ALU_MUL;
  sc.alu1 = TRNC_NC_ALU_BYPASS;
  sc.imm[0] = o->imm[0];
  sc.src[0] = aa;
  sc.dst = ta;
  trnc_nc_instr ad = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
  ad.alu0 = TRNC_NC_ALU_ADD;
  ad.src[0] = ta;
  ad.src[1] = vap(S, o->src[1], np, n);
  ad.dst = ta;
  trnc_nc_instr ac = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ac.act = o->fn;
  ac.imm[0] = 1.0f;
  ac.src[0] = ta;
  ac.dst = da;
  lw_tile *r2[2] = {t, S->cur[o->src[1]]};
  L->ops_per_engine[1] += 2;
  L->ops_per_engine[2]++;
  if ((st = lw_emit(L, &sc, &a, 1, &t, 1)) || (st = lw_emit(L, &ad, r2, 2, &t, 1))) return st;
  return lw_emit(L, &ac, &t, 1, &d, 1);
}

/* Flat access pattern [np, n] of value v in tile cur[v] at byte offset
 * off[v] (off NULL: 0; a narrow value repeats one element per partition). */
static trnc_nc_ap tile_ap(const kir_kernel *k, lw_tile *const *cur, const int64_t *off, const bool *narrow, int v,
                          int np, int64_t n) {
  trnc_nc_ap ap = lw_tile_ap(cur[v], np, off ? off[v] : 0, k->values[v].dtype, 1, &n);
  if (narrow && narrow[v]) ap.free[0].stride = 0;
  return ap;
}

/* Emits compute op o of k (not load/store; ts/act scalars [np, 1]) over
 * [np, n] elements of the tiles cur[] (kir_emit_tile_op), or, with a
 * schedule S, of its current tiles through vap (span loads, narrow loads). */
static trnc_status tile_op(lw *L, const sched *S, const kir_kernel *k, const kir_op *o, lw_tile *const *cur,
                           const int64_t *off, const bool *narrow, int np, int64_t n) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_NOP, engine_of(o->code)); /* opcode set below */
  lw_tile *rd[3];
  int nr = 0;
  for (int s = 0; s < 3; s++) {
    if (o->src[s] < 0) continue;
    bool scalar = ((o->code == KIR_TS || o->code == KIR_ACT) && s > 0) || o->code == KIR_BCAST; /* [np, 1] */
    in.src[s] = S ? vap(S, o->src[s], np, scalar ? 1 : n) : tile_ap(k, cur, off, narrow, o->src[s], np, scalar ? 1 : n);
    rd[nr++] = cur[o->src[s]];
  }
  in.dst = S ? vap(S, o->dst, np, n) : tile_ap(k, cur, off, narrow, o->dst, np, n);
  lw_tile *w = cur[o->dst];
  if (o->code == KIR_BCAST) { /* dst = 1.0, then dst * a[p] (exact: -0, inf, NaN kept) */
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    ms.dst = in.dst;
    ms.imm[0] = 1.0f;
    trnc_status st = lw_emit(L, &ms, NULL, 0, &w, 1);
    if (st) return st;
    in.op = TRNC_NC_OP_TENSOR_SCALAR;
    in.alu0 = TRNC_NC_ALU_MUL;
    in.alu1 = TRNC_NC_ALU_BYPASS;
    in.src[1] = in.src[0];
    in.src[0] = in.dst;
    rd[nr++] = w;
    L->ops_per_engine[1]++;
    return lw_emit(L, &in, rd, nr, &w, 1);
  }
  switch (o->code) {
    case KIR_ACT:
      in.op = TRNC_NC_OP_ACTIVATION;
      in.act = o->fn;
      in.imm[0] = o->imm[0];
      in.imm[1] = o->imm[1];
      break;
    case KIR_TT:
      in.op = TRNC_NC_OP_TENSOR_TENSOR;
      in.alu0 = o->fn;
      if (int32_tt(k, o)) in.engine = TRNC_NC_GPSIMD; /* native int32 arithmetic */
      if (S && S->on_gpsimd[o - k->ops]) in.engine = TRNC_NC_GPSIMD;
      break;
    case KIR_TS:
      in.op = TRNC_NC_OP_TENSOR_SCALAR;
      in.alu0 = o->fn;
      in.alu1 = o->fn1;
      in.imm[0] = o->imm[0];
      in.imm[1] = o->imm[1];
      if (S && S->on_gpsimd[o - k->ops]) in.engine = TRNC_NC_GPSIMD;
      break;
    case KIR_COPY:
    case KIR_REDUCE: in.op = TRNC_NC_OP_TENSOR_COPY; break; /* a reduce over no axis */
    case KIR_CONST:
      if (k->values[o->dst].dtype == TRNC_I32) { /* exact: iota computes in int32 */
        in.op = TRNC_NC_OP_IOTA;
        in.engine = TRNC_NC_GPSIMD;
        in.aff[0] = o->ival;
      } else {
        in.op = TRNC_NC_OP_MEMSET;
        in.engine = TRNC_NC_GPSIMD; /* no inputs: off VectorE's queue */
        in.imm[0] = o->imm[0];
      }
      break;
    case KIR_SELECT: in.op = TRNC_NC_OP_SELECT; break;
    default: return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: unexpected op %d", o->code);
  }
  if (o->code != KIR_CONST) L->ops_per_engine[in.engine == TRNC_NC_GPSIMD ? 3 : o->code == KIR_ACT ? 2 : 1]++;
  return lw_emit(L, &in, rd, nr, &w, 1);
}

/* Emits compute op o (not load/store) over [np, n] elements of its tiles. */
static trnc_status compute(sched *S, const kir_op *o, int np, int64_t n) {
  if (tile_scalars(S, o)) return per_element(S, o, np, n);
  return tile_op(S->L, S, S->k, o, S->cur, NULL, S->narrow, np, n); /* span loads read through vap */
}

trnc_status kir_emit_tile_op(lw *L, const kir_kernel *k, const kir_op *o, lw_tile *const *cur, const int64_t *off,
                             int np, int64_t n) {
  for (int s = 1; s < 3; s++)
    if ((o->code == KIR_TS || o->code == KIR_ACT) && o->src[s] >= 0)
      return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: a tile op with a per-partition operand");
  if (o->code == KIR_BCAST) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: a broadcast as a tile op");
  return tile_op(L, NULL, k, o, cur, off, NULL, np, n);
}

/* Tile pools for every value: `nfull` values of max_free elements; values
 * over fewer axes get one-element tiles. */
static trnc_status make_pools(sched *S, int64_t max_free) {
  const kir_kernel *k = S->k;
  kir_parts *P = S->parts;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->dst < 0) continue;
    int64_t elems = full(k, o->dst) ? max_free * (S->spans[o->dst] ? S->spans[o->dst] : 1) : 1;
    int depth = o->code == KIR_LOAD ? 3 - S->lean : S->lean ? 1 : 2;
    if (P && o->dst < KIR_PARTS_POOLS) { /* the parts share their pools: value i, 3 deep */
      if (!P->bytes[o->dst]) {
        trnc_status st = lw_pool_init(S->L, &P->pool[o->dst], TRNC_NC_MEM_SBUF, P->max_free * 4, 3);
        if (st) return st;
        P->bytes[o->dst] = P->max_free * 4;
      }
      S->pool[o->dst] = P->pool[o->dst];
      continue;
    }
    if (o->code == KIR_LOAD && S->single && !S->cross && !S->gathers && !S->map && full(k, o->dst)) {
      bool rows_alike = true;
      for (int a = 0; a < k->naxes; a++)
        rows_alike &= (k->raxes & (1u << a)) || k->extent[a] == 1 || k->tensors[o->tensor].stride[a] == 0;
      S->resident[o->dst] = rows_alike;
      if (rows_alike) depth = 1;
    }
    trnc_status st = lw_pool_init(S->L, &S->pool[o->dst], TRNC_NC_MEM_SBUF, elems * 4, depth);
    if (st) return st;
  }
  return TRNC_OK;
}

/* Back into the parts' shared pools: where each rotation stands. */
static void return_pools(sched *S) {
  for (int v = 0; v < KIR_PARTS_POOLS && v < S->k->nvalues; v++)
    if (S->parts->bytes[v]) S->parts->pool[v].next = S->pool[v].next;
}

/* Tile size: the pools of every full value (loads 3-deep, others 2-deep;
 * one less when lean) in 3/4 of SBUF. */
static int64_t tile_elems(const sched *S, int64_t numel) {
  const kir_kernel *k = S->k;
  if (S->parts) return S->parts->max_free;
  int64_t bufs = 0;
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].dst >= 0 && full(k, k->ops[i].dst))
      bufs += (k->ops[i].code == KIR_LOAD ? 3 - S->lean : S->lean ? 1 : 2) *
              (S->spans[k->ops[i].dst] ? S->spans[k->ops[i].dst] : 1);
  bufs += S->scratch_used ? 2 : 0;
  int64_t budget = S->L->target->sbuf_bytes_per_partition * 3 / 4;
  int64_t m = budget / ((bufs ? bufs : 1) * 4);
  if (m > MAX_FREE) m = MAX_FREE;
  m &= ~(int64_t)15;
  /* no tile needs more than the whole tensor (less SBUF to reserve and to
   * NaN-fill in the simulator) */
  if (numel < m) m = (numel + 15) & ~(int64_t)15;
  return m;
}

/* ==== map kernels: lw_space tiling ============================================ */

/* Value v's current tile over the free counts of a map tile: its on-chip
 * access map for a span, else the contiguous tile. */
static trnc_nc_ap tile_view(const sched *S, int v, int np, int nfree, const int64_t *counts) {
  trnc_nc_ap ap = lw_tile_ap(S->cur[v], np, 0, S->k->values[v].dtype, nfree, counts);
  if (S->span[v]) {
    ap = lw_tile_ap_strided(S->cur[v], np, S->view_off[v] * lw_esize(S->k->values[v].dtype), S->k->values[v].dtype,
                            1, ap.free);
    ap.nfree = S->view_nfree[v];
    memcpy(ap.free, S->view[v], sizeof ap.free[0] * ap.nfree);
  }
  return ap;
}

/* A load of HBM pattern *hbm into value v's tile (*sb its contiguous
 * pattern) as one span per partition when v's pool has span tiles and the
 * pattern's elements (all strides positive) lie within a span no longer than
 * a tile: *hbm and *sb become the span's DMA, and v's view its on-chip map. */
static void span_load(sched *S, const lw_space *s, const lw_tile_pos *tp, int v, int64_t tile_elems,
                      trnc_nc_ap *hbm, trnc_nc_ap *sb) {
  const kir_kernel *k = S->k;
  S->span[v] = false;
  if (!S->spans[v] || hbm->nfree < 1) return;
  int64_t len = 1, n = 1;
  bool dense = true;
  for (int d = hbm->nfree - 1; d >= 0; d--) {
    const trnc_nc_dim *f = &hbm->free[d];
    if (f->stride <= 0 && f->count > 1) return;
    if (f->count > 1) {
      dense &= f->stride == n;
      len += (f->count - 1) * f->stride;
    }
    n *= f->count;
  }
  if (n < 2) return;
  /* the members' patterns: the leader's at other offsets */
  int64_t esz = lw_esize((trnc_dtype)hbm->dtype), lo = hbm->offset / esz, hi = lo;
  int nm = 0;
  for (int i = 0; i < k->nops; i++) {
    int m = k->ops[i].dst;
    if (k->ops[i].code != KIR_LOAD || S->lead[m] != v) continue;
    int64_t off = lw_hbm_ap(s, k->ops[i].tensor, hbm->buffer, (trnc_dtype)hbm->dtype, tp).offset / esz;
    lo = off < lo ? off : lo;
    hi = off > hi ? off : hi;
    nm++;
  }
  if ((dense && !nm) || len + hi - lo > tile_elems) return;
  int64_t off0 = hbm->offset / esz;
  for (int i = 0; i < k->nops && nm; i++) {
    int m = k->ops[i].dst;
    if (k->ops[i].code != KIR_LOAD || S->lead[m] != v) continue;
    S->shared[m] = S->span[m] = true;
    S->cur[m] = S->cur[v];
    S->view_off[m] = lw_hbm_ap(s, k->ops[i].tensor, hbm->buffer, (trnc_dtype)hbm->dtype, tp).offset / esz - lo;
    S->view_nfree[m] = hbm->nfree;
    memcpy(S->view[m], hbm->free, sizeof hbm->free[0] * hbm->nfree);
  }
  len += hi - lo;
  S->span[v] = true;
  S->view_off[v] = off0 - lo;
  S->view_nfree[v] = hbm->nfree;
  memcpy(S->view[v], hbm->free, sizeof hbm->free[0] * hbm->nfree);
  hbm->offset = lo * esz;
  hbm->nfree = 1;
  hbm->free[0] = (trnc_nc_dim){1, len};
  *sb = lw_tile_ap(S->cur[v], sb->partitions, 0, S->k->values[v].dtype, 1, &len);
}

/* The span factor of space operand t (0: no span loads): its stride along
 * the innermost axis is 2..SPAN_MAX_STRIDE, every stride is >= 0, and one
 * more than the largest stride per element of the axes inside it is at
 * most SPAN_MAX_FACTOR. With `unit`, a stride of 1 too (rows with gaps
 * between them: the taps of a stride-1 window, which then share one span). */
static int span_factor(const lw_space *s, int t, bool unit) {
  int64_t inner = s->stride[t][s->rank - 1], in = 1, f = 1;
  if (inner < (unit ? 1 : 2) || inner > SPAN_MAX_STRIDE || s->size[s->rank - 1] < 2) return 0;
  for (int a = s->rank - 1; a >= 0; a--) {
    if (s->size[a] < 2) continue;
    if (s->stride[t][a] < 0) return 0;
    int64_t r = (s->stride[t][a] + in - 1) / in;
    f = r > f ? r : f;
    in *= s->size[a];
  }
  return f + 1 <= SPAN_MAX_FACTOR ? (int)f + 1 : 0;
}


/* Map kernels: whether load op o of this tile can keep value v's previous
 * tile: the same HBM access pattern `hbm` over the same [np, n] tile, no span
 * or shared span, pools of its own (not a part's), and no store of the
 * kernel writing the tensor's buffer (the data is the same). Records this
 * load's pattern otherwise. */
static bool reuse_load(sched *S, const kir_op *o, trnc_nc_ap hbm, int np, int64_t n) {
  const kir_kernel *k = S->k;
  int v = o->dst;
  int32_t buf = k->tensors[o->tensor].buffer;
  bool ok = !S->parts && !S->gathers && !S->spans[v] && S->lead[v] < 0 && S->map;
  for (int i = 0; i < k->nops && ok; i++)
    if (k->ops[i].code == KIR_STORE && k->tensors[k->ops[i].tensor].buffer == buf) ok = false;
  if (ok && S->loaded[v] && S->last_np[v] == np && S->last_n[v] == n &&
      !memcmp(&S->last_hbm[v], &hbm, sizeof hbm))
    return true;
  S->loaded[v] = ok;
  S->last_hbm[v] = hbm;
  S->last_np[v] = np;
  S->last_n[v] = n;
  return false;
}

/* lw_space operand t is kernel tensor t. */
static trnc_status map_tile(lw *L, const lw_space *s, const lw_tile_pos *tp, void *vctx) {
  sched *S = vctx;
  const kir_kernel *k = S->k;
  int np = (int)(tp->pdim >= 0 ? tp->np : 1);
  int64_t n = lw_tile_free_elems(tp), counts[TRNC_NC_MAX_FREE];
  for (int i = 0; i < tp->nfree; i++) counts[i] = tp->nf[i];
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    trnc_status st;
    if (o->code == KIR_GATHER) {
      const kir_tensor *T = &k->tensors[o->tensor];
      S->cur[o->dst] = lw_pool_next(&S->pool[o->dst]);
      st = kir_gather_dma(L, k, T, S->cur[o->dst],
                          lw_tile_ap(S->cur[o->dst], np, 0, k->values[o->dst].dtype, tp->nfree, counts),
                          lw_hbm_ap(s, o->tensor, T->buffer, T->dtype, tp), S->cur[o->src[0]]);
    } else if (o->code == KIR_SCATTER) {
      const kir_tensor *T = &k->tensors[o->tensor];
      lw_tile *v = S->cur[o->src[1]];
      st = kir_scatter_dma(L, k, T, v, tile_view(S, o->src[1], np, tp->nfree, counts),
                           lw_hbm_ap(s, o->tensor, T->buffer, T->dtype, tp), S->cur[o->src[0]], &S->tok);
    } else if (o->code == KIR_IOTA) { /* the access map's element offsets, as i32 */
      const kir_tensor *T = &k->tensors[o->tensor];
      S->cur[o->dst] = lw_pool_next(&S->pool[o->dst]);
      trnc_nc_ap h = lw_hbm_ap(s, o->tensor, -1, TRNC_I32, tp);
      trnc_nc_instr io = lw_instr(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
      io.dst = lw_tile_ap(S->cur[o->dst], np, 0, TRNC_I32, tp->nfree, counts);
      int64_t a0 = h.offset / 4, a1 = h.partitions > 1 ? h.partition_stride : 0;
      (void)T;
      if (a0 > INT32_MAX || a1 > INT32_MAX || a0 < INT32_MIN || a1 < INT32_MIN)
        return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "kir: an iota beyond int32");
      io.aff[0] = (int32_t)a0;
      io.aff[1] = (int32_t)a1;
      for (int d = 0; d < h.nfree; d++) io.aff[2 + d] = (int32_t)h.free[d].stride;
      L->ops_per_engine[3]++;
      st = lw_emit(L, &io, NULL, 0, &S->cur[o->dst], 1);
    } else if (o->code == KIR_LOAD || o->code == KIR_STORE) {
      const kir_tensor *T = &k->tensors[o->tensor];
      int v = o->code == KIR_LOAD ? o->dst : o->src[0];
      if (o->code == KIR_LOAD && S->lead[v] >= 0 && S->shared[v]) continue; /* in its leader's span */
      if (o->code == KIR_LOAD && reuse_load(S, o, lw_hbm_ap(s, o->tensor, T->buffer, T->dtype, tp), np, n)) continue;
      if (o->code == KIR_LOAD) {
        S->cur[v] = lw_pool_next(&S->pool[v]);
        for (int j = i + 1; j < k->nops; j++) /* its members load alone unless its span covers them */
          if (k->ops[j].code == KIR_LOAD && S->lead[k->ops[j].dst] == v) S->shared[k->ops[j].dst] = false;
      }
      trnc_nc_ap hbm = lw_hbm_ap(s, o->tensor, T->buffer, T->dtype, tp);
      trnc_nc_ap sb = tile_view(S, v, np, tp->nfree, counts);
      if (o->code == KIR_LOAD) {
        sb = lw_tile_ap(S->cur[v], np, 0, k->values[v].dtype, tp->nfree, counts);
        bool flat = n > 1 && !S->stays_wide[v];
        for (int d = 0; d < hbm.nfree; d++) flat &= hbm.free[d].stride == 0;
        S->narrow[v] = flat;
        if (flat) {
          int64_t one = 1;
          hbm.nfree = 1;
          hbm.free[0] = (trnc_nc_dim){1, 1};
          sb = lw_tile_ap(S->cur[v], np, 0, k->values[v].dtype, 1, &one);
        }
        if (!flat) span_load(S, s, tp, v, S->max_free * S->spans[v], &hbm, &sb);
      }
      if (o->code == KIR_STORE && S->parts && S->parts->ordered) {
        /* the parts' stores may overlap: each writes the HBM token too,
         * so they land in program order */
        trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue_dir(L, true));
        in.dst = hbm;
        in.src[0] = sb;
        lw_tile *w[1] = {S->parts->tok};
        st = lw_emit(L, &in, &S->cur[v], 1, w, 1);
      } else {
        st = lw_dma(L, S->cur[v], sb, hbm, o->code == KIR_STORE);
      }
    } else {
      S->cur[o->dst] = lw_pool_next(&S->pool[o->dst]);
      st = compute(S, o, np, n);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Tiles of a map kernel with span loads over space s (rank >= 3): when the
 * partitions walk an axis outside the two innermost, the tiles hold whole
 * innermost rows and chunks of the axis outside them (lw_space_tiles would
 * chunk the innermost axis, whose spans grow by the outer stride per
 * element of the chunk), so a span is within span_factor times the tile. */
static trnc_status span_tiles(sched *S, const lw_space *s, int64_t max_free) {
  int r = s->rank, best = 0;
  for (int i = 1; i < r - 1; i++)
    if (s->size[i] > s->size[best]) best = i;
  int64_t rows = max_free / s->size[r - 1];
  if (best == r - 2 || rows < 1 || rows >= s->size[r - 2])
    return lw_space_tiles(S->L, s, best == r - 2 ? -1 : r - 2, max_free, map_tile, S);
  for (int64_t r0 = 0; r0 < s->size[r - 2]; r0 += rows) {
    lw_space c = *s;
    c.size[r - 2] = s->size[r - 2] - r0 < rows ? s->size[r - 2] - r0 : rows;
    for (int o = 0; o < s->nops; o++) c.base[o] = s->base[o] + r0 * s->stride[o][r - 2];
    trnc_status st = lw_space_tiles(S->L, &c, r - 2, max_free, map_tile, S);
    if (st) return st;
  }
  return TRNC_OK;
}

static bool float_dt(trnc_dtype dt) { return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16; }

/* Map kernels: which tt/ts ops run on GpSimd instead of VectorE. Both
 * engines take tensor_tensor and tensor_scalar (nki.isa) and work in
 * parallel (on trn1 they share SBUF's port: everything stays on VectorE);
 * each op over full tiles, in program order, goes to the engine that would
 * finish its share of a tile first (cycles: elements x tensor inputs, at
 * the engine's clock, as in cost.c), so a chain of elementwise ops
 * (silu_backward's three products) is split between them. Only ops whose
 * operands and result are all floating point move: GpSimd computes an
 * all-int32 tt in exact integer arithmetic (trnc_nc_instr_int_exact), which
 * would change an integer division's or shift's value; so does a bitvec
 * ALU. */
static void balance_engines(sched *S) {
  const kir_kernel *k = S->k;
  const trnc_nc_target *t = S->L->target;
  memset(S->on_gpsimd, 0, sizeof S->on_gpsimd);
  if (S->L->opt.no_fusion || t->sbuf_port_vector_gpsimd_shared || t->gpsimd_lanes < t->partitions || t->gpsimd_hz <= 0 ||
      t->vector_hz <= 0)
    return;
  double vec = 0, gp = 0;
  for (int i = 0; i < k->nops; i++) { /* VectorE's other work first */
    const kir_op *o = &k->ops[i];
    if (o->dst >= 0 && o->code != KIR_ACT && o->code != KIR_LOAD && o->code != KIR_STORE && o->code != KIR_CONST &&
        o->code != KIR_TT && o->code != KIR_TS && full(k, o->dst))
      vec += 1.0 / t->vector_hz;
  }
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if ((o->code != KIR_TT && o->code != KIR_TS) || o->dst < 0 || !full(k, o->dst) || tile_scalars(S, o)) continue;
    bool ok = float_dt(k->values[o->dst].dtype) && !trnc_nc_alu_is_bitvec(o->fn) &&
              (o->code == KIR_TT || !trnc_nc_alu_is_bitvec(o->fn1));
    int inputs = 0;
    for (int s = 0; s < (o->code == KIR_TT ? 2 : 1); s++) {
      ok &= o->src[s] >= 0 && float_dt(k->values[o->src[s]].dtype);
      if (o->src[s] >= 0 && full(k, o->src[s])) inputs++;
    }
    if (inputs < 1) inputs = 1;
    double cv = inputs / t->vector_hz, cg = inputs / t->gpsimd_hz;
    if (ok && gp + cg < vec + cv) {
      S->on_gpsimd[i] = true;
      gp += cg;
    } else {
      vec += cv;
    }
  }
}

static trnc_status emit_map_tiles(sched *S);

/* Map kernels of many tiles: the DMA queues split between loads and stores
 * in proportion to their bytes per element (an fp32 -> bf16 cast: 11 load
 * queues, 5 store queues), so every queue carries about the same bytes and
 * the loads of the next tiles never queue behind this tile's stores. */
static trnc_status emit_map(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  int nq = L->target->dma_queues < TRNC_NC_NUM_DMA_QUEUES ? L->target->dma_queues : TRNC_NC_NUM_DMA_QUEUES;
  int64_t lb = 0, sb = 0;
  /* the loads that move whole tiles, tile after tile: along the innermost
   * axis and, in a space of several axes, some other one (a row broadcast
   * over the rows is loaded once, reuse_load; a row statistic is one element
   * per partition) */
  int inner = -1;
  uint32_t wide = 0;
  for (int a = 0; a < k->naxes; a++)
    if (k->extent[a] > 1) {
      inner = a;
      wide |= 1u << a;
    }
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    uint32_t ax = 0; /* the axes the load's tensor steps along (a broadcast has stride 0) */
    for (int a = 0; o->code == KIR_LOAD && a < k->naxes; a++)
      if ((wide & (1u << a)) && k->tensors[o->tensor].stride[a]) ax |= 1u << a;
    if (o->code == KIR_LOAD && inner >= 0 && (ax & (1u << inner)) && (ax != 1u << inner || wide == 1u << inner))
      lb += lw_esize(k->values[o->dst].dtype);
    else if (o->code == KIR_STORE && o->src[0] >= 0) sb += lw_esize(k->values[o->src[0]].dtype);
  }
  int64_t numel = 1;
  for (int a = 0; a < k->naxes; a++) numel *= k->extent[a];
  int split = 0; /* a kernel of a few tiles keeps every queue for each tile's parts */
  if (!S->parts && !S->gathers && lb > 0 && sb > 0 && nq >= 4 && numel > 2 * L->target->partitions * MAX_FREE) {
    split = (int)((nq * lb + (lb + sb) / 2) / (lb + sb));
    if (split < 1) split = 1;
    if (split > nq - 1) split = nq - 1;
  }
  L->dma_split = split;
  L->next_dma_dir[0] = L->next_dma_dir[1] = 0;
  trnc_status st = emit_map_tiles(S);
  L->dma_split = 0;
  return st;
}

static trnc_status emit_map_tiles(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  balance_engines(S);
  lw_space s;
  memset(&s, 0, sizeof s);
  s.rank = k->naxes;
  int64_t numel = 1;
  for (int a = 0; a < k->naxes; a++) {
    s.size[a] = k->extent[a];
    numel *= k->extent[a];
  }
  s.nops = k->ntensors;
  int first_store = -1;
  for (int t = 0; t < k->ntensors; t++) {
    s.base[t] = k->tensors[t].offset;
    for (int a = 0; a < k->naxes; a++) s.stride[t][a] = k->tensors[t].stride[a];
  }
  for (int i = 0; i < k->nops && first_store < 0; i++)
    if (k->ops[i].code == KIR_STORE) first_store = k->ops[i].tensor;
  if (first_store >= 0) lw_space_order(&s, first_store);
  if (!S->gathers) lw_space_coalesce(&s); /* else kir_gather_tiles orders and coalesces */
  for (int i = 0; i < k->nops; i++) S->scratch_used |= tile_scalars(S, &k->ops[i]);
  bool any_span = false;
  /* span loads; not in a kernel of parts, whose tiles are the parts' shared pools */
  for (int i = 0; i < k->nops && !S->gathers && !S->parts && s.rank > 0; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code != KIR_LOAD || !full(k, o->dst)) continue;
    bool taps = false; /* another load of the buffer with the same strides */
    for (int j = 0; j < k->nops && !taps; j++) {
      const kir_op *u = &k->ops[j];
      if (j == i || u->code != KIR_LOAD || !full(k, u->dst) ||
          k->tensors[u->tensor].buffer != k->tensors[o->tensor].buffer)
        continue;
      taps = true;
      for (int a = 0; a < s.rank && taps; a++) taps = s.stride[o->tensor][a] == s.stride[u->tensor][a];
    }
    S->spans[o->dst] = (uint8_t)span_factor(&s, o->tensor, taps);
    for (int j = 0; j < k->nops; j++) /* a span reads the gaps: never of a buffer the kernel writes */
      if ((k->ops[j].code == KIR_STORE || k->ops[j].code == KIR_SCATTER || k->ops[j].code == KIR_MM) &&
          k->tensors[k->ops[j].tensor].buffer == k->tensors[o->tensor].buffer)
        S->spans[o->dst] = 0;
    any_span |= S->spans[o->dst] > 0;
    for (int j = 0; j < i && S->spans[o->dst]; j++) { /* a tap of an earlier span's buffer */
      const kir_op *u = &k->ops[j];
      if (u->code != KIR_LOAD || !S->spans[u->dst] || S->lead[u->dst] >= 0) continue;
      const kir_tensor *A = &k->tensors[o->tensor], *B = &k->tensors[u->tensor];
      bool same = A->buffer == B->buffer && A->dtype == B->dtype && !A->rows && !B->rows &&
                  k->values[o->dst].dtype == k->values[u->dst].dtype;
      for (int a = 0; a < s.rank && same; a++) same = s.stride[o->tensor][a] == s.stride[u->tensor][a];
      if (!same) continue;
      S->lead[o->dst] = (int16_t)u->dst;
      S->spans[o->dst] = 0; /* its own tiles only when the span does not cover it */
    }
  }
  int64_t max_free = tile_elems(S, numel);
  if (max_free < 16) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "elementwise group too large");
  S->max_free = max_free;
  trnc_status st = make_pools(S, max_free);
  if (!st && S->scratch_used) st = lw_pool_init(L, &S->scratch, TRNC_NC_MEM_SBUF, max_free * 4, 2);
  if (st) return st;
  /* a long innermost axis whose outer axes would fill few partitions (a 1-D
   * space; attention's [heads, T * D] rotary terms, whose tables broadcast
   * over the heads): [rows <= 128, cols] plus a remainder, on all
   * partitions, the outer axes looped */
  int64_t P = L->target->partitions;
  if (S->gathers) return kir_gather_tiles(L, k, &s, max_free, map_tile, S);
  if (any_span && s.rank >= 3) return span_tiles(S, &s, max_free);
  int r = s.rank;
  int64_t outer = 1;
  for (int a = 0; a + 1 < r; a++)
    if (s.size[a] > outer) outer = s.size[a];
  int best = 0;
  for (int a = 1; a + 1 < r; a++)
    if (s.size[a] > s.size[best]) best = a;
  int64_t after = 1;
  for (int a = best + 1; a < r; a++) after *= s.size[a];
  if (r >= 2 && best > 0 && after < max_free / 2 && s.size[r - 1] < 2 * P) {
    /* the partition axis inside outer axes, with less than half a tile
     * after it (the rotary halves: [heads, T, D / 2] with T on
     * partitions): it goes outermost, so the axes outside it join the free
     * dims instead of looping tiles of a few elements per partition */
    lw_space q = s;
    q.size[0] = s.size[best];
    for (int a = 0; a < best; a++) q.size[a + 1] = s.size[a];
    for (int o = 0; o < s.nops; o++) {
      q.stride[o][0] = s.stride[o][best];
      for (int a = 0; a < best; a++) q.stride[o][a + 1] = s.stride[o][a];
    }
    return lw_space_tiles(L, &q, -1, max_free, map_tile, S);
  }
  if (r >= 2 && r <= TRNC_MAX_RANK && best == 0 && after < max_free / 2 && s.size[0] >= 2 * P) {
    /* many short rows (the rotary halves of [heads * T, D / 2]): m rows per
     * partition, [size / m, m, ...] with the first on partitions, m the
     * largest divisor of the rows that fills at most a tile */
    int64_t m = s.size[0] / P < max_free / after ? s.size[0] / P : max_free / after;
    while (m > 1 && s.size[0] % m) m--;
    if (m > 1) {
      lw_space q = s;
      q.rank = r + 1;
      q.size[0] = s.size[0] / m;
      q.size[1] = m;
      for (int a = 1; a < r; a++) q.size[a + 1] = s.size[a];
      for (int o = 0; o < s.nops; o++) {
        q.stride[o][0] = s.stride[o][0] * m;
        q.stride[o][1] = s.stride[o][0];
        for (int a = 1; a < r; a++) q.stride[o][a + 1] = s.stride[o][a];
      }
      return lw_space_tiles(L, &q, 1, max_free, map_tile, S);
    }
  }
  if (r < 1 || r >= TRNC_MAX_RANK + 1 || (S->parts && r > 1) || s.size[r - 1] < 2 * P || outer >= P)
    return lw_space_tiles(L, &s, -1, max_free, map_tile, S);
  return lw_space_tiles_rows(L, &s, max_free, map_tile, S);
}

/* ==== reduce kernels ================================================================ */

/* HBM access pattern of tensor T at position r of the reduce layout. */
/* An HBM access pattern over T (no partitions or free dims yet); *off: T's
 * element offset at the looped index idx. */
static trnc_nc_ap hbm_at(const kir_kernel *k, const kir_tensor *T, const int64_t *idx, int64_t *off) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)T->dtype;
  ap.buffer = T->buffer;
  *off = T->offset;
  for (int a = 0; a < k->naxes; a++) *off += idx[a] * T->stride[a];
  return ap;
}

static trnc_nc_ap tensor_ap(const sched *S, const kir_tensor *T, const rpos *r, bool reduced_value) {
  const kir_kernel *k = S->k;
  int64_t off;
  trnc_nc_ap ap = hbm_at(k, T, r->idx, &off);
  ap.partitions = r->np;
  if (S->pax >= 0) {
    off += r->p0 * T->stride[S->pax];
    ap.partition_stride = T->stride[S->pax];
  }
  if (reduced_value) {
    ap.nfree = 1;
    ap.free[0] = (trnc_nc_dim){1, 1};
  } else {
    ap.nfree = (uint8_t)(S->nfree ? S->nfree : 1);
    if (!S->nfree) ap.free[0] = (trnc_nc_dim){1, 1};
    for (int i = 0; i < S->nfree; i++) {
      int a = S->fax[i];
      ap.free[i] = (trnc_nc_dim){T->stride[a], i == 0 ? r->fc : k->extent[a]};
      if (i == 0) off += r->f0 * T->stride[a];
    }
  }
  ap.offset = off * lw_esize(T->dtype);
  return ap;
}

/* Free element counts of a full tile at r. */
static int64_t tile_counts(const sched *S, const rpos *r, int64_t *counts) {
  int64_t n = 1;
  for (int i = 0; i < S->nfree; i++) {
    counts[i] = i == 0 ? r->fc : S->k->extent[S->fax[i]];
    n *= counts[i];
  }
  if (!S->nfree) counts[0] = 1;
  return n;
}

/* DMA of tile t (a value of dtype dt: one element per row if red) to or
 * from tensor T at r. */
static trnc_status dma_tile(sched *S, lw_tile *t, trnc_dtype dt, const kir_tensor *T, const rpos *r, bool red,
                            bool store) {
  const kir_kernel *k = S->k;
  int64_t counts[3], one = 1;
  tile_counts(S, r, counts);
  trnc_nc_ap sb = red ? lw_tile_ap(t, r->np, 0, dt, 1, &one)
                      : lw_tile_ap(t, r->np, 0, dt, S->nfree ? S->nfree : 1, counts);
  if (!r->pack) return lw_dma(S->L, t, sb, tensor_ap(S, T, r, red), store);
  /* packed rows: DMAs per index of the packed axis, into its block; a
   * large block in row ranges of 8 KiB or more (one queue moves ~23 B/ns) */
  trnc_nc_ap ta[LW_DMA_MAX_PARTS], ha[LW_DMA_MAX_PARTS];
  rpos q = *r;
  int rows = (int)k->extent[S->pax], n = 0;
  int64_t bytes = (int64_t)rows * trnc_nc_ap_free_elems(&sb) * lw_esize(dt);
  int sub = (int)(bytes / (8 * 1024));
  if (sub > LW_DMA_MAX_PARTS / r->pack) sub = LW_DMA_MAX_PARTS / r->pack;
  if (sub > rows) sub = rows;
  if (sub < 1 || (store && !T->stride[S->pax])) sub = 1;
  q.np = rows;
  for (int j = 0; j < r->pack; j++) {
    q.idx[S->qax] = r->idx[S->qax] + j;
    trnc_nc_ap h = tensor_ap(S, T, &q, red);
    for (int i = 0, p0 = 0; i < sub; i++, n++) {
      int np = rows / sub + (i < rows % sub);
      ha[n] = h;
      ha[n].partitions = np;
      ha[n].offset += p0 * h.partition_stride * lw_esize(T->dtype);
      ta[n] = sb;
      ta[n].start_partition += j * rows + p0;
      ta[n].partitions = np;
      p0 += np;
    }
  }
  return lw_dma_parts(S->L, t, ta, ha, n, store);
}

static trnc_status dma_value(sched *S, const kir_op *o, const rpos *r) {
  const kir_kernel *k = S->k;
  int v = o->code == KIR_STORE ? o->src[0] : o->dst;
  const kir_tensor *T = &k->tensors[o->tensor];
  bool red = !full(k, v);
  if (o->code == KIR_GATHER) { /* one DMA over every partition, packed or not */
    int64_t counts[3], one = 1;
    tile_counts(S, r, counts);
    trnc_dtype dt = k->values[v].dtype;
    trnc_nc_ap sb = red ? lw_tile_ap(S->cur[v], r->np, 0, dt, 1, &one)
                        : lw_tile_ap(S->cur[v], r->np, 0, dt, S->nfree ? S->nfree : 1, counts);
    return kir_gather_dma(S->L, k, T, S->cur[v], sb, tensor_ap(S, T, r, red), S->cur[o->src[0]]);
  }
  if (o->code == KIR_LOAD && !red) { /* constant along the free axes: a narrow load */
    bool flat = S->nfree > 0 && !S->stays_wide[v];
    int64_t n = 1;
    for (int i = 0; i < S->nfree; i++) {
      flat &= T->stride[S->fax[i]] == 0;
      n *= i ? k->extent[S->fax[i]] : r->fc;
    }
    S->narrow[v] = flat && n > 1;
    red = S->narrow[v];
  }
  return dma_tile(S, S->cur[v], k->values[v].dtype, T, r, red, o->code == KIR_STORE);
}

static trnc_status cs_chunk(sched *S, const kir_op *o, const rpos *r);

/* ==== a matmul ending a row kernel (the mm op) ==================================== */

/* A row kernel's value x [rows, K] (rows on partitions, K the one free
 * axis, whole in the tile) times W [K, N]: per row block, TensorE
 * transposes x in 128-column blocks into PSUM, VectorE copies them into
 * stationary tiles [k, rows] (in the TensorE dtype), and the PSUM result
 * [rows, <= 512 columns] accumulates over the K blocks against W's tiles,
 * which stay resident in SBUF for the whole kernel. The bias joins the
 * accumulation as one more K row: ones [1, rows] (stationary) times the
 * bias row [1, N] * beta / alpha (moving). ScalarE evacuates PSUM with
 * alpha and the activation in one instruction, and the stores of each
 * column block go out in row ranges over several queues. W's tiles stay
 * resident when they fit MM_RESIDENT bytes per partition; otherwise its
 * [kt, <= 512] tiles stream from a pool per row block, column block and K
 * block. W^T of a Linear weight (contiguous rows of W) is flipped by a DMA
 * transpose in 2-byte dtypes and on TensorE in fp32
 * (kir_load_pe_transposed). */
#define MM_RESIDENT (32 * 1024)

typedef struct mmtail {
  int nkb;
  bool flip;                       /* W^T of contiguous W rows */
  lw_tile **w;                     /* resident: W's K block kb [kt, N]; NULL: streamed */
  lw_tile **stt;                   /* a row block's stationary x^T tiles, per K block */
  lw_tile *ones, *bias;            /* [1, P] ones and the bias row [1, N] (NULL: none) */
  lw_pool st, tp, ps, out, rows;   /* rows: fp32 W rows before their TensorE transposes */
  lw_pool wp;                      /* streamed W tiles */
  /* resident fp32 W^T: rows loaded at the kernel's start, their TensorE
   * transposes (and copies out of PSUM) deferred to the first row block, so
   * they do not queue on VectorE ahead of the rows' own ops */
  int npend;
  struct mm_pend {
    lw_tile *rows, *dst;
    int64_t toff, pc, fc;
  } *pend;
} mmtail;

/* W's rows [128 kb, + kt) x columns [n0, n0 + nn) into tile t (at column 0):
 * in column ranges of 8 KiB or more over several queues (W is on the
 * critical path of a short row kernel). */
static trnc_status mm_load_w(sched *S, lw_tile *t, int kb, int64_t kt, int64_t n0, int64_t nn) {
  lw *L = S->L;
  const kir_mm *M = &S->k->mm;
  mmtail *T = S->mm;
  const lw_tv *w = M->w;
  int64_t wsr = w->t.stride[0], wsc = w->t.stride[1], isz = lw_esize(M->in_dt);
  int64_t off = w->t.offset + 128 * kb * wsr + n0 * wsc;
  if (T->flip && isz != 2 && kt > 1 && nn > 1 && T->pend && n0 == 0 && nn == M->n) {
    /* resident: the rows now, 128 columns of W^T each, transposed later */
    for (int64_t f0 = 0; f0 < nn; f0 += 128) {
      int64_t fc = nn - f0 < 128 ? nn - f0 : 128;
      lw_tile *r = lw_sbuf(L, kt * isz);
      if (!r) return L->status;
      trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
      in.mode = TRNC_NC_DMA_DIRECT;
      in.dst = lw_tile_ap(r, (int)fc, 0, w->t.dtype, 1, &kt);
      trnc_nc_ap *a = &in.src[0];
      a->mem = TRNC_NC_MEM_HBM;
      a->dtype = (uint8_t)w->t.dtype;
      a->buffer = w->buffer;
      a->offset = (off + f0 * wsc) * lw_esize(w->t.dtype);
      a->partitions = (int32_t)fc;
      a->partition_stride = wsc;
      a->nfree = 1;
      a->free[0] = (trnc_nc_dim){1, kt};
      trnc_status st = lw_emit(L, &in, NULL, 0, &r, 1);
      if (st) return st;
      T->pend[T->npend++] = (struct mm_pend){r, t, f0 * isz, kt, fc};
    }
    return TRNC_OK;
  }
  if (T->flip && isz != 2 && kt > 1 && nn > 1)
    return kir_load_pe_transposed(L, t, 0, w->buffer, w->t.dtype, off, kt, wsc, nn, &T->rows, &T->tp, NULL, NULL);
  int parts = (int)(kt * nn * isz / (8 * 1024));
  if (parts > LW_DMA_MAX_PARTS / 2) parts = LW_DMA_MAX_PARTS / 2;
  if (parts > nn) parts = (int)nn;
  if (parts < 1) parts = 1;
  trnc_nc_instr ins[LW_DMA_MAX_PARTS / 2];
  for (int i = 0, c0 = 0; i < parts; i++) {
    int64_t nc = nn / parts + (i < nn % parts);
    trnc_nc_instr *in = &ins[i];
    *in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
    in->dst = lw_tile_ap(t, (int)kt, c0 * isz, M->in_dt, 1, &nc);
    trnc_nc_ap *a = &in->src[0];
    a->mem = TRNC_NC_MEM_HBM;
    a->dtype = (uint8_t)w->t.dtype;
    a->buffer = w->buffer;
    a->offset = (off + c0 * wsc) * lw_esize(w->t.dtype);
    a->nfree = 1;
    if (T->flip && nc > 1 && kt > 1) {
      /* contiguous rows of W, flipped on the way */
      in->mode = TRNC_NC_DMA_TRANSPOSE;
      a->partitions = (int32_t)nc;
      a->partition_stride = wsc;
      a->free[0] = (trnc_nc_dim){1, kt};
    } else {
      a->partitions = (int32_t)kt;
      a->partition_stride = wsr;
      a->free[0] = (trnc_nc_dim){wsc, nc};
    }
    c0 += (int)nc;
  }
  return lw_emit_split(L, ins, parts, NULL, 0, t);
}

static trnc_status mm_setup(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  const kir_mm *M = &k->mm;
  if (!S->single || S->nfree != 1 || S->cross)
    return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "the rows of a kernel ending in a matmul do not fit one tile");
  mmtail *T = trnc_arena_alloc(&L->arena, sizeof *T);
  if (!T) return lw_fail(L, k->node, TRNC_ERR_NOMEM, "out of memory");
  memset(T, 0, sizeof *T);
  S->mm = T;
  int64_t K = k->extent[S->fax[0]], N = M->n, P = L->target->partitions, isz = lw_esize(M->in_dt);
  T->nkb = (int)((K + 127) / 128);
  int64_t nc = N < L->target->mm_max_n ? N : L->target->mm_max_n;
  const lw_tv *w = M->w;
  T->flip = w->t.stride[1] != 1 && w->t.stride[0] == 1 && N > 1 && M->in_dt == w->t.dtype;
  bool resident = T->nkb * N * isz <= MM_RESIDENT;
  T->stt = trnc_arena_array(&L->arena, (size_t)T->nkb, sizeof *T->stt);
  if (resident) T->w = trnc_arena_array(&L->arena, (size_t)T->nkb, sizeof *T->w);
  if (resident && T->flip && isz != 2)
    T->pend = trnc_arena_array(&L->arena, (size_t)T->nkb * (size_t)((N + 127) / 128), sizeof *T->pend);
  if (!T->stt || (resident && !T->w) || (resident && T->flip && isz != 2 && !T->pend))
    return lw_fail(L, k->node, TRNC_ERR_NOMEM, "out of memory");
  trnc_status st;
  if ((st = lw_pool_init(L, &T->st, TRNC_NC_MEM_SBUF, 128 * isz, 2 * T->nkb)) ||
      (st = lw_pool_init(L, &T->tp, TRNC_NC_MEM_PSUM, 128 * 4, 2)) ||
      (st = lw_pool_init(L, &T->ps, TRNC_NC_MEM_PSUM, nc * 4, 2)) ||
      (st = lw_pool_init(L, &T->out, TRNC_NC_MEM_SBUF, nc * 4, 2)) ||
      (T->flip && isz != 2 && (st = lw_pool_init(L, &T->rows, TRNC_NC_MEM_SBUF, 128 * isz, 3))) ||
      (!resident && (st = lw_pool_init(L, &T->wp, TRNC_NC_MEM_SBUF, nc * isz, 4))))
    return st;
  for (int kb = 0; resident && kb < T->nkb; kb++) {
    int64_t kt = K - 128 * kb < 128 ? K - 128 * kb : 128;
    if (!(T->w[kb] = lw_sbuf(L, N * isz))) return L->status;
    if ((st = mm_load_w(S, T->w[kb], kb, kt, 0, N))) return st;
  }
  if (M->bias >= 0) {
    const kir_tensor *B = &k->tensors[M->bias];
    if (!(T->ones = lw_sbuf(L, P * isz)) || !(T->bias = lw_sbuf(L, N * isz))) return L->status;
    trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    ms.dst = lw_tile_ap(T->ones, 1, 0, M->in_dt, 1, &P);
    ms.imm[0] = 1.0f;
    if ((st = lw_emit(L, &ms, NULL, 0, &T->ones, 1))) return st;
    trnc_nc_instr in = lw_instr(TRNC_NC_OP_DMA_COPY, lw_dma_queue(L));
    in.dst = lw_tile_ap(T->bias, 1, 0, M->in_dt, 1, &N);
    trnc_nc_ap *a = &in.src[0];
    a->mem = TRNC_NC_MEM_HBM;
    a->dtype = (uint8_t)B->dtype;
    a->buffer = B->buffer;
    a->offset = B->offset * lw_esize(B->dtype);
    a->partitions = 1;
    a->nfree = 1;
    a->free[0] = (trnc_nc_dim){B->stride[S->fax[0]], N};
    if ((st = lw_emit(L, &in, NULL, 0, &T->bias, 1))) return st;
    if (M->beta != M->alpha) { /* the evacuation multiplies by alpha */
      trnc_nc_instr sc = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, TRNC_NC_VECTOR);
      sc.alu0 = TRNC_NC_ALU_MUL;
      sc.imm[0] = M->beta / M->alpha;
      sc.dst = sc.src[0] = in.dst;
      if ((st = lw_emit(L, &sc, &T->bias, 1, &T->bias, 1))) return st;
    }
  }
  return TRNC_OK;
}

/* The mm op o at row block r: x = o's value, whole rows in its tile. */
static trnc_status mm_block(sched *S, const kir_op *o, const rpos *r) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  const kir_mm *M = &k->mm;
  mmtail *T = S->mm;
  lw_tile *x = S->cur[o->src[0]];
  trnc_dtype xdt = k->values[o->src[0]].dtype;
  int64_t K = k->extent[S->fax[0]], N = M->n, np = r->np, isz = lw_esize(M->in_dt);
  lw_tile **stt = T->stt;
  trnc_status st;
  for (int i = 0; i < T->npend; i++) { /* W^T, once: its rows came in meanwhile */
    const struct mm_pend *p = &T->pend[i];
    lw_tile *tp = lw_pool_next(&T->tp), *rows = p->rows, *dst = p->dst;
    trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
    tr.src[0] = lw_tile_ap(rows, (int)p->fc, 0, M->w->t.dtype, 1, &p->pc);
    tr.dst = lw_tile_ap(tp, (int)p->pc, 0, TRNC_F32, 1, &p->fc);
    if ((st = lw_emit(L, &tr, &rows, 1, &tp, 1))) return st;
    trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    cp.src[0] = tr.dst;
    cp.dst = lw_tile_ap(dst, (int)p->pc, p->toff, M->in_dt, 1, &p->fc);
    if ((st = lw_emit(L, &cp, &tp, 1, &dst, 1))) return st;
  }
  T->npend = 0;
  for (int kb = 0; kb < T->nkb; kb++) {
    int64_t kt = K - 128 * kb < 128 ? K - 128 * kb : 128;
    lw_tile *tp = lw_pool_next(&T->tp);
    trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
    tr.src[0] = lw_tile_ap(x, (int)np, 128 * kb * lw_esize(xdt), xdt, 1, &kt);
    tr.dst = lw_tile_ap(tp, (int)kt, 0, TRNC_F32, 1, &np);
    if ((st = lw_emit(L, &tr, &x, 1, &tp, 1))) return st;
    stt[kb] = lw_pool_next(&T->st);
    trnc_nc_instr cp = lw_instr(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    cp.src[0] = tr.dst;
    cp.dst = lw_tile_ap(stt[kb], (int)kt, 0, M->in_dt, 1, &np);
    if ((st = lw_emit(L, &cp, &tp, 1, &stt[kb], 1))) return st;
  }
  const kir_tensor *OT = &k->tensors[o->tensor];
  int64_t cmax = L->target->mm_max_n;
  for (int64_t c0 = 0; c0 < N; c0 += cmax) {
    int64_t nc = N - c0 < cmax ? N - c0 : cmax;
    lw_tile *ps = lw_pool_next(&T->ps);
    for (int kb = 0; kb < T->nkb; kb++) {
      int64_t kt = K - 128 * kb < 128 ? K - 128 * kb : 128;
      lw_tile *wt = T->w ? T->w[kb] : lw_pool_next(&T->wp);
      if (!T->w && (st = mm_load_w(S, wt, kb, kt, c0, nc))) return st;
      trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
      mm.mode = kb > 0;
      mm.src[0] = lw_tile_ap(stt[kb], (int)kt, 0, M->in_dt, 1, &np);
      mm.src[1] = lw_tile_ap(wt, (int)kt, T->w ? c0 * isz : 0, M->in_dt, 1, &nc);
      mm.dst = lw_tile_ap(ps, (int)np, 0, TRNC_F32, 1, &nc);
      lw_tile *rd[2] = {stt[kb], wt};
      if ((st = lw_emit(L, &mm, rd, 2, &ps, 1))) return st;
    }
    if (T->bias) { /* + ones^T . bias: one more K row */
      trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
      mm.mode = 1;
      mm.src[0] = lw_tile_ap(T->ones, 1, 0, M->in_dt, 1, &np);
      mm.src[1] = lw_tile_ap(T->bias, 1, c0 * isz, M->in_dt, 1, &nc);
      mm.dst = lw_tile_ap(ps, (int)np, 0, TRNC_F32, 1, &nc);
      lw_tile *rd[2] = {T->ones, T->bias};
      if ((st = lw_emit(L, &mm, rd, 2, &ps, 1))) return st;
    }
    lw_tile *out = lw_pool_next(&T->out);
    trnc_nc_instr a = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
    a.act = M->act;
    a.imm[0] = M->alpha;
    a.src[0] = lw_tile_ap(ps, (int)np, 0, TRNC_F32, 1, &nc);
    a.dst = lw_tile_ap(out, (int)np, 0, OT->dtype, 1, &nc);
    if ((st = lw_emit(L, &a, &ps, 1, &out, 1))) return st;
    rpos q = *r;
    q.f0 = c0;
    q.fc = nc;
    if ((st = dma_tile(S, out, OT->dtype, OT, &q, false, true))) return st;
  }
  return TRNC_OK;
}

/* Passes. A full value is computed in pass p = the latest pass of its full
 * operands, or one after the pass completing a reduced operand; a reduce
 * runs in its input's pass and its value (and the values computed from it
 * alone) is ready after that pass. */
static void plan_passes(sched *S) {
  const kir_kernel *k = S->k;
  S->npasses = 1;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    /* a load of the first elements (a value over the space axes) is ready
     * before pass 0 */
    int p = (o->code == KIR_LOAD || o->code == KIR_GATHER) && !full(k, o->dst) ? -1 : 0;
    for (int s = 0; s < 3; s++) {
      int v = o->src[s];
      if (v < 0) continue;
      int q = full(k, v) ? S->vpass[v] : S->vpass[v] + (o->code == KIR_STORE || o->dst < 0 ||
                                                             !full(k, o->dst) ? 0 : 1);
      if (q > p) p = q;
    }
    S->opass[i] = p;
    S->first_loads |= p < 0;
    if (o->dst >= 0) S->vpass[o->dst] = p;
    if (p + 1 > S->npasses) S->npasses = p + 1;
  }
}

/* Marks in need[] the ops pass p runs per chunk: its full ops, reduces and
 * stores of full values, and (again) every full op they read from earlier
 * passes. */
static void chunk_ops(const sched *S, int p, bool *need) {
  const kir_kernel *k = S->k;
  memset(need, 0, (size_t)k->nops * sizeof *need);
  for (int i = k->nops - 1; i >= 0; i--) {
    const kir_op *o = &k->ops[i];
    bool sink = o->code == KIR_STORE || o->code == KIR_MM || o->code == KIR_COLSUM;
    bool chunked = o->code == KIR_REDUCE || (sink ? full(k, o->src[0]) : full(k, o->dst));
    need[i] = chunked && (S->opass[i] == p || need[i]);
    if (!need[i]) continue;
    for (int s = 0; s < 3; s++) {
      int v = o->src[s];
      if (v < 0 || !full(k, v)) continue;
      need[S->def[v]] = true;
    }
  }
}

/* Reduces src (access pattern over tile t, np partitions) along its free
 * dims with alu into acc [np, 1]: the first fold writes acc, later ones fold
 * a partial into it. */
static trnc_status fold_into(sched *S, int alu, lw_tile *t, trnc_nc_ap src, int np, lw_tile *acc,
                             bool first) {
  lw *L = S->L;
  int64_t one = 1;
  lw_tile *dst = first ? acc : lw_pool_next(&S->part);
  trnc_nc_instr rd = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
  rd.alu0 = (uint8_t)alu;
  rd.mode = 1;
  rd.src[0] = src;
  rd.dst = lw_tile_ap(dst, np, 0, TRNC_F32, 1, &one);
  trnc_status st = lw_emit(L, &rd, &t, 1, &dst, 1);
  if (st || first) return st;
  trnc_nc_instr f = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_VECTOR);
  f.alu0 = (uint8_t)alu;
  f.dst = f.src[1] = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
  f.src[0] = rd.dst;
  lw_tile *fr[2] = {dst, acc};
  return lw_emit(L, &f, fr, 2, &acc, 1);
}

/* One chunk of pass p: the marked ops over the full tile; each reduce folds
 * into its accumulator (the first chunk of the block writes it). */
static trnc_status pass_chunk(sched *S, int p, const bool *need, const rpos *r, bool first) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  int64_t counts[3];
  int64_t n = tile_counts(S, r, counts);
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (!need[i]) continue;
    /* a block of one chunk still holds what earlier passes computed: a
     * value's tile changes only when the value is computed again */
    if (S->single && S->opass[i] < p) continue;
    trnc_status st = TRNC_OK;
    if (o->code == KIR_LOAD || o->code == KIR_GATHER) {
      if (S->resident[o->dst] && S->cur[o->dst]) continue; /* loaded by the first block */
      S->cur[o->dst] = lw_pool_next(&S->pool[o->dst]);
      st = dma_value(S, o, r);
    } else if (o->code == KIR_STORE) {
      st = dma_value(S, o, r);
    } else if (o->code == KIR_MM) {
      st = mm_block(S, o, r);
    } else if (o->code == KIR_COLSUM) {
      st = cs_chunk(S, o, r);
    } else if (o->code == KIR_REDUCE) {
      L->ops_per_engine[1]++;
      st = fold_into(S, o->fn, S->cur[o->src[0]], vap(S, o->src[0], r->np, n), r->np, S->acc[o->dst], first);
    } else {
      S->cur[o->dst] = lw_pool_next(&S->pool[o->dst]);
      st = compute(S, o, r->np, n);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Folds accumulator [np, 1] of reduce value v across partitions into its
 * total [1, 1] (first block: the total is written): a TensorE transpose of
 * the column into a PSUM row, folded along the row. */
static trnc_status fold_partitions(sched *S, const kir_op *o, int np, bool first) {
  lw *L = S->L;
  lw_tile *acc = S->acc[o->dst], *row = acc;
  int64_t one = 1, npl = np;
  trnc_nc_ap src = lw_tile_ap(acc, 1, 0, TRNC_F32, 1, &one);
  if (np > 1) {
    row = lw_pool_next(&S->ps);
    trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
    tr.src[0] = lw_tile_ap(acc, np, 0, TRNC_F32, 1, &one);
    tr.dst = src = lw_tile_ap(row, 1, 0, TRNC_F32, 1, &npl);
    trnc_status st = lw_emit(L, &tr, &acc, 1, &row, 1);
    if (st) return st;
  }
  return fold_into(S, o->fn, row, src, 1, S->total[o->dst], first);
}

/* After pass p: the reduced values it completed (reduces read their
 * accumulators or totals), the ops on them and their stores, over [np, 1]. */
static trnc_status between(sched *S, int p, const rpos *r) {
  const kir_kernel *k = S->k;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    int v = o->code == KIR_STORE || o->code == KIR_MM || o->code == KIR_COLSUM ? o->src[0] : o->dst;
    if (S->opass[i] != p || full(k, v)) continue;
    trnc_status st = TRNC_OK;
    if (o->code == KIR_REDUCE) S->cur[v] = S->cross ? S->total[v] : S->acc[v];
    else if (o->code == KIR_STORE) st = dma_value(S, o, r);
    else if (o->code == KIR_LOAD || o->code == KIR_GATHER) {
      S->cur[v] = lw_pool_next(&S->pool[v]);
      st = dma_value(S, o, r);
    } else {
      S->cur[v] = lw_pool_next(&S->pool[v]);
      st = compute(S, o, r->np, 1);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Pass p over every chunk of the reduction axes at block position r
 * (looped reduction axes odometer, innermost free axis in chunks). */
static trnc_status pass_block(sched *S, int p, rpos *r) {
  const kir_kernel *k = S->k;
  bool need[KIR_MAX_OPS];
  chunk_ops(S, p, need);
  for (int i = 0; i < S->nloop_r; i++) r->idx[S->loop_r[i]] = 0;
  int64_t last = S->nfree ? k->extent[S->fax[0]] : 1;
  bool first = true;
  for (;;) {
    for (int64_t f0 = 0; f0 < last; f0 += S->chunk) {
      r->f0 = f0;
      r->fc = last - f0 < S->chunk ? last - f0 : S->chunk;
      trnc_status st = pass_chunk(S, p, need, r, first);
      if (st) return st;
      first = false;
    }
    int i = 0;
    for (; i < S->nloop_r; i++) {
      int a = S->loop_r[i];
      if (++r->idx[a] < k->extent[a]) break;
      r->idx[a] = 0;
    }
    if (i == S->nloop_r) return TRNC_OK;
  }
}

/* Reduce layout: picks the partition axis, the free and looped axes. */
static void reduce_layout(sched *S) {
  const kir_kernel *k = S->k;
  int kept[KIR_MAX_AXES], nk = 0, red[KIR_MAX_AXES], nr = 0;
  for (int a = 0; a < k->naxes; a++) {
    if (k->extent[a] == 1) continue;
    if (k->raxes & (1u << a)) red[nr++] = a;
    else kept[nk++] = a;
  }
  S->pax = -1;
  S->qax = -1;
  S->cross = false;
  if (nk) {
    int best = 0;
    for (int i = 1; i < nk; i++)
      if (k->extent[kept[i]] > k->extent[kept[best]]) best = i;
    S->pax = kept[best];
    for (int i = 0; i < nk; i++)
      if (i != best) S->loop_k[S->nloop_k++] = kept[i];
    /* short rows (attention's T per head): the indices of the largest
     * looped space axis share the partitions, one DMA each, so a compute
     * instruction covers up to 128 rows */
    int64_t pe = k->extent[S->pax], P = S->L->target->partitions;
    if (pe * 2 <= P && S->nloop_k > 0) {
      int q = 0;
      for (int i = 1; i < S->nloop_k; i++)
        if (k->extent[S->loop_k[i]] > k->extent[S->loop_k[q]]) q = i;
      S->qax = S->loop_k[q];
      for (int i = q; i + 1 < S->nloop_k; i++) S->loop_k[i] = S->loop_k[i + 1];
      S->nloop_k--;
      S->qm = P / pe < LW_DMA_MAX_PARTS ? P / pe : LW_DMA_MAX_PARTS;
      if (S->qm > k->extent[S->qax]) S->qm = k->extent[S->qax];
    }
  } else if (nr > 1 && S->npasses == 1 && !S->first_loads && !S->gathers && !S->colsums) {
    /* full reduction: the largest reduction axis on partitions, folded
     * across them at the end (a later pass would need the total broadcast
     * to every partition: multi-pass full reductions stay on one) */
    int best = 0;
    for (int i = 1; i < nr; i++)
      if (k->extent[red[i]] > k->extent[red[best]]) best = i;
    S->pax = red[best];
    S->cross = true;
    for (int i = best; i + 1 < nr; i++) red[i] = red[i + 1];
    nr--;
  }
  /* free dims, inner to outer: whole reduction axes while the tile holds
   * them (two at most), then one axis in chunks that fill the tile; the
   * outer rest looped */
  int i = nr - 1, nf = 0;
  int64_t inner = 1;
  while (i >= 0 && nf < 2 && inner * k->extent[red[i]] <= S->max_free) {
    inner *= k->extent[red[i]];
    nf++;
    i--;
  }
  if (i >= 0) { /* the chunked axis */
    nf++;
    i--;
  }
  S->nfree = nf;
  for (int f = 0; f < nf; f++) S->fax[f] = red[i + 1 + f];
  for (int f = 0; f <= i; f++) S->loop_r[S->nloop_r++] = red[f];
  int64_t within = 1, last = nf ? k->extent[S->fax[0]] : 1;
  for (int f = 1; f < nf; f++) within *= k->extent[S->fax[f]];
  S->chunk = S->max_free / within;
  if (S->chunk > last) S->chunk = last;
  if (S->chunk < 1) S->chunk = 1;
  S->single = S->nloop_r == 0 && S->chunk == last;
}

/* ==== column reductions: rows on partitions, summed on TensorE ===================== */

/* A sum over outer (reduction) axes of tensors laid out with a space axis
 * innermost (a bias gradient: the column sums of dY [rows, N]) reads
 * strided elements in the layout above. The column layout instead puts one
 * reduction axis on partitions and the innermost space axis on the free
 * dim, so every DMA moves whole rows, and sums across partitions on TensorE:
 * a matmul of a ones column [rows, 1] (stationary) with the tile [rows, n]
 * (moving) accumulates the column sums [1, n] in PSUM over every partition
 * block and looped reduction index. The epilogue runs on that row.
 * Used for one-pass kernels whose reduces are all float sums over every
 * reduction axis and whose ops read no per-partition scalars (in this layout
 * a partition is a reduction index, not a result). */

#define COL_MAX_REDUCES 3   /* 2 PSUM banks each of the 8 */
#define COL_MIN_GROUP 16    /* fewer blocks accumulate in one PSUM chain */

/* The space axis of smallest nonzero stride in the first load that walks
 * every axis (the one a DMA reads contiguously), -1 if it is a reduction
 * axis or the kernel has no such load. */
static int col_free_axis(const kir_kernel *k) {
  const kir_tensor *T = NULL;
  for (int i = 0; i < k->nops && !T; i++) {
    if (k->ops[i].code != KIR_LOAD) continue;
    const kir_tensor *c = &k->tensors[k->ops[i].tensor];
    bool every = true;
    for (int a = 0; a < k->naxes; a++) every &= k->extent[a] == 1 || c->stride[a] != 0;
    if (every) T = c;
  }
  if (!T) return -1;
  int best = -1;
  for (int a = 0; a < k->naxes; a++) {
    if (k->extent[a] == 1) continue;
    int64_t s = T->stride[a] < 0 ? -T->stride[a] : T->stride[a];
    int64_t b = best < 0 ? 0 : (T->stride[best] < 0 ? -T->stride[best] : T->stride[best]);
    if (best < 0 || s < b) best = a;
  }
  return best >= 0 && !(k->raxes & (1u << best)) ? best : -1;
}

static bool col_eligible(const sched *S) {
  const kir_kernel *k = S->k;
  if (S->npasses != 1 || S->first_loads) return false;
  int nred = 0;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code == KIR_BCAST || o->code == KIR_MM || o->code == KIR_GATHER || o->code == KIR_COLSUM) return false;
    if ((o->code == KIR_TS || o->code == KIR_ACT) && (o->src[1] >= 0 || o->src[2] >= 0)) return false;
    if (o->code != KIR_REDUCE) continue;
    trnc_dtype dt = k->values[o->src[0]].dtype;
    if (o->fn != TRNC_NC_ALU_ADD || !full(k, o->src[0]) || ++nred > COL_MAX_REDUCES) return false;
    if (dt != TRNC_F32 && dt != TRNC_BF16 && dt != TRNC_F16) return false;
    for (int a = 0; a < k->naxes; a++)
      if ((k->raxes & (1u << a)) && k->extent[a] > 1 && !(o->raxes & (1u << a))) return false;
  }
  return nred > 0 && col_free_axis(k) >= 0;
}

/* Column layout position: space index (looped axes, free chunk) and
 * reduction index (looped axes, partition block). */
typedef struct cpos {
  int64_t idx[KIR_MAX_AXES];
  int64_t f0, fc, p0;
  int np;
} cpos;

typedef struct col {
  int fax, pax;                        /* free (space) axis, partition (reduction) axis */
  int nls, ls[KIR_MAX_AXES];           /* looped space axes */
  int nlr, lr[KIR_MAX_AXES];           /* looped reduction axes */
  int64_t chunk;
  lw_pool psum[KIR_MAX_VALUES];        /* per reduce value: its PSUM rows */
  lw_pool sums[KIR_MAX_VALUES];        /* per reduce value: fp32 SBUF sums of groups */
  lw_tile *sum[KIR_MAX_VALUES];        /* the current space chunk's sum of groups */
  int64_t group;                       /* partition blocks accumulated per PSUM group */
  bool flushed;                        /* the current chunk has flushed a group */
  lw_tile *ones[TRNC_DTYPE_COUNT];     /* ones columns per moving dtype */
} col;

/* HBM access pattern of T at c: [np rows, fc] (a value over the reduction
 * axes too) or [1, fc] (a reduced value). */
static trnc_nc_ap col_ap(const sched *S, const col *C, const kir_tensor *T, const cpos *c, bool reduced) {
  int64_t off;
  trnc_nc_ap ap = hbm_at(S->k, T, c->idx, &off);
  off += c->f0 * T->stride[C->fax];
  ap.partitions = 1;
  if (!reduced && C->pax >= 0) {
    ap.partitions = c->np;
    ap.partition_stride = T->stride[C->pax];
    off += c->p0 * T->stride[C->pax];
  }
  ap.nfree = 1;
  ap.free[0] = (trnc_nc_dim){T->stride[C->fax], c->fc};
  ap.offset = off * lw_esize(T->dtype);
  return ap;
}

static trnc_status col_dma(sched *S, const col *C, const kir_op *o, const cpos *c) {
  const kir_kernel *k = S->k;
  int v = o->code == KIR_LOAD ? o->dst : o->src[0];
  bool red = !full(k, v);
  int np = red ? 1 : c->np;
  trnc_nc_ap sb = lw_tile_ap(S->cur[v], np, 0, k->values[v].dtype, 1, &c->fc);
  return lw_dma(S->L, S->cur[v], sb, col_ap(S, C, &k->tensors[o->tensor], c, red), o->code == KIR_STORE);
}

/* The ops over the full tile at c; each reduce accumulates its column sums
 * into its PSUM row (`first`: the row's first matmul overwrites). */
static trnc_status col_chunk(sched *S, col *C, const cpos *c, bool first) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    int v = o->code == KIR_STORE ? o->src[0] : o->dst;
    if (o->code != KIR_REDUCE && !full(k, v)) continue;
    trnc_status st;
    if (o->code == KIR_LOAD) {
      S->cur[v] = lw_pool_next(&S->pool[v]);
      st = col_dma(S, C, o, c);
    } else if (o->code == KIR_STORE) {
      st = col_dma(S, C, o, c);
    } else if (o->code == KIR_REDUCE) {
      int src = o->src[0];
      trnc_dtype dt = k->values[src].dtype;
      if (first) S->acc[v] = lw_pool_next(&C->psum[v]);
      int64_t one = 1;
      trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
      mm.mode = !first;
      mm.src[0] = lw_tile_ap(C->ones[dt], c->np, 0, dt, 1, &one);
      mm.src[1] = vap(S, src, c->np, c->fc);
      mm.dst = lw_tile_ap(S->acc[v], 1, 0, TRNC_F32, 1, &c->fc);
      lw_tile *rd[2] = {C->ones[dt], S->cur[src]};
      L->ops_per_engine[0]++;
      st = lw_emit(L, &mm, rd, 2, &S->acc[v], 1);
    } else {
      S->cur[v] = lw_pool_next(&S->pool[v]);
      st = compute(S, o, c->np, c->fc);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Moves reduce value v's PSUM row [1, fc] into SBUF tile dst: a copy while
 * the chunk has flushed no group, else added to the sum of its groups. */
static trnc_status col_fold(sched *S, const col *C, int v, int64_t fc, lw_tile *dst) {
  lw *L = S->L;
  bool add = C->flushed;
  /* the first fold is an exact copy out of PSUM: on ScalarE (nki.isa.tensor_copy
   * runs there too), so VectorE keeps to the elementwise ops of the chunks */
  trnc_nc_instr in = lw_instr(add ? TRNC_NC_OP_TENSOR_TENSOR : TRNC_NC_OP_TENSOR_COPY,
                              add ? TRNC_NC_VECTOR : TRNC_NC_SCALAR);
  in.alu0 = TRNC_NC_ALU_ADD;
  in.src[0] = lw_tile_ap(S->acc[v], 1, 0, TRNC_F32, 1, &fc);
  if (add) in.src[1] = lw_tile_ap(C->sum[v], 1, 0, TRNC_F32, 1, &fc);
  in.dst = lw_tile_ap(dst, 1, 0, TRNC_F32, 1, &fc);
  lw_tile *rd[2] = {S->acc[v], C->sum[v]};
  L->ops_per_engine[add ? 1 : 2]++;
  return lw_emit(L, &in, rd, add ? 2 : 1, &dst, 1);
}

/* Ends a group of C->group partition blocks: each PSUM row is folded into
 * its SBUF sum, and the next block starts a new PSUM accumulation. Summing
 * about sqrt(blocks) blocks per group and then the groups keeps the fp32
 * rounding error near that of a pairwise sum (eager's), where one PSUM chain
 * over all blocks grows with their number. */
static trnc_status col_flush(sched *S, col *C, const cpos *c) {
  const kir_kernel *k = S->k;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code != KIR_REDUCE) continue;
    trnc_status st = col_fold(S, C, o->dst, c->fc, C->sum[o->dst]);
    if (st) return st;
  }
  C->flushed = true;
  return TRNC_OK;
}

/* After the reduction of the space chunk at c: each sum leaves PSUM for an
 * fp32 SBUF row, then the epilogue's ops and stores run on [1, fc]. */
static trnc_status col_epilogue(sched *S, const col *C, const cpos *c) {
  const kir_kernel *k = S->k;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    int v = o->code == KIR_STORE ? o->src[0] : o->dst;
    if (full(k, v)) continue;
    trnc_status st;
    if (o->code == KIR_TS && o->fn == TRNC_NC_ALU_BYPASS && o->fn1 == TRNC_NC_ALU_BYPASS && o->src[1] < 0 &&
        o->src[2] < 0 && k->values[v].dtype == k->values[o->src[0]].dtype) {
      S->cur[v] = S->cur[o->src[0]]; /* an identity (a sum's epilogue): the same tile */
      continue;
    }
    S->cur[v] = o->code == KIR_STORE ? S->cur[v] : lw_pool_next(&S->pool[v]);
    if (o->code == KIR_STORE) {
      st = col_dma(S, C, o, c);
    } else if (o->code == KIR_REDUCE) {
      st = col_fold(S, C, v, c->fc, S->cur[v]);
    } else {
      st = compute(S, o, 1, c->fc);
    }
    if (st) return st;
  }
  return TRNC_OK;
}

/* Advances the odometer over axes ax[0..n) (innermost first); false when
 * it wrapped around. */
static bool odometer(const kir_kernel *k, int64_t *idx, const int *ax, int n) {
  for (int i = 0; i < n; i++) {
    if (++idx[ax[i]] < k->extent[ax[i]]) return true;
    idx[ax[i]] = 0;
  }
  return false;
}

static trnc_status emit_col(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  col *C = trnc_arena_alloc(&L->arena, sizeof *C);
  if (!C) return lw_fail(L, k->node, TRNC_ERR_NOMEM, "out of memory");
  memset(C, 0, sizeof *C);
  C->fax = col_free_axis(k);
  C->pax = -1;
  for (int a = k->naxes - 1; a >= 0; a--) { /* innermost first: odometer order */
    if (k->extent[a] == 1 || a == C->fax) continue;
    if (!(k->raxes & (1u << a))) C->ls[C->nls++] = a;
    else if (C->pax < 0 || k->extent[a] > k->extent[C->pax]) C->pax = a;
  }
  for (int a = k->naxes - 1; a >= 0; a--)
    if (k->extent[a] > 1 && (k->raxes & (1u << a)) && a != C->pax) C->lr[C->nlr++] = a;
  int64_t n = k->extent[C->fax];
  C->chunk = n < L->target->mm_max_n ? n : L->target->mm_max_n;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->dst < 0) continue;
    trnc_status st = lw_pool_init(L, &S->pool[o->dst], TRNC_NC_MEM_SBUF, C->chunk * 4,
                                  o->code == KIR_LOAD ? 3 : 2);
    if (!st && o->code == KIR_REDUCE) {
      trnc_dtype dt = k->values[o->src[0]].dtype;
      st = lw_pool_init(L, &C->psum[o->dst], TRNC_NC_MEM_PSUM, C->chunk * 4, 2);
      if (!st) st = lw_pool_init(L, &C->sums[o->dst], TRNC_NC_MEM_SBUF, C->chunk * 4, 2);
      if (!st && !C->ones[dt]) {
        if (!(C->ones[dt] = lw_sbuf(L, 4))) return L->status;
        trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
        int64_t one = 1;
        ms.dst = lw_tile_ap(C->ones[dt], (int)L->target->partitions, 0, dt, 1, &one);
        ms.imm[0] = 1.0f;
        st = lw_emit(L, &ms, NULL, 0, &C->ones[dt], 1);
      }
    }
    if (st) return st;
  }
  int64_t P = L->target->partitions, pext = C->pax >= 0 ? k->extent[C->pax] : 1;
  int64_t blocks = (pext + P - 1) / P;
  for (int i = 0; i < C->nlr; i++) blocks *= k->extent[C->lr[i]];
  C->group = 1;
  while (C->group * C->group < blocks) C->group++;
  if (C->group < COL_MIN_GROUP) C->group = COL_MIN_GROUP;
  cpos c;
  memset(&c, 0, sizeof c);
  do {
    for (c.f0 = 0; c.f0 < n; c.f0 += C->chunk) {
      c.fc = n - c.f0 < C->chunk ? n - c.f0 : C->chunk;
      bool first = true;
      int64_t b = 0;
      C->flushed = false;
      for (int i = 0; i < k->nops; i++)
        if (k->ops[i].code == KIR_REDUCE) C->sum[k->ops[i].dst] = lw_pool_next(&C->sums[k->ops[i].dst]);
      for (int i = 0; i < C->nlr; i++) c.idx[C->lr[i]] = 0;
      do {
        for (c.p0 = 0; c.p0 < pext; c.p0 += P, b++) {
          c.np = (int)(pext - c.p0 < P ? pext - c.p0 : P);
          trnc_status st = b > 0 && b % C->group == 0 ? col_flush(S, C, &c) : TRNC_OK;
          if (st || (st = col_chunk(S, C, &c, first || b % C->group == 0))) return st;
          first = false;
        }
      } while (odometer(k, c.idx, C->lr, C->nlr));
      c.p0 = 0;
      trnc_status st = col_epilogue(S, C, &c);
      if (st) return st;
    }
  } while (odometer(k, c.idx, C->ls, C->nls));
  return TRNC_OK;
}


/* ==== column sums beside a row kernel (the colsum op) ============================= */

/* A colsum's value a [rows, n] (rows on partitions, the row's one reduction
 * axis on the free dim, in chunks) is summed over the rows on TensorE while
 * the row kernel runs: per 128 columns of a chunk, a matmul of the tile's
 * columns (stationary [rows, m]) with a ones column (moving [rows, 1])
 * writes their sums [m, 1] into one PSUM column, so chunk c of the row owns
 * a region [128, ceil(chunk / 128)] of PSUM for the whole kernel (4 bytes per
 * partition per 128 columns; within one bank). The regions accumulate over
 * a group of about sqrt(blocks) row blocks (at least COL_MIN_GROUP), then
 * fold into fp32 SBUF sums, as emit_col's groups; at the end the last group
 * is added, rounded once into T's dtype and stored, each region as
 * [128 partitions, columns] (element 128 j + p at partition p, column j). */

#define CS_MAX 4

typedef struct csums {
  int n, op[CS_MAX];              /* the colsum ops */
  int64_t last;                   /* extent of the free axis (the row) */
  int nslots, ncol;               /* chunks of the row; PSUM columns per chunk */
  int spb;                        /* chunk regions per PSUM bank */
  lw_tile *ps[CS_MAX], *sum[CS_MAX], *out[CS_MAX];
  lw_tile *ones[TRNC_DTYPE_COUNT];
  int64_t group, b;               /* row blocks per PSUM group; the current block */
  bool flushed;                   /* a group has been folded into the sums */
} csums;

/* Byte offset of chunk c's region in a PSUM tile. */
static int64_t cs_psum_off(const sched *S, const csums *C, int c) {
  int64_t bank = S->L->target->psum_bank_bytes;
  return (c / C->spb) * bank + (int64_t)(c % C->spb) * C->ncol * 4;
}

static trnc_status cs_setup(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  if (S->nfree != 1 || S->nloop_r || S->cross)
    return lw_fail(L, k->node, TRNC_ERR_UNSUPPORTED,
                   "%s: column sums over rows whose dims do not merge into one contiguous dim", k->name);
  csums *C = trnc_arena_alloc(&L->arena, sizeof *C);
  if (!C) return lw_fail(L, k->node, TRNC_ERR_NOMEM, "out of memory");
  memset(C, 0, sizeof *C);
  S->cs = C;
  C->last = k->extent[S->fax[0]];
  C->nslots = (int)((C->last + S->chunk - 1) / S->chunk);
  C->ncol = (int)((S->chunk + 127) / 128);
  int64_t bank = L->target->psum_bank_bytes;
  C->spb = (int)(bank / (C->ncol * 4));
  if (C->spb < 1) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: a row chunk's column sums exceed a PSUM bank", k->name);
  int64_t psb = C->nslots <= C->spb ? (int64_t)C->nslots * C->ncol * 4 : (C->nslots + C->spb - 1) / C->spb * bank;
  int64_t sb = (int64_t)C->nslots * C->ncol * 4;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code != KIR_COLSUM) continue;
    if (C->n == CS_MAX) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: more than %d column sums", k->name, CS_MAX);
    trnc_dtype dt = k->values[o->src[0]].dtype;
    if (dt != TRNC_F32 && dt != TRNC_BF16 && dt != TRNC_F16)
      return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: a column sum of %s values", k->name, trnc_dtype_name(dt));
    int c = C->n++;
    C->op[c] = i;
    if (!(C->ps[c] = lw_psum(L, psb)) || !(C->sum[c] = lw_sbuf(L, sb)) || !(C->out[c] = lw_sbuf(L, sb)))
      return L->status;
    if (!C->ones[dt]) {
      if (!(C->ones[dt] = lw_sbuf(L, 4))) return L->status;
      trnc_nc_instr ms = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
      int64_t one = 1;
      ms.dst = lw_tile_ap(C->ones[dt], (int)L->target->partitions, 0, dt, 1, &one);
      ms.imm[0] = 1.0f;
      trnc_status st = lw_emit(L, &ms, NULL, 0, &C->ones[dt], 1);
      if (st) return st;
    }
  }
  /* row blocks of the kernel: looped space axes x packed blocks x partition blocks */
  int64_t P = L->target->partitions, blocks = 1, pext = S->pax >= 0 ? k->extent[S->pax] : 1;
  for (int i = 0; i < S->nloop_k; i++) blocks *= k->extent[S->loop_k[i]];
  if (S->qax >= 0) blocks *= (k->extent[S->qax] + S->qm - 1) / S->qm;
  blocks *= (pext + P - 1) / P;
  C->group = 1;
  while (C->group * C->group < blocks) C->group++;
  if (C->group < COL_MIN_GROUP) C->group = COL_MIN_GROUP;
  return TRNC_OK;
}

/* The colsum o over the tile at r: chunk f0 / chunk's PSUM region gets the
 * column sums of its [np, fc] values (the first block of a group writes). */
static trnc_status cs_chunk(sched *S, const kir_op *o, const rpos *r) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  csums *C = S->cs;
  int c = 0;
  while (C && c < C->n && &k->ops[C->op[c]] != o) c++;
  if (!C || c == C->n) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: a colsum outside the row layout", k->name);
  int src = o->src[0];
  trnc_dtype dt = k->values[src].dtype;
  int64_t off = cs_psum_off(S, C, (int)(r->f0 / S->chunk)), one = 1;
  bool first = C->b % C->group == 0;
  for (int64_t j = 0; j * 128 < r->fc; j++) {
    int64_t m = r->fc - j * 128 < 128 ? r->fc - j * 128 : 128;
    trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
    mm.mode = !first;
    mm.src[0] = lw_tile_ap(S->cur[src], r->np, j * 128 * lw_esize(dt), dt, 1, &m);
    mm.src[1] = lw_tile_ap(C->ones[dt], r->np, 0, dt, 1, &one);
    mm.dst = lw_tile_ap(C->ps[c], (int)m, off + j * 4, TRNC_F32, 1, &one);
    lw_tile *rd[2] = {S->cur[src], C->ones[dt]};
    L->ops_per_engine[0]++;
    trnc_status st = lw_emit(L, &mm, rd, 2, &C->ps[c], 1);
    if (st) return st;
  }
  return TRNC_OK;
}

/* Colsum c's PSUM regions into SBUF tile dst (dtype dt, region of chunk s
 * at s * ncol elements): copied, or added to the sums when add. Full
 * columns move on 128 partitions, a last partial column on its own. */
static trnc_status cs_fold(sched *S, int c, lw_tile *dst, trnc_dtype dt, bool add) {
  lw *L = S->L;
  csums *C = S->cs;
  for (int s = 0; s < C->nslots; s++) {
    int64_t fc = C->last - s * S->chunk < S->chunk ? C->last - s * S->chunk : S->chunk;
    int64_t nfull = fc / 128, rem = fc % 128;
    for (int part = 0; part < 2; part++) {
      int64_t cols = part ? 1 : nfull, col0 = part ? nfull : 0;
      int np = part ? (int)rem : 128;
      if (!(part ? rem : nfull)) continue;
      trnc_nc_instr in = lw_instr(add ? TRNC_NC_OP_TENSOR_TENSOR : TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
      in.alu0 = TRNC_NC_ALU_ADD;
      in.src[0] = lw_tile_ap(C->ps[c], np, cs_psum_off(S, C, s) + col0 * 4, TRNC_F32, 1, &cols);
      if (add) in.src[1] = lw_tile_ap(C->sum[c], np, ((int64_t)s * C->ncol + col0) * 4, TRNC_F32, 1, &cols);
      in.dst = lw_tile_ap(dst, np, ((int64_t)s * C->ncol + col0) * lw_esize(dt), dt, 1, &cols);
      lw_tile *rd[2] = {C->ps[c], C->sum[c]};
      L->ops_per_engine[1]++;
      trnc_status st = lw_emit(L, &in, rd, add ? 2 : 1, &dst, 1);
      if (st) return st;
    }
  }
  return TRNC_OK;
}

/* Before a row block: a full group of blocks folds into the SBUF sums. */
static trnc_status cs_block(sched *S) {
  csums *C = S->cs;
  if (C->b == 0 || C->b % C->group) return TRNC_OK;
  for (int c = 0; c < C->n; c++) {
    trnc_status st = cs_fold(S, c, C->sum[c], TRNC_F32, C->flushed);
    if (st) return st;
  }
  C->flushed = true;
  return TRNC_OK;
}

/* After the last block: PSUM (+ the sums) in T's dtype, stored. */
static trnc_status cs_finish(sched *S) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  csums *C = S->cs;
  for (int c = 0; c < C->n; c++) {
    const kir_op *o = &k->ops[C->op[c]];
    const kir_tensor *T = &k->tensors[o->tensor];
    int64_t st_ = T->stride[S->fax[0]], esz = lw_esize(T->dtype);
    trnc_status st = cs_fold(S, c, C->out[c], T->dtype, C->flushed);
    for (int s = 0; s < C->nslots && !st; s++) {
      int64_t f0 = s * S->chunk, fc = C->last - f0 < S->chunk ? C->last - f0 : S->chunk;
      int64_t nfull = fc / 128, rem = fc % 128;
      for (int part = 0; part < 2 && !st; part++) {
        int64_t cols = part ? 1 : nfull, col0 = part ? nfull : 0;
        int np = part ? (int)rem : 128;
        if (!(part ? rem : nfull)) continue;
        trnc_nc_ap h;
        memset(&h, 0, sizeof h);
        h.mem = TRNC_NC_MEM_HBM;
        h.dtype = (uint8_t)T->dtype;
        h.buffer = T->buffer;
        h.partitions = np;
        h.partition_stride = st_;
        h.offset = (T->offset + (f0 + col0 * 128) * st_) * esz;
        h.nfree = 1;
        h.free[0] = (trnc_nc_dim){128 * st_, cols};
        trnc_nc_ap sb = lw_tile_ap(C->out[c], np, ((int64_t)s * C->ncol + col0) * esz, T->dtype, 1, &cols);
        st = lw_dma(L, C->out[c], sb, h, true);
      }
    }
    if (st) return st;
  }
  return TRNC_OK;
}

static trnc_status emit_reduce(sched *S, int64_t numel) {
  lw *L = S->L;
  const kir_kernel *k = S->k;
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].dst >= 0) S->def[k->ops[i].dst] = i;
  plan_passes(S);
  S->max_free = tile_elems(S, numel);
  int64_t row = 1;
  bool mm = false;
  for (int a = 0; a < k->naxes; a++)
    if (k->raxes & (1u << a)) row *= k->extent[a];
  for (int i = 0; i < k->nops; i++) mm |= k->ops[i].code == KIR_MM;
  if (S->npasses > 1 && !mm && !S->gathers && row > S->max_free) {
    for (S->lean = 1; S->lean <= 2; S->lean++) {
      int64_t lean = tile_elems(S, numel);
      if (row <= lean) {
        S->max_free = lean;
        break;
      }
    }
    if (S->lean > 2) S->lean = 0;
  }
  for (int i = 0; i < k->nops; i++) /* an mm needs whole rows in one tile */
    if (k->ops[i].code == KIR_MM)
      for (int a = 0; a < k->naxes; a++)
        if ((k->raxes & (1u << a)) && k->extent[a] > S->max_free) S->max_free = (k->extent[a] + 15) & ~(int64_t)15;
  if (S->max_free < 16) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "reduction kernel too large");
  if (col_eligible(S)) return emit_col(S);
  reduce_layout(S);
  trnc_status st = make_pools(S, S->max_free);
  if (!st) st = lw_pool_init(L, &S->part, TRNC_NC_MEM_SBUF, 64, 2);
  if (!st && S->cross) st = lw_pool_init(L, &S->ps, TRNC_NC_MEM_PSUM, 512, 2);
  for (int i = 0; i < k->nops && !st; i++)
    if (k->ops[i].code == KIR_MM) st = mm_setup(S);
  if (!st && S->colsums) st = cs_setup(S);
  if (st) return st;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code != KIR_REDUCE) continue;
    /* block accumulators and totals live across chunks and blocks: tiles of
     * their own, never pool tiles that rotate under them */
    S->acc[o->dst] = lw_sbuf(L, 64);
    if (!S->acc[o->dst] || (S->cross && !(S->total[o->dst] = lw_sbuf(L, 64)))) return L->status;
  }
  int64_t P = L->target->partitions, pext = S->pax >= 0 ? k->extent[S->pax] : 1;
  rpos r;
  memset(&r, 0, sizeof r);
  if (S->cross) { /* one pass over every partition block, then the fold */
    for (int64_t p0 = 0; p0 < pext; p0 += P) {
      r.p0 = p0;
      r.np = (int)(pext - p0 < P ? pext - p0 : P);
      if ((st = pass_block(S, 0, &r))) return st;
      for (int i = 0; i < k->nops && !st; i++)
        if (k->ops[i].code == KIR_REDUCE) st = fold_partitions(S, &k->ops[i], r.np, p0 == 0);
      if (st) return st;
    }
    r.p0 = 0;
    r.np = 1;
    return between(S, 0, &r);
  }
  int64_t qext = S->qax >= 0 ? k->extent[S->qax] : 1, qstep = S->qax >= 0 ? S->qm : 1;
  for (;;) {
    for (int64_t q0 = 0; q0 < qext; q0 += qstep)
      for (int64_t p0 = 0; p0 < pext; p0 += P) {
        r.p0 = p0;
        r.np = (int)(pext - p0 < P ? pext - p0 : P);
        if (S->qax >= 0) { /* pext <= P / 2: one block of rows per index */
          r.idx[S->qax] = q0;
          r.pack = (int)(qext - q0 < qstep ? qext - q0 : qstep);
          r.np = (int)(r.pack * pext);
        }
        if ((S->cs && (st = cs_block(S))) || (st = between(S, -1, &r))) return st;
        for (int p = 0; p < S->npasses; p++)
          if ((st = pass_block(S, p, &r)) || (st = between(S, p, &r))) return st;
        if (S->cs) S->cs->b++;
      }
    int i = 0;
    for (; i < S->nloop_k; i++) {
      int a = S->loop_k[i];
      if (++r.idx[a] < k->extent[a]) break;
      r.idx[a] = 0;
    }
    if (i == S->nloop_k) return S->cs ? cs_finish(S) : TRNC_OK;
  }
}

/* Merges neighbouring axes of one kind (space or reduction; axes of extent
 * 1 between them do not count) that every tensor walks contiguously: the
 * outer takes both extents and the inner's strides, the inner becomes
 * extent 1. */
static void merge_axes(kir_kernel *k) {
  int outer = -1;
  for (int a = 0; a < k->naxes; a++) {
    if (k->extent[a] == 1) continue;
    bool ok = outer >= 0 && !!(k->raxes & (1u << outer)) == !!(k->raxes & (1u << a));
    for (int t = 0; ok && t < k->ntensors; t++)
      ok = k->tensors[t].stride[outer] == k->tensors[t].stride[a] * k->extent[a];
    if (!ok) {
      outer = a;
      continue;
    }
    k->extent[outer] *= k->extent[a];
    k->extent[a] = 1;
    for (int t = 0; t < k->ntensors; t++) {
      k->tensors[t].stride[outer] = k->tensors[t].stride[a];
      k->tensors[t].stride[a] = 0;
    }
  }
}

/* A full reduction over one long axis (n >= 2P elements, n a multiple of
 * cols = ceil(n / P)) becomes [n / cols rows, cols] reduction axes, so the
 * rows go on partitions. */
static void split_rows(kir_kernel *k, int64_t P) {
  int red = -1;
  for (int a = 0; a < k->naxes; a++) {
    if (k->extent[a] == 1) continue;
    if (!(k->raxes & (1u << a)) || red >= 0) return; /* a space axis, or two reduction axes */
    red = a;
  }
  if (red < 0 || k->naxes >= KIR_MAX_AXES) return;
  int64_t n = k->extent[red], cols = (n + P - 1) / P;
  if (n < 2 * P || n % cols) return;
  int na = k->naxes++;
  uint32_t bit = 1u << na;
  k->extent[red] = n / cols;
  k->extent[na] = cols;
  k->raxes |= bit;
  for (int t = 0; t < k->ntensors; t++) {
    k->tensors[t].stride[na] = k->tensors[t].stride[red];
    k->tensors[t].stride[red] *= cols;
  }
  for (int v = 0; v < k->nvalues; v++)
    if (k->values[v].axes & (1u << red)) k->values[v].axes |= bit;
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].raxes & (1u << red)) k->ops[i].raxes |= bit;
}

/* Drops the ops whose values nothing reads (a row node's operand its rule
 * does not use: layer-norm backward's bias; an output no one wants). A
 * gather stays: its DMA checks the index range (an element gather's check
 * of the index as written is a gather whose value nothing reads). */
static void drop_dead(kir_kernel *k) {
  bool used[KIR_MAX_VALUES] = {false}, keep[KIR_MAX_OPS];
  for (int i = k->nops - 1; i >= 0; i--) {
    const kir_op *o = &k->ops[i];
    keep[i] = o->dst < 0 || used[o->dst] || o->code == KIR_GATHER;
    for (int s = 0; keep[i] && s < 3; s++)
      if (o->src[s] >= 0) used[o->src[s]] = true;
  }
  int n = 0;
  for (int i = 0; i < k->nops; i++)
    if (keep[i]) k->ops[n++] = k->ops[i];
  k->nops = n;
}

trnc_status kir_emit(lw *L, const kir_kernel *kin) {
  const char *dump = getenv("TRNC_DUMP");
  if (dump && (strstr(dump, "kir") || !strcmp(dump, "all"))) kir_print(kin, stderr);
  if (kin->seq) return kir_emit_seq(L, kin); /* codegen/kir/attention.c */
  trnc_status st = lw_kernel_begin(L, kin->name);
  if (st) return st;
  for (int i = 0; i < kin->nops; i++) /* a matmul kernel has its own schedule */
    if (kin->ops[i].code == KIR_MATMUL) return kir_schedule_matmul(L, kin);
  sched *S = trnc_arena_alloc(&L->arena, sizeof *S);
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!S || !k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  *k = *kin;
  drop_dead(k);
  bool mm = false, cs = false;
  for (int i = 0; i < k->nops; i++) {
    mm |= k->ops[i].code == KIR_MM;
    cs |= k->ops[i].code == KIR_COLSUM;
  }
  merge_axes(k);
  if (k->nops && k->ops[k->nops - 1].code == KIR_ACCUM) return kir_emit_accum(L, k); /* codegen/kir/accum.c */
  if (!mm && !cs) split_rows(k, L->target->partitions); /* a colsum's row stays one axis */
  memset(S, 0, sizeof *S);
  S->L = L;
  S->k = k;
  for (int v = 0; v < KIR_MAX_VALUES; v++) S->lead[v] = -1;
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code == KIR_STORE || o->code == KIR_MM || o->code == KIR_COLSUM) S->stays_wide[o->src[0]] = true;
    else if (o->code == KIR_SCATTER) S->stays_wide[o->src[1]] = true;
    S->gathers |= o->code == KIR_GATHER || o->code == KIR_SCATTER;
  }
  int64_t numel = 1;
  bool reduces = false;
  for (int a = 0; a < k->naxes; a++) {
    numel *= k->extent[a];
    reduces |= (k->raxes & (1u << a)) && k->extent[a] > 1;
  }
  S->map = !reduces;
  S->colsums = cs;
  if (cs && !reduces) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "a kernel with column sums has no rows to sum");
  if (mm && !reduces) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "a kernel ending in a matmul has no rows to contract");
  return reduces ? emit_reduce(S, numel) : emit_map(S);
}

trnc_status kir_emit_part(lw *L, const kir_kernel *kin, kir_parts *P) {
  const char *dump = getenv("TRNC_DUMP");
  if (dump && (strstr(dump, "kir") || !strcmp(dump, "all"))) kir_print(kin, stderr);
  for (int i = 0; i < kin->nops; i++) {
    int c = kin->ops[i].code;
    if (c == KIR_GATHER || c == KIR_SCATTER || c == KIR_ACCUM || c == KIR_MM || c == KIR_MATMUL || c == KIR_REDUCE)
      return lw_fail(L, kin->node, TRNC_ERR_INTERNAL, "kir: a part of a kernel is a map kernel (%s)", kin->name);
  }
  if (kin->seq || kin->raxes)
    return lw_fail(L, kin->node, TRNC_ERR_INTERNAL, "kir: a part of a kernel has no reduction axes (%s)", kin->name);
  trnc_status st;
  if (!P->begun) {
    if ((st = lw_kernel_begin(L, kin->name))) return st;
    P->begun = true;
    if (P->max_free > MAX_FREE) P->max_free = MAX_FREE;
    P->max_free = (P->max_free + 15) & ~(int64_t)15;
    if (P->max_free < 16) P->max_free = 16;
    if (P->ordered) {
      P->tok = trnc_arena_alloc(&L->arena, sizeof *P->tok);
      if (!P->tok) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
      memset(P->tok, 0, sizeof *P->tok);
      P->tok->mem = TRNC_NC_MEM_HBM;
    }
  }
  sched *S = trnc_arena_alloc(&L->arena, sizeof *S);
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!S || !k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  *k = *kin;
  merge_axes(k);
  memset(S, 0, sizeof *S);
  S->L = L;
  S->k = k;
  S->parts = P;
  S->map = true;
  for (int i = 0; i < k->nops; i++)
    if (k->ops[i].code == KIR_STORE) S->stays_wide[k->ops[i].src[0]] = true;
  if ((st = emit_map(S))) return st;
  return_pools(S);
  return TRNC_OK;
}
