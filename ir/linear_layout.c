/*
 * linear_layout.c — distributed layouts as linear maps over GF(2).
 *
 * A layout attribute (#blocked, #slice, #mma, #dot_op) says how a tile is
 * spread over the registers of the threads of a program. For codegen every
 * one of them becomes the same thing: a LinearLayout, which gives for bit k
 * of the register index, the lane id and the warp id the coordinates that
 * bit moves an element by; an element's coordinates are the XOR of the bases
 * of its set bits. Tile dimensions are powers of two (the language requires
 * it), so this covers every layout tilec knows, swizzles included, and
 * questions such as "does this conversion stay inside a thread?" or "which
 * lanes does a reduction cross?" become small bit-vector computations rather
 * than one case per pair of layouts. (Triton arrived at the same design,
 * "linear layouts", after years of special cases.)
 *
 * Worked example: #blocked<spt = [1, 4], tpw = [2, 16], wpc = [4, 1],
 * order = [1, 0]> on a 64x64 tile, 4 warps.
 *
 *   registers  (0,1) (0,2)            4 consecutive columns per thread
 *              (8,0) (16,0) (32,0)    repetitions: the layout covers 8x64,
 *                                     so each thread holds rows r, r+8, ...
 *   lanes      (0,4) (0,8) (0,16) (0,32) (1,0)
 *   warps      (2,0) (4,0)
 *
 * Lane 17 of warp 2, register 5 (= bits 0 and 2): lane 17 = bits 0 and 4 ->
 * (0,4)^(1,0); warp 2 = bit 1 -> (4,0); register 5 -> (0,1)^(8,0). XOR:
 * row 1^4^8 = 13, column 4^1 = 5.
 *
 * Constructions (each mirrors the hardware or Triton's definition):
 * - blocked: elements per thread along `order` (fastest dimension first),
 *   then lanes, then warps, each filling dimensions in `order`; where the
 *   tile is larger than spt*tpw*wpc the layout repeats and more register bits
 *   are added (again in `order`); where it is smaller, bases that fall outside
 *   the tile become zero for lanes and warps (copies) and are dropped for
 *   registers.
 * - slice(dim, parent): the parent's map for the tile with a size-1 `dim`
 *   inserted, with that coordinate dropped.
 * - mma v2 (mma.sync m16n8): per 16x8 accumulator tile a lane holds rows
 *   lane/4 and lane/4+8 at columns 2*(lane%4)+{0,1}: registers (0,1) (8,0),
 *   lanes (0,2) (0,4) (1,0) (2,0) (4,0); warps along N first, then M;
 *   repetitions along N first, then M.
 * - dot_op(idx, mma v2, kwidth): the A (idx 0, MxK) or B (idx 1, KxN)
 *   fragment of mma.sync with kwidth consecutive K elements per register
 *   pair (kwidth 2 for 16-bit types: m16n8k16); copies across the warps of
 *   the other dimension; repetitions along K first.
 */
#include "ir.h"

#include <string.h>

/* Appends a basis to input `in`; false if too many bits. */
static bool push(LinearLayout *ll, int in, const int32_t *coord) {
    if (ll->num_bits[in] >= LL_MAX_BITS)
        return false;
    memcpy(ll->bases[in][ll->num_bits[in]], coord, sizeof(int32_t) * IR_MAX_RANK);
    ll->num_bits[in]++;
    return true;
}

/* Appends the bases of `count` consecutive values (a power of two) along dim,
 * starting at stride `start`: (start, 2*start, ...) in dim. */
static bool push_range(LinearLayout *ll, int in, int dim, int64_t start, int64_t count) {
    for (int64_t s = start; s < start * count; s *= 2) {
        int32_t c[IR_MAX_RANK] = {0};
        c[dim] = (int32_t)s;
        if (!push(ll, in, c))
            return false;
    }
    return true;
}

/* Zeroes lane and warp bases outside the tile and drops such register bases. */
static void clamp_to_shape(LinearLayout *ll) {
    for (int in = 0; in < LL_NUM_IN; in++) {
        int kept = 0;
        for (int b = 0; b < ll->num_bits[in]; b++) {
            int32_t *v = ll->bases[in][b];
            bool outside = false;
            for (int d = 0; d < ll->rank; d++)
                if (v[d] >= ll->shape[d])
                    outside = true;
            if (outside)
                memset(v, 0, sizeof(int32_t) * IR_MAX_RANK);
            bool zero = true;
            for (int d = 0; d < ll->rank; d++)
                zero &= v[d] == 0;
            if (in == LL_REG && zero)
                continue; /* a register that would only repeat another */
            if (kept != b)
                memcpy(ll->bases[in][kept], v, sizeof(int32_t) * IR_MAX_RANK);
            kept++;
        }
        ll->num_bits[in] = kept;
    }
}

