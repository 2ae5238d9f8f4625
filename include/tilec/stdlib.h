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
 *  - 1 <= rows <= 2^31 - 1 and 1 <= cols <= 2^31 - 2^16 - 1 (the kernels
 *    count a row's columns in 32 bits, with room for their last tile).
 *  - A violated convention is TC_ERROR_INVALID_ARGUMENT with the reason in
 *    tc_last_error(), before anything is compiled or launched. Nothing here
 *    exits or aborts.
 * The first call for a specialization compiles it (milliseconds; a warm disk
 * cache loads the cubin instead); later calls find the kernel in a table
 * kept in ctx and cost little more than a tc_launch.
 *
 * Threads: every call may run from any thread, on a context of its own or
 * one shared with other threads (runtime.h). A specialization's first call
 * compiles it under the context's JIT lock; later calls read the table with
 * no lock at all.
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

/* ---- LayerNorm (lib/layernorm.tile) ---- */

/* mean[r] and rstd[r] = 1 / sqrt(var[r] + eps) of row r of x (f32, rows
 * elements each: the backward pass needs them) and
 * y[r, c] = (x[r, c] - mean[r]) * rstd[r] * weight[c] + bias[c]; bias may be 0
 * (none). weight and bias have cols elements of dtype; eps finite, >= 0. */
TC_API tc_status tc_layernorm_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr mean,
                                  CUdeviceptr rstd, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr bias, int64_t rows,
                                  int64_t cols, int64_t stride_y, int64_t stride_x, float eps);

/* The workspace tc_layernorm_bwd needs on ctx's device for rows x cols. */
TC_API tc_status tc_layernorm_bwd_workspace_size(tc_context *ctx, int64_t rows, int64_t cols, size_t *bytes);

/* The gradients of LayerNorm, given dy and the forward pass's x, weight,
 * mean and rstd; with xhat = (x - mean[r]) * rstd[r] and g = dy * weight:
 *   dx[r, c]   = rstd[r] * (g - mean over c of g - xhat * mean over c of g * xhat)
 *   dweight[c] = sum over r of dy * xhat,  dbias[c] = sum over r of dy
 * dweight and dbias (f32, cols elements; dbias may be 0: not computed) are
 * WRITTEN, not accumulated, and bit-identical from run to run: each group
 * of rows sums into its own partial row of the workspace, and the groups
 * are added in order. Three or four launches on `stream`. */
TC_API tc_status tc_layernorm_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dx, CUdeviceptr dweight,
                                  CUdeviceptr dbias, CUdeviceptr dy, CUdeviceptr x, CUdeviceptr weight,
                                  CUdeviceptr mean, CUdeviceptr rstd, int64_t rows, int64_t cols, int64_t stride_dx,
                                  int64_t stride_dy, int64_t stride_x, CUdeviceptr workspace, size_t workspace_bytes);

/* ---- SwiGLU (lib/swiglu.tile) ---- */

/* out[r, c] = silu(gate[r, c]) * up[r, c], silu(g) = g * sigmoid(g): the
 * gated activation of LLaMA's MLP, for rows x cols elements. gate and up
 * are two matrices, or the two halves of one [rows, 2 * cols] matrix
 * (up = gate + cols elements, stride_gate = stride_up = its row stride).
 * out must not overlap gate or up. */
TC_API tc_status tc_swiglu_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr gate,
                               CUdeviceptr up, int64_t rows, int64_t cols, int64_t stride_out, int64_t stride_gate,
                               int64_t stride_up);

/* The gradients of tc_swiglu_fwd, given dout and the forward pass's gate
 * and up; with s = sigmoid(gate):
 *   dup[r, c]   = dout * gate * s
 *   dgate[r, c] = dout * up * s * (1 + gate * (1 - s))
 * dgate and dup may be the two halves of one [rows, 2 * cols] matrix, as
 * gate and up may; no output may overlap an input. */
TC_API tc_status tc_swiglu_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dgate, CUdeviceptr dup,
                               CUdeviceptr dout, CUdeviceptr gate, CUdeviceptr up, int64_t rows, int64_t cols,
                               int64_t stride_dgate, int64_t stride_dup, int64_t stride_dout, int64_t stride_gate,
                               int64_t stride_up);

/* ---- the element-wise sum (lib/add.tile) ---- */

/* out[r, c] = a[r, c] + b[r, c], arithmetic in f32, for rows x cols elements
 * of dtype (F16, BF16, F32): the residual adds of a transformer layer and of
 * its backward pass. out may be a or b (in place); otherwise it must not
 * overlap them. */
TC_API tc_status tc_add(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr out, CUdeviceptr a,
                        CUdeviceptr b, int64_t rows, int64_t cols, int64_t stride_out, int64_t stride_a,
                        int64_t stride_b);

/* ---- rotary position embeddings (lib/rope.tile) ---- */

