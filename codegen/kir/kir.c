/*
 * kir.c — building, printing and verifying kernel IR (kir.h).
 */
#include <string.h>

#include "codegen/kir/kir.h"

static const char *const op_names[KIR_OPCODE_COUNT] = {
    "load", "store", "act", "tt", "ts", "copy", "const", "select", "reduce", "bcast", "mm",
    "mmv", "affsel", "matmul", "gather", "scatter", "iota", "colsum", "accum"};

void kir_init(kir_kernel *k, const char *name, const trnc_node *node, int naxes,
              const int64_t *extent, uint32_t raxes) {
  memset(k, 0, sizeof *k);
  k->name = name;
  k->node = node;
  k->naxes = naxes;
  for (int i = 0; i < naxes; i++) k->extent[i] = extent[i];
  k->raxes = raxes;
}

int kir_tensor_add(kir_kernel *k, const lw_tv *tv, const int *axis_of) {
  if (k->ntensors >= KIR_MAX_TENSORS) return -1;
  kir_tensor *t = &k->tensors[k->ntensors];
  memset(t, 0, sizeof *t);
  t->buffer = tv->buffer;
  t->dtype = tv->t.dtype;
  t->offset = tv->t.offset;
  for (int d = 0; d < tv->t.rank; d++)
    if (axis_of[d] >= 0 && tv->t.shape[d] > 1) t->stride[axis_of[d]] = tv->t.stride[d];
  return k->ntensors++;
}

int kir_value_new(kir_kernel *k, trnc_dtype dt, uint32_t axes) {
  if (k->nvalues >= KIR_MAX_VALUES) return -1;
  k->values[k->nvalues] = (kir_value){dt, axes};
  return k->nvalues++;
}

bool kir_op_add(kir_kernel *k, kir_op op) {
  if (k->nops >= KIR_MAX_OPS) return false;
  k->ops[k->nops++] = op;
  return true;
}

static kir_op blank(int code) {
  kir_op o;
  memset(&o, 0, sizeof o);
  o.code = (uint8_t)code;
  o.dst = o.src[0] = o.src[1] = o.src[2] = o.tensor = -1;
  return o;
}

static uint32_t all_axes(const kir_kernel *k) { return k->naxes >= 32 ? ~0u : (1u << k->naxes) - 1; }

/* Defines a new value for op o over `axes`; -1 when full. */
static int define(kir_kernel *k, kir_op o, trnc_dtype dt, uint32_t axes) {
  int v = kir_value_new(k, dt, axes);
  if (v < 0) return -1;
  o.dst = (int16_t)v;
  if (!kir_op_add(k, o)) return -1;
  return v;
}

static uint32_t axes_of(const kir_kernel *k, int v) { return v >= 0 ? k->values[v].axes : 0; }

int kir_load(kir_kernel *k, int tensor, trnc_dtype dt) {
  kir_op o = blank(KIR_LOAD);
  o.tensor = (int16_t)tensor;
  return define(k, o, dt, all_axes(k));
}

int kir_load_first(kir_kernel *k, int tensor, trnc_dtype dt) {
  kir_op o = blank(KIR_LOAD);
  o.tensor = (int16_t)tensor;
  return define(k, o, dt, all_axes(k) & ~k->raxes);
}

bool kir_store(kir_kernel *k, int tensor, int v) {
  kir_op o = blank(KIR_STORE);
  o.tensor = (int16_t)tensor;
  o.src[0] = (int16_t)v;
  return v >= 0 && kir_op_add(k, o);
}

bool kir_matmul(kir_kernel *k, int tensor, int a) {
  kir_op o = blank(KIR_MM);
  o.tensor = (int16_t)tensor;
  o.src[0] = (int16_t)a;
  return a >= 0 && kir_op_add(k, o);
}

bool kir_colsum(kir_kernel *k, int tensor, int a) {
  kir_op o = blank(KIR_COLSUM);
  o.tensor = (int16_t)tensor;
  o.src[0] = (int16_t)a;
  return a >= 0 && kir_op_add(k, o);
}

int kir_matmul2(kir_kernel *k, int a, int b) {
  if (a < 0 || b < 0) return -1;
  kir_op o = blank(KIR_MATMUL);
  o.src[0] = (int16_t)a;
  o.src[1] = (int16_t)b;
  return define(k, o, TRNC_F32, all_axes(k) & ~k->raxes);
}

