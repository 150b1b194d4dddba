/*
 * decomp_conv.c — transposed and 3-D convolutions (forward and backward)
 * rewritten into the 1-D/2-D convolutions the code generator lowers on
 * TensorE (codegen/kir/conv.c). See decompose.h for the builder.
 *
 * Three primitives of a (non-transposed) convolution y = conv(x, w) with
 * stride s, padding p, dilation d and groups g; x [N, C, *in], w [O, C/g,
 * *k], y [N, O, *out]:
 *   fwd(x, w)          y
 *   dx(gy, w, x shape) the input gradient (the adjoint of fwd in x)
 *   dw(gy, x, w)       the weight gradient
 * For 1-D/2-D these are one convolution or one convolution_backward node
 * (output_mask [1,0,0] or [0,1,0]; dx reads only the shape of its input
 * operand, a broadcast zero). For 3-D each is a sum over the kernel's depth
 * taps kd of 2-D primitives on planes with the output depth folded into the
 * batch: with x padded in depth by p_d and seen as [N, Dp, C, H, W],
 *   fwd: y[:, :, od] = sum_kd conv2d(x[:, od*s_d + kd*d_d], w[:, :, kd])
 *   dx:  dx[:, od*s_d + kd*d_d] += dx2d(gy[:, :, od], w[:, :, kd])  (then the
 *        depth padding is cropped)
 *   dw:  dw[:, :, kd] = dw2d(gy, x[:, od*s_d + kd*d_d] over od)
 * so a 3-D convolution costs KD 2-D ones over N*Do images, plus the copies
 * that fold depth into the batch.
 *
 * A transposed convolution t = conv_transpose(x, w) (w [Cin, Cout/g, *k]) is
 * the adjoint of conv(., w) from [N, Cout, *out] to [N, Cin, *in]:
 *   t = dx(x, w, t's shape),   dt/dx = fwd(gt, w),   dt/dw = dw(x, gt, w)
 * (the last with input and grad_output swapped: <conv_T(x, w), gt> =
 * <x, conv(gt, w)>). The identity needs conv(., w) to map t's shape back
 * onto x's, which holds when output_padding < stride in every dim; the
 * op's check (ir/ops.c) refuses the rest (output_padding >= stride, which
 * eager allows when dilation > output_padding). Biases are added per output
 * channel; the bias gradient is grad_output summed over N and space (for
 * every convolution_backward that asks for it: the 1-D/2-D one is split
 * into its dx and dw nodes and that sum).
 */
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

/* stride, padding, dilation, groups of a convolution, one entry per spatial dim */
typedef struct conv_geom {
  int sp;                       /* spatial dims: 1, 2 or 3 */
  int64_t st[3], pad[3], dil[3], groups;
} conv_geom;

static void spatial(const trnc_node *n, uint32_t i, int sp, int64_t dflt, int64_t *out) {
  for (int j = 0; j < sp; j++) out[j] = trnc_arg_spatial(n, i, j, dflt);
}

/* The geometry of n, whose stride list is argument a_stride. */
static conv_geom geom_of(const trnc_db *b, const trnc_node *n, trnc_ref x, uint32_t a_stride) {
  conv_geom q;
  memset(&q, 0, sizeof q);
  q.sp = trnc_db_type(b, x)->rank - 2;
  spatial(n, a_stride, q.sp, 1, q.st);
  spatial(n, a_stride + 1, q.sp, 0, q.pad);
  spatial(n, a_stride + 2, q.sp, 1, q.dil);
  q.groups = trnc_arg_int(n, a_stride + 5, 1);
  return q;
}

/* The 2-D geometry of q's last two dims (q 3-D). */
static conv_geom plane_geom(const conv_geom *q) {
  conv_geom p = *q;
  p.sp = 2;
  for (int j = 0; j < 2; j++) {
    p.st[j] = q->st[j + 1];
    p.pad[j] = q->pad[j + 1];
    p.dil[j] = q->dil[j + 1];
  }
  return p;
}

