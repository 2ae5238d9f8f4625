/*
 * tma_store.c — the pass `tma-store`: an atomic add of a whole f32 tile
 * becomes a TMA reduction from shared memory (docs/passes.md, "TMA
 * stores").
 *
 * An atomic add of a 2-D tile, element by element, is one `red.global.add`
 * per register pair of every thread: 4096 instructions for a 64 x 128 f32
 * tile on 256 threads, each a read-modify-write the L2 serves separately.
 * Hopper's bulk tensor reduction (cp.reduce.async.bulk.tensor .add) adds a
 * whole box from shared memory with one instruction of one thread, the
 * adds done by the TMA unit next to L2. A kernel that accumulates a tile
 * into global memory in a loop (the backward pass of attention adds each
 * query block's dQ into an f32 workspace) pays for its atomics in issue
 * slots and in L2 requests; with the reduction it pays a store to shared
 * memory and one or two barriers.
 *
 * On sm_90a, in a kernel, an `atomic {kind = add}` qualifies when
 *   - its value is a 2-D f32 tile and its old values are unused;
 *   - its pointer tile and mask are a box of a tensor (tma_access.c, the
 *     analysis of TMA loads: an affine pointer over a 16-byte aligned base
 *     with 16-byte multiple strides, a mask that says "inside the extents"),
 *     along either tile axis as the contiguous one, whose extent in bytes
 *     takes a swizzle of 32 bytes or more;
 *   - it is not in a warp_specialize region (the producer warps), and the
 *     kernel has no named barriers (ping-pong turns would not survive the
 *     barriers below);
 *   - the buffer fits: while the top-level op that holds the atomic runs,
 *     the buffers live there, its largest scratch (and two reductions'
 *     more) and the new buffer stay within the target's limit (an
 *     estimate: the buffers of one block count together, those allocated
 *     inside sequential ops of a block only the largest, as allocate-shared
 *     gives sequential loops' buffers the same bytes).
 * Then, with B a new buffer smem<shape x f32, #nvmma_shared<swizzle, order
 * = [contiguous axis, other]>> allocated before the top-level op that holds
 * the atomic (a loop, typically) and M the kernel's tensormap parameter for
 * the box (one box per swizzle width of the contiguous axis, up to 256
 * along the other):
 *
 *     %old = atomic %ptrs, %v, %mask {kind = add}
 * becomes
 *     async_tma_store_wait %B {pending = 0}  // B's previous reduction has read it
 *     barrier                                // ... and every thread knows
 *     local_store %v, %B
 *     fence_async_shared                     // the stores, before the async proxy reads
 *     barrier
 *     async_tma_store %M, %B, %p, %c0, %c1, ... {kind = add}
 * and after the top-level op, `async_tma_store_wait %B {pending = 0}`: the
 * last reduction has read B before anything else may use its bytes or the
 * program ends. The mask needs no op: elements outside the map's extents
 * are not written. The predicate %p, computed before the top-level op, is
 * true unless an extent parameter is 0 or less: then the runtime maps its
 * 16-byte zero buffer instead of the tensor, which a store must leave alone
 * (every element was masked). The adds are relaxed atomics at gpu scope, as
 * an atomic add whose old values nobody reads.
 *
 * Two buffers, one barrier. When the atomic sits in loops alone (every op
 * from it up to the top level a `for`) and two buffers fit, B is a ring of
 * two used in turns, the turn `%t` carried through those loops (0, 1, 0,
 * ...), and each add needs one barrier:
 *
 *     %Bt = memdesc_index %B, %t
 *     local_store %v, %Bt
 *     fence_async_shared
 *     async_tma_store_wait %B {pending = 0}  // the previous add has read the other buffer
 *     barrier
 *     async_tma_store %M, %Bt, %p, %c0, %c1, ... {kind = add}
 *     (the next turn: %t xor 1)
 *
 * The buffer an add writes was last read by the add before the previous
 * one, which thread 0 waited for before the previous barrier; the wait now
 * is for an add issued a whole iteration earlier, so it rarely stalls.
 *
 * Loops in turn. A later atomic of the same top-level op, in loops of its
 * own inside loops that carry an earlier atomic's turn (attention's
 * backward: the query blocks that cross the causal diagonal in one loop,
 * the rest in the next, both in the loop over a KV group's heads), takes
 * its turns from the same ring: its loops carry the turn from where the
 * earlier loop left it (that loop's result), and the shared loop yields
 * theirs. One ring, one wait after the top-level op; without it the second
 * atomic found no room for a ring of its own, and one buffer that each add
 * waits for cost the attention backward 8-16% at head dim 128.
 */
