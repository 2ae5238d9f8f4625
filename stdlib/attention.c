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
 *       - D <= 128: BM 128, BN 64, 4 warps, 3 stages (on wgmma, D <= 64
 *         below 4096 keys: BM 64, four programs per SM);
 *       - D 256 on mma.sync (sm_80, sm_90): BM 128, BN 32, 8 warps, 3 stages
 *         (4 warps with BM 64 spill 132 bytes there);
 *       - D 256 on wgmma (sm_90a): BM 128, BN 64, 8 warps and a producer
 *         warpgroup (tc_options.warp_specialize; the two consumer
 *         warpgroups ping-pong, P V overlapped with the softmax), 2 stages;
 *       - D 128 on wgmma, and D 64 from 4096 keys: the same with BN 128
 *         and 3 stages;
 *       - D 128 on wgmma without packed sequences, up to 8192 keys: the
 *         same as persistent programs on 2 stages, the producer copying
 *         each tile's Q under the previous tile's end (attn_persistent);
 *         causal with packed sequences up to 1024 keys: BM 64, BN 64, one
 *         consumer warpgroup, two programs per SM;
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

/* The tensors the entry points take, and their stride parameters (three
 * per tensor, in this order, as the kernels name them). */
enum { ATTN_Q, ATTN_K, ATTN_V, ATTN_O, ATTN_DO, ATTN_DQ, ATTN_DK, ATTN_DV, ATTN_TENSORS };
static const char *const tensor_names[ATTN_TENSORS] = {"q", "k", "v", "o", "dout", "dq", "dk", "dv"};
static const char *const stride_names[3 * ATTN_TENSORS] = {
    "stride_qb",  "stride_qh",  "stride_qm",  "stride_kb",  "stride_kh",  "stride_kn",  "stride_vb",  "stride_vh",
    "stride_vn",  "stride_ob",  "stride_oh",  "stride_om",  "stride_dob", "stride_doh", "stride_dom", "stride_dqb",
    "stride_dqh", "stride_dqm", "stride_dkb", "stride_dkh", "stride_dkn", "stride_dvb", "stride_dvh", "stride_dvn"};

/* Does tensor t have k's shape (KV heads, key rows) rather than q's? */
static bool attn_kv_shaped(int t) {
    return t == ATTN_K || t == ATTN_V || t == ATTN_DK || t == ATTN_DV;
}

/* Tensor t's strides: >= 0, largest offset within an int64; its rows of
 * head_dim elements are contiguous. */
static tc_status attn_check_tensor(const char *entry, int t, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                                   const int64_t *strides) {
    const char *const *names = &stride_names[3 * t];
    const RtStdlibDim dims[] = {
        {names[0], batch, strides[0]}, {names[1], heads, strides[1]}, {names[2], seq, strides[2]}, {NULL, dim, 1}};
    return rt_stdlib_check_strides(entry, tensor_names[t], dims, 4);
}

/* Does a tensor give each of its elements its own address? Sorted by
 * stride, each dimension of extent > 1 must step past everything the inner
 * ones span. */
