/*
 * launch_overhead.c — what tilec adds to a kernel launch, in host time:
 * 10,000 launches of an empty kernel (compiled by tilec) through tc_launch,
 * and the same through a bare cuLaunchKernel of the same CUfunction with
 * the same arguments; the cost of a tc_jit call that finds its kernel in
 * memory (it hashes the source); the cost of a standard-library call
 * (tc_softmax_fwd on one row of 32 f32 values), which adds argument checks
 * and a lookup in the context's table of stdlib kernels to its tc_launch;
 * and, on compute capability 9.0 and later, tc_launch of an empty kernel
 * that takes two TMA tensor maps, which it encodes at every launch (a
 * matmul's A and B: f16, rank 2, extents and a stride from the arguments).
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

/* An empty kernel with two tensor maps after its runtime parameters, as
 * tilec's pipeline makes them on sm_90a, and their description. */
static const char tmap_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                               ".visible .entry empty_tmaps(.param .u64 a, .param .u32 m, .param .u32 k, "
                               ".param .u64 s, .param .align 64 .b8 a_tmap[128], .param .align 64 .b8 b_tmap[128])\n"
                               "{\n\tret;\n}\n";
static const tc_param_desc tmap_params[] = {
    {"a", TC_DTYPE_F16, 1, 1}, {"m", TC_DTYPE_I32, 0, 0}, {"k", TC_DTYPE_I32, 0, 0}, {"s", TC_DTYPE_I64, 0, 0}};
static const tc_tensor_map_desc tmap_maps[] = {
    {0, 2, {2, 1, -1, -1, -1}, {0}, {-1, 3, -1, -1, -1}, {0}, {64, 128}, 128},
    {0, 2, {2, 1, -1, -1, -1}, {0}, {-1, 3, -1, -1, -1}, {0}, {64, 64}, 128}};
static const tc_kernel_desc tmap_desc = {"empty_tmaps", 4, 0, 4, tmap_params, 2, tmap_maps, 0};

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
    /* tensor maps are a Hopper feature: elsewhere that way is left out */
    int with_maps = tc_context_compute_capability(ctx) >= 90;
    tc_module *tmap_mod = NULL;
    tc_kernel *tk = NULL;
    int32_t tm = 128, tkk = 64;
    int64_t ts = 64;
    void *targs[] = {&buf, &tm, &tkk, &ts};
    if (with_maps) {
        CHECK(tc_module_load_ptx(ctx, tmap_ptx, strlen(tmap_ptx), &tmap_desc, 1, &tmap_mod));
        CHECK(tc_module_get_kernel(tmap_mod, "empty_tmaps", &tk));
    }

    double *t_tc = malloc(sizeof(double) * (size_t)batches), *t_bare = malloc(sizeof(double) * (size_t)batches);
    double *t_std = malloc(sizeof(double) * (size_t)batches), *t_jit = malloc(sizeof(double) * (size_t)batches);
    double *t_maps = malloc(sizeof(double) * (size_t)batches);
    if (!t_tc || !t_bare || !t_std || !t_jit || !t_maps)
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
        CHECK(tc_stream_synchronize(ctx, stream));
        double t8 = now_ns();
        for (int i = 0; with_maps && i < BATCH; i++)
            CHECK(tc_launch(tk, (tc_dim3){1, 1, 1}, stream, targs, 4));
        double t9 = now_ns();
        if (b >= 0) {
            t_tc[b] = (t1 - t0) / BATCH;
            t_bare[b] = (t3 - t2) / BATCH;
            t_std[b] = (t5 - t4) / BATCH;
            t_jit[b] = (t7 - t6) / BATCH;
            t_maps[b] = (t9 - t8) / BATCH;
        }
    }
    double tc = median(t_tc, batches), raw = median(t_bare, batches), std = median(t_std, batches);
    double jit = median(t_jit, batches), ratio = tc / raw;
    printf("launch_overhead: %d launches each way in batches of %d, median ns per launch\n", batches * BATCH, BATCH);
    printf("launch_overhead: bare cuLaunchKernel   %8.0f ns\n", raw);
    printf("launch_overhead: tc_launch             %8.0f ns  (%.3fx bare)\n", tc, ratio);
    printf("launch_overhead: tc_softmax_fwd 1x32   %8.0f ns  (%.3fx bare)\n", std, std / raw);
    printf("launch_overhead: tc_jit, in memory     %8.0f ns  (no launch)\n", jit);
    if (with_maps) {
        double maps = median(t_maps, batches);
        printf("launch_overhead: tc_launch, 2 maps     %8.0f ns  (%.3fx bare; %.0f ns per map encoded)\n", maps,
               maps / raw, (maps - tc) / 2);
    }
    if (max_ratio > 0)
        printf("launch_overhead: ratio tc_launch/bare = %.3f (limit %.2f) %s\n", ratio, max_ratio,
               ratio <= max_ratio ? "ok" : "TOO SLOW");
    else
        printf("launch_overhead: ratio tc_launch/bare = %.3f\n", ratio);
    CHECK(tc_module_unload(tmap_mod));
    CHECK(tc_stream_destroy(ctx, stream));
    CHECK(tc_mem_free(ctx, buf));
    CHECK(tc_context_destroy(ctx));
    free(t_tc);
    free(t_bare);
    free(t_std);
    free(t_jit);
    free(t_maps);
    return max_ratio > 0 && ratio > max_ratio ? 1 : 0;
}
