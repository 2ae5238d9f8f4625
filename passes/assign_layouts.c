/*
 * assign_layouts.c — `assign-layouts`: a distributed layout for every tile.
 *
 * Precondition: a verified module whose calls are inlined (funcs that remain
 * get default layouts on their signatures, and calls convert to them).
 * Afterwards every tile type has a layout, every kernel has `num_warps`, and
 * the module verifies.
 *
 * This is Triton's convert-to-gpu step: each tile starts in the default
 * #blocked layout for its shape (ll_default_blocked: one element per thread,
 * lanes then warps along the last dimension first), except where an op
 * derives its result's layout from its operand's:
 *
 *   reduce {axis}            #slice<dim = axis, parent = the operand's layout>
 *   expand_dims {axis}       the parent, when the operand is such a slice
 *                            (so `sum(x, 1)[:, None]` needs no conversion)
 *   trans                    the operand's #blocked layout, permuted
 *   load, atomic             the pointer's layout
 *   scan                     its operand's layout
 *   dot                      the accumulator's layout
 *   elementwise ops          their operands' layout; when they disagree, the
 *                            first that is not the default for the shape
 *   for, while, if           loop-carried values take their init's layout,
 *                            or the yield's when the body produces another
 *                            one (the init is then converted once, before
 *                            the loop, instead of the yield every iteration)
 *
 * Tiles that already have a layout keep it, so the pass is idempotent and
 * hand-written IR can pin layouts. Decisions are made first into a map (a
 * loop is analysed again when its carried layouts change), then
 * pass_layouts_apply retypes every value and inserts the convert_layouts the
 * decisions imply (layout_rewrite.c). Coalesce and remove-layout-conversions
 * improve on this starting point.
 */
#include "passes.h"

#include <string.h>

#define MAX_LOOP_VISITS 4

typedef struct Assign {
    LayoutRewrite rw;
    IrMap chosen; /* IrValue* -> const Layout* */
} Assign;

static const Layout *lay(Assign *a, const IrValue *v) {
    if (v->type->kind != IR_TILE)
        return NULL;
    const Layout *l = ir_map_get(&a->chosen, v);
    return l ? l : v->type->layout;
}

static void choose(Assign *a, const IrValue *v, const Layout *l) {
    if (v->type->kind == IR_TILE && l)
        ir_map_put(&a->chosen, v, (void *)l);
}

/* The layout of a tile result of op that has none yet. */
static const Layout *pick(Assign *a, IrOp *op, IrValue *res) {
    IrModule *m = a->rw.m;
    const IrType *t = res->type;
    const Layout *dflt = pass_default_layout(&a->rw, t);
    const Layout *src = op->num_operands > 0 ? lay(a, op->operands[0]) : NULL;
    if (ir_op_info[op->opc].flags & OPF_ELEMENTWISE) {
        /* Operands that disagree: a layout some producer chose (a
         * reduction's slice...) wins over the default, which anything has. */
        const Layout *chosen = NULL;
        for (int i = 0; i < op->num_operands && !chosen; i++) {
            const Layout *l = lay(a, op->operands[i]);
            if (l && l != dflt)
                chosen = l;
        }
        return chosen ? chosen : dflt;
    }
    switch (op->opc) {
    case IR_OP_REDUCE: return src ? pass_slice_layout(m, (int)ir_op_get_int(op, "axis", 0), src) : dflt;
    case IR_OP_EXPAND_DIMS: {
        int axis = (int)ir_op_get_int(op, "axis", 0);
        if (src && src->kind == LAYOUT_SLICE && src->slice.dim == axis && src->slice.parent->rank == t->rank)
            return src->slice.parent;
        return dflt;
    }
    case IR_OP_TRANS: {
        const IrAttr *perm = ir_op_attr(op, "perm");
        const Layout *l = perm && perm->kind == IR_ATTR_INTS && perm->list.n == t->rank
                              ? ir_layout_permute(m, src, t->rank, perm->list.v, false)
                              : NULL;
        return l ? l : dflt;
    }
    case IR_OP_LOAD:
    case IR_OP_ATOMIC:
    case IR_OP_SCAN: return src ? src : dflt;
    case IR_OP_DOT: {
        const Layout *acc = lay(a, op->operands[2]);
        return acc ? acc : dflt;
    }
    case IR_OP_CALL: {
        const IrAttr *callee = ir_op_attr(op, "callee");
        const IrFunc *f = callee && callee->kind == IR_ATTR_SYMBOL ? ir_module_find_func(m, callee->s) : NULL;
        if (f && res->index < f->num_results && f->result_types[res->index]->kind == IR_TILE &&
            f->result_types[res->index]->layout)
            return f->result_types[res->index]->layout;
        return dflt;
    }
    default: return dflt;
    }
}

