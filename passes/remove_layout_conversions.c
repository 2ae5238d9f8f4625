/*
 * remove_layout_conversions.c — `remove-layout-conversions`: move the kernel
 * into the layouts its memory accesses (and dots) chose, so that few
 * convert_layouts remain, and none in a loop where that can be avoided.
 *
 * Precondition: every tile has a layout (assign-layouts, usually coalesce).
 * Afterwards the module verifies and computes the same values.
 *
 * After coalesce a softmax looks like
 *
 *     %p1 = convert_layout %ptrs       : #blocked  -> #blocked1 (8 per thread)
 *     %m1 = convert_layout %mask       : ...
 *     %x  = load %p1, %m1, %o1         : #blocked1
 *     %x1 = convert_layout %x          : #blocked1 -> #blocked
 *     ... math in #blocked ...
 *     store %p2, %y1, %m2              : #blocked1, with %y1 = convert_layout %y
 *
 * and should end with everything in #blocked1 and no conversion. Three steps,
 * after Triton's RemoveLayoutConversions.cpp:
 *
 * 1. Forward propagation. Anchors are ops whose layout was chosen for a
 *    reason: loads of at least one element per thread, atomics, dots, local
 *    loads; and loop-carried values that a memory access's pointer comes
 *    from (`p = p + BLOCK`) take the access's layout. An atomic add of an
 *    #mma dot's 4- or 8-byte values whose old values nothing reads takes
 *    the #mma instead (atomic_takes_mma). Layouts flow to users
 *    through elementwise ops, broadcast, scan, convert_layout (a conversion whose
 *    result takes its source's layout disappears), reduce (as a #slice),
 *    expand_dims (a #slice operand gives its parent), trans, and
 *    loop-carried values (a `for` init or yield gives the body argument and
 *    the result the same layout, a `while` init or yield the arguments of
 *    both regions and the result; an `if` yield its result). Each value takes
 *    the first layout that reaches it (a worklist over use lists built once:
 *    linear). Tensor-core dots are seeded first: where an #mma accumulator
 *    meets a load's layout (an accumulator initialized from memory, a bias
 *    added to a product) the #mma wins, so the accumulator is never
 *    converted inside its loop. pass_layouts_apply then retypes the values
 *    and converts the operands that disagree.
 *
 *    After accelerate-dot this is what moves attention's softmax into the
 *    dots' layouts: S = Q K^T is an #mma anchor, and its scale, mask, row
 *    max (#slice<dim = 1, parent = #mma>), exp2, row sum, the rescaled
 *    accumulator and the carried m_i, l_i and acc all follow; P's cast to
 *    f16 happens in #mma.
 *
 * 2. Backward rematerialization. For each remaining `convert_layout %v : T`
 *    the ops that compute %v are recomputed in T instead, when that is cheap:
 *    the slice back from %v may hold constants, arange, splat, broadcast,
 *    expand_dims and elementwise ops (index arithmetic, masks, casts), and
 *    ends at values already in T or at conversions (whose source is used).
 *    A load of fewer elements than threads is repeated in T (each thread
 *    loads what it holds there; cheap_load). Anything else (a larger load,
 *    a reduction, a loop-carried value...) is never recomputed but
 *    converted itself; the rewrite is taken when those
 *    conversions cost fewer bytes than the one removed, counting as free
 *    the ones that land outside a loop the original was in. So a
 *    conversion of loop-invariant values leaves the loop (hoisting), and a
 *    conversion of a broadcast row vector becomes a conversion of the row
 *    vector (64 elements instead of 64x64), as Triton's
 *    hoistConvertOnTopOfExtOrBroadcast does. Recomputed ops are placed right
 *    after the ops they copy, and memoized per (value, layout), so the
 *    pointer and the mask of one access share their arange.
 *
 * 3. Clean-up: conversions to the same layout and chains of conversions
 *    fold, and what the rewrites left unused is removed (dce of pure ops).
 *
 * What stays: conversions between two anchors that disagree (an f32 atomic
 * at 4 per thread fed by bf16 loads at 8), a reduction's slice going back
 * to the full layout when its parent is not the user's, and conversions of
 * loop-carried values that no anchor reaches.
 *
 * Conversions to a #dot_op layout are the dots' own: no layout propagates
 * through them and none is recomputed in a fragment layout. They only fold
 * (a chain #mma -> #blocked -> #dot_op becomes #mma -> #dot_op), and
 * stage-shared decides which go through shared memory: attention's P,
 * converted from the #mma it was computed in, stays in registers.
 */
