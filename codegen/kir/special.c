/*
 * special.c — lowering rules of the gamma- and error-function families as kernel IR
 * (elementwise, fp32 intermediates; the ops of rules.c's composite table
 * that need more than a few instructions).
 *
 *   lgamma(x)  x < 0.5: log(pi / |sin(pi r)|) - lgamma(1 - x), r = x - round(x)
 *              (sin(pi x) = +-sin(pi r) exactly: r is exact in fp32);
 *              z = max(x, 1 - x) >= 0.5: lgamma(z) = S(z + 8) - log(z (z+1) ... (z+7))
 *              for z < 8, S(z) otherwise, with Stirling's series
 *              S(w) = (w - 1/2) log w - w + log(2 pi)/2 + 1/(12w) - 1/(360w^3)
 *                     + 1/(1260w^5) - 1/(1680w^7)  (truncation below 1e-10 at w >= 8).
 *   polygamma(n, x), digamma = polygamma(0, .):
 *              z >= 0.5: psi_n(z) = psi_n(z + 10) + (-1)^(n+1) n! sum_{i<10} (z+i)^-(n+1)
 *              (digamma: psi(z) = psi(z + 10) - sum_{i<10} 1/(z+i)), and at w = z + 10
 *              the asymptotic series (Abramowitz & Stegun 6.4.11, 6.3.18)
 *                psi(w)   = log w - 1/(2w) - sum_k B_2k / (2k w^2k)
 *                psi_n(w) = (-1)^(n+1) [(n-1)!/w^n + n!/(2w^(n+1))
 *                           + sum_k B_2k (2k+n-1)! / ((2k)! w^(2k+n))],  k = 1..6
 *              (relative truncation error below 2e-8 for n <= 8);
 *              x < 0.5: the reflection formula differentiated n times,
 *                psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi r)),
 *              P_0(c) = c, P_{m+1}(c) = -(1 + c^2) P_m'(c) (cot's derivatives),
 *              cot(pi r) = sin(pi (1/2 - |r|)) / sin(pi r).
 *
 *   erfc(x), special_erfcx(x): Numerical Recipes' erfcc, erfcx(z) = t exp(P(t)),
 *              t = 1/(1 + z/2), z = |x|, times exp(-z^2) for erfc (split so that
 *              the square's rounding does not reach the exponent); x < 0:
 *              erfc = 2 - erfc(-x), erfcx = 2 exp(x^2) - erfcx(-x).
 *   erfinv(x)  Giles' single-precision polynomials in log((1-x)(1+x)).
 *
 *   i0, i1 and their scaled forms i0e(x) = exp(-|x|) i0(x), i1e(x) = exp(-|x|) i1(x)
 *   (the modified Bessel functions of the first kind, orders 0 and 1):
 *              Abramowitz & Stegun 9.8.1-9.8.4: z = |x| < 3.75: polynomials in
 *              t^2 = (z/3.75)^2 of i0 and i1/z (absolute error below 1.6e-7 and
 *              8e-9); z >= 3.75: sqrt(z) exp(-z) i(z) as a polynomial in 3.75/z
 *              (absolute error below 2.2e-7 on values near 0.4); i1 and i1e are
 *              odd. Overflow, infinities and NaN as eager's Cephes formulas:
 *              i0(+-inf) = i1(+-inf) = NaN (exp(z) / sqrt(z) = inf / inf),
 *              i0 = +-inf once exp(z) overflows, i0e(+-inf) = 0, i1e(+-inf) = +-0.
 *
 *   spherical_bessel_j0(x) = sin(x)/x, below |x| = 0.5 eager's Taylor series.
 *   airy_ai: Cephes airy.c (see kir_airy_ai).
 *   j0, j1, y0, y1 (Bessel functions of both kinds, orders 0 and 1) and
 *   k0, k1, k0e, k1e (modified, second kind; k0e(x) = exp(x) k0(x)): Cephes'
 *              j0.c, j1.c, k0.c, k1.c as ATen's CPU kernels evaluate them in
 *              fp32, in the same order of roundings: j below |x| = 5 a
 *              rational in x^2 times (x^2 - z1^2)(x^2 - z2^2), above it
 *              sqrt(2/(pi x)) (P cos(x - phase) - 5/x Q sin(x - phase)), y
 *              below 5 a rational plus 2/pi log(x) j(x) (y1: - 2/(pi x)), k
 *              Chebyshev series in x^2 - 2 (with log(x/2) i(x)) up to 2 and
 *              in 8/x - 2 above. y(+-0) = -inf, k(+-0) = +inf, NaN below 0
 *              and at NaN; j and y are NaN at +-inf (cos(inf)), k there 0.
 *
 * Poles as eager: lgamma(0 or a negative integer) = +inf, lgamma(+-inf) =
 * +inf; digamma(+-0) = -+inf, digamma(negative integer or -inf) = NaN;
 * polygamma(n >= 2, 0 or a negative integer or -inf) = (-1)^(n+1) inf and
 * NaN at +inf (eager's Hurwitz zeta); polygamma(1, x) below 0.5 is eager's
 * trigamma formula pi^2 / sin^2(pi x) - psi_1(1 - x) with sin(pi x) rounded
 * as eager rounds it (large and finite at the negative integers).
 */
#include <math.h>

#include "codegen/kir/kir.h"

#define F TRNC_F32
#define B TRNC_NC_ALU_BYPASS
#define MUL TRNC_NC_ALU_MUL
#define ADD TRNC_NC_ALU_ADD

static const double PI = 3.14159265358979323846;

/* c0 + v (c1 + v (c2 + ...)) over n coefficients. */
static int horner(kir_kernel *k, int v, const double *c, int n) {
  int p = kir_const(k, F, k->values[v].axes, (float)c[n - 1]);
  for (int i = n - 2; i >= 0; i--) p = kir_ts(k, F, kir_tt(k, F, MUL, p, v), ADD, (float)c[i], B, 0);
  return p;
}

