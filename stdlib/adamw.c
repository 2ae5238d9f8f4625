/*
 * adamw.c — tc_adamw (include/tilec/stdlib.h, lib/adamw.tile): one AdamW
 * step over a list of tensors in one launch.
 *
 *  1. Validate: dtypes (f32, bf16, f16), at least one tensor, each with
 *     numel >= 1 and every array given (master exactly when `master`), each
 *     aligned to its element; hyperparameters finite, lr >= 0, beta1 and beta2
 *     in [0, 1), eps > 0, weight_decay >= 0; step aligned; the workspace
 *     16-byte aligned and large enough.
 *  2. Plan: a chunk is at most 65536 elements of one tensor; the table has
 *     a row of 8 i64 per chunk: the tensor's offsets (in elements) from the
 *     first tensor's five arrays, the chunk's first element and length.
 *     When every array is 16-byte aligned, the rows count in vectors of 4
 *     elements (VEC = 4: the kernel's accesses are vectors) and cover each
 *     tensor's first numel - numel % 4 elements; one more row per tensor
 *     with a remainder covers it, with VEC = 1, in a second launch.
 *  3. Wait for the stream (its earlier work may still read the workspace),
 *     copy the table to the workspace, launch adamw (8 programs per chunk,
 *     each with 4 warps and every 8th tile of 1024) and adamw_step (one
 *     program).
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const entry = "tc_adamw";

enum {
    ADAMW_CHUNK = 65536, /* elements of a chunk: a row of the table */
    ADAMW_PARTS = 8,     /* programs per chunk (grid.y), each a tile of 1024 in 8 */
    ADAMW_ROW = 8,
    ADAMW_MAX_CHUNKS = INT32_MAX, /* table rows: the chunks and the remainders (grid.x) */
    ADAMW_VEC = 4,                /* elements of a vector when every array is 16-byte aligned */
};

static int64_t chunks_of(int64_t numel) {
    return (numel + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
}

tc_status tc_adamw_workspace_size(const tc_adamw_tensor *tensors, size_t num_tensors, size_t *bytes) {
    const char *fn = "tc_adamw_workspace_size";
    tc_status st;
    if ((st = rt_stdlib_check_given(fn, "bytes", bytes)) != TC_OK)
        return st;
    *bytes = 0;
    if ((st = rt_stdlib_check_given(fn, "tensors", tensors)) != TC_OK)
        return st;
    if (num_tensors == 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: num_tensors is 0", fn);
    int64_t chunks = 0;
    for (size_t i = 0; i < num_tensors; i++) {
        if (tensors[i].numel < 1 || tensors[i].numel > ((int64_t)1 << 48))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: tensors[%zu].numel (%lld) must be 1 .. 2^48", fn, i,
                           (long long)tensors[i].numel);
        chunks += chunks_of(tensors[i].numel) + 1; /* + 1: the remainder's row of the vector plan */
        if (chunks > ADAMW_MAX_CHUNKS)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: more than 2^31 - 1 rows of its table (chunks of %d elements "
                           "and one more per tensor)",
                           fn, ADAMW_CHUNK);
    }
    *bytes = (size_t)chunks * ADAMW_ROW * sizeof(int64_t);
    return TC_OK;
}

static tc_status adamw_check(tc_context *ctx, const tc_adamw_args *a, size_t *table_bytes) {
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_given(entry, "a", a)) != TC_OK)
        return st;
    if ((st = rt_stdlib_check_dtype(entry, a->param_dtype, true)) != TC_OK ||
        (st = rt_stdlib_check_dtype(entry, a->grad_dtype, true)) != TC_OK)
        return st;
    if (a->master != 0 && a->master != 1)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: master (%d) must be 0 or 1", entry, a->master);
    if ((st = tc_adamw_workspace_size(a->tensors, a->num_tensors, table_bytes)) != TC_OK)
        return st;
    size_t ps = rt_dtype_size(a->param_dtype), gs = rt_dtype_size(a->grad_dtype);
    for (size_t i = 0; i < a->num_tensors; i++) {
        const tc_adamw_tensor *t = &a->tensors[i];
        char name[64];
        static const char *const fields[] = {"param", "grad", "exp_avg", "exp_avg_sq", "master"};
        const CUdeviceptr ptrs[] = {t->param, t->grad, t->exp_avg, t->exp_avg_sq, t->master};
        const size_t sizes[] = {ps, gs, 4, 4, 4};
        for (int f = 0; f < 5; f++) {
            snprintf(name, sizeof name, "tensors[%zu].%s", i, fields[f]);
            if (f == 4 && !a->master) {
                if (t->master)
                    return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is given but master is 0", entry, name);
                continue;
            }
            if ((st = rt_stdlib_check_ptr(entry, name, ptrs[f], sizes[f])) != TC_OK)
                return st;
        }
    }
    if (!isfinite(a->lr) || a->lr < 0 || !(a->beta1 >= 0 && a->beta1 < 1) || !(a->beta2 >= 0 && a->beta2 < 1) ||
        !isfinite(a->eps) || !(a->eps > 0) || !isfinite(a->weight_decay) || a->weight_decay < 0 ||
        !isfinite(a->grad_scale))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: the hyperparameters must be finite with lr >= 0, beta1 and beta2 in [0, 1), eps > 0, "
                       "weight_decay >= 0 (lr %g, beta1 %g, beta2 %g, eps %g, weight_decay %g, grad_scale %g)",
                       entry, (double)a->lr, (double)a->beta1, (double)a->beta2, (double)a->eps,
                       (double)a->weight_decay, (double)a->grad_scale);
    if ((st = rt_stdlib_check_ptr(entry, "step", a->step, 4)) != TC_OK)
        return st;
    return rt_stdlib_check_workspace(entry, a->workspace, a->workspace_bytes, *table_bytes, "tc_adamw_workspace_size");
}

