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

/** Which decomposition rewrites live node n of g, or NULL to keep n as it is. */
typedef trnc_decomp_fn (*trnc_db_pick)(const trnc_graph *g, const trnc_node *n);

/**
 * The decompose pass's walk with another choice of rewrites (passes/complex.c):
 * every live node pick names a function for is replaced, in place, by what
 * that function emits through the builder; the others are copied. The
 * emitted ops may be ones the table's decompositions rewrite (the decompose
 * pass runs later). Errors as the decompose pass's; the graph must be
 * discarded after one.
 */
trnc_status trnc_db_rewrite(trnc_graph *g, trnc_diags *d, trnc_db_pick pick);

/* ---- arguments ------------------------------------------------------------ */
trnc_arg trnc_db_val(trnc_ref r);
trnc_arg trnc_db_int(int64_t i);
trnc_arg trnc_db_float(double f);
trnc_arg trnc_db_bool(bool b);
trnc_arg trnc_db_none(void);
trnc_arg trnc_db_dtype(trnc_dtype dt);
/** An int[] argument of n items (copied into the graph's arena). */
trnc_arg trnc_db_ints(trnc_db *b, const int64_t *items, int n);
/** A list argument of the n arguments items (a Tensor?[] mixes values and
 *  none), copied into the graph's arena. */
trnc_arg trnc_db_list(trnc_db *b, const trnc_arg *items, int n);
/** A Tensor[] argument of the n values items (copied into the graph's arena). */
trnc_arg trnc_db_vals(trnc_db *b, const trnc_ref *items, int n);

/* ---- emission --------------------------------------------------------------- */
/** The graph being rewritten (for types of existing values). */
const trnc_graph *trnc_db_graph(const trnc_db *b);
/** Type of value r; after a failed emission (r is TRNC_NO_REF) a 1 x 1
 *  float32 stand-in, so reading it never goes out of bounds. */
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

/** Most outputs of one node emitted by trnc_db_op_outs. */
#define TRNC_DB_MAX_OUTS 8

/**
 * trnc_db_op for an op with a tuple result of nouts outputs (nouts must be
 * the op's output count, at most TRNC_DB_MAX_OUTS): fills outs[0..nouts)
 * with its values; a slot the shape rule makes None (a masked-off gradient)
 * is a value marked is_none, which nothing may use. Returns TRNC_OK or the
 * builder's status (outs are TRNC_NO_REF then).
 */
trnc_status trnc_db_op_outs(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs,
                            uint32_t nouts, trnc_ref *outs);

/** A constant int64 tensor of the given shape (contiguous) holding
 *  data[0..numel), copied into the graph's arena. Returns its value or
 *  TRNC_NO_REF after an error. */
trnc_ref trnc_db_const_i64(trnc_db *b, int rank, const int64_t *shape, const int64_t *data);
/** The same for a float32 constant. */
trnc_ref trnc_db_const_f32(trnc_db *b, int rank, const int64_t *shape, const float *data);

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
/** A broadcast zero of dtype dt and the given shape (an expanded one-element
 *  full): the operand of a backward op that reads only its shape. */
trnc_ref trnc_db_shape_only(trnc_db *b, trnc_dtype dt, int rank, const int64_t *shape);
/** zeros(shape, dtype=dt), contiguous. */
trnc_ref trnc_db_zeros(trnc_db *b, trnc_dtype dt, int rank, const int64_t *shape);
/** view(x, shape[0..n)) (x must be viewable, e.g. contiguous). */
trnc_ref trnc_db_view(trnc_db *b, trnc_ref x, int n, const int64_t *shape);

/** The builder's status (TRNC_OK unless an emission failed). */
trnc_status trnc_db_status(const trnc_db *b);
/** Records an internal error at the decomposed node and returns its status. */
trnc_status trnc_db_fail(trnc_db *b, const char *what);

/* ---- the random stream (passes/decomp_random.c) ------------------------------ */
/** Philox blocks one call may draw: block counters stay below 2^31 (the
 *  counter's int32 iota), 2^33 random elements. */
