/*
 * rope.c — tc_rope (include/tilec/stdlib.h, lib/rope.tile): rotary position
 * embeddings applied in place to Q and K, forward or backward.
 *
 * The family's three steps (stdlib_internal.h):
 *
 *  1. Validate: dtype f16, bf16 or f32; tokens 1..2^31 - 1 (one program
 *     each); q_heads >= 1 and k_heads >= 0 up to 65536; head_dim 2..65536
 *     and rotary_dim (0: head_dim) even and at most head_dim; q (and k when
 *     k_heads > 0) aligned to its element, its heads not overlapping within a
 *     token nor its tokens (stride_qh >= head_dim where there are several
 *     heads, stride_qt >= (heads - 1) * stride_qh + head_dim where there are
 *     several tokens), every offset within an int64; positions aligned (or
 *     seqlen >= 1 and position_offset >= 0 with the last position an i32);
 *     cos and sin both given or neither, aligned, with max_position >= 1 and
 *     stride_cs >= rotary_dim / 2, or else theta finite and > 0.
 *  2. Plan: HALF, the tile of the rotated pairs, is the next power of two of
 *     rotary_dim / 2 (at least 16); HB, the heads a step rotates, the next
 *     power of two of the larger head count, at most 4096 / HALF elements'
 *     worth; 1, 2 or 4 warps as the tile grows.
 *  3. Specialize and launch as the other families do: 16-byte aligned
 *     pointers and strides (and rotary_dim / 2) that are multiples of 16 /
 *     element bytes are facts the compiler may vectorize with. One program
 *     per token; absent pointers are passed as q (never read).
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    ROPE_MAX_HEADS = 65536,
    ROPE_MAX_HEAD_DIM = 65536,
    ROPE_MIN_HALF = 16,
    ROPE_TILE = 4096, /* HB * HALF at most */
};

static tc_status check_tensor(const char *entry, const char *what, const char *st_name, const char *sh_name, int64_t tokens,
                              int64_t heads, int64_t head_dim, int64_t stride_t, int64_t stride_h) {
    RtStdlibDim dims[3] = {{st_name, tokens, stride_t}, {sh_name, heads, stride_h}, {NULL, head_dim, 1}};
    tc_status st = rt_stdlib_check_strides(entry, what, dims, 3);
    if (st != TC_OK)
        return st;
    /* in place: no two elements of the tensor may share an address */
    if (heads > 1 && stride_h < head_dim)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) is less than head_dim (%lld): %s's heads overlap", entry,
                       sh_name, (long long)stride_h, (long long)head_dim, what);
    if (tokens > 1 && stride_t < (heads - 1) * stride_h + head_dim)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) is less than a token's %lld elements: %s's tokens overlap",
                       entry, st_name, (long long)stride_t, (long long)((heads - 1) * stride_h + head_dim), what);
    return TC_OK;
}

tc_status rt_rope_check(const char *entry, tc_context *ctx, const tc_rope_args *a) {
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK || (st = rt_stdlib_check_given(entry, "a", a)) != TC_OK)
        return st;
    size_t es = rt_dtype_size(a->dtype);
    if ((st = rt_stdlib_check_dtype(entry, a->dtype, true)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "tokens", a->tokens, INT32_MAX)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "q_heads", a->q_heads, ROPE_MAX_HEADS)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "head_dim", a->head_dim, ROPE_MAX_HEAD_DIM)) != TC_OK)
        return st;
    if (a->k_heads < 0 || a->k_heads > ROPE_MAX_HEADS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: k_heads (%lld) must be 0 (no k) to %d", entry,
                       (long long)a->k_heads, ROPE_MAX_HEADS);
    int64_t rot = a->rotary_dim ? a->rotary_dim : a->head_dim;
    if (rot < 2 || rot % 2 != 0 || rot > a->head_dim)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: rotary_dim (%lld) must be 0 (all of head_dim) or even, from 2 to head_dim (%lld)", entry,
                       (long long)a->rotary_dim, (long long)a->head_dim);
    if ((a->interleaved != 0 && a->interleaved != 1) || (a->backward != 0 && a->backward != 1))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%d) must be 0 or 1", entry,
                       a->interleaved != 0 && a->interleaved != 1 ? "interleaved" : "backward",
                       a->interleaved != 0 && a->interleaved != 1 ? a->interleaved : a->backward);
    if ((st = rt_stdlib_check_ptr(entry, "q", a->q, es)) != TC_OK ||
        (st = check_tensor(entry, "q", "stride_qt", "stride_qh", a->tokens, a->q_heads, a->head_dim, a->stride_qt,
                           a->stride_qh)) != TC_OK)
        return st;
    if (a->k_heads > 0 &&
        ((st = rt_stdlib_check_ptr(entry, "k", a->k, es)) != TC_OK ||
         (st = check_tensor(entry, "k", "stride_kt", "stride_kh", a->tokens, a->k_heads, a->head_dim, a->stride_kt,
                            a->stride_kh)) != TC_OK))
        return st;
    if (a->positions) {
        if ((st = rt_stdlib_check_ptr(entry, "positions", a->positions, 4)) != TC_OK)
            return st;
    } else {
        if ((st = rt_stdlib_check_count(entry, "seqlen", a->seqlen, INT32_MAX)) != TC_OK)
            return st;
        if (a->position_offset < 0 || a->position_offset > INT32_MAX - (a->seqlen - 1))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: position_offset (%lld) must be >= 0, with position_offset + seqlen - 1 an i32", entry,
                           (long long)a->position_offset);
    }
    if ((a->cos != 0) != (a->sin != 0))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: cos and sin must both be given (the tables) or both be 0 "
                                                  "(angles from theta)",
                       entry);
    if (a->cos) {
        RtStdlibDim dims[2] = {{"stride_cs", a->max_position, a->stride_cs}, {NULL, rot / 2, 1}};
        if ((st = rt_stdlib_check_ptr(entry, "cos", a->cos, 4)) != TC_OK ||
            (st = rt_stdlib_check_ptr(entry, "sin", a->sin, 4)) != TC_OK ||
            (st = rt_stdlib_check_count(entry, "max_position", a->max_position, INT32_MAX)) != TC_OK ||
            (st = rt_stdlib_check_row_stride(entry, "stride_cs", a->stride_cs, "rotary_dim / 2", rot / 2)) != TC_OK ||
            (st = rt_stdlib_check_strides(entry, "cos", dims, 2)) != TC_OK)
            return st;
    } else if (!isfinite(a->theta) || !(a->theta > 0)) {
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: theta (%g) must be finite and > 0 without cos and sin tables",
                       entry, (double)a->theta);
    }
    return TC_OK;
}

