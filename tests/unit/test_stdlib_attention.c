/*
 * test_stdlib_attention.c — tc_attention_fwd (stdlib/) without a GPU:
 *
 *  - the plans (head-dim tile, BM, BN, warps, stages, grid) for each head dim;
 *  - every invalid argument is TC_ERROR_INVALID_ARGUMENT with a message
 *    naming it, and nothing is launched (a fake context is never touched);
 *  - with rt_attention_launch_hook in place of tc_jit + tc_launch, each
 *    launch's arguments match the kernel's runtime signature by position and
 *    name, the alignment facts follow the arguments, and every distinct
 *    specialization the entry point picks (head dims 8, 32, 40, 64, 96, 128,
 *    256; f16 and bf16; causal or not; varlen or not; both memory layouts;
 *    misaligned strides) compiles to PTX for sm_90a, accepted by ptxas where
 *    found;
 *  - the order of the programs (launch_block, launch_head in lib/, run by
 *    the interpreter): a permutation of the grid, head_group heads at a
 *    time, each group's blocks in order; and the head_group the entry
 *    points pass (causal launches of one program a tile only).
 */
#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"
#include "stdlib_test_util.h"
#include "unit.h"

#include "ir_test_util.h"
#include "tilec/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t cx(const tc_attention_plan *p, const char *name) {
    return constexpr_value(p->constexprs, p->num_constexprs, name);
}

