/*
 * llama_layer.c — one LLaMA decoder layer trained for a step in plain C,
 * every kernel tilec's (include/tilec/stdlib.h):
 *
 *     x -> RMSNorm -> QKV projection -> RoPE -> causal attention (GQA) -> output projection -> + x = h
 *     h -> RMSNorm -> gate/up projection -> SwiGLU -> down projection -> + h = y
 *     y -> lm head (hidden -> vocab) -> cross-entropy, the mean over the tokens
 *
 * then the backward pass through all of it and one AdamW step over the
 * seven weights (bf16 parameters with f32 master weights).
 *
 *     llama_layer [--steps N]          the LLaMA-7B-like width: times the train step (tokens/s, MFU)
 *     llama_layer --tiny --check       a tiny width against a float64 CPU reference
 *     options: --steps N (timed steps, default 10), --seed N, --batch N, --seq N, --vocab N
 *
 * The file is also a small library with a C ABI (the llama_layer_*
 * functions below): built with -DLLAMA_LAYER_NO_MAIN it is
 * libllama_layer.so, which bench/llama_layer.py loads through ctypes to run
 * the same layer on PyTorch's tensors.
 *
 * Exit status: 0 correct (or timed), 1 wrong or failed, 2 bad usage, 77
 * skipped (no NVIDIA driver or GPU, and TILEC_INTERPRET unset).
 */
#include <tilec/stdlib.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"

/* ==================================================================== the library */

/*
 * The layer's weights, each row-major [out, in] as torch.nn.Linear keeps
 * them (a projection is Y = X W^T), bf16:
 */
enum llama_layer_tensor {
    LLAMA_NORM1,    /* [hidden]: the attention's RMSNorm weight */
    LLAMA_WQKV,     /* [(heads + 2 kv_heads) head_dim, hidden]: the rows of q's heads, then k's, then v's */
    LLAMA_WO,       /* [hidden, heads head_dim] */
    LLAMA_NORM2,    /* [hidden]: the MLP's RMSNorm weight */
    LLAMA_WGATE_UP, /* [2 mlp, hidden]: the gate's rows, then the up projection's */
    LLAMA_WDOWN,    /* [hidden, mlp] */
    LLAMA_LM_HEAD,  /* [vocab, hidden] */
    LLAMA_NUM_TENSORS
};

/*
 * The sizes and hyperparameters. The tokens are batch sequences of seq
 * tokens, one after the other: x is [batch * seq, hidden] and token t is at
 * position t % seq.
 */
typedef struct llama_layer_config {
    int64_t batch, seq, hidden, heads, kv_heads, head_dim, mlp, vocab;
    float rope_theta;                               /* 10000 in LLaMA 1 and 2 */
    float norm_eps;                                 /* RMSNorm's epsilon */
    float lr, beta1, beta2, adam_eps, weight_decay; /* AdamW's (the norm weights have no weight decay) */
    int deterministic; /* tc_attention_bwd's: 1 for bit-identical gradients from run to run */
} llama_layer_config;

/* Device buffers a caller supplies (each 0: the layer allocates it):
 * param bf16, master f32, grad bf16 (f32 for LLAMA_NORM1 and LLAMA_NORM2:
 * tc_rmsnorm_bwd accumulates them in f32), numel elements each. */
typedef struct llama_layer_buffers {
    CUdeviceptr param[LLAMA_NUM_TENSORS];
    CUdeviceptr master[LLAMA_NUM_TENSORS];
    CUdeviceptr grad[LLAMA_NUM_TENSORS];
} llama_layer_buffers;

typedef struct llama_layer llama_layer;

/* The C ABI. Every int is a tc_status (0: TC_OK); on an error
 * llama_layer_error() says what failed: the call, tc_status_string and
 * tc_last_error(). */
int llama_layer_create(tc_context *ctx, const llama_layer_config *cfg, const llama_layer_buffers *given,
                       llama_layer **out);
int llama_layer_destroy(llama_layer *L);
const char *llama_layer_error(void);
const char *llama_layer_tensor_name(int tensor);
int64_t llama_layer_numel(const llama_layer *L, int tensor);
CUdeviceptr llama_layer_param(const llama_layer *L, int tensor);
CUdeviceptr llama_layer_master(const llama_layer *L, int tensor);
CUdeviceptr llama_layer_grad(const llama_layer *L, int tensor);
CUdeviceptr llama_layer_loss(const llama_layer *L);
int llama_layer_read_loss(const llama_layer *L, float *out);
int llama_layer_sync_master(llama_layer *L);
int llama_layer_forward_backward(llama_layer *L, CUstream stream, CUdeviceptr x, CUdeviceptr labels, CUdeviceptr dx);
int llama_layer_adamw(llama_layer *L, CUstream stream);
int llama_layer_train_step(llama_layer *L, CUstream stream, CUdeviceptr x, CUdeviceptr labels, CUdeviceptr dx);
double llama_layer_flops(const llama_layer_config *cfg);

enum { LL_MAX_ALLOCS = 96, LL_BF16 = 2, LL_F32 = 4 };

struct llama_layer {
    llama_layer_config cfg;
    tc_context *ctx;
    int64_t tokens, q_dim, kv_dim, qkv_dim; /* q_dim = heads * head_dim, kv_dim = kv_heads * head_dim */
    int64_t numel[LLAMA_NUM_TENSORS];
    CUdeviceptr param[LLAMA_NUM_TENSORS], master[LLAMA_NUM_TENSORS], grad[LLAMA_NUM_TENSORS];
    CUdeviceptr exp_avg[LLAMA_NUM_TENSORS], exp_avg_sq[LLAMA_NUM_TENSORS];
    /* what the forward pass keeps for the backward pass (bf16 unless said): the normed inputs, RMSNorm's
     * rstd (f32), q, k and v after RoPE [tokens, qkv_dim], the attention's output [tokens, q_dim] and lse
     * (f32 [batch, heads, seq]), h (the first residual sum), gate and up [tokens, 2 mlp], SwiGLU's output,
     * y (the layer's output) and the logits, over which tc_cross_entropy writes their gradient */
    CUdeviceptr xn1, rstd1, qkv, attn, lse, h, xn2, rstd2, gu, act, y, logits;
    /* the backward pass's: dL/dy, dL/d(SwiGLU output), dL/d(gate, up), dL/d(a normed input: both in turn),
     * dL/dh, dL/d(attention output), dL/d(q, k, v) packed as qkv, and dx when the caller gives none */
    CUdeviceptr dy, dact, dgu, dn, dh, dattn, dqkv, dx;
    CUdeviceptr loss;  /* f32 [1] */
    CUdeviceptr steps; /* i32 [2]: AdamW's step counts, one per call (the matrices', the norm weights') */
    CUdeviceptr attn_ws, ce_ws, adamw_ws[2];
    size_t attn_ws_bytes, ce_ws_bytes, adamw_ws_bytes[2];
    struct {
        CUdeviceptr ptr;
        size_t bytes;
        int output; /* written by every train step */
    } allocs[LL_MAX_ALLOCS];
    int num_allocs;
};

static const int ll_matrices[] = {LLAMA_WQKV, LLAMA_WO, LLAMA_WGATE_UP, LLAMA_WDOWN, LLAMA_LM_HEAD};
static const int ll_norms[] = {LLAMA_NORM1, LLAMA_NORM2};

static _Thread_local char ll_message[2048];

static int ll_error(tc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ll_message, sizeof ll_message, fmt, ap);
    va_end(ap);
    return (int)st;
}

/* A failed tilec call: its name (the call's text up to its '('), what it was for, the status and the reason. */
static int ll_failed(tc_status st, const char *call, const char *what) {
    int n = (int)strcspn(call, "(");
    return ll_error(st, "%.*s%s%s%s failed: %s: %s", n, call, what ? " (" : "", what ? what : "", what ? ")" : "",
                    tc_status_string(st), tc_last_error());
}

#define TRY(what, call)                                                                                                \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK)                                                                                              \
            return ll_failed(st_, #call, what);                                                                        \
    } while (0)

