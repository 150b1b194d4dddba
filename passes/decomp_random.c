/*
 * decomp_random.c — trnc's random stream: native_dropout, rand, bernoulli
 * and bernoulli.p as Philox4x32-10 computed on the device (see decompose.h
 * for the builder).
 *
 * The generator is Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11; the Random123 reference):
 * key (k0, k1) = the call's 64-bit seed as its low and high 32-bit words,
 * the rng_seed input the pass adds to the graph (python/trnc/backend.py
 * draws it from torch.default_generator once per call); counter (c0, c1,
 * c2, c3) = (block, 0, 0, 0). Each random op of a graph takes the next
 * ceil(n / 4) blocks of the call's stream in graph order, so two ops never
 * share bits; element i of an op is word i % 4 of its block i / 4, and a
 * word w becomes the float32 uniform (w >> 8) * 2^-24 in [0, 1).
 *
 * Everything runs in the graph's exact int32 ops (GpSimd's native int32
 * tensor_tensor and bitvec ALUs, docs/dtypes.md): add, xor and the low
 * word of a product wrap modulo 2^32 as Philox's uint32 arithmetic does;
 * the high word of the 32 x 32 -> 64-bit product with a multiplier
 * M = mh 2^16 + ml comes from 16-bit limbs a = ah 2^16 + al, whose partial
 * products (< 2^32) wrap back to their exact uint32 bit patterns:
 *   t  = ah ml + (al ml >>> 16)            (< 2^32)
 *   w1 = (t & 0xffff) + al mh              (< 2^32)
 *   hi = ah mh + (t >>> 16) + (w1 >>> 16)  (mod 2^32)
 * where x >>> s = (x >> s) & (2^(32 - s) - 1) (the shift is arithmetic).
 * Words known to be zero (c1, c2, c3 of the first round) are skipped, so
 * round 1 costs one multiply.
 *
 * Why not nki.isa.rng: the public ISA's Vector Engine PRNG (set_rng_seed /
 * rng) does not document its algorithm, so neither the simulator nor
 * another target could reproduce its bits; Philox on GpSimd gives the same
 * bits on every target, in the simulator and in the reference test.
 *
 * Dropout: keep = u < 1 - p, out = where(keep, x * (1 / (1 - p)), 0) (eager
 * scales the kept values the same way); train=False or p = 0 keeps all,
 * p = 1 drops all, neither draws. The mask is the op's second output,
 * which aot_autograd saves for the backward: native_dropout_backward is
 * where(mask, grad * scale, 0) and never draws.
 */
#include <stdint.h>
#include <string.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define NONE trnc_db_none()

static const uint32_t PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u; /* multipliers */
static const uint32_t PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u; /* Weyl key steps */

/* A 32-bit word of the generator state: an int32 value (its bit pattern),
 * or the known zero. */
typedef struct word {
  trnc_ref r;
  bool zero;
} word;

static word wv(trnc_ref r) { return (word){r, false}; }
static const word ZERO = {TRNC_NO_REF, true};

/* The int32 scalar with u's bit pattern. */
static trnc_arg u32(uint32_t u) { return I((int64_t)(int32_t)u); }

static word wxor(trnc_db *b, word x, word y) {
  if (x.zero) return y;
  if (y.zero) return x;
  return wv(DB(b, BITWISE_XOR, V(x.r), V(y.r)));
}

/* x >>> s for s in [1, 31]. */
static trnc_ref lshr(trnc_db *b, trnc_ref x, int s) {
  trnc_ref sh = DB(b, BITWISE_RIGHT_SHIFT_SCALAR, V(x), I(s));
  return DB(b, BITWISE_AND, V(sh), u32(0xFFFFFFFFu >> s));
}

static trnc_ref add(trnc_db *b, trnc_ref x, trnc_ref y) { return DB(b, ADD, V(x), V(y), I(1)); }
static trnc_ref mulc(trnc_db *b, trnc_ref x, uint32_t c) { return DB(b, MUL, V(x), u32(c)); }

