/*
 * program.c — building, inspecting, comparing and destroying NeuronCore
 * programs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

trnc_nc_program *trnc_nc_program_create(const trnc_nc_target *target) {
  trnc_nc_program *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->target = target ? target : trnc_nc_target_trn2();
  return p;
}

void trnc_nc_program_destroy(trnc_nc_program *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nbufs; i++) free((char *)p->bufs[i].name);
  for (size_t k = 0; k < p->nkernels; k++) {
    free(p->kernels[k].name);
    free(p->kernels[k].cc);
    free(p->kernels[k].instrs);
  }
  free(p->bufs);
  free(p->kernels);
  free(p);
}

const trnc_nc_target *trnc_nc_program_target(const trnc_nc_program *p) {
  return p ? p->target : NULL;
}

static bool valid_name(const char *s) {
  if (!s || !s[0] || strlen(s) > 128) return false;
  for (const char *c = s; *c; c++) {
    bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
    bool digit = (*c >= '0' && *c <= '9') || *c == '.';
    if (!(alpha || (c != s && digit))) return false;
  }
  return true;
}

int trnc_nc_program_add_buffer(trnc_nc_program *p, const char *name, int kind,
                               trnc_dtype dtype, int64_t bytes, int64_t offset) {
  if (!p || !valid_name(name) || kind < 0 || kind > TRNC_NC_BUF_INTERNAL || bytes <= 0 ||
      bytes > (1LL << 40) || offset < 0 || offset > (1LL << 40) ||
      (kind != TRNC_NC_BUF_INTERNAL && offset != 0) || p->nbufs >= (1u << 20))
    return -1;
  for (size_t i = 0; i < p->nbufs; i++)
    if (!strcmp(p->bufs[i].name, name)) return -1;
  if (p->nbufs == p->capb) {
    size_t cap = p->capb ? p->capb * 2 : 8;
    trnc_nc_buffer *b = realloc(p->bufs, cap * sizeof *b);
    if (!b) return -1;
    p->bufs = b;
    p->capb = cap;
  }
  char *nm = strdup(name);
  if (!nm) return -1;
  trnc_nc_buffer *b = &p->bufs[p->nbufs];
  memset(b, 0, sizeof *b);
  b->name = nm;
  b->kind = kind;
  b->dtype = (uint8_t)dtype;
  b->bytes = bytes;
  b->offset = offset;
  if (kind == TRNC_NC_BUF_INTERNAL && offset + bytes > p->scratch) p->scratch = offset + bytes;
  return (int)p->nbufs++;
}

size_t trnc_nc_program_buffer_count(const trnc_nc_program *p) { return p ? p->nbufs : 0; }
const trnc_nc_buffer *trnc_nc_program_buffer(const trnc_nc_program *p, size_t i) {
  return (p && i < p->nbufs) ? &p->bufs[i] : NULL;
}
int64_t trnc_nc_program_scratch_bytes(const trnc_nc_program *p) { return p ? p->scratch : 0; }

int trnc_nc_program_add_kernel(trnc_nc_program *p, const char *name, int semaphores) {
  if (!p || !valid_name(name) || semaphores < 0 || semaphores > TRNC_NC_MAX_SEMAPHORES ||
      p->nkernels >= (1u << 16))
    return -1;
  if (p->nkernels == p->capk) {
    size_t cap = p->capk ? p->capk * 2 : 4;
    nc_kernel *k = realloc(p->kernels, cap * sizeof *k);
    if (!k) return -1;
    p->kernels = k;
    p->capk = cap;
  }
  char *nm = strdup(name);
  if (!nm) return -1;
  nc_kernel *k = &p->kernels[p->nkernels];
  memset(k, 0, sizeof *k);
  k->name = nm;
  k->nsem = semaphores;
  return (int)p->nkernels++;
}

int trnc_nc_program_add_collective(trnc_nc_program *p, const trnc_nc_collective *cc) {
  if (!p || !cc || cc->op >= TRNC_NC_CC_COUNT) return -1;
  trnc_nc_collective *copy = malloc(sizeof *copy);
  if (!copy) return -1;
  *copy = *cc;
  copy->group[TRNC_NC_CC_GROUP_NAME - 1] = '\0';
  int k = trnc_nc_program_add_kernel(p, trnc_nc_cc_op_name(cc->op), 0);
  if (k < 0) {
    free(copy);
    return -1;
  }
  p->kernels[k].cc = copy;
  return k;
}

const trnc_nc_collective *trnc_nc_kernel_collective(const trnc_nc_program *p, size_t k) {
  return (p && k < p->nkernels) ? p->kernels[k].cc : NULL;
}

size_t trnc_nc_program_collective_count(const trnc_nc_program *p) {
  size_t n = 0;
  for (size_t k = 0; p && k < p->nkernels; k++)
    n += p->kernels[k].cc && p->kernels[k].cc->op != TRNC_NC_CC_WAIT;
  return n;
}

static bool cc_equal(const trnc_nc_collective *a, const trnc_nc_collective *b) {
  if (!a || !b) return a == b;
  if (a->op != b->op || a->reduce != b->reduce || a->dtype != b->dtype || a->handle != b->handle ||
      a->group_size != b->group_size || a->root != b->root || strcmp(a->group, b->group) ||
      a->src_buffer != b->src_buffer || a->dst_buffer != b->dst_buffer ||
      a->src_offset != b->src_offset || a->dst_offset != b->dst_offset ||
      a->src_bytes != b->src_bytes || a->dst_bytes != b->dst_bytes || a->nsplits != b->nsplits)
    return false;
  for (int i = 0; i < a->nsplits && i < TRNC_NC_CC_MAX_GROUP; i++)
    if (a->in_split[i] != b->in_split[i] || a->out_split[i] != b->out_split[i]) return false;
  return true;
}

size_t trnc_nc_program_kernel_count(const trnc_nc_program *p) { return p ? p->nkernels : 0; }
const char *trnc_nc_kernel_name(const trnc_nc_program *p, size_t k) {
  return (p && k < p->nkernels) ? p->kernels[k].name : NULL;
}
int trnc_nc_kernel_semaphores(const trnc_nc_program *p, size_t k) {
  return (p && k < p->nkernels) ? p->kernels[k].nsem : 0;
}

trnc_status trnc_nc_kernel_append(trnc_nc_program *p, size_t k, const trnc_nc_instr *in) {
  if (!p || !in || k >= p->nkernels) return TRNC_ERR_INVALID_ARGUMENT;
  nc_kernel *kn = &p->kernels[k];
  if (kn->n == kn->cap) {
    size_t cap = kn->cap ? kn->cap * 2 : 64;
    trnc_nc_instr *a = realloc(kn->instrs, cap * sizeof *a);
    if (!a) return TRNC_ERR_NOMEM;
    kn->instrs = a;
    kn->cap = cap;
  }
  kn->instrs[kn->n++] = *in;
  return TRNC_OK;
}

size_t trnc_nc_kernel_instr_count(const trnc_nc_program *p, size_t k) {
  return (p && k < p->nkernels) ? p->kernels[k].n : 0;
}
const trnc_nc_instr *trnc_nc_kernel_instr(const trnc_nc_program *p, size_t k, size_t i) {
  return (p && k < p->nkernels && i < p->kernels[k].n) ? &p->kernels[k].instrs[i] : NULL;
}
trnc_nc_instr *trnc_nc_kernel_instr_mut(trnc_nc_program *p, size_t k, size_t i) {
  return (p && k < p->nkernels && i < p->kernels[k].n) ? &p->kernels[k].instrs[i] : NULL;
}

static bool ap_equal(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  if (a->mem != b->mem || a->dtype != b->dtype || a->nfree != b->nfree ||
      a->buffer != b->buffer || a->start_partition != b->start_partition ||
      a->partitions != b->partitions || a->partition_stride != b->partition_stride ||
      a->offset != b->offset)
    return false;
  for (int d = 0; d < TRNC_NC_MAX_FREE; d++)
    if (a->free[d].stride != b->free[d].stride || a->free[d].count != b->free[d].count)
      return false;
  return true;
}

static bool instr_equal(const trnc_nc_instr *a, const trnc_nc_instr *b) {
  if (a->op != b->op || a->engine != b->engine || a->alu0 != b->alu0 || a->alu1 != b->alu1 ||
      a->act != b->act || a->mode != b->mode || a->nwait != b->nwait || a->nsignal != b->nsignal)
    return false;
  for (int s = 0; s < 5; s++)
    if (!ap_equal(nc_slot(a, s), nc_slot(b, s))) return false;
  for (int i = 0; i < 3; i++)
    if (nc_f2u(a->imm[i]) != nc_f2u(b->imm[i])) return false; /* bitwise: NaN == NaN */
  for (int i = 0; i < 6; i++)
    if (a->aff[i] != b->aff[i]) return false;
  for (int i = 0; i < TRNC_NC_MAX_WAIT; i++)
    if (a->wait[i].sem != b->wait[i].sem || a->wait[i].value != b->wait[i].value) return false;
  for (int i = 0; i < TRNC_NC_MAX_SIGNAL; i++)
    if (a->signal[i] != b->signal[i]) return false;
  return true;
}