/* (p - base) / elem: an element offset (the arrays are aligned to their elements). */
static int64_t offset(CUdeviceptr p, CUdeviceptr base, size_t elem) {
    return (int64_t)(p - base) / (int64_t)elem;
}

tc_status tc_adamw(tc_context *ctx, CUstream stream, const tc_adamw_args *a) {
    size_t table_bytes = 0;
    tc_status st = adamw_check(ctx, a, &table_bytes);
    if (st != TC_OK)
        return st;
    int64_t *table = malloc(table_bytes);
    if (!table)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory for a table of %zu bytes", entry, table_bytes);
    const tc_adamw_tensor *t0 = &a->tensors[0];
    size_t ps = rt_dtype_size(a->param_dtype), gs = rt_dtype_size(a->grad_dtype);
    /* the vector plan: every array 16-byte aligned, so that every offset is a multiple of ADAMW_VEC */
    int64_t vec = ADAMW_VEC;
    for (size_t i = 0; i < a->num_tensors && vec > 1; i++) {
        const tc_adamw_tensor *t = &a->tensors[i];
        if (t->param % 16 || t->grad % 16 || t->exp_avg % 16 || t->exp_avg_sq % 16 || (a->master && t->master % 16))
            vec = 1;
    }
    int64_t chunks = 0, tails = 0;
    for (int pass = 0; pass < 2; pass++) { /* the chunks' rows, then the remainders' */
        for (size_t i = 0; i < a->num_tensors; i++) {
            const tc_adamw_tensor *t = &a->tensors[i];
            int64_t body = t->numel - t->numel % vec, from = pass ? body : 0, to = pass ? t->numel : body;
            int64_t unit = pass ? 1 : vec;
            for (int64_t first = from; first < to; first += ADAMW_CHUNK) {
                int64_t *row = table + (chunks + tails) * ADAMW_ROW;
                *(pass ? &tails : &chunks) += 1;
                row[0] = offset(t->param, t0->param, ps) / unit;
                row[1] = offset(t->grad, t0->grad, gs) / unit;
                row[2] = offset(t->exp_avg, t0->exp_avg, 4) / unit;
                row[3] = offset(t->exp_avg_sq, t0->exp_avg_sq, 4) / unit;
                row[4] = a->master ? offset(t->master, t0->master, 4) / unit : 0;
                row[5] = first / unit;
                row[6] = (to - first < ADAMW_CHUNK ? to - first : ADAMW_CHUNK) / unit;
                row[7] = 0;
            }
        }
    }
    table_bytes = (size_t)(chunks + tails) * ADAMW_ROW * sizeof(int64_t);
    /* the stream's earlier work may still read the workspace (the last
     * step's table): wait for it, then copy */
    st = tc_stream_synchronize(ctx, stream);
    if (st == TC_OK)
        st = tc_memcpy_htod(ctx, a->workspace, table, table_bytes);
    free(table);
    if (st != TC_OK)
        return st;
    RtStdlibKernelLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    RtStdlibArgs args;
    for (int pass = 0; pass < 2 && st == TC_OK; pass++) { /* the chunks, then the remainders with VEC = 1 */
        int64_t rows = pass ? tails : chunks;
        if (rows == 0)
            continue;
        memset(l, 0, sizeof *l);
        args = rt_stdlib_kernel_args(l);
        rt_stdlib_arg_ptr(&args, "params", t0->param, true);
        rt_stdlib_arg_ptr(&args, "grads", t0->grad, true);
        rt_stdlib_arg_ptr(&args, "exp_avg", t0->exp_avg, true);
        rt_stdlib_arg_ptr(&args, "exp_avg_sq", t0->exp_avg_sq, true);
        rt_stdlib_arg_ptr(&args, "master", a->master ? t0->master : t0->exp_avg, a->master != 0);
        rt_stdlib_arg_ptr(&args, "table", a->workspace + (pass ? (CUdeviceptr)chunks * ADAMW_ROW * sizeof(int64_t) : 0),
                          true);
        rt_stdlib_arg_ptr(&args, "step", a->step, true);
        rt_stdlib_kernel_arg_f32(l, "lr", a->lr);
        rt_stdlib_kernel_arg_f32(l, "beta1", a->beta1);
        rt_stdlib_kernel_arg_f32(l, "beta2", a->beta2);
        rt_stdlib_kernel_arg_f32(l, "eps", a->eps);
        rt_stdlib_kernel_arg_f32(l, "weight_decay", a->weight_decay);
        rt_stdlib_kernel_arg_f32(l, "grad_scale", a->grad_scale);
        l->cx[0] = (tc_constexpr){"T", TC_CONSTEXPR_DTYPE, (int64_t)a->param_dtype, 0};
        l->cx[1] = (tc_constexpr){"G", TC_CONSTEXPR_DTYPE, (int64_t)a->grad_dtype, 0};
        l->cx[2] = (tc_constexpr){"MASTER", TC_CONSTEXPR_BOOL, a->master, 0};
        l->cx[3] = (tc_constexpr){"VEC", TC_CONSTEXPR_INT, pass ? 1 : vec, 0};
        l->num_cx = 4;
        st = rt_stdlib_kernel_launch(ctx, stream, entry, "adamw.tile", "adamw", 4,
                                     (tc_dim3){(unsigned)rows, pass ? 1 : ADAMW_PARTS, 1}, l);
    }
    if (st == TC_OK) {
        memset(l, 0, sizeof *l);
        args = rt_stdlib_kernel_args(l);
        rt_stdlib_arg_ptr(&args, "step", a->step, true);
        st = rt_stdlib_kernel_launch(ctx, stream, entry, "adamw.tile", "adamw_step", 1, (tc_dim3){1, 1, 1}, l);
    }
    free(l);
    return st;
}
