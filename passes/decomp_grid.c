/*
 * decomp_grid.c — grid_sampler_2d as gathers and float32 arithmetic (see
 * decompose.h for the builder).
 *
 * grid_sampler_2d(x [N, C, H, W], grid [N, Ho, Wo, 2], mode, padding,
 * align_corners): each output point reads x at the source coordinates
 *   ix = align ? (gx + 1) / 2 (W - 1) : ((gx + 1) W - 1) / 2   (iy alike)
 * moved into the image by the padding mode (border: clamped to [0, W-1];
 * reflection: reflected over [0, W-1] (align) or [-0.5, W-0.5], then
 * clamped), as ATen's grid_sampler_compute_source_index. Bilinear sums the
 * four neighbours (floor(ix) + {0, 1}) weighted by the opposite distances,
 * nearest reads round-half-even(ix); a neighbour outside the image adds 0
 * (padding zeros). Every tap is a gather along the flat H*W axis of x seen as
 * [N, C, H*W] with the index y*W + x (float32, exact: H*W is below 2^24, the
 * table's check) broadcast over C.
 */
#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* The source coordinate of normalized coordinate c along a dim of `size`;
 * with grad, *grad gets its derivative with respect to c (ATen's
 * *_set_grad: 0 where the clamp holds it at a bound). */
static trnc_ref source_index(trnc_db *b, trnc_ref c, int64_t size, int64_t padding, bool align,
                             trnc_ref *grad) {
  double s = (double)size;
  trnc_ref i = align ? DB(b, MUL_SCALAR, V(DB(b, ADD_SCALAR, V(c), I(1), I(1))), F((s - 1) / 2))
                     : DB(b, DIV_SCALAR, V(DB(b, ADD_SCALAR, V(DB(b, MUL_SCALAR, V(c), F(s))), F(s - 1), I(1))),
                          F(2));
  trnc_ref gr = DB(b, FULL_LIKE, V(c), F(align ? (s - 1) / 2 : s / 2), NONE, NONE, NONE, NONE, NONE);
  if (padding == 2) { /* reflect over [lo, lo + span] (ATen's reflect_coordinates) */
    double lo = align ? 0 : -0.5, span = align ? s - 1 : s;
    if (span <= 0) {
      if (grad) *grad = DB(b, MUL_SCALAR, V(gr), F(0));
      return DB(b, MUL_SCALAR, V(i), F(0));
    }
    trnc_ref sh = DB(b, SUB_SCALAR, V(i), F(lo), I(1)), a = DB(b, ABS, V(sh));
    trnc_ref extra = DB(b, FMOD_SCALAR, V(a), F(span));
    trnc_ref flips = DB(b, FLOOR, V(DB(b, DIV_SCALAR, V(a), F(span))));
    trnc_ref odd = DB(b, EQ_SCALAR, V(DB(b, REMAINDER_SCALAR, V(flips), F(2))), F(1));
    trnc_ref even_r = DB(b, ADD_SCALAR, V(extra), F(lo), I(1));
    trnc_ref odd_r = DB(b, RSUB_SCALAR, V(extra), F(span + lo), I(1));
    i = DB(b, WHERE, V(odd), V(odd_r), V(even_r));
    /* d/di: -1 where i < lo (the abs), negated again on an odd flip */
    trnc_ref flip = DB(b, LOGICAL_XOR, V(odd), V(DB(b, LT_SCALAR, V(sh), I(0))));
    gr = DB(b, WHERE, V(flip), V(DB(b, NEG, V(gr))), V(gr));
  }
  if (padding != 0) {
    trnc_ref inside = DB(b, LOGICAL_AND, V(DB(b, GT_SCALAR, V(i), I(0))), V(DB(b, LT_SCALAR, V(i), F(s - 1))));
    gr = DB(b, MASKED_FILL, V(gr), V(DB(b, LOGICAL_NOT, V(inside))), I(0));
    i = DB(b, CLAMP, V(i), F(0), F(s - 1));
  }
  if (grad) *grad = gr;
  return i;
}

