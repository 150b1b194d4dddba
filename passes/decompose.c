/*
 * decompose.c — the decompose pass and the builder its decompositions use
 * (see decompose.h).
 *
 * The pass rebuilds the node array in one walk: a node without a
 * decomposition is copied; a node with one is replaced, in place, by the
 * nodes its decomposition emits, so the array stays topologically ordered.
 * New values are appended to the graph's value array; the decomposed node's
 * own output values are re-bound to the nodes that now produce them, so no
 * use elsewhere in the graph changes. Which op has which decomposition is
 * the decomp column of ir/ops.def, expanded below.
 */
#include "passes/decompose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape.h"
#include "passes/passes.h"
#include "passes/util.h"

#define MAX_OUTS 64 /* outputs of a decomposed node (the table's ops have at most 5) */

static const trnc_decomp_fn decomps[TRNC_OP_COUNT] = {
#define OP(id, target, flags, args, rule, dtypes, rank, check, limits, decomp) decomp,
#include "ir/ops.def"
#undef OP
};

struct trnc_db {
  trnc_graph *g;
  trnc_diags *d;
  trnc_node *nodes;          /* the rebuilt node array (malloc'd) */
  uint32_t nnodes, cap;
  uint32_t vcap;             /* capacity of g->values */
  const trnc_node *src;      /* node being decomposed (in the old array) */
  uint32_t first;            /* index of its first emitted node */
  bool bound[MAX_OUTS];
  trnc_ref from[MAX_OUTS], to[MAX_OUTS]; /* emitted values re-bound to src's outputs */
  uint32_t nremap;
  bool keep;                 /* the decomposition kept the node (trnc_db_keep) */
  trnc_status st;
  trnc_ref seed;             /* the rng_seed input (TRNC_NO_REF: no random op) */
  trnc_db_pick pick;         /* NULL: the decompose pass (the table's decomp column) */
  int64_t next_block;        /* first unused 128-bit Philox block of this call */
};

/* ---- arguments ---------------------------------------------------------------- */

trnc_arg trnc_db_val(trnc_ref r) { return (trnc_arg){.kind = TRNC_ARG_VALUE, .name = "", .u.ref = r}; }
trnc_arg trnc_db_int(int64_t i) { return (trnc_arg){.kind = TRNC_ARG_INT, .name = "", .u.i = i}; }
trnc_arg trnc_db_float(double f) { return (trnc_arg){.kind = TRNC_ARG_FLOAT, .name = "", .u.f = f}; }
trnc_arg trnc_db_bool(bool v) { return (trnc_arg){.kind = TRNC_ARG_BOOL, .name = "", .u.b = v}; }
trnc_arg trnc_db_none(void) { return (trnc_arg){.kind = TRNC_ARG_NONE, .name = ""}; }
trnc_arg trnc_db_dtype(trnc_dtype dt) {
  return (trnc_arg){.kind = TRNC_ARG_DTYPE, .name = "", .u.dtype = dt};
}

/* A list argument of n items, uninitialized (none after running out of memory). */
static trnc_arg list_arg(trnc_db *b, int n, trnc_arg **items) {
  trnc_arg a = {.kind = TRNC_ARG_LIST, .name = ""};
  *items = trnc_arena_array(&b->g->arena, n > 0 ? (size_t)n : 1, sizeof **items);
  if (!*items) {
    if (!b->st) b->st = trnc_diag_error(b->d, TRNC_ERR_NOMEM, "out of memory in decompose");
    return trnc_db_none();
  }
  a.u.list.items = *items;
  a.u.list.n = (uint32_t)n;
  return a;
}

trnc_arg trnc_db_ints(trnc_db *b, const int64_t *items, int n) {
  trnc_arg *it;
  trnc_arg a = list_arg(b, n, &it);
  for (int i = 0; it && i < n; i++) it[i] = trnc_db_int(items[i]);
  return a;
}

trnc_arg trnc_db_list(trnc_db *b, const trnc_arg *items, int n) {
  trnc_arg *it;
  trnc_arg a = list_arg(b, n, &it);
  for (int i = 0; it && i < n; i++) it[i] = items[i];
  return a;
}

trnc_arg trnc_db_vals(trnc_db *b, const trnc_ref *items, int n) {
  trnc_arg *it;
  trnc_arg a = list_arg(b, n, &it);
  for (int i = 0; it && i < n; i++) it[i] = trnc_db_val(items[i]);
  return a;
}

