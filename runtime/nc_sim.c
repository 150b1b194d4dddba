/*
 * nc_sim.c — functional simulator of a NeuronCore program on host memory.
 *
 * Executes each kernel's instructions in a dependency order (the verifier's
 * schedule). Engines compute in fp32; every store rounds to the destination
 * dtype (trnc_nc_encode); TensorE accumulates in fp32 PSUM. The exceptions
 * compute in 32-bit integers with no fp32 round trip (run_int): int32
 * tensor_tensor on GpSimd and bitvec ops (trnc_nc_instr_int_exact), whose
 * add/sub/mul wrap modulo 2^32 and whose stores keep the low bits, and iota
 * into an integer destination. The HBM scratch
 * starts filled with 0xFF bytes (NaN for every float type) so reads of
 * uninitialised memory show; so do SBUF and PSUM in trnc_nc_simulate(_verified).
 *
 * A run plan (trnc_nc_sim_plan) holds what does not change between runs of
 * one program: each kernel's dependency schedule, the bytes per partition of
 * SBUF/PSUM each kernel touches, and the run memory (SBUF and PSUM laid out
 * with the program's own partition stride, the scratch, row buffers), which
 * the first run allocates and later runs reuse. Planned runs skip the
 * SBUF/PSUM NaN fill: the verifier proved that no kernel reads an SBUF or
 * PSUM byte before writing it (verify.c, check_uninit).
 *
 * The plan also holds the program's JIT state (runtime/engine.c): a run of a
 * program without collective steps may execute host code (runtime/llvm.c)
 * in the same plan memory instead of interpreting, as TRNC_SIM and the run
 * count decide; TRNC_SIM=check runs both and compares every output byte.
 *
 * Hot paths (matmul, elementwise rows, reductions, contiguous DMA runs) are
 * plain loops over contiguous fp32 rows that the compiler vectorizes.
 *
 * Collective steps go to the caller's distributed engine: a START snapshots
 * its source (all_reduce and broadcast copy it into the destination and run
 * in place; the other ops into a staging block the run owns until the WAIT)
 * and issues the operation; the kernels after it run while it is in flight;
 * its WAIT blocks on the engine.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/engine.h"
#include "runtime/host_gemm.h"

/* Memory of one run: SBUF and PSUM (partitions x the plan's stride), the HBM
 * scratch, the HBM pointer per buffer and row buffers. */
typedef struct sim_mem {
  uint8_t *sbuf, *psum, *scratch;
  uint8_t **hbm;
  float *tmp[4];
  size_t tmpcap[4];
  float *jtmp; /* the JIT's workspace (trnc_host_tmp_floats) */
} sim_mem;

static bool jit_translates(const trnc_nc_program *p);

struct trnc_nc_sim_plan {
  const trnc_nc_program *p;
  nc_schedule *sched;  /* one per kernel */
  int64_t (*hw)[2];    /* per kernel: SBUF, PSUM bytes of each partition it touches */
  int64_t stride[2];   /* bytes per partition of the run's SBUF, PSUM (max of hw, >= 64) */
  pthread_mutex_t mu;  /* held by the run using mem */
  sim_mem mem;
  trnc_engine_slot jit; /* host code and run count (runtime/engine.c) */
  bool interp_only;    /* jit_translates(p) is false */
};

typedef struct sim {
  const trnc_nc_program *p;
  const trnc_nc_target *t;
  const trnc_nc_sim_plan *plan;
  uint8_t *sbuf, *psum, *scratch;
  uint8_t **hbm; /* per buffer */
  float *tmp[4];
  size_t tmpcap[4];
  trnc_diags *diags;
  const trnc_collective_engine *engine;
  struct {
    int32_t handle;
    void *engine_handle;
    void *staging;
  } cc[TRNC_NC_CC_MAX_INFLIGHT];
  int ncc;
} sim;

static float *tmp(sim *S, int i, int64_t n) {
  if ((size_t)n > S->tmpcap[i]) {
    size_t cap = (size_t)n + 1024;
    float *f = realloc(S->tmp[i], cap * sizeof *f);
    if (!f) return NULL;
    S->tmp[i] = f;
    S->tmpcap[i] = cap;
  }
  return S->tmp[i];
}

/* Address of element 0 of partition (or HBM row) p of ap. */
static uint8_t *ap_row(sim *S, const trnc_nc_ap *ap, int64_t p) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  switch (ap->mem) {
    case TRNC_NC_MEM_SBUF:
      return S->sbuf + (ap->start_partition + p) * S->plan->stride[0] + ap->offset;
    case TRNC_NC_MEM_PSUM:
      return S->psum + (ap->start_partition + p) * S->plan->stride[1] + ap->offset;
    default:
      return S->hbm[ap->buffer] + ap->offset + p * ap->partition_stride * es;
  }
}

/* ---- typed runs ------------------------------------------------------------ */

static void load_run(const uint8_t *src, int64_t stride, int64_t n, int dt, float *out) {
  switch (dt) {
    case TRNC_F32:
      if (stride == 1) {
        memcpy(out, src, (size_t)n * 4);
      } else {
        for (int64_t i = 0; i < n; i++) memcpy(&out[i], src + i * stride * 4, 4);
      }
      return;
    case TRNC_BF16:
      if (stride == 1) { /* contiguous (matmul operands): a loop the compiler vectorizes */
        for (int64_t i = 0; i < n; i++) {
          uint16_t h;
          memcpy(&h, src + i * 2, 2);
          uint32_t w = (uint32_t)h << 16;
          memcpy(&out[i], &w, 4);
        }
        return;
      }
      for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + i * stride * 2, 2);
        out[i] = nc_bf16_to_f32(h);
      }
      return;
    default: {
      int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)dt);
      for (int64_t i = 0; i < n; i++) {
        uint32_t b = 0;
        const uint8_t *e = src + i * stride * es;
        if (es == 1) b = e[0];
        else if (es == 2) { uint16_t h; memcpy(&h, e, 2); b = h; }
        else memcpy(&b, e, 4);
        out[i] = trnc_nc_decode((trnc_dtype)dt, b);
      }
    }
  }
}

static void store_run(uint8_t *dst, int64_t stride, int64_t n, int dt, const float *in) {
  switch (dt) {
    case TRNC_F32:
      if (stride == 1) {
        memcpy(dst, in, (size_t)n * 4);
      } else {
        for (int64_t i = 0; i < n; i++) memcpy(dst + i * stride * 4, &in[i], 4);
      }
      return;
    case TRNC_BF16:
      for (int64_t i = 0; i < n; i++) {
        uint16_t h = nc_f32_to_bf16(in[i]);
        memcpy(dst + i * stride * 2, &h, 2);
      }
      return;
    default: {
      int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)dt);
      for (int64_t i = 0; i < n; i++) {
        uint32_t b = trnc_nc_encode((trnc_dtype)dt, in[i]);
        uint8_t *e = dst + i * stride * es;
        if (es == 1) e[0] = (uint8_t)b;
        else if (es == 2) { uint16_t h = (uint16_t)b; memcpy(e, &h, 2); }
        else memcpy(e, &b, 4);
      }
    }
  }
}

