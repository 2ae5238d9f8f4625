/*
 * kvcache.c — inference attention against a KV cache (include/tilec/stdlib.h,
 * lib/attention_kvcache.tile): tc_attention_kvcache (decode, chunked
 * prefill, split-KV, a paged cache) and tc_kvcache_append.
 *
 * The steps of every family (stdlib_internal.h):
 *
 *  1. Validate (kv_check): the forward pass's sizes and rules (dtype, head
 *     dim, heads and KV heads, finite scale), the queries' and the caches'
 *     strides over what they span (a contiguous cache batch x seqlen_k
 *     rows, a paged one num_pages x page_size), o's distinct addresses,
 *     the block table's row stride, the optional pointers, num_splits and
 *     the workspace the plan needs.
 *  2. Plan (kv_plan). A program takes BM rows of one (sequence, KV head):
 *     query i of query head kvh * group + g is row i * group + g, so a
 *     decode step's rows are the group's heads (GQA packing) and K and V
 *     are read once per group.
 *       - wgmma (sm_90a), decode (the rows fit 64): BM 64 on one
 *         warpgroup; a contiguous cache in 128-key TMA tiles, 3 stages; a
 *         paged one in 64-key tiles, 4 stages (two programs per SM); head
 *         dim 256 in 64-key tiles (32 paged), 3 stages;
 *       - wgmma, prefill: BM 128 on two warpgroups, BN 128 (64 at head dim
 *         256), 3 stages; up to head dim 128 with a producer warpgroup
 *         that issues the TMA copies: a contiguous cache, or pages of a
 *         multiple of 8 tokens (kv_tma_pages), which the pipeline copies
 *         as one TMA box per page (passes/tma_access.c, gathered rows);
 *       - mma.sync (sm_80, sm_90): BM 64, BN 32, 4 warps, 3 stages.
 *     Split-KV (flash-decoding). With P programs per split, R of them
 *     resident at once (the SMs times the programs whose shared memory fits
 *     one), s splits of the key blocks take ceil(P s / R) waves of
 *     cdiv(blocks, s) + 2 blocks each (2: what a program costs besides its
 *     blocks); the plan takes the s (1..128) with the fewest blocks along
 *     the critical path, the smallest on a tie: a batch that fills the GPU
 *     stays unsplit, one long sequence spreads over every SM. Splits write
 *     partial O (f32) and LSE to the workspace; the combine kernel merges
 *     BR = 16 rows per program. Without a workspace the call runs unsplit.
 *     Gathered prefill. A prefill chunk (the wgmma prefill plan, head dim
 *     up to 128) against a paged cache, when the call has a workspace and
 *     its chunks reach KV_GATHER_MIN_CHUNK queries (or its pages are not
 *     TMA boxes), first copies the sequences' keys and values to it as a
 *     contiguous cache (kvcache_gather: 64 keys of one KV head per
 *     program) and runs the contiguous plan on the copy. The copy is one
 *     more read and write of the keys and values; a long chunk's attention
 *     reads them many times, and reads whole 128-key boxes faster than
 *     boxes of a page each (on an H200, bench/prefill.py: chunks of 1024
 *     to 4096 queries at 0.88-0.95x tc_attention_fwd gathered, 0.80-0.83x
 *     on the pages; chunks of 512 at 0.96x on the pages, 0.85x gathered).
 *  3. Launch through the attention family's helpers (attention.c): the
 *     pointers' 16-byte alignment and strides that are multiples of 8
 *     elements as facts, optional pointers that are absent replaced by one
 *     that is given (the kernel never reads them).
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
    KV_MAX_HEAD_DIM = 256,
    KV_MAX_SEQLEN = 1 << 30,
    KV_MAX_PROGRAMS_Y = 65535,
    KV_MAX_PAGE = 1024,
    KV_MAX_SPLITS = 128,
    KV_COMBINE_ROWS = 16,
    KV_WS_ALIGN = 256,
    KV_APPEND_TOKENS = 16,
    KV_GATHER_TOKENS = 64, /* keys a kvcache_gather program copies, of one KV head */
    KV_DECODE_ROWS = 64,   /* a KV head's query rows the decode plan takes (one m64 tile) */
    /* a prefill against pages TMA can read gathers them first from chunks of this many queries on */
    KV_GATHER_MIN_CHUNK = 1024,
    /* what a program costs besides its key blocks (its start, Q, the
     * epilogue; with splits the combine's share), in key blocks: the split
     * plan's constant */
    KV_PROGRAM_BLOCKS = 2,
    KV_SM_SHARED = 228 * 1024,      /* shared memory of an SM: sm_90 */
    KV_SM_SHARED_SM80 = 164 * 1024, /* ... sm_80 */
    KV_PROGRAM_SHARED = 1024,  /* what the driver reserves for each program */
};

/* The stride parameters of q, o and the caches, as the kernel names them. */
static const char *const qn[3] = {"stride_qb", "stride_qh", "stride_qm"};
static const char *const on[3] = {"stride_ob", "stride_oh", "stride_om"};
static const char *const kn[3] = {"stride_kb", "stride_kh", "stride_kn"};
static const char *const vn[3] = {"stride_vb", "stride_vh", "stride_vn"};

static size_t kv_align(size_t n) {
    return (n + KV_WS_ALIGN - 1) / KV_WS_ALIGN * KV_WS_ALIGN;
}

/* ---- validation ---- */

/* The cache's type (dtype's own, f8e4m3 or f8e5m2) and its scales (both or
 * neither; 0: none). */
static tc_status kv_check_cache_type(const char *entry, const char *name, tc_dtype dtype, tc_dtype cache,
                                     CUdeviceptr k_scale, CUdeviceptr v_scale) {
    if (cache != dtype && cache != TC_DTYPE_F8E4M3 && cache != TC_DTYPE_F8E5M2)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%d) must be dtype, TC_DTYPE_F8E4M3 or TC_DTYPE_F8E5M2", entry,
                       name, (int)cache);
    if (!k_scale != !v_scale)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: k_scale and v_scale must be given together (got %s only)", entry,
                       k_scale ? "k_scale" : "v_scale");
    return TC_OK;
}

