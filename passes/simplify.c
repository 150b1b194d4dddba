/*
 * simplify.c — algebraic simplification.
 *
 * Rewrites, in graph order (so chains collapse as the sweep advances):
 *
 *  1. Identity copies. clone, _to_copy (no dtype change, no layout/device/
 *     pin_memory request) and alias whose declared result type is
 *     equivalent to the input's (util.h) are forwarded to the input.
 *  2. Exact arithmetic identities, when the result type is equivalent to
 *     the input's (no promotion, no broadcasting):
 *       x * 1, x / 1 (float)      exact for every x, -0.0 and inf included
 *       x - 0 with alpha 1        x + (-1 * +0) = x + (-0) = x, exact
 *       x + (-0.0) with alpha 1   exact
 *       x + 0, x - 0 (integers)   exact
 *     Deliberately NOT simplified: float x + 0 (-0.0 + 0 is +0.0, so it is
 *     not an identity in IEEE arithmetic), x - (-0.0), any alpha != 1 for
 *     floats (torch fuses alpha * other + self). The scalar may be a Python
 *     number or a constant tensor whose every element is the identity.
 *     A signalling NaN stays signalling where the op would have quieted it.
 *  3. View identities. A true view (or alias) whose declared type is
 *     equivalent to that of a value it (transitively, through true views)
 *     views shares that value's storage, dtype, shape, strides and offset,
 *     so it *is* that value: forwarded to the farthest such ancestor. This
 *     covers view/reshape/expand to the same shape, identity permutes,
 *     transpose-transpose, unsqueeze-squeeze and any chain that returns to
 *     where it started.
 *  4. Reshape chains. view/_unsafe_view/reshape of a chain of
 *     view/_unsafe_view/reshape/alias reads its elements in the same
 *     row-major order as the chain's start, so it is rewired to the
 *     farthest value in the chain it can view directly (torch's view
 *     stride rule must succeed there, and the node's shape rule must still
 *     give its declared type, strides included).
 *  5. Permutation chains. permute/transpose/t of permute/transpose/t
 *     becomes one permute of the inner input (composed dims); an identity
 *     composition is removed by rule 3.
 *
 * "Forwarding" rewrites every use to the replacement and marks the node
 * dead. Graph outputs move only as trnc_pu_output_redirect_ok allows (exact
 * declared type; no new aliasing with inputs, constants or other outputs);
 * a node still named by an output stays live.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "passes/passes.h"
#include "passes/util.h"

#define MAX_CHAIN 32
#define MAX_ARGS 16

static bool is_reduced_or_float(trnc_dtype t) {
  return t == TRNC_F32 || t == TRNC_BF16 || t == TRNC_F16 || t == TRNC_F64;
}
static bool is_int_dtype(trnc_dtype t) {
  return t == TRNC_I64 || t == TRNC_I32 || t == TRNC_I16 || t == TRNC_I8 || t == TRNC_U8;
}

static trnc_ref in0(const trnc_node *n) {
  return n->nargs >= 1 && n->args[0].kind == TRNC_ARG_VALUE ? n->args[0].u.ref : TRNC_NO_REF;
}

static const trnc_type *out_type(const trnc_graph *g, const trnc_node *n) {
  return &g->values[n->outs[0]].type;
}

/* Sweep state: forwarded values map to their replacement (repl), applied
 * to each node's arguments when the sweep reaches it; graph outputs are
 * redirected at the end of the sweep. */
typedef struct simp {
  trnc_graph *g;
  trnc_ref *repl;     /* per value */
  bool *forwarded;    /* per node: forwarded (dead, or kept for a graph output) */
  bool *is_out;       /* per value: named by a graph output slot */
} simp;

static trnc_ref resolve(const simp *s, trnc_ref r) {
  while (s->repl[r] != r) r = s->repl[r];
  return r;
}

static void canon_arg(const simp *s, trnc_arg *a) {
  if (a->kind == TRNC_ARG_VALUE) a->u.ref = resolve(s, a->u.ref);
  else if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) canon_arg(s, &a->u.list.items[i]);
}

