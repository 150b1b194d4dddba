/*
 * shape.c — shape rules for every op in ir/ops.def.
 *
 * Each rule recomputes a node's output dtypes and shapes (and, for views,
 * strides and storage offset) from its inputs and arguments, following
 * ATen's meta functions in torch 2.13.0. The verifier compares the result
 * with the metadata FX recorded (node.meta["val"]); any disagreement means
 * the serialized graph is inconsistent and is rejected before lowering.
 * Argument kinds were checked at import against the op's argument string,
 * so rules read arguments by position without re-checking kinds.
 */
#include "ir/shape.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

static trnc_status fail(const trnc_node *n, trnc_diags *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static trnc_status fail(const trnc_node *n, trnc_diags *d, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  trnc_diag_loc loc = trnc_node_loc(n);
  return trnc_diag_add(d, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL, "%s", msg);
}

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) return fail(n, d, __VA_ARGS__);  \
  } while (0)

static const trnc_type *targ(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_VALUE) ? trnc_ref_type(g, a->u.ref) : NULL;
}



static bool is_none(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return !a || a->kind == TRNC_ARG_NONE;
}

/* Int list argument (int[] or int[]?, a bare int is a 1-list). Returns the
 * count, or -1 if None / not a list of ints, or if longer than max. */
static int ilist(const trnc_node *n, uint32_t i, int64_t *out, int max) {
  const trnc_arg *a = trnc_node_arg(n, i);
  if (!a) return -1;
  if (a->kind == TRNC_ARG_INT) {
    if (max < 1) return -1;
    out[0] = a->u.i;
    return 1;
  }
  if (a->kind != TRNC_ARG_LIST || a->u.list.n > (uint32_t)max) return -1;
  for (uint32_t k = 0; k < a->u.list.n; k++) {
    if (a->u.list.items[k].kind != TRNC_ARG_INT) return -1;
    out[k] = a->u.list.items[k].u.i;
  }
  return (int)a->u.list.n;
}

static trnc_dtype dtarg(const trnc_node *n, uint32_t i, trnc_dtype dflt) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_DTYPE) ? a->u.dtype : dflt;
}

/* Normalizes dim against rank (allowing rank 0 to take dim 0/-1 as torch
 * does). Returns false if out of range. */
static bool wrap_dim(int64_t *dim, int rank) {
  int r = rank == 0 ? 1 : rank;
  if (*dim < -r || *dim >= r) return false;
  if (*dim < 0) *dim += r;
  return true;
}

static void set_shape(trnc_type *t, trnc_dtype dt, int rank, const int64_t *shape) {
  t->dtype = dt;
  t->rank = (uint8_t)rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
}

static void copy_shape(trnc_type *t, const trnc_type *src, trnc_dtype dt) {
  set_shape(t, dt, src->rank, src->shape);
}

static void set_none(trnc_type *t) { t->rank = TRNC_RANK_NONE; }

/* out[1]: int64 indices of out[0]'s shape (max.dim, sort, topk). */
static void with_indices(trnc_type *out) {
  out[1] = out[0];
  out[1].dtype = TRNC_I64;
}

void trnc_type_set_contiguous(trnc_type *t) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    t->stride[i] = s;
    s *= t->shape[i] > 1 ? t->shape[i] : 1;
  }
  t->offset = 0;
}

bool trnc_type_is_dense(const trnc_type *t) {
  /* Sort the dims with size > 1 by stride; each stride must equal the
   * product of the sizes of the dims inside it. */
  int idx[TRNC_MAX_RANK], m = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return true;
    if (t->shape[i] > 1) idx[m++] = i;
  }
  for (int i = 1; i < m; i++)
    for (int j = i; j > 0 && t->stride[idx[j]] < t->stride[idx[j - 1]]; j--) {
      int tmp = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = tmp;
    }
  int64_t expect = 1;
  for (int i = 0; i < m; i++) {
    if (t->stride[idx[i]] != expect) return false;
    expect *= t->shape[idx[i]];
  }
  return true;
}

/* ---- type promotion (torch.result_type) ------------------------------------ */

static int dt_category(trnc_dtype t) {
  switch (t) {
    case TRNC_BOOL: return 0;
    case TRNC_I64: case TRNC_I32: case TRNC_I16: case TRNC_I8: case TRNC_U8: return 1;
    case TRNC_C64: case TRNC_C128: case TRNC_C32: return 3;
    default: return 2;
  }
}

static int float_rank(trnc_dtype t) {
  switch (t) {
    case TRNC_F8E4M3: case TRNC_F8E5M2: return 0;
    case TRNC_F16: case TRNC_BF16: return 1;
    case TRNC_F32: return 2;
    case TRNC_F64: return 3;
    default: return 2;
  }
}

/* torch.promote_types for two dtypes. */
static trnc_dtype promote2(trnc_dtype a, trnc_dtype b) {
  if (a == TRNC_DTYPE_INVALID) return b;
  if (b == TRNC_DTYPE_INVALID || a == b) return a;
  int ca = dt_category(a), cb = dt_category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == TRNC_F16 && b == TRNC_BF16) || (a == TRNC_BF16 && b == TRNC_F16)) return TRNC_F32;
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (ca == 1) {
    static const trnc_dtype order[] = {TRNC_I8, TRNC_I16, TRNC_I32, TRNC_I64};
    if (a == TRNC_U8 || b == TRNC_U8) {
      trnc_dtype o = a == TRNC_U8 ? b : a;
      return o == TRNC_I8 ? TRNC_I16 : o;
    }
    int ra = 0, rb = 0;
    for (int i = 0; i < 4; i++) {
      if (order[i] == a) ra = i;
      if (order[i] == b) rb = i;
    }
    return ra >= rb ? a : b;
  }
  return a;
}

trnc_dtype trnc_promote_args(const trnc_graph *g, const trnc_node *n, const int *argi, int nargi) {
  /* Three priority groups: dimensioned tensors, zero-dim tensors, scalars. */
  trnc_dtype grp[3] = {TRNC_DTYPE_INVALID, TRNC_DTYPE_INVALID, TRNC_DTYPE_INVALID};
  for (int k = 0; k < nargi; k++) {
    const trnc_arg *a = trnc_node_arg(n, (uint32_t)argi[k]);
    if (!a) continue;
    switch (a->kind) {
      case TRNC_ARG_VALUE: {
        const trnc_type *t = trnc_ref_type(g, a->u.ref);
        int gi = t->rank > 0 ? 0 : 1;
        grp[gi] = promote2(grp[gi], t->dtype);
        break;
      }
      case TRNC_ARG_INT: grp[2] = promote2(grp[2], TRNC_I64); break;
      case TRNC_ARG_FLOAT: grp[2] = promote2(grp[2], TRNC_F32); break;
      case TRNC_ARG_BOOL: grp[2] = promote2(grp[2], TRNC_BOOL); break;
      default: break;
    }
  }
  trnc_dtype r = grp[0];
  for (int gi = 1; gi < 3; gi++) {
    if (grp[gi] == TRNC_DTYPE_INVALID) continue;
    if (r == TRNC_DTYPE_INVALID) {
      r = grp[gi];
    } else if (dt_category(grp[gi]) > dt_category(r)) {
      /* A higher category from a lower-priority group: zero-dim tensors keep
       * their dtype; Python scalars take the default dtype of the category. */
      r = gi == 1 ? grp[gi] : (dt_category(grp[gi]) == 2 ? TRNC_F32 : TRNC_I64);
    }
  }
  return r;
}

/* Broadcasts shapes of the tensor arguments at argi[] into out. */
static trnc_status broadcast(const trnc_graph *g, const trnc_node *n, const int *argi, int nargi,
                             trnc_type *out, trnc_diags *d) {
  int rank = 0;
  int64_t shape[TRNC_MAX_RANK];
  for (int k = 0; k < nargi; k++) {
    const trnc_type *t = targ(g, n, (uint32_t)argi[k]);
    if (t && t->rank > rank) rank = t->rank;
  }
  for (int i = 0; i < rank; i++) shape[i] = 1;
  for (int k = 0; k < nargi; k++) {
    const trnc_type *t = targ(g, n, (uint32_t)argi[k]);
    if (!t) continue;
    for (int i = 0; i < t->rank; i++) {
      int o = rank - t->rank + i;
      int64_t s = t->shape[i];
      if (s == shape[o] || s == 1) continue;
      CHECK(shape[o] == 1, "operands cannot be broadcast: dim %d is %lld in one and %lld in another",
            o, (long long)shape[o], (long long)s);
      shape[o] = s;
    }
  }
  out->rank = (uint8_t)rank;
  memcpy(out->shape, shape, sizeof(int64_t) * (size_t)rank);
  return TRNC_OK;
}

/* Reduction output shape over the dims in `dims` (all if ndims <= 0). */
static trnc_status reduce_shape(const trnc_node *n, const trnc_type *in, const int64_t *dims,
                                int ndims, bool keepdim, trnc_type *out, trnc_diags *d) {
  bool red[TRNC_MAX_RANK] = {false};
  if (ndims <= 0) {
    for (int i = 0; i < in->rank; i++) red[i] = true;
  } else {
    for (int k = 0; k < ndims; k++) {
      int64_t dim = dims[k];
      CHECK(wrap_dim(&dim, in->rank), "reduction dim %lld out of range for rank %d",
            (long long)dims[k], in->rank);
      if (in->rank) {
        CHECK(!red[dim], "reduction dim %lld appears twice", (long long)dims[k]);
        red[dim] = true;
      }
    }
  }
  int r = 0;
  for (int i = 0; i < in->rank; i++) {
    if (!red[i]) out->shape[r++] = in->shape[i];
    else if (keepdim) out->shape[r++] = 1;
  }
  out->rank = (uint8_t)r;
  return TRNC_OK;
}

static trnc_dtype float_or_default(trnc_dtype t) {
  return dt_category(t) == 2 ? t : TRNC_F32;
}

/* ---- elementwise ------------------------------------------------------------ */

trnc_status rule_unary(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

trnc_status rule_unary_float(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  copy_shape(&out[0], x, float_or_default(x->dtype));
  return TRNC_OK;
}

/* polygamma(int n, Tensor self), _cdist_backward(grad, x1, ...): argument
 * 1's shape, a float dtype */
trnc_status rule_unary_float_arg1(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 1);
  copy_shape(&out[0], x, float_or_default(x->dtype));
  return TRNC_OK;
}

trnc_status rule_unary_bool(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  copy_shape(&out[0], targ(g, n, 0), TRNC_BOOL);
  return TRNC_OK;
}

/* frexp(self): (mantissa of self's float dtype, int32 exponent), self's shape */
trnc_status rule_frexp(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_type *x = targ(g, n, 0);
  copy_shape(&out[0], x, float_or_default(x->dtype));
  copy_shape(&out[1], x, TRNC_I32);
  return TRNC_OK;
}

trnc_status rule_to_copy(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  copy_shape(&out[0], x, dtarg(n, 1, x->dtype));
  return TRNC_OK;
}

trnc_status rule_clamp(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  static const int a[] = {0, 1, 2};
  copy_shape(&out[0], targ(g, n, 0), trnc_promote_args(g, n, a, 3));
  return TRNC_OK;
}

/* clamp.Tensor: self, min and max broadcast together; the promoted dtype. */
trnc_status rule_clamp_tensor(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                              uint32_t nout, trnc_diags *d) {
  static const int a[] = {0, 1, 2};
  trnc_status s = broadcast(g, n, a, 3, &out[0], d);
  out[0].dtype = trnc_promote_args(g, n, a, 3);
  return s;
}

trnc_status rule_pow_scalar(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  static const int a[] = {0, 1};
  copy_shape(&out[0], targ(g, n, 0), trnc_promote_args(g, n, a, 2));
  return TRNC_OK;
}

trnc_status rule_binary(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  static const int a[] = {0, 1};
  trnc_status s = broadcast(g, n, a, 2, &out[0], d);
  out[0].dtype = trnc_promote_args(g, n, a, 2);
  return s;
}

trnc_status rule_binary_div(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  static const int a[] = {0, 1};
  trnc_status s = broadcast(g, n, a, 2, &out[0], d);
  out[0].dtype = float_or_default(trnc_promote_args(g, n, a, 2));
  return s;
}

/* div.Tensor_mode: rounding_mode None is true division (div.Tensor's float
 * result); 'trunc' and 'floor' keep the promoted dtype. */
trnc_status rule_div_mode(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                          trnc_diags *d) {
  const trnc_arg *m = trnc_node_arg(n, 2);
  if (!m || m->kind == TRNC_ARG_NONE) return rule_binary_div(g, n, out, nout, d);
  return rule_binary(g, n, out, nout, d);
}

trnc_status rule_compare(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  static const int a[] = {0, 1};
  out[0].dtype = TRNC_BOOL;
  return broadcast(g, n, a, 2, &out[0], d);
}

trnc_status rule_where(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  static const int all[] = {0, 1, 2}, vals[] = {1, 2};
  CHECK(targ(g, n, 0)->dtype == TRNC_BOOL || targ(g, n, 0)->dtype == TRNC_U8,
        "where: condition must be bool, got %s", trnc_dtype_name(targ(g, n, 0)->dtype));
  out[0].dtype = trnc_promote_args(g, n, vals, 2);
  return broadcast(g, n, all, 3, &out[0], d);
}

trnc_status rule_masked_fill(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  static const int a[] = {0, 1};
  const trnc_type *x = targ(g, n, 0);
  CHECK(targ(g, n, 1)->dtype == TRNC_BOOL, "masked_fill: mask must be bool, got %s",
        trnc_dtype_name(targ(g, n, 1)->dtype));
  trnc_status s = broadcast(g, n, a, 2, &out[0], d);
  if (s) return s;
  CHECK(out[0].rank == x->rank && !memcmp(out[0].shape, x->shape, sizeof(int64_t) * x->rank),
        "masked_fill: mask does not broadcast to the shape of self");
  out[0].dtype = x->dtype;
  return TRNC_OK;
}

/* ---- reductions ---------------------------------------------------------------- */

trnc_status rule_reduce(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dims[TRNC_MAX_RANK] = {0};
  int nd = ilist(n, 1, dims, TRNC_MAX_RANK);
  CHECK(nd >= 0 || is_none(n, 1), "reduction: dim must be a list of at most %d ints",
        TRNC_MAX_RANK);
  trnc_dtype dt = x->dtype;
  if (n->op == TRNC_OP_SUM && dt_category(dt) <= 1) dt = TRNC_I64;
  out[0].dtype = dtarg(n, 3, dt);
  return reduce_shape(n, x, dims, nd, trnc_arg_bool(n, 2, false), &out[0], d);
}