/* an error already described: pass it on */
#define PASS(call)                                                                                                     \
    do {                                                                                                               \
        int st_ = (call);                                                                                              \
        if (st_ != 0)                                                                                                  \
            return st_;                                                                                                \
    } while (0)

const char *llama_layer_error(void) {
    return ll_message;
}

const char *llama_layer_tensor_name(int tensor) {
    static const char *const names[] = {"norm1", "wqkv", "wo", "norm2", "wgate_up", "wdown", "lm_head"};
    return tensor >= 0 && tensor < LLAMA_NUM_TENSORS ? names[tensor] : "?";
}

static int ll_is_norm(int tensor) {
    return tensor == LLAMA_NORM1 || tensor == LLAMA_NORM2;
}

int64_t llama_layer_numel(const llama_layer *L, int tensor) {
    return tensor >= 0 && tensor < LLAMA_NUM_TENSORS ? L->numel[tensor] : 0;
}

CUdeviceptr llama_layer_param(const llama_layer *L, int tensor) {
    return tensor >= 0 && tensor < LLAMA_NUM_TENSORS ? L->param[tensor] : 0;
}

CUdeviceptr llama_layer_master(const llama_layer *L, int tensor) {
    return tensor >= 0 && tensor < LLAMA_NUM_TENSORS ? L->master[tensor] : 0;
}

CUdeviceptr llama_layer_grad(const llama_layer *L, int tensor) {
    return tensor >= 0 && tensor < LLAMA_NUM_TENSORS ? L->grad[tensor] : 0;
}

/* The loss of the last forward pass: f32 [1] on the device, or copied to *out (after the work queued so far). */
CUdeviceptr llama_layer_loss(const llama_layer *L) {
    return L->loss;
}

int llama_layer_read_loss(const llama_layer *L, float *out) {
    if (!L || !out)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_read_loss: L and out must be given");
    TRY(NULL, tc_memcpy_dtoh(L->ctx, out, L->loss, sizeof *out));
    return 0;
}

/* Model FLOPs of one train step: 6 per matmul parameter per token (forward 2, backward 4), and the
 * attention's four products (q k^T and P v forward; dv, dp, dq and dk backward: 12 seq^2 head_dim a
 * head), halved for the causal mask. The backward pass's recomputation of P is not counted. */
double llama_layer_flops(const llama_layer_config *c) {
    double tokens = (double)c->batch * (double)c->seq, hidden = (double)c->hidden, hd = (double)c->head_dim;
    double matmul_params = hidden * (double)(c->heads + 2 * c->kv_heads) * hd + (double)c->heads * hd * hidden +
                           hidden * 2.0 * (double)c->mlp + (double)c->mlp * hidden + hidden * (double)c->vocab;
    return 6.0 * tokens * matmul_params +
           6.0 * (double)c->batch * (double)c->heads * (double)c->seq * (double)c->seq * hd;
}

static int ll_alloc(llama_layer *L, CUdeviceptr *out, size_t bytes, int output) {
    if (L->num_allocs == LL_MAX_ALLOCS)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer: more than %d buffers", LL_MAX_ALLOCS);
    TRY(NULL, tc_mem_alloc(L->ctx, bytes ? bytes : 16, out));
    L->allocs[L->num_allocs].ptr = *out;
    L->allocs[L->num_allocs].bytes = bytes;
    L->allocs[L->num_allocs].output = output;
    L->num_allocs++;
    return 0;
}

static void ll_adamw_tensors(const llama_layer *L, const int *which, int n, tc_adamw_tensor *out) {
    for (int i = 0; i < n; i++) {
        int t = which[i];
        out[i] = (tc_adamw_tensor){L->param[t], L->grad[t], L->exp_avg[t], L->exp_avg_sq[t], L->master[t], L->numel[t]};
    }
}

static int ll_check_config(const llama_layer_config *c) {
    const int64_t sizes[] = {c->batch, c->seq, c->hidden, c->heads, c->kv_heads, c->head_dim, c->mlp, c->vocab};
    static const char *const names[] = {"batch", "seq", "hidden", "heads", "kv_heads", "head_dim", "mlp", "vocab"};
    for (int i = 0; i < 8; i++)
        if (sizes[i] < 1 || sizes[i] > ((int64_t)1 << 30))
            return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: %s (%lld) must be 1 .. 2^30", names[i],
                            (long long)sizes[i]);
    if (c->heads % c->kv_heads != 0)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: kv_heads (%lld) must divide heads (%lld)",
                        (long long)c->kv_heads, (long long)c->heads);
    if (c->head_dim % 2 != 0)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: head_dim (%lld) must be even (RoPE)",
                        (long long)c->head_dim);
    if (c->batch * c->seq > INT32_MAX)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: batch * seq must be below 2^31");
    return 0;
}

static int ll_sync_master(llama_layer *L, const int *which);

static int ll_setup(llama_layer *L, const llama_layer_buffers *given) {
    const llama_layer_config *c = &L->cfg;
    tc_context *ctx = L->ctx;
    int64_t T = L->tokens, D = c->hidden, F = c->mlp, V = c->vocab;
    int sync_master[LLAMA_NUM_TENSORS] = {0}, any_sync = 0;
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++) {
        size_t n = (size_t)L->numel[t], gs = ll_is_norm(t) ? LL_F32 : LL_BF16;
        if (given && given->param[t])
            L->param[t] = given->param[t];
        else
            PASS(ll_alloc(L, &L->param[t], n * LL_BF16, 0));
        if (given && given->master[t])
            L->master[t] = given->master[t];
        else {
            PASS(ll_alloc(L, &L->master[t], n * LL_F32, 0));
            sync_master[t] = given && given->param[t];
            any_sync |= sync_master[t];
        }
        if (given && given->grad[t])
            L->grad[t] = given->grad[t];
        else
            PASS(ll_alloc(L, &L->grad[t], n * gs, 1));
        PASS(ll_alloc(L, &L->exp_avg[t], n * LL_F32, 0));
        PASS(ll_alloc(L, &L->exp_avg_sq[t], n * LL_F32, 0));
        TRY("Adam's moments", tc_memset_d8(ctx, L->exp_avg[t], 0, n * LL_F32));
        TRY("Adam's moments", tc_memset_d8(ctx, L->exp_avg_sq[t], 0, n * LL_F32));
    }
    const struct {
        CUdeviceptr *p;
        int64_t elems;
        size_t size;
    } acts[] = {
        {&L->xn1, T * D, LL_BF16},
        {&L->rstd1, T, LL_F32},
        {&L->qkv, T * L->qkv_dim, LL_BF16},
        {&L->attn, T * L->q_dim, LL_BF16},
        {&L->lse, T * c->heads, LL_F32},
        {&L->h, T * D, LL_BF16},
        {&L->xn2, T * D, LL_BF16},
        {&L->rstd2, T, LL_F32},
        {&L->gu, T * 2 * F, LL_BF16},
        {&L->act, T * F, LL_BF16},
        {&L->y, T * D, LL_BF16},
        {&L->logits, T * V, LL_BF16},
        {&L->dy, T * D, LL_BF16},
        {&L->dact, T * F, LL_BF16},
        {&L->dgu, T * 2 * F, LL_BF16},
        {&L->dn, T * D, LL_BF16},
        {&L->dh, T * D, LL_BF16},
        {&L->dattn, T * L->q_dim, LL_BF16},
        {&L->dqkv, T * L->qkv_dim, LL_BF16},
        {&L->dx, T * D, LL_BF16},
        {&L->loss, 1, LL_F32},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        PASS(ll_alloc(L, acts[i].p, (size_t)acts[i].elems * acts[i].size, 1));

    TRY("attention workspace",
        tc_attention_bwd_workspace_size(TC_DTYPE_BF16, c->batch, c->heads, c->kv_heads, c->seq, c->seq, c->head_dim, 1,
                                        0, c->deterministic, &L->attn_ws_bytes));
    TRY("cross-entropy workspace", tc_cross_entropy_workspace_size(T, &L->ce_ws_bytes));
    tc_adamw_tensor tm[5], tn[2];
    ll_adamw_tensors(L, ll_matrices, 5, tm);
    ll_adamw_tensors(L, ll_norms, 2, tn);
    TRY("matrices", tc_adamw_workspace_size(tm, 5, &L->adamw_ws_bytes[0]));
    TRY("norm weights", tc_adamw_workspace_size(tn, 2, &L->adamw_ws_bytes[1]));
    PASS(ll_alloc(L, &L->attn_ws, L->attn_ws_bytes, 0));
    PASS(ll_alloc(L, &L->ce_ws, L->ce_ws_bytes, 0));
    PASS(ll_alloc(L, &L->adamw_ws[0], L->adamw_ws_bytes[0], 0));
    PASS(ll_alloc(L, &L->adamw_ws[1], L->adamw_ws_bytes[1], 0));
    PASS(ll_alloc(L, &L->steps, 2 * sizeof(int32_t), 0));
    TRY("step counts", tc_memset_d8(ctx, L->steps, 0, 2 * sizeof(int32_t)));
    TRY(NULL, tc_stream_synchronize(ctx, NULL));
    if (any_sync)
        PASS(ll_sync_master(L, sync_master));
    return 0;
}

