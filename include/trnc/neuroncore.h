/*
 * neuroncore.h — trnc's model of an AWS Trainium NeuronCore: target tables,
 * instruction set, program format, verifier, functional simulator and cost
 * model.
 *
 * A *program* is a list of steps run one after the other: kernels and
 * collective steps (trnc_nc_collective, below). A kernel holds
 * instructions in one list; each instruction names the engine queue that
 * executes it (TensorE, VectorE, ScalarE, GpSimd, or one of 16 DMA queues).
 * Queues are in order; between queues, order exists only through
 * semaphores: an instruction may wait for "semaphore s >= v" and may signal
 * (increment) semaphores when it completes. Each semaphore is signalled by
 * one queue only, so "the v-th signal of s" names one instruction.
 *
 * Operands are access patterns (trnc_nc_ap) on HBM, SBUF or PSUM:
 *   SBUF/PSUM: start partition, partition count, byte offset inside every
 *              partition, dtype, up to 4 free-dimension [stride, count]
 *              pairs (strides in elements, free[0] outermost).
 *   HBM:       a buffer index, byte offset into that buffer, a partition
 *              [stride, count] pair (stride in elements) and the free pairs.
 * Elements of one partition are enumerated in free order (last dim fastest).
 *
 * Numerics: every store to a bf16/fp16/fp8 location rounds to nearest even
 * (see trnc_nc_encode). Engines compute in fp32; TensorE accumulates in fp32
 * PSUM. fp8 e4m3 is the OCP "e4m3fn" format (no inf, max 448); a value
 * rounding above 448 and +-inf saturate to +-448, as torch's
 * .to(torch.float8_e4m3fn) does (not ml_dtypes' NaN). fp8 e5m2 is IEEE-like
 * (inf, max 57344; a value rounding above it -> +-inf, as torch). NaN keeps
 * its sign and stores as S.1111.111 (e4m3) / S.11111.11 (e5m2), as torch.
 * Float -> integer stores truncate toward zero and saturate; NaN -> 0
 * (numpy astype semantics for in-range values, as the NKI simulator).
 *
 * Hardware numbers live in the trn1/trn2/trn3 target tables
 * (codegen/neuroncore/target.c), each with its public source.
 */
#ifndef TRNC_NEURONCORE_H
#define TRNC_NEURONCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trnc/trnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the program format (asm `.version`, protobuf `version`).
 *  Version 2 added collective steps; readers accept versions
 *  TRNC_NC_PROGRAM_MIN_VERSION..TRNC_NC_PROGRAM_VERSION. */
#define TRNC_NC_PROGRAM_VERSION 2
#define TRNC_NC_PROGRAM_MIN_VERSION 1

#define TRNC_NC_MAX_FREE 4      /* free-dimension pairs per access pattern */
#define TRNC_NC_MAX_WAIT 4      /* semaphore waits per instruction */
#define TRNC_NC_MAX_SIGNAL 2    /* semaphore signals per instruction */
#define TRNC_NC_NUM_DMA_QUEUES 16
#define TRNC_NC_MAX_SEMAPHORES 256 /* per kernel */

/* ------------------------------------------------------------------------ */
/* Target description                                                        */

/** One NeuronCore generation. All numbers are per NeuronCore; the sources
 *  are in codegen/neuroncore/target.c beside each value. */
typedef struct trnc_nc_target {
  const char *name;              /* "trn1", "trn2", "trn3" */
  const char *core;              /* "NeuronCore-v3" */
  int partitions;                /* SBUF/PSUM partitions (128) */
  int64_t sbuf_bytes_per_partition;
  int64_t psum_bytes_per_partition;
  int psum_banks;                /* banks per partition */
  int64_t psum_bank_bytes;       /* bytes per bank per partition (2 KiB) */
  int mm_max_k;                  /* contraction (partitions of both inputs) */
  int mm_max_m;                  /* stationary free size */
  int mm_max_n;                  /* moving free size (fp32 PSUM elements) */
  double tensor_hz, vector_hz, scalar_hz, gpsimd_hz; /* engine clocks */
  int pe_rows, pe_cols;          /* systolic array size (128 x 128) */
  double pe_fp32_slowdown;       /* cycles factor for fp32 matmul inputs */
  double pe_fp8_speedup;         /* throughput factor for fp8 inputs */
  int pe_min_moving_cycles;      /* a matmul issues every max(N, this) cycles */
  int pe_stationary_load_cycles; /* cycles to load a stationary operand */
  double vector_fixed_cycles;    /* fixed overhead per VectorE/GpSimd instruction */
  int gpsimd_lanes;              /* GpSimd elements per cycle over all partitions */
  double scalar_fixed_cycles;    /* ScalarE accumulator read (per instruction) */
  double scalar_access_bubble_cycles; /* per SBUF/PSUM operand access */
  int dma_queues;                /* DMA engines per core */
  double dma_bytes_per_s_per_queue;
  double dma_fixed_s;            /* fixed cost per DMA instruction */
  double hbm_bytes_per_s;        /* per chip */
  int cores_per_chip;
  double link_bytes_per_s;       /* NeuronLink bandwidth per chip (all links) */
  double cc_step_latency_s;      /* fixed cost of one ring step of a collective */
  /* NC-v2 on-chip RAM ports: VectorE and GpSimd cannot access SBUF in
   * parallel, VectorE and ScalarE cannot access PSUM in parallel (the cost
   * model serializes such instructions). False on NC-v3/v4. */
  bool sbuf_port_vector_gpsimd_shared;
  bool psum_port_vector_scalar_shared;
} trnc_nc_target;

