/*
 * target.c — the trn1, trn2 and trn3 NeuronCore descriptions: one const
 * table each, every number with its public source (collected in
 * shared/design/neuroncore.md from AWS Neuron documentation).
 *
 * Sources (abbreviated below):
 *  [arch1]  Neuron docs, "Trainium/Inferentia2 Architecture Guide for NKI"
 *           (NeuronCore-v2: engine clocks and data-path table, TensorE,
 *           VectorE, ScalarE cost models, SBUF/PSUM, DMA engines)
 *  [dma1]   Neuron docs, "Guideline to Avoid Under-Utilizing DMA Bandwidth"
 *           (nki-dma-bandwidth-guide): "TRN1 17 B/ns per engine, 16 engines,
 *           272 GB/s"; the NKI DMA overview gives 27.2 GB/s per engine as the
 *           theoretical peak
 *  [mm1]    Neuron docs, NKI matrix multiplication tutorial, benchmark table
 *           on Trn1.32xlarge ([4096,8192] @ [8192,8192] bf16): 51.80 /
 *           42.96 / 22.07 / 6.97 ms; see docs/cost-model.md
 *  [arch2]  Neuron docs, "Trainium2 architecture" / "NeuronCore-v3 architecture"
 *  [arch3]  Neuron docs, "Trainium3 architecture" / "NeuronCore-v4 architecture"
 *  [isa]    NKI ISA reference (nki.isa.nc_matmul, memory hierarchy)
 *  [perf]   NKI performance guide (engine cost rules of thumb)
 *  [dma]    NKI DMA bandwidth guide
 *  [link2]  Neuron docs, "Trainium2 architecture": "NeuronLink-v3 for
 *           chip-to-chip interconnect provides 1.28 TB/sec bandwidth per chip"
 *  [link3]  Neuron docs, "Trainium3 architecture": "NeuronLink-v4 ... provides
 *           2.56 TB/sec bandwidth per device"
 *  [gpsimd] Neuron docs, "NeuronCore-v2 architecture": the GpSimd engine is
 *           eight fully programmable 512-bit wide vector processors, i.e.
 *           8 x 16 int32/fp32 lanes = 128 elements per cycle over all
 *           partitions (our reading; NC-v3/v4 are described alike). Its
 *           int32 tensor_tensor uses native integer arithmetic
 *           (nki.isa.tensor_tensor, Neuron 2.29+).
 *
 * Collectives (cost.c) run over the chip's NeuronLinks, shared by its
 * NeuronCores; no public per-hop latency is published, so a ring step costs
 * the DMA fixed cost of NC-v2 ([perf]: ~2 us per DMA), our assumption.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "trnc/neuroncore.h"

static const trnc_nc_target k_trn1 = {
    .name = "trn1",
    .core = "NeuronCore-v2",
    .partitions = 128,                       /* [arch1] SBUF/PSUM 128 partitions */
    .sbuf_bytes_per_partition = 192 * 1024,  /* [arch1] SBUF 24 MiB = 128 x 192 KiB */
    .psum_bytes_per_partition = 16 * 1024,   /* [arch1] PSUM 2 MiB = 128 x 16 KiB */
    .psum_banks = 8,                         /* [arch1] 8 banks per partition */
    .psum_bank_bytes = 2048,                 /* [arch1] 512 fp32 values per bank */
    .mm_max_k = 128,                         /* [arch1] stationary/moving partitions <= 128 */
    .mm_max_m = 128,                         /* [arch1] stationary free size <= 128 */
    .mm_max_n = 512,                         /* [arch1] moving free size <= 512 (one PSUM bank) */
    /* [arch1] engine clocks: Tensor 2.8 GHz, Vector 1.12, Scalar 1.4, GpSimd
     * 1.4. 128x128x2x2.8 GHz = 91.8 TFLOPS, the guide's "92 TFLOPS" bf16
     * (the chip page's 190 TFLOPS for two cores implies 2.9 GHz). */
    .tensor_hz = 2.8e9,
    .vector_hz = 1.12e9,
    .scalar_hz = 1.4e9,
    .gpsimd_hz = 1.4e9,
    .gpsimd_lanes = 128,                     /* [gpsimd] 8 cores x 512-bit SIMD (NeuronCore-v2) */
    .pe_rows = 128, .pe_cols = 128,          /* [arch1] 128 x 128 systolic array */
    .pe_fp32_slowdown = 4.0,                 /* [arch1] fp32 ~4x; 23 vs 92 TFLOPS */
    .pe_fp8_speedup = 1.0,                   /* [arch1] cFP8 at the bf16 rate; [isa] no perf mode on NC-v2 */
    .pe_min_moving_cycles = 64,              /* [arch1] MM_INIT_LATENCY 64 cycles on NC-v2 */
    .pe_stationary_load_cycles = 32,         /* [arch1] fast LoadStationary up to 4x faster: 128/4 */
    .vector_fixed_cycles = 100.0,            /* [arch1] static overhead of 100 cycles */
    .scalar_fixed_cycles = 64.0,             /* [arch1] ActReadAccumulator ~64 cycles on NC-v2 */
    .scalar_access_bubble_cycles = 60.0,     /* [arch1] ~60-cycle tensor access overhead on NC-v2 */
    .dma_queues = 16,                        /* [arch1] 16 DMA engines per NeuronCore-v2 */
    .dma_bytes_per_s_per_queue = 17e9,       /* [dma1] 17 B/ns per engine (sustained) */
    /* No public per-transfer figure for NC-v2 ([dma1] gives ~1.3 us of
     * semaphore-to-start latency, which overlapping transfers hide): the
     * queue occupancy per DMA is fitted to the three DMA-bound kernels of
     * [mm1] (least squares on relative error, docs/cost-model.md). */
    .dma_fixed_s = 600e-9,
    .hbm_bytes_per_s = 820e9,                /* [arch1] 2 HBM stacks, 820 GB/s per device */
    .cores_per_chip = 2,                     /* [arch1] 2 NeuronCore-v2 per Trainium device */
    /* No public NeuronLink-v2 bandwidth figure (the Trn1 pages say only
     * "NeuronLink-v2"); assumed half of NeuronLink-v3's 1.28 TB/s. */
    .link_bytes_per_s = 640e9,
    .cc_step_latency_s = 2e-6,               /* assumed, as trn2 */
    .sbuf_port_vector_gpsimd_shared = true,  /* [arch1] VectorE and GpSimd cannot access SBUF in parallel */
    .psum_port_vector_scalar_shared = true,  /* [arch1] VectorE and ScalarE cannot access PSUM in parallel */
};