/* cumsum(self, dim, *, dtype): the input's shape; integer and bool inputs
 * sum to int64 unless dtype says otherwise, as in ATen. */
trnc_status rule_cumsum(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "%s: dim %lld out of range for rank %d", n->target,
        (long long)trnc_arg_int(n, 1, 0), x->rank);
  copy_shape(&out[0], x, dtarg(n, 2, dt_category(x->dtype) <= 1 ? TRNC_I64 : x->dtype));
  return TRNC_OK;
}

/* cummax / cummin(self, dim): values like self, int64 indices */
trnc_status rule_cummax(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "%s: dim out of range", n->target);
  copy_shape(&out[0], x, x->dtype);
  copy_shape(&out[1], x, TRNC_I64);
  return TRNC_OK;
}

/* linalg_vector_norm(self, ord, dim, keepdim, dtype): a reduction of a float
 * tensor to its dtype (or `dtype`). */
trnc_status rule_vector_norm(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dims[TRNC_MAX_RANK] = {0};
  int nd = ilist(n, 2, dims, TRNC_MAX_RANK);
  CHECK(nd >= 0 || is_none(n, 2), "linalg_vector_norm: dim must be a list of at most %d ints",
        TRNC_MAX_RANK);
  out[0].dtype = dtarg(n, 4, float_or_default(x->dtype));
  return reduce_shape(n, x, dims, nd, trnc_arg_bool(n, 3, false), &out[0], d);
}

/* sort / sort.stable (self, [stable,] dim, descending): (values: self's
 * type, indices: int64), both self's shape. */
trnc_status rule_sort(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, n->op == TRNC_OP_SORT_STABLE ? 2 : 1, -1);
  CHECK(wrap_dim(&dim, x->rank), "%s: dim %lld out of range for rank %d", n->target,
        (long long)dim, x->rank);
  copy_shape(&out[0], x, x->dtype);
  with_indices(out);
  return TRNC_OK;
}

/* topk(self, k, dim, largest, sorted): (values, int64 indices) of self's
 * shape with k in dim. */
trnc_status rule_topk(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 2, -1), k = trnc_arg_int(n, 1, -1);
  CHECK(wrap_dim(&dim, x->rank), "topk: dim %lld out of range for rank %d",
        (long long)trnc_arg_int(n, 2, -1), x->rank);
  int64_t len = x->rank ? x->shape[dim] : 1;
  CHECK(k >= 0 && k <= len, "topk: k = %lld out of range for a dim of %lld", (long long)k,
        (long long)len);
  copy_shape(&out[0], x, x->dtype);
  if (x->rank) out[0].shape[dim] = k;
  with_indices(out);
  return TRNC_OK;
}

/* ---- linear algebra (passes/decomp_linalg.c) ------------------------------ */

/* Checks that t is a batch of matrices (rank >= 2; square if asked). */
static trnc_status matrices(const trnc_node *n, const trnc_type *t, bool square, trnc_diags *d) {
  CHECK(t && t->rank >= 2, "%s: expected a batch of matrices of rank >= 2", n->target);
  CHECK(!square || t->shape[t->rank - 1] == t->shape[t->rank - 2],
        "%s: expected square matrices, got %lld x %lld", n->target,
        (long long)t->shape[t->rank - 2], (long long)t->shape[t->rank - 1]);
  return TRNC_OK;
}

/* out: the broadcast batch of a and c (all dims but the last two), then
 * rows, cols. */
static trnc_status mat_broadcast(const trnc_node *n, const trnc_type *a, const trnc_type *c,
                                 int64_t rows, int64_t cols, trnc_type *out, trnc_dtype dt,
                                 trnc_diags *d) {
  int ra = a->rank - 2, rc = c->rank - 2, r = ra > rc ? ra : rc;
  int64_t shape[TRNC_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int ia = i - (r - ra), ic = i - (r - rc);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, dc = ic >= 0 ? c->shape[ic] : 1;
    CHECK(da == dc || da == 1 || dc == 1, "%s: batch dims %lld and %lld do not broadcast",
          n->target, (long long)da, (long long)dc);
    shape[i] = da == 1 ? dc : da;
  }
  shape[r] = rows;
  shape[r + 1] = cols;
  set_shape(out, dt, r + 2, shape);
  return TRNC_OK;
}

/* out: t's batch dims followed by the n dims of tail, of dtype dt. */
static void batch_with(trnc_type *out, const trnc_type *t, trnc_dtype dt, int n, const int64_t *tail) {
  int64_t shape[TRNC_MAX_RANK];
  int r = t->rank - 2;
  for (int i = 0; i < r; i++) shape[i] = t->shape[i];
  for (int i = 0; i < n; i++) shape[r + i] = tail[i];
  set_shape(out, dt, r + n, shape);
}

/* linalg_lu_factor_ex(A): LU [..., m, n], pivots [..., min(m, n)] and info
 * [...] int32; _linalg_det(A): det [...], LU, pivots; _linalg_slogdet(A):
 * sign, logabsdet [...], LU, pivots. */
trnc_status rule_lu_factor(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  bool det = n->op == TRNC_OP_LINALG_DET, slog = n->op == TRNC_OP_LINALG_SLOGDET;
  trnc_status st = matrices(n, a, det || slog, d);
  if (st) return st;
  uint32_t want = slog ? 4 : 3, lu = det ? 1 : slog ? 2 : 0;
  CHECK(nout == want, "%s has %u outputs, the graph declares %u", n->target, want, nout);
  int64_t m = a->shape[a->rank - 2], c = a->shape[a->rank - 1], k = m < c ? m : c;
  copy_shape(&out[lu], a, a->dtype);
  batch_with(&out[lu + 1], a, TRNC_I32, 1, &k);
  if (!det && !slog) batch_with(&out[2], a, TRNC_I32, 0, NULL);
  for (uint32_t i = 0; i < lu; i++) batch_with(&out[i], a, a->dtype, 0, NULL);
  return TRNC_OK;
}

/* linalg_inv_ex(A), linalg_cholesky_ex(A): [..., n, n] and info [...]
 * int32; cholesky(A), cholesky_inverse(L): [..., n, n]. */
trnc_status rule_square_ex(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, true, d);
  if (st) return st;
  copy_shape(&out[0], a, a->dtype);
  if (nout > 1) batch_with(&out[1], a, TRNC_I32, 0, NULL);
  return TRNC_OK;
}

/* _linalg_solve_ex(A, B, left): the result (B's matrix, or vector, over the
 * broadcast batch), LU and pivots of A, info. */
trnc_status rule_solve_ex(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                          trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0), *b = targ(g, n, 1);
  trnc_status st = matrices(n, a, true, d);
  if (st) return st;
  CHECK(nout == 4, "%s has 4 outputs, the graph declares %u", n->target, nout);
  CHECK(b && b->rank >= 1, "%s: B must have rank >= 1", n->target);
  bool left = trnc_arg_bool(n, 2, true);
  int64_t k = a->shape[a->rank - 1];
  bool vec = b->rank == 1 || (b->rank == a->rank - 1 && b->shape[b->rank - 1] == k);
  for (int i = 0; vec && b->rank > 1 && i < b->rank - 1; i++) vec = b->shape[i] == a->shape[i];
  trnc_type bm = *b;
  CHECK(!vec || b->rank < TRNC_MAX_RANK, "%s: B has too many dims", n->target);
  if (vec) { /* B as [..., n, 1] (left) or [..., 1, n] */
    bm.rank = (uint8_t)(b->rank + 1);
    bm.shape[bm.rank - 1] = left ? 1 : b->shape[b->rank - 1];
    bm.shape[bm.rank - 2] = left ? b->shape[b->rank - 1] : 1;
  }
  CHECK(bm.rank >= 2 && bm.rank <= TRNC_MAX_RANK, "%s: B of rank %d is not a batch of matrices",
        n->target, b->rank);
  int64_t bk = bm.shape[bm.rank - (left ? 2 : 1)];
  CHECK(bk == k, "%s: A is %lld x %lld but B's %s dim is %lld", n->target, (long long)k,
        (long long)k, left ? "row" : "column", (long long)bk);
  st = mat_broadcast(n, a, &bm, bm.shape[bm.rank - 2], bm.shape[bm.rank - 1], &out[0], b->dtype, d);
  if (st) return st;
  if (vec) { /* drop the unit dim again: the batch and [n] */
    out[0].rank--;
    out[0].shape[out[0].rank - 1] = k;
  }
  copy_shape(&out[1], a, a->dtype);
  batch_with(&out[2], a, TRNC_I32, 1, &k);
  batch_with(&out[3], a, TRNC_I32, 0, NULL);
  return TRNC_OK;
}

/* linalg_lu_solve(LU, pivots, B), linalg_solve_triangular(A, B),
 * cholesky_solve(B, L), triangular_solve(B, A) (with A's clone over the
 * broadcast batch): X of B's matrix shape over the broadcast batch. */
trnc_status rule_solve_rhs(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  bool b_first = n->op == TRNC_OP_CHOLESKY_SOLVE || n->op == TRNC_OP_TRIANGULAR_SOLVE;
  const trnc_type *a = targ(g, n, b_first ? 1 : 0);
  const trnc_type *b = targ(g, n, n->op == TRNC_OP_LINALG_LU_SOLVE ? 2 : b_first ? 0 : 1);
  trnc_status st = matrices(n, a, true, d);
  if (!st) st = matrices(n, b, false, d);
  if (st) return st;
  int64_t k = a->shape[a->rank - 1];
  bool left = n->op != TRNC_OP_LINALG_SOLVE_TRIANGULAR && n->op != TRNC_OP_LINALG_LU_SOLVE
                  ? true
                  : trnc_arg_bool(n, 3, true);
  CHECK(b->shape[b->rank - (left ? 2 : 1)] == k, "%s: A is %lld x %lld but B's %s dim is %lld",
        n->target, (long long)k, (long long)k, left ? "row" : "column",
        (long long)b->shape[b->rank - (left ? 2 : 1)]);
  st = mat_broadcast(n, a, b, b->shape[b->rank - 2], b->shape[b->rank - 1], &out[0], b->dtype, d);
  if (!st && nout > 1) st = mat_broadcast(n, a, b, k, k, &out[1], a->dtype, d);
  return st;
}

/* linalg_lu(A) and lu_unpack(LU, pivots): P [..., m, m], L [..., m, k],
 * U [..., k, n] with k = min(m, n). */
trnc_status rule_linalg_lu(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, false, d);
  if (st) return st;
  CHECK(nout == 3, "%s has 3 outputs, the graph declares %u", n->target, nout);
  int64_t m = a->shape[a->rank - 2], c = a->shape[a->rank - 1], k = m < c ? m : c;
  int64_t p[2] = {m, m}, l[2] = {m, k}, u[2] = {k, c};
  batch_with(&out[0], a, a->dtype, 2, p);
  batch_with(&out[1], a, a->dtype, 2, l);
  batch_with(&out[2], a, a->dtype, 2, u);
  int64_t none = 0; /* lu_unpack: an empty [0] for what it does not unpack */
  if (n->op == TRNC_OP_LU_UNPACK && !trnc_arg_bool(n, 3, true)) set_shape(&out[0], a->dtype, 1, &none);
  if (n->op == TRNC_OP_LU_UNPACK && !trnc_arg_bool(n, 2, true))
    for (int i = 1; i < 3; i++) set_shape(&out[i], a->dtype, 1, &none);
  return TRNC_OK;
}

/* linalg_qr(A, mode): Q [..., m, m] (complete) or [..., m, k] (reduced) or
 * an empty [0] (r); R [..., m, n] (complete) or [..., k, n], k = min(m, n). */
trnc_status rule_linalg_qr(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, false, d);
  if (st) return st;
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_arg *mode = n->nargs > 1 ? &n->args[1] : NULL;
  const char *m_ = mode && mode->kind == TRNC_ARG_STR ? mode->u.s : "reduced";
  CHECK(!strcmp(m_, "reduced") || !strcmp(m_, "complete") || !strcmp(m_, "r"),
        "%s: mode must be 'reduced', 'complete' or 'r', got '%s'", n->target, m_);
  int64_t m = a->shape[a->rank - 2], c = a->shape[a->rank - 1], k = m < c ? m : c;
  bool complete = !strcmp(m_, "complete");
  int64_t q[2] = {m, complete ? m : k}, r[2] = {complete ? m : k, c}, none = 0;
  if (!strcmp(m_, "r"))
    set_shape(&out[0], a->dtype, 1, &none);
  else
    batch_with(&out[0], a, a->dtype, 2, q);
  batch_with(&out[1], a, a->dtype, 2, r);
  return TRNC_OK;
}

/* _linalg_eigh(A, UPLO, compute_v): eigenvalues [..., n], eigenvectors
 * [..., n, n] (an empty [0] without compute_v). */
trnc_status rule_linalg_eigh(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                             trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, true, d);
  if (st) return st;
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  int64_t k = a->shape[a->rank - 1], none = 0;
  batch_with(&out[0], a, a->dtype, 1, &k);
  if (trnc_arg_bool(n, 2, true))
    copy_shape(&out[1], a, a->dtype);
  else
    set_shape(&out[1], a->dtype, 1, &none);
  return TRNC_OK;
}

/* _linalg_svd(A, full_matrices, compute_uv): U [..., m, m or k], S [..., k],
 * Vh [..., n or k, n] (U and Vh an empty [0] without compute_uv). */
trnc_status rule_linalg_svd(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                            trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, false, d);
  if (st) return st;
  CHECK(nout == 3, "%s has 3 outputs, the graph declares %u", n->target, nout);
  int64_t m = a->shape[a->rank - 2], c = a->shape[a->rank - 1], k = m < c ? m : c, none = 0;
  bool full = trnc_arg_bool(n, 1, false);
  int64_t u[2] = {m, full ? m : k}, vh[2] = {full ? c : k, c};
  batch_with(&out[1], a, a->dtype, 1, &k);
  if (trnc_arg_bool(n, 2, true)) {
    batch_with(&out[0], a, a->dtype, 2, u);
    batch_with(&out[2], a, a->dtype, 2, vh);
  } else {
    set_shape(&out[0], a->dtype, 1, &none);
    set_shape(&out[2], a->dtype, 1, &none);
  }
  return TRNC_OK;
}

/* linalg_pinv(A [..., m, n], atol, rtol): [..., n, m]. */
trnc_status rule_linalg_pinv(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                             trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0);
  trnc_status st = matrices(n, a, false, d);
  if (st) return st;
  int64_t p[2] = {a->shape[a->rank - 1], a->shape[a->rank - 2]};
  batch_with(&out[0], a, a->dtype, 2, p);
  return TRNC_OK;
}

