/*
 * ops.c — the op table expanded from ir/ops.def, attribute checks, and the
 * public names of statuses, dtypes and ops.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/shape.h"

/* ---- attribute checks (return NULL if lowerable, else the reason) ------------ */

static const trnc_arg *arg(const trnc_node *n, uint32_t i) { return trnc_node_arg(n, i); }

static const char *check_gelu(const trnc_graph *g, const trnc_node *n) {
  /* gelu(self, approximate) / gelu_backward(grad, self, approximate) */
  const trnc_arg *a = arg(n, n->op == TRNC_OP_GELU ? 1 : 2);
  if (!a || a->kind != TRNC_ARG_STR) return NULL;
  if (!strcmp(a->u.s, "none") || !strcmp(a->u.s, "tanh")) return NULL;
  return "approximate must be 'none' or 'tanh'";
}

/* Collectives: a reduce_op trnc runs, a group name the graph sizes. */
static const char *check_cc(const trnc_graph *g, const trnc_node *n) {
  bool reduces = n->op == TRNC_OP_ALL_REDUCE || n->op == TRNC_OP_ALL_REDUCE_COALESCED ||
                 n->op == TRNC_OP_REDUCE_SCATTER || n->op == TRNC_OP_REDUCE_SCATTER_COALESCED;
  if (reduces) {
    static const char *const ok[] = {"sum", "avg", "product", "min", "max"};
    const trnc_arg *r = arg(n, 1);
    bool found = false;
    for (size_t i = 0; r && r->kind == TRNC_ARG_STR && i < sizeof ok / sizeof ok[0]; i++)
      found = found || !strcmp(r->u.s, ok[i]);
    if (!found) return "reduce_op must be one of sum, avg, product, min, max";
  }
  const trnc_arg *gn = n->nargs ? arg(n, n->nargs - 1) : NULL;
  if (!gn || gn->kind != TRNC_ARG_STR) return "group_name must be a process group name (a string)";
  if (strlen(gn->u.s) >= TRNC_CC_GROUP_NAME)
    return "group_name must be shorter than " TRNC_XSTR(TRNC_CC_GROUP_NAME) " bytes";
  if (trnc_graph_group_size(g, gn->u.s) < 1)
    return "the graph does not record the size of this process group (compile with "
           "torch.distributed initialized, through trnc's backend)";
  if (n->op == TRNC_OP_BROADCAST &&
      (trnc_arg_int(n, 1, -1) < 0 || trnc_arg_int(n, 1, -1) >= trnc_graph_group_size(g, gn->u.s)))
    return "broadcast src must be a rank of the group";
  if ((n->op == TRNC_OP_ALL_GATHER || n->op == TRNC_OP_ALL_GATHER_COALESCED ||
       n->op == TRNC_OP_REDUCE_SCATTER || n->op == TRNC_OP_REDUCE_SCATTER_COALESCED) &&
      trnc_arg_int(n, n->op == TRNC_OP_ALL_GATHER || n->op == TRNC_OP_ALL_GATHER_COALESCED ? 1 : 2,
                   0) != trnc_graph_group_size(g, gn->u.s))
    return "group_size differs from the size of the process group";
  if (n->op == TRNC_OP_ALL_TO_ALL) {
    /* all_to_all_single(input, output_split_sizes, input_split_sizes, group) */
    int32_t size = trnc_graph_group_size(g, gn->u.s);
    for (uint32_t i = 1; i <= 2; i++) {
      const trnc_arg *sp = arg(n, i);
      uint32_t k = sp && sp->kind == TRNC_ARG_LIST ? sp->u.list.n : 0;
      const trnc_arg *other = arg(n, 3 - i);
      uint32_t ko = other && other->kind == TRNC_ARG_LIST ? other->u.list.n : 0;
      if (k != ko) return "all_to_all_single's output and input split sizes must both be given or both be empty";
      if (k && (k != (uint32_t)size || k > TRNC_CC_MAX_SPLITS))
        return "all_to_all_single's split sizes must list one size per rank of the group, for at "
               "most " TRNC_XSTR(TRNC_CC_MAX_SPLITS) " ranks";
    }
  }
  return NULL;
}

static const char *check_clamp(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *lo = arg(n, 1), *hi = arg(n, 2);
  if ((!lo || lo->kind == TRNC_ARG_NONE) && (!hi || hi->kind == TRNC_ARG_NONE))
    return "clamp needs at least one of min and max";
  return NULL;
}

static const char *check_polygamma(const trnc_graph *g, const trnc_node *n) {
  int64_t order = trnc_arg_int(n, 0, -1);
  if (order < 0) return "polygamma's order n must be non-negative (eager raises)";
  if (order > 8) return "polygamma is lowered for orders n <= 8 (its asymptotic series loses fp32 accuracy beyond)";
  return NULL;
}

/* Hermite, Laguerre, Legendre polynomials: eager runs n recurrence steps and
 * has no closed form, so n must be a Python number and the steps at most
 * TRNC_POLY_MAX_STEPS (codegen/kir/polynomial.c unrolls them); Hermite's
 * tensor n is decomposed (eager stops at n = 128, passes/decomp_poly.c). */
static const char *check_poly_steps(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *a = arg(n, 1);
  bool hermite = n->op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H || n->op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H_N_SCALAR ||
                 n->op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE || n->op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE_N_SCALAR;
  if (a && a->kind == TRNC_ARG_VALUE && hermite) return NULL; /* decomposed: every step eager can run */
  if (!a || (a->kind != TRNC_ARG_INT && a->kind != TRNC_ARG_FLOAT && a->kind != TRNC_ARG_BOOL))
    return "n must be a Python number: eager runs n recurrence steps (no closed form), a "
           "tensor n has no static bound (at most " TRNC_XSTR(TRNC_POLY_MAX_STEPS) " steps are unrolled)";
  double v = trnc_arg_number(a, 0);
  int64_t s = v > -1 && v < 9.2233720e18 ? (int64_t)v : -1;
  if (s > TRNC_POLY_MAX_STEPS && !(hermite && s > 128))
    return "n must be at most " TRNC_XSTR(TRNC_POLY_MAX_STEPS) " (the recurrence is unrolled n steps)";
  return NULL;
}

/* argmax/argmin/max.dim/min.dim: decomposed in float32 with a float32 iota
 * (passes/decomp_argmax.c) */
static const char *check_argmax(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
  if (x->dtype == TRNC_I32 || x->dtype == TRNC_I64)
    return "32/64-bit integer inputs are not lowered (float32 holds their values inexactly)";
  const trnc_arg *da = arg(n, 1);
  int64_t len = trnc_type_numel(x);
  if (da && da->kind == TRNC_ARG_INT && x->rank > 0) {
    int64_t d = da->u.i < 0 ? da->u.i + x->rank : da->u.i;
    len = d >= 0 && d < x->rank ? x->shape[d] : 0;
  }
  if (trnc_type_numel(x) == 0) return "an empty input has no extremum (eager raises)";
  if (len >= TRNC_ONEHOT_MAX) return "at most 2^24 - 1 elements per reduced row (float32 indices)";
  return NULL;
}

