/*
 * trnc.h — public C API of libtrnc, the torch.compile backend for AWS
 * Trainium NeuronCores.
 *
 * Conventions:
 *  - Every fallible call returns a trnc_status and appends human-readable
 *    diagnostics to a caller-owned trnc_diags list. Nothing calls exit().
 *  - Handles are opaque and owned by the caller; each has a destroy function.
 *  - Strings returned as `char *` are heap-allocated; free them with trnc_free().
 *  - Shapes and strides are in elements; sizes are in bytes unless noted.
 */
#ifndef TRNC_TRNC_H
#define TRNC_TRNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Maximum tensor rank the IR accepts (inputs of higher rank are rejected). */
#define TRNC_MAX_RANK 8

/** int64 graph inputs must lie in [TRNC_I64_INPUT_MIN, TRNC_I64_INPUT_MAX],
 *  the int32 range (checked at run time): int64 tensors run as int32. Integer
 *  add/sub/mul/min/max/compare/select/bitwise ops run on GpSimd in native
 *  int32 arithmetic, exact for every 32-bit value (nki.isa.tensor_tensor);
 *  the legality scan proves their int64 results stay in int32. Integer work
 *  that goes through fp32 (division, reductions, scans) is exact up to
 *  TRNC_INT_EXACT_BOUND (2^24) in magnitude, which the scan also proves. */
#define TRNC_I64_INPUT_MIN INT64_C(-2147483648)
#define TRNC_I64_INPUT_MAX INT64_C(2147483647)
#define TRNC_INT_EXACT_BOUND (INT64_C(1) << 24)

/** Status codes. TRNC_OK is 0; every other value is an error. */
typedef enum trnc_status {
  TRNC_OK = 0,
  TRNC_ERR_INVALID_ARGUMENT, /* bad parameter to an API call (NULL, bad size) */
  TRNC_ERR_MALFORMED,        /* bytes are not a valid serialized graph/program */
  TRNC_ERR_VERSION,          /* schema/format version this build cannot read */
  TRNC_ERR_INVALID_GRAPH,    /* well-formed bytes, inconsistent graph */
  TRNC_ERR_UNSUPPORTED,      /* graph uses ops/arguments trnc cannot lower */
  TRNC_ERR_DYNAMIC_SHAPE,    /* a symbolic (SymInt) dim reached the compiler */
  TRNC_ERR_LIMIT,            /* input exceeds a size limit (bytes, nodes, rank) */
  TRNC_ERR_NOMEM,            /* allocation failed */
  TRNC_ERR_IO,               /* file system error */
  TRNC_ERR_INTERNAL,         /* a trnc bug: please report with the graph */
  TRNC_STATUS_COUNT
} trnc_status;

/** Name of a status ("TRNC_ERR_MALFORMED"); never NULL. */
const char *trnc_status_name(trnc_status s);

/** libtrnc version string, e.g. "0.1.0". */
const char *trnc_version(void);

/** Version of LLVM (the host code-generation library) linked into libtrnc,
 *  as "major.minor.patch". */
const char *trnc_llvm_version(void);

/** Host code compiled by the simulator's JIT in this process (docs/simulator.md):
 *  *programs the programs compiled, *seconds their total compile time
 *  (translation, LLVM's optimizer, code generation). Either may be NULL. */
void trnc_jit_totals(size_t *programs, double *seconds);

/* ------------------------------------------------------------------------ */
/* Data types                                                                */

/** Tensor element types seen at the FX boundary. Values match fx.proto DType. */
typedef enum trnc_dtype {
  TRNC_DTYPE_INVALID = 0,
  TRNC_F32 = 1,
  TRNC_F64 = 2,
  TRNC_F16 = 3,
  TRNC_BF16 = 4,
  TRNC_F8E4M3 = 5,
  TRNC_F8E5M2 = 6,
  TRNC_I64 = 7,
  TRNC_I32 = 8,
  TRNC_I16 = 9,
  TRNC_I8 = 10,
  TRNC_U8 = 11,
  TRNC_BOOL = 12,
  TRNC_C64 = 13,
  TRNC_C128 = 14,
  TRNC_C32 = 15,
  TRNC_DTYPE_OTHER = 16,
  TRNC_DTYPE_COUNT
} trnc_dtype;

