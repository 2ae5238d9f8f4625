/*
 * test_stdlib_kvcache.c — tc_attention_kvcache and tc_kvcache_append
 * (stdlib/kvcache.c) without a GPU:
 *
 *  - every invalid argument is TC_ERROR_INVALID_ARGUMENT with a message
 *    naming it, and nothing is launched (a fake context is never touched);
 *    tc_attention_kvcache_plan_for and tc_attention_kvcache_workspace_size
 *    validate as the call does;
 *  - the plans: decode (one program of 64 rows per sequence and KV head,
 *    the group's query heads packed), prefill (128 rows), split-KV on a GPU
 *    that a batch cannot fill, its workspace and the combine kernel, and the
 *    constexprs that follow the arguments (PAGED, PAGE, SEQUSED, HAS_LSE,
 *    NEG_SCALE, ...);
 *  - with rt_attention_launch_hook in place of tc_jit + tc_launch, each of
 *    the three kernels (attention_kvcache, attention_kvcache_combine,
 *    kvcache_append) is launched with its arguments in the order and under
 *    the names of its runtime signature, with the grids of the plan;
 *  - every distinct specialization the entry points pick compiles to PTX for
 *    sm_90a (accepted by ptxas where found), and is memoizable: its request
 *    has a memo key, equal keys exactly where tc_jit's keys are equal.
 */
#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"
#include "stdlib_test_util.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t cx(const tc_attention_plan *p, const char *name) {
    return constexpr_value(p->constexprs, p->num_constexprs, name);
}

/* ---- the arguments the tests start from ---- */

/* [batch 2, 4 new queries, heads 8 (kv 2), dim 64] in the (b, s, h, d)
 * layout, against a contiguous cache [2, capacity 512, 2, 64] holding 300
 * keys per sequence. */
#define O_ 0x100000
#define L_ 0x200000
#define Q_ 0x300000
#define K_ 0x400000
#define V_ 0x500000
#define BT_ 0x600000
#define SU_ 0x700000
#define CU_ 0x800000
#define WS_ 0x900000
#define WS_BYTES ((size_t)1 << 30)

static tc_attention_kvcache_args kv_args(void) {
    tc_attention_kvcache_args a;
    memset(&a, 0, sizeof a);
    a.dtype = TC_DTYPE_F16;
    a.batch = 2, a.heads = 8, a.kv_heads = 2, a.head_dim = 64;
    a.seqlen_q = 4, a.seqlen_k = 300;
    a.q = Q_, a.o = O_, a.lse = L_;
    a.stride_qb = 4 * 8 * 64, a.stride_qh = 64, a.stride_qm = 8 * 64;
    a.stride_ob = 4 * 8 * 64, a.stride_oh = 64, a.stride_om = 8 * 64;
    a.k_cache = K_, a.v_cache = V_;
    a.stride_kb = 512 * 2 * 64, a.stride_kh = 64, a.stride_kn = 2 * 64;
    a.stride_vb = 512 * 2 * 64, a.stride_vh = 64, a.stride_vn = 2 * 64;
    a.scale = 0.125f;
    return a;
}

/* The same against a paged cache: 64 pages of 16 tokens, [64, 16, 2, 64],
 * a block table of 32 pages per sequence. */
static tc_attention_kvcache_args kv_paged(void) {
    tc_attention_kvcache_args a = kv_args();
    a.block_table = BT_;
    a.page_size = 16, a.num_pages = 64, a.stride_bt = 32;
    a.stride_kb = a.stride_vb = 16 * 2 * 64;
    return a;
}

/* A query layout (b, s, h, d) and a contiguous cache [batch, capacity, kv_heads, head_dim] for a's sizes. */
static void kv_dense(tc_attention_kvcache_args *a, int64_t capacity) {
    a->stride_qb = a->stride_ob = a->seqlen_q * a->heads * a->head_dim;
    a->stride_qh = a->stride_oh = a->head_dim;
    a->stride_qm = a->stride_om = a->heads * a->head_dim;
    a->stride_kb = a->stride_vb = capacity * a->kv_heads * a->head_dim;
    a->stride_kh = a->stride_vh = a->head_dim;
    a->stride_kn = a->stride_vn = a->kv_heads * a->head_dim;
}

static tc_status counting_hook(const RtAttentionLaunch *l) {
    (void)l;
    stdlib_hook_calls++;
    return TC_ERROR_UNSUPPORTED; /* a call that got through validation */
}

/* ---- validation ---- */

/* An invalid argument (set by `change` on kv_args() or kv_paged()):
 * rejected by the call with msg, no launch, and by plan_for and
 * workspace_size with the same rule under their own names. */
#define KV_INVALID_FROM(start, change, msg)                                                                            \
    do {                                                                                                               \
        tc_attention_kvcache_args a_ = start();                                                                        \
        (void)(change);                                                                                                \
        CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a_), msg);                                                 \
        CHECK(strncmp(tc_last_error(), "tc_attention_kvcache: ", 22) == 0);                                            \
        tc_attention_kvcache_plan p_;                                                                                  \
        p_.num_splits = 99;                                                                                            \
        CHECK_INVALID(tc_attention_kvcache_plan_for(&a_, 132, &p_), msg);                                              \
        CHECK(strncmp(tc_last_error(), "tc_attention_kvcache_plan_for: ", 31) == 0);                                   \
        CHECK_EQ_INT(p_.num_splits, 0); /* cleared */                                                                  \
        size_t b_ = 7;                                                                                                 \
        CHECK_INVALID(tc_attention_kvcache_workspace_size(FAKE_CTX, &a_, &b_), msg);                                   \
        CHECK(strncmp(tc_last_error(), "tc_attention_kvcache_workspace_size: ", 37) == 0);                             \
        CHECK_EQ_INT(b_, 0);                                                                                           \
    } while (0)
#define KV_INVALID(change, msg) KV_INVALID_FROM(kv_args, change, msg)
#define KV_INVALID_PAGED(change, msg) KV_INVALID_FROM(kv_paged, change, msg)
/* A pointer's rule: only the call looks at the pointers. */
#define KV_INVALID_PTR(change, msg)                                                                                    \
    do {                                                                                                               \
        tc_attention_kvcache_args a_ = kv_args();                                                                      \
        (void)(change);                                                                                                \
        CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a_), msg);                                                 \
        tc_attention_kvcache_plan p_;                                                                                  \
        CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a_, 132, &p_), TC_OK);                                             \
    } while (0)

