/*
 * isa.c — NeuronCore instruction set tables and element types: names,
 * which engine runs which opcode, operand slots, and the exact rounding of
 * stores to every dtype.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

#define E(x) (1u << (x))
#define ENG_ALL (E(TRNC_NC_TENSOR) | E(TRNC_NC_VECTOR) | E(TRNC_NC_SCALAR) | E(TRNC_NC_GPSIMD) | NC_DMA_MASK)
#define ENG_VG (E(TRNC_NC_VECTOR) | E(TRNC_NC_GPSIMD))
#define D NC_SLOT_DST
#define D2 NC_SLOT_DST2
#define S0 NC_SLOT_SRC0
#define S1 NC_SLOT_SRC1
#define S2 NC_SLOT_SRC2

/* The opcode table (after the public NKI ISA: nki.isa.*). */
const nc_opinfo nc_opinfo_table[TRNC_NC_OP_COUNT] = {
    [TRNC_NC_OP_NOP] = {"nop", ENG_ALL, 0, 0, 0, NULL},
    /* nki.isa.dma_copy / indirect DMA / dma transpose: HBM<->SBUF, SBUF<->SBUF */
    [TRNC_NC_OP_DMA_COPY] = {"dma_copy", NC_DMA_MASK, D | S0 | S1, D | S0, NC_PAR_MODE, "mode"},
    /* nki.isa.nc_matmul: dst[M,N] (+)= stationary[K,M]^T . moving[K,N] */
    [TRNC_NC_OP_MATMUL] = {"matmul", E(TRNC_NC_TENSOR), D | S0 | S1, D | S0 | S1, NC_PAR_MODE, "acc"},
    /* nki.isa.nc_transpose on TensorE (identity matmul into PSUM) */
    [TRNC_NC_OP_TRANSPOSE] = {"transpose", E(TRNC_NC_TENSOR), D | S0, D | S0, 0, NULL},
    /* nki.isa.activation: func(src*scale + bias), optional add-reduce */
    [TRNC_NC_OP_ACTIVATION] = {"activation", E(TRNC_NC_SCALAR), D | D2 | S0 | S1, D | S0,
                               NC_PAR_ACT | NC_PAR_IMM0 | NC_PAR_IMM1, NULL},
    /* nki.isa.tensor_tensor */
    [TRNC_NC_OP_TENSOR_TENSOR] = {"tensor_tensor", ENG_VG, D | S0 | S1, D | S0 | S1, NC_PAR_ALU0, NULL},
    /* nki.isa.tensor_scalar: (src op0 s0) op1 s1 */
    [TRNC_NC_OP_TENSOR_SCALAR] = {"tensor_scalar", ENG_VG, D | S0 | S1 | S2, D | S0,
                                  NC_PAR_ALU0 | NC_PAR_ALU1 | NC_PAR_IMM0 | NC_PAR_IMM1, NULL},
    /* nki.isa.tensor_reduce: free axes only */
    [TRNC_NC_OP_TENSOR_REDUCE] = {"tensor_reduce", ENG_VG, D | S0, D | S0, NC_PAR_ALU0 | NC_PAR_MODE, "axes"},
    /* nki.isa.tensor_copy (with cast) */
    [TRNC_NC_OP_TENSOR_COPY] = {"tensor_copy", ENG_VG | E(TRNC_NC_SCALAR), D | S0, D | S0, 0, NULL},
    /* nki.isa.memset */
    [TRNC_NC_OP_MEMSET] = {"memset", ENG_VG, D, D, NC_PAR_IMM0, NULL},
    /* nki.isa.iota (GpSimd) */
    [TRNC_NC_OP_IOTA] = {"iota", E(TRNC_NC_GPSIMD), D, D, NC_PAR_AFF, NULL},
    /* nki.isa.select */
    [TRNC_NC_OP_SELECT] = {"select", ENG_VG, D | S0 | S1 | S2, D | S0 | S1 | S2, 0, NULL},
    /* nki.isa.affine_select (GpSimd) */
    [TRNC_NC_OP_AFFINE_SELECT] = {"affine_select", E(TRNC_NC_GPSIMD), D | S0, D | S0,
                                  NC_PAR_ALU0 | NC_PAR_IMM0 | NC_PAR_AFF, NULL},
};

const char *const nc_slot_names[5] = {"dst", "dst2", "src0", "src1", "src2"};

const char *trnc_nc_opcode_name(int op) {
  return (op >= 0 && op < TRNC_NC_OP_COUNT) ? nc_opinfo_table[op].name : "?";
}

