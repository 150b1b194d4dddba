/*
 * _trnc_cache.c — CPython binding of the artifact cache (trnc/cache.h).
 * Included by _trnc.c (one translation unit: it uses GraphObject,
 * CompiledObject and the helpers defined there); not compiled on its own.
 *
 *   cache_key(graph, target=None, autocast_bf16=False, no_fusion=False,
 *             alias_groups=None) -> (bytes | None, status, diags)
 *   open_cache(dir=None, max_bytes=0) -> (Cache | None, status, diags)
 *   build_id() -> str
 *   ARTIFACT_FORMAT_VERSION, CACHE_DEFAULT_MAX_BYTES, ENTRY_MAX_BYTES (largest entry)
 *
 * A Compiled returned by Cache.get() (or handed to Cache.put()) is owned by
 * the cache's in-process table; the Compiled object then keeps the Cache
 * alive (CompiledObject.owner). All disk work runs without the GIL.
 */
#include "trnc/cache.h"

typedef struct {
  PyObject_HEAD
  trnc_cache *cache;
} CacheObject;

static PyTypeObject CacheType;

static void Cache_dealloc(PyObject *obj) {
  CacheObject *self = (CacheObject *)obj;
  if (self->cache != NULL)
    trnc_cache_destroy(self->cache);
  self->cache = NULL;
  Py_TYPE(self)->tp_free(obj);
}

/* Reads a 16-byte key from a bytes-like object; -1 with an exception. */
static int key_from(PyObject *o, uint8_t key[TRNC_CACHE_KEY_BYTES]) {
  Py_buffer v;
  if (PyObject_GetBuffer(o, &v, PyBUF_SIMPLE) < 0)
    return -1;
  if (v.len != TRNC_CACHE_KEY_BYTES) {
    PyBuffer_Release(&v);
    PyErr_SetString(PyExc_ValueError, "cache key must be 16 bytes");
    return -1;
  }
  memcpy(key, v.buf, TRNC_CACHE_KEY_BYTES);
  PyBuffer_Release(&v);
  return 0;
}

/* A key argument and a fresh diagnostics list; NULL with an exception. */
static trnc_diags *key_and_diags(PyObject *o, uint8_t key[TRNC_CACHE_KEY_BYTES]) {
  if (key_from(o, key) < 0)
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    PyErr_NoMemory();
  return d;
}

/* A Compiled object borrowing c from the cache object `owner`. */
static PyObject *borrowed_compiled(const trnc_compiled *c, PyObject *owner) {
  CompiledObject *co = PyObject_New(CompiledObject, &CompiledType);
  if (co == NULL)
    return NULL;
  co->compiled = (trnc_compiled *)c;
  co->owner = Py_NewRef(owner);
  co->weakrefs = NULL;
  return (PyObject *)co;
}

