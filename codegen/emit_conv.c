/*
 * emit_conv.c — convolution (1-D/2-D, forward and backward) on TensorE and
 * pooling (max/avg/adaptive avg, forward and backward) on VectorE.
 *
 * Layouts. Tensors are NCHW (conv1d: NCL, treated as H = 1; pooling also
 * accepts CHW, treated as N = 1), read and written through their tvs with
 * any strides. Element offsets and strides below are in elements.
 *
 * Convolution = implicit GEMM ("ig"):
 *   out[n, g*Oc+o, y, x] = sum_{c<Kc, kh, kw} Wt(g, o, c, kh, kw)
 *                          * V[n, g*Kc+c, y*s0 + kh*d0 - pad0, x*s1 + kw*d1 - pad1]
 * with V the input upsampled by up = (u0, u1) (V[v] = X[v/u] when u divides
 * v, else 0) and zero outside. The contraction (Kc channels of a group) is
 * on partitions in tiles of <= 128 and accumulates, with the KH*KW taps, in
 * one PSUM bank. Per output tile [<=128 output channels, nb images x oht
 * rows x owt cols <= 512 positions]:
 *   - a zero-initialised SBUF *band* [Kc tile, nb, bh, bw] receives the input
 *     rows/cols the tile needs with one strided DMA (padding and upsampling
 *     are the parts the DMA does not write);
 *   - each tap's moving operand is a strided view of the band
 *     (free dims [(bh*bw, nb), (s0*bw, oht), (s1, owt)]): no im2col copy;
 *   - the stationary operand is the weight slice [Kc tile, o tile] of the
 *     tap, loaded for all taps once per (group, o tile);
 *   - ScalarE evacuates PSUM adding the bias per partition (output channels
 *     are on partitions), and a DMA stores the tile through the output tv.
 * Forward: up = 1, Wt = W. grad_input: the transposed convolution is ig
 * over grad_output upsampled by the stride, padding d*(K-1) - p (may be
 * negative: cropping), stride 1, weights flipped in kh/kw with in/out
 * channels swapped (negative DMA strides, no copy).
 * grad_weight: contraction over output positions, which must be on
 * partitions: grad_output tiles [o, <=128 positions] and input windows
 * [c, positions] (views of a band as above) are transposed on TensorE, then
 * matmul(stationary dY^T [pos, o], moving X^T [pos, c]) accumulates each
 * tap's [o, c] block in PSUM across all position tiles.
 * grad_bias: decomposed into a sum of grad_output over N, H, W (a kernel-IR
 * column sum; passes/decomp_conv.c).
 *
 * Pooling (the forms passes/decomp_pool2d.c leaves: max windows of more
 * than 25 taps, strided average windows, the backward ops and adaptive
 * windows that overlap): planes (n, c) on partitions (<= 128 per tile), spatial on the
 * free axis, fp32 compute. For each tap (kh, kw) the output positions whose
 * window tap falls inside the input form a rectangle; the tap's input
 * values are a strided view of the loaded rows, so padding never needs
 * materialising and only valid taps are combined (exactly eager's set).
 *   max:  acc = -inf, idx = -1; update where win > acc, win is NaN, or idx
 *         is still -1 (the first valid tap); the index value h*W + w of a
 *         tap is an affine function of (oh, ow): GpSimd iota.
 *   avg:  sum of valid taps, divided by divisor_override, or by a count of
 *         taps inside the input (count_include_pad = false) or inside the
 *         padded input (true), built the same way.
 *   backward (max/avg): tiles of input rows; each tap adds its
 *         contribution (grad where the saved index equals the tap's index /
 *         grad over the divisor) into a strided view of the input-gradient
 *         rows, so overlapping windows accumulate.
 *   adaptive (windows that tile the input, and the global pool's backward, are
 *         decomposed for the kernel IR: passes/decomp_pool2d.c): windows
 *         [floor(i*H/oh), ceil((i+1)*H/oh)) are separable:
 *         per output column a reduce over its columns, per output row a
 *         reduce over its rows, then / kh / kw (as eager); backward spreads
 *         grad / kh / kw back with stride-0 (broadcast) views.
 * Limits (handles() refuses the rest, which then fails compilation with a
 * clear diagnostic): float dtypes (f32/bf16/f16), not transposed, bands
 * within BAND_MAX elements per partition, Kc <= 128 * MAX_CT.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/lower.h"

#define BAND_MAX TRNC_CONV_BAND_MAX  /* elements per partition of an input band */
#define POOL_OUT_MAX 4096 /* output elements per partition of a pooling tile */
#define MAX_CT (TRNC_CONV_MAX_CIN / LW_P)  /* contraction tiles of 128 channels */
#define WBYTES_MAX TRNC_CONV_WTILE_MAX

static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t maxi(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t cdiv(int64_t a, int64_t b) { /* ceil(a / b), b > 0 */
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
static int64_t fdiv(int64_t a, int64_t b) { /* floor(a / b), b > 0 */
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* ---- arguments ------------------------------------------------------------- */



/* An int list of 0 (-> dflt), 1 (broadcast) or sp entries into v[sp]. */
static bool slist(const trnc_node *n, uint32_t i, int sp, int64_t dflt, int64_t *v) {
  const trnc_arg *a = trnc_node_arg(n, i);
  int64_t tmp[4];
  int k = 0;
  if (!a || a->kind == TRNC_ARG_NONE) {
    k = 0;
  } else if (a->kind == TRNC_ARG_INT) {
    tmp[0] = a->u.i;
    k = 1;
  } else if (a->kind == TRNC_ARG_LIST && a->u.list.n <= 4) {
    for (uint32_t j = 0; j < a->u.list.n; j++) {
      if (a->u.list.items[j].kind != TRNC_ARG_INT) return false;
      tmp[k++] = a->u.list.items[j].u.i;
    }
  } else {
    return false;
  }
  for (int j = 0; j < sp; j++) v[j] = k == 0 ? dflt : k == 1 ? tmp[0] : tmp[j];
  return k <= 1 || k == sp;
}

/* Output-mask entry k of convolution_backward (default true). */
static bool mask_on(const trnc_node *n, int k) {
  const trnc_arg *m = trnc_node_arg(n, 10);
  return !(m && m->kind == TRNC_ARG_LIST && (uint32_t)k < m->u.list.n &&
           m->u.list.items[k].kind == TRNC_ARG_BOOL && !m->u.list.items[k].u.b);
}

static bool float_dt(trnc_dtype dt) { return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16; }

/* ---- views ------------------------------------------------------------------- */

/** Strides (elements) of a tensor seen as [n, c, h, w] and its offset. */
typedef struct t4 {
  int64_t n, c, h, w, off;
} t4;

/* conv layout: rank 4 NCHW or rank 3 NCL (h = 1). */
static t4 conv_strides(const trnc_type *t) {
  t4 s = {t->stride[0], t->stride[1], 0, t->stride[t->rank - 1], t->offset};
  if (t->rank == 4) s.h = t->stride[2];
  return s;
}

/* pooling layout: rank 4 NCHW or rank 3 CHW (n = 1). */
static t4 pool_strides(const trnc_type *t) {
  if (t->rank == 4) return (t4){t->stride[0], t->stride[1], t->stride[2], t->stride[3], t->offset};
  return (t4){0, t->stride[0], t->stride[1], t->stride[2], t->offset};
}

static trnc_nc_ap hbm_ap(const lw_tv *tv, int64_t off, int64_t np, int64_t pstride, int nf,
                         const trnc_nc_dim *f) {
  trnc_nc_ap ap;
  memset(&ap, 0, sizeof ap);
  ap.mem = TRNC_NC_MEM_HBM;
  ap.dtype = (uint8_t)tv->t.dtype;
  ap.buffer = tv->buffer;
  ap.offset = off * lw_esize(tv->t.dtype);
  ap.partitions = (int32_t)np;
  ap.partition_stride = np > 1 ? pstride : 0;
  /* drop count-1 dims and merge dims contiguous with their inner neighbour
   * (fewer, longer DMA runs) */
  int k = 0;
  for (int i = 0; i < nf; i++) {
    if (f[i].count == 1) continue;
    if (k > 0 && ap.free[k - 1].stride == f[i].stride * f[i].count) {
      ap.free[k - 1].stride = f[i].stride;
      ap.free[k - 1].count *= f[i].count;
      continue;
    }
    ap.free[k++] = f[i];
  }
  if (k == 0) ap.free[k++] = (trnc_nc_dim){1, 1};
  ap.nfree = (uint8_t)k;
  return ap;
}

/* Tile AP with free dims f (strides in elements) starting at element eoff. */
static trnc_nc_ap tap(const lw_tile *t, int64_t np, int64_t eoff, trnc_dtype dt, int nf,
                      const trnc_nc_dim *f) {
  return lw_tile_ap_strided(t, (int)np, eoff * lw_esize(dt), dt, nf, f);
}

/* Contiguous [np, count] AP at element eoff. */
static trnc_nc_ap tap1(const lw_tile *t, int64_t np, int64_t eoff, trnc_dtype dt, int64_t count) {
  trnc_nc_dim f = {1, count};
  return tap(t, np, eoff, dt, 1, &f);
}

/* ---- instruction helpers --------------------------------------------------------- */

static trnc_status emit3(lw *L, trnc_nc_instr *in, lw_tile *dst, lw_tile *a, lw_tile *b, lw_tile *c) {
  lw_tile *rd[3];
  int nr = 0;
  if (a) rd[nr++] = a;
  if (b && b != a) rd[nr++] = b;
  if (c && c != a && c != b) rd[nr++] = c;
  return lw_emit(L, in, rd, nr, dst ? &dst : NULL, dst ? 1 : 0);
}

static trnc_status memset_ap(lw *L, int engine, lw_tile *t, trnc_nc_ap ap, float v) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_MEMSET, engine);
  in.dst = ap;
  in.imm[0] = v;
  return emit3(L, &in, t, NULL, NULL, NULL);
}

/* dst = a op b (VectorE unless engine says otherwise). */
static trnc_status tt(lw *L, int engine, int alu, lw_tile *dt, trnc_nc_ap d, lw_tile *at,
                      trnc_nc_ap a, lw_tile *bt, trnc_nc_ap b) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_TENSOR, engine);
  in.alu0 = (uint8_t)alu;
  in.dst = d;
  in.src[0] = a;
  in.src[1] = b;
  return emit3(L, &in, dt, at, bt, NULL);
}