/* ---- builder ------------------------------------------------------------------- */

const trnc_graph *trnc_db_graph(const trnc_db *b) { return b->g; }

trnc_status trnc_db_keep(trnc_db *b) {
  if (b->st) return b->st;
  if (b->nnodes != b->first) return trnc_db_fail(b, "kept a node after emitting others for it");
  b->keep = true;
  return TRNC_OK;
}
const trnc_type *trnc_db_type(const trnc_db *b, trnc_ref r) {
  /* a failed emission's TRNC_NO_REF (or any ref past the graph's values):
   * a 1 x 1 float32 stand-in, so decompositions reading the types of what
   * they emitted stay in bounds until they return the sticky status */
  static const trnc_type none = {.dtype = TRNC_F32, .rank = 2, .shape = {1, 1}, .stride = {1, 1}};
  return r == TRNC_NO_REF || r >= b->g->nvalues ? &none : &b->g->values[r].type;
}
trnc_status trnc_db_status(const trnc_db *b) { return b->st; }

trnc_status trnc_db_fail(trnc_db *b, const char *what) {
  if (b->st) return b->st;
  trnc_diag_loc loc = trnc_node_loc(b->src);
  b->st = trnc_diag_add(b->d, TRNC_SEV_ERROR, TRNC_ERR_INTERNAL, &loc, NULL,
                        "internal error: decomposing %s: %s (please report it with "
                        "TRNC_DUMP_DIR output)", b->src->target, what);
  return b->st;
}

static trnc_status nomem(trnc_db *b) {
  if (!b->st) b->st = trnc_diag_error(b->d, TRNC_ERR_NOMEM, "out of memory in decompose");
  return b->st;
}

/* A new slot at the end of the rebuilt node array. */
static trnc_node *push_node(trnc_db *b) {
  if (b->nnodes == b->cap) {
    uint32_t cap = b->cap * 2 + 16;
    trnc_node *nn = realloc(b->nodes, sizeof *nn * cap);
    if (!nn) return NULL;
    b->nodes = nn;
    b->cap = cap;
  }
  trnc_node *n = &b->nodes[b->nnodes++];
  memset(n, 0, sizeof *n);
  return n;
}

/* A new value of type t produced by output 0 of node `node`. Old value
 * arrays stay allocated in the arena (and old values never change type), so
 * type pointers taken before a growth stay readable. */
static trnc_ref push_value(trnc_db *b, const trnc_type *t, uint32_t node) {
  trnc_graph *g = b->g;
  if (g->nvalues == b->vcap) {
    uint32_t cap = b->vcap * 2 + 64;
    trnc_value *nv = trnc_arena_array(&g->arena, cap, sizeof *nv);
    if (!nv) return TRNC_NO_REF;
    memcpy(nv, g->values, sizeof *nv * g->nvalues);
    g->values = nv;
    b->vcap = cap;
  }
  trnc_ref r = g->nvalues++;
  memset(&g->values[r], 0, sizeof g->values[r]);
  g->values[r].node = node;
  g->values[r].type = *t;
  return r;
}

typedef struct refs_ok {
  bool ok;
} refs_ok;
static void check_emitted_ref(trnc_ref r, void *p) {
  if (r == TRNC_NO_REF) ((refs_ok *)p)->ok = false;
}

/* Every tensor operand within the op's dtypes and rank (what the legality
 * scan checks of imported nodes). */
typedef struct operands_ok {
  const trnc_graph *g;
  const trnc_op_def *def;
  bool ok;
} operands_ok;
static void check_emitted_operand(trnc_ref r, void *p) {
  operands_ok *c = p;
  const trnc_type *t = &c->g->values[r].type;
  if (!(c->def->dtypes & TRNC_DT(t->dtype)) || t->rank > c->def->max_rank) c->ok = false;
}
static bool lowerable_type(const trnc_op_def *def, const trnc_type *t) {
  return (def->dtypes & TRNC_DT(t->dtype)) && t->rank <= def->max_rank;
}

/* Ops with a decomposition that the code generator still lowers itself in
 * some forms (the decomposition covers the rest): a node in such a form is
 * copied, and a decomposition may emit it. */