#include "passes.h"

#include <string.h>

#define REMAT_BUDGET 256 /* ops one conversion may recompute */

typedef struct Use {
    IrOp *op;
    int index;
} Use;

typedef struct UseList {
    int n, cap;
    Use *v;
} UseList;

typedef struct Rlc {
    IrModule *m;
    IrFunc *f;
    int threads;      /* threads per program */
    LayoutRewrite rw; /* conversions made, shared by steps 1 and 2 */
    IrMap uses;       /* IrValue* -> UseList* */
    IrMap cand;       /* IrValue* -> const Layout*: step 1's decision */
    IrValue **work;   /* step 1's worklist */
    size_t num_work, cap_work;
    IrMap subst;   /* replaced conversion results -> replacements */
    IrMap visited; /* step 2's check: IrValue* -> const Layout* */
    IrOp **convs;  /* step 2: conversions to look at, in program order */
    int num_convs, cap_convs;
} Rlc;

static const Layout *layout_of(const IrValue *v) {
    return v->type->kind == IR_TILE ? v->type->layout : NULL;
}

static bool is_dot_operand(const IrValue *v) {
    const Layout *l = layout_of(v);
    return l && l->kind == LAYOUT_DOT_OP;
}

/* ---- use lists ---- */

static void add_use(Rlc *r, IrValue *v, IrOp *op, int index) {
    UseList *u = ir_map_get(&r->uses, v);
    if (!u) {
        u = ARENA_NEW(&r->m->arena, UseList);
        ir_map_put(&r->uses, v, u);
    }
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 4;
        u->v = arena_grow(&r->m->arena, u->v, sizeof(Use) * (size_t)u->n, sizeof(Use) * (size_t)cap);
        u->cap = cap;
    }
    u->v[u->n++] = (Use){op, index};
}

static void build_uses(Rlc *r, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_operands; i++)
            add_use(r, op->operands[i], op, i);
        for (int k = 0; k < op->num_regions; k++)
            build_uses(r, op->regions[k]);
    }
}

/* ---- step 1: forward propagation from anchors ---- */

static void set_cand(Rlc *r, IrValue *v, const Layout *l) {
    if (!l || v->type->kind != IR_TILE || ir_map_get(&r->cand, v))
        return;
    ir_map_put(&r->cand, v, (void *)l);
    if (r->num_work == r->cap_work) {
        size_t cap = r->cap_work ? r->cap_work * 2 : 64;
        r->work = arena_grow(&r->m->arena, r->work, sizeof(IrValue *) * r->num_work, sizeof(IrValue *) * cap);
        r->cap_work = cap;
    }
    r->work[r->num_work++] = v;
}

static bool is_anchor(const Rlc *r, const IrOp *op) {
    switch (op->opc) {
    case IR_OP_LOAD:
        /* A load with fewer elements than threads is cheap to repeat. */
        return op->results[0]->type->kind == IR_TILE && ir_type_numel(op->results[0]->type) >= r->threads;
    case IR_OP_ATOMIC: return op->results[0]->type->kind == IR_TILE;
    case IR_OP_DOT:
    case IR_OP_WARP_GROUP_DOT:
    case IR_OP_LOCAL_LOAD: return true;
    default: return false;
    }
}

/* Slot i of a while: its result and the arguments of both regions. */
static void set_while_slot(Rlc *r, IrOp *loop, int i, const Layout *l) {
    for (int k = 0; k < 2; k++)
        set_cand(r, loop->regions[k]->args[i], l);
    set_cand(r, loop->results[i], l);
}

