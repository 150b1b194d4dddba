/*
 * decomp_ops.c — decompositions of data-movement and scan ops into ops trnc
 * lowers (see decompose.h for the builder).
 *
 * cumsum(x, dim): with dim moved last and x seen as rows [M, N],
 *   y = x @ U,  U[j, i] = (j <= i)   (N x N, from two aranges and ge)
 * on TensorE in float32: products with 0/1 are exact and every partial sum
 * is a prefix sum, so integer inputs stay exact while their prefix sums stay
 * within +-2^24, which the legality scan's interval analysis proves for
 * integer results (ir/legality.c). Rows longer than TRNC_CUMSUM_MAX are
 * scanned in blocks of TRNC_CUMSUM_BLOCK: each block's prefix sums by the
 * block's ones matrix, plus the exclusive prefix sum of the block totals
 * (scan_rows), so the scan length is not limited and the work is
 * rows * len * block multiply-adds rather than rows * len^2.
 *
 * repeat(x, r) is an expand: x [d0, d1] viewed as [1, d0, 1, d1] (a size-1
 * dim before each dim repeated more than once), expanded to [r0, d0, r1, d1],
 * copied and viewed as [r0*d0, r1*d1]. flip reverses each listed dim by an
 * index_select with a descending arange; empty_strided and empty_permuted
 * are empty (trnc's empty is zeros) in the declared layout.
 *
 * Padding by an index_select per padded dim of size n with pads (l, r):
 * output position i in [-l, n + r) reads
 *   reflection  (n-1) - |(n-1) - |i||      replication  clamp(i, 0, n-1)
 * (indices from an arange in float32, exact below 2^24, cast to int64).
 */
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

/* The N x N float32 matrix U[j, i] = (j <= i). */
static trnc_ref upper_ones(trnc_db *b, int64_t len) {
  trnc_arg i32 = trnc_db_dtype(TRNC_I32);
  trnc_ref idx = DB(b, ARANGE, I(len), i32, NONE, NONE, NONE);
  trnc_ref col = DB(b, UNSQUEEZE, V(idx), I(0)), row = DB(b, UNSQUEEZE, V(idx), I(1));
  return trnc_db_cast(b, DB(b, GE, V(col), V(row)), TRNC_F32);
}

/* The inclusive prefix sums of each row of x [rows, len] (float32). Up to
 * TRNC_CUMSUM_MAX elements: x @ U. Longer: blocks of TRNC_CUMSUM_BLOCK (the
 * row zero-padded to whole blocks), each block's prefix sums x_b @ U, plus
 * the sum of the blocks before it: the exclusive prefix sum of the block
 * totals (a scan of ceil(len / block) elements, itself blocked when long). */
static trnc_ref scan_rows(trnc_db *b, trnc_ref x, int64_t rows, int64_t len) {
  if (len <= TRNC_CUMSUM_MAX) return DB(b, MM, V(x), V(upper_ones(b, len)));
  const int64_t B = TRNC_CUMSUM_BLOCK, nb = (len + B - 1) / B;
  if (nb * B != len)
    x = DB(b, CONSTANT_PAD_ND, V(x), trnc_db_ints(b, (const int64_t[]){0, nb * B - len}, 2), I(0));
  trnc_ref blocks = trnc_db_view(b, x, 2, (const int64_t[]){rows * nb, B});
  trnc_ref local = DB(b, MM, V(blocks), V(upper_ones(b, B)));
  trnc_ref local3 = trnc_db_view(b, local, 3, (const int64_t[]){rows, nb, B});
  trnc_ref totals = DB(b, SELECT, V(local3), I(2), I(B - 1));
  trnc_ref before = DB(b, SUB, V(scan_rows(b, totals, rows, nb)), V(totals), I(1));
  trnc_ref y = DB(b, ADD, V(local3), V(DB(b, UNSQUEEZE, V(before), I(2))), I(1));
  y = trnc_db_view(b, y, 2, (const int64_t[]){rows, nb * B});
  return nb * B == len ? y : DB(b, SLICE, V(y), I(1), I(0), I(len), I(1));
}

/* cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor */
trnc_status decomp_cumsum(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  trnc_type t = *trnc_db_type(b, x);
  if (t.rank == 0) return trnc_db_result(b, 0, trnc_db_f32(b, x));
  int64_t dim = trnc_arg_int(n, 1, 0);
  if (dim < 0) dim += t.rank;
  int last = t.rank - 1;
  trnc_ref moved = dim == last ? x : DB(b, TRANSPOSE, V(x), I(dim), I(last));
  int64_t shape[TRNC_MAX_RANK], len = t.shape[dim], rows = 1;
  for (int i = 0; i < t.rank; i++) {
    shape[i] = t.shape[i == dim ? last : i == last ? dim : i];
    if (i != last) rows *= shape[i];
  }
  trnc_ref x2 = trnc_db_view(b, trnc_db_f32(b, moved), 2, (const int64_t[]){rows, len});
  trnc_ref y = trnc_db_view(b, scan_rows(b, x2, rows, len), t.rank, shape);
  if (dim != last) y = DB(b, TRANSPOSE, V(y), I(dim), I(last));
  return trnc_db_result(b, 0, y);
}

/* repeat(Tensor self, SymInt[] repeats) -> Tensor */
trnc_status decomp_repeat(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  const trnc_arg *rl = &n->args[1];
  int k = (int)rl->u.list.n, rank = 0;
  int64_t src[TRNC_MAX_RANK], big[TRNC_MAX_RANK], out[TRNC_MAX_RANK];
  for (int i = 0; i < k; i++) {
    int64_t r = rl->u.list.items[i].u.i, d = i < k - t.rank ? 1 : t.shape[i - (k - t.rank)];
    if (r != 1) {
      src[rank] = 1;
      big[rank++] = r;
    }
    src[rank] = d;
    big[rank++] = d;
    out[i] = r * d;
  }
  trnc_ref v = trnc_db_view(b, DB(b, CLONE, V(x), NONE), rank, src);
  trnc_ref e = DB(b, EXPAND, V(v), trnc_db_ints(b, big, rank), trnc_db_bool(false));
  return trnc_db_result(b, 0, trnc_db_view(b, DB(b, CLONE, V(e), NONE), k, out));
}

/* flip(Tensor self, int[] dims) -> Tensor */
trnc_status decomp_flip(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  bool done[TRNC_MAX_RANK] = {false};
  const trnc_arg *dl = &n->args[1];
  for (uint32_t i = 0; i < dl->u.list.n; i++) {
    int64_t d = dl->u.list.items[i].u.i;
    if (d < 0) d += t.rank;
    if (d < 0 || d >= t.rank || done[d] || t.shape[d] <= 1) continue;
    done[d] = true;
    trnc_ref idx = DB(b, ARANGE_START_STEP, I(t.shape[d] - 1), I(-1), I(-1),
                      trnc_db_dtype(TRNC_I64), NONE, NONE, NONE);
    x = DB(b, INDEX_SELECT, V(x), I(d), V(idx));
  }
  return trnc_db_result(b, 0, x == n->args[0].u.ref ? DB(b, CLONE, V(x), NONE) : x);
}

/* copy(self, src, non_blocking) with a float src and an integer self: src
 * converted by _to_copy first, whose rule is eager's conversion (truncation,
 * int8/int16/uint8 wrapping, x86-64's -2^31 for NaN and out-of-range values:
 * codegen/kir/rules.c float_to_int) and whose int64 results the legality
 * scan checks; the copy then only broadcasts. Other copies are lowered
 * directly (decomp_copy_lowered_directly). */
static bool float_dt(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16 || t == TRNC_F64 || t == TRNC_F8E4M3 ||
         t == TRNC_F8E5M2;
}
static bool int_dt(trnc_dtype t) {
  return t == TRNC_I64 || t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}