/* The arguments stride .. groups of a non-transposed 1-D/2-D convolution
 * (convolution args 3..8, convolution_backward args 4..9). */
static void geom_args(trnc_db *b, const conv_geom *q, trnc_arg *a) {
  static const int64_t zeros[3] = {0, 0, 0};
  a[0] = trnc_db_ints(b, q->st, q->sp);
  a[1] = trnc_db_ints(b, q->pad, q->sp);
  a[2] = trnc_db_ints(b, q->dil, q->sp);
  a[3] = trnc_db_bool(false);
  a[4] = trnc_db_ints(b, zeros, q->sp);
  a[5] = I(q->groups);
}

/* convolution_backward(gy, x, w) of a 1-D/2-D q with one gradient (k: 0 input,
 * 1 weight) in the output mask. */
static trnc_ref conv_bw2d(trnc_db *b, trnc_ref gy, trnc_ref x, trnc_ref w, const conv_geom *q, int k) {
  trnc_arg a[11] = {V(gy), V(x), V(w), NONE};
  geom_args(b, q, &a[4]);
  a[10] = trnc_db_ints(b, (const int64_t[]){0, 0, 0}, 3); /* output_mask: bools */
  for (int i = 0; a[10].kind == TRNC_ARG_LIST && i < 3; i++) a[10].u.list.items[i] = trnc_db_bool(i == k);
  trnc_ref outs[3];
  if (trnc_db_op_outs(b, TRNC_OP_CONVOLUTION_BACKWARD, a, 11, 3, outs)) return TRNC_NO_REF;
  return outs[k];
}

/* x permuted from [N, C, D, ...] to [N, D, C, ...] and copied (contiguous). */
static trnc_ref depth_major(trnc_db *b, trnc_ref x) {
  trnc_ref p = DB(b, PERMUTE, V(x), trnc_db_ints(b, (const int64_t[]){0, 2, 1, 3, 4}, 5));
  return DB(b, CLONE, V(p), NONE);
}

/* Depth taps od*s + kd*d (od < nd) of xt [N, Dp, C, H, W], folded into a
 * contiguous [N*nd, C, H, W]. */
static trnc_ref depth_tap(trnc_db *b, trnc_ref xt, const conv_geom *q, int64_t kd, int64_t nd) {
  const trnc_type t = *trnc_db_type(b, xt);
  int64_t start = kd * q->dil[0];
  trnc_ref s = DB(b, SLICE, V(xt), I(1), I(start), I(start + (nd - 1) * q->st[0] + 1), I(q->st[0]));
  return trnc_db_view(b, DB(b, CLONE, V(s), NONE), 4,
                      (const int64_t[]){t.shape[0] * nd, t.shape[2], t.shape[3], t.shape[4]});
}

/* gy [N, O, Do, Ho, Wo] as [N*Do, O, Ho, Wo]. */
static trnc_ref fold_depth(trnc_db *b, trnc_ref gy) {
  const trnc_type t = *trnc_db_type(b, gy);
  return trnc_db_view(b, depth_major(b, gy), 4,
                      (const int64_t[]){t.shape[0] * t.shape[2], t.shape[1], t.shape[3], t.shape[4]});
}

/* x [N, C, D, ...] padded by pad on both sides of dim 2. */
static trnc_ref pad_depth(trnc_db *b, trnc_ref x, int64_t pad) {
  if (pad == 0) return x;
  return DB(b, CONSTANT_PAD_ND, V(x), trnc_db_ints(b, (const int64_t[]){0, 0, 0, 0, pad, pad}, 6), I(0));
}