TEST(test_attention_plans) {
    static const struct {
        int64_t head_dim;
        int d, bm, bn, warps, stages;
    } want[] = {
        {1, 16, 64, 64, 4, 3},      {8, 16, 64, 64, 4, 3},     {32, 32, 64, 64, 4, 3},
        {40, 64, 64, 64, 4, 3},     {64, 64, 64, 64, 4, 3},    {96, 128, 128, 128, 8, 2},
        {128, 128, 128, 128, 8, 2}, {200, 256, 128, 64, 8, 2}, {256, 256, 128, 64, 8, 2},
    }; /* causal, 17 keys: head dim 256 warp-specialized, two consumer warpgroups; 128 the same on BN 128 as
        * persistent programs; 64 and below 64-row programs of one warpgroup */
    /* head dim 128 takes 128 keys per step on two warpgroups and a producer without causal masking (on
     * sm_90a; tc_attention_plan_for plans for it; causal up to 1024 keys: below); EVEN_N with whole key blocks up to
     * head dim 64, and at 128 up to 2048 keys (see stdlib/attention.c) */
    tc_attention_plan full;
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 2, 8, 2, 1000, 17, 128, 0, 0, &full), TC_OK);
    CHECK_EQ_INT(full.block_n, 128);
    CHECK_EQ_INT(full.num_warps, 8);
    CHECK_EQ_INT(full.warp_specialize, 1);
    static const struct {
        int64_t seqlen_k, head_dim;
        int causal, varlen, even_n;
    } even[] = {
        {4096, 128, 0, 0, 0}, {1024, 128, 0, 0, 1}, {1000, 128, 0, 0, 0}, /* 1000 keys: a partial last block */
        {1024, 256, 0, 0, 0}, {4096, 64, 0, 0, 1},  {4096, 32, 0, 0, 1},
        {4000, 64, 0, 0, 0},  /* a partial last block */
        {4096, 128, 1, 0, 1}, /* causal: whole blocks, any head dim */
        {4096, 64, 1, 1, 0},  /* varlen */
    };
    for (size_t i = 0; i < sizeof even / sizeof even[0]; i++) {
        CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 2, 8, 2, 1000, even[i].seqlen_k, even[i].head_dim,
                                           even[i].causal, even[i].varlen, &full),
                     TC_OK);
        CHECK_EQ_INT(cx(&full, "EVEN_N"), even[i].even_n);
    }
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 2, 8, 2, 1000, 17, 256, 0, 0, &full), TC_OK);
    CHECK_EQ_INT(full.block_n, 64);
    CHECK_EQ_INT(full.num_stages, 2);
    /* the mma.sync targets: head dim 256 on 128 x 32 tiles, 8 warps, 3 stages; the rest as on sm_90a without a producer
     */
    static const char *const ampere[] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2; a++) {
        tc_attention_plan p, h;
        rt_attention_plan(TC_DTYPE_BF16, 2, 8, 1000, 4096, 256, true, false, ampere[a], -1, -1, &p);
        CHECK_EQ_INT(p.block_m, 128);
        CHECK_EQ_INT(p.block_n, 32);
        CHECK_EQ_INT(p.num_warps, 8);
        CHECK_EQ_INT(p.num_stages, 3);
        CHECK_EQ_INT(p.grid.x, 8);
        rt_attention_plan(TC_DTYPE_BF16, 2, 8, 1000, 4096, 128, true, false, ampere[a], -1, -1, &p);
        rt_attention_plan(TC_DTYPE_BF16, 2, 8, 1000, 4096, 128, true, false, "sm_90a", 0, -1, &h);
        CHECK_EQ_INT(p.block_m, h.block_m);
        CHECK_EQ_INT(p.block_n, h.block_n);
        CHECK_EQ_INT(p.num_warps, h.num_warps);
        /* a producer warpgroup only where there is TMA */
        rt_attention_plan(TC_DTYPE_BF16, 2, 8, 1000, 4096, 128, true, false, ampere[a], 1, -1, &p);
        CHECK_EQ_INT(p.warp_specialize, 0);
        CHECK_EQ_INT(p.num_warps, h.num_warps);
        /* 64-row programs at head dim 64 are the wgmma plan's; mma.sync keeps 128 */
        rt_attention_plan(TC_DTYPE_F16, 2, 8, 1000, 1024, 64, false, false, ampere[a], -1, -1, &p);
        rt_attention_plan(TC_DTYPE_F16, 2, 8, 1000, 1024, 64, false, false, "sm_90a", -1, -1, &h);
        CHECK_EQ_INT(p.block_m, 128);
        CHECK_EQ_INT(h.block_m, 64);
        CHECK_EQ_INT(h.grid.x, 16);
    }
    /* a producer warpgroup and two consumer warpgroups on sm_90a (BN 128 and 3 stages up to head dim 128,
     * BN 64 and 2 stages at 256): by default at head dims 128 and 256, at 64 from 4096 keys; below 64
     * never; TILEC_WARP_SPECIALIZE=1 (ws 1) everywhere, 0 nowhere; persistent programs on 2 stages at head dim
     * 128 without packed sequences up to 8192 keys, else not */
    for (int ws = -1; ws <= 1; ws++)
        for (int d = 32; d <= 256; d *= 2)
            for (int64_t keys = 2048; keys <= 16384; keys *= 2)
                for (int causal = 0; causal <= 1; causal++)
                    for (int varlen = 0; varlen <= 1; varlen++) {
                        tc_attention_plan p;
                        rt_attention_plan(TC_DTYPE_F16, 2, 8, 1000, keys, d, causal, varlen, "sm_90a", ws, -1, &p);
                        bool pays = d >= 128 || (d >= 64 && keys >= 4096);
                        bool on = ws == 1 || (ws < 0 && pays);
                        bool pers = on && d == 128 && !varlen && keys <= 8192;
                        CHECK_EQ_INT(p.warp_specialize, on);
                        CHECK_EQ_INT(p.block_m, on ? 128 : d <= 64 ? 64 : d <= 128 ? 128 : 64);
                        CHECK_EQ_INT(p.block_n, on && d <= 128 ? 128 : 64);
                        CHECK_EQ_INT(p.num_warps, on ? 8 : 4);
                        CHECK_EQ_INT(p.num_stages, d > 128 || pers ? 2 : 3);
                        CHECK_EQ_INT(cx(&p, "BN"), p.block_n);
                        CHECK_EQ_INT(p.persistent, pers);
                        CHECK_EQ_INT(p.min_programs_per_sm, 0);
                    }
    /* causal head dim 128 (and 80, 96) up to 1024 keys with a producer and packed sequences: one consumer
     * warpgroup of 64 rows, BN 64, 2 stages, two programs per SM; not without causal masking, from 1025 keys,
     * at other head dims, without a producer, nor without packed sequences (persistent programs instead) */
    static const struct {
        int64_t keys, head_dim;
        int causal, ws, two, varlen;
    } two[] = {
        {1024, 128, 1, -1, 1, 1}, {1, 128, 1, -1, 1, 1},    {1000, 80, 1, -1, 1, 1},  {1024, 96, 1, 1, 1, 1},
        {1025, 128, 1, -1, 0, 1}, {2048, 128, 1, -1, 0, 1}, {1024, 128, 0, -1, 0, 1}, {1024, 128, 1, 0, 0, 1},
        {1024, 64, 1, -1, 0, 1},  {1024, 256, 1, -1, 0, 1}, {1024, 64, 1, 1, 0, 1},   {1024, 128, 1, -1, 0, 0},
        {1, 128, 1, -1, 0, 0},
    };
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        tc_attention_plan p;
        rt_attention_plan(TC_DTYPE_BF16, 2, 8, 1000, two[i].keys, two[i].head_dim, two[i].causal, two[i].varlen,
                          "sm_90a", two[i].ws, -1, &p);
        CHECK_EQ_INT(p.min_programs_per_sm, two[i].two ? 2 : 0);
        if (two[i].two) {
            CHECK_EQ_INT(p.warp_specialize, 1);
            CHECK_EQ_INT(p.block_m, 64);
            CHECK_EQ_INT(p.block_n, 64);
            CHECK_EQ_INT(p.num_warps, 4);
            CHECK_EQ_INT(p.num_stages, 2);
            CHECK_EQ_INT(p.grid.x, 16);
        }
    }
    /* TILEC_PERSISTENT (pers 0 or 1) forces persistent programs off, the plans then those without (two
     * programs per SM for causal head dim 128 up to 1024 keys, 3 stages without causal masking), or on
     * wherever there is a producer and no packed sequences, on the plan's own stages */
    static const struct {
        int64_t keys, head_dim;
        int causal, varlen, pers, persistent, stages, two;
    } forced[] = {
        {1024, 128, 1, 0, 0, 0, 2, 1},  {2048, 128, 0, 0, 0, 0, 3, 0}, {1024, 128, 1, 0, -1, 1, 2, 0},
        {16384, 128, 0, 0, 1, 1, 3, 0}, {1024, 256, 1, 0, 1, 1, 2, 0}, {1024, 64, 0, 0, 1, 0, 3, 0},
        {4096, 128, 0, 1, 1, 0, 3, 0},
    };
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++) {
        tc_attention_plan p;
        rt_attention_plan(TC_DTYPE_F16, 2, 8, 1000, forced[i].keys, forced[i].head_dim, forced[i].causal,
                          forced[i].varlen, "sm_90a", -1, forced[i].pers, &p);
        CHECK_EQ_INT(p.persistent, forced[i].persistent);
        CHECK_EQ_INT(p.num_stages, forced[i].stages);
        CHECK_EQ_INT(p.min_programs_per_sm, forced[i].two ? 2 : 0);
    }
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_attention_plan p;
        CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 2, 8, 2, 1000, 17, want[i].head_dim, 1, 0, &p), TC_OK);
        CHECK_EQ_STR(p.file, "attention.tile");
        CHECK_EQ_STR(p.kernel, "attention_fwd");
        CHECK_EQ_INT(p.num_constexprs, 8);
        CHECK_EQ_INT(p.block_d, want[i].d);
        CHECK_EQ_INT(p.block_m, want[i].bm);
        CHECK_EQ_INT(p.block_n, want[i].bn);
        CHECK_EQ_INT(p.num_warps, want[i].warps);
        CHECK_EQ_INT(p.num_stages, want[i].stages);
        CHECK_EQ_INT(p.min_programs_per_sm, 0);
        CHECK_EQ_INT(p.persistent, want[i].d == 128);
        CHECK_EQ_INT(cx(&p, "HEAD_DIM"), want[i].head_dim);
        CHECK_EQ_INT(cx(&p, "D"), want[i].d);
        CHECK_EQ_INT(cx(&p, "BM"), want[i].bm);
        CHECK_EQ_INT(cx(&p, "BN"), want[i].bn);
        CHECK_EQ_INT(cx(&p, "CAUSAL"), 1);
        CHECK_EQ_INT(cx(&p, "VARLEN"), 0);
        CHECK_EQ_INT(cx(&p, "EVEN_N"), 0); /* 17 keys */
        CHECK_EQ_INT(cx(&p, "T"), TC_DTYPE_F16);
        CHECK_EQ_INT(p.grid.x, (1000 + want[i].bm - 1) / want[i].bm);
        CHECK_EQ_INT(p.grid.y, 16);
        CHECK_EQ_INT(p.grid.z, 1);
    }
    tc_attention_plan p;
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_BF16, 1, 1, 1, 1, 1, 64, 0, 1, &p), TC_OK);
    CHECK_EQ_INT(p.grid.x, 1);
    CHECK_EQ_INT(cx(&p, "VARLEN"), 1);
    CHECK_EQ_INT(cx(&p, "CAUSAL"), 0);
    CHECK_EQ_INT(cx(&p, "T"), TC_DTYPE_BF16);
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 1, 1, 1, 1, 1, 64, 0, 0, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F32, 1, 1, 1, 1, 1, 64, 0, 0, &p), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 1, 1, 1, 1, 1, 257, 0, 0, &p), TC_ERROR_INVALID_ARGUMENT);
}

