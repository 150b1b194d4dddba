/*
 * decomp_math.c — hypot, frexp, addbmm and addmm/baddbmm with beta = 0 as ops trnc lowers (see decompose.h for
 * the builder).
 *
 * hypot(x, y), as C's hypot without overflow or underflow of the squares:
 *   m = max(|x|, |y|), s = min(|x|, |y|),  hypot = m sqrt(1 + (s/m)^2),
 * 0 where m = 0 (s/m would be 0/0), +inf where either is infinite (also
 * against a NaN, as C's hypot), NaN otherwise where either is NaN; in
 * float32.
 *
 * frexp(x) = (m, e) with x = m 2^e, 0.5 <= |m| < 1: a = |x| is scaled into
 * [1, 2) by multiplications with powers of two, each exact: a subnormal by
 * 2^24 first; then for k = 64, 32, ..., 1, a >= 2^k: a 2^-k (a stays >= 1),
 * and for k = 64, ..., 1, a < 2^(1-k): a 2^k (a stays < 2), the k summed
 * into the exponent (exact small integers in float32). m = copysign(a/2, x),
 * e + 1; 0 (of either sign), +-inf and NaN give x and exponent 0, as eager.
 *
 * addbmm(self, b1 [B,N,M], b2 [B,M,P], beta, alpha) = beta self + alpha
 * sum_b b1[b] @ b2[b] is one addmm whose contraction runs over the batch and
 * M together: b1 permuted to [N, B, M] and seen as [N, B*M], b2 seen as
 * [B*M, P] (TensorE accumulates the B*M products of each element in PSUM).
 *
 * addmm / baddbmm with beta = 0 ignore self, as eager does (a NaN or inf in
 * self must not reach the result, which a fused beta * self bias would
 * give): alpha * mm(b1, b2) (bmm); any other beta is lowered directly.
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* hypot(Tensor self, Tensor other) */
trnc_status decomp_hypot(trnc_db *b, const trnc_node *n) {
  trnc_ref a = DB(b, ABS, V(trnc_db_f32(b, n->args[0].u.ref)));
  trnc_ref c = DB(b, ABS, V(trnc_db_f32(b, n->args[1].u.ref)));
  trnc_ref m = DB(b, MAXIMUM, V(a), V(c)), s = DB(b, MINIMUM, V(a), V(c));
  trnc_ref r = DB(b, DIV, V(s), V(m));
  trnc_ref h = DB(b, MUL, V(m), V(DB(b, SQRT, V(DB(b, ADD_SCALAR, V(DB(b, MUL, V(r), V(r))),
                                                     I(1), I(1))))));
  h = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(m), I(0))), F(0.0), V(h));
  trnc_ref inf = DB(b, LOGICAL_OR, V(DB(b, ISINF, V(a))), V(DB(b, ISINF, V(c))));
  return trnc_db_result(b, 0, DB(b, WHERE, V(inf), F(INFINITY), V(h)));
}

/* frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent) */
trnc_status decomp_frexp(trnc_db *b, const trnc_node *n) {
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  trnc_ref a = DB(b, ABS, V(x));
  trnc_ref sub = DB(b, LT_SCALAR, V(a), F(ldexp(1, -126)));
  trnc_ref e = DB(b, WHERE, V(sub), F(-24.0), F(0.0));
  a = DB(b, WHERE, V(sub), V(DB(b, MUL_SCALAR, V(a), F(ldexp(1, 24)))), V(a));
  for (int k = 64; k >= 1; k /= 2) {
    trnc_ref big = DB(b, GE_SCALAR, V(a), F(ldexp(1, k)));
    a = DB(b, WHERE, V(big), V(DB(b, MUL_SCALAR, V(a), F(ldexp(1, -k)))), V(a));
    e = DB(b, WHERE, V(big), V(DB(b, ADD_SCALAR, V(e), F(k), I(1))), V(e));
  }
  for (int k = 64; k >= 1; k /= 2) {
    trnc_ref small = DB(b, LT_SCALAR, V(a), F(ldexp(1, 1 - k)));
    a = DB(b, WHERE, V(small), V(DB(b, MUL_SCALAR, V(a), F(ldexp(1, k)))), V(a));
    e = DB(b, WHERE, V(small), V(DB(b, ADD_SCALAR, V(e), F(-k), I(1))), V(e));
  }
  /* 0, +-inf, NaN: x itself, exponent 0 */
  trnc_ref keep = DB(b, LOGICAL_OR, V(DB(b, EQ_SCALAR, V(x), F(0.0))),
                     V(DB(b, LOGICAL_OR, V(DB(b, ISINF, V(x))), V(DB(b, ISNAN, V(x))))));
  trnc_ref m = DB(b, COPYSIGN, V(DB(b, MUL_SCALAR, V(a), F(0.5))), V(x));
  trnc_status st = trnc_db_result(b, 0, DB(b, WHERE, V(keep), V(x), V(m)));
  if (st != TRNC_OK) return st;
  e = DB(b, WHERE, V(keep), F(0.0), V(DB(b, ADD_SCALAR, V(e), F(1.0), I(1))));
  return trnc_db_result(b, 1, e);
}

bool decomp_beta_lowered_directly(const trnc_graph *g, const trnc_node *n) {
  (void)g;
  return trnc_arg_number(trnc_node_arg(n, 3), 1) != 0;
}

/* alpha * (b1 @ b2): mm for 2-D b1, bmm for 3-D */
static trnc_ref scaled_product(trnc_db *b, trnc_ref b1, trnc_ref b2, const trnc_arg *alpha) {
  bool batched = trnc_db_type(b, b1)->rank == 3;
  trnc_ref p = batched ? DB(b, BMM, V(b1), V(b2)) : DB(b, MM, V(b1), V(b2));
  return trnc_arg_number(alpha, 1) == 1 ? p : DB(b, MUL_SCALAR, V(p), *alpha);
}

/* addmm / baddbmm(Tensor self, Tensor b1, Tensor b2, *, Scalar beta=0, Scalar alpha=1) */
trnc_status decomp_beta0(trnc_db *b, const trnc_node *n) {
  return trnc_db_result(b, 0, scaled_product(b, n->args[1].u.ref, n->args[2].u.ref,
                                             &n->args[4]));
}

/* addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) */
trnc_status decomp_addbmm(trnc_db *b, const trnc_node *n) {
  trnc_ref b1 = n->args[1].u.ref, b2 = n->args[2].u.ref;
  const trnc_type t1 = *trnc_db_type(b, b1), t2 = *trnc_db_type(b, b2);
  int64_t B = t1.shape[0], N = t1.shape[1], M = t1.shape[2], P = t2.shape[2];
  if (B * M == 0) { /* no products: beta self (beta = 0: zeros, self unread) */
    trnc_ref z = trnc_db_zeros(b, t1.dtype, 2, (const int64_t[]){N, P});
    double beta = trnc_arg_number(&n->args[3], 1);
    return trnc_db_result(b, 0, beta == 0 ? z : DB(b, ADD, V(z), n->args[0], n->args[3]));
  }
  int64_t perm[3] = {1, 0, 2};
  trnc_ref l = DB(b, CLONE, V(DB(b, PERMUTE, V(b1), trnc_db_ints(b, perm, 3))), NONE);
  l = trnc_db_view(b, l, 2, (const int64_t[]){N, B * M});
  trnc_ref r = trnc_db_view(b, DB(b, CLONE, V(b2), NONE), 2, (const int64_t[]){B * M, P});
  if (trnc_arg_number(&n->args[3], 1) == 0)
    return trnc_db_result(b, 0, scaled_product(b, l, r, &n->args[4]));
  return trnc_db_result(b, 0, DB(b, ADDMM, n->args[0], V(l), V(r), n->args[3], n->args[4]));
}
