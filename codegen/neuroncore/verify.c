/*
 * verify.c — verifier of NeuronCore hardware limits and of the program's
 * synchronisation (rules listed at trnc_nc_program_verify in
 * include/trnc/neuroncore.h), plus the dependency scheduler shared with the
 * simulator and the cost model.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

#define MAX_RACE_REPORTS 16
#define MAX_UNINIT_REPORTS 16

typedef struct vctx {
  const trnc_nc_program *p;
  trnc_diags *diags;
  size_t k, i;
  size_t errors;
} vctx;

static void verr(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nc_verify_error(trnc_diags *diags, const char *where, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* the instruction or step is the diagnostic's node ("node k#1
   * vector.tensor_copy: ..." when formatted): the message does not repeat it */
  trnc_diag_loc loc = {.node = where};
  trnc_diag_add(diags, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL, "%s", msg);
}

static void verr(vctx *v, const char *fmt, ...) {
  char where[160];
  nc_where(v->p, v->k, v->i, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  nc_verify_error(v->diags, where, fmt, ap);
  va_end(ap);
  v->errors++;
}

static bool is_f8(int dt) { return dt == TRNC_F8E4M3 || dt == TRNC_F8E5M2; }

/* Start-partition rule for compute engines (neuroncore.md, memory model). */
static bool start_aligned(int start, int count) {
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return start % 32 == 0;
}

static const char *mem_name(int m) {
  switch (m) {
    case TRNC_NC_MEM_HBM: return "HBM";
    case TRNC_NC_MEM_SBUF: return "SBUF";
    case TRNC_NC_MEM_PSUM: return "PSUM";
    default: return "none";
  }
}

/* Checks one operand in isolation. Returns false if it is too broken for
 * shape checks. */
static bool check_ap(vctx *v, const trnc_nc_instr *in, int slot) {
  const trnc_nc_ap *ap = nc_slot(in, slot);
  const trnc_nc_target *t = v->p->target;
  const char *sn = nc_slot_names[slot];
  if (ap->mem > TRNC_NC_MEM_PSUM) {
    verr(v, "%s: memory %d is not HBM, SBUF or PSUM", sn, ap->mem);
    return false;
  }
  if (!trnc_nc_dtype_supported((trnc_dtype)ap->dtype)) {
    verr(v, "%s: dtype %d is not a NeuronCore type", sn, ap->dtype);
    return false;
  }
  if (ap->nfree > TRNC_NC_MAX_FREE) {
    verr(v, "%s: %d free dims, at most %d", sn, ap->nfree, TRNC_NC_MAX_FREE);
    return false;
  }
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype), lo, hi;
  if (ap->offset > (1LL << 40) || ap->offset < -(1LL << 40)) {
    verr(v, "%s: byte offset %" PRId64 " out of range", sn, ap->offset);
    return false;
  }
  if (!nc_ap_extent(ap, &lo, &hi)) {
    verr(v, "%s: free dims need 1 <= count <= 2^24 and |stride| <= 2^32", sn);
    return false;
  }
  if (ap->partitions < 1 || ap->partitions > (1 << 24)) {
    verr(v, "%s: partition count %d outside 1..2^24", sn, ap->partitions);
    return false;
  }
  int64_t elems = 1;
  for (int d = 0; d < ap->nfree; d++) {
    elems *= ap->free[d].count; /* each count <= 2^24 (checked above) */
    if (elems > (1LL << 31)) {
      verr(v, "%s: more than 2^31 elements per partition", sn);
      return false;
    }
  }
  if (ap->offset % es) verr(v, "%s: byte offset %" PRId64 " not aligned to the %s element size %" PRId64,
                            sn, ap->offset, trnc_nc_dtype_name((trnc_dtype)ap->dtype), es);
  if (ap->mem == TRNC_NC_MEM_HBM) {
    if (ap->buffer < 0 || (size_t)ap->buffer >= v->p->nbufs) {
      verr(v, "%s: HBM buffer index %d out of range (%zu buffers)", sn, ap->buffer, v->p->nbufs);
      return false;
    }
    if (ap->start_partition) verr(v, "%s: HBM access patterns have start partition 0", sn);
    if (ap->partition_stride > (1LL << 32) || ap->partition_stride < -(1LL << 32)) {
      verr(v, "%s: HBM partition stride %" PRId64 " out of range", sn, ap->partition_stride);
      return false;
    }
    int64_t span = ap->partition_stride * (int64_t)(ap->partitions - 1) * es;
    int64_t blo = lo + (span < 0 ? span : 0), bhi = hi + (span > 0 ? span : 0);
    const trnc_nc_buffer *b = &v->p->bufs[ap->buffer];
    if (slot < 2 && b->kind == TRNC_NC_BUF_INPUT)
      verr(v, "%s: writes input buffer '%s' (inputs are read-only)", sn, b->name);
    if (blo < 0 || bhi > b->bytes)
      verr(v, "%s: out of bounds of HBM buffer '%s': bytes [%" PRId64 ", %" PRId64 ") of %" PRId64, sn,
           b->name, blo, bhi, b->bytes);
    return true;
  }
  if (ap->buffer || ap->partition_stride)
    verr(v, "%s: SBUF/PSUM access patterns have no buffer or partition stride", sn);
  if (ap->partitions > t->partitions) {
    verr(v, "%s: partition count %d exceeds %d partitions", sn, ap->partitions, t->partitions);
    return false;
  }
  if (ap->start_partition < 0 || ap->start_partition + ap->partitions > t->partitions) {
    verr(v, "%s: partitions [%d, %d) outside 0..%d", sn, ap->start_partition,
         ap->start_partition + ap->partitions, t->partitions);
    return false;
  }
  if (!nc_is_dma(in->engine) && !start_aligned(ap->start_partition, ap->partitions))
    verr(v, "%s: start partition %d not allowed for %d partitions (>64: 0; 33-64: 0 or 64; <=32: multiple of 32)",
         sn, ap->start_partition, ap->partitions);
  int64_t cap = ap->mem == TRNC_NC_MEM_SBUF ? t->sbuf_bytes_per_partition : t->psum_bytes_per_partition;
  if (lo < 0 || hi > cap)
    verr(v, "%s: bytes [%" PRId64 ", %" PRId64 ") outside %s capacity of %" PRId64 " bytes per partition (%s)",
         sn, lo, hi, mem_name(ap->mem), cap, t->name);
  return true;
}