/* Allocates the layer on ctx's device: the buffers `given` (may be NULL)
 * does not supply, Adam's moments (zero), the step counts (zero), the
 * activations kept for the backward pass and the workspaces. A master copy
 * the layer allocates is set from its param when the caller gave the param;
 * for a param the layer allocates, write it (llama_layer_param) and then
 * call llama_layer_sync_master. */
int llama_layer_create(tc_context *ctx, const llama_layer_config *cfg, const llama_layer_buffers *given,
                       llama_layer **out) {
    if (!out)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: out is NULL");
    *out = NULL;
    if (!ctx || !cfg)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_create: ctx and cfg must be given");
    PASS(ll_check_config(cfg));
    llama_layer *L = calloc(1, sizeof *L);
    if (!L)
        return ll_error(TC_ERROR_OUT_OF_MEMORY, "llama_layer_create: out of memory");
    L->cfg = *cfg;
    L->ctx = ctx;
    L->tokens = cfg->batch * cfg->seq;
    L->q_dim = cfg->heads * cfg->head_dim;
    L->kv_dim = cfg->kv_heads * cfg->head_dim;
    L->qkv_dim = L->q_dim + 2 * L->kv_dim;
    L->numel[LLAMA_NORM1] = L->numel[LLAMA_NORM2] = cfg->hidden;
    L->numel[LLAMA_WQKV] = L->qkv_dim * cfg->hidden;
    L->numel[LLAMA_WO] = cfg->hidden * L->q_dim;
    L->numel[LLAMA_WGATE_UP] = 2 * cfg->mlp * cfg->hidden;
    L->numel[LLAMA_WDOWN] = cfg->hidden * cfg->mlp;
    L->numel[LLAMA_LM_HEAD] = cfg->vocab * cfg->hidden;
    int st = ll_setup(L, given);
    if (st != 0) {
        char saved[sizeof ll_message];
        memcpy(saved, ll_message, sizeof saved);
        (void)llama_layer_destroy(L);
        memcpy(ll_message, saved, sizeof saved);
        return st;
    }
    *out = L;
    return 0;
}

/* Frees what the layer allocated (not the caller's buffers); NULL is a no-op. All of it is freed even
 * when a free fails, and the first failure is returned. */
int llama_layer_destroy(llama_layer *L) {
    int st = 0;
    if (!L)
        return 0;
    for (int i = 0; i < L->num_allocs; i++) {
        tc_status s = tc_mem_free(L->ctx, L->allocs[i].ptr);
        if (s != TC_OK && st == 0)
            st = ll_failed(s, "tc_mem_free", "llama_layer_destroy");
    }
    free(L);
    return st;
}

/* master = param in f32 for the weights whose `which` is set, through the host (a chunk at a time). */
static int ll_sync_master(llama_layer *L, const int *which) {
    enum { CHUNK = 1 << 22 };
    uint16_t *hb = malloc((size_t)CHUNK * LL_BF16);
    float *hf = malloc((size_t)CHUNK * LL_F32);
    int st = hb && hf ? 0 : ll_error(TC_ERROR_OUT_OF_MEMORY, "llama_layer_sync_master: out of memory");
    for (int t = 0; t < LLAMA_NUM_TENSORS && st == 0; t++)
        for (int64_t first = 0; which[t] && first < L->numel[t] && st == 0; first += CHUNK) {
            size_t n = (size_t)(L->numel[t] - first < CHUNK ? L->numel[t] - first : CHUNK);
            tc_status s = tc_memcpy_dtoh(L->ctx, hb, L->param[t] + (CUdeviceptr)first * LL_BF16, n * LL_BF16);
            for (size_t i = 0; i < n && s == TC_OK; i++)
                hf[i] = bf16_to_f32(hb[i]);
            if (s == TC_OK)
                s = tc_memcpy_htod(L->ctx, L->master[t] + (CUdeviceptr)first * LL_F32, hf, n * LL_F32);
            if (s != TC_OK)
                st = ll_failed(s, "tc_memcpy", "llama_layer_sync_master");
        }
    free(hb);
    free(hf);
    return st;
}

/* master = the params in f32, for every weight. */
int llama_layer_sync_master(llama_layer *L) {
    static const int all[LLAMA_NUM_TENSORS] = {1, 1, 1, 1, 1, 1, 1};
    if (!L)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_sync_master: L is NULL");
    return ll_sync_master(L, all);
}

/* The three products of a projection, with W [N, K] row-major (the torch.nn.Linear layout):
 *   Y[M, N] = X[M, K] W^T       the forward pass
 *   Y[M, N] = X[M, K] W[K, N]   dX = dY W
 *   Y[M, N] = X[K, M]^T W[K, N] dW = dY^T X (the tokens are the sum's K)
 * tc_matmul takes the transposes as strides: nothing is copied. */
static int ll_mm_xwt(llama_layer *L, CUstream s, const char *what, CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                     int64_t M, int64_t N, int64_t K) {
    TRY(what, tc_matmul(L->ctx, s, TC_DTYPE_BF16, y, x, w, 0, M, N, K, K, 1, 1, K, N, 1, TC_ACTIVATION_NONE));
    return 0;
}

static int ll_mm_xw(llama_layer *L, CUstream s, const char *what, CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                    int64_t M, int64_t N, int64_t K) {
    TRY(what, tc_matmul(L->ctx, s, TC_DTYPE_BF16, y, x, w, 0, M, N, K, K, 1, N, 1, N, 1, TC_ACTIVATION_NONE));
    return 0;
}

static int ll_mm_xtw(llama_layer *L, CUstream s, const char *what, CUdeviceptr y, CUdeviceptr x, CUdeviceptr w,
                     int64_t M, int64_t N, int64_t K) {
    TRY(what, tc_matmul(L->ctx, s, TC_DTYPE_BF16, y, x, w, 0, M, N, K, 1, M, N, 1, N, 1, TC_ACTIVATION_NONE));
    return 0;
}

/* RoPE (NeoX form, angles from theta, position t % seq) on the q and k parts of a packed [tokens, qkv_dim]
 * tensor, in place; backward: the gradient, on dq and dk. */
static int ll_rope(llama_layer *L, CUstream s, CUdeviceptr qkv, int backward) {
    const llama_layer_config *c = &L->cfg;
    tc_rope_args a;
    memset(&a, 0, sizeof a);
    a.dtype = TC_DTYPE_BF16;
    a.tokens = L->tokens;
    a.q_heads = c->heads;
    a.k_heads = c->kv_heads;
    a.head_dim = c->head_dim;
    a.backward = backward;
    a.q = qkv;
    a.k = qkv + (CUdeviceptr)L->q_dim * LL_BF16;
    a.stride_qt = a.stride_kt = L->qkv_dim;
    a.stride_qh = a.stride_kh = c->head_dim;
    a.seqlen = c->seq;
    a.theta = c->rope_theta;
    TRY(backward ? "backward" : "forward", tc_rope(L->ctx, s, &a));
    return 0;
}