static tc_status counting_hook(const RtAttentionLaunch *l) {
    (void)l;
    stdlib_hook_calls++;
    return TC_ERROR_UNSUPPORTED; /* a call that got through validation */
}

/* [batch 2, seq 100, heads 8 (kv 2), dim 64], (b, s, h, d) layout */
#define O_ 0x100000
#define L_ 0x200000
#define Q_ 0x300000
#define K_ 0x400000
#define V_ 0x500000
#define QS 51200, 64, 512
#define KS 12800, 64, 128
static tc_status att(tc_context *ctx, tc_dtype dt, CUdeviceptr o, CUdeviceptr l, CUdeviceptr q, int64_t b, int64_t h,
                     int64_t kvh, int64_t sq, int64_t sk, int64_t d, int64_t qb, int64_t qh, int64_t qm, int64_t ob,
                     int64_t oh, int64_t om, CUdeviceptr cq, CUdeviceptr ck, float scale) {
    return tc_attention_fwd(ctx, NULL, dt, o, l, q, K_, V_, b, h, kvh, sq, sk, d, qb, qh, qm, KS, KS, ob, oh, om, cq,
                            ck, scale, 1);
}
#define ATT att

TEST(test_attention_validation) {
    const tc_dtype F16 = TC_DTYPE_F16;
    rt_attention_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    CHECK_EQ_INT(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(ATT(FAKE_CTX, TC_DTYPE_BF16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0x600000, 0x700000, 0.125f),
                 TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(stdlib_hook_calls, 2);
    CHECK_INVALID(ATT(NULL, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "tc_attention_fwd: ctx is NULL");
    CHECK_INVALID(ATT(FAKE_CTX, TC_DTYPE_F32, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 0, QS, QS, 0, 0, 0.125f), "head_dim (0)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 257, QS, QS, 0, 0, 0.125f),
                  "head_dim (257) must be in 1..256");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 0, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f), "batch (0)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 0, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f), "heads (0)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 0, 100, 100, 64, QS, QS, 0, 0, 0.125f), "kv_heads (0)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 3, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "kv_heads (3) does not divide heads (8)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 0, 100, 64, QS, QS, 0, 0, 0.125f), "seqlen_q (0)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, (int64_t)1 << 31, 64, QS, QS, 0, 0, 0.125f),
                  "seqlen_k (2147483648)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 10000, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "batch * heads (80000) must be at most 65535");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0x600000, 0, 0.125f),
                  "cu_seqlens_q and cu_seqlens_k must both be given");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0x600002, 0x700000, 0.125f),
                  "cu_seqlens_q (0x600002) is not aligned to its 4-byte elements");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, INFINITY), "scale (inf)");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, NAN), "must be finite");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, 51200, -64, 512, QS, 0, 0, 0.125f),
                  "q's strides (stride_qb 51200, stride_qh -64, stride_qm 512) must be >= 0");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, (int64_t)1 << 61, 64, 512, QS, 0, 0, 0.125f),
                  "q's strides (stride_qb 2305843009213693952, stride_qh 64, stride_qm 512) with 2 x 8 x 100 x 64 "
                  "elements overflow a 64-bit offset");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, 51200, 64, 500, 0, 0, 0.125f),
                  "o's strides (stride_ob 51200, stride_oh 64, stride_om 500) give two of its elements the same");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, QS, 51200, 32, 512, 0, 0, 0.125f),
                  "o's strides");
    CHECK_INVALID(ATT(FAKE_CTX, F16, 0, L_, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f), "o is 0");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_ + 2, Q_, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "lse (0x200002) is not aligned to its 4-byte elements");
    CHECK_INVALID(ATT(FAKE_CTX, F16, O_, L_, Q_ + 1, 2, 8, 2, 100, 100, 64, QS, QS, 0, 0, 0.125f),
                  "q (0x300001) is not aligned");
    CHECK_INVALID(tc_attention_fwd(FAKE_CTX, NULL, F16, O_, L_, Q_, 0, V_, 2, 8, 2, 100, 100, 64, QS, KS, KS, QS, 0, 0,
                                   0.125f, 0),
                  "k is 0");
    /* the (b, h, s, d) layout, one head of dim 64 with seq stride 64: distinct */
    CHECK_EQ_INT(ATT(FAKE_CTX, F16, O_, L_, Q_, 2, 8, 2, 100, 100, 64, 51200, 6400, 64, 51200, 6400, 64, 0, 0, 1.0f),
                 TC_ERROR_UNSUPPORTED);
    rt_attention_launch_hook = NULL;
}

/* ---- what the entry point launches, and that it compiles ---- */

static int launches;

/* What checking_hook saw of the last launch's kernel, if it compiled it: the
 * parameters its tensor maps cover. */
static bool compiled;
static unsigned map_bases;

static tc_status checking_hook(const RtAttentionLaunch *l) {
    launches++;
    CHECK(l->ctx == FAKE_CTX);
    CHECK(strncmp(l->req.kernel, "attention_", 10) == 0);
    CHECK_EQ_INT(l->options.num_warps, l->plan.num_warps);
    CHECK_EQ_INT(l->options.num_stages, l->plan.num_stages);
    CHECK(l->req.divisibility == l->divisibility && l->req.num_divisibility == l->num_args);
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
    CHECK_EQ_INT(k->num_params, l->num_args);
    for (size_t i = 0; i < k->num_params && i < l->num_args; i++) {
        CHECK_EQ_STR(l->names[i], k->params[i].name);
        if (k->params[i].is_pointer)
            CHECK(l->args[i] == &l->ptrs[i]);
        else if (k->params[i].dtype == TC_DTYPE_I32)
            CHECK(l->args[i] == &l->i32s[i]);
        else if (k->params[i].dtype == TC_DTYPE_I64)
            CHECK(l->args[i] == &l->i64s[i]);
        else
            CHECK(k->params[i].dtype == TC_DTYPE_F32 && l->args[i] == &l->f32s[i]);
    }
    char key[512];
    int off = ptx_key_plan(key, sizeof key, l->req.kernel, l->plan.num_warps, l->plan.num_stages, l->plan.constexprs,
                           l->plan.num_constexprs);
    ptx_key_facts(key, sizeof key, off, &l->options, l->divisibility, l->num_args);
    tc_binary *bin =
        ptx_compile_once(key, &l->req, &l->options, k, l->divisibility, l->num_args, l->plan.num_warps, diags);
    map_bases = 0; /* the parameters the tensor maps (TMA) cover, bit i for parameter i */
    for (size_t i = 0; bin && i < tc_binary_kernel_num_tensor_maps(bin, 0); i++) {
        tc_tensor_map_desc m;
        CHECK_EQ_INT(tc_binary_kernel_tensor_map(bin, 0, i, &m), TC_OK);
        CHECK(m.base >= 0 && (size_t)m.base < k->num_params && k->params[m.base].is_pointer);
        map_bases |= 1u << m.base;
    }
    compiled = bin != NULL;
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    rt_meta_free(&sig);
    return TC_OK;
}

