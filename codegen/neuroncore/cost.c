/*
 * cost.c — cost model of a NeuronCore program and Chrome trace export.
 * Part of the NeuronCore contract: codegen costs the programs it emits
 * (trnc_compile's report) and tools cost programs they load, so it sits
 * below both codegen/ and runtime/.
 *
 * Each queue (TensorE, VectorE, ScalarE, GpSimd, 16 DMA queues) runs its
 * instructions in order; an instruction starts when its queue is free and
 * every semaphore it waits on has been signalled (by the completion of the
 * producing instruction). The estimate is the critical path; kernels run
 * one after another.
 *
 * Per-instruction rules (public NKI performance guides, numbers from the
 * target table in codegen/neuroncore/target.c):
 *  TensorE matmul: max(N, 64) cycles (N = moving free size), x4 for fp32
 *    inputs, / fp8 speedup for fp8; loading a new stationary operand costs
 *    128 cycles, hidden behind the previous matmul's moving phase when the
 *    PE array was busy up to this instruction. A matmul never uses fewer
 *    than N cycles, so no program beats the TensorE peak.
 *  TensorE transpose: identity matmul with N = source partitions, plus the
 *    stationary load.
 *  VectorE / GpSimd: fixed ~100 cycles + N cycles per input tensor (N = free
 *    elements per partition; fewer partitions cost the same).
 *  ScalarE: 64 cycles accumulator read + 60-cycle bubble per SBUF/PSUM
 *    operand + N cycles (scale and bias are free).
 *  DMA: fixed cost + bytes / per-queue bandwidth; each contiguous run
 *    moves at least 64 bytes (our assumption of the DMA burst granularity,
 *    so element-strided DMA is slow).
 *  Shared RAM ports (NC-v2, target flags): VectorE and GpSimd instructions
 *    that touch SBUF run one at a time, and so do VectorE and ScalarE
 *    instructions that touch PSUM; an instruction holds the port for its
 *    whole duration, and ports are granted in schedule order (a later
 *    instruction does not fill an earlier gap).
 *
 * Collectives run on one more queue, the interconnect ("collective" track),
 * as ring algorithms over G ranks with per-rank link bandwidth B = the chip's
 * NeuronLink bandwidth / NeuronCores per chip (every core of a chip talks at
 * once in data- and tensor-parallel training) and a fixed cost L per ring
 * step (target table):
 *    all_reduce      2(G-1) L + 2 (G-1)/G * bytes / B
 *    all_gather      (G-1) L + (G-1)/G * dst bytes / B
 *    reduce_scatter  (G-1) L + (G-1)/G * src bytes / B
 *    all_to_all      (G-1) L + (G-1)/G * src bytes / B
 *    broadcast       (G-1) L + bytes / B   (pipelined chain)
 * A START begins once the kernels before it have finished and the
 * interconnect is free; a WAIT holds the next kernel until its collective
 * has finished, so kernels between them hide it.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

#define DMA_MIN_RUN_BYTES 64.0

static int64_t ap_runs(const trnc_nc_ap *ap) {
  int64_t n = nc_ap_elems(ap);
  if (ap->nfree > 0 && ap->free[ap->nfree - 1].stride == 1) n /= ap->free[ap->nfree - 1].count;
  return n;
}

static double dtype_factor(const trnc_nc_target *t, int dt) {
  if (dt == TRNC_F32) return t->pe_fp32_slowdown;
  if (dt == TRNC_F8E4M3 || dt == TRNC_F8E5M2) return 1.0 / t->pe_fp8_speedup;
  return 1.0;
}

static bool ap_same(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  return a->mem == b->mem && a->start_partition == b->start_partition && a->partitions == b->partitions &&
         a->offset == b->offset && a->dtype == b->dtype && a->nfree == b->nfree &&
         !memcmp(a->free, b->free, sizeof a->free);
}

double nc_collective_time(const trnc_nc_target *t, const trnc_nc_collective *cc) {
  double g = cc->group_size > 1 ? cc->group_size : 1, steps = g - 1;
  if (steps <= 0) return 0.0;
  double bw = t->link_bytes_per_s / (t->cores_per_chip > 0 ? t->cores_per_chip : 1);
  double lat = t->cc_step_latency_s, frac = steps / g;
  switch (cc->op) {
    case TRNC_NC_CC_ALL_REDUCE: return 2 * steps * lat + 2 * frac * (double)cc->src_bytes / bw;
    case TRNC_NC_CC_ALL_GATHER: return steps * lat + frac * (double)cc->dst_bytes / bw;
    case TRNC_NC_CC_REDUCE_SCATTER: case TRNC_NC_CC_ALL_TO_ALL:
      return steps * lat + frac * (double)cc->src_bytes / bw;
    case TRNC_NC_CC_BROADCAST: return steps * lat + (double)cc->src_bytes / bw;
    default: return 0.0;
  }
}

typedef struct pe_state {
  const trnc_nc_ap *last_stationary;
  double last_moving_cycles;
} pe_state;

/* Duration in seconds of instruction in. pe_busy: TensorE ran up to this
 * instruction's start (so a stationary load can hide behind the previous
 * matmul). Adds DMA bytes to *dma_bytes. */
