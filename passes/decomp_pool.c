/*
 * decomp_pool.c — max pooling with indices that the code generator has no
 * kernel for (max_pool3d_with_indices, adaptive_max_pool2d/3d) and their
 * backward ops, rewritten into gathers, comparisons and a scatter-add (see
 * decompose.h for the builder).
 *
 * Each spatial dim j of the input (size L) has, for each output position o
 * and window tap t, the source position pos_j[t][o]:
 *   max_pool3d   o*s - p + t*d, a tap outside [0, L) replaced by the
 *                window's first valid tap (if before it) or last (if after)
 *   adaptive     min(start + t, end - 1) for the window
 *                [floor(o*L/O), ceil((o+1)*L/O)), t < the widest window
 * Every tap tuple (t_0, ..., t_{sp-1}), in lexicographic order, gathers its
 * values v with one index_select per spatial dim (constant int64 positions)
 * and updates
 *   upd = v > acc || isnan(v);  acc = where(upd, v, acc);
 *   idx = where(upd, flat, idx)   (flat: the tap's index into the spatial
 *                                  volume, row-major, a constant)
 * starting from the first tuple. This is eager's CPU loop (aten/src/ATen/
 * native/cpu: maxval = -inf, index of the first valid tap, the same update
 * in d, h, w order) exactly: a replaced tap repeats a valid neighbour next
 * to it in the order, which never changes acc or idx (ties need v > acc; a
 * repeated NaN re-selects its own index). The tuple count is bounded by
 * TRNC_WINDOW_MAX_TAPS (ir/ops.c refuses more).
 *
 * Backward: the input gradient is grad_output scatter-added, per (batch,
 * channel) row, at the saved flat indices (overlapping windows accumulate).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

typedef struct tap_dim {
  int64_t L, O, taps;
  int64_t *pos;  /* [taps][O]: source position of tap t of output position o (malloc'd) */
} tap_dim;

/* Tables of a strided window (kernel k, stride s, padding p, dilation d).
 * Returns 0, 1 when out of memory, 2 when a window has no tap inside. */
static int regular_dim(tap_dim *t, int64_t L, int64_t O, int64_t k, int64_t s, int64_t p, int64_t d) {
  *t = (tap_dim){L, O, k, malloc(sizeof(int64_t) * (size_t)(k * O > 0 ? k * O : 1))};
  if (!t->pos) return 1;
  for (int64_t o = 0; o < O; o++) {
    int64_t lo = -1, hi = -1;
    for (int64_t tt = 0; tt < k; tt++) {
      int64_t q = o * s - p + tt * d;
      if (q >= 0 && q < L) {
        if (lo < 0) lo = tt;
        hi = tt;
      }
    }
    if (lo < 0) return 2;
    for (int64_t tt = 0; tt < k; tt++)
      t->pos[tt * O + o] = o * s - p + (tt < lo ? lo : tt > hi ? hi : tt) * d;
  }
  return 0;
}

/* Tables of adaptive windows. Returns 0, or 1 when out of memory. */
static int adaptive_dim(tap_dim *t, int64_t L, int64_t O) {
  int64_t k = trnc_adaptive_window(L, O);
  *t = (tap_dim){L, O, k, malloc(sizeof(int64_t) * (size_t)(k * O > 0 ? k * O : 1))};
  if (!t->pos) return 1;
  for (int64_t o = 0; o < O; o++) {
    int64_t start = o * L / O, end = ((o + 1) * L + O - 1) / O;
    for (int64_t tt = 0; tt < k; tt++) t->pos[tt * O + o] = start + tt < end ? start + tt : end - 1;
  }
  return 0;
}

typedef struct walk {
  trnc_db *b;
  const tap_dim *dims;
  int sp, d0;                   /* spatial dims, the first one's index */
  int64_t tup[3];               /* the tap tuple being visited */
  int64_t *flat;                /* scratch: prod O entries */
  trnc_ref acc, idx;
  const trnc_type *out;         /* the pooled shape */
} walk;

