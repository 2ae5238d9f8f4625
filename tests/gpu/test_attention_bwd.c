/*
 * test_attention_bwd.c — tc_attention_bwd (dQ, dK, dV) on the GPU against a
 * float64 CPU reference of the gradients.
 *
 *     test_attention_bwd [--quick]  (--quick: leave out the longest sequences, varlen lengths up to 300)
 *
 * Each case runs tc_attention_fwd for O and LSE, then tc_attention_bwd with
 * a fresh random dO. The reference recomputes the forward pass in float64
 * (S = scale Q K^T, the row's log-sum-exp, P), then dP = dO V^T, dS = P (dP -
 * Delta) with Delta = rowsum(dO * O) over the O the GPU wrote (what the
 * backward pass is given), dQ = scale dS K, dK = scale dS^T Q summed over
 * the query heads of the KV head's group, dV = P^T dO likewise.
 *
 * Cases: every case class of tc_attention_fwd: lengths 1, 17 and others
 * that are not multiples of the tiles; seqlen_q != seqlen_k both ways
 * (queries that see no key under the bottom-right causal mask: their dQ row
 * must be exactly 0); causal and not; MHA, GQA 8:1 and MQA; f16 and bf16;
 * head dims 32, 64, 80, 96, 128, 256; varlen batches of random lengths;
 * scales negative and zero. Each tensor has its own layout: [batch, seq,
 * heads, dim] ("s"), [batch, heads, seq, dim] ("h"), or rows padded to a
 * stride of dim + 8 ("p", rows on 16 bytes) or dim + 3 ("u", rows off 16
 * bytes), given as one letter per tensor in q k v o dO dQ dK dV order. dQ
 * comes as the plan says (on sm_90a TMA reductions of atomic adds up to
 * head dim 128 without varlen, else its own kernel), or forced: ("atomic")
 * from atomic adds in the workspace (TILEC_ATTENTION_BWD_DQ=atomic),
 * ("kernel") from its own kernel (=kernel); "det" cases run twice with
 * deterministic set and must give bit-identical gradients.
 *
 * Inputs are random normals, fresh each run. dQ, dK, dV and the workspace
 * are filled with 0xFF (NaN) before the call: every gradient element must
 * be written, and nothing else (the padding of padded rows, GUARD elements
 * after each tensor) touched. Checks: ||grad - ref|| / ||ref|| < 1e-2 for
 * each of dQ, dK, dV (worst16 is the worst of the three). One line per
 * case; gpu_test.h has the rest.
 */
#include <tilec/stdlib.h>

#include "attention_test.h"

enum { NT = 8 }; /* q k v o dO dQ dK dV */
enum { TQ, TK, TV, TO, TDO, TDQ, TDK, TDV };

typedef struct BwCase {
    tc_dtype dtype;
    int64_t batch, heads, kv_heads, sq, sk, d;
    int causal;
    const char *layouts; /* one of "shpu" per tensor, q k v o dO dQ dK dV; NULL: all "s" */
    int varlen;          /* 0: fixed lengths; 1: random lengths, k = q; 2: random and independent */
    bool big;            /* left out by --quick */
    double scale;        /* 0: 1 / sqrt(d); else this (NAN: 0) */
    int mode;            /* 0: the default plan; 1: dQ by atomics; 2: deterministic, run twice; 3: dQ's kernel */
} BwCase;

/* A tensor: element (b, h, i, d) at b * sb + h * sh + (row0[b] + i) * sm + d. */
typedef struct Ten {
    tc_dtype dtype;
    int64_t sb, sh, sm;
    int64_t heads, rows, d, nb;
    size_t n; /* elements allocated: data, then GUARD */
    void *host;
    double *val; /* the rounded inputs (or the downloaded outputs), same indexing */
    CUdeviceptr dev;
} Ten;