bool rt_attention_distinct(int64_t batch, int64_t heads, int64_t seq, int64_t dim, const int64_t *strides) {
    int64_t ext[3] = {batch, heads, seq}, str[3] = {strides[0], strides[1], strides[2]};
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

void rt_attention_cx(tc_attention_plan *p, const char *name, tc_constexpr_kind kind, int64_t v) {
    p->constexprs[p->num_constexprs++] = (tc_constexpr){name, kind, v, 0};
}

/* Longest key sequence for which head dim 128 without causal masking takes
 * the EVEN_N kernel (see attn_plan). */
enum { ATTN_EVEN_N_MAX_KEYS_D128 = 2048 };
/* Shortest key sequence for which head dim 64 takes the
 * warp-specialized kernel (see attn_plan). */
enum { ATTN_WS_MIN_KEYS = 4096 };
/* Longest key sequence for which causal head dim 128 runs as two
 * programs of one consumer warpgroup per SM (see attn_plan). */
enum { ATTN_TWO_PER_SM_MAX_KEYS = 1024 };

/* Longest key sequence for which head dim 128 runs as persistent
 * programs (see attn_persistent). */
enum { ATTN_PERSISTENT_MAX_KEYS = 8192 };

/* Shared memory of one multiprocessor on sm_90 (228 KB; sm_80's 164 KB
 * makes attn_programs_per_sm an overestimate there, which only orders the
 * programs differently). */
enum { ATTN_SMEM_PER_SM = 233472 };

/* Does the warp-specialized kernel of head dim 128 run as persistent
 * programs (the persistent pass: one per SM walks the tiles, its producer
 * loading the next tile's Q and first key blocks under this tile's last
 * P V and epilogue; the rounds of odd index in the reverse order, which
 * balances causal tiles), on rings of 2 stages (with 3, Q's buffer does
 * not fit beside them for the whole tile loop, and the consumers load it
 * themselves)? Up to ATTN_PERSISTENT_MAX_KEYS keys without packed
 * sequences. On the H200 (bench/attention.py --sweep, f16, B4 H32) 1024
 * keys 535.7 TFLOP/s against 510.6 one program a tile, causal 374.8
 * against 362.8 for two programs of 64 rows per SM; 4096 keys 598.1
 * against 587.3, causal 534.5 against 513.0; at 16384 one program a tile
 * is as fast or faster (bench/RESULTS.md). Elsewhere the plans leave them
 * off; TILEC_PERSISTENT=1 turns them on wherever there is a producer and
 * no packed sequences. */
static bool attn_persistent_pays(const tc_attention_plan *p, int64_t seqlen_k, int pers) {
    if (pers >= 0)
        return pers && p->warp_specialize && !p->varlen;
    return p->warp_specialize && !p->varlen && p->block_d == 128 && seqlen_k <= ATTN_PERSISTENT_MAX_KEYS;
}

/* Sets p->persistent (pers: -1 the rule above, 0 or 1 forced), and 2
 * stages where the rule holds. */
static void attn_persistent(tc_attention_plan *p, int64_t seqlen_k, int pers) {
    bool rule =
        attn_persistent_pays(p, seqlen_k, -1) && p->block_m == 128 && p->block_n == 128 && p->min_programs_per_sm <= 1;
    p->persistent = pers >= 0 ? attn_persistent_pays(p, seqlen_k, pers) : rule;
    if (p->persistent && rule)
        p->num_stages = 2;
}

/* Programs of kernel p one multiprocessor runs at once, about, as the plans
 * size them: one with a producer warpgroup and in the backward's kernels
 * (240 registers a thread on 8 warps), else what the forward's Q and
 * num_stages K and V tiles leave room for (the rings hold one fewer or one
 * more), at most 4 (registers); min_programs_per_sm where the plan sets it.
 * An estimate for attn_head_group only. */
static int64_t attn_programs_per_sm(const tc_attention_plan *p) {
    if (p->min_programs_per_sm > 0)
        return p->min_programs_per_sm;
    if (p->warp_specialize || strcmp(p->kernel, "attention_fwd") != 0)
        return 1;
    int64_t smem = ((int64_t)p->block_m * p->block_d + (int64_t)p->num_stages * 2 * p->block_n * p->block_d) * 2;
    int64_t n = ATTN_SMEM_PER_SM / smem;
    return n < 1 ? 1 : n > 4 ? 4 : n;
}

/* The kernels' head_group (lib/attention.tile, "The order of the
 * programs"). With causal masking, programs of one tile each: groups of
 * heads of about two waves of programs (sms multiprocessors), the heads
 * split evenly among the groups, so that the launch's last group runs its
 * longest programs first and ends on short ones. A simulation of the
 * launches (in-order starts on 132 SMs) put the end of the grid's own order
 * 3-30% past the even share at 1024-4096 keys, this order within 0-3%.
 * Else 1, the grid's own order: without causal masking every program is
 * as long as the next, and persistent programs take their tiles in an
 * order of their own (pass persistent). A group's programs stay a few
 * waves, far below the kernels' bound (head_group times the blocks under
 * 2^31). */
static int64_t attn_head_group(int sms, const tc_attention_plan *p) {
    int64_t blocks = p->grid.x, heads = p->grid.y;
    if (!p->causal || p->persistent || sms < 1 || blocks < 1 || heads < 1)
        return 1;
    int64_t g = 2 * sms * attn_programs_per_sm(p) / blocks;
    g = g < 1 ? 1 : g > heads ? heads : g;
    return rt_stdlib_cdiv(heads, rt_stdlib_cdiv(heads, g));
}

void rt_attention_plan(tc_dtype dtype, int64_t batch, int64_t heads, int64_t seqlen_q, int64_t seqlen_k,
                       int64_t head_dim, bool causal, bool varlen, const char *arch, int ws, int pers,
                       tc_attention_plan *p) {
    bool wgmma = rt_stdlib_wgmma(arch);
    memset(p, 0, sizeof *p);
    p->file = "attention.tile";
    p->kernel = "attention_fwd";
    p->head_dim = (int)head_dim;
    p->causal = causal;
    p->varlen = varlen; /* before attn_persistent_pays reads it */
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
     * that take turns on the tensor cores (the pingpong pass), each with
     * P V one key block late under its softmax (overlap-dots): BN 128 and 3
     * stages up to head dim 128 (224 KB of shared memory at 128), BN 64
     * and 2 stages at 256. It pays at head dims 128 and 256, causal or
     * not (the masked loop of causal kernels takes its key blocks from the
     * same producer), and at 64 from 4096 keys on; shorter sequences at
     * head dim 64 run faster as programs of one warpgroup, four per SM
     * (below; bench/RESULTS.md). ws 0 or 1 forces it. */
    bool ws_pays = wide || p->block_d == 128 || (p->block_d >= 64 && seqlen_k >= ATTN_WS_MIN_KEYS);
    p->warp_specialize = wgmma && (ws == 1 || (ws < 0 && ws_pays));
    if (p->warp_specialize) {
        p->block_m = 128;
        p->block_n = wide ? 64 : 128;
        p->num_warps = 8;
        p->num_stages = wide ? 2 : 3;
        if (causal && p->block_d == 128 && seqlen_k <= ATTN_TWO_PER_SM_MAX_KEYS &&
            !attn_persistent_pays(p, seqlen_k, pers)) {
            /* Causal head dim 128 on short sequences where persistent
             * programs cannot run (packed sequences): one consumer
             * warpgroup of 64 rows and a producer, BN 64, 2 stages (82 KB),
             * two programs per SM (min_programs_per_sm: the registers
             * split 40 / 216 for two), so that one program's start and end
             * run under the other's loop. 7% faster than the two-consumer
             * programs at 1024 keys, 3% slower at 2048 (bench/RESULTS.md). */
            p->block_m = 64;
            p->block_n = 64;
            p->num_warps = 4;
            p->num_stages = 2;
            p->min_programs_per_sm = 2;
        }
    } else if (wgmma && p->block_d <= 64) {
        /* Head dim 64 and below without a producer (under 4096 keys): one
         * m64 tile per program, four programs of 40 KB per SM, so that one
         * program's start and end hide under the others' loops: 12% faster
         * at 1024 keys, 21% with causal masking (bench/RESULTS.md). */
        p->block_m = 64;
    }
    p->grid = (tc_dim3){(unsigned)rt_stdlib_cdiv(seqlen_q, p->block_m), (unsigned)(batch * heads), 1};
    rt_attention_cx(p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    rt_attention_cx(p, "HEAD_DIM", TC_CONSTEXPR_INT, p->head_dim);
    rt_attention_cx(p, "D", TC_CONSTEXPR_INT, p->block_d);
    rt_attention_cx(p, "BM", TC_CONSTEXPR_INT, p->block_m);
    rt_attention_cx(p, "BN", TC_CONSTEXPR_INT, p->block_n);
    rt_attention_cx(p, "CAUSAL", TC_CONSTEXPR_BOOL, causal);
    rt_attention_cx(p, "VARLEN", TC_CONSTEXPR_BOOL, varlen);
    /* EVEN_N when seqlen_k is a multiple of BN. Causal: the diagonal blocks
     * skip the sequence-end mask. Not causal: there is no masked loop at all
     * (half the code to compile), faster up to head dim 64; at head dim
     * 128 faster with short key sequences but not with long ones (the same
     * loop PTX, allocated differently by ptxas), so there up to 2048 keys
     * (bench/RESULTS.md has the sweeps). */
    bool even_n = !varlen && seqlen_k % p->block_n == 0 &&
                  (causal || p->block_d <= 64 || (p->block_d <= 128 && seqlen_k <= ATTN_EVEN_N_MAX_KEYS_D128));
    rt_attention_cx(p, "EVEN_N", TC_CONSTEXPR_BOOL, even_n);
    attn_persistent(p, seqlen_k, pers);
}

/* Takes the tuning table's tiles for these lengths, if it has them for the
 * context's GPU: the kernel is known by the plan's constexprs less the
 * tuned ones and EVEN_N, which follows from BN (docs/autotune.md). */
static void attn_apply_tuned(tc_context *ctx, const char *arch, int64_t seqlen_q, int64_t seqlen_k, int pers,
                             tc_attention_plan *p) {
    static const char *const leave_out[] = {"BM", "BN", "EVEN_N", NULL};
    int64_t keys[2] = {seqlen_q, seqlen_k}, bm, bn;
    RtStdlibTuned t;
    if (!rt_stdlib_tuned_plan(ctx, arch, p->file, p->kernel, p->constexprs, p->num_constexprs, leave_out, keys, 2,
                              &t) ||
        !rt_stdlib_tuned_value(&t, "BM", &bm) || !rt_stdlib_tuned_value(&t, "BN", &bn))
        return;
    p->block_m = (int)bm;
    p->block_n = (int)bn;
    rt_stdlib_tuned_options(&t, &p->num_warps, &p->num_stages, &p->warp_specialize);
    p->min_programs_per_sm = t.min_programs_per_sm; /* 0 unless the configuration sets it */
    p->grid.x = (unsigned)rt_stdlib_cdiv(seqlen_q, p->block_m);
    bool even_n = seqlen_k % p->block_n == 0 &&
                  (p->causal || p->block_d <= 64 || (p->block_d <= 128 && seqlen_k <= ATTN_EVEN_N_MAX_KEYS_D128));
    for (size_t i = 0; i < p->num_constexprs; i++) {
        tc_constexpr *c = &p->constexprs[i];
        if (strcmp(c->name, "BM") == 0)
            c->i = bm;
        else if (strcmp(c->name, "BN") == 0)
            c->i = bn;
        else if (strcmp(c->name, "EVEN_N") == 0)
            c->i = even_n;
    }
    attn_persistent(p, seqlen_k, pers);
    p->tuned = 1;
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
                      -1, out);
    return TC_OK;
}

/* ---- validation, shared by the forward and the backward pass ---- */

/* What both entry points check: the sizes, the cu_seqlens pair, the scale
 * and the strides of the tensors they take. */
typedef struct AttnArgs {
    const char *entry;
    tc_dtype dtype;
    int64_t batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
    int64_t strides[ATTN_TENSORS][3]; /* batch, head, sequence: the tensors in `tensors` */
    CUdeviceptr cu_seqlens_q, cu_seqlens_k;
    float scale;
    unsigned tensors; /* bit t: the entry point takes tensor t */
    unsigned outputs; /* bit t: tensor t is written (its elements must not alias) */
    bool varlen;      /* set by attn_check */
} AttnArgs;

static tc_status attn_check(tc_context *ctx, AttnArgs *a) {
    const char *entry = a->entry;
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = attn_check_sizes(entry, a->dtype, a->batch, a->heads, a->kv_heads, a->seqlen_q, a->seqlen_k,
                               a->head_dim)) != TC_OK)
        return st;
    if (!(a->cu_seqlens_q == 0) != !(a->cu_seqlens_k == 0))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: cu_seqlens_q and cu_seqlens_k must both be given (varlen) or "
                       "both be 0",
                       entry);
    bool varlen = a->varlen = a->cu_seqlens_q != 0;
    if ((st = rt_stdlib_check_finite(entry, "scale", a->scale, false)) != TC_OK)
        return st;
    /* with varlen the rows are packed: the batch strides are unused and a
     * sequence's rows are among seqlen * batch rows */
    int64_t nb = varlen ? 1 : a->batch, rq = varlen ? a->seqlen_q * a->batch : a->seqlen_q,
            rk = varlen ? a->seqlen_k * a->batch : a->seqlen_k;
    for (int t = 0; t < ATTN_TENSORS; t++) {
        bool kv = attn_kv_shaped(t);
        if ((a->tensors >> t & 1) && (st = attn_check_tensor(entry, t, nb, kv ? a->kv_heads : a->heads, kv ? rk : rq,
                                                             a->head_dim, a->strides[t])) != TC_OK)
            return st;
    }
    /* With varlen the packed total is on the device; distinct addresses are
     * checked within one sequence of the longest length (rows of different
     * heads may interleave with a total shorter than seqlen * batch). */
    for (int t = 0; t < ATTN_TENSORS; t++) {
        bool kv = attn_kv_shaped(t);
        int64_t rows = kv ? (varlen ? a->seqlen_k : rk) : (varlen ? a->seqlen_q : rq);
        const int64_t *sd = a->strides[t];
        if ((a->outputs >> t & 1) && !rt_attention_distinct(nb, kv ? a->kv_heads : a->heads, rows, a->head_dim, sd))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: %s's strides (%s %lld, %s %lld, %s %lld) give two of its elements the same address",
                           entry, tensor_names[t], stride_names[3 * t], (long long)sd[0], stride_names[3 * t + 1],
                           (long long)sd[1], stride_names[3 * t + 2], (long long)sd[2]);
    }
    return TC_OK;
}