typedef bool (*lowered_directly_fn)(const trnc_graph *g, const trnc_node *n);
static const lowered_directly_fn lowered_directly[TRNC_OP_COUNT] = {
    [TRNC_OP_COPY] = decomp_copy_lowered_directly,
    [TRNC_OP_CONVOLUTION] = decomp_conv_lowered_directly,
    [TRNC_OP_CONVOLUTION_BACKWARD] = decomp_conv_lowered_directly,
    [TRNC_OP_GATHER] = decomp_gather_lowered_directly,
    [TRNC_OP_SCATTER_VALUE] = decomp_gather_lowered_directly,
    [TRNC_OP_SCATTER_SRC] = decomp_gather_lowered_directly,
    [TRNC_OP_SCATTER_ADD] = decomp_gather_lowered_directly,
    [TRNC_OP_INDEX] = decomp_index_lowered_directly,
    [TRNC_OP_INDEX_PUT] = decomp_index_lowered_directly,
    [TRNC_OP_ADDMM] = decomp_beta_lowered_directly,
    [TRNC_OP_BADDBMM] = decomp_beta_lowered_directly,
    [TRNC_OP_LAYER_NORM_BACKWARD] = decomp_lnbw_lowered_directly,
    [TRNC_OP_MAX_POOL2D] = decomp_pool2d_lowered_directly,
    [TRNC_OP_AVG_POOL2D] = decomp_pool2d_lowered_directly,
    [TRNC_OP_ADAPTIVE_AVG_POOL2D] = decomp_pool2d_lowered_directly,
    [TRNC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD] = decomp_pool2d_lowered_directly,
};

/* True if node n (of a table op) is rewritten by its op's decomposition. */
static bool decomposed(const trnc_graph *g, const trnc_node *n) {
  if ((unsigned)n->op >= TRNC_OP_COUNT || !decomps[n->op]) return false;
  return !lowered_directly[n->op] || !lowered_directly[n->op](g, n);
}

/* Emits op(args) with nouts outputs, written to outs[0..nouts): output 0 is
 * `into` (an existing value whose declared type the rule must accept; only
 * for nouts == 1) or, if into is TRNC_NO_REF, a new value typed by the rule;
 * a None slot of a tuple result (nouts > 1) is a new value with is_none.
 * Returns TRNC_OK or the builder's status (outs are TRNC_NO_REF then). */
