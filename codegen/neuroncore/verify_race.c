/*
 * verify_race.c — the dependency (race) rule of trnc_nc_program_verify in
 * O(n log n) per kernel: two instructions on different queues that touch a
 * common byte, at least one of them writing it, must be ordered by
 * semaphore waits (directly or through other instructions).
 *
 * The check is the happens-before algorithm of dynamic race detectors
 * (FastTrack, Flanagan & Freund, PLDI 2009) run over the dependency
 * schedule: a vector clock per instruction (vc[e] = how many instructions of
 * queue e complete before it starts) and, per memory cell, its last writer
 * and, per queue, its last reader since that write. Visiting instructions in
 * a topological order, an access races iff the cell's last writer (or, for
 * a write, a last reader) is not ordered before it. The first race on every
 * cell is found, so a program with a race is always rejected; which pairs
 * are named after the first one per cell may differ from a pairwise search.
 *
 * Cells: SBUF and PSUM operands by their bounding box (partition range x
 * byte range of a partition, as the pairwise check did); HBM operands by
 * their exact bytes, as the contiguous runs of the access pattern after
 * sorting its dims by stride and merging contiguous ones (a bounding box
 * when there are more than RUN_CAP runs, which is conservative). Input
 * buffers are read-only (check_ap rejects writes), so reads of them cannot
 * race and are not tracked. The byte ranges of a kernel are compressed to
 * their distinct boundaries per memory space; a segment tree over them
 * holds, per node, the largest last-writer and last-reader positions per
 * queue, with lazy "written by (q, pos)" and "read by (q, pos)" updates
 * (positions only grow along a queue, so a read sets the maximum).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

#define Q TRNC_NC_ENGINE_COUNT
#define MAX_RACE_REPORTS 16
#define RUN_CAP 16384 /* HBM runs per operand before its bounding box is used */
#define NC_MAX_PARTITIONS 128 /* SBUF/PSUM partitions of every target (target.c) */

/* One byte range of one operand: memory space (0..127 SBUF partition
 * segment, 128..255 PSUM segment, 256 HBM scratch, 257 + b buffer b) and
 * [lo, hi); ci/cj: compressed coordinates. */
typedef struct hb_range {
  int64_t space, lo, hi;
  uint32_t ci, cj;
} hb_range;

typedef struct hb_fp {
  uint32_t first, n; /* ranges[first .. first + n) */
  uint8_t slot;      /* 0 dst, 1 dst2, 2..4 src0..2, 5 dst read by matmul acc */
  bool write;
} hb_fp;

typedef struct hb_node {
  int32_t w[Q], r[Q]; /* max last-writer / last-reader position per queue, -1 none */
} hb_node;

typedef struct hb_tag {
  int32_t r[Q];   /* reads: queue e read at r[e] (-1: no change) */
  int32_t wpos;   /* >= 0: written by queue wq at wpos (clears readers) */
  int8_t wq;
  bool any;
} hb_tag;

typedef struct hb {
  hb_range *rg;
  size_t nrg, caprg;
  hb_fp *fp;
  uint32_t *fp_first; /* per instruction: first footprint (n + 1 entries) */
  int64_t (*coord)[2];
  size_t ncoord;
  hb_node *node;
  hb_tag *tag;
  size_t size; /* leaves */
  bool nomem;
} hb;

static hb_range *add_range(hb *h) {
  if (h->nrg == h->caprg) {
    size_t c = h->caprg ? 2 * h->caprg : 1024;
    hb_range *n = realloc(h->rg, c * sizeof *n);
    if (!n) {
      h->nomem = true;
      return NULL;
    }
    h->rg = n;
    h->caprg = c;
  }
  return &h->rg[h->nrg++];
}

static void push_range(hb *h, int64_t space, int64_t lo, int64_t hi) {
  if (hi <= lo) return;
  hb_range *r = add_range(h);
  if (r) *r = (hb_range){space, lo, hi, 0, 0};
}

typedef struct hdim {
  int64_t s, c;
} hdim;