#include "passes.h"

#include <string.h>

/* Bytes a kernel keeps for mbarriers and alignment besides its buffers. */
enum { TS_SLACK = 2048 };
/* Loops around an atomic that carry the two buffers' turn. */
enum { TS_MAX_LOOPS = 8 };

/* Rings at most one kernel shares among its atomics. */
enum { TS_MAX_RINGS = 8 };

/* A ring of two buffers made for an atomic in loops alone: what a later
 * atomic of the same top-level op in loops of its own needs to take its
 * turns from the same ring. */
typedef struct {
    IrOp *top;
    const IrType *type; /* the ring's */
    IrValue *ring;
    IrOp *loops[TS_MAX_LOOPS];      /* the loops that carry its turn, innermost first */
    IrValue *yielded[TS_MAX_LOOPS]; /* the turn each one's body yields */
    int nl;
} TsRing;

typedef struct {
    IrModule *m;
    IrFunc *f;
    const PassOptions *opts;
    int num_warps;
    TsRing rings[TS_MAX_RINGS];
    int num_rings;
} Ts;

/* Does the block hold a named barrier? */
static bool has_named_barrier(const IrBlock *b) {
    for (const IrOp *op = b->first; op; op = op->next) {
        if (op->opc == IR_OP_NAMED_BARRIER_WAIT || op->opc == IR_OP_NAMED_BARRIER_ARRIVE)
            return true;
        for (int r = 0; r < op->num_regions; r++)
            if (has_named_barrier(op->regions[r]))
                return true;
    }
    return false;
}

/* The bytes of the buffers allocated inside op (op's own included): those
 * allocated in one block count together, those allocated inside one of its
 * ops only while that op runs, so of a block's ops the largest counts
 * (allocate-shared gives sequential loops' buffers the same bytes), and of
 * an op's regions the largest. Its largest scratch, and its largest
 * reduction's, maxed into *scratch and *reduce. */
static int64_t inside(const Ts *s, const IrOp *op, int64_t *scratch, int64_t *reduce) {
    int64_t sc = tg_scratch_bytes(op, s->num_warps);
    if (sc > *scratch)
        *scratch = sc;
    if (op->opc == IR_OP_REDUCE && sc > *reduce)
        *reduce = sc;
    int64_t regions = 0;
    for (int r = 0; r < op->num_regions; r++) {
        int64_t allocs = 0, nested = 0;
        for (const IrOp *q = op->regions[r]->first; q; q = q->next) {
            int64_t b = inside(s, q, scratch, reduce);
            if (q->opc == IR_OP_LOCAL_ALLOC)
                allocs += b;
            else if (b > nested)
                nested = b;
        }
        if (allocs + nested > regions)
            regions = allocs + nested;
    }
    return (op->opc == IR_OP_LOCAL_ALLOC ? ir_type_size_bytes(op->results[0]->type) : 0) + regions;
}

/* Shared memory in use while the top-level op `top` runs, at most: the
 * buffers allocated in it, those allocated before it and used in it or
 * later, its largest scratch, and two more of its largest reduction's
 * (allocate-shared keeps a reduction's scratch live into the next
 * reduction, and a loop body's first one through the body). (allocate-shared
 * may do better by reusing bytes; this never promises more than it can
 * place.) */
