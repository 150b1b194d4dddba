/*
 * _trnc.c — CPython binding of libtrnc's public C API (include/trnc/trnc.h,
 * trnc/neuroncore.h).
 *
 * Module trnc._trnc. Uses only the public C API (no libtorch, no protobuf-c).
 * Calls that can take long (import, legalize, verify, compile, run) run
 * without the GIL; a Graph is marked busy meanwhile so that another thread
 * cannot use it. A Compiled is immutable after compile: concurrent run()s
 * of one Compiled are allowed (trnc_compiled_run is thread-safe).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "trnc/neuroncore.h"
#include "trnc/trnc.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static PyObject *str_from_c(const char *s) {
  if (s == NULL)
    s = "";
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* Takes ownership of a trnc-allocated string. */
static PyObject *str_from_owned(char *s) {
  if (s == NULL)
    return PyErr_NoMemory();
  PyObject *r = str_from_c(s);
  trnc_free(s);
  return r;
}

static const char *severity_name(trnc_severity s) {
  switch (s) {
  case TRNC_SEV_ERROR: return "error";
  case TRNC_SEV_WARNING: return "warning";
  case TRNC_SEV_NOTE: return "note";
  }
  return "error";
}

/* Sets d[key] = val and drops the reference to val (which may be NULL: the
 * error is passed on); -1 on error. */
static int dict_set_new(PyObject *d, const char *key, PyObject *val) {
  if (val == NULL)
    return -1;
  int rc = PyDict_SetItemString(d, key, val);
  Py_DECREF(val);
  return rc;
}

/* d[key] = str / int / float of a C value; -1 on error. */
static int dict_set_str(PyObject *d, const char *key, const char *val) {
  return dict_set_new(d, key, str_from_c(val));
}

static int dict_set_long(PyObject *d, const char *key, long long val) {
  return dict_set_new(d, key, PyLong_FromLongLong(val));
}

static int dict_set_double(PyObject *d, const char *key, double val) {
  return dict_set_new(d, key, PyFloat_FromDouble(val));
}

static int dict_set_size(PyObject *d, const char *key, size_t val) {
  return dict_set_new(d, key, PyLong_FromSize_t(val));
}

