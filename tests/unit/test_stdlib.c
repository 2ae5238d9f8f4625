/*
 * test_stdlib.c — the standard library's C entry points (stdlib/)
 * without a GPU:
 *
 *  - the embedded sources are there and match the .tile files' kernels;
 *  - tc_stdlib_plan_for's choices (tile width, loop or single tile, warps)
 *    at the edges of its policy;
 *  - every invalid argument is TC_ERROR_INVALID_ARGUMENT with a message
 *    naming it, before anything is compiled or launched (a fake context is
 *    safe: it is never touched);
 *  - with rt_stdlib_launch_hook in place of tc_jit + tc_launch, each entry
 *    point's launch: its arguments match the kernel's runtime signature
 *    (rt_signature of the embedded source) by position, name and C type,
 *    carry the caller's values, the grid has one program per row, and the
 *    alignment facts follow the arguments. Each distinct specialization the
 *    entry points pick for f16/bf16/f32 and rows of 1 .. 65536 columns,
 *    aligned or not, is then compiled to PTX for sm_90a through tc_compile
 *    with the same constexprs, num_warps and facts; where ptxas is found
 *    ($TILEC_PTXAS, or /usr/local/cuda/bin/ptxas) it must accept the PTX,
 *    and spills are reported.
 */
#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"
#include "stdlib_test_util.h"
#include "unit.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- sources and plans ---- */

TEST(test_sources) {
    const char *text = NULL;
    size_t len = 0;
    CHECK_EQ_INT(tc_stdlib_source("softmax.tile", &text, &len), TC_OK);
    CHECK(text && len == strlen(text));
    CHECK(text && strstr(text, "kernel softmax_fwd(") && strstr(text, "kernel softmax_bwd("));
    CHECK_EQ_INT(tc_stdlib_source("rmsnorm.tile", &text, &len), TC_OK);
    CHECK(text && strstr(text, "kernel rmsnorm_fwd(") && strstr(text, "kernel rmsnorm_bwd("));
    CHECK_EQ_INT(tc_stdlib_source("attention.tile", &text, NULL), TC_OK);
    CHECK_EQ_INT(tc_stdlib_source("nope.tile", &text, &len), TC_ERROR_INVALID_ARGUMENT);
    CHECK(text == NULL && len == 0);
    CHECK(strstr(tc_last_error(), "no file named 'nope.tile'") != NULL);
    CHECK_EQ_INT(tc_stdlib_source(NULL, &text, &len), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_stdlib_source("softmax.tile", NULL, &len), TC_ERROR_INVALID_ARGUMENT);
    /* sorted, NUL-terminated */
    for (size_t i = 0; i < rt_stdlib_num_sources; i++) {
        CHECK(rt_stdlib_sources[i].text[rt_stdlib_sources[i].len] == '\0');
        if (i)
            CHECK(strcmp(rt_stdlib_sources[i - 1].name, rt_stdlib_sources[i].name) < 0);
    }
}

static int64_t cx_value(const tc_stdlib_plan *p, const char *name) {
    return constexpr_value(p->constexprs, p->num_constexprs, name);
}