/* The scales' alignment (f32), where given. */
static tc_status kv_check_scale_ptrs(const char *entry, CUdeviceptr k_scale, CUdeviceptr v_scale) {
    tc_status st;
    if ((k_scale && (st = rt_stdlib_check_ptr(entry, "k_scale", k_scale, 4)) != TC_OK) ||
        (v_scale && (st = rt_stdlib_check_ptr(entry, "v_scale", v_scale, 4)) != TC_OK))
        return st;
    return TC_OK;
}

/* The caches' element type. */
static tc_dtype kv_type(const tc_attention_kvcache_args *a) {
    return a->kv_dtype ? a->kv_dtype : a->dtype;
}

static tc_status kv_check_sizes(const char *entry, const tc_attention_kvcache_args *a) {
    tc_status st;
    if ((st = rt_stdlib_check_dtype(entry, a->dtype, false)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "head_dim", a->head_dim, KV_MAX_HEAD_DIM)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "batch", a->batch, KV_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "heads", a->heads, KV_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "kv_heads", a->kv_heads, KV_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "seqlen_q", a->seqlen_q, KV_MAX_SEQLEN)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "seqlen_k", a->seqlen_k, KV_MAX_SEQLEN)) != TC_OK)
        return st;
    if (a->heads % a->kv_heads)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kv_heads (%lld) does not divide heads (%lld)", entry,
                       (long long)a->kv_heads, (long long)a->heads);
    if (a->batch * a->kv_heads > KV_MAX_PROGRAMS_Y)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: batch * kv_heads (%lld) must be at most %d", entry,
                       (long long)(a->batch * a->kv_heads), KV_MAX_PROGRAMS_Y);
    /* the rows of one (sequence, KV head) are indexed in i32 */
    if (a->seqlen_q * (a->heads / a->kv_heads) > KV_MAX_SEQLEN)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: seqlen_q * heads / kv_heads (%lld) must be at most %d", entry,
                       (long long)(a->seqlen_q * (a->heads / a->kv_heads)), KV_MAX_SEQLEN);
    if (a->num_splits < 0 || a->num_splits > KV_MAX_SPLITS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: num_splits (%d) must be in 0..%d", entry, a->num_splits,
                       KV_MAX_SPLITS);
    if ((st = rt_stdlib_check_finite(entry, "scale", a->scale, false)) != TC_OK ||
        (st = kv_check_cache_type(entry, "kv_dtype", a->dtype, kv_type(a), a->k_scale, a->v_scale)) != TC_OK)
        return st;
    if (a->block_table) {
        if ((st = rt_stdlib_check_count(entry, "page_size", a->page_size, KV_MAX_PAGE)) != TC_OK ||
            (st = rt_stdlib_check_count(entry, "num_pages", a->num_pages, INT32_MAX)) != TC_OK)
            return st;
        int64_t pages = rt_stdlib_cdiv(a->seqlen_k, a->page_size);
        if (a->stride_bt < pages)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: stride_bt (%lld) is smaller than the pages of seqlen_k keys (%lld of %lld tokens)",
                           entry, (long long)a->stride_bt, (long long)pages, (long long)a->page_size);
        if (a->stride_bt > RT_STDLIB_MAX_OFFSET / a->batch)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: stride_bt (%lld) overflows a 64-bit offset", entry,
                           (long long)a->stride_bt);
    }
    return TC_OK;
}

/* One [n0, n1, n2, head_dim] tensor's strides (its dim stride is 1). */
static tc_status kv_check_tensor(const char *entry, const char *what, const char *const names[3], int64_t n0,
                                 int64_t n1, int64_t n2, int64_t head_dim, const int64_t strides[3]) {
    const RtStdlibDim dims[] = {
        {names[0], n0, strides[0]}, {names[1], n1, strides[1]}, {names[2], n2, strides[2]}, {NULL, head_dim, 1}};
    return rt_stdlib_check_strides(entry, what, dims, 4);
}

static tc_status kv_check(const char *entry, const tc_attention_kvcache_args *a) {
    tc_status st = kv_check_sizes(entry, a);
    if (st != TC_OK)
        return st;
    bool varlen = a->cu_seqlens_q != 0, paged = a->block_table != 0;
    int64_t nb = varlen ? 1 : a->batch, rq = varlen ? a->seqlen_q * a->batch : a->seqlen_q;
    const int64_t qs[3] = {a->stride_qb, a->stride_qh, a->stride_qm}, os[3] = {a->stride_ob, a->stride_oh, a->stride_om},
                  ks[3] = {a->stride_kb, a->stride_kh, a->stride_kn}, vs[3] = {a->stride_vb, a->stride_vh, a->stride_vn};
    int64_t n_blocks = paged ? a->num_pages : a->batch, per_block = paged ? a->page_size : a->seqlen_k;
    if ((st = kv_check_tensor(entry, "q", qn, nb, a->heads, rq, a->head_dim, qs)) != TC_OK ||
        (st = kv_check_tensor(entry, "o", on, nb, a->heads, rq, a->head_dim, os)) != TC_OK ||
        (st = kv_check_tensor(entry, "k_cache", kn, n_blocks, a->kv_heads, per_block, a->head_dim, ks)) != TC_OK ||
        (st = kv_check_tensor(entry, "v_cache", vn, n_blocks, a->kv_heads, per_block, a->head_dim, vs)) != TC_OK)
        return st;
    if (!rt_attention_distinct(nb, a->heads, varlen ? a->seqlen_q : rq, a->head_dim, os))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: o's strides (stride_ob %lld, stride_oh %lld, stride_om %lld) give two of its elements the "
                       "same address",
                       entry, (long long)a->stride_ob, (long long)a->stride_oh, (long long)a->stride_om);
    return TC_OK;
}

