/*
 * cache.h — trnc's content-addressed artifact cache (cache/).
 *
 * Three layers:
 *  1. Artifact serialization: a whole trnc_compiled (NeuronCore program,
 *     boundary descriptors and bindings, constants, compile report, target)
 *     to versioned bytes and back (codegen/neuroncore/artifact.proto,
 *     protobuf-c; the artifact's owner module writes and reads them).
 *  2. Key derivation: XXH3-128 over an explicit, length-prefixed,
 *     little-endian encoding of everything that can change the artifact.
 *  3. The on-disk store: $TRNC_CACHE_DIR (default $XDG_CACHE_HOME/trnc, else
 *     $HOME/.cache/trnc), entries at DIR/ab/cd/<32 hex key>.trnc, written to
 *     a temporary file in the same directory, fsync'd and renamed (a reader
 *     sees a whole entry or none; no lock files). Every read checks magic,
 *     format version, key, length and two XXH3-64 checksums (header and
 *     payload) and deserializes (every field and binding checked) before
 *     the artifact is used; anything wrong is a miss, the entry is removed
 *     and one warning diagnostic says so. Only verified programs enter the
 *     store (a fresh compile verified its program; bytes taken in from
 *     elsewhere, trnc_cache_put_entry and trnc_cache_import, run the
 *     hardware verifier first), so a hit whose checksums match is not
 *     verified again; `trnc cache verify` (trnc_cache_verify) does. LRU eviction (mtime, refreshed on
 *     every hit) keeps the store under a byte bound.
 *     Trust: every directory on the way (DIR, DIR/ab, DIR/ab/cd, DIR/stats)
 *     and every entry or stats file must be owned by this user, not
 *     writable by group or others, and not a symlink (opened with
 *     O_NOFOLLOW one component at a time). Anything else may have been
 *     planted by another user: it is never read, followed or removed; a
 *     lookup through it is a miss with one warning.
 *
 * No protobuf-c types appear here. All sizes are in bytes; times in
 * nanoseconds since the Unix epoch.
 */
#ifndef TRNC_CACHE_H
#define TRNC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trnc/trnc.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the serialized artifact (codegen/neuroncore/artifact.proto) and of the
 *  cache entry header. Bump it whenever either changes meaning; it is part
 *  of every key, so old entries simply stop matching. */
#define TRNC_ARTIFACT_FORMAT_VERSION 1

/** Default size bound of the store when neither trnc_cache_config.max_bytes
 *  nor $TRNC_CACHE_MAX_BYTES is set: 10 GiB. */
#define TRNC_CACHE_DEFAULT_MAX_BYTES (UINT64_C(10) << 30)

/** Largest serialized artifact (and cache entry payload) accepted: 1 GiB. */
#define TRNC_ARTIFACT_MAX_BYTES (UINT64_C(1) << 30)

/** Most instructions one kernel of a serialized artifact may hold: 2^18.
 *  The compiler emits fewer: a 4096x8192 @ 8192x8192 bf16 matmul is one
 *  kernel of 37,236 instructions. The bound exists because loading
 *  verifies the program; the verifier is O(n log n) per kernel
 *  (codegen/neuroncore/verify_race.c): a crafted kernel of 100k unordered
 *  instructions verifies in about 0.2 s of CPU (the pairwise race check
 *  it replaced took 24 s). */
#define TRNC_ARTIFACT_MAX_KERNEL_INSTRS 262144

/** Most HBM scratch (INTERNAL buffers) a serialized artifact may declare:
 *  12 GiB, the HBM of one trn2 NeuronCore (96 GiB per chip, 8 cores); a
 *  program cannot use more on the device. Every run allocates and fills
 *  the scratch, so a loaded artifact must also declare no more than its
 *  INTERNAL buffers need: the compiler's first-fit planner (codegen/lower.c)
 *  never places the scratch top beyond the sum of their sizes, each
 *  rounded up to 64 bytes. */
#define TRNC_ARTIFACT_MAX_SCRATCH_BYTES (INT64_C(12) << 30)

/* ------------------------------------------------------------------------ */
/* Artifact serialization                                                    */

