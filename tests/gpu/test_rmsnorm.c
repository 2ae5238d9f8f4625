/*
 * test_rmsnorm.c — tc_rmsnorm_fwd and tc_rmsnorm_bwd on the GPU against a
 * float64 CPU reference.
 *
 *     test_rmsnorm [--quick]     (--quick: only cases of at most 2^20 elements)
 *
 * The cases are test_softmax.c's: f16, bf16, f32 x widths 1 .. 130001 x 1, 3,
 * 37, 1000 rows, dense, and for 3 and 37 rows strided (aligned) and
 * unaligned too (the weight, rstd and dweight then start one element past
 * an aligned address as well). Checked: y and rstd of the forward pass; dx
 * and dweight of the backward pass, which takes the forward pass's rstd
 * from the device. dweight starts from random values, since the kernel adds
 * into it (the reference adds to the same values). Every output is poisoned
 * first, and what lies outside it must stay poisoned. dx is compared
 * relative to max(||dx||, ||rstd * dy * weight||): with few columns
 * (one, above all) dx is a small difference of nearly equal terms that f32
 * cannot resolve better than relative to the terms; dweight relative to
 * max(||dweight||, || |initial| + sum of |dy * xhat| ||), the scale of the
 * rounding of a sum of rows terms of either sign.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

static const float EPS = 1e-5f;

static bool run_case(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols, const GtLayout *lay) {
    Mat x, w, y, rstd, dy, dx, dw;
    Mat *all[] = {&x, &w, &y, &rstd, &dy, &dx, &dw};
    for (size_t i = 0; i < 7; i++)
        memset(all[i], 0, sizeof(Mat));
    bool ok = mat_alloc(ctx, &x, t, rows, cols, lay->kind) && mat_alloc(ctx, &w, t, 1, cols, lay->kind) &&
              mat_alloc(ctx, &y, t, rows, cols, lay->kind) && mat_alloc(ctx, &rstd, TC_DTYPE_F32, 1, rows, lay->kind) &&
              mat_alloc(ctx, &dy, t, rows, cols, lay->kind) && mat_alloc(ctx, &dx, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &dw, TC_DTYPE_F32, 1, cols, lay->kind);
    double *ref_rstd = malloc(sizeof(double) * (size_t)rows), *ref_dw = malloc(sizeof(double) * (size_t)cols);
    double *abs_dw = malloc(sizeof(double) * (size_t)cols); /* sum of |terms|: the scale of dweight's rounding */
    ok = ok && ref_rstd && ref_dw && abs_dw;
    GtErr ey = {0}, er = {0}, edx = {0}, edw = {0};
    size_t clob = 0;

    /* forward */
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                gt_put(t, x.host, mat_at(&x, r, c), gt_normal());
        for (int64_t c = 0; c < cols; c++)
            gt_put(t, w.host, mat_at(&w, 0, c), gt_uniform_in(0.5, 1.5));
        ok = mat_upload(ctx, &x) && mat_upload(ctx, &w) && mat_poison(ctx, &y) && mat_poison(ctx, &rstd) &&
             GT_OK(tc_rmsnorm_fwd(ctx, stream, t, mat_base(&y), mat_base(&rstd), mat_base(&x), mat_base(&w), rows, cols,
                                  y.stride, x.stride, EPS)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &y) && mat_download(ctx, &rstd);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0;
            for (int64_t c = 0; c < cols; c++) {
                double v = gt_get(t, x.host, mat_at(&x, r, c));
                ss += v * v;
            }
            double rs = ref_rstd[r] = 1.0 / sqrt(ss / (double)cols + (double)EPS);
            gt_err_add(&er, gt_get(TC_DTYPE_F32, rstd.host, mat_at(&rstd, 0, r)), rs);
            for (int64_t c = 0; c < cols; c++)
                gt_err_add(&ey, gt_get(t, y.host, mat_at(&y, r, c)),
                           gt_get(t, x.host, mat_at(&x, r, c)) * rs * gt_get(t, w.host, mat_at(&w, 0, c)));
        }
        clob += mat_clobbered(&y) + mat_clobbered(&rstd);
    }

    /* backward, with the device's rstd; dweight accumulates onto random values */
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                gt_put(t, dy.host, mat_at(&dy, r, c), gt_normal());
        for (int64_t c = 0; c < cols; c++) {
            ref_dw[c] = gt_put_get(TC_DTYPE_F32, dw.host, mat_at(&dw, 0, c), gt_uniform_in(-1, 1));
            abs_dw[c] = fabs(ref_dw[c]);
        }
        ok = mat_upload(ctx, &dy) && mat_poison(ctx, &dx) && mat_upload(ctx, &dw) &&
             GT_OK(tc_rmsnorm_bwd(ctx, stream, t, mat_base(&dx), mat_base(&dw), mat_base(&dy), mat_base(&x),
                                  mat_base(&w), mat_base(&rstd), rows, cols, dx.stride, dy.stride, x.stride)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &dx) && mat_download(ctx, &dw);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++) {
            double rs = ref_rstd[r], mean = 0;
            for (int64_t c = 0; c < cols; c++) {
                double xhat = gt_get(t, x.host, mat_at(&x, r, c)) * rs;
                double g = gt_get(t, dy.host, mat_at(&dy, r, c)) * gt_get(t, w.host, mat_at(&w, 0, c));
                mean += g * xhat;
            }
            mean /= (double)cols;
            for (int64_t c = 0; c < cols; c++) {
                double xhat = gt_get(t, x.host, mat_at(&x, r, c)) * rs, d = gt_get(t, dy.host, mat_at(&dy, r, c));
                double g = d * gt_get(t, w.host, mat_at(&w, 0, c));
                gt_err_add_scaled(&edx, gt_get(t, dx.host, mat_at(&dx, r, c)), rs * (g - xhat * mean), rs * g);
                ref_dw[c] += d * xhat;
                abs_dw[c] += fabs(d * xhat);
            }
        }
        for (int64_t c = 0; c < cols; c++)
            gt_err_add_scaled(&edw, gt_get(TC_DTYPE_F32, dw.host, mat_at(&dw, 0, c)), ref_dw[c], abs_dw[c]);
        clob += mat_clobbered(&dx) + mat_clobbered(&dw);
    }

    /* y and dx in the storage type; rstd and dweight are f32 from f32 arithmetic */
    double tol = gt_tolerance(t), tol32 = gt_tolerance(TC_DTYPE_F32);
    double vy = gt_err_value(&ey), vr = gt_err_value(&er), vdx = gt_err_value(&edx), vdw = gt_err_value(&edw);
    bool pass = ok;
    pass = gt_record(t, vy, tol) && pass;
    pass = gt_record(TC_DTYPE_F32, vr, tol32) && pass;
    pass = gt_record(t, vdx, tol) && pass;
    pass = gt_record(TC_DTYPE_F32, vdw, tol32) && pass;
    pass = pass && clob == 0;
    printf("rmsnorm %-4s rows=%-5lld cols=%-6lld %-9s stride=%-6lld y %.2e rstd %.2e dx %.2e dw %.2e (tol %.0e/%.0e)",
           gt_dtype_name(t), (long long)rows, (long long)cols, lay->name, (long long)x.stride, vy, vr, vdx, vdw, tol,
           tol32);
    if (clob)
        printf(" wrote %zu elements outside the outputs", clob);
    if (ey.nan || er.nan || edx.nan || edw.nan)
        printf(" NaN or unwritten: y %zu rstd %zu dx %zu dw %zu", ey.nan, er.nan, edx.nan, edw.nan);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    free(ref_rstd);
    free(ref_dw);
    free(abs_dw);
    for (size_t i = 0; i < 7; i++)
        mat_free(ctx, all[i]);
    return pass;
}

int main(int argc, char **argv) {
    return gt_rowwise_main("test_rmsnorm", argc, argv, run_case);
}
