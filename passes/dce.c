/*
 * dce.c — dead code elimination: unused pure ops, dead loop-carried values
 * and `if` results, and funcs that no kernel reaches.
 *
 * Precondition: a verified module.
 *
 * A simple "remove ops without uses" misses loop-carried values: in
 *
 *     %r = for %lb, %ub, %step, %init {
 *     ^bb(%i: i32, %acc: f32):
 *       %next = add %acc, %one : f32
 *       yield %next
 *     }
 *
 * with %r unused, %acc is used by the add and the add by the yield, so every
 * use count is non-zero, yet nothing of it is needed. So this pass marks
 * what is live and sweeps the rest (the way aggressive DCE does):
 *
 *   - roots: every op that is not pure (stores, calls, asserts,
 *     barriers, `return`...), except `for`, `if` and `yield`, whose
 *     liveness follows from their contents and results, and `load`: a
 *     global load changes nothing, so one whose value nobody uses goes
 *     (it is not pure for CSE, which must not merge loads across stores);
 *   - a live op makes its operands live, and its enclosing `for`s and `if`s
 *     (so a loop that stores stays, with its bounds);
 *   - a live value makes its defining op live; a live result or body
 *     argument of a `for` makes the iteration's slot live: its init value
 *     and the yield operand that feeds it; a live `if` result makes both
 *     regions' yield operands in that position live, a live `scan` result
 *     its combine region's yield operand (a `scan` is pure, so an unused
 *     one goes, combine region and all).
 *
 * The sweep removes every op not marked (only pure ops and dead control
 * flow can be unmarked), then compacts each live `for` (a slot whose result
 * and body argument are both dead loses its init, result, argument and
 * yield operand) and each live `if` (dead results lose their yield
 * operands). Marks live in the IrOp.id and IrValue.id scratch fields; the
 * work list holds values, each pushed at most once: linear time.
 *
 * Finally, when the module has kernels, funcs that no kernel reaches through
 * calls are removed (a module of funcs alone, such as a library under test,
 * is left as it is).
 */
#include "passes.h"

#include <string.h>

typedef struct Dce {
    IrModule *m;
    IrValue **work; /* values marked live, not yet processed */
    size_t num_work, cap_work;
} Dce;

static void clear_marks(IrBlock *b) {
    for (int i = 0; i < b->num_args; i++)
        b->args[i]->id = 0;
    for (IrOp *op = b->first; op; op = op->next) {
        op->id = 0;
        for (int i = 0; i < op->num_results; i++)
            op->results[i]->id = 0;
        for (int r = 0; r < op->num_regions; r++)
            clear_marks(op->regions[r]);
    }
}

static void mark_value(Dce *d, IrValue *v) {
    if (v->id)
        return;
    v->id = 1;
    if (d->num_work == d->cap_work) {
        size_t cap = d->cap_work ? d->cap_work * 2 : 256;
        d->work = arena_grow(&d->m->arena, d->work, sizeof(IrValue *) * d->num_work, sizeof(IrValue *) * cap);
        d->cap_work = cap;
    }
    d->work[d->num_work++] = v;
}

static void mark_op(Dce *d, IrOp *op) {
    while (op && !op->id) {
        op->id = 1;
        int n = op->num_operands;
        if (op->opc == IR_OP_FOR)
            n = 3; /* bounds; inits are live per slot */
        else if (op->opc == IR_OP_YIELD)
            n = 0; /* operands are live per slot */
        for (int i = 0; i < n; i++)
            mark_value(d, op->operands[i]);
        if (op->opc == IR_OP_WHILE) /* every slot is live: its condition may read any */
            for (int i = 0; i < op->regions[1]->last->num_operands; i++)
                mark_value(d, op->regions[1]->last->operands[i]);
        op = op->parent ? op->parent->parent_op : NULL;
    }
}

static IrOp *yield_of(IrBlock *b) {
    tc_assert(b->last && b->last->opc == IR_OP_YIELD);
    return b->last;
}

/* The slot `i` of a for: its init and the yield operand feeding it. */
static void mark_for_slot(Dce *d, IrOp *loop, int i) {
    mark_op(d, loop);
    mark_value(d, loop->operands[3 + i]);
    mark_value(d, yield_of(loop->regions[0])->operands[i]);
}

static void process(Dce *d, IrValue *v) {
    IrOp *def = v->def;
    if (def) {
        mark_op(d, def);
        if (def->opc == IR_OP_FOR)
            mark_for_slot(d, def, v->index);
        else if (def->opc == IR_OP_IF)
            for (int r = 0; r < 2; r++)
                mark_value(d, yield_of(def->regions[r])->operands[v->index]);
        else if (def->opc == IR_OP_SCAN)
            mark_value(d, yield_of(def->regions[0])->operands[0]);
        return;
    }
    IrOp *owner = v->block ? v->block->parent_op : NULL;
    if (owner && owner->opc == IR_OP_FOR) {
        mark_op(d, owner);
        if (v->index > 0)
            mark_for_slot(d, owner, v->index - 1);
    } else if (owner) {
        mark_op(d, owner);
    }
}

static void mark_roots(Dce *d, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        IrOpcode opc = op->opc;
        if (!pass_op_is_droppable(op) && opc != IR_OP_FOR && opc != IR_OP_IF && opc != IR_OP_YIELD &&
            opc != IR_OP_SCAN)
            mark_op(d, op);
        for (int r = 0; r < op->num_regions; r++)
            mark_roots(d, op->regions[r]);
    }
}