static int64_t peak_during(const Ts *s, const IrOp *top) {
    int64_t bytes = 0, scratch = 0, reduce = 0;
    for (const IrOp *op = s->f->body->first; op != top; op = op->next) {
        if (op->opc != IR_OP_LOCAL_ALLOC)
            continue;
        for (const IrOp *later = top; later; later = later->next)
            if (pass_op_uses(later, op->results[0])) {
                bytes += ir_type_size_bytes(op->results[0]->type);
                break;
            }
    }
    bytes += inside(s, top, &scratch, &reduce);
    return bytes + scratch + 2 * reduce;
}

/* The op of the kernel's body that holds op (op itself at the top level);
 * NULL when op is inside a warp_specialize region. */
static IrOp *top_level(Ts *s, IrOp *op) {
    while (op->parent != s->f->body) {
        op = op->parent->parent_op;
        if (!op || op->opc == IR_OP_WARP_SPECIALIZE)
            return NULL;
    }
    return op;
}

/* The box an atomic add qualifies with (see the essay), or false: the
 * proof, its contiguous tile axis and swizzle, the map's boxes filled in. */
static bool match(Ts *s, const IrOp *op, TmaAccess *a, int *contig, int *swizzle) {
    const char *kind = ir_op_get_word(op, "kind");
    IrValue *ptrs = op->operands[0], *val = op->operands[1];
    IrValue *mask = op->num_operands > 2 ? op->operands[2] : NULL;
    const IrType *t = val->type;
    if (!kind || strcmp(kind, "add") != 0 || t->kind != IR_TILE || t->rank != 2 || t->elem->kind != IR_F32 ||
        !t->layout || ir_count_uses(s->f->body, op->results[0]) != 0)
        return false;
    int eb = ir_type_bytes(t->elem), ca = -1, sw = 0;
    for (int axis = 1; axis >= 0 && ca < 0; axis--) {
        sw = tg_nvmma_swizzle(t->shape[axis] * eb);
        if (sw >= 32 && tma_match_access(s->f, NULL, ptrs, mask, axis, a))
            ca = axis;
    }
    if (ca < 0)
        return false;
    a->map.box[0] = t->shape[ca] < sw / eb ? t->shape[ca] : sw / eb;
    a->map.box[1] = t->shape[1 - ca] < 256 ? t->shape[1 - ca] : 256;
    for (int d = 2; d < a->map.rank; d++)
        a->map.box[d] = 1;
    a->map.swizzle = sw;
    *contig = ca;
    *swizzle = sw;
    return t->shape[ca] % a->map.box[0] == 0 && t->shape[1 - ca] % a->map.box[1] == 0;
}

/* True unless an extent parameter of the map is 0 or less: then the
 * runtime maps its 16-byte zero buffer instead of the tensor, which a store
 * must leave alone (every element was masked). Built at b. */
static IrValue *extents_positive(Ts *s, IrBuilder *b, const IrTensorMap *tm) {
    const IrType *i1 = ir_type_scalar(s->m, IR_I1);
    IrValue *pred = ir_build_const_int(b, i1, 1);
    for (int d = 0; d < tm->rank; d++)
        if (tm->dim_param[d] >= 0) {
            IrValue *e = s->f->body->args[tm->dim_param[d]];
            pred = ir_build_binary(b, IR_OP_AND, i1, pred, ir_build_cmp(b, "gt", e, ir_build_const_int(b, e->type, 0)));
        }
    return pred;
}

/* Is op an op of block blk before `before`? */
static bool before_in(const IrBlock *blk, const IrOp *op, const IrOp *before) {
    for (const IrOp *q = blk->first; q && q != before; q = q->next)
        if (q == op)
            return true;
    return false;
}

