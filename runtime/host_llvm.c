/*
 * host_llvm.c — the host backend: a verified NeuronCore program as LLVM IR
 * that computes exactly what the interpreter (runtime/nc_sim.c) computes,
 * bit for bit.
 *
 * Every access pattern has constant strides and counts, so each
 * instruction becomes a function, a loop nest with constant trip counts
 * over partitions and free dims, which LLVM vectorizes for the host CPU;
 * instructions that differ only in where their operands are (base
 * addresses and immediates are arguments) share one function, so a program
 * of many same-shaped tiles compiles a handful. No kernel function: the
 * run (runtime/llvm.c, trnc_host_run) calls them in the verifier's
 * schedule order from the program's plan (trnc_host_plan), which is what
 * LLVM spent most of its time on when kernels were straight-line code of
 * thousands of calls. The rules that keep it bit-identical:
 *  - the same arithmetic in the same order: fp32 everywhere, no fast-math
 *    flags (so no FP contraction, reassociation or reciprocal tricks), the
 *    interpreter's expression trees (e.g. gelu, sigmoid) node for node;
 *  - bf16 and integer encode/decode inlined with the interpreter's rules
 *    (round to nearest even, NaN quieting; truncate and saturate, NaN -> 0);
 *    fp16/fp8 call trnc_nc_encode/trnc_nc_decode themselves;
 *  - transcendentals call the libm functions the interpreter calls, under
 *    private names so that LLVM neither folds nor replaces them;
 *  - reductions and matmul accumulate in the interpreter's order: a scalar
 *    chain per output element; matmul adds a[k]*b[k] for k = 0..K-1 into an
 *    fp32 accumulator (trnc_host_gemm, runtime/host_gemm.c, the kernel the
 *    interpreter calls too: 8 rows x 48 columns of accumulators in
 *    registers, vectorized across columns, never across k; fused
 *    multiply-adds only where every product is exact);
 *  - memory effects in the interpreter's order: partition by partition,
 *    and within a partition "read the whole row, then write it" (a row is
 *    staged through the float workspace unless the operands provably do
 *    not overlap); same-dtype copies move raw bits;
 *  - gathers/scatters check every index and report the instruction.
 */
#define _POSIX_C_SOURCE 200809L
#include "runtime/host_llvm.h"
#include "runtime/host_gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- externs ------------------------------------------------------------------ */

enum {
  EXT_EXPF, EXT_LOGF, EXT_TANHF, EXT_ERFF, EXT_SINF, EXT_COSF, EXT_LOG1PF, EXT_POWF,
  EXT_ENCODE, EXT_DECODE, EXT_GEMM, EXT_COUNT
};

const trnc_host_extern trnc_host_externs[] = {
    {"trnc_host_expf", (void *)expf},     {"trnc_host_logf", (void *)logf},
    {"trnc_host_tanhf", (void *)tanhf},   {"trnc_host_erff", (void *)erff},
    {"trnc_host_sinf", (void *)sinf},     {"trnc_host_cosf", (void *)cosf},
    {"trnc_host_log1pf", (void *)log1pf}, {"trnc_host_powf", (void *)powf},
    {"trnc_host_encode", (void *)trnc_nc_encode}, {"trnc_host_decode", (void *)trnc_nc_decode},
    {"trnc_host_gemm", (void *)trnc_host_gemm},   {NULL, NULL}};

/* ---- translation context ------------------------------------------------------- */

typedef struct hx {
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, ptr;
  const trnc_nc_program *p;
  const trnc_nc_target *t;
  int64_t part_stride[2]; /* bytes per partition of the run's SBUF, PSUM */
  LLVMTypeRef ifn;        /* an instruction's function */
  LLVMValueRef fn, tmp, err;
  const trnc_nc_instr *cur; /* the instruction being translated (offsets zeroed) */
  LLVMValueRef slotb[5];  /* its operand slots' base pointers */
  LLVMValueRef instr_arg; /* its index (i64), for error reports */
  LLVMValueRef imm[3];    /* its immediates: arguments, never constants, so that
                           * LLVM's folds (x * -1.0 -> fneg x flips a NaN's sign)
                           * cannot make results differ from the interpreter's */
  bool fused;             /* ew_fusable(original instruction) */
  LLVMValueRef ext[EXT_COUNT];
  LLVMTypeRef extty[EXT_COUNT];
  LLVMBasicBlockRef entry;
  int64_t tmp_floats;     /* workspace high-water mark */
} hx;

#define MB TRNC_GEMM_MB /* rows per matmul micro-kernel block */
#define NB TRNC_GEMM_NB /* columns per block */

static LLVMValueRef ci64(hx *X, int64_t v) { return LLVMConstInt(X->i64, (unsigned long long)v, 1); }
static LLVMValueRef ci32(hx *X, int64_t v) { return LLVMConstInt(X->i32, (unsigned long long)v, 1); }
static LLVMValueRef cf(hx *X, float v) { return LLVMConstReal(X->f32, (double)v); }
static LLVMValueRef add(hx *X, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildNSWAdd(X->B, a, b, ""); }
static LLVMValueRef mul(hx *X, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildNSWMul(X->B, a, ci64(X, c), "");
}
static LLVMValueRef gep8(hx *X, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(X->B, X->i8, base, &off, 1, "");
}
static LLVMValueRef gepf(hx *X, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(X->B, X->f32, X->tmp, &idx, 1, "");
}
static LLVMValueRef load(hx *X, LLVMTypeRef ty, LLVMValueRef ptr, unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(X->B, ty, ptr, "");
  LLVMSetAlignment(v, align);
  return v;
}
static void store(hx *X, LLVMValueRef v, LLVMValueRef ptr, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(X->B, v, ptr), align);
}
static LLVMValueRef call(hx *X, int e, LLVMValueRef *args, unsigned n) {
  return LLVMBuildCall2(X->B, X->extty[e], X->ext[e], args, n, "");
}
static LLVMValueRef call1(hx *X, int e, LLVMValueRef a) { return call(X, e, &a, 1); }

/** A stack slot in the entry block (SROA turns it into registers). */
static LLVMValueRef slot(hx *X, LLVMTypeRef ty) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(X->C);
  LLVMValueRef first = LLVMGetFirstInstruction(X->entry);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, X->entry);
  LLVMValueRef a = LLVMBuildAlloca(b, ty, "");
  LLVMDisposeBuilder(b);
  return a;
}

/* ---- loops ----------------------------------------------------------------------- */

/** A counted loop 0..n-1 (n >= 1), rotated: the body runs first. n == 1 is
 *  no loop at all (iv is the constant 0). */
typedef struct loop {
  LLVMBasicBlockRef body;
  LLVMValueRef iv;
  LLVMValueRef n; /* trip count (i64) */
} loop;

static LLVMValueRef loop_body(hx *X, loop *L) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(X->B);
  L->body = LLVMAppendBasicBlockInContext(X->C, X->fn, "loop");
  LLVMBuildBr(X->B, L->body);
  LLVMPositionBuilderAtEnd(X->B, L->body);
  L->iv = LLVMBuildPhi(X->B, X->i64, "i");
  LLVMValueRef zero = ci64(X, 0);
  LLVMAddIncoming(L->iv, &zero, &pre, 1);
  return L->iv;
}

static LLVMValueRef loop_open(hx *X, loop *L, int64_t n) {
  L->n = ci64(X, n);
  L->body = NULL;
  L->iv = ci64(X, 0);
  if (n <= 1) return L->iv;
  return loop_body(X, L);
}


