/*
 * stdlib.c — the standard library's kernels as C calls (include/tilec/stdlib.h).
 *
 * Every entry point is the same three steps, driven by a table that
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
 *     at most LOOP_BLOCK. num_warps grows with the tile (warps_for) so that a
 *     thread holds 8 to 32 elements of a tile of 256 columns or more: enough
 *     16-byte vectors to keep the memory system busy, few enough registers
 *     not to spill; narrower tiles get one warp.
 *  3. Specialize and launch: each pointer that is 16-byte aligned, and each
 *     stride and cols that is a multiple of 16 / element bytes (so that every
 *     row starts on a 16-byte boundary and a row's end does not split a
 *     vector), is a fact the compiler may use to vectorize. Pointer facts go
 *     through the JIT request's per-parameter divisibility (tc_jit keys its
 *     variants on them); integer facts through tc_options.params with the
 *     divisibility 16 / element bytes, which is all vectorization needs
 *     (tc_jit itself only knows "divisible by 16", which an f16 row of 1000
 *     columns is not). tc_jit compiles once per specialization and process
 *     and caches on disk; one program per row is launched on the stream.
 *
 * The sources come from rt_stdlib_sources (built from the .tile files of
 * lib/ at build time), so a program linked with libtilec needs no library
 * files.
 *
 * Cost of a call after the first: validation, a lookup in the context's
 * memo of the kernels tc_jit returned (the request's fields compared by
 * value, without a lock) and tc_launch. tc_jit's own in-memory lookup
 * hashes the 3 KB source (about 12 us on the build machine, four times a
 * bare launch), so it runs only for a request the memo has not seen.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RT_STDLIB_MAX_PARAMS <= sizeof(((tc_stdlib_plan *)0)->aligned_params) / sizeof(tc_param_spec),
               "tc_stdlib_plan.aligned_params must hold a fact per parameter");

/* Tile widths and warps: the policy of step 2. Tune with bench/rowwise.py. */
enum {
    MIN_BLOCK = 32,          /* lib kernels static_assert BLOCK >= 32 */
    MAX_SINGLE_TILE = 16384, /* widest row kept in registers: 32 f32 values per thread at 16 warps */
    LOOP_BLOCK = 8192,       /* tile of the loops over wider rows */
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

typedef struct OpDesc {
    const char *entry;  /* "tc_softmax_fwd": for messages */
    const char *file;   /* embedded source */
    const char *path;   /* the name diagnostics show */
    const char *kernel; /* in the source */
    bool has_single_tile;
    int num_params;
    OpParam params[MAX_PARAMS]; /* in the kernel's order */
} OpDesc;

static const OpDesc ops[] = {
    [TC_STDLIB_SOFTMAX_FWD] = {"tc_softmax_fwd",
                               "softmax.tile",
                               "lib/softmax.tile",
                               "softmax_fwd",
                               true,
                               5,
                               {{"out", PARAM_PTR_T},
                                {"x", PARAM_PTR_T},
                                {"stride_out", PARAM_STRIDE},
                                {"stride_x", PARAM_STRIDE},
                                {"n_cols", PARAM_COLS}}},
    [TC_STDLIB_SOFTMAX_BWD] = {"tc_softmax_bwd",
                               "softmax.tile",
                               "lib/softmax.tile",
                               "softmax_bwd",
                               false,
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
                               "lib/rmsnorm.tile",
                               "rmsnorm_fwd",
                               true,
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
                               "lib/rmsnorm.tile",
                               "rmsnorm_bwd",
                               false,
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
};

/* One argument of an entry point, in the kernel's parameter order. */
typedef union ArgValue {
    CUdeviceptr ptr; /* PARAM_PTR_* */
    int64_t i;       /* PARAM_STRIDE, PARAM_COLS */
    float f;         /* PARAM_EPS */
} ArgValue;

static size_t elem_bytes(tc_dtype t) {
    return t == TC_DTYPE_F32 ? 4 : 2;
}

static bool is_storage_dtype(tc_dtype t) {
    return t == TC_DTYPE_F16 || t == TC_DTYPE_BF16 || t == TC_DTYPE_F32;
}

/* ---- sources and plans ---- */

tc_status tc_stdlib_source(const char *name, const char **text, size_t *len) {
    if (text)
        *text = NULL;
    if (len)
        *len = 0;
    if (!name || !text)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_source: %s is NULL", !name ? "name" : "text");
    for (size_t i = 0; i < rt_stdlib_num_sources; i++)
        if (strcmp(rt_stdlib_sources[i].name, name) == 0) {
            *text = rt_stdlib_sources[i].text;
            if (len)
                *len = rt_stdlib_sources[i].len;
            return TC_OK;
        }
    return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_source: the standard library has no file named '%s'", name);
}

static int64_t block_for(int64_t cols) {
    int64_t b = MIN_BLOCK;
    while (b < cols && b < MAX_SINGLE_TILE)
        b *= 2;
    return b;
}

static void plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *p) {
    const OpDesc *d = &ops[op];
    memset(p, 0, sizeof *p);
    p->file = d->file;
    p->kernel = d->kernel;
    int64_t block = block_for(cols);
    p->single_tile = d->has_single_tile && cols <= block;
    if (!p->single_tile && block > LOOP_BLOCK)
        block = LOOP_BLOCK;
    p->block = block;
    p->num_warps = warps_for(block);
    p->constexprs[0] = (tc_constexpr){"T", TC_CONSTEXPR_DTYPE, (int64_t)dtype, 0};
    p->constexprs[1] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, block, 0};
    p->num_constexprs = 2;
    if (d->has_single_tile)
        p->constexprs[p->num_constexprs++] = (tc_constexpr){"SINGLE_TILE", TC_CONSTEXPR_BOOL, p->single_tile, 0};
    int64_t vector = 16 / (int64_t)elem_bytes(dtype);
    for (int i = 0; i < d->num_params; i++) {
        const OpParam *q = &d->params[i];
        if (q->kind == PARAM_PTR_T || q->kind == PARAM_PTR_F32)
            p->aligned_params[p->num_aligned_params++] = (tc_param_spec){q->name, 16};
        else if (q->kind == PARAM_STRIDE || q->kind == PARAM_COLS)
            p->aligned_params[p->num_aligned_params++] = (tc_param_spec){q->name, vector};
    }
}