TEST(test_kvcache_validation) {
    rt_attention_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    /* valid calls reach the launch: contiguous, paged, every optional tensor, splits with a workspace */
    tc_attention_kvcache_args a = kv_args();
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    a = kv_paged();
    a.seqused_k = SU_, a.cu_seqlens_q = CU_, a.causal = 1, a.dtype = TC_DTYPE_BF16, a.scale = -1.0f;
    a.workspace = WS_, a.workspace_bytes = WS_BYTES, a.num_splits = 4;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(stdlib_hook_calls, 2);

    /* the sizes */
    KV_INVALID(a_.dtype = TC_DTYPE_F32, "dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16");
    KV_INVALID(a_.kv_dtype = TC_DTYPE_BF16, "kv_dtype (6) must be dtype, TC_DTYPE_F8E4M3 or TC_DTYPE_F8E5M2");
    KV_INVALID(a_.kv_dtype = TC_DTYPE_I8, "kv_dtype (1) must be dtype, TC_DTYPE_F8E4M3 or TC_DTYPE_F8E5M2");
    KV_INVALID((a_.kv_dtype = TC_DTYPE_F8E4M3, a_.k_scale = a_.q), "k_scale and v_scale must be given together (got k_scale only)");
    KV_INVALID(a_.v_scale = a_.q, "k_scale and v_scale must be given together (got v_scale only)");
    KV_INVALID_PTR((a_.k_scale = a_.q + 2, a_.v_scale = a_.q), "k_scale");
    KV_INVALID(a_.head_dim = 0, "head_dim (0) must be in 1..256");
    KV_INVALID(a_.head_dim = 257, "head_dim (257) must be in 1..256");
    KV_INVALID(a_.batch = 0, "batch (0)");
    KV_INVALID(a_.heads = 0, "heads (0)");
    KV_INVALID(a_.kv_heads = 0, "kv_heads (0)");
    KV_INVALID(a_.kv_heads = 3, "kv_heads (3) does not divide heads (8)");
    KV_INVALID(a_.batch = 40000, "batch * kv_heads (80000) must be at most 65535");
    KV_INVALID(a_.seqlen_q = 0, "seqlen_q (0)");
    KV_INVALID(a_.seqlen_q = ((int64_t)1 << 30) + 1, "seqlen_q (1073741825)");
    KV_INVALID(a_.seqlen_q = ((int64_t)1 << 28) + 1, "seqlen_q * heads / kv_heads (1073741828) must be at most");
    KV_INVALID(a_.seqlen_k = 0, "seqlen_k (0)");
    KV_INVALID(a_.seqlen_k = ((int64_t)1 << 30) + 1, "seqlen_k (1073741825)");
    KV_INVALID(a_.num_splits = -1, "num_splits (-1) must be in 0..128");
    KV_INVALID(a_.num_splits = 129, "num_splits (129) must be in 0..128");
    KV_INVALID(a_.scale = NAN, "scale (nan) must be finite");
    KV_INVALID(a_.scale = INFINITY, "scale (inf) must be finite");
    KV_INVALID(a_.scale = -INFINITY, "scale (-inf) must be finite");
    /* the paged cache */
    KV_INVALID_PAGED(a_.page_size = 0, "page_size (0) must be in 1..1024");
    KV_INVALID_PAGED(a_.page_size = 1025, "page_size (1025) must be in 1..1024");
    KV_INVALID_PAGED(a_.num_pages = 0, "num_pages (0)");
    KV_INVALID_PAGED(a_.stride_bt = 18, "stride_bt (18) is smaller than the pages of seqlen_k keys (19 of 16 tokens)");
    KV_INVALID_PAGED(a_.stride_bt = -1, "stride_bt (-1)");
    KV_INVALID_PAGED(a_.stride_bt = INT64_MAX / 2, "stride_bt (4611686018427387903) overflows a 64-bit offset");
    KV_INVALID_PAGED(a_.stride_kn = -128,
                     "k_cache's strides (stride_kb 2048, stride_kh 64, stride_kn -128) must be >= 0");
    /* a paged cache's strides span its pages, not batch x seqlen_k rows */
    KV_INVALID_PAGED(a_.stride_kb = (int64_t)1 << 56,
                     "k_cache's strides (stride_kb 72057594037927936, stride_kh 64, stride_kn 128) with 64 x 2 x 16 x "
                     "64 elements overflow a 64-bit offset");
    /* the strides */
    KV_INVALID(a_.stride_qh = -64, "q's strides (stride_qb 2048, stride_qh -64, stride_qm 512) must be >= 0");
    KV_INVALID(a_.stride_ob = -1, "o's strides (stride_ob -1, stride_oh 64, stride_om 512) must be >= 0");
    KV_INVALID(a_.stride_kb = -1, "k_cache's strides (stride_kb -1, stride_kh 64, stride_kn 128) must be >= 0");
    KV_INVALID(a_.stride_vn = -128, "v_cache's strides (stride_vb 65536, stride_vh 64, stride_vn -128) must be >= 0");
    KV_INVALID(a_.stride_qb = (int64_t)1 << 61, "q's strides (stride_qb 2305843009213693952, stride_qh 64, stride_qm "
                                                "512) with 2 x 8 x 4 x 64 elements overflow a 64-bit offset");
    KV_INVALID(a_.stride_vb = (int64_t)1 << 61, "v_cache's strides (stride_vb 2305843009213693952, stride_vh 64, "
                                                "stride_vn 128) with 2 x 2 x 300 x 64 elements overflow");
    /* o's elements each their own address */
    KV_INVALID(a_.stride_om = 0, "o's strides (stride_ob 2048, stride_oh 64, stride_om 0) give two of its elements the "
                                 "same address");
    KV_INVALID(a_.stride_oh = 32, "o's strides (stride_ob 2048, stride_oh 32, stride_om 512) give two of its elements");
    KV_INVALID(a_.stride_ob = 512, "o's strides (stride_ob 512, stride_oh 64, stride_om 512) give two of its elements");
    /* ... where seqlen_q is 1, its stride is unused; q may repeat (broadcast) */
    a = kv_args();
    a.seqlen_q = 1, a.stride_om = 0, a.stride_qm = 0, a.stride_qh = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    /* packed queries: one sequence of the longest length checked for distinct addresses */
    a = kv_args();
    a.cu_seqlens_q = CU_, a.stride_qb = a.stride_ob = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    a.stride_om = 32;
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), "o's strides (stride_ob 0, stride_oh 64, stride_om 32)");

    /* the pointers */
    KV_INVALID_PTR(a_.q = 0, "tc_attention_kvcache: q is 0");
    KV_INVALID_PTR(a_.o = 0, "tc_attention_kvcache: o is 0");
    KV_INVALID_PTR(a_.k_cache = 0, "tc_attention_kvcache: k_cache is 0");
    KV_INVALID_PTR(a_.v_cache = 0, "tc_attention_kvcache: v_cache is 0");
    KV_INVALID_PTR(a_.q = Q_ + 1, "q (0x300001) is not aligned to its 2-byte elements");
    KV_INVALID_PTR(a_.o = O_ + 1, "o (0x100001) is not aligned to its 2-byte elements");
    KV_INVALID_PTR(a_.k_cache = K_ + 3, "k_cache (0x400003) is not aligned to its 2-byte elements");
    KV_INVALID_PTR(a_.v_cache = V_ + 1, "v_cache (0x500001) is not aligned to its 2-byte elements");
    KV_INVALID_PTR(a_.lse = L_ + 2, "lse (0x200002) is not aligned to its 4-byte elements");
    KV_INVALID_PTR((a_.block_table = BT_ + 2, a_.page_size = 16, a_.num_pages = 1000, a_.stride_bt = 19),
                   "block_table (0x600002) is not aligned to its 4-byte elements");
    KV_INVALID_PTR(a_.seqused_k = SU_ + 1, "seqused_k (0x700001) is not aligned to its 4-byte elements");
    KV_INVALID_PTR(a_.cu_seqlens_q = CU_ + 2, "cu_seqlens_q (0x800002) is not aligned to its 4-byte elements");
    KV_INVALID_PTR((a_.workspace = WS_ + 8, a_.workspace_bytes = WS_BYTES),
                   "workspace (0x900008) is not aligned to its 16-byte elements");
    /* the optional ones may be absent, a 2-byte aligned q, o and caches suffice */
    a = kv_args();
    a.lse = 0, a.q = Q_ + 2, a.o = O_ + 6, a.k_cache = K_ + 2, a.v_cache = V_ + 14;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);

    /* the workspace: at least what the plan's splits need */
    a = kv_args();
    a.num_splits = 4, a.workspace = WS_, a.workspace_bytes = 100;
    tc_attention_kvcache_plan plan;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &plan), TC_OK);
    /* 300 keys: at most a split per key block */
    CHECK_EQ_INT(plan.num_splits, (300 + plan.attention.block_n - 1) / plan.attention.block_n < 4
                                      ? (300 + plan.attention.block_n - 1) / plan.attention.block_n
                                      : 4);
    CHECK(plan.num_splits > 1);
    CHECK(plan.workspace_bytes > 100);
    char msg[200];
    snprintf(msg, sizeof msg,
             "tc_attention_kvcache: workspace_bytes (100) is less than the %zu bytes of %d splits "
             "(tc_attention_kvcache_workspace_size)",
             plan.workspace_bytes, plan.num_splits);
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), msg);
    a.workspace_bytes = plan.workspace_bytes - 1;
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), "is less than the");
    a.workspace_bytes = plan.workspace_bytes;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    /* forced splits without a workspace: neither a size nor a pointer will do */
    a.workspace = 0, a.workspace_bytes = 0;
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), "workspace_bytes (0) is less than");
    a.workspace_bytes = WS_BYTES;
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), "tc_attention_kvcache: workspace is 0");
    /* num_splits 0 without a workspace runs unsplit, whatever the sizes */
    a = kv_args();
    a.batch = 1, a.seqlen_k = (int64_t)1 << 20, a.stride_kb = a.stride_vb = ((int64_t)1 << 20) * 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_ERROR_UNSUPPORTED);
    /* ... and with one, without the bytes the plan's splits need, is refused */
    a.workspace = WS_;
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, &a), "workspace_bytes (0) is less than");

    /* NULL */
    a = kv_args();
    CHECK_INVALID(tc_attention_kvcache(NULL, NULL, &a), "tc_attention_kvcache: ctx is NULL");
    CHECK_INVALID(tc_attention_kvcache(FAKE_CTX, NULL, NULL), "tc_attention_kvcache: args is NULL");
    CHECK_INVALID(tc_attention_kvcache_plan_for(&a, 132, NULL), "tc_attention_kvcache_plan_for: out is NULL");
    CHECK_INVALID(tc_attention_kvcache_plan_for(NULL, 132, &plan), "tc_attention_kvcache_plan_for: args is NULL");
    CHECK_INVALID(tc_attention_kvcache_plan_for(&a, 0, &plan), "multiprocessors (0) must be at least 1");
    size_t bytes = 7;
    CHECK_INVALID(tc_attention_kvcache_workspace_size(FAKE_CTX, &a, NULL),
                  "tc_attention_kvcache_workspace_size: bytes is NULL");
    CHECK_INVALID(tc_attention_kvcache_workspace_size(NULL, &a, &bytes),
                  "tc_attention_kvcache_workspace_size: ctx is NULL");
    CHECK_EQ_INT(bytes, 0);
    CHECK_INVALID(tc_attention_kvcache_workspace_size(FAKE_CTX, NULL, &bytes),
                  "tc_attention_kvcache_workspace_size: args is NULL");
    CHECK_EQ_INT(stdlib_hook_calls, 7);
    rt_attention_launch_hook = NULL;
}

