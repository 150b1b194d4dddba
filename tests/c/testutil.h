/*
 * testutil.h — helpers shared by the cmocka tests in tests/c/.
 *
 *  - files: read a whole file, list a directory's files by suffix, locate the
 *    source tree (env TRNC_SOURCE_DIR, set by ctest);
 *  - diagnostics: search a trnc_diags list for a message substring;
 *  - tu_fx: a builder for fx.proto Graph messages (protobuf-c structs), so
 *    tests can write graphs in C, pack them and import them. Every allocation
 *    a builder makes is owned by it and freed by tu_fx_free().
 */
#ifndef TRNC_TESTS_TESTUTIL_H
#define TRNC_TESTS_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/fx.pb-c.h"
#include "trnc/trnc.h"

/* ---- files ------------------------------------------------------------------- */

/** Whole file into a malloc'd buffer (NUL-terminated past *len, which may be
 *  NULL). NULL if it cannot be read. Free with free(). */
char *tu_read_file(const char *path, size_t *len);

/** Sorted full paths ("dir/name") of the regular files in dir whose names end
 *  in suffix. *n receives the count. Returns NULL (and *n = 0) if dir cannot
 *  be opened or is empty. Free with tu_free_list(). */
char **tu_list_files(const char *dir, const char *suffix, size_t *n);
void tu_free_list(char **list, size_t n);

/** The source tree root: $TRNC_SOURCE_DIR, else ".". */
const char *tu_source_dir(void);

/** malloc'd "a/b". */
char *tu_path_join(const char *a, const char *b);

/* ---- diagnostics --------------------------------------------------------------- */

/** True if some diagnostic's message contains substr. */
bool tu_diags_have(const trnc_diags *d, const char *substr);
/** True if some diagnostic with status st names node `node` (exact match). */
bool tu_diags_have_node(const trnc_diags *d, trnc_status st, const char *node);
/** Prints every diagnostic to stderr (for failing tests). */
void tu_diags_dump(const trnc_diags *d);

/* ---- scratch directories ---------------------------------------------------------- */

/** A new empty directory under /tmp named after prefix (malloc'd path), or
 *  NULL if it cannot be made. */
char *tu_tmpdir(const char *prefix);
/** Removes directory t and everything under it (whatever the modes), then
 *  frees t. */
void tu_rmtree(char *t);

/* ---- fx.proto builder ------------------------------------------------------------ */

typedef struct tu_fx tu_fx;

/** New Graph message: version TRNC_FX_SCHEMA_VERSION (1), the given kind, no
 *  nodes and no output (call tu_output_* to add it). Aborts the test on OOM. */
tu_fx *tu_fx_new(Trnc__Fx__GraphKind kind);
void tu_fx_free(tu_fx *b);
/** The message being built (tests may poke any field). */
Trnc__Fx__Graph *tu_fx_graph(tu_fx *b);
/** Copy of s owned by the builder. */
char *tu_str(tu_fx *b, const char *s);
/** Zeroed memory owned by the builder. */
void *tu_alloc(tu_fx *b, size_t n);

/** Tensor metadata with contiguous strides, offset 0, layout STRIDED, device
 *  "cpu". shape: rank entries (may be NULL when rank is 0). */
Trnc__Fx__TensorMeta *tu_meta(tu_fx *b, Trnc__Fx__DType dt, size_t rank, const int64_t *shape);
/** Metadata of a None slot of a tuple output (DTYPE_UNSPECIFIED, no shape). */
Trnc__Fx__TensorMeta *tu_meta_none(tu_fx *b);
/** A Dim with a value and an optional symbol (NULL: concrete). */
Trnc__Fx__Dim *tu_dim(tu_fx *b, int64_t value, const char *symbol);

/** Appends a PLACEHOLDER "name" with output meta m (role "input"). Returns
 *  its node index. */
uint32_t tu_placeholder(tu_fx *b, const char *name, Trnc__Fx__TensorMeta *m);
/** Appends a CALL_FUNCTION node; out may be NULL (no outputs yet). Args and
 *  further outputs are added with tu_arg / tu_add_output. Returns its index. */
uint32_t tu_call(tu_fx *b, const char *name, const char *target, Trnc__Fx__TensorMeta *out);
/** Appends a constant (Graph.constants) and a GET_ATTR node reading it, with
 *  meta m for both. data/len: copied. Returns the node index. */
uint32_t tu_get_attr(tu_fx *b, const char *name, Trnc__Fx__TensorMeta *m, const void *data,
                     size_t len);
/** Node i of the graph. */
Trnc__Fx__Node *tu_node(tu_fx *b, uint32_t i);
/** Appends an argument / an output meta to node i. */
void tu_arg(tu_fx *b, uint32_t node, Trnc__Fx__Arg *a);
void tu_add_output(tu_fx *b, uint32_t node, Trnc__Fx__TensorMeta *m);
/** Sets node i's source location. */
void tu_set_loc(tu_fx *b, uint32_t node, const char *file, int line, const char *code);

/* Argument constructors; name is the schema argument name ("" if none). */
Trnc__Fx__Arg *tu_a_ref(tu_fx *b, const char *name, uint32_t node, uint32_t output);
Trnc__Fx__Arg *tu_a_int(tu_fx *b, const char *name, int64_t v);
Trnc__Fx__Arg *tu_a_float(tu_fx *b, const char *name, double v);
Trnc__Fx__Arg *tu_a_bool(tu_fx *b, const char *name, bool v);
Trnc__Fx__Arg *tu_a_str(tu_fx *b, const char *name, const char *s);
Trnc__Fx__Arg *tu_a_none(tu_fx *b, const char *name);
Trnc__Fx__Arg *tu_a_sym(tu_fx *b, const char *name, const char *expr);
Trnc__Fx__Arg *tu_a_dtype(tu_fx *b, const char *name, Trnc__Fx__DType dt);
/** A list of n ints. */
Trnc__Fx__Arg *tu_a_ints(tu_fx *b, const char *name, size_t n, const int64_t *v);
/** A list of n given args (taken over by the list). */
Trnc__Fx__Arg *tu_a_list(tu_fx *b, const char *name, size_t n, Trnc__Fx__Arg **items);

/** Sets Graph.output (created if absent) and appends a ref / a None to it. */
void tu_output_ref(tu_fx *b, uint32_t node, uint32_t output);
void tu_output_none(tu_fx *b);

/** Packs the message into a malloc'd buffer (*len bytes). Free with free(). */
uint8_t *tu_fx_pack(tu_fx *b, size_t *len);
/** Packs and imports with `limits` (NULL: defaults). With env
 *  TRNC_TEST_DUMP_FX=dir, also writes the bytes to dir/tu_NNNN.pb (seeds
 *  for the fuzz corpus). */
trnc_status tu_fx_import(tu_fx *b, const trnc_import_limits *limits, trnc_graph **out,
                         trnc_diags *d);

/** Packs (and dumps, as tu_fx_import) and runs the whole pipeline
 *  (trnc_pipeline_run: import, legality scan, legalization, verifier,
 *  compile; opts may be NULL). *out gets the program (NULL on failure); returns the first
 *  failing status with its diagnostics in d. */
trnc_status tu_fx_compile(tu_fx *b, const trnc_compile_options *opts, trnc_compiled **out,
                          trnc_diags *d);

#endif
