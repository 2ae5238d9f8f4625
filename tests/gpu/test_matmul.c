/*
 * test_matmul.c — tc_matmul and tc_blockdiag_matmul on the GPU against a
 * float64 CPU reference.
 *
 *     test_matmul [--quick]     (--quick: leave out the shapes of 1000 rows and more)
 *
 * tc_matmul: shapes with M = 1, 17, 1000 rows, odd N and K (1000 x 37 x
 * 129, 17 x 33 x 40, ...), K below one tile step, tiles that fit exactly;
 * each in the four layouts NN, TN (A column-major), NT (B column-major), TT
 * (both, and C column-major), f16 and bf16; then bias and every activation
 * on two shapes; then the other layouts: padded rows (16-byte aligned
 * strides), unaligned ones (pointers one element off, odd strides), strides
 * of 2 in both dimensions (no unit stride: the general specialization), and
 * a B broadcast along K (stride 0). Outputs up to 1024 x 1024 x 1024 are
 * compared in full; two larger ones (4096^3 and 2048 x 3000 x 1111) on 2000
 * random elements, and checked in full for being written.
 *
 * tc_blockdiag_matmul: Monarch-like shapes (64 blocks of 64 x 64, 4 of 256
 * x 256, odd ones such as 4 blocks of 37 x 129), the weight stored
 * [nblocks, bin, bout] and [nblocks, bout, bin], f16 and bf16, dense and
 * padded or unaligned rows.
 *
 * Inputs are fresh random normals; the gaps between elements and the
 * elements around each matrix hold NaN, so reading outside the matrix
 * produces NaN. Outputs are filled with NaN (0xFF) before each launch and
 * must be fully written, and everything around them left alone. One line
 * per case; gpu_test.h has the metric and the exit status.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

/* ---- a strided matrix on the host and the device ---- */

typedef enum Lay {
    LAY_ROW,     /* dense row-major */
    LAY_COL,     /* dense column-major */
    LAY_ROW_PAD, /* row-major, rows padded to a 16-byte aligned stride */
    LAY_COL_PAD, /* column-major, columns padded likewise */
    LAY_ODD,     /* row-major, an odd row stride, the first element one past an aligned address */
    LAY_ODD_COL, /* column-major, likewise */
    LAY_STEP2,   /* both strides 2 (neither is 1): every other element of a wider matrix */
    LAY_BCAST,   /* row stride 0: every row the same (inputs only) */
} Lay;

static const char *lay_name(Lay l) {
    static const char *names[] = {"row", "col", "row-pad", "col-pad", "odd", "odd-col", "step2", "bcast"};
    return names[l];
}

typedef struct Buf {
    tc_dtype dtype;
    int64_t rows, cols, sr, sc, offset; /* element (i, j) at offset + i * sr + j * sc */
    size_t n;                           /* elements allocated */
    void *host;
    CUdeviceptr dev;
} Buf;

static int64_t pad16(int64_t v) {
    return (v + 7) / 8 * 8 + 8;
}

static bool buf_alloc(tc_context *ctx, Buf *m, tc_dtype t, int64_t rows, int64_t cols, Lay lay) {
    memset(m, 0, sizeof *m);
    m->dtype = t;
    m->rows = rows;
    m->cols = cols;
    switch (lay) {
    case LAY_ROW: m->sr = cols, m->sc = 1; break;
    case LAY_COL: m->sr = 1, m->sc = rows; break;
    case LAY_ROW_PAD: m->sr = pad16(cols), m->sc = 1; break;
    case LAY_COL_PAD: m->sr = 1, m->sc = pad16(rows); break;
    case LAY_ODD: m->sr = cols + 1 + cols % 2, m->sc = 1, m->offset = 1; break;
    case LAY_ODD_COL: m->sr = 1, m->sc = rows + 1 + rows % 2, m->offset = 1; break;
    case LAY_STEP2: m->sr = 2 * cols, m->sc = 2; break;
    case LAY_BCAST: m->sr = 0, m->sc = 1; break;
    }
    m->n = (size_t)(m->offset + (rows - 1) * m->sr + (cols - 1) * m->sc + 1 + GUARD);
    m->host = malloc(m->n * gt_dtype_bytes(t));
    if (!m->host) {
        printf("out of host memory\n");
        return false;
    }
    memset(m->host, 0xFF, m->n * gt_dtype_bytes(t));
    return GT_OK(tc_mem_alloc(ctx, m->n * gt_dtype_bytes(t), &m->dev));
}