/* nll_loss forward/backward: class indices compared in float32 */
static const char *check_nll(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = trnc_ref_type(g, n->args[n->op == TRNC_OP_NLL_LOSS ? 0 : 1].u.ref);
  if (x->rank < 1 || x->shape[x->rank - 1] >= TRNC_ONEHOT_MAX) return "at most 2^24 - 1 classes";
  if (trnc_type_numel(x) == 0) return "nll_loss over an empty batch or no classes is not lowered";
  return NULL;
}

/* _cdist_forward(x1, x2, ...) / _cdist_backward(grad, x1, x2, ...): the
 * [..., P, R, M] differences trnc reduces */
static const char *check_cdist(const trnc_graph *g, const trnc_node *n) {
  uint32_t a = n->op == TRNC_OP_CDIST ? 0 : 1;
  const trnc_type *x1 = trnc_ref_type(g, n->args[a].u.ref), *x2 = trnc_ref_type(g, n->args[a + 1].u.ref);
  if (x1->rank < 2 || x2->rank < 2 || x1->rank != x2->rank) return "x1 and x2 must have one rank, at least 2";
  for (int i = 0; i + 2 < x1->rank; i++)
    if (x1->shape[i] != x2->shape[i]) return "x1 and x2 must have one batch shape (no broadcasting)";
  double p = trnc_arg_number(trnc_node_arg(n, a + 2), 2);
  if (!(p >= 0)) return "p must be non-negative";
  if ((double)trnc_type_numel(x1) * (double)x2->shape[x2->rank - 2] > (double)TRNC_ONEHOT_MAX)
    return "more than 2^24 differences (x1's elements times x2's rows)";
  if (isinf(p) && x1->shape[x1->rank - 1] == 0) return "p = inf over empty rows has no identity";
  return NULL;
}

/* _pdist_forward(self [N, M], p) / _pdist_backward(grad, self, p, pdist) */
static const char *check_pdist(const trnc_graph *g, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_PDIST_BACKWARD;
  const trnc_type *x = trnc_ref_type(g, n->args[bw ? 1 : 0].u.ref);
  double p = trnc_arg_number(trnc_node_arg(n, bw ? 2 : 1), 2);
  if (x->rank != 2) return "pdist's input must be 2-D [N, M]";
  if (!(p >= 0)) return "p must be non-negative";
  if (x->shape[0] > TRNC_PDIST_MAX) return "pdist is lowered for at most " TRNC_XSTR(TRNC_PDIST_MAX) " rows";
  if ((double)trnc_type_numel(x) * (double)x->shape[0] > (double)TRNC_ONEHOT_MAX)
    return "more than 2^24 differences (rows times rows times columns)";
  if (isinf(p) && x->shape[1] == 0) return "p = inf over empty rows has no identity";
  return NULL;
}


/* numel(index) times the positions of dim: the one-hot of decomp_index.c */
static const char *onehot_too_big(const trnc_graph *g, const trnc_node *n, uint32_t elems_arg) {
  const trnc_type *x = trnc_ref_type(g, n->args[0].u.ref);
  int64_t d = trnc_arg_int(n, 1, 0);
  if (d < 0) d += x->rank;
  int64_t pos = x->rank && d >= 0 && d < x->rank ? x->shape[d] : 1;
  if ((double)trnc_type_numel(trnc_ref_type(g, n->args[elems_arg].u.ref)) * (double)pos >
      (double)TRNC_ONEHOT_MAX)
    return "more than 2^24 elements times positions (the one-hot trnc reduces over)";
  return NULL;
}

static const char *check_scatter_reduce(const trnc_graph *g, const trnc_node *n) {
  trnc_dtype self = trnc_ref_type(g, n->args[0].u.ref)->dtype;
  trnc_dtype src = trnc_ref_type(g, n->args[3].u.ref)->dtype;
  if (self == TRNC_I64 || self == TRNC_I32 || self == TRNC_BOOL || src != self)
    return "self and src must be floating tensors of one dtype";
  const trnc_arg *r = arg(n, 4);
  if (r && r->kind == TRNC_ARG_STR && (!strcmp(r->u.s, "sum") || !strcmp(r->u.s, "mean")))
    return NULL;
  if (r && r->kind == TRNC_ARG_STR &&
      (!strcmp(r->u.s, "prod") || !strcmp(r->u.s, "amax") || !strcmp(r->u.s, "amin")))
    return onehot_too_big(g, n, 2);
  return "reduce must be 'sum', 'mean', 'prod', 'amax' or 'amin'";
}

static const char *check_index_reduce(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *self = trnc_ref_type(g, n->args[0].u.ref);
  trnc_dtype src = trnc_ref_type(g, n->args[3].u.ref)->dtype;
  if (self->dtype == TRNC_I64 || self->dtype == TRNC_I32 || self->dtype == TRNC_BOOL ||
      src != self->dtype)
    return "self and source must be floating tensors of one dtype";
  const trnc_arg *r = arg(n, 4);
  if (!(r && r->kind == TRNC_ARG_STR &&
        (!strcmp(r->u.s, "prod") || !strcmp(r->u.s, "mean") || !strcmp(r->u.s, "amax") ||
         !strcmp(r->u.s, "amin"))))
    return "reduce must be 'prod', 'mean', 'amax' or 'amin'";
  return onehot_too_big(g, n, 3);
}

/* bucketize(self, boundaries) / searchsorted(sorted_sequence, self): the comparison */
static const char *check_search(const trnc_graph *g, const trnc_node *n) {
  bool bk = n->op == TRNC_OP_BUCKETIZE;
  const trnc_type *seq = trnc_ref_type(g, n->args[bk ? 1 : 0].u.ref);
  const trnc_type *x = trnc_ref_type(g, n->args[bk ? 0 : 1].u.ref);
  if (bk && seq->rank != 1) return "boundaries must be 1-D";
  if (seq->rank == 0) return "the sorted sequence must have a dim";
  int64_t len = seq->shape[seq->rank - 1];
  if ((double)trnc_type_numel(x) * (double)len > (double)TRNC_ONEHOT_MAX)
    return "more than 2^24 values times sequence elements (the comparison trnc sums)";
  return NULL;
}

static const char *check_bn_no_stats(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  const trnc_arg *t = arg(n, 3);
  return t && t->kind == TRNC_ARG_BOOL && !t->u.b
             ? "training=False needs running statistics (batch norm without them normalizes by the batch)"
             : NULL;
}