TEST(test_attention_launches_compile) {
    int with_maps = 0;
    ptx_check_begin();
    rt_attention_launch_hook = checking_hook;
    static const int64_t dims[] = {8, 32, 40, 64, 96, 128, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int variant = 0; variant < 4; variant++) {
            int64_t D = dims[di], B = 2, H = 8, KVH = variant == 2 ? 1 : 2, S = 1000;
            tc_dtype t = (di + (size_t)variant) % 2 ? TC_DTYPE_BF16 : TC_DTYPE_F16;
            bool bhsd = variant == 1, varlen = variant == 3, causal = variant >= 2 || di % 2;
            /* (b, s, h, d) or (b, h, s, d) */
            int64_t qb = S * H * D, qh = bhsd ? S * D : D, qm = bhsd ? D : H * D;
            int64_t kb = S * KVH * D, kh = bhsd ? S * D : D, kn = bhsd ? D : KVH * D;
            CUdeviceptr cq = varlen ? 0x600000 : 0, ck = varlen ? 0x700000 : 0;
            launches = 0;
            CHECK_EQ_INT(tc_attention_fwd(FAKE_CTX, NULL, t, O_, L_, Q_, K_, V_, B, H, KVH, S, S + 17, D, qb, qh, qm,
                                          kb, kh, kn, kb, kh, kn, qb, qh, qm, cq, ck, 1.0f / sqrtf((float)D), causal),
                         TC_OK);
            CHECK_EQ_INT(launches, 1);
            /* sm_90a: K and V (parameters 3 and 4) come by TMA in the fixed-length tensor-core kernels;
             * O (0, stored) never */
            with_maps += compiled && map_bases != 0;
            if (compiled)
                CHECK((map_bases & 1u) == 0);
            if (compiled && D >= 64 && !varlen)
                CHECK((map_bases & (3u << 3)) == (3u << 3));
        }
    fprintf(stderr, "  stdlib_attention: %d specializations copy K and V with TMA\n", with_maps);
    CHECK(with_maps >= 8);
    rt_attention_launch_hook = NULL;
    CHECK(ptx_check_end("stdlib_attention") >= 14);
}

/* ---- the backward pass ---- */

