/*
 * test_swiglu.c — tc_swiglu_fwd, tc_swiglu_bwd and tc_add (the element-wise
 * kernels) on the GPU against a float64 CPU reference.
 *
 *     test_swiglu [--quick]     (--quick: only cases of at most 2^20 elements)
 *
 * The cases are test_softmax.c's (f16, bf16, f32 x widths 1 .. 130001 x 1, 3,
 * 37, 1000 rows, dense, and for 3 and 37 rows strided and unaligned too),
 * each run twice: gate and up as two matrices, and as the two halves of one
 * [rows, 2 * cols] matrix (up = gate + cols, one row stride), as a fused
 * gate/up projection writes them; the backward pass writes dgate and dup the
 * same way. Inputs are normal with a standard deviation of 2, so that silu's
 * curved part and both tails are exercised. Every output is poisoned first,
 * and what lies outside it must stay poisoned. tc_add runs in each case too:
 * sum = gate + up into a matrix of its own with two separate inputs, and in
 * place, out += dout, with the fused ones.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

static double sigmoid(double g) {
    return 1.0 / (1.0 + exp(-g));
}

/* Where the halves of a fused matrix, or the two matrices, live. */
typedef struct Pair {
    Mat a, b; /* separate: gate/dgate in a, up/dup in b; fused: both in a */
    bool fused;
    int64_t cols;
} Pair;

static bool pair_alloc(tc_context *ctx, Pair *p, tc_dtype t, int64_t rows, int64_t cols, int kind, bool fused) {
    memset(p, 0, sizeof *p);
    p->fused = fused;
    p->cols = cols;
    if (fused)
        return mat_alloc(ctx, &p->a, t, rows, 2 * cols, kind);
    return mat_alloc(ctx, &p->a, t, rows, cols, kind) && mat_alloc(ctx, &p->b, t, rows, cols, kind);
}

static void pair_free(tc_context *ctx, Pair *p) {
    mat_free(ctx, &p->a);
    mat_free(ctx, &p->b);
}

/* half 0 (gate) or 1 (up): its matrix, the element index of (r, c), its
 * base pointer and stride */
static Mat *pair_mat(Pair *p, int half) {
    return p->fused || half == 0 ? &p->a : &p->b;
}
static size_t pair_at(Pair *p, int half, int64_t r, int64_t c) {
    return mat_at(pair_mat(p, half), r, p->fused && half ? p->cols + c : c);
}
static CUdeviceptr pair_base(Pair *p, int half) {
    Mat *m = pair_mat(p, half);
    return mat_base(m) + (p->fused && half ? (CUdeviceptr)((size_t)p->cols * gt_dtype_bytes(m->dtype)) : 0);
}
static int64_t pair_stride(Pair *p, int half) {
    return pair_mat(p, half)->stride;
}

static bool pair_io(tc_context *ctx, Pair *p, int what) { /* 0 upload, 1 poison, 2 download */
    bool ok = true;
    for (int i = 0; i < (p->fused ? 1 : 2); i++) {
        Mat *m = i ? &p->b : &p->a;
        ok = ok && (what == 0 ? mat_upload(ctx, m) : what == 1 ? mat_poison(ctx, m) : mat_download(ctx, m));
    }
    return ok;
}

static size_t pair_clobbered(Pair *p) {
    return mat_clobbered(&p->a) + (p->fused ? 0 : mat_clobbered(&p->b));
}