/* The pointers of an entry point, in the order it checks them. */
typedef struct AttnPtr {
    const char *name;
    CUdeviceptr p;
    size_t elem; /* 0: the dtype's */
} AttnPtr;

static tc_status attn_check_ptrs(const AttnArgs *a, const AttnPtr *ptrs, size_t n) {
    tc_status st;
    for (size_t i = 0; i < n; i++)
        if ((st = rt_stdlib_check_ptr(a->entry, ptrs[i].name, ptrs[i].p,
                                      ptrs[i].elem ? ptrs[i].elem : rt_dtype_size(a->dtype))) != TC_OK)
            return st;
    if (a->varlen && ((st = rt_stdlib_check_ptr(a->entry, "cu_seqlens_q", a->cu_seqlens_q, 4)) != TC_OK ||
                      (st = rt_stdlib_check_ptr(a->entry, "cu_seqlens_k", a->cu_seqlens_k, 4)) != TC_OK))
        return st;
    return TC_OK;
}

/* ---- the launch ---- */

RtStdlibArgs rt_attention_args(RtAttentionLaunch *l) {
    return (RtStdlibArgs){
        l->names, l->ptrs, l->i64s, l->i32s, l->divisibility, l->args, &l->num_args, l->facts, &l->options.num_params};
}

