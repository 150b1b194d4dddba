/*
 * polynomial.c — lowering rules of the orthogonal polynomials
 * special_{chebyshev,shifted_chebyshev}_polynomial_{t,u,v,w},
 * special_hermite_polynomial_{h,he}, special_laguerre_polynomial_l and
 * special_legendre_polynomial_p (elementwise in x and n, fp32 intermediates).
 *
 * ATen's CPU kernels (aten/src/ATen/native/Math.h) branch on n and x and
 * otherwise run the three-term recurrence n times, a data-dependent trip count
 * that a static-shape kernel cannot loop. Every branch below is eager's, for
 * every n (n is truncated toward zero as eager's int64 cast; NaN, +-inf and
 * |n| >= 2^63 give eager's x86 cast INT64_MIN, so n < 0):
 *
 * Chebyshev T, U, V, W of y = x (shifted: y = x + x - 1, as eager rounds it),
 * n a tensor or a Python number:
 *   n < 0                      0
 *   |y| == 1                   eager's endpoint values (T +-1, U +-(n+1),
 *                              V 1 or +-(2n+1), W 2n+1 or +-1)
 *   |y| < 1, n > m             eager's own trigonometric closed forms with
 *                              th = acos(y): cos(n th), sin((n+1) th)/sin th,
 *                              cos((n+1/2) th)/cos(th/2), sin((n+1/2) th)/sin(th/2)
 *                              (and their fallbacks where the divisor is 0)
 *   n <= m                     the recurrence r = (y+y) q - p unrolled m times
 *                              and the step n selected: eager's operations
 *   |y| > 1 (or NaN), n > m    the recurrence's exact value in closed form,
 *                              a = acosh|y|: T cosh(n a), U sinh((n+1)a)/sinh a,
 *                              V cosh((n+1/2)a)/cosh(a/2), W sinh((n+1/2)a)/sinh(a/2)
 *                              (y < 0: (-1)^n times T, U, W resp. V of |y|),
 *                              evaluated in the log domain so that only the
 *                              result overflows; NaN where eager's recurrence
 *                              overflowed two steps before n (inf - inf), as
 *                              eager's loop returns. Relative error a few
 *                              ulp times n a against eager's rounding of the
 *                              recurrence (below 1e-5 before overflow).
 *   m = 6 (T, shifted T, U, V), 8 (U, V, W), 4 (shifted W), eager's thresholds.
 *
 * Hermite H, He, Laguerre L, Legendre P: eager has no closed form, so only a
 * Python-number n (a constant trip count) is lowered: the recurrence unrolled
 * exactly n steps in eager's order of operations, n <= KIR_POLY_MAX_STEPS
 * (Hermite: n > 128 is NaN, eager's fp32 limit). ir/ops.c refuses a tensor n
 * of Laguerre and Legendre; Hermite's tensor n is decomposed into all of
 * eager's 127 steps (passes/decomp_poly.c).
 *
 * The recurrences round as eager's source does; eager's CPU build may contract
 * a multiply and a subtraction into one FMA, so results can differ from it by
 * an ulp a step (near the polynomials' zeros, where terms cancel, relatively
 * more), and where the product overflows but the FMA does not, eager's step
 * stays finite (+-inf a step later) where the separate operations give NaN. At NaN x, U, V, W (n >= 2), Laguerre and Legendre (n >= 2) return
 * NaN where eager returns its loop's uninitialized result (the loop stops
 * before its first step).
 */
#include <math.h>

#include "codegen/kir/kir.h"

#define F TRNC_F32
#define B TRNC_NC_ALU_BYPASS
#define MUL TRNC_NC_ALU_MUL
#define ADD TRNC_NC_ALU_ADD
#define SUB TRNC_NC_ALU_SUB
#define DIV TRNC_NC_ALU_DIV

static const float LN2 = 0.69314718055994531f;
static const float LN_FLT_MAX = 88.722839f; /* log(FLT_MAX) */