/* Visits the innermost runs of one partition: fn(ptr, stride, count, k) with
 * k the index of the run's first element in free order. */
typedef struct rowit {
  const trnc_nc_ap *ap;
  int64_t es, inner_stride, inner_count;
  int outer;
} rowit;

static void rowit_init(rowit *it, const trnc_nc_ap *ap) {
  it->ap = ap;
  it->es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  if (ap->nfree == 0) {
    it->inner_stride = 1;
    it->inner_count = 1;
    it->outer = 0;
  } else {
    it->inner_stride = ap->free[ap->nfree - 1].stride;
    it->inner_count = ap->free[ap->nfree - 1].count;
    it->outer = ap->nfree - 1;
  }
}

static void load_row(sim *S, const trnc_nc_ap *ap, int64_t p, float *out) {
  rowit it;
  rowit_init(&it, ap);
  const uint8_t *base = ap_row(S, ap, p);
  int64_t idx[TRNC_NC_MAX_FREE] = {0}, k = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < it.outer; d++) off += idx[d] * ap->free[d].stride;
    load_run(base + off * it.es, it.inner_stride, it.inner_count, ap->dtype, out + k);
    k += it.inner_count;
    int d = it.outer - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < ap->free[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

static void store_row(sim *S, const trnc_nc_ap *ap, int64_t p, const float *in) {
  rowit it;
  rowit_init(&it, ap);
  uint8_t *base = ap_row(S, ap, p);
  int64_t idx[TRNC_NC_MAX_FREE] = {0}, k = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < it.outer; d++) off += idx[d] * ap->free[d].stride;
    store_run(base + off * it.es, it.inner_stride, it.inner_count, ap->dtype, in + k);
    k += it.inner_count;
    int d = it.outer - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < ap->free[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/* Raw element bytes of one row into / out of a contiguous buffer. */
static void raw_row(sim *S, const trnc_nc_ap *ap, int64_t p, uint8_t *buf, bool load) {
  rowit it;
  rowit_init(&it, ap);
  uint8_t *base = ap_row(S, ap, p);
  int64_t idx[TRNC_NC_MAX_FREE] = {0}, k = 0, es = it.es;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < it.outer; d++) off += idx[d] * ap->free[d].stride;
    uint8_t *e = base + off * es;
    if (it.inner_stride == 1) {
      if (load) memcpy(buf + k * es, e, (size_t)(it.inner_count * es));
      else memcpy(e, buf + k * es, (size_t)(it.inner_count * es));
    } else {
      for (int64_t i = 0; i < it.inner_count; i++) {
        if (load) memcpy(buf + (k + i) * es, e + i * it.inner_stride * es, (size_t)es);
        else memcpy(e + i * it.inner_stride * es, buf + (k + i) * es, (size_t)es);
      }
    }
    k += it.inner_count;
    int d = it.outer - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < ap->free[d].count) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

static float load_scalar(sim *S, const trnc_nc_ap *ap, int64_t p) {
  float f;
  load_row(S, ap, p, &f);
  return f;
}

/* ---- ALU and activation functions --------------------------------------------- */

/* NaN-propagating max/min (torch.maximum/minimum, amax/amin, clamp, relu):
 * a NaN operand wins (the first one if both are NaN), otherwise the larger
 * (smaller) value, and a on ties, so max(-0, +0) = -0 and max(+0, -0) = +0
 * as torch's CPU kernels give. Plain compares and a select, which the
 * compiler vectorizes (fmaxf/fminf drop NaNs and are library calls). */
static inline float nc_max(float a, float b) { return (a != a || a >= b) ? a : b; }
static inline float nc_min(float a, float b) { return (a != a || a <= b) ? a : b; }

static void alu_rows(int op, float *restrict o, const float *restrict a, const float *restrict b,
                     int64_t n) {
  switch (op) {
    case TRNC_NC_ALU_BYPASS: for (int64_t i = 0; i < n; i++) o[i] = a[i]; break;
    case TRNC_NC_ALU_ADD: for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i]; break;
    case TRNC_NC_ALU_SUB: for (int64_t i = 0; i < n; i++) o[i] = a[i] - b[i]; break;
    case TRNC_NC_ALU_RSUB: for (int64_t i = 0; i < n; i++) o[i] = b[i] - a[i]; break;
    case TRNC_NC_ALU_MUL: for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i]; break;
    case TRNC_NC_ALU_DIV: for (int64_t i = 0; i < n; i++) o[i] = a[i] / b[i]; break;
    case TRNC_NC_ALU_MAX: for (int64_t i = 0; i < n; i++) o[i] = nc_max(a[i], b[i]); break;
    case TRNC_NC_ALU_MIN: for (int64_t i = 0; i < n; i++) o[i] = nc_min(a[i], b[i]); break;
    case TRNC_NC_ALU_POW: for (int64_t i = 0; i < n; i++) o[i] = powf(a[i], b[i]); break;
    case TRNC_NC_ALU_EQ: for (int64_t i = 0; i < n; i++) o[i] = a[i] == b[i]; break;
    case TRNC_NC_ALU_NE: for (int64_t i = 0; i < n; i++) o[i] = a[i] != b[i]; break;
    case TRNC_NC_ALU_LT: for (int64_t i = 0; i < n; i++) o[i] = a[i] < b[i]; break;
    case TRNC_NC_ALU_LE: for (int64_t i = 0; i < n; i++) o[i] = a[i] <= b[i]; break;
    case TRNC_NC_ALU_GT: for (int64_t i = 0; i < n; i++) o[i] = a[i] > b[i]; break;
    case TRNC_NC_ALU_GE: for (int64_t i = 0; i < n; i++) o[i] = a[i] >= b[i]; break;
    case TRNC_NC_ALU_AND: for (int64_t i = 0; i < n; i++) o[i] = (a[i] != 0) && (b[i] != 0); break;
    case TRNC_NC_ALU_OR: for (int64_t i = 0; i < n; i++) o[i] = (a[i] != 0) || (b[i] != 0); break;
    case TRNC_NC_ALU_XOR: for (int64_t i = 0; i < n; i++) o[i] = (a[i] != 0) != (b[i] != 0); break;
    case TRNC_NC_ALU_ABSMAX: for (int64_t i = 0; i < n; i++) o[i] = nc_max(fabsf(a[i]), fabsf(b[i])); break;
    default: break;
  }
}

/* o = a op s (scalar b) */
static void alu_scalar(int op, float *o, const float *a, float s, int64_t n, float *scratch) {
  for (int64_t i = 0; i < n; i++) scratch[i] = s;
  alu_rows(op, o, a, scratch, n);
}

static float alu_one(int op, float a, float b) {
  float o;
  alu_rows(op, &o, &a, &b, 1);
  return o;
}