TEST(test_plans) {
    static const struct {
        tc_stdlib_op op;
        int64_t cols;
        int64_t block;
        int single;
        int warps;
        unsigned grid_y;
    } want[] = {
        {TC_STDLIB_SOFTMAX_FWD, 1, 32, 1, 1, 1},
        {TC_STDLIB_SOFTMAX_FWD, 33, 64, 1, 1, 1},
        {TC_STDLIB_SOFTMAX_FWD, 512, 512, 1, 2, 1},
        {TC_STDLIB_SOFTMAX_FWD, 1000, 1024, 1, 4, 1},
        {TC_STDLIB_SOFTMAX_FWD, 1025, 2048, 1, 8, 1},
        {TC_STDLIB_SOFTMAX_FWD, 4096, 4096, 1, 8, 1},
        {TC_STDLIB_SOFTMAX_FWD, 8192, 8192, 1, 8, 1},
        {TC_STDLIB_SOFTMAX_FWD, 16384, 16384, 1, 16, 1},
        {TC_STDLIB_SOFTMAX_FWD, 16385, 8192, 0, 8, 1},
        {TC_STDLIB_RMSNORM_FWD, 65536, 8192, 0, 8, 1},
        {TC_STDLIB_RMSNORM_FWD, 65537, 8192, 0, 8, 1}, /* its last 16384 tile nearly empty */
        {TC_STDLIB_RMSNORM_FWD, 81920, 16384, 0, 32, 1},
        {TC_STDLIB_SOFTMAX_FWD, 128256, 16384, 0, 16, 1},
        {TC_STDLIB_SOFTMAX_BWD, 65536, 8192, 0, 8, 1},
        {TC_STDLIB_SOFTMAX_BWD, 262144, 16384, 0, 16, 1},
        {TC_STDLIB_RMSNORM_BWD, 131072, 8192, 0, 8, 1},
        {TC_STDLIB_RMSNORM_FWD, 12288, 16384, 1, 16, 1},
        {TC_STDLIB_SOFTMAX_BWD, 7, 32, 0, 1, 1},
        {TC_STDLIB_SOFTMAX_BWD, 4096, 4096, 0, 8, 1},
        {TC_STDLIB_RMSNORM_BWD, 12288, 8192, 0, 8, 1},
        {TC_STDLIB_RMSNORM_BWD, 1000, 1024, 0, 4, 1},
        {TC_STDLIB_SWIGLU_FWD, 11008, 1024, 0, 4, 11},
        {TC_STDLIB_SWIGLU_FWD, 1, 32, 0, 1, 1},
        {TC_STDLIB_SWIGLU_BWD, 4096, 1024, 0, 4, 4},
        {TC_STDLIB_ADD, 1000, 1024, 0, 4, 1},
        {TC_STDLIB_ADD, 4096, 1024, 0, 4, 4},
        {TC_STDLIB_ADD, (int64_t)1 << 30, 1024, 0, 4, 65535},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_stdlib_plan p;
        CHECK_EQ_INT(tc_stdlib_plan_for(want[i].op, TC_DTYPE_BF16, want[i].cols, &p), TC_OK);
        CHECK_EQ_INT(p.block, want[i].block);
        CHECK_EQ_INT(p.single_tile, want[i].single);
        CHECK_EQ_INT(p.num_warps, want[i].warps);
        CHECK_EQ_INT(p.grid_y, want[i].grid_y);
        CHECK_EQ_INT(cx_value(&p, "BLOCK"), want[i].block);
        CHECK_EQ_INT(cx_value(&p, "T"), TC_DTYPE_BF16);
        bool fwd = want[i].op == TC_STDLIB_SOFTMAX_FWD || want[i].op == TC_STDLIB_RMSNORM_FWD;
        CHECK_EQ_INT(cx_value(&p, "SINGLE_TILE"), fwd ? want[i].single : -1);
        CHECK_EQ_INT(p.num_constexprs, fwd ? 3 : 2);
    }
    tc_stdlib_plan p;
    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_RMSNORM_BWD, TC_DTYPE_F16, 100, &p), TC_OK);
    CHECK_EQ_STR(p.file, "rmsnorm.tile");
    CHECK_EQ_STR(p.kernel, "rmsnorm_bwd");
    CHECK_EQ_INT(p.num_aligned_params, 10); /* 6 pointers, 3 strides, n_cols */
    CHECK_EQ_STR(p.aligned_params[0].name, "dx");
    CHECK_EQ_INT(p.aligned_params[0].divisibility, 16);
    CHECK_EQ_STR(p.aligned_params[9].name, "n_cols");
    CHECK_EQ_INT(p.aligned_params[9].divisibility, 8); /* 16 bytes of f16 */
    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F32, 100, &p), TC_OK);
    CHECK_EQ_INT(p.aligned_params[4].divisibility, 4);

    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_I32, 100, &p), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F16, 0, &p), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F16, (int64_t)1 << 31, &p),
                 TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_stdlib_plan_for((tc_stdlib_op)42, TC_DTYPE_F16, 10, &p), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_stdlib_plan_for(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F16, 10, NULL), TC_ERROR_INVALID_ARGUMENT);
}

/* ---- argument validation ---- */

static tc_status counting_hook(const RtStdlibLaunch *l) {
    (void)l;
    stdlib_hook_calls++;
    return TC_ERROR_UNSUPPORTED; /* a call that got through validation */
}

