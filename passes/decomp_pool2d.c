/*
 * decomp_pool2d.c — 2-D max/avg/adaptive-avg pooling and their backward ops
 * as taps over strided views, which the kernel IR lowers as elementwise
 * kernels (loads through access maps, no gathers).
 *
 * Spatial dim j of the input [.., H, W] (size L, output size O, kernel k,
 * stride s, padding p, dilation d): the input is padded (constant_pad_nd)
 * by p before and by hi = max(0, (O-1)*s + (k-1)*d + 1 - p - L) after
 * (ceil_mode's last window), so window tap t of every output position is
 * the strided view slice(xp, j, t*d, t*d + (O-1)*s + 1, s) — no copy.
 *
 *   max:  pad -inf; acc = tap (0, 0), idx = its index, the first valid tap
 *         of the window (eager's initial index); for the other taps in
 *         (kh, kw) order upd = v > acc || isnan(v), acc = where(upd, v, acc),
 *         idx = where(upd, (oh*s-p + kh*d)*W + ow*s-p + kw*d, idx). A padded
 *         tap (-inf) never updates, so this is eager's CPU loop exactly
 *         (ties keep the first index, a NaN wins).
 *   avg:  pad 0; the float32 sum of the taps in (kh, kw) order divided by
 *         eager's divisor: divisor_override, or the window's size inside the
 *         padded input (count_include_pad) or inside the input, per output
 *         position (a constant when it varies).
 * Backward: the gradient g of every output position (avg: gy / divisor, in
 * float32) is spread back to the taps of its window. With U = g upsampled
 * by s (s-1 zeros after each element) and padded by A = max(0, (k-1)*d - p)
 * before (and enough after), input position i receives U[i + p - t*d + A]
 * from tap t: a sum over the taps of views of U over the input's shape.
 * Max pooling's backward selects by index instead: the indices are upsampled
 * and padded the same way with -1, and tap t adds where(Ui == i, Ug, 0).
 * Adaptive average pooling whose windows tile the input (O divides L) is the
 * sum over the window dims of the input viewed [.., OH, kh, OW, kw], / kh
 * / kw (eager's order); its backward expands gy / kh / kw over the windows.
 * Other adaptive windows overlap and vary in size: per dim, the widest
 * window's taps are gathered (index_select of each window's clamped
 * positions) and summed where the tap is inside the window.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

/* Output size of a pooled dim (eager's pooling_output_shape). */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t o = (num >= 0 ? num / st : -((-num + st - 1) / st)) + 1;
  if (ceil && (o - 1) * st >= in + pad) o--;
  return o;
}

/* The geometry of pool2d node n: kernel_size at argument a, then stride,
 * padding, (dilation if dil), ceil_mode. */
static trnc_pool2d geometry(const trnc_node *n, uint32_t a, bool dil) {
  trnc_pool2d q = {.ceil = trnc_arg_bool(n, a + (dil ? 4 : 3), false)};
  for (int j = 0; j < 2; j++) {
    q.k[j] = trnc_arg_spatial(n, a, j, 1);
    q.s[j] = trnc_arg_spatial(n, a + 1, j, q.k[j]);
    q.p[j] = trnc_arg_spatial(n, a + 2, j, 0);
    q.d[j] = dil ? trnc_arg_spatial(n, a + 3, j, 1) : 1;
  }
  if (!dil) {
    const trnc_arg *ov = trnc_node_arg(n, a + 5);
    q.cip = trnc_arg_bool(n, a + 4, true);
    q.override = ov && ov->kind == TRNC_ARG_INT ? ov->u.i : 0;
  }
  return q;
}

static void out_hw(const trnc_type *xt, const trnc_pool2d *q, int64_t *o) {
  for (int j = 0; j < 2; j++)
    o[j] = pool_out(xt->shape[xt->rank - 2 + j], q->k[j], q->p[j], q->s[j], q->d[j], q->ceil);
}

/* The pad value v as an argument of x's dtype class. */
static trnc_arg pad_value(trnc_db *b, trnc_ref x, double v) {
  trnc_dtype dt = trnc_db_type(b, x)->dtype;
  return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16 ? trnc_db_float(v) : I((int64_t)v);
}

