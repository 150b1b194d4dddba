/*
 * decomp_attention.c — scaled-dot-product attention as the CPU flash kernel
 * computes it (aten::_scaled_dot_product_flash_attention_for_cpu and its
 * backward, torch 2.13), in ops trnc lowers: batched matmuls, a scale, the
 * masks, and the pieces of a max-subtracted softmax.
 *
 * Shapes: query [B,Hq,L,E], key and value [B,Hk,S,E], Hq = G*Hk (grouped-
 * query attention: query head h reads key/value head h / G). Query heads of
 * one group are stacked along the rows, so the matmuls run over [B*Hk]
 * batches of [G*L] rows without repeating key and value, and the backward's
 * key/value gradients sum over the group inside the matmul.
 *
 * Forward (everything in float32; half inputs are widened and the output
 * narrowed as the kernel's float accumulation does):
 *   s   = (scale*q) k^T  (+ attn_mask)  (causal: -inf where column > row)
 *   m   = max_j s        (0 for a row that is masked entirely)
 *   p   = exp(s - m),  l = sum_j p      (1 for a masked row)
 *   out = (p v) / l,   logsumexp = m + log(l)
 * A row masked entirely gives out 0 and logsumexp 0, as eager's kernel does.
 * Backward, with the probabilities recomputed from the saved logsumexp:
 *   p = exp(s - logsumexp),  dV = p^T dO,  dP = dO v^T,
 *   dS = p * (dP - rowsum(dO * out)),  dQ = scale * dS k,  dK = dS^T (scale*q).
 * The causal mask is top-left aligned (row i sees columns 0..i), as in the
 * kernel. Dropout is refused by the op's check (ir/ops.c).
 */
#include <math.h>

#include "passes/decompose.h"

#define V trnc_db_val
#define I trnc_db_int
#define F trnc_db_float
#define NONE trnc_db_none()

/* Dims and the float32, row-stacked operands shared by forward and backward. */
typedef struct attn {
  int64_t B, Hq, Hk, L, S, E;
  double scale;
  trnc_ref q3s;   /* scale*q as [B*Hk, G*L, E] */
  trnc_ref k3;    /* [B*Hk, S, E] */
  trnc_ref v3;    /* [B*Hk, S, E] */
  trnc_ref s;     /* masked scores [B,Hq,L,S] */
  bool may_mask_rows; /* an attn_mask may mask a whole row */
} attn;


/* x [B*Hk, G*L, C] seen as [B,Hq,L,C] (heads), and back (rows). */
static trnc_ref heads(trnc_db *b, const attn *a, trnc_ref x, int64_t c) {
  return trnc_db_view(b, x, 4, (const int64_t[]){a->B, a->Hq, a->L, c});
}
static trnc_ref rows(trnc_db *b, const attn *a, trnc_ref x, int64_t c) {
  return trnc_db_view(b, x, 3, (const int64_t[]){a->B * a->Hk, a->Hq / a->Hk * a->L, c});
}

static trnc_ref transpose(trnc_db *b, trnc_ref x) { return DB(b, TRANSPOSE, V(x), I(1), I(2)); }

/* The masked scores a->s and the operands they come from. query, key and
 * value are arguments q_arg.. of n; is_causal, attn_mask and scale are at
 * the given positions (the backward's come later than the forward's). */