static const char *check_divmode(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *a = arg(n, 2);
  if (!a || a->kind == TRNC_ARG_NONE) return NULL;
  if (a->kind == TRNC_ARG_STR && (!strcmp(a->u.s, "trunc") || !strcmp(a->u.s, "floor")))
    return NULL;
  return "rounding_mode must be None, 'trunc' or 'floor'";
}

static const char *check_softmax(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *a = arg(n, 2);
  if (a && a->kind == TRNC_ARG_BOOL && a->u.b)
    return "half_to_float=True is not lowered (use autocast, which keeps the input dtype)";
  return NULL;
}

/* Entry j of int-list argument i of n (a bare int: every entry). */
static int64_t spatial_at(const trnc_node *n, uint32_t i, int j, int64_t dflt) {
  const trnc_arg *a = arg(n, i);
  return a && a->kind == TRNC_ARG_INT ? a->u.i : trnc_arg_spatial(n, i, j, dflt);
}

/* The tiles of a 1-D/2-D convolution kernel (codegen/kir/conv.c, whose
 * tiling succeeds exactly within them): the input band of one output
 * position (the dilated window) within TRNC_CONV_BAND_MAX elements; for
 * the forward and the input gradient, the contraction channels of a group
 * within TRNC_CONV_MAX_CIN and the weights of every tap of one
 * 128-channel tile within TRNC_CONV_WTILE_MAX bytes. cin, cout: the
 * contraction and result channels of a group. */
static const char *conv_tiles(const trnc_type *w, int sp, const trnc_node *n, uint32_t a_dil, int64_t cin,
                              int64_t cout, bool contraction) {
  int64_t kh = sp == 2 ? w->shape[2] : 1, kw = w->shape[w->rank - 1];
  int64_t dh = sp == 2 ? spatial_at(n, a_dil, 0, 1) : 1, dw = spatial_at(n, a_dil, sp - 1, 1);
  if (((kh - 1) * dh + 1) * ((kw - 1) * dw + 1) > TRNC_CONV_BAND_MAX)
    return "convolution window (with dilation) spans more than " TRNC_XSTR(TRNC_CONV_BAND_MAX) " input elements";
  if (!contraction) return NULL;
  if (cin > TRNC_CONV_MAX_CIN)
    return "convolution contracts more than " TRNC_XSTR(TRNC_CONV_MAX_CIN) " channels per group";
  int64_t tiles = (cin + 127) / 128, o = cout < 128 ? cout : 128;
  if (tiles * kh * kw * o * 4 > TRNC_CONV_WTILE_MAX)
    return "convolution weights of one 128-channel tile exceed " TRNC_XSTR(TRNC_CONV_WTILE_MAX) " bytes "
           "(channel tiles x taps x 4 bytes per output channel)";
  return NULL;
}

/* Output-mask entry k of convolution_backward (default true). */
static bool conv_mask(const trnc_node *n, int k) {
  const trnc_arg *m = arg(n, 10);
  return !(m && m->kind == TRNC_ARG_LIST && (uint32_t)k < m->u.list.n &&
           m->u.list.items[k].kind == TRNC_ARG_BOOL && !m->u.list.items[k].u.b);
}

/* Convolutions lowered directly are 1-D/2-D and not transposed; the
 * decomposition of the rest (passes/decomp_conv.c) computes a transposed
 * convolution as the input gradient of the convolution it transposes, which
 * maps the output's shape back onto the input's only when output_padding <
 * stride, and a 3-D one as one 2-D convolution per kernel depth tap. */
static const char *check_conv(const trnc_graph *g, const trnc_node *n) {
  bool bw = n->op == TRNC_OP_CONVOLUTION_BACKWARD;
  const trnc_arg *x = arg(n, bw ? 1 : 0), *w = arg(n, bw ? 2 : 1);
  const trnc_arg *tr = arg(n, bw ? 7 : 6), *op = arg(n, bw ? 8 : 7);
  if (x && x->kind == TRNC_ARG_VALUE) {
    int r = trnc_ref_type(g, x->u.ref)->rank;
    if (r < 3 || r > 5) return "only 1-D, 2-D and 3-D convolutions are lowered";
    if (r == 5 && w && w->kind == TRNC_ARG_VALUE && trnc_ref_type(g, w->u.ref)->rank == 5 &&
        trnc_ref_type(g, w->u.ref)->shape[2] > TRNC_CONV_MAX_DEPTH_TAPS)
      return "3-D convolution with a kernel depth above " TRNC_XSTR(TRNC_CONV_MAX_DEPTH_TAPS) " is not lowered (trnc sums one 2-D "
             "convolution per depth tap)";
  }
  bool transposed = tr && tr->kind == TRNC_ARG_BOOL && tr->u.b;
  if (!transposed && x && w && x->kind == TRNC_ARG_VALUE && w->kind == TRNC_ARG_VALUE) {
    const trnc_type *xt = trnc_ref_type(g, x->u.ref), *wt = trnc_ref_type(g, w->u.ref);
    int64_t groups = trnc_arg_int(n, bw ? 9 : 8, 1);
    if ((xt->rank == 3 || xt->rank == 4) && wt->rank == xt->rank && groups >= 1 && wt->shape[0] % groups == 0) {
      int64_t cg = wt->shape[1], og = wt->shape[0] / groups;
      uint32_t a_dil = bw ? 6 : 5;
      const char *why = !bw || conv_mask(n, 0)
                            ? conv_tiles(wt, xt->rank - 2, n, a_dil, bw ? og : cg, bw ? cg : og, true)
                            : conv_tiles(wt, xt->rank - 2, n, a_dil, cg, og, false);
      if (why) return why;
    }
  }
  if (transposed && op && op->kind == TRNC_ARG_LIST) {
    for (uint32_t j = 0; j < op->u.list.n; j++)
      if (op->u.list.items[j].u.i >= trnc_arg_spatial(n, bw ? 4 : 3, (int)j, 1))
        return "transposed convolution with output_padding >= stride (possible with dilation) is "
               "not lowered";
  }
  return NULL;
}

/* as_strided_scatter addresses self's storage: lowered when that storage is
 * self itself (contiguous, offset 0) and the view stays inside it, which is
 * what functionalization emits for a write through an as_strided view of a
 * base (synthetic bases of aliased inputs, as_strided backward). */
static const char *check_as_strided_scatter(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *x = arg(n, 0);
  if (!x || x->kind != TRNC_ARG_VALUE) return NULL;
  const trnc_type *t = trnc_ref_type(g, x->u.ref);
  int64_t expect = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] > 1 && t->stride[i] != expect) return "self must be contiguous";
    expect *= t->shape[i];
  }
  if (t->offset != 0) return "self must start at storage offset 0";
  int64_t sz[TRNC_MAX_RANK], st[TRNC_MAX_RANK];
  const trnc_arg *a = arg(n, 2), *b = arg(n, 3), *o = arg(n, 4);
  if (!a || !b || a->kind != TRNC_ARG_LIST || b->kind != TRNC_ARG_LIST || a->u.list.n != b->u.list.n ||
      a->u.list.n > TRNC_MAX_RANK)
    return NULL; /* malformed: the shape rule reports it */
  int64_t last = o && o->kind == TRNC_ARG_INT ? o->u.i : 0;
  bool empty = false;
  for (uint32_t i = 0; i < a->u.list.n; i++) {
    sz[i] = a->u.list.items[i].u.i;
    st[i] = b->u.list.items[i].u.i;
    if (sz[i] == 0) empty = true;
    else last += (sz[i] - 1) * st[i];
  }
  if (!empty && last >= trnc_type_numel(t)) return "the strided view must lie inside self";
  return NULL;
}

