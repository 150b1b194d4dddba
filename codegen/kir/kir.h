/*
 * kir.h — the kernel IR: one NeuronCore kernel as tile operations over an
 * iteration space, between the graph IR and instructions.
 *
 * A kernel has up to KIR_MAX_AXES axes, each with an extent; an axis is
 * either a *space* axis (it indexes the kernel's results) or a *reduction*
 * axis (results are folded over it). HBM operands are tensors: a program
 * buffer, a device dtype and an access map (element offset plus one stride
 * per axis; stride 0: the tensor does not vary along that axis — broadcast).
 * Views therefore cost nothing: they are access maps.
 *
 * The body is a list of operations in SSA form over tile values. A value
 * spans a set of axes (a bit mask): loads give values over every axis,
 * elementwise operations keep their operands' axes, a reduction drops the
 * axes it folds. Operations:
 *
 *   %v = load  T            tile of tensor T (every axis; or only the space
 *                           axes: T's first element along the reduction axes,
 *                           loaded before the first pass)
 *        store T, %v        %v into tensor T (T's strides are 0 on axes %v
 *                           does not span)
 *   %v = act   f, %a, s, b  f(%a * s + b) on ScalarE (b an immediate or a
 *                           value over fewer axes: one bias per partition)
 *   %v = tt    op, %a, %b   %a op %b on VectorE; on GpSimd in native int32
 *                           arithmetic when %v, %a and %b are all i32
 *   %v = ts    op0, %a, s0, op1, s1   (%a op0 s0) op1 s1 on VectorE; s0/s1
 *                           are immediates or values over fewer axes (a
 *                           row statistic: one scalar per partition)
 *   %v = copy  %a           %a converted to %v's dtype
 *   %v = const c            c (in %v's dtype; an i32 const is exact)
 *   %v = select %m, %a, %b  %m != 0 ? %a : %b
 *   %v = reduce op, %a, R   %a folded with op over the axes in mask R
 *   %v = bcast %a           %a (over fewer axes) repeated over every axis
 *        mm    T, %a         act(alpha * %a . W + beta * bias) into tensor T:
 *                           %a (over every axis) contracted along the one
 *                           reduction axis with the kernel's matmul operand
 *                           W [K, N] (kir_mm) on TensorE; T and the bias
 *                           tensor walk N along the reduction axis. A row
 *                           kernel (layer norm) thus feeds the matmul that
 *                           reads its result without an HBM round trip.
 *
 * A kernel whose elementwise ops read reduced values (softmax's x - max)
 * runs in passes over the reduction axes: pass p computes the reductions
 * whose inputs need the results of pass p - 1 (loads are repeated).
 *
 * Every value has a device dtype: a bf16/fp16 value rounds to nearest even
 * when it is produced, as eager PyTorch rounds each op's result. Values are
 * tiles: the schedule (codegen/kir/emit.c) maps one space axis (or, for a
 * full reduction, one reduction axis) on partitions and the others on free
 * dims or loops, sizes the tiles, buffers them and emits the instructions.
 *
 * `TRNC_DUMP=kir` prints every kernel (kir_print) before it is scheduled.
 */
#ifndef TRNC_CODEGEN_KIR_H
#define TRNC_CODEGEN_KIR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen/lower.h"

#define KIR_MAX_AXES (TRNC_MAX_RANK + 1)
#define KIR_MAX_TENSORS LW_MAX_OPS
#define KIR_MAX_VALUES 192
#define KIR_MAX_OPS 192

typedef enum kir_opcode {
  KIR_LOAD,
  KIR_STORE,
  KIR_ACT,
  KIR_TT,
  KIR_TS,
  KIR_COPY,
  KIR_CONST,
  KIR_SELECT,
  KIR_REDUCE,
  KIR_BCAST,
  KIR_MM,
  KIR_OPCODE_COUNT
} kir_opcode;

/** An HBM operand: buffer, device dtype, access map over the kernel's axes. */
typedef struct kir_tensor {
  int32_t buffer;
  trnc_dtype dtype;
  int64_t offset;                 /* elements */
  int64_t stride[KIR_MAX_AXES];   /* elements per step of each axis; 0 = broadcast */
} kir_tensor;

typedef struct kir_value {
  trnc_dtype dtype;               /* device dtype of the tile */
  uint32_t axes;                  /* bit i: spans axis i */
} kir_value;

typedef struct kir_op {
  uint8_t code;                   /* kir_opcode */
  uint8_t fn;                     /* act: TRNC_NC_ACT_*; tt/reduce: TRNC_NC_ALU_*; ts: op0 */
  uint8_t fn1;                    /* ts: op1 (TRNC_NC_ALU_BYPASS = none) */
  int16_t dst;                    /* value defined (-1 for store) */
  int16_t src[3];                 /* values read (-1 unused); ts: src[1], src[2]
                                     the scalar operands s0, s1 when set */
  int16_t tensor;                 /* load/store: tensor index */
  uint32_t raxes;                 /* reduce: axes folded */
  float imm[2];                   /* act: scale, bias; ts: s0, s1; const: value */
  int32_t ival;                   /* const of an i32 value: its exact value */
} kir_op;

