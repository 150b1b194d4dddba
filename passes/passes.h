/*
 * passes.h — graph passes. Each pass is a function over one graph that
 * returns a status and adds diagnostics; passes.def lists them in order.
 */
#ifndef TRNC_PASSES_PASSES_H
#define TRNC_PASSES_PASSES_H

#include "ir/ir.h"

typedef trnc_status (*trnc_pass_fn)(trnc_graph *g, trnc_diags *d);

#define PASS(name, fn, doc) trnc_status fn(trnc_graph *g, trnc_diags *d);
#include "passes/passes.def"
#undef PASS

/** True if live node n (not an input or constant) is an op of the table
 *  that reads or produces a complex tensor or takes a complex dtype, or an
 *  op outside the table that passes/complex.c rewrites (FFT, conj,
 *  view_as_real, ...). */
bool trnc_complex_touches(const trnc_graph *g, const trnc_node *n);
/** For a node trnc_complex_touches: NULL if passes/complex.c rewrites it
 *  into real ops (the legality scan then accepts it), else a static reason. */
const char *trnc_complex_unsupported(const trnc_graph *g, const trnc_node *n);

#endif
