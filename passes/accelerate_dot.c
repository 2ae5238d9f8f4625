/*
 * accelerate_dot.c — `accelerate-dot`: dots on tensor cores.
 *
 * Precondition: every tile has a layout (assign-layouts, usually coalesce
 * and remove-layout-conversions). Afterwards every dot that mma.sync can
 * compute has an #mma result, #dot_op operands and an #mma accumulator;
 * convert_layouts connect it to the layouts around it, which the next
 * remove-layout-conversions moves the kernel into, and stage-shared turns
 * the operand conversions that need it into shared memory (ldmatrix).
 *
 *     %c = dot %a, %b, %acc : tile<128x64xf32, #blocked>
 *
 * becomes
 *
 *     %a1 = convert_layout %a   : tile<128x64xf16, #dot_op<idx = 0, parent = #mma, kwidth = 2>>
 *     %b1 = convert_layout %b   : tile<64x64xf16, #dot_op<idx = 1, parent = #mma, kwidth = 2>>
 *     %z1 = convert_layout %acc : tile<128x64xf32, #mma>
 *     %c1 = dot %a1, %b1, %z1   : tile<128x64xf32, #mma>
 *     %c  = convert_layout %c1  : tile<128x64xf32, #blocked>
 *
 * with #mma = #mma<version = 2, wpc = [4, 1], instr = [16, 8, 16]>; each
 * conversion sits right after the value it converts (a loop-invariant
 * operand is converted once, outside the loop).
 *
 * Which dots: 2-D, f16 or bf16 operands (mma.sync m16n8k16, kwidth 2: two
 * consecutive K elements per 32-bit register), an f32 accumulator, M >= 16,
 * N >= 8, K >= 16 (tile sizes are powers of two, so they divide), on sm_80
 * and sm_90 alike; on sm_90a accelerate_v3 (below) first tries warpgroup
 * MMA, a `warp_group_dot` on #mma v3 with its operands in #nvmma_shared
 * buffers (docs/passes.md, docs/hopper.md). f32 operands stay on the FMA
 * path on purpose: tf32 (m16n8k8) keeps 10 bits of mantissa, which
 * would change the results of f32 kernels (relative errors around 1e-3
 * instead of 1e-6); so do the dots that are too small, 3-D dots and integer
 * ones.
 *
 * Warps (docs/passes.md "Tensor cores", Triton's warpsPerTileV2):
 *   - chained dots: when a dot's result reaches another dot's A operand
 *     through elementwise ops (casts, select), broadcasts, expand_dims,
 *     reductions, conversions and `if`s that yield it (of at most 32
 *     registers a thread: see find_chains) — attention's S = Q K^T feeding
 *     P V —
 *     both get all warps along M, wpc = [num_warps, 1]. Each warp then owns
 *     whole rows: the row max and sum of the softmax are shuffles within a
 *     warp, and the accumulator of S, rounded to f16, is already the A
 *     fragment of the second mma (the same threads hold the same elements),
 *     so P never goes through shared memory.
 *   - otherwise warps are doubled along M while the tile has at least as
 *     many 16-row blocks per warp as 16-column blocks, and along N otherwise
 *     (never past M / 16 along M): 128x128 on 4 warps is [2, 2], 128x64 is
 *     [4, 1], 64x64 is [2, 2].
 *
 * One algebraic fold rides along (Triton's combine pass does the same): a
 * tensor-core dot from a zero accumulator whose only use is `add x, dot`
 * in the same block accumulates into x instead, `dot a, b, x` — attention's
 * `acc = acc * alpha + dot(p, v)` then updates acc in the mma's registers
 * with no separate add. The sum is rounded in another order (as on any
 * tensor core).
 */
#include "passes.h"

#include "target/target.h"

#include <string.h>

typedef struct Accel {
    IrModule *m;
    IrFunc *f;
    const PassOptions *opts;
    int num_warps;
    LayoutRewrite rw;
    IrOp **dots; /* dots that can use tensor cores, in program order */
    bool *chained;
    int num_dots, cap_dots;
    IrMap index; /* dot IrOp* -> index + 1 */
    IrMap taint; /* IrValue* -> bitmask of the dots (index % 64) whose result reaches it */
    IrMap staged; /* IrValue* -> the #nvmma_shared local_alloc made of it (one buffer for every dot reading it) */
} Accel;

