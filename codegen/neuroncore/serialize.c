/*
 * serialize.c — NeuronCore program <-> protobuf-c (program.proto).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"
#include "codegen/neuroncore/program.pb-c.h"
#include "ir/arena.h"

#define MAX_PROGRAM_BYTES (1u << 30)

static Trnc__Nc__AccessPattern *ap_to_pb(trnc_arena *a, const trnc_nc_ap *ap) {
  Trnc__Nc__AccessPattern *m = trnc_arena_alloc(a, sizeof *m);
  if (!m) return NULL;
  trnc__nc__access_pattern__init(m);
  if (ap->mem == TRNC_NC_MEM_NONE) return m;
  m->mem = ap->mem;
  m->dtype = ap->dtype;
  m->buffer = ap->buffer;
  m->start_partition = ap->start_partition;
  m->partitions = ap->partitions;
  m->partition_stride = ap->partition_stride;
  m->offset = ap->offset;
  if (ap->nfree) {
    m->n_free = ap->nfree;
    m->free = trnc_arena_array(a, ap->nfree, sizeof *m->free);
    Trnc__Nc__Dim *dims = trnc_arena_array(a, ap->nfree, sizeof *dims);
    if (!m->free || !dims) return NULL;
    for (int d = 0; d < ap->nfree; d++) {
      trnc__nc__dim__init(&dims[d]);
      dims[d].stride = ap->free[d].stride;
      dims[d].count = ap->free[d].count;
      m->free[d] = &dims[d];
    }
  }
  return m;
}

static bool instr_to_pb(trnc_arena *a, const trnc_nc_instr *in, Trnc__Nc__Instruction *m) {
  trnc__nc__instruction__init(m);
  m->opcode = in->op;
  m->engine = in->engine;
  if (in->dst.mem && !(m->dst = ap_to_pb(a, &in->dst))) return false;
  if (in->dst2.mem && !(m->dst2 = ap_to_pb(a, &in->dst2))) return false;
  m->n_src = 3;
  m->src = trnc_arena_array(a, 3, sizeof *m->src);
  if (!m->src) return false;
  for (int s = 0; s < 3; s++)
    if (!(m->src[s] = ap_to_pb(a, &in->src[s]))) return false;
  m->alu0 = in->alu0;
  m->alu1 = in->alu1;
  m->act = in->act;
  m->mode = in->mode;
  m->n_imm = 3;
  m->imm = trnc_arena_array(a, 3, sizeof *m->imm);
  m->n_aff = 6;
  m->aff = trnc_arena_array(a, 6, sizeof *m->aff);
  if (!m->imm || !m->aff) return false;
  for (int i = 0; i < 3; i++) m->imm[i] = nc_f2u(in->imm[i]);
  for (int i = 0; i < 6; i++) m->aff[i] = in->aff[i];
  if (in->nwait) {
    m->n_wait = in->nwait;
    m->wait = trnc_arena_array(a, in->nwait, sizeof *m->wait);
    Trnc__Nc__Wait *w = trnc_arena_array(a, in->nwait, sizeof *w);
    if (!m->wait || !w) return false;
    for (int i = 0; i < in->nwait; i++) {
      trnc__nc__wait__init(&w[i]);
      w[i].sem = in->wait[i].sem;
      w[i].value = in->wait[i].value;
      m->wait[i] = &w[i];
    }
  }
  if (in->nsignal) {
    m->n_signal = in->nsignal;
    m->signal = trnc_arena_array(a, in->nsignal, sizeof *m->signal);
    if (!m->signal) return false;
    for (int i = 0; i < in->nsignal; i++) m->signal[i] = in->signal[i];
  }
  return true;
}

static void cc_to_pb(const trnc_nc_collective *cc, Trnc__Nc__Collective *m) {
  trnc__nc__collective__init(m);
  m->op = cc->op;
  m->reduce = cc->reduce;
  m->dtype = cc->dtype;
  m->handle = cc->handle;
  m->group_size = cc->group_size;
  m->root = cc->root;
  m->group = (char *)cc->group;
  m->src_buffer = cc->src_buffer;
  m->dst_buffer = cc->dst_buffer;
  m->src_offset = cc->src_offset;
  m->dst_offset = cc->dst_offset;
  m->src_bytes = cc->src_bytes;
  m->dst_bytes = cc->dst_bytes;
  m->n_in_split = m->n_out_split = (size_t)(cc->nsplits > 0 ? cc->nsplits : 0);
  m->in_split = (int64_t *)cc->in_split;
  m->out_split = (int64_t *)cc->out_split;
}

/* False if a field is out of range (the verifier checks the rest). */
static bool cc_from_pb(const Trnc__Nc__Collective *m, size_t nbufs, trnc_nc_collective *cc) {
  memset(cc, 0, sizeof *cc);
  if (m->op >= TRNC_NC_CC_COUNT || m->reduce >= TRNC_NC_RED_COUNT ||
      (m->op != TRNC_NC_CC_WAIT && !trnc_nc_dtype_supported((trnc_dtype)m->dtype)) ||
      !m->group || strlen(m->group) >= TRNC_NC_CC_GROUP_NAME || m->n_in_split != m->n_out_split ||
      m->n_in_split > TRNC_NC_CC_MAX_GROUP || m->src_buffer < 0 || m->dst_buffer < 0 ||
      (size_t)m->src_buffer >= (nbufs ? nbufs : 1) || (size_t)m->dst_buffer >= (nbufs ? nbufs : 1))
    return false;
  cc->op = (uint8_t)m->op;
  cc->reduce = (uint8_t)m->reduce;
  cc->dtype = (uint8_t)m->dtype;
  cc->handle = m->handle;
  cc->group_size = m->group_size;
  cc->root = m->root;
  strcpy(cc->group, m->group);
  cc->src_buffer = m->src_buffer;
  cc->dst_buffer = m->dst_buffer;
  cc->src_offset = m->src_offset;
  cc->dst_offset = m->dst_offset;
  cc->src_bytes = m->src_bytes;
  cc->dst_bytes = m->dst_bytes;
  cc->nsplits = (int32_t)m->n_in_split;
  for (size_t i = 0; i < m->n_in_split; i++) {
    cc->in_split[i] = m->in_split[i];
    cc->out_split[i] = m->out_split[i];
  }
  return true;
}