#define TRNC_RNG_MAX_BLOCKS (((int64_t)1 << 31) - 128)
/** The rng_seed input (TRNC_NO_REF when the graph has no random op). */
trnc_ref trnc_db_rng_seed(const trnc_db *b);
/** Reserves nblocks consecutive 128-bit blocks of the call's Philox stream
 *  for the node being decomposed; returns the first (random ops take
 *  consecutive ranges in graph order, so no two share bits), or -1 after
 *  an error (TRNC_ERR_UNSUPPORTED past TRNC_RNG_MAX_BLOCKS). */
int64_t trnc_db_rng_blocks(trnc_db *b, int64_t nblocks);

/* ---- the decompositions named in ir/ops.def --------------------------------- */
/** linalg_lu_factor_ex, _linalg_det, _linalg_slogdet, linalg_inv_ex and
 *  _linalg_solve_ex from one unrolled LU factorization with partial pivoting
 *  (LAPACK getf2's steps; passes/decomp_linalg.c). */
trnc_status decomp_lu(trnc_db *b, const trnc_node *n);
/** linalg_lu_solve: the pivots' row swaps and two column-sweep triangular
 *  solves (transposed for adjoint, through transposes for left=False). */
trnc_status decomp_lu_solve(trnc_db *b, const trnc_node *n);
/** linalg_solve_triangular, triangular_solve: one column-sweep solve. */
trnc_status decomp_solve_triangular(trnc_db *b, const trnc_node *n);
/** linalg_cholesky_ex, cholesky, cholesky_solve, cholesky_inverse: potf2's
 *  unrolled steps over the triangle LAPACK reads, and two triangular solves. */
trnc_status decomp_cholesky(trnc_db *b, const trnc_node *n);
/** linalg_matrix_exp(A [..., n, n]): scaling and squaring, A 2^-s with s =
 *  ceil(log2(2 |A|_1)) clamped to [0, TRNC_MATRIX_EXP_SQUARINGS] (so |A 2^-s|_1
 *  <= 1/2), its Taylor polynomial of degree 12 by Horner's rule (bmm), then s
 *  squarings; every one of the fixed steps selects by s (passes/decomp_linalg.c). */
trnc_status decomp_matrix_exp(trnc_db *b, const trnc_node *n);
/** The most squarings decomp_matrix_exp emits: 1-norms up to 2^63. */
#define TRNC_MATRIX_EXP_SQUARINGS 64
/** linalg_lu, lu_unpack: P, L and U of an LU factorization. */
trnc_status decomp_lu_unpack(trnc_db *b, const trnc_node *n);
/** linalg_qr (modes reduced, complete, r): LAPACK's geqr2 Householder steps
 *  (dlarfg's signs: R's diagonal as eager's) and org2r's accumulation of Q. */
trnc_status decomp_qr(trnc_db *b, const trnc_node *n);
/** _linalg_eigh: cyclic Jacobi of the UPLO triangle's symmetric matrix in
 *  rounds of n/2 disjoint rotations (one J^T a J per round), a fixed number
 *  of sweeps; eigenvalues ascending. */
trnc_status decomp_eigh(trnc_db *b, const trnc_node *n);
/** _linalg_svd: one-sided Jacobi over the columns of A (A^T when wide),
 *  with eigh's rotations of the Gram matrix; singular values descending. */
trnc_status decomp_svd(trnc_db *b, const trnc_node *n);
/** linalg_pinv.atol_rtol_tensor: eager's tolerance rule over the singular
 *  values of decomp_svd's Jacobi (hermitian: the eigenvalues of decomp_eigh's). */
trnc_status decomp_pinv(trnc_db *b, const trnc_node *n);
/** diagonal_scatter: src along the diagonal of self's dims dim1, dim2 (a
 *  padded, broadcast src selected where col - row == offset). */
trnc_status decomp_diagonal_scatter(trnc_db *b, const trnc_node *n);
/** _scaled_dot_product_flash_attention_for_cpu: (output, logsumexp) from
 *  batched matmuls and a masked, max-subtracted softmax (passes/decomp_attention.c). */
trnc_status decomp_sdpa(trnc_db *b, const trnc_node *n);
/** _scaled_dot_product_flash_attention_for_cpu_backward: grads of query, key
 *  and value, recomputing the probabilities as exp(s - logsumexp). */
