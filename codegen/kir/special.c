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