float rt_rope_log2_step(const tc_rope_args *a, int64_t rot_half) {
    /* freq_i = theta^(-2i / rotary_dim) = 2^(i * log2_step) */
    return a->cos ? 0.0f : (float)(-2.0 * log2((double)a->theta) / (double)(2 * rot_half));
}

tc_status tc_rope(tc_context *ctx, CUstream stream, const tc_rope_args *a) {
    tc_status st = rt_rope_check("tc_rope", ctx, a);
    return st == TC_OK ? rt_rope_launch("tc_rope", ctx, stream, a) : st;
}

tc_status rt_rope_launch(const char *entry, tc_context *ctx, CUstream stream, const tc_rope_args *a) {
    tc_status st;
    int64_t rot_half = (a->rotary_dim ? a->rotary_dim : a->head_dim) / 2;
    int64_t half = rt_stdlib_pow2_clamped(rot_half, ROPE_MIN_HALF, ROPE_MAX_HEAD_DIM);
    int64_t heads = a->q_heads > a->k_heads ? a->q_heads : a->k_heads;
    int64_t hb = rt_stdlib_pow2_clamped(heads, 1, ROPE_MAX_HEADS);
    while (hb > 1 && hb * half > ROPE_TILE)
        hb /= 2;
    int warps = hb * half >= 1024 ? 4 : hb * half >= 256 ? 2 : 1;
    bool has_k = a->k_heads > 0;

    RtStdlibKernelLaunch *l = calloc(1, sizeof *l);
    if (!l)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "%s: out of memory", entry);
    RtStdlibArgs args = rt_stdlib_kernel_args(l);
    int64_t vector = 16 / (int64_t)rt_dtype_size(a->dtype);
    rt_stdlib_arg_ptr(&args, "Q", a->q, true);
    rt_stdlib_arg_ptr(&args, "K", has_k ? a->k : a->q, has_k);
    rt_stdlib_arg_ptr(&args, "positions", a->positions ? a->positions : a->q, a->positions != 0);
    rt_stdlib_arg_ptr(&args, "cos_cache", a->cos ? a->cos : a->q, a->cos != 0);
    rt_stdlib_arg_ptr(&args, "sin_cache", a->sin ? a->sin : a->q, a->sin != 0);
    rt_stdlib_arg_int(&args, "stride_qt", a->stride_qt, false, vector);
    rt_stdlib_arg_int(&args, "stride_qh", a->stride_qh, false, vector);
    rt_stdlib_arg_int(&args, "stride_kt", has_k ? a->stride_kt : 0, false, vector);
    rt_stdlib_arg_int(&args, "stride_kh", has_k ? a->stride_kh : 0, false, vector);
    rt_stdlib_arg_int(&args, "stride_cs", a->cos ? a->stride_cs : 0, false, 4); /* f32 tables: 4 a vector */
    rt_stdlib_arg_int(&args, "q_heads", a->q_heads, true, 0);
    rt_stdlib_arg_int(&args, "k_heads", a->k_heads, true, 0);
    rt_stdlib_arg_int(&args, "rot_half", rot_half, true, vector);
    rt_stdlib_arg_int(&args, "seqlen", a->positions ? 1 : a->seqlen, true, 0);
    rt_stdlib_arg_int(&args, "pos_offset", a->positions ? 0 : a->position_offset, true, 0);
    rt_stdlib_arg_int(&args, "max_pos", a->cos ? a->max_position : 1, true, 0);
    rt_stdlib_kernel_arg_f32(l, "log2_step", rt_rope_log2_step(a, rot_half));

    l->cx[0] = (tc_constexpr){"T", TC_CONSTEXPR_DTYPE, (int64_t)a->dtype, 0};
    l->cx[1] = (tc_constexpr){"HB", TC_CONSTEXPR_INT, hb, 0};
    l->cx[2] = (tc_constexpr){"HALF", TC_CONSTEXPR_INT, half, 0};
    l->cx[3] = (tc_constexpr){"INTERLEAVED", TC_CONSTEXPR_BOOL, a->interleaved, 0};
    l->cx[4] = (tc_constexpr){"HAS_POSITIONS", TC_CONSTEXPR_BOOL, a->positions != 0, 0};
    l->cx[5] = (tc_constexpr){"HAS_CACHE", TC_CONSTEXPR_BOOL, a->cos != 0, 0};
    l->cx[6] = (tc_constexpr){"HAS_K", TC_CONSTEXPR_BOOL, has_k, 0};
    l->cx[7] = (tc_constexpr){"SIGN", TC_CONSTEXPR_FLOAT, 0, a->backward ? -1.0 : 1.0};
    l->num_cx = 8;
    st = rt_stdlib_kernel_launch(ctx, stream, entry, "rope.tile", "rope", warps, (tc_dim3){(unsigned)a->tokens, 1, 1},
                                 l);
    free(l);
    return st;
}