/* 1 - x where x < 0.5, else x (*refl: the mask x < 0.5). */
static int reflected(kir_kernel *k, int x, int *refl) {
  *refl = kir_ts(k, F, x, TRNC_NC_ALU_LT, 0.5f, B, 0);
  return kir_select(k, F, *refl, kir_ts(k, F, x, MUL, -1, ADD, 1), x);
}

int kir_lgamma(kir_kernel *k, trnc_dtype dt, int x) {
  uint32_t axes = k->values[x].axes;
  int refl, z = reflected(k, x, &refl);
  int small = kir_ts(k, F, z, TRNC_NC_ALU_LT, 8, B, 0);
  int p = z;
  for (int i = 1; i < 8; i++) p = kir_tt(k, F, MUL, p, kir_ts(k, F, z, ADD, (float)i, B, 0));
  int logp = kir_select(k, F, small, kir_act(k, F, TRNC_NC_ACT_LOG, p, 1, 0), kir_const(k, F, axes, 0));
  int w = kir_select(k, F, small, kir_ts(k, F, z, ADD, 8, B, 0), z);
  int r = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, w, 1, 0), r2 = kir_tt(k, F, MUL, r, r);
  static const double ser[] = {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680};
  int s = kir_tt(k, F, MUL, horner(k, r2, ser, 4), r);
  int lg = kir_tt(k, F, MUL, kir_ts(k, F, w, ADD, -0.5f, B, 0), kir_act(k, F, TRNC_NC_ACT_LOG, w, 1, 0));
  lg = kir_ts(k, F, kir_tt(k, F, TRNC_NC_ALU_SUB, lg, w), ADD, 0.91893853320467274f, B, 0);
  lg = kir_tt(k, F, TRNC_NC_ALU_SUB, kir_tt(k, F, ADD, lg, s), logp);
  /* x < 0.5: log(pi / |sin(pi r)|) - lgamma(1 - x) */
  int fr = kir_tt(k, F, TRNC_NC_ALU_SUB, x, kir_round(k, F, x));
  int sn = kir_act(k, F, TRNC_NC_ACT_ABS, kir_act(k, F, TRNC_NC_ACT_SIN, fr, (float)PI, 0), 1, 0);
  int lr = kir_act(k, F, TRNC_NC_ACT_LOG, kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, sn, 1, 0),
                                                  MUL, (float)PI, B, 0), 1, 0);
  int v = kir_select(k, F, refl, kir_tt(k, F, TRNC_NC_ALU_SUB, lr, lg), lg);
  int inf = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0), TRNC_NC_ALU_EQ, INFINITY, B, 0);
  return kir_select(k, dt, inf, kir_const(k, F, axes, INFINITY), v);
}

/* Bernoulli numbers B_2 .. B_12. */
static const double BERN[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730};
enum { NBERN = 6, SHIFT = 10 };

static double factorial(int n) {
  double f = 1;
  for (int i = 2; i <= n; i++) f *= i;
  return f;
}

/* psi_n(z) for z >= 0.5 (shift and asymptotic series; see the header). */
static int polygamma_pos(kir_kernel *k, int z, int n) {
  double sign = n % 2 ? 1 : -1; /* (-1)^(n+1) */
  int acc = -1;
  for (int i = 0; i < SHIFT; i++) {
    int t = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, z, 1, (float)i);
    if (n > 0) t = kir_ts(k, F, t, TRNC_NC_ALU_POW, (float)(n + 1), B, 0);
    acc = acc < 0 ? t : kir_tt(k, F, ADD, acc, t);
  }
  int w = kir_ts(k, F, z, ADD, (float)SHIFT, B, 0);
  int r = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, w, 1, 0), r2 = kir_tt(k, F, MUL, r, r);
  double c[NBERN];
  if (n == 0) {
    /* log w - r/2 - r2 sum_k B_2k/(2k) r2^(k-1) - acc */
    for (int j = 0; j < NBERN; j++) c[j] = -BERN[j] / (2.0 * (j + 1));
    int tail = kir_tt(k, F, MUL, horner(k, r2, c, NBERN), r2);
    int v = kir_tt(k, F, ADD, kir_act(k, F, TRNC_NC_ACT_LOG, w, 1, 0), tail);
    v = kir_tt(k, F, TRNC_NC_ALU_SUB, v, kir_ts(k, F, r, MUL, 0.5f, B, 0));
    return kir_tt(k, F, TRNC_NC_ALU_SUB, v, acc);
  }
  /* sign r^n [(n-1)! + n!/2 r + r2 sum_k B_2k (2k+n-1)!/(2k)! r2^(k-1)] + sign n! acc */
  for (int j = 0; j < NBERN; j++) c[j] = BERN[j] * factorial(2 * (j + 1) + n - 1) / factorial(2 * (j + 1));
  int br = kir_tt(k, F, MUL, horner(k, r2, c, NBERN), r2);
  br = kir_tt(k, F, ADD, br, kir_ts(k, F, r, MUL, (float)(factorial(n) / 2), ADD, (float)factorial(n - 1)));
  int asym = kir_tt(k, F, MUL, br, kir_ts(k, F, r, TRNC_NC_ALU_POW, (float)n, MUL, (float)sign));
  return kir_tt(k, F, ADD, asym, kir_ts(k, F, acc, MUL, (float)(sign * factorial(n)), B, 0));
}