static trnc_status scores(trnc_db *b, const trnc_node *n, uint32_t q_arg, uint32_t causal_arg,
                          uint32_t mask_arg, uint32_t scale_arg, attn *a) {
  trnc_ref q = n->args[q_arg].u.ref, k = n->args[q_arg + 1].u.ref, v = n->args[q_arg + 2].u.ref;
  const trnc_type *qt = trnc_db_type(b, q), *kt = trnc_db_type(b, k);
  a->B = qt->shape[0], a->Hq = qt->shape[1], a->L = qt->shape[2], a->E = qt->shape[3];
  a->Hk = kt->shape[1], a->S = kt->shape[2];
  a->scale = trnc_arg_number(&n->args[scale_arg], 1.0 / sqrt((double)a->E));
  const int64_t kv[3] = {a->B * a->Hk, a->S, a->E};
  a->q3s = DB(b, MUL_SCALAR, V(rows(b, a, trnc_db_f32(b, q), a->E)), F(a->scale));
  a->k3 = trnc_db_view(b, trnc_db_f32(b, k), 3, kv);
  a->v3 = trnc_db_view(b, trnc_db_f32(b, v), 3, kv);
  trnc_ref s = heads(b, a, DB(b, BMM, V(a->q3s), V(transpose(b, a->k3))), a->S);
  const trnc_arg *mask = &n->args[mask_arg];
  a->may_mask_rows = mask->kind == TRNC_ARG_VALUE;
  if (mask->kind == TRNC_ARG_VALUE) {
    trnc_ref m = mask->u.ref;
    if (trnc_db_type(b, m)->dtype != TRNC_F32) m = trnc_db_cast(b, m, TRNC_F32);
    s = DB(b, ADD, V(s), V(m), I(1));
  }
  if (trnc_arg_bool(n, causal_arg, false)) {
    trnc_arg i32 = trnc_db_dtype(TRNC_I32);
    trnc_ref row = DB(b, ARANGE, I(a->L), i32, NONE, NONE, NONE);
    trnc_ref col = DB(b, ARANGE, I(a->S), i32, NONE, NONE, NONE);
    trnc_ref keep = DB(b, GE, V(DB(b, UNSQUEEZE, V(row), I(1))), V(col));
    s = DB(b, WHERE, V(keep), V(s), F(-INFINITY));
  }
  a->s = s;
  return trnc_db_status(b);
}

static trnc_ref rowsum(trnc_db *b, trnc_ref x) {
  return DB(b, SUM, V(x), trnc_db_ints(b, (const int64_t[]){-1}, 1), trnc_db_bool(true), NONE);
}

/* Bytes per partition of keys (K^T) or values resident in SBUF for one
 * key/value head of the flash kernel, at most: it keeps both, double-
 * buffered across heads, in 64 KiB of the smallest target's 192 KiB. */
#define FLASH_KV_BYTES (16 * 1024)

/* The shape rule that picks codegen/kir/attention.c's flash-attention
 * kernel over this decomposition: no attn_mask, head dim <= 128 (one
 * contraction tile), keys and values resident in SBUF. At every length the
 * kernel costs less than the decomposition's batched matmuls and softmax
 * (cost model, trn2: the demo's T = 37, E = 24 heads 15 vs 37 us, T = 127
 * 22 vs 134 us), so there is no lower bound. */
static bool flash_kernel(trnc_db *b, const trnc_node *n) {
  if (n->args[5].kind == TRNC_ARG_VALUE) return false;
  const trnc_type *q = trnc_db_type(b, n->args[0].u.ref), *k = trnc_db_type(b, n->args[1].u.ref);
  int64_t esz = q->dtype == TRNC_F32 ? 4 : q->dtype == TRNC_BF16 || q->dtype == TRNC_F16 ? 2 : 0;
  if (!esz || trnc_db_type(b, n->args[2].u.ref)->shape[3] != q->shape[3]) return false;
  return q->shape[3] >= 1 && q->shape[3] <= 128 && k->shape[2] >= 1 && k->shape[2] * esz <= FLASH_KV_BYTES;
}

/* _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p,
 * is_causal, *, attn_mask, scale) -> (output, logsumexp); kept whole for the
 * flash kernel when flash_kernel() says so. */
trnc_status decomp_sdpa(trnc_db *b, const trnc_node *n) {
  if (flash_kernel(b, n)) return trnc_db_keep(b);
  attn a;
  trnc_status st = scores(b, n, 0, 4, 5, 6, &a);
  if (st) return st;
  trnc_ref m = DB(b, AMAX, V(a.s), trnc_db_ints(b, (const int64_t[]){-1}, 1), trnc_db_bool(true));
  if (a.may_mask_rows)
    m = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(m), F(-INFINITY))), F(0.0), V(m));
  trnc_ref p = DB(b, EXP, V(DB(b, SUB, V(a.s), V(m), I(1))));
  trnc_ref l = rowsum(b, p);
  if (a.may_mask_rows) l = DB(b, WHERE, V(DB(b, EQ_SCALAR, V(l), F(0.0))), F(1.0), V(l));
  trnc_ref pv = heads(b, &a, DB(b, BMM, V(rows(b, &a, p, a.S)), V(a.v3)), a.E);
  trnc_ref out = DB(b, DIV, V(pv), V(l));
  trnc_ref lse = DB(b, ADD, V(m), V(DB(b, LOG, V(l))), I(1));
  lse = trnc_db_view(b, lse, 3, (const int64_t[]){a.B, a.Hq, a.L});
  if ((st = trnc_db_result(b, 0, out))) return st;
  return trnc_db_result(b, 1, lse);
}

