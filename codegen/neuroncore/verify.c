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
        /* NKI's DMA transpose (nki.isa.dma_transpose) moves 2-byte elements only; a 4-byte
         * (or 1-byte) transpose goes through TensorE */
        if (trnc_nc_dtype_size((trnc_dtype)a->dtype) != 2 || trnc_nc_dtype_size((trnc_dtype)d->dtype) != 2)
          verr(v, "transpose: a DMA transpose moves 2-byte elements only (src0 %s, dst %s)",
               trnc_nc_dtype_name((trnc_dtype)a->dtype), trnc_nc_dtype_name((trnc_dtype)d->dtype));
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

/* ---- uninitialised reads ------------------------------------------------------ */

/* Byte-granular "written" bitmaps of SBUF and PSUM, word-major: bit b%64 of
 * w[m][(b/64) * partitions + p] is byte b of partition p, so one run of an
 * access pattern (the same bytes in every partition) is tested or set over
 * its partitions with contiguous word operations. */
typedef struct initmap {
  uint64_t *w[2];
  int64_t words[2]; /* per partition */
  int partitions;
  int64_t lo[2], hi[2]; /* words set since the last clear: [lo, hi) */
} initmap;

static uint64_t bits_mask(int64_t a, int64_t b) { /* bits [a, b) of one word, 0 <= a < b <= 64 */
  uint64_t hi = b == 64 ? ~0ull : (1ull << b) - 1;
  return hi & ~((1ull << a) - 1);
}

/* Over every contiguous byte run of ap, in partitions [start, start + n):
 * set the bits (set), or find the lowest partition with a byte not set.
 * Returns that partition, or -1. */
static int ap_runs_apply(const trnc_nc_ap *ap, initmap *im, int m, bool set) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  int nd = ap->nfree, p0 = ap->start_partition, p1 = ap->start_partition + ap->partitions;
  int64_t run = es;
  int outer_dims = nd;
  if (nd > 0 && ap->free[nd - 1].stride == 1) {
    run = es * ap->free[nd - 1].count;
    outer_dims = nd - 1;
  }
  int bad = -1;
  int64_t idx[TRNC_NC_MAX_FREE] = {0};
  for (;;) {
    int64_t a = ap->offset, b;
    for (int d = 0; d < outer_dims; d++) a += idx[d] * ap->free[d].stride * es;
    b = a + run;
    for (int64_t w = a >> 6; a < b; w++) {
      int64_t e = (w + 1) << 6 < b ? (w + 1) << 6 : b;
      uint64_t mask = bits_mask(a & 63, e - (w << 6));
      uint64_t *row = im->w[m] + w * im->partitions;
      if (set) {
        for (int p = p0; p < p1; p++) row[p] |= mask;
        if (w < im->lo[m]) im->lo[m] = w;
        if (w + 1 > im->hi[m]) im->hi[m] = w + 1;
      } else {
        uint64_t all = mask;
        for (int p = p0; p < p1; p++) all &= row[p];
        if (all != mask)
          for (int p = p0; p < (bad < 0 ? p1 : bad); p++)
            if ((row[p] & mask) != mask) {
              bad = p;
              break;
            }
      }
      a = e;
    }
    int d = outer_dims - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < ap->free[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
  return bad;
}

static void check_uninit(vctx *v, const nc_schedule *s, initmap *im) {
  const nc_kernel *kn = &v->p->kernels[v->k];
  size_t reports = 0;
  for (size_t oi = 0; oi < s->n; oi++) {
    size_t j = s->order[oi];
    const trnc_nc_instr *in = &kn->instrs[j];
    v->i = j;
    for (int sl = 2; sl < 6 && reports < MAX_UNINIT_REPORTS; sl++) {
      const trnc_nc_ap *ap = sl < 5 ? nc_slot(in, sl) : &in->dst;
      if (sl == 5 && !(in->op == TRNC_NC_OP_MATMUL && in->mode == 1)) continue;
      if (ap->mem != TRNC_NC_MEM_SBUF && ap->mem != TRNC_NC_MEM_PSUM) continue;
      int bad = ap_runs_apply(ap, im, ap->mem == TRNC_NC_MEM_PSUM, false);
      if (bad >= 0) {
        verr(v, "%s reads %s partition %d bytes never written in this kernel (uninitialised)",
             sl < 5 ? nc_slot_names[sl] : "dst (accumulate)", mem_name(ap->mem), bad);
        reports++;
      }
    }
    for (int sl = 0; sl < 2; sl++) {
      const trnc_nc_ap *ap = nc_slot(in, sl);
      if (ap->mem == TRNC_NC_MEM_SBUF || ap->mem == TRNC_NC_MEM_PSUM)
        ap_runs_apply(ap, im, ap->mem == TRNC_NC_MEM_PSUM, true);
    }
  }
  for (int m = 0; m < 2; m++) { /* clear what this kernel set, for the next one */
    if (im->hi[m] > im->lo[m])
      memset(im->w[m] + im->lo[m] * im->partitions, 0,
             (size_t)((im->hi[m] - im->lo[m]) * im->partitions) * sizeof *im->w[m]);
    im->lo[m] = im->words[m];
    im->hi[m] = 0;
  }
}

/* runs of the verifier on this thread (trnc_nc_verify_count) */
static _Thread_local size_t verify_runs;

size_t trnc_nc_verify_count(void) { return verify_runs; }

trnc_status trnc_nc_program_verify(const trnc_nc_program *p, trnc_diags *diags) {
  if (!p) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL program");
  verify_runs++;
  vctx v = {p, diags, 0, 0, 0};
  initmap im = {{NULL, NULL},
                {(p->target->sbuf_bytes_per_partition + 63) / 64, (p->target->psum_bytes_per_partition + 63) / 64},
                p->target->partitions, {0, 0}, {0, 0}};
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
      if (!im.w[0]) {
        for (int m = 0; m < 2; m++) {
          im.w[m] = calloc((size_t)(im.partitions * im.words[m]), sizeof *im.w[m]);
          im.lo[m] = im.words[m];
          im.hi[m] = 0;
        }
        if (!im.w[0] || !im.w[1]) {
          nc_schedule_free(&s);
          free(im.w[0]);
          free(im.w[1]);
          return trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
        }
      }
      nc_verify_races(p, k, &s, diags, &v.errors);
      check_uninit(&v, &s, &im);
    }
    nc_schedule_free(&s);
  }
  free(im.w[0]);
  free(im.w[1]);
  nc_verify_collectives(p, diags, &v.errors);
  return v.errors ? TRNC_ERR_INVALID_GRAPH : TRNC_OK;
}