static trnc_status emit_outs(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs,
                             trnc_ref into, uint32_t nouts, trnc_ref *res) {
  for (uint32_t k = 0; k < nouts; k++) res[k] = TRNC_NO_REF;
  if (b->st) return b->st;
  trnc_graph *g = b->g;
  char why[256];
  if ((unsigned)op >= TRNC_OP_COUNT || nouts < 1 || nouts > TRNC_DB_MAX_OUTS ||
      (nouts > 1 && into != TRNC_NO_REF))
    return trnc_db_fail(b, "emitted an op that is not in the table or with a bad output count");
  const trnc_op_def *def = &trnc_op_defs[op];
  if (nargs != strlen(def->args)) {
    snprintf(why, sizeof why, "%s takes %zu arguments, emitted with %u", def->target,
             strlen(def->args), nargs);
    return trnc_db_fail(b, why);
  }
  refs_ok ok = {true};
  for (uint32_t a = 0; a < nargs; a++) trnc_arg_visit_refs(&args[a], check_emitted_ref, &ok);
  if (!ok.ok) return trnc_db_fail(b, "an argument is the result of a failed emission");
  for (uint32_t a = 0; a < nargs; a++)
    if (!trnc_arg_kind_ok(def->args[a], &args[a])) {
      snprintf(why, sizeof why, "%s argument %u must be %s", def->target, a,
               trnc_arg_spec_name(def->args[a]));
      return trnc_db_fail(b, why);
    }
  trnc_arg *copy = trnc_arena_array(&g->arena, nargs ? nargs : 1, sizeof *copy);
  trnc_ref *outs = trnc_arena_array(&g->arena, nouts, sizeof *outs);
  if (!copy || !outs) return nomem(b);
  memcpy(copy, args, sizeof *copy * nargs);
  trnc_node tmp = {.op = op, .target = def->target, .name = b->src->name, .args = copy,
                   .nargs = nargs, .outs = outs, .nouts = nouts, .loc = b->src->loc};
  /* an earlier rewrite (trnc_db_rewrite) may emit ops the decompose pass
   * rewrites after it */
  if (!b->pick && decomposed(g, &tmp))
    return trnc_db_fail(b, "emitted an op that is not lowered directly");
  trnc_type want[TRNC_DB_MAX_OUTS];
  memset(want, 0, sizeof want);
  for (uint32_t k = 0; k < nouts; k++) want[k].offset = -1;
  if (def->rule(g, &tmp, want, nouts, b->d)) {
    /* the rule's own diagnostic precedes this one */
    snprintf(why, sizeof why, "the emitted %s is rejected by its shape rule", def->target);
    return trnc_db_fail(b, why);
  }
  operands_ok lo = {g, def, true};
  for (uint32_t k = 0; k < nouts; k++) {
    if (want[k].rank == TRNC_RANK_NONE) {
      if (nouts == 1) return trnc_db_fail(b, "emitted an op whose result is None");
      continue;
    }
    if (want[k].dtype == TRNC_DTYPE_INVALID) want[k].dtype = TRNC_F32;
    for (int i = 0; i < want[k].rank; i++)
      if (want[k].shape[i] < 0)
        return trnc_db_fail(b, "emitted an op whose result shape the rule leaves open");
    lo.ok = lo.ok && lowerable_type(def, &want[k]);
  }
  for (uint32_t a = 0; a < nargs; a++) trnc_arg_visit_refs(&copy[a], check_emitted_operand, &lo);
  if (!lo.ok) {
    snprintf(why, sizeof why, "emitted %s outside the dtypes or rank it is lowered for",
             def->target);
    return trnc_db_fail(b, why);
  }
  uint32_t idx = b->nnodes;
  for (uint32_t k = 0; k < nouts; k++) {
    trnc_type rule_t = want[k];
    bool none = want[k].rank == TRNC_RANK_NONE;
    if (none) {
      memset(&want[k], 0, sizeof want[k]);
      want[k].dtype = TRNC_DTYPE_INVALID;
    } else if (want[k].offset < 0) {
      trnc_type_set_contiguous(&want[k]);
    }
    trnc_ref r = into;
    if (into != TRNC_NO_REF) {
      if (!trnc_pu_rule_accepts(&rule_t, &g->values[into].type))
        return trnc_db_fail(b, "an output's declared type does not match what the decomposition "
                               "computes");
      g->values[into].node = idx;
      g->values[into].index = 0;
    } else if ((r = push_value(b, &want[k], idx)) == TRNC_NO_REF) {
      return nomem(b);
    }
    g->values[r].index = k;
    g->values[r].is_none = none;
    outs[k] = r;
  }
  trnc_node *n = push_node(b);
  if (!n) return nomem(b);
  *n = tmp;
  /* The result must be lowerable as the legality scan would see it. */
  if (def->check) {
    const char *reason = def->check(g, n);
    if (reason) {
      /* a size the decomposition's ops are not lowered for: the user's
       * op is unsupported at this size (not an internal error) */
      char ops[1024];
      trnc_node_operands_str(b->g, b->src, ops, sizeof ops);
      trnc_diag_loc loc = trnc_node_loc(b->src);
      b->st = trnc_diag_add(b->d, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, ops,
                            "decomposed by trnc into %s, which is not lowered at this size: %s",
                            def->target, reason);
      return b->st;
    }
  }
  memcpy(res, outs, sizeof *res * nouts);
  return TRNC_OK;
}

static trnc_ref emit(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs, trnc_ref into) {
  trnc_ref r;
  return emit_outs(b, op, args, nargs, into, 1, &r) ? TRNC_NO_REF : r;
}

trnc_status trnc_db_op_outs(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs,
                            uint32_t nouts, trnc_ref *outs) {
  return emit_outs(b, op, args, nargs, TRNC_NO_REF, nouts, outs);
}

trnc_ref trnc_db_op(trnc_db *b, trnc_op op, const trnc_arg *args, uint32_t nargs) {
  return emit(b, op, args, nargs, TRNC_NO_REF);
}