bool decomp_copy_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  if (n->nargs < 2 || n->args[0].kind != TRNC_ARG_VALUE || n->args[1].kind != TRNC_ARG_VALUE) return true;
  return !(int_dt(trnc_ref_type(g, n->args[0].u.ref)->dtype) && float_dt(trnc_ref_type(g, n->args[1].u.ref)->dtype));
}

trnc_status decomp_copy(trnc_db *b, const trnc_node *n) {
  trnc_ref src = trnc_db_cast(b, n->args[1].u.ref, trnc_db_type(b, n->args[0].u.ref)->dtype);
  trnc_ref c = DB(b, COPY, n->args[0], V(src), n->nargs > 2 ? n->args[2] : trnc_db_bool(false));
  return trnc_db_result(b, 0, c);
}

/* nonzero_static(x, size, fill_value) -> [size, r] int64, r = rank of x:
 * the coordinates of x's first `size` nonzero elements in row-major order,
 * rows past the count filled with fill_value. With x flat [N], m = x != 0,
 * pos = cumsum(m) - 1 (an fp32 prefix sum, exact below 2^24: the table's
 * limit); element i goes to row pos[i] if m[i] and pos[i] < size, else to
 * a spare row `size` that is sliced away. Coordinate j of element i is
 * floor(i / stride_j) mod shape_j (exact int32 ops). */
trnc_status decomp_nonzero_static(trnc_db *b, const trnc_node *n) {
  const trnc_type t = *trnc_db_type(b, n->args[0].u.ref);
  int64_t N = trnc_type_numel(&t), S = trnc_arg_int(n, 1, 0), r = t.rank;
  trnc_arg i64 = trnc_db_dtype(TRNC_I64), fill = I(trnc_arg_int(n, 2, -1)), no = trnc_db_bool(false);
  int64_t oshape[2] = {S, r}, pshape[2] = {S + 1, r};
  if (N == 0 || S == 0 || r == 0)
    return trnc_db_result(b, 0, DB(b, FULL, trnc_db_ints(b, oshape, 2), fill, i64, NONE, NONE, NONE));
  trnc_ref x = trnc_db_view(b, DB(b, CLONE, n->args[0], NONE), 1, &N);
  trnc_ref m = DB(b, NE_SCALAR, V(x), I(0));
  trnc_ref mf = trnc_db_view(b, trnc_db_cast(b, m, TRNC_F32), 2, (const int64_t[]){1, N});
  trnc_ref cum = trnc_db_view(b, scan_rows(b, mf, 1, N), 1, &N);
  trnc_ref pos = trnc_db_cast(b, DB(b, ADD_SCALAR, V(cum), I(-1), I(1)), TRNC_I64);
  trnc_ref keep = DB(b, LOGICAL_AND, V(m), V(DB(b, LT_SCALAR, V(pos), I(S))));
  trnc_ref spare = DB(b, FULL, trnc_db_ints(b, &N, 1), I(S), i64, NONE, NONE, NONE);
  trnc_ref row = DB(b, WHERE, V(keep), V(pos), V(spare));
  trnc_ref flat = DB(b, ARANGE, I(N), i64, NONE, NONE, NONE);
  trnc_arg floor = {.kind = TRNC_ARG_STR, .name = "", .u.s = "floor"};
  trnc_arg cols[8];
  int64_t stride = 1;
  for (int64_t j = r - 1; j >= 0; j--) {
    trnc_ref q = stride == 1 ? flat : DB(b, DIV_MODE, V(flat), I(stride), floor);
    trnc_ref c = DB(b, REMAINDER_SCALAR, V(q), I(t.shape[j]));
    cols[j] = V(DB(b, UNSQUEEZE, V(c), I(1)));
    stride *= t.shape[j];
  }
  trnc_ref coords = DB(b, CAT, trnc_db_list(b, cols, (int)r), I(1));
  trnc_ref out = DB(b, FULL, trnc_db_ints(b, pshape, 2), fill, i64, NONE, NONE, NONE);
  trnc_arg idx = V(row);
  trnc_ref put = DB(b, INDEX_PUT, V(out), trnc_db_list(b, &idx, 1), V(coords), no);
  return trnc_db_result(b, 0, DB(b, SLICE, V(put), I(0), I(0), I(S), I(1)));
}