/* What tc_rope rotates, and how. Zero it, then set the fields that apply. */
typedef struct tc_rope_args {
    tc_dtype dtype;     /* of q and k: TC_DTYPE_F16, TC_DTYPE_BF16 or TC_DTYPE_F32 */
    int64_t tokens;     /* rows of q and k: every token of every sequence, 1 .. 2^31 - 1 */
    int64_t q_heads;    /* >= 1 */
    int64_t k_heads;    /* 0: q alone; GQA: fewer than q_heads */
    int64_t head_dim;   /* 2 .. 65536 */
    int64_t rotary_dim; /* 0: all of head_dim; else even, <= head_dim: the first rotary_dim dims of each head
                           rotate and the others are left as they are (partial rotary embeddings) */
    int interleaved;    /* 0: the NeoX / LLaMA form, pairs (x[i], x[i + rotary_dim / 2]); 1: the GPT-J form,
                           pairs (x[2i], x[2i + 1]) */
    int backward;       /* 1: rotate by minus the angles: the gradient, applied to dq and dk */
    /* q and k, [tokens, heads, head_dim] with the dim contiguous: element (t, h, d) of q at
     * q + t * stride_qt + h * stride_qh + d. Rotated in place. A packed QKV tensor is q and k pointing
     * into it with its strides; q and k must not overlap. */
    CUdeviceptr q, k;
    int64_t stride_qt, stride_qh, stride_kt, stride_kh;
    /* Positions: i32 [tokens] on the device, or 0: token t is at position_offset + t % seqlen (a batch of
     * sequences of seqlen tokens, one after the other, each starting at position_offset). */
    CUdeviceptr positions;
    int64_t seqlen, position_offset;
    /* Angles: f32 tables cos[p, i] and sin[p, i] of max_position rows of rotary_dim / 2 values (row stride
     * stride_cs; a position outside [0, max_position) reads the nearest row), or cos = sin = 0: the angle
     * of pair i at position p is p * theta^(-2i / rotary_dim), computed in f32 as frameworks compute it
     * (to about p * 2^-23 radians: a table computed in double is exact at long positions). */
    CUdeviceptr cos, sin;
    int64_t stride_cs, max_position;
    float theta; /* 10000 in LLaMA 1 and 2, 500000 in LLaMA 3 */
} tc_rope_args;

/* Rotary position embeddings (RoPE): each head of q and k, at its token's
 * position p, has its pairs (x1, x2) rotated by the angles a_i of p:
 * x1' = x1 cos(a_i) - x2 sin(a_i), x2' = x2 cos(a_i) + x1 sin(a_i), in
 * place; with `backward` by -a_i, which is the gradient of the rotation
 * (dq and dk given in place of q and k). One program per token. */
TC_API tc_status tc_rope(tc_context *ctx, CUstream stream, const tc_rope_args *a);

/* ---- cross-entropy (lib/cross_entropy.tile) ---- */

/* A cross-entropy loss over a vocabulary, its gradient fused. Zero it, then
 * set the fields that apply. */
typedef struct tc_cross_entropy_args {
    tc_dtype dtype;        /* of logits and dlogits: TC_DTYPE_F16, TC_DTYPE_BF16 or TC_DTYPE_F32 */
    tc_dtype label_dtype;  /* TC_DTYPE_I32 or TC_DTYPE_I64 (PyTorch's) */
    int64_t rows;          /* tokens, 1 .. 2^31 - 1 */
    int64_t vocab;         /* classes, 1 .. 2^30 */
    CUdeviceptr logits;    /* [rows, vocab], row stride stride_logits (elements) */
    int64_t stride_logits;
    CUdeviceptr labels;    /* [rows]: a class, or ignore_index; a label outside [0, vocab) is ignored too */
    int64_t ignore_index;  /* PyTorch's default is -100 */
    float label_smoothing; /* eps in [0, 1]: the target is (1 - eps) on the label and eps / vocab everywhere */
    float z_loss;          /* z >= 0: z * lse^2 added to each row's loss (PaLM's z-loss); 0: none */
    CUdeviceptr loss;      /* f32 [1]: the mean of the loss over the rows whose label is not ignored (0 when
                              every row is ignored) */
    CUdeviceptr losses;    /* optional f32 [rows]: each row's loss (0 for an ignored row) */
    CUdeviceptr lse;       /* optional f32 [rows]: each row's log-sum-exp of the logits */
    CUdeviceptr dlogits;   /* optional: the gradient of grad_scale * loss with respect to the logits, [rows,
                              vocab] with row stride stride_dlogits; it may be logits itself (in place, with the
                              same stride: no memory beyond the logits' for the backward pass); 0: none */
    int64_t stride_dlogits;
    float grad_scale;      /* the upstream gradient of the loss: 1 for loss.backward() */
    CUdeviceptr workspace; /* tc_cross_entropy_workspace_size bytes, 16-byte aligned */
    size_t workspace_bytes;
} tc_cross_entropy_args;

/* The workspace tc_cross_entropy needs for `rows` rows: the count of valid
 * rows and, when the caller does not ask for them, the rows' losses. */
TC_API tc_status tc_cross_entropy_workspace_size(int64_t rows, size_t *bytes);

/* Per row r with a valid label y, lse = log(sum_j exp(x_j)):
 *   loss_r = lse - (1 - eps) x_y - eps / vocab * sum_j x_j + z lse^2
 * loss = the mean of loss_r over the n valid rows, and
 *   dlogits[r, j] = grad_scale / n * (p_j (1 + 2 z lse) - eps / vocab - (1 - eps) [j == y]),
 * p_j = exp(x_j - lse), and 0 on ignored rows. The logits are read once
 * for the loss (an online log-sum-exp) and once for the gradient; the mean
 * is summed in a fixed order (bit-identical from run to run). Three
 * launches on `stream`. */
TC_API tc_status tc_cross_entropy(tc_context *ctx, CUstream stream, const tc_cross_entropy_args *a);

/* ---- AdamW (lib/adamw.tile) ---- */

/* One tensor of a model: its parameters (of the call's param_dtype), its
 * gradient (grad_dtype), Adam's two moments (f32) and, with master weights,
 * an f32 copy of the parameters; numel elements each, contiguous. */
typedef struct tc_adamw_tensor {
    CUdeviceptr param, grad, exp_avg, exp_avg_sq, master; /* master: 0 without master weights */
    int64_t numel;
} tc_adamw_tensor;