tc_status tc_stdlib_plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_plan_for: out is NULL");
    memset(out, 0, sizeof *out);
    if ((int)op < 0 || (size_t)op >= sizeof ops / sizeof ops[0])
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_plan_for: unknown op %d", (int)op);
    if (!is_storage_dtype(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_plan_for: dtype must be f16, bf16 or f32");
    if (cols < 1 || cols > INT32_MAX)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_plan_for: cols (%lld) must be in 1..2^31-1",
                       (long long)cols);
    plan_for(op, dtype, cols, out);
    return TC_OK;
}

/* ---- the common entry point ---- */

static tc_status validate(const OpDesc *d, tc_context *ctx, tc_dtype dtype, int64_t rows, int64_t cols,
                          const ArgValue *v) {
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", d->entry);
    if (!is_storage_dtype(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: dtype must be TC_DTYPE_F16, TC_DTYPE_BF16 or TC_DTYPE_F32",
                       d->entry);
    if (rows < 1 || rows > INT32_MAX)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: rows (%lld) must be in 1..2^31-1", d->entry, (long long)rows);
    if (cols < 1 || cols > INT32_MAX)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: cols (%lld) must be in 1..2^31-1", d->entry, (long long)cols);
    for (int i = 0; i < d->num_params; i++) {
        const OpParam *q = &d->params[i];
        switch (q->kind) {
        case PARAM_PTR_T:
        case PARAM_PTR_F32: {
            size_t align = q->kind == PARAM_PTR_T ? elem_bytes(dtype) : 4;
            if (!v[i].ptr)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is 0", d->entry, q->name);
            if (v[i].ptr % align)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (0x%llx) is not aligned to its %zu-byte elements",
                               d->entry, q->name, (unsigned long long)v[i].ptr, align);
            break;
        }
        case PARAM_STRIDE:
            if (v[i].i < cols)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) is smaller than cols (%lld)", d->entry,
                               q->name, (long long)v[i].i, (long long)cols);
            /* the last row's end, in bytes, must fit an i64 offset */
            if (v[i].i > (INT64_MAX / 8 - cols) / rows)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) times rows (%lld) overflows a 64-bit offset",
                               d->entry, q->name, (long long)v[i].i, (long long)rows);
            break;
        case PARAM_COLS: break;
        case PARAM_EPS:
            if (!isfinite(v[i].f) || v[i].f < 0)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%g) must be finite and >= 0", d->entry, q->name,
                               (double)v[i].f);
            break;
        }
    }
    return TC_OK;
}

tc_status (*rt_stdlib_launch_hook)(const RtStdlibLaunch *launch);

/* Step 3's inputs: the arguments in the kernel's C types, the facts about
 * them, and the JIT request, all inside *l. */
static void prepare(tc_stdlib_op op, tc_context *ctx, CUstream stream, tc_dtype dtype, int64_t rows, int64_t cols,
                    const ArgValue *v, RtStdlibLaunch *l) {
    const OpDesc *d = &ops[op];
    memset(l, 0, sizeof *l);
    l->op = op;
    l->ctx = ctx;
    l->stream = stream;
    plan_for(op, dtype, cols, &l->plan);
    int64_t vector = 16 / (int64_t)elem_bytes(dtype);
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
    l->grid = (tc_dim3){(unsigned)rows, 1, 1};

    tc_options_init(&l->options);
    l->options.num_warps = l->plan.num_warps;
    l->options.params = num_facts ? l->facts : NULL;
    l->options.num_params = num_facts;
    tc_jit_request_init(&l->req);
    for (size_t i = 0; i < rt_stdlib_num_sources; i++)
        if (strcmp(rt_stdlib_sources[i].name, d->file) == 0) {
            l->req.source = rt_stdlib_sources[i].text;
            l->req.source_len = rt_stdlib_sources[i].len;
        }
    l->req.path = d->path;
    l->req.kernel = d->kernel;
    l->req.constexprs = l->plan.constexprs;
    l->req.num_constexprs = l->plan.num_constexprs;
    l->req.options = &l->options;
    l->req.divisibility = l->divisibility;
    l->req.num_divisibility = l->num_args;
}

/* ---- the memo (stdlib_internal.h says why its keys are sound) ---- */

typedef struct RtStdlibMemo RtStdlibMemo;
struct RtStdlibMemo {
    RtStdlibKey key;
    tc_kernel *kernel;  /* tc_jit's result for the key; lives as long as the context */
    RtStdlibMemo *next; /* older entries; immutable once published */
};

static void put(RtStdlibKey *key, uint64_t word) {
    if (key->len < RT_STDLIB_KEY_WORDS)
        key->words[key->len] = word;
    key->len++; /* past the end: rt_stdlib_key says no */
}

static uint64_t addr(const void *p) {
    return (uint64_t)(uintptr_t)p;
}

/* The request's fields that tc_jit's key reads, in the order
 * rt_jit_base_key hashes them, then the per-parameter facts that select a
 * variant (rt_jit_ptx_key). */