int kir_act(kir_kernel *k, trnc_dtype dt, int fn, int a, float scale, float bias) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_ACT);
  o.fn = (uint8_t)fn;
  o.src[0] = (int16_t)a;
  o.imm[0] = scale;
  o.imm[1] = bias;
  return define(k, o, dt, axes_of(k, a));
}

int kir_actv(kir_kernel *k, trnc_dtype dt, int fn, int a, float scale, int bv) {
  if (a < 0 || bv < 0) return -1;
  kir_op o = blank(KIR_ACT);
  o.fn = (uint8_t)fn;
  o.src[0] = (int16_t)a;
  o.src[1] = (int16_t)bv;
  o.imm[0] = scale;
  return define(k, o, dt, axes_of(k, a));
}

int kir_tt(kir_kernel *k, trnc_dtype dt, int alu, int a, int b) {
  if (a < 0 || b < 0) return -1;
  kir_op o = blank(KIR_TT);
  o.fn = (uint8_t)alu;
  o.src[0] = (int16_t)a;
  o.src[1] = (int16_t)b;
  return define(k, o, dt, axes_of(k, a));
}

int kir_ts(kir_kernel *k, trnc_dtype dt, int a, int op0, float s0, int op1, float s1) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_TS);
  o.fn = (uint8_t)op0;
  o.fn1 = (uint8_t)op1;
  o.src[0] = (int16_t)a;
  o.imm[0] = s0;
  o.imm[1] = s1;
  return define(k, o, dt, axes_of(k, a));
}

int kir_tsv(kir_kernel *k, trnc_dtype dt, int a, int op0, int s0v, int op1, int s1v) {
  if (a < 0 || s0v < 0) return -1;
  kir_op o = blank(KIR_TS);
  o.fn = (uint8_t)op0;
  o.fn1 = (uint8_t)(s1v >= 0 ? op1 : TRNC_NC_ALU_BYPASS);
  o.src[0] = (int16_t)a;
  o.src[1] = (int16_t)s0v;
  o.src[2] = (int16_t)s1v;
  return define(k, o, dt, axes_of(k, a));
}

int kir_bcast(kir_kernel *k, trnc_dtype dt, int a) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_BCAST);
  o.src[0] = (int16_t)a;
  return define(k, o, dt, all_axes(k));
}

int kir_copy(kir_kernel *k, trnc_dtype dt, int a) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_COPY);
  o.src[0] = (int16_t)a;
  return define(k, o, dt, axes_of(k, a));
}

int kir_const(kir_kernel *k, trnc_dtype dt, uint32_t axes, float c) {
  kir_op o = blank(KIR_CONST);
  o.imm[0] = c;
  /* an i32 const is an iota (emit.c): c as a store to i32 converts it
   * (truncated toward zero, saturated, NaN 0) */
  o.ival = c != c ? 0 : c <= -2147483648.0f ? INT32_MIN : c >= 2147483648.0f ? INT32_MAX : (int32_t)c;
  return define(k, o, dt, axes);
}

int kir_const_i32(kir_kernel *k, uint32_t axes, int32_t c) {
  for (int i = 0; i < k->nops; i++) { /* one value per constant (pure, defined once) */
    const kir_op *p = &k->ops[i];
    if (p->code == KIR_CONST && p->ival == c && p->dst >= 0 && k->values[p->dst].dtype == TRNC_I32 &&
        k->values[p->dst].axes == axes)
      return p->dst;
  }
  kir_op o = blank(KIR_CONST);
  o.imm[0] = (float)c;
  o.ival = c;
  return define(k, o, TRNC_I32, axes);
}

int kir_select(kir_kernel *k, trnc_dtype dt, int m, int a, int b) {
  if (m < 0 || a < 0 || b < 0) return -1;
  kir_op o = blank(KIR_SELECT);
  o.src[0] = (int16_t)m;
  o.src[1] = (int16_t)a;
  o.src[2] = (int16_t)b;
  return define(k, o, dt, axes_of(k, m));
}

int kir_reduce(kir_kernel *k, int alu, int a, uint32_t raxes) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_REDUCE);
  o.fn = (uint8_t)alu;
  o.src[0] = (int16_t)a;
  o.raxes = raxes;
  return define(k, o, TRNC_F32, axes_of(k, a) & ~raxes);
}

