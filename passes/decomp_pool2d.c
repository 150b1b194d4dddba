/*
 * decomp_pool2d.c — adaptive average pooling over two dims whose windows
 * tile the input, and the global pool's backward, as ops the kernel IR
 * lowers (its other forms, and max/avg pooling, stay on codegen/emit_conv.c's
 * VectorE kernel: see decomp_pool2d_lowered_directly).
 *
 * Windows [floor(i*L/O), ceil((i+1)*L/O)) tile the input when O divides L:
 * the input seen [.., OH, kh, OW, kw] summed over the window dims (a kernel-IR
 * reduction, fused with the input's producer), / kh / kw (eager's order);
 * the backward repeats grad_output / kh / kw over each window (the 3-D
 * decomposition's planes use the same builders).
 *
 * Strided max/avg windows through the kernel IR (tried: taps as strided
 * views of the padded input) were slower than the VectorE kernel at real
 * sizes — a stride-s view is a DMA of one element per descriptor — e.g.
 * 3x3/1 max pool over [8, 64, 56, 56]: forward 1.63 -> 2.70 ms, backward
 * 0.89 -> 3.01 ms, compile 0.07 -> 62 s; 3x3/2 over [8, 64, 112, 112]
 * forward 7.19 ms. Kernel-IR span loads (codegen/kir/emit.c: one contiguous
 * span per partition, the taps strided views of it on chip) now make the
 * taps cheap, but a padded window still needs the padded input in HBM
 * (constant_pad_nd: est. 0.84 ms over [8, 64, 56, 56]): the 3x3/2 pad-1 max
 * forward through taps is est. 1.14 ms against this kernel's 0.46 ms; a
 * padding fill on chip (the span tile set to the pad value, its in-bounds
 * part loaded) is the missing piece.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

static trnc_ref as_f32(trnc_db *b, trnc_ref x) {
  return trnc_db_type(b, x)->dtype == TRNC_F32 ? x : trnc_db_cast(b, x, TRNC_F32);
}

static trnc_ref divide(trnc_db *b, trnc_ref x, trnc_ref dt, double d) {
  return dt != TRNC_NO_REF ? DB(b, DIV, V(x), V(dt)) : DB(b, DIV_SCALAR, V(x), trnc_db_float(d));
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
    default:
      return false;
  }
}