TEST(test_attention_bwd_plans) {
    /* sm_90a, causal: dkdv BN 128 on 8 warps up to head dim 128 with BM 128 up to 32 and BM 64 at 64 and 128,
     * BN 64 and BM 64 at 256; dq BM 128 and BN 128 up to 128, BM 64 and BN 64 at 256 */
    static const struct {
        int64_t head_dim;
        int d, dkdv_bn, dkdv_bm, dq_bm, dq_bn;
    } want[] = {{1, 16, 128, 128, 128, 128},  {32, 32, 128, 128, 128, 128}, {40, 64, 128, 64, 128, 128},
                {80, 128, 128, 64, 128, 128}, {96, 128, 128, 64, 128, 128}, {128, 128, 128, 64, 128, 128},
                {200, 256, 64, 64, 64, 64},   {256, 256, 64, 64, 64, 64}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_attention_bwd_plan p;
        CHECK_EQ_INT(tc_attention_bwd_plan_for(TC_DTYPE_BF16, 2, 8, 2, 1000, 300, want[i].head_dim, 1, 0, 0, &p),
                     TC_OK);
        /* the default: dQ by atomics (TMA reductions) up to head dim 128, its own kernel at 256 */
        bool atomic = want[i].d <= 128;
        CHECK_EQ_INT(p.dq_atomic, atomic);
        CHECK_EQ_INT(cx(&p.dkdv, "ATOMIC_DQ"), atomic);
        CHECK_EQ_INT(cx(&p.preprocess, "ATOMIC_DQ"), atomic);
        CHECK_EQ_STR(p.dq.kernel, atomic ? "attention_bwd_dq_convert" : "attention_bwd_dq");
        /* the workspace: Delta and LSE in log2 units, f32 per query row (rows of 1000 padded to 1024), and with
         * atomics the accumulator, D f32 per query row */
        size_t bytes = 1, delta = 2 * ((2 * 8 * 1024 * 4 + 255) / 256 * 256);
        CHECK_EQ_INT(
            tc_attention_bwd_workspace_size(TC_DTYPE_BF16, 2, 8, 2, 1000, 300, want[i].head_dim, 1, 0, 0, &bytes),
            TC_OK);
        CHECK_EQ_INT(bytes, p.workspace_bytes);
        CHECK_EQ_INT(bytes, atomic ? delta + (2 * 8 * 1000 * (size_t)want[i].d * 4 + 255) / 256 * 256 : delta);
        /* the dQ kernel's tiles, as TILEC_ATTENTION_BWD_DQ=kernel gives them */
        rt_attention_bwd_plan(TC_DTYPE_BF16, 2, 8, 2, 1000, 300, want[i].head_dim, true, false, false, "sm_90a", 0, -1,
                              &p);
        CHECK_EQ_INT(p.dq_atomic, 0);
        CHECK_EQ_STR(p.preprocess.file, "attention_bwd.tile");
        CHECK_EQ_STR(p.preprocess.kernel, "attention_bwd_preprocess");
        CHECK_EQ_STR(p.dkdv.kernel, "attention_bwd_dkdv");
        CHECK_EQ_STR(p.dq.kernel, "attention_bwd_dq");
        CHECK_EQ_INT(p.dkdv.block_d, want[i].d);
        CHECK_EQ_INT(cx(&p.dkdv, "D"), want[i].d);
        CHECK_EQ_INT(cx(&p.dkdv, "HEAD_DIM"), want[i].head_dim);
        CHECK_EQ_INT(cx(&p.dkdv, "BN"), want[i].dkdv_bn);
        CHECK_EQ_INT(cx(&p.dkdv, "BM"), want[i].dkdv_bm);
        CHECK_EQ_INT(cx(&p.dkdv, "CAUSAL"), 1);
        CHECK_EQ_INT(cx(&p.dkdv, "ATOMIC_DQ"), 0);
        CHECK_EQ_INT(cx(&p.preprocess, "ATOMIC_DQ"), 0);
        CHECK_EQ_INT(cx(&p.dkdv, "T"), TC_DTYPE_BF16);
        CHECK_EQ_INT(p.dkdv.num_warps, 8);
        CHECK_EQ_INT(p.dkdv.grid.x, (300 + want[i].dkdv_bn - 1) / want[i].dkdv_bn);
        CHECK_EQ_INT(p.dkdv.grid.y, 2 * 2); /* batch * kv_heads: a program sums its KV head's group */
        CHECK_EQ_INT(cx(&p.dq, "BM"), want[i].dq_bm);
        CHECK_EQ_INT(cx(&p.dq, "BN"), want[i].dq_bn);
        /* a producer with BN 128 (every head dim up to 128 here: causal), and at head dim 256, on 2 stages;
         * dK/dV's at 256 */
        CHECK_EQ_INT(p.dq.warp_specialize, 1);
        CHECK_EQ_INT(p.dq.num_stages, 2);
        CHECK_EQ_INT(p.dkdv.warp_specialize, 1);
        CHECK_EQ_INT(p.dq.grid.x, (1000 + want[i].dq_bm - 1) / want[i].dq_bm);
        CHECK_EQ_INT(p.dq.grid.y, 2 * 8);
        CHECK_EQ_INT(p.preprocess.grid.y, 2 * 8);
        CHECK_EQ_INT(p.preprocess.grid.x, (1024 + p.preprocess.block_m - 1) / p.preprocess.block_m); /* padded rows */
        CHECK_EQ_INT(p.workspace_bytes, delta); /* Delta and LSE alone */
    }
    /* the dQ kernel wherever atomics could not be TMA reductions or the call is deterministic: varlen, the
     * mma.sync targets, deterministic; the workspace depends on the arguments, not on the target */
    for (int c = 0; c < 4; c++) {
        tc_attention_bwd_plan p;
        bool varlen = c == 0, det = c == 1;
        const char *arch = c == 2 ? "sm_90" : c == 3 ? "sm_80" : "sm_90a";
        rt_attention_bwd_plan(TC_DTYPE_F16, 2, 4, 4, 500, 500, 64, true, varlen, det, arch, -1, -1, &p);
        CHECK_EQ_INT(p.dq_atomic, 0);
        CHECK_EQ_STR(p.dq.kernel, "attention_bwd_dq");
        /* Delta and LSE_LOG2: rows of 500 padded to 512 */
        size_t delta = 2 * ((2 * 4 * 512 * 4 + 255) / 256 * 256);
        CHECK_EQ_INT(p.lse_offset, delta / 2);
        CHECK_EQ_INT(p.workspace_bytes, varlen || det ? delta : delta + (2 * 4 * 500 * 64 * 4 + 255) / 256 * 256);
    }
    /* atomics: the dQ accumulator after Delta, f32 rows of the head dim's tile; deterministic excludes them */
    for (int det = 0; det < 2; det++) {
        tc_attention_bwd_plan p;
        rt_attention_bwd_plan(TC_DTYPE_F16, 3, 4, 1, 777, 500, 80, false, false, det, "sm_90a", 1, -1, &p);
        CHECK_EQ_INT(p.dq_atomic, !det);
        CHECK_EQ_INT(cx(&p.dkdv, "ATOMIC_DQ"), !det);
        CHECK_EQ_INT(cx(&p.preprocess, "ATOMIC_DQ"), !det);
        CHECK_EQ_STR(p.dq.kernel, det ? "attention_bwd_dq" : "attention_bwd_dq_convert");
        size_t delta = 2 * ((3 * 4 * 896 * 4 + 255) / 256 * 256); /* Delta and LSE_LOG2, rows of 777 padded to 896 */
        CHECK_EQ_INT(p.delta_offset, 0);
        CHECK_EQ_INT(p.lse_offset, delta / 2);
        CHECK_EQ_INT(p.workspace_bytes, det ? delta : delta + (3 * 4 * 777 * 128 * 4 + 255) / 256 * 256);
        if (!det)
            CHECK_EQ_INT(p.dq_acc_offset, delta);
        rt_attention_bwd_plan(TC_DTYPE_F16, 3, 4, 1, 777, 500, 80, false, false, det, "sm_90a", 0, -1, &p);
        CHECK_EQ_INT(p.dq_atomic, 0);
    }
    /* without causal masking dq keeps BN 64 at head dim 64 (BN 128 from 128 on) */
    for (int hd = 64; hd <= 128; hd += 64) {
        tc_attention_bwd_plan p;
        rt_attention_bwd_plan(TC_DTYPE_F16, 1, 2, 2, 100, 100, hd, false, false, false, "sm_90a", 0, -1, &p);
        CHECK_EQ_INT(cx(&p.dq, "BN"), hd == 64 ? 64 : 128);
        CHECK_EQ_INT(p.dq.warp_specialize, hd == 128);
        CHECK_EQ_INT(cx(&p.dkdv, "BM"), hd == 64 ? 128 : 64);
    }
    /* a producer for dK/dV (2 stages) wherever TMA feeds it: causal or not, deterministic or not; not with
     * packed sequences or on mma.sync; at head dim 256 for dQ's kernel too; TILEC_WARP_SPECIALIZE forces both
     * kernels' either way */
    for (int c = 0; c < 10; c++) {
        tc_attention_bwd_plan p;
        bool causal = c == 1, varlen = c == 2, det = c == 3, sm90 = c == 4;
        int ws = c == 5 || c == 8 ? 1 : c == 6 || c == 9 ? 0 : -1, hd = c == 7 ? 64 : c >= 8 ? 256 : 128;
        rt_attention_bwd_plan(TC_DTYPE_F16, 2, 4, 2, 300, 300, hd, causal, varlen, det, sm90 ? "sm_90" : "sm_90a", -1,
                              ws, &p);
        bool want = !(varlen || sm90 || ws == 0);
        CHECK_EQ_INT(p.dq_atomic, !(varlen || det || sm90 || hd == 256));
        CHECK_EQ_INT(p.dkdv.warp_specialize, want);
        CHECK_EQ_INT(p.dkdv.num_stages, want || hd == 256 ? 2 : 3);
        if (hd == 256)
            CHECK_EQ_INT(p.dq.warp_specialize, want);
        if (ws == 0 || ws == 1) { /* forced: dQ's own kernel follows too */
            rt_attention_bwd_plan(TC_DTYPE_F16, 2, 4, 2, 300, 300, hd, causal, varlen, true, "sm_90a", -1, ws, &p);
            CHECK_EQ_INT(p.dkdv.warp_specialize, ws);
            CHECK_EQ_INT(p.dq.warp_specialize, ws);
            CHECK_EQ_INT(p.dq.num_stages, ws ? 2 : 3);
        }
    }
    /* head dim 256, causal or not: producers in both kernels; not with packed sequences (no TMA: the plain
     * pipeline keeps its 3 stages in dQ's kernel), nor on mma.sync even when forced */
    for (int c = 0; c < 5; c++) {
        tc_attention_bwd_plan p;
        bool varlen = c == 2, sm90 = c >= 3;
        int ws = c == 4 ? 1 : -1;
        rt_attention_bwd_plan(TC_DTYPE_BF16, 1, 2, 2, 77, 99, 200, c == 1, varlen, false, sm90 ? "sm_90" : "sm_90a", -1,
                              ws, &p);
        CHECK_EQ_INT(p.dkdv.warp_specialize, !varlen && !sm90);
        CHECK_EQ_INT(p.dq.warp_specialize, !varlen && !sm90);
        CHECK_EQ_INT(p.dq.num_stages, !varlen && !sm90 ? 2 : 3);
    }
    /* without causal masking dq keeps BN 64 and 3 stages at head dim 64, no producer */
    {
        tc_attention_bwd_plan p;
        rt_attention_bwd_plan(TC_DTYPE_F16, 1, 2, 2, 100, 100, 64, false, false, true, "sm_90a", -1, -1, &p);
        CHECK_EQ_INT(p.dq.warp_specialize, 0);
        CHECK_EQ_INT(p.dq.num_stages, 3);
        CHECK_EQ_INT(p.dkdv.warp_specialize, 1); /* deterministic: no TMA-reduced dQ, a producer all the same */
    }
    /* mma.sync targets: narrower tiles, the same kernels */
    tc_attention_bwd_plan p;
    rt_attention_bwd_plan(TC_DTYPE_F16, 1, 2, 2, 100, 100, 128, true, true, false, "sm_80", -1, -1, &p);
    CHECK_EQ_INT(p.dkdv.block_m, 16);
    CHECK_EQ_INT(p.dkdv.block_n, 64);
    CHECK_EQ_INT(p.dkdv.num_warps, 4);
    CHECK_EQ_INT(cx(&p.dkdv, "VARLEN"), 1);
    size_t bytes = 7;
    CHECK_EQ_INT(tc_attention_bwd_workspace_size(TC_DTYPE_F32, 1, 1, 1, 1, 1, 64, 0, 0, 0, &bytes),
                 TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(bytes, 0);
    CHECK(strstr(tc_last_error(), "tc_attention_bwd_workspace_size: dtype must be") != NULL);
    CHECK_EQ_INT(tc_attention_bwd_workspace_size(TC_DTYPE_F16, 1, 8, 3, 1, 1, 64, 0, 0, 0, &bytes),
                 TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "kv_heads (3) does not divide heads (8)") != NULL);
    CHECK_EQ_INT(tc_attention_bwd_workspace_size(TC_DTYPE_F16, 1, 1, 1, 1, 1, 64, 0, 0, 0, NULL),
                 TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_attention_bwd_plan_for(TC_DTYPE_F16, 1, 1, 1, 1, 1, 64, 0, 0, 0, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_attention_bwd_plan_for(TC_DTYPE_F16, 1, 1, 1, 1, 1, 257, 0, 0, 0, &p), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "tc_attention_bwd_plan_for: head_dim (257) must be in 1..256") != NULL);
}