int kir_tensor_map(kir_kernel *k, int32_t buffer, trnc_dtype dt, int64_t offset, const int64_t *stride) {
  if (k->ntensors >= KIR_MAX_TENSORS) return -1;
  kir_tensor *t = &k->tensors[k->ntensors];
  memset(t, 0, sizeof *t);
  t->buffer = buffer;
  t->dtype = dt;
  t->offset = offset;
  for (int i = 0; i < k->naxes; i++) t->stride[i] = stride[i];
  return k->ntensors++;
}

int kir_iota(kir_kernel *k, int tensor) {
  if (tensor < 0) return -1;
  kir_op o = blank(KIR_IOTA);
  o.tensor = (int16_t)tensor;
  return define(k, o, TRNC_I32, all_axes(k));
}

int kir_load_axes(kir_kernel *k, int tensor, trnc_dtype dt, uint32_t axes) {
  kir_op o = blank(KIR_LOAD);
  o.tensor = (int16_t)tensor;
  return define(k, o, dt, axes);
}

int kir_bcast_to(kir_kernel *k, trnc_dtype dt, int a, uint32_t axes) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_BCAST);
  o.src[0] = (int16_t)a;
  return define(k, o, dt, axes);
}

int kir_mmv(kir_kernel *k, int a, int b, uint32_t r) {
  if (a < 0 || b < 0) return -1;
  kir_op o = blank(KIR_MMV);
  o.src[0] = (int16_t)a;
  o.src[1] = (int16_t)b;
  o.raxes = r;
  return define(k, o, TRNC_F32, (axes_of(k, a) | axes_of(k, b)) & ~r);
}

int kir_affsel(kir_kernel *k, trnc_dtype dt, int a, int32_t c0, const int32_t *coef, float fill) {
  if (a < 0) return -1;
  kir_op o = blank(KIR_AFFSEL);
  o.src[0] = (int16_t)a;
  o.ival = c0;
  o.imm[0] = fill;
  for (int i = 0; i < k->naxes; i++) o.coef[i] = coef[i];
  return define(k, o, dt, axes_of(k, a));
}

int kir_first(kir_kernel *k, int v) {
  if (v < 0) return -1;
  uint32_t space = all_axes(k) & ~k->raxes;
  if ((k->values[v].axes & ~space) == 0) return v;
  int d = -1;
  for (int i = 0; i < k->nops && d < 0; i++)
    if (k->ops[i].dst == v) d = i;
  if (d < 0) return -1;
  kir_op o = k->ops[d];
  if (o.code == KIR_LOAD) return kir_load_first(k, o.tensor, k->values[v].dtype);
  if (o.code == KIR_BCAST) return o.src[0];
  for (int s = 0; s < 3; s++)
    if (o.src[s] >= 0 && (o.src[s] = (int16_t)kir_first(k, o.src[s])) < 0) return -1;
  return define(k, o, k->values[v].dtype, space);
}

/* ---- printing -------------------------------------------------------------------- */

static void print_axes(FILE *f, uint32_t m, int n) {
  fputc('{', f);
  bool first = true;
  for (int i = 0; i < n; i++)
    if (m & (1u << i)) {
      fprintf(f, "%sa%d", first ? "" : ",", i);
      first = false;
    }
  fputc('}', f);
}