/** Short name of a dtype ("f32", "bf16", "i64", ...); "?" if out of range. */
const char *trnc_dtype_name(trnc_dtype dt);
/** Element size in bytes (bool: 1; complex64: 8); 0 for INVALID/OTHER. */
size_t trnc_dtype_size(trnc_dtype dt);

/* ------------------------------------------------------------------------ */
/* Diagnostics                                                               */

typedef enum trnc_severity {
  TRNC_SEV_ERROR = 0,
  TRNC_SEV_WARNING = 1,
  TRNC_SEV_NOTE = 2
} trnc_severity;

/** One diagnostic. All strings are non-NULL (possibly empty) and live as long
 *  as the trnc_diags list that holds it. */
typedef struct trnc_diag {
  trnc_severity severity;
  trnc_status status;   /* the status this diagnostic explains */
  const char *node;     /* FX node name, "" if none */
  const char *target;   /* aten OpOverload ("aten.add.Tensor"), "" if none */
  const char *file;     /* user source file from the FX stack trace, "" if unknown */
  int line;             /* user source line, 0 if unknown */
  const char *source;   /* user source text of that line, "" if unknown */
  const char *detail;   /* operand summary, e.g. "(f32[2,3], f32[3])" */
  const char *message;  /* what went wrong and what to do */
} trnc_diag;

typedef struct trnc_diags trnc_diags;

/** New empty diagnostics list; NULL on allocation failure. */
trnc_diags *trnc_diags_create(void);
void trnc_diags_destroy(trnc_diags *d);
size_t trnc_diags_count(const trnc_diags *d);
/** The i-th diagnostic (i < count), or NULL. */
const trnc_diag *trnc_diags_get(const trnc_diags *d, size_t i);
/** Number of diagnostics of severity ERROR. */
size_t trnc_diags_error_count(const trnc_diags *d);
/** Adds an error diagnostic with `message` (copied) and returns `code`: for
 *  callbacks such as a distributed engine (trnc_collective_engine) that
 *  report a failure. d may be NULL. */
trnc_status trnc_diags_add_error(trnc_diags *d, trnc_status code, const char *message);
/** All diagnostics as text, one per line ("error: file:line: message"). */
char *trnc_diags_format(const trnc_diags *d);

/** Frees memory returned by trnc (strings, buffers). NULL is a no-op. */
void trnc_free(void *p);

/* ------------------------------------------------------------------------ */
/* Graphs: fx.proto bytes -> verified static-shape IR                        */

typedef struct trnc_graph trnc_graph;

typedef enum trnc_graph_kind {
  TRNC_GRAPH_FORWARD = 1,
  TRNC_GRAPH_BACKWARD = 2,
  TRNC_GRAPH_INFERENCE = 3
} trnc_graph_kind;

/** Limits applied while reading untrusted bytes. Zero fields take defaults. */
typedef struct trnc_import_limits {
  size_t max_bytes;     /* serialized graph size; default 1 GiB */
  size_t max_nodes;     /* default 1,000,000 */
  size_t max_allocs;    /* allocations protobuf-c may make; default 64 M */
} trnc_import_limits;

