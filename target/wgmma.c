/*
 * wgmma.c — Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) as the target
 * model sees it: which registers of a warp_group_dot's accumulator are
 * which instruction's outputs, and how each shared-memory operand is
 * described to the instruction (docs/hopper.md §1.2, §1.3). Decided from
 * types alone, as mma.c decides mma.sync, so that the passes and codegen
 * agree.
 *
 * The accumulator. wgmma m64nNk16 with f32 D: in warp w (0..3) of the
 * warpgroup, lane l, register d[4j + 2h + c] holds row 16w + l/4 + 8h,
 * column 8j + 2(l%4) + c. The result's LinearLayout is matched against that
 * by coordinates: its lanes must move elements as the instruction's lanes
 * do, its first two warp bits by 16 and 32 rows, every other warp bit by
 * whole 64 x n instruction tiles; each register's coordinate (register part)
 * then names a tile (row / 64, column / n) and a d index. Nothing assumes
 * the order of the layout's registers.
 *
 * Shared operands (#nvmma_shared, ir/linear_layout.c): swizzled rows of S
 * bytes (32, 64, 128) along the contiguous dimension, column blocks of S
 * bytes each holding all rows. K-major (the contiguous dimension is K):
 * 8-row core groups SBO = 8 S bytes apart, LBO unused (1); a k16 step
 * inside a block moves the start address by 32 bytes, a step into the next
 * block by rows * S. MN-major: S-byte blocks along M or N LBO = rows * S
 * apart (rows = the K extent), 8-row groups of K SBO = 8 S apart. In both
 * cases the start address of an instruction's sub-tile is simply the
 * buffer's map at its first element (tg_wgmma_byte_offset): the map is the
 * canonical layout, so every start lies on a 16-byte unit with the swizzle
 * phase of its row group at 0 (rows are multiples of 8). Descriptor bits:
 * 13-0 start >> 4, 29-16 LBO >> 4, 45-32 SBO >> 4, 63-62 the mode (128 B:
 * 1, 64 B: 2, 32 B: 3); base offset 0, which needs every buffer aligned to
 * 8 S bytes (allocate-shared aligns #nvmma_shared buffers to 1024).
 */
#include "target.h"

#include <string.h>

int tg_nvmma_swizzle(int64_t bytes) {
    static const int modes[3] = {128, 64, 32};
    for (int i = 0; i < 3; i++)
        if (bytes > 0 && bytes % modes[i] == 0)
            return modes[i];
    return 0;
}

static bool fail(const char **why, const char *msg) {
    if (why)
        *why = msg;
    return false;
}

int64_t tg_wgmma_byte_offset(const TgWgmmaOperand *o, int64_t r, int64_t c) {
    int64_t coord[2] = {r, c};
    return ll_nvmma_offset(o->layout, 2, o->shape, o->elem_bytes, coord) * o->elem_bytes;
}

static uint64_t enc(int64_t bytes) {
    return (uint64_t)((bytes & 0x3FFFF) >> 4);
}

uint64_t tg_wgmma_desc(const TgWgmmaOperand *o, uint32_t addr) {
    return o->fixed | enc(addr);
}

/* The descriptor of a shared operand whose K dimension is kdim (A: 1, B: 0). */
static bool operand(const IrType *t, int kdim, TgWgmmaOperand *o, const char **why) {
    const Layout *l = t->layout;
    if (t->kind != IR_SMEM || !l || l->kind != LAYOUT_NVMMA_SHARED || l->rank != 2)
        return fail(why, "a wgmma operand in shared memory needs a 2-D #nvmma_shared layout");
    int rank = t->rank;
    memset(o, 0, sizeof *o);
    o->layout = l;
    o->elem_bytes = ir_type_bytes(t->elem);
    o->shape[0] = t->shape[rank - 2];
    o->shape[1] = t->shape[rank - 1];
    o->swizzle = l->nvmma.swizzle;
    int cdim = l->nvmma.order[0];
    o->mn_major = cdim != kdim;
    int64_t S = o->swizzle, contig = o->shape[cdim] * o->elem_bytes;
    if (contig % S)
        return fail(why, "the contiguous extent of a wgmma operand is not a multiple of its swizzle");
    int64_t rows = o->shape[1 - cdim];
    if (rows % 8)
        return fail(why, "a wgmma operand needs a multiple of 8 rows");
    uint64_t mode = S == 128 ? 1 : S == 64 ? 2 : 3;
    uint64_t lbo = o->mn_major ? enc(rows * S) : 1, sbo = enc(8 * S);
    o->fixed = lbo << 16 | sbo << 32 | mode << 62;
    return true;
}