void kir_print(const kir_kernel *k, FILE *f) {
  fprintf(f, "kernel %s (", k->name ? k->name : "?");
  for (int i = 0; i < k->naxes; i++)
    fprintf(f, "%sa%d:%lld%s", i ? ", " : "", i, (long long)k->extent[i],
            (k->raxes & (1u << i)) ? " red" : "");
  fprintf(f, ")");
  if (k->seq) {
    fprintf(f, " seq ");
    print_axes(f, k->seq, k->naxes);
  }
  fprintf(f, "\n");
  for (int t = 0; t < k->ntensors; t++) {
    const kir_tensor *T = &k->tensors[t];
    fprintf(f, "  T%d = buf%d %s +%lld [", t, T->buffer, trnc_dtype_name(T->dtype),
            (long long)T->offset);
    for (int i = 0; i < k->naxes; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)T->stride[i]);
    fprintf(f, "]\n");
  }
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    fprintf(f, "  ");
    if (o->dst >= 0) {
      fprintf(f, "%%%d:%s", o->dst, trnc_dtype_name(k->values[o->dst].dtype));
      print_axes(f, k->values[o->dst].axes, k->naxes);
      fprintf(f, " = ");
    }
    fprintf(f, "%s", o->code < KIR_OPCODE_COUNT ? op_names[o->code] : "?");
    switch (o->code) {
      case KIR_LOAD:
      case KIR_IOTA: fprintf(f, " T%d", o->tensor); break;
      case KIR_GATHER:
        fprintf(f, " T%d, %%%d (%lld rows of %lld)", o->tensor, o->src[0], (long long)k->tensors[o->tensor].rows,
                (long long)k->tensors[o->tensor].row_stride);
        break;
      case KIR_STORE:
      case KIR_COLSUM: fprintf(f, " T%d, %%%d", o->tensor, o->src[0]); break;
      case KIR_SCATTER:
      case KIR_ACCUM:
        fprintf(f, " T%d, %%%d, %%%d%s (%lld rows of %lld)", o->tensor, o->src[0], o->src[1],
                o->code == KIR_ACCUM && o->fn ? ", init" : "", (long long)k->tensors[o->tensor].rows,
                (long long)k->tensors[o->tensor].row_stride);
        break;
      case KIR_MM:
        fprintf(f, " T%d, %%%d, buf%d [%lld,%lld] x %g", o->tensor, o->src[0], k->mm.w->buffer,
                (long long)k->mm.w->t.stride[0], (long long)k->mm.w->t.stride[1], k->mm.alpha);
        if (k->mm.bias >= 0) fprintf(f, " + T%d x %g", k->mm.bias, k->mm.beta);
        if (k->mm.act != TRNC_NC_ACT_IDENTITY) fprintf(f, ", %s", trnc_nc_act_name(k->mm.act));
        break;
      case KIR_ACT:
        fprintf(f, " %s, %%%d, %g, ", trnc_nc_act_name(o->fn), o->src[0], o->imm[0]);
        if (o->src[1] >= 0) fprintf(f, "%%%d", o->src[1]);
        else fprintf(f, "%g", o->imm[1]);
        break;
      case KIR_TT: fprintf(f, " %s, %%%d, %%%d", trnc_nc_alu_name(o->fn), o->src[0], o->src[1]); break;
      case KIR_MATMUL: fprintf(f, " %%%d, %%%d", o->src[0], o->src[1]); break;
      case KIR_TS:
        fprintf(f, " %s, %%%d, ", trnc_nc_alu_name(o->fn), o->src[0]);
        if (o->src[1] >= 0) fprintf(f, "%%%d", o->src[1]);
        else fprintf(f, "%g", o->imm[0]);
        if (o->fn1 != TRNC_NC_ALU_BYPASS) {
          fprintf(f, ", %s, ", trnc_nc_alu_name(o->fn1));
          if (o->src[2] >= 0) fprintf(f, "%%%d", o->src[2]);
          else fprintf(f, "%g", o->imm[1]);
        }
        break;
      case KIR_COPY:
      case KIR_BCAST: fprintf(f, " %%%d", o->src[0]); break;
      case KIR_CONST:
        if (k->values[o->dst].dtype == TRNC_I32) fprintf(f, " %d", (int)o->ival);
        else fprintf(f, " %g", o->imm[0]);
        break;
      case KIR_SELECT: fprintf(f, " %%%d, %%%d, %%%d", o->src[0], o->src[1], o->src[2]); break;
      case KIR_MMV:
        fprintf(f, " %%%d, %%%d, ", o->src[0], o->src[1]);
        print_axes(f, o->raxes, k->naxes);
        break;
      case KIR_AFFSEL:
        fprintf(f, " %%%d, %d", o->src[0], (int)o->ival);
        for (int a = 0; a < k->naxes; a++)
          if (o->coef[a]) fprintf(f, " %+d*a%d", (int)o->coef[a], a);
        fprintf(f, " >= 0, %g", o->imm[0]);
        break;
      case KIR_REDUCE:
        fprintf(f, " %s, %%%d, ", trnc_nc_alu_name(o->fn), o->src[0]);
        print_axes(f, o->raxes, k->naxes);
        break;
      default: break;
    }
    fputc('\n', f);
  }
}

/* ---- verifier ---------------------------------------------------------------------- */

