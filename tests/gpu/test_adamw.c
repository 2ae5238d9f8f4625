/*
 * test_adamw.c — tc_adamw on the GPU against a float64 CPU reference.
 *
 *     test_adamw [--quick]     (--quick: smaller tensors)
 *
 * Cases: params f32 (no master copy), bf16 and f16 with f32 master weights,
 * and bf16 without; gradients f32, bf16, f16; a list of tensors of odd sizes
 * (1, 7, 1000, 65536, 65537 and 200001 elements: within one chunk, exactly
 * one, and several with a ragged end) allocated apart in any order (so that
 * some lie below the first); three steps in a row, which checks the step
 * count on the device (bias correction) and that the moments carry over;
 * weight decay and a gradient scale; every array 16-byte aligned (the
 * library's vector plan, a second launch for the tensors' last numel % 4
 * elements), and, for two of the cases, one tensor's arrays misaligned by an
 * element (the scalar plan). The reference keeps the master
 * weights (or the params) in double, each step from the values the device
 * holds after the previous one. Checked: the params (in their type), the
 * master weights and both moments (f32, to 1e-5), and the step count.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

typedef struct Tensor {
    int64_t n;
    CUdeviceptr d[5];    /* param, grad, m, v, master */
    CUdeviceptr base[5]; /* the allocations: d, or d less one element when misaligned */
    void *h[5];
} Tensor;

/* misalign: tensor 2's arrays one element past a 16-byte boundary (the
 * library's scalar plan); otherwise every array is aligned (its vector plan) */