static trnc_ref pad2(trnc_db *b, trnc_ref x, const int64_t *lo, const int64_t *hi, double v) {
  if (!lo[0] && !lo[1] && !hi[0] && !hi[1]) return x;
  const int64_t pad[4] = {lo[1], hi[1], lo[0], hi[0]};
  return DB(b, CONSTANT_PAD_ND, V(x), trnc_db_ints(b, pad, 4), pad_value(b, x, v));
}

/* x [.., H, W] padded for the windows of q with value v. */
static trnc_ref pad_windows(trnc_db *b, trnc_ref x, const trnc_pool2d *q, const int64_t *o, double v) {
  const trnc_type *t = trnc_db_type(b, x);
  int64_t hi[2];
  for (int j = 0; j < 2; j++) {
    int64_t need = (o[j] - 1) * q->s[j] + (q->k[j] - 1) * q->d[j] + 1 - q->p[j] - t->shape[t->rank - 2 + j];
    hi[j] = need > 0 ? need : 0;
  }
  return pad2(b, x, q->p, hi, v);
}

/* The view xp[.., start0 : start0 + (n0-1)*st0 + 1 : st0, start1 : ... : st1]. */
static trnc_ref window(trnc_db *b, trnc_ref xp, const int64_t *start, const int64_t *n, const int64_t *st) {
  int r = trnc_db_type(b, xp)->rank;
  for (int j = 0; j < 2; j++)
    xp = DB(b, SLICE, V(xp), I(r - 2 + j), I(start[j]), I(start[j] + (n[j] - 1) * st[j] + 1), I(st[j]));
  return xp;
}

/* Tap (th, tw) of the windows of q over the padded input xp. */
static trnc_ref tap(trnc_db *b, trnc_ref xp, const trnc_pool2d *q, const int64_t *o, int64_t th, int64_t tw) {
  const int64_t start[2] = {th * q->d[0], tw * q->d[1]};
  return window(b, xp, start, o, q->s);
}

static trnc_ref as_f32(trnc_db *b, trnc_ref x) {
  return trnc_db_type(b, x)->dtype == TRNC_F32 ? x : trnc_db_cast(b, x, TRNC_F32);
}

/* Eager's avg_pool2d divisor per output position: a scalar *div when it is
 * uniform (returns TRNC_NO_REF), else a float32 constant [OH, OW]. */
static trnc_ref divisor(trnc_db *b, const trnc_type *xt, const trnc_pool2d *q, const int64_t *o, double *div) {
  int64_t H = xt->shape[xt->rank - 2], W = xt->shape[xt->rank - 1];
  float *t = malloc(sizeof(float) * (size_t)(o[0] * o[1] + 1));
  if (!t) {
    trnc_db_fail(b, "out of memory for the divisor table");
    return TRNC_NO_REF;
  }
  bool uniform = true;
  t[0] = 1;
  for (int64_t i = 0; i < o[0]; i++)
    for (int64_t j = 0; j < o[1]; j++) {
      int64_t hs = i * q->s[0] - q->p[0], ws = j * q->s[1] - q->p[1];
      int64_t he = hs + q->k[0] < H + q->p[0] ? hs + q->k[0] : H + q->p[0];
      int64_t we = ws + q->k[1] < W + q->p[1] ? ws + q->k[1] : W + q->p[1];
      int64_t pool = (he - hs) * (we - ws);
      hs = hs > 0 ? hs : 0;
      ws = ws > 0 ? ws : 0;
      he = he < H ? he : H;
      we = we < W ? we : W;
      int64_t f = q->override ? q->override : q->cip ? pool : (he - hs) * (we - ws);
      t[i * o[1] + j] = (float)f;
      uniform = uniform && t[i * o[1] + j] == t[0];
    }
  *div = t[0];
  trnc_ref r = uniform ? TRNC_NO_REF : trnc_db_const_f32(b, 2, o, t);
  free(t);
  return r;
}

static trnc_ref divide(trnc_db *b, trnc_ref x, trnc_ref dt, double d) {
  return dt != TRNC_NO_REF ? DB(b, DIV, V(x), V(dt)) : DB(b, DIV_SCALAR, V(x), trnc_db_float(d));
}

