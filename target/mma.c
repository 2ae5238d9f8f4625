/*
 * mma.c — the tensor cores' mma.sync instructions as the target model sees
 * them: each operand's fragment (which lane holds which elements), whether a
 * tile's layout fits the fragments, and so whether a dot runs on mma.sync
 * (then it needs no scratch) or on the FMA units. allocate-shared and the
 * lowering (codegen/lower_dot.c) both decide with tg_mma_plan.
 */
#include "target.h"

#include <stdlib.h>

/*
 * One operand's fragment of mma.sync as the PTX ISA defines it, written as a
 * small linear map: an instruction tile of rows x cols; bit i of the
 * fragment element's index (a0, a1, ... in the ISA's order) moves the element
 * by reg[i]; bit i of the lane id by lane[i]. Rows and columns are the
 * operand's own (A: M x K, B: K x N, C: M x N).
 */
struct TgFragment {
    int rows, cols;
    int num_bits; /* log2(fragment elements per lane) */
    int32_t reg[3][2];
    int32_t lane[5][2];
};
typedef TgFragment Fragment;

/* c0..c3 of m16n8 (f32): row groupID + 8 * (i >= 2), column 2 * threadID_in_group + (i & 1). */
static const Fragment FRAG_C = {16, 8, 2, {{0, 1}, {8, 0}}, {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}};
/* a0..a7 of m16n8k16 (f16, bf16): row groupID + 8 * (i & 2 ? 1 : 0), column 2 * tig + (i & 1) + 8 * (i >= 4). */
static const Fragment FRAG_A16 = {16, 16, 3, {{0, 1}, {8, 0}, {0, 8}}, {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}};
/* b0..b3 of m16n8k16: row (k) 2 * tig + (i & 1) + 8 * (i >= 2), column groupID. */
static const Fragment FRAG_B16 = {16, 8, 2, {{1, 0}, {8, 0}}, {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}}};
/* a0..a3 of m16n8k8 (tf32): row groupID + 8 * (i & 1), column tig + 4 * (i >= 2). */
static const Fragment FRAG_A32 = {16, 8, 2, {{8, 0}, {0, 4}}, {{0, 1}, {0, 2}, {1, 0}, {2, 0}, {4, 0}}};
/* b0, b1 of m16n8k8 (tf32): row (k) tig + 4 * i, column groupID. */
static const Fragment FRAG_B32 = {8, 8, 1, {{4, 0}}, {{1, 0}, {2, 0}, {0, 1}, {0, 2}, {0, 4}}};

/*
 * Where a tile's registers sit in the instruction fragments: reg[(t0 *
 * tiles[1] + t1) * elems + i] is the register holding fragment element i of
 * the instruction tile (t0, t1) (in units of the instruction's rows and
 * columns, counted in the register part of the coordinates), or -1.
 *
 * A layout fits when its lanes move elements exactly as the fragment's do and
 * its warps only by whole instruction tiles; each register's coordinate then
 * splits into a tile and an offset inside it, and the offset names the
 * fragment element. Worked example: #dot_op<idx = 0, kwidth = 2> of #mma<wpc
 * = [4, 1]> on 128x64 f16, registers (0,1) (8,0) (0,8) (0,16) (0,32) (64,0):
 * register 13 = bits 0, 2, 3 is at (0, 1 + 8 + 16) = tile (0, 1), offset
 * (0, 9) = a5; register 32 at (64, 0) = tile (4, 0), a0.
 */

static bool frag_table(const LinearLayout *ll, const Fragment *fr, TgFragTable *t, int *storage, int cap) {
    if (ll->rank != 2 || ll->shape[0] % fr->rows || ll->shape[1] % fr->cols || ll->num_bits[LL_LANE] != 5)
        return false;
    for (int b = 0; b < 5; b++)
        if (ll->bases[LL_LANE][b][0] != fr->lane[b][0] || ll->bases[LL_LANE][b][1] != fr->lane[b][1])
            return false;
    for (int b = 0; b < ll->num_bits[LL_WARP]; b++)
        if (ll->bases[LL_WARP][b][0] % fr->rows || ll->bases[LL_WARP][b][1] % fr->cols)
            return false;
    t->fr = fr;
    t->elems = 1 << fr->num_bits;
    t->tiles[0] = (int)(ll->shape[0] / fr->rows);
    t->tiles[1] = (int)(ll->shape[1] / fr->cols);
    int n = t->tiles[0] * t->tiles[1] * t->elems;
    if (n > cap)
        return false;
    t->reg = storage;
    for (int i = 0; i < n; i++)
        t->reg[i] = -1;
    for (int r = 0; r < ll_num_regs(ll); r++) {
        int64_t c[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, r, c);
        int64_t in0 = c[0] % fr->rows, in1 = c[1] % fr->cols;
        int elem = -1;
        for (int i = 0; i < t->elems && elem < 0; i++) {
            int64_t e0 = 0, e1 = 0;
            for (int b = 0; b < fr->num_bits; b++)
                if (i >> b & 1)
                    e0 ^= fr->reg[b][0], e1 ^= fr->reg[b][1];
            if (e0 == in0 && e1 == in1)
                elem = i;
        }
        if (elem < 0)
            return false;
        int slot = (int)((c[0] / fr->rows * t->tiles[1] + c[1] / fr->cols) * t->elems + elem);
        if (t->reg[slot] >= 0)
            return false;
        t->reg[slot] = r;
    }
    return true;
}