/**
 * Reads a serialized trnc.fx.Graph (frontend/fx.proto) and builds the IR.
 *
 * Validates everything: wire format, schema version, enum values, node
 * references (dangling or forward), ranks (<= TRNC_MAX_RANK), negative or
 * overflowing dims/strides, symbolic dims, argument kinds and output metadata
 * against each op's shape rule in ir/ops.def, constants' byte sizes.
 * Unknown targets are *not* an error here: they import as TRNC_OP_UNKNOWN so
 * that trnc_graph_check_lowerable() can report all of them at once.
 *
 * bytes/len: the serialized graph. limits: NULL for defaults.
 * On success *out owns a new graph (destroy with trnc_graph_destroy).
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointers), TRNC_ERR_LIMIT (size,
 * node count or allocation cap exceeded), TRNC_ERR_MALFORMED (not a Graph
 * message), TRNC_ERR_VERSION, TRNC_ERR_DYNAMIC_SHAPE (a backed SymInt dim
 * such as s0; the diagnostic names the input and dim), TRNC_ERR_UNSUPPORTED
 * (a limit of the model, named at its node: a tensor of rank > TRNC_MAX_RANK,
 * a data-dependent size or scalar -- unbacked u0 from nonzero, x[mask],
 * .item()), TRNC_ERR_INVALID_GRAPH (every other inconsistency; the diagnostic
 * names the node), TRNC_ERR_NOMEM. An aten target with the meaning of a table
 * op (aten.lift_fresh_copy: clone) imports as that op.
 */
trnc_status trnc_graph_import(const void *bytes, size_t len,
                              const trnc_import_limits *limits,
                              trnc_graph **out, trnc_diags *diags);

void trnc_graph_destroy(trnc_graph *g);

/**
 * The legality scan: collects *every* node trnc cannot lower (op not in the
 * table, or dtype/rank/attribute outside what the table supports) and adds
 * one error diagnostic per node (target, operand shapes/dtypes, user
 * file:line). Returns TRNC_ERR_UNSUPPORTED if there was any, else TRNC_OK.
 */
trnc_status trnc_graph_check_lowerable(const trnc_graph *g, trnc_diags *diags);

/**
 * Runs the graph legalization pipeline (passes/): float64 -> float32 (one
 * warning diagnostic naming the affected inputs), int64 index narrowing
 * policy (docs/dtypes.md). The graph is verified after each pass.
 * Errors: TRNC_ERR_UNSUPPORTED (int64 arithmetic that may overflow 32 bits),
 * TRNC_ERR_INTERNAL (a pass produced an invalid graph).
 */
trnc_status trnc_graph_legalize(trnc_graph *g, trnc_diags *diags);

/** Structural and per-op shape/type verification. TRNC_OK or
 *  TRNC_ERR_INVALID_GRAPH with one diagnostic per violation. */
trnc_status trnc_graph_verify(const trnc_graph *g, trnc_diags *diags);

/** Deterministic text form of the IR (same graph, same text). trnc_free it. */
char *trnc_graph_print(const trnc_graph *g);

/** Canonical 128-bit hash (XXH3-128) of the graph: independent of FX node
 *  names and source locations; changes with any op, edge, shape, stride,
 *  dtype, attribute or constant byte. Written big-endian into out[16]. */
void trnc_graph_hash(const trnc_graph *g, uint8_t out[16]);

/** Counts describing a graph. */
typedef struct trnc_graph_summary {
  trnc_graph_kind kind;
  size_t nodes;        /* call nodes (excludes placeholders and constants) */
  size_t inputs;       /* placeholders */
  size_t outputs;      /* output values (None included) */
  size_t constants;    /* get_attr tensors */
  size_t values;       /* all SSA values */
  size_t distinct_ops; /* distinct op kinds among call nodes */
} trnc_graph_summary;

void trnc_graph_get_summary(const trnc_graph *g, trnc_graph_summary *out);

/* ------------------------------------------------------------------------ */
/* Compilation: verified IR -> NeuronCore program                            */

typedef struct trnc_compiled trnc_compiled;
struct trnc_nc_program;

/** Compile options. A zeroed struct gives the defaults. */
typedef struct trnc_compile_options {
  const char *target;     /* "trn2" (default when NULL), "trn3" or "trn1" */
  bool autocast_bf16;     /* run matmul inputs in bf16 (fp32 PSUM accumulate) */
  bool no_fusion;         /* one kernel per op (for debugging and comparisons) */
} trnc_compile_options;