static const trnc_nc_target k_trn2 = {
    .name = "trn2",
    .core = "NeuronCore-v3",
    .partitions = 128,                       /* [arch2] SBUF 128 partitions */
    .sbuf_bytes_per_partition = 224 * 1024,  /* [arch2] SBUF 28 MiB = 128 x 224 KiB */
    .psum_bytes_per_partition = 16 * 1024,   /* [arch2] PSUM 2 MiB = 128 x 16 KiB */
    .psum_banks = 8,                         /* [isa] 8 banks per partition */
    .psum_bank_bytes = 2048,                 /* [isa] 2 KiB per bank per partition */
    .mm_max_k = 128,                         /* [isa] nc_matmul: K <= 128 (partitions) */
    .mm_max_m = 128,                         /* [isa] stationary free size <= 128 */
    .mm_max_n = 512,                         /* [isa] moving free size <= 512 (one PSUM bank) */
    /* [arch2] engine clocks. 128x128x2x2.4 GHz = 78.6 TFLOPS/core bf16; the
     * chip figure of 667 TFLOPS implies ~2.5 GHz. We use 2.4 GHz. */
    .tensor_hz = 2.4e9,
    .vector_hz = 0.96e9,                     /* [arch2] */
    .scalar_hz = 1.2e9,                      /* [arch2] */
    .gpsimd_hz = 1.2e9,                      /* [arch2] */
    .gpsimd_lanes = 128,                     /* [gpsimd] 8 cores x 512-bit SIMD */
    .pe_rows = 128, .pe_cols = 128,          /* [arch2] 128 x 128 systolic array */
    .pe_fp32_slowdown = 4.0,                 /* [perf] fp32 inputs cost ~4x; [arch2] 20 vs 79 TFLOPS */
    .pe_fp8_speedup = 2.0,                   /* [arch2] FP8 1,299 vs BF16 667 TFLOPS per chip */
    .pe_min_moving_cycles = 64,              /* [perf] one matmul per max(N, 64) cycles */
    .pe_stationary_load_cycles = 128,        /* [perf] loading 128 rows of stationary; overlaps prior matmul */
    .vector_fixed_cycles = 100.0,            /* [perf] ~100 cycles fixed for small/dependent instr */
    .scalar_fixed_cycles = 64.0,             /* [perf] ~64 cycles for the accumulator read */
    .scalar_access_bubble_cycles = 60.0,     /* [perf] ~60-cycle bubble per SBUF/PSUM access */
    .dma_queues = 16,                        /* [dma] 16 DMA engines per core */
    .dma_bytes_per_s_per_queue = 23e9,       /* [dma] 23 B/ns per engine -> ~368 GB/s per core */
    .dma_fixed_s = 600e-9,                   /* [dma] ~600 ns per DMA with NC-v3 hardware DGE */
    .hbm_bytes_per_s = 2.9e12,               /* [arch2] 2.9 TB/s per chip (NKI guide: 3 TB/s) */
    .cores_per_chip = 8,                     /* [arch2] 8 NeuronCores per Trn2 chip */
    .link_bytes_per_s = 1.28e12,             /* [link2] NeuronLink-v3, 1.28 TB/s per chip */
    .cc_step_latency_s = 2e-6,               /* assumed: [perf] ~2 us fixed per DMA (NC-v2) */
};

