/*
 * legalize_f64.c — float64 runs as float32.
 *
 * NeuronCore engines have no float64 datapath. Like the Neuron SDK, trnc
 * executes float64 graphs in float32: every f64 value, dtype argument and
 * constant becomes f32, and one warning counts the affected graph inputs
 * by kind (parameters/buffers/user inputs, saved values, gradients) so
 * the user knows their results carry float32 precision. Outputs keep their
 * declared dtype at the Python boundary (the runtime converts back).
 */
#include <stdio.h>
#include <string.h>

#include "passes/passes.h"

static void retype_arg(trnc_arg *a) {
  if (a->kind == TRNC_ARG_DTYPE && a->u.dtype == TRNC_F64) a->u.dtype = TRNC_F32;
  else if (a->kind == TRNC_ARG_LIST)
    for (uint32_t i = 0; i < a->u.list.n; i++) retype_arg(&a->u.list.items[i]);
}

/* "2 parameters/buffers/user inputs, 1 output gradient" into buf: float64
 * graph inputs counted by placeholder role (the FX names, primals_1 or
 * tangents_1, mean nothing to the user). */
static void describe_inputs(char *buf, size_t len, size_t user, size_t saved, size_t grads) {
  size_t used = 0;
  buf[0] = '\0';
  if (user) {
    const char *s = user == 1 ? "" : "s";
    used += (size_t)snprintf(buf + used, len - used, "%zu parameter%s/buffer%s/user input%s",
                             user, s, s, s);
  }
  if (saved && used < len)
    used += (size_t)snprintf(buf + used, len - used, "%s%zu value%s saved by the forward graph",
                             used ? ", " : "", saved, saved == 1 ? "" : "s");
  if (grads && used < len)
    snprintf(buf + used, len - used, "%s%zu output gradient%s", used ? ", " : "", grads,
             grads == 1 ? "" : "s");
}

trnc_status trnc_pass_legalize_f64(trnc_graph *g, trnc_diags *d) {
  size_t ninputs = 0, nother = 0, nuser = 0, nsaved = 0, ngrads = 0;
  const char *first_op = NULL;
  for (uint32_t i = 0; i < g->nnodes; i++) {
    trnc_node *n = &g->nodes[i];
    if (n->dead) continue;
    bool touched = false;
    for (uint32_t k = 0; k < n->nouts; k++) {
      trnc_value *v = &g->values[n->outs[k]];
      if (v->is_none || v->type.dtype != TRNC_F64) continue;
      v->torch_dtype = TRNC_F64;
      v->type.dtype = TRNC_F32;
      touched = true;
    }
    for (uint32_t a = 0; a < n->nargs; a++) retype_arg(&n->args[a]);
    if (!touched) continue;
    if (n->op == TRNC_OP_PLACEHOLDER) {
      ninputs++;
      const char *role = n->role ? n->role : "";
      if (!strcmp(role, "tangent")) ngrads++;
      else if (!strcmp(role, "saved")) nsaved++;
      else nuser++; /* primal, input: parameters, buffers and the user's tensors */
    } else {
      nother++;
      if (!first_op) first_op = n->target;
    }
    if (n->op == TRNC_OP_CONSTANT && n->data) {
      size_t cnt = n->data_len / 8;
      uint8_t *nd = trnc_arena_array(&g->arena, cnt ? cnt : 1, 4);
      if (!nd) return trnc_diag_error(d, TRNC_ERR_NOMEM, "out of memory converting a constant");
      for (size_t e = 0; e < cnt; e++) {
        double v;
        memcpy(&v, n->data + e * 8, 8);
        float f = (float)v;
        memcpy(nd + e * 4, &f, 4);
      }
      n->data = nd;
      n->data_len = cnt * 4;
    }
  }
  if (ninputs || nother) {
    g->f64_legalized = true;
    if (ninputs) {
      char what[256];
      describe_inputs(what, sizeof what, nuser, nsaved, ngrads);
      trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_OK, NULL, NULL,
                    "float64 is executed as float32 on NeuronCore: %zu float64 graph input%s "
                    "(%s) will be computed in float32 (results carry float32 precision)",
                    ninputs, ninputs > 1 ? "s" : "", what);
    } else
      trnc_diag_add(d, TRNC_SEV_WARNING, TRNC_OK, NULL, NULL,
                    "float64 is executed as float32 on NeuronCore: %zu float64 values (first "
                    "from %s) will be computed in float32", nother, first_op ? first_op : "?");
  }
  return TRNC_OK;
}