/* SBUF per partition for the backward kernel's fp32 dQ accumulators of one
 * key/value head's query tiles (codegen/kir/attention_bw.c FB_DQ_BYTES). */
#define FLASH_BW_DQ_BYTES (64 * 1024)

/* The shape rule that picks codegen/kir/attention_bw.c's flash backward:
 * the forward's rule (the backward then reads the flash kernel's
 * logsumexp, as the op's contract says; with torch 2.13 only the flash
 * forward's saved outputs reach this op) for 2-byte dtypes, every operand
 * of one dtype, and the dQ accumulators within FLASH_BW_DQ_BYTES. fp32
 * keeps the decomposition (P^T and dS^T are DMA transposes, 2-byte only). */
static bool flash_bw_kernel(trnc_db *b, const trnc_node *n) {
  if (n->args[8].kind == TRNC_ARG_VALUE) return false;
  const trnc_type *q = trnc_db_type(b, n->args[1].u.ref), *k = trnc_db_type(b, n->args[2].u.ref);
  if (q->dtype != TRNC_BF16 && q->dtype != TRNC_F16) return false;
  for (int a = 0; a < 5; a++)
    if (trnc_db_type(b, n->args[a].u.ref)->dtype != q->dtype) return false;
  if (trnc_db_type(b, n->args[3].u.ref)->shape[3] != q->shape[3] || k->shape[1] < 1 || q->shape[1] % k->shape[1])
    return false;
  int64_t g = q->shape[1] / k->shape[1], nq = (q->shape[2] + 127) / 128;
  return q->shape[3] >= 1 && q->shape[3] <= 128 && k->shape[2] >= 1 && k->shape[2] * 2 <= FLASH_KV_BYTES &&
         g * nq * q->shape[3] * 4 <= FLASH_BW_DQ_BYTES;
}

/* _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key,
 * value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale)
 * -> (grad_query, grad_key, grad_value); kept whole for the flash backward
 * kernel when flash_bw_kernel() says so. */
trnc_status decomp_sdpa_bw(trnc_db *b, const trnc_node *n) {
  if (flash_bw_kernel(b, n)) return trnc_db_keep(b);
  attn a;
  trnc_status st = scores(b, n, 1, 7, 8, 9, &a);
  if (st) return st;
  trnc_ref dout = trnc_db_f32(b, n->args[0].u.ref), out = trnc_db_f32(b, n->args[4].u.ref);
  trnc_ref lse = DB(b, UNSQUEEZE, V(n->args[5].u.ref), I(-1));
  trnc_ref p = DB(b, EXP, V(DB(b, SUB, V(a.s), V(lse), I(1))));
  trnc_ref p3 = rows(b, &a, p, a.S), do3 = rows(b, &a, dout, a.E);
  const int64_t kv[4] = {a.B, a.Hk, a.S, a.E};
  trnc_ref dv = trnc_db_view(b, DB(b, BMM, V(transpose(b, p3)), V(do3)), 4, kv);
  trnc_ref dp = heads(b, &a, DB(b, BMM, V(do3), V(transpose(b, a.v3))), a.S);
  trnc_ref delta = rowsum(b, DB(b, MUL, V(dout), V(out)));
  trnc_ref ds3 = rows(b, &a, DB(b, MUL, V(p), V(DB(b, SUB, V(dp), V(delta), I(1)))), a.S);
  trnc_ref dq = DB(b, MUL_SCALAR, V(heads(b, &a, DB(b, BMM, V(ds3), V(a.k3)), a.E)), F(a.scale));
  trnc_ref dk = trnc_db_view(b, DB(b, BMM, V(transpose(b, ds3)), V(a.q3s)), 4, kv);
  if ((st = trnc_db_result(b, 0, dq)) || (st = trnc_db_result(b, 1, dk))) return st;
  return trnc_db_result(b, 2, dv);
}