static void buf_free(tc_context *ctx, Buf *m) {
    if (m->dev)
        tc_mem_free(ctx, m->dev);
    free(m->host);
    memset(m, 0, sizeof *m);
}

static size_t at(const Buf *m, int64_t i, int64_t j) {
    return (size_t)(m->offset + i * m->sr + j * m->sc);
}

static CUdeviceptr base(const Buf *m) {
    return m->dev + (CUdeviceptr)((size_t)m->offset * gt_dtype_bytes(m->dtype));
}

/* Fills the matrix with rounded random normals; returns them as doubles,
 * row-major (rows x cols). */
static double *buf_fill(Buf *m) {
    double *d = malloc(sizeof(double) * (size_t)(m->rows * m->cols));
    if (!d)
        return NULL;
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++) {
            if (m->sr == 0 && i > 0) /* broadcast: row 0 again */
                d[i * m->cols + j] = d[j];
            else
                d[i * m->cols + j] = gt_put_get(m->dtype, m->host, at(m, i, j), gt_normal());
        }
    return d;
}

static bool buf_upload(tc_context *ctx, const Buf *m) {
    return GT_OK(tc_memcpy_htod(ctx, m->dev, m->host, m->n * gt_dtype_bytes(m->dtype)));
}

static bool buf_poison(tc_context *ctx, const Buf *m) {
    return GT_OK(tc_memset_d8(ctx, m->dev, 0xFF, m->n * gt_dtype_bytes(m->dtype)));
}

static bool buf_download(tc_context *ctx, Buf *m) {
    return GT_OK(tc_memcpy_dtoh(ctx, m->host, m->dev, m->n * gt_dtype_bytes(m->dtype)));
}

/* Elements of the allocation outside the matrix that are not 0xFF any more. */
static size_t buf_clobbered(const Buf *m) {
    unsigned char *mine = calloc(m->n, 1);
    if (!mine)
        return (size_t)-1;
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++)
            mine[at(m, i, j)] = 1;
    size_t bad = 0;
    for (size_t k = 0; k < m->n; k++)
        bad += !mine[k] && !gt_is_poison(m->dtype, m->host, k);
    free(mine);
    return bad;
}

/* Outputs that are NaN or infinite (unwritten ones are NaN). */
static size_t buf_not_finite(const Buf *m) {
    size_t bad = 0;
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++)
            bad += !isfinite(gt_get(m->dtype, m->host, at(m, i, j)));
    return bad;
}

/* ---- the reference ---- */

static double activate(double x, tc_activation act) {
    switch (act) {
    case TC_ACTIVATION_RELU: return x > 0 ? x : 0;
    case TC_ACTIVATION_GELU_TANH: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case TC_ACTIVATION_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case TC_ACTIVATION_SILU: return x / (1.0 + exp(-x));
    default: return x;
    }
}

static const char *act_name(tc_activation act) {
    static const char *names[] = {"none", "relu", "gelu-tanh", "gelu-erf", "silu"};
    return names[act];
}

/* C = A B, all row-major doubles: rows i, then k, then a contiguous row of
 * B into a contiguous row of C (vectorizes). */
static void ref_matmul(const double *a, const double *b, double *c, int64_t M, int64_t N, int64_t K) {
    memset(c, 0, sizeof(double) * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) {
            double av = a[i * K + k];
            const double *brow = b + k * N;
            double *crow = c + i * N;
            for (int64_t j = 0; j < N; j++)
                crow[j] += av * brow[j];
        }
}

/* ---- tc_matmul ---- */

typedef struct MmCase {
    int64_t M, N, K;
    tc_dtype dtype;
    Lay la, lb, lc;
    bool bias;
    tc_activation act;
    bool sampled; /* compare on SAMPLES random elements instead of all */
} MmCase;

enum { SAMPLES = 2000 };