/* empty_strided(size, stride, ...) / empty_permuted(size, physical_layout, ...) */
trnc_status decomp_empty(trnc_db *b, const trnc_node *n) {
  trnc_dtype dt = trnc_db_type(b, n->outs[0])->dtype;
  trnc_ref e = DB(b, EMPTY, n->args[0], trnc_db_dtype(dt), NONE, NONE, NONE, NONE);
  return trnc_db_result(b, 0, e);
}

/* _efficientzerotensor(SymInt[] size, *, dtype, layout, device, pin_memory):
 * autograd's zero gradient (sgn's of a real tensor), zeros */
trnc_status decomp_zero_tensor(trnc_db *b, const trnc_node *n) {
  trnc_dtype dt = trnc_db_type(b, n->outs[0])->dtype;
  trnc_ref z = DB(b, ZEROS, n->args[0], trnc_db_dtype(dt), NONE, NONE, NONE);
  return trnc_db_result(b, 0, z);
}

/* var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) */
trnc_status decomp_var_dim(trnc_db *b, const trnc_node *n) {
  int64_t correction = trnc_arg_bool(n, 2, true) ? 1 : 0;
  trnc_ref v = DB(b, VAR, n->args[0], n->args[1], I(correction), trnc_db_bool(trnc_arg_bool(n, 3, false)));
  return trnc_db_result(b, 0, v);
}

/* reflection_padNd / replication_padNd(Tensor self, SymInt[2N] padding) */
trnc_status decomp_pad(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  const trnc_arg *pl = &n->args[1];
  bool reflect = n->op == TRNC_OP_REFLECTION_PAD1D || n->op == TRNC_OP_REFLECTION_PAD2D ||
                 n->op == TRNC_OP_REFLECTION_PAD3D;
  trnc_arg f32 = trnc_db_dtype(TRNC_F32);
  for (uint32_t k = 0; k + 1 < pl->u.list.n; k += 2) {
    int dim = t.rank - 1 - (int)(k / 2);
    int64_t l = pl->u.list.items[k].u.i, r = pl->u.list.items[k + 1].u.i, last = t.shape[dim] - 1;
    if (l == 0 && r == 0) continue;
    trnc_ref i = DB(b, ARANGE_START, I(-l), I(last + 1 + r), f32, NONE, NONE, NONE);
    if (reflect) {
      trnc_ref a = DB(b, RSUB_SCALAR, V(DB(b, ABS, V(i))), I(last), I(1));
      i = DB(b, RSUB_SCALAR, V(DB(b, ABS, V(a))), I(last), I(1));
    } else {
      i = DB(b, CLAMP, V(i), I(0), I(last));
    }
    x = DB(b, INDEX_SELECT, V(x), I(dim), V(trnc_db_cast(b, i, TRNC_I64)));
  }
  return trnc_db_result(b, 0, x == n->args[0].u.ref ? DB(b, CLONE, V(x), NONE) : x);
}

/* Sum of x[start:end] along dim, the dim kept (size 1). */
static trnc_ref sum_range(trnc_db *b, trnc_ref x, int dim, int64_t start, int64_t end) {
  int64_t d = dim;
  trnc_ref s = DB(b, SLICE, V(x), I(dim), I(start), I(end), I(1));
  return DB(b, SUM, V(s), trnc_db_ints(b, &d, 1), trnc_db_bool(true), NONE);
}

/* Sum of g[start:end) along dim, the dim kept (size 1); zeros if the range
 * is empty. */
static trnc_ref border_sum(trnc_db *b, trnc_ref g, int dim, int64_t start, int64_t end) {
  if (start < end) return sum_range(b, g, dim, start, end);
  trnc_type t = *trnc_db_type(b, g);
  t.shape[dim] = 1;
  return trnc_db_zeros(b, t.dtype, t.rank, t.shape);
}