/* The running maximum's update with the gathered values v of c->tup. */
static void leaf(walk *c, trnc_ref v) {
  trnc_db *b = c->b;
  int64_t O[3] = {1, 1, 1}, Ls[3] = {1, 1, 1};
  for (int j = 0; j < c->sp; j++) {
    O[j] = c->dims[j].O;
    Ls[j] = c->dims[j].L;
  }
  const int64_t *p0 = c->dims[0].pos + c->tup[0] * O[0];
  const int64_t *p1 = c->sp > 1 ? c->dims[1].pos + c->tup[1] * O[1] : NULL;
  const int64_t *p2 = c->sp > 2 ? c->dims[2].pos + c->tup[2] * O[2] : NULL;
  int64_t k = 0;
  for (int64_t a = 0; a < O[0]; a++)
    for (int64_t e = 0; e < O[1]; e++)
      for (int64_t f = 0; f < O[2]; f++)
        c->flat[k++] = (p0[a] * Ls[1] + (p1 ? p1[e] : 0)) * Ls[2] + (p2 ? p2[f] : 0);
  trnc_ref flat = trnc_db_const_i64(b, c->sp, O, c->flat);
  if (c->acc == TRNC_NO_REF) {
    c->acc = v;
    c->idx = DB(b, EXPAND, V(flat), trnc_db_ints(b, c->out->shape, c->out->rank), trnc_db_bool(false));
    return;
  }
  trnc_ref upd = DB(b, LOGICAL_OR, V(DB(b, GT, V(v), V(c->acc))), V(DB(b, ISNAN, V(v))));
  c->acc = DB(b, WHERE, V(upd), V(v), V(c->acc));
  c->idx = DB(b, WHERE, V(upd), V(flat), V(c->idx));
}

/* Visits every tap of spatial dim j and below, cur gathered along dims < j. */
static void visit(walk *c, int j, trnc_ref cur) {
  if (j >= c->sp || j >= 3) {
    leaf(c, cur);
    return;
  }
  const tap_dim *t = &c->dims[j];
  for (int64_t tt = 0; tt < t->taps && !trnc_db_status(c->b); tt++) {
    c->tup[j] = tt;
    trnc_ref pos = trnc_db_const_i64(c->b, 1, &t->O, t->pos + tt * t->O);
    visit(c, j + 1, DB(c->b, INDEX_SELECT, V(cur), I(c->d0 + j), V(pos)));
  }
}

/* zeros of value r's type (an empty result's contents) */
static trnc_ref zeros_like(trnc_db *b, trnc_ref r) {
  const trnc_type *t = trnc_db_type(b, r);
  return trnc_db_zeros(b, t->dtype, t->rank, t->shape);
}

/* max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
 * adaptive_max_pool2d / adaptive_max_pool3d(self, output_size) */
trnc_status decomp_window_max(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), yt = *trnc_db_type(b, n->outs[0]);
  int sp = n->op == TRNC_OP_ADAPTIVE_MAX_POOL2D ? 2 : 3, d0 = xt.rank - sp;
  if (trnc_type_numel(&yt) == 0) {
    trnc_db_result(b, 0, zeros_like(b, n->outs[0]));
    return trnc_db_result(b, 1, zeros_like(b, n->outs[1]));
  }
  tap_dim dims[3] = {{0}};
  int err = 0;
  for (int j = 0; j < sp && !err; j++) {
    int64_t L = xt.shape[d0 + j], O = yt.shape[d0 + j];
    if (n->op != TRNC_OP_MAX_POOL3D) {
      err = adaptive_dim(&dims[j], L, O);
      continue;
    }
    int64_t k = trnc_arg_spatial(n, 1, j, 1), s = trnc_arg_spatial(n, 2, j, k);
    err = regular_dim(&dims[j], L, O, k, s, trnc_arg_spatial(n, 3, j, 0), trnc_arg_spatial(n, 4, j, 1));
  }
  walk c = {.b = b, .dims = dims, .sp = sp, .d0 = d0, .acc = TRNC_NO_REF, .idx = TRNC_NO_REF,
            .out = &yt};
  c.flat = err ? NULL : malloc(sizeof(int64_t) * (size_t)trnc_type_numel(&yt));
  if (err == 2) trnc_db_fail(b, "a pooling window has no tap inside the input");
  else if (!c.flat) trnc_db_fail(b, "out of memory for the window tables");
  else visit(&c, 0, x);
  free(c.flat);
  for (int j = 0; j < sp; j++) free(dims[j].pos);
  if (trnc_db_status(b)) return trnc_db_status(b);
  trnc_db_result(b, 0, c.acc);
  return trnc_db_result(b, 1, c.idx);
}

