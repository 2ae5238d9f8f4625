/*
 * layernorm.c — tc_layernorm_fwd and tc_layernorm_bwd (include/tilec/
 * stdlib.h, lib/layernorm.tile).
 *
 *  1. Validate as the row-wise family does: dtype, rows and cols, every
 *     pointer aligned to its element (bias and dbias may be 0), every row
 *     stride >= cols and the last row addressable; eps finite and >= 0; the
 *     workspace 16-byte aligned and large enough.
 *  2. Plan: forward, the row in one tile up to 16384 columns (the next power
 *     of two, at least 32), else loops over tiles of 8192; a warp per 1024
 *     columns of the tile (1 to 16), and a row held in one tile at 64
 *     registers a thread (min_programs_per_sm = 32 / warps, at most 16).
 *     Backward, one column tile up to 8192 columns, else tiles of 4096 and
 *     the rows' two means computed first (layernorm_bwd_stats); a warp per
 *     1024 columns up to tiles of 2048, per 512 above (at most 16), two
 *     programs an SM up to 8 warps. The rows go in groups, 8 a
 *     multiprocessor for tiles up to 1024 columns, 4 at 2048 and 2 above, at
 *     most one group per row; the groups' partial sums are added in programs
 *     of 16 or 32 columns. The figures behind each choice (H200, bf16) are in
 *     bench/RESULTS.md.
 *  3. Launch with the facts of aligned pointers and strides, as the other
 *     families do.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <stdlib.h>
#include <string.h>

enum {
    LN_MAX_SINGLE_FWD = 16384,
    LN_LOOP_FWD = 8192,
    LN_MAX_SINGLE_BWD = 8192,
    LN_TILE_BWD = 4096,
    LN_REDUCE_WARPS = 8,   /* layernorm_bwd_reduce's warps */
};

/* The forward pass's warps for a tile of block columns: 32 elements a
 * thread, 1 to 16. */
static int ln_warps(int64_t block) {
    int64_t w = block / 1024;
    return w < 1 ? 1 : w > 16 ? 16 : (int)w;
}

/* The forward pass's programs per SM when the row is one tile: as many as
 * 64 registers a thread allow, 32 / warps (the row's 32 f32 values a thread
 * fit; on the H200, bf16, 4-8% faster at 4096-8192 columns than ptxas's own
 * choice of 79-80 registers, 42% at 16384 columns), at most 16, the fewest
 * programs an SM of sm_86 and sm_89 holds (one warp needs no bound anyway:
 * 1024 columns ran as fast with 1 as with 32). */
static int ln_fwd_programs_per_sm(int warps) {
    int n = 32 / warps;
    return n > 16 ? 16 : n;
}

/* The backward pass's warps for a tile of block columns: 32 elements a
 * thread up to 2048 columns, 16 above (the partial sums of dweight and dbias
 * double the registers each element needs), 1 to 16. */
static int ln_bwd_warps(int64_t block) {
    int64_t w = block <= 2048 ? block / 1024 : block / 512;
    return w < 1 ? 1 : w > 16 ? 16 : (int)w;
}

/* Groups of rows per SM: enough warps at once on narrow rows (8 groups of 1
 * warp at 1024 columns ran 1.7x faster than 2 on the H200), few partial
 * sums on wide ones: groups x columns stays 8192-16384 an SM, about 9-17 MB
 * of partials on 132 SMs, whatever the width. */
static int64_t ln_bwd_groups_per_sm(int64_t block) {
    return block <= 1024 ? 8 : block <= 2048 ? 4 : 2;
}