/* dst = (a op0 s0) op1 s1 with immediates. */
static trnc_status ts(lw *L, int engine, lw_tile *dt, trnc_nc_ap d, lw_tile *at, trnc_nc_ap a, int op0,
                      float s0, int op1, float s1) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_SCALAR, engine);
  in.alu0 = (uint8_t)op0;
  in.alu1 = (uint8_t)op1;
  in.imm[0] = s0;
  in.imm[1] = s1;
  in.dst = d;
  in.src[0] = a;
  return emit3(L, &in, dt, at, NULL, NULL);
}

static trnc_status sel(lw *L, lw_tile *dt, trnc_nc_ap d, lw_tile *mt, trnc_nc_ap m, lw_tile *at,
                       trnc_nc_ap a, lw_tile *bt, trnc_nc_ap b) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_SELECT, TRNC_NC_VECTOR);
  in.dst = d;
  in.src[0] = m;
  in.src[1] = a;
  in.src[2] = b;
  return emit3(L, &in, dt, mt, at, bt);
}

static trnc_status copy_ap(lw *L, int engine, lw_tile *dt, trnc_nc_ap d, lw_tile *st, trnc_nc_ap s) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_COPY, engine);
  in.dst = d;
  in.src[0] = s;
  return emit3(L, &in, dt, st, NULL, NULL);
}

static trnc_status dma(lw *L, lw_tile *t, trnc_nc_ap tile_ap, trnc_nc_ap h, bool to_hbm) {
  return lw_dma(L, t, tile_ap, h, to_hbm);
}

/* ==== convolution: implicit GEMM ============================================== */

typedef struct ig {
  const lw_tv *x, *bias, *out, *w;
  t4 xs, os;
  int64_t N, H, W;         /* x dims (n, spatial) */
  int64_t up[2];
  int64_t G, Kc, Oc, KH, KW, OH, OW;
  int64_t s[2], d[2], pad[2];
  /* Wt(g,o,c,kh,kw) = w[wbase + g*wg + o*wo + c*wc + kh'*wkh + kw'*wkw] with
   * kh' = flip ? KH-1-kh : kh (likewise kw'); strides as stored in w. */
  int64_t wbase, wg, wo, wc, wkh, wkw;
  bool flip;
  trnc_dtype dt;           /* matmul input dtype */
  /* tiling */
  int64_t nb, oht, owt, bh, bw;
} ig;

static int64_t band_rows(int64_t t, int64_t s, int64_t k, int64_t d) { return (t - 1) * s + (k - 1) * d + 1; }

/* Chooses the output tile (nb images x oht x owt positions, <= maxpos) so the
 * band fits BAND_MAX. False if even one position does not fit. */
static bool plan_tile(const ig *c, int64_t maxpos, int64_t *nb, int64_t *oht, int64_t *owt,
                      int64_t *bh, int64_t *bw) {
  int64_t w = mini(c->OW, maxpos), h = mini(c->OH, maxpos / w), b = 1;
  if (h == c->OH && w == c->OW) b = mini(c->N, maxpos / (c->OH * c->OW));
  for (;;) {
    int64_t r = band_rows(h, c->s[0], c->KH, c->d[0]), q = band_rows(w, c->s[1], c->KW, c->d[1]);
    if (b * r * q <= BAND_MAX) {
      *nb = b;
      *oht = h;
      *owt = w;
      *bh = r;
      *bw = q;
      return true;
    }
    if (b > 1) b /= 2;
    else if (h > 1) h = (h + 1) / 2;
    else if (w > 1) w = (w + 1) / 2;
    else return false;
  }
}

static bool ig_plan(ig *c) {
  if (c->Kc > 128 * MAX_CT || c->Kc < 1 || c->Oc < 1) return false;
  if (!plan_tile(c, 512, &c->nb, &c->oht, &c->owt, &c->bh, &c->bw)) return false;
  int64_t nct = (c->Kc + 127) / 128;
  return nct * c->KH * c->KW * mini(c->Oc, 128) * 4 <= WBYTES_MAX;
}

/* Loads the band of x for channels [ch0, ch0+ct) of images [n0, n0+nbt)
 * whose origin in V coordinates is (vh0, vw0) into tile b (dtype dt),
 * zero-filling what the input does not cover. */
static trnc_status load_band(lw *L, const ig *c, lw_tile *b, int64_t ct, int64_t n0, int64_t nbt,
                             int64_t ch0, int64_t vh0, int64_t vw0) {
  int64_t bh = c->bh, bw = c->bw;
  int64_t h_lo = maxi(0, cdiv(vh0, c->up[0])), h_hi = mini(c->H - 1, fdiv(vh0 + bh - 1, c->up[0]));
  int64_t w_lo = maxi(0, cdiv(vw0, c->up[1])), w_hi = mini(c->W - 1, fdiv(vw0 + bw - 1, c->up[1]));
  int64_t nr = h_hi - h_lo + 1, nc = w_hi - w_lo + 1;
  bool full = c->up[0] == 1 && c->up[1] == 1 && vh0 >= 0 && vw0 >= 0 && vh0 + bh <= c->H &&
              vw0 + bw <= c->W;
  trnc_status st;
  if (!full || nr <= 0 || nc <= 0) {
    trnc_nc_dim f = {1, nbt * bh * bw};
    if ((st = memset_ap(L, TRNC_NC_GPSIMD, b, tap(b, ct, 0, c->dt, 1, &f), 0.0f))) return st;
  }
  if (nr <= 0 || nc <= 0) return TRNC_OK;
  trnc_nc_dim sf[3] = {{bh * bw, nbt}, {c->up[0] * bw, nr}, {c->up[1], nc}};
  trnc_nc_dim hf[3] = {{c->xs.n, nbt}, {c->xs.h, nr}, {c->xs.w, nc}};
  int64_t eoff = (h_lo * c->up[0] - vh0) * bw + (w_lo * c->up[1] - vw0);
  int64_t hoff = c->xs.off + n0 * c->xs.n + ch0 * c->xs.c + h_lo * c->xs.h + w_lo * c->xs.w;
  return dma(L, b, tap(b, ct, eoff, c->dt, 3, sf), hbm_ap(c->x, hoff, ct, c->xs.c, 3, hf), false);
}

/* Loads the stationary weights of contraction channels [c0, c0+ct) and
 * output channels [o0, o0+ot) of group g into wt as [ct, ot, taps]. When
 * the contraction is the inner dim of w (forward: W[o, c, kh, kw]) the rows
 * of w are read contiguously as [ot, ct, taps] and transposed per tap on
 * TensorE (element-strided DMA would be ~15x slower); otherwise (grad_input:
 * contraction o is the outer dim) one DMA reads [ct, ot, taps] directly. */
static trnc_status load_weights(lw *L, const ig *c, lw_tile *wt, lw_pool *raw, lw_pool *ps, int64_t g,
                                int64_t o0, int64_t ot, int64_t c0, int64_t ct) {
  int64_t taps = c->KH * c->KW;
  int64_t hoff = c->wbase + g * c->wg + o0 * c->wo + c0 * c->wc;
  trnc_status st;
  if (llabs(c->wc) >= llabs(c->wo)) {
    trnc_nc_dim sf = {1, ot * taps};
    trnc_nc_dim hf[3] = {{c->wo, ot}, {c->wkh, c->KH}, {c->wkw, c->KW}};
    return dma(L, wt, tap(wt, ct, 0, c->dt, 1, &sf), hbm_ap(c->w, hoff, ct, c->wc, 3, hf), false);
  }
  lw_tile *r = lw_pool_next(raw);
  trnc_nc_dim sf = {1, ct * taps};
  trnc_nc_dim hf[3] = {{c->wc, ct}, {c->wkh, c->KH}, {c->wkw, c->KW}};
  if ((st = dma(L, r, tap(r, ot, 0, c->dt, 1, &sf), hbm_ap(c->w, hoff, ot, c->wo, 3, hf), false))) return st;
  for (int64_t t = 0; t < taps; t++) {
    lw_tile *p = lw_pool_next(ps);
    trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
    trnc_nc_dim rf = {taps, ct};
    tr.src[0] = tap(r, ot, t, c->dt, 1, &rf);
    tr.dst = tap1(p, ct, 0, TRNC_F32, ot);
    if ((st = emit3(L, &tr, p, r, NULL, NULL))) return st;
    trnc_nc_dim wf = {taps, ot};
    if ((st = copy_ap(L, TRNC_NC_VECTOR, wt, tap(wt, ct, t, c->dt, 1, &wf), p, tap1(p, ct, 0, TRNC_F32, ot))))
      return st;
  }
  return TRNC_OK;
}