/* g [.., OH, OW] upsampled by q's strides and padded so that tap t of input
 * position i reads element i + p - t*d + A (A = lo[j] returned). */
static trnc_ref spread(trnc_db *b, trnc_ref g, const trnc_type *xt, const trnc_pool2d *q, double v,
                       int64_t *lo) {
  const trnc_type gt = *trnc_db_type(b, g);
  int r = gt.rank;
  /* one constant_pad_nd of g seen [.., OH, 1, OW, 1]: along dim j, e0 rows
   * of s zeros before, a zeros before and s-1-a after each element (a =
   * A mod s), e1 rows after; g[o] then lands at (e0 + o)*s + a = o*s + A */
  int64_t pad[8], sh[TRNC_MAX_RANK];
  memcpy(sh, gt.shape, sizeof sh);
  for (int j = 0; j < 2; j++) {
    int64_t L = xt->shape[xt->rank - 2 + j], O = gt.shape[r - 2 + j], s = q->s[j];
    int64_t A = (q->k[j] - 1) * q->d[j] - q->p[j];
    lo[j] = A > 0 ? A : 0;
    int64_t need = L + q->p[j] + lo[j] - (lo[j] / s + O) * s; /* elements missing after */
    int64_t e0 = lo[j] / s, a = lo[j] % s, e1 = need > 0 ? (need + s - 1) / s : 0;
    int k = 4 * (1 - j); /* pad entries of the unit dim after dim j, then of dim j */
    pad[k] = a, pad[k + 1] = s - 1 - a, pad[k + 2] = e0, pad[k + 3] = e1;
    sh[r - 2 + j] = (e0 + O + e1) * s;
  }
  trnc_ref u = DB(b, UNSQUEEZE, V(DB(b, UNSQUEEZE, V(g), I(r))), I(r - 1));
  u = DB(b, CONSTANT_PAD_ND, V(u), trnc_db_ints(b, pad, 8), pad_value(b, g, v));
  return trnc_db_view(b, u, r, sh);
}

/* The view of the spread gradient u that tap (th, tw) adds to the input. */
static trnc_ref back_tap(trnc_db *b, trnc_ref u, const trnc_type *xt, const trnc_pool2d *q, const int64_t *lo,
                         int64_t th, int64_t tw) {
  const int64_t one[2] = {1, 1}, n[2] = {xt->shape[xt->rank - 2], xt->shape[xt->rank - 1]};
  const int64_t start[2] = {q->p[0] - th * q->d[0] + lo[0], q->p[1] - tw * q->d[1] + lo[1]};
  return window(b, u, start, n, one);
}

/* True if the windows of q sit inside disjoint s0 x s1 blocks that tile the
 * input xt exactly (input position (h, w) can only be in output (h/s0,
 * w/s1)'s window); `full`: the windows are the blocks. */
static bool tiled(const trnc_pool2d *q, const trnc_type *xt, const int64_t *o, bool full) {
  for (int j = 0; j < 2; j++) {
    int64_t span = (q->k[j] - 1) * q->d[j] + 1;
    if (q->p[j] || span > q->s[j] || (full && span != q->s[j]) || (full && q->d[j] != 1) ||
        xt->shape[xt->rank - 2 + j] != o[j] * q->s[j])
      return false;
  }
  return true;
}

/* g [.., OH, OW] seen [.., OH, s0, OW, s1], repeated over each block (a view). */
static trnc_ref blocks(trnc_db *b, trnc_ref g, const int64_t *s) {
  const trnc_type gt = *trnc_db_type(b, g);
  int r = gt.rank;
  int64_t sh[TRNC_MAX_RANK + 2];
  memcpy(sh, gt.shape, sizeof(int64_t) * (size_t)(r - 2));
  sh[r - 2] = gt.shape[r - 2], sh[r - 1] = s[0], sh[r] = gt.shape[r - 1], sh[r + 1] = s[1];
  trnc_ref u = DB(b, UNSQUEEZE, V(DB(b, UNSQUEEZE, V(g), I(r))), I(r - 1));
  return DB(b, EXPAND, V(u), trnc_db_ints(b, sh, r + 2), trnc_db_bool(false));
}

/* The gradient of tiled windows, v [.., OH, s0, OW, s1] (the contiguous
 * result of an elementwise op), as the input's shape xt. */
