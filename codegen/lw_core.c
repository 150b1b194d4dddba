/*
 * lw_core.c — the emitter's machinery: kernels, SBUF/PSUM tiles and pools,
 * automatic semaphore synchronization, iteration spaces, tiling and HBM
 * access patterns. Op emitters (emit_*.c) build on these.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/lower.h"

trnc_status lw_fail(lw *L, const trnc_node *n, trnc_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (L->status == TRNC_OK) {
    if (n) {
      trnc_diag_loc loc = trnc_node_loc(n);
      char ops[512];
      trnc_node_operands_str(L->g, n, ops, sizeof ops);
      trnc_diag_add(L->d, TRNC_SEV_ERROR, st, &loc, ops, "%s", msg);
    } else {
      trnc_diag_add(L->d, TRNC_SEV_ERROR, st, NULL, NULL, "%s", msg);
    }
    L->status = st;
  }
  return st;
}

int64_t lw_esize(trnc_dtype dt) { return (int64_t)trnc_nc_dtype_size(dt); }

trnc_dtype lw_device_dtype(trnc_dtype dt) {
  switch (dt) {
    case TRNC_I64: return TRNC_I32;
    case TRNC_F64: return TRNC_F32;
    default: return dt;
  }
}

/* ---- kernels and tiles ---------------------------------------------------- */

trnc_status lw_kernel_begin(lw *L, const char *name) {
  char nm[96];
  size_t k = trnc_nc_program_kernel_count(L->prog);
  snprintf(nm, sizeof nm, "k%zu_%s", k, name ? name : "kernel");
  for (char *c = nm; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '.'))
      *c = '_';
  int idx = trnc_nc_program_add_kernel(L->prog, nm, LW_QUEUES);
  if (idx < 0) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory adding a kernel");
  L->kernel = idx;
  memset(L->qcount, 0, sizeof L->qcount);
  L->sbuf_used = 0;
  L->psum_used = 0;
  return TRNC_OK;
}

static lw_tile *new_tile(lw *L, uint8_t mem, int64_t offset, int64_t bytes) {
  lw_tile *t = trnc_arena_alloc(&L->arena, sizeof *t);
  if (!t) {
    lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory allocating a tile");
    return NULL;
  }
  t->mem = mem;
  t->partitions = L->target->partitions;
  t->offset = offset;
  t->bytes = bytes;
  return t;
}

lw_tile *lw_sbuf(lw *L, int64_t bytes) {
  bytes = (bytes + 63) & ~(int64_t)63;
  if (L->sbuf_used + bytes > L->target->sbuf_bytes_per_partition) {
    lw_fail(L, NULL, TRNC_ERR_INTERNAL,
            "kernel needs more than %lld bytes of SBUF per partition (emitter tiling bug)",
            (long long)L->target->sbuf_bytes_per_partition);
    return NULL;
  }
  lw_tile *t = new_tile(L, TRNC_NC_MEM_SBUF, L->sbuf_used, bytes);
  L->sbuf_used += bytes;
  if (L->sbuf_used > L->sbuf_peak) L->sbuf_peak = L->sbuf_used;
  return t;
}

lw_tile *lw_psum(lw *L, int64_t bytes) {
  int64_t bank = L->target->psum_bank_bytes;
  bytes = (bytes + 3) & ~(int64_t)3;
  int64_t off = L->psum_used;
  if (bytes <= bank && off / bank != (off + bytes - 1) / bank) off = (off / bank + 1) * bank;
  if (off + bytes > L->target->psum_bytes_per_partition) {
    lw_fail(L, NULL, TRNC_ERR_INTERNAL, "kernel needs more PSUM than the %lld bytes per partition",
            (long long)L->target->psum_bytes_per_partition);
    return NULL;
  }
  lw_tile *t = new_tile(L, TRNC_NC_MEM_PSUM, off, bytes);
  L->psum_used = off + bytes;
  if (L->psum_used > L->psum_peak) L->psum_peak = L->psum_used;
  return t;
}

