/*
 * matmul.c — matrix multiply as C calls (include/tilec/stdlib.h):
 * tc_matmul and tc_blockdiag_matmul (lib/matmul.tile, lib/blockdiag_matmul.tile).
 *
 * The same three steps as the row-wise entry points (rowwise.c), with their own
 * parameter lists (the kernels have 11 and 11 runtime parameters and up to
 * 11 constexprs):
 *
 *  1. Validate (mm_check, bd_check, with stdlib.c's checkers): dtype f16 or bf16, extents in 1..2^30, strides
 *     >= 0 whose largest offset fits an int64 in bytes, an output layout
 *     that gives every element its own address, and a grid the driver can
 *     launch. Pointers as for the row-wise calls; bias may be 0.
 *  2. Plan (mm_plan_*): which stride of each matrix is 1 (its *_ORDER, so
 *     that the kernel sees the contiguous dimension), the tile BM x BN x BK
 *     and num_warps. The policy, for the mma.sync tensor-core path of dot:
 *       - tiles of 128 x 256 x 64 with 8 warps when that still gives at least
 *         2 * MM_FILL_PROGRAMS programs (4096 x 4096 and larger), the
 *         pointers are 16-byte aligned and extents and strides are multiples
 *         of 8, and: on mma.sync (sm_80, sm_90) there is no epilogue and A, B
 *         and C are row-major (ptxas -v: 252 registers, no spill; 256 x 128 is
 *         as fast but spills 4 bytes; other variants of the big tile spill,
 *         so they keep 128 x 128); on wgmma (sm_90a, two warpgroups of
 *         m64n256) every matrix has a unit stride, any epilogue (166 to 178
 *         registers, no spill; general strides spill 8 bytes);
 *       - else tiles of 128 x 128 when the matrix is big enough; an extent below
 *         128 gets the next power of two at least 16 (a dot's minimum), so
 *         M = 1 (a matrix-vector product) runs 16-row tiles;
 *       - fewer than MM_FILL_PROGRAMS tiles (about one per SM of an H100)
 *         halve the larger tile side, down to 64, so that a 1024 x 1024
 *         product runs on 128 programs rather than 64;
 *       - K in steps of 32 with the 128 x 128 tiles (64 spilled 4 bytes
 *         with 4 warps and 3 pipeline stages, for little gain) and 64 with the
 *         128 x 256 tile (K below a step: the next power of two at least 16);
 *         EVEN_K when K is a multiple of the step;
 *       - 4 warps; GROUP_M = 8 (Triton's tutorial).
 *     The tiles are the fastest of bench/matmul.py --sweep at 4096^3 f16
 *     among those that do not spill: with the pipeline pass the 128 x 256
 *     and 256 x 128 tiles with 8 warps lead, 128 x 128 with 4 warps is close
 *     behind, narrower tiles further back (bench/RESULTS.md has the sweeps).
 *     blockdiag_matmul: BN and BK cover bout and bin (up to 128 and 64),
 *     BM is 128 rows of the batch for narrow blocks (BN <= 64), else 64,
 *     halved while there are fewer than MM_FILL_PROGRAMS programs; 4 warps.
 *  3. Specialize and launch as the row-wise calls do: 16-byte aligned
 *     pointers through the request's divisibility, extents and strides
 *     divisible by 8 elements (16 bytes) through tc_options.params. Without
 *     a bias the kernel's bias parameter gets c (never read: HAS_BIAS is
 *     false), as tc_launch refuses null pointers.
 *
 * Kernels come from the context's memo (stdlib.c), as for the row-wise
 * calls.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <stdbool.h>
#include <string.h>

enum {
    MM_MAX_EXTENT = 1 << 30,
    MM_MAX_BLOCKS = 65535, /* grid.y */
    MM_FILL_PROGRAMS = 128,
    MM_BIG_TILE = 128,
    MM_MIN_TILE = 16,
    MM_FILL_MIN_TILE = 64,
    MM_BK = 32,     /* K step of the 128 x 128 tiles: 64 spills 4 bytes with 4 warps and 3 stages */
    MM_BK_BIG = 64, /* K step of the 128 x 256 tile */
    MM_WARPS = 4,
    MM_HUGE_TILE_N = 256, /* with MM_HUGE_WARPS, when there are >= 2 tiles of 128 x 256 per SM */
    MM_HUGE_WARPS = 8,
    MM_GROUP_M = 8,
};