typedef struct tc_adamw_args {
    tc_dtype param_dtype;            /* TC_DTYPE_F32, TC_DTYPE_BF16 or TC_DTYPE_F16 */
    tc_dtype grad_dtype;             /* likewise */
    const tc_adamw_tensor *tensors;  /* host array */
    size_t num_tensors;              /* >= 1 */
    int master;                      /* 1: the f32 master copies hold the weights and are updated; the params
                                        get them rounded to param_dtype */
    float lr, beta1, beta2, eps, weight_decay;
    float grad_scale;                /* the gradients are multiplied by it first (1 / the loss scale) */
    CUdeviceptr step;                /* i32 on the device: the steps taken so far; the call adds one */
    CUdeviceptr workspace;           /* tc_adamw_workspace_size bytes, 16-byte aligned */
    size_t workspace_bytes;
} tc_adamw_args;

/* The workspace of tc_adamw for these tensors: its table of chunks. */
TC_API tc_status tc_adamw_workspace_size(const tc_adamw_tensor *tensors, size_t num_tensors, size_t *bytes);

/* One AdamW step (decoupled weight decay, bias correction with the step
 * count read on the device) over every tensor, in one launch (8 programs per
 * chunk of 65536 elements of a tensor; when every array is 16-byte aligned,
 * vectors of 4 elements and a second launch for each tensor's last numel % 4
 * elements), then the step count + 1. With t the
 * step count + 1 and g = grad * grad_scale:
 *   w = w (1 - lr weight_decay); m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2
 *   w -= lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
 * The call first waits for the work already on `stream` (which may still
 * read the workspace), then copies the chunk table there; the kernels run
 * on `stream`. Tensors must not overlap one another. */
TC_API tc_status tc_adamw(tc_context *ctx, CUstream stream, const tc_adamw_args *a);

/* ---- matrix multiply (lib/matmul.tile, lib/blockdiag_matmul.tile) ---- */

/* The epilogue applied to each element of a product, in f32, after the
 * bias and before rounding to the storage type. */
typedef enum tc_activation {
    TC_ACTIVATION_NONE,      /* x */
    TC_ACTIVATION_RELU,      /* max(x, 0) */
    TC_ACTIVATION_GELU_TANH, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    TC_ACTIVATION_GELU_ERF,  /* 0.5 x (1 + erf(x / sqrt(2))): the exact GELU */
    TC_ACTIVATION_SILU,      /* x * sigmoid(x) */
} tc_activation;

/* C = act(A B + bias): A is M x K, B is K x N, C is M x N, and
 *   C[m, n] = act(sum over k of A[m, k] * B[k, n] + bias[n])
 * accumulated in f32. Element (i, j) of A is at a + i * stride_am + j *
 * stride_ak (in elements), of B at b + i * stride_bk + j * stride_bn, of C
 * at c + i * stride_cm + j * stride_cn: a row-major A has stride_am = K (or
 * more), stride_ak = 1; a transposed one (column-major) stride_am = 1,
 * stride_ak = M; any strides work, but a unit stride in one dimension of a
 * matrix is what gets vectorized loads and stores (and the tensor cores'
 * fast paths). bias (N elements of dtype, contiguous) is optional: 0 for
 * none.
 *
 * Unlike the row-wise calls above:
 *  - dtype is TC_DTYPE_F16 or TC_DTYPE_BF16 (A, B, C and bias alike).
 *  - 1 <= M, N, K <= 2^30.
 *  - Input strides (A, B) are >= 0 and may make elements alias (a stride of
 *    0 broadcasts); C's strides must give every element its own address:
 *    one of them >= 1 and the other at least that stride times the extent
 *    along it (ignoring a dimension of extent 1), as any dense or padded
 *    row- or column-major layout does. Every element's offset in bytes fits
 *    an int64.
 *  - C must not overlap A, B or bias (not checked).
 * A violated convention is TC_ERROR_INVALID_ARGUMENT, as everywhere here.
 * The launch covers C with one program per tile (tc_matmul_plan_for says
 * which tiles); it is queued on stream and not synchronized. */
TC_API tc_status tc_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr c, CUdeviceptr a,
                           CUdeviceptr b, CUdeviceptr bias, int64_t M, int64_t N, int64_t K, int64_t stride_am,
                           int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                           int64_t stride_cn, tc_activation act);

/* The block-diagonal product of Monarch and butterfly layers:
 *   y[r, j * bout + o] = sum over i < bin of x[r, j * bin + i] * w[j, i, o]
 * for r < batch, j < nblocks, o < bout: x is [batch, nblocks * bin], w holds
 * nblocks independent bin x bout matrices, y is [batch, nblocks * bout];
 * f32 accumulation. Row r of x starts at x + r * stride_xm and its elements
 * are contiguous (likewise y with stride_ym); w[j, i, o] is at w + j *
 * stride_wb + i * stride_wk + o * stride_wn, so a weight stored [nblocks,
 * bout, bin] is passed with stride_wk = 1, stride_wn = bin.
 *  - dtype is TC_DTYPE_F16 or TC_DTYPE_BF16.
 *  - 1 <= batch, bin, bout <= 2^30 and 1 <= nblocks <= 65535.
 *  - stride_xm >= nblocks * bin and stride_ym >= nblocks * bout (when
 *    batch > 1); w's strides >= 0. Offsets in bytes fit an int64.
 *  - y must not overlap x or w (not checked). */
TC_API tc_status tc_blockdiag_matmul(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr y, CUdeviceptr x,
                                     CUdeviceptr w, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                                     int64_t stride_xm, int64_t stride_wb, int64_t stride_wk, int64_t stride_wn,
                                     int64_t stride_ym);

/* The specialization tc_matmul or tc_blockdiag_matmul compiles and the grid
 * it launches, for a shape: compile `kernel` of the embedded `file` with
 * these constexprs and num_warps (plus the alignment facts of the actual
 * arguments: 16-byte aligned pointers; sizes and strides that are multiples
 * of 8 elements) and launch `grid`. */