static bool run_one(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols, const GtLayout *lay,
                    bool fused) {
    Pair in, grad;
    Mat out, dout, sum;
    memset(&out, 0, sizeof out);
    memset(&dout, 0, sizeof dout);
    memset(&sum, 0, sizeof sum);
    bool ok = pair_alloc(ctx, &in, t, rows, cols, lay->kind, fused) &&
              pair_alloc(ctx, &grad, t, rows, cols, lay->kind, fused) &&
              mat_alloc(ctx, &out, t, rows, cols, lay->kind) && mat_alloc(ctx, &dout, t, rows, cols, lay->kind) &&
              mat_alloc(ctx, &sum, t, rows, cols, lay->kind);
    GtErr eo = {0}, eg = {0}, eu = {0}, es = {0};
    size_t clob = 0;
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                gt_put(t, pair_mat(&in, 0)->host, pair_at(&in, 0, r, c), 2 * gt_normal());
                gt_put(t, pair_mat(&in, 1)->host, pair_at(&in, 1, r, c), gt_normal());
                gt_put(t, dout.host, mat_at(&dout, r, c), gt_normal());
            }
        ok = pair_io(ctx, &in, 0) && mat_upload(ctx, &dout) && mat_poison(ctx, &out) && pair_io(ctx, &grad, 1) &&
             GT_OK(tc_swiglu_fwd(ctx, stream, t, mat_base(&out), pair_base(&in, 0), pair_base(&in, 1), rows, cols,
                                 out.stride, pair_stride(&in, 0), pair_stride(&in, 1))) &&
             GT_OK(tc_swiglu_bwd(ctx, stream, t, pair_base(&grad, 0), pair_base(&grad, 1), mat_base(&dout),
                                 pair_base(&in, 0), pair_base(&in, 1), rows, cols, pair_stride(&grad, 0),
                                 pair_stride(&grad, 1), dout.stride, pair_stride(&in, 0), pair_stride(&in, 1))) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, &out) && pair_io(ctx, &grad, 2);
        /* the add: gate + up into sum, or in place out += dout (sum then holds out's values before) */
        if (ok && !fused)
            ok = mat_poison(ctx, &sum) &&
                 GT_OK(tc_add(ctx, stream, t, mat_base(&sum), pair_base(&in, 0), pair_base(&in, 1), rows, cols,
                              sum.stride, pair_stride(&in, 0), pair_stride(&in, 1)));
        if (ok && fused) {
            memcpy(sum.host, out.host, sum.n * gt_dtype_bytes(t));
            ok = GT_OK(tc_add(ctx, stream, t, mat_base(&out), mat_base(&out), mat_base(&dout), rows, cols, out.stride,
                              out.stride, dout.stride));
        }
        ok = ok && GT_OK(tc_stream_synchronize(ctx, stream)) && mat_download(ctx, fused ? &out : &sum);
    }
    if (ok) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                double g = gt_get(t, pair_mat(&in, 0)->host, pair_at(&in, 0, r, c));
                double u = gt_get(t, pair_mat(&in, 1)->host, pair_at(&in, 1, r, c));
                double d = gt_get(t, dout.host, mat_at(&dout, r, c)), s = sigmoid(g);
                void *fwd = fused ? sum.host : out.host; /* out before the in-place add */
                gt_err_add(&eo, gt_get(t, fwd, mat_at(&out, r, c)), g * s * u);
                /* 1 + g (1 - s) cancels near g = -1.28: f32 is accurate relative to its larger term */
                gt_err_add_scaled(&eg, gt_get(t, pair_mat(&grad, 0)->host, pair_at(&grad, 0, r, c)),
                                  d * u * s * (1 + g * (1 - s)), d * u * s * fmax(1.0, fabs(g * (1 - s))));
                gt_err_add(&eu, gt_get(t, pair_mat(&grad, 1)->host, pair_at(&grad, 1, r, c)), d * g * s);
                if (fused)
                    gt_err_add(&es, gt_get(t, out.host, mat_at(&out, r, c)),
                               gt_get(t, sum.host, mat_at(&sum, r, c)) + d);
                else
                    gt_err_add(&es, gt_get(t, sum.host, mat_at(&sum, r, c)), g + u);
            }
        clob = mat_clobbered(&out) + pair_clobbered(&grad) + (fused ? 0 : mat_clobbered(&sum));
    }
    double tol = gt_tolerance(t), vo = gt_err_value(&eo), vg = gt_err_value(&eg), vu = gt_err_value(&eu);
    double vs = gt_err_value(&es);
    bool pass = ok;
    pass = gt_record(t, vo, tol) && pass;
    pass = gt_record(t, vg, tol) && pass;
    pass = gt_record(t, vu, tol) && pass;
    pass = gt_record(t, vs, tol) && pass;
    pass = pass && clob == 0;
    printf("swiglu %-4s rows=%-5lld cols=%-6lld %-9s %-8s out %.2e dgate %.2e dup %.2e add %.2e (tol %.0e)",
           gt_dtype_name(t), (long long)rows, (long long)cols, lay->name, fused ? "fused" : "separate", vo, vg, vu, vs,
           tol);
    if (clob)
        printf(" wrote %zu elements outside the outputs", clob);
    if (eo.nan || eg.nan || eu.nan || es.nan)
        printf(" NaN or unwritten: out %zu dgate %zu dup %zu add %zu", eo.nan, eg.nan, eu.nan, es.nan);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    pair_free(ctx, &in);
    pair_free(ctx, &grad);
    mat_free(ctx, &out);
    mat_free(ctx, &dout);
    mat_free(ctx, &sum);
    return pass;
}