/* A ring of type `type` that an earlier atomic of top made, whose turn an
 * atomic in `loops` (innermost first) can take over: they share the loops
 * from *k0 out, and the loops inside those (loops[0 .. *k0 - 1]) come after
 * the last op that set the turn in the shared loop's body (the other
 * atomic's loops, run before this one's). Sequential loops with an atomic
 * each then use the two buffers in turns as one loop does. */
static TsRing *shared_ring(Ts *s, const IrOp *top, const IrType *type, IrOp *const *loops, int nl, int *k0) {
    for (int i = 0; i < s->num_rings; i++) {
        TsRing *r = &s->rings[i];
        if (r->top != top || r->type != type)
            continue;
        int k = 0, j = -1;
        while (k < nl && j < 0) {
            for (int q = 0; q < r->nl; q++)
                if (r->loops[q] == loops[k])
                    j = q;
            if (j < 0)
                k++;
        }
        /* the shared loops: loops[k ..] are r->loops[j ..] */
        bool same = k >= 1 && j >= 0 && nl - k == r->nl - j;
        for (int q = 0; same && q < nl - k; q++)
            same = loops[k + q] == r->loops[j + q];
        const IrValue *cur = same ? r->yielded[j] : NULL;
        if (same && (!cur->def || before_in(loops[k]->regions[0], cur->def, loops[k - 1]))) {
            *k0 = j;
            return r;
        }
    }
    return NULL;
}