static trnc_status ig_emit(lw *L, ig *c, const char *name) {
  trnc_status st = lw_kernel_begin(L, name);
  if (st) return st;
  int64_t esz = lw_esize(c->dt), taps = c->KH * c->KW;
  int64_t nct = (c->Kc + 127) / 128, otmax = mini(c->Oc, 128), ctmax = mini(c->Kc, 128);
  int64_t npos = c->nb * c->oht * c->owt;
  int64_t nsets = (c->G > 1 || c->Oc > 128) ? 2 : 1;
  if (nsets * nct * taps * otmax * esz > WBYTES_MAX) nsets = 1;
  lw_pool wpool[2], bpool, band, pso, opool, wraw, wps;
  bool transposed_load = llabs(c->wc) < llabs(c->wo);
  for (int s = 0; s < nsets; s++)
    if ((st = lw_pool_init(L, &wpool[s], TRNC_NC_MEM_SBUF, taps * otmax * esz, (int)nct))) return st;
  if ((st = lw_pool_init(L, &bpool, TRNC_NC_MEM_SBUF, 4, 2)) ||
      (st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, c->nb * c->bh * c->bw * esz, 3)) ||
      (st = lw_pool_init(L, &pso, TRNC_NC_MEM_PSUM, npos * 4, 2)) ||
      (st = lw_pool_init(L, &opool, TRNC_NC_MEM_SBUF, npos * 4, 3)))
    return st;
  if (transposed_load && ((st = lw_pool_init(L, &wraw, TRNC_NC_MEM_SBUF, ctmax * taps * esz, 2)) ||
                          (st = lw_pool_init(L, &wps, TRNC_NC_MEM_PSUM, otmax * 4, 2))))
    return st;
  trnc_dtype odt = c->out->t.dtype;
  int set = 0;
  for (int64_t g = 0; g < c->G; g++)
    for (int64_t o0 = 0; o0 < c->Oc; o0 += 128) {
      int64_t ot = mini(128, c->Oc - o0);
      lw_pool *wp = &wpool[set];
      set = (set + 1) % (int)nsets;
      /* weights of every tap: tile ci = [ct (contraction), ot, taps] */
      for (int64_t ci = 0; ci < nct; ci++)
        if ((st = load_weights(L, c, &wp->tiles[ci], &wraw, &wps, g, o0, ot, ci * 128,
                               mini(128, c->Kc - ci * 128))))
          return st;
      lw_tile *bt = NULL;
      if (c->bias && c->bias->buffer >= 0) {
        bt = lw_pool_next(&bpool);
        trnc_nc_dim one = {1, 1};
        trnc_nc_dim f1 = {1, 1};
        int64_t bs = c->bias->t.stride[0];
        if ((st = dma(L, bt, tap(bt, ot, 0, TRNC_F32, 1, &one),
                      hbm_ap(c->bias, c->bias->t.offset + (g * c->Oc + o0) * bs, ot, bs, 1, &f1), false)))
          return st;
      }
      for (int64_t n0 = 0; n0 < c->N; n0 += c->nb)
        for (int64_t y0 = 0; y0 < c->OH; y0 += c->oht)
          for (int64_t x0 = 0; x0 < c->OW; x0 += c->owt) {
            int64_t nbt = mini(c->nb, c->N - n0), yc = mini(c->oht, c->OH - y0), xc = mini(c->owt, c->OW - x0);
            int64_t np = nbt * yc * xc;
            lw_tile *ps = lw_pool_next(&pso);
            for (int64_t ci = 0; ci < nct; ci++) {
              int64_t ct = mini(128, c->Kc - ci * 128);
              lw_tile *b = lw_pool_next(&band);
              st = load_band(L, c, b, ct, n0, nbt, g * c->Kc + ci * 128, y0 * c->s[0] - c->pad[0],
                             x0 * c->s[1] - c->pad[1]);
              if (st) return st;
              lw_tile *wt = &wp->tiles[ci];
              for (int64_t kh = 0; kh < c->KH; kh++)
                for (int64_t kw = 0; kw < c->KW; kw++) {
                  trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
                  mm.mode = !(ci == 0 && kh == 0 && kw == 0);
                  mm.dst = tap1(ps, ot, 0, TRNC_F32, np);
                  int64_t t = (c->flip ? c->KH - 1 - kh : kh) * c->KW + (c->flip ? c->KW - 1 - kw : kw);
                  trnc_nc_dim wf = {taps, ot};
                  mm.src[0] = tap(wt, ct, t, c->dt, 1, &wf);
                  trnc_nc_dim mf[3] = {{c->bh * c->bw, nbt}, {c->s[0] * c->bw, yc}, {c->s[1], xc}};
                  mm.src[1] = tap(b, ct, kh * c->d[0] * c->bw + kw * c->d[1], c->dt, 3, mf);
                  if ((st = emit3(L, &mm, ps, wt, b, NULL))) return st;
                }
            }
            /* PSUM -> SBUF (+ bias per output channel = partition) -> HBM */
            lw_tile *o = lw_pool_next(&opool);
            trnc_nc_instr ev = lw_instr(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
            ev.act = TRNC_NC_ACT_IDENTITY;
            ev.imm[0] = 1.0f;
            ev.src[0] = tap1(ps, ot, 0, TRNC_F32, np);
            if (bt) {
              trnc_nc_dim one = {1, 1};
              ev.src[1] = tap(bt, ot, 0, TRNC_F32, 1, &one);
            }
            ev.dst = tap1(o, ot, 0, odt, np);
            if ((st = emit3(L, &ev, o, ps, bt, NULL))) return st;
            trnc_nc_dim sf[3] = {{yc * xc, nbt}, {xc, yc}, {1, xc}};
            trnc_nc_dim hf[3] = {{c->os.n, nbt}, {c->os.h, yc}, {c->os.w, xc}};
            int64_t hoff = c->os.off + n0 * c->os.n + (g * c->Oc + o0) * c->os.c + y0 * c->os.h + x0 * c->os.w;
            if ((st = dma(L, o, tap(o, ot, 0, odt, 3, sf), hbm_ap(c->out, hoff, ot, c->os.c, 3, hf), true)))
              return st;
          }
    }
  return TRNC_OK;
}

/* Geometry of a convolution node (forward or backward) from graph types. */
typedef struct cgeo {
  int sp;                  /* spatial dims: 1 or 2 */
  int64_t N, C, H, W, O, KH, KW, OH, OW, G;
  int64_t s[2], pad[2], d[2];
} cgeo;

static bool conv_geo(const trnc_graph *g, const trnc_node *n, cgeo *q) {
  bool bw = n->op == TRNC_OP_CONVOLUTION_BACKWARD;
  int ax = bw ? 1 : 0, aw = bw ? 2 : 1, ast = bw ? 4 : 3;
  const trnc_arg *xa = trnc_node_arg(n, (uint32_t)ax), *wa = trnc_node_arg(n, (uint32_t)aw);
  if (!xa || !wa || xa->kind != TRNC_ARG_VALUE || wa->kind != TRNC_ARG_VALUE) return false;
  if (trnc_arg_bool(n, bw ? 7 : 6, false)) return false; /* transposed */
  const trnc_type *x = trnc_ref_type(g, xa->u.ref), *w = trnc_ref_type(g, wa->u.ref);
  if ((x->rank != 3 && x->rank != 4) || w->rank != x->rank) return false;
  memset(q, 0, sizeof *q);
  q->sp = x->rank - 2;
  int64_t st[2], pd[2], dl[2];
  if (!slist(n, (uint32_t)ast, q->sp, 1, st) || !slist(n, (uint32_t)ast + 1, q->sp, 0, pd) ||
      !slist(n, (uint32_t)ast + 2, q->sp, 1, dl))
    return false;
  q->G = trnc_arg_int(n, bw ? 9 : 8, 1);
  q->N = x->shape[0];
  q->C = x->shape[1];
  q->O = w->shape[0];
  if (q->G < 1 || q->C != w->shape[1] * q->G || q->O % q->G) return false;
  if (q->sp == 1) {
    q->H = q->KH = 1;
    q->W = x->shape[2];
    q->KW = w->shape[2];
    q->s[0] = q->d[0] = 1;
    q->pad[0] = 0;
    q->s[1] = st[0];
    q->pad[1] = pd[0];
    q->d[1] = dl[0];
  } else {
    q->H = x->shape[2];
    q->W = x->shape[3];
    q->KH = w->shape[2];
    q->KW = w->shape[3];
    for (int j = 0; j < 2; j++) {
      q->s[j] = st[j];
      q->pad[j] = pd[j];
      q->d[j] = dl[j];
    }
  }
  for (int j = 0; j < 2; j++)
    if (q->s[j] < 1 || q->d[j] < 1 || q->pad[j] < 0) return false;
  q->OH = (q->H + 2 * q->pad[0] - q->d[0] * (q->KH - 1) - 1) / q->s[0] + 1;
  q->OW = (q->W + 2 * q->pad[1] - q->d[1] * (q->KW - 1) - 1) / q->s[1] + 1;
  return q->OH >= 1 && q->OW >= 1 && float_dt(x->dtype) && x->dtype == w->dtype;
}

/* Forward ig of geometry q (tvs filled later). */
static void ig_forward(const cgeo *q, ig *c) {
  memset(c, 0, sizeof *c);
  c->N = q->N;
  c->H = q->H;
  c->W = q->W;
  c->up[0] = c->up[1] = 1;
  c->G = q->G;
  c->Kc = q->C / q->G;
  c->Oc = q->O / q->G;
  c->KH = q->KH;
  c->KW = q->KW;
  c->OH = q->OH;
  c->OW = q->OW;
  for (int j = 0; j < 2; j++) {
    c->s[j] = q->s[j];
    c->d[j] = q->d[j];
    c->pad[j] = q->pad[j];
  }
}