static tc_status kv_check_ptrs(const char *entry, const tc_attention_kvcache_args *a) {
    size_t eb = rt_dtype_size(a->dtype), ceb = rt_dtype_size(kv_type(a));
    tc_status st;
    if ((st = rt_stdlib_check_ptr(entry, "q", a->q, eb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "o", a->o, eb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "k_cache", a->k_cache, ceb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "v_cache", a->v_cache, ceb)) != TC_OK)
        return st;
    if ((a->lse && (st = rt_stdlib_check_ptr(entry, "lse", a->lse, 4)) != TC_OK) ||
        (a->block_table && (st = rt_stdlib_check_ptr(entry, "block_table", a->block_table, 4)) != TC_OK) ||
        (a->seqused_k && (st = rt_stdlib_check_ptr(entry, "seqused_k", a->seqused_k, 4)) != TC_OK) ||
        (a->cu_seqlens_q && (st = rt_stdlib_check_ptr(entry, "cu_seqlens_q", a->cu_seqlens_q, 4)) != TC_OK) ||
        (a->workspace && (st = rt_stdlib_check_ptr(entry, "workspace", a->workspace, 16)) != TC_OK))
        return st;
    return kv_check_scale_ptrs(entry, a->k_scale, a->v_scale);
}

/* ---- the plan ---- */

/* The number of splits for P programs a split over `blocks` key blocks
 * when `slots` programs run at once (see the essay): the fewest key blocks
 * along the critical path, each program costing KV_PROGRAM_BLOCKS more. */
static int kv_splits(int64_t programs, int64_t blocks, int64_t slots) {
    if (programs >= slots)
        return 1; /* the batch fills the GPU: splits would only shave its last wave's tail */
    int best = 1;
    int64_t best_cost = INT64_MAX;
    for (int s = 1; s <= KV_MAX_SPLITS && s <= blocks; s++) {
        int64_t waves = rt_stdlib_cdiv(programs * s, slots);
        int64_t cost = waves * (rt_stdlib_cdiv(blocks, s) + KV_PROGRAM_BLOCKS);
        if (cost < best_cost) {
            best_cost = cost;
            best = s;
        }
    }
    return best;
}

/* Can the kernel's paged loads move as TMA boxes on sm_90a (the pipeline's
 * gathered rows, passes/tma_access.c)? Pages of whole swizzle atoms (8
 * tokens) and strides of 16 bytes: what the proof needs besides the
 * pointers' alignment, which the plan does not look at. */
static bool kv_tma_pages(const tc_attention_kvcache_args *a) {
    const int64_t s[6] = {a->stride_kb, a->stride_kh, a->stride_kn, a->stride_vb, a->stride_vh, a->stride_vn};
    if (!a->block_table || a->page_size % 8)
        return false;
    for (int i = 0; i < 6; i++)
        if (s[i] % 8)
            return false;
    return true;
}