/* Rewrites an atomic that qualifies (see the essay); a walk callback. */
static void rewrite(IrOp *op, void *ctx) {
    Ts *s = ctx;
    if (op->opc != IR_OP_ATOMIC)
        return;
    IrOp *top = top_level(s, op);
    TmaAccess a;
    int ca, swizzle;
    if (!top || !match(s, op, &a, &ca, &swizzle))
        return;
    /* the loops between the top level and the atomic, innermost first */
    IrOp *loops[TS_MAX_LOOPS];
    int nl = 0;
    bool only_loops = true;
    for (IrBlock *blk = op->parent; blk != s->f->body && only_loops; blk = blk->parent_op->parent) {
        only_loops = blk->parent_op->opc == IR_OP_FOR && nl < TS_MAX_LOOPS;
        if (only_loops)
            loops[nl++] = blk->parent_op;
    }
    IrModule *m = s->m;
    const IrType *i32 = ir_type_scalar(m, IR_I32), *t = op->operands[1]->type;
    int64_t ring_shape[3] = {2, t->shape[0], t->shape[1]};
    const Layout *l = ir_layout_nvmma_shared(m, swizzle, ca);
    const IrType *bt = ir_type_smem(m, t->elem, 2, t->shape, l);
    const IrType *rt2 = ir_type_smem(m, t->elem, 3, ring_shape, l);
    /* an earlier atomic's ring, its turn continued here; else a buffer of
     * its own, two when the atomic is in loops alone and both fit */
    int j = 0;
    TsRing *shared = only_loops && nl > 0 ? shared_ring(s, top, rt2, loops, nl, &j) : NULL;
    int ns = 0; /* the loops that get the turn here: all, or those inside the shared ones */
    bool two = shared != NULL;
    if (shared) {
        while (loops[ns] != shared->loops[j])
            ns++;
    } else {
        int64_t peak = peak_during(s, top), limit = tg_shared_limit(&s->opts->target);
        if (peak + ir_type_size_bytes(t) + TS_SLACK > limit)
            return;
        two = only_loops && nl > 0 && peak + 2 * ir_type_size_bytes(t) + TS_SLACK <= limit;
        ns = nl;
    }

    /* before the top-level op: the buffer (or ring), the map, the predicate, the first turn */
    IrBuilder b;
    ir_builder_before(&b, top);
    b.loc = op->loc;
    const IrType *rt = two ? rt2 : bt;
    IrValue *ring = shared ? shared->ring : ir_build_op(&b, IR_OP_LOCAL_ALLOC, 0, NULL, 1, &rt)->results[0];
    IrValue *ops[3 + IR_MAX_TMAP_RANK] = {tma_map_param(m, s->f, &a.map), NULL, extents_positive(s, &b, &a.map)};
    IrValue *turn = NULL;
    if (two) {
        turn = shared ? shared->yielded[j] : ir_build_const_int(&b, i32, 0);
        for (int k = ns - 1; k >= 0; k--)
            turn = pass_add_iter_arg(m, loops[k], turn, "tma_turn");
    }

    /* in place of the atomic */
    ir_builder_before(&b, op);
    b.loc = op->loc;
    IrValue *buf = two ? ir_build_binary(&b, IR_OP_MEMDESC_INDEX, bt, ring, turn) : ring;
    if (!two) {
        ir_op_set_int(m, ir_build_op(&b, IR_OP_ASYNC_TMA_STORE_WAIT, 1, &ring, 0, NULL), "pending", 0);
        ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    }
    IrValue *st[2] = {op->operands[1], buf};
    ir_build_op(&b, IR_OP_LOCAL_STORE, 2, st, 0, NULL);
    ir_build_op(&b, IR_OP_FENCE_ASYNC_SHARED, 0, NULL, 0, NULL);
    if (two)
        ir_op_set_int(m, ir_build_op(&b, IR_OP_ASYNC_TMA_STORE_WAIT, 1, &ring, 0, NULL), "pending", 0);
    ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    ops[1] = buf;
    for (int d = 0; d < a.map.rank; d++)
        ops[3 + d] = tma_build_coord(&b, &a, d, 0);
    ir_op_set_word(m, ir_build_op(&b, IR_OP_ASYNC_TMA_STORE, 3 + a.map.rank, ops, 0, NULL), "kind", "add");
    TsRing *made = NULL;
    if (two && !shared && s->num_rings < TS_MAX_RINGS) {
        made = &s->rings[s->num_rings++];
        *made = (TsRing){top, rt, ring, {NULL}, {NULL}, nl};
        memcpy(made->loops, loops, sizeof(IrOp *) * (size_t)nl);
    }
    if (two) {
        /* the next turn out of the innermost loop, each loop's result out of the one around it; with a
         * shared ring the shared loop's body yields the last of them instead of what it yielded */
        IrValue *next = ir_build_binary(&b, IR_OP_XOR, i32, turn, ir_build_const_int(&b, i32, 1));
        for (int k = 0; k < ns; k++) {
            pass_append_yield(m, loops[k]->regions[0]->last, next);
            if (made)
                made->yielded[k] = next;
            next = loops[k]->results[loops[k]->num_results - 1];
        }
        if (shared) {
            IrOp *y = shared->loops[j]->regions[0]->last;
            for (int i = 0; i < y->num_operands; i++)
                if (y->operands[i] == shared->yielded[j])
                    ir_op_set_operand(y, i, next);
            shared->yielded[j] = next;
        }
    }

    /* after the top-level op (a terminator always follows it), once for a ring */
    if (!shared) {
        ir_builder_before(&b, top->next);
        b.loc = op->loc;
        ir_op_set_int(m, ir_build_op(&b, IR_OP_ASYNC_TMA_STORE_WAIT, 1, &ring, 0, NULL), "pending", 0);
    }
    ir_op_unlink(op);
}

bool pass_tma_store(IrModule *m, const PassOptions *opts) {
    if (!opts->target.arch_a)
        return true;
    for (IrFunc *f = m->first; f; f = f->next) {
        Ts s;
        memset(&s, 0, sizeof s);
        s.m = m, s.f = f, s.opts = opts, s.num_warps = pass_func_num_warps(f, opts);
        if (f->kind == IR_FUNC_KERNEL && !has_named_barrier(f->body))
            ir_walk_func(f, rewrite, &s);
    }
    return true;
}