int kir_polygamma(kir_kernel *k, trnc_dtype dt, int x, int n) {
  uint32_t axes = k->values[x].axes;
  if (n < 0 || n > KIR_POLYGAMMA_MAX_ORDER) return -1;
  int refl, z = reflected(k, x, &refl);
  int pz = polygamma_pos(k, z, n);
  if (n == 1) { /* eager's trigamma: pi^2 / sin^2(pi x) - psi_1(1 - x), sin(pi x) as it rounds */
    int s = kir_act(k, F, TRNC_NC_ACT_SIN, x, (float)PI, 0);
    int rv = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, kir_tt(k, F, MUL, s, s), 1, 0), MUL,
                    (float)(PI * PI), B, 0);
    return kir_select(k, dt, refl, kir_tt(k, F, TRNC_NC_ALU_SUB, rv, pz), pz);
  }
  /* x < 0.5: (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi r)) */
  double P[KIR_POLYGAMMA_MAX_ORDER + 2] = {0, 1}, D[KIR_POLYGAMMA_MAX_ORDER + 2];
  for (int m = 0; m < n; m++) { /* P <- -(1 + c^2) P' (degree m+1 -> m+2) */
    for (int i = 0; i <= m + 2; i++) D[i] = i + 1 <= m + 1 ? (i + 1) * P[i + 1] : 0;
    for (int i = 0; i <= m + 2; i++) P[i] = -(D[i] + (i >= 2 ? D[i - 2] : 0));
  }
  int fr = kir_tt(k, F, TRNC_NC_ALU_SUB, x, kir_round(k, F, x));
  /* cos(pi r) = sin(pi (1/2 - |r|)): 1/2 - |r| is exact near the zeros of
   * cos, where pi r rounded would leave cos(pi r) ~ 4e-8 instead of 0 */
  int cr = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_ABS, fr, 1, 0), MUL, -1, ADD, 0.5f);
  int cot = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_act(k, F, TRNC_NC_ACT_SIN, cr, (float)PI, 0),
                   kir_act(k, F, TRNC_NC_ACT_SIN, fr, (float)PI, 0));
  int pc = kir_ts(k, F, horner(k, cot, P, n + 2), MUL, (float)-pow(PI, n + 1), B, 0);
  int rv = kir_tt(k, F, ADD, n % 2 ? kir_ts(k, F, pz, MUL, -1, B, 0) : pz, pc);
  int v = kir_select(k, F, refl, rv, pz);
  /* poles: x a non-positive integer (or -inf) */
  int integral = kir_tt(k, F, TRNC_NC_ALU_EQ, x, kir_round(k, F, x));
  if (n == 0) { /* NaN below 0; -+inf at +-0 (1/x < 0 on VectorE tells -0) */
    int neg = kir_tt(k, F, TRNC_NC_ALU_AND, integral, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0));
    int nz = kir_ts(k, F, kir_tt(k, F, TRNC_NC_ALU_DIV, kir_const(k, F, axes, 1), x), TRNC_NC_ALU_LT, 0, B, 0);
    int zero = kir_select(k, F, nz, kir_const(k, F, axes, INFINITY), kir_const(k, F, axes, -INFINITY));
    v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 0, B, 0), zero, v);
    return kir_select(k, dt, neg, kir_const(k, F, axes, NAN), v);
  }
  int pole = kir_tt(k, F, TRNC_NC_ALU_AND, integral, kir_ts(k, F, x, TRNC_NC_ALU_LE, 0, B, 0));
  v = kir_select(k, F, pole, kir_const(k, F, axes, n % 2 ? INFINITY : -INFINITY), v);
  /* eager's Hurwitz zeta is NaN at +inf */
  int pinf = kir_ts(k, F, x, TRNC_NC_ALU_EQ, INFINITY, B, 0);
  return kir_select(k, dt, pinf, kir_const(k, F, axes, NAN), v);
}

/* ---- the error-function family --------------------------------------------- */

/* Numerical Recipes' erfcc (Press et al., Numerical Recipes in C, 2nd ed.,
 * section 6.2): erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0,
 * fractional error below 1.2e-7 for every z >= 0. */
static const double ERFC_P[] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                                0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};

/* exp(s z^2) for 0 <= z <= 16: exp(s zh^2) exp(s d (z + zh)) with zh = z
 * rounded to a multiple of 1/16 (zh^2 exact in fp32) and d = z - zh (exact):
 * exp(s z^2) rounded from z^2 would carry z^2's rounding error times z^2. */
static int exp_square(kir_kernel *k, int z, float s) {
  int zh = kir_ts(k, F, z, MUL, 16, ADD, 8388608.0f); /* 16 z rounded to an integer, + 2^23 */
  zh = kir_ts(k, F, zh, ADD, -8388608.0f, MUL, 1.0f / 16);
  int d = kir_tt(k, F, TRNC_NC_ALU_SUB, z, zh);
  int e = kir_act(k, F, TRNC_NC_ACT_EXP, kir_tt(k, F, MUL, zh, zh), s, 0);
  int de = kir_tt(k, F, MUL, d, kir_tt(k, F, ADD, z, zh));
  return kir_tt(k, F, MUL, e, kir_act(k, F, TRNC_NC_ACT_EXP, de, s, 0));
}

int kir_erfc(kir_kernel *k, trnc_dtype dt, int x, bool scaled) {
  int z = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int t = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, z, 0.5f, 1);
  /* erfcx(z) = t exp(P(t)) for z >= 0 (0 at +inf: t = 0) */
  int a = kir_tt(k, F, MUL, t, kir_act(k, F, TRNC_NC_ACT_EXP, horner(k, t, ERFC_P, 10), 1, 0));
  int neg = kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0);
  int v;
  if (scaled) { /* x < 0: 2 exp(x^2) - erfcx(-x) (+inf once exp(x^2) overflows, |x| > 9.4) */
    int e = exp_square(k, kir_ts(k, F, z, TRNC_NC_ALU_MIN, 10, B, 0), 1);
    v = kir_select(k, F, neg, kir_tt(k, F, TRNC_NC_ALU_SUB, kir_ts(k, F, e, MUL, 2, B, 0), a), a);
  } else { /* erfcx(z) exp(-z^2), 2 - that below 0 (0 past z = 10.05 in fp32) */
    a = kir_tt(k, F, MUL, a, exp_square(k, kir_ts(k, F, z, TRNC_NC_ALU_MIN, 10.5f, B, 0), -1));
    v = kir_select(k, F, neg, kir_ts(k, F, a, MUL, -1, ADD, 2), a);
  }
  return kir_copy(k, dt, v); /* NaN: t and so v are NaN (MIN propagates it) */
}

/* Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011),
 * single precision: w = -log((1 - x)(1 + x)); erfinv(x) = x P1(w - 2.5) for
 * w < 5, x P2(sqrt(w) - 3) otherwise (relative error below 4e-7 in fp32). */
static const double ERFINV_P1[] = {1.50140941,     0.246640727,   -0.00417768164,
                                   -0.00125372503, 0.00021858087, -4.39150654e-06,
                                   -3.5233877e-06, 3.43273939e-07, 2.81022636e-08};
static const double ERFINV_P2[] = {2.83297682,    1.00167406,    0.00943887047,
                                   -0.0076224613, 0.00573950773, -0.00367342844,
                                   0.00134934322, 0.000100950558, -0.000200214257};

int kir_erfinv(kir_kernel *k, trnc_dtype dt, int x) {
  uint32_t axes = k->values[x].axes;
  int one_m = kir_ts(k, F, x, MUL, -1, ADD, 1), one_p = kir_ts(k, F, x, ADD, 1, B, 0);
  int w = kir_act(k, F, TRNC_NC_ACT_LOG, kir_tt(k, F, MUL, one_m, one_p), 1, 0);
  w = kir_ts(k, F, w, MUL, -1, B, 0);
  int p1 = horner(k, kir_ts(k, F, w, ADD, -2.5f, B, 0), ERFINV_P1, 9);
  int sw = kir_act(k, F, TRNC_NC_ACT_SQRT, kir_ts(k, F, w, TRNC_NC_ALU_MAX, 0, B, 0), 1, 0);
  int p2 = horner(k, kir_ts(k, F, sw, ADD, -3, B, 0), ERFINV_P2, 9);
  int v = kir_tt(k, F, MUL, kir_select(k, F, kir_ts(k, F, w, TRNC_NC_ALU_LT, 5, B, 0), p1, p2), x);
  /* erfinv(+-1) = +-inf, NaN beyond (and for NaN: w is NaN) */
  int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  v = kir_select(k, F, kir_ts(k, F, ax, TRNC_NC_ALU_EQ, 1, B, 0), kir_ts(k, F, x, MUL, INFINITY, B, 0), v);
  return kir_select(k, dt, kir_ts(k, F, ax, TRNC_NC_ALU_GT, 1, B, 0), kir_const(k, F, axes, NAN), v);
}

/* ---- the modified Bessel functions i0, i1 ------------------------------------ */

/* Abramowitz & Stegun 9.8.1-9.8.4 (also Numerical Recipes' bessi0/bessi1):
 * [order][0]: i0(z) resp. i1(z)/z in t^2, t = z/3.75, for z < 3.75;
 * [order][1]: sqrt(z) exp(-z) i(z) in 3.75/z for z >= 3.75. */
static const double BESSEL_I_SMALL[2][7] = {
    {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813},
    {0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411}};
static const double BESSEL_I_LARGE[2][9] = {
    {0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537,
     -0.01647633, 0.00392377},
    {0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312,
     0.01787654, -0.00420059}};

int kir_bessel_i(kir_kernel *k, trnc_dtype dt, int x, int order, bool scaled) {
  if (order < 0 || order > 1) return -1;
  int z = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int small = kir_ts(k, F, z, TRNC_NC_ALU_LT, 3.75f, B, 0);
  /* z < 3.75: P(t^2), times z for i1; times exp(-z) when scaled */
  int zs = kir_ts(k, F, z, TRNC_NC_ALU_MIN, 3.75f, B, 0); /* t <= 1 (also where unused) */
  int t2 = kir_ts(k, F, kir_tt(k, F, MUL, zs, zs), MUL, (float)(1 / (3.75 * 3.75)), B, 0);
  int ps = horner(k, t2, BESSEL_I_SMALL[order], 7);
  if (order == 1) ps = kir_tt(k, F, MUL, ps, z);
  if (scaled) ps = kir_tt(k, F, MUL, ps, kir_act(k, F, TRNC_NC_ACT_EXP, z, -1, 0));
  /* z >= 3.75: Q(3.75/z) / sqrt(z), times exp(z) unless scaled (exp(z) first,
   * as eager: inf once it overflows, NaN at z = inf) */
  int zl = kir_ts(k, F, z, TRNC_NC_ALU_MAX, 3.75f, B, 0);
  int pl = horner(k, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, zl, 1.0f / 3.75f, 0), BESSEL_I_LARGE[order], 9);
  if (!scaled) pl = kir_tt(k, F, MUL, kir_act(k, F, TRNC_NC_ACT_EXP, zl, 1, 0), pl);
  pl = kir_tt(k, F, TRNC_NC_ALU_DIV, pl, kir_act(k, F, TRNC_NC_ACT_SQRT, zl, 1, 0));
  int v = kir_select(k, F, small, ps, pl);
  if (order == 1) /* odd: the sign of x (-0 keeps 0 as eager's 0 * ...) */
    v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_ts(k, F, v, MUL, -1, B, 0), v);
  /* NaN: z is NaN, small is false and pl is NaN */
  return kir_copy(k, dt, v);
}

/* ---- the Bessel functions j0, j1, y0, y1 and k0, k1 (Cephes) ---------------- */

