/*
 * jit_softmax.c — compile a kernel from a source string at run time, launch
 * it on random data, and check it against a CPU reference. No Python, no
 * CUDA toolkit: libtilec and the NVIDIA driver.
 *
 *     jit_softmax [ROWS [COLS]]        (default 4099 x 1000)
 *
 * The first run compiles (TILEC_LOG=1 shows it) and stores the PTX and the
 * driver's cubin under $TILEC_CACHE_DIR (default ~/.cache/tilec); later runs
 * load the cubin from there. Exit status: 0 correct, 1 wrong or failed,
 * 77 skipped (no NVIDIA driver or GPU on this machine).
 */
#include <tilec/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "f16.h"

/* One program per row; a row fits in one tile of BLOCK columns. */
static const char source[] = "kernel softmax(f16* out, const f16* x, i64 stride, i32 n_cols, constexpr i32 BLOCK) {\n"
                             "    let row  = i64(program_id(0));\n"
                             "    let cols = arange(0, BLOCK);\n"
                             "    let mask = cols < n_cols;\n"
                             "    let v = f32(load(x + row * stride + cols, mask, -inf));\n"
                             "    let e = exp(v - max(v, 0));\n"
                             "    store(out + row * stride + cols, f16(e / sum(e, 0)), mask);\n"
                             "}\n";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void print_log(void *user, const char *line) {
    (void)user;
    printf("  %s\n", line);
}

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "jit_softmax: %s failed: %s\n%s\n", #call, tc_status_string(st_), tc_last_error());        \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    int64_t rows = argc > 1 ? atoll(argv[1]) : 4099;
    int32_t cols = argc > 2 ? atoi(argv[2]) : 1000;
    if (rows < 1 || cols < 1 || cols > 16384) {
        fprintf(stderr, "usage: jit_softmax [ROWS [COLS <= 16384]]\n");
        return 1;
    }
    int64_t block = 32;
    while (block < cols)
        block *= 2;

    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("jit_softmax: skipped: %s\n", tc_last_error());
        return 77;
    }
    CHECK(st);
    CHECK(tc_context_set_log(ctx, print_log, NULL));
    printf("jit_softmax: compute capability %d, compiling for %s\n", tc_context_compute_capability(ctx),
           tc_context_arch(ctx));

    /* data */
    size_t n = (size_t)rows * (size_t)cols;
    uint16_t *host_x = malloc(n * sizeof *host_x), *host_out = malloc(n * sizeof *host_out);
    if (!host_x || !host_out)
        return 1;
    srand((unsigned)time(NULL));
    for (size_t i = 0; i < n; i++)
        host_x[i] = f32_to_f16((float)rand() / (float)RAND_MAX * 8.0f - 4.0f);
    CUdeviceptr x, out;
    CHECK(tc_mem_alloc(ctx, n * 2, &x));
    CHECK(tc_mem_alloc(ctx, n * 2, &out));
    CHECK(tc_memcpy_htod(ctx, x, host_x, n * 2));
    CHECK(tc_memset_d8(ctx, out, 0xff, n * 2)); /* poison: f16 NaN everywhere */

    /* compile (or find in the cache), specialized on the arguments' alignment */
    int64_t stride = cols;
    void *args[] = {&out, &x, &stride, &cols};
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, block, 0}};
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = source;
    req.path = "jit_softmax.tile"; /* the name diagnostics show */
    req.kernel = "softmax";
    req.constexprs = cx;
    req.num_constexprs = 1;
    req.args = args;
    req.num_args = 4;
    tc_kernel *k, *again;
    double t0 = now_ms();
    CHECK(tc_jit(ctx, &req, &k));
    double t1 = now_ms();
    CHECK(tc_jit(ctx, &req, &again)); /* the in-memory table */
    double t2 = now_ms();
    printf("jit_softmax: tc_jit %.2f ms, again %.4f ms (%s)\n", t1 - t0, t2 - t1,
           k == again ? "same kernel" : "NEW KERNEL?");

    /* run */
    CHECK(tc_launch(k, (tc_dim3){(unsigned)rows, 1, 1}, NULL, args, 4));
    CHECK(tc_stream_synchronize(ctx, NULL));
    CHECK(tc_memcpy_dtoh(ctx, host_out, out, n * 2));

    /* check against float64 */
    double max_err = 0;
    size_t bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *xr = host_x + r * cols;
        double m = -INFINITY, s = 0;
        for (int32_t c = 0; c < cols; c++)
            m = fmax(m, f16_to_f32(xr[c]));
        for (int32_t c = 0; c < cols; c++)
            s += exp(f16_to_f32(xr[c]) - m);
        for (int32_t c = 0; c < cols; c++) {
            double want = exp(f16_to_f32(xr[c]) - m) / s, got = f16_to_f32(host_out[r * cols + c]);
            double err = fabs(got - want);
            if (!(err <= 2e-3)) /* NaN (an unwritten element) fails too */
                bad++;
            if (!(err <= max_err))
                max_err = isnan(err) ? INFINITY : fmax(max_err, err);
        }
    }

    /* time it */
    tc_timer *timer;
    CHECK(tc_timer_create(ctx, &timer));
    CHECK(tc_timer_start(timer, NULL));
    int reps = tc_context_interpreted(ctx) ? 1 : 20; /* the interpreter (TILEC_INTERPRET=1) is slow */
    for (int i = 0; i < reps; i++)
        CHECK(tc_launch(k, (tc_dim3){(unsigned)rows, 1, 1}, NULL, args, 4));
    CHECK(tc_timer_stop(timer, NULL));
    float ms;
    CHECK(tc_timer_elapsed_ms(timer, &ms));
    CHECK(tc_timer_destroy(timer));

    printf("jit_softmax: %lld x %d f16, max |error| = %.3g, %zu bad elements, %.1f us per launch (%.0f GB/s)\n",
           (long long)rows, cols, max_err, bad, ms / reps * 1e3, 4.0 * (double)n / (ms / reps * 1e-3) / 1e9);
    CHECK(tc_mem_free(ctx, x));
    CHECK(tc_mem_free(ctx, out));
    CHECK(tc_context_destroy(ctx));
    free(host_x);
    free(host_out);
    if (bad) {
        printf("jit_softmax: FAILED\n");
        return 1;
    }
    printf("jit_softmax: ok\n");
    return 0;
}