static bool same_shape(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  return a->partitions == b->partitions && trnc_nc_ap_free_elems(a) == trnc_nc_ap_free_elems(b);
}

static void need_shape(vctx *v, const trnc_nc_instr *in, int sa, int sb) {
  const trnc_nc_ap *a = nc_slot(in, sa), *b = nc_slot(in, sb);
  if (!same_shape(a, b))
    verr(v, "%s is [%d, %" PRId64 "] but %s is [%d, %" PRId64 "] (partitions, free elements must match)",
         nc_slot_names[sa], a->partitions, trnc_nc_ap_free_elems(a), nc_slot_names[sb], b->partitions,
         trnc_nc_ap_free_elems(b));
}

static void need_per_partition(vctx *v, const trnc_nc_instr *in, int s, const char *what) {
  const trnc_nc_ap *a = nc_slot(in, s);
  if (a->mem == TRNC_NC_MEM_NONE) return;
  if (a->partitions != in->dst.partitions || trnc_nc_ap_free_elems(a) != 1 || a->dtype != TRNC_F32)
    verr(v, "%s (%s) must be f32 [%d, 1] (one value per partition)", nc_slot_names[s], what,
         in->dst.partitions);
}

/* Bitvec ALU ops (nki.isa bitvec operators) treat operands as bit patterns:
 * the destination and the first nslots - 2 sources must be integers. */
static void need_int_operands(vctx *v, const trnc_nc_instr *in, int nslots) {
  if (!trnc_nc_alu_is_bitvec(in->alu0) && !(in->op == TRNC_NC_OP_TENSOR_SCALAR && trnc_nc_alu_is_bitvec(in->alu1)))
    return;
  for (int s = 0; s < nslots; s++) {
    const trnc_nc_ap *ap = nc_slot(in, s);
    if (s == 1 || !ap->mem) continue;
    int dt = ap->dtype;
    if (dt != TRNC_I32 && dt != TRNC_I16 && dt != TRNC_I8 && dt != TRNC_U8 && dt != TRNC_BOOL)
      verr(v, "%s: bitvec op %s needs integer operands, not %s", nc_slot_names[s],
           trnc_nc_alu_name(in->alu0), trnc_nc_dtype_name((trnc_dtype)dt));
  }
}

static void check_bank(vctx *v, const trnc_nc_ap *d) {
  const trnc_nc_target *t = v->p->target;
  int64_t lo, hi;
  if (d->mem != TRNC_NC_MEM_PSUM || !nc_ap_extent(d, &lo, &hi) || lo < 0) return;
  if (lo / t->psum_bank_bytes != (hi - 1) / t->psum_bank_bytes)
    verr(v, "dst: PSUM bytes [%" PRId64 ", %" PRId64 ") cross a bank boundary (banks are %" PRId64
         " bytes per partition)", lo, hi, t->psum_bank_bytes);
}

