/*
 * test_attention.c — tc_attention_fwd (O and LSE) on the GPU against a
 * float64 CPU reference.
 *
 *     test_attention [--quick]  (--quick: leave out seqlen 4097 and cap varlen lengths at 500)
 *
 * Cases: seqlen 1, 17, 1000, 4097 with one head; seqlen_q != seqlen_k both
 * ways (queries with no visible key under the bottom-right causal mask get
 * O = 0, LSE = -inf); causal and not; MHA, GQA 8:1 (16 heads, 2 KV heads)
 * and MQA (decode: one query against 1000 keys, too); f16 and bf16; head
 * dims 64 and 128, and 32, 96, 256 once each; both layouts, [batch, seq,
 * heads, dim] ("bshd") and [batch, heads, seq, dim] ("bhsd"); varlen
 * batches of 5 sequences with random lengths in [1, 2000] (one of them with
 * a sequence of length 1 and one of 2000), causal and not, with equal and
 * with independent query and key lengths. Varlen tensors are packed:
 * [total, heads, dim] ("bshd") or [heads, total, dim] ("bhsd"), sequence b
 * at rows cu_seqlens[b] ..; its LSE rows are (b * heads + h) * max_seqlen_q
 * + i for i < its length, and the rest of LSE must stay untouched.
 *
 * Inputs are fresh random normals, scale 1 / sqrt(head_dim). O and LSE are
 * filled with NaN (0xFF) before the launch; every O element and every LSE
 * row of a query must be written, the GUARD elements after them (and LSE's
 * rows past a varlen sequence's end) left alone. Checks: ||O - ref|| /
 * ||ref|| < 1e-2 (recorded as worst16), max |LSE - ref| < 1e-2 (in
 * worst_rel only), and for queries with no visible key O exactly 0 and
 * LSE exactly -inf. One line per case; gpu_test.h has the rest.
 */
#include <tilec/stdlib.h>

#include "attention_test.h"

typedef struct AtCase {
    tc_dtype dtype;
    int64_t batch, heads, kv_heads, sq, sk, d;
    int causal;
    int bhsd;   /* 0: [batch, seq, heads, dim]; 1: [batch, heads, seq, dim] */
    int varlen; /* 0: fixed lengths; 1: random lengths, k = q; 2: random and independent */
    bool big;   /* left out by --quick */
    double scale; /* 0: 1 / sqrt(d); else this (NAN: 0) */
} AtCase;

/* A q/k/v/o tensor: element (b, h, i, d) at b * sb + h * sh + (row0[b] + i) * sm + d. */
typedef struct Ten {
    tc_dtype dtype;
    int64_t sb, sh, sm;
    size_t n; /* elements allocated: data, then GUARD */
    void *host;
    double *val; /* the rounded inputs, same indexing */
    CUdeviceptr dev;
} Ten;

static bool ten_alloc(tc_context *ctx, Ten *x, tc_dtype t, int64_t batch, int64_t heads, int64_t rows_per_batch,
                      int64_t d, int bhsd, bool varlen) {
    memset(x, 0, sizeof *x);
    x->dtype = t;
    /* varlen: one "batch" of all packed rows; the batch stride then does not matter */
    int64_t nb = varlen ? 1 : batch;
    if (bhsd)
        x->sm = d, x->sh = rows_per_batch * d, x->sb = heads * rows_per_batch * d;
    else
        x->sh = d, x->sm = heads * d, x->sb = rows_per_batch * heads * d;
    if (varlen)
        x->sb = 0;
    x->n = (size_t)(nb * heads * rows_per_batch * d + GUARD);
    x->host = malloc(x->n * gt_dtype_bytes(t));
    x->val = calloc(x->n, sizeof(double));
    if (!x->host || !x->val) {
        printf("out of host memory\n");
        return false;
    }
    memset(x->host, 0xFF, x->n * gt_dtype_bytes(t));
    return GT_OK(tc_mem_alloc(ctx, x->n * gt_dtype_bytes(t), &x->dev));
}