/* replication_padNd_backward(Tensor grad_output, Tensor self, SymInt[2N] padding):
 * per padded dim of self's size n >= 1 with pads (l, r) (negative: a crop)
 * and grad size N = n + l + r >= 1 (the table's check), grad position o read
 * self at clamp(o - l, 0, n-1). So self's position 0 gets the sum of
 * grad[0 : l+1), position n-1 the sum of grad[l+n-1 : N) (every position if
 * n = 1), and each inner position j grad[j + l] where that lies in [0, N),
 * else 0: a cat of the border sums, the inner slice and zero blocks. */
trnc_status decomp_pad_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref g = n->args[0].u.ref;
  const trnc_type x = *trnc_db_type(b, n->args[1].u.ref);
  const trnc_arg *pl = &n->args[2];
  for (uint32_t k = 0; k + 1 < pl->u.list.n; k += 2) {
    int dim = x.rank - 1 - (int)(k / 2);
    int64_t l = pl->u.list.items[k].u.i, r = pl->u.list.items[k + 1].u.i, len = x.shape[dim];
    int64_t big = len + l + r;
    if (l == 0 && r == 0) continue;
    if (len == 1) {
      g = sum_range(b, g, dim, 0, big);
      continue;
    }
    trnc_type t = *trnc_db_type(b, g);
    trnc_ref parts[5];
    int np = 0;
    parts[np++] = border_sum(b, g, dim, 0, l + 1 < big ? l + 1 : big);
    int64_t lo = -l > 1 ? -l : 1, hi = len - 2 < big - 1 - l ? len - 2 : big - 1 - l; /* inner j kept */
    if (hi < lo) lo = len - 1, hi = len - 2;                                            /* none */
    if (lo > 1) t.shape[dim] = lo - 1, parts[np++] = trnc_db_zeros(b, t.dtype, t.rank, t.shape);
    if (hi >= lo) parts[np++] = DB(b, SLICE, V(g), I(dim), I(lo + l), I(hi + l + 1), I(1));
    if (hi < len - 2 && lo <= hi)
      t.shape[dim] = len - 2 - hi, parts[np++] = trnc_db_zeros(b, t.dtype, t.rank, t.shape);
    parts[np++] = border_sum(b, g, dim, l + len - 1 > 0 ? l + len - 1 : 0, big);
    g = DB(b, CAT, trnc_db_vals(b, parts, np), I(dim));
  }
  return trnc_db_result(b, 0, g == n->args[0].u.ref ? DB(b, CLONE, V(g), NONE) : g);
}

/* scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *,
 * bool include_self=True) */
trnc_status decomp_scatter_reduce(trnc_db *b, const trnc_node *n) {
  if (strcmp(n->args[4].u.s, "sum") && strcmp(n->args[4].u.s, "mean"))
    return decomp_scatter_reduce_onehot(b, n); /* prod, amax, amin (passes/decomp_index.c) */
  trnc_ref x = n->args[0].u.ref, src = n->args[3].u.ref;
  bool mean = !strcmp(n->args[4].u.s, "mean"), self = trnc_arg_bool(n, 5, true);
  const trnc_arg dim = n->args[1], idx = n->args[2];
  trnc_ref zeros = DB(b, FULL_LIKE, V(x), I(0), NONE, NONE, NONE, NONE, NONE);
  trnc_ref ones = DB(b, FULL_LIKE, V(src), I(1), NONE, NONE, NONE, NONE, NONE);
  trnc_ref count = DB(b, SCATTER_ADD, V(zeros), dim, idx, V(ones));
  trnc_ref base = self ? x : DB(b, MASKED_FILL, V(x), V(DB(b, GT_SCALAR, V(count), I(0))), I(0));
  trnc_ref sum = DB(b, SCATTER_ADD, V(base), dim, idx, V(src));
  if (!mean) return trnc_db_result(b, 0, sum);
  trnc_ref denom = DB(b, CLAMP, V(DB(b, ADD_SCALAR, V(count), I(self ? 1 : 0), I(1))), I(1), NONE);
  return trnc_db_result(b, 0, DB(b, DIV, V(sum), V(denom)));
}