/** The matmul operand of a kernel's mm op: W [K, N] in HBM (K along the
 *  kernel's reduction axis), the bias tensor (varying along N only, -1:
 *  none), the scales and the activation applied after the bias. */
typedef struct kir_mm {
  const lw_tv *w;
  int16_t bias;                   /* kir tensor, -1 none */
  int64_t n;                      /* N: columns of W and of the result */
  float alpha, beta;
  uint8_t act;                    /* TRNC_NC_ACT_* (IDENTITY: none) */
  trnc_dtype in_dt;               /* TensorE operand dtype */
} kir_mm;

typedef struct kir_kernel {
  const char *name;
  const trnc_node *node;          /* diagnostics: the node the kernel came from */
  int naxes;
  int64_t extent[KIR_MAX_AXES];
  uint32_t raxes;                 /* the reduction axes */
  int ntensors, nvalues, nops;
  kir_tensor tensors[KIR_MAX_TENSORS];
  kir_value values[KIR_MAX_VALUES];
  kir_op ops[KIR_MAX_OPS];
  kir_mm mm;                      /* the operand of its mm op (at most one) */
} kir_kernel;

/* ---- building (kir.c) ---------------------------------------------------------- */

/** Starts kernel k over `naxes` axes of the given extents (reduction axes in
 *  mask raxes). */
void kir_init(kir_kernel *k, const char *name, const trnc_node *node, int naxes,
              const int64_t *extent, uint32_t raxes);
/** Adds HBM tensor tv viewed over the kernel's axes: tv's dims map to the
 *  kernel's axes in order `axis_of[d]` (-1: tv dim d has size 1). Returns its
 *  index, -1 when the kernel has KIR_MAX_TENSORS already. */
int kir_tensor_add(kir_kernel *k, const lw_tv *tv, const int *axis_of);
/** A new value of dtype dt over the axes in mask; -1 when full. */
int kir_value_new(kir_kernel *k, trnc_dtype dt, uint32_t axes);
/** Appends op (its dst/src/tensor fields set by the caller); false when full. */
bool kir_op_add(kir_kernel *k, kir_op op);

/* Shorthands: each defines and returns a new value, -1 when the kernel is
 * full. Elementwise results span their first operand's axes. */
int kir_load(kir_kernel *k, int tensor, trnc_dtype dt);
/** A load of tensor's elements at index 0 of the reduction axes: a value over
 *  the space axes only. */
int kir_load_first(kir_kernel *k, int tensor, trnc_dtype dt);
bool kir_store(kir_kernel *k, int tensor, int v);
int kir_act(kir_kernel *k, trnc_dtype dt, int fn, int a, float scale, float bias);
/** act with the bias a value bv over fewer axes. */
int kir_actv(kir_kernel *k, trnc_dtype dt, int fn, int a, float scale, int bv);
int kir_tt(kir_kernel *k, trnc_dtype dt, int alu, int a, int b);
int kir_ts(kir_kernel *k, trnc_dtype dt, int a, int op0, float s0, int op1, float s1);
/** ts whose scalars are values s0v, s1v over fewer axes (-1: none; op1 then
 *  BYPASS). */
int kir_tsv(kir_kernel *k, trnc_dtype dt, int a, int op0, int s0v, int op1, int s1v);
/** a over every axis of the kernel. */
int kir_bcast(kir_kernel *k, trnc_dtype dt, int a);
int kir_copy(kir_kernel *k, trnc_dtype dt, int a);
int kir_const(kir_kernel *k, trnc_dtype dt, uint32_t axes, float c);
/** An i32 constant c, exact at any magnitude (a GpSimd iota, not a memset
 *  through fp32). */
int kir_const_i32(kir_kernel *k, uint32_t axes, int32_t c);
int kir_select(kir_kernel *k, trnc_dtype dt, int m, int a, int b);
int kir_reduce(kir_kernel *k, int alu, int a, uint32_t raxes);
/** The mm op: a (over every axis) times k->mm.w into tensor; false when
 *  full or a is -1. */
bool kir_matmul(kir_kernel *k, int tensor, int a);

/** Value v at index 0 of every reduction axis (a value over the space axes):
 *  v's ops again over first-element loads; a value over the space axes
 *  already is its own. -1 when the kernel is full. */
int kir_first(kir_kernel *k, int v);

/** Prints k in the text form of the header comment. */
void kir_print(const kir_kernel *k, FILE *f);
/** Checks k's invariants (operands defined before use with matching axes,
 *  tensors in range, stores of values whose axes the tensor indexes, a
 *  reduction folding only reduction axes). Returns NULL or a message. */
const char *kir_verify(const kir_kernel *k);

/* ---- lowering rules (rules.c) -------------------------------------------------- */

/** Graph values -> kernel values while a kernel is built. */
typedef struct kir_env {
  kir_kernel *k;
  lw *L;
  int16_t *val;                   /* per IR value: kernel value, -1 none */
} kir_env;

