/*
 * asm.c — deterministic assembly printer and parser for NeuronCore programs.
 * Grammar: see trnc_nc_program_print in include/trnc/neuroncore.h.
 *
 *   .version 1
 *   .target trn2
 *   .buffer a input bf16 1048576
 *   .kernel main 4
 *   dma0 dma_copy dst=sbuf[0:128]@0:bf16[[1,512]] src0=hbm:a@0:bf16[[512,128],[1,512]] mode=direct signal=s0
 *   tensor matmul dst=psum[0:128]@0:f32[[1,512]] src0=... src1=... acc=0 wait=s0>=1
 *   .collective all_reduce handle=0 group=0 size=2 dtype=f32 reduce=sum src=hbm:a@0+4096 dst=hbm:t1@0+4096
 *   .collective cc_wait handle=0
 * Collective keys: handle, group, size, dtype, reduce (all_reduce /
 * reduce_scatter), root (broadcast), src/dst = hbm:NAME@OFFSET+BYTES, and for
 * all_to_all with uneven splits in_split=[b0,b1,..] out_split=[..] (bytes).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/neuroncore/nc_internal.h"

/* ---- growable string ------------------------------------------------------ */

typedef struct sbuf_t {
  char *s;
  size_t len, cap;
  bool oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = true; return; }
    if (b->s && (size_t)n < room) { b->len += (size_t)n; return; }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = true; return; }
    b->s = s;
    b->cap = cap;
  }
}

static char *sb_finish(sbuf_t *b) {
  if (b->oom) { free(b->s); return NULL; }
  if (!b->s) {
    b->s = malloc(1);
    if (b->s) b->s[0] = '\0';
  }
  return b->s;
}

/* ---- printer --------------------------------------------------------------- */

static void print_float(sbuf_t *b, float f) {
  if (f != f) sb_printf(b, "nan");
  else if (isinf(f)) sb_printf(b, f < 0 ? "-inf" : "inf");
  else sb_printf(b, "%.9g", (double)f);
}

static void print_ap(sbuf_t *b, const trnc_nc_program *p, const trnc_nc_ap *ap) {
  const char *dt = trnc_nc_dtype_name((trnc_dtype)ap->dtype);
  if (ap->mem == TRNC_NC_MEM_HBM) {
    const char *name = (ap->buffer >= 0 && (size_t)ap->buffer < p->nbufs) ? p->bufs[ap->buffer].name : "?";
    sb_printf(b, "hbm:%s@%" PRId64 ":%s[[%" PRId64 ",%d]", name, ap->offset, dt,
              ap->partition_stride, ap->partitions);
  } else {
    sb_printf(b, "%s[%d:%d]@%" PRId64 ":%s[", ap->mem == TRNC_NC_MEM_PSUM ? "psum" : "sbuf",
              ap->start_partition, ap->partitions, ap->offset, dt);
  }
  for (int d = 0; d < ap->nfree && d < TRNC_NC_MAX_FREE; d++)
    sb_printf(b, "%s[%" PRId64 ",%" PRId64 "]", (d || ap->mem == TRNC_NC_MEM_HBM) ? "," : "",
              ap->free[d].stride, ap->free[d].count);
  sb_printf(b, "]");
}

static const char *const k_dma_modes[] = {"direct", "gather", "scatter", "transpose"};