trnc_status trnc_nc_program_serialize(const trnc_nc_program *p, uint8_t **bytes, size_t *len) {
  if (!p || !bytes || !len) return TRNC_ERR_INVALID_ARGUMENT;
  *bytes = NULL;
  *len = 0;
  trnc_arena a;
  trnc_arena_init(&a, 0);
  trnc_status st = TRNC_ERR_NOMEM;
  Trnc__Nc__Program m = TRNC__NC__PROGRAM__INIT;
  m.version = TRNC_NC_PROGRAM_VERSION;
  m.target = (char *)p->target->name;
  m.n_buffers = p->nbufs;
  m.buffers = trnc_arena_array(&a, p->nbufs ? p->nbufs : 1, sizeof *m.buffers);
  Trnc__Nc__Buffer *bufs = trnc_arena_array(&a, p->nbufs ? p->nbufs : 1, sizeof *bufs);
  m.n_kernels = p->nkernels;
  m.kernels = trnc_arena_array(&a, p->nkernels ? p->nkernels : 1, sizeof *m.kernels);
  Trnc__Nc__Kernel *ks = trnc_arena_array(&a, p->nkernels ? p->nkernels : 1, sizeof *ks);
  if (!m.buffers || !bufs || !m.kernels || !ks) goto done;
  for (size_t i = 0; i < p->nbufs; i++) {
    trnc__nc__buffer__init(&bufs[i]);
    bufs[i].name = (char *)p->bufs[i].name;
    bufs[i].kind = (uint32_t)p->bufs[i].kind;
    bufs[i].dtype = p->bufs[i].dtype;
    bufs[i].bytes = p->bufs[i].bytes;
    bufs[i].offset = p->bufs[i].offset;
    m.buffers[i] = &bufs[i];
  }
  for (size_t k = 0; k < p->nkernels; k++) {
    const nc_kernel *kn = &p->kernels[k];
    trnc__nc__kernel__init(&ks[k]);
    ks[k].name = kn->name;
    ks[k].semaphores = (uint32_t)kn->nsem;
    if (kn->cc) {
      Trnc__Nc__Collective *cm = trnc_arena_array(&a, 1, sizeof *cm);
      if (!cm) goto done;
      cc_to_pb(kn->cc, cm);
      ks[k].collective = cm;
    }
    ks[k].n_instr = kn->n;
    ks[k].instr = trnc_arena_array(&a, kn->n ? kn->n : 1, sizeof *ks[k].instr);
    Trnc__Nc__Instruction *ins = trnc_arena_array(&a, kn->n ? kn->n : 1, sizeof *ins);
    if (!ks[k].instr || !ins) goto done;
    for (size_t i = 0; i < kn->n; i++) {
      if (!instr_to_pb(&a, &kn->instrs[i], &ins[i])) goto done;
      ks[k].instr[i] = &ins[i];
    }
    m.kernels[k] = &ks[k];
  }
  size_t n = trnc__nc__program__get_packed_size(&m);
  uint8_t *out = malloc(n ? n : 1);
  if (!out) goto done;
  trnc__nc__program__pack(&m, out);
  *bytes = out;
  *len = n;
  st = TRNC_OK;
done:
  trnc_arena_release(&a);
  return st;
}