/* ---- index / index_put with more than two index tensors ------------------- */

/* Index tensors of n's list argument (argument 1): their list positions. */
static int index_positions(const trnc_node *n, int *pos) {
  const trnc_arg *l = &n->args[1];
  int k = 0;
  for (uint32_t i = 0; i < l->u.list.n; i++)
    if (l->u.list.items[i].kind == TRNC_ARG_VALUE) pos[k++] = (int)i;
  return k;
}

bool decomp_index_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  int pos[TRNC_MAX_RANK];
  const trnc_arg *l = trnc_node_arg(n, 1);
  if (!l || l->kind != TRNC_ARG_LIST || l->u.list.n > TRNC_MAX_RANK) return true;
  int k = index_positions(n, pos);
  for (int j = 0; j < k; j++)
    if (trnc_ref_type(g, l->u.list.items[pos[j]].u.ref)->dtype == TRNC_BOOL) return true;
  return k <= 2;
}

/* index.Tensor(self, indices) / index_put(self, indices, values, accumulate) with
 * k > 2 index tensors: the indexed dims (moved to the front when they are not
 * adjacent, which is where torch puts the broadcast dims then) merged into one
 * of size prod(S), indexed by the row-major linear index
 *   sum_j (i_j < 0 ? i_j + S_j : i_j) * prod(S_{j+1..k})
 * (int64, exact: below numel). */
trnc_status decomp_index_many(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type xt = *trnc_db_type(b, x);
  int pos[TRNC_MAX_RANK], k = index_positions(n, pos), q = pos[0];
  bool adjacent = pos[k - 1] - pos[0] == k - 1;
  int64_t perm[TRNC_MAX_RANK], inv[TRNC_MAX_RANK], shape[TRNC_MAX_RANK];
  for (int i = 0; i < xt.rank; i++) perm[i] = i;
  if (!adjacent) {
    int r = 0;
    for (int j = 0; j < k; j++) perm[r++] = pos[j];
    for (int i = 0; i < xt.rank; i++) {
      bool indexed = false;
      for (int j = 0; j < k; j++) indexed |= pos[j] == i;
      if (!indexed) perm[r++] = i;
    }
    q = 0;
    x = DB(b, PERMUTE, V(x), trnc_db_ints(b, perm, xt.rank));
  }
  for (int i = 0; i < xt.rank; i++) inv[perm[i]] = i;
  const trnc_type pt = *trnc_db_type(b, x);
  int64_t merged = 1, stride = 1;
  for (int j = 0; j < k; j++) merged *= pt.shape[q + j];
  int rank = 0;
  for (int i = 0; i < pt.rank; i++) {
    if (i == q) shape[rank++] = merged;
    if (i < q || i >= q + k) shape[rank++] = pt.shape[i];
  }
  trnc_ref lin = TRNC_NO_REF;
  for (int j = k - 1; j >= 0; j--) {
    int64_t size = pt.shape[q + j];
    trnc_ref i = trnc_db_cast(b, n->args[1].u.list.items[pos[j]].u.ref, TRNC_I64);
    i = DB(b, WHERE, V(DB(b, LT_SCALAR, V(i), I(0))), V(DB(b, ADD_SCALAR, V(i), I(size), I(1))), V(i));
    if (stride != 1) i = DB(b, MUL_SCALAR, V(i), I(stride));
    lin = lin == TRNC_NO_REF ? i : DB(b, ADD, V(lin), V(i), I(1));
    stride *= size;
  }
  trnc_arg items[TRNC_MAX_RANK];
  for (int i = 0; i < q; i++) items[i] = NONE;
  items[q] = V(lin);
  trnc_arg list = trnc_db_list(b, items, q + 1);
  trnc_ref flat = trnc_db_view(b, DB(b, CLONE, V(x), NONE), rank, shape);
  if (n->op == TRNC_OP_INDEX) return trnc_db_result(b, 0, DB(b, INDEX, V(flat), list));
  trnc_ref put = DB(b, INDEX_PUT, V(flat), list, n->args[2], n->args[3]);
  trnc_ref y = trnc_db_view(b, put, pt.rank, pt.shape);
  if (!adjacent) y = DB(b, PERMUTE, V(y), trnc_db_ints(b, inv, xt.rank));
  return trnc_db_result(b, 0, y);
}

