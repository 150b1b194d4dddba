/*
 * verify_cc.c — the verifier's rules for collective steps (see
 * trnc_nc_collective in include/trnc/neuroncore.h):
 *  - op, reduction, dtype, group name ([A-Za-z0-9_.:-], non-empty), group
 *    size (>= 1) and broadcast root (< group size) are valid;
 *  - src and dst are byte ranges inside HBM buffers, aligned to the element
 *    size, whose sizes agree with the op (all_gather: dst = G x src, ...);
 *  - every START's handle is new among the STARTs in flight, at most
 *    TRNC_NC_CC_MAX_INFLIGHT are in flight, every WAIT names a START in
 *    flight, and nothing is in flight at the end of the program;
 *  - between a START and its WAIT no kernel instruction touches dst's bytes
 *    (INTERNAL buffers are compared by their place in the HBM scratch, so a
 *    reused scratch range counts), and no other collective in flight writes
 *    them.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

typedef struct ccv {
  const trnc_nc_program *p;
  trnc_diags *diags;
  size_t errors;
} ccv;

static void cerr(ccv *v, size_t k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cerr(ccv *v, size_t k, const char *fmt, ...) {
  char where[96];
  snprintf(where, sizeof where, "step %zu %s", k, v->p->kernels[k].name);
  va_list ap;
  va_start(ap, fmt);
  nc_verify_error(v->diags, where, fmt, ap);
  va_end(ap);
  v->errors++;
}

/* A byte range in one address space: space -1 is the HBM scratch (INTERNAL
 * buffers), else the buffer index of an INPUT/OUTPUT buffer. */
typedef struct brange {
  int64_t space, lo, hi;
} brange;

static brange buffer_range(const trnc_nc_program *p, int32_t b, int64_t lo, int64_t hi) {
  const trnc_nc_buffer *bf = &p->bufs[b];
  if (bf->kind == TRNC_NC_BUF_INTERNAL) return (brange){-1, bf->offset + lo, bf->offset + hi};
  return (brange){b, lo, hi};
}

static bool ranges_overlap(brange a, brange b) {
  return a.space == b.space && a.lo < b.hi && b.lo < a.hi;
}

/* Bounding byte range of an HBM access pattern (false if not HBM or bad). */
static bool ap_range(const trnc_nc_program *p, const trnc_nc_ap *ap, brange *r) {
  if (ap->mem != TRNC_NC_MEM_HBM || ap->buffer < 0 || (size_t)ap->buffer >= p->nbufs) return false;
  int64_t lo, hi;
  if (!nc_ap_extent(ap, &lo, &hi)) return false;
  int64_t rows = (int64_t)(ap->partitions > 0 ? ap->partitions - 1 : 0) * ap->partition_stride *
                 (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  if (rows < 0) lo += rows;
  else hi += rows;
  *r = buffer_range(p, ap->buffer, lo, hi);
  return true;
}

static bool valid_group(const char *g) {
  if (!g[0]) return false;
  for (const char *c = g; *c; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == ':' || *c == '-';
    if (!ok) return false;
  }
  return true;
}

static bool operand_ok(ccv *v, size_t k, const char *which, int32_t b, int64_t off, int64_t bytes,
                       int64_t es) {
  if (b < 0 || (size_t)b >= v->p->nbufs) {
    cerr(v, k, "%s: HBM buffer index %d out of range (%zu buffers)", which, b, v->p->nbufs);
    return false;
  }
  const trnc_nc_buffer *bf = &v->p->bufs[b];
  if (off < 0 || bytes < 0 || off > bf->bytes || bytes > bf->bytes - off) {
    cerr(v, k, "%s: bytes [%" PRId64 ", %" PRId64 ") out of bounds of HBM buffer '%s' (%" PRId64 " bytes)",
         which, off, off + bytes, bf->name, bf->bytes);
    return false;
  }
  if (off % es || bytes % es) {
    cerr(v, k, "%s: offset %" PRId64 " and size %" PRId64 " must be multiples of the element size %" PRId64,
         which, off, bytes, es);
    return false;
  }
  return true;
}

/* Field rules of one START. */
static void check_start(ccv *v, size_t k, const trnc_nc_collective *cc) {
  if (!valid_group(cc->group))
    cerr(v, k, "group name '%s' must be non-empty and use only [A-Za-z0-9_.:-]", cc->group);
  if (cc->group_size < 1) cerr(v, k, "group size %d must be at least 1", cc->group_size);
  if (!trnc_nc_dtype_supported((trnc_dtype)cc->dtype)) {
    cerr(v, k, "dtype %d is not a NeuronCore element type", cc->dtype);
    return;
  }
  bool reduces = cc->op == TRNC_NC_CC_ALL_REDUCE || cc->op == TRNC_NC_CC_REDUCE_SCATTER;
  if (reduces && cc->reduce >= TRNC_NC_RED_COUNT) cerr(v, k, "unknown reduction %d", cc->reduce);
  if (cc->op == TRNC_NC_CC_BROADCAST && (cc->root < 0 || cc->root >= cc->group_size))
    cerr(v, k, "broadcast root %d outside the group of %d ranks", cc->root, cc->group_size);
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)cc->dtype);
  if (!operand_ok(v, k, "src", cc->src_buffer, cc->src_offset, cc->src_bytes, es) ||
      !operand_ok(v, k, "dst", cc->dst_buffer, cc->dst_offset, cc->dst_bytes, es) || cc->group_size < 1)
    return;
  int64_t g = cc->group_size, s = cc->src_bytes, d = cc->dst_bytes;
  switch (cc->op) {
    case TRNC_NC_CC_ALL_REDUCE: case TRNC_NC_CC_BROADCAST:
      if (s != d) cerr(v, k, "src (%" PRId64 " bytes) and dst (%" PRId64 " bytes) must be equal", s, d);
      break;
    case TRNC_NC_CC_ALL_GATHER:
      if (d != g * s)
        cerr(v, k, "dst holds %" PRId64 " bytes; all_gather of %" PRId64 " bytes over %" PRId64
             " ranks needs %" PRId64, d, s, g, g * s);
      break;
    case TRNC_NC_CC_REDUCE_SCATTER:
      if (s != g * d)
        cerr(v, k, "src holds %" PRId64 " bytes; reduce_scatter to %" PRId64 " bytes over %" PRId64
             " ranks needs %" PRId64, s, d, g, g * d);
      break;
    case TRNC_NC_CC_ALL_TO_ALL: {
      if (cc->nsplits == 0) {
        if (s != d || s % (g * es))
          cerr(v, k, "all_to_all with equal splits needs src = dst bytes divisible by %" PRId64
               " ranks x element size (src %" PRId64 ", dst %" PRId64 ")", g, s, d);
        break;
      }
      if (cc->nsplits != cc->group_size || cc->nsplits > TRNC_NC_CC_MAX_GROUP) {
        cerr(v, k, "all_to_all has %d splits for a group of %d ranks (at most %d)", cc->nsplits,
             cc->group_size, TRNC_NC_CC_MAX_GROUP);
        break;
      }
      int64_t si = 0, so = 0;
      for (int i = 0; i < cc->nsplits; i++) {
        if (cc->in_split[i] < 0 || cc->out_split[i] < 0 || cc->in_split[i] % es || cc->out_split[i] % es)
          cerr(v, k, "all_to_all split %d is negative or not a multiple of the element size", i);
        si += cc->in_split[i];
        so += cc->out_split[i];
      }
      if (si != s || so != d)
        cerr(v, k, "all_to_all splits sum to %" PRId64 "/%" PRId64 " bytes, src/dst hold %" PRId64
             "/%" PRId64, si, so, s, d);
      break;
    }
    default: break;
  }
}