/* The forward and backward passes on `stream`: the loss (llama_layer_loss), every weight's gradient
 * (llama_layer_grad) and dx = dL/dx (bf16 [tokens, hidden]; 0: kept inside the layer). x: bf16 [batch *
 * seq, hidden]; labels: i32 [batch * seq] (a label outside [0, vocab), such as -100, is ignored). Everything
 * is queued on `stream`, first the zeroing of the norm weights' gradients, which tc_rmsnorm_bwd accumulates
 * into; the call does not wait for the GPU. */
int llama_layer_forward_backward(llama_layer *L, CUstream s, CUdeviceptr x, CUdeviceptr labels, CUdeviceptr dx) {
    if (!L || !x || !labels)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_forward_backward: L, x and labels must be given");
    const llama_layer_config *c = &L->cfg;
    tc_context *ctx = L->ctx;
    const tc_dtype bf = TC_DTYPE_BF16;
    const int64_t B = c->batch, S = c->seq, T = L->tokens, D = c->hidden, F = c->mlp, V = c->vocab;
    const int64_t H = c->heads, KVH = c->kv_heads, hd = c->head_dim, Q = L->q_dim, QKV = L->qkv_dim;
    const float scale = (float)(1.0 / sqrt((double)hd));
    if (!dx)
        dx = L->dx;
    TRY("norm1 grad", tc_memset_d8_async(ctx, s, L->grad[LLAMA_NORM1], 0, (size_t)D * LL_F32));
    TRY("norm2 grad", tc_memset_d8_async(ctx, s, L->grad[LLAMA_NORM2], 0, (size_t)D * LL_F32));

    /* ---- forward ---- */
    TRY("norm1", tc_rmsnorm_fwd(ctx, s, bf, L->xn1, L->rstd1, x, L->param[LLAMA_NORM1], T, D, D, D, c->norm_eps));
    PASS(ll_mm_xwt(L, s, "qkv projection", L->qkv, L->xn1, L->param[LLAMA_WQKV], T, QKV, D));
    PASS(ll_rope(L, s, L->qkv, 0));
    /* q, k and v: [batch, seq, heads, head_dim] views of the packed rows */
    const CUdeviceptr q = L->qkv, k = q + (CUdeviceptr)Q * LL_BF16, v = k + (CUdeviceptr)L->kv_dim * LL_BF16;
    const CUdeviceptr dq = L->dqkv, dk = dq + (CUdeviceptr)Q * LL_BF16, dv = dk + (CUdeviceptr)L->kv_dim * LL_BF16;
    const int64_t sb = S * QKV, sh = hd, sm = QKV, ob = S * Q, oh = hd, om = Q;
    TRY("attention", tc_attention_fwd(ctx, s, bf, L->attn, L->lse, q, k, v, B, H, KVH, S, S, hd, sb, sh, sm, sb, sh, sm,
                                      sb, sh, sm, ob, oh, om, 0, 0, scale, 1));
    PASS(ll_mm_xwt(L, s, "output projection", L->h, L->attn, L->param[LLAMA_WO], T, D, Q));
    TRY("h = x + attention", tc_add(ctx, s, bf, L->h, x, L->h, T, D, D, D, D));
    TRY("norm2", tc_rmsnorm_fwd(ctx, s, bf, L->xn2, L->rstd2, L->h, L->param[LLAMA_NORM2], T, D, D, D, c->norm_eps));
    PASS(ll_mm_xwt(L, s, "gate/up projection", L->gu, L->xn2, L->param[LLAMA_WGATE_UP], T, 2 * F, D));
    const CUdeviceptr gate = L->gu, up = L->gu + (CUdeviceptr)F * LL_BF16;
    TRY(NULL, tc_swiglu_fwd(ctx, s, bf, L->act, gate, up, T, F, F, 2 * F, 2 * F));
    PASS(ll_mm_xwt(L, s, "down projection", L->y, L->act, L->param[LLAMA_WDOWN], T, D, F));
    TRY("y = h + mlp", tc_add(ctx, s, bf, L->y, L->h, L->y, T, D, D, D, D));
    PASS(ll_mm_xwt(L, s, "lm head", L->logits, L->y, L->param[LLAMA_LM_HEAD], T, V, D));
    tc_cross_entropy_args ce;
    memset(&ce, 0, sizeof ce);
    ce.dtype = bf;
    ce.label_dtype = TC_DTYPE_I32;
    ce.rows = T;
    ce.vocab = V;
    ce.logits = ce.dlogits = L->logits; /* the gradient over the logits, in place */
    ce.stride_logits = ce.stride_dlogits = V;
    ce.labels = labels;
    ce.ignore_index = -100;
    ce.loss = L->loss;
    ce.grad_scale = 1.0f;
    ce.workspace = L->ce_ws;
    ce.workspace_bytes = L->ce_ws_bytes;
    TRY(NULL, tc_cross_entropy(ctx, s, &ce));

    /* ---- backward ---- */
    const CUdeviceptr dlogits = L->logits;
    PASS(ll_mm_xtw(L, s, "lm head dW", L->grad[LLAMA_LM_HEAD], dlogits, L->y, V, D, T));
    PASS(ll_mm_xw(L, s, "lm head dX", L->dy, dlogits, L->param[LLAMA_LM_HEAD], T, D, V));
    /* dy flows both into the MLP and, through the residual, to h */
    PASS(ll_mm_xtw(L, s, "down projection dW", L->grad[LLAMA_WDOWN], L->dy, L->act, D, F, T));
    PASS(ll_mm_xw(L, s, "down projection dX", L->dact, L->dy, L->param[LLAMA_WDOWN], T, F, D));
    const CUdeviceptr dgate = L->dgu, dup = L->dgu + (CUdeviceptr)F * LL_BF16;
    TRY(NULL, tc_swiglu_bwd(ctx, s, bf, dgate, dup, L->dact, gate, up, T, F, 2 * F, 2 * F, F, 2 * F, 2 * F));
    PASS(ll_mm_xtw(L, s, "gate/up projection dW", L->grad[LLAMA_WGATE_UP], L->dgu, L->xn2, 2 * F, D, T));
    PASS(ll_mm_xw(L, s, "gate/up projection dX", L->dn, L->dgu, L->param[LLAMA_WGATE_UP], T, D, 2 * F));
    TRY("norm2", tc_rmsnorm_bwd(ctx, s, bf, L->dh, L->grad[LLAMA_NORM2], L->dn, L->h, L->param[LLAMA_NORM2], L->rstd2,
                                T, D, D, D, D));
    TRY("dh = dnorm2 + dy", tc_add(ctx, s, bf, L->dh, L->dh, L->dy, T, D, D, D, D));
    PASS(ll_mm_xtw(L, s, "output projection dW", L->grad[LLAMA_WO], L->dh, L->attn, D, Q, T));
    PASS(ll_mm_xw(L, s, "output projection dX", L->dattn, L->dh, L->param[LLAMA_WO], T, Q, D));
    TRY(NULL, tc_attention_bwd(ctx, s, bf, dq, dk, dv, L->dattn, q, k, v, L->attn, L->lse, B, H, KVH, S, S, hd, sb, sh,
                               sm, sb, sh, sm, sb, sh, sm, ob, oh, om, ob, oh, om, sb, sh, sm, sb, sh, sm, sb, sh, sm,
                               0, 0, scale, 1, c->deterministic, L->attn_ws, L->attn_ws_bytes));
    PASS(ll_rope(L, s, L->dqkv, 1));
    PASS(ll_mm_xtw(L, s, "qkv projection dW", L->grad[LLAMA_WQKV], L->dqkv, L->xn1, QKV, D, T));
    PASS(ll_mm_xw(L, s, "qkv projection dX", L->dn, L->dqkv, L->param[LLAMA_WQKV], T, D, QKV));
    TRY("norm1",
        tc_rmsnorm_bwd(ctx, s, bf, dx, L->grad[LLAMA_NORM1], L->dn, x, L->param[LLAMA_NORM1], L->rstd1, T, D, D, D, D));
    TRY("dx = dnorm1 + dh", tc_add(ctx, s, bf, dx, dx, L->dh, T, D, D, D, D));
    return 0;
}