static bool ten_alloc(tc_context *ctx, Ten *x, tc_dtype t, int64_t batch, int64_t heads, int64_t rows, int64_t d,
                      char layout, bool varlen) {
    memset(x, 0, sizeof *x);
    x->dtype = t;
    x->heads = heads, x->rows = rows, x->d = d;
    int64_t nb = x->nb = varlen ? 1 : batch;                         /* varlen: one "batch" of all packed rows */
    int64_t row = layout == 'p' ? d + 8 : layout == 'u' ? d + 3 : d; /* the stride between a row's starts */
    if (layout == 'h')
        x->sm = row, x->sh = rows * row, x->sb = heads * rows * row;
    else
        x->sh = row, x->sm = heads * row, x->sb = rows * heads * row;
    if (varlen)
        x->sb = 0;
    x->n = (size_t)(nb * heads * rows * row + GUARD);
    x->host = malloc(x->n * gt_dtype_bytes(t));
    x->val = calloc(x->n, sizeof(double));
    if (!x->host || !x->val) {
        printf("out of host memory\n");
        return false;
    }
    memset(x->host, 0xFF, x->n * gt_dtype_bytes(t));
    return !ctx || GT_OK(tc_mem_alloc(ctx, x->n * gt_dtype_bytes(t), &x->dev)); /* no ctx: host only */
}

static void ten_free(tc_context *ctx, Ten *x) {
    if (x->dev)
        tc_mem_free(ctx, x->dev);
    free(x->host);
    free(x->val);
    memset(x, 0, sizeof *x);
}

static size_t ten_at(const Ten *x, int64_t b, int64_t h, int64_t row) {
    return (size_t)(b * x->sb + h * x->sh + row * x->sm);
}

/* Rounded random normals in every element of the tensor (padding and GUARD stay NaN). */
static void ten_fill(Ten *x) {
    for (int64_t b = 0; b < x->nb; b++)
        for (int64_t h = 0; h < x->heads; h++)
            for (int64_t r = 0; r < x->rows; r++)
                for (int64_t dd = 0; dd < x->d; dd++) {
                    size_t i = ten_at(x, b, h, r) + (size_t)dd;
                    x->val[i] = gt_put_get(x->dtype, x->host, i, gt_normal());
                }
}

static bool ten_upload(tc_context *ctx, const Ten *x) {
    return GT_OK(tc_memcpy_htod(ctx, x->dev, x->host, x->n * gt_dtype_bytes(x->dtype)));
}

static bool ten_poison(tc_context *ctx, const Ten *x) {
    return GT_OK(tc_memset_d8(ctx, x->dev, 0xFF, x->n * gt_dtype_bytes(x->dtype)));
}

/* Downloads an output into host and val. */
static bool ten_download(tc_context *ctx, Ten *x) {
    if (!GT_OK(tc_memcpy_dtoh(ctx, x->host, x->dev, x->n * gt_dtype_bytes(x->dtype))))
        return false;
    for (size_t i = 0; i < x->n; i++)
        x->val[i] = gt_get(x->dtype, x->host, i);
    return true;
}

/* Elements of an output that are not part of it (padding, GUARD) and were written. */
static size_t ten_clobbered(const Ten *x) {
    bool *mine = calloc(x->n, 1);
    if (!mine)
        return x->n;
    for (int64_t b = 0; b < x->nb; b++)
        for (int64_t h = 0; h < x->heads; h++)
            for (int64_t r = 0; r < x->rows; r++)
                for (int64_t dd = 0; dd < x->d; dd++)
                    mine[ten_at(x, b, h, r) + (size_t)dd] = true;
    size_t bad = 0;
    for (size_t i = 0; i < x->n; i++)
        bad += !mine[i] && !gt_is_poison(x->dtype, x->host, i);
    free(mine);
    return bad;
}

static double dotd(const double *a, const double *b, int64_t n) {
    double s[4] = {0, 0, 0, 0}; /* four sums: not bound by the add's latency */
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int u = 0; u < 4; u++)
            s[u] += a[i + u] * b[i + u];
    for (; i < n; i++)
        s[0] += a[i] * b[i];
    return s[0] + s[1] + s[2] + s[3];
}

static const char *mode_name(int mode) {
    return mode == 1 ? " atomic" : mode == 2 ? " det" : mode == 3 ? " kernel" : "";
}

