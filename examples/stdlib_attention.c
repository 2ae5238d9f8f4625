/*
 * stdlib_attention.c — one attention layer's forward and backward passes
 * through the standard library: tc_attention_fwd writes O and the
 * log-sum-exp, tc_attention_bwd turns a gradient dO into dQ, dK and dV.
 *
 *     stdlib_attention
 *
 * A small causal layer (batch 2, 4 heads, 2 KV heads, 100 queries and
 * keys, head dim 64, f16, [batch, seq, heads, dim]); checks O, dQ, dK and
 * dV against a float64 CPU reference. Exit status: 0 correct, 1 wrong or
 * failed, 77 skipped (no NVIDIA driver or GPU on this machine).
 */
#include <tilec/stdlib.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "f16.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "stdlib_attention: %s failed: %s\n%s\n", #call, tc_status_string(st_), tc_last_error());   \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

enum { B = 2, H = 4, KVH = 2, S = 100, D = 64 };

/* element (b, i, h, d) of a [B, S, heads, D] tensor */
static size_t at(int heads, int b, int i, int h) {
    return (((size_t)b * S + (size_t)i) * (size_t)heads + (size_t)h) * D;
}

static double err(const uint16_t *out, const double *ref, size_t n) {
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double o = f16_to_f32(out[i]);
        if (!isfinite(o))
            return INFINITY;
        d2 += (o - ref[i]) * (o - ref[i]), r2 += ref[i] * ref[i];
    }
    return sqrt(d2 / r2);
}