/* fwd: conv(x, w) + bias (bias TRNC_NO_REF for none). */
static trnc_ref conv_fwd(trnc_db *b, trnc_ref x, trnc_ref w, trnc_ref bias, const conv_geom *q) {
  if (q->sp <= 2) {
    trnc_arg a[9] = {V(x), V(w), bias == TRNC_NO_REF ? NONE : V(bias)};
    geom_args(b, q, &a[3]);
    return trnc_db_op(b, TRNC_OP_CONVOLUTION, a, 9);
  }
  const trnc_type xt = *trnc_db_type(b, x), wt = *trnc_db_type(b, w);
  int64_t N = xt.shape[0], KD = wt.shape[2], Dp = xt.shape[2] + 2 * q->pad[0];
  int64_t Do = (Dp - q->dil[0] * (KD - 1) - 1) / q->st[0] + 1;
  conv_geom p = plane_geom(q);
  trnc_ref xd = depth_major(b, pad_depth(b, x, q->pad[0])), acc = TRNC_NO_REF;
  for (int64_t kd = 0; kd < KD; kd++) {
    trnc_ref y = conv_fwd(b, depth_tap(b, xd, q, kd, Do), DB(b, SELECT, V(w), I(2), I(kd)),
                          kd == 0 ? bias : TRNC_NO_REF, &p);
    acc = kd == 0 ? y : DB(b, ADD, V(acc), V(y), I(1));
  }
  const trnc_type yt = *trnc_db_type(b, acc);
  trnc_ref y = trnc_db_view(b, acc, 5, (const int64_t[]){N, Do, yt.shape[1], yt.shape[2], yt.shape[3]});
  return DB(b, PERMUTE, V(y), trnc_db_ints(b, (const int64_t[]){0, 2, 1, 3, 4}, 5));
}

/* dx: the input gradient, of shape xs (rank r), of conv(., w) at grad_output gy. */
static trnc_ref conv_dx(trnc_db *b, trnc_ref gy, trnc_ref w, const int64_t *xs, int r,
                        const conv_geom *q) {
  trnc_dtype dt = trnc_db_type(b, gy)->dtype;
  if (q->sp <= 2) {
    return conv_bw2d(b, gy, trnc_db_shape_only(b, dt, r, xs), w, q, 0);
  }
  const int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  const trnc_type gt = *trnc_db_type(b, gy);
  int64_t Do = gt.shape[2], KD = trnc_db_type(b, w)->shape[2], Dp = D + 2 * q->pad[0];
  conv_geom p = plane_geom(q);
  trnc_ref g2 = fold_depth(b, gy);
  trnc_ref acc = trnc_db_zeros(b, dt, 5, (const int64_t[]){N, Dp, C, H, W});
  for (int64_t kd = 0; kd < KD; kd++) {
    trnc_ref d2 = conv_dx(b, g2, DB(b, SELECT, V(w), I(2), I(kd)),
                          (const int64_t[]){N * Do, C, H, W}, 4, &p);
    trnc_ref d = trnc_db_view(b, d2, 5, (const int64_t[]){N, Do, C, H, W});
    int64_t start = kd * q->dil[0], end = start + (Do - 1) * q->st[0] + 1;
    trnc_ref cur = DB(b, SLICE, V(acc), I(1), I(start), I(end), I(q->st[0]));
    acc = DB(b, SLICE_SCATTER, V(acc), V(DB(b, ADD, V(cur), V(d), I(1))), I(1), I(start), I(end),
             I(q->st[0]));
  }
  trnc_ref crop = DB(b, SLICE, V(acc), I(1), I(q->pad[0]), I(q->pad[0] + D), I(1));
  return DB(b, PERMUTE, V(crop), trnc_db_ints(b, (const int64_t[]){0, 2, 1, 3, 4}, 5));
}

/* dw: the weight gradient (w's shape) of conv(x, w) at grad_output gy. */
static trnc_ref conv_dw(trnc_db *b, trnc_ref gy, trnc_ref x, trnc_ref w, const conv_geom *q) {
  if (q->sp <= 2) return conv_bw2d(b, gy, x, w, q, 1);
  int64_t KD = trnc_db_type(b, w)->shape[2], Do = trnc_db_type(b, gy)->shape[2];
  conv_geom p = plane_geom(q);
  trnc_ref g2 = fold_depth(b, gy), xd = depth_major(b, pad_depth(b, x, q->pad[0]));
  trnc_ref taps[TRNC_CONV_MAX_DEPTH_TAPS];
  for (int64_t kd = 0; kd < KD; kd++)
    taps[kd] = conv_dw(b, g2, depth_tap(b, xd, q, kd, Do), DB(b, SELECT, V(w), I(2), I(kd)), &p);
  return DB(b, STACK, trnc_db_vals(b, taps, (int)KD), I(2));
}