static void check_instr(vctx *v, const trnc_nc_instr *in) {
  const trnc_nc_target *t = v->p->target;
  if (in->op >= TRNC_NC_OP_COUNT) {
    verr(v, "opcode %d out of range", in->op);
    return;
  }
  if (in->engine >= TRNC_NC_ENGINE_COUNT) {
    verr(v, "engine %d out of range", in->engine);
    return;
  }
  const nc_opinfo *oi = &nc_opinfo_table[in->op];
  if (!(oi->engines & (1u << in->engine))) {
    char allowed[256] = "";
    for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++)
      if (oi->engines & (1u << e)) {
        if (nc_is_dma(e)) {
          if (e == TRNC_NC_DMA0) strcat(allowed, " dma0..dma15");
        } else {
          strcat(allowed, " ");
          strcat(allowed, trnc_nc_engine_name(e));
        }
      }
    verr(v, "%s may not run on %s (allowed:%s)", oi->name, trnc_nc_engine_name(in->engine), allowed);
  }
  bool ok = true;
  for (int s = 0; s < 5; s++) {
    const trnc_nc_ap *ap = nc_slot(in, s);
    bool present = ap->mem != TRNC_NC_MEM_NONE;
    if (!present && (oi->required & (1u << s))) {
      verr(v, "missing operand %s", nc_slot_names[s]);
      ok = false;
    } else if (present && !(oi->slots & (1u << s))) {
      verr(v, "%s takes no operand %s", oi->name, nc_slot_names[s]);
      ok = false;
    } else if (present) {
      ok = check_ap(v, in, s) && ok;
      /* engine / memory rules */
      if (ap->mem == TRNC_NC_MEM_PSUM && in->engine == TRNC_NC_GPSIMD)
        verr(v, "%s: GpSimd cannot access PSUM", nc_slot_names[s]);
      if (ap->mem == TRNC_NC_MEM_PSUM && nc_is_dma(in->engine))
        verr(v, "%s: DMA cannot access PSUM (copy PSUM to SBUF on VectorE/ScalarE first)", nc_slot_names[s]);
      if (ap->mem == TRNC_NC_MEM_HBM && !nc_is_dma(in->engine))
        verr(v, "%s: only DMA accesses HBM (%s reads and writes SBUF/PSUM)", nc_slot_names[s],
             trnc_nc_engine_name(in->engine));
      if (in->engine == TRNC_NC_TENSOR && s >= 2 && ap->mem != TRNC_NC_MEM_SBUF)
        verr(v, "%s: TensorE reads its inputs from SBUF only", nc_slot_names[s]);
      if (in->engine == TRNC_NC_TENSOR && s == 0 && ap->mem != TRNC_NC_MEM_PSUM)
        verr(v, "dst: TensorE writes PSUM only");
    }
  }
  if (!ok) return;
  if ((oi->params & NC_PAR_ALU0) && in->alu0 >= TRNC_NC_ALU_COUNT) verr(v, "ALU op %d out of range", in->alu0);
  if ((oi->params & NC_PAR_ALU1) && in->alu1 >= TRNC_NC_ALU_COUNT) verr(v, "ALU op1 %d out of range", in->alu1);
  const trnc_nc_ap *d = &in->dst, *a = &in->src[0], *b = &in->src[1];
  switch ((trnc_nc_opcode)in->op) {
    case TRNC_NC_OP_NOP:
      break;
    case TRNC_NC_OP_DMA_COPY:
      if (in->mode == TRNC_NC_DMA_DIRECT) {
        if (b->mem) verr(v, "src1 (index tile) only with mode=gather or mode=scatter");
        if (nc_ap_elems(d) != nc_ap_elems(a))
          verr(v, "dst has %" PRId64 " elements but src0 has %" PRId64, nc_ap_elems(d), nc_ap_elems(a));
      } else if (in->mode == TRNC_NC_DMA_GATHER || in->mode == TRNC_NC_DMA_SCATTER) {
        bool gather = in->mode == TRNC_NC_DMA_GATHER;
        const trnc_nc_ap *table = gather ? a : d, *tile = gather ? d : a;
        if (!b->mem || b->mem != TRNC_NC_MEM_SBUF || b->dtype != TRNC_I32 || b->partitions != tile->partitions ||
            trnc_nc_ap_free_elems(b) != 1)
          verr(v, "src1 (index tile) must be SBUF i32 [%d, 1]", tile->partitions);
        if (table->mem != TRNC_NC_MEM_HBM)
          verr(v, "%s: the indexed table of a %s must be in HBM", gather ? "src0" : "dst",
               gather ? "gather" : "scatter");
        if (tile->mem != TRNC_NC_MEM_SBUF) verr(v, "the %s tile must be in SBUF", gather ? "dst" : "src0");
        if (trnc_nc_ap_free_elems(table) != trnc_nc_ap_free_elems(tile))
          verr(v, "row sizes differ: table row %" PRId64 " elements, tile row %" PRId64,
               trnc_nc_ap_free_elems(table), trnc_nc_ap_free_elems(tile));
      } else if (in->mode == TRNC_NC_DMA_TRANSPOSE) {
        if (b->mem) verr(v, "src1 only with mode=gather or mode=scatter");
        if (d->partitions != trnc_nc_ap_free_elems(a) || trnc_nc_ap_free_elems(d) != a->partitions)
          verr(v, "transpose: dst [%d, %" PRId64 "] is not src0 [%d, %" PRId64 "] transposed", d->partitions,
               trnc_nc_ap_free_elems(d), a->partitions, trnc_nc_ap_free_elems(a));
      } else {
        verr(v, "DMA mode %d out of range", in->mode);
      }
      break;
    case TRNC_NC_OP_MATMUL: {
      int64_t K = a->partitions, M = trnc_nc_ap_free_elems(a), N = trnc_nc_ap_free_elems(b);
      if (K > t->mm_max_k) verr(v, "contraction K=%" PRId64 " exceeds %d (%s)", K, t->mm_max_k, t->name);
      if (M > t->mm_max_m)
        verr(v, "stationary free size M=%" PRId64 " exceeds %d (%s)", M, t->mm_max_m, t->name);
      if (N > t->mm_max_n) verr(v, "moving free size N=%" PRId64 " exceeds %d (%s)", N, t->mm_max_n, t->name);
      if (b->partitions != K || b->start_partition != a->start_partition)
        verr(v, "stationary partitions [%d, +%d) and moving partitions [%d, +%d) must be the same (K)",
             a->start_partition, a->partitions, b->start_partition, b->partitions);
      if (d->partitions != M || trnc_nc_ap_free_elems(d) != N)
        verr(v, "dst is [%d, %" PRId64 "], expected [M=%" PRId64 ", N=%" PRId64 "]", d->partitions,
             trnc_nc_ap_free_elems(d), M, N);
      if (d->dtype != TRNC_F32) verr(v, "dst: matmul accumulates fp32 in PSUM, dst dtype must be f32");
      bool pair = (a->dtype == b->dtype && (a->dtype == TRNC_F32 || a->dtype == TRNC_BF16 || a->dtype == TRNC_F16)) ||
                  (is_f8(a->dtype) && is_f8(b->dtype));
      if (!pair)
        verr(v, "dtype pairing %s x %s not supported (fp32 x fp32, bf16 x bf16, fp16 x fp16, fp8 x fp8)",
             trnc_nc_dtype_name((trnc_dtype)a->dtype), trnc_nc_dtype_name((trnc_dtype)b->dtype));
      if (in->mode > 1) verr(v, "acc must be 0 or 1");
      check_bank(v, d);
      break;
    }
    case TRNC_NC_OP_TRANSPOSE: {
      int64_t F = trnc_nc_ap_free_elems(a);
      if (a->partitions > t->pe_rows || F > t->pe_cols)
        verr(v, "transpose of [%d, %" PRId64 "] exceeds %dx%d", a->partitions, F, t->pe_rows, t->pe_cols);
      if (d->partitions != F || trnc_nc_ap_free_elems(d) != a->partitions)
        verr(v, "dst [%d, %" PRId64 "] is not src0 [%d, %" PRId64 "] transposed", d->partitions,
             trnc_nc_ap_free_elems(d), a->partitions, F);
      if (d->dtype != TRNC_F32 && d->dtype != a->dtype) verr(v, "dst dtype must be f32 or the src0 dtype");
      check_bank(v, d);
      break;
    }
    case TRNC_NC_OP_ACTIVATION:
      need_shape(v, in, 0, 2);
      need_per_partition(v, in, 3, "bias");
      need_per_partition(v, in, 1, "add-reduce result");
      if (in->act >= TRNC_NC_ACT_COUNT) verr(v, "activation function %d out of range", in->act);
      break;
    case TRNC_NC_OP_TENSOR_TENSOR:
      need_shape(v, in, 0, 2);
      need_shape(v, in, 0, 3);
      if (a->mem == TRNC_NC_MEM_PSUM && b->mem == TRNC_NC_MEM_PSUM)
        verr(v, "src0 and src1 may not both be in PSUM");
      need_int_operands(v, in, 3);
      if (in->engine == TRNC_NC_GPSIMD && d->dtype == TRNC_I32 && a->dtype == TRNC_I32 &&
          b->dtype == TRNC_I32 && !trnc_nc_alu_has_int_form(in->alu0))
        verr(v, "int32 tensor_tensor on GpSimd computes in integers: %s has no integer form",
             trnc_nc_alu_name(in->alu0));
      break;
    case TRNC_NC_OP_TENSOR_SCALAR:
      need_shape(v, in, 0, 2);
      if (trnc_nc_alu_is_bitvec(in->alu0) || trnc_nc_alu_is_bitvec(in->alu1)) {
        /* nki.isa.tensor_scalar: both ops bitvec or both arithmetic; bitvec
         * runs on VectorE with integer operands */
        if (in->alu1 != TRNC_NC_ALU_BYPASS &&
            trnc_nc_alu_is_bitvec(in->alu0) != trnc_nc_alu_is_bitvec(in->alu1))
          verr(v, "tensor_scalar: op0 and op1 must both be bitvec or both arithmetic");
        if (in->engine != TRNC_NC_VECTOR) verr(v, "tensor_scalar with bitvec ops runs on VectorE");
        need_int_operands(v, in, 5);
      } else {
        need_per_partition(v, in, 3, "per-partition s0");
        need_per_partition(v, in, 4, "per-partition s1");
      }
      break;
    case TRNC_NC_OP_TENSOR_REDUCE: {
      if (in->mode < 1 || in->mode > a->nfree) {
        verr(v, "axes=%d: must reduce 1..%d innermost free dims of src0", in->mode, a->nfree);
        break;
      }
      int64_t keep = 1;
      for (int i = 0; i < a->nfree - in->mode; i++) keep *= a->free[i].count;
      if (d->partitions != a->partitions || trnc_nc_ap_free_elems(d) != keep)
        verr(v, "dst is [%d, %" PRId64 "], expected [%d, %" PRId64 "] (free axes only, never partitions)",
             d->partitions, trnc_nc_ap_free_elems(d), a->partitions, keep);
      if (in->alu0 != TRNC_NC_ALU_ADD && in->alu0 != TRNC_NC_ALU_MUL && in->alu0 != TRNC_NC_ALU_MAX &&
          in->alu0 != TRNC_NC_ALU_MIN && in->alu0 != TRNC_NC_ALU_ABSMAX)
        verr(v, "reduce op %s not supported (add, mul, max, min, absmax)", trnc_nc_alu_name(in->alu0));
      break;
    }
    case TRNC_NC_OP_TENSOR_COPY:
      need_shape(v, in, 0, 2);
      break;
    case TRNC_NC_OP_MEMSET:
    case TRNC_NC_OP_IOTA:
      break;
    case TRNC_NC_OP_SELECT:
      need_shape(v, in, 0, 2);
      need_shape(v, in, 0, 3);
      need_shape(v, in, 0, 4);
      break;
    case TRNC_NC_OP_AFFINE_SELECT:
      need_shape(v, in, 0, 2);
      if (in->alu0 < TRNC_NC_ALU_EQ || in->alu0 > TRNC_NC_ALU_GE)
        verr(v, "affine_select op must be a comparison (eq, ne, lt, le, gt, ge)");
      break;
    case TRNC_NC_OP_COUNT:
      break;
  }
}

