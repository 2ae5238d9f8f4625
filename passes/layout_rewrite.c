/*
 * layout_rewrite.c — what assign-layouts, coalesce and remove-layout-conversions
 * share: the layout each operand must have, given its op's result layouts,
 * and the one way to change layouts in a function.
 *
 * Operand rules (pass_operand_layout; the verifier checks the same ones):
 *
 *   elementwise ops         every tile operand has the result's layout
 *   load, atomic            pointer, mask, other and value: the result's layout
 *   store, async_copy       mask, value, other: the pointer's layout
 *   broadcast               the operand has the result's layout (a size-1
 *                           dimension repeats within the same threads)
 *   expand_dims {axis}      the operand is #slice<dim = axis, parent = result's>
 *   reduce {axis}           the operand is the parent of the result's #slice
 *   trans {perm}            a #blocked operand is the result's, permuted back
 *   dot                     the accumulator has the result's layout; with
 *                           an #mma result, operand i (0: A, 1: B) is
 *                           #dot_op<idx = i, parent = the result's>
 *   for                     init i has result i's layout (= body argument i+1's)
 *   yield                   operand i has the enclosing for/if result i's layout
 *   return, call            the function's declared types
 *
 * Everything else (splat, reshape, convert_layout, local_*) takes any layout.
 *
 * pass_layouts_apply walks a function in program order with a `decide`
 * callback that names each tile value's new layout; it retypes the value and
 * fixes the operands of every op by the rules above, so the result always
 * verifies whatever the decisions were: decisions only move the
 * convert_layouts around. Conversions are placed right after the converted
 * value's definition and shared (LayoutRewrite.converted), which keeps a
 * loop-invariant conversion out of the loop that uses it.
 */
#include "passes.h"

#include <string.h>

typedef struct LayoutConv LayoutConv;
struct LayoutConv {
    const Layout *layout; /* the target layout */
    IrValue *value;       /* the source value in that layout */
    LayoutConv *next;
};

void pass_layout_rewrite_init(LayoutRewrite *rw, IrModule *m, IrFunc *f, int num_warps) {
    memset(rw, 0, sizeof *rw);
    rw->m = m;
    rw->f = f;
    rw->num_warps = num_warps;
    ir_map_init(&rw->converted, &m->arena);
}

int pass_func_num_warps(const IrFunc *f, const PassOptions *opts) {
    int64_t n = ir_func_get_int(f, "num_warps", opts->target.num_warps);
    return n >= 1 && n <= 32 && (n & (n - 1)) == 0 ? (int)n : 4;
}

const Layout *pass_default_layout(LayoutRewrite *rw, const IrType *t) {
    return ll_default_blocked(rw->m, t->rank, t->shape, rw->num_warps);
}

const Layout *pass_slice_layout(IrModule *m, int dim, const Layout *parent) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_SLICE;
    l.rank = parent->rank - 1;
    l.slice.dim = dim;
    l.slice.parent = parent;
    return ir_layout_intern(m, &l);
}

const Layout *pass_dot_operand_layout(IrModule *m, const Layout *mma, int idx, const IrType *elem) {
    int bits = ir_type_bits(elem);
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_DOT_OP;
    l.rank = mma->rank;
    l.dot_op.idx = idx;
    l.dot_op.parent = mma;
    l.dot_op.kwidth = bits >= 8 && bits <= 32 ? 32 / bits : 1;
    return ir_layout_intern(m, &l);
}

void pass_source_order(int num_warps, const IrType *t, int *order) {
    int rank = t->rank, n = 0;
    const Layout *l = t->layout;
    if (l && l->kind == LAYOUT_BLOCKED) {
        memcpy(order, l->blocked.order, sizeof(int) * (size_t)rank);
        return;
    }
    bool used[IR_MAX_RANK] = {false};
    LinearLayout ll;
    if (ll_of_type(t, num_warps, &ll, NULL))
        for (int in = LL_REG; in <= LL_LANE; in++)
            for (int b = 0; b < ll.num_bits[in]; b++)
                for (int d = 0; d < rank; d++)
                    if (ll.bases[in][b][d] && !used[d]) {
                        used[d] = true;
                        order[n++] = d;
                    }
    for (int d = rank - 1; d >= 0; d--)
        if (!used[d])
            order[n++] = d;
}