/* Starts a launch of plan on ctx's stream: its options; the caller appends
 * the arguments (attn_args) and calls attn_launch. */
void rt_attention_begin(RtAttentionLaunch *l, tc_context *ctx, CUstream stream, const tc_attention_plan *plan) {
    memset(l, 0, sizeof *l);
    l->ctx = ctx;
    l->stream = stream;
    l->plan = *plan;
    tc_options_init(&l->options);
    l->options.params = l->facts;
}

/* The strides of tensor t, as kernel arguments: facts where they are
 * multiples of vector elements (every row then starts on 16 bytes). */
static void attn_arg_strides(const RtStdlibArgs *args, const AttnArgs *a, int t) {
    int64_t vector = 16 / (int64_t)rt_dtype_size(a->dtype);
    for (int i = 0; i < 3; i++)
        rt_stdlib_arg_int(args, stride_names[3 * t + i], a->strides[t][i], false, vector);
}

void rt_attention_arg_f32(RtAttentionLaunch *l, const char *name, float v) {
    size_t si = l->num_args++;
    l->names[si] = name;
    l->f32s[si] = v;
    l->args[si] = &l->f32s[si];
}

tc_status rt_attention_launch(const char *entry, RtAttentionLaunch *l) {
    l->options.num_warps = l->plan.num_warps;
    l->options.num_stages = l->plan.num_stages;
    l->options.warp_specialize = l->plan.warp_specialize;
    l->options.persistent = l->plan.persistent;
    l->options.min_programs_per_sm = l->plan.min_programs_per_sm;
    if (!l->options.num_params)
        l->options.params = NULL;
    tc_status st = rt_stdlib_request(entry, l->plan.file, l->plan.kernel, l->plan.constexprs, l->plan.num_constexprs,
                                     &l->options, l->divisibility, l->num_args, &l->req);
    if (st == TC_OK)
        st = rt_attention_launch_hook
                 ? rt_attention_launch_hook(l)
                 : rt_stdlib_jit_launch(l->ctx, &l->req, l->plan.grid, l->stream, l->args, l->num_args);
    return st;
}