/* Forwards n's single output to `to`: later arguments are rewritten as the
 * sweep reaches them; n is dead unless a graph output names it. */
static bool forward(simp *s, trnc_node *n, trnc_ref to) {
  s->repl[n->outs[0]] = to;
  s->forwarded[s->g->values[n->outs[0]].node] = true;
  if (!s->is_out[n->outs[0]]) n->dead = true;
  return true;
}

static bool arg_is_none_or(const trnc_arg *a, trnc_arg_kind k, int64_t v) {
  return a->kind == TRNC_ARG_NONE || (a->kind == k && a->u.i == v);
}

/* ---- 1. identity copies ------------------------------------------------- */

static bool copy_is_plain(const trnc_node *n) {
  if (n->op == TRNC_OP_CLONE || n->op == TRNC_OP_ALIAS) return true;
  if (n->op != TRNC_OP_TO_COPY || n->nargs != 7) return false;
  /* (self, dtype, layout, device, pin_memory, non_blocking, memory_format);
   * the dtype is checked through the result type. */
  return arg_is_none_or(&n->args[2], TRNC_ARG_LAYOUT, 1) && n->args[3].kind == TRNC_ARG_NONE &&
         (n->args[4].kind == TRNC_ARG_NONE ||
          (n->args[4].kind == TRNC_ARG_BOOL && !n->args[4].u.b));
}

/* ---- 2. arithmetic identities ---------------------------------------------- */

/* Element e of constant bytes of dtype dt as a double; false if unsupported. */
static bool const_elem(const uint8_t *p, trnc_dtype dt, size_t e, double *out) {
  switch (dt) {
    case TRNC_F32: {
      float f;
      memcpy(&f, p + 4 * e, 4);
      *out = f;
      return true;
    }
    case TRNC_BF16: {
      uint32_t bits = (uint32_t)(p[2 * e] | p[2 * e + 1] << 8) << 16;
      float f;
      memcpy(&f, &bits, 4);
      *out = f;
      return true;
    }
    case TRNC_I64: {
      int64_t v;
      memcpy(&v, p + 8 * e, 8);
      *out = (double)v;
      return true;
    }
    case TRNC_I32: {
      int32_t v;
      memcpy(&v, p + 4 * e, 4);
      *out = v;
      return true;
    }
    default: return false;
  }
}

/* True if argument a is a number, or a constant tensor, all of whose
 * values have the bit pattern of `want` (so -0.0 and +0.0 differ). */
static bool arg_is(const trnc_graph *g, const trnc_arg *a, double want) {
  double v;
  switch (a->kind) {
    case TRNC_ARG_INT: v = (double)a->u.i; break;
    case TRNC_ARG_FLOAT: v = a->u.f; break;
    case TRNC_ARG_VALUE: {
      const trnc_node *c = &g->nodes[g->values[a->u.ref].node];
      if (c->op != TRNC_OP_CONSTANT || !c->data) return false;
      const trnc_type *t = &g->values[a->u.ref].type;
      int64_t numel = trnc_type_numel(t);
      if (numel < 1 || numel > 4096) return false;
      for (int64_t e = 0; e < numel; e++)
        if (!const_elem(c->data, t->dtype, (size_t)e, &v) || memcmp(&v, &want, sizeof v))
          return false;
      return true;
    }
    default: return false;
  }
  return !memcmp(&v, &want, sizeof v);
}

static bool alpha_is_one(const trnc_node *n, uint32_t i) {
  const trnc_arg *a = trnc_node_arg(n, i);
  return a && ((a->kind == TRNC_ARG_INT && a->u.i == 1) ||
               (a->kind == TRNC_ARG_FLOAT && a->u.f == 1.0));
}

/* True if n computes exactly its first input (given that the result type
 * equals the input's, checked by the caller). */