/** A graph input or output at the torch boundary, as node.meta["val"] says. */
typedef struct trnc_io {
  trnc_dtype dtype;       /* torch dtype (f64/i64 included) */
  int rank;
  int64_t shape[TRNC_MAX_RANK];
  int64_t stride[TRNC_MAX_RANK];   /* elements */
  size_t extent_bytes;    /* bytes from element 0 to one past the last element */
  bool is_none;           /* outputs: a None slot (no tensor) */
  int64_t int_bound;      /* int32/int64 inputs: values lie in [-int_bound, int_bound]
                             (checked at run time); 0: anywhere in int32 */
  bool rng_seed;          /* inputs: the random seed of a graph with random ops (int32 [2],
                             a 64-bit seed as low and high words), which the caller draws
                             anew for every call (the graph's other inputs come first) */
  bool complex;           /* a complex64 (complex128) tensor at the torch boundary, described
                             and bound as its torch.view_as_real view: float32 (float64)
                             [..., 2] (passes/complex.c) */
} trnc_io;

/** What a compile produced, for the compile report (trnc.last_report()). */
typedef struct trnc_compile_report {
  size_t ir_nodes;                 /* live call nodes after the passes */
  size_t kernels;                  /* NeuronCore kernels in the program */
  size_t instructions;             /* all instructions */
  size_t engine_instructions[5];   /* TensorE, VectorE, ScalarE, GpSimd, DMA (all queues) */
  size_t ops_per_engine[4];        /* IR ops whose compute ran on TensorE/VectorE/ScalarE/GpSimd */
  int64_t hbm_planned_bytes;       /* peak bytes of HBM scratch after liveness-based reuse */
  int64_t hbm_unplanned_bytes;     /* bytes the intermediates would take without reuse */
  int64_t sbuf_peak_bytes;         /* largest SBUF bytes per partition any kernel uses */
  int64_t psum_peak_bytes;         /* largest PSUM bytes per partition any kernel uses */
  double est_time_s;               /* cost-model estimate on the target, seconds */
  double tensor_flop_util;         /* TensorE FLOP utilization in that estimate (0..1) */
  double dma_bw_util;              /* DMA bandwidth utilization (0..1) */
  double compile_s;                /* wall time of trnc_compile, seconds */
  const char *target;              /* target name */
  size_t collectives;              /* collective operations (STARTs) in the program */
  double est_collective_s;         /* cost-model time of those collectives on the
                                    * interconnect (overlapped with kernels where the
                                    * schedule allows), seconds */
} trnc_compile_report;

/**
 * Lowers a verified, legalized graph (after trnc_graph_legalize) to a
 * NeuronCore program: fusion, layout, tiling, SBUF/PSUM allocation, HBM
 * planning, instruction emission; the program is verified against the
 * target's hardware rules and costed.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL graph/out, unknown target),
 * TRNC_ERR_UNSUPPORTED (a node has no NeuronCore lowering for its operands;
 * one diagnostic per node), TRNC_ERR_INTERNAL (the emitted program failed
 * hardware verification: a trnc bug), TRNC_ERR_NOMEM.
 */
trnc_status trnc_compile(const trnc_graph *g, const trnc_compile_options *opt,
                         trnc_compiled **out, trnc_diags *diags);
void trnc_compiled_destroy(trnc_compiled *c);

size_t trnc_compiled_input_count(const trnc_compiled *c);
size_t trnc_compiled_output_count(const trnc_compiled *c);
/** Boundary descriptors (NULL if i is out of range). Inputs are the graph's
 *  placeholders in order; outputs the graph's output list in order. */
const trnc_io *trnc_compiled_input(const trnc_compiled *c, size_t i);
const trnc_io *trnc_compiled_output(const trnc_compiled *c, size_t i);
const trnc_compile_report *trnc_compiled_report(const trnc_compiled *c);
/** The program (see trnc/neuroncore.h); owned by c. */
const struct trnc_nc_program *trnc_compiled_program(const trnc_compiled *c);

/**
 * Writes the files trnc_compile writes on request for the program of graph g,
 * for a program that did not come from trnc_compile (an artifact cache hit):
 * its assembly to TRNC_DUMP_DIR/<graph>-program.s (the directory created when
 * missing; a failure to write is a warning diagnostic) and its cost-model
 * Chrome trace to the TRNC_PROFILE path with <graph> inserted before the
 * extension (trace.json -> trace.forward-graph-3.json). Nothing when neither
 * variable is set. <graph> is g's kind and name ("forward-graph-3").
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL g or c), TRNC_ERR_IO (the trace
 * cannot be written), TRNC_ERR_NOMEM; the program's verifier statuses.
 */
