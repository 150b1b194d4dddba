/*
 * conv.c — convolution (1-D/2-D: forward, grad_input, grad_weight) as
 * kernel IR, and its implicit-GEMM ("ig") schedule on TensorE.
 *
 * Kernel. Every convolution kernel has the axes
 *
 *   [G, N, O, OH, OW, C, KH, KW]    (conv1d: OH = KH = 1)
 *
 * with G the groups, O and C the output and contraction channels of a
 * group, (OH, OW) the output positions and (KH, KW) the taps:
 *
 *   out[g, n, o, y, x] = sum_{c, kh, kw} Wt[g, o, c, kh, kw]
 *                        * V[g, n, c, y*s0 + kh*d0 - pad0, x*s1 + kw*d1 - pad1]
 *
 * where V is the input X upsampled by up = (u0, u1) (V[v] = X[v/u] where u
 * divides v, else 0) and zero outside X. Its text:
 *
 *   %x = load X          every axis: the band (below)
 *   %w = load Wt         [G, O, C, KH, KW] (stride 0 along N, OH, OW)
 *   %p = matmul %x, %w   fp32 over the space axes (PSUM)
 *   %b = load_first B    (forward with a bias: along G and O only)
 *   %e = tt add, %p, %b
 *   %r = copy %e         (the result's dtype: bf16 rounded once)
 *        store out, %r
 *
 * The forward is this kernel with space axes [G, N, O, OH, OW] and
 * reduction axes [C, KH, KW]; grad_input is the same form over grad_output
 * upsampled by the stride (u = s, stride 1, padding d*(K-1) - p, negative:
 * cropping) with Wt the weights flipped in kh/kw and in/out channels
 * swapped — negative strides of Wt's access map, no copy; grad_weight
 * swaps the roles of the axes: space [G, O, C, KH, KW], reduction
 * [N, OH, OW] (out = dW, Wt = dY over [G, N, O, OH, OW]).
 *
 * Access maps. Wt, out and B are plain kir access maps (any strides).
 * X's map gives its strides along G, N and C; its spatial walk is the
 * band of conv_band (input extents, upsampling, stride, dilation,
 * padding and X's own row/column strides), which an access map cannot say
 * (zero outside, upsampling), so X's map has stride 0 along the spatial
 * axes. The band is an on-chip access map: per output tile [<= 128
 * channels, nb images x oht rows x owt cols <= 512 positions], one DMA
 * writes the rows/cols of X the tile needs into a zero-filled SBUF tile
 * [C tile, nb, bh, bw] (padding and upsampling are the parts it does not
 * write), and every tap's moving operand is a strided view of it (free
 * dims [(bh*bw, nb), (s0*bw, oht), (s1, owt)]): no im2col, in HBM or SBUF.
 *
 * Schedule (kir_schedule_conv).
 *  - forward / grad_input (reduction [C, KH, KW]): output channels on
 *    partitions (stationary Wt slice [C tile, O tile] per tap, loaded for
 *    all taps once per (group, O tile); a contiguous [O, C, taps] weight is
 *    read as rows and transposed per tap on TensorE, since element-strided
 *    DMA would be ~15x slower), positions on the free axis; the C tiles and
 *    taps accumulate in one PSUM bank; ScalarE evacuates it adding the bias
 *    per partition, rounding once to the result's dtype, and a DMA stores
 *    the tile through out's access map.
 *  - grad_weight (reduction [N, OH, OW]): the contraction runs over
 *    positions, which must be on partitions: dY tiles [O, <= 128 positions]
 *    and band views [C, positions] are transposed on TensorE, then
 *    matmul(stationary dY^T [pos, O], moving X^T [pos, C]) accumulates each
 *    tap's [O, C] block in PSUM (several taps per bank) across all position
 *    tiles; ScalarE evacuates each bank, a DMA per tap stores it.
 * Limits (kir_conv_plan; lw_convolution_handles refuses the rest, which
 * then fails compilation with a clear diagnostic): float dtypes, bands
 * within TRNC_CONV_BAND_MAX elements per partition, C <= TRNC_CONV_MAX_CIN,
 * weight tiles within TRNC_CONV_WTILE_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/kir/kir.h"

#define BAND_MAX TRNC_CONV_BAND_MAX         /* elements per partition of an input band */
#define MAX_CT (TRNC_CONV_MAX_CIN / LW_P)   /* contraction tiles of 128 channels */
#define WBYTES_MAX TRNC_CONV_WTILE_MAX

enum { A_G, A_N, A_O, A_OH, A_OW, A_C, A_KH, A_KW, NAXES };
enum { T_X, T_W, T_OUT, T_BIAS };
#define AX(a) (1u << (a))
#define R_FWD (AX(A_C) | AX(A_KH) | AX(A_KW)) /* forward / grad_input contraction */
#define R_GW (AX(A_N) | AX(A_OH) | AX(A_OW))  /* grad_weight contraction */

static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t maxi(int64_t a, int64_t b) { return a > b ? a : b; }

/* ==== geometry ======================================================================= */

/* Entry j of int-list argument i (a bare int: every entry; the shape rule
 * checked the list's length). */
static int64_t spatial(const trnc_node *n, uint32_t i, int j, int64_t dflt) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_INT ? a->u.i : trnc_arg_spatial(n, i, j, dflt);
}

