/*
 * Threads: what the public headers says may be shared, shared by 8 threads at
 * once. The suite is meant for ThreadSanitizer (build.sh's
 * TILEC_SANITIZE=thread runs it), which reports a data race even when the
 * results happen to agree; without it the checks below still catch
 * disagreeing results and deadlocks (CTest's timeout).
 *
 * Worker threads never CHECK (the harness's counters are not atomic): each
 * records what it saw, and the main thread checks after joining.
 *
 * The context tests need a driver: a GPU, or tests/gpu's fake libcuda
 * (CTest's unit.fake.threads). Without one they say so and check nothing.
 */
#include "runtime/runtime.h"
#include "tilec/stdlib.h"
#include "unit.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 8 };

typedef void *(*ThreadFn)(void *);

static void run_threads(ThreadFn fn, void *args, size_t arg_size) {
    pthread_t ids[THREADS];
    int started = 0;
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&ids[t], NULL, fn, (char *)args + (size_t)t * arg_size) == 0)
            started++;
        else
            break;
    CHECK_EQ_INT(started, THREADS);
    for (int t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
}

/* ---- tc_version: filled on first use, from every thread at once ---- */

typedef struct {
    const char *text;
} VersionThread;

static void *version_thread(void *arg) {
    ((VersionThread *)arg)->text = tc_version();
    return NULL;
}

TEST(test_version_threads) {
    VersionThread v[THREADS] = {{0}};
    run_threads(version_thread, v, sizeof v[0]);
    for (int t = 0; t < THREADS; t++)
        CHECK(v[t].text && strncmp(v[t].text, "tilec ", 6) == 0 && strcmp(v[t].text, v[0].text) == 0);
}

/* ---- the compiler: one tc_compiler per thread, compiling at once ---- */

typedef struct {
    tc_status st;
    char *ptx;
    char error[256];
} CompileThread;

static void *compile_thread(void *arg) {
    CompileThread *c = arg;
    const char *text = NULL;
    size_t len = 0;
    tc_compiler *cc = NULL;
    tc_diagnostics *diags = NULL;
    tc_binary *bin = NULL;
    tc_target target = {"sm_90a"};
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    tc_source src = {"softmax.tile", NULL, 0};
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 256, 0}};
    if ((c->st = tc_stdlib_source("softmax.tile", &text, &len)) != TC_OK ||
        (c->st = tc_compiler_create(&target, &cc)) != TC_OK || (c->st = tc_diagnostics_create(&diags)) != TC_OK)
        goto done;
    src.text = text;
    src.len = len;
    c->st = tc_compile(cc, &src, "softmax_fwd", cx, 1, &opt, &bin, diags);
    if (c->st == TC_OK)
        c->ptx = strdup(tc_binary_text(bin, NULL));
done:
    if (c->st != TC_OK)
        snprintf(c->error, sizeof c->error, "%s%s", diags ? tc_diagnostics_text(diags) : "", tc_last_error());
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    tc_compiler_destroy(cc);
    return NULL;
}

TEST(test_compile_threads) {
    CompileThread c[THREADS];
    memset(c, 0, sizeof c);
    run_threads(compile_thread, c, sizeof c[0]);
    for (int t = 0; t < THREADS; t++) {
        CHECK_EQ_INT(c[t].st, TC_OK);
        if (c[t].st != TC_OK)
            fprintf(stderr, "  thread %d: %s\n", t, c[t].error);
        CHECK(c[t].ptx && c[0].ptx && strstr(c[t].ptx, ".entry softmax_fwd") && strcmp(c[t].ptx, c[0].ptx) == 0);
    }
    for (int t = 0; t < THREADS; t++)
        free(c[t].ptx);
}

/* ---- contexts ---- */

static bool have_driver(const char *what) {
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        fprintf(stderr, "  threads: no driver (%s): %s not checked\n", tc_last_error(), what);
        return false;
    }
    tc_context_destroy(ctx);
    return true;
}

/* Lines logged while a lock is held wait in a queue, in order, with their
 * levels, and reach the callback only when delivered. */