tc_status (*rt_matmul_launch_hook)(const RtMatmulLaunch *launch);

/* Does every element of the layout get its own address? (After
 * rt_stdlib_check_strides, so that the products below do not overflow.) */
static bool distinct_addresses(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
    if (rows == 1 && cols == 1)
        return true;
    if (rows == 1)
        return sc >= 1;
    if (cols == 1)
        return sr >= 1;
    return (sc >= 1 && sr >= sc * cols) || (sr >= 1 && sc >= sr * rows);
}

/* Which stride of a matrix is 1: 1 the inner (column) one, 2 the outer
 * (row) one, 0 neither. */
static int order_of(int64_t stride_row, int64_t stride_col) {
    return stride_col == 1 ? 1 : stride_row == 1 ? 2 : 0;
}

/* An input matrix's strides: >= 0, offsets within an int64. */
static tc_status check_input(const char *entry, const char *what, const char *nr, const char *nc, int64_t rows,
                             int64_t cols, int64_t sr, int64_t sc) {
    const RtStdlibDim dims[] = {{nr, rows, sr}, {nc, cols, sc}};
    return rt_stdlib_check_strides(entry, what, dims, 2);
}

/* An output matrix's strides: as an input's, and no two elements at one address. */
static tc_status check_output(const char *entry, const char *what, const char *nr, const char *nc, int64_t rows,
                              int64_t cols, int64_t sr, int64_t sc) {
    tc_status st = check_input(entry, what, nr, nc, rows, cols, sr, sc);
    if (st == TC_OK && !distinct_addresses(rows, cols, sr, sc))
        st = rt_fail(TC_ERROR_INVALID_ARGUMENT,
                     "%s: %s's strides (%s %lld, %s %lld) give two of its %lld x %lld elements the same address", entry,
                     what, nr, (long long)sr, nc, (long long)sc, (long long)rows, (long long)cols);
    return st;
}

/* Every pointer argument: not 0, aligned to its element. */
static tc_status check_ptrs(const char *entry, tc_dtype dtype, const char *const *names, const CUdeviceptr *ptrs,
                            int n) {
    tc_status st = TC_OK;
    for (int i = 0; i < n && st == TC_OK; i++)
        st = rt_stdlib_check_ptr(entry, names[i], ptrs[i], rt_dtype_size(dtype));
    return st;
}

static void set_cx(tc_matmul_plan *p, const char *name, tc_constexpr_kind kind, int64_t v) {
    p->constexprs[p->num_constexprs++] = (tc_constexpr){name, kind, v, 0};
}

/* The tile and warps of tc_matmul (step 2). */
static void mm_tiles(int64_t M, int64_t N, int64_t K, bool plain, tc_matmul_plan *p) {
    /* The big tile only where it was measured spill-free enough: no epilogue,
     * extents and strides that allow 16-byte vectors (plain). */
    if (plain && K >= MM_BK_BIG && M >= MM_BIG_TILE && N >= MM_HUGE_TILE_N &&
        rt_stdlib_cdiv(M, MM_BIG_TILE) * rt_stdlib_cdiv(N, MM_HUGE_TILE_N) >= 2 * MM_FILL_PROGRAMS) {
        p->block_m = MM_BIG_TILE;
        p->block_n = MM_HUGE_TILE_N;
        p->block_k = MM_BK_BIG;
        p->num_warps = MM_HUGE_WARPS;
        return;
    }
    int bm = rt_stdlib_pow2_clamped(M, MM_MIN_TILE, MM_BIG_TILE),
        bn = rt_stdlib_pow2_clamped(N, MM_MIN_TILE, MM_BIG_TILE);
    while (rt_stdlib_cdiv(M, bm) * rt_stdlib_cdiv(N, bn) < MM_FILL_PROGRAMS &&
           (bm > MM_FILL_MIN_TILE || bn > MM_FILL_MIN_TILE)) {
        if (bn >= bm)
            bn /= 2;
        else
            bm /= 2;
    }
    p->block_m = bm;
    p->block_n = bn;
    p->block_k = rt_stdlib_pow2_clamped(K, MM_MIN_TILE, MM_BK);
    p->num_warps = MM_WARPS;
}

