/*
 * arena.c — bump allocation for everything that lives as long as a module.
 *
 * The AST of a source file, the IR of a module, its types, layouts and names
 * are all allocated from one Arena and freed together with arena_free().
 * Passes never call free(); a value that dies is simply unlinked. Chunks grow
 * geometrically so that a large kernel costs a handful of malloc calls.
 *
 * Out of memory is not recoverable inside the compiler: arena_alloc() returns
 * NULL only if malloc fails, and callers report it as TC_ERROR_OUT_OF_MEMORY
 * through tc_oom() (a longjmp back to the API boundary, see diag.c).
 */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaChunk {
    ArenaChunk *next; /* older chunk */
    size_t used;      /* bytes handed out from data[] */
    size_t size;      /* capacity of data[] */
    _Alignas(16) unsigned char data[];
};

void arena_init(Arena *a) {
    a->head = NULL;
    a->total = 0;
}

void arena_free(Arena *a) {
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void *arena_alloc(Arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    ArenaChunk *c = a->head;
    if (!c || c->size - c->used < size) {
        size_t want = c ? c->size * 2 : 16384;
        if (want > (size_t)1 << 24)
            want = (size_t)1 << 24;
        if (want < size)
            want = size;
        c = malloc(sizeof(ArenaChunk) + want);
        if (!c)
            tc_oom();
        c->next = a->head;
        c->used = 0;
        c->size = want;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

void *arena_grow(Arena *a, void *old, size_t old_size, size_t new_size) {
    void *p = arena_alloc(a, new_size);
    if (old && old_size)
        memcpy(p, old, old_size < new_size ? old_size : new_size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

/* ---- growable byte buffer (malloc-backed; used for output text) ---- */

void buf_init(Buf *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(Buf *b) {
    free(b->data);
    buf_init(b);
}

void buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        tc_oom();
    b->data = p;
    b->cap = cap;
}

void buf_append(Buf *b, const char *s, size_t n) {
    buf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void buf_puts(Buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}
