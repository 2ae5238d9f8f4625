/*
 * stage_shared.c — `stage-shared`: dot operands through swizzled shared
 * memory.
 *
 * Precondition: layouts are final but for this (accelerate-dot, then
 * remove-layout-conversions). Afterwards every convert_layout to a #dot_op
 * layout either stays in registers (every thread already holds the
 * fragment's elements) or is gone, replaced by
 *
 *     %k_smem = local_alloc %k : smem<64x64xf16, #shared<vec = 8, per_phase = 1, max_phase = 8, order = [0, 1]>>
 *     ...
 *     %k1 = local_load %k_smem : tile<64x64xf16, #dot_op<idx = 1, parent = #mma, kwidth = 2>>
 *
 * which codegen lowers to vector stores and ldmatrix (docs/passes.md,
 * "Shared-memory staging").
 *
 * In registers: attention's P, the f16 accumulator of S = Q K^T in #mma with
 * warps on M, converted to the A fragment of P V: ll_same_thread_map finds
 * every element of the fragment in the same thread (two adjacent n8
 * accumulator tiles are one k16 A fragment), so codegen renames registers.
 *
 * The buffer's layout (ll_shared_swizzled; docs/passes.md, "The swizzle of
 * tensor-core operands"):
 *   order  the source's order — a #blocked source's `order`, otherwise the
 *          dimensions in the order the source's register, then lane bases
 *          move them — so each thread's consecutive registers are
 *          consecutive in shared memory and the stores are 16-byte vectors.
 *          For B this is what picks ldmatrix's form: K contiguous (K-major,
 *          `k` in attention, loaded along d) is the plain ldmatrix,
 *          N contiguous (N-major, `v`) the `.trans` one; likewise M- or
 *          K-major A.
 *   swizzle 16-byte units (vec = 8 for f16); rows of R bytes along the
 *          contiguous dimension share a phase in groups of max(1, 128 / R)
 *          rows, with 8 / that many phases: 64-wide f16 rows (128 bytes) get
 *          per_phase 1, max_phase 8, 32-wide ones 2 and 4. Eight rows of one
 *          ldmatrix 8x8 matrix then hit 8 different bank groups.
 *
 * Placement, for the barriers codegen puts around a local_alloc with a
 * value (it synchronizes by itself: a barrier before its stores, one after;
 * a run of local_allocs separated by ops that do not touch shared memory
 * shares them):
 *   - the local_load goes right before the first op of the conversion's
 *     block that uses it (an op of the block whose region uses it, for a
 *     loop-invariant Q used in a loop: loaded once, before the loop; or,
 *     when that loop would leave it no registers (reload_in_loop), right
 *     before each op of the loop body that uses it);
 *   - the local_alloc starts where the conversion was (right after the
 *     value it stores) and sinks past pure ops and global loads that do not
 *     touch shared memory, so that the loads of one loop iteration are all
 *     issued before the first store waits for its data, and the stores of
 *     K and V form one run: one barrier pair per iteration for both.
 * In attention's loop: load k, load v, local_alloc k, local_alloc v,
 * local_load k, dot, softmax, local_load v, dot.
 *
 * Other conversions that need shared memory stay convert_layouts: codegen
 * moves them through padded scratch, which allocate-shared places.
 *
 * Narrow operands. A dot operand that is a cast of a global load of a
 * narrower float, in a loop body (an fp8 KV cache's keys, converted to f16
 * for the dot), is staged in the loaded type first:
 *
 *     %k = load ...                 : tile<128x64xf8e4m3, #blocked>
 *     %k_narrow = local_alloc %k    : smem<128x64xf8e4m3, #shared<...>>
 *     %k.1 = local_load %k_narrow   : tile<128x64xf8e4m3, #blocked>
 *     %kf = cast %k.1               : tile<128x64xf16, #blocked>
 *
 * so that the pipeline copies the narrow bytes ahead (cp.async into the
 * ring) and each iteration converts its stage in registers, where the
 * load alone would stay synchronous. The buffer has the load's order and
 * the swizzle of the operand buffers.
 */
#include "passes.h"

#include "target/target.h"

#include <string.h>

typedef struct Stage {
    IrModule *m;
    IrFunc *f;
    int num_warps;
    IrOp **allocs; /* the local_allocs made, in program order */
    bool narrow;   /* loops are pipelined: narrow operands are staged (see "Narrow operands") */
    int num_allocs, cap_allocs;
} Stage;

/* Is `to` a permutation of `from`'s registers in every thread? */
static bool same_thread(Stage *s, const IrType *from, const IrType *to) {
    LinearLayout a, b;
    if (!ll_of_type(from, s->num_warps, &a, NULL) || !ll_of_type(to, s->num_warps, &b, NULL))
        return false;
    bool keep[IR_MAX_RANK];
    for (int d = 0; d < IR_MAX_RANK; d++)
        keep[d] = true;
    int *map = ARENA_ARRAY(&s->m->arena, int, ll_num_regs(&b));
    return ll_same_thread_map(&a, &b, keep, map);
}