static trnc_ref unblock(trnc_db *b, trnc_ref v, const trnc_type *xt) {
  return trnc_db_view(b, v, xt->rank, xt->shape);
}

/* The views of every tap in (kh, kw) order, emitted before the arithmetic
 * on them so that the code generator's elementwise group is not cut by a
 * view (malloc'd; NULL after an error): forward taps of the padded input u
 * (xt NULL), or backward taps of the spread gradient u over input type xt. */
static trnc_ref *tap_views(trnc_db *b, trnc_ref u, const trnc_pool2d *q, const int64_t *o, const trnc_type *xt,
                           const int64_t *lo) {
  trnc_ref *v = malloc(sizeof(trnc_ref) * (size_t)(q->k[0] * q->k[1] + 1));
  if (!v) {
    trnc_db_fail(b, "out of memory for the taps");
    return NULL;
  }
  v[0] = TRNC_NO_REF;
  for (int64_t th = 0; th < q->k[0]; th++)
    for (int64_t tw = 0; tw < q->k[1]; tw++)
      v[th * q->k[1] + tw] = xt ? back_tap(b, u, xt, q, lo, th, tw) : tap(b, u, q, o, th, tw);
  return v;
}

/* The float32 sum of the views v[0..n) in order. */
static trnc_ref sum_views(trnc_db *b, const trnc_ref *v, int64_t n) {
  trnc_ref acc = TRNC_NO_REF;
  for (int64_t t = 0; t < n; t++)
    acc = acc == TRNC_NO_REF ? as_f32(b, v[t]) : DB(b, ADD, V(acc), V(as_f32(b, v[t])), I(1));
  return acc;
}

trnc_ref trnc_db_avg_pool2d(trnc_db *b, trnc_ref x, const trnc_pool2d *q) {
  const trnc_type xt = *trnc_db_type(b, x);
  int64_t o[2];
  out_hw(&xt, q, o);
  trnc_ref *v = tap_views(b, pad_windows(b, x, q, o, 0.0), q, o, NULL, NULL);
  if (!v) return TRNC_NO_REF;
  trnc_ref acc = sum_views(b, v, q->k[0] * q->k[1]);
  free(v);
  double d;
  trnc_ref dt = divisor(b, &xt, q, o, &d);
  return trnc_db_cast(b, divide(b, acc, dt, d), xt.dtype);
}

trnc_ref trnc_db_avg_pool2d_bw(trnc_db *b, trnc_ref gy, const trnc_type *xtp, const trnc_pool2d *q) {
  const trnc_type xc = *xtp, *xt = &xc; /* the graph's values may move as nodes are emitted */
  int64_t o[2], lo[2];
  out_hw(xt, q, o);
  double d;
  trnc_ref dt = divisor(b, xt, q, o, &d);
  trnc_ref g = divide(b, as_f32(b, gy), dt, d);
  if (tiled(q, xt, o, true)) /* every input position in one window: g repeated */
    return trnc_db_cast(b, unblock(b, DB(b, CLONE, V(blocks(b, g, q->s)), NONE), xt), trnc_db_type(b, gy)->dtype);
  trnc_ref u = spread(b, g, xt, q, 0.0, lo);
  trnc_ref *v = tap_views(b, u, q, o, xt, lo);
  if (!v) return TRNC_NO_REF;
  trnc_ref acc = sum_views(b, v, q->k[0] * q->k[1]);
  free(v);
  return trnc_db_cast(b, acc, trnc_db_type(b, gy)->dtype);
}

/* ---- max pooling ------------------------------------------------------------- */

/* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
trnc_status decomp_max_pool2d(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), yt = *trnc_db_type(b, n->outs[0]);
  if (trnc_type_numel(&yt) == 0) {
    trnc_db_result(b, 0, trnc_db_zeros(b, yt.dtype, yt.rank, yt.shape));
    return trnc_db_result(b, 1, trnc_db_zeros(b, TRNC_I64, yt.rank, yt.shape));
  }
  trnc_pool2d q = geometry(n, 1, true);
  int64_t o[2], W = xt.shape[xt.rank - 1];
  out_hw(&xt, &q, o);
  /* flat input index of tap (0, 0) (clamped: the window's first valid tap)
   * and of the window's origin (unclamped), per output position */
  int64_t *first = malloc(sizeof(int64_t) * (size_t)(o[0] * o[1]));
  int64_t *base = malloc(sizeof(int64_t) * (size_t)(o[0] * o[1]));
  if (!first || !base) {
    free(first);
    free(base);
    return trnc_db_fail(b, "out of memory for the index tables");
  }
  for (int64_t i = 0; i < o[0]; i++)
    for (int64_t j = 0; j < o[1]; j++) {
      int64_t h0 = i * q.s[0] - q.p[0], w0 = j * q.s[1] - q.p[1], hf = h0, wf = w0;
      while (hf < 0) hf += q.d[0];
      while (wf < 0) wf += q.d[1];
      first[i * o[1] + j] = hf * W + wf;
      base[i * o[1] + j] = h0 * W + w0;
    }
  trnc_ref fc = trnc_db_const_i64(b, 2, o, first), bc = trnc_db_const_i64(b, 2, o, base);
  free(first);
  free(base);
  trnc_ref *tv = tap_views(b, pad_windows(b, x, &q, o, -INFINITY), &q, o, NULL, NULL);
  if (!tv) return trnc_db_status(b);
  /* acc and the offset of the selected tap from the window's origin (0:
   * tap (0, 0) or none; every other tap's offset is positive) */
  trnc_ref acc = tv[0], off = TRNC_NO_REF;
  for (int64_t th = 0; th < q.k[0]; th++)
    for (int64_t tw = th ? 0 : 1; tw < q.k[1]; tw++) {
      trnc_ref v = tv[th * q.k[1] + tw];
      trnc_ref upd = DB(b, LOGICAL_OR, V(DB(b, GT, V(v), V(acc))), V(DB(b, ISNAN, V(v))));
      trnc_arg at = I(th * q.d[0] * W + tw * q.d[1]);
      acc = DB(b, WHERE, V(upd), V(v), V(acc));
      off = off == TRNC_NO_REF ? DB(b, WHERE, V(upd), at, I(0)) : DB(b, WHERE, V(upd), at, V(off));
    }
  trnc_ref idx = off == TRNC_NO_REF ? fc : DB(b, ADD, V(bc), V(off), I(1));
  if (off != TRNC_NO_REF && (q.p[0] || q.p[1])) /* a padded tap (0, 0) keeps the first valid one */
    idx = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(off), I(0))), V(fc), V(idx));
  idx = DB(b, EXPAND, V(idx), trnc_db_ints(b, yt.shape, yt.rank), trnc_db_bool(false));
  free(tv);
  trnc_db_result(b, 0, acc);
  return trnc_db_result(b, 1, idx);
}

/* max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
 * padding, dilation, ceil_mode, indices) */
trnc_status decomp_max_pool2d_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref gy = n->args[0].u.ref, x = n->args[1].u.ref, ix = n->args[7].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), gt = *trnc_db_type(b, gy);
  if (trnc_type_numel(&xt) == 0 || trnc_type_numel(&gt) == 0)
    return trnc_db_result(b, 0, trnc_db_zeros(b, gt.dtype, xt.rank, xt.shape));
  trnc_pool2d q = geometry(n, 2, true);
  int64_t H = xt.shape[xt.rank - 2], W = xt.shape[xt.rank - 1], hw[2] = {H, W}, lo[2];
  int64_t *flat = malloc(sizeof(int64_t) * (size_t)(H * W));
  if (!flat) return trnc_db_fail(b, "out of memory for the index table");
  for (int64_t i = 0; i < H * W; i++) flat[i] = i;
  int64_t o[2] = {gt.shape[gt.rank - 2], gt.shape[gt.rank - 1]};
  if (tiled(&q, &xt, o, false)) { /* one window per input position: no taps */
    const int64_t sh[4] = {o[0], q.s[0], o[1], q.s[1]};
    trnc_ref bi = blocks(b, ix, q.s), bg = blocks(b, gy, q.s); /* views first: one kernel */
    trnc_ref hit = DB(b, EQ, V(bi), V(trnc_db_const_i64(b, 4, sh, flat)));
    free(flat);
    trnc_ref v = DB(b, WHERE, V(hit), V(as_f32(b, bg)), trnc_db_float(0.0));
    return trnc_db_result(b, 0, trnc_db_cast(b, unblock(b, v, &xt), gt.dtype));
  }
  trnc_ref fc = trnc_db_const_i64(b, 2, hw, flat);
  free(flat);
  trnc_ref ug = spread(b, as_f32(b, gy), &xt, &q, 0.0, lo);
  trnc_ref ui = spread(b, ix, &xt, &q, -1.0, lo), acc = TRNC_NO_REF;
  trnc_ref *vg = tap_views(b, ug, &q, NULL, &xt, lo), *vi = vg ? tap_views(b, ui, &q, NULL, &xt, lo) : NULL;
  for (int64_t t = 0; vi && t < q.k[0] * q.k[1]; t++) {
    trnc_ref v = DB(b, WHERE, V(DB(b, EQ, V(vi[t]), V(fc))), V(vg[t]), trnc_db_float(0.0));
    acc = acc == TRNC_NO_REF ? v : DB(b, ADD, V(acc), V(v), I(1));
  }
  free(vg);
  free(vi);
  if (!vi) return trnc_db_status(b);
  return trnc_db_result(b, 0, trnc_db_cast(b, acc, gt.dtype));
}

