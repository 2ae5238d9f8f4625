/*
 * tuning.c — the standard library's side of the tuning table
 * (docs/autotune.md): which tuned configuration a library kernel takes.
 *
 * The library's kernels declare their search spaces (@autotune in lib/); the
 * table shipped with the library (lib/tuning.tsv, built in) holds
 * tc_autotune's choices for them on the GPUs they were tuned on, made by
 * bench/tune.c, and the user's own table (tuning.tsv in the cache directory,
 * written by tc_autotune and tilec tune) takes precedence. A family asks with
 * the kernel's identity, the constexprs that make it (its dtype, head dim,
 * orders... but not the tuned tile nor what follows from it, such as
 * EVEN_K) and the key values; without an entry it keeps its own plan.
 * TILEC_TUNED=0 in the environment makes every family keep its own plan,
 * for comparisons.
 */
#include "runtime/runtime.h"
#include "runtime/tune.h"
#include "stdlib/stdlib_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char rt_stdlib_tuning_text[]; /* generated from lib/tuning.tsv */
extern const size_t rt_stdlib_tuning_text_len;

enum { MAX_SOURCES = 32 };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static RtTuneTable shipped;
static uint8_t digests[MAX_SOURCES][32]; /* of rt_stdlib_sources[i] */
static bool disabled;

static void init(void) {
    char why[256];
    if (rt_tune_table_parse(rt_stdlib_tuning_text, rt_stdlib_tuning_text_len, &shipped, why, sizeof why) != TC_OK)
        fprintf(stderr, "tilec: lib/tuning.tsv: %s\n", why); /* the build's own file: a bug */
    for (size_t i = 0; i < rt_stdlib_num_sources && i < MAX_SOURCES; i++)
        rt_tune_source_digest(rt_stdlib_sources[i].text, rt_stdlib_sources[i].len, digests[i]);
    const char *e = secure_getenv("TILEC_TUNED");
    disabled = e && strcmp(e, "0") == 0;
}

/* The answers of recent lookups: a lookup hashes its kernel's identity
 * (a few microseconds), a memo hit costs a comparison. Keyed by everything
 * the answer depends on; the table's generation says whether it changed. */
enum { MEMO_SLOTS = 64, MEMO_CX = 16, MEMO_KEYS = 4 };
typedef struct Memo {
    bool used, found;
    uint64_t generation;
    char gpu[256];             /* the answer depends on the context through its device's name */
    const char *file, *kernel; /* the families' string literals */
    char arch[16];
    size_t num_cx, num_keys;
    tc_constexpr cx[MEMO_CX];
    int64_t keys[MEMO_KEYS];
    RtStdlibTuned result;
} Memo;
static Memo memo[MEMO_SLOTS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool memo_matches(const Memo *m, const tc_context *ctx, const char *arch, const char *file, const char *kernel,
                         const tc_constexpr *cx, size_t num_cx, const int64_t *keys, size_t num_keys) {
    if (!m->used || strcmp(m->gpu, tc_context_device_name(ctx)) != 0 || m->file != file || m->kernel != kernel || m->num_cx != num_cx ||
        m->num_keys != num_keys || strcmp(m->arch, arch) != 0 || m->generation != rt_tune_generation())
        return false;
    for (size_t i = 0; i < num_keys; i++)
        if (m->keys[i] != rt_tune_bucket(keys[i]))
            return false;
    for (size_t i = 0; i < num_cx; i++)
        if (strcmp(m->cx[i].name, cx[i].name) != 0 || m->cx[i].kind != cx[i].kind || m->cx[i].i != cx[i].i ||
            (cx[i].kind == TC_CONSTEXPR_FLOAT && m->cx[i].f != cx[i].f))
            return false;
    return true;
}

static size_t memo_slot(const char *kernel, const int64_t *keys, size_t num_keys, const tc_constexpr *cx,
                        size_t num_cx) {
    uint64_t h = (uint64_t)(uintptr_t)kernel * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < num_keys; i++)
        h = (h ^ (uint64_t)rt_tune_bucket(keys[i])) * 0x100000001b3ull;
    for (size_t i = 0; i < num_cx; i++)
        h = (h ^ (uint64_t)cx[i].i) * 0x100000001b3ull;
    return (size_t)(h >> 32) % MEMO_SLOTS;
}

static bool lookup(tc_context *ctx, const char *arch, const char *file, const char *kernel, const tc_constexpr *cx,
                   size_t num_cx, const int64_t *keys, size_t num_keys, RtStdlibTuned *out);