/* c[0] v^(n-1) + ... + c[n-1] (Cephes' coefficient order). */
static int horner_desc(kir_kernel *k, int v, const double *c, int n) {
  int p = kir_ts(k, F, v, MUL, (float)c[0], ADD, (float)c[1]);
  for (int i = 2; i < n; i++) p = kir_ts(k, F, kir_tt(k, F, MUL, p, v), ADD, (float)c[i], B, 0);
  return p;
}

static int ratio(kir_kernel *k, int v, const double *p, int np, const double *q, int nq) {
  return kir_tt(k, F, TRNC_NC_ALU_DIV, horner_desc(k, v, p, np), horner_desc(k, v, q, nq));
}

/* Cephes j0.c / j1.c (as ATen's bessel_j0_forward .. bessel_y1_forward):
 * [order] P, Q of the asymptotic form for x > 5 in w = 25/x^2. */
static const double BJ_PP[2][7] = {
    {7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
     5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
     9.99999999999999997821e-01},
    {7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
     5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
     1.00000000000000000254e+00}};
static const double BJ_PQ[2][7] = {
    {9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
     5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
     1.00000000000000000218e+00},
    {5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
     5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
     9.99999999999999997461e-01}};
static const double BJ_QP[2][8] = {
    {-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
     -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
     -5.14105326766599330220e+01, -6.05014350600728481186e+00},
    {5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
     3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
     2.11688757100572135698e+02, 2.52070205858023719784e+01}};
static const double BJ_QQ[2][7] = {
    {6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
     7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
     2.42005740240291393179e+02},
    {7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
     9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
     3.36093607810698293419e+02}};
/* j(x) for x <= 5: rational in x^2 times the products over the first zeros */
static const double BJ_RP[2][4] = {
    {-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
     9.70862251047306323952e+15},
    {-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
     3.68295732863852883286e+15}};
static const double BJ_RQ[2][8] = {
    {4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
     1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
     3.18121955943204943306e+16, 1.71086294081043136091e+18},
    {6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
     2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
     8.95222336184627338078e+16, 5.32278620332680085395e+18}};
static const double BJ_Z2[2][2] = {{5.78318596294678452118e+00, 3.04712623436620863991e+01},
                                   {1.46819706421238932572e+01, 4.92184563216946036703e+01}};
/* y(x) for x <= 5: y0 = YP/YQ (x^2) + 2/pi log(x) j0, y1 = x YP/YQ + 2/pi (j1 log x - 1/x) */
static const double BY0_P[] = {1.55924367855235737965e+04,  -1.46639295903971606143e+07,
                               5.43526477051876500413e+09,  -9.82136065717911466409e+11,
                               8.75906394395366999549e+13,  -3.46628303384729719441e+15,
                               4.42733268572569800351e+16,  -1.84950800436986690637e+16};
static const double BY0_Q[] = {1.04128353664259848412e+03, 6.26107330137134956842e+05,
                               2.68919633393814121987e+08, 8.64002487103935000337e+10,
                               2.02979612750105546709e+13, 3.17157752842975028269e+15,
                               2.50596256172653059228e+17};
static const double BY1_P[] = {1.26320474790178026440e+09,  -6.47355876379160291031e+11,
                               1.14509511541823727583e+14,  -8.12770255501325109621e+15,
                               2.02439475713594898196e+17,  -7.78877196265950026825e+17};
static const double BY1_Q[] = {5.94301592346128195359e+02, 2.35564092943068577943e+05,
                               7.34811944459721705660e+07, 1.87601316108706159478e+10,
                               3.88231277496238566008e+12, 6.20557727146953693363e+14,
                               6.87141087355300489866e+16, 3.97270608116560655612e+18};

static const double TWO_OVER_PI = 0.636619772367581343075535053490057448;

