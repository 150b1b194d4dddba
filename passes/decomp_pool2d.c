/*
 * decomp_pool2d.c — 2-D pooling forms as ops the kernel IR lowers: max
 * pooling with indices (windows with kh + kw <= 256), stride-1 average pooling, adaptive average pooling
 * whose windows tile the input, and the global pool's backward (the other
 * forms, and the max/avg backward ops, stay on codegen/emit_conv.c's VectorE
 * kernel: see decomp_pool2d_lowered_directly).
 *
 * Max/avg windows: spatial dim j of the input [.., H, W] (size L, output O,
 * kernel k, stride s, padding p, dilation d) is padded (constant_pad_nd) by
 * p before and by max(0, (O-1)*s + (k-1)*d + 1 - p - L) after (ceil_mode's
 * last window), so tap t of every output position is the view
 * slice(xp, j, t*d, t*d + (O-1)*s + 1, s) — an access map, no copy; the
 * taps of one window share one span load per partition in the kernel
 * (codegen/kir/emit.c), read as strided views on chip.
 *   max:  pad -inf; acc = tap (0, 0); for the other taps in (kh, kw) order
 *         upd = v > acc || isnan(v), acc = where(upd, v, acc), off =
 *         where(upd, the tap's offset from the window's origin, off) (float32:
 *         exact, planes below 2^24 elements); index = origin + off, or the
 *         window's first valid tap where off is 0 (eager's initial index):
 *         eager's CPU loop exactly (ties keep the first index, a NaN wins).
 *         Windows of more than 4 taps run the same step along each window
 *         row (over every padded row), then over the window's rows
 *         (max_separable; kh + kw steps, not kh * kw): est. trn2 7x7/1
 *         pad-3 max over [8, 64, 28, 28] 2.24 -> 0.76 ms (the VectorE
 *         kernel before), 3x3/1 pad-1 over [8, 64, 56, 56] 1.63 -> 1.03 ms,
 *         3x3/2 pad-1 0.48 -> 0.43 ms (2x2: one chain, 0.17 ms).
 *   avg:  pad 0; the float32 sum of the taps in (kh, kw) order over eager's
 *         divisor (divisor_override, or the window's size inside the padded
 *         input or, count_include_pad = False, inside the input; a constant
 *         table when it varies).
 * Est. trn2 against the VectorE kernel: 3x3/2 pad-1 max over [8, 64, 112,
 * 112] 1.78 -> 1.90 ms, over [8, 64, 56, 56] 0.456 -> 0.490 ms (the padded
 * copy: 0.055 ms of it), 3x3/1 1.629 -> 1.634 ms, 2x2 0.172 -> 0.174 ms;
 * 3x3/1 pad-1 avg 0.424 -> 0.308 ms, but strided avg windows 9-15 % slower
 * (0.120 -> 0.130 ms at 3x3/2 pad 1, 0.068 -> 0.078 ms at 2x2), so those
 * stay on the VectorE kernel. A padding fill on chip (the span tile set to
 * the pad value, only its in-bounds part loaded) would remove the copy.
 *
 * Adaptive windows [floor(i*L/O), ceil((i+1)*L/O)) tile the input when O
 * divides L: the input seen [.., OH, kh, OW, kw] summed over the window dims
 * (a kernel-IR reduction, fused with the input's producer), / kh / kw
 * (eager's order); the backward repeats grad_output / kh / kw over each
 * window (the 3-D decomposition's planes use the same builders).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/decompose.h"

/* Taps of an average window decomposed into one chain over its taps. */
#define POOL2D_MAX_TAPS 25
/* Taps of a max window decomposed into one chain (5 graph ops each); larger
 * ones take two chains (max_separable: est. faster from 3 x 3 on), of
 * POOL2D_MAX_CHAIN taps in all at most (longer ones stay on
 * codegen/emit_conv.c's kernel). */
#define POOL2D_ONE_CHAIN_TAPS 4
#define POOL2D_MAX_CHAIN TRNC_WINDOW_MAX_TAPS

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