trnc_status lw_pool_init(lw *L, lw_pool *pool, uint8_t mem, int64_t bytes, int n) {
  pool->tiles = trnc_arena_array(&L->arena, (size_t)n, sizeof(lw_tile));
  if (!pool->tiles) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory allocating a pool");
  pool->n = n;
  pool->next = 0;
  for (int i = 0; i < n; i++) {
    lw_tile *t = mem == TRNC_NC_MEM_PSUM ? lw_psum(L, bytes) : lw_sbuf(L, bytes);
    if (!t) return L->status;
    pool->tiles[i] = *t;
  }
  return TRNC_OK;
}

trnc_nc_instr lw_instr(int op, int engine) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  in.op = (uint8_t)op;
  in.engine = (uint8_t)engine;
  return in;
}

lw_tile *lw_pool_next(lw_pool *pool) {
  lw_tile *t = &pool->tiles[pool->next];
  pool->next = (pool->next + 1) % pool->n;
  return t;
}

trnc_nc_ap lw_tile_ap_strided(const lw_tile *t, int np, int64_t byte_off, trnc_dtype dt,
                              int nfree, const trnc_nc_dim *free) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = t->mem;
  ap.dtype = (uint8_t)dt;
  ap.start_partition = 0;
  ap.partitions = np;
  ap.offset = t->offset + byte_off;
  ap.nfree = (uint8_t)nfree;
  for (int i = 0; i < nfree; i++) ap.free[i] = free[i];
  return ap;
}

trnc_nc_ap lw_tile_ap(const lw_tile *t, int np, int64_t byte_off, trnc_dtype dt, int nfree,
                      const int64_t *counts) {
  trnc_nc_dim free[TRNC_NC_MAX_FREE];
  int64_t stride = 1;
  for (int i = nfree - 1; i >= 0; i--) {
    free[i].stride = stride;
    free[i].count = counts[i];
    stride *= counts[i];
  }
  return lw_tile_ap_strided(t, np, byte_off, dt, nfree, free);
}

int lw_dma_queue(lw *L) {
  int nq = L->target->dma_queues < TRNC_NC_NUM_DMA_QUEUES ? L->target->dma_queues
                                                           : TRNC_NC_NUM_DMA_QUEUES;
  int q = TRNC_NC_DMA0 + L->next_dma % nq;
  L->next_dma++;
  return q;
}

int lw_dma_queue_dir(lw *L, bool to_hbm) {
  int nq = L->target->dma_queues < TRNC_NC_NUM_DMA_QUEUES ? L->target->dma_queues
                                                           : TRNC_NC_NUM_DMA_QUEUES;
  if (L->dma_split <= 0 || L->dma_split >= nq) return lw_dma_queue(L);
  int lo = to_hbm ? L->dma_split : 0, n = to_hbm ? nq - L->dma_split : L->dma_split;
  return TRNC_NC_DMA0 + lo + L->next_dma_dir[to_hbm]++ % n;
}

/* ---- synchronization -------------------------------------------------------- */

static void need(uint32_t *waits, int q, uint32_t v) {
  if (v > waits[q]) waits[q] = v;
}