uint32_t trnc_nc_opcode_engines(int op) {
  return (op >= 0 && op < TRNC_NC_OP_COUNT) ? nc_opinfo_table[op].engines : 0;
}

bool trnc_nc_alu_is_bitvec(int alu) {
  return alu == TRNC_NC_ALU_BIT_AND || alu == TRNC_NC_ALU_BIT_OR || alu == TRNC_NC_ALU_BIT_XOR ||
         alu == TRNC_NC_ALU_SHL || alu == TRNC_NC_ALU_SHR;
}

bool trnc_nc_alu_has_int_form(int alu) {
  return alu >= 0 && alu < TRNC_NC_ALU_COUNT && alu != TRNC_NC_ALU_DIV && alu != TRNC_NC_ALU_POW &&
         alu != TRNC_NC_ALU_ABSMAX && alu != TRNC_NC_ALU_BYPASS;
}

static bool int_dtype(int dt) {
  return dt == TRNC_I32 || dt == TRNC_I16 || dt == TRNC_I8 || dt == TRNC_U8 || dt == TRNC_BOOL;
}

/* nki.isa.tensor_tensor: "When all input/output tiles are int32 or uint32,
 * the operation defaults to GpSimd Engine, which uses native integer
 * arithmetic. This ensures exact results for all 32-bit integer values";
 * bitvec operators treat integer operands as bit patterns (no cast). */
bool trnc_nc_instr_int_exact(const trnc_nc_instr *in) {
  if (in->op == TRNC_NC_OP_TENSOR_SCALAR)
    return trnc_nc_alu_is_bitvec(in->alu0) && int_dtype(in->dst.dtype) && int_dtype(in->src[0].dtype);
  if (in->op != TRNC_NC_OP_TENSOR_TENSOR) return false;
  if (trnc_nc_alu_is_bitvec(in->alu0))
    return int_dtype(in->dst.dtype) && int_dtype(in->src[0].dtype) && int_dtype(in->src[1].dtype);
  return in->engine == TRNC_NC_GPSIMD && in->dst.dtype == TRNC_I32 && in->src[0].dtype == TRNC_I32 &&
         in->src[1].dtype == TRNC_I32;
}

static const char *const k_alu_names[] = {
#define TRNC_NC_X(id, name) name,
    TRNC_NC_ALUS(TRNC_NC_X)
#undef TRNC_NC_X
};
static const char *const k_act_names[] = {
#define TRNC_NC_X(id, name) name,
    TRNC_NC_ACTS(TRNC_NC_X)
#undef TRNC_NC_X
};
_Static_assert(sizeof k_alu_names / sizeof k_alu_names[0] == TRNC_NC_ALU_COUNT, "alu names");
_Static_assert(sizeof k_act_names / sizeof k_act_names[0] == TRNC_NC_ACT_COUNT, "act names");

const char *trnc_nc_alu_name(int alu) {
  return (alu >= 0 && alu < TRNC_NC_ALU_COUNT) ? k_alu_names[alu] : "?";
}
const char *trnc_nc_act_name(int act) {
  return (act >= 0 && act < TRNC_NC_ACT_COUNT) ? k_act_names[act] : "?";
}

static const char *const k_cc_names[] = {
#define TRNC_NC_X(id, name) name,
    TRNC_NC_CC_OPS(TRNC_NC_X)
#undef TRNC_NC_X
};
static const char *const k_red_names[] = {
#define TRNC_NC_X(id, name) name,
    TRNC_NC_CC_REDUCES(TRNC_NC_X)
#undef TRNC_NC_X
};
_Static_assert(sizeof k_cc_names / sizeof k_cc_names[0] == TRNC_NC_CC_COUNT, "cc names");
_Static_assert(sizeof k_red_names / sizeof k_red_names[0] == TRNC_NC_RED_COUNT, "reduce names");

const char *trnc_nc_cc_op_name(int op) {
  return (op >= 0 && op < TRNC_NC_CC_COUNT) ? k_cc_names[op] : "?";
}
const char *trnc_nc_cc_reduce_name(int reduce) {
  return (reduce >= 0 && reduce < TRNC_NC_RED_COUNT) ? k_red_names[reduce] : "?";
}
int trnc_nc_cc_reduce_lookup(const char *name) {
  for (int r = 0; name && r < TRNC_NC_RED_COUNT; r++)
    if (!strcmp(name, k_red_names[r])) return r;
  return -1;
}