static bool run_case(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols, const GtLayout *lay) {
    bool a = run_one(ctx, stream, t, rows, cols, lay, false);
    bool b = run_one(ctx, stream, t, rows, cols, lay, true);
    return a && b;
}

/* lib/add.tile's kernel launched directly with fewer column programs than
 * tiles (the library uses 65535 at most, so only rows wider than 2^26 f16
 * columns take more than one tile a program): 3 rows of 5 tiles of 32 and 3
 * more columns, 2 programs a row, so that each program loops. */
static void add_column_loop(tc_context *ctx, CUstream stream) {
    enum { ROWS = 3, COLS = 5 * 32 + 3, STRIDE = COLS + 5 };
    const char *src = NULL;
    size_t len = 0;
    tc_constexpr cx[] = {{"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F32, 0}, {"BLOCK", TC_CONSTEXPR_INT, 32, 0}};
    float a[ROWS * STRIDE], b[ROWS * STRIDE], out[ROWS * STRIDE];
    for (int i = 0; i < ROWS * STRIDE; i++) {
        a[i] = (float)gt_normal();
        b[i] = (float)gt_normal();
    }
    CUdeviceptr da = 0, db = 0, dout = 0;
    tc_kernel *k = NULL;
    size_t bytes = sizeof a;
    bool ok = GT_OK(tc_stdlib_source("add.tile", &src, &len));
    if (ok) {
        tc_jit_request req;
        tc_jit_request_init(&req);
        req.source = src;
        req.source_len = len;
        req.path = "lib/add.tile";
        req.kernel = "add";
        req.constexprs = cx;
        req.num_constexprs = 2;
        ok = GT_OK(tc_jit(ctx, &req, &k));
    }
    ok = ok && GT_OK(tc_mem_alloc(ctx, bytes, &da)) && GT_OK(tc_mem_alloc(ctx, bytes, &db)) &&
         GT_OK(tc_mem_alloc(ctx, bytes, &dout)) && GT_OK(tc_memcpy_htod(ctx, da, a, bytes)) &&
         GT_OK(tc_memcpy_htod(ctx, db, b, bytes)) && GT_OK(tc_memset_d8(ctx, dout, 0xFF, bytes));
    int64_t stride = STRIDE;
    int32_t cols = COLS;
    void *args[] = {&dout, &da, &db, &stride, &stride, &stride, &cols};
    ok = ok && GT_OK(tc_launch(k, (tc_dim3){ROWS, 2, 1}, stream, args, 7)) &&
         GT_OK(tc_stream_synchronize(ctx, stream)) && GT_OK(tc_memcpy_dtoh(ctx, out, dout, bytes));
    size_t wrong = 0, clobbered = 0;
    for (int r = 0; ok && r < ROWS; r++)
        for (int c = 0; c < STRIDE; c++) {
            int i = r * STRIDE + c;
            if (c < COLS)
                wrong += out[i] != a[i] + b[i];
            else
                clobbered += !gt_is_poison(TC_DTYPE_F32, out, (size_t)i);
        }
    bool pass = ok && wrong == 0 && clobbered == 0;
    printf("add: %d rows x %d columns, tiles of 32, 2 programs a row: %zu wrong, %zu written outside %s\n", ROWS, COLS,
           wrong, clobbered, pass ? "ok" : "FAIL");
    gt_case_done(pass);
    CUdeviceptr ptrs[] = {da, db, dout};
    for (int i = 0; i < 3; i++)
        if (ptrs[i])
            tc_mem_free(ctx, ptrs[i]);
}

int main(int argc, char **argv) {
    return gt_rowwise_main_ex("test_swiglu", argc, argv, run_case, add_column_loop);
}