static trnc_ref divide(trnc_db *b, trnc_ref x, trnc_ref dt, double d) {
  return dt != TRNC_NO_REF ? DB(b, DIV, V(x), V(dt)) : DB(b, DIV_SCALAR, V(x), trnc_db_float(d));
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

/* The views of every forward tap of the padded input u in (kh, kw) order,
 * emitted before the arithmetic on them so that the code generator's
 * elementwise group is not cut by a view (malloc'd; NULL after an error). */
static trnc_ref *tap_views(trnc_db *b, trnc_ref u, const trnc_pool2d *q, const int64_t *o) {
  trnc_ref *v = malloc(sizeof(trnc_ref) * (size_t)(q->k[0] * q->k[1] + 1));
  if (!v) {
    trnc_db_fail(b, "out of memory for the taps");
    return NULL;
  }
  v[0] = TRNC_NO_REF;
  for (int64_t th = 0; th < q->k[0]; th++)
    for (int64_t tw = 0; tw < q->k[1]; tw++) v[th * q->k[1] + tw] = tap(b, u, q, o, th, tw);
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
  double d = 1;
  trnc_ref dt = divisor(b, &xt, q, o, &d); /* before the taps: a constant would cut their kernel */
  trnc_ref *v = tap_views(b, pad_windows(b, x, q, o, 0.0), q, o);
  if (!v) return TRNC_NO_REF;
  trnc_ref acc = sum_views(b, v, q->k[0] * q->k[1]);
  free(v);
  return trnc_db_cast(b, divide(b, acc, dt, d), xt.dtype);
}

/* ---- max pooling ------------------------------------------------------------- */

/* One step of eager's running maximum: tap value v (offset `at` from the
 * window's origin) replaces *acc where v > *acc or v is NaN; *off
 * (TRNC_NO_REF: 0) follows it. */
static void max_step(trnc_db *b, trnc_ref v, trnc_arg at, trnc_ref *acc, trnc_ref *off) {
  trnc_ref upd = DB(b, LOGICAL_OR, V(DB(b, GT, V(v), V(*acc))), V(DB(b, ISNAN, V(v))));
  *acc = DB(b, WHERE, V(upd), V(v), V(*acc));
  *off = DB(b, WHERE, V(upd), at, *off == TRNC_NO_REF ? trnc_db_float(0.0) : V(*off));
}

/* The slices start + t*d : .. : s (n positions, t < k) of x along dim j. */
static trnc_ref *dim_taps(trnc_db *b, trnc_ref x, int j, int64_t k, int64_t d, int64_t s, int64_t n) {
  trnc_ref *v = malloc(sizeof(trnc_ref) * (size_t)(k + 1));
  if (!v) {
    trnc_db_fail(b, "out of memory for the taps");
    return NULL;
  }
  for (int64_t t = 0; t < k; t++) v[t] = DB(b, SLICE, V(x), I(j), I(t * d), I(t * d + (n - 1) * s + 1), I(s));
  return v;
}

/* The running maximum of windows of more than POOL2D_ONE_CHAIN_TAPS taps over the
 * padded input xp, in two passes: along each row of every window (its kw
 * taps, over every padded row: the row's value and the offset of its tap),
 * then over the rows of the window (kh row results, the offsets plus the
 * row's). The step is associative over consecutive runs of taps (its result
 * is the run's last NaN, else its first maximum), so this selects the tap
 * eager's (kh, kw) scan selects; each pass is a chain of at most
 * max(kh, kw) steps. */
static void max_separable(trnc_db *b, trnc_ref xp, const trnc_pool2d *q, const int64_t *o, int64_t W,
                          trnc_ref *acc, trnc_ref *off) {
  int r = trnc_db_type(b, xp)->rank;
  trnc_ref racc = xp, roff = TRNC_NO_REF;
  if (q->k[1] > 1 || q->s[1] > 1 || trnc_db_type(b, xp)->shape[r - 1] != o[1]) {
    trnc_ref *tv = dim_taps(b, xp, r - 1, q->k[1], q->d[1], q->s[1], o[1]);
    if (!tv) return;
    racc = tv[0];
    for (int64_t tw = 1; tw < q->k[1]; tw++) max_step(b, tv[tw], trnc_db_float((double)(tw * q->d[1])), &racc, &roff);
    free(tv);
  }
  /* every view of the row results before the arithmetic on them */
  trnc_ref *av = dim_taps(b, racc, r - 2, q->k[0], q->d[0], q->s[0], o[0]);
  trnc_ref *ov = roff == TRNC_NO_REF ? NULL : dim_taps(b, roff, r - 2, q->k[0], q->d[0], q->s[0], o[0]);
  if (!av || (roff != TRNC_NO_REF && !ov)) {
    free(av);
    free(ov);
    return;
  }
  *acc = av[0];
  *off = ov ? ov[0] : TRNC_NO_REF;
  for (int64_t th = 1; th < q->k[0]; th++) {
    double rowoff = (double)(th * q->d[0] * W);
    trnc_arg at = ov ? V(DB(b, ADD_SCALAR, V(ov[th]), trnc_db_float(rowoff), I(1))) : trnc_db_float(rowoff);
    max_step(b, av[th], at, acc, off);
  }
  free(av);
  free(ov);
}

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
  /* flat input index of the window's first valid tap (tap (0, 0) clamped
   * into the input) and of its origin (unclamped), per output position, in
   * float32: exact below 2^24 (check_pool2d) */
  float *first = malloc(sizeof(float) * (size_t)(o[0] * o[1]));
  float *base = malloc(sizeof(float) * (size_t)(o[0] * o[1]));
  if (!first || !base) {
    free(first);
    free(base);
    return trnc_db_fail(b, "out of memory for the index tables");
  }
  bool padded = false;
  for (int64_t i = 0; i < o[0]; i++)
    for (int64_t j = 0; j < o[1]; j++) {
      int64_t h0 = i * q.s[0] - q.p[0], w0 = j * q.s[1] - q.p[1], hf = h0, wf = w0;
      while (hf < 0) hf += q.d[0];
      while (wf < 0) wf += q.d[1];
      first[i * o[1] + j] = (float)(hf * W + wf);
      base[i * o[1] + j] = (float)(h0 * W + w0);
      padded = padded || hf != h0 || wf != w0;
    }
  trnc_ref fc = trnc_db_const_f32(b, 2, o, first), bc = trnc_db_const_f32(b, 2, o, base);
  free(first);
  free(base);
  /* acc and the offset of the selected tap from the window's origin (0:
   * tap (0, 0) or none; every other tap's offset is positive), float32 */
  trnc_ref acc = TRNC_NO_REF, off = TRNC_NO_REF;
  trnc_ref xp = pad_windows(b, x, &q, o, -INFINITY);
  if (q.k[0] * q.k[1] <= POOL2D_ONE_CHAIN_TAPS) {
    trnc_ref *tv = tap_views(b, xp, &q, o);
    if (!tv) return trnc_db_status(b);
    acc = tv[0];
    for (int64_t th = 0; th < q.k[0]; th++)
      for (int64_t tw = th ? 0 : 1; tw < q.k[1]; tw++)
        max_step(b, tv[th * q.k[1] + tw], trnc_db_float((double)(th * q.d[0] * W + tw * q.d[1])), &acc, &off);
    free(tv);
  } else {
    max_separable(b, xp, &q, o, W, &acc, &off);
  }
  if (trnc_db_status(b)) return trnc_db_status(b);
  trnc_ref idx = off == TRNC_NO_REF ? fc : DB(b, ADD, V(bc), V(off), I(1));
  if (off != TRNC_NO_REF && padded) /* a padded tap (0, 0) keeps the first valid one */
    idx = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(off), trnc_db_float(0.0))), V(fc), V(idx));
  idx = trnc_db_cast(b, idx, TRNC_I64);
  idx = DB(b, EXPAND, V(idx), trnc_db_ints(b, yt.shape, yt.rank), trnc_db_bool(false));
  trnc_db_result(b, 0, acc);
  return trnc_db_result(b, 1, idx);
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