/* ---- dependency schedule ---------------------------------------------------- */

void nc_schedule_free(nc_schedule *s) {
  free(s->order);
  free(s->producer);
  memset(s, 0, sizeof *s);
}

trnc_status nc_schedule_build(const trnc_nc_program *p, size_t k, nc_schedule *s, trnc_diags *diags) {
  memset(s, 0, sizeof *s);
  const nc_kernel *kn = &p->kernels[k];
  size_t n = kn->n;
  vctx v = {p, diags, k, 0, 0};
  size_t nsem = kn->nsem > 0 ? (size_t)kn->nsem : 0;
  s->n = n;
  s->order = malloc((n ? n : 1) * sizeof *s->order);
  s->producer = malloc((n ? n : 1) * TRNC_NC_MAX_WAIT * sizeof *s->producer);
  int *sem_engine = malloc((nsem ? nsem : 1) * sizeof *sem_engine);
  size_t *sem_count = calloc((nsem ? nsem : 1), sizeof *sem_count);
  size_t **sem_list = calloc((nsem ? nsem : 1), sizeof *sem_list);
  size_t *qpos = calloc(TRNC_NC_ENGINE_COUNT, sizeof *qpos);
  size_t *queue = malloc((n ? n : 1) * sizeof *queue);     /* instrs grouped by engine */
  size_t qstart[TRNC_NC_ENGINE_COUNT + 1] = {0};
  bool *done = calloc(n ? n : 1, 1);
  trnc_status st = TRNC_ERR_NOMEM;
  if (!s->order || !s->producer || !sem_engine || !sem_count || !sem_list || !qpos || !queue || !done) {
    trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < nsem; i++) sem_engine[i] = -1;
  /* semaphore checks and signal lists */
  for (size_t i = 0; i < n; i++) {
    const trnc_nc_instr *in = &kn->instrs[i];
    v.i = i;
    if (in->engine >= TRNC_NC_ENGINE_COUNT || in->nwait > TRNC_NC_MAX_WAIT || in->nsignal > TRNC_NC_MAX_SIGNAL) {
      verr(&v, "engine or wait/signal count out of range");
      continue;
    }
    for (int w = 0; w < in->nwait; w++)
      if (in->wait[w].sem >= nsem) verr(&v, "waits on semaphore s%u, kernel has %zu", in->wait[w].sem, nsem);
    for (int j = 0; j < in->nsignal; j++) {
      int sm = in->signal[j];
      if ((size_t)sm >= nsem) {
        verr(&v, "signals semaphore s%d, kernel has %zu", sm, nsem);
        continue;
      }
      if (j == 1 && in->signal[0] == in->signal[1]) verr(&v, "signals s%d twice", sm);
      if (sem_engine[sm] < 0) sem_engine[sm] = in->engine;
      else if (sem_engine[sm] != in->engine)
        verr(&v, "semaphore s%d is signalled by %s and %s (one queue per semaphore)", sm,
             trnc_nc_engine_name(sem_engine[sm]), trnc_nc_engine_name(in->engine));
      sem_count[sm]++;
    }
  }
  if (v.errors) { st = TRNC_ERR_INVALID_GRAPH; goto out; }
  for (size_t i = 0; i < nsem; i++)
    if (sem_count[i] && !(sem_list[i] = malloc(sem_count[i] * sizeof **sem_list))) {
      trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
      goto out;
    }
  memset(sem_count, 0, (nsem ? nsem : 1) * sizeof *sem_count);
  for (size_t i = 0; i < n; i++) {
    const trnc_nc_instr *in = &kn->instrs[i];
    for (int j = 0; j < in->nsignal; j++) sem_list[in->signal[j]][sem_count[in->signal[j]]++] = i;
    qstart[in->engine + 1]++;
  }
  for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) qstart[e + 1] += qstart[e];
  {
    size_t fill[TRNC_NC_ENGINE_COUNT];
    memcpy(fill, qstart, sizeof fill);
    for (size_t i = 0; i < n; i++) queue[fill[kn->instrs[i].engine]++] = i;
  }
  for (size_t i = 0; i < n; i++) {
    const trnc_nc_instr *in = &kn->instrs[i];
    v.i = i;
    for (int w = 0; w < TRNC_NC_MAX_WAIT; w++) {
      size_t *pr = &s->producer[i * TRNC_NC_MAX_WAIT + w];
      *pr = SIZE_MAX;
      if (w >= in->nwait || in->wait[w].value == 0) continue;
      int sm = in->wait[w].sem;
      if (in->wait[w].value > sem_count[sm]) {
        verr(&v, "waits for s%d>=%u but s%d is signalled only %zu times (deadlock)", sm, in->wait[w].value, sm,
             sem_count[sm]);
        continue;
      }
      *pr = sem_list[sm][in->wait[w].value - 1];
      if (kn->instrs[*pr].engine == in->engine && *pr >= i)
        verr(&v, "waits for s%d>=%u, signalled later by its own queue (deadlock)", sm, in->wait[w].value);
    }
  }
  if (v.errors) { st = TRNC_ERR_INVALID_GRAPH; goto out; }
  /* topological order: among the queue heads whose waits are satisfied,
   * take the one listed first (so unsynchronised code runs in list order) */
  for (size_t emitted = 0; emitted < n; emitted++) {
    size_t best = SIZE_MAX;
    int best_e = -1;
    for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) {
      if (qstart[e] + qpos[e] >= qstart[e + 1]) continue;
      size_t i = queue[qstart[e] + qpos[e]];
      if (i > best) continue;
      bool ready = true;
      for (int w = 0; w < TRNC_NC_MAX_WAIT; w++) {
        size_t pr = s->producer[i * TRNC_NC_MAX_WAIT + w];
        if (pr != SIZE_MAX && !done[pr]) ready = false;
      }
      if (ready) {
        best = i;
        best_e = e;
      }
    }
    if (best_e < 0) {
      for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++)
        if (qstart[e] + qpos[e] < qstart[e + 1]) {
          v.i = queue[qstart[e] + qpos[e]];
          verr(&v, "deadlock: waits on a semaphore whose signal depends on this queue");
          break;
        }
      st = TRNC_ERR_INVALID_GRAPH;
      goto out;
    }
    done[best] = true;
    s->order[emitted] = best;
    qpos[best_e]++;
  }
  st = TRNC_OK;