bool trnc_nc_program_equal(const trnc_nc_program *a, const trnc_nc_program *b) {
  if (!a || !b) return a == b;
  if (a->target != b->target || a->nbufs != b->nbufs || a->nkernels != b->nkernels ||
      a->scratch != b->scratch)
    return false;
  for (size_t i = 0; i < a->nbufs; i++) {
    const trnc_nc_buffer *x = &a->bufs[i], *y = &b->bufs[i];
    if (strcmp(x->name, y->name) || x->kind != y->kind || x->dtype != y->dtype ||
        x->bytes != y->bytes || x->offset != y->offset)
      return false;
  }
  for (size_t k = 0; k < a->nkernels; k++) {
    const nc_kernel *x = &a->kernels[k], *y = &b->kernels[k];
    if (strcmp(x->name, y->name) || x->nsem != y->nsem || x->n != y->n || !cc_equal(x->cc, y->cc))
      return false;
    for (size_t i = 0; i < x->n; i++)
      if (!instr_equal(&x->instrs[i], &y->instrs[i])) return false;
  }
  return true;
}

size_t trnc_nc_program_instr_count(const trnc_nc_program *p) {
  size_t n = 0;
  for (size_t k = 0; p && k < p->nkernels; k++) n += p->kernels[k].n;
  return n;
}

double trnc_nc_program_matmul_flops(const trnc_nc_program *p) {
  double f = 0;
  for (size_t k = 0; p && k < p->nkernels; k++)
    for (size_t i = 0; i < p->kernels[k].n; i++) {
      const trnc_nc_instr *in = &p->kernels[k].instrs[i];
      if (in->op != TRNC_NC_OP_MATMUL) continue;
      f += 2.0 * in->src[0].partitions * (double)trnc_nc_ap_free_elems(&in->src[0]) *
           (double)trnc_nc_ap_free_elems(&in->src[1]);
    }
  return f;
}
