/*
 * store.c — the on-disk artifact store (rules: include/trnc/cache.h).
 *
 * Layout of DIR:
 *   ab/cd/abcd<28 more hex>.trnc    entries (64-byte header + artifact bytes)
 *   ab/cd/.tmp-<key>-<pid>-<n>-<nonce>   a write in progress (or a killed one)
 *   stats/p.<pid>.<nonce>.<host>    one process's persisted counters
 *   stats/m.<nonce>                 counters merged from dead processes
 *
 * Concurrency without locks: an entry appears by rename(2) of a complete,
 * fsync'd temporary file, so readers see a whole entry or none; two writers
 * of one key each rename a valid file (the last one wins). Entries are never
 * modified in place (only their mtime, the LRU clock, is refreshed on a
 * hit), so a short read means corruption. Removal of a corrupt entry
 * unlinks the path only if it still names the inode that was read.
 *
 * Within a process a mutex guards the table (key -> artifact) and the
 * counters; file I/O happens outside it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cache/internal.h"
#include "codegen/neuroncore/artifact.h"
#include "ir/diag.h"

_Static_assert(TRNC_CACHE_ENTRY_MAX_BYTES == TRNC_ARTIFACT_MAX_BYTES + TRNC_ENTRY_HEADER_BYTES,
               "TRNC_CACHE_ENTRY_MAX_BYTES is the header plus the largest artifact");

#define ENTRY_SUFFIX ".trnc"
#define TEMP_PREFIX ".tmp-"
#define STALE_TEMP_NS (INT64_C(15) * 60 * 1000000000)
#define BUNDLE_MAGIC "TRNCBNDL"
#define BUNDLE_VERSION 1
#define RESCAN_EVERY 32      /* puts between full size scans */
#define FLUSH_EVERY 4        /* counted events between flushes of the persisted counters */

typedef struct slot {
  uint8_t key[16];
  trnc_compiled *art;        /* NULL: empty */
  bool dropped;              /* removed by trnc_cache_remove: art stays valid, never found */
} slot;

typedef struct counters {
  uint64_t hits, memory_hits, misses, stores, evictions, corrupt, write_errors;
} counters;

struct trnc_cache {
  char *dir;
  uint64_t max_bytes;
  pthread_mutex_t mu;
  slot *table;
  size_t cap, used;          /* open addressing, cap a power of two */
  counters n;
  counters flushed;          /* values at the last flush (skip unchanged writes) */
  int64_t approx_bytes;      /* -1: unknown (scan at the next put) */
  unsigned puts_since_scan;
  uint64_t nonce;
  uint64_t tmp_counter;
  int64_t last_flush_ns;
  char host[64];
};

/* ---- small helpers ------------------------------------------------------------ */

/** snprintf for paths and names (truncation is harmless: the directory
 *  length is bounded at open, and a truncated name just fails to open). */
static void pathf(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, n, fmt, ap);
  va_end(ap);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/** Warning diagnostic with a status. */
#define WARN(d, st, ...) trnc_diag_add((d), TRNC_SEV_WARNING, (st), NULL, NULL, __VA_ARGS__)

static void entry_path(const trnc_cache *c, const uint8_t key[16], char *out, size_t n) {
  char hex[33];
  trnc_cache_key_hex(key, hex);
  pathf(out, n, "%s/%.2s/%.2s/%s" ENTRY_SUFFIX, c->dir, hex, hex + 2, hex);
}

static void shard_path(const trnc_cache *c, const uint8_t key[16], int level, char *out, size_t n) {
  char hex[33];
  trnc_cache_key_hex(key, hex);
  if (level == 1) pathf(out, n, "%s/%.2s", c->dir, hex);
  else pathf(out, n, "%s/%.2s/%.2s", c->dir, hex, hex + 2);
}

/** mkdir with mode 0700; true if it exists afterwards as a directory. */
static bool mkdir0700(const char *p) {
  if (mkdir(p, 0700) == 0) return true;
  struct stat st;
  return errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/** mkdir -p, every created component 0700. */
static bool mkdir_p(const char *path) {
  char buf[PATH_MAX];
  if (strlen(path) >= sizeof buf) return false;
  memcpy(buf, path, strlen(path) + 1);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (!mkdir0700(buf)) return false;
    *p = '/';
  }
  return mkdir0700(buf);
}

/* ---- trust ------------------------------------------------------------------------ */

/*
 * Everything the cache reads or writes below DIR must be ours: every
 * directory on the way (DIR, the shards, stats/) and every entry or stats
 * file must be of the expected type (a symlink never is: directories are
 * opened with O_NOFOLLOW one component at a time, files with O_NOFOLLOW
 * under a checked directory descriptor), owned by this user and not
 * writable by group or others. Anything else is another user's plant: it is
 * ignored (a miss with one warning), never followed and never removed.
 */

/** Why st (lstat/fstat of a file or directory) is not to be trusted, or
 *  NULL when it is: type must be S_IFDIR or S_IFREG. */
static const char *distrust(const struct stat *st, mode_t type) {
  if ((st->st_mode & S_IFMT) != type)
    return S_ISLNK(st->st_mode) ? "is a symbolic link"
           : type == S_IFDIR    ? "is not a directory"
                                : "is not a regular file";
  if (st->st_uid != geteuid()) return "is owned by another user";
  if (st->st_mode & (S_IWGRP | S_IWOTH)) return "is writable by group or others";
  return NULL;
}

/**
 * Opens directory `name` under descriptor `at` (AT_FDCWD for an absolute
 * path) without following a symlink and checks it (distrust). create: mkdir
 * it (0700) first when missing. Returns the descriptor, or -1 with *why the
 * problem, or *why NULL when it does not exist or cannot be opened (errno).
 */
static int open_dir_at(int at, const char *name, bool create, const char **why) {
  *why = NULL;
  if (create && mkdirat(at, name, 0700) != 0 && errno != EEXIST) return -1;
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    int err = errno;
    if ((err == ELOOP || err == ENOTDIR) && fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      *why = distrust(&st, S_IFDIR);
    errno = err;
    return -1;
  }
  if (fstat(fd, &st) != 0 || (*why = distrust(&st, S_IFDIR))) {
    if (!*why) *why = "cannot be examined";
    close(fd);
    return -1;
  }
  return fd;
}

/** Opens DIR/<sub> (sub NULL: DIR itself) as open_dir_at does; the path at
 *  fault goes to bad[0..nbad). */
static int open_cache_dir(const trnc_cache *c, const char *sub, bool create, const char **why,
                          char *bad, size_t nbad) {
  pathf(bad, nbad, "%s", c->dir);
  int top = open_dir_at(AT_FDCWD, c->dir, false, why);
  if (top < 0 || !sub) return top;
  pathf(bad, nbad, "%s/%s", c->dir, sub);
  int fd = open_dir_at(top, sub, create, why);
  close(top);
  return fd;
}

/** Opens the shard directory DIR/ab/cd of key (create: making it and DIR/ab
 *  when missing), every level checked; -1 as open_dir_at, with the path at
 *  fault in bad[0..nbad). */
static int open_shard(const trnc_cache *c, const uint8_t key[16], bool create, const char **why,
                      char *bad, size_t nbad) {
  char hex[33], l1[3] = {0}, l2[3] = {0};
  trnc_cache_key_hex(key, hex);
  memcpy(l1, hex, 2);
  memcpy(l2, hex + 2, 2);
  int top = open_cache_dir(c, l1, create, why, bad, nbad);
  if (top < 0) return -1;
  pathf(bad, nbad, "%s/%s/%s", c->dir, l1, l2);
  int fd = open_dir_at(top, l2, create, why);
  close(top);
  return fd;
}

