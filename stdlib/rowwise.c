/*
 * rowwise.c — the row-wise kernels as C calls (include/tilec/stdlib.h):
 * softmax, RMSNorm and SwiGLU, forward and backward, and the element-wise
 * sum (lib/softmax.tile, lib/rmsnorm.tile, lib/swiglu.tile, lib/add.tile).
 *
 * Every entry point is the same three steps (stdlib_internal.h), driven by a table that
 * describes the kernel's runtime parameters (OpDesc):
 *
 *  1. Validate: ctx, dtype, rows and cols, every pointer (not 0, aligned to
 *     its element), every stride (>= cols, and the last row's end addressable
 *     in 64 bits). A failure is TC_ERROR_INVALID_ARGUMENT with a message that
 *     names the entry point and the argument; nothing is compiled or launched.
 *  2. Plan (plan_for): BLOCK, the tile width, is the next power of two of
 *     cols (at least 32, the kernels' minimum). Up to MAX_SINGLE_TILE columns
 *     the forward kernels keep the whole row in registers (SINGLE_TILE: one
 *     read, one write); wider rows loop over tiles of LOOP_BLOCK. The
 *     backward kernels always loop (they read each row twice), over tiles of
 *     at most LOOP_BLOCK. Rows wider than LONG_ROW take LONG_ROW_BLOCK in
 *     the softmax loops and RMSNorm's forward loop (long_row_warps()) where
 *     their last tile is mostly full (mostly_full()). num_warps grows with the tile (warps_for) so that a
 *     thread holds 8 to 32 elements of a tile of 256 columns or more: enough
 *     16-byte vectors to keep the memory system busy, few enough registers
 *     not to spill; narrower tiles get one warp. The softmax and RMSNorm
 *     forward loops over rows whose shared stride leaves them off 16-byte
 *     boundaries take REALIGN instead (realign(): aligned windows of the
 *     rows, tiles of REALIGN_BLOCK on 8 or 16 warps). A loop's tile and
 *     warps come from the tuning table where it has them (apply_tuned()).
 *  3. Specialize and launch: each pointer that is 16-byte aligned, and each
 *     stride and cols that is a multiple of 16 / element bytes (so that every
 *     row starts on a 16-byte boundary and a row's end does not split a
 *     vector), is a fact the compiler may use to vectorize. Pointer facts go
 *     through the JIT request's per-parameter divisibility (tc_jit keys its
 *     variants on them); integer facts through tc_options.params with the
 *     divisibility 16 / element bytes, which is all vectorization needs
 *     (tc_jit itself only knows "divisible by 16", which an f16 row of 1000
 *     columns is not). tc_jit compiles once per specialization and process
 *     and caches on disk; one program per row is launched on the stream
 *     (8 for the softmax and RMSNorm loops' f16 and bf16 rows wider than LONG_ROW
 *     or RMS_LONG_ROW on sm_90 and later: row_cluster()).
 *
 * The sources come from rt_stdlib_sources (built from the .tile files of
 * lib/ at build time), so a program linked with libtilec needs no library
 * files.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

_Static_assert(RT_STDLIB_MAX_PARAMS <= sizeof(((tc_stdlib_plan *)0)->aligned_params) / sizeof(tc_param_spec),
               "tc_stdlib_plan.aligned_params must hold a fact per parameter");

/* Tile widths and warps: the policy of step 2. Tune with bench/rowwise.py. */
enum {
    MIN_BLOCK = 32,           /* lib kernels static_assert BLOCK >= 32 */
    MAX_SINGLE_TILE = 16384,  /* widest row kept in registers: 32 f32 values per thread at 16 warps */
    LOOP_BLOCK = 8192,        /* tile of the loops over wider rows */
    REALIGN_BLOCK = 4096,     /* their tile with REALIGN (realign()): 16 elements a thread at 8 warps; on the
                                 H200 at 4096x50257, softmax 0.326 ms against 0.384 at 8192 (8 warps), RMSNorm
                                 0.313 at 16 warps against 0.361 (bench/RESULTS.md) */
    LONG_ROW = 65536,         /* rows wider than this: the softmax loops and RMSNorm's forward loop take tiles of
                                 LONG_ROW_BLOCK (long_row_warps()) where their last one is mostly full
                                 (mostly_full()) */
    LONG_ROW_BLOCK = 16384,   /* on the H200 (tilec tune, cold L2, ms; 8192 on 8 warps, the loops' tile, against
                                 16384): softmax fwd f16 1024x131072 0.203 / 0.181 (16 warps), bf16 2048x128256
                                 0.378 / 0.342, f16 512x262144 0.212 / 0.201; RMSNorm fwd 0.192 / 0.176 (32 warps),
                                 0.372 / 0.341, 0.203 / 0.200; softmax bwd 0.31 or more / 0.300 (16 warps) at
                                 131072, 0.58 or more / 0.569 at 128256 (bench/RESULTS.md) */
    RMS_LONG_ROW = 98304,     /* RMSNorm's rows wider than this split over clusters too (row_cluster()): on the H200
                                 (bench/rowsplit.sh, ms, one program a row / 8) the forward at bf16 2048x128256
                                 0.3379 / 0.3032, f16 1024x131072 0.1746 / 0.1564, 512x262144 0.1960 / 0.1673, the
                                 backward 0.8588 / 0.7228, 0.4420 / 0.3773, 0.4415 / 0.3928; at bf16 4096x65544 one
                                 program a row is faster (0.2981 / 0.3407, 0.7752 / 0.8076) */
    ROW_CLUSTER = 8,          /* the softmax loops' programs of one row wider than LONG_ROW on sm_90 and later
                                 (row_cluster()): on the H200 (tilec tune, ms) the forward at 1024x131072 0.1669
                                 against 0.1805 for one program a row, 512x262144 0.1868 / 0.2017, bf16 2048x128256
                                 0.3234 / 0.3419, 2048x100008 0.3378 / 0.3859; the backward at 2048x100008 0.4996 /
                                 0.5940, bf16 4096x65544 0.6543 / 0.6882 (bench/RESULTS.md) */
    ELEMENTWISE_BLOCK = 1024, /* the element-wise kernels' widest tile: 8 elements a thread at 4 warps, few
                                 registers and so many warps at once (on the H200 2-4% faster than 2048) */
    MAX_GRID_Y = 65535,       /* the launch's limit on grid.y */
    MAX_PARAMS = RT_STDLIB_MAX_PARAMS,
};