TEST(test_validation) {
    const CUdeviceptr a = 0x100000, b = 0x200000, c = 0x300000, d = 0x400000, e = 0x500000, f = 0x600000;
    rt_stdlib_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    /* the valid call reaches the launch */
    CHECK_EQ_INT(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 4, 100, 100, 128), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(stdlib_hook_calls, 1);

    CHECK_INVALID(tc_softmax_fwd(NULL, NULL, TC_DTYPE_F16, a, b, 4, 100, 100, 100), "tc_softmax_fwd: ctx is NULL");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_I32, a, b, 4, 100, 100, 100), "dtype must be");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F64, a, b, 4, 100, 100, 100), "dtype must be");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, 0, b, 4, 100, 100, 100), "tc_softmax_fwd: out is 0");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, 0, 4, 100, 100, 100), "x is 0");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 0, 100, 100, 100), "rows (0)");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, -3, 100, 100, 100), "rows (-3)");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, (int64_t)1 << 31, 100, 100, 100), "rows (");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 4, 0, 100, 100), "cols (0)");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 4, -1, 100, 100), "cols (-1)");
    CHECK_INVALID(
        tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 1, (int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31),
        "cols (");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 4, 100, 99, 100),
                  "stride_out (99) is smaller than cols (100)");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 4, 100, 100, -100), "stride_x (-100)");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, 1 << 30, 100, 100, (int64_t)1 << 40),
                  "overflows a 64-bit offset");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F16, a + 1, b, 4, 100, 100, 100),
                  "out (0x100001) is not aligned to its 2-byte elements");
    CHECK_INVALID(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_F32, a, b + 2, 4, 100, 100, 100),
                  "x (0x200002) is not aligned to its 4-byte elements");
    /* 2-byte offsets are fine for 16-bit types */
    CHECK_EQ_INT(tc_softmax_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a + 2, b + 6, 4, 100, 100, 101), TC_ERROR_UNSUPPORTED);

    CHECK_INVALID(tc_softmax_bwd(FAKE_CTX, NULL, TC_DTYPE_F32, a, b, 0, 4, 100, 100, 100, 100),
                  "tc_softmax_bwd: dy is 0");
    CHECK_INVALID(tc_softmax_bwd(FAKE_CTX, NULL, TC_DTYPE_F32, a, b, c, 4, 100, 100, 100, 50), "stride_dy (50)");

    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, 0, c, d, 4, 100, 100, 100, 1e-6f),
                  "tc_rmsnorm_fwd: rstd is 0");
    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b + 2, c, d, 4, 100, 100, 100, 1e-6f),
                  "rstd (0x200002) is not aligned to its 4-byte elements");
    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b, c, 0, 4, 100, 100, 100, 1e-6f), "weight is 0");
    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b, c, d, 4, 100, 100, 100, -1e-6f), "eps");
    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b, c, d, 4, 100, 100, 100, NAN), "eps");
    CHECK_INVALID(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b, c, d, 4, 100, 100, 100, INFINITY), "eps");
    CHECK_EQ_INT(tc_rmsnorm_fwd(FAKE_CTX, NULL, TC_DTYPE_BF16, a, b, c, d, 4, 100, 100, 100, 0.0f),
                 TC_ERROR_UNSUPPORTED);

    CHECK_INVALID(tc_rmsnorm_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, 0, c, d, e, f, 4, 100, 100, 100, 100),
                  "tc_rmsnorm_bwd: dweight is 0");
    CHECK_INVALID(tc_rmsnorm_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, c, d, e, 0, 4, 100, 100, 100, 100), "rstd is 0");
    CHECK_INVALID(tc_rmsnorm_bwd(FAKE_CTX, NULL, TC_DTYPE_F16, a, b, c, d, e, f, 4, 100, 100, 100, 10),
                  "stride_x (10) is smaller than cols (100)");
    CHECK_INVALID(tc_rmsnorm_bwd(NULL, NULL, TC_DTYPE_F16, a, b, c, d, e, f, 4, 100, 100, 100, 100), "ctx is NULL");
    rt_stdlib_launch_hook = NULL;
}

/* ---- rows split over a cluster ---- */

/* A constexpr of the launch (l->cx), or dflt. */
static int64_t launch_cx(const RtStdlibLaunch *l, const char *name, int64_t dflt) {
    for (size_t i = 0; i < l->num_cx; i++)
        if (strcmp(l->cx[i].name, name) == 0)
            return l->cx[i].i;
    return dflt;
}

static struct {
    unsigned grid_x;
    int64_t block, cluster;
    int warps;
} seen_split;

static tc_status split_hook(const RtStdlibLaunch *l) {
    seen_split.grid_x = l->grid.x;
    seen_split.block = l->plan.block;
    seen_split.warps = l->plan.num_warps;
    seen_split.cluster = launch_cx(l, "CLUSTER", 1);
    return TC_ERROR_UNSUPPORTED;
}

/* The softmax loops split rows wider than 65536 columns over clusters of 8
 * programs (the default target, sm_90a, has clusters): parts of up to 16384
 * columns on 4096-wide tiles of 4 warps, wider parts on 8192 of 8, 2048 on
 * 4 where the part's last tile would be half empty; not f32 (the forward's
 * log-sum-exps' rounding; one program a row on a 16384 tile of 16 warps,
 * its last one mostly full), realigned rows (an odd stride), narrower rows.
 * RMSNorm's loops split rows wider than 98304: the forward's parts on 2048
 * of 8 warps up to 16384 columns, 4096 of 16 above, the backward's on 4096
 * of 4 and 8192 of 8; up to 98304 one program a row (the forward's 32 warps
 * on 16384), and for f32, and for the forward's realigned rows (an odd
 * stride: 4096 on 16); the backward, which never realigns, splits rows of
 * any stride. */