static void loop_close(hx *X, loop *L) {
  if (!L->body) return;
  LLVMValueRef next = LLVMBuildNUWAdd(X->B, L->iv, ci64(X, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(X->B);
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(X->C, X->fn, "exit");
  LLVMBuildCondBr(X->B, LLVMBuildICmp(X->B, LLVMIntULT, next, L->n, ""), L->body, exit);
  LLVMAddIncoming(L->iv, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(X->B, exit);
}

/* ---- access patterns --------------------------------------------------------------- */

/** The free dims of up to four access patterns that walk the same element
 *  order, with count-1 dims dropped and neighbours merged where every
 *  pattern is contiguous across them (free order is kept). */
typedef struct dims {
  int n;
  int64_t count[TRNC_NC_MAX_FREE];
  int64_t stride[4][TRNC_NC_MAX_FREE]; /* per pattern, in elements */
} dims;

/** Fills *d for aps[0..na); false if their dims (count-1 dims aside)
 *  differ. */
static bool dims_of(const trnc_nc_ap *const *aps, int na, dims *d) {
  memset(d, 0, sizeof *d);
  int n0 = -1;
  for (int a = 0; a < na; a++) {
    int n = 0;
    for (int j = 0; j < aps[a]->nfree; j++) {
      if (aps[a]->free[j].count == 1) continue;
      if (a == 0) d->count[n] = aps[a]->free[j].count;
      else if (n >= n0 || d->count[n] != aps[a]->free[j].count) return false;
      d->stride[a][n++] = aps[a]->free[j].stride;
    }
    if (a == 0) n0 = n;
    else if (n != n0) return false;
  }
  d->n = n0 < 0 ? 0 : n0;
  for (int j = d->n - 2; j >= 0; j--) {
    bool ok = true;
    for (int a = 0; a < na; a++) ok = ok && d->stride[a][j] == d->stride[a][j + 1] * d->count[j + 1];
    if (!ok) continue;
    d->count[j] *= d->count[j + 1];
    for (int a = 0; a < na; a++) d->stride[a][j] = d->stride[a][j + 1];
    for (int m = j + 1; m + 1 < d->n; m++) {
      d->count[m] = d->count[m + 1];
      for (int a = 0; a < na; a++) d->stride[a][m] = d->stride[a][m + 1];
    }
    d->n--;
  }
  return true;
}

/** A loop nest over dims: iv per dim, k the element's index in free order. */
typedef struct nest {
  loop L[TRNC_NC_MAX_FREE];
  int n;
  LLVMValueRef k;
} nest;

static void nest_open(hx *X, nest *N, const dims *d) {
  N->n = d->n;
  N->k = ci64(X, 0);
  for (int j = 0; j < d->n; j++) {
    LLVMValueRef iv = loop_open(X, &N->L[j], d->count[j]);
    N->k = add(X, mul(X, N->k, d->count[j]), iv);
  }
}

static void nest_close(hx *X, nest *N) {
  for (int j = N->n - 1; j >= 0; j--) loop_close(X, &N->L[j]);
}

/** Byte offset of the current element of pattern a of the nest. */
static LLVMValueRef nest_off(hx *X, const nest *N, const dims *d, int a, int64_t es) {
  LLVMValueRef off = ci64(X, 0);
  for (int j = 0; j < d->n; j++) off = add(X, off, mul(X, N->L[j].iv, d->stride[a][j] * es));
  return off;
}

static int64_t esize(const trnc_nc_ap *ap) { return (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype); }

/** Address of element 0 of partition (or HBM row) p of ap (p: i64), an
 *  operand of the instruction being translated: its slot's base pointer
 *  (an argument of the instruction's function) plus the partition step. */
static LLVMValueRef row_ptr(hx *X, const trnc_nc_ap *ap, LLVMValueRef p) {
  int sl = 0;
  while (sl < 4 && nc_slot(X->cur, sl) != ap) sl++;
  int64_t step = ap->mem == TRNC_NC_MEM_SBUF   ? X->part_stride[0]
                 : ap->mem == TRNC_NC_MEM_PSUM ? X->part_stride[1]
                                               : ap->partition_stride * esize(ap);
  return gep8(X, X->slotb[sl], mul(X, p, step));
}

/* ---- element codecs ------------------------------------------------------------------ */

static LLVMTypeRef raw_type(hx *X, int64_t es) { return es == 1 ? X->i8 : es == 2 ? X->i16 : X->i32; }

/** fp32 value of the element at ptr (trnc_nc_decode, inlined but for fp16/fp8). */
static LLVMValueRef load_elem(hx *X, LLVMValueRef ptr, int dt) {
  LLVMBuilderRef B = X->B;
  switch (dt) {
    case TRNC_F32: return load(X, X->f32, ptr, 4);
    case TRNC_BF16: {
      LLVMValueRef h = LLVMBuildZExt(B, load(X, X->i16, ptr, 2), X->i32, "");
      return LLVMBuildBitCast(B, LLVMBuildShl(B, h, ci32(X, 16), ""), X->f32, "");
    }
    case TRNC_I32: return LLVMBuildSIToFP(B, load(X, X->i32, ptr, 4), X->f32, "");
    case TRNC_I16: return LLVMBuildSIToFP(B, load(X, X->i16, ptr, 2), X->f32, "");
    case TRNC_I8: return LLVMBuildSIToFP(B, load(X, X->i8, ptr, 1), X->f32, "");
    case TRNC_U8: return LLVMBuildUIToFP(B, load(X, X->i8, ptr, 1), X->f32, "");
    case TRNC_BOOL:
      return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntNE, load(X, X->i8, ptr, 1), LLVMConstInt(X->i8, 0, 0), ""),
                             cf(X, 1.0f), cf(X, 0.0f), "");
    default: {
      int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)dt);
      LLVMValueRef b = LLVMBuildZExt(B, load(X, raw_type(X, es), ptr, (unsigned)es), X->i32, "");
      LLVMValueRef args[2] = {ci32(X, dt), b};
      return call(X, EXT_DECODE, args, 2);
    }
  }
}

/** sat_trunc of isa.c: NaN -> 0, <= lo -> lo, >= hi -> hi, else toward zero. */
static LLVMValueRef sat_trunc(hx *X, LLVMValueRef x, int64_t lo, int64_t hi) {
  LLVMBuilderRef B = X->B;
  LLVMValueRef t = LLVMBuildFPToSI(B, x, X->i64, "");
  t = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGE, x, cf(X, (float)hi), ""), ci64(X, hi), t, "");
  t = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLE, x, cf(X, (float)lo), ""), ci64(X, lo), t, "");
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, x, x, ""), ci64(X, 0), t, "");
}

/** Stores fp32 value f at ptr as dtype dt (trnc_nc_encode). */
static void store_elem(hx *X, LLVMValueRef ptr, int dt, LLVMValueRef f) {
  LLVMBuilderRef B = X->B;
  LLVMValueRef v;
  switch (dt) {
    case TRNC_F32: store(X, f, ptr, 4); return;
    case TRNC_BF16: { /* nc_f32_to_bf16 */
      LLVMValueRef u = LLVMBuildBitCast(B, f, X->i32, "");
      LLVMValueRef hi = LLVMBuildLShr(B, u, ci32(X, 16), "");
      LLVMValueRef isnan =
          LLVMBuildICmp(B, LLVMIntUGT, LLVMBuildAnd(B, u, ci32(X, 0x7fffffff), ""), ci32(X, 0x7f800000), "");
      LLVMValueRef r = LLVMBuildAdd(B, u, LLVMBuildAdd(B, ci32(X, 0x7fff), LLVMBuildAnd(B, hi, ci32(X, 1), ""), ""), "");
      r = LLVMBuildSelect(B, isnan, LLVMBuildOr(B, hi, ci32(X, 0x40), ""), LLVMBuildLShr(B, r, ci32(X, 16), ""), "");
      store(X, LLVMBuildTrunc(B, r, X->i16, ""), ptr, 2);
      return;
    }
    case TRNC_I32: v = LLVMBuildTrunc(B, sat_trunc(X, f, INT32_MIN, INT32_MAX), X->i32, ""); break;
    case TRNC_I16: v = LLVMBuildTrunc(B, sat_trunc(X, f, INT16_MIN, INT16_MAX), X->i16, ""); break;
    case TRNC_I8: v = LLVMBuildTrunc(B, sat_trunc(X, f, INT8_MIN, INT8_MAX), X->i8, ""); break;
    case TRNC_U8: v = LLVMBuildTrunc(B, sat_trunc(X, f, 0, UINT8_MAX), X->i8, ""); break;
    case TRNC_BOOL: v = LLVMBuildZExt(B, LLVMBuildFCmp(B, LLVMRealUNE, f, cf(X, 0.0f), ""), X->i8, ""); break;
    default: {
      LLVMValueRef args[2] = {ci32(X, dt), f};
      v = LLVMBuildTrunc(B, call(X, EXT_ENCODE, args, 2), raw_type(X, (int64_t)trnc_nc_dtype_size((trnc_dtype)dt)), "");
    }
  }
  store(X, v, ptr, (unsigned)trnc_nc_dtype_size((trnc_dtype)dt));
}

/* ---- ALU and activation functions (nc_sim.c's alu_rows / act_one) ------------------------- */

static LLVMValueRef flag(hx *X, LLVMValueRef b) { return LLVMBuildUIToFP(X->B, b, X->f32, ""); }
static LLVMValueRef fcmp(hx *X, LLVMRealPredicate pr, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(X->B, pr, a, b, "");
}
static LLVMValueRef nonzero(hx *X, LLVMValueRef a) { return fcmp(X, LLVMRealUNE, a, cf(X, 0.0f)); }

/** nc_max / nc_min: (a != a || a >= b) ? a : b (resp. <=). */
static LLVMValueRef nanmax(hx *X, LLVMValueRef a, LLVMValueRef b, bool max) {
  LLVMValueRef c = LLVMBuildOr(X->B, fcmp(X, LLVMRealUNO, a, a), fcmp(X, max ? LLVMRealOGE : LLVMRealOLE, a, b), "");
  return LLVMBuildSelect(X->B, c, a, b, "");
}

static LLVMValueRef intrinsic1(hx *X, const char *name, LLVMValueRef x) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef ty = X->f32;
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(X->M, id, &ty, 1);
  return LLVMBuildCall2(X->B, LLVMIntrinsicGetType(X->C, id, &ty, 1), f, &x, 1, "");
}
static LLVMValueRef fabs_(hx *X, LLVMValueRef x) { return intrinsic1(X, "llvm.fabs", x); }