/* nonzero_static(self, size, fill_value): [size, rank of self] int64. */
trnc_status rule_nonzero_static(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                                trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t s[2] = {trnc_arg_int(n, 1, 0), x->rank};
  CHECK(s[0] >= 0, "nonzero_static: size must be non-negative, got %lld", (long long)s[0]);
  set_shape(&out[0], TRNC_I64, 2, s);
  return TRNC_OK;
}

/* histc(self, bins, min, max): [bins] of self's dtype. */
trnc_status rule_histc(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t bins = trnc_arg_int(n, 1, 100);
  CHECK(bins > 0, "histc: bins must be positive, got %lld", (long long)bins);
  set_shape(&out[0], x->dtype, 1, &bins);
  return TRNC_OK;
}

/* transformers::grouped_mm_fallback(input [S,K], weight [E,K,N], offs [E]):
 * [S,N] of input's dtype. */
trnc_status rule_grouped_mm(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *w = targ(g, n, 1), *o = targ(g, n, 2);
  CHECK(x->rank == 2 && w->rank == 3 && o->rank == 1,
        "grouped_mm_fallback: input must be 2-D, weight 3-D and offs 1-D, got ranks %d, %d, %d",
        x->rank, w->rank, o->rank);
  CHECK(w->shape[1] == x->shape[1] && o->shape[0] == w->shape[0],
        "grouped_mm_fallback: input [%lld,%lld], weight [%lld,%lld,%lld] and offs [%lld] do not "
        "match", (long long)x->shape[0], (long long)x->shape[1], (long long)w->shape[0],
        (long long)w->shape[1], (long long)w->shape[2], (long long)o->shape[0]);
  CHECK(x->dtype == w->dtype, "grouped_mm_fallback: input and weight dtypes differ");
  int64_t s[2] = {x->shape[0], w->shape[2]};
  set_shape(&out[0], x->dtype, 2, s);
  return TRNC_OK;
}

/* grouped_mm_fallback_backward(input, weight, offs, grad_output): (grad of
 * input, grad of weight), each of its operand's shape. */
trnc_status rule_grouped_mm_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  trnc_type y = {0};
  trnc_status s = rule_grouped_mm(g, n, &y, 1, d);
  if (s) return s;
  const trnc_type *go = targ(g, n, 3);
  CHECK(go->rank == 2 && go->shape[0] == y.shape[0] && go->shape[1] == y.shape[1] &&
            go->dtype == y.dtype,
        "grouped_mm_fallback_backward: grad_output must be [%lld,%lld] of the input's dtype",
        (long long)y.shape[0], (long long)y.shape[1]);
  copy_shape(&out[0], targ(g, n, 0), y.dtype);
  copy_shape(&out[1], targ(g, n, 1), y.dtype);
  return TRNC_OK;
}

trnc_status rule_reduce_all(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  trnc_dtype dt = (n->op == TRNC_OP_SUM_ALL && dt_category(x->dtype) <= 1) ? TRNC_I64 : x->dtype;
  out[0].dtype = dtarg(n, 1, dt);
  out[0].rank = 0;
  return TRNC_OK;
}

trnc_status rule_reduce_keep(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dims[TRNC_MAX_RANK] = {0};
  int nd = ilist(n, 1, dims, TRNC_MAX_RANK);
  CHECK(nd >= 0, "reduction: dim must be a list of at most %d ints", TRNC_MAX_RANK);
  out[0].dtype = x->dtype;
  return reduce_shape(n, x, dims, nd, trnc_arg_bool(n, 2, false), &out[0], d);
}

trnc_status rule_argmax(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 1, 0);
  out[0].dtype = TRNC_I64;
  return reduce_shape(n, x, &dim, is_none(n, 1) ? 0 : 1, trnc_arg_bool(n, 2, false), &out[0], d);
}

/* max.dim / min.dim / median.dim / nanmedian.dim / mode (self, dim, keepdim)
 * and kthvalue (self, k, dim, keepdim): (values: self's dtype, indices:
 * int64), reduced over one dim. */
trnc_status rule_minmax_dim(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  CHECK(nout == 2, "%s has 2 outputs, the graph declares %u", n->target, nout);
  const trnc_type *x = targ(g, n, 0);
  uint32_t a = n->op == TRNC_OP_KTHVALUE ? 2 : 1;
  int64_t dim = trnc_arg_int(n, a, n->op == TRNC_OP_MODE || a == 2 ? -1 : 0);
  if (n->op == TRNC_OP_KTHVALUE) {
    int64_t k = trnc_arg_int(n, 1, 0), w = dim;
    CHECK(wrap_dim(&w, x->rank), "kthvalue: dim %lld out of range for rank %d", (long long)dim,
          x->rank);
    int64_t len = x->rank ? x->shape[w] : 1;
    CHECK(k >= 1 && k <= len, "kthvalue: k = %lld out of range for a dim of %lld", (long long)k,
          (long long)len);
  }
  trnc_status s = reduce_shape(n, x, &dim, 1, trnc_arg_bool(n, a + 1, false), &out[0], d);
  out[0].dtype = x->dtype;
  with_indices(out);
  return s;
}

/* any / all (.dim, .dims, .default): bool (uint8 for uint8 input, as eager),
 * reduced over the dims of argument 1 (an int, a list, or None / absent:
 * every dim). */
trnc_status rule_any_all(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dims[TRNC_MAX_RANK] = {0};
  int nd = ilist(n, 1, dims, TRNC_MAX_RANK);
  CHECK(nd >= 0 || is_none(n, 1), "%s: dim must be an int or a list of at most %d ints", n->target,
        TRNC_MAX_RANK);
  out[0].dtype = x->dtype == TRNC_U8 ? TRNC_U8 : TRNC_BOOL;
  return reduce_shape(n, x, dims, nd, trnc_arg_bool(n, 2, false), &out[0], d);
}

trnc_status rule_var(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                     trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dims[TRNC_MAX_RANK] = {0};
  int nd = ilist(n, 1, dims, TRNC_MAX_RANK);
  CHECK(nd >= 0 || is_none(n, 1), "var: dim must be a list of at most %d ints", TRNC_MAX_RANK);
  trnc_status s = reduce_shape(n, x, dims, nd, trnc_arg_bool(n, 3, false), &out[0], d);
  out[0].dtype = x->dtype;
  for (uint32_t k = 1; k < nout; k++) out[k] = out[0];
  return s;
}

trnc_status rule_var_mean(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                          uint32_t nout, trnc_diags *d) {
  CHECK(nout == 2, "var_mean has 2 outputs, the graph declares %u", nout);
  return rule_var(g, n, out, nout, d);
}

/* ---- normalization ----------------------------------------------------------------- */

trnc_status rule_softmax(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "softmax dim %lld out of range for rank %d",
        (long long)trnc_arg_int(n, 1, 0), x->rank);
  copy_shape(&out[0], x, trnc_arg_bool(n, 2, false) ? TRNC_F32 : x->dtype);
  return TRNC_OK;
}

trnc_status rule_softmax_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *y = targ(g, n, 1);
  CHECK(trnc_type_same_shape(go, y) || (go->rank == y->rank &&
        !memcmp(go->shape, y->shape, sizeof(int64_t) * go->rank)),
        "softmax backward: grad_output and output shapes differ");
  int64_t dim = trnc_arg_int(n, 2, 0);
  CHECK(wrap_dim(&dim, go->rank), "softmax backward dim out of range");
  copy_shape(&out[0], go, dtarg(n, 3, go->dtype));
  return TRNC_OK;
}

/* Shape checks shared by layer norm forward/backward: returns the number of
 * leading (batch) dims M, or -1 with a diagnostic. */
static int ln_axis(const trnc_graph *g, const trnc_node *n, const trnc_type *x, uint32_t ns_arg,
                   trnc_diags *d) {
  int64_t ns[TRNC_MAX_RANK];
  int k = ilist(n, ns_arg, ns, TRNC_MAX_RANK);
  if (k < 0 || k > x->rank) {
    fail(n, d, "layer_norm: normalized_shape has more dims than the input");
    return -1;
  }
  int axis = x->rank - k;
  for (int i = 0; i < k; i++)
    if (x->shape[axis + i] != ns[i]) {
      fail(n, d, "layer_norm: normalized_shape dim %d is %lld, input dim is %lld", i,
           (long long)ns[i], (long long)x->shape[axis + i]);
      return -1;
    }
  return axis;
}

static bool ln_param_ok(const trnc_type *p, const trnc_type *x, int axis) {
  if (!p) return true;
  int64_t numel = 1;
  for (int i = axis; i < x->rank; i++) numel *= x->shape[i];
  return trnc_type_numel(p) == numel;
}

trnc_status rule_layer_norm(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "native_layer_norm has 3 outputs, the graph declares %u", nout);
  const trnc_type *x = targ(g, n, 0);
  int axis = ln_axis(g, n, x, 1, d);
  if (axis < 0) return TRNC_ERR_INVALID_GRAPH;
  CHECK(ln_param_ok(targ(g, n, 2), x, axis) && ln_param_ok(targ(g, n, 3), x, axis),
        "layer_norm: weight/bias size does not match normalized_shape");
  copy_shape(&out[0], x, x->dtype);
  for (int k = 1; k < 3; k++) {
    copy_shape(&out[k], x, TRNC_DTYPE_INVALID);
    for (int i = axis; i < x->rank; i++) out[k].shape[i] = 1;
  }
  return TRNC_OK;
}

/* native_group_norm(input [N, C, *], weight [C]?, bias [C]?, N, C, HxW,
 * group, eps) -> (out like input, mean [N, group], rstd [N, group]). */
trnc_status rule_group_norm(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "native_group_norm has 3 outputs, the graph declares %u", nout);
  const trnc_type *x = targ(g, n, 0);
  CHECK(x->rank >= 2, "group_norm: input must have at least 2 dims, got %d", x->rank);
  int64_t N = trnc_arg_int(n, 3, -1), C = trnc_arg_int(n, 4, -1), hw = trnc_arg_int(n, 5, -1);
  int64_t groups = trnc_arg_int(n, 6, 0), spatial = 1;
  for (int i = 2; i < x->rank; i++) spatial *= x->shape[i];
  CHECK(N == x->shape[0] && C == x->shape[1] && hw == spatial,
        "group_norm: N, C, HxW (%lld, %lld, %lld) do not match the input", (long long)N,
        (long long)C, (long long)hw);
  CHECK(groups > 0 && C % groups == 0, "group_norm: %lld channels do not split into %lld groups",
        (long long)C, (long long)groups);
  for (uint32_t a = 1; a <= 2; a++) {
    const trnc_type *p = targ(g, n, a);
    CHECK(!p || (p->rank == 1 && p->shape[0] == C), "group_norm: weight/bias must be [%lld]",
          (long long)C);
  }
  copy_shape(&out[0], x, x->dtype);
  int64_t stat[2] = {N, groups};
  set_shape(&out[1], TRNC_DTYPE_INVALID, 2, stat);
  set_shape(&out[2], TRNC_DTYPE_INVALID, 2, stat);
  return TRNC_OK;
}

static void masked_out(const trnc_node *n, uint32_t mask_arg, int k, trnc_type *out,
                       const trnc_type *like) {
  const trnc_arg *m = trnc_node_arg(n, mask_arg);
  bool on = !(m && m->kind == TRNC_ARG_LIST && (uint32_t)k < m->u.list.n &&
              m->u.list.items[k].kind == TRNC_ARG_BOOL && !m->u.list.items[k].u.b);
  if (!on || !like) set_none(out);
  else copy_shape(out, like, like->dtype);
}

/* native_group_norm_backward(grad_out, input, mean [N,G], rstd [N,G], weight?,
 * N, C, HxW, group, output_mask): (grad_input: input's type, grad_weight
 * [C], grad_bias [C]), None where output_mask is false. */
trnc_status rule_group_norm_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "native_group_norm_backward has 3 outputs, the graph declares %u", nout);
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *w = targ(g, n, 4);
  CHECK(x->rank >= 2 && go->rank == x->rank &&
            !memcmp(go->shape, x->shape, sizeof(int64_t) * x->rank),
        "group_norm backward: grad_out and input shapes differ");
  int64_t N = trnc_arg_int(n, 5, -1), C = trnc_arg_int(n, 6, -1), hw = trnc_arg_int(n, 7, -1);
  int64_t groups = trnc_arg_int(n, 8, 0), spatial = 1;
  for (int i = 2; i < x->rank; i++) spatial *= x->shape[i];
  CHECK(N == x->shape[0] && C == x->shape[1] && hw == spatial && groups > 0 && C % groups == 0,
        "group_norm backward: N, C, HxW, group (%lld, %lld, %lld, %lld) do not match the input",
        (long long)N, (long long)C, (long long)hw, (long long)groups);
  for (uint32_t a = 2; a <= 3; a++) {
    const trnc_type *st = targ(g, n, a);
    CHECK(st && trnc_type_numel(st) == N * groups, "group_norm backward: mean/rstd must hold "
          "N x group = %lld values", (long long)(N * groups));
  }
  CHECK(!w || (w->rank == 1 && w->shape[0] == C), "group_norm backward: weight must be [%lld]",
        (long long)C);
  trnc_type cvec = {.dtype = w ? w->dtype : x->dtype, .rank = 1, .shape = {C}};
  masked_out(n, 9, 0, &out[0], x);
  masked_out(n, 9, 1, &out[1], &cvec);
  masked_out(n, 9, 2, &out[2], &cvec);
  return TRNC_OK;
}

trnc_status rule_layer_norm_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "native_layer_norm_backward has 3 outputs, the graph declares %u", nout);
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1);
  CHECK(go->rank == x->rank && !memcmp(go->shape, x->shape, sizeof(int64_t) * x->rank),
        "layer_norm backward: grad_out and input shapes differ");
  if (ln_axis(g, n, x, 2, d) < 0) return TRNC_ERR_INVALID_GRAPH;
  masked_out(n, 7, 0, &out[0], x);
  masked_out(n, 7, 1, &out[1], targ(g, n, 5));
  masked_out(n, 7, 2, &out[2], targ(g, n, 6));
  return TRNC_OK;
}

static trnc_status bn_common(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, bool training, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  CHECK(x->rank >= 2, "batch_norm: input must have at least 2 dims (N, C, ...)");
  int64_t c = x->shape[1];
  for (uint32_t i = 1; i <= 4; i++) {
    const trnc_type *p = targ(g, n, i);
    CHECK(!p || (p->rank == 1 && p->shape[0] == c),
          "batch_norm: argument %u must have shape [%lld]", i, (long long)c);
  }
  copy_shape(&out[0], x, x->dtype);
  for (uint32_t k = 1; k < nout; k++) {
    out[k].dtype = TRNC_DTYPE_INVALID;
    out[k].rank = 1;
    out[k].shape[0] = (k <= 2 && !training) ? -1 : c;
  }
  return TRNC_OK;
}

