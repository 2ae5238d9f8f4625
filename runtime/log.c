/*
 * log.c — the compile log: where a JIT call's lines go (RtLogger).
 */
#include "runtime/runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_log_level(void) {
    const char *v = secure_getenv("TILEC_LOG");
    return v && *v ? atoi(v) : 0;
}

bool rt_log_env_wants(int level) {
    return env_log_level() >= level;
}

static void emit(tc_log_fn fn, void *user, int level, const char *line) {
    if (fn)
        fn(user, line);
    else if (env_log_level() >= level)
        fprintf(stderr, "%s\n", line);
}

void rt_log(const RtLogger *lg, int level, const char *fmt, ...) {
    bool queued = lg && lg->queue;
    bool to_callback = lg && lg->fn;
    if (!queued && !to_callback && env_log_level() < level)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!queued) {
        emit(lg ? lg->fn : NULL, lg ? lg->user : NULL, level, line);
        return;
    }
    /* out of memory: the line is dropped, the work it describes goes on */
    uint8_t lv = (uint8_t)level;
    if (rt_bytes_append(lg->queue, &lv, 1) && !rt_bytes_append(lg->queue, line, strlen(line) + 1))
        lg->queue->len--;
}

void rt_log_deliver(RtBytes *queue, tc_log_fn fn, void *user) {
    for (size_t at = 0; at < queue->len;) {
        int level = queue->data[at];
        const char *line = (const char *)queue->data + at + 1;
        size_t n = strlen(line);
        emit(fn, user, level, line);
        at += 1 + n + 1;
    }
    rt_bytes_free(queue);
}

/* ---- resetting the last error ---- */