/* ---- reading --------------------------------------------------------------- */

typedef struct capped_alloc {
  size_t count, limit;
} capped_alloc;

static void *cap_alloc(void *ud, size_t n) {
  capped_alloc *c = ud;
  if (++c->count > c->limit) return NULL;
  return malloc(n);
}
static void cap_free(void *ud, void *p) { free(p); }

static trnc_status bad(trnc_diags *d, const char *what, size_t k, size_t i) {
  return trnc_diag_error(d, TRNC_ERR_MALFORMED,
                         "NeuronCore program bytes: kernel %zu instruction %zu: %s", k, i, what);
}

static bool ap_from_pb(const Trnc__Nc__AccessPattern *m, size_t nbufs, trnc_nc_ap *ap) {
  memset(ap, 0, sizeof *ap);
  if (!m || m->mem == TRNC_NC_MEM_NONE) {
    return !m || (m->dtype == 0 && m->n_free == 0 && m->partitions == 0 && m->offset == 0 &&
                  m->buffer == 0 && m->start_partition == 0 && m->partition_stride == 0);
  }
  if (m->mem > TRNC_NC_MEM_PSUM || !trnc_nc_dtype_supported((trnc_dtype)m->dtype) ||
      m->n_free > TRNC_NC_MAX_FREE)
    return false;
  if (m->mem == TRNC_NC_MEM_HBM && (m->buffer < 0 || (size_t)m->buffer >= nbufs)) return false;
  ap->mem = (uint8_t)m->mem;
  ap->dtype = (uint8_t)m->dtype;
  ap->buffer = m->buffer;
  ap->start_partition = m->start_partition;
  ap->partitions = m->partitions;
  ap->partition_stride = m->partition_stride;
  ap->offset = m->offset;
  ap->nfree = (uint8_t)m->n_free;
  for (size_t d = 0; d < m->n_free; d++) {
    ap->free[d].stride = m->free[d]->stride;
    ap->free[d].count = m->free[d]->count;
  }
  return true;
}

