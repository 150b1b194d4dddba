/*
 * util.h — helpers shared by the graph passes: type equivalence, use
 * rewriting, re-running a node's shape rule, storage roots of views and the
 * rule for redirecting a graph output to another value.
 *
 * Vocabulary:
 *  - "equivalent" types: same dtype, rank, shape and storage offset, and the
 *    same strides in every dim of size > 1 (the verifier and the printer
 *    ignore strides of size-1 dims, and no shape rule lets them influence a
 *    dim of size > 1).
 *  - a "true view": a single-output node whose shape rule gives exact strides
 *    and a storage offset (offset >= 0): its result shares storage with its
 *    input. reshape is one only when torch can view; _unsafe_view and alias
 *    are not (their rules leave strides free).
 */
#ifndef TRNC_PASSES_UTIL_H
#define TRNC_PASSES_UTIL_H

#include "ir/ir.h"

/** True if a and b are equivalent types (see above). */
bool trnc_pu_type_equiv(const trnc_type *a, const trnc_type *b);

/** True if t is row-major contiguous with storage offset 0 (size-1 dims'
 *  strides ignored). */
bool trnc_pu_is_contiguous(const trnc_type *t);


/**
 * Runs n's shape rule into out[0..n->nouts) (offsets preset to -1, as the
 * verifier does). Diagnostics of a failing rule are dropped. Returns false
 * if the node is not a table op, has more than 64 outputs, or the rule fails.
 */
bool trnc_pu_rule(const trnc_graph *g, const trnc_node *n, trnc_type *out);

/** True if `want` (a rule result) accepts the declared type `got`, with the
 *  verifier's conventions (exact strides when want->offset >= 0, else dense). */
bool trnc_pu_rule_accepts(const trnc_type *want, const trnc_type *got);

/** True if n is live, single-output and a true view (see above). */
bool trnc_pu_is_true_view(const trnc_graph *g, const trnc_node *n);

/** The value whose storage r shares: follows true views and alias back to
 *  the first value that is neither. */
trnc_ref trnc_pu_storage_root(const trnc_graph *g, trnc_ref r);

/**
 * True if graph output slots holding `from` may hold `to` instead: the types
 * must be equivalent (a graph output keeps its exact declared type), and the
 * change must not make the output alias storage it did not alias before. If
 * `from` is a view or alias of `to`'s storage the aliasing is unchanged.
 * Otherwise `to`'s storage must be fresh: not a placeholder or constant (the
 * caller's input or a buffer reused across calls) and not the storage of any
 * other graph output (the caller may mutate one output in place). Both
 * must also have one dtype at the Python boundary (a float64 value that
 * legalize_f64 computes in float32 stays float64 there).
 */
bool trnc_pu_output_redirect_ok(const trnc_graph *g, trnc_ref from, trnc_ref to);

/** True if some graph output slot refers to value r. */
bool trnc_pu_is_graph_output(const trnc_graph *g, trnc_ref r);

#endif