trnc_status decomp_sdpa_bw(trnc_db *b, const trnc_node *n);
/** cumsum(x, dim, dtype): x (moved so that dim is last, as [M, N] rows)
 *  times the N x N upper-triangular ones matrix, in float32 (passes/decomp_ops.c). */
trnc_status decomp_cumsum(trnc_db *b, const trnc_node *n);
/** cumprod, cummax and cummin: a Hillis-Steele scan of
 *  ceil(log2 N) shifted combinations along the dim (passes/decomp_scan.c). */
trnc_status decomp_scan(trnc_db *b, const trnc_node *n);
/** masked_scatter / masked_scatter_backward: each masked position's source
 *  index from a prefix sum of the mask (a matmul with U), an index_select
 *  (a scatter_add of the masked gradients) (passes/decomp_ops.c). */
trnc_status decomp_masked_scatter(trnc_db *b, const trnc_node *n);
/** repeat(x, repeats): x viewed with a size-1 dim before each repeated dim,
 *  expanded to the repeat count there, copied and viewed to the result. */
trnc_status decomp_repeat(trnc_db *b, const trnc_node *n);
/** flip(x, dims): index_select with arange(N-1, -1, -1) along each dim. */
trnc_status decomp_flip(trnc_db *b, const trnc_node *n);
/** empty_strided / empty_permuted: empty (contents unspecified), copied
 *  into the declared layout when it is not contiguous. */
trnc_status decomp_empty(trnc_db *b, const trnc_node *n);
/** _efficientzerotensor(size, dtype, ...): zeros(size, dtype). */
trnc_status decomp_zero_tensor(trnc_db *b, const trnc_node *n);
/** argmax/argmin/max.dim/min.dim: amax/amin, then amin of an iota where x
 *  is the extremum or NaN (passes/decomp_argmax.c). */
trnc_status decomp_argmax(trnc_db *b, const trnc_node *n);
/** nll_loss_forward: a gather of x at the safe targets, masked and summed. */
trnc_status decomp_nll_loss(trnc_db *b, const trnc_node *n);
/** nll_loss_backward: an iota == target one-hot times -g * weight[t]. */
trnc_status decomp_nll_loss_bw(trnc_db *b, const trnc_node *n);
/** linalg_vector_norm(x, ord, dim, keepdim, dtype) in float32 reductions
 *  (passes/decomp_norm.c). */
trnc_status decomp_vector_norm(trnc_db *b, const trnc_node *n);
/** _cdist_forward / _cdist_backward: p-norms of the [..., P, R, M]
 *  differences and their derivative summed over x2's rows. */
trnc_status decomp_cdist(trnc_db *b, const trnc_node *n);
/** _pdist_forward / _pdist_backward: cdist(x, x) at the pairs i < j (an
 *  index_select of the flat matrix), and cdist's gradient of the pair
 *  gradients placed symmetrically. */
trnc_status decomp_pdist(trnc_db *b, const trnc_node *n);
/** native_group_norm: two-pass float32 mean and variance over each group of
 *  channels, then the affine weight and bias per channel. */
trnc_status decomp_group_norm(trnc_db *b, const trnc_node *n);
/** native_group_norm_backward: float32 sums of grad and grad * x over each
 *  channel's positions, combined per group as torch's decomposition. */
trnc_status decomp_group_norm_bw(trnc_db *b, const trnc_node *n);
/** nonzero_static(x, size, fill_value): positions by a prefix sum of x != 0,
 *  coordinates written by an index_put (passes/decomp_ops.c). */
trnc_status decomp_nonzero_static(trnc_db *b, const trnc_node *n);
/** copy(self, src): a float src into an integer self is converted by
 *  _to_copy first (eager's conversion) (passes/decomp_ops.c). */
trnc_status decomp_copy(trnc_db *b, const trnc_node *n);
/** False for the copies decomp_copy rewrites (a float src into an integer
 *  self). */
bool decomp_copy_lowered_directly(const trnc_graph *g, const trnc_node *n);
/** var.dim(x, dim, unbiased, keepdim): var.correction with correction
 *  1 (unbiased) or 0 (passes/decomp_ops.c). */