static int hdim_cmp(const void *x, const void *y) {
  const hdim *a = x, *b = y;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* Ranges of an HBM operand in space `space` whose bytes start at `base`. */
static void hbm_ranges(hb *h, const trnc_nc_ap *ap, int64_t space, int64_t base) {
  int64_t es = (int64_t)trnc_nc_dtype_size((trnc_dtype)ap->dtype);
  hdim d[TRNC_NC_MAX_FREE + 1];
  int nd = 0;
  int64_t off = base + ap->offset;
  for (int i = -1; i < ap->nfree; i++) {
    int64_t s = i < 0 ? ap->partition_stride : ap->free[i].stride;
    int64_t c = i < 0 ? ap->partitions : ap->free[i].count;
    if (c <= 0) return; /* no elements */
    if (c == 1 || s == 0) continue;
    if (s < 0) { /* the same elements, walked upwards */
      off += s * (c - 1) * es;
      s = -s;
    }
    d[nd++] = (hdim){s, c};
  }
  qsort(d, (size_t)nd, sizeof *d, hdim_cmp);
  /* merge a dim into the next when it continues it contiguously */
  int m = 0;
  for (int i = 0; i < nd; i++) {
    if (m > 0 && d[i].s == d[m - 1].s * d[m - 1].c) {
      d[m - 1].c *= d[i].c;
      continue;
    }
    d[m++] = d[i];
  }
  int64_t run = es;
  int first = 0;
  if (m > 0 && d[0].s == 1) {
    run = d[0].c * es;
    first = 1;
  }
  int64_t runs = 1;
  for (int i = first; i < m; i++) {
    if (runs > RUN_CAP / d[i].c) {
      runs = -1;
      break;
    }
    runs *= d[i].c;
  }
  if (runs < 0) { /* too many runs: the bounding box */
    int64_t hi = off + run;
    for (int i = first; i < m; i++) hi += d[i].s * (d[i].c - 1) * es;
    push_range(h, space, off, hi);
    return;
  }
  int64_t idx[TRNC_NC_MAX_FREE + 1] = {0};
  for (;;) {
    int64_t o = off;
    for (int i = first; i < m; i++) o += idx[i] * d[i].s * es;
    push_range(h, space, o, o + run);
    int i = first;
    for (; i < m; i++) {
      if (++idx[i] < d[i].c) break;
      idx[i] = 0;
    }
    if (i == m) break;
  }
}

static int coord_cmp(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] < b[1] ? -1 : a[1] > b[1];
}

