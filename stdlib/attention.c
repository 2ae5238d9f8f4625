/*
 * attention.c — tc_attention_fwd (include/tilec/stdlib.h, lib/attention.tile):
 * fused multi-head attention, forward.
 *
 * The same three steps as the other families (stdlib_internal.h):
 *
 *  1. Validate (attn_check): dtype f16 or bf16; head_dim 1..256; heads,
 *     kv_heads >= 1 with kv_heads dividing heads; seqlens 1..2^30 (the
 *     kernel's i32 index arithmetic adds a block and a seqlen);
 *     batch * heads <= 65535 (grid.y); strides >= 0 with every offset within
 *     an int64 in bytes; o's strides giving each element its own address;
 *     pointers not 0 and aligned to their element; cu_seqlens both or
 *     neither; a finite scale.
 *  2. Plan (rt_attention_plan, for the context's target): D is the next
 *     power of two of head_dim, at least 16 (the masked columns cost
 *     registers, not correctness):
 *       - D <= 128: BM 128, BN 64, 4 warps, 3 stages;
 *       - D 256 on mma.sync (sm_80, sm_90): BM 128, BN 32, 8 warps, 3 stages
 *         (4 warps with BM 64 spill 132 bytes there);
 *       - D 256 on wgmma (sm_90a): BM 128, BN 64, 8 warps and a producer
 *         warpgroup (tc_options.warp_specialize; the two consumer
 *         warpgroups ping-pong), 2 stages;
 *       - D 128 on wgmma from 8192 keys: the same with BN 128;
 *       - TILEC_WARP_SPECIALIZE=1 or 0 forces the warp-specialized plans
 *         on or off (BM 64, BN 64, 4 warps, 2 stages at D 256 without).
 *     grid = (cdiv(seqlen_q, BM), batch * heads).
 *  3. Specialize and launch as tc_matmul does: pointers' 16-byte alignment
 *     through the request's divisibility, strides that are multiples of 8
 *     elements through tc_options.params (what vectorizes the row loads:
 *     every row of Q, K, V and O starting on 16 bytes), through the
 *     context's memo. Without varlen the cu_seqlens parameters get lse
 *     (never read), as tc_launch refuses null pointers.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
    ATTN_MAX_HEAD_DIM = 256,
    ATTN_MAX_SEQLEN = 1 << 30,
    ATTN_MAX_PROGRAMS_Y = 65535,
    ATTN_STAGES = 3,
};

tc_status (*rt_attention_launch_hook)(const RtAttentionLaunch *launch);

/* The kernel's stride parameters: three per tensor, in the order of tensors. */
static const char *const stride_names[12] = {"stride_qb", "stride_qh", "stride_qm", "stride_kb",
                                             "stride_kh", "stride_kn", "stride_vb", "stride_vh",
                                             "stride_vn", "stride_ob", "stride_oh", "stride_om"};

/* Tensor t (0..3: q, k, v, o)'s strides: >= 0, largest offset within an
 * int64; its rows of head_dim elements are contiguous. */
static tc_status attn_check_tensor(const char *entry, int t, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                                   int64_t sb, int64_t sh, int64_t ss) {
    static const char *const tensors[4] = {"q", "k", "v", "o"};
    const char *const *names = &stride_names[3 * t];
    const RtStdlibDim dims[] = {{names[0], batch, sb}, {names[1], heads, sh}, {names[2], seq, ss}, {NULL, dim, 1}};
    return rt_stdlib_check_strides(entry, tensors[t], dims, 4);
}

/* Does o give each of its elements its own address? Sorted by stride, each
 * dimension of extent > 1 must step past everything the inner ones span. */
