/*
 * decompose.h — graph-level decompositions: ops of the table that the code
 * generator does not lower itself are rewritten, in the graph IR, into ops
 * it does lower. The op table names each op's decomposition (the decomp
 * column of ir/ops.def); passes/decompose.c expands that column into its
 * dispatch table and runs the pass.
 *
 * A decomposition is a function over a builder: it reads the node being
 * replaced, emits new nodes with trnc_db_op (their types come from the ops'
 * shape rules: contiguous results, exact strides for views) and binds every
 * tensor output of the node with trnc_db_result. The values the node
 * produced keep their refs and declared types, so every later use and every
 * graph output is unchanged. Emission errors are sticky: after the first
 * failure every builder call returns TRNC_NO_REF and the pass reports it, so
 * a decomposition checks nothing but its own preconditions.
 */
#ifndef TRNC_PASSES_DECOMPOSE_H
#define TRNC_PASSES_DECOMPOSE_H

#include "ir/ir.h"

typedef struct trnc_db trnc_db;

/** A decomposition: rewrites node n (live, verified, accepted by the legality
 *  scan) through b. Returns TRNC_OK or the builder's status. */
typedef trnc_status (*trnc_decomp_fn)(trnc_db *b, const trnc_node *n);

/* ---- arguments ------------------------------------------------------------ */
trnc_arg trnc_db_val(trnc_ref r);
trnc_arg trnc_db_int(int64_t i);
trnc_arg trnc_db_float(double f);
trnc_arg trnc_db_bool(bool b);
trnc_arg trnc_db_none(void);
trnc_arg trnc_db_dtype(trnc_dtype dt);
/** An int[] argument of n items (copied into the graph's arena). */
trnc_arg trnc_db_ints(trnc_db *b, const int64_t *items, int n);

/* ---- emission --------------------------------------------------------------- */
/** The graph being rewritten (for types of existing values). */
const trnc_graph *trnc_db_graph(const trnc_db *b);
/** Type of value r. */
const trnc_type *trnc_db_type(const trnc_db *b, trnc_ref r);

/**
 * Emits a single-output node of table op `op` with args[0..nargs) in schema
 * order (nargs must equal the op's argument count). The result's type is the
 * op's shape rule: exact strides for views, contiguous otherwise (a floating
 * statistic of unspecified dtype is float32). Returns its value, or
 * TRNC_NO_REF after an error (an argument that is TRNC_NO_REF, a rule that
 * rejects the operands, out of memory).
 */
trnc_ref trnc_db_op(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs);

/** trnc_db_op with the arguments written inline:
 *  DB(b, MUL_SCALAR, trnc_db_val(x), trnc_db_float(0.5)). */
#define DB(b, OP, ...)                                                        \
  trnc_db_op((b), TRNC_OP_##OP, (const trnc_arg[]){__VA_ARGS__},             \
             (uint32_t)(sizeof((const trnc_arg[]){__VA_ARGS__}) / sizeof(trnc_arg)))

/**
 * Binds output k of the node being decomposed to value r (same shape; dtype
 * converted if it differs). The output keeps its declared type: r's node
 * produces it directly when that node was emitted by this decomposition, is
 * not a view and its shape rule accepts the declared strides; otherwise a
 * copy (clone or _to_copy) into the declared layout is emitted. Returns
 * TRNC_OK or the builder's error status.
 */
trnc_status trnc_db_result(trnc_db *b, uint32_t k, trnc_ref r);

/** Keeps the node being decomposed as it is: the code generator lowers this
 *  form itself (a decomposition that chooses between its own rewrite and a
 *  kernel of codegen/, such as scaled-dot-product attention's flash kernel).
 *  Must be called before anything is emitted for the node; returns TRNC_OK or
 *  the builder's error status (TRNC_ERR_INTERNAL if nodes were emitted). */
trnc_status trnc_db_keep(trnc_db *b);

/* Small compositions used by several decompositions. */
/** x converted to dtype dt (_to_copy; contiguous). */
trnc_ref trnc_db_cast(trnc_db *b, trnc_ref x, trnc_dtype dt);
/** x as a contiguous float32 tensor (clone, or _to_copy from another dtype);
 *  the simplify pass drops the clone when x is contiguous already. */