static tc_status mm_check(const char *entry, tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak,
                          int64_t sbk, int64_t sbn, int64_t scm, int64_t scn, tc_activation act) {
    tc_status st;
    if ((st = rt_stdlib_check_dtype(entry, dtype, false)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "M", M, MM_MAX_EXTENT)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "N", N, MM_MAX_EXTENT)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "K", K, MM_MAX_EXTENT)) != TC_OK)
        return st;
    if ((int)act < TC_ACTIVATION_NONE || (int)act > TC_ACTIVATION_SILU)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: act (%d) is not a tc_activation", entry, (int)act);
    if ((st = check_input(entry, "A", "stride_am", "stride_ak", M, K, sam, sak)) != TC_OK ||
        (st = check_input(entry, "B", "stride_bk", "stride_bn", K, N, sbk, sbn)) != TC_OK ||
        (st = check_output(entry, "C", "stride_cm", "stride_cn", M, N, scm, scn)) != TC_OK)
        return st;
    return TC_OK;
}

static void mm_plan(tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn,
                    int64_t scm, int64_t scn, bool has_bias, tc_activation act, bool aligned, const char *arch,
                    tc_matmul_plan *p) {
    memset(p, 0, sizeof *p);
    p->file = "matmul.tile";
    p->kernel = "matmul";
    bool vectors = M % 8 == 0 && N % 8 == 0 && K % 8 == 0 && (sam % 8 == 0 || sam == 1) && (sak % 8 == 0 || sak == 1) &&
                   (sbk % 8 == 0 || sbk == 1) && (sbn % 8 == 0 || sbn == 1) && (scm % 8 == 0 || scm == 1) &&
                   (scn % 8 == 0 || scn == 1);
    /* mma.sync: transposed operands and epilogues spill with the big tile;
     * wgmma (sm_90a) keeps its operands in shared memory and takes any
     * epilogue and either contiguous dimension (general strides spill 8
     * bytes) */
    bool wgmma = rt_stdlib_wgmma(arch);
    bool row_major = sak == 1 && sbn == 1 && scn == 1;
    bool unit = order_of(sam, sak) && order_of(sbk, sbn) && order_of(scm, scn);
    bool big = wgmma ? unit : row_major && !has_bias && act == TC_ACTIVATION_NONE;
    mm_tiles(M, N, K, aligned && vectors && big, p);
    p->group_m = MM_GROUP_M;
    p->a_order = order_of(sam, sak);
    p->b_order = order_of(sbk, sbn);
    p->c_order = order_of(scm, scn);
    p->even_k = K % p->block_k == 0;
    p->grid = (tc_dim3){(unsigned)(rt_stdlib_cdiv(M, p->block_m) * rt_stdlib_cdiv(N, p->block_n)), 1, 1};
    set_cx(p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    set_cx(p, "BM", TC_CONSTEXPR_INT, p->block_m);
    set_cx(p, "BN", TC_CONSTEXPR_INT, p->block_n);
    set_cx(p, "BK", TC_CONSTEXPR_INT, p->block_k);
    set_cx(p, "GROUP_M", TC_CONSTEXPR_INT, p->group_m);
    set_cx(p, "A_ORDER", TC_CONSTEXPR_INT, p->a_order);
    set_cx(p, "B_ORDER", TC_CONSTEXPR_INT, p->b_order);
    set_cx(p, "C_ORDER", TC_CONSTEXPR_INT, p->c_order);
    set_cx(p, "EVEN_K", TC_CONSTEXPR_BOOL, p->even_k);
    set_cx(p, "HAS_BIAS", TC_CONSTEXPR_BOOL, has_bias);
    set_cx(p, "ACT", TC_CONSTEXPR_INT, (int64_t)act);
}

static bool unit_or_eights(int64_t stride) { return stride == 1 || stride % 8 == 0; }

/* The value of constexpr `name` in the plan (it is there). */
static void set_plan_cx(tc_constexpr *cx, size_t n, const char *name, int64_t v) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(cx[i].name, name) == 0)
            cx[i].i = v;
}

