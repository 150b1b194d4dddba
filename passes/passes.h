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

#endif