TEST(test_row_clusters) {
    const CUdeviceptr a = 0x100000, b = 0x200000, c = 0x300000, d = 0x400000;
    enum { FWD, BWD, RMS, RMSB };
    rt_stdlib_launch_hook = split_hook;
    static const struct {
        int kernel;
        tc_dtype dtype;
        int64_t cols, stride;
        unsigned grid_x;
        int64_t block, cluster;
        int warps;
    } want[] = {
        {FWD, TC_DTYPE_F16, 131072, 131072, 40, 4096, 8, 4},  {FWD, TC_DTYPE_F16, 100003, 100008, 40, 2048, 8, 4},
        {FWD, TC_DTYPE_F16, 262144, 262144, 40, 8192, 8, 8},  {FWD, TC_DTYPE_F16, 128256, 128256, 40, 4096, 8, 4},
        {FWD, TC_DTYPE_F16, 131072, 131073, 5, 4096, 1, 8},   {FWD, TC_DTYPE_F16, 65536, 65536, 5, 8192, 1, 8},
        {FWD, TC_DTYPE_F16, 65537, 65544, 40, 2048, 8, 4},    {FWD, TC_DTYPE_F32, 131072, 131072, 5, 16384, 1, 16},
        {BWD, TC_DTYPE_F16, 131072, 131072, 40, 4096, 8, 4},  {BWD, TC_DTYPE_BF16, 100003, 100008, 40, 2048, 8, 4},
        {BWD, TC_DTYPE_F32, 131072, 131072, 5, 16384, 1, 16}, {RMS, TC_DTYPE_F16, 131072, 131072, 40, 2048, 8, 8},
        {RMS, TC_DTYPE_BF16, 128256, 128256, 40, 2048, 8, 8}, {RMS, TC_DTYPE_F16, 262144, 262144, 40, 4096, 8, 16},
        {RMS, TC_DTYPE_F16, 98304, 98304, 5, 16384, 1, 32},   {RMS, TC_DTYPE_F32, 131072, 131072, 5, 16384, 1, 32},
        {RMSB, TC_DTYPE_F16, 131072, 131072, 40, 4096, 8, 4}, {RMSB, TC_DTYPE_BF16, 262144, 262144, 40, 8192, 8, 8},
        {RMSB, TC_DTYPE_F16, 98304, 98304, 5, 8192, 1, 8},    {RMS, TC_DTYPE_F16, 131072, 131073, 5, 4096, 1, 16},
        {RMSB, TC_DTYPE_F16, 131072, 131073, 40, 4096, 8, 4},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        memset(&seen_split, 0, sizeof seen_split);
        int64_t n = want[i].cols, st = want[i].stride;
        tc_dtype t = want[i].dtype;
        tc_status got = want[i].kernel == FWD   ? tc_softmax_fwd(FAKE_CTX, NULL, t, a, b, 5, n, st, st)
                        : want[i].kernel == BWD ? tc_softmax_bwd(FAKE_CTX, NULL, t, a, b, c, 5, n, st, st, st)
                        : want[i].kernel == RMS ? tc_rmsnorm_fwd(FAKE_CTX, NULL, t, a, c, b, c, 5, n, st, st, 1e-6f)
                                                : tc_rmsnorm_bwd(FAKE_CTX, NULL, t, a, d, b, c, c, d, 5, n, st, st, st);
        CHECK_EQ_INT(got, TC_ERROR_UNSUPPORTED);
        CHECK_EQ_INT(seen_split.grid_x, want[i].grid_x);
        CHECK_EQ_INT(seen_split.block, want[i].block);
        CHECK_EQ_INT(seen_split.cluster, want[i].cluster);
        CHECK_EQ_INT(seen_split.warps, want[i].warps);
    }
    rt_stdlib_launch_hook = NULL;
}

/* ---- what the entry points launch, and that it compiles ---- */

/* The values a call passed, by parameter name. */
typedef struct Given {
    const char *name;
    int64_t value; /* a pointer as an integer, a stride, n_cols */
} Given;

typedef struct Expect {
    tc_dtype dtype;
    int64_t rows, cols;
    float eps;
    const Given *given;
    size_t num_given;
    int launches;
} Expect;

static Expect expect;

static int64_t given(const char *name, bool *found) {
    for (size_t i = 0; i < expect.num_given; i++)
        if (strcmp(expect.given[i].name, name) == 0) {
            *found = true;
            return expect.given[i].value;
        }
    *found = false;
    return 0;
}