static bool layout_fits(const Layout *l, const IrType *t, int num_warps) {
    LinearLayout ll;
    return ll_from_layout(l, t->rank, t->shape, num_warps, &ll, NULL);
}

/* Can mma.sync (version 2, m16n8k16) compute this dot? */
static bool eligible(const Accel *a, const IrOp *op) {
    if (a->opts->target.sm < 80)
        return false;
    const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type;
    const IrType *tc = op->operands[2]->type, *tr = op->results[0]->type;
    const IrType *ts[4] = {ta, tb, tc, tr};
    for (int i = 0; i < 4; i++)
        if (ts[i]->kind != IR_TILE || ts[i]->rank != 2 || !ts[i]->layout)
            return false;
    if (tr->layout->kind == LAYOUT_MMA)
        return false; /* done already */
    IrTypeKind ek = ta->elem->kind;
    if ((ek != IR_F16 && ek != IR_BF16) || tb->elem != ta->elem || tc->elem->kind != IR_F32)
        return false;
    int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
    return tc_is_pow2(M) && tc_is_pow2(N) && tc_is_pow2(K) && M >= 16 && N >= 8 && K >= 16;
}

/* ---- chained dots ---- */

static uint64_t taint_of(Accel *a, const IrValue *v) {
    return (uint64_t)(uintptr_t)ir_map_get(&a->taint, v);
}

/* Ops through which a dot's result still "is" that result, row for row. */
static bool carries_rows(const IrOp *op) {
    if ((ir_op_info[op->opc].flags & (OPF_ELEMENTWISE | OPF_PURE)) == (OPF_ELEMENTWISE | OPF_PURE))
        return true;
    switch (op->opc) {
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_REDUCE:
    case IR_OP_CONVERT_LAYOUT: return true;
    default: return false;
    }
}

/* Program order sees every definition before its uses (loop-carried values
 * are not followed: a chain goes through one iteration). */
static void find_chains(Accel *a, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        for (int r = 0; r < op->num_regions; r++)
            find_chains(a, op->regions[r]);
        intptr_t idx = (intptr_t)ir_map_get(&a->index, op);
        if (idx) {
            int i = (int)idx - 1;
            uint64_t from = taint_of(a, op->operands[0]);
            if (from) {
                a->chained[i] = true;
                for (int j = 0; j < a->num_dots; j++)
                    if (from >> (j % 64) & 1)
                        a->chained[j] = true;
            }
            ir_map_put(&a->taint, op->results[0], (void *)(uintptr_t)((uint64_t)1 << (i % 64)));
            continue;
        }
        if (op->opc == IR_OP_IF && a->opts->target.arch_a) {
            /* a result is what either branch yields (the backward's P^T,
             * masked in the blocks that cross the diagonal only), when it
             * holds at most 32 registers a thread: the dot reads it as a
             * register fragment with the f32 tile and its masked copy live
             * around the `if`, which at the dK/dV kernel's head dim 128
             * (32 registers) ran 1-3% faster than staging it in shared
             * memory and at 64 (64 registers: ptxas spilled 76 bytes instead
             * of 44) 9-10% slower (H200, bench/RESULTS.md). On wgmma
             * targets: on mma.sync it would change the warps' layout of
             * both dots, which nothing measured */
            for (int k = 0; k < op->num_results; k++) {
                const IrType *rt = op->results[k]->type;
                if (rt->kind != IR_TILE || tg_value_regs(rt, a->num_warps) > 32)
                    continue;
                uint64_t t = 0;
                for (int r = 0; r < op->num_regions; r++) {
                    const IrOp *y = op->regions[r]->last;
                    if (y && y->opc == IR_OP_YIELD && k < y->num_operands)
                        t |= taint_of(a, y->operands[k]);
                }
                if (t)
                    ir_map_put(&a->taint, op->results[k], (void *)(uintptr_t)t);
            }
            continue;
        }
        if (!carries_rows(op) || op->num_results != 1)
            continue;
        uint64_t t = 0;
        for (int i = 0; i < op->num_operands; i++)
            t |= taint_of(a, op->operands[i]);
        if (t)
            ir_map_put(&a->taint, op->results[0], (void *)(uintptr_t)t);
    }
}

/* ---- the layouts ---- */

