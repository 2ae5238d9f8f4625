/*
 * test_softmax.c — tc_softmax_fwd and tc_softmax_bwd on the GPU against a
 * float64 CPU reference.
 *
 *     test_softmax [--quick]     (--quick: only cases of at most 2^20 elements)
 *
 * Every dtype (f16, bf16, f32) x width (1, 7, 1000, 1024, 4095, 4096, 12288,
 * 20479, 65536, 100003, 130001: one tile, one tile with a ragged end, the
 * loop over tiles, the long rows (up to 37 rows: rows split over a cluster
 * where their stride keeps them aligned, on sm_90, and the 16384 tile);
 * 20479 dense is an odd stride with aligned pointers, each row starting at a
 * different offset from a 16-byte boundary: the loops' realigned windows,
 * whose last tile the offset pushes past 5 x 4096) x row count (1, 3, 37,
 * 1000), with dense rows; for 3 and 37 rows also with strided rows (a stride
 * that keeps rows 16-byte aligned: the vectorized specialization), unaligned
 * ones (pointers one element past an aligned address, an odd stride: the
 * scalar specialization) and odd strides from aligned pointers (the realigned
 * windows, with gaps between the rows). Inputs are fresh
 * random numbers; the gaps between rows and the elements around each matrix
 * hold NaN, so a kernel that reads outside the rows produces NaN, and are
 * checked to be left alone in the outputs. One line per case; gpu_test.h
 * has the metric and the exit status (dx is compared relative to
 * max(||dx||, ||y * dy||), the size of the terms it is the difference of).
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

static bool run_case(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols, const GtLayout *lay) {
    Mat x, out, y, dy, dx;
    memset(&x, 0, sizeof x), memset(&out, 0, sizeof out), memset(&y, 0, sizeof y), memset(&dy, 0, sizeof dy),
        memset(&dx, 0, sizeof dx);
    bool ok = mat_alloc(ctx, &x, t, rows, cols, lay->kind) && mat_alloc(ctx, &out, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &y, t, rows, cols, lay->kind) && mat_alloc(ctx, &dy, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &dx, t, rows, cols, lay->kind);
    GtErr fwd = {0}, bwd = {0};
    size_t clob_fwd = 0, clob_bwd = 0;
    double *ref = malloc(sizeof(double) * (size_t)cols);
    ok = ok && ref;

    /* forward */
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                gt_put(t, x.host, mat_at(&x, r, c), 2.0 * gt_normal());
        ok = mat_upload(ctx, &x) && mat_poison(ctx, &out) &&
             GT_OK(tc_softmax_fwd(ctx, stream, t, mat_base(&out), mat_base(&x), rows, cols, out.stride, x.stride)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &out);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++) {
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < cols; c++)
                m = fmax(m, gt_get(t, x.host, mat_at(&x, r, c)));
            for (int64_t c = 0; c < cols; c++)
                s += ref[c] = exp(gt_get(t, x.host, mat_at(&x, r, c)) - m);
            for (int64_t c = 0; c < cols; c++) {
                ref[c] /= s;
                gt_err_add(&fwd, gt_get(t, out.host, mat_at(&out, r, c)), ref[c]);
                gt_put(t, y.host, mat_at(&y, r, c), ref[c]); /* the backward pass's y: a real softmax */
            }
        }
        clob_fwd = mat_clobbered(&out);
    }

    /* backward */
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                gt_put(t, dy.host, mat_at(&dy, r, c), gt_normal());
        ok = mat_upload(ctx, &y) && mat_upload(ctx, &dy) && mat_poison(ctx, &dx) &&
             GT_OK(tc_softmax_bwd(ctx, stream, t, mat_base(&dx), mat_base(&y), mat_base(&dy), rows, cols, dx.stride,
                                  y.stride, dy.stride)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &dx);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++) {
            double dot = 0;
            for (int64_t c = 0; c < cols; c++)
                dot += gt_get(t, y.host, mat_at(&y, r, c)) * gt_get(t, dy.host, mat_at(&dy, r, c));
            for (int64_t c = 0; c < cols; c++) {
                double yv = gt_get(t, y.host, mat_at(&y, r, c)), g = gt_get(t, dy.host, mat_at(&dy, r, c));
                gt_err_add_scaled(&bwd, gt_get(t, dx.host, mat_at(&dx, r, c)), yv * (g - dot), yv * g);
            }
        }
        clob_bwd = mat_clobbered(&dx);
    }

    double tol = gt_tolerance(t), ef = gt_err_value(&fwd), eb = gt_err_value(&bwd);
    bool pass_f = ok && gt_record(t, ef, tol) && clob_fwd == 0;
    bool pass_b = ok && gt_record(t, eb, tol) && clob_bwd == 0;
    bool pass = ok && pass_f && pass_b;
    printf("softmax %-4s rows=%-5lld cols=%-6lld %-9s stride=%-6lld fwd %.2e bwd %.2e (tol %.0e)", gt_dtype_name(t),
           (long long)rows, (long long)cols, lay->name, (long long)x.stride, ef, eb, tol);
    if (clob_fwd || clob_bwd)
        printf(" wrote %zu/%zu elements outside the rows", clob_fwd, clob_bwd);
    if (fwd.nan || bwd.nan)
        printf(" %zu/%zu NaN or unwritten", fwd.nan, bwd.nan);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    free(ref);
    mat_free(ctx, &x), mat_free(ctx, &out), mat_free(ctx, &y), mat_free(ctx, &dy), mat_free(ctx, &dx);
    return pass;
}

int main(int argc, char **argv) {
    return gt_rowwise_main("test_softmax", argc, argv, run_case);
}