/* [batch 2, seq 100, heads 8 (kv 2), dim 64], (b, s, h, d) layout, every tensor dense */
#define DQ_ 0x800000
#define DK_ 0x900000
#define DV_ 0xA00000
#define DO_ 0xB00000
#define WS_ 0xC00000
#define WS_BYTES ((size_t)1 << 20)
static tc_status bwd(tc_context *ctx, tc_dtype dt, CUdeviceptr dq, CUdeviceptr dk, CUdeviceptr lse, CUdeviceptr ws,
                     size_t ws_bytes, int64_t b, int64_t h, int64_t kvh, int64_t sq, int64_t d, int64_t dqb,
                     int64_t dqh, int64_t dqm, int64_t dkb, int64_t dkh, int64_t dkn, CUdeviceptr cq, CUdeviceptr ck,
                     float scale) {
    return tc_attention_bwd(ctx, NULL, dt, dq, dk, DV_, DO_, Q_, K_, V_, O_, lse, b, h, kvh, sq, 100, d, QS, KS, KS, QS,
                            QS, dqb, dqh, dqm, dkb, dkh, dkn, KS, cq, ck, scale, 1, 0, ws, ws_bytes);
}

TEST(test_attention_bwd_validation) {
    const tc_dtype F16 = TC_DTYPE_F16;
    rt_attention_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    /* a valid call reaches the first launch (the hook's error stops the others) */
    CHECK_EQ_INT(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                 TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(stdlib_hook_calls, 1);
    /* the forward pass's checks, with its messages under this entry point's name */
    CHECK_INVALID(bwd(NULL, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "tc_attention_bwd: ctx is NULL");
    CHECK_INVALID(bwd(FAKE_CTX, TC_DTYPE_F32, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "tc_attention_bwd: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 257, QS, KS, 0, 0, 0.125f),
                  "head_dim (257) must be in 1..256");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 3, 100, 64, QS, KS, 0, 0, 0.125f),
                  "kv_heads (3) does not divide heads (8)");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 0, 64, QS, KS, 0, 0, 0.125f),
                  "seqlen_q (0)");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 10000, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "batch * heads (80000) must be at most 65535");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0x600000, 0, 0.125f),
                  "cu_seqlens_q and cu_seqlens_k must both be given");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0x600000, 0x700001, 0.125f),
                  "cu_seqlens_k (0x700001) is not aligned to its 4-byte elements");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, NAN),
                  "tc_attention_bwd: scale (nan) must be finite");
    /* the gradients' own strides */
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, 51200, -64, 512, KS, 0, 0, 0.125f),
                  "dq's strides (stride_dqb 51200, stride_dqh -64, stride_dqm 512) must be >= 0");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, 12800, 64, 100, 0, 0, 0.125f),
                  "dk's strides (stride_dkb 12800, stride_dkh 64, stride_dkn 100) give two of its elements the same "
                  "address");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, 51200, 64, 500, KS, 0, 0, 0.125f),
                  "dq's strides (stride_dqb 51200, stride_dqh 64, stride_dqm 500) give two of its elements the same");
    CHECK_INVALID(
        bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, (int64_t)1 << 61, 64, 512, KS, 0, 0, 0.125f),
        "dq's strides (stride_dqb 2305843009213693952, stride_dqh 64, stride_dqm 512) with 2 x 8 x 100 x 64 "
        "elements overflow a 64-bit offset");
    CHECK_INVALID(tc_attention_bwd(FAKE_CTX, NULL, F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, 2, 8, 2, 100, 100, 64,
                                   QS, KS, KS, QS, 51200, 64, -1, QS, KS, KS, 0, 0, 0.125f, 0, 0, WS_, WS_BYTES),
                  "dout's strides (stride_dob 51200, stride_doh 64, stride_dom -1) must be >= 0");
    CHECK_INVALID(tc_attention_bwd(FAKE_CTX, NULL, F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, 2, 8, 2, 100, 100, 64,
                                   QS, KS, KS, QS, QS, QS, KS, 12800, 0, 128, 0, 0, 0.125f, 0, 0, WS_, WS_BYTES),
                  "dv's strides (stride_dvb 12800, stride_dvh 0, stride_dvn 128) give two of its elements the same");
    /* pointers */
    CHECK_INVALID(bwd(FAKE_CTX, F16, 0, DK_, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "tc_attention_bwd: dq is 0");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_ + 1, L_, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "dk (0x900001) is not aligned to its 2-byte elements");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_ + 2, WS_, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "lse (0x200002) is not aligned to its 4-byte elements");
    CHECK_INVALID(tc_attention_bwd(FAKE_CTX, NULL, F16, DQ_, DK_, DV_, 0, Q_, K_, V_, O_, L_, 2, 8, 2, 100, 100, 64, QS,
                                   KS, KS, QS, QS, QS, KS, KS, 0, 0, 0.125f, 0, 0, WS_, WS_BYTES),
                  "dout is 0");
    CHECK_INVALID(tc_attention_bwd(FAKE_CTX, NULL, F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, 0, L_, 2, 8, 2, 100, 100, 64,
                                   QS, KS, KS, QS, QS, QS, KS, KS, 0, 0, 0.125f, 0, 0, WS_, WS_BYTES),
                  "o is 0");
    /* the workspace: given, 16-byte aligned, and at least what tc_attention_bwd_workspace_size says */
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, 0, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "workspace is 0");
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_ + 8, WS_BYTES, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                  "workspace (0xc00008) is not aligned to its 16-byte elements");
    size_t need = 0;
    CHECK_EQ_INT(tc_attention_bwd_workspace_size(F16, 2, 8, 2, 100, 100, 64, 1, 0, 0, &need), TC_OK);
    CHECK(need >= 2 * 8 * 100 * 4);
    char msg[160];
    snprintf(msg, sizeof msg, "workspace_bytes (%zu) is smaller than the %zu bytes tc_attention_bwd_workspace_size",
             need - 1, need);
    CHECK_INVALID(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, need - 1, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f), msg);
    CHECK_EQ_INT(bwd(FAKE_CTX, F16, DQ_, DK_, L_, WS_, need, 2, 8, 2, 100, 64, QS, KS, 0, 0, 0.125f),
                 TC_ERROR_UNSUPPORTED);
    /* varlen: the packed rows, one sequence of the longest length checked for distinct addresses */
    CHECK_EQ_INT(bwd(FAKE_CTX, TC_DTYPE_BF16, DQ_, DK_, L_, WS_, need, 2, 8, 2, 100, 64, 0, 64, 512, 0, 64, 128,
                     0x600000, 0x700000, -1.0f),
                 TC_ERROR_UNSUPPORTED);
    rt_attention_launch_hook = NULL;
}