static float act_one(int f, float x) {
  switch (f) {
    case TRNC_NC_ACT_IDENTITY: return x;
    case TRNC_NC_ACT_EXP: return expf(x);
    case TRNC_NC_ACT_LOG: return logf(x);
    case TRNC_NC_ACT_TANH: return tanhf(x);
    case TRNC_NC_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case TRNC_NC_ACT_RELU: return nc_max(x, 0.0f); /* NaN stays NaN */
    case TRNC_NC_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case TRNC_NC_ACT_GELU_TANH:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case TRNC_NC_ACT_SILU: return x / (1.0f + expf(-x));
    case TRNC_NC_ACT_RSQRT: return 1.0f / sqrtf(x);
    case TRNC_NC_ACT_SQRT: return sqrtf(x);
    case TRNC_NC_ACT_SQUARE: return x * x;
    case TRNC_NC_ACT_SIN: return sinf(x);
    case TRNC_NC_ACT_COS: return cosf(x);
    case TRNC_NC_ACT_ERF: return erff(x);
    case TRNC_NC_ACT_RECIPROCAL: return 1.0f / x;
    case TRNC_NC_ACT_ABS: return fabsf(x);
    case TRNC_NC_ACT_SIGN: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    case TRNC_NC_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    default: return x;
  }
}

static void act_rows(int f, float *o, const float *x, float scale, float bias, int64_t n) {
  switch (f) {
    case TRNC_NC_ACT_IDENTITY: for (int64_t i = 0; i < n; i++) o[i] = x[i] * scale + bias; break;
    case TRNC_NC_ACT_SQUARE:
      for (int64_t i = 0; i < n; i++) { float y = x[i] * scale + bias; o[i] = y * y; }
      break;
    case TRNC_NC_ACT_EXP: for (int64_t i = 0; i < n; i++) o[i] = expf(x[i] * scale + bias); break;
    case TRNC_NC_ACT_RELU: for (int64_t i = 0; i < n; i++) o[i] = nc_max(x[i] * scale + bias, 0.0f); break;
    default: for (int64_t i = 0; i < n; i++) o[i] = act_one(f, x[i] * scale + bias); break;
  }
}

/* ---- instructions -------------------------------------------------------------- */

static trnc_status oom(sim *S) { return trnc_diag_error(S->diags, TRNC_ERR_NOMEM, "simulator: out of memory"); }

static trnc_status run_dma(sim *S, const trnc_nc_instr *in, size_t k, size_t i) {
  const trnc_nc_ap *d = &in->dst, *s = &in->src[0];
  int64_t sf = trnc_nc_ap_free_elems(s), df = trnc_nc_ap_free_elems(d);
  bool raw = d->dtype == s->dtype;
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)s->dtype);
  if (in->mode == TRNC_NC_DMA_GATHER || in->mode == TRNC_NC_DMA_SCATTER) {
    bool gather = in->mode == TRNC_NC_DMA_GATHER;
    const trnc_nc_ap *table = gather ? s : d, *tile = gather ? d : s;
    float *row = tmp(S, 0, sf);
    uint8_t *rawrow = (uint8_t *)tmp(S, 1, sf * es / 4 + 1);
    if (!row || !rawrow) return oom(S);
    for (int64_t p = 0; p < tile->partitions; p++) {
      int32_t idx;
      memcpy(&idx, ap_row(S, &in->src[1], p), 4);
      if (idx < 0 || idx >= table->partitions)
        return nc_index_error(S->p, k, i, idx, p, table->partitions, S->diags);
      int64_t sp = gather ? idx : p, dp = gather ? p : idx;
      if (raw) {
        raw_row(S, s, sp, rawrow, true);
        raw_row(S, d, dp, rawrow, false);
      } else {
        load_row(S, s, sp, row);
        store_row(S, d, dp, row);
      }
    }
    return TRNC_OK;
  }
  int64_t total = nc_ap_elems(s);
  if (in->mode == TRNC_NC_DMA_TRANSPOSE) {
    float *all = tmp(S, 0, total), *row = tmp(S, 1, df);
    if (!all || !row) return oom(S);
    for (int64_t p = 0; p < s->partitions; p++) load_row(S, s, p, all + p * sf);
    for (int64_t f = 0; f < d->partitions; f++) {
      for (int64_t p = 0; p < s->partitions; p++) row[p] = all[p * sf + f];
      store_row(S, d, f, row);
    }
    return TRNC_OK;
  }
  if (s->partitions == d->partitions && sf == df) { /* row by row */
    if (raw) {
      uint8_t *buf = (uint8_t *)tmp(S, 0, sf * es / 4 + 1);
      if (!buf) return oom(S);
      for (int64_t p = 0; p < s->partitions; p++) {
        raw_row(S, s, p, buf, true);
        raw_row(S, d, p, buf, false);
      }
    } else {
      float *row = tmp(S, 0, sf);
      if (!row) return oom(S);
      for (int64_t p = 0; p < s->partitions; p++) {
        load_row(S, s, p, row);
        store_row(S, d, p, row);
      }
    }
    return TRNC_OK;
  }
  /* different shapes: flatten through one buffer */
  float *all = tmp(S, 0, total);
  if (!all) return oom(S);
  for (int64_t p = 0; p < s->partitions; p++) load_row(S, s, p, all + p * sf);
  for (int64_t p = 0; p < d->partitions; p++) store_row(S, d, p, all + p * df);
  (void)raw;
  return TRNC_OK;
}

/*
 * dst[M,N] (+)= src0[K,M]^T src1[K,N]: every output element is an fp32
 * accumulator (0, or dst's value with mode 1) to which the fp32 product
 * a[k]*b[k] is added for k = 0, 1, ..., K-1, in that order. The operands
 * are decoded into row-major fp32 (padded to whole micro-kernel blocks,
 * each row 64 bytes longer so that one block's K rows fall into different
 * L1 sets) and trnc_host_gemm (runtime/host_gemm.c) runs the blocks, the
 * same kernel as the JIT's host code: fused multiply-adds only when
 * trnc_host_gemm_fusable shows every product exact, where they give the
 * numbers of a separate multiply and add.
 */
