/*
 * arena.h — bump allocator: one arena per compilation, freed at once.
 */
#ifndef TRNC_IR_ARENA_H
#define TRNC_IR_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct trnc_arena_block trnc_arena_block;

typedef struct trnc_arena {
  trnc_arena_block *head;  /* current block (singly linked to older ones) */
  size_t bytes;            /* total bytes handed out */
  size_t limit;            /* 0 = unlimited; else allocations past this fail */
} trnc_arena;

/** Initializes an empty arena. limit: maximum bytes (0 = unlimited). */
void trnc_arena_init(trnc_arena *a, size_t limit);
/** Frees every block. The arena may be reused after trnc_arena_init. */
void trnc_arena_release(trnc_arena *a);
/** n bytes, 16-byte aligned, zero-filled; NULL when out of memory or over
 *  the limit (also when count*size overflows in trnc_arena_array). */
void *trnc_arena_alloc(trnc_arena *a, size_t n);
void *trnc_arena_array(trnc_arena *a, size_t count, size_t size);
/** Copy of a NUL-terminated string (NULL -> ""). NULL on allocation failure. */
char *trnc_arena_strdup(trnc_arena *a, const char *s);
/** Copy of n bytes of s, NUL-terminated. */
char *trnc_arena_strndup(trnc_arena *a, const char *s, size_t n);
/** printf into the arena. */
char *trnc_arena_printf(trnc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