static const trnc_nc_target k_trn3 = {
    .name = "trn3",
    .core = "NeuronCore-v4",
    .partitions = 128,                       /* [arch3] */
    .sbuf_bytes_per_partition = 256 * 1024,  /* [arch3] 32 MiB = 128 x 256 KiB */
    .psum_bytes_per_partition = 16 * 1024,   /* [arch3] PSUM 2 MiB, same as NC-v3 */
    .psum_banks = 8,                         /* [arch3] */
    .psum_bank_bytes = 2048,                 /* [arch3] */
    .mm_max_k = 128,                         /* [isa] */
    .mm_max_m = 128,                         /* [isa] */
    /* [isa] NC-v4 allows a moving operand wider than one bank; no public
     * number was found, so we keep the one-bank limit (512 fp32). */
    .mm_max_n = 512,
    .tensor_hz = 2.4e9,                      /* [arch3] Tensor 2.4 GHz */
    .vector_hz = 1.2e9,                      /* [arch3] Vector 1.2 GHz */
    .scalar_hz = 1.2e9,                      /* [arch3] */
    .gpsimd_hz = 1.2e9,                      /* [arch3] */
    .gpsimd_lanes = 128,                     /* [gpsimd] (assumed as NC-v3) */
    .pe_rows = 128, .pe_cols = 128,          /* [arch3] */
    .pe_fp32_slowdown = 4.0,                 /* [arch3] ~20 FP32 vs ~79 BF16 TFLOPS per core */
    .pe_fp8_speedup = 4.0,                   /* [arch3] ~315 MXFP8 vs ~79 BF16 TFLOPS per core */
    .pe_min_moving_cycles = 64,              /* [perf] (NC-v2 rule, assumed unchanged) */
    .pe_stationary_load_cycles = 128,        /* [perf] (assumed unchanged) */
    .vector_fixed_cycles = 100.0,            /* [perf] (assumed unchanged) */
    .scalar_fixed_cycles = 64.0,             /* [perf] (assumed unchanged) */
    .scalar_access_bubble_cycles = 60.0,     /* [perf] (assumed unchanged) */
    .dma_queues = 16,                        /* [dma] 16 engines (assumed as NC-v3) */
    .dma_bytes_per_s_per_queue = 33e9,       /* [arch3] 33 B/ns per engine -> ~528 GB/s */
    .dma_fixed_s = 600e-9,                   /* [dma] NC-v3 DGE figure; no NC-v4 number published */
    .hbm_bytes_per_s = 4.9e12,               /* [arch3] 4.9 TB/s per chip (NKI guide: 4.7) */
    .cores_per_chip = 8,                     /* [arch3] */
    .link_bytes_per_s = 2.56e12,             /* [link3] NeuronLink-v4, 2.56 TB/s per device */
    .cc_step_latency_s = 2e-6,               /* assumed, as trn2 */
};

const trnc_nc_target *trnc_nc_target_trn1(void) { return &k_trn1; }
const trnc_nc_target *trnc_nc_target_trn2(void) { return &k_trn2; }
const trnc_nc_target *trnc_nc_target_trn3(void) { return &k_trn3; }

const trnc_nc_target *trnc_nc_target_by_name(const char *name) {
  if (!name) return NULL;
  if (!strcmp(name, "trn1")) return &k_trn1;
  if (!strcmp(name, "trn2")) return &k_trn2;
  if (!strcmp(name, "trn3")) return &k_trn3;
  return NULL;
}

const trnc_nc_target *trnc_nc_target_default(trnc_diags *diags) {
  const char *env = getenv("TRNC_TARGET");
  if (!env || !env[0]) return &k_trn2;
  const trnc_nc_target *t = trnc_nc_target_by_name(env);
  if (!t)
    trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                    "TRNC_TARGET=%s is not a known NeuronCore target (use trn1, trn2 or trn3)", env);
  return t;
}

double trnc_nc_target_peak_flops(const trnc_nc_target *t, trnc_dtype dt) {
  if (!t) return 0.0;
  double peak = 2.0 * t->pe_rows * t->pe_cols * t->tensor_hz;
  if (dt == TRNC_F32) return peak / t->pe_fp32_slowdown;
  if (dt == TRNC_F8E4M3 || dt == TRNC_F8E5M2) return peak * t->pe_fp8_speedup;
  return peak;
}