static trnc_status run_matmul(sim *S, const trnc_nc_instr *in) {
  const trnc_nc_ap *st = &in->src[0], *mv = &in->src[1];
  int64_t K = st->partitions, M = trnc_nc_ap_free_elems(st), N = trnc_nc_ap_free_elems(mv);
  int64_t Mp = (M + TRNC_GEMM_MB - 1) / TRNC_GEMM_MB * TRNC_GEMM_MB;
  int64_t Np = (N + TRNC_GEMM_NB - 1) / TRNC_GEMM_NB * TRNC_GEMM_NB;
  int64_t lda = Mp + 16, ldb = Np + 16;
  float *A = tmp(S, 0, K * lda), *B = tmp(S, 1, K * ldb), *C = tmp(S, 2, Mp * Np);
  if (!A || !B || !C) return oom(S);
  for (int64_t k = 0; k < K; k++) {
    load_row(S, st, k, A + k * lda);
    memset(A + k * lda + M, 0, (size_t)(lda - M) * sizeof *A);
    load_row(S, mv, k, B + k * ldb);
    memset(B + k * ldb + N, 0, (size_t)(ldb - N) * sizeof *B);
  }
  int32_t fused = 0;
  int sa = trnc_host_gemm_sig_bits(st->dtype), sb = trnc_host_gemm_sig_bits(mv->dtype);
  if (sa + sb <= 24) {
    int32_t amax = 0, amin = 255, bmax = 0, bmin = 255;
    trnc_host_gemm_ebounds(A, K * lda, &amax, &amin);
    trnc_host_gemm_ebounds(B, K * ldb, &bmax, &bmin);
    fused = trnc_host_gemm_fusable(sa, sb, amax, amin, bmax, bmin);
  }
  /* dst rows straight from the kernel when they are whole blocks of
   * contiguous fp32 PSUM (PSUM is never an operand's memory: no overlap) */
  const trnc_nc_ap *d = &in->dst;
  int64_t run = 1;
  bool contig = true;
  for (int i = d->nfree - 1; i >= 0; i--) {
    contig = contig && (d->free[i].count == 1 || d->free[i].stride == run);
    run *= d->free[i].count;
  }
  if (contig && M % TRNC_GEMM_MB == 0 && N % TRNC_GEMM_NB == 0 && d->dtype == TRNC_F32 &&
      d->mem == TRNC_NC_MEM_PSUM && d->offset % 4 == 0 && S->plan->stride[1] % 4 == 0) {
    trnc_host_gemm(A, lda, B, ldb, (float *)(void *)ap_row(S, d, 0), S->plan->stride[1] / 4, K, M / TRNC_GEMM_MB,
                   N / TRNC_GEMM_NB, in->mode ? 1 : 0, fused);
    return TRNC_OK;
  }
  if (in->mode) {
    if (Mp != M || Np != N) memset(C, 0, (size_t)(Mp * Np) * sizeof *C); /* padding: read, never stored */
    for (int64_t m = 0; m < M; m++) load_row(S, d, m, C + m * Np);
  }
  trnc_host_gemm(A, lda, B, ldb, C, Np, K, Mp / TRNC_GEMM_MB, Np / TRNC_GEMM_NB, in->mode ? 1 : 0, fused);
  for (int64_t m = 0; m < M; m++) store_row(S, d, m, C + m * Np);
  return TRNC_OK;
}

static trnc_status run_transpose(sim *S, const trnc_nc_instr *in) {
  const trnc_nc_ap *s = &in->src[0];
  int64_t P = s->partitions, F = trnc_nc_ap_free_elems(s);
  float *all = tmp(S, 0, P * F), *row = tmp(S, 1, P);
  if (!all || !row) return oom(S);
  for (int64_t p = 0; p < P; p++) load_row(S, s, p, all + p * F);
  for (int64_t f = 0; f < F; f++) {
    for (int64_t p = 0; p < P; p++) row[p] = all[p * F + f];
    store_row(S, &in->dst, f, row);
  }
  return TRNC_OK;
}

static int64_t affine(const trnc_nc_instr *in, const trnc_nc_ap *ap, int64_t p, int64_t k) {
  /* decompose free index k (free order) into per-dim indices */
  int64_t v = (int64_t)in->aff[0] + (int64_t)in->aff[1] * p;
  for (int d = ap->nfree - 1; d >= 0; d--) {
    int64_t c = ap->free[d].count;
    v += (int64_t)in->aff[2 + d] * (k % c);
    k /= c;
  }
  return v;
}

/* ---- integer instructions (trnc_nc_instr_int_exact, int iota) ----------------- */

static bool int_dt(int dt) {
  return dt == TRNC_I32 || dt == TRNC_I16 || dt == TRNC_I8 || dt == TRNC_U8 || dt == TRNC_BOOL;
}

/* Row p of integer AP ap as int32 values (sign- or zero-extended); raw: a
 * scratch of 4 bytes per element. */
static void load_irow(sim *S, const trnc_nc_ap *ap, int64_t p, int32_t *out, uint8_t *raw) {
  int64_t n = trnc_nc_ap_free_elems(ap);
  raw_row(S, ap, p, raw, true);
  for (int64_t i = 0; i < n; i++) {
    switch (ap->dtype) {
      case TRNC_I32: memcpy(&out[i], raw + 4 * i, 4); break;
      case TRNC_I16: { int16_t h; memcpy(&h, raw + 2 * i, 2); out[i] = h; break; }
      case TRNC_I8: out[i] = (int8_t)raw[i]; break;
      default: out[i] = raw[i]; break; /* u8, bool */
    }
  }
}

/* Stores the low bits of each value (two's complement truncation). */
static void store_irow(sim *S, const trnc_nc_ap *ap, int64_t p, const int32_t *in, uint8_t *raw) {
  int64_t n = trnc_nc_ap_free_elems(ap);
  for (int64_t i = 0; i < n; i++) {
    switch (ap->dtype) {
      case TRNC_I32: memcpy(raw + 4 * i, &in[i], 4); break;
      case TRNC_I16: { uint16_t h = (uint16_t)(uint32_t)in[i]; memcpy(raw + 2 * i, &h, 2); break; }
      case TRNC_BOOL: raw[i] = in[i] != 0; break;
      default: raw[i] = (uint8_t)(uint32_t)in[i]; break;
    }
  }
  raw_row(S, ap, p, raw, false);
}

/* o = a op b in 32-bit integers: add/sub/mul wrap modulo 2^32 (computed on
 * uint32), shifts take their count mod 32, SHR is arithmetic. */
static void ialu_rows(int op, int32_t *restrict o, const int32_t *restrict a,
                      const int32_t *restrict b, int64_t n) {
  const uint32_t *ua = (const uint32_t *)a, *ub = (const uint32_t *)b;
  for (int64_t i = 0; i < n; i++) {
    int32_t x = a[i], y = b[i];
    uint32_t r;
    switch (op) {
      case TRNC_NC_ALU_ADD: r = ua[i] + ub[i]; break;
      case TRNC_NC_ALU_SUB: r = ua[i] - ub[i]; break;
      case TRNC_NC_ALU_RSUB: r = ub[i] - ua[i]; break;
      case TRNC_NC_ALU_MUL: r = ua[i] * ub[i]; break;
      case TRNC_NC_ALU_MAX: r = (uint32_t)(x >= y ? x : y); break;
      case TRNC_NC_ALU_MIN: r = (uint32_t)(x <= y ? x : y); break;
      case TRNC_NC_ALU_EQ: r = x == y; break;
      case TRNC_NC_ALU_NE: r = x != y; break;
      case TRNC_NC_ALU_LT: r = x < y; break;
      case TRNC_NC_ALU_LE: r = x <= y; break;
      case TRNC_NC_ALU_GT: r = x > y; break;
      case TRNC_NC_ALU_GE: r = x >= y; break;
      case TRNC_NC_ALU_AND: r = x != 0 && y != 0; break;
      case TRNC_NC_ALU_OR: r = x != 0 || y != 0; break;
      case TRNC_NC_ALU_XOR: r = (x != 0) != (y != 0); break;
      case TRNC_NC_ALU_BIT_AND: r = ua[i] & ub[i]; break;
      case TRNC_NC_ALU_BIT_OR: r = ua[i] | ub[i]; break;
      case TRNC_NC_ALU_BIT_XOR: r = ua[i] ^ ub[i]; break;
      case TRNC_NC_ALU_SHL: r = ua[i] << (ub[i] & 31u); break;
      case TRNC_NC_ALU_SHR: { /* arithmetic, without relying on C's >> of negatives */
        uint32_t sh = ub[i] & 31u;
        r = x < 0 ? ~(~ua[i] >> sh) : ua[i] >> sh;
        break;
      }
      default: r = ua[i]; break; /* BYPASS (the verifier rejects ops with no integer form) */
    }
    o[i] = (int32_t)r;
  }
}