out:
  for (size_t i = 0; i < nsem && sem_list; i++) free(sem_list[i]);
  free(sem_list);
  free(sem_engine);
  free(sem_count);
  free(qpos);
  free(queue);
  free(done);
  if (st) nc_schedule_free(s);
  return st;
}

/* ---- footprints, races and uninitialised reads ----------------------------------- */

typedef struct footprint {
  int space;        /* -1 none; 0 SBUF; 1 PSUM; 2 scratch; 3+b buffer b */
  int32_t p0, p1;   /* partition range */
  int64_t lo, hi;   /* byte range (bounding box) */
  int64_t base, rlo, rhi, ps, rows; /* HBM: rows at base + r*ps, each [rlo, rhi) */
  const trnc_nc_ap *ap;             /* HBM: the access pattern (exact test) */
  int64_t buf_off;                  /* HBM: byte offset of the buffer in its space */
  bool write;
  int slot;
} footprint;

static void ap_footprint(const trnc_nc_program *p, const trnc_nc_ap *ap, bool write, int slot, footprint *f) {
  int64_t lo, hi;
  f->space = -1;
  if (ap->mem == TRNC_NC_MEM_NONE || !nc_ap_extent(ap, &lo, &hi)) return;
  f->write = write;
  f->slot = slot;
  f->ap = ap;
  if (ap->mem == TRNC_NC_MEM_HBM) {
    const trnc_nc_buffer *b = &p->bufs[ap->buffer];
    f->buf_off = b->kind == TRNC_NC_BUF_INTERNAL ? b->offset : 0;
    int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
    int64_t span = ap->partition_stride * (int64_t)(ap->partitions - 1) * es;
    f->base = b->kind == TRNC_NC_BUF_INTERNAL ? b->offset : 0;
    f->rlo = lo - ap->offset;
    f->rhi = hi - ap->offset;
    f->base += ap->offset;
    f->ps = ap->partition_stride * es;
    f->rows = ap->partitions;
    lo += span < 0 ? span : 0;
    hi += span > 0 ? span : 0;
    if (b->kind == TRNC_NC_BUF_INTERNAL) {
      f->space = 2;
      lo += b->offset;
      hi += b->offset;
    } else {
      f->space = 3 + ap->buffer;
    }
    f->p0 = 0;
    f->p1 = 1;
  } else {
    f->space = ap->mem == TRNC_NC_MEM_SBUF ? 0 : 1;
    f->p0 = ap->start_partition;
    f->p1 = ap->start_partition + ap->partitions;
  }
  f->lo = lo;
  f->hi = hi;
}

/* Footprints of an instruction: up to 6 (dst, dst2, src0..2, dst read by matmul acc). */
static int instr_footprints(const trnc_nc_program *p, const trnc_nc_instr *in, footprint f[6]) {
  int n = 0;
  for (int s = 0; s < 5; s++) {
    ap_footprint(p, nc_slot(in, s), s < 2, s, &f[n]);
    if (f[n].space >= 0) n++;
  }
  if (in->op == TRNC_NC_OP_MATMUL && in->mode == 1) {
    ap_footprint(p, &in->dst, false, 0, &f[n]);
    if (f[n].space >= 0) n++;
  }
  return n;
}

