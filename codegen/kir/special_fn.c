/*
 * special_fn.c — lowering rules of ndtri, nextafter and the Hurwitz zeta
 * function as kernel IR (elementwise, fp32 intermediates; ops of rules.c's
 * composite table).
 *
 *   ndtri(y)   Cephes ndtri.c as ATen's CPU kernel (calc_ndtri) evaluates it
 *              in fp32: y > 1 - exp(-2) uses 1 - y and flips the sign; for
 *              exp(-2) < y: w + w w^2 P0(w^2)/Q0(w^2), w = y - 1/2, times
 *              sqrt(2 pi); below: t = sqrt(-2 log y), t - log(t)/t - z P(z)/Q(z),
 *              z = 1/t, with the rational of t < 8 or of t >= 8. -inf at 0, +inf
 *              at 1, NaN outside [0, 1] and at NaN.
 *   nextafter(x, y)   the float next to x towards y, in exact fp32 arithmetic
 *              (no bit reinterpretation: kernel values are numbers): with M the
 *              dtype's mantissa bits, p = |x| 2^-(M+1) (1 + 2^-min(M+2, 23)) lies
 *              strictly between half an ulp of x and one ulp above (half below a
 *              power of two: the ulp on that side), so x +- p rounds to nearest
 *              even onto x's neighbour; below the dtype's smallest normal times 2
 *              the step is the subnormal spacing 2^(Emin - M) itself, and below
 *              2^-60 both run on x 2^64 (exact) so that p stays a normal fp32.
 *              x == y gives y (nextafter(0, -0) = -0), a NaN operand NaN, +-inf
 *              the largest finite value of x's sign, and a step onto 0 keeps x's
 *              sign (eager steps the bits: -min_subnormal -> -0).
 *   zeta(x, q) the Hurwitz zeta function sum_{i>=0} (q + i)^-x as Cephes zeta.c
 *              (ATen's CPU kernel, which sums in double): the terms i = 0 .. N
 *              summed directly (N = KIR_ZETA_TERMS), then the Euler-Maclaurin
 *              tail at w = q + N: w^(1-x)/(x-1) - w^-x/2 + sum_j x (x+1) ... (x+2j)
 *              w^(-x-2j-1) / A[j] over KIR_ZETA_BERNOULLI terms (A[j] = (2j+2)! /
 *              B_2j+2). ATen stops at a relative term below 1.1e-16 and runs
 *              its direct sum on to q + i > 9; here w >= 9 needs q >= -16 (q < 0
 *              only with an integer x): NaN below, the op table's limit. The
 *              tail's terms shrink like ((x + 2j) / (2 pi w))^2, below 0.7 at
 *              w >= 9 wherever w^-x does not underflow fp32 (x < 103 / log w). +inf at x = 1,
 *              NaN for x < 1, +inf at q a non-positive integer, NaN for q < 0
 *              and x not an integer, as eager; at x = inf q^-inf for q <= 1 and
 *              NaN above, NaN at q = inf and for x above DBL_MAX^(1/23) with
 *              q > 1 (eager's double tail: 0 inf).
 */
#include <float.h>
#include <math.h>

#include "codegen/kir/kir.h"

#define F TRNC_F32
#define B TRNC_NC_ALU_BYPASS
#define MUL TRNC_NC_ALU_MUL
#define ADD TRNC_NC_ALU_ADD
#define SUB TRNC_NC_ALU_SUB
#define DIV TRNC_NC_ALU_DIV

/* Cephes polevl: c[0] v^n + c[1] v^(n-1) + ... + c[n], in its order of
 * roundings ((c[0] v + c[1]) v + ...). */
static int polevl(kir_kernel *k, int v, const double *c, int n) {
  int p = kir_const(k, F, k->values[v].axes, (float)c[0]);
  for (int i = 1; i <= n; i++) p = kir_ts(k, F, kir_tt(k, F, MUL, p, v), ADD, (float)c[i], B, 0);
  return p;
}

/* ---- ndtri ------------------------------------------------------------------ */

/* Cephes ndtri.c: |y - 1/2| <= 3/8 ... in w^2; then in z = 1/sqrt(-2 log y)
 * for sqrt(-2 log y) in [2, 8) and [8, 64). */
static const double NDTRI_P0[5] = {-5.99633501014107895267E1, 9.80010754185999661536E1,
                                   -5.66762857469070293439E1, 1.39312609387279679503E1,
                                   -1.23916583867381258016E0};