static bool fail(const char **why, const char *msg) {
    if (why)
        *why = msg;
    return false;
}

static bool blocked(const Layout *l, LinearLayout *ll, int num_warps, const char **why) {
    int rank = l->rank;
    int64_t cover[IR_MAX_RANK];
    int lanes = 1, warps = 1;
    for (int d = 0; d < rank; d++) {
        if (!tc_is_pow2(l->blocked.spt[d]) || !tc_is_pow2(l->blocked.tpw[d]) || !tc_is_pow2(l->blocked.wpc[d]))
            return fail(why, "blocked layout sizes must be powers of two");
        lanes *= l->blocked.tpw[d];
        warps *= l->blocked.wpc[d];
        cover[d] = (int64_t)l->blocked.spt[d] * l->blocked.tpw[d] * l->blocked.wpc[d];
    }
    if (lanes != 32)
        return fail(why, "blocked layout threads per warp do not multiply to 32");
    if (warps != num_warps)
        return fail(why, "blocked layout warps per CTA do not multiply to the kernel's num_warps");
    const int *order = l->blocked.order;
    bool ok = true;
    for (int i = 0; i < rank; i++)
        ok &= push_range(ll, LL_REG, order[i], 1, l->blocked.spt[order[i]]);
    for (int i = 0; i < rank; i++)
        ok &= push_range(ll, LL_LANE, order[i], l->blocked.spt[order[i]], l->blocked.tpw[order[i]]);
    for (int i = 0; i < rank; i++) {
        int d = order[i];
        ok &= push_range(ll, LL_WARP, d, (int64_t)l->blocked.spt[d] * l->blocked.tpw[d], l->blocked.wpc[d]);
    }
    for (int i = 0; i < rank; i++) {
        int d = order[i];
        if (ll->shape[d] > cover[d])
            ok &= push_range(ll, LL_REG, d, cover[d], ll->shape[d] / cover[d]);
    }
    if (!ok)
        return fail(why, "tile needs more than 65536 registers per thread");
    clamp_to_shape(ll);
    return true;
}

/* wgmma (m64nNk16) accumulator: per warp of a warpgroup the m16n8
 * accumulator of mma.sync repeated along N, warp w of the group on rows
 * 16w..16w+15; warpgroups along M first (64 rows each), then along N (instr
 * n columns each); repetitions along N, then M. */
static bool mma_v3(const Layout *l, LinearLayout *ll, int num_warps, const char **why) {
    int wm = l->mma.wpc[0], wn = l->mma.wpc[1], n = l->mma.instr[1];
    if (wm % 4 || !tc_is_pow2(wm) || !tc_is_pow2(wn) || wm * wn != num_warps)
        return fail(why, "mma version 3 warps per CTA must be whole warpgroups along M and multiply to num_warps");
    if (l->mma.instr[0] != 64 || !tc_is_pow2(n) || n < 8 || n > 256)
        return fail(why, "mma version 3 needs instr [64, n, 16], n a power of two in 8..256");
    int32_t c[IR_MAX_RANK] = {0};
    c[1] = 1, push(ll, LL_REG, c);
    c[1] = 0, c[0] = 8, push(ll, LL_REG, c);
    bool ok = push_range(ll, LL_REG, 1, 8, n / 8);
    push_range(ll, LL_LANE, 1, 2, 4);
    push_range(ll, LL_LANE, 0, 1, 8);
    push_range(ll, LL_WARP, 0, 16, wm);
    push_range(ll, LL_WARP, 1, n, wn);
    if (ll->shape[1] > (int64_t)n * wn)
        ok &= push_range(ll, LL_REG, 1, (int64_t)n * wn, ll->shape[1] / ((int64_t)n * wn));
    if (ll->shape[0] > 16 * (int64_t)wm)
        ok &= push_range(ll, LL_REG, 0, 16 * (int64_t)wm, ll->shape[0] / (16 * (int64_t)wm));
    if (!ok)
        return fail(why, "tile needs more than 65536 registers per thread");
    clamp_to_shape(ll);
    return true;
}