tc_status tc_layernorm_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr mean,
                           CUdeviceptr rstd, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr bias, int64_t rows,
                           int64_t cols, int64_t stride_y, int64_t stride_x, float eps) {
    const char *entry = "tc_layernorm_fwd";
    size_t es = rt_dtype_size(dtype);
    tc_status st;
    if ((st = rt_stdlib_check_rows(entry, ctx, dtype, rows, cols)) != TC_OK ||
        (st = rt_stdlib_check_matrix(entry, "y", "stride_y", y, es, rows, cols, stride_y)) != TC_OK ||
        (st = rt_stdlib_check_matrix(entry, "x", "stride_x", x, es, rows, cols, stride_x)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "mean", mean, 4)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "rstd", rstd, 4)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "weight", weight, es)) != TC_OK ||
        (bias && (st = rt_stdlib_check_ptr(entry, "bias", bias, es)) != TC_OK) ||
        (st = rt_stdlib_check_finite(entry, "eps", eps, true)) != TC_OK)
        return st;
    int64_t block = rt_stdlib_pow2_clamped(cols, 32, LN_MAX_SINGLE_FWD);
    bool single = cols <= block;
    if (!single)
        block = LN_LOOP_FWD;
    int64_t vector = 16 / (int64_t)es;
    RtStdlibKernelLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    RtStdlibArgs args = rt_stdlib_kernel_args(l);
    rt_stdlib_arg_ptr(&args, "y", y, true);
    rt_stdlib_arg_ptr(&args, "mean_out", mean, true);
    rt_stdlib_arg_ptr(&args, "rstd_out", rstd, true);
    rt_stdlib_arg_ptr(&args, "x", x, true);
    rt_stdlib_arg_ptr(&args, "weight", weight, true);
    rt_stdlib_arg_ptr(&args, "bias", bias ? bias : weight, bias != 0);
    rt_stdlib_arg_int(&args, "stride_y", stride_y, false, vector);
    rt_stdlib_arg_int(&args, "stride_x", stride_x, false, vector);
    rt_stdlib_arg_int(&args, "n_cols", cols, true, vector);
    rt_stdlib_kernel_arg_f32(l, "eps", eps);
    l->cx[0] = (tc_constexpr){"T", TC_CONSTEXPR_DTYPE, (int64_t)dtype, 0};
    l->cx[1] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, block, 0};
    l->cx[2] = (tc_constexpr){"SINGLE_TILE", TC_CONSTEXPR_BOOL, single, 0};
    l->cx[3] = (tc_constexpr){"HAS_BIAS", TC_CONSTEXPR_BOOL, bias != 0, 0};
    l->num_cx = 4;
    int warps = ln_warps(block);
    l->min_programs_per_sm = single ? ln_fwd_programs_per_sm(warps) : 0;
    st = rt_stdlib_kernel_launch(ctx, stream, entry, "layernorm.tile", "layernorm_fwd", warps,
                                 (tc_dim3){(unsigned)rows, 1, 1}, l);
    free(l);
    return st;
}

/* The backward plan: the column tile, whether it holds the row, the groups
 * of rows, and the workspace's parts (partials, then the stats). */
typedef struct LnBwdPlan {
    int64_t block, tiles, groups, rows_per_group;
    bool single;
    size_t partial_bytes, stats_bytes;
} LnBwdPlan;

static void ln_bwd_plan(const tc_context *ctx, int64_t rows, int64_t cols, LnBwdPlan *p) {
    p->block = rt_stdlib_pow2_clamped(cols, 32, LN_MAX_SINGLE_BWD);
    p->single = cols <= p->block;
    if (!p->single)
        p->block = LN_TILE_BWD;
    p->tiles = rt_stdlib_cdiv(cols, p->block);
    int64_t want = (int64_t)tc_context_multiprocessors(ctx) * ln_bwd_groups_per_sm(p->block);
    if (want < 1)
        want = 1;
    p->rows_per_group = rt_stdlib_cdiv(rows, want < rows ? want : rows);
    p->groups = rt_stdlib_cdiv(rows, p->rows_per_group);
    p->partial_bytes = (size_t)p->groups * (size_t)cols * 4;
    p->stats_bytes = p->single ? 0 : (size_t)rows * 8;
}