trnc_status rule_bn_functional(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  CHECK(nout == 5, "batch_norm (functional) has 5 outputs, the graph declares %u", nout);
  return bn_common(g, n, out, nout, trnc_arg_bool(n, 5, true), d);
}

/* _native_batch_norm_legit.no_stats: output, save_mean, save_invstd ([C]). */
trnc_status rule_bn_no_stats(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "batch_norm (no stats) has 3 outputs, the graph declares %u", nout);
  return bn_common(g, n, out, nout, true, d);
}

trnc_status rule_bn_no_training(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "batch_norm (no training) has 3 outputs, the graph declares %u", nout);
  return bn_common(g, n, out, nout, false, d);
}

trnc_status rule_bn_backward(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                             uint32_t nout, trnc_diags *d) {
  CHECK(nout == 3, "batch_norm backward has 3 outputs, the graph declares %u", nout);
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1);
  CHECK(x->rank >= 2 && go->rank == x->rank &&
            !memcmp(go->shape, x->shape, sizeof(int64_t) * x->rank),
        "batch_norm backward: grad_out and input shapes differ");
  trnc_type cvec = {.dtype = TRNC_DTYPE_INVALID, .rank = 1, .shape = {x->shape[1]}};
  const trnc_type *w = targ(g, n, 2);
  if (w) cvec.dtype = w->dtype;
  masked_out(n, 9, 0, &out[0], x);
  masked_out(n, 9, 1, &out[1], &cvec);
  masked_out(n, 9, 2, &out[2], &cvec);
  return TRNC_OK;
}

/* ---- matmul ---------------------------------------------------------------------------- */

trnc_status rule_mm(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                    trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0), *b = targ(g, n, 1);
  CHECK(a->rank == 2 && b->rank == 2, "mm: operands must be 2-D, got rank %d and %d", a->rank,
        b->rank);
  CHECK(a->shape[1] == b->shape[0], "mm: inner dims differ (%lld vs %lld)",
        (long long)a->shape[1], (long long)b->shape[0]);
  CHECK(a->dtype == b->dtype, "mm: operand dtypes differ (%s vs %s)", trnc_dtype_name(a->dtype),
        trnc_dtype_name(b->dtype));
  int64_t s[2] = {a->shape[0], b->shape[1]};
  set_shape(&out[0], a->dtype, 2, s);
  return TRNC_OK;
}

trnc_status rule_bmm(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                     trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0), *b = targ(g, n, 1);
  CHECK(a->rank == 3 && b->rank == 3, "bmm: operands must be 3-D, got rank %d and %d", a->rank,
        b->rank);
  CHECK(a->shape[0] == b->shape[0] && a->shape[2] == b->shape[1],
        "bmm: shapes [%lld,%lld,%lld] and [%lld,%lld,%lld] do not multiply",
        (long long)a->shape[0], (long long)a->shape[1], (long long)a->shape[2],
        (long long)b->shape[0], (long long)b->shape[1], (long long)b->shape[2]);
  CHECK(a->dtype == b->dtype, "bmm: operand dtypes differ");
  int64_t s[3] = {a->shape[0], a->shape[1], b->shape[2]};
  set_shape(&out[0], a->dtype, 3, s);
  return TRNC_OK;
}

/* ---- attention ------------------------------------------------------------------------- */

/* Shapes shared by the CPU flash-attention forward and backward: query
 * [B,Hq,L,E], key [B,Hk,S,E], value [B,Hk,S,E] with Hq a multiple of Hk
 * (grouped-query heads), one dtype; attn_mask (argument `mask_arg`, may be
 * None) broadcasts to [B,Hq,L,S]. */
static trnc_status sdpa_operands(const trnc_graph *g, const trnc_node *n, uint32_t q_arg,
                                 uint32_t mask_arg, trnc_diags *d) {
  const trnc_type *q = targ(g, n, q_arg), *k = targ(g, n, q_arg + 1), *v = targ(g, n, q_arg + 2);
  CHECK(q->rank == 4 && k->rank == 4 && v->rank == 4,
        "scaled_dot_product_attention: query, key and value must be 4-D, got rank %d, %d, %d",
        q->rank, k->rank, v->rank);
  CHECK(q->dtype == k->dtype && q->dtype == v->dtype,
        "scaled_dot_product_attention: query, key and value dtypes differ");
  CHECK(k->shape[0] == q->shape[0] && v->shape[0] == q->shape[0] && v->shape[1] == k->shape[1] &&
        v->shape[2] == k->shape[2] && k->shape[3] == q->shape[3] && v->shape[3] == q->shape[3],
        "scaled_dot_product_attention: query [%lld,%lld,%lld,%lld], key [%lld,%lld,%lld,%lld] and "
        "value [%lld,%lld,%lld,%lld] do not match",
        (long long)q->shape[0], (long long)q->shape[1], (long long)q->shape[2],
        (long long)q->shape[3], (long long)k->shape[0], (long long)k->shape[1],
        (long long)k->shape[2], (long long)k->shape[3], (long long)v->shape[0],
        (long long)v->shape[1], (long long)v->shape[2], (long long)v->shape[3]);
  CHECK(k->shape[1] > 0 && q->shape[1] % k->shape[1] == 0,
        "scaled_dot_product_attention: %lld query heads are not a multiple of %lld key heads",
        (long long)q->shape[1], (long long)k->shape[1]);
  const trnc_type *m = targ(g, n, mask_arg);
  if (m) {
    int64_t full[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
    CHECK(m->rank <= 4, "scaled_dot_product_attention: attn_mask has rank %d", m->rank);
    for (int i = 0; i < m->rank; i++)
      CHECK(m->shape[i] == 1 || m->shape[i] == full[4 - m->rank + i],
            "scaled_dot_product_attention: attn_mask does not broadcast to [%lld,%lld,%lld,%lld]",
            (long long)full[0], (long long)full[1], (long long)full[2], (long long)full[3]);
  }
  return TRNC_OK;
}

/* float32 for half dtypes (torch's computation dtype), else the dtype. */
static trnc_dtype computation_dtype(trnc_dtype t) {
  return t == TRNC_F16 || t == TRNC_BF16 ? TRNC_F32 : t;
}

trnc_status rule_sdpa(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  trnc_status st = sdpa_operands(g, n, 0, 5, d);
  if (st) return st;
  const trnc_type *q = targ(g, n, 0);
  copy_shape(&out[0], q, q->dtype);
  set_shape(&out[1], computation_dtype(q->dtype), 3, q->shape);
  return TRNC_OK;
}

trnc_status rule_sdpa_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  trnc_status st = sdpa_operands(g, n, 1, 8, d);
  if (st) return st;
  const trnc_type *go = targ(g, n, 0), *q = targ(g, n, 1), *o = targ(g, n, 4), *l = targ(g, n, 5);
  CHECK(trnc_type_same_shape(go, q) && trnc_type_same_shape(o, q),
        "scaled_dot_product_attention backward: grad_out and out must match the query");
  CHECK(l->rank == 3 && !memcmp(l->shape, q->shape, 3 * sizeof(int64_t)) &&
        l->dtype == computation_dtype(q->dtype),
        "scaled_dot_product_attention backward: logsumexp must be %s[%lld,%lld,%lld]",
        trnc_dtype_name(computation_dtype(q->dtype)), (long long)q->shape[0],
        (long long)q->shape[1], (long long)q->shape[2]);
  for (int i = 0; i < 3; i++) {
    const trnc_type *x = targ(g, n, (uint32_t)(1 + i));
    copy_shape(&out[i], x, x->dtype);
  }
  return TRNC_OK;
}

static trnc_status bias_broadcasts(const trnc_node *n, const trnc_type *bias, const trnc_type *o,
                                   trnc_diags *d) {
  CHECK(bias->rank <= o->rank, "bias has more dims than the product");
  for (int i = 0; i < bias->rank; i++) {
    int64_t s = bias->shape[i], t = o->shape[o->rank - bias->rank + i];
    CHECK(s == t || s == 1, "bias shape does not broadcast to the product shape");
  }
  return TRNC_OK;
}

trnc_status rule_addmm(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  trnc_node m = *n;
  m.args = n->args + 1;
  m.nargs = 2;
  trnc_status s = rule_mm(g, &m, out, nout, d);
  return s ? s : bias_broadcasts(n, targ(g, n, 0), &out[0], d);
}

trnc_status rule_baddbmm(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  trnc_node m = *n;
  m.args = n->args + 1;
  m.nargs = 2;
  trnc_status s = rule_bmm(g, &m, out, nout, d);
  return s ? s : bias_broadcasts(n, targ(g, n, 0), &out[0], d);
}

/* addbmm(self, batch1 [B,N,M], batch2 [B,M,P], beta, alpha): [N,P], self
 * broadcast to it. */
trnc_status rule_addbmm(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  trnc_node m = *n;
  m.args = n->args + 1;
  m.nargs = 2;
  trnc_type t = {0};
  trnc_status s = rule_bmm(g, &m, &t, 1, d);
  if (s) return s;
  set_shape(&out[0], t.dtype, 2, t.shape + 1);
  return bias_broadcasts(n, targ(g, n, 0), &out[0], d);
}

/* ---- convolution --------------------------------------------------------------------------- */

/* Reads an int list of length 1 or `sp` (spatial dims) into v[sp]. */
static bool spatial_list(const trnc_node *n, uint32_t i, int sp, int64_t dflt, int64_t *v) {
  int64_t tmp[TRNC_MAX_RANK];
  int k = ilist(n, i, tmp, TRNC_MAX_RANK);
  if (k == 0) {
    for (int j = 0; j < sp; j++) v[j] = dflt;
    return true;
  }
  if (k == 1) {
    for (int j = 0; j < sp; j++) v[j] = tmp[0];
    return true;
  }
  if (k != sp) return false;
  memcpy(v, tmp, sizeof(int64_t) * (size_t)sp);
  return true;
}

/* Output spatial sizes of convolution; args at input/weight/stride/... . */
static trnc_status conv_out(const trnc_node *n, const trnc_type *x, const trnc_type *w,
                            uint32_t a_stride, bool transposed, uint32_t a_outpad, int64_t groups,
                            int64_t *o, trnc_diags *d) {
  int sp = x->rank - 2;
  CHECK(sp >= 1 && sp <= 3 && w->rank == x->rank,
        "convolution: input rank %d and weight rank %d are not a 1-D/2-D/3-D convolution",
        x->rank, w->rank);
  CHECK(groups >= 1, "convolution: groups must be >= 1");
  int64_t st[3], pad[3], dil[3], op[3] = {0, 0, 0};
  CHECK(spatial_list(n, a_stride, sp, 1, st) && spatial_list(n, a_stride + 1, sp, 0, pad) &&
            spatial_list(n, a_stride + 2, sp, 1, dil) &&
            (!transposed || spatial_list(n, a_outpad, sp, 0, op)),
        "convolution: stride/padding/dilation must have 1 or %d entries", sp);
  int64_t cin = x->shape[1];
  if (!transposed) {
    CHECK(cin == w->shape[1] * groups, "convolution: input has %lld channels, weight expects %lld",
          (long long)cin, (long long)(w->shape[1] * groups));
    CHECK(w->shape[0] % groups == 0, "convolution: out channels not divisible by groups");
    o[1] = w->shape[0];
  } else {
    CHECK(cin == w->shape[0], "transposed convolution: channel mismatch");
    o[1] = w->shape[1] * groups;
  }
  o[0] = x->shape[0];
  for (int j = 0; j < sp; j++) {
    CHECK(st[j] >= 1 && dil[j] >= 1 && pad[j] >= 0, "convolution: stride and dilation must be "
          ">= 1 and padding >= 0");
    int64_t k = w->shape[2 + j], in = x->shape[2 + j];
    if (!transposed) {
      int64_t eff = in + 2 * pad[j] - dil[j] * (k - 1) - 1;
      CHECK(eff >= 0, "convolution: kernel larger than padded input in spatial dim %d", j);
      o[2 + j] = eff / st[j] + 1;
    } else {
      o[2 + j] = (in - 1) * st[j] - 2 * pad[j] + dil[j] * (k - 1) + op[j] + 1;
    }
  }
  return TRNC_OK;
}

trnc_status rule_conv(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *w = targ(g, n, 1), *b = targ(g, n, 2);
  int64_t o[TRNC_MAX_RANK];
  bool tr = trnc_arg_bool(n, 6, false);
  trnc_status s = conv_out(n, x, w, 3, tr, 7, trnc_arg_int(n, 8, 1), o, d);
  if (s) return s;
  CHECK(!b || (b->rank == 1 && b->shape[0] == o[1]), "convolution: bias must have shape [%lld]",
        (long long)o[1]);
  set_shape(&out[0], x->dtype, x->rank, o);
  return TRNC_OK;
}

trnc_status rule_conv_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  CHECK(nout == 3, "convolution_backward has 3 outputs, the graph declares %u", nout);
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *w = targ(g, n, 2);
  int64_t o[TRNC_MAX_RANK];
  trnc_status s = conv_out(n, x, w, 4, trnc_arg_bool(n, 7, false), 8, trnc_arg_int(n, 9, 1), o, d);
  if (s) return s;
  CHECK(go->rank == x->rank && !memcmp(go->shape, o, sizeof(int64_t) * x->rank),
        "convolution_backward: grad_output shape does not match the convolution's output");
  trnc_type bias = {.dtype = go->dtype, .rank = 1, .shape = {o[1]}};
  masked_out(n, 10, 0, &out[0], x);
  masked_out(n, 10, 1, &out[1], w);
  masked_out(n, 10, 2, &out[2], is_none(n, 3) ? NULL : &bias);
  return TRNC_OK;
}

/* ---- pooling ------------------------------------------------------------------------------------ */

static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t o = (num >= 0 ? num / st : -((-num + st - 1) / st)) + 1;
  if (ceil && (o - 1) * st >= in + pad) o--;
  return o;
}

/* max/avg pool output over the last sp (2 or 3) dims; arg layout: self,
 * kernel, stride, padding, [dilation]. */