/* ---- average pooling -------------------------------------------------------- */

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
trnc_status decomp_avg_pool2d(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type yt = *trnc_db_type(b, n->outs[0]);
  if (trnc_type_numel(&yt) == 0) return trnc_db_result(b, 0, trnc_db_zeros(b, yt.dtype, yt.rank, yt.shape));
  trnc_pool2d q = geometry(n, 1, false);
  return trnc_db_result(b, 0, trnc_db_avg_pool2d(b, x, &q));
}

/* avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) */
trnc_status decomp_avg_pool2d_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref gy = n->args[0].u.ref, x = n->args[1].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), gt = *trnc_db_type(b, gy);
  if (trnc_type_numel(&xt) == 0 || trnc_type_numel(&gt) == 0)
    return trnc_db_result(b, 0, trnc_db_zeros(b, gt.dtype, xt.rank, xt.shape));
  trnc_pool2d q = geometry(n, 2, false);
  return trnc_db_result(b, 0, trnc_db_avg_pool2d_bw(b, gy, &xt, &q));
}

/* ---- adaptive average pooling ------------------------------------------------ */

/* Window [start, end) of adaptive output position i of L inputs over O. */
static int64_t ad_start(int64_t i, int64_t L, int64_t O) { return i * L / O; }
static int64_t ad_end(int64_t i, int64_t L, int64_t O) { return ((i + 1) * L + O - 1) / O; }

/* Gather taps along dim `dim` of x: output position i (of n) sums x at
 * pos[t*n + i] for the taps t < taps with ok[t*n + i]. Float32. */
static trnc_ref gather_sum(trnc_db *b, trnc_ref x, int dim, int64_t n, int64_t taps, const int64_t *pos,
                           const int64_t *ok) {
  int r = trnc_db_type(b, x)->rank;
  int64_t mshape[2] = {n, 1};
  bool last = dim == r - 1;
  trnc_ref acc = TRNC_NO_REF;
  for (int64_t t = 0; t < taps; t++) {
    trnc_ref v = as_f32(b, DB(b, INDEX_SELECT, V(x), I(dim), V(trnc_db_const_i64(b, 1, &n, pos + t * n))));
    bool all = true;
    for (int64_t i = 0; i < n; i++) all = all && ok[t * n + i];
    if (!all) {
      trnc_ref m = trnc_db_const_i64(b, last ? 1 : 2, last ? &n : mshape, ok + t * n);
      v = DB(b, WHERE, V(DB(b, NE_SCALAR, V(m), I(0))), V(v), trnc_db_float(0.0));
    }
    acc = acc == TRNC_NO_REF ? v : DB(b, ADD, V(acc), V(v), I(1));
  }
  return acc;
}