/* Scaled-dot-product attention (CPU flash forward and backward): passes/
 * decompose.c rewrites it without dropout; eager rejects masks of another
 * dtype than the query's, and so does trnc. */
static const char *check_sdpa(const trnc_graph *g, const trnc_node *n) {
  bool fwd = n->op == TRNC_OP_SDPA_FLASH;
  double p = trnc_arg_number(arg(n, fwd ? 3 : 6), 0.0);
  if (p != 0.0)
    return "dropout_p > 0 in the fused CPU flash-attention op is not lowered "
           "(F.scaled_dot_product_attention with dropout takes PyTorch's math path on CPU, "
           "which trnc lowers with its own RNG)";
  const trnc_arg *m = arg(n, fwd ? 5 : 8), *q = arg(n, fwd ? 0 : 1);
  if (m && m->kind == TRNC_ARG_VALUE && q && q->kind == TRNC_ARG_VALUE &&
      trnc_ref_type(g, m->u.ref)->dtype != trnc_ref_type(g, q->u.ref)->dtype)
    return "attn_mask must have the query's dtype (an additive mask; eager's flash kernel "
           "requires it too)";
  return NULL;
}

/* x >> s runs as GpSimd's arithmetic shift, whose count is taken mod 32:
 * eager's counts outside [0, 31] (a sign fill) are not that. */
static const char *check_shift_scalar(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  const trnc_arg *s = arg(n, 1);
  if (!s || s->kind != TRNC_ARG_INT || s->u.i < 0 || s->u.i > 31)
    return "the shift count must be an integer in [0, 31]";
  return NULL;
}

/* passes/decomp_ops.c computes cumsum as x @ triu(ones(N, N)): the ones
 * matrix bounds the scan length. */
/* Size of the dim (argument dim_arg, default dflt) of tensor argument 0; 1
 * for a 0-d tensor or a dim out of range (the shape rule reports it), 0 if
 * argument 0 is no tensor. */
static const trnc_type *tensor0(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *x = arg(n, 0);
  return x && x->kind == TRNC_ARG_VALUE ? trnc_ref_type(g, x->u.ref) : NULL;
}

static int64_t dim_size(const trnc_graph *g, const trnc_node *n, uint32_t dim_arg, int64_t dflt) {
  const trnc_type *t = tensor0(g, n);
  if (!t) return 0;
  int64_t dim = trnc_arg_int(n, dim_arg, dflt);
  if (dim < 0) dim += t->rank;
  return t->rank > 0 && dim >= 0 && dim < t->rank ? t->shape[dim] : 1;
}

/* masked_scatter / its backward: the mask's prefix sum counts in float32 */
static const char *check_masked_scatter(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *t = n->op == TRNC_OP_MASKED_SCATTER ? &g->values[n->outs[0]].type
                                                       : trnc_ref_type(g, n->args[0].u.ref);
  if (trnc_type_numel(t) > TRNC_MASKED_SCATTER_MAX)
    return "masked_scatter over more than 2^24 elements is not lowered (trnc numbers the masked positions with a "
           "prefix sum in float32, exact below 2^24)";
  return NULL;
}

/* passes/decomp_ops.c views self with a broadcast dim before every dim
 * repeated more than once: that view must fit the IR's rank. */
static const char *check_repeat(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *r = arg(n, 1);
  if (!r || r->kind != TRNC_ARG_LIST) return NULL;
  uint32_t rank = r->u.list.n;
  for (uint32_t i = 0; i < r->u.list.n; i++) rank += r->u.list.items[i].u.i > 1;
  return rank <= TRNC_MAX_RANK ? NULL
                               : "repeat: the dims plus the repeated dims exceed 8 (trnc lowers "
                                 "repeat as an expand over one extra dim per repeated dim)";
}

/* passes/decomp_pool.c gathers every tap of a window separately: at most
 * TRNC_WINDOW_MAX_TAPS of them (the kernel's volume; for adaptive pooling
 * the widest window's). */
static const char *check_window_max(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = tensor0(g, n);
  if (!x) return NULL;
  int sp = n->op == TRNC_OP_ADAPTIVE_MAX_POOL2D ? 2 : 3;
  if (x->rank < sp) return NULL; /* the shape rule reports it */
  int64_t taps = 1;
  for (int j = 0; j < sp; j++) {
    int64_t k = n->op == TRNC_OP_MAX_POOL3D
                    ? trnc_arg_spatial(n, 1, j, 1)
                    : trnc_adaptive_window(x->shape[x->rank - sp + j], trnc_arg_spatial(n, 1, j, 1));
    taps *= k > 0 ? k : 1;
    if (taps > TRNC_WINDOW_MAX_TAPS)
      return "max pooling with windows of more than " TRNC_XSTR(TRNC_WINDOW_MAX_TAPS) " elements is not lowered for 3-D or adaptive "
             "pooling (trnc gathers each window tap separately)";
  }
  return NULL;
}

/* sort / topk along dim: rows of at most TRNC_SORT_MAX, at most
 * TRNC_SORT_MAX_COMPARISONS comparisons in all (passes/decomp_sort.c). */
static const char *check_sort(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *t = tensor0(g, n);
  if (!t) return NULL;
  bool all = n->op == TRNC_OP_MEDIAN_ALL || n->op == TRNC_OP_NANMEDIAN_ALL;
  uint32_t dim_arg = n->op == TRNC_OP_SORT_STABLE || n->op == TRNC_OP_TOPK ||
                             n->op == TRNC_OP_KTHVALUE ? 2 : 1;
  int64_t numel = trnc_type_numel(t), len = all ? numel : dim_size(g, n, dim_arg, -1);
  if (n->op == TRNC_OP_TOPK && trnc_arg_int(n, 1, -1) == 0)
    return "topk with k = 0 (an empty result) is not lowered";
  if (numel == 0) return "sort/topk of an empty tensor is not lowered";
  bool whole = n->op == TRNC_OP_SORT || n->op == TRNC_OP_SORT_STABLE;
  if (whole && len > TRNC_SORT_MAX) { /* ranked in chunks, placed by a scatter (decomp_sort.c) */
    if (len > TRNC_SORT_LONG_MAX)
      return "sort along a dim of more than " TRNC_XSTR(TRNC_SORT_LONG_MAX) " elements is not lowered (trnc ranks "
             "each element by comparing it with every other element of its row)";
    if (numel > TRNC_SORT_LONG_MAX_COMPARISONS / len)
      return "sort of rows longer than " TRNC_XSTR(TRNC_SORT_MAX) " needing more than 2^28 comparisons (rows x N x N) "
             "is not lowered (trnc ranks each element by comparing it with every other element of its row)";
    return NULL;
  }
  if (len > TRNC_SORT_MAX)
    return "sort/topk along a dim of more than " TRNC_XSTR(TRNC_SORT_MAX) " elements is not lowered (trnc ranks each "
           "element by comparing it with every other element of its row)";
  if (numel > TRNC_SORT_MAX_COMPARISONS / len)
    return "sort/topk needing more than 2^24 comparisons (rows x N x N) is not lowered (trnc "
           "ranks each element by comparing it with every other element of its row)";
  return NULL;
}