/** The trn1 (NeuronCore-v2), trn2 (default) and trn3 tables. Never NULL. */
const trnc_nc_target *trnc_nc_target_trn1(void);
const trnc_nc_target *trnc_nc_target_trn2(void);
const trnc_nc_target *trnc_nc_target_trn3(void);
/** Table by name ("trn1", "trn2", "trn3"); NULL if unknown. */
const trnc_nc_target *trnc_nc_target_by_name(const char *name);
/** The target named by the environment variable TRNC_TARGET, else trn2.
 *  An unknown TRNC_TARGET value yields NULL and an error diagnostic
 *  (TRNC_ERR_INVALID_ARGUMENT) when diags is non-NULL. */
const trnc_nc_target *trnc_nc_target_default(trnc_diags *diags);
/** Peak TensorE FLOP/s for matmul inputs of dtype dt (bf16: 2*rows*cols*hz). */
double trnc_nc_target_peak_flops(const trnc_nc_target *t, trnc_dtype dt);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */

/** NeuronCore element types are the trnc_dtype values TRNC_F32, TRNC_BF16,
 *  TRNC_F16, TRNC_F8E4M3, TRNC_F8E5M2, TRNC_I32, TRNC_I16, TRNC_I8, TRNC_U8
 *  and TRNC_BOOL (the mask type: one byte, 0 or 1). */
bool trnc_nc_dtype_supported(trnc_dtype dt);
/** Bytes per element (0 if unsupported). */
size_t trnc_nc_dtype_size(trnc_dtype dt);
/** Asm name ("f32", "bf16", "f16", "f8e4m3", "f8e5m2", "i32", "i16", "i8",
 *  "u8", "bool"); "?" if unsupported. */
const char *trnc_nc_dtype_name(trnc_dtype dt);
/** Bit pattern (in the low bits) that a store of x to dtype dt writes:
 *  round to nearest even for floats, truncate+saturate for integers. */
uint32_t trnc_nc_encode(trnc_dtype dt, float x);
/** Value of bit pattern bits of dtype dt, as fp32 (exact). */
float trnc_nc_decode(trnc_dtype dt, uint32_t bits);
/** trnc_nc_decode(dt, trnc_nc_encode(dt, x)). */
float trnc_nc_round(trnc_dtype dt, float x);

/* ------------------------------------------------------------------------ */
/* Instruction set                                                           */

typedef enum trnc_nc_engine {
  TRNC_NC_TENSOR = 0, /* TensorE (PE array): matmul, transpose */
  TRNC_NC_VECTOR,     /* VectorE (DVE) */
  TRNC_NC_SCALAR,     /* ScalarE (ACT) */
  TRNC_NC_GPSIMD,     /* GpSimd (POOL) */
  TRNC_NC_DMA0,       /* DMA queues dma0 .. dma15 follow */
  TRNC_NC_ENGINE_COUNT = TRNC_NC_DMA0 + TRNC_NC_NUM_DMA_QUEUES
} trnc_nc_engine;

/** "tensor", "vector", "scalar", "gpsimd", "dma0".."dma15"; "?" if invalid. */
const char *trnc_nc_engine_name(int engine);

typedef enum trnc_nc_mem {
  TRNC_NC_MEM_NONE = 0, /* operand slot unused */
  TRNC_NC_MEM_HBM,
  TRNC_NC_MEM_SBUF,
  TRNC_NC_MEM_PSUM
} trnc_nc_mem;

/** X-macro of opcodes: (id, asm name). Allowed engines and operand slots
 *  are in the table in codegen/neuroncore/isa.c. */
#define TRNC_NC_OPCODES(X)                                                   \
  X(NOP, "nop")                     /* only waits/signals */                   \
  X(DMA_COPY, "dma_copy")           /* dst = cast(src); gather/scatter; transpose */ \
  X(MATMUL, "matmul")               /* dst[M,N] (+)= src0[K,M]^T . src1[K,N] */ \
  X(TRANSPOSE, "transpose")         /* dst[F,P] = src0[P,F] (TensorE, to PSUM) */ \
  X(ACTIVATION, "activation")       /* dst = func(src0*scale + bias); dst2 = sum */ \
  X(TENSOR_TENSOR, "tensor_tensor") /* dst = src0 op src1 */                   \
  X(TENSOR_SCALAR, "tensor_scalar") /* dst = (src0 op0 s0) op1 s1 */            \
  X(TENSOR_REDUCE, "tensor_reduce") /* dst = reduce(op, src0 over inner axes) */\
  X(TENSOR_COPY, "tensor_copy")     /* dst = cast(src0) */                      \
  X(MEMSET, "memset")               /* dst = imm0 */                            \
  X(IOTA, "iota")                   /* dst = affine(p, i) */                    \
  X(SELECT, "select")               /* dst = src0 != 0 ? src1 : src2 */         \
  X(AFFINE_SELECT, "affine_select") /* dst = affine(p,i) cmp 0 ? src0 : imm0 */