static int64_t floor_div(int64_t a, int64_t b) { /* b > 0 */
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Byte intervals [lo, hi) of the contiguous runs of an HBM access pattern,
 * sorted; at most `cap` (returns -1 when there are more). */
typedef struct run {
  int64_t lo, hi;
} run;

static int run_cmp(const void *x, const void *y) {
  const run *a = x, *b = y;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static int64_t hbm_runs(const footprint *f, run *out, int64_t cap) {
  const trnc_nc_ap *ap = f->ap;
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  int nf = ap->nfree;
  /* the innermost free dim is one run when its stride is 1 */
  int64_t inner_len = 1;
  int loops = nf;
  if (nf > 0 && ap->free[nf - 1].stride == 1) {
    inner_len = ap->free[nf - 1].count;
    loops = nf - 1;
  }
  int64_t total = ap->partitions;
  for (int i = 0; i < loops; i++) {
    if (total > cap / (ap->free[i].count ? ap->free[i].count : 1)) return -1;
    total *= ap->free[i].count;
  }
  if (total > cap) return -1;
  int64_t n = 0, idx[TRNC_NC_MAX_FREE] = {0};
  for (int64_t p = 0; p < ap->partitions; p++) {
    for (;;) {
      int64_t e = p * ap->partition_stride;
      for (int i = 0; i < loops; i++) e += idx[i] * ap->free[i].stride;
      int64_t lo = f->buf_off + ap->offset + e * es, len = inner_len * es;
      out[n].lo = lo;
      out[n].hi = lo + len;
      n++;
      int i = loops - 1;
      for (; i >= 0; i--) {
        if (++idx[i] < ap->free[i].count) break;
        idx[i] = 0;
      }
      if (i < 0) break;
    }
  }
  qsort(out, (size_t)n, sizeof *out, run_cmp);
  return n;
}

/* Exact overlap of two HBM footprints by their runs; -1 if too many runs to
 * enumerate (the caller then keeps the conservative answer). */
static int hbm_exact_overlap(const footprint *a, const footprint *b) {
  enum { CAP = 1 << 14 };
  run *ra = malloc(CAP * sizeof *ra), *rb = malloc(CAP * sizeof *rb);
  int res = -1;
  if (ra && rb) {
    int64_t na = hbm_runs(a, ra, CAP), nb = hbm_runs(b, rb, CAP);
    if (na >= 0 && nb >= 0) {
      res = 0;
      for (int64_t i = 0, j = 0; i < na && j < nb;) {
        if (ra[i].lo < rb[j].hi && rb[j].lo < ra[i].hi && ra[i].hi > ra[i].lo && rb[j].hi > rb[j].lo) {
          res = 1;
          break;
        }
        if (ra[i].hi <= rb[j].hi) i++;
        else j++;
      }
    }
  }
  free(ra);
  free(rb);
  return res;
}

/* Exact overlap of two HBM footprints of the same element size as an integer
 * problem: is there k with sum_t k_t * stride_t = delta, lo_t <= k_t <= hi_t,
 * where the terms are the dims of a (k = index) and of b (k = -index), dims
 * of equal stride merged? A bounded depth-first search, largest stride
 * first, keeping only the k_t for which the inner terms can still reach the
 * remainder. For non-self-overlapping patterns (each stride larger than the
 * span of the smaller ones) it tries one or two values per term. Returns -1
 * when the budget runs out or the dtypes differ (the caller stays
 * conservative). Handles what the run enumeration cannot: a 128-partition
 * transposed tile has 128 x N runs of one element. */
typedef struct lterm {
  int64_t s, lo, hi, reach; /* reach: sum over smaller terms of max|k| * |s| */
} lterm;

static int lattice_dfs(const lterm *t, int n, int i, int64_t d, int64_t *budget) {
  if (i == n) return d == 0;
  if (--*budget < 0) return -1;
  int64_t s = t[i].s, r = t[i].reach;
  /* k with |d - k*s| <= r, s > 0 */
  int64_t klo = d - r, khi = d + r;
  klo = klo >= 0 ? (klo + s - 1) / s : -((-klo) / s);
  khi = khi >= 0 ? khi / s : -((-khi + s - 1) / s);
  if (klo < t[i].lo) klo = t[i].lo;
  if (khi > t[i].hi) khi = t[i].hi;
  for (int64_t k = klo; k <= khi; k++) {
    int res = lattice_dfs(t, n, i + 1, d - k * s, budget);
    if (res) return res;
  }
  return 0;
}

static int lterm_cmp(const void *x, const void *y) {
  const lterm *a = x, *b = y;
  return a->s < b->s ? 1 : a->s > b->s ? -1 : 0;
}

static int hbm_lattice_overlap(const footprint *a, const footprint *b) {
  const trnc_nc_ap *pa = a->ap, *pb = b->ap;
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)pa->dtype);
  if (es != (int64_t)trnc_nc_dtype_size((trnc_dtype)pb->dtype) || es <= 0) return -1;
  int64_t delta = (b->buf_off + pb->offset) - (a->buf_off + pa->offset);
  if (delta % es) return -1;
  delta /= es;
  lterm t[2 * (TRNC_NC_MAX_FREE + 1)];
  int n = 0;
  for (int side = 0; side < 2; side++) {
    const trnc_nc_ap *ap = side ? pb : pa;
    for (int i = -1; i < ap->nfree; i++) {
      int64_t st = i < 0 ? ap->partition_stride : ap->free[i].stride;
      int64_t cnt = i < 0 ? ap->partitions : ap->free[i].count;
      if (cnt <= 0) return 0; /* no elements */
      if (cnt == 1 || st == 0) continue;
      int64_t lo = 0, hi = cnt - 1;
      if (st < 0) { /* k * st == (-k) * (-st) */
        st = -st;
        lo = -(cnt - 1);
        hi = 0;
      }
      if (side) { /* a_idx * s - b_idx * s: b enters negated */
        int64_t l2 = -hi;
        hi = -lo;
        lo = l2;
      }
      int j = 0;
      while (j < n && t[j].s != st) j++;
      if (j == n) t[n++] = (lterm){st, lo, hi, 0};
      else {
        t[j].lo += lo;
        t[j].hi += hi;
      }
    }
  }
  qsort(t, (size_t)n, sizeof *t, lterm_cmp);
  int64_t reach = 0;
  for (int i = n; i-- > 0;) {
    t[i].reach = reach;
    int64_t m = t[i].hi > -t[i].lo ? t[i].hi : -t[i].lo;
    reach += m * t[i].s;
  }
  int64_t budget = 1 << 16;
  return lattice_dfs(t, n, 0, delta, &budget);
}