/* max_pool3d_with_indices_backward(grad_output, self, ..., indices)
 * adaptive_max_pool{2,3}d_backward(grad_output, self, indices) */
trnc_status decomp_window_max_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref gy = n->args[0].u.ref, x = n->args[1].u.ref;
  trnc_ref idx = n->args[n->op == TRNC_OP_MAX_POOL3D_BACKWARD ? 7 : 2].u.ref;
  int sp = n->op == TRNC_OP_ADAPTIVE_MAX_POOL2D_BACKWARD ? 2 : 3;
  const trnc_type xt = *trnc_db_type(b, x), gt = *trnc_db_type(b, gy);
  int64_t rows = 1, in = 1, out = 1;
  for (int i = 0; i < xt.rank; i++) {
    if (i < xt.rank - sp) rows *= xt.shape[i];
    else {
      in *= xt.shape[i];
      out *= gt.shape[i];
    }
  }
  if (rows * in * out == 0) return trnc_db_result(b, 0, zeros_like(b, n->outs[0]));
  trnc_ref g2 = trnc_db_view(b, DB(b, CLONE, V(gy), NONE), 2, (const int64_t[]){rows, out});
  trnc_ref i2 = trnc_db_view(b, DB(b, CLONE, V(idx), NONE), 2, (const int64_t[]){rows, out});
  trnc_ref z = trnc_db_zeros(b, gt.dtype, 2, (const int64_t[]){rows, in});
  trnc_ref s = DB(b, SCATTER_ADD, V(z), I(1), V(i2), V(g2));
  return trnc_db_result(b, 0, trnc_db_view(b, s, xt.rank, xt.shape));
}

/* ==== average pooling over three dims ===================================== */

/* Depth taps of a 3-D average pooling: tap t of output depth od reads input
 * depth pos[t][od] with weight w[t][od] (0 for a tap outside the window's
 * part inside the input, which then reads any valid depth). */
typedef struct depth_taps {
  int64_t D, Do, taps;
  int64_t *pos;
  float *w;
} depth_taps;

static bool depth_alloc(depth_taps *t, int64_t D, int64_t Do, int64_t taps) {
  size_t n = (size_t)(taps * Do > 0 ? taps * Do : 1);
  *t = (depth_taps){D, Do, taps, malloc(sizeof(int64_t) * n), malloc(sizeof(float) * n)};
  return t->pos && t->w;
}

/* avg_pool3d's depth: eager's window [od*s - p, min(od*s - p + k, D + p)),
 * clipped to the input; the depth factor of the divisor is the window's size
 * with padding (count_include_pad) or clipped, or 1 / divisor_override
 * overall (the 2-D pools then only sum). */
static bool avg_depth(depth_taps *t, int64_t D, int64_t Do, int64_t k, int64_t s, int64_t p, bool cip,
                      int64_t override) {
  if (!depth_alloc(t, D, Do, k)) return false;
  for (int64_t od = 0; od < Do; od++) {
    int64_t start = od * s - p, end = start + k < D + p ? start + k : D + p;
    int64_t cs = start > 0 ? start : 0, ce = end < D ? end : D;
    double factor = override ? (double)override : cip ? (double)(end - start) : (double)(ce - cs);
    for (int64_t tt = 0; tt < k; tt++) {
      int64_t q = start + tt;
      bool in = q >= cs && q < ce;
      t->pos[tt * Do + od] = in ? q : cs < D ? cs : D - 1;
      t->w[tt * Do + od] = in ? (float)(1.0 / factor) : 0.0f;
    }
  }
  return true;
}