trnc_status lw_emit(lw *L, trnc_nc_instr *in, lw_tile *const *reads, int nreads,
                    lw_tile *const *writes, int nwrites) {
  if (L->status) return L->status;
  int q = in->engine;
  uint32_t waits[LW_QUEUES] = {0};
  for (int i = 0; i < nreads; i++) {
    const lw_tile *t = reads[i];
    for (int r = 0; r < LW_QUEUES; r++)
      if (r != q && t->writer_count[r]) need(waits, r, t->writer_count[r]);
  }
  for (int i = 0; i < nwrites; i++) {
    const lw_tile *t = writes[i];
    for (int r = 0; r < LW_QUEUES; r++) {
      if (r == q) continue;
      if (t->writer_count[r]) need(waits, r, t->writer_count[r]);
      if (t->reader_count[r]) need(waits, r, t->reader_count[r]);
    }
  }
  /* Up to TRNC_NC_MAX_WAIT waits ride on the instruction; more go on NOPs
   * issued just before it on the same (in-order) queue. */
  int pending[LW_QUEUES], np = 0;
  for (int r = 0; r < LW_QUEUES; r++)
    if (waits[r]) pending[np++] = r;
  while (np > TRNC_NC_MAX_WAIT) {
    trnc_nc_instr nop;
    memset(&nop, 0, sizeof nop);
    nop.op = TRNC_NC_OP_NOP;
    nop.engine = (uint8_t)q;
    for (int k = 0; k < TRNC_NC_MAX_WAIT; k++) {
      int r = pending[--np];
      nop.wait[nop.nwait].sem = (uint16_t)r;
      nop.wait[nop.nwait].value = waits[r];
      nop.nwait++;
    }
    nop.nsignal = 1;
    nop.signal[0] = (uint16_t)q;
    if (trnc_nc_kernel_append(L->prog, (size_t)L->kernel, &nop))
      return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory emitting");
    L->qcount[q]++;
  }
  in->nwait = 0;
  for (int k = 0; k < np; k++) {
    in->wait[k].sem = (uint16_t)pending[k];
    in->wait[k].value = waits[pending[k]];
    in->nwait++;
  }
  in->nsignal = 1;
  in->signal[0] = (uint16_t)q;
  if (trnc_nc_kernel_append(L->prog, (size_t)L->kernel, in))
    return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory emitting");
  uint32_t c = ++L->qcount[q];
  for (int i = 0; i < nreads; i++) reads[i]->reader_count[q] = c;
  for (int i = 0; i < nwrites; i++) {
    lw_tile *t = writes[i];
    memset(t->writer_count, 0, sizeof t->writer_count);
    memset(t->reader_count, 0, sizeof t->reader_count);
    t->writer_count[q] = c;
  }
  return TRNC_OK;
}

trnc_status lw_emit_split(lw *L, trnc_nc_instr *ins, int n, lw_tile *const *reads, int nreads,
                          lw_tile *w) {
  lw_tile before = *w;
  uint32_t writers[LW_QUEUES] = {0};
  for (int i = 0; i < n; i++) {
    *w = before; /* each part waits only for what came before the group */
    trnc_status st = lw_emit(L, &ins[i], reads, nreads, &w, 1);
    if (st) return st;
    for (int r = 0; r < LW_QUEUES; r++)
      if (w->writer_count[r]) writers[r] = w->writer_count[r];
  }
  memcpy(w->writer_count, writers, sizeof writers);
  memset(w->reader_count, 0, sizeof w->reader_count);
  return TRNC_OK;
}

/* A DMA moves at most one queue's bandwidth ([dma] in target.c: 23 B/ns per
 * engine on NC-v3), so a large tile is split by partition rows over several
 * queues, each part large enough to amortize the per-DMA fixed cost. */
#define DMA_PART_BYTES (8 * 1024)
#define DMA_MAX_PARTS 8

trnc_status lw_dma_parts(lw *L, lw_tile *t, const trnc_nc_ap *tile_aps, const trnc_nc_ap *hbm_aps, int n,
                         bool to_hbm) {
  trnc_nc_instr ins[LW_DMA_MAX_PARTS];
  if (n < 1 || n > LW_DMA_MAX_PARTS) return lw_fail(L, NULL, TRNC_ERR_INTERNAL, "DMA of %d parts", n);
  for (int i = 0; i < n; i++) {
    trnc_nc_instr *in = &ins[i];
    memset(in, 0, sizeof *in);
    in->op = TRNC_NC_OP_DMA_COPY;
    in->engine = (uint8_t)lw_dma_queue_dir(L, to_hbm);
    in->mode = TRNC_NC_DMA_DIRECT;
    in->dst = to_hbm ? hbm_aps[i] : tile_aps[i];
    in->src[0] = to_hbm ? tile_aps[i] : hbm_aps[i];
  }
  if (!to_hbm) return n == 1 ? lw_emit(L, &ins[0], NULL, 0, &t, 1) : lw_emit_split(L, ins, n, NULL, 0, t);
  for (int i = 0; i < n; i++) {
    trnc_status st = lw_emit(L, &ins[i], &t, 1, NULL, 0);
    if (st) return st;
  }
  return TRNC_OK;
}


