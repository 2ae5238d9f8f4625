/*
 * launch_overhead.c — host time per launch: tc_launch against a bare
 * cuLaunchKernel of the same function with the same arguments, and the
 * cost of a tc_jit call that finds its kernel in memory.
 *
 *     launch_overhead [BATCHES]
 *
 * Launches go in batches of 256 (the driver's queue never fills, so no
 * launch waits for the GPU), alternating the two ways; the figures are the
 * medians over batches. Exit status: 0 when tc_launch costs at most 1.2x a
 * bare launch, 1 otherwise, 77 without a GPU.
 */
#include <tilec/runtime.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char source[] = "kernel touch(f32* x, i32 n) {\n"
                             "    let i = arange(0, 128);\n"
                             "    store(x + i, f32(i), i < n);\n"
                             "}\n";

typedef int (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "launch_overhead: %s failed: %s\n%s\n", #call, tc_status_string(st_), tc_last_error());    \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

enum { BATCH = 256 };

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 200;
    if (batches < 1)
        batches = 1;
    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("launch_overhead: skipped: %s\n", tc_last_error());
        return 77;
    }
    CHECK(st);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    LaunchFn bare = NULL;
    void *sym = lib ? dlsym(lib, "cuLaunchKernel") : NULL;
    memcpy(&bare, &sym, sizeof sym);
    if (!bare) {
        fprintf(stderr, "launch_overhead: no cuLaunchKernel\n");
        return 1;
    }

    CUdeviceptr x;
    CHECK(tc_mem_alloc(ctx, 128 * sizeof(float), &x));
    int32_t n = 100;
    void *args[] = {&x, &n};
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = source;
    req.kernel = "touch";
    req.args = args;
    req.num_args = 2;
    tc_kernel *k;
    CHECK(tc_jit(ctx, &req, &k));
    CUfunction fn = tc_kernel_function(k);
    const tc_kernel_desc *d = tc_kernel_get_desc(k);
    unsigned block = 32u * (unsigned)d->num_warps, shared = (unsigned)d->shared_bytes;
    tc_dim3 grid = {1, 1, 1};

    double *t_tc = malloc(sizeof(double) * (size_t)batches), *t_bare = malloc(sizeof(double) * (size_t)batches);
    double *t_jit = malloc(sizeof(double) * (size_t)batches);
    for (int b = -10; b < batches; b++) { /* 10 warm-up batches */
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            if (tc_launch(k, grid, NULL, args, 2) != TC_OK)
                return 1;
        double t1 = now_ns();
        CHECK(tc_stream_synchronize(ctx, NULL));
        double t2 = now_ns();
        for (int i = 0; i < BATCH; i++)
            if (bare(fn, 1, 1, 1, block, 1, 1, shared, NULL, args, NULL) != 0)
                return 1;
        double t3 = now_ns();
        CHECK(tc_stream_synchronize(ctx, NULL));
        double t4 = now_ns();
        tc_kernel *again;
        for (int i = 0; i < BATCH; i++)
            if (tc_jit(ctx, &req, &again) != TC_OK || again != k)
                return 1;
        double t5 = now_ns();
        if (b >= 0) {
            t_tc[b] = (t1 - t0) / BATCH;
            t_bare[b] = (t3 - t2) / BATCH;
            t_jit[b] = (t5 - t4) / BATCH;
        }
    }
    qsort(t_tc, (size_t)batches, sizeof(double), cmp);
    qsort(t_bare, (size_t)batches, sizeof(double), cmp);
    qsort(t_jit, (size_t)batches, sizeof(double), cmp);
    double tc = t_tc[batches / 2], raw = t_bare[batches / 2], ratio = tc / raw;
    printf("launch_overhead: bare cuLaunchKernel %.0f ns, tc_launch %.0f ns per launch: %.3fx (limit 1.2x) %s\n", raw,
           tc, ratio, ratio <= 1.2 ? "ok" : "TOO SLOW");
    printf("launch_overhead: tc_jit of a kernel already in memory: %.0f ns per call\n", t_jit[batches / 2]);
    CHECK(tc_mem_free(ctx, x));
    CHECK(tc_context_destroy(ctx));
    free(t_tc);
    free(t_bare);
    free(t_jit);
    return ratio <= 1.2 ? 0 : 1;
}