static trnc_status pool_nd(const trnc_node *n, const trnc_type *x, int sp, uint32_t a_k,
                           bool has_dil, bool ceil, trnc_type *out, trnc_diags *d) {
  const char *name = sp == 2 ? "pool2d" : "pool3d";
  CHECK(x->rank == sp + 1 || x->rank == sp + 2, "%s: input must be %d-D or %d-D, got rank %d",
        name, sp + 1, sp + 2, x->rank);
  int64_t k[3], st[3], pad[3], dil[3] = {1, 1, 1};
  CHECK(spatial_list(n, a_k, sp, 1, k), "%s: kernel_size must have 1 or %d entries", name, sp);
  int64_t tmp[TRNC_MAX_RANK];
  if (ilist(n, a_k + 1, tmp, TRNC_MAX_RANK) == 0) memcpy(st, k, sizeof st);
  else CHECK(spatial_list(n, a_k + 1, sp, 1, st), "%s: stride must have 1 or %d entries", name, sp);
  CHECK(spatial_list(n, a_k + 2, sp, 0, pad), "%s: padding must have 1 or %d entries", name, sp);
  if (has_dil)
    CHECK(spatial_list(n, a_k + 3, sp, 1, dil), "%s: dilation must have 1 or %d entries", name, sp);
  for (int j = 0; j < sp; j++) {
    CHECK(k[j] >= 1 && st[j] >= 1 && dil[j] >= 1 && pad[j] >= 0 && pad[j] * 2 <= k[j],
          "%s: need kernel, stride, dilation >= 1 and padding <= kernel/2", name);
  }
  copy_shape(out, x, x->dtype);
  for (int j = 0; j < sp; j++) {
    int64_t o = pool_out(x->shape[x->rank - sp + j], k[j], pad[j], st[j], dil[j], ceil);
    CHECK(o > 0, "%s: output size would be %lld", name, (long long)o);
    out->shape[x->rank - sp + j] = o;
  }
  return TRNC_OK;
}

static trnc_status pool2d(const trnc_node *n, const trnc_type *x, uint32_t a_k, bool has_dil,
                          bool ceil, trnc_type *out, trnc_diags *d) {
  return pool_nd(n, x, 2, a_k, has_dil, ceil, out, d);
}

/* max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
trnc_status rule_maxpool3d(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  CHECK(nout == 2, "max_pool3d_with_indices has 2 outputs, the graph declares %u", nout);
  trnc_status s = pool_nd(n, targ(g, n, 0), 3, 1, true, trnc_arg_bool(n, 5, false), &out[0], d);
  with_indices(out);
  return s;
}

/* The input gradient of a pooling with indices: grad_output and indices of
 * the pooled shape (computed by the caller), the result of self's shape. */
static trnc_status pool_grad_by_indices(const trnc_node *n, const trnc_type *go, const trnc_type *x,
                                        const trnc_type *idx, const trnc_type *pooled,
                                        trnc_type *out, trnc_diags *d) {
  CHECK(go->rank == pooled->rank && !memcmp(go->shape, pooled->shape, sizeof(int64_t) * go->rank),
        "pooling backward: grad_output shape does not match the pooled shape");
  CHECK(idx->rank == go->rank && !memcmp(idx->shape, go->shape, sizeof(int64_t) * go->rank),
        "pooling backward: indices shape differs from grad_output");
  copy_shape(out, x, go->dtype);
  return TRNC_OK;
}

/* max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
 * dilation, ceil_mode, indices) */
trnc_status rule_maxpool3d_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                              uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *idx = targ(g, n, 7);
  trnc_type pooled = {0};
  trnc_status s = pool_nd(n, x, 3, 2, true, trnc_arg_bool(n, 6, false), &pooled, d);
  return s ? s : pool_grad_by_indices(n, go, x, idx, &pooled, &out[0], d);
}

/* adaptive_max_pool2d / adaptive_max_pool3d output over the last sp dims. */
static trnc_status adaptive_out(const trnc_node *n, const trnc_type *x, int sp, trnc_type *out,
                                trnc_diags *d) {
  CHECK(x->rank == sp + 1 || x->rank == sp + 2, "adaptive pooling: input must be %d-D or %d-D",
        sp + 1, sp + 2);
  int64_t os[3];
  CHECK(spatial_list(n, 1, sp, 1, os), "adaptive pooling: output_size must have 1 or %d entries", sp);
  copy_shape(out, x, x->dtype);
  for (int j = 0; j < sp; j++) {
    CHECK(os[j] >= 0, "adaptive pooling: output_size must be non-negative");
    out->shape[x->rank - sp + j] = os[j];
  }
  return TRNC_OK;
}

/* adaptive_max_pool2d / adaptive_max_pool3d(self, output_size) -> (values, indices) */
trnc_status rule_adaptive_maxpool(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                  uint32_t nout, trnc_diags *d) {
  CHECK(nout == 2, "adaptive_max_pool has 2 outputs, the graph declares %u", nout);
  int sp = n->op == TRNC_OP_ADAPTIVE_MAX_POOL3D ? 3 : 2;
  trnc_status s = adaptive_out(n, targ(g, n, 0), sp, &out[0], d);
  with_indices(out);
  return s;
}

/* avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
 * divisor_override) */
trnc_status rule_avgpool3d(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  return pool_nd(n, targ(g, n, 0), 3, 1, false, trnc_arg_bool(n, 4, false), &out[0], d);
}

/* _adaptive_avg_pool3d(self, output_size) */
trnc_status rule_adaptive_avgpool3d(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                    uint32_t nout, trnc_diags *d) {
  return adaptive_out(n, targ(g, n, 0), 3, &out[0], d);
}

/* adaptive_max_pool{2,3}d_backward(grad_output, self, indices) */
trnc_status rule_adaptive_maxpool_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                     uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *idx = targ(g, n, 2);
  CHECK(go->rank == x->rank, "adaptive_max_pool backward: grad_output and input ranks differ");
  int sp = n->op == TRNC_OP_ADAPTIVE_MAX_POOL3D_BACKWARD ? 3 : 2;
  CHECK(x->rank >= sp + 1 && !memcmp(go->shape, x->shape, sizeof(int64_t) * (size_t)(x->rank - sp)),
        "adaptive_max_pool backward: grad_output and input differ in batch/channel dims");
  return pool_grad_by_indices(n, go, x, idx, go, &out[0], d);
}

trnc_status rule_maxpool(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  CHECK(nout == 2, "max_pool2d_with_indices has 2 outputs, the graph declares %u", nout);
  trnc_status s = pool2d(n, targ(g, n, 0), 1, true, trnc_arg_bool(n, 5, false), &out[0], d);
  out[1] = out[0];
  out[1].dtype = TRNC_I64;
  return s;
}

trnc_status rule_maxpool_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *idx = targ(g, n, 7);
  trnc_type pooled = {0};
  trnc_status s = pool2d(n, x, 2, true, trnc_arg_bool(n, 6, false), &pooled, d);
  if (s) return s;
  CHECK(trnc_type_same_shape(&pooled, go) || (go->rank == pooled.rank &&
        !memcmp(go->shape, pooled.shape, sizeof(int64_t) * go->rank)),
        "max_pool2d backward: grad_output shape does not match the pooled shape");
  CHECK(idx->rank == go->rank && !memcmp(idx->shape, go->shape, sizeof(int64_t) * go->rank),
        "max_pool2d backward: indices shape differs from grad_output");
  copy_shape(&out[0], x, go->dtype);
  return TRNC_OK;
}

trnc_status rule_avgpool(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  return pool2d(n, targ(g, n, 0), 1, false, trnc_arg_bool(n, 4, false), &out[0], d);
}

/* avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, ...) */
static trnc_status avgpool_bw(const trnc_graph *g, const trnc_node *n, int sp, trnc_type *out,
                              trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1);
  trnc_type pooled = {0};
  trnc_status s = pool_nd(n, x, sp, 2, false, trnc_arg_bool(n, 5, false), &pooled, d);
  if (s) return s;
  CHECK(go->rank == pooled.rank && !memcmp(go->shape, pooled.shape, sizeof(int64_t) * go->rank),
        "avg_pool%dd backward: grad_output shape does not match the pooled shape", sp);
  copy_shape(&out[0], x, go->dtype);
  return TRNC_OK;
}

/* avg_pool2d_backward / avg_pool3d_backward */
trnc_status rule_avgpool_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  return avgpool_bw(g, n, n->op == TRNC_OP_AVG_POOL3D_BACKWARD ? 3 : 2, out, d);
}

trnc_status rule_adaptive_avgpool(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                  uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  CHECK(x->rank == 3 || x->rank == 4, "adaptive_avg_pool2d: input must be 3-D or 4-D");
  int64_t os[2];
  CHECK(spatial_list(n, 1, 2, 1, os) && os[0] >= 0 && os[1] >= 0,
        "adaptive_avg_pool2d: output_size must be 1 or 2 non-negative ints");
  copy_shape(&out[0], x, x->dtype);
  out[0].shape[x->rank - 2] = os[0];
  out[0].shape[x->rank - 1] = os[1];
  return TRNC_OK;
}

/* _adaptive_avg_pool{2,3}d_backward(grad_output, self) */
static trnc_status adaptive_avgpool_bw(const trnc_graph *g, const trnc_node *n, int sp,
                                       trnc_type *out, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1);
  CHECK(go->rank == x->rank && go->rank >= sp + 1 &&
            !memcmp(go->shape, x->shape, sizeof(int64_t) * (size_t)(x->rank - sp)),
        "adaptive_avg_pool%dd backward: grad_output and input differ in batch/channel dims", sp);
  copy_shape(&out[0], x, go->dtype);
  return TRNC_OK;
}

/* _adaptive_avg_pool2d_backward / _adaptive_avg_pool3d_backward */
trnc_status rule_adaptive_avgpool_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                     uint32_t nout, trnc_diags *d) {
  return adaptive_avgpool_bw(g, n, n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD ? 3 : 2, out, d);
}

trnc_status rule_pad(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                     trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t p[2 * TRNC_MAX_RANK];
  int k = ilist(n, 1, p, 2 * TRNC_MAX_RANK);
  CHECK(k >= 0 && k % 2 == 0 && k / 2 <= x->rank,
        "constant_pad_nd: pad must have an even number of entries, at most 2 per dim");
  copy_shape(&out[0], x, x->dtype);
  for (int i = 0; i < k / 2; i++) {
    int dim = x->rank - 1 - i;
    int64_t s = x->shape[dim] + p[2 * i] + p[2 * i + 1];
    CHECK(s >= 0, "constant_pad_nd: dim %d would have negative size", dim);
    out[0].shape[dim] = s;
  }
  return TRNC_OK;
}

/* grid_sampler_2d(input [N, C, H, W], grid [N, Ho, Wo, 2]): [N, C, Ho, Wo] */
trnc_status rule_grid_sampler(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                              trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *gr = targ(g, n, 1);
  CHECK(x->rank == 4 && gr->rank == 4 && gr->shape[3] == 2 && gr->shape[0] == x->shape[0],
        "grid_sampler_2d: input must be [N, C, H, W] and grid [N, Ho, Wo, 2]");
  CHECK(gr->dtype == x->dtype, "grid_sampler_2d: grid and input must have one dtype");
  int64_t s[4] = {x->shape[0], x->shape[1], gr->shape[1], gr->shape[2]};
  set_shape(&out[0], x->dtype, 4, s);
  return TRNC_OK;
}

/* grid_sampler_2d_backward(grad_output [N, C, Ho, Wo], input, grid, ..., output_mask):
 * (input's type, grid's type), None where output_mask is false. */
trnc_status rule_grid_sampler_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                 uint32_t nout, trnc_diags *d) {
  CHECK(nout == 2, "grid_sampler_2d_backward has 2 outputs, the graph declares %u", nout);
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1), *gr = targ(g, n, 2);
  CHECK(x->rank == 4 && gr->rank == 4 && gr->shape[3] == 2 && gr->shape[0] == x->shape[0] && go->rank == 4 &&
            go->shape[0] == x->shape[0] && go->shape[1] == x->shape[1] && go->shape[2] == gr->shape[1] &&
            go->shape[3] == gr->shape[2],
        "grid_sampler_2d_backward: grad_output must be [N, C, Ho, Wo] for input [N, C, H, W] and grid [N, Ho, Wo, 2]");
  masked_out(n, 6, 0, &out[0], x);
  masked_out(n, 6, 1, &out[1], gr);
  return TRNC_OK;
}

/* replication_padNd_backward(grad_output, self, padding): self's shape, the
 * grad's dtype; grad_output must have the padded shape of self. */
trnc_status rule_pad_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *x = targ(g, n, 1);
  int64_t p[2 * TRNC_MAX_RANK];
  int k = ilist(n, 2, p, 2 * TRNC_MAX_RANK);
  CHECK(k >= 0 && k % 2 == 0 && k / 2 <= x->rank && go->rank == x->rank,
        "%s: padding must have 2 entries per padded dim, grad_output self's rank", trnc_op_name(n->op));
  for (int dim = 0; dim < x->rank; dim++) {
    int i = x->rank - 1 - dim;
    int64_t s = x->shape[dim] + (i < k / 2 ? p[2 * i] + p[2 * i + 1] : 0);
    CHECK(go->shape[dim] == s, "%s: grad_output dim %d is %lld, the padded size is %lld",
          trnc_op_name(n->op), dim, (long long)go->shape[dim], (long long)s);
  }
  copy_shape(&out[0], x, go->dtype);
  return TRNC_OK;
}

/* ---- views --------------------------------------------------------------------------------------- */

static void view_of(trnc_type *o, const trnc_type *x) {
  o->dtype = x->dtype;
  o->offset = x->offset;
}

/* alias: the same tensor, a view with the input's strides and offset. */
trnc_status rule_alias(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  out[0] = *targ(g, n, 0);
  return TRNC_OK;
}

/* torch's computeStride: strides for viewing x as `shape` without a copy,
 * false if impossible. */