/**
 * Serializes a compiled artifact to a trnc.cache.Artifact message:
 * TRNC_ARTIFACT_FORMAT_VERSION, the target name, the program (as
 * trnc_nc_program_serialize bytes), every input/output descriptor and
 * binding, every constant's bytes, the HBM scratch size and the compile
 * report. The report's compile_s (wall time) is *not* stored, so the same
 * artifact always serializes to the same bytes.
 * On success *bytes (free with trnc_free) holds *len bytes.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointer, artifact without
 * program), TRNC_ERR_LIMIT (more than TRNC_ARTIFACT_MAX_BYTES, or over the
 * load limits TRNC_ARTIFACT_MAX_KERNEL_INSTRS / TRNC_ARTIFACT_MAX_SCRATCH_BYTES:
 * such an artifact could never be loaded back), TRNC_ERR_NOMEM.
 */
trnc_status trnc_compiled_serialize(const trnc_compiled *c, uint8_t **bytes, size_t *len,
                                    trnc_diags *diags);

/**
 * Reads bytes written by trnc_compiled_serialize, checks every field
 * (enum ranges, ranks, counts, binding indices, extents recomputed from
 * shape and strides, target agreement), the load limits (instructions per
 * kernel, scratch bytes; checked before anything expensive), the binding
 * contract of trnc_compiled_run (so a loaded artifact never fails it at
 * run time) and verifies the program with trnc_nc_program_verify before
 * returning it. Never trusts its input:
 * malformed bytes give an error, never a crash. The loaded report has
 * compile_s = 0. On success *out owns a new artifact
 * (trnc_compiled_destroy).
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointers), TRNC_ERR_MALFORMED
 * (wire format, field out of range, inconsistent bindings, or the program
 * fails hardware verification), TRNC_ERR_VERSION (another artifact format
 * or program version), TRNC_ERR_LIMIT (more than TRNC_ARTIFACT_MAX_BYTES,
 * too many allocations, a kernel over TRNC_ARTIFACT_MAX_KERNEL_INSTRS, or
 * scratch over TRNC_ARTIFACT_MAX_SCRATCH_BYTES or over what the INTERNAL
 * buffers need), TRNC_ERR_NOMEM.
 */
trnc_status trnc_compiled_deserialize(const uint8_t *bytes, size_t len, trnc_compiled **out,
                                      trnc_diags *diags);

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */

/** Cache key: 16 bytes (XXH3-128, canonical big-endian byte order). */
#define TRNC_CACHE_KEY_BYTES 16

/**
 * Derives the cache key of compiling graph g with options opt.
 *
 * The key is XXH3-128 over this encoding, in this order; every item is a
 * little-endian u64 byte length followed by its bytes, integers are 8-byte
 * little-endian two's complement, strings are their bytes without NUL:
 *   1. the tag "trnc-cache-key-v1";
 *   2. the canonical IR hash (trnc_graph_hash: FX node names and source
 *      locations excluded);
 *   3. the number of inputs, then for every input (placeholder, in order):
 *      torch dtype (the dtype at the torch boundary, before float64/int64
 *      legalization), rank, every dim, every stride (elements), storage
 *      offset (elements), and its alias group: the index of the first input
 *      in the same group of alias_groups (so only the partition matters,
 *      not the numbering);
 *   4. the number of outputs, then for every output its None flag and torch
 *      dtype;
 *   5. every compile option that changes the artifact: the resolved target
 *      name (opt->target, or $TRNC_TARGET / "trn2" when NULL or empty),
 *      autocast_bf16, no_fusion;
 *   6. the trnc version (trnc_version()) and the compiler build id
 *      (trnc_cache_build_id(): a hash of every compiler source file, so an
 *      edited compiler never reuses an artifact of the old one);
 *   7. TRNC_ARTIFACT_FORMAT_VERSION and TRNC_NC_PROGRAM_VERSION.
 * Two graphs that differ only in FX node names share a key.
 *
 * alias_groups: NULL (no input aliases another), or n_alias ==
 * number of inputs group ids: inputs with equal ids share storage.
 * key: receives TRNC_CACHE_KEY_BYTES bytes.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL graph/key, n_alias not the input
 * count, unknown target), TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_key(const trnc_graph *g, const trnc_compile_options *opt,
                           const int32_t *alias_groups, size_t n_alias,
                           uint8_t key[TRNC_CACHE_KEY_BYTES], trnc_diags *diags);

/** The key as 32 lowercase hex digits plus NUL, into out[33]. */
void trnc_cache_key_hex(const uint8_t key[TRNC_CACHE_KEY_BYTES], char out[33]);
/** Parses 32 hex digits (either case) into key; false if hex is not exactly
 *  that. */