/* Loop-carried values that a memory access's pointer is computed from
 * (through conversions and elementwise ops of the same layout) take the
 * access's layout, so that `p = p + BLOCK` in a loop is carried in the
 * layout the load uses instead of being converted every iteration. */
static void seed_pointer(Rlc *r, IrValue *v, const Layout *l, int *budget) {
    while (v->def && v->def->opc == IR_OP_CONVERT_LAYOUT)
        v = v->def->operands[0];
    if (v->type->kind != IR_TILE || --*budget < 0)
        return;
    IrOp *owner = v->block ? v->block->parent_op : NULL;
    if (owner && owner->opc == IR_OP_FOR && v->index > 0) {
        set_cand(r, v, l);
        set_cand(r, owner->results[v->index - 1], l);
        return;
    }
    if (owner && owner->opc == IR_OP_WHILE) {
        set_while_slot(r, owner, v->index, l);
        return;
    }
    if (v->def && (ir_op_info[v->def->opc].flags & OPF_ELEMENTWISE))
        for (int i = 0; i < v->def->num_operands; i++)
            seed_pointer(r, v->def->operands[i], l, budget);
}

static bool is_mma_dot(const IrOp *op) {
    bool dot = op->opc == IR_OP_DOT || op->opc == IR_OP_WARP_GROUP_DOT;
    const Layout *l = dot ? layout_of(op->results[0]) : NULL;
    return l && l->kind == LAYOUT_MMA;
}

/* Tensor-core dots, seeded (and propagated) before the other anchors. */
static void find_mma_dots(Rlc *r, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        if (is_mma_dot(op))
            set_cand(r, op->results[0], layout_of(op->results[0]));
        for (int k = 0; k < op->num_regions; k++)
            find_mma_dots(r, op->regions[k]);
    }
}

/* An atomic whose old values nothing reads, adding 4- or 8-byte elements
 * that an #mma dot computed, takes the dot's layout instead of coalesce's:
 * each thread adds the pairs of adjacent columns it holds (a warp's eight
 * rows of 32 bytes each whole sectors), and the values are not converted
 * through shared memory first. Its vector width is coalesce's, at most the
 * 2 adjacent elements of a pair, and 1 unless coalesce vectorized along the
 * columns. */
static bool atomic_takes_mma(Rlc *r, IrOp *op) {
    if (op->opc != IR_OP_ATOMIC || op->results[0]->type->kind != IR_TILE || op->results[0]->type->rank != 2)
        return false;
    UseList *u = ir_map_get(&r->uses, op->results[0]);
    const Layout *v = ir_map_get(&r->cand, op->operands[1]);
    const Layout *own = layout_of(op->results[0]);
    if ((u && u->n) || !v || v->kind != LAYOUT_MMA || ir_type_bytes(op->results[0]->type->elem) < 4 || !own ||
        own->kind != LAYOUT_BLOCKED)
        return false;
    int64_t vec = ir_op_get_int(op, "vec", 1);
    ir_op_set_int(r->m, op, "vec", vec >= 2 && own->blocked.order[0] == 1 ? 2 : 1);
    set_cand(r, op->results[0], v);
    return true;
}

static void find_anchors(Rlc *r, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        /* The layout the access runs in: an atomic taking its values' #mma
         * seeds its loop-carried pointers with that #mma too. */
        bool access = op->opc == IR_OP_LOAD || op->opc == IR_OP_STORE || op->opc == IR_OP_ATOMIC;
        const Layout *at = access ? layout_of(op->operands[0]) : NULL;
        if (atomic_takes_mma(r, op))
            at = ir_map_get(&r->cand, op->results[0]);
        else if (is_anchor(r, op))
            for (int i = 0; i < op->num_results; i++)
                set_cand(r, op->results[i], layout_of(op->results[i]));
        if (at) {
            int budget = 64;
            seed_pointer(r, op->operands[0], at, &budget);
        }
        for (int k = 0; k < op->num_regions; k++)
            find_anchors(r, op->regions[k]);
    }
}

