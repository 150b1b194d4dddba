/*
 * data.c — data movement as kernel IR: cat, stack, constant_pad_nd, the
 * slice scatters (slice_scatter, select_scatter, as_strided_scatter) and
 * the functional copy_ (src broadcast and converted to self's shape; of one
 * dtype, lw_emit_copy, as a lone clone).
 *
 * Each is one NeuronCore kernel of map parts (kir_emit_part), every part a
 * kir kernel over the dims of one slice of the result: `load` of an input
 * through its access map (views, transposes and crops cost nothing), a
 * `copy` where the dtypes differ, and a `store` into the slice; or a
 * `const` fill and its store.
 *
 *  cat / stack    one part per input into its slice along the dim (an input
 *                 its producer already wrote in place, codegen/lower.c, is
 *                 skipped);
 *  pad            the interior (the input cropped by negative pads) and the
 *                 border as at most 2 * rank fill boxes: box d covers the
 *                 interior along dims < d, one side of dim d and all of the
 *                 dims > d, so the parts are disjoint and their DMAs run in
 *                 parallel;
 *  slice scatters the same decomposition with self in place of the fill
 *                 where the slice is a box (step 1, select); otherwise self
 *                 then src as ordered parts (the overlapping stores land in
 *                 program order through an HBM token).
 */
#include <string.h>

#include "codegen/kir/kir.h"

static trnc_ref vref(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return (a && a->kind == TRNC_ARG_VALUE) ? a->u.ref : TRNC_NO_REF;
}

static int64_t wrapdim(int64_t d, int rank) {
  int r = rank ? rank : 1;
  return d < 0 ? d + r : d;
}

bool kir_data_handles(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  switch (n->op) {
    case TRNC_OP_CAT: case TRNC_OP_STACK: return true;
    case TRNC_OP_COPY: return vref(n, 0) != TRNC_NO_REF && vref(n, 1) != TRNC_NO_REF;
    case TRNC_OP_CONSTANT_PAD_ND: return vref(n, 0) != TRNC_NO_REF;
    case TRNC_OP_SLICE_SCATTER: case TRNC_OP_SELECT_SCATTER: case TRNC_OP_AS_STRIDED_SCATTER:
      return vref(n, 0) != TRNC_NO_REF && vref(n, 1) != TRNC_NO_REF;
    default: return false;
  }
}

/* One part: dst <- src (converted to dst's dtype), or dst <- value when src
 * is NULL; src has dst's shape. The kernel's axes are dst's dims. */
static trnc_status part(lw *L, const trnc_node *n, kir_parts *P, const lw_tv *dst, const lw_tv *src,
                        float value) {
  if (dst->buffer < 0 || trnc_type_numel(&dst->t) == 0) return TRNC_OK;
  if (src && src->buffer < 0) return TRNC_OK; /* nothing materialized to copy (no elements) */
  kir_kernel *k = trnc_arena_alloc(&L->arena, sizeof *k);
  if (!k) return lw_fail(L, NULL, TRNC_ERR_NOMEM, "out of memory");
  int rank = dst->t.rank, axis_of[TRNC_MAX_RANK];
  int64_t ext[KIR_MAX_AXES];
  for (int d = 0; d < rank; d++) {
    ext[d] = dst->t.shape[d];
    axis_of[d] = d;
  }
  int naxes = rank ? rank : 1;
  if (!rank) ext[0] = 1; /* a 0-d slice is one element on one axis */
  kir_init(k, trnc_op_name(n->op), n, naxes, ext, 0);
  int t = kir_tensor_add(k, dst, axis_of), v;
  if (src) {
    int s = kir_tensor_add(k, src, axis_of);
    v = s < 0 ? -1 : kir_load(k, s, src->t.dtype);
    if (v >= 0 && src->t.dtype != dst->t.dtype) v = kir_copy(k, dst->t.dtype, v);
  } else {
    v = kir_const(k, dst->t.dtype, (uint32_t)((1ull << naxes) - 1), value);
  }
  if (t < 0 || v < 0 || !kir_store(k, t, v)) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel too large");
  const char *bad = kir_verify(k);
  if (bad) return lw_fail(L, n, TRNC_ERR_INTERNAL, "kernel IR of %s is invalid: %s", k->name, bad);
  return kir_emit_part(L, k, P);
}