trnc_status decomp_var_dim(trnc_db *b, const trnc_node *n);
/** reflection_pad{1,2,3}d / replication_pad{1,2,3}d: an index_select per
 *  padded dim with the source index of every output position. */
trnc_status decomp_pad(trnc_db *b, const trnc_node *n);
/** replication_pad{1,2,3}d_backward: per padded dim, a cat of the summed
 *  left border, the inner slice and the summed right border of the grad. */
trnc_status decomp_pad_bw(trnc_db *b, const trnc_node *n);
/** grid_sampler_2d, bilinear or nearest, any padding mode: a gather of
 *  x [N, C, H*W] at each tap's flat index, weighted and summed in float32
 *  (passes/decomp_grid.c). */
trnc_status decomp_grid_sampler(trnc_db *b, const trnc_node *n);
/** grid_sampler_2d_backward: scatter_adds of grad * w at the taps (input)
 *  and the weights' derivatives times the gathered taps (grid). */
trnc_status decomp_grid_sampler_bw(trnc_db *b, const trnc_node *n);
/** _native_batch_norm_legit.no_stats(x, w, b, training, momentum, eps):
 *  two-pass float32 mean and variance over every dim but 1, then the affine
 *  weight and bias per channel (passes/decomp_norm.c). */
trnc_status decomp_bn_no_stats(trnc_db *b, const trnc_node *n);
/* var.correction, var_mean.correction: float32 two-pass moments. */
trnc_status decomp_var(trnc_db *b, const trnc_node *n);
/* _native_batch_norm_legit_functional, _native_batch_norm_legit_no_training:
 * float32 statistics over every dim but C, as torch's decomposition. */
trnc_status decomp_batch_norm(trnc_db *b, const trnc_node *n);
/* native_batch_norm_backward, as torch's decomposition. */
trnc_status decomp_batch_norm_bw(trnc_db *b, const trnc_node *n);
/** scatter_reduce.two(x, dim, index, src, reduce, include_self), reduce
 *  'sum' or 'mean': scatter_add of src (onto x, or onto x zeroed where
 *  index hits without include_self), divided for 'mean' by the count of
 *  values reduced at each position (scatter_add of ones, plus 1 for self). */
trnc_status decomp_scatter_reduce(trnc_db *b, const trnc_node *n);
/** scatter_reduce.two with reduce 'prod', 'amax' or 'amin' and
 *  index_reduce(self, dim, index, source, reduce, include_self): the
 *  reduction over a one-hot [..., positions, elements] of index == position
 *  (passes/decomp_index.c). */
trnc_status decomp_scatter_reduce_onehot(trnc_db *b, const trnc_node *n);
trnc_status decomp_index_reduce(trnc_db *b, const trnc_node *n);
/** gather, scatter.value, scatter.src and scatter_add with a 0-d self,
 *  index or src (torch sees a 0-d tensor as [1]): the op over [1] views,
 *  its result viewed back; the code generator lowers the other forms itself
 *  (decomp_gather_lowered_directly). */
bool decomp_gather_lowered_directly(const trnc_graph *g, const trnc_node *n);
trnc_status decomp_gather_0d(trnc_db *b, const trnc_node *n);
/** put(self, index, source, accumulate): a scatter (scatter_add) into self
 *  seen flat, negative indices wrapped. */
trnc_status decomp_put(trnc_db *b, const trnc_node *n);
/** bucketize.Tensor / searchsorted.Tensor: the count of boundaries below
 *  each value (at most, with right), NaN past them all. */
trnc_status decomp_bucketize(trnc_db *b, const trnc_node *n);
trnc_status decomp_searchsorted(trnc_db *b, const trnc_node *n);
/** sort / sort.stable(x, dim, descending) and topk(x, k, dim, largest):
 *  stable ranks counted from a comparison matrix, values and indices placed
 *  by a one-hot sum (passes/decomp_sort.c). */