/* The layout value v (with layout l) gives the results of its user. */
static void propagate_use(Rlc *r, const Use *u, const Layout *l) {
    IrOp *op = u->op;
    if (ir_op_info[op->opc].flags & OPF_ELEMENTWISE) {
        if (op->results[0]->type->kind == IR_TILE)
            set_cand(r, op->results[0], l);
        return;
    }
    switch (op->opc) {
    case IR_OP_BROADCAST:
    case IR_OP_SCAN: set_cand(r, op->results[0], l); break;
    case IR_OP_CONVERT_LAYOUT:
        /* A conversion to a dot operand is the dot's, not the kernel's:
         * it stays (stage-shared or codegen decides how). */
        if (!is_dot_operand(op->results[0]))
            set_cand(r, op->results[0], l);
        break;
    case IR_OP_REDUCE:
        if (op->results[0]->type->kind == IR_TILE)
            set_cand(r, op->results[0], pass_slice_layout(r->m, (int)ir_op_get_int(op, "axis", 0), l));
        break;
    case IR_OP_EXPAND_DIMS:
        if (l->kind == LAYOUT_SLICE && l->slice.dim == ir_op_get_int(op, "axis", -1) &&
            l->slice.parent->rank == op->results[0]->type->rank)
            set_cand(r, op->results[0], l->slice.parent);
        break;
    case IR_OP_TRANS: {
        const IrAttr *perm = ir_op_attr(op, "perm");
        int rank = op->results[0]->type->rank;
        if (perm && perm->kind == IR_ATTR_INTS && perm->list.n == rank)
            set_cand(r, op->results[0], ir_layout_permute(r->m, l, rank, perm->list.v, false));
        break;
    }
    case IR_OP_FOR:
        if (u->index >= 3) {
            set_cand(r, op->regions[0]->args[u->index - 2], l);
            set_cand(r, op->results[u->index - 3], l);
        }
        break;
    case IR_OP_WHILE: set_while_slot(r, op, u->index, l); break;
    case IR_OP_YIELD: {
        IrOp *owner = op->parent->parent_op;
        if (owner->opc == IR_OP_WHILE) {
            set_while_slot(r, owner, u->index, l);
            break;
        }
        if (owner->opc == IR_OP_FOR)
            set_cand(r, owner->regions[0]->args[1 + u->index], l);
        set_cand(r, owner->results[u->index], l);
        break;
    }
    default: break;
    }
}

static const Layout *decide_cand(void *ctx, IrValue *v) {
    return ir_map_get(&((Rlc *)ctx)->cand, v);
}

/* Propagates the worklist from item *next on, to exhaustion. */
static void drain(Rlc *r, size_t *next) {
    for (; *next < r->num_work; ++*next) {
        IrValue *v = r->work[*next];
        const Layout *l = ir_map_get(&r->cand, v);
        UseList *u = ir_map_get(&r->uses, v);
        for (int k = 0; u && k < u->n; k++)
            propagate_use(r, &u->v[k], l);
    }
}

static void propagate_forward(Rlc *r) {
    size_t next = 0;
    find_mma_dots(r, r->f->body);
    drain(r, &next); /* everything an #mma reaches, before any other anchor */
    find_anchors(r, r->f->body);
    drain(r, &next);
    pass_layouts_apply(&r->rw, decide_cand, r);
}

/* ---- step 2: backward rematerialization ---- */

static IrValue *subst(Rlc *r, IrValue *v) {
    return pass_subst_value(&r->subst, v);
}

/* Ops that are cheaper to compute again in another layout than to convert. */
static bool rematerializable(const IrOp *op) {
    switch (op->opc) {
    case IR_OP_CONSTANT:
    case IR_OP_ARANGE:
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS: return true;
    default:
        return (ir_op_info[op->opc].flags & (OPF_ELEMENTWISE | OPF_PURE)) == (OPF_ELEMENTWISE | OPF_PURE) &&
               op->results[0]->type->kind == IR_TILE;
    }
}