static PyObject *diag_to_dict(const trnc_diag *dg) {
  PyObject *d = PyDict_New();
  if (d == NULL)
    return NULL;
  if (dict_set_str(d, "severity", severity_name(dg->severity)) < 0 ||
      dict_set_str(d, "code", trnc_status_name(dg->status)) < 0 ||
      dict_set_str(d, "node", dg->node) < 0 ||
      dict_set_str(d, "target", dg->target) < 0 ||
      dict_set_str(d, "file", dg->file) < 0 ||
      dict_set_long(d, "line", dg->line) < 0 ||
      dict_set_str(d, "source", dg->source) < 0 ||
      dict_set_str(d, "detail", dg->detail) < 0 ||
      dict_set_str(d, "message", dg->message) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *diags_to_list(const trnc_diags *diags) {
  size_t n = diags ? trnc_diags_count(diags) : 0;
  PyObject *list = PyList_New(0);
  if (list == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    const trnc_diag *dg = trnc_diags_get(diags, i);
    if (dg == NULL)
      continue;
    PyObject *d = diag_to_dict(dg);
    if (d == NULL || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(d);
  }
  return list;
}

/* (status_name, [diag...]); consumes diags. */
static PyObject *status_result(trnc_status st, trnc_diags *diags) {
  PyObject *list = diags_to_list(diags);
  trnc_diags_destroy(diags);
  if (list == NULL)
    return NULL;
  PyObject *r = Py_BuildValue("(sN)", trnc_status_name(st), list);
  return r;
}

/* ------------------------------------------------------------------------ */
/* Graph                                                                     */

typedef struct {
  PyObject_HEAD
  trnc_graph *graph;
  int busy; /* set (with the GIL held) while a call runs without the GIL */
} GraphObject;

static PyTypeObject GraphType;

static void Graph_dealloc(PyObject *obj) {
  GraphObject *self = (GraphObject *)obj;
  if (self->graph != NULL)
    trnc_graph_destroy(self->graph);
  self->graph = NULL;
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int graph_enter(GraphObject *self) {
  if (self->graph == NULL) {
    PyErr_SetString(PyExc_ValueError, "trnc._trnc.Graph has no graph");
    return -1;
  }
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "trnc._trnc.Graph is in use by another thread");
    return -1;
  }
  self->busy = 1;
  return 0;
}

/* One C call on the graph; ctx is what it needs besides (NULL if nothing). */
typedef trnc_status (*graph_pass_fn)(trnc_graph *, const void *ctx, trnc_diags *);

static trnc_status call_check_lowerable(trnc_graph *g, const void *ctx, trnc_diags *d) {
  (void)ctx;
  return trnc_graph_check_lowerable(g, d);
}
static trnc_status call_legalize(trnc_graph *g, const void *ctx, trnc_diags *d) {
  (void)ctx;
  return trnc_graph_legalize(g, d);
}
static trnc_status call_verify(trnc_graph *g, const void *ctx, trnc_diags *d) {
  (void)ctx;
  return trnc_graph_verify(g, d);
}
static trnc_status call_dump_program(trnc_graph *g, const void *ctx, trnc_diags *d) {
  return trnc_compiled_dump(g, ctx, d);
}

/* fn(graph, ctx) with the GIL released -> (status, diags). */
static PyObject *graph_run(GraphObject *self, graph_pass_fn fn, const void *ctx) {
  if (graph_enter(self) < 0)
    return NULL;
  trnc_diags *diags = trnc_diags_create();
  if (diags == NULL) {
    self->busy = 0;
    return PyErr_NoMemory();
  }
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = fn(self->graph, ctx, diags);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  return status_result(st, diags);
}

static PyObject *Graph_check_lowerable(PyObject *self, PyObject *Py_UNUSED(a)) {
  return graph_run((GraphObject *)self, call_check_lowerable, NULL);
}
static PyObject *Graph_legalize(PyObject *self, PyObject *Py_UNUSED(a)) {
  return graph_run((GraphObject *)self, call_legalize, NULL);
}
static PyObject *Graph_verify(PyObject *self, PyObject *Py_UNUSED(a)) {
  return graph_run((GraphObject *)self, call_verify, NULL);
}

static PyObject *Graph_text(PyObject *obj, PyObject *Py_UNUSED(a)) {
  GraphObject *self = (GraphObject *)obj;
  if (graph_enter(self) < 0)
    return NULL;
  char *s = trnc_graph_print(self->graph);
  self->busy = 0;
  return str_from_owned(s);
}

static PyObject *Graph_hash(PyObject *obj, PyObject *Py_UNUSED(a)) {
  GraphObject *self = (GraphObject *)obj;
  if (graph_enter(self) < 0)
    return NULL;
  uint8_t h[16] = {0};
  trnc_graph_hash(self->graph, h);
  self->busy = 0;
  return PyBytes_FromStringAndSize((const char *)h, 16);
}

static const char *kind_name(trnc_graph_kind k) {
  switch (k) {
  case TRNC_GRAPH_FORWARD: return "forward";
  case TRNC_GRAPH_BACKWARD: return "backward";
  case TRNC_GRAPH_INFERENCE: return "inference";
  }
  return "unknown";
}

static PyObject *Graph_summary(PyObject *obj, PyObject *Py_UNUSED(a)) {
  GraphObject *self = (GraphObject *)obj;
  if (graph_enter(self) < 0)
    return NULL;
  trnc_graph_summary s;
  memset(&s, 0, sizeof s);
  trnc_graph_get_summary(self->graph, &s);
  self->busy = 0;
  PyObject *d = PyDict_New();
  if (d == NULL)
    return NULL;
  if (dict_set_str(d, "kind", kind_name(s.kind)) < 0 ||
      dict_set_size(d, "nodes", s.nodes) < 0 ||
      dict_set_size(d, "inputs", s.inputs) < 0 ||
      dict_set_size(d, "outputs", s.outputs) < 0 ||
      dict_set_size(d, "constants", s.constants) < 0 ||
      dict_set_size(d, "values", s.values) < 0 ||
      dict_set_size(d, "distinct_ops", s.distinct_ops) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}


/* ------------------------------------------------------------------------ */
/* Compiled                                                                  */

typedef struct {
  PyObject_HEAD
  trnc_compiled *compiled;
  PyObject *owner; /* a trnc._trnc.Cache that owns `compiled`, or NULL (owned here) */
  PyObject *weakrefs; /* weakref.ref support (trnc.last_report reads a live artifact) */
} CompiledObject;

static PyTypeObject CompiledType;

/* Frees the artifact. */
static void Compiled_dealloc(PyObject *obj) {
  CompiledObject *self = (CompiledObject *)obj;
  if (self->weakrefs != NULL)
    PyObject_ClearWeakRefs(obj);
  if (self->compiled != NULL && self->owner == NULL)
    trnc_compiled_destroy(self->compiled);
  self->compiled = NULL;
  Py_CLEAR(self->owner);
  Py_TYPE(self)->tp_free(obj);
}

/* The artifact, or NULL with ValueError set. */
static trnc_compiled *compiled_get(PyObject *obj) {
  CompiledObject *self = (CompiledObject *)obj;
  if (self->compiled == NULL)
    PyErr_SetString(PyExc_ValueError, "trnc._trnc.Compiled has no program");
  return self->compiled;
}

/* A list of n int64 values as a Python list. */
static PyObject *int64_list(const int64_t *v, int n) {
  PyObject *list = PyList_New(n > 0 ? n : 0);
  if (list == NULL)
    return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (x == NULL) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, x);
  }
  return list;
}

/* {"dtype", "shape", "stride", "extent_bytes", "is_none", "rng_seed", "complex"} of one
 * boundary tensor (complex: a complex64 tensor described as its view_as_real); dtype is the short name ("f32", "i64", ...; "none" for None). */
static PyObject *io_to_dict(const trnc_io *io) {
  PyObject *d = PyDict_New();
  if (d == NULL)
    return NULL;
  int rank = io->is_none ? 0 : io->rank;
  if (dict_set_str(d, "dtype", io->is_none ? "none" : trnc_dtype_name(io->dtype)) < 0 ||
      dict_set_new(d, "shape", int64_list(io->shape, rank)) < 0 ||
      dict_set_new(d, "stride", int64_list(io->stride, rank)) < 0 ||
      dict_set_size(d, "extent_bytes", io->extent_bytes) < 0 ||
      dict_set_new(d, "is_none", PyBool_FromLong(io->is_none)) < 0 ||
      dict_set_new(d, "rng_seed", PyBool_FromLong(io->rng_seed)) < 0 ||
      dict_set_new(d, "complex", PyBool_FromLong(io->complex)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

typedef const trnc_io *(*io_getter)(const trnc_compiled *, size_t);

/* Descriptors of every input (or output) as a list of dicts. */
static PyObject *io_list(PyObject *obj, size_t n, io_getter get) {
  trnc_compiled *c = compiled_get(obj);
  if (c == NULL)
    return NULL;
  PyObject *list = PyList_New(0);
  if (list == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    const trnc_io *io = get(c, i);
    PyObject *d = io ? io_to_dict(io) : NULL;
    if (d == NULL || PyList_Append(list, d) < 0) {
      if (io == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "trnc: missing boundary descriptor");
      Py_XDECREF(d);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(d);
  }
  return list;
}

static PyObject *Compiled_inputs(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_compiled *c = compiled_get(obj);
  return c ? io_list(obj, trnc_compiled_input_count(c), trnc_compiled_input) : NULL;
}

static PyObject *Compiled_outputs(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_compiled *c = compiled_get(obj);
  return c ? io_list(obj, trnc_compiled_output_count(c), trnc_compiled_output) : NULL;
}

/* Reads a list (or tuple) of exactly n addresses (ints; 0 = NULL) into
 * `storage` (n entries) or, when it is NULL, a new PyMem array (free with
 * PyMem_Free). NULL with an exception set on a bad list. */
static void **pointer_array(PyObject *seq, size_t n, const char *what, void **storage) {
  if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
    PyErr_Format(PyExc_TypeError, "run(): %s must be a list of ints (addresses)", what);
    return NULL;
  }
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  if ((size_t)len != n) {
    PyErr_Format(PyExc_ValueError, "run(): %s holds %zd address(es); the program has %zu %s",
                 what, len, n, what[0] == 'i' ? "inputs" : "outputs");
    return NULL;
  }
  void **arr = storage ? storage : PyMem_Calloc(n ? n : 1, sizeof *arr);
  if (arr == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (size_t i = 0; i < n; i++) {
    if (!PyLong_Check(items[i])) {
      PyErr_Format(PyExc_TypeError, "run(): %s[%zu] is %s, not an int address", what, i,
                   Py_TYPE(items[i])->tp_name);
      if (arr != storage) PyMem_Free(arr);
      return NULL;
    }
    arr[i] = PyLong_AsVoidPtr(items[i]);
    if (arr[i] == NULL && PyErr_Occurred()) {
      if (arr != storage) PyMem_Free(arr);
      return NULL;
    }
  }
  return arr;
}

/* ---- the distributed engine: collective steps call trnc.collectives ------- */

/* Turns the pending Python exception into an error diagnostic (and clears
 * it): the run reports it as its status. */
static trnc_status py_cc_error(trnc_diags *d, const char *what) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *msg = value ? PyObject_Str(value) : NULL;
  const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
  if (m == NULL) PyErr_Clear();
  char buf[1024];
  snprintf(buf, sizeof buf, "torch.distributed %s failed: %s: %s", what,
           type ? ((PyTypeObject *)type)->tp_name : "error", m ? m : "(no message)");
  Py_XDECREF(msg);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return trnc_diags_add_error(d, TRNC_ERR_INVALID_ARGUMENT, buf);
}

static PyObject *splits_list(const int64_t *v, int n) {
  if (n <= 0) return Py_NewRef(Py_None);
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (x == NULL) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, i, x);
  }
  return l;
}

/* start: trnc.collectives.start(op, reduce, group, group_size, root, dtype,
 * src_ptr, src_bytes, dst_ptr, dst_bytes, in_split, out_split) -> handle */
static trnc_status py_cc_start(void *ctx, const trnc_collective_call *c, void **handle,
                               trnc_diags *d) {
  (void)ctx;
  PyGILState_STATE gs = PyGILState_Ensure();
  trnc_status st = TRNC_OK;
  PyObject *mod = PyImport_ImportModule("trnc.collectives");
  PyObject *ins = splits_list(c->in_split, c->nsplits), *outs = splits_list(c->out_split, c->nsplits);
  PyObject *h = NULL;
  if (mod && ins && outs)
    h = PyObject_CallMethod(mod, "start", "sssiisKLKLOO", trnc_nc_cc_op_name(c->op),
                            trnc_nc_cc_reduce_name(c->reduce), c->group, c->group_size, c->root,
                            trnc_nc_dtype_name(c->dtype), (unsigned long long)(uintptr_t)c->src,
                            (long long)c->src_bytes, (unsigned long long)(uintptr_t)c->dst,
                            (long long)c->dst_bytes, ins, outs);
  if (h == NULL) st = py_cc_error(d, trnc_nc_cc_op_name(c->op));
  *handle = h; /* the wait releases it */
  Py_XDECREF(mod);
  Py_XDECREF(ins);
  Py_XDECREF(outs);
  PyGILState_Release(gs);
  return st;
}

/* wait: handle.wait(), then the handle is released. */
static trnc_status py_cc_wait(void *ctx, void *handle, trnc_diags *d) {
  (void)ctx;
  PyGILState_STATE gs = PyGILState_Ensure();
  trnc_status st = TRNC_OK;
  PyObject *h = handle, *r = h ? PyObject_CallMethod(h, "wait", NULL) : NULL;
  if (h && r == NULL) st = py_cc_error(d, "wait");
  Py_XDECREF(r);
  Py_XDECREF(h);
  PyGILState_Release(gs);
  return st;
}

static const trnc_collective_engine k_py_engine = {py_cc_start, py_cc_wait, NULL};

/* Pointer arrays of up to this many entries live on the stack of a run. */
#define RUN_STACK_PTRS 16

/* Runs c with the addresses in ins and outs (lists of ints, checked). Returns
 * the status and fills *diags_out (owned by the caller); -1 with a Python
 * exception set for bad arguments or no memory. */
static int run_addresses(trnc_compiled *c, PyObject *ins, PyObject *outs, trnc_status *st_out,
                         trnc_diags **diags_out) {
  size_t nin = trnc_compiled_input_count(c), nout = trnc_compiled_output_count(c);
  void *in_stack[RUN_STACK_PTRS], *out_stack[RUN_STACK_PTRS];
  void **in = pointer_array(ins, nin, "in_ptrs", nin <= RUN_STACK_PTRS ? in_stack : NULL);
  if (in == NULL)
    return -1;
  void **out = pointer_array(outs, nout, "out_ptrs", nout <= RUN_STACK_PTRS ? out_stack : NULL);
  int rc = -1;
  trnc_diags *diags = out ? trnc_diags_create() : NULL;
  if (out && diags == NULL)
    PyErr_NoMemory();
  if (diags) {
    trnc_status st;
    /* the caller keeps the tensors (and this object) alive during the call */
    Py_BEGIN_ALLOW_THREADS
    st = trnc_compiled_run_with(c, (const void *const *)in, out, &k_py_engine, diags);
    Py_END_ALLOW_THREADS
    *st_out = st;
    *diags_out = diags;
    rc = 0;
  }
  if (in != in_stack) PyMem_Free(in);
  if (out && out != out_stack) PyMem_Free(out);
  return rc;
}

/* run(in_ptrs, out_ptrs) -> (status, diags) */
static PyObject *Compiled_run(PyObject *obj, PyObject *args) {
  PyObject *ins, *outs;
  if (!PyArg_ParseTuple(args, "OO:run", &ins, &outs))
    return NULL;
  trnc_compiled *c = compiled_get(obj);
  trnc_status st;
  trnc_diags *diags;
  if (c == NULL || run_addresses(c, ins, outs, &st, &diags) < 0)
    return NULL;
  return status_result(st, diags);
}

/* execute(in_ptrs, out_ptrs) -> None, or (status, diags) when the run failed
 * (the per-call path: nothing is built for a run that succeeded) */
static PyObject *Compiled_execute(PyObject *obj, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "execute() takes 2 arguments (in_ptrs, out_ptrs), got %zd",
                 nargs);
    return NULL;
  }
  trnc_compiled *c = compiled_get(obj);
  trnc_status st;
  trnc_diags *diags;
  if (c == NULL || run_addresses(c, args[0], args[1], &st, &diags) < 0)
    return NULL;
  if (st == TRNC_OK) { /* as run(): a run's notes are not kept */
    trnc_diags_destroy(diags);
    Py_RETURN_NONE;
  }
  return status_result(st, diags);
}