/* ---- adaptive average pooling ------------------------------------------------ */

/* Window [start, end) of adaptive output position i of L inputs over O. */
static int64_t ad_start(int64_t i, int64_t L, int64_t O) { return i * L / O; }
static int64_t ad_end(int64_t i, int64_t L, int64_t O) { return ((i + 1) * L + O - 1) / O; }

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

trnc_ref trnc_db_adaptive_avg_pool2d(trnc_db *b, trnc_ref x, const int64_t *o) {
  const trnc_type xt = *trnc_db_type(b, x);
  int r = xt.rank;
  int64_t H = xt.shape[r - 2], W = xt.shape[r - 1];
  { /* windows tile the input: [.., OH, kh, OW, kw] summed */
    int64_t sh[TRNC_MAX_RANK + 2];
    memcpy(sh, xt.shape, sizeof(int64_t) * (size_t)(r - 2));
    sh[r - 2] = o[0], sh[r - 1] = H / o[0], sh[r] = o[1], sh[r + 1] = W / o[1];
    trnc_ref v = trnc_db_view(b, trnc_db_f32(b, x), r + 2, sh);
    const int64_t dims[2] = {r - 1, r + 1};
    trnc_ref s = DB(b, SUM, V(v), trnc_db_ints(b, dims, 2), trnc_db_bool(false), NONE);
      return trnc_db_cast(b, ad_divide(b, ad_divide(b, s, 0, H, o[0]), 1, W, o[1]), xt.dtype);
  }
}