bool rt_stdlib_key(const tc_jit_request *r, RtStdlibKey *key) {
    key->len = 0;
    if (!r->source || !r->options || r->args)
        return false; /* a file is read at every call; argument facts are not in the request */
    put(key, addr(r->path));
    put(key, addr(r->source));
    put(key, r->source_len);
    put(key, addr(r->kernel));
    put(key, addr(r->arch)); /* NULL: the context's */
    put(key, r->num_constexprs);
    for (size_t i = 0; i < r->num_constexprs; i++) {
        uint64_t fbits;
        memcpy(&fbits, &r->constexprs[i].f, sizeof fbits);
        put(key, addr(r->constexprs[i].name));
        put(key, (uint64_t)r->constexprs[i].kind);
        put(key, (uint64_t)r->constexprs[i].i);
        put(key, fbits);
    }
    put(key, (uint64_t)r->options->num_warps);
    put(key, (uint64_t)r->options->num_stages);
    put(key, (uint64_t)(r->options->llvm_o3 != 0));
    put(key, r->options->num_params);
    for (size_t i = 0; i < r->options->num_params; i++) {
        put(key, addr(r->options->params[i].name));
        put(key, (uint64_t)r->options->params[i].divisibility);
    }
    put(key, r->num_divisibility);
    for (size_t i = 0; i < r->num_divisibility; i++)
        put(key, (uint64_t)r->divisibility[i]);
    if (key->len <= RT_STDLIB_KEY_WORDS)
        return true;
    key->len = 0;
    return false;
}

bool rt_stdlib_key_equal(const RtStdlibKey *a, const RtStdlibKey *b) {
    return a->len == b->len && memcmp(a->words, b->words, a->len * sizeof a->words[0]) == 0;
}

static tc_kernel *memo_lookup(const RtStdlibMemo *m, const RtStdlibKey *key) {
    for (; m; m = m->next)
        if (rt_stdlib_key_equal(&m->key, key))
            return m->kernel;
    return NULL;
}

/* The context's attached_free: the memo is the context's attached state. */
static void memo_free(void *attached) {
    RtStdlibMemo *m = attached;
    while (m) {
        RtStdlibMemo *next = m->next;
        free(m);
        m = next;
    }
}

tc_kernel *rt_stdlib_memo_find(tc_context *ctx, const RtStdlibKey *key) {
    if (!key->len)
        return NULL;
    return memo_lookup(atomic_load_explicit(&ctx->attached, memory_order_acquire), key);
}

void rt_stdlib_memo_add(tc_context *ctx, const RtStdlibKey *key, tc_kernel *k) {
    if (!key->len)
        return;
    pthread_mutex_lock(&ctx->jit_lock);
    RtStdlibMemo *head = atomic_load_explicit(&ctx->attached, memory_order_relaxed);
    RtStdlibMemo *m = memo_lookup(head, key) ? NULL : malloc(sizeof *m);
    if (m) {
        m->key = *key;
        m->kernel = k;
        m->next = head;
        ctx->attached_free = memo_free;
        atomic_store_explicit(&ctx->attached, m, memory_order_release);
    }
    pthread_mutex_unlock(&ctx->jit_lock);
}

static tc_status run(tc_stdlib_op op, tc_context *ctx, CUstream stream, tc_dtype dtype, int64_t rows, int64_t cols,
                     const ArgValue *v) {
    const OpDesc *d = &ops[op];
    tc_status st = validate(d, ctx, dtype, rows, cols, v);
    if (st != TC_OK)
        return st;
    RtStdlibLaunch l;
    prepare(op, ctx, stream, dtype, rows, cols, v, &l);
    if (!l.req.source)
        return rt_fail(TC_ERROR_INTERNAL, "%s: this libtilec was built without lib/%s", d->entry, d->file);
    if (rt_stdlib_launch_hook)
        return rt_stdlib_launch_hook(&l);
    RtStdlibKey key;
    rt_stdlib_key(&l.req, &key);
    tc_kernel *k = rt_stdlib_memo_find(ctx, &key);
    if (!k) {
        if ((st = tc_jit(ctx, &l.req, &k)) != TC_OK)
            return st; /* tc_last_error() has the compiler's or the driver's message */
        rt_stdlib_memo_add(ctx, &key, k);
    }
    return tc_launch(k, l.grid, stream, l.args, l.num_args);
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

/* ---- matrix multiply: tc_matmul, tc_blockdiag_matmul ----
 *
 * The same three steps as the row-wise entry points, with their own
 * parameter lists (the kernels have 11 and 11 runtime parameters and up to
 * 11 constexprs):
 *
 *  1. Validate (mm_check_*): dtype f16 or bf16, extents in 1..2^30, strides
 *     >= 0 whose largest offset fits an int64 in bytes, an output layout
 *     that gives every element its own address, and a grid the driver can
 *     launch. Pointers as for the row-wise calls; bias may be 0.
 *  2. Plan (mm_plan_*): which stride of each matrix is 1 (its *_ORDER, so
 *     that the kernel sees the contiguous dimension), the tile BM x BN x BK
 *     and num_warps. The policy, for the mma.sync tensor-core path of dot:
 *       - tiles of 128 x 256 x 64 with 8 warps when that still gives at least
 *         2 * MM_FILL_PROGRAMS programs (4096 x 4096 and larger), there is no
 *         epilogue, A, B and C are row-major, the pointers are 16-byte aligned
 *         and extents and strides are multiples of 8: ptxas -v shows 252 registers
 *         and no spill there (256 x 128 is as fast but spills 4 bytes);
 *         other variants of the big tile spill, so they keep 128 x 128;
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
 * A call after the first goes through tc_jit's in-memory lookup (a hash of
 * the source, microseconds); a matmul is long enough that this stays out
 * of the row-wise memo.
 */

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

#define MM_MAX_BYTE_OFFSET (INT64_MAX / 8)

tc_status (*rt_matmul_launch_hook)(const RtMatmulLaunch *launch);

static int64_t cdiv64(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* The smallest power of two >= v, clamped to [lo, hi]. */
static int pow2_clamped(int64_t v, int lo, int hi) {
    int p = lo;
    while (p < v && p < hi)
        p *= 2;
    return p;
}

/* rows x cols elements at offsets i * sr + j * sc: is the largest offset,
 * in bytes of any element type up to 8, within an int64? */
static bool span_fits(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
    if (sr > 0 && rows - 1 > MM_MAX_BYTE_OFFSET / sr)
        return false;
    int64_t used = (rows - 1) * sr;
    return !(sc > 0 && cols - 1 > (MM_MAX_BYTE_OFFSET - used) / sc);
}

/* Does every element of the layout get its own address? (After span_fits,
 * so that the products below do not overflow.) */
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

static bool is_mm_dtype(tc_dtype t) {
    return t == TC_DTYPE_F16 || t == TC_DTYPE_BF16;
}

static tc_status check_extent(const char *entry, const char *name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) must be in 1..%lld", entry, name, (long long)v,
                       (long long)max);
    return TC_OK;
}