/* report() -> dict of every trnc_compile_report field. */
static PyObject *Compiled_jit_seconds(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_compiled *c = compiled_get(obj);
  if (c == NULL)
    return NULL;
  return PyFloat_FromDouble(trnc_compiled_jit_seconds(c));
}

static PyObject *Compiled_report(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_compiled *c = compiled_get(obj);
  if (c == NULL)
    return NULL;
  const trnc_compile_report *r = trnc_compiled_report(c);
  static const char *const engines[5] = {"tensor", "vector", "scalar", "gpsimd", "dma"};
  PyObject *d = PyDict_New(), *ei = PyDict_New(), *oe = PyDict_New();
  if (d == NULL || ei == NULL || oe == NULL)
    goto fail;
  for (int e = 0; e < 5; e++)
    if (dict_set_size(ei, engines[e], r->engine_instructions[e]) < 0 ||
        (e < 4 && dict_set_size(oe, engines[e], r->ops_per_engine[e]) < 0))
      goto fail;
  if (dict_set_size(d, "ir_nodes", r->ir_nodes) < 0 ||
      dict_set_size(d, "kernels", r->kernels) < 0 ||
      dict_set_size(d, "instructions", r->instructions) < 0 ||
      PyDict_SetItemString(d, "engine_instructions", ei) < 0 ||
      PyDict_SetItemString(d, "ops_per_engine", oe) < 0 ||
      dict_set_long(d, "hbm_planned_bytes", r->hbm_planned_bytes) < 0 ||
      dict_set_long(d, "hbm_unplanned_bytes", r->hbm_unplanned_bytes) < 0 ||
      dict_set_long(d, "sbuf_peak_bytes", r->sbuf_peak_bytes) < 0 ||
      dict_set_long(d, "psum_peak_bytes", r->psum_peak_bytes) < 0 ||
      dict_set_double(d, "est_time_s", r->est_time_s) < 0 ||
      dict_set_double(d, "tensor_flop_util", r->tensor_flop_util) < 0 ||
      dict_set_double(d, "dma_bw_util", r->dma_bw_util) < 0 ||
      dict_set_double(d, "compile_s", r->compile_s) < 0 ||
      dict_set_size(d, "collectives", r->collectives) < 0 ||
      dict_set_double(d, "est_collective_s", r->est_collective_s) < 0 ||
      dict_set_str(d, "target", r->target) < 0)
    goto fail;
  Py_DECREF(ei);
  Py_DECREF(oe);
  return d;
fail:
  Py_XDECREF(d);
  Py_XDECREF(ei);
  Py_XDECREF(oe);
  return NULL;
}