static bool run_case(tc_context *ctx, CUstream stream, const BwCase *cs, bool quick) {
    tc_dtype t = cs->dtype;
    int64_t B = cs->batch, H = cs->heads, KVH = cs->kv_heads, D = cs->d, group = H / KVH;
    bool varlen = cs->varlen != 0;
    const char *lay = cs->layouts ? cs->layouts : "ssssssss";
    GtSeqs seqs;
    gt_attention_seqs(&seqs, B, cs->varlen, cs->sq, cs->sk, quick ? 300 : 700);
    const int64_t *lq = seqs.lq, *lk = seqs.lk, *q0 = seqs.q0, *k0 = seqs.k0;
    int64_t sq = seqs.sq, sk = seqs.sk, rows_q = seqs.rows_q, rows_k = seqs.rows_k;

    Ten x[NT];
    memset(x, 0, sizeof x);
    CUdeviceptr lse_dev = 0, cuq_dev = 0, cuk_dev = 0, ws = 0;
    size_t lse_n = (size_t)(B * H * sq + GUARD), ws_bytes = 0;
    float *lse = malloc(lse_n * sizeof(float));
    double *s = malloc(sizeof(double) * (size_t)sk), *p = malloc(sizeof(double) * (size_t)sk);
    double *dq_ref = malloc(sizeof(double) * (size_t)D);
    Ten ref_dk, ref_dv; /* float64 accumulators with dK's and dV's indexing */
    memset(&ref_dk, 0, sizeof ref_dk), memset(&ref_dv, 0, sizeof ref_dv);
    bool ok = lse && s && p && dq_ref;
    if (!ok)
        printf("out of host memory\n");
    for (int i = 0; i < NT && ok; i++) {
        bool kv = i == TK || i == TV || i == TDK || i == TDV;
        ok = ten_alloc(ctx, &x[i], t, B, kv ? KVH : H, kv ? rows_k : rows_q, D, lay[i], varlen);
    }
    ok = ok && GT_OK(tc_mem_alloc(ctx, lse_n * sizeof(float), &lse_dev));
    if (ok && varlen) {
        int32_t cu[2][GT_MAX_SEQS + 1];
        for (int64_t b = 0; b <= B; b++)
            cu[0][b] = (int32_t)q0[b], cu[1][b] = (int32_t)k0[b];
        ok = GT_OK(tc_mem_alloc(ctx, sizeof cu[0], &cuq_dev)) && GT_OK(tc_mem_alloc(ctx, sizeof cu[1], &cuk_dev)) &&
             GT_OK(tc_memcpy_htod(ctx, cuq_dev, cu[0], sizeof cu[0])) &&
             GT_OK(tc_memcpy_htod(ctx, cuk_dev, cu[1], sizeof cu[1]));
    }
    /* the dQ strategy of this case, for the plan, the workspace and the call */
    if (cs->mode == 1 || cs->mode == 3)
        setenv("TILEC_ATTENTION_BWD_DQ", cs->mode == 1 ? "atomic" : "kernel", 1);
    int det = cs->mode == 2;
    tc_attention_bwd_plan plan;
    memset(&plan, 0, sizeof plan);
    ok = ok && GT_OK(tc_attention_bwd_plan_for(t, B, H, KVH, sq, sk, D, cs->causal, varlen, det, &plan)) &&
         GT_OK(tc_attention_bwd_workspace_size(t, B, H, KVH, sq, sk, D, cs->causal, varlen, det, &ws_bytes));
    ok = ok && ws_bytes == plan.workspace_bytes && GT_OK(tc_mem_alloc(ctx, ws_bytes, &ws));
    if (ok && ((cs->mode == 1 && !plan.dq_atomic) || (cs->mode == 3 && plan.dq_atomic))) {
        printf("TILEC_ATTENTION_BWD_DQ=%s did not give that plan\n", cs->mode == 1 ? "atomic" : "kernel");
        ok = false;
    }
    double scale = cs->scale == 0 ? 1.0 / sqrt((double)D) : isnan(cs->scale) ? 0.0 : cs->scale;
    if (ok) {
        ten_fill(&x[TQ]), ten_fill(&x[TK]), ten_fill(&x[TV]), ten_fill(&x[TDO]);
        ok = ten_upload(ctx, &x[TQ]) && ten_upload(ctx, &x[TK]) && ten_upload(ctx, &x[TV]) &&
             ten_upload(ctx, &x[TDO]) && ten_poison(ctx, &x[TO]) &&
             GT_OK(tc_memset_d8(ctx, lse_dev, 0xFF, lse_n * sizeof(float)));
    }
    ok = ok &&
         GT_OK(tc_attention_fwd(ctx, stream, t, x[TO].dev, lse_dev, x[TQ].dev, x[TK].dev, x[TV].dev, B, H, KVH, sq, sk,
                                D, x[TQ].sb, x[TQ].sh, x[TQ].sm, x[TK].sb, x[TK].sh, x[TK].sm, x[TV].sb, x[TV].sh,
                                x[TV].sm, x[TO].sb, x[TO].sh, x[TO].sm, cuq_dev, cuk_dev, (float)scale, cs->causal));
    bool same = true; /* deterministic: the second run's bits equal the first's */
    for (int run = 0; run < (det ? 2 : 1) && ok; run++) {
        void *first[3] = {NULL, NULL, NULL};
        if (run == 1)
            for (int g = 0; g < 3; g++) {
                size_t bytes = x[TDQ + g].n * gt_dtype_bytes(t);
                first[g] = malloc(bytes);
                if (first[g])
                    memcpy(first[g], x[TDQ + g].host, bytes);
            }
        ok = ten_poison(ctx, &x[TDQ]) && ten_poison(ctx, &x[TDK]) && ten_poison(ctx, &x[TDV]) &&
             GT_OK(tc_memset_d8(ctx, ws, 0xFF, ws_bytes)) &&
             GT_OK(tc_attention_bwd(ctx, stream, t, x[TDQ].dev, x[TDK].dev, x[TDV].dev, x[TDO].dev, x[TQ].dev,
                                    x[TK].dev, x[TV].dev, x[TO].dev, lse_dev, B, H, KVH, sq, sk, D, x[TQ].sb, x[TQ].sh,
                                    x[TQ].sm, x[TK].sb, x[TK].sh, x[TK].sm, x[TV].sb, x[TV].sh, x[TV].sm, x[TO].sb,
                                    x[TO].sh, x[TO].sm, x[TDO].sb, x[TDO].sh, x[TDO].sm, x[TDQ].sb, x[TDQ].sh,
                                    x[TDQ].sm, x[TDK].sb, x[TDK].sh, x[TDK].sm, x[TDV].sb, x[TDV].sh, x[TDV].sm,
                                    cuq_dev, cuk_dev, (float)scale, cs->causal, det, ws, ws_bytes)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && ten_download(ctx, &x[TO]) && ten_download(ctx, &x[TDQ]) &&
             ten_download(ctx, &x[TDK]) && ten_download(ctx, &x[TDV]) &&
             GT_OK(tc_memcpy_dtoh(ctx, lse, lse_dev, lse_n * sizeof(float)));
        for (int g = 0; g < 3 && run == 1; g++) {
            same = same && first[g] && ok && memcmp(first[g], x[TDQ + g].host, x[TDQ + g].n * gt_dtype_bytes(t)) == 0;
            free(first[g]);
        }
    }
    if (cs->mode == 1 || cs->mode == 3)
        unsetenv("TILEC_ATTENTION_BWD_DQ");

    /* the reference: dQ row by row, dK and dV accumulated in float64 */
    GtErr err[3];
    memset(err, 0, sizeof err);
    size_t empty_rows = 0, empty_bad = 0, clobbered = 0;
    ok = ok && ten_alloc(NULL, &ref_dk, TC_DTYPE_F32, B, KVH, rows_k, D, lay[TDK], varlen) &&
         ten_alloc(NULL, &ref_dv, TC_DTYPE_F32, B, KVH, rows_k, D, lay[TDV], varlen);
    if (ok) {
        double *dp = malloc(sizeof(double) * (size_t)sk);
        for (int64_t b = 0; b < B && dp; b++)
            for (int64_t h = 0; h < H; h++) {
                int64_t kvh = h / group;
                for (int64_t i = 0; i < lq[b]; i++) {
                    int64_t nvis = gt_attention_visible(i, lq[b], lk[b], cs->causal);
                    size_t qrow = ten_at(&x[TQ], b, h, q0[b] + i), dorow = ten_at(&x[TDO], b, h, q0[b] + i);
                    size_t dqrow = ten_at(&x[TDQ], b, h, q0[b] + i), orow = ten_at(&x[TO], b, h, q0[b] + i);
                    if (nvis == 0) { /* LSE -inf: P = 0, dQ = 0 exactly */
                        empty_rows++;
                        for (int64_t dd = 0; dd < D; dd++) {
                            double g = x[TDQ].val[dqrow + (size_t)dd];
                            gt_err_add(&err[0], g, 0.0);
                            empty_bad += g != 0.0;
                        }
                        continue;
                    }
                    double mx = -INFINITY;
                    for (int64_t j = 0; j < nvis; j++) {
                        s[j] = dotd(x[TQ].val + qrow, x[TK].val + ten_at(&x[TK], b, kvh, k0[b] + j), D) * scale;
                        mx = s[j] > mx ? s[j] : mx;
                    }
                    double l = 0;
                    for (int64_t j = 0; j < nvis; j++)
                        l += p[j] = exp(s[j] - mx);
                    /* Delta over the O the forward pass wrote */
                    double delta = dotd(x[TDO].val + dorow, x[TO].val + orow, D);
                    for (int64_t dd = 0; dd < D; dd++)
                        dq_ref[dd] = 0;
                    for (int64_t j = 0; j < nvis; j++) {
                        p[j] /= l;
                        size_t vrow = ten_at(&x[TV], b, kvh, k0[b] + j), krow = ten_at(&x[TK], b, kvh, k0[b] + j);
                        dp[j] = dotd(x[TDO].val + dorow, x[TV].val + vrow, D);
                        double ds = p[j] * (dp[j] - delta);
                        size_t dkrow = ten_at(&ref_dk, b, kvh, k0[b] + j), dvrow = ten_at(&ref_dv, b, kvh, k0[b] + j);
                        for (int64_t dd = 0; dd < D; dd++) {
                            dq_ref[dd] += ds * x[TK].val[krow + (size_t)dd];
                            ref_dk.val[dkrow + (size_t)dd] += ds * x[TQ].val[qrow + (size_t)dd];
                            ref_dv.val[dvrow + (size_t)dd] += p[j] * x[TDO].val[dorow + (size_t)dd];
                        }
                    }
                    for (int64_t dd = 0; dd < D; dd++)
                        gt_err_add(&err[0], x[TDQ].val[dqrow + (size_t)dd], scale * dq_ref[dd]);
                }
            }
        if (!dp)
            ok = false;
        free(dp);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < KVH; h++)
                for (int64_t j = 0; j < lk[b]; j++)
                    for (int64_t dd = 0; dd < D; dd++) {
                        size_t dk = ten_at(&x[TDK], b, h, k0[b] + j) + (size_t)dd;
                        size_t rk = ten_at(&ref_dk, b, h, k0[b] + j) + (size_t)dd;
                        gt_err_add(&err[1], x[TDK].val[dk], scale * ref_dk.val[rk]);
                        gt_err_add(&err[2], x[TDV].val[ten_at(&x[TDV], b, h, k0[b] + j) + (size_t)dd],
                                   ref_dv.val[ten_at(&ref_dv, b, h, k0[b] + j) + (size_t)dd]);
                    }
        for (int g = TDQ; g <= TDV; g++)
            clobbered += ten_clobbered(&x[g]);
    }
    double tol = gt_tolerance(t), e[3];
    bool pass = ok && empty_bad == 0 && clobbered == 0 && same;
    for (int g = 0; g < 3; g++) {
        e[g] = gt_err_value(&err[g]);
        pass &= ok && gt_record(t, e[g], tol);
    }

    char shape[96];
    if (varlen)
        snprintf(shape, sizeof shape, "varlen%s %lld seqs max %lldx%lld", cs->varlen == 1 ? "=" : "!", (long long)B,
                 (long long)sq, (long long)sk);
    else
        snprintf(shape, sizeof shape, "b%lld %lldx%lld", (long long)B, (long long)sq, (long long)sk);
    printf("attention_bwd %-4s %-30s h%-2lld kv%-2lld d%-3lld %-6s %s%s dkdv %dx%d w%d dq %dx%d w%d err dQ %.2e dK "
           "%.2e dV %.2e (tol %.0e)",
           gt_dtype_name(t), shape, (long long)H, (long long)KVH, (long long)D, cs->causal ? "causal" : "full", lay,
           mode_name(cs->mode), plan.dkdv.block_n, plan.dkdv.block_m, plan.dkdv.num_warps, plan.dq.block_m,
           plan.dq.block_n, plan.dq.num_warps, e[0], e[1], e[2], tol);
    if (cs->scale != 0)
        printf(" scale %g", scale);
    if (varlen) {
        printf(" lengths");
        for (int64_t b = 0; b < B; b++)
            printf(cs->varlen == 1 ? " %lld" : " %lld:%lld", (long long)lq[b], (long long)lk[b]);
    }
    if (empty_rows)
        printf(" %zu rows see no key", empty_rows);
    if (empty_bad)
        printf(" (%zu of their dQ elements not 0)", empty_bad);
    if (clobbered)
        printf(" wrote %zu elements outside dQ/dK/dV", clobbered);
    if (!same)
        printf(" (two deterministic runs differ)");
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);

    free(lse), free(s), free(p), free(dq_ref);
    for (int i = 0; i < NT; i++)
        ten_free(ctx, &x[i]);
    ten_free(ctx, &ref_dk), ten_free(ctx, &ref_dv);
    if (lse_dev)
        tc_mem_free(ctx, lse_dev);
    if (cuq_dev)
        tc_mem_free(ctx, cuq_dev);
    if (cuk_dev)
        tc_mem_free(ctx, cuk_dev);
    if (ws)
        tc_mem_free(ctx, ws);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_attention_bwd");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    const tc_dtype F16 = TC_DTYPE_F16, BF16 = TC_DTYPE_BF16;
    /* dtype, batch, heads, kv_heads, sq, sk, d, causal, layouts (q k v o dO dQ dK dV), varlen, big, scale, mode */
    const BwCase cases[] = {
        /* lengths, one head */
        {F16, 1, 1, 1, 1, 1, 64, 0, NULL, 0, false, 0, 0},
        {BF16, 1, 1, 1, 1, 1, 128, 1, "hhhhhhhh", 0, false, 0, 0},
        {F16, 1, 1, 1, 17, 17, 64, 1, NULL, 0, false, 0, 0},
        {BF16, 1, 1, 1, 17, 17, 128, 0, "hhhhhhhh", 0, false, 0, 0},
        {F16, 1, 1, 1, 1000, 1000, 128, 1, NULL, 0, false, 0, 0},
        {BF16, 1, 1, 1, 1000, 1000, 64, 0, "hhhhhhhh", 0, false, 0, 0},
        {BF16, 1, 2, 2, 2049, 2049, 64, 1, NULL, 0, true, 0, 0},
        {F16, 1, 2, 2, 2049, 2049, 128, 0, "hhhhhhhh", 0, true, 0, 0},
        /* seqlen_q != seqlen_k, both ways; rows that see no key */
        {F16, 2, 2, 2, 300, 1000, 64, 1, NULL, 0, false, 0, 0},
        {BF16, 2, 2, 2, 300, 1000, 128, 0, "hhhhhhhh", 0, false, 0, 0},
        {BF16, 2, 2, 2, 1000, 300, 64, 1, "hhhhhhhh", 0, false, 0, 0}, /* 700 rows see no key */
        {F16, 2, 2, 2, 1000, 300, 128, 0, NULL, 0, false, 0, 0},
        {F16, 1, 2, 2, 17, 1, 64, 1, NULL, 0, false, 0, 0},    /* only the last row sees a key */
        {BF16, 1, 2, 2, 1, 500, 128, 1, NULL, 0, false, 0, 0}, /* decode */
        /* MHA with batch > 1 */
        {BF16, 3, 4, 4, 128, 128, 128, 0, NULL, 0, false, 0, 0},
        {F16, 3, 4, 4, 129, 129, 64, 1, "hhhhhhhh", 0, false, 0, 0},
        /* GQA 8:1 and MQA: dK, dV summed over the group */
        {F16, 2, 16, 2, 256, 256, 128, 1, NULL, 0, false, 0, 0},
        {BF16, 1, 16, 2, 300, 400, 64, 0, "hhhhhhhh", 0, false, 0, 0},
        {BF16, 2, 8, 1, 200, 200, 64, 1, NULL, 0, false, 0, 0},
        {F16, 1, 8, 1, 300, 200, 128, 0, "hhhhhhhh", 0, false, 0, 0},
        /* head dims: 32, 80 and 96 (masked columns of a 128 tile), 256, 40 */
        {F16, 2, 2, 2, 333, 333, 32, 1, NULL, 0, false, 0, 0},
        {BF16, 1, 2, 2, 257, 513, 80, 0, "hhhhhhhh", 0, false, 0, 0},
        {F16, 1, 2, 2, 200, 190, 96, 1, NULL, 0, false, 0, 0},
        {BF16, 1, 2, 1, 200, 300, 256, 1, NULL, 0, false, 0, 0},
        {F16, 1, 2, 2, 150, 150, 256, 0, "hhhhhhhh", 0, false, 0, 0},
        {F16, 1, 2, 1, 1, 512, 40, 0, NULL, 0, false, -0.3, 0},
        /* head dim 256 with producers in dK/dV (over a GQA group) and dQ; without them (packed
         * sequences, rows off 16 bytes) */
        {F16, 1, 6, 2, 257, 300, 256, 1, "hhhhhhhh", 0, false, 0, 0},
        {BF16, 2, 4, 1, 333, 257, 256, 0, "shspuhph", 0, false, 0, 0},
        {F16, 3, 4, 2, 0, 0, 256, 0, NULL, 1, false, 0, 0},
        /* each tensor its own layout and strides (padded rows on and off 16 bytes) */
        {F16, 2, 4, 2, 200, 300, 64, 1, "shspuhph", 0, false, 0, 0},
        {BF16, 1, 4, 4, 177, 177, 128, 0, "hsuphsup", 0, false, 0, 0},
        {BF16, 2, 4, 1, 100, 80, 96, 1, "pupuhshs", 0, false, 0, 0},
        /* varlen: random lengths */
        {F16, 5, 2, 1, 0, 0, 64, 1, NULL, 1, false, 0, 0},
        {BF16, 5, 2, 2, 0, 0, 64, 0, "hhhhhhhh", 1, false, 0, 0},
        {BF16, 5, 4, 2, 0, 0, 64, 1, NULL, 2, false, 0, 0}, /* len_q > len_k: rows with no key */
        {F16, 5, 2, 2, 0, 0, 128, 0, "hhhhhhhh", 2, false, 0, 0},
        {BF16, 4, 2, 2, 0, 0, 128, 1, "hspuhspu", 1, false, 0, 0},
        /* other scales: negative, zero (uniform P) */
        {F16, 1, 2, 2, 300, 500, 64, 1, NULL, 0, false, -0.2, 0},
        {BF16, 1, 2, 2, 257, 257, 128, 0, "hhhhhhhh", 0, false, -0.05, 0},
        {F16, 1, 2, 2, 100, 200, 64, 1, "hhhhhhhh", 0, false, NAN, 0},
        /* dQ by atomics in the workspace */
        {F16, 2, 4, 2, 300, 300, 64, 1, NULL, 0, false, 0, 1},
        {BF16, 1, 8, 1, 200, 333, 128, 0, "hshshshs", 0, false, 0, 1},
        {F16, 5, 2, 2, 0, 0, 96, 1, NULL, 2, false, 0, 1},
        {BF16, 1, 2, 2, 100, 60, 256, 1, NULL, 0, false, 0, 1},
        /* dQ from its own kernel where the plan would add it with atomics */
        {F16, 2, 4, 2, 300, 300, 64, 1, NULL, 0, false, 0, 3},
        {BF16, 1, 8, 1, 200, 333, 128, 0, "hshshshs", 0, false, 0, 3},
        {F16, 2, 2, 2, 1000, 300, 128, 1, "shspuhph", 0, false, 0, 3},
        /* deterministic: two runs, bit-identical gradients */
        {F16, 2, 8, 2, 300, 300, 64, 1, NULL, 0, false, 0, 2},
        {BF16, 4, 2, 1, 0, 0, 128, 0, "hhhhhhhh", 2, false, 0, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (quick && cases[c].big)
            continue;
        run_case(ctx, stream, &cases[c], quick);
    }
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