trnc_status trnc_nc_program_deserialize(const uint8_t *bytes, size_t len, trnc_nc_program **out,
                                        trnc_diags *diags) {
  if (!out || (!bytes && len)) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  if (len > MAX_PROGRAM_BYTES)
    return trnc_diag_error(diags, TRNC_ERR_LIMIT, "NeuronCore program of %zu bytes exceeds 1 GiB", len);
  capped_alloc cap = {0, 64u << 20};
  ProtobufCAllocator alloc = {cap_alloc, cap_free, &cap};
  Trnc__Nc__Program *m = trnc__nc__program__unpack(&alloc, len, bytes ? bytes : (const uint8_t *)"");
  if (!m)
    return trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                           "bytes are not a trnc.nc.Program message (wire format error or allocation cap)");
  trnc_status st = TRNC_OK;
  trnc_nc_program *p = NULL;
  if (m->version < TRNC_NC_PROGRAM_MIN_VERSION || m->version > TRNC_NC_PROGRAM_VERSION) {
    st = trnc_diag_error(diags, TRNC_ERR_VERSION, "NeuronCore program version %u, this build reads %d..%d",
                         m->version, TRNC_NC_PROGRAM_MIN_VERSION, TRNC_NC_PROGRAM_VERSION);
    goto done;
  }
  const trnc_nc_target *t = trnc_nc_target_by_name(m->target);
  if (!t) {
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "unknown target '%.64s'", m->target);
    goto done;
  }
  p = trnc_nc_program_create(t);
  if (!p) { st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory"); goto done; }
  for (size_t i = 0; i < m->n_buffers; i++) {
    const Trnc__Nc__Buffer *b = m->buffers[i];
    if (b->kind > TRNC_NC_BUF_INTERNAL || !trnc_nc_dtype_supported((trnc_dtype)b->dtype) ||
        trnc_nc_program_add_buffer(p, b->name, (int)b->kind, (trnc_dtype)b->dtype, b->bytes, b->offset) < 0) {
      st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "buffer %zu ('%.64s'): bad name, kind, dtype, size or offset",
                           i, b->name);
      goto done;
    }
  }
  for (size_t k = 0; k < m->n_kernels; k++) {
    const Trnc__Nc__Kernel *km = m->kernels[k];
    if (km->collective) {
      trnc_nc_collective cc;
      if (km->n_instr || !cc_from_pb(km->collective, p->nbufs, &cc) ||
          trnc_nc_program_add_collective(p, &cc) < 0) {
        st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                             "step %zu: bad collective (op, reduce, dtype, buffer, group name or "
                             "splits out of range, or instructions beside it)", k);
        goto done;
      }
      continue;
    }
    if (km->semaphores > TRNC_NC_MAX_SEMAPHORES ||
        trnc_nc_program_add_kernel(p, km->name, (int)km->semaphores) < 0) {
      st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "kernel %zu: bad name or semaphore count", k);
      goto done;
    }
    for (size_t i = 0; i < km->n_instr; i++) {
      const Trnc__Nc__Instruction *im = km->instr[i];
      trnc_nc_instr in;
      memset(&in, 0, sizeof in);
      if (im->opcode >= TRNC_NC_OP_COUNT || im->engine >= TRNC_NC_ENGINE_COUNT ||
          im->alu0 >= TRNC_NC_ALU_COUNT || im->alu1 >= TRNC_NC_ALU_COUNT ||
          im->act >= TRNC_NC_ACT_COUNT || im->mode > 255) {
        st = bad(diags, "opcode, engine, ALU op, function or mode out of range", k, i);
        goto done;
      }
      if (im->n_src != 3 || im->n_imm != 3 || im->n_aff != 6 || im->n_wait > TRNC_NC_MAX_WAIT ||
          im->n_signal > TRNC_NC_MAX_SIGNAL) {
        st = bad(diags, "wrong number of sources, immediates, affine terms, waits or signals", k, i);
        goto done;
      }
      in.op = (uint8_t)im->opcode;
      in.engine = (uint8_t)im->engine;
      in.alu0 = (uint8_t)im->alu0;
      in.alu1 = (uint8_t)im->alu1;
      in.act = (uint8_t)im->act;
      in.mode = (uint8_t)im->mode;
      bool ok = ap_from_pb(im->dst, p->nbufs, &in.dst) && ap_from_pb(im->dst2, p->nbufs, &in.dst2);
      for (int s = 0; s < 3; s++) ok = ok && ap_from_pb(im->src[s], p->nbufs, &in.src[s]);
      if (!ok) {
        st = bad(diags, "bad access pattern (memory, dtype, buffer index or more than 4 free dims)", k, i);
        goto done;
      }
      for (int j = 0; j < 3; j++) in.imm[j] = nc_u2f(im->imm[j]);
      for (int j = 0; j < 6; j++) in.aff[j] = im->aff[j];
      in.nwait = (uint8_t)im->n_wait;
      for (size_t j = 0; j < im->n_wait; j++) {
        if (im->wait[j]->sem > UINT16_MAX) {
          st = bad(diags, "semaphore index out of range", k, i);
          goto done;
        }
        in.wait[j].sem = (uint16_t)im->wait[j]->sem;
        in.wait[j].value = im->wait[j]->value;
      }
      in.nsignal = (uint8_t)im->n_signal;
      for (size_t j = 0; j < im->n_signal; j++) {
        if (im->signal[j] > UINT16_MAX) {
          st = bad(diags, "semaphore index out of range", k, i);
          goto done;
        }
        in.signal[j] = (uint16_t)im->signal[j];
      }
      if (trnc_nc_kernel_append(p, k, &in)) {
        st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
        goto done;
      }
    }
  }
done:
  trnc__nc__program__free_unpacked(m, &alloc);
  if (st) {
    trnc_nc_program_destroy(p);
    return st;
  }
  *out = p;
  return TRNC_OK;
}