/* _adaptive_avg_pool3d's depth: windows [floor(od*D/Do), ceil((od+1)*D/Do)). */
static bool adaptive_depth(depth_taps *t, int64_t D, int64_t Do) {
  int64_t k = trnc_adaptive_window(D, Do);
  if (!depth_alloc(t, D, Do, k)) return false;
  for (int64_t od = 0; od < Do; od++) {
    int64_t start = od * D / Do, end = ((od + 1) * D + Do - 1) / Do;
    for (int64_t tt = 0; tt < k; tt++) {
      t->pos[tt * Do + od] = start + tt < end ? start + tt : end - 1;
      t->w[tt * Do + od] = start + tt < end ? (float)(1.0 / (double)(end - start)) : 0.0f;
    }
  }
  return true;
}

/* The 2-D pooling of planes v [B, H, W] (or its backward at grad g, to the
 * shape of v) that n's op does over its last two dims: a pooling node (an
 * adaptive one the code generator does not lower whole: its decomposition). */
static trnc_ref pool2d_of(trnc_db *b, const trnc_node *n, trnc_ref v, trnc_ref g, const int64_t *out_hw) {
  bool adaptive = n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D || n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD;
  if (adaptive) {
    bool bw = g != TRNC_NO_REF;
    trnc_arg aa[2] = {V(bw ? g : v), bw ? V(v) : trnc_db_ints(b, out_hw, 2)};
    trnc_node tmp = {.op = bw ? TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD : TRNC_OP_ADAPTIVE_AVG_POOL2D,
                     .args = aa, .nargs = 2};
    if (decomp_pool2d_lowered_directly(trnc_db_graph(b), &tmp)) return trnc_db_op(b, tmp.op, aa, 2);
    const trnc_type vt = *trnc_db_type(b, v);
    return bw ? trnc_db_adaptive_avg_pool2d_bw(b, g, &vt) : trnc_db_adaptive_avg_pool2d(b, v, out_hw);
  }
  uint32_t a = g != TRNC_NO_REF ? 2 : 1; /* kernel_size */
  int64_t k[2], s[2], p[2];
  for (int j = 0; j < 2; j++) {
    k[j] = trnc_arg_spatial(n, a, j + 1, 1);
    s[j] = trnc_arg_spatial(n, a + 1, j + 1, k[j]);
    p[j] = trnc_arg_spatial(n, a + 2, j + 1, 0);
  }
  const trnc_arg *ov = trnc_node_arg(n, a + 5);
  bool override = ov && ov->kind == TRNC_ARG_INT;
  trnc_arg args[8] = {V(v), trnc_db_ints(b, k, 2), trnc_db_ints(b, s, 2), trnc_db_ints(b, p, 2),
                      trnc_db_bool(trnc_arg_bool(n, a + 3, false)),
                      trnc_db_bool(trnc_arg_bool(n, a + 4, true)), override ? I(1) : NONE};
  if (g == TRNC_NO_REF) {
    trnc_node tmp = {.op = TRNC_OP_AVG_POOL2D, .args = args, .nargs = 7};
    if (decomp_pool2d_lowered_directly(trnc_db_graph(b), &tmp)) return trnc_db_op(b, TRNC_OP_AVG_POOL2D, args, 7);
    trnc_pool2d q = {.ceil = trnc_arg_bool(n, a + 3, false), .cip = trnc_arg_bool(n, a + 4, true),
                     .override = override ? 1 : 0};
    for (int j = 0; j < 2; j++) q.k[j] = k[j], q.s[j] = s[j], q.p[j] = p[j], q.d[j] = 1;
    return trnc_db_avg_pool2d(b, v, &q);
  }
  memmove(&args[1], &args[0], sizeof args[0] * 7);
  args[0] = V(g);
  return trnc_db_op(b, TRNC_OP_AVG_POOL2D_BACKWARD, args, 8);
}

