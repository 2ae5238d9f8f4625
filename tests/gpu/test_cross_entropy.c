/*
 * test_cross_entropy.c — tc_cross_entropy on the GPU against a float64 CPU
 * reference.
 *
 *     test_cross_entropy [--quick]     (--quick: up to 4096, and one row of 50257)
 *
 * Cases: logits f16, bf16, f32 × labels i32 and i64 × vocabularies 1, 7,
 * 1000, 4096, 50257 (several tiles, a ragged end) and 131072 × 1, 3 and 37
 * rows, the logits' rows strided (a gap after each); labels random, with
 * some ignore_index (-100) and some out of range (ignored too), and one case
 * where every row is ignored (loss 0, gradient 0); label smoothing 0 and
 * 0.1, z-loss 0 and 1e-4, grad_scale 1 and 0.5; the gradient into its own
 * strided buffer, in place over the logits, or not asked for; the per-row
 * losses and lse given or not. Checked: the mean loss, the rows' losses and
 * lse (f32, to 1e-5; a loss relative to |lse| + |x_label|, the terms it is
 * the difference of), the gradient (in the logits' type); the gradient of
 * an ignored row exactly 0; every element outside the outputs untouched.
 * Logits are normal with a standard deviation of 3 (peaked rows, and
 * exp's range exercised).
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

typedef struct Case {
    tc_dtype t, lt;
    int64_t rows, vocab;
    float smoothing, z, grad_scale;
    int grad;      /* 0 none, 1 own buffer, 2 in place */
    int outputs;   /* losses and lse given */
    int ignore_all;
} Case;

