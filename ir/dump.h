/*
 * dump.h — the files trnc writes on request for one graph: its IR after each
 * pass and its program (TRNC_DUMP_DIR), its cost-model trace (TRNC_PROFILE).
 */
#ifndef TRNC_IR_DUMP_H
#define TRNC_IR_DUMP_H

#include <stddef.h>

#include "ir/ir.h"

/**
 * Writes `text` to TRNC_DUMP_DIR/<graph>-<stage>, where <graph> names the
 * graph by kind and name ("forward-graph-3": the backend numbers every graph
 * of a process, so later graphs never overwrite earlier ones) and `stage` is
 * e.g. "02-simplify.ir" or "program.s". Creates the directory (and its
 * parents) when missing. A no-op returning TRNC_OK when TRNC_DUMP_DIR is
 * unset or empty.
 * Errors: TRNC_ERR_IO when the directory cannot be created or the file
 * written; the diagnostic is a warning naming the path and the reason, so
 * the compile goes on.
 */
trnc_status trnc_dump_text(const trnc_graph *g, const char *stage, const char *text,
                           trnc_diags *d);

/**
 * The cost-model trace path for graph g under TRNC_PROFILE=path: path with
 * "<graph>" inserted before its extension ("trace.json" ->
 * "trace.forward-graph-3.json"), one file per graph. Writes it to buf (size
 * n) and returns buf; NULL when TRNC_PROFILE is unset or empty, or the path
 * does not fit.
 */
const char *trnc_profile_path(const trnc_graph *g, char *buf, size_t n);

#endif