/* Every launch of tc_attention_bwd: its kernels, in order, with arguments by
 * name, and each distinct specialization compiled to PTX (ptxas where found). */
static const char *bwd_kernels[8];
static int bwd_launches;

static tc_status bwd_hook(const RtAttentionLaunch *l) {
    if (bwd_launches < 8)
        bwd_kernels[bwd_launches] = l->req.kernel;
    bwd_launches++;
    CHECK_EQ_STR(l->plan.file, "attention_bwd.tile");
    return checking_hook(l);
}

TEST(test_attention_bwd_launches_compile) {
    ptx_check_begin();
    rt_attention_launch_hook = bwd_hook;
    static const int64_t dims[] = {32, 64, 80, 128, 256};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int variant = 0; variant < 4; variant++) {
            int64_t D = dims[di], B = 2, H = 8, KVH = variant == 2 ? 1 : 2, S = 1000;
            tc_dtype t = (di + (size_t)variant) % 2 ? TC_DTYPE_BF16 : TC_DTYPE_F16;
            bool bhsd = variant == 1, varlen = variant == 3, causal = variant >= 2 || di % 2;
            int64_t qb = S * H * D, qh = bhsd ? S * D : D, qm = bhsd ? D : H * D;
            int64_t kb = (S + 17) * KVH * D, kh = bhsd ? (S + 17) * D : D, kn = bhsd ? D : KVH * D;
            CUdeviceptr cq = varlen ? 0x600000 : 0, ck = varlen ? 0x700000 : 0;
            bwd_launches = 0;
            CHECK_EQ_INT(tc_attention_bwd(FAKE_CTX, NULL, t, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, B, H, KVH, S,
                                          S + 17, D, qb, qh, qm, kb, kh, kn, kb, kh, kn, qb, qh, qm, qb, qh, qm, qb, qh,
                                          qm, kb, kh, kn, kb, kh, kn, cq, ck, 1.0f / sqrtf((float)D), causal, 0, WS_,
                                          (size_t)1 << 30),
                         TC_OK);
            CHECK_EQ_INT(bwd_launches, 3);
            CHECK_EQ_STR(bwd_kernels[0], "attention_bwd_preprocess");
            CHECK_EQ_STR(bwd_kernels[1], "attention_bwd_dkdv");
            /* dQ by TMA reductions up to head dim 128 without varlen, else its own kernel */
            CHECK_EQ_STR(bwd_kernels[2], D <= 128 && !varlen ? "attention_bwd_dq_convert" : "attention_bwd_dq");
        }
    rt_attention_launch_hook = NULL;
    CHECK(ptx_check_end("stdlib_attention_bwd") >= 30);
}

/* ---- the order of the programs ---- */

static uint64_t order_base, order_bytes;

static int order_find(void *user, uint64_t addr, uint64_t *base, uint64_t *bytes) {
    (void)user;
    *base = order_base;
    *bytes = order_bytes;
    return addr >= order_base && addr - order_base < order_bytes;
}

/* A kernel beside file's own that writes, for each program, the (head,
 * block) launch_head and launch_block give it, compiled and loaded. */
static tc_interp_module *order_probe(const char *file) {
    const char *lib;
    size_t len;
    if (tc_stdlib_source(file, &lib, &len) != TC_OK)
        return NULL;
    static const char probe[] = "\nkernel order_probe(i32* OUT, i32 head_group) {\n"
                                "    let pid = program_id(1) * num_programs(0) + program_id(0);\n"
                                "    store(OUT + 2 * pid, launch_head(head_group));\n"
                                "    store(OUT + 2 * pid + 1, launch_block(head_group));\n"
                                "}\n";
    char *text = malloc(len + sizeof probe);
    if (!text)
        return NULL;
    memcpy(text, lib, len);
    memcpy(text + len, probe, sizeof probe);
    tc_interp_module *m = unit_interp_load_tile(file, text, len + sizeof probe - 1, "order_probe", NULL, 0, false);
    free(text);
    return m;
}