static int32_t int_operand(sim *S, const trnc_nc_ap *ap, float imm, int64_t p, uint8_t *raw) {
  if (!ap->mem) return (int32_t)imm;
  int32_t v;
  load_irow(S, ap, p, &v, raw);
  return v;
}

/* An instruction that computes in integers (trnc_nc_instr_int_exact), or an
 * iota into an integer destination: no fp32 round trip. */
static trnc_status run_int(sim *S, const trnc_nc_instr *in) {
  const trnc_nc_ap *d = &in->dst;
  int64_t n = trnc_nc_ap_free_elems(d);
  int32_t *o = (int32_t *)tmp(S, 0, n), *a = (int32_t *)tmp(S, 1, n), *b = (int32_t *)tmp(S, 2, n);
  uint8_t *raw = (uint8_t *)tmp(S, 3, n);
  if (!o || !a || !b || !raw) return oom(S);
  for (int64_t p = 0; p < d->partitions; p++) {
    if (in->op == TRNC_NC_OP_IOTA) {
      for (int64_t i = 0; i < n; i++) o[i] = (int32_t)(uint32_t)affine(in, d, p, i);
    } else if (in->op == TRNC_NC_OP_TENSOR_TENSOR) {
      load_irow(S, &in->src[0], p, a, raw);
      load_irow(S, &in->src[1], p, b, raw);
      ialu_rows(in->alu0, o, a, b, n);
    } else { /* tensor_scalar with bitvec ops */
      load_irow(S, &in->src[0], p, a, raw);
      int32_t s0 = int_operand(S, &in->src[1], in->imm[0], p, raw);
      for (int64_t i = 0; i < n; i++) b[i] = s0;
      ialu_rows(in->alu0, o, a, b, n);
      if (in->alu1 != TRNC_NC_ALU_BYPASS) {
        int32_t s1 = int_operand(S, &in->src[2], in->imm[1], p, raw);
        memcpy(a, o, (size_t)n * sizeof *a);
        for (int64_t i = 0; i < n; i++) b[i] = s1;
        ialu_rows(in->alu1, o, a, b, n);
      }
    }
    store_irow(S, d, p, o, raw);
  }
  return TRNC_OK;
}

static trnc_status run_compute(sim *S, const trnc_nc_instr *in) {
  const trnc_nc_ap *d = &in->dst;
  if (trnc_nc_instr_int_exact(in) || (in->op == TRNC_NC_OP_IOTA && int_dt(d->dtype)))
    return run_int(S, in);
  int64_t n = trnc_nc_ap_free_elems(d), nsrc = in->op == TRNC_NC_OP_TENSOR_REDUCE ? trnc_nc_ap_free_elems(&in->src[0]) : n;
  float *o = tmp(S, 0, n), *a = tmp(S, 1, nsrc), *b = tmp(S, 2, nsrc), *c = tmp(S, 3, nsrc);
  if (!o || !a || !b || !c) return oom(S);
  for (int64_t p = 0; p < d->partitions; p++) {
    switch (in->op) {
      case TRNC_NC_OP_ACTIVATION: {
        load_row(S, &in->src[0], p, a);
        float bias = in->src[1].mem ? load_scalar(S, &in->src[1], p) : in->imm[1];
        act_rows(in->act, o, a, in->imm[0], bias, n);
        if (in->dst2.mem) {
          float sum = 0.0f;
          for (int64_t i = 0; i < n; i++) sum += o[i];
          store_row(S, &in->dst2, p, &sum);
        }
        break;
      }
      case TRNC_NC_OP_TENSOR_TENSOR:
        load_row(S, &in->src[0], p, a);
        load_row(S, &in->src[1], p, b);
        alu_rows(in->alu0, o, a, b, n);
        break;
      case TRNC_NC_OP_TENSOR_SCALAR: {
        load_row(S, &in->src[0], p, a);
        float s0 = in->src[1].mem ? load_scalar(S, &in->src[1], p) : in->imm[0];
        float s1 = in->src[2].mem ? load_scalar(S, &in->src[2], p) : in->imm[1];
        alu_scalar(in->alu0, o, a, s0, n, b);
        if (in->alu1 != TRNC_NC_ALU_BYPASS) {
          memcpy(c, o, (size_t)n * sizeof *o);
          alu_scalar(in->alu1, o, c, s1, n, b);
        }
        break;
      }
      case TRNC_NC_OP_TENSOR_REDUCE: {
        load_row(S, &in->src[0], p, a);
        int64_t inner = nsrc / (n ? n : 1);
        for (int64_t j = 0; j < n; j++) {
          const float *x = a + j * inner;
          float r = in->alu0 == TRNC_NC_ALU_ABSMAX ? fabsf(x[0]) : x[0];
          if (in->alu0 == TRNC_NC_ALU_ADD) {
            for (int64_t i = 1; i < inner; i++) r += x[i];
          } else if (in->alu0 == TRNC_NC_ALU_MAX || in->alu0 == TRNC_NC_ALU_MIN) {
            /* running max/min (r kept on ties) plus a NaN flag, inline (no per-element
             * alu_one); GCC keeps this loop scalar, like the ADD reduction above */
            bool mx = in->alu0 == TRNC_NC_ALU_MAX;
            int nan = r != r;
            if (mx) for (int64_t i = 1; i < inner; i++) { r = x[i] > r ? x[i] : r; nan |= x[i] != x[i]; }
            else for (int64_t i = 1; i < inner; i++) { r = x[i] < r ? x[i] : r; nan |= x[i] != x[i]; }
            if (nan) r = NAN;
          } else {
            for (int64_t i = 1; i < inner; i++) r = alu_one(in->alu0, r, x[i]);
          }
          o[j] = r;
        }
        break;
      }
      case TRNC_NC_OP_TENSOR_COPY:
        if (d->dtype == in->src[0].dtype) {
          raw_row(S, &in->src[0], p, (uint8_t *)a, true);
          raw_row(S, d, p, (uint8_t *)a, false);
          continue;
        }
        load_row(S, &in->src[0], p, o);
        break;
      case TRNC_NC_OP_MEMSET:
        for (int64_t i = 0; i < n; i++) o[i] = in->imm[0];
        break;
      case TRNC_NC_OP_IOTA:
        for (int64_t i = 0; i < n; i++) o[i] = (float)affine(in, d, p, i);
        break;
      case TRNC_NC_OP_SELECT:
        load_row(S, &in->src[0], p, a);
        load_row(S, &in->src[1], p, b);
        load_row(S, &in->src[2], p, c);
        for (int64_t i = 0; i < n; i++) o[i] = a[i] != 0.0f ? b[i] : c[i];
        break;
      case TRNC_NC_OP_AFFINE_SELECT:
        load_row(S, &in->src[0], p, a);
        for (int64_t i = 0; i < n; i++)
          o[i] = alu_one(in->alu0, (float)affine(in, &in->src[0], p, i), 0.0f) != 0.0f ? a[i] : in->imm[0];
        break;
      default:
        break;
    }
    store_row(S, d, p, o);
  }
  return TRNC_OK;
}

