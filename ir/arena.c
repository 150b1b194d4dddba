#include "ir/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trnc_arena_block {
  trnc_arena_block *prev;
  size_t cap;
  size_t used;
  _Alignas(16) unsigned char data[];
};

#define TRNC_ARENA_BLOCK (64u * 1024u)

void trnc_arena_init(trnc_arena *a, size_t limit) {
  a->head = NULL;
  a->bytes = 0;
  a->limit = limit;
}

void trnc_arena_release(trnc_arena *a) {
  trnc_arena_block *b = a->head;
  while (b) {
    trnc_arena_block *p = b->prev;
    free(b);
    b = p;
  }
  a->head = NULL;
  a->bytes = 0;
}

void *trnc_arena_alloc(trnc_arena *a, size_t n) {
  if (n == 0) n = 1;
  if (n > SIZE_MAX / 2) return NULL;
  size_t need = (n + 15u) & ~(size_t)15u;
  if (a->limit && (a->bytes + need > a->limit || a->bytes + need < a->bytes))
    return NULL;
  trnc_arena_block *b = a->head;
  if (!b || b->cap - b->used < need) {
    size_t cap = need > TRNC_ARENA_BLOCK ? need : TRNC_ARENA_BLOCK;
    b = malloc(sizeof(*b) + cap);
    if (!b) return NULL;
    b->prev = a->head;
    b->cap = cap;
    b->used = 0;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += need;
  a->bytes += need;
  memset(p, 0, n);
  return p;
}

void *trnc_arena_array(trnc_arena *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  return trnc_arena_alloc(a, count * size);
}

char *trnc_arena_strndup(trnc_arena *a, const char *s, size_t n) {
  char *p = trnc_arena_alloc(a, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *trnc_arena_strdup(trnc_arena *a, const char *s) {
  if (!s) s = "";
  return trnc_arena_strndup(a, s, strlen(s));
}

char *trnc_arena_printf(trnc_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *p = trnc_arena_alloc(a, (size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