static double instr_cost(const trnc_nc_target *t, const trnc_nc_instr *in, pe_state *pe, bool pe_busy,
                         double *dma_bytes) {
  int64_t n = trnc_nc_ap_free_elems(&in->dst);
  switch ((trnc_nc_opcode)in->op) {
    case TRNC_NC_OP_NOP:
      return 0.0;
    case TRNC_NC_OP_MATMUL:
    case TRNC_NC_OP_TRANSPOSE: {
      const trnc_nc_ap *st = &in->src[0];
      double nmov = in->op == TRNC_NC_OP_MATMUL ? (double)trnc_nc_ap_free_elems(&in->src[1]) : st->partitions;
      double f = dtype_factor(t, st->dtype);
      double mov = fmax(nmov, t->pe_min_moving_cycles) * f;
      double load = 0;
      if (in->op == TRNC_NC_OP_TRANSPOSE || !pe->last_stationary || !ap_same(pe->last_stationary, st)) {
        double hidden = pe_busy ? pe->last_moving_cycles : 0.0;
        load = fmax(0.0, t->pe_stationary_load_cycles - hidden);
      }
      pe->last_stationary = in->op == TRNC_NC_OP_MATMUL ? st : NULL;
      pe->last_moving_cycles = mov;
      return (mov + load) / t->tensor_hz;
    }
    case TRNC_NC_OP_DMA_COPY: {
      const trnc_nc_ap *d = &in->dst, *s = &in->src[0];
      /* an indirect DMA moves rows of the tile's size, not the whole table */
      if (in->mode == TRNC_NC_DMA_GATHER) s = d;
      else if (in->mode == TRNC_NC_DMA_SCATTER) d = s;
      double bytes = (double)nc_ap_elems(d) * (double)trnc_nc_dtype_size((trnc_dtype)d->dtype);
      double sb = (double)nc_ap_elems(s) * (double)trnc_nc_dtype_size((trnc_dtype)s->dtype);
      if (sb > bytes) bytes = sb;
      int64_t runs = ap_runs(d) > ap_runs(s) ? ap_runs(d) : ap_runs(s);
      double eff = fmax(bytes, (double)runs * DMA_MIN_RUN_BYTES);
      *dma_bytes += bytes;
      return t->dma_fixed_s + eff / t->dma_bytes_per_s_per_queue;
    }
    default:
      break;
  }
  if (in->op == TRNC_NC_OP_TENSOR_REDUCE) n = trnc_nc_ap_free_elems(&in->src[0]);
  int inputs = 0, operands = 0;
  for (int s = 0; s < 5; s++) {
    const trnc_nc_ap *ap = nc_slot(in, s);
    if (!ap->mem) continue;
    operands++;
    if (s >= 2 && trnc_nc_ap_free_elems(ap) > 1) inputs++;
  }
  if (inputs < 1) inputs = 1;
  if (in->engine == TRNC_NC_SCALAR)
    return (t->scalar_fixed_cycles + t->scalar_access_bubble_cycles * operands + (double)n) / t->scalar_hz;
  if (in->engine == TRNC_NC_GPSIMD && t->gpsimd_lanes > 0) {
    /* GpSimd: its lanes cover partitions x free elements ([gpsimd] in
     * target.c), so a tile of fewer partitions costs less, unlike VectorE */
    double elems = (double)in->dst.partitions * (double)n * inputs;
    return (t->vector_fixed_cycles + ceil(elems / t->gpsimd_lanes)) / t->gpsimd_hz;
  }
  return (t->vector_fixed_cycles + (double)n * inputs) / (in->engine == TRNC_NC_GPSIMD ? t->gpsimd_hz : t->vector_hz);
}

/* Bit 0: the instruction touches SBUF, bit 1: PSUM (any operand slot). */
static unsigned ram_touched(const trnc_nc_instr *in) {
  unsigned m = 0;
  for (int s = 0; s < 5; s++) {
    const trnc_nc_ap *ap = nc_slot(in, s);
    if (ap->mem == TRNC_NC_MEM_SBUF) m |= 1u;
    else if (ap->mem == TRNC_NC_MEM_PSUM) m |= 2u;
  }
  return m;
}