static bool mma(const Layout *l, LinearLayout *ll, int num_warps, const char **why) {
    if (l->rank == 2 && l->mma.version == 3)
        return mma_v3(l, ll, num_warps, why);
    if (l->mma.version != 2)
        return fail(why, "mma layouts are version 2 (mma.sync) or 3 (wgmma)");
    if (l->rank != 2)
        return fail(why, "mma layouts are 2-D");
    int wm = l->mma.wpc[0], wn = l->mma.wpc[1];
    if (!tc_is_pow2(wm) || !tc_is_pow2(wn) || wm * wn != num_warps)
        return fail(why, "mma warps per CTA do not multiply to the kernel's num_warps");
    int32_t c[IR_MAX_RANK] = {0};
    c[1] = 1, push(ll, LL_REG, c);
    c[1] = 0, c[0] = 8, push(ll, LL_REG, c);
    push_range(ll, LL_LANE, 1, 2, 4);
    push_range(ll, LL_LANE, 0, 1, 8);
    push_range(ll, LL_WARP, 1, 8, wn);
    push_range(ll, LL_WARP, 0, 16, wm);
    bool ok = true;
    if (ll->shape[1] > 8 * wn)
        ok &= push_range(ll, LL_REG, 1, 8 * wn, ll->shape[1] / (8 * wn));
    if (ll->shape[0] > 16 * wm)
        ok &= push_range(ll, LL_REG, 0, 16 * wm, ll->shape[0] / (16 * wm));
    if (!ok)
        return fail(why, "tile needs more than 65536 registers per thread");
    clamp_to_shape(ll);
    return true;
}

/* The register A operand of wgmma (idx 0 only): per warp the m16n8k16 A
 * fragment of mma.sync, warp w of a warpgroup on rows 16w..; warpgroups
 * along M as in the result; copies across the warpgroups along N;
 * repetitions along K first, then M. */
static bool dot_op_v3(const Layout *l, LinearLayout *ll, int num_warps, const char **why) {
    const Layout *p = l->dot_op.parent;
    if (l->dot_op.idx != 0 || l->dot_op.kwidth != 2)
        return fail(why, "wgmma takes only A (idx 0, kwidth 2) from registers");
    int wm = p->mma.wpc[0], wn = p->mma.wpc[1];
    if (wm % 4 || wm * wn != num_warps || !tc_is_pow2(wm) || !tc_is_pow2(wn))
        return fail(why, "mma version 3 warps per CTA must be whole warpgroups along M and multiply to num_warps");
    int32_t zero[IR_MAX_RANK] = {0}, c[IR_MAX_RANK] = {0};
    bool ok = push_range(ll, LL_REG, 1, 1, 2);
    c[0] = 8, ok &= push(ll, LL_REG, c);
    c[0] = 0, c[1] = 8, ok &= push(ll, LL_REG, c);
    ok &= push_range(ll, LL_LANE, 1, 2, 4);
    ok &= push_range(ll, LL_LANE, 0, 1, 8);
    ok &= push_range(ll, LL_WARP, 0, 16, wm);
    for (int i = 0; i < tc_log2i(wn); i++)
        ok &= push(ll, LL_WARP, zero);
    if (ll->shape[1] > 16)
        ok &= push_range(ll, LL_REG, 1, 16, ll->shape[1] / 16);
    if (ll->shape[0] > 16 * (int64_t)wm)
        ok &= push_range(ll, LL_REG, 0, 16 * (int64_t)wm, ll->shape[0] / (16 * (int64_t)wm));
    if (!ok)
        return fail(why, "tile needs more than 65536 registers per thread");
    clamp_to_shape(ll);
    return true;
}

/* Operand fragments of mma.sync: `k` is the K dimension of the operand (1
 * for A = MxK, 0 for B = KxN) and `o` the other one. */