/* One tap at (ix, iy) with weight w ([N, P] float32): *idx the flat index
 * y*W + x as int64 broadcast to [N, C, P] (0 outside the image) and *wm the
 * weight [N, 1, P], 0 outside the image; returns the outside mask [N, P]. */
static trnc_ref tap_index(trnc_db *b, trnc_ref ix, trnc_ref iy, trnc_ref w, int64_t H, int64_t W,
                          int64_t C, trnc_ref *idx, trnc_ref *wm) {
  trnc_ref in = DB(b, LOGICAL_AND, V(DB(b, GE_SCALAR, V(ix), I(0))), V(DB(b, LE_SCALAR, V(ix), I(W - 1))));
  in = DB(b, LOGICAL_AND, V(in), V(DB(b, GE_SCALAR, V(iy), I(0))));
  in = DB(b, LOGICAL_AND, V(in), V(DB(b, LE_SCALAR, V(iy), I(H - 1))));
  trnc_ref out = DB(b, LOGICAL_NOT, V(in));
  trnc_ref flat = DB(b, ADD, V(DB(b, MUL_SCALAR, V(iy), I(W))), V(ix), I(1));
  flat = DB(b, MASKED_FILL, V(flat), V(out), I(0)); /* also a NaN coordinate */
  const trnc_type *t = trnc_db_type(b, flat);
  int64_t sh[3] = {t->shape[0], C, t->shape[1]};
  *idx = DB(b, UNSQUEEZE, V(trnc_db_cast(b, flat, TRNC_I64)), I(1));
  *idx = DB(b, EXPAND, V(*idx), trnc_db_ints(b, sh, 3), trnc_db_bool(false));
  *wm = DB(b, UNSQUEEZE, V(DB(b, MASKED_FILL, V(w), V(out), I(0))), I(1));
  return out;
}

/* w * x[n, :, iy, ix] over the output points: [N, C, P]. */
static trnc_ref tap(trnc_db *b, trnc_ref xf, trnc_ref ix, trnc_ref iy, trnc_ref w, int64_t H, int64_t W,
                    int64_t C) {
  trnc_ref idx, wm;
  tap_index(b, ix, iy, w, H, W, C, &idx, &wm);
  return DB(b, MUL, V(DB(b, GATHER, V(xf), I(2), V(idx), trnc_db_bool(false))), V(wm));
}

/* grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode,
 * bool align_corners); mode 0 bilinear or 1 nearest (the table's check) */