/** True if node n lowers to elementwise kir ops (kir_lower_eltwise). */
bool kir_is_eltwise(const trnc_graph *g, const trnc_node *n);
/** A bound on the kernel values elementwise node n defines, for grouping
 *  nodes into one kernel (special functions take tens; others 2). */
int kir_eltwise_values(const trnc_node *n);
/** Appends the ops computing elementwise node n from its operands' kernel
 *  values (env->val); sets env->val[n's output]. TRNC_ERR_UNSUPPORTED for a
 *  form without a lowering, TRNC_ERR_INTERNAL when the kernel is full. */
trnc_status kir_lower_eltwise(kir_env *env, const trnc_node *n);
/* ---- special functions (special.c) --------------------------------------------- */

/** x rounded half to even (|x| < 2^23; x itself beyond, where fp32 values
 *  are integral, and at inf/NaN), with x's sign, as dtype dt (rules.c). */
int kir_round(kir_kernel *k, trnc_dtype dt, int x);
/** Highest polygamma order kir_polygamma lowers (ir/ops.c checks it). */
#define KIR_POLYGAMMA_MAX_ORDER 8
/** lgamma(x) of fp32 value x, as dtype dt (poles +inf as eager). -1 when the
 *  kernel is full. */
int kir_lgamma(kir_kernel *k, trnc_dtype dt, int x);
/** polygamma(n, x), digamma for n = 0, of fp32 value x as dtype dt, for
 *  0 <= n <= KIR_POLYGAMMA_MAX_ORDER; -1 otherwise or when the kernel is full. */
int kir_polygamma(kir_kernel *k, trnc_dtype dt, int x, int n);

/** How a reduction op folds (the reductions table in rules.c). */
typedef struct kir_reduction {
  uint8_t alu;    /* fold: TRNC_NC_ALU_ADD / MUL / MAX / MIN */
  bool nonzero;   /* folds x != 0 (any, all) */
  bool mean;      /* the fold times 1 / count */
  bool whole;     /* reduces every dim (sum.default, prod.default, ...) */
  bool identity;  /* has a value over no elements (amax/amin: eager raises) */
  float empty;    /* that value: sum 0, prod 1, mean NaN, any false, all true */
} kir_reduction;
/** The reductions-table row of op, NULL if op is not a kir reduction. */
const kir_reduction *kir_reduction_of(trnc_op op);
/** True for the reduction ops of the table (kir_reduction_of). */
bool kir_is_reduce(trnc_op op);
/** True for the row ops kir lowers whole (softmax, log_softmax and their
 *  backwards, layer norm and the dx of its backward): their (first) result
 *  has their input's shape. */
bool kir_is_row(trnc_op op);
/** Mask of the dims that reduction or row node n folds, for an input of
 *  rank `rank` (rank 0: dim 0); *keepdim for reductions. */
uint32_t kir_reduced_dims(const trnc_node *n, int rank, bool *keepdim);
/** Appends the ops of row node n (kir_is_row) over the kernel's reduction
 *  axes; sets env->val[n's outputs]. TRNC_ERR_INTERNAL when full. */
trnc_status kir_lower_row(kir_env *env, const trnc_node *n);
/** Value of output k of row node n over an input with no elements (eager:
 *  layer norm's mean 0 and rstd NaN); NAN for outputs that are empty then. */
float kir_row_empty_value(const trnc_node *n, uint32_t k);


/* ---- kernels of the graph (build.c) and their emission (emit.c) ---------------- */

/** A matmul that reads a row group's last value as its left operand A
 *  ([M, K] with K the group's last, folded dim; a contiguous reshape of
 *  the group's value): node mm (mm or addmm), its result `out` (after a
 *  fused activation `act`, TRNC_NC_ACT_IDENTITY: none). */
typedef struct kir_mm_node {
  const trnc_node *mm;
  trnc_ref out;
  int act;
} kir_mm_node;

/** True if matmul node mm (mm or addmm) with left operand a (a row group's
 *  last value over `space`, or a contiguous [M, K] reshape of it) can end
 *  that group's kernel: K = the last dim of space, 2..512; W [K, N] in HBM
 *  of a's dtype with its resident tiles <= 32 KiB per partition; an addmm
 *  bias along N only. */
bool kir_mm_fuses(const lw *L, const trnc_type *space, const trnc_node *mm, trnc_ref a);

/** Emits a group nodes[0..n) of elementwise and row nodes (one output
 *  shape; every row node folds the same dims), optionally followed by a
 *  reduction `red` of the group's last value (NULL: none; it folds the row
 *  nodes' dims if there are any), as one kernel; with mm (NULL: none), the
 *  matmul reading the group's last value ends the kernel. */
trnc_status kir_emit_group(lw *L, const trnc_node *const *nodes, int n, const trnc_node *red,
                           const kir_mm_node *mm);
/** Schedules kernel k and emits its instructions into L's current program
 *  (a new NeuronCore kernel). */
trnc_status kir_emit(lw *L, const kir_kernel *k);

#endif