bool trnc_cache_key_parse(const char *hex, uint8_t key[TRNC_CACHE_KEY_BYTES]);

/** Compiler build id: 16 hex digits hashing every source file of the
 *  compiling stages (ir/, frontend/, passes/, codegen/, cache/, include/)
 *  at build time. Never NULL. */
const char *trnc_cache_build_id(void);

/* ------------------------------------------------------------------------ */
/* The store                                                                 */

typedef struct trnc_cache trnc_cache;

/** Where and how big. A zeroed struct gives the defaults. */
typedef struct trnc_cache_config {
  const char *dir;     /* NULL/"": $TRNC_CACHE_DIR, else $XDG_CACHE_HOME/trnc,
                        * else $HOME/.cache/trnc */
  uint64_t max_bytes;  /* 0: $TRNC_CACHE_MAX_BYTES, else TRNC_CACHE_DEFAULT_MAX_BYTES */
} trnc_cache_config;

/**
 * Opens (creating with mode 0700, parents included) the cache directory.
 * Refuses a directory that is not a directory, is owned by another user or
 * is writable by group or others: returns TRNC_ERR_IO with one WARNING
 * diagnostic that names the directory, the problem and the fix (the caller
 * then compiles without caching). $TRNC_CACHE_MAX_BYTES accepts a plain
 * byte count or a K/M/G/T suffix (powers of 1024).
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL out, no HOME to derive the default,
 * malformed $TRNC_CACHE_MAX_BYTES), TRNC_ERR_IO, TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_open(const trnc_cache_config *cfg, trnc_cache **out, trnc_diags *diags);

/** Flushes this process's persistent counters and frees the cache and
 *  every artifact in its in-process table. NULL is a no-op. */
void trnc_cache_destroy(trnc_cache *c);

/** The absolute cache directory. */
const char *trnc_cache_dir(const trnc_cache *c);
/** The size bound in bytes. */
uint64_t trnc_cache_max_bytes(const trnc_cache *c);

/**
 * Looks key up: first in the in-process table (the same key loads from disk
 * once per process), then on disk. A disk hit is checked (header,
 * checksums, deserialization with every field and binding; not the
 * hardware verifier, which every program passed before its entry was
 * written), refreshes the entry's mtime (LRU) and enters the table.
 * *out: the artifact, owned by the cache and valid until
 * trnc_cache_destroy (runs are thread-safe), or NULL for a miss.
 * The header is read and checked before the payload is read. A corrupt,
 * truncated or foreign entry (one whose bindings do not fit its program,
 * or over the load limits of trnc_compiled_deserialize, included) is a
 * miss: it is removed and one WARNING diagnostic (status
 * TRNC_ERR_MALFORMED) names it and the reason. An entry that fails the
 * trust rules (above: a shard directory or the file owned by another user,
 * writable by group or others, or a symlink directory) is a miss with one
 * WARNING (status TRNC_ERR_IO) and is left alone.
 * Returns TRNC_OK for hits and misses; TRNC_ERR_INVALID_ARGUMENT for NULL
 * pointers. Thread-safe.
 */
trnc_status trnc_cache_get(trnc_cache *c, const uint8_t key[TRNC_CACHE_KEY_BYTES],
                           const trnc_compiled **out, trnc_diags *diags);

/**
 * Stores a freshly compiled artifact under key and takes ownership of it
 * (also on error): it enters the in-process table and *out (may be NULL)
 * receives the pointer to use from now on (owned by the cache; another
 * thread's artifact if it stored the same key first). The entry is written
 * to a temporary file in the shard directory (named
 * .tmp-<key>-<pid>-<serial>-<nonce>-<host>), fsync'd, renamed into place;
 * then the temporary files of writers of this host that have exited
 * (killed mid-write) are removed from that shard directory, and the store
 * is trimmed to the size bound (LRU; every RESCAN stores the whole store
 * is scanned, removing such debris everywhere). A shard directory that
 * fails the trust rules is not written to (TRNC_ERR_IO and a WARNING). A failed write is not
 * fatal: the artifact stays usable, the status and a WARNING diagnostic say
 * why. Test hook: $TRNC_CACHE_TEST_PAUSE_MS sleeps that long between writing
 * the temporary file and the rename.
 * Errors: TRNC_ERR_INVALID_ARGUMENT, TRNC_ERR_LIMIT (artifact too large),
 * TRNC_ERR_IO (write, fsync or rename failed), TRNC_ERR_NOMEM. Thread-safe.
 */
