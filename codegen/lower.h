/*
 * lower.h — internal interface of the code emitter (IR -> NeuronCore program).
 *
 * Vocabulary:
 *  - tv (tensor view): a tensor in HBM — program buffer, device dtype,
 *    shape, strides and offset in elements. Every IR value gets one. Views
 *    (view, permute, expand, slice, ...) are tvs over their base's buffer
 *    with other strides: no copy.
 *  - kernel: one NeuronCore kernel of the program. Kernels run one after
 *    another; inside a kernel data moves HBM -> SBUF -> engines -> HBM.
 *  - tile: an SBUF or PSUM allocation [partitions x bytes per partition].
 *    Every instruction says which tiles it reads and writes; lw_emit adds the
 *    semaphore waits that order it after conflicting accesses on other queues
 *    (RAW, WAR, WAW), so emitters never reason about synchronization.
 *  - pool: a ring of equal tiles; taking the next tile of a 2-3 deep pool
 *    gives double/triple buffering (DMA of tile i+1 overlaps compute on i).
 */
#ifndef TRNC_CODEGEN_LOWER_H
#define TRNC_CODEGEN_LOWER_H

#include "codegen/neuroncore/artifact.h"
#include "ir/ir.h"
#include "trnc/neuroncore.h"

#define LW_QUEUES TRNC_NC_ENGINE_COUNT   /* one semaphore per queue */
#define LW_P 128                          /* partitions */

typedef struct lw_tv {
  int32_t buffer;     /* program buffer; -1 = not materialized (None, unused) */
  trnc_type t;        /* device dtype; shape/strides/offset in elements */
} lw_tv;

/** An SBUF/PSUM allocation and its synchronization state. */
typedef struct lw_tile {
  uint8_t mem;              /* TRNC_NC_MEM_SBUF or TRNC_NC_MEM_PSUM */
  int32_t partitions;       /* allocated partitions (from 0) */
  int64_t offset;           /* byte offset within each partition */
  int64_t bytes;            /* bytes per partition */
  /* per queue, the queue's signal count after its last write (0: none);
   * several queues can hold disjoint parts of one write (lw_emit_split) */
  uint32_t writer_count[LW_QUEUES];
  uint32_t reader_count[LW_QUEUES]; /* per queue, signal count after its last read */
} lw_tile;

typedef struct lw_pool {
  lw_tile *tiles;
  int n, next;
} lw_pool;

typedef struct lw {
  const trnc_graph *g;
  trnc_compile_options opt;
  trnc_nc_program *prog;
  const trnc_nc_target *target;
  trnc_diags *d;
  trnc_arena arena;           /* per compilation */
  lw_tv *tv;                  /* per IR value */
  /* current kernel */
  int kernel;
  uint32_t qcount[LW_QUEUES]; /* instructions signalled per queue so far */
  int64_t sbuf_used, psum_used; /* bump allocators, bytes per partition */
  int next_dma;               /* round-robin DMA queue */
  /* > 0: loads (to SBUF) of lw_dma go round robin over queues [0, dma_split),
   * stores over [dma_split, queues) (lw_dma_queue_dir) */
  int dma_split;
  int next_dma_dir[2];
  /* report */
  int64_t sbuf_peak, psum_peak;
  size_t ops_per_engine[4];
  trnc_status status;         /* first error while emitting */
} lw;