/* A load of fewer elements than threads (not an anchor: is_anchor) is
 * cheap to repeat in another layout: every thread loads the elements it
 * holds there, which the cache serves to the threads that share them,
 * instead of one copy going through shared memory between two barriers
 * (attention's backward loads a block's LSE and Delta rows so and reads
 * them in an #mma slice). Triton's isExpensiveLoadOrStore draws the same
 * line. The copy goes right after the load it repeats, so it reads the
 * same memory. */
static bool cheap_load(const Rlc *r, const IrOp *op) {
    return op->opc == IR_OP_LOAD && op->results[0]->type->kind == IR_TILE && !is_anchor(r, op);
}

/* The layout operand i of a copy of op needs when the copy's result is in l. */
static const Layout *operand_layout_for(Rlc *r, const IrOp *op, int i, const Layout *l) {
    if (op->operands[i]->type->kind != IR_TILE)
        return NULL;
    if (op->opc == IR_OP_EXPAND_DIMS)
        return pass_slice_layout(r->m, (int)ir_op_get_int(op, "axis", 0), l);
    return l; /* elementwise, broadcast */
}

static int def_depth(const IrValue *v) {
    return pass_loop_depth(v->def ? v->def->parent : v->block);
}

static int64_t tile_bytes(const IrType *t) {
    int bits = ir_type_bits(t->elem);
    return ir_type_numel(t) * (bits >= 8 ? bits / 8 : 1);
}

/* Can v be had in layout l by recomputing its producers, and at what cost?
 * `depth` is the loop depth of the conversion being removed. A producer
 * that cannot be recomputed (a load, a reduction, a loop-carried value...)
 * is converted instead: free when that happens outside the loop the
 * conversion was in, else its bytes count in *cost. */
static bool can_remat(Rlc *r, IrValue *v, const Layout *l, int depth, int *budget, int64_t *cost, bool top) {
    v = subst(r, v);
    if (v->type->kind != IR_TILE || v->type->layout == l)
        return true;
    if (!top && pass_find_conversion(&r->rw, v, l))
        return true;
    if (ir_map_get(&r->visited, v) == l)
        return true;
    if (--*budget < 0)
        return false;
    ir_map_put(&r->visited, v, (void *)l);
    IrOp *def = v->def;
    if (def && def->opc == IR_OP_CONVERT_LAYOUT)
        return can_remat(r, def->operands[0], l, depth, budget, cost, false);
    if (def && (rematerializable(def) || cheap_load(r, def))) {
        for (int i = 0; i < def->num_operands; i++) {
            const Layout *want = operand_layout_for(r, def, i, l);
            if (want && !can_remat(r, def->operands[i], want, depth, budget, cost, false))
                return false;
        }
        return true;
    }
    if (def_depth(v) >= depth)
        *cost += tile_bytes(v->type);
    return true;
}

/* v in layout l, recomputed as can_remat allowed. `self` is the conversion
 * being replaced (never reused for itself). */
static IrValue *remat(Rlc *r, IrValue *v, const Layout *l, IrValue *self) {
    v = subst(r, v);
    if (v->type->kind != IR_TILE || v->type->layout == l)
        return v;
    IrValue *done = pass_find_conversion(&r->rw, v, l);
    if (done && done != self)
        return done;
    IrOp *def = v->def;
    if (def && def->opc == IR_OP_CONVERT_LAYOUT)
        return remat(r, def->operands[0], l, self);
    IrValue *out;
    if (def && (rematerializable(def) || cheap_load(r, def))) {
        IrMap none;
        ir_map_init(&none, &r->m->arena);
        IrOp *copy = ir_op_clone(r->m, def, &none);
        for (int i = 0; i < def->num_operands; i++) {
            const Layout *want = operand_layout_for(r, def, i, l);
            IrValue *x = subst(r, def->operands[i]);
            ir_op_set_operand(copy, i, want ? remat(r, x, want, self) : x);
        }
        copy->results[0]->type = ir_type_with_layout(r->m, v->type, l);
        if (copy->opc == IR_OP_LOAD) { /* coalesce's widths were for the original layout */
            ir_op_set_int(r->m, copy, "vec", 1);
            if (ir_op_get_int(copy, "vec_masked", 0))
                ir_op_set_int(r->m, copy, "vec_masked", 1);
        }
        ir_op_insert_after(def, copy);
        out = copy->results[0];
    } else {
        const IrType *t = ir_type_with_layout(r->m, v->type, l);
        IrOp *cvt = ir_op_create(r->m, IR_OP_CONVERT_LAYOUT, 1, &v, 1, &t);
        cvt->loc = def ? def->loc : r->f->loc;
        if (def)
            ir_op_insert_after(def, cvt);
        else
            ir_op_insert_before(v->block->first, cvt);
        out = cvt->results[0];
    }
    pass_remember_conversion(&r->rw, v, l, out);
    return out;
}