/* An input matrix's strides: >= 0, offsets within an int64. */
static tc_status check_input(const char *entry, const char *what, const char *nr, const char *nc, int64_t rows,
                             int64_t cols, int64_t sr, int64_t sc) {
    if (sr < 0 || sc < 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s's strides (%s %lld, %s %lld) must be >= 0", entry, what, nr,
                       (long long)sr, nc, (long long)sc);
    if (!span_fits(rows, cols, sr, sc))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: %s's strides (%s %lld, %s %lld) with %lld x %lld elements overflow a 64-bit offset", entry,
                       what, nr, (long long)sr, nc, (long long)sc, (long long)rows, (long long)cols);
    return TC_OK;
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

static tc_status check_ptr(const char *entry, const char *name, CUdeviceptr p, tc_dtype dtype) {
    if (!p)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is 0", entry, name);
    if (p % elem_bytes(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (0x%llx) is not aligned to its %zu-byte elements", entry,
                       name, (unsigned long long)p, elem_bytes(dtype));
    return TC_OK;
}

static void set_cx(tc_matmul_plan *p, const char *name, tc_constexpr_kind kind, int64_t v) {
    p->constexprs[p->num_constexprs++] = (tc_constexpr){name, kind, v, 0};
}

/* The tile and warps of tc_matmul (step 2). */
static void mm_tiles(int64_t M, int64_t N, int64_t K, bool plain, tc_matmul_plan *p) {
    /* The big tile only where it was measured spill-free enough: no epilogue,
     * extents and strides that allow 16-byte vectors (plain). */
    if (plain && K >= MM_BK_BIG && M >= MM_BIG_TILE && N >= MM_HUGE_TILE_N &&
        cdiv64(M, MM_BIG_TILE) * cdiv64(N, MM_HUGE_TILE_N) >= 2 * MM_FILL_PROGRAMS) {
        p->block_m = MM_BIG_TILE;
        p->block_n = MM_HUGE_TILE_N;
        p->block_k = MM_BK_BIG;
        p->num_warps = MM_HUGE_WARPS;
        return;
    }
    int bm = pow2_clamped(M, MM_MIN_TILE, MM_BIG_TILE), bn = pow2_clamped(N, MM_MIN_TILE, MM_BIG_TILE);
    while (cdiv64(M, bm) * cdiv64(N, bn) < MM_FILL_PROGRAMS && (bm > MM_FILL_MIN_TILE || bn > MM_FILL_MIN_TILE)) {
        if (bn >= bm)
            bn /= 2;
        else
            bm /= 2;
    }
    p->block_m = bm;
    p->block_n = bn;
    p->block_k = pow2_clamped(K, MM_MIN_TILE, MM_BK);
    p->num_warps = MM_WARPS;
}

static tc_status mm_check(const char *entry, tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak,
                          int64_t sbk, int64_t sbn, int64_t scm, int64_t scn, tc_activation act) {
    tc_status st;
    if (!is_mm_dtype(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16", entry);
    if ((st = check_extent(entry, "M", M, MM_MAX_EXTENT)) != TC_OK ||
        (st = check_extent(entry, "N", N, MM_MAX_EXTENT)) != TC_OK ||
        (st = check_extent(entry, "K", K, MM_MAX_EXTENT)) != TC_OK)
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
                    int64_t scm, int64_t scn, bool has_bias, tc_activation act, bool aligned, tc_matmul_plan *p) {
    memset(p, 0, sizeof *p);
    p->file = "matmul.tile";
    p->kernel = "matmul";
    bool vectors = M % 8 == 0 && N % 8 == 0 && K % 8 == 0 && (sam % 8 == 0 || sam == 1) &&
                   (sak % 8 == 0 || sak == 1) && (sbk % 8 == 0 || sbk == 1) && (sbn % 8 == 0 || sbn == 1) &&
                   (scm % 8 == 0 || scm == 1) && (scn % 8 == 0 || scn == 1);
    bool row_major = sak == 1 && sbn == 1 && scn == 1; /* transposed operands spill with the big tile */
    mm_tiles(M, N, K, aligned && vectors && row_major && !has_bias && act == TC_ACTIVATION_NONE, p);
    p->group_m = MM_GROUP_M;
    p->a_order = order_of(sam, sak);
    p->b_order = order_of(sbk, sbn);
    p->c_order = order_of(scm, scn);
    p->even_k = K % p->block_k == 0;
    p->grid = (tc_dim3){(unsigned)(cdiv64(M, p->block_m) * cdiv64(N, p->block_n)), 1, 1};
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

/* Plans (after mm_check) and checks that the grid fits the driver's. */
static tc_status mm_plan_checked(const char *entry, tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t sam,
                                 int64_t sak, int64_t sbk, int64_t sbn, int64_t scm, int64_t scn, bool has_bias,
                                 tc_activation act, bool aligned, tc_matmul_plan *p) {
    mm_plan(dtype, M, N, K, sam, sak, sbk, sbn, scm, scn, has_bias, act, aligned, p);
    int64_t tiles = cdiv64(M, p->block_m) * cdiv64(N, p->block_n);
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
    if (!is_mm_dtype(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16", entry);
    if ((st = check_extent(entry, "batch", batch, MM_MAX_EXTENT)) != TC_OK ||
        (st = check_extent(entry, "nblocks", nblocks, MM_MAX_BLOCKS)) != TC_OK ||
        (st = check_extent(entry, "bin", bin, MM_MAX_EXTENT)) != TC_OK ||
        (st = check_extent(entry, "bout", bout, MM_MAX_EXTENT)) != TC_OK)
        return st;
    int64_t xcols = nblocks * bin, ycols = nblocks * bout; /* < 2^46 */
    if (batch > 1 && sxm < xcols)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: stride_xm (%lld) is smaller than nblocks * bin (%lld)", entry,
                       (long long)sxm, (long long)xcols);
    if (batch > 1 && sym < ycols)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: stride_ym (%lld) is smaller than nblocks * bout (%lld)", entry,
                       (long long)sym, (long long)ycols);
    if (sxm < 0 || !span_fits(batch, xcols, sxm, 1))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: stride_xm (%lld) must be >= 0 and keep x's offsets in 64 bits",
                       entry, (long long)sxm);
    if (sym < 0 || !span_fits(batch, ycols, sym, 1))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: stride_ym (%lld) must be >= 0 and keep y's offsets in 64 bits",
                       entry, (long long)sym);
    if (swb < 0 || swk < 0 || swn < 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: w's strides (stride_wb %lld, stride_wk %lld, stride_wn %lld) must be >= 0", entry,
                       (long long)swb, (long long)swk, (long long)swn);
    /* w's largest offset: (nblocks - 1) * stride_wb + the largest offset of one block */
    if (!span_fits(bin, bout, swk, swn) || (swb > 0 && nblocks - 1 > MM_MAX_BYTE_OFFSET / swb) ||
        (nblocks - 1) * swb > MM_MAX_BYTE_OFFSET - (bin - 1) * swk - (bout - 1) * swn)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: w's strides (stride_wb %lld, stride_wk %lld, stride_wn %lld) overflow a 64-bit offset",
                       entry, (long long)swb, (long long)swk, (long long)swn);
    return TC_OK;
}

static tc_status bd_plan_checked(const char *entry, tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin,
                                 int64_t bout, int64_t swk, int64_t swn, tc_matmul_plan *p) {
    memset(p, 0, sizeof *p);
    p->file = "blockdiag_matmul.tile";
    p->kernel = "blockdiag_matmul";
    int bn = pow2_clamped(bout, MM_MIN_TILE, MM_BIG_TILE);
    int bm = pow2_clamped(batch, MM_MIN_TILE, bn <= MM_FILL_MIN_TILE ? MM_BIG_TILE : MM_FILL_MIN_TILE);
    while (bm > MM_MIN_TILE && cdiv64(batch, bm) * cdiv64(bout, bn) < cdiv64(MM_FILL_PROGRAMS, nblocks))
        bm /= 2;
    p->block_m = bm;
    p->block_n = bn;
    p->block_k = pow2_clamped(bin, MM_MIN_TILE, MM_BK_BIG);
    p->num_warps = MM_WARPS;
    p->a_order = 1;
    p->b_order = order_of(swk, swn);
    p->c_order = 1;
    p->even_k = bin % p->block_k == 0;
    int64_t tiles = cdiv64(batch, bm) * cdiv64(bout, bn);
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
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: out is NULL", entry);
    memset(out, 0, sizeof *out);
    tc_status st =
        mm_check(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, act);
    if (st != TC_OK)
        return st;
    return mm_plan_checked(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           has_bias != 0, act, true, out);
}

tc_status tc_blockdiag_matmul_plan_for(tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                                       int64_t stride_xm, int64_t stride_wb, int64_t stride_wk, int64_t stride_wn,
                                       int64_t stride_ym, tc_matmul_plan *out) {
    const char *entry = "tc_blockdiag_matmul_plan_for";
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: out is NULL", entry);
    memset(out, 0, sizeof *out);
    tc_status st =
        bd_check(entry, dtype, batch, nblocks, bin, bout, stride_xm, stride_wb, stride_wk, stride_wn, stride_ym);
    if (st != TC_OK)
        return st;
    return bd_plan_checked(entry, dtype, batch, nblocks, bin, bout, stride_wk, stride_wn, out);
}

/* ---- step 3 ---- */

static void mm_arg_ptr(RtMatmulLaunch *l, const char *name, CUdeviceptr p, bool known) {
    size_t i = l->num_args++;
    l->names[i] = name;
    l->ptrs[i] = p;
    l->args[i] = &l->ptrs[i];
    l->divisibility[i] = known && p % 16 == 0 ? 16 : 0;
}

/* An i32 (is_i32) or i64 argument; a fact when it is a multiple of `vector`. */
static void mm_arg_int(RtMatmulLaunch *l, const char *name, int64_t v, bool is_i32, int64_t vector) {
    size_t i = l->num_args++;
    l->names[i] = name;
    if (is_i32) {
        l->i32s[i] = (int32_t)v;
        l->args[i] = &l->i32s[i];
    } else {
        l->i64s[i] = v;
        l->args[i] = &l->i64s[i];
    }
    if (v % vector == 0)
        l->facts[l->options.num_params++] = (tc_param_spec){name, vector};
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
    if (!l->options.num_params)
        l->options.params = NULL;
    tc_jit_request_init(&l->req);
    const char *text = NULL;
    size_t len = 0;
    if (tc_stdlib_source(l->plan.file, &text, &len) != TC_OK)
        return rt_fail(TC_ERROR_INTERNAL, "%s: this libtilec was built without lib/%s", l->entry, l->plan.file);
    l->req.source = text;
    l->req.source_len = len;
    l->req.path = strcmp(l->plan.file, "matmul.tile") == 0 ? "lib/matmul.tile" : "lib/blockdiag_matmul.tile";
    l->req.kernel = l->plan.kernel;
    l->req.constexprs = l->plan.constexprs;
    l->req.num_constexprs = l->plan.num_constexprs;
    l->req.options = &l->options;
    l->req.divisibility = l->divisibility;
    l->req.num_divisibility = l->num_args;
    if (rt_matmul_launch_hook)
        return rt_matmul_launch_hook(l);
    /* Sources, kernel and parameter names are static here, so the memo's
     * address keys are sound (stdlib_internal.h). */
    RtStdlibKey key;
    rt_stdlib_key(&l->req, &key);
    tc_kernel *k = rt_stdlib_memo_find(l->ctx, &key);
    if (!k) {
        tc_status st = tc_jit(l->ctx, &l->req, &k);
        if (st != TC_OK)
            return st; /* tc_last_error() has the compiler's or the driver's message */
        rt_stdlib_memo_add(l->ctx, &key, k);
    }
    return tc_launch(k, l->plan.grid, l->stream, l->args, l->num_args);
}

tc_status tc_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr c, CUdeviceptr a, CUdeviceptr b,
                    CUdeviceptr bias, int64_t M, int64_t N, int64_t K, int64_t stride_am, int64_t stride_ak,
                    int64_t stride_bk, int64_t stride_bn, int64_t stride_cm, int64_t stride_cn, tc_activation act) {
    const char *entry = "tc_matmul";
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", entry);
    tc_status st =
        mm_check(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, act);
    if (st != TC_OK || (st = check_ptr(entry, "c", c, dtype)) != TC_OK ||
        (st = check_ptr(entry, "a", a, dtype)) != TC_OK || (st = check_ptr(entry, "b", b, dtype)) != TC_OK ||
        (bias && (st = check_ptr(entry, "bias", bias, dtype)) != TC_OK))
        return st;
    RtMatmulLaunch l;
    mm_begin(&l, entry, ctx, stream);
    if ((st = mm_plan_checked(entry, dtype, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                              bias != 0, act, (a | b | c) % 16 == 0, &l.plan)) != TC_OK)
        return st;
    int64_t vector = 16 / (int64_t)elem_bytes(dtype);
    mm_arg_ptr(&l, "c", c, true);
    mm_arg_ptr(&l, "a", a, true);
    mm_arg_ptr(&l, "b", b, true);
    mm_arg_ptr(&l, "bias", bias ? bias : c, bias != 0); /* without a bias: never read */
    mm_arg_int(&l, "M", M, true, vector);
    mm_arg_int(&l, "N", N, true, vector);
    mm_arg_int(&l, "K", K, true, vector);
    mm_arg_int(&l, "stride_am", stride_am, false, vector);
    mm_arg_int(&l, "stride_ak", stride_ak, false, vector);
    mm_arg_int(&l, "stride_bk", stride_bk, false, vector);
    mm_arg_int(&l, "stride_bn", stride_bn, false, vector);
    mm_arg_int(&l, "stride_cm", stride_cm, false, vector);
    mm_arg_int(&l, "stride_cn", stride_cn, false, vector);
    return mm_launch(&l);
}

