/*
 * ir.h — trnc's static-shape tensor IR.
 *
 * A graph is a topologically ordered array of nodes. Nodes produce values
 * (SSA, one or more per node); everything refers to values by integer index
 * (trnc_ref), never by pointer. All memory of a graph lives in its arena.
 *
 * Node arguments mirror the ATen schema of the op: args[] holds every schema
 * argument in order (the serializer fills defaults), each a tagged trnc_arg
 * that is a value reference, a scalar, or a list. The op table (ir/ops.def)
 * says how many arguments each op takes and of which kinds.
 */
#ifndef TRNC_IR_IR_H
#define TRNC_IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/arena.h"
#include "ir/diag.h"
#include "trnc/trnc.h"

typedef uint32_t trnc_ref;           /* index into trnc_graph.values */
#define TRNC_NO_REF UINT32_MAX

/* ---- ops --------------------------------------------------------------- */
typedef enum trnc_op {
#define OP(id, target, flags, args, rule, dtypes, rank, check, limits, decomp) TRNC_OP_##id,
#include "ir/ops.def"
#undef OP
  TRNC_OP_COUNT,
  /* Non-table node kinds follow the table. */
  TRNC_OP_PLACEHOLDER = TRNC_OP_COUNT,
  TRNC_OP_CONSTANT,
  TRNC_OP_UNKNOWN,     /* FX target not in the table (reported by legality) */
  TRNC_OP_KIND_COUNT
} trnc_op;

/* Dtype sets used by the table (bit i = trnc_dtype i). */
#define TRNC_DT(x) (1u << (x))
/* float64 is accepted and legalized to float32 (passes/legalize_f64.c); int64
 * is accepted where interval analysis proves values fit int32 (docs/dtypes.md). */
#define TRNC_DTS_FLOAT (TRNC_DT(TRNC_F32) | TRNC_DT(TRNC_BF16) | TRNC_DT(TRNC_F16) | TRNC_DT(TRNC_F64))
#define TRNC_DTS_SINGLE (TRNC_DT(TRNC_F32) | TRNC_DT(TRNC_F64)) /* f64 runs as f32 */
#define TRNC_DTS_LINALG (TRNC_DTS_SINGLE | TRNC_DTS_INDEX) /* float32 matrices, int32 pivots and info */
#define TRNC_DTS_FP8   (TRNC_DT(TRNC_F8E4M3) | TRNC_DT(TRNC_F8E5M2))
#define TRNC_DTS_INT   (TRNC_DT(TRNC_I64) | TRNC_DT(TRNC_I32) | TRNC_DT(TRNC_I16) | TRNC_DT(TRNC_I8) | TRNC_DT(TRNC_U8))
#define TRNC_DTS_INDEX (TRNC_DT(TRNC_I64) | TRNC_DT(TRNC_I32))
#define TRNC_DTS_FLOAT_EXP (TRNC_DTS_FLOAT | TRNC_DT(TRNC_I32)) /* a float and its int32 exponent (frexp) */
#define TRNC_DTS_ARITH (TRNC_DTS_FLOAT | TRNC_DTS_INT)
#define TRNC_DTS_ARITH_BOOL (TRNC_DTS_ARITH | TRNC_DT(TRNC_BOOL))
#define TRNC_DTS_BOOLINT (TRNC_DTS_INT | TRNC_DT(TRNC_BOOL))
#define TRNC_DTS_ALL   (TRNC_DTS_ARITH | TRNC_DT(TRNC_BOOL) | TRNC_DTS_FP8)
#define TRNC_DTS_MATMUL (TRNC_DTS_FLOAT | TRNC_DTS_FP8)
/* Float data plus integer index operands (embedding, nll_loss, pooling indices). */
#define TRNC_DTS_FLOAT_IDX (TRNC_DTS_FLOAT | TRNC_DTS_INDEX | TRNC_DT(TRNC_BOOL))
#define TRNC_DTS_EMBED TRNC_DTS_FLOAT_IDX
/* float data with integer offsets (transformers' grouped expert matmul) */
#define TRNC_DTS_GROUPED (TRNC_DTS_FLOAT | TRNC_DTS_INDEX)
/* What a collective carries (torch.distributed's gloo has no fp8 reductions). */
#define TRNC_DTS_CC (TRNC_DTS_FLOAT | TRNC_DTS_INT | TRNC_DT(TRNC_BOOL))