/** True if process pid of host `host` (a name as in c->host) has exited:
 *  only this host's processes can be asked; this process is alive. */
static bool writer_dead(const trnc_cache *c, long pid, const char *host) {
  if (pid <= 0 || strcmp(host, c->host) || pid == (long)getpid()) return false;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/** read(2) into buf until n bytes, end of file or an error; the count read. */
static size_t read_full(int fd, uint8_t *buf, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t r = read(fd, buf + off, n - off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    off += (size_t)r;
  }
  return off;
}

/** write(2) all of buf; false on error. */
static bool write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/** Parses "123", "10G", "512M", "1k" (powers of 1024). */
static bool parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return false;
  }
  if (*end == 'i' || *end == 'B') end += *end == 'i' && end[1] == 'B' ? 2 : 1;
  if (*end) return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = (uint64_t)v << shift;
  return true;
}

/* ---- the in-process table ------------------------------------------------------ */

static size_t slot_of(const uint8_t key[16], size_t cap) {
  uint64_t h;
  memcpy(&h, key, 8);
  return (size_t)h & (cap - 1);
}

/** The artifact for key, or NULL. Caller holds mu. */
static trnc_compiled *table_find(trnc_cache *c, const uint8_t key[16]) {
  if (!c->cap) return NULL;
  for (size_t i = slot_of(key, c->cap);; i = (i + 1) & (c->cap - 1)) {
    if (!c->table[i].art) return NULL;
    if (!memcmp(c->table[i].key, key, 16) && !c->table[i].dropped) return c->table[i].art;
  }
}

/** Inserts (key, art); false on OOM. Caller holds mu; key is absent. */
static bool table_insert(trnc_cache *c, const uint8_t key[16], trnc_compiled *art) {
  if ((c->used + 1) * 2 > c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 64;
    slot *nt = calloc(ncap, sizeof *nt);
    if (!nt) return false;
    for (size_t i = 0; i < c->cap; i++) {
      if (!c->table[i].art) continue;
      size_t j = slot_of(c->table[i].key, ncap);
      while (nt[j].art) j = (j + 1) & (ncap - 1);
      nt[j] = c->table[i];
    }
    free(c->table);
    c->table = nt;
    c->cap = ncap;
  }
  size_t i = slot_of(key, c->cap);
  while (c->table[i].art) i = (i + 1) & (c->cap - 1);
  memcpy(c->table[i].key, key, 16);
  c->table[i].art = art;
  c->table[i].dropped = false;
  c->used++;
  return true;
}

/* ---- persisted counters --------------------------------------------------------- */

#define STATS_TAG "trnc-cache-stats-v1"
#define STATS_FILE_MAX 256   /* a stats file is one short line */

/** Writes counters to DIR/stats/name via a temporary file and rename. */
static void write_counters(const trnc_cache *c, const char *name, const counters *k) {
  const char *why;
  char bad[PATH_MAX], tmp[NAME_MAX + 1];
  int sd = open_cache_dir(c, "stats", true, &why, bad, sizeof bad);
  if (sd < 0) return;
  pathf(tmp, sizeof tmp, ".tmp-%s", name);
  int fd = openat(sd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd >= 0) {
    char line[STATS_FILE_MAX];
    int len = snprintf(line, sizeof line, STATS_TAG " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                       " %" PRIu64 "\n", k->hits, k->misses, k->stores, k->evictions, k->corrupt);
    bool ok = write_all(fd, line, (size_t)len);
    close(fd);
    if (!ok || renameat(sd, tmp, sd, name) != 0) unlinkat(sd, tmp, 0);
  }
  close(sd);
}

/** Adds the counters in file `name` of the stats directory sd to *k; false
 *  if it is not a stats file of ours. A FIFO, device or symlink is never
 *  opened for a blocking read (O_NONBLOCK, O_NOFOLLOW, regular files only). */
static bool read_counters(int sd, const char *name, counters *k) {
  int fd = openat(sd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  char line[STATS_FILE_MAX];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && !distrust(&st, S_IFREG) && st.st_size < (off_t)sizeof line)
    n = read(fd, line, sizeof line - 1);
  close(fd);
  if (n <= 0) return false;
  line[n] = '\0';
  char tag[32];
  uint64_t v[5];
  int got = sscanf(line, "%31s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, tag,
                   &v[0], &v[1], &v[2], &v[3], &v[4]);
  if (got != 6 || strcmp(tag, STATS_TAG)) return false;
  k->hits += v[0];
  k->misses += v[1];
  k->stores += v[2];
  k->evictions += v[3];
  k->corrupt += v[4];
  return true;
}

void trnc_cache_flush_stats(trnc_cache *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  counters k = c->n;
  bool changed = memcmp(&k, &c->flushed, sizeof k) != 0;
  c->flushed = k;
  c->last_flush_ns = now_ns();
  pthread_mutex_unlock(&c->mu);
  if (!changed) return;
  char name[128];
  pathf(name, sizeof name, "p.%ld.%016" PRIx64 ".%s", (long)getpid(), c->nonce, c->host);
  write_counters(c, name, &k);
}

/** Persisted events (hits, misses, stores, evictions, corrupt) since the
 *  last flush. Caller holds mu. */
static uint64_t unflushed(const trnc_cache *c) {
  const counters *n = &c->n, *f = &c->flushed;
  return (n->hits - f->hits) + (n->misses - f->misses) + (n->stores - f->stores) +
         (n->evictions - f->evictions) + (n->corrupt - f->corrupt);
}

/** Flushes once FLUSH_EVERY events are unflushed or the last flush is more
 *  than a second old, so a killed process loses fewer than FLUSH_EVERY. */
static void maybe_flush(trnc_cache *c) {
  pthread_mutex_lock(&c->mu);
  bool due = unflushed(c) >= FLUSH_EVERY || now_ns() - c->last_flush_ns > 1000000000;
  pthread_mutex_unlock(&c->mu);
  if (due) trnc_cache_flush_stats(c);
}

/** True if stats file `name` belongs to a process that has exited (files of
 *  other hosts count as live; merged files as dead). */
static bool stats_file_dead(const trnc_cache *c, const char *name) {
  if (name[0] == 'm' && name[1] == '.') return true;
  if (name[0] != 'p' || name[1] != '.') return false;
  char *end;
  long pid = strtol(name + 2, &end, 10);
  if (*end != '.') return false;
  const char *host = strchr(end + 1, '.');
  return host && writer_dead(c, pid, host + 1);
}

/** Sums every persisted counter file into *k; with more than 64 files,
 *  merges those of exited processes into one (claimed by rename, so two
 *  processes never merge the same file). */
static void sum_persisted(trnc_cache *c, counters *k) {
  const char *why;
  char bad[PATH_MAX];
  int sd = open_cache_dir(c, "stats", false, &why, bad, sizeof bad);
  if (sd < 0) return;
  DIR *d = fdopendir(sd);
  if (!d) {
    close(sd);
    return;
  }
  size_t nfiles = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (read_counters(sd, e->d_name, k)) nfiles++;
  }
  if (nfiles <= 64) {
    closedir(d);
    return;
  }
  rewinddir(d);
  counters merged = {0};
  size_t nclaimed = 0;
  char claim_prefix[64];
  pathf(claim_prefix, sizeof claim_prefix, ".claim-%016" PRIx64 "-", c->nonce);
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !stats_file_dead(c, e->d_name)) continue;
    char claim[NAME_MAX + 1];
    pathf(claim, sizeof claim, "%s%s", claim_prefix, e->d_name);
    if (renameat(sd, e->d_name, sd, claim) != 0) continue; /* another process claimed it */
    if (read_counters(sd, claim, &merged)) nclaimed++;
  }
  if (nclaimed) {
    char name[64];
    pathf(name, sizeof name, "m.%016" PRIx64 "%08" PRIx64, c->nonce, c->tmp_counter++);
    write_counters(c, name, &merged);
  }
  rewinddir(d);
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, claim_prefix, strlen(claim_prefix))) unlinkat(sd, e->d_name, 0);
  closedir(d);
}