static const char *const k_engine_names[TRNC_NC_ENGINE_COUNT] = {
    "tensor", "vector", "scalar", "gpsimd", "dma0",  "dma1",  "dma2",  "dma3",  "dma4",  "dma5",
    "dma6",   "dma7",   "dma8",   "dma9",   "dma10", "dma11", "dma12", "dma13", "dma14", "dma15"};

const char *trnc_nc_engine_name(int engine) {
  return (engine >= 0 && engine < TRNC_NC_ENGINE_COUNT) ? k_engine_names[engine] : "?";
}

/* ---- dtypes ---------------------------------------------------------------- */

bool trnc_nc_dtype_supported(trnc_dtype dt) {
  switch (dt) {
    case TRNC_F32: case TRNC_BF16: case TRNC_F16: case TRNC_F8E4M3: case TRNC_F8E5M2:
    case TRNC_I32: case TRNC_I16: case TRNC_I8: case TRNC_U8: case TRNC_BOOL:
      return true;
    default:
      return false;
  }
}

size_t trnc_nc_dtype_size(trnc_dtype dt) {
  switch (dt) {
    case TRNC_F32: case TRNC_I32: return 4;
    case TRNC_BF16: case TRNC_F16: case TRNC_I16: return 2;
    case TRNC_F8E4M3: case TRNC_F8E5M2: case TRNC_I8: case TRNC_U8: case TRNC_BOOL: return 1;
    default: return 0;
  }
}

const char *trnc_nc_dtype_name(trnc_dtype dt) {
  switch (dt) {
    case TRNC_F32: return "f32";
    case TRNC_BF16: return "bf16";
    case TRNC_F16: return "f16";
    case TRNC_F8E4M3: return "f8e4m3";
    case TRNC_F8E5M2: return "f8e5m2";
    case TRNC_I32: return "i32";
    case TRNC_I16: return "i16";
    case TRNC_I8: return "i8";
    case TRNC_U8: return "u8";
    case TRNC_BOOL: return "bool";
    default: return "?";
  }
}

/*
 * Round-to-nearest-even encoding of an fp32 value into a small binary float
 * format with M mantissa bits and exponent bias B (exponent field E bits).
 * fn: the OCP e4m3fn variant (no inf; S.1111.111 is NaN; max 448).
 * NaN keeps its sign; its payload is the quiet bit (fp16) or, for fp8, all
 * mantissa bits (S.11111.11, S.1111.111), as torch's casts give.
 * Overflow (a value rounding above the largest finite, and +-inf): inf for
 * the IEEE-like formats; e4m3fn saturates to +-448 (torch 2.13's
 * .to(torch.float8_e4m3fn), not ml_dtypes' NaN).
 */
static uint32_t enc_small(float f, int E, int M, int B, bool fn) {
  uint32_t u = nc_f2u(f);
  uint32_t sign = (u >> 31) << (E + M);
  uint32_t a = u & 0x7fffffffu;
  uint32_t expmask = ((1u << E) - 1u) << M;
  uint32_t nan = (fn || M < 8) ? (expmask | ((1u << M) - 1u)) : (expmask | (1u << (M - 1)));
  uint32_t fnmax = expmask | ((1u << M) - 2u); /* e4m3fn: S.1111.110 = 448 */
  if (a > 0x7f800000u) return sign | nan;
  if (a == 0x7f800000u) return sign | (fn ? fnmax : expmask);
  int e32 = (int)(a >> 23);
  if (e32 == 0) return sign; /* fp32 subnormals are far below every target's min subnormal */
  int e = e32 - 127;
  uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  int emin = 1 - B;
  int eq = e < emin ? emin : e;       /* exponent of the target quantum's scale */
  int shift = 23 - M + (eq - e);      /* >= 23 - M > 0 */
  uint32_t r;
  if (shift > 25) {
    r = 0; /* below half of the smallest subnormal */
  } else {
    r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
  }
  uint32_t bits = ((uint32_t)(eq + B - 1) << M) + r; /* carries into the exponent */
  if (r == 0) return sign;
  if (fn) {
    if (bits > fnmax) return sign | fnmax; /* rounds above 448: saturate (torch) */
  } else if (bits >= expmask) {
    return sign | expmask; /* overflow: inf */
  }
  return sign | bits;
}

static float dec_small(uint32_t h, int E, int M, int B, bool fn) {
  uint32_t sign = (h >> (E + M)) & 1u;
  uint32_t ex = (h >> M) & ((1u << E) - 1u);
  uint32_t man = h & ((1u << M) - 1u);
  float v;
  if (fn && ex == (1u << E) - 1u && man == (1u << M) - 1u) {
    v = NAN;
  } else if (!fn && ex == (1u << E) - 1u) {
    v = man ? NAN : INFINITY;
  } else if (ex == 0) {
    v = ldexpf((float)man, 1 - B - M);
  } else {
    v = nc_u2f(((ex - (uint32_t)B + 127u) << 23) | (man << (23 - M)));
  }
  return sign ? -v : v;
}