/* bias [C] viewed as [1, C, 1, ...] (rank r) and added to y. */
static trnc_ref add_bias(trnc_db *b, trnc_ref y, trnc_ref bias, int r) {
  if (bias == TRNC_NO_REF) return y;
  int64_t shape[TRNC_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = 1;
  shape[1] = trnc_db_type(b, bias)->shape[0];
  return DB(b, ADD, V(y), V(trnc_db_view(b, bias, r, shape)), I(1));
}

static trnc_ref opt_ref(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE ? a->u.ref : TRNC_NO_REF;
}

bool decomp_conv_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_CONVOLUTION_BACKWARD;
  if (trnc_arg_bool(n, bw ? 7 : 6, false)) return false;
  trnc_ref x = opt_ref(n, bw ? 1 : 0);
  int r = x == TRNC_NO_REF ? 0 : trnc_ref_type(g, x)->rank;
  /* the bias gradient is a column sum the kernel IR lowers (and fuses with
   * grad_output's producer): a backward asking for it is split */
  const trnc_arg *m = bw ? trnc_node_arg(n, 10) : NULL;
  if (m && m->kind == TRNC_ARG_LIST && m->u.list.n > 2 && m->u.list.items[2].kind == TRNC_ARG_BOOL &&
      m->u.list.items[2].u.b)
    return false;
  return r != 5;
}

/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups) */
trnc_status decomp_conv(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, w = n->args[1].u.ref, bias = opt_ref(n, 2);
  conv_geom q = geom_of(b, n, x, 3);
  if (!trnc_arg_bool(n, 6, false)) return trnc_db_result(b, 0, conv_fwd(b, x, w, bias, &q));
  const trnc_type yt = *trnc_db_type(b, n->outs[0]);
  trnc_ref y = conv_dx(b, x, w, yt.shape, yt.rank, &q);
  return trnc_db_result(b, 0, add_bias(b, y, bias, yt.rank));
}

/* convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding,
 * dilation, transposed, output_padding, groups, output_mask) */
trnc_status decomp_conv_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref gy = n->args[0].u.ref, x = n->args[1].u.ref, w = n->args[2].u.ref;
  bool tr = trnc_arg_bool(n, 7, false);
  conv_geom q = geom_of(b, n, x, 4);
  const trnc_graph *g = trnc_db_graph(b);
  const trnc_type xt = *trnc_db_type(b, x);
  if (!g->values[n->outs[0]].is_none) /* a 1-D/2-D dx reads x's shape: x itself, no zero */
    trnc_db_result(b, 0, tr ? conv_fwd(b, gy, w, TRNC_NO_REF, &q)
                            : q.sp <= 2 ? conv_bw2d(b, gy, x, w, &q, 0) : conv_dx(b, gy, w, xt.shape, xt.rank, &q));
  if (!g->values[n->outs[1]].is_none)
    trnc_db_result(b, 1, tr ? conv_dw(b, x, gy, w, &q) : conv_dw(b, gy, x, w, &q));
  if (n->nouts > 2 && !g->values[n->outs[2]].is_none) {
    int64_t dims[TRNC_MAX_RANK] = {0};
    for (int i = 2; i < xt.rank; i++) dims[i - 1] = i;
    trnc_ref s = DB(b, SUM, V(gy), trnc_db_ints(b, dims, xt.rank - 1), trnc_db_bool(false), NONE);
    trnc_db_result(b, 2, s);
  }
  return trnc_db_status(b);
}