static bool arith_identity(const trnc_graph *g, const trnc_node *n) {
  trnc_dtype dt = out_type(g, n)->dtype;
  bool fl = is_reduced_or_float(dt), in = is_int_dtype(dt);
  if (!fl && !in) return false;
  const trnc_arg *o = trnc_node_arg(n, 1);
  if (!o) return false;
  switch (n->op) {
    case TRNC_OP_MUL:
    case TRNC_OP_MUL_SCALAR: return arg_is(g, o, 1.0);
    case TRNC_OP_DIV:
    case TRNC_OP_DIV_SCALAR: return fl && arg_is(g, o, 1.0);
    case TRNC_OP_SUB:
    case TRNC_OP_SUB_SCALAR:
      return alpha_is_one(n, 2) && (arg_is(g, o, 0.0) || (in && arg_is(g, o, -0.0)));
    case TRNC_OP_ADD:
    case TRNC_OP_ADD_SCALAR:
      return alpha_is_one(n, 2) && ((fl && arg_is(g, o, -0.0)) || (in && arg_is(g, o, 0.0)));
    default: return false;
  }
}

/* ---- 3. view identities ------------------------------------------------------- */

/* True if n's result shares its input's storage (true view or alias). */
static bool shares_storage(const trnc_graph *g, const trnc_node *n) {
  if (n->dead || in0(n) == TRNC_NO_REF) return false;
  return n->op == TRNC_OP_ALIAS || trnc_pu_is_true_view(g, n);
}

/* Collects the values n transitively views: chain[0] = n's input, then the
 * input of chain[i] while chain[i] is itself a sharing node. */
static int view_ancestors(const trnc_graph *g, const trnc_node *n, trnc_ref *chain) {
  int k = 0;
  trnc_ref r = in0(n);
  while (k < MAX_CHAIN && r != TRNC_NO_REF) {
    chain[k++] = r;
    const trnc_node *p = &g->nodes[g->values[r].node];
    if (!shares_storage(g, p)) break;
    r = in0(p);
  }
  return k;
}

/* ---- 4./5. rewiring ------------------------------------------------------------- */

static bool is_reshape(trnc_op op) {
  return op == TRNC_OP_VIEW || op == TRNC_OP_UNSAFE_VIEW || op == TRNC_OP_RESHAPE;
}
static bool is_perm(trnc_op op) {
  return op == TRNC_OP_PERMUTE || op == TRNC_OP_TRANSPOSE || op == TRNC_OP_T;
}

/* True if n's shape rule, with argument 0 replaced by `x` (and op replaced
 * by `op`), accepts n's declared output type. */
static bool rule_accepts_with(const trnc_graph *g, const trnc_node *n, trnc_op op, trnc_ref x) {
  if (n->nargs > MAX_ARGS || n->nouts != 1) return false;
  trnc_arg args[MAX_ARGS];
  memcpy(args, n->args, sizeof(trnc_arg) * n->nargs);
  args[0].u.ref = x;
  trnc_node tmp = *n;
  tmp.op = op;
  tmp.args = args;
  trnc_type want[1];
  return trnc_pu_rule(g, &tmp, want) && trnc_pu_rule_accepts(&want[0], out_type(g, n));
}

/* True if the rule for `view` on x with n's size argument succeeds. */
static bool viewable_from(const trnc_graph *g, const trnc_node *n, trnc_ref x) {
  if (n->nargs > MAX_ARGS) return false;
  trnc_arg args[MAX_ARGS];
  memcpy(args, n->args, sizeof(trnc_arg) * n->nargs);
  args[0].u.ref = x;
  trnc_node tmp = *n;
  tmp.op = TRNC_OP_VIEW;
  tmp.args = args;
  trnc_type want[1];
  return trnc_pu_rule(g, &tmp, want);
}

/* Rule 4: rewires a reshape-family node to the farthest reshape-chain value
 * it can view. Returns true if changed. */
static bool collapse_reshape(trnc_graph *g, trnc_node *n) {
  trnc_ref chain[MAX_CHAIN];
  int k = 0;
  trnc_ref r = in0(n);
  while (k < MAX_CHAIN) {
    const trnc_node *p = &g->nodes[g->values[r].node];
    if (p->dead || !(is_reshape(p->op) || p->op == TRNC_OP_ALIAS) || in0(p) == TRNC_NO_REF) break;
    r = in0(p);
    chain[k++] = r;
  }
  for (int i = k - 1; i >= 0; i--) {
    if (viewable_from(g, n, chain[i]) && rule_accepts_with(g, n, n->op, chain[i])) {
      n->args[0].u.ref = chain[i];
      return true;
    }
  }
  return false;
}