/* [37 tokens, 2 KV heads, dim 64] into a cache of 10 pages of 16 tokens, [10, 16, 2, 64] */
#define KC_ 0xA00000
#define VC_ 0xB00000
#define KN_ 0xC00000
#define VN_ 0xD00000
#define SM_ 0xE00000
#define APPEND_STRIDES 128, 64, 128, 64, 2048, 128, 64, 2048, 128, 64

static tc_status app(tc_context *ctx, tc_dtype dt, CUdeviceptr kc, CUdeviceptr vc, CUdeviceptr k, CUdeviceptr v,
                     CUdeviceptr slots, int64_t tokens, int64_t kvh, int64_t d, int64_t page, int64_t pages) {
    return tc_kvcache_append(ctx, NULL, dt, kc, vc, k, v, slots, tokens, kvh, d, page, pages, APPEND_STRIDES);
}

TEST(test_kvcache_append_validation) {
    const tc_dtype F16 = TC_DTYPE_F16;
    rt_attention_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    CHECK_EQ_INT(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(app(FAKE_CTX, TC_DTYPE_BF16, KC_ + 2, VC_ + 2, KN_ + 2, VN_ + 2, SM_ + 8, 1, 2, 64, 16, 10),
                 TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(stdlib_hook_calls, 2);
    CHECK_INVALID(app(NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10), "tc_kvcache_append: ctx is NULL");
    CHECK_INVALID(app(FAKE_CTX, TC_DTYPE_F32, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10),
                  "tc_kvcache_append: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 0, 2, 64, 16, 10),
                  "tc_kvcache_append: tokens (0) must be in 1..2147483647");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, (int64_t)1 << 31, 2, 64, 16, 10),
                  "tokens (2147483648) must be in 1..2147483647");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 0, 64, 16, 10), "kv_heads (0) must be in 1..65535");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 65536, 64, 16, 10), "kv_heads (65536)");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 0, 16, 10), "head_dim (0) must be in 1..256");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 257, 16, 10), "head_dim (257) must be in 1..256");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 0, 10), "page_size (0)");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 0), "num_pages (0)");
    /* an fp8 cache: its type, both scales or neither, f32-aligned scales; then one launch */
    CHECK_INVALID(tc_kvcache_append_fp8(FAKE_CTX, NULL, F16, TC_DTYPE_BF16, 0, 0, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16,
                                        10, 128, 64, 128, 64, 2048, 128, 64, 2048, 128, 64),
                  "tc_kvcache_append_fp8: cache_dtype (6) must be dtype, TC_DTYPE_F8E4M3 or TC_DTYPE_F8E5M2");
    CHECK_INVALID(tc_kvcache_append_fp8(FAKE_CTX, NULL, F16, TC_DTYPE_F8E4M3, SM_, 0, KC_, VC_, KN_, VN_, SM_, 37, 2, 64,
                                        16, 10, 128, 64, 128, 64, 2048, 128, 64, 2048, 128, 64),
                  "k_scale and v_scale must be given together (got k_scale only)");
    CHECK_INVALID(tc_kvcache_append_fp8(FAKE_CTX, NULL, F16, TC_DTYPE_F8E4M3, SM_ + 2, SM_, KC_, VC_, KN_, VN_, SM_, 37,
                                        2, 64, 16, 10, 128, 64, 128, 64, 2048, 128, 64, 2048, 128, 64),
                  "k_scale");
    stdlib_hook_calls = 0;
    CHECK_EQ_INT(tc_kvcache_append_fp8(FAKE_CTX, NULL, F16, TC_DTYPE_F8E5M2, SM_, SM_ + 16, KC_ + 1, VC_ + 3, KN_, VN_, SM_,
                                       37, 2, 64, 16, 10, 128, 64, 128, 64, 2048, 128, 64, 2048, 128, 64),
                 TC_ERROR_UNSUPPORTED); /* fp8 caches: any byte address */
    CHECK_EQ_INT(stdlib_hook_calls, 1);
    /* the strides */
    CHECK_INVALID(tc_kvcache_append(FAKE_CTX, NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10, -128, 64, 128, 64,
                                    2048, 128, 64, 2048, 128, 64),
                  "tc_kvcache_append: k's strides (stride_kt -128, stride_kh 64) must be >= 0");
    CHECK_INVALID(tc_kvcache_append(FAKE_CTX, NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10, 128, 64, 128, -1,
                                    2048, 128, 64, 2048, 128, 64),
                  "v's strides (stride_vt 128, stride_vh -1) must be >= 0");
    CHECK_INVALID(tc_kvcache_append(FAKE_CTX, NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10, 128, 64, 128, 64,
                                    -2048, 128, 64, 2048, 128, 64),
                  "k_cache's strides (stride_kcp -2048, stride_kcn 128, stride_kch 64) must be >= 0");
    CHECK_INVALID(tc_kvcache_append(FAKE_CTX, NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10, 128, 64, 128, 64,
                                    2048, 128, 64, 2048, 128, -64),
                  "v_cache's strides (stride_vcp 2048, stride_vcn 128, stride_vch -64) must be >= 0");
    CHECK_INVALID(tc_kvcache_append(FAKE_CTX, NULL, F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10, 128, 64, 128, 64,
                                    (int64_t)1 << 60, 128, 64, 2048, 128, 64),
                  "k_cache's strides (stride_kcp 1152921504606846976, stride_kcn 128, stride_kch 64) with 10 x 16 x 2 "
                  "x 64 elements overflow a 64-bit offset");
    /* the pointers */
    CHECK_INVALID(app(FAKE_CTX, F16, 0, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10), "tc_kvcache_append: k_cache is 0");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, 0, KN_, VN_, SM_, 37, 2, 64, 16, 10), "tc_kvcache_append: v_cache is 0");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, 0, VN_, SM_, 37, 2, 64, 16, 10), "tc_kvcache_append: k is 0");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, 0, SM_, 37, 2, 64, 16, 10), "tc_kvcache_append: v is 0");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, 0, 37, 2, 64, 16, 10), "tc_kvcache_append: slot_mapping is 0");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_ + 1, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10),
                  "k_cache (0xa00001) is not aligned to its 2-byte elements");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_ + 1, SM_, 37, 2, 64, 16, 10),
                  "v (0xd00001) is not aligned to its 2-byte elements");
    CHECK_INVALID(app(FAKE_CTX, F16, KC_, VC_, KN_, VN_, SM_ + 4, 37, 2, 64, 16, 10),
                  "slot_mapping (0xe00004) is not aligned to its 8-byte elements");
    CHECK_EQ_INT(stdlib_hook_calls, 1); /* the fp8 append's, since the count was reset */
    rt_attention_launch_hook = NULL;
}

/* tc_kvcache_append_rope: the append's checks, tc_rope's under this name,
 * and the rules that tie them; nothing is launched on a failure. */
TEST(test_kvcache_append_rope_validation) {
    const tc_dtype F16 = TC_DTYPE_F16;
    tc_rope_args r;
    memset(&r, 0, sizeof r);
    r.dtype = F16, r.tokens = 37, r.q_heads = 8, r.head_dim = 64, r.q = Q_, r.stride_qt = 8 * 64, r.stride_qh = 64;
    r.seqlen = 37, r.theta = 10000.0f;
#define APP_ROPE(ctx, dt, tokens, kvh, d, rope)                                                                       \
    tc_kvcache_append_rope(ctx, NULL, dt, KC_, VC_, KN_, VN_, SM_, tokens, kvh, d, 16, 10, APPEND_STRIDES, rope)
    rt_attention_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, NULL), "tc_kvcache_append_rope: rope is NULL");
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 0, 2, 64, &r), "tc_kvcache_append_rope: tokens (0) must be in 1..2147483647");
    tc_rope_args b = r;
    b.rotary_dim = 3;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "tc_kvcache_append_rope: rotary_dim (3) must be 0");
    b = r, b.dtype = TC_DTYPE_BF16;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "rope's dtype, tokens and head_dim (6, 37, 64) must be the "
                                                          "append's (5, 37, 64)");
    b = r, b.tokens = 36;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "rope's dtype, tokens and head_dim");
    b = r, b.k = KN_, b.k_heads = 2, b.stride_kt = 128, b.stride_kh = 64;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "rope's k and k_heads must be 0");
    b = r, b.backward = 1;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "and backward 0");
    b = r, b.q_heads = 7, b.stride_qt = 7 * 64;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "kv_heads (2) does not divide rope's q_heads (7)");
    b = r, b.q = 0;
    CHECK_INVALID(APP_ROPE(FAKE_CTX, F16, 37, 2, 64, &b), "tc_kvcache_append_rope: q is 0");
    CHECK_EQ_INT(stdlib_hook_calls, 0);