/* grad_input as ig over grad_output (dims of q's output). */
static void ig_grad_input(const cgeo *q, ig *c) {
  memset(c, 0, sizeof *c);
  c->N = q->N;
  c->H = q->OH;
  c->W = q->OW;
  c->up[0] = q->s[0];
  c->up[1] = q->s[1];
  c->G = q->G;
  c->Kc = q->O / q->G;
  c->Oc = q->C / q->G;
  c->KH = q->KH;
  c->KW = q->KW;
  c->OH = q->H;
  c->OW = q->W;
  for (int j = 0; j < 2; j++) {
    c->s[j] = 1;
    c->d[j] = q->d[j];
  }
  c->pad[0] = q->d[0] * (q->KH - 1) - q->pad[0];
  c->pad[1] = q->d[1] * (q->KW - 1) - q->pad[1];
}

/* The grad_weight tiling: positions tile (<= 128) and its band. */
static bool gw_plan(const cgeo *q, ig *c) {
  ig_forward(q, c);
  return plan_tile(c, 128, &c->nb, &c->oht, &c->owt, &c->bh, &c->bw);
}

static trnc_dtype mm_dtype(lw *L, trnc_dtype dt) {
  return (L->opt.autocast_bf16 && dt == TRNC_F32) ? TRNC_BF16 : dt;
}

static void set_weights_fwd(ig *c, const lw_tv *w) {
  t4 ws = conv_strides(&w->t);
  c->w = w;
  c->wbase = ws.off;
  c->wg = c->Oc * ws.n;
  c->wo = ws.n;
  c->wc = ws.c;
  c->wkh = ws.h;
  c->wkw = ws.w;
}