trnc_status trnc_cache_put(trnc_cache *c, const uint8_t key[TRNC_CACHE_KEY_BYTES],
                           trnc_compiled *art, const trnc_compiled **out, trnc_diags *diags);

/**
 * Rewrites the disk entry of every artifact in the in-process table whose
 * program gained host code this process compiled (the simulator's JIT,
 * docs/simulator.md), so that a later process on the same kind of host
 * loads that machine code instead of compiling it. *stored (may be NULL):
 * entries rewritten. Each write is as in trnc_cache_put; a failed one is a
 * WARNING and the others still go. Errors: TRNC_ERR_INVALID_ARGUMENT,
 * TRNC_ERR_IO, TRNC_ERR_LIMIT, TRNC_ERR_NOMEM (the worst of the writes).
 * Thread-safe.
 */
trnc_status trnc_cache_store_host_code(trnc_cache *c, size_t *stored, trnc_diags *diags);

/** Counters. The first group counts this process's lookups since
 *  trnc_cache_open; `total_*` add every process that used this directory
 *  (persisted under DIR/stats/, filled by trnc_cache_get_stats when
 *  with_disk is true, together with entries/bytes). */
typedef struct trnc_cache_stats {
  uint64_t hits;          /* lookups answered (memory or disk) */
  uint64_t memory_hits;   /* ... of which from the in-process table */
  uint64_t misses;        /* lookups not answered (corrupt entries included) */
  uint64_t stores;        /* entries written */
  uint64_t evictions;     /* entries removed by the size bound */
  uint64_t corrupt;       /* entries found corrupt and removed */
  uint64_t write_errors;  /* stores that failed */
  uint64_t total_hits, total_misses, total_stores, total_evictions, total_corrupt;
  uint64_t entries;       /* entries on disk */
  uint64_t bytes;         /* their bytes (headers included) */
  uint64_t temp_files;    /* temporary files on disk (a write in progress or killed) */
} trnc_cache_stats;

/** Fills *out. with_disk: also scan the directory (entries, bytes,
 *  temp_files) and sum the persisted counters of all processes. */
void trnc_cache_get_stats(trnc_cache *c, bool with_disk, trnc_cache_stats *out);

/** Writes this process's counters to DIR/stats/ now (also done on
 *  destroy, and after a lookup or store once 4 counted events are
 *  unwritten or the last write is a second old: a killed process loses at
 *  most 3). Stats files are read only if regular files of this user
 *  (O_NOFOLLOW | O_NONBLOCK: a FIFO never blocks `trnc cache stats`). */
void trnc_cache_flush_stats(trnc_cache *c);

/** One entry on disk. */
typedef struct trnc_cache_entry {
  uint8_t key[TRNC_CACHE_KEY_BYTES];
  uint64_t bytes;     /* file size */
  int64_t mtime_ns;   /* last store or hit */
} trnc_cache_entry;

/**
 * Lists the entries on disk (files named like an entry; their content is
 * not checked), least recently used first. *entries: trnc_free it (NULL
 * when *n is 0). Errors: TRNC_ERR_INVALID_ARGUMENT, TRNC_ERR_IO,
 * TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_list(trnc_cache *c, trnc_cache_entry **entries, size_t *n,
                            trnc_diags *diags);

/**
 * Fully checks every entry (as trnc_cache_get would, and the hardware
 * verifier on its program too, without loading it into the table). *good / *bad receive the counts; one WARNING diagnostic
 * per bad entry names it and the reason. remove_bad: delete bad entries.
 * Returns TRNC_OK when the directory could be read (bad entries included);
 * TRNC_ERR_IO, TRNC_ERR_NOMEM otherwise.
 */
trnc_status trnc_cache_verify(trnc_cache *c, bool remove_bad, size_t *good, size_t *bad,
                              trnc_diags *diags);

/**
 * Removes least recently used entries until the store holds at most
 * max_bytes, and temporary files of exited writers of this host or older
 * than 15 minutes (debris of killed writers). *removed / *freed (may be NULL) receive the count and bytes of
 * removed entries. Evictions count in the stats.
 * Errors: TRNC_ERR_IO, TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_prune(trnc_cache *c, uint64_t max_bytes, size_t *removed,
                             uint64_t *freed, trnc_diags *diags);

/**
 * Removes key's entry from disk and from lookups, for an artifact that
 * failed to run (so the next lookup, in any process, recompiles). The
 * artifact itself stays valid until trnc_cache_destroy: pointers to it
 * may still be held. No entry is not an error.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointers), TRNC_ERR_IO (the shard
 * directory fails the trust rules, or unlink failed; a WARNING says why).
 * Thread-safe.
 */
