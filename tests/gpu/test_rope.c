/*
 * test_rope.c — tc_rope on the GPU against a float64 CPU reference.
 *
 *     test_rope [--quick]     (--quick: fewer tokens)
 *
 * Cases: f16, bf16, f32 × the NeoX and GPT-J forms × full and partial
 * rotary dims (head dims 128, 80 with 32 rotary, 64 with 16, 2) × q and k as
 * separate tensors with GQA (32 and 8 heads), as the q and k parts of a
 * packed QKV tensor (4 + 2 + 2 heads), and q alone × positions from an i32
 * array (random, up to 4095) or implicit (seqlen 37, offset 5) × angles from
 * f32 cos/sin tables (computed in double) or from theta (10000, 500000), and
 * the backward pass. The reference rotates in double by the table's angles,
 * or by p * theta^(-2i / rotary_dim) exactly; the computed path's tolerance
 * adds the f32 angle's rounding (the largest position times 2^-21, as
 * tc_rope's contract says). Every element the call must not write (the
 * dims past rotary_dim, V of a packed tensor, the gaps and guards around
 * each tensor) must keep its value bit for bit.
 */
#include <tilec/stdlib.h>

#include "gpu_test.h"

typedef struct Case {
    tc_dtype dtype;
    int64_t tokens, q_heads, k_heads, head_dim, rotary_dim;
    int interleaved, backward;
    int layout;      /* 0 separate (gaps between heads), 1 packed QKV, 2 q alone */
    int positions;   /* 0 implicit, 1 array */
    int cache;       /* 0 computed from theta, 1 tables */
    double theta;
} Case;

static const char *const layouts[] = {"separate", "packed", "q-alone"};