static trnc_status emit_conv_fwd(lw *L, const trnc_node *n) {
  cgeo q;
  if (!conv_geo(L->g, n, &q)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution: bad geometry");
  ig c;
  ig_forward(&q, &c);
  if (!ig_plan(&c)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution: no tiling");
  c.x = &L->tv[n->args[0].u.ref];
  c.out = &L->tv[n->outs[0]];
  const trnc_arg *ba = trnc_node_arg(n, 2);
  c.bias = ba && ba->kind == TRNC_ARG_VALUE ? &L->tv[ba->u.ref] : NULL;
  if (c.out->buffer < 0 || q.N == 0) return TRNC_OK;
  if (c.x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution: input not materialized");
  c.xs = conv_strides(&c.x->t);
  c.os = conv_strides(&c.out->t);
  set_weights_fwd(&c, &L->tv[n->args[1].u.ref]);
  c.dt = mm_dtype(L, c.x->t.dtype);
  L->ops_per_engine[0]++;
  return ig_emit(L, &c, "convolution");
}

/* ---- grad_weight ------------------------------------------------------------------- */

static trnc_status emit_grad_weight(lw *L, const cgeo *q, const lw_tv *dy, const lw_tv *x,
                                    const lw_tv *dw) {
  ig c;
  gw_plan(q, &c);
  c.x = x;
  c.xs = conv_strides(&x->t);
  c.dt = mm_dtype(L, x->t.dtype);
  t4 ys = conv_strides(&dy->t), wsd = conv_strides(&dw->t);
  trnc_status st = lw_kernel_begin(L, "conv_grad_weight");
  if (st) return st;
  int64_t esz = lw_esize(c.dt), taps = c.KH * c.KW, npmax = c.nb * c.oht * c.owt;
  int64_t ctmax = mini(c.Kc, 128), otmax = mini(c.Oc, 128);
  int64_t tpb = maxi(1, 512 / ctmax); /* taps per PSUM bank */
  lw_pool acc, band, dyt, dyT, tp, xT, opool;
  if ((st = lw_pool_init(L, &acc, TRNC_NC_MEM_PSUM, 2048, 4)) ||
      (st = lw_pool_init(L, &tp, TRNC_NC_MEM_PSUM, 128 * 4, 2)) ||
      (st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, c.nb * c.bh * c.bw * esz, 2)) ||
      (st = lw_pool_init(L, &dyt, TRNC_NC_MEM_SBUF, npmax * esz, 2)) ||
      (st = lw_pool_init(L, &dyT, TRNC_NC_MEM_SBUF, otmax * esz, 2)) ||
      (st = lw_pool_init(L, &xT, TRNC_NC_MEM_SBUF, ctmax * esz, 3)) ||
      (st = lw_pool_init(L, &opool, TRNC_NC_MEM_SBUF, 512 * 4, 2)))
    return st;
  trnc_dtype odt = dw->t.dtype;
  for (int64_t g = 0; g < c.G; g++)
    for (int64_t o0 = 0; o0 < c.Oc; o0 += 128)
      for (int64_t c0 = 0; c0 < c.Kc; c0 += 128) {
        int64_t ot = mini(128, c.Oc - o0), ct = mini(128, c.Kc - c0);
        int64_t tpbk = maxi(1, 512 / ct);
        (void)tpb;
        for (int64_t t0 = 0; t0 < taps; t0 += 4 * tpbk) {
          int64_t t1 = mini(taps, t0 + 4 * tpbk);
          bool first = true;
          for (int64_t n0 = 0; n0 < c.N; n0 += c.nb)
            for (int64_t y0 = 0; y0 < c.OH; y0 += c.oht)
              for (int64_t x0 = 0; x0 < c.OW; x0 += c.owt) {
                int64_t nbt = mini(c.nb, c.N - n0), yc = mini(c.oht, c.OH - y0), xc = mini(c.owt, c.OW - x0);
                int64_t np = nbt * yc * xc;
                /* dY [ot, positions] -> TensorE transpose -> dY^T [np, ot] */
                lw_tile *d = lw_pool_next(&dyt);
                trnc_nc_dim sf[3] = {{yc * xc, nbt}, {xc, yc}, {1, xc}};
                trnc_nc_dim hf[3] = {{ys.n, nbt}, {ys.h, yc}, {ys.w, xc}};
                int64_t hoff = ys.off + n0 * ys.n + (g * c.Oc + o0) * ys.c + y0 * ys.h + x0 * ys.w;
                if ((st = dma(L, d, tap(d, ot, 0, c.dt, 3, sf), hbm_ap(dy, hoff, ot, ys.c, 3, hf), false)))
                  return st;
                lw_tile *p = lw_pool_next(&tp);
                trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
                tr.src[0] = tap1(d, ot, 0, c.dt, np);
                tr.dst = tap1(p, np, 0, TRNC_F32, ot);
                if ((st = emit3(L, &tr, p, d, NULL, NULL))) return st;
                lw_tile *dT = lw_pool_next(&dyT);
                if ((st = copy_ap(L, TRNC_NC_VECTOR, dT, tap1(dT, np, 0, c.dt, ot), p,
                                  tap1(p, np, 0, TRNC_F32, ot))))
                  return st;
                lw_tile *b = lw_pool_next(&band);
                if ((st = load_band(L, &c, b, ct, n0, nbt, g * c.Kc + c0, y0 * c.s[0] - c.pad[0],
                                    x0 * c.s[1] - c.pad[1])))
                  return st;
                for (int64_t t = t0; t < t1; t++) {
                  int64_t kh = t / c.KW, kw = t % c.KW;
                  lw_tile *p2 = lw_pool_next(&tp);
                  trnc_nc_instr tw = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
                  trnc_nc_dim mf[3] = {{c.bh * c.bw, nbt}, {c.s[0] * c.bw, yc}, {c.s[1], xc}};
                  tw.src[0] = tap(b, ct, kh * c.d[0] * c.bw + kw * c.d[1], c.dt, 3, mf);
                  tw.dst = tap1(p2, np, 0, TRNC_F32, ct);
                  if ((st = emit3(L, &tw, p2, b, NULL, NULL))) return st;
                  lw_tile *xt = lw_pool_next(&xT);
                  if ((st = copy_ap(L, TRNC_NC_VECTOR, xt, tap1(xt, np, 0, c.dt, ct), p2,
                                    tap1(p2, np, 0, TRNC_F32, ct))))
                    return st;
                  lw_tile *a = &acc.tiles[(t - t0) / tpbk];
                  trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
                  mm.mode = !first;
                  mm.dst = tap1(a, ot, ((t - t0) % tpbk) * ct, TRNC_F32, ct);
                  mm.src[0] = tap1(dT, np, 0, c.dt, ot);
                  mm.src[1] = tap1(xt, np, 0, c.dt, ct);
                  if ((st = emit3(L, &mm, a, dT, xt, NULL))) return st;
                }
                first = false;
              }
          /* evacuate each bank and store its taps: dW[g*Oc+o0+o, c0+c, kh, kw] */
          for (int64_t tb = t0; tb < t1; tb += tpbk) {
            int64_t te = mini(t1, tb + tpbk);
            lw_tile *a = &acc.tiles[(tb - t0) / tpbk];
            lw_tile *o = lw_pool_next(&opool);
            if ((st = copy_ap(L, TRNC_NC_SCALAR, o, tap1(o, ot, 0, odt, (te - tb) * ct), a,
                              tap1(a, ot, 0, TRNC_F32, (te - tb) * ct))))
              return st;
            for (int64_t t = tb; t < te; t++) {
              int64_t kh = t / c.KW, kw = t % c.KW;
              trnc_nc_dim hf = {wsd.c, ct};
              int64_t hoff = wsd.off + (g * c.Oc + o0) * wsd.n + c0 * wsd.c + kh * wsd.h + kw * wsd.w;
              if ((st = dma(L, o, tap1(o, ot, (t - tb) * ct, odt, ct), hbm_ap(dw, hoff, ot, wsd.n, 1, &hf),
                            true)))
                return st;
            }
          }
        }
      }
  return TRNC_OK;
}

static trnc_status emit_conv_bwd(lw *L, const trnc_node *n) {
  cgeo q;
  if (!conv_geo(L->g, n, &q)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: bad geometry");
  const lw_tv *dy = &L->tv[n->args[0].u.ref], *x = &L->tv[n->args[1].u.ref], *w = &L->tv[n->args[2].u.ref];
  const lw_tv *dx = &L->tv[n->outs[0]], *dw = &L->tv[n->outs[1]];
  trnc_status st = TRNC_OK;
  bool need_dx = mask_on(n, 0) && dx->buffer >= 0, need_dw = mask_on(n, 1) && dw->buffer >= 0;
  if ((need_dx || need_dw) && dy->buffer < 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: grad_output not materialized");
  L->ops_per_engine[0]++;
  if (need_dx) {
    ig c;
    ig_grad_input(&q, &c);
    if (!ig_plan(&c)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: no tiling");
    c.x = dy;
    c.xs = conv_strides(&dy->t);
    c.out = dx;
    c.os = conv_strides(&dx->t);
    t4 ws = conv_strides(&w->t);
    c.w = w;
    c.wbase = ws.off;
    c.wg = c.Kc * ws.n; /* Kc = O / G here */
    c.wo = ws.c;
    c.wc = ws.n;
    c.wkh = ws.h;
    c.wkw = ws.w;
    c.flip = true;
    c.dt = mm_dtype(L, dy->t.dtype);
    if ((st = ig_emit(L, &c, "conv_grad_input"))) return st;
  }
  if (need_dw) {
    if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: input not materialized");
    if ((st = emit_grad_weight(L, &q, dy, x, dw))) return st;
  }
  return TRNC_OK;
}

/* ==== pooling ====================================================================== */

typedef struct pp {
  int64_t N, C, H, W, OH, OW, KH, KW;
  int64_t s[2], pad[2], d[2];
  bool ceil, cip;          /* ceil_mode, count_include_pad */
  int64_t divisor;         /* avg: divisor_override (0 = none) */
} pp;

static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t o = fdiv(num, st) + 1;
  if (ceil && (o - 1) * st >= in + pad) o--;
  return o;
}

/* Geometry of a max/avg pool node; a_k: index of kernel_size. */
static bool pool_geo(const trnc_graph *g, const trnc_node *n, const trnc_type *x, uint32_t a_k,
                     bool has_dil, uint32_t a_ceil, pp *p) {
  memset(p, 0, sizeof *p);
  if (x->rank != 3 && x->rank != 4) return false;
  p->N = x->rank == 4 ? x->shape[0] : 1;
  p->C = x->shape[x->rank - 3];
  p->H = x->shape[x->rank - 2];
  p->W = x->shape[x->rank - 1];
  int64_t k[2], st[2], pad[2], dil[2] = {1, 1};
  if (!slist(n, a_k, 2, 1, k)) return false;
  const trnc_arg *sa = trnc_node_arg(n, a_k + 1);
  bool empty = !sa || sa->kind == TRNC_ARG_NONE || (sa->kind == TRNC_ARG_LIST && sa->u.list.n == 0);
  if (empty) memcpy(st, k, sizeof st);
  else if (!slist(n, a_k + 1, 2, 1, st)) return false;
  if (!slist(n, a_k + 2, 2, 0, pad)) return false;
  if (has_dil && !slist(n, a_k + 3, 2, 1, dil)) return false;
  p->ceil = trnc_arg_bool(n, a_ceil, false);
  p->KH = k[0];
  p->KW = k[1];
  for (int j = 0; j < 2; j++) {
    if (k[j] < 1 || st[j] < 1 || dil[j] < 1 || pad[j] < 0 || pad[j] * 2 > k[j]) return false;
    p->s[j] = st[j];
    p->pad[j] = pad[j];
    p->d[j] = dil[j];
  }
  p->OH = pool_out(p->H, k[0], pad[0], st[0], dil[0], p->ceil);
  p->OW = pool_out(p->W, k[1], pad[1], st[1], dil[1], p->ceil);
  (void)g;
  return p->OH >= 1 && p->OW >= 1;
}

/* Range of outputs o in [lo, hi] whose tap k reads an input row inside
 * [a, b] (o*s + k*d - pad in [a, b]); empty if *ohi < *olo. */
static void tap_range(int64_t lo, int64_t hi, int64_t s, int64_t kd, int64_t pad, int64_t a, int64_t b,
                      int64_t *olo, int64_t *ohi) {
  *olo = maxi(lo, cdiv(a + pad - kd, s));
  *ohi = mini(hi, fdiv(b + pad - kd, s));
}

/* Plane tiles: (n, c0, np). Planes merge across n when every tv allows. */
typedef struct planes {
  int64_t N, C;
  bool flat;
} planes;

static bool merges(const t4 *s, int64_t N, int64_t C) { return N == 1 || s->n == C * s->c; }

/* Offset of plane tile (n, c0) in a tv with strides s. */
static int64_t plane_off(const t4 *s, const planes *P, int64_t n, int64_t c0) {
  return s->off + (P->flat ? c0 * s->c : n * s->n + c0 * s->c);
}

#define FOR_PLANES(P, n, c0, np)                                               \
  for (int64_t n = 0; n < ((P)->flat ? 1 : (P)->N); n++)                       \
    for (int64_t c0 = 0, np = 0,                                               \
                 _tot = (P)->flat ? (P)->N * (P)->C : (P)->C;                  \
         c0 < _tot && ((np = mini(128, _tot - c0)), 1); c0 += 128)

/* Output-row tile height of a forward pool; 0 if none fits. */
static int64_t pool_fwd_rows(const pp *p) {
  for (int64_t oht = mini(p->OH, POOL_OUT_MAX / p->OW); oht >= 1; oht = oht > 1 ? (oht + 1) / 2 : 0) {
    int64_t rows = mini(p->H, band_rows(oht, p->s[0], p->KH, p->d[0]));
    if (rows * p->W <= BAND_MAX) return oht;
    if (oht == 1) break;
  }
  return 0;
}

/* Input-row tile height of a pool backward; 0 if none fits. */
static int64_t pool_bwd_rows(const pp *p) {
  for (int64_t iht = mini(p->H, BAND_MAX / p->W); iht >= 1; iht = iht > 1 ? (iht + 1) / 2 : 0) {
    int64_t orows = (iht + (p->KH - 1) * p->d[0]) / p->s[0] + 2;
    if (mini(orows, p->OH) * p->OW <= POOL_OUT_MAX) return iht;
    if (iht == 1) break;
  }
  return 0;
}

/* Count of taps per output position into cnt rows [oh0, oh0+ohc): taps
 * inside the input, or (cip) inside the padded input [-pad, H+pad). */
static trnc_status pool_count(lw *L, const pp *p, lw_tile *cnt, int64_t np, int64_t oh0, int64_t ohc,
                              bool cip) {
  int64_t eh = cip ? p->pad[0] : 0, ew = cip ? p->pad[1] : 0;
  trnc_status st = memset_ap(L, TRNC_NC_VECTOR, cnt, tap1(cnt, np, 0, TRNC_F32, ohc * p->OW), 0.0f);
  for (int64_t kh = 0; kh < p->KH && !st; kh++)
    for (int64_t kw = 0; kw < p->KW && !st; kw++) {
      int64_t a, b, ca, cb;
      tap_range(oh0, oh0 + ohc - 1, p->s[0], kh * p->d[0], p->pad[0], -eh, p->H - 1 + eh, &a, &b);
      tap_range(0, p->OW - 1, p->s[1], kw * p->d[1], p->pad[1], -ew, p->W - 1 + ew, &ca, &cb);
      if (b < a || cb < ca) continue;
      trnc_nc_dim f[2] = {{p->OW, b - a + 1}, {1, cb - ca + 1}};
      trnc_nc_ap r = tap(cnt, np, (a - oh0) * p->OW + ca, TRNC_F32, 2, f);
      st = ts(L, TRNC_NC_VECTOR, cnt, r, cnt, r, TRNC_NC_ALU_ADD, 1.0f, TRNC_NC_ALU_BYPASS, 0.0f);
    }
  return st;
}

/* True when tap (0,0) covers every output of rows [oh0, oh0+ohc) and every
 * tap reads inside the input: no padding effects in this tile. */
static bool all_taps_inside(const pp *p, int64_t oh0, int64_t ohc) {
  int64_t a, b, ca, cb;
  for (int64_t kh = 0; kh < p->KH; kh += p->KH - 1 ? p->KH - 1 : 1) {
    tap_range(oh0, oh0 + ohc - 1, p->s[0], kh * p->d[0], p->pad[0], 0, p->H - 1, &a, &b);
    if (a != oh0 || b != oh0 + ohc - 1) return false;
  }
  for (int64_t kw = 0; kw < p->KW; kw += p->KW - 1 ? p->KW - 1 : 1) {
    tap_range(0, p->OW - 1, p->s[1], kw * p->d[1], p->pad[1], 0, p->W - 1, &ca, &cb);
    if (ca != 0 || cb != p->OW - 1) return false;
  }
  return true;
}

/* max_pool2d_with_indices and avg_pool2d. */
static trnc_status emit_pool_fwd(lw *L, const trnc_node *n) {
  bool is_max = n->op == TRNC_OP_MAX_POOL2D;
  const lw_tv *x = &L->tv[n->args[0].u.ref], *out = &L->tv[n->outs[0]];
  const lw_tv *idxo = is_max && n->nouts > 1 ? &L->tv[n->outs[1]] : NULL;
  pp p;
  if (!pool_geo(L->g, n, &L->g->values[n->args[0].u.ref].type, 1, is_max, is_max ? 5 : 4, &p))
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d: bad geometry");
  if (!is_max) {
    p.cip = trnc_arg_bool(n, 5, true);
    p.divisor = trnc_arg_int(n, 6, 0);
  }
  if (p.N * p.C == 0 || (out->buffer < 0 && (!idxo || idxo->buffer < 0))) return TRNC_OK;
  if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d: input not materialized");
  t4 xs = pool_strides(&x->t), os = pool_strides(&out->t), is = {0, 0, 0, 0, 0};
  if (idxo && idxo->buffer >= 0) is = pool_strides(&idxo->t);
  planes P = {p.N, p.C, merges(&xs, p.N, p.C) && merges(&os, p.N, p.C) && (!idxo || merges(&is, p.N, p.C))};
  int64_t oht = pool_fwd_rows(&p);
  if (!oht) return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d: no tiling");
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  int64_t brows = mini(p.H, band_rows(oht, p.s[0], p.KH, p.d[0]));
  int64_t no = oht * p.OW;
  lw_pool band, accp, idxp;
  lw_tile *m1 = NULL, *m2 = NULL, *ti = NULL, *cnt = NULL;
  if ((st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, brows * p.W * 4, 2)) ||
      (st = lw_pool_init(L, &accp, TRNC_NC_MEM_SBUF, no * 4, 2)) ||
      (st = lw_pool_init(L, &idxp, TRNC_NC_MEM_SBUF, is_max ? no * 4 : 4, 2)))
    return st;
  if (is_max) {
    m1 = lw_sbuf(L, no * 4);
    m2 = lw_sbuf(L, no * 4);
    ti = lw_sbuf(L, no * 4);
    if (!m1 || !m2 || !ti) return L->status;
  } else if (!p.divisor) {
    cnt = lw_sbuf(L, no * 4);
    if (!cnt) return L->status;
  }
  FOR_PLANES(&P, nn, c0, np) {
    for (int64_t oh0 = 0; oh0 < p.OH; oh0 += oht) {
      int64_t ohc = mini(oht, p.OH - oh0);
      int64_t h_lo = maxi(0, oh0 * p.s[0] - p.pad[0]);
      int64_t h_hi = mini(p.H - 1, (oh0 + ohc - 1) * p.s[0] - p.pad[0] + (p.KH - 1) * p.d[0]);
      lw_tile *b = lw_pool_next(&band), *acc = lw_pool_next(&accp), *idx = lw_pool_next(&idxp);
      int64_t nrows = h_hi - h_lo + 1;
      if (nrows > 0) {
        trnc_nc_dim sf[2] = {{p.W, nrows}, {1, p.W}};
        trnc_nc_dim hf[2] = {{xs.h, nrows}, {xs.w, p.W}};
        int64_t hoff = plane_off(&xs, &P, nn, c0) + h_lo * xs.h;
        if ((st = dma(L, b, tap(b, np, 0, TRNC_F32, 2, sf), hbm_ap(x, hoff, np, xs.c, 2, hf), false)))
          return st;
      }
      trnc_nc_ap accf = tap1(acc, np, 0, TRNC_F32, ohc * p.OW);
      bool inside = all_taps_inside(&p, oh0, ohc);
      bool started = false; /* acc/idx initialised by a full first tap */
      if (!(inside && is_max)) {
        if ((st = memset_ap(L, TRNC_NC_VECTOR, acc, accf, is_max ? -INFINITY : 0.0f))) return st;
        if (is_max &&
            (st = memset_ap(L, TRNC_NC_VECTOR, idx, tap1(idx, np, 0, TRNC_F32, ohc * p.OW), -1.0f)))
          return st;
        started = !is_max;
      }
      for (int64_t kh = 0; kh < p.KH; kh++)
        for (int64_t kw = 0; kw < p.KW; kw++) {
          int64_t a, e, ca, ce;
          tap_range(oh0, oh0 + ohc - 1, p.s[0], kh * p.d[0], p.pad[0], 0, p.H - 1, &a, &e);
          tap_range(0, p.OW - 1, p.s[1], kw * p.d[1], p.pad[1], 0, p.W - 1, &ca, &ce);
          if (e < a || ce < ca) continue;
          int64_t nr = e - a + 1, nc = ce - ca + 1;
          trnc_nc_dim wf[2] = {{p.s[0] * p.W, nr}, {p.s[1], nc}};
          trnc_nc_ap win = tap(b, np, (a * p.s[0] + kh * p.d[0] - p.pad[0] - h_lo) * p.W +
                                          ca * p.s[1] + kw * p.d[1] - p.pad[1], TRNC_F32, 2, wf);
          trnc_nc_dim rf[2] = {{p.OW, nr}, {1, nc}};
          int64_t roff = (a - oh0) * p.OW + ca;
          trnc_nc_ap ra = tap(acc, np, roff, TRNC_F32, 2, rf);
          if (!is_max) {
            if ((st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_ADD, acc, ra, acc, ra, b, win))) return st;
            continue;
          }
          /* index of this tap: (oh*s0 + kh*d0 - p0) * W + ow*s1 + kw*d1 - p1 */
          trnc_nc_ap ri = tap(idx, np, roff, TRNC_F32, 2, rf);
          trnc_nc_ap rt = tap(ti, np, roff, TRNC_F32, 2, rf);
          trnc_nc_instr io = lw_instr(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
          io.dst = rt;
          io.aff[0] = (int32_t)((a * p.s[0] + kh * p.d[0] - p.pad[0]) * p.W + ca * p.s[1] + kw * p.d[1] - p.pad[1]);
          io.aff[2] = (int32_t)(p.s[0] * p.W);
          io.aff[3] = (int32_t)p.s[1];
          if ((st = emit3(L, &io, ti, NULL, NULL, NULL))) return st;
          if (!started) { /* first tap covers the tile: it initialises */
            if ((st = copy_ap(L, TRNC_NC_VECTOR, acc, ra, b, win)) ||
                (st = copy_ap(L, TRNC_NC_VECTOR, idx, ri, ti, rt)))
              return st;
            started = true;
            continue;
          }
          trnc_nc_ap r1 = tap(m1, np, roff, TRNC_F32, 2, rf), r2 = tap(m2, np, roff, TRNC_F32, 2, rf);
          if ((st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_GT, m1, r1, b, win, acc, ra)) ||
              (st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_NE, m2, r2, b, win, b, win)) || /* NaN */
              (st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_OR, m1, r1, m1, r1, m2, r2)))
            return st;
          if (!inside) { /* no valid tap seen yet (idx < 0): take this one */
            if ((st = ts(L, TRNC_NC_VECTOR, m2, r2, idx, ri, TRNC_NC_ALU_LT, 0.0f, TRNC_NC_ALU_BYPASS, 0.0f)) ||
                (st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_OR, m1, r1, m1, r1, m2, r2)))
              return st;
          }
          if ((st = sel(L, acc, ra, m1, r1, b, win, acc, ra)) || (st = sel(L, idx, ri, m1, r1, ti, rt, idx, ri)))
            return st;
        }
      if (!is_max) {
        if (p.divisor) {
          st = ts(L, TRNC_NC_VECTOR, acc, accf, acc, accf, TRNC_NC_ALU_DIV, (float)p.divisor,
                  TRNC_NC_ALU_BYPASS, 0.0f);
        } else {
          if ((st = pool_count(L, &p, cnt, np, oh0, ohc, p.cip))) return st;
          st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_DIV, acc, accf, acc, accf, cnt,
                  tap1(cnt, np, 0, TRNC_F32, ohc * p.OW));
        }
        if (st) return st;
      }
      if (out->buffer >= 0) {
        trnc_nc_dim sf[2] = {{p.OW, ohc}, {1, p.OW}};
        trnc_nc_dim hf[2] = {{os.h, ohc}, {os.w, p.OW}};
        int64_t hoff = plane_off(&os, &P, nn, c0) + oh0 * os.h;
        if ((st = dma(L, acc, tap(acc, np, 0, TRNC_F32, 2, sf), hbm_ap(out, hoff, np, os.c, 2, hf), true)))
          return st;
      }
      if (idxo && idxo->buffer >= 0) {
        trnc_nc_dim sf[2] = {{p.OW, ohc}, {1, p.OW}};
        trnc_nc_dim hf[2] = {{is.h, ohc}, {is.w, p.OW}};
        int64_t hoff = plane_off(&is, &P, nn, c0) + oh0 * is.h;
        if ((st = dma(L, idx, tap(idx, np, 0, TRNC_F32, 2, sf), hbm_ap(idxo, hoff, np, is.c, 2, hf), true)))
          return st;
      }
    }
  }
  return TRNC_OK;
}