/* Takes the tuning table's tile for these extents, if it has one for the
 * context's GPU: the kernel is known by the plan's constexprs less the
 * tuned ones and EVEN_K, which follows from BK (docs/autotune.md). */
static void mm_apply_tuned(tc_context *ctx, const char *arch, int64_t M, int64_t N, int64_t K, tc_matmul_plan *p) {
    static const char *const leave_out[] = {"BM", "BN", "BK", "EVEN_K", NULL};
    int64_t keys[3] = {M, N, K}, bm, bn, bk;
    RtStdlibTuned t;
    if (!rt_stdlib_tuned_plan(ctx, arch, p->file, p->kernel, p->constexprs, p->num_constexprs, leave_out, keys, 3,
                              &t) ||
        !rt_stdlib_tuned_value(&t, "BM", &bm) ||
        !rt_stdlib_tuned_value(&t, "BN", &bn) || !rt_stdlib_tuned_value(&t, "BK", &bk))
        return;
    p->block_m = (int)bm;
    p->block_n = (int)bn;
    p->block_k = (int)bk;
    rt_stdlib_tuned_options(&t, &p->num_warps, &p->num_stages, &p->warp_specialize);
    p->even_k = K % p->block_k == 0;
    p->grid = (tc_dim3){(unsigned)(rt_stdlib_cdiv(M, p->block_m) * rt_stdlib_cdiv(N, p->block_n)), 1, 1};
    set_plan_cx(p->constexprs, p->num_constexprs, "BM", bm);
    set_plan_cx(p->constexprs, p->num_constexprs, "BN", bn);
    set_plan_cx(p->constexprs, p->num_constexprs, "BK", bk);
    set_plan_cx(p->constexprs, p->num_constexprs, "EVEN_K", p->even_k);
    p->tuned = 1;
}

/* Plans (after mm_check) and checks that the grid fits the driver's. */
static tc_status mm_plan_checked(const char *entry, tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t sam,
                                 int64_t sak, int64_t sbk, int64_t sbn, int64_t scm, int64_t scn, bool has_bias,
                                 tc_activation act, bool aligned, const char *arch, tc_matmul_plan *p) {
    mm_plan(dtype, M, N, K, sam, sak, sbk, sbn, scm, scn, has_bias, act, aligned, arch, p);
    int64_t tiles = rt_stdlib_cdiv(M, p->block_m) * rt_stdlib_cdiv(N, p->block_n);
    if (tiles > INT32_MAX) {
        memset(p, 0, sizeof *p);
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %lld x %lld needs %lld tiles of %d x %d, more than a grid holds",
                       entry, (long long)M, (long long)N, (long long)tiles, p->block_m, p->block_n);
    }
    return TC_OK;
}