/* get(key) -> (Compiled | None, diags) */
static PyObject *Cache_get(PyObject *obj, PyObject *arg) {
  CacheObject *self = (CacheObject *)obj;
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  trnc_diags *d = key_and_diags(arg, key);
  if (d == NULL)
    return NULL;
  const trnc_compiled *c = NULL;
  Py_BEGIN_ALLOW_THREADS
  trnc_cache_get(self->cache, key, &c, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  PyObject *cobj = c ? borrowed_compiled(c, obj) : Py_NewRef(Py_None);
  if (cobj == NULL) {
    Py_DECREF(list);
    return NULL;
  }
  return Py_BuildValue("(NN)", cobj, list);
}

/* put(key, compiled) -> (status, diags). The artifact moves into the cache;
 * `compiled` stays usable (it then borrows from the cache). Call it before
 * other threads can use `compiled`. */
static PyObject *Cache_put(PyObject *obj, PyObject *args) {
  CacheObject *self = (CacheObject *)obj;
  PyObject *kobj;
  CompiledObject *co;
  if (!PyArg_ParseTuple(args, "OO!:put", &kobj, &CompiledType, &co))
    return NULL;
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  if (key_from(kobj, key) < 0)
    return NULL;
  if (co->compiled == NULL || co->owner != NULL) {
    PyErr_SetString(PyExc_ValueError,
                    "put(): the Compiled must be a fresh compile result (not one from a cache)");
    return NULL;
  }
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  trnc_compiled *art = co->compiled;
  const trnc_compiled *kept = NULL;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_put(self->cache, key, art, &kept, d);
  Py_END_ALLOW_THREADS
  /* the cache owns (or freed) art; point at what it kept */
  co->compiled = (trnc_compiled *)kept;
  co->owner = Py_NewRef(obj);
  return status_result(st, d);
}

/* stats(with_disk=False) -> dict */
static PyObject *Cache_stats(PyObject *obj, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"with_disk", NULL};
  int with_disk = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:stats", kwlist, &with_disk))
    return NULL;
  trnc_cache_stats s;
  Py_BEGIN_ALLOW_THREADS
  trnc_cache_get_stats(((CacheObject *)obj)->cache, with_disk != 0, &s);
  Py_END_ALLOW_THREADS
  PyObject *d = PyDict_New();
  if (d == NULL)
    return NULL;
#define S(f) dict_set_long(d, #f, (long long)s.f) < 0
  if (S(hits) || S(memory_hits) || S(misses) || S(stores) || S(evictions) || S(corrupt) ||
      S(write_errors) ||
      (with_disk && (S(total_hits) || S(total_misses) || S(total_stores) || S(total_evictions) ||
                     S(total_corrupt) || S(entries) || S(bytes) || S(temp_files)))) {
    Py_DECREF(d);
    return NULL;
  }
#undef S
  return d;
}

static PyObject *Cache_flush_stats(PyObject *obj, PyObject *Py_UNUSED(a)) {
  Py_BEGIN_ALLOW_THREADS
  trnc_cache_flush_stats(((CacheObject *)obj)->cache);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

/* store_host_code() -> (stored, status, diags): rewrites the entries whose
 * artifacts gained host code in this process (trnc_cache_store_host_code) */
static PyObject *Cache_store_host_code(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  size_t n = 0;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_store_host_code(((CacheObject *)obj)->cache, &n, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nsN)", (Py_ssize_t)n, trnc_status_name(st), list);
}

/* remove(key) -> (status, diags): the entry leaves the disk and lookups */
static PyObject *Cache_remove(PyObject *obj, PyObject *arg) {
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  trnc_diags *d = key_and_diags(arg, key);
  if (d == NULL)
    return NULL;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_remove(((CacheObject *)obj)->cache, key, d);
  Py_END_ALLOW_THREADS
  return status_result(st, d); /* destroys d */
}

/* list() -> (list[(hex, bytes, mtime_ns)], status, diags), least recently used first */
static PyObject *Cache_list(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  trnc_cache_entry *e = NULL;
  size_t n = 0;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_list(((CacheObject *)obj)->cache, &e, &n, d);
  Py_END_ALLOW_THREADS
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list && i < n; i++) {
    char hex[33];
    trnc_cache_key_hex(e[i].key, hex);
    PyObject *t = Py_BuildValue("(sKL)", hex, (unsigned long long)e[i].bytes,
                                (long long)e[i].mtime_ns);
    if (t == NULL || PyList_Append(list, t) < 0) {
      Py_XDECREF(t);
      Py_CLEAR(list);
      break;
    }
    Py_DECREF(t);
  }
  trnc_free(e);
  if (list == NULL) {
    trnc_diags_destroy(d);
    return NULL;
  }
  PyObject *r = status_result(st, d); /* (status, diags) */
  if (r == NULL) {
    Py_DECREF(list);
    return NULL;
  }
  PyObject *out = Py_BuildValue("(NOO)", list, PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1));
  Py_DECREF(r);
  return out;
}