int kir_bessel_jy(kir_kernel *k, trnc_dtype dt, int x, int order, bool second) {
  if (order < 0 || order > 1) return -1;
  uint32_t axes = k->values[x].axes;
  int z = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int small = kir_ts(k, F, z, TRNC_NC_ALU_LE, 5, B, 0);
  /* z <= 5: j = R(x^2) (x^2 - z1^2)(x^2 - z2^2), times x for j1 (odd, -0 kept) */
  int xs = kir_ts(k, F, x, TRNC_NC_ALU_MIN, 5, TRNC_NC_ALU_MAX, -5); /* also where unused */
  int x2 = kir_tt(k, F, MUL, xs, xs);
  int rp = horner_desc(k, x2, BJ_RP[order], 4), rq = horner_desc(k, x2, BJ_RQ[order], 8);
  int f1 = kir_ts(k, F, x2, ADD, (float)-BJ_Z2[order][0], B, 0);
  int f2 = kir_ts(k, F, x2, ADD, (float)-BJ_Z2[order][1], B, 0);
  int js; /* in eager's order of the roundings */
  if (order == 1)
    js = kir_tt(k, F, MUL, kir_tt(k, F, MUL, kir_tt(k, F, MUL, kir_tt(k, F, TRNC_NC_ALU_DIV, rp, rq), xs), f1), f2);
  else /* eager's 1 - x^2/4 below 1e-5 */
    js = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_tt(k, F, MUL, kir_tt(k, F, MUL, f1, f2), rp), rq);
  if (order == 0)
    js = kir_select(k, F, kir_ts(k, F, z, TRNC_NC_ALU_LT, 1e-5f, B, 0),
                    kir_ts(k, F, x2, MUL, -0.25f, ADD, 1), js);
  /* z > 5: sqrt(2/(pi z)) (P/P' cos(z - phase) -+ 5/z Q/Q' sin(z - phase)),
   * phase = (2 order + 1) pi/4; y swaps cos and sin (and the sign) */
  int zl = kir_ts(k, F, z, TRNC_NC_ALU_MAX, 5, B, 0);
  int w = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, kir_tt(k, F, MUL, zl, zl), 1, 0), MUL, 25, B, 0);
  int p = ratio(k, w, BJ_PP[order], 7, BJ_PQ[order], 7);
  int q = kir_tt(k, F, MUL, ratio(k, w, BJ_QP[order], 8, BJ_QQ[order], 7),
                 kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, zl, 0.2f, 0));
  float ph = (float)-((2 * order + 1) * PI / 4);
  int c = kir_act(k, F, TRNC_NC_ACT_COS, zl, 1, ph), s = kir_act(k, F, TRNC_NC_ACT_SIN, zl, 1, ph);
  int l = second ? kir_tt(k, F, ADD, kir_tt(k, F, MUL, p, s), kir_tt(k, F, MUL, q, c))
                 : kir_tt(k, F, TRNC_NC_ALU_SUB, kir_tt(k, F, MUL, p, c), kir_tt(k, F, MUL, q, s));
  l = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_ts(k, F, l, MUL, 0.797884560802865355879892119868763737f, B, 0),
             kir_act(k, F, TRNC_NC_ACT_SQRT, zl, 1, 0));
  if (!second) {
    if (order == 1) /* odd */
      l = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_ts(k, F, l, MUL, -1, B, 0), l);
    return kir_select(k, dt, small, js, l); /* NaN: small is false and l is NaN */
  }
  /* y, 0 < x <= 5 (js is j(x) there) */
  int lx = kir_act(k, F, TRNC_NC_ACT_LOG, xs, 1, 0);
  int ys;
  if (order == 0) {
    ys = kir_tt(k, F, ADD, ratio(k, x2, BY0_P, 8, BY0_Q, 7),
                kir_ts(k, F, kir_tt(k, F, MUL, lx, js), MUL, (float)TWO_OVER_PI, B, 0));
  } else {
    int jl = kir_tt(k, F, TRNC_NC_ALU_SUB, kir_tt(k, F, MUL, js, lx), kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, xs, 1, 0));
    ys = kir_tt(k, F, ADD, kir_tt(k, F, MUL, xs, ratio(k, x2, BY1_P, 6, BY1_Q, 8)),
                kir_ts(k, F, jl, MUL, (float)TWO_OVER_PI, B, 0));
  }
  int v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LE, 5, B, 0), ys, l);
  /* y(+-0) = -inf, NaN below 0 (and at -inf) */
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_const(k, F, axes, NAN), v);
  return kir_select(k, dt, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 0, B, 0), kir_const(k, F, axes, -INFINITY), v);
}

/* Cephes k0.c / k1.c (as ATen's modified_bessel_k0_forward ..): Chebyshev
 * series, [order] A in x^2 - 2 for x <= 2, B in 8/x - 2 for x > 2. */
static const double BK_A[2][11] = {
    {1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
     1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
     1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
     -5.35327393233902768720e-01},
    {-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
     -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
     -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
     -3.53155960776544875667e-01, 1.52530022733894777053e+00}};
static const int BK_NA[2] = {10, 11};
static const double BK_B[2][25] = {
    {5.30043377268626276149e-18,  -1.64758043015242134646e-17, 5.21039150503902756861e-17,
     -1.67823109680541210385e-16, 5.51205597852431940784e-16,  -1.84859337734377901440e-15,
     6.34007647740507060557e-15,  -2.22751332699166985548e-14, 8.03289077536357521100e-14,
     -2.98009692317273043925e-13, 1.14034058820847496303e-12,  -4.51459788337394416547e-12,
     1.85594911495471785253e-11,  -7.95748924447710747776e-11, 3.57739728140030116597e-10,
     -1.69753450938905987466e-09, 8.57403401741422608519e-09,  -4.66048989768794782956e-08,
     2.76681363944501510342e-07,  -1.83175552271911948767e-06, 1.39498137188764993662e-05,
     -1.28495495816278026384e-04, 1.56988388573005337491e-03,  -3.14481013119645005427e-02,
     2.44030308206595545468e+00},
    {-5.75674448366501715755e-18, 1.79405087314755922667e-17,  -5.68946255844285935196e-17,
     1.83809354436663880070e-16,  -6.05704724837331885336e-16, 2.03870316562433424052e-15,
     -7.01983709041831346144e-15, 2.47715442448130437068e-14,  -8.97670518232499435011e-14,
     3.34841966607842919884e-13,  -1.28917396095102890680e-12, 5.13963967348173025100e-12,
     -2.12996783842756842877e-11, 9.21831518760500529508e-11,  -4.19035475934189648750e-10,
     2.01504975519703286596e-09,  -1.03457624656780970260e-08, 5.74108412545004946722e-08,
     -3.50196060308781257119e-07, 2.40648494783721712015e-06,  -1.93619797416608296024e-05,
     1.95215518471351631108e-04,  -2.85781685962277938680e-03, 1.03923736576817238437e-01,
     2.72062619048444266945e+00}};

/* Cephes chbevl: (b0 - b2)/2 of Clenshaw's recurrence b = y b1 - b2 + c,
 * |y| <= 2, without the leading (highest-order) coefficients below 1e-10
 * (all of them together move the result by less than 3e-11, 1/5000 of an
 * fp32 ulp of the results near 1): kir's values a kernel holds. */
static int chbevl(kir_kernel *k, int y, const double *c, int n) {
  int i0 = 0;
  while (i0 + 2 < n && fabs(c[i0]) < 1e-10) i0++;
  int b0 = kir_const(k, F, k->values[y].axes, (float)c[i0]), b1 = -1;
  int b2 = -1;
  for (int i = i0 + 1; i < n; i++) {
    b2 = b1;
    b1 = b0;
    int t = kir_tt(k, F, MUL, y, b1); /* (y b1 - b2) + c: eager's roundings */
    if (b2 >= 0) t = kir_tt(k, F, TRNC_NC_ALU_SUB, t, b2);
    b0 = kir_ts(k, F, t, ADD, (float)c[i], B, 0);
  }
  return kir_ts(k, F, b2 < 0 ? b0 : kir_tt(k, F, TRNC_NC_ALU_SUB, b0, b2), MUL, 0.5f, B, 0);
}

