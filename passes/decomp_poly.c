/*
 * decomp_poly.c — the Hermite polynomials H and He at a tensor degree n as ops
 * trnc lowers (see decompose.h for the builder).
 *
 * Eager (aten/src/ATen/native/Math.h) returns NaN beyond n = 128 in float32,
 * so its recurrence runs at most 127 steps: every step is emitted, and a step
 * i updates (p, q) only where it runs in eager (trunc(n) > i):
 *   H:  r = (x + x) q - 2i p,  p0 = 1, q0 = x + x
 *   He: r = x q - i p,         p0 = 1, q0 = x
 * then 1 at n = 0, NaN beyond 128, 0 below 0 (n truncated toward zero, so
 * trunc(n) > i is n >= i + 1 for n > -1; NaN, +-inf and |n| >= 2^63 are
 * eager's int64 cast's INT64_MIN, so 0). Each step
 * is eager's operations in float32 (eager's CPU build may contract one into
 * an FMA). A Python-number n is kept for the kernel rule
 * (codegen/kir/polynomial.c), which unrolls exactly n steps.
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float

/* The most steps eager's float32 Hermite recurrence runs (n <= 128). */
enum { HERMITE_F32_MAX_N = 128 };

trnc_status decomp_hermite(trnc_db *b, const trnc_node *n) {
  if (n->args[1].kind != TRNC_ARG_VALUE) return trnc_db_keep(b);
  bool he = n->op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE;
  trnc_ref x = trnc_db_f32(b, n->args[0].u.ref);
  trnc_ref deg = trnc_db_f32(b, n->args[1].u.ref); /* trunc(deg) > i <=> deg >= i + 1 (deg > -1) */
  trnc_ref x2 = he ? x : DB(b, ADD, V(x), V(x), I(1));
  trnc_ref p = TRNC_NO_REF, q = x2;
  for (int i = 1; i < HERMITE_F32_MAX_N; i++) {
    double k = he ? i : 2.0 * i;
    trnc_ref t = DB(b, MUL, V(x2), V(q));
    trnc_ref r = p == TRNC_NO_REF ? DB(b, SUB_SCALAR, V(t), F(k), I(1))
                                  : DB(b, SUB, V(t), V(DB(b, MUL_SCALAR, V(p), F(k))), I(1));
    trnc_ref on = DB(b, GE_SCALAR, V(deg), F(i + 1));
    trnc_ref np = DB(b, WHERE, V(on), V(q), p == TRNC_NO_REF ? F(1.0) : V(p));
    q = DB(b, WHERE, V(on), V(r), V(q));
    p = np;
  }
  trnc_ref v = DB(b, WHERE, V(DB(b, LT_SCALAR, V(deg), F(1.0))), F(1.0), V(q));
  v = DB(b, WHERE, V(DB(b, GE_SCALAR, V(deg), F(HERMITE_F32_MAX_N + 1))), F(NAN), V(v));
  trnc_ref valid = DB(b, LOGICAL_AND, V(DB(b, GT_SCALAR, V(deg), F(-1.0))),
                      V(DB(b, LT_SCALAR, V(deg), F(9.2233720368547758e18))));
  return trnc_db_result(b, 0, DB(b, WHERE, V(valid), V(v), F(0.0)));
}