#undef APP_ROPE
    rt_attention_launch_hook = NULL;
}

/* ---- the plans ---- */

TEST(test_kvcache_plans) {
    tc_attention_kvcache_plan p;
    /* decode: 64 sequences of 4096 keys, GQA 4 (32 heads, 8 KV heads), head dim 128 on an H100: 512 programs
     * fill the GPU unsplit, one program of 64 rows per (sequence, KV head) holding its 4 query heads */
    tc_attention_kvcache_args a = kv_args();
    a.batch = 64, a.heads = 32, a.kv_heads = 8, a.head_dim = 128, a.seqlen_q = 1, a.seqlen_k = 4096;
    kv_dense(&a, 4096);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.num_splits, 1);
    CHECK_EQ_INT(p.group, 4);
    CHECK_EQ_STR(p.attention.file, "attention_kvcache.tile");
    CHECK_EQ_STR(p.attention.kernel, "attention_kvcache");
    CHECK_EQ_INT(p.attention.block_m, 64);
    CHECK_EQ_INT(p.attention.block_n, 128);
    CHECK_EQ_INT(p.attention.block_d, 128);
    CHECK_EQ_INT(p.attention.num_warps, 4);
    CHECK_EQ_INT(p.attention.grid.x, 1);
    CHECK_EQ_INT(p.attention.grid.y, 512);
    CHECK_EQ_INT(p.attention.grid.z, 1);
    CHECK_EQ_INT(p.workspace_bytes, 0);
    CHECK_EQ_INT(p.split_keys % p.attention.block_n, 0);
    CHECK(p.split_keys >= a.seqlen_k);
    CHECK(p.combine.kernel == NULL); /* unused unsplit */
    CHECK_EQ_INT(cx(&p.attention, "T"), TC_DTYPE_F16);
    CHECK_EQ_INT(cx(&p.attention, "HEAD_DIM"), 128);
    CHECK_EQ_INT(cx(&p.attention, "D"), 128);
    CHECK_EQ_INT(cx(&p.attention, "BM"), 64);
    CHECK_EQ_INT(cx(&p.attention, "BN"), 128);
    CHECK_EQ_INT(cx(&p.attention, "CAUSAL"), 0);
    CHECK_EQ_INT(cx(&p.attention, "VARLEN_Q"), 0);
    CHECK_EQ_INT(cx(&p.attention, "SEQUSED"), 0);
    CHECK_EQ_INT(cx(&p.attention, "PAGED"), 0);
    CHECK_EQ_INT(cx(&p.attention, "SPLIT"), 0);
    CHECK_EQ_INT(cx(&p.attention, "HAS_LSE"), 1);
    CHECK_EQ_INT(cx(&p.attention, "NEG_SCALE"), 0);
    /* every constexpr is one of the kernel's */
    CHECK_EQ_INT(p.attention.num_constexprs, 15);

    /* one sequence of 128K keys: 8 programs cannot fill 132 SMs; the keys split over more programs */
    a.batch = 1, a.seqlen_k = 131072;
    kv_dense(&a, 131072);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    int s = p.num_splits;
    CHECK(s > 1 && s <= 128);
    CHECK_EQ_INT(p.attention.grid.z, s);
    CHECK_EQ_INT(p.attention.grid.y, 8);
    CHECK_EQ_INT(p.attention.grid.x, 1);
    CHECK_EQ_INT(p.split_keys % p.attention.block_n, 0);
    CHECK(s * p.split_keys >= a.seqlen_k);
    CHECK((s - 1) * p.split_keys < a.seqlen_k); /* no split without keys */
    CHECK_EQ_INT(cx(&p.attention, "SPLIT"), 1);
    CHECK(p.workspace_bytes > 0);
    /* the workspace: the splits' LSE (f32 per row), then their O (f32, block_d per row), each 16-byte aligned */
    size_t rows = (size_t)s * 1 * 1 * 32;
    CHECK_EQ_INT(p.lse_part_offset, 0);
    CHECK(p.o_part_offset >= rows * 4);
    CHECK_EQ_INT(p.o_part_offset % 16, 0);
    CHECK(p.workspace_bytes >= p.o_part_offset + rows * 128 * 4);
    CHECK_EQ_STR(p.combine.file, "attention_kvcache.tile");
    CHECK_EQ_STR(p.combine.kernel, "attention_kvcache_combine");
    CHECK_EQ_INT(p.combine.block_m, 16);
    CHECK_EQ_INT(p.combine.grid.x, 2); /* 32 rows, 16 a program */
    CHECK_EQ_INT(p.combine.grid.y, 1);
    CHECK_EQ_INT(p.combine.grid.z, 1);
    CHECK_EQ_INT(cx(&p.combine, "BR"), 16);
    CHECK_EQ_INT(cx(&p.combine, "HEAD_DIM"), 128);
    CHECK_EQ_INT(cx(&p.combine, "D"), 128);
    CHECK_EQ_INT(cx(&p.combine, "HAS_LSE"), 1);
    CHECK_EQ_INT(cx(&p.combine, "VARLEN_Q"), 0);
    int64_t splits_cx = cx(&p.combine, "SPLITS");
    CHECK(splits_cx >= s && splits_cx < 2 * s && (splits_cx & (splits_cx - 1)) == 0);
    /* tc_attention_kvcache_workspace_size agrees (a hooked context plans for an H100's 132 SMs) */
    rt_attention_launch_hook = counting_hook;
    size_t bytes = 0;
    CHECK_EQ_INT(tc_attention_kvcache_workspace_size(FAKE_CTX, &a, &bytes), TC_OK);
    CHECK_EQ_INT(bytes, p.workspace_bytes);
    rt_attention_launch_hook = NULL;
    /* the fewer SMs, the fewer splits */
    tc_attention_kvcache_plan few;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 8, &few), TC_OK);
    CHECK_EQ_INT(few.num_splits, 1);
    CHECK_EQ_INT(few.workspace_bytes, 0);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 16, &few), TC_OK);
    CHECK_EQ_INT(few.num_splits, 2);
    CHECK(few.num_splits <= s);

    /* forced: num_splits 1 never splits; 3 gives 3 */
    a.num_splits = 1;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.num_splits, 1);
    CHECK_EQ_INT(p.workspace_bytes, 0);
    CHECK_EQ_INT(p.attention.grid.z, 1);
    CHECK_EQ_INT(cx(&p.attention, "SPLIT"), 0);
    rt_attention_launch_hook = counting_hook;
    CHECK_EQ_INT(tc_attention_kvcache_workspace_size(FAKE_CTX, &a, &bytes), TC_OK);
    CHECK_EQ_INT(bytes, 0);
    rt_attention_launch_hook = NULL;
    a.num_splits = 3;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.num_splits, 3);
    CHECK_EQ_INT(p.attention.grid.z, 3);
    int64_t blocks = (131072 + p.attention.block_n - 1) / p.attention.block_n;
    CHECK_EQ_INT(p.split_keys, (blocks + 2) / 3 * p.attention.block_n);
    CHECK_EQ_INT(cx(&p.combine, "SPLITS"), 4);
    /* more splits than key blocks: one block each */
    a.seqlen_k = 300, a.num_splits = 8;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    blocks = (300 + p.attention.block_n - 1) / p.attention.block_n;
    CHECK_EQ_INT(p.num_splits, blocks < 8 ? blocks : 8);
    CHECK_EQ_INT(p.split_keys, blocks < 8 ? p.attention.block_n : (blocks + 7) / 8 * p.attention.block_n);
    a.seqlen_k = 100;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.num_splits, 1);
    CHECK_EQ_INT(p.workspace_bytes, 0);

    /* prefill: 2048 query tokens of GQA 4 are 8192 rows, 128 a program on two warpgroups */
    a = kv_args();
    a.heads = 32, a.kv_heads = 8, a.head_dim = 128, a.seqlen_q = 2048, a.seqlen_k = 4096, a.causal = 1;
    kv_dense(&a, 4096);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.group, 4);
    CHECK_EQ_INT(p.attention.block_m, 128);
    CHECK_EQ_INT(p.attention.num_warps, 8);
    CHECK_EQ_INT(p.attention.grid.x, 2048 * 4 / 128);
    CHECK_EQ_INT(p.attention.grid.y, 2 * 8);
    CHECK_EQ_INT(p.num_splits, 1); /* 1024 programs fill the GPU */
    CHECK_EQ_INT(cx(&p.attention, "CAUSAL"), 1);
    CHECK_EQ_INT(cx(&p.attention, "BM"), 128);
    /* speculative decoding: 16 queries of GQA 4 are 64 rows, still one warpgroup's */
    a.seqlen_q = 16;
    kv_dense(&a, 4096);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.attention.block_m, 64);
    CHECK_EQ_INT(p.attention.grid.x, 1);
    a.seqlen_q = 17;
    kv_dense(&a, 4096);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.attention.block_m, 128);

    /* head dims: D the next power of two from 16; BN 64 at 256 */
    static const struct {
        int64_t head_dim;
        int d, bn;
    } dims[] = {{1, 16, 128}, {40, 64, 128}, {64, 64, 128}, {96, 128, 128}, {200, 256, 64}, {256, 256, 64}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        a = kv_args();
        a.head_dim = dims[i].head_dim;
        kv_dense(&a, 512);
        CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
        CHECK_EQ_INT(p.attention.head_dim, dims[i].head_dim);
        CHECK_EQ_INT(p.attention.block_d, dims[i].d);
        CHECK_EQ_INT(p.attention.block_n, dims[i].bn);
        CHECK_EQ_INT(cx(&p.attention, "D"), dims[i].d);
        CHECK_EQ_INT(cx(&p.attention, "BN"), dims[i].bn);
        CHECK_EQ_INT(cx(&p.attention, "HEAD_DIM"), dims[i].head_dim);
    }

    /* the constexprs follow the arguments */
    a = kv_paged();
    a.page_size = 64, a.num_pages = 16, a.stride_bt = 5, a.stride_kb = a.stride_vb = 64 * 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(cx(&p.attention, "PAGED"), 1);
    CHECK_EQ_INT(cx(&p.attention, "PAGE"), 64);
    CHECK_EQ_INT(cx(&p.attention, "SEQUSED"), 0);
    CHECK_EQ_INT(cx(&p.attention, "HAS_LSE"), 1);
    CHECK_EQ_INT(cx(&p.attention, "NEG_SCALE"), 0);
    a.page_size = 1, a.num_pages = 600, a.stride_bt = 300, a.stride_kb = a.stride_vb = 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(cx(&p.attention, "PAGED"), 1);
    CHECK_EQ_INT(cx(&p.attention, "PAGE"), 1);
    a.page_size = 1024, a.num_pages = 2, a.stride_bt = 1, a.stride_kb = a.stride_vb = 1024 * 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(cx(&p.attention, "PAGE"), 1024);
    a = kv_args();
    a.seqused_k = SU_, a.lse = 0, a.scale = -0.5f, a.cu_seqlens_q = CU_, a.dtype = TC_DTYPE_BF16;
    a.num_splits = 2;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(cx(&p.attention, "PAGED"), 0);
    CHECK_EQ_INT(cx(&p.attention, "SEQUSED"), 1);
    CHECK_EQ_INT(cx(&p.attention, "HAS_LSE"), 0);
    CHECK_EQ_INT(cx(&p.attention, "NEG_SCALE"), 1);
    CHECK_EQ_INT(cx(&p.attention, "VARLEN_Q"), 1);
    CHECK_EQ_INT(cx(&p.attention, "T"), TC_DTYPE_BF16);
    CHECK_EQ_INT(p.num_splits, 2);
    CHECK_EQ_INT(cx(&p.combine, "HAS_LSE"), 0);
    CHECK_EQ_INT(cx(&p.combine, "VARLEN_Q"), 1);
    CHECK_EQ_INT(cx(&p.combine, "T"), TC_DTYPE_BF16);
    CHECK_EQ_INT(cx(&p.combine, "SPLITS"), 2);
    CHECK_EQ_INT(p.combine.grid.x, (2 * 4 * 8 + 15) / 16);
    a.scale = 0.0f; /* zero is not negative */
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(cx(&p.attention, "NEG_SCALE"), 0);
}