/* Triton's warpsPerTileV2 for a dot that is not chained (see the essay). */
static void split_warps(int64_t M, int64_t N, int num_warps, int *wm, int *wn) {
    int r0 = 1, r1 = 1;
    while (r0 * r1 < num_warps) {
        if (M / 16 / r0 >= N / 16 / r1) {
            if (r0 < M / 16)
                r0 *= 2;
            else
                r1 *= 2;
        } else {
            r1 *= 2;
        }
    }
    *wm = r0;
    *wn = r1;
}

/* #mma<version, wpc = [wm, wn], instr = [im, in, 16]>: mma.sync (2, m16n8)
 * or wgmma (3, m64nN). */
static const Layout *mma_layout(IrModule *m, int version, int wm, int wn, int im, int in) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_MMA;
    l.rank = 2;
    l.mma.version = version;
    l.mma.wpc[0] = wm;
    l.mma.wpc[1] = wn;
    l.mma.instr[0] = im;
    l.mma.instr[1] = in;
    l.mma.instr[2] = 16;
    return ir_layout_intern(m, &l);
}

/* ---- the rewrite ---- */

/* The single user of v in f, or NULL when v has 0 or several uses. */
static IrOp *only_user(IrBlock *scope, const IrValue *v, IrOp *found, int *count) {
    for (IrOp *op = scope->first; op && *count < 2; op = op->next) {
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i] == v) {
                found = op;
                ++*count;
            }
        for (int r = 0; r < op->num_regions; r++)
            found = only_user(op->regions[r], v, found, count);
    }
    return found;
}

/* `add x, dot(a, b, 0)` -> `dot(a, b, x)`; returns the add's result, which
 * the dot's now replaces, or NULL. */
static IrValue *fold_add(Accel *a, IrOp *dot) {
    if (!ir_value_is_zero(dot->operands[2]))
        return NULL;
    int count = 0;
    IrOp *add = only_user(a->f->body, dot->results[0], NULL, &count);
    if (count != 1 || add->opc != IR_OP_ADD || add->parent != dot->parent)
        return NULL;
    IrValue *x = add->operands[0] == dot->results[0] ? add->operands[1] : add->operands[0];
    if (x->type != dot->results[0]->type)
        return NULL;
    /* The dot moves down to the add, where x is defined. */
    ir_op_unlink(dot);
    ir_op_insert_before(add, dot);
    ir_op_set_operand(dot, 2, x);
    return add->results[0];
}

/* Replaces dot by an `opc` (dot or warp_group_dot) of operands ops whose
 * result has layout mma; the dot's users — and those of the add fold_add
 * folded (replaced, which had the dot's type) — get it converted back to the
 * layout they expect. */
static void replace_dot(Accel *a, IrOp *dot, IrOpcode opc, IrValue **ops, const Layout *mma, IrValue *replaced) {
    IrModule *m = a->m;
    IrValue *old = dot->results[0];
    const IrType *rt = ir_type_with_layout(m, old->type, mma);
    IrOp *acc = ir_op_create(m, opc, 3, ops, 1, &rt);
    acc->loc = dot->loc;
    acc->results[0]->name = replaced ? replaced->name : old->name;
    ir_op_insert_before(dot, acc);
    ir_op_unlink(dot);
    IrValue *back = pass_convert_to(&a->rw, acc->results[0], old->type->layout);
    if (replaced) {
        ir_replace_all_uses(a->f->body, replaced, back);
        ir_op_unlink(replaced->def);
    } else {
        ir_replace_all_uses(a->f->body, old, back);
    }
}

/* ---- wgmma (sm_90a) ---- */

/* Warpgroups (4 warps each) along M while the tile has 64 rows per group
 * for them, then along N (Triton's warpsPerTileV3); a chained dot puts them
 * all along M (each warpgroup owns whole rows, as with mma.sync). */
static void split_warpgroups(int64_t M, int groups, bool chained, int *gm, int *gn) {
    int m = 1, n = 1;
    while (m * n < groups) {
        if (chained || M >= 64 * 2 * (int64_t)m)
            m *= 2;
        else
            n *= 2;
    }
    *gm = m;
    *gn = n;
}

/* The swizzle of a wgmma operand stored with dimension order[0]
 * contiguous: rows of the whole contiguous extent when that is K (one
 * instruction reads 32 bytes of a row at a time), else no longer than one
 * instruction's extent along M or N (instr_mn elements), whose start must
 * fall on a swizzled row. 0 when none fits. */
