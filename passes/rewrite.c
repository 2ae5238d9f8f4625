/*
 * rewrite.c — helpers for rewriting IR that has no use lists.
 *
 * The IR stores operands but not uses (ir.h), which keeps ops small and
 * cloning trivial. Passes replace values with a substitution map instead:
 * record old -> new when an op is folded or merged, and rewrite each later
 * op's operands as the walk reaches it. Structured control flow makes the
 * pre-order walk a topological order (every definition comes before its
 * uses), so a single walk leaves no stale operand behind. Chains (a -> b,
 * then b -> c) are followed at lookup time.
 *
 * Use counts, when a pass needs them, are computed in one walk into the
 * IrValue.id scratch field; removing dead ops then walks blocks backwards so
 * that an op's users are gone before the op itself is looked at.
 */
#include "passes.h"

#include <string.h>

IrValue *pass_subst_value(const IrMap *subst, IrValue *v) {
    for (int guard = 0; guard < 1 << 20; guard++) {
        IrValue *to = ir_map_get(subst, v);
        if (!to || to == v)
            return v;
        v = to;
    }
    tc_unreachable("substitution cycle");
}

bool pass_subst_operands(const IrMap *subst, IrOp *op) {
    if (!subst->count)
        return false;
    bool changed = false;
    for (int i = 0; i < op->num_operands; i++) {
        IrValue *to = pass_subst_value(subst, op->operands[i]);
        if (to != op->operands[i]) {
            ir_op_set_operand(op, i, to);
            changed = true;
        }
    }
    return changed;
}

static void count_block(IrBlock *b) {
    for (int i = 0; i < b->num_args; i++)
        b->args[i]->id = 0;
    for (IrOp *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_results; i++)
            op->results[i]->id = 0;
        for (int i = 0; i < op->num_operands; i++)
            op->operands[i]->id++;
        for (int r = 0; r < op->num_regions; r++)
            count_block(op->regions[r]);
    }
}

void pass_count_uses(IrFunc *f) {
    count_block(f->body);
}

bool pass_op_is_removable(const IrOp *op) {
    return (ir_op_info[op->opc].flags & OPF_PURE) && op->num_regions == 0;
}

bool pass_op_is_droppable(const IrOp *op) {
    return pass_op_is_removable(op) || op->opc == IR_OP_LOAD;
}

bool pass_op_uses(const IrOp *op, const IrValue *v) {
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] == v)
            return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const IrOp *q = op->regions[r]->first; q; q = q->next)
            if (pass_op_uses(q, v))
                return true;
    return false;
}

static bool erase_dead_in_block(IrBlock *b) {
    bool changed = false;
    for (IrOp *op = b->last, *prev; op; op = prev) {
        prev = op->prev;
        for (int r = op->num_regions - 1; r >= 0; r--)
            changed |= erase_dead_in_block(op->regions[r]);
        if (!pass_op_is_droppable(op))
            continue;
        bool used = false;
        for (int i = 0; i < op->num_results; i++)
            used |= op->results[i]->id != 0;
        if (used)
            continue;
        for (int i = 0; i < op->num_operands; i++)
            op->operands[i]->id--;
        ir_op_unlink(op);
        changed = true;
    }
    return changed;
}

bool pass_erase_dead_ops(IrFunc *f) {
    return erase_dead_in_block(f->body);
}

IrOp *pass_dot_wait(IrModule *m, IrValue *v, int64_t pending, SrcLoc loc) {
    IrOp *w = ir_op_create(m, IR_OP_WARP_GROUP_DOT_WAIT, 1, &v, 1, &v->type);
    w->loc = loc;
    ir_op_set_int(m, w, "pending", pending);
    w->results[0]->name = v->name;
    return w;
}

IrValue *pass_dot_wait_after(IrModule *m, IrOp *after, IrBlock *scope, IrValue *v, int64_t pending) {
    IrOp *w = pass_dot_wait(m, v, pending, after->loc);
    ir_op_insert_after(after, w);
    ir_replace_all_uses(scope, v, w->results[0]);
    ir_op_set_operand(w, 0, v);
    return w->results[0];
}

IrValue *pass_add_iter_arg(IrModule *m, IrOp *loop, IrValue *init, const char *name) {
    int n = loop->num_operands;
    IrValue **ops = ARENA_ARRAY(&m->arena, IrValue *, n + 1);
    memcpy(ops, loop->operands, sizeof(IrValue *) * (size_t)n);
    ops[n] = init;
    ir_op_set_operands(m, loop, n + 1, ops);
    int r = loop->num_results;
    loop->results = arena_grow(&m->arena, loop->results, sizeof(IrValue *) * (size_t)(r ? r : 1),
                               sizeof(IrValue *) * (size_t)(r + 1));
    IrValue *res = ARENA_NEW(&m->arena, IrValue);
    res->type = init->type;
    res->def = loop;
    res->index = r;
    loop->results[r] = res;
    loop->num_results = r + 1;
    return ir_block_add_arg(m, loop->regions[0], init->type, name);
}

void pass_append_yield(IrModule *m, IrOp *yield, IrValue *v) {
    int n = yield->num_operands;
    IrValue **ops = ARENA_ARRAY(&m->arena, IrValue *, n + 1);
    memcpy(ops, yield->operands, sizeof(IrValue *) * (size_t)n);
    ops[n] = v;
    ir_op_set_operands(m, yield, n + 1, ops);
}