/* A CONSTANT node of dtype dt (elements of esize bytes) holding data. */
static trnc_ref db_const(trnc_db *b, trnc_dtype dt, size_t esize, int rank, const int64_t *shape,
                         const void *data) {
  if (b->st) return TRNC_NO_REF;
  trnc_graph *g = b->g;
  trnc_type t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = (uint8_t)rank;
  size_t numel = 1;
  for (int i = 0; i < rank; i++) {
    t.shape[i] = shape[i];
    numel *= (size_t)shape[i];
  }
  trnc_type_set_contiguous(&t);
  uint8_t *bytes = trnc_arena_array(&g->arena, numel ? numel : 1, esize);
  trnc_ref *outs = trnc_arena_array(&g->arena, 1, sizeof *outs);
  if (!bytes || !outs) {
    nomem(b);
    return TRNC_NO_REF;
  }
  memcpy(bytes, data, numel * esize); /* little-endian hosts, as fx.proto's bytes */
  uint32_t idx = b->nnodes;
  trnc_ref r = push_value(b, &t, idx);
  trnc_node *n = r == TRNC_NO_REF ? NULL : push_node(b);
  if (!n) {
    nomem(b);
    return TRNC_NO_REF;
  }
  n->op = TRNC_OP_CONSTANT;
  n->target = "";
  n->name = b->src->name;
  n->loc = b->src->loc;
  n->outs = outs;
  n->nouts = 1;
  n->data = bytes;
  n->data_len = numel * esize;
  outs[0] = r;
  return r;
}

trnc_ref trnc_db_const_i64(trnc_db *b, int rank, const int64_t *shape, const int64_t *data) {
  return db_const(b, TRNC_I64, sizeof(int64_t), rank, shape, data);
}

trnc_ref trnc_db_const_f32(trnc_db *b, int rank, const int64_t *shape, const float *data) {
  return db_const(b, TRNC_F32, sizeof(float), rank, shape, data);
}

trnc_ref trnc_db_shape_only(trnc_db *b, trnc_dtype dt, int rank, const int64_t *shape) {
  int64_t ones[TRNC_MAX_RANK];
  for (int i = 0; i < rank; i++) ones[i] = 1;
  trnc_ref z = DB(b, FULL, trnc_db_ints(b, ones, rank), trnc_db_int(0), trnc_db_dtype(dt),
                  trnc_db_none(), trnc_db_none(), trnc_db_none());
  return DB(b, EXPAND, trnc_db_val(z), trnc_db_ints(b, shape, rank), trnc_db_bool(false));
}

trnc_ref trnc_db_zeros(trnc_db *b, trnc_dtype dt, int rank, const int64_t *shape) {
  return DB(b, ZEROS, trnc_db_ints(b, shape, rank), trnc_db_dtype(dt), trnc_db_none(),
            trnc_db_none(), trnc_db_none());
}

trnc_ref trnc_db_cast(trnc_db *b, trnc_ref x, trnc_dtype dt) {
  return DB(b, TO_COPY, trnc_db_val(x), trnc_db_dtype(dt), trnc_db_none(), trnc_db_none(),
            trnc_db_none(), trnc_db_bool(false), trnc_db_none());
}

trnc_ref trnc_db_f32(trnc_db *b, trnc_ref x) {
  if (x != TRNC_NO_REF && trnc_db_type(b, x)->dtype == TRNC_F32)
    return DB(b, CLONE, trnc_db_val(x), trnc_db_none());
  return trnc_db_cast(b, x, TRNC_F32);
}

trnc_ref trnc_db_view(trnc_db *b, trnc_ref x, int n, const int64_t *shape) {
  return DB(b, VIEW, trnc_db_val(x), trnc_db_ints(b, shape, n));
}

/* True if value r is the only output of a node this decomposition emitted,
 * which is not a view and computes exactly the declared type t (same
 * strides: the node then simply produces the declared value; a different
 * layout is left to a copy, which keeps matmul epilogues contiguous). */
static bool can_produce(trnc_db *b, trnc_ref r, const trnc_type *t) {
  const trnc_graph *g = b->g;
  uint32_t j = g->values[r].node;
  if (j < b->first || j >= b->nnodes) return false;
  const trnc_node *p = &b->nodes[j];
  if (p->nouts != 1 || p->outs[0] != r || !trnc_pu_type_equiv(&g->values[r].type, t)) return false;
  trnc_type want;
  return trnc_pu_rule(g, p, &want) && want.offset < 0;
}