/* One AdamW step over the seven weights, in two tc_adamw calls, since a call takes one gradient type: the
 * five matrices (bf16 gradients, the configured weight decay) and the two norm weights (f32 gradients, no
 * weight decay, as is usual for norm weights). Both update the f32 master weights and write them
 * rounded to the bf16 params; each call has its own step count. tc_adamw waits for `stream` before it
 * queues its kernel. */
int llama_layer_adamw(llama_layer *L, CUstream s) {
    if (!L)
        return ll_error(TC_ERROR_INVALID_ARGUMENT, "llama_layer_adamw: L is NULL");
    const llama_layer_config *c = &L->cfg;
    tc_adamw_tensor tm[5], tn[2];
    ll_adamw_tensors(L, ll_matrices, 5, tm);
    ll_adamw_tensors(L, ll_norms, 2, tn);
    tc_adamw_args a;
    memset(&a, 0, sizeof a);
    a.param_dtype = TC_DTYPE_BF16;
    a.grad_dtype = TC_DTYPE_BF16;
    a.tensors = tm;
    a.num_tensors = 5;
    a.master = 1;
    a.lr = c->lr;
    a.beta1 = c->beta1;
    a.beta2 = c->beta2;
    a.eps = c->adam_eps;
    a.weight_decay = c->weight_decay;
    a.grad_scale = 1.0f;
    a.step = L->steps;
    a.workspace = L->adamw_ws[0];
    a.workspace_bytes = L->adamw_ws_bytes[0];
    TRY("matrices", tc_adamw(L->ctx, s, &a));
    a.grad_dtype = TC_DTYPE_F32;
    a.tensors = tn;
    a.num_tensors = 2;
    a.weight_decay = 0.0f;
    a.step = L->steps + sizeof(int32_t);
    a.workspace = L->adamw_ws[1];
    a.workspace_bytes = L->adamw_ws_bytes[1];
    TRY("norm weights", tc_adamw(L->ctx, s, &a));
    return 0;
}

/* forward, backward, AdamW */
int llama_layer_train_step(llama_layer *L, CUstream s, CUdeviceptr x, CUdeviceptr labels, CUdeviceptr dx) {
    PASS(llama_layer_forward_backward(L, s, x, labels, dx));
    return llama_layer_adamw(L, s);
}

/* ==================================================================== the program */
#ifndef LLAMA_LAYER_NO_MAIN

#include <time.h>
#include <unistd.h>

/* H200 SXM: dense bf16 tensor-core peak */
#define PEAK_TFLOPS 989.4

static void die_if(int st) {
    if (st != 0) {
        fprintf(stderr, "llama_layer: %s\n", llama_layer_error());
        exit(1);
    }
}

#define TC_CHECK(call)                                                                                                 \
    do {                                                                                                               \
        tc_status st_ = (call);                                                                                        \
        if (st_ != TC_OK) {                                                                                            \
            fprintf(stderr, "llama_layer: %s failed: %s: %s\n", #call, tc_status_string(st_), tc_last_error());        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static void *xmalloc(size_t bytes) {
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        fprintf(stderr, "llama_layer: out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- random numbers: splitmix64 ---- */

static uint64_t rng_state;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static double rng_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t fresh_seed(void) {
    uint64_t s = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&s, sizeof s, 1, f) != 1) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
    }
    if (f)
        fclose(f);
    return s;
}

/* ---- the float64 reference ---- */

/* y[m, n] = sum over k of x[m, k] w[n, k] */
static void ref_xwt(double *y, const double *x, const double *w, int64_t M, int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += x[m * K + k] * w[n * K + k];
            y[m * N + n] = s;
        }
}

/* y[m, n] = sum over k of x[m, k] w[k, n] */
static void ref_xw(double *y, const double *x, const double *w, int64_t M, int64_t N, int64_t K) {
    memset(y, 0, sizeof(double) * (size_t)(M * N));
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++)
                y[m * N + n] += x[m * K + k] * w[k * N + n];
}

/* y[m, n] = sum over k of x[k, m] w[k, n] */
static void ref_xtw(double *y, const double *x, const double *w, int64_t M, int64_t N, int64_t K) {
    memset(y, 0, sizeof(double) * (size_t)(M * N));
    for (int64_t k = 0; k < K; k++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                y[m * N + n] += x[k * M + m] * w[k * N + n];
}

static void ref_rmsnorm(double *y, double *rstd, const double *x, const double *w, int64_t T, int64_t D, double eps) {
    for (int64_t t = 0; t < T; t++) {
        double ss = 0;
        for (int64_t d = 0; d < D; d++)
            ss += x[t * D + d] * x[t * D + d];
        rstd[t] = 1.0 / sqrt(ss / (double)D + eps);
        for (int64_t d = 0; d < D; d++)
            y[t * D + d] = x[t * D + d] * rstd[t] * w[d];
    }
}

/* dx = rstd (g - xhat mean(g xhat)), g = dy w; dw = sum over rows of dy xhat */
static void ref_rmsnorm_bwd(double *dx, double *dw, const double *dy, const double *x, const double *w,
                            const double *rstd, int64_t T, int64_t D) {
    memset(dw, 0, sizeof(double) * (size_t)D);
    for (int64_t t = 0; t < T; t++) {
        double m = 0;
        for (int64_t d = 0; d < D; d++)
            m += dy[t * D + d] * w[d] * x[t * D + d] * rstd[t];
        m /= (double)D;
        for (int64_t d = 0; d < D; d++) {
            double xhat = x[t * D + d] * rstd[t];
            dx[t * D + d] = rstd[t] * (dy[t * D + d] * w[d] - xhat * m);
            dw[d] += dy[t * D + d] * xhat;
        }
    }
}

/* NeoX RoPE on the q and k heads of packed [T, qkv_dim] rows, by the exact angles; backward: by minus them */
static void ref_rope(double *qkv, const llama_layer_config *c, int backward) {
    int64_t T = c->batch * c->seq, hd = c->head_dim, half = hd / 2, QKV = (c->heads + 2 * c->kv_heads) * hd;
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < c->heads + c->kv_heads; h++)
            for (int64_t i = 0; i < half; i++) {
                double a = (double)(t % c->seq) * pow((double)c->rope_theta, -2.0 * (double)i / (double)hd);
                double cs = cos(a), sn = backward ? -sin(a) : sin(a);
                double *p = qkv + t * QKV + h * hd, x1 = p[i], x2 = p[i + half];
                p[i] = x1 * cs - x2 * sn;
                p[i + half] = x2 * cs + x1 * sn;
            }
}

/* Causal attention over packed qkv rows; with dattn given, its backward pass into dqkv (zeroed first). */
static void ref_attention(double *o, double *dqkv, const double *dattn, const double *qkv,
                          const llama_layer_config *c) {
    int64_t S = c->seq, H = c->heads, KVH = c->kv_heads, hd = c->head_dim, Q = H * hd, QKV = (H + 2 * KVH) * hd;
    double scale = 1.0 / sqrt((double)hd), *p = xmalloc(sizeof(double) * (size_t)S);
    if (dqkv)
        memset(dqkv, 0, sizeof(double) * (size_t)(c->batch * S * QKV));
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t h = 0; h < H; h++) {
            int64_t g = h / (H / KVH);
            for (int64_t i = 0; i < S; i++) {
                int64_t ti = b * S + i;
                const double *qi = qkv + ti * QKV + h * hd;
                double mx = -INFINITY, l = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *kj = qkv + (b * S + j) * QKV + Q + g * hd;
                    double s = 0;
                    for (int64_t d = 0; d < hd; d++)
                        s += qi[d] * kj[d];
                    p[j] = s * scale;
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int64_t j = 0; j <= i; j++)
                    l += p[j] = exp(p[j] - mx);
                double *oi = o + ti * Q + h * hd;
                for (int64_t d = 0; d < hd; d++)
                    oi[d] = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *vj = qkv + (b * S + j) * QKV + Q + KVH * hd + g * hd;
                    p[j] /= l;
                    for (int64_t d = 0; d < hd; d++)
                        oi[d] += p[j] * vj[d];
                }
                if (!dqkv)
                    continue;
                const double *doi = dattn + ti * Q + h * hd;
                double delta = 0;
                for (int64_t d = 0; d < hd; d++)
                    delta += doi[d] * oi[d];
                for (int64_t j = 0; j <= i; j++) {
                    int64_t tj = b * S + j;
                    const double *kj = qkv + tj * QKV + Q + g * hd, *vj = kj + KVH * hd;
                    double *dqi = dqkv + ti * QKV + h * hd, *dkj = dqkv + tj * QKV + Q + g * hd, *dvj = dkj + KVH * hd;
                    double dp = 0;
                    for (int64_t d = 0; d < hd; d++)
                        dp += doi[d] * vj[d];
                    double ds = p[j] * (dp - delta);
                    for (int64_t d = 0; d < hd; d++) {
                        dqi[d] += scale * ds * kj[d];
                        dkj[d] += scale * ds * qi[d];
                        dvj[d] += p[j] * doi[d];
                    }
                }
            }
        }
    free(p);
}