/* The shared ports (bit 0: SBUF VectorE/GpSimd, bit 1: PSUM VectorE/ScalarE)
 * the instruction must hold on target t. */
static unsigned ports_held(const trnc_nc_target *t, const trnc_nc_instr *in) {
  unsigned touched = ram_touched(in), ports = 0;
  if (t->sbuf_port_vector_gpsimd_shared && (in->engine == TRNC_NC_VECTOR || in->engine == TRNC_NC_GPSIMD))
    ports |= touched & 1u;
  if (t->psum_port_vector_scalar_shared && (in->engine == TRNC_NC_VECTOR || in->engine == TRNC_NC_SCALAR))
    ports |= touched & 2u;
  return ports;
}

static void trace_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

trnc_status trnc_nc_cost_estimate(const trnc_nc_program *p, const char *trace_path, trnc_nc_cost *out,
                                  trnc_diags *diags) {
  if (!p || !out) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL argument");
  memset(out, 0, sizeof *out);
  trnc_status st = trnc_nc_program_verify(p, diags);
  if (st) return st;
  return trnc_nc_cost_estimate_verified(p, trace_path, out, diags);
}

trnc_status trnc_nc_cost_estimate_verified(const trnc_nc_program *p, const char *trace_path,
                                           trnc_nc_cost *out, trnc_diags *diags) {
  if (!p || !out) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL argument");
  memset(out, 0, sizeof *out);
  trnc_status st = TRNC_OK;
  if (!trace_path) {
    const char *env = getenv("TRNC_PROFILE");
    if (env && env[0]) trace_path = env;
  }
  const trnc_nc_target *t = p->target;
  FILE *tf = NULL;
  if (trace_path) {
    tf = fopen(trace_path, "w");
    if (!tf) return trnc_diag_error(diags, TRNC_ERR_IO, "cannot write trace '%s'", trace_path);
    fprintf(tf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    fprintf(tf, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"NeuronCore %s (%s)\"}}",
            t->name, t->core);
    for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) {
      fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", e,
              trnc_nc_engine_name(e));
      fprintf(tf, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
              e, e);
    }
  }
  double t0 = 0.0, ideal_pe = 0.0, cc_free = 0.0;
  double cc_end[TRNC_NC_CC_MAX_INFLIGHT];
  int32_t cc_handle[TRNC_NC_CC_MAX_INFLIGHT];
  int ncc = 0;
  if (tf)
    fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"collective\"}}",
            TRNC_NC_ENGINE_COUNT);
  for (size_t k = 0; k < p->nkernels && !st; k++) {
    const trnc_nc_collective *cc = p->kernels[k].cc;
    if (cc && cc->op == TRNC_NC_CC_WAIT) {
      for (int f = 0; f < ncc; f++) {
        if (cc_handle[f] != cc->handle) continue;
        if (cc_end[f] > t0) {
          out->collective_exposed_s += cc_end[f] - t0;
          t0 = cc_end[f];
        }
        cc_end[f] = cc_end[ncc - 1];
        cc_handle[f] = cc_handle[--ncc];
        break;
      }
      continue;
    }
    if (cc) {
      double dur = nc_collective_time(t, cc), start = cc_free > t0 ? cc_free : t0;
      cc_free = start + dur;
      if (ncc < TRNC_NC_CC_MAX_INFLIGHT) {
        cc_end[ncc] = cc_free;
        cc_handle[ncc++] = cc->handle;
      }
      out->collectives++;
      out->collective_s += dur;
      if (tf && dur > 0)
        fprintf(tf, ",\n{\"name\":\"%s\",\"cat\":\"collective\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                    "\"ts\":%.4f,\"dur\":%.4f,\"args\":{\"group\":",
                trnc_nc_cc_op_name(cc->op), TRNC_NC_ENGINE_COUNT, start * 1e6, dur * 1e6);
      if (tf && dur > 0) {
        trace_str(tf, cc->group);
        fprintf(tf, ",\"bytes\":%" PRId64 "}}", cc->src_bytes);
      }
      continue;
    }
    nc_schedule sc;
    st = nc_schedule_build(p, k, &sc, diags);
    if (st) break;
    const nc_kernel *kn = &p->kernels[k];
    double *end = malloc((kn->n ? kn->n : 1) * sizeof *end);
    if (!end) {
      nc_schedule_free(&sc);
      st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
      break;
    }
    double qfree[TRNC_NC_ENGINE_COUNT] = {0}, kend = 0.0, port_free[2] = {0.0, 0.0};
    pe_state pe = {NULL, 0.0};
    for (size_t oi = 0; oi < sc.n; oi++) {
      size_t i = sc.order[oi];
      const trnc_nc_instr *in = &kn->instrs[i];
      double start = qfree[in->engine];
      for (int w = 0; w < TRNC_NC_MAX_WAIT; w++) {
        size_t pr = sc.producer[i * TRNC_NC_MAX_WAIT + w];
        if (pr != SIZE_MAX && end[pr] > start) start = end[pr];
      }
      unsigned ports = ports_held(t, in);
      for (int pt = 0; pt < 2; pt++)
        if ((ports >> pt & 1u) && port_free[pt] > start) start = port_free[pt];
      bool pe_busy = in->engine == TRNC_NC_TENSOR && start <= qfree[TRNC_NC_TENSOR] && oi > 0;
      double dur = instr_cost(t, in, &pe, pe_busy, &out->dma_bytes);
      end[i] = start + dur;
      for (int pt = 0; pt < 2; pt++)
        if (ports >> pt & 1u) port_free[pt] = end[i];
      qfree[in->engine] = end[i];
      if (end[i] > kend) kend = end[i];
      out->busy_s[in->engine] += dur;
      if (in->op == TRNC_NC_OP_MATMUL) {
        double fl = 2.0 * in->src[0].partitions * (double)trnc_nc_ap_free_elems(&in->src[0]) *
                    (double)trnc_nc_ap_free_elems(&in->src[1]);
        out->matmul_flops += fl;
        ideal_pe += fl / trnc_nc_target_peak_flops(t, (trnc_dtype)in->src[0].dtype);
      }
      if (tf && dur > 0) {
        fprintf(tf, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.4f,\"dur\":%.4f,"
                    "\"args\":{\"kernel\":",
                trnc_nc_opcode_name(in->op), trnc_nc_engine_name(in->engine), in->engine, (t0 + start) * 1e6,
                dur * 1e6);
        trace_str(tf, kn->name);
        fprintf(tf, ",\"index\":%zu}}", i);
      }
      out->instructions++;
    }
    t0 += kend;
    free(end);
    nc_schedule_free(&sc);
  }
  if (tf) {
    fprintf(tf, "\n]}\n");
    if (fclose(tf) != 0 && !st) st = trnc_diag_error(diags, TRNC_ERR_IO, "cannot write trace '%s'", trace_path);
  }
  if (st) return st;
  out->time_s = t0;
  for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) {
    out->util[e] = t0 > 0 ? out->busy_s[e] / t0 : 0.0;
    if (nc_is_dma(e)) out->dma_busy_s += out->busy_s[e];
  }
  out->dma_util = t0 > 0 ? out->dma_busy_s / (t0 * t->dma_queues) : 0.0;
  out->tensor_peak_flops_per_s = ideal_pe > 0 ? out->matmul_flops / ideal_pe : trnc_nc_target_peak_flops(t, TRNC_BF16);
  out->tensor_flop_util = t0 > 0 ? ideal_pe / t0 : 0.0;
  out->dma_bytes_per_s = t0 > 0 ? out->dma_bytes / t0 : 0.0;
  out->dma_bw_util = out->dma_bytes_per_s / (t->dma_bytes_per_s_per_queue * t->dma_queues);
  return TRNC_OK;
}