static LLVMValueRef alu(hx *X, int op, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = X->B;
  switch (op) {
    case TRNC_NC_ALU_BYPASS: return a;
    case TRNC_NC_ALU_ADD: return LLVMBuildFAdd(B, a, b, "");
    case TRNC_NC_ALU_SUB: return LLVMBuildFSub(B, a, b, "");
    case TRNC_NC_ALU_RSUB: return LLVMBuildFSub(B, b, a, "");
    case TRNC_NC_ALU_MUL: return LLVMBuildFMul(B, a, b, "");
    case TRNC_NC_ALU_DIV: return LLVMBuildFDiv(B, a, b, "");
    case TRNC_NC_ALU_MAX: return nanmax(X, a, b, true);
    case TRNC_NC_ALU_MIN: return nanmax(X, a, b, false);
    case TRNC_NC_ALU_POW: {
      LLVMValueRef args[2] = {a, b};
      return call(X, EXT_POWF, args, 2);
    }
    case TRNC_NC_ALU_EQ: return flag(X, fcmp(X, LLVMRealOEQ, a, b));
    case TRNC_NC_ALU_NE: return flag(X, fcmp(X, LLVMRealUNE, a, b));
    case TRNC_NC_ALU_LT: return flag(X, fcmp(X, LLVMRealOLT, a, b));
    case TRNC_NC_ALU_LE: return flag(X, fcmp(X, LLVMRealOLE, a, b));
    case TRNC_NC_ALU_GT: return flag(X, fcmp(X, LLVMRealOGT, a, b));
    case TRNC_NC_ALU_GE: return flag(X, fcmp(X, LLVMRealOGE, a, b));
    case TRNC_NC_ALU_AND: return flag(X, LLVMBuildAnd(B, nonzero(X, a), nonzero(X, b), ""));
    case TRNC_NC_ALU_OR: return flag(X, LLVMBuildOr(B, nonzero(X, a), nonzero(X, b), ""));
    case TRNC_NC_ALU_XOR: return flag(X, LLVMBuildXor(B, nonzero(X, a), nonzero(X, b), ""));
    case TRNC_NC_ALU_ABSMAX: return nanmax(X, fabs_(X, a), fabs_(X, b), true);
    default: return NULL; /* nc_sim.c leaves the row as it was: not translated */
  }
}

static LLVMValueRef act(hx *X, int f, LLVMValueRef x) {
  LLVMBuilderRef B = X->B;
#define FM(a, b) LLVMBuildFMul(B, a, b, "")
#define FA(a, b) LLVMBuildFAdd(B, a, b, "")
#define FD(a, b) LLVMBuildFDiv(B, a, b, "")
  switch (f) {
    case TRNC_NC_ACT_IDENTITY: return x;
    case TRNC_NC_ACT_EXP: return call1(X, EXT_EXPF, x);
    case TRNC_NC_ACT_LOG: return call1(X, EXT_LOGF, x);
    case TRNC_NC_ACT_TANH: return call1(X, EXT_TANHF, x);
    case TRNC_NC_ACT_SIGMOID: return FD(cf(X, 1.0f), FA(cf(X, 1.0f), call1(X, EXT_EXPF, LLVMBuildFNeg(B, x, ""))));
    case TRNC_NC_ACT_RELU: return nanmax(X, x, cf(X, 0.0f), true);
    case TRNC_NC_ACT_GELU:
      return FM(FM(cf(X, 0.5f), x), FA(cf(X, 1.0f), call1(X, EXT_ERFF, FM(x, cf(X, 0.70710678118654752f)))));
    case TRNC_NC_ACT_GELU_TANH: {
      LLVMValueRef cube = FM(FM(FM(cf(X, 0.044715f), x), x), x);
      LLVMValueRef in = FM(cf(X, 0.79788456080286536f), FA(x, cube));
      return FM(FM(cf(X, 0.5f), x), FA(cf(X, 1.0f), call1(X, EXT_TANHF, in)));
    }
    case TRNC_NC_ACT_SILU: return FD(x, FA(cf(X, 1.0f), call1(X, EXT_EXPF, LLVMBuildFNeg(B, x, ""))));
    case TRNC_NC_ACT_RSQRT: return FD(cf(X, 1.0f), intrinsic1(X, "llvm.sqrt", x));
    case TRNC_NC_ACT_SQRT: return intrinsic1(X, "llvm.sqrt", x);
    case TRNC_NC_ACT_SQUARE: return FM(x, x);
    case TRNC_NC_ACT_SIN: return call1(X, EXT_SINF, x);
    case TRNC_NC_ACT_COS: return call1(X, EXT_COSF, x);
    case TRNC_NC_ACT_ERF: return call1(X, EXT_ERFF, x);
    case TRNC_NC_ACT_RECIPROCAL: return FD(cf(X, 1.0f), x);
    case TRNC_NC_ACT_ABS: return fabs_(X, x);
    case TRNC_NC_ACT_SIGN: {
      LLVMValueRef neg = LLVMBuildSelect(B, fcmp(X, LLVMRealOLT, x, cf(X, 0.0f)), cf(X, -1.0f), x, "");
      return LLVMBuildSelect(B, fcmp(X, LLVMRealOGT, x, cf(X, 0.0f)), cf(X, 1.0f), neg, "");
    }
    case TRNC_NC_ACT_SOFTPLUS:
      return LLVMBuildSelect(B, fcmp(X, LLVMRealOGT, x, cf(X, 20.0f)), x,
                             call1(X, EXT_LOG1PF, call1(X, EXT_EXPF, x)), "");
    default: return x;
  }
#undef FM
#undef FA
#undef FD
}

/* ---- rows through the workspace --------------------------------------------------------- */

/** Moves row p of ap to (load) or from the workspace: element k of the row
 *  is tmp[base + k*kscale] (floats), or, raw, the es bytes at byte
 *  4*base + k*es (base, p: i64 values). */
static void row_xfer(hx *X, const trnc_nc_ap *ap, LLVMValueRef p, LLVMValueRef base, int64_t kscale,
                     bool to_tmp, bool raw) {
  dims d;
  dims_of(&ap, 1, &d);
  int64_t es = esize(ap);
  LLVMValueRef row = row_ptr(X, ap, p);
  nest N;
  nest_open(X, &N, &d);
  LLVMValueRef e = gep8(X, row, nest_off(X, &N, &d, 0, es));
  if (raw) {
    LLVMValueRef t = gep8(X, X->tmp, add(X, mul(X, base, 4), mul(X, N.k, es)));
    LLVMTypeRef ty = raw_type(X, es);
    if (to_tmp) store(X, load(X, ty, e, (unsigned)es), t, (unsigned)es);
    else store(X, load(X, ty, t, (unsigned)es), e, (unsigned)es);
  } else {
    LLVMValueRef t = gepf(X, add(X, base, mul(X, N.k, kscale)));
    if (to_tmp) store(X, load_elem(X, e, ap->dtype), t, 4);
    else store_elem(X, e, ap->dtype, load(X, X->f32, t, 4));
  }
  nest_close(X, &N);
}

static void need_tmp(hx *X, int64_t floats) {
  if (floats > X->tmp_floats) X->tmp_floats = floats;
}

/** Element 0 of row p of ap (load_scalar). */
static LLVMValueRef scalar(hx *X, const trnc_nc_ap *ap, LLVMValueRef p) {
  return load_elem(X, row_ptr(X, ap, p), ap->dtype);
}

/* ---- overlap ---------------------------------------------------------------------------- */

/** True if the elements of one row of ap are pairwise distinct bytes. */
static bool injective(const trnc_nc_ap *ap) {
  dims d;
  dims_of(&ap, 1, &d);
  int64_t span = 0; /* elements covered by the smaller dims so far */
  bool used[TRNC_NC_MAX_FREE] = {false};
  for (int r = 0; r < d.n; r++) { /* smallest |stride| first */
    int best = -1;
    for (int j = 0; j < d.n; j++)
      if (!used[j] && (best < 0 || llabs(d.stride[0][j]) < llabs(d.stride[0][best]))) best = j;
    used[best] = true;
    int64_t s = llabs(d.stride[0][best]);
    if (s <= span) return false;
    span += s * (d.count[best] - 1);
  }
  return true;
}

static bool same_place(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  if (a->mem != b->mem || a->offset != b->offset || esize(a) != esize(b) || a->start_partition != b->start_partition ||
      a->buffer != b->buffer || a->partition_stride != b->partition_stride)
    return false;
  const trnc_nc_ap *ab[2] = {a, b};
  dims d;
  if (!dims_of(ab, 2, &d)) return false;
  for (int j = 0; j < d.n; j++)
    if (d.stride[0][j] != d.stride[1][j]) return false;
  return true;
}