static const double NDTRI_Q0[9] = {1.0,
                                   1.95448858338141759834E0,
                                   4.67627912898881538453E0,
                                   8.63602421390890590575E1,
                                   -2.25462687854119370527E2,
                                   2.00260212380060660359E2,
                                   -8.20372256168333339912E1,
                                   1.59056225126211695515E1,
                                   -1.18331621121330003142E0};
static const double NDTRI_P1[9] = {4.05544892305962419923E0,   3.15251094599893866154E1,
                                   5.71628192246421288162E1,   4.40805073893200834700E1,
                                   1.46849561928858024014E1,   2.18663306850790267539E0,
                                   -1.40256079171354495875E-1, -3.50424626827848203418E-2,
                                   -8.57456785154685413611E-4};
static const double NDTRI_Q1[9] = {1.0,
                                   1.57799883256466749731E1,
                                   4.53907635128879210584E1,
                                   4.13172038254672030440E1,
                                   1.50425385692907503408E1,
                                   2.50464946208309415979E0,
                                   -1.42182922854787788574E-1,
                                   -3.80806407691578277194E-2,
                                   -9.33259480895457427372E-4};
static const double NDTRI_P2[9] = {3.23774891776946035970E0,  6.91522889068984211695E0,
                                   3.93881025292474443415E0,  1.33303460815807542389E0,
                                   2.01485389549179081538E-1, 1.23716634817820021358E-2,
                                   3.01581553508235416007E-4, 2.65806974686737550832E-6,
                                   6.23974539184983293730E-9};
static const double NDTRI_Q2[9] = {1.0,
                                   6.02427039364742014255E0,
                                   3.67983563856160859403E0,
                                   1.37702099489081330271E0,
                                   2.16236993594496635890E-1,
                                   1.34204006088543189037E-2,
                                   3.28014464682127739104E-4,
                                   2.89247864745380683936E-6,
                                   6.79019408009981274425E-9};

int kir_ndtri(kir_kernel *k, trnc_dtype dt, int x) {
  uint32_t axes = k->values[x].axes;
  const float e2 = 0.13533528323661269189f; /* exp(-2) */
  int flip = kir_ts(k, F, x, TRNC_NC_ALU_GT, 1.0f - e2, B, 0);
  int y = kir_select(k, F, flip, kir_ts(k, F, x, MUL, -1, ADD, 1), x);
  /* exp(-2) < y: (w + w (w^2 P0 / Q0)) sqrt(2 pi) */
  int w = kir_ts(k, F, y, ADD, -0.5f, B, 0), w2 = kir_tt(k, F, MUL, w, w);
  int r = kir_tt(k, F, DIV, kir_tt(k, F, MUL, w2, polevl(k, w2, NDTRI_P0, 4)), polevl(k, w2, NDTRI_Q0, 8));
  int mid = kir_ts(k, F, kir_tt(k, F, ADD, w, kir_tt(k, F, MUL, w, r)), MUL, 2.50662827463100050242f, B, 0);
  /* y <= exp(-2): t - log(t)/t - z P(z)/Q(z), t = sqrt(-2 log y), z = 1/t */
  int t = kir_act(k, F, TRNC_NC_ACT_SQRT, kir_act(k, F, TRNC_NC_ACT_LOG, y, 1, 0), -2, 0);
  int t0 = kir_tt(k, F, SUB, t, kir_tt(k, F, DIV, kir_act(k, F, TRNC_NC_ACT_LOG, t, 1, 0), t));
  int z = kir_act(k, F, TRNC_NC_ACT_RECIPROCAL, t, 1, 0);
  int r1 = kir_tt(k, F, DIV, kir_tt(k, F, MUL, z, polevl(k, z, NDTRI_P1, 8)), polevl(k, z, NDTRI_Q1, 8));
  int r2 = kir_tt(k, F, DIV, kir_tt(k, F, MUL, z, polevl(k, z, NDTRI_P2, 8)), polevl(k, z, NDTRI_Q2, 8));
  int tail = kir_tt(k, F, SUB, t0, kir_select(k, F, kir_ts(k, F, t, TRNC_NC_ALU_LT, 8, B, 0), r1, r2));
  tail = kir_select(k, F, flip, tail, kir_ts(k, F, tail, MUL, -1, B, 0));
  int v = kir_select(k, F, kir_ts(k, F, y, TRNC_NC_ALU_GT, e2, B, 0), mid, tail);
  /* -inf at 0, +inf at 1, NaN outside [0, 1] (NaN propagates through the rest) */
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 0, B, 0), kir_const(k, F, axes, -INFINITY), v);
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 1, B, 0), kir_const(k, F, axes, INFINITY), v);
  int out = kir_tt(k, F, TRNC_NC_ALU_OR, kir_ts(k, F, x, TRNC_NC_ALU_LT, 0, B, 0),
                   kir_ts(k, F, x, TRNC_NC_ALU_GT, 1, B, 0));
  return kir_select(k, dt, out, kir_const(k, F, axes, NAN), v);
}