int kir_bessel_k(kir_kernel *k, trnc_dtype dt, int x, int order, bool scaled) {
  if (order < 0 || order > 1) return -1;
  uint32_t axes = k->values[x].axes;
  /* x <= 2: A(x^2 - 2) - log(x/2) i0(x), resp. log(x/2) i1(x) + A(x^2 - 2)/x */
  int xs = kir_ts(k, F, x, TRNC_NC_ALU_MIN, 2, B, 0); /* also where unused */
  int a = chbevl(k, kir_ts(k, F, kir_tt(k, F, MUL, xs, xs), ADD, -2, B, 0), BK_A[order], BK_NA[order]);
  int li = kir_tt(k, F, MUL, kir_act(k, F, TRNC_NC_ACT_LOG, xs, 0.5f, 0), kir_bessel_i(k, F, xs, order, false));
  int vs = order == 0 ? kir_tt(k, F, TRNC_NC_ALU_SUB, a, li)
                      : kir_tt(k, F, ADD, li, kir_tt(k, F, TRNC_NC_ALU_DIV, a, xs));
  if (scaled) vs = kir_tt(k, F, MUL, vs, kir_act(k, F, TRNC_NC_ACT_EXP, xs, 1, 0));
  /* x > 2: B(8/x - 2) / sqrt(x), times exp(-x) unless scaled (0 at +inf) */
  int xl = kir_ts(k, F, x, TRNC_NC_ALU_MAX, 2, B, 0);
  int y = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, xl, 0.125f, 0), ADD, -2, B, 0);
  int b = chbevl(k, y, BK_B[order], 25);
  if (!scaled) b = kir_tt(k, F, MUL, kir_act(k, F, TRNC_NC_ACT_EXP, xl, -1, 0), b);
  int vl = kir_tt(k, F, TRNC_NC_ALU_DIV, b, kir_act(k, F, TRNC_NC_ACT_SQRT, xl, 1, 0));
  int v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LE, 2, B, 0), vs, vl); /* NaN: vl */
  /* +inf at +-0, NaN below 0 */
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0), kir_const(k, F, axes, NAN), v);
  return kir_select(k, dt, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 0, B, 0), kir_const(k, F, axes, INFINITY), v);
}

/* spherical_bessel_j0(x) = sin(x)/x; below |x| = 0.5 eager's Taylor series
 * 1 + x^2 (-1/6 + x^2 (1/120 + ...)) to x^12; 0 at +-inf, NaN at NaN. */
static const double SPH_J0[] = {1.0, -1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0,
                                -1.0 / 39916800.0, 1.0 / 6227020800.0};

int kir_spherical_bessel_j0(kir_kernel *k, trnc_dtype dt, int x) {
  uint32_t axes = k->values[x].axes;
  int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  int x2 = kir_tt(k, F, MUL, x, x);
  int ser = horner(k, x2, SPH_J0, 7);
  int v = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_act(k, F, TRNC_NC_ACT_SIN, x, 1, 0), x);
  v = kir_select(k, F, kir_ts(k, F, ax, TRNC_NC_ALU_LT, 0.5f, B, 0), ser, v);
  return kir_select(k, dt, kir_ts(k, F, ax, TRNC_NC_ALU_EQ, INFINITY, B, 0), kir_const(k, F, axes, 0), v);
}

/* Cephes airy.c's Ai as ATen's airy_ai_forward evaluates it in fp32:
 * x < -2.09: (1/sqrt(pi)) (-x)^(-1/4) (sin(t) (1 + z^2 AFN/AFD) - cos(t) z AGN/AGD)
 * in z^2, zeta = 2/3 (-x)^(3/2), z = 1/zeta, t = zeta + pi/4; x >= 2.09:
 * (1/sqrt(pi)) AN/AD(1/zeta) / (2 x^(1/4) exp(zeta)), zeta = 2/3 x^(3/2);
 * between: the Maclaurin series c1 f(x^3) - c2 g(x^3), 8 terms (eager's loop
 * stops after at most 8 there). NaN at +-inf, 0 above 103.892. 189 values:
 * a kernel of its own (kir_eltwise_values). */
static const double AIRY_AN[] = {3.46538101525629032477e-01, 1.20075952739645805542e+01,
                                 7.62796053615234516538e+01, 1.68089224934630576269e+02,
                                 1.59756391350164413639e+02, 7.05360906840444183113e+01,
                                 1.40264691163389668864e+01, 9.99999999999999995305e-01};
static const double AIRY_AD[] = {5.67594532638770212846e-01, 1.47562562584847203173e+01,
                                 8.45138970141474626562e+01, 1.77318088145400459522e+02,
                                 1.64234692871529701831e+02, 7.14778400825575695274e+01,
                                 1.40959135607834029598e+01, 1.00000000000000000470e+00};
static const double AIRY_AFN[] = {-1.31696323418331795333e-01, -6.26456544431912369773e-01,
                                  -6.93158036036933542233e-01, -2.79779981545119124951e-01,
                                  -4.91900132609500318020e-02, -4.06265923594885404393e-03,
                                  -1.59276496239262096340e-04, -2.77649108155232920844e-06,
                                  -1.67787698489114633780e-08};
static const double AIRY_AFD[] = {1.33560420706553243746e+01, 3.26825032795224613948e+01,
                                  2.67367040941499554804e+01, 9.18707402907259625840e+00,
                                  1.47529146771666414581e+00, 1.15687173795188044134e-01,
                                  4.40291641615211203805e-03, 7.54720348287414296618e-05,
                                  4.51850092970580378464e-07};