typedef enum trnc_nc_opcode {
#define TRNC_NC_X(id, name) TRNC_NC_OP_##id,
  TRNC_NC_OPCODES(TRNC_NC_X)
#undef TRNC_NC_X
  TRNC_NC_OP_COUNT
} trnc_nc_opcode;

/** ALU operations of tensor_tensor / tensor_scalar / tensor_reduce /
 *  affine_select (comparisons yield 1.0 or 0.0; logical ops test != 0).
 *  MAX, MIN and ABSMAX propagate NaN (IEEE 754-2019 maximum/minimum, as
 *  torch.maximum/minimum, amax/amin, clamp): a NaN operand gives NaN, not the
 *  other operand as C fmaxf/fminf would; a tensor_reduce max/min over a run
 *  holding a NaN is NaN. Equal operands give the first one (src0 / the running
 *  value), so max(-0, +0) = -0, as torch's CPU kernels (not 754-2019's +0).
 *  The RELU activation is max(x, 0) with the same rules: relu(NaN) = NaN.
 *
 *  Integers (nki.isa.tensor_tensor): a tensor_tensor on GpSimd whose
 *  operands and destination are all int32 uses native integer arithmetic,
 *  exact for every 32-bit value: add/sub/rsub/mul wrap modulo 2^32,
 *  max/min/comparisons compare integers (comparisons give 1 or 0). The
 *  bitvec ops BIT_AND/BIT_OR/BIT_XOR, SHL (logical shift left) and SHR
 *  (arithmetic shift right, the shift count taken mod 32) treat integer
 *  operands as bit patterns on VectorE and GpSimd and need integer dtypes;
 *  every other instruction (and VectorE's tensor_tensor) computes through
 *  fp32, exact for integers up to 2^24. trnc_nc_instr_int_exact() says
 *  which instructions compute in integers. iota computes its affine value
 *  in int32 (an int32 destination receives it exactly). */
#define TRNC_NC_ALUS(X) \
  X(BYPASS, "bypass") X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(DIV, "div") \
  X(MAX, "max") X(MIN, "min") X(POW, "pow") X(EQ, "eq") X(NE, "ne")          \
  X(LT, "lt") X(LE, "le") X(GT, "gt") X(GE, "ge") X(AND, "and") X(OR, "or")  \
  X(XOR, "xor") X(ABSMAX, "absmax") X(RSUB, "rsub")                         \
  X(BIT_AND, "bitwise_and") X(BIT_OR, "bitwise_or") X(BIT_XOR, "bitwise_xor") \
  X(SHL, "logical_shift_left") X(SHR, "arithmetic_shift_right")

typedef enum trnc_nc_alu {
#define TRNC_NC_X(id, name) TRNC_NC_ALU_##id,
  TRNC_NC_ALUS(TRNC_NC_X)
#undef TRNC_NC_X
  TRNC_NC_ALU_COUNT
} trnc_nc_alu;

/** ScalarE activation functions. */
#define TRNC_NC_ACTS(X)                                                       \
  X(IDENTITY, "identity") X(EXP, "exp") X(LOG, "log") X(TANH, "tanh")          \
  X(SIGMOID, "sigmoid") X(RELU, "relu") X(GELU, "gelu")                        \
  X(GELU_TANH, "gelu_tanh") X(SILU, "silu") X(RSQRT, "rsqrt") X(SQRT, "sqrt")  \
  X(SQUARE, "square") X(SIN, "sin") X(COS, "cos") X(ERF, "erf")                \
  X(RECIPROCAL, "reciprocal") X(ABS, "abs") X(SIGN, "sign")                    \
  X(SOFTPLUS, "softplus")

typedef enum trnc_nc_act {
#define TRNC_NC_X(id, name) TRNC_NC_ACT_##id,
  TRNC_NC_ACTS(TRNC_NC_X)
#undef TRNC_NC_X
  TRNC_NC_ACT_COUNT
} trnc_nc_act;

const char *trnc_nc_opcode_name(int op); /* "?" if invalid */
const char *trnc_nc_alu_name(int alu);
const char *trnc_nc_act_name(int act);
/** Bit mask (1 << engine) of the engines that may execute opcode op. */
uint32_t trnc_nc_opcode_engines(int op);
/** True for the bitvec ALU ops (BIT_AND, BIT_OR, BIT_XOR, SHL, SHR): integer
 *  operands as bit patterns (nki.isa bitvec operators). */