/* The permutation a perm-family node applies (out dim i = in dim p[i]) for
 * an input of rank `rank`; false if the arguments are unusable. */
static bool perm_of(const trnc_node *n, int rank, int64_t *p) {
  for (int i = 0; i < rank; i++) p[i] = i;
  if (n->op == TRNC_OP_T) {
    if (rank == 2) p[0] = 1, p[1] = 0;
    return rank <= 2;
  }
  if (n->op == TRNC_OP_TRANSPOSE) {
    if (n->nargs != 3 || n->args[1].kind != TRNC_ARG_INT || n->args[2].kind != TRNC_ARG_INT)
      return false;
    int64_t a = n->args[1].u.i, b = n->args[2].u.i, r = rank ? rank : 1;
    if (a < -r || a >= r || b < -r || b >= r) return false;
    if (a < 0) a += r;
    if (b < 0) b += r;
    if (rank == 0) return true;
    p[a] = b;
    p[b] = a;
    return true;
  }
  const trnc_arg *l = trnc_node_arg(n, 1);
  if (!l || l->kind != TRNC_ARG_LIST || l->u.list.n != (uint32_t)rank) return false;
  for (int i = 0; i < rank; i++) {
    const trnc_arg *it = &l->u.list.items[i];
    if (it->kind != TRNC_ARG_INT || it->u.i < -rank || it->u.i >= rank) return false;
    p[i] = it->u.i < 0 ? it->u.i + rank : it->u.i;
  }
  return true;
}

/* Rule 5: perm(perm(x)) -> permute(x, composed). Returns true if changed;
 * NOMEM leaves the node as it was. */
static bool compose_perms(trnc_graph *g, trnc_node *n) {
  trnc_ref mid = in0(n);
  const trnc_node *p = &g->nodes[g->values[mid].node];
  if (p->dead || !is_perm(p->op) || in0(p) == TRNC_NO_REF) return false;
  trnc_ref x = in0(p);
  int rank = trnc_ref_type(g, x)->rank;
  int64_t pin[TRNC_MAX_RANK], pout[TRNC_MAX_RANK];
  if (rank > TRNC_MAX_RANK || !perm_of(p, rank, pin) || !perm_of(n, rank, pout)) return false;
  trnc_arg *args = trnc_arena_array(&g->arena, 2, sizeof(trnc_arg));
  trnc_arg *items = trnc_arena_array(&g->arena, rank ? (size_t)rank : 1, sizeof(trnc_arg));
  if (!args || !items) return false;
  for (int i = 0; i < rank; i++) {
    items[i].kind = TRNC_ARG_INT;
    items[i].name = "";
    items[i].u.i = pin[pout[i]];
  }
  args[0].kind = TRNC_ARG_VALUE;
  args[0].name = "self";
  args[0].u.ref = x;
  args[1].kind = TRNC_ARG_LIST;
  args[1].name = "dims";
  args[1].u.list.items = items;
  args[1].u.list.n = (uint32_t)rank;
  trnc_node tmp = *n;
  tmp.op = TRNC_OP_PERMUTE;
  tmp.args = args;
  tmp.nargs = 2;
  trnc_type want[1];
  if (!trnc_pu_rule(g, &tmp, want) || !trnc_pu_rule_accepts(&want[0], out_type(g, n)))
    return false;
  n->op = TRNC_OP_PERMUTE;
  n->target = trnc_op_defs[TRNC_OP_PERMUTE].target;
  n->args = args;
  n->nargs = 2;
  return true;
}