static bool view_strides(const trnc_type *x, const int64_t *shape, int rank, int64_t *st) {
  int64_t numel = trnc_type_numel(x);
  if (numel == 0) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
      st[i] = s;
      s *= shape[i] > 1 ? shape[i] : 1;
    }
    return true;
  }
  if (x->rank == 0) { /* a 0-d tensor views as any all-ones shape: strides 1 (torch) */
    for (int i = 0; i < rank; i++) st[i] = 1;
    return true;
  }
  int view_d = rank - 1;
  int64_t chunk_base_stride = x->stride[x->rank - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int td = x->rank - 1; td >= 0; td--) {
    tensor_numel *= x->shape[td];
    if (td == 0 || (x->shape[td - 1] != 1 &&
                    x->stride[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = x->stride[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

trnc_status rule_view(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t s[TRNC_MAX_RANK];
  int k = ilist(n, 1, s, TRNC_MAX_RANK);
  CHECK(k >= 0, "view: size must be a list of at most %d ints", TRNC_MAX_RANK);
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < k; i++) {
    if (s[i] == -1) {
      CHECK(infer < 0, "view: only one dim can be -1");
      infer = i;
    } else {
      CHECK(s[i] >= 0, "view: negative size %lld", (long long)s[i]);
      CHECK(s[i] == 0 || known <= INT64_MAX / s[i], "view: size overflows");
      known *= s[i];
    }
  }
  int64_t numel = trnc_type_numel(x);
  if (infer >= 0) {
    CHECK(known != 0 && numel % known == 0, "view: cannot infer -1 for %lld elements",
          (long long)numel);
    s[infer] = numel / known;
    known = numel;
  }
  CHECK(known == numel, "view: shape has %lld elements, input has %lld", (long long)known,
        (long long)numel);
  set_shape(&out[0], x->dtype, k, s);
  if (n->op == TRNC_OP_VIEW) {
    CHECK(view_strides(x, s, k, out[0].stride),
          "view: input strides are not compatible with the view (torch would need a copy)");
    view_of(&out[0], x);
  } else if ((n->op == TRNC_OP_RESHAPE || n->op == TRNC_OP_UNSAFE_VIEW) &&
             view_strides(x, s, k, out[0].stride)) {
    /* a view where the strides allow it, else a copy (_unsafe_view of a
     * matmul's contiguous operand is free) */
    view_of(&out[0], x);
  }
  return TRNC_OK;
}

/* as_strided: the given sizes and strides over the input's storage; the
 * storage offset defaults to the input's. */
trnc_status rule_as_strided(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                            trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t sz[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int k = ilist(n, 1, sz, TRNC_MAX_RANK), k2 = ilist(n, 2, st, TRNC_MAX_RANK);
  CHECK(k >= 0 && k == k2, "as_strided: size and stride must be int lists of equal length <= %d",
        TRNC_MAX_RANK);
  for (int i = 0; i < k; i++)
    CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided: negative size or stride in dim %d", i);
  out[0].dtype = x->dtype;
  out[0].rank = (uint8_t)k;
  for (int i = 0; i < k; i++) {
    out[0].shape[i] = sz[i];
    out[0].stride[i] = st[i];
  }
  out[0].offset = is_none(n, 3) ? x->offset : trnc_arg_int(n, 3, 0);
  CHECK(out[0].offset >= 0, "as_strided: negative storage offset");
  return TRNC_OK;
}

/* as_strided_scatter: self with the as_strided view (size, stride,
 * storage_offset over self's storage) replaced by src, which has the view's
 * shape. Result: self's shape, contiguous. */
trnc_status rule_as_strided_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                    uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *src = targ(g, n, 1);
  int64_t sz[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int k = ilist(n, 2, sz, TRNC_MAX_RANK), k2 = ilist(n, 3, st, TRNC_MAX_RANK);
  CHECK(k >= 0 && k == k2, "as_strided_scatter: size and stride must be int lists of equal length <= %d",
        TRNC_MAX_RANK);
  CHECK(src->rank == k, "as_strided_scatter: src rank %d differs from the view's %d", src->rank, k);
  for (int i = 0; i < k; i++) {
    CHECK(sz[i] >= 0 && st[i] >= 0, "as_strided_scatter: negative size or stride in dim %d", i);
    CHECK(src->shape[i] == sz[i], "as_strided_scatter: src dim %d is %lld, the view's %lld", i,
          (long long)src->shape[i], (long long)sz[i]);
  }
  CHECK(is_none(n, 4) || trnc_arg_int(n, 4, 0) >= 0, "as_strided_scatter: negative storage offset");
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

trnc_status rule_permute(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t p[TRNC_MAX_RANK];
  int k = ilist(n, 1, p, TRNC_MAX_RANK);
  CHECK(k == x->rank, "permute: %d dims given for a rank-%d tensor", k, x->rank);
  bool seen[TRNC_MAX_RANK] = {false};
  view_of(&out[0], x);
  out[0].rank = x->rank;
  for (int i = 0; i < k; i++) {
    int64_t dim = p[i];
    CHECK(wrap_dim(&dim, x->rank) && !seen[dim], "permute: dims are not a permutation");
    seen[dim] = true;
    out[0].shape[i] = x->shape[dim];
    out[0].stride[i] = x->stride[dim];
  }
  return TRNC_OK;
}

trnc_status rule_transpose(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t a = 0, b = 1;
  if (n->op == TRNC_OP_T) {
    CHECK(x->rank <= 2, "t: input must be at most 2-D");
    if (x->rank < 2) a = b = 0;
  } else {
    a = trnc_arg_int(n, 1, 0);
    b = trnc_arg_int(n, 2, 1);
    CHECK(wrap_dim(&a, x->rank) && wrap_dim(&b, x->rank), "transpose: dim out of range");
  }
  out[0] = *x;
  if (x->rank >= 2 || n->op != TRNC_OP_T) {
    if (x->rank > 0) {
      out[0].shape[a] = x->shape[b];
      out[0].shape[b] = x->shape[a];
      out[0].stride[a] = x->stride[b];
      out[0].stride[b] = x->stride[a];
    }
  }
  return TRNC_OK;
}

trnc_status rule_expand(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t s[TRNC_MAX_RANK];
  int k = ilist(n, 1, s, TRNC_MAX_RANK);
  CHECK(k >= x->rank, "expand: %d sizes given for a rank-%d tensor", k, x->rank);
  view_of(&out[0], x);
  out[0].rank = (uint8_t)k;
  for (int i = k - 1; i >= 0; i--) {
    int xi = i - (k - x->rank);
    if (xi < 0) {
      CHECK(s[i] >= 0, "expand: new leading dims cannot be -1");
      out[0].shape[i] = s[i];
      out[0].stride[i] = 0;
      continue;
    }
    int64_t want = s[i] == -1 ? x->shape[xi] : s[i];
    CHECK(want == x->shape[xi] || x->shape[xi] == 1,
          "expand: dim %d of size %lld cannot expand to %lld", i, (long long)x->shape[xi],
          (long long)want);
    out[0].shape[i] = want;
    out[0].stride[i] = want == x->shape[xi] ? x->stride[xi] : 0;
  }
  return TRNC_OK;
}

trnc_status rule_unsqueeze(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 1, 0);
  if (dim < 0) dim += x->rank + 1;
  CHECK(dim >= 0 && dim <= x->rank && x->rank < TRNC_MAX_RANK, "unsqueeze: dim out of range");
  view_of(&out[0], x);
  out[0].rank = x->rank + 1;
  for (int i = 0, j = 0; i < out[0].rank; i++) {
    if (i == dim) {
      out[0].shape[i] = 1;
      out[0].stride[i] = dim < x->rank ? x->shape[dim] * x->stride[dim] : 1;
    } else {
      out[0].shape[i] = x->shape[j];
      out[0].stride[i] = x->stride[j];
      j++;
    }
  }
  return TRNC_OK;
}

trnc_status rule_squeeze(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  bool drop[TRNC_MAX_RANK] = {false};
  if (n->op == TRNC_OP_SQUEEZE) {
    for (int i = 0; i < x->rank; i++) drop[i] = x->shape[i] == 1;
  } else {
    int64_t dims[TRNC_MAX_RANK] = {0};
    int k = ilist(n, 1, dims, TRNC_MAX_RANK);
    CHECK(k >= 0, "squeeze: dims must be ints");
    for (int i = 0; i < k; i++) {
      int64_t dim = dims[i];
      CHECK(wrap_dim(&dim, x->rank), "squeeze: dim out of range");
      if (x->rank) drop[dim] = x->shape[dim] == 1;
    }
  }
  view_of(&out[0], x);
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (drop[i]) continue;
    out[0].shape[r] = x->shape[i];
    out[0].stride[r] = x->stride[i];
    r++;
  }
  out[0].rank = (uint8_t)r;
  return TRNC_OK;
}

trnc_status rule_slice(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  CHECK(x->rank > 0, "slice: cannot slice a 0-d tensor");
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "slice: dim out of range");
  int64_t size = x->shape[dim], step = trnc_arg_int(n, 4, 1);
  CHECK(step > 0, "slice: step must be positive");
  int64_t start = is_none(n, 2) ? 0 : trnc_arg_int(n, 2, 0);
  int64_t end = is_none(n, 3) ? size : trnc_arg_int(n, 3, size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = start < 0 ? 0 : (start > size ? size : start);
  end = end < start ? start : (end > size ? size : end);
  out[0] = *x;
  out[0].shape[dim] = (end - start + step - 1) / step;
  out[0].stride[dim] = x->stride[dim] * step;
  out[0].offset = x->offset + start * x->stride[dim];
  return TRNC_OK;
}

trnc_status rule_select(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  CHECK(x->rank > 0, "select: cannot select from a 0-d tensor");
  int64_t dim = trnc_arg_int(n, 1, 0), idx = trnc_arg_int(n, 2, 0);
  CHECK(wrap_dim(&dim, x->rank), "select: dim out of range");
  if (idx < 0) idx += x->shape[dim];
  CHECK(idx >= 0 && idx < x->shape[dim], "select: index %lld out of range for size %lld",
        (long long)trnc_arg_int(n, 2, 0), (long long)x->shape[dim]);
  view_of(&out[0], x);
  out[0].offset = x->offset + idx * x->stride[dim];
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i == dim) continue;
    out[0].shape[r] = x->shape[i];
    out[0].stride[r] = x->stride[i];
    r++;
  }
  out[0].rank = (uint8_t)r;
  return TRNC_OK;
}

/* diagonal(self, offset, dim1, dim2): a view over the other dims in order,
 * then the diagonal (stride s1 + s2, starting offset s2 or -offset s1 in). */
trnc_status rule_diagonal(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                          uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t off = trnc_arg_int(n, 1, 0), d1 = trnc_arg_int(n, 2, 0), d2 = trnc_arg_int(n, 3, 1);
  CHECK(x->rank >= 2 && wrap_dim(&d1, x->rank) && wrap_dim(&d2, x->rank) && d1 != d2,
        "diagonal: dim1 and dim2 must be two different dims of a tensor of rank >= 2");
  int64_t n1 = x->shape[d1], n2 = x->shape[d2];
  int64_t len = off >= 0 ? (n1 < n2 - off ? n1 : n2 - off) : (n1 + off < n2 ? n1 + off : n2);
  view_of(&out[0], x);
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i == d1 || i == d2) continue;
    out[0].shape[r] = x->shape[i];
    out[0].stride[r++] = x->stride[i];
  }
  out[0].shape[r] = len > 0 ? len : 0;
  out[0].stride[r] = x->stride[d1] + x->stride[d2];
  out[0].rank = (uint8_t)(r + 1);
  out[0].offset = x->offset + (off >= 0 ? off * x->stride[d2] : -off * x->stride[d1]);
  return TRNC_OK;
}

/* Size of piece i of a split (split: pieces of `chunk`, the last shorter;
 * split_with_sizes: the given sizes). */
static int64_t split_piece(const trnc_node *n, int64_t size, int64_t chunk, uint32_t i) {
  if (n->op != TRNC_OP_SPLIT) return trnc_node_arg(n, 1)->u.list.items[i].u.i;
  return (int64_t)(i + 1) * chunk <= size ? chunk : size - (int64_t)i * chunk;
}

trnc_status rule_split(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t dim = trnc_arg_int(n, 2, 0);
  CHECK(x->rank > 0 && wrap_dim(&dim, x->rank), "split: dim out of range");
  int64_t size = x->shape[dim], chunk = 0;
  uint32_t k;
  if (n->op == TRNC_OP_SPLIT) {
    chunk = trnc_arg_int(n, 1, 1);
    CHECK(chunk > 0 || (chunk == 0 && size == 0), "split: split_size must be positive");
    k = chunk ? (uint32_t)((size + chunk - 1) / chunk) : 1;
    if (k == 0) k = 1;
    CHECK(k == nout, "split: %u pieces expected, the graph declares %u", k, nout);
  } else {
    const trnc_arg *a = trnc_node_arg(n, 1);
    CHECK(a->kind == TRNC_ARG_LIST && a->u.list.n == nout,
          "split_with_sizes: %u sizes given, the graph declares %u outputs",
          a->kind == TRNC_ARG_LIST ? a->u.list.n : 0, nout);
    k = nout;
    int64_t sum = 0;
    for (uint32_t i = 0; i < k; i++) {
      CHECK(a->u.list.items[i].u.i >= 0, "split_with_sizes: negative size");
      sum += a->u.list.items[i].u.i;
    }
    CHECK(sum == size, "split_with_sizes: sizes sum to %lld, dim has %lld", (long long)sum,
          (long long)size);
  }
  int64_t start = 0;
  for (uint32_t i = 0; i < k; i++) {
    int64_t piece = split_piece(n, size, chunk, i);
    out[i] = *x;
    out[i].shape[dim] = piece;
    out[i].offset = x->offset + start * x->stride[dim];
    start += piece;
  }
  return TRNC_OK;
}

/* ---- data movement ----------------------------------------------------------------------------------- */

static const trnc_arg *tensor_list(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_LIST) ? a : NULL;
}

/* torch's legacy rule: 1-D tensors of size 0 are skipped by cat. */
static bool cat_skipped(const trnc_type *t) { return t->rank == 1 && t->shape[0] == 0; }

trnc_status rule_cat(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                     trnc_diags *d) {
  const trnc_arg *l = tensor_list(n, 0);
  CHECK(l && l->u.list.n > 0, "cat: needs a non-empty list of tensors");
  const trnc_type *ref = NULL;
  trnc_dtype dt = TRNC_DTYPE_INVALID;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_type *t = trnc_ref_type(g, l->u.list.items[i].u.ref);
    dt = promote2(dt, t->dtype);
    if (!ref && !cat_skipped(t)) ref = t;
  }
  if (!ref) ref = trnc_ref_type(g, l->u.list.items[0].u.ref);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, ref->rank) && ref->rank > 0, "cat: dim out of range");
  copy_shape(&out[0], ref, dt);
  out[0].shape[dim] = 0;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_type *t = trnc_ref_type(g, l->u.list.items[i].u.ref);
    if (cat_skipped(t) && ref->rank != 1) continue;
    CHECK(t->rank == ref->rank, "cat: tensor %u has rank %d, expected %d", i, t->rank, ref->rank);
    for (int j = 0; j < t->rank; j++)
      CHECK(j == dim || t->shape[j] == ref->shape[j],
            "cat: tensor %u differs in dim %d (%lld vs %lld)", i, j, (long long)t->shape[j],
            (long long)ref->shape[j]);
    out[0].shape[dim] += t->shape[dim];
  }
  return TRNC_OK;
}