static tc_status bd_check(const char *entry, tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                          int64_t sxm, int64_t swb, int64_t swk, int64_t swn, int64_t sym) {
    tc_status st;
    if ((st = rt_stdlib_check_dtype(entry, dtype, false)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "batch", batch, MM_MAX_EXTENT)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "nblocks", nblocks, MM_MAX_BLOCKS)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "bin", bin, MM_MAX_EXTENT)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "bout", bout, MM_MAX_EXTENT)) != TC_OK)
        return st;
    int64_t xcols = nblocks * bin, ycols = nblocks * bout; /* < 2^46 */
    /* one row (batch 1) takes any row stride */
    if ((batch > 1 && (st = rt_stdlib_check_row_stride(entry, "stride_xm", sxm, "nblocks * bin", xcols)) != TC_OK) ||
        (batch > 1 && (st = rt_stdlib_check_row_stride(entry, "stride_ym", sym, "nblocks * bout", ycols)) != TC_OK))
        return st;
    const RtStdlibDim x[] = {{"stride_xm", batch, sxm}, {NULL, xcols, 1}};
    const RtStdlibDim y[] = {{"stride_ym", batch, sym}, {NULL, ycols, 1}};
    const RtStdlibDim w[] = {{"stride_wb", nblocks, swb}, {"stride_wk", bin, swk}, {"stride_wn", bout, swn}};
    if ((st = rt_stdlib_check_strides(entry, "x", x, 2)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "y", y, 2)) != TC_OK ||
        (st = rt_stdlib_check_strides(entry, "w", w, 3)) != TC_OK)
        return st;
    return TC_OK;
}

static tc_status bd_plan_checked(const char *entry, tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin,
                                 int64_t bout, int64_t swk, int64_t swn, tc_matmul_plan *p) {
    memset(p, 0, sizeof *p);
    p->file = "blockdiag_matmul.tile";
    p->kernel = "blockdiag_matmul";
    int bn = rt_stdlib_pow2_clamped(bout, MM_MIN_TILE, MM_BIG_TILE);
    int bm = rt_stdlib_pow2_clamped(batch, MM_MIN_TILE, bn <= MM_FILL_MIN_TILE ? MM_BIG_TILE : MM_FILL_MIN_TILE);
    while (bm > MM_MIN_TILE &&
           rt_stdlib_cdiv(batch, bm) * rt_stdlib_cdiv(bout, bn) < rt_stdlib_cdiv(MM_FILL_PROGRAMS, nblocks))
        bm /= 2;
    p->block_m = bm;
    p->block_n = bn;
    p->block_k = rt_stdlib_pow2_clamped(bin, MM_MIN_TILE, MM_BK_BIG);
    p->num_warps = MM_WARPS;
    p->a_order = 1;
    p->b_order = order_of(swk, swn);
    p->c_order = 1;
    p->even_k = bin % p->block_k == 0;
    int64_t tiles = rt_stdlib_cdiv(batch, bm) * rt_stdlib_cdiv(bout, bn);
    if (tiles > INT32_MAX) {
        memset(p, 0, sizeof *p);
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: batch %lld x bout %lld needs %lld tiles, more than a grid holds",
                       entry, (long long)batch, (long long)bout, (long long)tiles);
    }
    p->grid = (tc_dim3){(unsigned)tiles, (unsigned)nblocks, 1};
    set_cx(p, "T", TC_CONSTEXPR_DTYPE, (int64_t)dtype);
    set_cx(p, "BM", TC_CONSTEXPR_INT, p->block_m);
    set_cx(p, "BN", TC_CONSTEXPR_INT, p->block_n);
    set_cx(p, "BK", TC_CONSTEXPR_INT, p->block_k);
    set_cx(p, "W_ORDER", TC_CONSTEXPR_INT, p->b_order);
    set_cx(p, "EVEN_K", TC_CONSTEXPR_BOOL, p->even_k);
    return TC_OK;
}