static bool dot_op(const Layout *l, LinearLayout *ll, int num_warps, const char **why) {
    const Layout *p = l->dot_op.parent;
    if (p->kind == LAYOUT_MMA && p->mma.version == 3)
        return dot_op_v3(l, ll, num_warps, why);
    if (p->kind != LAYOUT_MMA || p->mma.version != 2)
        return fail(why, "dot_op layouts need an mma version 2 or 3 parent");
    int kw = l->dot_op.kwidth;
    if (!tc_is_pow2(kw) || kw > 8)
        return fail(why, "dot_op kwidth must be 1, 2, 4 or 8");
    int wm = p->mma.wpc[0], wn = p->mma.wpc[1];
    if (wm * wn != num_warps)
        return fail(why, "mma warps per CTA do not multiply to the kernel's num_warps");
    bool a = l->dot_op.idx == 0;
    int k = a ? 1 : 0, o = a ? 0 : 1;
    int32_t zero[IR_MAX_RANK] = {0}, c[IR_MAX_RANK] = {0};
    int64_t instr_k = 8 * (int64_t)kw;
    bool ok = push_range(ll, LL_REG, k, 1, kw); /* kwidth consecutive K per register group */
    if (a) {
        c[0] = 8, ok &= push(ll, LL_REG, c); /* rows lane/4 + 8 */
        c[0] = 0;
    }
    c[k] = (int32_t)(instr_k / 2), ok &= push(ll, LL_REG, c); /* the second K half */
    ok &= push_range(ll, LL_LANE, k, kw, 4);                  /* lane % 4 picks the K group */
    ok &= push_range(ll, LL_LANE, o, 1, 8);                   /* lane / 4 picks the row (A) or column (B) */
    /* Warp bits in the parent's order: N first, then M; copies across the
     * warps of the dimension this operand does not have. */
    for (int i = 0; i < tc_log2i(wn); i++)
        ok &= a ? push(ll, LL_WARP, zero) : push_range(ll, LL_WARP, 1, (int64_t)8 << i, 2);
    for (int i = 0; i < tc_log2i(wm); i++)
        ok &= a ? push_range(ll, LL_WARP, 0, (int64_t)16 << i, 2) : push(ll, LL_WARP, zero);
    int64_t o_cover = a ? 16 * wm : 8 * wn;
    if (ll->shape[k] > instr_k)
        ok &= push_range(ll, LL_REG, k, instr_k, ll->shape[k] / instr_k);
    if (ll->shape[o] > o_cover)
        ok &= push_range(ll, LL_REG, o, o_cover, ll->shape[o] / o_cover);
    if (!ok)
        return fail(why, "tile needs more than 65536 registers per thread");
    clamp_to_shape(ll);
    return true;
}

bool ll_from_layout(const Layout *l, int rank, const int64_t *shape, int num_warps, LinearLayout *out,
                    const char **why) {
    memset(out, 0, sizeof *out);
    if (rank < 1 || rank > IR_MAX_RANK)
        return fail(why, "bad rank");
    if (l->rank != rank)
        return fail(why, "layout rank differs from the tile's rank");
    if (!tc_is_pow2(num_warps) || num_warps > 32)
        return fail(why, "num_warps must be a power of two up to 32");
    out->rank = rank;
    for (int d = 0; d < rank; d++) {
        if (!tc_is_pow2(shape[d]) || shape[d] > ((int64_t)1 << 24))
            return fail(why, "tile dimensions must be powers of two");
        out->shape[d] = shape[d];
    }
    switch (l->kind) {
    case LAYOUT_BLOCKED:
        return blocked(l, out, num_warps, why);
    case LAYOUT_MMA:
        return mma(l, out, num_warps, why);
    case LAYOUT_DOT_OP:
        return dot_op(l, out, num_warps, why);
    case LAYOUT_SLICE: {
        int dim = l->slice.dim;
        if (dim < 0 || dim > rank)
            return fail(why, "slice dimension out of range");
        int64_t pshape[IR_MAX_RANK];
        for (int d = 0, s = 0; d <= rank; d++)
            pshape[d] = d == dim ? 1 : shape[s++];
        LinearLayout parent;
        if (!ll_from_layout(l->slice.parent, rank + 1, pshape, num_warps, &parent, why))
            return false;
        for (int in = 0; in < LL_NUM_IN; in++) {
            for (int b = 0; b < parent.num_bits[in]; b++) {
                int32_t c[IR_MAX_RANK] = {0};
                for (int d = 0, s = 0; d <= rank; d++)
                    if (d != dim)
                        c[s++] = parent.bases[in][b][d];
                push(out, in, c);
            }
        }
        clamp_to_shape(out); /* drops the registers that only moved along dim */
        return true;
    }
    case LAYOUT_SHARED:
    case LAYOUT_NVMMA_SHARED:
        return fail(why, "a shared layout is not distributed over threads");
    }
    return fail(why, "unknown layout");
}