trnc_status rule_stack(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_arg *l = tensor_list(n, 0);
  CHECK(l && l->u.list.n > 0, "stack: needs a non-empty list of tensors");
  const trnc_type *ref = trnc_ref_type(g, l->u.list.items[0].u.ref);
  trnc_dtype dt = TRNC_DTYPE_INVALID;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_type *t = trnc_ref_type(g, l->u.list.items[i].u.ref);
    CHECK(t->rank == ref->rank && !memcmp(t->shape, ref->shape, sizeof(int64_t) * t->rank),
          "stack: tensor %u has a different shape", i);
    dt = promote2(dt, t->dtype);
  }
  int64_t dim = trnc_arg_int(n, 1, 0);
  if (dim < 0) dim += ref->rank + 1;
  CHECK(dim >= 0 && dim <= ref->rank && ref->rank < TRNC_MAX_RANK, "stack: dim out of range");
  out[0].dtype = dt;
  out[0].rank = ref->rank + 1;
  for (int i = 0, j = 0; i < out[0].rank; i++)
    out[0].shape[i] = i == dim ? (int64_t)l->u.list.n : ref->shape[j++];
  return TRNC_OK;
}

/* ---- gather / scatter ------------------------------------------------------------------------------------ */

static bool is_index_dtype(trnc_dtype t) { return t == TRNC_I64 || t == TRNC_I32; }

trnc_status rule_embedding(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *w = targ(g, n, 0), *idx = targ(g, n, 1);
  CHECK(w->rank == 2, "embedding: weight must be 2-D");
  CHECK(is_index_dtype(idx->dtype), "embedding: indices must be int64 or int32, got %s",
        trnc_dtype_name(idx->dtype));
  CHECK(idx->rank < TRNC_MAX_RANK, "embedding: indices rank too high");
  copy_shape(&out[0], idx, w->dtype);
  out[0].shape[idx->rank] = w->shape[1];
  out[0].rank = idx->rank + 1;
  return TRNC_OK;
}

trnc_status rule_embedding_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                              uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *idx = targ(g, n, 1);
  CHECK(is_index_dtype(idx->dtype), "embedding backward: indices must be int64 or int32");
  CHECK(go->rank == idx->rank + 1 && !memcmp(go->shape, idx->shape, sizeof(int64_t) * idx->rank),
        "embedding backward: grad_output must have shape indices.shape + [D]");
  int64_t nw = trnc_arg_int(n, 2, 0);
  CHECK(nw >= 0, "embedding backward: num_weights must be >= 0");
  int64_t s[2] = {nw, go->shape[go->rank - 1]};
  set_shape(&out[0], go->dtype, 2, s);
  return TRNC_OK;
}

trnc_status rule_index_select(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                              uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *idx = targ(g, n, 2);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "index_select: dim out of range");
  CHECK(idx->rank <= 1 && is_index_dtype(idx->dtype),
        "index_select: index must be a 0-D or 1-D int64/int32 tensor");
  copy_shape(&out[0], x, x->dtype);
  if (x->rank) out[0].shape[dim] = trnc_type_numel(idx);
  return TRNC_OK;
}

trnc_status rule_gather(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *idx = targ(g, n, 2);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "gather: dim out of range");
  CHECK(is_index_dtype(idx->dtype), "gather: index must be int64 or int32");
  CHECK(idx->rank == x->rank || (idx->rank <= 1 && x->rank <= 1),
        "gather: index rank %d differs from input rank %d", idx->rank, x->rank);
  for (int i = 0; i < idx->rank && idx->rank == x->rank; i++)
    CHECK(i == dim || idx->shape[i] <= x->shape[i], "gather: index dim %d larger than input", i);
  copy_shape(&out[0], idx, x->dtype);
  return TRNC_OK;
}

/* The shape x[indices] for integer index tensors (None = full slice); a
 * boolean mask, whose count of true elements is data, is accepted only as
 * its own shape when bool_ok (index_put's result is self's shape anyway). */
static trnc_status indexed_shape(const trnc_graph *g, const trnc_node *n, bool bool_ok,
                                 trnc_type *out, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  const trnc_arg *l = tensor_list(n, 1);
  CHECK(l && l->u.list.n <= x->rank, "index: more indices than dims");
  int first = -1, last = -1, bcast_rank = 0;
  int64_t bshape[TRNC_MAX_RANK];
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_arg *a = &l->u.list.items[i];
    if (a->kind != TRNC_ARG_VALUE) continue;
    const trnc_type *t = trnc_ref_type(g, a->u.ref);
    CHECK(is_index_dtype(t->dtype) || (bool_ok && t->dtype == TRNC_BOOL),
          "index: index %u has dtype %s; only int64/int32 index tensors have a static result "
          "shape (boolean masks do not)", i, trnc_dtype_name(t->dtype));
    if (first < 0) first = (int)i;
    last = (int)i;
    /* broadcast */
    if (t->rank > bcast_rank) {
      int sh = t->rank - bcast_rank;
      for (int j = bcast_rank - 1; j >= 0; j--) bshape[j + sh] = bshape[j];
      for (int j = 0; j < sh; j++) bshape[j] = 1;
      bcast_rank = t->rank;
    }
    for (int j = 0; j < t->rank; j++) {
      int o = bcast_rank - t->rank + j;
      if (t->shape[j] == bshape[o] || t->shape[j] == 1) continue;
      CHECK(bshape[o] == 1, "index: index tensors cannot be broadcast together");
      bshape[o] = t->shape[j];
    }
  }
  CHECK(first >= 0, "index: needs at least one index tensor");
  bool adjacent = true;
  for (int i = first; i <= last; i++)
    if (l->u.list.items[i].kind != TRNC_ARG_VALUE) adjacent = false;
  int r = 0;
  out[0].dtype = x->dtype;
  CHECK(x->rank - (last - first + 1) + bcast_rank <= TRNC_MAX_RANK, "index: result rank too high");
  if (!adjacent) {
    for (int j = 0; j < bcast_rank; j++) out[0].shape[r++] = bshape[j];
    for (int i = 0; i < x->rank; i++)
      if (i >= (int)l->u.list.n || l->u.list.items[i].kind != TRNC_ARG_VALUE)
        out[0].shape[r++] = x->shape[i];
  } else {
    for (int i = 0; i < first; i++) out[0].shape[r++] = x->shape[i];
    for (int j = 0; j < bcast_rank; j++) out[0].shape[r++] = bshape[j];
    for (int i = last + 1; i < x->rank; i++) out[0].shape[r++] = x->shape[i];
  }
  out[0].rank = (uint8_t)r;
  return TRNC_OK;
}

/* Advanced indexing with integer index tensors (None = full slice). */
trnc_status rule_index(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  return indexed_shape(g, n, false, out, d);
}

trnc_status rule_index_put(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  trnc_node m = *n;
  m.nargs = 2;
  trnc_type indexed = {0};
  trnc_status s = indexed_shape(g, &m, true, &indexed, d);
  if (s) return s;
  const trnc_type *v = targ(g, n, 2);
  bool mask = false;
  const trnc_arg *l = tensor_list(n, 1);
  for (uint32_t i = 0; l && i < l->u.list.n; i++)
    mask |= l->u.list.items[i].kind == TRNC_ARG_VALUE &&
            trnc_ref_type(g, l->u.list.items[i].u.ref)->dtype == TRNC_BOOL;
  if (mask) { /* the indexed count is data: values must be one broadcast element */
    CHECK(trnc_type_numel(v) == 1, "index_put: a boolean mask takes one value, got %lld",
          (long long)trnc_type_numel(v));
    copy_shape(&out[0], x, x->dtype);
    return TRNC_OK;
  }
  CHECK(v->rank <= indexed.rank, "index_put: values do not broadcast to the indexed shape");
  for (int i = 0; i < v->rank; i++) {
    int64_t a = v->shape[i], b = indexed.shape[indexed.rank - v->rank + i];
    CHECK(a == b || a == 1, "index_put: values do not broadcast to the indexed shape");
  }
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

trnc_status rule_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *idx = targ(g, n, 2), *src = targ(g, n, 3);
  int64_t dim = trnc_arg_int(n, 1, 0);
  CHECK(wrap_dim(&dim, x->rank), "scatter: dim out of range");
  CHECK(is_index_dtype(idx->dtype), "scatter: index must be int64 or int32");
  CHECK(idx->rank == x->rank || (idx->rank <= 1 && x->rank <= 1),
        "scatter: index rank differs from self");
  for (int i = 0; i < idx->rank && idx->rank == x->rank; i++) {
    CHECK(i == dim || idx->shape[i] <= x->shape[i], "scatter: index dim %d larger than self", i);
    CHECK(!src || src->rank != idx->rank || idx->shape[i] <= src->shape[i],
          "scatter: index dim %d larger than src", i);
  }
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

/* _cdist_forward(x1 [..., P, M], x2 [..., R, M], p, compute_mode): the
 * broadcast batch dims, then [P, R]. */
trnc_status rule_cdist(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *a = targ(g, n, 0), *b = targ(g, n, 1);
  CHECK(a && b && a->rank >= 2 && b->rank >= 2, "cdist: x1 and x2 need at least 2 dims");
  CHECK(a->shape[a->rank - 1] == b->shape[b->rank - 1], "cdist: x1 and x2 differ in their last dim");
  CHECK(a->rank == b->rank, "cdist: x1 and x2 differ in rank");
  out->rank = a->rank;
  for (int i = 0; i + 2 < a->rank; i++) {
    CHECK(a->shape[i] == b->shape[i], "cdist: batch dim %d differs", i);
    out->shape[i] = a->shape[i];
  }
  out->shape[a->rank - 2] = a->shape[a->rank - 2];
  out->shape[a->rank - 1] = b->shape[b->rank - 2];
  out->dtype = a->dtype;
  return TRNC_OK;
}

/* _pdist_forward(self [N, M], p): [N (N - 1) / 2] */
trnc_status rule_pdist(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                       trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  CHECK(x && x->rank == 2, "pdist: the input must be 2-D");
  out->rank = 1;
  out->shape[0] = x->shape[0] * (x->shape[0] - 1) / 2;
  out->dtype = x->dtype;
  return TRNC_OK;
}

/* masked_scatter(self, mask, source): self and a bool mask broadcast, self's dtype */
trnc_status rule_masked_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                uint32_t nout, trnc_diags *d) {
  static const int a[] = {0, 1};
  CHECK(targ(g, n, 1)->dtype == TRNC_BOOL, "masked_scatter: mask must be bool, got %s",
        trnc_dtype_name(targ(g, n, 1)->dtype));
  trnc_status s = broadcast(g, n, a, 2, &out[0], d);
  out[0].dtype = targ(g, n, 0)->dtype;
  return s;
}

/* masked_scatter_backward(grad, mask, sizes): the source's sizes, grad's dtype */
trnc_status rule_masked_scatter_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                   uint32_t nout, trnc_diags *d) {
  const trnc_arg *sz = trnc_node_arg(n, 2);
  CHECK(sz && sz->kind == TRNC_ARG_LIST && sz->u.list.n <= TRNC_MAX_RANK, "masked_scatter_backward: sizes");
  out->rank = (uint8_t)sz->u.list.n;
  for (uint32_t i = 0; i < sz->u.list.n; i++) out->shape[i] = sz->u.list.items[i].u.i;
  out->dtype = targ(g, n, 0)->dtype;
  return TRNC_OK;
}

/* bucketize(self, boundaries, out_int32, right) / searchsorted(seq, self,
 * out_int32, ...): self's shape, int32 with out_int32, else int64; a batched
 * searchsorted's sequence has self's leading dims. */
trnc_status rule_bucketize(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                           trnc_diags *d) {
  bool bk = n->op == TRNC_OP_BUCKETIZE;
  const trnc_type *x = targ(g, n, bk ? 0 : 1), *seq = targ(g, n, bk ? 1 : 0);
  CHECK(x && seq, "%s: needs a sequence and values", bk ? "bucketize" : "searchsorted");
  CHECK(seq->rank >= 1, "the sorted sequence must have a dim");
  if (seq->rank > 1) {
    CHECK(seq->rank == x->rank, "searchsorted: the sequence and the values differ in rank");
    for (int i = 0; i + 1 < x->rank; i++)
      CHECK(seq->shape[i] == x->shape[i], "searchsorted: leading dim %d differs", i);
  }
  copy_shape(&out[0], x, trnc_arg_bool(n, 2, false) ? TRNC_I32 : TRNC_I64);
  return TRNC_OK;
}

/* slice_scatter / select_scatter: self with a slice (select) replaced by
 * src, which must have exactly the slice's shape. Result: self's shape. */
trnc_status rule_slice_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *src = targ(g, n, 1);
  trnc_node m = *n;
  trnc_arg args[5];
  CHECK(n->nargs >= 2, "slice_scatter: needs self and src");
  args[0] = n->args[0];
  for (uint32_t i = 2; i < 6; i++) {
    const trnc_arg *a = trnc_node_arg(n, i);
    args[i - 1] = a ? *a : (trnc_arg){.kind = TRNC_ARG_NONE};
  }
  if (!trnc_node_arg(n, 2)) args[1] = (trnc_arg){.kind = TRNC_ARG_INT, .u.i = 0};
  if (!trnc_node_arg(n, 5)) args[4] = (trnc_arg){.kind = TRNC_ARG_INT, .u.i = 1};
  m.args = args;
  m.nargs = 5;
  trnc_type slice = {0};
  trnc_status s = rule_slice(g, &m, &slice, 1, d);
  if (s) return s;
  CHECK(src->rank == slice.rank, "slice_scatter: src rank %d differs from the slice's %d",
        src->rank, slice.rank);
  for (int i = 0; i < src->rank; i++)
    CHECK(src->shape[i] == slice.shape[i], "slice_scatter: src dim %d is %lld, the slice's %lld",
          i, (long long)src->shape[i], (long long)slice.shape[i]);
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

/* diagonal_scatter(self, src, offset, dim1, dim2): self's shape; src is
 * self without dim1 and dim2, then the diagonal's length. */