static int64_t sat_trunc(float x, int64_t lo, int64_t hi) {
  if (x != x) return 0;
  if (x <= (float)lo) return lo;
  if (x >= (float)hi) return hi;
  return (int64_t)x; /* truncates toward zero */
}

uint32_t trnc_nc_encode(trnc_dtype dt, float x) {
  switch (dt) {
    case TRNC_F32: return nc_f2u(x);
    case TRNC_BF16: return nc_f32_to_bf16(x);
    case TRNC_F16: return enc_small(x, 5, 10, 15, false);
    case TRNC_F8E4M3: return enc_small(x, 4, 3, 7, true);
    case TRNC_F8E5M2: return enc_small(x, 5, 2, 15, false);
    case TRNC_I32: return (uint32_t)(int32_t)sat_trunc(x, INT32_MIN, INT32_MAX);
    case TRNC_I16: return (uint16_t)(int16_t)sat_trunc(x, INT16_MIN, INT16_MAX);
    case TRNC_I8: return (uint8_t)(int8_t)sat_trunc(x, INT8_MIN, INT8_MAX);
    case TRNC_U8: return (uint8_t)sat_trunc(x, 0, UINT8_MAX);
    case TRNC_BOOL: return x != 0.0f;
    default: return 0;
  }
}

float trnc_nc_decode(trnc_dtype dt, uint32_t b) {
  switch (dt) {
    case TRNC_F32: return nc_u2f(b);
    case TRNC_BF16: return nc_bf16_to_f32((uint16_t)b);
    case TRNC_F16: return dec_small(b & 0xffffu, 5, 10, 15, false);
    case TRNC_F8E4M3: return dec_small(b & 0xffu, 4, 3, 7, true);
    case TRNC_F8E5M2: return dec_small(b & 0xffu, 5, 2, 15, false);
    case TRNC_I32: return (float)(int32_t)b;
    case TRNC_I16: return (float)(int16_t)(uint16_t)b;
    case TRNC_I8: return (float)(int8_t)(uint8_t)b;
    case TRNC_U8: return (float)(uint8_t)b;
    case TRNC_BOOL: return (b & 0xffu) ? 1.0f : 0.0f;
    default: return 0.0f;
  }
}

float trnc_nc_round(trnc_dtype dt, float x) { return trnc_nc_decode(dt, trnc_nc_encode(dt, x)); }

/* ---- access patterns ------------------------------------------------------- */

int64_t trnc_nc_ap_free_elems(const trnc_nc_ap *ap) {
  int64_t n = 1;
  for (int d = 0; d < ap->nfree && d < TRNC_NC_MAX_FREE; d++) n *= ap->free[d].count;
  return n;
}

int64_t nc_ap_elems(const trnc_nc_ap *ap) { return (int64_t)ap->partitions * trnc_nc_ap_free_elems(ap); }

bool nc_ap_extent(const trnc_nc_ap *ap, int64_t *lo, int64_t *hi) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  int64_t mn = 0, mx = 0;
  for (int d = 0; d < ap->nfree; d++) {
    int64_t c = ap->free[d].count, s = ap->free[d].stride;
    if (c < 1 || c > (1 << 24) || s > (1LL << 32) || s < -(1LL << 32)) return false;
    int64_t span = s * (c - 1);
    if (span < 0) mn += span; else mx += span;
  }
  *lo = ap->offset + mn * es;
  *hi = ap->offset + (mx + 1) * es;
  return true;
}

const trnc_nc_ap *nc_slot(const trnc_nc_instr *in, int s) {
  switch (s) {
    case 0: return &in->dst;
    case 1: return &in->dst2;
    default: return &in->src[s - 2];
  }
}
trnc_nc_ap *nc_slot_mut(trnc_nc_instr *in, int s) {
  switch (s) {
    case 0: return &in->dst;
    case 1: return &in->dst2;
    default: return &in->src[s - 2];
  }
}

const char *nc_where(const trnc_nc_program *p, size_t k, size_t i, char *buf, size_t n) {
  const trnc_nc_instr *in = &p->kernels[k].instrs[i];
  snprintf(buf, n, "%s#%zu %s.%s", p->kernels[k].name, i, trnc_nc_engine_name(in->engine),
           trnc_nc_opcode_name(in->op));
  return buf;
}