/* True if each row of an HBM footprint is one contiguous byte range. */
static bool rows_contiguous(const footprint *f) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)f->ap->dtype);
  return f->rhi - f->rlo == trnc_nc_ap_free_elems(f->ap) * es;
}

static bool overlap(const footprint *a, const footprint *b) {
  if (!(a->space == b->space && a->p0 < b->p1 && b->p0 < a->p1 && a->lo < b->hi && b->lo < a->hi)) return false;
  if (a->space >= 2 && !(a->ps == b->ps && a->ps > 0 && rows_contiguous(a) && rows_contiguous(b))) {
    int ex = hbm_exact_overlap(a, b);
    if (ex < 0) ex = hbm_lattice_overlap(a, b);
    if (ex >= 0) return ex == 1;
  }
  if (a->space < 2 || a->ps != b->ps || a->ps <= 0) return true; /* bounding boxes overlap */
  /* HBM rows with the same stride ps: rows i of a and j of b overlap iff
   * L < (j - i) * ps < U for some i, j; find the smallest t = j - i. */
  int64_t d = b->base - a->base;
  int64_t L = a->rlo - b->rhi - d, U = a->rhi - b->rlo - d;
  int64_t t = floor_div(L, a->ps) + 1, tmin = -(a->rows - 1), tmax = b->rows - 1;
  if (t < tmin) t = tmin;
  return t <= tmax && t * a->ps < U;
}

static void check_races(vctx *v, const nc_schedule *s) {
  const nc_kernel *kn = &v->p->kernels[v->k];
  size_t n = kn->n;
  uint32_t *vc = calloc((n ? n : 1) * TRNC_NC_ENGINE_COUNT, sizeof *vc);
  uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
  footprint *fp = malloc((n ? n : 1) * 6 * sizeof *fp);
  int *nfp = malloc((n ? n : 1) * sizeof *nfp);
  size_t *byq = malloc((n ? n : 1) * sizeof *byq); /* per queue: instructions by position */
  if (!vc || !pos || !fp || !nfp || !byq) {
    trnc_diag_error(v->diags, TRNC_ERR_NOMEM, "out of memory");
    v->errors++;
    goto out;
  }
  uint32_t qcount[TRNC_NC_ENGINE_COUNT] = {0};
  size_t last[TRNC_NC_ENGINE_COUNT];
  for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) last[e] = SIZE_MAX;
  size_t qstart[TRNC_NC_ENGINE_COUNT + 1] = {0};
  for (size_t i = 0; i < n; i++) {
    nfp[i] = instr_footprints(v->p, &kn->instrs[i], &fp[i * 6]);
    qstart[kn->instrs[i].engine + 1]++;
  }
  for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) qstart[e + 1] += qstart[e];
  size_t reports = 0;
  for (size_t oi = 0; oi < n; oi++) {
    size_t j = s->order[oi];
    const trnc_nc_instr *in = &kn->instrs[j];
    uint32_t *vj = &vc[j * TRNC_NC_ENGINE_COUNT];
    pos[j] = qcount[in->engine]++;
    byq[qstart[in->engine] + pos[j]] = j;
    if (last[in->engine] != SIZE_MAX) {
      size_t l = last[in->engine];
      memcpy(vj, &vc[l * TRNC_NC_ENGINE_COUNT], TRNC_NC_ENGINE_COUNT * sizeof *vj);
    }
    vj[in->engine] = pos[j];
    for (int w = 0; w < TRNC_NC_MAX_WAIT; w++) {
      size_t pr = s->producer[j * TRNC_NC_MAX_WAIT + w];
      if (pr == SIZE_MAX) continue;
      const uint32_t *vp = &vc[pr * TRNC_NC_ENGINE_COUNT];
      for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++)
        if (vp[e] > vj[e]) vj[e] = vp[e];
      uint32_t through = pos[pr] + 1;
      if (through > vj[kn->instrs[pr].engine]) vj[kn->instrs[pr].engine] = through;
    }
    last[in->engine] = j;
    /* vj[e] = number of instructions of queue e that complete before j starts
     * (for j's own queue: its position). The instructions that may run
     * concurrently with j are, on every other queue e, those already
     * scheduled from position vj[e] on: only these pairs are compared, so
     * the cost is the number of unordered pairs, not n^2 (a kernel whose
     * queues never synchronise is still quadratic: TRNC_ARTIFACT_MAX_KERNEL_INSTRS
     * bounds what a loaded artifact may hold; an interval index per memory
     * space would be needed to do better). */
    for (int eh = 0; eh < TRNC_NC_ENGINE_COUNT; eh++) {
      if (eh == in->engine) continue;
      for (uint32_t ph = vj[eh]; ph < qcount[eh] && reports < MAX_RACE_REPORTS; ph++) {
        size_t h = byq[qstart[eh] + ph];
        for (int a = 0; a < nfp[h]; a++)
          for (int b = 0; b < nfp[j]; b++) {
            const footprint *fa = &fp[h * 6 + a], *fb = &fp[j * 6 + b];
            if (!(fa->write || fb->write) || !overlap(fa, fb)) continue;
            /* describe the pair in list order: x is listed first */
            size_t x = h < j ? h : j, y = h < j ? j : h;
            const footprint *fx = h < j ? fa : fb, *fy = h < j ? fb : fa;
            char other[160];
            nc_where(v->p, v->k, x, other, sizeof other);
            v->i = y;
            verr(v, "missing dependency: %s %s and %s %s %s overlap (%s) with no semaphore wait ordering them",
                 fy->write ? "writes" : "reads", nc_slot_names[fy->slot], other,
                 fx->write ? "writes" : "reads", nc_slot_names[fx->slot],
                 fx->write && fy->write ? "write after write" : fx->write ? "read after write" : "write after read");
            reports++;
            a = nfp[h];
            break;
          }
      }
    }
  }