/* ---- the launches, against the kernels' signatures ---- */

/* What the hook saw of a launch: its plan and kernel, and each argument's
 * name and value (a pointer or an integer as int64, f32 apart). */
typedef struct Seen {
    tc_attention_plan plan;
    const char *kernel;
    size_t num_args;
    const char *names[RT_ATTN_MAX_PARAMS];
    int64_t values[RT_ATTN_MAX_PARAMS];
    float f32s[RT_ATTN_MAX_PARAMS];
    int64_t divisibility[RT_ATTN_MAX_PARAMS];
    tc_options options;
    tc_param_spec facts[RT_ATTN_MAX_PARAMS];
    RtStdlibKey memo;
    uint8_t jit[32];
} Seen;

static Seen seen[512];
static int num_seen;
static bool compiling; /* compile each distinct specialization (ptx_check_begin ... end) */

static const Seen *seen_kernel(int from, const char *kernel) {
    for (int i = from; i < num_seen; i++)
        if (strcmp(seen[i].kernel, kernel) == 0)
            return &seen[i];
    return NULL;
}

static int arg_index(const Seen *s, const char *name) {
    for (size_t i = 0; i < s->num_args; i++)
        if (strcmp(s->names[i], name) == 0)
            return (int)i;
    CHECK(0 && "no such argument");
    fprintf(stderr, "  %s has no argument %s\n", s->kernel, name);
    return 0;
}

static int64_t arg(const Seen *s, const char *name) {
    return s->values[arg_index(s, name)];
}

static int64_t div_of(const Seen *s, const char *name) {
    return s->divisibility[arg_index(s, name)];
}

static bool fact(const Seen *s, const char *name) {
    return has_fact(&s->options, name, 8);
}

/* Checks a launch against its kernel's runtime signature (by position, name
 * and type), records it, keys it as the memo and tc_jit would, and compiles
 * it to PTX once when compiling. */
static tc_status checking_hook(const RtAttentionLaunch *l) {
    CHECK(l->ctx == FAKE_CTX);
    CHECK_EQ_STR(l->plan.file, "attention_kvcache.tile");
    CHECK_EQ_INT(l->options.num_warps, l->plan.num_warps);
    CHECK_EQ_INT(l->options.num_stages, l->plan.num_stages);
    CHECK(l->req.divisibility == l->divisibility && l->req.num_divisibility == l->num_args);
    CHECK(l->req.kernel == l->plan.kernel);
    CHECK(l->plan.grid.x >= 1 && l->plan.grid.y >= 1 && l->plan.grid.z >= 1);
    CHECK(l->plan.grid.y <= 65535 && l->plan.grid.z <= 65535);
    if (num_seen >= (int)(sizeof seen / sizeof seen[0]))
        return TC_ERROR_INTERNAL;
    Seen *s = &seen[num_seen++];
    memset(s, 0, sizeof *s);
    s->plan = l->plan;
    s->kernel = l->req.kernel;
    s->num_args = l->num_args;
    s->options = l->options;
    CHECK(l->options.num_params <= RT_ATTN_MAX_PARAMS);
    for (size_t i = 0; i < l->options.num_params && i < RT_ATTN_MAX_PARAMS; i++)
        s->facts[i] = l->options.params[i];
    s->options.params = s->facts;

    RtMeta sig = {0};
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    if (!launch_signature(&l->req, l->plan.num_warps, &sig, diags)) {
        tc_diagnostics_destroy(diags);
        rt_meta_free(&sig);
        CHECK(0);
        return TC_ERROR_INTERNAL;
    }
    const tc_kernel_desc *k = &sig.kernels[0];
    CHECK_EQ_STR(k->name, l->req.kernel);
    CHECK_EQ_INT(k->num_params, l->num_args);
    for (size_t i = 0; i < k->num_params && i < l->num_args; i++) {
        CHECK_EQ_STR(l->names[i], k->params[i].name);
        s->names[i] = l->names[i];
        s->divisibility[i] = l->divisibility[i];
        if (k->params[i].is_pointer) {
            CHECK(l->args[i] == &l->ptrs[i]);
            CHECK(l->ptrs[i] != 0); /* absent optional tensors stand in as a given pointer */
            s->values[i] = (int64_t)l->ptrs[i];
        } else if (k->params[i].dtype == TC_DTYPE_I32) {
            CHECK(l->args[i] == &l->i32s[i]);
            s->values[i] = l->i32s[i];
        } else if (k->params[i].dtype == TC_DTYPE_I64) {
            CHECK(l->args[i] == &l->i64s[i]);
            s->values[i] = l->i64s[i];
        } else {
            CHECK(k->params[i].dtype == TC_DTYPE_F32 && l->args[i] == &l->f32s[i]);
            s->f32s[i] = l->f32s[i];
        }
        /* a pointer's 16-byte alignment is a fact only where it holds */
        if (l->divisibility[i])
            CHECK(k->params[i].is_pointer && l->ptrs[i] % 16 == 0);
    }
    /* the integer facts name integer parameters whose values they divide */
    for (size_t f = 0; f < l->options.num_params; f++) {
        bool found = false;
        for (size_t i = 0; i < k->num_params && i < l->num_args; i++)
            if (strcmp(k->params[i].name, l->options.params[f].name) == 0) {
                found = true;
                CHECK(!k->params[i].is_pointer);
                CHECK(l->options.params[f].divisibility > 0 && s->values[i] % l->options.params[f].divisibility == 0);
            }
        CHECK(found);
    }

    /* memoizable: the memo's key, and tc_jit's for an sm_90a device */
    CHECK(rt_stdlib_key(&l->req, &s->memo));
    CHECK(s->memo.len > 0);
    stdlib_jit_key(&l->req, s->jit);

    if (compiling) {
        char key[640];
        int off = ptx_key_plan(key, sizeof key, l->req.kernel, l->plan.num_warps, l->plan.num_stages,
                               l->plan.constexprs, l->plan.num_constexprs);
        ptx_key_facts(key, sizeof key, off, &l->options, l->divisibility, l->num_args);
        tc_binary *bin =
            ptx_compile_once(key, &l->req, &l->options, k, l->divisibility, l->num_args, l->plan.num_warps, diags);
        tc_binary_destroy(bin);
    }
    tc_diagnostics_destroy(diags);
    rt_meta_free(&sig);
    return TC_OK;
}