static int ts(kir_kernel *k, int a, int op, float s) { return kir_ts(k, F, a, op, s, B, 0); }
static int tt(kir_kernel *k, int op, int a, int b) { return kir_tt(k, F, op, a, b); }
static int act(kir_kernel *k, int fn, int a) { return kir_act(k, F, fn, a, 1, 0); }
static int cst(kir_kernel *k, uint32_t axes, float c) { return kir_const(k, F, axes, c); }

/* trunc(n) where |n| < 2^23 (the int32 store truncates), else n (integral,
 * infinite or NaN there). */
static int trunc_n(kir_kernel *k, int n) {
  int small = ts(k, act(k, TRNC_NC_ACT_ABS, n), TRNC_NC_ALU_LT, 8388608.0f);
  return kir_select(k, F, small, kir_copy(k, F, kir_copy(k, TRNC_I32, n)), n);
}

/* 1 where the integral n is odd, else 0 (n - 2 trunc(n/2); even beyond 2^24). */
static int odd_of(kir_kernel *k, int n) {
  return tt(k, SUB, n, ts(k, trunc_n(k, ts(k, n, MUL, 0.5f)), MUL, 2));
}

/* log(1 + w) for w >= 0 (log(u) w / (u - 1), u = 1 + w: exact u - 1). */
static int log1p_of(kir_kernel *k, int w) {
  int u = ts(k, w, ADD, 1);
  int um1 = ts(k, u, ADD, -1);
  int r = tt(k, DIV, tt(k, MUL, act(k, TRNC_NC_ACT_LOG, u), w), um1);
  return kir_select(k, F, ts(k, um1, TRNC_NC_ALU_EQ, 0), w, r);
}

typedef struct form {
  char kind;    /* 't', 'u', 'v', 'w' */
  bool shifted; /* of x + x - 1 */
  int m;        /* eager's threshold of the trigonometric branch */
} form;

static form form_of(trnc_op op) {
  switch (op) {
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR: return (form){'t', false, 6};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR: return (form){'u', false, 8};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR: return (form){'v', false, 8};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W_N_SCALAR: return (form){'w', false, 8};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T_N_SCALAR: return (form){'t', true, 6};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U_N_SCALAR: return (form){'u', true, 6};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V_N_SCALAR: return (form){'v', true, 6};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_T: return (form){'t', false, 6};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_U: return (form){'u', false, 8};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_V: return (form){'v', false, 8};
    case TRNC_OP_SPECIAL_CHEBYSHEV_POLYNOMIAL_W: return (form){'w', false, 8};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_T: return (form){'t', true, 6};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_U: return (form){'u', true, 6};
    case TRNC_OP_SPECIAL_SHIFTED_CHEBYSHEV_POLYNOMIAL_V: return (form){'v', true, 6};
    default: return (form){'w', true, 4};
  }
}

/* sinh(b) (sinh) or cosh(b), b >= 0, divided by den = exp(lden) > 0:
 * exp(b - ln2 - lden) +- exp(-b - ln2 - lden); sinh below b = 1 as
 * 2t / (1 - t^2), t = tanh(b/2) (no cancellation). sinh is a mask value. */
static int hyp_ratio(kir_kernel *k, int b, int sinh, int den, int lden) {
  int c = ts(k, lden, ADD, LN2);
  int ep = act(k, TRNC_NC_ACT_EXP, tt(k, SUB, b, c));
  int en = act(k, TRNC_NC_ACT_EXP, tt(k, SUB, ts(k, b, MUL, -1), c));
  int big = kir_select(k, F, sinh, tt(k, SUB, ep, en), tt(k, ADD, ep, en));
  int t = kir_act(k, F, TRNC_NC_ACT_TANH, b, 0.5f, 0);
  int omt2 = kir_ts(k, F, act(k, TRNC_NC_ACT_SQUARE, t), MUL, -1, ADD, 1);
  int sm = tt(k, DIV, tt(k, DIV, ts(k, t, MUL, 2), omt2), den);
  int small = tt(k, TRNC_NC_ALU_AND, sinh, ts(k, b, TRNC_NC_ALU_LT, 1));
  return kir_select(k, F, small, sm, big);
}