trnc_status decomp_sort(trnc_db *b, const trnc_node *n);
trnc_status decomp_topk(trnc_db *b, const trnc_node *n);
/** median, nanmedian (.default and .dim), kthvalue and mode: the value and
 *  index at one stable rank per row (as sort's), picked by a one-hot sum. */
trnc_status decomp_median(trnc_db *b, const trnc_node *n);
/** histc(x, bins, min, max): eager's float32 bin arithmetic, a one-hot
 *  comparison with the bins and a sum. */
trnc_status decomp_histc(trnc_db *b, const trnc_node *n);
/** transformers::grouped_mm_fallback and its backward: every expert's
 *  matmul over all rows, each row's own kept (passes/decomp_moe.c). */
trnc_status decomp_grouped_mm(trnc_db *b, const trnc_node *n);
trnc_status decomp_grouped_mm_bw(trnc_db *b, const trnc_node *n);
/** native_dropout(x, p, train), rand(size), bernoulli(x), bernoulli.p(x, p):
 *  Philox4x32-10 uniforms (w >> 8) * 2^-24 computed on the device in exact
 *  int32 arithmetic from the rng_seed input, then u < 1 - p (dropout's
 *  keep mask, out = where(keep, x / (1 - p), 0)), u itself, u < x or u < p
 *  (passes/decomp_random.c). */
trnc_status decomp_dropout(trnc_db *b, const trnc_node *n);
trnc_status decomp_rand(trnc_db *b, const trnc_node *n);
trnc_status decomp_bernoulli(trnc_db *b, const trnc_node *n);
/** native_dropout_backward(grad, mask, scale): where(mask, grad * scale, 0),
 *  the forward's mask (no draw). */
trnc_status decomp_dropout_bw(trnc_db *b, const trnc_node *n);

/** hypot(x, y): max(|x|, |y|) sqrt(1 + (min/max)^2) in float32 (C's inf and
 *  NaN rules); addbmm: one addmm contracting over the batch and M together
 *  (passes/decomp_math.c). */
trnc_status decomp_hypot(trnc_db *b, const trnc_node *n);
trnc_status decomp_addbmm(trnc_db *b, const trnc_node *n);
/** frexp(x): |x| scaled exactly into [1, 2) by powers of two 2^(+-k), k =
 *  64, 32, ..., 1 (a subnormal first by 2^24), the scalings summed into the
 *  exponent; mantissa copysign(|x| / 2, x), exponent that + 1; x itself and
 *  exponent 0 for 0, +-inf and NaN (passes/decomp_math.c). */
trnc_status decomp_frexp(trnc_db *b, const trnc_node *n);
/** special_hermite_polynomial_h / _he at a tensor degree n: eager's float32
 *  recurrence (at most 127 steps, NaN beyond n = 128) with every step
 *  emitted and applied where trunc(n) exceeds it; 1 at n = 0, 0 below 0. A
 *  Python-number n is kept for the kernel rule (passes/decomp_poly.c). */
trnc_status decomp_hermite(trnc_db *b, const trnc_node *n);
/** addmm / baddbmm with beta = 0: alpha * mm (bmm), self unread (a NaN in it
 *  stays out, as eager); other betas are lowered directly
 *  (decomp_beta_lowered_directly). */
trnc_status decomp_beta0(trnc_db *b, const trnc_node *n);
bool decomp_beta_lowered_directly(const trnc_graph *g, const trnc_node *n);

/** convolution / convolution_backward, transposed or 3-D (the code generator
 *  lowers 1-D/2-D non-transposed ones itself: decomp_conv_lowered_directly):
 *  a transposed convolution is the input gradient of the convolution it
 *  transposes (its backward: that convolution and its weight gradient with
 *  the roles of input and grad_output swapped); a 3-D one is a sum over the
 *  kernel's depth taps of 2-D convolutions with the output depth folded into
 *  the batch (passes/decomp_conv.c). */
trnc_status decomp_conv(trnc_db *b, const trnc_node *n);
trnc_status decomp_conv_bw(trnc_db *b, const trnc_node *n);
/** True if n (convolution or convolution_backward) is 1-D/2-D and not
 *  transposed, the forms the code generator lowers without decomposition. */