typedef struct tc_matmul_plan {
    const char *file;            /* "matmul.tile", "blockdiag_matmul.tile" */
    const char *kernel;          /* "matmul", "blockdiag_matmul" */
    tc_constexpr constexprs[12]; /* T, BM, BN, BK, ... by the kernel's names */
    size_t num_constexprs;
    int block_m, block_n, block_k; /* the tile of C (of one block of y) a program computes, and the K step */
    int group_m;                   /* matmul: tile rows per group of the program order; blockdiag: 0 */
    int a_order;                   /* 0 general strides, 1 row-major (inner stride 1), 2 column-major: A (x) */
    int b_order;                   /* ... of B (w) */
    int c_order;                   /* ... of C (y: always 1) */
    int even_k;                    /* K (bin) is a multiple of block_k: the K tail needs no mask */
    int num_warps;
    int warp_specialize;           /* tc_options.warp_specialize: a producer warpgroup (TMA) on sm_90a */
    tc_dim3 grid;
    int persistent;                /* tc_options.persistent: the grid as a loop over tiles in resident programs */
    int num_stages;                /* software pipelining depth; 0: the default (3) */
    int tuned;                     /* 1: the tile came from the tuning table (tc_matmul on a GPU it has entries
                                      for; docs/autotune.md); tc_matmul_plan_for gives the untuned plan */
} tc_matmul_plan;

/* The plan of tc_matmul for these arguments (bias given or not), with A, B
 * and C 16-byte aligned, on a context that compiles for sm_90a (an H100 or
 * H200: TC_DEFAULT_ARCH). The same validation as tc_matmul, less ctx and the
 * pointers. On sm_80 and sm_90 (mma.sync) the 128 x 256 tile is kept for
 * row-major operands without an epilogue; the other plans are the same. */
TC_API tc_status tc_matmul_plan_for(tc_dtype dtype, int64_t M, int64_t N, int64_t K, int64_t stride_am,
                                    int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                                    int64_t stride_cn, int has_bias, tc_activation act, tc_matmul_plan *out);

/* The plan of tc_blockdiag_matmul, validated as it is, less ctx and the
 * pointers. */
TC_API tc_status tc_blockdiag_matmul_plan_for(tc_dtype dtype, int64_t batch, int64_t nblocks, int64_t bin, int64_t bout,
                                              int64_t stride_xm, int64_t stride_wb, int64_t stride_wk,
                                              int64_t stride_wn, int64_t stride_ym, tc_matmul_plan *out);

/* ---- what the row-wise calls choose (for tests, benchmarks and AOT builds) ---- */

typedef enum tc_stdlib_op {
    TC_STDLIB_SOFTMAX_FWD,
    TC_STDLIB_SOFTMAX_BWD,
    TC_STDLIB_RMSNORM_FWD,
    TC_STDLIB_RMSNORM_BWD,
    TC_STDLIB_SWIGLU_FWD,
    TC_STDLIB_SWIGLU_BWD,
    TC_STDLIB_ADD,
} tc_stdlib_op;

/* The specialization an entry point compiles for a dtype and a row width:
 * compile `kernel` of the embedded source `file` (tc_stdlib_source) with
 * these constexpr values and num_warps, and, where every pointer argument is
 * 16-byte aligned and every stride and cols is a multiple of 16 / element
 * bytes, with `aligned_params` as tc_options.params, and the same code
 * results. (Where the tensors are 16-byte aligned but share a stride that is
 * not such a multiple, the softmax and RMSNorm forward loops also take
 * REALIGN = true, BLOCK 4096 and 8 or 16 warps: 16-byte aligned windows of
 * the rows, lib/softmax.tile. On sm_90 and later the softmax forward and
 * backward split other f16 and bf16 rows wider than 65536 columns over
 * thread-block clusters of 8 programs: CLUSTER = 8, BLOCK 2048 to 8192 by
 * the part's width and 4 or 8 warps, and a launch of (rows * 8, 1, 1); this
 * plan then describes the one-program-a-row kernel the other targets run.) */
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
    unsigned grid_y; /* the launch is (rows, grid_y, 1): 1, or for the element-wise kernels (SwiGLU, add) the
                        column tiles up to 65535: program (r, p) takes row r's tiles p, p + grid_y, ...
                        (SwiGLU forward), or the rows' tiles in row-major order, program (x, y) tile
                        y * rows + x, then every rows * grid_y-th (add, SwiGLU backward; lib/add.tile) */
} tc_stdlib_plan;

/* Fills *out for op, dtype (F16, BF16, F32) and cols >= 1; the strings
 * point to static storage. TC_ERROR_INVALID_ARGUMENT otherwise. */
TC_API tc_status tc_stdlib_plan_for(tc_stdlib_op op, tc_dtype dtype, int64_t cols, tc_stdlib_plan *out);

/* The text of an embedded library file by base name ("softmax.tile"), as
 * built into this libtilec: NUL-terminated, static. TC_ERROR_INVALID_ARGUMENT
 * for a name the library does not have. */
TC_API tc_status tc_stdlib_source(const char *name, const char **text, size_t *len);

/* ---- attention (lib/attention.tile) ---- */