/* histc: a static range min < max (eager takes min == max from the data),
 * elements x bins within the comparison budget. */
/* nonzero_static: the positions come from an fp32 prefix sum (exact below 2^24). */
static const char *check_nonzero_static(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *t = tensor0(g, n);
  if (t && trnc_type_numel(t) > ((int64_t)1 << 24))
    return "nonzero_static of more than 2^24 elements is not lowered (the positions are an fp32 "
           "prefix sum, exact below 2^24)";
  return NULL;
}

static const char *check_histc(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *t = tensor0(g, n);
  if (!t) return NULL;
  double lo = trnc_arg_number(arg(n, 2), 0), hi = trnc_arg_number(arg(n, 3), 0);
  int64_t bins = trnc_arg_int(n, 1, 100);
  if (!isfinite(lo) || !isfinite(hi))
    return "histc: min and max must be finite (eager refuses them too)";
  if ((float)lo >= (float)hi)
    return "histc with min >= max is not lowered (min == max takes the range from the data; "
           "pass the range)";
  int64_t numel = trnc_type_numel(t);
  if (numel == 0) return "histc of an empty tensor is not lowered";
  if (bins > 0 && numel > TRNC_SORT_MAX_COMPARISONS / bins)
    return "histc of more than 2^24 elements x bins is not lowered (trnc compares every "
           "element with every bin)";
  return NULL;
}

/* Linear algebra: matrix dims within TRNC_LINALG_MAX_N, LAPACK's pivoted
 * forms only. */
static const char *check_linalg(const trnc_graph *g, const trnc_node *n) {
  /* the unrolled steps: min(m, n) of an LU's matrix, n of a square one */
  bool b_first = n->op == TRNC_OP_TRIANGULAR_SOLVE || n->op == TRNC_OP_CHOLESKY_SOLVE;
  const trnc_type *t = trnc_ref_type(g, n->args[b_first ? 1 : 0].u.ref);
  if (t->rank >= 2 && n->op == TRNC_OP_LINALG_MATRIX_EXP) {
    if (t->shape[t->rank - 1] > TRNC_MATRIX_EXP_MAX_N)
      return "matrix_exp of matrices larger than 128 x 128 is not lowered (its gradient is "
             "matrix_exp of a matrix twice the size)";
  } else if (t->rank >= 2) {
    int64_t rows = t->shape[t->rank - 2], cols = t->shape[t->rank - 1];
    if ((rows < cols ? rows : cols) > TRNC_LINALG_MAX_N)
      return "linear algebra of matrices larger than 32 x 32 (of LU: with both dims above 32) is "
             "not lowered (trnc unrolls one step per column)";
  }
  for (uint32_t i = 0; i < n->nargs; i++) {
    if (n->args[i].kind != TRNC_ARG_VALUE) continue;
    const trnc_type *a = trnc_ref_type(g, n->args[i].u.ref);
    if (a->rank >= 1 && trnc_type_numel(a) == 0 &&
        (n->op == TRNC_OP_LINALG_LU || n->op == TRNC_OP_LU_UNPACK))
      return "lu and lu_unpack of empty matrices are not lowered";
  }
  if ((n->op == TRNC_OP_LINALG_LU_FACTOR_EX || n->op == TRNC_OP_LINALG_LU) && !trnc_arg_bool(n, 1, true))
    return "LU without pivoting (pivot=False) is not lowered (eager supports it on CUDA only)";
  if (n->op == TRNC_OP_LINALG_LU_SOLVE || n->op == TRNC_OP_LU_UNPACK) {
    const trnc_type *p = trnc_ref_type(g, n->args[1].u.ref);
    const trnc_type *lu = trnc_ref_type(g, n->args[0].u.ref);
    if (p->dtype != TRNC_I32 || lu->dtype == TRNC_I32 || lu->dtype == TRNC_I64)
      return "LU must be float32 and pivots int32";
  }
  return NULL;
}

/* grouped_mm_fallback(_backward): float input and weight, integer offs. */
static const char *check_grouped_mm(const trnc_graph *g, const trnc_node *n) {
  for (uint32_t i = 0; i < n->nargs; i++) {
    const trnc_arg *a = arg(n, i);
    if (!a || a->kind != TRNC_ARG_VALUE) continue;
    trnc_dtype dt = trnc_ref_type(g, a->u.ref)->dtype;
    bool is_float = dt == TRNC_F32 || dt == TRNC_F16 || dt == TRNC_BF16 || dt == TRNC_F64;
    if (i == 2 ? dt != TRNC_I32 && dt != TRNC_I64 : !is_float)
      return i == 2 ? "grouped_mm_fallback: offs must be int32 or int64"
                    : "grouped_mm_fallback: input, weight and gradients must be floating point";
  }
  return NULL;
}

/* ---- limits of the ops the code generator lowers itself -------------------------- */

static const trnc_type *tensor_arg(const trnc_graph *g, const trnc_node *n, uint32_t i) {
  const trnc_arg *a = arg(n, i);
  return a && a->kind == TRNC_ARG_VALUE ? trnc_ref_type(g, a->u.ref) : NULL;
}
static bool float_dt(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16 || t == TRNC_F64;
}
static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* index.Tensor / index_put with one or two index tensors (kir gathers and
 * scatters, codegen/kir/gather.c; index_put with accumulate=True a one-hot
 * matmul accumulation in PSUM blocks, codegen/kir/accum.c): the wrapped
 * index and the flat row of two indices go through fp32 on VectorE. */