typedef struct Reference {
    double loss;
    double *grad[LLAMA_NUM_TENSORS], *dx;
} Reference;

/* The layer's loss and gradients in float64 from x, the weights (w) and the labels. */
static void reference(Reference *r, const llama_layer_config *c, const double *x, double *const *w,
                      const int32_t *labels) {
    int64_t T = c->batch * c->seq, D = c->hidden, F = c->mlp, V = c->vocab, Q = c->heads * c->head_dim;
    int64_t QKV = (c->heads + 2 * c->kv_heads) * c->head_dim;
    size_t d8 = sizeof(double);
    double *xn1 = xmalloc(d8 * (size_t)(T * D)), *rstd1 = xmalloc(d8 * (size_t)T);
    double *qkv = xmalloc(d8 * (size_t)(T * QKV)), *attn = xmalloc(d8 * (size_t)(T * Q));
    double *h = xmalloc(d8 * (size_t)(T * D)), *xn2 = xmalloc(d8 * (size_t)(T * D)), *rstd2 = xmalloc(d8 * (size_t)T);
    double *gu = xmalloc(d8 * (size_t)(T * 2 * F)), *act = xmalloc(d8 * (size_t)(T * F));
    double *y = xmalloc(d8 * (size_t)(T * D)), *logits = xmalloc(d8 * (size_t)(T * V));
    double *dy = xmalloc(d8 * (size_t)(T * D)), *dact = xmalloc(d8 * (size_t)(T * F));
    double *dgu = xmalloc(d8 * (size_t)(T * 2 * F)), *dn = xmalloc(d8 * (size_t)(T * D));
    double *dh = xmalloc(d8 * (size_t)(T * D)), *dattn = xmalloc(d8 * (size_t)(T * Q));
    double *dqkv = xmalloc(d8 * (size_t)(T * QKV));
    double eps = (double)c->norm_eps;

    ref_rmsnorm(xn1, rstd1, x, w[LLAMA_NORM1], T, D, eps);
    ref_xwt(qkv, xn1, w[LLAMA_WQKV], T, QKV, D);
    ref_rope(qkv, c, 0);
    ref_attention(attn, NULL, NULL, qkv, c);
    ref_xwt(h, attn, w[LLAMA_WO], T, D, Q);
    for (int64_t i = 0; i < T * D; i++)
        h[i] += x[i];
    ref_rmsnorm(xn2, rstd2, h, w[LLAMA_NORM2], T, D, eps);
    ref_xwt(gu, xn2, w[LLAMA_WGATE_UP], T, 2 * F, D);
    for (int64_t t = 0; t < T; t++)
        for (int64_t f = 0; f < F; f++) {
            double g = gu[t * 2 * F + f], u = gu[t * 2 * F + F + f];
            act[t * F + f] = g / (1.0 + exp(-g)) * u;
        }
    ref_xwt(y, act, w[LLAMA_WDOWN], T, D, F);
    for (int64_t i = 0; i < T * D; i++)
        y[i] += h[i];
    ref_xwt(logits, y, w[LLAMA_LM_HEAD], T, V, D);
    /* cross-entropy: the mean over the tokens, the gradient over the logits in place */
    r->loss = 0;
    for (int64_t t = 0; t < T; t++) {
        double *lt = logits + t * V, mx = -INFINITY, se = 0;
        for (int64_t j = 0; j < V; j++)
            mx = lt[j] > mx ? lt[j] : mx;
        for (int64_t j = 0; j < V; j++)
            se += exp(lt[j] - mx);
        double lse = mx + log(se);
        r->loss += (lse - lt[labels[t]]) / (double)T;
        for (int64_t j = 0; j < V; j++)
            lt[j] = (exp(lt[j] - lse) - (j == labels[t] ? 1.0 : 0.0)) / (double)T;
    }
    /* backward */
    ref_xtw(r->grad[LLAMA_LM_HEAD], logits, y, V, D, T);
    ref_xw(dy, logits, w[LLAMA_LM_HEAD], T, D, V);
    ref_xtw(r->grad[LLAMA_WDOWN], dy, act, D, F, T);
    ref_xw(dact, dy, w[LLAMA_WDOWN], T, F, D);
    for (int64_t t = 0; t < T; t++)
        for (int64_t f = 0; f < F; f++) {
            double g = gu[t * 2 * F + f], u = gu[t * 2 * F + F + f], s = 1.0 / (1.0 + exp(-g)), da = dact[t * F + f];
            dgu[t * 2 * F + f] = da * u * s * (1.0 + g * (1.0 - s));
            dgu[t * 2 * F + F + f] = da * g * s;
        }
    ref_xtw(r->grad[LLAMA_WGATE_UP], dgu, xn2, 2 * F, D, T);
    ref_xw(dn, dgu, w[LLAMA_WGATE_UP], T, D, 2 * F);
    ref_rmsnorm_bwd(dh, r->grad[LLAMA_NORM2], dn, h, w[LLAMA_NORM2], rstd2, T, D);
    for (int64_t i = 0; i < T * D; i++)
        dh[i] += dy[i];
    ref_xtw(r->grad[LLAMA_WO], dh, attn, D, Q, T);
    ref_xw(dattn, dh, w[LLAMA_WO], T, Q, D);
    ref_attention(attn, dqkv, dattn, qkv, c);
    ref_rope(dqkv, c, 1);
    ref_xtw(r->grad[LLAMA_WQKV], dqkv, xn1, QKV, D, T);
    ref_xw(dn, dqkv, w[LLAMA_WQKV], T, D, QKV);
    ref_rmsnorm_bwd(r->dx, r->grad[LLAMA_NORM1], dn, x, w[LLAMA_NORM1], rstd1, T, D);
    for (int64_t i = 0; i < T * D; i++)
        r->dx[i] += dh[i];
    double *tmp[] = {xn1, rstd1, qkv, attn, h, xn2, rstd2, gu, act, y, logits, dy, dact, dgu, dn, dh, dattn, dqkv};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
        free(tmp[i]);
}

/* The first AdamW step from master weights w0 with gradients g, in float64 (the moments start at 0). */
static double adamw_first_step(double w0, double g, double lr, double wd, const llama_layer_config *c) {
    double b1 = (double)c->beta1, b2 = (double)c->beta2, m = (1 - b1) * g, v = (1 - b2) * g * g;
    double w = w0 * (1 - lr * wd);
    return w - lr * (m / (1 - b1)) / (sqrt(v / (1 - b2)) + (double)c->adam_eps);
}

/* ||out - ref|| / ||ref|| (||out - ref|| when ref is 0); infinite when out has a NaN or an infinity */
static double rel_err(const double *out, const double *ref, size_t n) {
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]))
            return INFINITY;
        d2 += (out[i] - ref[i]) * (out[i] - ref[i]);
        r2 += ref[i] * ref[i];
    }
    return r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
}

static int report(const char *what, double err, double limit) {
    int ok = err <= limit;
    printf("  %-28s %.2e  (limit %.0e)  %s\n", what, err, limit, ok ? "ok" : "WRONG");
    return ok;
}