/* The attention forward pass (FlashAttention-2 style, f32 softmax and
 * accumulation):
 *   O[b, i, h, :] = sum over j of softmax_j(scale * q_i . k_j) * v_j
 * for query head h, with k and v from KV head h / (heads / kv_heads): MHA
 * (kv_heads = heads), GQA (kv_heads divides heads) and MQA (kv_heads 1).
 *  - dtype is TC_DTYPE_F16 or TC_DTYPE_BF16 (q, k, v, o); lse is f32.
 *  - Element (b, h, i, d) of q is at q + b * stride_qb + h * stride_qh + i *
 *    stride_qm + d (elements; the dim stride is 1), likewise k and v (with
 *    their KV head; stride_kn, stride_vn the key strides) and o: both
 *    [batch, seq, heads, dim] and [batch, heads, seq, dim] work. Strides are
 *    >= 0 with offsets within an int64; o's must give every element its own
 *    address.
 *  - 1 <= head_dim <= 256 (tiles of the next power of two at least 16,
 *    masked on d); 1 <= heads, kv_heads; heads % kv_heads == 0;
 *    1 <= seqlen_q, seqlen_k <= 2^30; batch * heads <= 65535.
 *  - causal: query i attends keys j <= i + (seqlen_k - seqlen_q) (bottom-
 *    right aligned, per sequence with varlen). A query that sees no key
 *    gets O = 0 and LSE = -inf.
 *  - lse (f32, [batch, heads, seqlen_q], element (b * heads + h) *
 *    seqlen_q + i) = log(sum over j of exp(scale * q_i . k_j)) in NATURAL
 *    log units (m + log(l)); written for every query row.
 *  - Varlen (packed) batches: cu_seqlens_q and cu_seqlens_k (device i32
 *    arrays of batch + 1 nondecreasing offsets from 0) both given: sequence
 *    b's queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 of q
 *    and o (its keys likewise), batch is the number of sequences and
 *    seqlen_q, seqlen_k are the longest lengths (not checked against the
 *    arrays, which are on the device); the batch strides are ignored. Both
 *    0 otherwise.
 *  - scale is finite (usually 1 / sqrt(head_dim)).
 *  - o and lse must not overlap the inputs (not checked). */
TC_API tc_status tc_attention_fwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr o, CUdeviceptr lse,
                                  CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, int64_t batch, int64_t heads,
                                  int64_t kv_heads, int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim,
                                  int64_t stride_qb, int64_t stride_qh, int64_t stride_qm, int64_t stride_kb,
                                  int64_t stride_kh, int64_t stride_kn, int64_t stride_vb, int64_t stride_vh,
                                  int64_t stride_vn, int64_t stride_ob, int64_t stride_oh, int64_t stride_om,
                                  CUdeviceptr cu_seqlens_q, CUdeviceptr cu_seqlens_k, float scale, int causal);

/* The specialization tc_attention_fwd compiles and its grid. */
typedef struct tc_attention_plan {
    const char *file;           /* "attention.tile" */
    const char *kernel;         /* "attention_fwd" */
    tc_constexpr constexprs[16]; /* T, HEAD_DIM, D, BM, BN, CAUSAL, VARLEN, EVEN_N (tc_attention_fwd adds
                                    NEG_SCALE for a negative scale) */
    size_t num_constexprs;
    int head_dim;   /* HEAD_DIM */
    int block_d;    /* D: the head dim's tile */
    int block_m;    /* query rows per program */
    int block_n;    /* keys per loop step */
    int num_warps;
    int num_stages; /* software pipelining depth of the key loops */
    int warp_specialize; /* tc_options.warp_specialize: a producer warpgroup (TMA) on sm_90a */
    int causal, varlen;
    tc_dim3 grid; /* (cdiv(seqlen_q, block_m), batch * heads, 1) */
    int persistent; /* tc_options.persistent: the grid as a loop over tiles in resident programs */
    int tuned;      /* 1: the tiles came from the tuning table (tc_attention_fwd on a GPU it has entries for;
                       docs/autotune.md); tc_attention_plan_for gives the untuned plan */
    int min_programs_per_sm; /* tc_options.min_programs_per_sm: 0, or the programs that must fit on an SM */
} tc_attention_plan;

/* The plan of tc_attention_fwd on a context that compiles for sm_90a (an H100
 * or H200: TC_DEFAULT_ARCH), with the same validation of the sizes. On sm_80
 * and sm_90 (mma.sync) head dims over 128 take 128 x 32 tiles with 8 warps
 * instead; the other head dims have the same plan on every target. */
TC_API tc_status tc_attention_plan_for(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                                       int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int causal, int varlen,
                                       tc_attention_plan *out);

/* ---- attention backward (lib/attention_bwd.tile) ---- */

/* The gradients of tc_attention_fwd (FlashAttention-2's backward pass): given
 * dout = dL/dO and the forward pass's q, k, v, its output o and its lse,
 *   dv = P^T dout, dk = scale * dS^T q, dq = scale * dS k,
 * with P = softmax(scale * q k^T) (masked as the forward masks it),
 * dS = P * (dout v^T - Delta) and Delta[i] = sum over d of dout[i, d] * o[i, d].
 * With GQA and MQA each KV head's dk and dv sum its group's query heads.
 *  - Every size, flag and convention is tc_attention_fwd's (dtype, head_dim,
 *    heads and kv_heads, seqlens, varlen through cu_seqlens_q/k, causal,
 *    scale), and so is the validation, with the same messages. o and lse must
 *    be what tc_attention_fwd wrote for these q, k, v (lse: f32 [batch, heads,
 *    seqlen_q], natural log; -inf for a query that sees no key, whose dq row
 *    is then 0).
 *  - dout, dq have q's shape and dk, dv k's, each with its own strides (the
 *    dim stride is 1), as o has o's: stride_dob... for dout, stride_dqb... for
 *    dq, and so on. dq, dk and dv must give every element its own address.
 *  - workspace: device memory of at least tc_attention_bwd_workspace_size
 *    bytes (for the same arguments), 16-byte aligned, that the call may use
 *    until the launches it queues complete; its contents need not be set.
 *  - deterministic: nonzero guarantees that dq, dk and dv are bit-identical
 *    from run to run (no floating-point atomics); 0 lets the plan choose
 *    for dq: accumulated in the workspace by atomic adds (on sm_90a up to
 *    head dim 128 without cu_seqlens, where they are the faster way), or
 *    computed by a kernel of its own (TILEC_ATTENTION_BWD_DQ=atomic or
 *    =kernel overrides the choice; tc_attention_bwd_plan_for says which).
 *    dk and dv are always deterministic.
 *  - dq, dk, dv must not overlap the inputs or each other (not checked).
 * Three kernels are queued on stream (tc_attention_bwd_plan says which); the
 * call does not synchronize. */