trnc_ref trnc_db_adaptive_avg_pool2d_bw(trnc_db *b, trnc_ref gy, const trnc_type *xtp) {
  const trnc_type xc = *xtp, *xt = &xc, gt = *trnc_db_type(b, gy);
  int r = gt.rank;
  int64_t H = xt->shape[r - 2], W = xt->shape[r - 1], o[2] = {gt.shape[r - 2], gt.shape[r - 1]};
  trnc_ref g = ad_divide(b, ad_divide(b, as_f32(b, gy), 0, H, o[0]), 1, W, o[1]);
  const int64_t k[2] = {H / o[0], W / o[1]}; /* each input in one window: gy / kh / kw repeated */
  return trnc_db_cast(b, unblock(b, DB(b, CLONE, V(blocks(b, g, k)), NONE), xt), gt.dtype);
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
    case TRNC_OP_ADAPTIVE_AVG_POOL2D: {
      const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
      int64_t oh = trnc_arg_spatial(n, 1, 0, 1), ow = trnc_arg_spatial(n, 1, 1, 1);
      return x->rank < 2 || oh < 1 || ow < 1 || x->shape[x->rank - 2] % oh || x->shape[x->rank - 1] % ow;
    }
    case TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD: {
      const trnc_type *gy = trnc_ref_type(g, n->args[0].u.ref);
      return gy->rank < 2 || gy->shape[gy->rank - 2] != 1 || gy->shape[gy->rank - 1] != 1;
    }
    case TRNC_OP_MAX_POOL2D: { /* indices exact in float32; bounded chains of taps */
      const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
      int64_t kh = trnc_arg_spatial(n, 1, 0, 1), kw = trnc_arg_spatial(n, 1, 1, 1);
      bool fl = x->dtype == TRNC_F32 || x->dtype == TRNC_BF16 || x->dtype == TRNC_F16; /* a -inf pad */
      return !fl || x->rank < 2 || x->shape[x->rank - 2] * x->shape[x->rank - 1] >= (1 << 24) || kh < 1 ||
             kw < 1 || kh + kw > POOL2D_MAX_CHAIN;
    }
    case TRNC_OP_AVG_POOL2D: /* stride-1 windows (strided ones: est. 9-15 % slower, the padded input's copy) */
      return trnc_arg_spatial(n, 2, 0, trnc_arg_spatial(n, 1, 0, 1)) != 1 ||
             trnc_arg_spatial(n, 2, 1, trnc_arg_spatial(n, 1, 1, 1)) != 1 ||
             trnc_arg_spatial(n, 1, 0, 1) * trnc_arg_spatial(n, 1, 1, 1) > POOL2D_MAX_TAPS;
    default:
      return false;
  }
}