trnc_status trnc_db_result(trnc_db *b, uint32_t k, trnc_ref r) {
  if (b->st) return b->st;
  trnc_graph *g = b->g;
  if (k >= b->src->nouts || k >= MAX_OUTS || r == TRNC_NO_REF || b->bound[k])
    return trnc_db_fail(b, "bound an output twice or one the node does not have");
  trnc_ref orig = b->src->outs[k];
  trnc_type want = g->values[orig].type;
  const trnc_type *got = &g->values[r].type;
  if (want.rank != got->rank || memcmp(want.shape, got->shape, sizeof(int64_t) * want.rank))
    return trnc_db_fail(b, "computed an output of another shape than the node declares");
  b->bound[k] = true;
  if (want.dtype == got->dtype && can_produce(b, r, &want)) {
    b->nodes[g->values[r].node].outs[0] = orig;
    g->values[orig].node = g->values[r].node;
    g->values[orig].index = 0;
    b->from[b->nremap] = r;
    b->to[b->nremap++] = orig;
    return TRNC_OK;
  }
  if (want.dtype == got->dtype)
    emit(b, TRNC_OP_CLONE, (const trnc_arg[]){trnc_db_val(r), trnc_db_none()}, 2, orig);
  else
    emit(b, TRNC_OP_TO_COPY,
         (const trnc_arg[]){trnc_db_val(r), trnc_db_dtype(want.dtype), trnc_db_none(),
                            trnc_db_none(), trnc_db_none(), trnc_db_bool(false), trnc_db_none()},
         7, orig);
  return b->st;
}

/* ---- the random stream ------------------------------------------------------------ */

trnc_ref trnc_db_rng_seed(const trnc_db *b) { return b->seed; }

int64_t trnc_db_rng_blocks(trnc_db *b, int64_t nblocks) {
  int64_t first = b->next_block;
  if (nblocks > TRNC_RNG_MAX_BLOCKS - first) {
    trnc_diag_loc loc = trnc_node_loc(b->src);
    if (!b->st)
      b->st = trnc_diag_add(b->d, TRNC_SEV_ERROR, TRNC_ERR_UNSUPPORTED, &loc, NULL,
                            "%s: the graph's random ops draw more than %lld 128-bit Philox "
                            "blocks per call (%lld random elements); split the graph",
                            b->src->target, (long long)TRNC_RNG_MAX_BLOCKS,
                            (long long)TRNC_RNG_MAX_BLOCKS * 4);
    return -1;
  }
  b->next_block += nblocks;
  return first;
}

/* True if n draws from the random stream (the table's random ops but the
 * dropout backward, which reuses the forward's mask). */
static bool draws(const trnc_node *n) {
  return !n->dead && trnc_op_has(n->op, TRNC_OPF_DRAWS);
}

/* Appends the rng_seed input: int32 [2], the call's 64-bit seed as its low
 * and high 32-bit words (python/trnc/backend.py draws it). */
static trnc_status push_seed(trnc_db *b) {
  trnc_type t;
  memset(&t, 0, sizeof t);
  t.dtype = TRNC_I32;
  t.rank = 1;
  t.shape[0] = 2;
  trnc_type_set_contiguous(&t);
  trnc_ref *outs = trnc_arena_array(&b->g->arena, 1, sizeof *outs);
  trnc_node *n = outs ? push_node(b) : NULL;
  if (!n) return nomem(b);
  b->seed = push_value(b, &t, b->nnodes - 1);
  if (b->seed == TRNC_NO_REF) return nomem(b);
  n->op = TRNC_OP_PLACEHOLDER;
  n->target = "";
  n->name = TRNC_RNG_SEED_ROLE;
  n->role = TRNC_RNG_SEED_ROLE;
  n->outs = outs;
  n->nouts = 1;
  n->loc.file = n->loc.code = n->loc.function = "";
  outs[0] = b->seed;
  return TRNC_OK;
}

/* ---- the pass -------------------------------------------------------------------- */

static void remap_arg(trnc_db *b, trnc_arg *a) {
  if (a->kind == TRNC_ARG_VALUE) {
    for (uint32_t i = 0; i < b->nremap; i++)
      if (a->u.ref == b->from[i]) a->u.ref = b->to[i];
  } else if (a->kind == TRNC_ARG_LIST) {
    for (uint32_t i = 0; i < a->u.list.n; i++) remap_arg(b, &a->u.list.items[i]);
  }
}