trnc_status lw_dma(lw *L, lw_tile *t, trnc_nc_ap tile_ap, trnc_nc_ap hbm_ap, bool to_hbm) {
  int64_t bytes = (int64_t)tile_ap.partitions * trnc_nc_ap_free_elems(&tile_ap) * lw_esize(tile_ap.dtype);
  int parts = (int)(bytes / DMA_PART_BYTES);
  if (parts > DMA_MAX_PARTS) parts = DMA_MAX_PARTS;
  if (parts > tile_ap.partitions) parts = tile_ap.partitions;
  /* rows map one to one: same partition count and row length; a store
   * never splits rows that overlap in HBM (partition stride 0) */
  if (hbm_ap.partitions != tile_ap.partitions ||
      trnc_nc_ap_free_elems(&hbm_ap) != trnc_nc_ap_free_elems(&tile_ap) || (to_hbm && !hbm_ap.partition_stride))
    parts = 1;
  if (parts < 1) parts = 1;
  trnc_nc_ap ta[DMA_MAX_PARTS], ha[DMA_MAX_PARTS];
  int rows = tile_ap.partitions;
  for (int i = 0, p0 = 0; i < parts; i++) {
    int np = rows / parts + (i < rows % parts);
    ta[i] = tile_ap;
    ha[i] = hbm_ap;
    ta[i].start_partition += p0;
    ta[i].partitions = ha[i].partitions = np;
    ha[i].offset += p0 * ha[i].partition_stride * lw_esize(ha[i].dtype);
    p0 += np;
  }
  return lw_dma_parts(L, t, ta, ha, parts, to_hbm);
}

/* ---- iteration spaces ---------------------------------------------------------- */

int lw_space_add(lw_space *s, const lw_tv *tv, int r, const int64_t *shape) {
  int op = s->nops++;
  if (s->rank == 0 && op == 0) {
    s->rank = r;
    for (int i = 0; i < r; i++) s->size[i] = shape[i];
  }
  s->base[op] = tv->t.offset;
  for (int i = 0; i < s->rank; i++) {
    int ti = i - (s->rank - tv->t.rank);
    s->stride[op][i] = (ti < 0 || tv->t.shape[ti] == 1) ? 0 : tv->t.stride[ti];
  }
  return op;
}

void lw_space_order(lw_space *s, int op) {
  /* insertion sort, stable: larger |stride| of operand op goes outside */
  for (int i = 1; i < s->rank; i++) {
    for (int j = i; j > 0; j--) {
      int64_t a = s->stride[op][j - 1], b = s->stride[op][j];
      if ((a < 0 ? -a : a) >= (b < 0 ? -b : b)) break;
      int64_t t = s->size[j];
      s->size[j] = s->size[j - 1];
      s->size[j - 1] = t;
      for (int o = 0; o < s->nops; o++) {
        t = s->stride[o][j];
        s->stride[o][j] = s->stride[o][j - 1];
        s->stride[o][j - 1] = t;
      }
    }
  }
}

bool lw_space_unique_writes(lw_space *s, int op) {
  for (int i = 0; i < s->rank; i++) {
    if (s->size[i] <= 1 || s->stride[op][i] != 0) continue;
    for (int o = 0; o < s->nops; o++)
      if (s->stride[o][i] != 0) return false;
    s->size[i] = 1;
  }
  return true;
}

void lw_space_coalesce(lw_space *s) {
  /* drop size-1 dims */
  int w = 0;
  for (int i = 0; i < s->rank; i++) {
    if (s->size[i] == 1) continue;
    s->size[w] = s->size[i];
    for (int o = 0; o < s->nops; o++) s->stride[o][w] = s->stride[o][i];
    w++;
  }
  s->rank = w;
  /* merge dim i into i+1 when every operand is contiguous across them */
  for (int i = s->rank - 2; i >= 0; i--) {
    bool ok = true;
    for (int o = 0; o < s->nops && ok; o++)
      ok = s->stride[o][i] == s->stride[o][i + 1] * s->size[i + 1];
    if (!ok) continue;
    s->size[i] *= s->size[i + 1];
    for (int o = 0; o < s->nops; o++) s->stride[o][i] = s->stride[o][i + 1];
    for (int j = i + 1; j < s->rank - 1; j++) {
      s->size[j] = s->size[j + 1];
      for (int o = 0; o < s->nops; o++) s->stride[o][j] = s->stride[o][j + 1];
    }
    s->rank--;
  }
}