/* ---- open / destroy -------------------------------------------------------------- */

/** The directory the cache uses: cfg->dir, $TRNC_CACHE_DIR, $XDG_CACHE_HOME/trnc,
 *  $HOME/.cache/trnc. NULL if none can be derived. malloc'd. */
static char *resolve_dir(const trnc_cache_config *cfg) {
  const char *s = cfg && cfg->dir && cfg->dir[0] ? cfg->dir : getenv("TRNC_CACHE_DIR");
  char buf[PATH_MAX];
  if (s && s[0]) pathf(buf, sizeof buf, "%s", s);
  else if ((s = getenv("XDG_CACHE_HOME")) && s[0] == '/') pathf(buf, sizeof buf, "%s/trnc", s);
  else if ((s = getenv("HOME")) && s[0]) pathf(buf, sizeof buf, "%s/.cache/trnc", s);
  else return NULL;
  size_t n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
  if (n > PATH_MAX - 200) return NULL; /* room for shard, entry and temp names */
  return strdup(buf);
}

trnc_status trnc_cache_open(const trnc_cache_config *cfg, trnc_cache **out, trnc_diags *diags) {
  if (!out) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_open: NULL out");
  *out = NULL;
  uint64_t max = cfg ? cfg->max_bytes : 0;
  const char *env = getenv("TRNC_CACHE_MAX_BYTES");
  if (!max && env && env[0]) {
    if (!parse_size(env, &max) || max == 0)
      return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                             "TRNC_CACHE_MAX_BYTES='%.64s' is not a positive size (bytes, or a "
                             "number with K, M, G or T)",
                             env);
  }
  if (!max) max = TRNC_CACHE_DEFAULT_MAX_BYTES;
  char *dir = resolve_dir(cfg);
  if (!dir)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc cache: no directory (set TRNC_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  if (!mkdir_p(dir)) {
    trnc_status st = WARN(diags, TRNC_ERR_IO,
                          "trnc cache: cannot create the cache directory %s (%s); compiling "
                          "without a cache",
                          dir, strerror(errno));
    free(dir);
    return st;
  }
  struct stat st;
  const char *problem = NULL;
  if (stat(dir, &st) != 0) problem = "cannot be read";
  else problem = distrust(&st, S_IFDIR);
  if (problem) {
    trnc_status s = WARN(diags, TRNC_ERR_IO,
                         "trnc cache: refusing to use %s: it %s (mode %04o), so another user "
                         "could plant artifacts in it; compiling without a cache. Fix: "
                         "chmod 700 %s, or point TRNC_CACHE_DIR at a directory of your own",
                         dir, problem, (unsigned)(st.st_mode & 07777), dir);
    free(dir);
    return s;
  }
  char real[PATH_MAX];
  if (realpath(dir, real)) {
    free(dir);
    dir = strdup(real);
  }
  trnc_cache *c = calloc(1, sizeof *c);
  if (!c || !dir) {
    free(c);
    free(dir);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc cache: out of memory");
  }
  c->dir = dir;
  c->max_bytes = max;
  c->approx_bytes = -1;
  pthread_mutex_init(&c->mu, NULL);
  c->nonce = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)c;
  int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (ufd >= 0) {
    uint64_t r = 0;
    if (read(ufd, &r, sizeof r) == (ssize_t)sizeof r) c->nonce ^= r;
    close(ufd);
  }
  if (gethostname(c->host, sizeof c->host - 1) != 0 || !c->host[0]) strcpy(c->host, "host");
  for (char *p = c->host; *p; p++)
    if (*p == '/' || *p == '.') *p = '_';
  c->last_flush_ns = now_ns();
  *out = c;
  return TRNC_OK;
}

void trnc_cache_destroy(trnc_cache *c) {
  if (!c) return;
  trnc_cache_flush_stats(c);
  for (size_t i = 0; i < c->cap; i++) trnc_compiled_destroy(c->table[i].art);
  free(c->table);
  pthread_mutex_destroy(&c->mu);
  free(c->dir);
  free(c);
}

const char *trnc_cache_dir(const trnc_cache *c) { return c ? c->dir : NULL; }
uint64_t trnc_cache_max_bytes(const trnc_cache *c) { return c ? c->max_bytes : 0; }

/* ---- directory scan ------------------------------------------------------------------ */

typedef enum { F_ENTRY, F_TEMP, F_UNTRUSTED } fkind;

/** Called for every entry and temporary file (path, key of an entry, stat)
 *  and for every shard directory or entry refused by the trust rules
 *  (F_UNTRUSTED: path and the reason in why; not entered). */
typedef void (*scan_fn)(void *ctx, fkind kind, const char *path, const uint8_t key[16],
                        const struct stat *st, const char *why);

static bool is_hex2(const char *s) {
  return s[0] && s[1] && !s[2] && strchr("0123456789abcdef", s[0]) &&
         strchr("0123456789abcdef", s[1]);
}

/** Opens subdirectory name of the open directory d as a DIR stream,
 *  reporting an untrusted one to fn; NULL if it cannot be entered. */
static DIR *enter(DIR *d, const char *name, const char *path, scan_fn fn, void *ctx) {
  const char *why;
  int fd = open_dir_at(dirfd(d), name, false, &why);
  if (fd < 0) {
    if (why) fn(ctx, F_UNTRUSTED, path, NULL, NULL, why);
    return NULL;
  }
  DIR *sub = fdopendir(fd);
  if (!sub) close(fd);
  return sub;
}