/* Longest scan trnc computes as one matmul with an N x N ones matrix
 * (passes/decomp_ops.c; 64 MiB of float32 at this length). Longer rows are
 * scanned in blocks of TRNC_CUMSUM_BLOCK elements (4 MiB ones matrix) plus
 * a scan of the block totals. masked_scatter numbers its masked positions
 * with such a scan in float32: exact up to 2^24 elements. */
#define TRNC_CUMSUM_MAX 4096
#define TRNC_CUMSUM_BLOCK 1024
#define TRNC_MASKED_SCATTER_MAX (1 << 24)

/* sort / topk (passes/decomp_sort.c) rank each element by counting the
 * elements before it in a rows x N x N comparison: the longest row, and the
 * most comparisons (rows x N x N; rows x N x bins for histc) in one op. */
/* Elements of the one-hot comparison that indexed reductions (scatter_reduce
 * prod/amax/amin, index_reduce) and sorted searches (bucketize,
 * searchsorted) are decomposed into (passes/decomp_index.c). */
#define TRNC_ONEHOT_MAX (INT64_C(1) << 24)
/* native_layer_norm_backward rows (normalized elements) that one kernel-IR
 * row kernel takes whole with dW and dB (codegen/kir/emit.c: their column
 * sums, 4 bytes of PSUM per partition per 128 elements each, stay in PSUM
 * for the whole kernel: 2 KiB each at this length); longer rows, and rows
 * of one element, are decomposed (passes/decomp_norm.c) into a kernel-IR dx
 * and column sums */
#define TRNC_LAYER_NORM_BW_MAX_ROW 65536
/* Rows of _pdist_forward's input (its pair index is a cat of one arange
 * per row, passes/decomp_norm.c). */
#define TRNC_PDIST_MAX 1024
#define TRNC_SORT_MAX 4096
#define TRNC_SORT_MAX_COMPARISONS (INT64_C(1) << 24)
/* sort / sort.stable of rows longer than TRNC_SORT_MAX: ranked against
 * column chunks of TRNC_SORT_MAX and placed by a scatter (decomp_sort.c). */
#define TRNC_SORT_LONG_MAX 16384
#define TRNC_SORT_LONG_MAX_COMPARISONS (INT64_C(1) << 28)
/** Largest matrix dim of the linear-algebra ops (passes/decomp_linalg.c
 *  unrolls one graph step per column; the graph grows with it). */
#define TRNC_LINALG_MAX_N 32
/* Largest matrix matrix_exp decomposes (bmm steps, none per column; its
 * gradient takes matrix_exp of a matrix of twice the size). */
#define TRNC_MATRIX_EXP_MAX_N 128

/* A 3-D convolution (passes/decomp_conv.c) is a sum of 2-D convolutions, one
 * per depth tap of its kernel: the most depth taps it is lowered for. */
#define TRNC_CONV_MAX_DEPTH_TAPS 64
/* The convolution kernels' tiles (codegen/kir/conv.c), stated in the
 * limits text: an input band's elements per partition, input channels per
 * group (32 contraction tiles of 128), bytes of one weight tile. */
#define TRNC_CONV_BAND_MAX 12288
#define TRNC_CONV_MAX_CIN 4096
#define TRNC_CONV_WTILE_MAX 65536

/* Max pooling with indices that passes/decomp_pool.c gathers tap by tap
 * (3-D, adaptive): the most taps (elements of a window) it is lowered for. */
#define TRNC_WINDOW_MAX_TAPS 256

/* Limits of the ops the code generator lowers itself, checked by their
 * check functions (ir/ops.c), which the legality scan and the code
 * generator's pre-scan both call; the emitters size their tiles by them.
 * Plain integer literals, so the limits text can spell them (TRNC_XSTR). */
/* One-hot accumulation (embedding backward, scatter_add, index_put with
 * accumulate; codegen/kir/accum.c): a block is 128 index rows (partitions)
 * x 128 table rows x 512 columns (one fp32 PSUM bank); the most blocks. */
