/*
 * test_stdlib_matmul.c — tc_matmul and tc_blockdiag_matmul (stdlib/)
 * without a GPU:
 *
 *  - the plans (tile, K step, warps, program grid, which stride is 1) at
 *    the edges of the policy, for the shapes the GPU test runs;
 *  - every invalid argument is TC_ERROR_INVALID_ARGUMENT with a message
 *    naming it, and nothing is launched (a fake context is never touched);
 *  - with rt_matmul_launch_hook in place of tc_jit + tc_launch, each
 *    launch's arguments match the kernel's runtime signature (rt_signature
 *    of the embedded source) by position, name and C type and carry the
 *    caller's values, the alignment facts follow the arguments, and every
 *    distinct specialization the entry points pick for a spread of shapes,
 *    layouts, dtypes, biases and activations compiles to PTX for sm_90a
 *    with those constexprs, warps and facts; where ptxas is found
 *    ($TILEC_PTXAS, or /usr/local/cuda/bin/ptxas) it must accept the PTX,
 *    and spills are reported (the FMA path of dot spills at 128 x 128
 *    tiles; the tensor-core path should not).
 *
 * (In a file of its own rather than in test_stdlib.c so that the two
 * families can change independently; same conventions.)
 */
#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"
#include "stdlib_test_util.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t cx(const tc_matmul_plan *p, const char *name) {
    return constexpr_value(p->constexprs, p->num_constexprs, name);
}

/* ---- plans ---- */