bool trnc_nc_alu_is_bitvec(int alu);
/** True for the ALU ops an int32 tensor_tensor on GpSimd computes in native
 *  integer arithmetic (add, sub, rsub, mul, max, min, the comparisons, the
 *  logical and bitvec ops; not div, pow or absmax). */
bool trnc_nc_alu_has_int_form(int alu);

/** One free dimension: stride in elements (may be 0 or negative), count >= 1. */
typedef struct trnc_nc_dim {
  int64_t stride;
  int64_t count;
} trnc_nc_dim;

/** An operand access pattern. Unused operand slots have mem NONE and all
 *  other fields zero. */
typedef struct trnc_nc_ap {
  uint8_t mem;              /* trnc_nc_mem */
  uint8_t dtype;            /* trnc_dtype */
  uint8_t nfree;            /* 0..TRNC_NC_MAX_FREE (0: one element per partition) */
  int32_t buffer;           /* HBM: buffer index; else 0 */
  int32_t start_partition;  /* SBUF/PSUM; 0 for HBM */
  int32_t partitions;       /* partition count (HBM: rows) */
  int64_t partition_stride; /* HBM only: elements between rows; else 0 */
  int64_t offset;           /* bytes: inside each partition, or into the buffer */
  trnc_nc_dim free[TRNC_NC_MAX_FREE];
} trnc_nc_ap;

/** Elements per partition of an access pattern (product of free counts). */
int64_t trnc_nc_ap_free_elems(const trnc_nc_ap *ap);

/** DMA modes (trnc_nc_instr.mode for DMA_COPY). */
enum {
  TRNC_NC_DMA_DIRECT = 0,
  TRNC_NC_DMA_GATHER = 1,    /* dst row p = src row idx[p]  (src: HBM/SBUF rows) */
  TRNC_NC_DMA_SCATTER = 2,   /* dst row idx[p] = src row p */
  TRNC_NC_DMA_TRANSPOSE = 3  /* dst[f][p] = src[p][f] (2-D: partitions x free) */
};

/** A semaphore condition: wait until semaphore sem has been signalled
 *  at least value times. */
typedef struct trnc_nc_wait {
  uint16_t sem;
  uint32_t value;
} trnc_nc_wait;

/**
 * One instruction. Operand slots (see the opcode table):
 *  dst          destination
 *  dst2         activation: optional [P,1] f32 add-reduce of the results
 *  src[0..2]    sources; DMA gather/scatter: src[1] = i32 index tile [P,1];
 *               activation: src[1] = optional per-partition bias [P,1];
 *               tensor_scalar: src[1]/src[2] = optional per-partition s0/s1;
 *               select: src[0] mask, src[1] on-true, src[2] on-false
 *  alu0, alu1   ALU ops (tensor_tensor/tensor_reduce: alu0; tensor_scalar:
 *               op0, op1 (BYPASS = none); affine_select: alu0 = comparison)
 *  act          activation function
 *  mode         DMA mode; matmul: 1 = accumulate into PSUM, 0 = overwrite;
 *               tensor_reduce: number of innermost free dims reduced (>= 1)
 *  imm[0..2]    activation: scale, bias; tensor_scalar: s0, s1;
 *               memset / affine_select: fill value
 *  aff[0..5]    iota / affine_select: value = aff0 + aff1*p + sum aff[2+d]*i_d
 *               (p: partition index within the AP, i_d: index in free dim d)
 */
typedef struct trnc_nc_instr {
  uint8_t op;      /* trnc_nc_opcode */
  uint8_t engine;  /* trnc_nc_engine */
  uint8_t alu0, alu1, act, mode;
  uint8_t nwait, nsignal;
  trnc_nc_ap dst, dst2;
  trnc_nc_ap src[3];
  float imm[3];
  int32_t aff[6];
  trnc_nc_wait wait[TRNC_NC_MAX_WAIT];
  uint16_t signal[TRNC_NC_MAX_SIGNAL];
} trnc_nc_instr;

/** True if instruction in computes in integers (see the ALU ops' comment):
 *  a GpSimd tensor_tensor whose dst and sources are all int32 and whose op
 *  has an integer form, or a bitvec op over integer operands. Everything
 *  else computes through fp32. */
bool trnc_nc_instr_int_exact(const trnc_nc_instr *in);

/* ------------------------------------------------------------------------ */
/* Collective steps                                                          */

