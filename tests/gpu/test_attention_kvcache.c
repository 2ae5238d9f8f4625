/*
 * test_attention_kvcache.c — tc_kvcache_append and tc_attention_kvcache on
 * the GPU against a float64 CPU reference.
 *
 *     test_attention_kvcache [--quick]  (--quick: shorter caches)
 *
 * Each case builds a KV cache, contiguous ([batch, capacity, kv_heads, dim]
 * "nhd" or [batch, kv_heads, capacity, dim] "hnd") or paged (a pool of
 * pages of page_size tokens, [pages, page_size, kv_heads, dim] or [pages,
 * kv_heads, page_size, dim], each sequence's pages drawn at random from the
 * pool in a shuffled order, the pool larger than what the batch uses).
 * The cached prefix of each sequence is uploaded; its new tokens' K and V
 * are appended by tc_kvcache_append through a slot mapping (with padding
 * tokens of slot -1 among them), and the whole cache is then read back and
 * checked slot by slot: appended slots hold the new rows, every other slot
 * what it held before. Then tc_attention_kvcache runs over it:
 *  - unsplit (num_splits 1), with forced splits, and with the plan's
 *    choice; each output is checked against the reference, and the split
 *    ones against the unsplit one: equal to rounding (norm-relative
 *    difference below one unit in the last place of the storage type);
 *  - sequence lengths: every sequence its own cache length (seqused_k),
 *    among them 0 keys (its rows get O = 0, LSE = -inf), 1 key, lengths
 *    that are not multiples of the page size or of the key block; decode
 *    (1 new token), speculative decoding (2 to 16), and chunked prefill
 *    (packed batches through cu_seqlens_q that mix decode sequences, a
 *    sequence with 0 new tokens and prefill chunks of hundreds of tokens);
 *  - causal and not; MHA, GQA 4:1 and 8:1, MQA; f16 and bf16; head dims
 *    64, 128, 256 and 96; q and o as [batch, seq, heads, dim] or [batch,
 *    heads, seq, dim]; with and without lse; negative scale.
 * Outputs are poisoned (0xFF) before each launch; every row of O and LSE a
 * query owns must be written, rows past a packed sequence's end in LSE and
 * the guard elements after O and LSE left alone. Tolerances as
 * test_attention's: ||O - ref|| / ||ref|| < 1e-2, max |LSE - ref| < 1e-2.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

enum { KV_MAX_B = 8, KV_GUARD = 16, KV_MAX_KV_HEADS = 64 };

typedef struct KvCase {
    tc_dtype dtype;
    int64_t batch, heads, kv_heads, d;
    int64_t max_new;  /* new tokens per sequence: decode 1, speculative up to 16, prefill more */
    int64_t max_keys; /* the longest cache (new tokens included) */
    int varlen_q;     /* new tokens packed through cu_seqlens_q, lengths random in [0, max_new] */
    int page_size;    /* 0: contiguous cache */
    int hnd;          /* cache as [.., kv_heads, tokens, dim] instead of [.., tokens, kv_heads, dim] */
    int bhsd;         /* q and o as [batch, heads, seq, dim] */
    int causal;
    int with_lse;
    int splits;       /* forced split count for the split run (besides 1 and the plan's) */
    double scale;     /* 0: 1 / sqrt(d) */
    bool big;         /* left out by --quick */
    tc_dtype kv;      /* the cache's type: 0 (dtype) or fp8, appended by tc_kvcache_append_fp8 */
    int scaled;       /* fp8: per-KV-head scales of K and V */
} KvCase;

typedef struct Cache {
    int64_t sb, sh, sn; /* per sequence (contiguous) or page (paged); per head; per token */
    int64_t blocks;     /* sequences or pages */
    size_t n;
    void *host;
    CUdeviceptr k, v;
    void *khost, *vhost;
} Cache;

/* The element offset of key j, head kh of sequence b. */
static size_t cache_at(const Cache *c, const int32_t *table, int64_t stride_bt, int page, int64_t b, int64_t j,
                       int64_t kh) {
    if (!page)
        return (size_t)(b * c->sb + kh * c->sh + j * c->sn);
    int64_t p = table[b * stride_bt + j / page];
    return (size_t)(p * c->sb + kh * c->sh + (j % page) * c->sn);
}

static double dot_d(const double *a, const double *b, int64_t d) {
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= d; i += 4)
        for (int u = 0; u < 4; u++)
            s[u] += a[i + u] * b[i + u];
    for (; i < d; i++)
        s[0] += a[i] * b[i];
    return s[0] + s[1] + s[2] + s[3];
}

static double ulp_of(tc_dtype t) {
    return t == TC_DTYPE_BF16 ? 1.0 / 256 : 1.0 / 2048;
}

/* One attention call's results, and their checks against the reference. */
typedef struct Run {
    void *o;
    float *lse;
    double err, lse_err;
    size_t empty_bad, clobbered;
    tc_attention_kvcache_plan plan;
    bool ok;
} Run;