static bool run_matmul(tc_context *ctx, CUstream stream, const MmCase *cs) {
    int64_t M = cs->M, N = cs->N, K = cs->K;
    tc_dtype t = cs->dtype;
    Buf a, b, c, bias;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c), memset(&bias, 0, sizeof bias);
    double *ad = NULL, *bd = NULL, *biasd = NULL, *ref = NULL;
    bool ok = buf_alloc(ctx, &a, t, M, K, cs->la) && buf_alloc(ctx, &b, t, K, N, cs->lb) &&
              buf_alloc(ctx, &c, t, M, N, cs->lc) && (!cs->bias || buf_alloc(ctx, &bias, t, 1, N, LAY_ROW));
    ok = ok && (ad = buf_fill(&a)) && (bd = buf_fill(&b)) && (!cs->bias || (biasd = buf_fill(&bias)));
    ok = ok && buf_upload(ctx, &a) && buf_upload(ctx, &b) && (!cs->bias || buf_upload(ctx, &bias)) &&
         buf_poison(ctx, &c);
    tc_matmul_plan plan;
    memset(&plan, 0, sizeof plan);
    ok = ok && GT_OK(tc_matmul_plan_for(t, M, N, K, a.sr, a.sc, b.sr, b.sc, c.sr, c.sc, cs->bias, cs->act, &plan));
    ok = ok &&
         GT_OK(tc_matmul(ctx, stream, t, base(&c), base(&a), base(&b), cs->bias ? base(&bias) : 0, M, N, K, a.sr, a.sc,
                         b.sr, b.sc, c.sr, c.sc, cs->act)) &&
         GT_OK(tc_stream_synchronize(ctx, stream)) && buf_download(ctx, &c);

    GtErr err = {0};
    size_t clobbered = 0, not_finite = 0;
    if (ok && !cs->sampled) {
        ref = malloc(sizeof(double) * (size_t)(M * N));
        ok = ref != NULL;
        if (ok) {
            ref_matmul(ad, bd, ref, M, N, K);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    gt_err_add(&err, gt_get(t, c.host, at(&c, i, j)),
                               activate(ref[i * N + j] + (biasd ? biasd[j] : 0), cs->act));
        }
    } else if (ok) {
        for (int s = 0; s < SAMPLES; s++) {
            int64_t i = (int64_t)(gt_uniform() * (double)M), j = (int64_t)(gt_uniform() * (double)N);
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += ad[i * K + k] * bd[k * N + j];
            gt_err_add(&err, gt_get(t, c.host, at(&c, i, j)), activate(acc + (biasd ? biasd[j] : 0), cs->act));
        }
    }
    if (ok) {
        clobbered = buf_clobbered(&c);
        not_finite = buf_not_finite(&c);
    }
    double tol = gt_tolerance(t), e = gt_err_value(&err);
    bool pass = ok && gt_record(t, e, tol) && clobbered == 0 && not_finite == 0;
    printf(
        "matmul %-4s %5lldx%-5lldx%-5lld A %-7s B %-7s C %-7s bias=%d act=%-9s tile %dx%dx%d w%d%s err %.2e (tol %.0e)",
        gt_dtype_name(t), (long long)M, (long long)N, (long long)K, lay_name(cs->la), lay_name(cs->lb),
        lay_name(cs->lc), cs->bias, act_name(cs->act), plan.block_m, plan.block_n, plan.block_k, plan.num_warps,
        cs->sampled ? " sampled" : "", e, tol);
    if (clobbered)
        printf(" wrote %zu elements outside C", clobbered);
    if (not_finite)
        printf(" %zu outputs NaN/inf or unwritten", not_finite);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    free(ad), free(bd), free(biasd), free(ref);
    buf_free(ctx, &a), buf_free(ctx, &b), buf_free(ctx, &c), buf_free(ctx, &bias);
    return pass;
}

/* ---- tc_blockdiag_matmul ---- */

typedef struct BdCase {
    int64_t batch, nblocks, bin, bout;
    tc_dtype dtype;
    bool w_transposed; /* w stored [nblocks, bout, bin] */
    Lay lx, ly;        /* LAY_ROW, LAY_ROW_PAD or LAY_ODD */
} BdCase;