static const double AIRY_AGN[] = {1.97339932091685679179e-02, 3.91103029615688277255e-01,
                                  1.06579897599595591108e+00, 9.39169229816650230044e-01,
                                  3.51465656105547619242e-01, 6.33888919628925490927e-02,
                                  5.85804113048388458567e-03, 2.82851600836737019778e-04,
                                  6.98793669997260967291e-06, 8.11789239554389293311e-08,
                                  3.41551784765923618484e-10};
static const double AIRY_AGD[] = {9.30892908077441974853e+00, 1.98352928718312140417e+01,
                                  1.55646628932864612953e+01, 5.47686069422975497931e+00,
                                  9.54293611618961883998e-01, 8.64580826352392193095e-02,
                                  4.12656523824222607191e-03, 1.01259085116509135510e-04,
                                  1.17166733214413521882e-06, 4.91834570062930015649e-09};
enum { AIRY_TERMS = 8 };

int kir_airy_ai(kir_kernel *k, trnc_dtype dt, int x) {
  uint32_t axes = k->values[x].axes;
  const float rsqrt_pi = 5.64189583547756286948e-01f;
  /* x < -2.09 (xn clamped there also where unused) */
  int xn = kir_ts(k, F, x, TRNC_NC_ALU_MIN, -2.09f, B, 0);
  int sn = kir_act(k, F, TRNC_NC_ACT_SQRT, xn, -1, 0);
  int zeta = kir_ts(k, F, kir_tt(k, F, MUL, kir_ts(k, F, xn, MUL, -2, B, 0), sn), TRNC_NC_ALU_DIV, 3, B, 0);
  int z = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, zeta, 1, 0), z2 = kir_tt(k, F, MUL, z, z);
  int fpart = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_tt(k, F, MUL, z2, horner_desc(k, z2, AIRY_AFN, 9)),
                     horner_desc(k, z2, AIRY_AFD, 9));
  int gpart = kir_tt(k, F, TRNC_NC_ALU_DIV, kir_tt(k, F, MUL, z, horner_desc(k, z2, AIRY_AGN, 11)),
                     horner_desc(k, z2, AIRY_AGD, 10));
  int sn_t = kir_act(k, F, TRNC_NC_ACT_SIN, zeta, 1, (float)(PI / 4));
  int cs_t = kir_act(k, F, TRNC_NC_ACT_COS, zeta, 1, (float)(PI / 4));
  int vn = kir_tt(k, F, TRNC_NC_ALU_SUB, kir_tt(k, F, MUL, sn_t, kir_ts(k, F, fpart, ADD, 1, B, 0)),
                  kir_tt(k, F, MUL, cs_t, gpart));
  vn = kir_tt(k, F, MUL, kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, kir_act(k, F, TRNC_NC_ACT_SQRT, sn, 1, 0), 1.0f / rsqrt_pi, 0), vn);
  /* x >= 2.09 */
  int xp = kir_ts(k, F, x, TRNC_NC_ALU_MAX, 2.09f, TRNC_NC_ALU_MIN, 103.892f);
  int sp = kir_act(k, F, TRNC_NC_ACT_SQRT, xp, 1, 0);
  int zp = kir_ts(k, F, kir_tt(k, F, MUL, kir_ts(k, F, xp, MUL, 2, B, 0), sp), TRNC_NC_ALU_DIV, 3, B, 0);
  int rz = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, zp, 1, 0);
  int vp = kir_ts(k, F, ratio(k, rz, AIRY_AN, 8, AIRY_AD, 8), MUL, rsqrt_pi, B, 0);
  int den = kir_tt(k, F, MUL, kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_SQRT, sp, 1, 0), MUL, 2, B, 0),
                    kir_act(k, F, TRNC_NC_ACT_EXP, zp, 1, 0));
  vp = kir_tt(k, F, TRNC_NC_ALU_DIV, vp, den);
  /* |x| < 2.09: f = sum x^3k / (2 3 5 6 ... (3k-1) 3k), g likewise from x */
  int xm = kir_ts(k, F, x, TRNC_NC_ALU_MAX, -2.09f, TRNC_NC_ALU_MIN, 2.09f);
  int zc = kir_tt(k, F, MUL, kir_tt(k, F, MUL, xm, xm), xm);
  int f = -1, g = xm, m = -1, n = xm;
  for (int i = 0; i < AIRY_TERMS; i++) {
    float k1 = (float)(2 + 3 * i), k2 = (float)(3 + 3 * i), k3 = (float)(4 + 3 * i);
    m = kir_ts(k, F, m < 0 ? zc : kir_tt(k, F, MUL, m, zc), TRNC_NC_ALU_DIV, k1, TRNC_NC_ALU_DIV, k2);
    n = kir_ts(k, F, kir_tt(k, F, MUL, n, zc), TRNC_NC_ALU_DIV, k2, TRNC_NC_ALU_DIV, k3);
    f = f < 0 ? kir_ts(k, F, m, ADD, 1, B, 0) : kir_tt(k, F, ADD, f, m);
    g = kir_tt(k, F, ADD, g, n);
  }
  int vm = kir_tt(k, F, TRNC_NC_ALU_SUB, kir_ts(k, F, f, MUL, 0.355028053887817239260f, B, 0),
                  kir_ts(k, F, g, MUL, 0.258819403792806798405f, B, 0));
  int v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, -2.09f, B, 0), vn, vm);
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_GE, 2.09f, B, 0), vp, v);
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_GT, 103.892f, B, 0), kir_const(k, F, axes, 0), v);
  /* NaN at +inf (-inf: sin(inf) in vn; NaN: vm is NaN) */
  int inf = kir_ts(k, F, x, TRNC_NC_ALU_EQ, INFINITY, B, 0);
  return kir_select(k, dt, inf, kir_const(k, F, axes, NAN), v);
}