static const char *index_limits(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = tensor_arg(g, n, 0);
  const trnc_arg *l = arg(n, 1);
  if (!x || !l || l->kind != TRNC_ARG_LIST) return NULL;
  int cnt = 0, pos[2] = {0, 0}, brank = 0;
  int64_t bshape[TRNC_MAX_RANK];
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_arg *a = &l->u.list.items[i];
    if (a->kind != TRNC_ARG_VALUE) continue;
    if (cnt == 2) return NULL; /* decomposed into one linear index */
    const trnc_type *t = trnc_ref_type(g, a->u.ref);
    if (i >= x->rank) return NULL;
    pos[cnt++] = (int)i;
    if (x->shape[i] > (1 << 24))
      return "indexing a dim of more than 2^24 rows is not lowered (the wrapped index goes through fp32)";
    if (t->rank > brank) {
      int sh = t->rank - brank;
      for (int j = brank - 1; j >= 0; j--) bshape[j + sh] = bshape[j];
      for (int j = 0; j < sh; j++) bshape[j] = 1;
      brank = t->rank;
    }
    for (int j = 0; j < t->rank; j++)
      if (bshape[brank - t->rank + j] == 1) bshape[brank - t->rank + j] = t->shape[j];
  }
  if (cnt == 2 && (trnc_type_numel(x) > TRNC_INDEX_TABLE_MAX_ROWS ||
                   (n->op == TRNC_OP_INDEX && trnc_type_extent(x) > TRNC_INDEX_TABLE_MAX_ROWS)))
    return "two index tensors into a tensor of more than " TRNC_XSTR(TRNC_INDEX_TABLE_MAX_ROWS)
           " elements are not lowered (the flat row goes through fp32)";
  if (!cnt || n->op != TRNC_OP_INDEX_PUT || !trnc_arg_bool(n, 3, false)) return NULL;
  if (!float_dt(x->dtype))
    return "index_put with accumulate=True is lowered for float tensors only (it accumulates in fp32 PSUM)";
  const trnc_type *o = &g->values[n->outs[0]].type;
  if (!trnc_type_is_dense(o)) return "index_put with accumulate=True into a result with gaps is not lowered";
  if (cnt == 2 && !(pos[1] == pos[0] + 1 && o->stride[pos[0]] == o->shape[pos[1]] * o->stride[pos[1]]))
    return "index_put with accumulate=True and two index tensors on dims that do not merge (not adjacent) "
           "is not lowered";
  int64_t t = 1, w = 1, rows = 1;
  for (int i = 0; i < x->rank; i++) {
    if (i == pos[0] || (cnt == 2 && i == pos[1])) t *= x->shape[i];
    else w *= x->shape[i];
  }
  for (int j = 0; j < brank; j++) rows *= bshape[j];
  if (ceil_div64(t, TRNC_ACC_BLOCK_ROWS) * ceil_div64(rows, TRNC_ACC_BLOCK_ROWS) *
          ceil_div64(w, TRNC_ACC_BLOCK_COLS) > TRNC_ACC_MAX_BLOCKS)
    return "index_put with accumulate=True needing more than " TRNC_XSTR(TRNC_ACC_MAX_BLOCKS)
           " TensorE accumulation blocks (indexed rows/128 x indices/128 x row width/512) is not lowered";
  return NULL;
}

static const char *check_index(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *l = arg(n, 1);
  if (!l || l->kind != TRNC_ARG_LIST) return NULL;
  for (uint32_t i = 0; i < l->u.list.n; i++) {
    const trnc_arg *a = &l->u.list.items[i];
    if (a->kind != TRNC_ARG_VALUE) continue;
    if (trnc_ref_type(g, a->u.ref)->dtype == TRNC_BOOL)
      return "boolean mask indices are not lowered (torch.where(mask, value, x) computes "
             "x[mask] = value)";
  }
  return index_limits(g, n); /* more than 2 index tensors: passes/decomp_ops.c linearizes them */
}

/* embedding(weight [V, D], indices): a DMA gather of rows */
static const char *check_embedding(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *w = tensor_arg(g, n, 0), *ix = tensor_arg(g, n, 1);
  if (!w || !ix) return NULL;
  if (w->rank != 2) return "embedding's weight must be 2-D";
  if (ix->dtype != TRNC_I32 && ix->dtype != TRNC_I64) return "embedding indices must be int32 or int64";
  if (w->shape[0] == 0 && trnc_type_numel(ix) > 0)
    return "embedding indexes into an empty weight (eager raises IndexError)";
  return NULL;
}

/* grid_sampler_2d and its backward: input x with interpolation and padding modes */
static const char *grid_sampler_limits(const trnc_type *x, int64_t mode, int64_t padding) {
  if (mode != 0 && mode != 1) return "grid_sampler_2d: only bilinear and nearest interpolation are lowered";
  if (padding < 0 || padding > 2) return "grid_sampler_2d: unknown padding mode";
  if (!x || x->rank != 4) return NULL;
  if (x->shape[2] * x->shape[3] >= (1 << 24)) return "grid_sampler_2d over an image of 2^24 or more pixels is not lowered";
  if (trnc_type_numel(x) > TRNC_GATHER_MAX_ELEMS)
    return "grid_sampler_2d over an input of more than " TRNC_XSTR(TRNC_GATHER_MAX_ELEMS) " elements is not lowered";
  if (trnc_type_numel(x) == 0) return "grid_sampler_2d of an empty input is not lowered";
  return NULL;
}

/* grid_sampler_2d(input, grid, mode, padding, align_corners) */
static const char *check_grid_sampler(const trnc_graph *g, const trnc_node *n) {
  return grid_sampler_limits(tensor_arg(g, n, 0), trnc_arg_int(n, 2, 0), trnc_arg_int(n, 3, 0));
}

/* grid_sampler_2d_backward(grad_output, input, grid, mode, padding, align_corners, mask) */
static const char *check_grid_sampler_bw(const trnc_graph *g, const trnc_node *n) {
  return grid_sampler_limits(tensor_arg(g, n, 1), trnc_arg_int(n, 3, 0), trnc_arg_int(n, 4, 0));
}

/* replication_padNd_backward(grad_output, self, padding): the decomposition
 * sums the grad of the clamped positions at each border; every padded dim of
 * self and of the grad has at least one position. */
static const char *check_pad_bw(const trnc_graph *g, const trnc_node *n) {
  const trnc_arg *p = trnc_node_arg(n, 2);
  const trnc_type *x = tensor_arg(g, n, 1);
  if (!p || p->kind != TRNC_ARG_LIST || !x) return NULL;
  for (uint32_t i = 0; i + 1 < p->u.list.n; i += 2) {
    int dim = x->rank - 1 - (int)(i / 2);
    int64_t l = p->u.list.items[i].u.i, r = p->u.list.items[i + 1].u.i;
    if (dim < 0 || p->u.list.items[i].kind != TRNC_ARG_INT || p->u.list.items[i + 1].kind != TRNC_ARG_INT)
      return NULL;
    if (x->shape[dim] < 1 || x->shape[dim] + l + r < 1)
      return "replication pad backward of an empty dim (of self or of the padded result) is not lowered";
  }
  return NULL;
}

/* embedding_dense_backward(grad, indices, num_weights, padding_idx,
 * scale_grad_by_freq): a one-hot matmul accumulation in PSUM blocks */