static bool run_case(tc_context *ctx, CUstream stream, const Case *c) {
    tc_dtype t = c->dtype;
    size_t es = gt_dtype_bytes(t);
    int64_t rot = c->rotary_dim ? c->rotary_dim : c->head_dim, half = rot / 2;
    /* the tensors' shapes in one buffer: q at 0, k after q (separate) or inside (packed) */
    int64_t qh = c->q_heads, kh = c->layout == 2 ? 0 : c->k_heads, hd = c->head_dim;
    int64_t sqh, sqt, skh, skt, k_off, total;
    if (c->layout == 1) { /* [tokens, qh + 2 kh, hd]: q, k, v heads */
        sqh = skh = hd;
        sqt = skt = (qh + 2 * kh) * hd;
        k_off = qh * hd;
        total = c->tokens * sqt;
    } else { /* heads 3 elements apart more than hd, tokens 5 more: gaps that must stay */
        sqh = skh = hd + 3;
        sqt = qh * sqh + 5;
        skt = kh * skh + 5;
        k_off = c->tokens * sqt + 7;
        total = k_off + c->tokens * skt;
    }
    size_t n = (size_t)total + GUARD;
    void *host = malloc(n * es), *before = malloc(n * es);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)c->tokens);
    int64_t max_pos = 4096;
    float *cs = malloc(sizeof(float) * (size_t)(max_pos * half * 2));
    bool ok = host && before && pos && cs;
    CUdeviceptr dbuf = 0, dpos = 0, dcs = 0;
    int64_t largest = 0;
    if (ok) {
        for (size_t i = 0; i < n; i++)
            gt_put(t, host, i, gt_normal());
        memcpy(before, host, n * es);
        for (int64_t i = 0; i < c->tokens; i++) {
            pos[i] = c->positions ? (int32_t)(gt_next() % (uint64_t)max_pos) : (int32_t)(5 + i % 37);
            if (c->positions && i == 0)
                pos[i] = (int32_t)max_pos - 1;
            largest = pos[i] > largest ? pos[i] : largest;
        }
        for (int64_t p = 0; p < max_pos; p++)
            for (int64_t i = 0; i < half; i++) {
                double a = (double)p * pow(c->theta, -2.0 * (double)i / (double)rot);
                cs[p * half * 2 + i] = (float)cos(a);        /* cos table: row stride 2 * half */
                cs[p * half * 2 + half + i] = (float)sin(a); /* sin table: the same rows, half further */
            }
        ok = GT_OK(tc_mem_alloc(ctx, n * es, &dbuf)) && GT_OK(tc_memcpy_htod(ctx, dbuf, host, n * es)) &&
             GT_OK(tc_mem_alloc(ctx, sizeof(int32_t) * (size_t)c->tokens, &dpos)) &&
             GT_OK(tc_memcpy_htod(ctx, dpos, pos, sizeof(int32_t) * (size_t)c->tokens)) &&
             GT_OK(tc_mem_alloc(ctx, sizeof(float) * (size_t)(max_pos * half * 2), &dcs)) &&
             GT_OK(tc_memcpy_htod(ctx, dcs, cs, sizeof(float) * (size_t)(max_pos * half * 2)));
    }
    if (ok) {
        tc_rope_args a = {0};
        a.dtype = t;
        a.tokens = c->tokens;
        a.q_heads = qh;
        a.k_heads = kh;
        a.head_dim = hd;
        a.rotary_dim = c->rotary_dim;
        a.interleaved = c->interleaved;
        a.backward = c->backward;
        a.q = dbuf;
        a.k = kh ? dbuf + (CUdeviceptr)((size_t)k_off * es) : 0;
        a.stride_qt = sqt, a.stride_qh = sqh, a.stride_kt = skt, a.stride_kh = skh;
        if (c->positions)
            a.positions = dpos;
        else
            a.seqlen = 37, a.position_offset = 5;
        if (c->cache) {
            a.cos = dcs;
            a.sin = dcs + (CUdeviceptr)((size_t)half * 4);
            a.stride_cs = 2 * half;
            a.max_position = max_pos;
        } else {
            a.theta = (float)c->theta;
        }
        ok = GT_OK(tc_rope(ctx, stream, &a)) && GT_OK(tc_stream_synchronize(ctx, stream)) &&
             GT_OK(tc_memcpy_dtoh(ctx, host, dbuf, n * es));
    }
    GtErr e = {0};
    size_t changed = 0; /* elements the call must not write, written */
    if (ok) {
        char *touched = calloc(n, 1);
        for (int which = 0; which < (kh ? 2 : 1); which++) {
            int64_t heads = which ? kh : qh, st = which ? skt : sqt, sh = which ? skh : sqh, off = which ? k_off : 0;
            for (int64_t tk = 0; tk < c->tokens; tk++)
                for (int64_t h = 0; h < heads; h++)
                    for (int64_t i = 0; i < half; i++) {
                        int64_t d1 = c->interleaved ? 2 * i : i, d2 = c->interleaved ? 2 * i + 1 : i + half;
                        size_t i1 = (size_t)(off + tk * st + h * sh + d1), i2 = (size_t)(off + tk * st + h * sh + d2);
                        double ang;
                        double cv, sv;
                        if (c->cache) {
                            cv = cs[pos[tk] * half * 2 + i];
                            sv = cs[pos[tk] * half * 2 + half + i];
                        } else {
                            ang = (double)pos[tk] * pow(c->theta, -2.0 * (double)i / (double)rot);
                            cv = cos(ang);
                            sv = sin(ang);
                        }
                        if (c->backward)
                            sv = -sv;
                        double x1 = gt_get(t, before, i1), x2 = gt_get(t, before, i2);
                        gt_err_add(&e, gt_get(t, host, i1), x1 * cv - x2 * sv);
                        gt_err_add(&e, gt_get(t, host, i2), x2 * cv + x1 * sv);
                        touched[i1] = touched[i2] = 1;
                    }
        }
        for (size_t i = 0; i < n; i++)
            if (!touched[i] && memcmp((char *)host + i * es, (char *)before + i * es, es) != 0)
                changed++;
        free(touched);
    }
    /* the computed angles' f32 rounding: about largest position * 2^-23 radians, with room */
    double tol = gt_tolerance(t) + (c->cache ? 0 : (double)largest * ldexp(1.0, -21));
    double v = gt_err_value(&e);
    bool pass = gt_record(t, v, tol) && ok && changed == 0;
    printf("rope %-4s tokens=%-4lld heads=%lld/%lld dim=%lld rot=%lld %-5s %-8s %-10s %-6s %-8s%s err %.2e (tol %.1e)",
           gt_dtype_name(t), (long long)c->tokens, (long long)qh, (long long)kh, (long long)hd, (long long)rot,
           c->interleaved ? "gptj" : "neox", layouts[c->layout], c->positions ? "positions" : "implicit",
           c->cache ? "tables" : "theta", c->backward ? "backward" : "forward", "", v, tol);
    if (changed)
        printf(" changed %zu elements it must not write", changed);
    if (e.nan)
        printf(" NaN: %zu", e.nan);
    printf(" %s\n", pass ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(pass);
    if (dbuf)
        tc_mem_free(ctx, dbuf);
    if (dpos)
        tc_mem_free(ctx, dpos);
    if (dcs)
        tc_mem_free(ctx, dcs);
    free(host);
    free(before);
    free(pos);
    free(cs);
    return pass;
}

int main(int argc, char **argv) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start("test_rope");
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32};
    static const int64_t dims[][2] = {{128, 0}, {80, 32}, {64, 16}, {2, 0}};
    for (int d = 0; d < 3; d++)
        for (int dm = 0; dm < 4; dm++)
            for (int form = 0; form < 2; form++)
                for (int layout = 0; layout < 3; layout++) {
                    /* the other options turn with the case, so each combination is seen across them */
                    int k = d * 24 + dm * 6 + form * 3 + layout;
                    Case c = {dtypes[d],
                              quick ? (k % 3 == 0 ? 1 : 7) : (k % 3 == 0 ? 1 : k % 3 == 1 ? 77 : 300),
                              layout == 1 ? 4 : 32,
                              layout == 1 ? 2 : 8,
                              dims[dm][0],
                              dims[dm][1],
                              form,
                              (k / 2) % 2,
                              layout,
                              k % 2,
                              (k / 3) % 2,
                              (k / 5) % 2 ? 500000.0 : 10000.0};
                    run_case(ctx, stream, &c);
                }
    /* one token, one head of 2 dims; many heads (several head blocks) */
    Case one = {TC_DTYPE_F32, 1, 1, 0, 2, 0, 0, 0, 2, 1, 1, 10000.0};
    run_case(ctx, stream, &one);
    Case many = {TC_DTYPE_BF16, quick ? 3 : 64, 96, 0, 256, 0, 0, 1, 2, 1, 0, 10000.0};
    run_case(ctx, stream, &many);
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}