/* verify(remove_bad=False) -> (good, bad, status, diags) */
static PyObject *Cache_verify(PyObject *obj, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"remove_bad", NULL};
  int remove_bad = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:verify", kwlist, &remove_bad))
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  size_t good = 0, bad = 0;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_verify(((CacheObject *)obj)->cache, remove_bad != 0, &good, &bad, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nnsN)", (Py_ssize_t)good, (Py_ssize_t)bad, trnc_status_name(st), list);
}

/* prune(max_bytes) -> (removed, freed_bytes, status, diags) */
static PyObject *Cache_prune(PyObject *obj, PyObject *args) {
  unsigned long long max;
  if (!PyArg_ParseTuple(args, "K:prune", &max))
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  size_t removed = 0;
  uint64_t freed = 0;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_prune(((CacheObject *)obj)->cache, (uint64_t)max, &removed, &freed, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nKsN)", (Py_ssize_t)removed, (unsigned long long)freed,
                       trnc_status_name(st), list);
}

/* clear() -> (removed, status, diags) */
static PyObject *Cache_clear(PyObject *obj, PyObject *Py_UNUSED(a)) {
  trnc_diags *d = trnc_diags_create();
  if (d == NULL)
    return PyErr_NoMemory();
  size_t removed = 0;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_clear(((CacheObject *)obj)->cache, &removed, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nsN)", (Py_ssize_t)removed, trnc_status_name(st), list);
}

/* export_bundle(path) -> (count, status, diags) */
static PyObject *Cache_export(PyObject *obj, PyObject *args) {
  PyObject *pathobj;
  if (!PyArg_ParseTuple(args, "O&:export_bundle", PyUnicode_FSConverter, &pathobj))
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL) {
    Py_DECREF(pathobj);
    return PyErr_NoMemory();
  }
  size_t count = 0;
  trnc_status st;
  const char *path = PyBytes_AS_STRING(pathobj);
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_export(((CacheObject *)obj)->cache, path, &count, d);
  Py_END_ALLOW_THREADS
  Py_DECREF(pathobj);
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nsN)", (Py_ssize_t)count, trnc_status_name(st), list);
}

/* import_bundle(path) -> (imported, rejected, status, diags) */
static PyObject *Cache_import(PyObject *obj, PyObject *args) {
  PyObject *pathobj;
  if (!PyArg_ParseTuple(args, "O&:import_bundle", PyUnicode_FSConverter, &pathobj))
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL) {
    Py_DECREF(pathobj);
    return PyErr_NoMemory();
  }
  size_t imported = 0, rejected = 0;
  trnc_status st;
  const char *path = PyBytes_AS_STRING(pathobj);
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_import(((CacheObject *)obj)->cache, path, &imported, &rejected, d);
  Py_END_ALLOW_THREADS
  Py_DECREF(pathobj);
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  return Py_BuildValue("(nnsN)", (Py_ssize_t)imported, (Py_ssize_t)rejected,
                       trnc_status_name(st), list);
}

static PyObject *Cache_dir(PyObject *obj, PyObject *Py_UNUSED(a)) {
  return PyUnicode_DecodeFSDefault(trnc_cache_dir(((CacheObject *)obj)->cache));
}

static PyObject *Cache_max_bytes(PyObject *obj, PyObject *Py_UNUSED(a)) {
  return PyLong_FromUnsignedLongLong(trnc_cache_max_bytes(((CacheObject *)obj)->cache));
}