/* asm() -> str: the program's assembly text. */
static PyObject *Compiled_asm(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_compiled *c = compiled_get(obj);
  if (c == NULL)
    return NULL;
  const trnc_nc_program *p = trnc_compiled_program(c);
  if (p == NULL) {
    PyErr_SetString(PyExc_ValueError, "trnc._trnc.Compiled has no program");
    return NULL;
  }
  return str_from_owned(trnc_nc_program_print(p));
}

static PyMethodDef Compiled_methods[] = {
    {"inputs", Compiled_inputs, METH_NOARGS,
     "inputs() -> list[dict]: graph inputs (dtype, shape, stride, extent_bytes, is_none, rng_seed, complex)."},
    {"outputs", Compiled_outputs, METH_NOARGS,
     "outputs() -> list[dict]: graph outputs, None slots with is_none=True."},
    {"execute", (PyCFunction)(void (*)(void))Compiled_execute, METH_FASTCALL,
     "execute(in_ptrs: list[int], out_ptrs: list[int]) -> None | (status, diags)\n"
     "run() for the per-call path: None when the run succeeded."},
    {"run", Compiled_run, METH_VARARGS,
     "run(in_ptrs: list[int], out_ptrs: list[int]) -> (status, diags)\n"
     "Runs the program on the NeuronCore simulator. Addresses point at element 0 of\n"
     "each tensor laid out as inputs()/outputs() say; 0 for None outputs and for\n"
     "zero-element tensors. The GIL is released while the program runs."},
    {"report", Compiled_report, METH_NOARGS,
     "report() -> dict: every trnc_compile_report field."},
    {"jit_seconds", Compiled_jit_seconds, METH_NOARGS,
     "jit_seconds() -> float: seconds the simulator's JIT spent compiling this\n"
     "program's host code (trnc_compiled_jit_seconds); 0.0 while it has none."},
    {"asm", Compiled_asm, METH_NOARGS,
     "asm() -> str: the NeuronCore program as assembly text."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CompiledType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trnc._trnc.Compiled",
    .tp_basicsize = sizeof(CompiledObject),
    .tp_itemsize = 0,
    .tp_dealloc = Compiled_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_weaklistoffset = offsetof(CompiledObject, weakrefs),
    .tp_doc = "A compiled NeuronCore program (create with Graph.compile()).",
    .tp_methods = Compiled_methods,
    .tp_new = NULL, /* not constructible from Python */
};

/* Graph.compile(target=None, autocast_bf16=False, no_fusion=False)
 *   -> (Compiled | None, status, diags) */
static PyObject *Graph_compile(PyObject *obj, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"target", "autocast_bf16", "no_fusion", NULL};
  GraphObject *self = (GraphObject *)obj;
  const char *target = NULL;
  int autocast = 0, no_fusion = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zpp:compile", kwlist, &target, &autocast,
                                   &no_fusion))
    return NULL;
  /* target points into a str argument, alive for the whole call */
  trnc_compile_options opt;
  memset(&opt, 0, sizeof opt);
  opt.target = target;
  opt.autocast_bf16 = autocast != 0;
  opt.no_fusion = no_fusion != 0;
  if (graph_enter(self) < 0)
    return NULL;
  trnc_diags *diags = trnc_diags_create();
  if (diags == NULL) {
    self->busy = 0;
    return PyErr_NoMemory();
  }
  /* the pipeline's last stage, on the graph lower() brought this far */
  trnc_pipeline p = {.options = &opt, .next = TRNC_STAGE_COMPILE, .graph = self->graph};
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_pipeline_run(&p, TRNC_STAGE_COMPILE, diags);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  trnc_compiled *c = p.compiled;
  PyObject *list = diags_to_list(diags);
  trnc_diags_destroy(diags);
  if (list == NULL) {
    trnc_compiled_destroy(c);
    return NULL;
  }
  PyObject *cobj;
  if (st == TRNC_OK && c != NULL) {
    CompiledObject *co = PyObject_New(CompiledObject, &CompiledType);
    if (co == NULL) {
      trnc_compiled_destroy(c);
      Py_DECREF(list);
      return NULL;
    }
    co->compiled = c;
    co->owner = NULL;
    co->weakrefs = NULL;
    cobj = (PyObject *)co;
  } else {
    trnc_compiled_destroy(c);
    cobj = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(NsN)", cobj, trnc_status_name(st), list);
}

