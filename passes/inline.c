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
 * The pass runs in three steps, none of them recursive in the call depth:
 *
 *   1. The call graph is searched depth first from every function in module
 *      order, with an explicit stack. A callee met again while it is still on
 *      the stack closes a cycle: that call is reported, "recursive call to
 *      @f", and the pass fails. A call naming no func fails too.
 *   2. With kernels in the module, each kernel is inlined top down: a call is
 *      replaced by a copy of the callee's body as written (calls included),
 *      and the walk goes on from the first copied op, so the copied calls are
 *      inlined in turn. Only the kernels' bodies are ever expanded, so the
 *      work is the size of the result: a chain of N funcs costs O(N), where
 *      flattening every func first (each func then holds a copy of everything
 *      below it) costs O(N^2) time and memory for bodies that are deleted.
 *      A module of funcs only keeps its funcs, so each is flattened, in the
 *      post-order of step 1 (callees first, so each copied body is already
 *      flat).
 *   3. With kernels, every func is removed: no kernel calls one any more.
 *
 * Two bounds keep the result of absurd inputs from exhausting memory or the
 * stack of later passes (which recurse over regions): inlining may copy at
 * most INLINE_MAX_OPS ops in all (a DAG of calls grows exponentially), and
 * may nest regions at most INLINE_MAX_REGION_DEPTH deep (loops in funcs
 * called from loops in funcs...), the bound the IR parser puts on regions.
 * Either is reported at the call that exceeds it.
 *
 * Uses of a call's results are rewritten through a substitution map during
 * the same walk; a result may map to the result of a copied call that is
 * inlined later, so lookups follow chains and shorten them as they go.
 * Inlined ops keep the callee's locations.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define INLINE_MAX_OPS ((size_t)1 << 21)
#define INLINE_MAX_REGION_DEPTH IR_MAX_REGION_DEPTH

static char active_tag, done_tag;
#define ACTIVE ((void *)&active_tag)
#define DONE ((void *)&done_tag)

/* The calls of one function, in walk order (regions before later ops). */
typedef struct CallList {
    IrOp **calls;
    int n, cap;
} CallList;

typedef struct Inliner {
    IrModule *m;
    const PassOptions *opts;
    Arena tmp;        /* everything below; freed when the pass ends */
    IrFunc **sorted;  /* the funcs by name, for lookups in O(log n) */
    int num_funcs;
    IrMap state;      /* IrFunc* -> ACTIVE while on the search stack, then DONE */
    IrMap sizes;      /* IrFunc* -> 1 + ops in its body, regions included */
    IrMap subst;      /* call result -> the value that replaces it */
    size_t copied;    /* ops copied so far */
} Inliner;

static const char *callee_name(const IrOp *call) {
    const IrAttr *a = ir_op_attr(call, "callee");
    return a && a->kind == IR_ATTR_SYMBOL ? a->s : NULL;
}

static int cmp_func_name(const void *a, const void *b) {
    const IrFunc *f = *(IrFunc *const *)a, *g = *(IrFunc *const *)b;
    int c = strcmp(f->name, g->name);
    return c ? c : (f < g ? -1 : f > g); /* ties never matter: names are unique */
}