typedef struct {
    int count;
    char text[4][64];
} Seen;

static void seen_line(void *user, const char *line) {
    Seen *s = user;
    if (s->count < 4)
        snprintf(s->text[s->count], sizeof s->text[0], "%s", line);
    s->count++;
}

TEST(test_log_queue) {
    RtBytes queue = {0};
    RtLogger lg = {NULL, NULL, &queue};
    rt_log(&lg, 1, "tilec: compiled %s", "a");
    rt_log(&lg, 2, "tilec: cache hit %d", 2);
    rt_log(&lg, 1, "%s", "");
    CHECK(queue.len > 0);
    Seen s = {0};
    rt_log_deliver(&queue, seen_line, &s);
    CHECK_EQ_INT(s.count, 3);
    CHECK_EQ_STR(s.text[0], "tilec: compiled a");
    CHECK_EQ_STR(s.text[1], "tilec: cache hit 2");
    CHECK_EQ_STR(s.text[2], "");
    CHECK(queue.len == 0 && queue.data == NULL);
    /* an empty queue delivers nothing */
    rt_log_deliver(&queue, seen_line, &s);
    CHECK_EQ_INT(s.count, 3);
}

/* softmax of `rows` rows of `cols` floats through the standard library,
 * compared with the CPU; 0 when they agree. */
static int softmax_rows(tc_context *ctx, int rows, int cols, unsigned seed) {
    size_t n = (size_t)rows * (size_t)cols, bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    CUdeviceptr dx = 0, dy = 0;
    int bad = 1;
    if (!x || !y)
        goto done;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 64.0f - 2.0f;
    if (tc_mem_alloc(ctx, bytes, &dx) != TC_OK || tc_mem_alloc(ctx, bytes, &dy) != TC_OK ||
        tc_memcpy_htod(ctx, dx, x, bytes) != TC_OK || tc_memset_d8(ctx, dy, 0xff, bytes) != TC_OK ||
        tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, dy, dx, rows, cols, cols, cols) != TC_OK ||
        tc_stream_synchronize(ctx, NULL) != TC_OK || tc_memcpy_dtoh(ctx, y, dy, bytes) != TC_OK)
        goto done;
    bad = 0;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols, *yr = y + (size_t)r * cols;
        double m = -INFINITY, s = 0;
        for (int c = 0; c < cols; c++)
            m = fmax(m, xr[c]);
        for (int c = 0; c < cols; c++)
            s += exp(xr[c] - m);
        for (int c = 0; c < cols; c++)
            bad |= !(fabs(yr[c] - exp(xr[c] - m) / s) <= 1e-5);
    }
done:
    if (dx)
        tc_mem_free(ctx, dx);
    if (dy)
        tc_mem_free(ctx, dy);
    free(x);
    free(y);
    return bad;
}

/* A log callback that counts its lines and, on the first compile line,
 * calls back into the context that logged it: replaces itself and asks
 * tc_jit for the same kernel again. */
typedef struct {
    tc_context *ctx;
    const tc_jit_request *req;
    atomic_int lines, compiled, reentered;
    tc_status reentry_status;
} Reentry;

static void counting_log(void *user, const char *line) {
    Reentry *r = user;
    atomic_fetch_add(&r->lines, 1);
    if (strstr(line, "tilec: compiled "))
        atomic_fetch_add(&r->compiled, 1);
}

static void reentrant_log(void *user, const char *line) {
    Reentry *r = user;
    atomic_fetch_add(&r->lines, 1);
    if (!strstr(line, "tilec: compiled ") || atomic_fetch_add(&r->reentered, 1) != 0)
        return;
    atomic_fetch_add(&r->compiled, 1);
    tc_kernel *k = NULL;
    r->reentry_status = tc_context_set_log(r->ctx, counting_log, r);
    if (r->reentry_status == TC_OK)
        r->reentry_status = tc_jit(r->ctx, r->req, &k);
    if (r->reentry_status == TC_OK && !k)
        r->reentry_status = TC_ERROR_INTERNAL;
}