tc_status tc_blockdiag_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr x,
                              CUdeviceptr w, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                              int64_t stride_xm, int64_t stride_wb, int64_t stride_wk, int64_t stride_wn,
                              int64_t stride_ym) {
    const char *entry = "tc_blockdiag_matmul";
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", entry);
    tc_status st =
        bd_check(entry, dtype, batch, nblocks, bin, bout, stride_xm, stride_wb, stride_wk, stride_wn, stride_ym);
    if (st != TC_OK || (st = check_ptr(entry, "y", y, dtype)) != TC_OK ||
        (st = check_ptr(entry, "x", x, dtype)) != TC_OK || (st = check_ptr(entry, "w", w, dtype)) != TC_OK)
        return st;
    RtMatmulLaunch l;
    mm_begin(&l, entry, ctx, stream);
    if ((st = bd_plan_checked(entry, dtype, batch, nblocks, bin, bout, stride_wk, stride_wn, &l.plan)) != TC_OK)
        return st;
    int64_t vector = 16 / (int64_t)elem_bytes(dtype);
    mm_arg_ptr(&l, "y", y, true);
    mm_arg_ptr(&l, "x", x, true);
    mm_arg_ptr(&l, "w", w, true);
    mm_arg_int(&l, "batch", batch, true, vector);
    mm_arg_int(&l, "bin", bin, true, vector);
    mm_arg_int(&l, "bout", bout, true, vector);
    mm_arg_int(&l, "stride_xm", stride_xm, false, vector);
    mm_arg_int(&l, "stride_wb", stride_wb, false, vector);
    mm_arg_int(&l, "stride_wk", stride_wk, false, vector);
    mm_arg_int(&l, "stride_wn", stride_wn, false, vector);
    mm_arg_int(&l, "stride_ym", stride_ym, false, vector);
    return mm_launch(&l);
}

