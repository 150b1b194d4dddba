/*
 * import.h — limits and constants of the fx.proto reader (frontend/import.c).
 *
 * The reader itself is the public trnc_graph_import() (include/trnc/trnc.h);
 * this header only names the numbers it enforces so that tests and the fuzz
 * target can refer to them.
 */
#ifndef TRNC_FRONTEND_IMPORT_H
#define TRNC_FRONTEND_IMPORT_H

#include <stddef.h>
#include <stdint.h>

/** The one Graph.version this reader accepts (fx.proto FX_SCHEMA_VERSION). */
#define TRNC_FX_SCHEMA_VERSION 1u

/** Defaults for zero fields of trnc_import_limits. */
#define TRNC_FX_DEFAULT_MAX_BYTES ((size_t)1 << 30)   /* 1 GiB of serialized graph */
#define TRNC_FX_DEFAULT_MAX_NODES ((size_t)1000000)
#define TRNC_FX_DEFAULT_MAX_ALLOCS ((size_t)64 << 20) /* protobuf-c allocations */

/** Bytes protobuf-c may hold at once while unpacking: a floor plus a multiple
 *  of the input size (an unpacked message is at most ~20x its wire size for
 *  realistic graphs; adversarial ones hit this cap instead of the host). */
#define TRNC_FX_UNPACK_BYTES_FLOOR ((size_t)64 << 20)
#define TRNC_FX_UNPACK_BYTES_PER_WIRE_BYTE 32u

/** Deepest nesting of Arg lists (list of list of ...) the reader accepts. */
#define TRNC_FX_MAX_ARG_DEPTH 16
/** Deepest message nesting on the wire (checked before protobuf-c recurses):
 *  Graph > Node > Arg > (ArgList > Arg) x TRNC_FX_MAX_ARG_DEPTH, plus slack. */
#define TRNC_FX_MAX_WIRE_DEPTH (2 * TRNC_FX_MAX_ARG_DEPTH + 8)

#endif