const char *kir_verify(const kir_kernel *k) {
  static const int nsrc[KIR_OPCODE_COUNT] = {0, 1, 2, 2, 3, 1, 0, 3, 1, 1, 1, 2, 1, 2, 1, 2, 0, 1, 2};
  if (k->naxes < 0 || k->naxes > KIR_MAX_AXES) return "axis count out of range";
  for (int i = 0; i < k->naxes; i++)
    if (k->extent[i] < 1) return "an axis has extent < 1";
  if (k->raxes & ~all_axes(k)) return "reduction axes outside the kernel";
  if (k->seq & ~k->raxes) return "the sequential axis is not a reduction axis";
  bool defined[KIR_MAX_VALUES] = {false};
  for (int i = 0; i < k->nops; i++) {
    const kir_op *o = &k->ops[i];
    if (o->code >= KIR_OPCODE_COUNT) return "unknown opcode";
    for (int s = 0; s < 3; s++) {
      if ((o->code == KIR_TS || o->code == KIR_ACT) && s > 0 && o->src[s] == -1)
        continue; /* an immediate scalar or bias */
      bool used = s < nsrc[o->code];
      if (!used && o->src[s] != -1) return "an unused operand slot is set";
      if (used && (o->src[s] < 0 || o->src[s] >= k->nvalues || !defined[o->src[s]]))
        return "an operand is read before it is defined";
    }
    if (o->code == KIR_STORE || o->code == KIR_MM || o->code == KIR_SCATTER || o->code == KIR_COLSUM ||
        o->code == KIR_ACCUM) {
      if (o->dst != -1) return "a store defines a value";
    } else {
      if (o->dst < 0 || o->dst >= k->nvalues) return "an op defines no value";
      if (defined[o->dst]) return "a value is defined twice";
      defined[o->dst] = true;
    }
    bool io = o->code == KIR_LOAD || o->code == KIR_STORE || o->code == KIR_MM || o->code == KIR_GATHER ||
              o->code == KIR_SCATTER || o->code == KIR_IOTA || o->code == KIR_COLSUM || o->code == KIR_ACCUM;
    if (io != (o->tensor >= 0)) return "a tensor operand is set on the wrong op";
    if (io && o->tensor >= k->ntensors) return "tensor index out of range";
    uint32_t ax = o->dst >= 0 ? k->values[o->dst].axes : 0;
    switch (o->code) {
      case KIR_LOAD:
        if (k->seq) {
          for (int a = 0; a < k->naxes; a++)
            if (!(ax & (1u << a)) && k->tensors[o->tensor].stride[a] != 0 && k->extent[a] > 1)
              return "a load's tensor varies along an axis its value does not span";
        } else if (ax != all_axes(k) && ax != (all_axes(k) & ~k->raxes)) {
          return "a load spans every axis or every space axis";
        }
        break;
      case KIR_MMV: {
        uint32_t a0 = k->values[o->src[0]].axes, a1 = k->values[o->src[1]].axes;
        if (!k->seq) return "an mmv outside a kernel with a sequential axis";
        if (!o->raxes || (o->raxes & ~(a0 & a1))) return "an mmv contracts axes both operands span";
        if (ax != ((a0 | a1) & ~o->raxes)) return "an mmv's result axes are wrong";
        break;
      }
      case KIR_AFFSEL:
        if (k->values[o->src[0]].axes != ax) return "elementwise operands span different axes";
        for (int a = 0; a < k->naxes; a++)
          if (o->coef[a] && !(ax & (1u << a))) return "an affsel indexes an axis its value does not span";
        break;
      case KIR_STORE: {
        uint32_t vax = k->values[o->src[0]].axes;
        for (int a = 0; a < k->naxes; a++)
          if (!(vax & (1u << a)) && k->tensors[o->tensor].stride[a] != 0 && k->extent[a] > 1)
            return "a store's tensor varies along an axis its value does not span";
        break;
      }
      case KIR_COLSUM:
        if (k->seq || !k->raxes) return "a colsum outside a row kernel";
        if (k->values[o->src[0]].axes != all_axes(k)) return "a colsum's operand spans every axis";
        for (int a = 0; a < k->naxes; a++)
          if (!(k->raxes & (1u << a)) && k->tensors[o->tensor].stride[a] != 0 && k->extent[a] > 1)
            return "a colsum's tensor varies along a space axis";
        break;
      case KIR_MM: {
        int nred = 0;
        for (int a = 0; a < k->naxes; a++) nred += (k->raxes >> a) & 1;
        if (nred != 1) return "an mm contracts the kernel's one reduction axis";
        if (k->values[o->src[0]].axes != all_axes(k)) return "an mm's operand spans every axis";
        if (!k->mm.w || k->mm.n < 1) return "an mm without its matmul operand";
        if (k->mm.bias >= k->ntensors) return "an mm's bias tensor is out of range";
        break;
      }
      case KIR_MATMUL: {
        int nred = 0;
        for (int a = 0; a < k->naxes; a++) nred += (k->raxes >> a) & 1;
        if (nred < 1) return "a matmul contracts the kernel's reduction axes";
        if (axes_of(k, o->src[0]) != all_axes(k) || axes_of(k, o->src[1]) != all_axes(k))
          return "a matmul's operands span every axis";
        if (ax != (all_axes(k) & ~k->raxes)) return "a matmul's result spans the space axes";
        break;
      }
      case KIR_REDUCE:
        if (o->raxes & ~k->raxes) return "a reduce folds a non-reduction axis";
        if (ax != (k->values[o->src[0]].axes & ~o->raxes)) return "a reduce's result axes are wrong";
        break;
      case KIR_CONST: break;
      case KIR_IOTA:
        if (k->values[o->dst].dtype != TRNC_I32 || ax != all_axes(k) || k->raxes)
          return "an iota is an i32 value over every axis of a map kernel";
        if (k->tensors[o->tensor].buffer >= 0) return "an iota's access map names a buffer";
        break;
      case KIR_SCATTER:
        if (k->values[o->src[0]].dtype != TRNC_I32 || k->values[o->src[0]].axes != all_axes(k) ||
            k->values[o->src[1]].axes != all_axes(k))
          return "a scatter's index (i32) and value span every axis";
        if (k->tensors[o->tensor].rows < 1 || k->raxes) return "a scatter's table has no rows, or a reduction";
        break;
      case KIR_ACCUM: {
        if (k->values[o->src[0]].dtype != TRNC_I32 || k->values[o->src[0]].axes != all_axes(k) ||
            k->values[o->src[1]].axes != all_axes(k))
          return "an accum's index (i32) and value span every axis";
        if (k->tensors[o->tensor].rows < 1 || k->raxes || k->seq) return "an accum's table has no rows, or a reduction";
        if (i != k->nops - 1) return "an accum is its kernel's last op";
        for (int j = 0; j < i; j++) {
          int c = k->ops[j].code;
          if (c == KIR_STORE || c == KIR_SCATTER || c == KIR_MM || c == KIR_MATMUL || c == KIR_COLSUM ||
              c == KIR_REDUCE || c == KIR_MMV || c == KIR_BCAST || c == KIR_ACT || c == KIR_AFFSEL)
            return "an accum kernel's other ops are loads, gathers and elementwise index arithmetic";
        }
        break;
      }
      case KIR_GATHER:
        if (ax != all_axes(k) && ax != (all_axes(k) & ~k->raxes))
          return "a gather spans every axis or every space axis";
        if (k->values[o->src[0]].dtype != TRNC_I32 || k->values[o->src[0]].axes != ax)
          return "a gather's index is an i32 value over its axes";
        if (k->tensors[o->tensor].rows < 1) return "a gather's table has no rows";
        break;
      case KIR_BCAST:
        if (k->values[o->src[0]].axes & ~ax) return "a bcast drops axes";
        break;
      case KIR_TS:
      case KIR_ACT:
        if (k->values[o->src[0]].axes != ax) return "elementwise operands span different axes";
        if (k->seq) { /* scalars: per row of the tile, over fewer axes */
          for (int s = 1; s < 3; s++)
            if (o->src[s] >= 0 && (k->values[o->src[s]].axes & ~ax)) return "a ts scalar spans more axes";
          break;
        }
        for (int s = 1; s < 3; s++) {
          if (o->src[s] < 0) continue;
          uint32_t sax = k->values[o->src[s]].axes;
          if ((sax & ~ax) || ((ax & ~sax) & ~k->raxes))
            return "a ts scalar must span the operand's axes less reduction axes";
        }
        if (o->src[2] >= 0 && o->fn1 == TRNC_NC_ALU_BYPASS) return "a ts scalar for a bypassed op1";
        break;
      default:
        for (int s = 0; s < nsrc[o->code]; s++)
          if (k->values[o->src[s]].axes != ax) return "elementwise operands span different axes";
    }
  }
  return NULL;
}