bool decomp_conv_lowered_directly(const trnc_graph *g, const trnc_node *n);
/** native_layer_norm_backward: dx as the kir row kernel of the dx-only form,
 *  dW and dB as float32 column sums over the batch dims (passes/decomp_norm.c). */
trnc_status decomp_layer_norm_bw(trnc_db *b, const trnc_node *n);
/** True for the dx-only form (output_mask [*, False, False]), which
 *  codegen/kir lowers as one row kernel. */
bool decomp_lnbw_lowered_directly(const trnc_graph *g, const trnc_node *n);

/** index.Tensor / index_put with more than two index tensors (those with at
 *  most two, or a boolean mask, the code generator lowers itself:
 *  decomp_index_lowered_directly): one index tensor, the row-major linear
 *  index into the indexed dims merged into one (passes/decomp_ops.c). */
trnc_status decomp_index_many(trnc_db *b, const trnc_node *n);
bool decomp_index_lowered_directly(const trnc_graph *g, const trnc_node *n);
/** max_pool3d_with_indices, adaptive_max_pool2d, adaptive_max_pool3d: the
 *  running maximum (eager's order and NaN rule) over every tap of the
 *  windows, each tap gathered by an index_select per spatial dim; their
 *  backward ops: grad_output scatter-added at the saved indices
 *  (passes/decomp_pool.c). */
trnc_status decomp_window_max(trnc_db *b, const trnc_node *n);
trnc_status decomp_window_max_bw(trnc_db *b, const trnc_node *n);

/* ---- 2-D pooling through the kernel IR (passes/decomp_pool2d.c) ------------ */
/** Geometry of a 2-D max/avg pooling over the last two dims: kernel, stride,
 *  padding, dilation (1 for avg), ceil_mode; avg: count_include_pad and
 *  divisor_override (0: none). */
typedef struct trnc_pool2d {
  int64_t k[2], s[2], p[2], d[2];
  bool ceil, cip;
  int64_t override;
} trnc_pool2d;
/** avg_pool2d of x [.., H, W] (float32 sums, eager's divisor), in x's dtype. */
trnc_ref trnc_db_avg_pool2d(trnc_db *b, trnc_ref x, const trnc_pool2d *q);
/** max_pool2d_with_indices: a running maximum over the taps (eager's order,
 *  NaN rule and first-index ties). */
trnc_status decomp_max_pool2d(trnc_db *b, const trnc_node *n);
/** avg_pool2d (trnc_db_avg_pool2d). */
trnc_status decomp_avg_pool2d(trnc_db *b, const trnc_node *n);
/* ---- adaptive average pooling whose windows tile the input (passes/decomp_pool2d.c) */
/** _adaptive_avg_pool2d of x [.., H, W] to o[0] x o[1] dividing H x W, in x's dtype. */
trnc_ref trnc_db_adaptive_avg_pool2d(trnc_db *b, trnc_ref x, const int64_t *o);
/** _adaptive_avg_pool2d_backward at gy [.., OH, OW] dividing xt's [.., H, W], in gy's dtype. */
trnc_ref trnc_db_adaptive_avg_pool2d_bw(trnc_db *b, trnc_ref gy, const trnc_type *xt);
/** True if adaptive average pooling node n stays whole for
 *  codegen/emit_conv.c's VectorE kernel: windows that do not tile the input,
 *  and backward ops other than the global pool's (1 x 1). Reads only n's
 *  arguments. */
bool decomp_pool2d_lowered_directly(const trnc_graph *g, const trnc_node *n);
/** _adaptive_avg_pool2d and its backward (trnc_db_adaptive_avg_pool2d{,_bw}). */
trnc_status decomp_adaptive_avg_pool2d(trnc_db *b, const trnc_node *n);
trnc_status decomp_adaptive_avg_pool2d_bw(trnc_db *b, const trnc_node *n);
/** avg_pool3d, _adaptive_avg_pool3d and their backward ops: per kernel depth
 *  tap, the 2-D pooling (or its backward) of the planes at that tap's depths,
 *  weighted by eager's depth share of the divisor and summed (backward:
 *  scatter-added back to those depths). */
trnc_status decomp_avg_pool3d(trnc_db *b, const trnc_node *n);

#endif