#define TRNC_ACC_BLOCK_ROWS 128
#define TRNC_ACC_BLOCK_COLS 512
#define TRNC_ACC_MAX_BLOCKS 16384
/* Rows of a combined-index table (index.Tensor / index_put with two
 * indices, codegen/kir/gather.c and codegen/kir/accum.c: the flat row index
 * stays exact in fp32 with room for the mask); gather/scatter address at
 * most half of it. */
#define TRNC_INDEX_TABLE_MAX_ROWS 2097152
#define TRNC_GATHER_MAX_ELEMS 1048576
/* all_to_all_single with explicit splits: the most ranks (one split size
 * per rank in the collective's descriptor, TRNC_NC_CC_MAX_GROUP), and the
 * longest process-group name in bytes, NUL included (TRNC_NC_CC_GROUP_NAME). */
#define TRNC_CC_MAX_SPLITS 64
#define TRNC_CC_GROUP_NAME 64
/* Hermite, Laguerre and Legendre polynomials at a Python-number degree n:
 * the most recurrence steps codegen/kir/polynomial.c unrolls (up to 5 kernel
 * ops a step within a kernel's KIR_MAX_OPS). */
#define TRNC_POLY_MAX_STEPS 24

#define TRNC_XSTR_(x) #x
/** The spelling of a macro's value, for limits text ("at most " TRNC_XSTR(N)). */
#define TRNC_XSTR(x) TRNC_XSTR_(x)

/* ---- types ------------------------------------------------------------- */
typedef struct trnc_type {
  trnc_dtype dtype;
  uint8_t rank;
  int64_t shape[TRNC_MAX_RANK];
  int64_t stride[TRNC_MAX_RANK];   /* elements */
  int64_t offset;                  /* storage offset, elements */
} trnc_type;

/** Number of elements (product of dims; 1 for rank 0). Dims are validated
 *  at import so this cannot overflow int64 for imported graphs. */
int64_t trnc_type_numel(const trnc_type *t);
/** Elements from t's first to its last, through its strides (0 when t is
 *  empty): the span a table of t's layout covers. */
int64_t trnc_type_extent(const trnc_type *t);
/** True if two types have the same dtype and shape (strides ignored). */
bool trnc_type_same_shape(const trnc_type *a, const trnc_type *b);
/** "f32[2,3]" into buf (always NUL-terminated). Returns buf. */
char *trnc_type_str(const trnc_type *t, char *buf, size_t n);

/* ---- arguments ----------------------------------------------------------- */
typedef enum trnc_arg_kind {
  TRNC_ARG_NONE = 0,
  TRNC_ARG_VALUE,      /* a tensor value (ref) */
  TRNC_ARG_INT,
  TRNC_ARG_FLOAT,
  TRNC_ARG_BOOL,
  TRNC_ARG_STR,
  TRNC_ARG_LIST,
  TRNC_ARG_DTYPE,
  TRNC_ARG_DEVICE,
  TRNC_ARG_LAYOUT,
  TRNC_ARG_MEMFMT,
  TRNC_ARG_OTHER,      /* a Python object without a kind (repr in .s) */
} trnc_arg_kind;

typedef struct trnc_arg {
  trnc_arg_kind kind;
  bool is_tuple;             /* LIST: came from a tuple */
  const char *name;          /* schema argument name, "" if unknown */
  union {
    trnc_ref ref;            /* VALUE */
    int64_t i;               /* INT; LAYOUT/MEMFMT: fx.proto enum value */
    double f;                /* FLOAT */
    bool b;                  /* BOOL */
    const char *s;           /* STR, DEVICE, OTHER */
    trnc_dtype dtype;        /* DTYPE */
    struct {
      struct trnc_arg *items;
      uint32_t n;
    } list;                  /* LIST */
  } u;
} trnc_arg;

/* ---- nodes and values ------------------------------------------------------ */
typedef struct trnc_loc {
  const char *file;          /* "" if unknown */
  int line;
  const char *code;
  const char *function;
} trnc_loc;

typedef struct trnc_node {
  trnc_op op;
  const char *target;        /* FX target as serialized ("aten.add.Tensor") */
  const char *name;          /* FX node name (not hashed) */
  trnc_arg *args;
  uint32_t nargs;
  trnc_ref *outs;            /* values produced, in output order */
  uint32_t nouts;
  trnc_loc loc;
  /* PLACEHOLDER */
  const char *role;          /* "primal", "tangent", ..., TRNC_RNG_SEED_ROLE */
  /* CONSTANT */
  const uint8_t *data;       /* numel * dtype size bytes, contiguous LE */
  size_t data_len;
  bool dead;                 /* set by passes that remove nodes */
} trnc_node;