tc_status tc_attention_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr o, CUdeviceptr lse,
                           CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, int64_t batch, int64_t heads, int64_t kv_heads,
                           int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int64_t stride_qb, int64_t stride_qh,
                           int64_t stride_qm, int64_t stride_kb, int64_t stride_kh, int64_t stride_kn,
                           int64_t stride_vb, int64_t stride_vh, int64_t stride_vn, int64_t stride_ob,
                           int64_t stride_oh, int64_t stride_om, CUdeviceptr cu_seqlens_q, CUdeviceptr cu_seqlens_k,
                           float scale, int causal) {
    AttnArgs a = {"tc_attention_fwd",
                  dtype,
                  batch,
                  heads,
                  kv_heads,
                  seqlen_q,
                  seqlen_k,
                  head_dim,
                  {{stride_qb, stride_qh, stride_qm},
                   {stride_kb, stride_kh, stride_kn},
                   {stride_vb, stride_vh, stride_vn},
                   {stride_ob, stride_oh, stride_om}},
                  cu_seqlens_q,
                  cu_seqlens_k,
                  scale,
                  1u << ATTN_Q | 1u << ATTN_K | 1u << ATTN_V | 1u << ATTN_O,
                  1u << ATTN_O,
                  false};
    const AttnPtr ptrs[] = {{"o", o, 0}, {"lse", lse, 4}, {"q", q, 0}, {"k", k, 0}, {"v", v, 0}};
    tc_status st;
    if ((st = attn_check(ctx, &a)) != TC_OK || (st = attn_check_ptrs(&a, ptrs, 5)) != TC_OK)
        return st;
    bool varlen = a.varlen;

    RtAttentionLaunch *l = malloc(sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", a.entry);
    bool hooked = rt_attention_launch_hook != NULL;
    tc_attention_plan plan;
    int pers = rt_stdlib_forced_persistent(ctx, hooked); /* 1: where it can be, a producer and no packed sequences */
    rt_attention_plan(dtype, batch, heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen,
                      rt_stdlib_target(ctx, hooked), rt_stdlib_forced_warp_specialize(ctx, hooked), pers, &plan);
    /* the tuning table's tiles (tuned on sm_90a for fixed lengths) unless
     * a producer warpgroup is forced one way or the other */
    const char *arch = rt_stdlib_target(ctx, hooked);
    if (!hooked && !varlen && rt_stdlib_wgmma(arch) && rt_stdlib_forced_warp_specialize(ctx, false) < 0)
        attn_apply_tuned(ctx, arch, seqlen_q, seqlen_k, pers, &plan);
    if (scale < 0)
        rt_attention_cx(&plan, "NEG_SCALE", TC_CONSTEXPR_BOOL, 1);
    rt_attention_begin(l, ctx, stream, &plan);
    RtStdlibArgs args = rt_attention_args(l);
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
    rt_stdlib_arg_int(&args, "head_group", attn_head_group(rt_stdlib_sms(ctx, hooked), &plan), true, 0);
    for (int t = ATTN_Q; t <= ATTN_O; t++)
        attn_arg_strides(&args, &a, t);
    rt_attention_arg_f32(l, "scale", scale);
    st = rt_attention_launch(a.entry, l);
    free(l);
    return st;
}

/* ==== the backward pass ==== */

/* The dQ strategy: -1 the plan's, 0 a kernel of its own, 1 atomics
 * (TILEC_ATTENTION_BWD_DQ=kernel or =atomic; ignored under a launch hook,
 * as the unit tests' contexts are not real, and when deterministic). */
static int attn_forced_dq_atomic(bool hooked) {
    if (hooked)
        return -1;
    const char *e = secure_getenv("TILEC_ATTENTION_BWD_DQ");
    if (!e)
        return -1;
    return strcmp(e, "atomic") == 0 ? 1 : strcmp(e, "kernel") == 0 ? 0 : -1;
}

/* A kernel of lib/attention_bwd.tile: its tiles, warps, stages and grid,
 * and the constexprs every one of them takes. */
static void attn_bwd_kernel(tc_attention_plan *p, const char *kernel, tc_dtype dtype, int head_dim, int block_d, int bm,
                            int bn, int warps, int stages, unsigned grid_x, unsigned grid_y, bool causal, bool varlen) {
    memset(p, 0, sizeof *p);
    p->file = "attention_bwd.tile";
    p->kernel = kernel;
    p->head_dim = head_dim;
    p->block_d = block_d;
    p->block_m = bm;
    p->block_n = bn;
    p->num_warps = warps;
    p->num_stages = stages;
    p->causal = causal;
    p->varlen = varlen;
    p->grid = (tc_dim3){grid_x, grid_y, 1};
    rt_attention_cx(p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    rt_attention_cx(p, "HEAD_DIM", TC_CONSTEXPR_INT, head_dim);
    rt_attention_cx(p, "D", TC_CONSTEXPR_INT, block_d);
    rt_attention_cx(p, "BM", TC_CONSTEXPR_INT, bm);
    if (bn)
        rt_attention_cx(p, "BN", TC_CONSTEXPR_INT, bn);
    if (bn)
        rt_attention_cx(p, "CAUSAL", TC_CONSTEXPR_BOOL, causal);
    rt_attention_cx(p, "VARLEN", TC_CONSTEXPR_BOOL, varlen);
}

/* Workspace pieces start on this many bytes. */
enum { ATTN_WS_ALIGN = 256 };

static size_t attn_align(size_t n) {
    return (n + ATTN_WS_ALIGN - 1) / ATTN_WS_ALIGN * ATTN_WS_ALIGN;
}

/*
 * The backward plan. Tiles, from register and shared-memory arithmetic on
 * an H200 (sm_90a: 64K registers, 255 per thread; 227 KB of shared memory
 * per program), then checked with ptxas (no spills, no serialized wgmma):
 *
 *  - dkdv, one program per BN keys: dK and dV are f32 [BN, D] accumulators
 *    held for the whole kernel, 2 BN D / threads registers each thread; S^T
 *    and dP^T are [BN, BM] f32, 2 BN BM / threads more. wgmma needs 64 rows
 *    per warpgroup, so BN 128 takes 8 warps (2 warpgroups, 256 threads):
 *    D 128 holds 128 registers of dK and dV, and BM 64 adds 64 for S^T and
 *    dP^T (244 in all with causal masking off; 255 and 8 bytes of spill
 *    with it, still faster than BM 32's 232). D 64: 64 + 128 at BM 128
 *    (250) without causal masking; with it BM 64 (no spill; BM 128 spilled
 *    56 bytes in the producer's consumers at 240 registers and ran 3.5-5%
 *    slower, 2026-11-29; it was the faster without a producer); up to 32
 *    BM 128. D 256
 *    cannot hold [128, 256] twice: BN 64 on 8 warps, the warpgroups
 *    splitting D (128 registers of accumulators each thread), BM 64 (218
 *    registers with async-dots; 1.16-1.30x BM 32 on the H200, 2026-11-25,
 *    bench/RESULTS.md; 200 KB of shared memory in all). K and V stay in
 *    shared memory (BN D 2 bytes each: 64 KB at D 128); Q and dO stream through 3-stage TMA rings of BM D (2 at D 256),
 *    each staged once and read by S^T = K Q^T and dP^T = V dO^T through a
 *    transposed view (memdesc_trans). bench/RESULTS.md has the measurements
 *    (BM 32 / 64 / 128). With dQ added by TMA reductions and no causal
 *    masking, a producer warpgroup issues dkdv's copies (across the GQA
 *    group loop too), on rings of 2 stages, the consumers at 240
 *    registers: 3-5% faster at head dim 128, 6-9% at 64. With causal
 *    masking it was 2-8% slower while each thread loaded its LSE and
 *    Delta columns from global memory; since those come through the
 *    producer's rings too (the padded LSE_LOG2 and Delta rows of the
 *    workspace), the producer gains there as well (5-9% with causal
 *    masking, and without atomics), so dkdv has one wherever TMA can
 *    feed it (bench/attention.py --bwd, H200, 2026-11-29). At head dim
 *    256 dq gets a producer too (2 stages), causal or not: 2-10% faster
 *    than neither.
 *  - dq, one program per BM query rows: the accumulator [BM, D] f32, S and
 *    dP [BM, BN]: BM 128 on 8 warps, BN 128 at D 128 and with causal
 *    masking at D 64, there with a producer warpgroup issuing the K and V
 *    copies (TMA, rings of 2 stages: 3 do not fit with Q and dO at D 128)
 *    and the consumers' registers raised to 232 (1-4% faster than without);
 *    else BN 64, 3 stages, no producer (faster at D 64 without masking,
 *    where the producer loses 5-8%); D 256: BM 64, BN 64 (211), with a
 *    producer on 2 stages.
 *  - preprocess and dq_convert: rows of D, 8192 / D rows on 4 warps (64
 *    values per thread).
 *
 * mma.sync (sm_80, sm_90), where every warp holds its own rows of the
 * accumulators and A operands come through registers: dkdv BM 32, BN 128,
 * 8 warps up to D 64 (252 registers); at D 128 BM 16, BN 64, 4 warps (36
 * bytes of spill: the least of the shapes tried); at D 256 BM 16, BN 32
 * (spills about 900 bytes: dK and dV alone are 128 registers a thread);
 * dq BM 128, BN 32, 8 warps up to D 64, BM 64, BN 32 at D 128 and BN 16 at
 * D 256, 4 warps.
 *
 * dQ: either dkdv adds each query block's dQ (a fifth product) into an f32
 * accumulator with atomic adds, which attention_bwd_dq_convert scales and
 * rounds, or a kernel of its own computes it (recomputing S and dP: 2 of
 * the 5 products again, but deterministic: each program owns its rows and
 * sums its key blocks in order). On sm_90a the atomic add of the dQ tile is
 * one TMA reduction from shared memory (pass tma-store) where the
 * accumulator's rows are a tensor's (not varlen), and that is the default up
 * to head dim 128: bench/attention.py --bwd (2026-11-25, H200) measured it
 * 1.00-1.15x the separate kernel at head dim 64, 0.98-1.08x at 128, and
 * 0.79-0.85x at 256, where dkdv's tiles are narrower and the fifth product
 * costs more than the kernel. Deterministic calls, varlen and the mma.sync
 * targets use the kernel; TILEC_ATTENTION_BWD_DQ=atomic or =kernel forces
 * either.
 */
/* Whether dQ may be added with atomics (dq_atomic: -1 the plan's choice, 0
 * a kernel of its own, 1 atomics): the plan's choice on sm_90a, where they
 * are TMA reductions, up to head dim 128 without varlen (varlen's row
 * bounds are no tensor extents: element atomics, slower than the kernel; at
 * 256 the fifth product costs dkdv more than the dQ kernel). The workspace
 * holds the accumulator wherever this holds, so that its size depends on
 * the arguments alone, not on the target. */
static bool attn_bwd_may_atomic(int dq_atomic, int block_d, bool varlen, bool deterministic) {
    return !deterministic && (dq_atomic == 1 || (dq_atomic < 0 && !varlen && block_d <= 128));
}

/* Delta's and LSE_LOG2's rows (lib/attention_bwd.tile): seqlen_q rounded up
 * to a multiple of every backward kernel's block of query rows. */
enum { ATTN_BWD_ROW_PAD = 128 };

static int64_t attn_bwd_seqlen_pad(int64_t seqlen_q) {
    return (seqlen_q + ATTN_BWD_ROW_PAD - 1) / ATTN_BWD_ROW_PAD * ATTN_BWD_ROW_PAD;
}

/* The workspace of tc_attention_bwd: Delta, then LSE * log2(e) at
 * *lse_offset (f32, rows of attn_bwd_seqlen_pad), then where dQ may be added
 * with atomics the f32 dQ accumulator at *dq_acc_offset. */
static size_t attn_bwd_workspace(int64_t batch, int64_t heads, int64_t seqlen_q, int64_t head_dim, int dq_atomic,
                                 bool varlen, bool deterministic, size_t *lse_offset, size_t *dq_acc_offset) {
    size_t nrows = (size_t)batch * (size_t)heads * (size_t)seqlen_q;
    size_t npad = (size_t)batch * (size_t)heads * (size_t)attn_bwd_seqlen_pad(seqlen_q);
    int d = rt_stdlib_pow2_clamped(head_dim, 16, ATTN_MAX_HEAD_DIM);
    *lse_offset = attn_align(npad * 4);
    size_t bytes = 2 * *lse_offset;
    *dq_acc_offset = bytes;
    if (!attn_bwd_may_atomic(dq_atomic, d, varlen, deterministic))
        return bytes;
    return bytes + attn_align(nrows * (size_t)d * 4);
}

void rt_attention_bwd_plan(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seqlen_q,
                           int64_t seqlen_k, int64_t head_dim, bool causal, bool varlen, bool deterministic,
                           const char *arch, int dq_atomic, int ws, tc_attention_bwd_plan *p) {
    memset(p, 0, sizeof *p);
    bool wgmma = rt_stdlib_wgmma(arch);
    int d = rt_stdlib_pow2_clamped(head_dim, 16, ATTN_MAX_HEAD_DIM), hd = (int)head_dim;
    p->dq_atomic = attn_bwd_may_atomic(dq_atomic, d, varlen, deterministic) && (dq_atomic == 1 || wgmma);
    unsigned bh = (unsigned)(batch * heads), bkv = (unsigned)(batch * kv_heads);
    int rows = 8192 / d; /* preprocess, convert */
    unsigned gq = (unsigned)rt_stdlib_cdiv(seqlen_q, rows);
    attn_bwd_kernel(&p->preprocess, "attention_bwd_preprocess", dtype, hd, d, rows, 0, 4, 1,
                    (unsigned)rt_stdlib_cdiv(attn_bwd_seqlen_pad(seqlen_q), rows), bh, causal, varlen);
    rt_attention_cx(&p->preprocess, "ATOMIC_DQ", TC_CONSTEXPR_BOOL, p->dq_atomic);
    int bm, bn, warps, stages;
    if (wgmma) {
        bm = d <= 32 || (d == 64 && !causal) ? 128 : 64, bn = d <= 128 ? 128 : 64, warps = 8, stages = d <= 128 ? 3 : 2;
    } else {
        bm = d <= 64 ? 32 : 16, bn = d <= 64 ? 128 : d <= 128 ? 64 : 32, warps = d <= 64 ? 8 : 4, stages = 3;
    }
    attn_bwd_kernel(&p->dkdv, "attention_bwd_dkdv", dtype, hd, d, bm, bn, warps, stages,
                    (unsigned)rt_stdlib_cdiv(seqlen_k, bn), bkv, causal, varlen);
    rt_attention_cx(&p->dkdv, "ATOMIC_DQ", TC_CONSTEXPR_BOOL, p->dq_atomic);
    /* a producer warpgroup for dkdv: rings of 2 stages (room for dQ's two
     * TMA buffers). Not with packed sequences: their rows' bounds are
     * loads, no TMA boxes, so no producer (and the plain pipeline keeps
     * its stages) */
    bool wide = d > 128 && !varlen;
    p->dkdv.warp_specialize = wgmma && (ws == 1 || (ws < 0 && !varlen));
    if (p->dkdv.warp_specialize)
        p->dkdv.num_stages = 2;
    if (p->dq_atomic) {
        attn_bwd_kernel(&p->dq, "attention_bwd_dq_convert", dtype, hd, d, rows, 0, 4, 1, gq, bh, causal, varlen);
    } else {
        if (wgmma) {
            bm = d <= 128 ? 128 : 64, bn = d <= 128 && (causal || d > 64) ? 128 : 64, warps = 8, stages = 3;
        } else
            bm = d <= 64 ? 128 : 64, bn = d <= 128 ? 32 : 16, warps = d <= 64 ? 8 : 4, stages = 3;
        /* a producer warpgroup; K and V rings of 2 stages */
        bool dq_ws = wgmma && (ws == 1 || (ws < 0 && ((d <= 128 && bn == 128) || wide)));
        if (dq_ws)
            stages = 2;
        attn_bwd_kernel(&p->dq, "attention_bwd_dq", dtype, hd, d, bm, bn, warps, stages,
                        (unsigned)rt_stdlib_cdiv(seqlen_q, bm), bh, causal, varlen);
        p->dq.warp_specialize = dq_ws;
    }
    p->delta_offset = 0;
    size_t acc;
    p->workspace_bytes =
        attn_bwd_workspace(batch, heads, seqlen_q, head_dim, dq_atomic, varlen, deterministic, &p->lse_offset, &acc);
    if (p->dq_atomic)
        p->dq_acc_offset = acc;
}

tc_status tc_attention_bwd_plan_for(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seqlen_q,
                                    int64_t seqlen_k, int64_t head_dim, int causal, int varlen, int deterministic,
                                    tc_attention_bwd_plan *out) {
    const char *entry = "tc_attention_bwd_plan_for";
    tc_status st = rt_stdlib_check_given(entry, "out", out);
    if (st != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    if ((st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim)) != TC_OK)
        return st;
    rt_attention_bwd_plan(dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen != 0,
                          deterministic != 0, TC_DEFAULT_ARCH, attn_forced_dq_atomic(false), -1, out);
    return TC_OK;
}

tc_status tc_attention_bwd_workspace_size(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                                          int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int causal, int varlen,
                                          int deterministic, size_t *bytes) {
    const char *entry = "tc_attention_bwd_workspace_size";
    tc_status st = rt_stdlib_check_given(entry, "bytes", bytes);
    if (st != TC_OK)
        return st;
    *bytes = 0;
    if ((st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim)) != TC_OK)
        return st;
    tc_attention_bwd_plan p;
    rt_attention_bwd_plan(dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen != 0,
                          deterministic != 0, TC_DEFAULT_ARCH, attn_forced_dq_atomic(false), -1, &p);
    *bytes = p.workspace_bytes;
    return TC_OK;
}

/* What attention_bwd_dkdv and attention_bwd_dq both read. */
typedef struct AttnBwdInputs {
    CUdeviceptr q, k, v, dout, lse_log2, delta, cu_seqlens_q, cu_seqlens_k;
    bool varlen;
} AttnBwdInputs;

/* Their parameters from Q to the strides of dO, in the kernels' order
 * (head_group: attn_head_group's for the kernel). */
static void attn_bwd_inputs(const RtStdlibArgs *args, const AttnArgs *a, const AttnBwdInputs *in, int64_t head_group) {
    const struct {
        const char *name;
        CUdeviceptr p;
    } ptrs[] = {{"Q", in->q},   {"K", in->k}, {"V", in->v}, {"DO", in->dout}, {"LSE_LOG2", in->lse_log2},
                {"DELTA", in->delta}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        rt_stdlib_arg_ptr(args, ptrs[i].name, ptrs[i].p, true);
    rt_stdlib_arg_ptr(args, "cu_seqlens_q", in->cu_seqlens_q, in->varlen);
    rt_stdlib_arg_ptr(args, "cu_seqlens_k", in->cu_seqlens_k, in->varlen);
    rt_stdlib_arg_int(args, "heads", a->heads, true, 0);
    rt_stdlib_arg_int(args, "kv_group", a->heads / a->kv_heads, true, 0);
    rt_stdlib_arg_int(args, "seqlen_q", a->seqlen_q, true, 0);
    rt_stdlib_arg_int(args, "seqlen_k", a->seqlen_k, true, 0);
    rt_stdlib_arg_int(args, "seqlen_pad", attn_bwd_seqlen_pad(a->seqlen_q), true, 16);
    rt_stdlib_arg_int(args, "head_group", head_group, true, 0);
    static const int tensors[] = {ATTN_Q, ATTN_K, ATTN_V, ATTN_DO};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        attn_arg_strides(args, a, tensors[i]);
}

tc_status tc_attention_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dq, CUdeviceptr dk,
                           CUdeviceptr dv, CUdeviceptr dout, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr o,
                           CUdeviceptr lse, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seqlen_q,
                           int64_t seqlen_k, int64_t head_dim, int64_t stride_qb, int64_t stride_qh, int64_t stride_qm,
                           int64_t stride_kb, int64_t stride_kh, int64_t stride_kn, int64_t stride_vb,
                           int64_t stride_vh, int64_t stride_vn, int64_t stride_ob, int64_t stride_oh,
                           int64_t stride_om, int64_t stride_dob, int64_t stride_doh, int64_t stride_dom,
                           int64_t stride_dqb, int64_t stride_dqh, int64_t stride_dqm, int64_t stride_dkb,
                           int64_t stride_dkh, int64_t stride_dkn, int64_t stride_dvb, int64_t stride_dvh,
                           int64_t stride_dvn, CUdeviceptr cu_seqlens_q, CUdeviceptr cu_seqlens_k, float scale,
                           int causal, int deterministic, CUdeviceptr workspace, size_t workspace_bytes) {
    AttnArgs a = {"tc_attention_bwd",
                  dtype,
                  batch,
                  heads,
                  kv_heads,
                  seqlen_q,
                  seqlen_k,
                  head_dim,
                  {{stride_qb, stride_qh, stride_qm},
                   {stride_kb, stride_kh, stride_kn},
                   {stride_vb, stride_vh, stride_vn},
                   {stride_ob, stride_oh, stride_om},
                   {stride_dob, stride_doh, stride_dom},
                   {stride_dqb, stride_dqh, stride_dqm},
                   {stride_dkb, stride_dkh, stride_dkn},
                   {stride_dvb, stride_dvh, stride_dvn}},
                  cu_seqlens_q,
                  cu_seqlens_k,
                  scale,
                  (1u << ATTN_TENSORS) - 1,
                  1u << ATTN_DQ | 1u << ATTN_DK | 1u << ATTN_DV,
                  false};
    const AttnPtr ptrs[] = {
        {"dq", dq, 0}, {"dk", dk, 0}, {"dv", dv, 0}, {"dout", dout, 0}, {"q", q, 0},
        {"k", k, 0},   {"v", v, 0},   {"o", o, 0},   {"lse", lse, 4},   {"workspace", workspace, 16}};
    tc_status st;
    if ((st = attn_check(ctx, &a)) != TC_OK || (st = attn_check_ptrs(&a, ptrs, 10)) != TC_OK)
        return st;
    bool varlen = a.varlen, hooked = rt_attention_launch_hook != NULL;
    /* the workspace is an argument like the others: checked before the
     * context is read */
    int forced = attn_forced_dq_atomic(hooked);
    size_t lse_at, acc,
        need = attn_bwd_workspace(batch, heads, seqlen_q, head_dim, forced, varlen, deterministic != 0, &lse_at, &acc);
    if (workspace_bytes < need)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: workspace_bytes (%zu) is smaller than the %zu bytes tc_attention_bwd_workspace_size "
                       "gives for these arguments",
                       a.entry, workspace_bytes, need);
    tc_attention_bwd_plan plan;
    rt_attention_bwd_plan(dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen,
                          deterministic != 0, rt_stdlib_target(ctx, hooked), forced,
                          rt_stdlib_forced_warp_specialize(ctx, hooked), &plan);
    CUdeviceptr delta = workspace + plan.delta_offset, lse_log2 = workspace + plan.lse_offset;
    CUdeviceptr dq_acc = plan.dq_atomic ? workspace + plan.dq_acc_offset : delta; /* without atomics: never read */
    CUdeviceptr cu_q = varlen ? cu_seqlens_q : lse, cu_k = varlen ? cu_seqlens_k : lse; /* without varlen: never read */
    const AttnBwdInputs in = {q, k, v, dout, lse_log2, delta, cu_q, cu_k, varlen};
    int sms = rt_stdlib_sms(ctx, hooked);

    RtAttentionLaunch *l = malloc(sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", a.entry);
    /* 1. Delta (and the zeroed dQ accumulator) */
    rt_attention_begin(l, ctx, stream, &plan.preprocess);
    RtStdlibArgs args = rt_attention_args(l);
    rt_stdlib_arg_ptr(&args, "DELTA", delta, true);
    rt_stdlib_arg_ptr(&args, "LSE_LOG2", lse_log2, true);
    rt_stdlib_arg_ptr(&args, "DQ_ACC", dq_acc, true);
    rt_stdlib_arg_ptr(&args, "O", o, true);
    rt_stdlib_arg_ptr(&args, "DO", dout, true);
    rt_stdlib_arg_ptr(&args, "LSE", lse, true);
    rt_stdlib_arg_ptr(&args, "cu_seqlens_q", cu_q, varlen);
    rt_stdlib_arg_int(&args, "heads", heads, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_q", seqlen_q, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_pad", attn_bwd_seqlen_pad(seqlen_q), true, 16);
    attn_arg_strides(&args, &a, ATTN_O);
    attn_arg_strides(&args, &a, ATTN_DO);
    st = rt_attention_launch(a.entry, l);

    /* 2. dK and dV (and dQ's accumulator) */
    if (st == TC_OK) {
        rt_attention_begin(l, ctx, stream, &plan.dkdv);
        args = rt_attention_args(l);
        rt_stdlib_arg_ptr(&args, "DK", dk, true);
        rt_stdlib_arg_ptr(&args, "DV", dv, true);
        rt_stdlib_arg_ptr(&args, "DQ_ACC", dq_acc, true);
        attn_bwd_inputs(&args, &a, &in, attn_head_group(sms, &plan.dkdv));
        attn_arg_strides(&args, &a, ATTN_DK);
        attn_arg_strides(&args, &a, ATTN_DV);
        rt_attention_arg_f32(l, "scale", scale);
        st = rt_attention_launch(a.entry, l);
    }

    /* 3. dQ: its own kernel, or the accumulator converted */
    if (st == TC_OK) {
        rt_attention_begin(l, ctx, stream, &plan.dq);
        args = rt_attention_args(l);
        rt_stdlib_arg_ptr(&args, "DQ", dq, true);
        if (plan.dq_atomic) {
            rt_stdlib_arg_ptr(&args, "DQ_ACC", dq_acc, true);
            rt_stdlib_arg_ptr(&args, "cu_seqlens_q", cu_q, varlen);
            rt_stdlib_arg_int(&args, "heads", heads, true, 0);
            rt_stdlib_arg_int(&args, "seqlen_q", seqlen_q, true, 0);
        } else {
            attn_bwd_inputs(&args, &a, &in, attn_head_group(sms, &plan.dq));
        }
        attn_arg_strides(&args, &a, ATTN_DQ);
        rt_attention_arg_f32(l, "scale", scale);
        st = rt_attention_launch(a.entry, l);
    }
    free(l);
    return st;
}
