/*
 * stdlib_rmsnorm.c — RMSNorm through the standard library's C entry point:
 * no kernel source, no tc_jit, no launch by hand. tc_rmsnorm_fwd picks and
 * compiles the specialization for the row width on its first call (the
 * disk cache makes the next run's first call fast too) and launches it.
 *
 *     stdlib_rmsnorm [ROWS [COLS]]        (default 4096 x 4096, bf16)
 *
 * Checks y and rstd against a float64 CPU reference and prints the error
 * and the time per call. Exit status: 0 correct, 1 wrong or failed, 77
 * skipped (no NVIDIA driver or GPU on this machine).
 */
#include <tilec/stdlib.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "f16.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "stdlib_rmsnorm: %s failed: %s\n%s\n", #call, tc_status_string(st_), tc_last_error());     \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    int64_t rows = argc > 1 ? atoll(argv[1]) : 4096, cols = argc > 2 ? atoll(argv[2]) : 4096;
    if (rows < 1 || cols < 1) {
        fprintf(stderr, "usage: stdlib_rmsnorm [ROWS [COLS]]\n");
        return 1;
    }
    const float eps = 1e-6f;
    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("stdlib_rmsnorm: skipped: %s\n", tc_last_error());
        return 77;
    }
    CHECK(st);

    /* inputs: x is rows x cols, weight has cols elements, both bf16 */
    size_t n = (size_t)rows * (size_t)cols;
    uint16_t *hx = malloc(n * 2), *hy = malloc(n * 2), *hw = malloc((size_t)cols * 2);
    float *hr = malloc((size_t)rows * 4);
    if (!hx || !hy || !hw || !hr)
        return 1;
    srand((unsigned)time(NULL));
    for (size_t i = 0; i < n; i++)
        hx[i] = f32_to_bf16((float)rand() / (float)RAND_MAX * 4.0f - 2.0f);
    for (int64_t c = 0; c < cols; c++)
        hw[c] = f32_to_bf16(0.5f + (float)rand() / (float)RAND_MAX);
    CUdeviceptr x, y, w, rstd;
    CHECK(tc_mem_alloc(ctx, n * 2, &x));
    CHECK(tc_mem_alloc(ctx, n * 2, &y));
    CHECK(tc_mem_alloc(ctx, (size_t)cols * 2, &w));
    CHECK(tc_mem_alloc(ctx, (size_t)rows * 4, &rstd));
    CHECK(tc_memcpy_htod(ctx, x, hx, n * 2));
    CHECK(tc_memcpy_htod(ctx, w, hw, (size_t)cols * 2));
    CHECK(tc_memset_d8(ctx, y, 0xff, n * 2)); /* NaN: an element left unwritten shows */

    /* the call: rows of `cols` elements, dense (stride = cols), default stream */
    CHECK(tc_rmsnorm_fwd(ctx, NULL, TC_DTYPE_BF16, y, rstd, x, w, rows, cols, cols, cols, eps));
    CHECK(tc_stream_synchronize(ctx, NULL));
    CHECK(tc_memcpy_dtoh(ctx, hy, y, n * 2));
    CHECK(tc_memcpy_dtoh(ctx, hr, rstd, (size_t)rows * 4));

    /* ||y - ref|| / ||ref|| in float64; NaN (unwritten) fails */
    double d2 = 0, r2 = 0, rstd_err = 0;
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t c = 0; c < cols; c++) {
            double v = bf16_to_f32(hx[r * cols + c]);
            ss += v * v;
        }
        double rs = 1.0 / sqrt(ss / (double)cols + eps);
        double e = fabs(hr[r] - rs) / rs;
        rstd_err = isnan(e) ? INFINITY : fmax(rstd_err, e); /* NaN (unwritten) fails: fmax would drop it */
        for (int64_t c = 0; c < cols; c++) {
            double want = bf16_to_f32(hx[r * cols + c]) * rs * bf16_to_f32(hw[c]), got = bf16_to_f32(hy[r * cols + c]);
            d2 += (got - want) * (got - want);
            r2 += want * want;
        }
    }
    double err = sqrt(d2 / r2);

    /* time it: the entry point as a program calls it */
    tc_timer *t;
    CHECK(tc_timer_create(ctx, &t));
    CHECK(tc_timer_start(t, NULL));
    int reps = tc_context_interpreted(ctx) ? 1 : 20; /* the interpreter (TILEC_INTERPRET=1) is slow */
    for (int i = 0; i < reps; i++)
        CHECK(tc_rmsnorm_fwd(ctx, NULL, TC_DTYPE_BF16, y, rstd, x, w, rows, cols, cols, cols, eps));
    CHECK(tc_timer_stop(t, NULL));
    float ms;
    CHECK(tc_timer_elapsed_ms(t, &ms));
    CHECK(tc_timer_destroy(t));
    double us = ms / reps * 1e3;
    printf("stdlib_rmsnorm: %lld x %lld bf16: ||y - ref|| / ||ref|| = %.2e, max rstd error %.2e, %.1f us per call "
           "(%.0f GB/s)\n",
           (long long)rows, (long long)cols, err, rstd_err, us, 4.0 * (double)n / (us * 1e-6) / 1e9);

    CHECK(tc_mem_free(ctx, x));
    CHECK(tc_mem_free(ctx, y));
    CHECK(tc_mem_free(ctx, w));
    CHECK(tc_mem_free(ctx, rstd));
    CHECK(tc_context_destroy(ctx));
    free(hx);
    free(hy);
    free(hw);
    free(hr);
    bool ok = err < 1e-2 && rstd_err < 1e-5;
    printf("stdlib_rmsnorm: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