/* The high and low words of the 64-bit product x * m. */
static void mulhilo(trnc_db *b, word x, uint32_t m, word *hi, word *lo) {
  if (x.zero) {
    *hi = *lo = ZERO;
    return;
  }
  uint32_t mh = m >> 16, ml = m & 0xFFFFu;
  trnc_ref al = DB(b, BITWISE_AND, V(x.r), u32(0xFFFFu)), ah = lshr(b, x.r, 16);
  trnc_ref t = add(b, mulc(b, ah, ml), lshr(b, mulc(b, al, ml), 16));
  trnc_ref w1 = add(b, DB(b, BITWISE_AND, V(t), u32(0xFFFFu)), mulc(b, al, mh));
  trnc_ref h = add(b, add(b, mulc(b, ah, mh), lshr(b, t, 16)), lshr(b, w1, 16));
  *hi = wv(h);
  *lo = wv(mulc(b, x.r, m));
}

/* Philox4x32-10 of counters (c0, 0, 0, 0), c0 an int32 [nb] tensor, under
 * key (k0, k1) ([1] tensors): the four output words, each [nb]. */
static void philox(trnc_db *b, trnc_ref c0, trnc_ref k0, trnc_ref k1, int64_t nb, trnc_ref out[4]) {
  word c[4] = {wv(c0), ZERO, ZERO, ZERO}, key[10][2];
  /* the round keys first: a [1] node between the counter's nodes would end
   * their fused kernel (codegen/lower.c keeps a broadcast value in a group
   * only if no later kernel reads it) */
  for (int r = 0; r < 10; r++) {
    key[r][0] = wv(r ? DB(b, ADD, V(k0), u32(PHILOX_W0 * (uint32_t)r), I(1)) : k0);
    key[r][1] = wv(r ? DB(b, ADD, V(k1), u32(PHILOX_W1 * (uint32_t)r), I(1)) : k1);
  }
  for (int r = 0; r < 10; r++) {
    word hi0, lo0, hi1, lo1;
    mulhilo(b, c[0], PHILOX_M0, &hi0, &lo0);
    mulhilo(b, c[2], PHILOX_M1, &hi1, &lo1);
    word n0 = wxor(b, wxor(b, hi1, c[1]), key[r][0]), n2 = wxor(b, wxor(b, hi0, c[3]), key[r][1]);
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
  for (int i = 0; i < 4; i++) {
    /* after ten rounds every word depends on the counter (never a [1] key
     * alone), except with one block */
    trnc_ref w = c[i].zero ? DB(b, MUL, V(c0), I(0)) : c[i].r;
    if (w != TRNC_NO_REF && trnc_db_type(b, w)->shape[0] != nb)
      w = DB(b, CLONE, V(DB(b, EXPAND, V(w), trnc_db_ints(b, &nb, 1), trnc_db_bool(false))), NONE);
    out[i] = w;
  }
}

/* n float32 uniforms in [0, 1) of the node's shape (rank, shape), from the
 * next ceil(n / 4) blocks of the call's stream. */
static trnc_ref uniforms(trnc_db *b, int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  if (n == 0)
    return DB(b, FULL, trnc_db_ints(b, shape, rank), trnc_db_float(0.0), trnc_db_dtype(TRNC_F32),
              NONE, NONE, NONE);
  int64_t nb = (n + 3) / 4;
  int64_t first = trnc_db_rng_blocks(b, nb);
  trnc_ref seed = trnc_db_rng_seed(b);
  if (first < 0) return TRNC_NO_REF;
  if (seed == TRNC_NO_REF) {
    trnc_db_fail(b, "a random op without the rng_seed input");
    return TRNC_NO_REF;
  }
  trnc_ref k0 = DB(b, SLICE, V(seed), I(0), I(0), I(1), I(1));
  trnc_ref k1 = DB(b, SLICE, V(seed), I(0), I(1), I(2), I(1));
  /* blocks computed: whole 128-partition tiles (the tail's counters belong
   * to the next op's range, but their words are discarded) */
  int64_t nc = nb > 128 ? (nb + 127) / 128 * 128 : nb;
  trnc_ref c0 = DB(b, ARANGE_START, I(first), I(first + nc), trnc_db_dtype(TRNC_I32), NONE, NONE, NONE);
  trnc_ref w[4], top[4];
  philox(b, c0, k0, k1, nc, w);
  for (int i = 0; i < 4; i++) {
    top[i] = lshr(b, w[i], 8);       /* the word's top 24 bits */
    if (top[i] == TRNC_NO_REF) return TRNC_NO_REF;
  }
  trnc_ref all = DB(b, STACK, trnc_db_vals(b, top, 4), I(1)); /* [nb, 4]: element 4 j + i */
  trnc_ref flat = trnc_db_view(b, all, 1, (const int64_t[]){nc * 4});
  if (nc * 4 != n) flat = DB(b, SLICE, V(flat), I(0), I(0), I(n), I(1));
  trnc_ref u = DB(b, MUL_SCALAR, V(trnc_db_cast(b, flat, TRNC_F32)), trnc_db_float(0x1p-24));
  return rank == 1 && shape[0] == n ? u : trnc_db_view(b, DB(b, CLONE, V(u), NONE), rank, shape);
}

/* native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor) */
trnc_status decomp_dropout(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  double p = trnc_arg_number(trnc_node_arg(n, 1), 0.5);
  const trnc_arg *tr = trnc_node_arg(n, 2);
  bool train = !tr || tr->kind != TRNC_ARG_BOOL || tr->u.b;
  trnc_ref keep, out;
  trnc_arg size = trnc_db_ints(b, t.shape, t.rank), bool_dt = trnc_db_dtype(TRNC_BOOL);
  if (!train || p == 0.0) {
    keep = DB(b, FULL, size, trnc_db_bool(true), bool_dt, NONE, NONE, NONE);
    out = DB(b, CLONE, V(x), NONE);
  } else if (p >= 1.0) {
    keep = DB(b, FULL, size, trnc_db_bool(false), bool_dt, NONE, NONE, NONE);
    out = DB(b, FULL_LIKE, V(x), I(0), NONE, NONE, NONE, NONE, NONE);
  } else {
    keep = DB(b, LT_SCALAR, V(uniforms(b, t.rank, t.shape)), trnc_db_float(1.0 - p));
    trnc_ref scaled = DB(b, MUL_SCALAR, V(x), trnc_db_float(1.0 / (1.0 - p)));
    out = DB(b, WHERE, V(keep), V(scaled), trnc_db_float(0.0));
  }
  trnc_status st = trnc_db_result(b, 0, out);
  return st ? st : trnc_db_result(b, 1, keep);
}

/* native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor */
trnc_status decomp_dropout_bw(trnc_db *b, const trnc_node *n) {
  trnc_ref scaled = DB(b, MUL_SCALAR, n->args[0], trnc_db_float(trnc_arg_number(trnc_node_arg(n, 2), 1.0)));
  return trnc_db_result(b, 0, DB(b, WHERE, n->args[1], V(scaled), trnc_db_float(0.0)));
}

/* rand(SymInt[] size, *, ScalarType? dtype, ...) -> Tensor */
trnc_status decomp_rand(trnc_db *b, const trnc_node *n) {
  const trnc_type *t = &trnc_db_graph(b)->values[n->outs[0]].type;
  return trnc_db_result(b, 0, uniforms(b, t->rank, t->shape));
}

/* bernoulli(Tensor self, *, Generator? generator) / bernoulli.p(Tensor self, float p, ...) */
trnc_status decomp_bernoulli(trnc_db *b, const trnc_node *n) {
  trnc_ref x = n->args[0].u.ref;
  const trnc_type t = *trnc_db_type(b, x);
  trnc_ref u = uniforms(b, t.rank, t.shape);
  trnc_ref hit = n->op == TRNC_OP_BERNOULLI_P
                     ? DB(b, LT_SCALAR, V(u), trnc_db_float(trnc_arg_number(trnc_node_arg(n, 1), 0.5)))
                     : DB(b, LT, V(u), V(x));
  return trnc_db_result(b, 0, hit);
}