/** True if a and b never touch one byte at the same partition step. */
static bool disjoint(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  int64_t al, ah, bl, bh;
  if (a->mem != b->mem) return true;
  if (a->mem == TRNC_NC_MEM_HBM) return false;
  if (a->start_partition != b->start_partition) return true;
  return nc_ap_extent(a, &al, &ah) && nc_ap_extent(b, &bl, &bh) && (ah <= bl || bh <= al);
}

/** True if writing dst element by element while reading src element by
 *  element (same order, same partition step) gives what nc_sim.c's "read
 *  the row, then write it" gives. */
static bool no_conflict(const trnc_nc_ap *dst, const trnc_nc_ap *src) {
  /* HBM: caller buffers may alias, so never fused; SBUF/PSUM: another
   * partition at every step, disjoint bytes, or element k in place */
  return !src->mem || disjoint(dst, src) || (dst->mem != TRNC_NC_MEM_HBM && same_place(dst, src) && injective(dst));
}

/* ---- instructions ------------------------------------------------------------------------- */

static int64_t affine_coeff(const trnc_nc_instr *in, int j) { return in->aff[2 + j]; }

/** affine() of nc_sim.c: aff0 + aff1*p + sum aff[2+d]*i_d with the i_d of
 *  free index k decomposed by ap's dims (i64; affine(): as fp32). */
static LLVMValueRef affine_int(hx *X, const trnc_nc_instr *in, const trnc_nc_ap *ap, LLVMValueRef p, LLVMValueRef k) {
  LLVMBuilderRef B = X->B;
  LLVMValueRef v = add(X, ci64(X, in->aff[0]), mul(X, p, in->aff[1]));
  for (int j = ap->nfree - 1; j >= 0; j--) {
    int64_t c = ap->free[j].count;
    if (affine_coeff(in, j)) v = add(X, v, mul(X, LLVMBuildURem(B, k, ci64(X, c), ""), affine_coeff(in, j)));
    k = LLVMBuildUDiv(B, k, ci64(X, c), "");
  }
  return v;
}

static LLVMValueRef affine(hx *X, const trnc_nc_instr *in, const trnc_nc_ap *ap, LLVMValueRef p, LLVMValueRef k) {
  return LLVMBuildSIToFP(X->B, affine_int(X, in, ap, p, k), X->f32, "");
}

/** Per-partition scalars of an elementwise instruction. */
typedef struct scalars {
  LLVMValueRef s0, s1;
} scalars;

/** The fp32 result of elementwise instruction in at free index k of
 *  partition p from its row operands' values v[]; NULL if not translated. */
static LLVMValueRef ew_value(hx *X, const trnc_nc_instr *in, LLVMValueRef *v, LLVMValueRef p, LLVMValueRef k,
                             const scalars *s) {
  switch (in->op) {
    case TRNC_NC_OP_ACTIVATION:
      return act(X, in->act, LLVMBuildFAdd(X->B, LLVMBuildFMul(X->B, v[0], s->s0, ""), s->s1, ""));
    case TRNC_NC_OP_TENSOR_TENSOR: return alu(X, in->alu0, v[0], v[1]);
    case TRNC_NC_OP_TENSOR_SCALAR: {
      LLVMValueRef o = alu(X, in->alu0, v[0], s->s0);
      return o && in->alu1 != TRNC_NC_ALU_BYPASS ? alu(X, in->alu1, o, s->s1) : o;
    }
    case TRNC_NC_OP_TENSOR_COPY:
    case TRNC_NC_OP_DMA_COPY: return v[0];
    case TRNC_NC_OP_MEMSET: return X->imm[0];
    case TRNC_NC_OP_IOTA: return affine(X, in, &in->dst, p, k);
    case TRNC_NC_OP_SELECT: return LLVMBuildSelect(X->B, nonzero(X, v[0]), v[1], v[2], "");
    case TRNC_NC_OP_AFFINE_SELECT: {
      LLVMValueRef c = alu(X, in->alu0, affine(X, in, &in->src[0], p, k), cf(X, 0.0f));
      return c ? LLVMBuildSelect(X->B, nonzero(X, c), v[0], X->imm[0], "") : NULL;
    }
    default: return NULL;
  }
}

/** Row operands (read element by element) of an elementwise instruction. */
static int ew_rows(const trnc_nc_instr *in, const trnc_nc_ap **rows) {
  switch (in->op) {
    case TRNC_NC_OP_TENSOR_TENSOR: rows[0] = &in->src[0]; rows[1] = &in->src[1]; return 2;
    case TRNC_NC_OP_SELECT: rows[0] = &in->src[0]; rows[1] = &in->src[1]; rows[2] = &in->src[2]; return 3;
    case TRNC_NC_OP_MEMSET:
    case TRNC_NC_OP_IOTA: return 0;
    default: rows[0] = &in->src[0]; return 1;
  }
}

/** True if ew_partition may run `in` fused (no workspace): its row operands
 *  walk dst's dims and none overlaps dst in a way the element order could
 *  show. Decided on the instruction as the program has it (offsets and
 *  partitions matter). */
static bool ew_fusable(const trnc_nc_instr *in) {
  const trnc_nc_ap *rows[3] = {NULL, NULL, NULL};
  int nr = ew_rows(in, rows);
  const trnc_nc_ap *all[4] = {&in->dst, rows[0], rows[1], rows[2]};
  dims d;
  bool fused = dims_of(all, nr + 1, &d);
  for (int r = 0; r < nr && fused; r++) fused = no_conflict(&in->dst, rows[r]);
  if (in->op == TRNC_NC_OP_ACTIVATION && in->dst2.mem) fused = fused && disjoint(&in->dst2, &in->dst);
  return fused;
}

/** One partition of an elementwise instruction, dst row dp from source rows
 *  sp (for DMA copies and gathers they differ). raw: a same-dtype copy
 *  (bits moved, not values). Fused (no workspace) when no operand overlaps
 *  dst in a way that the element order could show. */
static bool ew_partition(hx *X, const trnc_nc_instr *in, const trnc_nc_ap *dst, LLVMValueRef dp,
                         LLVMValueRef sp, bool raw) {
  const trnc_nc_ap *rows[3] = {NULL, NULL, NULL};
  int nr = ew_rows(in, rows);
  scalars s = {NULL, NULL};
  if (in->op == TRNC_NC_OP_ACTIVATION) {
    s.s0 = X->imm[0];
    s.s1 = in->src[1].mem ? scalar(X, &in->src[1], sp) : X->imm[1];
  } else if (in->op == TRNC_NC_OP_TENSOR_SCALAR) {
    s.s0 = in->src[1].mem ? scalar(X, &in->src[1], sp) : X->imm[0];
    s.s1 = in->src[2].mem ? scalar(X, &in->src[2], sp) : X->imm[1];
  }
  const trnc_nc_ap *all[4] = {dst, rows[0], rows[1], rows[2]};
  dims d;
  bool fused = dims_of(all, nr + 1, &d) && X->fused;
  bool sum = in->op == TRNC_NC_OP_ACTIVATION && in->dst2.mem;
  int64_t n = trnc_nc_ap_free_elems(dst);
  LLVMValueRef acc = NULL;
  if (sum) {
    acc = slot(X, X->f32);
    store(X, cf(X, 0.0f), acc, 4);
  }
  LLVMValueRef v[3], val;
  if (fused) {
    LLVMValueRef base[4];
    base[0] = row_ptr(X, dst, dp);
    for (int r = 0; r < nr; r++) base[r + 1] = row_ptr(X, rows[r], sp);
    nest N;
    nest_open(X, &N, &d);
    if (raw) {
      int64_t es = esize(dst);
      LLVMValueRef e = load(X, raw_type(X, es), gep8(X, base[1], nest_off(X, &N, &d, 1, es)), (unsigned)es);
      store(X, e, gep8(X, base[0], nest_off(X, &N, &d, 0, es)), (unsigned)es);
      nest_close(X, &N);
      return true;
    }
    for (int r = 0; r < nr; r++)
      v[r] = load_elem(X, gep8(X, base[r + 1], nest_off(X, &N, &d, r + 1, esize(rows[r]))), rows[r]->dtype);
    if (!(val = ew_value(X, in, v, dp, N.k, &s))) return false;
    if (sum) store(X, LLVMBuildFAdd(X->B, load(X, X->f32, acc, 4), val, ""), acc, 4);
    store_elem(X, gep8(X, base[0], nest_off(X, &N, &d, 0, esize(dst))), dst->dtype, val);
    nest_close(X, &N);
  } else {
    need_tmp(X, (nr + 1) * n);
    if (raw) {
      row_xfer(X, rows[0], sp, ci64(X, 0), 1, true, true);
      row_xfer(X, dst, dp, ci64(X, 0), 1, false, true);
      return true;
    }
    for (int r = 0; r < nr; r++) row_xfer(X, rows[r], sp, ci64(X, (r + 1) * n), 1, true, false);
    loop L;
    LLVMValueRef k = loop_open(X, &L, n);
    for (int r = 0; r < nr; r++) v[r] = load(X, X->f32, gepf(X, add(X, k, ci64(X, (r + 1) * n))), 4);
    if (!(val = ew_value(X, in, v, dp, k, &s))) return false;
    if (sum) store(X, LLVMBuildFAdd(X->B, load(X, X->f32, acc, 4), val, ""), acc, 4);
    store(X, val, gepf(X, k), 4);
    loop_close(X, &L);
    if (sum) store_elem(X, row_ptr(X, &in->dst2, dp), in->dst2.dtype, load(X, X->f32, acc, 4));
    row_xfer(X, dst, dp, ci64(X, 0), 1, false, false);
    return true;
  }
  if (sum) store_elem(X, row_ptr(X, &in->dst2, dp), in->dst2.dtype, load(X, X->f32, acc, 4));
  return true;
}