bool ll_of_type(const IrType *t, int num_warps, LinearLayout *out, const char **why) {
    if (t->kind != IR_TILE || !t->layout)
        return fail(why, "not a tile with a layout");
    return ll_from_layout(t->layout, t->rank, t->shape, num_warps, out, why);
}

int ll_num_regs(const LinearLayout *ll) { return 1 << ll->num_bits[LL_REG]; }

void ll_apply_in(const LinearLayout *ll, int in, int index, int64_t *coord) {
    for (int d = 0; d < ll->rank; d++)
        coord[d] = 0;
    for (int b = 0; b < ll->num_bits[in]; b++)
        if (index >> b & 1)
            for (int d = 0; d < ll->rank; d++)
                coord[d] ^= ll->bases[in][b][d];
}

void ll_apply(const LinearLayout *ll, int reg, int lane, int warp, int64_t *coord) {
    int64_t r[IR_MAX_RANK], l[IR_MAX_RANK], w[IR_MAX_RANK];
    ll_apply_in(ll, LL_REG, reg, r);
    ll_apply_in(ll, LL_LANE, lane, l);
    ll_apply_in(ll, LL_WARP, warp, w);
    for (int d = 0; d < ll->rank; d++)
        coord[d] = r[d] ^ l[d] ^ w[d];
}

bool ll_equal(const LinearLayout *a, const LinearLayout *b) {
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    for (int in = 0; in < LL_NUM_IN; in++) {
        if (a->num_bits[in] != b->num_bits[in])
            return false;
        for (int k = 0; k < a->num_bits[in]; k++)
            for (int d = 0; d < a->rank; d++)
                if (a->bases[in][k][d] != b->bases[in][k][d])
                    return false;
    }
    return true;
}

unsigned ll_broadcast_mask(const LinearLayout *ll, int in) {
    unsigned mask = 0;
    for (int b = 0; b < ll->num_bits[in]; b++) {
        bool zero = true;
        for (int d = 0; d < ll->rank; d++)
            zero &= ll->bases[in][b][d] == 0;
        if (zero)
            mask |= 1u << b;
    }
    return mask;
}

bool ll_same_thread_map(const LinearLayout *from, const LinearLayout *to, const bool *keep_dim, int *reg_map) {
    if (from->rank != to->rank)
        return false;
    int rank = to->rank;
    /* Lanes and warps must move elements identically after projection. */
    for (int in = LL_LANE; in <= LL_WARP; in++) {
        int n = to->num_bits[in] > from->num_bits[in] ? to->num_bits[in] : from->num_bits[in];
        for (int b = 0; b < n; b++) {
            for (int d = 0; d < rank; d++) {
                int32_t t = b < to->num_bits[in] && keep_dim[d] ? to->bases[in][b][d] : 0;
                int32_t f = b < from->num_bits[in] ? from->bases[in][b][d] : 0;
                if (t != f)
                    return false;
            }
        }
    }
    /* Registers: find each projected coordinate among from's registers. The
     * register part of from is linear too, so solve by elimination: reduce
     * the target over from's register bases (independent in a valid layout). */
    int nf = from->num_bits[LL_REG];
    for (int r = 0; r < ll_num_regs(to); r++) {
        int64_t want[IR_MAX_RANK];
        ll_apply_in(to, LL_REG, r, want);
        for (int d = 0; d < rank; d++)
            if (!keep_dim[d])
                want[d] = 0;
        /* Brute force over from's registers: register counts are small (a
         * kernel with thousands of registers per thread would not compile). */
        int found = -1;
        for (int j = 0; j < (1 << nf) && found < 0; j++) {
            int64_t have[IR_MAX_RANK];
            ll_apply_in(from, LL_REG, j, have);
            bool eq = true;
            for (int d = 0; d < rank; d++)
                eq &= have[d] == want[d];
            if (eq)
                found = j;
        }
        if (found < 0)
            return false;
        reg_map[r] = found;
    }
    return true;
}