/**
 * A program step that is not a kernel: one collective operation over a
 * torch.distributed process group (the distributed engine), as the
 * _c10d_functional ops define them. A collective is split in two steps of the
 * program's step list, so that compute kernels run while it is in flight:
 *
 *   START (op != WAIT)  reads `src` (the runtime snapshots it: kernels after
 *                       the START may overwrite it) and issues the operation;
 *   WAIT                blocks until the START with the same `handle` has
 *                       finished; only then does `dst` hold the result.
 *
 * Between a START and its WAIT no kernel may read or write `dst`'s byte range
 * (the verifier checks this), and every START has exactly one later WAIT.
 * Byte counts (elements of `dtype`, contiguous, row-major; G = group_size):
 *   ALL_REDUCE, BROADCAST   dst_bytes == src_bytes
 *   ALL_GATHER              dst_bytes == G * src_bytes (rank r's src at r*src_bytes)
 *   REDUCE_SCATTER          src_bytes == G * dst_bytes (rank r keeps chunk r)
 *   ALL_TO_ALL              nsplits == 0: src_bytes == dst_bytes, divisible by G;
 *                           else nsplits == G, sum(in_split) == src_bytes,
 *                           sum(out_split) == dst_bytes (bytes per peer)
 * `reduce` applies to ALL_REDUCE and REDUCE_SCATTER; `root` (group rank of
 * the source) to BROADCAST. `group` is the process group's name
 * (torch.distributed's group_name, resolved by the runtime's engine).
 */
#define TRNC_NC_CC_OPS(X)                                                    \
  X(WAIT, "cc_wait") X(ALL_REDUCE, "all_reduce") X(ALL_GATHER, "all_gather") \
  X(REDUCE_SCATTER, "reduce_scatter") X(ALL_TO_ALL, "all_to_all")            \
  X(BROADCAST, "broadcast")

typedef enum trnc_nc_cc_op {
#define TRNC_NC_X(id, name) TRNC_NC_CC_##id,
  TRNC_NC_CC_OPS(TRNC_NC_X)
#undef TRNC_NC_X
  TRNC_NC_CC_COUNT
} trnc_nc_cc_op;

/** Reductions, named as the _c10d_functional reduce_op strings. */
#define TRNC_NC_CC_REDUCES(X) \
  X(SUM, "sum") X(AVG, "avg") X(PRODUCT, "product") X(MIN, "min") X(MAX, "max")

typedef enum trnc_nc_cc_reduce {
#define TRNC_NC_X(id, name) TRNC_NC_RED_##id,
  TRNC_NC_CC_REDUCES(TRNC_NC_X)
#undef TRNC_NC_X
  TRNC_NC_RED_COUNT
} trnc_nc_cc_reduce;

#define TRNC_NC_CC_MAX_GROUP 64     /* ranks in a group with explicit splits */
#define TRNC_NC_CC_MAX_INFLIGHT 64  /* STARTs not yet waited, per program */
#define TRNC_NC_CC_GROUP_NAME 64    /* bytes of `group`, NUL included */

typedef struct trnc_nc_collective {
  uint8_t op;              /* trnc_nc_cc_op */
  uint8_t reduce;          /* trnc_nc_cc_reduce (ALL_REDUCE, REDUCE_SCATTER) */
  uint8_t dtype;           /* element type of src and dst */
  int32_t handle;          /* pairs a START with its WAIT; >= 0 */
  int32_t group_size;      /* ranks in the group, >= 1 */
  int32_t root;            /* BROADCAST: source rank in the group */
  char group[TRNC_NC_CC_GROUP_NAME];
  int32_t src_buffer, dst_buffer; /* HBM buffer indices (WAIT: unused, 0) */
  int64_t src_offset, dst_offset; /* bytes */
  int64_t src_bytes, dst_bytes;
  int32_t nsplits;                /* ALL_TO_ALL: 0 (equal) or group_size */
  int64_t in_split[TRNC_NC_CC_MAX_GROUP], out_split[TRNC_NC_CC_MAX_GROUP]; /* bytes */
} trnc_nc_collective;

/** "all_reduce", ..., "cc_wait"; "?" if invalid. */
const char *trnc_nc_cc_op_name(int op);
/** "sum", "avg", ...; "?" if invalid. */
const char *trnc_nc_cc_reduce_name(int reduce);
/** Reduction for a _c10d_functional reduce_op string, or -1. */
int trnc_nc_cc_reduce_lookup(const char *name);

/* ------------------------------------------------------------------------ */
/* Programs                                                                  */

typedef enum trnc_nc_buffer_kind {
  TRNC_NC_BUF_INPUT = 0,   /* bound by the caller, read-only by convention */
  TRNC_NC_BUF_OUTPUT = 1,  /* bound by the caller */
  TRNC_NC_BUF_INTERNAL = 2 /* lives in the program's HBM scratch at `offset` */
} trnc_nc_buffer_kind;

/** An HBM buffer descriptor. */
typedef struct trnc_nc_buffer {
  const char *name;   /* [A-Za-z_][A-Za-z0-9_.]* */
  int kind;           /* trnc_nc_buffer_kind */
  uint8_t dtype;      /* informational element type */
  int64_t bytes;      /* size */
  int64_t offset;     /* INTERNAL: byte offset in the scratch area; else 0 */
} trnc_nc_buffer;

typedef struct trnc_nc_program trnc_nc_program;