tc_status tc_matmul_plan_for(tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t stride_am, int64_t stride_ak,
                             int64_t stride_bk, int64_t stride_bn, int64_t stride_cm, int64_t stride_cn, int has_bias,
                             tc_activation act, tc_matmul_plan *out) {
    const char *entry = "tc_matmul_plan_for";
    tc_status st = rt_stdlib_check_given(entry, "out", out);
    if (st != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    st = mm_check(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, act);
    if (st != TC_OK)
        return st;
    return mm_plan_checked(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           has_bias != 0, act, true, TC_DEFAULT_ARCH, out);
}

tc_status tc_blockdiag_matmul_plan_for(tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                                       int64_t stride_xm, int64_t stride_wb, int64_t stride_wk, int64_t stride_wn,
                                       int64_t stride_ym, tc_matmul_plan *out) {
    const char *entry = "tc_blockdiag_matmul_plan_for";
    tc_status st = rt_stdlib_check_given(entry, "out", out);
    if (st != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    st = bd_check(entry, dtype, batch, nblocks, bin, bout, stride_xm, stride_wb, stride_wk, stride_wn, stride_ym);
    if (st != TC_OK)
        return st;
    return bd_plan_checked(entry, dtype, batch, nblocks, bin, bout, stride_wk, stride_wn, out);
}

/* ---- step 3 ---- */

/* Where the helpers of stdlib.c append l's arguments. */
static RtStdlibArgs mm_args(RtMatmulLaunch *l) {
    return (RtStdlibArgs){
        l->names, l->ptrs, l->i64s, l->i32s, l->divisibility, l->args, &l->num_args, l->facts, &l->options.num_params};
}

static void mm_begin(RtMatmulLaunch *l, const char *entry, tc_context *ctx, CUstream stream) {
    memset(l, 0, sizeof *l);
    l->entry = entry;
    l->ctx = ctx;
    l->stream = stream;
    tc_options_init(&l->options);
    l->options.params = l->facts;
}

/* Fills the JIT request from the plan and the arguments, then compiles
 * (once) and launches, or hands the launch to the test hook. */
static tc_status mm_launch(RtMatmulLaunch *l) {
    l->options.num_warps = l->plan.num_warps;
    l->options.num_stages = l->plan.num_stages;
    int ws = rt_stdlib_forced_warp_specialize(l->ctx, rt_matmul_launch_hook != NULL);
    l->options.warp_specialize = ws >= 0 ? ws : l->plan.warp_specialize;
    if (!l->options.num_params)
        l->options.params = NULL;
    tc_status st = rt_stdlib_request(l->entry, l->plan.file, l->plan.kernel, l->plan.constexprs, l->plan.num_constexprs,
                                     &l->options, l->divisibility, l->num_args, &l->req);
    if (st != TC_OK)
        return st;
    if (rt_matmul_launch_hook)
        return rt_matmul_launch_hook(l);
    return rt_stdlib_jit_launch(l->ctx, &l->req, l->plan.grid, l->stream, l->args, l->num_args);
}

tc_status tc_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr c, CUdeviceptr a, CUdeviceptr b,
                    CUdeviceptr bias, int64_t M, int64_t N, int64_t K, int64_t stride_am, int64_t stride_ak,
                    int64_t stride_bk, int64_t stride_bn, int64_t stride_cm, int64_t stride_cn, tc_activation act) {
    const char *entry = "tc_matmul";
    static const char *const ptr_names[] = {"c", "a", "b", "bias"};
    const CUdeviceptr ptrs[] = {c, a, b, bias};
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = mm_check(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, act)) !=
            TC_OK ||
        (st = check_ptrs(entry, dtype, ptr_names, ptrs, bias ? 4 : 3)) != TC_OK) /* bias may be 0 */
        return st;
    RtMatmulLaunch l;
    mm_begin(&l, entry, ctx, stream);
    const char *arch = rt_stdlib_target(ctx, rt_matmul_launch_hook != NULL);
    if ((st = mm_plan_checked(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                              bias != 0, act, (a | b | c) % 16 == 0, arch, &l.plan)) != TC_OK)
        return st;
    /* What the table's tiles were tuned on: sm_90a, 16-byte aligned
     * operands whose extents and strides are multiples of 8 elements, each
     * row- or column-major; elsewhere the plan stands. */
    if (!rt_matmul_launch_hook && rt_stdlib_wgmma(arch) && (a | b | c | bias) % 16 == 0 && M % 8 == 0 &&
        N % 8 == 0 && K % 8 == 0 && l.plan.a_order && l.plan.b_order && l.plan.c_order &&
        unit_or_eights(stride_am) && unit_or_eights(stride_ak) && unit_or_eights(stride_bk) &&
        unit_or_eights(stride_bn) && unit_or_eights(stride_cm) && unit_or_eights(stride_cn) &&
        rt_stdlib_forced_warp_specialize(ctx, false) < 0) {
        mm_apply_tuned(ctx, arch, M, N, K, &l.plan); /* tiles of 64 or more: no more programs than the plan's */
    }
    int64_t vector = 16 / (int64_t)rt_dtype_size(dtype);
    RtStdlibArgs args = mm_args(&l);
    rt_stdlib_arg_ptr(&args, "c", c, true);
    rt_stdlib_arg_ptr(&args, "a", a, true);
    rt_stdlib_arg_ptr(&args, "b", b, true);
    rt_stdlib_arg_ptr(&args, "bias", bias ? bias : c, bias != 0); /* without a bias: never read */
    rt_stdlib_arg_int(&args, "M", M, true, vector);
    rt_stdlib_arg_int(&args, "N", N, true, vector);
    rt_stdlib_arg_int(&args, "K", K, true, vector);
    rt_stdlib_arg_int(&args, "stride_am", stride_am, false, vector);
    rt_stdlib_arg_int(&args, "stride_ak", stride_ak, false, vector);
    rt_stdlib_arg_int(&args, "stride_bk", stride_bk, false, vector);
    rt_stdlib_arg_int(&args, "stride_bn", stride_bn, false, vector);
    rt_stdlib_arg_int(&args, "stride_cm", stride_cm, false, vector);
    rt_stdlib_arg_int(&args, "stride_cn", stride_cn, false, vector);
    return mm_launch(&l);
}