/* The depth taps of node n (input x of shape xt, pooled shape yt). */
static bool taps_of(const trnc_node *n, const trnc_type *xt, const trnc_type *yt, depth_taps *t) {
  int d0 = xt->rank - 3;
  int64_t D = xt->shape[d0], Do = yt->shape[d0];
  if (n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D || n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD)
    return adaptive_depth(t, D, Do);
  uint32_t a = n->op == TRNC_OP_AVG_POOL3D_BACKWARD ? 2 : 1;
  int64_t k = trnc_arg_spatial(n, a, 0, 1);
  const trnc_arg *ov = trnc_node_arg(n, a + 5);
  return avg_depth(t, D, Do, k, trnc_arg_spatial(n, a + 1, 0, k), trnc_arg_spatial(n, a + 2, 0, 0),
                   trnc_arg_bool(n, a + 4, true), ov && ov->kind == TRNC_ARG_INT ? ov->u.i : 0);
}

/* avg_pool3d / _adaptive_avg_pool3d and their backward: per depth tap, the
 * 2-D pooling (or its backward) of the planes at that tap's depths, weighted
 * by the depth factor and summed (backward: scatter-added back to the
 * depths). Float32 accumulation; the result in the declared dtype. */
trnc_status decomp_avg_pool3d(trnc_db *b, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_AVG_POOL3D_BACKWARD || n->op == TRNC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD;
  trnc_ref x = n->args[bw ? 1 : 0].u.ref, gy = bw ? n->args[0].u.ref : TRNC_NO_REF;
  const trnc_type xt = *trnc_db_type(b, x), yt = *trnc_db_type(b, bw ? gy : n->outs[0]);
  if (trnc_type_numel(&xt) == 0 || trnc_type_numel(&yt) == 0)
    return trnc_db_result(b, 0, zeros_like(b, n->outs[0]));
  int d0 = xt.rank - 3;
  int64_t B = 1, H = xt.shape[d0 + 1], W = xt.shape[d0 + 2], Do = yt.shape[d0];
  for (int i = 0; i < d0; i++) B *= xt.shape[i];
  int64_t tap_shape[TRNC_MAX_RANK], hw[2] = {yt.shape[d0 + 1], yt.shape[d0 + 2]};
  memcpy(tap_shape, xt.shape, sizeof tap_shape);
  tap_shape[d0] = Do;
  depth_taps t;
  if (!taps_of(n, &xt, &yt, &t)) {
    free(t.pos);
    free(t.w);
    return trnc_db_fail(b, "out of memory for the depth tables");
  }
  trnc_ref acc = bw ? trnc_db_zeros(b, TRNC_F32, xt.rank, xt.shape) : TRNC_NO_REF;
  const int64_t wshape[3] = {Do, 1, 1};
  for (int64_t tt = 0; tt < t.taps && !trnc_db_status(b); tt++) {
    trnc_ref pos = trnc_db_const_i64(b, 1, &Do, t.pos + tt * Do);
    trnc_ref w = trnc_db_const_f32(b, 3, wshape, t.w + tt * Do);
    if (!bw) {
      trnc_ref planes = trnc_db_view(b, DB(b, INDEX_SELECT, V(x), I(d0), V(pos)), 3,
                                     (const int64_t[]){B * Do, H, W});
      trnc_ref p = trnc_db_view(b, pool2d_of(b, n, planes, TRNC_NO_REF, hw), yt.rank, yt.shape);
      trnc_ref term = DB(b, MUL, V(p), V(w));
      acc = acc == TRNC_NO_REF ? term : DB(b, ADD, V(acc), V(term), I(1));
      continue;
    }
    trnc_ref g = trnc_db_view(b, DB(b, MUL, V(trnc_db_f32(b, gy)), V(w)), 3,
                              (const int64_t[]){B * Do, hw[0], hw[1]});
    trnc_ref like = trnc_db_shape_only(b, TRNC_F32, 3, (const int64_t[]){B * Do, H, W});
    trnc_ref d = trnc_db_view(b, pool2d_of(b, n, like, g, hw), xt.rank, tap_shape);
    trnc_ref at = DB(b, EXPAND, V(trnc_db_view(b, pos, 3, wshape)), trnc_db_ints(b, tap_shape, xt.rank),
                     trnc_db_bool(false));
    acc = DB(b, SCATTER_ADD, V(acc), I(d0), V(DB(b, CLONE, V(at), NONE)), V(d));
  }
  free(t.pos);
  free(t.w);
  return trnc_db_result(b, 0, acc);
}