TEST(test_kvcache_launches) {
    rt_attention_launch_hook = checking_hook;
    compiling = false;

    /* unsplit: one launch of attention_kvcache, the plan's grid, the arguments by name */
    tc_attention_kvcache_args a = kv_args();
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 1);
    tc_attention_kvcache_plan plan;
    a.num_splits = 1; /* the call's plan without a workspace (plan_for counts 0 as given) */
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &plan), TC_OK);
    a.num_splits = 0;
    const Seen *s = &seen[0];
    CHECK_EQ_STR(s->kernel, "attention_kvcache");
    CHECK_EQ_INT(s->num_args, 32);
    CHECK_EQ_INT(s->plan.grid.x, plan.attention.grid.x);
    CHECK_EQ_INT(s->plan.grid.y, 2 * 2);
    CHECK_EQ_INT(s->plan.grid.z, 1);
    CHECK_EQ_INT(s->plan.grid.x, 1); /* 4 queries x group 4 = 16 rows */
    CHECK_EQ_INT(s->plan.num_constexprs, plan.attention.num_constexprs);
    for (size_t i = 0; i < plan.attention.num_constexprs; i++) {
        CHECK_EQ_STR(s->plan.constexprs[i].name, plan.attention.constexprs[i].name);
        CHECK_EQ_INT(s->plan.constexprs[i].i, plan.attention.constexprs[i].i);
    }
    CHECK_EQ_INT(arg(s, "O"), O_);
    CHECK_EQ_INT(arg(s, "LSE"), L_);
    CHECK_EQ_INT(arg(s, "Q"), Q_);
    CHECK_EQ_INT(arg(s, "K"), K_);
    CHECK_EQ_INT(arg(s, "V"), V_);
    CHECK_EQ_INT(arg(s, "batch"), 2);
    CHECK_EQ_INT(arg(s, "heads"), 8);
    CHECK_EQ_INT(arg(s, "kv_heads"), 2);
    CHECK_EQ_INT(arg(s, "seqlen_q"), 4);
    CHECK_EQ_INT(arg(s, "seqlen_k"), 300);
    CHECK(arg(s, "split_keys") >= 300);
    CHECK_EQ_INT(arg(s, "stride_qb"), 2048);
    CHECK_EQ_INT(arg(s, "stride_qh"), 64);
    CHECK_EQ_INT(arg(s, "stride_qm"), 512);
    CHECK_EQ_INT(arg(s, "stride_kb"), 65536);
    CHECK_EQ_INT(arg(s, "stride_kn"), 128);
    CHECK_EQ_INT(arg(s, "stride_vh"), 64);
    CHECK_EQ_INT(arg(s, "stride_om"), 512);
    CHECK_EQ_INT(arg(s, "stride_bt"), 0);
    CHECK(s->f32s[arg_index(s, "scale")] == 0.125f);
    CHECK_EQ_INT(div_of(s, "O"), 16);
    CHECK_EQ_INT(div_of(s, "Q"), 16);
    CHECK_EQ_INT(div_of(s, "K"), 16);
    CHECK(fact(s, "stride_qm") && fact(s, "stride_kn") && fact(s, "stride_vb") && fact(s, "stride_om"));

    /* paged, packed, seqused, causal, negative scale, no LSE: the given pointers in place, the absent LSE stood
     * in for by a given one */
    a = kv_paged();
    a.seqused_k = SU_, a.cu_seqlens_q = CU_, a.lse = 0, a.causal = 1, a.scale = -2.0f;
    a.q = Q_ + 2, a.stride_qm = 513;
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 1);
    s = &seen[0];
    CHECK_EQ_INT(arg(s, "block_table"), BT_);
    CHECK_EQ_INT(arg(s, "seqused_k"), SU_);
    CHECK_EQ_INT(arg(s, "cu_seqlens_q"), CU_);
    CHECK_EQ_INT(arg(s, "stride_bt"), 32);
    CHECK_EQ_INT(arg(s, "stride_kb"), 2048);
    CHECK(s->f32s[arg_index(s, "scale")] == -2.0f);
    CHECK_EQ_INT(div_of(s, "Q"), 0); /* misaligned: no fact */
    CHECK_EQ_INT(div_of(s, "O"), 16);
    CHECK(!fact(s, "stride_qm"));
    CHECK(fact(s, "stride_om"));
    CHECK_EQ_INT(cx(&s->plan, "PAGED"), 1);
    CHECK_EQ_INT(cx(&s->plan, "PAGE"), 16);
    CHECK_EQ_INT(cx(&s->plan, "SEQUSED"), 1);
    CHECK_EQ_INT(cx(&s->plan, "VARLEN_Q"), 1);
    CHECK_EQ_INT(cx(&s->plan, "CAUSAL"), 1);
    CHECK_EQ_INT(cx(&s->plan, "HAS_LSE"), 0);
    CHECK_EQ_INT(cx(&s->plan, "NEG_SCALE"), 1);

    /* forced splits: attention into the workspace, then the combine over batch * seqlen_q * heads rows, 16 a
     * program */
    a = kv_args();
    a.seqlen_k = 1000, a.num_splits = 3, a.workspace = WS_, a.workspace_bytes = WS_BYTES;
    kv_dense(&a, 1024);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &plan), TC_OK);
    CHECK_EQ_INT(plan.num_splits, 3);
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 2);
    const Seen *att = &seen[0], *comb = &seen[1];
    CHECK_EQ_STR(att->kernel, "attention_kvcache");
    CHECK_EQ_STR(comb->kernel, "attention_kvcache_combine");
    CHECK_EQ_INT(att->plan.grid.z, 3);
    CHECK_EQ_INT(att->plan.grid.y, 4);
    CHECK_EQ_INT(cx(&att->plan, "SPLIT"), 1);
    CHECK_EQ_INT(arg(att, "split_keys"), plan.split_keys);
    int64_t bn = plan.attention.block_n;
    CHECK_EQ_INT(plan.split_keys, ((1000 + bn - 1) / bn + 2) / 3 * bn); /* the key blocks over 3 splits */
    CHECK_EQ_INT(arg(att, "O_PART"), WS_ + (int64_t)plan.o_part_offset);
    CHECK_EQ_INT(arg(att, "LSE_PART"), WS_ + (int64_t)plan.lse_part_offset);
    CHECK_EQ_INT(arg(att, "O"), O_);
    CHECK_EQ_INT(comb->num_args, 12);
    CHECK_EQ_INT(comb->plan.grid.x, (2 * 4 * 8 + 15) / 16);
    CHECK_EQ_INT(comb->plan.grid.x * 16 >= 2 * 4 * 8, 1);
    CHECK_EQ_INT(comb->plan.grid.y, 1);
    CHECK_EQ_INT(comb->plan.grid.z, 1);
    CHECK_EQ_INT(cx(&comb->plan, "BR"), 16);
    CHECK_EQ_INT(cx(&comb->plan, "SPLITS"), 4);
    CHECK_EQ_INT(arg(comb, "num_splits"), 3);
    CHECK_EQ_INT(arg(comb, "O_PART"), WS_ + (int64_t)plan.o_part_offset);
    CHECK_EQ_INT(arg(comb, "LSE_PART"), WS_ + (int64_t)plan.lse_part_offset);
    CHECK_EQ_INT(arg(comb, "O"), O_);
    CHECK_EQ_INT(arg(comb, "LSE"), L_);
    CHECK_EQ_INT(arg(comb, "batch"), 2);
    CHECK_EQ_INT(arg(comb, "heads"), 8);
    CHECK_EQ_INT(arg(comb, "seqlen_q"), 4);
    CHECK_EQ_INT(arg(comb, "stride_ob"), a.stride_ob);
    CHECK_EQ_INT(arg(comb, "stride_oh"), a.stride_oh);
    CHECK_EQ_INT(arg(comb, "stride_om"), a.stride_om);
    /* a partial last program: 3 x 5 x 4 = 60 rows */
    a = kv_args();
    a.batch = 3, a.seqlen_q = 5, a.heads = 4, a.kv_heads = 4, a.seqlen_k = 1000, a.num_splits = 2;
    a.workspace = WS_, a.workspace_bytes = WS_BYTES;
    kv_dense(&a, 1000);
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 2);
    CHECK_EQ_INT(seen[1].plan.grid.x, 4);
    CHECK_EQ_INT(seen[0].plan.grid.y, 12);

    /* auto splits with a workspace: one long sequence on the hooked context's 132 SMs, as plan_for plans */
    a = kv_args();
    a.batch = 1, a.heads = 32, a.kv_heads = 8, a.head_dim = 128, a.seqlen_q = 1, a.seqlen_k = 131072;
    a.workspace = WS_, a.workspace_bytes = WS_BYTES;
    kv_dense(&a, 131072);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &plan), TC_OK);
    CHECK(plan.num_splits > 1);
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 2);
    CHECK_EQ_INT(seen[0].plan.grid.z, plan.num_splits);
    CHECK_EQ_INT(arg(&seen[1], "num_splits"), plan.num_splits);
    CHECK_EQ_INT(seen[1].plan.grid.x, 2);
    /* ... and without one, unsplit */
    a.workspace = 0, a.workspace_bytes = 0;
    num_seen = 0;
    CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
    CHECK_EQ_INT(num_seen, 1);
    CHECK_EQ_INT(seen[0].plan.grid.z, 1);
    CHECK_EQ_INT(cx(&seen[0].plan, "SPLIT"), 0);

    /* tc_kvcache_append: one kvcache_append, 16 tokens a program per KV head */
    num_seen = 0;
    CHECK_EQ_INT(app(FAKE_CTX, TC_DTYPE_F16, KC_, VC_, KN_, VN_, SM_, 37, 2, 64, 16, 10), TC_OK);
    CHECK_EQ_INT(num_seen, 1);
    s = &seen[0];
    CHECK_EQ_STR(s->kernel, "kvcache_append");
    CHECK_EQ_INT(s->num_args, 29);
    CHECK_EQ_INT(cx(&s->plan, "ROPE"), 0);
    CHECK_EQ_INT(s->plan.grid.x, 3); /* cdiv(37, 16) */
    CHECK_EQ_INT(s->plan.grid.y, 2);
    CHECK_EQ_INT(s->plan.grid.z, 1);
    CHECK_EQ_INT(cx(&s->plan, "BT"), 16);
    CHECK_EQ_INT(cx(&s->plan, "HEAD_DIM"), 64);
    CHECK_EQ_INT(cx(&s->plan, "D"), 64);
    CHECK_EQ_INT(cx(&s->plan, "T"), TC_DTYPE_F16);
    CHECK_EQ_INT(arg(s, "K_CACHE"), KC_);
    CHECK_EQ_INT(arg(s, "V_CACHE"), VC_);
    CHECK_EQ_INT(arg(s, "K"), KN_);
    CHECK_EQ_INT(arg(s, "V"), VN_);
    CHECK_EQ_INT(arg(s, "slot_mapping"), SM_);
    CHECK_EQ_INT(arg(s, "tokens"), 37);
    CHECK_EQ_INT(arg(s, "page_size"), 16);
    CHECK_EQ_INT(arg(s, "slots"), 160);
    static const char *const strides[] = {"stride_kt",  "stride_kh",  "stride_vt",  "stride_vh",  "stride_kcp",
                                          "stride_kcn", "stride_kch", "stride_vcp", "stride_vcn", "stride_vch"};
    static const int64_t values[] = {APPEND_STRIDES};
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(arg(s, strides[i]), values[i]);
        CHECK(fact(s, strides[i]));
    }
    num_seen = 0;
    CHECK_EQ_INT(app(FAKE_CTX, TC_DTYPE_BF16, KC_, VC_, KN_, VN_, SM_, 1, 7, 256, 16, 10), TC_OK);
    CHECK_EQ_INT(num_seen, 1);
    CHECK_EQ_INT(seen[0].plan.grid.x, 1);
    CHECK_EQ_INT(seen[0].plan.grid.y, 7);
    CHECK_EQ_INT(cx(&seen[0].plan, "D"), 256);
    CHECK_EQ_INT(cx(&seen[0].plan, "T"), TC_DTYPE_BF16);
    num_seen = 0;
    CHECK_EQ_INT(app(FAKE_CTX, TC_DTYPE_F16, KC_, VC_, KN_, VN_, SM_, 4097, 1, 40, 16, 10), TC_OK);
    CHECK_EQ_INT(seen[0].plan.grid.x, 257);
    CHECK_EQ_INT(cx(&seen[0].plan, "D"), 64);
    CHECK_EQ_INT(cx(&seen[0].plan, "HEAD_DIM"), 40);
    rt_attention_launch_hook = NULL;
}