void ll_print(Buf *out, const LinearLayout *ll) {
    static const char *const names[] = {"reg", "lane", "warp"};
    for (int in = 0; in < LL_NUM_IN; in++) {
        buf_printf(out, "%s%s: [", in ? "; " : "", names[in]);
        for (int b = 0; b < ll->num_bits[in]; b++) {
            buf_printf(out, "%s(", b ? ", " : "");
            for (int d = 0; d < ll->rank; d++)
                buf_printf(out, "%s%d", d ? ", " : "", ll->bases[in][b][d]);
            buf_puts(out, ")");
        }
        buf_puts(out, "]");
    }
}

const Layout *ll_default_blocked(IrModule *m, int rank, const int64_t *shape, int num_warps) {
    int spt[IR_MAX_RANK], order[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        spt[d] = 1;
        order[d] = rank - 1 - d;
    }
    return ll_blocked_layout(m, rank, shape, spt, order, num_warps);
}

const Layout *ll_blocked_layout(IrModule *m, int rank, const int64_t *shape, const int *spt, const int *order,
                                int num_warps) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_BLOCKED;
    l.rank = rank;
    int64_t rem_lanes = 32, rem_threads = 32 * (int64_t)num_warps, rem_warps = num_warps;
    int64_t prev_lanes = 1, prev_warps = 1;
    for (int i = 0; i < rank; i++)
        l.blocked.spt[order[i]] = spt[order[i]];
    for (int i = 0; i + 1 < rank; i++) {
        int d = order[i];
        int64_t per_cta = shape[d] / spt[d];
        if (per_cta < 1)
            per_cta = 1;
        int64_t threads = rem_threads < per_cta ? rem_threads : per_cta;
        if (threads < 1)
            threads = 1;
        int64_t tpw = threads < rem_lanes ? threads : rem_lanes;
        if (tpw < 1)
            tpw = 1;
        int64_t wpc = threads / tpw;
        if (wpc > rem_warps)
            wpc = rem_warps;
        if (wpc < 1)
            wpc = 1;
        l.blocked.tpw[d] = (int)tpw;
        l.blocked.wpc[d] = (int)wpc;
        rem_warps /= wpc;
        rem_lanes /= tpw;
        rem_threads /= threads;
        prev_lanes *= tpw;
        prev_warps *= wpc;
    }
    int last = order[rank - 1];
    l.blocked.tpw[last] = (int)(32 / prev_lanes);
    l.blocked.wpc[last] = (int)(num_warps / prev_warps);
    for (int i = 0; i < rank; i++)
        l.blocked.order[i] = order[i];
    return ir_layout_intern(m, &l);
}

/* ---- shared-memory layouts ---- */

int ll_shared_max_phase(const Layout *shared, int rank, const int64_t *shape) {
    if (rank < 2)
        return 1;
    int64_t vec = shared->shared.vec > 0 ? shared->shared.vec : 1;
    int64_t units = shape[shared->shared.order[0]] / vec;
    int64_t mp = shared->shared.max_phase > 0 ? shared->shared.max_phase : 1;
    if (units < 1)
        units = 1;
    return (int)(mp < units ? mp : units);
}

/* The swizzled position along the fastest dimension of column `col` of row
 * `row`: the vec-unit XOR the row's phase, the offset inside the unit kept. */
static int64_t swizzle_col(const Layout *s, int max_phase, int64_t row, int64_t col) {
    if (max_phase <= 1)
        return col;
    int64_t vec = s->shared.vec > 0 ? s->shared.vec : 1;
    int64_t per_phase = s->shared.per_phase > 0 ? s->shared.per_phase : 1;
    int64_t phase = (row / per_phase) % max_phase;
    return ((col / vec) ^ phase) * vec + col % vec;
}

/* #nvmma_shared (docs/ir.md): the contiguous dimension cut into blocks of
 * `swizzle` bytes; each block holds every row (the other dimensions, in
 * `order`) of `swizzle` bytes before the next block starts; inside a block
 * the 16-byte unit u of row r is stored at u ^ ((r / (128 / swizzle)) %
 * (swizzle / 16)) — the hardware's XOR of address bits [4, 7) with bits
 * [7, 10) when the buffer starts at a multiple of 8 * swizzle bytes. */
typedef struct NvmmaGeom {
    int64_t block;              /* elements per swizzled row */
    int64_t rows;               /* rows per block: the product of the other dimensions */
    int64_t vec;                /* elements per 16-byte unit */
    int64_t per_phase, max_phase;
} NvmmaGeom;