out:
  free(vc);
  free(pos);
  free(fp);
  free(nfp);
  free(byq);
}

/* Byte-granular "written" bitmaps of SBUF and PSUM. */
typedef struct initmap {
  uint8_t *bits[2];
  int64_t bytes[2]; /* per partition */
  int partitions;
} initmap;

static bool range_all_set(const uint8_t *m, int64_t a, int64_t b) {
  for (; a < b && (a & 7); a++)
    if (!(m[a >> 3] & (1u << (a & 7)))) return false;
  for (; a + 8 <= b; a += 8)
    if (m[a >> 3] != 0xff) return false;
  for (; a < b; a++)
    if (!(m[a >> 3] & (1u << (a & 7)))) return false;
  return true;
}

static void range_set(uint8_t *m, int64_t a, int64_t b) {
  for (; a < b && (a & 7); a++) m[a >> 3] |= (uint8_t)(1u << (a & 7));
  if (a + 8 <= b) {
    memset(m + (a >> 3), 0xff, (size_t)((b - a) >> 3));
    a += ((b - a) >> 3) << 3;
  }
  for (; a < b; a++) m[a >> 3] |= (uint8_t)(1u << (a & 7));
}

/* Over every contiguous byte run of one partition of ap: set the bits in ms
 * (set), or test that all bits in m are set. */
static bool ap_runs_check(const trnc_nc_ap *ap, const uint8_t *m, bool set, uint8_t *ms) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  int nd = ap->nfree;
  int64_t run = es;
  int outer_dims = nd;
  if (nd > 0 && ap->free[nd - 1].stride == 1) {
    run = es * ap->free[nd - 1].count;
    outer_dims = nd - 1;
  }
  int64_t idx[TRNC_NC_MAX_FREE] = {0};
  for (;;) {
    int64_t off = ap->offset;
    for (int d = 0; d < outer_dims; d++) off += idx[d] * ap->free[d].stride * es;
    if (set) range_set(ms, off, off + run);
    else if (!range_all_set(m, off, off + run)) return false;
    int d = outer_dims - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < ap->free[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
  return true;
}

static void check_uninit(vctx *v, const nc_schedule *s, initmap *im) {
  const nc_kernel *kn = &v->p->kernels[v->k];
  for (int m = 0; m < 2; m++) memset(im->bits[m], 0, (size_t)(im->partitions * ((im->bytes[m] + 7) / 8)));
  size_t reports = 0;
  for (size_t oi = 0; oi < s->n; oi++) {
    size_t j = s->order[oi];
    const trnc_nc_instr *in = &kn->instrs[j];
    v->i = j;
    for (int sl = 2; sl < 6 && reports < MAX_UNINIT_REPORTS; sl++) {
      const trnc_nc_ap *ap = sl < 5 ? nc_slot(in, sl) : &in->dst;
      if (sl == 5 && !(in->op == TRNC_NC_OP_MATMUL && in->mode == 1)) continue;
      if (ap->mem != TRNC_NC_MEM_SBUF && ap->mem != TRNC_NC_MEM_PSUM) continue;
      int m = ap->mem == TRNC_NC_MEM_PSUM;
      int64_t row = (im->bytes[m] + 7) / 8;
      for (int p = ap->start_partition; p < ap->start_partition + ap->partitions; p++)
        if (!ap_runs_check(ap, im->bits[m] + p * row, false, NULL)) {
          verr(v, "%s reads %s partition %d bytes never written in this kernel (uninitialised)",
               sl < 5 ? nc_slot_names[sl] : "dst (accumulate)", mem_name(ap->mem), p);
          reports++;
          break;
        }
    }
    for (int sl = 0; sl < 2; sl++) {
      const trnc_nc_ap *ap = nc_slot(in, sl);
      if (ap->mem != TRNC_NC_MEM_SBUF && ap->mem != TRNC_NC_MEM_PSUM) continue;
      int m = ap->mem == TRNC_NC_MEM_PSUM;
      int64_t row = (im->bytes[m] + 7) / 8;
      for (int p = ap->start_partition; p < ap->start_partition + ap->partitions; p++)
        ap_runs_check(ap, NULL, true, im->bits[m] + p * row);
    }
  }
}

/* runs of the verifier on this thread (trnc_nc_verify_count) */
static _Thread_local size_t verify_runs;

size_t trnc_nc_verify_count(void) { return verify_runs; }

trnc_status trnc_nc_program_verify(const trnc_nc_program *p, trnc_diags *diags) {
  if (!p) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL program");
  verify_runs++;
  vctx v = {p, diags, 0, 0, 0};
  initmap im = {{NULL, NULL}, {p->target->sbuf_bytes_per_partition, p->target->psum_bytes_per_partition},
                p->target->partitions};
  for (size_t k = 0; k < p->nkernels; k++) {
    v.k = k;
    size_t before = v.errors;
    for (size_t i = 0; i < p->kernels[k].n; i++) {
      v.i = i;
      check_instr(&v, &p->kernels[k].instrs[i]);
    }
    nc_schedule s;
    trnc_status st = nc_schedule_build(p, k, &s, diags);
    if (st) {
      v.errors++;
      continue;
    }
    if (v.errors == before) {
      if (!im.bits[0]) {
        for (int m = 0; m < 2; m++) im.bits[m] = malloc((size_t)(im.partitions * ((im.bytes[m] + 7) / 8)));
        if (!im.bits[0] || !im.bits[1]) {
          nc_schedule_free(&s);
          free(im.bits[0]);
          free(im.bits[1]);
          return trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
        }
      }
      check_races(&v, &s);
      check_uninit(&v, &s, &im);
    }
    nc_schedule_free(&s);
  }
  free(im.bits[0]);
  free(im.bits[1]);
  nc_verify_collectives(p, diags, &v.errors);
  return v.errors ? TRNC_ERR_INVALID_GRAPH : TRNC_OK;
}