int tg_wgmma_plan_cap(const IrOp *op) {
    const IrType *t = op->results[0]->type;
    if (op->opc != IR_OP_WARP_GROUP_DOT || t->kind != IR_TILE || t->rank != 2)
        return 0;
    int64_t n = ir_type_numel(t) / 64; /* >= tiles * n / 2 for the accumulator, and the A fragment table */
    int64_t na = op->operands[0]->type->kind == IR_TILE ? ir_type_numel(op->operands[0]->type) / 32 : 0;
    n = n > na ? n : na;
    return n > (1 << 22) ? 0 : (int)n + 8;
}

bool tg_wgmma_plan(const IrOp *op, int num_warps, TgWgmmaPlan *p, int *storage, int cap, const char **why) {
    memset(p, 0, sizeof *p);
    const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->results[0]->type;
    const Layout *lc = tc->layout;
    if (!lc || lc->kind != LAYOUT_MMA || lc->mma.version != 3 || tc->rank != 2 || tc->elem->kind != IR_F32)
        return fail(why, "the accumulator needs an f32 #mma version 3 layout");
    if (ta->elem->kind == IR_F16)
        p->dtype = "f16";
    else if (ta->elem->kind == IR_BF16)
        p->dtype = "bf16";
    else
        return fail(why, "wgmma operands must be f16 or bf16");
    if (!ll_of_type(tc, num_warps, &p->lc, why))
        return false;
    int64_t M = tc->shape[0], N = tc->shape[1], K = ta->shape[ta->rank - 1];
    p->n = lc->mma.instr[1];
    if (M % 64 || N % p->n || K % 16)
        return fail(why, "the dot does not divide into m64 nN k16 instructions");
    p->tiles_m = (int)(M / 64);
    p->tiles_n = (int)(N / p->n);
    p->ksteps = (int)(K / 16);
    /* lanes and warps as the instruction's */
    static const int32_t lanes[5][2] = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
    const LinearLayout *ll = &p->lc;
    if (ll->num_bits[LL_LANE] != 5 || ll->num_bits[LL_WARP] < 2)
        return fail(why, "the accumulator's lanes or warps are not wgmma's");
    for (int b = 0; b < 5; b++)
        if (ll->bases[LL_LANE][b][0] != lanes[b][0] || ll->bases[LL_LANE][b][1] != lanes[b][1])
            return fail(why, "the accumulator's lanes are not wgmma's");
    for (int b = 0; b < ll->num_bits[LL_WARP]; b++) {
        const int32_t *w = ll->bases[LL_WARP][b];
        bool ok = b < 2 ? w[0] == 16 << b && w[1] == 0 : w[0] % 64 == 0 && w[1] % p->n == 0;
        if (!ok)
            return fail(why, "the accumulator's warps are not whole warpgroups");
    }
    int per = p->n / 2, total = p->tiles_m * p->tiles_n * per;
    if (total > cap)
        return fail(why, "too many accumulator registers");
    p->acc = storage;
    for (int i = 0; i < total; i++)
        p->acc[i] = -1;
    for (int r = 0; r < ll_num_regs(ll); r++) {
        int64_t c[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, r, c);
        int64_t i0 = c[0] % 64, i1 = c[1] % p->n;
        if ((i0 != 0 && i0 != 8) || i1 % 8 > 1)
            return fail(why, "an accumulator register is not a wgmma output");
        int d = (int)(4 * (i1 / 8) + 2 * (i0 / 8) + i1 % 2);
        int slot = (int)((c[0] / 64 * p->tiles_n + c[1] / p->n) * per + d);
        if (p->acc[slot] >= 0)
            return fail(why, "two accumulator registers are one wgmma output");
        p->acc[slot] = r;
    }
    for (int t = 0; t < p->tiles_m * p->tiles_n; t++) {
        int have = 0;
        for (int i = 0; i < per; i++)
            have += p->acc[t * per + i] >= 0;
        if (have != 0 && have != per)
            return fail(why, "a thread holds part of a wgmma tile");
    }
    if (!operand(tb, 0, &p->sb, why))
        return false;
    if (tb->shape[tb->rank - 2] != K || tb->shape[tb->rank - 1] != N)
        return fail(why, "B's shape is not K x N");
    if (p->sb.mn_major && (int64_t)p->n * p->sb.elem_bytes % p->sb.swizzle)
        return fail(why, "an N-major B needs instructions whose n covers whole swizzled rows");
    if (ta->kind == IR_SMEM)
        return operand(ta, 1, &p->sa, why);
    p->a_regs = true;
    if (!ll_of_type(ta, num_warps, &p->la, why))
        return false;
    if (!tg_frag_table_a16(&p->la, &p->a, storage + cap, cap))
        return fail(why, "A's registers are not wgmma's A fragment");
    for (int b = 0; b < p->la.num_bits[LL_WARP]; b++) {
        const int32_t *w = p->la.bases[LL_WARP][b];
        const int32_t *cw = ll->bases[LL_WARP][b];
        if (w[0] != cw[0] || w[1] != 0)
            return fail(why, "A's warps are not the accumulator's rows");
    }
    return true;
}