static void dtoh_bf16(tc_context *ctx, double *out, CUdeviceptr src, size_t n) {
    uint16_t *h = xmalloc(n * LL_BF16);
    TC_CHECK(tc_memcpy_dtoh(ctx, h, src, n * LL_BF16));
    for (size_t i = 0; i < n; i++)
        out[i] = bf16_to_f32(h[i]);
    free(h);
}

static void dtoh_f32(tc_context *ctx, double *out, CUdeviceptr src, size_t n) {
    float *h = xmalloc(n * LL_F32);
    TC_CHECK(tc_memcpy_dtoh(ctx, h, src, n * LL_F32));
    for (size_t i = 0; i < n; i++)
        out[i] = h[i];
    free(h);
}

/*
 * --check: one train step against the float64 reference, from the same bf16 inputs and weights.
 *  - the loss, every weight's gradient and dx against the reference's, by relative Frobenius error;
 *  - AdamW: the update of the master weights (new - old) against a float64 AdamW step from the same
 *    master weights and the gradients tilec computed (checked above), and the bf16 params against the
 *    new master weights rounded; the first step moves a weight by about lr * sign(g), so a gradient
 *    near 0 may flip sign with any rounding: against the reference's gradients only the new weights as
 *    a whole are compared.
 * Tolerances: a bf16 pipeline rounds every activation and gradient to 8 significant bits (2^-9
 * relative), some twenty times on the longest path (x to dx and the qkv weight's gradient): the
 * gradients' largest errors were 4e-3 to 9e-3 on the interpreter over 100 seeds, and the limit is 2e-2.
 * The loss (a mean of f32 row losses over bf16 logits) was within 4e-4: 2e-3. The AdamW update is f32
 * arithmetic on exact inputs, rounded to f32 master weights (1.4e-4 for the norm weights, whose
 * update is 3e-4 of weights near 1): 1e-3; the new weights against the reference's were within 4e-4:
 * 5e-3.
 */
static int check_step(llama_layer *L, tc_context *ctx, const llama_layer_config *c, double *const *w0, const double *x,
                      const int32_t *labels, CUdeviceptr dx_dev) {
    int64_t T = c->batch * c->seq, D = c->hidden;
    Reference r;
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++)
        r.grad[t] = xmalloc(sizeof(double) * (size_t)L->numel[t]);
    r.dx = xmalloc(sizeof(double) * (size_t)(T * D));
    reference(&r, c, x, w0, labels);

    int ok = 1;
    double loss;
    {
        float lf;
        die_if(llama_layer_read_loss(L, &lf));
        loss = lf;
    }
    printf("llama_layer: loss %.6f (float64 reference %.6f)\n", loss, r.loss);
    printf("llama_layer: ||tilec - float64|| / ||float64||:\n");
    ok &= report("loss", isfinite(loss) ? fabs(loss - r.loss) / fabs(r.loss) : INFINITY, 2e-3);
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++) {
        size_t n = (size_t)L->numel[t];
        double *g = xmalloc(sizeof(double) * n);
        if (ll_is_norm(t))
            dtoh_f32(ctx, g, L->grad[t], n);
        else
            dtoh_bf16(ctx, g, L->grad[t], n);
        char what[64];
        snprintf(what, sizeof what, "grad %s", llama_layer_tensor_name(t));
        ok &= report(what, rel_err(g, r.grad[t], n), 2e-2);
        free(g);
    }
    {
        double *g = xmalloc(sizeof(double) * (size_t)(T * D));
        dtoh_bf16(ctx, g, dx_dev, (size_t)(T * D));
        ok &= report("dx", rel_err(g, r.dx, (size_t)(T * D)), 2e-2);
        free(g);
    }

    /* AdamW */
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++) {
        size_t n = (size_t)L->numel[t];
        double *master = xmalloc(sizeof(double) * n), *param = xmalloc(sizeof(double) * n);
        double *g = xmalloc(sizeof(double) * n), *upd = xmalloc(sizeof(double) * n),
               *want = xmalloc(sizeof(double) * n);
        double *full = xmalloc(sizeof(double) * n);
        dtoh_f32(ctx, master, L->master[t], n);
        dtoh_bf16(ctx, param, L->param[t], n);
        if (ll_is_norm(t))
            dtoh_f32(ctx, g, L->grad[t], n);
        else
            dtoh_bf16(ctx, g, L->grad[t], n);
        double lr = (double)c->lr, wd = ll_is_norm(t) ? 0.0 : (double)c->weight_decay;
        size_t unrounded = 0;
        for (size_t i = 0; i < n; i++) {
            upd[i] = master[i] - w0[t][i];
            want[i] = adamw_first_step(w0[t][i], g[i], lr, wd, c) - w0[t][i];
            full[i] = adamw_first_step(w0[t][i], r.grad[t][i], lr, wd, c);
            unrounded += bf16_to_f32(f32_to_bf16((float)master[i])) != (float)param[i];
        }
        char what[64];
        snprintf(what, sizeof what, "AdamW update %s", llama_layer_tensor_name(t));
        ok &= report(what, rel_err(upd, want, n), 1e-3);
        snprintf(what, sizeof what, "new weights %s", llama_layer_tensor_name(t));
        ok &= report(what, rel_err(master, full, n), 5e-3);
        if (unrounded) {
            printf("  %s: %zu bf16 params are not their master weight rounded  WRONG\n", llama_layer_tensor_name(t),
                   unrounded);
            ok = 0;
        }
        free(master), free(param), free(g), free(upd), free(want), free(full);
    }
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++)
        free(r.grad[t]);
    free(r.dx);
    return ok;
}

static double median(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int64_t parse_count(const char *opt, const char *s) {
    char *end;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || *end || v < 1 || v > ((int64_t)1 << 30)) {
        fprintf(stderr, "llama_layer: %s needs a count from 1 to 2^30\n", opt);
        exit(2);
    }
    return v;
}

static void usage(FILE *f) {
    fprintf(f, "usage: llama_layer [--tiny] [--check] [--steps N] [--seed N] [--batch N] [--seq N] [--vocab N]\n"
               "  (default) the LLaMA-7B-like width: hidden 4096, 32 heads of 128, MLP 11008, vocab 32000,\n"
               "            batch 1 x seq 2048; times the train step (tokens/s, MFU)\n"
               "  --tiny    hidden 80, 4 heads (2 KV heads) of 18, MLP 180, vocab 301, batch 2 x seq 133\n"
               "  --check   one step against a float64 CPU reference (with --tiny)\n"
               "  --steps N timed steps (default 10)\n");
}