TEST(test_attention_program_order) {
    static const char *const files[] = {"attention.tile", "attention_bwd.tile"};
    static const unsigned shapes[][3] = {/* blocks, heads, head_group */
                                         {8, 34, 12}, {5, 7, 3}, {4, 9, 1}, {3, 5, 5},  {1, 1, 1},
                                         {6, 13, 7},  {1, 6, 4}, {7, 2, 2}, {2, 11, 11}};
    for (size_t f = 0; f < 2; f++) {
        tc_interp_module *m = order_probe(files[f]);
        CHECK(m != NULL);
        tc_interp_kernel *k = NULL;
        if (!m || tc_interp_get_kernel(m, "order_probe", &k) != TC_OK) {
            CHECK(0);
            continue;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            unsigned blocks = shapes[s][0], heads = shapes[s][1], n = blocks * heads;
            int32_t group = (int32_t)shapes[s][2];
            int32_t *out = malloc(2 * n * sizeof *out);
            unsigned char *seen = calloc(n, 1);
            if (!out || !seen) {
                free(out);
                free(seen);
                continue;
            }
            memset(out, 0xff, 2 * n * sizeof *out);
            order_base = (uint64_t)(uintptr_t)out;
            order_bytes = 2 * n * sizeof *out;
            uint64_t p = order_base;
            void *args[] = {&p, &group};
            unsigned grid[3] = {blocks, heads, 1};
            tc_interp_memory mem = {order_find, NULL};
            CHECK_EQ_INT(tc_interp_launch(k, grid, args, &mem), TC_OK);
            /* in launch order: each (head, block) once; group after group of head_group heads (the last may
             * hold fewer), within a group the heads take turns block by block */
            int32_t last_group = 0, last_block = 0;
            for (unsigned i = 0; i < n; i++) {
                int32_t h = out[2 * i], b = out[2 * i + 1];
                bool ok = h >= 0 && (unsigned)h < heads && b >= 0 && (unsigned)b < blocks;
                CHECK(ok);
                if (!ok)
                    break;
                CHECK(!seen[(unsigned)h * blocks + (unsigned)b]);
                seen[(unsigned)h * blocks + (unsigned)b] = 1;
                int32_t g = h / group;
                CHECK(g > last_group || (g == last_group && b >= last_block));
                if (g > last_group)
                    CHECK_EQ_INT(b, 0);
                last_group = g, last_block = b;
                if (group == 1) /* the grid's own order */
                    CHECK(h == (int32_t)(i / blocks) && b == (int32_t)(i % blocks));
            }
            free(out);
            free(seen);
        }
        tc_interp_unload(m);
    }
}

/* The head_group of the last launch of each kernel. */
static int64_t group_fwd, group_dkdv, group_dq;

static tc_status group_hook(const RtAttentionLaunch *l) {
    for (size_t i = 0; i < l->num_args; i++)
        if (strcmp(l->names[i], "head_group") == 0) {
            int64_t v = l->i32s[i];
            if (strcmp(l->req.kernel, "attention_fwd") == 0)
                group_fwd = v;
            else if (strcmp(l->req.kernel, "attention_bwd_dkdv") == 0)
                group_dkdv = v;
            else if (strcmp(l->req.kernel, "attention_bwd_dq") == 0)
                group_dq = v;
        }
    return TC_OK;
}

TEST(test_attention_head_group) {
    rt_attention_launch_hook = group_hook;
    /* head dim 64, [b, s, h, d]; (B, H, S) */
    static const int64_t shapes[][3] = {{4, 32, 4096}, {4, 32, 1024}, {1, 32, 16384}, {2, 3, 100}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int causal = 0; causal < 2; causal++)
            for (int det = 0; det < 2; det++) {
                int64_t B = shapes[s][0], H = shapes[s][1], S = shapes[s][2], D = 64;
                int64_t qb = S * H * D, qh = D, qm = H * D;
                group_fwd = group_dkdv = group_dq = -1;
                CHECK_EQ_INT(tc_attention_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, O_, L_, Q_, K_, V_, B, H, H, S, S, D, qb,
                                              qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, 0, 0, 0.125f, causal),
                             TC_OK);
                CHECK_EQ_INT(tc_attention_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, B,
                                              H, H, S, S, D, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm,
                                              qb, qh, qm, qb, qh, qm, qb, qh, qm, 0, 0, 0.125f, causal, det, WS_,
                                              (size_t)1 << 34),
                             TC_OK);
                int64_t bh = B * H;
                CHECK(group_fwd >= 1 && group_fwd <= bh && group_dkdv >= 1 && group_dkdv <= bh);
                /* the dq kernel runs when deterministic */
                CHECK(det ? group_dq >= 1 && group_dq <= bh : group_dq == -1);
                if (!causal) {
                    CHECK_EQ_INT(group_fwd, 1);
                    CHECK_EQ_INT(group_dkdv, 1);
                    CHECK(!det || group_dq == 1);
                }
            }
    /* causal, 4096 keys: dkdv's 32 key blocks a head on 132 SMs, one program each: 8 heads a group (2 waves);
     * 1024 keys, 8 blocks: 32 (33 rounded to an even split of 128 heads: 4 groups of 32) */
    int64_t S = 4096, D = 64, qb = S * 32 * D, qh = D, qm = 32 * D;
    CHECK_EQ_INT(tc_attention_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, 4, 32, 32, S, S,
                                  D, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm,
                                  qb, qh, qm, 0, 0, 0.125f, 1, 0, WS_, (size_t)1 << 34),
                 TC_OK);
    CHECK_EQ_INT(group_dkdv, 8);
    S = 1024, qb = S * 32 * D;
    CHECK_EQ_INT(tc_attention_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, DQ_, DK_, DV_, DO_, Q_, K_, V_, O_, L_, 4, 32, 32, S, S,
                                  D, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm, qb, qh, qm,
                                  qb, qh, qm, 0, 0, 0.125f, 1, 0, WS_, (size_t)1 << 34),
                 TC_OK);
    CHECK_EQ_INT(group_dkdv, 32);
    rt_attention_launch_hook = NULL;
}

UNIT_SUITE(stdlib_attention, test_attention_plans, test_attention_validation, test_attention_launches_compile,
           test_attention_bwd_plans, test_attention_bwd_validation, test_attention_bwd_launches_compile,
           test_attention_program_order, test_attention_head_group)