/* Removes the slots of a live for whose result and body argument are dead. */
static void compact_for(Dce *d, IrOp *loop) {
    IrBlock *body = loop->regions[0];
    IrOp *yield = yield_of(body);
    int n = loop->num_results, kept = 0;
    IrValue **inits = ARENA_ARRAY(&d->m->arena, IrValue *, 3 + n);
    IrValue **yields = ARENA_ARRAY(&d->m->arena, IrValue *, n + 1);
    for (int i = 0; i < 3; i++)
        inits[i] = loop->operands[i];
    for (int i = 0; i < n; i++) {
        IrValue *res = loop->results[i], *arg = body->args[1 + i];
        if (!res->id && !arg->id)
            continue;
        inits[3 + kept] = loop->operands[3 + i];
        yields[kept] = yield->operands[i];
        loop->results[kept] = res;
        res->index = kept;
        body->args[1 + kept] = arg;
        arg->index = 1 + kept;
        kept++;
    }
    if (kept == n)
        return;
    loop->num_results = kept;
    body->num_args = 1 + kept;
    ir_op_set_operands(d->m, loop, 3 + kept, inits);
    ir_op_set_operands(d->m, yield, kept, yields);
}

/* Removes the dead results of a live if. */
static void compact_if(Dce *d, IrOp *op) {
    int n = op->num_results, kept = 0;
    IrOp *yields[2] = {yield_of(op->regions[0]), yield_of(op->regions[1])};
    IrValue **vals[2] = {ARENA_ARRAY(&d->m->arena, IrValue *, n + 1), ARENA_ARRAY(&d->m->arena, IrValue *, n + 1)};
    for (int i = 0; i < n; i++) {
        IrValue *res = op->results[i];
        if (!res->id)
            continue;
        for (int r = 0; r < 2; r++)
            vals[r][kept] = yields[r]->operands[i];
        op->results[kept] = res;
        res->index = kept;
        kept++;
    }
    if (kept == n)
        return;
    op->num_results = kept;
    for (int r = 0; r < 2; r++)
        ir_op_set_operands(d->m, yields[r], kept, vals[r]);
}

static bool sweep(Dce *d, IrBlock *b) {
    bool changed = false;
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        if (ir_op_info[op->opc].flags & OPF_TERMINATOR)
            continue;
        if (!op->id) {
            ir_op_unlink(op);
            changed = true;
            continue;
        }
        int before = op->num_results;
        if (op->opc == IR_OP_FOR)
            compact_for(d, op);
        else if (op->opc == IR_OP_IF)
            compact_if(d, op);
        changed |= op->num_results != before;
        for (int r = 0; r < op->num_regions; r++)
            changed |= sweep(d, op->regions[r]);
    }
    return changed;
}

static void dce_func(Dce *d, IrFunc *f) {
    clear_marks(f->body);
    d->num_work = 0;
    mark_roots(d, f->body);
    while (d->num_work)
        process(d, d->work[--d->num_work]);
    sweep(d, f->body);
}

/* ---- funcs that no kernel reaches ---- */

static void collect_calls(IrModule *m, IrBlock *b, IrMap *reached, IrFunc ***stack, size_t *n, size_t *cap) {
    for (IrOp *op = b->first; op; op = op->next) {
        if (op->opc == IR_OP_CALL) {
            const IrAttr *a = ir_op_attr(op, "callee");
            IrFunc *g = a && a->kind == IR_ATTR_SYMBOL ? ir_module_find_func(m, a->s) : NULL;
            if (g && !ir_map_get(reached, g)) {
                ir_map_put(reached, g, g);
                if (*n == *cap) {
                    size_t nc = *cap ? *cap * 2 : 16;
                    *stack = arena_grow(&m->arena, *stack, sizeof(IrFunc *) * *n, sizeof(IrFunc *) * nc);
                    *cap = nc;
                }
                (*stack)[(*n)++] = g;
            }
        }
        for (int r = 0; r < op->num_regions; r++)
            collect_calls(m, op->regions[r], reached, stack, n, cap);
    }
}

static void remove_unreached_funcs(IrModule *m) {
    IrMap reached;
    ir_map_init(&reached, &m->arena);
    IrFunc **stack = NULL;
    size_t n = 0, cap = 0;
    bool any_kernel = false;
    for (IrFunc *f = m->first; f; f = f->next)
        if (f->kind == IR_FUNC_KERNEL) {
            any_kernel = true;
            collect_calls(m, f->body, &reached, &stack, &n, &cap);
        }
    if (!any_kernel)
        return;
    while (n)
        collect_calls(m, stack[--n]->body, &reached, &stack, &n, &cap);
    for (IrFunc *f = m->first, *next; f; f = next) {
        next = f->next;
        if (f->kind == IR_FUNC_FUNC && !ir_map_get(&reached, f))
            ir_func_remove(m, f);
    }
}

bool pass_dce(IrModule *m, const PassOptions *opts) {
    Dce d;
    memset(&d, 0, sizeof d);
    d.m = m;
    remove_unreached_funcs(m);
    for (IrFunc *f = m->first; f; f = f->next)
        dce_func(&d, f);
    return true;
}