/* Output-mask entry k of convolution_backward (default true). */
static bool mask_on(const trnc_node *n, int k) {
  const trnc_arg *m = trnc_node_arg(n, 10);
  return !(m && m->kind == TRNC_ARG_LIST && (uint32_t)k < m->u.list.n &&
           m->u.list.items[k].kind == TRNC_ARG_BOOL && !m->u.list.items[k].u.b);
}

static bool float_dt(trnc_dtype dt) { return dt == TRNC_F32 || dt == TRNC_BF16 || dt == TRNC_F16; }

static bool val_float(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE && float_dt(trnc_ref_type(g, a->u.ref)->dtype);
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
  for (int j = 0; j < q->sp; j++) {
    st[j] = spatial(n, (uint32_t)ast, j, 1);
    pd[j] = spatial(n, (uint32_t)ast + 1, j, 0);
    dl[j] = spatial(n, (uint32_t)ast + 2, j, 1);
  }
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

/** X's spatial walk in a conv kernel (the band; see the header comment). */
typedef struct conv_band {
  int64_t H, W;            /* X's rows and columns (before upsampling) */
  int64_t up[2];
  int64_t s[2], d[2], pad[2];
  int64_t xh, xw;          /* X's strides (elements) along its rows and columns */
} conv_band;

/** A convolution kernel: the kir kernel and its band. */
typedef struct kconv {
  kir_kernel k;
  conv_band b;
} kconv;

/* Extents of the ig form (forward / grad_input) of geometry q. */
static void ig_extents(const cgeo *q, bool grad_input, int64_t *e, conv_band *b) {
  memset(b, 0, sizeof *b);
  e[A_G] = q->G;
  e[A_N] = q->N;
  e[A_KH] = q->KH;
  e[A_KW] = q->KW;
  bool gi = grad_input; /* contraction and result channels, input and output positions swap */
  e[A_O] = (gi ? q->C : q->O) / q->G;
  e[A_C] = (gi ? q->O : q->C) / q->G;
  e[A_OH] = gi ? q->H : q->OH;
  e[A_OW] = gi ? q->W : q->OW;
  b->H = gi ? q->OH : q->H;
  b->W = gi ? q->OW : q->W;
  int64_t k[2] = {q->KH, q->KW};
  for (int j = 0; j < 2; j++) {
    b->up[j] = gi ? q->s[j] : 1;
    b->s[j] = gi ? 1 : q->s[j];
    b->d[j] = q->d[j];
    b->pad[j] = gi ? q->d[j] * (k[j] - 1) - q->pad[j] : q->pad[j];
  }
}

/* ==== the tiling (also the limits) ================================================ */

typedef struct tiling {
  int64_t nb, oht, owt, bh, bw; /* output tile: images x rows x cols, and its band */
} tiling;

static int64_t band_rows(int64_t t, int64_t s, int64_t k, int64_t d) { return (t - 1) * s + (k - 1) * d + 1; }

/* Chooses the output tile (nb images x oht x owt positions, <= maxpos) so its
 * band fits BAND_MAX. False if even one position does not fit. */
static bool plan_tile(const int64_t *e, const conv_band *b, int64_t maxpos, tiling *t) {
  int64_t w = mini(e[A_OW], maxpos), h = mini(e[A_OH], maxpos / w), nb = 1;
  if (h == e[A_OH] && w == e[A_OW]) nb = mini(e[A_N], maxpos / (e[A_OH] * e[A_OW]));
  for (;;) {
    int64_t r = band_rows(h, b->s[0], e[A_KH], b->d[0]), q = band_rows(w, b->s[1], e[A_KW], b->d[1]);
    if (nb * r * q <= BAND_MAX) {
      *t = (tiling){nb, h, w, r, q};
      return true;
    }
    if (nb > 1) nb /= 2;
    else if (h > 1) h = (h + 1) / 2;
    else if (w > 1) w = (w + 1) / 2;
    else return false;
  }
}

/* The ig tiling of extents e: positions <= 512 per PSUM bank, contraction
 * tiles and the weights of every tap within the limits. */
static bool ig_plan(const int64_t *e, const conv_band *b, tiling *t) {
  if (e[A_C] > 128 * MAX_CT || e[A_C] < 1 || e[A_O] < 1) return false;
  if (!plan_tile(e, b, 512, t)) return false;
  int64_t nct = (e[A_C] + 127) / 128;
  return nct * e[A_KH] * e[A_KW] * mini(e[A_O], 128) * 4 <= WBYTES_MAX;
}

/** True if convolution node n lowers through a conv kernel (the limits of
 *  the header comment; the op table's description names them). */
bool lw_convolution_handles(const trnc_graph *g, const trnc_node *n) {
  cgeo q;
  conv_band b;
  int64_t e[NAXES];
  tiling t;
  switch (n->op) {
    case TRNC_OP_CONVOLUTION: {
      if (!conv_geo(g, n, &q)) return false;
      const trnc_arg *ba = trnc_node_arg(n, 2);
      if (ba && ba->kind == TRNC_ARG_VALUE && !val_float(g, n, 2)) return false;
      ig_extents(&q, false, e, &b);
      return ig_plan(e, &b, &t);
    }
    case TRNC_OP_CONVOLUTION_BACKWARD: {
      /* the bias gradient is decomposed into a sum (passes/decomp_conv.c) */
      if (!conv_geo(g, n, &q) || !val_float(g, n, 0) || n->nouts != 3) return false;
      if (!g->values[n->outs[2]].is_none && mask_on(n, 2)) return false;
      ig_extents(&q, true, e, &b);
      if (mask_on(n, 0) && !ig_plan(e, &b, &t)) return false;
      ig_extents(&q, false, e, &b);
      return !mask_on(n, 1) || plan_tile(e, &b, 128, &t);
    }
    default:
      return false;
  }
}

/* ==== building the kernels ========================================================= */

/** Strides (elements) of a conv tensor seen as [n, c, h, w] and its offset
 *  (rank 4 NCHW or rank 3 NCL with h = 1). */
typedef struct t4 {
  int64_t n, c, h, w, off;
} t4;

static t4 conv_strides(const trnc_type *t) {
  t4 s = {t->stride[0], t->stride[1], 0, t->stride[t->rank - 1], t->offset};
  if (t->rank == 4) s.h = t->stride[2];
  return s;
}

static trnc_dtype mm_dtype(const lw *L, trnc_dtype dt) {
  return (L->opt.autocast_bf16 && dt == TRNC_F32) ? TRNC_BF16 : dt;
}

/* Adds tensor `tv` to k with strides {axis, stride} pairs (the rest 0). */
static int add_map(kir_kernel *k, const lw_tv *tv, int64_t off, int n, const int64_t (*as)[2]) {
  int64_t st[KIR_MAX_AXES] = {0};
  for (int i = 0; i < n; i++) st[as[i][0]] = as[i][1];
  return kir_tensor_map(k, tv->buffer, tv->t.dtype, off, st);
}

/* The body shared by every conv kernel: x . w (+ bias) rounded into out. */
static const char *conv_body(kconv *c, trnc_dtype dt, trnc_dtype odt, bool bias) {
  kir_kernel *k = &c->k;
  int x = kir_load(k, T_X, dt), w = kir_load(k, T_W, dt);
  int v = kir_matmul2(k, x, w);
  if (bias) v = kir_tt(k, TRNC_F32, TRNC_NC_ALU_ADD, v, kir_load_first(k, T_BIAS, TRNC_F32));
  v = kir_copy(k, odt, v);
  if (x < 0 || w < 0 || v < 0 || !kir_store(k, T_OUT, v)) return "the kernel is full";
  return kir_verify(k);
}

/* A conv kernel's axes (ig_extents), its name and reduction axes, and X's
 * map (its G, N and C strides; the spatial walk is the band's: c->b);
 * *Kc and *Oc the contraction and output channels of a group. */
static void conv_begin(kconv *c, const trnc_node *n, const cgeo *q, bool grad_input, const char *name,
                       uint32_t rmask, const lw_tv *x, int64_t *Kc, int64_t *Oc) {
  int64_t e[NAXES];
  ig_extents(q, grad_input, e, &c->b);
  kir_init(&c->k, name, n, NAXES, e, rmask);
  t4 xs = conv_strides(&x->t);
  c->b.xh = xs.h;
  c->b.xw = xs.w;
  *Kc = e[A_C];
  *Oc = e[A_O];
  const int64_t xm[3][2] = {{A_G, *Kc * xs.c}, {A_N, xs.n}, {A_C, xs.c}};
  add_map(&c->k, x, xs.off, 3, xm);
}

/* The ig kernel (forward, or grad_input over dy) of geometry q: x is X
 * (forward) or dY, w the weights, out y or dX. */
static const char *build_ig(lw *L, kconv *c, const trnc_node *n, const cgeo *q, bool grad_input, const lw_tv *x,
                            const lw_tv *w, const lw_tv *bias, const lw_tv *out) {
  int64_t Kc, Oc;
  conv_begin(c, n, q, grad_input, grad_input ? "conv_grad_input" : "convolution", R_FWD, x, &Kc, &Oc);
  t4 ws = conv_strides(&w->t), os = conv_strides(&out->t);
  if (!grad_input) {
    const int64_t wm[5][2] = {{A_G, Oc * ws.n}, {A_O, ws.n}, {A_C, ws.c}, {A_KH, ws.h}, {A_KW, ws.w}};
    add_map(&c->k, w, ws.off, 5, wm);
  } else { /* Wt[g, o=c_in, c=c_out, kh, kw] = W[g*Kc + c, o, KH-1-kh, KW-1-kw] */
    const int64_t wm[5][2] = {{A_G, Kc * ws.n}, {A_O, ws.c}, {A_C, ws.n}, {A_KH, -ws.h}, {A_KW, -ws.w}};
    add_map(&c->k, w, ws.off + (q->KH - 1) * ws.h + (q->KW - 1) * ws.w, 5, wm);
  }
  const int64_t om[5][2] = {{A_G, Oc * os.c}, {A_N, os.n}, {A_O, os.c}, {A_OH, os.h}, {A_OW, os.w}};
  add_map(&c->k, out, os.off, 5, om);
  bool has_bias = bias && bias->buffer >= 0;
  if (has_bias) {
    int64_t bs = bias->t.stride[0];
    const int64_t bm[2][2] = {{A_G, Oc * bs}, {A_O, bs}};
    add_map(&c->k, bias, bias->t.offset, 2, bm);
  }
  return conv_body(c, mm_dtype(L, x->t.dtype), out->t.dtype, has_bias);
}

/* The grad_weight kernel of geometry q: dW = sum over positions of dY x X. */
static const char *build_gw(lw *L, kconv *c, const trnc_node *n, const cgeo *q, const lw_tv *dy, const lw_tv *x,
                            const lw_tv *dw) {
  int64_t Kc, Oc;
  conv_begin(c, n, q, false, "conv_grad_weight", R_GW, x, &Kc, &Oc);
  t4 ys = conv_strides(&dy->t), ws = conv_strides(&dw->t);
  const int64_t ym[5][2] = {{A_G, Oc * ys.c}, {A_N, ys.n}, {A_O, ys.c}, {A_OH, ys.h}, {A_OW, ys.w}};
  add_map(&c->k, dy, ys.off, 5, ym);
  const int64_t wm[5][2] = {{A_G, Oc * ws.n}, {A_O, ws.n}, {A_C, ws.c}, {A_KH, ws.h}, {A_KW, ws.w}};
  add_map(&c->k, dw, ws.off, 5, wm);
  return conv_body(c, mm_dtype(L, x->t.dtype), dw->t.dtype, false);
}

/* ==== the schedule =================================================================== */

static trnc_nc_ap hbm_ap(const kir_tensor *T, int64_t off, int64_t np, int64_t pstride, int nf,
                         const trnc_nc_dim *f) {
  return lw_hbm_dims(T->buffer, T->dtype, off, np, pstride, nf, f);
}

/* Tile AP with free dims f (strides in elements) starting at element eoff. */
static trnc_nc_ap tap(const lw_tile *t, int64_t np, int64_t eoff, trnc_dtype dt, int nf, const trnc_nc_dim *f) {
  return lw_tile_ap_strided(t, (int)np, eoff * lw_esize(dt), dt, nf, f);
}

/* Contiguous [np, count] AP at element eoff. */
static trnc_nc_ap tap1(const lw_tile *t, int64_t np, int64_t eoff, trnc_dtype dt, int64_t count) {
  trnc_nc_dim f = {1, count};
  return tap(t, np, eoff, dt, 1, &f);
}

static trnc_status emit3(lw *L, trnc_nc_instr *in, lw_tile *dst, lw_tile *a, lw_tile *b) {
  lw_tile *rd[2];
  int nr = 0;
  if (a) rd[nr++] = a;
  if (b && b != a) rd[nr++] = b;
  return lw_emit(L, in, rd, nr, dst ? &dst : NULL, dst ? 1 : 0);
}

static trnc_status copy_ap(lw *L, int engine, lw_tile *dt, trnc_nc_ap d, lw_tile *st, trnc_nc_ap s) {
  trnc_nc_instr in = lw_instr(TRNC_NC_OP_TENSOR_COPY, engine);
  in.src[0] = s;
  in.dst = d;
  return emit3(L, &in, dt, st, NULL);
}

/* TensorE transpose of src (np partitions, nf columns) into PSUM tile p. */
static trnc_status pe_transpose(lw *L, lw_tile *p, int64_t nf, lw_tile *s, trnc_nc_ap src) {
  trnc_nc_instr tr = lw_instr(TRNC_NC_OP_TRANSPOSE, TRNC_NC_TENSOR);
  tr.src[0] = src;
  tr.dst = tap1(p, nf, 0, TRNC_F32, src.partitions);
  return emit3(L, &tr, p, s, NULL);
}

/** A schedule's view of a conv kernel: extents, operand maps, band. */
typedef struct sched {
  const kir_kernel *k;
  const conv_band *b;
  const kir_tensor *X, *W, *Out, *B;
  int64_t G, N, Oc, OH, OW, Kc, KH, KW;
  trnc_dtype dt;           /* TensorE operand dtype */
  tiling t;
} sched;

/* Loads the band of X for channels [c0, c0+ct) of group g, images
 * [n0, n0+nbt), whose origin in V coordinates is (vh0, vw0), into tile bt,
 * zero-filling what X does not cover. */
static trnc_status load_band(lw *L, const sched *S, lw_tile *bt, int64_t ct, int64_t g, int64_t n0, int64_t nbt,
                             int64_t c0, int64_t vh0, int64_t vw0) {
  const conv_band *b = S->b;
  const kir_tensor *X = S->X;
  int64_t bh = S->t.bh, bw = S->t.bw;
  int64_t h_lo = maxi(0, lw_cdiv(vh0, b->up[0])), h_hi = mini(b->H - 1, lw_fdiv(vh0 + bh - 1, b->up[0]));
  int64_t w_lo = maxi(0, lw_cdiv(vw0, b->up[1])), w_hi = mini(b->W - 1, lw_fdiv(vw0 + bw - 1, b->up[1]));
  int64_t nr = h_hi - h_lo + 1, nc = w_hi - w_lo + 1;
  bool full = b->up[0] == 1 && b->up[1] == 1 && vh0 >= 0 && vw0 >= 0 && vh0 + bh <= b->H && vw0 + bw <= b->W;
  trnc_status st;
  if (!full || nr <= 0 || nc <= 0) {
    trnc_nc_instr in = lw_instr(TRNC_NC_OP_MEMSET, TRNC_NC_GPSIMD);
    in.dst = tap1(bt, ct, 0, S->dt, nbt * bh * bw);
    in.imm[0] = 0.0f;
    if ((st = emit3(L, &in, bt, NULL, NULL))) return st;
  }
  if (nr <= 0 || nc <= 0) return TRNC_OK;
  int64_t xn = X->stride[A_N], xc = X->stride[A_C];
  trnc_nc_dim sf[3] = {{bh * bw, nbt}, {b->up[0] * bw, nr}, {b->up[1], nc}};
  trnc_nc_dim hf[3] = {{xn, nbt}, {b->xh, nr}, {b->xw, nc}};
  int64_t eoff = (h_lo * b->up[0] - vh0) * bw + (w_lo * b->up[1] - vw0);
  int64_t hoff = X->offset + g * X->stride[A_G] + n0 * xn + c0 * xc + h_lo * b->xh + w_lo * b->xw;
  return lw_dma(L, bt, tap(bt, ct, eoff, S->dt, 3, sf), hbm_ap(X, hoff, ct, xc, 3, hf), false);
}

/* Wt's strides along the taps made positive: the origin moves to the first
 * tap read and *flip says which taps of the tile run backwards. */
typedef struct wmap {
  int64_t base, wo, wc, wkh, wkw;
  bool flip[2];
} wmap;

static wmap weight_map(const sched *S) {
  const kir_tensor *W = S->W;
  wmap m = {W->offset, W->stride[A_O], W->stride[A_C], W->stride[A_KH], W->stride[A_KW], {false, false}};
  if (m.wkh < 0 && S->KH > 1) {
    m.base += (S->KH - 1) * m.wkh;
    m.wkh = -m.wkh;
    m.flip[0] = true;
  }
  if (m.wkw < 0 && S->KW > 1) {
    m.base += (S->KW - 1) * m.wkw;
    m.wkw = -m.wkw;
    m.flip[1] = true;
  }
  return m;
}

/* Loads the stationary weights of contraction channels [c0, c0+ct) and
 * output channels [o0, o0+ot) of group g into wt as [ct, ot, taps]. When
 * the contraction is the inner dim of Wt (forward: W[o, c, kh, kw]) the
 * rows are read contiguously as [ot, ct, taps] and transposed per tap on
 * TensorE; otherwise (grad_input: the contraction is W's outer dim) one DMA
 * reads [ct, ot, taps] directly. */
static trnc_status load_weights(lw *L, const sched *S, const wmap *m, lw_tile *wt, lw_pool *raw, lw_pool *ps,
                                int64_t g, int64_t o0, int64_t ot, int64_t c0, int64_t ct) {
  int64_t taps = S->KH * S->KW;
  int64_t hoff = m->base + g * S->W->stride[A_G] + o0 * m->wo + c0 * m->wc;
  trnc_status st;
  if (llabs(m->wc) >= llabs(m->wo)) {
    trnc_nc_dim sf = {1, ot * taps};
    trnc_nc_dim hf[3] = {{m->wo, ot}, {m->wkh, S->KH}, {m->wkw, S->KW}};
    return lw_dma(L, wt, tap(wt, ct, 0, S->dt, 1, &sf), hbm_ap(S->W, hoff, ct, m->wc, 3, hf), false);
  }
  lw_tile *r = lw_pool_next(raw);
  trnc_nc_dim sf = {1, ct * taps};
  trnc_nc_dim hf[3] = {{m->wc, ct}, {m->wkh, S->KH}, {m->wkw, S->KW}};
  if ((st = lw_dma(L, r, tap(r, ot, 0, S->dt, 1, &sf), hbm_ap(S->W, hoff, ot, m->wo, 3, hf), false))) return st;
  for (int64_t t = 0; t < taps; t++) {
    lw_tile *p = lw_pool_next(ps);
    trnc_nc_dim rf = {taps, ct};
    if ((st = pe_transpose(L, p, ct, r, tap(r, ot, t, S->dt, 1, &rf)))) return st;
    trnc_nc_dim wf = {taps, ot};
    if ((st = copy_ap(L, TRNC_NC_VECTOR, wt, tap(wt, ct, t, S->dt, 1, &wf), p, tap1(p, ct, 0, TRNC_F32, ot))))
      return st;
  }
  return TRNC_OK;
}

/* The forward / grad_input schedule (reduction [C, KH, KW]). */
static trnc_status sched_ig(lw *L, const sched *S) {
  trnc_status st = lw_kernel_begin(L, S->k->name);
  if (st) return st;
  int64_t esz = lw_esize(S->dt), taps = S->KH * S->KW;
  int64_t nct = (S->Kc + 127) / 128, otmax = mini(S->Oc, 128), ctmax = mini(S->Kc, 128);
  int64_t npos = S->t.nb * S->t.oht * S->t.owt, bh = S->t.bh, bw = S->t.bw;
  int64_t nsets = (S->G > 1 || S->Oc > 128) ? 2 : 1;
  if (nsets * nct * taps * otmax * esz > WBYTES_MAX) nsets = 1;
  wmap m = weight_map(S);
  lw_pool wpool[2], bpool, band, pso, opool, wraw, wps;
  bool transposed_load = llabs(m.wc) < llabs(m.wo);
  for (int s = 0; s < nsets; s++)
    if ((st = lw_pool_init(L, &wpool[s], TRNC_NC_MEM_SBUF, taps * otmax * esz, (int)nct))) return st;
  if ((st = lw_pool_init(L, &bpool, TRNC_NC_MEM_SBUF, 4, 2)) ||
      (st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, S->t.nb * bh * bw * esz, 3)) ||
      (st = lw_pool_init(L, &pso, TRNC_NC_MEM_PSUM, npos * 4, 2)) ||
      (st = lw_pool_init(L, &opool, TRNC_NC_MEM_SBUF, npos * 4, 3)))
    return st;
  if (transposed_load && ((st = lw_pool_init(L, &wraw, TRNC_NC_MEM_SBUF, ctmax * taps * esz, 2)) ||
                          (st = lw_pool_init(L, &wps, TRNC_NC_MEM_PSUM, otmax * 4, 2))))
    return st;
  const kir_tensor *O = S->Out;
  trnc_dtype odt = O->dtype;
  const conv_band *b = S->b;
  int set = 0;
  for (int64_t g = 0; g < S->G; g++)
    for (int64_t o0 = 0; o0 < S->Oc; o0 += 128) {
      int64_t ot = mini(128, S->Oc - o0);
      lw_pool *wp = &wpool[set];
      set = (set + 1) % (int)nsets;
      /* weights of every tap: tile ci = [ct (contraction), ot, taps] */
      for (int64_t ci = 0; ci < nct; ci++)
        if ((st = load_weights(L, S, &m, &wp->tiles[ci], &wraw, &wps, g, o0, ot, ci * 128,
                               mini(128, S->Kc - ci * 128))))
          return st;
      lw_tile *bt = NULL;
      if (S->B) {
        bt = lw_pool_next(&bpool);
        trnc_nc_dim one = {1, 1};
        int64_t bo = S->B->offset + g * S->B->stride[A_G] + o0 * S->B->stride[A_O];
        if ((st = lw_dma(L, bt, tap(bt, ot, 0, TRNC_F32, 1, &one), hbm_ap(S->B, bo, ot, S->B->stride[A_O], 1, &one),
                         false)))
          return st;
      }
      for (int64_t n0 = 0; n0 < S->N; n0 += S->t.nb)
        for (int64_t y0 = 0; y0 < S->OH; y0 += S->t.oht)
          for (int64_t x0 = 0; x0 < S->OW; x0 += S->t.owt) {
            int64_t nbt = mini(S->t.nb, S->N - n0), yc = mini(S->t.oht, S->OH - y0), xc = mini(S->t.owt, S->OW - x0);
            int64_t np = nbt * yc * xc;
            lw_tile *ps = lw_pool_next(&pso);
            for (int64_t ci = 0; ci < nct; ci++) {
              int64_t ct = mini(128, S->Kc - ci * 128);
              lw_tile *bd = lw_pool_next(&band);
              if ((st = load_band(L, S, bd, ct, g, n0, nbt, ci * 128, y0 * b->s[0] - b->pad[0],
                                  x0 * b->s[1] - b->pad[1])))
                return st;
              lw_tile *wt = &wp->tiles[ci];
              for (int64_t kh = 0; kh < S->KH; kh++)
                for (int64_t kw = 0; kw < S->KW; kw++) {
                  trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
                  mm.mode = !(ci == 0 && kh == 0 && kw == 0);
                  mm.dst = tap1(ps, ot, 0, TRNC_F32, np);
                  int64_t t = (m.flip[0] ? S->KH - 1 - kh : kh) * S->KW + (m.flip[1] ? S->KW - 1 - kw : kw);
                  trnc_nc_dim wf = {taps, ot};
                  mm.src[0] = tap(wt, ct, t, S->dt, 1, &wf);
                  trnc_nc_dim mf[3] = {{bh * bw, nbt}, {b->s[0] * bw, yc}, {b->s[1], xc}};
                  mm.src[1] = tap(bd, ct, kh * b->d[0] * bw + kw * b->d[1], S->dt, 3, mf);
                  if ((st = emit3(L, &mm, ps, wt, bd))) return st;
                }
            }
            /* PSUM -> SBUF (+ bias per output channel = partition, rounded
             * once to the result's dtype) -> HBM */
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
            if ((st = emit3(L, &ev, o, ps, bt))) return st;
            int64_t on = O->stride[A_N], oc = O->stride[A_O], oh = O->stride[A_OH], ow = O->stride[A_OW];
            trnc_nc_dim sf[3] = {{yc * xc, nbt}, {xc, yc}, {1, xc}};
            trnc_nc_dim hf[3] = {{on, nbt}, {oh, yc}, {ow, xc}};
            int64_t hoff = O->offset + g * O->stride[A_G] + n0 * on + o0 * oc + y0 * oh + x0 * ow;
            if ((st = lw_dma(L, o, tap(o, ot, 0, odt, 3, sf), hbm_ap(O, hoff, ot, oc, 3, hf), true))) return st;
          }
    }
  return TRNC_OK;
}