static int operand_swizzle(const IrType *t, const int *order, int kdim, int64_t instr_mn) {
    int cd = order[0];
    int64_t eb = ir_type_bytes(t->elem), extent = t->shape[cd];
    if (cd != kdim && instr_mn < extent)
        extent = instr_mn;
    return tg_nvmma_swizzle(extent * eb);
}

/* v stored into a new #nvmma_shared buffer right after its definition
 * (stage-shared sinks it next to its neighbours). */
static IrValue *to_shared(Accel *a, IrValue *v, const Layout *l) {
    IrModule *m = a->m;
    const IrType *t = v->type;
    const IrType *st = ir_type_smem(m, t->elem, t->rank, t->shape, l);
    IrValue *done = ir_map_get(&a->staged, v);
    if (done && done->type == st)
        return done; /* attention's Q, read by the dots of two loops */
    IrOp *alloc = ir_op_create(m, IR_OP_LOCAL_ALLOC, 1, &v, 1, &st);
    if (v->def) {
        alloc->loc = v->def->loc;
        ir_op_insert_after(v->def, alloc);
    } else {
        IrOp *first = v->block->first;
        alloc->loc = first ? first->loc : a->f->loc;
        if (first)
            ir_op_insert_before(first, alloc);
        else
            ir_block_append(v->block, alloc);
    }
    if (v->name)
        ir_value_set_name(m, alloc->results[0], arena_printf(&m->arena, "%s_smem", v->name));
    ir_map_put(&a->staged, v, alloc->results[0]);
    return alloc->results[0];
}

/* The shared-memory operand of `dot` for tile v in layout l. A transposed
 * tile, v = trans(x) (dot(k, trans(q)) of attention's backward, which also
 * reads q itself), stages x and reads it through a `memdesc_trans` view
 * placed before the dot: one buffer and one copy for both reads. */
static IrValue *shared_operand(Accel *a, IrOp *dot, IrValue *v, const Layout *l) {
    IrOp *def = v->def;
    const IrAttr *perm = def && def->opc == IR_OP_TRANS ? ir_op_attr(def, "perm") : NULL;
    const Layout *lx =
        perm && perm->kind == IR_ATTR_INTS && perm->list.n == v->type->rank
            ? ir_layout_permute(a->m, l, v->type->rank, perm->list.v, true)
            : NULL;
    if (!lx)
        return to_shared(a, v, l);
    IrValue *buf = to_shared(a, def->operands[0], lx);
    const IrType *vt = ir_type_smem(a->m, v->type->elem, v->type->rank, v->type->shape, l);
    IrOp *view = ir_op_create(a->m, IR_OP_MEMDESC_TRANS, 1, &buf, 1, &vt);
    ir_op_set_attr(a->m, view, perm);
    view->loc = dot->loc;
    ir_op_insert_before(dot, view);
    return view->results[0];
}

/* A dot on wgmma (docs/hopper.md §2.2): an #mma version 3 result, B — and
 * A unless it is made from another dot's result (attention's P), when it
 * stays in registers as the #dot_op fragment — in #nvmma_shared buffers,
 * the dot a warp_group_dot. False
 * (nothing changed) when the dot does not fit: the caller takes mma.sync. */