TEST(test_matmul_plans) {
    static const struct {
        int64_t M, N, K;
        int bm, bn, bk, warps, even_k;
        unsigned grid;
    } want[] = {
        {8192, 8192, 8192, 128, 256, 64, 8, 1, 64 * 32}, /* >= 256 tiles of 128 x 256: the big tile */
        {4096, 4096, 4096, 128, 256, 64, 8, 1, 32 * 16},
        {2048, 2048, 2048, 128, 128, 32, 4, 1, 16 * 16}, /* 128 tiles of 128 x 256 are too few */
        {1024, 1024, 1024, 128, 64, 32, 4, 1, 8 * 16}, /* 64 tiles of 128 x 128 are too few */
        {1024, 1024, 1000, 128, 64, 32, 4, 0, 8 * 16}, /* a K tail */
        {1, 4096, 4096, 16, 64, 32, 4, 1, 64},         /* a matrix-vector product */
        {17, 1000, 129, 32, 64, 32, 4, 0, 16},
        {1000, 37, 129, 64, 64, 32, 4, 0, 16},
        {1000, 1000, 8, 128, 64, 16, 4, 0, 8 * 16}, /* K below one step */
        {100, 100, 16, 64, 64, 16, 4, 1, 4},
        {16, 16, 16, 16, 16, 16, 4, 1, 1},
        {1, 1, 1, 16, 16, 16, 4, 0, 1},
        {65536, 128, 4096, 128, 128, 32, 4, 1, 512}, /* N = 128: no 256-wide tile */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int64_t M = want[i].M, N = want[i].N, K = want[i].K;
        tc_matmul_plan p;
        CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, M, N, K, K, 1, N, 1, N, 1, 0, TC_ACTIVATION_NONE, &p), TC_OK);
        CHECK_EQ_INT(p.block_m, want[i].bm);
        CHECK_EQ_INT(p.block_n, want[i].bn);
        CHECK_EQ_INT(p.block_k, want[i].bk);
        CHECK_EQ_INT(p.num_warps, want[i].warps);
        CHECK_EQ_INT(p.even_k, want[i].even_k);
        CHECK_EQ_INT(p.grid.x, want[i].grid);
        CHECK(p.grid.y == 1 && p.grid.z == 1);
        CHECK_EQ_INT(cx(&p, "BM"), want[i].bm);
        CHECK_EQ_INT(cx(&p, "BN"), want[i].bn);
        CHECK_EQ_INT(cx(&p, "BK"), want[i].bk);
        CHECK_EQ_INT(cx(&p, "EVEN_K"), want[i].even_k);
        if (p.block_m != want[i].bm || p.block_n != want[i].bn)
            fprintf(stderr, "  plan for %lld x %lld x %lld\n", (long long)M, (long long)N, (long long)K);
    }

    tc_matmul_plan p;
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_BF16, 1000, 37, 129, 129, 1, 37, 1, 37, 1, 1, TC_ACTIVATION_GELU_TANH, &p),
                 TC_OK);
    CHECK_EQ_STR(p.file, "matmul.tile");
    CHECK_EQ_STR(p.kernel, "matmul");
    CHECK_EQ_INT(p.num_constexprs, 11);
    CHECK_EQ_INT(cx(&p, "T"), TC_DTYPE_BF16);
    CHECK_EQ_INT(cx(&p, "GROUP_M"), 8);
    CHECK_EQ_INT(cx(&p, "HAS_BIAS"), 1);
    CHECK_EQ_INT(cx(&p, "ACT"), TC_ACTIVATION_GELU_TANH);
    CHECK_EQ_INT(cx(&p, "A_ORDER"), 1);
    CHECK_EQ_INT(cx(&p, "B_ORDER"), 1);
    CHECK_EQ_INT(cx(&p, "C_ORDER"), 1);
    /* A transposed (column-major), B transposed, C column-major */
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 1000, 37, 129, 1, 1000, 1, 129, 1, 1000, 0, TC_ACTIVATION_NONE, &p),
                 TC_OK);
    CHECK_EQ_INT(p.a_order, 2);
    CHECK_EQ_INT(p.b_order, 2);
    CHECK_EQ_INT(p.c_order, 2);
    CHECK_EQ_INT(cx(&p, "HAS_BIAS"), 0);
    /* general strides: neither is 1 */
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 64, 64, 64, 2, 128, 128, 2, 128, 2, 0, TC_ACTIVATION_RELU, &p),
                 TC_OK);
    CHECK_EQ_INT(p.a_order, 0);
    CHECK_EQ_INT(p.b_order, 0);
    CHECK_EQ_INT(p.c_order, 0);
    /* the sm_90a plan: the big tile with an epilogue and with transposed operands (wgmma keeps
     * them in shared memory), not with general strides */
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, 1,
                                    TC_ACTIVATION_GELU_TANH, &p),
                 TC_OK);
    CHECK_EQ_INT(p.block_n, 256);
    CHECK_EQ_INT(p.num_warps, 8);
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_BF16, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, 4096, 0, TC_ACTIVATION_NONE,
                                    &p),
                 TC_OK);
    CHECK_EQ_INT(p.block_n, 256);
    CHECK_EQ_INT(p.a_order, 2);
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 4096, 4096, 4096, 4096 * 2, 2, 4096 * 2, 2, 4096, 1, 0,
                                    TC_ACTIVATION_NONE, &p),
                 TC_OK);
    CHECK_EQ_INT(p.block_n, 128);
    CHECK_EQ_INT(p.num_warps, 4);

    /* blockdiag: bout and bin covered, BM shrinks until the programs fill the GPU */
    static const struct {
        int64_t batch, nblocks, bin, bout;
        int bm, bn, bk, warps, even_k;
        unsigned gx;
    } bd[] = {
        {8192, 64, 64, 64, 128, 64, 64, 4, 1, 64},      {4096, 4, 1024, 1024, 64, 128, 64, 4, 1, 64 * 8},
        {1000, 16, 37, 129, 64, 128, 64, 4, 0, 16 * 2}, {1, 8, 16, 16, 16, 16, 16, 4, 1, 1},
        {300, 2, 100, 24, 16, 32, 64, 4, 0, 19},        {65536, 1, 256, 256, 64, 128, 64, 4, 1, 1024 * 2},
    };
    for (size_t i = 0; i < sizeof bd / sizeof bd[0]; i++) {
        int64_t nb = bd[i].nblocks;
        CHECK_EQ_INT(tc_blockdiag_matmul_plan_for(TC_DTYPE_BF16, bd[i].batch, nb, bd[i].bin, bd[i].bout, nb * bd[i].bin,
                                                  bd[i].bin * bd[i].bout, bd[i].bout, 1, nb * bd[i].bout, &p),
                     TC_OK);
        CHECK_EQ_INT(p.block_m, bd[i].bm);
        CHECK_EQ_INT(p.block_n, bd[i].bn);
        CHECK_EQ_INT(p.block_k, bd[i].bk);
        CHECK_EQ_INT(p.num_warps, bd[i].warps);
        CHECK_EQ_INT(p.even_k, bd[i].even_k);
        CHECK_EQ_INT(p.grid.x, bd[i].gx);
        CHECK_EQ_INT(p.grid.y, nb);
        CHECK_EQ_INT(cx(&p, "W_ORDER"), 1);
        CHECK_EQ_STR(p.kernel, "blockdiag_matmul");
        CHECK_EQ_INT(p.num_constexprs, 6);
    }
    /* a weight stored [nblocks, bout, bin]: its K stride is 1 */
    CHECK_EQ_INT(tc_blockdiag_matmul_plan_for(TC_DTYPE_F16, 64, 4, 32, 48, 128, 32 * 48, 1, 32, 192, &p), TC_OK);
    CHECK_EQ_INT(p.b_order, 2);
    CHECK_EQ_INT(cx(&p, "W_ORDER"), 2);

    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 4, 4, 4, 4, 1, 4, 1, 4, 1, 0, TC_ACTIVATION_NONE, NULL),
                 TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_blockdiag_matmul_plan_for(TC_DTYPE_F16, 4, 1, 4, 4, 4, 16, 4, 1, 4, NULL),
                 TC_ERROR_INVALID_ARGUMENT);
}