static const char *check_embedding_bw(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *go = tensor_arg(g, n, 0), *ix = tensor_arg(g, n, 1);
  if (!go || !ix || go->rank == 0) return NULL;
  if (trnc_arg_bool(n, 4, false)) return "scale_grad_by_freq=True is not lowered";
  if (!float_dt(go->dtype)) return "embedding backward is lowered for float gradients only";
  int64_t t = trnc_arg_int(n, 2, 0), rows = trnc_type_numel(ix), d = go->shape[go->rank - 1];
  if (t <= 0 || rows <= 0 || d <= 0)
    return "embedding backward with no weights, no indices or empty rows is not lowered";
  if (t > INT32_MAX) return "embedding backward with more than 2^31 - 1 weights is not lowered";
  if (ceil_div64(t, TRNC_ACC_BLOCK_ROWS) * ceil_div64(rows, TRNC_ACC_BLOCK_ROWS) *
          ceil_div64(d, TRNC_ACC_BLOCK_COLS) > TRNC_ACC_MAX_BLOCKS)
    return "embedding backward needing more than " TRNC_XSTR(TRNC_ACC_MAX_BLOCKS)
           " TensorE accumulation blocks (num_weights/128 x indices/128 x width/512) is not lowered";
  return NULL;
}

/* amax/amin/max/min: no identity over no elements */
static const char *check_extreme(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = tensor0(g, n);
  if (x && trnc_type_numel(x) == 0 && trnc_type_numel(&g->values[n->outs[0]].type) > 0)
    return "max/min over an empty dim has no identity (eager raises): reduce a non-empty dim";
  return NULL;
}


/* index_select(self, dim, index): one DMA gather per row of the dim */
static const char *check_index_select(const trnc_graph *g, const trnc_node *n) {
  if (dim_size(g, n, 1, 0) > INT32_MAX)
    return "index_select along a dim of more than 2^31 - 1 rows is not lowered";
  return NULL;
}

/* gather(self, dim, index, sparse_grad) / scatter.value / scatter.src /
 * scatter_add(self, dim, index, src): DMA row gathers over a combined-index
 * table; scatter_add accumulates by one-hot matmuls in PSUM blocks */
static const char *check_gather(const trnc_graph *g, const trnc_node *n) {
  const trnc_type *x = tensor_arg(g, n, 0), *ix = tensor_arg(g, n, 2);
  if (!x || !ix) return NULL;
  if ((x->rank ? x->rank : 1) != (ix->rank ? ix->rank : 1))
    return "gather/scatter with an index of another rank than self (a 0-d tensor counts as rank 1)";
  if (trnc_type_numel(x) > TRNC_GATHER_MAX_ELEMS || trnc_type_extent(x) > TRNC_GATHER_MAX_ELEMS)
    return "gather/scatter over a self of more than " TRNC_XSTR(TRNC_GATHER_MAX_ELEMS)
           " elements (or a strided extent beyond) is not lowered (the combined index goes through fp32)";
  const trnc_type *src = n->op == TRNC_OP_SCATTER_SRC || n->op == TRNC_OP_SCATTER_ADD ? tensor_arg(g, n, 3) : NULL;
  if (src && (src->rank ? src->rank : 1) != (ix->rank ? ix->rank : 1))
    return "scatter's src must have the index's rank (a 0-d tensor counts as rank 1)";
  if (n->op != TRNC_OP_SCATTER_ADD) return NULL;
  if (!float_dt(x->dtype)) return "scatter_add is lowered for float tensors only (it accumulates in fp32 PSUM)";
  if (!trnc_type_is_dense(&g->values[n->outs[0]].type)) return "scatter_add into a result with gaps is not lowered";
  int64_t t = trnc_type_numel(x), rows = trnc_type_numel(ix);
  if (ceil_div64(t, TRNC_ACC_BLOCK_ROWS) * ceil_div64(rows, TRNC_ACC_BLOCK_ROWS) > TRNC_ACC_MAX_BLOCKS)
    return "scatter_add needing more than " TRNC_XSTR(TRNC_ACC_MAX_BLOCKS)
           " TensorE accumulation blocks (self/128 x index/128) is not lowered";
  return NULL;
}

const char *trnc_op_limits(const trnc_graph *g, const trnc_node *n) {
  if (!n || (unsigned)n->op >= TRNC_OP_COUNT || !trnc_op_defs[n->op].check) return NULL;
  return trnc_op_defs[n->op].check(g, n);
}

/* ---- the table ------------------------------------------------------------- */

static const char *const op_names[TRNC_OP_KIND_COUNT] = {
#define OP(id, target, flags, args, rule, dtypes, rank, check, limits, decomp) #id,
#include "ir/ops.def"
#undef OP
    "PLACEHOLDER", "CONSTANT", "UNKNOWN"};

const trnc_op_def trnc_op_defs[TRNC_OP_COUNT] = {
#define OP(id, target, flags, args, rule, dtypes, rank, check, limits, decomp) \
  {NULL, target, flags, args, rule, dtypes, rank, check, limits, #decomp},
#include "ir/ops.def"
#undef OP
};

/* Lowercase IR names, built once from the enum spellings. */
static char lower_names[TRNC_OP_KIND_COUNT][40];

static void init_names(void) {
  if (lower_names[0][0]) return;
  for (int i = 0; i < TRNC_OP_KIND_COUNT; i++) {
    const char *s = op_names[i];
    size_t k = 0;
    for (; s[k] && k < sizeof lower_names[i] - 1; k++)
      lower_names[i][k] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] - 'A' + 'a' : s[k]);
    lower_names[i][k] = '\0';
  }
}

const char *trnc_op_name(trnc_op op) {
  init_names();
  return (unsigned)op < TRNC_OP_KIND_COUNT ? lower_names[op] : "?";
}

bool trnc_op_decomposed(trnc_op op) { return trnc_op_has(op, TRNC_OPF_DECOMPOSED); }

/* Group names, in TRNC_OPF_* bit order. */
static const char *const group_names[] = {
    "elementwise", "reduction", "view",       "pooling", "gather",  "compare",
    "data_movement", "creation", "normalization", "matmul", "collective", "random",
    "sort",        "copy",      "loss",       "conv",    "attention", "linalg"};
_Static_assert(sizeof group_names / sizeof group_names[0] == 18 &&
                   TRNC_OPF_GROUPS == (1u << 18) - 1,
               "one name per TRNC_OPF_ group bit");

const char *trnc_op_group(trnc_op op) {
  if ((unsigned)op >= TRNC_OP_COUNT) return "";
  uint32_t g = trnc_op_defs[op].flags & TRNC_OPF_GROUPS;
  for (unsigned b = 0; b < sizeof group_names / sizeof group_names[0]; b++)
    if (g == 1u << b) return group_names[b];
  return ""; /* not exactly one group bit: tests/c/test_ops.c reports it */
}