static bool run_case(tc_context *ctx, CUstream stream, const Case *c) {
    tc_dtype t = c->t;
    size_t es = gt_dtype_bytes(t), ls = c->lt == TC_DTYPE_I64 ? 8 : 4;
    int64_t rows = c->rows, V = c->vocab, sx = V + 5, sd = V + 3;
    size_t nx = (size_t)(rows * sx) + GUARD, nd = (size_t)(rows * sd) + GUARD;
    void *x = malloc(nx * es), *x0 = malloc(nx * es), *d = malloc(nd * es), *lab = malloc((size_t)rows * ls);
    int64_t *y = malloc(sizeof(int64_t) * (size_t)rows);
    float *out = malloc(sizeof(float) * (size_t)(2 * rows + 1 + GUARD));
    bool ok = x && x0 && d && lab && y && out;
    CUdeviceptr dx = 0, dd = 0, dl = 0, dout = 0, ws = 0;
    size_t ws_bytes = 0;
    if (ok) {
        for (size_t i = 0; i < nx; i++)
            gt_put(t, x, i, 3 * gt_normal());
        memcpy(x0, x, nx * es);
        memset(d, 0xFF, nd * es);
        for (int64_t r = 0; r < rows; r++) {
            uint64_t k = gt_next() % 10;
            y[r] = c->ignore_all || k == 0 ? -100 : k == 1 ? V + (int64_t)(gt_next() % 3) : (int64_t)(gt_next() % (uint64_t)V);
            if (c->lt == TC_DTYPE_I64)
                ((int64_t *)lab)[r] = y[r];
            else
                ((int32_t *)lab)[r] = (int32_t)y[r];
        }
        for (int64_t i = 0; i < 2 * rows + 1 + GUARD; i++)
            out[i] = NAN;
        ok = GT_OK(tc_cross_entropy_workspace_size(rows, &ws_bytes)) && GT_OK(tc_mem_alloc(ctx, nx * es, &dx)) &&
             GT_OK(tc_memcpy_htod(ctx, dx, x, nx * es)) && GT_OK(tc_mem_alloc(ctx, nd * es, &dd)) &&
             GT_OK(tc_memcpy_htod(ctx, dd, d, nd * es)) && GT_OK(tc_mem_alloc(ctx, (size_t)rows * ls, &dl)) &&
             GT_OK(tc_memcpy_htod(ctx, dl, lab, (size_t)rows * ls)) &&
             GT_OK(tc_mem_alloc(ctx, sizeof(float) * (size_t)(2 * rows + 1 + GUARD), &dout)) &&
             GT_OK(tc_memcpy_htod(ctx, dout, out, sizeof(float) * (size_t)(2 * rows + 1 + GUARD))) &&
             GT_OK(tc_mem_alloc(ctx, ws_bytes, &ws));
    }
    if (ok) {
        tc_cross_entropy_args a = {0};
        a.dtype = t;
        a.label_dtype = c->lt;
        a.rows = rows;
        a.vocab = V;
        a.logits = dx;
        a.stride_logits = sx;
        a.labels = dl;
        a.ignore_index = -100;
        a.label_smoothing = c->smoothing;
        a.z_loss = c->z;
        a.grad_scale = c->grad_scale;
        a.loss = dout; /* then rows losses, then rows lse, in one f32 buffer */
        if (c->outputs) {
            a.losses = dout + 4;
            a.lse = dout + 4 + (CUdeviceptr)rows * 4;
        }
        if (c->grad == 1)
            a.dlogits = dd, a.stride_dlogits = sd;
        else if (c->grad == 2)
            a.dlogits = dx, a.stride_dlogits = sx;
        a.workspace = ws;
        a.workspace_bytes = ws_bytes;
        ok = GT_OK(tc_cross_entropy(ctx, stream, &a)) && GT_OK(tc_stream_synchronize(ctx, stream)) &&
             GT_OK(tc_memcpy_dtoh(ctx, x, dx, nx * es)) && GT_OK(tc_memcpy_dtoh(ctx, d, dd, nd * es)) &&
             GT_OK(tc_memcpy_dtoh(ctx, out, dout, sizeof(float) * (size_t)(2 * rows + 1 + GUARD)));
    }
    GtErr el = {0}, er = {0}, else_ = {0}, eg = {0};
    size_t bad = 0; /* untouched elements touched, ignored rows' gradients not 0 */
    if (ok) {
        double total = 0, total_terms = 0;
        int64_t n = 0;
        for (int64_t r = 0; r < rows; r++)
            n += y[r] >= 0 && y[r] < V;
        for (int64_t r = 0; r < rows; r++) {
            bool valid = y[r] >= 0 && y[r] < V;
            double m = -INFINITY, s = 0, sum = 0;
            for (int64_t j = 0; j < V; j++)
                m = fmax(m, gt_get(t, x0, (size_t)(r * sx + j)));
            for (int64_t j = 0; j < V; j++) {
                double v = gt_get(t, x0, (size_t)(r * sx + j));
                s += exp(v - m);
                sum += v;
            }
            double lse = m + log(s), eps = c->smoothing;
            double x_y = valid ? gt_get(t, x0, (size_t)(r * sx + y[r])) : 0;
            double loss = valid ? lse - (1 - eps) * x_y - eps / (double)V * sum + c->z * lse * lse : 0;
            /* a loss is a difference: lse - x_y is tiny where the label's logit dominates its row,
             * and f32 is accurate relative to the terms */
            double terms = valid ? fabs(lse) + fabs(x_y) : 0;
            total += loss;
            total_terms += terms;
            if (c->outputs) {
                gt_err_add_scaled(&er, out[1 + r], loss, terms);
                gt_err_add(&else_, out[1 + rows + r], lse);
            }
            if (c->grad) {
                void *g = c->grad == 1 ? d : x;
                int64_t sg = c->grad == 1 ? sd : sx;
                double scale = valid ? c->grad_scale / (double)n : 0;
                for (int64_t j = 0; j < V; j++) {
                    double p = exp(gt_get(t, x0, (size_t)(r * sx + j)) - lse);
                    double ref = scale * (p * (1 + 2 * c->z * lse) - eps / (double)V - (j == y[r] ? 1 - eps : 0));
                    double got = gt_get(t, g, (size_t)(r * sg + j));
                    gt_err_add_scaled(&eg, got, ref, scale);
                    if (!valid && got != 0)
                        bad++;
                }
            }
        }
        gt_err_add_scaled(&el, out[0], n ? total / (double)n : 0, n ? total_terms / (double)n : 0);
        /* outside the outputs: the logits' gaps (and all of them without an in-place gradient), dlogits' gaps */
        for (size_t i = 0; i < nx; i++) {
            bool in_row = i < (size_t)(rows * sx) && (int64_t)(i % (size_t)sx) < V;
            if ((c->grad != 2 || !in_row) && memcmp((char *)x + i * es, (char *)x0 + i * es, es) != 0)
                bad++;
        }
        for (size_t i = 0; i < nd; i++) {
            bool in_row = i < (size_t)(rows * sd) && (int64_t)(i % (size_t)sd) < V;
            if ((c->grad != 1 || !in_row) && !gt_is_poison(t, d, i))
                bad++;
        }
        for (int64_t i = c->outputs ? 1 + 2 * rows : 1; i < 2 * rows + 1 + GUARD; i++)
            bad += !isnan(out[i]);
    }
    double tol32 = gt_tolerance(TC_DTYPE_F32), tol = gt_tolerance(t);
    double vl = gt_err_value(&el), vr = gt_err_value(&er), vlse = gt_err_value(&else_), vg = gt_err_value(&eg);
    bool pass = ok;
    pass = gt_record(TC_DTYPE_F32, vl, tol32) && pass;
    if (c->outputs) {
        pass = gt_record(TC_DTYPE_F32, vr, tol32) && pass;
        pass = gt_record(TC_DTYPE_F32, vlse, tol32) && pass;
    }
    if (c->grad)
        pass = gt_record(t, vg, tol) && pass;
    pass = pass && bad == 0;
    printf("cross_entropy %-4s %s rows=%-3lld vocab=%-6lld eps=%.1f z=%.0e scale=%.1f grad=%-7s%s loss %.2e rows %.2e "
           "lse %.2e dlogits %.2e",
           gt_dtype_name(t), c->lt == TC_DTYPE_I64 ? "i64" : "i32", (long long)rows, (long long)V, c->smoothing, c->z,
           c->grad_scale, c->grad == 0 ? "none" : c->grad == 1 ? "own" : "inplace", c->ignore_all ? " all-ignored" : "",
           vl, vr, vlse, vg);
    if (bad)
        printf(" %zu elements wrong outside the outputs or on ignored rows", bad);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    CUdeviceptr bufs[] = {dx, dd, dl, dout, ws};
    for (int i = 0; i < 5; i++)
        if (bufs[i])
            tc_mem_free(ctx, bufs[i]);
    free(x);
    free(x0);
    free(d);
    free(lab);
    free(y);
    free(out);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_cross_entropy");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32};
    static const int64_t vocabs[] = {1, 7, 1000, 4096, 50257, 131072};
    static const int64_t row_counts[] = {1, 3, 37};
    int k = 0;
    for (int di = 0; di < 3; di++)
        for (size_t v = 0; v < sizeof vocabs / sizeof vocabs[0]; v++)
            for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++, k++) {
                if (quick && (vocabs[v] > 50257 || (vocabs[v] == 50257 && row_counts[r] > 1)))
                    continue; /* but one row of several tiles */
                if (vocabs[v] >= 50257 && row_counts[r] == 37)
                    continue; /* the reference's time */
                /* the options turn with the case, so each meets every dtype and size */
                Case c = {dtypes[di],
                          k % 2 ? TC_DTYPE_I64 : TC_DTYPE_I32,
                          row_counts[r],
                          vocabs[v],
                          k % 3 == 1 ? 0.1f : 0.0f,
                          k % 4 == 2 ? 1e-4f : 0.0f,
                          k % 5 == 3 ? 0.5f : 1.0f,
                          k % 3,
                          (k / 3) % 2,
                          0};
                run_case(ctx, stream, &c);
            }
    Case all = {TC_DTYPE_BF16, TC_DTYPE_I64, 5, 1000, 0.1f, 1e-4f, 1.0f, 1, 1, 1};
    run_case(ctx, stream, &all);
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