trnc_status trnc_compiled_dump(const trnc_graph *g, const trnc_compiled *c, trnc_diags *diags);

/**
 * Runs the program on the NeuronCore simulator (the embedded default device).
 * inputs[i] points at element 0 of input i, laid out as trnc_compiled_input(i)
 * says (dtype, strides); outputs[j] at caller-allocated memory for output j
 * laid out as trnc_compiled_output(j) (NULL for None outputs). int64 inputs
 * must lie in [TRNC_I64_INPUT_MIN, TRNC_I64_INPUT_MAX]; float64 runs as
 * float32. Thread-safe for concurrent runs of the same compiled program.
 * The first run checks the artifact's bindings and builds what later runs
 * reuse (dependency schedules, SBUF/PSUM/scratch memory, host code; freed
 * with c). Engine (docs/simulator.md): the interpreter, then host code
 * JIT-compiled once the program has run often enough (same bits);
 * TRNC_SIM=interp|jit|check overrides it on every run.
 * Errors: TRNC_ERR_INTERNAL (the artifact breaks its binding contract: a trnc
 * bug; or TRNC_SIM=check: the engines differ), TRNC_ERR_INVALID_ARGUMENT
 * (NULL pointer where a tensor is required, or an unknown TRNC_SIM),
 * TRNC_ERR_LIMIT (an int64 input value out of range, or a gather/scatter
 * index out of range: the diagnostic names the input/op),
 * TRNC_ERR_UNSUPPORTED (the program has collective steps: run it with
 * trnc_compiled_run_with and a distributed engine), TRNC_ERR_NOMEM.
 */
trnc_status trnc_compiled_run(const trnc_compiled *c, const void *const *inputs,
                              void *const *outputs, trnc_diags *diags);

/** One collective operation handed to a distributed engine (see
 *  trnc_collective_engine and trnc_nc_collective in trnc/neuroncore.h).
 *  `src` and `dst` are contiguous arrays of `dtype` (device types: f32,
 *  bf16, f16, i32, ...); for ALL_REDUCE and BROADCAST src == dst and the
 *  operation is in place. `src` stays valid and unchanged until the wait. */
typedef struct trnc_collective_call {
  int op;                  /* trnc_nc_cc_op (never WAIT) */
  int reduce;              /* trnc_nc_cc_reduce */
  const char *group;       /* process group name */
  int group_size;
  int root;                /* BROADCAST source rank */
  trnc_dtype dtype;
  const void *src;
  int64_t src_bytes;
  void *dst;
  int64_t dst_bytes;
  int nsplits;             /* ALL_TO_ALL: 0 (equal) or group_size */
  const int64_t *in_split, *out_split; /* bytes per peer */
} trnc_collective_call;

/** The distributed engine a program's collective steps run through (trnc's
 *  Python package passes one that calls torch.distributed). start issues the
 *  operation asynchronously and stores an opaque handle; wait blocks until
 *  it finished and releases the handle. Both return TRNC_OK or an error with
 *  a diagnostic (e.g. TRNC_ERR_INVALID_ARGUMENT for an unknown group). */
typedef struct trnc_collective_engine {
  trnc_status (*start)(void *ctx, const trnc_collective_call *call, void **handle,
                       trnc_diags *diags);
  trnc_status (*wait)(void *ctx, void *handle, trnc_diags *diags);
  void *ctx;
} trnc_collective_engine;

/**
 * As trnc_compiled_run, with the distributed engine that the program's
 * collective steps use (NULL: none; a program with collectives then fails
 * with TRNC_ERR_UNSUPPORTED naming the first one). Kernels between a
 * collective's START and WAIT run while it is in flight. Such a program
 * runs on the interpreter whatever TRNC_SIM says (docs/simulator.md).
 * Errors: those of trnc_compiled_run, and whatever the engine returns.
 */