static bool run_blockdiag(tc_context *ctx, CUstream stream, const BdCase *cs) {
    int64_t B = cs->batch, nb = cs->nblocks, bin = cs->bin, bout = cs->bout;
    tc_dtype t = cs->dtype;
    Buf x, y, w;
    memset(&x, 0, sizeof x), memset(&y, 0, sizeof y), memset(&w, 0, sizeof w);
    double *xd = NULL, *wd = NULL;
    /* w as a (nblocks * bin) x bout matrix (row j * bin + i is w[j, i, :]), or transposed */
    bool ok = buf_alloc(ctx, &x, t, B, nb * bin, cs->lx) && buf_alloc(ctx, &y, t, B, nb * bout, cs->ly) &&
              (cs->w_transposed ? buf_alloc(ctx, &w, t, nb * bout, bin, LAY_ROW)
                                : buf_alloc(ctx, &w, t, nb * bin, bout, LAY_ROW));
    ok = ok && (xd = buf_fill(&x)) && (wd = buf_fill(&w)) && buf_upload(ctx, &x) && buf_upload(ctx, &w) &&
         buf_poison(ctx, &y);
    int64_t swb = bin * bout, swk = cs->w_transposed ? 1 : bout, swn = cs->w_transposed ? bin : 1;
    tc_matmul_plan plan;
    memset(&plan, 0, sizeof plan);
    ok = ok && GT_OK(tc_blockdiag_matmul_plan_for(t, B, nb, bin, bout, x.sr, swb, swk, swn, y.sr, &plan));
    ok = ok &&
         GT_OK(tc_blockdiag_matmul(ctx, stream, t, base(&y), base(&x), base(&w), B, nb, bin, bout, x.sr, swb, swk, swn,
                                   y.sr)) &&
         GT_OK(tc_stream_synchronize(ctx, stream)) && buf_download(ctx, &y);
    GtErr err = {0};
    size_t clobbered = 0, not_finite = 0;
    double *acc = malloc(sizeof(double) * (size_t)bout);
    ok = ok && acc;
    if (ok) {
        for (int64_t r = 0; r < B; r++)
            for (int64_t j = 0; j < nb; j++) {
                memset(acc, 0, sizeof(double) * (size_t)bout);
                for (int64_t i = 0; i < bin; i++) {
                    double xv = xd[r * nb * bin + j * bin + i];
                    for (int64_t o = 0; o < bout; o++)
                        acc[o] += xv * (cs->w_transposed ? wd[(j * bout + o) * bin + i] : wd[(j * bin + i) * bout + o]);
                }
                for (int64_t o = 0; o < bout; o++)
                    gt_err_add(&err, gt_get(t, y.host, at(&y, r, j * bout + o)), acc[o]);
            }
        clobbered = buf_clobbered(&y);
        not_finite = buf_not_finite(&y);
    }
    double tol = gt_tolerance(t), e = gt_err_value(&err);
    bool pass = ok && gt_record(t, e, tol) && clobbered == 0 && not_finite == 0;
    printf("blockdiag %-4s batch=%-5lld %3lld blocks of %4lldx%-4lld w %s x %-7s y %-7s tile %dx%dx%d w%d err %.2e "
           "(tol %.0e)",
           gt_dtype_name(t), (long long)B, (long long)nb, (long long)bin, (long long)bout,
           cs->w_transposed ? "[nb,bout,bin]" : "[nb,bin,bout]", lay_name(cs->lx), lay_name(cs->ly), plan.block_m,
           plan.block_n, plan.block_k, plan.num_warps, e, tol);
    if (clobbered)
        printf(" wrote %zu elements outside y", clobbered);
    if (not_finite)
        printf(" %zu outputs NaN/inf or unwritten", not_finite);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    free(acc), free(xd), free(wd);
    buf_free(ctx, &x), buf_free(ctx, &y), buf_free(ctx, &w);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_matmul");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    const tc_dtype F16 = TC_DTYPE_F16, BF16 = TC_DTYPE_BF16;

    /* shapes x the four layouts x f16 and bf16 */
    static const int64_t shapes[][3] = {
        {1, 64, 64},  {1, 1000, 129}, {17, 33, 40},    {17, 1000, 129}, {1000, 37, 129}, {300, 200, 8},
        {64, 64, 64}, {100, 100, 16}, {257, 129, 300}, {1, 4096, 4096}, {128, 256, 96},  {1000, 1000, 64},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int layout = 0; layout < 4; layout++)
            for (int d = 0; d < 2; d++) {
                int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                if (quick && M >= 1000)
                    continue;
                MmCase cs = {M,
                             N,
                             K,
                             d ? BF16 : F16,
                             layout & 1 ? LAY_COL : LAY_ROW,
                             layout & 2 ? LAY_COL : LAY_ROW,
                             layout == 3 ? LAY_COL : LAY_ROW,
                             false,
                             TC_ACTIVATION_NONE,
                             false};
                run_matmul(ctx, stream, &cs);
            }

    /* bias and every activation */
    for (int act = 0; act <= TC_ACTIVATION_SILU; act++)
        for (int bias = 0; bias < 2; bias++)
            for (int d = 0; d < 2; d++) {
                MmCase cs = {257, 129, 300, d ? BF16 : F16, LAY_ROW, LAY_ROW, LAY_ROW, bias, (tc_activation)act, false};
                run_matmul(ctx, stream, &cs);
                MmCase ct = {17, 1000, 129, d ? F16 : BF16, LAY_COL, LAY_ROW, LAY_ROW, bias, (tc_activation)act, false};
                if (!quick || act % 2 == 0)
                    run_matmul(ctx, stream, &ct);
            }

    /* other layouts */
    static const struct {
        Lay a, b, c;
    } lays[] = {
        {LAY_ROW_PAD, LAY_ROW_PAD, LAY_ROW_PAD}, {LAY_COL_PAD, LAY_COL_PAD, LAY_COL_PAD}, {LAY_ODD, LAY_ODD, LAY_ODD},
        {LAY_ODD_COL, LAY_ODD_COL, LAY_ODD_COL}, {LAY_STEP2, LAY_STEP2, LAY_STEP2},       {LAY_ROW, LAY_BCAST, LAY_ROW},
        {LAY_ODD, LAY_COL_PAD, LAY_STEP2},       {LAY_STEP2, LAY_ROW, LAY_COL},
    };
    static const int64_t lshapes[][3] = {{1000, 37, 129}, {17, 33, 40}, {1, 200, 77}, {130, 140, 150}};
    for (size_t l = 0; l < sizeof lays / sizeof lays[0]; l++)
        for (size_t s = 0; s < sizeof lshapes / sizeof lshapes[0]; s++) {
            if (quick && lshapes[s][0] >= 1000)
                continue;
            MmCase cs = {lshapes[s][0],
                         lshapes[s][1],
                         lshapes[s][2],
                         (l + s) % 2 ? BF16 : F16,
                         lays[l].a,
                         lays[l].b,
                         lays[l].c,
                         s == 3,
                         s == 3 ? TC_ACTIVATION_GELU_TANH : TC_ACTIVATION_NONE,
                         false};
            run_matmul(ctx, stream, &cs);
        }

    /* big: in full up to 1024^3, sampled beyond */
    if (!quick) {
        static const MmCase big[] = {
            {1000, 1000, 1000, TC_DTYPE_F16, LAY_ROW, LAY_ROW, LAY_ROW, false, TC_ACTIVATION_NONE, false},
            {1024, 1024, 1024, TC_DTYPE_BF16, LAY_COL, LAY_COL, LAY_COL, true, TC_ACTIVATION_GELU_ERF, false},
            {4096, 4096, 4096, TC_DTYPE_F16, LAY_ROW, LAY_ROW, LAY_ROW, false, TC_ACTIVATION_NONE, true},
            {2048, 3000, 1111, TC_DTYPE_BF16, LAY_COL, LAY_ROW, LAY_ROW, true, TC_ACTIVATION_SILU, true},
        };
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
            run_matmul(ctx, stream, &big[i]);
    }

    /* block-diagonal */
    static const int64_t bshapes[][4] = {
        {512, 64, 64, 64}, {256, 4, 256, 256}, {1000, 4, 37, 129}, {17, 3, 16, 48},
        {1, 8, 16, 16},    {300, 2, 100, 24},  {513, 16, 32, 8},
    };
    static const Lay blays[][2] = {{LAY_ROW, LAY_ROW}, {LAY_ROW_PAD, LAY_ROW_PAD}, {LAY_ODD, LAY_ODD}};
    for (size_t s = 0; s < sizeof bshapes / sizeof bshapes[0]; s++)
        for (int wt = 0; wt < 2; wt++)
            for (int l = 0; l < 3; l++) {
                if (l > 0 && wt) /* the other row layouts once per shape */
                    continue;
                if (quick && bshapes[s][0] * bshapes[s][1] * bshapes[s][2] * bshapes[s][3] > ((int64_t)1 << 26))
                    continue;
                BdCase cs = {bshapes[s][0],
                             bshapes[s][1],
                             bshapes[s][2],
                             bshapes[s][3],
                             (s + (size_t)wt + (size_t)l) % 2 ? BF16 : F16,
                             wt,
                             blays[l][0],
                             blays[l][1]};
                run_blockdiag(ctx, stream, &cs);
            }

    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