/** Calls fn for file `n` of shard directory d3 (DIR/s1/s2, path p2). */
static void scan_file(DIR *d3, const char *p2, const char *s1, const char *s2, const char *n,
                      scan_fn fn, void *ctx) {
  char path[PATH_MAX];
  struct stat st;
  size_t len = strlen(n);
  if (len == 32 + strlen(ENTRY_SUFFIX) && !strcmp(n + 32, ENTRY_SUFFIX)) {
    char hex[33], canon[33];
    uint8_t key[16];
    memcpy(hex, n, 32);
    hex[32] = '\0';
    /* the name must be the canonical (lowercase) form of its shard */
    if (!trnc_cache_key_parse(hex, key)) return;
    trnc_cache_key_hex(key, canon);
    if (strcmp(canon, hex) || memcmp(hex, s1, 2) || memcmp(hex + 2, s2, 2)) return;
    pathf(path, sizeof path, "%s/%s", p2, n);
    if (fstatat(dirfd(d3), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
    const char *why = distrust(&st, S_IFREG);
    if (why) fn(ctx, F_UNTRUSTED, path, key, &st, why);
    else fn(ctx, F_ENTRY, path, key, &st, NULL);
  } else if (!strncmp(n, TEMP_PREFIX, strlen(TEMP_PREFIX))) {
    pathf(path, sizeof path, "%s/%s", p2, n);
    if (fstatat(dirfd(d3), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      fn(ctx, F_TEMP, path, NULL, &st, NULL);
  }
}

/** Walks DIR/xx/yy/ calling fn; directories are entered only when trusted.
 *  False if DIR cannot be read. */
static bool scan(trnc_cache *c, scan_fn fn, void *ctx) {
  const char *why;
  char bad[PATH_MAX];
  int top = open_cache_dir(c, NULL, false, &why, bad, sizeof bad);
  DIR *d1 = top >= 0 ? fdopendir(top) : NULL;
  if (!d1) {
    if (top >= 0) close(top);
    if (why) errno = EACCES;
    return false;
  }
  struct dirent *e1;
  while ((e1 = readdir(d1))) {
    if (!is_hex2(e1->d_name)) continue;
    char p1[PATH_MAX];
    pathf(p1, sizeof p1, "%s/%s", c->dir, e1->d_name);
    DIR *d2 = enter(d1, e1->d_name, p1, fn, ctx);
    if (!d2) continue;
    struct dirent *e2;
    while ((e2 = readdir(d2))) {
      if (!is_hex2(e2->d_name)) continue;
      char p2[PATH_MAX];
      pathf(p2, sizeof p2, "%s/%s", p1, e2->d_name);
      DIR *d3 = enter(d2, e2->d_name, p2, fn, ctx);
      if (!d3) continue;
      struct dirent *e3;
      while ((e3 = readdir(d3))) scan_file(d3, p2, e1->d_name, e2->d_name, e3->d_name, fn, ctx);
      closedir(d3);
    }
    closedir(d2);
  }
  closedir(d1);
  return true;
}

typedef struct listing {
  trnc_cache_entry *e;
  size_t n, cap;
  uint64_t bytes;
  char **temps;              /* paths of temporary files */
  int64_t *temp_mtime;
  size_t ntemps, tcap;
  size_t nuntrusted;         /* refused directories and entries (not listed) */
  char untrusted[PATH_MAX + 64]; /* the first of them and why */
  bool failed;
} listing;

static void list_fn(void *ctx, fkind kind, const char *path, const uint8_t key[16],
                    const struct stat *st, const char *why) {
  listing *l = ctx;
  if (l->failed) return;
  if (kind == F_UNTRUSTED) {
    if (!l->nuntrusted++) pathf(l->untrusted, sizeof l->untrusted, "%s %s", path, why);
  } else if (kind == F_ENTRY) {
    if (l->n == l->cap) {
      size_t cap = l->cap ? l->cap * 2 : 256;
      trnc_cache_entry *ne = realloc(l->e, cap * sizeof *ne);
      if (!ne) {
        l->failed = true;
        return;
      }
      l->e = ne;
      l->cap = cap;
    }
    trnc_cache_entry *x = &l->e[l->n++];
    memcpy(x->key, key, 16);
    x->bytes = (uint64_t)st->st_size;
    x->mtime_ns = mtime_ns(st);
    l->bytes += x->bytes;
  } else {
    if (l->ntemps == l->tcap) {
      size_t cap = l->tcap ? l->tcap * 2 : 16;
      char **nt = realloc(l->temps, cap * sizeof *nt);
      int64_t *nm = realloc(l->temp_mtime, cap * sizeof *nm);
      if (nt) l->temps = nt;
      if (nm) l->temp_mtime = nm;
      if (!nt || !nm) {
        l->failed = true;
        return;
      }
      l->tcap = cap;
    }
    char *p = strdup(path);
    if (!p) {
      l->failed = true;
      return;
    }
    l->temp_mtime[l->ntemps] = mtime_ns(st);
    l->temps[l->ntemps++] = p;
  }
}

static void listing_free(listing *l) {
  for (size_t i = 0; i < l->ntemps; i++) free(l->temps[i]);
  free(l->temps);
  free(l->temp_mtime);
  free(l->e);
}

/** Oldest first; ties broken by key so the order is deterministic. */
static int by_mtime(const void *a, const void *b) {
  const trnc_cache_entry *x = a, *y = b;
  if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
  return memcmp(x->key, y->key, 16);
}

/** Scans into l (sorted LRU first). */
static trnc_status do_list(trnc_cache *c, listing *l, trnc_diags *diags) {
  memset(l, 0, sizeof *l);
  if (!scan(c, list_fn, l))
    return trnc_diag_error(diags, TRNC_ERR_IO, "trnc cache: cannot read %s (%s)", c->dir,
                           strerror(errno));
  if (l->failed) {
    listing_free(l);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc cache: out of memory listing %s", c->dir);
  }
  if (l->n) qsort(l->e, l->n, sizeof *l->e, by_mtime);
  return TRNC_OK;
}

trnc_status trnc_cache_list(trnc_cache *c, trnc_cache_entry **entries, size_t *n,
                            trnc_diags *diags) {
  if (!c || !entries || !n)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_list: NULL argument");
  *entries = NULL;
  *n = 0;
  listing l;
  trnc_status st = do_list(c, &l, diags);
  if (st) return st;
  *entries = l.e;
  *n = l.n;
  l.e = NULL;
  listing_free(&l);
  return TRNC_OK;
}

/* ---- lookups -------------------------------------------------------------------------- */

/** Unlinks `name` in directory sd if it still names the file (dev, ino)
 *  that was read. */
static void remove_if_same(int sd, const char *name, const struct stat *was) {
  struct stat now;
  if (fstatat(sd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == was->st_dev &&
      now.st_ino == was->st_ino)
    unlinkat(sd, name, 0);
}

/** An entry's file name (32 hex digits + suffix) into out[NAME_MAX + 1]. */
static void entry_name(const uint8_t key[16], char *out) {
  char hex[33];
  trnc_cache_key_hex(key, hex);
  pathf(out, NAME_MAX + 1, "%s" ENTRY_SUFFIX, hex);
}

/**
 * Opens entry `name` in the (checked) shard directory sd and reads it:
 * first the header alone, checked (magic, checksum, version, key, length
 * against the file size), then the payload. The file must be a regular
 * file of ours (distrust). On success *bytes (malloc'd) holds *len bytes,
 * *fd_out (may be NULL) the open descriptor (caller closes), *st its stat.
 * Failures (reason in why): TRNC_ERR_IO with why "" when the entry does not
 * exist, or with the reason for a file of another user or writable by
 * others (a miss, left alone); TRNC_ERR_MALFORMED / TRNC_ERR_VERSION for a
 * corrupt or foreign file (the caller removes it); TRNC_ERR_IO, TRNC_ERR_NOMEM.
 */
static trnc_status read_entry(int sd, const char *name, const uint8_t *expect_key, uint8_t **bytes,
                              size_t *len, int *fd_out, struct stat *st, char *why, size_t nwhy) {
  why[0] = '\0';
  *bytes = NULL;
  int fd = openat(sd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return TRNC_ERR_IO;
    pathf(why, nwhy, "cannot open: %s", strerror(errno));
    /* a symlink or a special file under an entry name is foreign */
    if (fstatat(sd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st->st_mode))
      return TRNC_ERR_MALFORMED;
    return TRNC_ERR_IO;
  }
  trnc_status s = TRNC_OK;
  const char *untrusted;
  uint8_t hdr[TRNC_ENTRY_HEADER_BYTES];
  size_t got = 0, plen = 0;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    pathf(why, nwhy, "not a regular file");
    s = S_ISDIR(st->st_mode) ? TRNC_ERR_IO : TRNC_ERR_MALFORMED;
  } else if ((untrusted = distrust(st, S_IFREG))) {
    pathf(why, nwhy, "the file %s (uid %ld, mode %04o); it is ignored, not removed", untrusted,
          (long)st->st_uid, (unsigned)(st->st_mode & 07777));
    s = TRNC_ERR_IO;
  } else if ((got = read_full(fd, hdr, sizeof hdr)) < sizeof hdr && got != (size_t)st->st_size) {
    pathf(why, nwhy, "read error: %s", strerror(errno));
    s = TRNC_ERR_IO;
  } else if (!(s = trnc_entry_check_header(hdr, (uint64_t)st->st_size, expect_key, &plen, why, nwhy))) {
    uint8_t *buf = malloc(TRNC_ENTRY_HEADER_BYTES + plen);
    if (!buf) {
      pathf(why, nwhy, "out of memory");
      s = TRNC_ERR_NOMEM;
    } else {
      memcpy(buf, hdr, sizeof hdr);
      *bytes = buf;
      *len = sizeof hdr + read_full(fd, buf + sizeof hdr, plen);
    }
  }
  if (s || !fd_out) close(fd);
  else *fd_out = fd;
  return s;
}

/**
 * read_entry, then the checksums and deserialization (trnc_entry_load)
 * of an entry of this store: its program was verified before it was
 * written, so it is not verified again. *out (may be NULL: check only)
 * receives the artifact; statuses as read_entry.
 */
static trnc_status load_entry(int sd, const char *name, const uint8_t *expect_key,
                              trnc_compiled **out, int *fd_out, struct stat *st, char *why,
                              size_t nwhy) {
  uint8_t *buf;
  size_t len = 0;
  int fd = -1;
  trnc_status s = read_entry(sd, name, expect_key, &buf, &len, &fd, st, why, nwhy);
  if (s) return s;
  s = trnc_entry_load(buf, len, expect_key, false, NULL, out, why, nwhy);
  free(buf);
  if (s || !fd_out) close(fd);
  else *fd_out = fd;
  return s;
}

trnc_status trnc_cache_get(trnc_cache *c, const uint8_t key[16], const trnc_compiled **out,
                           trnc_diags *diags) {
  if (out) *out = NULL;
  if (!c || !key || !out)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_get: NULL argument");
  pthread_mutex_lock(&c->mu);
  trnc_compiled *art = table_find(c, key);
  if (art) {
    c->n.hits++;
    c->n.memory_hits++;
    *out = art;
  }
  pthread_mutex_unlock(&c->mu);
  if (art) return TRNC_OK;

  char path[PATH_MAX], why[256], name[NAME_MAX + 1];
  entry_path(c, key, path, sizeof path);
  entry_name(key, name);
  struct stat st;
  int fd = -1;
  const char *untrusted;
  trnc_status s = TRNC_ERR_IO;
  int sd = open_shard(c, key, false, &untrusted, why, sizeof why);
  if (sd < 0 && untrusted) {
    WARN(diags, TRNC_ERR_IO,
         "trnc cache: ignoring entry %s: the directory %s %s, so another user could have planted "
         "it; compiling instead. Fix: remove that directory, or chmod 700 it if it is yours",
         path, why, untrusted);
  } else if (sd >= 0) {
    s = load_entry(sd, name, key, &art, &fd, &st, why, sizeof why);
    if (s == TRNC_OK) {
      futimens(fd, NULL); /* LRU: a hit is a use */
      close(fd);
    } else if (s == TRNC_ERR_MALFORMED || s == TRNC_ERR_VERSION) {
      remove_if_same(sd, name, &st);
      WARN(diags, TRNC_ERR_MALFORMED,
           "trnc cache: removed a corrupt entry %s (%s); it counts as a miss and will be "
           "recompiled", path, why);
    } else if (s != TRNC_ERR_IO || why[0]) {
      WARN(diags, s, "trnc cache: cannot read entry %s (%s); compiling instead", path, why);
    }
    close(sd);
  }
  pthread_mutex_lock(&c->mu);
  if (art) {
    trnc_compiled *have = table_find(c, key);
    if (have) { /* another thread loaded it meanwhile */
      trnc_compiled_destroy(art);
      art = have;
    } else if (!table_insert(c, key, art)) {
      pthread_mutex_unlock(&c->mu);
      trnc_compiled_destroy(art);
      return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc cache: out of memory");
    }
    c->n.hits++;
    *out = art;
  } else {
    c->n.misses++;
    if (s == TRNC_ERR_MALFORMED || s == TRNC_ERR_VERSION) c->n.corrupt++;
  }
  pthread_mutex_unlock(&c->mu);
  maybe_flush(c);
  return TRNC_OK;
}

/* ---- stores ------------------------------------------------------------------------------ */

/** Test hook: $TRNC_CACHE_TEST_PAUSE_MS milliseconds of sleep. */
static void test_pause(void) {
  const char *s = getenv("TRNC_CACHE_TEST_PAUSE_MS");
  if (!s || !*s) return;
  long ms = strtol(s, NULL, 10);
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/** True if `name` is a temporary file of a writer on this host that has
 *  exited: .tmp-<32 hex key>-<pid>-<serial>-<16 hex nonce>-<host>. */
static bool temp_of_dead_writer(const trnc_cache *c, const char *name) {
  size_t pre = strlen(TEMP_PREFIX);
  if (strncmp(name, TEMP_PREFIX, pre) || strlen(name) < pre + 33 || name[pre + 32] != '-')
    return false;
  char *end;
  long pid = strtol(name + pre + 33, &end, 10);
  if (*end != '-') return false;
  strtoull(end + 1, &end, 10);
  if (*end != '-' || strlen(end + 1) < 18 || end[17] != '-') return false;
  return writer_dead(c, pid, end + 18);
}

/** Removes the temporary files of exited writers (killed mid-write) from
 *  the shard directory sd. */
static void remove_dead_temps(const trnc_cache *c, int sd) {
  int fd = dup(sd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)))
    if (temp_of_dead_writer(c, e->d_name)) unlinkat(sd, e->d_name, 0);
  closedir(d);
}

/** Writes an entry file (hdr + payload) for key atomically, into a shard
 *  directory that passes the trust rules (made when missing); then removes
 *  the debris of killed writers there. */
static trnc_status write_entry(trnc_cache *c, const uint8_t key[16], const uint8_t *hdr,
                               const uint8_t *payload, size_t plen, trnc_diags *diags) {
  char path[PATH_MAX], name[NAME_MAX + 1], tmp[NAME_MAX + 1], hex[33], bad[PATH_MAX];
  entry_path(c, key, path, sizeof path);
  entry_name(key, name);
  trnc_cache_key_hex(key, hex);
  pthread_mutex_lock(&c->mu);
  uint64_t serial = c->tmp_counter++;
  pthread_mutex_unlock(&c->mu);
  pathf(tmp, sizeof tmp, TEMP_PREFIX "%s-%ld-%" PRIu64 "-%016" PRIx64 "-%s", hex, (long)getpid(),
        serial, c->nonce, c->host);
  const char *untrusted;
  int sd = open_shard(c, key, true, &untrusted, bad, sizeof bad);
  if (sd < 0 && untrusted)
    return WARN(diags, TRNC_ERR_IO,
                "trnc cache: not storing entry %s: the directory %s %s. Fix: remove that "
                "directory, or chmod 700 it if it is yours",
                path, bad, untrusted);
  const char *what = "create the shard directory";
  int fd = -1;
  if (sd < 0) goto fail;
  what = "create a temporary file";
  fd = openat(sd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) goto fail;
  what = "write";
  if (!write_all(fd, hdr, TRNC_ENTRY_HEADER_BYTES) || !write_all(fd, payload, plen)) goto fail;
  what = "fsync";
  if (fsync(fd) != 0) goto fail;
  test_pause();
  what = "close";
  int rc = close(fd);
  fd = -1;
  if (rc != 0) goto fail;
  what = "rename";
  if (renameat(sd, tmp, sd, name) != 0) goto fail;
  fsync(sd);
  remove_dead_temps(c, sd);
  close(sd);
  return TRNC_OK;
fail:;
  int err = errno;
  if (fd >= 0) close(fd);
  if (sd >= 0) {
    unlinkat(sd, tmp, 0);
    close(sd);
  }
  return WARN(diags, TRNC_ERR_IO, "trnc cache: cannot store entry %s: %s failed (%s)", path, what,
              strerror(err));
}

/** Unlinks the listed temporary files of exited writers of this host and,
 *  with stale, those older than STALE_TEMP_NS (writers of other hosts). */
static void remove_debris(const trnc_cache *c, const listing *l, bool stale) {
  int64_t now = now_ns();
  for (size_t i = 0; i < l->ntemps; i++)
    if ((stale && now - l->temp_mtime[i] > STALE_TEMP_NS) ||
        temp_of_dead_writer(c, strrchr(l->temps[i], '/') + 1))
      unlink(l->temps[i]);
}

/** After a store: trim to the bound when the (approximate) size exceeds it.
 *  The size is rescanned every RESCAN_EVERY stores (other processes write
 *  too); trimming goes down to 90% of the bound so it does not run on every
 *  store. */
static void maybe_evict(trnc_cache *c, uint64_t added, trnc_diags *diags) {
  pthread_mutex_lock(&c->mu);
  bool rescan = c->approx_bytes < 0 || ++c->puts_since_scan >= RESCAN_EVERY;
  if (!rescan) c->approx_bytes += (int64_t)added;
  int64_t approx = c->approx_bytes;
  pthread_mutex_unlock(&c->mu);
  if (rescan) {
    listing l;
    if (do_list(c, &l, NULL)) return;
    remove_debris(c, &l, false);
    approx = (int64_t)l.bytes;
    listing_free(&l);
  }
  if ((uint64_t)approx > c->max_bytes) {
    size_t removed = 0;
    uint64_t freed = 0;
    trnc_cache_prune(c, c->max_bytes - c->max_bytes / 10, &removed, &freed, diags);
    approx = approx > (int64_t)freed ? approx - (int64_t)freed : 0;
  }
  pthread_mutex_lock(&c->mu);
  if (rescan) c->puts_since_scan = 0;
  c->approx_bytes = approx;
  pthread_mutex_unlock(&c->mu);
}

/**
 * The tail of every store: after the write (status st) the artifact art
 * (owned) enters the in-process table unless another thread's artifact for
 * key is there already; counts the store; evicts down to the bound after a
 * successful write of `added` bytes. *out (may be NULL) receives the kept
 * artifact. Returns st, or TRNC_ERR_NOMEM when art could not be kept.
 */
static trnc_status keep_stored(trnc_cache *c, const uint8_t key[16], trnc_compiled *art,
                               trnc_status st, uint64_t added, const trnc_compiled **out,
                               trnc_diags *diags) {
  pthread_mutex_lock(&c->mu);
  if (st) c->n.write_errors++;
  else c->n.stores++;
  trnc_status ins = TRNC_OK;
  trnc_compiled *have = table_find(c, key);
  if (have) {
    trnc_compiled_destroy(art);
    art = have;
  } else if (art && !table_insert(c, key, art)) {
    ins = TRNC_ERR_NOMEM;
  }
  pthread_mutex_unlock(&c->mu);
  if (ins) {
    /* cannot keep it: the caller gets nothing rather than a dangling pointer */
    trnc_compiled_destroy(art);
    return trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc cache: out of memory");
  }
  if (out) *out = art;
  if (!st) maybe_evict(c, added, diags);
  maybe_flush(c);
  return st;
}

trnc_status trnc_cache_put(trnc_cache *c, const uint8_t key[16], trnc_compiled *art,
                           const trnc_compiled **out, trnc_diags *diags) {
  if (out) *out = NULL;
  if (!c || !key || !art) {
    trnc_compiled_destroy(art);
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_put: NULL argument");
  }
  pthread_mutex_lock(&c->mu);
  trnc_compiled *have = table_find(c, key);
  pthread_mutex_unlock(&c->mu);
  if (have) { /* stored (or loaded) by another thread meanwhile */
    trnc_compiled_destroy(art);
    if (out) *out = have;
    return TRNC_OK;
  }
  uint8_t *payload = NULL;
  size_t plen = 0;
  trnc_status st = trnc_compiled_serialize(art, &payload, &plen, diags);
  if (!st) {
    uint8_t hdr[TRNC_ENTRY_HEADER_BYTES];
    trnc_entry_header(key, payload, plen, hdr);
    st = write_entry(c, key, hdr, payload, plen, diags);
  }
  trnc_free(payload);
  return keep_stored(c, key, art, st, plen + TRNC_ENTRY_HEADER_BYTES, out, diags);
}

trnc_status trnc_cache_store_host_code(trnc_cache *c, size_t *stored, trnc_diags *diags) {
  if (stored) *stored = 0;
  if (!c) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_store_host_code: NULL cache");
  trnc_status worst = TRNC_OK;
  pthread_mutex_lock(&c->mu);
  size_t cap = c->cap;
  pthread_mutex_unlock(&c->mu);
  for (size_t i = 0; i < cap; i++) {
    pthread_mutex_lock(&c->mu);
    slot sl = i < c->cap ? c->table[i] : (slot){{0}, NULL, false};
    pthread_mutex_unlock(&c->mu);
    trnc_host_object *o = sl.art && !sl.dropped ? atomic_load(&sl.art->host_obj) : NULL;
    bool fresh = true;
    if (!o || !atomic_compare_exchange_strong(&o->fresh, &fresh, false)) continue;
    uint8_t *payload = NULL;
    size_t plen = 0;
    trnc_status st = trnc_compiled_serialize(sl.art, &payload, &plen, diags);
    if (!st) {
      uint8_t hdr[TRNC_ENTRY_HEADER_BYTES];
      trnc_entry_header(sl.key, payload, plen, hdr);
      st = write_entry(c, sl.key, hdr, payload, plen, diags);
    }
    trnc_free(payload);
    if (st) worst = st;
    else if (stored) (*stored)++;
  }
  return worst;
}

trnc_status trnc_cache_entry_bytes(trnc_cache *c, const uint8_t key[16], uint8_t **bytes,
                                   size_t *len, trnc_diags *diags) {
  if (bytes) *bytes = NULL;
  if (len) *len = 0;
  if (!c || !key || !bytes || !len)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc_cache_entry_bytes: NULL argument");
  char path[PATH_MAX], why[256], name[NAME_MAX + 1];
  entry_path(c, key, path, sizeof path);
  entry_name(key, name);
  const char *untrusted;
  int sd = open_shard(c, key, false, &untrusted, why, sizeof why);
  if (sd < 0) {
    if (untrusted)
      WARN(diags, TRNC_ERR_IO, "trnc cache: not shipping entry %s: the directory %s %s", path,
           why, untrusted);
    return TRNC_OK;
  }
  struct stat st;
  uint8_t *buf = NULL;
  size_t n = 0;
  trnc_status s = read_entry(sd, name, key, &buf, &n, NULL, &st, why, sizeof why);
  close(sd);
  const uint8_t *payload;
  size_t plen;
  if (!s) s = trnc_entry_check(buf, n, key, NULL, &payload, &plen, why, sizeof why);
  if (s == TRNC_ERR_NOMEM) {
    free(buf);
    return trnc_diag_error(diags, s, "trnc cache: out of memory reading %s", path);
  }
  if (s) {
    free(buf);
    if (s != TRNC_ERR_IO || why[0])
      WARN(diags, s, "trnc cache: not shipping entry %s (%s)", path, why);
    return TRNC_OK;
  }
  *bytes = buf;
  *len = n;
  return TRNC_OK;
}

trnc_status trnc_cache_put_entry(trnc_cache *c, const uint8_t *bytes, size_t len,
                                 const uint8_t *expect_key, uint8_t key_out[16],
                                 const trnc_compiled **out, trnc_diags *diags) {
  if (out) *out = NULL;
  if (!c || !bytes)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_put_entry: NULL argument");
  uint8_t key[16];
  char why[256];
  trnc_compiled *art = NULL;
  trnc_status s = trnc_entry_load(bytes, len, expect_key, true, key, out ? &art : NULL, why,
                                  sizeof why);
  if (s == TRNC_ERR_NOMEM) return trnc_diag_error(diags, s, "trnc cache: out of memory");
  if (s) return WARN(diags, s, "trnc cache: rejected an entry: %s", why);
  if (key_out) memcpy(key_out, key, sizeof key);
  pthread_mutex_lock(&c->mu);
  trnc_compiled *have = table_find(c, key);
  pthread_mutex_unlock(&c->mu);
  if (have) { /* stored (or loaded) in this process already */
    trnc_compiled_destroy(art);
    if (out) *out = have;
    return TRNC_OK;
  }
  s = write_entry(c, key, bytes, bytes + TRNC_ENTRY_HEADER_BYTES, len - TRNC_ENTRY_HEADER_BYTES,
                  diags);
  return keep_stored(c, key, art, s, len, out, diags);
}

trnc_status trnc_cache_remove(trnc_cache *c, const uint8_t key[16], trnc_diags *diags) {
  if (!c || !key)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_remove: NULL argument");
  pthread_mutex_lock(&c->mu);
  if (c->cap)
    for (size_t i = slot_of(key, c->cap); c->table[i].art; i = (i + 1) & (c->cap - 1))
      if (!memcmp(c->table[i].key, key, 16)) c->table[i].dropped = true;
  c->approx_bytes = -1;
  pthread_mutex_unlock(&c->mu);
  char path[PATH_MAX], name[NAME_MAX + 1], bad[PATH_MAX];
  entry_path(c, key, path, sizeof path);
  entry_name(key, name);
  const char *untrusted;
  int sd = open_shard(c, key, false, &untrusted, bad, sizeof bad);
  if (sd < 0)
    return untrusted ? WARN(diags, TRNC_ERR_IO, "trnc cache: not removing %s: the directory %s %s",
                            path, bad, untrusted)
                     : TRNC_OK;
  int rc = unlinkat(sd, name, 0), err = errno;
  close(sd);
  if (rc != 0 && err != ENOENT)
    return WARN(diags, TRNC_ERR_IO, "trnc cache: cannot remove %s (%s)", path, strerror(err));
  return TRNC_OK;
}

/* ---- maintenance ---------------------------------------------------------------------------- */

void trnc_cache_get_stats(trnc_cache *c, bool with_disk, trnc_cache_stats *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  counters k = c->n;
  pthread_mutex_unlock(&c->mu);
  out->hits = k.hits;
  out->memory_hits = k.memory_hits;
  out->misses = k.misses;
  out->stores = k.stores;
  out->evictions = k.evictions;
  out->corrupt = k.corrupt;
  out->write_errors = k.write_errors;
  if (!with_disk) return;
  trnc_cache_flush_stats(c);
  counters t = {0};
  sum_persisted(c, &t);
  out->total_hits = t.hits;
  out->total_misses = t.misses;
  out->total_stores = t.stores;
  out->total_evictions = t.evictions;
  out->total_corrupt = t.corrupt;
  listing l;
  if (do_list(c, &l, NULL) == TRNC_OK) {
    out->entries = l.n;
    out->bytes = l.bytes;
    out->temp_files = l.ntemps;
    listing_free(&l);
  }
}

/**
 * Reads and fully checks listed entry key as a lookup would, without
 * keeping the artifact. *bytes (may be NULL) receives the entry's bytes on
 * success (free), *sd (may be NULL) the open shard directory (caller closes;
 * -1 when it could not be opened). Statuses as read_entry.
 */
static trnc_status check_listed(const trnc_cache *c, const uint8_t key[16], uint8_t **bytes,
                                size_t *len, int *sd, struct stat *st, char *why, size_t nwhy) {
  char name[NAME_MAX + 1], where[PATH_MAX];
  const char *untrusted;
  entry_name(key, name);
  why[0] = '\0';
  int fd = open_shard(c, key, false, &untrusted, where, sizeof where);
  if (sd) *sd = fd;
  if (fd < 0) return TRNC_ERR_IO; /* removed (or replaced) meanwhile */
  uint8_t *buf = NULL;
  size_t n = 0;
  trnc_status s = read_entry(fd, name, key, &buf, &n, NULL, st, why, nwhy);
  if (!sd) close(fd);
  if (!s) s = trnc_entry_load(buf, n, key, true, NULL, NULL, why, nwhy);
  if (!s && bytes) {
    *bytes = buf;
    *len = n;
  } else {
    free(buf);
  }
  return s;
}

trnc_status trnc_cache_verify(trnc_cache *c, bool remove_bad, size_t *good, size_t *bad,
                              trnc_diags *diags) {
  if (good) *good = 0;
  if (bad) *bad = 0;
  if (!c) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_verify: NULL cache");
  listing l;
  trnc_status st = do_list(c, &l, diags);
  if (st) return st;
  if (l.nuntrusted) {
    if (bad) *bad += l.nuntrusted;
    WARN(diags, TRNC_ERR_IO,
         "trnc cache: ignored %zu directories or entries that another user could have planted "
         "(first: %s); they are never read nor removed. Fix: remove them",
         l.nuntrusted, l.untrusted);
  }
  for (size_t i = 0; i < l.n; i++) {
    char path[PATH_MAX], why[256], name[NAME_MAX + 1];
    entry_path(c, l.e[i].key, path, sizeof path);
    entry_name(l.e[i].key, name);
    struct stat fs;
    int sd = -1;
    trnc_status s = check_listed(c, l.e[i].key, NULL, NULL, &sd, &fs, why, sizeof why);
    if (s == TRNC_OK) {
      if (good) (*good)++;
    } else if (s != TRNC_ERR_IO || why[0]) { /* not removed meanwhile */
      bool rm = remove_bad && (s == TRNC_ERR_MALFORMED || s == TRNC_ERR_VERSION);
      if (bad) (*bad)++;
      WARN(diags, TRNC_ERR_MALFORMED, "trnc cache: bad entry %s: %s%s", path, why,
           rm ? " (removed)" : "");
      if (rm) remove_if_same(sd, name, &fs);
    }
    if (sd >= 0) close(sd);
  }
  listing_free(&l);
  return TRNC_OK;
}

trnc_status trnc_cache_prune(trnc_cache *c, uint64_t max_bytes, size_t *removed, uint64_t *freed,
                             trnc_diags *diags) {
  if (removed) *removed = 0;
  if (freed) *freed = 0;
  if (!c) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_prune: NULL cache");
  listing l;
  trnc_status st = do_list(c, &l, diags);
  if (st) return st;
  remove_debris(c, &l, true);
  uint64_t total = l.bytes;
  size_t nrem = 0;
  uint64_t nfreed = 0;
  for (size_t i = 0; i < l.n && total > max_bytes; i++) {
    char path[PATH_MAX];
    entry_path(c, l.e[i].key, path, sizeof path);
    total -= l.e[i].bytes;
    if (unlink(path) == 0) {
      nrem++;
      nfreed += l.e[i].bytes;
    }
  }
  listing_free(&l);
  pthread_mutex_lock(&c->mu);
  c->n.evictions += nrem;
  pthread_mutex_unlock(&c->mu);
  if (removed) *removed = nrem;
  if (freed) *freed = nfreed;
  return TRNC_OK;
}

trnc_status trnc_cache_clear(trnc_cache *c, size_t *removed, trnc_diags *diags) {
  if (removed) *removed = 0;
  if (!c) return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_clear: NULL cache");
  listing l;
  trnc_status st = do_list(c, &l, diags);
  if (st) return st;
  size_t n = 0;
  for (size_t i = 0; i < l.n; i++) {
    char path[PATH_MAX];
    entry_path(c, l.e[i].key, path, sizeof path);
    n += unlink(path) == 0;
  }
  for (size_t i = 0; i < l.ntemps; i++) unlink(l.temps[i]);
  /* empty shard directories, then the persisted counters */
  for (size_t i = 0; i < l.n; i++) {
    char p[PATH_MAX];
    shard_path(c, l.e[i].key, 2, p, sizeof p);
    rmdir(p);
    shard_path(c, l.e[i].key, 1, p, sizeof p);
    rmdir(p);
  }
  listing_free(&l);
  const char *why;
  char sdir[PATH_MAX];
  int sd = open_cache_dir(c, "stats", false, &why, sdir, sizeof sdir);
  DIR *d = sd >= 0 ? fdopendir(sd) : NULL;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(sd, e->d_name, 0);
    closedir(d);
  } else if (sd >= 0) {
    close(sd);
  }
  pthread_mutex_lock(&c->mu);
  memset(&c->flushed, 0, sizeof c->flushed);
  c->approx_bytes = -1;
  pthread_mutex_unlock(&c->mu);
  if (removed) *removed = n;
  return TRNC_OK;
}

/* ---- bundles ------------------------------------------------------------------------------------ */

/*
 * Bundle file: "TRNCBNDL", u32 LE version, u32 LE zero, u64 LE count, then
 * count records, each a u64 LE length and an entry file's bytes.
 */

static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

trnc_status trnc_cache_export(trnc_cache *c, const char *path, size_t *count, trnc_diags *diags) {
  if (count) *count = 0;
  if (!c || !path)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_export: NULL argument");
  /* the bundle is written beside path and renamed onto it: a symlink, FIFO
   * or device there would be replaced, not written through */
  struct stat ps;
  if (lstat(path, &ps) == 0 && !S_ISREG(ps.st_mode))
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT,
                           "trnc cache export: %s exists and is not a regular file; export to a "
                           "regular file path (the bundle replaces it atomically)", path);
  listing l;
  trnc_status st = do_list(c, &l, diags);
  if (st) return st;
  char tmp[PATH_MAX];
  pathf(tmp, sizeof tmp, "%s.tmp-%ld-%016" PRIx64, path, (long)getpid(), c->nonce);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    st = trnc_diag_error(diags, TRNC_ERR_IO, "trnc cache export: cannot create %s (%s)", tmp,
                         strerror(errno));
    listing_free(&l);
    return st;
  }
  uint8_t head[24] = {0};
  memcpy(head, BUNDLE_MAGIC, 8);
  head[8] = BUNDLE_VERSION;
  bool ok = write_all(fd, head, sizeof head); /* count patched at the end */
  size_t n = 0;
  for (size_t i = 0; ok && i < l.n; i++) {
    char ep[PATH_MAX], why[256];
    entry_path(c, l.e[i].key, ep, sizeof ep);
    struct stat fs;
    uint8_t *buf = NULL;
    size_t got = 0;
    trnc_status s = check_listed(c, l.e[i].key, &buf, &got, NULL, &fs, why, sizeof why);
    if (s) {
      if (s != TRNC_ERR_IO || why[0])
        WARN(diags, TRNC_ERR_MALFORMED, "trnc cache export: skipping bad entry %s: %s", ep, why);
      continue;
    }
    uint8_t len[8];
    le64(len, got);
    ok = write_all(fd, len, 8) && write_all(fd, buf, got);
    free(buf);
    n++;
  }
  listing_free(&l);
  le64(head + 16, n);
  ok = ok && pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    int err = errno;
    unlink(tmp);
    return trnc_diag_error(diags, TRNC_ERR_IO, "trnc cache export: cannot write %s (%s)", path,
                           strerror(err));
  }
  if (count) *count = n;
  return TRNC_OK;
}

