/*
 * diag.h — internal helpers to add diagnostics to a trnc_diags list.
 */
#ifndef TRNC_IR_DIAG_H
#define TRNC_IR_DIAG_H

#include "trnc/trnc.h"

/** Where a diagnostic points: any field may be NULL. */
typedef struct trnc_diag_loc {
  const char *node;
  const char *target;
  const char *file;
  int line;
  const char *code;
} trnc_diag_loc;

/**
 * Appends a diagnostic (strings are copied). diags may be NULL (dropped).
 * detail may be NULL. Returns `code` so callers can `return trnc_diag_add(...)`.
 * If the list cannot grow the diagnostic is dropped, and the list remembers
 * that it is incomplete (shown by trnc_diags_format).
 */
trnc_status trnc_diag_add(trnc_diags *d, trnc_severity sev, trnc_status code,
                          const trnc_diag_loc *loc, const char *detail,
                          const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/** Shorthand: error with no location. */
trnc_status trnc_diag_error(trnc_diags *d, trnc_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
