/*
 * entry.c — the cache entry file format (header layout: cache/internal.h):
 * writing headers and checking whole entries from untrusted bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "cache/internal.h"
#include "codegen/neuroncore/artifact.h"
#include "ir/diag.h"

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

void trnc_entry_header(const uint8_t key[16], const uint8_t *payload, size_t len,
                       uint8_t hdr[TRNC_ENTRY_HEADER_BYTES]) {
  memset(hdr, 0, TRNC_ENTRY_HEADER_BYTES);
  memcpy(hdr, TRNC_ENTRY_MAGIC, 8);
  put32(hdr + 8, TRNC_ARTIFACT_FORMAT_VERSION);
  put32(hdr + 12, TRNC_ENTRY_HEADER_BYTES);
  memcpy(hdr + 16, key, 16);
  put64(hdr + 32, len);
  put64(hdr + 40, XXH3_64bits(payload ? (const void *)payload : (const void *)"", len));
  put64(hdr + 56, XXH3_64bits(hdr, 56));
}

trnc_status trnc_entry_check_header(const uint8_t *hdr, uint64_t file_len, const uint8_t *expect_key,
                                    size_t *plen, char *why, size_t nwhy) {
#define FAIL(st, ...) do { snprintf(why, nwhy, __VA_ARGS__); return (st); } while (0)
  if (!hdr || file_len < TRNC_ENTRY_HEADER_BYTES)
    FAIL(TRNC_ERR_MALFORMED, "truncated: %" PRIu64 " bytes, shorter than the %d-byte header", file_len,
         TRNC_ENTRY_HEADER_BYTES);
  if (memcmp(hdr, TRNC_ENTRY_MAGIC, 8) != 0) FAIL(TRNC_ERR_MALFORMED, "not a trnc cache entry (bad magic)");
  if (get64(hdr + 56) != XXH3_64bits(hdr, 56)) FAIL(TRNC_ERR_MALFORMED, "header checksum mismatch");
  uint32_t ver = get32(hdr + 8);
  if (ver != TRNC_ARTIFACT_FORMAT_VERSION)
    FAIL(TRNC_ERR_VERSION, "entry format version %" PRIu32 ", this trnc reads version %d", ver,
         TRNC_ARTIFACT_FORMAT_VERSION);
  if (get32(hdr + 12) != TRNC_ENTRY_HEADER_BYTES || get64(hdr + 48) != 0)
    FAIL(TRNC_ERR_MALFORMED, "bad header size or reserved field");
  if (expect_key && memcmp(hdr + 16, expect_key, 16) != 0)
    FAIL(TRNC_ERR_MALFORMED, "the entry holds another key than its file name says");
  uint64_t n = get64(hdr + 32);
  if (n > TRNC_ARTIFACT_MAX_BYTES) FAIL(TRNC_ERR_MALFORMED, "payload length %" PRIu64 " over the limit", n);
  if (n != file_len - TRNC_ENTRY_HEADER_BYTES)
    FAIL(TRNC_ERR_MALFORMED, "truncated or extended: header says %" PRIu64 " payload bytes, file has %" PRIu64,
         n, file_len - TRNC_ENTRY_HEADER_BYTES);
  if (plen) *plen = (size_t)n;
  return TRNC_OK;
#undef FAIL
}

trnc_status trnc_entry_check(const uint8_t *bytes, size_t len, const uint8_t *expect_key,
                             uint8_t key_out[16], const uint8_t **payload, size_t *plen,
                             char *why, size_t nwhy) {
  size_t n = 0;
  trnc_status st = trnc_entry_check_header(bytes, len, expect_key, &n, why, nwhy);
  if (st) return st;
  const uint8_t *p = bytes + TRNC_ENTRY_HEADER_BYTES;
  if (get64(bytes + 40) != XXH3_64bits(p, n)) {
    snprintf(why, nwhy, "payload checksum mismatch");
    return TRNC_ERR_MALFORMED;
  }
  if (key_out) memcpy(key_out, bytes + 16, 16);
  if (payload) *payload = p;
  if (plen) *plen = n;
  return TRNC_OK;
}

trnc_status trnc_entry_load(const uint8_t *bytes, size_t len, const uint8_t *expect_key,
                            bool verify_program, uint8_t key_out[16], trnc_compiled **out,
                            char *why, size_t nwhy) {
  if (out) *out = NULL;
  const uint8_t *p = NULL;
  size_t n = 0;
  trnc_status st = trnc_entry_check(bytes, len, expect_key, key_out, &p, &n, why, nwhy);
  if (st) return st;
  trnc_diags *d = trnc_diags_create();
  trnc_compiled *c = NULL;
  st = trnc_artifact_deserialize(p, n, verify_program, &c, d);
  if (st) {
    /* the first error diagnostic is the reason */
    const char *msg = "cannot deserialize the artifact";
    for (size_t i = 0; d && i < trnc_diags_count(d); i++) {
      const trnc_diag *dg = trnc_diags_get(d, i);
      if (dg && dg->severity == TRNC_SEV_ERROR) {
        msg = dg->message;
        break;
      }
    }
    snprintf(why, nwhy, "%s", msg);
    trnc_diags_destroy(d);
    return st == TRNC_ERR_NOMEM ? st : (st == TRNC_ERR_VERSION ? st : TRNC_ERR_MALFORMED);
  }
  trnc_diags_destroy(d);
  if (out) *out = c;
  else trnc_compiled_destroy(c);
  return TRNC_OK;
}