static const Layout *layout_of(const IrValue *v) {
    return v->type->kind == IR_TILE ? v->type->layout : NULL;
}

const Layout *pass_operand_layout(IrModule *m, const IrOp *op, int i) {
    const IrValue *v = op->operands[i];
    if (v->type->kind != IR_TILE)
        return NULL;
    const Layout *res = op->num_results > 0 ? layout_of(op->results[0]) : NULL;
    if (ir_op_info[op->opc].flags & OPF_ELEMENTWISE)
        return res;
    switch (op->opc) {
    case IR_OP_LOAD:
    case IR_OP_ATOMIC:
    case IR_OP_BROADCAST:
    case IR_OP_SCAN: return res;
    case IR_OP_STORE: return i > 0 ? layout_of(op->operands[0]) : NULL;
    case IR_OP_ASYNC_COPY: return i >= 2 ? layout_of(op->operands[0]) : NULL;
    case IR_OP_EXPAND_DIMS: return res ? pass_slice_layout(m, (int)ir_op_get_int(op, "axis", 0), res) : NULL;
    case IR_OP_REDUCE:
        if (res && res->kind == LAYOUT_SLICE && res->slice.dim == ir_op_get_int(op, "axis", -1))
            return res->slice.parent;
        return NULL;
    case IR_OP_TRANS: {
        const IrAttr *perm = ir_op_attr(op, "perm");
        if (!perm || perm->kind != IR_ATTR_INTS || perm->list.n != v->type->rank)
            return NULL;
        return ir_layout_permute(m, res, v->type->rank, perm->list.v, true);
    }
    case IR_OP_DOT:
        if (i == 2)
            return res;
        if (res && res->kind == LAYOUT_MMA)
            return pass_dot_operand_layout(m, res, i, v->type->elem);
        return NULL;
    case IR_OP_WARP_GROUP_DOT: /* A in registers (B is in shared memory) */
        if (i == 2)
            return res;
        return res && i == 0 ? pass_dot_operand_layout(m, res, 0, v->type->elem) : NULL;
    case IR_OP_FOR: return i >= 3 ? layout_of(op->results[i - 3]) : NULL;
    case IR_OP_WHILE: return layout_of(op->results[i]);
    case IR_OP_YIELD: {
        const IrOp *owner = op->parent ? op->parent->parent_op : NULL;
        if (!owner || i >= owner->num_results)
            return NULL;
        return layout_of(owner->results[i]);
    }
    case IR_OP_RETURN: {
        const IrFunc *f = op->parent ? op->parent->func : NULL;
        if (!f || i >= f->num_results || f->result_types[i]->kind != IR_TILE)
            return NULL;
        return f->result_types[i]->layout;
    }
    case IR_OP_CALL: {
        const IrAttr *callee = ir_op_attr(op, "callee");
        const IrFunc *f = callee && callee->kind == IR_ATTR_SYMBOL ? ir_module_find_func(m, callee->s) : NULL;
        if (!f || i >= f->body->num_args)
            return NULL;
        return layout_of(f->body->args[i]);
    }
    default: return NULL;
    }
}

/* ---- conversions ---- */

IrValue *pass_find_conversion(LayoutRewrite *rw, IrValue *v, const Layout *l) {
    for (LayoutConv *c = ir_map_get(&rw->converted, v); c; c = c->next)
        if (c->layout == l)
            return c->value;
    return NULL;
}

void pass_remember_conversion(LayoutRewrite *rw, IrValue *v, const Layout *l, IrValue *conv) {
    LayoutConv *c = ARENA_NEW(&rw->m->arena, LayoutConv);
    c->layout = l;
    c->value = conv;
    c->next = ir_map_get(&rw->converted, v);
    ir_map_put(&rw->converted, v, c);
}