/* Is a dot operand loaded before loop `loop` better loaded again before each
 * of its dots inside? When what the loop keeps live would not leave it room:
 * the loop-carried tiles, the tiles its dots make that it does not carry
 * (attention's S), and the operand itself, over RELOAD_BUDGET registers per
 * thread. For attention with head dim 128 and 32 query rows per warp that is
 * 128 (O) + 32 or 64 (S, 32 or 64 keys per step) + 64 (Q): Q is read from
 * shared memory in each iteration, as FlashAttention-2 does, and the dots'
 * deferred loads bring in one k step at a time. With head dim 64, 64 + 64 +
 * 32: Q stays in registers. */
enum { RELOAD_BUDGET = 192 };

static bool reload_in_loop(const Stage *s, const IrOp *loop, const IrValue *operand) {
    const IrBlock *body = loop->regions[0];
    const IrOp *yield = body->last;
    int64_t regs = tg_value_regs(operand->type, s->num_warps);
    for (int i = 0; i < loop->num_results; i++)
        regs += tg_value_regs(loop->results[i]->type, s->num_warps);
    for (const IrOp *op = body->first; op; op = op->next) {
        if (op->opc != IR_OP_DOT)
            continue;
        bool carried = false;
        for (int i = 0; yield && i < yield->num_operands; i++)
            carried |= yield->operands[i] == op->results[0];
        if (!carried)
            regs += tg_value_regs(op->results[0]->type, s->num_warps);
    }
    return regs > RELOAD_BUDGET;
}

/* Make the uses of `load` (before a loop) in the loop body `body` use copies
 * of it, one right before each op that uses it. */
static void reload(Stage *s, IrBlock *body, IrOp *load) {
    IrValue *v = load->results[0];
    for (IrOp *op = body->first; op; op = op->next) {
        if (!pass_op_uses(op, v))
            continue;
        IrOp *copy = ir_op_create(s->m, IR_OP_LOCAL_LOAD, 1, &load->operands[0], 1, &v->type);
        copy->loc = load->loc;
        copy->results[0]->name = v->name;
        ir_op_insert_before(op, copy);
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i] == v)
                ir_op_set_operand(op, i, copy->results[0]);
        for (int r = 0; r < op->num_regions; r++)
            ir_replace_all_uses(op->regions[r], v, copy->results[0]);
    }
}

static void remember(Stage *s, IrOp *alloc) {
    if (s->num_allocs == s->cap_allocs) {
        int cap = s->cap_allocs ? 2 * s->cap_allocs : 8;
        s->allocs = arena_grow(&s->m->arena, s->allocs, sizeof(IrOp *) * (size_t)s->num_allocs,
                               sizeof(IrOp *) * (size_t)cap);
        s->cap_allocs = cap;
    }
    s->allocs[s->num_allocs++] = alloc;
}

static void stage(Stage *s, IrOp *cvt) {
    IrModule *m = s->m;
    IrValue *src = cvt->operands[0], *res = cvt->results[0];
    const IrType *t = src->type;
    int order[IR_MAX_RANK];
    pass_source_order(s->num_warps, t, order);
    const Layout *sh = ll_shared_swizzled(m, t->rank, t->shape, order, ir_type_bits(t->elem));
    const IrType *smem = ir_type_smem(m, t->elem, t->rank, t->shape, sh);
    IrOp *alloc = ir_op_create(m, IR_OP_LOCAL_ALLOC, 1, &src, 1, &smem);
    alloc->loc = cvt->loc;
    if (src->name)
        ir_value_set_name(m, alloc->results[0], arena_printf(&m->arena, "%s_smem", src->name));
    ir_op_insert_before(cvt, alloc);
    IrOp *load = ir_op_create(m, IR_OP_LOCAL_LOAD, 1, &alloc->results[0], 1, &res->type);
    load->loc = cvt->loc;
    load->results[0]->name = res->name;
    IrOp *user = cvt->next;
    while (user && !pass_op_uses(user, res))
        user = user->next;
    ir_op_insert_before(user ? user : cvt, load);
    IrBlock *scope = cvt->parent;
    ir_op_unlink(cvt);
    ir_replace_all_uses(scope, res, load->results[0]);
    for (IrOp *op = load->next; op; op = op->next)
        if (op->opc == IR_OP_FOR && pass_op_uses(op, load->results[0]) && reload_in_loop(s, op, load->results[0]))
            reload(s, op->regions[0], load);
    if (ir_count_uses(scope, load->results[0]) == 0)
        ir_op_unlink(load);
    remember(s, alloc);
}

/* Does v, through casts, layout conversions and shared-memory staging,
 * reach an operand of a dot? */