/* entry_bytes(key) -> (bytes | None, diags): the stored entry, checksums checked. */
static PyObject *Cache_entry_bytes(PyObject *obj, PyObject *arg) {
  CacheObject *self = (CacheObject *)obj;
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  trnc_diags *d = key_and_diags(arg, key);
  if (d == NULL)
    return NULL;
  uint8_t *bytes = NULL;
  size_t len = 0;
  Py_BEGIN_ALLOW_THREADS
  trnc_cache_entry_bytes(self->cache, key, &bytes, &len, d);
  Py_END_ALLOW_THREADS
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  PyObject *b = bytes ? PyBytes_FromStringAndSize((const char *)bytes, (Py_ssize_t)len)
                      : Py_NewRef(Py_None);
  trnc_free(bytes);
  if (list == NULL || b == NULL) {
    Py_XDECREF(list);
    Py_XDECREF(b);
    return NULL;
  }
  return Py_BuildValue("(NN)", b, list);
}

/* put_entry(data, key=None, load=True) -> (Compiled | None, key | None, status, diags) */
static PyObject *Cache_put_entry(PyObject *obj, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"data", "key", "load", NULL};
  CacheObject *self = (CacheObject *)obj;
  Py_buffer data;
  PyObject *kobj = Py_None;
  int load = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|Op:put_entry", kwlist, &data, &kobj, &load))
    return NULL;
  uint8_t expect[TRNC_CACHE_KEY_BYTES], key[TRNC_CACHE_KEY_BYTES];
  if (kobj != Py_None && key_from(kobj, expect) < 0) {
    PyBuffer_Release(&data);
    return NULL;
  }
  trnc_diags *d = trnc_diags_create();
  if (d == NULL) {
    PyBuffer_Release(&data);
    return PyErr_NoMemory();
  }
  const trnc_compiled *c = NULL;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_put_entry(self->cache, data.buf, (size_t)data.len,
                            kobj != Py_None ? expect : NULL, key, load ? &c : NULL, d);
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&data);
  bool stored = st == TRNC_OK || st == TRNC_ERR_IO;  /* IO: checked, not written */
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  PyObject *cobj = c ? borrowed_compiled(c, obj) : Py_NewRef(Py_None);
  PyObject *kout = stored ? PyBytes_FromStringAndSize((const char *)key, TRNC_CACHE_KEY_BYTES)
                          : Py_NewRef(Py_None);
  if (cobj == NULL || kout == NULL) {
    Py_XDECREF(cobj);
    Py_XDECREF(kout);
    Py_DECREF(list);
    return NULL;
  }
  return Py_BuildValue("(NNsN)", cobj, kout, trnc_status_name(st), list);
}