/* Applies rules 1-5 to one node; true if the graph changed. */
static bool simplify_node(simp *s, uint32_t i) {
  trnc_graph *g = s->g;
  trnc_node *n = &g->nodes[i];
  if (n->dead) return false;
  for (uint32_t a = 0; a < n->nargs; a++) canon_arg(s, &n->args[a]);
  if (s->forwarded[i] || (unsigned)n->op >= TRNC_OP_COUNT || n->nouts != 1 ||
      in0(n) == TRNC_NO_REF)
    return false;
  if (g->values[n->outs[0]].is_none) return false;
  const trnc_type *t = out_type(g, n);
  trnc_ref x = in0(n);
  /* 1 and 2: fresh results equal to the input. */
  if ((copy_is_plain(n) || arith_identity(g, n)) &&
      trnc_pu_type_equiv(t, trnc_ref_type(g, x)) && n->op != TRNC_OP_ALIAS)
    return forward(s, n, x);
  /* 3: views equal to what they view. */
  if (shares_storage(g, n)) {
    trnc_ref chain[MAX_CHAIN];
    int k = view_ancestors(g, n, chain);
    for (int i = k - 1; i >= 0; i--)
      if (trnc_pu_type_equiv(t, trnc_ref_type(g, chain[i]))) return forward(s, n, chain[i]);
  }
  /* 4 and 5: rewire chains. A graph output must keep aliasing what it
   * aliased (rule 4 may move a view across an _unsafe_view). */
  trnc_ref old_root = trnc_pu_storage_root(g, n->outs[0]);
  trnc_node saved = *n;
  bool changed = false;
  if (is_reshape(n->op)) changed = collapse_reshape(g, n);
  else if (is_perm(n->op)) changed = compose_perms(g, n);
  if (changed && s->is_out[n->outs[0]] &&
      trnc_pu_storage_root(g, n->outs[0]) != old_root) {
    *n = saved;   /* undo (compose_perms replaces op and args) */
    n->args[0].u.ref = x;
    return false;
  }
  return changed;
}

/* Marks the values named by graph outputs. */
static void mark_outputs(simp *s) {
  memset(s->is_out, 0, sizeof(bool) * s->g->nvalues);
  for (uint32_t k = 0; k < s->g->noutputs; k++)
    if (s->g->outputs[k] != TRNC_NO_REF) s->is_out[s->g->outputs[k]] = true;
}

/* End of a sweep: moves graph outputs to the replacements of forwarded
 * values where trnc_pu_output_redirect_ok allows it, then kills forwarded
 * nodes no output names any more. */
static void redirect_outputs(simp *s) {
  trnc_graph *g = s->g;
  for (uint32_t k = 0; k < g->noutputs; k++) {
    trnc_ref o = g->outputs[k];
    if (o == TRNC_NO_REF) continue;
    trnc_ref r = resolve(s, o);
    if (r != o && trnc_pu_output_redirect_ok(g, o, r)) g->outputs[k] = r;
  }
  mark_outputs(s);
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_node *n = &g->nodes[i];
    if (s->forwarded[i] && !n->dead && !s->is_out[n->outs[0]]) n->dead = true;
  }
}

/* Sweeps the graph until nothing changes (each change removes a node or
 * shortens a chain; capped at 8 sweeps). Errors: TRNC_ERR_NOMEM. */
trnc_status trnc_pass_simplify(trnc_graph *g, trnc_diags *d) {
  simp s = {g, malloc(sizeof(trnc_ref) * (g->nvalues ? g->nvalues : 1)),
            calloc(g->nnodes ? g->nnodes : 1, sizeof(bool)),
            calloc(g->nvalues ? g->nvalues : 1, sizeof(bool))};
  if (!s.repl || !s.forwarded || !s.is_out) {
    free(s.repl);
    free(s.forwarded);
    free(s.is_out);
    return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in simplify");
  }
  for (uint32_t v = 0; v < g->nvalues; v++) s.repl[v] = v;
  mark_outputs(&s);
  for (int sweep = 0; sweep < 8; sweep++) {
    bool changed = false;
    for (uint32_t i = 0; i < g->nnodes; i++) changed |= simplify_node(&s, i);
    redirect_outputs(&s);
    if (!changed) break;
  }
  free(s.repl);
  free(s.forwarded);
  free(s.is_out);
  return TRNC_OK;
}
