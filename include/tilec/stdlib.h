/*
 * stdlib.h — the standard library's kernels (the .tile files of lib/) as plain C calls.
 *
 *     tc_context *ctx;
 *     tc_context_create(0, &ctx);
 *     // y[r, :] = x[r, :] / rms(x[r, :]) * weight, rows of 4096 bf16 values
 *     tc_status st = tc_rmsnorm_fwd(ctx, stream, TC_DTYPE_BF16, y, rstd, x, weight,
 *                                   rows, 4096, 4096, 4096, 1e-6f);
 *     if (st != TC_OK)
 *         fprintf(stderr, "%s: %s\n", tc_status_string(st), tc_last_error());
 *
 * Each call validates its arguments, picks a specialization of the library
 * kernel for the row width (the tile width BLOCK, one tile per row or a loop
 * over tiles, num_warps) and for what it can see of the arguments (16-byte
 * aligned pointers and strides whose rows start on 16-byte boundaries get
 * vectorized loads and stores), compiles it through tc_jit on first use (in
 * memory and in the disk cache: see runtime.h) and launches one program per
 * row on `stream`. The call returns once the launch is queued; it does not
 * synchronize. The kernels' sources are built into libtilec: no file is read.
 *
 * Conventions, for every function here:
 *  - Matrices are row-major with a row stride in elements (not bytes): row
 *    r of x starts at element r * stride_x. Every stride must be >= cols.
 *  - dtype is the storage type of the matrices and the weight: TC_DTYPE_F16,
 *    TC_DTYPE_BF16 or TC_DTYPE_F32. Arithmetic is in f32 whatever it is.
 *    rstd and dweight are always f32.
 *  - Pointers are device addresses in ctx's context, aligned to their
 *    element size, and not 0. Outputs must not overlap inputs or each other.
 *  - 1 <= rows <= 2^31 - 1 and 1 <= cols <= 2^31 - 1.
 *  - A violated convention is TC_ERROR_INVALID_ARGUMENT with the reason in
 *    tc_last_error(), before anything is compiled or launched. Nothing here
 *    exits or aborts.
 * The first call for a specialization compiles it (milliseconds; a warm disk
 * cache loads the cubin instead); later calls cost a hash of the kernel's
 * source and a tc_launch.
 */
#ifndef TILEC_STDLIB_H
#define TILEC_STDLIB_H

#include "tilec/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- softmax (lib/softmax.tile) ---- */

/* out[r, c] = exp(x[r, c] - m) / sum over c' of exp(x[r, c'] - m), with m
 * the row's max, for r < rows and c < cols. */
TC_API tc_status tc_softmax_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr x,
                                int64_t rows, int64_t cols, int64_t stride_out, int64_t stride_x);

/* The gradient of softmax given its output y and the gradient dy of the
 * loss with respect to y:
 *   dx[r, c] = y[r, c] * (dy[r, c] - sum over c' of y[r, c'] * dy[r, c']). */
TC_API tc_status tc_softmax_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr y,
                                CUdeviceptr dy, int64_t rows, int64_t cols, int64_t stride_dx, int64_t stride_y,
                                int64_t stride_dy);

/* ---- RMSNorm (lib/rmsnorm.tile) ---- */

/* rstd[r] = 1 / sqrt(mean over c of x[r, c]^2 + eps) and
 * y[r, c] = x[r, c] * rstd[r] * weight[c]. weight has cols elements of
 * dtype; rstd (f32, rows elements) is always written: the backward pass
 * needs it. eps must be finite and >= 0. */
TC_API tc_status tc_rmsnorm_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr rstd,
                                CUdeviceptr x, CUdeviceptr weight, int64_t rows, int64_t cols, int64_t stride_y,
                                int64_t stride_x, float eps);

/* The gradients of RMSNorm, given dy, the forward pass's x, weight and
 * rstd. With xhat = x * rstd[r] and g = dy * weight:
 *   dx[r, c]    = rstd[r] * (g[r, c] - xhat[r, c] * mean over c' of g[r, c'] * xhat[r, c'])
 *   dweight[c] += sum over r of dy[r, c] * xhat[r, c]
 * dweight (f32, cols elements) is ACCUMULATED into with atomic adds: zero
 * it first (tc_memset_d8) for the gradient alone. The order of the atomic
 * adds varies, so dweight's last bits may differ from run to run. */
TC_API tc_status tc_rmsnorm_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr dweight,
                                CUdeviceptr dy, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr rstd, int64_t rows,
                                int64_t cols, int64_t stride_dx, int64_t stride_dy, int64_t stride_x);

/* ---- what the calls above choose (for tests, benchmarks and AOT builds) ---- */

typedef enum tc_stdlib_op {
    TC_STDLIB_SOFTMAX_FWD,
    TC_STDLIB_SOFTMAX_BWD,
    TC_STDLIB_RMSNORM_FWD,
    TC_STDLIB_RMSNORM_BWD,
} tc_stdlib_op;

/* The specialization an entry point compiles for a dtype and a row width:
 * compile `kernel` of the embedded source `file` (tc_stdlib_source) with
 * these constexpr values and num_warps, and, where every pointer argument is
 * 16-byte aligned and every stride and cols is a multiple of 16 / element
 * bytes, with `aligned_params` as tc_options.params, and the same code
 * results. */
typedef struct tc_stdlib_plan {
    const char *file;           /* "softmax.tile", "rmsnorm.tile" */
    const char *kernel;         /* "softmax_fwd", ... */
    tc_constexpr constexprs[3]; /* T, BLOCK, and SINGLE_TILE for the forward kernels */
    size_t num_constexprs;
    int64_t block;   /* columns per tile (a power of two) */
    int single_tile; /* 1: one tile holds the row; 0: a loop over tiles */
    int num_warps;
    tc_param_spec aligned_params[16]; /* the alignment facts of the fully aligned case */
    size_t num_aligned_params;
} tc_stdlib_plan;

/* Fills *out for op, dtype (F16, BF16, F32) and cols >= 1; the strings
 * point to static storage. TC_ERROR_INVALID_ARGUMENT otherwise. */
TC_API tc_status tc_stdlib_plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *out);

/* The text of an embedded library file by base name ("softmax.tile"), as
 * built into this libtilec: NUL-terminated, static. TC_ERROR_INVALID_ARGUMENT
 * for a name the library does not have. */
TC_API tc_status tc_stdlib_source(const char *name, const char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
