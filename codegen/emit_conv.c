/*
 * emit_conv.c — pooling (max/avg/adaptive avg, forward and backward) on
 * VectorE. (Convolution lowers through the kernel IR: codegen/kir/conv.c.)
 *
 * Layouts. Tensors are NCHW or CHW (treated as N = 1), read and written
 * through their tvs with any strides. Element offsets and strides below are
 * in elements.
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

static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t maxi(int64_t a, int64_t b) { return a > b ? a : b; }

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

static bool float_dt(trnc_dtype dt) { return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16; }

/* ---- views ------------------------------------------------------------------- */

/** Strides (elements) of a tensor seen as [n, c, h, w] and its offset. */
typedef struct t4 {
  int64_t n, c, h, w, off;
} t4;

/* pooling layout: rank 4 NCHW or rank 3 CHW (n = 1). */
static t4 pool_strides(const trnc_type *t) {
  if (t->rank == 4) return (t4){t->stride[0], t->stride[1], t->stride[2], t->stride[3], t->offset};
  return (t4){0, t->stride[0], t->stride[1], t->stride[2], t->offset};
}

static trnc_nc_ap hbm_ap(const lw_tv *tv, int64_t off, int64_t np, int64_t pstride, int nf,
                         const trnc_nc_dim *f) {
  return lw_hbm_dims(tv->buffer, tv->t.dtype, off, np, pstride, nf, f);
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

/* ==== pooling ====================================================================== */

/* Input rows (or cols) read by t outputs of stride s, k taps of dilation d. */
static int64_t band_rows(int64_t t, int64_t s, int64_t k, int64_t d) { return (t - 1) * s + (k - 1) * d + 1; }

typedef struct pp {
  int64_t N, C, H, W, OH, OW, KH, KW;
  int64_t s[2], pad[2], d[2];
  bool ceil, cip;          /* ceil_mode, count_include_pad */
  int64_t divisor;         /* avg: divisor_override (0 = none) */
} pp;

static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? st - 1 : 0);
  int64_t o = lw_fdiv(num, st) + 1;
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
  *olo = maxi(lo, lw_cdiv(a + pad - kd, s));
  *ohi = mini(hi, lw_fdiv(b + pad - kd, s));
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
      int64_t oh_lo = maxi(0, lw_cdiv(ih0 + p.pad[0] - (p.KH - 1) * p.d[0], p.s[0]));
      int64_t oh_hi = mini(p.OH - 1, lw_fdiv(ih0 + ihc - 1 + p.pad[0], p.s[0]));
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
  return pool_handles(g, n);
}

trnc_status lw_conv_emit(lw *L, const trnc_node *n) {
  switch (n->op) {
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