static bool attn_distinct(int64_t batch, int64_t heads, int64_t seq, int64_t dim, int64_t sb, int64_t sh, int64_t ss) {
    int64_t ext[3] = {batch, heads, seq}, str[3] = {sb, sh, ss};
    for (int i = 0; i < 3; i++) /* sort by stride */
        for (int j = i + 1; j < 3; j++)
            if (str[j] < str[i]) {
                int64_t e = ext[i], s = str[i];
                ext[i] = ext[j];
                str[i] = str[j];
                ext[j] = e;
                str[j] = s;
            }
    int64_t span = dim; /* elements [0, span) are covered by the inner dimensions */
    for (int i = 0; i < 3; i++) {
        if (ext[i] <= 1)
            continue;
        if (str[i] < span)
            return false;
        span = str[i] * (ext[i] - 1) + span; /* within an int64: attn_check_tensor ran */
    }
    return true;
}

static tc_status attn_check_sizes(const char *entry, tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                                  int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim) {
    tc_status st;
    if ((st = rt_stdlib_check_dtype(entry, dtype, false)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "head_dim", head_dim, ATTN_MAX_HEAD_DIM)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "batch", batch, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "heads", heads, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "kv_heads", kv_heads, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "seqlen_q", seqlen_q, ATTN_MAX_SEQLEN)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "seqlen_k", seqlen_k, ATTN_MAX_SEQLEN)) != TC_OK)
        return st;
    if (heads % kv_heads)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kv_heads (%lld) does not divide heads (%lld)", entry,
                       (long long)kv_heads, (long long)heads);
    if (batch * heads > ATTN_MAX_PROGRAMS_Y)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: batch * heads (%lld) must be at most %d", entry,
                       (long long)(batch * heads), ATTN_MAX_PROGRAMS_Y);
    return TC_OK;
}

static void attn_cx(tc_attention_plan *p, const char *name, tc_constexpr_kind kind, int64_t v) {
    p->constexprs[p->num_constexprs++] = (tc_constexpr){name, kind, v, 0};
}

/* Longest key sequence for which head dim 128 without causal masking takes
 * the EVEN_N kernel (see attn_plan). */
enum { ATTN_EVEN_N_MAX_KEYS_D128 = 2048 };
/* Shortest key sequence for which head dim 128 takes the warp-specialized
 * kernel (see attn_plan). */
enum { ATTN_WS_MIN_KEYS_D128 = 8192 };