static bool reaches_dot(const IrBlock *b, const IrValue *v, int depth) {
    for (const IrOp *u = b->first; u && depth < 4; u = u->next) {
        if (!pass_op_uses(u, v))
            continue;
        if ((u->opc == IR_OP_DOT || u->opc == IR_OP_WARP_GROUP_DOT) && (u->operands[0] == v || u->operands[1] == v))
            return true;
        if ((u->opc == IR_OP_CAST || u->opc == IR_OP_CONVERT_LAYOUT || u->opc == IR_OP_LOCAL_ALLOC ||
             u->opc == IR_OP_LOCAL_LOAD) &&
            u->num_results == 1 && reaches_dot(b, u->results[0], depth + 1))
            return true;
    }
    return false;
}

/* Stages `cast`'s operand, a narrower float's global load in a loop body,
 * through shared memory in its own type (see "Narrow operands"). */
static void stage_narrow(Stage *s, IrOp *cast) {
    IrModule *m = s->m;
    IrValue *x = cast->operands[0];
    const IrType *t = x->type, *to = cast->results[0]->type;
    IrBlock *body = cast->parent;
    if (t->kind != IR_TILE || t->rank != 2 || !t->layout || !x->def || x->def->opc != IR_OP_LOAD ||
        x->def->parent != body || !body->parent_op || body->parent_op->opc != IR_OP_FOR ||
        !ir_type_is_float(t->elem) || !ir_type_is_float(to->elem) || ir_type_bits(t->elem) >= ir_type_bits(to->elem) ||
        ir_count_uses(body, x) != 1 || !reaches_dot(body, cast->results[0], 0))
        return;
    int order[IR_MAX_RANK];
    pass_source_order(s->num_warps, t, order);
    const Layout *sh = ll_shared_swizzled(m, t->rank, t->shape, order, ir_type_bits(t->elem));
    const IrType *smem = ir_type_smem(m, t->elem, t->rank, t->shape, sh);
    IrOp *alloc = ir_op_create(m, IR_OP_LOCAL_ALLOC, 1, &x, 1, &smem);
    alloc->loc = x->def->loc;
    if (x->name)
        ir_value_set_name(m, alloc->results[0], arena_printf(&m->arena, "%s_narrow", x->name));
    ir_op_insert_before(cast, alloc);
    IrOp *load = ir_op_create(m, IR_OP_LOCAL_LOAD, 1, &alloc->results[0], 1, &t);
    load->loc = x->def->loc;
    ir_op_insert_before(cast, load);
    ir_op_set_operand(cast, 0, load->results[0]);
}

static void walk(Stage *s, IrBlock *b) {
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        for (int r = 0; r < op->num_regions; r++)
            walk(s, op->regions[r]);
        if (op->opc == IR_OP_CAST && s->narrow) {
            stage_narrow(s, op);
            continue;
        }
        if (op->opc == IR_OP_LOCAL_ALLOC && op->num_operands == 1 && op->results[0]->type->layout &&
            op->results[0]->type->layout->kind == LAYOUT_NVMMA_SHARED) {
            remember(s, op); /* a wgmma operand (accelerate-dot): sinks with the others */
            continue;
        }
        if (op->opc != IR_OP_CONVERT_LAYOUT)
            continue;
        const IrType *from = op->operands[0]->type, *to = op->results[0]->type;
        if (to->kind != IR_TILE || !to->layout || to->layout->kind != LAYOUT_DOT_OP || from->kind != IR_TILE ||
            !from->layout)
            continue;
        if (!same_thread(s, from, to))
            stage(s, op);
    }
}

/* Can a local_alloc move below op? Pure ops and global loads that neither
 * use shared memory (scratch) nor own regions. */
static bool can_sink_past(Stage *s, const IrOp *alloc, const IrOp *op) {
    if (op->num_regions || (ir_op_info[op->opc].flags & OPF_TERMINATOR))
        return false;
    if (!(ir_op_info[op->opc].flags & OPF_PURE) && op->opc != IR_OP_LOAD)
        return false;
    return tg_scratch_bytes(op, s->num_warps) == 0 && !pass_op_uses(op, alloc->results[0]);
}

static void sink(Stage *s, IrOp *alloc) {
    IrOp *pos = alloc;
    while (pos->next && can_sink_past(s, alloc, pos->next))
        pos = pos->next;
    if (pos != alloc) {
        ir_op_unlink(alloc);
        ir_op_insert_after(pos, alloc);
    }
}

bool pass_stage_shared(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        Stage s;
        memset(&s, 0, sizeof s);
        s.m = m;
        s.f = f;
        s.num_warps = pass_func_num_warps(f, opts);
        s.narrow = ir_func_get_int(f, "num_stages", opts->target.num_stages) > 1;
        walk(&s, f->body);
        for (int i = s.num_allocs - 1; i >= 0; i--) /* the last first: the others gather above it */
            sink(&s, s.allocs[i]);
    }
    return true;
}