static trnc_status run_kernel(sim *S, size_t k, bool fill) {
  const trnc_nc_sim_plan *pl = S->plan;
  const nc_schedule *sc = &pl->sched[k];
  const nc_kernel *kn = &S->p->kernels[k];
  /* NaN-fill only the bytes of each partition this kernel can touch */
  for (int p = 0; fill && p < S->t->partitions; p++) {
    memset(S->sbuf + p * pl->stride[0], 0xff, (size_t)pl->hw[k][0]);
    memset(S->psum + p * pl->stride[1], 0xff, (size_t)pl->hw[k][1]);
  }
  trnc_status st = TRNC_OK;
  for (size_t oi = 0; oi < sc->n && !st; oi++) {
    size_t i = sc->order[oi];
    const trnc_nc_instr *in = &kn->instrs[i];
    switch (in->op) {
      case TRNC_NC_OP_NOP: break;
      case TRNC_NC_OP_DMA_COPY: st = run_dma(S, in, k, i); break;
      case TRNC_NC_OP_MATMUL: st = run_matmul(S, in); break;
      case TRNC_NC_OP_TRANSPOSE: st = run_transpose(S, in); break;
      default: st = run_compute(S, in); break;
    }
  }
  return st;
}

/* One collective step (see the file comment). */
static trnc_status run_collective(sim *S, size_t k) {
  const trnc_nc_collective *cc = S->p->kernels[k].cc;
  const trnc_collective_engine *e = S->engine;
  if (!e || !e->start || !e->wait)
    return trnc_diag_error(S->diags, TRNC_ERR_UNSUPPORTED,
                           "step %zu: the program runs a collective (%s over process group '%s') but "
                           "no distributed engine was given: run it through trnc's torch.compile "
                           "backend with torch.distributed initialized (trnc_compiled_run_with)",
                           k, trnc_nc_cc_op_name(cc->op), cc->group);
  if (cc->op == TRNC_NC_CC_WAIT) {
    for (int f = 0; f < S->ncc; f++) {
      if (S->cc[f].handle != cc->handle) continue;
      trnc_status st = e->wait(e->ctx, S->cc[f].engine_handle, S->diags);
      free(S->cc[f].staging);
      S->cc[f] = S->cc[--S->ncc];
      return st;
    }
    return trnc_diag_error(S->diags, TRNC_ERR_INTERNAL, "step %zu: cc_wait on a handle not in flight", k);
  }
  uint8_t *src = S->hbm[cc->src_buffer] + cc->src_offset, *dst = S->hbm[cc->dst_buffer] + cc->dst_offset;
  void *staging = NULL;
  trnc_collective_call call = {cc->op, cc->reduce, cc->group, cc->group_size, cc->root,
                               (trnc_dtype)cc->dtype, src, cc->src_bytes, dst, cc->dst_bytes,
                               cc->nsplits, cc->in_split, cc->out_split};
  if (cc->op == TRNC_NC_CC_ALL_REDUCE || cc->op == TRNC_NC_CC_BROADCAST) {
    if (dst != src) memmove(dst, src, (size_t)cc->src_bytes);
    call.src = dst;
  } else {
    staging = malloc(cc->src_bytes ? (size_t)cc->src_bytes : 1);
    if (!staging) return oom(S);
    memcpy(staging, src, (size_t)cc->src_bytes);
    call.src = staging;
  }
  void *h = NULL;
  trnc_status st = e->start(e->ctx, &call, &h, S->diags);
  if (st) {
    free(staging);
    return st;
  }
  S->cc[S->ncc].handle = cc->handle;
  S->cc[S->ncc].engine_handle = h;
  S->cc[S->ncc].staging = staging;
  S->ncc++;
  return TRNC_OK;
}

trnc_status nc_index_error(const trnc_nc_program *p, size_t k, size_t i, int64_t idx, int64_t partition,
                           int64_t rows, trnc_diags *diags) {
  char where[160];
  return trnc_diag_error(diags, TRNC_ERR_LIMIT,
                         "%s: index %lld in partition %lld outside the %lld rows of the table",
                         nc_where(p, k, i, where, sizeof where), (long long)idx, (long long)partition,
                         (long long)rows);
}

/* ---- run plans --------------------------------------------------------------- */

void trnc_nc_sim_plan_destroy(trnc_nc_sim_plan *pl) {
  if (!pl) return;
  for (size_t k = 0; pl->sched && k < pl->p->nkernels; k++) nc_schedule_free(&pl->sched[k]);
  free(pl->sched);
  free(pl->hw);
  free(pl->mem.sbuf);
  free(pl->mem.psum);
  free(pl->mem.scratch);
  free(pl->mem.hbm);
  for (int i = 0; i < 4; i++) free(pl->mem.tmp[i]);
  free(pl->mem.jtmp);
  trnc_engine_slot_release(&pl->jit);
  pthread_mutex_destroy(&pl->mu);
  free(pl);
}