int64_t lw_tile_free_elems(const lw_tile_pos *tp) {
  int64_t n = 1;
  for (int i = 0; i < tp->nfree; i++) n *= tp->nf[i];
  return n;
}

trnc_nc_ap lw_hbm_dims(int32_t buffer, trnc_dtype dt, int64_t off, int64_t np, int64_t pstride, int nf,
                       const trnc_nc_dim *f) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)dt;
  ap.buffer = buffer;
  ap.offset = off * lw_esize(dt);
  ap.partitions = (int32_t)np;
  ap.partition_stride = np > 1 ? pstride : 0;
  int k = 0;
  for (int i = 0; i < nf; i++) {
    if (f[i].count == 1) continue;
    if (k > 0 && ap.free[k - 1].stride == f[i].stride * f[i].count) {
      ap.free[k - 1].stride = f[i].stride;
      ap.free[k - 1].count *= f[i].count;
      continue;
    }
    ap.free[k++] = f[i];
  }
  if (k == 0) ap.free[k++] = (trnc_nc_dim){1, 1};
  ap.nfree = (uint8_t)k;
  return ap;
}

trnc_nc_ap lw_hbm_ap(const lw_space *s, int op, int32_t buffer, trnc_dtype dt,
                     const lw_tile_pos *tp) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)dt;
  ap.buffer = buffer;
  int64_t off = s->base[op];
  for (int i = 0; i < s->rank; i++) off += tp->idx[i] * s->stride[op][i];
  if (tp->pdim >= 0) {
    off += tp->p0 * s->stride[op][tp->pdim];
    ap.partition_stride = s->stride[op][tp->pdim];
    ap.partitions = (int32_t)tp->np;
  } else {
    ap.partitions = 1;
  }
  ap.nfree = (uint8_t)tp->nfree;
  for (int i = 0; i < tp->nfree; i++) {
    off += tp->f0[i] * s->stride[op][tp->fdim[i]];
    ap.free[i].stride = s->stride[op][tp->fdim[i]];
    ap.free[i].count = tp->nf[i];
  }
  ap.offset = off * lw_esize(dt);
  return ap;
}

/* Recursively loops over the dims in loop[] (fixing idx), then over
 * partition chunks and innermost-free chunks. */
typedef struct tiler {
  lw *L;
  const lw_space *s;
  lw_tile_fn fn;
  void *ctx;
  int nloop;
  int loop[TRNC_MAX_RANK + 1];
  lw_tile_pos tp;
  int64_t chunk;   /* innermost free chunk */
  int64_t pchunk;  /* partition chunk (<= 128) */
} tiler;

static trnc_status tile_rec(tiler *T, int li) {
  if (li < T->nloop) {
    int d = T->loop[li];
    for (int64_t i = 0; i < T->s->size[d]; i++) {
      T->tp.idx[d] = i;
      trnc_status st = tile_rec(T, li + 1);
      if (st) return st;
    }
    T->tp.idx[d] = 0;
    return TRNC_OK;
  }
  int64_t psize = T->tp.pdim >= 0 ? T->s->size[T->tp.pdim] : 1;
  int last = T->tp.nfree - 1;
  int64_t fsize = last >= 0 ? T->s->size[T->tp.fdim[last]] : 1;
  for (int64_t p0 = 0; p0 < psize; p0 += T->pchunk) {
    T->tp.p0 = p0;
    T->tp.np = psize - p0 < T->pchunk ? psize - p0 : T->pchunk;
    for (int64_t f0 = 0; f0 < fsize; f0 += T->chunk) {
      if (last >= 0) {
        T->tp.f0[last] = f0;
        T->tp.nf[last] = fsize - f0 < T->chunk ? fsize - f0 : T->chunk;
      }
      trnc_status st = T->fn(T->L, T->s, &T->tp, T->ctx);
      if (st) return st;
    }
  }
  return TRNC_OK;
}

