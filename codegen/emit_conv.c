/*
 * emit_conv.c — convolution (1-D/2-D, forward and backward) on TensorE.
 * (2-D pooling is decomposed into taps over strided views: passes/decomp_pool2d.c.)
 *
 * Layouts. Tensors are NCHW (conv1d: NCL, treated as H = 1), read and
 * written through their tvs with any strides. Element offsets and strides below are in elements.
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
 * Limits (handles() refuses the rest, which then fails compilation with a
 * clear diagnostic): float dtypes (f32/bf16/f16), not transposed, bands
 * within BAND_MAX elements per partition, Kc <= 128 * MAX_CT.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/lower.h"

#define BAND_MAX 12288   /* elements per partition of an input band */
#define MAX_CT 32        /* contraction tiles of 128 channels */
#define WBYTES_MAX (64 * 1024)

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

/* Family entry points (declared in lower.h; listed in families.c). */
bool lw_conv_handles(const trnc_graph *g, const trnc_node *n) {
  return conv_handles(g, n);
}

trnc_status lw_conv_emit(lw *L, const trnc_node *n) {
  switch (n->op) {
    case TRNC_OP_CONVOLUTION: return emit_conv_fwd(L, n);
    case TRNC_OP_CONVOLUTION_BACKWARD: return emit_conv_bwd(L, n);
    default:
      return lw_fail(L, n, TRNC_ERR_INTERNAL, "conv family: unexpected op %s", n->target);
  }
}