/* ---- errors ------------------------------------------------------------ */
/** Records an internal error (emitter limit or bug) once; returns it. */
trnc_status lw_fail(lw *L, const trnc_node *n, trnc_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** ceil(a / b) and floor(a / b) for b > 0 and a of either sign (window
 *  bounds of convolution and pooling tiles). */
static inline int64_t lw_cdiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static inline int64_t lw_fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* ---- kernels, tiles, emission ----------------------------------------- */
/** Starts a new kernel named after node n (or `name`). */
trnc_status lw_kernel_begin(lw *L, const char *name);
/** Allocates an SBUF tile of `bytes` per partition (all 128 partitions
 *  reserved). Fails with TRNC_ERR_LIMIT when the kernel's SBUF is full. */
lw_tile *lw_sbuf(lw *L, int64_t bytes);
/** Allocates a PSUM tile; `bytes` <= one bank (2 KiB) is placed inside one
 *  bank (what a matmul accumulation needs). */
lw_tile *lw_psum(lw *L, int64_t bytes);
/** A pool of n tiles (SBUF or PSUM) of `bytes` each. */
trnc_status lw_pool_init(lw *L, lw_pool *pool, uint8_t mem, int64_t bytes, int n);
lw_tile *lw_pool_next(lw_pool *pool);

/** Access pattern over tile t: partitions [0, np), starting `byte_off` into
 *  the tile, dtype dt, free dims given as (count) list, row-major
 *  contiguous (innermost stride 1). nfree 0 = one element. */
trnc_nc_ap lw_tile_ap(const lw_tile *t, int np, int64_t byte_off, trnc_dtype dt, int nfree,
                      const int64_t *counts);
/** Same with explicit free strides (elements). */
trnc_nc_ap lw_tile_ap_strided(const lw_tile *t, int np, int64_t byte_off, trnc_dtype dt,
                              int nfree, const trnc_nc_dim *free);

/** A blank instruction (every operand slot unused) of opcode op on engine. */
trnc_nc_instr lw_instr(int op, int engine);

/** Appends instruction `in` to the current kernel on in->engine, after
 *  adding waits for every conflicting access to the tiles it reads (reads[])
 *  and writes (writes[]) from other queues, and a signal of its queue's
 *  semaphore. */
trnc_status lw_emit(lw *L, trnc_nc_instr *in, lw_tile *const *reads, int nreads,
                    lw_tile *const *writes, int nwrites);
/** Emits n instructions that each write a disjoint part of tile w (for
 *  example DMAs of partition slices on different queues), so they run in
 *  parallel: each waits only for accesses before the group. */
trnc_status lw_emit_split(lw *L, trnc_nc_instr *ins, int n, lw_tile *const *reads, int nreads,
                          lw_tile *w);
/** Next DMA queue (round-robin over the target's DMA engines). */
int lw_dma_queue(lw *L);

/* ---- HBM access patterns ------------------------------------------------ */
/** Element size of a device dtype (bytes). */
int64_t lw_esize(trnc_dtype dt);

/**
 * An iteration space: `rank` dims (outer to inner) and, for each of `nops`
 * operands, its strides (elements; 0 = broadcast) and base offset. Built by
 * lw_space_* and tiled by lw_space_tiles().
 */
#define LW_MAX_OPS 16 /* a 3x3 window's 9 taps, its 2 index tables and 2 results: one kernel */
typedef struct lw_space {
  int rank;
  int64_t size[TRNC_MAX_RANK + 1];
  int nops;
  int64_t stride[LW_MAX_OPS][TRNC_MAX_RANK + 1];
  int64_t base[LW_MAX_OPS];
} lw_space;

/** Adds operand tv broadcast to `shape` (rank r, right-aligned like torch
 *  broadcasting). Returns its operand index. */
int lw_space_add(lw_space *s, const lw_tv *tv, int r, const int64_t *shape);
/** Reorders the dims so that operand op's strides decrease inwards (its
 *  accesses become contiguous runs). Only for kernels whose result does
 *  not depend on iteration order (elementwise, copies). */
void lw_space_order(lw_space *s, int op);
/** Makes a kernel that writes operand op (a broadcast view: stride 0 in
 *  some dims, such as an expanded graph output) write each element once:
 *  every dim where op has stride 0 and all operands do too shrinks to size 1.
 *  Returns false if some operand varies along such a dim (different values
 *  for one element: the caller reports it). */
bool lw_space_unique_writes(lw_space *s, int op);
/** Merges adjacent dims that are contiguous for every operand and drops
 *  size-1 dims; `keep_boundary` (if >= 0) is a dim index that must not be
 *  merged with its inner neighbour (reduction boundary). */
void lw_space_coalesce(lw_space *s);

/** One tile of an iteration space: the partition dim, free dims and index
 *  of every looped dim. */
typedef struct lw_tile_pos {
  int pdim;                   /* dim on partitions (-1: single partition) */
  int64_t p0, np;             /* partition range in that dim */
  int nfree;
  int fdim[TRNC_NC_MAX_FREE]; /* dims on the free axis, outer to inner */
  int64_t f0[TRNC_NC_MAX_FREE], nf[TRNC_NC_MAX_FREE];
  int64_t idx[TRNC_MAX_RANK + 1]; /* fixed index of every other dim */
} lw_tile_pos;

/** DMA access pattern of operand `op` of space s (a tv with buffer and
 *  device dtype `dt`) at tile position tp. */
trnc_nc_ap lw_hbm_ap(const lw_space *s, int op, int32_t buffer, trnc_dtype dt,
                     const lw_tile_pos *tp);

/** HBM access pattern of `buffer` (dtype dt) from element off: np
 *  partitions pstride elements apart, free dims f[0..nf) (element strides,
 *  outer to inner; nf <= TRNC_NC_MAX_FREE), dims of count 1 dropped and
 *  dims contiguous with their inner neighbour merged (fewer, longer DMA
 *  runs). */
trnc_nc_ap lw_hbm_dims(int32_t buffer, trnc_dtype dt, int64_t off, int64_t np, int64_t pstride, int nf,
                       const trnc_nc_dim *f);

/** Calls fn for every tile of space s. Partition dim: chosen by the tiler
 *  among dims [0, first_free) (the largest), free dims: [first_free, rank)
 *  (at most 4; more are looped), innermost free dim chunked so a tile holds
 *  at most max_free elements per partition. first_free < 0: the tiler picks
 *  (all but the partition dim are free). */
typedef trnc_status (*lw_tile_fn)(lw *L, const lw_space *s, const lw_tile_pos *tp, void *ctx);
trnc_status lw_space_tiles(lw *L, const lw_space *s, int first_free, int64_t max_free,
                           lw_tile_fn fn, void *ctx);

/** Calls fn for every tile of space s (rank 1..TRNC_MAX_RANK) with its
 *  innermost dim split as [rows <= 128 partitions, cols] (the outer dims
 *  looped), then the remainder rows*cols..n of that dim tiled as
 *  lw_space_tiles does: a long innermost dim on every partition. */
trnc_status lw_space_tiles_rows(lw *L, const lw_space *s, int64_t max_free, lw_tile_fn fn, void *ctx);

/** Free elements per partition at tile position tp. */
int64_t lw_tile_free_elems(const lw_tile_pos *tp);

/* ---- helpers to emit common instructions -------------------------------- */
/** DMA HBM -> tile (or tile -> HBM when to_hbm); a large tile is split by
 *  partition rows over several DMA queues. */
trnc_status lw_dma(lw *L, lw_tile *t, trnc_nc_ap tile_ap, trnc_nc_ap hbm_ap, bool to_hbm);
/** The DMA queue engine for the next load (to_hbm false) or store: with
 *  L->dma_split set, round robin within the loads' or the stores' queues
 *  (a queue runs in order: a load queued behind a store that waits for
 *  compute would stall the next tile's prefetch), else lw_dma_queue. */
int lw_dma_queue_dir(lw *L, bool to_hbm);
#define LW_DMA_MAX_PARTS 16
/** n DMAs between disjoint parts of tile t (tile_aps[i]) and HBM
 *  (hbm_aps[i]), on n queues, each waiting only for what came before the
 *  group. TRNC_ERR_INTERNAL when n is not in [1, LW_DMA_MAX_PARTS]. */
trnc_status lw_dma_parts(lw *L, lw_tile *t, const trnc_nc_ap *tile_aps, const trnc_nc_ap *hbm_aps, int n,
                         bool to_hbm);

/* ---- emitters (one per op family) --------------------------------------- */
/** What a matmul kernel applies while evacuating PSUM: out = act(scale *
 *  (A.B + bias)), then the elementwise nodes tail[0..ntail) in order (each
 *  reads the previous result; their other operands are in HBM, of the
 *  result's shape or broadcast to it: a residual add), written to value
 *  `out` (the matmul's result, or the last fused consumer's: a reshape
 *  view's result is written through the same contiguous buffer). The tail
 *  may hold reshape views of the running result too. */
typedef struct lw_epilogue {
  int act;        /* TRNC_NC_ACT_*; IDENTITY for none */
  double scale;
  trnc_ref out;
  const trnc_node *const *tail;
  int ntail;
} lw_epilogue;
trnc_status lw_emit_copy(lw *L, const lw_tv *dst, const lw_tv *src, const char *name);
/** Max/avg/adaptive pooling (+ backward) on VectorE (emit_conv.c). */
bool lw_conv_handles(const trnc_graph *g, const trnc_node *n);
trnc_status lw_conv_emit(lw *L, const trnc_node *n);
/** Convolution (1-D/2-D, not transposed) and its backward (grad_input,
 *  grad_weight; the bias gradient is a decomposition) as kernel-IR conv
 *  kernels on TensorE (codegen/kir/conv.c): `handles` is true within the
 *  limits the op table names (float dtypes, input band, channels, weight
 *  tile); `emit` fails with TRNC_ERR_INTERNAL for an operand not in HBM. */
bool lw_convolution_handles(const trnc_graph *g, const trnc_node *n);
trnc_status lw_convolution_emit(lw *L, const trnc_node *n);

/** Scaled-dot-product attention forward as one flash-attention kernel
 *  (codegen/kir/attention.c) and its backward (codegen/kir/attention_bw.c,
 *  bf16/fp16: dQ, dK, dV from grad_out, q, k, v, out and the forward's
 *  logsumexp): the CPU flash ops when passes/decomp_attention.c kept them
 *  (no attn_mask, head dim <= 128). query [B,Hq,L,E], key/value
 *  [B,Hk,S,E] in any layout (a strided last dim is copied first); writes the
 *  output [B,Hq,L,E] and the float32 logsumexp [B,Hq,L] in their layouts.
 *  Errors: TRNC_ERR_INTERNAL for a kept form it does not lower (a mask or a
 *  head dim over 128: a trnc bug) or PSUM full, TRNC_ERR_LIMIT when SBUF is
 *  full (the shape rule keeps keys and values within 64 KiB), TRNC_ERR_NOMEM. */
bool lw_attention_handles(const trnc_graph *g, const trnc_node *n);
trnc_status lw_attention_emit(lw *L, const trnc_node *n);

/** An op family's emitter: `handles` says whether it lowers node n (given
 *  its operands), `emit` emits it (outputs already have their tvs). The
 *  families are listed in codegen/families.c. */
/** _c10d_functional collectives (emit_collective.c): collective START steps
 *  of the program; lw_cc_wait turns a wait_tensor (lowered as a view of the
 *  result) into the matching cc_wait step. */
bool lw_cc_handles(const trnc_graph *g, const trnc_node *n);
trnc_status lw_cc_emit(lw *L, const trnc_node *n);
trnc_status lw_cc_wait(lw *L, const trnc_node *n);

typedef struct lw_family {
  const char *name;
  bool (*handles)(const trnc_graph *g, const trnc_node *n);
  trnc_status (*emit)(lw *L, const trnc_node *n);
} lw_family;
extern const lw_family lw_families[];
extern const int lw_nfamilies;

/** A kernel `name` that fills dst with `value` (GpSimd memset, DMA out). */
trnc_status lw_emit_fill(lw *L, const lw_tv *dst, float value, const char *name);

/** Materializes value r into a new contiguous internal buffer tv (for ops
 *  that need a dense operand). */
trnc_status lw_materialize(lw *L, const trnc_node *n, trnc_ref r, lw_tv *out);

/** Device dtype for a value dtype (i64 -> i32; f64 -> f32). */
trnc_dtype lw_device_dtype(trnc_dtype dt);

/** Allocates a new internal HBM buffer for value r with contiguous layout. */
trnc_status lw_alloc_internal(lw *L, trnc_ref r, const char *name);

#endif
