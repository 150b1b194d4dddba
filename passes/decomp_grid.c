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

/* The source coordinate of normalized coordinate c along a dim of `size`. */
static trnc_ref source_index(trnc_db *b, trnc_ref c, int64_t size, int64_t padding, bool align) {
  double s = (double)size;
  trnc_ref i = align ? DB(b, MUL_SCALAR, V(DB(b, ADD_SCALAR, V(c), I(1), I(1))), F((s - 1) / 2))
                     : DB(b, DIV_SCALAR, V(DB(b, ADD_SCALAR, V(DB(b, MUL_SCALAR, V(c), F(s))), F(s - 1), I(1))),
                          F(2));
  if (padding == 2) { /* reflect over [lo, lo + span] (ATen's reflect_coordinates) */
    double lo = align ? 0 : -0.5, span = align ? s - 1 : s;
    if (span <= 0) return DB(b, MUL_SCALAR, V(i), F(0));
    trnc_ref a = DB(b, ABS, V(DB(b, SUB_SCALAR, V(i), F(lo), I(1))));
    trnc_ref extra = DB(b, FMOD_SCALAR, V(a), F(span));
    trnc_ref flips = DB(b, FLOOR, V(DB(b, DIV_SCALAR, V(a), F(span))));
    trnc_ref odd = DB(b, EQ_SCALAR, V(DB(b, REMAINDER_SCALAR, V(flips), F(2))), F(1));
    trnc_ref even_r = DB(b, ADD_SCALAR, V(extra), F(lo), I(1));
    trnc_ref odd_r = DB(b, RSUB_SCALAR, V(extra), F(span + lo), I(1));
    i = DB(b, WHERE, V(odd), V(odd_r), V(even_r));
  }
  if (padding != 0) i = DB(b, CLAMP, V(i), F(0), F(s - 1));
  return i;
}

/* w * x[n, :, iy, ix] over the output points: [N, C, P] with P = Ho*Wo; ix,
 * iy and w are [N, P] float32, a tap outside the image adds 0. */
static trnc_ref tap(trnc_db *b, trnc_ref xf, trnc_ref ix, trnc_ref iy, trnc_ref w, int64_t H, int64_t W,
                    int64_t C) {
  trnc_ref in = DB(b, LOGICAL_AND, V(DB(b, GE_SCALAR, V(ix), I(0))), V(DB(b, LE_SCALAR, V(ix), I(W - 1))));
  in = DB(b, LOGICAL_AND, V(in), V(DB(b, GE_SCALAR, V(iy), I(0))));
  in = DB(b, LOGICAL_AND, V(in), V(DB(b, LE_SCALAR, V(iy), I(H - 1))));
  trnc_ref out = DB(b, LOGICAL_NOT, V(in));
  trnc_ref flat = DB(b, ADD, V(DB(b, MUL_SCALAR, V(iy), I(W))), V(ix), I(1));
  flat = DB(b, MASKED_FILL, V(flat), V(out), I(0)); /* also a NaN coordinate */
  const trnc_type *t = trnc_db_type(b, flat);
  int64_t n = t->shape[0], p = t->shape[1], sh[3] = {n, C, p};
  trnc_ref idx = DB(b, UNSQUEEZE, V(trnc_db_cast(b, flat, TRNC_I64)), I(1));
  idx = DB(b, EXPAND, V(idx), trnc_db_ints(b, sh, 3), trnc_db_bool(false));
  trnc_ref v = DB(b, GATHER, V(xf), I(2), V(idx), trnc_db_bool(false));
  w = DB(b, UNSQUEEZE, V(DB(b, MASKED_FILL, V(w), V(out), I(0))), I(1));
  return DB(b, MUL, V(v), V(w));
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
  trnc_ref ix = source_index(b, gx, W, padding, align), iy = source_index(b, gy, H, padding, align);
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