TC_API tc_status tc_attention_bwd(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr dq, CUdeviceptr dk,
                                  CUdeviceptr dv, CUdeviceptr dout, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v,
                                  CUdeviceptr o, CUdeviceptr lse, int64_t batch, int64_t heads, int64_t kv_heads,
                                  int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int64_t stride_qb,
                                  int64_t stride_qh, int64_t stride_qm, int64_t stride_kb, int64_t stride_kh,
                                  int64_t stride_kn, int64_t stride_vb, int64_t stride_vh, int64_t stride_vn,
                                  int64_t stride_ob, int64_t stride_oh, int64_t stride_om, int64_t stride_dob,
                                  int64_t stride_doh, int64_t stride_dom, int64_t stride_dqb, int64_t stride_dqh,
                                  int64_t stride_dqm, int64_t stride_dkb, int64_t stride_dkh, int64_t stride_dkn,
                                  int64_t stride_dvb, int64_t stride_dvh, int64_t stride_dvn, CUdeviceptr cu_seqlens_q,
                                  CUdeviceptr cu_seqlens_k, float scale, int causal, int deterministic,
                                  CUdeviceptr workspace, size_t workspace_bytes);

/* The kernels tc_attention_bwd launches, in order, and its workspace. Each
 * kernel's plan is a tc_attention_plan of lib/attention_bwd.tile (block_m:
 * query rows per program or per step, block_n: keys; its grid). */
typedef struct tc_attention_bwd_plan {
    tc_attention_plan preprocess; /* attention_bwd_preprocess: Delta; with dq_atomic also zeroes dq's accumulator */
    tc_attention_plan dkdv;       /* attention_bwd_dkdv: dk and dv (and, with dq_atomic, dq's accumulator) */
    tc_attention_plan dq;         /* attention_bwd_dq, or attention_bwd_dq_convert with dq_atomic */
    int dq_atomic;                /* dq accumulated in f32 with atomic adds in the workspace, then converted */
    size_t workspace_bytes;       /* what tc_attention_bwd_workspace_size returns */
    size_t delta_offset;          /* Delta: f32 [batch, heads, seqlen_pad], at this byte offset in the workspace */
    size_t dq_acc_offset;         /* with dq_atomic: f32 [batch, heads, seqlen_q, block_d] */
    size_t lse_offset;            /* LSE * log2(e): f32 [batch, heads, seqlen_pad] (seqlen_pad: seqlen_q rounded
                                     up to a multiple of 128) */
} tc_attention_bwd_plan;

/* The plan of tc_attention_bwd for these sizes on a context that compiles
 * for sm_90a (TC_DEFAULT_ARCH), with the same validation of the sizes as
 * tc_attention_fwd. */
TC_API tc_status tc_attention_bwd_plan_for(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                                           int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int causal, int varlen,
                                           int deterministic, tc_attention_bwd_plan *out);

/* The bytes of workspace tc_attention_bwd needs for these arguments (the
 * same validation of the sizes as tc_attention_fwd); *bytes is 0 on error.
 * Delta and LSE in log2 units (4 bytes each a query row, the rows of each
 * (batch, head) rounded up to a multiple of 128) and, where dq may be added with atomics (not
 * deterministic, no cu_seqlens, head_dim up to 128: whatever the target),
 * dq's f32 accumulator (4 bytes x the head dim rounded up to a power of two
 * a query row). */
TC_API tc_status tc_attention_bwd_workspace_size(tc_dtype dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                                                 int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, int causal,
                                                 int varlen, int deterministic, size_t *bytes);

/* ---- inference attention against a KV cache (lib/attention_kvcache.tile) ---- */