/* The grad_weight schedule (reduction [N, OH, OW]); S->W is dY. */
static trnc_status sched_gw(lw *L, const sched *S) {
  trnc_status st = lw_kernel_begin(L, S->k->name);
  if (st) return st;
  const kir_tensor *Y = S->W, *D = S->Out;
  const conv_band *b = S->b;
  int64_t esz = lw_esize(S->dt), taps = S->KH * S->KW, npmax = S->t.nb * S->t.oht * S->t.owt;
  int64_t ctmax = mini(S->Kc, 128), otmax = mini(S->Oc, 128), bh = S->t.bh, bw = S->t.bw;
  lw_pool acc, band, dyt, dyT, tp, xT, opool;
  if ((st = lw_pool_init(L, &acc, TRNC_NC_MEM_PSUM, 2048, 4)) ||
      (st = lw_pool_init(L, &tp, TRNC_NC_MEM_PSUM, 128 * 4, 2)) ||
      (st = lw_pool_init(L, &band, TRNC_NC_MEM_SBUF, S->t.nb * bh * bw * esz, 2)) ||
      (st = lw_pool_init(L, &dyt, TRNC_NC_MEM_SBUF, npmax * esz, 2)) ||
      (st = lw_pool_init(L, &dyT, TRNC_NC_MEM_SBUF, otmax * esz, 2)) ||
      (st = lw_pool_init(L, &xT, TRNC_NC_MEM_SBUF, ctmax * esz, 3)) ||
      (st = lw_pool_init(L, &opool, TRNC_NC_MEM_SBUF, 512 * 4, 2)))
    return st;
  trnc_dtype odt = D->dtype;
  int64_t yn = Y->stride[A_N], yo = Y->stride[A_O], yh = Y->stride[A_OH], yw = Y->stride[A_OW];
  for (int64_t g = 0; g < S->G; g++)
    for (int64_t o0 = 0; o0 < S->Oc; o0 += 128)
      for (int64_t c0 = 0; c0 < S->Kc; c0 += 128) {
        int64_t ot = mini(128, S->Oc - o0), ct = mini(128, S->Kc - c0);
        int64_t tpbk = maxi(1, 512 / ct); /* taps per PSUM bank */
        for (int64_t t0 = 0; t0 < taps; t0 += 4 * tpbk) {
          int64_t t1 = mini(taps, t0 + 4 * tpbk);
          bool first = true;
          for (int64_t n0 = 0; n0 < S->N; n0 += S->t.nb)
            for (int64_t y0 = 0; y0 < S->OH; y0 += S->t.oht)
              for (int64_t x0 = 0; x0 < S->OW; x0 += S->t.owt) {
                int64_t nbt = mini(S->t.nb, S->N - n0), yc = mini(S->t.oht, S->OH - y0);
                int64_t xc = mini(S->t.owt, S->OW - x0), np = nbt * yc * xc;
                /* dY [ot, positions] -> TensorE transpose -> dY^T [np, ot] */
                lw_tile *d = lw_pool_next(&dyt);
                trnc_nc_dim sf[3] = {{yc * xc, nbt}, {xc, yc}, {1, xc}};
                trnc_nc_dim hf[3] = {{yn, nbt}, {yh, yc}, {yw, xc}};
                int64_t hoff = Y->offset + g * Y->stride[A_G] + n0 * yn + o0 * yo + y0 * yh + x0 * yw;
                if ((st = lw_dma(L, d, tap(d, ot, 0, S->dt, 3, sf), hbm_ap(Y, hoff, ot, yo, 3, hf), false))) return st;
                lw_tile *p = lw_pool_next(&tp);
                if ((st = pe_transpose(L, p, np, d, tap1(d, ot, 0, S->dt, np)))) return st;
                lw_tile *dT = lw_pool_next(&dyT);
                if ((st = copy_ap(L, TRNC_NC_VECTOR, dT, tap1(dT, np, 0, S->dt, ot), p, tap1(p, np, 0, TRNC_F32, ot))))
                  return st;
                lw_tile *bd = lw_pool_next(&band);
                if ((st = load_band(L, S, bd, ct, g, n0, nbt, c0, y0 * b->s[0] - b->pad[0], x0 * b->s[1] - b->pad[1])))
                  return st;
                for (int64_t t = t0; t < t1; t++) {
                  int64_t kh = t / S->KW, kw = t % S->KW;
                  lw_tile *p2 = lw_pool_next(&tp);
                  trnc_nc_dim mf[3] = {{bh * bw, nbt}, {b->s[0] * bw, yc}, {b->s[1], xc}};
                  if ((st = pe_transpose(L, p2, np, bd, tap(bd, ct, kh * b->d[0] * bw + kw * b->d[1], S->dt, 3, mf))))
                    return st;
                  lw_tile *xt = lw_pool_next(&xT);
                  if ((st = copy_ap(L, TRNC_NC_VECTOR, xt, tap1(xt, np, 0, S->dt, ct), p2,
                                    tap1(p2, np, 0, TRNC_F32, ct))))
                    return st;
                  lw_tile *a = &acc.tiles[(t - t0) / tpbk];
                  trnc_nc_instr mm = lw_instr(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
                  mm.mode = !first;
                  mm.dst = tap1(a, ot, ((t - t0) % tpbk) * ct, TRNC_F32, ct);
                  mm.src[0] = tap1(dT, np, 0, S->dt, ot);
                  mm.src[1] = tap1(xt, np, 0, S->dt, ct);
                  if ((st = emit3(L, &mm, a, dT, xt))) return st;
                }
                first = false;
              }
          /* evacuate each bank and store its taps: dW[g, o0+o, c0+c, kh, kw] */
          for (int64_t tb = t0; tb < t1; tb += tpbk) {
            int64_t te = mini(t1, tb + tpbk);
            lw_tile *a = &acc.tiles[(tb - t0) / tpbk];
            lw_tile *o = lw_pool_next(&opool);
            if ((st = copy_ap(L, TRNC_NC_SCALAR, o, tap1(o, ot, 0, odt, (te - tb) * ct), a,
                              tap1(a, ot, 0, TRNC_F32, (te - tb) * ct))))
              return st;
            for (int64_t t = tb; t < te; t++) {
              int64_t kh = t / S->KW, kw = t % S->KW;
              trnc_nc_dim hf = {D->stride[A_C], ct};
              int64_t hoff = D->offset + g * D->stride[A_G] + o0 * D->stride[A_O] + c0 * D->stride[A_C] +
                             kh * D->stride[A_KH] + kw * D->stride[A_KW];
              if ((st = lw_dma(L, o, tap1(o, ot, (t - tb) * ct, odt, ct), hbm_ap(D, hoff, ot, D->stride[A_O], 1, &hf),
                               true)))
                return st;
            }
          }
        }
      }
  return TRNC_OK;
}

/* Schedules conv kernel c (built by build_ig / build_gw) into a new
 * NeuronCore kernel. */
static trnc_status schedule(lw *L, const kconv *c) {
  const kir_kernel *k = &c->k;
  const char *dump = getenv("TRNC_DUMP");
  if (dump && (strstr(dump, "kir") || !strcmp(dump, "all"))) {
    kir_print(k, stderr);
    const conv_band *b = &c->b;
    fprintf(stderr, "  band T%d: X %lldx%lld (strides %lld, %lld), up %lldx%lld, stride %lldx%lld, dilation %lldx%lld, pad %lldx%lld\n",
            T_X, (long long)b->H, (long long)b->W, (long long)b->xh, (long long)b->xw, (long long)b->up[0],
            (long long)b->up[1], (long long)b->s[0], (long long)b->s[1], (long long)b->d[0], (long long)b->d[1],
            (long long)b->pad[0], (long long)b->pad[1]);
  }
  sched S;
  memset(&S, 0, sizeof S);
  S.k = k;
  S.b = &c->b;
  S.X = &k->tensors[T_X];
  S.W = &k->tensors[T_W];
  S.Out = &k->tensors[T_OUT];
  S.B = k->ntensors > T_BIAS ? &k->tensors[T_BIAS] : NULL;
  S.G = k->extent[A_G];
  S.N = k->extent[A_N];
  S.Oc = k->extent[A_O];
  S.OH = k->extent[A_OH];
  S.OW = k->extent[A_OW];
  S.Kc = k->extent[A_C];
  S.KH = k->extent[A_KH];
  S.KW = k->extent[A_KW];
  S.dt = k->values[k->ops[0].dst].dtype;
  if (k->raxes == R_GW) {
    if (!plan_tile(k->extent, &c->b, 128, &S.t)) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: no tiling", k->name);
    return sched_gw(L, &S);
  }
  if (!ig_plan(k->extent, &c->b, &S.t)) return lw_fail(L, k->node, TRNC_ERR_INTERNAL, "%s: no tiling", k->name);
  return sched_ig(L, &S);
}

/* ==== entry ========================================================================== */

static trnc_status emit_ig(lw *L, const trnc_node *n, const cgeo *q, bool grad_input, const lw_tv *x,
                           const lw_tv *w, const lw_tv *bias, const lw_tv *out) {
  kconv *c = trnc_arena_alloc(&L->arena, sizeof *c);
  if (!c) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
  const char *why = build_ig(L, c, n, q, grad_input, x, w, bias, out);
  if (why) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution kernel: %s", why);
  return schedule(L, c);
}

/** Emits convolution node n (forward; or backward: grad_input and
 *  grad_weight, the bias gradient being a decomposition) as conv kernels.
 *  TRNC_ERR_INTERNAL for a form lw_convolution_handles refuses or an
 *  operand not in HBM. */
trnc_status lw_convolution_emit(lw *L, const trnc_node *n) {
  cgeo q;
  bool bw = n->op == TRNC_OP_CONVOLUTION_BACKWARD;
  if (!conv_geo(L->g, n, &q)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "%s: bad geometry", n->target);
  if (!bw) {
    const lw_tv *x = &L->tv[n->args[0].u.ref], *out = &L->tv[n->outs[0]];
    const trnc_arg *ba = trnc_node_arg(n, 2);
    const lw_tv *bias = ba && ba->kind == TRNC_ARG_VALUE ? &L->tv[ba->u.ref] : NULL;
    if (out->buffer < 0 || q.N == 0) return TRNC_OK;
    if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution: input not materialized");
    L->ops_per_engine[0]++;
    return emit_ig(L, n, &q, false, x, &L->tv[n->args[1].u.ref], bias, out);
  }
  const lw_tv *dy = &L->tv[n->args[0].u.ref], *x = &L->tv[n->args[1].u.ref], *w = &L->tv[n->args[2].u.ref];
  const lw_tv *dx = &L->tv[n->outs[0]], *dw = &L->tv[n->outs[1]];
  bool need_dx = mask_on(n, 0) && dx->buffer >= 0, need_dw = mask_on(n, 1) && dw->buffer >= 0;
  if ((need_dx || need_dw) && dy->buffer < 0)
    return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: grad_output not materialized");
  L->ops_per_engine[0]++;
  trnc_status st;
  if (need_dx && (st = emit_ig(L, n, &q, true, dy, w, NULL, dx))) return st;
  if (need_dw) {
    if (x->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution_backward: input not materialized");
    kconv *c = trnc_arena_alloc(&L->arena, sizeof *c);
    if (!c) return lw_fail(L, n, TRNC_ERR_NOMEM, "out of memory");
    const char *why = build_gw(L, c, n, &q, dy, x, dw);
    if (why) return lw_fail(L, n, TRNC_ERR_INTERNAL, "convolution kernel: %s", why);
    return schedule(L, c);
  }
  return TRNC_OK;
}