static int warps_for(int64_t block) {
    if (block <= 256)
        return 1;
    if (block <= 512)
        return 2;
    if (block <= 1024)
        return 4;
    if (block <= 8192)
        return 8; /* as Triton's tuned row-wise kernels: 16 warps measured slower at 8192 (bench/RESULTS.md) */
    return 16;
}

/* Whether a row of `cols` ends in a tile of `block` that is more than half
 * full (or full): else the tile of half the width wastes less. On the H200
 * at 2048x100008 (its last 16384 tile 10% full) softmax's loop took 0.429 ms
 * on 16384 and 16 warps against 0.405 on 8192 and 8 (bench/RESULTS.md). */
static bool mostly_full(int64_t cols, int64_t block) {
    return cols % block == 0 || cols % block > block / 2;
}

/* The warps of a loop over rows wider than LONG_ROW, for the kernels that
 * take LONG_ROW_BLOCK there; 0 for the others. */
static int long_row_warps(tc_stdlib_op op) {
    switch (op) {
    case TC_STDLIB_SOFTMAX_FWD:
    case TC_STDLIB_SOFTMAX_BWD: return 16;
    case TC_STDLIB_RMSNORM_FWD: return 32;
    default: return 0;
    }
}

/* ---- the kernels' runtime parameters ---- */