/* max_pool2d_with_indices_backward and avg_pool2d_backward. */
static trnc_status emit_pool_bwd(lw *L, const trnc_node *n) {
  bool is_max = n->op == TRNC_OP_MAX_POOL2D_BACKWARD;
  const lw_tv *dy = &L->tv[n->args[0].u.ref], *dx = &L->tv[n->outs[0]];
  const lw_tv *ix = is_max ? &L->tv[n->args[7].u.ref] : NULL;
  pp p;
  if (!pool_geo(L->g, n, &L->g->values[n->args[1].u.ref].type, 2, is_max, is_max ? 6 : 5, &p))
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d backward: bad geometry");
  if (!is_max) {
    p.cip = trnc_arg_bool(n, 6, true);
    p.divisor = trnc_arg_int(n, 7, 0);
  }
  if (dx->buffer < 0 || p.N * p.C == 0) return TRNC_OK;
  if (dy->buffer < 0 || (ix && ix->buffer < 0))
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d backward: operand not materialized");
  t4 ys = pool_strides(&dy->t), xs = pool_strides(&dx->t), is = {0, 0, 0, 0, 0};
  if (ix) is = pool_strides(&ix->t);
  planes P = {p.N, p.C, merges(&ys, p.N, p.C) && merges(&xs, p.N, p.C) && (!ix || merges(&is, p.N, p.C))};
  int64_t iht = pool_bwd_rows(&p);
  if (!iht) return lw_fail(L, n, TRNC_ERR_INTERNAL, "pool2d backward: no tiling");
  int64_t orows = mini(p.OH, (iht + (p.KH - 1) * p.d[0]) / p.s[0] + 2), no = orows * p.OW;
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  lw_pool band, dyp, ixp;
  lw_tile *ti = NULL, *m1 = NULL, *zero = NULL, *cnt = NULL, *contrib = NULL;
  if ((st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, iht * p.W * 4, 2)) ||
      (st = lw_pool_init(L, &dyp, TRNC_NC_MEM_SBUF, no * 4, 2)) ||
      (st = lw_pool_init(L, &ixp, TRNC_NC_MEM_SBUF, is_max ? no * 4 : 4, 2)))
    return st;
  if (is_max) {
    ti = lw_sbuf(L, no * 4);
    m1 = lw_sbuf(L, no * 4);
    zero = lw_sbuf(L, no * 4);
    contrib = lw_sbuf(L, no * 4);
    if (!ti || !m1 || !zero || !contrib) return L->status;
    if ((st = memset_ap(L, TRNC_NC_VECTOR, zero, tap1(zero, 128, 0, TRNC_F32, no), 0.0f))) return st;
  } else if (!p.divisor) {
    cnt = lw_sbuf(L, no * 4);
    if (!cnt) return L->status;
  }
  FOR_PLANES(&P, nn, c0, np) {
    for (int64_t ih0 = 0; ih0 < p.H; ih0 += iht) {
      int64_t ihc = mini(iht, p.H - ih0);
      lw_tile *b = lw_pool_next(&band);
      trnc_nc_ap bf = tap1(b, np, 0, TRNC_F32, ihc * p.W);
      if ((st = memset_ap(L, TRNC_NC_GPSIMD, b, bf, 0.0f))) return st;
      int64_t oh_lo = maxi(0, cdiv(ih0 + p.pad[0] - (p.KH - 1) * p.d[0], p.s[0]));
      int64_t oh_hi = mini(p.OH - 1, fdiv(ih0 + ihc - 1 + p.pad[0], p.s[0]));
      if (oh_hi >= oh_lo) {
        int64_t nr = oh_hi - oh_lo + 1;
        lw_tile *d = lw_pool_next(&dyp), *ii = is_max ? lw_pool_next(&ixp) : NULL;
        trnc_nc_dim sf[2] = {{p.OW, nr}, {1, p.OW}};
        trnc_nc_dim hf[2] = {{ys.h, nr}, {ys.w, p.OW}};
        if ((st = dma(L, d, tap(d, np, 0, TRNC_F32, 2, sf),
                      hbm_ap(dy, plane_off(&ys, &P, nn, c0) + oh_lo * ys.h, np, ys.c, 2, hf), false)))
          return st;
        if (ii) {
          trnc_nc_dim hi[2] = {{is.h, nr}, {is.w, p.OW}};
          if ((st = dma(L, ii, tap(ii, np, 0, TRNC_F32, 2, sf),
                        hbm_ap(ix, plane_off(&is, &P, nn, c0) + oh_lo * is.h, np, is.c, 2, hi), false)))
            return st;
        }
        trnc_nc_ap df = tap1(d, np, 0, TRNC_F32, nr * p.OW);
        if (!is_max) { /* g = dY / divisor */
          if (p.divisor) {
            st = ts(L, TRNC_NC_VECTOR, d, df, d, df, TRNC_NC_ALU_DIV, (float)p.divisor, TRNC_NC_ALU_BYPASS, 0.0f);
          } else {
            if ((st = pool_count(L, &p, cnt, np, oh_lo, nr, p.cip))) return st;
            st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_DIV, d, df, d, df, cnt, tap1(cnt, np, 0, TRNC_F32, nr * p.OW));
          }
          if (st) return st;
        }
        for (int64_t kh = 0; kh < p.KH; kh++)
          for (int64_t kw = 0; kw < p.KW; kw++) {
            int64_t a, e, ca, ce;
            tap_range(oh_lo, oh_hi, p.s[0], kh * p.d[0], p.pad[0], ih0, ih0 + ihc - 1, &a, &e);
            tap_range(0, p.OW - 1, p.s[1], kw * p.d[1], p.pad[1], 0, p.W - 1, &ca, &ce);
            if (e < a || ce < ca) continue;
            int64_t r = e - a + 1, c = ce - ca + 1;
            trnc_nc_dim wf[2] = {{p.s[0] * p.W, r}, {p.s[1], c}};
            trnc_nc_ap win = tap(b, np, (a * p.s[0] + kh * p.d[0] - p.pad[0] - ih0) * p.W + ca * p.s[1] +
                                            kw * p.d[1] - p.pad[1], TRNC_F32, 2, wf);
            trnc_nc_dim rf[2] = {{p.OW, r}, {1, c}};
            int64_t roff = (a - oh_lo) * p.OW + ca;
            trnc_nc_ap rd = tap(d, np, roff, TRNC_F32, 2, rf);
            if (!is_max) {
              if ((st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_ADD, b, win, b, win, d, rd))) return st;
              continue;
            }
            trnc_nc_ap rt = tap(ti, np, roff, TRNC_F32, 2, rf), rm = tap(m1, np, roff, TRNC_F32, 2, rf);
            trnc_nc_ap rz = tap(zero, np, roff, TRNC_F32, 2, rf), rc = tap(contrib, np, roff, TRNC_F32, 2, rf);
            trnc_nc_instr io = lw_instr(TRNC_NC_OP_IOTA, TRNC_NC_GPSIMD);
            io.dst = rt;
            io.aff[0] = (int32_t)((a * p.s[0] + kh * p.d[0] - p.pad[0]) * p.W + ca * p.s[1] + kw * p.d[1] - p.pad[1]);
            io.aff[2] = (int32_t)(p.s[0] * p.W);
            io.aff[3] = (int32_t)p.s[1];
            if ((st = emit3(L, &io, ti, NULL, NULL, NULL)) ||
                (st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_EQ, m1, rm, ii, tap(ii, np, roff, TRNC_F32, 2, rf), ti, rt)) ||
                (st = sel(L, contrib, rc, m1, rm, d, rd, zero, rz)) ||
                (st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_ADD, b, win, b, win, contrib, rc)))
              return st;
          }
      }
      trnc_nc_dim sf[2] = {{p.W, ihc}, {1, p.W}};
      trnc_nc_dim hf[2] = {{xs.h, ihc}, {xs.w, p.W}};
      if ((st = dma(L, b, tap(b, np, 0, TRNC_F32, 2, sf),
                    hbm_ap(dx, plane_off(&xs, &P, nn, c0) + ih0 * xs.h, np, xs.c, 2, hf), true)))
        return st;
    }
  }
  return TRNC_OK;
}