/** New empty program for target (NULL = trn2). NULL on allocation failure. */
trnc_nc_program *trnc_nc_program_create(const trnc_nc_target *target);
void trnc_nc_program_destroy(trnc_nc_program *p);
const trnc_nc_target *trnc_nc_program_target(const trnc_nc_program *p);

/** Adds a buffer; returns its index, or -1 (bad name/size, out of memory).
 *  Scratch size grows to cover INTERNAL buffers. */
int trnc_nc_program_add_buffer(trnc_nc_program *p, const char *name, int kind,
                               trnc_dtype dtype, int64_t bytes, int64_t offset);
size_t trnc_nc_program_buffer_count(const trnc_nc_program *p);
const trnc_nc_buffer *trnc_nc_program_buffer(const trnc_nc_program *p, size_t i);
/** Bytes of HBM scratch the INTERNAL buffers need. */
int64_t trnc_nc_program_scratch_bytes(const trnc_nc_program *p);

/** Adds a kernel (semaphores: how many it uses, <= TRNC_NC_MAX_SEMAPHORES);
 *  returns its index or -1. */
int trnc_nc_program_add_kernel(trnc_nc_program *p, const char *name, int semaphores);
size_t trnc_nc_program_kernel_count(const trnc_nc_program *p);
const char *trnc_nc_kernel_name(const trnc_nc_program *p, size_t k);
int trnc_nc_kernel_semaphores(const trnc_nc_program *p, size_t k);
/** Appends a copy of *in to kernel k. TRNC_ERR_INVALID_ARGUMENT (bad k),
 *  TRNC_ERR_NOMEM. No checking: run trnc_nc_program_verify. */
trnc_status trnc_nc_kernel_append(trnc_nc_program *p, size_t k, const trnc_nc_instr *in);
size_t trnc_nc_kernel_instr_count(const trnc_nc_program *p, size_t k);
const trnc_nc_instr *trnc_nc_kernel_instr(const trnc_nc_program *p, size_t k, size_t i);
/** Mutable access, e.g. for tests that break one rule. */
trnc_nc_instr *trnc_nc_kernel_instr_mut(trnc_nc_program *p, size_t k, size_t i);

/** Appends a collective step (see trnc_nc_collective) after the kernels and
 *  steps added so far; it counts as a kernel with no instructions named after
 *  its op. Returns its step index or -1 (bad op, out of memory). No checking:
 *  run trnc_nc_program_verify. */
int trnc_nc_program_add_collective(trnc_nc_program *p, const trnc_nc_collective *cc);
/** The collective of step k, or NULL if step k is a compute kernel. */
const trnc_nc_collective *trnc_nc_kernel_collective(const trnc_nc_program *p, size_t k);
/** Number of collective STARTs in the program. */
size_t trnc_nc_program_collective_count(const trnc_nc_program *p);

/** True if both programs have the same target, buffers, kernels and
 *  instructions (field by field). */
bool trnc_nc_program_equal(const trnc_nc_program *a, const trnc_nc_program *b);

/** Total instruction count and the matmul FLOPs (2*K*M*N summed). */
size_t trnc_nc_program_instr_count(const trnc_nc_program *p);
double trnc_nc_program_matmul_flops(const trnc_nc_program *p);

/* ---- assembly ----------------------------------------------------------- */

/**
 * Deterministic assembly text (same program, same bytes). trnc_free it;
 * NULL on allocation failure. Grammar (one statement per line, '#' comments):
 *   .version 1
 *   .target trn2
 *   .buffer NAME input|output|internal DTYPE BYTES [OFFSET]
 *   .kernel NAME SEMAPHORES
 *   ENGINE OPCODE key=value ... [wait=s0>=2,s3>=1] [signal=s1,s2]
 * Operands: sbuf[START:COUNT]@BYTEOFF DTYPE[[stride,count],...]
 *           psum[...]  likewise;  hbm:NAME[PSTRIDE:COUNT]@BYTEOFF DTYPE[[...]]
 */
char *trnc_nc_program_print(const trnc_nc_program *p);
/** Prints one instruction (no newline) into a trnc_free'd string. */
char *trnc_nc_instr_print(const trnc_nc_program *p, const trnc_nc_instr *in);

/**
 * Parses assembly text (len bytes; need not be NUL-terminated).
 * On success *out owns a new program. Errors: TRNC_ERR_INVALID_ARGUMENT
 * (NULL pointers), TRNC_ERR_VERSION (.version other than
 * TRNC_NC_PROGRAM_VERSION), TRNC_ERR_MALFORMED (syntax; the diagnostic
 * gives "line N" and the offending token), TRNC_ERR_NOMEM. The program is
 * not verified.
 */
trnc_status trnc_nc_program_parse(const char *text, size_t len, trnc_nc_program **out,
                                  trnc_diags *diags);

/* ---- binary (protobuf-c, codegen/neuroncore/program.proto) --------------- */