/* The lookup, memoized, for the kernel whose identity is cx. */
static bool tuned(tc_context *ctx, const char *arch, const char *file, const char *kernel, const tc_constexpr *cx,
                  size_t num_cx, const int64_t *keys, size_t num_keys, RtStdlibTuned *out) {
    memset(out, 0, sizeof *out);
    if (!ctx)
        return false;
    pthread_once(&once, init);
    if (disabled)
        return false;
    bool memoizable = num_cx <= MEMO_CX && num_keys <= MEMO_KEYS && strlen(arch) < sizeof memo[0].arch;
    size_t slot = memo_slot(kernel, keys, num_keys, cx, num_cx);
    if (memoizable) {
        pthread_mutex_lock(&memo_lock);
        const Memo *m = &memo[slot];
        bool hit = memo_matches(m, ctx, arch, file, kernel, cx, num_cx, keys, num_keys);
        bool found = hit && m->found;
        if (found)
            *out = m->result;
        pthread_mutex_unlock(&memo_lock);
        if (hit)
            return found;
    }
    uint64_t generation = rt_tune_generation(); /* before the lookup: a change during it misses next time */
    bool found = lookup(ctx, arch, file, kernel, cx, num_cx, keys, num_keys, out);
    if (memoizable) {
        pthread_mutex_lock(&memo_lock);
        Memo *m = &memo[slot];
        m->used = true;
        m->found = found;
        m->generation = generation;
        snprintf(m->gpu, sizeof m->gpu, "%s", tc_context_device_name(ctx));
        m->file = file;
        m->kernel = kernel;
        snprintf(m->arch, sizeof m->arch, "%s", arch);
        m->num_cx = num_cx;
        m->num_keys = num_keys;
        memcpy(m->cx, cx, num_cx * sizeof *cx);
        for (size_t i = 0; i < num_keys; i++)
            m->keys[i] = rt_tune_bucket(keys[i]);
        m->result = *out;
        pthread_mutex_unlock(&memo_lock);
    }
    return found;
}

bool rt_stdlib_tuned_plan(tc_context *ctx, const char *arch, const char *file, const char *kernel,
                          const tc_constexpr *plan_cx, size_t num_plan_cx, const char *const *leave_out,
                          const int64_t *keys, size_t num_keys, RtStdlibTuned *out) {
    tc_constexpr id[MEMO_CX];
    size_t n = 0;
    for (size_t i = 0; i < num_plan_cx; i++) {
        bool skip = false;
        for (const char *const *q = leave_out; *q && !skip; q++)
            skip = strcmp(*q, plan_cx[i].name) == 0;
        if (!skip) {
            if (n == MEMO_CX) {
                memset(out, 0, sizeof *out);
                return false;
            }
            id[n++] = plan_cx[i];
        }
    }
    return tuned(ctx, arch, file, kernel, id, n, keys, num_keys, out);
}

/* The lookup itself: the kernel's identity, then the tables. */
static bool lookup(tc_context *ctx, const char *arch, const char *file, const char *kernel, const tc_constexpr *cx,
                   size_t num_cx, const int64_t *keys, size_t num_keys, RtStdlibTuned *out) {
    size_t src = 0;
    while (src < rt_stdlib_num_sources && src < MAX_SOURCES && strcmp(rt_stdlib_sources[src].name, file) != 0)
        src++;
    if (src == rt_stdlib_num_sources || src == MAX_SOURCES)
        return false;
    char hash[65];
    rt_tune_kernel_hash(digests[src], kernel, cx, num_cx, NULL, arch, hash);
    RtTuneEntry e;
    if (!rt_tune_find(ctx, hash, keys, num_keys, &shipped, &e))
        return false;
    out->num_warps = out->num_stages = 0;
    out->warp_specialize = -1;
    for (size_t i = 0; i < e.num_fields; i++) {
        const RtTuneField *f = &e.fields[i];
        if (strcmp(f->name, "num_warps") == 0)
            out->num_warps = (int)f->value;
        else if (strcmp(f->name, "num_stages") == 0)
            out->num_stages = (int)f->value;
        else if (strcmp(f->name, "warp_specialize") == 0)
            out->warp_specialize = (int)f->value;
        else if (strcmp(f->name, "min_programs_per_sm") == 0)
            out->min_programs_per_sm = (int)f->value;
        else if (out->num_fields < RT_STDLIB_TUNED_FIELDS) {
            snprintf(out->names[out->num_fields], sizeof out->names[0], "%s", f->name);
            out->values[out->num_fields++] = f->value;
        }
    }
    return true;
}

void rt_stdlib_tuned_options(const RtStdlibTuned *t, int *num_warps, int *num_stages, int *warp_specialize) {
    if (t->num_warps > 0)
        *num_warps = t->num_warps;
    if (t->num_stages > 0)
        *num_stages = t->num_stages;
    if (t->warp_specialize >= 0)
        *warp_specialize = t->warp_specialize;
}

bool rt_stdlib_tuned_value(const RtStdlibTuned *t, const char *name, int64_t *v) {
    for (size_t i = 0; i < t->num_fields; i++)
        if (strcmp(t->names[i], name) == 0) {
            *v = t->values[i];
            return true;
        }
    return false;
}