static void print_instr(sbuf_t *b, const trnc_nc_program *p, const trnc_nc_instr *in) {
  const nc_opinfo *oi = in->op < TRNC_NC_OP_COUNT ? &nc_opinfo_table[in->op] : NULL;
  sb_printf(b, "%s %s", trnc_nc_engine_name(in->engine), trnc_nc_opcode_name(in->op));
  for (int s = 0; s < 5; s++) {
    const trnc_nc_ap *ap = nc_slot(in, s);
    if (ap->mem == TRNC_NC_MEM_NONE) continue;
    sb_printf(b, " %s=", nc_slot_names[s]);
    print_ap(b, p, ap);
  }
  uint8_t par = oi ? oi->params : 0;
  if (par & NC_PAR_ALU0) sb_printf(b, " op=%s", trnc_nc_alu_name(in->alu0));
  if (par & NC_PAR_ALU1) sb_printf(b, " op1=%s", trnc_nc_alu_name(in->alu1));
  if (par & NC_PAR_ACT) sb_printf(b, " func=%s", trnc_nc_act_name(in->act));
  if (par & NC_PAR_MODE) {
    if (in->op == TRNC_NC_OP_DMA_COPY && in->mode < 4)
      sb_printf(b, " mode=%s", k_dma_modes[in->mode]);
    else
      sb_printf(b, " %s=%u", oi->mode_key, in->mode);
  }
  for (int i = 0; i < 3; i++)
    if (par & (NC_PAR_IMM0 << i)) {
      sb_printf(b, " imm%d=", i);
      print_float(b, in->imm[i]);
    }
  if (par & NC_PAR_AFF)
    sb_printf(b, " aff=[%d,%d,%d,%d,%d,%d]", in->aff[0], in->aff[1], in->aff[2], in->aff[3],
              in->aff[4], in->aff[5]);
  for (int w = 0; w < in->nwait && w < TRNC_NC_MAX_WAIT; w++)
    sb_printf(b, "%ss%u>=%u", w ? "," : " wait=", in->wait[w].sem, in->wait[w].value);
  for (int s = 0; s < in->nsignal && s < TRNC_NC_MAX_SIGNAL; s++)
    sb_printf(b, "%ss%u", s ? "," : " signal=", in->signal[s]);
}

static const char *const k_kind_names[] = {"input", "output", "internal"};

static const char *buf_name(const trnc_nc_program *p, int32_t b) {
  return (b >= 0 && (size_t)b < p->nbufs) ? p->bufs[b].name : "?";
}

static void print_splits(sbuf_t *b, const char *key, const int64_t *v, int n) {
  for (int i = 0; i < n; i++) sb_printf(b, "%s%" PRId64, i ? "," : key, v[i]);
  sb_printf(b, "]");
}

/* One `.collective` line (grammar at the top of this file). */
static void print_collective(sbuf_t *b, const trnc_nc_program *p, const trnc_nc_collective *cc) {
  sb_printf(b, ".collective %s handle=%d", trnc_nc_cc_op_name(cc->op), cc->handle);
  if (cc->op == TRNC_NC_CC_WAIT) {
    sb_printf(b, "\n");
    return;
  }
  sb_printf(b, " group=%s size=%d dtype=%s", cc->group, cc->group_size,
            trnc_nc_dtype_name((trnc_dtype)cc->dtype));
  if (cc->op == TRNC_NC_CC_ALL_REDUCE || cc->op == TRNC_NC_CC_REDUCE_SCATTER)
    sb_printf(b, " reduce=%s", trnc_nc_cc_reduce_name(cc->reduce));
  if (cc->op == TRNC_NC_CC_BROADCAST) sb_printf(b, " root=%d", cc->root);
  sb_printf(b, " src=hbm:%s@%" PRId64 "+%" PRId64 " dst=hbm:%s@%" PRId64 "+%" PRId64,
            buf_name(p, cc->src_buffer), cc->src_offset, cc->src_bytes, buf_name(p, cc->dst_buffer),
            cc->dst_offset, cc->dst_bytes);
  int n = cc->nsplits < 0 ? 0 : cc->nsplits > TRNC_NC_CC_MAX_GROUP ? TRNC_NC_CC_MAX_GROUP : cc->nsplits;
  if (n) {
    print_splits(b, " in_split=[", cc->in_split, n);
    print_splits(b, " out_split=[", cc->out_split, n);
  }
  sb_printf(b, "\n");
}

char *trnc_nc_program_print(const trnc_nc_program *p) {
  if (!p) return NULL;
  sbuf_t b = {0};
  sb_printf(&b, ".version %d\n.target %s\n", TRNC_NC_PROGRAM_VERSION, p->target->name);
  for (size_t i = 0; i < p->nbufs; i++) {
    const trnc_nc_buffer *bf = &p->bufs[i];
    sb_printf(&b, ".buffer %s %s %s %" PRId64, bf->name, k_kind_names[bf->kind],
              trnc_nc_dtype_name((trnc_dtype)bf->dtype), bf->bytes);
    if (bf->kind == TRNC_NC_BUF_INTERNAL) sb_printf(&b, " %" PRId64, bf->offset);
    sb_printf(&b, "\n");
  }
  for (size_t k = 0; k < p->nkernels; k++) {
    if (p->kernels[k].cc) {
      print_collective(&b, p, p->kernels[k].cc);
      continue;
    }
    sb_printf(&b, ".kernel %s %d\n", p->kernels[k].name, p->kernels[k].nsem);
    for (size_t i = 0; i < p->kernels[k].n; i++) {
      print_instr(&b, p, &p->kernels[k].instrs[i]);
      sb_printf(&b, "\n");
    }
  }
  return sb_finish(&b);
}