/** Role and name of the input the decompose pass adds to a graph with random
 *  ops (passes/decomp_random.c): int32 [2], the call's 64-bit seed as its
 *  low and high 32-bit words, which the caller draws for every call. */
#define TRNC_RNG_SEED_ROLE "rng_seed"

typedef struct trnc_value {
  uint32_t node;             /* producing node */
  uint32_t index;            /* which output of it */
  bool is_none;              /* a None slot of a tuple output (no tensor) */
  int layout;                /* fx.proto Layout; 0/1 = strided */
  bool nested;               /* a nested (jagged) tensor */
  trnc_dtype torch_dtype;    /* dtype at the torch boundary when a pass changed
                              * type.dtype (float64 run as float32); else 0 */
  trnc_type type;
} trnc_value;

/** A torch.distributed process group named by collective nodes. */
typedef struct trnc_process_group {
  const char *name;
  int32_t size;              /* ranks, >= 1 */
} trnc_process_group;

struct trnc_graph {
  trnc_arena arena;
  trnc_graph_kind kind;
  const char *name;
  trnc_node *nodes;
  uint32_t nnodes;
  trnc_value *values;
  uint32_t nvalues;
  trnc_ref *outputs;         /* TRNC_NO_REF for None */
  uint32_t noutputs;
  trnc_process_group *groups;  /* sorted by name */
  uint32_t ngroups;
  /* Set by legalization passes. */
  bool f64_legalized;
  /* Set by the legality scan (trnc_graph_check_bound): int32/int64 graph
   * inputs must lie in [-int_input_bound, int_input_bound] for the graph's
   * int64 arithmetic to be exact in int32; 0: anywhere in int32. */
  int64_t int_input_bound;
};

/** trnc_graph_check_lowerable, recording in g->int_input_bound the largest
 *  input bound (2^31 - 1 down to 2^23, by powers of two) under which the
 *  scan finds nothing to report; the runtime checks inputs against it. */
trnc_status trnc_graph_check_bound(trnc_graph *g, trnc_diags *diags);

/** Size of the process group called name in g, or 0 if g does not list it. */
int32_t trnc_graph_group_size(const trnc_graph *g, const char *name);

/* ---- op table ------------------------------------------------------------- */
struct trnc_node_ctx;

/** Shape rule: computes the expected output types of a node from its
 *  inputs and arguments into out[] (nout entries, as many as the node has
 *  outputs). Returns TRNC_OK, or TRNC_ERR_INVALID_GRAPH with a diagnostic. */
typedef trnc_status (*trnc_shape_rule)(const trnc_graph *g, const trnc_node *n,
                                       trnc_type *out, uint32_t nout, trnc_diags *d);
/** Extra lowerability check of attribute values (NULL = none). Returns NULL
 *  if lowerable, else a static reason string. */
typedef const char *(*trnc_limit_check)(const trnc_graph *g, const trnc_node *n);

/* Op flags (ir/ops.def's flags column): one group bit per op, the section of
 * docs/operators.md and trnc.ops()'s "category" (trnc_op_group), then the
 * properties stages test instead of naming ops. */