trnc_status lw_space_tiles_rows(lw *L, const lw_space *s, int64_t max_free, lw_tile_fn fn, void *ctx) {
  int r = s->rank;
  int64_t P = L->target->partitions;
  if (r < 1 || r > TRNC_MAX_RANK) return lw_space_tiles(L, s, -1, max_free, fn, ctx);
  int64_t n = s->size[r - 1], cols = (n + P - 1) / P, rows = n / cols, rem = n - rows * cols;
  lw_space main = *s;
  main.rank = r + 1;
  main.size[r - 1] = rows;
  main.size[r] = cols;
  for (int o = 0; o < s->nops; o++) {
    main.stride[o][r - 1] = s->stride[o][r - 1] * cols;
    main.stride[o][r] = s->stride[o][r - 1];
  }
  trnc_status st = lw_space_tiles(L, &main, r, max_free, fn, ctx);
  if (st || rem == 0) return st;
  lw_space tail = *s;
  tail.size[r - 1] = rem;
  for (int o = 0; o < s->nops; o++) tail.base[o] = s->base[o] + rows * cols * s->stride[o][r - 1];
  return lw_space_tiles(L, &tail, -1, max_free, fn, ctx);
}

trnc_status lw_space_tiles(lw *L, const lw_space *s, int first_free, int64_t max_free,
                           lw_tile_fn fn, void *ctx) {
  tiler T;
  memset(&T, 0, sizeof T);
  T.L = L;
  T.s = s;
  T.fn = fn;
  T.ctx = ctx;
  T.pchunk = L->target->partitions;
  T.tp.pdim = -1;
  if (s->rank == 0) {
    T.chunk = 1;
    return tile_rec(&T, 0);
  }
  int lo_free;
  if (first_free < 0) {
    /* Partition dim: the largest of the outer dims; a 1-D space puts its
     * only dim on the free axis unless it is large, in which case the
     * caller should have split it (lw_space_split). */
    if (s->rank == 1) {
      lo_free = 0;
    } else {
      int best = 0;
      for (int i = 1; i < s->rank - 1; i++)
        if (s->size[i] > s->size[best]) best = i;
      T.tp.pdim = best;
      lo_free = best + 1;
    }
  } else {
    lo_free = first_free;
    if (first_free > 0) {
      int best = 0;
      for (int i = 1; i < first_free; i++)
        if (s->size[i] > s->size[best]) best = i;
      T.tp.pdim = best;
    }
  }
  /* free dims: [lo_free, rank); keep the innermost 4, loop over the rest */
  int nf = s->rank - lo_free;
  int skip = nf > TRNC_NC_MAX_FREE ? nf - TRNC_NC_MAX_FREE : 0;
  for (int i = 0; i < s->rank; i++) {
    if (i == T.tp.pdim) continue;
    if (i < lo_free || i < lo_free + skip) T.loop[T.nloop++] = i;
  }
  T.tp.nfree = nf - skip;
  int64_t inner = 1;
  for (int k = 0; k < T.tp.nfree; k++) {
    int d = lo_free + skip + k;
    T.tp.fdim[k] = d;
    T.tp.f0[k] = 0;
    T.tp.nf[k] = s->size[d];
    if (k < T.tp.nfree - 1) inner *= s->size[d];
  }
  /* chunk the innermost free dim so a tile stays within max_free elements */
  int64_t last = T.tp.nfree ? s->size[T.tp.fdim[T.tp.nfree - 1]] : 1;
  if (inner > max_free) {
    /* too many outer free elements: loop the outer free dims instead */
    for (int k = 0; k < T.tp.nfree - 1; k++) T.loop[T.nloop++] = T.tp.fdim[k];
    T.tp.fdim[0] = T.tp.fdim[T.tp.nfree - 1];
    T.tp.nf[0] = last;
    T.tp.f0[0] = 0;
    T.tp.nfree = 1;
    inner = 1;
  }
  T.chunk = max_free / inner;
  if (T.chunk < 1) T.chunk = 1;
  if (T.chunk > last) T.chunk = last;
  return tile_rec(&T, 0);
}