/* The arguments of tc_attention_kvcache: zero the struct, then set what
 * applies (a 0 pointer is an absent optional tensor). Attention of each
 * sequence's new query tokens against its cached keys and values, which
 * already hold the new tokens' (tc_kvcache_append puts them there):
 *   O[b, i, h, :] = sum over j < len_k(b) of softmax_j(scale * q_i . k_j) * v_j
 * with query head h reading KV head h / (heads / kv_heads). The query heads
 * of a KV head are computed together (each K and V tile is read once per
 * group). One call serves decode (seqlen_q of 1 to 16: speculative
 * decoding), chunked prefill (thousands of query tokens against the cache)
 * and packed batches that mix them (cu_seqlens_q).
 *  - dtype: TC_DTYPE_F16 or TC_DTYPE_BF16 (q, o, and the caches unless
 *    kv_dtype says fp8).
 *  - 1 <= head_dim <= 256; 1 <= heads, kv_heads; heads % kv_heads == 0;
 *    batch * kv_heads <= 65535.
 *  - Queries: element (b, h, i, d) of q at q + b * stride_qb + h * stride_qh
 *    + i * stride_qm + d, for i < seqlen_q (1 <= seqlen_q <= 2^30); o
 *    likewise with its strides, each element its own address. With
 *    cu_seqlens_q (device i32 [batch + 1], nondecreasing from 0) the
 *    queries are packed: sequence b's are rows cu_seqlens_q[b] ..
 *    cu_seqlens_q[b + 1] - 1 (possibly none), seqlen_q is the longest and
 *    the batch strides are unused.
 *  - Keys: sequence b has len_k(b) = seqused_k[b] keys (device i32
 *    [batch], 0 <= seqused_k[b] <= seqlen_k), or seqlen_k each without
 *    seqused_k (1 <= seqlen_k <= 2^30). Its new tokens are its last
 *    len_q(b) keys (causal masking counts on it).
 *    Contiguous cache (block_table 0): key j of KV head kh at k_cache + b *
 *    stride_kb + kh * stride_kh + j * stride_kn + d (a [batch, capacity,
 *    kv_heads, head_dim] cache has stride_kb = capacity * kv_heads *
 *    head_dim, capacity >= seqlen_k); v_cache alike.
 *    Paged cache: a pool of num_pages pages of page_size tokens (1 <=
 *    page_size <= 1024); key j of sequence b is in page p = block_table[b *
 *    stride_bt + j / page_size] (device i32, 0 <= p < num_pages), at
 *    k_cache + p * stride_kb + kh * stride_kh + (j % page_size) * stride_kn
 *    + d; stride_bt >= cdiv(seqlen_k, page_size). Pages may be anywhere in
 *    the pool, in any order, shared between sequences.
 *  - lse (optional, f32 [batch, heads, seqlen_q], element (b * heads + h)
 *    * seqlen_q + i): tc_attention_fwd's, natural log.
 *  - causal: query i attends keys j <= i + len_k - len_q (bottom-right
 *    aligned). A query that sees no key (len_k(b) = 0, or causal with
 *    len_q > len_k) gets O = 0 and LSE = -inf.
 *  - scale: finite, any sign.
 *  - num_splits: 0 lets the plan split the keys over several programs when
 *    batch * kv_heads cannot fill the GPU (flash-decoding: each split writes
 *    a partial O and LSE to the workspace, a second kernel combines them,
 *    equal to the unsplit result to rounding); 1 never splits; 2..128
 *    forces that many. Splits need workspace (tc_attention_kvcache_
 *    workspace_size): with workspace 0, num_splits 0 runs unsplit.
 *    Long prefill chunks against a paged f16/bf16 cache use it too (sm_90a,
 *    head_dim up to 128, chunks of 1024 queries or more, or pages that
 *    TMA cannot copy whole): the keys and values are first copied to it
 *    as a contiguous cache, batch * seqlen_k * kv_heads * 2 rows; with
 *    workspace 0 the call reads the pages directly, slower.
 *  - dtype's caches or fp8 ones: kv_dtype, k_scale, v_scale below.
 *  - workspace: device memory of workspace_bytes, 16-byte aligned, used
 *    until the launches complete.
 *  - o and lse must not overlap the inputs or the workspace (not checked).
 * The call queues one kernel, or two with splits, and does not synchronize. */
typedef struct tc_attention_kvcache_args {
    tc_dtype dtype;
    int64_t batch, heads, kv_heads, head_dim;
    int64_t seqlen_q, seqlen_k;
    CUdeviceptr q, o, lse;
    int64_t stride_qb, stride_qh, stride_qm;
    int64_t stride_ob, stride_oh, stride_om;
    CUdeviceptr k_cache, v_cache;
    int64_t stride_kb, stride_kh, stride_kn;
    int64_t stride_vb, stride_vh, stride_vn;
    CUdeviceptr block_table; /* paged: i32 [batch, stride_bt]; 0: contiguous */
    int64_t stride_bt, page_size, num_pages;
    CUdeviceptr seqused_k;    /* i32 [batch], or 0 */
    CUdeviceptr cu_seqlens_q; /* i32 [batch + 1], or 0 */
    float scale;
    int causal;
    int num_splits;
    CUdeviceptr workspace;
    size_t workspace_bytes;
    /* An fp8 cache: kv_dtype TC_DTYPE_F8E4M3 or TC_DTYPE_F8E5M2 (0, the
     * zeroed struct's value, is dtype itself), the caches' strides in its
     * elements; each tile is converted to dtype in registers. k_scale and
     * v_scale (f32 [kv_heads], positive; both or neither, any kv_dtype):
     * KV head h's keys are k_scale[h] times what the cache holds, its
     * values v_scale[h] times (tc_kvcache_append_fp8 stores them so). */
    tc_dtype kv_dtype;
    CUdeviceptr k_scale, v_scale;
} tc_attention_kvcache_args;

TC_API tc_status tc_attention_kvcache(tc_context *ctx, CUstream stream, const tc_attention_kvcache_args *args);

/* What tc_attention_kvcache launches for some arguments on a GPU of
 * `multiprocessors` SMs: with `gathered`, first the gather kernel, which
 * copies a paged cache's keys and values to the workspace as a contiguous
 * cache; then the attention kernel, and (num_splits > 1) the combine
 * kernel; and the workspace they use. */