/* ---- adaptive average pooling ------------------------------------------------------- */

static int64_t ad_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
static int64_t ad_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

static bool adaptive_fits(int64_t H, int64_t W, int64_t OH, int64_t OW) {
  return H >= 1 && W >= 1 && OH >= 1 && OW >= 1 && H * W <= BAND_MAX && H * OW <= BAND_MAX &&
         OH * W <= BAND_MAX && OH * OW <= POOL_OUT_MAX;
}

/* Divides rows i of t [np, OH, OW] by their window height and columns j by
 * their window width (eager: sum / kh / kw). */
static trnc_status ad_divide(lw *L, lw_tile *t, int64_t np, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  trnc_status st = TRNC_OK;
  for (int64_t i = 0; i < OH && !st; i++) {
    trnc_nc_ap r = tap1(t, np, i * OW, TRNC_F32, OW);
    st = ts(L, TRNC_NC_VECTOR, t, r, t, r, TRNC_NC_ALU_DIV, (float)(ad_end(i, H, OH) - ad_start(i, H, OH)),
            TRNC_NC_ALU_BYPASS, 0.0f);
  }
  for (int64_t j = 0; j < OW && !st; j++) {
    trnc_nc_dim f = {OW, OH};
    trnc_nc_ap r = tap(t, np, j, TRNC_F32, 1, &f);
    st = ts(L, TRNC_NC_VECTOR, t, r, t, r, TRNC_NC_ALU_DIV, (float)(ad_end(j, W, OW) - ad_start(j, W, OW)),
            TRNC_NC_ALU_BYPASS, 0.0f);
  }
  return st;
}