trnc_status trnc_nc_sim_plan_create(const trnc_nc_program *p, trnc_nc_sim_plan **out,
                                    trnc_diags *diags) {
  if (out) *out = NULL;
  if (!p || !out) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_nc_sim_plan_create: NULL argument");
  trnc_nc_sim_plan *pl = calloc(1, sizeof *pl);
  if (!pl) return trnc_diag_error(diags, TRNC_ERR_NOMEM, "simulator: out of memory");
  pl->p = p;
  pl->interp_only = !jit_translates(p);
  if (pthread_mutex_init(&pl->mu, NULL)) {
    free(pl);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "simulator: cannot create a mutex");
  }
  size_t nk = p->nkernels ? p->nkernels : 1;
  pl->sched = calloc(nk, sizeof *pl->sched);
  pl->hw = calloc(nk, sizeof *pl->hw);
  if (!pl->sched || !pl->hw) {
    trnc_nc_sim_plan_destroy(pl);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "simulator: out of memory");
  }
  pl->stride[0] = pl->stride[1] = 64;
  for (size_t k = 0; k < p->nkernels; k++) {
    trnc_status st = nc_schedule_build(p, k, &pl->sched[k], diags);
    if (st) {
      trnc_nc_sim_plan_destroy(pl);
      return st;
    }
    const nc_kernel *kn = &p->kernels[k];
    for (size_t i = 0; i < kn->n; i++)
      for (int sl = 0; sl < 5; sl++) {
        const trnc_nc_ap *ap = nc_slot(&kn->instrs[i], sl);
        int64_t lo, hi;
        if ((ap->mem == TRNC_NC_MEM_SBUF || ap->mem == TRNC_NC_MEM_PSUM) && nc_ap_extent(ap, &lo, &hi)) {
          int m = ap->mem == TRNC_NC_MEM_PSUM;
          if (hi > pl->hw[k][m]) pl->hw[k][m] = hi;
        }
      }
    for (int m = 0; m < 2; m++) {
      int64_t r = (pl->hw[k][m] + 63) / 64 * 64; /* rows 64-byte aligned */
      if (r > pl->stride[m]) pl->stride[m] = r;
    }
  }
  *out = pl;
  return TRNC_OK;
}

/* Allocates what m lacks for a run of pl (SBUF, PSUM, scratch, HBM pointers;
 * the JIT's workspace when code runs). */
static bool mem_ready(const trnc_nc_sim_plan *pl, const trnc_host_code *code, sim_mem *m) {
  const trnc_nc_program *p = pl->p;
  int64_t parts = p->target->partitions;
  if (!m->sbuf) m->sbuf = malloc((size_t)(parts * pl->stride[0]));
  if (!m->psum) m->psum = malloc((size_t)(parts * pl->stride[1]));
  if (!m->scratch) m->scratch = malloc((size_t)(p->scratch ? p->scratch : 1));
  if (!m->hbm) m->hbm = calloc(p->nbufs ? p->nbufs : 1, sizeof *m->hbm);
  if (code && !m->jtmp) {
    int64_t n = trnc_host_tmp_floats(code);
    m->jtmp = malloc((size_t)(n ? n : 1) * sizeof *m->jtmp);
    if (!m->jtmp) return false;
  }
  return m->sbuf && m->psum && m->scratch && m->hbm;
}

static void mem_free(sim_mem *m) {
  free(m->sbuf);
  free(m->psum);
  free(m->scratch);
  free(m->hbm);
  for (int i = 0; i < 4; i++) free(m->tmp[i]);
  free(m->jtmp);
}

/* One run of pl's program in memory m: host code `code` when not NULL (no
 * collective steps then), else the interpreter. fill: NaN-fill SBUF/PSUM per
 * kernel (interpreter only). */
static trnc_status sim_run(const trnc_nc_sim_plan *pl, const trnc_host_code *code, sim_mem *m,
                           const void *const *inputs, void *const *outputs,
                           const trnc_collective_engine *engine, trnc_diags *diags, bool fill) {
  const trnc_nc_program *p = pl->p;
  sim S;
  memset(&S, 0, sizeof S);
  S.p = p;
  S.t = p->target;
  S.plan = pl;
  S.diags = diags;
  S.engine = engine;
  if (!mem_ready(pl, code, m)) return oom(&S);
  S.sbuf = m->sbuf;
  S.psum = m->psum;
  S.scratch = m->scratch;
  S.hbm = m->hbm;
  memcpy(S.tmp, m->tmp, sizeof S.tmp);
  memcpy(S.tmpcap, m->tmpcap, sizeof S.tmpcap);
  trnc_status st = TRNC_OK;
  size_t ni = 0, no = 0;
  memset(S.scratch, 0xff, (size_t)p->scratch);
  for (size_t b = 0; b < p->nbufs; b++) {
    const trnc_nc_buffer *bf = &p->bufs[b];
    if (bf->kind == TRNC_NC_BUF_INTERNAL) {
      S.hbm[b] = S.scratch + bf->offset;
      continue;
    }
    void *ptr = bf->kind == TRNC_NC_BUF_INPUT ? (inputs ? (void *)(uintptr_t)inputs[ni] : NULL)
                                              : (outputs ? outputs[no] : NULL);
    if (!ptr) {
      st = trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "simulator: no host memory for %s buffer '%s'",
                           bf->kind == TRNC_NC_BUF_INPUT ? "input" : "output", bf->name);
      break;
    }
    if (bf->kind == TRNC_NC_BUF_INPUT) ni++;
    else no++;
    S.hbm[b] = ptr;
  }
  if (code && !st) return trnc_host_run(code, p, S.hbm, S.sbuf, S.psum, m->jtmp, diags);
  for (size_t k = 0; k < p->nkernels && !st; k++)
    st = p->kernels[k].cc ? run_collective(&S, k) : run_kernel(&S, k, fill);
  /* after an error: collectives in flight still finish before their memory goes */
  for (int f = 0; f < S.ncc; f++) {
    trnc_diags *quiet = trnc_diags_create();
    engine->wait(engine->ctx, S.cc[f].engine_handle, quiet);
    trnc_diags_destroy(quiet);
    free(S.cc[f].staging);
  }
  memcpy(m->tmp, S.tmp, sizeof S.tmp); /* row buffers grown by this run stay */
  memcpy(m->tmpcap, S.tmpcap, sizeof S.tmpcap);
  return st;
}

/* A run in the plan's memory, or in private memory when another thread's
 * run holds it. */
static trnc_status plan_run(trnc_nc_sim_plan *pl, const trnc_host_code *code, const void *const *inputs,
                            void *const *outputs, const trnc_collective_engine *engine, trnc_diags *diags,
                            bool fill) {
  if (pthread_mutex_trylock(&pl->mu) == 0) {
    trnc_status st = sim_run(pl, code, &pl->mem, inputs, outputs, engine, diags, fill);
    pthread_mutex_unlock(&pl->mu);
    return st;
  }
  sim_mem local;
  memset(&local, 0, sizeof local);
  trnc_status st = sim_run(pl, code, &local, inputs, outputs, engine, diags, fill);
  mem_free(&local);
  return st;
}

/** The last error message of d, or "". */
static const char *last_error(const trnc_diags *d) {
  for (size_t i = trnc_diags_count(d); i-- > 0;) {
    const trnc_diag *g = trnc_diags_get(d, i);
    if (g->severity == TRNC_SEV_ERROR) return g->message;
  }
  return "";
}

/* TRNC_SIM=check: the JIT (private memory) on copies of the outputs, the
 * interpreter on the caller's; any difference in status, diagnostic or
 * output byte is TRNC_ERR_INTERNAL. */