trnc_status rule_diagonal_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                  uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *src = targ(g, n, 1);
  CHECK(x && src && x->rank >= 2, "diagonal_scatter: self must have rank >= 2");
  int64_t off = trnc_arg_int(n, 2, 0), d1 = trnc_arg_int(n, 3, 0), d2 = trnc_arg_int(n, 4, 1);
  if (d1 < 0) d1 += x->rank;
  if (d2 < 0) d2 += x->rank;
  CHECK(d1 >= 0 && d2 >= 0 && d1 < x->rank && d2 < x->rank && d1 != d2,
        "diagonal_scatter: dims %lld and %lld of a rank-%d tensor", (long long)d1, (long long)d2,
        x->rank);
  int64_t n1 = x->shape[d1], n2 = x->shape[d2];
  int64_t len = off >= 0 ? (n1 < n2 - off ? n1 : n2 - off) : (n1 + off < n2 ? n1 + off : n2);
  if (len < 0) len = 0;
  CHECK(src->rank == x->rank - 1 && src->shape[src->rank - 1] == len,
        "diagonal_scatter: src must be self's shape without dims %lld and %lld, then %lld",
        (long long)d1, (long long)d2, (long long)len);
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

trnc_status rule_select_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *src = targ(g, n, 1);
  trnc_node m = *n;
  trnc_arg args[3];
  CHECK(n->nargs >= 4, "select_scatter: needs self, src, dim and index");
  args[0] = n->args[0];
  args[1] = n->args[2];
  args[2] = n->args[3];
  m.args = args;
  m.nargs = 3;
  trnc_type sel = {0};
  trnc_status s = rule_select(g, &m, &sel, 1, d);
  if (s) return s;
  CHECK(src->rank == sel.rank, "select_scatter: src rank %d differs from the selection's %d",
        src->rank, sel.rank);
  for (int i = 0; i < src->rank; i++)
    CHECK(src->shape[i] == sel.shape[i], "select_scatter: src dim %d is %lld, the selection's %lld",
          i, (long long)src->shape[i], (long long)sel.shape[i]);
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

/* ---- creation ---------------------------------------------------------------------------------------- */

static trnc_dtype scalar_dtype(const trnc_arg *a) {
  if (!a) return TRNC_F32;
  switch (a->kind) {
    case TRNC_ARG_BOOL: return TRNC_BOOL;
    case TRNC_ARG_INT: return TRNC_I64;
    default: return TRNC_F32;
  }
}

trnc_status rule_full(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  int64_t s[TRNC_MAX_RANK];
  int k = ilist(n, 0, s, TRNC_MAX_RANK);
  CHECK(k >= 0, "%s: size must be a list of at most %d ints", trnc_op_name(n->op), TRNC_MAX_RANK);
  for (int i = 0; i < k; i++) CHECK(s[i] >= 0, "negative size %lld", (long long)s[i]);
  bool has_fill = n->op == TRNC_OP_FULL;
  trnc_dtype dflt = has_fill ? scalar_dtype(trnc_node_arg(n, 1)) : TRNC_F32;
  set_shape(&out[0], dtarg(n, has_fill ? 2 : 1, dflt), k, s);
  return TRNC_OK;
}

/* new_empty_strided(self, size, stride, dtype): a new tensor of `size`
 * (contents unspecified: trnc fills zeros), dtype `dtype` or self's. */
trnc_status rule_new_empty_strided(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                                   uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t s[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int k = ilist(n, 1, s, TRNC_MAX_RANK), ks = ilist(n, 2, st, TRNC_MAX_RANK);
  CHECK(k >= 0 && ks == k, "new_empty_strided: size and stride must be lists of equal length");
  for (int i = 0; i < k; i++) CHECK(s[i] >= 0, "negative size %lld", (long long)s[i]);
  set_shape(&out[0], dtarg(n, 3, x->dtype), k, s);
  return TRNC_OK;
}

/* empty_strided(size, stride, dtype) / empty_permuted(size, physical_layout,
 * dtype): a new tensor of `size` (contents unspecified), dtype `dtype` or
 * float32. */
trnc_status rule_empty_strided(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  int64_t s[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  int k = ilist(n, 0, s, TRNC_MAX_RANK), ks = ilist(n, 1, st, TRNC_MAX_RANK);
  CHECK(k >= 0 && ks == k, "%s: size and %s must be lists of equal length", trnc_op_name(n->op),
        n->op == TRNC_OP_EMPTY_PERMUTED ? "physical_layout" : "stride");
  for (int i = 0; i < k; i++) CHECK(s[i] >= 0, "negative size %lld", (long long)s[i]);
  set_shape(&out[0], dtarg(n, 2, TRNC_F32), k, s);
  return TRNC_OK;
}

/* repeat(self, repeats): self (with leading 1s up to len(repeats) dims)
 * tiled repeats[i] times along dim i. */
trnc_status rule_repeat(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  int64_t r[TRNC_MAX_RANK];
  int k = ilist(n, 1, r, TRNC_MAX_RANK);
  CHECK(k >= x->rank, "repeat: %d repeats given for a rank-%d tensor (at most %d)", k, x->rank,
        TRNC_MAX_RANK);
  int64_t s[TRNC_MAX_RANK];
  for (int i = 0; i < k; i++) {
    int xi = i - (k - x->rank);
    CHECK(r[i] >= 0, "repeat: negative repeat count %lld", (long long)r[i]);
    s[i] = r[i] * (xi >= 0 ? x->shape[xi] : 1);
  }
  set_shape(&out[0], x->dtype, k, s);
  return TRNC_OK;
}

/* copy(self, src): src broadcast to self's shape, in self's dtype. */
trnc_status rule_copy(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                      trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0), *src = targ(g, n, 1);
  CHECK(src->rank <= x->rank, "copy: src of rank %d does not broadcast to rank %d", src->rank,
        x->rank);
  for (int i = 0; i < src->rank; i++) {
    int64_t a = src->shape[i], b = x->shape[x->rank - src->rank + i];
    CHECK(a == b || a == 1, "copy: src dim %d (%lld) does not broadcast to %lld", i,
          (long long)a, (long long)b);
  }
  copy_shape(&out[0], x, x->dtype);
  if (!trnc_type_is_dense(x)) {
    /* torch keeps self's strided layout in a new storage; whether the storage
     * offset is kept too differs between torch's kernels (eager: 0 for a
     * transposed slice, 1 for a row slice) and its fake ones (always kept),
     * so the graph's declared offset is taken when it is 0 or self's */
    out[0] = *x;
    const trnc_type *decl = n->nouts ? &g->values[n->outs[0]].type : NULL;
    if (decl && decl->offset == 0) out[0].offset = 0;
  }
  return TRNC_OK;
}

trnc_status rule_full_like(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  copy_shape(&out[0], x, dtarg(n, 2, x->dtype));
  return TRNC_OK;
}

trnc_status rule_scalar_tensor(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  out[0].dtype = dtarg(n, 1, TRNC_F32);
  out[0].rank = 0;
  return TRNC_OK;
}


trnc_status rule_arange(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  int nnum = n->op == TRNC_OP_ARANGE ? 1 : n->op == TRNC_OP_ARANGE_START ? 2 : 3;
  double start = 0, end, step = 1;
  bool all_int = true;
  for (int i = 0; i < nnum; i++) all_int &= n->args[i].kind == TRNC_ARG_INT;
  if (nnum == 1) {
    end = trnc_arg_number(&n->args[0], 0);
  } else {
    start = trnc_arg_number(&n->args[0], 0);
    end = trnc_arg_number(&n->args[1], 0);
    if (nnum == 3) step = trnc_arg_number(&n->args[2], 0);
  }
  CHECK(step != 0 && isfinite(start) && isfinite(end) && isfinite(step),
        "arange: step must be non-zero and bounds finite");
  double len = ceil((end - start) / step);
  CHECK(len >= 0 && len < 9.0e15, "arange: invalid range");
  if (all_int) {
    /* exact integer length */
    int64_t s0 = (int64_t)start, e0 = (int64_t)end, st = (int64_t)step;
    int64_t l = st > 0 ? (e0 - s0 + st - 1) / st : (s0 - e0 + (-st) - 1) / (-st);
    len = (double)(l < 0 ? 0 : l);
  }
  out[0].dtype = dtarg(n, (uint32_t)nnum, all_int ? TRNC_I64 : TRNC_F32);
  out[0].rank = 1;
  out[0].shape[0] = (int64_t)len;
  return TRNC_OK;
}

/* ---- losses and random ---------------------------------------------------------------------------------- */

trnc_status rule_nll(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                     trnc_diags *d) {
  CHECK(nout == 2, "nll_loss_forward has 2 outputs, the graph declares %u", nout);
  const trnc_type *x = targ(g, n, 0), *t = targ(g, n, 1), *w = targ(g, n, 2);
  CHECK(x->rank == 1 || x->rank == 2, "nll_loss: input must be 1-D or 2-D");
  CHECK(is_index_dtype(t->dtype), "nll_loss: target must be int64 or int32");
  CHECK((x->rank == 1 && t->rank == 0) || (x->rank == 2 && t->rank == 1 &&
                                           t->shape[0] == x->shape[0]),
        "nll_loss: target shape does not match the batch size");
  int64_t c = x->shape[x->rank - 1];
  CHECK(!w || (w->rank == 1 && w->shape[0] == c), "nll_loss: weight must have shape [%lld]",
        (long long)c);
  int64_t red = trnc_arg_int(n, 3, 1);
  CHECK(red >= 0 && red <= 2, "nll_loss: reduction must be 0, 1 or 2");
  out[0].dtype = x->dtype;
  out[0].rank = (red == 0 && x->rank == 2) ? 1 : 0;
  out[0].shape[0] = x->shape[0];
  out[1].dtype = x->dtype;
  out[1].rank = 0;
  return TRNC_OK;
}

trnc_status rule_nll_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                        trnc_diags *d) {
  const trnc_type *x = targ(g, n, 1), *t = targ(g, n, 2);
  CHECK(x->rank == 1 || x->rank == 2, "nll_loss backward: input must be 1-D or 2-D");
  CHECK(is_index_dtype(t->dtype), "nll_loss backward: target must be int64 or int32");
  copy_shape(&out[0], x, x->dtype);
  return TRNC_OK;
}

trnc_status rule_dropout(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  CHECK(nout == 2, "native_dropout has 2 outputs, the graph declares %u", nout);
  const trnc_type *x = targ(g, n, 0);
  const trnc_arg *p = trnc_node_arg(n, 1);
  double pv = trnc_arg_number(p, 0);
  CHECK(pv >= 0 && pv <= 1, "native_dropout: p must be in [0, 1]");
  copy_shape(&out[0], x, x->dtype);
  copy_shape(&out[1], x, TRNC_BOOL);
  return TRNC_OK;
}

trnc_status rule_dropout_bw(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  const trnc_type *go = targ(g, n, 0), *m = targ(g, n, 1);
  CHECK(go->rank == m->rank && !memcmp(go->shape, m->shape, sizeof(int64_t) * go->rank),
        "native_dropout backward: mask shape differs from grad_output");
  copy_shape(&out[0], go, go->dtype);
  return TRNC_OK;
}

/* ---- collectives (_c10d_functional): results are new contiguous tensors ---- */

/* The shape of one collective result for input x: dim 0 times `mul`, divided
 * by `div` (which must divide it). */
static trnc_status cc_shape(const trnc_node *n, const trnc_type *x, int64_t mul, int64_t div,
                            trnc_type *out, trnc_diags *d) {
  CHECK(x, "%s: input must be a tensor", trnc_op_name(n->op));
  copy_shape(out, x, x->dtype);
  if (mul == 1 && div == 1) return TRNC_OK;
  CHECK(x->rank > 0, "%s: a 0-d tensor cannot be gathered or scattered along dim 0",
        trnc_op_name(n->op));
  CHECK(mul >= 1 && div >= 1, "%s: group_size must be at least 1", trnc_op_name(n->op));
  CHECK(x->shape[0] % div == 0, "%s: dim 0 (%lld) is not divisible by group_size %lld",
        trnc_op_name(n->op), (long long)x->shape[0], (long long)div);
  out->shape[0] = x->shape[0] * mul / div;
  return TRNC_OK;
}

trnc_status rule_cc_same(const trnc_graph *g, const trnc_node *n, trnc_type *out, uint32_t nout,
                         trnc_diags *d) {
  return cc_shape(n, targ(g, n, 0), 1, 1, &out[0], d);
}

trnc_status rule_cc_gather(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                           uint32_t nout, trnc_diags *d) {
  return cc_shape(n, targ(g, n, 0), trnc_arg_int(n, 1, 0), 1, &out[0], d);
}

trnc_status rule_cc_scatter(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                            uint32_t nout, trnc_diags *d) {
  return cc_shape(n, targ(g, n, 0), 1, trnc_arg_int(n, 2, 0), &out[0], d);
}

trnc_status rule_cc_all_to_all(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                               uint32_t nout, trnc_diags *d) {
  const trnc_type *x = targ(g, n, 0);
  trnc_status st = cc_shape(n, x, 1, 1, &out[0], d);
  if (st) return st;
  int64_t os[64], is[64];
  int no = ilist(n, 1, os, 64), ni = ilist(n, 2, is, 64);
  CHECK(no >= 0 && ni >= 0 && no == ni,
        "all_to_all_single: output and input split sizes must be int lists of one length (at "
        "most 64 ranks)");
  if (!no) return TRNC_OK;
  CHECK(x->rank > 0, "all_to_all_single: a 0-d tensor cannot be split");
  int64_t so = 0, si = 0;
  for (int i = 0; i < no; i++) {
    CHECK(os[i] >= 0 && is[i] >= 0, "all_to_all_single: negative split size");
    so += os[i];
    si += is[i];
  }
  CHECK(si == x->shape[0], "all_to_all_single: input splits sum to %lld, dim 0 has %lld",
        (long long)si, (long long)x->shape[0]);
  out[0].shape[0] = so;
  return TRNC_OK;
}

trnc_status rule_cc_coalesced(const trnc_graph *g, const trnc_node *n, trnc_type *out,
                              uint32_t nout, trnc_diags *d) {
  const trnc_arg *l = trnc_node_arg(n, 0);
  CHECK(l && l->kind == TRNC_ARG_LIST && l->u.list.n == nout,
        "%s: %u outputs for %u inputs", trnc_op_name(n->op), nout,
        l && l->kind == TRNC_ARG_LIST ? l->u.list.n : 0);
  int64_t mul = n->op == TRNC_OP_ALL_GATHER_COALESCED ? trnc_arg_int(n, 1, 0) : 1;
  int64_t div = n->op == TRNC_OP_REDUCE_SCATTER_COALESCED ? trnc_arg_int(n, 2, 0) : 1;
  for (uint32_t k = 0; k < nout; k++) {
    const trnc_arg *it = &l->u.list.items[k];
    CHECK(it->kind == TRNC_ARG_VALUE, "%s: input %u is not a tensor", trnc_op_name(n->op), k);
    trnc_status st = cc_shape(n, trnc_ref_type(g, it->u.ref), mul, div, &out[k], d);
    if (st) return st;
  }
  return TRNC_OK;
}