typedef struct inflight {
  int32_t handle;
  size_t step;
  brange dst;
  bool dst_ok;
} inflight;

/* Reports every instruction of kernel k that touches a dst in flight. */
static void check_kernel_hazards(ccv *v, size_t k, const inflight *fl, int nfl) {
  const nc_kernel *kn = &v->p->kernels[k];
  int reported = 0;
  for (size_t i = 0; i < kn->n && reported < 4; i++)
    for (int s = 0; s < 5; s++) {
      brange r;
      if (!ap_range(v->p, nc_slot(&kn->instrs[i], s), &r)) continue;
      for (int f = 0; f < nfl; f++) {
        if (!fl[f].dst_ok || !ranges_overlap(r, fl[f].dst)) continue;
        char where[160];
        nc_where(v->p, k, i, where, sizeof where);
        cerr(v, k, "%s %s touches the destination of %s (step %zu, handle %d) before its cc_wait",
             where, nc_slot_names[s], v->p->kernels[fl[f].step].name, fl[f].step, fl[f].handle);
        reported++;
        break;
      }
    }
}

void nc_verify_collectives(const trnc_nc_program *p, trnc_diags *diags, size_t *errors) {
  ccv v = {p, diags, 0};
  inflight fl[TRNC_NC_CC_MAX_INFLIGHT];
  int nfl = 0;
  for (size_t k = 0; k < p->nkernels; k++) {
    const trnc_nc_collective *cc = p->kernels[k].cc;
    if (!cc) {
      if (nfl) check_kernel_hazards(&v, k, fl, nfl);
      continue;
    }
    if (cc->op >= TRNC_NC_CC_COUNT) {
      cerr(&v, k, "collective op %d out of range", cc->op);
      continue;
    }
    int at = -1;
    for (int f = 0; f < nfl; f++)
      if (fl[f].handle == cc->handle) at = f;
    if (cc->op == TRNC_NC_CC_WAIT) {
      if (at < 0) {
        cerr(&v, k, "cc_wait on handle %d, which no collective in flight holds", cc->handle);
        continue;
      }
      fl[at] = fl[--nfl];
      continue;
    }
    size_t before = v.errors;
    check_start(&v, k, cc);
    if (cc->handle < 0) cerr(&v, k, "handle %d must be >= 0", cc->handle);
    if (at >= 0) cerr(&v, k, "handle %d is still in flight (step %zu)", cc->handle, fl[at].step);
    if (nfl == TRNC_NC_CC_MAX_INFLIGHT) {
      cerr(&v, k, "more than %d collectives in flight", TRNC_NC_CC_MAX_INFLIGHT);
      continue;
    }
    inflight n = {cc->handle, k, {0, 0, 0}, v.errors == before};
    if (n.dst_ok) {
      n.dst = buffer_range(p, cc->dst_buffer, cc->dst_offset, cc->dst_offset + cc->dst_bytes);
      for (int f = 0; f < nfl; f++)
        if (fl[f].dst_ok && ranges_overlap(n.dst, fl[f].dst))
          cerr(&v, k, "destination overlaps that of %s (step %zu, handle %d), still in flight",
               p->kernels[fl[f].step].name, fl[f].step, fl[f].handle);
    }
    if (at < 0) fl[nfl++] = n;
  }
  for (int f = 0; f < nfl; f++)
    cerr(&v, fl[f].step, "handle %d is never waited for (no cc_wait before the end of the program)",
         fl[f].handle);
  *errors += v.errors;
}