static void kv_plan_one(const tc_attention_kvcache_args *a, int sms, const char *arch, bool workspace_given,
                        tc_attention_kvcache_plan *p) {
    memset(p, 0, sizeof *p);
    bool wgmma = rt_stdlib_wgmma(arch);
    bool varlen = a->cu_seqlens_q != 0, paged = a->block_table != 0, narrow = kv_type(a) != a->dtype;
    int group = (int)(a->heads / a->kv_heads);
    int64_t rows = a->seqlen_q * group;
    tc_attention_plan *t = &p->attention;
    t->file = "attention_kvcache.tile";
    t->kernel = "attention_kvcache";
    t->head_dim = (int)a->head_dim;
    t->block_d = rt_stdlib_pow2_clamped(a->head_dim, 16, KV_MAX_HEAD_DIM);
    bool wide = t->block_d > 128;
    bool decode = rows <= KV_DECODE_ROWS;
    if (wgmma && decode) {
        /* one warpgroup on 64 rows; the rate of reading the cache is what
         * counts (bench/decode.py, bench/RESULTS.md): a contiguous cache
         * in 128-key TMA tiles, 3 stages (one program of 144 KB per SM); a
         * paged one in 64-key tiles, 4 stages, two programs per SM, so
         * that one's wait for its block table entries hides under the
         * other's copies (of the copy rate on an H200, with a TMA box per
         * page: 0.945 against 0.647 with the contiguous plan; with cp.async
         * gathers before, 0.82 against 0.65); head dim 256 in
         * 64-key tiles (32 paged), 3
         * stages, within the registers of its [64, 256] accumulator */
        t->block_m = 64;
        t->num_warps = 4;
        bool gathers = paged || narrow; /* fp8 tiles are copied with cp.async (stage-shared's narrow operands) */
        t->block_n = wide ? (gathers ? 32 : 64) : gathers ? 64 : 128;
        t->num_stages = gathers && !wide ? 4 : 3;
    } else if (wgmma) {
        /* prefill chunks: two warpgroups on 128 rows. A contiguous cache
         * up to head dim 128 takes a producer warpgroup for its TMA copies,
         * as attention_fwd's plan does (bench/prefill.py on an H200: 0.96-
         * 1.01x tc_attention_fwd against 0.84-0.88x without), and so do
         * pages that are TMA boxes; other pages' rows are gathered with
         * cp.async, which a producer does not take */
        t->block_m = 128;
        t->num_warps = 8;
        t->block_n = wide ? 64 : 128;
        t->num_stages = 3;
        t->warp_specialize = (!paged || kv_tma_pages(a)) && !wide && !narrow;
    } else {
        /* mma.sync: 16 rows per warp, 32-key blocks (64 spill with the
         * causal, split, paged variant) */
        t->block_m = 64;
        t->num_warps = 4;
        t->block_n = 32;
        t->num_stages = 3;
    }
    t->causal = a->causal != 0;
    t->varlen = varlen;
    int64_t row_blocks = rt_stdlib_cdiv(rows, t->block_m);
    int64_t key_blocks = rt_stdlib_cdiv(a->seqlen_k, t->block_n);
    /* programs resident on an SM at once: its shared memory over theirs
     * (the rings of K and V, num_stages - 1 stages, and Q's tile) */
    int64_t smem = (int64_t)(t->num_stages - 1) * t->block_n * t->block_d * 4 + (int64_t)t->block_m * t->block_d * 2;
    int64_t per_sm = (strcmp(arch, "sm_80") == 0 ? KV_SM_SHARED_SM80 : KV_SM_SHARED) / (smem + KV_PROGRAM_SHARED);
    int64_t slots = (int64_t)(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    int splits = a->num_splits;
    if (splits == 0)
        splits = workspace_given ? kv_splits(row_blocks * a->batch * a->kv_heads, key_blocks, slots) : 1;
    if (splits > key_blocks)
        splits = (int)key_blocks;
    p->num_splits = splits;
    p->split_keys = rt_stdlib_cdiv(key_blocks, splits) * t->block_n;
    p->group = group;
    t->grid = (tc_dim3){(unsigned)row_blocks, (unsigned)(a->batch * a->kv_heads), (unsigned)splits};
    rt_attention_cx(t, "T", TC_CONSTEXPR_DTYPE, (int64_t)a->dtype);
    rt_attention_cx(t, "HEAD_DIM", TC_CONSTEXPR_INT, t->head_dim);
    rt_attention_cx(t, "D", TC_CONSTEXPR_INT, t->block_d);
    rt_attention_cx(t, "BM", TC_CONSTEXPR_INT, t->block_m);
    rt_attention_cx(t, "BN", TC_CONSTEXPR_INT, t->block_n);
    rt_attention_cx(t, "CAUSAL", TC_CONSTEXPR_BOOL, t->causal);
    rt_attention_cx(t, "VARLEN_Q", TC_CONSTEXPR_BOOL, varlen);
    rt_attention_cx(t, "SEQUSED", TC_CONSTEXPR_BOOL, a->seqused_k != 0);
    rt_attention_cx(t, "PAGED", TC_CONSTEXPR_BOOL, paged);
    rt_attention_cx(t, "PAGE", TC_CONSTEXPR_INT, paged ? a->page_size : 1);
    rt_attention_cx(t, "SPLIT", TC_CONSTEXPR_BOOL, splits > 1);
    rt_attention_cx(t, "HAS_LSE", TC_CONSTEXPR_BOOL, a->lse != 0);
    rt_attention_cx(t, "NEG_SCALE", TC_CONSTEXPR_BOOL, a->scale < 0);
    rt_attention_cx(t, "KT", TC_CONSTEXPR_DTYPE, (int64_t)kv_type(a));
    rt_attention_cx(t, "SCALED", TC_CONSTEXPR_BOOL, a->k_scale != 0);
    if (splits <= 1)
        return;

    size_t part_rows = (size_t)splits * (size_t)a->batch * (size_t)a->seqlen_q * (size_t)a->heads;
    p->lse_part_offset = 0;
    p->o_part_offset = kv_align(part_rows * 4);
    p->workspace_bytes = p->o_part_offset + kv_align(part_rows * (size_t)t->block_d * 4);
    tc_attention_plan *c = &p->combine;
    c->file = "attention_kvcache.tile";
    c->kernel = "attention_kvcache_combine";
    c->head_dim = t->head_dim;
    c->block_d = t->block_d;
    c->block_m = KV_COMBINE_ROWS;
    c->num_warps = 4;
    c->num_stages = 1;
    c->varlen = varlen;
    int64_t total = a->batch * a->seqlen_q * a->heads;
    c->grid = (tc_dim3){(unsigned)rt_stdlib_cdiv(total, KV_COMBINE_ROWS), 1, 1};
    rt_attention_cx(c, "T", TC_CONSTEXPR_DTYPE, (int64_t)a->dtype);
    rt_attention_cx(c, "HEAD_DIM", TC_CONSTEXPR_INT, c->head_dim);
    rt_attention_cx(c, "D", TC_CONSTEXPR_INT, c->block_d);
    rt_attention_cx(c, "BR", TC_CONSTEXPR_INT, KV_COMBINE_ROWS);
    rt_attention_cx(c, "SPLITS", TC_CONSTEXPR_INT, rt_stdlib_pow2_clamped(splits, 2, KV_MAX_SPLITS));
    rt_attention_cx(c, "VARLEN_Q", TC_CONSTEXPR_BOOL, varlen);
    rt_attention_cx(c, "HAS_LSE", TC_CONSTEXPR_BOOL, a->lse != 0);
}

/* The contiguous cache a gathered plan's copy makes of a's paged one:
 * [batch, seqlen_k, kv_heads, hs] K and V at k and v (the workspace's). */
static void kv_gathered_args(const tc_attention_kvcache_args *a, int64_t hs, CUdeviceptr k, CUdeviceptr v,
                             tc_attention_kvcache_args *g) {
    *g = *a;
    int64_t row = a->kv_heads * hs;
    g->block_table = 0;
    g->stride_bt = g->page_size = g->num_pages = 0;
    g->k_cache = k;
    g->v_cache = v;
    g->stride_kb = g->stride_vb = a->seqlen_k * row;
    g->stride_kn = g->stride_vn = row;
    g->stride_kh = g->stride_vh = hs;
}

/* The plan (see the essay): prefill chunks against a paged cache on wgmma
 * up to head dim 128, with a workspace, read a contiguous copy of it (one
 * more pass over the keys and values, against the gathers that keep the
 * attention kernel from TMA and a producer warpgroup: bench/prefill.py);
 * everything else reads the cache as it is. */
static void kv_plan(const tc_attention_kvcache_args *a, int sms, const char *arch, bool workspace_given,
                    tc_attention_kvcache_plan *p) {
    int64_t rows = a->seqlen_q * (a->heads / a->kv_heads);
    bool gather = a->block_table != 0 && workspace_given && rt_stdlib_wgmma(arch) && rows > KV_DECODE_ROWS &&
                  a->head_dim <= 128 && (a->seqlen_q >= KV_GATHER_MIN_CHUNK || !kv_tma_pages(a)) && kv_type(a) == a->dtype;
    if (!gather) {
        kv_plan_one(a, sms, arch, workspace_given, p);
        return;
    }
    int64_t hs = (a->head_dim + 7) / 8 * 8;
    tc_attention_kvcache_args g; /* the plan looks at sizes and which pointers are given, not at addresses */
    kv_gathered_args(a, hs, a->workspace, a->workspace, &g);
    kv_plan_one(&g, sms, arch, workspace_given, p);
    p->gathered = 1;
    p->kv_head_stride = hs;
    size_t bytes = (size_t)a->batch * (size_t)a->seqlen_k * (size_t)a->kv_heads * (size_t)p->kv_head_stride *
                   rt_dtype_size(a->dtype);
    p->k_offset = kv_align(p->workspace_bytes);
    p->v_offset = p->k_offset + kv_align(bytes);
    p->workspace_bytes = p->v_offset + kv_align(bytes);
    tc_attention_plan *t = &p->gather;
    t->file = "attention_kvcache.tile";
    t->kernel = "kvcache_gather";
    t->head_dim = (int)a->head_dim;
    t->block_d = rt_stdlib_pow2_clamped(a->head_dim, 16, KV_MAX_HEAD_DIM);
    t->block_m = KV_GATHER_TOKENS;
    t->num_warps = 4;
    t->num_stages = 1;
    t->grid = (tc_dim3){(unsigned)rt_stdlib_cdiv(a->seqlen_k, KV_GATHER_TOKENS), (unsigned)(a->batch * a->kv_heads), 1};
    rt_attention_cx(t, "T", TC_CONSTEXPR_DTYPE, (int64_t)a->dtype);
    rt_attention_cx(t, "HEAD_DIM", TC_CONSTEXPR_INT, t->head_dim);
    rt_attention_cx(t, "D", TC_CONSTEXPR_INT, t->block_d);
    rt_attention_cx(t, "PAGE", TC_CONSTEXPR_INT, a->page_size);
    rt_attention_cx(t, "BT", TC_CONSTEXPR_INT, KV_GATHER_TOKENS);
    rt_attention_cx(t, "SEQUSED", TC_CONSTEXPR_BOOL, a->seqused_k != 0);
}

tc_status tc_attention_kvcache_plan_for(const tc_attention_kvcache_args *args, int multiprocessors,
                                        tc_attention_kvcache_plan *out) {
    const char *entry = "tc_attention_kvcache_plan_for";
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "out", out)) != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    if ((st = rt_stdlib_check_given(entry, "args", args)) != TC_OK || (st = kv_check(entry, args)) != TC_OK)
        return st;
    if (multiprocessors < 1)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: multiprocessors (%d) must be at least 1", entry,
                       multiprocessors);
    kv_plan(args, multiprocessors, TC_DEFAULT_ARCH, true, out);
    return TC_OK;
}