static void softmax_request(tc_jit_request *req, const tc_constexpr *cx, size_t num_cx) {
    const char *text = NULL;
    tc_jit_request_init(req);
    tc_stdlib_source("softmax.tile", &text, NULL);
    req->source = text;
    req->kernel = "softmax_fwd";
    req->constexprs = cx;
    req->num_constexprs = num_cx;
    req->no_disk_cache = 1;
}

TEST(test_log_reentry) {
    if (!have_driver("a log callback that calls back into tilec"))
        return;
    tc_context *ctx;
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_OK);
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 128, 0}};
    tc_jit_request req;
    softmax_request(&req, cx, 1);
    Reentry r = {.ctx = ctx, .req = &req};
    CHECK_EQ_INT(tc_context_set_log(ctx, reentrant_log, &r), TC_OK);
    tc_kernel *k = NULL;
    CHECK_EQ_INT(tc_jit(ctx, &req, &k), TC_OK); /* deadlocked when callbacks ran under the JIT lock */
    CHECK(k != NULL);
    CHECK_EQ_INT(atomic_load(&r.reentered), 1);
    CHECK_EQ_INT(r.reentry_status, TC_OK);
    CHECK_EQ_INT(atomic_load(&r.compiled), 1); /* the nested tc_jit found the kernel in memory */
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
}

/* Each thread its own context: log callback, JIT, a standard-library call. */
typedef struct {
    Reentry log;
    tc_status st;
    int wrong;
    int id;
} ContextThread;

static void *context_thread(void *arg) {
    ContextThread *c = arg;
    tc_context *ctx = NULL;
    if ((c->st = tc_context_create(0, &ctx)) != TC_OK)
        return NULL;
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 64 << (c->id % 3), 0}};
    tc_jit_request req;
    softmax_request(&req, cx, 1);
    tc_kernel *k = NULL;
    if ((c->st = tc_context_set_log(ctx, counting_log, &c->log)) == TC_OK && (c->st = tc_jit(ctx, &req, &k)) == TC_OK)
        c->wrong = softmax_rows(ctx, 3 + c->id, 37 + 11 * c->id, 7u * (unsigned)c->id + 1u);
    tc_status st = tc_context_destroy(ctx);
    if (c->st == TC_OK)
        c->st = st;
    return NULL;
}

TEST(test_context_per_thread) {
    if (!have_driver("one context per thread"))
        return;
    static ContextThread c[THREADS];
    memset(c, 0, sizeof c);
    for (int t = 0; t < THREADS; t++)
        c[t].id = t;
    run_threads(context_thread, c, sizeof c[0]);
    for (int t = 0; t < THREADS; t++) {
        CHECK_EQ_INT(c[t].st, TC_OK);
        CHECK_EQ_INT(c[t].wrong, 0);
        CHECK(atomic_load(&c[t].log.compiled) >= 1); /* tc_jit's kernel, and the plan the stdlib picks */
    }
}

/* One context shared by every thread: the same and different kernels. */
typedef struct {
    tc_context *ctx;
    int id;
    int wrong;
} SharedThread;

static void *shared_thread(void *arg) {
    SharedThread *s = arg;
    tc_context_make_current(s->ctx);
    for (int i = 0; i < 4; i++)
        s->wrong += softmax_rows(s->ctx, 2 + i, 16 + 100 * ((s->id + i) % 4), (unsigned)(s->id * 31 + i));
    return NULL;
}

TEST(test_context_shared) {
    if (!have_driver("a context shared by threads"))
        return;
    tc_context *ctx;
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_OK);
    SharedThread s[THREADS];
    for (int t = 0; t < THREADS; t++)
        s[t] = (SharedThread){ctx, t, 0};
    run_threads(shared_thread, s, sizeof s[0]);
    for (int t = 0; t < THREADS; t++)
        CHECK_EQ_INT(s[t].wrong, 0);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
}

UNIT_SUITE(threads, test_log_queue, test_version_threads, test_compile_threads, test_log_reentry, test_context_per_thread,
           test_context_shared)