char *trnc_nc_instr_print(const trnc_nc_program *p, const trnc_nc_instr *in) {
  if (!p || !in) return NULL;
  sbuf_t b = {0};
  print_instr(&b, p, in);
  return sb_finish(&b);
}

/* ---- parser ------------------------------------------------------------------ */

typedef struct parser {
  trnc_nc_program *prog;
  trnc_diags *diags;
  size_t line;
  bool have_version;
} parser;

static trnc_status perr(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static trnc_status perr(parser *ps, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return trnc_diag_error(ps->diags, TRNC_ERR_MALFORMED, "NeuronCore asm line %zu: %s", ps->line, msg);
}

/* Parses a signed integer at *s within [lo, hi]; advances *s. */
static bool parse_int(const char **s, int64_t lo, int64_t hi, int64_t *out) {
  const char *c = *s;
  if (!((*c >= '0' && *c <= '9') || *c == '-' || *c == '+')) return false;
  errno = 0;
  char *end;
  long long v = strtoll(c, &end, 10);
  if (end == c || errno == ERANGE || v < lo || v > hi) return false;
  *out = v;
  *s = end;
  return true;
}

static bool expect(const char **s, char ch) {
  if (**s != ch) return false;
  (*s)++;
  return true;
}

static int lookup_name(const char *s, size_t n, const char *(*name)(int), int count) {
  for (int i = 0; i < count; i++) {
    const char *nm = name(i);
    if (strlen(nm) == n && !strncmp(nm, s, n)) return i;
  }
  return -1;
}

static const char *dtype_name_i(int i) { return trnc_nc_dtype_name((trnc_dtype)i); }

static int parse_dtype(const char *s, size_t n) {
  int dt = lookup_name(s, n, dtype_name_i, TRNC_DTYPE_COUNT);
  return (dt > 0 && trnc_nc_dtype_supported((trnc_dtype)dt)) ? dt : -1;
}

/* AP grammar (no spaces):
 *   sbuf[START:COUNT]@OFF:DTYPE[[s,c],...]      psum likewise
 *   hbm:NAME@OFF:DTYPE[[pstride,pcount],[s,c],...] */
static bool parse_ap(parser *ps, const char *s, trnc_nc_ap *ap) {
  memset(ap, 0, sizeof *ap);
  int64_t v;
  bool hbm = false;
  if (!strncmp(s, "sbuf[", 5) || !strncmp(s, "psum[", 5)) {
    ap->mem = s[0] == 's' ? TRNC_NC_MEM_SBUF : TRNC_NC_MEM_PSUM;
    s += 5;
    if (!parse_int(&s, 0, 1 << 20, &v)) return false;
    ap->start_partition = (int32_t)v;
    if (!expect(&s, ':') || !parse_int(&s, 0, 1 << 20, &v)) return false;
    ap->partitions = (int32_t)v;
    if (!expect(&s, ']')) return false;
  } else if (!strncmp(s, "hbm:", 4)) {
    hbm = true;
    ap->mem = TRNC_NC_MEM_HBM;
    s += 4;
    const char *at = strchr(s, '@');
    if (!at) return false;
    size_t n = (size_t)(at - s);
    ap->buffer = -1;
    for (size_t i = 0; i < ps->prog->nbufs; i++)
      if (strlen(ps->prog->bufs[i].name) == n && !strncmp(ps->prog->bufs[i].name, s, n))
        ap->buffer = (int32_t)i;
    if (ap->buffer < 0) return false;
    s = at;
  } else {
    return false;
  }
  if (!expect(&s, '@') || !parse_int(&s, -(1LL << 40), 1LL << 40, &v)) return false;
  ap->offset = v;
  if (!expect(&s, ':')) return false;
  const char *lb = strchr(s, '[');
  if (!lb) return false;
  int dt = parse_dtype(s, (size_t)(lb - s));
  if (dt < 0) return false;
  ap->dtype = (uint8_t)dt;
  s = lb + 1;
  int nd = 0;
  bool first = true;
  while (*s == '[') {
    int64_t st, cnt;
    s++;
    if (!parse_int(&s, -(1LL << 40), 1LL << 40, &st) || !expect(&s, ',') ||
        !parse_int(&s, 0, 1LL << 40, &cnt) || !expect(&s, ']'))
      return false;
    if (hbm && first) {
      if (cnt > (1 << 20)) return false;
      ap->partition_stride = st;
      ap->partitions = (int32_t)cnt;
    } else {
      if (nd >= TRNC_NC_MAX_FREE) return false;
      ap->free[nd].stride = st;
      ap->free[nd].count = cnt;
      nd++;
    }
    first = false;
    if (*s == ',') s++;
    else break;
  }
  if (hbm && first) return false;
  ap->nfree = (uint8_t)nd;
  return expect(&s, ']') && *s == '\0';
}

static bool parse_float(const char *s, float *out) {
  if (!*s) return false;
  char *end;
  errno = 0;
  float f = strtof(s, &end);
  if (*end != '\0') return false;
  *out = f;
  return true;
}

static trnc_status parse_instr(parser *ps, char **tok, int ntok, size_t k) {
  trnc_nc_instr in;
  memset(&in, 0, sizeof in);
  int eng = lookup_name(tok[0], strlen(tok[0]), trnc_nc_engine_name, TRNC_NC_ENGINE_COUNT);
  if (eng < 0) return perr(ps, "unknown engine '%s'", tok[0]);
  if (ntok < 2) return perr(ps, "missing opcode after '%s'", tok[0]);
  int op = lookup_name(tok[1], strlen(tok[1]), trnc_nc_opcode_name, TRNC_NC_OP_COUNT);
  if (op < 0) return perr(ps, "unknown opcode '%s'", tok[1]);
  in.engine = (uint8_t)eng;
  in.op = (uint8_t)op;
  const nc_opinfo *oi = &nc_opinfo_table[op];
  uint32_t seen = 0;
  for (int t = 2; t < ntok; t++) {
    char *eq = strchr(tok[t], '=');
    if (!eq) return perr(ps, "expected key=value, got '%s'", tok[t]);
    *eq = '\0';
    const char *key = tok[t], *val = eq + 1;
    int slot = -1;
    for (int s = 0; s < 5; s++)
      if (!strcmp(key, nc_slot_names[s])) slot = s;
    uint32_t bit;
    if (slot >= 0) {
      if (!(oi->slots & (1u << slot))) return perr(ps, "%s takes no operand '%s'", oi->name, key);
      if (!parse_ap(ps, val, nc_slot_mut(&in, slot)))
        return perr(ps, "bad access pattern %s='%s'", key, val);
      bit = 1u << slot;
    } else if (!strcmp(key, "op") && (oi->params & NC_PAR_ALU0)) {
      int a = lookup_name(val, strlen(val), trnc_nc_alu_name, TRNC_NC_ALU_COUNT);
      if (a < 0) return perr(ps, "unknown ALU op '%s'", val);
      in.alu0 = (uint8_t)a;
      bit = 1u << 8;
    } else if (!strcmp(key, "op1") && (oi->params & NC_PAR_ALU1)) {
      int a = lookup_name(val, strlen(val), trnc_nc_alu_name, TRNC_NC_ALU_COUNT);
      if (a < 0) return perr(ps, "unknown ALU op '%s'", val);
      in.alu1 = (uint8_t)a;
      bit = 1u << 9;
    } else if (!strcmp(key, "func") && (oi->params & NC_PAR_ACT)) {
      int a = lookup_name(val, strlen(val), trnc_nc_act_name, TRNC_NC_ACT_COUNT);
      if (a < 0) return perr(ps, "unknown activation function '%s'", val);
      in.act = (uint8_t)a;
      bit = 1u << 10;
    } else if ((oi->params & NC_PAR_MODE) && !strcmp(key, oi->mode_key)) {
      int64_t v;
      const char *c = val;
      int m = -1;
      if (op == TRNC_NC_OP_DMA_COPY) {
        for (int i = 0; i < 4; i++)
          if (!strcmp(val, k_dma_modes[i])) m = i;
      } else if (parse_int(&c, 0, 255, &v) && *c == '\0') {
        m = (int)v;
      }
      if (m < 0) return perr(ps, "bad %s='%s'", key, val);
      in.mode = (uint8_t)m;
      bit = 1u << 11;
    } else if (!strncmp(key, "imm", 3) && key[3] >= '0' && key[3] <= '2' && !key[4] &&
               (oi->params & (NC_PAR_IMM0 << (key[3] - '0')))) {
      if (!parse_float(val, &in.imm[key[3] - '0'])) return perr(ps, "bad number %s='%s'", key, val);
      bit = 1u << (12 + (key[3] - '0'));
    } else if (!strcmp(key, "aff") && (oi->params & NC_PAR_AFF)) {
      const char *c = val;
      int64_t v;
      if (!expect(&c, '[')) return perr(ps, "bad aff='%s'", val);
      for (int i = 0; i < 6; i++) {
        if (!parse_int(&c, INT32_MIN, INT32_MAX, &v) || !expect(&c, i < 5 ? ',' : ']'))
          return perr(ps, "bad aff='%s' (six integers)", val);
        in.aff[i] = (int32_t)v;
      }
      if (*c) return perr(ps, "bad aff='%s'", val);
      bit = 1u << 15;
    } else if (!strcmp(key, "wait")) {
      const char *c = val;
      int64_t sem, v;
      for (;;) {
        if (in.nwait >= TRNC_NC_MAX_WAIT) return perr(ps, "more than %d waits", TRNC_NC_MAX_WAIT);
        if (!expect(&c, 's') || !parse_int(&c, 0, UINT16_MAX, &sem) || !expect(&c, '>') ||
            !expect(&c, '=') || !parse_int(&c, 0, UINT32_MAX, &v))
          return perr(ps, "bad wait='%s' (sN>=V,...)", val);
        in.wait[in.nwait].sem = (uint16_t)sem;
        in.wait[in.nwait].value = (uint32_t)v;
        in.nwait++;
        if (!*c) break;
        if (!expect(&c, ',')) return perr(ps, "bad wait='%s'", val);
      }
      bit = 1u << 16;
    } else if (!strcmp(key, "signal")) {
      const char *c = val;
      int64_t sem;
      for (;;) {
        if (in.nsignal >= TRNC_NC_MAX_SIGNAL)
          return perr(ps, "more than %d signals", TRNC_NC_MAX_SIGNAL);
        if (!expect(&c, 's') || !parse_int(&c, 0, UINT16_MAX, &sem))
          return perr(ps, "bad signal='%s' (sN,...)", val);
        in.signal[in.nsignal++] = (uint16_t)sem;
        if (!*c) break;
        if (!expect(&c, ',')) return perr(ps, "bad signal='%s'", val);
      }
      bit = 1u << 17;
    } else {
      return perr(ps, "%s takes no parameter '%s'", oi->name, key);
    }
    if (seen & bit) return perr(ps, "'%s' given twice", key);
    seen |= bit;
  }
  trnc_status st = trnc_nc_kernel_append(ps->prog, k, &in);
  if (st) return trnc_diag_error(ps->diags, st, "out of memory");
  return TRNC_OK;
}

static const char *cc_name_i(int i) { return trnc_nc_cc_op_name(i); }
static const char *red_name_i(int i) { return trnc_nc_cc_reduce_name(i); }

/* hbm:NAME@OFFSET+BYTES */
static bool parse_cc_operand(parser *ps, const char *s, int32_t *buf, int64_t *off, int64_t *bytes) {
  if (strncmp(s, "hbm:", 4)) return false;
  s += 4;
  const char *at = strchr(s, '@');
  if (!at) return false;
  *buf = -1;
  for (size_t i = 0; i < ps->prog->nbufs; i++)
    if (strlen(ps->prog->bufs[i].name) == (size_t)(at - s) &&
        !strncmp(ps->prog->bufs[i].name, s, (size_t)(at - s)))
      *buf = (int32_t)i;
  s = at + 1;
  if (*buf < 0 || !parse_int(&s, 0, 1LL << 40, off) || !expect(&s, '+') ||
      !parse_int(&s, 0, 1LL << 40, bytes))
    return false;
  return !*s;
}

/* [b0,b1,...] into v; *n = count. */
static bool parse_splits(const char *s, int64_t *v, int *n) {
  *n = 0;
  if (!expect(&s, '[')) return false;
  while (*s != ']') {
    if (*n == TRNC_NC_CC_MAX_GROUP || (*n && !expect(&s, ',')) || !parse_int(&s, 0, 1LL << 40, &v[*n]))
      return false;
    (*n)++;
  }
  return s[1] == '\0';
}

/* .collective OP key=value ... (grammar at the top of this file) */
static trnc_status parse_collective(parser *ps, char **tok, int ntok) {
  trnc_nc_collective cc;
  memset(&cc, 0, sizeof cc);
  int op = ntok >= 2 ? lookup_name(tok[1], strlen(tok[1]), cc_name_i, TRNC_NC_CC_COUNT) : -1;
  if (op < 0) return perr(ps, ".collective needs an op (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, cc_wait)");
  cc.op = (uint8_t)op;
  int nin = 0, nout = 0;
  for (int t = 2; t < ntok; t++) {
    char *eq = strchr(tok[t], '=');
    if (!eq) return perr(ps, "expected key=value, got '%s'", tok[t]);
    *eq = '\0';
    const char *key = tok[t], *val = eq + 1, *c = val;
    int64_t v;
    bool ok = true;
    if (!strcmp(key, "handle")) ok = parse_int(&c, 0, INT32_MAX, &v) && !*c && ((cc.handle = (int32_t)v), 1);
    else if (!strcmp(key, "size")) ok = parse_int(&c, 0, INT32_MAX, &v) && !*c && ((cc.group_size = (int32_t)v), 1);
    else if (!strcmp(key, "root")) ok = parse_int(&c, 0, INT32_MAX, &v) && !*c && ((cc.root = (int32_t)v), 1);
    else if (!strcmp(key, "group")) {
      ok = strlen(val) < TRNC_NC_CC_GROUP_NAME;
      if (ok) strcpy(cc.group, val);
    } else if (!strcmp(key, "dtype")) {
      int dt = parse_dtype(val, strlen(val));
      ok = dt >= 0;
      cc.dtype = (uint8_t)(dt < 0 ? 0 : dt);
    } else if (!strcmp(key, "reduce")) {
      int r = lookup_name(val, strlen(val), red_name_i, TRNC_NC_RED_COUNT);
      ok = r >= 0;
      cc.reduce = (uint8_t)(r < 0 ? 0 : r);
    } else if (!strcmp(key, "src")) ok = parse_cc_operand(ps, val, &cc.src_buffer, &cc.src_offset, &cc.src_bytes);
    else if (!strcmp(key, "dst")) ok = parse_cc_operand(ps, val, &cc.dst_buffer, &cc.dst_offset, &cc.dst_bytes);
    else if (!strcmp(key, "in_split")) ok = parse_splits(val, cc.in_split, &nin);
    else if (!strcmp(key, "out_split")) ok = parse_splits(val, cc.out_split, &nout);
    else return perr(ps, "unknown .collective key '%s'", key);
    if (!ok) return perr(ps, "bad .collective %s=%s", key, val);
  }
  if (nin != nout) return perr(ps, ".collective in_split and out_split differ in length");
  cc.nsplits = nin;
  if (trnc_nc_program_add_collective(ps->prog, &cc) < 0) return perr(ps, "cannot add collective");
  return TRNC_OK;
}

static trnc_status parse_line(parser *ps, char *line) {
  char *hash = strchr(line, '#');
  if (hash) *hash = '\0';
  char *tok[64];
  int ntok = 0;
  for (char *c = line; *c;) {
    while (*c == ' ' || *c == '\t' || *c == '\r') *c++ = '\0';
    if (!*c) break;
    if (ntok == 64) return perr(ps, "too many tokens");
    tok[ntok++] = c;
    while (*c && *c != ' ' && *c != '\t' && *c != '\r') c++;
  }
  if (!ntok) return TRNC_OK;
  trnc_nc_program *p = ps->prog;
  int64_t v;
  const char *c;
  if (!strcmp(tok[0], ".version")) {
    c = ntok == 2 ? tok[1] : "";
    if (!parse_int(&c, 0, 1 << 30, &v) || *c) return perr(ps, "bad .version");
    if (v < TRNC_NC_PROGRAM_MIN_VERSION || v > TRNC_NC_PROGRAM_VERSION)
      return trnc_diag_error(ps->diags, TRNC_ERR_VERSION,
                             "NeuronCore asm line %zu: program version %lld, this build reads %d..%d",
                             ps->line, (long long)v, TRNC_NC_PROGRAM_MIN_VERSION,
                             TRNC_NC_PROGRAM_VERSION);
    ps->have_version = true;
    return TRNC_OK;
  }
  if (!strcmp(tok[0], ".target")) {
    const trnc_nc_target *t = ntok == 2 ? trnc_nc_target_by_name(tok[1]) : NULL;
    if (!t) return perr(ps, "unknown .target (use trn1, trn2 or trn3)");
    if (p->nbufs || p->nkernels) return perr(ps, ".target must precede buffers and kernels");
    p->target = t;
    return TRNC_OK;
  }
  if (!strcmp(tok[0], ".buffer")) {
    if (ntok != 5 && ntok != 6) return perr(ps, ".buffer NAME KIND DTYPE BYTES [OFFSET]");
    int kind = -1;
    for (int i = 0; i < 3; i++)
      if (!strcmp(tok[2], k_kind_names[i])) kind = i;
    int dt = parse_dtype(tok[3], strlen(tok[3]));
    int64_t bytes, off = 0;
    c = tok[4];
    if (kind < 0 || dt < 0 || !parse_int(&c, 1, 1LL << 40, &bytes) || *c)
      return perr(ps, "bad .buffer '%s'", tok[1]);
    if (ntok == 6) {
      c = tok[5];
      if (!parse_int(&c, 0, 1LL << 40, &off) || *c) return perr(ps, "bad .buffer offset");
    }
    if (trnc_nc_program_add_buffer(p, tok[1], kind, (trnc_dtype)dt, bytes, off) < 0)
      return perr(ps, "cannot add buffer '%s' (bad or duplicate name, offset on a non-internal buffer)", tok[1]);
    return TRNC_OK;
  }
  if (!strcmp(tok[0], ".kernel")) {
    c = ntok == 3 ? tok[2] : "";
    if (!parse_int(&c, 0, TRNC_NC_MAX_SEMAPHORES, &v) || *c)
      return perr(ps, ".kernel NAME SEMAPHORES (<= %d)", TRNC_NC_MAX_SEMAPHORES);
    if (trnc_nc_program_add_kernel(p, tok[1], (int)v) < 0) return perr(ps, "bad kernel name '%s'", tok[1]);
    return TRNC_OK;
  }
  if (!strcmp(tok[0], ".collective")) return parse_collective(ps, tok, ntok);
  if (tok[0][0] == '.') return perr(ps, "unknown directive '%s'", tok[0]);
  if (!p->nkernels) return perr(ps, "instruction before any .kernel");
  if (p->kernels[p->nkernels - 1].cc) return perr(ps, "instruction after a .collective (start a .kernel)");
  return parse_instr(ps, tok, ntok, p->nkernels - 1);
}

trnc_status trnc_nc_program_parse(const char *text, size_t len, trnc_nc_program **out,
                                  trnc_diags *diags) {
  if (!out) return TRNC_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (!text && len) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "NULL asm text");
  if (len > (1u << 30)) return trnc_diag_error(diags, TRNC_ERR_LIMIT, "asm text larger than 1 GiB");
  char *buf = malloc(len + 1);
  trnc_nc_program *p = trnc_nc_program_create(NULL);
  if (!buf || !p) {
    free(buf);
    trnc_nc_program_destroy(p);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "out of memory");
  }
  if (len) memcpy(buf, text, len);
  buf[len] = '\0';
  parser ps = {p, diags, 0, false};
  trnc_status st = TRNC_OK;
  char *line = buf;
  while (line && line <= buf + len) {
    char *nl = memchr(line, '\n', (size_t)(buf + len - line));
    if (nl) *nl = '\0';
    ps.line++;
    if (strlen(line) != (size_t)((nl ? nl : buf + len) - line)) {
      st = perr(&ps, "NUL byte in text");
      break;
    }
    st = parse_line(&ps, line);
    if (st) break;
    line = nl ? nl + 1 : NULL;
  }
  if (!st && !ps.have_version)
    st = trnc_diag_error(diags, TRNC_ERR_MALFORMED, "NeuronCore asm: missing '.version %d'",
                         TRNC_NC_PROGRAM_VERSION);
  free(buf);
  if (st) {
    trnc_nc_program_destroy(p);
    return st;
  }
  *out = p;
  return TRNC_OK;
}