/** Serializes to a trnc.nc.Program message. *bytes is trnc_free'd.
 *  Errors: TRNC_ERR_INVALID_ARGUMENT, TRNC_ERR_NOMEM. */
trnc_status trnc_nc_program_serialize(const trnc_nc_program *p, uint8_t **bytes,
                                      size_t *len);
/** Reads a serialized program. Errors: TRNC_ERR_INVALID_ARGUMENT,
 *  TRNC_ERR_MALFORMED (not a Program message, enum/field out of range),
 *  TRNC_ERR_VERSION, TRNC_ERR_LIMIT (> 1 GiB), TRNC_ERR_NOMEM.
 *  The program is not verified. */
trnc_status trnc_nc_program_deserialize(const uint8_t *bytes, size_t len,
                                        trnc_nc_program **out, trnc_diags *diags);

/* ---- verifier ------------------------------------------------------------ */

/**
 * Checks every hardware rule and reports every violation (one error
 * diagnostic each; node = "KERNEL#INDEX ENGINE.OPCODE", message names the
 * limit). Rules: opcode/engine pairing; operand presence and dtypes;
 * partition count <= 128 and start-partition alignment for compute engines
 * (> 64 partitions start at 0, 33..64 at 0/64, <= 32 at a multiple of 32);
 * byte offsets aligned to the element size; SBUF/PSUM/HBM bounds (capacity
 * per partition from the target); matmul K/M/N limits, PSUM bank bounds
 * (2 KiB per partition per bank), fp32 PSUM output, dtype pairing (fp32 with
 * fp32, bf16 with bf16, fp16 with fp16, fp8 with fp8); engine/memory rules
 * (GpSimd never PSUM, DMA never PSUM, TensorE reads SBUF only and writes
 * PSUM only, not both tensor_tensor inputs in PSUM); shapes agree between
 * operands; semaphores in range, signalled from one queue, no deadlock;
 * reads of never-written SBUF/PSUM bytes (per kernel, in dependency order);
 * every pair of accesses from different queues that overlap (bounding
 * boxes) with at least one write must be ordered by semaphores; the
 * collective-step rules (codegen/neuroncore/verify_cc.c: sizes per op,
 * handles paired, nothing touches a destination in flight).
 * Returns TRNC_OK or TRNC_ERR_INVALID_GRAPH.
 */
trnc_status trnc_nc_program_verify(const trnc_nc_program *p, trnc_diags *diags);

/* ---- functional simulator (runtime/nc_sim.c) ----------------------------- */

/**
 * Runs a program on host memory. inputs[i] / outputs[j] point to the i-th
 * INPUT and j-th OUTPUT buffer in declaration order (each `bytes` long,
 * raw element bit patterns). SBUF and PSUM start NaN-filled for every
 * kernel. The program is verified first (errors as trnc_nc_program_verify).
 * Runtime errors: TRNC_ERR_INVALID_ARGUMENT (NULL buffer pointer),
 * TRNC_ERR_LIMIT (gather/scatter index out of range: names the instruction),
 * TRNC_ERR_NOMEM. The environment variable TRNC_SIM picks the engine
 * (docs/simulator.md): unset or "interp" the interpreter; "jit" host code
 * compiled for this call; "check" both, any differing output byte being
 * TRNC_ERR_INTERNAL; another value is TRNC_ERR_INVALID_ARGUMENT. (Planned
 * runs, trnc_nc_simulate_planned and so trnc_compiled_run, default to the
 * interpreter first and the JIT later.)
 * A program with collective steps always runs on the interpreter (here it
 * fails with TRNC_ERR_UNSUPPORTED: it needs trnc_nc_simulate_with).
 */
trnc_status trnc_nc_simulate(const trnc_nc_program *p, const void *const *inputs,
                             void *const *outputs, trnc_diags *diags);

/** As trnc_nc_simulate_verified, running collective steps through engine
 *  (NULL: a program with collectives fails with TRNC_ERR_UNSUPPORTED). On an
 *  error every collective still in flight is waited for before returning.
 *  A program with collective steps runs on the interpreter whatever
 *  TRNC_SIM says; one without runs on the engine TRNC_SIM names. */
trnc_status trnc_nc_simulate_with(const trnc_nc_program *p, const void *const *inputs,
                                  void *const *outputs, const trnc_collective_engine *engine,
                                  trnc_diags *diags);

/** As trnc_nc_simulate but without running the verifier first: only for a
 *  program that already passed trnc_nc_program_verify (e.g. run many times
 *  while training). An unverified program here is undefined behaviour. */
trnc_status trnc_nc_simulate_verified(const trnc_nc_program *p, const void *const *inputs,
                                      void *const *outputs, trnc_diags *diags);

/** What runs of one verified program share: each kernel's dependency
 *  schedule, the SBUF/PSUM bytes per partition it touches, and the run
 *  memory (allocated by the first run, reused by later ones). */
typedef struct trnc_nc_sim_plan trnc_nc_sim_plan;