/* Runs decomposition fn of n; the emitted nodes end up in b->nodes. */
static trnc_status expand(trnc_db *b, const trnc_node *n, trnc_decomp_fn fn) {
  if (n->nouts > MAX_OUTS) {
    b->src = n;
    return trnc_db_fail(b, "the node has too many outputs");
  }
  b->src = n;
  b->first = b->nnodes;
  b->nremap = 0;
  memset(b->bound, 0, sizeof b->bound);
  b->keep = false;
  trnc_status st = fn(b, n);
  if (!st) st = b->st;
  if (st) return st;
  if (b->keep) { /* lowered by the code generator as it is */
    trnc_node *c = push_node(b);
    if (!c) return nomem(b);
    *c = *n;
    for (uint32_t k = 0; k < n->nouts; k++) b->g->values[n->outs[k]].node = b->nnodes - 1;
    return TRNC_OK;
  }
  for (uint32_t k = 0; k < n->nouts; k++)
    if (!b->bound[k] && !b->g->values[n->outs[k]].is_none)
      return trnc_db_fail(b, "left an output unbound");
  /* uses, inside this expansion, of values that became the node's outputs */
  for (uint32_t i = b->first; i < b->nnodes; i++)
    for (uint32_t a = 0; a < b->nodes[i].nargs; a++) remap_arg(b, &b->nodes[i].args[a]);
  return TRNC_OK;
}

/* The decomposition of live node n under b's pick (NULL: copy n). */
static trnc_decomp_fn chosen(const trnc_db *b, const trnc_node *n) {
  if (n->dead) return NULL;
  if (b->pick) return b->pick(b->g, n);
  return decomposed(b->g, n) ? decomps[n->op] : NULL;
}

/* The walk shared by the decompose pass and trnc_db_rewrite: every node
 * chosen() names a decomposition for is replaced by what it emits, the
 * others are copied. */
static trnc_status walk(trnc_graph *g, trnc_diags *d, trnc_db_pick pick) {
  trnc_db b = {.g = g, .d = d, .vcap = g->nvalues, .cap = g->nnodes + 64, .seed = TRNC_NO_REF,
               .pick = pick};
  bool any = false;
  for (uint32_t i = 0; i < g->nnodes && !any; i++) any = chosen(&b, &g->nodes[i]) != NULL;
  if (!any) return TRNC_OK;
  b.nodes = malloc(sizeof *b.nodes * b.cap);
  if (!b.nodes) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory in decompose");
  /* random ops: the seed input goes after the graph's own inputs */
  bool random = false;
  uint32_t seed_at = 0;
  for (uint32_t i = 0; i < g->nnodes && !pick; i++) {
    random = random || draws(&g->nodes[i]);
    if (g->nodes[i].op == TRNC_OP_PLACEHOLDER) seed_at = i + 1;
  }
  trnc_status st = random && seed_at == 0 ? push_seed(&b) : TRNC_OK;
  for (uint32_t i = 0; i < g->nnodes && !st; i++) {
    if (random && seed_at && i == seed_at && (st = push_seed(&b))) break;
    const trnc_node *n = &g->nodes[i];
    trnc_decomp_fn fn = chosen(&b, n);
    if (fn) {
      st = expand(&b, n, fn);
      continue;
    }
    trnc_node *c = push_node(&b);
    if (!c) {
      st = nomem(&b);
      break;
    }
    *c = *n;
    for (uint32_t k = 0; k < n->nouts; k++) g->values[n->outs[k]].node = b.nnodes - 1;
  }
  trnc_node *nodes = st ? NULL : trnc_arena_array(&g->arena, b.nnodes, sizeof *nodes);
  if (!st && !nodes) st = nomem(&b);
  if (!st) {
    memcpy(nodes, b.nodes, sizeof *nodes * b.nnodes);
    g->nodes = nodes;
    g->nnodes = b.nnodes;
  }
  free(b.nodes);
  return st;
}

/* Rewrites every live node whose op has a decomposition. Errors:
 * TRNC_ERR_NOMEM; TRNC_ERR_INTERNAL if a decomposition emits an op that
 * is not lowerable (a trnc bug, reported with the node's location). After
 * an error the graph is half rewritten and must be discarded (the pipeline
 * stops at the first failing pass). */
trnc_status trnc_pass_decompose(trnc_graph *g, trnc_diags *d) { return walk(g, d, NULL); }

trnc_status trnc_db_rewrite(trnc_graph *g, trnc_diags *d, trnc_db_pick pick) {
  if (!pick) return trnc_diag_error(d, TRNC_ERR_INVALID_ARGUMENT, "trnc_db_rewrite: pick is NULL");
  return walk(g, d, pick);
}