static PyMethodDef Cache_methods[] = {
    {"get", Cache_get, METH_O,
     "get(key: bytes) -> (Compiled | None, diags)\n"
     "In-process table, then disk (fully verified). A corrupt entry is a miss, is removed\n"
     "and gives one warning diagnostic."},
    {"put", Cache_put, METH_VARARGS,
     "put(key: bytes, compiled: Compiled) -> (status, diags)\n"
     "Stores atomically; the artifact moves into the cache (compiled stays usable)."},
    {"stats", (PyCFunction)(void (*)(void))Cache_stats, METH_VARARGS | METH_KEYWORDS,
     "stats(with_disk=False) -> dict: this process's counters; with_disk adds entries,\n"
     "bytes, temp_files and total_* counters of every process."},
    {"store_host_code", Cache_store_host_code, METH_NOARGS,
     "store_host_code() -> (stored: int, status, diags): rewrites the entries whose\n"
     "programs gained JIT host code in this process, for the next process to load."},
    {"remove", Cache_remove, METH_O,
     "remove(key) -> (status, diags): removes the entry (an artifact that failed to run)."},
    {"flush_stats", Cache_flush_stats, METH_NOARGS,
     "flush_stats(): persist this process's counters now."},
    {"list", Cache_list, METH_NOARGS,
     "list() -> (list[(key_hex, bytes, mtime_ns)], status, diags), LRU first."},
    {"verify", (PyCFunction)(void (*)(void))Cache_verify, METH_VARARGS | METH_KEYWORDS,
     "verify(remove_bad=False) -> (good, bad, status, diags)"},
    {"prune", Cache_prune, METH_VARARGS,
     "prune(max_bytes) -> (removed, freed_bytes, status, diags): LRU eviction."},
    {"clear", Cache_clear, METH_NOARGS, "clear() -> (removed, status, diags)"},
    {"export_bundle", Cache_export, METH_VARARGS,
     "export_bundle(path) -> (count, status, diags)"},
    {"import_bundle", Cache_import, METH_VARARGS,
     "import_bundle(path) -> (imported, rejected, status, diags)"},
    {"entry_bytes", Cache_entry_bytes, METH_O,
     "entry_bytes(key) -> (bytes | None, diags): the stored entry (header + artifact,\n"
     "checksums checked) to ship to another store; None if there is none."},
    {"put_entry", (PyCFunction)(void (*)(void))Cache_put_entry, METH_VARARGS | METH_KEYWORDS,
     "put_entry(data, key=None, load=True) -> (Compiled | None, key | None, status, diags)\n"
     "Stores entry bytes from another store after the full check (and that its key is\n"
     "`key` when given); load=True also returns the loaded artifact. key is None when the\n"
     "entry was rejected."},
    {"dir", Cache_dir, METH_NOARGS, "dir() -> str: the cache directory."},
    {"max_bytes", Cache_max_bytes, METH_NOARGS, "max_bytes() -> int: the size bound."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trnc._trnc.Cache",
    .tp_basicsize = sizeof(CacheObject),
    .tp_itemsize = 0,
    .tp_dealloc = Cache_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open artifact cache directory (create with trnc._trnc.open_cache).",
    .tp_methods = Cache_methods,
    .tp_new = NULL,
};

/* open_cache(dir=None, max_bytes=0) -> (Cache | None, status, diags) */
static PyObject *mod_open_cache(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dir", "max_bytes", NULL};
  PyObject *dirobj = NULL;
  unsigned long long max = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&K:open_cache", kwlist, PyUnicode_FSConverter,
                                   &dirobj, &max))
    return NULL;
  trnc_diags *d = trnc_diags_create();
  if (d == NULL) {
    Py_XDECREF(dirobj);
    return PyErr_NoMemory();
  }
  trnc_cache_config cfg = {dirobj ? PyBytes_AS_STRING(dirobj) : NULL, (uint64_t)max};
  trnc_cache *c = NULL;
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_open(&cfg, &c, d);
  Py_END_ALLOW_THREADS
  Py_XDECREF(dirobj);
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL) {
    trnc_cache_destroy(c);
    return NULL;
  }
  PyObject *cobj;
  if (st == TRNC_OK && c != NULL) {
    CacheObject *co = PyObject_New(CacheObject, &CacheType);
    if (co == NULL) {
      trnc_cache_destroy(c);
      Py_DECREF(list);
      return NULL;
    }
    co->cache = c;
    cobj = (PyObject *)co;
  } else {
    trnc_cache_destroy(c);
    cobj = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(NsN)", cobj, trnc_status_name(st), list);
}

/* cache_key(graph, target=None, autocast_bf16=False, no_fusion=False,
 *           alias_groups=None) -> (bytes | None, status, diags) */