trnc_status decomp_grid_sampler(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref, grid = n->args[1].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), gt = *trnc_db_type(b, grid);
  int64_t mode = trnc_arg_int(n, 2, 0), padding = trnc_arg_int(n, 3, 0);
  bool align = trnc_arg_bool(n, 4, false);
  int64_t N = xt.shape[0], C = xt.shape[1], H = xt.shape[2], W = xt.shape[3];
  int64_t Ho = gt.shape[1], Wo = gt.shape[2], P = Ho * Wo;
  int64_t xs[3] = {N, C, H * W}, ps[2] = {N, P}, os[4] = {N, C, Ho, Wo};
  trnc_ref xf = trnc_db_view(b, trnc_db_f32(b, x), 3, xs);
  trnc_ref g = trnc_db_f32(b, grid);
  trnc_ref gx = trnc_db_view(b, DB(b, CLONE, V(DB(b, SELECT, V(g), I(3), I(0))), NONE), 2, ps);
  trnc_ref gy = trnc_db_view(b, DB(b, CLONE, V(DB(b, SELECT, V(g), I(3), I(1))), NONE), 2, ps);
  trnc_ref ix = source_index(b, gx, W, padding, align, NULL), iy = source_index(b, gy, H, padding, align, NULL);
  trnc_ref r;
  if (mode == 1) {
    trnc_ref one = DB(b, FULL_LIKE, V(ix), I(1), NONE, NONE, NONE, NONE, NONE);
    r = tap(b, xf, DB(b, ROUND, V(ix)), DB(b, ROUND, V(iy)), one, H, W, C);
  } else {
    trnc_ref x0 = DB(b, FLOOR, V(ix)), y0 = DB(b, FLOOR, V(iy));
    trnc_ref x1 = DB(b, ADD_SCALAR, V(x0), I(1), I(1)), y1 = DB(b, ADD_SCALAR, V(y0), I(1), I(1));
    trnc_ref e = DB(b, SUB, V(x1), V(ix), I(1)), w_ = DB(b, SUB, V(ix), V(x0), I(1));
    trnc_ref s = DB(b, SUB, V(y1), V(iy), I(1)), nn = DB(b, SUB, V(iy), V(y0), I(1));
    r = tap(b, xf, x0, y0, DB(b, MUL, V(e), V(s)), H, W, C);
    r = DB(b, ADD, V(r), V(tap(b, xf, x1, y0, DB(b, MUL, V(w_), V(s)), H, W, C)), I(1));
    r = DB(b, ADD, V(r), V(tap(b, xf, x0, y1, DB(b, MUL, V(e), V(nn)), H, W, C)), I(1));
    r = DB(b, ADD, V(r), V(tap(b, xf, x1, y1, DB(b, MUL, V(w_), V(nn)), H, W, C)), I(1));
  }
  return trnc_db_result(b, 0, trnc_db_view(b, r, 4, os));
}

/* grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int interpolation_mode,
 * int padding_mode, bool align_corners, bool[2] output_mask): the input
 * gradient scatter-adds grad * w of every tap at its flat index; the grid
 * gradient (bilinear) is sum over C of grad * x at each tap times the
 * derivative of its weight, times the source index's derivative (nearest:
 * zeros, as ATen). */