static void ten_free(tc_context *ctx, Ten *x) {
    if (x->dev)
        tc_mem_free(ctx, x->dev);
    free(x->host);
    free(x->val);
    memset(x, 0, sizeof *x);
}

/* Rounded random normals in every data element (the GUARD stays NaN). */
static void ten_fill(Ten *x) {
    for (size_t i = 0; i + GUARD < x->n; i++)
        x->val[i] = gt_put_get(x->dtype, x->host, i, gt_normal());
}

static bool ten_upload(tc_context *ctx, const Ten *x) {
    return GT_OK(tc_memcpy_htod(ctx, x->dev, x->host, x->n * gt_dtype_bytes(x->dtype)));
}

static size_t ten_at(const Ten *x, int64_t b, int64_t h, int64_t row) {
    return (size_t)(b * x->sb + h * x->sh + row * x->sm);
}

static bool run_case(tc_context *ctx, CUstream stream, const AtCase *cs, bool quick) {
    tc_dtype t = cs->dtype;
    int64_t B = cs->batch, H = cs->heads, KVH = cs->kv_heads, D = cs->d;
    bool varlen = cs->varlen != 0;
    /* the sequences: lengths, and where each starts (packed rows, or 0) */
    GtSeqs seqs;
    gt_attention_seqs(&seqs, B, cs->varlen, cs->sq, cs->sk, quick ? 500 : 2000);
    const int64_t *lq = seqs.lq, *lk = seqs.lk, *q0 = seqs.q0, *k0 = seqs.k0;
    int64_t sq = seqs.sq, sk = seqs.sk, rows_q = seqs.rows_q, rows_k = seqs.rows_k;

    Ten q, k, v, o;
    memset(&q, 0, sizeof q), memset(&k, 0, sizeof k), memset(&v, 0, sizeof v), memset(&o, 0, sizeof o);
    CUdeviceptr lse_dev = 0, cuq_dev = 0, cuk_dev = 0;
    size_t lse_n = (size_t)(B * H * sq + GUARD);
    float *lse = malloc(lse_n * sizeof(float));
    double *ref_o = malloc(sizeof(double) * (size_t)D), *s = malloc(sizeof(double) * (size_t)(sk > 0 ? sk : 1));
    bool ok = lse && ref_o && s;
    if (!ok)
        printf("out of host memory\n");
    ok = ok && ten_alloc(ctx, &q, t, B, H, rows_q, D, cs->bhsd, varlen) &&
         ten_alloc(ctx, &k, t, B, KVH, rows_k, D, cs->bhsd, varlen) &&
         ten_alloc(ctx, &v, t, B, KVH, rows_k, D, cs->bhsd, varlen) &&
         ten_alloc(ctx, &o, t, B, H, rows_q, D, cs->bhsd, varlen) &&
         GT_OK(tc_mem_alloc(ctx, lse_n * sizeof(float), &lse_dev));
    if (ok && varlen) {
        int32_t cu[2][GT_MAX_SEQS + 1];
        for (int64_t b = 0; b <= B; b++)
            cu[0][b] = (int32_t)q0[b], cu[1][b] = (int32_t)k0[b];
        ok = GT_OK(tc_mem_alloc(ctx, sizeof cu[0], &cuq_dev)) && GT_OK(tc_mem_alloc(ctx, sizeof cu[1], &cuk_dev)) &&
             GT_OK(tc_memcpy_htod(ctx, cuq_dev, cu[0], sizeof cu[0])) &&
             GT_OK(tc_memcpy_htod(ctx, cuk_dev, cu[1], sizeof cu[1]));
    }
    if (ok) {
        ten_fill(&q), ten_fill(&k), ten_fill(&v);
        ok = ten_upload(ctx, &q) && ten_upload(ctx, &k) && ten_upload(ctx, &v) &&
             GT_OK(tc_memset_d8(ctx, o.dev, 0xFF, o.n * gt_dtype_bytes(t))) &&
             GT_OK(tc_memset_d8(ctx, lse_dev, 0xFF, lse_n * sizeof(float)));
    }
    double scale = cs->scale == 0 ? 1.0 / sqrt((double)D) : isnan(cs->scale) ? 0.0 : cs->scale;
    tc_attention_plan plan;
    memset(&plan, 0, sizeof plan);
    ok = ok && GT_OK(tc_attention_plan_for(t, B, H, KVH, sq, sk, D, cs->causal, varlen, &plan));
    ok = ok &&
         GT_OK(tc_attention_fwd(ctx, stream, t, o.dev, lse_dev, q.dev, k.dev, v.dev, B, H, KVH, sq, sk, D, q.sb, q.sh,
                                q.sm, k.sb, k.sh, k.sm, v.sb, v.sh, v.sm, o.sb, o.sh, o.sm, cuq_dev, cuk_dev,
                                (float)scale, cs->causal)) &&
         GT_OK(tc_stream_synchronize(ctx, stream)) &&
         GT_OK(tc_memcpy_dtoh(ctx, o.host, o.dev, o.n * gt_dtype_bytes(t))) &&
         GT_OK(tc_memcpy_dtoh(ctx, lse, lse_dev, lse_n * sizeof(float)));

    /* the reference, row by row, and the checks */
    GtErr err = {0};
    double lse_err = 0;
    size_t empty_rows = 0, empty_bad = 0, clobbered = 0;
    if (ok) {
        int64_t group = H / KVH;
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++) {
                int64_t kvh = h / group;
                for (int64_t i = 0; i < lq[b]; i++) {
                    int64_t nvis = gt_attention_visible(i, lq[b], lk[b], cs->causal);
                    const double *qr = q.val + ten_at(&q, b, h, q0[b] + i);
                    size_t orow = ten_at(&o, b, h, q0[b] + i);
                    size_t lse_i = (size_t)((b * H + h) * sq + i);
                    double out_lse = lse[lse_i];
                    if (nvis == 0) {
                        empty_rows++;
                        for (int64_t dd = 0; dd < D; dd++) {
                            double ov = gt_get(t, o.host, orow + (size_t)dd);
                            gt_err_add(&err, ov, 0.0);
                            empty_bad += ov != 0.0;
                        }
                        empty_bad += !(isinf(out_lse) && out_lse < 0);
                        continue;
                    }
                    double mx = -INFINITY;
                    for (int64_t j = 0; j < nvis; j++) {
                        const double *kr = k.val + ten_at(&k, b, kvh, k0[b] + j);
                        double a4[4] = {0, 0, 0, 0}; /* four sums: not bound by the add's latency */
                        int64_t dd = 0;
                        for (; dd + 4 <= D; dd += 4)
                            for (int u = 0; u < 4; u++)
                                a4[u] += qr[dd + u] * kr[dd + u];
                        for (; dd < D; dd++)
                            a4[0] += qr[dd] * kr[dd];
                        s[j] = (a4[0] + a4[1] + a4[2] + a4[3]) * scale;
                        mx = s[j] > mx ? s[j] : mx;
                    }
                    double l = 0;
                    for (int64_t dd = 0; dd < D; dd++)
                        ref_o[dd] = 0;
                    for (int64_t j = 0; j < nvis; j++) {
                        double p = exp(s[j] - mx);
                        l += p;
                        const double *vr = v.val + ten_at(&v, b, kvh, k0[b] + j);
                        for (int64_t dd = 0; dd < D; dd++)
                            ref_o[dd] += p * vr[dd];
                    }
                    for (int64_t dd = 0; dd < D; dd++)
                        gt_err_add(&err, gt_get(t, o.host, orow + (size_t)dd), ref_o[dd] / l);
                    double e = fabs(out_lse - (mx + log(l)));
                    if (isnan(e) || isinf(e))
                        lse_err = NAN;
                    else if (!isnan(lse_err) && e > lse_err)
                        lse_err = e;
                }
            }
        /* O's guard; LSE's rows past a sequence's end, and its guard */
        for (size_t i = o.n - GUARD; i < o.n; i++)
            clobbered += !gt_is_poison(t, o.host, i);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = lq[b]; i < sq; i++)
                    clobbered += !gt_is_poison(TC_DTYPE_F32, lse, (size_t)((b * H + h) * sq + i));
        for (size_t i = lse_n - GUARD; i < lse_n; i++)
            clobbered += !gt_is_poison(TC_DTYPE_F32, lse, i);
    }
    double tol = gt_tolerance(t), e = gt_err_value(&err), lse_tol = 1e-2;
    bool o_ok = ok && gt_record(t, e, tol);
    bool lse_ok = ok && lse_err < lse_tol; /* NaN fails */
    if (ok && (isnan(lse_err) || lse_err / lse_tol > gt_summary.worst_rel))
        gt_summary.worst_rel = isnan(gt_summary.worst_rel) ? gt_summary.worst_rel : lse_err / lse_tol;
    bool pass = o_ok && lse_ok && empty_bad == 0 && clobbered == 0;

    char shape[96];
    if (varlen)
        snprintf(shape, sizeof shape, "varlen%s %lld seqs max %lldx%lld", cs->varlen == 1 ? "=" : "!",
                 (long long)B, (long long)sq, (long long)sk);
    else
        snprintf(shape, sizeof shape, "b%lld %lldx%lld", (long long)B, (long long)sq, (long long)sk);
    printf("attention %-4s %-32s h%-2lld kv%-2lld d%-3lld %-6s %s tile %dx%dx%d w%d s%d O err %.2e LSE err %.2e "
           "(tol %.0e, %.0e)",
           gt_dtype_name(t), shape, (long long)H, (long long)KVH, (long long)D, cs->causal ? "causal" : "full",
           cs->bhsd ? "bhsd" : "bshd", plan.block_m, plan.block_n, plan.block_d, plan.num_warps, plan.num_stages, e,
           lse_err, tol, lse_tol);
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
        printf(" (%zu of them not O = 0, LSE = -inf)", empty_bad);
    if (clobbered)
        printf(" wrote %zu elements outside O/LSE", clobbered);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);

    free(lse), free(ref_o), free(s);
    ten_free(ctx, &q), ten_free(ctx, &k), ten_free(ctx, &v), ten_free(ctx, &o);
    if (lse_dev)
        tc_mem_free(ctx, lse_dev);
    if (cuq_dev)
        tc_mem_free(ctx, cuq_dev);
    if (cuk_dev)
        tc_mem_free(ctx, cuk_dev);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_attention");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    const tc_dtype F16 = TC_DTYPE_F16, BF16 = TC_DTYPE_BF16;
    /* dtype, batch, heads, kv_heads, sq, sk, d, causal, bhsd, varlen, big, scale */
    const AtCase cases[] = {
        /* sequence lengths, one head */
        {F16, 1, 1, 1, 1, 1, 64, 0, 0, 0, false, 0},
        {BF16, 1, 1, 1, 1, 1, 128, 1, 1, 0, false, 0},
        {F16, 1, 1, 1, 17, 17, 64, 0, 1, 0, false, 0},
        {BF16, 1, 1, 1, 17, 17, 128, 1, 0, 0, false, 0},
        {F16, 1, 1, 1, 1000, 1000, 128, 1, 0, 0, false, 0},
        {BF16, 1, 1, 1, 1000, 1000, 64, 0, 1, 0, false, 0},
        {BF16, 1, 1, 1, 4097, 4097, 64, 0, 1, 0, true, 0},
        {F16, 1, 1, 1, 4097, 4097, 128, 1, 0, 0, true, 0},
        /* seqlen_q != seqlen_k, both ways */
        {F16, 2, 2, 2, 300, 1000, 64, 1, 0, 0, false, 0},
        {BF16, 2, 2, 2, 300, 1000, 128, 0, 1, 0, false, 0},
        {BF16, 2, 2, 2, 1000, 300, 64, 1, 1, 0, false, 0}, /* 700 rows see no key */
        {F16, 2, 2, 2, 1000, 300, 128, 0, 0, 0, false, 0},
        {F16, 1, 2, 2, 17, 1, 64, 1, 0, 0, false, 0}, /* only the last row sees a key */
        /* MHA with batch > 1 */
        {BF16, 3, 4, 4, 128, 128, 128, 0, 0, 0, false, 0},
        {F16, 3, 4, 4, 129, 129, 64, 1, 1, 0, false, 0},
        /* GQA 8:1 and MQA */
        {F16, 2, 16, 2, 256, 256, 128, 1, 0, 0, false, 0},
        {BF16, 1, 16, 2, 500, 700, 64, 0, 1, 0, false, 0},
        {BF16, 2, 8, 1, 200, 200, 64, 1, 0, 0, false, 0},
        {F16, 1, 8, 1, 300, 200, 128, 0, 1, 0, false, 0},
        {F16, 2, 4, 1, 1, 1000, 128, 1, 1, 0, false, 0}, /* decode */
        {BF16, 1, 16, 2, 1, 777, 64, 1, 0, 0, false, 0}, /* decode, GQA */
        /* the other head dims */
        {F16, 2, 2, 2, 333, 333, 32, 1, 0, 0, false, 0},
        {BF16, 1, 2, 2, 257, 513, 96, 0, 1, 0, false, 0},
        {F16, 1, 2, 1, 200, 300, 256, 1, 0, 0, false, 0},
        /* varlen: 5 sequences of random lengths in [1, 2000] */
        {F16, 5, 2, 1, 0, 0, 64, 1, 0, 1, false, 0},
        {BF16, 5, 2, 2, 0, 0, 64, 0, 1, 1, false, 0},
        {BF16, 5, 4, 2, 0, 0, 64, 1, 0, 2, false, 0}, /* sequences with len_q > len_k have rows with no key */
        {F16, 5, 2, 2, 0, 0, 128, 0, 1, 2, false, 0},
        {BF16, 5, 2, 2, 0, 0, 128, 1, 1, 1, false, 0},
        /* other scales: negative (the row max is Q K^T's row min times it), zero (uniform weights) */
        {F16, 1, 2, 2, 300, 500, 64, 1, 0, 0, false, -0.2},
        {BF16, 1, 2, 2, 257, 257, 128, 0, 1, 0, false, -0.05},
        {F16, 1, 2, 2, 100, 200, 64, 1, 1, 0, false, NAN},
        /* whole key blocks up to head dim 64, not causal: the plan's EVEN_N (no masked loop) */
        {F16, 2, 4, 2, 200, 256, 64, 0, 0, 0, false, 0},
        {BF16, 1, 2, 2, 64, 128, 32, 0, 1, 0, false, 0},
        {F16, 1, 2, 1, 1, 512, 40, 0, 0, 0, false, -0.3}, /* decode, head dim 40 in a 64 tile */
        /* causal with whole key blocks (EVEN_N: the diagonal blocks skip the sequence-end mask) */
        {BF16, 1, 2, 2, 320, 512, 64, 1, 1, 0, false, 0},
        {F16, 1, 2, 2, 512, 256, 128, 1, 0, 0, false, 0}, /* 256 rows see no key */
        /* more tiles than an H200 holds programs (132 at head dim 128): persistent programs' later rounds,
         * the full ones of odd index in the reverse order; 300 tiles of 128 rows */
        {F16, 1, 150, 50, 129, 256, 128, 0, 0, 0, false, 0},
        {BF16, 1, 150, 50, 129, 200, 128, 1, 1, 0, false, 0},
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