static tc_status checking_hook(const RtStdlibLaunch *l) {
    expect.launches++;
    CHECK(l->ctx == FAKE_CTX);
    /* one program a row, or CLUSTER of them (a row split over a cluster) */
    CHECK(l->grid.x == (unsigned)(expect.rows * launch_cx(l, "CLUSTER", 1)) && l->grid.y == 1 && l->grid.z == 1);
    CHECK(l->req.source && l->req.kernel && l->req.options == &l->options);
    CHECK_EQ_INT(l->options.num_warps, l->plan.num_warps);
    CHECK(l->req.divisibility == l->divisibility && l->req.num_divisibility == l->num_args);

    /* the kernel's runtime signature, from the embedded source */
    RtMeta sig = {0};
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    if (!launch_signature(&l->req, l->plan.num_warps, &sig, diags)) {
        tc_diagnostics_destroy(diags);
        rt_meta_free(&sig);
        return TC_ERROR_INTERNAL;
    }
    const tc_kernel_desc *k = &sig.kernels[0];
    CHECK_EQ_INT(k->num_params, l->num_args);
    int64_t vector = 16 / (expect.dtype == TC_DTYPE_F32 ? 4 : 2);
    size_t ptr_facts = 0, num_ptrs = 0, num_ints = 0;
    for (size_t i = 0; i < k->num_params && i < l->num_args; i++) {
        const tc_param_desc *p = &k->params[i];
        bool found;
        int64_t v = given(p->name, &found);
        if (p->is_pointer) {
            CHECK(found);
            CHECK(l->args[i] == &l->ptrs[i]);
            CHECK_EQ_INT((int64_t)l->ptrs[i], v);
            CHECK(p->dtype == expect.dtype || p->dtype == TC_DTYPE_F32);
            CHECK_EQ_INT(l->divisibility[i], v % 16 == 0 ? 16 : 0);
            ptr_facts += v % 16 == 0;
            num_ptrs++;
        } else if (p->dtype == TC_DTYPE_I64) { /* a stride */
            CHECK(found);
            CHECK(l->args[i] == &l->ints[i]);
            CHECK_EQ_INT(l->ints[i], v);
            CHECK(has_fact(&l->options, p->name, vector) == (v % vector == 0));
            num_ints++;
        } else if (p->dtype == TC_DTYPE_I32) { /* n_cols */
            CHECK_EQ_STR(p->name, "n_cols");
            CHECK(l->args[i] == &l->n_cols);
            CHECK_EQ_INT(l->n_cols, expect.cols);
            CHECK(has_fact(&l->options, p->name, vector) == (expect.cols % vector == 0));
            num_ints++;
        } else { /* eps */
            CHECK(p->dtype == TC_DTYPE_F32 && strcmp(p->name, "eps") == 0);
            CHECK(l->args[i] == &l->eps);
            CHECK(l->eps == expect.eps);
        }
    }

    /* compile the specialization once: tc_jit's facts by name, as it would pass them */
    char key[256];
    int off = snprintf(key, sizeof key, "%s T=%d B=%lld S=%d w=%d R=%lld C=%lld", l->req.kernel, (int)expect.dtype,
                       (long long)l->plan.block, l->plan.single_tile, l->plan.num_warps,
                       (long long)launch_cx(l, "REALIGN", 0), (long long)launch_cx(l, "CLUSTER", 1));
    ptx_key_facts(key, sizeof key, off, &l->options, l->divisibility, l->num_args);
    tc_binary *bin =
        ptx_compile_once(key, &l->req, &l->options, k, l->divisibility, l->num_args, l->plan.num_warps, diags);
    size_t len;
    const char *ptx = bin ? tc_binary_text(bin, &len) : NULL;
    /* all pointers aligned and all integers divisible: vector accesses */
    if (ptr_facts == num_ptrs && l->options.num_params == num_ints && expect.cols >= 64 && ptx)
        CHECK(strstr(ptx, ".v4.") != NULL);
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    rt_meta_free(&sig);
    return TC_OK;
}

TEST(test_launches_compile) {
    ptx_check_begin();
    rt_stdlib_launch_hook = checking_hook;
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32};
    static const int64_t widths[] = {1, 7, 1000, 1024, 4095, 4096, 12288, 65536, 131072}; /* 131072: split rows */
    for (int di = 0; di < 3; di++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
            for (int aligned = 0; aligned < 2; aligned++) {
                tc_dtype t = dtypes[di];
                int64_t cols = widths[wi], rows = 37, es = t == TC_DTYPE_F32 ? 4 : 2;
                /* aligned: 16-byte pointers, strides of whole 16-byte groups; else one element off */
                int64_t off = aligned ? 0 : es, stride = aligned ? (cols + 7) / 8 * 8 + 8 : cols + 1;
                int64_t p0 = 0x10000 + off, p1 = 0x20000 + off, p2 = 0x30000 + off, p3 = 0x40000 + off;
                int64_t r0 = 0x70000 + (aligned ? 0 : 4), r1 = 0x80000 + (aligned ? 0 : 4); /* f32: rstd, dweight */
                const float eps = 1e-5f;

                Given sf[] = {{"out", p0}, {"x", p1}, {"stride_out", stride}, {"stride_x", stride + 8 * !aligned}};
                expect = (Expect){t, rows, cols, 0, sf, 4, 0};
                CHECK_EQ_INT(tc_softmax_fwd(FAKE_CTX, NULL, t, (CUdeviceptr)p0, (CUdeviceptr)p1, rows, cols, stride,
                                            stride + 8 * !aligned),
                             TC_OK);
                CHECK_EQ_INT(expect.launches, 1);
                Given sb[] = {{"dx", p0},           {"y", p1}, {"dy", p2}, {"stride_dx", stride}, {"stride_y", stride},
                              {"stride_dy", stride}};
                expect = (Expect){t, rows, cols, 0, sb, 6, 0};
                CHECK_EQ_INT(tc_softmax_bwd(FAKE_CTX, NULL, t, (CUdeviceptr)p0, (CUdeviceptr)p1, (CUdeviceptr)p2, rows,
                                            cols, stride, stride, stride),
                             TC_OK);
                CHECK_EQ_INT(expect.launches, 1);
                Given rf[] = {{"y", p0},      {"rstd", r0},         {"x", p1},
                              {"weight", p2}, {"stride_y", stride}, {"stride_x", stride}};
                expect = (Expect){t, rows, cols, eps, rf, 6, 0};
                CHECK_EQ_INT(tc_rmsnorm_fwd(FAKE_CTX, NULL, t, (CUdeviceptr)p0, (CUdeviceptr)r0, (CUdeviceptr)p1,
                                            (CUdeviceptr)p2, rows, cols, stride, stride, eps),
                             TC_OK);
                CHECK_EQ_INT(expect.launches, 1);
                Given rb[] = {{"dx", p0},
                              {"dweight", r0},
                              {"dy", p1},
                              {"x", p2},
                              {"weight", p3},
                              {"rstd", r1},
                              {"stride_dx", stride},
                              {"stride_dy", stride},
                              {"stride_x", stride}};
                expect = (Expect){t, rows, cols, 0, rb, 9, 0};
                CHECK_EQ_INT(tc_rmsnorm_bwd(FAKE_CTX, NULL, t, (CUdeviceptr)p0, (CUdeviceptr)r0, (CUdeviceptr)p1,
                                            (CUdeviceptr)p2, (CUdeviceptr)p3, (CUdeviceptr)r1, rows, cols, stride,
                                            stride, stride),
                             TC_OK);
                CHECK_EQ_INT(expect.launches, 1);
            }
    rt_stdlib_launch_hook = NULL;
    CHECK(ptx_check_end("stdlib") >= 40);
}