static PyObject *mod_cache_key(PyObject *m, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"graph", "target", "autocast_bf16", "no_fusion", "alias_groups", NULL};
  GraphObject *g;
  const char *target = NULL;
  int autocast = 0, no_fusion = 0;
  PyObject *alias = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|zppO:cache_key", kwlist, &GraphType, &g, &target,
                                   &autocast, &no_fusion, &alias))
    return NULL;
  int32_t *groups = NULL;
  Py_ssize_t ng = 0;
  if (alias != Py_None) {
    PyObject *seq = PySequence_Fast(alias, "alias_groups must be a sequence of ints");
    if (seq == NULL)
      return NULL;
    ng = PySequence_Fast_GET_SIZE(seq);
    groups = PyMem_Calloc(ng ? (size_t)ng : 1, sizeof *groups);
    if (groups == NULL) {
      Py_DECREF(seq);
      return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < ng; i++) {
      long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
      if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(seq);
        PyMem_Free(groups);
        return NULL;
      }
      groups[i] = (int32_t)v;
    }
    Py_DECREF(seq);
  }
  trnc_compile_options opt;
  memset(&opt, 0, sizeof opt);
  opt.target = target;
  opt.autocast_bf16 = autocast != 0;
  opt.no_fusion = no_fusion != 0;
  if (graph_enter(g) < 0) {
    PyMem_Free(groups);
    return NULL;
  }
  trnc_diags *d = trnc_diags_create();
  if (d == NULL) {
    g->busy = 0;
    PyMem_Free(groups);
    return PyErr_NoMemory();
  }
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  trnc_status st;
  Py_BEGIN_ALLOW_THREADS
  st = trnc_cache_key(g->graph, &opt, groups, (size_t)ng, key, d);
  Py_END_ALLOW_THREADS
  g->busy = 0;
  PyMem_Free(groups);
  PyObject *list = diags_to_list(d);
  trnc_diags_destroy(d);
  if (list == NULL)
    return NULL;
  PyObject *kobj = st == TRNC_OK ? PyBytes_FromStringAndSize((const char *)key, 16)
                                 : Py_NewRef(Py_None);
  if (kobj == NULL) {
    Py_DECREF(list);
    return NULL;
  }
  return Py_BuildValue("(NsN)", kobj, trnc_status_name(st), list);
}

static PyObject *mod_build_id(PyObject *m, PyObject *Py_UNUSED(a)) {
  return str_from_c(trnc_cache_build_id());
}

#define TRNC_CACHE_MODULE_METHODS                                                              \
  {"open_cache", (PyCFunction)(void (*)(void))mod_open_cache, METH_VARARGS | METH_KEYWORDS,    \
   "open_cache(dir=None, max_bytes=0) -> (Cache | None, status, diags)\n"                      \
   "Opens (creating 0700) the artifact cache; refuses unsafe directories with a warning."},     \
      {"cache_key", (PyCFunction)(void (*)(void))mod_cache_key, METH_VARARGS | METH_KEYWORDS,  \
       "cache_key(graph, target=None, autocast_bf16=False, no_fusion=False, alias_groups=None)\n" \
       "    -> (bytes | None, status, diags): the 16-byte XXH3-128 cache key."},               \
      {"build_id", mod_build_id, METH_NOARGS,                                                  \
       "build_id() -> str: hash of the compiler sources (part of every cache key)."},

/* Readies CacheType and adds the cache constants; -1 on error. */
static int cache_module_init(PyObject *m) {
  if (PyType_Ready(&CacheType) < 0)
    return -1;
  Py_INCREF(&CacheType);
  if (PyModule_AddObject(m, "Cache", (PyObject *)&CacheType) < 0) {
    Py_DECREF(&CacheType);
    return -1;
  }
  if (PyModule_AddIntConstant(m, "ARTIFACT_FORMAT_VERSION", TRNC_ARTIFACT_FORMAT_VERSION) < 0)
    return -1;
  PyObject *am = PyLong_FromUnsignedLongLong(TRNC_CACHE_ENTRY_MAX_BYTES);
  if (am == NULL || PyModule_AddObject(m, "ENTRY_MAX_BYTES", am) < 0) {
    Py_XDECREF(am);
    return -1;
  }
  PyObject *mx = PyLong_FromUnsignedLongLong(TRNC_CACHE_DEFAULT_MAX_BYTES);
  if (mx == NULL || PyModule_AddObject(m, "CACHE_DEFAULT_MAX_BYTES", mx) < 0) {
    Py_XDECREF(mx);
    return -1;
  }
  return 0;
}
