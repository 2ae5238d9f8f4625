/*
 * lower_layout.c — values that only rearrange elements: splat, arange,
 * broadcast, expand_dims, reshape, trans, convert_layout.
 *
 * With linear layouts these are one question: does every thread already
 * hold, in some register, each element its result registers need? The
 * operand's layout is first viewed in the result's coordinates
 * (tg_shape_op_views: expand_dims inserts a zero coordinate, trans permutes
 * the dimensions, reshape compares both as 1-D row-major maps, broadcast
 * ignores the widened dimensions), then ll_same_thread_map answers and gives
 * the register permutation. That costs no instruction at all.
 *
 * Otherwise the elements go through scratch shared memory, the same way for
 * every op: barrier (the scratch may still be read by the previous user);
 * each thread stores every operand register at the padded row-major offset
 * of its coordinates in the operand's shape (tg_exchange_padding: see
 * scratch.c); barrier; each thread loads every result register from the
 * operand coordinates that its result coordinates come from. Copies (lanes
 * or warps with zero bases) store identical values to identical addresses,
 * which is harmless. The passes normally insert convert_layout and keep it
 * out of loops; tg_scratch_bytes sizes this path for allocate-shared.
 */
#include "lower.h"

#include <string.h>

bool cg_lower_arange(Cg *cg, IrOp *op) {
    const IrType *t = op->results[0]->type;
    const LinearLayout *ll = cg_ll(cg, t, op);
    if (!ll)
        return false;
    int64_t start = ir_op_get_int(op, "start", 0);
    int n = ll_num_regs(ll);
    CgVal *v = cg_new_val(cg, n, ll);
    for (int r = 0; r < n; r++) {
        LLVMValueRef c = cg_coord(cg, ll, r, 0);
        if (start) {
            c = LLVMBuildAdd(cg->b, c, cg_i32(cg, start), "");
            if (LLVMIsAInstruction(c) && start > 0)
                LLVMSetNSW(c, 1);
        }
        v->v[r] = c;
    }
    cg_set(cg, op->results[0], v);
    return true;
}


static int64_t reg_offset(const TgScratchSum *s, int r) {
    int64_t o = 0;
    for (int k = 0; r >> k; k++)
        if ((r >> k) & 1)
            o += s->reg[k];
    return o;
}

/* The general path: through scratch shared memory (see the essay above). */
static bool exchange(Cg *cg, IrOp *op, const CgVal *src, const LinearLayout *from, const LinearLayout *to, CgVal *res) {
    const IrType *st = op->operands[0]->type;
    const IrType *elem = st->elem;
    int eb = ir_type_bytes(elem);
    TgPadding pad = tg_exchange_padding(op, from, to);
    int64_t base = cg_scratch_base(op);
    LLVMBuilderRef b = cg->b;
    TgScratchSum ss, ls;
    bool fast = base % 16 == 0 && tg_scratch_sum(op, from, from, false, eb, pad, src->n, elem, &ss) &&
                tg_scratch_sum(op, from, to, true, eb, pad, res->n, elem, &ls);
    cg_barrier(cg);
    if (fast) {
        LLVMValueRef t = LLVMBuildAdd(b, cg_thread_offset(cg, ss.thread, false), cg_i32(cg, base), "");
        for (int r = 0; r < src->n; r += ss.group)
            cg_smem_store_vec(cg, src->v + r, ss.group, elem, LLVMBuildAdd(b, t, cg_i32(cg, reg_offset(&ss, r)), ""));
    } else {
        for (int r = 0; r < src->n; r++) {
            LLVMValueRef c[IR_MAX_RANK];
            for (int d = 0; d < from->rank; d++)
                c[d] = cg_coord(cg, from, r, d);
            LLVMValueRef lin = cg_linear_index(cg, from->rank, from->shape, c);
            LLVMValueRef off = cg_padded(cg, pad, LLVMBuildMul(b, lin, cg_i32(cg, eb), ""));
            cg_smem_store(cg, src->v[r], elem, LLVMBuildAdd(b, off, cg_i32(cg, base), ""));
        }
    }
    cg_barrier(cg);
    if (fast) {
        LLVMValueRef t = LLVMBuildAdd(b, cg_thread_offset(cg, ls.thread, false), cg_i32(cg, base), "");
        for (int r = 0; r < res->n; r += ls.group)
            cg_smem_load_vec(cg, res->v + r, ls.group, elem, LLVMBuildAdd(b, t, cg_i32(cg, reg_offset(&ls, r)), ""));
        return true;
    }
    for (int r = 0; r < res->n; r++) {
        LLVMValueRef c[IR_MAX_RANK], oc[IR_MAX_RANK], lin;
        for (int d = 0; d < to->rank; d++)
            c[d] = cg_coord(cg, to, r, d);
        if (op->opc == IR_OP_RESHAPE) {
            lin = cg_linear_index(cg, to->rank, to->shape, c); /* row-major order is what reshape keeps */
        } else {
            int src[IR_MAX_RANK];
            tg_operand_dims(op, from, to, src);
            for (int d = 0; d < from->rank; d++)
                oc[d] = src[d] < 0 ? cg_i32(cg, 0) : c[src[d]];
            lin = cg_linear_index(cg, from->rank, from->shape, oc);
        }
        LLVMValueRef off = cg_padded(cg, pad, LLVMBuildMul(b, lin, cg_i32(cg, eb), ""));
        res->v[r] = cg_smem_load(cg, elem, LLVMBuildAdd(b, off, cg_i32(cg, base), ""));
    }
    return true;
}

bool cg_lower_shape(Cg *cg, IrOp *op) {
    const IrType *rt = op->results[0]->type;
    const LinearLayout *to = cg_ll(cg, rt, op);
    if (!to)
        return false;
    int n = ll_num_regs(to);
    CgVal *res = cg_new_val(cg, n, to);
    CgVal *src = cg_get(cg, op->operands[0]);
    if (op->opc == IR_OP_SPLAT) {
        for (int r = 0; r < n; r++)
            res->v[r] = src->v[0];
        cg_set(cg, op->results[0], res);
        return true;
    }
    const LinearLayout *from = cg_ll(cg, op->operands[0]->type, op);
    if (!from)
        return false;
    LinearLayout view, to_view;
    bool keep[IR_MAX_RANK];
    tg_shape_op_views(op, from, to, &view, &to_view, keep);
    int *map = ARENA_ARRAY(&cg->arena, int, n);
    if (ll_same_thread_map(&view, &to_view, keep, map)) {
        for (int r = 0; r < n; r++)
            res->v[r] = src->v[map[r]];
    } else if (!exchange(cg, op, src, from, to, res)) {
        return false;
    }
    cg_set(cg, op->results[0], res);
    return true;
}