static NvmmaGeom nvmma_geom(const Layout *l, int rank, const int64_t *shape, int elem_bytes) {
    NvmmaGeom g;
    int64_t eb = elem_bytes > 0 ? elem_bytes : 1;
    int64_t c = shape[l->nvmma.order[0]];
    g.block = l->nvmma.swizzle / eb;
    if (g.block > c)
        g.block = c;
    if (g.block < 1)
        g.block = 1;
    g.rows = 1;
    for (int i = 1; i < rank; i++)
        g.rows *= shape[l->nvmma.order[i]];
    g.vec = 16 / eb > 0 ? 16 / eb : 1;
    g.per_phase = 128 / l->nvmma.swizzle;
    g.max_phase = l->nvmma.swizzle / 16;
    if (g.max_phase > g.block / g.vec)
        g.max_phase = g.block / g.vec > 0 ? g.block / g.vec : 1;
    return g;
}

int64_t ll_nvmma_offset(const Layout *l, int rank, const int64_t *shape, int elem_bytes, const int64_t *coord) {
    NvmmaGeom g = nvmma_geom(l, rank, shape, elem_bytes);
    const int *order = l->nvmma.order;
    int64_t row = 0;
    for (int i = rank - 1; i >= 1; i--)
        row = row * shape[order[i]] + coord[order[i]];
    int64_t col = coord[order[0]];
    int64_t in = col % g.block, unit = in / g.vec;
    unit ^= (row / g.per_phase) % g.max_phase;
    return (col / g.block) * g.rows * g.block + row * g.block + unit * g.vec + in % g.vec;
}

void ll_nvmma_coord(const Layout *l, int rank, const int64_t *shape, int elem_bytes, int64_t offset, int64_t *coord) {
    NvmmaGeom g = nvmma_geom(l, rank, shape, elem_bytes);
    const int *order = l->nvmma.order;
    int64_t blk = offset / (g.rows * g.block), rem = offset % (g.rows * g.block);
    int64_t row = rem / g.block, in = rem % g.block;
    int64_t unit = (in / g.vec) ^ ((row / g.per_phase) % g.max_phase);
    coord[order[0]] = blk * g.block + unit * g.vec + in % g.vec;
    for (int i = 1; i < rank; i++) {
        coord[order[i]] = row % shape[order[i]];
        row /= shape[order[i]];
    }
}

int64_t ll_shared_offset(const Layout *shared, int rank, const int64_t *shape, const int64_t *coord) {
    const int *order = shared->shared.order;
    int mp = ll_shared_max_phase(shared, rank, shape);
    int64_t off = 0;
    for (int i = rank - 1; i >= 0; i--) { /* slowest first */
        int d = order[i];
        int64_t c = coord[d];
        if (i == 0 && rank >= 2)
            c = swizzle_col(shared, mp, coord[order[1]], c);
        off = off * shape[d] + c;
    }
    return off;
}

void ll_shared_coord(const Layout *shared, int rank, const int64_t *shape, int64_t offset, int64_t *coord) {
    const int *order = shared->shared.order;
    for (int i = 0; i < rank; i++) { /* fastest first */
        int d = order[i];
        coord[d] = offset % shape[d];
        offset /= shape[d];
    }
    /* The swizzle is an XOR by a function of the row only: its own inverse. */
    if (rank >= 2)
        coord[order[0]] =
            swizzle_col(shared, ll_shared_max_phase(shared, rank, shape), coord[order[1]], coord[order[0]]);
}

const Layout *ll_shared_swizzled(IrModule *m, int rank, const int64_t *shape, const int *order, int elem_bits) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_SHARED;
    l.rank = rank;
    for (int i = 0; i < rank; i++)
        l.shared.order[i] = order[i];
    int64_t eb = elem_bits >= 8 ? elem_bits / 8 : 1;
    l.shared.vec = l.shared.per_phase = l.shared.max_phase = 1;
    if (rank >= 2) {
        int64_t row_bytes = shape[order[0]] * eb;
        int64_t per_phase = row_bytes > 0 && row_bytes < 128 ? 128 / row_bytes : 1;
        l.shared.vec = (int)(eb < 16 ? 16 / eb : 1);
        l.shared.per_phase = (int)per_phase;
        l.shared.max_phase = (int)(per_phase < 8 ? 8 / per_phase : 1);
    }
    return ir_layout_intern(m, &l);
}