static void analyze_block(Assign *a, IrBlock *b);

/* A for or a while: the carried values (a for's body arguments after the
 * induction variable, a while's arguments of both regions, the results:
 * one value per slot) take the init's layout, or the yield's. */
static void analyze_loop(Assign *a, IrOp *op) {
    bool is_for = op->opc == IR_OP_FOR;
    int first = is_for ? 3 : 0, arg0 = is_for ? 1 : 0;
    IrBlock *body = op->regions[op->num_regions - 1];
    int n = op->num_results;
    for (int i = 0; i < n; i++) {
        const Layout *l = op->results[i]->type->kind == IR_TILE ? op->results[i]->type->layout : NULL;
        choose(a, op->results[i], l ? l : lay(a, op->operands[first + i]));
    }
    for (int visit = 0; visit < MAX_LOOP_VISITS; visit++) {
        for (int r = 0; r < op->num_regions; r++)
            for (int i = 0; i < n; i++)
                choose(a, op->regions[r]->args[arg0 + i], lay(a, op->results[i]));
        for (int r = 0; r < op->num_regions; r++)
            analyze_block(a, op->regions[r]);
        if (visit + 1 == MAX_LOOP_VISITS)
            break; /* keep what the body was analysed with; yields get converted */
        bool changed = false;
        for (int i = 0; i < n; i++) {
            const Layout *y = lay(a, body->last->operands[i]);
            bool pinned = op->results[i]->type->kind == IR_TILE && op->results[i]->type->layout;
            if (y && !pinned && y != lay(a, op->results[i])) {
                choose(a, op->results[i], y);
                changed = true;
            }
        }
        if (!changed)
            break;
    }
}

static void analyze_op(Assign *a, IrOp *op) {
    if (op->opc == IR_OP_FOR || op->opc == IR_OP_WHILE) {
        analyze_loop(a, op);
        return;
    }
    for (int r = 0; r < op->num_regions; r++)
        analyze_block(a, op->regions[r]);
    for (int i = 0; i < op->num_results; i++) {
        IrValue *res = op->results[i];
        if (res->type->kind != IR_TILE)
            continue;
        if (res->type->layout) {
            choose(a, res, res->type->layout);
        } else if (op->opc == IR_OP_IF) {
            const Layout *x = lay(a, op->regions[0]->last->operands[i]);
            const Layout *y = lay(a, op->regions[1]->last->operands[i]);
            choose(a, res, x && x == y ? x : pass_default_layout(&a->rw, res->type));
        } else {
            choose(a, res, pick(a, op, res));
        }
    }
}

static void analyze_block(Assign *a, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next)
        analyze_op(a, op);
}

static const Layout *decide(void *ctx, IrValue *v) {
    Assign *a = ctx;
    const Layout *l = lay(a, v);
    return l ? l : pass_default_layout(&a->rw, v->type);
}

/* Parameters and declared results of a function get default layouts. */
static void assign_signature(IrModule *m, IrFunc *f, int num_warps) {
    for (int i = 0; i < f->body->num_args; i++) {
        IrValue *p = f->body->args[i];
        if (p->type->kind == IR_TILE && !p->type->layout)
            p->type = ir_type_with_layout(m, p->type, ll_default_blocked(m, p->type->rank, p->type->shape, num_warps));
    }
    for (int i = 0; i < f->num_results; i++) {
        const IrType *t = f->result_types[i];
        if (t->kind == IR_TILE && !t->layout)
            f->result_types[i] = ir_type_with_layout(m, t, ll_default_blocked(m, t->rank, t->shape, num_warps));
    }
}

bool pass_assign_layouts(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        int num_warps = pass_func_num_warps(f, opts);
        if (f->kind == IR_FUNC_KERNEL && !ir_attr_get(f->num_attrs, f->attrs, "num_warps"))
            ir_func_set_int(f, "num_warps", num_warps);
        assign_signature(m, f, num_warps);
    }
    for (IrFunc *f = m->first; f; f = f->next) {
        Assign a;
        pass_layout_rewrite_init(&a.rw, m, f, pass_func_num_warps(f, opts));
        ir_map_init(&a.chosen, &m->arena);
        analyze_block(&a, f->body);
        pass_layouts_apply(&a.rw, decide, &a);
    }
    return true;
}