static bool emit_elementwise(hx *X, const trnc_nc_instr *in) {
  bool raw = in->op == TRNC_NC_OP_TENSOR_COPY && in->dst.dtype == in->src[0].dtype;
  loop L;
  LLVMValueRef p = loop_open(X, &L, in->dst.partitions);
  bool ok = ew_partition(X, in, &in->dst, p, p, raw);
  loop_close(X, &L);
  return ok;
}

static bool emit_reduce(hx *X, const trnc_nc_instr *in) {
  LLVMBuilderRef B = X->B;
  const trnc_nc_ap *s = &in->src[0];
  int64_t n = trnc_nc_ap_free_elems(&in->dst), nsrc = trnc_nc_ap_free_elems(s), inner = nsrc / (n ? n : 1);
  int op = in->alu0;
  need_tmp(X, nsrc + n);
  LLVMValueRef r = slot(X, X->f32), nan = slot(X, X->i1);
  loop Lp;
  LLVMValueRef p = loop_open(X, &Lp, in->dst.partitions);
  row_xfer(X, s, p, ci64(X, n), 1, true, false);
  loop Lj;
  LLVMValueRef j = loop_open(X, &Lj, n);
  LLVMValueRef xb = add(X, ci64(X, n), mul(X, j, inner));
  LLVMValueRef x0 = load(X, X->f32, gepf(X, xb), 4);
  store(X, op == TRNC_NC_ALU_ABSMAX ? fabs_(X, x0) : x0, r, 4);
  store(X, fcmp(X, LLVMRealUNO, x0, x0), nan, 1);
  if (inner > 1) {
    loop Li;
    LLVMValueRef i = loop_open(X, &Li, inner - 1);
    LLVMValueRef x = load(X, X->f32, gepf(X, add(X, xb, add(X, i, ci64(X, 1)))), 4);
    LLVMValueRef rv = load(X, X->f32, r, 4), nv;
    if (op == TRNC_NC_ALU_MAX || op == TRNC_NC_ALU_MIN) {
      nv = LLVMBuildSelect(B, fcmp(X, op == TRNC_NC_ALU_MAX ? LLVMRealOGT : LLVMRealOLT, x, rv), x, rv, "");
      store(X, LLVMBuildOr(B, load(X, X->i1, nan, 1), fcmp(X, LLVMRealUNO, x, x), ""), nan, 1);
    } else if (!(nv = alu(X, op, rv, x))) {
      return false;
    }
    store(X, nv, r, 4);
    loop_close(X, &Li);
  }
  LLVMValueRef res = load(X, X->f32, r, 4);
  if (op == TRNC_NC_ALU_MAX || op == TRNC_NC_ALU_MIN)
    res = LLVMBuildSelect(B, load(X, X->i1, nan, 1), LLVMBuildBitCast(B, ci32(X, 0x7fc00000), X->f32, ""), res, "");
  store(X, res, gepf(X, j), 4);
  loop_close(X, &Lj);
  row_xfer(X, &in->dst, p, ci64(X, 0), 1, false, false);
  loop_close(X, &Lp);
  return true;
}

/** All rows of ap into the workspace at row*rowlen + k (floats). */
static void load_all(hx *X, const trnc_nc_ap *ap, int64_t base, int64_t rowlen) {
  loop L;
  LLVMValueRef p = loop_open(X, &L, ap->partitions);
  row_xfer(X, ap, p, add(X, ci64(X, base), mul(X, p, rowlen)), 1, true, false);
  loop_close(X, &L);
}

/** dst[f][p] = src[p][f] through the workspace (TensorE and DMA transposes). */
static void emit_transpose(hx *X, const trnc_nc_ap *d, const trnc_nc_ap *s) {
  int64_t F = trnc_nc_ap_free_elems(s);
  need_tmp(X, s->partitions * F);
  load_all(X, s, 0, F);
  loop L;
  LLVMValueRef f = loop_open(X, &L, d->partitions);
  row_xfer(X, d, f, f, F, false, false);
  loop_close(X, &L);
}

static void emit_gather(hx *X, const trnc_nc_instr *in) {
  LLVMBuilderRef B = X->B;
  bool gather = in->mode == TRNC_NC_DMA_GATHER;
  const trnc_nc_ap *table = gather ? &in->src[0] : &in->dst, *tile = gather ? &in->dst : &in->src[0];
  bool raw = in->dst.dtype == in->src[0].dtype;
  loop L;
  LLVMValueRef p = loop_open(X, &L, tile->partitions);
  LLVMValueRef idx = load(X, X->i32, row_ptr(X, &in->src[1], p), 4);
  LLVMValueRef bad = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntSLT, idx, ci32(X, 0), ""),
                                 LLVMBuildICmp(B, LLVMIntSGE, idx, ci32(X, table->partitions), ""), "");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(X->C, X->fn, "oob");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(X->C, X->fn, "ok");
  LLVMBuildCondBr(B, bad, fail, ok);
  LLVMPositionBuilderAtEnd(B, fail);
  LLVMValueRef vals[4] = {X->instr_arg, LLVMBuildSExt(B, idx, X->i64, ""), p,
                          ci64(X, table->partitions)};
  for (int f = 0; f < 4; f++) {
    LLVMValueRef at = ci64(X, f);
    store(X, vals[f], LLVMBuildInBoundsGEP2(B, X->i64, X->err, &at, 1, ""), 8);
  }
  LLVMBuildRet(B, ci32(X, 1));
  LLVMPositionBuilderAtEnd(B, ok);
  LLVMValueRef i64idx = LLVMBuildSExt(B, idx, X->i64, "");
  ew_partition(X, in, &in->dst, gather ? p : i64idx, gather ? i64idx : p, raw);
  loop_close(X, &L);
}

static bool emit_dma(hx *X, const trnc_nc_instr *in) {
  const trnc_nc_ap *d = &in->dst, *s = &in->src[0];
  int64_t sf = trnc_nc_ap_free_elems(s), df = trnc_nc_ap_free_elems(d);
  if (in->mode == TRNC_NC_DMA_GATHER || in->mode == TRNC_NC_DMA_SCATTER) {
    emit_gather(X, in);
  } else if (in->mode == TRNC_NC_DMA_TRANSPOSE) {
    emit_transpose(X, d, s);
  } else if (s->partitions == d->partitions && sf == df) {
    loop L;
    LLVMValueRef p = loop_open(X, &L, s->partitions);
    ew_partition(X, in, d, p, p, d->dtype == s->dtype);
    loop_close(X, &L);
  } else { /* different shapes: flattened through the workspace, as values */
    need_tmp(X, nc_ap_elems(s));
    load_all(X, s, 0, sf);
    loop L;
    LLVMValueRef p = loop_open(X, &L, d->partitions);
    row_xfer(X, d, p, mul(X, p, df), 1, false, false);
    loop_close(X, &L);
  }
  return true;
}

/* ---- matmul -------------------------------------------------------------------------------- */

/*
 * dst[M,N] (+)= src0[K,M]^T src1[K,N] in the interpreter's order: every
 * output element is an fp32 accumulator (0, or dst's value with acc=1) to
 * which a[k]*b[k] is added for k = 0, 1, ..., K-1. The operands are decoded
 * into the workspace as fp32 rows (padded so that one block's rows fall
 * into different L1 sets); trnc_host_gemm (runtime/host_gemm.c, also the
 * interpreter's) keeps 8 rows x 48 columns of accumulators in registers
 * while k runs, one column chunk of B (K x 48 floats, at most 24 KiB)
 * staying in L1 across all row blocks.
 *
 * Fused multiply-add where it is exact: fma(a, b, c) rounds a*b + c once,
 * the interpreter's c + a*b rounds the product first; the two agree
 * whenever a*b is exact in fp32. It is when the operands' significands
 * together have at most 24 bits (bf16 x bf16: 16, fp16 x fp16: 22, fp8: at
 * most 8; not fp32 x fp32) and every product is a normal number: each
 * nonzero operand normal and finite, and the biased exponents bound the
 * products within [2^-126, 2^127 * (2 - 2^-23)] (max_a + max_b <= 380,
 * min_a + min_b >= 128). The decoding loops collect those exponent bounds;
 * any operand outside (a NaN, an infinity, a subnormal, a product that could
 * overflow or underflow) makes that instruction run separate multiplies and
 * adds, which are the interpreter's operations exactly.
 */