/* tv restricted to the box [start[d], start[d] + len[d]) of its dims. */
static lw_tv box_of(const lw_tv *tv, const int64_t *start, const int64_t *len) {
  lw_tv b = *tv;
  for (int d = 0; d < tv->t.rank; d++) {
    b.t.offset += start[d] * tv->t.stride[d];
    b.t.shape[d] = len[d];
  }
  return b;
}

/* Every element of out outside the box [lo[d], lo[d] + keep[d]) gets self's
 * element (self: out's shape) or `value` (self NULL): the disjoint boxes of
 * the header comment. */
static trnc_status border(lw *L, const trnc_node *n, kir_parts *P, const lw_tv *out, const lw_tv *self,
                          float value, const int64_t *lo, const int64_t *keep) {
  int rank = out->t.rank;
  for (int d = 0; d < rank; d++)
    for (int side = 0; side < 2; side++) {
      int64_t start[TRNC_MAX_RANK], len[TRNC_MAX_RANK];
      for (int j = 0; j < rank; j++) {
        start[j] = j < d ? lo[j] : 0;
        len[j] = j < d ? keep[j] : out->t.shape[j];
      }
      start[d] = side ? lo[d] + keep[d] : 0;
      len[d] = side ? out->t.shape[d] - lo[d] - keep[d] : lo[d];
      if (len[d] <= 0) continue;
      lw_tv db = box_of(out, start, len), sb;
      if (self) sb = box_of(self, start, len);
      trnc_status st = part(L, n, P, &db, self ? &sb : NULL, value);
      if (st) return st;
    }
  return TRNC_OK;
}

/* s already is dst (a producer wrote its slice in place: codegen/lower.c). */
static bool in_place(const lw_tv *dst, const lw_tv *s) {
  if (s->buffer != dst->buffer || s->t.offset != dst->t.offset || s->t.rank != dst->t.rank) return false;
  for (int k = 0; k < s->t.rank; k++)
    if (s->t.shape[k] != dst->t.shape[k] || (s->t.shape[k] > 1 && s->t.stride[k] != dst->t.stride[k]))
      return false;
  return true;
}

static trnc_status emit_cat(lw *L, const trnc_node *n, kir_parts *P) {
  const lw_tv *o = &L->tv[n->outs[0]];
  const trnc_arg *l = trnc_node_arg(n, 0);
  bool stack = n->op == TRNC_OP_STACK;
  int d = (int)wrapdim(trnc_arg_int(n, 1, 0), o->t.rank);
  int64_t at = 0;
  for (uint32_t i = 0; l && l->kind == TRNC_ARG_LIST && i < l->u.list.n; i++) {
    const lw_tv *s = &L->tv[l->u.list.items[i].u.ref];
    if (!stack && s->t.rank == 1 && s->t.shape[0] == 0 && o->t.rank != 1) continue; /* legacy skip */
    lw_tv dst = *o;
    if (stack) {
      /* select index i of dim d: the slice has the input's shape */
      dst.t.offset += (int64_t)i * o->t.stride[d];
      dst.t.rank = o->t.rank - 1;
      for (int j = 0, k = 0; j < o->t.rank; j++) {
        if (j == d) continue;
        dst.t.shape[k] = o->t.shape[j];
        dst.t.stride[k] = o->t.stride[j];
        k++;
      }
    } else {
      dst.t.offset += at * o->t.stride[d];
      dst.t.shape[d] = s->t.shape[d];
      at += s->t.shape[d];
    }
    if (trnc_type_numel(&dst.t) == 0 || in_place(&dst, s)) continue;
    trnc_status st = part(L, n, P, &dst, s, 0);
    if (st) return st;
  }
  return TRNC_OK;
}