static uint32_t coord_find(const hb *h, int64_t space, int64_t x) {
  size_t lo = 0, hi = h->ncoord;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int64_t key[2] = {space, x};
    if (coord_cmp(h->coord[mid], key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return (uint32_t)lo;
}

/* ---- segment tree --------------------------------------------------------- */

static void tag_apply(hb *h, size_t x, const hb_tag *t) {
  hb_node *n = &h->node[x];
  hb_tag *g = &h->tag[x];
  if (t->wpos >= 0) {
    for (int e = 0; e < Q; e++) n->w[e] = n->r[e] = -1;
    n->w[t->wq] = t->wpos;
    *g = *t;
  } else {
    for (int e = 0; e < Q; e++)
      if (t->r[e] >= 0) g->r[e] = t->r[e];
    g->any = true;
  }
  for (int e = 0; e < Q; e++)
    if (t->r[e] >= 0) n->r[e] = t->r[e];
}

static void tag_push(hb *h, size_t x) {
  hb_tag *g = &h->tag[x];
  if (!g->any) return;
  tag_apply(h, 2 * x, g);
  tag_apply(h, 2 * x + 1, g);
  for (int e = 0; e < Q; e++) g->r[e] = -1;
  g->wpos = -1;
  g->any = false;
}

static void tree_query(hb *h, size_t x, size_t nl, size_t nr, size_t l, size_t r, hb_node *acc) {
  if (r <= nl || nr <= l) return;
  if (l <= nl && nr <= r) {
    for (int e = 0; e < Q; e++) {
      if (h->node[x].w[e] > acc->w[e]) acc->w[e] = h->node[x].w[e];
      if (h->node[x].r[e] > acc->r[e]) acc->r[e] = h->node[x].r[e];
    }
    return;
  }
  tag_push(h, x);
  size_t mid = (nl + nr) / 2;
  tree_query(h, 2 * x, nl, mid, l, r, acc);
  tree_query(h, 2 * x + 1, mid, nr, l, r, acc);
}

static void tree_update(hb *h, size_t x, size_t nl, size_t nr, size_t l, size_t r, const hb_tag *t) {
  if (r <= nl || nr <= l) return;
  if (l <= nl && nr <= r) {
    tag_apply(h, x, t);
    return;
  }
  tag_push(h, x);
  size_t mid = (nl + nr) / 2;
  tree_update(h, 2 * x, nl, mid, l, r, t);
  tree_update(h, 2 * x + 1, mid, nr, l, r, t);
  for (int e = 0; e < Q; e++) {
    const hb_node *a = &h->node[2 * x], *b = &h->node[2 * x + 1];
    h->node[x].w[e] = a->w[e] > b->w[e] ? a->w[e] : b->w[e];
    h->node[x].r[e] = a->r[e] > b->r[e] ? a->r[e] : b->r[e];
  }
}

/* ---- the check ------------------------------------------------------------ */

/* Footprints and ranges of every instruction of kernel k. */
static void collect(hb *h, const trnc_nc_program *p, const nc_kernel *kn) {
  /* partition segments of SBUF (m = 0) and PSUM (m = 1), bounded by every
   * operand's first and end partition (the verifier checked them against
   * the target's partitions, at most NC_MAX_PARTITIONS) */
  bool bound[2][NC_MAX_PARTITIONS + 1] = {{false}};
  for (size_t i = 0; i < kn->n; i++)
    for (int s = 0; s < 5; s++) {
      const trnc_nc_ap *ap = nc_slot(&kn->instrs[i], s);
      if (ap->mem != TRNC_NC_MEM_SBUF && ap->mem != TRNC_NC_MEM_PSUM) continue;
      int m = ap->mem == TRNC_NC_MEM_PSUM;
      bound[m][ap->start_partition] = bound[m][ap->start_partition + ap->partitions] = true;
    }
  int seg[2][NC_MAX_PARTITIONS];
  for (int m = 0; m < 2; m++) {
    int s = -1;
    for (int q = 0; q < NC_MAX_PARTITIONS; q++) {
      if (q == 0 || bound[m][q]) s++;
      seg[m][q] = s;
    }
  }
  size_t nfp = 0;
  h->fp_first[0] = 0;
  for (size_t i = 0; i < kn->n; i++) {
    const trnc_nc_instr *in = &kn->instrs[i];
    for (int s = 0; s < 6 && !h->nomem; s++) {
      if (s == 5 && !(in->op == TRNC_NC_OP_MATMUL && in->mode == 1)) continue;
      const trnc_nc_ap *ap = s < 5 ? nc_slot(in, s) : &in->dst;
      int64_t lo, hi;
      if (ap->mem == TRNC_NC_MEM_NONE || !nc_ap_extent(ap, &lo, &hi)) continue;
      size_t first = h->nrg;
      if (ap->mem == TRNC_NC_MEM_HBM) {
        const trnc_nc_buffer *b = &p->bufs[ap->buffer];
        if (b->kind == TRNC_NC_BUF_INPUT) continue;
        bool scratch = b->kind == TRNC_NC_BUF_INTERNAL;
        hbm_ranges(h, ap, scratch ? 256 : 257 + ap->buffer, scratch ? b->offset : 0);
      } else {
        int m = ap->mem == TRNC_NC_MEM_PSUM;
        for (int q = ap->start_partition; q < ap->start_partition + ap->partitions; q++)
          if (q == ap->start_partition || seg[m][q] != seg[m][q - 1]) push_range(h, 128 * m + seg[m][q], lo, hi);
      }
      if (h->nrg == first) continue;
      h->fp[nfp++] = (hb_fp){(uint32_t)first, (uint32_t)(h->nrg - first), (uint8_t)s, s < 2};
    }
    h->fp_first[i + 1] = (uint32_t)nfp;
  }
}

static bool build_tree(hb *h) {
  h->coord = malloc((2 * h->nrg + 1) * sizeof *h->coord);
  if (!h->coord) return false;
  size_t n = 0;
  for (size_t i = 0; i < h->nrg; i++) {
    h->coord[n][0] = h->coord[n + 1][0] = h->rg[i].space;
    h->coord[n][1] = h->rg[i].lo;
    h->coord[n + 1][1] = h->rg[i].hi;
    n += 2;
  }
  qsort(h->coord, n, sizeof *h->coord, coord_cmp);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || coord_cmp(h->coord[u - 1], h->coord[i])) memcpy(h->coord[u++], h->coord[i], sizeof *h->coord);
  h->ncoord = u;
  for (size_t i = 0; i < h->nrg; i++) {
    h->rg[i].ci = coord_find(h, h->rg[i].space, h->rg[i].lo);
    h->rg[i].cj = coord_find(h, h->rg[i].space, h->rg[i].hi);
  }
  h->size = 1;
  while (h->size < (u ? u : 1)) h->size *= 2;
  h->node = malloc(2 * h->size * sizeof *h->node);
  h->tag = malloc(2 * h->size * sizeof *h->tag);
  if (!h->node || !h->tag) return false;
  for (size_t x = 0; x < 2 * h->size; x++) {
    for (int e = 0; e < Q; e++) h->node[x].w[e] = h->node[x].r[e] = h->tag[x].r[e] = -1;
    h->tag[x].wpos = -1;
    h->tag[x].wq = 0;
    h->tag[x].any = false;
  }
  return true;
}

/* The footprint of instruction x that overlaps range r with the given kind
 * (write / read), for the message. */
static const hb_fp *find_fp(const hb *h, size_t x, const hb_range *r, bool write) {
  for (uint32_t f = h->fp_first[x]; f < h->fp_first[x + 1]; f++) {
    const hb_fp *fp = &h->fp[f];
    if (fp->write != write) continue;
    for (uint32_t i = fp->first; i < fp->first + fp->n; i++)
      if (h->rg[i].ci < r->cj && r->ci < h->rg[i].cj) return fp;
  }
  return NULL;
}

static const char *slot_name(int s) { return s < 5 ? nc_slot_names[s] : "dst"; }

void nc_verify_races(const trnc_nc_program *p, size_t k, const nc_schedule *s, trnc_diags *diags,
                     size_t *errors) {
  const nc_kernel *kn = &p->kernels[k];
  size_t n = kn->n;
  hb h;
  memset(&h, 0, sizeof h);
  uint32_t *vc = calloc((n ? n : 1) * Q, sizeof *vc);
  uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
  size_t *byq = malloc((n ? n : 1) * sizeof *byq); /* per queue: instructions by position */
  h.fp = malloc((n ? n : 1) * 6 * sizeof *h.fp);
  h.fp_first = malloc((n + 1) * sizeof *h.fp_first);
  bool ok = vc && pos && byq && h.fp && h.fp_first;
  if (p->target->partitions > NC_MAX_PARTITIONS) {
    trnc_diag_error(diags, TRNC_ERR_INTERNAL, "target %s has %d partitions, the race check handles %d",
                    p->target->name, p->target->partitions, NC_MAX_PARTITIONS);
    (*errors)++;
    goto out;
  }
  if (ok) collect(&h, p, kn);
  if (ok && !h.nomem) ok = build_tree(&h);
  if (!ok || h.nomem) {
    trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
    (*errors)++;
    goto out;
  }
  uint32_t qcount[Q] = {0};
  size_t last[Q];
  for (int e = 0; e < Q; e++) last[e] = SIZE_MAX;
  size_t qstart[Q + 1] = {0};
  for (size_t i = 0; i < n; i++) qstart[kn->instrs[i].engine + 1]++;
  for (int e = 0; e < Q; e++) qstart[e + 1] += qstart[e];
  size_t reports = 0;
  for (size_t oi = 0; oi < n; oi++) {
    size_t j = s->order[oi];
    const trnc_nc_instr *in = &kn->instrs[j];
    int q = in->engine;
    uint32_t *vj = &vc[j * Q];
    pos[j] = qcount[q]++;
    byq[qstart[q] + pos[j]] = j;
    if (last[q] != SIZE_MAX) memcpy(vj, &vc[last[q] * Q], Q * sizeof *vj);
    vj[q] = pos[j];
    for (int w = 0; w < TRNC_NC_MAX_WAIT; w++) {
      size_t pr = s->producer[j * TRNC_NC_MAX_WAIT + w];
      if (pr == SIZE_MAX) continue;
      const uint32_t *vp = &vc[pr * Q];
      for (int e = 0; e < Q; e++)
        if (vp[e] > vj[e]) vj[e] = vp[e];
      uint32_t through = pos[pr] + 1;
      if (through > vj[kn->instrs[pr].engine]) vj[kn->instrs[pr].engine] = through;
    }
    last[q] = j;
    /* vj[e]: instructions of queue e at positions < vj[e] complete before j
     * starts; a cell's last writer (reader) on e at position >= vj[e] races */
    bool raced[Q] = {false};
    for (uint32_t f = h.fp_first[j]; f < h.fp_first[j + 1] && reports < MAX_RACE_REPORTS; f++) {
      const hb_fp *fb = &h.fp[f];
      for (uint32_t r = fb->first; r < fb->first + fb->n && reports < MAX_RACE_REPORTS; r++) {
        const hb_range *rg = &h.rg[r];
        hb_node acc;
        for (int e = 0; e < Q; e++) acc.w[e] = acc.r[e] = -1;
        tree_query(&h, 1, 0, h.size, rg->ci, rg->cj, &acc);
        for (int e = 0; e < Q && reports < MAX_RACE_REPORTS; e++) {
          if (e == q || raced[e]) continue;
          bool ww = acc.w[e] >= 0 && (uint32_t)acc.w[e] >= vj[e];
          bool wr = fb->write && acc.r[e] >= 0 && (uint32_t)acc.r[e] >= vj[e];
          if (!ww && !wr) continue;
          size_t x = byq[qstart[e] + (size_t)(ww ? acc.w[e] : acc.r[e])];
          const hb_fp *fx = find_fp(&h, x, rg, ww);
          int xslot = fx ? fx->slot : 0;
          /* describe the pair in list order: the one listed first second */
          bool j_first = j < x;
          size_t y = j_first ? x : j, z = j_first ? j : x;
          bool ywrite = j_first ? ww : fb->write, zwrite = j_first ? fb->write : ww;
          int yslot = j_first ? xslot : fb->slot, zslot = j_first ? fb->slot : xslot;
          char where[160], other[160];
          nc_where(p, k, y, where, sizeof where);
          nc_where(p, k, z, other, sizeof other);
          char msg[512];
          snprintf(msg, sizeof msg,
                   "missing dependency: %s %s and %s %s %s overlap (%s) with no semaphore wait ordering them",
                   ywrite ? "writes" : "reads", slot_name(yslot), other, zwrite ? "writes" : "reads",
                   slot_name(zslot),
                   zwrite && ywrite ? "write after write" : zwrite ? "read after write" : "write after read");
          trnc_diag_loc loc = {.node = where};
          trnc_diag_add(diags, TRNC_SEV_ERROR, TRNC_ERR_INVALID_GRAPH, &loc, NULL, "%s", msg);
          (*errors)++;
          reports++;
          raced[e] = true;
        }
      }
    }
    /* then record j's accesses: reads first, so j's own write wins */
    for (int pass = 0; pass < 2; pass++)
      for (uint32_t f = h.fp_first[j]; f < h.fp_first[j + 1]; f++) {
        const hb_fp *fb = &h.fp[f];
        if (fb->write != (pass == 1)) continue;
        hb_tag t;
        for (int e = 0; e < Q; e++) t.r[e] = -1;
        t.wpos = -1;
        t.wq = (int8_t)q;
        t.any = true;
        if (fb->write) t.wpos = (int32_t)pos[j];
        else t.r[q] = (int32_t)pos[j];
        for (uint32_t r = fb->first; r < fb->first + fb->n; r++)
          tree_update(&h, 1, 0, h.size, h.rg[r].ci, h.rg[r].cj, &t);
      }
  }
out:
  free(vc);
  free(pos);
  free(byq);
  free(h.fp);
  free(h.fp_first);
  free(h.rg);
  free(h.coord);
  free(h.node);
  free(h.tag);
}