/* ---- the memo of kernels by request ---- */

/* What a launch was keyed by: the memo's key and tc_jit's (the PTX key,
 * which selects the variant: base key plus argument facts). */
typedef struct Keyed {
    RtStdlibKey memo;
    uint8_t jit[32];
} Keyed;

static Keyed keyed[1024];
static int num_keyed;

static tc_status keying_hook(const RtStdlibLaunch *l) {
    if (num_keyed >= (int)(sizeof keyed / sizeof keyed[0]))
        return TC_ERROR_INTERNAL;
    Keyed *e = &keyed[num_keyed++];
    CHECK(rt_stdlib_key(&l->req, &e->memo));
    stdlib_jit_key(&l->req, e->jit);
    return TC_OK;
}

/* Every entry point over dtypes, widths and alignments, each call twice:
 * the second time with other addresses, strides and rows that give the
 * same facts, which must give the same keys. */
static void key_every_specialization(void) {
    rt_stdlib_launch_hook = keying_hook;
    num_keyed = 0;
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32};
    static const int64_t widths[] = {1, 7, 32, 33, 1000, 1024, 4096, 8192, 12288, 16384, 16385, 65536};
    for (int di = 0; di < 3; di++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
            for (int misaligned = 0; misaligned < 3; misaligned++) /* none, the pointers, the strides */
                for (int again = 0; again < 2; again++) {
                    tc_dtype t = dtypes[di];
                    int64_t cols = widths[wi], es = t == TC_DTYPE_F32 ? 4 : 2, rows = again ? 5 : 3;
                    CUdeviceptr p = (again ? 0x200000 : 0x100000) + (misaligned == 1 ? (CUdeviceptr)es : 0);
                    CUdeviceptr f32 = (again ? 0x900000 : 0x800000) + (misaligned == 1 ? 4 : 0);
                    int64_t stride = (cols + 7) / 8 * 8 + (again ? 16 : 8) + (misaligned == 2 ? 1 : 0);
                    CHECK_EQ_INT(tc_softmax_fwd(FAKE_CTX, NULL, t, p, p + 0x10000, rows, cols, stride, stride), TC_OK);
                    CHECK_EQ_INT(tc_softmax_bwd(FAKE_CTX, NULL, t, p, p + 0x10000, p + 0x20000, rows, cols, stride,
                                                stride, stride),
                                 TC_OK);
                    CHECK_EQ_INT(tc_rmsnorm_fwd(FAKE_CTX, NULL, t, p, f32, p + 0x10000, p + 0x20000, rows, cols, stride,
                                                stride, 1e-5f),
                                 TC_OK);
                    CHECK_EQ_INT(tc_rmsnorm_bwd(FAKE_CTX, NULL, t, p, f32, p + 0x10000, p + 0x20000, p + 0x30000,
                                                f32 + 0x10000, rows, cols, stride, stride, stride),
                                 TC_OK);
                }
    rt_stdlib_launch_hook = NULL;
}

/* The memo's key tells requests apart exactly as tc_jit's key does: equal
 * memo keys mean the same kernel from tc_jit (the memo is never stale), and
 * different ones a different kernel (it memoizes each kernel once). */