static trnc_status emit_pad(lw *L, const trnc_node *n, kir_parts *P) {
  const lw_tv *x = &L->tv[vref(n, 0)], *o = &L->tv[n->outs[0]];
  const trnc_arg *pl = trnc_node_arg(n, 1);
  float value = (float)trnc_arg_number(trnc_node_arg(n, 2), 0);
  /* interior: x cropped by negative pads, placed at the positive pads */
  lw_tv src = *x;
  int64_t lo[TRNC_MAX_RANK], keep[TRNC_MAX_RANK];
  for (int d = 0; d < o->t.rank; d++) {
    lo[d] = 0;
    keep[d] = o->t.shape[d];
  }
  uint32_t np = pl && pl->kind == TRNC_ARG_LIST ? pl->u.list.n : 0;
  for (uint32_t i = 0; i + 1 < np && i / 2 < (uint32_t)x->t.rank; i += 2) {
    int dim = x->t.rank - 1 - (int)(i / 2);
    int64_t a = pl->u.list.items[i].u.i, b = pl->u.list.items[i + 1].u.i;
    int64_t clo = a < 0 ? -a : 0, chi = b < 0 ? -b : 0;
    int64_t kp = x->t.shape[dim] - clo - chi;
    if (kp < 0) kp = 0;
    src.t.offset += clo * x->t.stride[dim];
    src.t.shape[dim] = kp;
    lo[dim] = a > 0 ? a : 0;
    keep[dim] = kp;
  }
  if (trnc_type_numel(&src.t) == 0 || src.buffer < 0) return part(L, n, P, o, NULL, value); /* all border */
  lw_tv dst = box_of(o, lo, keep);
  trnc_status st = border(L, n, P, o, NULL, value, lo, keep);
  return st ? st : part(L, n, P, &dst, &src, 0);
}

/* slice_scatter / select_scatter / as_strided_scatter: out <- self outside
 * the slice (selection, strided view), the slice <- src. */
static trnc_status emit_slice_scatter(lw *L, const trnc_node *n, kir_parts *P) {
  const lw_tv *x = &L->tv[vref(n, 0)], *src = &L->tv[vref(n, 1)], *o = &L->tv[n->outs[0]];
  int rank = o->t.rank;
  int d = (int)wrapdim(trnc_arg_int(n, 2, 0), rank);
  lw_tv dst = *o;
  int64_t lo[TRNC_MAX_RANK], keep[TRNC_MAX_RANK];
  for (int j = 0; j < rank; j++) {
    lo[j] = 0;
    keep[j] = o->t.shape[j];
  }
  bool is_box = false;
  if (n->op == TRNC_OP_SELECT_SCATTER) {
    int64_t idx = trnc_arg_int(n, 3, 0);
    if (idx < 0) idx += o->t.shape[d];
    dst.t.offset += idx * o->t.stride[d];
    for (int j = d; j + 1 < rank; j++) {
      dst.t.shape[j] = o->t.shape[j + 1];
      dst.t.stride[j] = o->t.stride[j + 1];
    }
    dst.t.rank = (uint8_t)(rank - 1);
    lo[d] = idx;
    keep[d] = 1;
    is_box = true;
  } else if (n->op == TRNC_OP_AS_STRIDED_SCATTER) {
    /* the view over self's storage, which the op check requires to be self
     * (contiguous, offset 0); out has that layout in trnc's buffer too */
    int64_t expect = 1;
    for (int j = rank - 1; j >= 0; j--) {
      if (o->t.shape[j] > 1 && o->t.stride[j] != expect)
        return lw_fail(L, n, TRNC_ERR_INTERNAL, "as_strided_scatter: result is not contiguous");
      expect *= o->t.shape[j];
    }
    const trnc_arg *sz = trnc_node_arg(n, 2), *sd = trnc_node_arg(n, 3);
    dst.t.rank = (uint8_t)sz->u.list.n;
    for (uint32_t j = 0; j < sz->u.list.n; j++) {
      dst.t.shape[j] = sz->u.list.items[j].u.i;
      dst.t.stride[j] = sd->u.list.items[j].u.i;
    }
    const trnc_arg *so = trnc_node_arg(n, 4);
    dst.t.offset = o->t.offset + (so && so->kind == TRNC_ARG_INT ? so->u.i : 0);
  } else {
    int64_t size = o->t.shape[d], step = trnc_arg_int(n, 5, 1);
    const trnc_arg *sa = trnc_node_arg(n, 3), *ea = trnc_node_arg(n, 4);
    int64_t start = sa && sa->kind == TRNC_ARG_INT ? sa->u.i : 0;
    int64_t end = ea && ea->kind == TRNC_ARG_INT ? ea->u.i : size;
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : (start > size ? size : start);
    end = end < start ? start : (end > size ? size : end);
    if (step < 1) return lw_fail(L, n, TRNC_ERR_INTERNAL, "slice_scatter: step %lld", (long long)step);
    dst.t.offset += start * o->t.stride[d];
    dst.t.shape[d] = (end - start + step - 1) / step;
    dst.t.stride[d] = o->t.stride[d] * step;
    lo[d] = start;
    keep[d] = dst.t.shape[d];
    is_box = step == 1 || dst.t.shape[d] <= 1;
  }
  bool empty = trnc_type_numel(&dst.t) == 0 || src->buffer < 0;
  if (empty) return x->buffer >= 0 ? part(L, n, P, o, x, 0) : TRNC_OK;
  trnc_status st;
  if (is_box && x->buffer >= 0 && x->t.rank == rank) {
    if ((st = border(L, n, P, o, x, 0, lo, keep))) return st;
    return part(L, n, P, &dst, src, 0);
  }
  P->ordered = true;
  if (x->buffer >= 0 && (st = part(L, n, P, o, x, 0))) return st;
  return part(L, n, P, &dst, src, 0);
}