static trnc_status run_check(trnc_nc_sim_plan *pl, const trnc_host_code *code, const void *const *inputs,
                             void *const *outputs, trnc_diags *diags, bool fill) {
  const trnc_nc_program *p = pl->p;
  size_t nout = 0;
  for (size_t b = 0; b < p->nbufs; b++) nout += p->bufs[b].kind == TRNC_NC_BUF_OUTPUT;
  void **copy = calloc(nout ? nout : 1, sizeof *copy);
  trnc_diags *jd = trnc_diags_create();
  trnc_status st = TRNC_OK;
  if (!copy || !jd) {
    st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "TRNC_SIM=check: out of memory");
    goto out;
  }
  for (size_t b = 0, j = 0; b < p->nbufs; b++) {
    if (p->bufs[b].kind != TRNC_NC_BUF_OUTPUT) continue;
    if (outputs && outputs[j]) {
      if (!(copy[j] = malloc((size_t)p->bufs[b].bytes + 1))) {
        st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "TRNC_SIM=check: out of memory");
        goto out;
      }
      memcpy(copy[j], outputs[j], (size_t)p->bufs[b].bytes);
    }
    j++;
  }
  sim_mem local;
  memset(&local, 0, sizeof local);
  trnc_status js = sim_run(pl, code, &local, inputs, outputs ? copy : NULL, NULL, jd, false);
  mem_free(&local);
  st = plan_run(pl, NULL, inputs, outputs, NULL, diags, fill);
  if (js != st) {
    st = trnc_diag_error(diags, TRNC_ERR_INTERNAL,
                         "TRNC_SIM=check: the interpreter returned %s but the JIT %s (%s) (a trnc bug: please "
                         "report it with TRNC_DUMP_DIR output)",
                         trnc_status_name(st), trnc_status_name(js), last_error(jd));
    goto out;
  }
  if (st) {
    if (strcmp(last_error(jd), last_error(diags)))
      st = trnc_diag_error(diags, TRNC_ERR_INTERNAL, "TRNC_SIM=check: the JIT reported '%s'", last_error(jd));
    goto out;
  }
  for (size_t b = 0, j = 0; b < p->nbufs && !st; b++) {
    if (p->bufs[b].kind != TRNC_NC_BUF_OUTPUT) continue;
    const uint8_t *x = outputs[j], *y = copy[j];
    for (int64_t i = 0; i < p->bufs[b].bytes; i++)
      if (x[i] != y[i]) {
        st = trnc_diag_error(diags, TRNC_ERR_INTERNAL,
                             "TRNC_SIM=check: output buffer '%s' differs at byte %lld: interpreter 0x%02x, JIT "
                             "0x%02x (a trnc bug: please report it with TRNC_DUMP_DIR output)",
                             p->bufs[b].name, (long long)i, x[i], y[i]);
        break;
      }
    j++;
  }
out:
  for (size_t j = 0; copy && j < nout; j++) free(copy[j]);
  free(copy);
  trnc_diags_destroy(jd);
  return st;
}

/* True if the host backend translates every instruction of p bit for bit:
 * programs with collective steps run on the interpreter only (exact
 * integer instructions are translated: host_llvm.c's emit_int). */
static bool jit_translates(const trnc_nc_program *p) {
  if (trnc_nc_program_collective_count(p) > 0) return false;
  for (size_t k = 0; k < trnc_nc_program_kernel_count(p); k++)
    for (size_t i = 0; i < trnc_nc_kernel_instr_count(p, k); i++) {
      const trnc_nc_instr *in = trnc_nc_kernel_instr(p, k, i);
      /* bitvec ALUs outside an exact integer instruction (float operands)
       * have no host translation */
      if (!trnc_nc_instr_int_exact(in) && (in->alu0 >= TRNC_NC_ALU_BIT_AND || in->alu1 >= TRNC_NC_ALU_BIT_AND))
        return false;
    }
  return true;
}

/* A run of pl on the engine TRNC_SIM names (artifact: AUTO when unset);
 * programs the JIT does not translate (collective steps: only the
 * interpreter drives the distributed engine; exact integer instructions)
 * always interpret. */
static trnc_status run_engine(trnc_nc_sim_plan *pl, const void *const *inputs, void *const *outputs,
                              const trnc_collective_engine *engine, trnc_diags *diags, bool artifact,
                              bool fill) {
  trnc_engine e;
  trnc_status st = trnc_engine_from_env(&e, artifact, diags);
  if (st) return st;
  const trnc_host_code *code = NULL;
  bool interp_only = pl->interp_only;
  bool timed = e == TRNC_ENGINE_AUTO && !interp_only;
  if (!interp_only) code = trnc_engine_pick(&pl->jit, pl->p, pl->stride, &e);
  if (code && e == TRNC_ENGINE_CHECK) return run_check(pl, code, inputs, outputs, diags, fill);
  if (!timed || code) return plan_run(pl, code, inputs, outputs, engine, diags, fill);
  /* AUTO on the interpreter: its time is what decides when to compile */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  st = plan_run(pl, NULL, inputs, outputs, engine, diags, fill);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  trnc_engine_note_interp(&pl->jit, (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  return st;
}

trnc_engine_slot *nc_plan_slot(trnc_nc_sim_plan *pl) { return &pl->jit; }

double trnc_nc_sim_plan_jit_seconds(const trnc_nc_sim_plan *pl) {
  return pl ? trnc_engine_slot_seconds(&pl->jit) : 0.0;
}

trnc_status trnc_nc_simulate_planned(trnc_nc_sim_plan *pl, const void *const *inputs,
                                     void *const *outputs, const trnc_collective_engine *engine,
                                     trnc_diags *diags) {
  if (!pl) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL simulator plan");
  return run_engine(pl, inputs, outputs, engine, diags, true, false);
}

static trnc_status nc_simulate(const trnc_nc_program *p, const void *const *inputs, void *const *outputs,
                        const trnc_collective_engine *engine, trnc_diags *diags, bool verify) {
  if (!p) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL program");
  if (verify) {
    trnc_status vs = trnc_nc_program_verify(p, diags);
    if (vs) return vs;
  }
  trnc_nc_sim_plan *pl;
  trnc_status st = trnc_nc_sim_plan_create(p, &pl, diags);
  if (st) return st;
  st = run_engine(pl, inputs, outputs, engine, diags, false, true);
  trnc_nc_sim_plan_destroy(pl);
  return st;
}

trnc_status trnc_nc_simulate(const trnc_nc_program *p, const void *const *inputs, void *const *outputs,
                             trnc_diags *diags) {
  return nc_simulate(p, inputs, outputs, NULL, diags, true);
}

trnc_status trnc_nc_simulate_verified(const trnc_nc_program *p, const void *const *inputs,
                                      void *const *outputs, trnc_diags *diags) {
  return nc_simulate(p, inputs, outputs, NULL, diags, false);
}

trnc_status trnc_nc_simulate_with(const trnc_nc_program *p, const void *const *inputs,
                                  void *const *outputs, const trnc_collective_engine *engine,
                                  trnc_diags *diags) {
  return nc_simulate(p, inputs, outputs, engine, diags, false);
}