trnc_status trnc_compiled_run_with(const trnc_compiled *c, const void *const *inputs,
                                   void *const *outputs, const trnc_collective_engine *engine,
                                   trnc_diags *diags);

/** Seconds the simulator's JIT spent compiling c's host code (translation,
 *  LLVM's optimizer and code generation); 0 while c has run on the
 *  interpreter only (docs/simulator.md: when the JIT compiles). */
double trnc_compiled_jit_seconds(const trnc_compiled *c);

/* ------------------------------------------------------------------------ */
/* The pipeline: the one place the order of the stages is written           */

/** The stages of trnc_pipeline_run, in the order it runs them. */
typedef enum trnc_stage {
  TRNC_STAGE_IMPORT = 0, /* fx.proto bytes -> IR (trnc_graph_import) */
  TRNC_STAGE_LEGALITY,   /* every op trnc cannot lower, at once (trnc_graph_check_lowerable) */
  TRNC_STAGE_LEGALIZE,   /* the graph passes (trnc_graph_legalize) */
  TRNC_STAGE_VERIFY,     /* the IR verifier on their result (trnc_graph_verify) */
  TRNC_STAGE_COMPILE,    /* IR -> verified, costed NeuronCore program (trnc_compile) */
  TRNC_STAGE_DONE        /* nothing left to run */
} trnc_stage;

/** Short name of a stage ("import", "legality", "legalize", "verify",
 *  "compile", "done"); "?" if out of range. */
const char *trnc_stage_name(trnc_stage s);

/** One graph's way through the pipeline. Zero-initialize it, set the
 *  inputs, call trnc_pipeline_run (as often as the caller wants to stop
 *  between stages). The caller owns and destroys `graph` and `compiled`. */
typedef struct trnc_pipeline {
  const void *bytes;                  /* serialized graph, read by IMPORT */
  size_t len;
  const trnc_import_limits *limits;   /* IMPORT; NULL: defaults */
  const trnc_compile_options *options; /* COMPILE; NULL: defaults */
  trnc_stage next;    /* the stage the next run starts at; after a failure, the one that failed */
  trnc_graph *graph;       /* set by IMPORT (or by the caller, to start at a later stage) */
  trnc_compiled *compiled; /* set by COMPILE */
} trnc_pipeline;

/**
 * Runs the stages from p->next through `last` in pipeline order, stopping at
 * the first that fails. On success p->next is the stage after `last`; on
 * failure it is the failing stage, whose status is returned with its
 * diagnostics (p->graph stays for the caller to inspect or destroy). Python,
 * the C tests and the fuzz target all compile through this function.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL p, `last` out of range, no graph
 * for a stage after IMPORT, a graph already there before IMPORT), else those
 * of the stage's function (see each one above).
 */
trnc_status trnc_pipeline_run(trnc_pipeline *p, trnc_stage last, trnc_diags *diags);

/* ------------------------------------------------------------------------ */
/* Operator table (ir/ops.def)                                               */

typedef struct trnc_op_info {
  const char *name;        /* IR op name, e.g. "add" */
  const char *fx_target;   /* aten OpOverload, e.g. "aten.add.Tensor" */
  const char *category;    /* "elementwise", "matmul", "reduction", ... */
  const char *dtypes;      /* supported dtypes, e.g. "f32 bf16 f16" */
  int max_rank;            /* highest supported operand rank */
  const char *limits;      /* attribute limits in words, "" if none */
  const char *decomp;      /* passes/decompose.c function that rewrites the op
                              into ops of the table, or "" when the code
                              generator lowers it itself */
} trnc_op_info;

/** Number of lowerable ops in the table. */
size_t trnc_op_count(void);
/** Info for op i (< trnc_op_count()); false if out of range. */
bool trnc_op_get_info(size_t i, trnc_op_info *out);
/** docs/operators.md, generated from the table. trnc_free it. */
char *trnc_ops_markdown(void);

#ifdef __cplusplus
}
#endif
#endif /* TRNC_TRNC_H */