static bool run_case(tc_context *ctx, CUstream stream, const KvCase *cs, bool quick) {
    if (cs->kv_heads > KV_MAX_KV_HEADS || cs->batch > KV_MAX_B) {
        printf("kvcache: case with %lld KV heads, batch %lld: more than the test holds\n", (long long)cs->kv_heads,
               (long long)cs->batch);
        gt_case_done(false);
        return false;
    }
    tc_dtype t = cs->dtype, ct = cs->kv ? cs->kv : t;
    size_t eb = gt_dtype_bytes(t), ceb = gt_dtype_bytes(ct);
    int64_t B = cs->batch, H = cs->heads, KVH = cs->kv_heads, D = cs->d, group = H / KVH;
    int page = cs->page_size;
    int64_t max_keys = quick && cs->max_keys > 1500 ? 1500 : cs->max_keys;

    /* lengths: new tokens lq[b] <= cache length lk[b] (except a sequence
     * with an empty cache), the first sequence 0 keys when there are
     * several, the last the longest */
    int64_t lq[KV_MAX_B], lk[KV_MAX_B], q0[KV_MAX_B + 1];
    q0[0] = 0;
    int64_t sq = 0, sk = 0;
    for (int64_t b = 0; b < B; b++) {
        lq[b] = cs->varlen_q ? (int64_t)(gt_uniform() * (double)(cs->max_new + 1)) : cs->max_new;
        lk[b] = lq[b] + (int64_t)(gt_uniform() * (double)(max_keys - lq[b] + 1));
        if (b == B - 1)
            lk[b] = max_keys;
        if (b == 0 && B >= 3)
            lk[b] = 0; /* no key at all: its rows get O = 0 */
        if (b == 1 && B >= 3)
            lk[b] = lq[b] > 1 ? lq[b] : 1;
        if (lq[b] > lk[b] && b != 0)
            lq[b] = lk[b];
        q0[b + 1] = q0[b] + lq[b];
        sq = lq[b] > sq ? lq[b] : sq;
        sk = lk[b] > sk ? lk[b] : sk;
    }
    if (sq == 0) /* the entry point needs seqlen_q >= 1 */
        sq = 1;
    if (sk == 0)
        sk = 1;
    int64_t rows_q = cs->varlen_q ? q0[B] : sq;

    /* the cache and its block table */
    int64_t stride_bt = page ? (sk + page - 1) / page + 1 : 0; /* one spare entry a row */
    int64_t used_pages = 0;
    for (int64_t b = 0; b < B && page; b++)
        used_pages += (lk[b] + page - 1) / page;
    int64_t num_pages = page ? used_pages + 3 : 0; /* spare pages nobody reads */
    int32_t *table = page ? calloc((size_t)(B * stride_bt), sizeof(int32_t)) : NULL;
    if (page) {
        int32_t *perm = malloc(sizeof(int32_t) * (size_t)num_pages);
        for (int64_t i = 0; i < num_pages; i++)
            perm[i] = (int32_t)i;
        for (int64_t i = num_pages - 1; i > 0; i--) {
            int64_t j = (int64_t)(gt_uniform() * (double)(i + 1));
            int32_t x = perm[i];
            perm[i] = perm[j], perm[j] = x;
        }
        int64_t next = 0;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t p = 0; p < stride_bt; p++)
                table[b * stride_bt + p] = -1; /* entries past the sequence: never read */
            for (int64_t p = 0; p < (lk[b] + page - 1) / page; p++)
                table[b * stride_bt + p] = perm[next++];
        }
        free(perm);
    }
    Cache c;
    memset(&c, 0, sizeof c);
    int64_t tokens_per_block = page ? page : sk + 5; /* contiguous: capacity past the longest */
    c.blocks = page ? num_pages : B;
    if (cs->hnd)
        c.sn = D, c.sh = tokens_per_block * D;
    else
        c.sh = D, c.sn = KVH * D;
    c.sb = tokens_per_block * KVH * D;
    c.n = (size_t)(c.blocks * c.sb) + KV_GUARD;
    c.khost = malloc(c.n * ceb), c.vhost = malloc(c.n * ceb);
    /* per-KV-head scales: what the cache holds times them are the keys and values */
    float ksc[KV_MAX_KV_HEADS], vsc[KV_MAX_KV_HEADS];
    for (int64_t h = 0; h < KVH; h++) {
        ksc[h] = cs->scaled ? (float)gt_uniform_in(0.25, 2.0) : 1.0f;
        vsc[h] = cs->scaled ? (float)gt_uniform_in(0.25, 2.0) : 1.0f;
    }
    double *kval = malloc(c.n * sizeof(double)), *vval = malloc(c.n * sizeof(double));

    /* q and o */
    int64_t qsb, qsh, qsm;
    if (cs->bhsd)
        qsm = D, qsh = rows_q * D, qsb = H * rows_q * D;
    else
        qsh = D, qsm = H * D, qsb = rows_q * H * D;
    if (cs->varlen_q)
        qsb = 0;
    int64_t nbq = cs->varlen_q ? 1 : B;
    size_t qn = (size_t)(nbq * H * rows_q * D) + KV_GUARD;
    void *qhost = malloc(qn * eb);
    double *qval = malloc(qn * sizeof(double));
    size_t lse_n = (size_t)(B * H * sq) + KV_GUARD;
    bool ok = table || !page;
    ok = ok && c.khost && c.vhost && kval && vval && qhost && qval;
    if (!ok)
        printf("out of host memory\n");

    /* fill: every cache element random (the slots of new tokens too: the
     * append must overwrite them), the new tokens' rows separately */
    int64_t new_tokens = 0;
    for (int64_t b = 0; b < B; b++)
        new_tokens += lq[b];
    int64_t pad = 3; /* padding tokens with slot -1 */
    int64_t T = new_tokens + pad;
    void *knew = malloc((size_t)(T * KVH * D) * eb), *vnew = malloc((size_t)(T * KVH * D) * eb);
    double *knv = malloc(sizeof(double) * (size_t)(T * KVH * D)), *vnv = malloc(sizeof(double) * (size_t)(T * KVH * D));
    int64_t *slots = malloc(sizeof(int64_t) * (size_t)T);
    ok = ok && knew && vnew && knv && vnv && slots;
    if (ok) {
        for (size_t i = 0; i < c.n; i++) {
            kval[i] = gt_put_get(ct, c.khost, i, gt_normal());
            vval[i] = gt_put_get(ct, c.vhost, i, gt_normal());
        }
        for (size_t i = 0; i < qn; i++)
            qval[i] = gt_put_get(t, qhost, i, gt_normal());
        for (int64_t i = 0; i < T * KVH * D; i++) {
            knv[i] = gt_put_get(t, knew, (size_t)i, gt_normal());
            vnv[i] = gt_put_get(t, vnew, (size_t)i, gt_normal());
        }
        /* token order: the batch's new tokens, padding interleaved */
        int64_t tok = 0;
        for (int64_t b = 0; b < B; b++) {
            if (b == B / 2)
                for (int64_t p = 0; p < pad; p++)
                    slots[tok++] = -1;
            for (int64_t i = 0; i < lq[b]; i++) {
                int64_t j = lk[b] - lq[b] + i; /* the new tokens are the cache's last */
                int64_t slot = j < 0    ? -1 /* more new tokens than keys: not cached */
                               : page ? (int64_t)table[b * stride_bt + j / page] * page + j % page
                                      : b * tokens_per_block + j;
                slots[tok++] = slot;
            }
        }
    }
    CUdeviceptr kd = 0, vd = 0, qd = 0, od = 0, lsed = 0, tabd = 0, usedd = 0, cuqd = 0, knd = 0, vnd = 0,
                slotd = 0, wsd = 0, ksd = 0, vsd = 0;
    if (ok && cs->scaled)
        ok = GT_OK(tc_mem_alloc(ctx, (size_t)KVH * 4, &ksd)) && GT_OK(tc_mem_alloc(ctx, (size_t)KVH * 4, &vsd)) &&
             GT_OK(tc_memcpy_htod(ctx, ksd, ksc, (size_t)KVH * 4)) &&
             GT_OK(tc_memcpy_htod(ctx, vsd, vsc, (size_t)KVH * 4));
    ok = ok && GT_OK(tc_mem_alloc(ctx, c.n * ceb, &kd)) && GT_OK(tc_mem_alloc(ctx, c.n * ceb, &vd)) &&
         GT_OK(tc_mem_alloc(ctx, qn * eb, &qd)) && GT_OK(tc_mem_alloc(ctx, qn * eb, &od)) &&
         GT_OK(tc_mem_alloc(ctx, lse_n * 4, &lsed)) && GT_OK(tc_mem_alloc(ctx, (size_t)T * KVH * D * eb, &knd)) &&
         GT_OK(tc_mem_alloc(ctx, (size_t)T * KVH * D * eb, &vnd)) && GT_OK(tc_mem_alloc(ctx, (size_t)T * 8, &slotd)) &&
         GT_OK(tc_mem_alloc(ctx, (size_t)B * 4, &usedd)) && GT_OK(tc_mem_alloc(ctx, (size_t)(B + 1) * 4, &cuqd));
    if (ok && page)
        ok = GT_OK(tc_mem_alloc(ctx, (size_t)(B * stride_bt) * 4, &tabd)) &&
             GT_OK(tc_memcpy_htod(ctx, tabd, table, (size_t)(B * stride_bt) * 4));
    if (ok) {
        int32_t used[KV_MAX_B], cuq[KV_MAX_B + 1];
        for (int64_t b = 0; b < B; b++)
            used[b] = (int32_t)lk[b];
        for (int64_t b = 0; b <= B; b++)
            cuq[b] = (int32_t)q0[b];
        ok = GT_OK(tc_memcpy_htod(ctx, kd, c.khost, c.n * ceb)) && GT_OK(tc_memcpy_htod(ctx, vd, c.vhost, c.n * ceb)) &&
             GT_OK(tc_memcpy_htod(ctx, qd, qhost, qn * eb)) &&
             GT_OK(tc_memcpy_htod(ctx, knd, knew, (size_t)T * KVH * D * eb)) &&
             GT_OK(tc_memcpy_htod(ctx, vnd, vnew, (size_t)T * KVH * D * eb)) &&
             GT_OK(tc_memcpy_htod(ctx, slotd, slots, (size_t)T * 8)) &&
             GT_OK(tc_memcpy_htod(ctx, usedd, used, (size_t)B * 4)) &&
             GT_OK(tc_memcpy_htod(ctx, cuqd, cuq, (size_t)(B + 1) * 4));
    }

    /* the append: K and V new rows as [tokens, kv_heads, dim] */
    size_t append_bad = 0;
    if (ok) {
        int64_t pages_arg = page ? num_pages : B, psize = page ? page : tokens_per_block;
        int64_t cp = c.sb, cn = c.sn, ch = c.sh;
        ok = (cs->kv ? GT_OK(tc_kvcache_append_fp8(ctx, stream, t, ct, ksd, vsd, kd, vd, knd, vnd, slotd, T, KVH, D,
                                                   psize, pages_arg, KVH * D, D, KVH * D, D, cp, cn, ch, cp, cn, ch))
                     : GT_OK(tc_kvcache_append(ctx, stream, t, kd, vd, knd, vnd, slotd, T, KVH, D, psize, pages_arg,
                                               KVH * D, D, KVH * D, D, cp, cn, ch, cp, cn, ch))) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && GT_OK(tc_memcpy_dtoh(ctx, c.khost, kd, c.n * ceb)) &&
             GT_OK(tc_memcpy_dtoh(ctx, c.vhost, vd, c.n * ceb));
        /* expected cache: the old values, the new rows in their slots (an fp8 cache: x / scale in f32, rounded
         * to the nearest code; where the device's quotient lands on the other side of a tie, that code) */
        for (int64_t tk = 0; ok && tk < T; tk++) {
            if (slots[tk] < 0)
                continue;
            int64_t blk = slots[tk] / psize, pos = slots[tk] % psize;
            for (int64_t kh = 0; kh < KVH; kh++)
                for (int64_t dd = 0; dd < D; dd++) {
                    size_t at = (size_t)(blk * cp + pos * cn + kh * ch + dd);
                    for (int w = 0; w < 2; w++) {
                        double x = (w ? vnv : knv)[(tk * KVH + kh) * D + dd], *want = w ? vval : kval;
                        if (!cs->kv) {
                            want[at] = x;
                            continue;
                        }
                        double q = (double)((float)x / (w ? vsc : ksc)[kh]);
                        double e = gt_f8_value(ct, gt_f8_encode(ct, q)), g = gt_get(ct, w ? c.vhost : c.khost, at);
                        want[at] = fabs(fabs(g - q) - fabs(e - q)) <= 1e-6 * fabs(q) ? g : e;
                    }
                }
        }
        for (size_t i = 0; ok && i < c.n; i++) {
            bool guard = i >= c.n - KV_GUARD;
            double kg = gt_get(ct, c.khost, i), vg = gt_get(ct, c.vhost, i);
            append_bad += !(kg == kval[i] || (isnan(kg) && isnan(kval[i]))) && !guard;
            append_bad += !(vg == vval[i] || (isnan(vg) && isnan(vval[i]))) && !guard;
        }
        if (append_bad)
            ok = false;
    }

    /* the reference */
    size_t out_n = qn;
    double *ref = calloc(out_n, sizeof(double)), *ref_lse = malloc(sizeof(double) * lse_n);
    double *s = malloc(sizeof(double) * (size_t)(sk > 0 ? sk : 1));
    bool *has_ref = calloc(out_n, sizeof(bool));
    ok = ok && ref && ref_lse && s && has_ref;
    double scale = cs->scale == 0 ? 1.0 / sqrt((double)D) : cs->scale;
    size_t empty_rows = 0;
    for (int64_t b = 0; ok && b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < lq[b]; i++) {
                int64_t kh = h / group;
                int64_t nvis = lk[b];
                if (cs->causal) {
                    int64_t last = i + lk[b] - lq[b];
                    nvis = last + 1 < 0 ? 0 : last + 1 > lk[b] ? lk[b] : last + 1;
                }
                size_t row = (size_t)(b * qsb + h * qsh + (q0[b] * (cs->varlen_q != 0) + i) * qsm);
                size_t li = (size_t)((b * H + h) * sq + i);
                for (int64_t dd = 0; dd < D; dd++)
                    has_ref[row + (size_t)dd] = true;
                if (nvis == 0) {
                    empty_rows++;
                    ref_lse[li] = -INFINITY;
                    continue;
                }
                double mx = -INFINITY;
                for (int64_t j = 0; j < nvis; j++) {
                    s[j] = scale * ksc[kh] * dot_d(qval + row, kval + cache_at(&c, table, stride_bt, page, b, j, kh), D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                double l = 0;
                for (int64_t j = 0; j < nvis; j++) {
                    double p = exp(s[j] - mx);
                    l += p;
                    const double *vr = vval + cache_at(&c, table, stride_bt, page, b, j, kh);
                    for (int64_t dd = 0; dd < D; dd++)
                        ref[row + (size_t)dd] += p * vr[dd] * vsc[kh];
                }
                for (int64_t dd = 0; dd < D; dd++)
                    ref[row + (size_t)dd] /= l;
                ref_lse[li] = mx + log(l);
            }

    /* three runs: unsplit without a workspace (a paged prefill then reads
     * the pages directly), forced splits, the plan's choice (both with
     * their workspace: a paged prefill on sm_90a reads a gathered copy) */
    Run runs[3];
    memset(runs, 0, sizeof runs);
    int split_arg[3] = {1, cs->splits, 0};
    tc_attention_kvcache_args a;
    memset(&a, 0, sizeof a);
    a.dtype = t, a.batch = B, a.heads = H, a.kv_heads = KVH, a.head_dim = D;
    a.seqlen_q = sq, a.seqlen_k = sk;
    a.q = qd, a.o = od, a.lse = cs->with_lse ? lsed : 0;
    a.stride_qb = qsb, a.stride_qh = qsh, a.stride_qm = qsm;
    a.stride_ob = qsb, a.stride_oh = qsh, a.stride_om = qsm;
    a.k_cache = kd, a.v_cache = vd;
    a.stride_kb = a.stride_vb = c.sb, a.stride_kh = a.stride_vh = c.sh, a.stride_kn = a.stride_vn = c.sn;
    a.block_table = tabd, a.stride_bt = stride_bt, a.page_size = page, a.num_pages = num_pages;
    a.seqused_k = usedd;
    a.cu_seqlens_q = cs->varlen_q ? cuqd : 0;
    a.scale = (float)scale, a.causal = cs->causal;
    a.kv_dtype = cs->kv, a.k_scale = ksd, a.v_scale = vsd;
    for (int r = 0; ok && r < 3; r++) {
        Run *run = &runs[r];
        a.num_splits = split_arg[r];
        size_t ws = 0;
        ok = GT_OK(tc_attention_kvcache_workspace_size(ctx, &a, &ws)) &&
             GT_OK(tc_attention_kvcache_plan_for(&a, tc_context_multiprocessors(ctx), &run->plan));
        if (r == 0)
            run->plan.gathered = 0, ws = 0; /* no workspace: the call gathers nothing */
        if (ok && ws) {
            ok = GT_OK(tc_mem_alloc(ctx, ws, &wsd));
            a.workspace = wsd, a.workspace_bytes = ws;
        }
        run->o = malloc(out_n * eb);
        run->lse = malloc(lse_n * 4);
        ok = ok && run->o && run->lse && GT_OK(tc_memset_d8(ctx, od, 0xFF, qn * eb)) &&
             GT_OK(tc_memset_d8(ctx, lsed, 0xFF, lse_n * 4)) && GT_OK(tc_attention_kvcache(ctx, stream, &a)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && GT_OK(tc_memcpy_dtoh(ctx, run->o, od, out_n * eb)) &&
             GT_OK(tc_memcpy_dtoh(ctx, run->lse, lsed, lse_n * 4));
        if (wsd) {
            tc_mem_free(ctx, wsd);
            wsd = 0;
            a.workspace = 0, a.workspace_bytes = 0;
        }
        if (!ok)
            break;
        GtErr err = {0};
        for (size_t i = 0; i < out_n; i++) {
            if (has_ref[i])
                gt_err_add(&err, gt_get(t, run->o, i), ref[i]);
            else if (i >= out_n - KV_GUARD || cs->varlen_q == 0)
                run->clobbered += !gt_is_poison(t, run->o, i);
        }
        run->err = gt_err_value(&err);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < sq; i++) {
                    size_t li = (size_t)((b * H + h) * sq + i);
                    if (!cs->with_lse || i >= lq[b]) {
                        run->clobbered += !gt_is_poison(TC_DTYPE_F32, run->lse, li);
                        continue;
                    }
                    double got = run->lse[li];
                    if (isinf(ref_lse[li])) {
                        run->empty_bad += !(isinf(got) && got < 0);
                        size_t row = (size_t)(b * qsb + h * qsh + (q0[b] * (cs->varlen_q != 0) + i) * qsm);
                        for (int64_t dd = 0; dd < D; dd++)
                            run->empty_bad += gt_get(t, run->o, row + (size_t)dd) != 0.0;
                        continue;
                    }
                    double e = fabs(got - ref_lse[li]);
                    if (!(e <= run->lse_err))
                        run->lse_err = isnan(e) ? NAN : e > run->lse_err ? e : run->lse_err;
                }
        for (size_t i = lse_n - KV_GUARD; i < lse_n; i++)
            run->clobbered += !gt_is_poison(TC_DTYPE_F32, run->lse, i);
        run->ok = gt_record(t, run->err, gt_tolerance(t)) && run->lse_err < 1e-2 && run->empty_bad == 0 &&
                  run->clobbered == 0;
    }
    /* split against unsplit: to rounding */
    double split_diff[2] = {0, 0};
    bool split_ok = true;
    for (int r = 1; ok && r < 3; r++) {
        double d2 = 0, n2 = 0;
        for (size_t i = 0; i < out_n; i++)
            if (has_ref[i]) {
                double x = gt_get(t, runs[r].o, i), y = gt_get(t, runs[0].o, i);
                d2 += (x - y) * (x - y), n2 += y * y;
            }
        split_diff[r - 1] = n2 > 0 ? sqrt(d2 / n2) : sqrt(d2);
        split_ok &= split_diff[r - 1] < ulp_of(t); /* NaN fails */
    }
    bool pass = ok && runs[0].ok && runs[1].ok && runs[2].ok && split_ok && append_bad == 0;

    char shape[96];
    snprintf(shape, sizeof shape, "b%lld q%s%lld k%lld", (long long)B, cs->varlen_q ? "<=" : "",
             (long long)cs->max_new, (long long)max_keys);
    char cache[32];
    if (page)
        snprintf(cache, sizeof cache, "paged%d-%s", page, cs->hnd ? "hnd" : "nhd");
    else
        snprintf(cache, sizeof cache, "contig-%s", cs->hnd ? "hnd" : "nhd");
    printf("kvcache %-4s%s%s%s %-18s h%-2lld kv%-2lld d%-3lld %-6s %-14s %s%s%s tile %dx%d w%d s%d splits 1/%d/%d "
           "O err %.2e %.2e %.2e LSE %.1e split diff %.1e %.1e",
           gt_dtype_name(t), cs->kv ? " cache " : "", cs->kv ? gt_dtype_name(ct) : "", cs->scaled ? " scaled" : "",
           shape, (long long)H, (long long)KVH, (long long)D, cs->causal ? "causal" : "full", cache,
           cs->bhsd ? "bhsd" : "bshd", cs->with_lse ? "" : " nolse", runs[2].plan.gathered ? " gathered" : "",
           runs[0].plan.attention.block_m,
           runs[0].plan.attention.block_n, runs[0].plan.attention.num_warps, runs[0].plan.attention.num_stages,
           runs[1].plan.num_splits, runs[2].plan.num_splits, runs[0].err, runs[1].err, runs[2].err,
           fmax(runs[0].lse_err, fmax(runs[1].lse_err, runs[2].lse_err)), split_diff[0], split_diff[1]);
    if (cs->scale != 0)
        printf(" scale %g", scale);
    printf(" lengths");
    for (int64_t b = 0; b < B; b++)
        printf(" %lld:%lld", (long long)lq[b], (long long)lk[b]);
    if (empty_rows)
        printf(" %zu rows see no key", empty_rows);
    for (int r = 0; r < 3; r++) {
        if (runs[r].empty_bad)
            printf(" (run %d: %zu not O = 0, LSE = -inf)", r, runs[r].empty_bad);
        if (runs[r].clobbered)
            printf(" (run %d: wrote %zu elements outside O/LSE)", r, runs[r].clobbered);
    }
    if (append_bad)
        printf(" append: %zu cache elements wrong", append_bad);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);

    for (int r = 0; r < 3; r++)
        free(runs[r].o), free(runs[r].lse);
    free(ref), free(ref_lse), free(s), free(has_ref);
    free(table), free(c.khost), free(c.vhost), free(kval), free(vval), free(qhost), free(qval);
    free(knew), free(vnew), free(knv), free(vnv), free(slots);
    CUdeviceptr all[] = {kd, vd, qd, od, lsed, tabd, usedd, cuqd, knd, vnd, slotd, ksd, vsd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            tc_mem_free(ctx, all[i]);
    return pass;
}

/* tc_kvcache_append_rope: tokens' K rotated into a shuffled 16-token page
 * pool (some tokens padding, slot -1), V copied, Q rotated in place,
 * against float64 rotations; the pool's other slots and the source K
 * untouched. */
typedef struct RopeCase {
    tc_dtype dtype;
    int64_t tokens, kv_heads, group, head_dim, rotary_dim;
    int interleaved, tables, positions;
} RopeCase;

static bool rope_case(tc_context *ctx, CUstream stream, const RopeCase *rc) {
    const tc_dtype t = rc->dtype;
    const int64_t T = rc->tokens, KH = rc->kv_heads, QH = KH * rc->group, D = rc->head_dim;
    const int64_t R = (rc->rotary_dim ? rc->rotary_dim : D) / 2, PAGE = 16, MAXPOS = 5000;
    const int64_t pages = (T + PAGE - 1) / PAGE + 3, slots = pages * PAGE;
    const size_t eb = gt_dtype_bytes(t), kn = (size_t)(T * KH * D), qn = (size_t)(T * QH * D),
                 pool = (size_t)(slots * KH * D);
    const double theta = 10000.0;
    void *k = malloc(kn * eb), *v = malloc(kn * eb), *q = malloc(qn * eb), *kout = malloc(pool * eb),
         *vout = malloc(pool * eb), *qout = malloc(qn * eb), *kback = malloc(kn * eb);
    int64_t *slot = malloc((size_t)T * 8), *perm = malloc((size_t)slots * 8);
    int32_t *pos = malloc((size_t)T * 4);
    float *cs = malloc((size_t)(MAXPOS * R) * 4), *sn = malloc((size_t)(MAXPOS * R) * 4);
    bool ok = k && v && q && kout && vout && qout && kback && slot && perm && pos && cs && sn;
    CUdeviceptr kd = 0, vd = 0, qd = 0, kpd = 0, vpd = 0, sd = 0, pd = 0, cd = 0, snd = 0;
    GtErr ek = {0}, eq = {0};
    size_t wrong = 0;
    if (ok) {
        for (size_t i = 0; i < kn; i++)
            gt_put(t, k, i, gt_normal()), gt_put(t, v, i, gt_normal());
        for (size_t i = 0; i < qn; i++)
            gt_put(t, q, i, gt_normal());
        for (int64_t s = 0; s < slots; s++)
            perm[s] = s;
        for (int64_t s = slots - 1; s > 0; s--) { /* the tokens' slots: anywhere in the pool */
            int64_t j = (int64_t)(gt_uniform() * (double)(s + 1)) % (s + 1), x = perm[s];
            perm[s] = perm[j], perm[j] = x;
        }
        for (int64_t i = 0; i < T; i++) {
            slot[i] = i % 7 == 3 ? -1 : perm[i];
            pos[i] = rc->positions ? (int32_t)(gt_uniform() * (MAXPOS - 1)) : (int32_t)(100 + i % 37);
        }
        for (int64_t p = 0; p < MAXPOS; p++)
            for (int64_t i = 0; i < R; i++) {
                double a = (double)p * pow(theta, -2.0 * (double)i / (double)(2 * R));
                cs[p * R + i] = (float)cos(a), sn[p * R + i] = (float)sin(a);
            }
        ok = GT_OK(tc_mem_alloc(ctx, kn * eb, &kd)) && GT_OK(tc_mem_alloc(ctx, kn * eb, &vd)) &&
             GT_OK(tc_mem_alloc(ctx, qn * eb, &qd)) && GT_OK(tc_mem_alloc(ctx, pool * eb, &kpd)) &&
             GT_OK(tc_mem_alloc(ctx, pool * eb, &vpd)) && GT_OK(tc_mem_alloc(ctx, (size_t)T * 8, &sd)) &&
             GT_OK(tc_mem_alloc(ctx, (size_t)T * 4, &pd)) && GT_OK(tc_mem_alloc(ctx, (size_t)(MAXPOS * R) * 4, &cd)) &&
             GT_OK(tc_mem_alloc(ctx, (size_t)(MAXPOS * R) * 4, &snd)) && GT_OK(tc_memcpy_htod(ctx, kd, k, kn * eb)) &&
             GT_OK(tc_memcpy_htod(ctx, vd, v, kn * eb)) && GT_OK(tc_memcpy_htod(ctx, qd, q, qn * eb)) &&
             GT_OK(tc_memcpy_htod(ctx, sd, slot, (size_t)T * 8)) && GT_OK(tc_memcpy_htod(ctx, pd, pos, (size_t)T * 4)) &&
             GT_OK(tc_memcpy_htod(ctx, cd, cs, (size_t)(MAXPOS * R) * 4)) &&
             GT_OK(tc_memcpy_htod(ctx, snd, sn, (size_t)(MAXPOS * R) * 4)) &&
             GT_OK(tc_memset_d8(ctx, kpd, 0xFF, pool * eb)) && GT_OK(tc_memset_d8(ctx, vpd, 0xFF, pool * eb));
    }
    if (ok) {
        tc_rope_args a;
        memset(&a, 0, sizeof a);
        a.dtype = t, a.tokens = T, a.q_heads = QH, a.head_dim = D, a.rotary_dim = rc->rotary_dim;
        a.interleaved = rc->interleaved;
        a.q = qd, a.stride_qt = QH * D, a.stride_qh = D;
        a.positions = rc->positions ? pd : 0, a.seqlen = 37, a.position_offset = 100;
        if (rc->tables)
            a.cos = cd, a.sin = snd, a.stride_cs = R, a.max_position = MAXPOS;
        else
            a.theta = (float)theta;
        ok = GT_OK(tc_kvcache_append_rope(ctx, stream, t, kpd, vpd, kd, vd, sd, T, KH, D, PAGE, pages, KH * D, D, KH * D,
                                          D, PAGE * KH * D, KH * D, D, PAGE * KH * D, KH * D, D, &a)) &&
             GT_OK(tc_stream_synchronize(ctx, stream)) && GT_OK(tc_memcpy_dtoh(ctx, kout, kpd, pool * eb)) &&
             GT_OK(tc_memcpy_dtoh(ctx, vout, vpd, pool * eb)) && GT_OK(tc_memcpy_dtoh(ctx, qout, qd, qn * eb)) &&
             GT_OK(tc_memcpy_dtoh(ctx, kback, kd, kn * eb));
    }
    if (ok) {
        /* x rotated at position p: pairs (i, i + R) or (2i, 2i + 1), i < R */
        for (int which = 0; which < 2; which++) {
            int64_t heads = which ? KH : QH;
            for (int64_t i = 0; i < T; i++) {
                if (which && slot[i] < 0)
                    continue;
                int64_t p = rc->positions ? pos[i] : 100 + i % 37;
                for (int64_t h = 0; h < heads; h++) {
                    const void *src = which ? k : q;
                    size_t in = (size_t)((i * heads + h) * D), out = which ? (size_t)((slot[i] * KH + h) * D) : in;
                    const void *got = which ? kout : qout;
                    GtErr *e = which ? &ek : &eq;
                    for (int64_t d = 2 * R; d < D; d++)
                        wrong += gt_get(t, got, out + (size_t)d) != gt_get(t, src, in + (size_t)d);
                    for (int64_t j = 0; j < R; j++) {
                        int64_t i1 = rc->interleaved ? 2 * j : j, i2 = rc->interleaved ? 2 * j + 1 : j + R;
                        double ang = (double)p * pow(theta, -2.0 * (double)j / (double)(2 * R));
                        double x1 = gt_get(t, src, in + (size_t)i1), x2 = gt_get(t, src, in + (size_t)i2);
                        gt_err_add(e, gt_get(t, got, out + (size_t)i1), x1 * cos(ang) - x2 * sin(ang));
                        gt_err_add(e, gt_get(t, got, out + (size_t)i2), x2 * cos(ang) + x1 * sin(ang));
                    }
                    if (which)
                        for (int64_t d = 0; d < D; d++)
                            wrong += gt_get(t, vout, out + (size_t)d) != gt_get(t, v, in + (size_t)d);
                }
            }
        }
        /* the slots no token maps to, and k itself, untouched */
        char *used = calloc((size_t)slots, 1);
        for (int64_t i = 0; used && i < T; i++)
            if (slot[i] >= 0)
                used[slot[i]] = 1;
        for (int64_t s = 0; used && s < slots; s++)
            for (int64_t e = 0; !used[s] && e < KH * D; e++)
                wrong += !gt_is_poison(t, kout, (size_t)(s * KH * D + e)) + !gt_is_poison(t, vout, (size_t)(s * KH * D + e));
        wrong += memcmp(k, kback, kn * eb) != 0;
        free(used);
    }
    double err_k = gt_err_value(&ek), err_q = gt_err_value(&eq);
    double err = isnan(err_k) || isnan(err_q) ? NAN : fmax(err_k, err_q); /* NaN fails (fmax would drop it) */
    bool pass = ok && wrong == 0 && gt_record(t, err, gt_tolerance(t));
    printf("append_rope %-4s t%-4lld kv%-2lld q%-3lld d%-3lld rot %-3lld %-5s %-6s %-9s K err %.2e Q err %.2e "
           "wrong %zu %s\n",
           gt_dtype_name(t), (long long)T, (long long)KH, (long long)QH, (long long)D, (long long)(2 * R),
           rc->interleaved ? "gptj" : "neox", rc->tables ? "tables" : "theta", rc->positions ? "positions" : "offset",
           gt_err_value(&ek), gt_err_value(&eq), wrong, pass ? "ok" : "FAIL");
    gt_case_done(pass);
    CUdeviceptr bufs[] = {kd, vd, qd, kpd, vpd, sd, pd, cd, snd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            tc_mem_free(ctx, bufs[i]);
    free(k), free(v), free(q), free(kout), free(vout), free(qout), free(kback), free(slot), free(perm), free(pos);
    free(cs), free(sn);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_attention_kvcache");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    const tc_dtype F16 = TC_DTYPE_F16, BF16 = TC_DTYPE_BF16;
    /* dtype, batch, heads, kv_heads, d, max_new, max_keys, varlen_q, page, hnd, bhsd, causal, lse, splits,
     * scale, big */
    const KvCase cases[] = {
        /* decode, contiguous cache, GQA 4:1 and 8:1, MQA, MHA */
        {F16, 4, 8, 2, 128, 1, 1000, 0, 0, 0, 0, 0, 1, 3, 0, false, 0, 0},
        {BF16, 3, 16, 2, 128, 1, 777, 0, 0, 1, 1, 1, 1, 4, 0, false, 0, 0},
        {F16, 2, 8, 1, 64, 1, 513, 0, 0, 0, 0, 0, 0, 2, 0, false, 0, 0},
        {BF16, 5, 4, 4, 64, 1, 300, 0, 0, 0, 1, 0, 1, 2, 0, false, 0, 0},
        {F16, 3, 8, 2, 256, 1, 600, 0, 0, 0, 0, 1, 1, 3, 0, false, 0, 0},
        {BF16, 3, 8, 4, 96, 1, 457, 0, 0, 1, 0, 0, 1, 5, -0.1, false, 0, 0},
        /* decode, paged: 16-token pages, 64, 256, odd */
        {F16, 4, 32, 8, 128, 1, 1000, 0, 16, 0, 0, 0, 1, 3, 0, false, 0, 0},
        {BF16, 3, 8, 1, 128, 1, 3000, 0, 16, 1, 1, 1, 1, 7, 0, true, 0, 0},
        {F16, 3, 16, 2, 64, 1, 999, 0, 64, 0, 1, 0, 1, 4, 0, false, 0, 0},
        {BF16, 4, 8, 2, 128, 1, 1500, 0, 256, 0, 0, 1, 0, 2, 0, false, 0, 0},
        {F16, 3, 4, 2, 256, 1, 400, 0, 32, 1, 0, 0, 1, 3, 0, false, 0, 0},
        {BF16, 3, 8, 8, 80, 1, 250, 0, 5, 0, 0, 0, 1, 2, 0, false, 0, 0},
        /* 8-token pages (the smallest a TMA box of the pool takes on sm_90a), and 48: boxes of 16 tokens */
        {F16, 3, 16, 4, 128, 1, 701, 0, 8, 1, 0, 0, 1, 3, 0, false, 0, 0},
        {BF16, 4, 8, 2, 128, 1, 1234, 0, 48, 0, 0, 0, 1, 4, 0, false, 0, 0},
        /* 24-token pages (boxes of 8 tokens), head dim 80 in the hnd layout; 512-token pages, split */
        {F16, 3, 8, 2, 80, 1, 999, 0, 24, 1, 0, 0, 1, 3, 0, false, 0, 0},
        {BF16, 2, 16, 4, 128, 1, 3000, 0, 512, 0, 0, 0, 1, 5, 0, false, 0, 0},
        /* speculative decoding: 2 to 16 new tokens, causal among them */
        {F16, 3, 8, 2, 128, 4, 500, 0, 16, 0, 0, 1, 1, 3, 0, false, 0, 0},
        {BF16, 3, 16, 2, 128, 16, 800, 0, 0, 0, 1, 1, 1, 2, 0, false, 0, 0},
        {F16, 3, 32, 8, 64, 7, 333, 0, 64, 1, 0, 1, 1, 3, 0, false, 0, 0},
        /* chunked prefill: packed batches of mixed decode and prefill chunks */
        {F16, 5, 8, 2, 128, 300, 1200, 1, 16, 0, 0, 1, 1, 3, 0, false, 0, 0},
        {BF16, 5, 4, 1, 64, 200, 700, 1, 0, 0, 1, 1, 1, 2, 0, false, 0, 0},
        {F16, 4, 8, 8, 128, 150, 500, 1, 32, 1, 0, 0, 1, 2, 0, false, 0, 0},
        {BF16, 5, 16, 2, 256, 100, 400, 1, 64, 0, 0, 1, 0, 3, 0, false, 0, 0},
        {F16, 3, 8, 2, 96, 222, 900, 1, 48, 1, 0, 1, 1, 2, 0, false, 0, 0},
        {BF16, 3, 8, 2, 128, 130, 600, 0, 8, 0, 0, 1, 1, 2, 0, false, 0, 0},
        /* prefill against a contiguous cache at head dims 128 and 96 (a producer warpgroup on sm_90a), and
           at 256; a chunk of 1 in a batch of chunks */
        {F16, 4, 32, 8, 128, 333, 1500, 1, 0, 0, 0, 1, 1, 3, 0, false, 0, 0},
        {BF16, 3, 8, 2, 96, 190, 650, 0, 0, 1, 1, 1, 0, 2, 0, false, 0, 0},
        {F16, 3, 8, 8, 128, 257, 257, 0, 0, 0, 0, 0, 1, 2, 0.3, false, 0, 0},
        {BF16, 2, 8, 2, 256, 150, 800, 1, 0, 0, 0, 1, 1, 2, 0, false, 0, 0},
        /* one long sequence: the split plan's case */
        {BF16, 1, 32, 8, 128, 1, 20000, 0, 16, 0, 0, 0, 1, 16, 0, true, 0, 0},
        {F16, 1, 8, 1, 128, 3, 9000, 0, 0, 0, 0, 1, 1, 9, 0, true, 0, 0},
        /* an fp8 cache (tc_kvcache_append_fp8): e4m3 with per-KV-head scales (decode, paged and contiguous, a
           prefill chunk, splits), e5m2 without */
        {F16, 4, 32, 8, 128, 1, 1000, 0, 16, 0, 0, 0, 1, 3, 0, false, TC_DTYPE_F8E4M3, 1},
        {BF16, 3, 16, 2, 128, 1, 2000, 0, 0, 1, 0, 0, 1, 5, 0, false, TC_DTYPE_F8E4M3, 1},
        {F16, 3, 8, 2, 64, 4, 700, 0, 32, 0, 1, 1, 1, 2, 0, false, TC_DTYPE_F8E5M2, 0},
        {BF16, 4, 8, 2, 128, 150, 600, 1, 16, 0, 0, 1, 1, 2, 0, false, TC_DTYPE_F8E4M3, 1},
        {F16, 3, 8, 8, 256, 1, 500, 0, 0, 0, 0, 0, 1, 3, 0, false, TC_DTYPE_F8E4M3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (quick && cases[i].big)
            continue;
        run_case(ctx, stream, &cases[i], quick);
    }
    /* dtype, tokens, kv_heads, group, head_dim, rotary_dim, interleaved, tables, positions */
    const RopeCase ropes[] = {
        {BF16, 100, 8, 4, 128, 0, 0, 0, 1},  {F16, 77, 2, 8, 128, 64, 1, 1, 1}, {BF16, 1, 1, 1, 64, 0, 0, 1, 0},
        {F16, 200, 4, 2, 96, 0, 0, 0, 0},    {BF16, 33, 8, 1, 80, 32, 1, 0, 1}, {F16, 50, 2, 4, 256, 128, 0, 1, 1},
    };
    for (size_t i = 0; i < sizeof ropes / sizeof ropes[0]; i++)
        rope_case(ctx, stream, &ropes[i]);
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