int main(void) {
    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("stdlib_attention: skipped: %s\n", tc_last_error());
        return 77;
    }
    CHECK(st);
    const size_t nq = (size_t)B * S * H * D, nk = (size_t)B * S * KVH * D;
    const double scale = 1.0 / sqrt((double)D);
    /* host tensors (f16) and their values as doubles */
    uint16_t *hq = malloc(nq * 2), *hk = malloc(nk * 2), *hv = malloc(nk * 2), *hdo = malloc(nq * 2);
    uint16_t *ho = malloc(nq * 2), *hdq = malloc(nq * 2), *hdk = malloc(nk * 2), *hdv = malloc(nk * 2);
    double *q = malloc(nq * 8), *k = malloc(nk * 8), *v = malloc(nk * 8), *dout = malloc(nq * 8);
    double *o = calloc(nq, 8), *dq = calloc(nq, 8), *dk = calloc(nk, 8), *dv = calloc(nk, 8), *p = malloc(S * 8);
    if (!hq || !hk || !hv || !hdo || !ho || !hdq || !hdk || !hdv || !q || !k || !v || !dout || !o || !dq || !dk ||
        !dv || !p)
        return 1;
    srand((unsigned)time(NULL));
    struct {
        uint16_t *h;
        double *x;
        size_t n;
    } in[] = {{hq, q, nq}, {hk, k, nk}, {hv, v, nk}, {hdo, dout, nq}};
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < in[t].n; i++) {
            in[t].h[i] = f32_to_f16((float)rand() / (float)RAND_MAX * 2.0f - 1.0f);
            in[t].x[i] = f16_to_f32(in[t].h[i]);
        }

    /* device buffers; the workspace as tc_attention_bwd_workspace_size says */
    CUdeviceptr dq_, dk_, dv_, do_, q_, k_, v_, o_, lse, ws;
    size_t ws_bytes;
    CHECK(tc_attention_bwd_workspace_size(TC_DTYPE_F16, B, H, KVH, S, S, D, 1, 0, 0, &ws_bytes));
    CHECK(tc_mem_alloc(ctx, nq * 2, &q_));
    CHECK(tc_mem_alloc(ctx, nk * 2, &k_));
    CHECK(tc_mem_alloc(ctx, nk * 2, &v_));
    CHECK(tc_mem_alloc(ctx, nq * 2, &o_));
    CHECK(tc_mem_alloc(ctx, nq * 2, &do_));
    CHECK(tc_mem_alloc(ctx, nq * 2, &dq_));
    CHECK(tc_mem_alloc(ctx, nk * 2, &dk_));
    CHECK(tc_mem_alloc(ctx, nk * 2, &dv_));
    CHECK(tc_mem_alloc(ctx, (size_t)B * H * S * 4, &lse));
    CHECK(tc_mem_alloc(ctx, ws_bytes, &ws));
    CHECK(tc_memcpy_htod(ctx, q_, hq, nq * 2));
    CHECK(tc_memcpy_htod(ctx, k_, hk, nk * 2));
    CHECK(tc_memcpy_htod(ctx, v_, hv, nk * 2));
    CHECK(tc_memcpy_htod(ctx, do_, hdo, nq * 2));

    /* forward, then backward: strides in elements for [B, S, heads, D] */
    const int64_t qs[3] = {S * H * D, D, H * D}, ks[3] = {S * KVH * D, D, KVH * D};
    CHECK(tc_attention_fwd(ctx, NULL, TC_DTYPE_F16, o_, lse, q_, k_, v_, B, H, KVH, S, S, D, qs[0], qs[1], qs[2], ks[0],
                           ks[1], ks[2], ks[0], ks[1], ks[2], qs[0], qs[1], qs[2], 0, 0, (float)scale, 1));
    CHECK(tc_attention_bwd(ctx, NULL, TC_DTYPE_F16, dq_, dk_, dv_, do_, q_, k_, v_, o_, lse, B, H, KVH, S, S, D, qs[0],
                           qs[1], qs[2], ks[0], ks[1], ks[2], ks[0], ks[1], ks[2], qs[0], qs[1], qs[2], qs[0], qs[1],
                           qs[2], qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], ks[0], ks[1], ks[2], 0, 0, (float)scale, 1,
                           0, ws, ws_bytes));
    CHECK(tc_stream_synchronize(ctx, NULL));
    CHECK(tc_memcpy_dtoh(ctx, ho, o_, nq * 2));
    CHECK(tc_memcpy_dtoh(ctx, hdq, dq_, nq * 2));
    CHECK(tc_memcpy_dtoh(ctx, hdk, dk_, nk * 2));
    CHECK(tc_memcpy_dtoh(ctx, hdv, dv_, nk * 2));

    /* the reference: causal, query i sees keys j <= i; P, O, then the gradients */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int g = h / (H / KVH);
            for (int i = 0; i < S; i++) {
                const double *qi = q + at(H, b, i, h), *doi = dout + at(H, b, i, h);
                double mx = -INFINITY, l = 0, delta = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += qi[d] * k[at(KVH, b, j, g) + (size_t)d];
                    p[j] = s * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = 0; j <= i; j++)
                    l += p[j] = exp(p[j] - mx);
                double *oi = o + at(H, b, i, h);
                for (int j = 0; j <= i; j++) {
                    p[j] /= l;
                    for (int d = 0; d < D; d++)
                        oi[d] += p[j] * v[at(KVH, b, j, g) + (size_t)d];
                }
                for (int d = 0; d < D; d++)
                    delta += doi[d] * oi[d];
                for (int j = 0; j <= i; j++) {
                    double dp = 0;
                    for (int d = 0; d < D; d++)
                        dp += doi[d] * v[at(KVH, b, j, g) + (size_t)d];
                    double ds = p[j] * (dp - delta);
                    for (int d = 0; d < D; d++) {
                        size_t kj = at(KVH, b, j, g) + (size_t)d;
                        dq[at(H, b, i, h) + (size_t)d] += scale * ds * k[kj];
                        dk[kj] += scale * ds * qi[d];
                        dv[kj] += p[j] * doi[d];
                    }
                }
            }
        }
    double e[4] = {err(ho, o, nq), err(hdq, dq, nq), err(hdk, dk, nk), err(hdv, dv, nk)};
    printf("stdlib_attention: B%d H%d KV%d S%d D%d causal f16: ||x - ref|| / ||ref||: O %.2e, dQ %.2e, dK %.2e, "
           "dV %.2e\n",
           B, H, KVH, S, D, e[0], e[1], e[2], e[3]);
    int ok = e[0] < 1e-2 && e[1] < 1e-2 && e[2] < 1e-2 && e[3] < 1e-2;
    printf("stdlib_attention: %s\n", ok ? "ok" : "WRONG");
    CUdeviceptr all[] = {dq_, dk_, dv_, do_, q_, k_, v_, o_, lse, ws};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tc_mem_free(ctx, all[i]);
    tc_context_destroy(ctx);
    void *host[] = {hq, hk, hv, hdo, ho, hdq, hdk, hdv, q, k, v, dout, o, dq, dk, dv, p};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    return ok ? 0 : 1;
}
