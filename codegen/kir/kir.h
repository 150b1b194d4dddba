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
 *   %v = mmv   %a, %b, R    sum over the axes in R of %a * %b on TensorE,
 *                           fp32 (PSUM): %v spans the axes of %a and %b
 *                           less R (Q K^T over the head dim, P V over keys)
 *   %v = affsel %a, c, fill %a where c0 + sum_i c_i * index_i >= 0, else
 *                           fill (GpSimd affine_select: causal masks)
 *
 * Kernels with a *sequential* axis (kir_kernel.seq, a reduction axis):
 * loads, bcasts and elementwise values may span any subset of the axes,
 * and the schedule walks the sequential axis block by block, in order,
 * inside each tile of the other axes, carrying the reductions over it
 * (row max, row sum, an mmv's PSUM accumulation) from block to block as
 * running state. They are scheduled by codegen/kir/attention.c
 * (kir_emit_seq), not by emit.c's map/reduce layouts.
 *   %v = matmul %a, %b      %a . %b on TensorE: both over every axis,
 *                           contracted along the reduction axes; %v
 *                           (fp32, PSUM) over the space axes. A matmul
 *                           kernel (codegen/kir/matmul.c) has axes
 *                           [batch..., M, N, K]: loads of A (stride 0 along
 *                           N) and B (stride 0 along M), the matmul, an
 *                           epilogue of elementwise ops and a store (its
 *                           one reduction axis K). A convolution kernel (codegen/kir/conv.c) has
 *                           axes [G, N, O, OH, OW, C, KH, KW] and contracts
 *                           several of them (channels and taps, or output
 *                           positions for grad_weight) into one PSUM bank.
 *   %v = gather T, %i       row %i of table T (one i32 index per partition,
 *                           constant along the tile's free axes: a DMA gather,
 *                           whose range check reports an index outside
 *                           [0, T.rows) as TRNC_ERR_LIMIT); T's access map is
 *                           the row's pattern (codegen/kir/gather.c)
 *        scatter T, %i, %v  %v into row %i of table T (a DMA scatter, in
 *                           program order: the last duplicate index wins)
 *   %v = iota  T            i32 value offset(T) + sum_i stride_i(T) * index_i
 *                           over every axis: T is an access map only (no
 *                           buffer); a GpSimd iota per tile, exact in int32
 *                           (the element addresses of a gather along a
 *                           short dim: codegen/kir/gather.c)
 *        colsum T, %v       the sum of %v (over every axis) over the space
 *                           axes into tensor T (strides 0 on the space axes):
 *                           a per-column sum beside a row kernel's results
 *                           (layer-norm backward's dW and dB), accumulated in
 *                           fp32 on TensorE across the row blocks (emit.c)
 *        accum T, %i, %v    row %i of table T += %v, duplicate indices summed
 *                           (`accum T, %i, %v, init`: T = the sums, rows no
 *                           index names 0); %i is constant along T's access
 *                           map (the row's pattern; T's strides are 0 on the
 *                           other axes, the rows'), an index outside
 *                           [0, T.rows) adds nothing (range checks are
 *                           gathers nothing reads). The kernel's last op: a
 *                           one-hot matmul on TensorE into PSUM per block of
 *                           <= 128 table rows x <= 512 elements, non-finite
 *                           sources counted apart (codegen/kir/accum.c)
 *
 * A kernel whose elementwise ops read reduced values (softmax's x - max)
 * runs in passes over the reduction axes: pass p computes the reductions
 * whose inputs need the results of pass p - 1 (loads are repeated).
 *
 * A load is a tile of its own or a view: the schedule may load a contiguous
 * span of HBM that covers one or more loads of a buffer (the taps of a
 * window over x[..., ::2]) once and let their readers see each through an
 * on-chip access map (offset and strides within the span's SBUF tile);
 * nothing in the kernel text changes (codegen/kir/emit.c, span loads).
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
  KIR_MMV,
  KIR_AFFSEL,
  KIR_MATMUL,
  KIR_GATHER,
  KIR_SCATTER,
  KIR_IOTA,
  KIR_COLSUM,
  KIR_ACCUM,
  KIR_OPCODE_COUNT
} kir_opcode;

/** An HBM operand: buffer, device dtype, access map over the kernel's axes. */
typedef struct kir_tensor {
  int32_t buffer;
  trnc_dtype dtype;
  int64_t offset;                 /* elements */
  int64_t stride[KIR_MAX_AXES];   /* elements per step of each axis; 0 = broadcast */
  int64_t rows, row_stride;       /* gathered tables (codegen/kir/gather.c): rows
                                     row_stride elements apart; 0 otherwise */
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
  int32_t ival;                   /* const of an i32 value: its exact value;
                                     affsel: c0 */
  int32_t coef[KIR_MAX_AXES];     /* affsel: c_i per axis (imm[0]: fill) */
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
  uint32_t seq;                   /* the sequential axis (a reduction axis), 0: none */
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
/** The colsum op: the sum of a (over every axis) over the space axes into
 *  tensor (strides 0 on the space axes); false when full or a is -1. */
bool kir_colsum(kir_kernel *k, int tensor, int a);
/** The matmul op: a . b (both over every axis) contracted along the
 *  kernel's reduction axes, an fp32 value over the space axes; -1 when full. */
int kir_matmul2(kir_kernel *k, int a, int b);

/* Kernels with a sequential axis (k->seq set after kir_init). */
/** Adds an HBM tensor of `buffer` (device dtype dt) with its access map
 *  given directly: element offset and one stride per kernel axis (0 along
 *  axes it does not vary on; several axes may walk one dim of the buffer,
 *  e.g. a query head split into key head and group member). -1 when full. */
int kir_tensor_map(kir_kernel *k, int32_t buffer, trnc_dtype dt, int64_t offset, const int64_t *stride);
/** A load of tensor over the axes in mask (the tensor's strides are 0 off
 *  them). */
int kir_load_axes(kir_kernel *k, int tensor, trnc_dtype dt, uint32_t axes);
/** a (over fewer axes) repeated over the axes in mask (a superset of a's). */
int kir_bcast_to(kir_kernel *k, trnc_dtype dt, int a, uint32_t axes);
/** The mmv op: a . b contracted over the axes in mask r (fp32). */
int kir_mmv(kir_kernel *k, int a, int b, uint32_t r);
/** The affsel op: a where c0 + sum_i coef[i] * index_i >= 0, else fill. */
int kir_affsel(kir_kernel *k, trnc_dtype dt, int a, int32_t c0, const int32_t *coef, float fill);

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
/** True if operand i of n is read by its bits (copysign's sign, signbit's
 *  operand: a NaN's sign bit is no float comparison's result), so it must
 *  be a float tensor in HBM that the kernel loads, never a value computed in the kernel or a
 *  matmul accumulator: the fusion keeps its producer out (codegen/lower.c). */
bool kir_reads_bits(const trnc_node *n, uint32_t i);
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

/** erfc(x) (scaled: special_erfcx(x) = exp(x^2) erfc(x)) of fp32 value x as
 *  dtype dt; -1 when the kernel is full. */
int kir_erfc(kir_kernel *k, trnc_dtype dt, int x, bool scaled);
/** erfinv(x) of fp32 value x as dtype dt (+-inf at +-1, NaN beyond); -1 when
 *  the kernel is full. */
int kir_erfinv(kir_kernel *k, trnc_dtype dt, int x);
/** The modified Bessel function of the first kind of order `order` (0 or 1)
 *  of fp32 value x, times exp(-|x|) when scaled (i0, i1, i0e, i1e), as dtype
 *  dt; -1 for another order or when the kernel is full. */
int kir_bessel_i(kir_kernel *k, trnc_dtype dt, int x, int order, bool scaled);
/** The Bessel function of the first kind (second: of the second kind, y) of
 *  order `order` (0 or 1) of fp32 value x as dtype dt (y: -inf at +-0, NaN
 *  below 0); -1 for another order or when the kernel is full. */
int kir_bessel_jy(kir_kernel *k, trnc_dtype dt, int x, int order, bool second);
/** The modified Bessel function of the second kind of order `order` (0 or 1)
 *  of fp32 value x, times exp(x) when scaled, as dtype dt (+inf at +-0, NaN
 *  below 0); -1 for another order or when the kernel is full. */
int kir_bessel_k(kir_kernel *k, trnc_dtype dt, int x, int order, bool scaled);
/** sin(x)/x of fp32 value x (a series below |x| = 0.5, 0 at +-inf) as dtype
 *  dt; -1 when the kernel is full. */
int kir_spherical_bessel_j0(kir_kernel *k, trnc_dtype dt, int x);
/** The Airy function Ai of fp32 value x (NaN at +-inf) as dtype dt; -1 when
 *  the kernel is full. */
int kir_airy_ai(kir_kernel *k, trnc_dtype dt, int x);

/* ---- ndtri, nextafter, zeta (special_fn.c) ------------------------------------ */

/** ndtri(x), the inverse of the standard normal CDF, of fp32 value x as dtype
 *  dt (-inf at 0, +inf at 1, NaN outside [0, 1]); -1 when the kernel is full. */
int kir_ndtri(kir_kernel *k, trnc_dtype dt, int x);

/** nextafter(x, y) of fp32 values x, y (x, y exact in dt, the result's
 *  dtype: f32, bf16 or f16): x's neighbour in dt towards y, bit for bit as
 *  eager's (y at x == y, NaN at a NaN operand); -1 for another dtype or when
 *  the kernel is full. */
int kir_nextafter(kir_kernel *k, trnc_dtype dt, int x, int y);

/** Terms of kir_zeta's direct sum beyond the first (the Euler-Maclaurin tail
 *  starts at q + KIR_ZETA_TERMS) and its Bernoulli terms. */
#define KIR_ZETA_TERMS 25
#define KIR_ZETA_BERNOULLI 6
/** kir_zeta is NaN for q below -KIR_ZETA_MIN_Q (the tail needs q + N >= 9;
 *  eager sums 9 - q terms there). */
#define KIR_ZETA_MIN_Q 16
/** The Hurwitz zeta function zeta(x, q) of fp32 values x, q as dtype dt
 *  (+inf at x = 1 and at q a non-positive integer, NaN for x < 1, for q < 0
 *  with x no integer, and for q < -KIR_ZETA_MIN_Q); -1 when the kernel is
 *  full. */
int kir_zeta(kir_kernel *k, trnc_dtype dt, int x, int q);
/* ---- orthogonal polynomials (polynomial.c) ------------------------------------ */

/** acos(x) of fp32 value x as dtype dt (2 atan(sqrt((1-x)/(1+x))), rules.c). */
int kir_acos(kir_kernel *k, trnc_dtype dt, int x);
/** Chebyshev polynomial (first to fourth kind, shifted or not, by op
 *  TRNC_OP_SPECIAL_[SHIFTED_]CHEBYSHEV_POLYNOMIAL_{T,U,V,W}) of fp32 value x
 *  at degree value n (any float: truncated as eager's int64 cast), as dtype
 *  dt; every n as eager's branches (see polynomial.c). -1 when the kernel is
 *  full. */
int kir_chebyshev(kir_kernel *k, trnc_dtype dt, trnc_op op, int x, int n);
/** Values kir_chebyshev makes at most (kir_eltwise_values' estimate; W makes
 *  161, the most). */
#define KIR_CHEBYSHEV_VALUES 168
/** Values kir_poly_recurrence makes at the Python number n (an estimate
 *  above the count, for kir_eltwise_values). */
int kir_poly_values(trnc_op op, double n);
/** Most recurrence steps kir_poly_recurrence unrolls (ir/ops.c checks it). */
#define KIR_POLY_MAX_STEPS TRNC_POLY_MAX_STEPS
/** The steps of Hermite H/He, Laguerre L or Legendre P (op) at the Python
 *  number n: *steps = n truncated, -1 where eager's cast makes n < 0 (the
 *  result 0), -2 for Hermite beyond n = 128 (NaN); returns -1 when n exceeds
 *  KIR_POLY_MAX_STEPS, else 0. */
int kir_poly_steps(trnc_op op, double n, int *steps);
/** Hermite H/He, Laguerre L or Legendre P (op) of fp32 value x at the Python
 *  number n: eager's recurrence unrolled n steps, as dtype dt. -1 when n is
 *  beyond KIR_POLY_MAX_STEPS or the kernel is full. */
int kir_poly_recurrence(kir_kernel *k, trnc_dtype dt, trnc_op op, int x, double n);

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
 *  backwards, layer norm and its backward): their (first) result
 *  has their input's shape. */
bool kir_is_row(trnc_op op);
/** Mask of the dims that reduction or row node n folds, for an input of
 *  rank `rank` (rank 0: dim 0); *keepdim for reductions. */
uint32_t kir_reduced_dims(const trnc_node *n, int rank, bool *keepdim);
/** Appends the ops of row node n (kir_is_row) over the kernel's reduction
 *  axes; sets env->val[n's outputs]. TRNC_ERR_INTERNAL when full. */
trnc_status kir_lower_row(kir_env *env, const trnc_node *n);
/** True if output o of row node n is a column sum over the rows (layer-norm
 *  backward's dW and dB): kir_lower_row sets its value to the addend over
 *  every axis and the kernel sums it with a colsum op. */
bool kir_row_colsum(const trnc_node *n, uint32_t o);
/** Value of output k of row node n over an input with no elements (eager:
 *  layer norm's mean 0 and rstd NaN); NAN for outputs that are empty then. */
float kir_row_empty_value(const trnc_node *n, uint32_t k);


/* ---- indirect loads (gather.c) ------------------------------------------------- */

/** %v = gather tensor, idx: row idx of table `tensor` (its rows and
 *  row_stride set), as dtype dt, over idx's axes. -1 when full. */
int kir_gather(kir_kernel *k, int tensor, int idx, trnc_dtype dt);
/** The iota op: the i32 value of access map `tensor` (kir_tensor_map,
 *  buffer -1) at each element, over every axis. -1 when full. */
int kir_iota(kir_kernel *k, int tensor);
/** The scatter op: value v into row idx of table `tensor`; false when full. */
bool kir_scatter(kir_kernel *k, int tensor, int idx, int v);
/** True if node n (scatter.src, scatter.value, index_put without
 *  accumulate) is emitted as a kir scatter kernel (kir_emit_scatter): rows
 *  along a long dim, single elements at iota-computed addresses along a
 *  short one (the index range-checked as written against self). */
bool kir_scatter_handles(const trnc_graph *g, const trnc_node *n);
/** Emits scatter node n: a copy of self into its result, then a kernel
 *  that writes the source rows (or elements) into it through DMA scatters. */
trnc_status kir_emit_scatter(lw *L, const trnc_node *n);
/** The DMA scatter of tile src (access pattern sb) into table T (`table`:
 *  its access pattern at the tile) at the indices in tile idx; *tok orders
 *  the kernel's scatters (created on first use). */
trnc_status kir_scatter_dma(lw *L, const kir_kernel *k, const kir_tensor *T, lw_tile *src, trnc_nc_ap sb,
                            trnc_nc_ap table, lw_tile *idx, lw_tile **tok);
/** True if node n (embedding_dense_backward, index_put with accumulate,
 *  scatter_add) is emitted as a kir accum kernel (kir_emit_accumulate). */
bool kir_accum_handles(const trnc_graph *g, const trnc_node *n);
/** Emits accumulating node n: for index_put and scatter_add a copy of self
 *  into its result, then one kernel whose index loads and arithmetic (wrap,
 *  combined rows, padding_idx), range checks and source load end in an
 *  accum op. TRNC_ERR_LIMIT for indices into an empty table. */
trnc_status kir_emit_accumulate(lw *L, const trnc_node *n);
/** The accum op: v into row idx of table `tensor` (its rows and row_stride
 *  set), summed; init: T = the sums. false when full. */
bool kir_accum(kir_kernel *k, int tensor, int idx, int v, bool init);
/** Schedules accum kernel k (its last op an accum; codegen/kir/accum.c)
 *  into L's current kernel: the one-hot matmul blocks of kir.h's accum. */
trnc_status kir_emit_accum(lw *L, const kir_kernel *k);
/** True if node n lowers to a kir gather (embedding, index_select). */
bool kir_is_gather(const trnc_graph *g, const trnc_node *n);
/** Mask of the dims of a space of rank `rank` (n's result right-aligned)
 *  along which gather node n's index varies. */
uint32_t kir_gather_dims(const trnc_graph *g, const trnc_node *n, int rank);
/** True if nodes[0..n) (the last one just added) can share a kernel over a
 *  space of rank `rank` whose row nodes or reduction fold the dims in
 *  `rows`: a gather reads no group value, and with rows set, folds exactly
 *  its row pattern (its index dims stay space axes). */
bool kir_gather_fits(const trnc_graph *g, const trnc_node *const *nodes, int n, int rank, uint32_t rows);
/** Appends the ops of gather node n (its index load and the gather); sets
 *  env->val[n's output]. TRNC_ERR_LIMIT for indices into an empty table. */
trnc_status kir_lower_gather(kir_env *env, const trnc_node *n);
/** Tiles map kernel k with gathers over lw_space s (one operand per kernel
 *  tensor; reordered and coalesced here): the dims that an index and a
 *  table both vary along are looped, partitions walk one that only an index
 *  varies along, the free dims are the rows' pattern; fn per tile, as
 *  lw_space_tiles. */
trnc_status kir_gather_tiles(lw *L, const kir_kernel *k, lw_space *s, int64_t max_free, lw_tile_fn fn,
                             void *ctx);
/** The DMA gather of table T into tile dst (access pattern sb, np
 *  partitions) with `table` the table's access pattern at the tile (its
 *  partition fields replaced by the rows) and idx the tile of i32 indices. */
trnc_status kir_gather_dma(lw *L, const kir_kernel *k, const kir_tensor *T, lw_tile *dst, trnc_nc_ap sb,
                           trnc_nc_ap table, lw_tile *idx);

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
 *  that group's kernel: K = the last dim of space, 2..1024; W [K, N] in HBM
 *  of a's dtype (resident when it fits, else streamed); an addmm
 *  bias along N only. */
bool kir_mm_fuses(const lw *L, const trnc_type *space, const trnc_node *mm, trnc_ref a);

/** Emits a group nodes[0..n) of elementwise and row nodes (one output
 *  shape; every row node folds the same dims), optionally followed by a
 *  reduction `red` of the group's last value (NULL: none; it folds the row
 *  nodes' dims if there are any), as one kernel; with mm (NULL: none), the
 *  matmul reading the group's last value ends the kernel. */
trnc_status kir_emit_group(lw *L, const trnc_node *const *nodes, int n, const trnc_node *red,
                           const kir_mm_node *mm);
/** Lowers matmul node n (mm, bmm, addmm, baddbmm) with the epilogue ep
 *  (scale, activation, the value written) as a matmul kernel
 *  (codegen/kir/matmul.c): operands and result are access maps over
 *  [batch..., M, N, K] (views, transposes and lower.c's batch strides cost
 *  nothing). TRNC_ERR_UNSUPPORTED for operands of different dtypes or not in
 *  HBM. */
trnc_status kir_emit_matmul(lw *L, const trnc_node *n, const lw_epilogue *ep);
/** True if value x, an operand of an elementwise node over shape `space`
 *  (x right-aligned and broadcast to it) that reads the result of matmul
 *  node n ([batch,] M x N; space the same elements, a contiguous reshape
 *  with the same last dim N), is in HBM and walks the result's rows with
 *  one stride (0: broadcast along them); *view (may be NULL) is then x
 *  seen as [batch,] M x N, how a matmul epilogue loads it. */
bool kir_mm_operand_view(const lw *L, const trnc_node *n, const trnc_type *space, trnc_ref x, lw_tv *view);
/** Emits elementwise op o of kernel k (act, tt, ts with immediate scalars,
 *  copy, const, select) over [np, n] elements: value v in tile cur[v] at
 *  byte offset off[v] (off NULL: 0) — a matmul epilogue's ops on its output
 *  tiles (codegen/kir/emit.c). TRNC_ERR_INTERNAL for another op. */
trnc_status kir_emit_tile_op(lw *L, const kir_kernel *k, const kir_op *o, lw_tile *const *cur, const int64_t *off,
                             int np, int64_t n);
/** Schedules matmul kernel k (one KIR_MATMUL op) into L's current kernel:
 *  the blocked TensorE schedule of codegen/kir/matmul.c. */
trnc_status kir_schedule_matmul(lw *L, const kir_kernel *k);
/** Tile t [pc partitions, fc free] at byte offset toff, the transpose of
 *  fc HBM rows of pc <= 128 contiguous elements (fstride elements apart,
 *  the first at element `off` of `buffer`, dtype dt) — how a 4-byte operand
 *  is transposed, since NKI's DMA transpose moves 2-byte dtypes only: per
 *  128 rows, a DMA of the rows (on queue(ctx), or lw_dma_queue when queue
 *  is NULL) into a tile of pool `rows` ([128, >= pc] of dt), a TensorE
 *  transpose into a tile of PSUM pool tp ([128, 128] fp32) and a VectorE
 *  copy into t (codegen/kir/matmul.c). */
trnc_status kir_load_pe_transposed(lw *L, lw_tile *t, int64_t toff, int32_t buffer, trnc_dtype dt, int64_t off,
                                   int64_t pc, int64_t fstride, int64_t fc, lw_pool *rows, lw_pool *tp,
                                   int (*queue)(void *), void *ctx);
/** Schedules kernel k and emits its instructions into L's current program
 *  (a new NeuronCore kernel). */
trnc_status kir_emit(lw *L, const kir_kernel *k);

/** Map kernels that share one NeuronCore kernel (kir_emit_part): cat's
 *  pieces, pad's fills and interior. They share their tile pools (value i
 *  of every part: 3 tiles of max_free elements each). With `ordered`, every
 *  store also writes an HBM token, so stores of later parts that overlap
 *  earlier ones land after them (the first write of a scatter's result,
 *  then its slice); without it, the parts must write disjoint elements. */
#define KIR_PARTS_POOLS 4
typedef struct kir_parts {
  int64_t max_free;               /* set by the caller: the largest part's elements (capped) */
  bool ordered;
  bool begun;
  lw_tile *tok;
  lw_pool pool[KIR_PARTS_POOLS];
  int64_t bytes[KIR_PARTS_POOLS];
} kir_parts;
/** Schedules map kernel k (no reduction, gather or matmul) as the next part
 *  of P's NeuronCore kernel (begun by the first part, named after it). */
trnc_status kir_emit_part(lw *L, const kir_kernel *k, kir_parts *P);

/* ---- data movement (data.c) ---------------------------------------------------- */

/** True if node n (cat, stack, constant_pad_nd, slice_scatter,
 *  select_scatter, as_strided_scatter, copy_) lowers to kir copy and fill parts
 *  (kir_emit_data). */
bool kir_data_handles(const trnc_graph *g, const trnc_node *n);
/** Emits data-movement node n as one NeuronCore kernel of kir map parts:
 *  each input (or fill) stored through an access map into its slice of
 *  the result. */
trnc_status kir_emit_data(lw *L, const trnc_node *n);

/* ---- kernels with a sequential axis (attention.c) ------------------------------ */

/** Schedules a kernel with a sequential axis (k->seq) and emits it (a new
 *  NeuronCore kernel): the flash-attention form that kir_attention_forward
 *  builds; TRNC_ERR_INTERNAL naming the mismatch for any other body. */
trnc_status kir_emit_seq(lw *L, const kir_kernel *k);

#endif
