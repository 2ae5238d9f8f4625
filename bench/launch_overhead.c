/*
 * launch_overhead.c — what tilec adds to a kernel launch, in host time:
 * 10,000 launches of an empty kernel (compiled by tilec) through tc_launch,
 * and the same through a bare cuLaunchKernel of the same CUfunction with
 * the same arguments; the cost of a tc_jit call that finds its kernel in
 * memory (it hashes the source); and the cost of a standard-library call
 * (tc_softmax_fwd on one row of 32 f32 values), which adds argument checks
 * and a lookup in the context's table of stdlib kernels to its tc_launch.
 *
 *     launch_overhead [LAUNCHES] [--max-ratio R]     (default 10000 launches)
 *
 * Launches are timed with the CPU clock (CLOCK_MONOTONIC) around the launch
 * loop, after a warm-up, in batches of 250 with a stream synchronization
 * between batches (outside the timing), so that the driver's queue never
 * fills and no launch waits for the GPU; the four ways alternate batch by
 * batch, and each figure is the median over batches of the time per call.
 * Prints one line per way and the ratio tc_launch / bare; run.sh collects
 * the lines starting with "launch_overhead:". Exit status 0, or 77 without
 * a GPU, 1 if a call fails or, with --max-ratio, if tc_launch costs more
 * than R times a bare launch (CTest and run.sh check R = 1.2 on the GPU).
 */
#include <tilec/stdlib.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char source[] = "kernel empty(f32* x, i32 n) {\n}\n";

typedef int (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void **, void **);

enum { BATCH = 250, WARMUP_BATCHES = 8 };

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "launch_overhead: %s failed: %s\n%s\n", #call, tc_status_string(st_), tc_last_error());    \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    int launches = 10000;
    double max_ratio = 0; /* 0: no limit */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-ratio") == 0 && i + 1 < argc)
            max_ratio = atof(argv[++i]);
        else if (argv[i][0] != '-')
            launches = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: launch_overhead [LAUNCHES] [--max-ratio R]\n");
            return 2;
        }
    }
    int batches = launches / BATCH > 0 ? launches / BATCH : 1;
    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("SKIP: no GPU (%s)\n", tc_last_error());
        return 77;
    }
    CHECK(st);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *sym = cuda ? dlsym(cuda, "cuLaunchKernel") : NULL;
    LaunchFn bare;
    memcpy(&bare, &sym, sizeof bare);
    if (!sym) {
        fprintf(stderr, "launch_overhead: cannot find cuLaunchKernel in libcuda.so.1\n");
        return 1;
    }

    CUdeviceptr buf;
    CHECK(tc_mem_alloc(ctx, 4096, &buf));
    int32_t n = 32;
    void *args[] = {&buf, &n};
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = source;
    req.path = "launch_overhead.tile";
    req.kernel = "empty";
    req.args = args; /* specialized on the arguments' alignment, as a caller of tc_jit in a loop would */
    req.num_args = 2;
    tc_kernel *k;
    CHECK(tc_jit(ctx, &req, &k));
    CUfunction fn = tc_kernel_function(k);
    const tc_kernel_desc *d = tc_kernel_get_desc(k);
    unsigned block = 32u * (unsigned)d->num_warps, shared = (unsigned)d->shared_bytes;
    CUstream stream;
    CHECK(tc_stream_create(ctx, &stream));
    CHECK(tc_softmax_fwd(ctx, stream, TC_DTYPE_F32, buf + 2048, buf, 1, 32, 32, 32)); /* compiles it once */
    CHECK(tc_stream_synchronize(ctx, stream));

    double *t_tc = malloc(sizeof(double) * (size_t)batches), *t_bare = malloc(sizeof(double) * (size_t)batches);
    double *t_std = malloc(sizeof(double) * (size_t)batches), *t_jit = malloc(sizeof(double) * (size_t)batches);
    if (!t_tc || !t_bare || !t_std || !t_jit)
        return 1;
    for (int b = -WARMUP_BATCHES; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            CHECK(tc_launch(k, (tc_dim3){1, 1, 1}, stream, args, 2));
        double t1 = now_ns();
        CHECK(tc_stream_synchronize(ctx, stream));
        double t2 = now_ns();
        for (int i = 0; i < BATCH; i++)
            if (bare(fn, 1, 1, 1, block, 1, 1, shared, stream, args, NULL) != 0) {
                fprintf(stderr, "launch_overhead: cuLaunchKernel failed\n");
                return 1;
            }
        double t3 = now_ns();
        CHECK(tc_stream_synchronize(ctx, stream));
        double t4 = now_ns();
        for (int i = 0; i < BATCH; i++)
            CHECK(tc_softmax_fwd(ctx, stream, TC_DTYPE_F32, buf + 2048, buf, 1, 32, 32, 32));
        double t5 = now_ns();
        CHECK(tc_stream_synchronize(ctx, stream));
        double t6 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            tc_kernel *again;
            CHECK(tc_jit(ctx, &req, &again));
            if (again != k) {
                fprintf(stderr, "launch_overhead: tc_jit returned another kernel\n");
                return 1;
            }
        }
        double t7 = now_ns();
        if (b >= 0) {
            t_tc[b] = (t1 - t0) / BATCH;
            t_bare[b] = (t3 - t2) / BATCH;
            t_std[b] = (t5 - t4) / BATCH;
            t_jit[b] = (t7 - t6) / BATCH;
        }
    }
    double tc = median(t_tc, batches), raw = median(t_bare, batches), std = median(t_std, batches);
    double jit = median(t_jit, batches), ratio = tc / raw;
    printf("launch_overhead: %d launches each way in batches of %d, median ns per launch\n", batches * BATCH, BATCH);
    printf("launch_overhead: bare cuLaunchKernel   %8.0f ns\n", raw);
    printf("launch_overhead: tc_launch             %8.0f ns  (%.3fx bare)\n", tc, ratio);
    printf("launch_overhead: tc_softmax_fwd 1x32   %8.0f ns  (%.3fx bare)\n", std, std / raw);
    printf("launch_overhead: tc_jit, in memory     %8.0f ns  (no launch)\n", jit);
    if (max_ratio > 0)
        printf("launch_overhead: ratio tc_launch/bare = %.3f (limit %.2f) %s\n", ratio, max_ratio,
               ratio <= max_ratio ? "ok" : "TOO SLOW");
    else
        printf("launch_overhead: ratio tc_launch/bare = %.3f\n", ratio);
    CHECK(tc_stream_destroy(ctx, stream));
    CHECK(tc_mem_free(ctx, buf));
    CHECK(tc_context_destroy(ctx));
    free(t_tc);
    free(t_bare);
    free(t_std);
    free(t_jit);
    return max_ratio > 0 && ratio > max_ratio ? 1 : 0;
}