static bool accelerate_v3(Accel *a, IrOp *dot, bool chained) {
    bool a_regs = taint_of(a, dot->operands[0]) != 0; /* A is (made from) another dot's result */
    IrModule *m = a->m;
    const IrType *ta = dot->operands[0]->type, *tb = dot->operands[1]->type;
    IrValue *old = dot->results[0];
    int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
    if (a->num_warps % 4 || M % 64 || K % 16)
        return false;
    int gm, gn;
    split_warpgroups(M, a->num_warps / 4, chained, &gm, &gn);
    if (chained && M < 64 * (int64_t)gm) /* too few rows for every warpgroup: they split N, as unchained */
        split_warpgroups(M, a->num_warps / 4, false, &gm, &gn);
    if (M < 64 * (int64_t)gm || N < 8 * (int64_t)gn)
        return false;
    int64_t n = N / gn > 256 ? 256 : N / gn;
    const Layout *mma = mma_layout(m, 3, 4 * gm, gn, 64, (int)n);
    if (!layout_fits(mma, old->type, a->num_warps))
        return false;
    int ob[IR_MAX_RANK], oa[IR_MAX_RANK];
    pass_source_order(a->num_warps, tb, ob);
    int swb = operand_swizzle(tb, ob, 0, n);
    const Layout *la = NULL;
    int swa = 0;
    if (a_regs) {
        la = pass_dot_operand_layout(m, mma, 0, ta->elem);
        if (!layout_fits(la, ta, a->num_warps))
            return false;
    } else {
        pass_source_order(a->num_warps, ta, oa);
        swa = operand_swizzle(ta, oa, 1, 64);
    }
    if (!swb || (!a_regs && !swa))
        return false;
    IrValue *replaced = fold_add(a, dot);
    IrValue *ops[3];
    ops[0] = a_regs ? pass_convert_to(&a->rw, dot->operands[0], la)
                     : shared_operand(a, dot, dot->operands[0], ir_layout_nvmma_shared(m, swa, oa[0]));
    ops[1] = shared_operand(a, dot, dot->operands[1], ir_layout_nvmma_shared(m, swb, ob[0]));
    ops[2] = pass_convert_to(&a->rw, dot->operands[2], mma);
    replace_dot(a, dot, IR_OP_WARP_GROUP_DOT, ops, mma, replaced);
    return true;
}

static void accelerate(Accel *a, IrOp *dot, bool chained) {
    if (a->opts->target.arch_a && accelerate_v3(a, dot, chained))
        return;
    IrModule *m = a->m;
    const IrType *ta = dot->operands[0]->type, *tb = dot->operands[1]->type;
    IrValue *old = dot->results[0];
    int64_t M = ta->shape[0], N = tb->shape[1];
    int wm = a->num_warps, wn = 1;
    if (!chained)
        split_warps(M, N, a->num_warps, &wm, &wn);
    const Layout *mma = mma_layout(m, 2, wm, wn, 16, 8);
    const Layout *la = pass_dot_operand_layout(m, mma, 0, ta->elem);
    const Layout *lb = pass_dot_operand_layout(m, mma, 1, tb->elem);
    if (!layout_fits(mma, old->type, a->num_warps) || !layout_fits(la, ta, a->num_warps) ||
        !layout_fits(lb, tb, a->num_warps))
        return; /* e.g. more registers than a thread can hold: FMA */
    IrValue *replaced = fold_add(a, dot);
    IrValue *ops[3] = {pass_convert_to(&a->rw, dot->operands[0], la), pass_convert_to(&a->rw, dot->operands[1], lb),
                       pass_convert_to(&a->rw, dot->operands[2], mma)};
    replace_dot(a, dot, IR_OP_DOT, ops, mma, replaced);
}

static void collect(IrOp *op, void *ctx) {
    Accel *a = ctx;
    if (op->opc != IR_OP_DOT || !eligible(a, op))
        return;
    if (a->num_dots == a->cap_dots) {
        int cap = a->cap_dots ? a->cap_dots * 2 : 8;
        a->dots = arena_grow(&a->m->arena, a->dots, sizeof(IrOp *) * (size_t)a->num_dots, sizeof(IrOp *) * (size_t)cap);
        a->chained =
            arena_grow(&a->m->arena, a->chained, sizeof(bool) * (size_t)a->num_dots, sizeof(bool) * (size_t)cap);
        a->cap_dots = cap;
    }
    a->chained[a->num_dots] = false;
    a->dots[a->num_dots++] = op;
    ir_map_put(&a->index, op, (void *)(intptr_t)a->num_dots);
}

bool pass_accelerate_dot(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        Accel a;
        memset(&a, 0, sizeof a);
        a.m = m;
        a.f = f;
        a.opts = opts;
        a.num_warps = pass_func_num_warps(f, opts);
        pass_layout_rewrite_init(&a.rw, m, f, a.num_warps);
        ir_map_init(&a.index, &m->arena);
        ir_map_init(&a.taint, &m->arena);
        ir_map_init(&a.staged, &m->arena);
        ir_walk_func(f, collect, &a);
        if (!a.num_dots)
            continue;
        find_chains(&a, f->body);
        for (int i = 0; i < a.num_dots; i++)
            accelerate(&a, a.dots[i], a.chained[i]);
    }
    return true;
}