/* ---- nextafter ---------------------------------------------------------------- */

int kir_nextafter(kir_kernel *k, trnc_dtype dt, int x, int y) {
  uint32_t axes = k->values[x].axes;
  /* the dtype's mantissa bits, smallest normal exponent, largest finite value */
  int M = dt == TRNC_BF16 ? 7 : dt == TRNC_F16 ? 10 : 23, emin = dt == TRNC_F16 ? -14 : -126;
  float big = dt == TRNC_BF16 ? 0x1.fep127f : dt == TRNC_F16 ? 65504.0f : 0x1.fffffep127f;
  if (dt != TRNC_F32 && dt != TRNC_BF16 && dt != TRNC_F16) return -1;
  float c = ldexpf(1.0f + ldexpf(1.0f, -(M + 2 < 23 ? M + 2 : 23)), -(M + 1));
  int ax = kir_act(k, F, TRNC_NC_ACT_ABS, x, 1, 0);
  /* below 2^-60 (f32 and bf16, whose smallest normal is 2^-126): x 2^64
   * (exact), so that the step p is a normal fp32 */
  bool scale = emin + 1 <= -60;
  int tiny = scale ? kir_ts(k, F, ax, TRNC_NC_ALU_LT, 0x1p-60f, B, 0) : -1;
  int xs = scale ? kir_select(k, F, tiny, kir_ts(k, F, x, MUL, 0x1p64f, B, 0), x) : x;
  int p = kir_ts(k, F, kir_act(k, F, TRNC_NC_ACT_ABS, xs, 1, 0), MUL, c, B, 0);
  /* below twice the smallest normal: the subnormal spacing (scaled too) */
  int low = kir_ts(k, F, ax, TRNC_NC_ALU_LT, ldexpf(1.0f, emin + 1), B, 0);
  p = kir_select(k, F, low, kir_const(k, F, axes, ldexpf(1.0f, emin - M + (scale ? 64 : 0))), p);
  int up = kir_tt(k, F, TRNC_NC_ALU_GT, y, x);
  int r = kir_select(k, F, up, kir_tt(k, F, ADD, xs, p), kir_tt(k, F, SUB, xs, p));
  if (scale) r = kir_select(k, F, tiny, kir_ts(k, F, r, MUL, 0x1p-64f, B, 0), r);
  /* a step onto 0 keeps x's sign (x 0 is +-0 with it) */
  r = kir_select(k, F, kir_ts(k, F, r, TRNC_NC_ALU_EQ, 0, B, 0), kir_ts(k, F, x, MUL, 0, B, 0), r);
  /* +-inf: the largest finite value of x's sign */
  int sgn = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_GT, 0, B, 0), kir_const(k, F, axes, big),
                       kir_const(k, F, axes, -big));
  r = kir_select(k, F, kir_ts(k, F, ax, TRNC_NC_ALU_EQ, INFINITY, B, 0), sgn, r);
  /* x == y: y; a NaN operand: NaN (x + y) */
  r = kir_select(k, F, kir_tt(k, F, TRNC_NC_ALU_EQ, x, y), y, r);
  int nan = kir_tt(k, F, TRNC_NC_ALU_OR, kir_tt(k, F, TRNC_NC_ALU_NE, x, x), kir_tt(k, F, TRNC_NC_ALU_NE, y, y));
  return kir_select(k, dt, nan, kir_tt(k, F, ADD, x, y), r);
}

/* ---- the Hurwitz zeta function ---------------------------------------------------- */

/* Cephes zeta.c's A[j] = (2j+2)! / B_{2j+2}: the Euler-Maclaurin coefficients. */
static const double ZETA_A[KIR_ZETA_BERNOULLI] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
                                                 -1.8924375803183791606e9};