int kir_chebyshev(kir_kernel *k, trnc_dtype dt, trnc_op op, int x, int nv) {
  if (x < 0 || nv < 0) return -1;
  form fm = form_of(op);
  if (k->values[x].dtype != F) x = kir_copy(k, F, x);
  uint32_t ax = k->values[x].axes | k->values[nv].axes;
  int n = trunc_n(k, kir_copy(k, F, nv));
  int y = fm.shifted ? ts(k, ts(k, x, MUL, 2), ADD, -1) : x; /* x + x - 1: x + x is exact */
  int y2 = ts(k, y, MUL, 2);
  int odd = odd_of(k, n), even = ts(k, odd, TRNC_NC_ALU_EQ, 0);
  int ypos = ts(k, y, TRNC_NC_ALU_GT, 0), yneg = ts(k, y, TRNC_NC_ALU_LT, 0);
  int np1 = ts(k, n, ADD, 1), tnp1 = kir_ts(k, F, n, MUL, 2, ADD, 1); /* n + 1, 2n + 1 */
  int one = cst(k, ax, 1);
  /* (-1)^n v */
#define ALT(v) kir_select(k, F, odd, ts(k, (v), MUL, -1), (v))

  /* n <= m: eager's recurrence, every step kept and step n selected */
  int p = one, q;
  switch (fm.kind) {
    case 't': q = y; break;
    case 'u': q = y2; break;
    case 'v': q = ts(k, y2, ADD, -1); break;
    default: q = ts(k, y2, ADD, 1); break;
  }
  int rec = kir_select(k, F, ts(k, n, TRNC_NC_ALU_EQ, 1), q, one);
  for (int s = 2; s <= fm.m; s++) {
    int r = tt(k, SUB, tt(k, MUL, y2, q), p);
    p = q;
    q = r;
    rec = kir_select(k, F, ts(k, n, TRNC_NC_ALU_EQ, (float)s), r, rec);
  }

  /* |y| > 1, n > m: the closed form in a = acosh|y| */
  int z = act(k, TRNC_NC_ACT_ABS, y);
  int d = ts(k, z, ADD, -1), zp1 = ts(k, z, ADD, 1);
  int sh = act(k, TRNC_NC_ACT_SQRT, tt(k, MUL, d, zp1)); /* sinh a = sqrt(z^2 - 1) */
  int a = log1p_of(k, tt(k, ADD, d, sh));
  float off = fm.kind == 't' ? 0.0f : fm.kind == 'u' ? 1.0f : 0.5f;
  int b = tt(k, MUL, ts(k, n, ADD, off), a);
  int issinh, den;
  if (fm.kind == 't') {
    issinh = cst(k, ax, 0);
    den = one;
  } else if (fm.kind == 'u') {
    issinh = one;
    den = sh;
  } else { /* V (W of |y| where y < 0), W (V of |y| where y < 0) */
    issinh = fm.kind == 'w' ? ts(k, yneg, TRNC_NC_ALU_EQ, 0) : yneg;
    int ch2 = act(k, TRNC_NC_ACT_SQRT, ts(k, zp1, MUL, 0.5f)); /* cosh(a/2) */
    int sh2 = act(k, TRNC_NC_ACT_SQRT, ts(k, d, MUL, 0.5f));   /* sinh(a/2) */
    den = kir_select(k, F, issinh, sh2, ch2);
  }
  int lden = act(k, TRNC_NC_ACT_LOG, den);
  int hyp = hyp_ratio(k, b, issinh, den, lden);
  hyp = kir_select(k, F, yneg, ALT(hyp), hyp);
  /* eager's recurrence overflowed at step n - 2 (or before): inf - inf = NaN */
  int b2 = tt(k, SUB, tt(k, SUB, b, ts(k, a, MUL, 2)), ts(k, lden, ADD, LN2));
  int fin = ts(k, b2, TRNC_NC_ALU_LE, LN_FLT_MAX);
  hyp = kir_select(k, F, fin, hyp, cst(k, ax, NAN));
  int v = kir_select(k, F, ts(k, n, TRNC_NC_ALU_LE, (float)fm.m), rec, hyp);

  /* |y| < 1, n > m: eager's trigonometric forms */
  int th = kir_acos(k, F, y);
  int trig;
  switch (fm.kind) {
    case 't': trig = act(k, TRNC_NC_ACT_COS, tt(k, MUL, n, th)); break;
    case 'u': {
      int s = act(k, TRNC_NC_ACT_SIN, th);
      int b1 = tt(k, MUL, np1, th);
      int main_ = tt(k, DIV, act(k, TRNC_NC_ACT_SIN, b1), s);
      int fb = tt(k, DIV, tt(k, MUL, np1, act(k, TRNC_NC_ACT_COS, b1)), y);
      trig = kir_select(k, F, ts(k, s, TRNC_NC_ALU_NE, 0), main_, fb);
      break;
    }
    case 'v': {
      int h = ts(k, th, DIV, 2);
      int bh = tt(k, MUL, ts(k, n, ADD, 0.5f), th);
      int main_ = tt(k, DIV, act(k, TRNC_NC_ACT_COS, bh), act(k, TRNC_NC_ACT_COS, h));
      int fb = kir_select(k, F, even, tnp1, ts(k, tnp1, MUL, -1));
      trig = kir_select(k, F, ts(k, act(k, TRNC_NC_ACT_SIN, h), TRNC_NC_ALU_NE, 1), main_, fb);
      break;
    }
    default: {
      int h = ts(k, th, DIV, 2);
      int bh = tt(k, MUL, ts(k, n, ADD, 0.5f), th);
      int main_ = tt(k, DIV, act(k, TRNC_NC_ACT_SIN, bh), act(k, TRNC_NC_ACT_SIN, h));
      int fb = kir_select(k, F, even, one, cst(k, ax, -1));
      if (!fm.shifted) fb = kir_select(k, F, ypos, tnp1, fb); /* shifted W: eager has no x > 0 case */
      trig = kir_select(k, F, ts(k, act(k, TRNC_NC_ACT_COS, h), TRNC_NC_ALU_NE, 1), main_, fb);
      break;
    }
  }
  int inside = tt(k, TRNC_NC_ALU_AND, ts(k, z, TRNC_NC_ALU_LT, 1), ts(k, n, TRNC_NC_ALU_GT, (float)fm.m));
  v = kir_select(k, F, inside, trig, v);

  /* |y| == 1 */
  int endp;
  switch (fm.kind) {
    case 't': endp = kir_select(k, F, tt(k, TRNC_NC_ALU_OR, ypos, even), one, cst(k, ax, -1)); break;
    case 'u': endp = kir_select(k, F, tt(k, TRNC_NC_ALU_OR, ypos, even), np1, ts(k, np1, MUL, -1)); break;
    case 'v': endp = kir_select(k, F, ypos, one, ALT(tnp1)); break;
    default: endp = kir_select(k, F, ypos, tnp1, ALT(one)); break;
  }
  v = kir_select(k, F, ts(k, z, TRNC_NC_ALU_EQ, 1), endp, v);
#undef ALT

  /* n < 0 (after the cast: NaN, +-inf and |n| >= 2^63 too) */
  int valid = tt(k, TRNC_NC_ALU_AND, ts(k, n, TRNC_NC_ALU_GE, 0), ts(k, n, TRNC_NC_ALU_LT, 9.2233720e18f));
  return kir_select(k, dt, valid, v, cst(k, ax, 0));
}