/* Puts op right after v's definition (first in v's block for an argument). */
static void place_after_def(IrValue *v, IrOp *op) {
    if (v->def) {
        ir_op_insert_after(v->def, op);
    } else {
        IrBlock *b = v->block;
        if (b->first)
            ir_op_insert_before(b->first, op);
        else
            ir_block_append(b, op);
    }
}

IrValue *pass_convert_to(LayoutRewrite *rw, IrValue *v, const Layout *l) {
    if (v->type->kind != IR_TILE || v->type->layout == l)
        return v;
    /* A conversion of a conversion converts the original. */
    while (v->def && v->def->opc == IR_OP_CONVERT_LAYOUT && v->def->operands[0]->type->kind == IR_TILE) {
        v = v->def->operands[0];
        if (v->type->layout == l)
            return v;
    }
    IrValue *done = pass_find_conversion(rw, v, l);
    if (done)
        return done;
    const IrType *t = ir_type_with_layout(rw->m, v->type, l);
    IrOp *cvt = ir_op_create(rw->m, IR_OP_CONVERT_LAYOUT, 1, &v, 1, &t);
    cvt->loc = v->def ? v->def->loc : v->block->parent_op ? v->block->parent_op->loc : rw->f->loc;
    place_after_def(v, cvt);
    pass_remember_conversion(rw, v, l, cvt->results[0]);
    return cvt->results[0];
}

int pass_loop_depth(const IrBlock *b) {
    int n = 0;
    for (const IrOp *owner = b ? b->parent_op : NULL; owner; owner = owner->parent ? owner->parent->parent_op : NULL)
        n += owner->opc == IR_OP_FOR || owner->opc == IR_OP_WHILE;
    return n;
}

/* ---- applying decisions ---- */

typedef struct Apply {
    LayoutRewrite *rw;
    LayoutDecideFn decide;
    void *ctx;
} Apply;

static void retype(Apply *ap, IrValue *v, const Layout *l) {
    if (v->type->kind == IR_TILE && l && v->type->layout != l)
        v->type = ir_type_with_layout(ap->rw->m, v->type, l);
}

static void decide_value(Apply *ap, IrValue *v) {
    if (v->type->kind == IR_TILE)
        retype(ap, v, ap->decide(ap->ctx, v));
}

static void apply_block(Apply *ap, IrBlock *b);

static void apply_op(Apply *ap, IrOp *op) {
    for (int i = 0; i < op->num_results; i++)
        decide_value(ap, op->results[i]);
    if (op->opc == IR_OP_FOR) {
        IrBlock *body = op->regions[0];
        for (int i = 0; i < op->num_results; i++)
            retype(ap, body->args[1 + i], layout_of(op->results[i]));
    } else if (op->opc == IR_OP_WHILE) {
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < op->num_results; i++)
                retype(ap, op->regions[r]->args[i], layout_of(op->results[i]));
    }
    for (int i = 0; i < op->num_operands; i++) {
        const Layout *want = pass_operand_layout(ap->rw->m, op, i);
        if (want && op->operands[i]->type->layout != want)
            ir_op_set_operand(op, i, pass_convert_to(ap->rw, op->operands[i], want));
    }
    for (int r = 0; r < op->num_regions; r++)
        apply_block(ap, op->regions[r]);
}

/* Function parameters are decided here; the arguments of a `for` body and
 * of a `while`'s regions were given their loop's layouts by apply_op; `if`
 * regions have no arguments. */
static void apply_block(Apply *ap, IrBlock *b) {
    if (!b->parent_op)
        for (int i = 0; i < b->num_args; i++)
            decide_value(ap, b->args[i]);
    for (IrOp *op = b->first; op; op = op->next)
        apply_op(ap, op);
}

void pass_layouts_apply(LayoutRewrite *rw, LayoutDecideFn decide, void *ctx) {
    Apply ap = {rw, decide, ctx};
    apply_block(&ap, rw->f->body);
}