void rt_attention_plan(tc_dtype dtype, int64_t batch, int64_t heads, int64_t seqlen_q, int64_t seqlen_k,
                       int64_t head_dim, bool causal, bool varlen, const char *arch, int ws, tc_attention_plan *p) {
    bool wgmma = rt_stdlib_wgmma(arch);
    memset(p, 0, sizeof *p);
    p->file = "attention.tile";
    p->kernel = "attention_fwd";
    p->head_dim = (int)head_dim;
    p->block_d = rt_stdlib_pow2_clamped(head_dim, 16, ATTN_MAX_HEAD_DIM);
    /* 32 query rows per warp up to head dim 128 (each K and V fragment read
     * from shared memory feeds two m16 tiles). At 128, Q is read from shared
     * memory in each step (stage-shared's choice) and BN is 64, causal or
     * not; 256: 16 rows per warp and BN 32 (mma.sync), or on wgmma (sm_90a)
     * one warpgroup on 64 rows, BN 64 and 2 stages, two programs per SM,
     * unless warp-specialized (below, the default there). The choices are
     * the fastest of bench/attention.py --sweep on an H200 (bench/RESULTS.md). */
    bool wide = p->block_d > 128;
    p->block_m = wide && wgmma ? 64 : 128;
    p->block_n = !wide || wgmma ? 64 : 32;
    p->num_warps = !wide || wgmma ? 4 : 8;
    p->num_stages = wide && wgmma ? 2 : ATTN_STAGES;
    /* A producer warpgroup (sm_90a) and two consumer warpgroups of 64 rows
     * that take turns on the tensor cores (the pingpong pass), 2 stages:
     * BN 128 up to head dim 128, 64 at 256. It pays at head dim 256 (up to
     * 1.26x) and at 128 with long key sequences (1.02-1.04x from 8192 keys
     * on), and loses elsewhere (bench/RESULTS.md); ws 0 or 1 forces it. */
    p->warp_specialize = wgmma && (ws == 1 || (ws < 0 && (wide || (p->block_d == 128 && seqlen_k >= ATTN_WS_MIN_KEYS_D128))));
    if (p->warp_specialize) {
        p->block_m = 128;
        p->block_n = wide ? 64 : 128;
        p->num_warps = 8;
        p->num_stages = 2;
    }
    p->causal = causal;
    p->varlen = varlen;
    p->grid = (tc_dim3){(unsigned)rt_stdlib_cdiv(seqlen_q, p->block_m), (unsigned)(batch * heads), 1};
    attn_cx(p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    attn_cx(p, "HEAD_DIM", TC_CONSTEXPR_INT, p->head_dim);
    attn_cx(p, "D", TC_CONSTEXPR_INT, p->block_d);
    attn_cx(p, "BM", TC_CONSTEXPR_INT, p->block_m);
    attn_cx(p, "BN", TC_CONSTEXPR_INT, p->block_n);
    attn_cx(p, "CAUSAL", TC_CONSTEXPR_BOOL, causal);
    attn_cx(p, "VARLEN", TC_CONSTEXPR_BOOL, varlen);
    /* EVEN_N when seqlen_k is a multiple of BN. Causal: the diagonal blocks
     * skip the sequence-end mask. Not causal: there is no masked loop at all
     * (half the code to compile), faster up to head dim 64; at head dim
     * 128 faster with short key sequences but not with long ones (the same
     * loop PTX, allocated differently by ptxas), so there up to 2048 keys
     * (bench/RESULTS.md has the sweeps). */
    bool even_n = !varlen && seqlen_k % p->block_n == 0 &&
                  (causal || p->block_d <= 64 || (p->block_d <= 128 && seqlen_k <= ATTN_EVEN_N_MAX_KEYS_D128));
    attn_cx(p, "EVEN_N", TC_CONSTEXPR_BOOL, even_n);
}

tc_status tc_attention_plan_for(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seqlen_q,
                                int64_t seqlen_k, int64_t head_dim, int causal, int varlen, tc_attention_plan *out) {
    const char *entry = "tc_attention_plan_for";
    tc_status st = rt_stdlib_check_given(entry, "out", out);
    if (st != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim);
    if (st != TC_OK)
        return st;
    rt_attention_plan(dtype, batch, heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen != 0, TC_DEFAULT_ARCH, -1,
                      out);
    return TC_OK;
}

tc_status tc_attention_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr o, CUdeviceptr lse,
                           CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, int64_t batch, int64_t heads, int64_t kv_heads,
                           int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int64_t stride_qb, int64_t stride_qh,
                           int64_t stride_qm, int64_t stride_kb, int64_t stride_kh, int64_t stride_kn,
                           int64_t stride_vb, int64_t stride_vh, int64_t stride_vn, int64_t stride_ob,
                           int64_t stride_oh, int64_t stride_om, CUdeviceptr cu_seqlens_q, CUdeviceptr cu_seqlens_k,
                           float scale, int causal) {
    const char *entry = "tc_attention_fwd";
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim)) != TC_OK)
        return st;
    if (!(cu_seqlens_q == 0) != !(cu_seqlens_k == 0))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: cu_seqlens_q and cu_seqlens_k must both be given (varlen) or "
                       "both be 0",
                       entry);
    bool varlen = cu_seqlens_q != 0;
    if ((st = rt_stdlib_check_finite(entry, "scale", scale, false)) != TC_OK)
        return st;
    /* with varlen the rows are packed: the batch strides are unused and a
     * sequence's rows are among seqlen * batch rows */
    int64_t nb = varlen ? 1 : batch, rq = varlen ? seqlen_q * batch : seqlen_q,
            rk = varlen ? seqlen_k * batch : seqlen_k;
    if ((st = attn_check_tensor(entry, 0, nb, heads, rq, head_dim, stride_qb, stride_qh, stride_qm)) != TC_OK ||
        (st = attn_check_tensor(entry, 1, nb, kv_heads, rk, head_dim, stride_kb, stride_kh, stride_kn)) != TC_OK ||
        (st = attn_check_tensor(entry, 2, nb, kv_heads, rk, head_dim, stride_vb, stride_vh, stride_vn)) != TC_OK ||
        (st = attn_check_tensor(entry, 3, nb, heads, rq, head_dim, stride_ob, stride_oh, stride_om)) != TC_OK)
        return st;
    /* With varlen the packed total is on the device; distinct addresses are
     * checked within one sequence of the longest length (rows of different
     * heads may interleave with a total shorter than seqlen_q * batch). */
    if (!attn_distinct(nb, heads, varlen ? seqlen_q : rq, head_dim, stride_ob, stride_oh, stride_om))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: o's strides (stride_ob %lld, stride_oh %lld, stride_om %lld) give two of its elements the "
                       "same address",
                       entry, (long long)stride_ob, (long long)stride_oh, (long long)stride_om);
    size_t elem = rt_dtype_size(dtype);
    if ((st = rt_stdlib_check_ptr(entry, "o", o, elem)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "lse", lse, 4)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "q", q, elem)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "k", k, elem)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "v", v, elem)) != TC_OK ||
        (varlen && (st = rt_stdlib_check_ptr(entry, "cu_seqlens_q", cu_seqlens_q, 4)) != TC_OK) ||
        (varlen && (st = rt_stdlib_check_ptr(entry, "cu_seqlens_k", cu_seqlens_k, 4)) != TC_OK))
        return st;

    RtAttentionLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    l->ctx = ctx;
    l->stream = stream;
    tc_options_init(&l->options);
    l->options.params = l->facts;
    const char *arch = rt_stdlib_target(ctx, rt_attention_launch_hook != NULL);
    rt_attention_plan(dtype, batch, heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen, arch,
                      rt_stdlib_forced_warp_specialize(ctx, rt_attention_launch_hook != NULL), &l->plan);
    if (scale < 0)
        attn_cx(&l->plan, "NEG_SCALE", TC_CONSTEXPR_BOOL, 1);
    int64_t vector = 16 / (int64_t)elem;
    RtStdlibArgs args = {
        l->names, l->ptrs, l->i64s, l->i32s, l->divisibility, l->args, &l->num_args, l->facts, &l->options.num_params};
    rt_stdlib_arg_ptr(&args, "O", o, true);
    rt_stdlib_arg_ptr(&args, "LSE", lse, true);
    rt_stdlib_arg_ptr(&args, "Q", q, true);
    rt_stdlib_arg_ptr(&args, "K", k, true);
    rt_stdlib_arg_ptr(&args, "V", v, true);
    rt_stdlib_arg_ptr(&args, "cu_seqlens_q", varlen ? cu_seqlens_q : lse, varlen); /* without varlen: never read */
    rt_stdlib_arg_ptr(&args, "cu_seqlens_k", varlen ? cu_seqlens_k : lse, varlen);
    rt_stdlib_arg_int(&args, "heads", heads, true, 0);
    rt_stdlib_arg_int(&args, "kv_group", heads / kv_heads, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_q", seqlen_q, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_k", seqlen_k, true, 0);
    const int64_t strides[12] = {stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                                 stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om};
    for (int i = 0; i < 12; i++)
        rt_stdlib_arg_int(&args, stride_names[i], strides[i], false, vector);
    size_t si = l->num_args++;
    l->names[si] = "scale";
    l->f32s[si] = scale;
    l->args[si] = &l->f32s[si];

    l->options.num_warps = l->plan.num_warps;
    l->options.num_stages = l->plan.num_stages;
    l->options.warp_specialize = l->plan.warp_specialize;
    if (!l->options.num_params)
        l->options.params = NULL;
    st = rt_stdlib_request(entry, l->plan.file, l->plan.kernel, l->plan.constexprs, l->plan.num_constexprs, &l->options,
                           l->divisibility, l->num_args, &l->req);
    if (st == TC_OK)
        st = rt_attention_launch_hook ? rt_attention_launch_hook(l)
                                      : rt_stdlib_jit_launch(ctx, &l->req, l->plan.grid, stream, l->args, l->num_args);
    free(l);
    return st;
}