typedef struct tc_attention_kvcache_plan {
    tc_attention_plan attention; /* attention_kvcache: grid (row blocks, batch * kv_heads, num_splits) */
    tc_attention_plan combine;   /* attention_kvcache_combine (block_m: rows per program); unused unsplit */
    int group;                   /* query heads per KV head, computed together */
    int num_splits;              /* 1: unsplit */
    int64_t split_keys;          /* keys per split (a multiple of attention.block_n) */
    size_t workspace_bytes;      /* 0 unsplit */
    size_t lse_part_offset;      /* f32 [num_splits, batch, seqlen_q, heads] */
    size_t o_part_offset;        /* f32 [num_splits, batch, seqlen_q, heads, attention.block_d] */
    /* Gathered: prefill chunks (more than 64 rows of a KV head) against a
     * paged f16/bf16 cache on sm_90a, up to head dim 128, when the call has
     * a workspace and the chunks reach 1024 queries (or the pages are no
     * TMA boxes: a page size that is not a multiple of 8 tokens, strides
     * that are not multiples of 16 bytes): the attention kernel then reads
     * the contiguous copy in whole 128-key boxes, faster than page by page
     * once the chunk is long. */
    int gathered;
    tc_attention_plan gather; /* kvcache_gather: grid (cdiv(seqlen_k, block_m), batch * kv_heads) */
    size_t k_offset, v_offset; /* the copies: [batch, seqlen_k, kv_heads, kv_head_stride] of dtype */
    int64_t kv_head_stride;    /* head_dim rounded up to a multiple of 8 elements (16 bytes) */
} tc_attention_kvcache_plan;

/* The plan for args (the pointers are not looked at; a 0 workspace counts
 * as given) on a context that compiles for sm_90a, with multiprocessors
 * SMs (tc_context_multiprocessors). The same validation as the call. */
TC_API tc_status tc_attention_kvcache_plan_for(const tc_attention_kvcache_args *args, int multiprocessors,
                                               tc_attention_kvcache_plan *out);

/* The workspace bytes tc_attention_kvcache needs for args on ctx's GPU
 * (0 when the plan does not split). */
TC_API tc_status tc_attention_kvcache_workspace_size(tc_context *ctx, const tc_attention_kvcache_args *args,
                                                     size_t *bytes);

/* Appends tokens' K and V to a cache, slot by slot (vLLM's
 * reshape_and_cache): token t's rows, k + t * stride_kt + kh * stride_kh
 * (kh < kv_heads, head_dim contiguous elements; v likewise), are copied to
 * slot s = slot_mapping[t] (device i64 [tokens]): page s / page_size,
 * position s % page_size of the cache, k_cache + page * stride_kcp +
 * position * stride_kcn + kh * stride_kch. A negative slot is a padding
 * token and is skipped, as is a slot >= num_pages * page_size. A
 * contiguous cache [batch, capacity, kv_heads, head_dim] is the paged one
 * with page_size = capacity (slot b * capacity + position).
 *  - dtype F16 or BF16; 1 <= tokens <= 2^31 - 1; 1 <= kv_heads <= 65535;
 *    1 <= head_dim <= 256; 1 <= page_size, num_pages; strides >= 0.
 *  - Two tokens must not map to the same slot (their order is not kept).
 * One kernel is queued on stream. */
TC_API tc_status tc_kvcache_append(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr k_cache,
                                   CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping,
                                   int64_t tokens, int64_t kv_heads, int64_t head_dim, int64_t page_size,
                                   int64_t num_pages, int64_t stride_kt, int64_t stride_kh, int64_t stride_vt,
                                   int64_t stride_vh, int64_t stride_kcp, int64_t stride_kcn, int64_t stride_kch,
                                   int64_t stride_vcp, int64_t stride_vcn, int64_t stride_vch);

/* tc_kvcache_append into a cache of cache_dtype (dtype, TC_DTYPE_F8E4M3 or
 * TC_DTYPE_F8E5M2; its strides in its elements): each row is divided by
 * its KV head's scale, k_scale[h] or v_scale[h] (f32 [kv_heads], both or
 * neither: 0 is no scaling), in f32 and converted to cache_dtype (round to
 * nearest even; fp8 saturates at its largest finite value), which
 * tc_attention_kvcache's kv_dtype, k_scale and v_scale read back. */
TC_API tc_status tc_kvcache_append_fp8(tc_context *ctx, CUstream stream, tc_dtype dtype, tc_dtype cache_dtype,
                                       CUdeviceptr k_scale, CUdeviceptr v_scale, CUdeviceptr k_cache,
                                       CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping,
                                       int64_t tokens, int64_t kv_heads, int64_t head_dim, int64_t page_size,
                                       int64_t num_pages, int64_t stride_kt, int64_t stride_kh, int64_t stride_vt,
                                       int64_t stride_vh, int64_t stride_kcp, int64_t stride_kcn, int64_t stride_kch,
                                       int64_t stride_vcp, int64_t stride_vcn, int64_t stride_vch);

/* tc_kvcache_append with rotary position embeddings (tc_rope) fused: rope
 * describes the tokens' positions, the angles and q, which is rotated in
 * place as tc_rope rotates it; each token's k rows are rotated the same way
 * as they are copied to the cache (k itself is left as it is), in f32 and
 * rounded once to dtype, as tc_rope then tc_kvcache_append would give them.
 * v is copied as it is.
 *  - rope: tc_rope's rules, with dtype, tokens and head_dim the append's,
 *    k = 0 and k_heads = 0 (the append's k, with its kv_heads, which must
 *    divide q_heads), backward = 0.
 * Two kernels are queued on stream (q's rotation, the append). */
TC_API tc_status tc_kvcache_append_rope(tc_context *ctx, CUstream stream, tc_dtype dtype, CUdeviceptr k_cache,
                                        CUdeviceptr v_cache, CUdeviceptr k, CUdeviceptr v, CUdeviceptr slot_mapping,
                                        int64_t tokens, int64_t kv_heads, int64_t head_dim, int64_t page_size,
                                        int64_t num_pages, int64_t stride_kt, int64_t stride_kh, int64_t stride_vt,
                                        int64_t stride_vh, int64_t stride_kcp, int64_t stride_kcn, int64_t stride_kch,
                                        int64_t stride_vcp, int64_t stride_vcn, int64_t stride_vch,
                                        const tc_rope_args *rope);

#ifdef __cplusplus
}
#endif

#endif