char *trnc_nc_cost_format(const trnc_nc_program *p, const trnc_nc_cost *c) {
  if (!p || !c) return NULL;
  char *buf = malloc(4096);
  if (!buf) return NULL;
  const trnc_nc_target *t = p->target;
  int n = snprintf(buf, 4096,
                   "target %s: estimated %.3f us, %zu instructions\n"
                   "TensorE: %.2f GFLOP, %.1f%% of peak %.1f TFLOP/s\n"
                   "DMA: %.2f MiB, %.1f GB/s = %.1f%% of %.0f GB/s (queues %.1f%% busy)\n",
                   t->name, c->time_s * 1e6, c->instructions, c->matmul_flops * 1e-9, c->tensor_flop_util * 100,
                   c->tensor_peak_flops_per_s * 1e-12, c->dma_bytes / 1048576.0, c->dma_bytes_per_s * 1e-9,
                   c->dma_bw_util * 100, t->dma_bytes_per_s_per_queue * t->dma_queues * 1e-9, c->dma_util * 100);
  if (c->collectives && n > 0 && n < 3900)
    n += snprintf(buf + n, 4096 - (size_t)n, "collectives: %zu, %.3f us on the interconnect, %.3f us not hidden by kernels\n",
                  c->collectives, c->collective_s * 1e6, c->collective_exposed_s * 1e6);
  for (int e = 0; e < TRNC_NC_DMA0 && n > 0 && n < 4000; e++)
    n += snprintf(buf + n, 4096 - (size_t)n, "%-7s busy %.3f us (%.1f%%)\n", trnc_nc_engine_name(e),
                  c->busy_s[e] * 1e6, c->util[e] * 100);
  return buf;
}