/* masked_scatter(self, mask, source) and masked_scatter_backward(grad, mask,
 * sizes): over the N elements of the (broadcast) result seen flat, the
 * masked element i takes source element pos[i] = (mask[0..i] summed) - 1,
 * the mask's prefix sum as cumsum computes it (scan_rows; exact: counts
 * below 2^24, TRNC_MASKED_SCATTER_MAX); unmasked ones keep self.
 * The backward scatter-adds the masked gradients to pos in zeros of the
 * source's size. */
trnc_status decomp_masked_scatter(trnc_db *b, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_MASKED_SCATTER_BACKWARD;
  const trnc_type out = *trnc_db_type(b, n->outs[0]);
  const trnc_type full = bw ? *trnc_db_type(b, n->args[0].u.ref) : out;
  int64_t N = trnc_type_numel(&full), S = bw ? trnc_type_numel(&out)
                                             : trnc_type_numel(trnc_db_type(b, n->args[2].u.ref));
  trnc_arg shape = trnc_db_ints(b, full.shape, full.rank), no = trnc_db_bool(false);
  trnc_ref x = bw ? n->args[0].u.ref : DB(b, EXPAND, n->args[0], shape, no);
  if (N == 0 || S == 0) {
    trnc_ref z = bw ? DB(b, ZEROS, trnc_db_ints(b, out.shape, out.rank), trnc_db_dtype(out.dtype), NONE, NONE, NONE)
                    : DB(b, CLONE, V(x), NONE);
    return trnc_db_result(b, 0, z);
  }
  trnc_ref m = trnc_db_view(b, DB(b, CLONE, V(DB(b, EXPAND, n->args[1], shape, no)), NONE), 1, &N);
  trnc_ref mf = trnc_db_view(b, trnc_db_cast(b, m, TRNC_F32), 2, (const int64_t[]){1, N});
  trnc_ref cum = trnc_db_view(b, scan_rows(b, mf, 1, N), 1, &N);
  trnc_ref pos = DB(b, CLAMP, V(trnc_db_cast(b, DB(b, ADD_SCALAR, V(cum), I(-1), I(1)), TRNC_I64)), I(0), I(S - 1));
  trnc_ref xf = trnc_db_view(b, DB(b, CLONE, V(x), NONE), 1, &N);
  if (bw) {
    trnc_ref zero = DB(b, FULL_LIKE, V(xf), I(0), NONE, NONE, NONE, NONE, NONE);
    trnc_ref src = DB(b, WHERE, V(m), V(xf), V(zero));
    trnc_ref z = DB(b, ZEROS, trnc_db_ints(b, &S, 1), trnc_db_dtype(out.dtype), NONE, NONE, NONE);
    trnc_ref g = DB(b, SCATTER_ADD, V(z), I(0), V(pos), V(src));
    return trnc_db_result(b, 0, trnc_db_view(b, g, out.rank, out.shape));
  }
  trnc_ref sf = trnc_db_view(b, DB(b, CLONE, n->args[2], NONE), 1, &S);
  trnc_ref r = DB(b, WHERE, V(m), V(DB(b, INDEX_SELECT, V(sf), I(0), V(pos))), V(xf));
  return trnc_db_result(b, 0, trnc_db_view(b, r, out.rank, out.shape));
}