tc_status tc_attention_kvcache_workspace_size(tc_context *ctx, const tc_attention_kvcache_args *args, size_t *bytes) {
    const char *entry = "tc_attention_kvcache_workspace_size";
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "bytes", bytes)) != TC_OK)
        return st;
    *bytes = 0;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_given(entry, "args", args)) != TC_OK || (st = kv_check(entry, args)) != TC_OK)
        return st;
    tc_attention_kvcache_plan plan;
    bool hooked = rt_attention_launch_hook != NULL;
    kv_plan(args, rt_stdlib_sms(ctx, hooked), rt_stdlib_target(ctx, hooked), true, &plan);
    *bytes = plan.workspace_bytes;
    return TC_OK;
}

/* ---- the launches ---- */

static void kv_arg_strides(const RtStdlibArgs *args, const char *const names[3], const int64_t s[3], int64_t vector) {
    for (int i = 0; i < 3; i++)
        rt_stdlib_arg_int(args, names[i], s[i], false, vector);
}

static tc_status kv_launch_attention(const char *entry, RtAttentionLaunch *l, tc_context *ctx, CUstream stream,
                                     const tc_attention_kvcache_args *a, const tc_attention_kvcache_plan *p) {
    bool split = p->num_splits > 1;
    CUdeviceptr any = a->q; /* stands in for absent pointers: never read */
    CUdeviceptr lse_part = split ? a->workspace + p->lse_part_offset : any;
    CUdeviceptr o_part = split ? a->workspace + p->o_part_offset : any;
    int64_t vector = 16 / (int64_t)rt_dtype_size(a->dtype);
    rt_attention_begin(l, ctx, stream, &p->attention);
    RtStdlibArgs args = rt_attention_args(l);
    rt_stdlib_arg_ptr(&args, "O", a->o, true);
    rt_stdlib_arg_ptr(&args, "LSE", a->lse ? a->lse : any, false);
    rt_stdlib_arg_ptr(&args, "O_PART", o_part, split);
    rt_stdlib_arg_ptr(&args, "LSE_PART", lse_part, false);
    rt_stdlib_arg_ptr(&args, "Q", a->q, true);
    rt_stdlib_arg_ptr(&args, "K", a->k_cache, true);
    rt_stdlib_arg_ptr(&args, "V", a->v_cache, true);
    rt_stdlib_arg_ptr(&args, "block_table", a->block_table ? a->block_table : any, false);
    rt_stdlib_arg_ptr(&args, "seqused_k", a->seqused_k ? a->seqused_k : any, false);
    rt_stdlib_arg_ptr(&args, "cu_seqlens_q", a->cu_seqlens_q ? a->cu_seqlens_q : any, false);
    rt_stdlib_arg_ptr(&args, "k_scale", a->k_scale ? a->k_scale : any, false);
    rt_stdlib_arg_ptr(&args, "v_scale", a->v_scale ? a->v_scale : any, false);
    rt_stdlib_arg_int(&args, "batch", a->batch, true, 0);
    rt_stdlib_arg_int(&args, "heads", a->heads, true, 0);
    rt_stdlib_arg_int(&args, "kv_heads", a->kv_heads, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_q", a->seqlen_q, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_k", a->seqlen_k, true, 0);
    rt_stdlib_arg_int(&args, "split_keys", p->split_keys, true, p->attention.block_n);
    const int64_t qs[3] = {a->stride_qb, a->stride_qh, a->stride_qm}, ks[3] = {a->stride_kb, a->stride_kh, a->stride_kn},
                  vs[3] = {a->stride_vb, a->stride_vh, a->stride_vn}, os[3] = {a->stride_ob, a->stride_oh, a->stride_om};
    int64_t kv_vector = 16 / (int64_t)rt_dtype_size(kv_type(a));
    kv_arg_strides(&args, qn, qs, vector);
    kv_arg_strides(&args, kn, ks, kv_vector);
    kv_arg_strides(&args, vn, vs, kv_vector);
    kv_arg_strides(&args, on, os, vector);
    rt_stdlib_arg_int(&args, "stride_bt", a->block_table ? a->stride_bt : 0, false, 0);
    rt_attention_arg_f32(l, "scale", a->scale);
    return rt_attention_launch(entry, l);
}