trnc_status decomp_grid_sampler_bw(trnc_db *b, const trnc_node *n) {
  const trnc_graph *gr = trnc_db_graph(b);
  trnc_ref go = n->args[0].u.ref, x = n->args[1].u.ref, grid = n->args[2].u.ref;
  const trnc_type xt = *trnc_db_type(b, x), gt = *trnc_db_type(b, grid);
  int64_t mode = trnc_arg_int(n, 3, 0), padding = trnc_arg_int(n, 4, 0);
  bool align = trnc_arg_bool(n, 5, false);
  int64_t N = xt.shape[0], C = xt.shape[1], H = xt.shape[2], W = xt.shape[3];
  int64_t Ho = gt.shape[1], Wo = gt.shape[2], P = Ho * Wo;
  int64_t xs[3] = {N, C, H * W}, ps[2] = {N, P}, gs[3] = {N, C, P}, one = 1;
  trnc_ref xf = trnc_db_view(b, trnc_db_f32(b, x), 3, xs), gf = trnc_db_view(b, trnc_db_f32(b, go), 3, gs);
  trnc_ref g = trnc_db_f32(b, grid);
  trnc_ref gx = trnc_db_view(b, DB(b, CLONE, V(DB(b, SELECT, V(g), I(3), I(0))), NONE), 2, ps);
  trnc_ref gy = trnc_db_view(b, DB(b, CLONE, V(DB(b, SELECT, V(g), I(3), I(1))), NONE), 2, ps);
  trnc_ref dx, dy;
  trnc_ref ix = source_index(b, gx, W, padding, align, &dx), iy = source_index(b, gy, H, padding, align, &dy);
  bool want_in = !gr->values[n->outs[0]].is_none, want_grid = !gr->values[n->outs[1]].is_none;
  trnc_ref tx[4], ty[4], tw[4];
  int nt;
  trnc_ref e = TRNC_NO_REF, w_ = TRNC_NO_REF, s = TRNC_NO_REF, nn = TRNC_NO_REF;
  if (mode == 1) {
    tx[0] = DB(b, ROUND, V(ix)), ty[0] = DB(b, ROUND, V(iy));
    tw[0] = DB(b, FULL_LIKE, V(ix), I(1), NONE, NONE, NONE, NONE, NONE);
    nt = 1;
  } else {
    trnc_ref x0 = DB(b, FLOOR, V(ix)), y0 = DB(b, FLOOR, V(iy));
    trnc_ref x1 = DB(b, ADD_SCALAR, V(x0), I(1), I(1)), y1 = DB(b, ADD_SCALAR, V(y0), I(1), I(1));
    e = DB(b, SUB, V(x1), V(ix), I(1)), w_ = DB(b, SUB, V(ix), V(x0), I(1));
    s = DB(b, SUB, V(y1), V(iy), I(1)), nn = DB(b, SUB, V(iy), V(y0), I(1));
    tx[0] = x0, ty[0] = y0, tw[0] = DB(b, MUL, V(e), V(s));
    tx[1] = x1, ty[1] = y0, tw[1] = DB(b, MUL, V(w_), V(s));
    tx[2] = x0, ty[2] = y1, tw[2] = DB(b, MUL, V(e), V(nn));
    tx[3] = x1, ty[3] = y1, tw[3] = DB(b, MUL, V(w_), V(nn));
    nt = 4;
  }
  trnc_ref acc = want_in ? trnc_db_zeros(b, TRNC_F32, 3, xs) : TRNC_NO_REF, gv[4];
  for (int k = 0; k < nt; k++) {
    trnc_ref idx, wm;
    trnc_ref out = tap_index(b, tx[k], ty[k], tw[k], H, W, C, &idx, &wm);
    if (want_in) acc = DB(b, SCATTER_ADD, V(acc), I(2), V(idx), V(DB(b, MUL, V(gf), V(wm))));
    if (want_grid && mode != 1) { /* sum over C of grad * x at the tap, 0 outside the image */
      trnc_ref v = DB(b, MUL, V(DB(b, GATHER, V(xf), I(2), V(idx), trnc_db_bool(false))), V(gf));
      v = DB(b, SUM, V(v), trnc_db_ints(b, &one, 1), trnc_db_bool(false), NONE);
      gv[k] = DB(b, MASKED_FILL, V(v), V(out), I(0));
    }
  }
  trnc_status st = TRNC_OK;
  if (want_in) st = trnc_db_result(b, 0, trnc_db_view(b, acc, 4, xt.shape));
  if (!st && want_grid) {
    trnc_ref r;
    if (mode == 1) {
      r = trnc_db_zeros(b, TRNC_F32, 4, gt.shape);
    } else {
      trnc_ref gix = DB(b, ADD, V(DB(b, MUL, V(DB(b, SUB, V(gv[1]), V(gv[0]), I(1))), V(s))),
                        V(DB(b, MUL, V(DB(b, SUB, V(gv[3]), V(gv[2]), I(1))), V(nn))), I(1));
      trnc_ref giy = DB(b, ADD, V(DB(b, MUL, V(DB(b, SUB, V(gv[2]), V(gv[0]), I(1))), V(e))),
                        V(DB(b, MUL, V(DB(b, SUB, V(gv[3]), V(gv[1]), I(1))), V(w_))), I(1));
      trnc_ref parts[2] = {DB(b, UNSQUEEZE, V(DB(b, MUL, V(gix), V(dx))), I(2)),
                           DB(b, UNSQUEEZE, V(DB(b, MUL, V(giy), V(dy))), I(2))};
      r = trnc_db_view(b, DB(b, CAT, trnc_db_vals(b, parts, 2), I(2)), 4, gt.shape);
    }
    st = trnc_db_result(b, 1, r);
  }
  return st ? st : trnc_db_status(b);
}