int main(int argc, char **argv) {
    int tiny = 0, check = 0, steps = 10;
    int64_t batch = 0, seq = 0, vocab = 0;
    uint64_t seed = 0;
    int have_seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--tiny") == 0)
            tiny = 1;
        else if (strcmp(a, "--check") == 0)
            check = 1;
        else if (strcmp(a, "--steps") == 0)
            steps = (int)parse_count(a, next), i++;
        else if (strcmp(a, "--batch") == 0)
            batch = parse_count(a, next), i++;
        else if (strcmp(a, "--seq") == 0)
            seq = parse_count(a, next), i++;
        else if (strcmp(a, "--vocab") == 0)
            vocab = parse_count(a, next), i++;
        else if (strcmp(a, "--seed") == 0 && next) {
            seed = strtoull(next, NULL, 0), have_seed = 1, i++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    llama_layer_config c;
    memset(&c, 0, sizeof c);
    if (tiny) {
        c.batch = 2, c.seq = 133, c.hidden = 80, c.heads = 4, c.kv_heads = 2, c.head_dim = 18, c.mlp = 180;
        c.vocab = 301;
    } else {
        c.batch = 1, c.seq = 2048, c.hidden = 4096, c.heads = 32, c.kv_heads = 32, c.head_dim = 128, c.mlp = 11008;
        c.vocab = 32000;
    }
    c.batch = batch ? batch : c.batch;
    c.seq = seq ? seq : c.seq;
    c.vocab = vocab ? vocab : c.vocab;
    c.rope_theta = 10000.0f;
    c.norm_eps = 1e-5f;
    c.lr = 3e-4f, c.beta1 = 0.9f, c.beta2 = 0.95f, c.adam_eps = 1e-8f, c.weight_decay = 0.1f;
    if (check && !tiny) {
        fprintf(stderr, "llama_layer: --check needs --tiny (the float64 reference of the full width takes hours)\n");
        return 2;
    }

    tc_context *ctx;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("llama_layer: skipped: %s\n", tc_last_error());
        return 77;
    }
    TC_CHECK(st);
    int interpreted = tc_context_interpreted(ctx);
    if (interpreted && !tiny) {
        fprintf(stderr, "llama_layer: the full width on the interpreter would take hours: use --tiny\n");
        return 2;
    }
    if (!have_seed) {
        const char *env = getenv("TILEC_TEST_SEED");
        seed = env && *env ? strtoull(env, NULL, 0) : fresh_seed();
    }
    rng_state = seed;
    const int64_t T = c.batch * c.seq, D = c.hidden;
    printf("llama_layer: %s, batch %lld x seq %lld, hidden %lld, heads %lld (kv %lld) x %lld, mlp %lld, vocab %lld, "
           "bf16, seed %llu (--seed to replay)\n",
           interpreted ? "interpreter" : tc_context_device_name(ctx), (long long)c.batch, (long long)c.seq,
           (long long)D, (long long)c.heads, (long long)c.kv_heads, (long long)c.head_dim, (long long)c.mlp,
           (long long)c.vocab, (unsigned long long)seed);
    fflush(stdout);

    llama_layer *L;
    die_if(llama_layer_create(ctx, &c, NULL, &L));
    CUstream stream;
    TC_CHECK(tc_stream_create(ctx, &stream));

    /* random inputs and weights, uniform with LLaMA-like scales: x of unit variance, a projection's weights
     * of variance 1 / fan_in, the norm weights near 1, labels anywhere in the vocabulary */
    double *w0[LLAMA_NUM_TENSORS] = {0}; /* the weights as the reference sees them (--check) */
    for (int t = 0; t < LLAMA_NUM_TENSORS; t++) {
        size_t n = (size_t)L->numel[t];
        int64_t fan_in = t == LLAMA_WO ? L->q_dim : t == LLAMA_WDOWN ? c.mlp : D;
        double lo = ll_is_norm(t) ? 0.8 : -sqrt(3.0 / (double)fan_in), hi = ll_is_norm(t) ? 1.2 : -lo;
        uint16_t *h = xmalloc(n * LL_BF16);
        if (check)
            w0[t] = xmalloc(sizeof(double) * n);
        for (size_t i = 0; i < n; i++) {
            h[i] = f32_to_bf16((float)rng_uniform(lo, hi));
            if (check)
                w0[t][i] = bf16_to_f32(h[i]);
        }
        TC_CHECK(tc_memcpy_htod(ctx, L->param[t], h, n * LL_BF16));
        free(h);
    }
    die_if(llama_layer_sync_master(L));
    uint16_t *hx = xmalloc((size_t)(T * D) * LL_BF16);
    double *x = check ? xmalloc(sizeof(double) * (size_t)(T * D)) : NULL;
    int32_t *labels = xmalloc(sizeof(int32_t) * (size_t)T);
    for (int64_t i = 0; i < T * D; i++) {
        hx[i] = f32_to_bf16((float)rng_uniform(-sqrt(3.0), sqrt(3.0)));
        if (x)
            x[i] = bf16_to_f32(hx[i]);
    }
    for (int64_t t = 0; t < T; t++)
        labels[t] = (int32_t)(rng_next() % (uint64_t)c.vocab);
    CUdeviceptr dev_x, dev_labels, dev_dx;
    TC_CHECK(tc_mem_alloc(ctx, (size_t)(T * D) * LL_BF16, &dev_x));
    TC_CHECK(tc_mem_alloc(ctx, sizeof(int32_t) * (size_t)T, &dev_labels));
    TC_CHECK(tc_mem_alloc(ctx, (size_t)(T * D) * LL_BF16, &dev_dx));
    TC_CHECK(tc_memcpy_htod(ctx, dev_x, hx, (size_t)(T * D) * LL_BF16));
    TC_CHECK(tc_memcpy_htod(ctx, dev_labels, labels, sizeof(int32_t) * (size_t)T));

    int ok = 1;
    if (check) {
        /* every buffer a step writes starts as NaN (0xFF bytes) */
        for (int i = 0; i < L->num_allocs; i++)
            if (L->allocs[i].output)
                TC_CHECK(tc_memset_d8(ctx, L->allocs[i].ptr, 0xFF, L->allocs[i].bytes));
        TC_CHECK(tc_memset_d8(ctx, dev_dx, 0xFF, (size_t)(T * D) * LL_BF16));
        TC_CHECK(tc_stream_synchronize(ctx, NULL));
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        die_if(llama_layer_train_step(L, stream, dev_x, dev_labels, dev_dx));
        TC_CHECK(tc_stream_synchronize(ctx, stream));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("llama_layer: one train step in %.2f s (compiles included)\n",
               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        ok = check_step(L, ctx, &c, w0, x, labels, dev_dx);
        printf("llama_layer: %s\n", ok ? "ok" : "WRONG");
    } else {
        double flops = llama_layer_flops(&c);
        printf("llama_layer: model FLOPs per step = 6 * tokens * (matmul params) + 6 * batch * heads * seq^2 * "
               "head_dim (causal attention, forward and backward) = %.4g TFLOP\n",
               flops * 1e-12);
        tc_timer *timer;
        TC_CHECK(tc_timer_create(ctx, &timer));
        float loss0 = 0, loss1 = 0;
        for (int i = 0; i < 2; i++) { /* the first compiles every kernel */
            die_if(llama_layer_train_step(L, stream, dev_x, dev_labels, dev_dx));
            TC_CHECK(tc_stream_synchronize(ctx, stream));
            if (i == 0)
                die_if(llama_layer_read_loss(L, &loss0));
        }
        double *ms = xmalloc(sizeof(double) * (size_t)steps);
        static const char *const what[] = {"train step (forward + backward + AdamW)", "forward + backward"};
        for (int kind = 0; kind < 2; kind++) {
            for (int i = 0; i < steps; i++) {
                float e;
                TC_CHECK(tc_timer_start(timer, stream));
                if (kind == 0)
                    die_if(llama_layer_train_step(L, stream, dev_x, dev_labels, dev_dx));
                else
                    die_if(llama_layer_forward_backward(L, stream, dev_x, dev_labels, dev_dx));
                TC_CHECK(tc_timer_stop(timer, stream));
                TC_CHECK(tc_timer_elapsed_ms(timer, &e));
                ms[i] = e;
            }
            double med = median(ms, steps);
            printf("llama_layer: %-40s median %9.3f ms of %d (min %.3f): %10.0f tokens/s, %.1f TFLOP/s, MFU %.1f%% "
                   "of %.1f TFLOP/s\n",
                   what[kind], med, steps, ms[0], (double)T / (med * 1e-3), flops / (med * 1e-3) * 1e-12,
                   100.0 * flops / (med * 1e-3) / (PEAK_TFLOPS * 1e12), PEAK_TFLOPS);
            if (kind == 0)
                die_if(llama_layer_read_loss(L, &loss1));
        }
        printf("llama_layer: loss %.4f at the first step, %.4f after %d steps on the same batch%s\n", loss0, loss1,
               steps + 1, interpreted ? " (the interpreter: times are the CPU's)" : "");
        ok = isfinite(loss0) && isfinite(loss1);
        free(ms);
        TC_CHECK(tc_timer_destroy(timer));
    }

    for (int t = 0; t < LLAMA_NUM_TENSORS; t++)
        free(w0[t]);
    free(hx), free(x), free(labels);
    TC_CHECK(tc_mem_free(ctx, dev_x));
    TC_CHECK(tc_mem_free(ctx, dev_labels));
    TC_CHECK(tc_mem_free(ctx, dev_dx));
    die_if(llama_layer_destroy(L));
    TC_CHECK(tc_stream_destroy(ctx, stream));
    TC_CHECK(tc_context_destroy(ctx));
    return ok ? 0 : 1;
}

#endif /* LLAMA_LAYER_NO_MAIN */