/** Exponent bounds of packed operand values (for the fma test). */
typedef struct ebounds {
  LLVMValueRef max, min; /* i32 slots: largest biased exponent; smallest of the nonzero values (255 if none) */
} ebounds;

static void ebounds_update(hx *X, const ebounds *e, LLVMValueRef f) {
  LLVMBuilderRef B = X->B;
  LLVMValueRef bits = LLVMBuildBitCast(B, f, X->i32, "");
  LLVMValueRef ex = LLVMBuildAnd(B, LLVMBuildLShr(B, bits, ci32(X, 23), ""), ci32(X, 0xff), "");
  LLVMValueRef nz = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, bits, ci32(X, 0x7fffffff), ""), ci32(X, 0), "");
  LLVMValueRef mx = load(X, X->i32, e->max, 4), mn = load(X, X->i32, e->min, 4);
  store(X, LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, ex, mx, ""), ex, mx, ""), e->max, 4);
  LLVMValueRef exn = LLVMBuildSelect(B, nz, ex, ci32(X, 255), "");
  store(X, LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, exn, mn, ""), exn, mn, ""), e->min, 4);
}

/** Decodes operand ap (rows k < K of F elements) into the workspace at
 *  float offset base + k * ld + f, zeros at f = F .. Fp-1; e (or NULL)
 *  collects the values' exponent bounds. */
static void pack_rows(hx *X, const trnc_nc_ap *ap, int64_t K, int64_t F, int64_t Fp, int64_t ld, int64_t base,
                      const ebounds *e) {
  dims d;
  dims_of(&ap, 1, &d);
  int64_t es = esize(ap);
  loop Lk;
  LLVMValueRef k = loop_open(X, &Lk, K);
  LLVMValueRef row = row_ptr(X, ap, k), kb = add(X, ci64(X, base), mul(X, k, ld));
  nest N;
  nest_open(X, &N, &d);
  LLVMValueRef v = load_elem(X, gep8(X, row, nest_off(X, &N, &d, 0, es)), ap->dtype);
  if (e) ebounds_update(X, e, v);
  store(X, v, gepf(X, add(X, kb, N.k)), 4);
  nest_close(X, &N);
  if (Fp > F) {
    loop Lz;
    LLVMValueRef z = loop_open(X, &Lz, Fp - F);
    store(X, cf(X, 0.0f), gepf(X, add(X, add(X, kb, ci64(X, F)), z)), 4);
    loop_close(X, &Lz);
  }
  loop_close(X, &Lk);
}

static void emit_matmul(hx *X, const trnc_nc_instr *in) {
  LLVMBuilderRef B = X->B;
  const trnc_nc_ap *st = &in->src[0], *mv = &in->src[1], *d = &in->dst;
  int64_t K = st->partitions, M = trnc_nc_ap_free_elems(st), N = trnc_nc_ap_free_elems(mv);
  int64_t Mp = (M + MB - 1) / MB * MB, Np = (N + NB - 1) / NB * NB;
  /* row-major operands, each row 64 bytes longer than its blocks so that
   * the K rows one block reads fall into different L1 sets */
  int64_t lda = Mp + 16, ldb = Np + 16;
  int64_t oA = 0, oB = K * lda, oC = oB + K * ldb;
  /* dst rows straight from the micro-kernel when they are whole blocks of
   * contiguous fp32 (PSUM is never an operand's memory, so no overlap) */
  dims dd;
  dims_of(&d, 1, &dd);
  bool direct = M % MB == 0 && N % NB == 0 && d->dtype == TRNC_F32 && dd.n == 1 && dd.stride[0][0] == 1 &&
                d->mem == TRNC_NC_MEM_PSUM && X->part_stride[1] % 4 == 0;
  need_tmp(X, direct ? oC : oC + Mp * Np);
  bool exact = trnc_host_gemm_sig_bits(st->dtype) + trnc_host_gemm_sig_bits(mv->dtype) <= 24;
  ebounds ea = {NULL, NULL}, eb = {NULL, NULL};
  if (exact) {
    ebounds *e[2] = {&ea, &eb};
    for (int i = 0; i < 2; i++) {
      e[i]->max = slot(X, X->i32);
      e[i]->min = slot(X, X->i32);
      store(X, ci32(X, 0), e[i]->max, 4);
      store(X, ci32(X, 255), e[i]->min, 4);
    }
  }
  pack_rows(X, st, K, M, Mp, lda, oA, exact ? &ea : NULL);
  pack_rows(X, mv, K, N, Np, ldb, oB, exact ? &eb : NULL);
  LLVMValueRef usefma = ci32(X, 0);
  if (exact) {
    LLVMValueRef amax = load(X, X->i32, ea.max, 4), bmax = load(X, X->i32, eb.max, 4);
    LLVMValueRef amin = load(X, X->i32, ea.min, 4), bmin = load(X, X->i32, eb.min, 4);
    LLVMValueRef ok[6] = {
        LLVMBuildICmp(B, LLVMIntULE, amax, ci32(X, 254), ""),
        LLVMBuildICmp(B, LLVMIntULE, bmax, ci32(X, 254), ""),
        LLVMBuildICmp(B, LLVMIntULE, LLVMBuildAdd(B, amax, bmax, ""), ci32(X, 380), ""),
        LLVMBuildICmp(B, LLVMIntUGE, amin, ci32(X, 1), ""),
        LLVMBuildICmp(B, LLVMIntUGE, bmin, ci32(X, 1), ""),
        LLVMBuildICmp(B, LLVMIntUGE, LLVMBuildAdd(B, amin, bmin, ""), ci32(X, 128), "")};
    LLVMValueRef all = ok[0];
    for (int i = 1; i < 6; i++) all = LLVMBuildAnd(B, all, ok[i], "");
    usefma = LLVMBuildZExt(B, all, X->i32, "");
  }
  LLVMValueRef C, ldc;
  if (direct) {
    C = row_ptr(X, d, ci64(X, 0));
    ldc = ci64(X, X->part_stride[1] / 4);
  } else {
    C = gepf(X, ci64(X, oC));
    ldc = ci64(X, Np);
    if (in->mode) {
      loop Lm;
      LLVMValueRef m = loop_open(X, &Lm, M);
      row_xfer(X, d, m, add(X, ci64(X, oC), mul(X, m, Np)), 1, true, false);
      loop_close(X, &Lm);
    }
  }
  LLVMValueRef args[11] = {gepf(X, ci64(X, oA)), ci64(X, lda), gepf(X, ci64(X, oB)), ci64(X, ldb), C, ldc,
                           ci64(X, K), ci64(X, Mp / MB), ci64(X, Np / NB), ci32(X, in->mode ? 1 : 0), usefma};
  call(X, EXT_GEMM, args, 11);
  if (!direct) {
    loop Ls;
    LLVMValueRef m = loop_open(X, &Ls, M);
    row_xfer(X, d, m, add(X, ci64(X, oC), mul(X, m, Np)), 1, false, false);
    loop_close(X, &Ls);
  }
}

/* ---- exact integer instructions (nc_sim.c's run_int) ----------------------------------- */

static bool int_dtype(int dt) {
  return dt == TRNC_I32 || dt == TRNC_I16 || dt == TRNC_I8 || dt == TRNC_U8 || dt == TRNC_BOOL;
}

/** An integer element at ptr as i32: sign-extended (i32, i16, i8) or
 *  zero-extended (u8, bool), as load_irow. */
static LLVMValueRef load_int(hx *X, LLVMValueRef ptr, int dt) {
  switch (dt) {
    case TRNC_I32: return load(X, X->i32, ptr, 4);
    case TRNC_I16: return LLVMBuildSExt(X->B, load(X, X->i16, ptr, 2), X->i32, "");
    case TRNC_I8: return LLVMBuildSExt(X->B, load(X, X->i8, ptr, 1), X->i32, "");
    default: return LLVMBuildZExt(X->B, load(X, X->i8, ptr, 1), X->i32, "");
  }
}

/** Stores i32 v at ptr as dt: two's complement truncation, bool v != 0
 *  (store_irow). */
static void store_int(hx *X, LLVMValueRef ptr, int dt, LLVMValueRef v) {
  switch (dt) {
    case TRNC_I32: store(X, v, ptr, 4); return;
    case TRNC_I16: store(X, LLVMBuildTrunc(X->B, v, X->i16, ""), ptr, 2); return;
    case TRNC_BOOL:
      store(X, LLVMBuildZExt(X->B, LLVMBuildICmp(X->B, LLVMIntNE, v, ci32(X, 0), ""), X->i8, ""), ptr, 1);
      return;
    default: store(X, LLVMBuildTrunc(X->B, v, X->i8, ""), ptr, 1); return;
  }
}

/** x op y in 32-bit integers (ialu_rows): add/sub/mul wrap, shifts take
 *  their count mod 32, SHR is arithmetic, ops with no integer form pass x. */