typedef enum ParamKind {
    PARAM_PTR_T,   /* T*: a matrix or the weight */
    PARAM_PTR_F32, /* f32*: rstd, dweight */
    PARAM_STRIDE,  /* i64 */
    PARAM_COLS,    /* i32 n_cols */
    PARAM_EPS,     /* f32 */
} ParamKind;

typedef struct OpParam {
    const char *name; /* as in the .tile source, and in the entry point's messages */
    ParamKind kind;
} OpParam;

/* How a kernel covers its rows. */
typedef enum OpShape {
    SHAPE_ROW,         /* one program per row, looping over the row's tiles */
    SHAPE_ROW_SINGLE,  /* as SHAPE_ROW, or the whole row in one tile (constexpr SINGLE_TILE) when it fits */
    SHAPE_ELEMENTWISE, /* programs (rows, grid_y) over the rows' column tiles (lib/add.tile, swiglu.tile) */
} OpShape;

typedef struct OpDesc {
    const char *entry;  /* "tc_softmax_fwd": for messages */
    const char *file;   /* embedded source */
    const char *kernel; /* in the source */
    OpShape shape;
    int num_params;
    OpParam params[MAX_PARAMS]; /* in the kernel's order */
} OpDesc;

static const OpDesc ops[] = {
    [TC_STDLIB_SOFTMAX_FWD] = {"tc_softmax_fwd",
                               "softmax.tile",
                               "softmax_fwd",
                               SHAPE_ROW_SINGLE,
                               5,
                               {{"out", PARAM_PTR_T},
                                {"x", PARAM_PTR_T},
                                {"stride_out", PARAM_STRIDE},
                                {"stride_x", PARAM_STRIDE},
                                {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_SOFTMAX_BWD] = {"tc_softmax_bwd",
                               "softmax.tile",
                               "softmax_bwd",
                               SHAPE_ROW,
                               7,
                               {{"dx", PARAM_PTR_T},
                                {"y", PARAM_PTR_T},
                                {"dy", PARAM_PTR_T},
                                {"stride_dx", PARAM_STRIDE},
                                {"stride_y", PARAM_STRIDE},
                                {"stride_dy", PARAM_STRIDE},
                                {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_RMSNORM_FWD] = {"tc_rmsnorm_fwd",
                               "rmsnorm.tile",
                               "rmsnorm_fwd",
                               SHAPE_ROW_SINGLE,
                               8,
                               {{"y", PARAM_PTR_T},
                                {"rstd", PARAM_PTR_F32},
                                {"x", PARAM_PTR_T},
                                {"weight", PARAM_PTR_T},
                                {"stride_y", PARAM_STRIDE},
                                {"stride_x", PARAM_STRIDE},
                                {"n_cols", PARAM_COLS},
                                {"eps", PARAM_EPS}}},
    [TC_STDLIB_RMSNORM_BWD] = {"tc_rmsnorm_bwd",
                               "rmsnorm.tile",
                               "rmsnorm_bwd",
                               SHAPE_ROW,
                               10,
                               {{"dx", PARAM_PTR_T},
                                {"dweight", PARAM_PTR_F32},
                                {"dy", PARAM_PTR_T},
                                {"x", PARAM_PTR_T},
                                {"weight", PARAM_PTR_T},
                                {"rstd", PARAM_PTR_F32},
                                {"stride_dx", PARAM_STRIDE},
                                {"stride_dy", PARAM_STRIDE},
                                {"stride_x", PARAM_STRIDE},
                                {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_SWIGLU_FWD] = {"tc_swiglu_fwd",
                              "swiglu.tile",
                              "swiglu_fwd",
                              SHAPE_ELEMENTWISE,
                              7,
                              {{"out", PARAM_PTR_T},
                               {"gate", PARAM_PTR_T},
                               {"up", PARAM_PTR_T},
                               {"stride_out", PARAM_STRIDE},
                               {"stride_gate", PARAM_STRIDE},
                               {"stride_up", PARAM_STRIDE},
                               {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_SWIGLU_BWD] = {"tc_swiglu_bwd",
                              "swiglu.tile",
                              "swiglu_bwd",
                              SHAPE_ELEMENTWISE,
                              11,
                              {{"dgate", PARAM_PTR_T},
                               {"dup", PARAM_PTR_T},
                               {"dout", PARAM_PTR_T},
                               {"gate", PARAM_PTR_T},
                               {"up", PARAM_PTR_T},
                               {"stride_dgate", PARAM_STRIDE},
                               {"stride_dup", PARAM_STRIDE},
                               {"stride_dout", PARAM_STRIDE},
                               {"stride_gate", PARAM_STRIDE},
                               {"stride_up", PARAM_STRIDE},
                               {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_ADD] = {"tc_add",
                       "add.tile",
                       "add",
                       SHAPE_ELEMENTWISE,
                       7,
                       {{"out", PARAM_PTR_T},
                        {"a", PARAM_PTR_T},
                        {"b", PARAM_PTR_T},
                        {"stride_out", PARAM_STRIDE},
                        {"stride_a", PARAM_STRIDE},
                        {"stride_b", PARAM_STRIDE},
                        {"n_cols", PARAM_COLS}}},
};

/* One argument of an entry point, in the kernel's parameter order. */
typedef union ArgValue {
    CUdeviceptr ptr; /* PARAM_PTR_* */
    int64_t i;       /* PARAM_STRIDE, PARAM_COLS */
    float f;         /* PARAM_EPS */
} ArgValue;

/* ---- plans ---- */

static int64_t block_for(int64_t cols) {
    return rt_stdlib_pow2_clamped(cols, MIN_BLOCK, MAX_SINGLE_TILE);
}

static void plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *p) {
    const OpDesc *d = &ops[op];
    memset(p, 0, sizeof *p);
    p->file = d->file;
    p->kernel = d->kernel;
    int64_t block = block_for(cols);
    p->single_tile = d->shape == SHAPE_ROW_SINGLE && cols <= block;
    if (!p->single_tile && block > LOOP_BLOCK)
        block = LOOP_BLOCK;
    p->grid_y = 1;
    if (d->shape == SHAPE_ELEMENTWISE) {
        if (block > ELEMENTWISE_BLOCK)
            block = ELEMENTWISE_BLOCK;
        int64_t tiles = (cols + block - 1) / block;
        p->grid_y = (unsigned)(tiles < MAX_GRID_Y ? tiles : MAX_GRID_Y);
    }
    p->block = block;
    p->num_warps = warps_for(block);
    if (!p->single_tile && cols > LONG_ROW && long_row_warps(op) && mostly_full(cols, LONG_ROW_BLOCK)) {
        p->block = block = LONG_ROW_BLOCK;
        p->num_warps = long_row_warps(op);
    }
    p->constexprs[0] = (tc_constexpr){"T", TC_CONSTEXPR_DTYPE, (int64_t)dtype, 0};
    p->constexprs[1] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, block, 0};
    p->num_constexprs = 2;
    if (d->shape == SHAPE_ROW_SINGLE)
        p->constexprs[p->num_constexprs++] = (tc_constexpr){"SINGLE_TILE", TC_CONSTEXPR_BOOL, p->single_tile, 0};
    int64_t vector = 16 / (int64_t)rt_dtype_size(dtype);
    for (int i = 0; i < d->num_params; i++) {
        const OpParam *q = &d->params[i];
        if (q->kind == PARAM_PTR_T || q->kind == PARAM_PTR_F32)
            p->aligned_params[p->num_aligned_params++] = (tc_param_spec){q->name, 16};
        else if (q->kind == PARAM_STRIDE || q->kind == PARAM_COLS)
            p->aligned_params[p->num_aligned_params++] = (tc_param_spec){q->name, vector};
    }
}

tc_status tc_stdlib_plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *out) {
    const char *entry = "tc_stdlib_plan_for";
    tc_status st = rt_stdlib_check_given(entry, "out", out);
    if (st != TC_OK)
        return st;
    memset(out, 0, sizeof *out);
    if ((int)op < 0 || (size_t)op >= sizeof ops / sizeof ops[0])
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: unknown op %d", entry, (int)op);
    if ((st = rt_stdlib_check_dtype(entry, dtype, true)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "cols", cols, RT_STDLIB_MAX_COLS)) != TC_OK)
        return st;
    plan_for(op, dtype, cols, out);
    return TC_OK;
}

/* ---- the common entry point ---- */

static tc_status validate(const OpDesc *d, tc_context *ctx, tc_dtype dtype, int64_t rows, int64_t cols,
                          const ArgValue *v) {
    const char *entry = d->entry;
    tc_status st;
    if ((st = rt_stdlib_check_rows(entry, ctx, dtype, rows, cols)) != TC_OK)
        return st;
    for (int i = 0; i < d->num_params && st == TC_OK; i++) {
        const OpParam *q = &d->params[i];
        switch (q->kind) {
        case PARAM_PTR_T: st = rt_stdlib_check_ptr(entry, q->name, v[i].ptr, rt_dtype_size(dtype)); break;
        case PARAM_PTR_F32: st = rt_stdlib_check_ptr(entry, q->name, v[i].ptr, 4); break;
        case PARAM_STRIDE: {
            st = rt_stdlib_check_row_stride(entry, q->name, v[i].i, "cols", cols);
            /* one past the last row's end, rows * stride + cols elements,
             * must be an offset the kernel can compute */
            int64_t end = cols;
            if (st == TC_OK && !rt_stdlib_span_add(&end, rows + 1, v[i].i))
                st = rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) times rows (%lld) overflows a 64-bit offset",
                             entry, q->name, (long long)v[i].i, (long long)rows);
            break;
        }
        case PARAM_COLS: break;
        case PARAM_EPS: st = rt_stdlib_check_finite(entry, q->name, v[i].f, true); break;
        }
    }
    return st;
}

tc_status (*rt_stdlib_launch_hook)(const RtStdlibLaunch *launch);
bool rt_stdlib_hook_tunes;

/* Gives launch l's loop another tile and warps (BLOCK is the plan's second
 * constexpr, plan_for). */
static void set_tile(RtStdlibLaunch *l, int64_t block, int warps) {
    l->plan.block = block;
    l->plan.num_warps = warps;
    l->plan.constexprs[1].i = block;
    l->cx[1].i = block;
}

/* Whether a row loop (softmax and RMSNorm forward) walks 16-byte aligned
 * windows of its rows (the kernels' REALIGN): when its tensors share one row
 * stride that is not a multiple of 16 bytes and are 16-byte aligned
 * themselves, every row but every eighth starts off a 16-byte boundary, and
 * only such windows let the row's inner tiles move vectors. RMSNorm's weight
 * may be anywhere: its loads are off a boundary either way. (The softmax
 * backward and cross-entropy measured slower with windows on the H200: 0.536
 * against 0.512 ms at 4096x50257, 1.006 against 0.809 ms at 8192x50257;
 * bench/RESULTS.md.) */
static bool realign(tc_stdlib_op op, tc_dtype dtype, const tc_stdlib_plan *plan, const ArgValue *v) {
    if (plan->single_tile || (op != TC_STDLIB_SOFTMAX_FWD && op != TC_STDLIB_RMSNORM_FWD))
        return false;
    const OpDesc *d = &ops[op];
    int64_t vector = 16 / (int64_t)rt_dtype_size(dtype), stride = -1;
    for (int i = 0; i < d->num_params; i++) {
        const OpParam *q = &d->params[i];
        if (q->kind == PARAM_PTR_T && v[i].ptr % 16 != 0 && strcmp(q->name, "weight") != 0)
            return false;
        if (q->kind == PARAM_STRIDE) {
            if (stride >= 0 && v[i].i != stride)
                return false;
            stride = v[i].i;
        }
    }
    return stride % vector != 0;
}

/* The programs that share a row of the softmax and RMSNorm loops (their
 * CLUSTER): ROW_CLUSTER for f16 and bf16 rows wider than LONG_ROW (RMSNorm:
 * RMS_LONG_ROW) on a GPU with thread-block clusters (sm_90 and later),
 * where a row does not stay in L2 between the loop's two passes but each
 * program's part does; 1 otherwise: for f32 (the softmax forward's parts
 * combine through their log-sum-exps, whose rounding at large logits, 1e-4
 * relative at 1000, an f32 output would show; the other f32 rows are
 * unmeasured), realigned rows (unmeasured there) and grids that would pass
 * the launch's limit on grid.x. Cross-entropy takes CLUSTER too but stays
 * one program a row: split, it measured 1.1-2.3x the time on the H200
 * (bench/rowsplit.sh; bench/RESULTS.md). */
static int row_cluster(tc_stdlib_op op, tc_dtype dtype, const tc_stdlib_plan *plan, int64_t rows, int64_t cols,
                       bool realigned, const char *arch) {
    bool softmax = op == TC_STDLIB_SOFTMAX_FWD || op == TC_STDLIB_SOFTMAX_BWD;
    bool rms = op == TC_STDLIB_RMSNORM_FWD || op == TC_STDLIB_RMSNORM_BWD;
    if (!(softmax || rms) || cols <= (rms ? RMS_LONG_ROW : LONG_ROW) || dtype == TC_DTYPE_F32 || plan->single_tile ||
        realigned || !rt_stdlib_clusters(arch) || rows > INT32_MAX / ROW_CLUSTER)
        return 1;
    return ROW_CLUSTER;
}

/* The tile and warps of each program's part of a row split over a cluster
 * (bench/rowsplit.sh on the H200, bench/RESULTS.md): for the softmax
 * loops 4096 on 4 warps for parts of up to 16384 columns, else 8192 on 8;
 * RMSNorm's forward loop 2048 on 8, else 4096 on 16; its backward 4096 on
 * 4, else 8192 on 8; a tile half as wide (not under 2048) where the part's
 * last tile would be half empty. */
static void cluster_tile(tc_stdlib_op op, int64_t part, int64_t *block, int *warps) {
    int64_t b = op == TC_STDLIB_RMSNORM_FWD ? 2048 : 4096;
    if (part > 16384)
        b *= 2;
    while (b > 2048 && !mostly_full(part, b))
        b /= 2;
    *block = b;
    *warps = op == TC_STDLIB_RMSNORM_FWD ? (int)(b / 256) : b >= 8192 ? 8 : 4;
}

/* A row loop's tile and warps from the tuning table, when it has them for
 * this kernel specialization, the row width's bucket and ctx's GPU (`tilec
 * tune` on the installed lib/softmax.tile or lib/rmsnorm.tile with the
 * constexprs the library passes less BLOCK: T, SINGLE_TILE = false for the
 * forward kernels, REALIGN = true or CLUSTER = 8 where it takes them, with
 * CLUSTER's grid of 8 programs a row; docs/autotune.md), and
 * they lie in the kernels' @autotune space (a hand-edited table may say
 * anything). Not for one-tile forward rows, whose tile is the row, nor under
 * the launch hook (the tests of the plans). */
static void apply_tuned(tc_context *ctx, int64_t cols, RtStdlibLaunch *l) {
    static const char *const leave_out[] = {"BLOCK", NULL};
    int64_t keys[1] = {cols}, block;
    RtStdlibTuned t;
    if (!rt_stdlib_tuned_plan(ctx, rt_stdlib_target(ctx, false), l->plan.file, l->plan.kernel, l->cx, l->num_cx,
                              leave_out, keys, 1, &t) ||
        !rt_stdlib_tuned_value(&t, "BLOCK", &block))
        return;
    int64_t warps = t.num_warps > 0 ? t.num_warps : l->plan.num_warps;
    if (block < 2048 || block > 16384 || !tc_is_pow2(block) || warps < 4 || warps > 32 || !tc_is_pow2(warps) ||
        block < 128 * warps || block > 1024 * warps)
        return;
    set_tile(l, block, (int)warps);
}

/* Step 3's inputs: the arguments in the kernel's C types, the facts about
 * them, and the JIT request, all inside *l. */
static tc_status prepare(tc_stdlib_op op, tc_context *ctx, CUstream stream, tc_dtype dtype, int64_t rows, int64_t cols,
                         const ArgValue *v, RtStdlibLaunch *l) {
    const OpDesc *d = &ops[op];
    memset(l, 0, sizeof *l);
    l->op = op;
    l->ctx = ctx;
    l->stream = stream;
    plan_for(op, dtype, cols, &l->plan);
    int64_t vector = 16 / (int64_t)rt_dtype_size(dtype);
    size_t num_facts = 0;
    for (int i = 0; i < d->num_params; i++) {
        const OpParam *q = &d->params[i];
        switch (q->kind) {
        case PARAM_PTR_T:
        case PARAM_PTR_F32:
            l->ptrs[i] = v[i].ptr;
            l->args[i] = &l->ptrs[i];
            l->divisibility[i] = v[i].ptr % 16 == 0 ? 16 : 0;
            break;
        case PARAM_STRIDE:
            l->ints[i] = v[i].i;
            l->args[i] = &l->ints[i];
            if (v[i].i % vector == 0)
                l->facts[num_facts++] = (tc_param_spec){q->name, vector};
            break;
        case PARAM_COLS:
            l->n_cols = (int32_t)cols;
            l->args[i] = &l->n_cols;
            if (cols % vector == 0)
                l->facts[num_facts++] = (tc_param_spec){q->name, vector};
            break;
        case PARAM_EPS:
            l->eps = v[i].f;
            l->args[i] = &l->eps;
            break;
        }
    }
    l->num_args = (size_t)d->num_params;
    l->grid = (tc_dim3){(unsigned)rows, l->plan.grid_y, 1};
    memcpy(l->cx, l->plan.constexprs, l->plan.num_constexprs * sizeof l->cx[0]);
    l->num_cx = l->plan.num_constexprs;
    bool realigned = realign(op, dtype, &l->plan, v);
    if (realigned) { /* l->cx, not the plan's 3 constexprs, is what compiles */
        set_tile(l, REALIGN_BLOCK, op == TC_STDLIB_RMSNORM_FWD ? 16 : 8);
        l->cx[l->num_cx++] = (tc_constexpr){"REALIGN", TC_CONSTEXPR_BOOL, 1, 0};
    }
    int cluster =
        row_cluster(op, dtype, &l->plan, rows, cols, realigned, rt_stdlib_target(ctx, rt_stdlib_launch_hook != NULL));
    if (cluster > 1) {
        int64_t part = (cols + cluster * 8 - 1) / (cluster * 8) * 8, block;
        int warps;
        cluster_tile(op, part, &block, &warps);
        set_tile(l, block, warps);
        l->cx[l->num_cx++] = (tc_constexpr){"CLUSTER", TC_CONSTEXPR_INT, cluster, 0};
        l->grid.x = (unsigned)(rows * cluster);
    }
    if ((rt_stdlib_launch_hook == NULL || rt_stdlib_hook_tunes) && !l->plan.single_tile &&
        d->shape != SHAPE_ELEMENTWISE)
        apply_tuned(ctx, cols, l);

    tc_options_init(&l->options);
    l->options.num_warps = l->plan.num_warps;
    l->options.params = num_facts ? l->facts : NULL;
    l->options.num_params = num_facts;
    return rt_stdlib_request(d->entry, d->file, d->kernel, l->cx, l->num_cx, &l->options, l->divisibility, l->num_args,
                             &l->req);
}

static tc_status run(tc_stdlib_op op, tc_context *ctx, CUstream stream, tc_dtype dtype, int64_t rows, int64_t cols,
                     const ArgValue *v) {
    tc_status st = validate(&ops[op], ctx, dtype, rows, cols, v);
    if (st != TC_OK)
        return st;
    RtStdlibLaunch l;
    if ((st = prepare(op, ctx, stream, dtype, rows, cols, v, &l)) != TC_OK)
        return st;
    if (rt_stdlib_launch_hook)
        return rt_stdlib_launch_hook(&l);
    return rt_stdlib_jit_launch(ctx, &l.req, l.grid, stream, l.args, l.num_args);
}

/* ---- the entry points ---- */

tc_status tc_softmax_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr x, int64_t rows,
                         int64_t cols, int64_t stride_out, int64_t stride_x) {
    ArgValue v[] = {{.ptr = out}, {.ptr = x}, {.i = stride_out}, {.i = stride_x}, {.i = cols}};
    return run(TC_STDLIB_SOFTMAX_FWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_softmax_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr y,
                         CUdeviceptr dy, int64_t rows, int64_t cols, int64_t stride_dx, int64_t stride_y,
                         int64_t stride_dy) {
    ArgValue v[] = {{.ptr = dx},     {.ptr = y},       {.ptr = dy}, {.i = stride_dx},
                    {.i = stride_y}, {.i = stride_dy}, {.i = cols}};
    return run(TC_STDLIB_SOFTMAX_BWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_rmsnorm_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr rstd,
                         CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t cols, int64_t stride_y,
                         int64_t stride_x, float eps) {
    ArgValue v[] = {{.ptr = y},      {.ptr = rstd},   {.ptr = x},  {.ptr = weight},
                    {.i = stride_y}, {.i = stride_x}, {.i = cols}, {.f = eps}};
    return run(TC_STDLIB_RMSNORM_FWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_rmsnorm_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr dweight,
                         CUdeviceptr dy, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr rstd, int64_t rows,
                         int64_t cols, int64_t stride_dx, int64_t stride_dy, int64_t stride_x) {
    ArgValue v[] = {{.ptr = dx},   {.ptr = dweight}, {.ptr = dy},      {.ptr = x},      {.ptr = weight},
                    {.ptr = rstd}, {.i = stride_dx}, {.i = stride_dy}, {.i = stride_x}, {.i = cols}};
    return run(TC_STDLIB_RMSNORM_BWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_swiglu_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr gate,
                        CUdeviceptr up, int64_t rows, int64_t cols, int64_t stride_out, int64_t stride_gate,
                        int64_t stride_up) {
    ArgValue v[] = {{.ptr = out},       {.ptr = gate},    {.ptr = up}, {.i = stride_out},
                    {.i = stride_gate}, {.i = stride_up}, {.i = cols}};
    return run(TC_STDLIB_SWIGLU_FWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_swiglu_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dgate, CUdeviceptr dup,
                        CUdeviceptr dout, CUdeviceptr gate, CUdeviceptr up, int64_t rows, int64_t cols,
                        int64_t stride_dgate, int64_t stride_dup, int64_t stride_dout, int64_t stride_gate,
                        int64_t stride_up) {
    ArgValue v[] = {{.ptr = dgate},     {.ptr = dup},        {.ptr = dout},     {.ptr = gate},
                    {.ptr = up},        {.i = stride_dgate}, {.i = stride_dup}, {.i = stride_dout},
                    {.i = stride_gate}, {.i = stride_up},    {.i = cols}};
    return run(TC_STDLIB_SWIGLU_BWD, ctx, stream, dtype, rows, cols, v);
}

tc_status tc_add(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr a, CUdeviceptr b,
                 int64_t rows, int64_t cols, int64_t stride_out, int64_t stride_a, int64_t stride_b) {
    ArgValue v[] = {{.ptr = out},    {.ptr = a},      {.ptr = b}, {.i = stride_out},
                    {.i = stride_a}, {.i = stride_b}, {.i = cols}};
    return run(TC_STDLIB_ADD, ctx, stream, dtype, rows, cols, v);
}