/* The gather kernel: a's paged cache into g's contiguous one. */
static tc_status kv_launch_gather(const char *entry, RtAttentionLaunch *l, tc_context *ctx, CUstream stream,
                                  const tc_attention_kvcache_args *a, const tc_attention_kvcache_args *g,
                                  const tc_attention_kvcache_plan *p) {
    int64_t vector = 16 / (int64_t)rt_dtype_size(a->dtype);
    rt_attention_begin(l, ctx, stream, &p->gather);
    RtStdlibArgs args = rt_attention_args(l);
    rt_stdlib_arg_ptr(&args, "K_OUT", g->k_cache, true);
    rt_stdlib_arg_ptr(&args, "V_OUT", g->v_cache, true);
    rt_stdlib_arg_ptr(&args, "K", a->k_cache, true);
    rt_stdlib_arg_ptr(&args, "V", a->v_cache, true);
    rt_stdlib_arg_ptr(&args, "block_table", a->block_table, false);
    rt_stdlib_arg_ptr(&args, "seqused_k", a->seqused_k ? a->seqused_k : a->block_table, false);
    rt_stdlib_arg_int(&args, "kv_heads", a->kv_heads, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_k", a->seqlen_k, true, 0);
    rt_stdlib_arg_int(&args, "stride_bt", a->stride_bt, false, 0);
    const int64_t ks[3] = {a->stride_kb, a->stride_kh, a->stride_kn}, vs[3] = {a->stride_vb, a->stride_vh, a->stride_vn},
                  os[3] = {g->stride_kb, g->stride_kh, g->stride_kn};
    static const char *const copy_n[3] = {"stride_ob", "stride_oh", "stride_on"};
    kv_arg_strides(&args, kn, ks, vector);
    kv_arg_strides(&args, vn, vs, vector);
    kv_arg_strides(&args, copy_n, os, vector);
    return rt_attention_launch(entry, l);
}

static tc_status kv_launch_combine(const char *entry, RtAttentionLaunch *l, tc_context *ctx, CUstream stream,
                                   const tc_attention_kvcache_args *a, const tc_attention_kvcache_plan *p) {
    CUdeviceptr any = a->q;
    int64_t vector = 16 / (int64_t)rt_dtype_size(a->dtype);
    rt_attention_begin(l, ctx, stream, &p->combine);
    RtStdlibArgs args = rt_attention_args(l);
    rt_stdlib_arg_ptr(&args, "O", a->o, true);
    rt_stdlib_arg_ptr(&args, "LSE", a->lse ? a->lse : any, false);
    rt_stdlib_arg_ptr(&args, "O_PART", a->workspace + p->o_part_offset, true);
    rt_stdlib_arg_ptr(&args, "LSE_PART", a->workspace + p->lse_part_offset, false);
    rt_stdlib_arg_ptr(&args, "cu_seqlens_q", a->cu_seqlens_q ? a->cu_seqlens_q : any, false);
    rt_stdlib_arg_int(&args, "batch", a->batch, true, 0);
    rt_stdlib_arg_int(&args, "heads", a->heads, true, 0);
    rt_stdlib_arg_int(&args, "seqlen_q", a->seqlen_q, true, 0);
    rt_stdlib_arg_int(&args, "num_splits", p->num_splits, true, 0);
    const int64_t os[3] = {a->stride_ob, a->stride_oh, a->stride_om};
    kv_arg_strides(&args, on, os, vector);
    return rt_attention_launch(entry, l);
}

tc_status tc_attention_kvcache(tc_context *ctx, CUstream stream, const tc_attention_kvcache_args *args) {
    const char *entry = "tc_attention_kvcache";
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_given(entry, "args", args)) != TC_OK || (st = kv_check(entry, args)) != TC_OK ||
        (st = kv_check_ptrs(entry, args)) != TC_OK)
        return st;
    bool hooked = rt_attention_launch_hook != NULL;
    tc_attention_kvcache_plan plan;
    kv_plan(args, rt_stdlib_sms(ctx, hooked), rt_stdlib_target(ctx, hooked), args->workspace != 0, &plan);
    if (plan.workspace_bytes > args->workspace_bytes)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: workspace_bytes (%zu) is less than the %zu bytes of %d splits%s "
                       "(tc_attention_kvcache_workspace_size)",
                       entry, args->workspace_bytes, plan.workspace_bytes, plan.num_splits,
                       plan.gathered ? " and the gathered keys and values" : "");
    if (plan.num_splits > 1 && !args->workspace)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: workspace is 0, and num_splits (%d) needs one", entry,
                       args->num_splits);
    RtAttentionLaunch *l = malloc(sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    tc_attention_kvcache_args gathered;
    const tc_attention_kvcache_args *a = args;
    st = TC_OK;
    if (plan.gathered) {
        kv_gathered_args(args, plan.kv_head_stride, args->workspace + plan.k_offset, args->workspace + plan.v_offset,
                         &gathered);
        st = kv_launch_gather(entry, l, ctx, stream, args, &gathered, &plan);
        a = &gathered;
    }
    if (st == TC_OK)
        st = kv_launch_attention(entry, l, ctx, stream, a, &plan);
    if (st == TC_OK && plan.num_splits > 1)
        st = kv_launch_combine(entry, l, ctx, stream, a, &plan);
    free(l);
    return st;
}

/* ---- tc_kvcache_append ---- */