enum {
  TRNC_OPF_ELEMENTWISE = 1u << 0,
  TRNC_OPF_REDUCTION = 1u << 1,
  TRNC_OPF_VIEW = 1u << 2,
  TRNC_OPF_POOLING = 1u << 3,
  TRNC_OPF_GATHER = 1u << 4,
  TRNC_OPF_COMPARE = 1u << 5,
  TRNC_OPF_DATA_MOVEMENT = 1u << 6,
  TRNC_OPF_CREATION = 1u << 7,
  TRNC_OPF_NORMALIZATION = 1u << 8,
  TRNC_OPF_MATMUL = 1u << 9,
  TRNC_OPF_COLLECTIVE = 1u << 10,
  TRNC_OPF_RANDOM = 1u << 11,
  TRNC_OPF_SORT = 1u << 12,
  TRNC_OPF_COPY = 1u << 13,
  TRNC_OPF_LOSS = 1u << 14,
  TRNC_OPF_CONV = 1u << 15,
  TRNC_OPF_ATTENTION = 1u << 16,
  TRNC_OPF_LINALG = 1u << 17,
  TRNC_OPF_GROUPS = (1u << 18) - 1,
  /* exact in int32 on GpSimd for integer operands and result (legality.c int_form) */
  TRNC_OPF_INT_EXACT = 1u << 20,
  /* passes/fold.c evaluates it when its operands are constants */
  TRNC_OPF_FOLDABLE = 1u << 21,
  /* the result lives in its first operand's buffer (views, wait_tensor): no kernel */
  TRNC_OPF_ALIASES = 1u << 22,
  /* draws from the random stream (passes/decompose.c gives it blocks) */
  TRNC_OPF_DRAWS = 1u << 23,
  /* passes/decompose.c rewrites it (its decomp column is not NULL) */
  TRNC_OPF_DECOMPOSED = 1u << 24,
};

typedef struct trnc_op_def {
  const char *name;          /* IR op name */
  const char *target;        /* aten OpOverload */
  uint32_t flags;            /* TRNC_OPF_* */
  const char *args;          /* argument kinds, one char per schema argument */
  trnc_shape_rule rule;
  uint32_t dtypes;           /* TRNC_DT() set for tensor operands */
  int max_rank;
  trnc_limit_check check;
  const char *limits;        /* the check in words, for docs/operators.md */
  const char *decomp;        /* the decomp column spelled out: "NULL" or the name of
                              * the passes/decompose.c function that rewrites it */
} trnc_op_def;

extern const trnc_op_def trnc_op_defs[TRNC_OP_COUNT];

/** True if op is a table op whose flags include every bit of `f`
 *  (false for non-table node kinds). */
static inline bool trnc_op_has(trnc_op op, uint32_t f) {
  return (unsigned)op < TRNC_OP_COUNT && (trnc_op_defs[op].flags & f) == f;
}
/** True if op is a table op with any bit of `f`. */
static inline bool trnc_op_any(trnc_op op, uint32_t f) {
  return (unsigned)op < TRNC_OP_COUNT && (trnc_op_defs[op].flags & f) != 0;
}
/** The op's limits predicate (its check column): NULL if node n is within
 *  the limits trnc lowers it for, else a static reason. The legality scan
 *  reports it for the graph as traced; codegen/lower.c's pre-scan for the
 *  graph after the passes (decompositions emit table ops too), both as one
 *  diagnostic per node, all at once. NULL for non-table node kinds. */
const char *trnc_op_limits(const trnc_graph *g, const trnc_node *n);
/** Name of op's group bit ("elementwise", "view", ...), "" for non-table kinds. */
const char *trnc_op_group(trnc_op op);
/** Op for an FX target string, or TRNC_OP_UNKNOWN. */
trnc_op trnc_op_lookup(const char *target);
/** True if passes/decompose.c rewrites op into other table ops (its
 *  decomp column is not NULL); false for non-table node kinds. */
bool trnc_op_decomposed(trnc_op op);
/** IR op name for any node kind ("placeholder", "constant", "unknown"). */
const char *trnc_op_name(trnc_op op);

/* ---- complex tensors (ir/complex.c; passes/complex.c rewrites them) ---------- */
/** The ops of complex tensors outside the op table that passes/complex.c
 *  rewrites, by FX target. */
typedef enum trnc_cop {
  TRNC_COP_NONE, TRNC_COP_R2C, TRNC_COP_C2C, TRNC_COP_C2R, TRNC_COP_CONJ, TRNC_COP_COMPLEX,
  TRNC_COP_POLAR, TRNC_COP_AS_REAL, TRNC_COP_AS_COMPLEX, TRNC_COP_REAL, TRNC_COP_IMAG,
  TRNC_COP_MUL_CSCALAR /* mul.Scalar / mul.Tensor by a complex Python number (1j) */
} trnc_cop;
/** Argument a as a complex number: a real Scalar, or a Python complex's
 *  repr ("1j", "(1+2j)", "(-0-1j)") that the serializer passes as OTHER.
 *  False for anything else. */