TEST(test_memo_key) {
    key_every_specialization();
    CHECK_EQ_INT(num_keyed, 3 * 12 * 3 * 2 * 4);
    int equal = 0, mismatched = 0;
    for (int i = 0; i < num_keyed; i++)
        for (int j = i + 1; j < num_keyed; j++) {
            bool same_memo = rt_stdlib_key_equal(&keyed[i].memo, &keyed[j].memo);
            bool same_jit = memcmp(keyed[i].jit, keyed[j].jit, 32) == 0;
            equal += same_memo;
            if (same_memo != same_jit && mismatched++ < 5)
                fprintf(stderr, "  launches %d and %d: memo keys %s, tc_jit keys %s\n", i, j,
                        same_memo ? "equal" : "differ", same_jit ? "equal" : "differ");
        }
    CHECK_EQ_INT(mismatched, 0);
    CHECK(equal >= num_keyed / 2);
    /* each call and its repeat, four launches later */
    for (int i = 0; i < num_keyed; i++)
        if (i % 8 < 4)
            CHECK(rt_stdlib_key_equal(&keyed[i].memo, &keyed[i + 4].memo));
}

/* A context as far as the memo uses it. */
static void memo_context(tc_context *ctx) {
    memset(ctx, 0, sizeof *ctx);
    pthread_mutex_init(&ctx->jit_lock, NULL);
}

static void memo_context_free(tc_context *ctx) {
    if (ctx->attached_free) /* as tc_context_destroy frees it */
        ctx->attached_free(ctx->attached);
    pthread_mutex_destroy(&ctx->jit_lock);
}

static tc_kernel *fake_kernel(int i) {
    return (tc_kernel *)(uintptr_t)(0x10000 + 16 * (uintptr_t)i);
}

/* Where key i was first seen among the keyed launches. */
static int first_with_key(int i) {
    for (int j = 0; j < i; j++)
        if (rt_stdlib_key_equal(&keyed[j].memo, &keyed[i].memo))
            return j;
    return i;
}

TEST(test_memo) {
    key_every_specialization();
    tc_context ctx;
    memo_context(&ctx);
    /* filled as run() fills it: find, else add what tc_jit returned */
    for (int i = 0; i < num_keyed; i++) {
        tc_kernel *k = rt_stdlib_memo_find(&ctx, &keyed[i].memo);
        CHECK(k == (first_with_key(i) < i ? fake_kernel(first_with_key(i)) : NULL));
        if (!k)
            rt_stdlib_memo_add(&ctx, &keyed[i].memo, fake_kernel(i));
    }
    /* a second add of a key keeps the first kernel */
    rt_stdlib_memo_add(&ctx, &keyed[0].memo, fake_kernel(9999));
    for (int i = 0; i < num_keyed; i++)
        CHECK(rt_stdlib_memo_find(&ctx, &keyed[i].memo) == fake_kernel(first_with_key(i)));
    RtStdlibKey other = keyed[0].memo;
    other.words[other.len - 1] ^= 16; /* another alignment fact */
    CHECK(rt_stdlib_memo_find(&ctx, &other) == NULL);
    other = keyed[0].memo;
    other.len--;
    CHECK(rt_stdlib_memo_find(&ctx, &other) == NULL);

    /* requests it must not key: a file (read at every call), launch
     * arguments (facts not in the request), more fields than a key holds */
    tc_options opt;
    tc_options_init(&opt);
    tc_constexpr many[64];
    for (int i = 0; i < 64; i++)
        many[i] = (tc_constexpr){"N", TC_CONSTEXPR_INT, i, 0};
    void *args[1] = {NULL};
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = "kernel k() {}";
    req.kernel = "k";
    req.options = &opt;
    CHECK(rt_stdlib_key(&req, &other) && other.len > 0);
    req.num_constexprs = 64;
    req.constexprs = many;
    CHECK(!rt_stdlib_key(&req, &other) && other.len == 0);
    CHECK(rt_stdlib_memo_find(&ctx, &other) == NULL);
    rt_stdlib_memo_add(&ctx, &other, fake_kernel(1)); /* a no-op */
    CHECK(rt_stdlib_memo_find(&ctx, &other) == NULL);
    req.num_constexprs = 0;
    req.args = args;
    req.num_args = 1;
    CHECK(!rt_stdlib_key(&req, &other));
    req.args = NULL;
    req.source = NULL;
    req.path = "k.tile";
    CHECK(!rt_stdlib_key(&req, &other));
    memo_context_free(&ctx);
}

/* Line info: a request with it is another kernel for the memo and for
 * tc_jit (its own cache entries), whatever else is equal. */
TEST(test_memo_key_line_info) {
    tc_options opt;
    tc_options_init(&opt);
    tc_jit_request req;
    CHECK_EQ_INT(rt_stdlib_request("tc_softmax_fwd", "softmax.tile", "softmax_fwd", NULL, 0, &opt, NULL, 0, &req),
                 TC_OK);
    tc_source src = {req.path, req.source, req.source_len};
    RtJitInputs in = {0};
    in.source = &src;
    in.kernel = req.kernel;
    in.options = &opt;
    in.arch = "sm_90a";
    RtStdlibKey memo[2];
    uint8_t jit[2][32];
    for (int g = 0; g < 2; g++) {
        opt.line_info = g;
        CHECK(rt_stdlib_key(&req, &memo[g]));
        rt_jit_base_key(&in, jit[g]);
    }
    CHECK(!rt_stdlib_key_equal(&memo[0], &memo[1]));
    CHECK(memcmp(jit[0], jit[1], 32) != 0);
    /* any nonzero value is the same request */
    RtStdlibKey other;
    uint8_t jit_other[32];
    opt.line_info = 7;
    CHECK(rt_stdlib_key(&req, &other) && rt_stdlib_key_equal(&other, &memo[1]));
    rt_jit_base_key(&in, jit_other);
    CHECK(memcmp(jit_other, jit[1], 32) == 0);
}