bool tg_frag_table_a16(const LinearLayout *ll, TgFragTable *t, int *storage, int cap) {
    return frag_table(ll, &FRAG_A16, t, storage, cap);
}

const int *tg_frag_regs(const TgFragTable *t, int t0, int t1) {
    const int *r = t->reg + (t0 * t->tiles[1] + t1) * t->elems;
    for (int i = 0; i < t->elems; i++)
        if (r[i] < 0)
            return NULL;
    return r;
}


static bool same_dim_warps(const LinearLayout *op, const LinearLayout *c, int keep) {
    int n = op->num_bits[LL_WARP] > c->num_bits[LL_WARP] ? op->num_bits[LL_WARP] : c->num_bits[LL_WARP];
    for (int b = 0; b < n; b++) {
        int32_t want[2] = {0, 0}, have[2] = {0, 0};
        if (b < c->num_bits[LL_WARP])
            want[keep] = c->bases[LL_WARP][b][keep];
        if (b < op->num_bits[LL_WARP])
            have[0] = op->bases[LL_WARP][b][0], have[1] = op->bases[LL_WARP][b][1];
        if (want[0] != have[0] || want[1] != have[1])
            return false;
    }
    return true;
}

bool tg_mma_plan(const IrOp *op, int num_warps, TgMmaPlan *p, int *storage, int cap) {
    const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->results[0]->type;
    const Layout *lc = tc->layout, *l0 = ta->layout, *l1 = tb->layout;
    if (!lc || !l0 || !l1 || lc->kind != LAYOUT_MMA || lc->mma.version != 2 || l0->kind != LAYOUT_DOT_OP ||
        l1->kind != LAYOUT_DOT_OP || tc->rank != 2 || tc->elem->kind != IR_F32)
        return false;
    const Fragment *fa, *fb;
    switch (ta->elem->kind) {
    case IR_F16:
        fa = &FRAG_A16, fb = &FRAG_B16;
        p->intrinsic = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"; /* f16 operands, f32 C and D */
        break;
    case IR_BF16:
        fa = &FRAG_A16, fb = &FRAG_B16;
        p->intrinsic = "llvm.nvvm.mma.m16n8k16.row.col.bf16";
        break;
    case IR_F32:
        fa = &FRAG_A32, fb = &FRAG_B32;
        p->intrinsic = "llvm.nvvm.mma.m16n8k8.row.col.tf32";
        break;
    default: return false;
    }
    if (!ll_of_type(ta, num_warps, &p->la, NULL) || !ll_of_type(tb, num_warps, &p->lb, NULL) ||
        !ll_of_type(tc, num_warps, &p->lc, NULL))
        return false;
    if (!frag_table(&p->la, fa, &p->a, storage, cap) || !frag_table(&p->lb, fb, &p->b, storage + cap, cap) ||
        !frag_table(&p->lc, &FRAG_C, &p->c, storage + 2 * cap, cap))
        return false;
    /* A thread's A rows and B columns must be those of its result. */
    if (!same_dim_warps(&p->la, &p->lc, 0) || !same_dim_warps(&p->lb, &p->lc, 1))
        return false;
    p->ksteps = p->a.tiles[1];
    if (p->b.tiles[0] != p->ksteps)
        return false;
    for (int tm = 0; tm < p->c.tiles[0]; tm++)
        for (int tn = 0; tn < p->c.tiles[1]; tn++) {
            if (p->c.reg[(tm * p->c.tiles[1] + tn) * p->c.elems] < 0)
                continue; /* not this thread's tile */
            if (!tg_frag_regs(&p->c, tm, tn))
                return false;
            for (int k = 0; k < p->ksteps; k++)
                if (!tg_frag_regs(&p->a, tm, k) || !tg_frag_regs(&p->b, k, tn))
                    return false;
        }
    return true;
}

int tg_mma_plan_cap(const IrOp *op) {
    int64_t m = 0;
    for (int i = 0; i < 3; i++) {
        const IrType *t = i < 2 ? op->operands[i]->type : op->results[0]->type;
        if (t->kind != IR_TILE || t->rank != 2)
            return 0;
        int64_t n = ir_type_numel(t) / 64 * 8; /* >= tiles * elems for every fragment (>= 64 elements per tile) */
        if (n > m)
            m = n;
    }
    return m > (1 << 22) ? 0 : (int)m;
}

bool tg_dot_uses_mma(const IrOp *op, int num_warps) {
    int cap = tg_mma_plan_cap(op);
    if (!cap)
        return false;
    int *storage = malloc(sizeof(int) * 3 * (size_t)cap);
    if (!storage)
        tc_oom();
    TgMmaPlan p;
    bool ok = tg_mma_plan(op, num_warps, &p, storage, cap);
    free(storage);
    return ok;
}