/* The function named `name`, as ir_module_find_func but in O(log n). */
static IrFunc *find_func(const Inliner *in, const char *name) {
    int lo = 0, hi = in->num_funcs;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(in->sorted[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < in->num_funcs && strcmp(in->sorted[lo]->name, name) == 0 ? in->sorted[lo] : NULL;
}

/* The callee of a call, or NULL with the error reported. */
static IrFunc *call_target(Inliner *in, const IrOp *call) {
    const char *name = callee_name(call);
    IrFunc *callee = name ? find_func(in, name) : NULL;
    if (!callee || callee->kind != IR_FUNC_FUNC) {
        diag_error(in->opts->diags, call->loc, "'call' op calls @%s, which is not a func", name ? name : "?");
        return NULL;
    }
    return callee;
}

static void collect_calls(Inliner *in, const IrBlock *b, CallList *out) {
    for (IrOp *op = b->first; op; op = op->next) {
        if (op->opc == IR_OP_CALL) {
            if (out->n == out->cap) {
                int cap = out->cap ? out->cap * 2 : 4;
                out->calls = arena_grow(&in->tmp, out->calls, sizeof(IrOp *) * (size_t)out->cap,
                                        sizeof(IrOp *) * (size_t)cap);
                out->cap = cap;
            }
            out->calls[out->n++] = op;
        }
        for (int r = 0; r < op->num_regions; r++)
            collect_calls(in, op->regions[r], out);
    }
}

/* Step 1: finds cycles and calls of non-funcs; fills `post` with every
 * function, callees before callers. */
static bool check_call_graph(Inliner *in, IrFunc **post) {
    typedef struct Frame {
        IrFunc *f;
        CallList calls;
        int next;
    } Frame;
    Frame *stack = ARENA_ARRAY(&in->tmp, Frame, in->num_funcs);
    int num_post = 0;
    for (IrFunc *root = in->m->first; root; root = root->next) {
        if (ir_map_get(&in->state, root))
            continue;
        int sp = 0;
        stack[sp++] = (Frame){root, {0}, 0};
        collect_calls(in, root->body, &stack[0].calls);
        ir_map_put(&in->state, root, ACTIVE);
        while (sp > 0) {
            Frame *top = &stack[sp - 1];
            if (top->next == top->calls.n) {
                ir_map_put(&in->state, top->f, DONE);
                post[num_post++] = top->f;
                sp--;
                continue;
            }
            IrOp *call = top->calls.calls[top->next++];
            IrFunc *callee = call_target(in, call);
            if (!callee)
                return false;
            void *state = ir_map_get(&in->state, callee);
            if (state == ACTIVE) {
                diag_error(in->opts->diags, call->loc, "recursive call to @%s", callee->name);
                return false;
            }
            if (state == DONE)
                continue;
            tc_assert(sp < in->num_funcs); /* each function is on the stack at most once */
            stack[sp] = (Frame){callee, {0}, 0};
            collect_calls(in, callee->body, &stack[sp].calls);
            sp++;
            ir_map_put(&in->state, callee, ACTIVE);
        }
    }
    return true;
}

static size_t body_size(Inliner *in, IrFunc *f) {
    uintptr_t s = (uintptr_t)ir_map_get(&in->sizes, f);
    if (!s) {
        s = ir_block_count_ops(f->body) + 1;
        ir_map_put(&in->sizes, f, (void *)s);
    }
    return s - 1;
}

/* v after every substitution; the chain walked is pointed at its end. */
static IrValue *resolve(Inliner *in, IrValue *v) {
    IrValue *root = v;
    for (IrValue *to; (to = ir_map_get(&in->subst, root)) && to != root;)
        root = to;
    while (v != root) {
        IrValue *to = ir_map_get(&in->subst, v);
        ir_map_put(&in->subst, v, root);
        v = to;
    }
    return root;
}

/* Copies callee's body before `call` and maps the call's results; returns
 * the first copied op (the op after the call if the body was empty). */
static IrOp *inline_call(Inliner *in, IrOp *call, IrFunc *callee) {
    IrBlock *body = callee->body;
    IrMap map;
    ir_map_init(&map, &in->tmp);
    tc_assert(body->num_args == call->num_operands);
    for (int i = 0; i < body->num_args; i++)
        ir_map_put(&map, body->args[i], call->operands[i]);
    IrOp *ret = body->last;
    tc_assert(ret && ret->opc == IR_OP_RETURN && ret->num_operands == call->num_results);
    IrOp *first = NULL;
    for (IrOp *op = body->first; op != ret; op = op->next) {
        IrOp *copy = ir_op_clone(in->m, op, &map);
        ir_op_insert_before(call, copy); /* also makes its regions the caller's */
        if (!first)
            first = copy;
    }
    for (int i = 0; i < call->num_results; i++) {
        IrValue *v = ir_map_get(&map, ret->operands[i]);
        /* A value the copy computed takes the caller's name for it. */
        if (ret->operands[i]->def && call->results[i]->name)
            ir_value_set_name(in->m, v, call->results[i]->name);
        ir_map_put(&in->subst, call->results[i], v);
    }
    IrOp *after = call->next;
    ir_op_unlink(call);
    return first ? first : after;
}

/* Inlines every call in b, and in the copies it makes; `depth` is the
 * region nesting of b. */
static bool inline_block(Inliner *in, IrBlock *b, int depth) {
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        for (int i = 0; i < op->num_operands; i++) {
            IrValue *to = resolve(in, op->operands[i]);
            if (to != op->operands[i])
                ir_op_set_operand(op, i, to);
        }
        if (op->opc == IR_OP_CALL) {
            IrFunc *callee = call_target(in, op);
            if (!callee)
                return false;
            in->copied += body_size(in, callee);
            if (in->copied > INLINE_MAX_OPS) {
                diag_error(in->opts->diags, op->loc,
                           "inlining @%s makes more than %zu ops (calls nested too deeply or too many)",
                           callee->name, INLINE_MAX_OPS);
                return false;
            }
            next = inline_call(in, op, callee);
            continue;
        }
        if (op->num_regions && depth >= INLINE_MAX_REGION_DEPTH) {
            diag_error(in->opts->diags, op->loc, "inlining nests regions more than %d deep",
                       INLINE_MAX_REGION_DEPTH);
            return false;
        }
        for (int r = 0; r < op->num_regions; r++)
            if (!inline_block(in, op->regions[r], depth + 1))
                return false;
    }
    return true;
}

static bool run(Inliner *in) {
    IrModule *m = in->m;
    for (IrFunc *f = m->first; f; f = f->next)
        in->num_funcs++;
    in->sorted = ARENA_ARRAY(&in->tmp, IrFunc *, in->num_funcs + 1);
    int i = 0;
    bool any_kernel = false;
    for (IrFunc *f = m->first; f; f = f->next) {
        in->sorted[i++] = f;
        any_kernel |= f->kind == IR_FUNC_KERNEL;
    }
    qsort(in->sorted, (size_t)in->num_funcs, sizeof(IrFunc *), cmp_func_name);

    IrFunc **post = ARENA_ARRAY(&in->tmp, IrFunc *, in->num_funcs + 1);
    if (!check_call_graph(in, post))
        return false;
    if (!any_kernel) {
        for (i = 0; i < in->num_funcs; i++)
            if (!inline_block(in, post[i]->body, 0))
                return false;
        return true;
    }
    for (IrFunc *f = m->first; f; f = f->next)
        if (f->kind == IR_FUNC_KERNEL && !inline_block(in, f->body, 0))
            return false;
    for (IrFunc *f = m->first, *next; f; f = next) {
        next = f->next;
        if (f->kind == IR_FUNC_FUNC)
            ir_func_remove(m, f);
    }
    return true;
}

bool pass_inline(IrModule *m, const PassOptions *opts) {
    Inliner in;
    memset(&in, 0, sizeof in);
    in.m = m;
    in.opts = opts;
    arena_init(&in.tmp);
    ir_map_init(&in.state, &in.tmp);
    ir_map_init(&in.sizes, &in.tmp);
    ir_map_init(&in.subst, &in.tmp);
    bool ok = run(&in);
    arena_free(&in.tmp);
    return ok;
}