/* ==== tc_attention_fwd (lib/attention.tile) ====
 *
 * The same three steps:
 *
 *  1. Validate (attn_check): dtype f16 or bf16; head_dim 1..256; heads,
 *     kv_heads >= 1 with kv_heads dividing heads; seqlens 1..2^30 (the
 *     kernel's i32 index arithmetic adds a block and a seqlen);
 *     batch * heads <= 65535 (grid.y); strides >= 0 with every offset within
 *     an int64 in bytes; o's strides giving each element its own address;
 *     pointers not 0 and aligned to their element; cu_seqlens both or
 *     neither; a finite scale.
 *  2. Plan (attn_plan): D is the next power of two of head_dim, at least 16
 *     (the masked columns cost registers, not correctness). ptxas -v on
 *     sm_90a (3 pipeline stages):
 *       - D <= 64: BM 128, BN 64, 4 warps (D 64 spills 8 to 16 bytes; 2
 *         stages spill more, so 3 stay);
 *       - D 128: BM 128, BN 32, 8 warps (BN 64 spills 32 bytes; BN 32 none);
 *       - D 256: BM 128, BN 32, 8 warps (none, 4 bytes causal + varlen;
 *         4 warps with BM 64 spill 132 bytes).
 *     grid = (cdiv(seqlen_q, BM), batch * heads).
 *  3. Specialize and launch as tc_matmul does: pointers' 16-byte alignment
 *     through the request's divisibility, strides that are multiples of 8
 *     elements through tc_options.params (what vectorizes the row loads:
 *     every row of Q, K, V and O starting on 16 bytes), through the
 *     context's memo. Without varlen the cu_seqlens parameters get lse
 *     (never read), as tc_launch refuses null pointers.
 */