/* Divides x [.., OH, OW] by the window sizes along dim j (adaptive from L). */
static trnc_ref ad_divide(trnc_db *b, trnc_ref x, int j, int64_t L, int64_t O) {
  float *w = malloc(sizeof(float) * (size_t)(O + 1));
  if (!w) {
    trnc_db_fail(b, "out of memory for the window table");
    return TRNC_NO_REF;
  }
  bool uniform = true;
  w[0] = 1;
  for (int64_t i = 0; i < O; i++) {
    w[i] = (float)(ad_end(i, L, O) - ad_start(i, L, O));
    uniform = uniform && w[i] == w[0];
  }
  const int64_t shape[2] = {O, 1};
  trnc_ref c = uniform ? TRNC_NO_REF : trnc_db_const_f32(b, j ? 1 : 2, j ? &O : shape, w);
  trnc_ref r = divide(b, x, c, w[0]);
  free(w);
  return r;
}

/* Input positions' windows along one dim: for input position h (of L), the
 * t-th adaptive window containing it (clamped) and whether it exists. */
static int64_t covering(int64_t L, int64_t O, int64_t **pos, int64_t **ok) {
  int64_t m = 0;
  for (int64_t h = 0; h < L; h++) {
    int64_t c = 0;
    for (int64_t i = 0; i < O; i++) c += ad_start(i, L, O) <= h && h < ad_end(i, L, O);
    m = c > m ? c : m;
  }
  *pos = malloc(sizeof(int64_t) * (size_t)(m * L + 1));
  *ok = malloc(sizeof(int64_t) * (size_t)(m * L + 1));
  if (!*pos || !*ok) return -1;
  for (int64_t h = 0; h < L; h++) {
    int64_t t = 0, lastw = 0;
    for (int64_t i = 0; i < O; i++)
      if (ad_start(i, L, O) <= h && h < ad_end(i, L, O)) {
        (*pos)[t * L + h] = lastw = i;
        (*ok)[t++ * L + h] = 1;
      }
    for (; t < m; t++) {
      (*pos)[t * L + h] = lastw;
      (*ok)[t * L + h] = 0;
    }
  }
  return m;
}

/* Windows of output positions along one dim: tap t of output i reads input
 * min(start + t, end - 1), inside the window when start + t < end. */
static int64_t windows(int64_t L, int64_t O, int64_t **pos, int64_t **ok) {
  int64_t k = trnc_adaptive_window(L, O);
  *pos = malloc(sizeof(int64_t) * (size_t)(k * O + 1));
  *ok = malloc(sizeof(int64_t) * (size_t)(k * O + 1));
  if (!*pos || !*ok) return -1;
  for (int64_t i = 0; i < O; i++)
    for (int64_t t = 0; t < k; t++) {
      int64_t s = ad_start(i, L, O), e = ad_end(i, L, O);
      (*pos)[t * O + i] = s + t < e ? s + t : e - 1;
      (*ok)[t * O + i] = s + t < e;
    }
  return k;
}

/* One dim of the separable adaptive sum (forward: windows; backward:
 * covering windows) of x along dim. */
static trnc_ref ad_dim(trnc_db *b, trnc_ref x, int dim, int64_t L, int64_t O, bool bw) {
  int64_t *pos = NULL, *ok = NULL;
  int64_t taps = bw ? covering(L, O, &pos, &ok) : windows(L, O, &pos, &ok);
  trnc_ref r = taps < 0 ? TRNC_NO_REF : gather_sum(b, x, dim, bw ? L : O, taps, pos, ok);
  if (taps < 0) trnc_db_fail(b, "out of memory for the window tables");
  free(pos);
  free(ok);
  return r;
}

trnc_ref trnc_db_adaptive_avg_pool2d(trnc_db *b, trnc_ref x, const int64_t *o) {
  const trnc_type xt = *trnc_db_type(b, x);
  int r = xt.rank;
  int64_t H = xt.shape[r - 2], W = xt.shape[r - 1];
  trnc_ref s;
  if (H % o[0] == 0 && W % o[1] == 0) { /* windows tile the input: [.., OH, kh, OW, kw] summed */
    int64_t sh[TRNC_MAX_RANK + 2];
    memcpy(sh, xt.shape, sizeof(int64_t) * (size_t)(r - 2));
    sh[r - 2] = o[0], sh[r - 1] = H / o[0], sh[r] = o[1], sh[r + 1] = W / o[1];
    trnc_ref v = trnc_db_view(b, trnc_db_f32(b, x), r + 2, sh);
    const int64_t dims[2] = {r - 1, r + 1};
    s = DB(b, SUM, V(v), trnc_db_ints(b, dims, 2), trnc_db_bool(false), NONE);
  } else {
    s = ad_dim(b, ad_dim(b, x, r - 2, H, o[0], false), r - 1, W, o[1], false);
  }
  s = ad_divide(b, ad_divide(b, s, 0, H, o[0]), 1, W, o[1]);
  return trnc_db_cast(b, s, xt.dtype);
}