/* ---- argument validation ---- */

static tc_status counting_hook(const RtMatmulLaunch *l) {
    (void)l;
    stdlib_hook_calls++;
    return TC_ERROR_UNSUPPORTED; /* a call that got through validation */
}

TEST(test_matmul_validation) {
    const CUdeviceptr c = 0x100000, a = 0x200000, b = 0x300000, bias = 0x400000;
    const tc_dtype F16 = TC_DTYPE_F16;
    const tc_activation NONE = TC_ACTIVATION_NONE;
    rt_matmul_launch_hook = counting_hook;
    stdlib_hook_calls = 0;
    /* the valid calls reach the launch */
    CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                 TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, TC_DTYPE_BF16, c + 2, a + 6, b + 2, bias + 2, 1, 1, 1, 0, 0, 0, 0, 0, 0,
                           TC_ACTIVATION_SILU),
                 TC_ERROR_UNSUPPORTED); /* 1 x 1 x 1: any strides */
    CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 0, 0, 0, 0, 1, 64, NONE),
                 TC_ERROR_UNSUPPORTED); /* broadcast inputs, column-major C */
    CHECK_EQ_INT(stdlib_hook_calls, 3);

    CHECK_INVALID(tc_matmul(NULL, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "tc_matmul: ctx is NULL");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, TC_DTYPE_F32, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "tc_matmul: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, TC_DTYPE_I32, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE), "dtype");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, 0, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "tc_matmul: c is 0");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, 0, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE), "a is 0");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, 0, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE), "b is 0");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a + 1, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "a (0x200001) is not aligned to its 2-byte elements");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, bias + 1, 64, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "bias (0x400001) is not aligned");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 0, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "M (0) must be in 1..1073741824");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, -1, 16, 16, 1, 32, 1, 32, 1, NONE), "N (-1)");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 0, 16, 1, 32, 1, 32, 1, NONE), "K (0)");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, (int64_t)1 << 31, 32, 16, 16, 1, 32, 1, 32, 1, NONE),
                  "M (2147483648)");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, (tc_activation)5),
                  "act (5) is not a tc_activation");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, 1, (tc_activation)-1),
                  "act (-1)");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, -16, 1, 32, 1, 32, 1, NONE),
                  "A's strides (stride_am -16, stride_ak 1) must be >= 0");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, -1, 32, 1, NONE),
                  "B's strides (stride_bk 32, stride_bn -1)");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 1 << 20, 32, 16, (int64_t)1 << 50, 1, 32, 1, 32, 1, NONE),
                  "A's strides (stride_am 1125899906842624, stride_ak 1) with 1048576 x 16 elements overflow");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 31, 1, NONE),
                  "C's strides (stride_cm 31, stride_cn 1) give two of its 64 x 32 elements the same address");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 0, 0, NONE),
                  "C's strides (stride_cm 0, stride_cn 0) give");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 1, 63, NONE), "C's strides");
    CHECK_INVALID(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 32, 16, 16, 1, 32, 1, 32, -1, NONE),
                  "C's strides (stride_cm 32, stride_cn -1) must be >= 0");
    CHECK_INVALID(
        tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 1 << 30, 1 << 30, 1, 1, 1, 1 << 30, 1, (int64_t)1 << 30, 1, NONE),
        "more than a grid holds");
    /* extent-1 dimensions take any stride */
    CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 1, 32, 16, 7, 1, 32, 1, 0, 1, NONE), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, F16, c, a, b, 0, 64, 1, 16, 16, 1, 1, 1, 1, 0, NONE), TC_ERROR_UNSUPPORTED);

    const CUdeviceptr y = c, x = a, w = b;
    CHECK_EQ_INT(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, 16, 128, 512, 16, 1, 64),
                 TC_ERROR_UNSUPPORTED);
    CHECK_INVALID(tc_blockdiag_matmul(NULL, NULL, F16, y, x, w, 10, 4, 32, 16, 128, 512, 16, 1, 64),
                  "tc_blockdiag_matmul: ctx is NULL");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, TC_DTYPE_F32, y, x, w, 10, 4, 32, 16, 128, 512, 16, 1, 64),
                  "dtype must be");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, 0, x, w, 10, 4, 32, 16, 128, 512, 16, 1, 64), "y is 0");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, 0, w, 10, 4, 32, 16, 128, 512, 16, 1, 64), "x is 0");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w + 3, 10, 4, 32, 16, 128, 512, 16, 1, 64),
                  "w (0x300003) is not aligned");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 0, 4, 32, 16, 128, 512, 16, 1, 64), "batch (0)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 0, 32, 16, 128, 512, 16, 1, 64),
                  "nblocks (0) must be in 1..65535");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 65536, 32, 16, (int64_t)65536 * 32, 512, 16, 1,
                                      (int64_t)65536 * 16),
                  "nblocks (65536)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 0, 16, 128, 512, 16, 1, 64), "bin (0)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, -2, 128, 512, 16, 1, 64), "bout (-2)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, 16, 127, 512, 16, 1, 64),
                  "stride_xm (127) is smaller than nblocks * bin (128)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, 16, 128, 512, 16, 1, 63),
                  "stride_ym (63) is smaller than nblocks * bout (64)");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, 16, 128, -512, 16, 1, 64),
                  "w's strides (stride_wb -512, stride_wk 16, stride_wn 1) must be >= 0");
    CHECK_INVALID(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 10, 4, 32, 16, 128, (int64_t)1 << 61, 16, 1, 64),
                  "overflow a 64-bit offset");
    /* one row: any row strides; a weight shared by every block (stride_wb 0) */
    CHECK_EQ_INT(tc_blockdiag_matmul(FAKE_CTX, NULL, F16, y, x, w, 1, 4, 32, 16, 0, 0, 16, 1, 0), TC_ERROR_UNSUPPORTED);
    rt_matmul_launch_hook = NULL;
}