static bool hermite(trnc_op op) {
  return op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H || op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H_N_SCALAR ||
         op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE || op == TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE_N_SCALAR;
}

int kir_poly_steps(trnc_op op, double n, int *steps) {
  if (!(n > -1) || !(n < 9.2233720e18)) { /* eager's int64 cast: n < 0 */
    *steps = -1;
    return 0;
  }
  int64_t s = (int64_t)n;
  if (hermite(op) && s > 128) {
    *steps = -2; /* NaN: eager's fp32 limit */
    return 0;
  }
  if (s > KIR_POLY_MAX_STEPS) return -1;
  *steps = (int)s;
  return 0;
}

int kir_poly_values(trnc_op op, double n) {
  int s;
  if (kir_poly_steps(op, n, &s) || s < 0) return 4;
  return 8 + 6 * s;
}

int kir_poly_recurrence(kir_kernel *k, trnc_dtype dt, trnc_op op, int x, double nd) {
  if (x < 0) return -1;
  if (k->values[x].dtype != F) x = kir_copy(k, F, x);
  uint32_t ax = k->values[x].axes;
  int n;
  if (kir_poly_steps(op, nd, &n)) return -1;
  if (n == -1) return kir_const(k, dt, ax, 0);
  if (n == -2) return kir_const(k, dt, ax, NAN);
  int one = cst(k, ax, 1);
  int p = one, q, r;
  switch (op) {
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_H_N_SCALAR: { /* r = (x + x) q - k p, k = 2, 4, .. 2n - 2 */
      int x2 = ts(k, x, MUL, 2);
      if (n == 0) return kir_copy(k, dt, one);
      q = x2;
      for (int s = 2; s < n + n; s += 2) {
        r = tt(k, SUB, tt(k, MUL, x2, q), ts(k, p, MUL, (float)s));
        p = q;
        q = r;
      }
      return kir_copy(k, dt, q);
    }
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE:
    case TRNC_OP_SPECIAL_HERMITE_POLYNOMIAL_HE_N_SCALAR: /* r = x q - k p, k = 1 .. n - 1 */
      if (n == 0) return kir_copy(k, dt, one);
      q = x;
      for (int s = 1; s < n; s++) {
        r = tt(k, SUB, tt(k, MUL, x, q), ts(k, p, MUL, (float)s));
        p = q;
        q = r;
      }
      return kir_copy(k, dt, q);
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L:
    case TRNC_OP_SPECIAL_LAGUERRE_POLYNOMIAL_L_N_SCALAR: { /* r = ((2k + (1 - x)) q - k p) / (k + 1); 1 at x == 0 */
      int omx = kir_ts(k, F, x, MUL, -1, ADD, 1);
      q = n == 0 ? one : omx;
      for (int s = 1; s < n; s++) {
        r = tt(k, SUB, tt(k, MUL, ts(k, omx, ADD, (float)(s + s)), q), ts(k, p, MUL, (float)s));
        r = ts(k, r, DIV, (float)(s + 1));
        p = q;
        q = r;
      }
      return kir_select(k, dt, ts(k, x, TRNC_NC_ALU_EQ, 0), one, q);
    }
    default: { /* Legendre: r = ((2k + 1) x q - k p) / (k + 1); +-1 at |x| == 1 */
      q = n == 0 ? one : x;
      for (int s = 1; s < n; s++) {
        r = tt(k, SUB, tt(k, MUL, ts(k, x, MUL, (float)(s + s + 1)), q), ts(k, p, MUL, (float)s));
        r = ts(k, r, DIV, (float)(s + 1));
        p = q;
        q = r;
      }
      int endp = n % 2 == 0 ? one : kir_select(k, F, ts(k, x, TRNC_NC_ALU_GT, 0), one, cst(k, ax, -1));
      return kir_select(k, dt, ts(k, act(k, TRNC_NC_ACT_ABS, x), TRNC_NC_ALU_EQ, 1), endp, q);
    }
  }
}
