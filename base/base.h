/*
 * base.h — what every layer of libtilec uses, below the compiler and the
 * runtime: the calling thread's last error (tc_last_error in the public API),
 * byte buffers whose appends report failure instead of jumping, and the
 * checks of the public API's option records (tc_options, tc_constexpr),
 * which tc_compile, tc_jit and the AOT generator all make. It depends on the
 * public headers only.
 */
#ifndef TILEC_BASE_H
#define TILEC_BASE_H

#include "tilec/tilec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ==== error.c: the thread's last error, byte buffers ==== */

/* Records the message as this thread's tc_last_error() and returns st. */
tc_status rt_fail(tc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends to the last error (e.g. the driver's JIT log after the headline). */
void rt_fail_append(const char *text, size_t len);
/* Empties the last error (tests use it to see that a call set one). */
void rt_last_error_clear(void);

/* A growable byte buffer whose appends report failure instead of jumping. */
typedef struct RtBytes {
    uint8_t *data; /* malloc-owned; NUL-terminated after any append */
    size_t len;
    size_t cap;
} RtBytes;
bool rt_bytes_append(RtBytes *b, const void *p, size_t n);
bool rt_bytes_u8(RtBytes *b, uint8_t v);
bool rt_bytes_u32(RtBytes *b, uint32_t v);    /* little-endian */
bool rt_bytes_u64(RtBytes *b, uint64_t v);    /* little-endian */
bool rt_bytes_str(RtBytes *b, const char *s); /* u32 length + bytes */
void rt_bytes_free(RtBytes *b);

/* ==== check.c: the public option records ==== */

/* The checks tc_compile makes of its options and constexpr values, for every
 * entry point that passes them on: TC_OK, or TC_ERROR_INVALID_ARGUMENT with
 * a message that starts with fn and names the argument and the rule. */
tc_status rt_check_options(const char *fn, const tc_options *opt);
tc_status rt_check_constexprs(const char *fn, const tc_constexpr *cx, size_t num_cx);
/* The rules for specialization facts (opt->params, or a specialize hook's):
 * `what` names the array in the message. */
tc_status rt_check_specs(const char *fn, const char *what, const tc_param_spec *specs, size_t n);
/* ==== small integer helpers ==== */

/* v >= 1 and a power of two. */
static inline bool tc_is_pow2(int64_t v) {
    return v >= 1 && (v & (v - 1)) == 0;
}
/* The smallest n with 2^n >= v (0 for v <= 1). */
static inline int tc_log2i(int64_t v) {
    int n = 0;
    while (((int64_t)1 << n) < v)
        n++;
    return n;
}

#endif