int kir_zeta(kir_kernel *k, trnc_dtype dt, int x, int q) {
  uint32_t axes = k->values[x].axes;
  int nx = kir_ts(k, F, x, MUL, -1, B, 0);
  int s0 = kir_tt(k, F, TRNC_NC_ALU_POW, q, nx), s = s0, w = q, b = s0;
  for (int i = 1; i <= KIR_ZETA_TERMS; i++) {
    w = kir_ts(k, F, q, ADD, (float)i, B, 0);
    b = kir_tt(k, F, TRNC_NC_ALU_POW, w, nx);
    s = kir_tt(k, F, ADD, s, b);
  }
  /* the tail at w = q + N (its term b = w^-x counted above):
   * b w / (x - 1) - b/2 + sum_j b x (x+1) ... (x+2j) / (w^(2j+1) A[j]) */
  int w1x = kir_tt(k, F, TRNC_NC_ALU_POW, w, kir_ts(k, F, x, MUL, -1, ADD, 1)); /* b w: no underflow at large q */
  s = kir_tt(k, F, ADD, s, kir_tt(k, F, DIV, w1x, kir_ts(k, F, x, ADD, -1, B, 0)));
  s = kir_tt(k, F, SUB, s, kir_ts(k, F, b, MUL, 0.5f, B, 0));
  int c = b;
  for (int j = 0; j < KIR_ZETA_BERNOULLI; j++) {
    c = kir_tt(k, F, DIV, kir_tt(k, F, MUL, c, kir_ts(k, F, x, ADD, (float)(2 * j), B, 0)), w);
    s = kir_tt(k, F, ADD, s, kir_ts(k, F, c, DIV, (float)ZETA_A[j], B, 0));
    if (j + 1 < KIR_ZETA_BERNOULLI)
      c = kir_tt(k, F, DIV, kir_tt(k, F, MUL, c, kir_ts(k, F, x, ADD, (float)(2 * j + 1), B, 0)), w);
  }
  /* x = inf: q^-inf for q <= 1 (inf, or 1 at q = 1), NaN above (as eager's
   * tail: 0 inf) */
  int xinf = kir_ts(k, F, x, TRNC_NC_ALU_EQ, INFINITY, B, 0);
  int v = kir_select(k, F, kir_tt(k, F, TRNC_NC_ALU_AND, xinf, kir_ts(k, F, q, TRNC_NC_ALU_LE, 1, B, 0)), s0, s);
  /* eager's order of checks, the last select winning: q <= 0 and x not an
   * integer NaN (and q below the direct terms' reach, the documented limit),
   * q a non-positive integer +inf, x < 1 NaN, x = 1 +inf */
  int qle0 = kir_ts(k, F, q, TRNC_NC_ALU_LE, 0, B, 0);
  int bad = kir_tt(k, F, TRNC_NC_ALU_OR, kir_tt(k, F, TRNC_NC_ALU_NE, x, kir_round(k, F, x)),
                   kir_ts(k, F, q, TRNC_NC_ALU_LT, (float)-KIR_ZETA_MIN_Q, B, 0));
  v = kir_select(k, F, kir_tt(k, F, TRNC_NC_ALU_AND, qle0, bad), kir_const(k, F, axes, NAN), v);
  int qint = kir_tt(k, F, TRNC_NC_ALU_EQ, q, kir_round(k, F, q));
  v = kir_select(k, F, kir_tt(k, F, TRNC_NC_ALU_AND, qle0, qint), kir_const(k, F, axes, INFINITY), v);
  /* eager's double x (x+1) ... (x+22) overflows above x = DBL_MAX^(1/23): its
   * tail is then inf 0 = NaN wherever q^-x underflowed (q > 1) */
  int huge = kir_tt(k, F, TRNC_NC_ALU_AND, kir_ts(k, F, x, TRNC_NC_ALU_GT, (float)exp(log(DBL_MAX) / 23), B, 0),
                    kir_ts(k, F, q, TRNC_NC_ALU_GT, 1, B, 0));
  huge = kir_tt(k, F, TRNC_NC_ALU_OR, huge, kir_ts(k, F, q, TRNC_NC_ALU_EQ, INFINITY, B, 0)); /* 0 inf too */
  v = kir_select(k, F, huge, kir_const(k, F, axes, NAN), v);
  v = kir_select(k, F, kir_ts(k, F, x, TRNC_NC_ALU_LT, 1, B, 0), kir_const(k, F, axes, NAN), v);
  return kir_select(k, dt, kir_ts(k, F, x, TRNC_NC_ALU_EQ, 1, B, 0), kir_const(k, F, axes, INFINITY), v);
}