/* Threads that find and add the same keys at once agree on one kernel per
 * key (run under ASan/TSan builds for the memory side). */
enum { MEMO_THREADS = 4 };
typedef struct MemoThread {
    tc_context *ctx;
    int id;
    tc_kernel *seen[sizeof keyed / sizeof keyed[0]];
} MemoThread;

static void *memo_thread(void *arg) {
    MemoThread *t = arg;
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < num_keyed; i++) {
            tc_kernel *k = rt_stdlib_memo_find(t->ctx, &keyed[i].memo);
            if (!k) {
                rt_stdlib_memo_add(t->ctx, &keyed[i].memo, fake_kernel(1000 * (t->id + 1) + first_with_key(i)));
                k = rt_stdlib_memo_find(t->ctx, &keyed[i].memo);
            }
            if (r == 0)
                t->seen[i] = k;
            else if (t->seen[i] != k)
                t->seen[i] = NULL;
        }
    return NULL;
}

TEST(test_memo_threads) {
    key_every_specialization();
    tc_context ctx;
    memo_context(&ctx);
    static MemoThread threads[MEMO_THREADS];
    pthread_t ids[MEMO_THREADS];
    for (int t = 0; t < MEMO_THREADS; t++) {
        threads[t].ctx = &ctx;
        threads[t].id = t;
        CHECK_EQ_INT(pthread_create(&ids[t], NULL, memo_thread, &threads[t]), 0);
    }
    for (int t = 0; t < MEMO_THREADS; t++)
        pthread_join(ids[t], NULL);
    for (int i = 0; i < num_keyed; i++) {
        tc_kernel *k = rt_stdlib_memo_find(&ctx, &keyed[i].memo);
        CHECK(k != NULL && k == rt_stdlib_memo_find(&ctx, &keyed[first_with_key(i)].memo));
        for (int t = 0; t < MEMO_THREADS; t++)
            CHECK(threads[t].seen[i] == k);
    }
    memo_context_free(&ctx);
}

/* With a driver (a GPU, or tests/gpu's fake libcuda: CTest's
 * unit.fake.stdlib): after a call, the memo holds for its request exactly
 * the kernel that tc_jit returns for it, the slow path. */
static int compared;

static tc_status comparing_hook(const RtStdlibLaunch *l) {
    RtStdlibKey key;
    CHECK(rt_stdlib_key(&l->req, &key));
    tc_kernel *slow = NULL;
    CHECK_EQ_INT(tc_jit(l->ctx, &l->req, &slow), TC_OK);
    CHECK(slow != NULL && rt_stdlib_memo_find(l->ctx, &key) == slow);
    compared++;
    return TC_OK;
}

TEST(test_memo_driver) {
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        fprintf(stderr, "  stdlib: no driver (%s): memo against tc_jit not checked\n", tc_last_error());
        return;
    }
    CUdeviceptr buf = 0;
    CHECK_EQ_INT(tc_mem_alloc(ctx, 1 << 16, &buf), TC_OK);
    compared = 0;
    /* aligned, then x one element off: two variants of one family */
    for (int off = 0; off <= 4; off += 4) {
        CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, buf, buf + 0x8000 + off, 2, 100, 100, 100), TC_OK);
        rt_stdlib_launch_hook = comparing_hook;
        CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, buf + 0x400, buf + 0x8000 + off, 3, 100, 104, 100), TC_OK);
        rt_stdlib_launch_hook = NULL;
    }
    CHECK_EQ_INT(
        tc_rmsnorm_fwd(ctx, NULL, TC_DTYPE_F16, buf, buf + 0x1000, buf + 0x2000, buf + 0x3000, 2, 64, 64, 64, 1e-5f),
        TC_OK);
    rt_stdlib_launch_hook = comparing_hook;
    CHECK_EQ_INT(
        tc_rmsnorm_fwd(ctx, NULL, TC_DTYPE_F16, buf, buf + 0x1000, buf + 0x2000, buf + 0x3000, 2, 64, 64, 64, 1e-5f),
        TC_OK);
    rt_stdlib_launch_hook = NULL;
    CHECK_EQ_INT(compared, 3);
    CHECK_EQ_INT(tc_stream_synchronize(ctx, NULL), TC_OK);
    CHECK_EQ_INT(tc_mem_free(ctx, buf), TC_OK);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
}

UNIT_SUITE(stdlib, test_sources, test_plans, test_validation, test_row_clusters, test_launches_compile, test_memo_key,
           test_memo, test_memo_key_line_info, test_memo_threads, test_memo_driver)