/* ---- every specialization: compiled, and keyed for the memo ---- */

/* The calls the tests make over head dims, dtypes and the kinds of call:
 * decode, speculative decode, chunked prefill; contiguous or paged; packed;
 * seqused; causal; LSE or not; split or not (forced or planned); negative
 * scale; misaligned strides; an fp8 cache with scales (its quantizing
 * append too). `again` makes the same call with other
 * addresses and sizes that give the same facts and plan. */
static void every_call(bool again) {
    static const int64_t dims[] = {40, 64, 128, 256};
    CUdeviceptr off = again ? 0x10000000 : 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int variant = 0; variant < 8; variant++) {
            tc_attention_kvcache_args a = kv_args();
            a.dtype = (di + (size_t)variant) % 2 ? TC_DTYPE_BF16 : TC_DTYPE_F16;
            a.head_dim = dims[di];
            a.q += off, a.o += off, a.k_cache += off, a.v_cache += off, a.lse += off;
            a.scale = 1.0f / sqrtf((float)a.head_dim);
            int64_t cap = 2048;
            switch (variant) {
            case 0: /* decode, contiguous, unsplit */
                a.batch = again ? 48 : 64, a.heads = 32, a.kv_heads = 8, a.seqlen_q = 1, a.seqlen_k = 2000;
                break;
            case 1: /* decode, paged, seqused, causal, forced splits */
                a.seqlen_q = 1, a.seqlen_k = 2000, a.seqused_k = SU_ + off, a.causal = 1, a.num_splits = 4;
                a.workspace = WS_ + off, a.workspace_bytes = WS_BYTES;
                break;
            case 2: /* chunked prefill: packed queries, paged, causal, no LSE */
                a.seqlen_q = again ? 333 : 300, a.seqlen_k = 1500, a.cu_seqlens_q = CU_ + off, a.causal = 1;
                a.lse = 0;
                break;
            case 3: /* speculative decoding, GQA 8: 4 x 8 = 32 rows; one sequence: planned splits */
                a.batch = 1, a.heads = 16, a.kv_heads = 2, a.seqlen_q = 4, a.seqlen_k = 8192;
                a.causal = 1, a.workspace = WS_ + off, a.workspace_bytes = WS_BYTES;
                cap = 8192;
                break;
            case 4: /* negative scale, misaligned rows (no stride facts), a misaligned q */
                a.scale = -a.scale, a.seqlen_q = 3, a.q += 2;
                break;
            case 5: /* MQA prefill, forced 2 splits, packed, combine without LSE */
                a.kv_heads = 1, a.seqlen_q = 100, a.seqlen_k = 1000, a.num_splits = 2, a.lse = 0;
                a.cu_seqlens_q = CU_ + off, a.workspace = WS_ + off, a.workspace_bytes = WS_BYTES;
                break;
            case 6: /* a long prefill chunk, paged, with a workspace: the gathered copy (up to head dim 128) */
                a.seqlen_q = 1024, a.seqlen_k = 1500, a.seqused_k = SU_ + off, a.causal = 1;
                a.workspace = WS_ + off, a.workspace_bytes = WS_BYTES;
                break;
            case 7: /* decode against an e4m3 cache in 16-token pages, per-KV-head scales */
                a.seqlen_q = 2, a.seqlen_k = 2000, a.causal = 1, a.kv_dtype = TC_DTYPE_F8E4M3;
                a.k_scale = SM_ + off, a.v_scale = SM_ + off + 256;
                break;
            }
            kv_dense(&a, cap);
            if (variant == 4) {
                a.stride_qm += 1, a.stride_kn += 1, a.stride_vn += 1;
                a.stride_qb += a.seqlen_q, a.stride_kb += cap, a.stride_vb += cap;
            }
            if (variant == 1 || variant == 2 || variant == 6 || variant == 7) { /* pages of 16, 64, 32, 16 tokens */
                a.page_size = variant == 1 || variant == 7 ? 16 : variant == 2 ? 64 : 32;
                a.num_pages = again ? 700 : 500, a.block_table = BT_ + off;
                a.stride_bt = (a.seqlen_k + a.page_size - 1) / a.page_size + (again ? 8 : 0);
                a.stride_kb = a.stride_vb = a.page_size * a.kv_heads * a.head_dim;
            }
            int before = num_seen;
            CHECK_EQ_INT(tc_attention_kvcache(FAKE_CTX, NULL, &a), TC_OK);
            bool split = variant == 1 || variant == 3 || variant == 5;
            bool gathered = variant == 6 && a.head_dim <= 128;
            tc_attention_kvcache_plan plan;
            CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &plan), TC_OK);
            /* variant 2's chunks (300 queries) read the pages, TMA boxes of 64 tokens, with a producer warpgroup
             * up to head dim 128, with or without a workspace */
            CHECK_EQ_INT(plan.gathered, gathered);
            if (variant == 2) {
                CHECK_EQ_INT(cx(&seen[before].plan, "PAGED"), 1);
                CHECK_EQ_INT(seen[before].plan.warp_specialize, a.head_dim <= 128);
            }
            if (variant != 6)
                CHECK_EQ_INT(num_seen - before, split ? 2 : 1);
            else /* the copy, then the attention, and the combine if the plan splits */
                CHECK_EQ_INT(num_seen - before, (gathered ? 1 : 0) + 1 + (plan.num_splits > 1 ? 1 : 0));
            if (split && num_seen - before == 2)
                CHECK_EQ_STR(seen[before + 1].kernel, "attention_kvcache_combine");
            if (gathered && num_seen - before >= 2) {
                CHECK_EQ_STR(seen[before].kernel, "kvcache_gather");
                CHECK_EQ_STR(seen[before + 1].kernel, "attention_kvcache");
                CHECK_EQ_INT(cx(&seen[before + 1].plan, "PAGED"), 0);
                CHECK_EQ_INT(cx(&seen[before].plan, "PAGE"), 32);
            }
            /* the cache append of the same shapes */
            int64_t es = a.head_dim % 8 ? 1 : 0; /* head dim 40: rows of 40 elements, multiples of 8 */
            int64_t n = a.kv_heads * a.head_dim;
            if (variant == 7) /* the e4m3 cache's quantizing append, its scales */
                CHECK_EQ_INT(tc_kvcache_append_fp8(FAKE_CTX, NULL, a.dtype, TC_DTYPE_F8E4M3, a.k_scale, a.v_scale,
                                                   KC_ + off, VC_ + off, KN_ + off, VN_ + off, SM_ + off,
                                                   again ? 300 : 37, a.kv_heads, a.head_dim, 16, 100, n + es,
                                                   a.head_dim, n, a.head_dim, 16 * n, n, a.head_dim, 16 * n, n,
                                                   a.head_dim),
                             TC_OK);
            else
                CHECK_EQ_INT(tc_kvcache_append(FAKE_CTX, NULL, a.dtype, KC_ + off, VC_ + off, KN_ + off, VN_ + off,
                                               SM_ + off, again ? 300 : 37, a.kv_heads, a.head_dim, 16, 100, n + es,
                                               a.head_dim, n, a.head_dim, 16 * n, n, a.head_dim, 16 * n, n,
                                               a.head_dim),
                             TC_OK);
        }
}