/* functional copy_(self, src): src broadcast (right-aligned) and converted
 * to self's shape and dtype. */
static trnc_status emit_copy(lw *L, const trnc_node *n, kir_parts *P) {
  const lw_tv *src = &L->tv[vref(n, 1)], *o = &L->tv[n->outs[0]];
  if (src->buffer < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "copy_: src not in HBM");
  /* as a lone clone (codegen/kir/build.c): lw_emit_copy flips a
   * transposing copy block by block on TensorE */
  if (src->t.dtype == o->t.dtype) return lw_emit_copy(L, o, src, "copy");
  lw_tv b = *src;
  int rank = o->t.rank, off = rank - src->t.rank;
  if (off < 0) return lw_fail(L, n, TRNC_ERR_INTERNAL, "copy_: src of a higher rank than self");
  b.t.rank = (uint8_t)rank;
  for (int d = 0; d < rank; d++) {
    int sd = d - off;
    b.t.shape[d] = o->t.shape[d];
    b.t.stride[d] = sd < 0 || src->t.shape[sd] == 1 ? 0 : src->t.stride[sd];
  }
  return part(L, n, P, o, &b, 0);
}

trnc_status kir_emit_data(lw *L, const trnc_node *n) {
  const lw_tv *o = &L->tv[n->outs[0]];
  if (o->buffer < 0 || trnc_type_numel(&o->t) == 0) return TRNC_OK;
  kir_parts P;
  memset(&P, 0, sizeof P);
  P.max_free = trnc_type_numel(&o->t);
  switch (n->op) {
    case TRNC_OP_CAT: case TRNC_OP_STACK: return emit_cat(L, n, &P);
    case TRNC_OP_CONSTANT_PAD_ND: return emit_pad(L, n, &P);
    case TRNC_OP_COPY: return emit_copy(L, n, &P);
    case TRNC_OP_SLICE_SCATTER: case TRNC_OP_SELECT_SCATTER: case TRNC_OP_AS_STRIDED_SCATTER:
      return emit_slice_scatter(L, n, &P);
    default: return lw_fail(L, n, TRNC_ERR_INTERNAL, "kir data: unexpected op %s", n->target);
  }
}