/* ---- what the entry points launch, and that it compiles ---- */

typedef struct Given {
    const char *name;
    int64_t value; /* a pointer as an integer, an extent, a stride */
    bool known;    /* for pointers: may the launch claim its alignment? (bias absent: no) */
} Given;

static const Given *given;
static size_t num_given;
static tc_dtype given_dtype;
static int launches;

static const Given *find_given(const char *name) {
    for (size_t i = 0; i < num_given; i++)
        if (strcmp(given[i].name, name) == 0)
            return &given[i];
    return NULL;
}

/* What checking_hook saw of the last launch's kernel, if it compiled it
 * (the first launch of a specialization): the parameters its tensor maps
 * cover (bit i: parameter i), and how many specializations had any. */
static bool compiled;
static unsigned map_bases;
static int num_with_maps;

static tc_status checking_hook(const RtMatmulLaunch *l) {
    launches++;
    CHECK(l->ctx == FAKE_CTX);
    CHECK(l->req.source && l->req.kernel && l->req.options == &l->options);
    CHECK_EQ_STR(l->req.kernel, l->plan.kernel);
    CHECK_EQ_INT(l->options.num_warps, l->plan.num_warps);
    CHECK(l->req.divisibility == l->divisibility && l->req.num_divisibility == l->num_args);
    CHECK(l->plan.grid.x >= 1 && l->plan.grid.y >= 1 && l->plan.grid.z == 1);

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
    CHECK_EQ_INT(k->num_params, num_given);
    int64_t vector = 8; /* f16 and bf16 */
    for (size_t i = 0; i < k->num_params && i < l->num_args; i++) {
        const tc_param_desc *p = &k->params[i];
        const Given *g = find_given(p->name);
        CHECK(g != NULL);
        CHECK_EQ_STR(l->names[i], p->name);
        if (!g)
            continue;
        if (p->is_pointer) {
            CHECK(p->dtype == given_dtype);
            CHECK(l->args[i] == &l->ptrs[i]);
            CHECK_EQ_INT((int64_t)l->ptrs[i], g->value);
            CHECK_EQ_INT(l->divisibility[i], g->known && g->value % 16 == 0 ? 16 : 0);
        } else if (p->dtype == TC_DTYPE_I32) {
            CHECK(l->args[i] == &l->i32s[i]);
            CHECK_EQ_INT(l->i32s[i], g->value);
            CHECK(has_fact(&l->options, p->name, vector) == (g->value % vector == 0));
        } else {
            CHECK(p->dtype == TC_DTYPE_I64);
            CHECK(l->args[i] == &l->i64s[i]);
            CHECK_EQ_INT(l->i64s[i], g->value);
            CHECK(has_fact(&l->options, p->name, vector) == (g->value % vector == 0));
        }
    }

    /* compile each specialization once, with the facts as tc_jit passes them */
    char key[320];
    int off = ptx_key_plan(key, sizeof key, l->req.kernel, l->plan.num_warps, l->options.num_stages, l->plan.constexprs,
                           l->plan.num_constexprs);
    ptx_key_facts(key, sizeof key, off, &l->options, l->divisibility, l->num_args);
    tc_binary *bin =
        ptx_compile_once(key, &l->req, &l->options, k, l->divisibility, l->num_args, l->plan.num_warps, diags);
    /* the tensor maps (TMA) of the specialization: over which parameters */
    map_bases = 0;
    if (bin) {
        for (size_t i = 0; i < tc_binary_kernel_num_tensor_maps(bin, 0); i++) {
            tc_tensor_map_desc m;
            CHECK_EQ_INT(tc_binary_kernel_tensor_map(bin, 0, i, &m), TC_OK);
            CHECK(m.base >= 0 && (size_t)m.base < k->num_params && k->params[m.base].is_pointer);
            map_bases |= 1u << m.base;
        }
        num_with_maps += map_bases != 0;
    }
    compiled = bin != NULL;
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    rt_meta_free(&sig);
    return TC_OK;
}

