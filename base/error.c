/*
 * error.c — the calling thread's last error (tc_last_error) and the
 * checked byte buffers every layer uses.
 *
 * The last error is a fixed thread-local buffer: no allocation, so that
 * reporting an out-of-memory condition cannot itself fail, and nothing to
 * free when a thread exits. Long texts (a driver JIT log) are cut at the
 * buffer's size with a note saying so.
 */
#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAST_ERROR_SIZE 8192

static _Thread_local char last_error[LAST_ERROR_SIZE];

const char *tc_last_error(void) {
    return last_error;
}

static void mark_truncated(void) {
    static const char note[] = "\n[... truncated]";
    memcpy(last_error + LAST_ERROR_SIZE - sizeof note, note, sizeof note);
}

tc_status rt_fail(tc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n >= LAST_ERROR_SIZE)
        mark_truncated();
    return st;
}

void rt_fail_append(const char *text, size_t len) {
    size_t used = strlen(last_error);
    size_t room = LAST_ERROR_SIZE - 1 - used;
    size_t n = len < room ? len : room;
    memcpy(last_error + used, text, n);
    last_error[used + n] = 0;
    if (n < len)
        mark_truncated();
}

/* ---- bytes ---- */

bool rt_bytes_append(RtBytes *b, const void *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2)
                return false;
            cap *= 2;
        }
        uint8_t *d = realloc(b->data, cap);
        if (!d)
            return false;
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

bool rt_bytes_u8(RtBytes *b, uint8_t v) {
    return rt_bytes_append(b, &v, 1);
}

bool rt_bytes_u32(RtBytes *b, uint32_t v) {
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return rt_bytes_append(b, le, 4);
}

bool rt_bytes_u64(RtBytes *b, uint64_t v) {
    return rt_bytes_u32(b, (uint32_t)v) && rt_bytes_u32(b, (uint32_t)(v >> 32));
}

bool rt_bytes_str(RtBytes *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    return n <= UINT32_MAX && rt_bytes_u32(b, (uint32_t)n) && rt_bytes_append(b, s, n);
}

void rt_bytes_free(RtBytes *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void rt_last_error_clear(void) {
    last_error[0] = 0;
}