trnc_status trnc_cache_import(trnc_cache *c, const char *path, size_t *imported, size_t *rejected,
                              trnc_diags *diags) {
  if (imported) *imported = 0;
  if (rejected) *rejected = 0;
  if (!c || !path)
    return trnc_diag_error(diags, TRNC_ERR_INVALID_ARGUMENT, "trnc_cache_import: NULL argument");
  FILE *f = fopen(path, "rbe");
  if (!f)
    return trnc_diag_error(diags, TRNC_ERR_IO, "trnc cache import: cannot read %s (%s)", path,
                           strerror(errno));
  uint8_t head[24];
  trnc_status st = TRNC_OK;
  if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, BUNDLE_MAGIC, 8)) {
    fclose(f);
    return trnc_diag_error(diags, TRNC_ERR_MALFORMED, "trnc cache import: %s is not a trnc cache bundle",
                           path);
  }
  if (rd64(head + 8) != BUNDLE_VERSION) {
    fclose(f);
    return trnc_diag_error(diags, TRNC_ERR_VERSION,
                           "trnc cache import: %s has bundle version %" PRIu64 ", this trnc reads %d",
                           path, rd64(head + 8), BUNDLE_VERSION);
  }
  uint64_t count = rd64(head + 16);
  size_t nin = 0, nrej = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint8_t lb[8];
    if (fread(lb, 1, 8, f) != 8) {
      st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                           "trnc cache import: %s is truncated at record %" PRIu64, path, i);
      break;
    }
    uint64_t len = rd64(lb);
    if (len < TRNC_ENTRY_HEADER_BYTES || len > TRNC_ARTIFACT_MAX_BYTES + TRNC_ENTRY_HEADER_BYTES) {
      st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                           "trnc cache import: record %" PRIu64 " of %s has a bad length", i, path);
      break;
    }
    uint8_t *buf = malloc((size_t)len);
    if (!buf) {
      st = trnc_diag_error(diags, TRNC_ERR_NOMEM, "trnc cache import: out of memory");
      break;
    }
    if (fread(buf, 1, (size_t)len, f) != len) {
      free(buf);
      st = trnc_diag_error(diags, TRNC_ERR_MALFORMED,
                           "trnc cache import: %s is truncated at record %" PRIu64, path, i);
      break;
    }
    uint8_t key[16];
    char why[256];
    if (trnc_entry_load(buf, (size_t)len, NULL, true, key, NULL, why, sizeof why) != TRNC_OK) {
      WARN(diags, TRNC_ERR_MALFORMED, "trnc cache import: rejected record %" PRIu64 ": %s", i, why);
      nrej++;
    } else if (write_entry(c, key, buf, buf + TRNC_ENTRY_HEADER_BYTES,
                           (size_t)len - TRNC_ENTRY_HEADER_BYTES, diags) == TRNC_OK) {
      nin++;
    } else {
      nrej++;
    }
    free(buf);
  }
  fclose(f);
  if (imported) *imported = nin;
  if (rejected) *rejected = nrej;
  if (nin) maybe_evict(c, 0, diags);
  return st;
}