trnc_status trnc_cache_remove(trnc_cache *c, const uint8_t key[TRNC_CACHE_KEY_BYTES],
                              trnc_diags *diags);

/** Removes every entry, temporary file and persisted counter (the
 *  directory stays). *removed (may be NULL): entries removed.
 *  Errors: TRNC_ERR_IO. */
trnc_status trnc_cache_clear(trnc_cache *c, size_t *removed, trnc_diags *diags);

/**
 * Writes every valid entry into one portable bundle file at path (magic
 * "TRNCBNDL", version, count, then each entry as stored: header and
 * payload), atomically (temporary file + rename). Bad entries are skipped
 * with a WARNING. *count (may be NULL): entries written.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (path exists and is not a regular file:
 * a symlink, FIFO or device would be replaced by the rename), TRNC_ERR_IO,
 * TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_export(trnc_cache *c, const char *path, size_t *count,
                              trnc_diags *diags);

/**
 * Reads a bundle written by trnc_cache_export and stores every entry that
 * passes the full check (header, checksums, deserialization, hardware
 * verification); the others are rejected with a WARNING each. A truncated
 * or malformed bundle stops at the first bad record.
 * *imported / *rejected (may be NULL) receive the counts.
 * Errors: TRNC_ERR_IO (cannot read path), TRNC_ERR_MALFORMED (not a bundle,
 * or a truncated record), TRNC_ERR_VERSION, TRNC_ERR_NOMEM.
 */
trnc_status trnc_cache_import(trnc_cache *c, const char *path, size_t *imported,
                              size_t *rejected, trnc_diags *diags);

/* ------------------------------------------------------------------------ */
/* Entry bytes: shipping entries to and from other stores                    */

/** The largest entry: a 64-byte header plus TRNC_ARTIFACT_MAX_BYTES. */
#define TRNC_CACHE_ENTRY_MAX_BYTES (TRNC_ARTIFACT_MAX_BYTES + 64)

/**
 * The bytes of key's entry as stored (the 64-byte header, then the
 * serialized artifact), for another store: torch's MegaCache
 * (torch.compiler.save_cache_artifacts) or a remote cache. The entry is read
 * under the trust rules of trnc_cache_get and its header and payload
 * checksums are checked (the receiver deserializes and verifies it:
 * trnc_cache_put_entry). *bytes (trnc_free it) is NULL and *len 0 when
 * there is no such entry, or it is corrupt or untrusted (one WARNING says
 * which; the entry is left for trnc_cache_get to handle).
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointers), TRNC_ERR_NOMEM.
 * Thread-safe.
 */
trnc_status trnc_cache_entry_bytes(trnc_cache *c, const uint8_t key[TRNC_CACHE_KEY_BYTES],
                                   uint8_t **bytes, size_t *len, trnc_diags *diags);

/**
 * Stores entry bytes that came from another store (as trnc_cache_entry_bytes
 * returns them) after the checks of trnc_cache_get (header, checksums,
 * deserialization) and the hardware verifier, and, when expect_key is
 * non-NULL, that the entry's key is expect_key (an entry cannot stand in for
 * another key). The entry is written atomically as trnc_cache_put writes.
 * key_out (may be NULL) receives the entry's key. *out (may be NULL: check
 * and store only) receives the loaded artifact, owned by the cache as
 * after trnc_cache_get; it is kept even when the write fails.
 * Errors: TRNC_ERR_INVALID_ARGUMENT (NULL pointers), TRNC_ERR_MALFORMED or
 * TRNC_ERR_VERSION (rejected, entries over the load limits of
 * trnc_compiled_deserialize included: a WARNING names the reason; nothing
 * is stored), TRNC_ERR_IO (the write failed; a WARNING says why),
 * TRNC_ERR_NOMEM. Thread-safe.
 */
trnc_status trnc_cache_put_entry(trnc_cache *c, const uint8_t *bytes, size_t len,
                                 const uint8_t *expect_key, uint8_t key_out[TRNC_CACHE_KEY_BYTES],
                                 const trnc_compiled **out, trnc_diags *diags);

#ifdef __cplusplus
}
#endif
#endif /* TRNC_CACHE_H */