enum {
    ATTN_MAX_HEAD_DIM = 256,
    ATTN_MAX_SEQLEN = 1 << 30,
    ATTN_MAX_PROGRAMS_Y = 65535,
    ATTN_STAGES = 3,
};

tc_status (*rt_attention_launch_hook)(const RtAttentionLaunch *launch);

/* count elements along a stride added to *used (the largest offset so far):
 * false if the sum leaves MM_MAX_BYTE_OFFSET. */
static bool attn_span_add(int64_t *used, int64_t count, int64_t stride) {
    if (count <= 1 || stride == 0)
        return true;
    if (count - 1 > (MM_MAX_BYTE_OFFSET - *used) / stride)
        return false;
    *used += (count - 1) * stride;
    return true;
}

/* A tensor's strides: >= 0, largest offset within an int64. */
static tc_status attn_check_tensor(const char *entry, char t, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                                   int64_t sb, int64_t sh, int64_t ss) {
    if (sb < 0 || sh < 0 || ss < 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: %c's strides (stride_%cb %lld, stride_%ch %lld, stride_%c%c %lld) must be >= 0", entry, t,
                       t, (long long)sb, t, (long long)sh, t, t == 'q' || t == 'o' ? 'm' : 'n', (long long)ss);
    int64_t used = dim - 1;
    if (!attn_span_add(&used, batch, sb) || !attn_span_add(&used, heads, sh) || !attn_span_add(&used, seq, ss))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %c's strides overflow a 64-bit offset", entry, t);
    return TC_OK;
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
    if (!is_mm_dtype(dtype))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: dtype must be TC_DTYPE_F16 or TC_DTYPE_BF16", entry);
    if ((st = check_extent(entry, "head_dim", head_dim, ATTN_MAX_HEAD_DIM)) != TC_OK ||
        (st = check_extent(entry, "batch", batch, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = check_extent(entry, "heads", heads, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = check_extent(entry, "kv_heads", kv_heads, ATTN_MAX_PROGRAMS_Y)) != TC_OK ||
        (st = check_extent(entry, "seqlen_q", seqlen_q, ATTN_MAX_SEQLEN)) != TC_OK ||
        (st = check_extent(entry, "seqlen_k", seqlen_k, ATTN_MAX_SEQLEN)) != TC_OK)
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

static void attn_plan(tc_dtype dtype, int64_t batch, int64_t heads, int64_t seqlen_q, int64_t seqlen_k,
                      int64_t head_dim, bool causal, bool varlen, tc_attention_plan *p) {
    memset(p, 0, sizeof *p);
    p->file = "attention.tile";
    p->kernel = "attention_fwd";
    p->head_dim = (int)head_dim;
    p->block_d = pow2_clamped(head_dim, 16, ATTN_MAX_HEAD_DIM);
    /* 32 query rows per warp up to head dim 128 (each K and V fragment read
     * from shared memory feeds two m16 tiles). At 128, Q is read from shared
     * memory in each step (stage-shared's choice) and BN is 64, causal or
     * not; 256: 16 rows per warp and BN 32. The choices are the fastest of
     * bench/attention.py --sweep on an H200 (bench/RESULTS.md). */
    p->block_m = 128;
    p->block_n = p->block_d <= 128 ? 64 : 32;
    p->num_warps = p->block_d <= 128 ? 4 : 8;
    p->num_stages = ATTN_STAGES;
    p->causal = causal;
    p->varlen = varlen;
    p->grid = (tc_dim3){(unsigned)cdiv64(seqlen_q, p->block_m), (unsigned)(batch * heads), 1};
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
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: out is NULL", entry);
    memset(out, 0, sizeof *out);
    tc_status st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim);
    if (st != TC_OK)
        return st;
    attn_plan(dtype, batch, heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen != 0, out);
    return TC_OK;
}

static void attn_arg_ptr(RtAttentionLaunch *l, const char *name, CUdeviceptr p, bool known) {
    size_t i = l->num_args++;
    l->names[i] = name;
    l->ptrs[i] = p;
    l->args[i] = &l->ptrs[i];
    l->divisibility[i] = known && p % 16 == 0 ? 16 : 0;
}

static void attn_arg_i32(RtAttentionLaunch *l, const char *name, int64_t v) {
    size_t i = l->num_args++;
    l->names[i] = name;
    l->i32s[i] = (int32_t)v;
    l->args[i] = &l->i32s[i];
}

/* A stride: a fact when it is a multiple of `vector` elements. */
static void attn_arg_stride(RtAttentionLaunch *l, const char *name, int64_t v, int64_t vector) {
    size_t i = l->num_args++;
    l->names[i] = name;
    l->i64s[i] = v;
    l->args[i] = &l->i64s[i];
    if (v % vector == 0)
        l->facts[l->options.num_params++] = (tc_param_spec){name, vector};
}

tc_status tc_attention_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr o, CUdeviceptr lse,
                           CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, int64_t batch, int64_t heads, int64_t kv_heads,
                           int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int64_t stride_qb, int64_t stride_qh,
                           int64_t stride_qm, int64_t stride_kb, int64_t stride_kh, int64_t stride_kn,
                           int64_t stride_vb, int64_t stride_vh, int64_t stride_vn, int64_t stride_ob,
                           int64_t stride_oh, int64_t stride_om, CUdeviceptr cu_seqlens_q, CUdeviceptr cu_seqlens_k,
                           float scale, int causal) {
    const char *entry = "tc_attention_fwd";
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", entry);
    tc_status st = attn_check_sizes(entry, dtype, batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim);
    if (st != TC_OK)
        return st;
    if (!(cu_seqlens_q == 0) != !(cu_seqlens_k == 0))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: cu_seqlens_q and cu_seqlens_k must both be given (varlen) or "
                                                  "both be 0", entry);
    bool varlen = cu_seqlens_q != 0;
    if (!isfinite(scale))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: scale (%g) must be finite", entry, (double)scale);
    /* with varlen the rows are packed: the batch strides are unused and a
     * sequence's rows are among seqlen * batch rows */
    int64_t nb = varlen ? 1 : batch, rq = varlen ? seqlen_q * batch : seqlen_q, rk = varlen ? seqlen_k * batch : seqlen_k;
    if ((st = attn_check_tensor(entry, 'q', nb, heads, rq, head_dim, stride_qb, stride_qh, stride_qm)) != TC_OK ||
        (st = attn_check_tensor(entry, 'k', nb, kv_heads, rk, head_dim, stride_kb, stride_kh, stride_kn)) != TC_OK ||
        (st = attn_check_tensor(entry, 'v', nb, kv_heads, rk, head_dim, stride_vb, stride_vh, stride_vn)) != TC_OK ||
        (st = attn_check_tensor(entry, 'o', nb, heads, rq, head_dim, stride_ob, stride_oh, stride_om)) != TC_OK)
        return st;
    /* With varlen the packed total is on the device; distinct addresses are
     * checked within one sequence of the longest length (rows of different
     * heads may interleave with a total shorter than seqlen_q * batch). */
    if (!attn_distinct(nb, heads, varlen ? seqlen_q : rq, head_dim, stride_ob, stride_oh, stride_om))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: o's strides (stride_ob %lld, stride_oh %lld, stride_om %lld) give two of its elements the "
                       "same address",
                       entry, (long long)stride_ob, (long long)stride_oh, (long long)stride_om);
    if ((st = check_ptr(entry, "o", o, dtype)) != TC_OK || (st = check_ptr(entry, "lse", lse, TC_DTYPE_F32)) != TC_OK ||
        (st = check_ptr(entry, "q", q, dtype)) != TC_OK || (st = check_ptr(entry, "k", k, dtype)) != TC_OK ||
        (st = check_ptr(entry, "v", v, dtype)) != TC_OK)
        return st;
    if (varlen && (cu_seqlens_q % 4 || cu_seqlens_k % 4))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: cu_seqlens_q (0x%llx) and cu_seqlens_k (0x%llx) must be aligned to "
                       "their 4-byte elements", entry, (unsigned long long)cu_seqlens_q,
                       (unsigned long long)cu_seqlens_k);

    RtAttentionLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    l->ctx = ctx;
    l->stream = stream;
    tc_options_init(&l->options);
    l->options.params = l->facts;
    attn_plan(dtype, batch, heads, seqlen_q, seqlen_k, head_dim, causal != 0, varlen, &l->plan);
    if (scale < 0)
        attn_cx(&l->plan, "NEG_SCALE", TC_CONSTEXPR_BOOL, 1);
    int64_t vector = 16 / (int64_t)elem_bytes(dtype);
    attn_arg_ptr(l, "O", o, true);
    attn_arg_ptr(l, "LSE", lse, true);
    attn_arg_ptr(l, "Q", q, true);
    attn_arg_ptr(l, "K", k, true);
    attn_arg_ptr(l, "V", v, true);
    attn_arg_ptr(l, "cu_seqlens_q", varlen ? cu_seqlens_q : lse, varlen); /* without varlen: never read */
    attn_arg_ptr(l, "cu_seqlens_k", varlen ? cu_seqlens_k : lse, varlen);
    attn_arg_i32(l, "heads", heads);
    attn_arg_i32(l, "kv_group", heads / kv_heads);
    attn_arg_i32(l, "seqlen_q", seqlen_q);
    attn_arg_i32(l, "seqlen_k", seqlen_k);
    static const char *const stride_names[12] = {"stride_qb", "stride_qh", "stride_qm", "stride_kb",
                                                 "stride_kh", "stride_kn", "stride_vb", "stride_vh",
                                                 "stride_vn", "stride_ob", "stride_oh", "stride_om"};
    const int64_t strides[12] = {stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                                 stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om};
    for (int i = 0; i < 12; i++)
        attn_arg_stride(l, stride_names[i], strides[i], vector);
    size_t si = l->num_args++;
    l->names[si] = "scale";
    l->f32s[si] = scale;
    l->args[si] = &l->f32s[si];

    l->options.num_warps = l->plan.num_warps;
    l->options.num_stages = l->plan.num_stages;
    if (!l->options.num_params)
        l->options.params = NULL;
    tc_jit_request_init(&l->req);
    const char *text = NULL;
    size_t len = 0;
    if (tc_stdlib_source(l->plan.file, &text, &len) != TC_OK) {
        free(l);
        return rt_fail(TC_ERROR_INTERNAL, "%s: this libtilec was built without lib/attention.tile", entry);
    }
    l->req.source = text;
    l->req.source_len = len;
    l->req.path = "lib/attention.tile";
    l->req.kernel = l->plan.kernel;
    l->req.constexprs = l->plan.constexprs;
    l->req.num_constexprs = l->plan.num_constexprs;
    l->req.options = &l->options;
    l->req.divisibility = l->divisibility;
    l->req.num_divisibility = l->num_args;
    if (rt_attention_launch_hook) {
        st = rt_attention_launch_hook(l);
        free(l);
        return st;
    }
    RtStdlibKey key;
    rt_stdlib_key(&l->req, &key);
    tc_kernel *kern = rt_stdlib_memo_find(l->ctx, &key);
    if (!kern) {
        st = tc_jit(l->ctx, &l->req, &kern);
        if (st != TC_OK) {
            free(l);
            return st;
        }
        rt_stdlib_memo_add(l->ctx, &key, kern);
    }
    st = tc_launch(kern, l->plan.grid, l->stream, l->args, l->num_args);
    free(l);
    return st;
}