bool trnc_complex_scalar(const trnc_arg *a, double *re, double *im);
/** n's complex op (TRNC_COP_NONE for table ops and other targets). */
trnc_cop trnc_complex_op(const trnc_node *n);
/** True if value r is complex: by its dtype, or (after passes/complex.c
 *  carried it as float32 [..., 2]) by its boundary dtype. */
bool trnc_complex_value(const trnc_graph *g, trnc_ref r);
/** The rank of complex value r as a complex tensor (its float32 carrier has
 *  one dim more). */
int trnc_complex_rank(const trnc_graph *g, trnc_ref r);
/** True if live node n (not an input or constant) is an op of the table
 *  that reads or produces a complex tensor or takes a complex dtype, or an
 *  op outside the table that passes/complex.c rewrites (FFT, conj,
 *  view_as_real, ...). */
bool trnc_complex_touches(const trnc_graph *g, const trnc_node *n);
/** For a node trnc_complex_touches: NULL if passes/complex.c rewrites it
 *  into real ops (the legality scan then accepts it), else a static reason. */
const char *trnc_complex_unsupported(const trnc_graph *g, const trnc_node *n);
/** Longest complex DFT computed as one dense matmul ((2 N)^2 = 2^24 weights);
 *  longer ones are Cooley-Tukey splits, up to TRNC_DFT_MAX_N points. */
#define TRNC_DFT_DENSE_MAX 2048
#define TRNC_DFT_MAX_N (INT64_C(1) << 24)
/** The largest divisor of N at most sqrt(N) (1 for a prime): the first
 *  length of a Cooley-Tukey split N = N1 N2. */
int64_t trnc_dft_split(int64_t N);

/* ---- helpers over nodes ----------------------------------------------------- */
static inline const trnc_type *trnc_ref_type(const trnc_graph *g, trnc_ref r) {
  return &g->values[r].type;
}
/** The n-th schema argument, or NULL if the node has fewer. */
static inline const trnc_arg *trnc_node_arg(const trnc_node *n, uint32_t i) {
  return i < n->nargs ? &n->args[i] : NULL;
}
/** Diagnostic location pointing at node n. */
trnc_diag_loc trnc_node_loc(const trnc_node *n);
/** "(f32[2,3], f32[3], alpha=1)" — operand summary for diagnostics. */
char *trnc_node_operands_str(const trnc_graph *g, const trnc_node *n, char *buf, size_t len);

/** Argument i of n as an int (INT, or BOOL as 0/1); dflt if absent or of
 *  another kind. */
int64_t trnc_arg_int(const trnc_node *n, uint32_t i, int64_t dflt);
/** Entry j of the int[] argument i of n, a per-spatial-dim list (kernel,
 *  stride, padding, ...): its only entry if it has one (it applies to every
 *  dim), dflt if the list is empty, absent or shorter. */
int64_t trnc_arg_spatial(const trnc_node *n, uint32_t i, int j, int64_t dflt);
/** The widest window of adaptive pooling from in to out positions (windows
 *  [floor(o*in/out), ceil((o+1)*in/out))); 0 if out is 0. */
int64_t trnc_adaptive_window(int64_t in, int64_t out);
/** Argument i of n as a bool (BOOL, or INT != 0); dflt if absent/other. */
bool trnc_arg_bool(const trnc_node *n, uint32_t i, bool dflt);
/** A Scalar argument (INT, FLOAT or BOOL) as a double; dflt if a is NULL
 *  or of another kind (None, a tensor, ...). */
double trnc_arg_number(const trnc_arg *a, double dflt);

/** Walks every value ref in an argument (recursing into lists). */
typedef void (*trnc_ref_visitor)(trnc_ref r, void *ctx);
void trnc_arg_visit_refs(const trnc_arg *a, trnc_ref_visitor f, void *ctx);

/** Allocates an empty graph with its own arena. NULL on OOM. */
trnc_graph *trnc_graph_new(trnc_graph_kind kind);

/** True if argument a has a kind allowed by schema kind character `spec`
 *  (see the legend in ir/ops.def). Nested list items are checked too. */
bool trnc_arg_kind_ok(char spec, const trnc_arg *a);
/** Human name of a schema kind character ("int[]", "Tensor?", ...). */
const char *trnc_arg_spec_name(char spec);
/** Name of an argument kind ("int", "list", ...). */
const char *trnc_arg_kind_name(trnc_arg_kind k);

#endif