static LLVMValueRef ialu(hx *X, int op, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef B = X->B;
#define ICMP(pr) LLVMBuildZExt(B, LLVMBuildICmp(B, pr, x, y, ""), X->i32, "")
#define NZ(v) LLVMBuildICmp(B, LLVMIntNE, v, ci32(X, 0), "")
  switch (op) {
    case TRNC_NC_ALU_ADD: return LLVMBuildAdd(B, x, y, "");
    case TRNC_NC_ALU_SUB: return LLVMBuildSub(B, x, y, "");
    case TRNC_NC_ALU_RSUB: return LLVMBuildSub(B, y, x, "");
    case TRNC_NC_ALU_MUL: return LLVMBuildMul(B, x, y, "");
    case TRNC_NC_ALU_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGE, x, y, ""), x, y, "");
    case TRNC_NC_ALU_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLE, x, y, ""), x, y, "");
    case TRNC_NC_ALU_EQ: return ICMP(LLVMIntEQ);
    case TRNC_NC_ALU_NE: return ICMP(LLVMIntNE);
    case TRNC_NC_ALU_LT: return ICMP(LLVMIntSLT);
    case TRNC_NC_ALU_LE: return ICMP(LLVMIntSLE);
    case TRNC_NC_ALU_GT: return ICMP(LLVMIntSGT);
    case TRNC_NC_ALU_GE: return ICMP(LLVMIntSGE);
    case TRNC_NC_ALU_AND: return LLVMBuildZExt(B, LLVMBuildAnd(B, NZ(x), NZ(y), ""), X->i32, "");
    case TRNC_NC_ALU_OR: return LLVMBuildZExt(B, LLVMBuildOr(B, NZ(x), NZ(y), ""), X->i32, "");
    case TRNC_NC_ALU_XOR: return LLVMBuildZExt(B, LLVMBuildXor(B, NZ(x), NZ(y), ""), X->i32, "");
    case TRNC_NC_ALU_BIT_AND: return LLVMBuildAnd(B, x, y, "");
    case TRNC_NC_ALU_BIT_OR: return LLVMBuildOr(B, x, y, "");
    case TRNC_NC_ALU_BIT_XOR: return LLVMBuildXor(B, x, y, "");
    case TRNC_NC_ALU_SHL: return LLVMBuildShl(B, x, LLVMBuildAnd(B, y, ci32(X, 31), ""), "");
    case TRNC_NC_ALU_SHR: return LLVMBuildAShr(B, x, LLVMBuildAnd(B, y, ci32(X, 31), ""), "");
    default: return x;
  }
#undef ICMP
#undef NZ
}

/** The integer scalar of an exact tensor_scalar: element 0 of row p of ap,
 *  or the immediate truncated to int32 (int_operand). */
static LLVMValueRef int_scalar(hx *X, const trnc_nc_ap *ap, LLVMValueRef imm, LLVMValueRef p) {
  return ap->mem ? load_int(X, row_ptr(X, ap, p), ap->dtype) : LLVMBuildFPToSI(X->B, imm, X->i32, "");
}

/** An exact integer tensor_tensor or tensor_scalar: partition by partition,
 *  the source rows copied into the workspace (raw), the results computed
 *  in i32 into it, then the row stored (the interpreter's order). */
static bool emit_int(hx *X, const trnc_nc_instr *in) {
  const trnc_nc_ap *d = &in->dst;
  int64_t n = trnc_nc_ap_free_elems(d), nsrc = in->op == TRNC_NC_OP_TENSOR_TENSOR ? 2 : 1;
  if (in->op == TRNC_NC_OP_IOTA) { /* into an integer dst: wraps to int32, no fp32 round trip */
    loop Lp, Lk;
    LLVMValueRef p = loop_open(X, &Lp, d->partitions);
    LLVMValueRef k = loop_open(X, &Lk, n);
    LLVMValueRef v = LLVMBuildTrunc(X->B, affine_int(X, in, d, p, k), X->i32, "");
    store_int(X, gep8(X, X->tmp, mul(X, k, esize(d))), d->dtype, v);
    loop_close(X, &Lk);
    need_tmp(X, n);
    row_xfer(X, d, p, ci64(X, 0), 1, false, true);
    loop_close(X, &Lp);
    return true;
  }
  if (in->op != TRNC_NC_OP_TENSOR_TENSOR && in->op != TRNC_NC_OP_TENSOR_SCALAR) return false;
  need_tmp(X, (nsrc + 1) * n);
  loop Lp;
  LLVMValueRef p = loop_open(X, &Lp, d->partitions);
  for (int r = 0; r < nsrc; r++) row_xfer(X, &in->src[r], p, ci64(X, (r + 1) * n), 1, true, true);
  LLVMValueRef s0 = NULL, s1 = NULL;
  if (in->op == TRNC_NC_OP_TENSOR_SCALAR) {
    s0 = int_scalar(X, &in->src[1], X->imm[0], p);
    if (in->alu1 != TRNC_NC_ALU_BYPASS) s1 = int_scalar(X, &in->src[2], X->imm[1], p);
  }
  loop Lk;
  LLVMValueRef k = loop_open(X, &Lk, n);
  LLVMValueRef v[2];
  for (int r = 0; r < nsrc; r++) {
    int64_t es = esize(&in->src[r]);
    v[r] = load_int(X, gep8(X, X->tmp, add(X, ci64(X, 4 * (r + 1) * n), mul(X, k, es))), in->src[r].dtype);
  }
  LLVMValueRef o = ialu(X, in->alu0, v[0], nsrc == 2 ? v[1] : s0);
  if (s1) o = ialu(X, in->alu1, o, s1);
  store_int(X, gep8(X, X->tmp, mul(X, k, esize(d))), d->dtype, o);
  loop_close(X, &Lk);
  row_xfer(X, d, p, ci64(X, 0), 1, false, true);
  loop_close(X, &Lp);
  return true;
}

static bool emit_instr(hx *X, const trnc_nc_instr *in) {
  switch (in->op) {
    case TRNC_NC_OP_NOP: return true;
    case TRNC_NC_OP_DMA_COPY: return emit_dma(X, in);
    case TRNC_NC_OP_MATMUL: emit_matmul(X, in); return true;
    case TRNC_NC_OP_TRANSPOSE: emit_transpose(X, &in->dst, &in->src[0]); return true;
    case TRNC_NC_OP_TENSOR_REDUCE: return emit_reduce(X, in);
    case TRNC_NC_OP_ACTIVATION:
    case TRNC_NC_OP_TENSOR_TENSOR:
    case TRNC_NC_OP_TENSOR_SCALAR:
    case TRNC_NC_OP_TENSOR_COPY:
    case TRNC_NC_OP_MEMSET:
    case TRNC_NC_OP_IOTA:
    case TRNC_NC_OP_SELECT:
    case TRNC_NC_OP_AFFINE_SELECT: return emit_elementwise(X, in);
    default: return false;
  }
}

/* ---- module ---------------------------------------------------------------------------------- */

static void declare_externs(hx *X) {
  LLVMTypeRef f1 = LLVMFunctionType(X->f32, &X->f32, 1, 0);
  LLVMTypeRef ff[2] = {X->f32, X->f32}, enc[2] = {X->i32, X->f32}, dec[2] = {X->i32, X->i32};
  LLVMTypeRef f2 = LLVMFunctionType(X->f32, ff, 2, 0);
  LLVMTypeRef gemm[11] = {X->ptr, X->i64, X->ptr, X->i64, X->ptr, X->i64, X->i64, X->i64, X->i64, X->i32, X->i32};
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  for (int e = 0; e < EXT_COUNT; e++) {
    LLVMTypeRef ty = e == EXT_POWF     ? f2
                     : e == EXT_ENCODE ? LLVMFunctionType(X->i32, enc, 2, 0)
                     : e == EXT_DECODE ? LLVMFunctionType(X->f32, dec, 2, 0)
                     : e == EXT_GEMM   ? LLVMFunctionType(LLVMVoidTypeInContext(X->C), gemm, 11, 0)
                                       : f1;
    X->extty[e] = ty;
    X->ext[e] = LLVMAddFunction(X->M, trnc_host_externs[e].name, ty);
    LLVMAddAttributeAtIndex(X->ext[e], LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(X->C, nounwind, 0));
  }
}

/** Common start of a function: attributes, entry block current. */
static void begin_function(hx *X, LLVMValueRef fn, unsigned first_noalias, unsigned last_noalias, bool noinline) {
  X->fn = fn;
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  for (unsigned a = first_noalias; a <= last_noalias; a++) /* separate allocations */
    LLVMAddAttributeAtIndex(fn, a, LLVMCreateEnumAttribute(X->C, noalias, 0));
  const char *fattr[2] = {"nounwind", "noinline"};
  for (int f = 0; f < (noinline ? 2 : 1); f++)
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(X->C, LLVMGetEnumAttributeKindForName(fattr[f], strlen(fattr[f])), 0));
  X->entry = LLVMAppendBasicBlockInContext(X->C, fn, "entry");
  LLVMPositionBuilderAtEnd(X->B, X->entry);
}

/* ---- instruction functions, shared by instructions that differ only in where
 * their operands are ------------------------------------------------------------- */