static trnc_status emit_adaptive(lw *L, const trnc_node *n) {
  bool bwd = n->op == TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD;
  const trnc_type *xt = &L->g->values[n->args[bwd ? 1 : 0].u.ref].type;
  const trnc_type *yt = bwd ? &L->g->values[n->args[0].u.ref].type : &L->g->values[n->outs[0]].type;
  int r = xt->rank;
  int64_t N = r == 4 ? xt->shape[0] : 1, C = xt->shape[r - 3], H = xt->shape[r - 2], W = xt->shape[r - 1];
  int64_t OH = yt->shape[r - 2], OW = yt->shape[r - 1];
  const lw_tv *src = &L->tv[n->args[0].u.ref], *dst = &L->tv[n->outs[0]];
  if (dst->buffer < 0 || N * C == 0) return TRNC_OK;
  if (src->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "adaptive_avg_pool2d: input not materialized");
  t4 ss = pool_strides(&src->t), ds = pool_strides(&dst->t);
  planes P = {N, C, merges(&ss, N, C) && merges(&ds, N, C)};
  trnc_status st = lw_kernel_begin(L, trnc_op_name(n->op));
  if (st) return st;
  lw_pool inp, outp;
  lw_tile *mid = lw_sbuf(L, (bwd ? OH * W : H * OW) * 4);
  if (!mid) return L->status;
  int64_t in_el = bwd ? OH * OW : H * W, out_el = bwd ? H * W : OH * OW;
  if ((st = lw_pool_init(L, &inp, TRNC_NC_MEM_SBUF, in_el * 4, 2)) ||
      (st = lw_pool_init(L, &outp, TRNC_NC_MEM_SBUF, out_el * 4, 2)))
    return st;
  int64_t ih = bwd ? OH : H, iw = bwd ? OW : W, oh = bwd ? H : OH, ow = bwd ? W : OW;
  FOR_PLANES(&P, nn, c0, np) {
    lw_tile *a = lw_pool_next(&inp), *o = lw_pool_next(&outp);
    trnc_nc_dim sf[2] = {{iw, ih}, {1, iw}};
    trnc_nc_dim hf[2] = {{ss.h, ih}, {ss.w, iw}};
    if ((st = dma(L, a, tap(a, np, 0, TRNC_F32, 2, sf), hbm_ap(src, plane_off(&ss, &P, nn, c0), np, ss.c, 2, hf),
                  false)))
      return st;
    if (!bwd) {
      /* mid[h, j] = sum of x[h, ws_j : we_j]; o[i, j] = sum of mid[hs_i : he_i, j] */
      for (int64_t j = 0; j < OW; j++) {
        int64_t w0 = ad_start(j, W, OW), w1 = ad_end(j, W, OW);
        trnc_nc_instr rd = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
        rd.alu0 = TRNC_NC_ALU_ADD;
        rd.mode = 1;
        trnc_nc_dim f[2] = {{W, H}, {1, w1 - w0}};
        rd.src[0] = tap(a, np, w0, TRNC_F32, 2, f);
        trnc_nc_dim g = {OW, H};
        rd.dst = tap(mid, np, j, TRNC_F32, 1, &g);
        if ((st = emit3(L, &rd, mid, a, NULL, NULL))) return st;
      }
      for (int64_t i = 0; i < OH; i++) {
        int64_t h0 = ad_start(i, H, OH), h1 = ad_end(i, H, OH);
        trnc_nc_instr rd = lw_instr(TRNC_NC_OP_TENSOR_REDUCE, TRNC_NC_VECTOR);
        rd.alu0 = TRNC_NC_ALU_ADD;
        rd.mode = 1;
        trnc_nc_dim f[2] = {{1, OW}, {OW, h1 - h0}};
        rd.src[0] = tap(mid, np, h0 * OW, TRNC_F32, 2, f);
        rd.dst = tap1(o, np, i * OW, TRNC_F32, OW);
        if ((st = emit3(L, &rd, o, mid, NULL, NULL))) return st;
      }
      if ((st = ad_divide(L, o, np, H, W, OH, OW))) return st;
    } else {
      /* g = dY / kh / kw; mid[i, w] = sum_j g[i, j] over columns of window j;
       * dX[h, w] = sum_i mid[i, w] over rows of window i */
      if ((st = ad_divide(L, a, np, H, W, OH, OW))) return st;
      if ((st = memset_ap(L, TRNC_NC_VECTOR, mid, tap1(mid, np, 0, TRNC_F32, OH * W), 0.0f)) ||
          (st = memset_ap(L, TRNC_NC_VECTOR, o, tap1(o, np, 0, TRNC_F32, H * W), 0.0f)))
        return st;
      for (int64_t j = 0; j < OW; j++) {
        int64_t w0 = ad_start(j, W, OW), w1 = ad_end(j, W, OW);
        trnc_nc_dim f[2] = {{W, OH}, {1, w1 - w0}}, gf[2] = {{OW, OH}, {0, w1 - w0}};
        trnc_nc_ap m = tap(mid, np, w0, TRNC_F32, 2, f);
        if ((st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_ADD, mid, m, mid, m, a, tap(a, np, j, TRNC_F32, 2, gf))))
          return st;
      }
      for (int64_t i = 0; i < OH; i++) {
        int64_t h0 = ad_start(i, H, OH), h1 = ad_end(i, H, OH);
        trnc_nc_dim f[2] = {{W, h1 - h0}, {1, W}}, gf[2] = {{0, h1 - h0}, {1, W}};
        trnc_nc_ap d = tap(o, np, h0 * W, TRNC_F32, 2, f);
        if ((st = tt(L, TRNC_NC_VECTOR, TRNC_NC_ALU_ADD, o, d, o, d, mid, tap(mid, np, i * W, TRNC_F32, 2, gf))))
          return st;
      }
    }
    trnc_nc_dim of[2] = {{ow, oh}, {1, ow}};
    trnc_nc_dim hf2[2] = {{ds.h, oh}, {ds.w, ow}};
    if ((st = dma(L, o, tap(o, np, 0, TRNC_F32, 2, of), hbm_ap(dst, plane_off(&ds, &P, nn, c0), np, ds.c, 2, hf2),
                  true)))
      return st;
  }
  return TRNC_OK;
}

/* ==== family entry points ============================================================ */

static bool val_float(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE && float_dt(trnc_ref_type(g, a->u.ref)->dtype);
}

static bool conv_handles(const trnc_graph *g, const trnc_node *n) {
  cgeo q;
  ig c;
  switch (n->op) {
    case TRNC_OP_CONVOLUTION: {
      if (!conv_geo(g, n, &q)) return false;
      const trnc_arg *b = trnc_node_arg(n, 2);
      if (b && b->kind == TRNC_ARG_VALUE && !val_float(g, n, 2)) return false;
      ig_forward(&q, &c);
      return ig_plan(&c);
    }
    case TRNC_OP_CONVOLUTION_BACKWARD: {
      /* the bias gradient is decomposed into a sum (passes/decomp_conv.c) */
      if (!conv_geo(g, n, &q) || !val_float(g, n, 0) || n->nouts != 3) return false;
      if (!g->values[n->outs[2]].is_none && mask_on(n, 2)) return false;
      ig_grad_input(&q, &c);
      if (mask_on(n, 0) && !ig_plan(&c)) return false;
      return !mask_on(n, 1) || gw_plan(&q, &c);
    }
    default:
      return false;
  }
}

static bool pool_handles(const trnc_graph *g, const trnc_node *n) {
  pp p;
  switch (n->op) {
    case TRNC_OP_MAX_POOL2D:
    case TRNC_OP_AVG_POOL2D: {
      bool mx = n->op == TRNC_OP_MAX_POOL2D;
      if (!val_float(g, n, 0)) return false;
      const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
      if (!pool_geo(g, n, x, 1, mx, mx ? 5 : 4, &p) || !pool_fwd_rows(&p)) return false;
      if (mx && p.H * p.W >= (1 << 24)) return false; /* indices exact in fp32 */
      if (!mx && trnc_arg_int(n, 6, 0) < 0) return false;
      return true;
    }
    case TRNC_OP_MAX_POOL2D_BACKWARD:
    case TRNC_OP_AVG_POOL2D_BACKWARD: {
      bool mx = n->op == TRNC_OP_MAX_POOL2D_BACKWARD;
      if (!val_float(g, n, 0) || !val_float(g, n, 1)) return false;
      const trnc_type *x = trnc_ref_type(g, n->args[1].u.ref);
      if (!pool_geo(g, n, x, 2, mx, mx ? 6 : 5, &p) || !pool_bwd_rows(&p)) return false;
      if (mx) {
        const trnc_arg *ia = trnc_node_arg(n, 7);
        if (!ia || ia->kind != TRNC_ARG_VALUE || p.H * p.W >= (1 << 24)) return false;
      }
      if (!mx && trnc_arg_int(n, 7, 0) < 0) return false;
      return true;
    }
    case TRNC_OP_ADAPTIVE_AVG_POOL2D:
    case TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD: {
      bool bw = n->op == TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD;
      if (!val_float(g, n, 0) || (bw && !val_float(g, n, 1))) return false;
      const trnc_type *x = trnc_ref_type(g, n->args[bw ? 1 : 0].u.ref);
      const trnc_type *y = bw ? trnc_ref_type(g, n->args[0].u.ref) : &g->values[n->outs[0]].type;
      if ((x->rank != 3 && x->rank != 4) || y->rank != x->rank) return false;
      return adaptive_fits(x->shape[x->rank - 2], x->shape[x->rank - 1], y->shape[y->rank - 2],
                           y->shape[y->rank - 1]);
    }
    default:
      return false;
  }
}

/* Family entry points (declared in lower.h; listed in families.c). */
bool lw_conv_handles(const trnc_graph *g, const trnc_node *n) {
  return conv_handles(g, n) || pool_handles(g, n);
}

trnc_status lw_conv_emit(lw *L, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_CONVOLUTION: return emit_conv_fwd(L, n);
    case TRNC_OP_CONVOLUTION_BACKWARD: return emit_conv_bwd(L, n);
    case TRNC_OP_MAX_POOL2D:
    case TRNC_OP_AVG_POOL2D:
      L->ops_per_engine[1]++;
      return emit_pool_fwd(L, n);
    case TRNC_OP_MAX_POOL2D_BACKWARD:
    case TRNC_OP_AVG_POOL2D_BACKWARD:
      L->ops_per_engine[1]++;
      return emit_pool_bwd(L, n);
    case TRNC_OP_ADAPTIVE_AVG_POOL2D:
    case TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD:
      L->ops_per_engine[1]++;
      return emit_adaptive(L, n);
    default:
      return lw_fail(L, n, TRNC_ERR_INTERNAL, "conv family: unexpected op %s", n->target);
  }
}