trnc_ref trnc_db_f32(trnc_db *b, trnc_ref x);
/** view(x, shape[0..n)) (x must be viewable, e.g. contiguous). */
trnc_ref trnc_db_view(trnc_db *b, trnc_ref x, int n, const int64_t *shape);

/** The builder's status (TRNC_OK unless an emission failed). */
trnc_status trnc_db_status(const trnc_db *b);
/** Records an internal error at the decomposed node and returns its status. */
trnc_status trnc_db_fail(trnc_db *b, const char *what);

/* ---- the decompositions named in ir/ops.def --------------------------------- */
/** _scaled_dot_product_flash_attention_for_cpu: (output, logsumexp) from
 *  batched matmuls and a masked, max-subtracted softmax (passes/decomp_attention.c). */
trnc_status decomp_sdpa(trnc_db *b, const trnc_node *n);
/** _scaled_dot_product_flash_attention_for_cpu_backward: grads of query, key
 *  and value, recomputing the probabilities as exp(s - logsumexp). */
trnc_status decomp_sdpa_bw(trnc_db *b, const trnc_node *n);
/** cumsum(x, dim, dtype): x (moved so that dim is last, as [M, N] rows)
 *  times the N x N upper-triangular ones matrix, in float32 (passes/decomp_ops.c). */
trnc_status decomp_cumsum(trnc_db *b, const trnc_node *n);
/** repeat(x, repeats): x viewed with a size-1 dim before each repeated dim,
 *  expanded to the repeat count there, copied and viewed to the result. */
trnc_status decomp_repeat(trnc_db *b, const trnc_node *n);
/** flip(x, dims): index_select with arange(N-1, -1, -1) along each dim. */
trnc_status decomp_flip(trnc_db *b, const trnc_node *n);
/** empty_strided / empty_permuted: empty (contents unspecified), copied
 *  into the declared layout when it is not contiguous. */
trnc_status decomp_empty(trnc_db *b, const trnc_node *n);
/** linalg_vector_norm(x, ord, dim, keepdim, dtype) in float32 reductions
 *  (passes/decomp_norm.c). */
trnc_status decomp_vector_norm(trnc_db *b, const trnc_node *n);
/** native_group_norm: two-pass float32 mean and variance over each group of
 *  channels, then the affine weight and bias per channel. */
trnc_status decomp_group_norm(trnc_db *b, const trnc_node *n);
/** var.dim(x, dim, unbiased, keepdim): var.correction with correction
 *  1 (unbiased) or 0 (passes/decomp_ops.c). */
trnc_status decomp_var_dim(trnc_db *b, const trnc_node *n);
/** reflection_pad{1,2,3}d / replication_pad{1,2,3}d: an index_select per
 *  padded dim with the source index of every output position. */
trnc_status decomp_pad(trnc_db *b, const trnc_node *n);
/** _native_batch_norm_legit.no_stats(x, w, b, training, momentum, eps):
 *  two-pass float32 mean and variance over every dim but 1, then the affine
 *  weight and bias per channel (passes/decomp_norm.c). */
trnc_status decomp_bn_no_stats(trnc_db *b, const trnc_node *n);
/** scatter_reduce.two(x, dim, index, src, reduce, include_self), reduce
 *  'sum' or 'mean': scatter_add of src (onto x, or onto x zeroed where
 *  index hits without include_self), divided for 'mean' by the count of
 *  values reduced at each position (scatter_add of ones, plus 1 for self). */
trnc_status decomp_scatter_reduce(trnc_db *b, const trnc_node *n);
/** sort / sort.stable(x, dim, descending) and topk(x, k, dim, largest):
 *  stable ranks counted from a comparison matrix, values and indices placed
 *  by a one-hot sum (passes/decomp_sort.c). */
trnc_status decomp_sort(trnc_db *b, const trnc_node *n);
trnc_status decomp_topk(trnc_db *b, const trnc_node *n);
/** histc(x, bins, min, max): eager's float32 bin arithmetic, a one-hot
 *  comparison with the bins and a sum. */
trnc_status decomp_histc(trnc_db *b, const trnc_node *n);
/** transformers::grouped_mm_fallback and its backward: every expert's
 *  matmul over all rows, each row's own kept (passes/decomp_moe.c). */
trnc_status decomp_grouped_mm(trnc_db *b, const trnc_node *n);
trnc_status decomp_grouped_mm_bw(trnc_db *b, const trnc_node *n);

#endif