static void collect_convs(Rlc *r, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        if (op->opc == IR_OP_CONVERT_LAYOUT) {
            if (r->num_convs == r->cap_convs) {
                int cap = r->cap_convs ? r->cap_convs * 2 : 32;
                r->convs = arena_grow(&r->m->arena, r->convs, sizeof(IrOp *) * (size_t)r->num_convs,
                                      sizeof(IrOp *) * (size_t)cap);
                r->cap_convs = cap;
            }
            r->convs[r->num_convs++] = op;
        }
        for (int k = 0; k < op->num_regions; k++)
            collect_convs(r, op->regions[k]);
    }
}

static void rematerialize(Rlc *r) {
    collect_convs(r, r->f->body);
    for (int i = 0; i < r->num_convs; i++) {
        IrOp *cvt = r->convs[i];
        IrValue *res = cvt->results[0];
        IrValue *src = subst(r, cvt->operands[0]);
        const Layout *l = res->type->layout;
        if (!l || src->type->kind != IR_TILE || l->kind == LAYOUT_DOT_OP)
            continue; /* a dot operand: never worth recomputing in the fragment layout */
        int budget = REMAT_BUDGET;
        int64_t cost = 0;
        int depth = pass_loop_depth(cvt->parent);
        r->visited.count = 0;
        if (r->visited.cap)
            memset(r->visited.keys, 0, sizeof(void *) * r->visited.cap);
        if (src->type->layout == l ||
            (can_remat(r, src, l, depth, &budget, &cost, true) && cost < tile_bytes(src->type)))
            ir_map_put(&r->subst, res, remat(r, src, l, res));
    }
}

/* ---- step 3: folding and dce ---- */

static void fold_block(Rlc *r, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        pass_subst_operands(&r->subst, op);
        if (op->opc == IR_OP_CONVERT_LAYOUT) {
            IrValue *src = op->operands[0];
            while (src->def && src->def->opc == IR_OP_CONVERT_LAYOUT)
                src = src->def->operands[0];
            if (src->type == op->results[0]->type)
                ir_map_put(&r->subst, op->results[0], src);
            else
                ir_op_set_operand(op, 0, src);
        }
        for (int k = 0; k < op->num_regions; k++)
            fold_block(r, op->regions[k]);
    }
}

static void clean_up(Rlc *r) {
    fold_block(r, r->f->body); /* program order: every replacement is recorded before its uses */
    pass_count_uses(r->f);
    pass_erase_dead_ops(r->f); /* the conversions replaced, and the loads step 2 repeated */
}

bool pass_remove_layout_conversions(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        int num_warps = pass_func_num_warps(f, opts);
        Rlc r;
        memset(&r, 0, sizeof r);
        r.m = m;
        r.f = f;
        r.threads = num_warps * opts->target.threads_per_warp;
        pass_layout_rewrite_init(&r.rw, m, f, num_warps);
        ir_map_init(&r.uses, &m->arena);
        ir_map_init(&r.cand, &m->arena);
        ir_map_init(&r.subst, &m->arena);
        ir_map_init(&r.visited, &m->arena);
        build_uses(&r, f->body);
        propagate_forward(&r);
        clean_up(&r);
        rematerialize(&r);
        clean_up(&r);
    }
    return true;
}
