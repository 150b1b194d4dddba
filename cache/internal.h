/*
 * internal.h — cache/ internals shared by key.c, entry.c, store.c and the
 * cmocka tests (not public API).
 */
#ifndef TRNC_CACHE_INTERNAL_H
#define TRNC_CACHE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trnc/cache.h"
#include "trnc/trnc.h"

/* ---- keys ------------------------------------------------------------------ */

/** The version items of a key (trnc_cache_key uses the real ones; tests
 *  change one at a time). */
typedef struct trnc_cache_key_versions {
  const char *trnc_version;
  const char *build_id;
  int64_t artifact_format;
  int64_t program_format;
} trnc_cache_key_versions;

/** trnc_cache_key with explicit version items. */
trnc_status trnc_cache_key_ex(const trnc_graph *g, const trnc_compile_options *opt,
                              const int32_t *alias_groups, size_t n_alias,
                              const trnc_cache_key_versions *ver, uint8_t key[16],
                              trnc_diags *diags);

/* ---- entry files ------------------------------------------------------------- */

/*
 * An entry file is a 64-byte header followed by the payload (the bytes of
 * trnc_compiled_serialize). Header, all integers little-endian:
 *    0  8  magic "trncache"
 *    8  4  format version (TRNC_ARTIFACT_FORMAT_VERSION)
 *   12  4  header size (64)
 *   16 16  key
 *   32  8  payload length
 *   40  8  XXH3-64 of the payload
 *   48  8  reserved, zero
 *   56  8  XXH3-64 of header bytes 0..55
 */
#define TRNC_ENTRY_HEADER_BYTES 64
#define TRNC_ENTRY_MAGIC "trncache"

/** Writes the header of an entry holding payload[0..len) under key. */
void trnc_entry_header(const uint8_t key[16], const uint8_t *payload, size_t len,
                       uint8_t hdr[TRNC_ENTRY_HEADER_BYTES]);

/**
 * Checks an entry's header alone (the first TRNC_ENTRY_HEADER_BYTES bytes
 * of a file of file_len bytes), so a reader rejects a foreign file before
 * reading its payload: magic, header checksum, version, header size and
 * reserved field, key (when expect_key is non-NULL), payload length (at
 * most TRNC_ARTIFACT_MAX_BYTES and equal to file_len minus the header).
 * *plen (may be NULL) receives the payload length. Failure:
 * TRNC_ERR_MALFORMED or TRNC_ERR_VERSION with the reason in why[0..nwhy).
 */
trnc_status trnc_entry_check_header(const uint8_t *hdr, uint64_t file_len, const uint8_t *expect_key,
                                    size_t *plen, char *why, size_t nwhy);

/**
 * Checks a whole entry file's bytes (header + payload): the header as
 * trnc_entry_check_header (with file_len = len), then the payload
 * checksum. On success *payload / *plen point into bytes and key_out (may
 * be NULL) receives the key.
 * Failure: TRNC_ERR_MALFORMED or TRNC_ERR_VERSION with the reason in
 * why[0..nwhy) (no diagnostic is added).
 */
trnc_status trnc_entry_check(const uint8_t *bytes, size_t len, const uint8_t *expect_key,
                             uint8_t key_out[16], const uint8_t **payload, size_t *plen,
                             char *why, size_t nwhy);

/** trnc_entry_check, then the artifact's deserialization, which runs the
 *  hardware verifier on its program when verify_program: bytes from
 *  outside the store (remote cache, MegaCache, a bundle) and the full check
 *  of `trnc cache verify` verify; a hit in the store does not (every entry
 *  was verified before it was written, and its checksum covers every byte).
 *  *out (may be NULL: check only) receives the artifact. The reason of a
 *  failure goes to why. */
trnc_status trnc_entry_load(const uint8_t *bytes, size_t len, const uint8_t *expect_key,
                            bool verify_program, uint8_t key_out[16], trnc_compiled **out,
                            char *why, size_t nwhy);

#endif