TEST(test_kvcache_launches_compile) {
    ptx_check_begin();
    rt_attention_launch_hook = checking_hook;
    compiling = true;
    num_seen = 0;
    every_call(false);
    compiling = false;
    rt_attention_launch_hook = NULL;
    CHECK(num_seen >= 4 * 8 * 2);
    int combines = 0, appends = 0, gathers = 0;
    for (int i = 0; i < num_seen; i++) {
        combines += strcmp(seen[i].kernel, "attention_kvcache_combine") == 0;
        appends += strcmp(seen[i].kernel, "kvcache_append") == 0;
        gathers += strcmp(seen[i].kernel, "kvcache_gather") == 0;
    }
    /* variants 1, 3 and 5 at every head dim; 6 (128 programs of 128 rows for 132 SMs) where the plan splits it */
    CHECK_EQ_INT(combines, 4 * 3 + 2);
    CHECK_EQ_INT(appends, 4 * 8);
    CHECK_EQ_INT(gathers, 3); /* head dims 40, 64 and 128 */
    CHECK(seen_kernel(0, "attention_kvcache") != NULL);
    CHECK(ptx_check_end("stdlib_kvcache") >= 30);
}

/* Each launch's request is memoizable, and the memo tells requests apart as
 * tc_jit does: equal memo keys exactly where tc_jit's keys are equal; a
 * call made again with other addresses and sizes that give the same facts
 * gives the same keys. */
TEST(test_kvcache_memo_keys) {
    rt_attention_launch_hook = checking_hook;
    num_seen = 0;
    every_call(false);
    int first = num_seen;
    every_call(true);
    rt_attention_launch_hook = NULL;
    CHECK_EQ_INT(num_seen, 2 * first);
    int mismatched = 0, distinct = 0;
    for (int i = 0; i < num_seen; i++) {
        CHECK(seen[i].memo.len > 0);
        bool new_key = true;
        for (int j = 0; j < num_seen; j++) {
            bool same_memo = rt_stdlib_key_equal(&seen[i].memo, &seen[j].memo);
            bool same_jit = memcmp(seen[i].jit, seen[j].jit, 32) == 0;
            if (j < i && same_memo)
                new_key = false;
            if (same_memo != same_jit && mismatched++ < 5)
                fprintf(stderr, "  launches %d and %d: memo keys %s, tc_jit keys %s\n", i, j,
                        same_memo ? "equal" : "differ", same_jit ? "equal" : "differ");
        }
        distinct += new_key;
    }
    CHECK_EQ_INT(mismatched, 0);
    for (int i = 0; i < first && i + first < num_seen; i++) {
        CHECK_EQ_STR(seen[i].kernel, seen[i + first].kernel);
        CHECK(rt_stdlib_key_equal(&seen[i].memo, &seen[i + first].memo));
    }
    /* the kinds of call are distinct specializations */
    CHECK(distinct >= 30);
    CHECK(distinct <= first);
}

/* The gathered prefill: a paged cache, chunks of 1024 queries or more (or
 * pages TMA does not take as boxes), head dim up to 128, on sm_90a
 * (plan_for's target) and only then. */
TEST(test_kvcache_gathered_plan) {
    tc_attention_kvcache_plan p;
    tc_attention_kvcache_args a = kv_paged();
    a.seqlen_q = 40; /* 40 x 4 query heads: 160 rows, a short chunk: the pages themselves, as TMA boxes */
    kv_dense(&a, 512);
    a.stride_kb = a.stride_vb = 16 * 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 0);
    CHECK_EQ_INT(p.attention.warp_specialize, 1);
    a.page_size = 12, a.stride_kb = a.stride_vb = 12 * 2 * 64; /* pages of 12 tokens are no TMA boxes */
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 1);
    a.page_size = 16, a.stride_kb = a.stride_vb = 16 * 2 * 64 + 4; /* nor are pages 8 bytes apart */
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 1);
    a.seqlen_q = 1024; /* a long chunk: the copy */
    kv_dense(&a, 512);
    a.stride_kb = a.stride_vb = 16 * 2 * 64;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 1);
    CHECK_EQ_INT(p.kv_head_stride, 64);
    CHECK_EQ_INT(p.gather.grid.x, 5); /* 300 keys in 64s */
    CHECK_EQ_INT(p.gather.grid.y, 4); /* batch 2 x 2 KV heads */
    CHECK_EQ_INT((long long)p.k_offset % 256, 0);
    CHECK_EQ_INT((long long)(p.v_offset - p.k_offset), 2 * 300 * 2 * 64 * 2); /* 153600: a multiple of 256 */
    CHECK((long long)p.workspace_bytes >= (long long)p.v_offset + 2 * 300 * 2 * 64 * 2);
    CHECK_EQ_INT(p.attention.warp_specialize, 1); /* the copy is contiguous: a producer warpgroup */
    a.seqlen_q = 1030;
    a.head_dim = 80; /* rows of 80 elements, kept 16-byte aligned: 80 */
    kv_dense(&a, 512);
    a.stride_kb = a.stride_vb = 16 * 2 * 80;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 1);
    CHECK_EQ_INT(p.kv_head_stride, 80);
    a.head_dim = 100;
    kv_dense(&a, 512);
    a.stride_kb = a.stride_vb = 16 * 2 * 100;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.kv_head_stride, 104);
    a.head_dim = 256; /* head dim 256 keeps the pages */
    kv_dense(&a, 512);
    a.stride_kb = a.stride_vb = 16 * 2 * 256;
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 0);
    a = kv_paged(); /* decode: 4 x 4 rows */
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 0);
    a = kv_args(); /* contiguous */
    a.seqlen_q = 40;
    kv_dense(&a, 512);
    CHECK_EQ_INT(tc_attention_kvcache_plan_for(&a, 132, &p), TC_OK);
    CHECK_EQ_INT(p.gathered, 0);
    CHECK_EQ_INT(p.attention.warp_specialize, 1);
}

UNIT_SUITE(stdlib_kvcache, test_kvcache_validation, test_kvcache_append_validation, test_kvcache_append_rope_validation,
           test_kvcache_gathered_plan, test_kvcache_plans,
           test_kvcache_launches, test_kvcache_launches_compile, test_kvcache_memo_keys)