tc_status tc_blockdiag_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr x,
                              CUdeviceptr w, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                              int64_t stride_xm, int64_t stride_wb, int64_t stride_wk, int64_t stride_wn,
                              int64_t stride_ym) {
    const char *entry = "tc_blockdiag_matmul";
    static const char *const ptr_names[] = {"y", "x", "w"};
    const CUdeviceptr ptrs[] = {y, x, w};
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = bd_check(entry, dtype, batch, nblocks, bin, bout, stride_xm, stride_wb, stride_wk, stride_wn,
                       stride_ym)) != TC_OK ||
        (st = check_ptrs(entry, dtype, ptr_names, ptrs, 3)) != TC_OK)
        return st;
    RtMatmulLaunch l;
    mm_begin(&l, entry, ctx, stream);
    if ((st = bd_plan_checked(entry, dtype, batch, nblocks, bin, bout, stride_wk, stride_wn, &l.plan)) != TC_OK)
        return st;
    int64_t vector = 16 / (int64_t)rt_dtype_size(dtype);
    RtStdlibArgs args = mm_args(&l);
    rt_stdlib_arg_ptr(&args, "y", y, true);
    rt_stdlib_arg_ptr(&args, "x", x, true);
    rt_stdlib_arg_ptr(&args, "w", w, true);
    rt_stdlib_arg_int(&args, "batch", batch, true, vector);
    rt_stdlib_arg_int(&args, "bin", bin, true, vector);
    rt_stdlib_arg_int(&args, "bout", bout, true, vector);
    rt_stdlib_arg_int(&args, "stride_xm", stride_xm, false, vector);
    rt_stdlib_arg_int(&args, "stride_wb", stride_wb, false, vector);
    rt_stdlib_arg_int(&args, "stride_wk", stride_wk, false, vector);
    rt_stdlib_arg_int(&args, "stride_wn", stride_wn, false, vector);
    rt_stdlib_arg_int(&args, "stride_ym", stride_ym, false, vector);
    return mm_launch(&l);
}