/* tc_kvcache_append, and with rope (tc_kvcache_append_rope) q rotated in
 * place by tc_rope's kernel and k on its way to the cache. */
/* The cache an append writes: its type and the KV heads' scales (0: none). */
typedef struct KvCacheType {
    tc_dtype dtype;
    CUdeviceptr k_scale, v_scale;
} KvCacheType;

static tc_status kv_append(const char *entry, tc_context *ctx, CUstream stream, tc_dtype dtype, KvCacheType ct,
                           CUdeviceptr k_cache,
                           CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping, int64_t tokens,
                           int64_t kv_heads, int64_t head_dim, int64_t page_size, int64_t num_pages, int64_t stride_kt,
                           int64_t stride_kh, int64_t stride_vt, int64_t stride_vh, int64_t stride_kcp,
                           int64_t stride_kcn, int64_t stride_kch, int64_t stride_vcp, int64_t stride_vcn,
                           int64_t stride_vch, const tc_rope_args *rope) {
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_dtype(entry, dtype, false)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "tokens", tokens, INT32_MAX)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "kv_heads", kv_heads, KV_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "head_dim", head_dim, KV_MAX_HEAD_DIM)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "page_size", page_size, INT32_MAX)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "num_pages", num_pages, INT32_MAX)) != TC_OK)
        return st;
    const RtStdlibDim kd[] = {{"stride_kt", tokens, stride_kt}, {"stride_kh", kv_heads, stride_kh}, {NULL, head_dim, 1}};
    const RtStdlibDim vd[] = {{"stride_vt", tokens, stride_vt}, {"stride_vh", kv_heads, stride_vh}, {NULL, head_dim, 1}};
    const RtStdlibDim kcd[] = {{"stride_kcp", num_pages, stride_kcp},
                               {"stride_kcn", page_size, stride_kcn},
                               {"stride_kch", kv_heads, stride_kch},
                               {NULL, head_dim, 1}};
    const RtStdlibDim vcd[] = {{"stride_vcp", num_pages, stride_vcp},
                               {"stride_vcn", page_size, stride_vcn},
                               {"stride_vch", kv_heads, stride_vch},
                               {NULL, head_dim, 1}};
    size_t eb = rt_dtype_size(dtype), ceb = rt_dtype_size(ct.dtype);
    if ((st = kv_check_cache_type(entry, "cache_dtype", dtype, ct.dtype, ct.k_scale, ct.v_scale)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "k", kd, 3)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "v", vd, 3)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "k_cache", kcd, 4)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "v_cache", vcd, 4)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "k_cache", k_cache, ceb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "v_cache", v_cache, ceb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "k", k, eb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "v", v, eb)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "slot_mapping", slot_mapping, 8)) != TC_OK ||
        (st = kv_check_scale_ptrs(entry, ct.k_scale, ct.v_scale)) != TC_OK)
        return st;
    if (page_size > INT64_MAX / num_pages)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: page_size * num_pages overflows", entry);
    int64_t rot_half = 0;
    if (rope) {
        if ((st = rt_rope_check(entry, ctx, rope)) != TC_OK)
            return st;
        if (rope->dtype != dtype || rope->tokens != tokens || rope->head_dim != head_dim)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: rope's dtype, tokens and head_dim (%d, %lld, %lld) must be the append's (%d, %lld, %lld)",
                           entry, (int)rope->dtype, (long long)rope->tokens, (long long)rope->head_dim, (int)dtype,
                           (long long)tokens, (long long)head_dim);
        if (rope->k || rope->k_heads || rope->backward)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: rope's k and k_heads must be 0 (k is the append's) and backward 0", entry);
        if (rope->q_heads % kv_heads)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kv_heads (%lld) does not divide rope's q_heads (%lld)",
                           entry, (long long)kv_heads, (long long)rope->q_heads);
        rot_half = (rope->rotary_dim ? rope->rotary_dim : head_dim) / 2;
        /* q first, in place, by tc_rope's kernel (q alone) */
        if ((st = rt_rope_launch(entry, ctx, stream, rope)) != TC_OK)
            return st;
    }

    tc_attention_plan p;
    memset(&p, 0, sizeof p);
    p.file = "attention_kvcache.tile";
    p.kernel = "kvcache_append";
    p.head_dim = (int)head_dim;
    p.block_d = rt_stdlib_pow2_clamped(head_dim, 16, KV_MAX_HEAD_DIM);
    p.block_m = KV_APPEND_TOKENS;
    p.num_warps = 4;
    p.num_stages = 1;
    p.grid = (tc_dim3){(unsigned)rt_stdlib_cdiv(tokens, KV_APPEND_TOKENS), (unsigned)kv_heads, 1};
    rt_attention_cx(&p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    rt_attention_cx(&p, "HEAD_DIM", TC_CONSTEXPR_INT, p.head_dim);
    rt_attention_cx(&p, "D", TC_CONSTEXPR_INT, p.block_d);
    rt_attention_cx(&p, "BT", TC_CONSTEXPR_INT, KV_APPEND_TOKENS);
    rt_attention_cx(&p, "ROPE", TC_CONSTEXPR_BOOL, rope != NULL);
    rt_attention_cx(&p, "HALF", TC_CONSTEXPR_INT, rope ? rt_stdlib_pow2_clamped(rot_half, 16, KV_MAX_HEAD_DIM) : 16);
    rt_attention_cx(&p, "INTERLEAVED", TC_CONSTEXPR_BOOL, rope && rope->interleaved);
    rt_attention_cx(&p, "HAS_POSITIONS", TC_CONSTEXPR_BOOL, rope && rope->positions);
    rt_attention_cx(&p, "HAS_CACHE", TC_CONSTEXPR_BOOL, rope && rope->cos);
    rt_attention_cx(&p, "CT", TC_CONSTEXPR_DTYPE, (int64_t)ct.dtype);
    rt_attention_cx(&p, "SCALED", TC_CONSTEXPR_BOOL, ct.k_scale != 0);

    RtAttentionLaunch *l = malloc(sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    int64_t vector = 16 / (int64_t)eb;
    rt_attention_begin(l, ctx, stream, &p);
    RtStdlibArgs args = rt_attention_args(l);
    rt_stdlib_arg_ptr(&args, "K_CACHE", k_cache, true);
    rt_stdlib_arg_ptr(&args, "V_CACHE", v_cache, true);
    rt_stdlib_arg_ptr(&args, "K", k, true);
    rt_stdlib_arg_ptr(&args, "V", v, true);
    rt_stdlib_arg_ptr(&args, "slot_mapping", slot_mapping, false);
    rt_stdlib_arg_ptr(&args, "k_scale", ct.k_scale ? ct.k_scale : slot_mapping, false);
    rt_stdlib_arg_ptr(&args, "v_scale", ct.v_scale ? ct.v_scale : slot_mapping, false);
    rt_stdlib_arg_int(&args, "tokens", tokens, true, 0);
    rt_stdlib_arg_int(&args, "page_size", page_size, false, 0);
    rt_stdlib_arg_int(&args, "slots", page_size * num_pages, false, 0);
    const char *names[10] = {"stride_kt",  "stride_kh",  "stride_vt",  "stride_vh",  "stride_kcp",
                             "stride_kcn", "stride_kch", "stride_vcp", "stride_vcn", "stride_vch"};
    const int64_t strides[10] = {stride_kt,  stride_kh,  stride_vt,  stride_vh,  stride_kcp,
                                 stride_kcn, stride_kch, stride_vcp, stride_vcn, stride_vch};
    for (int i = 0; i < 10; i++) /* the new tokens' strides, then the caches' (in their elements) */
        rt_stdlib_arg_int(&args, names[i], strides[i], false, i < 4 ? vector : 16 / (int64_t)ceb);
    rt_stdlib_arg_ptr(&args, "positions", rope && rope->positions ? rope->positions : slot_mapping, false);
    rt_stdlib_arg_ptr(&args, "cos_cache", rope && rope->cos ? rope->cos : slot_mapping, false);
    rt_stdlib_arg_ptr(&args, "sin_cache", rope && rope->sin ? rope->sin : slot_mapping, false);
    rt_stdlib_arg_int(&args, "stride_cs", rope && rope->cos ? rope->stride_cs : 0, false, 0);
    rt_stdlib_arg_int(&args, "rot_half", rot_half, true, 0);
    rt_stdlib_arg_int(&args, "seqlen", rope && !rope->positions ? rope->seqlen : 1, true, 0);
    rt_stdlib_arg_int(&args, "pos_offset", rope && !rope->positions ? rope->position_offset : 0, true, 0);
    rt_stdlib_arg_int(&args, "max_pos", rope && rope->cos ? rope->max_position : 1, true, 0);
    rt_attention_arg_f32(l, "log2_step", rope ? rt_rope_log2_step(rope, rot_half) : 0.0f);
    st = rt_attention_launch(entry, l);
    free(l);
    return st;
}

tc_status tc_kvcache_append(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr k_cache, CUdeviceptr v_cache,
                            CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping, int64_t tokens, int64_t kv_heads,
                            int64_t head_dim, int64_t page_size, int64_t num_pages, int64_t stride_kt,
                            int64_t stride_kh, int64_t stride_vt, int64_t stride_vh, int64_t stride_kcp,
                            int64_t stride_kcn, int64_t stride_kch, int64_t stride_vcp, int64_t stride_vcn,
                            int64_t stride_vch) {
    return kv_append("tc_kvcache_append", ctx, stream, dtype, (KvCacheType){dtype, 0, 0}, k_cache, v_cache, k, v,
                     slot_mapping, tokens, kv_heads, head_dim, page_size, num_pages, stride_kt, stride_kh, stride_vt,
                     stride_vh, stride_kcp, stride_kcn, stride_kch, stride_vcp, stride_vcn, stride_vch, NULL);
}

tc_status tc_kvcache_append_fp8(tc_context *ctx, CUstream stream, tc_dtype dtype, tc_dtype cache_dtype,
                                CUdeviceptr k_scale, CUdeviceptr v_scale, CUdeviceptr k_cache, CUdeviceptr v_cache,
                                CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping, int64_t tokens,
                                int64_t kv_heads, int64_t head_dim, int64_t page_size, int64_t num_pages,
                                int64_t stride_kt, int64_t stride_kh, int64_t stride_vt, int64_t stride_vh,
                                int64_t stride_kcp, int64_t stride_kcn, int64_t stride_kch, int64_t stride_vcp,
                                int64_t stride_vcn, int64_t stride_vch) {
    return kv_append("tc_kvcache_append_fp8", ctx, stream, dtype, (KvCacheType){cache_dtype, k_scale, v_scale},
                     k_cache, v_cache, k, v, slot_mapping, tokens, kv_heads, head_dim, page_size, num_pages, stride_kt,
                     stride_kh, stride_vt, stride_vh, stride_kcp, stride_kcn, stride_kch, stride_vcp, stride_vcn,
                     stride_vch, NULL);
}

tc_status tc_kvcache_append_rope(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr k_cache,
                                 CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping,
                                 int64_t tokens, int64_t kv_heads, int64_t head_dim, int64_t page_size,
                                 int64_t num_pages, int64_t stride_kt, int64_t stride_kh, int64_t stride_vt,
                                 int64_t stride_vh, int64_t stride_kcp, int64_t stride_kcn, int64_t stride_kch,
                                 int64_t stride_vcp, int64_t stride_vcn, int64_t stride_vch, const tc_rope_args *rope) {
    const char *entry = "tc_kvcache_append_rope";
    tc_status st = rt_stdlib_check_given(entry, "rope", rope);
    if (st != TC_OK)
        return st;
    return kv_append(entry, ctx, stream, dtype, (KvCacheType){dtype, 0, 0}, k_cache, v_cache, k, v, slot_mapping, tokens,
                     kv_heads, head_dim,
                     page_size, num_pages, stride_kt, stride_kh, stride_vt, stride_vh, stride_kcp, stride_kcn, stride_kch,
                     stride_vcp, stride_vcn, stride_vch, rope);
}