static bool run_case(tc_context *ctx, CUstream stream, tc_dtype pt, tc_dtype gt, int master, bool quick,
                     bool misalign) {
    static const int64_t sizes_full[] = {1000, 1, 200001, 7, 65536, 65537};
    static const int64_t sizes_quick[] = {1000, 1, 70001, 7, 65536};
    const int64_t *sizes = quick ? sizes_quick : sizes_full;
    int nt = quick ? 5 : 6;
    Tensor ts[6];
    memset(ts, 0, sizeof ts);
    tc_adamw_tensor desc[6];
    size_t es[5] = {gt_dtype_bytes(pt), gt_dtype_bytes(gt), 4, 4, 4};
    CUdeviceptr step = 0, ws = 0, spacer = 0;
    bool ok = true;
    /* allocations apart and in a mixed order: a spacer between tensors */
    for (int i = 0; i < nt && ok; i++) {
        ts[i].n = sizes[i];
        for (int f = 0; f < 5 && ok; f++) {
            if (f == 4 && !master)
                continue;
            ts[i].h[f] = malloc((size_t)ts[i].n * es[f]);
            ok = ts[i].h[f] && GT_OK(tc_mem_alloc(ctx, (size_t)ts[i].n * es[f] + 256, &ts[i].base[f]));
            ts[i].d[f] = ts[i].base[f] + (misalign && i == 2 ? es[f] : 0);
        }
        if (i == 0)
            ok = ok && GT_OK(tc_mem_alloc(ctx, 4096, &spacer));
    }
    double *w[6] = {0}; /* the reference weights */
    for (int i = 0; i < nt && ok; i++) {
        w[i] = malloc(sizeof(double) * (size_t)ts[i].n);
        ok = w[i] != NULL;
        for (int64_t k = 0; ok && k < ts[i].n; k++) {
            double v = gt_normal();
            gt_put(pt, ts[i].h[0], (size_t)k, v);
            w[i][k] = master ? gt_put_get(TC_DTYPE_F32, ts[i].h[4], (size_t)k, v) : gt_get(pt, ts[i].h[0], (size_t)k);
            gt_put(TC_DTYPE_F32, ts[i].h[2], (size_t)k, 0);
            gt_put(TC_DTYPE_F32, ts[i].h[3], (size_t)k, 0);
        }
        for (int f = 0; ok && f < 5; f++)
            if (ts[i].h[f] && f != 1)
                ok = GT_OK(tc_memcpy_htod(ctx, ts[i].d[f], ts[i].h[f], (size_t)ts[i].n * es[f]));
        desc[i] = (tc_adamw_tensor){ts[i].d[0], ts[i].d[1], ts[i].d[2], ts[i].d[3], master ? ts[i].d[4] : 0, ts[i].n};
    }
    size_t ws_bytes = 0;
    int32_t zero = 0, step_back = -1;
    ok = ok && GT_OK(tc_adamw_workspace_size(desc, (size_t)nt, &ws_bytes)) && GT_OK(tc_mem_alloc(ctx, ws_bytes, &ws)) &&
         GT_OK(tc_mem_alloc(ctx, 4, &step)) && GT_OK(tc_memcpy_htod(ctx, step, &zero, 4));
    /* the hyperparameters as the call takes them, f32 (0.999f is not 0.999: 1 - beta2 differs by 1.3e-5) */
    const double lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f, gs = 0.5f;
    double **m = calloc((size_t)nt, sizeof *m), **v = calloc((size_t)nt, sizeof *v);
    ok = ok && m && v;
    for (int i = 0; ok && i < nt; i++) {
        m[i] = calloc((size_t)ts[i].n, sizeof(double));
        v[i] = calloc((size_t)ts[i].n, sizeof(double));
        ok = m[i] && v[i];
    }
    GtErr ep = {0}, ew = {0}, em = {0}, ev = {0};
    for (int s = 1; s <= 3 && ok; s++) {
        for (int i = 0; ok && i < nt; i++) {
            for (int64_t k = 0; k < ts[i].n; k++)
                gt_put(gt, ts[i].h[1], (size_t)k, gt_normal());
            ok = GT_OK(tc_memcpy_htod(ctx, ts[i].d[1], ts[i].h[1], (size_t)ts[i].n * es[1]));
        }
        tc_adamw_args a = {pt,        gt,         desc,      (size_t)nt, master, (float)lr, (float)b1,
                           (float)b2, (float)eps, (float)wd, (float)gs,  step,   ws,        ws_bytes};
        ok = ok && GT_OK(tc_adamw(ctx, stream, &a)) && GT_OK(tc_stream_synchronize(ctx, stream));
        for (int i = 0; ok && i < nt; i++)
            for (int f = 0; ok && f < 5; f++)
                if (ts[i].h[f] && f != 1)
                    ok = GT_OK(tc_memcpy_dtoh(ctx, ts[i].h[f], ts[i].d[f], (size_t)ts[i].n * es[f]));
        /* the reference step, from the values the device held before it (the
         * moments in double, the weights as the device rounded them) */
        double bc1 = 1 - pow(b1, s), bc2 = 1 - pow(b2, s);
        for (int i = 0; ok && i < nt; i++)
            for (int64_t k = 0; k < ts[i].n; k++) {
                double g = gt_get(gt, ts[i].h[1], (size_t)k) * gs;
                m[i][k] = b1 * m[i][k] + (1 - b1) * g;
                v[i][k] = b2 * v[i][k] + (1 - b2) * g * g;
                double ref = w[i][k] * (1 - lr * wd) - lr * (m[i][k] / bc1) / (sqrt(v[i][k] / bc2) + eps);
                gt_err_add(&em, gt_get(TC_DTYPE_F32, ts[i].h[2], (size_t)k), m[i][k]);
                gt_err_add(&ev, gt_get(TC_DTYPE_F32, ts[i].h[3], (size_t)k), v[i][k]);
                gt_err_add(&ep, gt_get(pt, ts[i].h[0], (size_t)k), ref);
                if (master)
                    gt_err_add(&ew, gt_get(TC_DTYPE_F32, ts[i].h[4], (size_t)k), ref);
                /* the next step starts from what the device holds */
                w[i][k] = master ? gt_get(TC_DTYPE_F32, ts[i].h[4], (size_t)k) : gt_get(pt, ts[i].h[0], (size_t)k);
                m[i][k] = gt_get(TC_DTYPE_F32, ts[i].h[2], (size_t)k);
                v[i][k] = gt_get(TC_DTYPE_F32, ts[i].h[3], (size_t)k);
            }
    }
    ok = ok && GT_OK(tc_memcpy_dtoh(ctx, &step_back, step, 4));
    double tol32 = gt_tolerance(TC_DTYPE_F32), tol = gt_tolerance(pt);
    double vp = gt_err_value(&ep), vw = gt_err_value(&ew), vm = gt_err_value(&em), vv = gt_err_value(&ev);
    bool pass = ok && step_back == 3;
    pass = gt_record(pt, vp, tol) && pass;
    pass = gt_record(TC_DTYPE_F32, vm, tol32) && pass;
    pass = gt_record(TC_DTYPE_F32, vv, tol32) && pass;
    if (master)
        pass = gt_record(TC_DTYPE_F32, vw, tol32) && pass;
    printf("adamw params %-4s grads %-4s %s %d tensors%s, 3 steps: params %.2e master %.2e m %.2e v %.2e step %d %s\n",
           gt_dtype_name(pt), gt_dtype_name(gt), master ? "master" : "no-master", nt, misalign ? " (misaligned)" : "",
           vp, vw, vm, vv, step_back, pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    for (int i = 0; i < nt; i++) {
        for (int f = 0; f < 5; f++) {
            if (ts[i].base[f])
                tc_mem_free(ctx, ts[i].base[f]);
            free(ts[i].h[f]);
        }
        free(w[i]);
        if (m)
            free(m[i]);
        if (v)
            free(v[i]);
    }
    free(m);
    free(v);
    CUdeviceptr rest[] = {step, ws, spacer};
    for (int i = 0; i < 3; i++)
        if (rest[i])
            tc_mem_free(ctx, rest[i]);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_adamw");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    run_case(ctx, stream, TC_DTYPE_F32, TC_DTYPE_F32, 0, quick, false);
    run_case(ctx, stream, TC_DTYPE_BF16, TC_DTYPE_BF16, 1, quick, false);
    run_case(ctx, stream, TC_DTYPE_F16, TC_DTYPE_F32, 1, quick, false);
    run_case(ctx, stream, TC_DTYPE_BF16, TC_DTYPE_F16, 0, quick, false);
    run_case(ctx, stream, TC_DTYPE_F32, TC_DTYPE_BF16, 0, quick, false);
    run_case(ctx, stream, TC_DTYPE_F32, TC_DTYPE_F32, 0, quick, true);
    run_case(ctx, stream, TC_DTYPE_BF16, TC_DTYPE_BF16, 1, quick, true);
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