/* dump_program(compiled) -> (status, diags): TRNC_DUMP_DIR / TRNC_PROFILE
 * files of a program loaded from the cache (trnc_compiled_dump). */
static PyObject *Graph_dump_program(PyObject *obj, PyObject *arg) {
  GraphObject *self = (GraphObject *)obj;
  if (!PyObject_TypeCheck(arg, &CompiledType)) {
    PyErr_Format(PyExc_TypeError, "dump_program(): expected a trnc._trnc.Compiled, got %s",
                 Py_TYPE(arg)->tp_name);
    return NULL;
  }
  trnc_compiled *c = compiled_get(arg);
  if (c == NULL)
    return NULL;
  return graph_run(self, call_dump_program, c);
}

static PyMethodDef Graph_methods[] = {
    {"check_lowerable", Graph_check_lowerable, METH_NOARGS,
     "check_lowerable() -> (status, diags): every node trnc cannot lower."},
    {"legalize", Graph_legalize, METH_NOARGS,
     "legalize() -> (status, diags): float64 -> float32, int64 policy."},
    {"verify", Graph_verify, METH_NOARGS,
     "verify() -> (status, diags): structural and shape/type verification."},
    {"text", Graph_text, METH_NOARGS,
     "text() -> str: deterministic text form of the IR."},
    {"hash", Graph_hash, METH_NOARGS,
     "hash() -> bytes: canonical 128-bit hash (16 bytes, big-endian)."},
    {"summary", Graph_summary, METH_NOARGS,
     "summary() -> dict: kind, nodes, inputs, outputs, constants, values, "
     "distinct_ops."},
    {"compile", (PyCFunction)(void (*)(void))Graph_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(target=None, autocast_bf16=False, no_fusion=False)\n"
     "    -> (Compiled | None, status: str, diags: list[dict])\n"
     "Lowers the (legalized, verified) graph to a NeuronCore program."},
    {"dump_program", Graph_dump_program, METH_O,
     "dump_program(compiled) -> (status, diags): writes the TRNC_DUMP_DIR program\n"
     "file and the TRNC_PROFILE trace of this graph's program (a cache hit)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trnc._trnc.Graph",
    .tp_basicsize = sizeof(GraphObject),
    .tp_itemsize = 0,
    .tp_dealloc = Graph_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An imported trnc IR graph (create with trnc._trnc.import_graph).",
    .tp_methods = Graph_methods,
    .tp_new = NULL, /* not constructible from Python */
};

/* ------------------------------------------------------------------------ */
/* module functions                                                          */

static PyObject *mod_version(PyObject *m, PyObject *Py_UNUSED(a)) {
  return str_from_c(trnc_version());
}

static PyObject *mod_llvm_version(PyObject *m, PyObject *Py_UNUSED(a)) {
  return str_from_c(trnc_llvm_version());
}

static PyObject *mod_jit_totals(PyObject *m, PyObject *Py_UNUSED(a)) {
  size_t n = 0;
  double s = 0.0;
  trnc_jit_totals(&n, &s);
  return Py_BuildValue("(nd)", (Py_ssize_t)n, s);
}

/* (Graph | None, status[, stage], diags) for a graph a call produced (a
 * Graph only when st is OK; g is destroyed otherwise); consumes g and diags.
 * stage NULL: no stage in the tuple. */
static PyObject *graph_result(trnc_graph *g, trnc_status st, const char *stage,
                              trnc_diags *diags) {
  PyObject *list = diags_to_list(diags);
  trnc_diags_destroy(diags);
  if (list == NULL) {
    trnc_graph_destroy(g);
    return NULL;
  }
  PyObject *gobj;
  if (st == TRNC_OK && g != NULL) {
    GraphObject *go = PyObject_New(GraphObject, &GraphType);
    if (go == NULL) {
      trnc_graph_destroy(g);
      Py_DECREF(list);
      return NULL;
    }
    go->graph = g;
    go->busy = 0;
    gobj = (PyObject *)go;
  } else {
    trnc_graph_destroy(g);
    gobj = Py_NewRef(Py_None);
  }
  if (stage == NULL)
    return Py_BuildValue("(NsN)", gobj, trnc_status_name(st), list);
  return Py_BuildValue("(NssN)", gobj, trnc_status_name(st), stage, list);
}

/* Runs the pipeline (trnc_pipeline_run) on the bytes of buffer `arg` from
 * import through stage `last`; the result as graph_result (the stage only
 * when with_stage). */
static PyObject *run_pipeline(PyObject *arg, trnc_stage last, int with_stage) {
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
    return NULL;
  trnc_diags *diags = trnc_diags_create();
  if (diags == NULL) {
    PyBuffer_Release(&view);
    return PyErr_NoMemory();
  }
  trnc_pipeline p = {.bytes = view.buf, .len = (size_t)view.len};
  trnc_status st;
  /* the buffer stays exported (and the object alive) while the GIL is off */
  Py_BEGIN_ALLOW_THREADS
  st = trnc_pipeline_run(&p, last, diags);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  return graph_result(p.graph, st, with_stage ? trnc_stage_name(p.next) : NULL, diags);
}

/* import_graph(data) -> (Graph | None, status, diags): the import stage. */
static PyObject *mod_import_graph(PyObject *m, PyObject *arg) {
  return run_pipeline(arg, TRNC_STAGE_IMPORT, 0);
}

/* lower(data) -> (Graph | None, status, stage, diags): the pipeline from
 * import through the IR verifier. stage names the failing stage ("import",
 * "legality", "legalize", "verify"), or "compile" (the next one) on
 * success. */
static PyObject *mod_lower(PyObject *m, PyObject *arg) {
  return run_pipeline(arg, TRNC_STAGE_VERIFY, 1);
}

static PyObject *mod_ops(PyObject *m, PyObject *Py_UNUSED(a)) {
  size_t n = trnc_op_count();
  PyObject *list = PyList_New(0);
  if (list == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    trnc_op_info info;
    memset(&info, 0, sizeof info);
    if (!trnc_op_get_info(i, &info))
      continue;
    PyObject *d = PyDict_New();
    if (d == NULL || dict_set_str(d, "name", info.name) < 0 ||
        dict_set_str(d, "fx_target", info.fx_target) < 0 ||
        dict_set_str(d, "category", info.category) < 0 ||
        dict_set_str(d, "dtypes", info.dtypes) < 0 ||
        dict_set_long(d, "max_rank", info.max_rank) < 0 ||
        dict_set_str(d, "limits", info.limits) < 0 ||
        dict_set_str(d, "decomposition", info.decomp) < 0 ||
        PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(d);
  }
  return list;
}

static PyObject *mod_ops_markdown(PyObject *m, PyObject *Py_UNUSED(a)) {
  return str_from_owned(trnc_ops_markdown());
}

static PyObject *mod_status_names(PyObject *m, PyObject *Py_UNUSED(a)) {
  PyObject *list = PyList_New(0);
  if (list == NULL)
    return NULL;
  for (int i = 0; i < (int)TRNC_STATUS_COUNT; i++) {
    PyObject *s = str_from_c(trnc_status_name((trnc_status)i));
    if (s == NULL || PyList_Append(list, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(s);
  }
  return list;
}

#include "_trnc_cache.c" /* the artifact cache binding (trnc/cache.h) */

static PyMethodDef module_methods[] = {
    TRNC_CACHE_MODULE_METHODS
    {"version", mod_version, METH_NOARGS, "version() -> str: libtrnc version."},
    {"llvm_version", mod_llvm_version, METH_NOARGS,
     "llvm_version() -> str: LLVM version linked into libtrnc."},
    {"jit_totals", mod_jit_totals, METH_NOARGS,
     "jit_totals() -> (programs, seconds): host code the simulator's JIT compiled\n"
     "in this process and the seconds it took (trnc_jit_totals)."},
    {"lower", mod_lower, METH_O,
     "lower(data: bytes) -> (Graph | None, status: str, stage: str, diags: list[dict])\n"
     "Runs the pipeline from import through the IR verifier (trnc_pipeline_run);\n"
     "stage names the stage that failed, or 'compile' (the next) on success."},
    {"import_graph", mod_import_graph, METH_O,
     "import_graph(data: bytes) -> (Graph | None, status: str, diags: list[dict])\n"
     "Reads a serialized trnc.fx.Graph (frontend/fx.proto) into trnc IR."},
    {"ops", mod_ops, METH_NOARGS,
     "ops() -> list[dict]: the operator table (name, fx_target, category, "
     "dtypes, max_rank, limits)."},
    {"ops_markdown", mod_ops_markdown, METH_NOARGS,
     "ops_markdown() -> str: docs/operators.md generated from the table."},
    {"status_names", mod_status_names, METH_NOARGS,
     "status_names() -> list[str]: every trnc_status name, by value."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef trnc_module = {
    PyModuleDef_HEAD_INIT, "trnc._trnc",
    "CPython binding of libtrnc (include/trnc/trnc.h).", -1, module_methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__trnc(void) {
  if (PyType_Ready(&GraphType) < 0 || PyType_Ready(&CompiledType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&trnc_module);
  if (m == NULL)
    return NULL;
  Py_INCREF(&GraphType);
  if (PyModule_AddObject(m, "Graph", (PyObject *)&GraphType) < 0) {
    Py_DECREF(&GraphType);
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(&CompiledType);
  if (PyModule_AddObject(m, "Compiled", (PyObject *)&CompiledType) < 0) {
    Py_DECREF(&CompiledType);
    Py_DECREF(m);
    return NULL;
  }
  if (PyModule_AddIntConstant(m, "MAX_RANK", TRNC_MAX_RANK) < 0 ||
      PyModule_AddIntConstant(m, "I64_INPUT_MIN", (long)TRNC_I64_INPUT_MIN) < 0 ||
      PyModule_AddIntConstant(m, "I64_INPUT_MAX", (long)TRNC_I64_INPUT_MAX) < 0 ||
      cache_module_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