/** An instruction as its function sees it: operands relative to their
 *  slot base (offset, start partition and buffer zeroed), immediates as
 *  arguments, no queue or semaphores. */
static trnc_nc_instr normalized(const trnc_nc_instr *in) {
  trnc_nc_instr n;
  memset(&n, 0, sizeof n);
  n.op = in->op;
  n.alu0 = in->alu0;
  n.alu1 = in->alu1;
  n.act = in->act;
  n.mode = in->mode;
  memcpy(n.aff, in->aff, sizeof n.aff);
  for (int sl = 0; sl < 5; sl++) {
    const trnc_nc_ap *a = nc_slot(in, sl);
    trnc_nc_ap *b = nc_slot_mut(&n, sl);
    b->mem = a->mem;
    b->dtype = a->dtype;
    b->nfree = a->nfree;
    b->partitions = a->partitions;
    b->partition_stride = a->partition_stride;
    for (int d = 0; d < a->nfree && d < TRNC_NC_MAX_FREE; d++) b->free[d] = a->free[d];
  }
  return n;
}

/** Field-by-field equality of two normalized instructions (no padding read). */
static bool same_normalized(const trnc_nc_instr *a, const trnc_nc_instr *b) {
  if (a->op != b->op || a->alu0 != b->alu0 || a->alu1 != b->alu1 || a->act != b->act || a->mode != b->mode ||
      memcmp(a->aff, b->aff, sizeof a->aff))
    return false;
  for (int sl = 0; sl < 5; sl++) {
    const trnc_nc_ap *x = nc_slot(a, sl), *y = nc_slot(b, sl);
    if (x->mem != y->mem || x->dtype != y->dtype || x->nfree != y->nfree || x->partitions != y->partitions ||
        x->partition_stride != y->partition_stride)
      return false;
    for (int d = 0; d < x->nfree; d++)
      if (x->free[d].stride != y->free[d].stride || x->free[d].count != y->free[d].count) return false;
  }
  return true;
}

/** The instruction function of fns[0..*nfns) that in normalizes to,
 *  appending a new one if none does. */
static uint32_t function_of(const trnc_nc_instr *in, trnc_nc_instr *fns, int *fused, size_t *nfns) {
  trnc_nc_instr norm = normalized(in);
  int f = (ew_fusable(in) ? 1 : 0) | (trnc_nc_instr_int_exact(in) ? 2 : 0); /* engine is not in norm */
  for (size_t i = 0; i < *nfns; i++)
    if (fused[i] == f && same_normalized(&fns[i], &norm)) return (uint32_t)i;
  fns[*nfns] = norm;
  fused[*nfns] = f;
  return (uint32_t)(*nfns)++;
}

trnc_status trnc_host_plan_build(const trnc_nc_program *p, trnc_host_plan *out, trnc_diags *diags) {
  memset(out, 0, sizeof *out);
  size_t n = trnc_nc_program_instr_count(p);
  out->nkernels = p->nkernels;
  out->start = calloc(p->nkernels + 1, sizeof *out->start);
  out->step = malloc((n ? n : 1) * sizeof *out->step);
  out->rep = malloc((n ? n : 1) * sizeof *out->rep);
  trnc_nc_instr *fns = malloc((n ? n : 1) * sizeof *fns);
  int *fused = malloc((n ? n : 1) * sizeof *fused);
  trnc_status st = out->start && out->step && out->rep && fns && fused
                       ? TRNC_OK
                       : trnc_diag_error(diags, TRNC_ERR_NOMEM, "host backend: out of memory");
  size_t ns = 0;
  for (size_t k = 0; k < p->nkernels && !st; k++) {
    out->start[k] = ns;
    nc_schedule sc;
    if ((st = nc_schedule_build(p, k, &sc, diags))) break;
    for (size_t oi = 0; oi < sc.n; oi++) {
      const trnc_nc_instr *in = &p->kernels[k].instrs[sc.order[oi]];
      if (in->op == TRNC_NC_OP_NOP) continue;
      size_t before = out->nfns;
      uint32_t f = function_of(in, fns, fused, &out->nfns);
      if (out->nfns > before) out->rep[f] = (trnc_host_where){(uint32_t)k, (uint32_t)sc.order[oi]};
      out->step[ns++] = (trnc_host_step){(uint32_t)sc.order[oi], f};
    }
    nc_schedule_free(&sc);
  }
  out->start[p->nkernels] = ns;
  free(fns);
  free(fused);
  if (st) trnc_host_plan_free(out);
  return st;
}

void trnc_host_plan_free(trnc_host_plan *pl) {
  free(pl->start);
  free(pl->step);
  free(pl->rep);
  memset(pl, 0, sizeof *pl);
}

/** Function "<prefix>_f<f>" for instruction in (kernel k's instruction i,
 *  the first one of the plan that runs it); TRNC_ERR_UNSUPPORTED naming
 *  the instruction if it is not translated. */
static trnc_status instr_function(hx *X, size_t f, size_t k, size_t i, const char *prefix, trnc_diags *diags) {
  const trnc_nc_instr *in = &X->p->kernels[k].instrs[i];
  trnc_nc_instr norm = normalized(in);
  char name[96];
  snprintf(name, sizeof name, "%s_f%zu", prefix, f);
  /* external linkage and no callers in the module: no interprocedural
   * constant propagation of the immediates (see hx.imm) */
  LLVMValueRef fn = LLVMAddFunction(X->M, name, X->ifn);
  begin_function(X, fn, 6, 7, false); /* tmp, err */
  for (int sl = 0; sl < 5; sl++) X->slotb[sl] = LLVMGetParam(fn, (unsigned)sl);
  X->tmp = LLVMGetParam(fn, 5);
  X->err = LLVMGetParam(fn, 6);
  X->instr_arg = LLVMGetParam(fn, 7);
  for (int a = 0; a < 3; a++) X->imm[a] = LLVMGetParam(fn, 8 + (unsigned)a);
  X->cur = &norm;
  X->fused = ew_fusable(in);
  bool ints = trnc_nc_instr_int_exact(in) || (in->op == TRNC_NC_OP_IOTA && int_dtype(in->dst.dtype));
  bool ok = ints ? emit_int(X, &norm) : emit_instr(X, &norm);
  if (!ok) {
    char where[160];
    return trnc_diag_error(diags, TRNC_ERR_UNSUPPORTED, "host backend: %s (%s) is not translated",
                           nc_where(X->p, k, i, where, sizeof where),
                           in->op == TRNC_NC_OP_TENSOR_REDUCE ? trnc_nc_alu_name(in->alu0) : "this form");
  }
  LLVMBuildRet(X->B, ci32(X, 0));
  return TRNC_OK;
}

trnc_status trnc_host_translate(const trnc_nc_program *p, const trnc_host_plan *plan, const int64_t part_stride[2],
                                LLVMContextRef C, const char *prefix, LLVMModuleRef *out, int64_t *tmp_floats,
                                trnc_diags *diags) {
  /* collective steps go through the caller's distributed engine, which
   * only the interpreter drives (trnc_nc_simulate_with) */
  for (size_t k = 0; k < p->nkernels; k++)
    if (p->kernels[k].cc)
      return trnc_diag_error(diags, TRNC_ERR_UNSUPPORTED,
                             "host backend: step %zu is a collective (%s over process group '%s'): a "
                             "program with collective steps runs on the interpreter",
                             k, trnc_nc_cc_op_name(p->kernels[k].cc->op), p->kernels[k].cc->group);
  hx X;
  memset(&X, 0, sizeof X);
  X.C = C;
  X.p = p;
  X.t = p->target;
  X.part_stride[0] = part_stride[0];
  X.part_stride[1] = part_stride[1];
  X.M = LLVMModuleCreateWithNameInContext(prefix, C);
  X.B = LLVMCreateBuilderInContext(C);
  X.i1 = LLVMInt1TypeInContext(C);
  X.i8 = LLVMInt8TypeInContext(C);
  X.i16 = LLVMInt16TypeInContext(C);
  X.i32 = LLVMInt32TypeInContext(C);
  X.i64 = LLVMInt64TypeInContext(C);
  X.f32 = LLVMFloatTypeInContext(C);
  X.ptr = LLVMPointerTypeInContext(C, 0);
  LLVMTypeRef iargs[11] = {X.ptr, X.ptr, X.ptr, X.ptr, X.ptr, X.ptr, X.ptr, X.i64, X.f32, X.f32, X.f32};
  X.ifn = LLVMFunctionType(X.i32, iargs, 11, 0);
  declare_externs(&X);
  trnc_status st = TRNC_OK;
  for (size_t f = 0; f < plan->nfns && !st; f++) st = instr_function(&X, f, plan->rep[f].kernel, plan->rep[f].instr, prefix, diags);
  LLVMDisposeBuilder(X.B);
  if (st) {
    LLVMDisposeModule(X.M);
    return st;
  }
  *out = X.M;
  *tmp_floats = X.tmp_floats;
  return TRNC_OK;
}
