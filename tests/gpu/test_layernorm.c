/*
 * test_layernorm.c — tc_layernorm_fwd and tc_layernorm_bwd on the GPU
 * against a float64 CPU reference.
 *
 *     test_layernorm [--quick]     (--quick: only cases of at most 2^20 elements)
 *
 * The cases are test_softmax.c's: f16, bf16, f32 × widths 1 .. 130001 (one
 * tile, and the loops of wide rows both ways) × 1, 3, 37, 1000 rows, dense,
 * and for 3 and 37 rows strided and unaligned; with a bias and dbias in
 * every other case. x has a mean of 3 (the variance is taken about the
 * mean: a one-pass formula would lose it). Checked: y, mean and rstd of the
 * forward pass; dx, dweight and dbias of the backward pass, which takes
 * the forward pass's mean and rstd from the device; the backward run twice
 * must give bit-identical dweight and dbias. dx is compared relative to
 * max(||dx||, ||rstd * dy * weight||), dweight and dbias relative to the
 * sums of their terms' magnitudes (the scale of the rounding of a sum of
 * rows terms of either sign). Every output is poisoned first; what lies
 * outside it must stay poisoned.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

static const float EPS = 1e-5f;

static bool run_case(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols, const GtLayout *lay) {
    bool has_bias = (rows + cols) % 2 == 0;
    Mat x, w, b, y, mean, rstd, dy, dx, dw, db;
    Mat *all[] = {&x, &w, &b, &y, &mean, &rstd, &dy, &dx, &dw, &db};
    for (size_t i = 0; i < 10; i++)
        memset(all[i], 0, sizeof(Mat));
    bool ok = mat_alloc(ctx, &x, t, rows, cols, lay->kind) && mat_alloc(ctx, &w, t, 1, cols, lay->kind) &&
              mat_alloc(ctx, &b, t, 1, cols, lay->kind) && mat_alloc(ctx, &y, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &mean, TC_DTYPE_F32, 1, rows, lay->kind) &&
              mat_alloc(ctx, &rstd, TC_DTYPE_F32, 1, rows, lay->kind) && mat_alloc(ctx, &dy, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &dx, t, rows, cols, lay->kind) && mat_alloc(ctx, &dw, TC_DTYPE_F32, 1, cols, lay->kind) &&
              mat_alloc(ctx, &db, TC_DTYPE_F32, 1, cols, lay->kind);
    double *ref_mu = malloc(sizeof(double) * (size_t)rows), *ref_rs = malloc(sizeof(double) * (size_t)rows);
    double *sdw = calloc((size_t)cols, sizeof(double)), *sdb = calloc((size_t)cols, sizeof(double));
    double *adw = calloc((size_t)cols, sizeof(double)), *adb = calloc((size_t)cols, sizeof(double));
    void *dw1 = malloc(dw.n * 4 + 1), *db1 = malloc(db.n * 4 + 1); /* dw.n: 0 if its allocation failed */
    ok = ok && ref_mu && ref_rs && sdw && sdb && adw && adb && dw1 && db1;
    CUdeviceptr ws = 0;
    size_t ws_bytes = 0;
    GtErr ey = {0}, em = {0}, er = {0}, edx = {0}, edw = {0}, edb = {0};
    size_t clob = 0;
    bool same = true;
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                gt_put(t, x.host, mat_at(&x, r, c), 3 + gt_normal());
                gt_put(t, dy.host, mat_at(&dy, r, c), gt_normal());
            }
        for (int64_t c = 0; c < cols; c++) {
            gt_put(t, w.host, mat_at(&w, 0, c), gt_uniform_in(0.5, 1.5));
            gt_put(t, b.host, mat_at(&b, 0, c), gt_normal());
        }
        ok = mat_upload(ctx, &x) && mat_upload(ctx, &w) && mat_upload(ctx, &b) && mat_upload(ctx, &dy) &&
             mat_poison(ctx, &y) && mat_poison(ctx, &mean) && mat_poison(ctx, &rstd) && mat_poison(ctx, &dx) &&
             mat_poison(ctx, &dw) && mat_poison(ctx, &db) &&
             GT_OK(tc_layernorm_bwd_workspace_size(ctx, rows, cols, &ws_bytes)) &&
             GT_OK(tc_mem_alloc(ctx, ws_bytes, &ws)) &&
             GT_OK(tc_layernorm_fwd(ctx, stream, t, mat_base(&y), mat_base(&mean), mat_base(&rstd), mat_base(&x),
                                    mat_base(&w), has_bias ? mat_base(&b) : 0, rows, cols, y.stride, x.stride, EPS));
        for (int rep = 0; rep < 2 && ok; rep++) {
            ok = GT_OK(tc_layernorm_bwd(ctx, stream, t, mat_base(&dx), mat_base(&dw), has_bias ? mat_base(&db) : 0,
                                        mat_base(&dy), mat_base(&x), mat_base(&w), mat_base(&mean), mat_base(&rstd),
                                        rows, cols, dx.stride, dy.stride, x.stride, ws, ws_bytes)) &&
                 GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &dw) && mat_download(ctx, &db);
            if (ok && rep == 0) {
                memcpy(dw1, dw.host, dw.n * 4);
                memcpy(db1, db.host, db.n * 4);
            } else if (ok) {
                same = memcmp(dw1, dw.host, dw.n * 4) == 0 && memcmp(db1, db.host, db.n * 4) == 0;
            }
        }
        ok = ok && mat_download(ctx, &y) && mat_download(ctx, &mean) && mat_download(ctx, &rstd) &&
             mat_download(ctx, &dx);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++) {
            double mu = 0, var = 0;
            for (int64_t c = 0; c < cols; c++)
                mu += gt_get(t, x.host, mat_at(&x, r, c));
            mu /= (double)cols;
            for (int64_t c = 0; c < cols; c++) {
                double d = gt_get(t, x.host, mat_at(&x, r, c)) - mu;
                var += d * d;
            }
            double rs = 1 / sqrt(var / (double)cols + (double)EPS);
            ref_mu[r] = mu;
            ref_rs[r] = rs;
            gt_err_add(&em, gt_get(TC_DTYPE_F32, mean.host, mat_at(&mean, 0, r)), mu);
            gt_err_add(&er, gt_get(TC_DTYPE_F32, rstd.host, mat_at(&rstd, 0, r)), rs);
            double m1 = 0, m2 = 0;
            for (int64_t c = 0; c < cols; c++) {
                double xh = (gt_get(t, x.host, mat_at(&x, r, c)) - mu) * rs;
                double bb = has_bias ? gt_get(t, b.host, mat_at(&b, 0, c)) : 0;
                gt_err_add(&ey, gt_get(t, y.host, mat_at(&y, r, c)), xh * gt_get(t, w.host, mat_at(&w, 0, c)) + bb);
                double g = gt_get(t, dy.host, mat_at(&dy, r, c)) * gt_get(t, w.host, mat_at(&w, 0, c));
                m1 += g;
                m2 += g * xh;
            }
            m1 /= (double)cols;
            m2 /= (double)cols;
            for (int64_t c = 0; c < cols; c++) {
                double xh = (gt_get(t, x.host, mat_at(&x, r, c)) - mu) * rs, d = gt_get(t, dy.host, mat_at(&dy, r, c));
                double g = d * gt_get(t, w.host, mat_at(&w, 0, c));
                gt_err_add_scaled(&edx, gt_get(t, dx.host, mat_at(&dx, r, c)), rs * (g - m1 - xh * m2), rs * g);
                sdw[c] += d * xh;
                adw[c] += fabs(d * xh);
                sdb[c] += d;
                adb[c] += fabs(d);
            }
        }
        for (int64_t c = 0; c < cols; c++) {
            gt_err_add_scaled(&edw, gt_get(TC_DTYPE_F32, dw.host, mat_at(&dw, 0, c)), sdw[c], adw[c]);
            if (has_bias)
                gt_err_add_scaled(&edb, gt_get(TC_DTYPE_F32, db.host, mat_at(&db, 0, c)), sdb[c], adb[c]);
        }
        clob += mat_clobbered(&y) + mat_clobbered(&mean) + mat_clobbered(&rstd) + mat_clobbered(&dx) +
                mat_clobbered(&dw) + mat_clobbered(&db);
        if (!has_bias) /* no dbias asked: nothing written there */
            for (int64_t c = 0; c < cols; c++)
                clob += !gt_is_poison(TC_DTYPE_F32, db.host, mat_at(&db, 0, c));
    }
    /* y and dx in the storage type; the rest f32 */
    double tol = gt_tolerance(t), tol32 = gt_tolerance(TC_DTYPE_F32);
    double vy = gt_err_value(&ey), vm = gt_err_value(&em), vr = gt_err_value(&er), vdx = gt_err_value(&edx);
    double vdw = gt_err_value(&edw), vdb = gt_err_value(&edb);
    bool pass = ok && same && clob == 0;
    pass = gt_record(t, vy, tol) && pass;
    pass = gt_record(TC_DTYPE_F32, vm, tol32) && pass;
    pass = gt_record(TC_DTYPE_F32, vr, tol32) && pass;
    pass = gt_record(t, vdx, tol) && pass;
    pass = gt_record(TC_DTYPE_F32, vdw, tol32) && pass;
    if (has_bias)
        pass = gt_record(TC_DTYPE_F32, vdb, tol32) && pass;
    printf("layernorm %-4s rows=%-5lld cols=%-6lld %-9s %s y %.2e mean %.2e rstd %.2e dx %.2e dw %.2e db %.2e%s",
           gt_dtype_name(t), (long long)rows, (long long)cols, lay->name, has_bias ? "bias   " : "no-bias", vy, vm, vr,
           vdx, vdw, vdb, same ? "" : " dweight/dbias differ between two runs");
    if (clob)
        printf(" wrote %zu elements outside the outputs", clob);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    if (ws)
        tc_mem_free(ctx, ws);
    free(ref_mu);
    free(ref_rs);
    free(sdw);
    free(sdb);
    free(adw);
    free(adb);
    free(dw1);
    free(db1);
    for (size_t i = 0; i < 10; i++)
        mat_free(ctx, all[i]);
    return pass;
}

int main(int argc, char **argv) {
    return gt_rowwise_main("test_layernorm", argc, argv, run_case);
}