trnc_op trnc_op_lookup(const char *target) {
  if (!target) return TRNC_OP_UNKNOWN;
  for (int i = 0; i < TRNC_OP_COUNT; i++)
    if (!strcmp(trnc_op_defs[i].target, target)) return (trnc_op)i;
  return TRNC_OP_UNKNOWN;
}

/* ---- names ---------------------------------------------------------------- */

const char *trnc_status_name(trnc_status s) {
  static const char *const names[TRNC_STATUS_COUNT] = {
      "TRNC_OK",           "TRNC_ERR_INVALID_ARGUMENT", "TRNC_ERR_MALFORMED",
      "TRNC_ERR_VERSION",  "TRNC_ERR_INVALID_GRAPH",    "TRNC_ERR_UNSUPPORTED",
      "TRNC_ERR_DYNAMIC_SHAPE", "TRNC_ERR_LIMIT",       "TRNC_ERR_NOMEM",
      "TRNC_ERR_IO",       "TRNC_ERR_INTERNAL"};
  return (unsigned)s < TRNC_STATUS_COUNT ? names[s] : "TRNC_ERR_UNKNOWN_STATUS";
}

static const struct {
  const char *name;
  size_t size;
} dtype_info[TRNC_DTYPE_COUNT] = {
    [TRNC_DTYPE_INVALID] = {"none", 0}, [TRNC_F32] = {"f32", 4},   [TRNC_F64] = {"f64", 8},
    [TRNC_F16] = {"f16", 2},           [TRNC_BF16] = {"bf16", 2}, [TRNC_F8E4M3] = {"f8e4m3", 1},
    [TRNC_F8E5M2] = {"f8e5m2", 1},     [TRNC_I64] = {"i64", 8},   [TRNC_I32] = {"i32", 4},
    [TRNC_I16] = {"i16", 2},           [TRNC_I8] = {"i8", 1},     [TRNC_U8] = {"u8", 1},
    [TRNC_BOOL] = {"bool", 1},         [TRNC_C64] = {"c64", 8},   [TRNC_C128] = {"c128", 16},
    [TRNC_C32] = {"c32", 4},           [TRNC_DTYPE_OTHER] = {"other", 0},
};

const char *trnc_dtype_name(trnc_dtype dt) {
  return (unsigned)dt < TRNC_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

size_t trnc_dtype_size(trnc_dtype dt) {
  return (unsigned)dt < TRNC_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

const char *trnc_version(void) { return TRNC_VERSION_STRING; }

/* ---- op info and docs ------------------------------------------------------ */

static void dtypes_str(uint32_t set, char *buf, size_t n) {
  buf[0] = '\0';
  size_t len = 0;
  for (int dt = 1; dt < TRNC_DTYPE_COUNT; dt++) {
    if (!(set & TRNC_DT(dt))) continue;
    int w = snprintf(buf + len, n - len, "%s%s", len ? " " : "", trnc_dtype_name((trnc_dtype)dt));
    if (w < 0 || (size_t)w >= n - len) break;
    len += (size_t)w;
  }
}

size_t trnc_op_count(void) { return TRNC_OP_COUNT; }

bool trnc_op_get_info(size_t i, trnc_op_info *out) {
  static char dts[TRNC_OP_COUNT][96];
  if (i >= TRNC_OP_COUNT || !out) return false;
  const trnc_op_def *d = &trnc_op_defs[i];
  if (!dts[i][0]) dtypes_str(d->dtypes, dts[i], sizeof dts[i]);
  out->name = trnc_op_name((trnc_op)i);
  out->fx_target = d->target;
  out->category = trnc_op_group((trnc_op)i);
  out->dtypes = dts[i];
  out->max_rank = d->max_rank;
  out->limits = d->limits;
  out->decomp = trnc_op_decomposed((trnc_op)i) ? d->decomp : "";
  return true;
}

char *trnc_ops_markdown(void) {
  size_t cap = 64 * 1024, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
#define EMIT(...)                                                          \
  do {                                                                     \
    int w_ = snprintf(buf + len, cap - len, __VA_ARGS__);                  \
    if (w_ < 0) break;                                                     \
    while ((size_t)w_ >= cap - len) {                                      \
      cap *= 2;                                                            \
      char *nb_ = realloc(buf, cap);                                       \
      if (!nb_) { free(buf); return NULL; }                                \
      buf = nb_;                                                           \
      w_ = snprintf(buf + len, cap - len, __VA_ARGS__);                    \
    }                                                                      \
    len += (size_t)w_;                                                     \
  } while (0)
  EMIT("# trnc operator table\n\n"
       "Generated from `ir/ops.def` by `trnc ops --markdown` (`make docs`); do not edit.\n\n"
       "An FX graph compiles only if every `call_function` node is an op below *and* its\n"
       "operands fall within the listed dtypes, rank and limits. Otherwise compilation fails\n"
       "with `trnc.UnsupportedOperatorError`, which lists every offending op, how often it\n"
       "occurs, its operand shapes and dtypes, and the line of your code it came from.\n\n"
       "Dtype notes: `f64` is accepted and runs as `f32` (a `UserWarning` names the inputs);\n"
       "`i64` is accepted where trnc proves the values fit in 32 bits (see `docs/dtypes.md`).\n"
       "`c64` runs as `f32` pairs (the `view_as_real` layout, `passes/complex.c`): FFTs as DFT\n"
       "matmuls, views, copies, conjugation, products, quotients and sums of complex tensors; `c128` runs\n"
       "as `c64` (a `UserWarning`); `c32`, other complex ops, sparse layouts and nested tensors\n"
       "are not lowered.\n\n");
  uint32_t grp = 0;
  int count = 0;
  for (int i = 0; i < TRNC_OP_COUNT; i++) count++;
  EMIT("%d ops.\n", count);
  /* Group by the group bit, in table order of first appearance. */
  bool done[TRNC_OP_COUNT] = {false};
  for (int i = 0; i < TRNC_OP_COUNT; i++) {
    if (done[i]) continue;
    grp = trnc_op_defs[i].flags & TRNC_OPF_GROUPS;
    EMIT("\n## %s\n\n| aten op | trnc op | dtypes | max rank | limits |\n|---|---|---|---|---|\n",
         trnc_op_group((trnc_op)i));
    for (int j = i; j < TRNC_OP_COUNT; j++) {
      if (done[j] || (trnc_op_defs[j].flags & TRNC_OPF_GROUPS) != grp) continue;
      done[j] = true;
      trnc_op_info info;
      trnc_op_get_info((size_t)j, &info);
      EMIT("| `%s` | %s | %s | %d | %s |\n", info.fx_target, info.name, info.dtypes, info.max_rank,
           info.limits[0] ? info.limits : "—");
    }
  }
#undef EMIT
  return buf;
}