/**
 * Builds the run plan of a program that passed trnc_nc_program_verify (an
 * unverified one is undefined behaviour); p must outlive the plan. *out is
 * NULL on error. Errors: TRNC_ERR_INVALID_ARGUMENT (NULL p or out),
 * TRNC_ERR_INVALID_GRAPH (no schedule: bad semaphores), TRNC_ERR_NOMEM.
 */
trnc_status trnc_nc_sim_plan_create(const trnc_nc_program *p, trnc_nc_sim_plan **out,
                                    trnc_diags *diags);
/** Frees a plan and its run memory (NULL is a no-op). */
void trnc_nc_sim_plan_destroy(trnc_nc_sim_plan *plan);

/**
 * As trnc_nc_simulate_verified, for the plan's program, reusing the plan's
 * memory. SBUF and PSUM are not NaN-filled: the verifier proved that no
 * kernel reads a byte of them before writing it (the HBM scratch still starts
 * NaN-filled). Thread-safe: a run that finds the plan's memory in use by
 * another thread runs in memory of its own. Collective steps run through
 * engine as in trnc_nc_simulate_with (NULL: a program with collectives fails
 * with TRNC_ERR_UNSUPPORTED; on an error every collective still in flight is
 * waited for). Engine (docs/simulator.md): a program without collective
 * steps runs on the interpreter at first and on host code JIT-compiled into
 * the plan later (same bits, same plan memory); TRNC_SIM=interp|jit|check
 * overrides that on every run. Errors: TRNC_ERR_INVALID_ARGUMENT (NULL plan
 * or buffer pointer, or an unknown TRNC_SIM), TRNC_ERR_LIMIT (gather/scatter
 * index out of range: names the instruction), TRNC_ERR_UNSUPPORTED,
 * TRNC_ERR_INTERNAL (TRNC_SIM=check: the engines differ), the engine's
 * errors, TRNC_ERR_NOMEM.
 */
trnc_status trnc_nc_simulate_planned(trnc_nc_sim_plan *plan, const void *const *inputs,
                                     void *const *outputs, const trnc_collective_engine *engine,
                                     trnc_diags *diags);

/** Seconds the plan's host code took to JIT-compile (translation, LLVM's
 *  optimizer and code generation); 0 while the plan has none (it has run
 *  on the interpreter only) or for NULL. */
double trnc_nc_sim_plan_jit_seconds(const trnc_nc_sim_plan *plan);

/* ---- cost model (codegen/neuroncore/cost.c) ------------------------------ */

typedef struct trnc_nc_cost {
  double time_s;                                  /* critical path, all kernels */
  double busy_s[TRNC_NC_ENGINE_COUNT];            /* per engine queue */
  double util[TRNC_NC_ENGINE_COUNT];              /* busy / time */
  double dma_busy_s;                              /* summed over DMA queues */
  double dma_util;                                /* dma_busy / (queues * time) */
  double matmul_flops;                            /* 2*K*M*N summed */
  double tensor_peak_flops_per_s;                 /* at the dominant input dtype */
  double tensor_flop_util;                        /* flops / (peak * time) */
  double dma_bytes;                               /* bytes moved (dst side) */
  double dma_bytes_per_s;                         /* dma_bytes / time */
  double dma_bw_util;                             /* vs queues * per-queue bw */
  size_t instructions;
  size_t collectives;                             /* collective STARTs */
  double collective_s;                            /* interconnect time of them, summed */
  double collective_exposed_s;                    /* of which kernels did not hide */
} trnc_nc_cost;

/**
 * Estimates execution time: per-instruction cycles from the target table
 * (rules in codegen/neuroncore/cost.c), queues in order, engines concurrent,
 * synchronised by semaphores; the time is the critical path. If trace_path
 * is non-NULL (or, when NULL, the environment variable TRNC_PROFILE is set)
 * writes a Chrome trace JSON there, one track per engine (Perfetto opens it).
 * The program is verified first. Errors: as trnc_nc_program_verify,
 * TRNC_ERR_IO (trace file), TRNC_ERR_NOMEM.
 */
trnc_status trnc_nc_cost_estimate(const trnc_nc_program *p, const char *trace_path,
                                  trnc_nc_cost *out, trnc_diags *diags);
/** As trnc_nc_cost_estimate but without running the verifier first: only for
 *  a program that already passed trnc_nc_program_verify (trnc_compile costs
 *  the program it has just verified). An unverified program here is
 *  undefined behaviour. Errors: TRNC_ERR_IO (trace file), TRNC_ERR_NOMEM. */
trnc_status trnc_nc_cost_estimate_verified(const trnc_nc_program *p, const char *trace_path,
                                           trnc_nc_cost *out, trnc_diags *diags);
/** Human-readable multi-line report of a cost estimate. trnc_free it. */
char *trnc_nc_cost_format(const trnc_nc_program *p, const trnc_nc_cost *c);

#ifdef __cplusplus
}
#endif
#endif /* TRNC_NEURONCORE_H */