tc_status tc_layernorm_bwd_workspace_size(tc_context *ctx, int64_t rows, int64_t cols, size_t *bytes) {
    const char *entry = "tc_layernorm_bwd_workspace_size";
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "bytes", bytes)) != TC_OK)
        return st;
    *bytes = 0;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "rows", rows, INT32_MAX)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "cols", cols, RT_STDLIB_MAX_COLS)) != TC_OK)
        return st;
    LnBwdPlan p;
    ln_bwd_plan(ctx, rows, cols, &p);
    *bytes = 2 * p.partial_bytes + p.stats_bytes;
    return TC_OK;
}

tc_status tc_layernorm_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr dweight,
                           CUdeviceptr dbias, CUdeviceptr dy, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr mean,
                           CUdeviceptr rstd, int64_t rows, int64_t cols, int64_t stride_dx, int64_t stride_dy,
                           int64_t stride_x, CUdeviceptr workspace, size_t workspace_bytes) {
    const char *entry = "tc_layernorm_bwd";
    size_t es = rt_dtype_size(dtype);
    tc_status st;
    if ((st = rt_stdlib_check_rows(entry, ctx, dtype, rows, cols)) != TC_OK ||
        (st = rt_stdlib_check_matrix(entry, "dx", "stride_dx", dx, es, rows, cols, stride_dx)) != TC_OK ||
        (st = rt_stdlib_check_matrix(entry, "dy", "stride_dy", dy, es, rows, cols, stride_dy)) != TC_OK ||
        (st = rt_stdlib_check_matrix(entry, "x", "stride_x", x, es, rows, cols, stride_x)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "dweight", dweight, 4)) != TC_OK ||
        (dbias && (st = rt_stdlib_check_ptr(entry, "dbias", dbias, 4)) != TC_OK) ||
        (st = rt_stdlib_check_ptr(entry, "weight", weight, es)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "mean", mean, 4)) != TC_OK ||
        (st = rt_stdlib_check_ptr(entry, "rstd", rstd, 4)) != TC_OK)
        return st;
    if ((st = rt_stdlib_check_workspace(entry, workspace, 0, SIZE_MAX, NULL)) != TC_OK) /* before the plan */
        return st;
    LnBwdPlan p;
    ln_bwd_plan(ctx, rows, cols, &p);
    if (p.tiles > 65535)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: cols (%lld) needs more than 65535 tiles of %d (grid.y)", entry,
                       (long long)cols, LN_TILE_BWD);
    size_t need = 2 * p.partial_bytes + p.stats_bytes;
    if ((st = rt_stdlib_check_workspace(entry, workspace, workspace_bytes, need, "tc_layernorm_bwd_workspace_size")) !=
        TC_OK)
        return st;
    CUdeviceptr pdw = workspace, pdb = workspace + p.partial_bytes, stats = workspace + 2 * p.partial_bytes;
    int64_t vector = 16 / (int64_t)es;
    tc_constexpr tcx = {"T", TC_CONSTEXPR_DTYPE, (int64_t)dtype, 0};
    RtStdlibKernelLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    RtStdlibArgs args;
    st = TC_OK;
    if (!p.single) { /* the rows' two means first */
        args = rt_stdlib_kernel_args(l);
        rt_stdlib_arg_ptr(&args, "stats", stats, true);
        rt_stdlib_arg_ptr(&args, "dy", dy, true);
        rt_stdlib_arg_ptr(&args, "x", x, true);
        rt_stdlib_arg_ptr(&args, "weight", weight, true);
        rt_stdlib_arg_ptr(&args, "mean", mean, true);
        rt_stdlib_arg_ptr(&args, "rstd", rstd, true);
        rt_stdlib_arg_int(&args, "stride_dy", stride_dy, false, vector);
        rt_stdlib_arg_int(&args, "stride_x", stride_x, false, vector);
        rt_stdlib_arg_int(&args, "n_cols", cols, true, vector);
        l->cx[0] = tcx;
        l->cx[1] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, LN_LOOP_FWD, 0};
        l->num_cx = 2;
        st = rt_stdlib_kernel_launch(ctx, stream, entry, "layernorm.tile", "layernorm_bwd_stats", ln_warps(LN_LOOP_FWD),
                                     (tc_dim3){(unsigned)rows, 1, 1}, l);
    }
    if (st == TC_OK) {
        memset(l, 0, sizeof *l);
        args = rt_stdlib_kernel_args(l);
        rt_stdlib_arg_ptr(&args, "dx", dx, true);
        rt_stdlib_arg_ptr(&args, "partial_dw", pdw, true);
        rt_stdlib_arg_ptr(&args, "partial_db", pdb, true);
        rt_stdlib_arg_ptr(&args, "dy", dy, true);
        rt_stdlib_arg_ptr(&args, "x", x, true);
        rt_stdlib_arg_ptr(&args, "weight", weight, true);
        rt_stdlib_arg_ptr(&args, "mean", mean, true);
        rt_stdlib_arg_ptr(&args, "rstd", rstd, true);
        rt_stdlib_arg_ptr(&args, "stats", p.single ? mean : stats, !p.single);
        rt_stdlib_arg_int(&args, "stride_dx", stride_dx, false, vector);
        rt_stdlib_arg_int(&args, "stride_dy", stride_dy, false, vector);
        rt_stdlib_arg_int(&args, "stride_x", stride_x, false, vector);
        rt_stdlib_arg_int(&args, "n_rows", rows, true, 0);
        rt_stdlib_arg_int(&args, "n_cols", cols, true, vector);
        rt_stdlib_arg_int(&args, "rows_per_group", p.rows_per_group, true, 0);
        l->cx[0] = tcx;
        l->cx[1] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, p.block, 0};
        l->cx[2] = (tc_constexpr){"SINGLE_TILE", TC_CONSTEXPR_BOOL, p.single, 0};
        l->num_cx = 3;
        int warps = ln_bwd_warps(p.block);
        l->min_programs_per_sm = warps <= 8 ? 2 : 1; /* 128 registers at 8 warps: 5% faster than 141 at 4096 */
        st = rt_stdlib_kernel_launch(ctx, stream, entry, "layernorm.tile", "layernorm_bwd", warps,
                                     (tc_dim3){(unsigned)p.groups, (unsigned)p.tiles, 1}, l);
    }
    if (st == TC_OK) {
        memset(l, 0, sizeof *l);
        args = rt_stdlib_kernel_args(l);
        rt_stdlib_arg_ptr(&args, "dweight", dweight, true);
        rt_stdlib_arg_ptr(&args, "dbias", dbias ? dbias : dweight, dbias != 0);
        rt_stdlib_arg_ptr(&args, "partial_dw", pdw, true);
        rt_stdlib_arg_ptr(&args, "partial_db", pdb, true);
        rt_stdlib_arg_int(&args, "groups", p.groups, true, 0);
        rt_stdlib_arg_int(&args, "n_cols", cols, true, 4);
        /* [GROUPS, BLOCK] tiles of partials, 1024 elements: 64 x 16 on rows
         * up to 1024 columns (more programs), else 32 x 32 (the fastest of a
         * sweep on the H200 at 1024-4096 columns and 264-2112 groups) */
        int64_t rblock = cols <= 1024 ? 16 : 32, rgroups = 1024 / rblock;
        l->cx[0] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, rblock, 0};
        l->cx[1] = (tc_constexpr){"GROUPS", TC_CONSTEXPR_INT, rgroups, 0};
        l->cx[2] = (tc_constexpr){"HAS_BIAS", TC_CONSTEXPR_BOOL, dbias != 0, 0};
        l->num_cx = 3;
        st = rt_stdlib_kernel_launch(ctx, stream, entry, "layernorm.tile", "layernorm_bwd_reduce", LN_REDUCE_WARPS,
                                     (tc_dim3){(unsigned)rt_stdlib_cdiv(cols, rblock), 1, 1}, l);
    }
    free(l);
    return st;
}