trnc_ref trnc_db_adaptive_avg_pool2d_bw(trnc_db *b, trnc_ref gy, const trnc_type *xtp) {
  const trnc_type xc = *xtp, *xt = &xc, gt = *trnc_db_type(b, gy);
  int r = gt.rank;
  int64_t H = xt->shape[r - 2], W = xt->shape[r - 1], o[2] = {gt.shape[r - 2], gt.shape[r - 1]};
  trnc_ref g = ad_divide(b, ad_divide(b, as_f32(b, gy), 0, H, o[0]), 1, W, o[1]), s;
  if (H % o[0] == 0 && W % o[1] == 0) { /* each input in one window: gy / kh / kw repeated */
    const int64_t k[2] = {H / o[0], W / o[1]};
    s = unblock(b, DB(b, CLONE, V(blocks(b, g, k)), NONE), xt);
  } else {
    s = ad_dim(b, ad_dim(b, g, r - 1, W, o[1], true), r - 2, H, o[0], true);
  }
  return trnc_db_cast(b, s, gt.dtype);
}

/* _adaptive_avg_pool2d(self, output_size) */
trnc_status decomp_adaptive_avg_pool2d(trnc_db *b, const trnc_node *n) {
  const trnc_type yt = *trnc_db_type(b, n->outs[0]);
  if (trnc_type_numel(&yt) == 0) return trnc_db_result(b, 0, trnc_db_zeros(b, yt.dtype, yt.rank, yt.shape));
  const int64_t o[2] = {yt.shape[yt.rank - 2], yt.shape[yt.rank - 1]};
  return trnc_db_result(b, 0, trnc_db_adaptive_avg_pool2d(b, n->args[0].u.ref, o));
}

/* _adaptive_avg_pool2d_backward(grad_output, self) */
trnc_status decomp_adaptive_avg_pool2d_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref gy = n->args[0].u.ref;
  const trnc_type xt = *trnc_db_type(b, n->args[1].u.ref), gt = *trnc_db_type(b, gy);
  if (trnc_type_numel(&xt) == 0 || trnc_type_numel(&gt) == 0)
    return trnc_db_result(b, 0, trnc_db_zeros(b, gt.dtype, xt.rank, xt.shape));
  return trnc_db_result(b, 0, trnc_db_adaptive_avg_pool2d_bw(b, gy, &xt));
}

/* ---- which forms stay whole --------------------------------------------------- */

bool decomp_pool2d_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_MAX_POOL2D:
    case TRNC_OP_AVG_POOL2D:
      return trnc_arg_spatial(n, 2, 1, trnc_arg_spatial(n, 1, 1, 1)) > 1;
    case TRNC_OP_MAX_POOL2D_BACKWARD:
    case TRNC_OP_AVG_POOL2D_BACKWARD:
      return trnc_arg_spatial(n, 3, 1, trnc_arg_spatial(n, 2, 1, 1)) > 1;
    case TRNC_OP_ADAPTIVE_AVG_POOL2D: {
      const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
      int64_t oh = trnc_arg_spatial(n, 1, 0, 1), ow = trnc_arg_spatial(n, 1, 1, 1);
      return x->rank < 2 || oh < 1 || ow < 1 || x->shape[x->rank - 2] % oh || x->shape[x->rank - 1] % ow;
    }
    case TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD: {
      const trnc_type *gy = trnc_ref_type(g, n->args[0].u.ref);
      return gy->rank < 2 || gy->shape[gy->rank - 2] != 1 || gy->shape[gy->rank - 1] != 1;
    }
    default:
      return false;
  }
}