/* The GPU test's shapes and layouts (tests/gpu/test_matmul.c), and the benchmark's. */
TEST(test_matmul_launches_compile) {
    ptx_check_begin();
    rt_matmul_launch_hook = checking_hook;

    static const int64_t shapes[][3] = {{1, 64, 64},        {17, 33, 40},       {1000, 37, 129}, {64, 64, 64},
                                        {1024, 1024, 1024}, {4096, 4096, 4096}, {1, 4096, 4096}, {300, 200, 8}};
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int layout = 0; layout < 4; layout++) /* NN, TN (A column-major), NT, TT with C column-major */
            for (int variant = 0; variant < 3; variant++) {
                int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
                tc_dtype t = dtypes[(si + (size_t)layout) % 2];
                bool at = layout & 1, bt = layout & 2;
                int64_t sam = at ? 1 : K, sak = at ? M : 1, sbk = bt ? 1 : N, sbn = bt ? K : 1;
                int64_t scm = layout == 3 ? 1 : N, scn = layout == 3 ? M : 1;
                /* variant 0: no bias; 1: bias, an activation; 2: misaligned pointers */
                tc_activation act = variant == 1 ? (tc_activation)(1 + (si + (size_t)layout) % 4) : TC_ACTIVATION_NONE;
                CUdeviceptr c = 0x100000 + (variant == 2 ? 2 : 0), a = 0x200000, b = 0x300000 + (variant == 2 ? 6 : 0);
                CUdeviceptr bias = variant == 1 ? 0x400000 : 0;
                Given g[] = {{"c", (int64_t)c, true},
                             {"a", (int64_t)a, true},
                             {"b", (int64_t)b, true},
                             {"bias", (int64_t)(bias ? bias : c), bias != 0},
                             {"M", M, 0},
                             {"N", N, 0},
                             {"K", K, 0},
                             {"stride_am", sam, 0},
                             {"stride_ak", sak, 0},
                             {"stride_bk", sbk, 0},
                             {"stride_bn", sbn, 0},
                             {"stride_cm", scm, 0},
                             {"stride_cn", scn, 0}};
                given = g;
                num_given = sizeof g / sizeof g[0];
                given_dtype = t;
                launches = 0;
                CHECK_EQ_INT(tc_matmul(FAKE_CTX, NULL, t, c, a, b, bias, M, N, K, sam, sak, sbk, sbn, scm, scn, act),
                             TC_OK);
                CHECK_EQ_INT(launches, 1);
                /* TMA on sm_90a: never over b when b is misaligned (parameter 2), never over c (a store);
                 * both operands of the big aligned row-major products */
                if (compiled && variant == 2)
                    CHECK((map_bases & (1u << 2)) == 0);
                if (compiled)
                    CHECK((map_bases & 1u) == 0);
                if (compiled && K >= 1024 && M >= 1024 && layout == 0 && variant != 2)
                    CHECK_EQ_INT(map_bases, (1u << 1) | (1u << 2));
            }

    static const int64_t bd[][4] = {{1000, 4, 37, 129}, {8192, 64, 64, 64}, {4096, 4, 1024, 1024},
                                    {17, 3, 16, 48},    {1, 8, 16, 16},     {300, 2, 100, 24}};
    for (size_t si = 0; si < sizeof bd / sizeof bd[0]; si++)
        for (int wt = 0; wt < 2; wt++) {
            int64_t batch = bd[si][0], nb = bd[si][1], bin = bd[si][2], bout = bd[si][3];
            tc_dtype t = (si + (size_t)wt) % 2 ? TC_DTYPE_BF16 : TC_DTYPE_F16;
            int64_t sxm = nb * bin + 8, sym = nb * bout, swb = bin * bout;
            int64_t swk = wt ? 1 : bout, swn = wt ? bin : 1; /* wt: w stored [nblocks, bout, bin] */
            CUdeviceptr y = 0x100000, x = 0x200000, w = 0x300000;
            Given g[] = {{"y", (int64_t)y, true}, {"x", (int64_t)x, true}, {"w", (int64_t)w, true},
                         {"batch", batch, 0},     {"bin", bin, 0},         {"bout", bout, 0},
                         {"stride_xm", sxm, 0},   {"stride_wb", swb, 0},   {"stride_wk", swk, 0},
                         {"stride_wn", swn, 0},   {"stride_ym", sym, 0}};
            given = g;
            num_given = sizeof g / sizeof g[0];
            given_dtype = t;
            launches = 0;
            CHECK_EQ_INT(tc_blockdiag_matmul(FAKE_CTX, NULL, t, y, x, w, batch, nb, bin, bout, sxm, swb, swk, swn, sym),
                         TC_OK);
            CHECK_EQ_INT(launches, 1);
        }

    rt_matmul_launch_hook = NULL;
    fprintf(stderr, "  stdlib_matmul: %d specializations copy operands with TMA\n", num_with_maps);
    CHECK(num_with_maps >= 10);
    CHECK(ptx_check_end("stdlib_matmul") >= 60);
}

UNIT_SUITE(stdlib_matmul, test_matmul_plans, test_matmul_validation, test_matmul_launches_compile)
