/*
 * inline.c — inlines every call, then removes the funcs nothing calls.
 *
 * Precondition: a verified module (every callee exists and is a func, with
 * matching argument and result types).
 *
 * funcs in the tile language are a naming device, not a calling convention:
 * codegen has no calls, so every `call` disappears here. A call is replaced
 * by a copy of the callee's body (ir_op_clone with the parameters mapped to
 * the arguments), and the call's results by the copies of the values the
 * callee's `return` names.
 *
 * Functions are processed depth first over the call graph, callees before
 * their callers: before a callee's body is copied, its own calls are
 * inlined, so each body is inlined into once and copied any number of
 * times, and copies never contain calls. A function met again while it is
 * still being processed is a cycle; the call that closes it is reported,
 * "recursive call to @f", and the pass fails.
 *
 * Uses of a call's results are rewritten with the substitution map of
 * rewrite.c during the same walk. Inlined ops keep the callee's locations.
 * Afterwards the funcs left without callers are removed, when the module has
 * kernels (a module of funcs only is left as it is, with its calls inlined).
 */
#include "passes.h"

static char active_tag, done_tag;
#define ACTIVE ((void *)&active_tag)
#define DONE ((void *)&done_tag)

typedef struct Inliner {
    IrModule *m;
    const PassOptions *opts;
    IrMap state; /* IrFunc* -> ACTIVE while its calls are inlined, then DONE */
} Inliner;

static bool inline_func(Inliner *in, IrFunc *f);

static const char *callee_name(const IrOp *call) {
    const IrAttr *a = ir_op_attr(call, "callee");
    return a && a->kind == IR_ATTR_SYMBOL ? a->s : NULL;
}

/* Copies callee's body before `call` and maps the call's results. */
static void inline_call(Inliner *in, IrOp *call, IrFunc *callee, IrMap *subst) {
    IrBlock *body = callee->body;
    IrMap map;
    ir_map_init(&map, &in->m->arena);
    tc_assert(body->num_args == call->num_operands);
    for (int i = 0; i < body->num_args; i++)
        ir_map_put(&map, body->args[i], call->operands[i]);
    IrOp *ret = body->last;
    tc_assert(ret && ret->opc == IR_OP_RETURN && ret->num_operands == call->num_results);
    for (IrOp *op = body->first; op != ret; op = op->next) {
        IrOp *copy = ir_op_clone(in->m, op, &map);
        ir_op_insert_before(call, copy); /* also makes its regions the caller's */
    }
    for (int i = 0; i < call->num_results; i++) {
        IrValue *v = ir_map_get(&map, ret->operands[i]);
        /* A value the copy computed takes the caller's name for it. */
        if (ret->operands[i]->def && call->results[i]->name)
            ir_value_set_name(in->m, v, call->results[i]->name);
        ir_map_put(subst, call->results[i], v);
    }
    ir_op_unlink(call);
}

static bool inline_block(Inliner *in, IrBlock *b, IrMap *subst) {
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_subst_operands(subst, op);
        if (op->opc == IR_OP_CALL) {
            const char *name = callee_name(op);
            IrFunc *callee = name ? ir_module_find_func(in->m, name) : NULL;
            if (!callee || callee->kind != IR_FUNC_FUNC) {
                diag_error(in->opts->diags, op->loc, "'call' op calls @%s, which is not a func", name ? name : "?");
                return false;
            }
            void *state = ir_map_get(&in->state, callee);
            if (state == ACTIVE) {
                diag_error(in->opts->diags, op->loc, "recursive call to @%s", name);
                return false;
            }
            if (state != DONE && !inline_func(in, callee))
                return false;
            inline_call(in, op, callee, subst);
            continue;
        }
        for (int r = 0; r < op->num_regions; r++)
            if (!inline_block(in, op->regions[r], subst))
                return false;
    }
    return true;
}

static bool inline_func(Inliner *in, IrFunc *f) {
    ir_map_put(&in->state, f, ACTIVE);
    IrMap subst;
    ir_map_init(&subst, &in->m->arena);
    bool ok = inline_block(in, f->body, &subst);
    ir_map_put(&in->state, f, DONE);
    return ok;
}

/* Records in `called` every func that a call in b names. */
static void collect_callees(IrModule *m, const IrBlock *b, IrMap *called) {
    for (const IrOp *op = b->first; op; op = op->next) {
        const char *name = op->opc == IR_OP_CALL ? callee_name(op) : NULL;
        IrFunc *g = name ? ir_module_find_func(m, name) : NULL;
        if (g)
            ir_map_put(called, g, g);
        for (int r = 0; r < op->num_regions; r++)
            collect_callees(m, op->regions[r], called);
    }
}

bool pass_inline(IrModule *m, const PassOptions *opts) {
    Inliner in;
    in.m = m;
    in.opts = opts;
    ir_map_init(&in.state, &m->arena);
    bool any_kernel = false;
    for (IrFunc *f = m->first; f; f = f->next) {
        any_kernel |= f->kind == IR_FUNC_KERNEL;
        if (!ir_map_get(&in.state, f) && !inline_func(&in, f))
            return false;
    }
    if (!any_kernel)
        return true;
    /* No calls remain, so every func goes; the check keeps this honest if
     * inlining ever becomes selective. */
    IrMap called;
    ir_map_init(&called, &m->arena);
    for (IrFunc *f = m->first; f; f = f->next)
        collect_callees(m, f->body, &called);
    for (IrFunc *f = m->first, *next; f; f = next) {
        next = f->next;
        if (f->kind == IR_FUNC_FUNC && !ir_map_get(&called, f))
            ir_func_remove(m, f);
    }
    return true;
}
